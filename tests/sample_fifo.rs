//! A `--sys-root` tree whose files are FIFOs (what a user who can write there plants) blocks
//! no read: every /proc and /sys file is opened non-blocking and refused unless regular. The
//! real binary copies with every source named n/a, and a copy sampling such a tree obeys
//! SIGTERM (the build before waited forever in open(2) for a writer, SIGTERM unanswered).

mod util;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use util::{bin, data, run_timeout, temp_leftovers, text};

/// This machine's fixture tree (tests/fixtures/linux-host) copied to `to` with every regular
/// file replaced by a FIFO of the same name (directories and symlinks kept).
fn fifo_tree(from: &Path, to: &Path) -> usize {
    fs::create_dir_all(to).unwrap();
    let mut fifos = 0;
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if ft.is_dir() {
            fifos += fifo_tree(&src, &dst);
        } else {
            let made = Command::new("mkfifo").arg(&dst).status().unwrap();
            assert!(made.success(), "mkfifo {}", dst.display());
            fifos += 1;
        }
    }
    fifos
}

fn fixture_root(dir: &Path) -> PathBuf {
    let root = dir.join("sysroot");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/linux-host");
    let fifos = fifo_tree(&from, &root);
    assert!(fifos >= 10, "{fifos} FIFOs planted");
    root
}

#[test]
fn a_copy_reads_no_fifo_of_its_sys_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_root(dir.path());
    let (src, dst) = (dir.path().join("src.bin"), dir.path().join("dst.bin"));
    fs::write(&src, data(1 << 20, 7)).unwrap();
    let mut c = Command::new(bin());
    c.args(["--plain", "--sys-root"])
        .arg(&root)
        .arg(&src)
        .arg(&dst);
    let out = run_timeout(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(fs::read(&dst).unwrap(), data(1 << 20, 7));
    let said = String::from_utf8_lossy(&out.stdout);
    for note in [
        "note: filesystem n/a: cannot read ",
        "note: page cache dirty/writeback n/a: cannot read ",
        "note: page cache thresholds n/a: cannot read ",
        "note: device counters n/a: cannot read ",
    ] {
        assert!(said.contains(note), "{note}\n{}", text(&out));
    }
    assert!(said.contains("(not a regular file)"), "{}", text(&out));
    // Nothing was opened for writing: the FIFOs are still FIFOs, with no writer waiting.
    use std::os::unix::fs::FileTypeExt;
    assert!(
        fs::symlink_metadata(root.join("proc/vmstat"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn a_copy_sampling_a_tree_of_fifos_obeys_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_root(dir.path());
    let (src, dst) = (dir.path().join("src.bin"), dir.path().join("dst.bin"));
    fs::write(&src, data(32 << 20, 9)).unwrap();
    // 32 MiB at 2 MiB/s: sixteen seconds, far longer than the test waits before SIGTERM.
    let mut child = Command::new(bin())
        .args([
            "--json",
            "--interval",
            "50",
            "--bwlimit",
            "2M",
            "--sys-root",
        ])
        .arg(&root)
        .arg(&src)
        .arg(&dst)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            let v: serde_json::Value = serde_json::from_str(&l).unwrap_or_default();
            seen.push(l);
            if v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) > 0 {
                break;
            }
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no progress within 60 s (blocked reading the sys-root?):\n{}",
                seen.join("\n")
            );
        }
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("SIGTERM unanswered for 60 s:\n{}", seen.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(500)) {
        seen.push(l);
    }
    let out = seen.join("\n");
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.contains("\"status\":\"cancelled\""), "{out}");
    assert!(!dst.exists(), "no partial file under the real name");
    assert!(temp_leftovers(dir.path()).is_empty());
    assert_eq!(
        fs::read(&src).unwrap(),
        data(32 << 20, 9),
        "source untouched"
    );
}
