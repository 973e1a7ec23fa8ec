//! Write-behind, handed to a child process so that no thread of copyscope ever sits in the
//! kernel's block-layer queue: the copy stays cancellable and the process can exit at once,
//! whatever the disk's queue is doing. Two uses: on a nearly full destination the copy waits
//! for the child (it paces the copy to the disk), and on a large file of a copy that ends with
//! a flush the child starts the disk early while the copy goes on without waiting.

use std::io::{BufRead, Read, Write};
use std::num::NonZeroU64;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs as rfs;

use super::shared::{Shared, Stopped, lock};

/// Write-behind piece on a nearly full destination: 50 ms at 40 MB/s.
pub(crate) const KICK: u64 = 2 << 20;

/// Early write-behind piece of a large file in a copy that ends with a flush: one request to
/// the child per 8 MiB, as the copy goes (one every 4 ms of a 2 GB/s copy).
pub(crate) const EARLY_PIECE: u64 = 8 << 20;

/// Most bytes written between two looks at the free space, however much is free.
const MAX_RECHECK: u64 = 64 << 20;

/// An early piece whose writeback took longer than this (8 MiB below 80 MB/s, queueing
/// included) says the disk is the copy's bottleneck already: starting it early gains little,
/// and a deeper queue delays the journal's commits, which hold the copy's own writes
/// uninterruptibly (measured on the 40 MB/s lab disk: a cancelled copy took 1.5 s to exit,
/// its thread in `do_get_write_access`). The file's early write-behind stops there.
const SLOW_PIECE: Duration = Duration::from_millis(100);

/// Pieces handed to the child and not yet answered (a nearly full destination's piece is
/// answered once submitted, an early one once the piece before it reached the disk): the copy
/// runs at most this far ahead of the writeback it asked for.
const MAX_OUTSTANDING: usize = 2;

/// The hidden first argument that makes the binary a write-behind child.
pub const CHILD_ARG: &str = "__copyscope-write-behind";

/// Set by the binary (see [`allow_child`]): only then is `/proc/self/exe` a copyscope that
/// knows [`CHILD_ARG`] (in a test harness it is the harness).
static CHILD_ALLOWED: AtomicBool = AtomicBool::new(false);

/// The thread name of a write-behind child (15 bytes, the most a comm holds): once a copy
/// thread has waited for it (see [`children`]) the thread sampler counts it among the copy's
/// threads, so that wait is explained by where the child waits (`rq_qos_wait`, …).
pub const CHILD_COMM: &str = "copyscope-wback";

/// Pids of the children a copy thread is waiting for now.
static SERVING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Pids of the write-behind children a copy thread waits for (for the thread sampler). A child
/// that only starts the disk early is not listed: the copy does not wait for it, so where it
/// waits does not explain the copy's speed.
pub fn children() -> Vec<u32> {
    lock(&SERVING).clone()
}

/// Children whose file is done but which may still be submitting: reaped when the next one
/// starts, or by init after copyscope has exited.
static FINISHED: Mutex<Vec<Child>> = Mutex::new(Vec::new());

/// Lets the engine start write-behind children from this executable (the binary's `main`).
pub fn allow_child() {
    CHILD_ALLOWED.store(true, Ordering::Relaxed);
}

/// The child's whole life: the destination file is its stderr; each line on stdin is a
/// [`Request`]; one byte on stdout answers each ("k", or "s" when an early piece took the disk
/// longer than [`SLOW_PIECE`]). Ends at the end of its input: the copy finished the file, gave
/// up on it, or exited.
pub fn child_main() -> u8 {
    if let Ok(name) = std::ffi::CString::new(CHILD_COMM) {
        let _ = rustix::thread::set_name(&name);
    }
    let file = std::io::stderr();
    let mut acks = std::io::stdout().lock();
    // The early piece submitted last and when: waited for before the next one is answered.
    let mut last: Option<(u64, u64, Instant)> = None;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Some(req) = Request::parse(&line) else {
            continue;
        };
        let answer = if req.early {
            sync_range(file.as_fd(), req.off, req.len, SyncRange::Start);
            let slow = last.is_some_and(|(off, len, since)| {
                sync_range(file.as_fd(), off, len, SyncRange::Wait);
                since.elapsed() > SLOW_PIECE
            });
            last = Some((req.off, req.len, Instant::now()));
            if slow { b"s" } else { b"k" }
        } else {
            // DONTNEED submits the range's dirty pages and drops its clean ones.
            let _ = rfs::fadvise(
                file.as_fd(),
                req.off,
                NonZeroU64::new(req.len),
                rfs::Advice::DontNeed,
            );
            b"k"
        };
        if acks.write_all(answer).and_then(|()| acks.flush()).is_err() {
            break;
        }
    }
    0
}

