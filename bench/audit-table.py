#!/usr/bin/env python3
"""The tier audit on every recording as markdown tables (docs/episodes.md, "Measured").

    bench/audit-table.py AFTER_BIN [BEFORE_BIN]

For each recording (the bundled samples and the recordings of three OpenCode eras in tests/recordings,
every main session of each), runs `BIN audit PATH --session ID --format json` (every strategy the
binary audits by default) and prints, per session and strategy, tokens and needle survival of
the tiers below `full`, and the non-monotonic and unsupported counts; then the totals per
strategy and tier over all recordings. With BEFORE_BIN, a cell that changed shows `before → after`
and strategies the old binary lacks show `new`."""

import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
recordings = os.path.join(root, "tests", "recordings")

INPUTS = [
    ("M1", os.path.join(root, "sample-traces", "M1.json")),
    ("B1", os.path.join(root, "sample-traces", "B1.json")),
    ("C1", os.path.join(root, "sample-traces", "C1.json")),
    ("1.18.33", os.path.join(recordings, "opencode-1.18.33", "data")),
    ("1.1.65", os.path.join(recordings, "opencode-1.1.65", "data")),
    ("0.5.29", os.path.join(recordings, "opencode-0.5.29", "data")),
]
TIERS = ["dense", "compact", "anchor"]


def run(binary, args, cache):
    env = dict(os.environ, TIERSCOPE_CACHE_DIR=cache, NO_COLOR="1")
    out = subprocess.run([binary] + args, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def collect(binary):
    """{(recording, session suffix): {strategy: {tier: totals}}} and the session order."""
    cache = tempfile.mkdtemp(prefix="tierscope-audit-")
    data, order = {}, []
    for name, path in INPUTS:
        if not os.path.exists(path):
            continue
        for s in json.loads(run(binary, ["sessions", path, "--json"], cache)):
            if s.get("parent_id"):
                continue
            key = (name, s["id"][-8:])
            order.append(key)
            a = json.loads(run(binary, ["audit", path, "--session", s["id"], "--format", "json"], cache))
            data[key] = {
                st["strategy"]: {t["tier"]: t for t in st["totals"] if t["episodes"] > 0}
                for st in a["strategies"]
            }
    return data, order


def cell(t):
    return f"{t['tokens']:,} · {100 * t['survival']:.1f}%" if t else "–"


def both(after, before, new):
    a = cell(after)
    if new:
        return a
    b = cell(before)
    return a if a == b else f"{b} → {a}"


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    after, order = collect(sys.argv[1])
    before = collect(sys.argv[2])[0] if len(sys.argv) > 2 else None
    print("| recording | session | strategy | dense tok · survival | compact tok · survival | anchor tok · survival | non-mono | unsupported |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    totals = {}
    for key in order:
        for strategy, tiers in after[key].items():
            old = (before or {}).get(key, {}).get(strategy)
            new = before is not None and old is None
            cells = [both(tiers.get(t), (old or {}).get(t), new or before is None) for t in TIERS]
            nm = sum(tiers[t]["non_monotonic"] for t in tiers)
            un = sum(tiers[t]["unsupported"] for t in tiers if t != "full")
            tag = f"{strategy} (new)" if new else strategy
            print(f"| {key[0]} | {key[1]} | {tag} | {' | '.join(cells)} | {nm} | {un} |")
            for t in TIERS:
                for which, src in (("after", tiers.get(t)), ("before", (old or {}).get(t))):
                    if src:
                        agg = totals.setdefault((strategy, t, which), [0, 0, 0, 0, 0])
                        agg[0] += src["tokens"]
                        agg[1] += src["needles_ok"]
                        agg[2] += src["needles"]
                        agg[3] += src["non_monotonic"]
                        agg[4] += src["unsupported"]
    print()
    print("| all recordings | tier | tokens | needles kept | survival | non-mono | unsupported |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for strategy in sorted({k[0] for k in totals}):
        for t in TIERS:
            for which in ("before", "after") if before else ("after",):
                v = totals.get((strategy, t, which))
                if not v:
                    continue
                tok, ok, n, nm, un = v
                label = f"{strategy} ({which})" if before else strategy
                print(f"| {label} | {t} | {tok:,} | {ok:,}/{n:,} | {100 * ok / n if n else 100:.1f}% | {nm} | {un} |")


if __name__ == "__main__":
    main()
