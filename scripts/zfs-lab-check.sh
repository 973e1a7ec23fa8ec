#!/bin/bash
# zfs-lab-check.sh — reproduces copyscope's ZFS signal check on real OpenZFS in the
# throwaway VM of ../shared/lab/zfs-vm (see its README): builds the release sample_dump
# example, boots the VM with the pool write-throttled, and in the guest
#   1. captures fixture trees (txgs, dmu_tx, arcstats, objset, all parameters, mountinfo with
#      the zfs line, `zpool list -vHP`, /sys block graph incl. a dm-linear device, diskstats)
#      before the load and while it runs (txgs in O/S/C states);
#   2. runs `sample_dump --dest /tank --write-bytes SIZE`, which writes zeros into the pool
#      while sampling every 100 ms, printing Samples as JSON lines.
# Output goes to OUTDIR (default target/zfs-lab/<date>): samples.jsonl, fixtures/{before,during}/,
# txgs-during/, zpool-list-vHP.txt, guest.log.
#
# Usage: scripts/zfs-lab-check.sh [--out DIR] [--disk-mbps N] [--size 800M] [--seconds 40] [--no-build]
# Env: ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab)
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT=$HERE/target/zfs-lab/$(date -u +%Y%m%dT%H%M%SZ)
MBPS=40 SIZE=800M SECONDS_=40 BUILD=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --seconds) SECONDS_=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "zfs-lab-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$LAB/run.sh" ] || { echo "zfs-lab-check: $LAB/run.sh missing" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-lab-check: VM not built; run $LAB/build.sh" >&2; exit 2; }

if [ $BUILD = 1 ]; then
  (cd "$HERE" && cargo build --release --example sample_dump)
fi
# A share of our own, so parallel runs and other users of the default share do not collide.
SHARE=$(mktemp -d "$LABDIR/copyscope-share.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$HERE/target/release/examples/sample_dump" "$SHARE/"
cp "$HERE/tests/fixtures/linux-host/capture.py" "$SHARE/"
mkdir -p "$SHARE/out"

cat > "$SHARE/guest.sh" <<GUEST
set -u
exec 2>>/host/out/guest.log
O=/host/out
cd /host
uname -r > \$O/uname.txt; cat /sys/module/zfs/version > \$O/zfs-version.txt
# A dm-linear device on a partitioned loop file, so the /sys graph has dm -> partition -> disk.
modprobe loop 2>/dev/null; modprobe dm-mod 2>/dev/null
truncate -s 64M /tmp/dm.img
python3 - <<'PY'
import struct
f = open('/tmp/dm.img', 'r+b'); m = bytearray(512)
m[446:462] = struct.pack('<B3sB3sII', 0, b'\0\0\0', 0x83, b'\0\0\0', 2048, 64*2048 - 2048)
m[510], m[511] = 0x55, 0xaa; f.write(m); f.close()
PY
L=\$(losetup -fP --show /tmp/dm.img); sleep 1
[ -e \${L}p1 ] || partx -a \$L
dmsetup create cs-linear --table "0 \$(blockdev --getsz \${L}p1) linear \${L}p1 0" && \
  mkfs.ext4 -q /dev/mapper/cs-linear && mkdir -p /mnt/dm && mount /dev/mapper/cs-linear /mnt/dm
zpool list -vHP > \$O/zpool-list-vHP.txt
zpool list -vHP tank > \$O/zpool-list-vHP-tank.txt
python3 capture.py \$O/fixtures/before tank
mkdir -p \$O/txgs-during
( for i in \$(seq 1 40); do sleep 0.7; cp /proc/spl/kstat/zfs/tank/txgs \$O/txgs-during/\$i.txt 2>/dev/null || true; done ) &
( sleep 4; python3 capture.py \$O/fixtures/during tank ) &
./sample_dump --dest /tank --source /mnt/dm --write-bytes $SIZE --seconds $SECONDS_ > \$O/samples.jsonl
wait
python3 capture.py \$O/fixtures/after tank
GUEST

"$LAB/run.sh" --disk-mbps "$MBPS" --share "$SHARE" --timeout 600 -v --script "$SHARE/guest.sh"
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
# A short summary of what the sampler saw, so a run can be judged at a glance.
python3 - "$OUT/samples.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
env = lines[0]["environment"]
s = [l for l in lines if "t_ns" in l]
stats = lines[-1].get("sampler_stats", {})
z0, z1 = s[0]["zfs"], s[-1]["zfs"]
first = {r["txg"] for r in z0["txgs"] if r["state"] == "C"}
done = {}
for x in s:
    for r in x["zfs"]["txgs"]:
        if r["state"] == "C" and r["txg"] not in first:
            done[r["txg"]] = r
print(f"pool {env['zfs_pool']} disks {env['dest_disks']} notes {env['notes']}")
print(f"{len(s)} samples over {s[-1]['t_ns']/1e9:.1f} s; wrote {s[-1]['engine']['bytes_copied']>>20} MiB")
print(f"dmu_tx_dirty_delay +{z1['dmu_tx']['dirty_delay']-z0['dmu_tx']['dirty_delay']}, over_max +{z1['dmu_tx']['dirty_over_max']-z0['dmu_tx']['dirty_over_max']}")
for t, r in sorted(done.items()):
    print(f"  txg {t}: ndirty {r['ndirty']>>20} MiB, nwritten {r['nwritten']>>20} MiB, stime {r['stime']/1e9:.2f} s")
print(f"sampler (emulated guest): {stats}")
PY
echo "zfs-lab-check: output in $OUT"