/// One line to the child: "OFFSET LENGTH" (a nearly full destination: submit the range, answer
/// at once) or "OFFSET LENGTH early" (submit the range, then wait for the previous early piece
/// to reach the disk before answering, so at most two pieces of this file are in the disk's
/// queue on our account).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Request {
    off: u64,
    len: u64,
    early: bool,
}

impl Request {
    fn parse(line: &str) -> Option<Request> {
        let mut words = line.split_ascii_whitespace();
        let off = words.next()?.parse().ok()?;
        let len = words.next()?.parse().ok()?;
        let early = match words.next() {
            None => false,
            Some("early") => true,
            Some(_) => return None,
        };
        words
            .next()
            .is_none()
            .then_some(Request { off, len, early })
    }

    fn line(&self) -> String {
        let early = if self.early { " early" } else { "" };
        format!("{} {}{early}\n", self.off, self.len)
    }
}

/// What [`sync_range`] does with a range.
#[derive(Debug, Clone, Copy)]
enum SyncRange {
    /// Submit the range's dirty pages for writeback; do not wait.
    Start,
    /// Wait until the range's writeback submitted so far has reached the disk.
    Wait,
}

/// `sync_file_range(2)` (rustix has no wrapper): unlike `fdatasync` it is limited to a range,
/// unlike `fadvise` it can wait for that range alone. Errors are ignored: the final flush
/// writes whatever this did not.
#[allow(unsafe_code)]
fn sync_range(fd: BorrowedFd<'_>, off: u64, len: u64, what: SyncRange) {
    let flags = match what {
        SyncRange::Start => libc::SYNC_FILE_RANGE_WRITE,
        SyncRange::Wait => libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    };
    let (Ok(off), Ok(len)) = (libc::off64_t::try_from(off), libc::off64_t::try_from(len)) else {
        return;
    };
    // SAFETY: the call takes a descriptor and integers only; `fd` is open for the call.
    let _ = unsafe { libc::sync_file_range(fd.as_raw_fd(), off, len, flags) };
}

/// The running child of one destination file.
struct Submitter {
    child: Option<Child>,
    requests: Option<ChildStdin>,
    acks: ChildStdout,
    outstanding: usize,
    /// Listed in [`SERVING`]: the copy has waited for it.
    awaited: bool,
    /// An early piece took the disk longer than [`SLOW_PIECE`].
    slow: bool,
}

impl Submitter {
    fn spawn(dst: &OwnedFd) -> Option<Submitter> {
        if !CHILD_ALLOWED.load(Ordering::Relaxed) {
            return None;
        }
        lock(&FINISHED).retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        let mut child = Command::new("/proc/self/exe")
            .arg(CHILD_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(dst.try_clone().ok()?))
            .spawn()
            .ok()?;
        let requests = child.stdin.take();
        let acks = child.stdout.take()?;
        Some(Submitter {
            child: Some(child),
            requests,
            acks,
            outstanding: 0,
            awaited: false,
            slow: false,
        })
    }

    /// Sends one request line. Err when the child is gone.
    fn send(&mut self, req: Request) -> Result<(), ()> {
        let requests = self.requests.as_mut().ok_or(())?;
        // One write per request: `writeln!` on an unbuffered pipe is a write per fragment.
        requests.write_all(req.line().as_bytes()).map_err(|_| ())?;
        self.outstanding += 1;
        Ok(())
    }

