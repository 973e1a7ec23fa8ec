#!/usr/bin/env python3
"""exact-setup-cost.py — what each step of the exact trace's tracefs instance costs in CPU of
the thread that makes it (CLOCK_THREAD_CPUTIME_ID: kernel time included, no sampling), the
steps copyscope takes in src/sample/exact/tracefs.rs in the same order: mkdir, tracing_on 0,
trace_clock mono, buffer_size_kb and the throttle event's format read, the four filters and
the trigger, the three enables, the pipe opened, tracing_on 1; then 30 switches of this
thread traced (5 ms sleeps, each with its stack) and the pipe read, tracing_on 0, rmdir.
Prints each step's median over --rounds, and the sum.

Usage: scripts/exact-setup-cost.py [--rounds 8]   (root; mounts tracefs when it is not)
"""
import os, statistics, subprocess, sys, time

TRACEFS = "/sys/kernel/tracing"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 8
    if os.geteuid() != 0:
        sys.exit("exact-setup-cost: the trace needs root")
    if not os.path.isdir(f"{TRACEFS}/instances"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=True)
    cost = {}

    def step(name, fn):
        a = time.thread_time_ns()
        fn()
        cost.setdefault(name, []).append((time.thread_time_ns() - a) / 1e6)

    me = os.getpid()
    for i in range(rounds):
        d = f"{TRACEFS}/instances/copyscope-cost-{me}-{i}"
        ev = f"{d}/events"
        step("mkdir", lambda: os.mkdir(d))
        step("tracing_on 0", lambda: write(f"{d}/tracing_on", "0"))
        step("trace_clock mono", lambda: write(f"{d}/trace_clock", "mono"))
        step("buffer_size_kb, format read", lambda: (
            open(f"{d}/buffer_size_kb").read(),
            open(f"{ev}/writeback/balance_dirty_pages/format").read()))
        pid = f"prev_pid == {me}"
        step("filters and trigger", lambda: (
            write(f"{ev}/sched/sched_switch/filter", f"({pid}) && prev_state & 115"),
            write(f"{ev}/sched/sched_switch/trigger", f"stacktrace if ({pid}) && prev_state & 3"),
            write(f"{ev}/sched/sched_wakeup/filter", f"pid == {me}"),
            write(f"{ev}/writeback/balance_dirty_pages/filter", f"common_pid == {me}")))
        step("three enables", lambda: (
            write(f"{ev}/sched/sched_switch/enable", "1"),
            write(f"{ev}/sched/sched_wakeup/enable", "1"),
            write(f"{ev}/writeback/balance_dirty_pages/enable", "1")))
        pipe = os.open(f"{d}/trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        step("tracing_on 1", lambda: write(f"{d}/tracing_on", "1"))
        for _ in range(30):
            time.sleep(0.005)

        def drain():
            try:
                while os.read(pipe, 65536):
                    pass
            except BlockingIOError:
                pass

        step("30 traced switches read", drain)
        step("tracing_on 0 (stop)", lambda: write(f"{d}/tracing_on", "0"))
        os.close(pipe)
        step("rmdir", lambda: os.rmdir(d))
    total = 0.0
    for name, v in cost.items():
        m = statistics.median(v)
        total += m
        print(f"{name:30} {m:6.2f} ms  (min {min(v):.2f}, max {max(v):.2f})")
    print(f"{'sum of medians':30} {total:6.2f} ms  over {rounds} rounds, load {os.getloadavg()[0]:.1f}")


main()
