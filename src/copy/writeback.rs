//! Write-behind on a nearly full destination, handed to a child process so that no thread of
//! copyscope ever sits in the kernel's block-layer queue: the copy stays cancellable and the
//! process can exit at once, whatever the disk's queue is doing.

use std::io::{BufRead, Read, Write};
use std::num::NonZeroU64;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs as rfs;

use super::shared::{Shared, Stopped, lock};

/// Write-behind piece on a nearly full destination: 50 ms at 40 MB/s.
pub(crate) const KICK: u64 = 2 << 20;

/// Most bytes written between two looks at the free space, however much is free.
const MAX_RECHECK: u64 = 64 << 20;

/// Pieces handed to the child and not yet submitted by it: the copy runs at most this far
/// ahead of the writeback it asked for (as it did when it submitted them itself).
const MAX_OUTSTANDING: usize = 2;

/// The hidden first argument that makes the binary a write-behind child.
pub const CHILD_ARG: &str = "__copyscope-write-behind";

/// Set by the binary (see [`allow_child`]): only then is `/proc/self/exe` a copyscope that
/// knows [`CHILD_ARG`] (in a test harness it is the harness).
static CHILD_ALLOWED: AtomicBool = AtomicBool::new(false);

/// The thread name of a write-behind child (15 bytes, the most a comm holds): the thread
/// sampler counts it among the copy's threads, so a copy waiting for its child's submission
/// is explained by where the child waits (`rq_qos_wait`, …), as when it submitted itself.
pub const CHILD_COMM: &str = "copyscope-wback";

/// Pids of the children serving a file now.
static SERVING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Pids of the write-behind children serving a file now (for the thread sampler).
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

/// The child's whole life: the destination file is its stderr; each line on stdin is
/// "OFFSET LENGTH", handed to writeback with `POSIX_FADV_DONTNEED` (which submits the range's
/// dirty pages and drops the clean ones); one byte on stdout says a piece was submitted.
/// Ends at the end of its input: the copy finished the file, gave up on it, or exited.
pub fn child_main() -> u8 {
    if let Ok(name) = std::ffi::CString::new(CHILD_COMM) {
        let _ = rustix::thread::set_name(&name);
    }
    let file = std::io::stderr();
    let mut acks = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Some((off, len)) = parse_request(&line) else {
            continue;
        };
        let _ = rfs::fadvise(
            file.as_fd(),
            off,
            NonZeroU64::new(len),
            rfs::Advice::DontNeed,
        );
        if acks.write_all(b"k").and_then(|()| acks.flush()).is_err() {
            break;
        }
    }
    0
}

/// "OFFSET LENGTH" as two numbers.
fn parse_request(line: &str) -> Option<(u64, u64)> {
    let (off, len) = line.trim().split_once(' ')?;
    Some((off.parse().ok()?, len.parse().ok()?))
}

/// The running child of one destination file.
struct Submitter {
    child: Option<Child>,
    requests: Option<ChildStdin>,
    acks: ChildStdout,
    outstanding: usize,
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
        lock(&SERVING).push(child.id());
        Some(Submitter {
            child: Some(child),
            requests,
            acks,
            outstanding: 0,
        })
    }

    /// Hands [off, off + len) to the child once fewer than [`MAX_OUTSTANDING`] pieces wait.
    /// Err(None) when the child is gone (the caller submits the piece itself).
    fn kick(&mut self, sh: &Shared, off: u64, len: u64) -> Result<(), Option<Stopped>> {
        while self.outstanding >= MAX_OUTSTANDING {
            self.await_ack(sh)?;
        }
        let requests = self.requests.as_mut().ok_or(None)?;
        // One write per request: `writeln!` on an unbuffered pipe is a write per fragment.
        let line = format!("{off} {len}\n");
        requests.write_all(line.as_bytes()).map_err(|_| None)?;
        self.outstanding += 1;
        Ok(())
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
            let mut fds = [PollFd::new(&self.acks, PollFlags::IN)];
            if poll(&mut fds, Some(&tick)).unwrap_or(0) == 0 {
                continue;
            }
            let mut got = [0u8; 16];
            return match self.acks.read(&mut got) {
                Ok(0) | Err(_) => Err(None),
                Ok(n) => {
                    self.outstanding = self.outstanding.saturating_sub(n);
                    Ok(())
                }
            };
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
/// The pieces are submitted by a child process. Submitting them here put the copy thread in
/// the block layer's write-back throttle (`wbt_wait`, uninterruptible) behind the kernel
/// flusher's own writes: writer-truth on the lab disk at 2 MB/s showed one 2 MiB
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
}

impl WriteBehind {
    pub(crate) fn new(start: u64) -> Self {
        WriteBehind {
            from: start,
            next_check: start + KICK,
            child: None,
            in_thread: false,
        }
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

    fn kick(&mut self, sh: &Shared, dst: &OwnedFd, from: u64) -> Result<(), Stopped> {
        sh.gate()?;
        if !self.in_thread && self.child.is_none() {
            self.child = Submitter::spawn(dst);
            self.in_thread = self.child.is_none();
        }
        if let Some(child) = &mut self.child {
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
    fn requests_are_two_numbers() {
        assert_eq!(parse_request("2097152 2097152\n"), Some((2 << 20, 2 << 20)));
        assert_eq!(parse_request("12"), None);
        assert_eq!(parse_request("a b"), None);
    }

    #[test]
    fn the_child_name_fits_a_comm() {
        assert!(CHILD_COMM.len() <= 15);
    }
}
