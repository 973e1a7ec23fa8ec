//! Names in the TUI, in a real terminal (tmux): a file named with terminal escape sequences is
//! shown quoted (`$'\033'`) on the current-file row and in the overwrite dialog, and neither
//! retitles nor clears the terminal; the summary left in the scrollback is quoted too.

mod tmux;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;
use std::time::Duration;

use tmux::{Tmux, have, wait_file};

const BIN: &str = env!("CARGO_BIN_EXE_copyscope");

fn pane_title(t: &Tmux) -> String {
    let o = Command::new("tmux")
        .args([
            "-L",
            &t.socket,
            "display",
            "-p",
            "-t",
            &t.name,
            "#{pane_title}",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn hostile_names_are_quoted_in_the_tui() {
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    fs::create_dir_all(&src).unwrap();
    fs::create_dir_all(dst.join("src")).unwrap();
    // A file the dialog asks about, then a big one the current-file row shows for a while.
    let asked = OsStr::from_bytes(b"a\x1b]0;PWNED\x07");
    let big = OsStr::from_bytes(b"b\x1b[2Jbig");
    fs::write(src.join(asked), b"new").unwrap();
    fs::write(dst.join("src").join(asked), b"old").unwrap();
    fs::write(src.join(big), vec![7u8; 24 << 20]).unwrap();
    let exit_file = tmp.path().join("exit");
    let cmd = format!(
        "{BIN} -i -j1 --no-sync {} {}; echo $? > {}; sleep 60",
        src.display(),
        dst.display(),
        exit_file.display()
    );
    let t = Tmux::start(
        "names",
        120,
        32,
        &cmd,
        &[
            ("COPYSCOPE_TEST_THROTTLE_BPS", "8000000"),
            ("TERM", "xterm-256color"),
        ],
    );
    let title_before = pane_title(&t);
    let dialog = t.wait_for("the overwrite dialog", Duration::from_secs(20), |s| {
        s.contains("already exists")
    });
    assert!(dialog.contains(r"a'$'\033'']0;PWNED'$'\a'"), "{dialog}");
    t.send("o");
    let copying = t.wait_for("the big file's row", Duration::from_secs(20), |s| {
        s.contains(r"b'$'\033''[2Jbig'")
    });
    assert!(
        copying.contains("copyscope"),
        "the screen was not cleared: {copying}"
    );
    let code = wait_file(&exit_file, Duration::from_secs(60)).expect("copyscope exited");
    assert_eq!(code.trim(), "0");
    assert_eq!(
        pane_title(&t),
        title_before,
        "the name did not retitle the terminal"
    );
    assert!(!pane_title(&t).contains("PWNED"));
    assert_eq!(fs::read(dst.join("src").join(asked)).unwrap(), b"new");
}
