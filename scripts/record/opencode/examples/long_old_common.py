"""Helpers shared by the long 0.1.174 scenarios (L3, L4, L5)."""
import sys
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenario_kit import bash as _bash, read, write, edit, glob, grep, step, tool, http_error, P

_n = [0]


def bash(cmd, description=None, **kw):
    _n[0] += 1
    return _bash(cmd, description=description or f"Runs command {_n[0]}", **kw)


def todo(*items):
    return {"name": "todowrite", "args": {"todos": [
        {"id": str(i + 1), "content": c, "status": s, "priority": p} for i, (c, s, p) in enumerate(items)]}}


def todoread():
    return {"name": "todoread", "args": {}}


def ls(path=None):
    a = {}
    if path is not None:
        a["path"] = path if path.startswith("/") else f"{P}/{path}"
    return {"name": "list", "args": a}


def webfetch(url, fmt="markdown"):
    return {"name": "webfetch", "args": {"url": url, "format": fmt}}
