//! The engine proper: a scan thread walks the sources through directory file descriptors
//! (every call is `*at`-relative, so paths deeper than PATH_MAX work) and feeds regular
//! files to copy workers while it creates directories, symlinks and special files itself.
//! Then the honest finish: syncfs (or per-file fsync) and the outcome with both speeds.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use tokio::sync::mpsc::UnboundedSender;

use super::options::{CopyOptions, Dereference, OverwritePolicy, SyncMode};
use super::plan::{CopyJob, Root};
use super::{ConflictAnswer, ConflictAsk, Control, CurrentFile, EngineEvent, Progress};
use crate::exit::ExitStatus;

/// Marker inside every temporary name: `.NAME.copyscope-tmp-XXXXXX` beside the destination.
pub const TEMP_MARKER: &str = ".copyscope-tmp-";

/// One path and what went wrong (or was skipped, or changed) with it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileIssue {
    pub path: PathBuf,
    pub message: String,
}

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
    pub verify: Option<VerifyResult>,
}

/// Starts the engine on its own thread. Every refusal was made by [`CopyJob::plan`];
/// from here on errors are per file (collected) or fatal (disk full: the copy stops).
pub fn spawn_engine(
    job: CopyJob,
    progress: Arc<Progress>,
    control: Arc<Control>,
    events: UnboundedSender<EngineEvent>,
    ask: Option<Arc<dyn ConflictAsk>>,
) -> JoinHandle<CopyOutcome> {
    std::thread::Builder::new()
        .name("copyscope-engine".into())
        .spawn(move || run_engine(job, progress, control, events, ask))
        .unwrap_or_else(|e| panic!("cannot start the copy engine thread: {e}"))
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
}

impl Meta {
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    pub fn from_stat(st: &rfs::Stat) -> Meta {
        Meta {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
            nlink: st.st_nlink as u64,
            uid: st.st_uid as u32,
            gid: st.st_gid as u32,
            rdev: st.st_rdev as u64,
            size: u64::try_from(st.st_size).unwrap_or(0),
            blocks: st.st_blocks as u64,
            atime: (st.st_atime as i64, st.st_atime_nsec as i64),
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
        }
    }

    pub fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }

    /// Bytes this file adds to the total: its allocated size when sparse (holes are not copied).
    pub fn data_size(&self) -> u64 {
        if self.is_sparse() {
            self.blocks.saturating_mul(512)
        } else {
            self.size
        }
    }

    pub fn is_sparse(&self) -> bool {
        self.size > 0 && self.blocks.saturating_mul(512) < self.size
    }
}

/// A directory being copied: both ends open, and a count of children not finished yet,
/// so its mode and mtime are set once, after its last child (a write would change the mtime).
pub(crate) struct DirNode {
    pub src: OwnedFd,
    pub dst: OwnedFd,
    pending: AtomicUsize,
    meta: Option<Meta>,
    finalize: bool,
    parent: Option<Arc<DirNode>>,
    pub src_display: PathBuf,
    pub dst_display: PathBuf,
    pub rel: PathBuf,
    /// copy_file_range cannot clone on this destination filesystem, so it is safe with `--reflink=never`.
    pub cfr_ok: bool,
}

/// A file to copy (queued to a worker) or a special entry (made by the scanner).
pub(crate) struct Entry {
    pub parent: Arc<DirNode>,
    pub src_name: OsString,
    pub dst_name: OsString,
    pub meta: Meta,
    /// Open the source following a symlink (command-line argument, or `-L`).
    pub follow: bool,
}

impl Entry {
    pub fn src_display(&self) -> PathBuf {
        self.parent.src_display.join(&self.src_name)
    }
    pub fn rel(&self) -> PathBuf {
        self.parent.rel.join(&self.src_name)
    }
}

/// A hard link to make once its first name has been copied (`-a`).
struct LinkItem {
    entry: Entry,
    first_dir: Arc<DirNode>,
    first_name: OsString,
}

/// Where the first name of a hard-linked file went: (directory, name).
type FirstName = (Arc<DirNode>, OsString);

/// Policy answers that stick ("Overwrite all", "Skip all").
const ALL_NONE: u8 = 0;
const ALL_OVERWRITE: u8 = 1;
const ALL_SKIP: u8 = 2;

