//! `copyscope watch --list` and `--all` end to end: a real `cp`, `dd` and `rsync` copy into a
//! temporary directory, and discovery, told nothing but the directory, finds each with the
//! file it writes and (for the two that read a file) how far into its source it got; `--all`
//! then follows them and says each as it finds it. cp and dd are held to a slow pace by
//! stopping and continuing them (5 ms of every 100 ms), so they are mid-copy whatever the
//! machine's load; rsync paces itself (`--bwlimit`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;

mod util;
use util::{bin, run_timeout, text};

/// Children started by the test, stopped and continued in turn until dropped, then killed.
struct Paced {
    children: Vec<Child>,
    stop: Arc<AtomicBool>,
    pacer: Option<std::thread::JoinHandle<()>>,
}

impl Paced {
    fn start(children: Vec<Child>, paced: Vec<u32>) -> Paced {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let pacer = std::thread::spawn(move || {
            use rustix::process::{Pid, Signal, kill_process};
            let signal = |sig: Signal| {
                for p in paced.iter().filter_map(|p| Pid::from_raw(*p as i32)) {
                    let _ = kill_process(p, sig);
                }
            };
            while !s.load(Ordering::SeqCst) {
                signal(Signal::STOP);
                std::thread::sleep(Duration::from_millis(95));
                signal(Signal::CONT);
                std::thread::sleep(Duration::from_millis(5));
            }
            signal(Signal::CONT);
        });
        Paced {
            children,
            stop,
            pacer: Some(pacer),
        }
    }
}

