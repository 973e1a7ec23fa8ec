//! `copyscope pipe` end to end: the real binary between real processes — data through it byte
//! for byte on every path (pipe to pipe, file to pipe, pipe to file, an O_APPEND file, file to
//! file), a reader downstream that stops named as the cause of the drop and a steadily slow
//! one as the verdict's limit, the end of a reader that closes the pipe (exit 141), and `-s`
//! giving the percent and the ETA; in tmux, the live chart on the terminal while stdout is
//! the pipe, and Ctrl-C giving the terminal back as it was.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

mod tmux;
mod util;
use util::{bin, run_timeout, text};

/// Runs a bash pipeline with `$CS` the binary under test, in `dir`.
fn bash(dir: &Path, script: &str, limit: Duration) -> Output {
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(format!("set -o pipefail; {script}"))
        .current_dir(dir)
        .env("CS", bin())
        .env_remove("COPYSCOPE_TEST_THROTTLE_BPS");
    run_timeout(c, limit)
}

fn sha256(dir: &Path, file: &str) -> String {
    let o = bash(dir, &format!("sha256sum < {file}"), Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A reader in Python that takes data as fast as it can, or `mbps` at most, and pauses as told:
/// `plan` is a list of (seconds, MB/s or None for as fast as possible, or 0 to stop reading).
fn reader(plan: &str) -> String {
    format!(
        "python3 -c '
import sys, time
plan = {plan}
f = sys.stdin.buffer
for secs, rate in plan:
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if rate == 0:
            time.sleep(0.05)
            continue
        if not f.read(1 << 20):
            sys.exit(0)
        if rate:
            time.sleep(1.048576 / rate)
'"
    )
}

#[test]
fn random_data_passes_byte_for_byte_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = bash(
        d,
        "head -c 256M /dev/urandom > src && head -c 64M src > small && : > appended",
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "{}", text(&o));
    let want = sha256(d, "src");
    // Pipe to pipe (splice), 256 MiB.
    let o = bash(
        d,
        "cat src | $CS pipe 2> err | sha256sum",
        Duration::from_secs(300),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), want);
    let err = std::fs::read_to_string(d.join("err")).unwrap();
    assert!(
        err.contains("copyscope: done: 268 MB from stdin (pipe) to stdout (pipe)"),
        "{err}"
    );
    let small = sha256(d, "small");
    for (script, out) in [
        // A file to a pipe (splice from the file), a pipe to a file (splice into it), a pipe to
        // an O_APPEND file (splice refuses it: the buffer), a file to a file (the buffer).
        ("$CS pipe < small 2>/dev/null | cat > a", "a"),
        ("cat small | $CS pipe > b 2>/dev/null", "b"),
        ("cat small | $CS pipe >> appended 2>/dev/null", "appended"),
        ("$CS pipe < small > c 2>/dev/null", "c"),
    ] {
        let o = bash(d, script, Duration::from_secs(120));
        assert!(o.status.success(), "{script}: {}", text(&o));
        assert_eq!(sha256(d, out), small, "{script}");
    }
    // `> FILE`: the file's filesystem and disks are the destination's, as for a copy.
    let o = bash(
        d,
        "cat small | $CS pipe --record r.jsonl > b 2>/dev/null",
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "{}", text(&o));
    let header = json_lines(&d.join("r.jsonl")).remove(0);
    let env = &header["environment"];
    assert_eq!(env["pipe"]["input"], "pipe", "{env}");
    assert_eq!(env["pipe"]["output"], "file", "{env}");
    assert!(env["fs_type"].is_string(), "the file's filesystem: {env}");
    assert!(
        header["destination"].as_str().unwrap().ends_with("/b"),
        "{header}"
    );
    assert_eq!(header["sources"][0], "stdin (pipe)", "{header}");
}

/// The reader stops for 3 s after 2.5 s, reads again, then closes the pipe: the drop names
/// the reader of the pipe, and copyscope ends as `cat` would (141) with its summary.
#[test]
fn a_reader_that_stops_is_named_and_one_that_closes_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = format!(
        "cat /dev/zero | $CS pipe --json 2> log | {}; echo ${{PIPESTATUS[1]}} > rc",
        reader("[(2.5, None), (3, 0), (1.5, None)]")
    );
    let o = bash(d, &script, Duration::from_secs(120));
    assert!(o.status.success(), "{}", text(&o));
    let rc = std::fs::read_to_string(d.join("rc")).unwrap();
    assert_eq!(rc.trim(), "141", "the reader closed the pipe");
    let lines = json_lines(&d.join("log"));
    let drops: Vec<&Value> = lines
        .iter()
        .filter(|v| v["type"] == "diagnosis" && v["kind"] == "drop")
        .collect();
    // The stop (2.5 s after the reader started, itself a moment after copyscope) is a drop
    // named so; a dip before it, when a loaded machine slowed the reader, may be one too.
    let named = drops
        .iter()
        .find(|v| {
            v["causes"][0]["cause"] == "pipe_reader"
                && (1.5..6.0).contains(&v["t"].as_f64().unwrap())
        })
        .unwrap_or_else(|| panic!("no drop at the stop named the reader: {drops:?}"));
    assert!(
        named["text"]
            .as_str()
            .unwrap()
            .contains("the reader of the pipe stopped taking data"),
        "{named}"
    );
    let summary = lines.iter().find(|v| v["type"] == "summary").unwrap();
    assert_eq!(summary["status"], "broken_pipe", "{summary}");
    assert_eq!(summary["exit_code"], 141, "{summary}");
    assert!(summary["bytes_copied"].as_u64().unwrap() > 0);
}

