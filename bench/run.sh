#!/usr/bin/env bash
# tierscope benchmarks (issue 9; method and results in BENCHMARKS.md). Not part of the test suite.
#
#   bench/run.sh                    # everything: the largest recording + 1k, 10k, 100k requests
#   SIZES="1000 10000" bench/run.sh # fewer synthetic sizes
#   SKIP_OPENCODE=1 bench/run.sh    # without the real client (it needs /opt/oc or $OPENCODE)
#   TS=/path/to/tierscope OUT=/tmp/b bench/run.sh   # measure another build (no cargo build)
#   LOAD_SIZES="100000" REPLAY_SIZES="" SKIP_CRITERION=1 bench/run.sh   # only some parts
#   LIST_SIZES="8 1024 2048" TS_BASE=/path/to/old/tierscope bench/run.sh   # listing sizes, old build beside
#   STREAM_SIZES="10000 100000" TS_BASE=/path/to/old/tierscope bench/run.sh  # replay output streaming
#     and the probes sidecar (time, peak memory and output size per format, with and without the
#     sidecar; an old build beside is capped at STREAM_CAP_KIB of memory, default 12 GB)
#
# Needs: a release build (done here), hyperfine, sqlite3, python3 with tiktoken, GNU time
# (/usr/bin/time), and the real client `opencode` 1.18.33 (npm opencode-ai@1.18.33). Nothing is
# fetched from the network. Everything is written under $OUT (default bench/out, git-ignored);
# the summary table is $OUT/results.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/bench/out}
SIZES=${SIZES-"1000 10000 100000"}  # SIZES="": no synthetic inputs (only the recording)
OPENCODE=${OPENCODE:-/opt/oc/node_modules/.bin/opencode}
REC118=${REC118:-$ROOT/tests/recordings/opencode-1.18.33}
POLICIES=${POLICIES:-"full truncate opencode age retention decay oracle oracle-legal"}
LOAD_SIZES=${LOAD_SIZES:-"rec $SIZES"}     # inputs for the load / memory measurements
REPLAY_SIZES=${REPLAY_SIZES:-"rec $SIZES"} # inputs for the whole-command replay timings
STREAM_SIZES=${STREAM_SIZES-"10000 100000"} # inputs for the streaming / probes replay measures
STREAM_CAP_KIB=${STREAM_CAP_KIB:-12000000}  # memory cap of the old build there (it may need 20 GB+)
TS_GIVEN=${TS:-}
TS=${TS:-$ROOT/target/release/tierscope}

mkdir -p "$OUT"
cd "$ROOT"
log() { printf '\n== %s\n' "$*" >&2; }

if [ -z "$TS_GIVEN" ]; then
  log "release build"
  cargo build --release --quiet
fi
# Measure a private copy: a later `cargo build/bench --release` in this tree would replace the binary
# in the middle of the run.
cp "$TS" "$OUT/tierscope" && TS=$OUT/tierscope
# Every load below drafts its episodes: the output cache (README, "What tierscope reads") would
# answer a repeated `episodes --json` from its entry. Only `episodes-kept` runs with it.
export TIERSCOPE_NO_OUTPUT_CACHE=1
"$TS" --version >&2

# Runs per command: fewer for the big inputs (the real client needs minutes at 100k).
runs_for() {
  case $1 in
    rec | 1000) echo 10 ;;
    10000) echo 5 ;;
    *) echo 1 ;;
  esac
}

