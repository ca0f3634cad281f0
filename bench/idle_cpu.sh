#!/usr/bin/env bash
# Measures the explorer's CPU use while idle, and while playing for contrast.
#
#   cargo build --release && bench/idle_cpu.sh [RECORDING] 
#
# Starts the release binary in a detached tmux session (its own socket) on a recording, waits
# for the first frames, then reads utime+stime of the whole process (every thread) from
# /proc/<pid>/stat before and after SECS seconds (default 10). Prints the CPU share of one core.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/tierscope}
rec=${1:-sample-traces/M1.json}
secs=${SECS:-10}
sock="tierscope-idle-$$"
tmux -L "$sock" new-session -d -s t -x 120 -y 40 "$bin $rec"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true' EXIT
sleep 3
pid=$(tmux -L "$sock" display -p -t t '#{pane_pid}')
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
measure() {
  local a b
  a=$(ticks); sleep "$secs"; b=$(ticks)
  awk -v d=$((b - a)) -v hz="$hz" -v s="$secs" -v what="$1" \
    'BEGIN { printf "%s: %d ticks in %ds = %.2f%% of one core\n", what, d, s, d / hz / s * 100 }'
}
measure "idle"
tmux -L "$sock" send-keys -t t Space
measure "playing (500 ms per request)"
