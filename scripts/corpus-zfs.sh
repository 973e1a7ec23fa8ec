#!/bin/bash
# corpus-zfs.sh — records the ZFS scenarios of the truth corpus (issue 9, docs/attribution.md)
# in one boot of the throwaway OpenZFS VM (../shared/lab/zfs-vm, see its README), pool `tank`
# write-throttled to 40 MB/s. In the guest, in this order:
#   1. ages the pool (zpool sync until `txgs` holds zfs_txg_history = 100 rows), as on a server
#      that has been up a while;
#   2. zfs-aged-bigfile:   1536 MiB of zeros from /dev/shm onto /tank (compression off);
#   3. zfs-tree-40mbps:    a tree of 1200 files of 512 KiB onto /tank;
#   4. zfs-zeros-lz4:      the 1536 MiB of zeros onto a dataset with compression=lz4 (nothing
#                          reaches the disks: no drop is the right answer);
#   5. zfs-sync-always:    256 MiB onto a dataset with sync=always (every write commits the ZIL).
#   6. zfs-sync-always-drop: 384 MiB onto the sync=always dataset; 6 s in, three dd's write
#                          64 MiB each into the same dataset (every write of theirs commits the
#                          ZIL too): the copy's zil_commit waits grow and it drops to ~a quarter.
#   7. zfs-throttle-64m:   the 1536 MiB of zeros onto /tank with zfs_dirty_data_max set to 64 MiB
#                          (restored afterwards): the write throttle (dmu_tx_delay) paces the
#                          copy hard, the share the writer-truth stacks check the budget's against.
#   8. zfs-watch-linkat:   `copyscope watch /tank/linkat --comm python3` beside a writer that
#                          places each of 120 files of 1 MiB by linkat of an O_TMPFILE (as
#                          copiers and editors that write safely do): OpenZFS's zfs_link waits
#                          a whole txg sync for each, the writer's own call, not the pool's rate.
# Scenarios can be chosen (the pool is aged only for the first three):
#   scripts/corpus-zfs.sh --bin … --tsampler … zfs-sync-always-drop
# Each copy runs `copyscope --plain --record NAME.jsonl` with the writer-truth sampler
# (../shared/lab/writer-truth/tsampler, static) beside it every 100 ms: NAME.truth.csv holds
# the copier's thread states and kernel stacks, the ground truth of what held it. The full
# `txgs` after each copy (NAME.txgs.txt) gives the txgs that really synced.
#
# Usage: scripts/corpus-zfs.sh --bin PATH/copyscope --tsampler PATH/tsampler [--out DIR]
#        [--timeout S]       (default out: target/corpus-zfs/<date>)
# Copy the results you keep into tests/fixtures/corpus/ (scripts/corpus-import.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
BIN="" TS="" OUT="" TIMEOUT=2400
SEL=()
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --tsampler) TS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "corpus-zfs: unknown argument $1" >&2; exit 2 ;;
    *) SEL+=("$1"); shift ;;
  esac