/// State shared by the scanner, the workers and the engine thread.
pub(crate) struct Shared {
    pub progress: Arc<Progress>,
    pub control: Arc<Control>,
    pub events: UnboundedSender<EngineEvent>,
    ask: Option<Arc<dyn ConflictAsk>>,
    pub opts: CopyOptions,
    pub umask: u32,
    pub is_root: bool,
    stop: AtomicBool,
    fatal: Mutex<Option<String>>,
    conflict_all: AtomicU8,
    ask_lock: Mutex<()>,
    failures: Mutex<Vec<FileIssue>>,
    skipped: Mutex<Vec<FileIssue>>,
    changed: Mutex<Vec<FileIssue>>,
    pub verified: AtomicU64,
    pub mismatches: AtomicU64,
    pub cloned: AtomicU64,
    pub big_lane: Mutex<()>,
    pause_announced: AtomicBool,
    links: Mutex<Vec<LinkItem>>,
    link_map: Mutex<HashMap<(u64, u64), FirstName>>,
    sync_targets: Mutex<Vec<(u64, OwnedFd)>>,
    throttle: Mutex<(Option<Instant>, u64)>,
    pub verify_on_zfs: AtomicBool,
}

/// The copy was cancelled or stopped by a fatal error.
#[derive(Debug)]
pub(crate) struct Stopped;

