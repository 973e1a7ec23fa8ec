#!/usr/bin/env bash
# bench-speed.sh — every speed case side by side with cp, xcp and cpz (each when installed), in
# one run, so the ratios come from the same minutes of a shared machine:
#   tree-tmpfs   10 000 files of 1 KiB–1 MiB (1.5 GB, scripts/make-tree.py), tmpfs → tmpfs
#   tree-ext4    the same tree onto a fresh ext4 file system per run (a loop image on tmpfs:
#                on this VM's disk an ext4 destination slows ~10 × after a delete)
#   flat         one directory of 30 000 files of 1 KiB, tmpfs → tmpfs
#   big-tmpfs    one 1 GiB file, tmpfs → tmpfs
#   big-ext4     the same file onto a fresh ext4 per run, cached (copyscope --no-sync)
#   big-durable  the same, durable: `TOOL && sync -f OUT` (syncfs of the destination, what
#                copyscope's default flush does; a plain `sync` would also write back every
#                other process's dirty data) against copyscope's default
#   million      ENTRIES empty files (1 000 a directory), tmpfs → tmpfs, with peak RSS
# copyscope runs `--plain --no-sync` except in big-durable. Each case: one uncounted warm-up
# round (its copies are checked against the source), then RUNS rounds; in round r the tools
# start at the r-th one (rotating order, so drift in the machine's load hits them alike). The
# previous copy is removed and `sync` runs outside the timing. Wall from $EPOCHREALTIME, CPU
# (user + sys, children included) and peak RSS from `/usr/bin/time -v`. Per case: a row per
# tool (median wall, CPU, RSS, every run), then copyscope's ratio to each tool and to the
# faster of cp and xcp — both the ratio of the medians and the median of the per-round
# ratios — and the load average before and after.
#
# Usage: scripts/bench-speed.sh [--runs 5] [--million-runs 1] [--entries 1000000]
#                               [--dir /dev/shm/copyscope-speed] [--cases 'tree-tmpfs flat ...']
# The data sets stay in DIR for the next run (about 3 GB of memory with the million entries):
# remove DIR when done.
# Env: COPYSCOPE_BIN (default: release build of this tree), XCP, CPZ (default: from PATH or
# ~/.cargo/bin; `cargo install xcp --version 0.24.9`, `cargo install cpz`), COPYSCOPE_BEFORE
# (another copyscope binary, run as one more tool: a change measured before/after in one run).
# Needs root (loop mounts), mkfs.ext4, /usr/bin/time, python3.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
RUNS=5 MRUNS=1 ENTRIES=1000000 DIR=/dev/shm/copyscope-speed
CASES="tree-tmpfs tree-ext4 flat big-tmpfs big-ext4 big-durable million"
while [ $# -gt 0 ]; do
    case $1 in
        --runs) RUNS=$2; shift 2 ;;
        --million-runs) MRUNS=$2; shift 2 ;;
        --entries) ENTRIES=$2; shift 2 ;;
        --dir) DIR=$2; shift 2 ;;
        --cases) CASES=$2; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "bench-speed: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || { echo "bench-speed: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
find_tool() { command -v "$1" 2>/dev/null || { [ -x "$HOME/.cargo/bin/$1" ] && echo "$HOME/.cargo/bin/$1"; } || true; }
XCP=${XCP:-$(find_tool xcp)}
CPZ=${CPZ:-$(find_tool cpz)}
if [ -z "${COPYSCOPE_BIN:-}" ]; then
    (cd "$HERE" && cargo build --release --quiet --bin copyscope)
    COPYSCOPE_BIN=${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope
fi
CS=$COPYSCOPE_BIN
BEFORE=${COPYSCOPE_BEFORE:-}
mkdir -p "$DIR"
MNT=$DIR/mnt IMG=$DIR/ext4.img
cleanup() {
    mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
    rm -rf "$IMG" "$DIR/out" "$DIR/time.txt"
}
trap cleanup EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }

