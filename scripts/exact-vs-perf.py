#!/usr/bin/env python3
"""The copy worker's time by cause from `perf script` of `sched:sched_switch` (with kernel
callchains) and `sched:sched_wakeup`, recorded system-wide by perf's own buffers beside the
copy: every interval of each of the copy's threads (`copyscope-copy*`, the engine `copyscope-engi*`: the ones
copyscope's budget weighs) is running (switched in), waiting for a
CPU (woken or preempted, not yet switched in), or asleep (switched out blocking, until its
wakeup) in the class its switch-out stack names, with the same signatures as the lab's
writer-truth sampler (scripts/exact-vs-truth.py) and, on ZFS, the txg waits. Idle sleeps (futex, poll, a pipe) are left
out, as copyscope's budget leaves them out. Prints the copy phase's shares beside copyscope's
budget (its `--json` summary, flush and pauses left out).

    exact-vs-perf.py PERF_SCRIPT.txt RUN.jsonl
"""
import json, re, sys

COPY_THREADS = ("copyscope-copy", "copyscope-engi")

SIG = [("ext4_nonda_switch", "disk_wait"), ("balance_dirty_pages", "dirty_throttle"),
       ("jbd2_", "journal"), ("start_this_handle", "journal"), ("do_get_write_access", "journal"),
       ("folio_wait_writeback", "disk_wait"), ("wait_on_page_writeback", "disk_wait"),
       ("folio_wait_stable", "disk_wait"), ("rq_qos_wait", "disk_wait"), ("blk_mq_get_tag", "disk_wait"),
       ("file_write_and_wait_range", "sync_writes"), ("filemap_read", "source_read"),
       ("filemap_get_pages", "source_read"), ("ksys_read", "source_read")]
IDLE = ("futex_wait", "do_sys_poll", "do_select", "ep_poll", "pipe_read", "pipe_write",
        "hrtimer_nanosleep", "do_nanosleep")

HEAD = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[\d+\]\s+(?P<t>\d+\.\d+):\s+sched:(?P<ev>\w+):\s*(?P<rest>.*)$")


def events(path):
    """(t, event, fields, stack) for each event of the perf script text."""
    cur = None
    for line in open(path, errors="replace"):
        m = HEAD.match(line)
        if m:
            if cur:
                yield cur
            fields = dict(re.findall(r"(\w+)=(\S+)", m.group("rest")))
            cur = (float(m.group("t")), m.group("ev"), fields, [])
        elif cur and line.strip():
            parts = line.split()
            if len(parts) >= 2:
                cur[3].append(parts[1].split("+")[0])
    if cur:
        yield cur


# ZFS: a whole txg sync waited for on the writer's own behalf (an O_TMPFILE's link, syncfs,
# an fsync the intent log cannot serve) is a sync write; the pool's pace otherwise.
ZFS_OWN_SYNC = ("zfs_link", "zpl_link", "zfs_sync", "zpl_sync_fs", "zfs_fsync")
ZFS_TXG = ("txg_wait_synced", "txg_wait_open", "dmu_tx_wait", "dmu_tx_delay", "dmu_tx_assign")


def classify(stack):
    joined = " ".join(stack)
    if "zil_commit" in joined:
        return "sync_writes"
    if any(f in joined for f in ZFS_TXG):
        return "sync_writes" if any(f in stack for f in ZFS_OWN_SYNC) else "txg_wait"
    if "zfs_read" in joined:
        return "source_read"
    for sig, cls in SIG:
        if sig in joined:
            return cls
    if any(f in joined for f in IDLE):
        return None
    return "other"


# A drop's first cause and the class of the writer's time that shows it.
# Causes found from the devices or other processes (a disk that slowed, another writer, the
# network, a pipeline's stage) are not a class of the writer's waits: not checked here.
CAUSE_CLASS = {"cpu_starved": "cpu_wait", "txg_sync": "txg_wait", "zfs_throttle": "txg_wait",
               "dirty_throttle": "dirty_throttle", "journal_wait": "journal",
               "source_stall": "source_read", "zil_commit": "sync_writes",
               "nearly_full": "disk_wait", "writeback_burst": "disk_wait"}


