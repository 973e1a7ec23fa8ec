#!/usr/bin/env bash
# verdict-runs.sh — real runs on this machine whose limit is known in advance, recorded for
# tests/it/verdict.rs (issue 16). Root only (loop devices, drop_caches, vm sysctls).
#   disk-bound-ext4   2 GB onto a 6 GB, 40 MB/s ext4 disk (big enough that the copier does
#                     not switch to write-behind for a nearly full destination) (../shared/lab/slowdev), page-cache limits
#                     lowered for the run (dirty_background_bytes 500 MB, dirty_bytes 1 GB;
#                     restored afterwards) so the cache fills within a second, not after 4.8 GB
#   source-stall      600 MB read from a slowdev disk throttled to 20 MB/s for reads (caches
#                     dropped first) onto /var/tmp
#   cpu-starved       2 GB from /dev/shm to /dev/shm with copyscope and three busy loops all
#                     pinned to CPU 0 (taskset)
# Each run writes OUT/NAME.jsonl (the recording) and OUT/NAME.out (the plain output).
# The ZFS runs (txg-bound, compressed zeros) come from scripts/zfs-lab-copy.sh.
#
# Usage: scripts/verdict-runs.sh [--bin PATH] [--out DIR] [--work DIR] [disk|source|cpu ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SLOWDEV=${SLOWDEV:-$HERE/../shared/lab/slowdev/slowdev.sh}
[ -x "$SLOWDEV" ] || SLOWDEV=/work/shared/lab/slowdev/slowdev.sh
BIN=$HERE/target/release/copyscope OUT=$HERE/target/verdict-runs WORK=/var/tmp/copyscope-verdict
RUNS=()
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    disk|source|cpu) RUNS+=("$1"); shift ;;
    *) echo "verdict-runs: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#RUNS[@]} -gt 0 ] || RUNS=(disk source cpu)
[ "$(id -u)" = 0 ] || { echo "verdict-runs: needs root" >&2; exit 2; }
mkdir -p "$OUT" "$WORK"
copy() { # NAME ARGS...: a plain run, recorded
  local name=$1; shift
  COLUMNS=100 "$@" --plain --record "$OUT/$name.jsonl" > "$OUT/$name.out" 2>&1 || true
  tail -4 "$OUT/$name.out"
}

disk() {
  local dev=$WORK/disk
  "$SLOWDEV" up "$dev" --mbps 40 --size 6G >/dev/null
  local bg rb r b
  bg=$(cat /proc/sys/vm/dirty_background_ratio) r=$(cat /proc/sys/vm/dirty_ratio)
  b=$(cat /proc/sys/vm/dirty_background_bytes) rb=$(cat /proc/sys/vm/dirty_bytes)
  # shellcheck disable=SC2064
  trap "echo $r > /proc/sys/vm/dirty_ratio; echo $bg > /proc/sys/vm/dirty_background_ratio;
        [ $rb = 0 ] || echo $rb > /proc/sys/vm/dirty_bytes; [ $b = 0 ] || echo $b > /proc/sys/vm/dirty_background_bytes;
        $SLOWDEV down $dev" RETURN
  [ -f "$WORK/src-2g.bin" ] || head -c 2000000000 /dev/urandom > "$WORK/src-2g.bin"
  sync
  echo 500000000 > /proc/sys/vm/dirty_background_bytes
  echo 1000000000 > /proc/sys/vm/dirty_bytes
  copy disk-bound-ext4 "$BIN" "$WORK/src-2g.bin" "$dev/mnt/"
}

source_stall() {
  local dev=$WORK/src
  "$SLOWDEV" up "$dev" --mbps 0 --size 1G >/dev/null
  # shellcheck disable=SC2064
  trap "$SLOWDEV down $dev" RETURN
  head -c 600000000 /dev/urandom > "$dev/mnt/src.bin"
  sync
  "$SLOWDEV" set "$dev" --read-mbps 20 >/dev/null
  echo 3 > /proc/sys/vm/drop_caches
  rm -f "$WORK/stall-dst.bin"
  copy source-stall "$BIN" "$dev/mnt/src.bin" "$WORK/stall-dst.bin"
  rm -f "$WORK/stall-dst.bin"
}

cpu() {
  local src=/dev/shm/copyscope-verdict-src.bin dst=/dev/shm/copyscope-verdict-dst.bin pids=()
  head -c 2000000000 /dev/zero > "$src"
  for _ in 1 2 3; do taskset -c 0 sh -c 'while :; do :; done' & pids+=($!); done
  # shellcheck disable=SC2064
  trap "kill ${pids[*]} 2>/dev/null; rm -f $src $dst" RETURN
  copy cpu-starved taskset -c 0 "$BIN" "$src" "$dst"
}

for r in "${RUNS[@]}"; do
  echo "== $r"
  case $r in disk) disk ;; source) source_stall ;; cpu) cpu ;; esac
done
ls -l "$OUT"
