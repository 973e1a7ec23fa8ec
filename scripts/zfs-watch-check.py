#!/usr/bin/env python3
"""zfs-watch-check.py — checks a `copyscope watch` recording of a ZFS pool against the pool's
full `txgs` kstat read in the guest after the run (scripts/zfs-watch.sh writes both):

  1. every txg copyscope saw commit (txg_committed events) is a row of the kstat with the same
     ndirty, nwritten and sync time;
  2. every stall of the intake (no byte for >= 1 s between the first and the last byte written)
     lies inside a drop whose cause is a txg sync, and that txg was syncing during the stall;
  3. every txg a drop names is a kstat row with the ndirty and sync time the drop quotes (a drop
     that ended before its txg committed quotes none: that txg must commit later in the recording).

Usage: zfs-watch-check.py RECORDING.jsonl TXGS.txt   (exit 1 and the reasons on a failure)
Prints one line per stall: "stall 12.3-17.9 s (5.6 s): txg 109 (238 MB, synced in 6.07 s)".
"""
import json
import sys

STALL_S = 1.0


def kstat_rows(path):
    rows = {}
    with open(path) as f:
        head = f.readline().split()
        for line in f:
            v = line.split()
            if len(v) != len(head):
                continue
            r = dict(zip(head, v))
            rows[int(r["txg"])] = r
    return rows


def main(rec_path, txgs_path):
    rows = kstat_rows(txgs_path)
    samples, events = [], []
    with open(rec_path) as f:
        for line in f:
            o = json.loads(line)
            if o.get("type") == "sample":
                samples.append((o["t_ns"] / 1e9, o["engine"]["bytes_copied"]))
            elif o.get("type") == "event":
                events.append(o)
    bad = []
    # 1. Committed txgs against the kstat.
    committed = {}
    for e in events:
        if e["kind"] != "txg_committed":
            continue
        committed[e["txg"]] = e
        r = rows.get(e["txg"])
        if r is None:
            bad.append(f"txg {e['txg']} committed in the recording is not in the kstat")
            continue
        for k, col in (("ndirty", "ndirty"), ("nwritten", "nwritten"), ("stime_ns", "stime")):
            if int(r[col]) != e[k]:
                bad.append(f"txg {e['txg']}: {k} {e[k]} in the recording, {r[col]} in the kstat")
    # When each txg synced, on the watch's clock: from its sync start to its commit.
    started = {e["txg"]: e["t_ns"] / 1e9 for e in events if e["kind"] == "txg_sync_started"}
    synced = {
        t: (started.get(t, e["t_ns"] / 1e9 - e["stime_ns"] / 1e9), e["t_ns"] / 1e9)
        for t, e in committed.items()
    }
    drops = [e for e in events if e["kind"] == "drop"]
    # 3. What each drop names.
    for d in drops:
        for c in d["causes"]:
            if c["cause"] != "txg_sync":
                continue
            r = rows.get(c["txg"])
            if r is None:
                bad.append(f"drop at {d['t_ns']/1e9:.1f} s names txg {c['txg']}, not in the kstat")
                continue
            if c.get("ndirty") == 0 and c.get("stime_ns") == 0:
                # A drop that ended before its txg committed is recorded as it was said then
                # ("txg 107 was syncing"); the commit follows in the recording (checked in 1).
                if c["txg"] not in committed:
                    bad.append(f"drop names txg {c['txg']}, which never committed in the recording")
                continue
            if c.get("ndirty") is not None and int(r["ndirty"]) != c["ndirty"]:
                bad.append(f"drop names txg {c['txg']} with ndirty {c['ndirty']}, kstat {r['ndirty']}")
            if c.get("stime_ns") is not None and int(r["stime"]) != c["stime_ns"]:
                bad.append(f"drop names txg {c['txg']} with stime {c['stime_ns']}, kstat {r['stime']}")
    # 2. The intake's stalls, between the first and the last byte.
    first = next((t for t, b in samples if b > 0), None)
    last_b = samples[-1][1] if samples else 0
    last = next((t for t, b in samples if b == last_b), None)
    stalls, since = [], None
    prev_b = None
    for t, b in samples:
        if first is None or t < first or t > last:
            prev_b = b
            continue
        if b == prev_b:
            since = since if since is not None else prev_t
        else:
            if since is not None and prev_t - since >= STALL_S:
                stalls.append((since, t))
            since = None
        prev_b, prev_t = b, t
    if not stalls:
        bad.append("no stall of the intake at all: the pool never held the writer")
    for a, b in stalls:
        held = [d for d in drops if d["t_ns"] / 1e9 <= b and d["end_ns"] / 1e9 >= a]
        named = [
            c["txg"]
            for d in held
            for c in d["causes"]
            if c["cause"] == "txg_sync"
            and c["txg"] in synced
            and synced[c["txg"]][0] <= b
            and synced[c["txg"]][1] >= a
        ]
        if not named:
            bad.append(f"stall {a:.1f}-{b:.1f} s: no drop names a txg that was syncing then")
            continue
        r = rows[named[0]]
        print(
            f"stall {a:.1f}-{b:.1f} s ({b - a:.1f} s): txg {named[0]} "
            f"({int(r['ndirty']) / 1e6:.0f} MB, synced in {int(r['stime']) / 1e9:.2f} s)"
        )
    print(
        f"{len(stalls)} stalls, {len(committed)} txgs committed during the watch "
        f"({min(committed, default=0)}-{max(committed, default=0)}), all matching the kstat"
        if not bad
        else "FAILED"
    )
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
