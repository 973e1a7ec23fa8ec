#!/usr/bin/env bash
# bench-pairs.sh — round-robin wall and CPU times of several copy commands, the removal of the
# previous copy and a `sync` outside the timing (so a tool is not charged for deleting its own
# last output, and every run starts with no dirty pages).
#
#   scripts/bench-pairs.sh RUNS SRC OUT 'label:::command' ...
#
# In each command SRC and OUT are replaced by the arguments. One warm-up round is not counted;
# then RUNS rounds, every command once per round, in turn. Prints one Markdown row per command:
# median wall s, its ratio to the first command's median, median CPU s (user + sys of the
# process and its children, /usr/bin/time), the CPU ratio, and every wall time in run order.
# Example (the issue-14 tree on tmpfs):
#   scripts/bench-pairs.sh 9 /dev/shm/b/tree /dev/shm/b/out 'xcp:::xcp -r SRC OUT' \
#     'copyscope:::copyscope --plain --no-sync SRC OUT' 'cp:::cp -r SRC OUT'
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,15p "$0" >&2; exit 2; }
runs=$1 src=$2 out=$3
shift 3
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
labels=() cmds=()
for a in "$@"; do
    labels+=("${a%%:::*}")
    cmds+=("${a#*:::}")
done
n=${#cmds[@]}
declare -A W C
for ((r = 0; r <= runs; r++)); do
    for ((i = 0; i < n; i++)); do
        rm -rf "$out"
        sync
        c=${cmds[$i]//OUT/$out}
        c=${c//SRC/$src}
        t=$({ /usr/bin/time -f "%e %U %S" sh -c "$c >/dev/null 2>&1"; } 2>&1 | tail -1)
        [ "$r" -eq 0 ] && continue
        read -r wall user sys <<<"$t"
        W[$i]+="$wall "
        C[$i]+="$(echo "$user + $sys" | bc) "
    done
done
rm -rf "$out"
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
w0=$(echo "${W[0]}" | median)
c0=$(echo "${C[0]}" | median)
echo "| command | median wall s | wall ratio | median CPU s | CPU ratio | wall runs (s) |"
echo "|---|---:|---:|---:|---:|---|"
for ((i = 0; i < n; i++)); do
    w=$(echo "${W[$i]}" | median)
    c=$(echo "${C[$i]}" | median)
    printf "| %s | %.2f | %.2f | %.2f | %.2f | %s|\n" "${labels[$i]}" "$w" "$(echo "$w / $w0" | bc -l)" \
        "$c" "$(echo "$c / $c0" | bc -l)" "${W[$i]}"
done
