#!/usr/bin/env bash
# term-bytes.sh — the bytes the TUI sends to a terminal over SSH, per second (DESIGN §10,
# issue 11 item 8): average and worst second, at 120x40 and 200x60, over a copy long enough
# for the time axis to rescale four times (10 s, 20 s, 30 s, 1 min).
#
# Method: a private sshd on 127.0.0.1 (its own keys and config in a temp dir); a tmux session
# of the measured size runs `script --log-timing` around `ssh -tt` running copyscope, so the
# timing log holds every chunk ssh delivered to the local terminal with its time. The copy
# is paced with the test throttle (COPYSCOPE_TEST_THROTTLE_BPS) so every run lasts the same.
# The first second with output (the first full frame, ~4-6 KB) is reported apart. The largest
# frame after it: chunks less than 50 ms apart summed as one frame (frames are >= 200 ms apart).
#
# With --replay REC the same is measured for `copyscope replay REC` at 1x for --secs seconds:
# the screen's content is then the same on every run, for comparing two builds.
#
# Usage: scripts/term-bytes.sh [--bin PATH] [--secs 70] [--sizes "120x40 200x60"] [--dir DIR]
#                              [--replay RECORDING]
# Needs root (sshd), tmux, script (util-linux), ssh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN="" SECS=70 SIZES="120x40 200x60" DIR=/var/tmp/copyscope-term-bytes REPLAY=""
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --secs) SECS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --replay) REPLAY=$(realpath "$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "term-bytes: unknown argument $1" >&2; exit 2 ;;
  esac
done
for c in tmux script ssh ssh-keygen; do
  command -v $c >/dev/null || { echo "term-bytes: needs $c" >&2; exit 2; }
done
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$SSHD" ] || { echo "term-bytes: needs sshd (openssh-server)" >&2; exit 2; }
if [ -z "$BIN" ]; then
  (cd "$HERE" && cargo build --release --quiet --features test-hooks)
  BIN=$HERE/target/release/copyscope
fi
rm -rf "$DIR"; mkdir -p "$DIR/src" /run/sshd
# 1 MB/s for SECS seconds.
[ -n "$REPLAY" ] || head -c $((SECS * 1000000)) /dev/urandom > "$DIR/src/big.bin"
ssh-keygen -q -t ed25519 -N "" -f "$DIR/host_key"
ssh-keygen -q -t ed25519 -N "" -f "$DIR/client_key"
cp "$DIR/client_key.pub" "$DIR/authorized_keys"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$DIR/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_key
AuthorizedKeysFile $DIR/authorized_keys
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile $DIR/sshd.pid
PrintMotd no
PrintLastLog no
EOF
"$SSHD" -D -f "$DIR/sshd_config" -E "$DIR/sshd.log" &
SSHD_PID=$!
SOCK=copyscope-term-bytes-$$
cleanup() {
  for size in $SIZES; do tmux -L $SOCK-$size kill-server 2>/dev/null || true; done
  kill $SSHD_PID 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done

for size in $SIZES; do
  w=${size%x*} h=${size#*x}
  rm -rf "$DIR/dst" "$DIR/timing.$size" "$DIR/done.$size"
  if [ -n "$REPLAY" ]; then
    remote="TERM=xterm-256color timeout $SECS $BIN replay $REPLAY"
  else
    remote="COPYSCOPE_TEST_THROTTLE_BPS=1000000 TERM=xterm-256color $BIN --no-sync $DIR/src/big.bin $DIR/dst"
  fi
  ssh_cmd="ssh -tt -p $PORT -i $DIR/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1 '$remote'"
  tmux -L $SOCK-$size -f /dev/null new-session -d -s m -x "$w" -y "$h" -e TERM=xterm-256color \
    "script -q --log-timing $DIR/timing.$size -c \"$ssh_cmd\" /dev/null; touch $DIR/done.$size; sleep 5"
  for _ in $(seq 1 $(((SECS + 60) * 5))); do [ -e "$DIR/done.$size" ] && break; sleep 0.2; done
  tmux -L $SOCK-$size kill-server 2>/dev/null || true
  # Per-second totals from the timing log ("delay bytes" per chunk).
  awk -v size="$size" '
    { t += $1; s = int(t); b[s] += $2; total += $2; if (s > last) last = s
      if (first == "" && $2 > 0) first = s
      # One frame: chunks less than 50 ms apart; frames of the first and the last second not counted.
      if ($1 >= 0.05) { fsz[nf] = fb; fst[nf++] = fstart; fb = 0; fstart = s }
      fb += $2 }
    END {
      fsz[nf] = fb; fst[nf++] = fstart; big = 0
      for (i = 0; i < nf; i++) if (fst[i] > first && fst[i] < last && fsz[i] > big) big = fsz[i]
      # The first second with output holds the first full frame; the last one the summary
      # printed after the TUI: both are reported apart.
      worst = 0; ws = 0; n = 0; rest = 0
      for (i = first + 1; i < last; i++) { n++; rest += b[i]; if (b[i] > worst) { worst = b[i]; ws = i - first } }
      printf "%s: %d s, %d bytes; first frame %d B; then: average %.0f B/s, worst second %d B (%d s in), largest frame %d B\n",
        size, last - first, total, b[first], (n ? rest / n : 0), worst, ws, big
    }' "$DIR/timing.$size"
done
