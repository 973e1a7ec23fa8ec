//! The frontend's state: the [`View`] the screen draws, and the rules that change it — a
//! sample, an engine event, a key press. Nothing here does I/O.

use std::ops::{Deref, DerefMut};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::copy::{ConflictAnswer, CurrentFile, EngineEvent, ProgressSnapshot, SpaceAnswer};
use crate::model::{Event, Model};
use crate::present::keys::{self, Does, FileExists, Press};
use crate::sample::Sample;
use crate::ui::chart::XAxis;
use crate::ui::view::{Dialog, FileProgress, Header, Progress, RunState, Screen, UiOptions, View};

/// What a key press asks the main loop to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    None,
    /// Redraw only.
    Redraw,
    TogglePause,
    Cancel,
    /// Leave the finished screen (or a replay).
    Quit,
    Screenshot,
    Answer(ConflictAnswer),
    /// The answer to "not enough free space".
    AnswerSpace(SpaceAnswer),
    /// Replay: seek by a signed number of ns, or to the start / end.
    Seek(i64),
    SeekStart,
    SeekEnd,
    /// Replay: cycle playback speed.
    CycleSpeed,
}

/// The state a frontend loop owns: the model and what the screen shows, changed only
/// through the methods below. It derefs to the [`Screen`]; a frame draws its [`App::view`].
#[derive(Clone)]
pub struct App {
    pub model: Model,
    pub screen: Screen,
}

impl Deref for App {
    type Target = Screen;
    fn deref(&self) -> &Screen {
        &self.screen
    }
}

impl DerefMut for App {
    fn deref_mut(&mut self) -> &mut Screen {
        &mut self.screen
    }
}

/// The engine's counters as the screen shows them.
pub fn progress_of(p: &ProgressSnapshot) -> Progress {
    Progress {
        bytes_copied: p.bytes_copied,
        bytes_total: p.bytes_total,
        files_done: p.files_done,
        files_failed: p.files_failed,
        files_total: p.files_total,
        scan_done: p.scan_done,
    }
}

/// A followed writer as the screen shows it.
pub fn writer_of(w: &crate::copy::WriterRow) -> crate::ui::view::WriterView {
    crate::ui::view::WriterView {
        pid: w.pid,
        comm: w.comm.clone(),
        bytes: w.bytes,
        file: w.file.as_ref().map(file_of),
        alive: w.alive,
    }
}

/// The engine's current file as the screen shows it.
pub fn file_of(c: &CurrentFile) -> FileProgress {
    FileProgress {
        path: c.path.clone(),
        size: c.size,
        done: c.done,
    }
}

impl App {
    pub fn new(model: Model, header: Header, opts: UiOptions) -> Self {
        App {
            model,
            screen: Screen::new(header, opts),
        }
    }