# Data sets, kept for the next run (a marker says each is complete).
make_once() { # DIR-OF-SET COMMAND...
    local d=$1; shift
    [ -f "$d.complete" ] && return
    rm -rf "$d"
    "$@"
    touch "$d.complete"
}
make_flat() {
    python3 - "$1" <<'PY'
import os, sys
root = sys.argv[1]
os.makedirs(root)
block = os.urandom(1024)
for i in range(30000):
    with open(os.path.join(root, f"f{i:05d}"), "wb") as f:
        f.write(block)
PY
}
make_million() {
    python3 - "$1" "$ENTRIES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
for i in range(n):
    d = os.path.join(root, f"d{i // 1000:04d}")
    if i % 1000 == 0:
        os.mkdir(d)
    os.close(os.open(os.path.join(d, f"f{i:07d}"), os.O_CREAT | os.O_WRONLY, 0o644))
PY
}

# A fresh ext4 file system on a loop image in tmpfs, mounted at $MNT.
fresh_ext4() {
    mountpoint -q "$MNT" && umount "$MNT"
    rm -f "$IMG"
    truncate -s 4G "$IMG"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$IMG"
    mkdir -p "$MNT"
    mount -o loop "$IMG" "$MNT"
}

# The tools of a case: "label|command" with SRC and OUT in the command.
tools_for() { # KIND (tree|file|durable)
    local r=() q='' s=''
    case $1 in
        tree) r+=("cp -r|cp -r SRC OUT") q=" -r" ;;
        file) r+=("cp|cp SRC OUT") ;;
        durable) r+=("cp && sync -f|cp SRC OUT && sync -f OUT") s=" && sync -f OUT" ;;
    esac
    [ -n "$XCP" ] && r+=("xcp$q${s:+ && sync -f}|$XCP$q SRC OUT$s")
    [ -n "$CPZ" ] && r+=("cpz${s:+ && sync -f}|$CPZ SRC OUT$s")
    local b
    for b in ${BEFORE:+"$BEFORE"} "$CS"; do
        local label=copyscope
        [ "$b" = "$CS" ] || label="copyscope before"
        if [ "$1" = durable ]; then
            r+=("$label|$b --plain SRC OUT")
        else
            r+=("$label|$b --plain --no-sync SRC OUT")
        fi
    done
    printf '%s\n' "${r[@]}"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}'; }

# Checks the warm-up's copy: the same bytes (tree and file cases) or the same entry count.
check_copy() { # SRC OUT LABEL
    local ok=1
    if [ "$CASE" = million ]; then
        [ "$(find "$1" | wc -l)" = "$(find "$2" | wc -l)" ] || ok=0
    else
        diff -rq "$1" "$2" > /dev/null || ok=0
    fi
    [ $ok = 1 ] || { echo "bench-speed: $3 made a copy that differs from the source" >&2; exit 1; }
}

