#!/usr/bin/env bash
# Peak memory of a copy of a tree with many entries (issue 14: <= 200 MiB for 1 000 000).
#
#   scripts/bench-rss.sh [DIR]     DIR (default /dev/shm/copyscope-rss) gets the tree and the copy
#   ENTRIES=1000000 scripts/bench-rss.sh
#
# The tree: ENTRIES empty files in directories of 1 000 (1 000 per directory, as a photo
# archive or a node_modules has them). Copies it with copyscope --plain --no-sync and with
# cp -r, each under /usr/bin/time, and prints wall time and peak RSS of both. The tree is
# kept for the next run (remove DIR when done).
set -euo pipefail
DIR=${1:-/dev/shm/copyscope-rss}
ENTRIES=${ENTRIES:-1000000}
cd "$(dirname "$0")/.."
cargo build --release --quiet
CS="${CARGO_TARGET_DIR:-$PWD/target}/release/copyscope"
tree="$DIR/tree"
if [ ! -f "$DIR/.complete-$ENTRIES" ]; then
    echo "making $tree ($ENTRIES empty files)..." >&2
    rm -rf "$tree"; mkdir -p "$tree"
    python3 - "$tree" "$ENTRIES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, f"d{i // 1000:04d}")
    if i % 1000 == 0:
        os.mkdir(d)
    os.close(os.open(os.path.join(d, f"f{i:07d}"), os.O_CREAT | os.O_WRONLY, 0o644))
PY
    touch "$DIR/.complete-$ENTRIES"
fi
for tool in copyscope cp; do
    rm -rf "$DIR/out"
    case $tool in
        copyscope) cmd=("$CS" --plain --no-sync "$tree" "$DIR/out") ;;
        cp) cmd=(cp -r "$tree" "$DIR/out") ;;
    esac
    /usr/bin/time -f "%e %M" -o "$DIR/time.out" "${cmd[@]}" > /dev/null 2> "$DIR/err.out" || {
        cat "$DIR/err.out" >&2; exit 1; }
    read -r secs kib < "$DIR/time.out"
    echo "$tool: $ENTRIES entries, ${secs} s, peak RSS $((kib / 1024)) MiB"
done
rm -rf "$DIR/out"
