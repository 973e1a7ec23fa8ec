//! The copy engine: plans, copies and flushes on blocking threads; shares progress
//! through atomics and discrete events through a channel.
//!
//! Contract used by the rest of the program (sampler, TUI, plain output):
//! - [`Progress`]: lock-free counters read by the sampler every tick.
//! - [`EngineEvent`]: discrete events sent over an `std::sync::mpsc` channel.
//! - [`Control`]: pause / cancel flags the UI sets.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counters the engine updates while it copies. All byte counts are file data bytes.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of file data written to destination files (app-level speed comes from this).
    pub bytes_copied: AtomicU64,
    /// Files (of any kind) completed: copied, linked or recreated.
    pub files_done: AtomicU64,
    /// Files that failed or were skipped.
    pub files_failed: AtomicU64,
    /// Bytes found so far by the scan (grows until `scan_done`).
    pub bytes_total: AtomicU64,
    /// Entries found so far by the scan.
    pub files_total: AtomicU64,
    /// Set when the scan has finished: totals are final.
    pub scan_done: AtomicBool,
    /// Cumulative nanoseconds spent inside read syscalls (or the read half of copy_file_range).
    pub read_ns: AtomicU64,
    /// Cumulative nanoseconds spent inside write syscalls (copy_file_range counts here).
    pub write_ns: AtomicU64,
    /// `--verify`: bytes of the copies read back from the device so far.
    pub bytes_verified: AtomicU64,
    /// Size of the write syscall in progress (0 between writes): what a cancel waits for.
    pub in_write: AtomicU64,
    /// Cumulative wall-clock ns during which at least one writer slept for `--bwlimit` (the
    /// engine's own pacing) and was not yet due: the verdict's "rate limit" share. A sleep
    /// that ends late (the writer waited for a CPU after its timer) counts up to its due
    /// time only.
    pub paced_ns: AtomicU64,
    /// `--pace auto`: the rate the engine holds now, bytes/s (0: free). The session sets it
    /// from the model after every sample.
    pub pace_bps: AtomicU64,
    /// Writers sleeping for `--bwlimit` now: what [`Progress::paced_ns`] banks.
    pub(crate) pacers: Mutex<rate::PacedClock>,
    /// Watch mode: at the last tick a followed writer was held in a kernel write wait (a
    /// stall, which `--until-idle` must not take for the writer going quiet).
    pub writer_held: AtomicBool,
    /// `watch --pipeline`: every stage of the pipeline has ended (the watch ends with it).
    pub watched_ended: AtomicBool,
    /// The file being copied now (the large-file stream; for parallel small files the latest one).
    pub current: Mutex<Option<CurrentFile>>,
    /// Watch mode: the writers followed now, each with its file and its bytes.
    pub writers: Mutex<Vec<WriterRow>>,
}

/// `copyscope watch`: one followed writer as the faces list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterRow {
    pub pid: u32,
    pub comm: String,
    /// The file it is writing (the last one that grew), and how far into it.
    pub file: Option<CurrentFile>,
    /// Bytes it wrote into files on the watched filesystem since it was followed.
    pub bytes: u64,
    /// The file it reads, how far it got and its size (`watch --all`: progress(1)'s percent).
    pub source: Option<(PathBuf, u64, u64)>,
    /// Still running (an ended writer keeps its row, with what it wrote).
    pub alive: bool,
}

/// The file being copied now and how far it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentFile {
    /// Path relative to the source root it came from (display form).
    pub path: PathBuf,
    pub size: u64,
    pub done: u64,
}

/// A plain copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProgressSnapshot {
    pub bytes_copied: u64,
    pub files_done: u64,
    pub files_failed: u64,
    pub bytes_total: u64,
    pub files_total: u64,
    pub scan_done: bool,
    pub read_ns: u64,
    pub write_ns: u64,
    /// See [`Progress::paced_ns`] (0 in recordings made before it was recorded).
    #[serde(default)]
    pub paced_ns: u64,
}

