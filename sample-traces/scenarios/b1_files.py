"""Project files for B1 (logstat): a small access-log report tool and one day of logs."""

import random

PARSE_PY = '''"""Parse Apache/nginx "combined" access log lines."""

import re
from dataclasses import dataclass

LINE = re.compile(
    r'^(?P<ip>\\S+) \\S+ (?P<user>\\S+) \\[(?P<time>[^\\]]+)\\] '
    r'"(?P<method>[A-Z]+) (?P<path>\\S+) (?P<proto>[^"]+)" '
    r'(?P<status>\\d{3}) (?P<size>\\d+) "(?P<referer>[^"]*)" "(?P<agent>[^"]*)"$'
)


@dataclass
class Entry:
    ip: str
    time: str
    method: str
    path: str
    status: int
    size: int
    agent: str


def parse_line(line):
    """One log line -> Entry, or None if it is not a combined-format line."""
    m = LINE.match(line.rstrip("\\n"))
    if m is None:
        return None
    return Entry(m["ip"], m["time"], m["method"], m["path"], int(m["status"]), int(m["size"]), m["agent"])


def parse_file(path):
    """All entries of a log file; lines that do not parse are skipped."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return [e for e in map(parse_line, f) if e is not None]
'''

REPORT_PY = '''"""Daily summary of an access log."""

from collections import Counter


def summarize(entries, top=4):
    by_class = Counter(f"{e.status // 100}xx" for e in entries)
    paths = Counter(e.path.split("?")[0] for e in entries)
    agents = Counter(e.agent for e in entries)
    lines = [f"requests: {len(entries)}",
             "by status: " + "  ".join(f"{c} {by_class.get(c, 0)}" for c in ("2xx", "3xx", "4xx", "5xx")),
             "top paths:"]
    lines += [f"  {n:5d}  {p}" for p, n in paths.most_common(top)]
    lines.append("top user agents:")
    lines += [f"  {n:5d}  {a}" for a, n in agents.most_common(top)]
    return "\\n".join(lines)
'''

MAIN_PY = '''"""python -m logstat LOGFILE [--top N]: daily summary of an access log."""

import argparse

from .parse import parse_file
from .report import summarize


def main(argv=None):
    ap = argparse.ArgumentParser(prog="logstat")
    ap.add_argument("logfile")
    ap.add_argument("--top", type=int, default=4)
    args = ap.parse_args(argv)
    print(f"logstat report: {args.logfile}")
    print(summarize(parse_file(args.logfile), args.top))


if __name__ == "__main__":
    main()
'''

TEST_PARSE = '''import unittest

from logstat.parse import parse_line

OK = ('10.0.4.12 - - [27/Nov/2026:01:02:03 +0000] "GET /api/orders?page=2 HTTP/1.1" 200 5120 '
      '"-" "okhttp/4.12.0"')


class ParseLineTest(unittest.TestCase):
    def test_combined_line(self):
        e = parse_line(OK)
        self.assertEqual((e.ip, e.method, e.path, e.status, e.size), ("10.0.4.12", "GET", "/api/orders?page=2", 200, 5120))
        self.assertEqual(e.agent, "okhttp/4.12.0")

    def test_garbage_is_none(self):
        self.assertIsNone(parse_line("not a log line"))


if __name__ == "__main__":
    unittest.main()
'''

README = '''# logstat

Daily summary of the edge proxy's access log (combined format): requests by status
class, top paths, top user agents. The on-call handbook uses it for the morning report.

    python -m logstat logs/access-2026-11-27.log
    python -m unittest discover -s tests -v
'''

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
APP = "okhttp/4.12.0"
PROBE = "kube-probe/1.29"
CURL = "curl/8.5.0"
SCANNER_AGENT = "\x1b]0;owned\x07\x1b[2J"


def access_log():
    rnd = random.Random(20261127)
    events = []
    for i in range(560):
        t = rnd.randrange(86400)
        kind = rnd.random()
        if kind < 0.45:
            ip, agent = f"198.51.100.{rnd.randrange(2, 250)}", BROWSER
            method, path = "GET", rnd.choice(["/", "/shop", "/shop/cart", "/static/app.js", "/static/app.css",
                                               "/account"])
            status = rnd.choice([200] * 12 + [304, 304, 404])
        elif kind < 0.9:
            ip, agent = f"10.0.4.{rnd.randrange(10, 40)}", APP
            method = rnd.choice(["GET", "GET", "POST"])
            path = "/api/orders" + (f"?page={rnd.randrange(1, 9)}" if method == "GET" else "")
            status = rnd.choice([200] * 20 + [201, 400, 401])
        elif kind < 0.97:
            ip, agent, method, path, status = "10.0.0.5", PROBE, "GET", "/healthz", 200
        else:
            ip, agent = "10.0.9.3", CURL
            method, path, status = "GET", "/api/orders/export", 200
        size = rnd.randrange(200, 40000) if status != 304 else 0
        events.append((t, ip, method, path, status, str(size), agent))
    # the 502s of 02:14-02:31: the orders backend was down, the proxy answered without a body ("-")
    for k in range(14):
        t = 2 * 3600 + 14 * 60 + 9 + k * 73
        events.append((t, f"10.0.4.{12 + k % 5}", "POST" if k % 3 == 0 else "GET",
                       "/api/orders" if k % 3 == 0 else f"/api/orders?page={1 + k % 4}", 502, "-", APP))
    # a scanner with a terminal-escape user agent
    for k in range(23):
        t = 4 * 3600 + 3 * 60 + k * 2
        path = ["/.env", "/wp-login.php", "/.git/config", "/admin", "/phpmyadmin/", "/server-status"][k % 6]
        events.append((t, "203.0.113.66", "GET", path, 404, str(153 + k % 4), SCANNER_AGENT))
    events.sort()
    out = []
    for t, ip, method, path, status, size, agent in events:
        stamp = "27/Nov/2026:%02d:%02d:%02d +0000" % (t // 3600, t // 60 % 60, t % 60)
        out.append(f'{ip} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size} "-" "{agent}"\n')
    return "".join(out)


FILES = {
    "README.md": README,
    ".gitignore": "__pycache__/\nlogs/\n",
    "logstat/__init__.py": '"""Access log summaries."""\n',
    "logstat/__main__.py": MAIN_PY,
    "logstat/parse.py": PARSE_PY,
    "logstat/report.py": REPORT_PY,
    "tests/test_parse.py": TEST_PARSE,
}


def write_logs(project):
    """Untracked, like on the box: logs/ is in .gitignore."""
    import os
    os.makedirs(os.path.join(project, "logs"), exist_ok=True)
    with open(os.path.join(project, "logs", "access-2026-11-27.log"), "w", encoding="utf-8") as f:
        f.write(access_log())
