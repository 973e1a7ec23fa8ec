//! `copyscope bench`'s engine: the forum's classic tests written and read inside one scratch
//! directory, with the copy engine's contract (the same [`Progress`] counters, [`EngineEvent`]s,
//! [`Control`] and [`CopyOutcome`]), so the sampler, the model and every frontend see a phase
//! exactly as they see a copy.
//!
//! Safety: the scratch directory is made with a unique name under DIR through DIR's descriptor
//! (opened no-follow), and every file is created and removed relative to the scratch
//! directory's own descriptor with `O_EXCL|O_NOFOLLOW`: nothing is written, followed or removed
//! outside it, whatever someone renames or plants meanwhile.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::flush::{Flushed, flush};
use super::options::SyncMode;
use super::{Control, CopyOutcome, CurrentFile, EngineEvent, EventSender, Progress};
use crate::exit::ExitStatus;

/// Size of each write and read: large enough that syscalls cost nothing next to the data.
const CHUNK: usize = 1 << 20;

/// Files per directory in the tree phase (a photo folder's order of magnitude).
const FILES_PER_DIR: u64 = 200;

/// Why the bench cannot start (said before anything is written).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{}: {what}", crate::present::quote::quote(.path))]
    Dir { path: PathBuf, what: String },
    #[error(
        "{} is not empty: the bench writes its files in a scratch directory there and removes it; give --force to run beside what is in it",
        crate::present::quote::quote(.0)
    )]
    NotEmpty(PathBuf),
}

/// One phase of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Sequential write of zeros (compressible to nothing).
    WriteZeros,
    /// Sequential write of pseudo-random bytes (incompressible).
    WriteRandom,
    /// The random file read back after its cached pages were dropped.
    ReadBack,
    /// Many files of mixed sizes, written.
    TreeWrite,
    /// The tree read back, each file's cached pages dropped first.
    TreeRead,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::WriteZeros,
        Phase::WriteRandom,
        Phase::ReadBack,
        Phase::TreeWrite,
        Phase::TreeRead,
    ];

    /// The phase's name in tables, headers and file names.
    pub fn name(self) -> &'static str {
        match self {
            Phase::WriteZeros => "write zeros",
            Phase::WriteRandom => "write random",
            Phase::ReadBack => "read back",
            Phase::TreeWrite => "tree write",
            Phase::TreeRead => "tree read back",
        }
    }

    /// The phase of this name (a recording's `bench` header field).
    pub fn named(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether the phase writes (and ends with a flush) or reads.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Phase::WriteZeros | Phase::WriteRandom | Phase::TreeWrite
        )
    }
}

/// How big the bench is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchSize {
    /// Bytes of each sequential write.
    pub seq_bytes: u64,
    /// Files in the tree and their total size.
    pub tree_files: u64,
    pub tree_bytes: u64,
    /// `--quick`: each phase stops after this long (the file written so far is what is read).
    pub phase_limit: Option<Duration>,
    /// Test hook (`COPYSCOPE_TEST_THROTTLE_BPS`): cap the data rate, so tests can cancel a
    /// phase in the middle.
    pub throttle_bps: Option<u64>,
}

/// The scratch directory: a unique, private directory under DIR, held by descriptor, and
/// removed (with everything in it) by [`Scratch::remove`] or when dropped.
#[derive(Debug)]
pub struct Scratch {
    parent: OwnedFd,
    name: OsString,
    dir: OwnedFd,
    /// For messages only.
    pub path: PathBuf,
    removed: bool,
}

/// DIR checked: a directory (not a symlink to one), and empty unless `force`.
pub fn check_dir(dir: &Path, force: bool) -> Result<(), BenchError> {
    let bad = |what: String| BenchError::Dir {
        path: dir.to_path_buf(),
        what,
    };
    let meta = std::fs::symlink_metadata(dir).map_err(|e| bad(e.to_string()))?;
    if !meta.is_dir() {
        return Err(bad("not a directory".into()));
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| bad(e.to_string()))?;
    if !force && entries.next().is_some() {
        return Err(BenchError::NotEmpty(dir.to_path_buf()));
    }
    Ok(())
}

