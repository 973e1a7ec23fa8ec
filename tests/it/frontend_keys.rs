//! The frontend's rules without a terminal: every key, the cancel and overwrite dialogs,
//! pause/resume from the engine, and replay seeking, driven through `App` (frontend/state.rs)
//! exactly as the live and replay loops drive it.

use std::path::Path;

use copyscope::copy::{ConflictAnswer, EngineEvent};
use copyscope::frontend::replay::app_at;
use copyscope::frontend::state::{Action, App};
use copyscope::model::ModelConfig;
use copyscope::present::units::Units;
use copyscope::report::recording::Recording;
use copyscope::ui::chart::XAxis;
use copyscope::ui::theme::Theme;
use copyscope::ui::view::{ConflictView, Dialog, FileSide, ReplayStatus, RunState, UiOptions};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

fn opts() -> UiOptions {
    UiOptions {
        theme: Theme::new(false, false),
        units: Units::Decimal,
        compact: false,
        then: None,
    }
}

/// A live copy 30 s in (real ZFS lab recording), copying.
fn live() -> App {
    let rec = Recording::load(Path::new("tests/fixtures/recordings/zfs-40mbps-zero.jsonl"))
        .expect("fixture");
    let mut a = app_at(&rec, ModelConfig::default(), opts(), 30_000_000_000);
    a.state = RunState::Copying;
    a
}

fn replay() -> App {
    let mut a = live();
    a.state = RunState::Replay;
    a.replay = Some(ReplayStatus {
        speed: 1.0,
        paused: false,
        total_ns: 80_000_000_000,
    });
    a
}

fn conflict() -> Dialog {
    let side = FileSide {
        size: 3,
        mtime: (1_000_000_000, 0),
        when: "2001-09-09 03:46:40 CEST".into(),
    };
    Dialog::Conflict(ConflictView {
        destination: "x".into(),
        source: "y".into(),
        new: side.clone(),
        existing: side,
    })
}

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

#[test]
fn first_quit_asks_second_cancels() {
    for first in [
        ch('q'),
        key(KeyCode::Esc),
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
    ] {
        let mut a = live();
        assert_eq!(a.handle_key(first), Action::Redraw);
        assert_eq!(a.dialog, Some(Dialog::ConfirmCancel));
        assert_eq!(a.handle_key(ch('q')), Action::Cancel);
        assert_eq!(a.dialog, None);
    }
    // y / Enter confirm; any other key keeps copying.
    let mut a = live();
    a.handle_key(ch('q'));
    assert_eq!(a.handle_key(ch('y')), Action::Cancel);
    let mut a = live();
    a.handle_key(ch('q'));
    assert_eq!(a.handle_key(key(KeyCode::Enter)), Action::Cancel);
    let mut a = live();
    a.handle_key(ch('q'));
    assert_eq!(a.handle_key(ch('n')), Action::Redraw);
    assert_eq!(a.dialog, None);
}

#[test]
fn quit_leaves_at_once_when_finished_or_replaying() {
    let mut a = live();
    a.state = RunState::Done;
    assert_eq!(a.handle_key(ch('q')), Action::Quit);
    let mut r = replay();
    assert_eq!(r.handle_key(ch('q')), Action::Quit);
}

#[test]
fn overwrite_dialog_answers() {
    for (k, want) in [
        (ch('o'), ConflictAnswer::Overwrite),
        (key(KeyCode::Enter), ConflictAnswer::Overwrite),
        (ch('s'), ConflictAnswer::Skip),
        (ch('a'), ConflictAnswer::OverwriteAll),
        (ch('n'), ConflictAnswer::SkipAll),
        (ch('S'), ConflictAnswer::SkipAll),
        (ch('l'), ConflictAnswer::OverwriteAllOlder),
        (ch('r'), ConflictAnswer::Rename),
        (ch('c'), ConflictAnswer::Cancel),
        (key(KeyCode::Esc), ConflictAnswer::Cancel),
        (ch('q'), ConflictAnswer::Cancel),
        (
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            ConflictAnswer::Cancel,
        ),
    ] {
        let mut a = live();
        a.dialog = Some(conflict());
        assert_eq!(a.handle_key(k), Action::Answer(want), "{k:?}");
        assert_eq!(a.dialog, None);
    }
    // Other keys do nothing while the question is open.
    let mut a = live();
    a.dialog = Some(conflict());
    assert_eq!(a.handle_key(ch('t')), Action::None);
    assert!(a.dialog.is_some());
}

#[test]
fn view_keys() {
    let mut a = live();
    assert_eq!(a.handle_key(ch('t')), Action::Redraw);
    assert_eq!(a.view.axis, XAxis::Percent);
    a.handle_key(ch('t'));
    assert_eq!(a.view.axis, XAxis::Time);
    assert_eq!(a.handle_key(ch('+')), Action::Redraw);
    assert_eq!(a.view.zoom, 1);
    a.handle_key(ch('='));
    assert_eq!(a.view.zoom, 2);
    a.handle_key(key(KeyCode::Left));
    assert!(a.view.scroll_ns > 0, "← scrolls back when zoomed");
    let back = a.view.scroll_ns;
    a.handle_key(key(KeyCode::Right));
    assert!(a.view.scroll_ns < back);
    a.handle_key(ch('-'));
    a.handle_key(ch('_'));
    assert_eq!(
        (a.view.zoom, a.view.scroll_ns),
        (0, 0),
        "unzoomed: scroll resets"
    );
    assert!(a.view.show_events);
    a.handle_key(ch('e'));
    assert!(!a.view.show_events);
    assert!(a.view.show_kernel);
    a.handle_key(ch('k'));
    assert!(!a.view.show_kernel);
    assert_eq!(a.handle_key(ch('s')), Action::Screenshot);
    assert_eq!(a.handle_key(ch('z')), Action::None);
    // Releases are ignored.
    let mut release = ch('t');
    release.kind = KeyEventKind::Release;
    assert_eq!(a.handle_key(release), Action::None);
}