impl Drop for Paced {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(p) = self.pacer.take() {
            let _ = p.join();
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(cmd: &str, args: &[&str], dir: &Path) -> Child {
    Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// A directory on tmpfs for the sources.
fn shm_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm").expect("/dev/shm (tmpfs) for the sources")
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Three copies into `dir`: cp and dd of `src` (paced), rsync of it into `dst/` at 8 MB/s.
/// The source is on tmpfs (`shm`): across filesystems cp reads and writes 128 KiB at a time
/// (on one filesystem a single copy_file_range would copy it all between two stops).
fn three_copies(dir: &Path, shm: &Path) -> (Paced, u32, u32, PathBuf) {
    let src = shm.join("src.bin");
    let o = Command::new("head")
        .args(["-c", "512M", "/dev/urandom"])
        .stdout(std::fs::File::create(&src).unwrap())
        .status()
        .unwrap();
    assert!(o.success());
    std::fs::create_dir(dir.join("dst")).unwrap();
    let src_arg = src.to_str().unwrap();
    let cp = spawn("cp", &[src_arg, "cp.out"], dir);
    let dd_if = format!("if={src_arg}");
    let dd = spawn("dd", &[&dd_if, "of=dd.out", "bs=64k", "status=none"], dir);
    assert!(Path::new("/usr/bin/rsync").exists(), "rsync is required");
    let rsync = spawn("rsync", &["--bwlimit=8000", src_arg, "dst/"], dir);
    let (cp_pid, dd_pid) = (cp.id(), dd.id());
    let paced = Paced::start(vec![cp, dd, rsync], vec![cp_pid, dd_pid]);
    std::thread::sleep(Duration::from_millis(1500));
    (paced, cp_pid, dd_pid, src)
}

#[test]
fn discovery_finds_cp_dd_and_rsync_with_their_files_and_percents() {
    let (tmp, shm) = (tempfile::tempdir().unwrap(), shm_dir());
    let dir = tmp.path().canonicalize().unwrap();
    let (paced, cp, dd, src) = three_copies(&dir, shm.path());
    // The words and the JSON from the same second.
    let words = std::thread::spawn({
        let dir = dir.clone();
        move || {
            let mut c = Command::new(bin());
            c.args(["watch", "--list"]).arg(&dir);
            run_timeout(c, Duration::from_secs(60))
        }
    });
    let mut c = Command::new(bin());
    c.args(["watch", "--list", "--json"]).arg(&dir);
    let o = run_timeout(c, Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o));
    let found = json_lines(&o.stdout);
    let of = |pid: u32| {
        found
            .iter()
            .find(|v| v["pid"] == pid)
            .unwrap_or_else(|| panic!("pid {pid} not found: {found:?}"))
    };
    for (pid, comm, out) in [(cp, "cp", "cp.out"), (dd, "dd", "dd.out")] {
        let v = of(pid);
        assert_eq!(v["comm"], comm, "{v}");
        assert_eq!(v["file"], dir.join(out).to_str().unwrap(), "{v}");
        assert_eq!(v["source"]["path"], src.to_str().unwrap(), "{v}");
        let (pos, size) = (
            v["source"]["pos"].as_u64().unwrap(),
            v["source"]["size"].as_u64().unwrap(),
        );
        assert_eq!(size, 512 << 20);
        let pct = v["percent"].as_f64().unwrap();
        assert_eq!(pct, (pos as f64 * 100.0 / size as f64).floor(), "{v}");
        assert!(pct < 100.0, "mid-copy: {v}");
        // What it wrote is what it read, give or take what is between the two calls.
        let at = v["at"].as_u64().unwrap();
        assert!(at.abs_diff(pos) <= 16 << 20, "at {at}, read {pos}: {v}");
    }
    // rsync's receiver (a child of the rsync started) writes a temporary beside the name.
    let receiver = found
        .iter()
        .find(|v| v["comm"] == "rsync")
        .unwrap_or_else(|| panic!("rsync not found: {found:?}"));
    let file = receiver["file"].as_str().unwrap();
    let dst = dir.join("dst");
    assert!(
        file.starts_with(dst.to_str().unwrap()) && file.contains("src.bin"),
        "{receiver}"
    );
    // The words: each with its file, the two readers with their percent.
    let o = words.join().unwrap();
    let words = String::from_utf8_lossy(&o.stdout);
    for (pid, out) in [(cp, "cp.out"), (dd, "dd.out")] {
        let line = words
            .lines()
            .position(|l| l.trim_start().starts_with(&format!("{pid} ")))
            .unwrap_or_else(|| panic!("{pid}:\n{words}"));
        let lines: Vec<&str> = words.lines().collect();
        assert!(lines[line].contains(out), "{words}");
        assert!(
            lines[line + 1].contains("reading ") && lines[line + 1].contains(" % of 537 MB"),
            "{words}"
        );
    }
    drop(paced);
}

/// `--all` follows what it finds: each copy is said once it has a file here, and the intake
/// counts their bytes.
#[test]
fn watch_all_follows_the_copies_it_finds() {
    let (tmp, shm) = (tempfile::tempdir().unwrap(), shm_dir());
    let dir = tmp.path().canonicalize().unwrap();
    let (paced, cp, dd, _) = three_copies(&dir, shm.path());
    let mut c = Command::new(bin());
    c.args(["watch", "--all", "--plain", "--duration", "4"])
        .arg(&dir);
    let o = run_timeout(c, Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for (pid, comm, file) in [(cp, "cp", "cp.out"), (dd, "dd", "dd.out")] {
        let said = format!(
            "writer: {comm} (pid {pid}) writing {}",
            dir.join(file).display()
        );
        assert!(out.contains(&said), "{said}:\n{out}");
    }
    assert!(out.contains("writer: rsync (pid "), "{out}");
    assert!(
        out.contains("copyscope watch: ") && !out.contains("copyscope watch: 0 B written"),
        "{out}"
    );
    drop(paced);
}

/// A parallel copy as fpsync or `xargs -P` runs it: 8 rsync workers, each paced at 5 MB/s,
/// under one controller followed by `--pid`. The intake is what they wrote, within 2 %, and
/// the summary lists every worker with its share. (What a worker wrote after its last tick
/// is in its parent's counter once reaped: the controller's row holds those tails.)
#[test]
fn eight_workers_are_aggregated_and_each_has_its_share() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let o = Command::new("head")
        .args(["-c", "20M", "/dev/urandom"])
        .stdout(std::fs::File::create(dir.join("src.bin")).unwrap())
        .status()
        .unwrap();
    assert!(o.success());
    // The controller waits for the watch, then becomes xargs under the same pid.
    let controller = Command::new("bash")
        .arg("-c")
        .arg("sleep 1.5; seq 1 8 | exec xargs -P 8 -I{} rsync --bwlimit=5000 src.bin w{}")
        .current_dir(&dir)
        .spawn()
        .unwrap();
    let paced = Paced::start(vec![controller], Vec::new());
    let pid = paced.children[0].id();
    let mut c = Command::new(bin());
    c.args([
        "watch",
        "--json",
        "--until-idle",
        "2",
        "--duration",
        "90",
        "--pid",
    ])
    .arg(pid.to_string())
    .arg(&dir);
    let o = run_timeout(c, Duration::from_secs(120));
    assert!(o.status.success(), "{}", text(&o));
    let written: u64 = (1..=8)
        .map(|i| std::fs::metadata(dir.join(format!("w{i}"))).unwrap().len())
        .sum();
    assert_eq!(written, 8 * (20 << 20), "the workers finished");
    let lines = json_lines(&o.stdout);
    let summary = lines.iter().find(|v| v["type"] == "summary").unwrap();
    let intake = summary["bytes_copied"].as_u64().unwrap();
    let off = intake.abs_diff(written) as f64 / written as f64;
    assert!(
        off <= 0.02,
        "intake {intake} against {written} written: {off}"
    );
    let workers: Vec<&Value> = summary["writers"]
        .as_array()
        .unwrap()
        .iter()
        // The rsync clients write nothing worth a share; the receivers write the files.
        .filter(|w| w["comm"] == "rsync" && w["share_pct"].as_f64().unwrap() >= 1.0)
        .collect();
    assert_eq!(workers.len(), 8, "{summary}");
    for w in &workers {
        let share = w["share_pct"].as_f64().unwrap();
        assert!((8.0..=17.0).contains(&share), "an eighth each: {w}");
        assert!(
            w["file"]
                .as_str()
                .unwrap()
                .starts_with(dir.to_str().unwrap()),
            "{w}"
        );
    }
    drop(paced);
}
