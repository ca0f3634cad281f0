#!/usr/bin/env python3
"""Write an `opencode export` file as OpenCode's global JSON storage tree (the layout of the
1.0.69-1.1.x releases, `storage/{project,session,message,part}/`), to measure tierscope's load of
a storage tree at a size no recording has:

    bench/export_to_storage.py EXPORT.json OUT_DIR

OUT_DIR/storage is then a data dir tierscope opens (`tierscope episodes OUT_DIR`). Files are
written as OpenCode writes them (pretty-printed JSON, one file per session, message and part);
the session keeps the export's version, so it is read with that release's rules.
"""
import json
import os
import sys


def write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1:]
    if os.path.exists(out) and os.listdir(out):
        sys.exit(f"{out}: not empty")
    with open(src) as f:
        export = json.load(f)
    info = export["info"]
    sid = info["id"]
    pid = info.get("projectID") or "global"
    st = os.path.join(out, "storage")
    write(os.path.join(st, "project", f"{pid}.json"),
          {"id": pid, "worktree": info.get("directory", ""), "vcs": "git", "sandboxes": [],
           "time": info.get("time", {})})
    write(os.path.join(st, "session", pid, f"{sid}.json"), info)
    parts = 0
    for m in export["messages"]:
        mi = m["info"]
        write(os.path.join(st, "message", sid, f"{mi['id']}.json"), mi)
        for p in m.get("parts", []):
            write(os.path.join(st, "part", mi["id"], f"{p['id']}.json"), p)
            parts += 1
    with open(os.path.join(st, "migration"), "w") as f:
        f.write("2")
    print(f"{out}: 1 session, {len(export['messages'])} messages, {parts} parts", file=sys.stderr)


if __name__ == "__main__":
    main()
