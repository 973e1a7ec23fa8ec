#!/bin/bash
# exact-vs-truth.sh — copyscope's time budget against the lab's writer-truth sampler
# (/work/shared/lab/writer-truth/tsampler.c, here at 10 ms) on the same copy: SRC copied into
# DEST (e.g. the slowdev lab disk at 40 MB/s, where dirty throttling paces the writer) with
# --json, tsampler following the copyscope process; scripts/exact-vs-truth.py sets the copy
# phase's shares side by side. COPYSCOPE_EXACT=0 in the environment compares the sampled
# stacks instead of the exact trace.
#
#   scripts/exact-vs-truth.sh SRC DEST DEVS [TSAMPLER]     (root; DEVS: diskstats names, e.g. loop0)
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
src=$1; dest=$2; devs=$3; ts=${4:-./tsampler}
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
out=$(mktemp -d /tmp/exact-vs-truth.XXXXXX)
"$BIN" --json "$src" "$dest" > "$out/run.jsonl" 2> "$out/run.err" &
pid=$!
"$ts" "$pid" 10 - "$devs" > "$out/truth.csv"
wait "$pid"
python3 "$HERE/scripts/exact-vs-truth.py" "$out/truth.csv" "$out/run.jsonl"
echo "files: $out"
