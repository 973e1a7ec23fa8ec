#!/bin/bash
# bench-zfs.sh — `copyscope bench` on real OpenZFS 2.1 in the lab VM (../shared/lab/zfs-vm, see
# its README): the pool's disks throttled to --disk-mbps, the dataset's compression set with
# --compression (off or lz4). Tables and recordings go to OUT (default
# assets/bench-zfs-COMPRESSION). Zeros versus random data: on lz4 zeros take no space and fly,
# on off both go at the pool's speed.
#
# Usage: scripts/bench-zfs.sh [--compression off|lz4] [--out DIR] [--disk-mbps 40] [--mem 4G]
#                             [--size 1G] [--files 2000] [--tree-size 500M] [--timeout 1500]
# Env: COPYSCOPE_BIN (default $CARGO_TARGET_DIR/release/copyscope or target/release/copyscope),
#      ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
COMPRESSION=off OUT="" MBPS=40 MEM=4G SIZE=1G FILES=2000 TREE=500M TIMEOUT=1500
while [ $# -gt 0 ]; do
  case $1 in
    --compression) COMPRESSION=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --tree-size) TREE=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench-zfs: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$HERE/assets/bench-zfs-$COMPRESSION
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "bench-zfs: $BIN missing (cargo build --release)" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "bench-zfs: VM not built; run $LAB/build.sh" >&2; exit 2; }
# A share of our own, so parallel runs do not collide.
SHARE=$(mktemp -d "$LABDIR/copyscope-bench.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$BIN" "$SHARE/copyscope"
mkdir -p "$SHARE/out"
cat > "$SHARE/guest.sh" <<GUEST
set -u
zfs create tank/bench
zfs get -H -o property,value compression tank/bench > /host/out/compression.txt
COLUMNS=100 /host/copyscope bench /tank/bench --plain --size $SIZE --files $FILES \
  --tree-size $TREE --out /host/out/bench > /host/out/bench.out 2> /host/out/bench.err
echo \$? > /host/out/bench.rc
ls -la /tank/bench >> /host/out/bench.out
GUEST
"$LAB/run.sh" --mem "$MEM" --disk-mbps "$MBPS" --compression "$COMPRESSION" --timeout "$TIMEOUT" \
  --share "$SHARE" --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1 || true
rm -rf "$OUT"
mkdir -p "$OUT"
cp -r "$SHARE/out/bench/." "$OUT/" 2>/dev/null || true
cp "$SHARE/out/"{bench.out,bench.err,bench.rc,compression.txt,run.log} "$OUT/" 2>/dev/null || true
cat "$OUT/bench.out"
echo "exit: $(cat "$OUT/bench.rc" 2>/dev/null || echo none)"
