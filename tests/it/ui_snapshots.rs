//! Whole-screen snapshots (ratatui TestBackend + insta) of the main states at 80×24 and
//! 120×40, built from a real recording (a copy onto ZFS in the lab VM with txg stalls), plus a
//! no-panic sweep over terminal sizes from 1×1 to 300×100.

use std::path::Path;

use copyscope::copy::EngineEvent;
use copyscope::frontend::replay::app_at;
use copyscope::frontend::state::App;
use copyscope::model::ModelConfig;
use copyscope::present::units::Units;
use copyscope::report::recording::Recording;
use copyscope::ui::theme::Theme;
use copyscope::ui::view::{
    ConflictView, Dialog, FileProgress, FileSide, RunState, SpaceView, UiOptions,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn recording() -> Recording {
    Recording::load(Path::new("tests/fixtures/recordings/zfs-40mbps-zero.jsonl"))
        .expect("fixture loads")
}

fn opts(ascii: bool) -> UiOptions {
    UiOptions {
        theme: Theme::new(true, ascii),
        units: Units::Decimal,
        compact: false,
        then: None,
    }
}

fn app(t_s: f64) -> App {
    let mut a = app_at(
        &recording(),
        ModelConfig::default(),
        opts(false),
        (t_s * 1e9) as u64,
    );
    if a.state == RunState::Scanning && a.progress.scan_done {
        a.state = RunState::Copying;
    }
    a.current = Some(FileProgress {
        path: "big".into(),
        size: 3_145_728_000,
        done: a.progress.bytes_copied,
    });
    a
}

fn screen(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| copyscope::ui::render(f, &app.view()))
        .unwrap();
    term.backend().to_string()
}

macro_rules! snap {
    ($name:expr, $app:expr) => {
        insta::assert_snapshot!(format!("{}_80x24", $name), screen(&$app, 80, 24));
        insta::assert_snapshot!(format!("{}_120x40", $name), screen(&$app, 120, 40));
    };
}

#[test]
fn scanning() {
    let mut a = app(0.3);
    a.state = RunState::Scanning;
    a.progress.scan_done = false;
    snap!("scanning", a);
}

#[test]
fn copying_with_drops() {
    let a = app(30.0);
    snap!("copying_with_drops", a);
}

#[test]
fn paused() {
    let mut a = app(20.0);
    a.on_engine(20_000_000_000, &EngineEvent::Paused);
    assert_eq!(a.state, RunState::Paused);
    snap!("paused", a);
}

#[test]
fn overwrite_dialog() {
    let mut a = app(12.0);
    a.dialog = Some(Dialog::Conflict(ConflictView {
        destination: "/tank/big".into(),
        source: "/home/ann/iso/big".into(),
        new: FileSide {
            size: 4_294_967_296,
            mtime: (1_796_067_727, 0),
            when: "2026-11-30 20:42:07 CET".into(),
        },
        existing: FileSide {
            size: 4_294_967_295,
            mtime: (1_764_531_727, 0),
            when: "2025-11-30 20:42:07 CET".into(),
        },
    }));
    snap!("overwrite_dialog", a);
}

/// The free-space question once the scan is complete: needed (after what an overwrite frees)
/// against free, the shortfall, and the two answers.
#[test]
fn low_space_dialog() {
    let mut a = app(1.0);
    a.state = RunState::Copying;
    a.dialog = Some(Dialog::LowSpace(SpaceView {
        needed: 6_291_456,
        free: 4_194_304,
        freed: 1_048_576,
        dest: "'/mnt/small/six'".into(),
        fs_type: "tmpfs".into(),
    }));
    snap!("low_space_dialog", a);
}

#[test]
fn cancel_confirmation() {
    let mut a = app(12.0);
    a.dialog = Some(Dialog::ConfirmCancel);
    snap!("cancel_confirmation", a);
}

#[test]
fn flushing() {
    let a = app(77.0);
    assert_eq!(
        a.state,
        RunState::Flushing,
        "the recording has a flush at its end"
    );
    snap!("flushing", a);
}

#[test]
fn done() {
    let mut a = app(200.0);
    a.state = RunState::Done;
    a.current = None;
    snap!("done", a);
}

#[test]
fn cancelled() {
    let mut a = app(40.0);
    a.state = RunState::Cancelled;
    a.current = None;
    snap!("cancelled", a);
}

/// Issue 11: the second q says at once what the cancel waits for — the write the kernel still
/// holds, with its size — and then that the unfinished file is being removed.
#[test]
fn cancelling_says_what_it_waits_for() {
    use copyscope::frontend::update::{Event, State, update};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let q = || Event::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE));
    let mut st = State::live(app(30.0));
    st.app.state = RunState::Copying;
    update(&mut st, q());
    update(&mut st, q());
    let s = screen(&st.app, 120, 40);
    assert!(
        s.contains("cancelling: removing the unfinished file"),
        "shown at once:\n{s}"
    );
    // The shell's next tick reads the write in progress (8 MiB held in the kernel).
    update(
        &mut st,
        Event::Tick {
            elapsed_ns: 200_000_000,
            cancelling: Some(8 << 20),
        },
    );
    let s = screen(&st.app, 120, 40);
    assert!(
        s.contains("cancelling: waiting for the kernel to take the current write (8.39 MB)"),
        "{s}"
    );
}

