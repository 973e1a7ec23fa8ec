//! One key table (present/keys.rs) for the handler, the `?` help screen and the man page:
//! every key a row names is bound in it, every binding does in the handler what the table
//! says, the handler acts on no key the table leaves out, and the help screen and the man
//! page print every row.

use std::path::Path;

use copyscope::copy::{ConflictAnswer, SpaceAnswer};
use copyscope::frontend::replay::app_at;
use copyscope::frontend::state::{Action, App};
use copyscope::frontend::update::{Effect, Event, State, update};
use copyscope::model::ModelConfig;
use copyscope::present::keys::{Does, FileExists, KEYS, Mode, Press};
use copyscope::present::units::Units;
use copyscope::report::recording::Recording;
use copyscope::ui::chart::XAxis;
use copyscope::ui::theme::Theme;
use copyscope::ui::view::{
    ConflictView, Dialog, FileSide, ReplayStatus, RunState, SpaceView, UiOptions,
};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn opts() -> UiOptions {
    UiOptions {
        theme: Theme::new(false, false),
        units: Units::Decimal,
        compact: false,
        then: None,
    }
}

thread_local! {
    /// A live copy 30 s in (a real recording), loaded once per test thread.
    static LIVE: App = {
        let rec = Recording::load(Path::new("tests/fixtures/recordings/zfs-40mbps-zero.jsonl"))
            .expect("fixture");
        app_at(&rec, ModelConfig::default(), opts(), 30_000_000_000)
    };
}

