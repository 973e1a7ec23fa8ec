#!/usr/bin/env bash
# bench-pipe.sh — `cat` and `copyscope pipe --plain` side by side on the same stream:
# `head -c SIZE /dev/zero | TOOL > /dev/null`, the two in turn (cat, copyscope, cat, …) so a
# machine whose speed drifts slows both alike. One warm-up pair is not counted; then RUNS
# pairs. Prints each tool's wall times, the median rates, and the median of the pair-by-pair
# ratios copyscope ÷ cat (the target: at least 0.95).
#
#   scripts/bench-pipe.sh [RUNS] [SIZE] [COPYSCOPE]     defaults: 7 2G target/release/copyscope
#
# SIZE is head's: 2G is 2 GiB. copyscope's progress (stderr) goes to /dev/null as cat's
# nothing does; its sampler, model and thread reads run as in any pipe.
set -euo pipefail
runs=${1:-7} size=${2:-2G} cs=${3:-target/release/copyscope}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
[ -x "$cs" ] || { echo "no $cs: cargo build --release, or name the binary" >&2; exit 2; }
bytes=$(head -c "$size" /dev/zero | wc -c)
wall() { /usr/bin/time -f %e bash -c "head -c $size /dev/zero | $1 > /dev/null 2>/dev/null" 2>&1 | tail -1; }
cats=() pipes=() ratios=()
for ((r = 0; r <= runs; r++)); do
    a=$(wall cat)
    b=$(wall "$cs pipe --plain")
    [ "$r" -eq 0 ] && continue
    cats+=("$a") pipes+=("$b")
    ratios+=("$(echo "$a / $b" | bc -l)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mc=$(median "${cats[@]}") mp=$(median "${pipes[@]}") mr=$(median "${ratios[@]}")
echo "stream: $bytes bytes (head -c $size /dev/zero), $runs pairs after one warm-up"
echo "| tool | median wall s | median rate MB/s | wall runs (s) |"
echo "|---|---:|---:|---|"
printf "| cat | %.2f | %.0f | %s |\n" "$mc" "$(echo "$bytes / $mc / 1000000" | bc -l)" "${cats[*]}"
printf "| copyscope pipe --plain | %.2f | %.0f | %s |\n" "$mp" "$(echo "$bytes / $mp / 1000000" | bc -l)" "${pipes[*]}"
printf "rate ratio copyscope / cat, median of the pairs: %.3f (target >= 0.95)\n" "$mr"
