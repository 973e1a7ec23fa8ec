//! The command line: help with examples, completions, man page, demo, and the
//! subcommand/default-command split (a file named `demo` can still be copied).

use crate::util;

use std::process::Command;
use std::time::Duration;

use util::*;

fn run(args: &[&str]) -> std::process::Output {
    let mut c = Command::new(bin());
    c.args(args);
    run_timeout(c, Duration::from_secs(60))
}

#[test]
fn help_shows_usage_options_and_examples() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "SOURCE... DEST",
        "--overwrite",
        "--verify",
        "--reflink",
        "--jobs",
        "Examples:",
        "demo",
        "Exit status",
    ] {
        assert!(s.contains(needle), "missing {needle} in help:\n{s}");
    }
    assert!(!s.contains("--sys-root"), "hidden option shown");
}

#[test]
fn completions_and_man() {
    let o = run(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("copyscope"));
    let o = run(&["man"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH copyscope"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(
        run(&["--overwrite=sometimes", "a", "b"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["--plain", "--json", "a", "b"]).status.code(), Some(2));
    let o = run(&["replay", "/nonexistent/rec.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--record"));
}

#[test]
fn a_file_named_demo_is_copied_after_double_dash() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("demo"), b"not a subcommand");
    let mut c = Command::new(bin());
    c.current_dir(t.path())
        .args(["--plain", "--", "demo", "copy"]);
    let o = run_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        std::fs::read(t.path().join("copy")).unwrap(),
        b"not a subcommand"
    );
}

#[test]
fn demo_makes_copies_and_cleans_up() {
    let t = tempfile::tempdir().unwrap();
    let mut c = Command::new(bin());
    // The tests' pacing hook replaces the demo's own ~20 s pace, so this runs fast.
    c.env("TMPDIR", t.path())
        .env("COPYSCOPE_TEST_THROTTLE_BPS", "1000000000")
        .args(["demo", "--size", "20", "--plain"]);
    let o = run_timeout(c, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("copyscope: done: 20.0 MB"), "{s}");
    assert!(s.contains("removing"), "{s}");
    // What is left is the picture the demo ends with, beside the removed temp dir.
    let left: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["copyscope-demo"], "demo left {left:?}");
    let pictures: Vec<_> = std::fs::read_dir(t.path().join("copyscope-demo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        pictures
            .iter()
            .any(|p| p.extension().is_some_and(|x| x == "png")),
        "no picture: {pictures:?}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        s.contains("screenshot:") || err.contains("screenshot:"),
        "the picture's path is not said:\n{s}\n{err}"
    );
}

/// `--plain` prints a drop while it lasts with "(so far)", stamped with the drop's start like
/// its final line, so the lines stay in time order: the demo's own drop (its CPU hogs), at its
/// own pace.
#[test]
fn a_drop_so_far_is_stamped_like_its_final_line() {
    let t = tempfile::tempdir().unwrap();
    let mut c = Command::new(bin());
    c.env("TMPDIR", t.path()).args(["demo", "--plain"]);
    let o = run_timeout(c, Duration::from_secs(180));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    let drops: Vec<&str> = s.lines().filter(|l| l.contains("] drop ")).collect();
    let stamp = |l: &str| l.split(']').next().unwrap_or("").to_string();
    let mut pending: Option<String> = None;
    for l in &drops {
        if let Some(p) = &pending {
            assert_eq!(
                *p,
                stamp(l),
                "a drop's lines have one stamp:\n{}",
                drops.join("\n")
            );
        }
        pending = l.ends_with("(so far)").then(|| stamp(l));
    }
    assert!(pending.is_none(), "a final line follows:\n{s}");
    assert!(
        drops.iter().any(|l| !l.ends_with("(so far)")),
        "the demo's drop is printed:\n{s}"
    );
}

#[test]
fn demo_is_cancelled_by_sigint_and_cleans_up() {
    let t = tempfile::tempdir().unwrap();
    let mut c = Command::new(bin());
    c.env("TMPDIR", t.path())
        .env("COPYSCOPE_TEST_THROTTLE_BPS", "2000000")
        .args(["demo", "--size", "30", "--json", "--interval", "50"]);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let r = Running {
        child,
        lines: {
            let (tx, rx) = std::sync::mpsc::channel();
            drop(tx);
            rx
        },
        seen: Vec::new(),
    };
    // Wait until the copy phase has made the destination, then interrupt.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let copying = std::fs::read_dir(t.path())
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.path().join("copy").exists());
        if copying {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "demo never started copying"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    r.signal(rustix::process::Signal::INT);
    let (code, _, err) = r.finish();
    assert_eq!(code, Some(130), "{err}");
    let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().collect();
    assert!(left.is_empty(), "demo left {left:?}");
}
