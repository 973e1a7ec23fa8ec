//! `copyscope bench DIR` end to end (issue 13), small and fast: it refuses a DIR that is not
//! empty, runs all five phases and leaves DIR as it was with a recording per phase and the
//! tables; it cleans up when cancelled (SIGTERM, and q q in the TUI under tmux) and when the
//! filesystem fills up (a tiny tmpfs, as root).

mod tmux;
mod util;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tmux::{Tmux, have, wait_file};

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn bench(dir: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(util::bin());
    c.arg("bench")
        .arg(dir)
        .arg("--out")
        .arg(out)
        .args([
            "--plain",
            "--size",
            "8M",
            "--files",
            "40",
            "--tree-size",
            "4M",
        ])
        .args(extra)
        .env_remove("COPYSCOPE_TEST_THROTTLE_BPS");
    c
}

#[test]
fn refuses_a_dir_that_is_not_empty_and_touches_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("keep.txt"), b"mine").unwrap();
    let out = t.path().join("out");
    let o = util::run_timeout(bench(&dir, &out, &[]), Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is not empty") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(names(&dir), vec!["keep.txt"]);
    assert_eq!(fs::read(dir.join("keep.txt")).unwrap(), b"mine");
    assert!(!out.exists(), "nothing written anywhere");
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end run of the bench: each phase's checks, then the directory's, in order"
)]
fn runs_every_phase_and_leaves_dir_as_it_was() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("keep.txt"), b"mine").unwrap();
    let out = t.path().join("out");
    let shots = t.path().join("shots");
    let mut c = bench(&dir, &out, &["--force"]);
    c.arg("--screenshot").arg(&shots);
    let o = util::run_timeout(c, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(names(&dir), vec!["keep.txt"], "only what was there before");
    let files = names(&out);
    for f in [
        "1-write-zeros.jsonl",
        "2-write-random.jsonl",
        "3-read-back.jsonl",
        "4-tree-write.jsonl",
        "5-tree-read-back.jsonl",
        "bench.md",
        "bench.txt",
    ] {
        assert!(files.contains(&f.to_string()), "{f} in {files:?}");
    }
    let md = fs::read_to_string(out.join("bench.md")).unwrap();
    // 8 MiB per sequential phase, 40 files of 4 MiB in all, each row the model's figures.
    for row in [
        "| write zeros | 8.39 MB | 1 |",
        "| write random | 8.39 MB | 1 |",
        "| read back | 8.39 MB | 1 |",
        "| tree write | 4.19 MB | 40 |",
        "| tree read back | 4.19 MB | 40 |",
    ] {
        assert!(md.contains(row), "{row} in\n{md}");
    }
    assert!(md.contains("posix_fadvise(DONTNEED)"), "{md}");
    let rec = fs::read_to_string(out.join("2-write-random.jsonl")).unwrap();
    let header = rec.lines().next().unwrap();
    assert!(header.contains("\"bench\":\"write random\""), "{header}");
    // --screenshot: a picture set per phase.
    let pngs = names(&shots)
        .into_iter()
        .filter(|n| n.starts_with("bench-") && n.ends_with(".png"))
        .count();
    assert_eq!(pngs, 5, "{:?}", names(&shots));
    // The text summary is printed for the post as well.
    assert!(stdout.contains("tree read back"), "{stdout}");
    // Each phase's own summary: a read phase says what it measured, never "--no-sync".
    let section = |name: &str| {
        let start = stdout
            .find(&format!("== bench phase: {name} =="))
            .unwrap_or_else(|| panic!("{name} in {stdout}"));
        let rest = &stdout[start + 4..];
        rest[..rest.find("== bench phase").unwrap_or(rest.len())].to_string()
    };
    for name in ["read back", "tree read back"] {
        let s = section(name);
        assert!(
            s.contains(", read ")
                && (s.contains(" s\n") || s.contains(" ms\n"))
                && s.contains("read from the device "),
            "{name}: {s}"
        );
        assert!(
            s.contains("posix_fadvise(DONTNEED)") && s.contains("nothing to make durable"),
            "{name}: {s}"
        );
        assert!(
            !s.contains("--no-sync") && !s.contains("speed to cache"),
            "{name}: {s}"
        );
        // Its verdict speaks of the read, not of a copy.
        let verdict = s
            .lines()
            .find(|l| l.trim_start().starts_with("verdict:"))
            .unwrap_or_else(|| panic!("{name}: no verdict in {s}"));
        assert!(
            !verdict.contains("copy") && !verdict.contains("writer"),
            "{name}: {verdict}"
        );
    }
    let s = section("write random");
    assert!(
        s.contains("speed to cache") && s.contains("(after syncfs)"),
        "{s}"
    );
}

