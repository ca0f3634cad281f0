"""B1 - bug hunt with a wrong fix that is reverted (tierscope sample trace).

Project `logstat`: a Python tool that prints the daily summary of the edge
proxy's access log. The Nov 27 report says 0 server errors although on-call was
paged for 502s. Cause: the 502s were answered by the proxy without a body and
the size column is "-"; the regex wants digits and parse_file() silently drops
lines that do not match.

Turn 1: investigation. The first `python -m logstat` run prints the raw user
  agent of a scanner, which is made of terminal escape sequences
  (ESC ]0;owned BEL = set the window title, ESC [2J = clear the screen).
  A read of a file that does not exist (logstat/parser.py) is a tool error.
Turn 2: a regression test from a real 502 line fails; the first fix (size
  group `\\S+`) is wrong, the test fails with ValueError; reverted with
  `git checkout -- logstat/parse.py`. An edit with an oldString that is not in
  the file is a tool error. The right fix (`\\d+|-`, "-" -> 0): tests pass, 5xx 14.
Turn 3: the report escapes control characters in paths and user agents.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from b1_files import FILES, write_logs  # noqa: E402
from scenario_kit import bash, edit, glob, read, step  # noqa: E402

LOG = "logs/access-2026-11-27.log"

T1 = ("The logstat report for Nov 27 says 0 server errors, but on-call got paged for 502s from the orders API "
      "that night. Find out why logstat misses them. Don't change anything yet.")
T2 = "Fix it, and add a regression test with one of the real 502 lines first."
T3 = ("And what's that garbage in the user-agent list? Running the report messed up my terminal. Make the report "
      "safe to print.")

LINE_502 = '10.0.4.12 - - [27/Nov/2026:02:14:09 +0000] "POST /api/orders HTTP/1.1" 502 - "-" "okhttp/4.12.0"'

NEW_TEST = '''    def test_garbage_is_none(self):
        self.assertIsNone(parse_line("not a log line"))

    def test_upstream_502_without_body(self):
        # 27 Nov 02:14: the proxy answered 502 itself and logged the size as "-"
        line = (\'''' + LINE_502[:60] + '''\'
                \'''' + LINE_502[60:] + '''\')
        e = parse_line(line)
        self.assertIsNotNone(e)
        self.assertEqual((e.status, e.size, e.path), (502, 0, "/api/orders"))
'''

SIZE_LINE_OLD = '    return Entry(m["ip"], m["time"], m["method"], m["path"], int(m["status"]), int(m["size"]), m["agent"])'
SIZE_LINE_NEW = ('    size = 0 if m["size"] == "-" else int(m["size"])  # "-": no body, e.g. a 502 from the proxy itself\n'
                 '    return Entry(m["ip"], m["time"], m["method"], m["path"], int(m["status"]), size, m["agent"])')

PRINTABLE = '''"""Daily summary of an access log."""

from collections import Counter


def printable(s):
    """Escape control characters: paths and user agents come from the client and may
    carry terminal escape sequences (a scanner sent ESC ]0;owned BEL ESC [2J on Nov 27)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)
'''

SCENARIO = {
    "name": "B1",
    "title": "logstat misses the Nov 27 502s",
    "project": "logstat",
    "files": FILES,
    "after": write_logs,
    "commit": {"message": "logstat: daily access log summary", "date": "2026-10-20T08:45:00+00:00"},
    "limit": {"context": 128000, "output": 16000},
    "turns": [
        {"user": T1, "responses": [
            step(text="Running the report the way the on-call handbook does:",
                 tools=[bash("python -m logstat " + LOG)]),
            step(tools=[bash("wc -l < " + LOG), bash("grep -c '\" 50[0-9] ' " + LOG)]),
            step(text="The log has 597 lines but the report counts 583 requests: 14 lines are missing, and the "
                      "log has exactly 14 lines with a 5xx status. Looking at the parser.",
                 tools=[read("logstat/parser.py")]),
            step(tools=[glob("logstat/*.py")]),
            step(tools=[read("logstat/parse.py")]),
            step(tools=[bash("grep '\" 50[0-9] ' " + LOG + " | head -n 3")]),
            step(text="Found it. The 502s are answered by the proxy itself, without a body, so the size column is "
                      "`-`:\n\n    " + LINE_502 + "\n\n"
                      "`LINE` in `logstat/parse.py` requires `(?P<size>\\d+)`, so these lines don't match, "
                      "`parse_line()` returns `None`, and `parse_file()` drops them without a word. That is exactly "
                      "the 14 missing lines (597 in the log, 583 counted), all of them the 502s from 02:14 on. "
                      "Nothing changed yet.\n\n"
                      "Unrelated but worth knowing: the 4th entry of \"top user agents\" (23 requests) is not text: "
                      "it is terminal escape sequences, which the report prints raw."),
        ]},
        {"user": T2, "responses": [
            step(tools=[edit("tests/test_parse.py", '''    def test_garbage_is_none(self):
        self.assertIsNone(parse_line("not a log line"))
