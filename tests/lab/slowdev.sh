#!/bin/bash
# Vendored from the project lab (../shared/lab/slowdev/slowdev.sh) so CI on a fresh clone has it.
# A real, slow block device on this machine, for seeing and testing kernel write throttling without a VM:
# qemu-storage-daemon exports a raw image through a write-throttle (FUSE export), a loop device sits on it,
# and an ext4 filesystem is mounted there. Writes into the mount fill the page cache fast, then the kernel
# paces the writer to the device's speed: the classic "fast, then a drop" shape, with real Dirty/Writeback,
# real /proc/diskstats lines (loopN) and real balance_dirty_pages throttling.
#
#   slowdev.sh up DIR [--mbps 50] [--read-mbps N] [--size 2G]   create DIR/mnt (prints the mount point);
#                                                 reads are unthrottled unless --read-mbps is given
#   slowdev.sh set DIR [--mbps N] [--read-mbps N]   change the limits while it runs (0 = unlimited): a real,
#                                                 timed drop of the device's speed, e.g. for a source stall
#   slowdev.sh down DIR                          unmount and remove everything under DIR
#   slowdev.sh status DIR
#
# Reads through the page cache are only throttled when their pages are not cached: drop them first
# (echo 3 > /proc/sys/vm/drop_caches, or posix_fadvise DONTNEED on the file).
# Needs root, /dev/fuse, loop devices, qemu-storage-daemon (Debian package qemu-utils or qemu-system-common)
# and mkfs.ext4. Only processes it started are stopped (by the pid it saved).
set -euo pipefail
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
shift 2
mbps=; rmbps=; size=2G
while [ $# -gt 0 ]; do
  case $1 in
    --mbps) mbps=$2; shift 2 ;;
    --read-mbps) rmbps=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

up() {
  command -v qemu-storage-daemon >/dev/null || { echo "qemu-storage-daemon missing (apt-get install qemu-utils)" >&2; exit 1; }
  [ -e /dev/fuse ] || { echo "/dev/fuse missing" >&2; exit 1; }
  mkdir -p "$dir/mnt"
  [ -f "$dir/loopdev" ] && { echo "already up: $dir/mnt" >&2; exit 1; }
  truncate -s "$size" "$dir/disk.raw"
  : > "$dir/export.img"
  qemu-storage-daemon \
    --object "throttle-group,id=tg0,x-bps-write=$(( ${mbps:-50} * 1000000 )),x-bps-read=$(( ${rmbps:-0} * 1000000 ))" \
    --blockdev "driver=file,node-name=file0,filename=$dir/disk.raw" \
    --blockdev "driver=throttle,node-name=thr0,throttle-group=tg0,file=file0" \
    --export "type=fuse,id=exp0,node-name=thr0,mountpoint=$dir/export.img,writable=on" \
    --chardev "socket,id=qmp0,path=$dir/qmp.sock,server=on,wait=off" --monitor chardev=qmp0 \
    --pidfile "$dir/qsd.pid" --daemonize
  local loop; loop=$(losetup -f --show "$dir/export.img")
  echo "$loop" > "$dir/loopdev"
  mkfs.ext4 -q -F "$loop"
  mount "$loop" "$dir/mnt"
  echo "$dir/mnt"
}

set_limits() {
  [ -S "$dir/qmp.sock" ] || { echo "not up (no $dir/qmp.sock)" >&2; exit 1; }
  python3 - "$dir/qmp.sock" "${mbps:-}" "${rmbps:-}" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rw'); f.readline()
def cmd(c):
    f.write(json.dumps(c) + '\n'); f.flush()
    while True:
        r = json.loads(f.readline())
        if 'return' in r or 'error' in r: return r
cmd({"execute": "qmp_capabilities"})
limits = {}
if sys.argv[2]: limits["bps-write"] = int(float(sys.argv[2]) * 1e6)
if sys.argv[3]: limits["bps-read"] = int(float(sys.argv[3]) * 1e6)
r = cmd({"execute": "qom-set", "arguments": {"path": "/objects/tg0", "property": "limits", "value": limits}})
if 'error' in r: sys.exit("qmp: " + r['error'].get('desc', str(r)))
print("limits now:", limits)
PY
}

down() {
  mountpoint -q "$dir/mnt" 2>/dev/null && umount "$dir/mnt"
  [ -f "$dir/loopdev" ] && losetup -d "$(cat "$dir/loopdev")" 2>/dev/null || true
  if [ -f "$dir/qsd.pid" ]; then
    local pid; pid=$(cat "$dir/qsd.pid")
    if grep -q qemu-storage-daemon "/proc/$pid/cmdline" 2>/dev/null; then kill "$pid"; fi
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "/proc/$pid" ] || break; sleep 0.2; done
  fi
  rm -rf "$dir/mnt" "$dir/disk.raw" "$dir/export.img" "$dir/loopdev" "$dir/qsd.pid" "$dir/qmp.sock"
}

case $cmd in
  up) up ;;
  set) set_limits ;;
  down) down ;;
  status) if mountpoint -q "$dir/mnt" 2>/dev/null; then echo "up: $dir/mnt on $(cat "$dir/loopdev")"; else echo down; fi ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
