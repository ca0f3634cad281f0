#!/usr/bin/env bash
# Writes the outputs of every command on every recording into OUTDIR, one file per
# (command, input), so two builds can be compared byte for byte:
#   bench/snapshot-outputs.sh BIN_BEFORE /tmp/before
#   bench/snapshot-outputs.sh BIN_AFTER  /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
# Inputs: the bundled sample traces and the recordings of three OpenCode eras (tests/recordings).
set -uo pipefail
bin=$(realpath "${1:?usage: snapshot-outputs.sh BIN OUTDIR}")
out=${2:?usage: snapshot-outputs.sh BIN OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
recs=$here/tests/recordings
mkdir -p "$out"
export TIERSCOPE_CACHE_DIR=${TIERSCOPE_CACHE_DIR:-$(mktemp -d)}
export NO_COLOR=1

inputs=()
for f in "$here"/sample-traces/{M1,B1,C1}.json "$here"/sample-traces/opencode.db; do inputs+=("$f"); done
for f in "$recs"/opencode-1.18.33/exports/*.json "$recs"/opencode-1.18.33/data \
         "$recs"/opencode-1.1.65/data "$recs"/opencode-0.5.29/data; do
  [ -e "$f" ] || { echo "missing input: $f" >&2; exit 1; }
  inputs+=("$f")
done

run() { # name, args...
  local name=$1; shift
  "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo "rc=$?" >>"$out/$name.err"
}

run policies policies --json
run policies-table policies
for i in "${inputs[@]}"; do
  key=$(echo "${i#"$here"/}" | sed 's#^tests/recordings/##; s#[/.]#_#g')
  run "sessions.$key" sessions "$i" --json
  # every session of the input, for the per-session commands
  mapfile -t ids < <("$bin" sessions "$i" --json 2>/dev/null | python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' 2>/dev/null)
  for id in "${ids[@]}"; do
    k="$key.$id"
    run "inspect.$k" inspect "$i" --session "$id" --json
    run "episodes.$k" episodes "$i" --session "$id" --json
    for p in full truncate opencode age retention decay oracle oracle-legal; do
      run "replay.$p.$k" replay "$i" --session "$id" --policy "$p" --format json
      run "replay-tight.$p.$k" replay "$i" --session "$id" --policy "$p" --budget 9000 --format json
    done
    run "render.$k" render "$i" --session "$id" --policy retention --budget 9000 --at 5 --json
    run "diff.$k" diff "$i" --session "$id" --policy retention --policy age --budget 9000 --format json
    run "experiment.$k" experiment "$i" --session "$id" --budget 9000 --format json
    run "audit.$k" audit "$i" --session "$id" --format json
    run "sweep.$k" sweep "$i" --session "$id" --vary demote_at=0.8:0.95:0.05 --budget 9000 --format json
    # The text forms, for the reporters: every table, CSV and JSON Lines output.
    run "inspect-table.$k" inspect "$i" --session "$id"
    run "episodes-table.$k" episodes "$i" --session "$id"
    run "episodes-explain.$k" episodes "$i" --session "$id" --explain E0
    for f in table csv jsonl; do
      run "replay-$f.$k" replay "$i" --session "$id" --budget 9000 --format "$f"
      run "experiment-$f.$k" experiment "$i" --session "$id" --budget 9000 --format "$f"
      run "audit-$f.$k" audit "$i" --session "$id" --format "$f" --details
      run "sweep-$f.$k" sweep "$i" --session "$id" --vary demote_at=0.8:0.95:0.05 --budget 9000 --format "$f"
    done
    run "render-text.$k" render "$i" --session "$id" --policy retention --budget 9000 --at 5 --diff-prev
    run "diff-table.$k" diff "$i" --session "$id" --policy retention --policy age --budget 9000
    run "diff-at.$k" diff "$i" --session "$id" --policy retention --policy age --budget 9000 --at 3
    run "diff-context.$k" diff "$i" --session "$id" --policy retention --policy age --budget 9000 --at 5 --context
  done
  run "sessions-table.$key" sessions "$i"
  run "survey.$key" survey "$i" --format json
  for f in table csv jsonl; do run "survey-$f.$key" survey "$i" --format "$f"; done
done
(cd "$out" && "$bin" fixture --seed 7 --requests 300 --out fixture >fixture.out 2>&1)
ls "$out" | wc -l