def drops_check(lines, spans, perf_t0):
    """Each drop's first cause against the class perf saw most of the writer's waits in over
    the drop (copyscope's clock put on perf's at the copy's first file)."""
    drops = {}
    for l in lines:
        if l.get("kind") == "drop" and l.get("type") != "provisional":
            drops[l["t_ns"]] = l
    start = next((l["t"] for l in lines if l.get("kind") == "file_started"), None)
    if not drops or start is None or perf_t0 is None:
        return
    offset = perf_t0 - start
    right = checkable = 0
    print(f"{'drop at':>8} {'s':>5}  {'copyscope: first cause':28} perf: the writer's waits")
    for t_ns, d in sorted(drops.items()):
        lo, hi = t_ns / 1e9 + offset, d["end_ns"] / 1e9 + offset
        by = {}
        for a, b, what in spans:
            if b > lo and a < hi and what != "running":
                by[what] = by.get(what, 0.0) + min(b, hi) - max(a, lo)
        waited = sum(by.values())
        top = max(by, key=by.get) if by else None
        cause = d["causes"][0]["cause"] if d.get("causes") else "unknown"
        checked = cause in CAUSE_CLASS
        ok = checked and CAUSE_CLASS[cause] == top
        right += ok
        checkable += checked
        shares = ", ".join(f"{k} {v / waited * 100:.0f} %" for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:3]) if waited else "none"
        mark = "" if ok else ("   (not a wait class)" if not checked else "   <- differs")
        print(f"{t_ns / 1e9:8.1f} {(d['end_ns'] - t_ns) / 1e9:5.1f}  {cause:28} {shares}{mark}")
    print(f"drops whose first cause is the class perf saw most: {right} of {checkable} checked "
          f"({len(drops)} drops)")


def main():
    perf, run = sys.argv[1], sys.argv[2]
    lines = [json.loads(l) for l in open(run) if l.strip()]
    summ = lines[-1]
    # Each copy thread: since when, and in what (running / cpu_wait / a class / idle).
    state, acc = {}, {}
    first = last = None
    # The copy phase: from the copy workers' first event to their last (the flush after it,
    # which the comparison leaves out, has only the engine thread).
    window = [None, None]
    for t, ev, f, _ in events(perf):
        if ev == "sched_switch" and (f.get("prev_comm", "").startswith("copyscope-copy")
                                     or f.get("next_comm", "").startswith("copyscope-copy")):
            window[0] = t if window[0] is None else window[0]
            window[1] = t

    spans = []

    def add(tid, t):
        since, what = state[tid]
        lo, hi = max(since, window[0]), min(t, window[1])
        if what is not None and hi > lo:
            acc[what] = acc.get(what, 0.0) + (hi - lo)
            spans.append((lo, hi, what))
        state[tid] = (t, what)

    for t, ev, f, stack in events(perf):
        if ev == "sched_switch":
            prev, nxt = int(f.get("prev_pid", -1)), int(f.get("next_pid", -1))
            if f.get("prev_comm", "").startswith(COPY_THREADS):
                first = t if first is None else first
                last = t
                if prev in state:
                    add(prev, t)
                st = f.get("prev_state", "R")
                if st.startswith("R"):
                    state[prev] = (t, "cpu_wait")
                elif st[0] in "XZ":
                    state.pop(prev, None)
                else:
                    state[prev] = (t, classify(stack))
            if f.get("next_comm", "").startswith(COPY_THREADS):
                first = t if first is None else first
                last = t
                if nxt in state:
                    add(nxt, t)
                state[nxt] = (t, "running")
        elif ev == "sched_wakeup" and f.get("comm", "").startswith(COPY_THREADS):
            pid = int(f.get("pid", -1))
            if pid in state and state[pid][1] not in ("running", "cpu_wait"):
                add(pid, t)
                state[pid] = (t, "cpu_wait")
    total = sum(acc.values())
    truth = {k: v / total for k, v in acc.items()} if total else {}
    sl = {s["slice"]: s["secs"] for s in summ["budget"]["slices"] if s["slice"] not in ("flushing", "paused")}
    ct = sum(sl.values())
    cs = {("running" if k == "writing" else k): v / ct for k, v in sl.items()}
    print(f"{'slice':16} {'copyscope':>10} {'perf':>10} {'diff':>6}")
    worst = 0.0
    for k in sorted(set(cs) | set(truth), key=lambda k: -max(cs.get(k, 0), truth.get(k, 0))):
        d = (cs.get(k, 0) - truth.get(k, 0)) * 100
        worst = max(worst, abs(d))
        print(f"{k:16} {cs.get(k, 0) * 100:9.1f}% {truth.get(k, 0) * 100:9.1f}% {d:+6.1f}")
    drops_check(lines, spans, window[0])
    span = (last - first) if first is not None else 0
    print(f"perf: copy threads traced {span:.1f} s ({total:.1f} s of thread time not idle); "
          f"copyscope copying {ct:.1f} s; evidence {summ.get('evidence')}; worst difference {worst:.1f} points")


main()
