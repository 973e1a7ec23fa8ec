//! The frontend's state: the [`View`] the screen draws, and the rules that change it — a
//! sample, an engine event, a key press. Nothing here does I/O.

use std::ops::{Deref, DerefMut};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::copy::{ConflictAnswer, CurrentFile, EngineEvent, ProgressSnapshot, SpaceAnswer};
use crate::model::{Event, Model};
use crate::sample::Sample;
use crate::ui::chart::XAxis;
use crate::ui::view::{Dialog, FileProgress, Header, Progress, RunState, UiOptions, View};

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

/// The state a frontend loop owns: what the screen shows, changed only through the methods
/// below. It derefs to the [`View`] so drawing reads it directly.
#[derive(Clone)]
pub struct App {
    pub screen: View,
}

impl Deref for App {
    type Target = View;
    fn deref(&self) -> &View {
        &self.screen
    }
}

impl DerefMut for App {
    fn deref_mut(&mut self) -> &mut View {
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
            screen: View::new(model, header, opts),
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

    /// Maps a key to an action, updating view state on the way.
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        let quit_key = ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Esc);
        // Ctrl-Space is not Space and Ctrl-P is not P: a key with Ctrl or Alt is no key of
        // ours, but for Ctrl-C (Ctrl-Z is the shell's, handled before the rule book).
        if !ctrl_c
            && key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return Action::None;
        }

        if let Some(Dialog::Conflict { .. }) = &self.dialog {
            let answer = match key.code {
                KeyCode::Char('o') | KeyCode::Char('O') | KeyCode::Enter => {
                    ConflictAnswer::Overwrite
                }
                KeyCode::Char('s') => ConflictAnswer::Skip,
                KeyCode::Char('a') | KeyCode::Char('A') => ConflictAnswer::OverwriteAll,
                KeyCode::Char('n') | KeyCode::Char('S') => ConflictAnswer::SkipAll,
                KeyCode::Char('l') | KeyCode::Char('L') => ConflictAnswer::OverwriteAllOlder,
                KeyCode::Char('r') | KeyCode::Char('R') => ConflictAnswer::Rename,
                KeyCode::Char('c') | KeyCode::Esc | KeyCode::Char('q') => ConflictAnswer::Cancel,
                _ if ctrl_c => ConflictAnswer::Cancel,
                _ => return Action::None,
            };
            self.dialog = None;
            return Action::Answer(answer);
        }
        if let Some(Dialog::LowSpace(_)) = &self.dialog {
            let answer = match key.code {
                // Not `c`: in the overwrite dialog `c` cancels the copy.
                KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => SpaceAnswer::Continue,
                _ if quit_key || key.code == KeyCode::Char('n') => SpaceAnswer::Cancel,
                _ => return Action::None,
            };
            self.dialog = None;
            return Action::AnswerSpace(answer);
        }
        if self.dialog == Some(Dialog::ConfirmCancel) {
            self.dialog = None;
            return match key.code {
                _ if quit_key => Action::Cancel,
                KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => Action::Cancel,
                _ => Action::Redraw,
            };
        }
        if self.screen.view.help && !quit_key {
            self.screen.view.help = false;
            return Action::Redraw;
        }
        if quit_key {
            if self.screen.view.help {
                self.screen.view.help = false;
                return Action::Redraw;
            }
            if self.state.finished() || self.replay.is_some() {
                return Action::Quit;
            }
            self.dialog = Some(Dialog::ConfirmCancel);
            return Action::Redraw;
        }
        let step = {
            let (a, b) = self.window();
            ((b - a) / 4).max(1_000_000_000)
        };
        match key.code {
            KeyCode::Char('p') | KeyCode::Char(' ') => {
                if self.replay.is_some() || !self.state.finished() {
                    Action::TogglePause
                } else {
                    Action::None
                }
            }
            KeyCode::Char('s') => Action::Screenshot,
            KeyCode::Char('t') => {
                self.screen.view.axis = match self.screen.view.axis {
                    XAxis::Time => XAxis::Percent,
                    XAxis::Percent => XAxis::Time,
                };
                Action::Redraw
            }
            KeyCode::Char('+') | KeyCode::Char('=') => {
                self.screen.view.zoom = (self.screen.view.zoom + 1).min(16);
                Action::Redraw
            }
            KeyCode::Char('-') | KeyCode::Char('_') => {
                self.screen.view.zoom = self.screen.view.zoom.saturating_sub(1);
                if self.screen.view.zoom == 0 {
                    self.screen.view.scroll_ns = 0;
                }
                Action::Redraw
            }
            KeyCode::Left if self.replay.is_some() && self.screen.view.zoom == 0 => {
                Action::Seek(-5_000_000_000)
            }
            KeyCode::Right if self.replay.is_some() && self.screen.view.zoom == 0 => {
                Action::Seek(5_000_000_000)
            }
            KeyCode::Left => {
                if self.screen.view.zoom > 0 {
                    self.screen.view.scroll_ns =
                        (self.screen.view.scroll_ns + step).min(self.now_ns);
                }
                Action::Redraw
            }
            KeyCode::Right => {
                self.screen.view.scroll_ns = self.screen.view.scroll_ns.saturating_sub(step);
                Action::Redraw
            }
            KeyCode::Home if self.replay.is_some() => Action::SeekStart,
            KeyCode::End if self.replay.is_some() => Action::SeekEnd,
            KeyCode::Char('x') if self.replay.is_some() => Action::CycleSpeed,
            KeyCode::Char('e') => {
                self.screen.view.show_events = !self.screen.view.show_events;
                Action::Redraw
            }
            KeyCode::Char('k') => {
                self.screen.view.show_kernel = !self.screen.view.show_kernel;
                Action::Redraw
            }
            KeyCode::Char('b') => {
                self.screen.view.show_budget = !self.screen.view.show_budget;
                Action::Redraw
            }
            KeyCode::Char('?') | KeyCode::Char('h') => {
                self.screen.view.help = true;
                Action::Redraw
            }
            _ => Action::None,
        }
    }
}
