//! The TUI's state: the model plus what the user is looking at (axis, zoom, panels, dialogs),
//! and the key map that turns key presses into actions for the main loop.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::copy::{ConflictAnswer, CurrentFile, EngineEvent, ProgressSnapshot};
use crate::model::{Event, Model};
use crate::sample::Sample;
use crate::ui::chart::XAxis;
use crate::ui::theme::Theme;
use crate::ui::units::Units;

/// What the copy is doing, as shown in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Scanning,
    Copying,
    Paused,
    Flushing,
    Verifying,
    Done,
    Cancelled,
    Failed,
    /// Replaying a recording (the replay position is in `ReplayStatus`).
    Replay,
}

impl RunState {
    pub fn label(self) -> &'static str {
        match self {
            RunState::Scanning => "scanning",
            RunState::Copying => "copying",
            RunState::Paused => "paused",
            RunState::Flushing => "flushing",
            RunState::Verifying => "copying+verifying",
            RunState::Done => "done",
            RunState::Cancelled => "cancelled",
            RunState::Failed => "failed",
            RunState::Replay => "replay",
        }
    }

    pub fn finished(self) -> bool {
        matches!(
            self,
            RunState::Done | RunState::Cancelled | RunState::Failed
        )
    }
}

/// Static facts for the header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub source: String,
    pub dest: String,
    /// e.g. "zfs tank/backup" or "ext4 /dev/sda2".
    pub fs: String,
}

/// Display options fixed at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UiOptions {
    pub theme: Theme,
    pub units: Units,
    pub compact: bool,
}

/// A modal dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialog {
    /// "Cancel the copy?" after the first q / Esc / Ctrl-C.
    ConfirmCancel,
    /// The destination exists (`--overwrite=ask`).
    Conflict { path: String },
}

/// Replay position and speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayStatus {
    /// Playback speed; `f64::INFINITY` = as fast as possible.
    pub speed: f64,
    pub paused: bool,
    pub total_ns: u64,
}

/// What the user is looking at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewState {
    pub axis: XAxis,
    /// 0 = whole history; each step halves the visible window.
    pub zoom: u8,
    /// How far back from the newest sample the window ends (scrolling with ←/→).
    pub scroll_ns: u64,
    pub show_events: bool,
    pub show_kernel: bool,
    pub help: bool,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            axis: XAxis::Time,
            zoom: 0,
            scroll_ns: 0,
            show_events: true,
            show_kernel: true,
            help: false,
        }
    }
}

/// The smallest round axis length that holds `t_ns`.
pub fn axis_span_ns(t_ns: u64) -> u64 {
    const STEPS_S: [u64; 17] = [
        10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400, 172_800,
        604_800,
    ];
    STEPS_S
        .iter()
        .map(|s| s * 1_000_000_000)
        .find(|s| *s >= t_ns)
        .unwrap_or_else(|| t_ns.div_ceil(604_800_000_000_000) * 604_800_000_000_000)
}

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
    /// Replay: seek by a signed number of ns, or to the start / end.
    Seek(i64),
    SeekStart,
    SeekEnd,
    /// Replay: cycle playback speed.
    CycleSpeed,
}

/// Everything the screen shows.
pub struct App {
    pub model: Model,
    pub header: Header,
    pub state: RunState,
    pub progress: ProgressSnapshot,
    pub current: Option<CurrentFile>,
    /// Time of the newest sample (ns since start): the render's "now".
    pub now_ns: u64,
    pub view: ViewState,
    pub opts: UiOptions,
    pub dialog: Option<Dialog>,
    /// A short message in the footer (e.g. where the screenshot went), with its time.
    pub status: Option<(String, u64)>,
    pub replay: Option<ReplayStatus>,
    /// Page-cache dirty + writeback when the flush started (for the flushing gauge).
    pub flush_start_dirty: Option<u64>,
    /// `--bwlimit` in bytes/s: the chart draws it as a line.
    pub limit_bps: Option<f64>,
    /// `--verify`, live: bytes of the copies read back so far (None without --verify and in a
    /// replay, which has no such counter); the gauge and the ETA count the read-back as half
    /// the work.
    pub verified: Option<u64>,
    /// Set once a cancel was sent to the engine: the size of the write the kernel still holds
    /// (0 when none), for "cancelling: waiting for the kernel ..." until the engine returns.
    pub cancelling: Option<u64>,
}

