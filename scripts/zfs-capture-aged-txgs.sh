#!/usr/bin/env bash
# zfs-capture-aged-txgs.sh — captures the `txgs` kstat of a pool that has been up long enough
# for its history to be full (zfs_txg_history rows, ~14 KB: several pages), as every real
# server shows, into tests/fixtures/zfs-2.1/aged-pool/. Needs the ZFS lab VM
# (../shared/lab/zfs-vm, built); not run in CI.
#
# Usage: scripts/zfs-capture-aged-txgs.sh [LAB_DIR]   (default ../shared/lab/zfs-vm)
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${1:-$HERE/../shared/lab/zfs-vm}
OUT=$HERE/tests/fixtures/zfs-2.1/aged-pool
mkdir -p "$OUT"
# shellcheck disable=SC2016 # expanded in the guest
"$LAB/run.sh" --timeout 600 -- '
set -e
T=/proc/spl/kstat/zfs/tank/txgs
# Age the pool: every zpool sync commits one txg; a little data makes the rows non-trivial.
i=0
while [ "$(wc -l < $T)" -lt 101 ] || [ $i -lt 120 ]; do
  dd if=/dev/urandom of=/tank/age bs=64k count=$((i % 7 + 1)) status=none
  zpool sync tank; i=$((i + 1))
done
echo "## rows after $i syncs: $(($(wc -l < $T) - 1)), bytes: $(wc -c < $T)"
# cat reads to EOF; the one-read() view below is what the old reader saw.
cat $T > /tmp/txgs
python3 -c "import os; f=os.open(\"$T\", os.O_RDONLY); print(len(os.read(f, 65536)))" > /tmp/one-read
echo "## bytes returned by one read(): $(cat /tmp/one-read)"
echo "## txgs"; cat /tmp/txgs
' > "$OUT/capture.log"
sed -n '/^## txgs$/,$p' "$OUT/capture.log" | tail -n +2 > "$OUT/txgs"
grep '^## ' "$OUT/capture.log"
echo "wrote $OUT/txgs ($(wc -l < "$OUT/txgs") lines)"
