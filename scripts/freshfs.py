"""A destination for one benchmark round: the file removed, or a fresh ext4 file system (a
sparse 8 GiB loop image, mounted at `mnt`) made for it. On this VM's disk a file system that
has seen deletes writes up to 10x slower, so every ext4 round gets a new one; 8 GiB so that a
1 GiB copy is never on the nearly-full path (write-behind in pieces, src/copy/writeback.rs)."""
import os
import subprocess
import time


def fresh_destination(ext4, dst, img, mnt):
    if not ext4:
        if os.path.exists(dst):
            os.remove(dst)
        return
    # Every mount of the round before (an umount refused while the kernel still holds the
    # file system would leave them stacked).
    for _ in range(200):
        if subprocess.run(["mountpoint", "-q", mnt]).returncode != 0:
            break
        if subprocess.run(["umount", mnt], stderr=subprocess.DEVNULL).returncode != 0:
            time.sleep(0.05)
    if os.path.exists(img):
        os.remove(img)
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["truncate", "-s", "8G", img], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    subprocess.run(["mount", "-o", "loop", img, mnt], check=True)
