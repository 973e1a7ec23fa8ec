#!/usr/bin/env bash
# Records a real `copyscope watch --net lo` run (tests/fixtures/recordings/watch-net-lo.jsonl):
# a python receiver on loopback writes what it receives into a file, a bash sender streams
# 1 MiB writes over /dev/tcp for 2.5 s, pauses 2 s, streams 2.5 s more; the watch follows the
# receiver (--pid) and samples lo's receive counter. The pause is a drop whose cause is the
# network (docs/attribution.md, "network").
# Usage: scripts/record-watch-net.sh OUT.jsonl [COPYSCOPE]
set -euo pipefail
out=$1
bin=${2:-copyscope}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/dst"
cat >"$work/recv.py" <<'PY'
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
with open(os.path.join(d, ".port"), "w") as p:
    p.write(str(s.getsockname()[1]))
c, _ = s.accept()
with open(os.path.join(d, "received.bin"), "wb") as f:
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        f.write(b)
# Alive until the watch has ended (--until-idle): the watch ends on the quiet, not on the
# receiver's exit.
time.sleep(6)
PY
python3 "$work/recv.py" "$work/dst" &
recv=$!
for _ in $(seq 50); do [ -s "$work/dst/.port" ] && break; sleep 0.1; done
port=$(cat "$work/dst/.port")
"$bin" watch --plain --duration 20 --until-idle 3 --net lo --pid "$recv" \
    --record "$out" "$work/dst" &
watch=$!
sleep 1
burst='t=$(( $(date +%s%N) + 2500000000 ));
       while [ $(date +%s%N) -lt $t ]; do head -c 1048576 /dev/zero >&3; sleep 0.02; done'
bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; $burst; sleep 2; $burst"
wait "$recv"
wait "$watch"
