#!/usr/bin/env python3
"""Write a large synthetic Codex CLI 0.171.0 rollout file for load benchmarks.

    codex_rollout.py REQUESTS OUT.jsonl [SEED]

The same idea as bench/claude_code_session.py, for Codex: one long thread in the line format of the
recorded rollout in tests/recordings/codex-0.171.0 (compact JSON, `{timestamp, ordinal, type,
payload, [metadata]}`), with about REQUESTS model responses. The fixed parts (`session_meta` with
its base instructions, the developer / `<environment_context>` messages, `world_state`,
`turn_context`, `thread_settings_applied`, the rate limits of `token_count`, the compaction prefix)
are taken from the recording; everything else is generated, deterministically from SEED:

  turn:     [thread_settings_applied] task_started [developer, env msgs, world_state (turn 1)]
            turn_context [thread_settings_applied (turn 1)] user message, item_completed UserMessage
  response: [item_completed Reasoning, reasoning] [item_completed AgentMessage, assistant message]
            function_call exec_command / update_plan | custom_tool_call apply_patch (+ FileChange)
            token_usage_record, per call: [item_completed CommandExecution] *_call_output,
            event_msg token_count (last = this response, total = thread so far)
  last:     item_completed AgentMessage, assistant message, token_usage_record, token_count,
            task_complete

Tool outputs are a few hundred to a few thousand characters (code, grep hits, test runs, diffs,
log lines); about 3 % are large and carry Codex's truncation ("Warning: truncated output ...",
"…N tokens truncated…", `aggregated_output` capped at 64 KiB). Call, item, response and turn ids
are fresh and unique. Usage: `input_tokens` is the running context (base prompt + everything added,
at ~2 characters a token for log lines, ~3.6 for other tool output, ~4 for prose), `cached_input_tokens` the previous
request's prefix (rounded down to 128; reset after a 300 s pause), output from what the response
wrote. When the context reaches COMPACT_LIMIT, a compaction is written before the next request the
way the recording has it (repeated token_count, summary message with `compaction_output`, its
usage, `compacted` with the replacement history, world_state, turn_context,
thread_settings_applied, estimate-only token_count, item_completed ContextCompaction). Like Codex, the
replacement history keeps the newest user messages up to ~20k tokens (80,000 bytes), so in a long
thread every `compacted` line is ~0.5 MB: REQUESTS=10000 gives ~201 MB, 147 compactions, 38 % of the
bytes in `compacted` lines. CODEX_COMPACT_LIMIT=0 turns compactions off (the context then grows
past the window).
"""
import json
import math
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REC_REL = "tests/recordings/codex-0.171.0/dot-codex/sessions/2026/12/02/rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa76.jsonl"
SOURCE = Path(os.environ.get("CODEX_RECORDING", HERE.parent / REC_REL))

WINDOW = 121600           # model_context_window of the recording
COMPACT_LIMIT = int(os.environ.get("CODEX_COMPACT_LIMIT", 100000))  # auto-compact threshold (the recording
# configured 36,000); 0: no compactions
BASE_PROMPT = 7700        # tools + base instructions + developer/env messages, tokens
START_MS = 1796288400000  # 2026-12-03T09:00:00Z
CWD = "/home/dev/src/logscan"

# --------------------------------------------------------------------------------------------
# Word material


W = ("parse line record window bucket status upstream client count minute filter report render load split "
     "field token request latency error retry cache index group summary path query agent host port "
     "timeout header body chunk stream buffer offset cursor range limit sample rate total mean median "
     "percentile histogram series label metric event source target format writer reader config option "
     "flag rule match pattern owner team tier region zone shard batch queue job worker pool lock state "
     "session user account token budget").split()
VERBS = ("handles drops skips counts merges rejects splits sorts caches retries parses renders "
         "truncates rounds normalizes ignores").split()
CAMEL = [w.capitalize() for w in W]
MODULES = ["logscan/parser.py", "logscan/filters.py", "logscan/report.py", "logscan/cli.py",
           "logscan/stats.py", "logscan/timeutil.py", "logscan/upstreams.py", "logscan/clients.py",
           "logscan/formats/nginx.py", "logscan/formats/jsonl.py", "logscan/formats/apache.py",
           "logscan/export/csv_out.py", "logscan/export/markdown.py", "logscan/export/html.py",
           "logscan/geo.py", "logscan/alerts.py", "logscan/config.py", "logscan/cache.py",
           "logscan/buckets.py", "logscan/sampling.py"]
TESTS = ["tests/test_" + Path(m).stem + ".py" for m in MODULES]
DATA = ["data/access-2026-11-28.log", "data/nginx-error-2026-11-28.log", "data/clients.csv",
        "data/access-2026-11-29.log", "data/access-2026-11-30.log"]
UAS = ["python-requests/2.32.3", "kube-probe/1.31", "okhttp/4.12.0", "inventory-sync/2.4.1",
       "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0 Safari/537.36",
       "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 Version/18.1 Safari/605.1.15",
       "curl/8.5.0", "Go-http-client/2.0"]
