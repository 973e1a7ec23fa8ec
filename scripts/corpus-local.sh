#!/bin/bash
# corpus-local.sh — records the host scenarios of the truth corpus (issue 9, docs/attribution.md)
# on this machine, as root, each with the writer-truth sampler (../shared/lab/writer-truth)
# beside the copy every 100 ms (NAME.truth.csv: the copier's thread states and kernel stacks):
#   ext4-disk-lowered   1200 MB onto a 40 MB/s ext4 disk (../shared/lab/slowdev) with the dirty
#                       limits lowered to 100 MB background / 300 MB: disk-bound after ~0.3 GB
#   ext4-disk-default   4600 MB onto the same disk with the machine's default dirty limits
#                       (24 GiB RAM here: freerun ~3.3 GB): the page cache fills at memory speed,
#                       then the copy runs at the disk's 40 MB/s for ~30 s
#   ext4-other-writer   1200 MB onto the 40 MB/s disk, dirty limits 100/300 MB; from 8 s three
#                       dd's write 200 MB each into the same filesystem: the kernel shares the
#                       disk between four writers and the copy falls to about a quarter
#   source-stall        800 MB read from the slow disk onto /var/tmp; its read limit drops to
#                       5 MB/s for 4 s mid-run (`slowdev.sh set`), a drop with a known cause
#   cpu-starved         1500 MB tmpfs → tmpfs at --bwlimit 150M, copier pinned to CPU 1; from
#                       5 s to 9 s three busy loops at nice -10 share that CPU
#   tmpfs-other-writer  1500 MB tmpfs → tmpfs at --bwlimit 150M while dd writes 3 GB to /var/tmp
#                       (system-wide Dirty/Writeback rise, nothing holds the copier)
#   ext4-nearly-full    `copyscope watch --comm dd` while dd writes 230 MB onto the 40 MB/s disk
#                       with 247 MB free (1 GB disk, 660 MB preallocated; the bdi's max_ratio
#                       raised to 30 % as a real disk has no such cap): ext4 turns delayed
#                       allocation off and the writer waits in ext4_nonda_switch. A watch, not a
#                       copy: copyscope's own write-behind keeps its writer out of that state
#
# Usage: scripts/corpus-local.sh --bin PATH/copyscope --tsampler PATH/tsampler [--out DIR]
#        [--work DIR] [SCENARIO...]          (default: all; out: target/corpus-local/<date>)
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SLOWDEV=${SLOWDEV:-/work/shared/lab/slowdev/slowdev.sh}
BIN="" TS="" OUT="" WORK=/var/tmp/copyscope-corpus
ALL=(ext4-disk-lowered ext4-disk-default ext4-other-writer source-stall cpu-starved tmpfs-other-writer ext4-nearly-full)
SEL=()
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --tsampler) TS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    -*) echo "corpus-local: unknown argument $1" >&2; exit 2 ;;
    *) SEL+=("$1"); shift ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "corpus-local: needs root (loop device, sysctls, kernel stacks)" >&2; exit 2; }