impl Scratch {
    /// Makes `DIR/.copyscope-bench-PID-RANDOM` (0700) through DIR's descriptor.
    pub fn create(dir: &Path) -> Result<Scratch, BenchError> {
        let bad = |what: String| BenchError::Dir {
            path: dir.to_path_buf(),
            what,
        };
        let parent = rustix::fs::open(
            dir,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| bad(format!("cannot open the directory: {e}")))?;
        for _ in 0..16 {
            let name = OsString::from(format!(
                ".copyscope-bench-{}-{:08x}",
                std::process::id(),
                rand::random::<u32>()
            ));
            match rustix::fs::mkdirat(&parent, name.as_os_str(), Mode::from_raw_mode(0o700)) {
                Ok(()) => {}
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(bad(format!("cannot make the scratch directory: {e}"))),
            }
            let opened = rustix::fs::openat(
                &parent,
                name.as_os_str(),
                OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            );
            let dirfd = match opened {
                Ok(d) => d,
                Err(e) => {
                    let _ = rustix::fs::unlinkat(&parent, name.as_os_str(), AtFlags::REMOVEDIR);
                    return Err(bad(format!("cannot open the scratch directory: {e}")));
                }
            };
            return Ok(Scratch {
                path: dir.join(&name),
                parent,
                name,
                dir: dirfd,
                removed: false,
            });
        }
        Err(bad("cannot find a free scratch name".into()))
    }

    /// Removes the scratch directory and everything in it (through descriptors, never
    /// following a symlink). Idempotent. The error says, as rm would, what could not be
    /// removed and why ("cannot remove 'D/.copyscope-bench-…/m': Device or resource busy").
    pub fn remove(&mut self) -> Result<(), String> {
        if self.removed {
            return Ok(());
        }
        let cannot = |rel: &Path, e: Errno| {
            format!(
                "cannot remove {}: {}",
                crate::present::quote::quote(&join(&self.path, rel)),
                super::error::io_reason(&std::io::Error::from(e))
            )
        };
        empty_dir(&self.dir).map_err(|(rel, e)| cannot(&rel, e))?;
        rustix::fs::unlinkat(&self.parent, self.name.as_os_str(), AtFlags::REMOVEDIR)
            .map_err(|e| cannot(Path::new(""), e))?;
        self.removed = true;
        Ok(())
    }