PATHS = ["/api/v2/orders/{n}", "/api/v2/customers/{n}", "/api/v2/search?q=item{n}",
         "/api/v2/inventory/{n}", "/api/v2/inventory/bulk", "/static/app.{n}.js", "/healthz",
         "/api/v2/orders?page={n}"]


class Text:
    """Pools of lines (code, log) sampled in runs, and sentence templates."""

    def __init__(self, rng):
        self.rng = rng
        self.code = [self._code_line() for _ in range(40000)]
        self.log = [self._log_line() for _ in range(20000)]

    def w(self):
        return self.rng.choice(W)

    def ident(self):
        return f"{self.rng.choice(W)}_{self.rng.choice(W)}"

    def _code_line(self):
        r, w, i = self.rng, self.w, self.ident
        k = r.randrange(16)
        if k == 0:
            return f"def {i()}({w()}, {w()}=None):"
        if k == 1:
            return f"    {w()} = {w()}.{i()}({w()}, {r.randrange(1000)})"
        if k == 2:
            return f"    if {w()} is None or {w()} > {r.randrange(100)}:"
        if k == 3:
            return f"        return {i()}({w()})"
        if k == 4:
            return f"    for {w()} in sorted({w()}s, key=lambda x: x.{w()}):"
        if k == 5:
            return f"        {w()}s.append({i()}({w()}, {w()}))"
        if k == 6:
            return f"class {r.choice(CAMEL)}{r.choice(CAMEL)}:"
        if k == 7:
            return f'    """{r.choice(CAMEL)} the {w()} of each {w()} before the {w()} is {r.choice(VERBS)[:-1]}ed."""'
        if k == 8:
            return ""
        if k == 9:
            return f"from logscan.{w()} import {i()}, {i()}"
        if k == 10:
            return f'        {w()}["{w()}"] = {w()}.get("{w()}", {r.randrange(64)})'
        if k == 11:
            return f'        raise ValueError(f"bad {w()}: {{{w()}!r}}")'
        if k == 12:
            return f"    # {r.choice(CAMEL)} {r.choice(VERBS)} the {w()} when the {w()} {r.choice(VERBS)} it."
        if k == 13:
            return f"    assert {i()}({w()}) == {r.randrange(500)}"
        if k == 14:
            return f"        {w()}.{w()} += {w()}.{i()}() * {r.random():.3f}"
        return f"    return {w()}"

    def _log_line(self):
        r = self.rng
        ip = r.choice(["203.0.113.", "198.51.100.", "192.0.2."]) + str(r.randrange(1, 90))
        path = r.choice(PATHS).format(n=r.randrange(1, 500))
        st = r.choices([200, 201, 204, 301, 304, 401, 404, 499, 502, 503, 504],
                       [60, 4, 3, 2, 5, 2, 4, 1, 2, 2, 2])[0]
        return (f'{ip} - - [28/Nov/2026:{r.randrange(13, 15)}:{r.randrange(60):02d}:{r.randrange(60):02d} +0000] '
                f'"{r.choice(["GET", "GET", "GET", "POST", "PUT"])} {path} HTTP/1.1" {st} {r.randrange(0, 9000)} "-" '
                f'"{r.choice(UAS)}" rt={r.random() * 2:.3f} upstream=10.0.4.{r.randrange(11, 14)}:8080')

    def run(self, pool, chars):
        """Consecutive lines of `pool` from a random place, about `chars` characters."""
        start = self.rng.randrange(len(pool))
        out, n, i = [], 0, start
        while n < chars:
            s = pool[i % len(pool)]
            out.append(s)
            n += len(s) + 1
            i += 1
        return out

    def sentence(self):
        r, w = self.rng, self.w
        k = r.randrange(8)
        if k == 0:
            return f"`{self.ident()}` {r.choice(VERBS)} the {w()} before the {w()} is written."
        if k == 1:
            return f"The {w()} {w()} in `{r.choice(MODULES)}` is only read once per {w()}."
        if k == 2:
            return f"{r.randrange(2, 400)} of the {w()}s come from one {w()}, so the {w()} is skewed."
        if k == 3:
            return f"Tests in `{r.choice(TESTS)}` cover the {w()} path but not the empty {w()}."
        if k == 4:
            return f"Moving `{self.ident()}` next to `{self.ident()}` keeps the {w()} logic in one place."
        if k == 5:
            return f"The {w()} is rounded to the {w()}, which {r.choice(VERBS)} late {w()}s."
        if k == 6:
            return f"`{self.ident()}()` now takes the {w()} as an argument instead of reading the global {w()}."
        return f"Nothing else {r.choice(VERBS)} the {w()}; the {w()} stays as it was."

    def para(self, n):
        return " ".join(self.sentence() for _ in range(n))


