//! The frontend's one rule book, `update(&mut State, Event) -> Vec<Effect>`, driven with no
//! terminal: every key's effects, pause (one source: one 'p', one "paused"), cancel from a
//! key, a signal or a hang-up, the overwrite dialog's answers, suspend/resume, the frame
//! clock, and a replay's playing and seeking — on a real ZFS lab recording.

use std::path::Path;

use copyscope::copy::{ConflictAnswer, EngineEvent, SpaceAnswer, Stamped};
use copyscope::frontend::replay::{app_at, replay_state, replay_state_streamed};
use copyscope::frontend::update::{Effect, Event, Signal, State, update};
use copyscope::model::ModelConfig;
use copyscope::present::units::Units;
use copyscope::report::recording::Recording;
use copyscope::ui::theme::Theme;
use copyscope::ui::view::{ConflictView, Dialog, FileSide, RunState, SpaceView, UiOptions};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const REC: &str = "tests/fixtures/recordings/zfs-40mbps-zero.jsonl";

fn opts() -> UiOptions {
    UiOptions {
        theme: Theme::new(false, false),
        units: Units::Decimal,
        compact: false,
        then: None,
    }
}

fn rec() -> Recording {
    Recording::load(Path::new(REC)).expect("fixture")
}

/// A live copy 30 s in, copying.
fn live() -> State {
    let mut a = app_at(&rec(), ModelConfig::default(), opts(), 30_000_000_000);
    a.state = RunState::Copying;
    State::live(a)
}

