#!/usr/bin/env python3
"""make-tree.py ROOT N: the benchmarks' tree of N files of 1 KiB-1 MiB (log-uniform sizes,
seeded, so every run and machine gets the same sizes) in 100 x 10 directories."""
import os
import random
import sys

root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
block = os.urandom(1 << 20)
for i in range(n):
    d = os.path.join(root, f"d{i % 100:02d}", f"s{(i // 100) % 10}")
    os.makedirs(d, exist_ok=True)
    size = int(2 ** rng.uniform(10, 20))  # 1 KiB .. 1 MiB, log-uniform
    off = rng.randrange(0, (1 << 20) - size + 1)
    with open(os.path.join(d, f"f{i:05d}.bin"), "wb") as f:
        f.write(block[off:off + size])