/// `--quick` says the sizes the phases used, not the ones asked for.
#[test]
fn quick_notes_the_sizes_used() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    let out = t.path().join("out");
    let o = util::run_timeout(bench(&dir, &out, &["--quick"]), Duration::from_secs(120));
    assert!(o.status.success(), "{o:?}");
    let md = fs::read_to_string(out.join("bench.md")).unwrap();
    assert!(
        md.contains("--quick: each phase stopped after 12 s or at its planned size: write zeros 8.39 MB, write random 8.39 MB (planned 8.39 MB each), tree write 4.19 MB in 40 files (planned 4.19 MB in 40)"),
        "{md}"
    );
    assert!(!md.contains("(--size)"), "no planned-size note: {md}");
}

#[test]
fn sigterm_stops_the_bench_and_removes_its_files() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    let out = t.path().join("out");
    let mut c = bench(&dir, &out, &[]);
    // 4 MB/s: the 8 MiB write takes 2 s.
    c.env("COPYSCOPE_TEST_THROTTLE_BPS", "4000000");
    c.stdout(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    // Wait until the scratch directory holds data.
    loop {
        let scratch: Vec<_> = names(&dir);
        if let Some(s) = scratch.first()
            && fs::read_dir(dir.join(s))
                .map(|mut it| it.next().is_some())
                .unwrap_or(false)
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "bench never wrote");
        std::thread::sleep(Duration::from_millis(50));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    assert!(names(&dir).is_empty(), "scratch removed: {:?}", names(&dir));
    let md = fs::read_to_string(out.join("bench.md")).unwrap();
    assert!(md.contains("stopped: cancelled"), "{md}");
}

#[test]
fn q_q_in_the_tui_cancels_and_cleans_up() {
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    let out = t.path().join("out");
    let exit_file = t.path().join("rc");
    let cmd = format!(
        "{} bench {} --out {} --size 64M --files 40 --tree-size 4M; echo $? > {}; sleep 60",
        util::bin(),
        dir.display(),
        out.display(),
        exit_file.display()
    );
    let tm = Tmux::start(
        "bench",
        80,
        24,
        &cmd,
        &[
            ("COPYSCOPE_TEST_THROTTLE_BPS", "8000000"),
            ("TERM", "xterm-256color"),
        ],
    );
    let screen = tm.wait_for("the bench's live chart", Duration::from_secs(20), |s| {
        s.contains("write zeros") && s.contains("MB/s")
    });
    assert!(screen.contains("copyscope"), "{screen}");
    tm.ask_to_cancel();
    tm.send("q");
    let rc = wait_file(&exit_file, Duration::from_secs(20)).expect("bench exited");
    assert_eq!(rc.trim(), "130");
    assert!(names(&dir).is_empty(), "scratch removed: {:?}", names(&dir));
    assert!(out.join("1-write-zeros.jsonl").exists());
    assert!(
        !out.join("2-write-random.jsonl").exists(),
        "no phase after a cancel"
    );
}

#[test]
fn a_full_filesystem_stops_the_bench_and_cleans_up() {
    if !util::is_root() {
        eprintln!("skipped: mounting a tiny tmpfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("small");
    fs::create_dir(&dir).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&dir);
    let out = t.path().join("out");
    // --size beyond the free space: the bench caps it with a note; --quick off, so the zeros
    // file is written to the cap. Then ask for more than fits explicitly through the tree.
    let mut c = Command::new(util::bin());
    c.arg("bench")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .args([
            "--plain",
            "--size",
            "3M",
            "--files",
            "20",
            "--tree-size",
            "3M",
        ])
        // Something else fills the disk meanwhile: the test writes 2 MiB as soon as the
        // scratch directory appears.
        .env_remove("COPYSCOPE_TEST_THROTTLE_BPS")
        .env("COPYSCOPE_TEST_THROTTLE_BPS", "2000000");
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while names(&dir).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no scratch directory");
        std::thread::sleep(Duration::from_millis(20));
    }
    let filler = dir.join("filler");
    let _ = fs::write(&filler, vec![1u8; 2 << 20]);
    let o = child.wait_with_output().unwrap();
    let _ = fs::remove_file(&filler);
    let err = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{err}");
    assert!(
        format!("{stdout}{err}").contains("No space left on device"),
        "{stdout}\n{err}"
    );
    assert!(names(&dir).is_empty(), "scratch removed: {:?}", names(&dir));
    let md = fs::read_to_string(out.join("bench.md")).unwrap();
    assert!(md.contains("stopped: the filesystem is full"), "{md}");
}

