//! The free-space question in a real terminal (tmux) onto a small tmpfs: once the scan is
//! complete the dialog shows what the copy needs against what is free; `y` copies anyway (the
//! files that fit are copied, each that does not fails with "No space left on device", its
//! temporary removed, exit 1); `q` cancels (exit 130, no temporaries). A file
//! that would take the copy past most of the free space waits for the question, so onto
//! 2 MiB nothing at all is written before it.

mod tmux;
mod util;

use std::path::Path;
use std::time::Duration;

use tmux::{Tmux, have, wait_file};
use util::{Mount, bin, data, is_root, temp_leftovers, write};

/// Three 2 MiB files: 6.29 MB.
fn sources(dir: &Path) {
    for i in 0..3 {
        write(&dir.join(format!("f{i}")), &data(2 << 20, 40 + i));
    }
}

/// The first "N.NN MB" figure of a dialog row.
fn mb(row: &str) -> f64 {
    row.split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1] == "MB")
        .and_then(|w| w[0].parse().ok())
        .unwrap_or_else(|| panic!("no MB figure in {row:?}"))
}

/// Starts the TUI copying `src` into the tmpfs of `capacity` MB and waits for the dialog;
/// checks its figures, allowing for up to `may_have_written` MB written before it; returns the
/// session and the file its exit code goes to.
fn start(
    tag: &str,
    t: &Path,
    (src, dst): (&Path, &Path),
    capacity: f64,
    may_have_written: f64,
) -> (Tmux, std::path::PathBuf) {
    let exit_file = t.join(format!("exit-{tag}"));
    let cmd = format!(
        "{} --no-sync {} {}; echo $? > {}; sleep 60",
        bin(),
        src.display(),
        dst.display(),
        exit_file.display()
    );
    let tm = Tmux::start(tag, 100, 30, &cmd, &[("TERM", "xterm-256color")]);
    let screen = tm.wait_for("the low-space dialog", Duration::from_secs(20), |s| {
        s.contains("not enough space") && s.contains("copy anyway")
    });
    let row = |label: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!("│{label} ")))
            .unwrap_or_default()
            .to_string()
    };
    // The copy starts at once (DESIGN §2) and the question comes when the scan completes, so
    // under load a first file that fits may already be in place: "needed" and "free" are
    // what is left, both less by what was written; "short" is the same either way.
    let needed = mb(&row("needed"));
    let free = mb(&row("free"));
    assert!(row("free").contains("tmpfs"), "{screen}");
    // (With a write in flight the free space may be ahead of the progress counter by one
    // write, at most 1 MiB.)
    let written = 6.29 - needed;
    let slack = if written > 0.0 { 1.06 } else { 0.02 };
    let short = mb(&row("short"));
    assert!(
        (-0.01..=may_have_written).contains(&written)
            && (free + written - capacity).abs() < slack
            && (short - (6.29 - capacity)).abs() < slack,
        "needed {needed} MB, free {free} MB, short {short} MB:\n{screen}"
    );
    assert!(screen.contains(&dst.display().to_string()), "{screen}");
    (tm, exit_file)
}

fn mount(t: &Path, test: &str, mib: u32) -> Option<Mount> {
    if !is_root() {
        eprintln!("SKIPPED {test}: mounting a small tmpfs needs root (CI runs as root)");
        return None;
    }
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    let m = Mount::tmpfs(&t.join("small"), &format!("size={mib}m"));
    if m.is_none() {
        eprintln!("SKIPPED {test}: cannot mount a tmpfs here");
    }
    m
}

#[test]
fn continue_copies_what_fits_then_stops_on_enospc() {
    let t = tempfile::tempdir().unwrap();
    let Some(m) = mount(
        t.path(),
        "continue_copies_what_fits_then_stops_on_enospc",
        4,
    ) else {
        return;
    };
    let src = t.path().join("src");
    sources(&src);
    let dst = m.0.join("dst");
    let (tm, exit_file) = start("lowspace-c", t.path(), (&src, &dst), 4.19, 2.2);
    // While the question is open the workers wait: nothing more is written.
    let used = || rustix::fs::statvfs(&m.0).map(|v| v.f_blocks - v.f_bfree);
    let before = used().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        used().unwrap(),
        before,
        "written while the question was open"
    );
    tm.send("y");
    let code = wait_file(&exit_file, Duration::from_secs(60)).expect("copyscope exited");
    let history = tm.capture_history();
    assert_eq!(
        code.trim(),
        "1",
        "files that did not fit failed (exit 1):\n{history}"
    );
    assert!(
        history.contains("No space left on device"),
        "the failing file is reported:\n{history}"
    );
    // What fitted is complete and correct; nothing half-written is left behind.
    let copied: Vec<_> = (0..3)
        .filter(|i| dst.join(format!("f{i}")).exists())
        .collect();
    assert!(!copied.is_empty() && copied.len() < 3, "{copied:?}");
    for i in copied {
        assert_eq!(
            std::fs::read(dst.join(format!("f{i}"))).unwrap(),
            data(2 << 20, 40 + i),
            "f{i}"
        );
    }
    assert_eq!(temp_leftovers(&m.0), Vec::<std::path::PathBuf>::new());
}

#[test]
fn cancel_exits_130_with_nothing_written() {
    let t = tempfile::tempdir().unwrap();
    let Some(m) = mount(t.path(), "cancel_exits_130_with_nothing_written", 2) else {
        return;
    };
    let src = t.path().join("src");
    sources(&src);
    let dst = m.0.join("dst");
    let (tm, exit_file) = start("lowspace-q", t.path(), (&src, &dst), 2.10, 0.0);
    tm.send("q");
    let code = wait_file(&exit_file, Duration::from_secs(30)).expect("copyscope exited");
    assert_eq!(code.trim(), "130", "{}", tm.capture_history());
    assert_eq!(temp_leftovers(&m.0), Vec::<std::path::PathBuf>::new());
    for i in 0..3 {
        assert!(!dst.join(format!("f{i}")).exists(), "f{i} was copied");
    }
}
