#!/bin/bash
# zfs-lab-add-packages.sh — adds Debian packages to the ZFS lab VM built by
# ../shared/lab/zfs-vm/build.sh. The defaults: OpenSSH (server and client), so a replication
# can run as users run it (`zfs send | ssh localhost zfs recv`; the guest starts sshd itself,
# scripts/zfs-pipeline-check.sh --ssh does), and perf, for an exact record of the writer's
# switches beside copyscope's (scripts/zfs-exact-check.sh). Installs them into the lab's rootfs
# with apt in a chroot (no daemon starts there: the build's policy-rc.d refuses), then remakes
# root.img with `build.sh --force-image`. Does nothing when every package is in already.
#
# Usage: scripts/zfs-lab-add-packages.sh [PACKAGE...]   (root)
# Env: ZFS_LAB (default /work/shared/lab/zfs-vm), ZFS_LAB_DIR (default /var/tmp/zfs-lab).
set -euo pipefail
LAB=${ZFS_LAB:-/work/shared/lab/zfs-vm}
LABDIR=${ZFS_LAB_DIR:-/var/tmp/zfs-lab}
R=$LABDIR/rootfs
PKGS=("$@")
[ ${#PKGS[@]} -gt 0 ] || PKGS=(openssh-server openssh-client linux-perf)
[ "$(id -u)" = 0 ] || { echo "zfs-lab-add-packages: needs root (chroot, apt)" >&2; exit 2; }
[ -d "$R/usr" ] || { echo "zfs-lab-add-packages: no rootfs at $R; run $LAB/build.sh" >&2; exit 2; }
in_chroot() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
STAMP=$LABDIR/root.img.packages
if in_chroot dpkg -s "${PKGS[@]}" > /dev/null 2>&1 && [ "$STAMP" -nt "$LABDIR/root.img.stamp" ]; then
  echo "zfs-lab-add-packages: ${PKGS[*]} already in the guest"
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
in_chroot DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PKGS[@]}"
in_chroot apt-get clean
cleanup
mounted=()
"$LAB/build.sh" --force-image
touch "$STAMP"
echo "zfs-lab-add-packages: root.img remade with ${PKGS[*]}"
