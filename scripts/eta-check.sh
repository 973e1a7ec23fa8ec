#!/usr/bin/env bash
# eta-check.sh — the finish time against the real end, on the slow disk (root; needs
# ../shared/lab/slowdev): mounts a --mbps MB/s ext4 disk, copies a --mb MB file onto it with
# `copyscope --json --record` (the machine's dirty limits as they are, unless --dirty-bytes and
# --bg-bytes set them for the run; restored afterwards), and prints what the ETA said once 25 %
# of the bytes were copied against when the data was really on disk (the summary's eta_check),
# then the ETA every 5 s of the run. docs/eta.md keeps the figures.
#
# Usage: sudo [COPYSCOPE_BIN=path] scripts/eta-check.sh [--mbps 40] [--mb 2000]
#          [--dirty-bytes N --bg-bytes N] [--work /var/tmp/copyscope-eta] [--keep FILE.jsonl]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SLOWDEV=${SLOWDEV:-$HERE/../shared/lab/slowdev/slowdev.sh}
MBPS=40 MB=2000 WORK=/var/tmp/copyscope-eta KEEP= DIRTY= BG=
while [ $# -gt 0 ]; do
  case $1 in
    --mbps) MBPS=$2; shift 2 ;;
    --mb) MB=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --dirty-bytes) DIRTY=$2; shift 2 ;;
    --bg-bytes) BG=$2; shift 2 ;;
    *) echo "eta-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "eta-check: needs root (loop device, vm sysctls)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "eta-check: needs python3 (reads the JSON)" >&2; exit 2; }
BIN=${COPYSCOPE_BIN:-}
if [ -z "$BIN" ]; then
  (cd "$HERE" && cargo build --release --quiet)
  BIN=${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope
fi
mkdir -p "$WORK"
size_mb=$(( MB * 2 + 512 ))
"$SLOWDEV" up "$WORK/dev" --mbps "$MBPS" --size "${size_mb}M" >/dev/null
old_bg=$(cat /proc/sys/vm/dirty_background_ratio) old_r=$(cat /proc/sys/vm/dirty_ratio)
old_bgb=$(cat /proc/sys/vm/dirty_background_bytes) old_rb=$(cat /proc/sys/vm/dirty_bytes)
restore() {
  # Writing a *_ratio resets the matching *_bytes to 0, and the other way round.
  if [ "$old_rb" != 0 ]; then echo "$old_rb" > /proc/sys/vm/dirty_bytes; else echo "$old_r" > /proc/sys/vm/dirty_ratio; fi
  if [ "$old_bgb" != 0 ]; then echo "$old_bgb" > /proc/sys/vm/dirty_background_bytes; else echo "$old_bg" > /proc/sys/vm/dirty_background_ratio; fi
  "$SLOWDEV" down "$WORK/dev" || true
}
trap restore EXIT
[ -f "$WORK/src-$MB.bin" ] || head -c $((MB * 1000000)) /dev/urandom > "$WORK/src-$MB.bin"
sync
if [ -n "$DIRTY" ]; then echo "$DIRTY" > /proc/sys/vm/dirty_bytes; fi
if [ -n "$BG" ]; then echo "$BG" > /proc/sys/vm/dirty_background_bytes; fi
echo "eta-check: $MB MB onto a $MBPS MB/s ext4 disk; vm.dirty_bytes=$(cat /proc/sys/vm/dirty_bytes) dirty_ratio=$(cat /proc/sys/vm/dirty_ratio) dirty_background_bytes=$(cat /proc/sys/vm/dirty_background_bytes) dirty_background_ratio=$(cat /proc/sys/vm/dirty_background_ratio)"
"$BIN" --json --interval 100 --record "$WORK/run.jsonl" "$WORK/src-$MB.bin" "$WORK/dev/mnt/" > "$WORK/run.json"
[ -z "$KEEP" ] || cp "$WORK/run.jsonl" "$KEEP"
python3 - "$WORK/run.json" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
prog = [l for l in lines if l.get('type') == 'progress' and l.get('eta')]
summary = [l for l in lines if l.get('type') == 'summary'][-1]
shown = -5.0
print("    t   done  ETA (to cache / on disk ± band), as the live run said it")
for p in prog:
    if p['t'] - shown < 5.0:
        continue
    shown = p['t']
    e = p['eta']
    pct = 100.0 * p['bytes_copied'] / max(p['bytes_total'], 1)
    disk = "unmeasured" if e['on_disk_s'] is None else f"{p['t'] + e['on_disk_s']:6.1f} s (± {e['on_disk_band_s'] or 0:.1f})"
    print(f"{p['t']:6.1f} {pct:5.1f} %  ends: cache {p['t'] + e['to_cache_s']:6.1f} s, disk {disk}")
c = summary.get('eta_check')
if not c:
    sys.exit("eta-check: the summary has no eta_check")
print(c['text'])
if c['error_s'] is not None and c['real_s']:
    print(f"error: {c['error_s']:+.1f} s = {100.0 * c['error_s'] / c['real_s']:+.1f} % of the real end ({c['real_s']:.1f} s), "
          f"{100.0 * c['error_s'] / (c['real_s'] - c['at_s']):+.1f} % of the time left at 25 %")
PY