#[test]
fn help_overlay_and_ascii() {
    let mut a = app_at(
        &recording(),
        ModelConfig::default(),
        opts(true),
        30_000_000_000,
    );
    a.state = RunState::Copying;
    let s = screen(&a, 120, 40);
    assert!(s.is_ascii(), "--ascii draws with ASCII only:\n{s}");
    insta::assert_snapshot!("ascii_120x40", s);
    a.view.help = true;
    insta::assert_snapshot!("help_120x40", screen(&a, 120, 40));
}

#[test]
fn compact_and_percent_axis() {
    let mut a = app(30.0);
    a.opts.compact = true;
    insta::assert_snapshot!("compact_80x24", screen(&a, 80, 24));
    a.opts.compact = false;
    a.view.axis = copyscope::ui::chart::XAxis::Percent;
    insta::assert_snapshot!("percent_axis_80x24", screen(&a, 80, 24));
}

#[test]
fn never_panics_at_any_size() {
    let mut a = app(30.0);
    for (w, h) in [
        (1, 1),
        (2, 1),
        (1, 2),
        (5, 3),
        (10, 5),
        (20, 6),
        (29, 7),
        (30, 7),
        (40, 10),
        (60, 17),
        (80, 18),
        (80, 24),
        (120, 40),
        (200, 60),
        (300, 100),
        (300, 1),
        (1, 100),
    ] {
        for help in [false, true] {
            a.view.help = help;
            a.dialog = help.then_some(Dialog::Conflict(ConflictView {
                destination: "x".repeat(300),
                source: "y".repeat(300),
                new: FileSide {
                    size: 1,
                    mtime: (0, 0),
                    when: "1970-01-01 01:00:00 CET".into(),
                },
                existing: FileSide {
                    size: u64::MAX,
                    mtime: (i64::MAX / 2, 0),
                    when: "292277026596-12-04 16:30:07 UTC".into(),
                },
            }));
            let s = screen(&a, w, h);
            assert!(!s.is_empty());
        }
    }
    // Every zoom level and scroll position, both axes.
    a.view.help = false;
    a.dialog = None;
    for zoom in 0..=16 {
        a.view.zoom = zoom;
        for scroll in [0, 1_000_000_000, u64::MAX / 2] {
            a.view.scroll_ns = scroll.min(a.now_ns);
            screen(&a, 80, 24);
        }
    }
}

/// `demo --replay` goes on to the live demo when its replay is closed: the footer says so
/// instead of "q quit"; a plain replay says "q quit".
#[test]
fn q_says_where_it_leads() {
    let mut a = app(30.0);
    assert!(screen(&a, 120, 40).contains(" q quit "));
    a.opts.then = Some("on to the live demo");
    let s = screen(&a, 120, 40);
    assert!(s.contains(" q on to the live demo "), "{s}");
    assert!(!s.contains("q quit"), "{s}");
}

/// A watch following several writers (a parallel copy's workers): the writers panel under
/// the progress rows, the most bytes first, every name quoted for the terminal.
#[test]
fn watch_with_writers() {
    use copyscope::ui::view::WriterView;
    let mut a = app(30.0);
    a.state = RunState::Watching;
    a.watch = true;
    let w = |pid, comm: &str, bytes, file: Option<&str>, alive| WriterView {
        pid,
        comm: comm.into(),
        bytes,
        file: file.map(|f| FileProgress {
            path: f.into(),
            size: bytes,
            done: bytes,
        }),
        alive,
    };
    a.writers = vec![
        w(
            4242,
            "rsync",
            812_000_000,
            Some("/tank/w1/.big.iso.Xy1Ab2"),
            true,
        ),
        w(
            4243,
            "rsync",
            790_000_000,
            Some("/tank/w2/photos/IMG 0001.jpg"),
            true,
        ),
        w(
            4250,
            "evil\u{1b}[2J",
            12_000_000,
            Some("/tank/w3/a\nb"),
            false,
        ),
        w(4251, "cp", 0, None, true),
    ];
    snap!("watch_with_writers", a);
}

/// `copyscope pipe`: no files; with a size the gauge, percent and ETA, without one what
/// passed.
#[test]
fn pipe_with_and_without_a_size() {
    let mut a = app(30.0);
    a.pipe = true;
    a.current = None;
    a.header.source = "stdin (pipe)".into();
    a.header.dest = "stdout (pipe)".into();
    snap!("pipe_with_size", a);
    a.progress.scan_done = false;
    snap!("pipe_without_size", a);
}
