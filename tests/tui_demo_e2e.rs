//! End-to-end: `copyscope demo` in tmux at 100×32 shows its point — a real drop, named by the
//! model (busy threads take every CPU while the copy runs at nice 19: the copy's threads wait
//! on the run queue), within the first 20 s of the copy, said on screen as what it is; then
//! the summary with the drop, and one picture set in $TMPDIR/copyscope-demo.

mod tmux;

use std::time::Duration;

use tmux::{Tmux, have};

const BIN: &str = env!("CARGO_BIN_EXE_copyscope");

#[test]
fn the_demo_shows_a_drop_and_its_cause() {
    if !have("tmux") {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!("{BIN} demo --size 200; sleep 60");
    let t = Tmux::start(
        "demo",
        100,
        32,
        &cmd,
        &[
            ("TERM", "xterm-256color"),
            ("LANG", "C.UTF-8"),
            ("TMPDIR", tmp.path().to_str().unwrap()),
        ],
    );
    let s = t.wait_for("the live screen", Duration::from_secs(60), |s| {
        s.contains("copying")
    });
    assert!(
        s.contains("busy threads take every CPU"),
        "the drop is said before it comes:\n{s}"
    );
    let s = t.wait_for("the drop and its cause", Duration::from_secs(40), |s| {
        s.contains("waiting for a CPU")
    });
    let event = s
        .lines()
        .find(|l| l.contains("waiting for a CPU"))
        .unwrap()
        .to_string();
    // Its time: within the copy's first 20 s.
    let at: u32 = event
        .trim_start_matches(['│', ' '])
        .get(..2)
        .and_then(|m| m.parse::<u32>().ok())
        .map(|m| m * 60)
        .unwrap_or(99)
        + event
            .trim_start_matches(['│', ' '])
            .get(3..5)
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(99);
    assert!(at < 20, "the drop came at {at} s: {event}");
    assert!(event.contains("drop"), "{event}");
    let end = t.wait_for("the summary", Duration::from_secs(90), |s| {
        s.contains("copyscope demo: removing")
    });
    let history = t.capture_history();
    assert!(
        history.contains("waiting for a CPU") && history.contains("1 drop"),
        "the summary names the drop:\n{history}\n{end}"
    );
    // The budget agrees with the drop: the 4 s the copy waited for a CPU are CPU wait, not
    // the rate limit the copy slept in before each wait.
    let cpu_wait: u32 = history
        .split("CPU wait ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        cpu_wait >= 5,
        "CPU wait {cpu_wait} % in the budget:\n{history}"
    );
    let pictures: Vec<_> = std::fs::read_dir(tmp.path().join("copyscope-demo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(pictures.len(), 4, "one set: {pictures:?}");
}
