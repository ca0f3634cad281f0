#!/usr/bin/env python3
"""Cut a codex-recorder recording down to what tierscope's tests read.

    trim.py RECORDING_DIR OUT_DIR

Keeps, byte for byte: the rollout files under dot-codex/sessions/ (and archived_sessions/),
dot-codex/state_5.sqlite with its -wal/-shm when Codex left them, dot-codex/config.toml and
model-catalog.json, log/ (the mock's request log and the scenario), manifest.json, schema.md,
README.md. Drops events/, the other SQLite files, LISTING.txt, and replaces each whole-request
dump requests/<name>.requests.jsonl.gz by requests/<name>.requests.extract.jsonl: per request its
seq, kind, the request_kind of x-codex-turn-metadata, the tools offered, parallel_tool_calls, the
number of input items, the last input item (its text whole for a compaction request, else cut at
400 characters) and the response id. Never opens a SQLite file (it is copied, not read).
"""
import gzip
import json
import shutil
import sys
from pathlib import Path

KEEP_FILES = ["manifest.json", "schema.md", "README.md"]
KEEP_HOME = ["config.toml", "model-catalog.json", "state_5.sqlite", "state_5.sqlite-wal", "state_5.sqlite-shm"]


def last_text(item):
    if item.get("type") != "message":
        return None
    parts = item.get("content") or []
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


def loads_maybe(v):
    return json.loads(v) if isinstance(v, str) else (v or {})


def extract(dump: Path, out: Path):
    with gzip.open(dump, "rt", encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for line in src:
            d = json.loads(line)
            params = loads_maybe(d.get("params"))
            headers = loads_maybe(d.get("headers"))
            meta = loads_maybe(headers.get("x-codex-turn-metadata"))
            tools = d.get("tools") or []
            items = d.get("input") or []
            last = items[-1] if items else {}
            text = last_text(last)
            if text is not None and d.get("kind") != "compaction" and len(text) >= 400:
                text = text[:400] + "\u2026"
            response = loads_maybe(d.get("response"))
            rec = {
                "seq": d.get("seq"),
                "kind": d.get("kind"),
                "request_kind": meta.get("request_kind"),
                "n_tools": len(tools),
                "tool_names": [t.get("name") or t.get("type") for t in tools],
                "parallel_tool_calls": params.get("parallel_tool_calls"),
                "n_input_items": len(items),
                "last_item": {"type": last.get("type"), "role": last.get("role"), "text": text},
                "response_id": response.get("id"),
            }
            dst.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    for name in KEEP_FILES:
        if (src / name).exists():
            shutil.copyfile(src / name, out / name)
    home = src / "dot-codex"
    (out / "dot-codex").mkdir()
    for name in KEEP_HOME:
        if (home / name).exists():
            shutil.copyfile(home / name, out / "dot-codex" / name)
    for tree in ["sessions", "archived_sessions"]:
        if (home / tree).is_dir():
            shutil.copytree(home / tree, out / "dot-codex" / tree)
    if (src / "log").is_dir():
        shutil.copytree(src / "log", out / "log")
    dumps = sorted((src / "requests").glob("*.requests.jsonl.gz"))
    if dumps:
        (out / "requests").mkdir()
    for dump in dumps:
        name = dump.name[: -len(".requests.jsonl.gz")]
        extract(dump, out / "requests" / f"{name}.requests.extract.jsonl")


if __name__ == "__main__":
    main()