impl App {
    pub fn new(model: Model, header: Header, opts: UiOptions) -> Self {
        App {
            model,
            header,
            state: RunState::Scanning,
            progress: ProgressSnapshot::default(),
            current: None,
            now_ns: 0,
            view: ViewState::default(),
            opts,
            dialog: None,
            status: None,
            replay: None,
            flush_start_dirty: None,
            limit_bps: None,
            verified: None,
            cancelling: None,
        }
    }

    /// Feeds one sample through the model; returns the new events.
    pub fn on_sample(&mut self, s: &Sample) -> Vec<Event> {
        self.now_ns = self.now_ns.max(s.t_ns);
        self.progress = s.engine;
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
                self.flush_start_dirty = self
                    .model
                    .latest()
                    .and_then(|s| s.page_cache)
                    .map(|p| p.dirty + p.writeback);
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

    /// The visible time window on the time axis. Unzoomed, the axis spans a round length that
    /// only grows in steps (10 s, 20 s, 30 s, 1 min, …): the chart fills from left to right like
    /// Total Commander's, and between steps each frame changes only the newest columns, which
    /// keeps the bytes sent over SSH small.
    pub fn window(&self) -> (u64, u64) {
        let end_all = self.now_ns.max(1);
        if self.view.zoom == 0 {
            return (0, axis_span_ns(end_all));
        }
        let len = (end_all >> self.view.zoom).max(1_000_000_000);
        let end = end_all
            .saturating_sub(self.view.scroll_ns)
            .max(len.min(end_all));
        (end.saturating_sub(len), end)
    }

    /// Maps a key to an action, updating view state on the way.
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        let quit_key = ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Esc);

        if let Some(Dialog::Conflict { .. }) = &self.dialog {
            let answer = match key.code {
                KeyCode::Char('o') | KeyCode::Char('O') | KeyCode::Enter => {
                    ConflictAnswer::Overwrite
                }
                KeyCode::Char('s') => ConflictAnswer::Skip,
                KeyCode::Char('a') | KeyCode::Char('A') => ConflictAnswer::OverwriteAll,
                KeyCode::Char('n') | KeyCode::Char('S') => ConflictAnswer::SkipAll,
                KeyCode::Char('c') | KeyCode::Esc | KeyCode::Char('q') => ConflictAnswer::Cancel,
                _ if ctrl_c => ConflictAnswer::Cancel,
                _ => return Action::None,
            };
            self.dialog = None;
            return Action::Answer(answer);
        }
        if self.dialog == Some(Dialog::ConfirmCancel) {
            self.dialog = None;
            return match key.code {
                _ if quit_key => Action::Cancel,
                KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => Action::Cancel,
                _ => Action::Redraw,
            };
        }
        if self.view.help && !quit_key {
            self.view.help = false;
            return Action::Redraw;
        }
        if quit_key {
            if self.view.help {
                self.view.help = false;
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
                self.view.axis = match self.view.axis {
                    XAxis::Time => XAxis::Percent,
                    XAxis::Percent => XAxis::Time,
                };
                Action::Redraw
            }
            KeyCode::Char('+') | KeyCode::Char('=') => {
                self.view.zoom = (self.view.zoom + 1).min(16);
                Action::Redraw
            }
            KeyCode::Char('-') | KeyCode::Char('_') => {
                self.view.zoom = self.view.zoom.saturating_sub(1);
                if self.view.zoom == 0 {
                    self.view.scroll_ns = 0;
                }
                Action::Redraw
            }
            KeyCode::Left if self.replay.is_some() && self.view.zoom == 0 => {
                Action::Seek(-5_000_000_000)
            }
            KeyCode::Right if self.replay.is_some() && self.view.zoom == 0 => {
                Action::Seek(5_000_000_000)
            }
            KeyCode::Left => {
                if self.view.zoom > 0 {
                    self.view.scroll_ns = (self.view.scroll_ns + step).min(self.now_ns);
                }
                Action::Redraw
            }
            KeyCode::Right => {
                self.view.scroll_ns = self.view.scroll_ns.saturating_sub(step);
                Action::Redraw
            }
            KeyCode::Home if self.replay.is_some() => Action::SeekStart,
            KeyCode::End if self.replay.is_some() => Action::SeekEnd,
            KeyCode::Char('x') if self.replay.is_some() => Action::CycleSpeed,
            KeyCode::Char('e') => {
                self.view.show_events = !self.view.show_events;
                Action::Redraw
            }
            KeyCode::Char('k') => {
                self.view.show_kernel = !self.view.show_kernel;
                Action::Redraw
            }
            KeyCode::Char('?') | KeyCode::Char('h') => {
                self.view.help = true;
                Action::Redraw
            }
            _ => Action::None,
        }
    }
}
