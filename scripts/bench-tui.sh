#!/usr/bin/env bash
# bench-tui.sh — the TUI's cost (DESIGN §10 "TUI cost"): CPU (user+sys) of the same copy with
# the TUI (in tmux at 120×40) and with --plain, and the bytes per second the TUI writes to the
# terminal (tmux pipe-pane). The copy is paced with the test throttle so both runs last the
# same time and the frame rate, not the disk, decides the cost.
#
# Usage: scripts/bench-tui.sh [--dir DIR] [--mb 1024] [--mbps 100] [--runs 3]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIR=/var/tmp/copyscope-bench-tui MB=1024 MBPS=100 RUNS=3
while [ $# -gt 0 ]; do
  case $1 in
    --dir) DIR=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --mbps) MBPS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "bench-tui: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v tmux >/dev/null || { echo "bench-tui: needs tmux" >&2; exit 2; }
(cd "$HERE" && cargo build --release --quiet --features test-hooks)
BIN=${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope
mkdir -p "$DIR"
[ -f "$DIR/src.bin" ] && [ "$(stat -c %s "$DIR/src.bin")" = $((MB << 20)) ] ||
  head -c $((MB << 20)) /dev/urandom > "$DIR/src.bin"
export COPYSCOPE_TEST_THROTTLE_BPS=$((MBPS * 1000000))

# Runs a command and prints "user sys wall" seconds of it and its children.
cat > "$DIR/rusage.py" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[2:])
w = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{r.ru_utime:.3f} {r.ru_stime:.3f} {w:.3f}\n")
PY

plain_run() {
  rm -rf "$DIR/dst"
  python3 "$DIR/rusage.py" "$DIR/plain.cpu" "$BIN" --plain --no-sync "$DIR/src.bin" "$DIR/dst" >/dev/null
  cat "$DIR/plain.cpu"
}

tui_run() {
  rm -rf "$DIR/dst" "$DIR/tui.cpu" "$DIR/tty.out"
  local sock=copyscope-bench-$$
  tmux -L $sock -f /dev/null new-session -d -s b -x 120 -y 40 \
    -e COPYSCOPE_TEST_THROTTLE_BPS="$COPYSCOPE_TEST_THROTTLE_BPS" -e TERM=xterm-256color \
    "python3 $DIR/rusage.py $DIR/tui.cpu $BIN --no-sync $DIR/src.bin $DIR/dst; sleep 30"
  tmux -L $sock pipe-pane -o -t b "cat > $DIR/tty.out"
  for _ in $(seq 1 600); do [ -s "$DIR/tui.cpu" ] && break; sleep 0.2; done
  tmux -L $sock kill-server
  local bytes; bytes=$(stat -c %s "$DIR/tty.out")
  echo "$(cat "$DIR/tui.cpu") $bytes"
}

echo "copy: ${MB} MiB paced at ${MBPS} MB/s, ${RUNS} runs each; terminal 120x40"
for i in $(seq 1 "$RUNS"); do
  p=$(plain_run); t=$(tui_run)
  echo "$p" >> "$DIR/plain.all"; echo "$t" >> "$DIR/tui.all"
  read -r pu ps pw <<<"$p"; read -r tu ts tw tb <<<"$t"
  awk -v pu="$pu" -v ps="$ps" -v pw="$pw" -v tu="$tu" -v ts="$ts" -v tw="$tw" -v tb="$tb" -v i="$i" 'BEGIN {
    printf "run %d: plain cpu %.2f s (wall %.1f)  tui cpu %.2f s (wall %.1f)  ratio %.2f  terminal %.0f B/s\n",
      i, pu+ps, pw, tu+ts, tw, (tu+ts)/(pu+ps), tb/tw }'
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
pm=$(awk '{ print $1 + $2 }' "$DIR/plain.all" | median)
tm=$(awk '{ print $1 + $2 }' "$DIR/tui.all" | median)
bm=$(awk '{ print $4 / $3 }' "$DIR/tui.all" | median)
awk -v p="$pm" -v t="$tm" -v b="$bm" 'BEGIN {
  printf "median: plain cpu %.2f s, tui cpu %.2f s, ratio %.2f (target <= 1.10); terminal %.0f B/s (target <= 4096)\n", p, t, t / p, b }'
rm -f "$DIR/plain.all" "$DIR/tui.all"
