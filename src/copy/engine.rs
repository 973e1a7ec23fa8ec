//! The engine's run: starts the copy workers, runs the scan (scan.rs) that feeds them, makes
//! the deferred hard links, then the honest finish: syncfs (or per-file fsync) and the
//! outcome with both speeds. Shared state is in shared.rs, conflict decisions in conflict.rs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::fs::Mode;

use super::census::census;
use super::conflict::ALL_NONE;
use super::flush::Flushed;
use super::options::{CopyOptions, SyncMode};
use super::outcomes::FileIssue;
use super::plan::{CopyJob, Root};
use super::queue::{Grouped, Popped, QUEUE_LEN, QUEUE_RUNS, WorkQueue};
use super::scan::scan;
use super::shared::{Entry, Shared, errmsg, lock};
use super::{ConflictAsk, Control, EngineEvent, EventSender, Progress, ProgressSnapshot};
use crate::exit::ExitStatus;

/// Result of `--verify`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VerifyResult {
    pub files: u64,
    pub mismatches: u64,
    /// How the read-back avoided the page cache, in words for the summary.
    pub method: String,
}

/// Everything the frontends need for the summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CopyOutcome {
    pub status: ExitStatus,
    pub files_copied: u64,
    pub bytes_copied: u64,
    /// Bytes shared with the source by `--reflink` instead of copied.
    pub bytes_cloned: u64,
    pub failures: Vec<FileIssue>,
    /// Skipped on purpose (sockets, devices without root, conflict policy).
    pub skipped: Vec<FileIssue>,
    /// Files that grew, shrank or vanished while they were copied.
    pub changed: Vec<FileIssue>,
    /// Files copied with a caveat: extended attributes the destination cannot hold.
    #[serde(default)]
    pub notes: Vec<FileIssue>,
    /// The error that stopped the copy (disk full, read-only destination).
    pub fatal: Option<String>,
    pub copy_secs: f64,
    /// None with `--no-sync` or when the copy did not finish.
    pub flush_secs: Option<f64>,
    /// Bytes per second until the last byte was written (into the page cache).
    pub to_cache_bps: f64,
    /// Bytes per second including the flush: the speed at which data became durable.
    pub durable_bps: Option<f64>,
    pub sync: SyncMode,
    /// Cancelled during the final flush of a complete copy: the files are in place, the flush
    /// was left to the kernel (as with `--no-sync`), and the run counts as a success.
    #[serde(default)]
    pub flush_abandoned: bool,
    pub verify: Option<VerifyResult>,
}

/// Starts the engine on its own thread. Every refusal was made by [`CopyJob::plan`];
/// from here on errors are per file (collected) or fatal (disk full: the copy stops).
pub fn spawn_engine(
    job: CopyJob,
    progress: Arc<Progress>,
    control: Arc<Control>,
    events: EventSender,
    ask: Option<Arc<dyn ConflictAsk>>,
) -> JoinHandle<CopyOutcome> {
    std::thread::Builder::new()
        .name("copyscope-engine".into())
        .spawn(move || run_engine(job, progress, control, events, ask))
        .unwrap_or_else(|e| panic!("cannot start the copy engine thread: {e}"))
}

fn raise_nofile_limit() {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    if let (Some(cur), Some(max)) = (lim.current, lim.maximum)
        && cur < max
    {
        let _ = rustix::process::setrlimit(
            rustix::process::Resource::Nofile,
            rustix::process::Rlimit {
                current: Some(max.min(1 << 20)),
                maximum: Some(max),
            },
        );
    }
}

