#!/usr/bin/env python3
"""watch-check.py — `copyscope watch --comm NAME` beside real writers on this machine, each
checked against what reached the files: rsync (local, and to localhost over ssh with a throwaway
sshd), cp -r, tar through a pipe, and dd. For each run: the watch's total (the recording's last
intake figure) against the destination's bytes (the sizes of the files the writer made), and
the watch's busiest second against the busiest second of the destination's own growth (polled
every 100 ms beside it): a counter that adds socket writes, or a reaped child again, shows up
as a total or a second above the truth.

Usage: sudo scripts/watch-check.py [--bin PATH] [--work DIR] [--mb 1000] [--slowdev MBPS]
                                   [--only rsync-local,rsync-ssh,cp,tar,dd]
  --slowdev MBPS: the destination is the lab's throttled ext4 disk (../shared/lab/slowdev)
  prints one line per run and exits 1 when a total is off by more than 2 % or a second spikes.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tree(src, mb):
    """A tree of about MB megabytes: three big files and the benchmarks' small-file tree."""
    stamp = os.path.join(src, ".made-%d" % mb)
    if os.path.exists(stamp):
        return
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    small = max(mb // 5, 1)
    subprocess.run([sys.executable, os.path.join(HERE, "scripts/make-tree.py"),
                    os.path.join(src, "small"), str(small * 1000 // 150)], check=True)
    per = (mb - small) // 3
    for i in range(3):
        with open(os.path.join(src, "big%d.bin" % i), "wb") as f:
            for _ in range(per):
                f.write(os.urandom(1000 * 1000))
    open(stamp, "w").close()


def file_bytes(root):
    total = 0
    for d, _, files in os.walk(root):
        for n in files:
            try:
                st = os.lstat(os.path.join(d, n))
            except FileNotFoundError:
                continue
            if n.startswith(".made-"):
                continue
            total += st.st_size
    return total


class Poller(threading.Thread):
    """The destination's bytes every 100 ms: the truth the watch is held to."""

    def __init__(self, root):
        super().__init__(daemon=True)
        self.root, self.points, self.stop = root, [], False

    def run(self):
        while not self.stop:
            self.points.append((time.monotonic(), file_bytes(self.root)))
            time.sleep(0.1)


def peak_second(points):
    """The most bytes gained over any 1 s span of (t seconds, bytes) points, per second."""
    best, j = 0.0, 0
    for i in range(len(points)):
        while points[i][0] - points[j][0] > 1.0:
            j += 1
        if j > 0 and points[i][0] - points[j - 1][0] >= 1.0:
            t0, b0 = points[j - 1]
            best = max(best, (points[i][1] - b0) / (points[i][0] - t0))
    return best


def sshd(work):
    d = os.path.join(work, "sshd")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.makedirs("/run/sshd", exist_ok=True)
    for k in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(d, k)],
                       check=True)
    shutil.copy(os.path.join(d, "client_key.pub"), os.path.join(d, "authorized_keys"))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with open(os.path.join(d, "sshd_config"), "w") as f:
        f.write(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n"
                f"AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin yes\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\n"
                f"UsePAM no\nPidFile {d}/sshd.pid\n")
    exe = next(p for p in ("/usr/sbin/sshd", "/usr/bin/sshd") if os.path.exists(p))
    proc = subprocess.Popen([exe, "-D", "-f", os.path.join(d, "sshd_config"),
                             "-E", os.path.join(d, "sshd.log")])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    ssh = (f"ssh -p {port} -i {d}/client_key -o StrictHostKeyChecking=no "
           "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes")
    return proc, ssh


def run(name, comm, cmd, dst, args, shell=False):
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    subprocess.run(["sync"])
    rec = os.path.join(args.work, f"watch-{name}.jsonl")
    out = open(os.path.join(args.work, f"watch-{name}.out"), "w")
    watch = subprocess.Popen([args.bin, "watch", dst, "--comm", comm, "--plain", "--record", rec,
                              "--until-idle", "3", "--duration", "900"], stdout=out,
                             stderr=subprocess.STDOUT)
    poll = Poller(dst)
    poll.start()
    time.sleep(1.5)
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, shell=shell)
    wall = time.monotonic() - t0
    watch.wait()
    poll.stop = True
    poll.join()
    truth = file_bytes(dst)
    lines = [json.loads(l) for l in open(rec)]
    pts = [(s["t_ns"] / 1e9, s["engine"]["bytes_copied"]) for s in lines if s.get("type") == "sample"]
    total = pts[-1][1]
    err = (total - truth) / truth * 100
    w_peak, t_peak = peak_second(pts), peak_second(poll.points)
    drops = sum(1 for l in lines if l.get("type") == "event" and l.get("kind") == "drop")
    ok = abs(err) <= 2.0 and w_peak <= 1.25 * t_peak + 5e6
    print(f"{name:12s} {'ok ' if ok else 'BAD'} watch {total/1e6:9.1f} MB  files {truth/1e6:9.1f} MB"
          f"  ({err:+.2f} %)  busiest second: watch {w_peak/1e6:7.1f} MB/s, files "
          f"{t_peak/1e6:7.1f} MB/s  writer {wall:5.1f} s  drops {drops}", flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "target")), "release/copyscope"))
    ap.add_argument("--work", default="/var/tmp/copyscope-watch-check")
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--slowdev", type=int)
    ap.add_argument("--only", default="rsync-local,rsync-ssh,cp,tar,dd")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    src = os.path.join(args.work, "src")
    tree(src, args.mb)
    base, dev = args.work, None
    if args.slowdev:
        dev = os.path.join(args.work, "dev")
        slow = os.path.join(HERE, "../shared/lab/slowdev/slowdev.sh")
        if not os.path.exists(slow):
            slow = os.path.join(HERE, "tests/slowdev/slowdev.sh")
        out = subprocess.run([slow, "up", dev, "--mbps", str(args.slowdev), "--size",
                              f"{args.mb * 2 + 500}M"], check=True, capture_output=True, text=True)
        base = out.stdout.strip().splitlines()[-1]
    dst = os.path.join(base, "dst")
    ok, sshd_proc = True, None
    try:
        for name in args.only.split(","):
            if name == "rsync-local":
                ok &= run(name, "rsync", ["rsync", "-a", src + "/", dst + "/"], dst, args)
            elif name == "rsync-ssh":
                if sshd_proc is None:
                    sshd_proc, ssh = sshd(args.work)
                ok &= run(name, "rsync", ["rsync", "-a", "-e", ssh, src + "/",
                                          f"root@127.0.0.1:{dst}/"], dst, args)
            elif name == "cp":
                ok &= run(name, "cp", ["cp", "-r", src, os.path.join(dst, "tree")], dst, args)
            elif name == "tar":
                ok &= run(name, "tar", f"tar -C '{src}' -cf - . | tar -C '{dst}' -xf -", dst, args,
                          shell=True)
            elif name == "dd":
                ok &= run(name, "dd", ["dd", "if=/dev/zero", f"of={dst}/big.bin", "bs=1M",
                                       f"count={args.mb}", "status=none"], dst, args)
    finally:
        if sshd_proc:
            sshd_proc.terminate()
            sshd_proc.wait()
        if dev:
            shutil.rmtree(dst, ignore_errors=True)
            subprocess.run([slow, "down", dev])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
