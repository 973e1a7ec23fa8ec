#!/usr/bin/env bash
# slowdev-run.sh — the README's ext4 example: a real kernel-throttled copy on this machine.
# Mounts a 40 MB/s ext4 disk with ../shared/lab/slowdev (root only), lowers the dirty limits
# for the run (background 100 MB, limit 300 MB, so throttling starts within seconds instead
# of after GBs; restored afterwards), copies a 1.2 GB file in tmux at 100x32, captures the
# screen mid-copy, and exports the recording with copyscope itself into assets/.
#
# Usage: sudo [COPYSCOPE_BIN=path] scripts/slowdev-run.sh [--mbps 40] [--mb 1200] [--work /var/tmp/copyscope-slowdev]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SLOWDEV=${SLOWDEV:-$HERE/../shared/lab/slowdev/slowdev.sh}
MBPS=40 MB=1200 WORK=/var/tmp/copyscope-slowdev
while [ $# -gt 0 ]; do
  case $1 in
    --mbps) MBPS=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    *) echo "slowdev-run: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "slowdev-run: needs root (loop device, vm sysctls)" >&2; exit 2; }
# COPYSCOPE_BIN: a copyscope already built (skips the release build).
BIN=${COPYSCOPE_BIN:-}
if [ -z "$BIN" ]; then
  (cd "$HERE" && cargo build --release --quiet)
  BIN=${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope
fi
mkdir -p "$WORK"
"$SLOWDEV" up "$WORK/dev" --mbps "$MBPS" --size 3G >/dev/null
old_bg=$(cat /proc/sys/vm/dirty_background_ratio) old_r=$(cat /proc/sys/vm/dirty_ratio)
old_bgb=$(cat /proc/sys/vm/dirty_background_bytes) old_rb=$(cat /proc/sys/vm/dirty_bytes)
restore() {
  # Writing a *_ratio resets the matching *_bytes to 0, and the other way round.
  if [ "$old_rb" != 0 ]; then echo "$old_rb" > /proc/sys/vm/dirty_bytes; else echo "$old_r" > /proc/sys/vm/dirty_ratio; fi
  if [ "$old_bgb" != 0 ]; then echo "$old_bgb" > /proc/sys/vm/dirty_background_bytes; else echo "$old_bg" > /proc/sys/vm/dirty_background_ratio; fi
  tmux -L copyscope-slowdev kill-server 2>/dev/null || true
  "$SLOWDEV" down "$WORK/dev" || true
}
trap restore EXIT
[ -f "$WORK/src.bin" ] || head -c $((MB << 20)) /dev/urandom > "$WORK/src.bin"
sync
echo 100000000 > /proc/sys/vm/dirty_background_bytes
echo 300000000 > /proc/sys/vm/dirty_bytes
rm -f "$WORK/run.jsonl" "$WORK/exit"
tmux -L copyscope-slowdev -f /dev/null new-session -d -s s -x 100 -y 32 -e TERM=xterm-256color \
  "$BIN --record $WORK/run.jsonl $WORK/src.bin $WORK/dev/mnt/; echo \$? > $WORK/exit; sleep 600"
sleep 16
tmux -L copyscope-slowdev capture-pane -p -t s > "$HERE/assets/slowdev-40mbps-ext4.screen.txt"
for _ in $(seq 1 300); do [ -s "$WORK/exit" ] && break; sleep 0.5; done
echo "copyscope exited $(cat "$WORK/exit")"
cp "$WORK/run.jsonl" "$HERE/assets/slowdev-40mbps-ext4.jsonl"
"$BIN" export "$HERE/assets/slowdev-40mbps-ext4.jsonl"
