#!/bin/bash
# bench-ext4.sh — `copyscope bench` on a real slow ext4 disk: tests/slowdev/slowdev.sh makes a
# throttled block device (qemu-storage-daemon write/read throttle → loop → ext4), the bench runs
# on it, and its tables and recordings go to OUT (default assets/bench-ext4). The read limit
# is what shows that the read-back phase is uncached: its speed must be at or below it.
#
# Usage: scripts/bench-ext4.sh [--out DIR] [--mbps 40] [--read-mbps 60] [--disk 3G]
#                              [--size 1G] [--files 2000] [--tree-size 500M]
# Env: COPYSCOPE_BIN (default $CARGO_TARGET_DIR/release/copyscope or target/release/copyscope).
# Needs root, /dev/fuse, loop devices and qemu-storage-daemon (see slowdev.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=$HERE/assets/bench-ext4
MBPS=40 RMBPS=60 DISK=3G SIZE=1G FILES=2000 TREE=500M
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --mbps) MBPS=$2; shift 2 ;;
    --read-mbps) RMBPS=$2; shift 2 ;;
    --disk) DISK=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --tree-size) TREE=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench-ext4: unknown argument $1" >&2; exit 2 ;;
  esac
done
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "bench-ext4: $BIN missing (cargo build --release)" >&2; exit 2; }
WORK=$(mktemp -d /var/tmp/copyscope-bench-ext4.XXXXXX)
trap '"$HERE/tests/slowdev/slowdev.sh" down "$WORK" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
MNT=$("$HERE/tests/slowdev/slowdev.sh" up "$WORK" --mbps "$MBPS" --read-mbps "$RMBPS" --size "$DISK" | tail -1)
# The fresh filesystem holds lost+found: the bench gets an empty directory of its own.
mkdir "$MNT/bench"
rm -rf "$OUT"
mkdir -p "$OUT"
echo "slow ext4 disk: writes $MBPS MB/s, reads $RMBPS MB/s, $DISK" > "$OUT/disk.txt"
COLUMNS=100 "$BIN" bench "$MNT/bench" --plain --size "$SIZE" --files "$FILES" \
  --tree-size "$TREE" --out "$OUT" | tee "$OUT/bench.out"
