#!/bin/bash
# zfs-samba-stalls.sh — the home-server case on real OpenZFS 2.1 (the lab VM of
# ../shared/lab/zfs-vm, see its README): smbd on the guest's loopback serving /tank/share,
# `smbclient put` of --mb MB from guest RAM, `copyscope watch /tank/share --comm smbd --plain
# --record` beside it, and the lab's writer-truth sampler on the smbd process that serves the
# upload. The pool is aged (a full txgs history) and write-throttled to each --disk-mbps given.
# scripts/zfs-samba-check.py then checks that every stall the truth sampler saw (≥ 1 s with
# smbd in a txg wait and its wchar still) is a drop naming a txg, that the watch's intake is
# within 5 % of smbclient's own rate, and that the uploaded file is the one shown.
#
# Usage: scripts/zfs-samba-stalls.sh [--out DIR] [--disk-mbps "20 6"] [--mb 600] [--mem 4G]
# Env: COPYSCOPE_BIN, ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (/var/tmp/zfs-lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT="" RATES="20 6" MB=600 MEM=4G TIMEOUT=1800
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) RATES=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "zfs-samba-stalls: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$HERE/target/zfs-samba-stalls/$(date -u +%Y%m%dT%H%M%SZ)
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "zfs-samba-stalls: $BIN missing (cargo build --release)" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-samba-stalls: VM not built; run $LAB/build.sh" >&2; exit 2; }
rc_all=0
for MBPS in $RATES; do
  SHARE=$(mktemp -d "$LABDIR/copyscope-samba.XXXXXX")
  cp "$BIN" "$SHARE/copyscope"
  gcc -O2 -static -o "$SHARE/tsampler" "$HERE/../shared/lab/writer-truth/tsampler.c"
  mkdir -p "$SHARE/out"
  cat > "$SHARE/guest.sh" <<GUEST
set -u
O=/host/out
exec 2>>\$O/guest.log
K=/proc/spl/kstat/zfs
cp /host/copyscope /host/tsampler /usr/local/bin/
while [ "\$(wc -l < \$K/tank/txgs)" -lt 101 ]; do date > /tank/age; zpool sync tank; done
rm -f /tank/age
mount -o remount,size=$((MB + 300))m /dev/shm
dd if=/dev/zero of=/dev/shm/f.bin bs=1M count=$MB status=none
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
sync; sleep 1
for p in zfs_dirty_data_max zfs_dirty_data_sync_percent zfs_txg_timeout; do
  echo "\$p \$(cat /sys/module/zfs/parameters/\$p)"
done > \$O/params.txt
before=\$(pgrep -x smbd | sort | tr '\n' ' ')
COLUMNS=100 copyscope watch /tank/share --comm smbd --until-idle 8 --plain --record \$O/watch.jsonl \
  > \$O/watch.out 2> \$O/watch.err &
wpid=\$!
sleep 2
smbclient -s /tmp/smb.conf //127.0.0.1/share -N -c 'put /dev/shm/f.bin f.bin' > \$O/smbclient.txt 2>&1 &
cpid=\$!
# The smbd that serves this connection is the one that was not there before.
for i in \$(seq 1 100); do
  child=\$(pgrep -x smbd | sort | while read -r p; do case " \$before " in *" \$p "*) ;; *) echo \$p ;; esac; done | tail -n1)
  [ -n "\$child" ] && break
  sleep 0.05
done
echo "smbd child \${child:-none}" >> \$O/guest.log
[ -n "\${child:-}" ] && tsampler \$child 100 tank vdb,vdc > \$O/truth.csv 2>/dev/null &
wait \$cpid; echo \$? > \$O/smbclient.rc
wait \$wpid; echo \$? > \$O/watch.rc
cat \$K/tank/txgs > \$O/txgs-after.txt
ls -l /tank/share >> \$O/guest.log
GUEST
  set +e
  "$LAB/run.sh" --disk-mbps "$MBPS" --mem "$MEM" --share "$SHARE" --timeout "$TIMEOUT" -v \
    --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
  rc=$?
  set -e
  mkdir -p "$OUT/$MBPS"
  cp -r "$SHARE/out/." "$OUT/$MBPS/"
  rm -rf "$SHARE"
  echo "== pool at $MBPS MB/s (run.sh exit $rc)"
  python3 "$HERE/scripts/zfs-samba-check.py" "$OUT/$MBPS" || rc_all=1
done
echo "zfs-samba-stalls: output in $OUT"
exit $rc_all
