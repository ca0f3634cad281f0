#!/usr/bin/env python3
"""Write a large synthetic Claude Code session file for load benchmarks.

    bench/claude_code_session.py REQUESTS OUT.jsonl

Repeats the records of the recorded compaction_logscan session (tests/recordings/claude-code-2.1.197)
until REQUESTS API responses are written: every uuid, message id, request id and tool-use id is made
fresh per repetition, each repetition's first record links to the previous one's last, timestamps
advance, so the file reads as one long conversation in the CLI's own format (one record per content
block, usage repeated on each). Compaction boundaries and summaries are left out (their preserved
segments name uuids of one repetition).
"""
import json
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SOURCE = HERE / "tests/recordings/claude-code-2.1.197/dot-claude/projects/-home-dev-src-logscan/927b1170-f977-416a-aabb-46039b7eb22a.jsonl"


def main():
    want = int(sys.argv[1])
    out = Path(sys.argv[2])
    records = []
    for line in SOURCE.read_text().splitlines():
        r = json.loads(line)
        if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
            continue
        if r.get("isCompactSummary"):
            continue
        records.append(r)
    per_rep = len({(r["message"]["id"], r.get("requestId")) for r in records
                   if r.get("type") == "assistant" and r.get("message", {}).get("model") != "<synthetic>"})
    session = str(uuid.uuid4())
    start = datetime(2026, 12, 1, tzinfo=timezone.utc)
    written = 0
    rep = 0
    last = None
    with out.open("w") as f:
        while written < want:
            ids = {}

            def fresh(old, prefix=""):
                if old is None:
                    return None
                if old not in ids:
                    ids[old] = prefix + uuid.uuid4().hex[:24]
                return ids[old]

            for r in records:
                r = json.loads(json.dumps(r))
                if "uuid" in r:
                    r["uuid"] = fresh(r["uuid"])
                if "parentUuid" in r:
                    r["parentUuid"] = fresh(r["parentUuid"]) if r["parentUuid"] in ids else last
                r["sessionId"] = session
                r["timestamp"] = (start + timedelta(seconds=rep * 60 + written % 60)).isoformat().replace("+00:00", "Z")
                m = r.get("message")
                if isinstance(m, dict):
                    if r.get("type") == "assistant":
                        m["id"] = fresh(m.get("id"), "msg_")
                        if "requestId" in r:
                            r["requestId"] = fresh(r["requestId"], "req_")
                    if isinstance(m.get("content"), list):
                        for b in m["content"]:
                            if b.get("type") == "tool_use":
                                b["id"] = fresh(b["id"], "toolu_")
                            if b.get("type") == "tool_result":
                                b["tool_use_id"] = fresh(b["tool_use_id"], "toolu_")
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
                if r.get("uuid"):
                    last = r["uuid"]
            written += per_rep
            rep += 1
    print(f"{out}: {rep} repetitions, {written} responses, {out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
