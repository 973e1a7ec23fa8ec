#!/bin/bash
# bench-exact.sh — what the exact trace costs: the same 1 GiB copy with it (root, the default)
# and without it (COPYSCOPE_EXACT=0: the sampled stacks only), in rounds of rotating order, each timed
# by its own rusage (wait4: user + system seconds of copyscope and everything it waited for;
# the kernel's work at each traced switch is charged to the copy's own threads). The source is
# read once first, so every run copies from the page cache; each copy runs with --no-sync (the
# final syncfs writes the whole GiB back in copyscope's own context, and how much of that
# lands there rather than in the kernel's flusher threads varies by a factor of 5 from run
# to run, drowning the figure); each destination is removed and synced away before the next.
# Each run starts after the instance of the one before is gone: its removal (an rmdir child
# that outlives copyscope, ~0.1–0.2 s in the kernel) would otherwise overlap the next run and
# be charged to it. --ext4 copies onto a fresh ext4 file system for every run (a loop image
# in /dev/shm, made and mounted outside the timing): on this VM's disk a file system that
# has seen deletes writes up to 10x slower.
#
# Usage: scripts/bench-exact.sh [--runs 7] [--size 1G] [--dir /var/tmp] [--ext4]   (root)
# Env: COPYSCOPE_BIN (default $CARGO_TARGET_DIR/release/copyscope or target/release/copyscope);
# COPYSCOPE_BEFORE=BINARY runs a second build's pair in the same rounds (before and after).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
RUNS=7 SIZE=1G DIR=/var/tmp EXT4=0
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --ext4) EXT4=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "bench-exact: unknown argument $1" >&2; exit 2 ;;
  esac
done
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "bench-exact: $BIN missing (cargo build --release)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench-exact: the trace needs root" >&2; exit 2; }
WORK=$(mktemp -d "$DIR/copyscope-bench-exact.XXXXXX")
trap 'while mountpoint -q "$WORK/mnt" 2>/dev/null; do umount "$WORK/mnt" || umount -l "$WORK/mnt" || break; done; rm -rf "$WORK" /dev/shm/copyscope-bench-exact-$$.img' EXIT
head -c "$SIZE" /dev/urandom > "$WORK/src"
cat "$WORK/src" > /dev/null

SCRIPTS="$HERE/scripts" python3 - "$BIN" "$WORK" "$RUNS" "$EXT4" "/dev/shm/copyscope-bench-exact-$$.img" "${COPYSCOPE_BEFORE:-}" <<'PY'
import glob, os, statistics, subprocess, sys, time
sys.path.insert(0, os.environ["SCRIPTS"])
import freshfs
bin_, work, runs, ext4, img, before = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5], sys.argv[6]
src = f"{work}/src"
mnt = f"{work}/mnt"
dst = f"{mnt}/dst" if ext4 else f"{work}/dst"

def fresh_destination():
    freshfs.fresh_destination(ext4, dst, img, mnt)

def settle(pid):
    """Waits (at most 5 s) until the run's trace instance has been removed."""
    for _ in range(500):
        if not glob.glob(f"/sys/kernel/tracing/instances/copyscope-{pid}-*"):
            return
        time.sleep(0.01)

def one(binary, exact):
    """One copy: (wall s, user + system s of copyscope and its children, evidence)."""
    fresh_destination()
    subprocess.run(["sync"], check=True)
    env = dict(os.environ, COPYSCOPE_EXACT="1" if exact else "0")
    out = open(f"{work}/out", "w")
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "--plain", "--no-sync", src, dst], stdout=out, stderr=out, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    settle(p.pid)
    out.close()
    text = open(f"{work}/out").read()
    ev = text.split("evidence: ", 1)[1].split("\n", 1)[0] if "evidence: " in text else "?"
    used = ev[ev.find("[") + 1:ev.find("]")] if "[" in ev else ev
    return wall, ru.ru_utime + ru.ru_stime, used

# (label, binary, traced); with COPYSCOPE_BEFORE a second build's pair runs in the same rounds.
kinds = [("exact", bin_, True), ("sampled", bin_, False)]
if before:
    kinds += [("exact-before", before, True), ("sampled-before", before, False)]
rows = {k: [] for k, _, _ in kinds}
for i in range(runs):
    # Round i starts at the i-th kind: a run's place in the round cancels out.
    for label, binary, traced in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:
        w, c, ev = one(binary, traced)
        rows[label].append((w, c))
        print(f"{label:14} wall {w:6.3f} s  cpu {c:6.3f} s  evidence: {ev}", flush=True)
for k, v in rows.items():
    cpu = [c for _, c in v]
    print(f"{k:14} cpu median {statistics.median(cpu):.3f} s (min {min(cpu):.3f}, max {max(cpu):.3f}),"
          f" wall median {statistics.median(w for w, _ in v):.3f} s")
for suffix in ("", "-before") if before else ("",):
    pairs = list(zip(rows["exact" + suffix], rows["sampled" + suffix]))
    ratios = sorted(a[1] / b[1] for a, b in pairs)
    ratio = statistics.median(ratios)
    q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    extra = statistics.median(a[1] - b[1] for a, b in pairs)
    name = "exact / sampled" + (" (before)" if suffix else "")
    print(f"cpu {name}, median of {len(pairs)} pairs: {ratio:.4f} ({(ratio - 1) * 100:+.1f} %),"
          f" quartiles {q1:.3f}–{q3:.3f}, extra {extra * 1000:+.1f} ms a copy")
PY
