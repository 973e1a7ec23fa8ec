//! Write-behind is submitted by a child process (the binary run with its hidden argument), so
//! no copyscope thread waits in the block layer's queue: the child's protocol, a real copy onto
//! a nearly full file system, and the early write-behind of a large file on the 40 MB/s lab
//! disk (root, /dev/fuse, qemu-storage-daemon; skipped with the reason where missing).

mod slowdev;
mod tmux;
mod util;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use copyscope::copy::writeback::CHILD_ARG;
use copyscope::sample::mountinfo::{find_mount, parse_mountinfo};
use util::{Mount, bin, copyscope, data, is_root, os, text};

/// The child reads "OFFSET LENGTH" lines, submits each range of the file it holds as its
/// stderr, answers one byte per line, ignores lines it cannot read, and ends with its input.
#[test]
fn the_child_answers_each_piece_and_ends_with_its_input() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("dst");
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    let mut child = Command::new(bin())
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::OpenOptions::new().write(true).open(&path).unwrap())
        .spawn()
        .unwrap();
    let mut requests = child.stdin.take().unwrap();
    let mut acks = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    writeln!(requests, "0 524288").unwrap();
    acks.read_exact(&mut one).unwrap();
    assert_eq!(&one, b"k");
    writeln!(requests, "not a request\n524288 524288").unwrap();
    acks.read_exact(&mut one).unwrap();
    assert_eq!(&one, b"k");
    drop(requests);
    let mut rest = Vec::new();
    acks.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "one answer per piece: {rest:?}");
    assert!(child.wait().unwrap().success());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        vec![7u8; 1 << 20],
        "the file is untouched"
    );
}

/// 40 MiB onto a 64 MiB file system: past a third of it the copy hands its writes to the
/// child. The copy is whole, and no child outlives it.
#[test]
fn a_copy_onto_a_nearly_full_file_system_is_whole_and_leaves_no_child() {
    if !is_root() {
        eprintln!("SKIPPED a_copy_onto_a_nearly_full_file_system...: mounting a tmpfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let Some(m) = Mount::tmpfs(&t.path().join("small"), "size=64m") else {
        eprintln!("SKIPPED a_copy_onto_a_nearly_full_file_system...: cannot mount a tmpfs");
        return;
    };
    let src = t.path().join("src.bin");
    let data = data(40 << 20, 7);
    std::fs::write(&src, &data).unwrap();
    let dst = m.0.join("copy.bin");
    let out = copyscope(&[
        os("--no-sync").as_os_str(),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::read(&dst).unwrap() == data, "the copy is whole");
    let children: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(CHILD_ARG))
        .collect();
    assert!(children.is_empty(), "children left: {children:?}");
}

/// The `major:minor` of the block device under the mount `mnt` (the library's mountinfo
/// parser, as the copy's header finds "ext4 /dev/loop3").
fn device_of(mnt: &Path) -> String {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mounts = parse_mountinfo(&text);
    let m = find_mount(&mounts, &mnt.canonicalize().unwrap()).expect("the slow disk's mount");
    format!("{}:{}", m.major, m.minor)
}

/// Bytes the block device under the mount `mnt` has written (its stat's field 7, in 512-byte
/// sectors).
fn device_written(mnt: &Path) -> u64 {
    let dev = device_of(mnt);
    let stat = std::fs::read_to_string(format!("/sys/dev/block/{dev}/stat")).unwrap();
    let sectors: u64 = stat.split_whitespace().nth(6).unwrap().parse().unwrap();
    sectors * 512
}

/// Write-behind children of the process `parent` now.
fn children_of(parent: u32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split(' ').nth(2));
            ppid == Some(parent.to_string().as_str())
                && std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(CHILD_ARG))
        })
        .count()
}

