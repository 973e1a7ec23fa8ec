#!/bin/bash
# Records the trace_pipe text copyscope's exact source reads, for a real copy, as a test fixture:
# a tracefs instance set up as src/sample/exact/tracefs.rs sets up its own (same events, filters and
# stacktrace trigger), naming the copy threads of a copyscope run that itself traces nothing
# (COPYSCOPE_EXACT=0), read for SECS seconds from the moment the threads exist.
#
#   scripts/exact-capture.sh SRC DEST OUT.txt [SECS]     (root; e.g. DEST on the slowdev lab disk)
set -euo pipefail
src=$1; dest=$2; out=$3; secs=${4:-6}
bin=${COPYSCOPE_BIN:-target/release/copyscope}
tfs=/sys/kernel/tracing
[ -d $tfs/instances ] || mount -t tracefs nodev $tfs
inst=$tfs/instances/capture-$$
mkdir "$inst"
cleanup() { echo 0 > "$inst/tracing_on" 2>/dev/null || true; rmdir "$inst" 2>/dev/null || true; }
trap cleanup EXIT
echo 0 > "$inst/tracing_on"; echo mono > "$inst/trace_clock"

COPYSCOPE_EXACT=0 "$bin" --plain "$src" "$dest" > "$out.copy.log" 2>&1 &
pid=$!
list() { for t in /proc/$pid/task/*; do grep -qE '^copyscope-(copy|engi)' "$t/comm" 2>/dev/null && basename "$t"; done | tr '\n' ' ' || true; }
tids=
for _ in $(seq 100); do
  tids=$(list)
  [ -n "$tids" ] && break; sleep 0.02
done
sleep 0.2; tids=$(list)   # the workers start just after the engine
[ -n "$tids" ] || { echo "no copy threads" >&2; exit 1; }
any() { local f=$1 s= t; for t in $tids; do s="${s:+$s || }$f == $t"; done; echo "$s"; }
# As the product: the filters alone select the threads (no set_event_pid, no event-fork); a
# blocking switch carries its stack, a thread's last switch (prev_state X/Z/x) ends its time.
blocking="($(any prev_pid)) && prev_state & 3"
echo "($(any prev_pid)) && prev_state & 115" > "$inst/events/sched/sched_switch/filter"
echo "stacktrace if $blocking" > "$inst/events/sched/sched_switch/trigger"
any pid > "$inst/events/sched/sched_wakeup/filter"
any common_pid > "$inst/events/writeback/balance_dirty_pages/filter"
for e in sched/sched_switch sched/sched_wakeup writeback/balance_dirty_pages; do
  echo 1 > "$inst/events/$e/enable"
done
echo 1 > "$inst/tracing_on"
timeout "$secs" cat "$inst/trace_pipe" > "$out" || true
wait $pid || true
echo "threads: $tids"
echo "$(wc -l < "$out") lines in $out"
