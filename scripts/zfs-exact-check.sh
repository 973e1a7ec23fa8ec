#!/bin/bash
# zfs-exact-check.sh — the exact trace against perf on real OpenZFS 2.1 (the lab VM of
# ../shared/lab/zfs-vm, with perf added by scripts/zfs-lab-add-packages.sh): in the guest,
# each case is copied with --json while `perf record -a -g` logs every sched_switch (with its
# kernel callchain) and sched_wakeup; scripts/exact-vs-perf.py then splits the copy worker's
# time from perf's events alone, on the host, and sets the shares beside copyscope's budget.
# Cases, on a pool write-throttled to --disk-mbps: one --mb MiB file; the same with the
# write throttle engaged hard (zfs_dirty_data_max 64 MiB, so dmu_tx_delay holds the writer);
# a tree of 1000 files of 256 KiB.
#
# Usage: scripts/zfs-exact-check.sh [--out DIR] [--disk-mbps 20] [--mb 400] [--mem 4G]
# Env: COPYSCOPE_BIN, ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (/var/tmp/zfs-lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT="" MBPS=20 MB=400 MEM=4G
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "zfs-exact-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$HERE/target/zfs-exact-check/$(date -u +%Y%m%dT%H%M%SZ)
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "zfs-exact-check: $BIN missing (cargo build --release)" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-exact-check: VM not built; run $LAB/build.sh" >&2; exit 2; }
SHARE=$(mktemp -d "$LABDIR/copyscope-exact.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$BIN" "$SHARE/copyscope"
mkdir -p "$SHARE/out"
cat > "$SHARE/guest.sh" <<GUEST
set -u
O=/host/out
exec 2>>\$O/guest.log
command -v perf >/dev/null || { echo "no perf in the guest: scripts/zfs-lab-add-packages.sh" >> \$O/guest.log; exit 3; }
cp /host/copyscope /usr/local/bin/
zfs create -o compression=off tank/x
dd if=/dev/urandom of=/dev/shm/chunk bs=1M count=16 status=none
for i in \$(seq 1 \$(( $MB / 16 ))); do cat /dev/shm/chunk; done > /dev/shm/src
mkdir -p /dev/shm/tree
for i in \$(seq 1 1000); do head -c 262144 /dev/shm/chunk > /dev/shm/tree/f\$i; done
zpool sync tank
case_run() {  # case_run NAME SRC DEST
  perf record -q -a -g -e sched:sched_switch -e sched:sched_wakeup -o /tmp/\$1.data -- \
    copyscope --json "\$2" "\$3" > \$O/\$1.jsonl 2> \$O/\$1.err
  perf script -i /tmp/\$1.data -F comm,tid,cpu,time,event,trace,ip,sym > \$O/\$1.perf.txt 2>/dev/null
  rm -f /tmp/\$1.data
  rm -rf "\$3"; zpool sync tank
}
case_run single /dev/shm/src /tank/x/single
old=\$(cat /sys/module/zfs/parameters/zfs_dirty_data_max)
echo \$((64 << 20)) > /sys/module/zfs/parameters/zfs_dirty_data_max
case_run throttle /dev/shm/src /tank/x/throttle
echo \$old > /sys/module/zfs/parameters/zfs_dirty_data_max
case_run tree /dev/shm/tree /tank/x/tree
GUEST
set +e
"$LAB/run.sh" --disk-mbps "$MBPS" --mem "$MEM" --share "$SHARE" --timeout 2400 -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
for m in single throttle tree; do
  echo "== $m"
  [ -s "$OUT/$m.perf.txt" ] && python3 "$HERE/scripts/exact-vs-perf.py" "$OUT/$m.perf.txt" "$OUT/$m.jsonl" \
    || tail -5 "$OUT/$m.err" "$OUT/guest.log" 2>/dev/null
done
echo "zfs-exact-check: run.sh exit $rc; output in $OUT"
