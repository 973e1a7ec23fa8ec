//! What the screen draws: a [`View`] borrows the model and the [`Screen`] (the run's state
//! and counters, what the user is looking at: axis, zoom, panels, dialogs) for one frame.
//! Data only — the frontend (frontend/state.rs) owns and changes both; `ui` reads them.

use std::path::PathBuf;

use crate::model::Model;
use crate::present::units::Units;
use crate::ui::chart::XAxis;
use crate::ui::theme::Theme;

/// The copy's counters as the screen shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub bytes_copied: u64,
    pub bytes_total: u64,
    pub files_done: u64,
    pub files_failed: u64,
    pub files_total: u64,
    /// The totals are final.
    pub scan_done: bool,
}

/// The file being copied now and how far it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProgress {
    /// Path relative to its source root.
    pub path: PathBuf,
    pub size: u64,
    pub done: u64,
}

/// `copyscope watch`: one followed writer's row (several writers: the writers panel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterView {
    pub pid: u32,
    /// Its name as the kernel has it (quoted when drawn).
    pub comm: String,
    /// Bytes it wrote into files on the watched filesystem.
    pub bytes: u64,
    /// The file it writes (or last wrote) and how far into it.
    pub file: Option<FileProgress>,
    pub alive: bool,
}

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
    /// `copyscope watch`: charting someone else's writes.
    Watching,
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
            RunState::Watching => "watching",
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
    /// What `q` leads to when it is not the end of copyscope (`demo --replay`: "on to the live
    /// demo"); `None`: "quit".
    pub then: Option<&'static str>,
}

/// A modal dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialog {
    /// "Cancel the copy?" after the first q / Esc / Ctrl-C.
    ConfirmCancel,
    /// The destination exists (`--overwrite=ask`).
    Conflict(ConflictView),
    /// The copy needs more than the destination has free: copy anyway or cancel.
    LowSpace(SpaceView),
}

/// The low-space question's facts, from the scan's free-space check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceView {
    /// Bytes still to be written, less what overwrites free.
    pub needed: u64,
    /// Free bytes on the destination's filesystem.
    pub free: u64,
    /// What overwriting existing files frees (already taken off `needed`).
    pub freed: u64,
    /// The destination, already quoted for the terminal.
    pub dest: String,
    /// Its filesystem type ("ext4"), empty when unknown.
    pub fs_type: String,
}

/// The overwrite dialog's facts: the names (already quoted for the terminal) and both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictView {
    pub destination: String,
    pub source: String,
    pub new: FileSide,
    pub existing: FileSide,
}

/// One side of a conflict: size and modification time (seconds, nanoseconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSide {
    pub size: u64,
    pub mtime: (i64, i64),
    /// The modification time as the user's file manager shows it: local time to the second,
    /// its zone named ("2026-11-30 20:42:07 CET"). Made by the frontend: drawing reads no
    /// time zone.
    pub when: String,
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
    /// The writer's time budget (and, once the copy ended, the verdict) in the kernel panel.
    pub show_budget: bool,
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
            show_budget: false,
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

/// What the screen shows besides the model.
#[derive(Clone)]
pub struct Screen {
    pub header: Header,
    pub state: RunState,
    pub progress: Progress,
    pub current: Option<FileProgress>,
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
    /// A watch: the bytes are someone else's intake, with no total, files or ETA, and the
    /// current file is the writer's, shown with its position.
    pub watch: bool,
    /// `copyscope pipe`: no files; without a size, no total, percent or ETA.
    pub pipe: bool,
    /// `copyscope watch`: the writers followed, the most bytes first.
    pub writers: Vec<WriterView>,
}

impl Screen {
    pub fn new(header: Header, opts: UiOptions) -> Self {
        Screen {
            header,
            state: RunState::Scanning,
            progress: Progress::default(),
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
            watch: false,
            pipe: false,
            writers: Vec::new(),
        }
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
}

/// One frame's data: the model and the screen, borrowed while it is drawn.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub model: &'a Model,
    pub screen: &'a Screen,
}

impl std::ops::Deref for View<'_> {
    type Target = Screen;
    fn deref(&self) -> &Screen {
        self.screen
    }
}
