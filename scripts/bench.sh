#!/usr/bin/env bash
# Benchmarks copyscope against cp, cp -r and xcp in the same run (DESIGN §10 rows 1-2).
#
#   scripts/bench.sh [DIR]        DIR (or $COPYSCOPE_BENCH_DIR) holds data and copies,
#                                 default /var/tmp/copyscope-bench (same disk for source
#                                 and destination, as §10 asks)
#   RUNS=3 BIG_MIB=2048 TREE_FILES=10000 SWEEP=1 scripts/bench.sh
#   ONLY='tree' scripts/bench.sh /dev/shm/cs-bench   only the groups whose name matches (a regex);
#                                 a DIR on tmpfs gives the tmpfs -> tmpfs figures
#   XCP=/path/to/xcp              an xcp not on PATH
#
# Prints one Markdown table: median wall time of RUNS runs, MB/s, ratio to the baseline
# of its group, peak RSS. The source is read once first (page cache warm, §10); before each
# run the previous copy is removed and `sync` empties the dirty pages, so runs start equal;
# the tools of a group take turns (round-robin) so background noise hits them alike.
# With SWEEP=1 it also times --jobs 1/2/4/8 on the tree and buffer sizes on the
# pread/pwrite path (hidden --buffer-kib/--no-copy-file-range), used to pick the defaults.
set -euo pipefail

DIR=${1:-${COPYSCOPE_BENCH_DIR:-/var/tmp/copyscope-bench}}
RUNS=${RUNS:-3}
BIG_MIB=${BIG_MIB:-2048}
TREE_FILES=${TREE_FILES:-10000}
SWEEP=${SWEEP:-1}

cd "$(dirname "$0")/.."
echo "building release binary..." >&2
cargo build --release --quiet
CS="${CARGO_TARGET_DIR:-$PWD/target}/release/copyscope"

# xcp from $XCP, PATH or ~/.cargo/bin; else `cargo install xcp` (needs the crates.io registry).
XCP=${XCP:-$(command -v xcp || true)}
[ -z "$XCP" ] && [ -x "$HOME/.cargo/bin/xcp" ] && XCP="$HOME/.cargo/bin/xcp"
if [ -z "$XCP" ]; then
    echo "installing xcp (cargo install xcp)..." >&2
    cargo install xcp --quiet
    XCP="$HOME/.cargo/bin/xcp"
fi
echo "xcp: $XCP ($("$XCP" --version 2>/dev/null || echo '?'))" >&2
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

DATA="$DIR/data"
OUT="$DIR/out"
mkdir -p "$DATA"

big="$DATA/big.bin"
if [ "$(stat -c %s "$big" 2>/dev/null || echo 0)" != $((BIG_MIB << 20)) ]; then
    echo "making $big ($BIG_MIB MiB, incompressible)..." >&2
    head -c $((BIG_MIB << 20)) /dev/urandom > "$big.part" && mv "$big.part" "$big"
fi

tree="$DATA/tree"
if [ ! -f "$tree/.complete-$TREE_FILES" ]; then
    echo "making $tree ($TREE_FILES files of 1 KiB-1 MiB, log-uniform sizes)..." >&2
    rm -rf "$tree"
    python3 scripts/make-tree.py "$tree" "$TREE_FILES"
    touch "$tree/.complete-$TREE_FILES"
fi

tree_bytes=$(du -sb --apparent-size "$tree" | cut -f1)
big_bytes=$((BIG_MIB << 20))

# Warm the page cache with the sources (§10: "page cache warm").
cat "$big" > /dev/null
find "$tree" -type f -exec cat {} + > /dev/null

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

ROWS=()

