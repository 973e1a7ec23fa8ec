#!/bin/bash
# pace-check.sh — `--pace auto` against the same copy unpaced, on the slow ext4 lab disk
# (../shared/lab/slowdev, root): a fresh DISK_MBPS disk per run (an ext4 that had a file
# deleted writes ~10 × slower), the default dirty limits, --ROUNDS rounds in turn unpaced /
# paced. From each run's recording (`copyscope replay --json`) it prints the drops, the
# slowest 1-second rate after the first 5 s against the disk's sustained rate, the longest
# stretch with no byte handed over (the writer stalled), and the end (copy + flush) — the
# issue's targets: no drop below half the sustained rate, no stall over 1 s, the end within
# 10 % of the unpaced run's.
#
# Usage: sudo scripts/pace-check.sh [--mbps 40] [--mb 1200] [--rounds 2] [--work DIR]
# Env: COPYSCOPE_BIN (default $CARGO_TARGET_DIR/release/copyscope or target/release/copyscope).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
MBPS=40 MB=1200 ROUNDS=2 WORK=/var/tmp/copyscope-pace
while [ $# -gt 0 ]; do
  case $1 in
    --mbps) MBPS=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "pace-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
SLOWDEV=${SLOWDEV:-$HERE/../shared/lab/slowdev/slowdev.sh}
[ -x "$BIN" ] || { echo "pace-check: $BIN missing (cargo build --release)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "pace-check: the slow disk needs root" >&2; exit 2; }
mkdir -p "$WORK/out"
SRC=$WORK/src.bin
[ -s "$SRC" ] || head -c "${MB}M" /dev/urandom > "$SRC"
cat "$SRC" > /dev/null
one() {  # one MODE ROUND
  local mode=$1 r=$2 dev="$WORK/dev" args=()
  [ "$mode" = paced ] && args=(--pace auto)
  bash "$SLOWDEV" down "$dev" >/dev/null 2>&1 || true
  local mnt
  mnt=$(bash "$SLOWDEV" up "$dev" --mbps "$MBPS" --size 3G | tail -n1)
  sync
  COLUMNS=100 "$BIN" --plain "${args[@]}" --record "$WORK/out/$mode-$r.jsonl" "$SRC" "$mnt/" \
    > "$WORK/out/$mode-$r.out" 2>&1 || true
  bash "$SLOWDEV" down "$dev" >/dev/null 2>&1 || true
  "$BIN" replay --json "$WORK/out/$mode-$r.jsonl" > "$WORK/out/$mode-$r.json"
}
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then one unpaced "$r"; one paced "$r"; else one paced "$r"; one unpaced "$r"; fi
done
python3 - "$WORK/out" "$ROUNDS" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def figures(name):
    samples, events, summary = [], [], None
    for line in open(f"{out}/{name}.jsonl"):
        d = json.loads(line)
        if d.get("type") == "sample":
            samples.append((d["t_ns"] / 1e9, d["engine"]["bytes_copied"]))
    for line in open(f"{out}/{name}.json"):
        d = json.loads(line)
        if d.get("type") == "summary":
            summary = d
        elif d.get("kind") == "drop":
            events.append(d)
    # The longest stretch with no byte handed over, after the first byte and before the last.
    moving = [s for s in samples if s[1] > 0]
    last = max(b for _, b in samples)
    stall, since = 0.0, None
    for (t, b), (t2, b2) in zip(samples, samples[1:]):
        if b == 0 or b >= last:
            since = None
            continue
        if b2 == b:
            since = t if since is None else since
            stall = max(stall, t2 - since)
        else:
            since = None
    # 1-second rates after the first 5 s, until the last byte.
    end_t = next(t for t, b in samples if b >= last)
    rates, j = [], 0
    for i, (t, b) in enumerate(samples):
        if t < 5.0 or t + 1.0 > end_t:
            continue
        while j < len(samples) and samples[j][0] < t + 1.0:
            j += 1
        if j < len(samples):
            rates.append((samples[j][1] - b) / (samples[j][0] - t))
    s = summary or {}
    return len(events), min(rates) if rates else 0, stall, s.get("elapsed_s", 0), s.get("verdict", {}).get("text", "")
print(f"{'run':<12} {'drops':>5} {'min 1-s MB/s':>12} {'longest stall s':>15} {'end s':>7}")
ends = {"paced": [], "unpaced": []}
for r in range(1, rounds + 1):
    for mode in ("unpaced", "paced"):
        n, low, stall, end, verdict = figures(f"{mode}-{r}")
        ends[mode].append(end)
        print(f"{mode + '-' + str(r):<12} {n:>5} {low / 1e6:>12.1f} {stall:>15.1f} {end:>7.1f}")
        print(f"  verdict: {verdict}")
pe, ue = sorted(ends["paced"]), sorted(ends["unpaced"])
print(f"end paced / unpaced (medians): {pe[len(pe) // 2] / ue[len(ue) // 2]:.2f}")
PY
