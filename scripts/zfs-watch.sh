#!/bin/bash
# zfs-watch.sh — issue 12's ZFS case: `copyscope watch /tank` beside writers that are not
# copyscope, on real OpenZFS 2.1 in the throwaway VM (../shared/lab/zfs-vm, see its README),
# pool `tank` write-throttled to 40 MB/s, compression off. In one boot, in the guest:
#   1. ages the pool (zpool sync until `txgs` holds zfs_txg_history = 100 rows), as on a server
#      that has been up a while — the txg numbers are then far from 1 and the kstat is full;
#   2. zfs-watch-dd:    `dd if=/dev/zero of=/tank/dd.bin bs=1M count=$MB` with
#                       `copyscope watch /tank --plain --record` beside it (intake: the dataset's
#                       objset `nwritten`);
#   3. zfs-watch-samba: smbd on the guest's loopback serving /tank/share, `smbclient put` of a
#                       $SMB_MB MB file from /dev/shm, and `copyscope watch /tank/share --comm
#                       smbd --plain --record` beside it (intake: smbd's wchar).
# After each run the full `txgs` kstat (NAME.txgs.txt) is saved: scripts/zfs-watch-check.py
# checks that every txg-sync stall copyscope reported names a txg that really synced then, with
# its size and sync time, and that every long sync during the writes was reported.
#
# Usage: scripts/zfs-watch.sh --bin PATH/copyscope [--out DIR] [--mb 1500] [--smb-mb 800]
#        [--timeout S]     (default out: target/zfs-watch/<date>)
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
BIN="" OUT="" TIMEOUT=1500 MB=1500 SMB_MB=800
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --smb-mb) SMB_MB=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "zfs-watch: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$BIN" ] || { echo "zfs-watch: --bin PATH/copyscope is required" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-watch: VM not built; run $LAB/build.sh" >&2; exit 2; }
[ -n "$OUT" ] || OUT=$HERE/target/zfs-watch/$(date -u +%Y%m%dT%H%M%SZ)
SHARE=$(mktemp -d "$LABDIR/zfs-watch.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$BIN" "$SHARE/copyscope"
mkdir -p "$SHARE/out"

cat > "$SHARE/guest.sh" <<GUEST
MB=$MB
SMB_MB=$SMB_MB
GUEST
cat >> "$SHARE/guest.sh" <<'GUEST'
set -u
O=/host/out
exec 2>>$O/guest.log
K=/proc/spl/kstat/zfs
uname -r > $O/uname.txt
cat /sys/module/zfs/version > $O/zfs-version.txt
for p in zfs_dirty_data_max zfs_dirty_data_sync_percent zfs_delay_min_dirty_percent \
         zfs_txg_timeout zfs_txg_history; do
  echo "$p $(cat /sys/module/zfs/parameters/$p)"
done > $O/params.txt
zfs get -H compression tank >> $O/guest.log
# Age the pool: the txgs kstat holds zfs_txg_history rows on a server that has been up a while.
n=0
while [ "$(wc -l < $K/tank/txgs)" -lt 101 ] && [ $n -lt 200 ]; do
  date > /tank/age; zpool sync tank; n=$((n + 1))
done
echo "aged with $n syncs: $(wc -l < $K/tank/txgs) lines in txgs" >> $O/guest.log

watch_start() {  # watch_start NAME ARGS... : copyscope watch in the background
  local name=$1; shift
  COLUMNS=100 /host/copyscope watch "$@" --plain --record $O/$name.jsonl \
    > $O/$name.out 2> $O/$name.err &
  WATCH=$!
  # Start the writer only once the watch samples (under TCG copyscope takes seconds to start):
  # the recording's first lines are the header and the environment, then one line per sample.
  local i=0
  while [ "$( { wc -l < $O/$name.jsonl; } 2>/dev/null || echo 0)" -lt 12 ] && [ $i -lt 300 ]; do
    sleep 0.1; i=$((i + 1))
  done
  sleep 1
}
watch_end() {  # watch_end NAME : wait for --until-idle, then the full txgs kstat
  local name=$1
  wait $WATCH; echo $? > $O/$name.rc
  cat $K/tank/txgs > $O/$name.txgs.txt
  cat $K/dmu_tx > $O/$name.dmu_tx.txt
  echo "$name: rc $(cat $O/$name.rc)" >> $O/guest.log
}

# 1. dd of zeros onto the dataset (compression off: every byte reaches the disks).
sync; sleep 2
cat $K/tank/txgs > $O/zfs-watch-dd.txgs-before.txt
watch_start zfs-watch-dd /tank --until-idle 8
dd if=/dev/zero of=/tank/dd.bin bs=1M count=$MB 2> $O/zfs-watch-dd.dd.txt
watch_end zfs-watch-dd
rm -f /tank/dd.bin; zpool sync tank

# 2. Samba inside the guest: smbclient -> smbd (loopback) -> /tank/share.
mount -o remount,size=$((SMB_MB + 300))m /dev/shm
dd if=/dev/zero of=/dev/shm/f.bin bs=1M count=$SMB_MB status=none
mkdir -p /tank/share /run/samba /var/log/samba /var/lib/samba/private
cat > /tmp/smb.conf <<C
[global]
 server role = standalone server
 map to guest = Bad User
 interfaces = lo
 bind interfaces only = yes
[share]
 path = /tank/share
 read only = no
 guest ok = yes
 force user = root
C
smbd -D -s /tmp/smb.conf; sleep 2
sync; sleep 2
cat $K/tank/txgs > $O/zfs-watch-samba.txgs-before.txt
watch_start zfs-watch-samba /tank/share --comm smbd --until-idle 8
smbclient -s /tmp/smb.conf //127.0.0.1/share -N -c 'put /dev/shm/f.bin f.bin' \
  > $O/zfs-watch-samba.smbclient.txt 2>&1
watch_end zfs-watch-samba
GUEST

set +e
"$LAB/run.sh" --disk-mbps 40 --mem 4G --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
echo "zfs-watch: run.sh exit $rc; output in $OUT"
cat "$OUT/guest.log" 2>/dev/null || true
exit $rc
