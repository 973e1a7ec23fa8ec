//! End-to-end in tmux: what copyscope does on the terminals users have — TERM=dumb gets plain
//! output (no full screen, no colour codes), LANG=C gets ASCII glyphs.

mod tmux;

use std::fs;
use std::time::Duration;

use tmux::{Tmux, have, wait_file};

const BIN: &str = env!("CARGO_BIN_EXE_copyscope");

fn need_tmux() {
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
}

/// Runs `copyscope --no-sync SRC DST` on a small tree in tmux with `env`; returns the pane
/// (with scrollback) after it exited and its exit code.
fn run_in_tmux(
    tag: &str,
    env: &[(&str, &str)],
    pace_bps: &str,
    look: impl Fn(&Tmux),
) -> (String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.bin"), vec![7u8; 8 << 20]).unwrap();
    fs::write(src.join("b.txt"), "b\n").unwrap();
    let exit_file = tmp.path().join("exit");
    // Through env(1): tmux sets TERM for the pane itself, after `-e`.
    let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let cmd = format!(
        "env {} {BIN} --no-sync {} {}; echo $? > {}; sleep 60",
        vars.join(" "),
        src.display(),
        tmp.path().join("dst").display(),
        exit_file.display()
    );
    let t = Tmux::start(
        tag,
        100,
        30,
        &cmd,
        &[("COPYSCOPE_TEST_THROTTLE_BPS", pace_bps)],
    );
    look(&t);
    let code = wait_file(&exit_file, Duration::from_secs(60)).expect("copyscope exited");
    (t.capture_history(), code.trim().to_string())
}

