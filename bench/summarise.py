#!/usr/bin/env python3
"""Turn the measurements bench/run.sh wrote into the Markdown tables of BENCHMARKS.md.

usage: summarise.py OUT_DIR    (reads OUT_DIR/{load,mem,replay}-*.json, tok-py.json and
                                target/criterion/*/*/new/estimates.json)
"""
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where cargo put criterion's results (`CARGO_TARGET_DIR`, else target/ of the tree).
TARGET = os.environ.get("CARGO_TARGET_DIR") or f"{ROOT}/target"


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def order(name):
    return (0, 0) if name == "rec" else (1, int(name))


def names(out, prefix):
    found = [os.path.basename(p)[len(prefix) + 1:-5] for p in glob.glob(f"{out}/{prefix}-*.json")]
    return sorted(found, key=order)



def fmt_t(r):
    """mean ± stddev (no ± for a single run), in ms below 1 s."""
    if r is None:
        return "—"
    m, sd = r["mean"], r.get("stddev")
    if m >= 1:
        return f"{m:.2f} s" + (f" ± {sd:.2f}" if sd else "")
    return f"{m * 1000:.1f} ms" + (f" ± {sd * 1000:.1f}" if sd else "")


def cpu(r):
    return (r.get("user") or 0.0) + (r.get("system") or 0.0)


def ratio(a, b):
    if a is None or b is None or b["mean"] == 0:
        return "—"
    return f"{a['mean'] / b['mean']:.2f}×"


def requests_of(out, name):
    if name != "rec":
        return int(name)
    doc = load_json(f"{out}/rec/rec.json")
    if doc is None:
        return None
    return sum(1 for m in doc["messages"] if m["info"].get("role") == "assistant")


def criterion(group, bench):
    e = load_json(f"{TARGET}/criterion/{group}/{bench}/new/estimates.json")
    return None if e is None else e["mean"]["point_estimate"] / 1e9


