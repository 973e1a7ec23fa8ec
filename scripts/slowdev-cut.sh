#!/bin/bash
# slowdev-cut.sh — a copy onto the slow lab disk (../shared/lab/slowdev) whose write rate is cut
# mid-copy: a real disk that slows down, e.g. an SMR disk whose cache filled or a RAID resync.
# The copy runs at the disk's speed (default dirty limits: the loop device's own bdi limit paces
# the writer), then `slowdev.sh set` cuts the disk from --mbps to --slow for --secs seconds.
# copyscope --plain must show a drop for the cut while it lasts ("(so far)" lines) with the cause
# "the disk slowed: A → B …; the writer was held by dirty throttling", and its time lost must be
# within 20 % of the truth the writer-truth sampler measures beside it (the disk's shortfall
# against its rate before the cut: Σ dt × (1 − rate ÷ rate before)).
#
# Usage (root): scripts/slowdev-cut.sh --bin PATH/copyscope [--tsampler PATH/tsampler]
#                 [--mb 800] [--mbps 40] [--slow 5] [--at 6] [--secs 8] [--bdi-ratio 3] [--out DIR]
#                 [-- COPY-OPTIONS...]   e.g. -- --no-sync (no final flush, so no early write-behind)
# Writes OUT/cut.jsonl (the recording), OUT/cut.out (the --plain lines), OUT/cut.truth.csv and
# prints the check. Exit status 1 when the check fails.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SLOWDEV=${SLOWDEV:-/work/shared/lab/slowdev/slowdev.sh}
BIN= TS= MB=800 MBPS=40 SLOW=5 AT=6 SECS=8 OUT= BDI_RATIO=3
COPY_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; COPY_ARGS=("$@"); break ;;
    --bin) BIN=$2; shift 2 ;;
    --tsampler) TS=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --mbps) MBPS=$2; shift 2 ;;
    --slow) SLOW=$2; shift 2 ;;
    --at) AT=$2; shift 2 ;;
    --secs) SECS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --bdi-ratio) BDI_RATIO=$2; shift 2 ;;
    *) echo "slowdev-cut: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$BIN" ] || { echo "slowdev-cut: --bin PATH/copyscope is required" >&2; exit 2; }
if [ -z "$TS" ]; then
  TS=/tmp/slowdev-cut-tsampler
  gcc -O2 -o "$TS" /work/shared/lab/writer-truth/tsampler.c
fi
[ -n "$OUT" ] || OUT=$HERE/target/slowdev-cut/$(date -u +%Y%m%dT%H%M%SZ)
WORK=$(mktemp -d /var/tmp/slowdev-cut.XXXXXX)
SHM=$(mktemp -d /dev/shm/slowdev-cut.XXXXXX)
mkdir -p "$OUT"
cleanup() {
  "$SLOWDEV" set "$WORK/dev" --mbps 0 >/dev/null 2>&1 || true
  "$SLOWDEV" down "$WORK/dev" >/dev/null 2>&1 || true
  rm -rf "$SHM" "$WORK"
}
trap cleanup EXIT
mono() { python3 -c 'import time; print(time.monotonic())'; }

# 8 GB: far more free space than the page cache can hold, so the copy is not paced by its
# nearly-full write-behind but by the kernel, as on a real disk.
"$SLOWDEV" up "$WORK/dev" --mbps "$MBPS" --size 8G >/dev/null
LOOP=$(basename "$(cat "$WORK/dev/loopdev")")
# The disk's own share of the dirty limit (per device, nothing else on the machine changes):
# the kernel paces the writer at the disk's speed after a few hundred MB, as with lowered
# limits, so the cut comes while the copy runs at the disk's speed (--bdi-ratio 0 keeps the
# default: then a copy smaller than the page cache's limit is all flush).
BDI=/sys/class/bdi/$(cat "/sys/class/block/$LOOP/dev")
if [ "$BDI_RATIO" != 0 ]; then
  echo 1 > "$BDI/strict_limit"
  echo "$BDI_RATIO" > "$BDI/max_ratio"
