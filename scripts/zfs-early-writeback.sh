#!/bin/bash
# zfs-early-writeback.sh — does early write-behind do anything on ZFS? Boots the throwaway
# OpenZFS VM of ../shared/lab/zfs-vm (see its README) and, in the guest, copies a SIZE MiB file
# from /dev/shm onto the pool with each of the given copyscope binaries in turn (default syncfs
# mode, so files of 32 MiB or more are eligible for early write-behind), ROUNDS times each:
#   - untraced, for the wall time and copyscope's own copy/flush split (--plain summary);
#   - under `strace -f -T`, for what the write-behind child did: its spawns (execve), each
#     sync_file_range and how long it took, and the final syncfs.
# ZFS writes do not go through the page cache, so sync_file_range has no dirty pages to start;
# the question is whether the child is spawned anyway and whether the copy changes.
# Output: OUTDIR/summary.txt (one line per run) and the raw straces and outputs.
#
# Usage: scripts/zfs-early-writeback.sh [--out DIR] [--size-mib 256] [--rounds 2]
#                                       [--disk-mbps 200] [--timeout 1500] LABEL=BINARY ...
# Env: ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab)
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT="" SIZE_MIB=256 ROUNDS=2 MBPS=200 TIMEOUT=1500
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *=*) bins+=("$1"); shift ;;
    *) echo "zfs-early-writeback: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || bins=("this=$HERE/target/release/copyscope")
[ -n "$OUT" ] || OUT=$HERE/target/zfs-early-writeback/$(date -u +%Y%m%dT%H%M%SZ)
[ -x "$LAB/run.sh" ] || { echo "zfs-early-writeback: $LAB/run.sh missing" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-early-writeback: VM not built; run $LAB/build.sh" >&2; exit 2; }

SHARE=$(mktemp -d "$LABDIR/copyscope-early.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
mkdir -p "$SHARE/out"
labels=()
for b in "${bins[@]}"; do
  label=${b%%=*}
  cp "${b#*=}" "$SHARE/cs-$label"
  labels+=("$label")
done

cat > "$SHARE/guest.sh" <<GUEST
set -u
O=/host/out
exec 2>>\$O/guest.log
cat /sys/module/zfs/version > \$O/zfs-version.txt
mount -o remount,size=$((SIZE_MIB + 256))m /dev/shm
dd if=/dev/zero of=/dev/shm/big bs=1M count=$SIZE_MIB 2>/dev/null
for r in \$(seq $ROUNDS); do
  for b in ${labels[*]}; do
    rm -f /tank/big; zpool sync tank
    t0=\$(date +%s.%N)
    COLUMNS=100 /host/cs-\$b --plain /dev/shm/big /tank/big > \$O/out-\$b-\$r.txt 2>&1
    rc=\$?
    t1=\$(date +%s.%N)
    rm -f /tank/big; zpool sync tank
    strace -f -qq -T -e trace=execve,sync_file_range,syncfs -o \$O/strace-\$b-\$r.txt \
      /host/cs-\$b --plain /dev/shm/big /tank/big > /dev/null 2>&1
    spawns=\$(grep -c 'execve(' \$O/strace-\$b-\$r.txt)
    sfr=\$(grep -c 'sync_file_range(' \$O/strace-\$b-\$r.txt)
    sfr_s=\$(grep 'sync_file_range(' \$O/strace-\$b-\$r.txt | sed -n 's/.*<\([0-9.]*\)>\$/\1/p' | awk '{s+=\$1} END{printf "%.4f", s}')
    sync_s=\$(grep 'syncfs(' \$O/strace-\$b-\$r.txt | sed -n 's/.*<\([0-9.]*\)>\$/\1/p' | awk '{s+=\$1} END{printf "%.3f", s}')
    split=\$(grep -m1 'done:' \$O/out-\$b-\$r.txt | tr -s ' ' || true)
    printf '%s round %s: rc %s, wall %.2f s; traced: execve %s (the first is copyscope), sync_file_range %s calls %s s, syncfs %s s; %s\n' \
      "\$b" "\$r" "\$rc" "\$(echo "\$t1 - \$t0" | bc)" "\$spawns" "\$sfr" "\$sfr_s" "\$sync_s" "\$split" >> \$O/summary.txt
  done
done
GUEST

set +e
"$LAB/run.sh" --disk-mbps "$MBPS" --mem 3G --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
echo "zfs-early-writeback: run.sh exit $rc"
cat "$OUT/summary.txt" 2>/dev/null || tail -20 "$OUT/run.log"
echo "zfs-early-writeback: output in $OUT"
exit $rc
