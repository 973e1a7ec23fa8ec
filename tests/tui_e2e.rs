//! End-to-end: the real binary in tmux at 80×24 — starts a copy, reads the screen, pauses,
//! resumes, cancels with q, and checks the terminal was restored and nothing was lost; then a
//! copy that completes and leaves its summary in the scrollback.

mod tmux;

use std::fs;
use std::path::Path;
use std::time::Duration;

use tmux::{Tmux, have, wait_file};

const BIN: &str = env!("CARGO_BIN_EXE_copyscope");

fn make_source(dir: &Path, big_mb: usize) {
    fs::create_dir_all(dir.join("sub")).unwrap();
    let mut data = vec![0u8; big_mb << 20];
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    fs::write(dir.join("big.bin"), &data).unwrap();
    for i in 0..20 {
        fs::write(
            dir.join("sub").join(format!("f{i}.txt")),
            format!("file {i}\n").repeat(100),
        )
        .unwrap();
    }
}

/// Every file under `dst` is complete (same bytes as in `src`), and no temporary is left.
fn assert_nothing_lost(src: &Path, dst: &Path) {
    for entry in walk(dst) {
        let name = entry.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            !name.contains("copyscope-tmp"),
            "temporary left behind: {}",
            entry.display()
        );
        if entry.is_file() {
            let rel = entry.strip_prefix(dst).unwrap();
            let a = fs::read(src.join(rel)).unwrap();
            let b = fs::read(&entry).unwrap();
            assert!(
                a == b,
                "{} is not a complete copy ({} of {} bytes)",
                rel.display(),
                b.len(),
                a.len()
            );
        }
    }
}

fn walk(p: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir(p) {
        for e in rd.flatten() {
            let path = e.path();
            if path.is_dir() {
                out.extend(walk(&path));
            }
            out.push(path);
        }
    }
    out
}

/// A copy of a generated tree running in tmux: the pieces a test checks afterwards.
struct TmuxCopy {
    t: Tmux,
    /// Keeps the directory alive (removed on drop).
    _tmp: tempfile::TempDir,
    src: std::path::PathBuf,
    dst: std::path::PathBuf,
    exit_file: std::path::PathBuf,
}

impl TmuxCopy {
    /// Starts `copyscope FLAGS src dst` on a `big_mb` tree in a `w`×`h` tmux session, paced
    /// at `bps`; the shell records the exit code and keeps the pane open.
    fn start(
        tag: &str,
        (w, h): (u16, u16),
        big_mb: usize,
        flags: &str,
        bps: &str,
        env: &[(&str, &str)],
    ) -> TmuxCopy {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        let dst = tmp.path().join(format!("dst-{tag}"));
        make_source(&src, big_mb);
        let exit_file = tmp.path().join("exit");
        let cmd = format!(
            "{BIN} {flags} {} {}; echo $? > {}; sleep 60",
            src.display(),
            dst.display(),
            exit_file.display()
        );
        let mut all = vec![
            ("COPYSCOPE_TEST_THROTTLE_BPS", bps),
            ("TERM", "xterm-256color"),
        ];
        all.extend_from_slice(env);
        let t = Tmux::start(tag, w, h, &cmd, &all);
        TmuxCopy {
            t,
            _tmp: tmp,
            src,
            dst,
            exit_file,
        }
    }

    /// The exit code, once copyscope has exited.
    fn exit_code(&self, timeout: Duration) -> String {
        wait_file(&self.exit_file, timeout)
            .expect("copyscope exited")
            .trim()
            .to_string()
    }
}

#[test]
fn pause_resume_and_cancel_in_tmux() {
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    // 8 MB/s: the 64 MB file takes ~8 s, long enough to pause and cancel.
    let c = TmuxCopy::start("cancel", (80, 24), 64, "--no-sync", "8000000", &[]);
    let t = &c.t;
    let screen = t.wait_for("the copying screen", Duration::from_secs(20), |s| {
        s.contains("copying") && s.contains("MB/s")
    });
    assert!(screen.contains("copyscope"), "{screen}");
    assert!(t.alternate_on(), "TUI runs on the alternate screen");
    let raw = std::process::Command::new("tmux")
        .args(["-L", &t.socket, "capture-pane", "-e", "-p", "-t", &t.name])
        .output()
        .unwrap();
    assert!(
        sets_a_colour(&String::from_utf8_lossy(&raw.stdout)),
        "colour without NO_COLOR"
    );

    t.send("p");
    t.wait_for("paused state", Duration::from_secs(5), |s| {
        s.contains("paused")
    });
    // While paused no I/O is issued: the bytes copied stay put.
    std::thread::sleep(Duration::from_millis(600));
    let a = dir_bytes(&c.dst);
    std::thread::sleep(Duration::from_millis(1200));
    let b = dir_bytes(&c.dst);
    assert_eq!(a, b, "paused copy still wrote data");

    t.send("p");
    t.wait_for("copying again", Duration::from_secs(5), |s| {
        s.contains("copying")
    });

    let s = t.ask_to_cancel();
    assert!(s.contains("Cancel the copy?"), "{s}");
    t.send("q");
    assert_eq!(
        c.exit_code(Duration::from_secs(20)),
        "130",
        "cancel exits 130"
    );
    assert!(!t.alternate_on(), "terminal left the alternate screen");
    let after = t.capture_history();
    assert!(
        after.contains("cancelled"),
        "summary says cancelled:\n{after}"
    );
    assert_nothing_lost(&c.src, &c.dst);
}

