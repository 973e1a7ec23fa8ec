#!/bin/bash
# zfs-pipeline-check.sh — `copyscope watch --pipeline` on a replication on real OpenZFS 2.1
# (the lab VM of ../shared/lab/zfs-vm, see its README): a --mb MiB dataset sent with
# `zfs send | zfs recv` into the same pool, write-throttled to --disk-mbps (the receiving
# pool should limit it), then `zfs send | gzip | gunzip | zfs recv` (the compressor, on the
# emulated CPU, should); with --ssh also `zfs send | ssh localhost zfs recv`, watched from both
# ends (the sender's pipeline `zfs send | ssh` and the receiver's `sshd | zfs recv`: the TCP
# connection between them is no pipe, so each end is a pipeline of its own; the guest needs
# sshd: scripts/zfs-lab-add-packages.sh). Beside each watch a plain sampler reads every stage's kernel stack every
# 200 ms, independently of copyscope. Prints each case's verdict, the stages' figures and the
# sampler's top frames per stage.
#
# Usage: scripts/zfs-pipeline-check.sh [--out DIR] [--disk-mbps 20] [--mb 300] [--mem 4G] [--ssh]
# Env: COPYSCOPE_BIN, ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (/var/tmp/zfs-lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
OUT="" MBPS=20 MB=300 MEM=4G TIMEOUT=2400 SSH=0
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --disk-mbps) MBPS=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --ssh) SSH=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "zfs-pipeline-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$HERE/target/zfs-pipeline-check/$(date -u +%Y%m%dT%H%M%SZ)
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "zfs-pipeline-check: $BIN missing (cargo build --release)" >&2; exit 2; }
[ -e "$LABDIR/root.img" ] || { echo "zfs-pipeline-check: VM not built; run $LAB/build.sh" >&2; exit 2; }
SHARE=$(mktemp -d "$LABDIR/copyscope-pipeline.XXXXXX")
trap 'rm -rf "$SHARE"' EXIT
cp "$BIN" "$SHARE/copyscope"
mkdir -p "$SHARE/out"
cat > "$SHARE/guest.sh" <<GUEST
set -u
O=/host/out
exec 2>>\$O/guest.log
cp /host/copyscope /usr/local/bin/
zfs create -o compression=off tank/src
# Incompressible data (compression off; one 16 MiB chunk made in RAM, as urandom is slow
# under emulation, repeated: nothing on the way dedups).
dd if=/dev/urandom of=/dev/shm/chunk bs=1M count=16 status=none
for i in \$(seq 1 \$(( $MB / 16 ))); do cat /dev/shm/chunk; done > /tank/src/data
zpool sync tank
zfs snapshot tank/src@s
sampler() {  # every stage's stacks every 200 ms until the pipeline is gone
  while pgrep -x zfs >/dev/null; do
    for p in \$(pgrep -x zfs) \$(pgrep -x gzip) \$(pgrep -x gunzip) \$(pgrep -x ssh) \$(pgrep -x sshd); do
      c=\$(cat /proc/\$p/comm 2>/dev/null) || continue
      a=\$(tr '\0' ' ' < /proc/\$p/cmdline 2>/dev/null | cut -c1-20)
      for t in /proc/\$p/task/*; do
        f=\$(grep -v -e schedule -e '^\[<0>\] __' -e entry_SYSCALL -e do_syscall \$t/stack 2>/dev/null | head -1 | sed 's/.*\] //; s/+.*//')
        s=\$(awk '{print \$3}' \$t/stat 2>/dev/null)
        echo "\$c|\$a|\$s|\${f:-running}"
      done
    done
    sleep 0.2
  done
}
run() {  # run NAME PIPELINE: starts it, watches it to its end, samples it meanwhile
  zfs destroy -r tank/\$1 2>/dev/null
  ( eval "\$2" ) &
  sleep 1
  pid=\$(pgrep -f "zfs recv" | head -1)
  sampler > \$O/\$1.truth.txt &
  copyscope watch /tank --plain --pipeline \$pid --duration 900 --record \$O/\$1.jsonl > \$O/\$1.out 2>&1
  wait
}
run_ssh() {  # both ends of zfs send | ssh localhost zfs recv, each watched as a pipeline
  mkdir -p /run/sshd /root/.ssh
  ssh-keygen -A >/dev/null
  [ -f /root/.ssh/id_ed25519 ] || ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519
  cat /root/.ssh/id_ed25519.pub >> /root/.ssh/authorized_keys
  /usr/sbin/sshd -o ListenAddress=127.0.0.1 -o PermitRootLogin=prohibit-password
  zfs destroy -r tank/ssh 2>/dev/null
  ( zfs send tank/src@s | ssh -o StrictHostKeyChecking=no -o BatchMode=yes localhost zfs recv tank/ssh ) &
  for i in \$(seq 1 100); do pgrep -xf "zfs recv tank/ssh" >/dev/null && break; sleep 0.2; done
  send=\$(pgrep -f "zfs send tank/src" | head -1)
  recv=\$(pgrep -xf "zfs recv tank/ssh" | head -1)
  echo "sender \$send receiver \$recv" >> \$O/guest.log
  sampler > \$O/ssh.truth.txt &
  copyscope watch /tank --plain --pipeline \$recv --duration 900 --record \$O/ssh-recv.jsonl > \$O/ssh-recv.out 2>&1 &
  copyscope watch /tank --plain --pipeline \$send --duration 900 --record \$O/ssh.jsonl > \$O/ssh.out 2>&1
  wait
}
run local "zfs send tank/src@s | zfs recv tank/local"
run gzip "zfs send tank/src@s | gzip -6 | gunzip | zfs recv tank/gzip"
if [ $SSH = 1 ]; then run_ssh; fi
GUEST
set +e
"$LAB/run.sh" --disk-mbps "$MBPS" --mem "$MEM" --share "$SHARE" --timeout "$TIMEOUT" -v \
  --script "$SHARE/guest.sh" > "$SHARE/out/run.log" 2>&1
rc=$?
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
CASES="local gzip"
[ $SSH = 1 ] && CASES="$CASES ssh ssh-recv"
for m in $CASES; do
  echo "== $m"
  grep -A12 "^copyscope watch:" "$OUT/$m.out" || tail -20 "$OUT/$m.out"
  echo "  independent stack samples (comm, args, state, top frame: count):"
  sort "$OUT/${m%-recv}.truth.txt" | uniq -c | sort -rn | head -12 | sed 's/^/   /'
done
echo "zfs-pipeline-check: run.sh exit $rc; output in $OUT"