    /// The scratch directory's descriptor.
    pub fn fd(&self) -> &OwnedFd {
        &self.dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Removes everything inside `dir` (recursively, through descriptors); on failure, the
/// entry that could not be read or removed (relative to `dir`; empty for `dir` itself) and why.
fn empty_dir(dir: &OwnedFd) -> Result<(), (PathBuf, Errno)> {
    let at_dir = |e| (PathBuf::new(), e);
    let fd = rustix::fs::openat(
        dir,
        c".",
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_dir)?;
    let mut names: Vec<(OsString, bool)> = Vec::new();
    for entry in rustix::fs::Dir::read_from(&fd).map_err(at_dir)? {
        let entry = entry.map_err(at_dir)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let is_dir = entry.file_type() == rustix::fs::FileType::Directory;
        names.push((std::ffi::OsStr::from_bytes(name).to_os_string(), is_dir));
    }
    for (name, is_dir) in names {
        let at = |e| (PathBuf::from(&name), e);
        if is_dir {
            let sub = rustix::fs::openat(
                dir,
                name.as_os_str(),
                OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(at)?;
            empty_dir(&sub).map_err(|(rel, e)| (join(Path::new(&name), &rel), e))?;
            rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::REMOVEDIR).map_err(at)?;
        } else {
            rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::empty()).map_err(at)?;
        }
    }
    Ok(())
}

/// `dir/rel`, or `dir` for an empty `rel` (no trailing slash).
fn join(dir: &Path, rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() {
        dir.to_path_buf()
    } else {
        dir.join(rel)
    }
}

/// A fast PRNG (xoshiro256**, seeded from the OS) for incompressible data: /dev/urandom
/// gives a few hundred MB/s and would be the bottleneck on a fast disk; this fills ~GB/s.
struct Xoshiro([u64; 4]);

impl Xoshiro {
    fn new() -> Xoshiro {
        let mut s = [0u64; 4];
        for v in &mut s {
            *v = rand::random::<u64>() | 1;
        }
        Xoshiro(s)
    }
    fn next(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for c in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}

/// Fills `buf` with pseudo-random bytes from a freshly seeded generator (the bench measures
/// its rate and says it).
pub fn fill_random(buf: &mut [u8]) {
    Xoshiro::new().fill(buf);
}

/// The sizes of the tree's files: log-uniform between 1 KiB and 64 × the mean (many small
/// files, a few large ones, as in a photo or source tree), scaled to `total` exactly.
pub fn tree_sizes(files: u64, total: u64) -> Vec<u64> {
    if files == 0 {
        return Vec::new();
    }
    let mean = (total / files).max(1);
    let (lo, hi) = (1024f64.min(mean as f64).ln(), (mean as f64 * 64.0).ln());
    // A fixed sequence, so two benches of the same size write the same tree.
    let mut rng = Xoshiro([0x9e37_79b9_7f4a_7c15, 0xbf58_476d_1ce4_e5b9, 7, 11]);
    let raw: Vec<f64> = (0..files)
        .map(|_| {
            let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            (lo + u * (hi - lo)).exp()
        })
        .collect();
    let sum: f64 = raw.iter().sum();
    let mut sizes: Vec<u64> = raw
        .iter()
        .map(|r| (r / sum * total as f64) as u64)
        .collect();
    let short = total.saturating_sub(sizes.iter().sum());
    if let Some(last) = sizes.last_mut() {
        *last += short;
    }
    sizes
}

fn tree_name(i: u64) -> (String, String) {
    (format!("d{:04}", i / FILES_PER_DIR), format!("f{i:06}.dat"))
}

/// State of one phase's run.
struct Run {
    progress: Arc<Progress>,
    control: Arc<Control>,
    events: EventSender,
    start: Instant,
    limit: Option<Duration>,
    throttle: Option<u64>,
    fatal: Option<String>,
}

/// How the loop left off.
enum Stop {
    /// Every byte done, or `--quick`'s time was up.
    Done,
    Cancelled,
    Fatal,
}

impl Run {
    /// Blocks while paused; false once cancelled or out of time.
    fn go_on(&self) -> Result<bool, Stop> {
        while self.control.paused.load(Ordering::SeqCst) {
            if self.control.cancelled.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.control.cancelled.load(Ordering::SeqCst) {
            return Err(Stop::Cancelled);
        }
        Ok(self.limit.is_none_or(|l| self.start.elapsed() < l))
    }

    fn fatal(&mut self, what: String) -> Stop {
        let _ = self.events.send(EngineEvent::Fatal {
            error: what.clone(),
        });
        self.fatal = Some(what);
        Stop::Fatal
    }

    fn io_error(&mut self, doing: &str, name: &str, e: Errno) -> Stop {
        let what = if e == Errno::NOSPC || e == Errno::DQUOT {
            format!(
                "the filesystem is full (No space left on device) while {doing} {name}: bench stopped"
            )
        } else {
            format!("{doing} {name}: {e}")
        };
        self.fatal(what)
    }

    /// Sleeps as long as the test throttle asks for the bytes moved so far.
    fn pace(&self) {
        let Some(bps) = self.throttle.filter(|b| *b > 0) else {
            return;
        };
        let moved = self.progress.bytes_copied.load(Ordering::Relaxed);
        let due = Duration::from_secs_f64(moved as f64 / bps as f64);
        if let Some(wait) = due.checked_sub(self.start.elapsed()) {
            std::thread::sleep(wait.min(Duration::from_millis(200)));
        }
    }

    fn set_current(&self, path: &str, size: u64, done: u64) {
        if let Ok(mut c) = self.progress.current.lock() {
            *c = Some(CurrentFile {
                path: PathBuf::from(path),
                size,
                done,
            });
        }
    }

    /// Writes `size` bytes (zeros or random) to `name` in `dir`; returns bytes written.
    fn write_file(
        &mut self,
        dir: &OwnedFd,
        name: &str,
        shown: &str,
        size: u64,
        buf: &mut [u8],
        rng: Option<&mut Xoshiro>,
    ) -> Result<u64, Stop> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| self.io_error("creating", shown, e))?;
        let _ = self.events.send(EngineEvent::FileStarted {
            path: PathBuf::from(shown),
            size,
        });
        let mut rng = rng;
        let mut done = 0u64;
        while done < size {
            if !self.go_on()? {
                break;
            }
            let n = (size - done).min(buf.len() as u64) as usize;
            if let Some(r) = rng.as_deref_mut() {
                r.fill(&mut buf[..n]);
            }
            let mut off = 0;
            while off < n {
                let t = Instant::now();
                self.progress
                    .in_write
                    .store((n - off) as u64, Ordering::Relaxed);
                let w = rustix::io::write(&fd, &buf[off..n]);
                self.progress.in_write.store(0, Ordering::Relaxed);
                self.progress
                    .write_ns
                    .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                match w {
                    Ok(0) => return Err(self.io_error("writing", shown, Errno::NOSPC)),
                    Ok(k) => {
                        off += k;
                        self.progress
                            .bytes_copied
                            .fetch_add(k as u64, Ordering::Relaxed);
                    }
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(self.io_error("writing", shown, e)),
                }
            }
            done += n as u64;
            self.set_current(shown, size, done);
            self.pace();
        }
        self.progress.files_done.fetch_add(1, Ordering::Relaxed);
        let _ = self.events.send(EngineEvent::FileDone {
            path: PathBuf::from(shown),
            bytes: done,
        });
        Ok(done)
    }

