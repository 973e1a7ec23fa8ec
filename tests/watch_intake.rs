//! `copyscope watch --pid/--comm` counts what the followed writers put into files on the
//! watched filesystem, end to end with real writers: rsync (whose sender's socket writes and
//! reaped children once doubled the total), a `pwrite` writer beside a log it appends to on
//! another filesystem (smbd's shape: the file shown is the one that grows), and a chain of
//! processes that exit together (each child's bytes once, however they are reaped).
//!
//! No test here races the product: each writer starts only once the watch has taken its first
//! sample (seen in its recording), and the totals are compared when both have ended.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod util;
use util::bin;

/// What `write_bytes` may count above the bytes written: it counts the page-cache folios a
/// write dirtied, a few pages more per file (4–16 KiB per dd run on this machine).
const SLACK: u64 = 256 << 10;

/// A watch running with a recording, its output collected when it ends.
struct Watch {
    child: Child,
    rec: PathBuf,
}

impl Watch {
    /// `extra` holds `--until-idle SECS` and any other options.
    fn start(dir: &Path, follow: &[&str], extra: &[&str]) -> Watch {
        let rec = dir.join(format!("watch-{}.jsonl", follow.join("-")));
        let child = Command::new(bin())
            .args(["watch", "--json", "--duration", "120"])
            .args(follow)
            .args(extra)
            .arg("--record")
            .arg(&rec)
            .arg(dir.join("dst"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let w = Watch { child, rec };
        w.wait_for_first_sample();
        w
    }

    /// The watch has read the writers once: what they write from now on is in view.
    fn wait_for_first_sample(&self) {
        let t = Instant::now();
        while !std::fs::read_to_string(&self.rec)
            .is_ok_and(|r| r.lines().any(|l| l.contains(r#""type":"sample""#)))
        {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the watch never sampled"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the end; the JSON lines printed and the recording's last intake figure.
    fn finish(self) -> (Vec<Value>, u64) {
        let out = self.child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let rec = std::fs::read_to_string(&self.rec).unwrap();
        let last = rec
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "sample")
            .unwrap();
        (lines, last["engine"]["bytes_copied"].as_u64().unwrap())
    }
}

/// The sizes of the regular files under `root`.
fn file_bytes(root: &Path) -> u64 {
    walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// A command under a name of its own (a symlink: the kernel names a process after the path
/// it was exec'd by), so `--comm` follows this test's writers and nothing else on the machine:
/// `base` and this test process's pid (two runs of the suite on one machine, a CI clone beside
/// a checkout, would otherwise follow each other's writers). Returns the link and the name.
fn named(dir: &Path, base: &str, target: &str) -> (PathBuf, String) {
    let name = format!("{base}{}", std::process::id());
    assert!(name.len() <= 15, "{name}: longer than a task name");
    let link = dir.join(&name);
    std::os::unix::fs::symlink(target, &link).unwrap();
    (link, name)
}

/// Local rsync: a client that sends over a socket pair, a receiver that writes the files and a
/// generator, all named rsync. The socket writes of the sender are not file writes, and the
/// receiver's bytes are counted once when the processes exit and are reaped.
#[test]
fn watch_of_a_local_rsync_counts_the_bytes_of_its_files() {
    let Some(rsync) = ["/usr/bin/rsync", "/bin/rsync"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: rsync is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::create_dir_all(dir.path().join("dst")).unwrap();
    let mut seed = 7u64;
    for i in 0..60u64 {
        // 4 KiB to ~1.2 MB, not page-aligned, plus two larger ones.
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 4096 + (seed >> 44) as usize + if i % 30 == 0 { 20 << 20 } else { 0 };
        let sub = ["", "a", "a/b"][i as usize % 3];
        let data: Vec<u8> = (0..len).map(|k| (k as u64 ^ seed) as u8).collect();
        std::fs::write(src.join(sub).join(format!("f{i}.bin")), data).unwrap();
    }
    // rsync runs under a followed shell that outlives it: the last bytes of a process reaped
    // by a parent that is not followed are not seen (docs/watch.md), and that is not the
    // question here.
    let (sh, name) = named(dir.path(), "csrsyncw", "/bin/sh");
    let script = format!(
        "read go; {rsync} -a '{}/' '{}/'; read done",
        src.display(),
        dir.path().join("dst").display()
    );
    let mut top = Command::new(&sh)
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        // Not the test's stdout: a file the runner writes to would grow as the writer's own.
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let watch = Watch::start(dir.path(), &["--comm", &name], &["--until-idle", "2"]);
    let mut stdin = top.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    let (lines, total) = watch.finish();
    writeln!(stdin, "done").unwrap();
    assert!(top.wait().unwrap().success());
    let truth = file_bytes(&dir.path().join("dst"));
    assert_eq!(truth, file_bytes(&src));
    // Within 2 % (write_bytes counts whole pages); the sender's socket writes would double it.
    let off = (total as f64 - truth as f64).abs() / truth as f64;
    assert!(off <= 0.02, "watch {total} B, files {truth} B");
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary", "{summary}");
}

/// A writer that puts 1 MiB blocks into its file with `pwrite` (the fd's position stays 0)
/// while it appends log lines to a file on another filesystem (the position moves there):
/// the file shown is the one that grows, at its size, and only its bytes are the intake.
#[test]
fn watch_shows_the_file_a_pwrite_writer_grows_not_its_log() {
    let Some(python) = ["/usr/bin/python3", "/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: python3 is not installed");
        return;
    };
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("skipped: no /dev/shm (another filesystem for the log)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("dst")).unwrap();
    let upload = dir.path().join("dst/upload.bin");
    let log = tempfile::Builder::new()
        .prefix("copyscope-pwrite-log")
        .tempfile_in(shm)
        .unwrap();
    let script = format!(
        "import os, sys, time\n\
         sys.stdin.readline()\n\
         big = os.open({upload:?}, os.O_WRONLY | os.O_CREAT, 0o644)\n\
         log = open({log:?}, 'a')\n\
         block = b'x' * (1 << 20)\n\
         for i in range(40):\n\
         \x20   os.pwrite(big, block, i << 20)\n\
         \x20   for _ in range(50):\n\
         \x20       log.write('request %d served from cache\\n' % i)\n\
         \x20   log.flush()\n\
         \x20   time.sleep(0.1)\n\
         sys.stdin.readline()\n",
        upload = upload.display().to_string(),
        log = log.path().display().to_string(),
    );
    let mut writer = Command::new(python)
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        // Not the test's stdout: a file the runner writes to would grow as the writer's own.
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = writer.id().to_string();
    let watch = Watch::start(dir.path(), &["--pid", &pid], &["--until-idle", "2"]);
    let mut stdin = writer.stdin.take().unwrap();
    writeln!(stdin).unwrap();
    // The writer stays alive, its last block written, until the watch has gone idle.
    let (lines, total) = watch.finish();
    writeln!(stdin).unwrap();
    assert!(writer.wait().unwrap().success());
    assert!(
        (40 << 20..(40 << 20) + SLACK).contains(&total),
        "the upload's 40 MiB, not the log's lines: {total} B"
    );
    let shown: Vec<&Value> = lines
        .iter()
        .filter(|v| v["type"] == "progress")
        .filter_map(|p| p.get("current").filter(|c| !c.is_null()))
        .collect();
    assert!(!shown.is_empty(), "a file is shown: {lines:?}");
    assert!(
        shown.iter().all(|c| c["path"] == upload.to_str().unwrap()),
        "only the upload is shown: {shown:?}"
    );
    let done: Vec<u64> = shown.iter().map(|c| c["done"].as_u64().unwrap()).collect();
    assert!(
        done.iter().all(|d| *d > 0),
        "at its size, not its position 0: {done:?}"
    );
}

/// A shell whose child shell runs a grandchild shell: the grandchild's dd writes 30 MiB, and
/// 2 s later both inner shells exit at once, so the grandchild is reaped into the child and the child
/// into the top within one tick; then the top's own dd writes 20 MiB. Every byte once.
#[test]
fn watch_counts_a_chain_of_reaped_children_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("dst")).unwrap();
    let (sh, name) = named(dir.path(), "cswchain", "/bin/sh");
    let dst = dir.path().join("dst");
    let dd = |name: &str, mib: u32| {
        format!(
            "dd if=/dev/zero of='{}' bs=1M count={mib} status=none",
            dst.join(name).display()
        )
    };
    // The grandchild waits after its dd, so a tick sees the dd's bytes in its counter before
    // it and its parent exit together. `; true` after each last command: no shell exec's it
    // in place of itself.
    let inner = format!(
        "{} -c \"{}; sleep 2; true\"; true",
        sh.display(),
        dd("g.bin", 30)
    );
    let top = format!(
        "read go; {} -c '{inner}'; {}; read done",
        sh.display(),
        dd("p.bin", 20)
    );
    let mut writer = Command::new(&sh)
        .arg("-c")
        .arg(top)
        .stdin(Stdio::piped())
        // Not the test's stdout: a file the runner writes to would grow as the writer's own.
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let watch = Watch::start(dir.path(), &["--comm", &name], &["--until-idle", "5"]);
    let mut stdin = writer.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    let (_, total) = watch.finish();
    writeln!(stdin, "done").unwrap();
    assert!(writer.wait().unwrap().success());
    assert_eq!(file_bytes(&dst), 50 << 20);
    assert!(
        (50 << 20..(50 << 20) + SLACK).contains(&total),
        "30 MiB reaped twice over, and 20 MiB, each once: {total} B"
    );
}