''', NEW_TEST)]),
            step(tools=[bash("python -m unittest discover -s tests -v")]),
            step(text="The new test fails as expected (`unexpectedly None`). Letting the size column take any "
                      "token:",
                 tools=[edit("logstat/parse.py", "(?P<size>\\d+)", "(?P<size>\\S+)")]),
            step(tools=[bash("python -m unittest discover -s tests")]),
            step(reasoning="The regex now matches, but int('-') raises. And \\S+ would accept anything in the size "
                           "column. Wrong fix; revert and do it properly.",
                 text="Wrong fix: the line now matches, but `int(m[\"size\"])` crashes on it "
                      "(`ValueError: invalid literal for int() with base 10: '-'`), and `\\S+` would let garbage "
                      "through in that column too. Reverting it.",
                 tools=[bash("git checkout -- logstat/parse.py && git status --short")]),
            step(tools=[edit("logstat/parse.py", "(?P<status>\\d{3}) (?P<bytes>\\d+)",
                             "(?P<status>\\d{3}) (?P<bytes>\\d+|-)")]),
            step(text="That `oldString` isn't in the file (the group is `size`, not `bytes`). Re-reading the lines:",
                 tools=[read("logstat/parse.py", offset=6, limit=5)]),
            step(tools=[edit("logstat/parse.py", "(?P<size>\\d+)", "(?P<size>\\d+|-)")]),
            step(tools=[edit("logstat/parse.py", SIZE_LINE_OLD, SIZE_LINE_NEW)]),
            step(tools=[bash("python -m unittest discover -s tests -v 2>&1 | tail -n 4"),
                        bash("python -m logstat " + LOG + " | head -n 3")]),
            step(text="Fixed.\n\n"
                      "- `LINE` accepts `-` in the size column (`(?P<size>\\d+|-)`), and `parse_line()` stores it "
                      "as size 0. Nothing else is loosened.\n"
                      "- New test `test_upstream_502_without_body` uses the real 02:14:09 line; 3 tests pass.\n"
                      "- The Nov 27 report now shows `requests: 597` and `5xx 14`.\n"
                      "- My first attempt (`\\S+`) crashed on `int('-')`; I reverted it with `git checkout -- "
                      "logstat/parse.py` before making this change."),
        ]},
        {"user": T3, "responses": [
            step(tools=[bash("grep -c '^203.0.113.66 ' " + LOG + "; grep -m1 '^203.0.113.66 ' " + LOG + " | cat -v")]),
            step(text="That user agent comes from 203.0.113.66, a scanner (23 requests for `/.env`, "
                      "`/wp-login.php`, `/.git/config` and the like, all 404). Shown with `cat -v` it is "
                      "`^[]0;owned^G^[[2J`: `ESC ]0;owned BEL` sets your terminal's window title to \"owned\" and "
                      "`ESC [2J` clears the screen. The report printed it verbatim. Escaping control characters "
                      "in everything that comes from the client (paths and user agents):",
                 tools=[edit("logstat/report.py", '"""Daily summary of an access log."""\n\nfrom collections import Counter\n',
                             PRINTABLE)]),
            step(tools=[edit("logstat/report.py",
                             '    paths = Counter(e.path.split("?")[0] for e in entries)\n'
                             '    agents = Counter(e.agent for e in entries)\n',
                             '    paths = Counter(printable(e.path.split("?")[0]) for e in entries)\n'
                             '    agents = Counter(printable(e.agent) for e in entries)\n')]),
            step(tools=[bash("python -m logstat " + LOG + " | tail -n 4; "
                             "python -m logstat " + LOG + " | grep -c \"$(printf '\\033')\""),
                        bash("python -m unittest discover -s tests 2>&1 | tail -n 1; git status --short")]),
            step(text="The report is safe to print now: `printable()` in `logstat/report.py` replaces control "
                      "characters with their escapes, so the scanner's agent shows up as the text "
                      "`\\x1b]0;owned\\x07\\x1b[2J` and the report output contains no ESC byte (`grep -c` finds 0 "
                      "lines). Tests still pass. Changed, not committed: `logstat/parse.py`, `logstat/report.py`, "
                      "`tests/test_parse.py`."),
        ]},
    ],
}