/// `s` during a bench writes where a copy's `s` does — into --screenshot DIR, else the current
/// directory — and the footer says where; never into the bench's DIR or results directory.
#[test]
fn s_in_the_bench_tui_writes_where_a_copys_s_does() {
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    for with_dir in [true, false] {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("d");
        let cwd = t.path().join("cwd");
        let shots = t.path().join("shots");
        fs::create_dir(&dir).unwrap();
        fs::create_dir(&cwd).unwrap();
        let out = t.path().join("out");
        let exit_file = t.path().join("rc");
        let shot_arg = if with_dir {
            format!("--screenshot {}", shots.display())
        } else {
            String::new()
        };
        let cmd = format!(
            "cd {} && {} bench {} --out {} {shot_arg} --size 64M --files 40 --tree-size 4M; echo $? > {}; sleep 60",
            cwd.display(),
            util::bin(),
            dir.display(),
            out.display(),
            exit_file.display()
        );
        let tm = Tmux::start(
            if with_dir {
                "bench-s-dir"
            } else {
                "bench-s-cwd"
            },
            100,
            30,
            &cmd,
            &[
                ("COPYSCOPE_TEST_THROTTLE_BPS", "8000000"),
                ("TERM", "xterm-256color"),
            ],
        );
        tm.wait_for("the bench's live chart", Duration::from_secs(20), |s| {
            s.contains("write zeros") && s.contains("MB/s")
        });
        tm.send("s");
        let screen = tm.wait_for("the screenshot message", Duration::from_secs(20), |s| {
            s.contains("wrote ")
        });
        let want = if with_dir { &shots } else { &cwd };
        let pngs: Vec<String> = names(want)
            .into_iter()
            .filter(|n| n.starts_with("copyscope-") && n.ends_with(".png"))
            .collect();
        assert_eq!(pngs.len(), 1, "{with_dir}: {:?}\n{screen}", names(want));
        // The footer names the directory the files went to.
        let said = if with_dir {
            shots.display().to_string()
        } else {
            format!("./{}", pngs[0].trim_end_matches(".png"))
        };
        let flat: String = screen.lines().map(str::trim).collect::<Vec<_>>().join("");
        assert!(
            flat.contains(&said) || screen.contains(&said),
            "{said} not on screen:\n{screen}"
        );
        if with_dir {
            assert!(
                !names(&cwd).iter().any(|n| n.starts_with("copyscope-")),
                "{:?}",
                names(&cwd)
            );
        }
        tm.ask_to_cancel();
        tm.send("q");
        let rc = wait_file(&exit_file, Duration::from_secs(20)).expect("bench exited");
        assert_eq!(rc.trim(), "130");
        assert!(names(&dir).is_empty(), "scratch removed: {:?}", names(&dir));
        assert!(
            !names(&out).iter().any(|n| n.starts_with("copyscope-")),
            "{:?}",
            names(&out)
        );
    }
}

/// A scratch directory that cannot be removed (a filesystem mounted inside it, as root) is
/// named with the entry and the reason as rm says them, on one line, without Rust's
/// " (os error 16)" tail; everything else in it is removed, and the exit status says so.
#[test]
fn a_cleanup_that_fails_says_what_and_why_in_words() {
    if !util::is_root() {
        eprintln!("skipped: mounting inside the scratch directory needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    let out = t.path().join("out");
    let mut c = bench(&dir, &out, &[]);
    // 4 MB/s: the 8 MiB write takes 2 s.
    c.env("COPYSCOPE_TEST_THROTTLE_BPS", "4000000");
    c.stdout(std::process::Stdio::null());
    c.stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let scratch = loop {
        if let Some(s) = names(&dir).first()
            && fs::read_dir(dir.join(s))
                .map(|mut it| it.next().is_some())
                .unwrap_or(false)
        {
            break dir.join(s);
        }
        assert!(std::time::Instant::now() < deadline, "bench never wrote");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mount = util::Mount::tmpfs(&scratch.join("m"), "size=1m").expect("mount a tmpfs");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let o = util::wait_timeout(child, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let want = format!(
        "copyscope bench: cannot remove '{}': Device or resource busy\n",
        scratch.join("m").display()
    );
    assert!(err.contains(&want), "{want}in\n{err}");
    assert!(!err.contains("os error"), "{err}");
    assert!(
        err.lines().all(|l| l.starts_with("copyscope bench: ")),
        "{err}"
    );
    assert_eq!(names(&scratch), vec!["m"], "the rest is removed");
    drop(mount);
}

/// On tmpfs there is no device: the read-back is said to be a read from memory, the title
/// names the filesystem once, and the notes say the read-back is from RAM.
#[test]
fn a_bench_on_tmpfs_reads_from_memory() {
    let Ok(t) = tempfile::Builder::new()
        .prefix("copyscope-bench-")
        .tempdir_in("/dev/shm")
    else {
        eprintln!("skipped: no /dev/shm");
        return;
    };
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    let out = t.path().join("out");
    let o = util::run_timeout(bench(&dir, &out, &[]), std::time::Duration::from_secs(120));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("read from memory "), "{said}");
    assert!(!said.contains("read from the device"), "{said}");
    assert!(said.contains("copyscope bench  tmpfs\n"), "{said}");
    assert!(
        said.contains("read back: tmpfs keeps its files in RAM"),
        "{said}"
    );
    assert!(!said.contains("tmpfs tmpfs"), "{said}");
}