impl Progress {
    /// Reads every counter once (Relaxed: each value is monotonic on its own).
    pub fn snapshot(&self) -> ProgressSnapshot {
        ProgressSnapshot {
            bytes_copied: self.bytes_copied.load(Ordering::Relaxed),
            files_done: self.files_done.load(Ordering::Relaxed),
            files_failed: self.files_failed.load(Ordering::Relaxed),
            bytes_total: self.bytes_total.load(Ordering::Relaxed),
            files_total: self.files_total.load(Ordering::Relaxed),
            scan_done: self.scan_done.load(Ordering::Relaxed),
            read_ns: self.read_ns.load(Ordering::Relaxed),
            write_ns: self.write_ns.load(Ordering::Relaxed),
            paced_ns: self.paced_ns.load(Ordering::Relaxed),
        }
    }

    /// The current file, cloned out of the lock.
    pub fn current(&self) -> Option<CurrentFile> {
        self.current.lock().map(|c| c.clone()).unwrap_or(None)
    }

    /// Watch mode: the writers followed now, cloned out of the lock.
    pub fn writers(&self) -> Vec<WriterRow> {
        self.writers.lock().map(|w| w.clone()).unwrap_or_default()
    }
}

/// Flags the UI sets and the engine obeys between chunks.
#[derive(Debug, Default)]
pub struct Control {
    /// While set, workers block before their next I/O (no new reads or writes are issued).
    pub paused: AtomicBool,
    /// Once set, workers stop, remove their temporary files and the engine returns `Cancelled`.
    /// Set it with [`Control::cancel`], which also wakes the engine's waits.
    pub cancelled: AtomicBool,
    /// Wakes the engine's waits: a cancel, a worker's end, the flush child's exit.
    pub nudge: std::sync::Arc<nudge::Nudge>,
}

impl Control {
    /// Cancels the copy and wakes whatever waits in the engine.
    pub fn cancel(&self) {
        self.cancelled
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.nudge.wake();
    }
}

/// An engine event with the moment the engine sent it, on the session clock (nanoseconds
/// since the instant the sampler's `t_ns` also counts from), so the model places a flush's
/// start or a pause where it happened, not where the frontend next looked.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamped {
    pub t_ns: u64,
    pub event: EngineEvent,
}

/// The engine's end of the event channel: every event is stamped as it is sent.
#[derive(Debug, Clone)]
pub struct EventSender {
    tx: tokio::sync::mpsc::UnboundedSender<Stamped>,
    start: std::time::Instant,
}

impl EventSender {
    /// A channel whose stamps count from `start` (the session's start).
    pub fn channel(
        start: std::time::Instant,
    ) -> (EventSender, tokio::sync::mpsc::UnboundedReceiver<Stamped>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (EventSender { tx, start }, rx)
    }

    /// Sends `event` stamped now; fails only when the frontend is gone.
    pub fn send(&self, event: EngineEvent) -> Result<(), EngineEvent> {
        let t_ns = self.start.elapsed().as_nanos() as u64;
        self.tx.send(Stamped { t_ns, event }).map_err(|e| e.0.event)
    }
}

/// Discrete things the engine reports, in order, over an mpsc channel.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EngineEvent {
    FileStarted {
        path: PathBuf,
        size: u64,
    },
    FileDone {
        path: PathBuf,
        bytes: u64,
    },
    /// A directory of the source was made in the destination (not sent when it existed).
    DirCreated {
        path: PathBuf,
    },
    /// A per-file error: the copy goes on.
    FileFailed {
        path: PathBuf,
        error: String,
    },
    /// Skipped on purpose (socket, device without root, conflict policy, ...).
    FileSkipped {
        path: PathBuf,
        reason: String,
    },
    /// A file changed size while it was copied (reported, the copy still completes).
    FileChanged {
        path: PathBuf,
        detail: String,
    },
    /// Copied with a caveat (extended attributes the destination cannot hold).
    FileNote {
        path: PathBuf,
        note: String,
    },
    ScanDone {
        files: u64,
        bytes: u64,
    },
    /// The scan is complete and the destination has less free space than the copy still
    /// needs. Under a [`ConflictAsk`] the workers wait for [`ConflictAsk::low_space`];
    /// without one the copy goes on (as cp's does) and the frontend warns.
    LowSpace(LowSpace),
    /// All data written; the flush (syncfs or per-file fsync) starts.
    FlushStarted,
    FlushDone,
    VerifyStarted,
    VerifyDone {
        files: u64,
        mismatches: u64,
    },
    Paused,
    Resumed,
    /// Fatal: the copy stops (disk full, destination gone).
    Fatal {
        error: String,
    },
}