def tokenization_tables(p, tok):
    """Python tiktoken (bench/tok_py.py) beside tiktoken-rs and tierscope (benches/load.rs group
    `tokenize`) on the same texts, and the issue-17 targets."""
    mb_ = tok["bytes"] / 1e6
    c = lambda name: criterion("tokenize", name)
    p("\n### Tokenization throughput, o200k_base, the same distinct texts\n")
    p(f"{tok['texts']} distinct texts, {mb_:.2f} MB, {tok['tokens']} tokens. Wall: Python best of 5, "
      "criterion mean. CPU: seconds of the whole process, all threads (Python best of 5; criterion "
      "`*_cpu` mean).\n")
    p("| tokenizer | wall | MB/s | wall vs Python 1 thread | CPU | CPU vs Python 1 thread |")
    p("|---|---:|---:|---:|---:|---:|")
    py, py_cpu = tok["py_single_s"], tok.get("py_single_cpu_s")
    rows = [("Python tiktoken `encode_ordinary`, 1 thread", py, py_cpu),
            ("Python tiktoken `encode_ordinary_batch`, 2 threads", tok["py_batch_s"], tok.get("py_batch_cpu_s")),
            ("tiktoken-rs `encode_ordinary`, 1 thread", c("tiktoken_rs_single"), None)]
    for n in (1, 2):
        rows.append((f"tierscope `tokens::count_exact` per text, {n} thread{'s' if n > 1 else ''}",
                     c(f"tierscope_exact_{n}_threads"), c(f"tierscope_exact_{n}_threads_cpu")))
        rows.append((f"tierscope `Tokenizer::count_many`, cold cache, {n} thread{'s' if n > 1 else ''}",
                     c(f"tierscope_count_many_cold_{n}_threads"), c(f"tierscope_count_many_cold_{n}_threads_cpu")))
    for label, t, cpu in rows:
        if t:
            cpu_s = f"{cpu * 1000:.1f} ms" if cpu else "—"
            cpu_r = f"{py_cpu / cpu:.2f}×" if cpu and py_cpu else "—"
            p(f"| {label} | {t * 1000:.1f} ms | {mb_ / t:.1f} | {py / t:.2f}× | {cpu_s} | {cpu_r} |")
    one, two = c("tierscope_exact_1_threads"), c("tierscope_exact_2_threads")
    one_cpu, two_cpu = c("tierscope_exact_1_threads_cpu"), c("tierscope_exact_2_threads_cpu")
    m1, m2 = c("tierscope_count_many_cold_1_threads"), c("tierscope_count_many_cold_2_threads")
    if one and two:
        verdict = lambda ok: "met" if ok else "missed"
        p("\n| target | measured | |")
        p("|---|---|---|")
        p(f"| tierscope 1 thread ≥ 1.5× Python tiktoken 1 thread | wall {py / one:.2f}×"
          + (f", CPU {py_cpu / one_cpu:.2f}×" if py_cpu and one_cpu else "")
          + f" | {verdict(py / one >= 1.5)} |")
        eff = f"; CPU 1 thread ÷ CPU 2 threads {one_cpu / two_cpu:.2f} (the most 2 idle cores could give: {2 * one_cpu / two_cpu:.2f}×)" \
            if one_cpu and two_cpu else ""
        many = f", `count_many` {m1 / m2:.2f}×" if m1 and m2 else ""
        p(f"| 2 threads ≥ 1.8× faster than 1 | wall `count_exact` {one / two:.2f}×{many}{eff} | "
          f"{verdict(one / two >= 1.8)} (wall) |")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else f"{ROOT}/bench/out"
    lines = []
    p = lines.append

    loads = {n: {r["command"]: r for r in load_json(f"{out}/load-{n}.json")["results"]} for n in names(out, "load")
             if n == "rec" or n.isdigit()}
    mems = {n: load_json(f"{out}/mem-{n}.json") or {} for n in names(out, "mem")}

    lists = {n: {r["command"]: r for r in load_json(f"{out}/list-{n}.json")["results"]} for n in names(out, "list")}
    if lists:
        p("### Session listing (the picker): many sessions\n")
        p("`tierscope sessions DB --json` (and the table form) against `opencode session list` on databases of N "
          "sessions (`bench/many_sessions_db.py`, 50 requests each). *cold*: an empty listing cache (the first "
          "listing of a database); *warm*: the cache filled, the database unchanged. `base` = the build before "
          "issue 17 (TS_BASE; no listing cache), same run. Wall mean ± σ [CPU].\n")
        p("| sessions | opencode.db | `opencode session list` | `sessions --json` cold | `sessions --json` warm | "
          "`sessions` (table) warm | base `sessions --json` | opencode ÷ cold | opencode ÷ warm | base ÷ cold |")
        p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n, r in lists.items():
            db = (load_json(f"{out}/listdb-{n}.json") or {}).get("db_bytes")
            def t(c):
                x = r.get(c)
                return "—" if x is None else f"{fmt_t(x)} [{cpu(x) * 1000:.0f} ms]"
            def rr(a, b):
                x, y = r.get(a), r.get(b)
                if x is None or y is None:
                    return "—"
                return f"{ratio(x, y)} ({cpu(x) / cpu(y):.1f}×)"
            p(f"| {n} | {db / 1e6 if db else 0:.1f} MB | {t('opencode-session-list')} | {t('sessions-json-cold')} | "
              f"{t('sessions-json')} | {t('sessions-table')} | {t('base-sessions-json')} | "
              f"{rr('opencode-session-list', 'sessions-json-cold')} | {rr('opencode-session-list', 'sessions-json')} | "
              f"{rr('base-sessions-json', 'sessions-json-cold')} |")
        ns = list(lists)
        if len(ns) >= 2:
            for cmd, what in [("sessions-json-cold", "cold"), ("sessions-json", "warm")]:
                small, big = lists[ns[0]].get(cmd), lists[ns[-1]].get(cmd)
                if small and big:
                    p(f"\n{ns[-1]} sessions ÷ {ns[0]} sessions (`sessions --json`, {what}): "
                      f"{big['mean'] / small['mean']:.2f}× wall, {cpu(big) / cpu(small):.2f}× CPU.")
            p("")

    p("### Load: tierscope vs the real client vs raw sqlite3\n")
    p("Wall time, mean ± σ of the runs (same database, same session, page cache warm); in brackets the CPU time "
      "(user + system). `inspect` = load + derive, no tokens; `episodes` = load + episodes + tier tokens "
      "(cold: empty token cache; warm: cache filled). Ratios: wall (CPU).\n")
    p("| input | requests | export JSON | `opencode export` | `sqlite3` rows | `tierscope inspect` | `episodes` cold | `episodes` warm | export ÷ episodes cold | export ÷ episodes warm | inspect ÷ sqlite3 |")
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in loads.items():
        size = mems.get(n, {}).get("json_bytes")
        def t(c):
            x = r.get(c)
            return "—" if x is None else f"{fmt_t(x)} [{cpu(x) * 1000:.0f} ms]"
        def rr(a, b):
            x, y = r.get(a), r.get(b)
            if x is None or y is None:
                return "—"
            return f"{ratio(x, y)} ({cpu(x) / cpu(y):.1f}×)"
        p(f"| {n} | {requests_of(out, n)} | {size / 1e6:.2f} MB | {t('opencode-export')} | {t('sqlite3')} | "
          f"{t('inspect')} | {t('episodes-cold')} | {t('episodes-warm')} | "
          f"{rr('opencode-export', 'episodes-cold')} | {rr('opencode-export', 'episodes-warm')} | "
          f"{rr('inspect', 'sqlite3')} |")

    if any("base-inspect" in r for r in loads.values()):
        p("\nThe build before issue 17 (`TS_BASE`), same hyperfine runs:\n")
        p("| input | base `inspect` | `inspect` | base ÷ now | base `episodes` warm | `episodes` warm | base ÷ now |")
        p("|---|---:|---:|---:|---:|---:|---:|")
        for n, r in loads.items():
            if "base-inspect" not in r:
                continue
            def t(c):
                x = r.get(c)
                return "—" if x is None else f"{fmt_t(x)} [{cpu(x) * 1000:.0f} ms]"
            def rr(a, b):
                x, y = r.get(a), r.get(b)
                return "—" if x is None or y is None else f"{ratio(x, y)} ({cpu(x) / cpu(y):.1f}×)"
            p(f"| {n} | {t('base-inspect')} | {t('inspect')} | {rr('base-inspect', 'inspect')} | "
              f"{t('base-episodes-warm')} | {t('episodes-warm')} | {rr('base-episodes-warm', 'episodes-warm')} |")

    p("\n### Growth (synthetic sizes): time per request, and the factor from one size to the next (10× more requests)\n")
    sizes = [n for n in loads if n != "rec"]
    cmds = ["sqlite3", "inspect", "episodes-cold", "episodes-warm", "opencode-export"]
    p("| command | " + " | ".join(f"{n} req: µs/req" for n in sizes) + " | " +
      " | ".join(f"{a}→{b}" for a, b in zip(sizes, sizes[1:])) + " |")
    p("|---|" + "---:|" * (len(sizes) + max(0, len(sizes) - 1)))
    for c in cmds:
        per = [loads[n][c]["mean"] / int(n) * 1e6 if c in loads[n] else None for n in sizes]
        grow = []
        for a, b in zip(sizes, sizes[1:]):
            ra, rb = loads[a].get(c), loads[b].get(c)
            grow.append(f"{rb['mean'] / ra['mean']:.1f}×" if ra and rb else "—")
        p(f"| {c} | " + " | ".join(f"{x:.0f}" if x is not None else "—" for x in per) + " | " + " | ".join(grow) + " |")

    p("\n### Peak memory (max RSS, GNU time) against the stored JSON\n")
    # GNU time reports KiB; every size here is in MB (10^6 bytes), as the JSON's.
    p("| input | export JSON | opencode.db | `episodes` cold | ÷ JSON | `episodes` warm | ÷ JSON | `inspect` | ÷ JSON | `sqlite3` | `opencode export` |")
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, m in mems.items():
        def mb(k):
            v = m.get(k)
            return f"{v * 1024 / 1e6:.0f} MB" if v else "—"
        def rel(k):
            v = m.get(k)
            return f"{v * 1024 / m['json_bytes']:.2f}×" if v else "—"
        p(f"| {n} | {m['json_bytes'] / 1e6:.1f} MB | {m['db_bytes'] / 1e6:.1f} MB | {mb('rss_kib_episodes-cold')} | {rel('rss_kib_episodes-cold')} | "
          f"{mb('rss_kib_episodes-warm')} | {rel('rss_kib_episodes-warm')} | {mb('rss_kib_inspect')} | {rel('rss_kib_inspect')} | "
          f"{mb('rss_kib_sqlite3')} | {mb('rss_kib_opencode-export')} |")

    tok = load_json(f"{out}/tok-py.json")
    if tok:
        tokenization_tables(p, tok)

    parse = criterion("load", "parse_export")
    episodes = criterion("load", "episodes_warm")
    if parse or episodes:
        p("\n### In-process (criterion, largest recording's export)\n")
        p("| step | mean |")
        p("|---|---:|")
        if parse:
            p(f"| `parse_export` (parse + derive) | {parse * 1000:.2f} ms |")
        if episodes:
            p(f"| `loaded::from_trace_with`, token counts cached (episodes + tiers) | {episodes * 1000:.2f} ms |")

    rp = {}
    for d in sorted(glob.glob(f"{TARGET}/criterion/replay_loaded/*/new/estimates.json")):
        name = d.split("/")[-3]
        rp[name] = criterion("replay_loaded", name)
    if rp:
        p("\n### Replay engine alone (criterion mean, session already loaded; `benches/load.rs` group `replay_loaded`, the 10k fixture session)\n")
        p("| policy | mean | target < 100 ms |")
        p("|---|---:|---|")
        for name, t in rp.items():
            p(f"| {name} | {t * 1000:.1f} ms | {'met' if t < 0.1 else 'missed'} |")

    syn = {}
    for d in sorted(glob.glob(f"{TARGET}/criterion/replay/*/*/new/estimates.json")):
        pol, n = d.split("/")[-4], d.split("/")[-3]
        syn.setdefault(pol, {})[int(n)] = load_json(d)["mean"]["point_estimate"] / 1e9
    if syn:
        sizes_ = sorted({n for v in syn.values() for n in v})
        p("\n### Replay engine alone, synthetic trace × 2,000 episodes, tight budget (`benches/replay.rs`)\n")
        p("| policy | " + " | ".join(f"{n} requests" for n in sizes_) + " |")
        p("|---|" + "---:|" * len(sizes_))
        for pol, v in syn.items():
            p(f"| {pol} | " + " | ".join(f"{v[n] * 1000:.1f} ms" if n in v else "—" for n in sizes_) + " |")

    tui = {b: criterion("tui_knob_2000_requests", b) for b in
           ("knob_step_to_replayed_frame", "knob_step_to_context_frame", "draw_only")}
    if any(tui.values()):
        p("\n### Knob change → frame in the explorer (criterion mean, `benches/tui_knob.rs`, 2,000 requests)\n")
        p("| step | mean |")
        p("|---|---:|")
        for b, t in tui.items():
            if t:
                p(f"| {b} | {t * 1000:.2f} ms |")

    reps = {n: {r["command"]: r for r in load_json(f"{out}/replay-{n}.json")["results"]} for n in names(out, "replay")}
    if reps:
        pols = list(next(iter(reps.values())).keys())
        p("\n### `tierscope replay --policy P --format json` (whole command: load with warm token cache + replay)\n")
        p("| policy | " + " | ".join(reps) + " |")
        p("|---|" + "---:|" * len(reps))
        for pol in pols:
            p(f"| {pol} | " + " | ".join(fmt_t(reps[n].get(pol)) for n in reps) + " |")
        p("\n`episodes` warm of the same input (the load part of each replay command): " +
          ", ".join(f"{n}: {fmt_t(loads.get(n, {}).get('episodes-warm'))}" for n in reps))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
