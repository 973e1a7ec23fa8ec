#!/bin/bash
# zfs-pace-check.sh — `--pace auto` on real OpenZFS 2.1 (the lab VM of ../shared/lab/zfs-vm,
# see its README), the seed's case: one --mb MiB file from guest RAM onto the aged pool,
# write-throttled to --disk-mbps, while a Samba client on the guest's loopback puts a
# --client-mb MiB file (4) into the same pool every --client-every s (0.5): a NAS's other user. The copy runs unpaced, then with
# --pace auto, each into a fresh dataset. Prints for each: the copy's end, its drops, the
# longest stretch it handed over no byte, and the Samba client's slowest put — the issue's
# targets: no drop below half the sustained rate, no writer stall over 1 s, the end within
# 10 % of the unpaced run's, and no client stall over 2 s.
#
# Usage: scripts/zfs-pace-check.sh [--out DIR] [--disk-mbps 20] [--mb 1536] [--mem 4G]
#        [--client-mb 4] [--client-every 0.5]
# Env: COPYSCOPE_BIN, ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (/var/tmp/zfs-lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT="" MBPS=20 MB=1536 MEM=4G TIMEOUT=2400 CLIENT_MB=4 CLIENT_EVERY=0.5
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --client-mb) CLIENT_MB=$2; shift 2 ;;
    --client-every) CLIENT_EVERY=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "zfs-pace-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$HERE/target/zfs-pace-check/$(date -u +%Y%m%dT%H%M%SZ)
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "zfs-pace-check: $BIN missing (cargo build --release)" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-pace-check: VM not built; run $LAB/build.sh" >&2; exit 2; }
SHARE=$(mktemp -d "$LABDIR/copyscope-pace.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$BIN" "$SHARE/copyscope"
mkdir -p "$SHARE/out"
cat > "$SHARE/guest.sh" <<GUEST
set -u
O=/host/out
exec 2>>\$O/guest.log
K=/proc/spl/kstat/zfs
cp /host/copyscope /usr/local/bin/
while [ "\$(wc -l < \$K/tank/txgs)" -lt 101 ]; do date > /tank/age; zpool sync tank; done
rm -f /tank/age
mount -o remount,size=$((MB + 300))m /dev/shm
dd if=/dev/zero of=/dev/shm/big bs=1M count=$MB status=none
dd if=/dev/zero of=/dev/shm/small bs=1M count=$CLIENT_MB status=none
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
for p in zfs_dirty_data_max zfs_dirty_data_sync_percent zfs_delay_min_dirty_percent zfs_txg_timeout; do
  echo "\$p \$(cat /sys/module/zfs/parameters/\$p)"
done > \$O/params.txt
# The Samba client: a $CLIENT_MB MiB put every $CLIENT_EVERY s, each one's wall time in ms.
client() {
  i=0
  while [ ! -e /tmp/stop-client ]; do
    t0=\$(date +%s%N)
    smbclient -s /tmp/smb.conf //127.0.0.1/share -N -c "put /dev/shm/small c\$((i % 4)).bin" \
      > /dev/null 2>&1
    t1=\$(date +%s%N)
    echo "\$(( (t0 / 1000000) )) \$(( (t1 - t0) / 1000000 ))" >> \$O/\$1.client.txt
    i=\$((i + 1))
    sleep $CLIENT_EVERY
  done
}
run() {  # run NAME [copyscope options]
  local name=\$1; shift
  zfs create tank/\$name
  sync; sleep 2
  rm -f /tmp/stop-client
  client \$name &
  cpid=\$!
  sleep 3
  t0=\$(date +%s.%N)
  COLUMNS=100 copyscope --plain "\$@" --record \$O/\$name.jsonl /dev/shm/big /tank/\$name/ \
    > \$O/\$name.out 2>&1
  echo \$? > \$O/\$name.rc
  t1=\$(date +%s.%N)
  echo "\$name \$(echo "\$t1 - \$t0" | bc)" >> \$O/times.txt
  sleep 3
  touch /tmp/stop-client; wait \$cpid
  zfs destroy tank/\$name
}
run unpaced
run paced --pace auto
GUEST
set +e
"$LAB/run.sh" --disk-mbps "$MBPS" --mem "$MEM" --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
for m in unpaced paced; do
  "$SHARE/copyscope" replay --json "$OUT/$m.jsonl" > "$OUT/$m.json" 2>/dev/null || true
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
times = dict(l.split() for l in open(f"{out}/times.txt"))
for m in ("unpaced", "paced"):
    samples = [json.loads(l) for l in open(f"{out}/{m}.jsonl")]
    samples = [(d["t_ns"] / 1e9, d["engine"]["bytes_copied"]) for d in samples if d.get("type") == "sample"]
    last = max(b for _, b in samples)
    stall, since = 0.0, None
    for (t, b), (t2, b2) in zip(samples, samples[1:]):
        if b == 0 or b >= last or b2 != b:
            since = None
            continue
        since = t if since is None else since
        stall = max(stall, t2 - since)
    drops = sum(1 for l in open(f"{out}/{m}.json") if '"kind":"drop"' in l)
    puts = [int(l.split()[1]) for l in open(f"{out}/{m}.client.txt")]
    verdict = [json.loads(l) for l in open(f"{out}/{m}.json")][-1].get("verdict", {}).get("text", "")
    print(f"{m:<8} end {float(times[m]):6.1f} s  drops {drops:2d}  longest writer stall {stall:4.1f} s  "
          f"client puts {len(puts)}, slowest {max(puts) / 1000:.1f} s, over 2 s: {sum(p > 2000 for p in puts)}")
    print(f"  verdict: {verdict}")
print(f"end paced / unpaced: {float(times['paced']) / float(times['unpaced']):.2f}")
PY
echo "zfs-pace-check: run.sh exit $rc; output in $OUT"
exit $rc
