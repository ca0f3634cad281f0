#!/usr/bin/env python3
"""The tier audit on every recording as one markdown table (docs/episodes.md, "Measured").

    bench/audit-table.py BIN [LABEL] [--strategy S ...]

For each recording (the bundled samples and the shared recordings of all three OpenCode eras,
every main session of each), runs `BIN audit PATH --session ID --format json` and prints one row
per session, strategy and tier below `full`: tokens, needle survival, survival per 1,000 tokens,
non-monotonic and unsupported counts. Totals per strategy and tier close the table. A binary that
does not know a strategy is asked only for the ones it knows (`--strategy` given explicitly)."""

import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
shared = os.environ.get("SHARED_TRACES", os.path.join(root, "..", "shared", "traces"))

INPUTS = [
    ("M1", os.path.join(root, "sample-traces", "M1.json")),
    ("B1", os.path.join(root, "sample-traces", "B1.json")),
    ("C1", os.path.join(root, "sample-traces", "C1.json")),
    ("1.18.33", os.path.join(shared, "opencode-1.18.33", "data")),
    ("1.1.65", os.path.join(shared, "opencode-1.1.65", "data")),
    ("0.5.29", os.path.join(shared, "opencode-0.5.29", "data")),
]


def run(binary, args, cache):
    env = dict(os.environ, TIERSCOPE_CACHE_DIR=cache, NO_COLOR="1")
    out = subprocess.run([binary] + args, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def main():
    argv = sys.argv[1:]
    if not argv:
        raise SystemExit(__doc__)
    binary, label = argv[0], (argv[1] if len(argv) > 1 and not argv[1].startswith("--") else "")
    strategies = [argv[i + 1] for i, a in enumerate(argv) if a == "--strategy"]
    extra = [x for s in strategies for x in ("--strategy", s)]
    cache = tempfile.mkdtemp(prefix="tierscope-audit-")
    totals = {}
    print(f"| recording | session | strategy | tier | tokens | survival | per 1k | non-mono | unsupported |{' build |' if label else ''}")
    print(f"|---|---|---|---|---:|---:|---:|---:|---:|{'---|' if label else ''}")
    for name, path in INPUTS:
        if not os.path.exists(path):
            continue
        sessions = json.loads(run(binary, ["sessions", path, "--json"], cache))
        for s in sessions:
            if s.get("parent_id"):
                continue
            a = json.loads(run(binary, ["audit", path, "--session", s["id"], "--format", "json"] + extra, cache))
            for st in a["strategies"]:
                for t in st["totals"]:
                    if t["tier"] == "full" or t["episodes"] == 0:
                        continue
                    k = (st["strategy"], t["tier"])
                    agg = totals.setdefault(k, [0, 0, 0, 0, 0])
                    agg[0] += t["tokens"]
                    agg[1] += t["needles_ok"]
                    agg[2] += t["needles"]
                    agg[3] += t["non_monotonic"]
                    agg[4] += t["unsupported"]
                    print(
                        f"| {name} | {s['id'][-8:]} | {st['strategy']} | {t['tier']} | {t['tokens']:,} | "
                        f"{100 * t['survival']:.1f}% | {t['survival_per_1k']:.2f} | {t['non_monotonic']} | "
                        f"{t['unsupported']} |{f' {label} |' if label else ''}"
                    )
    print()
    print(f"| all recordings | strategy | tier | tokens | needles kept | survival | non-mono | unsupported |{' build |' if label else ''}")
    print(f"|---|---|---|---:|---:|---:|---:|---:|{'---|' if label else ''}")
    for (strategy, tier), (tok, ok, n, nm, un) in sorted(
        totals.items(), key=lambda kv: (kv[0][0], ["dense", "compact", "anchor"].index(kv[0][1]))
    ):
        surv = 100 * ok / n if n else 100.0
        print(f"| | {strategy} | {tier} | {tok:,} | {ok:,}/{n:,} | {surv:.1f}% | {nm} | {un} |{f' {label} |' if label else ''}")


if __name__ == "__main__":
    main()