fn dir_bytes(p: &Path) -> u64 {
    walk(p)
        .iter()
        .filter_map(|f| fs::metadata(f).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

#[test]
fn completed_copy_leaves_summary_in_scrollback() {
    let c = TmuxCopy::start("done", (120, 40), 16, "", "16000000", &[]);
    let t = &c.t;
    assert_eq!(c.exit_code(Duration::from_secs(60)), "0");
    assert!(!t.alternate_on());
    let after = t.capture_history();
    assert!(after.contains("MB/s"), "summary has speeds:\n{after}");
    assert!(
        after.contains("21 files") || after.contains("files 21"),
        "summary counts files:\n{after}"
    );
    assert_nothing_lost(&c.src, &c.dst);
    assert_eq!(
        fs::read(c.src.join("big.bin")).unwrap(),
        fs::read(c.dst.join("big.bin")).unwrap()
    );
}

/// Runs a paced copy in tmux, applies `disrupt` once the copy screen is up, and returns
/// (exit code, tmux, src, dst) after copyscope has exited.
fn disrupted_copy(
    tag: &str,
    extra_env: &[(&str, &str)],
    disrupt: impl Fn(&Tmux, &Path),
) -> (String, TmuxCopy) {
    let c = TmuxCopy::start(tag, (80, 24), 48, "", "6000000", extra_env);
    c.t.wait_for("the copying screen", Duration::from_secs(20), |s| {
        s.contains("copying")
    });
    disrupt(&c.t, &c.dst);
    (c.exit_code(Duration::from_secs(30)), c)
}

fn copyscope_pid(marker: &Path) -> Option<i32> {
    let marker = marker.display().to_string();
    fs::read_dir("/proc").ok()?.flatten().find_map(|p| {
        let cmd = fs::read(p.path().join("cmdline")).ok()?;
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        (args.first()?.ends_with("/copyscope") && args.contains(&marker))
            .then(|| p.file_name().to_string_lossy().parse().ok())
            .flatten()
    })
}

#[test]
fn sigterm_and_sighup_restore_the_terminal_and_lose_nothing() {
    for (tag, sig) in [("term", "TERM"), ("hup", "HUP")] {
        let (code, c) = disrupted_copy(tag, &[], |_, dst| {
            let pid = copyscope_pid(dst).expect("copyscope runs");
            std::process::Command::new("kill")
                .args([&format!("-{sig}"), &pid.to_string()])
                .status()
                .unwrap();
        });
        assert_eq!(code, "130", "SIG{sig} cancels");
        assert!(!c.t.alternate_on(), "terminal restored after SIG{sig}");
        assert_nothing_lost(&c.src, &c.dst);
    }
}

#[test]
fn a_panic_on_another_thread_ends_cleanly() {
    let (code, c) = disrupted_copy(
        "panic",
        &[("COPYSCOPE_TEST_PANIC_AFTER_MS", "1500")],
        |_, _| {},
    );
    assert_eq!(code, "2", "a panic is a fatal error");
    assert!(!c.t.alternate_on(), "terminal restored after the panic");
    let screen = c.t.capture_history();
    assert!(screen.contains("stopped safely"), "{screen}");
    assert_nothing_lost(&c.src, &c.dst);
}

#[test]
fn replay_plays_seeks_and_quits() {
    let tmp = tempfile::tempdir().unwrap();
    let exit_file = tmp.path().join("exit");
    let rec = std::fs::canonicalize("assets/slowdev-40mbps-ext4.jsonl").unwrap();
    let cmd = format!(
        "{BIN} replay --speed 10 {}; echo $? > {}; sleep 60",
        rec.display(),
        exit_file.display()
    );
    let t = Tmux::start("replay", 100, 32, &cmd, &[("TERM", "xterm-256color")]);
    // At 10x the recording's first drop (at 5 s) is on screen within a few seconds.
    let s = t.wait_for("a drop in the events panel", Duration::from_secs(20), |s| {
        s.lines()
            .any(|l| l.contains("  drop ") && l.contains(" MB/s for "))
    });
    assert!(s.contains("dirty"), "{s}");
    t.send("End");
    let s = t.wait_for("the end of the recording", Duration::from_secs(10), |s| {
        s.contains("flushed in")
    });
    assert!(s.contains("done"), "state at the end:\n{s}");
    t.send("Home");
    t.wait_for("back at the start", Duration::from_secs(10), |s| {
        !s.contains("flushed in")
    });
    t.send("q");
    let code = wait_file(&exit_file, Duration::from_secs(10)).expect("replay exited");
    assert_eq!(code.trim(), "0");
    assert!(!t.alternate_on());
}

#[test]
fn overwrite_dialog_skips_and_overwrites_as_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.txt"), "new a").unwrap();
    fs::write(src.join("b.txt"), "new b").unwrap();
    let dst = tmp.path().join("dst");
    fs::create_dir_all(dst.join("src")).unwrap();
    fs::write(dst.join("src/a.txt"), "old a").unwrap();
    fs::write(dst.join("src/b.txt"), "old b").unwrap();
    let exit_file = tmp.path().join("exit");
    // DEST is an existing directory: the tree goes to dst/src, where both files exist.
    let cmd = format!(
        "{BIN} --jobs 1 {} {}; echo $? > {}; sleep 60",
        src.display(),
        dst.display(),
        exit_file.display()
    );
    let t = Tmux::start(
        "ask",
        80,
        24,
        &cmd,
        &[("TERM", "xterm-256color"), ("NO_COLOR", "1")],
    );
    let s = t.wait_for("the overwrite dialog", Duration::from_secs(20), |s| {
        s.contains("already exists")
    });
    let first_is_a = s.contains("a.txt");
    t.send("s"); // skip the first
    t.wait_for("the second question", Duration::from_secs(10), |s| {
        s.contains("already exists") && s.contains(if first_is_a { "b.txt" } else { "a.txt" })
    });
    // NO_COLOR: no colour escapes on the screen.
    let out = std::process::Command::new("tmux")
        .args(["-L", &t.socket, "capture-pane", "-e", "-p", "-t", &t.name])
        .output()
        .unwrap();
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(
        !sets_a_colour(&raw),
        "colour escapes with NO_COLOR:\n{raw:?}"
    );
    t.send("o"); // overwrite the second
    let code = wait_file(&exit_file, Duration::from_secs(20)).expect("copyscope exited");
    assert_eq!(code.trim(), "0");
    let (skipped, overwritten) = if first_is_a {
        ("a.txt", "b.txt")
    } else {
        ("b.txt", "a.txt")
    };
    assert!(
        fs::read_to_string(dst.join("src").join(skipped))
            .unwrap()
            .starts_with("old")
    );
    assert!(
        fs::read_to_string(dst.join("src").join(overwritten))
            .unwrap()
            .starts_with("new")
    );
}

/// True when `s` holds an SGR sequence that sets a foreground or background colour (30–37,
/// 38;…, 40–47, 48;…, 90–97, 100–107); resets (39, 49) and bold do not count.
fn sets_a_colour(s: &str) -> bool {
    s.split("\x1b[").skip(1).any(|seq| {
        let params = seq.split('m').next().unwrap_or("");
        params.split(';').any(|p| {
            matches!(
                p.parse::<u32>(),
                Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
            )
        })
    })
}

/// The run's recording when no `--record` was given: `s` saves it (a whole recording, read
/// back here), yet it has no name of its own, so a SIGKILLed run leaves nothing in TMPDIR
/// (each one used to leave a /tmp/copyscope-run-* directory).
#[test]
fn s_saves_the_unnamed_recording_and_sigkill_leaves_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    let (tmpdir, shots) = (tmp.path().join("tmpdir"), tmp.path().join("shots"));
    fs::create_dir_all(&tmpdir).unwrap();
    fs::create_dir_all(&shots).unwrap();
    let flags = format!("--screenshot {}", shots.display());
    let tmpdir_s = tmpdir.display().to_string();
    let c = TmuxCopy::start(
        "unnamed",
        (100, 30),
        48,
        &flags,
        "6000000",
        &[("TMPDIR", &tmpdir_s)],
    );
    c.t.wait_for("the copying screen", Duration::from_secs(20), |s| {
        s.contains("copying") && s.contains("MB/s")
    });
    std::thread::sleep(Duration::from_millis(1500));
    c.t.send("s");
    c.t.wait_for("the screenshot message", Duration::from_secs(20), |s| {
        s.contains(".jsonl")
    });
    let saved: Vec<_> = fs::read_dir(&shots)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let rec = copyscope::report::recording::Recording::load(&saved[0]).expect("a recording");
    assert!(rec.samples.len() >= 5, "{} samples", rec.samples.len());
    let pid = copyscope_pid(&c.dst).expect("copyscope runs");
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert_eq!(c.exit_code(Duration::from_secs(30)), "137");
    let left: Vec<_> = fs::read_dir(&tmpdir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    if !unnamed_files_work(&tmpdir) {
        // The product falls back to a temporary directory there (removed on every exit but
        // SIGKILL's).
        eprintln!(
            "SKIPPED the SIGKILL check: no O_TMPFILE on {}",
            tmpdir.display()
        );
        return;
    }
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

fn unnamed_files_work(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
        .is_ok()
}