/// A 64 MiB copy paced at 20 MiB/s onto the slow disk: what the disk wrote in its first 1.6 s
/// (32 MiB copied; this disk's own writeback starts near 48 MiB of dirty data here), and
/// whether a write-behind child ran meanwhile.
fn written_while_copying(
    disk: &slowdev::SlowDisk,
    src: &Path,
    name: &str,
    more: &[&str],
) -> (u64, bool) {
    // Nothing dirty to start with: past the machine's background threshold (dirty data left by
    // earlier tests, 16 GB from the loaded cancel test) the kernel writes every device back.
    assert!(Command::new("sync").status().unwrap().success());
    let before = device_written(&disk.mnt);
    let mut c = util::cmd();
    c.args(["--bwlimit", "20MiB"])
        .args(more)
        .arg(src)
        .arg(disk.mnt.join(name))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let start = std::time::Instant::now();
    let mut seen = false;
    while start.elapsed() < Duration::from_millis(1600) {
        seen |= children_of(child.id()) > 0;
        std::thread::sleep(Duration::from_millis(50));
    }
    let during = device_written(&disk.mnt) - before;
    let out = util::wait_timeout(child, Duration::from_secs(60));
    assert!(out.status.success(), "{}", text(&out));
    (during, seen)
}

/// The device's share of the dirty thresholds raised for a test and put back on drop. The
/// kernel starts a device's writeback early when its dirty data passes its share of the
/// background threshold, and that share follows the device's part of the machine's recent
/// writes: small for a fresh loop device on a machine that builds (CI wrote 6.8 MB of a 64 MiB
/// `--no-sync` copy in 1.6 s). With half of the threshold guaranteed (`min_ratio` 50, above a
/// `max_ratio` the machine may have set: 3 on the project's loop0), the kernel leaves a 64 MiB
/// file alone.
struct Share {
    /// (knob, value before), in the order they were set.
    set: Vec<(PathBuf, String)>,
}

impl Share {
    fn raise(mnt: &Path) -> Option<Share> {
        let bdi = PathBuf::from(format!("/sys/class/bdi/{}", device_of(mnt)));
        let mut share = Share { set: Vec::new() };
        for (knob, value) in [("max_ratio", "100"), ("min_ratio", "50")] {
            let path = bdi.join(knob);
            let old = std::fs::read_to_string(&path).ok()?;
            std::fs::write(&path, value).ok()?;
            share.set.push((path, old.trim().to_string()));
        }
        Some(share)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        for (path, old) in self.set.iter().rev() {
            let _ = std::fs::write(path, old);
        }
    }
}

/// A large file of a copy that ends with a flush is handed to writeback piece by piece while
/// it is copied, so the disk works during the copy instead of only in the final flush. With
/// `--no-sync` (nothing to wait for) the kernel is left alone and no child runs.
#[test]
fn a_large_file_reaches_the_disk_while_it_is_copied() {
    let work = tempfile::Builder::new()
        .prefix("copyscope-early-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let disk = match slowdev::slow_disk(&work.path().join("disk"), &[]) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("SKIPPED a_large_file_reaches_the_disk_while_it_is_copied: {why}");
            return;
        }
    };
    let Some(_share) = Share::raise(&disk.mnt) else {
        eprintln!("SKIPPED a_large_file_reaches_the_disk_while_it_is_copied: bdi ratios not set");
        return;
    };
    let src = work.path().join("src.bin");
    let body = data(64 << 20, 11);
    std::fs::write(&src, &body).unwrap();
    let (durable, child) = written_while_copying(&disk, &src, "durable.bin", &[]);
    let (cached, no_child) = written_while_copying(&disk, &src, "cached.bin", &["--no-sync"]);
    assert!(child, "a write-behind child ran during the copy");
    assert!(
        durable >= 12 << 20,
        "with a flush ahead, the first 16 MiB piece is on disk after 1.6 s: {durable} B"
    );
    assert!(!no_child, "--no-sync starts no write-behind child");
    assert!(
        cached < 4 << 20,
        "--no-sync leaves writeback to the kernel: {cached} B written in 1.6 s"
    );
    for name in ["durable.bin", "cached.bin"] {
        assert!(
            std::fs::read(disk.mnt.join(name)).unwrap() == body,
            "{name} is whole"
        );
    }
}