    /// Reads `name` in `dir` to its end after dropping its cached pages; returns bytes read.
    fn read_file(
        &mut self,
        dir: &OwnedFd,
        name: &str,
        shown: &str,
        buf: &mut [u8],
    ) -> Result<u64, Stop> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.io_error("opening", shown, e))?;
        let size = rustix::fs::fstat(&fd).map_or(0, |s| s.st_size as u64);
        // The data is durable (the write phase ended with a flush), so its clean pages can be
        // dropped: the read then comes from the device, not from RAM.
        let _ = rustix::fs::fadvise(&fd, 0, None, rustix::fs::Advice::DontNeed);
        let _ = self.events.send(EngineEvent::FileStarted {
            path: PathBuf::from(shown),
            size,
        });
        let mut done = 0u64;
        loop {
            if !self.go_on()? {
                break;
            }
            let t = Instant::now();
            let r = rustix::io::read(&fd, &mut *buf);
            self.progress
                .read_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            match r {
                Ok(0) => break,
                Ok(k) => {
                    done += k as u64;
                    self.progress
                        .bytes_copied
                        .fetch_add(k as u64, Ordering::Relaxed);
                    self.set_current(shown, size, done);
                    self.pace();
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(self.io_error("reading", shown, e)),
            }
        }
        self.progress.files_done.fetch_add(1, Ordering::Relaxed);
        let _ = self.events.send(EngineEvent::FileDone {
            path: PathBuf::from(shown),
            bytes: done,
        });
        Ok(done)
    }
}

