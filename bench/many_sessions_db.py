#!/usr/bin/env python3
"""A heavy user's opencode.db: N sessions of R requests each (issue 17's picker benchmark).

usage: many_sessions_db.py TIERSCOPE TEMPLATE_DB OUT_DB N [R]

Every session is its own fixture (`tierscope fixture --seed K --requests R --episodes R/5`, seeds
1..N, so ids, titles, times and texts all differ), inserted with `export_to_db.py`'s rules into a
copy of TEMPLATE_DB (a real OpenCode 1.18.33 database), so `opencode session list`, sqlite3 and
tierscope read the same rows. Every 16th session is made a sub-agent of the one before it
(`parent_id`), so the listing has a tree to draw. R = 50 gives ~0.2 MB of stored JSON per session
(1,024 sessions: ~210 MB, the size issue 17 measured). Every session belongs to OpenCode's
`global` project (worktree `/`), so `opencode session list` run outside a git repository lists
them all, as tierscope does. The fixtures are kept in OUT_DB's directory (`fixtures-R/`) and
reused.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_to_db  # noqa: E402


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    ts, template, out, n = sys.argv[1:5]
    n = int(n)
    r = int(sys.argv[5]) if len(sys.argv) == 6 else 50
    fixtures = os.path.join(os.path.dirname(os.path.abspath(out)), f"fixtures-{r}")
    os.makedirs(fixtures, exist_ok=True)
    db = export_to_db.empty_copy(template, out)
    # OpenCode's own global project (insert_export would clone one with a session's directory).
    if not db.execute("SELECT 1 FROM project WHERE id = 'global'").fetchone():
        cols = [r[1] for r in db.execute("PRAGMA table_info(project)")]
        row = dict(zip(cols, db.execute("SELECT * FROM project LIMIT 1").fetchone()))
        row.update(id="global", worktree="/", name=None)
        db.execute(f"INSERT INTO project ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                   [row[c] for c in cols])
    total_m = total_p = 0
    prev_id = None
    for k in range(1, n + 1):
        path = os.path.join(fixtures, f"s{k}.json")
        if not os.path.exists(path):
            subprocess.run(
                [ts, "fixture", "--seed", str(k), "--requests", str(r), "--episodes",
                 str(max(1, r // 5)), "--name", f"s{k}", "--out", fixtures],
                check=True, stdout=subprocess.DEVNULL)
        doc = export_to_db.read_export(path)
        doc["info"]["projectID"] = "global"
        if k % 16 == 0 and prev_id:
            doc["info"]["parentID"] = prev_id
        m, p = export_to_db.insert_export(db, doc)
        total_m += m
        total_p += p
        prev_id = doc["info"]["id"]
    export_to_db.finish(db)
    print(f"{out}: {n} sessions, {total_m} messages, {total_p} parts, "
          f"{os.path.getsize(out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
