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
    /// The loop device's bdi directory and its settings before [`SlowDisk::limit_dirty`].
    bdi: Option<(PathBuf, String, String)>,
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        // The loop devices outlive the disk: the next user of this one gets its defaults.
        if let Some((bdi, ratio, strict)) = self.bdi.take() {
            let _ = std::fs::write(bdi.join("strict_limit"), strict);
            let _ = std::fs::write(bdi.join("max_ratio"), ratio);
        }
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
    /// Holds this disk's writers once `bytes` of its data are dirty, whatever the rest of the
    /// machine holds (the bdi's `max_bytes` with `strict_limit`, as the kernel sets for FUSE
    /// and some USB disks). Without it a copy under the machine's limits (a fifth of the
    /// memory: 4.3 GB here) is never paced at all.
    pub fn limit_dirty(&mut self, bytes: u64) {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(&self.mnt).unwrap().dev();
        let bdi = PathBuf::from(format!(
            "/sys/class/bdi/{}:{}",
            rustix::fs::major(dev),
            rustix::fs::minor(dev)
        ));
        let read = |f: &str| {
            std::fs::read_to_string(bdi.join(f))
                .unwrap()
                .trim()
                .to_string()
        };
        self.bdi = Some((bdi.clone(), read("max_ratio"), read("strict_limit")));
        std::fs::write(bdi.join("max_bytes"), bytes.to_string()).unwrap();
        std::fs::write(bdi.join("strict_limit"), "1").unwrap();
    }

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
        bdi: None,
    };
    if !out.status.success() {
        return Err(format!(
            "slowdev.sh up failed (no free loop device?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(disk)
}
