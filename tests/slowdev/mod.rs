//! The 40 MB/s lab disk for tests: tests/slowdev/slowdev.sh (a copy of the lab's script) brings
//! up an ext4 filesystem on a loop device throttled by qemu-storage-daemon; root only. A test
//! using it declares `mod tmux;` too (for `have`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::tmux::have;

/// The mounted slow disk; taken down on drop.
pub struct SlowDisk {
    dir: PathBuf,
    pub mnt: PathBuf,
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        // An abandoned flush (the `sync` child of a cancel during the flush) holds the mount
        // until the kernel has written the data back: retry until it lets go.
        let start = Instant::now();
        loop {
            let _ = Command::new("bash")
                .arg("tests/slowdev/slowdev.sh")
                .arg("down")
                .arg(&self.dir)
                .status();
            if !self.mnt.exists() || start.elapsed() > Duration::from_secs(90) {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

impl SlowDisk {
    /// Changes the disk's write speed while it runs (slowdev.sh set): a real, timed drop.
    pub fn set_mbps(&self, mbps: u32) {
        let st = Command::new("bash")
            .arg("tests/slowdev/slowdev.sh")
            .arg("set")
            .arg(&self.dir)
            .args(["--mbps", &mbps.to_string()])
            .status()
            .expect("slowdev.sh set");
        assert!(st.success(), "slowdev.sh set --mbps {mbps}");
    }
}

/// Brings up a 40 MB/s, 2 GB ext4 disk, or says why it cannot.
pub fn slow_disk(dir: &Path, more_tools: &[&str]) -> Result<SlowDisk, String> {
    slow_disk_of("2G", dir, more_tools)
}

/// [`slow_disk`] of another size (a sparse image: only what is written takes space). On a
/// small disk ext4 makes a writer wait, uninterruptibly, for the writeback of everything
/// dirty once the dirty data passes half of the free space (`ext4_nonda_switch`); a test that
/// loads the disk with other writers but is not about a nearly full disk needs a big one.
pub fn slow_disk_of(size: &str, dir: &Path, more_tools: &[&str]) -> Result<SlowDisk, String> {
    if !rustix::process::geteuid().is_root() {
        return Err("not root (loop devices and mount need root; CI runs as root)".into());
    }
    for tool in ["qemu-storage-daemon", "mkfs.ext4", "losetup"]
        .iter()
        .chain(more_tools)
    {
        if !have(tool) {
            return Err(format!("{tool} is missing (.ci/run installs it)"));
        }
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("/dev/fuse is missing (the container has no FUSE device)".into());
    }
    let out = Command::new("bash")
        .arg("tests/slowdev/slowdev.sh")
        .arg("up")
        .arg(dir)
        .args(["--mbps", "40", "--size", size])
        .output()
        .map_err(|e| format!("slowdev.sh: {e}"))?;
    let disk = SlowDisk {
        dir: dir.to_path_buf(),
        mnt: dir.join("mnt"),
    };
    if !out.status.success() {
        return Err(format!(
            "slowdev.sh up failed (no free loop device?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(disk)
}
