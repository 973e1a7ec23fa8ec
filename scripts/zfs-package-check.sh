#!/bin/bash
# zfs-package-check.sh — the Debian package on real ZFS: boots the throwaway OpenZFS VM of
# ../shared/lab/zfs-vm (Debian 12, OpenZFS 2.1; see its README) with the pool write-throttled,
# and in the guest
#   1. `dpkg -i /host/copyscope_*.deb` — the package, not a loose binary — and
#      `copyscope --version`, `dpkg -L copyscope`;
#   2. writes a tree of SIZE MiB of zeros in FILES files into /dev/shm (the pool has compression
#      off, so zeros are really written; /dev/urandom is too slow under emulation);
#   3. `copyscope --plain /dev/shm/src /tank/dst`: the pool disk is the bottleneck, so txgs
#      sync during the copy and copyscope reports them; then `cmp` of every file and the txgs
#      kstat rows the copy produced.
# The guest's transcript (every command, then its output) goes to OUT/guest.out and to stdout;
# run.sh's setup log and timings to OUT/run.log. The .deb is the newest
# $CARGO_TARGET_DIR/debian/copyscope_*.deb unless DEB is given (scripts/package.sh makes it).
#
# Usage: scripts/zfs-package-check.sh [--out DIR] [--disk-mbps 40] [--size-mib 1200]
#                                     [--files 3] [--mem 4G] [--timeout S] [DEB]
# Env: ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab)
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT="" DEB=""
MBPS=40 SIZE_MIB=1200 FILES=3 MEM=4G TIMEOUT=900
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "zfs-package-check: unknown option $1" >&2; exit 2 ;;
    *) DEB=$1; shift ;;
  esac
done
if [ -z "$DEB" ]; then
  DEB=$(ls -t "${CARGO_TARGET_DIR:-$HERE/target}"/debian/copyscope_*.deb 2>/dev/null | head -n1)
fi
[ -f "$DEB" ] || { echo "zfs-package-check: no .deb (run scripts/package.sh, or pass DEB)" >&2; exit 2; }
[ -x "$LAB/run.sh" ] || { echo "zfs-package-check: $LAB/run.sh missing" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-package-check: VM not built; run $LAB/build.sh" >&2; exit 2; }
[ -n "$OUT" ] || OUT=$HERE/target/zfs-package-check/$(date -u +%Y%m%dT%H%M%SZ)-${MBPS}mbps
PER_FILE=$((SIZE_MIB / FILES))

# A share of our own (mounted as /host), so parallel runs and other users of the lab's
# default share do not collide.
SHARE=$(mktemp -d "$LABDIR/copyscope-pkg.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$DEB" "$SHARE/"

cat > "$SHARE/guest.sh" <<GUEST
set -u
K=/proc/spl/kstat/zfs
# Prints the command, then runs it (the transcript shows what produced each output).
run() { echo "+ \$*"; "\$@"; }
echo "== guest: \$(uname -r), zfs \$(cat /sys/module/zfs/version), pool:"
zpool list -H -o name,size,health tank
for p in zfs_dirty_data_max zfs_dirty_data_sync_percent zfs_txg_timeout; do
  echo "   \$p = \$(cat /sys/module/zfs/parameters/\$p)"
done
echo "== 1. install the package"
run dpkg -i /host/$(basename "$DEB") || exit 1
echo "+ dpkg -s copyscope | grep -E '^(Status|Version|Depends):'"
dpkg -s copyscope | grep -E '^(Status|Version|Depends):'
run copyscope --version
echo "+ dpkg -L copyscope | grep -E 'bin/|man1/|completions/|vendor.*/'"
dpkg -L copyscope | grep -E 'bin/|man1/|completions/|vendor.*/'
echo "== 2. source: $FILES files of $PER_FILE MiB of zeros in /dev/shm/src"
mount -o remount,size=$((SIZE_MIB + 256))m /dev/shm
mkdir -p /dev/shm/src
for i in \$(seq 1 $FILES); do
  dd if=/dev/zero of=/dev/shm/src/zero\$i.bin bs=1M count=$PER_FILE status=none
done
du -sh --apparent-size /dev/shm/src
txg_before=\$(awk 'NR > 1 { last = \$1 } END { print last }' \$K/tank/txgs)
echo "== 3. copy onto the pool (throttled to $MBPS MB/s), open txg before: \$txg_before"
t0=\$(date +%s.%N)
run env COLUMNS=100 copyscope --plain /dev/shm/src /tank/dst
rc=\$?
t1=\$(date +%s.%N)
echo "copyscope exit status \$rc, wall time \$(echo "\$t1 - \$t0" | bc) s"
for i in \$(seq 1 $FILES); do
  cmp /dev/shm/src/zero\$i.bin /tank/dst/zero\$i.bin || rc=1
done
[ \$rc = 0 ] && echo "cmp: all $FILES files identical"
echo "== txgs the copy went through (kstat rows from txg \$txg_before on; ndirty in bytes, times in ns)"
awk -v from="\$txg_before" 'NR == 1 || \$1 >= from' \$K/tank/txgs \\
  | awk '{ printf "%-6s %-6s %-12s %-12s %-12s %s\n", \$1, \$3, \$4, \$6, \$11, \$12 }' \\
  | sed '1s/.*/txg    state  ndirty       nwritten     wtime        stime/'
exit \$rc
GUEST

set +e
"$LAB/run.sh" --disk-mbps "$MBPS" --mem "$MEM" --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/guest.out" 2> "$SHARE/run.log"
rc=$?
set -e
mkdir -p "$OUT"
cp "$SHARE/guest.out" "$SHARE/run.log" "$OUT/"
cat "$OUT/guest.out"
echo "zfs-package-check: run.sh exit $rc; output in $OUT" >&2
exit $rc
