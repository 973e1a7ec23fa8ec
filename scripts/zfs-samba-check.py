#!/usr/bin/env python3
"""zfs-samba-check.py DIR: checks one run of scripts/zfs-samba-stalls.sh against its truth.

DIR holds watch.jsonl (copyscope's recording of the watch), watch.out, truth.csv (the lab's
writer-truth sampler on the smbd that served the upload) and smbclient.txt. Checks:
  1. every stall the truth sampler saw — at least 1 s during which smbd's wchar did not move
     and smbd was in D with a txg wait (txg_wait_synced/txg_wait_open/dmu_tx_wait/dmu_tx_delay)
     on its kernel stack — overlaps a drop of the recording that names a txg sync;
  2. the watch's intake rate (the model's average, from `copyscope replay --json`) is within
     5 % of smbclient's own average;
  3. the uploaded file (f.bin) is the file the watch shows.
Prints one line per stall and a verdict; exits 1 if a check fails.
Env: COPYSCOPE_BIN (default target/release/copyscope beside this script's repo).
"""
import json
import os
import re
import subprocess
import sys

TXG_WAITS = ("txg_wait_synced", "txg_wait_open", "dmu_tx_wait", "dmu_tx_delay")


def truth_stalls(path, min_s=1.0):
    rows = []
    with open(path) as f:
        header = f.readline().strip().split(",")
        i_raw, i_w, i_th = header.index("t_raw"), header.index("wchar"), header.index("threads")
        for line in f:
            parts = line.rstrip("\n").split(",", len(header) - 1)
            if len(parts) < len(header):
                continue
            rows.append((float(parts[i_raw]), int(parts[i_w]), parts[i_th]))
    stalls, start = [], None
    for prev, cur in zip(rows, rows[1:]):
        held = cur[1] == prev[1] and any(
            t.split(":")[1:2] == ["D"] and any(w in t for w in TXG_WAITS)
            for t in cur[2].split(";")
        )
        if held and start is None:
            start = prev[0]
        if not held and start is not None:
            if prev[0] - start >= min_s:
                stalls.append((start, prev[0]))
            start = None
    if start is not None and rows[-1][0] - start >= min_s:
        stalls.append((start, rows[-1][0]))
    return stalls


def recording(path):
    drops, offset = [], None
    with open(path) as f:
        for line in f:
            v = json.loads(line)
            if v.get("type") == "event" and v.get("kind") == "drop":
                drops.append(v)
            if v.get("type") == "sample" and offset is None and v.get("zfs"):
                offset = v["zfs"].get("birth_offset_ns")
    return drops, offset


def main(d):
    ok = True
    drops, offset = recording(os.path.join(d, "watch.jsonl"))
    if offset is None:
        print("no ZFS samples in the recording")
        return 1
    stalls = truth_stalls(os.path.join(d, "truth.csv"))
    for a, b in stalls:
        a_ns, b_ns = a * 1e9 + offset, b * 1e9 + offset
        hit = [x for x in drops if x["t_ns"] < b_ns and x["end_ns"] > a_ns]
        txg = [x for x in hit if any(c.get("cause") == "txg_sync" for c in x.get("causes", []))]
        first = txg[0]["causes"][0] if txg else (hit[0]["causes"][0] if hit else None)
        status = "caught" if txg else ("drop without txg" if hit else "MISSED")
        ok &= bool(txg)
        print(f"stall {a_ns / 1e9:7.1f}-{b_ns / 1e9:7.1f} s ({b - a:5.1f} s): {status} {first or ''}")
    print(f"truth stalls >= 1 s: {len(stalls)}; drops in the recording: {len(drops)}")
    text = open(os.path.join(d, "smbclient.txt")).read()
    m = re.search(r"average ([0-9.]+) kb/s", text)
    binary = os.environ.get("COPYSCOPE_BIN") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "copyscope")
    out = subprocess.run([binary, "replay", "--json", os.path.join(d, "watch.jsonl")],
                         capture_output=True, text=True)
    summary = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {}
    intake = summary.get("to_cache_bps")
    if "NT_STATUS_IO_TIMEOUT" in text:
        # The client gave up during a sync (the seed's own failure): it prints no average,
        # so there is nothing to compare the intake with; the stalls above are the point.
        print(f"smbclient timed out (NT_STATUS_IO_TIMEOUT); intake {intake / 1e6 if intake else 0:.2f} MB/s")
    elif m and intake:
        client = float(m.group(1)) * 1024
        diff = intake / client - 1
        ok &= abs(diff) <= 0.05
        print(f"intake {intake / 1e6:.2f} MB/s, smbclient {client / 1e6:.2f} MB/s ({diff:+.1%})")
    else:
        ok = False
        print(f"cannot compare rates: smbclient {'ok' if m else 'no average'}, replay {out.returncode}")
    shown = "f.bin" in open(os.path.join(d, "watch.out")).read()
    ok &= shown
    print(f"uploaded file shown: {shown}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