/// The phase's work: what it writes or reads, in the scratch directory.
fn work(run: &mut Run, phase: Phase, scratch: &OwnedFd, size: &BenchSize) -> Result<(), Stop> {
    let mut buf = vec![0u8; CHUNK];
    let totals = |files: u64, bytes: u64| {
        run.progress.files_total.store(files, Ordering::Relaxed);
        run.progress.bytes_total.store(bytes, Ordering::Relaxed);
        run.progress.scan_done.store(true, Ordering::Relaxed);
        let _ = run.events.send(EngineEvent::ScanDone { files, bytes });
    };
    match phase {
        Phase::WriteZeros | Phase::WriteRandom => {
            totals(1, size.seq_bytes);
            let mut rng = (phase == Phase::WriteRandom).then(Xoshiro::new);
            let name = if rng.is_some() {
                "random.bin"
            } else {
                "zeros.bin"
            };
            run.write_file(scratch, name, name, size.seq_bytes, &mut buf, rng.as_mut())?;
        }
        Phase::ReadBack => {
            let len = rustix::fs::statat(scratch, "random.bin", AtFlags::SYMLINK_NOFOLLOW)
                .map_or(0, |s| s.st_size as u64);
            totals(1, len);
            run.read_file(scratch, "random.bin", "random.bin", &mut buf)?;
        }
        Phase::TreeWrite | Phase::TreeRead => {
            let sizes = tree_sizes(size.tree_files, size.tree_bytes);
            totals(sizes.len() as u64, sizes.iter().sum());
            let mut rng = Xoshiro::new();
            let mut current_dir: Option<(String, OwnedFd)> = None;
            for (i, &len) in sizes.iter().enumerate() {
                if !run.go_on()? {
                    break;
                }
                let (d, f) = tree_name(i as u64);
                if current_dir.as_ref().is_none_or(|(n, _)| *n != d) {
                    if phase == Phase::TreeWrite {
                        match rustix::fs::mkdirat(scratch, d.as_str(), Mode::from_raw_mode(0o700)) {
                            Ok(()) => {}
                            Err(e) => return Err(run.io_error("making", &d, e)),
                        }
                    }
                    let fd = rustix::fs::openat(
                        scratch,
                        d.as_str(),
                        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
                        Mode::empty(),
                    );
                    match fd {
                        Ok(fd) => current_dir = Some((d.clone(), fd)),
                        // --quick: the read-back reads what the write got to.
                        Err(Errno::NOENT) if phase == Phase::TreeRead => break,
                        Err(e) => return Err(run.io_error("opening", &d, e)),
                    }
                }
                let Some((_, dfd)) = current_dir.as_ref() else {
                    break;
                };
                let dfd = dfd.try_clone().map_err(|e| {
                    run.io_error("opening", &d, Errno::from_io_error(&e).unwrap_or(Errno::IO))
                })?;
                let shown = format!("{d}/{f}");
                if phase == Phase::TreeWrite {
                    // Half the files zeros, half random: a tree of mixed content.
                    let r = (i % 2 == 1).then_some(&mut rng);
                    run.write_file(&dfd, &f, &shown, len, &mut buf, r)?;
                } else {
                    match rustix::fs::statat(&dfd, f.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(_) => {}
                        Err(Errno::NOENT) => break,
                        Err(e) => return Err(run.io_error("opening", &shown, e)),
                    }
                    run.read_file(&dfd, &f, &shown, &mut buf)?;
                }
            }
        }
    }
    Ok(())
}

