#!/usr/bin/env bash
# bench-targets.sh — the issue-14 speed targets side by side with cp and xcp, in one run:
#   1. 10 000-file tree (1 KiB–1 MiB, 1.5 GB), tmpfs → tmpfs, --no-sync: xcp -r, copyscope, cp -r
#   2. the same tree, ext4 → ext4 (DIR's file system), --no-sync
#   3. one 2 GiB file, ext4, cached: cp, xcp, copyscope --no-sync
#   4. the same file, durable: cp && sync, xcp && sync, copyscope (its syncfs)
#   5. syscalls of the tree copy (tmpfs), per file: strace -f -c of each tool
# Every timed case goes through scripts/bench-pairs.sh (round-robin, one uncounted round,
# the previous copy removed and `sync` outside the timing, medians of RUNS).
#
# Usage: scripts/bench-targets.sh [--runs 9] [--dir /var/tmp/copyscope-targets] [--shm /dev/shm/copyscope-targets]
# Needs: xcp (cargo install xcp --version 0.24.9; XCP=path to override), strace, /usr/bin/time.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
RUNS=9 DIR=/var/tmp/copyscope-targets SHM=/dev/shm/copyscope-targets
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --shm) SHM=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "bench-targets: unknown argument $1" >&2; exit 2 ;;
  esac
done
XCP=${XCP:-$(command -v xcp || echo "$HOME/.cargo/bin/xcp")}
[ -x "$XCP" ] || { echo "bench-targets: needs xcp (cargo install xcp --version 0.24.9)" >&2; exit 2; }
command -v strace >/dev/null || { echo "bench-targets: needs strace" >&2; exit 2; }
(cd "$HERE" && cargo build --release --quiet --bin copyscope)
CS=${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope
PAIRS="$HERE/scripts/bench-pairs.sh"

make_tree() {
    [ -f "$1/.complete" ] && return
    rm -rf "$1"
    python3 "$HERE/scripts/make-tree.py" "$1" 10000
    touch "$1/.complete"
}
mkdir -p "$DIR" "$SHM"
make_tree "$SHM/tree"
make_tree "$DIR/tree"
big="$DIR/big.bin"
[ "$(stat -c %s "$big" 2>/dev/null || echo 0)" = $((2 << 30)) ] ||
    head -c $((2 << 30)) /dev/urandom > "$big"
# The sources in the page cache, as DESIGN §10 asks.
find "$DIR/tree" -type f -exec cat {} + > /dev/null
cat "$big" > /dev/null
sync

echo "== $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(uname -r)"
echo "copyscope $("$CS" --version | cut -d' ' -f2), xcp $("$XCP" --version 2>&1 | awk '{print $NF}'), $(cp --version | head -1)"
echo
echo "### 1. 10 000 files, tmpfs → tmpfs, --no-sync"
"$PAIRS" "$RUNS" "$SHM/tree" "$SHM/out" "xcp -r:::$XCP -r SRC OUT" \
    "copyscope:::$CS --plain --no-sync SRC OUT" "cp -r:::cp -r SRC OUT"
echo
echo "### 2. 10 000 files, ext4 → ext4, --no-sync"
"$PAIRS" "$RUNS" "$DIR/tree" "$DIR/out" "xcp -r:::$XCP -r SRC OUT" \
    "copyscope:::$CS --plain --no-sync SRC OUT" "cp -r:::cp -r SRC OUT"
echo
echo "### 3. one 2 GiB file, ext4, cached (--no-sync)"
"$PAIRS" "$RUNS" "$big" "$DIR/big.out" "cp:::cp SRC OUT" "xcp:::$XCP SRC OUT" \
    "copyscope:::$CS --plain --no-sync SRC OUT"
echo
echo "### 4. one 2 GiB file, ext4, durable"
"$PAIRS" "$RUNS" "$big" "$DIR/big.out" "cp && sync:::cp SRC OUT && sync" \
    "xcp && sync:::$XCP SRC OUT && sync" "copyscope (syncfs):::$CS --plain SRC OUT"
echo
echo "### 5. syscalls per file, the tmpfs tree (strace -f -c, all threads and children)"
echo "| tool | syscalls | per file |"
echo "|---|---:|---:|"
for t in "cp -r:cp -r" "xcp -r:$XCP -r" "copyscope:$CS --plain --no-sync"; do
    rm -rf "$SHM/out"
    sync
    # shellcheck disable=SC2086
    strace -f -c -o "$SHM/strace.txt" ${t#*:} "$SHM/tree" "$SHM/out" > /dev/null
    n=$(awk '$NF == "total" {print $4}' "$SHM/strace.txt")
    echo "| ${t%%:*} | $n | $(echo "scale=2; $n / 10000" | bc) |"
done
rm -rf "$SHM/out" "$DIR/out" "$DIR/big.out" "$SHM/strace.txt"
