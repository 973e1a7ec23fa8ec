#!/usr/bin/env bash
# bench-long-replay.sh — peak RSS and wall time of `copyscope export`, `replay --plain` and
# `replay --json` of a generated 24 h recording (issue 14: <= 64 MiB and <= 5 s each), measured
# with /usr/bin/time -v; prints one line per command and run.
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
run() {
  local label=$1; shift
  for i in $(seq "$RUNS"); do
    /usr/bin/time -v -o "$DIR/time.txt" "$@" >/dev/null
    local rss wall cpu
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$DIR/time.txt")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$DIR/time.txt")
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$DIR/time.txt")
    echo "$label run $i: peak RSS $rss MiB, wall $wall, CPU (user+sys) $cpu s"
  done
}
run "export (png, svg, txt, md)" "$BIN" export "$REC" --png "$DIR/out.png" --svg "$DIR/out.svg" --text "$DIR/out.txt" --markdown "$DIR/out.md"
run "replay --plain" "$BIN" replay --plain "$REC"
run "replay --json" "$BIN" replay --json "$REC"
