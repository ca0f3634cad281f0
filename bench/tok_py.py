#!/usr/bin/env python3
"""Tokenization throughput of Python tiktoken (o200k_base, encode_ordinary) on the texts of an
export, and the text set for the Rust side (`benches/load.rs`, group `tokenize`).

usage: tok_py.py EXPORT_JSON TEXTS_OUT_JSON [O200K_BPE_FILE]

Texts: every distinct part text (text / reasoning parts) and tool output or error, as tierscope
tokenizes them (once per distinct text). Prints one JSON line with the timings (best of 5, wall
and CPU seconds of this process).
The BPE file is the one inside the tiktoken-rs crate (the same ranks tierscope uses), loaded
offline; its sha256 is checked by tiktoken.
"""
import glob
import json
import os
import sys
import time

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from tiktoken_ext import openai_public

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def texts_of(export):
    raw = open(export, "rb").read()
    doc = json.loads(raw[raw.index(b"{"):])
    seen, out = set(), []
    for m in doc["messages"]:
        for p in m.get("parts", []):
            cands = []
            if p.get("type") in ("text", "reasoning"):
                cands.append(p.get("text"))
            state = p.get("state")
            if p.get("type") == "tool" and isinstance(state, dict):
                cands.append(state.get("output"))
                cands.append(state.get("error"))
            for t in cands:
                if isinstance(t, str) and t and t not in seen:
                    seen.add(t)
                    out.append(t)
    return out


def encoding(bpe_file):
    ranks = load_tiktoken_bpe(bpe_file, expected_hash=O200K_SHA256)
    # o200k_base() would download the ranks; hand it the local file's instead (same sha256).
    openai_public.load_tiktoken_bpe = lambda *_a, **_k: ranks
    return tiktoken.Encoding(**openai_public.o200k_base())


def best(f, n=5):
    """Best of n: (wall seconds, CPU seconds of this process, result)."""
    times, cpus = [], []
    result = None
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        result = f()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(times), min(cpus), result


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    export, out = sys.argv[1], sys.argv[2]
    bpe = sys.argv[3] if len(sys.argv) > 3 else (
        sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken")))
        or [None])[-1]
    if not bpe:
        sys.exit("o200k_base.tiktoken not found; pass its path")
    texts = texts_of(export)
    with open(out, "w") as f:
        json.dump(texts, f)
    enc = encoding(bpe)
    nbytes = sum(len(t.encode()) for t in texts)
    single, single_cpu, tokens = best(lambda: sum(len(enc.encode_ordinary(t)) for t in texts))
    batch, batch_cpu, tokens_b = best(lambda: sum(len(x) for x in enc.encode_ordinary_batch(texts, num_threads=os.cpu_count() or 1)))
    assert tokens == tokens_b
    print(json.dumps({
        "texts": len(texts), "bytes": nbytes, "tokens": tokens,
        "py_single_s": single, "py_batch_s": batch,
        "py_single_cpu_s": single_cpu, "py_batch_cpu_s": batch_cpu,
        "py_single_mb_s": nbytes / single / 1e6, "py_batch_mb_s": nbytes / batch / 1e6,
    }))


if __name__ == "__main__":
    main()
