#!/usr/bin/env python3
"""Copy a recording made by record.sh into tests/recordings/, trimmed to what the tests read.

    trim.py RECORDING DEST [--exports NAME ...] [--vacuum]

RECORDING is record.sh's OUTDIR (or a recording of an older release laid out the same way, with
`run-events/` instead of `requests/`); DEST is e.g. tests/recordings/opencode-1.18.33 (created,
must not exist). What is kept:

- `data/`: OpenCode's database with its `-wal` and `-shm` byte for byte (tests check that rows in
  the WAL are read and that no command changes a byte), or, with --vacuum, compacted with
  `VACUUM INTO` (same rows, no `-wal`); the JSON storage trees (`storage/`, `project/`) as they
  are. Dropped: `tool-output/`, `snapshot*/`, `log/`, `bin/` (tierscope reads none of them).
- `exports/`: every `opencode export`, or only those whose file name starts with a --exports NAME
  (a session's `NAME.childN.json` sub-agent exports come with it).
- `requests/*.requests.jsonl`: per request `seq`, `t`, `time`, `session_id`, `kind` and
  `usage_basis` (the model's true prompt count); the bodies are dropped except the messages of
  summary (compaction) calls, which the tests compare with what tierscope rebuilds.
- `run-events/*.mock-requests.jsonl` and `*.result.json` (older releases' mock logs and
  scenario → session maps); the turn events and full request dumps are dropped.
- `README.md` and `manifest.json`.
"""

import argparse
import json
import shutil
import sqlite3
import sys
from pathlib import Path

KEPT_REQUEST_FIELDS = ["seq", "t", "time", "session_id", "kind", "usage_basis"]


def copy_data(src: Path, dest: Path, vacuum: bool) -> None:
    if not src.is_dir():
        return
    dest.mkdir(parents=True)
    db = src / "opencode.db"
    if db.is_file():
        if vacuum:
            # Read-only, so the recording's -wal is read and left as it is.
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            conn.execute("VACUUM INTO ?", (str(dest / "opencode.db"),))
            conn.close()
        else:
            for suffix in ["", "-wal", "-shm"]:
                f = src / f"opencode.db{suffix}"
                if f.is_file():
                    shutil.copy2(f, dest / f.name)
    for tree in ["storage", "project"]:
        if (src / tree).is_dir():
            shutil.copytree(src / tree, dest / tree)


def copy_exports(src: Path, dest: Path, names: list[str]) -> None:
    if not src.is_dir():
        return
    dest.mkdir(parents=True)
    for f in sorted(src.glob("*.json")):
        stem = f.name.split(".")[0]
        if not names or stem in names:
            shutil.copy2(f, dest / f.name)


def trim_requests(src: Path, dest: Path) -> None:
    if not src.is_dir():
        return
    dest.mkdir(parents=True)
    for f in sorted(src.glob("*.requests.jsonl")):
        out = []
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            v = json.loads(line)
            kept = {k: v[k] for k in KEPT_REQUEST_FIELDS if k in v}
            if v.get("kind") == "summary":
                kept["messages"] = v["messages"]
            out.append(json.dumps(kept, ensure_ascii=False))
        (dest / f.name).write_text("\n".join(out) + "\n")


def copy_run_events(src: Path, dest: Path) -> None:
    if not src.is_dir():
        return
    dest.mkdir(parents=True)
    for pattern in ["*.mock-requests.jsonl", "*.result.json"]:
        for f in sorted(src.glob(pattern)):
            shutil.copy2(f, dest / f.name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recording", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--exports", nargs="*", default=[], metavar="NAME")
    ap.add_argument("--vacuum", action="store_true")
    a = ap.parse_args()
    if a.dest.exists():
        print(f"{a.dest} exists; remove it first", file=sys.stderr)
        return 1
    a.dest.mkdir(parents=True)
    copy_data(a.recording / "data", a.dest / "data", a.vacuum)
    copy_exports(a.recording / "exports", a.dest / "exports", a.exports)
    trim_requests(a.recording / "requests", a.dest / "requests")
    copy_run_events(a.recording / "run-events", a.dest / "run-events")
    for f in ["README.md", "manifest.json"]:
        if (a.recording / f).is_file():
            shutil.copy2(a.recording / f, a.dest / f)
    for p in a.dest.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)  # the source may be read-only
    return 0


if __name__ == "__main__":
    sys.exit(main())
