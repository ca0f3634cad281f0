#!/usr/bin/env bash
# Magic Context's fold against tierscope's (docs/decay.md, "Fold conformance harness").
#
#   scripts/conformance/magic-context-fold.sh MC_CHECKOUT [chars|claude] [GOLDEN_OUT]
#
# MC_CHECKOUT (or $MAGIC_CONTEXT_SRC): a checkout of Magic Context (github.com/cortexkit/magic-context
# or a fork carrying it) whose packages/plugin/src has decay-render.ts. Needs bun (Magic Context's
# storage code imports bun:sqlite). `claude` counts tokens with ai-tokenizer@1.0.6 on both sides:
# set $AI_TOKENIZER_DIR to a directory whose node_modules has it, and $TIERSCOPE_CLAUDE_VOCAB to
# the vocabulary scripts/claude-vocab.mjs writes from it. `chars` (the default) makes both sides
# use Magic Context's fallback estimator. The compartment sets are those of the committed golden
# (tests/data/magic-context/fold-golden-*.json); GOLDEN_OUT writes Magic Context's results, with
# the checkout's commit (git rev-parse, or $MAGIC_CONTEXT_COMMIT for an exported tree).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mc=${1:-${MAGIC_CONTEXT_SRC:-}}
tok=${2:-chars}
golden=${3:-}
if [ -z "$mc" ] || [ ! -f "$mc/packages/plugin/src/hooks/magic-context/decay-render.ts" ]; then
  echo "usage: $0 MAGIC_CONTEXT_CHECKOUT [chars|claude] [GOLDEN_OUT]" >&2
  exit 2
fi
mc=$(cd "$mc" && pwd)
bun=${BUN:-bun}
command -v "$bun" >/dev/null || { echo "bun not found (set \$BUN)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --quiet --example magic_context_fold --manifest-path "$repo/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$repo/target}/debug/examples/magic_context_fold"

extra=()
if [ "$tok" = claude ]; then
  [ -n "${AI_TOKENIZER_DIR:-}" ] || { echo "claude needs \$AI_TOKENIZER_DIR" >&2; exit 2; }
  [ -n "${TIERSCOPE_CLAUDE_VOCAB:-}" ] || { echo "claude needs \$TIERSCOPE_CLAUDE_VOCAB" >&2; exit 2; }
  extra=(--ai-tokenizer "$AI_TOKENIZER_DIR")
else
  # A vocabulary path that does not exist: tierscope falls back as Magic Context does.
  export TIERSCOPE_CLAUDE_VOCAB="$work/no-vocabulary"
fi

cases="$repo/tests/data/magic-context/fold-golden-chars.json"
[ -f "$cases" ] || { "$bun" --no-install "$repo/scripts/conformance/magic-context-fold.ts" gen "$work/cases.json"; cases="$work/cases.json"; }
# --no-install: bun would otherwise fetch ai-tokenizer on its own, and Magic Context would count
# with it whatever was asked.
"$bun" --no-install "$repo/scripts/conformance/magic-context-fold.ts" run --mc "$mc" --cases "$cases" \
  --work "$work" --tierscope "$bin" --tokenizer "$tok" ${golden:+--golden "$golden"} \
  --mc-commit "${MAGIC_CONTEXT_COMMIT:-$(git -C "$mc" rev-parse HEAD 2>/dev/null || echo unknown)}" "${extra[@]}"
