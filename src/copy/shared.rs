//! State shared by the scanner, the copy workers and the engine thread: progress, the
//! per-file outcome lists, the directory nodes that carry their final metadata, and the
//! small helpers (errno words, timestamps) every part of the engine uses.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rustix::fs::{self as rfs, FileType, Mode};
use rustix::io::Errno;

use super::in_flight::InFlightFiles;
use super::links::HardLinks;
use super::nofollow::NodeErr;
use super::options::{CopyOptions, SyncMode};
use super::outcomes::{IssueKind, Outcomes};
use super::rate::{PacedClock, RUN_AHEAD, RateSchedules};
use super::space::SpaceGate;
use super::stage::{LazyStage, MadeDirs, StageSet, TempDir};
use super::{ConflictAsk, Control, CurrentFile, EngineEvent, EventSender, Progress};

/// Marker inside every temporary name: `.NAME.copyscope-tmp-XXXXXX` beside the destination.
pub const TEMP_MARKER: &str = ".copyscope-tmp-";

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
    /// Set by the kernel on every change of content or inode; no user can set it back.
    pub ctime: (i64, i64),
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
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }

    /// A regular file whose metadata the worker reads from the opened source (see
    /// `Entry::meta_later`): the type only, every other field zero.
    pub fn regular_unknown() -> Meta {
        Meta {
            dev: 0,
            ino: 0,
            mode: FileType::RegularFile.as_raw_mode(),
            nlink: 1,
            uid: 0,
            gid: 0,
            rdev: 0,
            size: 0,
            blocks: 0,
            atime: (0, 0),
            mtime: (0, 0),
            ctime: (0, 0),
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
    pub(crate) pending: AtomicUsize,
    pub(crate) meta: Option<Meta>,
    pub(crate) finalize: bool,
    /// Made by this run: it held nothing before, so no name in it can conflict.
    pub(crate) fresh: bool,
    /// Made with its final mode already, so `finalize_dir` does not set it.
    pub(crate) mode_set: bool,
    pub(crate) parent: Option<Arc<DirNode>>,
    pub src_display: PathBuf,
    pub dst_display: PathBuf,
    pub rel: PathBuf,
    /// copy_file_range cannot clone on this destination filesystem, so it is safe with `--reflink=never`.
    pub cfr_ok: bool,
    /// The source is a disk (or tmpfs) file system, whose sizes are true: an empty file there
    /// has no data to read. Pseudo file systems (/proc, /sys) say 0 for files that have some.
    pub src_sizes_true: bool,
    /// New files here start unnamed (`O_TMPFILE`) until the file system says it cannot;
    /// never on ZFS, where linking an unnamed file waits for a whole txg sync.
    pub tmpfile_ok: AtomicBool,
    /// Only we can make or rename names here: temporaries are made in the directory itself.
    /// Else they go to its staging directory (`stage.rs`).
    pub private: bool,
    pub(crate) stage: LazyStage,
}

/// A file to copy (queued to a worker) or a special entry (made by the scanner).
pub(crate) struct Entry {
    pub parent: Arc<DirNode>,
    pub src_name: OsString,
    pub dst_name: OsString,
    pub meta: Meta,
    /// Open the source following a symlink (command-line argument, or `-L`).
    pub follow: bool,
    /// The first name of a hard-linked file (`-a`): the inode of its copy, once renamed
    /// into place, so its other names link to that copy and nothing else.
    pub made: Option<Arc<OnceLock<u64>>>,
    /// Several sources meet at this destination name: the kind of the earlier one (cp
    /// refuses to overwrite what it just made).
    pub clash: Option<FileType>,
    /// Queued by `d_type` without a stat (a regular file in a directory this run made):
    /// `meta` holds only the type; the worker's fstat of the source supplies the rest and
    /// counts its bytes into the copy's walked total.
    pub meta_later: bool,
}

impl Entry {
    pub fn src_display(&self) -> PathBuf {
        joined(&self.parent.src_display, &self.src_name)
    }
    pub fn rel(&self) -> PathBuf {
        joined(&self.parent.rel, &self.src_name)
    }
}

/// `dir.join(name)` for one name, allocated once at its final length (`join` copies `dir`
/// and grows it for the name: two allocations per file, twice per file).
fn joined(dir: &Path, name: &OsStr) -> PathBuf {
    let mut p = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    p.push(dir);
    p.push(name);
    p
}

/// A name in a destination directory: (directory dev, directory inode, name).
pub(crate) type NameKey = (u64, u64, OsString);

/// State shared by the scanner, the workers and the engine thread.
pub(crate) struct Shared {
    pub(crate) progress: Arc<Progress>,
    pub control: Arc<Control>,
    pub events: EventSender,
    pub(crate) ask: Option<Arc<dyn ConflictAsk>>,
    pub opts: CopyOptions,
    pub umask: u32,
    pub is_root: bool,
    pub(crate) stop: AtomicBool,
    pub(crate) fatal: Mutex<Option<String>>,
    pub(crate) conflict_all: AtomicU8,
    pub(crate) ask_lock: Mutex<()>,
    pub(crate) outcomes: Outcomes,
    pub big_lane: Mutex<()>,
    pub(crate) pause_announced: AtomicBool,
    pub(crate) space: SpaceGate,
    /// Entries and bytes the copy's own walk met (the census's totals, as the copy saw them).
    pub(crate) walked_files: AtomicU64,
    pub(crate) walked_bytes: AtomicU64,
    pub(crate) hard_links: HardLinks,
    pub(crate) sync_targets: Mutex<Vec<(u64, OwnedFd)>>,
    pub(crate) rates: RateSchedules,
    /// `--exclude`, compiled.
    pub(crate) exclude: Option<super::filter::Exclude>,
    pub verify_on_zfs: AtomicBool,
    /// Names made by this run (destination directory dev, ino, name), kept only when
    /// there are several sources: cp refuses to overwrite them.
    pub(crate) made_names: Option<Mutex<HashMap<NameKey, FileType>>>,
    /// `linkat(fd, "", AT_EMPTY_PATH)` works here (root, or Linux ≥ 6.10 for the file's
    /// opener); else unnamed files are linked through their /proc/self/fd link.
    pub(crate) flink_empty_path: AtomicBool,
    /// Directories waiting for their final metadata (keyed by node address).
    pub(crate) unfinished: Mutex<HashMap<usize, Arc<DirNode>>>,
    /// The destination files being written, for a cancel that cannot wait for their workers.
    pub(crate) in_flight: InFlightFiles,
    /// The directories this run made, never accepted as a staging directory.
    pub(crate) made_dirs: MadeDirs,
    /// Every staging directory made, removed at the engine's end whatever happened.
    pub(crate) stages: StageSet,
}

/// The copy was cancelled or stopped by a fatal error.
#[derive(Debug)]
pub(crate) struct Stopped;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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

/// Errors on the destination that will not get better for the next file. A full disk is
/// not one of them: the file that did not fit fails, the smaller ones after it may fit
/// (as cp goes on), and [`Shared::stop_if_full`] stops the copy once nothing can.
pub(crate) fn is_fatal_dest(e: Errno) -> bool {
    matches!(e, Errno::DQUOT | Errno::ROFS)
}

/// Errors that end the data path of a file (the write side), whatever the call.
pub(crate) fn ends_write(e: Errno) -> bool {
    is_fatal_dest(e) || matches!(e, Errno::NOSPC | Errno::FBIG)
}

pub(crate) fn fatal_message(e: Errno) -> String {
    match e {
        Errno::NOSPC => "the destination is full (No space left on device): copy stopped, no file is left unfinished".into(),
        Errno::DQUOT => "disk quota exceeded on the destination: copy stopped, the unfinished file was removed".into(),
        Errno::ROFS => "the destination file system is read-only: nothing more can be written".into(),
        other => errmsg(other),
    }
}

impl DirNode {
    /// Where this directory's temporaries are made: here when it is private, else in its
    /// staging directory (made now if it has none yet).
    pub(crate) fn temp_dir(&self, sh: &Shared) -> Result<TempDir, NodeErr> {
        if self.private {
            return Ok(TempDir::Here);
        }
        let s = self
            .stage
            .get(self.dst.as_fd(), &sh.made_dirs, &sh.stages)?;
        Ok(TempDir::Staged(s))
    }

    pub(crate) fn hold(&self) {
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
            n.stage.remove();
            if !sh.is_stopped() {
                sh.dir_complete(&n);
                lock(&sh.unfinished).remove(&(Arc::as_ptr(&n) as usize));
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
            if self.space.held() {
                std::thread::sleep(Duration::from_millis(20));
                continue;
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

    /// Before a file of `len` bytes is written: while the census has not yet compared the
    /// totals with the free space, a file that would take the copy past most of the space
    /// free at the start waits for that comparison (and its question), so a copy that cannot
    /// fit is asked about before it fills the disk, while one that fits never waits.
    pub fn await_space_check(&self, len: u64) -> Result<(), Stopped> {
        if !self.space.claim_must_wait(len) {
            return Ok(());
        }
        while self.space.check_pending() {
            if self.is_stopped() {
                return Err(Stopped);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.gate()
    }

    /// Called after every chunk written: `--bwlimit` pacing, then the test throttle.
    pub fn throttle(&self, n: u64) {
        if let Some(bps) = self.opts.bwlimit_bps.filter(|b| *b > 0) {
            self.pace(n, bps);
        } else if self.opts.pace_auto {
            let bps = self.progress.pace_bps.load(Ordering::Relaxed);
            if bps > 0 {
                self.pace(n, bps);
            }
        }
        self.test_throttle(n);
    }

    /// `--bwlimit` / `--pace auto`: sleeps until the shared schedule lets the writer go on,
    /// once the writer is more than [`RUN_AHEAD`] ahead of it.
    fn pace(&self, n: u64, bps: u64) {
        let now = Instant::now();
        let due = self.rates.limit_due(n, bps, now);
        if due <= now + RUN_AHEAD {
            return;
        }
        self.bank_paced(|c, now| c.start(now, due));
        self.sleep_until(due);
        self.bank_paced(|c, now| c.end(now));
    }

    /// Counts the time during which any writer sleeps for `--bwlimit` before its due time
    /// (overlapping sleeps of several workers once): `Progress::paced_ns`, the budget's "rate
    /// limit".
    fn bank_paced(&self, event: impl FnOnce(&mut PacedClock, Instant) -> u64) {
        let p = &self.progress;
        let ns = event(&mut lock(&p.pacers), Instant::now());
        p.paced_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// `--exclude`: whether an entry of a source directory (`rel` under the root's `root_rel`)
    /// is left out.
    pub(crate) fn excluded(&self, root_rel: &Path, rel: &Path, is_dir: bool) -> bool {
        let Some(ex) = &self.exclude else {
            return false;
        };
        rel.strip_prefix(root_rel)
            .is_ok_and(|r| ex.excludes(r, is_dir))
    }

    /// Test hook (`COPYSCOPE_TEST_THROTTLE_BPS`): holds the whole engine to a byte rate.
    fn test_throttle(&self, n: u64) {
        let Some(bps) = self.opts.throttle_bps.filter(|b| *b > 0) else {
            return;
        };
        let due = self.rates.test_due(n, bps, Instant::now());
        self.sleep_until(due);
    }

    fn sleep_until(&self, due: Instant) {
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
                // Compared as bytes: `Path ==` walks components, on every chunk of every file.
                Some(cur) if cur.path.as_os_str() == rel.as_os_str() => cur.done = done,
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

    /// The file a worker starts: written into the previous one's path buffer, so a tree of
    /// small files allocates no path here.
    pub fn set_current(&self, rel: &Path, size: u64) {
        if let Ok(mut c) = self.progress.current.lock() {
            match c.as_mut() {
                Some(cur) => {
                    cur.path.as_mut_os_string().clear();
                    cur.path.push(rel);
                    (cur.size, cur.done) = (size, 0);
                }
                None => {
                    *c = Some(CurrentFile {
                        path: rel.to_path_buf(),
                        size,
                        done: 0,
                    })
                }
            }
        }
    }

    pub fn fail(&self, path: &Path, error: String) {
        self.progress.files_failed.fetch_add(1, Ordering::Relaxed);
        self.outcomes.record(IssueKind::Failed, path, &error);
        let _ = self.events.send(EngineEvent::FileFailed {
            path: path.to_path_buf(),
            error,
        });
    }

    pub fn skip(&self, path: &Path, reason: String) {
        self.progress.files_failed.fetch_add(1, Ordering::Relaxed);
        self.outcomes.record(IssueKind::Skipped, path, &reason);
        let _ = self.events.send(EngineEvent::FileSkipped {
            path: path.to_path_buf(),
            reason,
        });
    }

    /// `-p` could not give `path` its source's owner (EPERM). As root that is cp's "failed to
    /// preserve ownership": said, and the copy exits 1 (the file is kept, without set-id bits).
    /// Any other user cannot give files away: cp says nothing then, and neither does this.
    pub fn owner_unkept(&self, path: &Path) {
        if !self.is_root {
            return;
        }
        self.outcomes.owners_unkept.fetch_add(1, Ordering::Relaxed);
        self.note(
            path,
            "failed to preserve ownership: Operation not permitted (kept without set-id bits)"
                .to_string(),
        );
    }

    /// A file copied with a caveat (not a failure).
    pub fn note(&self, path: &Path, note: String) {
        self.outcomes.record(IssueKind::Note, path, &note);
        let _ = self.events.send(EngineEvent::FileNote {
            path: path.to_path_buf(),
            note,
        });
    }

    pub fn changed(&self, path: &Path, detail: String) {
        self.outcomes.record(IssueKind::Changed, path, &detail);
        let _ = self.events.send(EngineEvent::FileChanged {
            path: path.to_path_buf(),
            detail,
        });
    }

    /// A source directory's twin was made (for `-v` and the JSON stream).
    pub fn dir_created(&self, path: &Path) {
        let _ = self.events.send(EngineEvent::DirCreated {
            path: path.to_path_buf(),
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
        } else if e == Errno::NOSPC {
            self.space.mark_out_of_space();
            self.fail(
                path,
                format!("{what}: No space left on device; its unfinished copy was removed"),
            );
        } else {
            self.fail(path, format!("{what}: {}", errmsg(e)));
        }
    }

    /// After an entry in `dir` failed for want of space: once the temporary of the failed
    /// file is gone, a destination with (next to) no space left is a strike; the second
    /// strike in a row stops the copy, so a full disk ends with one clear message instead
    /// of a failure per remaining file, while a copy whose last file did not fit just
    /// reports that file.
    pub(crate) fn stop_if_full(&self, dir: &OwnedFd) {
        if !self.space.take_out_of_space() {
            return;
        }
        let Ok(v) = rfs::fstatvfs(dir) else { return };
        let blocks = if self.is_root { v.f_bfree } else { v.f_bavail };
        if self.space.full_strike(blocks.saturating_mul(v.f_frsize)) {
            self.fatal(fatal_message(Errno::NOSPC));
        }
    }

    /// A file is done: its path moves into the event.
    pub fn done(&self, path: PathBuf, bytes: u64) {
        self.progress.files_done.fetch_add(1, Ordering::Relaxed);
        let _ = self.events.send(EngineEvent::FileDone { path, bytes });
    }

    /// A directory's last child is done: give it its final metadata (when we made it, or
    /// with -p) and, with `--fsync`, make its entries durable.
    pub(crate) fn dir_complete(&self, n: &DirNode) {
        let Some(m) = n.meta else { return };
        if n.finalize {
            self.finalize_dir(n, &m, true);
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

    /// The mode a directory ends with: the source's when modes are kept (the default); else
    /// a new one gets cp --no-preserve=mode's and one that existed keeps its own (None).
    pub(crate) fn dir_mode(&self, m: &Meta, fresh: bool) -> Option<u32> {
        (fresh || self.opts.preserve_mode_time).then(|| self.new_dir_mode(m))
    }

    /// The mode a directory this run makes ends with (see [`Shared::dir_mode`]), before its
    /// ownership is known: without set-id bits, which only a kept owner brings back.
    pub(crate) fn new_dir_mode(&self, m: &Meta) -> u32 {
        if self.opts.preserve_mode_time {
            permission_bits(m.mode, false, true)
        } else {
            0o777 & !self.umask
        }
    }

    /// Owner (with -p), mode and, when its content is complete, mtime of a directory.
    /// Its set-id bits are the source's only when its owner is too (as cp keeps them);
    /// otherwise the setgid bit is what the kernel gave it (inherited from its parent).
    pub(crate) fn finalize_dir(&self, n: &DirNode, m: &Meta, complete: bool) {
        let path = &n.dst_display;
        let mut owner_kept = false;
        if self.opts.preserve_owner {
            match rfs::fchown(
                &n.dst,
                Some(rfs::Uid::from_raw(m.uid)),
                Some(rfs::Gid::from_raw(m.gid)),
            ) {
                Ok(()) => owner_kept = true,
                Err(Errno::PERM) => self.owner_unkept(path),
                Err(e) => self.fail(path, format!("cannot preserve ownership: {}", errmsg(e))),
            }
        }
        let mode = self.dir_mode(m, n.fresh).map(|mode| {
            if owner_kept && self.opts.preserve_mode_time {
                permission_bits(m.mode, true, true)
            } else {
                mode | inherited_setgid(&n.dst)
            }
        });
        if let Some(mode) = mode.filter(|_| !n.mode_set || owner_kept)
            && let Err(e) = rfs::fchmod(&n.dst, Mode::from_raw_mode(mode))
        {
            self.fail(
                path,
                format!("cannot set the directory mode: {}", errmsg(e)),
            );
        }
        let kept = if self.opts.xattrs {
            super::xattr::copy(&n.src, &n.dst)
        } else if self.opts.preserve_mode_time && mode.is_some() {
            super::xattr::copy_acls(&n.src, &n.dst, true)
        } else {
            None
        };
        if let Some(note) = kept {
            self.note(&n.src_display, note);
        }
        if complete
            && self.opts.preserve_mode_time
            && let Err(e) = rfs::futimens(&n.dst, &timestamps(m))
        {
            self.fail(
                path,
                format!("cannot set the directory time: {}", errmsg(e)),
            );
        }
    }

    /// Tracks a directory that takes its final metadata when its last child is done.
    pub(crate) fn track_unfinished(&self, n: &Arc<DirNode>) {
        if n.finalize && n.meta.is_some() {
            lock(&self.unfinished).insert(Arc::as_ptr(n) as usize, n.clone());
        }
    }

    /// After a stop (cancel, a signal, disk full) no directory stays at the 0700 it was
    /// made with: each unfinished one gets its owner and mode; its mtime stays the time of
    /// the copy, since its content is not complete.
    pub(crate) fn finalize_unfinished(&self) {
        let left: Vec<Arc<DirNode>> = lock(&self.unfinished).drain().map(|(_, n)| n).collect();
        for n in left {
            if let Some(m) = n.meta {
                self.finalize_dir(&n, &m, false);
            }
        }
    }

    pub(crate) fn add_sync_target(&self, dev: u64, fd: &OwnedFd) {
        let mut t = lock(&self.sync_targets);
        if t.iter().any(|(d, _)| *d == dev) {
            return;
        }
        if let Ok(dup) = fd.try_clone() {
            t.push((dev, dup));
        }
    }
}

/// The permission bits a copy gets from the source's `mode`: the set-user-ID and
/// set-group-ID bits only when the copy keeps the source's owner (`keep_set_id`: ownership
/// preserved and the chown done), as cp keeps them; otherwise a root copy of another
/// user's setuid program would be a root-owned setuid program. The sticky bit is kept on
/// directories (where it means something; cp's mkdir keeps it too) and only with the owner
/// on anything else.
pub(crate) fn permission_bits(mode: u32, keep_set_id: bool, is_dir: bool) -> u32 {
    if keep_set_id {
        mode & 0o7777
    } else if is_dir {
        mode & 0o1777
    } else {
        mode & 0o777
    }
}

/// The setgid bit a directory has now (the kernel sets it on a directory made in a setgid
/// directory), so a chmod that keeps no set-id bits of the source does not clear it.
fn inherited_setgid(fd: &OwnedFd) -> u32 {
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    rfs::fstat(fd).map_or(0, |s| s.st_mode as u32 & 0o2000)
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
pub(crate) fn cfr_cannot_clone(fd: &OwnedFd) -> bool {
    const EXT4_SUPER_MAGIC: i64 = 0xEF53;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    match rfs::fstatfs(fd) {
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        Ok(s) => matches!(s.f_type as i64, EXT4_SUPER_MAGIC | TMPFS_MAGIC),
        Err(_) => false,
    }
}

/// Whether `fd`'s file system says the true size of every regular file (the local disk file
/// systems and tmpfs), so an empty file need not be read to its end.
pub(crate) fn sizes_are_true(fd: &OwnedFd) -> bool {
    const KNOWN: [i64; 6] = [
        0xEF53,      // ext2/3/4
        0x0102_1994, // tmpfs
        0x5846_5342, // XFS
        0x9123_683E, // btrfs
        0x2fc1_2fc1, // ZFS
        0xF2F5_2010, // F2FS
    ];
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    rfs::fstatfs(fd).is_ok_and(|s| KNOWN.contains(&(s.f_type as i64)))
}

pub(crate) fn is_zfs(fd: &OwnedFd) -> bool {
    const ZFS_SUPER_MAGIC: i64 = 0x2fc1_2fc1;
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    rfs::fstatfs(fd).is_ok_and(|s| s.f_type as i64 == ZFS_SUPER_MAGIC)
}

#[cfg(test)]
impl DirNode {
    /// A private directory open at both ends on `path`, as the tests of the engine's parts
    /// need one.
    pub(crate) fn open_for_test(path: &Path) -> Arc<DirNode> {
        let open = || {
            rfs::open(
                path,
                rfs::OFlags::DIRECTORY | rfs::OFlags::CLOEXEC,
                Mode::empty(),
            )
            .expect("the test directory opens")
        };
        Arc::new(DirNode {
            src: open(),
            dst: open(),
            pending: AtomicUsize::new(1),
            meta: None,
            finalize: false,
            fresh: false,
            mode_set: false,
            parent: None,
            src_display: path.to_path_buf(),
            dst_display: path.to_path_buf(),
            rel: PathBuf::new(),
            cfr_ok: false,
            src_sizes_true: false,
            tmpfile_ok: AtomicBool::new(true),
            private: true,
            stage: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_dir(p: &str) -> OwnedFd {
        rfs::open(
            p,
            rfs::OFlags::DIRECTORY | rfs::OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn pseudo_file_systems_do_not_have_true_sizes_and_tmpfs_does() {
        assert!(!sizes_are_true(&open_dir("/proc/self")));
        assert!(!sizes_are_true(&open_dir("/sys/kernel")));
        // A machine without /dev/shm has no tmpfs to try.
        let Ok(shm) = rfs::open(
            "/dev/shm",
            rfs::OFlags::DIRECTORY | rfs::OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return;
        };
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        let tmpfs = rfs::fstatfs(&shm).is_ok_and(|s| s.f_type as i64 == 0x0102_1994);
        assert_eq!(sizes_are_true(&shm), tmpfs);
    }

    #[test]
    fn one_name_is_joined_as_join_does() {
        for (dir, name) in [("", "f"), ("a", "f"), ("a/b", "f.txt"), ("/", "x")] {
            let want = Path::new(dir).join(name);
            assert_eq!(joined(Path::new(dir), OsStr::new(name)), want);
        }
    }
}