    /// Hands [off, off + len) to the child as an early piece unless [`MAX_OUTSTANDING`] pieces
    /// still wait: never waits. Ok(false) when the child is busy (the caller hands a longer
    /// piece later).
    fn offer(&mut self, off: u64, len: u64) -> Result<bool, ()> {
        self.take_acks(Some(&Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        }))?;
        if self.outstanding >= MAX_OUTSTANDING {
            return Ok(false);
        }
        let early = true;
        self.send(Request { off, len, early }).map(|()| true)
    }

    /// Hands [off, off + len) to the child once fewer than [`MAX_OUTSTANDING`] pieces wait.
    /// Err(None) when the child is gone (the caller submits the piece itself).
    fn kick(&mut self, sh: &Shared, off: u64, len: u64) -> Result<(), Option<Stopped>> {
        if !self.awaited
            && let Some(child) = &self.child
        {
            lock(&SERVING).push(child.id());
            self.awaited = true;
        }
        while self.outstanding >= MAX_OUTSTANDING {
            self.await_ack(sh)?;
        }
        let early = false;
        self.send(Request { off, len, early }).map_err(|()| None)
    }

    /// Waits for the child to say it submitted a piece, looking at the pause/cancel gate every
    /// 20 ms: the wait is ours, in user space, so a cancel ends it.
    fn await_ack(&mut self, sh: &Shared) -> Result<(), Option<Stopped>> {
        let tick = Timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        loop {
            sh.gate().map_err(Some)?;
            if self.take_acks(Some(&tick)).map_err(|()| None)? {
                return Ok(());
            }
        }
    }

    /// Reads the answers that arrive within `wait`: Ok(true) if any did, Err when the child
    /// is gone.
    fn take_acks(&mut self, wait: Option<&Timespec>) -> Result<bool, ()> {
        let mut fds = [PollFd::new(&self.acks, PollFlags::IN)];
        if poll(&mut fds, wait).unwrap_or(0) == 0 {
            return Ok(false);
        }
        let mut got = [0u8; 16];
        match self.acks.read(&mut got) {
            Ok(0) | Err(_) => Err(()),
            Ok(n) => {
                self.outstanding = self.outstanding.saturating_sub(n);
                self.slow |= got[..n].contains(&b's');
                Ok(true)
            }
        }
    }
}

impl Drop for Submitter {
    /// Closing its input ends the child after the piece it is on; it is not waited for.
    fn drop(&mut self) {
        drop(self.requests.take());
        if let Some(mut child) = self.child.take() {
            lock(&SERVING).retain(|&pid| pid != child.id());
            if matches!(child.try_wait(), Ok(None)) {
                lock(&FINISHED).push(child);
            }
        }
    }
}

/// Write-behind on a nearly full destination. Filesystems that allocate late (ext4 delalloc,
/// XFS, btrfs) force a writeback of everything dirty on the filesystem, inside whichever
/// write() notices that free space runs short (ext4: `ext4_nonda_switch`). Measured on a
/// 40 MB/s disk with 1.1 GB dirty: one 128 KiB pwrite took 28 s, uninterruptible, so a cancel
/// waited that long. Here, once this file's unsubmitted data reaches half of the free space,
/// it is handed to writeback in [`KICK`] pieces with a cancel check between them: the copy
/// slows to the disk's speed (as the kernel would make it anyway) but stays cancellable.
///
/// Early write-behind: on a large file of a copy that ends with a flush (syncfs or `--fsync`),
/// every [`EARLY_PIECE`] is handed to the child as soon as it is written, without waiting. The
/// kernel would otherwise start writing only at its background threshold (10 % of memory:
/// gigabytes on a server), so the disk would idle during the copy and the flush would write it
/// all afterwards. The child keeps at most two of these pieces in the disk's queue, and once
/// one takes longer than [`SLOW_PIECE`] (the disk is the bottleneck already) the file's early
/// write-behind stops. Measured on the project's virtio disk, 2 GiB cached → ext4, durable:
/// see docs/benchmarks.md.
///
/// The pieces are submitted by a child process. Submitting them here put the copy thread in
/// the block layer's write-back throttle (`wbt_wait`, uninterruptible) behind the kernel
/// flusher's own writes: its kernel stacks, traced on a 2 MB/s disk, showed one 2 MiB
/// `fadvise` held there for 16–20 s, and a cancelled copy could not exit until it returned.
pub(crate) struct WriteBehind {
    /// Start of the data not yet handed to writeback by us.
    from: u64,
    /// Offset at which free space is looked at again (see [`WriteBehind::recheck_after`]).
    next_check: u64,
    /// The child, once this file needed one (None before, or where none can run).
    child: Option<Submitter>,
    /// A child could not be started (or died): submit in this thread.
    in_thread: bool,
    /// Hand every [`EARLY_PIECE`] to the child as it is written (see the type's doc).
    early: bool,
    /// `--pace auto`: the early write-behind goes on when the disk is the bottleneck. The
    /// pace keeps the copy's data in RAM under the kernel's throttle, and under the
    /// background-writeback threshold too on a disk whose share of the cache is small, where
    /// the flusher would stop and the disk idle.
    keep_early: bool,
}

