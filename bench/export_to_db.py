#!/usr/bin/env python3
"""Put an `opencode export` file into an opencode.db, so OpenCode, sqlite3 and tierscope read the
same rows.

usage: export_to_db.py TEMPLATE_DB EXPORT_JSON OUT_DB

TEMPLATE_DB is a real OpenCode 1.18.33 database (its -wal/-shm beside it): it is copied, emptied of
sessions (messages and parts go with them), and the export's session, messages and parts are
inserted the way OpenCode stores them (reference opencode-format.md §1.4): the ids live in columns,
not in `data` (`message.data` = info minus id/sessionID; `part.data` = part minus
id/sessionID/messageID), `message.time_created` = info.time.created. The schema, the migration
rows and the projects of the template are kept, so the real client opens the file as its own.
"""
import json
import os
import shutil
import sqlite3
import sys


def empty_copy(template, out):
    """Copy TEMPLATE_DB (and its -wal/-shm) to OUT emptied of sessions; returns the connection."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(out + suffix):
            os.remove(out + suffix)
        if os.path.exists(template + suffix):
            shutil.copyfile(template + suffix, out + suffix)
            os.chmod(out + suffix, 0o644)
    db = sqlite3.connect(out)
    db.execute("PRAGMA foreign_keys = ON")
    for table in ("part", "message", "todo", "session_share", "event", "event_sequence"):
        try:
            db.execute(f"DELETE FROM {table}")
        except sqlite3.OperationalError:
            pass  # table absent in this schema version
    db.execute("DELETE FROM session")
    return db


def read_export(path):
    with open(path, "rb") as f:
        raw = f.read()
    return json.loads(raw[raw.index(b"{"):])


def insert_export(db, doc):
    """Insert one export's session, messages and parts; returns (messages, parts) inserted."""
    info = doc["info"]
    # The session's project must exist (foreign key): clone a template project under its id.
    pid = info.get("projectID", "global")
    if not db.execute("SELECT 1 FROM project WHERE id = ?", (pid,)).fetchone():
        cols = [r[1] for r in db.execute("PRAGMA table_info(project)")]
        row = dict(zip(cols, db.execute("SELECT * FROM project LIMIT 1").fetchone()))
        row["id"] = pid
        row["worktree"] = info.get("directory", "/")
        row["name"] = None
        db.execute(
            f"INSERT INTO project ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
            [row[c] for c in cols],
        )

    def js(v):
        return None if v is None else json.dumps(v, separators=(",", ":"))

    summary = info.get("summary") or {}
    tokens = info.get("tokens") or {}
    cache = tokens.get("cache") or {}
    t = info.get("time") or {}
    session = {
        "id": info["id"],
        "project_id": pid,
        "workspace_id": info.get("workspaceID"),
        "parent_id": info.get("parentID"),
        "slug": info.get("slug", ""),
        "directory": info.get("directory", "/"),
        "path": info.get("path"),
        "title": info.get("title", ""),
        "version": info.get("version", "1.18.33"),
        "share_url": (info.get("share") or {}).get("url"),
        "summary_additions": summary.get("additions"),
        "summary_deletions": summary.get("deletions"),
        "summary_files": summary.get("files"),
        "summary_diffs": js(summary.get("diffs")),
        "metadata": js(info.get("metadata")),
        "cost": info.get("cost", 0),
        "tokens_input": tokens.get("input", 0),
        "tokens_output": tokens.get("output", 0),
        "tokens_reasoning": tokens.get("reasoning", 0),
        "tokens_cache_read": cache.get("read", 0),
        "tokens_cache_write": cache.get("write", 0),
        "revert": js(info.get("revert")),
        "permission": js(info.get("permission")),
        "agent": info.get("agent"),
        "model": js(info.get("model")),
        "time_created": t.get("created", 0),
        "time_updated": t.get("updated", t.get("created", 0)),
        "time_compacting": t.get("compacting"),
        "time_archived": t.get("archived"),
    }
    known = {r[1] for r in db.execute("PRAGMA table_info(session)")}
    cols = [c for c in session if c in known]
    db.execute(
        f"INSERT INTO session ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
        [session[c] for c in cols],
    )

    msgs, parts = [], []
    for m in doc["messages"]:
        mi = m["info"]
        created = (mi.get("time") or {}).get("created", 0)
        data = {k: v for k, v in mi.items() if k not in ("id", "sessionID")}
        msgs.append((mi["id"], info["id"], created, created, js(data)))
        for p in m.get("parts", []):
            pdata = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
            pt = (p.get("time") or {}).get("start", created)
            parts.append((p["id"], mi["id"], info["id"], pt, pt, js(pdata)))
    db.executemany("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?)", msgs)
    db.executemany(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?,?)",
        parts,
    )
    return len(msgs), len(parts)


def finish(db):
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.close()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    template, export_path, out = sys.argv[1:]
    doc = read_export(export_path)
    db = empty_copy(template, out)
    n_msgs, n_parts = insert_export(db, doc)
    finish(db)
    print(f"{out}: session {doc['info']['id']}, {n_msgs} messages, {n_parts} parts")


if __name__ == "__main__":
    main()
