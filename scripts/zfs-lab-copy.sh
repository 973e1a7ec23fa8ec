#!/bin/bash
# zfs-lab-copy.sh — the "on real ZFS" run of copyscope: builds the release binary, boots the
# throwaway OpenZFS VM of ../shared/lab/zfs-vm (see its README) with the pool write-throttled,
# and in the guest
#   1. writes a SIZE MiB file of zeros into /dev/shm (the pool has compression off, so zeros are
#      really written; /dev/urandom is too slow under emulation);
#   2. runs `COLUMNS=100 copyscope --plain --record zfs-copy.jsonl /dev/shm/big /tank/big`;
#   3. saves txgs, dmu_tx and arcstats before and after, and the ZFS tunables that size txgs.
# Output goes to OUTDIR (default target/zfs-lab-copy/<date>): copy.out (stdout), copy.err,
# copy.rc, zfs-copy.jsonl (the recording), guest.log, txgs-{before,after}.txt,
# dmu_tx-{before,after}.txt, arcstats-after.txt, params.txt, shm.txt, dd-shm.txt, run.log.
# Big files (the share with the binary, the pool images) stay under $ZFS_LAB_DIR (/var/tmp).
#
# Usage: scripts/zfs-lab-copy.sh [--out DIR] [--disk-mbps 40] [--size-mib 1536] [--mem 4G]
#                                [--interval MS] [--timeout S] [--no-build] [--compression lz4]
# Env: ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab)
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT=""
MBPS=40 SIZE_MIB=1536 MEM=4G INTERVAL=100 TIMEOUT=900 BUILD=1 COMPRESSION=off
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --interval) INTERVAL=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --compression) COMPRESSION=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "zfs-lab-copy: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$HERE/target/zfs-lab-copy/$(date -u +%Y%m%dT%H%M%SZ)-${MBPS}mbps
[ -x "$LAB/run.sh" ] || { echo "zfs-lab-copy: $LAB/run.sh missing" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-lab-copy: VM not built; run $LAB/build.sh" >&2; exit 2; }

if [ $BUILD = 1 ]; then
  (cd "$HERE" && cargo build --release --bin copyscope)
fi
# A share of our own, so parallel runs and other users of the default share do not collide.
SHARE=$(mktemp -d "$LABDIR/copyscope-copy.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$HERE/target/release/copyscope" "$SHARE/"
mkdir -p "$SHARE/out"

cat > "$SHARE/guest.sh" <<GUEST
set -u
O=/host/out
exec 2>>\$O/guest.log
K=/proc/spl/kstat/zfs
uname -r > \$O/uname.txt
cat /sys/module/zfs/version > \$O/zfs-version.txt
for p in zfs_dirty_data_max zfs_dirty_data_sync_percent zfs_delay_min_dirty_percent \
         zfs_txg_timeout zfs_txg_history zfs_arc_max; do
  echo "\$p \$(cat /sys/module/zfs/parameters/\$p)"
done > \$O/params.txt
zfs get -H -o property,value compression,compressratio,recordsize,sync tank >> \$O/params.txt
# tmpfs defaults to half of RAM: make room for the source file whatever --mem is.
mount -o remount,size=$((SIZE_MIB + 256))m /dev/shm
df -m /dev/shm > \$O/shm.txt
free -m >> \$O/shm.txt
dd if=/dev/zero of=/dev/shm/big bs=1M count=$SIZE_MIB 2> \$O/dd-shm.txt
cat \$K/tank/txgs > \$O/txgs-before.txt
cat \$K/dmu_tx > \$O/dmu_tx-before.txt
t0=\$(date +%s.%N)
COLUMNS=100 /host/copyscope --plain --interval $INTERVAL --record \$O/zfs-copy.jsonl \
  /dev/shm/big /tank/big > \$O/copy.out 2> \$O/copy.err
echo \$? > \$O/copy.rc
t1=\$(date +%s.%N)
echo "copyscope wall time: \$(echo "\$t1 - \$t0" | bc) s" >> \$O/guest.log
cat \$K/tank/txgs > \$O/txgs-after.txt
cat \$K/dmu_tx > \$O/dmu_tx-after.txt
cat \$K/arcstats > \$O/arcstats-after.txt
ls -l /tank/big >> \$O/guest.log
zfs get -H -p -o property,value compressratio,logicalused,used tank >> \$O/guest.log
GUEST

set +e
"$LAB/run.sh" --disk-mbps "$MBPS" --mem "$MEM" --compression "$COMPRESSION" --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
echo "zfs-lab-copy: run.sh exit $rc, copyscope exit $(cat "$OUT/copy.rc" 2>/dev/null || echo '?')"
cat "$OUT/copy.out" 2>/dev/null || true
echo "zfs-lab-copy: output in $OUT"
exit $rc
