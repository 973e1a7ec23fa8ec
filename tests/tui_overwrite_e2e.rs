//! The overwrite dialog in a real terminal (tmux): both sides' sizes and dates (local time, the
//! zone named) with the newer one marked; "r" renames (the existing file stays, the copy goes to "name (1)"), "l"
//! overwrites every older destination and skips the newer ones without asking again.

mod tmux;

use std::fs;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use tmux::{Tmux, have, wait_file};

const BIN: &str = env!("CARGO_BIN_EXE_copyscope");

fn put(p: &Path, data: &[u8], mtime_s: u64) {
    fs::write(p, data).unwrap();
    let f = fs::File::options().write(true).open(p).unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_secs(mtime_s))
        .unwrap();
}

#[test]
fn overwrite_dialog_rename_and_overwrite_all_older() {
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    fs::create_dir_all(&src).unwrap();
    fs::create_dir_all(&dst).unwrap();
    // a: the destination is older (asked: rename); b: older (asked: overwrite all older);
    // c: the destination is newer (skipped by that rule, not asked).
    put(&src.join("a"), b"new a, longer", 1_796_067_727);
    put(&dst.join("a"), b"old a", 1_764_531_727);
    put(&src.join("b"), b"new b", 1_796_067_727);
    put(&dst.join("b"), b"old b", 1_764_531_727);
    put(&src.join("c"), b"new c", 1_764_531_727);
    put(&dst.join("c"), b"old c", 1_796_067_727);
    let exit_file = tmp.path().join("exit");
    let cmd = format!(
        "{BIN} -i -j1 --no-sync -T {} {}; echo $? > {}; sleep 60",
        src.display(),
        dst.display(),
        exit_file.display()
    );
    // Dates in the user's local time with the zone named, as a file manager shows them: a
    // POSIX TZ rule (no tzdata needed) an hour east of UTC.
    let t = Tmux::start(
        "overwrite",
        100,
        30,
        &cmd,
        &[
            ("TERM", "xterm-256color"),
            ("TZ", "CET-1CEST,M3.5.0,M10.5.0/3"),
        ],
    );
    let first = t.wait_for("the dialog for a", Duration::from_secs(20), |s| {
        s.contains("already exists") && s.contains("dst/a")
    });
    let line = |screen: &str, label: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!("│{label} ")))
            .unwrap_or_default()
            .to_string()
    };
    let existing = line(&first, "existing");
    let new = line(&first, "new");
    assert!(
        existing.contains("5 B") && existing.contains("2025-11-30 20:42:07 CET"),
        "{first}"
    );
    assert!(
        new.contains("13 B") && new.contains("2026-11-30 20:42:07 CET"),
        "{first}"
    );
    assert!(
        new.contains("newer") && !existing.contains("newer"),
        "{first}"
    );
    assert!(
        first.contains("r Rename") && first.contains("l Overwrite all older"),
        "{first}"
    );
    t.send("r");
    t.wait_for("the dialog for b", Duration::from_secs(20), |s| {
        s.contains("already exists") && s.contains("dst/b")
    });
    t.send("l");
    let code = wait_file(&exit_file, Duration::from_secs(30)).expect("copyscope exited");
    assert_eq!(code.trim(), "0");
    let read = |n: &str| fs::read(dst.join(n)).unwrap();
    assert_eq!(read("a"), b"old a");
    assert_eq!(read("a (1)"), b"new a, longer");
    assert_eq!(read("b"), b"new b");
    assert_eq!(read("c"), b"old c");
    assert!(!dst.join("b (1)").exists() && !dst.join("c (1)").exists());
}