/// A reader that takes 30 MB/s throughout: no drop (it never was faster), yet the verdict
/// says what limited the pipe. `-s` gives the progress its total, percent and ETA.
#[test]
fn a_steadily_slow_reader_is_the_verdict_and_size_gives_percent_and_eta() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let slow = reader("[(60, 30)]");
    let o = bash(
        d,
        &format!("head -c 100M /dev/zero | $CS pipe -s 100M --json 2> log | {slow}"),
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "{}", text(&o));
    let lines = json_lines(&d.join("log"));
    let progress: Vec<&Value> = lines.iter().filter(|v| v["type"] == "progress").collect();
    assert!(progress.len() > 5, "{lines:?}");
    for p in &progress {
        assert_eq!(p["bytes_total"], 104_857_600, "{p}");
        assert_eq!(p["scan_done"], true, "{p}");
    }
    assert!(
        progress
            .iter()
            .any(|p| p["eta_s"].as_f64().is_some_and(|e| e > 0.0)),
        "an ETA while it runs: {progress:?}"
    );
    let summary = lines.iter().find(|v| v["type"] == "summary").unwrap();
    assert_eq!(summary["bytes_copied"], 104_857_600);
    assert_eq!(summary["verdict"]["limit"], "pipe_reader", "{summary}");
    // The plain lines (stderr is a file here): the total, the percent and the ETA in words.
    let o = bash(
        d,
        &format!("head -c 100M /dev/zero | $CS pipe -s 100M 2> plain | {slow}"),
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "{}", text(&o));
    let plain = std::fs::read_to_string(d.join("plain")).unwrap();
    let line = plain
        .lines()
        .find(|l| l.starts_with('[') && l.contains(" / 105 MB  "))
        .unwrap_or_else(|| panic!("no progress line with the total:\n{plain}"));
    assert!(line.contains(" %  now ") && line.contains("ETA "), "{line}");
    assert!(
        plain.contains("verdict: Limited by the reader of the pipe"),
        "{plain}"
    );
}

/// The chart draws on the terminal (stderr) while stdin and stdout are pipes; Ctrl-C twice
/// cancels (130), and the terminal is as it was: main screen, cursor, cooked mode with echo.
#[test]
fn the_chart_is_on_the_terminal_and_ctrl_c_gives_it_back() {
    use tmux::{Tmux, have, wait_file};
    assert!(
        have("tmux"),
        "tmux is required for this test (.ci/run installs it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let (rc, stty) = (dir.path().join("rc"), dir.path().join("stty"));
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "cat /dev/zero | \"$CS\" pipe | {} ; echo ${{PIPESTATUS[1]}} > {}; stty -a > {}; sleep 60\n",
            reader("[(600, 50)]"),
            rc.display(),
            stty.display()
        ),
    )
    .unwrap();
    let t = Tmux::start(
        "pipe",
        100,
        30,
        &format!("CS={} bash {}", bin(), script.display()),
        &[("TERM", "xterm-256color")],
    );
    let screen = t.wait_for("the pipe's chart", Duration::from_secs(30), |s| {
        s.contains("stdin (pipe) → stdout (pipe)") && s.contains("MB/s") && s.contains("passed")
    });
    assert!(
        t.alternate_on(),
        "the chart is on the alternate screen\n{screen}"
    );
    t.send("C-c");
    t.wait_for("the cancel question", Duration::from_secs(10), |s| {
        s.contains("Cancel")
    });
    t.send("C-c");
    let code = wait_file(&rc, Duration::from_secs(20)).expect("the pipeline ended");
    assert_eq!(code.trim(), "130", "cancelled");
    let stty = wait_file(&stty, Duration::from_secs(10)).expect("stty ran");
    assert!(!t.alternate_on(), "back on the main screen");
    assert!(t.cursor_shown(), "the cursor is shown");
    for flag in ["icanon", "echo", "isig"] {
        assert!(
            stty.split_whitespace().any(|w| w == flag),
            "{flag} restored:\n{stty}"
        );
    }
    let after = t.capture_history();
    assert!(after.contains("copyscope: cancelled"), "{after}");
}
