#!/usr/bin/env python3
"""Convert a ZFS lab time-series capture (sampler.c output) into a copyscope recording.

usage: zfs-capture-to-recording.py CAPTURE_DIR OUT.jsonl

CAPTURE_DIR holds timeseries.csv (100 ms samples of a dd onto ZFS), txgs-raw.log (the
last txgs rows at each sample) and meta.txt. The output follows docs/recording.md,
format version 1:

- samples: engine.bytes_copied = dd's wchar; zfs.txgs = the txgs rows seen at that
  sample; zfs.dmu_tx and arc_anon from the kstats; no page-cache thresholds, diskstats or
  CPU (the lab sampler did not record them, so those parts are absent, not zero).
- t = 0 is the last sample before dd started. After dd exits its wchar is no longer
  readable, so samples after the dd phase carry dd's reported total.
- birth_offset_ns (txg birth on CLOCK_MONOTONIC_RAW -> sample clock) is estimated from
  when each new open txg first appears, to within one sample.
- events: txg sync started/committed at their exact kstat times, ZFS throttle bursts
  (dmu_tx_dirty_delay rising), flush start/end (the capture's `sync` phase), and speed
  drops found with the DESIGN §5a rule (below 50 % of the median of the last 5 s of
  non-drop samples for >= 300 ms, over when back at 80 %), attributed to the txg whose
  sync overlaps the drop most and to the ZFS throttle when its counter rose. This is a
  stand-in for the model's detector; `copyscope replay` through the model supersedes it.
"""
import csv
import json
import re
import statistics
import sys
from pathlib import Path


