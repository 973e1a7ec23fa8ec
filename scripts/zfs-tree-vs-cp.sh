#!/bin/bash
# zfs-tree-vs-cp.sh — trees onto real OpenZFS 2.1 (the lab VM of ../shared/lab/zfs-vm, see its
# README): on the same aged pool, write-throttled to --disk-mbps, a tree of --files files
# (4 KiB–4 MiB, log-uniform, seeded) in guest RAM is copied by `cp -r && sync` and by
# `copyscope --plain --record` (which ends with syncfs), in rotating order for --rounds rounds,
# each into a fresh dataset. Then one --big-mib file is copied by copyscope with the lab's
# writer-truth sampler beside it, to show whether the copy waited in linkat/zfs_link.
# Prints the wall times and their ratio per round, copyscope's verdict, and the share of the
# writer's samples in txg_wait_synced under zfs_link. Everything lands in --out.
#
# Usage: scripts/zfs-tree-vs-cp.sh [--out DIR] [--disk-mbps 20] [--files 2000] [--rounds 1]
#                                  [--big-mib 1536] [--mem 4G] [--timeout 3000]
# Env: COPYSCOPE_BIN (default $CARGO_TARGET_DIR/release/copyscope or target/release/copyscope),
#      ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT="" MBPS=20 FILES=2000 ROUNDS=1 BIG=1536 MEM=4G TIMEOUT=3000
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --big-mib) BIG=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "zfs-tree-vs-cp: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$HERE/target/zfs-tree-vs-cp/$(date -u +%Y%m%dT%H%M%SZ)-${MBPS}mbps
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "zfs-tree-vs-cp: $BIN missing (cargo build --release)" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-tree-vs-cp: VM not built; run $LAB/build.sh" >&2; exit 2; }
TRUTH_SRC=$HERE/../shared/lab/writer-truth/tsampler.c
SHARE=$(mktemp -d "$LABDIR/copyscope-tree.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$BIN" "$SHARE/copyscope"
cp "$HERE/scripts/make-tree.py" "$SHARE/"
if [ -f "$TRUTH_SRC" ]; then
  gcc -O2 -static -o "$SHARE/tsampler" "$TRUTH_SRC"
fi
mkdir -p "$SHARE/out"

cat > "$SHARE/guest.sh" <<GUEST
set -u
O=/host/out
exec 2>>\$O/guest.log
K=/proc/spl/kstat/zfs
cat /sys/module/zfs/version > \$O/zfs-version.txt
# The binary from the guest's own disk, as cp is: loading 70 MB over the 9p share under
# emulation takes seconds that are not the copy's.
cp /host/copyscope /usr/local/bin/copyscope
# A server that has been up a while: a full txgs history.
while [ "\$(wc -l < \$K/tank/txgs)" -lt 101 ]; do date > /tank/age; zpool sync tank; done
rm -f /tank/age
mount -o remount,size=$((BIG + 2560))m /dev/shm
# The tree: 4 KiB .. 4 MiB, log-uniform, seeded.
python3 - /dev/shm/src $FILES <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
block = os.urandom(4 << 20)
for i in range(n):
    d = os.path.join(root, f"d{i % 40:02d}", f"s{(i // 40) % 5}")
    os.makedirs(d, exist_ok=True)
    size = int(2 ** rng.uniform(12, 22))
    off = rng.randrange(0, (4 << 20) - size + 1)
    with open(os.path.join(d, f"f{i:05d}.bin"), "wb") as f:
        f.write(block[off:off + size])
PY
du -sb /dev/shm/src > \$O/tree-size.txt
find /dev/shm/src -type f | wc -l >> \$O/tree-size.txt
now() { date +%s.%N; }
run_cp() {
  zfs create tank/cp\$1
  t0=\$(now); cp -r /dev/shm/src /tank/cp\$1/ && sync; t1=\$(now)
  echo "round \$1 cp \$(echo "\$t1 - \$t0" | bc)" >> \$O/times.txt
  zfs destroy tank/cp\$1
}
run_cs() {
  zfs create tank/cs\$1
  t0=\$(now)
  COLUMNS=100 /usr/local/bin/copyscope --plain --record \$O/tree-\$1.jsonl /dev/shm/src /tank/cs\$1/ \
    > \$O/tree-\$1.out 2> \$O/tree-\$1.err
  echo \$? > \$O/tree-\$1.rc
  t1=\$(now)
  echo "round \$1 copyscope \$(echo "\$t1 - \$t0" | bc)" >> \$O/times.txt
  ls -a /tank/cs\$1 /tank/cs\$1/src | grep -c copyscope > \$O/leftovers-\$1.txt || true
  diff -r /dev/shm/src /tank/cs\$1/src > \$O/diff-\$1.txt 2>&1; echo "diff rc \$?" >> \$O/diff-\$1.txt
  zfs destroy tank/cs\$1
}
for r in \$(seq 1 $ROUNDS); do
  if [ \$((r % 2)) = 1 ]; then run_cp \$r; run_cs \$r; else run_cs \$r; run_cp \$r; fi
done
rm -rf /dev/shm/src
# One big file, with the writer's kernel stacks sampled beside it.
dd if=/dev/zero of=/dev/shm/big bs=1M count=$BIG 2>/dev/null
zfs create tank/big
COLUMNS=100 /usr/local/bin/copyscope --plain --record \$O/big.jsonl /dev/shm/big /tank/big/ \
  > \$O/big.out 2> \$O/big.err &
pid=\$!
if [ -x /host/tsampler ]; then /host/tsampler \$pid 100 tank vdb,vdc > \$O/big-truth.csv 2>/dev/null & fi
wait \$pid; echo \$? > \$O/big.rc
sleep 0.3
cat \$K/tank/txgs > \$O/txgs-after.txt
GUEST

set +e
"$LAB/run.sh" --disk-mbps "$MBPS" --mem "$MEM" --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
echo "zfs-tree-vs-cp: run.sh exit $rc; tree: $(tr '\n' ' ' < "$OUT/tree-size.txt" 2>/dev/null)"
while read -r _ round tool secs; do
  echo "round $round $tool ${secs} s"
done < "$OUT/times.txt" 2>/dev/null || true
for r in $(seq 1 "$ROUNDS"); do
  cp_s=$(awk -v r="$r" '$2==r && $3=="cp" {print $4}' "$OUT/times.txt" 2>/dev/null)
  cs_s=$(awk -v r="$r" '$2==r && $3=="copyscope" {print $4}' "$OUT/times.txt" 2>/dev/null)
  [ -n "$cp_s" ] && [ -n "$cs_s" ] && echo "round $r: copyscope / (cp -r && sync) = $(echo "scale=2; $cs_s / $cp_s" | bc)"
  echo "round $r: copyscope exit $(cat "$OUT/tree-$r.rc" 2>/dev/null), $(tail -n1 "$OUT/diff-$r.txt" 2>/dev/null), leftovers $(cat "$OUT/leftovers-$r.txt" 2>/dev/null)"
  grep -E "verdict|done:" "$OUT/tree-$r.out" 2>/dev/null | sed "s/^/  round $r: /" || true
done
echo "big file: exit $(cat "$OUT/big.rc" 2>/dev/null)"; grep -E "verdict|done:" "$OUT/big.out" 2>/dev/null || true
if [ -s "$OUT/big-truth.csv" ]; then
  total=$(tail -n +2 "$OUT/big-truth.csv" | wc -l)
  link=$(grep -c "zfs_link" "$OUT/big-truth.csv" || true)
  echo "big file: writer-truth samples $total, with zfs_link on a stack: $link"
fi
echo "zfs-tree-vs-cp: output in $OUT"
exit $rc