impl Shared {
    /// Fresh state for one run.
    pub(crate) fn new(
        progress: Arc<Progress>,
        control: Arc<Control>,
        events: EventSender,
        ask: Option<Arc<dyn ConflictAsk>>,
        opts: CopyOptions,
    ) -> Shared {
        Shared {
            progress,
            control,
            events,
            ask,
            umask: current_umask(),
            is_root: rustix::process::geteuid().is_root(),
            stop: AtomicBool::new(false),
            fatal: Mutex::new(None),
            conflict_all: AtomicU8::new(ALL_NONE),
            ask_lock: Mutex::new(()),
            outcomes: Default::default(),
            big_lane: Mutex::new(()),
            pause_announced: AtomicBool::new(false),
            space: Default::default(),
            walked_files: AtomicU64::new(0),
            walked_bytes: AtomicU64::new(0),
            hard_links: Default::default(),
            sync_targets: Mutex::new(Vec::new()),
            rates: Default::default(),
            exclude: (!opts.exclude.is_empty())
                .then(|| super::filter::Exclude::new(&opts.exclude).ok())
                .flatten(),
            verify_on_zfs: AtomicBool::new(false),
            made_names: None,
            unfinished: Mutex::new(HashMap::new()),
            in_flight: Default::default(),
            flink_empty_path: AtomicBool::new(true),
            made_dirs: Default::default(),
            stages: Default::default(),
            opts,
        }
    }
}
/// Nine tenths of the space free on the destination's filesystem now: what files may claim
/// before the census has checked the totals (every root is copied onto one directory's
/// filesystem).
fn space_budget(sh: &Shared, roots: &[Root]) -> u64 {
    let Some(dest) = roots.first().map(|r| &r.dest) else {
        return u64::MAX;
    };
    let dir = if dest.is_dir() {
        dest.clone()
    } else {
        match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => ".".into(),
        }
    };
    let Ok(v) = rustix::fs::statvfs(&dir) else {
        return u64::MAX;
    };
    let blocks = if sh.is_root { v.f_bfree } else { v.f_bavail };
    blocks.saturating_mul(v.f_frsize) / 10 * 9
}

fn current_umask() -> u32 {
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.bits()
}

fn run_engine(
    job: CopyJob,
    progress: Arc<Progress>,
    control: Arc<Control>,
    events: EventSender,
    ask: Option<Arc<dyn ConflictAsk>>,
) -> CopyOutcome {
    raise_nofile_limit();
    let opts = job.options.clone();
    let mut sh = Shared::new(progress, control, events, ask, opts);
    if job.roots.len() > 1 {
        sh.made_names = Some(Mutex::new(HashMap::new()));
    }
    let sh = Arc::new(sh);
    let start = Instant::now();
    if sh.opts.verify {
        let _ = sh.events.send(EngineEvent::VerifyStarted);
    }
    // Sources that could not be stat'ed (cp: reported, the rest copied, exit 1): failures of
    // this run, so every output lists them and the status says so.
    for (path, message) in &job.missing {
        sh.fail(path, message.clone());
    }
    let census = start_census(&sh, &job.roots);
    copy_all(&sh, &job.roots, census);
    make_links(&sh);
    sh.finalize_unfinished();
    sh.stages.remove_all();
    let copy_dur = start.elapsed();
    if let Ok(mut c) = sh.progress.current.lock() {
        *c = None;
    }
    let (flush_secs, flush_abandoned) = if sh.is_stopped() || sh.opts.sync == SyncMode::None {
        (None, false)
    } else {
        flush_all(&sh)
    };
    let lists = sh.outcomes.take();
    let mismatches = sh.outcomes.mismatches.load(Ordering::SeqCst);
    let verify = sh.opts.verify.then(|| verify_result(&sh, mismatches));
    let fatal = lock(&sh.fatal).clone();
    // A cancel during the flush of a complete copy cancels nothing: every file is in place
    // and the kernel writes the rest back on its own, as with --no-sync.
    let status = if sh.control.cancelled.load(Ordering::SeqCst) && !flush_abandoned {
        ExitStatus::Cancelled
    } else if fatal.is_some() {
        ExitStatus::Fatal
    } else if sh.outcomes.partial(&lists) {
        ExitStatus::Partial
    } else {
        ExitStatus::Success
    };
    let snap = sh.progress.snapshot();
    CopyOutcome {
        bytes_cloned: sh.outcomes.cloned.load(Ordering::SeqCst),
        failures: lists.failures,
        skipped: lists.skipped,
        changed: lists.changed,
        notes: lists.notes,
        fatal,
        // A cancelled flush has no flush time, though the durable speed counts what it did.
        flush_secs: flush_secs.filter(|_| status != ExitStatus::Cancelled),
        sync: sh.opts.sync,
        flush_abandoned,
        verify,
        ..CopyOutcome::measured(status, &snap, copy_dur.as_secs_f64(), flush_secs)
    }
}

/// The census counts the totals ahead of the copy on its own thread (metadata only), so they
/// are known within seconds however long the copy takes. Single files are counted before
/// anything is written (no thread: `None`): their free-space question comes first.
fn start_census(sh: &Arc<Shared>, roots: &[Root]) -> Option<JoinHandle<()>> {
    if !roots.iter().any(|r| r.is_dir) {
        census(sh, roots);
        return None;
    }
    sh.space.open_check(space_budget(sh, roots));
    let csh = sh.clone();
    let roots = roots.to_vec();
    std::thread::Builder::new()
        .name("copyscope-scan".into())
        .spawn(move || census(&csh, &roots))
        .ok()
}