    /// This frame's data for drawing.
    pub fn view(&self) -> View<'_> {
        View {
            model: &self.model,
            screen: &self.screen,
        }
    }

    /// Feeds one sample through the model; returns the new events.
    pub fn on_sample(&mut self, s: &Sample) -> Vec<Event> {
        self.now_ns = self.now_ns.max(s.t_ns);
        self.progress = progress_of(&s.engine);
        if self.state == RunState::Scanning && s.engine.scan_done {
            self.state = RunState::Copying;
        }
        self.model.apply(s)
    }

    /// Feeds one engine event; keeps the run state in step. Returns the model's new events
    /// (the mapped one, plus a drop the event closed, e.g. by a pause).
    ///
    /// Engine events are stamped with the newest sample's time (`now_ns`), not the wall clock,
    /// so that a recording replays in exactly the order it was lived.
    pub fn on_engine(&mut self, t_ns: u64, ev: &EngineEvent) -> Vec<Event> {
        match ev {
            EngineEvent::ScanDone { .. } if self.state == RunState::Scanning => {
                self.state = RunState::Copying;
            }
            EngineEvent::Paused => self.state = RunState::Paused,
            EngineEvent::Resumed if self.verified.is_some() => self.state = RunState::Verifying,
            EngineEvent::Resumed => {
                self.state = if self.progress.scan_done {
                    RunState::Copying
                } else {
                    RunState::Scanning
                };
            }
            EngineEvent::FlushStarted => {
                self.state = RunState::Flushing;
                // This copy's backlog (the system's Dirty + Writeback only when the
                // destination's counters are unknown), as the flushing gauge shows it.
                self.flush_start_dirty = self.model.flush_backlog().map(|b| b.bytes);
            }
            EngineEvent::FlushDone if self.state == RunState::Flushing => {
                self.state = RunState::Done
            }
            EngineEvent::VerifyStarted => self.state = RunState::Verifying,
            EngineEvent::VerifyDone { .. } => self.state = RunState::Done,
            EngineEvent::Fatal { .. } => self.state = RunState::Failed,
            _ => {}
        }
        self.model.engine_events(t_ns, ev)
    }

    /// Maps a key to an action, updating view state on the way: what the key does is the
    /// key table's (present/keys.rs), in the dialog or on the screen it is pressed at.
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        let Some(press) = press_of(&key) else {
            return Action::None;
        };
        let replay = self.replay.is_some();
        let lookup = |wanted: fn(Does) -> bool| keys::lookup(press, replay, wanted);
        // A key with Ctrl is no key of ours but for the table's (Ctrl-Space is not Space, and
        // Ctrl-Z is the shell's, handled before the rule book).
        if matches!(press, Press::Ctrl(_)) && (keys::suspends(press) || lookup(|_| true).is_none())
        {
            return Action::None;
        }
        match &self.dialog {
            Some(Dialog::Conflict { .. }) => {
                let answer = match lookup(|d| matches!(d, Does::Exists(_) | Does::Quit)) {
                    Some(Does::Exists(a)) => conflict_answer(a),
                    Some(_) => ConflictAnswer::Cancel,
                    None => return Action::None,
                };
                self.dialog = None;
                Action::Answer(answer)
            }
            Some(Dialog::LowSpace(_)) => {
                // Not `c`: in the overwrite dialog `c` cancels the copy.
                let answer = match lookup(|d| matches!(d, Does::Yes | Does::No | Does::Quit)) {
                    Some(Does::Yes) => SpaceAnswer::Continue,
                    Some(_) => SpaceAnswer::Cancel,
                    None => return Action::None,
                };
                self.dialog = None;
                Action::AnswerSpace(answer)
            }
            Some(Dialog::ConfirmCancel) => {
                self.dialog = None;
                match lookup(|d| matches!(d, Does::Yes | Does::Quit)) {
                    Some(_) => Action::Cancel,
                    None => Action::Redraw,
                }
            }
            None if self.screen.view.help => {
                self.screen.view.help = false;
                Action::Redraw
            }
            None => match lookup(|d| !matches!(d, Does::Exists(_) | Does::Yes | Does::No)) {
                Some(does) => self.on_screen(does),
                None => Action::None,
            },
        }
    }

    /// A key's action on the screen, no dialog open.
    fn on_screen(&mut self, does: Does) -> Action {
        let replay = self.replay.is_some();
        let finished = self.state.finished();
        let view = &mut self.screen.view;
        match does {
            Does::Quit if finished || replay => Action::Quit,
            Does::Quit => {
                self.screen.dialog = Some(Dialog::ConfirmCancel);
                Action::Redraw
            }
            Does::Pause if replay || !finished => Action::TogglePause,
            Does::Screenshot => Action::Screenshot,
            Does::Axis => {
                view.axis = match view.axis {
                    XAxis::Time => XAxis::Percent,
                    XAxis::Percent => XAxis::Time,
                };
                Action::Redraw
            }
            Does::ZoomIn => {
                view.zoom = (view.zoom + 1).min(16);
                Action::Redraw
            }
            Does::ZoomOut => {
                view.zoom = view.zoom.saturating_sub(1);
                if view.zoom == 0 {
                    view.scroll_ns = 0;
                }
                Action::Redraw
            }
            Does::Back | Does::Forward if replay && view.zoom == 0 => {
                Action::Seek(if does == Does::Back {
                    -5_000_000_000
                } else {
                    5_000_000_000
                })
            }
            Does::Back | Does::Forward => self.scroll(does == Does::Back),
            Does::Start => Action::SeekStart,
            Does::End => Action::SeekEnd,
            Does::Speed => Action::CycleSpeed,
            Does::EventsPanel => {
                view.show_events = !view.show_events;
                Action::Redraw
            }
            Does::KernelPanel => {
                view.show_kernel = !view.show_kernel;
                Action::Redraw
            }
            Does::Budget => {
                view.show_budget = !view.show_budget;
                Action::Redraw
            }
            Does::Help => {
                view.help = true;
                Action::Redraw
            }
            Does::Pause | Does::Suspend | Does::Exists(_) | Does::Yes | Does::No => Action::None,
        }
    }

    /// Left / Right on a zoomed chart: a quarter of the window back through history (never
    /// before the start) or forward (never past now).
    fn scroll(&mut self, back: bool) -> Action {
        let step = {
            let (a, b) = self.window();
            ((b - a) / 4).max(1_000_000_000)
        };
        let view = &mut self.screen.view;
        if back && view.zoom > 0 {
            view.scroll_ns = (view.scroll_ns + step).min(self.screen.now_ns);
        } else if !back {
            view.scroll_ns = view.scroll_ns.saturating_sub(step);
        }
        Action::Redraw
    }
}

/// The key table's name for a key event; `None` for a release and for a key held with Alt
/// (Alt-P is not P).
pub fn press_of(key: &KeyEvent) -> Option<Press> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char(c) => Some(Press::Ctrl(c)),
            _ => None,
        };
    }
    if key.modifiers.contains(KeyModifiers::ALT) {
        return None;
    }
    Some(match key.code {
        KeyCode::Char(c) => Press::Char(c),
        KeyCode::Esc => Press::Esc,
        KeyCode::Enter => Press::Enter,
        KeyCode::Left => Press::Left,
        KeyCode::Right => Press::Right,
        KeyCode::Home => Press::Home,
        KeyCode::End => Press::End,
        _ => Press::Other,
    })
}

/// The engine's answer for the table's "file exists" answer.
fn conflict_answer(a: FileExists) -> ConflictAnswer {
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
