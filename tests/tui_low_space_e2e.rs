//! The free-space question in a real terminal (tmux) onto a 4 MiB tmpfs: once the scan is
//! complete the dialog shows what the copy needs against what is free; `y` copies anyway (the
//! files that fit are copied, the first that does not stops the copy with "No space left on
//! device", exit 2, its temporary removed); `q` cancels before anything is written (exit 130,
//! no temporaries).

mod tmux;
mod util;

use std::path::Path;
use std::time::Duration;

use tmux::{Tmux, have, wait_file};
use util::{Mount, bin, data, is_root, temp_leftovers, write};

/// Three 2 MiB files: 6.29 MB for a 4.19 MB tmpfs.
fn sources(dir: &Path) {
    for i in 0..3 {
        write(&dir.join(format!("f{i}")), &data(2 << 20, 40 + i));
    }
}

/// Starts the TUI copying `src` into the tmpfs and waits for the dialog; returns the session
/// and the file its exit code goes to.
fn start(tag: &str, t: &Path, src: &Path, dst: &Path) -> (Tmux, std::path::PathBuf) {
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
    assert!(row("needed").contains("6.29 MB"), "{screen}");
    assert!(
        row("free").contains("4.19 MB") && row("free").contains("tmpfs"),
        "{screen}"
    );
    assert!(row("short").contains("2.10 MB"), "{screen}");
    assert!(screen.contains(&dst.display().to_string()), "{screen}");
    (tm, exit_file)
}

fn mount(t: &Path, test: &str) -> Option<Mount> {
    if !is_root() {
        eprintln!("SKIPPED {test}: mounting a small tmpfs needs root (CI runs as root)");
        return None;
    }
    if !have("tmux") {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    let m = Mount::tmpfs(&t.join("small"), "size=4m");
    if m.is_none() {
        eprintln!("SKIPPED {test}: cannot mount a tmpfs here");
    }
    m
}

#[test]
fn continue_copies_what_fits_then_stops_on_enospc() {
    let t = tempfile::tempdir().unwrap();
    let Some(m) = mount(t.path(), "continue_copies_what_fits_then_stops_on_enospc") else {
        return;
    };
    let src = t.path().join("src");
    sources(&src);
    let dst = m.0.join("dst");
    let (tm, exit_file) = start("lowspace-c", t.path(), &src, &dst);
    // While the question is open the workers wait: nothing is written yet.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !dst.exists()
            || util::snapshot(&dst)
                .values()
                .all(|e| e.kind != "file" || e.size == 0),
        "written before the answer"
    );
    tm.send("y");
    let code = wait_file(&exit_file, Duration::from_secs(60)).expect("copyscope exited");
    let history = tm.capture_history();
    assert_eq!(code.trim(), "2", "disk full is fatal (exit 2):\n{history}");
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
    let Some(m) = mount(t.path(), "cancel_exits_130_with_nothing_written") else {
        return;
    };
    let src = t.path().join("src");
    sources(&src);
    let dst = m.0.join("dst");
    let (tm, exit_file) = start("lowspace-q", t.path(), &src, &dst);
    tm.send("q");
    let code = wait_file(&exit_file, Duration::from_secs(30)).expect("copyscope exited");
    assert_eq!(code.trim(), "130", "{}", tm.capture_history());
    assert_eq!(temp_leftovers(&m.0), Vec::<std::path::PathBuf>::new());
    for i in 0..3 {
        assert!(!dst.join(format!("f{i}")).exists(), "f{i} was copied");
    }
}
