#!/usr/bin/env bash
# package-test.sh — installs a copyscope .deb into a clean Debian 12 (bookworm) root made with
# `debootstrap --variant=minbase` from the host's own apt archive, and checks it there:
#   1. `apt-get install ./copyscope_*.deb` (as the README says) pulls nothing beyond the root;
#   2. `copyscope --version` prints the package's version (and, with --expect-commit, that commit);
#   3. `man copyscope` renders the installed page (man-db in the root);
#   4. bash-completion's loader finds /usr/share/bash-completion/completions/copyscope and
#      completing `copyscope --ov<TAB>` offers --overwrite;
#   5. a real copy with --plain of a tree (random data, nested dir, symlink) equals its source.
# /proc is mounted in the root for the copy only, and unmounted on every exit path (EXIT, INT,
# TERM, HUP); the root lives in a temp dir under /var/tmp that is removed afterwards.
# Prints each check's evidence; exits non-zero on the first failure. Root only.
#
# Usage: scripts/package-test.sh [--expect-commit HASH] [--keep] DEB
# Env: DEBIAN_MIRROR (default: the first URIs: of this machine's apt sources)
set -euo pipefail

EXPECT_COMMIT="" KEEP=0 DEB=""
while [ $# -gt 0 ]; do
  case $1 in
    --expect-commit) EXPECT_COMMIT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "package-test: unknown option $1" >&2; exit 2 ;;
    *) DEB=$1; shift ;;
  esac
done
[ -f "$DEB" ] || { echo "package-test: no such package: '$DEB'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "package-test: must run as root (debootstrap, chroot)" >&2; exit 2; }
DEB=$(realpath "$DEB")

T0=$(date +%s)
log() { echo "[package-test +$(( $(date +%s) - T0 ))s] $*"; }
fail() { echo "package-test: FAIL: $*" >&2; exit 1; }

# The Debian archive this machine's apt already uses (as ../shared/lab/zfs-vm/build.sh does).
host_mirror() {
  awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null \
    || awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null
}
MIRROR=${DEBIAN_MIRROR:-$(host_mirror)}
[ -n "$MIRROR" ] || { echo "package-test: no Debian mirror in apt sources; set DEBIAN_MIRROR" >&2; exit 2; }

if ! command -v debootstrap >/dev/null; then
  log "apt-get install debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

WORK=$(mktemp -d /var/tmp/copyscope-pkgtest.XXXXXX)
R=$WORK/root
is_mounted() { findmnt -rn --mountpoint "$1" >/dev/null 2>&1; }
cleanup() {
  local rc=$?
  if is_mounted "$R/proc"; then umount "$R/proc" 2>/dev/null || umount -l "$R/proc"; fi
  if findmnt -rn -o TARGET | grep -q "^$R/"; then
    echo "package-test: still mounted under $R, not removing it" >&2
  elif [ $KEEP = 0 ]; then
    rm -rf --one-file-system "$WORK"
  else
    echo "package-test: root kept in $R" >&2
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

in_root() {
  chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@"
}

log "debootstrap --variant=minbase bookworm from $MIRROR"
debootstrap --variant=minbase --include=man-db,bash-completion bookworm "$R" "$MIRROR" \
  > "$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; fail "debootstrap"; }
# Same archive (and apt configuration) as the host, like the ZFS lab's guest.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$R/etc/apt/sources.list.d/"
  rm -f "$R/etc/apt/sources.list"
fi
for f in /etc/apt/apt.conf.d/99artifact-registry; do
  [ -f "$f" ] && cp "$f" "$R/etc/apt/apt.conf.d/"
done
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"

log "1. apt-get install ./$(basename "$DEB")"
cp "$DEB" "$R/tmp/"
before=$(in_root dpkg-query -W -f='${Package}\n' | sort)
in_root apt-get install -y --no-install-recommends "./tmp/$(basename "$DEB")" \
  > "$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log" >&2; fail "apt-get install"; }
added=$(comm -13 <(echo "$before") <(in_root dpkg-query -W -f='${Package}\n' | sort))
echo "   packages added: $added"
[ "$added" = copyscope ] || fail "installing pulled more than copyscope: $added"
in_root dpkg -s copyscope | grep -E '^(Version|Depends|Installed-Size):' | sed 's/^/   /'

log "2. copyscope --version"
deb_version=$(dpkg-deb -f "$DEB" Version)
version=$(in_root copyscope --version)
echo "   $version"
case $version in
  "copyscope $deb_version"|"copyscope $deb_version ("*")") ;;
  *) fail "--version '$version' does not match the package version $deb_version" ;;
esac
if [ -n "$EXPECT_COMMIT" ]; then
  [ "$version" = "copyscope $deb_version ($EXPECT_COMMIT)" ] \
    || fail "--version '$version' is not commit $EXPECT_COMMIT"
fi

log "3. man copyscope"
page=$(in_root man -w copyscope)
echo "   $page"
[ "$page" = /usr/share/man/man1/copyscope.1.gz ] || fail "man -w copyscope: $page"
man_text=$(in_root env MANWIDTH=80 man -P cat copyscope 2>"$WORK/man.err") \
  || { cat "$WORK/man.err" >&2; fail "man copyscope"; }
[ ! -s "$WORK/man.err" ] || { cat "$WORK/man.err" >&2; fail "man copyscope printed warnings"; }
head -n 6 <<<"$man_text" | sed 's/^/   | /'
for needle in NAME SYNOPSIS --overwrite --plain; do
  grep -q -- "$needle" <<<"$man_text" || fail "man page lacks $needle"
done

log "4. bash completion of 'copyscope --ov<TAB>'"
# bash-completion's own loader must find the file by the command's name, as in a login shell.
reply=$(in_root bash -c '
  source /usr/share/bash-completion/bash_completion
  __load_completion copyscope || { echo "no completion loaded" >&2; exit 1; }
  spec=$(complete -p copyscope) || exit 1
  func=$(sed -n "s/.* -F \([^ ]*\) .*/\1/p" <<<"$spec")
  COMP_WORDS=(copyscope --ov); COMP_CWORD=1
  COMP_LINE="copyscope --ov"; COMP_POINT=${#COMP_LINE}
  "$func" copyscope --ov copyscope
  printf "%s\n" "${COMPREPLY[@]}"') || fail "bash completion did not run"
echo "   COMPREPLY: $(tr '\n' ' ' <<<"$reply")"
grep -qx -- --overwrite <<<"$reply" || fail "completion of --ov lacks --overwrite"

log "5. copyscope --plain: a real copy (with /proc mounted)"
mount -t proc proc "$R/proc"
in_root bash -c '
  set -e
  mkdir -p /tmp/src/sub/deeper
  head -c 48M /dev/urandom > /tmp/src/big.bin
  for i in $(seq 1 50); do echo "file $i" > /tmp/src/sub/f$i.txt; done
  head -c 1M /dev/urandom > /tmp/src/sub/deeper/mid.bin
  ln -s big.bin /tmp/src/link'
set +e
in_root copyscope --plain /tmp/src /tmp/dst > "$WORK/copy.out" 2>&1
copy_rc=$?
set -e
sed 's/^/   | /' "$WORK/copy.out"
[ $copy_rc = 0 ] || fail "copyscope exited $copy_rc"
in_root diff -r --no-dereference /tmp/src /tmp/dst || fail "the copy differs from its source"
[ "$(in_root readlink /tmp/dst/link)" = big.bin ] || fail "symlink not copied as a symlink"
umount "$R/proc"
echo "   diff -r: identical (52 files, 1 symlink)"

log "all checks passed"