/// The copy itself: the walk queues files for the workers, then every thread is waited for
/// (or, held in the kernel past a cancel's grace, given up); the totals become what the walk
/// met.
fn copy_all(sh: &Arc<Shared>, roots: &[Root], census: Option<JoinHandle<()>>) {
    // Bounded: the copy's walk (which makes directories and queues files) runs ahead of the
    // workers, but not without limit (each queued file holds its directory open).
    let jobs = sh.opts.jobs.max(1);
    let queue = Arc::new(WorkQueue::<Entry>::new(QUEUE_LEN, QUEUE_RUNS, jobs));
    let (workers, ended) = start_workers(sh, &queue, jobs);
    if !workers.is_empty() {
        scan(sh, roots, &queue);
    }
    let abandoned = !workers_ended(sh, &ended);
    if abandoned {
        // A worker is held in the kernel past the grace: its files are given up, and the
        // exit that follows the cancel ends the held thread (see `InFlightFiles::abandon`).
        sh.in_flight.abandon();
        sh.stages.remove_all();
    } else {
        for w in workers {
            if w.join().is_err() {
                sh.fatal("a copy worker crashed".into());
            }
        }
    }
    if let Some(c) = census.filter(|_| !abandoned)
        && c.join().is_err()
    {
        sh.fatal("the scan crashed".into());
    }
    if !sh.is_stopped() {
        // What the copy met is the final word: the tree may have changed since the census.
        let p = &sh.progress;
        p.files_total
            .store(sh.walked_files.load(Ordering::SeqCst), Ordering::SeqCst);
        p.bytes_total
            .store(sh.walked_bytes.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

/// Starts `jobs` workers on `queue`; the receiver's channel closes when all have ended (each
/// holds a sender until it ends). Fewer start when threads run out; none is a fatal error.
fn start_workers(
    sh: &Arc<Shared>,
    queue: &Arc<WorkQueue<Entry>>,
    jobs: usize,
) -> (Vec<JoinHandle<()>>, Receiver<()>) {
    let mut workers = Vec::new();
    let (ended_tx, ended) = std::sync::mpsc::channel::<()>();
    for i in 0..jobs {
        let wsh = sh.clone();
        let q = queue.clone();
        let tx = ended_tx.clone();
        let w = std::thread::Builder::new()
            .name(format!("copyscope-copy-{i}"))
            .spawn(move || {
                // Tells the engine's wait however the worker ends (a panic unwinds through it).
                let _ended = WorkerEnd {
                    tx: Some(tx),
                    nudge: &wsh.control.nudge,
                };
                worker(&wsh, &q, i);
            });
        match w {
            Ok(h) => workers.push(h),
            Err(e) if workers.is_empty() => {
                sh.fatal(format!("cannot start a copy worker: {e}"));
                queue.leave();
            }
            Err(_) => {
                // Fewer workers than asked: the missing ones count as gone.
                for _ in i..jobs {
                    queue.leave();
                }
                break;
            }
        }
    }
    (workers, ended)
}

/// The hard links, made once every file they name is in place.
fn make_links(sh: &Arc<Shared>) {
    for item in sh.hard_links.take_later() {
        if sh.gate().is_ok() {
            super::file::make_link(sh, &item.entry, &item.first);
        }
        item.entry.parent.release(sh);
    }
}

/// Flushes every destination filesystem: the flush's length, or `None` and true when a
/// cancel abandoned it.
fn flush_all(sh: &Shared) -> (Option<f64>, bool) {
    let _ = sh.events.send(EngineEvent::FlushStarted);
    let t = Instant::now();
    let targets = std::mem::take(&mut *lock(&sh.sync_targets));
    for (_, fd) in &targets {
        match super::flush::flush(fd, sh.opts.sync == SyncMode::PerFile, &sh.control) {
            Ok(Flushed::Done) => {}
            Ok(Flushed::Abandoned) => return (None, true),
            Err(e) => sh.fatal(format!("flushing the destination failed: {}", errmsg(e))),
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let _ = sh.events.send(EngineEvent::FlushDone);
    (Some(secs), false)
}

/// What `--verify` found, and how it read the copies back.
fn verify_result(sh: &Shared, mismatches: u64) -> VerifyResult {
    let files = sh.outcomes.verified.load(Ordering::SeqCst) + mismatches;
    let _ = sh
        .events
        .send(EngineEvent::VerifyDone { files, mismatches });
    let mut method = "each file fsynced, its cached pages dropped (posix_fadvise DONTNEED), then read back and compared by BLAKE3 with the source".to_string();
    if sh.verify_on_zfs.load(Ordering::SeqCst) {
        method.push_str("; on ZFS the ARC may still have served the read-back");
    }
    VerifyResult {
        files,
        mismatches,
        method,
    }
}

/// How long a confirmed cancel waits for the workers to stop on their own. A write the
/// kernel is pacing (balance_dirty_pages) cannot be interrupted; with other writers on the
/// same slow disk one sat there 1.4-1.9 s (its kernel stack traced), past the 1 s a cancel
/// must answer in.
const CANCEL_GRACE: Duration = Duration::from_millis(250);
/// How long the wait for the workers sleeps when nothing wakes it: a fallback only, since
/// every worker's end and a cancel wake it ([`Control::cancel`]).
const WORKERS_RECHECK: Duration = Duration::from_secs(1);

/// A worker's end: its sender is dropped (the last one closes the channel), then the
/// engine's wait is woken to look.
struct WorkerEnd<'a> {
    tx: Option<std::sync::mpsc::Sender<()>>,
    nudge: &'a super::nudge::Nudge,
}

impl Drop for WorkerEnd<'_> {
    fn drop(&mut self) {
        drop(self.tx.take());
        self.nudge.wake();
    }
}

/// Waits until every worker has ended (true), or, once the copy is cancelled, at most
/// [`CANCEL_GRACE`] more (false: a worker is still held).
fn workers_ended(sh: &Shared, ended: &Receiver<()>) -> bool {
    let nudge = &sh.control.nudge;
    let mut cancelled_at: Option<Instant> = None;
    loop {
        let seen = nudge.seen();
        if matches!(ended.try_recv(), Err(TryRecvError::Disconnected)) {
            return true;
        }
        if cancelled_at.is_none() && sh.control.cancelled.load(Ordering::SeqCst) {
            cancelled_at = Some(Instant::now());
        }
        let wait = match cancelled_at {
            Some(t) => match CANCEL_GRACE.checked_sub(t.elapsed()) {
                Some(left) => left,
                None => return false,
            },
            None => WORKERS_RECHECK,
        };
        nudge.wait_past(seen, wait);
    }
}

fn worker(sh: &Arc<Shared>, q: &WorkQueue<Entry>, index: usize) {
    let mut buf = vec![0u8; sh.opts.buffer_size.max(4096)];
    while !sh.is_stopped() {
        match q.pop(index) {
            Popped::Item(e) => {
                super::file::copy_regular(sh, &e, &mut buf);
                sh.stop_if_full(&e.parent.dst);
                e.parent.release(sh);
            }
            Popped::Empty => {}
            Popped::Done => break,
        }
    }
    q.leave();
}

/// A file's run in the queue is its destination directory.
impl Grouped for Entry {
    fn group(&self) -> usize {
        Arc::as_ptr(&self.parent) as usize
    }
}

impl CopyOutcome {
    /// The outcome of a run from its counters and times: what every engine (the copy's, a
    /// bench phase's) and a watch start from. The speeds divide the bytes by the copy time
    /// and, with a flush, by the copy and flush time; lists are empty, nothing failed.
    pub fn measured(
        status: ExitStatus,
        counters: &ProgressSnapshot,
        copy_secs: f64,
        flush_secs: Option<f64>,
    ) -> CopyOutcome {
        let rate = |secs: f64| {
            if secs > 0.0 {
                counters.bytes_copied as f64 / secs
            } else {
                0.0
            }
        };
        CopyOutcome {
            status,
            files_copied: counters.files_done,
            bytes_copied: counters.bytes_copied,
            bytes_cloned: 0,
            failures: Vec::new(),
            skipped: Vec::new(),
            changed: Vec::new(),
            notes: Vec::new(),
            fatal: None,
            copy_secs,
            flush_secs,
            to_cache_bps: rate(copy_secs),
            durable_bps: flush_secs.map(|f| rate(copy_secs + f)),
            sync: SyncMode::Syncfs,
            flush_abandoned: false,
            verify: None,
        }
    }

    /// An outcome for a run that never produced one (the engine thread died).
    pub fn crashed(message: &str) -> CopyOutcome {
        CopyOutcome {
            fatal: Some(message.to_string()),
            ..CopyOutcome::measured(ExitStatus::Fatal, &ProgressSnapshot::default(), 0.0, None)
        }
    }
}