impl WriteBehind {
    /// Write-behind for a file written from `start`; `early` for a large file of a copy that
    /// ends with a flush.
    pub(crate) fn new(start: u64, early: bool) -> Self {
        WriteBehind {
            from: start,
            next_check: start + KICK,
            child: None,
            in_thread: false,
            early,
            keep_early: false,
        }
    }

    /// See [`WriteBehind::keep_early`].
    pub(crate) fn paced(mut self, paced: bool) -> Self {
        self.keep_early = paced;
        self
    }

    /// Bytes that may be written before free space is looked at again: an eighth of the margin
    /// left before the pending data reaches half of the free space (so other writers may use
    /// up five times what this file writes meanwhile), at least [`KICK`], at most
    /// [`MAX_RECHECK`]. With gigabytes free that is one `statfs` per 64 MiB instead of one
    /// per chunk.
    pub(crate) fn recheck_after(pending: u64, free: u64) -> u64 {
        (free.saturating_sub(pending.saturating_mul(2)) / 8).clamp(KICK, MAX_RECHECK)
    }

    pub(crate) fn after_write(
        &mut self,
        sh: &Shared,
        dst: &OwnedFd,
        off: u64,
    ) -> Result<(), Stopped> {
        if self.early && off >= self.from + EARLY_PIECE {
            self.start_early(dst, off);
        }
        if off < self.next_check.max(self.from + KICK) {
            return Ok(());
        }
        let pending = off - self.from;
        let free = match rfs::fstatvfs(dst) {
            Ok(v) => v.f_bfree.saturating_mul(v.f_frsize),
            Err(_) => return Ok(()),
        };
        self.next_check = off + Self::recheck_after(pending, free);
        if pending.saturating_mul(2) < free {
            return Ok(());
        }
        while self.from + KICK <= off {
            self.kick(sh, dst, self.from)?;
            self.from += KICK;
        }
        Ok(())
    }

    /// Offers [from, off) to the child; a busy child gets a longer piece next time. Never in
    /// this thread: the submission can wait in the block layer, uninterruptibly, and the copy
    /// does not need it to go on.
    fn start_early(&mut self, dst: &OwnedFd, off: u64) {
        let from = self.from;
        let keep = self.keep_early;
        let Some(child) = self.child(dst) else {
            return;
        };
        if child.slow && !keep {
            self.early = false;
            return;
        }
        match child.offer(from, off - from) {
            Ok(true) => self.from = off,
            Ok(false) => {}
            Err(()) => {
                self.child = None;
                self.in_thread = true;
            }
        }
    }

    /// The child, started on first use; None where none can run.
    fn child(&mut self, dst: &OwnedFd) -> Option<&mut Submitter> {
        if !self.in_thread && self.child.is_none() {
            self.child = Submitter::spawn(dst);
            self.in_thread = self.child.is_none();
        }
        self.child.as_mut()
    }

    fn kick(&mut self, sh: &Shared, dst: &OwnedFd, from: u64) -> Result<(), Stopped> {
        sh.gate()?;
        if let Some(child) = self.child(dst) {
            match child.kick(sh, from, KICK) {
                Ok(()) => return Ok(()),
                Err(Some(stopped)) => return Err(stopped),
                Err(None) => {
                    self.child = None;
                    self.in_thread = true;
                }
            }
        }
        // DONTNEED starts writeback of the range's dirty pages (and drops the clean ones,
        // which this copy does not read again).
        let _ = rfs::fadvise(dst, from, NonZeroU64::new(KICK), rfs::Advice::DontNeed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_two_numbers_and_a_word() {
        let (off, len) = (2 << 20, 2 << 20);
        for early in [false, true] {
            let req = Request { off, len, early };
            assert_eq!(Request::parse(&req.line()), Some(req));
        }
        assert_eq!(
            Request::parse("2097152 2097152\n").map(|r| r.early),
            Some(false)
        );
        assert_eq!(Request::parse("1 2 early").map(|r| r.early), Some(true));
        for bad in ["12", "a b", "1 2 late", "1 2 early 3"] {
            assert_eq!(Request::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_child_name_fits_a_comm() {
        assert!(CHILD_COMM.len() <= 15);
    }
}