#[test]
fn help_opens_and_any_key_closes_it() {
    for open in [ch('?'), ch('h')] {
        let mut a = live();
        a.handle_key(open);
        assert!(a.view.help);
        assert_eq!(a.handle_key(ch('x')), Action::Redraw);
        assert!(!a.view.help);
        // q closes help instead of asking to cancel.
        a.handle_key(ch('?'));
        assert_eq!(a.handle_key(ch('q')), Action::Redraw);
        assert!(!a.view.help);
        assert_eq!(a.dialog, None);
    }
}

#[test]
fn pause_key_and_engine_events() {
    let mut a = live();
    assert_eq!(a.handle_key(ch('p')), Action::TogglePause);
    assert_eq!(a.handle_key(ch(' ')), Action::TogglePause);
    // The state follows the engine's events (the one source of pause), not the key.
    assert_eq!(a.state, RunState::Copying);
    let t = a.now_ns;
    a.on_engine(t, &EngineEvent::Paused);
    assert_eq!(a.state, RunState::Paused);
    let evs = a.on_engine(t + 1, &EngineEvent::Resumed);
    assert_eq!(a.state, RunState::Copying);
    assert!(
        evs.iter()
            .any(|e| matches!(e.kind, copyscope::model::EventKind::Resumed))
    );
    // Finished: p does nothing.
    a.state = RunState::Done;
    assert_eq!(a.handle_key(ch('p')), Action::None);
}

#[test]
fn engine_events_drive_the_run_state() {
    let mut a = live();
    let t = a.now_ns;
    a.on_engine(t, &EngineEvent::FlushStarted);
    assert_eq!(a.state, RunState::Flushing);
    a.on_engine(t, &EngineEvent::FlushDone);
    assert_eq!(a.state, RunState::Done);
    let mut b = live();
    b.on_engine(
        t,
        &EngineEvent::Fatal {
            error: "disk full".into(),
        },
    );
    assert_eq!(b.state, RunState::Failed);
}

#[test]
fn replay_seek_and_speed_keys() {
    let mut r = replay();
    assert_eq!(
        r.handle_key(key(KeyCode::Left)),
        Action::Seek(-5_000_000_000)
    );
    assert_eq!(
        r.handle_key(key(KeyCode::Right)),
        Action::Seek(5_000_000_000)
    );
    assert_eq!(r.handle_key(key(KeyCode::Home)), Action::SeekStart);
    assert_eq!(r.handle_key(key(KeyCode::End)), Action::SeekEnd);
    assert_eq!(r.handle_key(ch('x')), Action::CycleSpeed);
    assert_eq!(r.handle_key(ch('p')), Action::TogglePause);
    // Zoomed in, ←/→ scroll the view instead of seeking.
    r.handle_key(ch('+'));
    assert_eq!(r.handle_key(key(KeyCode::Left)), Action::Redraw);
    // A live copy has no seeking.
    let mut a = live();
    assert_eq!(a.handle_key(key(KeyCode::Home)), Action::None);
    assert_eq!(a.handle_key(ch('x')), Action::None);
}

/// Keys with Ctrl or Alt are not the plain keys: Ctrl-Space does not pause, Ctrl-P does not
/// resume, Alt-q does not quit; Ctrl-C still cancels.
#[test]
fn modified_keys_are_not_the_plain_keys() {
    let mut a = live();
    let with = |c: KeyCode, m: KeyModifiers| KeyEvent::new(c, m);
    for (code, m) in [
        (KeyCode::Char(' '), KeyModifiers::CONTROL),
        (KeyCode::Char('p'), KeyModifiers::CONTROL),
        (KeyCode::Char('q'), KeyModifiers::ALT),
        (KeyCode::Char('s'), KeyModifiers::CONTROL),
    ] {
        assert_eq!(a.handle_key(with(code, m)), Action::None, "{code:?} {m:?}");
    }
    assert_ne!(
        a.handle_key(with(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        Action::None
    );
}

/// The screen of a replayed watch at `t_ns` (the lab's Samba watch onto ZFS), 100×32.
fn replayed_watch_screen(t_ns: u64) -> String {
    let rec = Recording::load(Path::new("assets/zfs-watch-samba.jsonl")).expect("recording");
    assert!(rec.header.watch.is_some(), "a watch's recording");
    let app = app_at(&rec, ModelConfig::default(), opts(), t_ns);
    let mut term =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 32)).expect("terminal");
    term.draw(|f| copyscope::ui::render(f, &app.view()))
        .expect("draw");
    term.backend().to_string()
}

#[test]
fn a_replayed_watch_is_drawn_as_the_watch_was_not_as_a_copy_of_unknown_size() {
    let s = replayed_watch_screen(20_000_000_000);
    assert!(s.contains("intake "), "the watch's intake row:\n{s}");
    assert!(!s.contains("estimating"), "no copy progress bar:\n{s}");
    assert!(!s.contains("files 0 / 0"), "no file counts:\n{s}");
}