fn ch(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn key(c: KeyCode) -> Event {
    Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn ctrl(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn tick() -> Event {
    Event::Tick {
        elapsed_ns: 200_000_000,
        cancelling: None,
    }
}

/// The engine events an effect list records.
fn recorded(fx: &[Effect]) -> Vec<EngineEvent> {
    fx.iter()
        .filter_map(|f| match f {
            Effect::Record { event, .. } => Some(event.clone()),
            _ => None,
        })
        .collect()
}

/// An engine event as the engine sends it: stamped with its own time.
fn engine(t_ns: u64, event: EngineEvent) -> Event {
    Event::Engine(Stamped { t_ns, event })
}

fn question() -> Event {
    Event::Conflict(ConflictView {
        destination: "'dst/a b'".into(),
        source: "'src/a b'".into(),
        new: FileSide {
            size: 2_000,
            mtime: (1_796_067_727, 0),
            when: "2026-11-30 20:42:07 CET".into(),
        },
        existing: FileSide {
            size: 1_000,
            mtime: (1_764_531_727, 0),
            when: "2025-11-30 20:42:07 CET".into(),
        },
    })
}

#[test]
fn one_p_press_is_one_paused_event() {
    let mut st = live();
    let fx = update(&mut st, ch('p'));
    assert!(fx.contains(&Effect::Pause));
    assert_eq!(recorded(&fx), vec![EngineEvent::Paused]);
    assert!(
        fx.iter().any(|f| matches!(f, Effect::Events(e)
            if e.iter().filter(|e| e.kind == copyscope::model::EventKind::Paused).count() == 1)),
        "the model made one 'paused' event: {fx:?}"
    );
    assert_eq!(st.app.state, RunState::Paused);
    // An echo of the same pause from the engine is not a second one.
    let now = st.app.now_ns;
    assert!(update(&mut st, engine(now, EngineEvent::Paused)).is_empty());
    let n = st
        .app
        .model
        .events()
        .iter()
        .filter(|e| e.kind == copyscope::model::EventKind::Paused)
        .count();
    assert_eq!(n, 1, "one pause in the model");
    // Space resumes, once.
    let fx = update(&mut st, ch(' '));
    assert!(fx.contains(&Effect::Resume));
    assert_eq!(recorded(&fx), vec![EngineEvent::Resumed]);
    assert_eq!(st.app.state, RunState::Copying);
    let now = st.app.now_ns;
    assert!(update(&mut st, engine(now, EngineEvent::Resumed)).is_empty());
}

#[test]
fn quit_asks_once_then_cancels_and_says_so() {
    for first in [ch('q'), key(KeyCode::Esc), ctrl('c')] {
        let mut st = live();
        let fx = update(&mut st, first.clone());
        assert!(!fx.contains(&Effect::Cancel), "{first:?} only asks");
        assert_eq!(st.app.dialog, Some(Dialog::ConfirmCancel));
        let fx = update(&mut st, first.clone());
        assert_eq!(fx, vec![Effect::Cancel], "{first:?} twice cancels");
        assert!(st.cancelled);
        assert_eq!(st.app.cancelling, Some(0), "'cancelling' is shown at once");
        // The next frame shows the write the kernel still holds, and draws.
        let fx = update(
            &mut st,
            Event::Tick {
                elapsed_ns: 1,
                cancelling: Some(8 << 20),
            },
        );
        assert_eq!(st.app.cancelling, Some(8 << 20));
        assert_eq!(fx, vec![Effect::Draw]);
        // Nothing pauses a cancelled copy, and a second cancel sends nothing more.
        assert!(!update(&mut st, ch('p')).contains(&Effect::Pause));
    }
    // Any other key at the question goes on copying.
    let mut st = live();
    update(&mut st, ch('q'));
    assert!(update(&mut st, ch('x')).is_empty());
    assert!(!st.cancelled);
    assert_eq!(st.app.dialog, None);
}

#[test]
fn signals_and_a_lost_terminal_cancel_a_live_run() {
    for sig in [Signal::Term, Signal::Int] {
        let mut st = live();
        assert_eq!(update(&mut st, Event::Signal(sig)), vec![Effect::Cancel]);
        assert!(!st.hung_up);
    }
    for ev in [Event::Signal(Signal::Hup), Event::TerminalGone] {
        let mut st = live();
        assert_eq!(update(&mut st, ev), vec![Effect::Cancel]);
        assert!(st.hung_up);
        // Nothing is drawn on a terminal that is gone.
        assert!(!update(&mut st, tick()).contains(&Effect::Draw));
    }
    // Cancelled from outside (the signal handler thread): the frame says so.
    let mut st = live();
    update(&mut st, tick());
    let fx = update(
        &mut st,
        Event::Tick {
            elapsed_ns: 1,
            cancelling: Some(0),
        },
    );
    assert!(st.cancelled && fx == vec![Effect::Draw]);
}

#[test]
fn overwrite_dialog_answers_reach_the_engine() {
    for (k, want) in [
        (ch('o'), ConflictAnswer::Overwrite),
        (key(KeyCode::Enter), ConflictAnswer::Overwrite),
        (ch('s'), ConflictAnswer::Skip),
        (ch('a'), ConflictAnswer::OverwriteAll),
        (ch('n'), ConflictAnswer::SkipAll),
        (ch('l'), ConflictAnswer::OverwriteAllOlder),
        (ch('r'), ConflictAnswer::Rename),
    ] {
        let mut st = live();
        assert!(update(&mut st, question()).is_empty());
        assert!(matches!(st.app.dialog, Some(Dialog::Conflict(_))));
        assert_eq!(
            update(&mut st, k.clone()),
            vec![Effect::Answer(want)],
            "{k:?}"
        );
        assert_eq!(st.app.dialog, None);
        assert!(!st.asking && !st.cancelled);
    }
    // Cancel answers the engine and stops the copy; so does a SIGTERM while it asks.
    for k in [
        ch('c'),
        ch('q'),
        key(KeyCode::Esc),
        ctrl('c'),
        Event::Signal(Signal::Term),
    ] {
        let mut st = live();
        update(&mut st, question());
        assert_eq!(
            update(&mut st, k.clone()),
            vec![Effect::Answer(ConflictAnswer::Cancel), Effect::Cancel],
            "{k:?}"
        );
        assert_eq!(st.app.dialog, None);
    }
    // Other keys leave the question open; a question after a cancel is answered at once.
    let mut st = live();
    update(&mut st, question());
    assert!(update(&mut st, ch('t')).is_empty());
    assert!(st.asking);
    let mut st = live();
    update(&mut st, Event::Signal(Signal::Int));
    assert_eq!(
        update(&mut st, question()),
        vec![Effect::Answer(ConflictAnswer::Cancel)]
    );
}

fn low_space() -> Event {
    Event::LowSpace(SpaceView {
        needed: 6_291_456,
        free: 4_194_304,
        freed: 0,
        dest: "'/mnt/small/six'".into(),
        fs_type: "tmpfs".into(),
    })
}

#[test]
fn low_space_dialog_continues_or_cancels() {
    // y and Enter copy anyway: the engine gets the answer, the copy is not cancelled; c, the
    // overwrite dialog's cancel, is not an answer here.
    for k in [ch('y'), key(KeyCode::Enter)] {
        let mut st = live();
        assert!(update(&mut st, low_space()).is_empty());
        update(&mut st, ch('c'));
        assert!(matches!(st.app.dialog, Some(Dialog::LowSpace(_))) && !st.cancelled);
        assert!(matches!(st.app.dialog, Some(Dialog::LowSpace(_))) && st.asking_space);
        // The dialog is drawn at once (a question is urgent), not paced.
        assert_eq!(update(&mut st, tick()), vec![Effect::Draw]);
        assert_eq!(
            update(&mut st, k.clone()),
            vec![Effect::AnswerSpace(SpaceAnswer::Continue)],
            "{k:?}"
        );
        assert_eq!(st.app.dialog, None);
        assert!(!st.asking_space && !st.cancelled);
    }
    // n, q, Esc, Ctrl-C, a signal and a lost terminal answer "cancel" and stop the copy; c
    // (the overwrite dialog's cancel) does nothing here.
    for k in [
        ch('n'),
        ch('q'),
        key(KeyCode::Esc),
        ctrl('c'),
        Event::Signal(Signal::Term),
        Event::Signal(Signal::Hup),
        Event::TerminalGone,
    ] {
        let mut st = live();
        update(&mut st, low_space());
        assert_eq!(
            update(&mut st, k.clone()),
            vec![Effect::AnswerSpace(SpaceAnswer::Cancel), Effect::Cancel],
            "{k:?}"
        );
        assert_eq!(st.app.dialog, None);
        assert!(st.cancelled && !st.asking_space);
    }
    // Other keys (pause, screenshot, view keys) leave the question open and do nothing:
    // the workers are held until it is answered.
    let mut st = live();
    update(&mut st, low_space());
    for k in [ch('p'), ch('s'), ch('t'), ch('o'), ctrl('z')] {
        let fx = update(&mut st, k.clone());
        assert!(
            !fx.iter().any(|f| matches!(
                f,
                Effect::AnswerSpace(_) | Effect::Answer(_) | Effect::Pause | Effect::Cancel
            )),
            "{k:?}: {fx:?}"
        );
        assert!(st.asking_space, "{k:?}");
    }
    assert!(!st.paused);
    // A question after a cancel is answered "cancel" at once, with no dialog.
    let mut st = live();
    update(&mut st, Event::Signal(Signal::Int));
    assert_eq!(
        update(&mut st, low_space()),
        vec![Effect::AnswerSpace(SpaceAnswer::Cancel)]
    );
    assert_eq!(st.app.dialog, None);
}

#[test]
fn view_keys_change_the_view_and_draw_on_the_next_tick() {
    let mut st = live();
    update(&mut st, tick());
    for (k, check) in [
        (
            ch('t'),
            (|s: &State| s.app.view.axis == copyscope::ui::chart::XAxis::Percent)
                as fn(&State) -> bool,
        ),
        (ch('e'), |s| !s.app.view.show_events),
        (ch('k'), |s| !s.app.view.show_kernel),
        (ch('b'), |s| s.app.view.show_budget),
        (ch('+'), |s| s.app.view.zoom == 1),
        (ch('?'), |s| s.app.view.help),
    ] {
        assert!(update(&mut st, k.clone()).is_empty(), "{k:?}");
        assert!(check(&st), "{k:?}");
        assert_eq!(update(&mut st, tick()), vec![Effect::Draw], "{k:?}");
        assert!(update(&mut st, tick()).is_empty(), "no change, no frame");
        if st.app.view.help {
            // Any key closes the help, and does nothing else.
            assert!(update(&mut st, ch('p')).is_empty());
            assert!(!st.app.view.help && !st.paused);
        }
    }
    assert_eq!(update(&mut st, ch('s')), vec![Effect::Screenshot]);
    update(&mut st, Event::Screenshot("wrote a.png, a.svg".into()));
    assert_eq!(
        st.app.status.as_ref().map(|s| s.0.as_str()),
        Some("wrote a.png, a.svg")
    );
    update(&mut st, Event::Resize);
    assert_eq!(update(&mut st, tick()), vec![Effect::Draw]);
}

#[test]
fn suspend_and_continue() {
    let mut st = live();
    assert_eq!(update(&mut st, ctrl('z')), vec![Effect::Suspend]);
    // `kill -CONT` while in the background: not a pixel until `fg`.
    assert!(update(&mut st, Event::Signal(Signal::Cont { foreground: false })).is_empty());
    assert!(update(&mut st, tick()).is_empty());
    assert_eq!(
        update(&mut st, Event::Signal(Signal::Cont { foreground: true })),
        vec![Effect::ResumeTerminal]
    );
    assert_eq!(update(&mut st, tick()), vec![Effect::Draw]);
}

#[test]
fn samples_engine_events_and_the_end() {
    let r = rec();
    let mut st = live();
    let s = r
        .samples
        .iter()
        .find(|s| s.t_ns > 30_000_000_000)
        .expect("a later sample")
        .clone();
    let t = s.t_ns;
    let fx = update(
        &mut st,
        Event::Sample {
            sample: Box::new(s),
            current: None,
            verified: None,
            writers: Vec::new(),
        },
    );
    assert!(fx.iter().all(|f| matches!(f, Effect::Events(_))));
    assert_eq!(st.app.now_ns, t);
    // The engine's flush began 3 ms before that sample was taken (it arrived after it): the
    // recording and the model place it where the engine said, not at the sample's time.
    let fx = update(&mut st, engine(t - 3_000_000, EngineEvent::FlushStarted));
    assert_eq!(recorded(&fx), vec![EngineEvent::FlushStarted]);
    assert!(
        fx.contains(&Effect::Record {
            t_ns: t - 3_000_000,
            event: EngineEvent::FlushStarted
        }),
        "{fx:?}"
    );
    assert!(
        st.app.model.events().iter().any(|e| e.t_ns == t - 3_000_000
            && matches!(e.kind, copyscope::model::EventKind::FlushStarted { .. })),
        "the model's flush event at the engine's time"
    );
    assert_eq!(st.app.state, RunState::Flushing);
    let fx = update(&mut st, Event::Finished(RunState::Done));
    assert_eq!(fx, vec![Effect::Draw, Effect::Quit]);
    assert!(st.quit && st.app.state == RunState::Done);
    // q on a finished screen: nothing to cancel.
    assert_eq!(update(&mut st, ch('q')), vec![Effect::Quit]);
}

#[test]
fn replay_plays_pauses_seeks_and_quits() {
    let r = rec();
    let total = r.duration_ns();
    let mut st = replay_state(&r, ModelConfig::default(), opts(), 1.0);
    assert_eq!(st.replay_position_ns(), Some(0));
    // 10 s of wall time at 1×, then at 10×.
    for _ in 0..50 {
        update(&mut st, tick());
    }
    assert_eq!(st.replay_position_ns(), Some(10_000_000_000));
    update(&mut st, ch('x'));
    assert_eq!(st.app.replay.unwrap().speed, 10.0);
    update(&mut st, tick());
    assert_eq!(st.replay_position_ns(), Some(12_000_000_000));
    // Paused: time passes, the position does not; and p in a replay records nothing.
    let fx = update(&mut st, ch('p'));
    assert!(recorded(&fx).is_empty() && !fx.contains(&Effect::Pause));
    update(&mut st, tick());
    assert_eq!(st.replay_position_ns(), Some(12_000_000_000));
    // → seeks 5 s; ← back rebuilds the model to the same figures a straight play has.
    update(&mut st, key(KeyCode::Right));
    assert_eq!(st.replay_position_ns(), Some(17_000_000_000));
    update(&mut st, key(KeyCode::End));
    assert_eq!(st.replay_position_ns(), Some(total));
    let at_end = st.app.model.stats().peak_bps;
    update(&mut st, key(KeyCode::Home));
    assert_eq!(st.replay_position_ns(), Some(0));
    assert!(st.app.model.events().is_empty());
    for _ in 0..3 {
        update(&mut st, key(KeyCode::Right));
        update(&mut st, key(KeyCode::Left));
        update(&mut st, key(KeyCode::Right));
    }
    assert_eq!(st.replay_position_ns(), Some(15_000_000_000));
    let straight = app_at(&r, ModelConfig::default(), opts(), 15_000_000_000);
    assert_eq!(st.app.model.events(), straight.model.events());
    update(&mut st, key(KeyCode::End));
    assert_eq!(st.app.model.stats().peak_bps, at_end);
    assert!(st.app.replay.unwrap().paused, "seeking keeps it paused");
    // q, Ctrl-C, SIGTERM and a lost terminal end a replay (nothing to cancel).
    for ev in [
        ch('q'),
        ctrl('c'),
        Event::Signal(Signal::Term),
        Event::TerminalGone,
    ] {
        let mut s = st.clone();
        let fx = update(&mut s, ev.clone());
        assert!(
            fx.contains(&Effect::Quit) && !fx.contains(&Effect::Cancel),
            "{ev:?}"
        );
        assert!(s.quit);
    }
}

#[test]
fn frames_answer_keys_at_once_and_pace_what_samples_change() {
    let r = rec();
    let mut st = live();
    assert_eq!(
        update(&mut st, tick()),
        vec![Effect::Draw],
        "the first frame whole"
    );
    assert!(update(&mut st, tick()).is_empty());
    // A sample (the axis may rescale): paced over the next frames.
    let s = r.samples.iter().find(|s| s.t_ns > 30_000_000_000).unwrap();
    update(
        &mut st,
        Event::Sample {
            sample: Box::new(s.clone()),
            current: None,
            verified: None,
            writers: Vec::new(),
        },
    );
    assert_eq!(update(&mut st, tick()), vec![Effect::DrawPaced]);
    // The shell skipped the frame (the terminal still needed time): the next tick draws again.
    update(&mut st, Event::Partial);
    assert_eq!(update(&mut st, tick()), vec![Effect::DrawPaced]);
    assert!(update(&mut st, tick()).is_empty());
    // A key is answered with a whole frame.
    update(&mut st, ch('t'));
    assert_eq!(update(&mut st, tick()), vec![Effect::Draw]);
}

/// The interactive replay reads the file as it plays (bounded memory for a day-long
/// recording): the same keys give the same positions, events and figures as the replay of the
/// whole recording held in memory — playing, seeking forward and back (a re-read from the
/// top), at the end and after a clone of the state.
#[test]
fn a_streamed_replay_plays_and_seeks_like_the_one_in_memory() {
    let r = rec();
    let cfg = ModelConfig::default();
    let (mut streamed, header) =
        replay_state_streamed(Path::new(REC), cfg, opts(), 1.0).expect("stream");
    assert_eq!(header, r.header);
    let mut memory = replay_state(&r, cfg, opts(), 1.0);
    assert_eq!(
        streamed.app.replay.map(|p| p.total_ns),
        Some(r.duration_ns()),
        "the length comes from the file's tail"
    );
    let mut script: Vec<Event> = (0..40).map(|_| tick()).collect();
    script.extend([
        key(KeyCode::Right),
        key(KeyCode::Right),
        key(KeyCode::Left),
        ch('x'),
        tick(),
        key(KeyCode::End),
        key(KeyCode::Home),
        key(KeyCode::Right),
        key(KeyCode::Right),
        key(KeyCode::Left),
        key(KeyCode::End),
        key(KeyCode::Left),
        key(KeyCode::Left),
    ]);
    for (i, ev) in script.into_iter().enumerate() {
        update(&mut streamed, ev.clone());
        update(&mut memory, ev);
        assert_eq!(
            streamed.replay_position_ns(),
            memory.replay_position_ns(),
            "step {i}"
        );
        assert_eq!(
            streamed.app.model.events(),
            memory.app.model.events(),
            "step {i}"
        );
        assert_eq!(
            streamed.app.model.stats(),
            memory.app.model.stats(),
            "step {i}"
        );
    }
    assert!(
        !streamed.app.model.events().is_empty(),
        "the drops were replayed"
    );
    // A cloned state reads on from the same place, on its own handle.
    let mut twin = streamed.clone();
    for st in [&mut twin, &mut streamed, &mut memory] {
        update(st, key(KeyCode::End));
    }
    assert_eq!(twin.app.model.events(), memory.app.model.events());
    assert_eq!(streamed.app.model.stats(), memory.app.model.stats());
}

/// A line damaged in the middle: the replay plays up to it and says where it stopped (the
/// whole-file loader refuses such a file).
#[test]
fn a_streamed_replay_stops_at_a_damaged_line_and_says_so() {
    let text = std::fs::read_to_string(REC).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mid = lines.len() / 2;
    let damaged: String = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == mid {
                "{\"type\":\"sample\",\"t_ns\":oops\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.jsonl");
    std::fs::write(&path, damaged).unwrap();
    assert!(Recording::load(&path).is_err());
    let (mut st, _) =
        replay_state_streamed(&path, ModelConfig::default(), opts(), 1.0).expect("opens");
    update(&mut st, key(KeyCode::End));
    let (msg, _) = st.app.status.clone().expect("a status line");
    assert!(
        msg.starts_with(&format!("the recording ends early: line {}: ", mid + 1)),
        "{msg}"
    );
    assert!(
        st.app
            .model
            .latest()
            .is_some_and(|s| s.t_ns < r_total(&text))
    );
}

/// The time of the last sample line of a recording's text.
fn r_total(text: &str) -> u64 {
    Recording::parse(text).expect("fixture").duration_ns()
}