fi
head -c $(( MB << 20 )) /dev/urandom > "$SHM/src.bin"
sync

T0=$(mono)
COLUMNS=100 "$BIN" --plain --record "$OUT/cut.jsonl" "${COPY_ARGS[@]}" "$SHM/src.bin" "$WORK/dev/mnt/" > "$OUT/cut.out" 2> "$OUT/cut.err" &
PID=$!
"$TS" $PID 100 - "$LOOP" > "$OUT/cut.truth.csv" 2>/dev/null &
TSPID=$!
sleep "$AT"
"$SLOWDEV" set "$WORK/dev" --mbps "$SLOW" >/dev/null
ON=$(mono)
# The cut lasts --secs from when it took effect.
python3 -c "import time; time.sleep(max(0, $ON + $SECS - time.monotonic()))"
"$SLOWDEV" set "$WORK/dev" --mbps "$MBPS" >/dev/null
OFF=$(mono)
RC=0; wait $PID || RC=$?
wait $TSPID || true
echo "copyscope rc $RC; cut at $(python3 -c "print(f'{$ON-$T0:.1f} s to {$OFF-$T0:.1f} s')")"

python3 - "$OUT" "$T0" "$ON" "$OFF" <<'PY'
import csv, re, sys
out, t0, on, off = sys.argv[1], *map(float, sys.argv[2:])
rows = list(csv.DictReader(open(f"{out}/cut.truth.csv")))
pts = []
for a, b in zip(rows, rows[1:]):
    dt = float(b["t_mono"]) - float(a["t_mono"])
    if dt <= 0:
        continue
    rate = (int(b["dev_wr_sect"]) - int(a["dev_wr_sect"])) * 512 / dt
    held = "balance_dirty_pages" in b["threads"]
    pts.append((float(a["t_mono"]), dt, rate, held))
before = [p for p in pts if on - 3 <= p[0] < on]
ref = sum(p[2] * p[1] for p in before) / max(sum(p[1] for p in before), 1e-9)
cut = [p for p in pts if on <= p[0] < off + 2]
lost = sum(p[1] * max(0.0, 1 - p[2] / ref) for p in cut)
during = [p for p in pts if on + 1 <= p[0] < off]
dev = sum(p[2] * p[1] for p in during) / max(sum(p[1] for p in during), 1e-9)
held = sum(1 for p in during if p[3]) / max(len(during), 1)
print(f"truth: disk {ref/1e6:.1f} MB/s before the cut, {dev/1e6:.1f} MB/s during it; "
      f"the writer in balance_dirty_pages in {held*100:.0f} % of the samples; "
      f"the disk's shortfall {lost:.1f} s")

text = open(f"{out}/cut.out").read()
finals = [l for l in text.splitlines() if "drop" in l and "the disk slowed" in l and "so far" not in l]
live = [l for l in text.splitlines() if "the disk slowed" in l and "so far" in l]
ok = True
if not finals:
    print("FAIL: no drop names the disk slowing"); ok = False
else:
    print("copyscope:", finals[-1].strip())
print(f"live lines naming it while it lasted: {len(live)}")
if not live:
    print("FAIL: not shown while it lasted"); ok = False
m = re.search(r"([0-9.]+) s lost", text)
# The drop's own time lost is in the summary's per-cause figures ("disk slowed N s").
m = re.search(r"disk slowed ([0-9.]+) s", text)
if m:
    got = float(m.group(1))
    err = abs(got - lost) / lost if lost > 0 else 0
    print(f"time lost: copyscope {got:.1f} s, truth {lost:.1f} s ({err*100:.0f} % off)")
    if err > 0.2:
        print("FAIL: lost time more than 20 % off"); ok = False
else:
    print("FAIL: no 'disk slowed N s' lost figure in the summary"); ok = False
sys.exit(0 if ok else 1)
PY
