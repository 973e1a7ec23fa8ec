#!/usr/bin/env bash
# bench-long-replay.sh — peak RSS and wall time of `copyscope export`, `replay --plain`,
# `replay --json` and the interactive `replay` (TUI in a 120x40 tmux pane, `--speed inf`: plays
# to the end, then Home re-reads the file from the top and plays to the end again, then q) of a
# generated 24 h recording (issues 10/14: <= 64 MiB and <= 5 s each), measured with
# /usr/bin/time -v; prints one line per command and run.
#
# Usage: scripts/bench-long-replay.sh [--hours 24] [--runs 3] [--dir /var/tmp/copyscope-long]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
HOURS=24 RUNS=3 DIR=/var/tmp/copyscope-long
while [ $# -gt 0 ]; do
  case $1 in
    --hours) HOURS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "bench-long-replay: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x /usr/bin/time ] || { echo "bench-long-replay: needs /usr/bin/time (apt install time)" >&2; exit 2; }
command -v tmux >/dev/null || { echo "bench-long-replay: needs tmux (apt install tmux)" >&2; exit 2; }
cd "$HERE"
cargo build --release --quiet --bin copyscope --example gen_long_recording
TARGET=${CARGO_TARGET_DIR:-$HERE/target}
BIN=$TARGET/release/copyscope
mkdir -p "$DIR"
REC=$DIR/long-${HOURS}h.jsonl
[ -s "$REC" ] || "$TARGET/release/examples/gen_long_recording" "$REC" "$HOURS"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "recording: $REC, $(grep -c '"type":"sample"' "$REC") samples, $(du -m "$REC" | cut -f1) MB"
# Read once so every run starts from the page cache (the figures are copyscope's, not the disk's).
cat "$REC" >/dev/null
report() {
  local label=$1 i=$2 rss wall cpu
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$DIR/time.txt")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$DIR/time.txt")
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$DIR/time.txt")
  echo "$label run $i: peak RSS $rss MiB, wall $wall, CPU (user+sys) $cpu s"
}
# The TUI's title says "done" once the replay reached the end (drawn after the update that
# played it, so the pane shows it only then).
wait_done() {
  for _ in $(seq 1200); do
    tmux capture-pane -p -t "$1" 2>/dev/null | head -1 | grep -q ' done ' && return 0
    sleep 0.1
  done
  echo "bench-long-replay: the TUI replay never reached the end" >&2; return 1
}
run_tui() {
  local label=$1 s=copyscope-long-$$
  for i in $(seq "$RUNS"); do
    rm -f "$DIR/time.txt"
    tmux new-session -d -s "$s" -x 120 -y 40 \
      "/usr/bin/time -v -o '$DIR/time.txt' '$BIN' replay --speed inf '$REC'"
    wait_done "$s"
    tmux send-keys -t "$s" Home
    sleep 0.5
    tmux send-keys -t "$s" q
    while tmux has-session -t "$s" 2>/dev/null; do sleep 0.1; done
    report "$label" "$i"
  done
}
run() {
  local label=$1; shift
  for i in $(seq "$RUNS"); do
    /usr/bin/time -v -o "$DIR/time.txt" "$@" >/dev/null
    report "$label" "$i"
  done
}
run "export (png, svg, txt, md)" "$BIN" export "$REC" --png "$DIR/out.png" --svg "$DIR/out.svg" --text "$DIR/out.txt" --markdown "$DIR/out.md"
run "replay --plain" "$BIN" replay --plain "$REC"
run "replay --json" "$BIN" replay --json "$REC"
run_tui "replay (TUI: to the end, Home, to the end again, q)"
