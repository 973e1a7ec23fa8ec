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
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("copyscope: done"))
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
            let s = t.wait_for("the copying screen", Duration::from_secs(20), |s| {
                s.contains("copying") && s.contains("MB/s")
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
