#!/bin/bash
# bench-exact-threads.sh — what the exact trace costs, thread by thread: the same 1 GiB copy
# with the trace (root, the default) and without it (COPYSCOPE_EXACT=0), in alternating order,
# each under `perf record -e cpu-clock -c 100000` (one sample per 0.1 ms of a thread's CPU,
# children inherited). Whole-process CPU moves by a third from run to run on ext4 (the copy
# worker's writes); the trace's own cost does not hide in that noise here, since it is counted
# where it is spent: the sampler's and the trace thread's CPU, the `rmdir` child's, and, in the
# copy's own threads, the kernel functions that record a traced switch (the filter, the
# trigger, the stack walk, the ring buffer). Prints per-thread medians and the trace's cost as
# a share of the sampled run's CPU. --ext4: a fresh ext4 file system per run (a loop image in
# /dev/shm, made and mounted outside the timing); else the destination is in --dir.
#
# Usage: scripts/bench-exact-threads.sh [--runs 8] [--size 1G] [--dir /dev/shm] [--ext4]  (root)
# Env: COPYSCOPE_BIN (default $CARGO_TARGET_DIR/release/copyscope or target/release/copyscope).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
RUNS=8 SIZE=1G DIR=/dev/shm EXT4=0
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --ext4) EXT4=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench-exact-threads: unknown argument $1" >&2; exit 2 ;;
  esac
done
BIN=${COPYSCOPE_BIN:-${CARGO_TARGET_DIR:-$HERE/target}/release/copyscope}
[ -x "$BIN" ] || { echo "bench-exact-threads: $BIN missing (cargo build --release)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench-exact-threads: the trace needs root" >&2; exit 2; }
command -v perf > /dev/null || { echo "bench-exact-threads: perf missing (apt install linux-perf)" >&2; exit 2; }
WORK=$(mktemp -d "$DIR/copyscope-bench-threads.XXXXXX")
IMG=/dev/shm/copyscope-bench-threads-$$.img
trap 'while mountpoint -q "$WORK/mnt" 2>/dev/null; do umount "$WORK/mnt" || umount -l "$WORK/mnt" || break; done; rm -rf "$WORK" "$IMG"' EXIT
head -c "$SIZE" /dev/urandom > "$WORK/src"
cat "$WORK/src" > /dev/null

SCRIPTS="$HERE/scripts" python3 - "$BIN" "$WORK" "$RUNS" "$EXT4" "$IMG" <<'PY'
import os, re, statistics, subprocess, sys, time
sys.path.insert(0, os.environ["SCRIPTS"])
import freshfs
bin_, work, runs, ext4, img = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
src, mnt = f"{work}/src", f"{work}/mnt"
dst = f"{mnt}/dst" if ext4 else f"{work}/dst"
# Kernel functions that run only because a switch or a wakeup of a traced thread is recorded.
TRACE_SYMS = re.compile(r"^(stack_trace_save|arch_stack_walk|unwind_|__unwind_|orc_|__orc_|"
                        r"__ftrace_trace_stack|ftrace_trace_stack|trace_event_|trace_buffer_|"
                        r"event_triggers_|stacktrace_trigger|filter_match_preds|filter_pred_|"
                        r"ring_buffer_|rb_|__rb_|trace_event_buffer|trace_save_cmdline|"
                        r"tracing_generic_entry_update|trace_.*_raw_event|trace_event_raw_event_|"
                        r"perf_trace_|__trace_stack|trace_stack|kernel_text_address|"
                        r"__kernel_text_address|is_bpf_text_address|is_ftrace_trampoline|"
                        r"is_module_text_address|__module_address|bpf_ksym_find)")

def fresh_destination():
    freshfs.fresh_destination(ext4, dst, img, mnt)

def group(comm):
    if comm.startswith("copyscope-copy") or comm.startswith("copyscope-work"):
        return "copy worker"
    return {"copyscope-sampl": "sampler", "copyscope-sampler": "sampler",
            "copyscope-trace": "trace setup", "copyscope-engin": "engine",
            "copyscope-engine": "engine", "copyscope-scan": "scanner", "copyscope": "main",
            "rmdir": "rmdir child",
            "copyscope-wback": "write-behind child"}.get(comm, "other")

def one(exact):
    fresh_destination()
    subprocess.run(["sync"], check=True)
    env = dict(os.environ, COPYSCOPE_EXACT="1" if exact else "0")
    data = f"{work}/perf.data"
    # The sleep keeps the rmdir child that removes the instance inside the recording.
    cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-c", "100000", "-o", data, "--",
           "sh", "-c", f"'{bin_}' --plain --no-sync '{src}' '{dst}' > {work}/out 2>&1; sleep 0.4"]
    subprocess.run(cmd, env=env, check=True, stderr=subprocess.DEVNULL)
    rows = subprocess.run(["perf", "report", "-i", data, "--stdio", "-q", "-F", "sample,comm,sym",
                           "--sort", "comm,sym"], capture_output=True, text=True).stdout
    ms, trace_ms = {}, 0.0
    for line in rows.splitlines():
        m = re.match(r"\s*(\d+)\s+(\S+(?: \S+)*?)\s+\[([k.])\]\s+(\S+)", line)
        if not m:
            continue
        n, comm, space, sym = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        g = group(comm.strip())
        if g == "other" and comm.strip() in ("sh", "sleep", "perf"):
            continue
        ms[g] = ms.get(g, 0.0) + n * 0.1
        if space == "k" and g not in ("sampler", "trace setup", "rmdir child") and TRACE_SYMS.match(sym):
            trace_ms += n * 0.1
    ms["traced switches in the copy's threads"] = trace_ms
    return ms

rows = {"exact": [], "sampled": []}
for i in range(runs):
    order = [True, False] if i % 2 == 0 else [False, True]
    for exact in order:
        r = one(exact)
        rows["exact" if exact else "sampled"].append(r)
        print(("exact  " if exact else "sampled") + "  " +
              ", ".join(f"{k} {v:.1f} ms" for k, v in sorted(r.items())), flush=True)
keys = sorted({k for v in rows.values() for r in v for k in r})
med = {kind: {k: statistics.median(r.get(k, 0.0) for r in v) for k in keys} for kind, v in rows.items()}
print(f"\nmedian ms per copy over {runs} runs of each")
print(f"{'thread':40} {'exact':>9} {'sampled':>9}")
for k in keys:
    print(f"{k:40} {med['exact'][k]:9.1f} {med['sampled'][k]:9.1f}")
own = ["sampler", "trace setup", "rmdir child"]
extra = sum(med["exact"].get(k, 0) - med["sampled"].get(k, 0) for k in own) \
    + med["exact"]["traced switches in the copy's threads"] - med["sampled"]["traced switches in the copy's threads"]
total = statistics.median(sum(v for k, v in r.items() if k != "traced switches in the copy's threads") for r in rows["sampled"])
print(f"\nthe trace's cost: {extra:.1f} ms a copy = {extra / total * 100:.2f} % of the sampled run's "
      f"{total:.0f} ms of CPU (sampler, trace setup, rmdir child, and the traced switches' kernel work "
      f"in the copy's threads)")
PY