# --------------------------------------------------------------------------------------------
# Ids and time

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def iso(ms):
    s = time.gmtime(ms // 1000)
    return f"{s.tm_year:04d}-{s.tm_mon:02d}-{s.tm_mday:02d}T{s.tm_hour:02d}:{s.tm_min:02d}:{s.tm_sec:02d}.{ms % 1000:03d}Z"


class Ids:
    def __init__(self, rng):
        self.rng = rng
        self.seen = set()

    def _fresh(self, make):
        while True:
            v = make()
            if v not in self.seen:
                self.seen.add(v)
                return v

    def uuid7(self, ms):
        def make():
            r = self.rng.getrandbits(80)
            h = f"{ms & ((1 << 48) - 1):012x}7{(r >> 68) & 0xfff:03x}{8 | ((r >> 66) & 3):x}{(r >> 54) & 0xfff:03x}{r & ((1 << 48) - 1):012x}"
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return self._fresh(make)

    def hex(self, prefix, n=40):
        return self._fresh(lambda: prefix + f"{self.rng.getrandbits(4 * n):0{n}x}")

    def call(self):
        return self._fresh(lambda: "call_" + "".join(self.rng.choice(ALNUM) for _ in range(24)))


def usage(inp=0, cached=0, out=0, reasoning=0, total=None):
    return {"input_tokens": inp, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
            "output_tokens": out, "reasoning_output_tokens": reasoning,
            "total_tokens": inp + out if total is None else total}


def add(a, b):
    return usage(a["input_tokens"] + b["input_tokens"], a["cached_input_tokens"] + b["cached_input_tokens"],
                 a["output_tokens"] + b["output_tokens"],
                 a["reasoning_output_tokens"] + b["reasoning_output_tokens"])


# --------------------------------------------------------------------------------------------


class Gen:
    def __init__(self, want, out, seed):
        self.want = want
        self.rng = random.Random(seed)
        self.text = Text(random.Random(seed + 1))
        self.ids = Ids(random.Random(seed + 2))
        self.f = out.open("w", encoding="utf-8")
        self.ms = START_MS
        self.ordinal = 0
        self.hist = 0          # metadata.history_sequence
        self.sampled = 0       # metadata.sampled_through_sequence
        self.order = 0         # metadata.user_input_order
        self.responses = 0
        self.compactions = 0
        self.thread = usage()
        self.turn = usage()
        self.last = usage()
        self.ctx = BASE_PROMPT
        self.prev_input = 0
        self.prev_ms = 0
        self.cache_reset = True
        self.user_msgs = []     # (msg dict, metadata dict, retained entry) of every user message
        self.window_answers = []
        self._load_templates()
        self.thread_id = self.ids.uuid7(self.ms - 60)
        self.window_id = self.ids.uuid7(self.ms - 59)
        self.first_window_id = self.window_id

    # ---- templates from the recording

    def _load_templates(self):
        lines = [json.loads(s) for s in SOURCE.read_text(encoding="utf-8").splitlines()]
        by = lambda pred: next(r for r in lines if pred(r))
        self.t_meta = by(lambda r: r["type"] == "session_meta")["payload"]
        self.t_world = by(lambda r: r["type"] == "world_state")["payload"]
        self.t_ctx = by(lambda r: r["type"] == "turn_context")["payload"]
        ev = lambda k: by(lambda r: r["type"] == "event_msg" and r["payload"]["type"] == k)["payload"]
        self.t_settings = ev("thread_settings_applied")
        self.t_started = ev("task_started")
        self.rate_limits = ev("token_count")["rate_limits"]
        msgs = [r for r in lines if r["type"] == "response_item" and r["payload"]["type"] == "message"]
        self.t_dev = next(r for r in msgs if r["payload"]["role"] == "developer")
        self.t_env = next(r for r in msgs if r["payload"]["role"] == "user"
                          and r["payload"]["content"][0]["text"].startswith("<environment_context>"))
        comp = by(lambda r: r["type"] == "compacted")["payload"]
        self.prefix = comp["message"][:comp["message"].index("analysis:") + len("analysis:")]
        self.t_resume = comp["resume_metadata"]

    # ---- writing

    def tick(self, lo, hi):
        self.ms += self.rng.randint(lo, hi)

    def write(self, kind, payload, metadata=None):
        rec = {"timestamp": iso(self.ms), "ordinal": self.ordinal, "type": kind, "payload": payload}
        if metadata is not None:
            rec["metadata"] = metadata
        self.f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.ordinal += 1
        self.ms += self.rng.randint(0, 3)

    def meta(self, **extra):
        self.hist += 1
        m = {"history_sequence": self.hist, "sampled_through_sequence": self.sampled, "client_authored": False}
        m.update(extra)
        m["model_search_state"] = "unused"
        return m

    def event(self, payload, turn=True):
        p = {"type": payload.pop("type")}
        if turn:
            p["thread_id"] = self.thread_id
            p["turn_id"] = self.turn_id
        p.update(payload)
        self.write("event_msg", p)

    def item_completed(self, item, start=None):
        start = self.ms if start is None else start
        self.event({"type": "item_completed", "item": item, "started_at_ms": start, "completed_at_ms": self.ms})

    def turn_context(self):
        p = dict(self.t_ctx)
        p["turn_id"] = p["root_turn_id"] = self.turn_id
        self.write("turn_context", p)

    def settings(self):
        p = json.loads(json.dumps(self.t_settings))
        p["thread_id"] = self.thread_id
        self.write("event_msg", p)

    def world_state(self):
        self.write("world_state", self.t_world)

    def context_msgs(self, write):
        """Fresh developer and environment messages (items), written or returned."""
        out = []
        for t in (self.t_dev, self.t_env):
            p = json.loads(json.dumps(t["payload"]))
            p["id"] = "msg_" + self.ids.uuid7(self.ms)
            p["internal_chat_message_metadata_passthrough"]["turn_id"] = self.turn_id
            if write:
                p["internal_chat_message_metadata_passthrough"]["create_time"] = self.ms / 1000
                self.write("response_item", p, self.meta(**({"mcp_attribution": {"status": "none"}}
                                                              if p["role"] == "developer" else {})))
            else:
                p["internal_chat_message_metadata_passthrough"].pop("create_time", None)
            out.append(p)
        return out

    # ---- usage

    def record(self, inp, cached, out, reasoning):
        u = usage(inp, cached, out, reasoning)
        self.turn = add(self.turn, u)
        self.thread = add(self.thread, u)
        self.last = u
        self.response_id = self.ids.hex("resp_", 48)
        self.last_record = {"thread_id": self.thread_id, "turn_id": self.turn_id, "session_id": self.thread_id,
                            "root_turn_id": self.turn_id, "response_id": self.response_id, "usage": u,
                            "turn_token_usage": self.turn, "thread_token_usage": self.thread}
        self.write("token_usage_record", self.last_record)
        self.responses += 1

    def token_count(self, last=None, includes_reasoning=False):
        self.write("event_msg", {"type": "token_count", "info": {
            "total_token_usage": self.thread, "last_token_usage": self.last if last is None else last,
            "last_usage_includes_reasoning": includes_reasoning, "model_context_window": WINDOW},
            "rate_limits": self.rate_limits})

    def cached_for(self, inp):
        if self.cache_reset or self.ms - self.prev_ms > 300_000:
            c = 0 if self.ms - self.prev_ms > 300_000 else min(6528, inp)
        else:
            c = min(self.prev_input, inp) // 128 * 128
        if c < 1024:
            c = 0
        self.cache_reset = False
        self.prev_input = inp
        self.prev_ms = self.ms
        return c

    # ---- turns

    def user_text(self):
        r, t = self.rng, self.text
        k = r.randrange(7)
        if k == 0:
            s = f"Add a `--{t.w()}-{t.w()}` option to `logscan {t.w()}` that {r.choice(VERBS)} the {t.w()} per {t.w()}."
        elif k == 1:
            s = f"`{r.choice(TESTS)}::test_{t.ident()}` fails after the last change. Find out why and fix it."
        elif k == 2:
            s = f"Refactor `{r.choice(MODULES)}` so that `{t.ident()}` no longer {r.choice(VERBS)} the {t.w()} itself."
        elif k == 3:
            s = f"How many {t.w()}s in `{r.choice(DATA)}` hit upstream 10.0.4.{r.randrange(11, 14)} between 13:{r.randrange(30, 60)} and 14:{r.randrange(0, 30):02d}?"
        elif k == 4:
            s = f"Summarize what changed in `{r.choice(MODULES)}` and whether the {t.w()} handling is still right."
        elif k == 5:
            s = f"Make the {t.w()} report group by {t.w()} and {t.w()}, and add a test for the empty {t.w()} case."
        else:
            s = f"Check `{r.choice(MODULES)}` for places where the {t.w()} can be None and handle them."
        if r.random() < 0.4:
            s += " " + t.para(r.randint(1, 4))
        return s

    def start_turn(self, first):
        self.tick(20_000, 400_000) if not first else None
        self.turn_id = self.ids.uuid7(self.ms)
        self.turn_start = self.ms
        self.turn = usage()
        if not first:
            self.settings()
        st = json.loads(json.dumps(self.t_started))
        for k in ("turn_id", "root_turn_id"):
            st["turn_attribution"][k] = self.turn_id
            st[k] = self.turn_id
        st["started_at"] = self.ms // 1000
        self.write("event_msg", st)
        if first:
            self.context_msgs(write=True)
            self.world_state()
            self.turn_context()
            self.settings()
        else:
            self.turn_context()
        text = self.user_text()
        mid = "msg_" + self.ids.uuid7(self.ms)
        rev = "retained_" + self.ids.uuid7(self.ms)
        msg = {"type": "message", "id": mid, "role": "user", "content": [{"type": "input_text", "text": text}],
               "internal_chat_message_metadata_passthrough": {
                   "turn_id": self.turn_id, "create_time": self.ms / 1000, "content_item_kinds": ["user.text"],
                   "content_item_metadata": [{"provenance": {"type": "user"}}]}}
        md = self.meta(retained_source={"id": {"message_id": mid, "turn_id": self.turn_id, "role": "user"},
                                        "revision": rev, "complete": True},
                       user_input_order=self.order, mcp_attribution={"status": "none"})
        self.write("response_item", msg, md)
        self.user_msgs.append((msg, md, {"revision": rev, "order": self.order, "turn_id": self.turn_id,
                                         "message_id": mid, "text": text, "complete": True}))
        self.order += 1
        self.item_completed({"type": "UserMessage", "id": self.ids.uuid7(self.ms),
                             "content": [{"type": "text", "text": text, "text_elements": []}]})
        self.ctx += len(text) // 4 + 12
        self.first_token_ms = None

    def end_turn(self, final):
        self.write("event_msg", {"type": "task_complete", "root_turn_id": self.turn_id, "turn_id": self.turn_id,
                                 "last_agent_message": final, "started_at": self.turn_start // 1000,
                                 "completed_at": self.ms // 1000, "duration_ms": self.ms - self.turn_start,
                                 "time_to_first_token_ms": self.first_token_ms or 0})

    # ---- tool calls

    def exec_call(self):
        r, t = self.rng, self.text
        big = r.random() < 0.03
        size = int(min(6000, max(150, r.lognormvariate(math.log(1200), 0.8))))
        rc = 0
        k = r.randrange(10)
        m = r.choice(MODULES)
        parsed = None
        if big:
            f = r.choice(DATA[:2] + DATA[3:])
            cmd = r.choice([f"cat {f}", f"sed -n '1,{r.randrange(500, 3000)}p' {f}",
                            f"grep -E '\" 50[234] ' {f}", f"rg -n '{t.w()}' logscan tests"])
            raw = "\n".join(t.run(t.log if "data/" in cmd else t.code, r.randint(80_000, 160_000))) + "\n"
            parsed = {"type": "read", "cmd": cmd, "name": Path(f).name, "path": f}
        elif k <= 2:
            a = r.randrange(1, 400)
            cmd = r.choice([f"sed -n '{a},{a + size // 35}p' {m}", f"cat {m}", f"nl -ba {m} | sed -n '{a},{a + size // 40}p'"])
            raw = "\n".join(t.run(t.code, size)) + "\n"
            parsed = {"type": "read", "cmd": cmd, "name": Path(m).name, "path": m}
        elif k <= 4:
            pat = t.ident()
            cmd = f"rg -n '{pat}' logscan tests"
            lines = []
            for s in t.run(t.code, size):
                if s:
                    lines.append(f"{r.choice(MODULES + TESTS)}:{r.randrange(1, 900)}:{s}")
            raw = "\n".join(lines) + "\n"
            if r.random() < 0.1:
                raw, rc = "", 1
            parsed = {"type": "search", "cmd": cmd, "query": pat, "path": None}
        elif k == 5:
            tf = r.choice(TESTS)
            cmd = f"python -m pytest -q {tf}" if r.random() < 0.7 else "python -m pytest -q"
            n = r.randrange(8, 240)
            fail = r.random() < 0.25
            dots = "".join("F" if fail and i == n // 2 else "." for i in range(n))
            body = "\n".join(dots[i:i + 72].ljust(73) + f"[{min(100, (i + 72) * 100 // n):3d}%]" for i in range(0, n, 72))
            if fail:
                name = f"test_{t.ident()}"
                tb = "\n".join(t.run(t.code, max(200, size - 400)))
                body += (f"\n{'=' * 30} FAILURES {'=' * 30}\n{'_' * 20} {name} {'_' * 20}\n\n{tb}\n"
                         f"E       AssertionError: assert {r.randrange(100)} == {r.randrange(100)}\n\n{tf}:{r.randrange(10, 400)}: AssertionError\n"
                         f"FAILED {tf}::{name} - AssertionError\n1 failed, {n - 1} passed in {r.random() * 3:.2f}s")
                rc = 1
            else:
                body += f"\n{n} passed in {r.random() * 3:.2f}s"
            raw = body + "\n"
            parsed = {"type": "unknown", "cmd": cmd}
        elif k == 6:
            cmd = r.choice(["git status --short && git diff --stat", f"git diff {m}", "git log --oneline -n 20"])
            if "log" in cmd:
                raw = "\n".join(f"{r.getrandbits(28):07x} {t.sentence()}" for _ in range(20)) + "\n"
            else:
                lines = [f"diff --git a/{m} b/{m}", f"index {r.getrandbits(28):07x}..{r.getrandbits(28):07x} 100644",
                         f"--- a/{m}", f"+++ b/{m}", f"@@ -{r.randrange(1, 300)},12 +{r.randrange(1, 300)},14 @@"]
                for s in t.run(t.code, size):
                    lines.append(r.choice([" ", " ", " ", "+", "-"]) + s)
                raw = "\n".join(lines) + "\n"
            parsed = {"type": "unknown", "cmd": cmd}
        elif k == 7:
            f = r.choice(DATA)
            cmd = f"grep -c ' {r.choice([200, 404, 502, 503, 504])} ' {f}; head -n {size // 170 + 1} {f}"
            raw = f"{r.randrange(0, 2500)}\n" + "\n".join(t.run(t.log, size)) + "\n"
            parsed = {"type": "search", "cmd": cmd, "query": "", "path": Path(f).name}
        elif k == 8:
            d = r.choice(["logscan", "tests", "data", "logscan/formats", "logscan/export"])
            cmd = f"ls -la {d} && wc -l {d}/*"
            names = [p for p in MODULES + TESTS + DATA if p.startswith(d + "/")] or MODULES
            raw = f"total {r.randrange(40, 900)}\n" + "\n".join(
                f"-rw-r--r-- 1 root root {r.randrange(200, 90000):6d} Dec  3 {r.randrange(9, 18):02d}:{r.randrange(60):02d} {Path(p).name}"
                for p in names) + "\n" + "\n".join(f"  {r.randrange(10, 3000):5d} {p}" for p in names) + "\n"
            parsed = {"type": "list_files", "cmd": cmd, "path": d}
        else:
            cmd = f"python -m logscan.cli report {r.choice(DATA[:1] + DATA[3:])} --by {t.w()}"
            rows = [f"{t.w():<14} {r.randrange(0, 5000):>8} {r.randrange(0, 300):>6} {r.random():>8.3f}"
                    for _ in range(max(3, size // 42))]
            raw = f"{'key':<14} {'requests':>8} {'5xx':>6} {'p95_rt':>8}\n" + "\n".join(rows) + "\n"
            parsed = {"type": "unknown", "cmd": cmd}
        cpt = 2.0 if ("data/" in cmd and "logscan" not in cmd) else 3.6   # characters a token (log lines are dense)
        return cmd, raw, rc, parsed, cpt

    def exec_output(self, raw, rc):
        r = self.rng
        tok = (len(raw.encode()) + 3) // 4
        head = f"Chunk ID: {r.getrandbits(24):06x}\nWall time: {r.random() * 2:.4f} seconds\nProcess exited with code {rc}\nOriginal token count: {tok}\nOutput:\n"
        if tok > 10000:
            keep = 20000
            cut = (len(raw) - 2 * keep) // 4
            out = (f"Warning: truncated output (original token count: {tok})\nTotal output lines: {raw.count(chr(10))}\n\n"
                   f"{raw[:keep]}…{cut} tokens truncated…{raw[-keep:]}")
        else:
            out = raw
        agg = raw if len(raw) <= 65536 else raw[:32768] + raw[-32768:]
        return head + out, agg

    def patch_call(self):
        r, t = self.rng, self.text
        m = r.choice(MODULES + TESTS)
        old = t.run(t.code, r.randint(100, 600))
        new = t.run(t.code, r.randint(150, 1200))
        hunk = "\n".join([f"@@ def {t.ident()}("] + [" " + s for s in old[:2]] + ["-" + s for s in old[2:]]
                         + ["+" + s for s in new])
        patch = f"*** Begin Patch\n*** Update File: {m}\n{hunk}\n*** End Patch\n"
        diff = f"--- a/{m}\n+++ b/{m}\n" + hunk + "\n"
        return m, patch, diff

    def plan_args(self):
        r, t = self.rng, self.text
        steps = []
        for i in range(r.randint(2, 5)):
            steps.append({"step": f"{t.w().capitalize()} the {t.w()} in {r.choice(MODULES)}",
                          "status": r.choice(["completed", "in_progress", "pending"])})
        return json.dumps({"plan": steps}, ensure_ascii=False)

    # ---- responses

    def response(self, final):
        if COMPACT_LIMIT and self.ctx >= COMPACT_LIMIT:
            self.compaction()
        r, t = self.rng, self.text
        inp = self.ctx
        self.tick(800, 9000)
        cached = self.cached_for(inp)
        if self.first_token_ms is None:
            self.first_token_ms = r.randint(90, 2500)
        out_tok = 12
        reasoning_tok = 0
        produced = 0
        if r.random() < 0.25:
            summ = t.para(r.randint(1, 3))
            rid = self.ids.hex("rs_", 48)
            self.item_completed({"type": "Reasoning", "id": rid, "summary_text": [summ], "raw_content": []})
            self.write("response_item", {"type": "reasoning", "id": rid, "summary": [{"type": "summary_text", "text": summ}],
                                         "content": None, "encrypted_content": None,
                                         "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id}},
                       self.meta())
            reasoning_tok = len(summ) // 4 + r.randint(0, 200)
            out_tok += reasoning_tok
            produced += len(summ) // 4
        text = None
        if final:
            text = t.para(r.randint(2, 8))
            if r.random() < 0.5:
                text += "\n\n" + "\n".join(f"- {t.sentence()}" for _ in range(r.randint(2, 6)))
        elif r.random() < 0.3:
            text = r.choice([f"Checking how `{t.ident()}` is used before changing it.", f"Running the {t.w()} tests.",
                             f"Looking at `{r.choice(MODULES)}` first.", t.sentence()])
        if text is not None:
            mid = self.ids.hex("msg_", 48)
            self.item_completed({"type": "AgentMessage", "id": mid, "content": [{"type": "Text", "text": text}]})
            rev = "retained_" + self.ids.uuid7(self.ms)
            self.write("response_item", {"type": "message", "status": "completed", "id": mid, "role": "assistant",
                                         "content": [{"type": "output_text", "text": text, "annotations": []}],
                                         "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id, "content_item_kinds": ["unknown"]}},
                       self.meta(retained_source={"id": {"message_id": mid, "turn_id": self.turn_id, "role": "assistant"},
                                                  "revision": rev, "complete": True}, user_input_order=self.order))
            if final:
                self.window_answers.append({"revision": rev, "order": self.order, "turn_id": self.turn_id,
                                            "message_id": mid, "text": text, "complete": True})
            self.order += 1
            out_tok += len(text) // 4
            produced += len(text) // 4
        calls = []
        if not final:
            n = r.choices([1, 2, 3, 4], [70, 20, 7, 3])[0]
            for _ in range(n):
                k = r.random()
                cid = self.ids.call()
                if k < 0.86:
                    cmd, raw, rc, parsed, cpt = self.exec_call()
                    args = json.dumps({"cmd": cmd}, ensure_ascii=False)
                    calls.append(("exec", cid, cmd, raw, rc, parsed, cpt))
                    name = "exec_command"
                elif k < 0.93:
                    m, patch, diff = self.patch_call()
                    calls.append(("patch", cid, m, patch, diff))
                    self.write("response_item", {"type": "custom_tool_call", "id": self.ids.hex("ctc_", 48), "status": "completed",
                                                 "call_id": cid, "name": "apply_patch", "input": patch,
                                                 "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id}},
                               self.meta(user_input_order=self.order))
                    self.order += 1
                    self.item_completed({"type": "FileChange", "id": cid,
                                         "changes": {f"{CWD}/{m}": {"type": "update", "unified_diff": diff, "move_path": None}},
                                         "status": "completed", "stdout": f"Success. Updated the following files:\nM {m}\n", "stderr": ""})
                    out_tok += len(patch) // 4
                    produced += len(patch) // 4
                    continue
                else:
                    args = self.plan_args()
                    calls.append(("plan", cid))
                    name = "update_plan"
                self.write("response_item", {"type": "function_call", "status": "completed", "id": self.ids.hex("fc_", 48),
                                             "name": name, "arguments": args, "call_id": cid,
                                             "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id}},
                           self.meta(user_input_order=self.order))
                self.order += 1
                out_tok += len(args) // 4 + 8
                produced += len(args) // 4 + 8
        out_tok += r.randint(0, 40)
        self.record(inp, cached, out_tok, reasoning_tok)
        self.ctx += produced + 10
        self.sampled = self.hist
        for c in calls:
            if c[0] == "exec":
                _, cid, cmd, raw, rc, parsed, cpt = c
                self.tick(5, 4000 if len(raw) < 20000 else 30000)
                output, agg = self.exec_output(raw, rc)
                self.item_completed({"type": "CommandExecution", "id": cid, "process_id": str(self.rng.randrange(1000, 99999)),
                                     "command": ["/bin/bash", "-lc", cmd], "cwd": f"file://{CWD}", "parsed_cmd": [parsed],
                                     "source": "unified_exec_startup", "status": "completed" if rc == 0 else "failed",
                                     "aggregated_output": agg, "exit_code": rc,
                                     "duration": {"secs": self.rng.randrange(0, 3), "nanos": self.rng.randrange(1, 999999999)}},
                                    start=self.ms - self.rng.randint(0, 50))
                self.write("response_item", {"type": "function_call_output", "id": "fco_" + self.ids.uuid7(self.ms), "call_id": cid,
                                             "output": output,
                                             "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id, "create_time": self.ms / 1000}},
                           self.meta(fallback_token_limit_override=12000))
                self.ctx += int(len(output) / cpt) + 10
            elif c[0] == "patch":
                _, cid, m, patch, diff = c
                self.write("response_item", {"type": "custom_tool_call_output", "id": "ctco_" + self.ids.uuid7(self.ms), "call_id": cid,
                                             "output": f"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM {m}\n",
                                             "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id, "create_time": self.ms / 1000}},
                           self.meta(fallback_token_limit_override=12000))
                self.ctx += 30
            else:
                self.write("response_item", {"type": "function_call_output", "id": "fco_" + self.ids.uuid7(self.ms), "call_id": c[1],
                                             "output": "Plan updated",
                                             "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id, "create_time": self.ms / 1000}},
                           self.meta(fallback_token_limit_override=12000))
                self.ctx += 8
        self.token_count()
        return text

    # ---- compaction

    def compaction(self):
        r, t = self.rng, self.text
        self.compactions += 1
        self.token_count()                      # the same totals again
        started = self.ms
        self.tick(1500, 12000)
        summary = (f"## Objective\n{t.para(2)}\n\n## Progress\n" +
                   "\n".join(f"- {t.sentence()}" for _ in range(r.randint(3, 8))) +
                   f"\n\n## Next steps\n" + "\n".join(f"{i + 1}. {t.sentence()}" for i in range(r.randint(2, 4))) + "\n")
        mid = self.ids.hex("msg_", 48)
        self.write("response_item", {"type": "message", "status": "completed", "id": mid, "role": "assistant",
                                     "content": [{"type": "output_text", "text": summary, "annotations": []}],
                                     "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id, "content_item_kinds": ["unknown"]}},
                   self.meta(compaction_output=True))
        inp = self.ctx + 105
        cached = 0 if self.compactions == 1 else 4352
        self.record(inp, cached, 40 + len(summary) // 4, 0)
        self.token_count()
        # The history the next request starts from: the user messages (newest kept, ~20k tokens),
        # fresh developer and environment messages before the current turn's, then the summary.
        kept, n = [], 0
        for um in reversed(self.user_msgs):
            n += len(um[2]["text"])
            if n > 80_000:
                break
            kept.append(um)
        kept.reverse()
        older = [k for k in kept if k[2]["turn_id"] != self.turn_id]
        current = [k for k in kept if k[2]["turn_id"] == self.turn_id]
        hist, hmeta = [], []
        for msg, md, _ in older:
            hist.append(msg)
            hmeta.append(dict(md, sampled_through_sequence=self.sampled))
        for p in self.context_msgs(write=False):
            hist.append(p)
            self.hist += 1
            hmeta.append({"history_sequence": self.hist, "sampled_through_sequence": self.sampled,
                          "client_authored": False, "model_search_state": "unused"})
        for msg, md, _ in current:
            hist.append(msg)
            hmeta.append(md)
        message = self.prefix + "\n" + summary
        hist.append({"type": "message", "id": "msg_" + self.ids.uuid7(self.ms), "role": "user",
                     "content": [{"type": "input_text", "text": message}],
                     "internal_chat_message_metadata_passthrough": {
                         "turn_id": self.turn_id, "content_item_kinds": ["compaction.summary"],
                         "content_item_metadata": [{"provenance": {"type": "harness", "hook": False}}]}})
        self.hist += 1
        hmeta.append({"history_sequence": self.hist, "sampled_through_sequence": self.sampled, "client_authored": False,
                      "mcp_attribution": {"status": "none"}, "model_search_state": "unused"})
        resume = json.loads(json.dumps(self.t_resume))
        resume["dynamic_tools"]["thread_id"] = self.thread_id
        resume["last_started_turn_id"] = self.turn_id
        resume["turn_attribution"]["turn_id"] = resume["turn_attribution"]["root_turn_id"] = self.turn_id
        new_window = self.ids.uuid7(self.ms)
        self.write("compacted", {
            "message": message, "replacement_history": hist, "replacement_history_metadata": hmeta,
            "retained_context": {"verified_answers": [], "incomplete": False,
                                 "user_messages": [k[2] for k in kept], "user_messages_incomplete": False,
                                 "assistant_messages": self.window_answers[-20:], "assistant_messages_incomplete": False,
                                 "next_order": self.order},
            "window_number": self.compactions, "first_window_id": self.first_window_id,
            "previous_window_id": self.window_id, "window_id": new_window,
            "compaction_response_id": self.response_id, "latest_token_usage_record": self.last_record,
            "resume_metadata": resume})
        self.window_id = new_window
        self.window_answers = []
        self.world_state()
        self.turn_context()
        self.settings()
        estimate = 6900 + sum(len(k[2]["text"]) // 4 for k in kept) + len(message) // 4
        self.token_count(last=usage(total=estimate), includes_reasoning=True)
        self.item_completed({"type": "ContextCompaction", "id": self.ids.uuid7(self.ms)}, start=started)
        self.ctx = estimate + 1084
        self.cache_reset = True                 # the next request shares only the fixed prefix

    # ---- the thread

    def run(self):
        meta = json.loads(json.dumps(self.t_meta))
        meta["session_id"] = meta["id"] = self.thread_id
        meta["timestamp"] = iso(self.ms - 60)
        meta["context_window"] = {"window_id": self.window_id}
        meta["git"] = {"commit_hash": f"{self.rng.getrandbits(160):040x}", "branch": "main"}
        self.write("session_meta", meta)
        first = True
        while self.responses < self.want:
            self.start_turn(first)
            first = False
            steps = min(1 + int(self.rng.expovariate(1 / 8)), 40, max(1, self.want - self.responses))
            final = None
            for i in range(steps):
                final = self.response(final=(i == steps - 1))
            self.end_turn(final)
        self.f.close()


def main():
    want = int(sys.argv[1])
    out = Path(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    g = Gen(want, out, seed)
    g.run()
    print(f"{out}: {g.responses} responses ({g.compactions} compactions), {g.ordinal} lines, "
          f"{out.stat().st_size / 1e6:.1f} MB, thread total {g.thread['total_tokens']} tokens")


if __name__ == "__main__":
    main()