/// Runs one phase on its own thread, as [`super::spawn_engine`] runs a copy. Write phases end
/// with a syncfs (the durable speed); a cancel during it leaves the writeback to the kernel.
pub fn spawn_phase(
    phase: Phase,
    scratch: Arc<Scratch>,
    size: BenchSize,
    progress: Arc<Progress>,
    control: Arc<Control>,
    events: EventSender,
) -> JoinHandle<CopyOutcome> {
    std::thread::Builder::new()
        .name("copyscope-copy-bench".into())
        .spawn(move || {
            let mut run = Run {
                progress,
                control,
                events,
                start: Instant::now(),
                limit: size.phase_limit,
                throttle: size.throttle_bps,
                fatal: None,
            };
            let stop = match work(&mut run, phase, scratch.fd(), &size) {
                Ok(()) => Stop::Done,
                Err(s) => s,
            };
            let copy_secs = run.start.elapsed().as_secs_f64();
            if let Ok(mut c) = run.progress.current.lock() {
                *c = None;
            }
            let mut flush_secs = None;
            let mut flush_abandoned = false;
            if matches!(stop, Stop::Done) && phase.writes() {
                let _ = run.events.send(EngineEvent::FlushStarted);
                let t = Instant::now();
                match flush(scratch.fd(), false, &run.control) {
                    Ok(Flushed::Done) => {
                        flush_secs = Some(t.elapsed().as_secs_f64());
                        let _ = run.events.send(EngineEvent::FlushDone);
                    }
                    Ok(Flushed::Abandoned) => flush_abandoned = true,
                    Err(e) => {
                        let _ = run.fatal(format!("flushing the scratch directory failed: {e}"));
                    }
                }
            }
            let snap = run.progress.snapshot();
            let status = if run.control.cancelled.load(Ordering::SeqCst) {
                ExitStatus::Cancelled
            } else if run.fatal.is_some() {
                ExitStatus::Fatal
            } else {
                ExitStatus::Success
            };
            CopyOutcome {
                fatal: run.fatal.clone(),
                sync: if phase.writes() {
                    SyncMode::Syncfs
                } else {
                    SyncMode::None
                },
                flush_abandoned,
                ..CopyOutcome::measured(status, &snap, copy_secs, flush_secs)
            }
        })
        .unwrap_or_else(|e| panic!("cannot start the bench thread: {e}"))
}

/// Removes the zeros file once its phase is measured, so the random file and the tree have
/// the space (the bench's size was chosen for one file at a time).
pub fn remove_file(scratch: &Scratch, name: &str) {
    let _ = rustix::fs::unlinkat(scratch.fd().as_fd(), name, AtFlags::empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_sizes_sum_exactly_and_are_mixed() {
        let s = tree_sizes(14_139, 6_800_000_000);
        assert_eq!(s.len(), 14_139);
        assert_eq!(s.iter().sum::<u64>(), 6_800_000_000);
        let small = s.iter().filter(|&&v| v < 100_000).count();
        let large = s.iter().filter(|&&v| v > 4_000_000).count();
        assert!(small > 3000 && large > 100, "small {small}, large {large}");
        assert_eq!(s, tree_sizes(14_139, 6_800_000_000), "deterministic");
    }

    #[test]
    fn random_data_is_incompressible_and_fast_enough() {
        let mut r = Xoshiro::new();
        let mut buf = vec![0u8; 1 << 20];
        r.fill(&mut buf);
        let mut seen = [0u32; 256];
        for b in &buf {
            seen[*b as usize] += 1;
        }
        // Every byte value about equally often (4096 ± a few %): no structure to compress.
        assert!(seen.iter().all(|&n| (3500..4700).contains(&n)), "{seen:?}");
    }

    #[test]
    fn scratch_is_made_inside_and_removed_with_everything_in_it() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Scratch::create(t.path()).unwrap();
        rustix::fs::mkdirat(s.fd(), "d", Mode::from_raw_mode(0o700)).unwrap();
        let d = rustix::fs::openat(
            s.fd(),
            "d",
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        )
        .unwrap();
        rustix::fs::openat(
            &d,
            "f",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o600),
        )
        .unwrap();
        // A symlink out of the scratch directory is removed, never followed.
        let outside = t.path().join("keep");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("x"), b"x").unwrap();
        std::os::unix::fs::symlink(&outside, s.path.join("link")).unwrap();
        assert!(s.path.starts_with(t.path()));
        s.remove().unwrap();
        let left: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("keep")]);
        assert!(outside.join("x").exists());
    }

    #[test]
    fn a_non_empty_dir_is_refused_without_force() {
        let t = tempfile::tempdir().unwrap();
        assert!(check_dir(t.path(), false).is_ok());
        std::fs::write(t.path().join("a"), b"").unwrap();
        assert!(matches!(
            check_dir(t.path(), false),
            Err(BenchError::NotEmpty(_))
        ));
        assert!(check_dir(t.path(), true).is_ok());
        assert!(check_dir(&t.path().join("a"), true).is_err());
    }
}