def main():
    cap, out = Path(sys.argv[1]), Path(sys.argv[2])
    meta = dict(
        line.split("=", 1)
        for line in (cap / "meta.txt").read_text().splitlines()
        if "=" in line and not line.startswith(("cmdline", "mem"))
    )
    started = re.search(r"start=(\S+)", (cap / "meta.txt").read_text()).group(1)
    uname = re.search(r"uname=(\S+)", (cap / "meta.txt").read_text()).group(1)
    zfs_version = re.search(r"zfs=(\S+)", (cap / "meta.txt").read_text()).group(1)
    write_line = re.search(r"write: (\d+) MiB with dd bs=(\S+) from (\S+) .* to (\S+)",
                           (cap / "meta.txt").read_text())
    mib, bs, src, dst = write_line.groups()
    total = int(mib) * 1024 * 1024
    dd_secs = float(re.search(r"copied, ([\d.]+) s", (cap / "dd.log").read_text().splitlines()[-1]).group(1))
    sync_secs = float(meta["sync_seconds"])
    dirty_max = int(meta["zfs_dirty_data_max"])

    rows = list(csv.DictReader(open(cap / "timeseries.csv")))
    # txgs rows per sample, keyed by the sample's t string.
    raw = {}
    cur = None
    for line in open(cap / "txgs-raw.log"):
        if line.startswith("## t="):
            cur = line[5:].strip()
            raw[cur] = []
        elif cur is not None and line.strip():
            f = line.split()
            if len(f) == 12 and f[0].isdigit():
                raw[cur].append(f)

    first_dd = next(i for i, r in enumerate(rows) if r["phase"] == "dd")
    t0 = float(rows[first_dd - 1]["t_s"])
    keep = [r for r in rows[first_dd - 1:] if r["phase"] != "done"]
    ns = lambda r: round((float(r["t_s"]) - t0) * 1e9)

    # Birth offset: a txg's birth is when it opened; it first shows up between the
    # previous sample and this one.
    lo, hi = -10**30, 10**30
    seen = set()
    prev_t = None
    for r in rows:
        t = round((float(r["t_s"]) - t0) * 1e9)
        for f in raw.get(r["t_s"], []):
            txg, birth = int(f[0]), int(f[1])
            if txg not in seen and prev_t is not None and f[2] == "O":
                lo, hi = max(lo, prev_t - birth), min(hi, t - birth)
            seen.add(txg)
        prev_t = t
    offset = (lo + hi) // 2

    def txg_row(f):
        n = list(map(int, f[:2])) + [f[2]] + list(map(int, f[3:]))
        keys = ["txg", "birth", "state", "ndirty", "nread", "nwritten", "reads", "writes",
                "otime", "qtime", "wtime", "stime"]
        return dict(zip(keys, n))

    samples = []
    for r in keep:
        after_dd = r["phase"] in ("sync", "tail")
        done = 1 if after_dd else 0
        samples.append({
            "type": "sample",
            "t_ns": ns(r),
            "engine": {
                "bytes_copied": total if after_dd else int(r["dd_wchar_bytes"]),
                "files_done": done, "files_failed": 0, "bytes_total": total,
                "files_total": 1, "scan_done": True, "read_ns": 0, "write_ns": 0,
            },
            "zfs": {
                "pool": dst.split("/")[1],
                "txgs": [txg_row(f) for f in raw.get(r["t_s"], [])],
                "dmu_tx": {
                    "assigned": 0, "delay": int(r["dmu_tx_delay"]),
                    "dirty_throttle": int(r["dmu_tx_dirty_throttle"]),
                    "dirty_delay": int(r["dmu_tx_dirty_delay"]),
                    "dirty_over_max": int(r["dmu_tx_dirty_over_max"]),
                },
                "arc_anon": int(r["arc_anon_size"]),
                "birth_offset_ns": offset,
            },
        })

    events = []
    # txg syncs from every committed row.
    txgs = {}
    for f in (f for fs in raw.values() for f in fs):
        row = txg_row(f)
        if row["state"] == "C" and row["stime"] > 0:
            txgs[row["txg"]] = row
    windows = []
    end_ns = samples[-1]["t_ns"]
    for txg, row in sorted(txgs.items()):
        s = row["birth"] + row["otime"] + row["qtime"] + row["wtime"] + offset
        e = s + row["stime"]
        if e < 0 or s > end_ns:
            continue
        windows.append((s, e, row))
        if s >= 0:
            events.append({"type": "event", "t_ns": s, "kind": "txg_sync_started", "txg": txg})
        events.append({"type": "event", "t_ns": e, "kind": "txg_committed", "txg": txg,
                       "ndirty": row["ndirty"], "nwritten": row["nwritten"], "stime_ns": row["stime"]})

    # ZFS throttle bursts: runs of samples where dmu_tx_dirty_delay rose.
    run_start, run_sum = None, 0
    for a, b in zip(samples, samples[1:]):
        d = b["zfs"]["dmu_tx"]["dirty_delay"] - a["zfs"]["dmu_tx"]["dirty_delay"]
        if d > 0:
            if run_start is None:
                run_start, run_sum = b["t_ns"], 0
            run_sum += d
        elif run_start is not None:
            events.append({"type": "event", "t_ns": run_start, "kind": "zfs_delay", "delays": run_sum})
            run_start = None
    if run_start is not None:
        events.append({"type": "event", "t_ns": run_start, "kind": "zfs_delay", "delays": run_sum})

    # Drops (DESIGN §5a).
    speeds = []
    for a, b in zip(samples, samples[1:]):
        dt = (b["t_ns"] - a["t_ns"]) / 1e9
        speeds.append((a["t_ns"], b["t_ns"], (b["engine"]["bytes_copied"] - a["engine"]["bytes_copied"]) / dt))
    dd_end = next(s["t_ns"] for s in samples if s["engine"]["bytes_copied"] >= total)
    normal = []
    i = 0
    while i < len(speeds):
        ta, tb, v = speeds[i]
        if tb > dd_end:
            break
        ref = statistics.median(normal[-50:]) if len(normal) >= 5 else None
        if ref and v < 0.5 * ref:
            j = i
            while j < len(speeds) and speeds[j][2] < 0.8 * ref and speeds[j][1] <= dd_end:
                j += 1
            start, stop = speeds[i][0], speeds[j - 1][1]
            if stop - start >= 300_000_000:
                vmin = min(s[2] for s in speeds[i:j])
                lost = sum((ref - s[2]) * (s[1] - s[0]) / 1e9 for s in speeds[i:j])
                causes = []
                best = max(windows, key=lambda w: max(0, min(w[1], stop) - max(w[0], start)), default=None)
                if best and min(best[1], stop) > max(best[0], start):
                    row = best[2]
                    causes.append({"cause": "txg_sync", "txg": row["txg"], "ndirty": row["ndirty"],
                                   "stime_ns": row["stime"],
                                   "dirty_pct_of_max": round(row["ndirty"] / dirty_max * 100, 1)})
                before = next((s for s in reversed(samples) if s["t_ns"] <= start - 1_000_000_000), samples[0])
                after = next((s for s in samples if s["t_ns"] >= stop), samples[-1])
                dd = after["zfs"]["dmu_tx"]["dirty_delay"] - before["zfs"]["dmu_tx"]["dirty_delay"]
                om = after["zfs"]["dmu_tx"]["dirty_over_max"] - before["zfs"]["dmu_tx"]["dirty_over_max"]
                if dd > 0 or om > 0:
                    causes.append({"cause": "zfs_throttle", "delays": dd, "over_max": om})
                if not causes:
                    causes.append({"cause": "unknown"})
                events.append({"type": "event", "t_ns": start, "kind": "drop", "end_ns": stop,
                               "reference_bps": ref, "min_bps": vmin, "bytes_lost": lost, "causes": causes})
                i = j
                continue
            normal.append(v)
            i += 1
            continue
        if v > 0:
            normal.append(v)
        i += 1

    first_sync = next(s for s, r in zip(samples, keep) if r["phase"] == "sync")
    flush_done_ns = first_sync["t_ns"] + round(sync_secs * 1e9)
    events.append({"type": "event", "t_ns": first_sync["t_ns"], "kind": "flush_started",
                   "dirty": first_sync["zfs"]["arc_anon"]})
    events.append({"type": "event", "t_ns": flush_done_ns, "kind": "flush_done", "secs": sync_secs})
    engine = [
        {"type": "engine", "t_ns": samples[0]["t_ns"], "event": {"kind": "file_started", "path": dst, "size": total}},
        {"type": "engine", "t_ns": first_sync["t_ns"], "event": {"kind": "file_done", "path": dst, "bytes": total}},
        {"type": "engine", "t_ns": first_sync["t_ns"], "event": {"kind": "flush_started"}},
        {"type": "engine", "t_ns": flush_done_ns, "event": {"kind": "flush_done"}},
    ]

    drops = [e for e in events if e["kind"] == "drop"]
    lost = {}
    for d in drops:
        label = {"txg_sync": "txg sync", "zfs_throttle": "ZFS write throttle"}.get(d["causes"][0]["cause"], "unknown")
        lost[label] = lost.get(label, 0.0) + d["bytes_lost"] / d["reference_bps"]
    durable = float(meta["dd_seconds"]) + sync_secs
    summary = {
        "type": "summary", "bytes": total, "files": 1, "failed": 0,
        "elapsed_secs": dd_secs, "durable_secs": round(durable, 3),
        "to_cache_bps": total / dd_secs, "durable_bps": total / durable,
        "drops": len(drops), "lost_secs_by_cause": sorted(lost.items(), key=lambda kv: -kv[1]),
        "exit_code": 0,
    }
    header = {
        "type": "header", "format_version": 1, "copyscope_version": "0.1.0",
        "started_at": started.replace("+00:00", "Z"),
        "host": "zfs-lab (QEMU VM, 2 vCPU, 4 GB)", "kernel": uname,
        "command_line": ["dd", f"if={src}", f"of={dst}", f"bs={bs}", f"count={mib}"],
        "sources": [src], "destination": dst,
        "environment": {
            "fs_type": "zfs", "mount_source": dst.split("/")[1], "mount_point": "/" + dst.split("/")[1],
            "zfs_pool": dst.split("/")[1], "zfs_dataset": dst.split("/")[1], "dest_disks": [],
            "tunables": [[k, meta[k]] for k in ("zfs_dirty_data_max", "zfs_dirty_data_sync_percent",
                                                 "zfs_delay_min_dirty_percent", "zfs_txg_timeout", "zfs_arc_max")],
            "zfs_dirty_data_max": dirty_max,
            "zfs_sync_percent": int(meta["zfs_dirty_data_sync_percent"]),
            "zfs_delay_percent": int(meta["zfs_delay_min_dirty_percent"]),
            "page_size": 4096,
            "notes": [f"OpenZFS {zfs_version}; recorded by the ZFS lab sampler (sampler.c) and converted "
                      "with scripts/zfs-capture-to-recording.py: no diskstats, page-cache thresholds or CPU "
                      "in this capture"],
        },
        "interval_ms": 100,
    }
    lines = [header]
    merged = sorted(samples + events + engine, key=lambda l: (l["t_ns"], {"sample": 0, "engine": 1, "event": 2}[l["type"]]))
    lines += merged + [summary]
    with open(out, "w") as f:
        for l in lines:
            f.write(json.dumps(l, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"{out}: {len(samples)} samples, {len(events)} events ({len(drops)} drops), offset {offset} ns "
          f"(±{(hi - lo) / 2e6:.0f} ms)", file=sys.stderr)


if __name__ == "__main__":
    main()