pub(crate) enum Decision {
    Proceed,
    Skip(String),
    Fail(String),
    Stop,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An errno as words, without Rust's " (os error N)" suffix.
pub(crate) fn errmsg(e: Errno) -> String {
    let s = std::io::Error::from_raw_os_error(e.raw_os_error()).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Errors on the destination that will not get better for the next file.
pub(crate) fn is_fatal_dest(e: Errno) -> bool {
    matches!(e, Errno::NOSPC | Errno::DQUOT | Errno::ROFS)
}

pub(crate) fn fatal_message(e: Errno) -> String {
    match e {
        Errno::NOSPC => "the destination is full (No space left on device): copy stopped, the unfinished file was removed".into(),
        Errno::DQUOT => "disk quota exceeded on the destination: copy stopped, the unfinished file was removed".into(),
        Errno::ROFS => "the destination file system is read-only: nothing more can be written".into(),
        other => errmsg(other),
    }
}

impl DirNode {
    fn hold(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    /// One child finished: the last one lets the directory take its final metadata,
    /// then tells its parent (iterative, so deep trees do not recurse).
    pub fn release(self: &Arc<Self>, sh: &Shared) {
        let mut cur = Some(self.clone());
        while let Some(n) = cur {
            if n.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                break;
            }
            if !sh.is_stopped() {
                sh.dir_complete(&n);
            }
            cur = n.parent.clone();
        }
    }
}

impl Shared {
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.control.cancelled.load(Ordering::SeqCst)
    }

    /// Blocks while paused (no I/O is issued); fails once cancelled or stopped.
    pub fn gate(&self) -> Result<(), Stopped> {
        loop {
            if self.is_stopped() {
                return Err(Stopped);
            }
            if self.control.paused.load(Ordering::SeqCst) {
                if !self.pause_announced.swap(true, Ordering::SeqCst) {
                    let _ = self.events.send(EngineEvent::Paused);
                }
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            if self.pause_announced.swap(false, Ordering::SeqCst) {
                let _ = self.events.send(EngineEvent::Resumed);
            }
            return Ok(());
        }
    }

    /// Test hook (`COPYSCOPE_TEST_THROTTLE_BPS`): holds the whole engine to a byte rate.
    pub fn throttle(&self, n: u64) {
        let Some(bps) = self.opts.throttle_bps.filter(|b| *b > 0) else {
            return;
        };
        let due = {
            let mut t = lock(&self.throttle);
            let start = *t.0.get_or_insert_with(Instant::now);
            t.1 += n;
            start + Duration::from_secs_f64(t.1 as f64 / bps as f64)
        };
        while !self.is_stopped() {
            let now = Instant::now();
            if now >= due {
                break;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(20)));
        }
    }

    pub fn add_bytes(&self, rel: &Path, n: u64, done: u64, size: u64) {
        self.progress.bytes_copied.fetch_add(n, Ordering::Relaxed);
        if let Ok(mut c) = self.progress.current.lock() {
            match c.as_mut() {
                Some(cur) if cur.path == rel => cur.done = done,
                _ => {
                    *c = Some(CurrentFile {
                        path: rel.to_path_buf(),
                        size,
                        done,
                    })
                }
            }
        }
    }

    pub fn set_current(&self, rel: &Path, size: u64) {
        if let Ok(mut c) = self.progress.current.lock() {
            *c = Some(CurrentFile {
                path: rel.to_path_buf(),
                size,
                done: 0,
            });
        }
    }

    pub fn fail(&self, path: &Path, error: String) {
        self.progress.files_failed.fetch_add(1, Ordering::Relaxed);
        lock(&self.failures).push(FileIssue {
            path: path.to_path_buf(),
            message: error.clone(),
        });
        let _ = self.events.send(EngineEvent::FileFailed {
            path: path.to_path_buf(),
            error,
        });
    }

    pub fn skip(&self, path: &Path, reason: String) {
        self.progress.files_failed.fetch_add(1, Ordering::Relaxed);
        lock(&self.skipped).push(FileIssue {
            path: path.to_path_buf(),
            message: reason.clone(),
        });
        let _ = self.events.send(EngineEvent::FileSkipped {
            path: path.to_path_buf(),
            reason,
        });
    }

    pub fn changed(&self, path: &Path, detail: String) {
        lock(&self.changed).push(FileIssue {
            path: path.to_path_buf(),
            message: detail.clone(),
        });
        let _ = self.events.send(EngineEvent::FileChanged {
            path: path.to_path_buf(),
            detail,
        });
    }

    /// Stops the whole copy (first fatal error wins the message).
    pub fn fatal(&self, error: String) {
        let mut f = lock(&self.fatal);
        if f.is_none() {
            *f = Some(error.clone());
            self.stop.store(true, Ordering::SeqCst);
            let _ = self.events.send(EngineEvent::Fatal { error });
        }
    }

    /// A destination-side error: fatal when it will hit every file, else this file fails.
    pub fn dest_error(&self, path: &Path, what: &str, e: Errno) {
        if is_fatal_dest(e) {
            self.fatal(fatal_message(e));
        } else {
            self.fail(path, format!("{what}: {}", errmsg(e)));
        }
    }

    pub fn done(&self, path: &Path, bytes: u64) {
        self.progress.files_done.fetch_add(1, Ordering::Relaxed);
        let _ = self.events.send(EngineEvent::FileDone {
            path: path.to_path_buf(),
            bytes,
        });
    }

    /// The conflict policy for an existing destination name.
    pub fn decide(&self, dir: &DirNode, name: &OsStr, src_mtime: (i64, i64)) -> Decision {
        let existing = match rfs::statat(&dir.dst, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) => Meta::from_stat(&s),
            Err(Errno::NOENT) => return Decision::Proceed,
            Err(e) => return Decision::Fail(errmsg(e)),
        };
        if existing.file_type() == FileType::Directory {
            return Decision::Fail(format!(
                "cannot overwrite directory '{}' with non-directory",
                dir.dst_display.join(name).display()
            ));
        }
        match self.opts.overwrite {
            OverwritePolicy::Always => Decision::Proceed,
            OverwritePolicy::Never => {
                Decision::Skip("destination exists (--overwrite=never)".into())
            }
            OverwritePolicy::Update => {
                if src_mtime > existing.mtime {
                    Decision::Proceed
                } else {
                    Decision::Skip(
                        "destination is not older than the source (--overwrite=update)".into(),
                    )
                }
            }
            OverwritePolicy::Ask => {
                let Some(ask) = &self.ask else {
                    return Decision::Proceed;
                };
                let _one_dialog_at_a_time = lock(&self.ask_lock);
                match self.conflict_all.load(Ordering::SeqCst) {
                    ALL_OVERWRITE => return Decision::Proceed,
                    ALL_SKIP => return Decision::Skip("destination exists (skip all)".into()),
                    _ => {}
                }
                if self.is_stopped() {
                    return Decision::Stop;
                }
                match ask.ask(&dir.dst_display.join(name)) {
                    ConflictAnswer::Overwrite => Decision::Proceed,
                    ConflictAnswer::Skip => Decision::Skip("destination exists (skipped)".into()),
                    ConflictAnswer::OverwriteAll => {
                        self.conflict_all.store(ALL_OVERWRITE, Ordering::SeqCst);
                        Decision::Proceed
                    }
                    ConflictAnswer::SkipAll => {
                        self.conflict_all.store(ALL_SKIP, Ordering::SeqCst);
                        Decision::Skip("destination exists (skip all)".into())
                    }
                    ConflictAnswer::Cancel => {
                        self.control.cancelled.store(true, Ordering::SeqCst);
                        Decision::Stop
                    }
                }
            }
        }
    }

