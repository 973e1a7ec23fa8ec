#!/usr/bin/env bash
# The cost of --metrics: two `copyscope watch` processes side by side on the same directory
# for SECS seconds (default 60), one without the endpoint and one with --metrics scraped every
# second by curl; prints each one's utime+stime (/proc/PID/stat fields 14 and 15) over the
# window, read 3 s after start and again SECS later. Usage: bench-metrics.sh BIN DIR [SECS]
set -euo pipefail
bin=$1 dir=$2 secs=${3:-60}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(mktemp -d)
"$bin" watch "$dir" --plain --duration $((secs + 10)) >"$out/plain.txt" 2>&1 &
plain=$!
"$bin" watch "$dir" --plain --duration $((secs + 10)) --metrics "127.0.0.1:$port" >"$out/metrics.txt" 2>&1 &
served=$!
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sleep 3
a0=$(ticks $plain) b0=$(ticks $served)
scrapes=0
for _ in $(seq "$secs"); do
  curl -fsS "http://127.0.0.1:$port/metrics" -o /dev/null && scrapes=$((scrapes + 1))
  sleep 1
done
a1=$(ticks $plain) b1=$(ticks $served)
hz=$(getconf CLK_TCK)
echo "window: ${secs} s (+ the scrapes' own time), CLK_TCK $hz, $scrapes scrapes served"
echo "without --metrics: $((a1 - a0)) ticks"
echo "with --metrics, scraped every second: $((b1 - b0)) ticks"
echo "scrape size: $(curl -fsS "http://127.0.0.1:$port/metrics" | wc -c) bytes"
kill -TERM $plain $served
wait $plain $served || true
rm -rf "$out"