/// Digits vary from run to run (speeds, times, temp paths): the snapshot keeps the shape.
fn redact(s: &str, tmp_marker: &str) -> String {
    s.lines()
        .map(|l| {
            let l = match l.find(tmp_marker) {
                Some(i) => format!("{}<tmp>", &l[..i]),
                None => l.to_string(),
            };
            l.chars()
                .map(|c| if c.is_ascii_digit() { '9' } else { c })
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn term_dumb_gets_plain_output() {
    need_tmux();
    let (pane, code) = run_in_tmux(
        "dumb",
        &[("TERM", "dumb"), ("LANG", "C.UTF-8")],
        "4000000",
        |t| {
            // While it copies: no alternate screen, a progress line instead.
            std::thread::sleep(Duration::from_millis(1500));
            assert!(!t.alternate_on(), "TERM=dumb must not get the full screen");
        },
    );
    assert_eq!(code, "0", "{pane}");
    assert!(pane.contains("TERM=dumb: plain output"), "{pane}");
    let text: String = pane
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("echo $?"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!text.contains('\x1b'), "no escape sequences: {text}");
    // The head and the speeds (the diagnosis lines below them vary from run to run).
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("copyscope: done"))
        .take(2)
        // min and peak of a 10 MB copy vary in unit from run to run: the head of the line only.
        .map(|l| l.split(" (min ").next().unwrap_or(l))
        .collect();
    assert!(!summary.is_empty(), "{pane}");
    insta::assert_snapshot!("term_dumb_plain", redact(&summary.join("\n"), "/tmp/"));
}

#[test]
fn lang_c_draws_ascii_in_the_tui() {
    need_tmux();
    let (pane, code) = run_in_tmux(
        "langc",
        &[("TERM", "xterm-256color"), ("LANG", "C"), ("LC_ALL", "")],
        "2000000",
        |t| {
            // The whole first frame (its footer is the last row drawn): a capture taken while
            // the terminal is still receiving it shows only its top rows.
            let s = t.wait_for("the copying screen", Duration::from_secs(20), |s| {
                s.contains("copying") && s.contains("MB/s") && s.contains("q quit")
            });
            assert!(t.alternate_on());
            assert!(s.is_ascii(), "LANG=C: ASCII only on screen:\n{s}");
            assert!(s.contains("+-") && s.contains('|'), "ASCII borders:\n{s}");
            t.send("q");
            t.send("q");
        },
    );
    assert_eq!(code, "130", "{pane}");
}

/// The stop tests find their copyscope by its executable: one at a time.
static STOP_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A paced 64 MB copy in an interactive bash inside tmux (job control on).
fn start_in_shell(tag: &str) -> (Tmux, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("big.bin"), vec![3u8; 64 << 20]).unwrap();
    let t = Tmux::start(
        tag,
        100,
        30,
        "bash --norc --noprofile -i",
        &[("COPYSCOPE_TEST_THROTTLE_BPS", "2000000")],
    );
    std::thread::sleep(Duration::from_millis(300));
    t.send("PS1='shell$ '");
    t.send("Enter");
    t.wait_for("the shell prompt", Duration::from_secs(10), |s| {
        s.contains("shell$ ")
    });
    t.send(&format!(
        "TERM=xterm-256color {BIN} --no-sync {} {}",
        src.display(),
        tmp.path().join("dst").display()
    ));
    t.send("Enter");
    t.wait_for("the copying screen", Duration::from_secs(20), |s| {
        s.contains("copying") && s.contains("MB/s")
    });
    (t, tmp)
}

#[test]
fn ctrl_z_then_fg_redraws_and_restores_raw_mode() {
    need_tmux();
    let _one = STOP_TESTS.lock().unwrap_or_else(|p| p.into_inner());
    let (t, tmp) = start_in_shell("ctrlz");
    t.send("C-z");
    let s = t.wait_for("the shell after Ctrl-Z", Duration::from_secs(5), |s| {
        s.contains("Stopped") && s.contains("shell$")
    });
    assert!(!t.alternate_on(), "Ctrl-Z leaves the alternate screen\n{s}");
    t.send("fg");
    t.send("Enter");
    t.assert_redrawn_and_raw("Ctrl-Z and fg");
    // kill -STOP (cannot be caught: raw mode and the alternate screen stay as they were, the
    // shell takes the terminal back), then fg: the same full redraw.
    let pid = copyscope_pid(tmp.path());
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    t.wait_for("the shell after kill -STOP", Duration::from_secs(5), |s| {
        s.contains("Stopped")
    });
    t.send("fg");
    t.send("Enter");
    t.assert_redrawn_and_raw("kill -STOP and fg");
    t.send("q");
    t.send("q");
    t.wait_for(
        "the prompt after the cancel",
        Duration::from_secs(10),
        |s| s.contains("shell$") && s.contains("cancelled"),
    );
}

#[test]
fn kill_stop_then_cont_redraws_without_a_shell() {
    need_tmux();
    let _one = STOP_TESTS.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("big.bin"), vec![5u8; 64 << 20]).unwrap();
    let cmd = format!(
        "env TERM=xterm-256color {BIN} --no-sync {} {}; sleep 60",
        src.display(),
        tmp.path().join("dst").display()
    );
    let t = Tmux::start(
        "stopcont",
        100,
        30,
        &cmd,
        &[("COPYSCOPE_TEST_THROTTLE_BPS", "2000000")],
    );
    t.wait_for("the copying screen", Duration::from_secs(20), |s| {
        s.contains("copying")
    });
    let pid = copyscope_pid(tmp.path());
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // Something else writes over the screen meanwhile, as a wall message would.
    t.write_over("\r\ngarbage written while stopped\r\n");
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    // Until the redraw, the screen still shows the old frame with the garbage over it.
    t.assert_redrawn_and_raw("kill -STOP and kill -CONT");
}

/// The copyscope this test started: the newest with our binary as argv[0] and `tmp` among its
/// arguments (tests of this file run in parallel, each copying out of its own temp dir).
fn copyscope_pid(tmp: &std::path::Path) -> rustix::process::Pid {
    let needle = tmp.to_string_lossy().into_owned();
    let mut best: Option<(u64, i32)> = None;
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // By argv, not /proc/PID/exe: a rebuild replaces the binary under a running test.
        let Ok(cmd) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd);
        if cmd.split('\0').next() != Some(BIN) || !cmd.contains(&needle) {
            continue;
        }
        let start: u64 = fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().nth(19).map(str::to_string))
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if best.is_none_or(|(b, _)| start > b) {
            best = Some((start, pid));
        }
    }
    rustix::process::Pid::from_raw(best.expect("copyscope is running").1).unwrap()
}
