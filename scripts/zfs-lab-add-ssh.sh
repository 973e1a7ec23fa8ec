#!/bin/bash
# zfs-lab-add-ssh.sh — adds OpenSSH (server and client) to the ZFS lab VM built by
# ../shared/lab/zfs-vm/build.sh, so a replication can run as users run it:
# `zfs send | ssh localhost zfs recv`. Installs the two packages into the lab's rootfs with
# apt in a chroot (no daemon starts there: the build's policy-rc.d refuses), then remakes
# root.img with `build.sh --force-image`. Idempotent: does nothing when sshd is already in.
# The guest starts sshd itself (scripts/zfs-pipeline-check.sh --ssh does).
#
# Usage: scripts/zfs-lab-add-ssh.sh   (root)
# Env: ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab).
set -euo pipefail
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
R=$LABDIR/rootfs
[ "$(id -u)" = 0 ] || { echo "zfs-lab-add-ssh: needs root (chroot, apt)" >&2; exit 2; }
[ -d "$R/usr" ] || { echo "zfs-lab-add-ssh: no rootfs at $R; run $LAB/build.sh" >&2; exit 2; }
if [ -x "$R/usr/sbin/sshd" ] && [ -x "$R/usr/bin/ssh" ] && [ -e "$LABDIR/root.img.ssh" ]; then
  echo "zfs-lab-add-ssh: sshd already in the guest"
  exit 0
fi
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
  done
}
trap cleanup EXIT
for m in proc sys dev dev/pts; do
  findmnt -rn --mountpoint "$R/$m" > /dev/null && continue
  case $m in
    proc) mount -t proc proc "$R/proc" ;;
    sys) mount -t sysfs sysfs "$R/sys" ;;
    *) mount --bind "/$m" "$R/$m" ;;
  esac
  mounted+=("$R/$m")
done
chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  openssh-server openssh-client
chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin apt-get clean
cleanup
mounted=()
"$LAB/build.sh" --force-image
touch "$LABDIR/root.img.ssh"
echo "zfs-lab-add-ssh: root.img remade with $(chroot "$R" /usr/sbin/sshd -V 2>&1 | head -1)"