# --- inputs ----------------------------------------------------------------------------------
# Each input is a database holding exactly one session (plus a name, a session id and the size of
# the stored JSON = the `opencode export` file of that session).
INPUTS=()
log "inputs"
# The largest recording: the biggest export among the recordings that ship a database.
REC_DB="" REC_ID="" REC_JSON=""
for dir in "$ROOT/sample-traces" "$REC118/exports"; do
  for f in "$dir"/*.json; do
    case $f in *manifest.json | *.probes.json | *.annotations.json | *.tiers.json) continue ;; esac
    if [ -z "$REC_JSON" ] || [ "$(stat -c %s "$f")" -gt "$(stat -c %s "$REC_JSON")" ]; then
      REC_JSON=$f
    fi
  done
done
REC_ID=$(python3 -c 'import json,sys; r=open(sys.argv[1],"rb").read(); print(json.loads(r[r.index(b"{"):])["info"]["id"])' "$REC_JSON")
mkdir -p "$OUT/rec"
python3 bench/export_to_db.py "$REC118/data/opencode.db" "$REC_JSON" "$OUT/rec/rec.db" >&2
cp "$REC_JSON" "$OUT/rec/rec.json"
INPUTS+=("rec|$OUT/rec/rec.db|$REC_ID|$OUT/rec/rec.json")
for n in $SIZES; do
  d=$OUT/fx$n
  mkdir -p "$d"
  if [ ! -f "$d/fx.db" ]; then
    # One episode per five requests: the 10k input is the "10k requests x 2k episodes" of the target.
    "$TS" fixture --seed 1 --requests "$n" --episodes $((n / 5)) --name fx --out "$d" >&2
    python3 bench/export_to_db.py "$REC118/data/opencode.db" "$d/fx.json" "$d/fx.db" >&2
  fi
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["info"]["id"])' "$d/fx.json")
  INPUTS+=("$n|$d/fx.db|$id|$d/fx.json")
done

# The real client reads the database named by OPENCODE_DB; HOME and XDG dirs point at a scratch
# home so it touches nothing of this machine's own OpenCode state.
OCHOME=$OUT/ochome
mkdir -p "$OCHOME/data/opencode" "$OCHOME/config" "$OCHOME/cache" "$OCHOME/state"
oc_env="HOME=$OCHOME XDG_DATA_HOME=$OCHOME/data XDG_CONFIG_HOME=$OCHOME/config XDG_CACHE_HOME=$OCHOME/cache XDG_STATE_HOME=$OCHOME/state OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1"

# --- load: tierscope vs the real client vs raw sqlite3 ---------------------------------------
# Inputs with >= 2 runs are timed by hyperfine; the 100k input (1 run: minutes per command) by the
# same GNU time run that gives its peak memory, written in hyperfine's JSON shape.
for input in "${INPUTS[@]}"; do
  IFS='|' read -r name db id json <<<"$input"
  case " $LOAD_SIZES " in *" $name "*) ;; *) continue ;; esac
  runs=$(runs_for "$name")
  cold=$OUT/cache-cold-$name warm=$OUT/cache-warm-$name
  log "load $name ($id, $(stat -c %s "$json") bytes of export JSON, $runs runs)"
  # Fill the warm cache once (a cold run that saves every count).
  rm -rf "$warm" && mkdir -p "$warm"
  TIERSCOPE_CACHE_DIR=$warm "$TS" episodes "$db" --session "$id" --json > "$OUT/episodes-$name.json"
  q="SELECT data FROM message WHERE session_id='$id' ORDER BY time_created, id; SELECT data FROM part WHERE session_id='$id' ORDER BY message_id, id;"
  have_oc=""
  [ -z "${SKIP_OPENCODE:-}" ] && [ -x "$OPENCODE" ] && have_oc=1

  if [ "$runs" -ge 2 ]; then
    cmds=(
      -n sqlite3 "sqlite3 -readonly $db \"$q\" > /dev/null"
      -n inspect "$TS inspect $db --session $id --json > /dev/null"
      -n episodes-cold "TIERSCOPE_CACHE_DIR=$cold $TS episodes $db --session $id --json > /dev/null"
      -n episodes-warm "TIERSCOPE_CACHE_DIR=$warm $TS episodes $db --session $id --json > /dev/null"
      # The output cache's entry (filled by hyperfine's warm-up): issue #34 item 5's warm load,
      # against the floor (sqlite3 stepping the rows, then the output copied).
      -n episodes-kept "TIERSCOPE_NO_OUTPUT_CACHE= TIERSCOPE_CACHE_DIR=$warm $TS episodes $db --session $id --json > /dev/null"
      -n floor "sqlite3 -readonly $db \"$q\" > /dev/null && cat $OUT/episodes-$name.json > /dev/null"
    )
    # The build before (TS_BASE), warm cache of its own, in the same hyperfine run.
    if [ -n "${TS_BASE:-}" ]; then
      basewarm=$OUT/cache-basewarm-$name
      [ -d "$basewarm" ] || { mkdir -p "$basewarm"; TIERSCOPE_CACHE_DIR=$basewarm "$TS_BASE" episodes "$db" --session "$id" --json > /dev/null; }
      cmds+=(-n base-inspect "$TS_BASE inspect $db --session $id --json > /dev/null"
        -n base-episodes-warm "TIERSCOPE_CACHE_DIR=$basewarm $TS_BASE episodes $db --session $id --json > /dev/null")
    fi
    [ -n "$have_oc" ] && cmds+=(-n opencode-export "env $oc_env OPENCODE_DB=$db $OPENCODE export $id > $OUT/oc-$name.json 2> /dev/null")
    # Cold: the cache dir is removed before every run.
    hyperfine --style basic --warmup 1 --runs "$runs" --prepare "rm -rf $cold" \
      --export-json "$OUT/load-$name.json" "${cmds[@]}" >&2
  fi

  # Peak memory (GNU time: max RSS in KiB; elapsed seconds), one run each.
  results=""
  {
    printf '{"json_bytes": %s, "db_bytes": %s' "$(stat -c %s "$json")" "$(stat -c %s "$db")"
    for what in sqlite3 inspect episodes-cold episodes-warm opencode-export; do
      case $what in
        inspect) c=("$TS" inspect "$db" --session "$id" --json) ;;
        episodes-cold) rm -rf "$cold"; c=(env "TIERSCOPE_CACHE_DIR=$cold" "$TS" episodes "$db" --session "$id" --json) ;;
        episodes-warm) c=(env "TIERSCOPE_CACHE_DIR=$warm" "$TS" episodes "$db" --session "$id" --json) ;;
        sqlite3) c=(sqlite3 -readonly "$db" "$q") ;;
        opencode-export)
          [ -n "$have_oc" ] || continue
          # shellcheck disable=SC2206 # oc_env is NAME=VALUE words without spaces
          c=(env $oc_env "OPENCODE_DB=$db" "$OPENCODE" export "$id") ;;
      esac
      if [ "$what" = opencode-export ]; then
        /usr/bin/time -o "$OUT/time.txt" -f '%e %M %U %S' "${c[@]}" > "$OUT/oc-$name.json" 2> /dev/null || true
      else
        /usr/bin/time -o "$OUT/time.txt" -f '%e %M %U %S' "${c[@]}" > /dev/null 2>&1 || true
      fi
      read -r secs kib usr sys < <(tail -n 1 "$OUT/time.txt")
      printf ', "rss_kib_%s": %s, "secs_%s": %s' "$what" "${kib:-null}" "$what" "${secs:-null}"
      results+="${results:+,}{\"command\": \"$what\", \"mean\": ${secs:-0}, \"stddev\": null, \"user\": ${usr:-0}, \"system\": ${sys:-0}, \"times\": [${secs:-0}]}"
    done
    printf '}\n'
  } > "$OUT/mem-$name.json"
  if [ "$runs" -lt 2 ]; then
    printf '{"results": [%s]}\n' "$results" > "$OUT/load-$name.json"
  fi
  if [ -f "$OUT/oc-$name.json" ] && ! cmp -s "$OUT/oc-$name.json" "$json"; then
    echo "note: opencode export of $name differs from the stored export" >&2
  fi
done

# --- the session listing at a heavy user's scale (issue 17) -----------------------------------
# Databases of LIST_SIZES sessions (bench/many_sessions_db.py: one 50-request fixture each, ~0.2 MB
# of stored JSON per session). `tierscope sessions` is the picker's listing (the explorer's first
# frame waits for the same `list_sessions` call); TS_BASE=<another build> times that build's
# listing in the same run, beside this one. The real client runs in $OCHOME (no git repository):
# there `opencode session list` lists the `global` project, which holds every generated session.
LIST_SIZES=${LIST_SIZES-"8 1024"}
for n in $LIST_SIZES; do
  db=$OUT/many/sessions-$n.db
  if [ ! -f "$db" ]; then
    mkdir -p "$OUT/many"
    python3 bench/many_sessions_db.py "$TS" "$REC118/data/opencode.db" "$db" "$n" >&2
  fi
  log "listing $n sessions ($(stat -c %s "$db") bytes)"
  # The listing cache (engine/src/formats/opencode/listing_cache.rs): `-cold` starts from an empty cache dir
  # each run (the first listing of a database), the others from one filled beforehand (the
  # database did not change: no SQL over `message`).
  cold=$OUT/list-cache-cold warm=$OUT/list-cache-warm-$n
  rm -rf "$warm"
  TIERSCOPE_CACHE_DIR=$warm "$TS" sessions "$db" --json > /dev/null
  preps=() cmds=()
  add() { preps+=(--prepare "$1"); cmds+=(-n "$2" "$3"); }
  add "rm -rf $cold" sessions-json-cold "TIERSCOPE_CACHE_DIR=$cold $TS sessions $db --json > /dev/null"
  add true sessions-json "TIERSCOPE_CACHE_DIR=$warm $TS sessions $db --json > /dev/null"
  add true sessions-table "TIERSCOPE_CACHE_DIR=$warm $TS sessions $db > /dev/null"
  [ -n "${TS_BASE:-}" ] && add "rm -rf $cold" base-sessions-json "TIERSCOPE_CACHE_DIR=$cold $TS_BASE sessions $db --json > /dev/null"
  [ -z "${SKIP_OPENCODE:-}" ] && [ -x "$OPENCODE" ] &&
    add true opencode-session-list "cd $OCHOME && env $oc_env OPENCODE_DB=$db $OPENCODE session list > /dev/null 2>&1"
  hyperfine --style basic --warmup 1 --runs 10 --export-json "$OUT/list-$n.json" "${preps[@]}" "${cmds[@]}" >&2
  printf '{"db_bytes": %s, "sessions": %s}\n' "$(stat -c %s "$db")" "$n" > "$OUT/listdb-$n.json"
done

# --- tokenization, and the in-process benches (benches/load.rs) ------------------------------------
# Tokenization: tierscope vs tiktoken-rs vs Python tiktoken, the same distinct texts, o200k_base.
# Replay engine alone: every built-in policy on the 10k input (10k requests x 2k episodes).
tok_src=$OUT/rec/rec.json replay_src=$OUT/rec/rec.json
for n in $SIZES; do
  tok_src=$OUT/fx$n/fx.json
  replay_src=$OUT/fx$n/fx.db
  [ "$n" = 10000 ] && break
done
if [ -z "${SKIP_CRITERION:-}" ]; then
log "tokenization on the texts of $tok_src; criterion benches (replay on $replay_src)"
python3 bench/tok_py.py "$tok_src" "$OUT/texts.json" > "$OUT/tok-py.json"
CRIT=${CARGO_TARGET_DIR:-$ROOT/target}/criterion
rm -rf "$CRIT/load" "$CRIT/tokenize" "$CRIT/replay_loaded"
TIERSCOPE_CACHE_DIR=$OUT/cache-warm-criterion TIERSCOPE_BENCH_EXPORT=$OUT/rec/rec.json \
  TIERSCOPE_BENCH_TEXTS=$OUT/texts.json TIERSCOPE_BENCH_REPLAY=$replay_src \
  cargo bench --quiet --bench load -- --noplot 2>&1 | tee "$OUT/criterion-load.txt" >&2
fi

# The replay engine's own bench (benches/replay.rs): synthetic 2.5k/5k/10k requests x 2k episodes
# under a tight budget, retention and decay.
if [ -f benches/replay.rs ] && [ -z "${SKIP_CRITERION:-}" ]; then
  rm -rf "${CARGO_TARGET_DIR:-$ROOT/target}/criterion/replay"
  cargo bench --quiet --bench replay -- --noplot 2>&1 | tee "$OUT/criterion-replay.txt" >&2
fi

# --- replay per built-in policy at each size, whole command -------------------------------------
if "$TS" replay --help > /dev/null 2>&1; then
  for input in "${INPUTS[@]}"; do
    IFS='|' read -r name db id json <<<"$input"
    case " $REPLAY_SIZES " in *" $name "*) ;; *) continue ;; esac
    runs=$(runs_for "$name")
    warm=$OUT/cache-warm-$name
    cmds=()
    for p in $POLICIES; do
      cmds+=(-n "$p" "TIERSCOPE_CACHE_DIR=$warm $TS replay $db --session $id --policy $p --format json > /dev/null")
    done
    log "replay $name"
    hyperfine --style basic --runs "$runs" --export-json "$OUT/replay-$name.json" "${cmds[@]}" >&2
  done
else
  echo "tierscope has no replay command in this build: replay not measured" >&2
fi

# --- replay output streaming and the probes sidecar (issue 34) ---------------------------------
# One GNU time run per (size, sidecar, format): wall seconds, peak RSS and output bytes of
# `replay EXPORT --format F` with the export beside its probes sidecar ("probes") and alone
# ("none"); the same for TS_BASE when given, under a memory cap (a run over it is reported as
# such). Written to $OUT/stream.tsv and $OUT/stream.md.
stream_one() { # bin tag n sidecar format
  local bin=$1 tag=$2 n=$3 sc=$4 fmt=$5 dir=$OUT/fx$3 tf rc secs kib bytes
  [ "$sc" = none ] && dir=$OUT/fx$3-nosidecar
  tf=$(mktemp)
  if [ "$tag" = base ]; then
    (ulimit -v "$STREAM_CAP_KIB"; /usr/bin/time -v "$bin" replay "$dir/fx.json" --format "$fmt" 2>"$tf" | wc -c >"$tf.bytes")
  else
    /usr/bin/time -v "$bin" replay "$dir/fx.json" --format "$fmt" 2>"$tf" | wc -c >"$tf.bytes"
  fi
  rc=$(sed -n 's/.*Exit status: //p' "$tf")
  if grep -q 'Command terminated by signal' "$tf"; then rc=$(sed -n 's/.*Command terminated by \(signal [0-9]*\).*/\1/p' "$tf" | tr ' ' '-'); fi
  secs=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tf" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
  kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tf")
  bytes=$(cat "$tf.bytes")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tag" "$n" "$sc" "$fmt" "${secs:-}" "${kib:-}" "$bytes" "${rc:-killed}" >>"$OUT/stream.tsv"
  rm -f "$tf" "$tf.bytes"
}
if [ -n "$STREAM_SIZES" ]; then
  printf 'build\trequests\tsidecar\tformat\tsecs\trss_kib\tbytes\texit\n' >"$OUT/stream.tsv"
  for n in $STREAM_SIZES; do
    [ -f "$OUT/fx$n/fx.json" ] || "$TS" fixture --seed 1 --requests "$n" --episodes $((n / 5)) --name fx --out "$OUT/fx$n" >&2
    mkdir -p "$OUT/fx$n-nosidecar"
    cp "$OUT/fx$n/fx.json" "$OUT/fx$n-nosidecar/fx.json"
    # Warm the token cache once per input, so every run below loads alike.
    "$TS" inspect "$OUT/fx$n/fx.json" > /dev/null
    for fmt in json jsonl table; do
      for sc in none probes; do
        log "replay streaming: $n requests, sidecar $sc, --format $fmt"
        stream_one "$TS" new "$n" "$sc" "$fmt"
        if [ -n "${TS_BASE:-}" ]; then stream_one "$TS_BASE" base "$n" "$sc" "$fmt"; fi
      done
    done
  done
  python3 - "$OUT/stream.tsv" >"$OUT/stream.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