# One case: CASE SRC OUT KIND ROUNDS [ext4]
run_case() {
    CASE=$1
    local src=$2 out=$3 kind=$4 rounds=$5 fs=${6:-tmpfs}
    local -a labels=() cmds=()
    local line
    while IFS= read -r line; do
        labels+=("${line%%|*}") cmds+=("${line#*|}")
    done < <(tools_for "$kind")
    local n=${#cmds[@]} r k i t0 t1 c
    local -A W C M
    local load0
    load0=$(load)
    for ((r = 0; r <= rounds; r++)); do
        for ((k = 0; k < n; k++)); do
            i=$(( (k + r) % n ))
            if [ "$fs" = ext4 ]; then
                fresh_ext4
            else
                rm -rf "$out"
            fi
            sync
            c=${cmds[$i]//OUT/$out}
            c=${c//SRC/$src}
            t0=$EPOCHREALTIME
            /usr/bin/time -v -o "$DIR/time.txt" sh -c "$c" > /dev/null 2> "$DIR/err.txt" || {
                echo "bench-speed: ${labels[$i]} failed: $(tail -3 "$DIR/err.txt")" >&2; exit 1; }
            t1=$EPOCHREALTIME
            if [ "$r" -eq 0 ]; then
                check_copy "$src" "$out" "${labels[$i]}"
                continue
            fi
            W[$i]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') "
            C[$i]+="$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u + s}' "$DIR/time.txt") "
            M[$i]+="$(awk -F': ' '/Maximum resident/ {printf "%d", $2 / 1024}' "$DIR/time.txt") "
        done
    done
    if [ "$fs" = ext4 ]; then umount "$MNT"; rm -f "$IMG"; else rm -rf "$out"; fi
    echo "### $CASE (load before $load0, after $(load); $rounds rounds)"
    echo
    echo "| tool | median wall s | median CPU s | peak RSS MiB | wall runs (s) |"
    echo "|---|---:|---:|---:|---|"
    local -a med=()
    for ((i = 0; i < n; i++)); do
        med[$i]=$(echo "${W[$i]}" | median)
        printf "| %s | %.3f | %.2f | %s | %s|\n" "${labels[$i]}" "${med[$i]}" \
            "$(echo "${C[$i]}" | median)" "$(echo "${M[$i]}" | median)" "${W[$i]}"
    done
    # copyscope is the last tool; its per-round ratio to tool j, and to the faster of cp and xcp.
    local cs=$((n - 1)) j
    local -a cw ow
    read -ra cw <<< "${W[$cs]}"
    echo
    echo "| copyscope / | ratio of medians | median of per-round ratios |"
    echo "|---|---:|---:|"
    for ((j = 0; j < cs; j++)); do
        read -ra ow <<< "${W[$j]}"
        local per=""
        for ((r = 0; r < ${#cw[@]}; r++)); do per+="$(div "${cw[$r]}" "${ow[$r]}") "; done
        echo "| ${labels[$j]} | $(div "${med[$cs]}" "${med[$j]}") | $(echo "$per" | median) |"
    done
    if [ -n "$XCP" ]; then
        read -ra ow <<< "${W[0]}"
        local -a xw
        read -ra xw <<< "${W[1]}"
        local per="" best
        for ((r = 0; r < ${#cw[@]}; r++)); do
            best=$(awk -v a="${ow[$r]}" -v b="${xw[$r]}" 'BEGIN {print (a < b) ? a : b}')
            per+="$(div "${cw[$r]}" "$best") "
        done
        best=$(awk -v a="${med[0]}" -v b="${med[1]}" 'BEGIN {print (a < b) ? a : b}')
        echo "| faster of ${labels[0]}, ${labels[1]} | $(div "${med[$cs]}" "$best") | $(echo "$per" | median) |"
    fi
    echo
}

echo "## bench-speed $(date -u '+%F %T') UTC, load $(load), $(nproc) CPUs, $(uname -r)"
echo
version() { if [ -n "$1" ]; then "$1" --version 2>&1 | awk '{print $NF; exit}'; else echo "not installed"; fi; }
echo "copyscope $("$CS" --version | cut -d' ' -f2-)${BEFORE:+, copyscope before $("$BEFORE" --version | cut -d' ' -f2-)}," \
    "xcp $(version "$XCP"), cpz $(version "$CPZ"), $(cp --version | head -1)"
echo
for CASE in $CASES; do
    case $CASE in
        tree-tmpfs|tree-ext4) make_once "$DIR/tree" python3 "$HERE/scripts/make-tree.py" "$DIR/tree" 10000 ;;
        flat) make_once "$DIR/flat" make_flat "$DIR/flat" ;;
        big-*) make_once "$DIR/big" sh -c "mkdir -p '$DIR/big' && head -c $((1 << 30)) /dev/urandom > '$DIR/big/big.bin'" ;;
        million) make_once "$DIR/million-$ENTRIES" make_million "$DIR/million-$ENTRIES" ;;
        *) echo "bench-speed: unknown case $CASE" >&2; exit 2 ;;
    esac
    case $CASE in
        tree-tmpfs) run_case "$CASE" "$DIR/tree" "$DIR/out" tree "$RUNS" ;;
        tree-ext4) run_case "$CASE" "$DIR/tree" "$MNT/out" tree "$RUNS" ext4 ;;
        flat) run_case "$CASE" "$DIR/flat" "$DIR/out" tree "$RUNS" ;;
        big-tmpfs) run_case "$CASE" "$DIR/big/big.bin" "$DIR/out" file "$RUNS" ;;
        big-ext4) run_case "$CASE" "$DIR/big/big.bin" "$MNT/out" file "$RUNS" ext4 ;;
        big-durable) run_case "$CASE" "$DIR/big/big.bin" "$MNT/out" durable "$RUNS" ext4 ;;
        million) run_case "$CASE" "$DIR/million-$ENTRIES" "$DIR/out" tree "$MRUNS" ;;
    esac
done
