#!/usr/bin/env bash
# samba-watch.sh — issue 12's Samba case on this machine: a real smbd (throwaway config, its own
# port and state directories) serving a share on the lab's 40 MB/s ext4 disk
# (../shared/lab/slowdev), `smbclient put` of a large file into it, and `copyscope watch SHARE
# --comm smbd --plain --record` beside it. Checks that the intake tracks smbclient's own average
# within 10 % and that every drop has a cause; exports the recording to a PNG.
#
# The disk's page-cache share is capped with the kernel's per-device limit (bdi max_bytes +
# strict_limit on the loop device only), so the writer meets the 40 MB/s disk within seconds
# as on a small NAS, without touching the machine-wide vm.dirty_* settings.
#
# Usage: sudo scripts/samba-watch.sh [--mb 1500] [--bin PATH] [--work DIR] [--out DIR]
#   prints the watch's output, then "intake X MB/s, smbclient Y MB/s, drops N, uncaused M"
#   and leaves samba-watch.{jsonl,png,txt} in --out (default: the work directory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SLOWDEV=${SLOWDEV:-$HERE/../shared/lab/slowdev/slowdev.sh}
[ -x "$SLOWDEV" ] || SLOWDEV=$HERE/tests/slowdev/slowdev.sh
MB=1500 WORK=/var/tmp/copyscope-samba BIN= OUT= MBPS=40 BDI_MAX=$((150 * 1000 * 1000)) PORT=4459
while [ $# -gt 0 ]; do
  case $1 in
    --mb) MB=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "samba-watch: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "samba-watch: needs root (loop device, smbd)" >&2; exit 2; }
for t in smbd smbclient qemu-storage-daemon mkfs.ext4; do
  command -v "$t" >/dev/null || { echo "samba-watch: $t missing (apt-get install samba smbclient qemu-utils e2fsprogs)" >&2; exit 2; }
done
if [ -z "$BIN" ]; then
  (cd "$HERE" && cargo build --release --quiet)
  BIN=${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope
fi
OUT=${OUT:-$WORK}
mkdir -p "$WORK" "$OUT"
smbd_pid= watch_pid=
cleanup() {
  local rc=$?
  [ -n "$watch_pid" ] && kill "$watch_pid" 2>/dev/null || true
  [ -n "$smbd_pid" ] && kill "$smbd_pid" 2>/dev/null && wait "$smbd_pid" 2>/dev/null || true
  # smbd's per-client children may still be leaving the share: retry the unmount.
  for _ in 1 2 3 4 5; do "$SLOWDEV" down "$WORK/dev" >/dev/null 2>&1 && break; sleep 1; done
  rm -f "$WORK/src.bin"
  exit "$rc"
}
trap cleanup EXIT
mnt=$("$SLOWDEV" up "$WORK/dev" --mbps "$MBPS" --size $((MB * 3 / 2 + 300))M | tail -n1)
loop=$(cat "$WORK/dev/loopdev")
bdi=/sys/class/bdi/$(($(stat -c '0x%t' "$loop"))):$(($(stat -c '0x%T' "$loop")))
echo "$BDI_MAX" > "$bdi/max_bytes"
echo 1 > "$bdi/strict_limit"
share=$mnt/share
mkdir -p "$share" "$WORK/smb"/{lock,state,cache,pid,private,log}
cat > "$WORK/smb.conf" <<C
[global]
 server role = standalone server
 map to guest = Bad User
 interfaces = lo
 bind interfaces only = yes
 smb ports = $PORT
 disable netbios = yes
 lock directory = $WORK/smb/lock
 state directory = $WORK/smb/state
 cache directory = $WORK/smb/cache
 pid directory = $WORK/smb/pid
 private dir = $WORK/smb/private
 log file = $WORK/smb/log/%m.log
 ncalrpc dir = $WORK/smb/ncalrpc
[share]
 path = $share
 read only = no
 guest ok = yes
 force user = root
C
# In a session of its own: on SIGTERM smbd signals its whole process group, not this script.
setsid smbd --foreground --no-process-group -s "$WORK/smb.conf" </dev/null >"$WORK/smb/log/smbd.out" 2>&1 &
smbd_pid=$!
for _ in $(seq 50); do smbclient -s "$WORK/smb.conf" -p "$PORT" //127.0.0.1/share -N -c 'ls' >/dev/null 2>&1 && break; sleep 0.2; done
# Random data: the same bytes whatever the filesystem does with zeros.
head -c "$((MB * 1000 * 1000))" /dev/urandom > "$WORK/src.bin"
rec=$OUT/samba-watch.jsonl
"$BIN" watch "$share" --comm smbd --plain --record "$rec" --until-idle 3 --duration 600 \
  > "$WORK/watch.out" 2>&1 &
watch_pid=$!
sleep 2
smbclient -s "$WORK/smb.conf" -p "$PORT" //127.0.0.1/share -N -c "put $WORK/src.bin big.bin" \
  > "$WORK/smbclient.out" 2>&1
wait "$watch_pid"; watch_pid=
cat "$WORK/watch.out"
cat "$WORK/smbclient.out"
"$BIN" export "$rec" --png "$OUT/samba-watch.png" --text "$OUT/samba-watch.txt" >/dev/null
python3 - "$rec" "$WORK/smbclient.out" "$((MB * 1000 * 1000))" <<'PY'
import json, re, sys
rec, sc, size = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
lines = [json.loads(l) for l in open(rec)]
samples = [l for l in lines if l.get("type") == "sample"]
pts = [(s["t_ns"], s["engine"]["bytes_copied"]) for s in samples]
first = next(t for t, b in pts if b > 0)
moved = [t for (t, b), (_, b0) in zip(pts[1:], pts) if b > b0]
last, total = moved[-1], pts[-1][1]
# The sample before the first bytes bounds the start: the writes began within that tick.
before = max(t for t, b in pts if t < first)
intake = total / ((last - before) / 1e9)
# smbclient: "putting file ... (48766.2 kb/s) (average 48766.2 kb/s)"; its kb is 1024 bytes.
avg = float(re.findall(r"average ([0-9.]+) kb/s", sc)[-1]) * 1024
drops = [l for l in lines if l.get("type") == "event" and l.get("kind") == "drop"]
uncaused = [d for d in drops if not [c for c in d["causes"] if c.get("cause") != "unknown"]]
print(f"intake {intake/1e6:.1f} MB/s, smbclient {avg/1e6:.1f} MB/s, bytes {total} of {size}, "
      f"drops {len(drops)}, uncaused {len(uncaused)}")
ok = abs(intake - avg) <= 0.10 * avg and total >= size and not uncaused
sys.exit(0 if ok else 1)
PY