/// A live copy 30 s in, copying; a replay of it when `replay`.
fn app(replay: bool) -> App {
    let mut a = LIVE.with(App::clone);
    a.state = RunState::Copying;
    if replay {
        a.state = RunState::Replay;
        a.replay = Some(ReplayStatus {
            speed: 1.0,
            paused: false,
            total_ns: 80_000_000_000,
        });
    }
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

fn low_space() -> Dialog {
    Dialog::LowSpace(SpaceView {
        needed: 10,
        free: 1,
        freed: 0,
        dest: "d".into(),
        fs_type: "ext4".into(),
    })
}

/// The terminal's event for a press of the table.
fn event(p: Press) -> KeyEvent {
    let (code, mods) = match p {
        Press::Char(c) => (KeyCode::Char(c), KeyModifiers::NONE),
        Press::Ctrl(c) => (KeyCode::Char(c), KeyModifiers::CONTROL),
        Press::Esc => (KeyCode::Esc, KeyModifiers::NONE),
        Press::Enter => (KeyCode::Enter, KeyModifiers::NONE),
        Press::Left => (KeyCode::Left, KeyModifiers::NONE),
        Press::Right => (KeyCode::Right, KeyModifiers::NONE),
        Press::Home => (KeyCode::Home, KeyModifiers::NONE),
        Press::End => (KeyCode::End, KeyModifiers::NONE),
        Press::Other => (KeyCode::F(5), KeyModifiers::NONE),
    };
    KeyEvent::new(code, mods)
}

fn answer(a: FileExists) -> ConflictAnswer {
    match a {
        FileExists::Overwrite => ConflictAnswer::Overwrite,
        FileExists::Skip => ConflictAnswer::Skip,
        FileExists::Rename => ConflictAnswer::Rename,
        FileExists::OverwriteAll => ConflictAnswer::OverwriteAll,
        FileExists::SkipAll => ConflictAnswer::SkipAll,
        FileExists::OverwriteAllOlder => ConflictAnswer::OverwriteAllOlder,
        FileExists::Cancel => ConflictAnswer::Cancel,
    }
}

/// Presses `p` where `does` is meant (a dialog for an answer, the screen otherwise) and
/// checks the handler did it; `Err` says what happened instead.
fn check(p: Press, does: Does, replay: bool) -> Result<(), String> {
    let mut a = app(replay);
    match does {
        Does::Exists(_) => a.dialog = Some(conflict()),
        Does::Yes | Does::No => a.dialog = Some(low_space()),
        // Left and Right scroll a zoomed live chart.
        Does::Back | Does::Forward | Does::ZoomOut if !replay => a.view.zoom = 1,
        _ => {}
    }
    let before = a.view;
    if does == Does::Suspend {
        let mut st = State::live(a);
        let fx = update(&mut st, Event::Key(event(p)));
        return fx
            .contains(&Effect::Suspend)
            .then_some(())
            .ok_or(format!("{fx:?}"));
    }
    let action = a.handle_key(event(p));
    let ok = match does {
        Does::Quit if replay => action == Action::Quit,
        Does::Quit => action == Action::Redraw && a.dialog == Some(Dialog::ConfirmCancel),
        Does::Pause => action == Action::TogglePause,
        Does::Speed => action == Action::CycleSpeed,
        Does::Back if replay => action == Action::Seek(-5_000_000_000),
        Does::Forward if replay => action == Action::Seek(5_000_000_000),
        Does::Back => action == Action::Redraw && a.view.scroll_ns > before.scroll_ns,
        Does::Forward => action == Action::Redraw,
        Does::Start => action == Action::SeekStart,
        Does::End => action == Action::SeekEnd,
        Does::Screenshot => action == Action::Screenshot,
        Does::Axis => a.view.axis != before.axis && before.axis == XAxis::Time,
        Does::ZoomIn => a.view.zoom == before.zoom + 1,
        Does::ZoomOut => a.view.zoom + 1 == before.zoom || (replay && before.zoom == 0),
        Does::EventsPanel => a.view.show_events != before.show_events,
        Does::KernelPanel => a.view.show_kernel != before.show_kernel,
        Does::Budget => a.view.show_budget != before.show_budget,
        Does::Help => a.view.help,
        Does::Exists(x) => action == Action::Answer(answer(x)),
        Does::Yes => action == Action::AnswerSpace(SpaceAnswer::Continue),
        Does::No => action == Action::AnswerSpace(SpaceAnswer::Cancel),
        Does::Suspend => unreachable!(),
    };
    ok.then_some(()).ok_or(format!("{action:?}"))
}

#[test]
fn every_binding_does_what_the_table_says() {
    for k in KEYS {
        for replay in [false, true].into_iter().filter(|r| k.applies(*r)) {
            for &(p, does) in k.binds {
                if let Err(got) = check(p, does, replay) {
                    panic!("{p:?} in {k:?} (replay {replay}): the handler did {got}");
                }
            }
        }
    }
}

#[test]
fn every_key_a_row_names_is_one_of_its_bindings() {
    for k in KEYS {
        for name in k.keys.split_whitespace().filter(|n| *n != "/") {
            let p = Press::named(name).unwrap_or_else(|| panic!("{name:?} in {k:?}"));
            assert!(k.binds.iter().any(|(b, _)| *b == p), "{name} in {k:?}");
        }
    }
}

/// Every press the terminal can send, as far as the table could name it.
fn every_press() -> Vec<Press> {
    let mut v: Vec<Press> = (' '..='~').map(Press::Char).collect();
    v.extend(('a'..='z').map(Press::Ctrl));
    v.extend([
        Press::Esc,
        Press::Enter,
        Press::Left,
        Press::Right,
        Press::Home,
        Press::End,
        Press::Other,
    ]);
    v
}

/// No key acts that the table leaves out, on the screen or in a dialog.
#[test]
fn the_handler_acts_on_no_key_the_table_leaves_out() {
    let bound = |p: Press, replay: bool| {
        KEYS.iter()
            .filter(|k| k.applies(replay))
            .any(|k| k.binds.iter().any(|(b, _)| *b == p))
    };
    for replay in [false, true] {
        for dialog in [None, Some(conflict()), Some(low_space())] {
            if replay && dialog.is_some() {
                continue;
            }
            for p in every_press() {
                let mut a = app(replay);
                a.dialog = dialog.clone();
                let action = a.handle_key(event(p));
                assert!(
                    action == Action::None || bound(p, replay),
                    "{p:?} (replay {replay}, dialog {dialog:?}) does {action:?} but is in no row"
                );
            }
        }
    }
}

fn help_screen(replay: bool) -> String {
    let mut a = app(replay);
    a.view.help = true;
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    term.draw(|f| copyscope::ui::render(f, &a.view()))
        .expect("draw");
    term.backend().to_string()
}

#[test]
fn the_help_screen_and_the_man_page_print_every_row() {
    let mut man = Vec::new();
    copyscope::frontend::man::render(&mut man).expect("man");
    let man = String::from_utf8(man).expect("utf-8").replace("\\-", "-");
    for replay in [false, true] {
        let help = help_screen(replay);
        for k in KEYS.iter().filter(|k| k.applies(replay)) {
            let row = help
                .lines()
                .find(|l| l.contains(k.what))
                .unwrap_or_else(|| panic!("help (replay {replay}) lacks {k:?}:\n{help}"));
            assert!(row.contains(k.keys), "{k:?}: {row}");
        }
    }
    for k in KEYS {
        let mode = match k.mode {
            Mode::Live => " (live)",
            Mode::Replay => " (replay)",
            Mode::Both => "",
        };
        assert!(
            man.contains(&format!("{}{mode}", k.keys)) && man.contains(k.what),
            "the man page lacks {k:?}"
        );
    }
}