[ -x "$BIN" ] && [ -x "$TS" ] || { echo "corpus-local: --bin and --tsampler are required" >&2; exit 2; }
[ ${#SEL[@]} -gt 0 ] || SEL=("${ALL[@]}")
[ -n "$OUT" ] || OUT=$HERE/target/corpus-local/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT" "$WORK"
SHM=/dev/shm/copyscope-corpus

old_bg=$(cat /proc/sys/vm/dirty_background_ratio) old_r=$(cat /proc/sys/vm/dirty_ratio)
old_bgb=$(cat /proc/sys/vm/dirty_background_bytes) old_rb=$(cat /proc/sys/vm/dirty_bytes)
restore_dirty() {
  # Writing a *_ratio resets the matching *_bytes to 0, and the other way round.
  if [ "$old_rb" != 0 ]; then echo "$old_rb" > /proc/sys/vm/dirty_bytes; else echo "$old_r" > /proc/sys/vm/dirty_ratio; fi
  if [ "$old_bgb" != 0 ]; then echo "$old_bgb" > /proc/sys/vm/dirty_background_bytes; else echo "$old_bg" > /proc/sys/vm/dirty_background_ratio; fi
}
HOGS=()
cleanup() {
  restore_dirty
  for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null || true; done
  "$SLOWDEV" set "$WORK/dev" --mbps 0 --read-mbps 0 >/dev/null 2>&1 || true
  "$SLOWDEV" down "$WORK/dev" >/dev/null 2>&1 || true
  rm -rf "$SHM" "$WORK/dst"
}
trap cleanup EXIT

loopname() { basename "$(cat "$WORK/dev/loopdev")"; }

# record NAME DEVS COPY-ARGS... : runs copyscope (under ${PREFIX[@]}, e.g. taskset) with the
# truth sampler beside it.
PREFIX=()
record() {
  local name=$1 devs=$2; shift 2
  sync
  COLUMNS=100 "${PREFIX[@]}" "$BIN" --plain --record "$OUT/$name.jsonl" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" &
  local pid=$!
  "$TS" $pid 100 - "$devs" > "$OUT/$name.truth.csv" 2>/dev/null &
  local ts=$!
  echo $pid > "$WORK/pid"
  local rc=0; wait $pid || rc=$?; echo $rc > "$OUT/$name.rc"
  wait $ts || true
  echo "$name: rc $(cat "$OUT/$name.rc")"; tail -3 "$OUT/$name.out"
}

# record_watch NAME DEVS WRITER-CMD... : `copyscope watch --comm` of the writer on the slow disk,
# the writer started 2 s later with the truth sampler beside it.
record_watch() {
  local name=$1 devs=$2; shift 2
  sync
  COLUMNS=100 "$BIN" watch "$WORK/dev/mnt" --comm "$(basename "$1")" --plain --until-idle 3 \
    --duration 120 --record "$OUT/$name.jsonl" > "$OUT/$name.out" 2> "$OUT/$name.err" &
  local w=$!
  echo $w > "$WORK/pid"
  sleep 2
  "$@" & local pid=$!
  "$TS" $pid 100 - "$devs" > "$OUT/$name.truth.csv" 2>/dev/null &
  local ts=$!
  wait $pid || true; wait $ts || true
  local rc=0; wait $w || rc=$?; echo $rc > "$OUT/$name.rc"
  echo "$name: rc $rc"; tail -3 "$OUT/$name.out"
}

slow_up() {  # slow_up MBPS SIZE
  "$SLOWDEV" down "$WORK/dev" >/dev/null 2>&1 || true
  "$SLOWDEV" up "$WORK/dev" --mbps "$1" --size "$2" >/dev/null
}

src_file() {  # src_file PATH MB : incompressible data, made once
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = $(( $2 << 20 )) ] || head -c $(( $2 << 20 )) /dev/urandom > "$1"
}

for sc in "${SEL[@]}"; do
  case $sc in
    ext4-disk-lowered)
      slow_up 40 3G
      src_file "$WORK/src1200.bin" 1200
      echo 100000000 > /proc/sys/vm/dirty_background_bytes
      echo 300000000 > /proc/sys/vm/dirty_bytes
      record "$sc" "$(loopname)" "$WORK/src1200.bin" "$WORK/dev/mnt/"
      restore_dirty
      ;;
    ext4-disk-default)
      slow_up 40 8G
      src_file "$WORK/src4600.bin" 4600
      # --no-sync: the copy phase is what is judged; the dirty backlog is drained fast below.
      record "$sc" "$(loopname)" --no-sync "$WORK/src4600.bin" "$WORK/dev/mnt/"
      "$SLOWDEV" set "$WORK/dev" --mbps 0 >/dev/null
      sync
      ;;
    ext4-other-writer)
      slow_up 40 3G
      src_file "$WORK/src1200.bin" 1200
      echo 100000000 > /proc/sys/vm/dirty_background_bytes
      echo 300000000 > /proc/sys/vm/dirty_bytes
      ( sleep 8; date +%s.%N > "$OUT/$sc.dd-on"
        for i in 1 2 3; do dd if=/dev/zero of="$WORK/dev/mnt/other$i.bin" bs=1M count=200 status=none & done
        wait; date +%s.%N > "$OUT/$sc.dd-off" ) &
      date +%s.%N > "$OUT/$sc.start"
      record "$sc" "$(loopname)" "$WORK/src1200.bin" "$WORK/dev/mnt/"
      wait
      restore_dirty
      ;;
    ext4-nearly-full)
      slow_up 40 1G
      fallocate -l 660M "$WORK/dev/mnt/filler"; sync
      bdi=/sys/class/bdi/$(cat "/sys/block/$(loopname)/dev")
      old_ratio=$(cat "$bdi/max_ratio"); echo 30 > "$bdi/max_ratio"
      mkdir -p "$SHM"; src_file "$SHM/src230.bin" 230
      record_watch "$sc" "$(loopname)" dd if="$SHM/src230.bin" of="$WORK/dev/mnt/big" bs=1M status=none
      echo "$old_ratio" > "$bdi/max_ratio"
      ;;
    source-stall)
      slow_up 0 2G
      "$SLOWDEV" set "$WORK/dev" --mbps 0 --read-mbps 0 >/dev/null
      src_file "$WORK/src800.bin" 800
      cp "$WORK/src800.bin" "$WORK/dev/mnt/src.bin"; sync
      echo 1 > /proc/sys/vm/drop_caches
      "$SLOWDEV" set "$WORK/dev" --read-mbps 60 >/dev/null
      mkdir -p "$WORK/dst"; rm -f "$WORK/dst/src.bin"
      ( sleep 5; "$SLOWDEV" set "$WORK/dev" --read-mbps 5 >/dev/null; date +%s.%N > "$OUT/$sc.set-slow";
        sleep 4; "$SLOWDEV" set "$WORK/dev" --read-mbps 60 >/dev/null; date +%s.%N > "$OUT/$sc.set-fast" ) &
      date +%s.%N > "$OUT/$sc.start"
      record "$sc" "$(loopname)" "$WORK/dev/mnt/src.bin" "$WORK/dst/"
      wait
      rm -rf "$WORK/dst"
      ;;
    cpu-starved|tmpfs-other-writer)
      mkdir -p "$SHM/src" "$SHM/dst"
      src_file "$SHM/src/f.bin" 1500
      rm -f "$SHM/dst/f.bin"
      if [ "$sc" = cpu-starved ]; then
        ( sleep 5
          for _ in 1 2 3; do taskset -c 1 nice -n -10 sh -c 'while :; do :; done' & echo $! >> "$WORK/hogs"; done
          date +%s.%N > "$OUT/$sc.hogs-on"; sleep 4
          for p in $(cat "$WORK/hogs"); do kill "$p"; done; rm -f "$WORK/hogs"
          date +%s.%N > "$OUT/$sc.hogs-off" ) &
        date +%s.%N > "$OUT/$sc.start"
        PREFIX=(taskset -c 1)
        record "$sc" - --bwlimit 150M "$SHM/src/f.bin" "$SHM/dst/"
        PREFIX=()
        wait
      else
        ( sleep 3; dd if=/dev/zero of="$WORK/other.bin" bs=1M count=3000 status=none; rm -f "$WORK/other.bin" ) &
        date +%s.%N > "$OUT/$sc.start"
        record "$sc" vda --bwlimit 150M "$SHM/src/f.bin" "$SHM/dst/"
        wait
      fi
      rm -rf "$SHM/dst"
      ;;
    *) echo "corpus-local: unknown scenario $sc" >&2; exit 2 ;;
  esac
done
echo "corpus-local: output in $OUT"