key = {(r["build"], r["requests"], r["sidecar"], r["format"]): r for r in rows}
print("| build | requests | format | secs none / probes | RSS MB none / probes | output MB none / probes | time × | size × |")
print("|---|---|---|---|---|---|---|---|")
for (b, n, sc, f), r in key.items():
    if sc != "none":
        continue
    p = key.get((b, n, "probes", f))
    if not p:
        continue
    ok = lambda x: x["exit"] == "0"
    secs = lambda x: x["secs"] if ok(x) else f'{x["secs"]} (exit {x["exit"]})'
    mb = lambda x, k: f'{int(x[k]) / (1024 if k == "rss_kib" else 1e6):.1f}' if x[k] else "?"
    ratio = lambda a, c, k: f'{float(c[k]) / float(a[k]):.2f}' if ok(a) and ok(c) and float(a[k]) > 0 else "–"
    print(f'| {b} | {n} | {f} | {secs(r)} / {secs(p)} | {mb(r, "rss_kib")} / {mb(p, "rss_kib")} | '
          f'{mb(r, "bytes")} / {mb(p, "bytes")} | {ratio(r, p, "secs")} | {ratio(r, p, "bytes")} |')
PY
  cat "$OUT/stream.md" >&2
fi

# --- knob change -> frame in the explorer (the TUI's own bench, benches/tui_knob.rs) -------------
if [ -f benches/tui_knob.rs ] && [ -z "${SKIP_CRITERION:-}" ]; then
  log "knob change -> frame (benches/tui_knob.rs)"
  cargo bench --quiet --bench tui_knob -- --noplot 2>&1 | tee "$OUT/criterion-tui.txt" >&2
fi

python3 bench/summarise.py "$OUT" | tee "$OUT/results.md"