/// What a copy needs against what its destination filesystem has, once the scan is complete.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LowSpace {
    /// Bytes still to be written (whole blocks), less what overwriting existing files frees.
    pub needed: u64,
    /// What overwriting existing files frees (already taken off `needed`); 0 in recordings
    /// made before it was recorded.
    #[serde(default)]
    pub freed: u64,
    /// Free bytes on the destination filesystem now (`statvfs`: the blocks available to this
    /// user; root's include the reserved ones).
    pub free: u64,
    /// The destination as the user named it.
    pub dest: PathBuf,
    /// Its filesystem type ("ext4", "zfs"), empty when unknown.
    pub fs_type: String,
}

impl LowSpace {
    /// "needs 3.2 GB, 1.1 GB free on /mnt (ext4)"
    pub fn describe(&self) -> String {
        let fs = if self.fs_type.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.fs_type)
        };
        format!(
            "needs {}, {} free on {}{fs}",
            crate::present::format::fmt_bytes(self.needed),
            crate::present::format::fmt_bytes(self.free),
            crate::present::quote::quote(&self.dest)
        )
    }

    /// cp-style warning for stderr: "copyscope: warning: needs 3.2 GB, 1.1 GB free on /mnt (ext4)".
    pub fn warning(&self) -> String {
        format!("copyscope: warning: {}", self.describe())
    }
}

/// The user's answer to "not enough free space".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceAnswer {
    /// Copy anyway (the files that fit are copied; the first that does not is a fatal "disk full").
    Continue,
    Cancel,
}

/// The user's answer to "destination exists" under `--overwrite=ask` (Total Commander's
/// choices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictAnswer {
    Overwrite,
    Skip,
    OverwriteAll,
    SkipAll,
    /// Overwrite this and every later destination that is older than its source; skip the
    /// others (without asking again).
    OverwriteAllOlder,
    /// Keep the existing file and copy under a free name beside it ("name (1).ext"), chosen
    /// at the rename into place so no other file can be replaced.
    Rename,
    Cancel,
}

/// One side of a conflict, as the dialog shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConflictSide {
    pub size: u64,
    /// Modification time: seconds and nanoseconds since the epoch.
    pub mtime: (i64, i64),
}

/// What the engine asks about: the existing destination and the source that would replace it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictQuestion {
    pub destination: PathBuf,
    pub source: PathBuf,
    pub new: ConflictSide,
    pub existing: ConflictSide,
}

/// Asked by the engine (from a worker thread, blocking) when a destination file exists
/// and the policy is `ask`. The TUI implements it with a dialog; without a terminal the
/// engine never asks (cp's behaviour: overwrite).
pub trait ConflictAsk: Send + Sync {
    fn ask(&self, question: &ConflictQuestion) -> ConflictAnswer;

    /// Asked (from the scan's thread, blocking; the workers wait meanwhile) when the copy
    /// needs more than the destination's free space. The default goes on, as cp does.
    fn low_space(&self, _shortfall: &LowSpace) -> SpaceAnswer {
        SpaceAnswer::Continue
    }
}

pub mod bench;
mod census;
pub(crate) mod conflict;
pub mod engine;
pub mod error;
pub(crate) mod file;
pub mod filter;
mod flush;
mod in_flight;
mod links;
pub(crate) mod nofollow;
pub mod nudge;
pub mod options;
mod outcomes;
pub mod pipe;
pub mod plan;
mod queue;
mod rate;
pub(crate) mod scan;
pub(crate) mod shared;
pub mod signals;
mod space;
pub(crate) mod stage;
pub mod writeback;
pub(crate) mod xattr;

pub use engine::{CopyOutcome, VerifyResult, spawn_engine};
pub use error::CopyError;
pub use options::{
    CopyOptions, CopyRequest, Dereference, OverwritePolicy, Pair, ReflinkMode, SyncMode,
};
pub use outcomes::FileIssue;
pub use plan::{CopyJob, Root, resolve_targets};
pub use shared::TEMP_MARKER;
pub use signals::{SignalGuard, install_signal_handlers, last_signal};