    /// A directory's last child is done: give it its final metadata (when we made it, or
    /// with -p) and, with `--fsync`, make its entries durable.
    fn dir_complete(&self, n: &DirNode) {
        let Some(m) = n.meta else { return };
        if n.finalize {
            self.finalize_dir(n, &m);
        }
        if self.opts.sync == SyncMode::PerFile {
            let t = Instant::now();
            let r = rfs::fsync(&n.dst);
            self.progress
                .write_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            if let Err(e) = r {
                self.dest_error(&n.dst_display, "fsync of the directory failed", e);
            }
        }
    }

    fn finalize_dir(&self, n: &DirNode, m: &Meta) {
        let path = &n.dst_display;
        if self.opts.preserve_owner
            && let Err(e) = rfs::fchown(
                &n.dst,
                Some(rfs::Uid::from_raw(m.uid)),
                Some(rfs::Gid::from_raw(m.gid)),
            )
            && e != Errno::PERM
        {
            self.fail(path, format!("cannot preserve ownership: {}", errmsg(e)));
        }
        let mode = if self.opts.preserve_mode_time {
            m.mode & 0o7777
        } else {
            0o777 & !self.umask
        };
        if let Err(e) = rfs::fchmod(&n.dst, Mode::from_raw_mode(mode)) {
            self.fail(
                path,
                format!("cannot set the directory mode: {}", errmsg(e)),
            );
        }
        if self.opts.preserve_mode_time
            && let Err(e) = rfs::futimens(&n.dst, &timestamps(m))
        {
            self.fail(
                path,
                format!("cannot set the directory time: {}", errmsg(e)),
            );
        }
    }

    fn add_sync_target(&self, dev: u64, fd: &OwnedFd) {
        let mut t = lock(&self.sync_targets);
        if t.iter().any(|(d, _)| *d == dev) {
            return;
        }
        if let Ok(dup) = fd.try_clone() {
            t.push((dev, dup));
        }
    }
}

pub(crate) fn timestamps(m: &Meta) -> rfs::Timestamps {
    rfs::Timestamps {
        last_access: rfs::Timespec {
            tv_sec: m.atime.0,
            tv_nsec: m.atime.1 as _,
        },
        last_modification: rfs::Timespec {
            tv_sec: m.mtime.0,
            tv_nsec: m.mtime.1 as _,
        },
    }
}

/// copy_file_range can share blocks (reflink) on btrfs, XFS, ZFS ≥ 2.2 and NFS, which would
/// hide the real data path; it is used only where the destination cannot clone.
fn cfr_cannot_clone(fd: &OwnedFd) -> bool {
    const EXT4_SUPER_MAGIC: i64 = 0xEF53;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    match rfs::fstatfs(fd) {
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        Ok(s) => matches!(s.f_type as i64, EXT4_SUPER_MAGIC | TMPFS_MAGIC),
        Err(_) => false,
    }
}

pub(crate) fn is_zfs(fd: &OwnedFd) -> bool {
    const ZFS_SUPER_MAGIC: i64 = 0x2fc1_2fc1;
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    rfs::fstatfs(fd).is_ok_and(|s| s.f_type as i64 == ZFS_SUPER_MAGIC)
}