# group NAME BYTES "label:::command" ... : RUNS rounds; in each round every command runs once,
# in turn (round-robin), so a noisy neighbour or the disk's own state hits all tools alike.
# The first command is the group's baseline for the ratio column.
group() {
    local name=$1 bytes=$2; shift 2
    if [ -n "${ONLY:-}" ] && ! [[ $name =~ $ONLY ]]; then return; fi
    local labels=() cmds=() i r t m
    for spec in "$@"; do labels+=("${spec%%:::*}"); cmds+=("${spec#*:::}"); done
    local -a times rss
    for i in "${!cmds[@]}"; do times[i]=""; rss[i]=0; done
    for r in $(seq "$RUNS"); do
        for i in "${!cmds[@]}"; do
            rm -rf "$OUT"; mkdir -p "$OUT"; sync
            if ! "$TIME" -f "%e %M" -o "$DIR/time.out" bash -c "${cmds[i]}" > /dev/null 2> "$DIR/err.out"; then
                echo "FAILED: ${cmds[i]}" >&2; cat "$DIR/err.out" >&2; exit 1
            fi
            read -r t m < "$DIR/time.out"
            times[i]="${times[i]} $t"
            [ "$m" -gt "${rss[i]}" ] && rss[i]=$m
        done
    done
    local base=""
    for i in "${!cmds[@]}"; do
        local med ratio mbs
        med=$(printf '%s\n' ${times[i]} | median)
        [ -z "$base" ] && base=$med
        ratio=$(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.2f", a / b}')
        mbs=$(awk -v s="$med" -v n="$bytes" 'BEGIN {printf "%.0f", n / s / 1e6}')
        ROWS+=("| $name | ${labels[i]} | $med | $mbs | $ratio | $((rss[i] / 1024)) |${times[i]} |")
        echo "  $name / ${labels[i]}: median ${med}s (${times[i]# })" >&2
    done
}

export big tree OUT CS XCP
echo "timing (RUNS=$RUNS, round-robin)..." >&2
group "2 GiB file, cache" "$big_bytes" \
    'cp:::exec cp "$big" "$OUT/big.bin"' \
    'xcp:::exec "$XCP" "$big" "$OUT/big.bin"' \
    'copyscope --no-sync:::exec "$CS" --plain --no-sync "$big" "$OUT/big.bin"'
group "2 GiB file, durable" "$big_bytes" \
    'cp && sync:::cp "$big" "$OUT/big.bin" && sync' \
    'copyscope (syncfs):::exec "$CS" --plain "$big" "$OUT/big.bin"'
group "tree, cache" "$tree_bytes" \
    'cp -r:::exec cp -r "$tree" "$OUT/tree"' \
    'xcp -r:::exec "$XCP" -r "$tree" "$OUT/tree"' \
    'copyscope --no-sync:::exec "$CS" --plain --no-sync "$tree" "$OUT/tree"'
group "tree, durable" "$tree_bytes" \
    'cp -r && sync:::cp -r "$tree" "$OUT/tree" && sync' \
    'copyscope (syncfs):::exec "$CS" --plain "$tree" "$OUT/tree"'

if [ "$SWEEP" = 1 ]; then
    group "tree, --jobs sweep" "$tree_bytes" \
        '--jobs 1:::exec "$CS" --plain --no-sync --jobs 1 "$tree" "$OUT/tree"' \
        '--jobs 2:::exec "$CS" --plain --no-sync --jobs 2 "$tree" "$OUT/tree"' \
        '--jobs 4:::exec "$CS" --plain --no-sync --jobs 4 "$tree" "$OUT/tree"' \
        '--jobs 8:::exec "$CS" --plain --no-sync --jobs 8 "$tree" "$OUT/tree"'
    group "2 GiB file, data path" "$big_bytes" \
        'copy_file_range:::exec "$CS" --plain --no-sync "$big" "$OUT/big.bin"' \
        'pread/pwrite 128 KiB:::exec "$CS" --plain --no-sync --no-copy-file-range --buffer-kib 128 "$big" "$OUT/big.bin"' \
        'pread/pwrite 1 MiB:::exec "$CS" --plain --no-sync --no-copy-file-range --buffer-kib 1024 "$big" "$OUT/big.bin"' \
        'pread/pwrite 4 MiB:::exec "$CS" --plain --no-sync --no-copy-file-range --buffer-kib 4096 "$big" "$OUT/big.bin"'
fi
rm -rf "$OUT"

echo
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), $(uname -r), $(df -T "$DIR" | awk 'NR==2 {print $2}') at $DIR; runs: $RUNS"
echo "Tree: $TREE_FILES files, $((tree_bytes / 1000000)) MB"
echo
echo "| case | tool | median s | MB/s | ratio to the group's first row | peak RSS MiB | runs (s) |"
echo "|---|---|---:|---:|---:|---:|---|"
printf '%s\n' "${ROWS[@]}"
