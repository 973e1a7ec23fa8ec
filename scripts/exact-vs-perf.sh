#!/bin/bash
# exact-vs-perf.sh — copyscope's time budget against perf's own record of the same copy: SRC
# copied into DEST with --json while `perf record -a -g` logs every sched_switch (with its
# kernel callchain) and sched_wakeup of the machine; scripts/exact-vs-perf.py splits the copy
# worker's time from perf's events alone and sets the copy phase's shares side by side. perf
# and copyscope's trace are independent (perf_event buffers, a tracefs instance), so this
# checks the exact trace, and, with COPYSCOPE_EXACT=0, the sampled stacks. --load N runs N busy
# loops beside the copy (the drift under load).
#
#   scripts/exact-vs-perf.sh SRC DEST [--load N]     (root; e.g. DEST on the slowdev lab disk)
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
src=$1; dest=$2; shift 2
LOAD=0
while [ $# -gt 0 ]; do
  case $1 in
    --load) LOAD=$2; shift 2 ;;
    *) echo "exact-vs-perf: unknown argument $1" >&2; exit 2 ;;
  esac
done
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "exact-vs-perf: $BIN missing (cargo build --release)" >&2; exit 2; }
out=$(mktemp -d /tmp/exact-vs-perf.XXXXXX)
busy=()
cleanup() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq 1 "$LOAD"); do (while :; do :; done) & busy+=($!); done
perf record -q -a -g -e sched:sched_switch -e sched:sched_wakeup -o "$out/perf.data" -- \
  "$BIN" --json "$src" "$dest" > "$out/run.jsonl" 2> "$out/run.err"
cleanup
uptime
perf script -i "$out/perf.data" -F comm,tid,cpu,time,event,trace,ip,sym > "$out/perf.txt" 2>/dev/null
python3 "$HERE/scripts/exact-vs-perf.py" "$out/perf.txt" "$out/run.jsonl"
echo "files: $out"