/// Directory entry names, sorted so the copy order is predictable.
fn read_names(fd: &OwnedFd) -> Result<Vec<OsString>, Errno> {
    use std::os::unix::ffi::OsStrExt;
    let mut dir = rfs::Dir::read_from(fd)?;
    let mut names = Vec::new();
    while let Some(ent) = dir.read() {
        let ent = ent?;
        let b = ent.file_name().to_bytes();
        if b == b"." || b == b".." {
            continue;
        }
        names.push(OsStr::from_bytes(b).to_os_string());
    }
    names.sort_unstable();
    Ok(names)
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

fn current_umask() -> u32 {
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.bits()
}

fn run_engine(
    job: CopyJob,
    progress: Arc<Progress>,
    control: Arc<Control>,
    events: UnboundedSender<EngineEvent>,
    ask: Option<Arc<dyn ConflictAsk>>,
) -> CopyOutcome {
    raise_nofile_limit();
    let opts = job.options.clone();
    let sh = Arc::new(Shared {
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
        failures: Mutex::new(Vec::new()),
        skipped: Mutex::new(Vec::new()),
        changed: Mutex::new(Vec::new()),
        verified: AtomicU64::new(0),
        mismatches: AtomicU64::new(0),
        cloned: AtomicU64::new(0),
        big_lane: Mutex::new(()),
        pause_announced: AtomicBool::new(false),
        links: Mutex::new(Vec::new()),
        link_map: Mutex::new(HashMap::new()),
        sync_targets: Mutex::new(Vec::new()),
        throttle: Mutex::new((None, 0)),
        verify_on_zfs: AtomicBool::new(false),
        opts,
    });
    let start = Instant::now();
    if sh.opts.verify {
        let _ = sh.events.send(EngineEvent::VerifyStarted);
    }

    // Bounded: the scan runs ahead of the copy, but not without limit (each queued file
    // holds its directory open).
    let (tx, rx) = sync_channel::<Entry>(512);
    let rx = Arc::new(Mutex::new(rx));
    let mut workers = Vec::new();
    for i in 0..sh.opts.jobs.max(1) {
        let wsh = sh.clone();
        let rx = rx.clone();
        let w = std::thread::Builder::new()
            .name(format!("copyscope-copy-{i}"))
            .spawn(move || worker(&wsh, &rx));
        match w {
            Ok(h) => workers.push(h),
            Err(e) if workers.is_empty() => {
                sh.fatal(format!("cannot start a copy worker: {e}"));
            }
            Err(_) => break,
        }
    }
    drop(rx);
    if !workers.is_empty() {
        scan(&sh, &job.roots, tx);
    }
    for w in workers {
        if w.join().is_err() {
            sh.fatal("a copy worker crashed".into());
        }
    }
    let links = std::mem::take(&mut *lock(&sh.links));
    for item in links {
        if sh.gate().is_ok() {
            super::file::make_link(&sh, &item.entry, &item.first_dir, &item.first_name);
        }
        item.entry.parent.release(&sh);
    }
    lock(&sh.link_map).clear();
    let copy_dur = start.elapsed();
    if let Ok(mut c) = sh.progress.current.lock() {
        *c = None;
    }

    let finished = !sh.is_stopped();
    let mut flush_secs = None;
    if finished && sh.opts.sync != SyncMode::None {
        let _ = sh.events.send(EngineEvent::FlushStarted);
        let t = Instant::now();
        let targets = std::mem::take(&mut *lock(&sh.sync_targets));
        for (_, fd) in &targets {
            let r = match sh.opts.sync {
                SyncMode::PerFile => rfs::fsync(fd),
                _ => rfs::syncfs(fd),
            };
            if let Err(e) = r {
                sh.fatal(format!("flushing the destination failed: {}", errmsg(e)));
            }
        }
        flush_secs = Some(t.elapsed().as_secs_f64());
        let _ = sh.events.send(EngineEvent::FlushDone);
    }

    let failures = std::mem::take(&mut *lock(&sh.failures));
    let mismatches = sh.mismatches.load(Ordering::SeqCst);
    let verify = sh.opts.verify.then(|| {
        let files = sh.verified.load(Ordering::SeqCst) + mismatches;
        let _ = sh.events.send(EngineEvent::VerifyDone { files, mismatches });
        let mut method = "each file fsynced, its cached pages dropped (posix_fadvise DONTNEED), then read back and compared by BLAKE3 with the source".to_string();
        if sh.verify_on_zfs.load(Ordering::SeqCst) {
            method.push_str("; on ZFS the ARC may still have served the read-back");
        }
        VerifyResult {
            files,
            mismatches,
            method,
        }
    });
    let fatal = lock(&sh.fatal).clone();
    let status = if sh.control.cancelled.load(Ordering::SeqCst) {
        ExitStatus::Cancelled
    } else if fatal.is_some() {
        ExitStatus::Fatal
    } else if !failures.is_empty() || mismatches > 0 {
        ExitStatus::Partial
    } else {
        ExitStatus::Success
    };
    let snap = sh.progress.snapshot();
    let copy_secs = copy_dur.as_secs_f64();
    let rate = |secs: f64| {
        if secs > 0.0 {
            snap.bytes_copied as f64 / secs
        } else {
            0.0
        }
    };
    CopyOutcome {
        status,
        files_copied: snap.files_done,
        bytes_copied: snap.bytes_copied,
        bytes_cloned: sh.cloned.load(Ordering::SeqCst),
        failures,
        skipped: std::mem::take(&mut *lock(&sh.skipped)),
        changed: std::mem::take(&mut *lock(&sh.changed)),
        fatal,
        copy_secs,
        flush_secs: flush_secs.filter(|_| status != ExitStatus::Cancelled),
        to_cache_bps: rate(copy_secs),
        durable_bps: flush_secs.map(|f| rate(copy_secs + f)),
        sync: sh.opts.sync,
        verify,
    }
}

fn worker(sh: &Arc<Shared>, rx: &Arc<Mutex<Receiver<Entry>>>) {
    let mut buf = vec![0u8; sh.opts.buffer_size.max(4096)];
    loop {
        if sh.is_stopped() {
            return;
        }
        let item = lock(rx).recv_timeout(Duration::from_millis(100));
        match item {
            Ok(e) => {
                super::file::copy_regular(sh, &e, &mut buf);
                e.parent.release(sh);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn open_dir(path: &Path, follow: bool) -> Result<OwnedFd, Errno> {
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::open(path, flags, Mode::empty())
}

fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(pp) if !pp.as_os_str().is_empty() => pp.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The parent as the user wrote it ("" for a bare name, so events say "file", not "./file").
fn display_parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Walks every root; creates directories and specials; queues regular files.
fn scan(sh: &Arc<Shared>, roots: &[Root], tx: SyncSender<Entry>) {
    for root in roots {
        if sh.gate().is_err() {
            break;
        }
        let ok = if root.is_dir {
            scan_tree(sh, root, &tx)
        } else {
            scan_file_root(sh, root, &tx)
        };
        if !ok {
            break;
        }
    }
    drop(tx);
    if !sh.is_stopped() {
        sh.progress.scan_done.store(true, Ordering::SeqCst);
        let s = sh.progress.snapshot();
        let _ = sh.events.send(EngineEvent::ScanDone {
            files: s.files_total,
            bytes: s.bytes_total,
        });
    }
}

/// A file (or symlink, FIFO, ...) named on the command line. Returns false when the
/// workers are gone (stopped).
fn scan_file_root(sh: &Arc<Shared>, root: &Root, tx: &SyncSender<Entry>) -> bool {
    let (Some(src_name), Some(dst_name)) = (root.source.file_name(), root.dest.file_name()) else {
        sh.fail(&root.source, "cannot copy this path (no file name)".into());
        return true;
    };
    let src_parent = parent_of(&root.source);
    let dst_parent = parent_of(&root.dest);
    let path_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let src = match rfs::open(&src_parent, path_flags, Mode::empty()) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let dst = match rfs::open(&dst_parent, path_flags, Mode::empty()) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(&root.dest, errmsg(e));
            return true;
        }
    };
    if let Ok(rd) = open_dir(&dst_parent, true)
        && let Ok(st) = rfs::fstat(&rd)
    {
        sh.add_sync_target(Meta::from_stat(&st).dev, &rd);
    }
    let follow = sh.opts.dereference != Dereference::Never;
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let meta = match rfs::statat(&src, src_name, flags) {
        Ok(s) => Meta::from_stat(&s),
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let cfr_ok = cfr_cannot_clone(&dst);
    let node = Arc::new(DirNode {
        src,
        dst,
        pending: AtomicUsize::new(1),
        meta: None,
        finalize: false,
        parent: None,
        src_display: display_parent(&root.source),
        dst_display: display_parent(&root.dest),
        rel: PathBuf::new(),
        cfr_ok,
    });
    let entry = Entry {
        parent: node.clone(),
        src_name: src_name.to_os_string(),
        dst_name: dst_name.to_os_string(),
        meta,
        follow,
    };
    let alive = dispatch(sh, entry, tx);
    node.release(sh);
    alive
}

/// Counts an entry and routes it: regular files to the workers, the rest made here.
/// Returns false when the workers are gone.
fn dispatch(sh: &Arc<Shared>, entry: Entry, tx: &SyncSender<Entry>) -> bool {
    let m = entry.meta;
    sh.progress.files_total.fetch_add(1, Ordering::Relaxed);
    match m.file_type() {
        FileType::RegularFile => {
            sh.progress
                .bytes_total
                .fetch_add(m.data_size(), Ordering::Relaxed);
            if sh.opts.hard_links && m.nlink > 1 {
                let mut map = lock(&sh.link_map);
                if let Some((first_dir, first_name)) = map.get(&(m.dev, m.ino)) {
                    entry.parent.hold();
                    lock(&sh.links).push(LinkItem {
                        first_dir: first_dir.clone(),
                        first_name: first_name.clone(),
                        entry,
                    });
                    return true;
                }
                map.insert(
                    (m.dev, m.ino),
                    (entry.parent.clone(), entry.dst_name.clone()),
                );
            }
            entry.parent.hold();
            let parent = entry.parent.clone();
            if tx.send(entry).is_err() {
                parent.release(sh);
                return false;
            }
            true
        }
        _ => {
            super::file::copy_special(sh, &entry);
            true
        }
    }
}

struct Frame {
    node: Arc<DirNode>,
    names: Vec<OsString>,
    next: usize,
}

/// A directory named on the command line: depth-first, one frame per open directory.
fn scan_tree(sh: &Arc<Shared>, root: &Root, tx: &SyncSender<Entry>) -> bool {
    let follow_root = sh.opts.dereference != Dereference::Never;
    let src = match open_dir(&root.source, follow_root) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let smeta = match rfs::fstat(&src) {
        Ok(s) => Meta::from_stat(&s),
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let mut created = false;
    if !root.dest_exists {
        match rfs::mkdir(&root.dest, Mode::from_raw_mode(0o700)) {
            Ok(()) => created = true,
            Err(Errno::EXIST) if root.dest.is_dir() => {}
            Err(e) => {
                sh.dest_error(&root.dest, "cannot create directory", e);
                return !sh.is_stopped();
            }
        }
    }
    let dst = match open_dir(&root.dest, true) {
        Ok(f) => f,
        Err(e) => {
            sh.dest_error(&root.dest, "cannot open directory", e);
            return !sh.is_stopped();
        }
    };
    if let Ok(st) = rfs::fstat(&dst) {
        sh.add_sync_target(Meta::from_stat(&st).dev, &dst);
    }
    let names = match read_names(&src) {
        Ok(n) => n,
        Err(e) => {
            sh.fail(
                &root.source,
                format!("cannot read directory: {}", errmsg(e)),
            );
            Vec::new()
        }
    };
    let rel = root
        .source
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| root.source.clone());
    let cfr_ok = cfr_cannot_clone(&dst);
    let node = Arc::new(DirNode {
        src,
        dst,
        pending: AtomicUsize::new(1),
        meta: Some(smeta),
        finalize: created || sh.opts.preserve_owner,
        parent: None,
        src_display: root.source.clone(),
        dst_display: root.dest.clone(),
        rel,
        cfr_ok,
    });
    let mut stack = vec![Frame {
        node,
        names,
        next: 0,
    }];
    let follow_all = sh.opts.dereference == Dereference::Always;
    let stat_flags = if follow_all {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    while let Some(top) = stack.last_mut() {
        if sh.gate().is_err() {
            return false;
        }
        if top.next >= top.names.len() {
            if let Some(f) = stack.pop() {
                f.node.release(sh);
            }
            continue;
        }
        let name = top.names[top.next].clone();
        top.next += 1;
        let node = top.node.clone();
        let path = node.src_display.join(&name);
        let meta = match rfs::statat(&node.src, &name, stat_flags) {
            Ok(s) => Meta::from_stat(&s),
            Err(Errno::LOOP) => {
                sh.progress.files_total.fetch_add(1, Ordering::Relaxed);
                sh.fail(
                    &path,
                    "symlink loop (too many levels of symbolic links)".into(),
                );
                continue;
            }
            Err(Errno::NOENT) if !follow_all => {
                sh.progress.files_total.fetch_add(1, Ordering::Relaxed);
                sh.fail(&path, "vanished before it could be copied".into());
                continue;
            }
            Err(e) => {
                sh.progress.files_total.fetch_add(1, Ordering::Relaxed);
                sh.fail(&path, errmsg(e));
                continue;
            }
        };
        if meta.file_type() != FileType::Directory {
            let entry = Entry {
                parent: node,
                dst_name: name.clone(),
                src_name: name,
                meta,
                follow: follow_all,
            };
            if !dispatch(sh, entry, tx) {
                return false;
            }
            continue;
        }
        if let Some(child) = enter_dir(sh, &node, &name, &path, meta, follow_all) {
            let names = match read_names(&child.src) {
                Ok(n) => n,
                Err(e) => {
                    sh.fail(&path, format!("cannot read directory: {}", errmsg(e)));
                    Vec::new()
                }
            };
            stack.push(Frame {
                node: child,
                names,
                next: 0,
            });
        } else if sh.is_stopped() {
            return false;
        }
    }
    true
}

/// Opens a source subdirectory and makes (or merges into) its destination twin.
fn enter_dir(
    sh: &Arc<Shared>,
    node: &Arc<DirNode>,
    name: &OsStr,
    path: &Path,
    meta: Meta,
    follow_all: bool,
) -> Option<Arc<DirNode>> {
    if follow_all {
        let mut a = Some(node.clone());
        while let Some(n) = a {
            if n.meta
                .is_some_and(|m| m.dev == meta.dev && m.ino == meta.ino)
            {
                sh.fail(
                    path,
                    "symlink loop: this directory is already being copied higher up".into(),
                );
                return None;
            }
            a = n.parent.clone();
        }
    }
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow_all {
        flags |= OFlags::NOFOLLOW;
    }
    let src = match rfs::openat(&node.src, name, flags, Mode::empty()) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(path, format!("cannot open directory: {}", errmsg(e)));
            return None;
        }
    };
    let dst_path = node.dst_display.join(name);
    let created = match rfs::mkdirat(&node.dst, name, Mode::from_raw_mode(0o700)) {
        Ok(()) => true,
        Err(Errno::EXIST) => match rfs::statat(&node.dst, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) if Meta::from_stat(&s).file_type() == FileType::Directory => false,
            _ => {
                sh.fail(
                    path,
                    format!(
                        "cannot overwrite non-directory '{}' with a directory",
                        dst_path.display()
                    ),
                );
                return None;
            }
        },
        Err(e) => {
            sh.dest_error(&dst_path, "cannot create directory", e);
            return None;
        }
    };
    let dst = match rfs::openat(
        &node.dst,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(f) => f,
        Err(e) => {
            sh.dest_error(&dst_path, "cannot open directory", e);
            return None;
        }
    };
    node.hold();
    Some(Arc::new(DirNode {
        src,
        dst,
        pending: AtomicUsize::new(1),
        meta: Some(meta),
        finalize: created || sh.opts.preserve_owner,
        parent: Some(node.clone()),
        src_display: path.to_path_buf(),
        dst_display: dst_path,
        rel: node.rel.join(name),
        cfr_ok: node.cfr_ok,
    }))
}

impl CopyOutcome {
    /// An outcome for a run that never produced one (the engine thread died).
    pub fn crashed(message: &str) -> CopyOutcome {
        CopyOutcome {
            status: ExitStatus::Fatal,
            files_copied: 0,
            bytes_copied: 0,
            bytes_cloned: 0,
            failures: Vec::new(),
            skipped: Vec::new(),
            changed: Vec::new(),
            fatal: Some(message.to_string()),
            copy_secs: 0.0,
            flush_secs: None,
            to_cache_bps: 0.0,
            durable_bps: None,
            sync: SyncMode::Syncfs,
            verify: None,
        }
    }
}