done
[ -x "$BIN" ] && [ -x "$TS" ] || { echo "corpus-zfs: --bin and --tsampler are required" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "corpus-zfs: VM not built; run $LAB/build.sh" >&2; exit 2; }
[ -n "$OUT" ] || OUT=$HERE/target/corpus-zfs/$(date -u +%Y%m%dT%H%M%SZ)
SHARE=$(mktemp -d "$LABDIR/corpus-zfs.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$BIN" "$SHARE/copyscope"
cp "$TS" "$SHARE/tsampler"
mkdir -p "$SHARE/out"
[ ${#SEL[@]} -gt 0 ] || SEL=(zfs-aged-bigfile zfs-tree-40mbps zfs-zeros-lz4 zfs-sync-always zfs-sync-always-drop
                              zfs-throttle-64m zfs-watch-linkat)
echo "${SEL[*]}" > "$SHARE/scenarios"

cat > "$SHARE/guest.sh" <<'GUEST'
set -u
O=/host/out
SC=" $(cat /host/scenarios) "
want() { case $SC in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
exec 2>>$O/guest.log
K=/proc/spl/kstat/zfs
uname -r > $O/uname.txt
cat /sys/module/zfs/version > $O/zfs-version.txt
for p in zfs_dirty_data_max zfs_dirty_data_sync_percent zfs_delay_min_dirty_percent \
         zfs_txg_timeout zfs_txg_history; do
  echo "$p $(cat /sys/module/zfs/parameters/$p)"
done > $O/params.txt
mount -o remount,size=2700m /dev/shm
dd if=/dev/zero of=/dev/shm/big bs=1M count=1536 status=none
if want zfs-tree-40mbps; then
  mkdir -p /dev/shm/tree
  for d in $(seq 1 12); do
    mkdir -p /dev/shm/tree/d$d
    for f in $(seq 1 100); do head -c 524288 /dev/shm/big > /dev/shm/tree/d$d/f$f; done
  done
fi
head -c $((256 << 20)) /dev/shm/big > /dev/shm/sync256
head -c $((384 << 20)) /dev/shm/big > /dev/shm/sync384
# Age the pool: the txgs kstat holds zfs_txg_history rows on a server that has been up a while.
if want zfs-aged-bigfile || want zfs-tree-40mbps || want zfs-zeros-lz4; then
  n=0
  while [ "$(wc -l < $K/tank/txgs)" -lt 101 ] && [ $n -lt 200 ]; do
    date > /tank/age; zpool sync tank; n=$((n + 1))
  done
  echo "aged with $n syncs: $(wc -l < $K/tank/txgs) lines in txgs" >> $O/guest.log
fi
zfs create -o compression=lz4 tank/lz4
zfs create -o sync=always tank/sync

run() {  # run NAME SRC DEST [COMMAND started beside the copy]
  local name=$1 src=$2 dst=$3 beside=${4:-}
  want "$name" || return 0
  sync; sleep 2
  cat $K/tank/txgs > $O/$name.txgs-before.txt
  date +%s.%N > $O/$name.start
  COLUMNS=100 /host/copyscope --plain --record $O/$name.jsonl "$src" "$dst" \
    > $O/$name.out 2> $O/$name.err &
  local pid=$!
  [ -z "$beside" ] || ( eval "$beside" ) &
  /host/tsampler $pid 100 tank vdb,vdc > $O/$name.truth.csv 2>/dev/null &
  local ts=$!
  wait $pid; echo $? > $O/$name.rc
  wait $ts
  wait  # the writer started beside the copy
  cat $K/tank/txgs > $O/$name.txgs.txt
  cat $K/dmu_tx > $O/$name.dmu_tx.txt
  cat $K/zil > $O/$name.zil.txt 2>/dev/null
  echo "$name: rc $(cat $O/$name.rc)" >> $O/guest.log
}
run zfs-aged-bigfile /dev/shm/big /tank/big
rm -f /tank/big
run zfs-tree-40mbps /dev/shm/tree /tank/tree
rm -rf /tank/tree
run zfs-zeros-lz4 /dev/shm/big /tank/lz4/big
run zfs-sync-always /dev/shm/sync256 /tank/sync/f
# Three more synchronous writers into the same dataset from 6 s: each of their writes commits
# the ZIL as well, so the copy waits longer in zil_commit (truth.csv) and drops.
run zfs-sync-always-drop /dev/shm/sync384 /tank/sync/f2 \
  'sleep 6; date +%s.%N > $O/zfs-sync-always-drop.dd-on
   for i in 1 2 3; do dd if=/dev/zero of=/tank/sync/other$i bs=1M count=64 status=none & done
   wait; date +%s.%N > $O/zfs-sync-always-drop.dd-off'
# A hand-set small dirty-data limit: the write throttle delays each transaction (dmu_tx_delay)
# long before a txg fills, as on a server tuned "to keep TXGs rolling".
if want zfs-throttle-64m; then
  P=/sys/module/zfs/parameters/zfs_dirty_data_max
  old=$(cat $P)
  echo $((64 << 20)) > $P
  run zfs-throttle-64m /dev/shm/big /tank/throttled
  echo "$old" > $P
  rm -f /tank/throttled
fi
# Another program placing its files by linkat of an O_TMPFILE, watched with its stacks.
if want zfs-watch-linkat; then
  mkdir -p /tank/linkat
  cat > /dev/shm/linkat.py <<'PY'
import ctypes, os, sys
# linkat(fd, "", AT_FDCWD, name, AT_EMPTY_PATH): os.link() calls link(2), which does not
# follow /proc/self/fd/N.
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000
d, n = sys.argv[1], int(sys.argv[2])
data = open("/dev/shm/big", "rb").read(1 << 20)
for i in range(n):
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o644)
    os.write(fd, data)
    if libc.linkat(fd, b"", AT_FDCWD, f"{d}/f{i:04d}".encode(), AT_EMPTY_PATH) != 0:
        raise OSError(ctypes.get_errno(), "linkat")
    os.close(fd)
PY
  sync; sleep 2
  cat $K/tank/txgs > $O/zfs-watch-linkat.txgs-before.txt
  COLUMNS=100 /host/copyscope watch /tank/linkat --comm python3 --until-idle 3 --plain \
    --record $O/zfs-watch-linkat.jsonl > $O/zfs-watch-linkat.out 2> $O/zfs-watch-linkat.err &
  w=$!
  sleep 2
  python3 /dev/shm/linkat.py /tank/linkat 120 &
  p=$!
  /host/tsampler $p 100 tank vdb,vdc > $O/zfs-watch-linkat.truth.csv 2>/dev/null &
  wait $p; wait $w; echo $? > $O/zfs-watch-linkat.rc
  wait
  cat $K/tank/txgs > $O/zfs-watch-linkat.txgs.txt
  echo "zfs-watch-linkat: rc $(cat $O/zfs-watch-linkat.rc)" >> $O/guest.log
  rm -rf /tank/linkat
fi
zfs get -H compressratio,sync tank/lz4 tank/sync >> $O/guest.log
GUEST

set +e
"$LAB/run.sh" --disk-mbps 40 --mem 5G --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
echo "corpus-zfs: run.sh exit $rc; output in $OUT"
cat "$OUT/guest.log" 2>/dev/null || true
exit $rc
