//! `copyscope pipe`'s data path: standard input to standard output, byte for byte, on a thread
//! of its own ([`PIPE_COMM`], which the sampler reads as the copy's thread). splice(2) moves
//! the pages when one end is a pipe (nothing is copied through this process), else read/write
//! through a 1 MiB buffer. The calls block, so the thread's wait channel says what held it —
//! a full pipe downstream (`pipe_write`, `pipe_wait_writable`), an empty one upstream
//! (`pipe_wait_readable`), the disk behind a file — and the time each call took is counted as
//! reading or writing in the copy's [`Progress`]. A cancel ends the run at once, even while
//! the thread waits on a pipe that nobody feeds or drains.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::io::Errno;

use super::{Control, CopyOutcome, Progress};
use crate::exit::ExitStatus;

/// The name of the thread that moves the data (at most 15 bytes: the kernel's comm).
pub const PIPE_COMM: &str = "copyscope-pipe";

/// The thread that hands the session the outcome: not a copier's name, so the sampler leaves
/// it out.
const GUARD_COMM: &str = "copyscope-guard";

/// Bytes asked for per call: a pipe hands out at most what it holds (64 KiB by default), a
/// file as much as the buffer takes.
const CHUNK: usize = 1 << 20;

/// How often a cancel is looked for while the data thread waits in the kernel.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// What one end of the pipe is, from fstat(2) (and isatty for a character device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndKind {
    Pipe,
    File,
    Terminal,
    /// Another character device (`/dev/null`, a tape).
    Device,
    Socket,
    Other,
}

impl EndKind {
    /// What `fd` is.
    pub fn of(fd: BorrowedFd<'_>) -> EndKind {
        use rustix::fs::FileType;
        let Ok(st) = rustix::fs::fstat(fd) else {
            return EndKind::Other;
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Fifo => EndKind::Pipe,
            FileType::RegularFile => EndKind::File,
            FileType::CharacterDevice if rustix::termios::isatty(fd) => EndKind::Terminal,
            FileType::CharacterDevice | FileType::BlockDevice => EndKind::Device,
            FileType::Socket => EndKind::Socket,
            _ => EndKind::Other,
        }
    }

    /// "pipe", "file", "terminal", "device", "socket", "other".
    pub fn word(self) -> &'static str {
        match self {
            EndKind::Pipe => "pipe",
            EndKind::File => "file",
            EndKind::Terminal => "terminal",
            EndKind::Device => "device",
            EndKind::Socket => "socket",
            EndKind::Other => "other",
        }
    }
}

/// The two ends and what is expected to pass.
#[derive(Debug)]
pub struct PipeJob {
    pub input: OwnedFd,
    pub output: OwnedFd,
    pub input_kind: EndKind,
    pub output_kind: EndKind,
    /// Bytes expected (`-s`, or what is left of a regular file on standard input), for the
    /// percent and the ETA.
    pub size: Option<u64>,
}

impl PipeJob {
    /// Standard input and output (duplicated: the descriptors share their files' offsets and
    /// flags with 0 and 1); `size` from `-s`, else what is left of a regular file on stdin.
    pub fn stdio(size: Option<u64>) -> std::io::Result<PipeJob> {
        let input = std::io::stdin().as_fd().try_clone_to_owned()?;
        let output = std::io::stdout().as_fd().try_clone_to_owned()?;
        let input_kind = EndKind::of(input.as_fd());
        let output_kind = EndKind::of(output.as_fd());
        let size = size.or_else(|| (input_kind == EndKind::File).then(|| left_in(&input))?);
        Ok(PipeJob {
            input,
            output,
            input_kind,
            output_kind,
            size,
        })
    }
}

/// What is left to read of a regular file from its current offset.
fn left_in(fd: &OwnedFd) -> Option<u64> {
    let len = u64::try_from(rustix::fs::fstat(fd).ok()?.st_size).ok()?;
    let pos = rustix::fs::seek(fd, rustix::fs::SeekFrom::Current(0)).ok()?;
    Some(len.saturating_sub(pos))
}

/// How the data stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// End of input: everything passed.
    Eof,
    /// The reader downstream closed its end (EPIPE).
    BrokenPipe,
    Cancelled,
}

/// Starts passing the data; the handle returns the outcome at the end of input, when the
/// reader closes the pipe (exit 141, as a shell reports `cat` killed by SIGPIPE), on an
/// error, or at once on a cancel.
pub fn spawn_pipe(
    job: PipeJob,
    progress: Arc<Progress>,
    control: Arc<Control>,
) -> JoinHandle<CopyOutcome> {
    if let Some(s) = job.size {
        progress.bytes_total.store(s, Ordering::Relaxed);
        progress.scan_done.store(true, Ordering::Relaxed);
    }
    let start = Instant::now();
    let (tx, rx) = channel();
    let (p, c) = (progress.clone(), control.clone());
    let data = std::thread::Builder::new()
        .name(PIPE_COMM.into())
        .spawn(move || {
            let _ = tx.send(pass(&job, &p, &c));
        });
    std::thread::Builder::new()
        .name(GUARD_COMM.into())
        .spawn(move || {
            if let Err(e) = data {
                return failed(&progress, start, &e);
            }
            loop {
                let ended = match rx.recv_timeout(CANCEL_POLL) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) if control.cancelled.load(Ordering::SeqCst) => {
                        Ok(Ended::Cancelled)
                    }
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => {
                        return CopyOutcome::crashed("the pipe's data thread panicked");
                    }
                };
                return match ended {
                    Ok(e) => outcome(&progress, start, status_of(e)),
                    Err(e) => failed(&progress, start, &e),
                };
            }
        })
        .unwrap_or_else(|e| panic!("cannot start the pipe's thread: {e}"))
}

fn status_of(e: Ended) -> ExitStatus {
    match e {
        Ended::Eof => ExitStatus::Success,
        Ended::BrokenPipe => ExitStatus::BrokenPipe,
        Ended::Cancelled => ExitStatus::Cancelled,
    }
}

fn outcome(progress: &Progress, start: Instant, status: ExitStatus) -> CopyOutcome {
    CopyOutcome::measured(
        status,
        &progress.snapshot(),
        start.elapsed().as_secs_f64(),
        None,
    )
}

fn failed(progress: &Progress, start: Instant, e: &std::io::Error) -> CopyOutcome {
    CopyOutcome {
        fatal: Some(crate::present::quote::said(e)),
        ..outcome(progress, start, ExitStatus::Fatal)
    }
}

/// Passes everything: spliced when an end is a pipe and the other end takes it, else
/// through the buffer.
fn pass(job: &PipeJob, progress: &Progress, control: &Control) -> std::io::Result<Ended> {
    if job.input_kind == EndKind::Pipe || job.output_kind == EndKind::Pipe {
        match splice_all(job, progress, control) {
            // EINVAL before the first byte: an end splice cannot use (a file opened O_APPEND,
            // a filesystem without splice): the buffer does it.
            Err(Errno::INVAL) if progress.bytes_copied.load(Ordering::Relaxed) == 0 => {}
            r => return r.or_else(ended_by),
        }
    }
    copy_all(job, progress, control).or_else(ended_by)
}

/// EPIPE is how a reader that stopped ends the run, not an error.
fn ended_by(e: Errno) -> std::io::Result<Ended> {
    match e {
        Errno::PIPE => Ok(Ended::BrokenPipe),
        e => Err(e.into()),
    }
}

/// Waits while paused; `Some` once cancelled.
fn held(control: &Control) -> Option<Ended> {
    while control.paused.load(Ordering::SeqCst) && !control.cancelled.load(Ordering::SeqCst) {
        std::thread::sleep(CANCEL_POLL);
    }
    control
        .cancelled
        .load(Ordering::SeqCst)
        .then_some(Ended::Cancelled)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// splice(2) until the end of input, each wait timed on its own side. When the input holds
/// data, one splice moves it straight on: what it waits for is the output (writing; from a
/// file into a pipe with room, the file's read). When the input is an empty pipe, a splice into a pipe of this process's own
/// waits for the writer upstream alone (reading: `pipe_wait_readable`), and what it brought
/// is then spliced on (writing): one call that waited for both would put a reader's stall
/// on the writer upstream (a drained input refills in microseconds, then the full output
/// holds the call for seconds).
fn splice_all(job: &PipeJob, progress: &Progress, control: &Control) -> Result<Ended, Errno> {
    // Close-on-exec, as every descriptor here: a child this process starts (the holder of a
    // released file, the trace's rmdir) holding a pipe's end would keep its reader waiting.
    let (mid_r, mid_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    loop {
        if let Some(e) = held(control) {
            return Ok(e);
        }
        let n = if input_empty(job) {
            let got = timed(&progress.read_ns, || splice_some(&job.input, &mid_w))?;
            drain(&mid_r, &job.output, got, progress)?;
            got
        } else {
            let side = match reads_a_file_first(job) {
                true => &progress.read_ns,
                false => &progress.write_ns,
            };
            let sent = timed(side, || splice_some(&job.input, &job.output))?;
            progress
                .bytes_copied
                .fetch_add(sent as u64, Ordering::Relaxed);
            sent
        };
        if n == 0 {
            return Ok(Ended::Eof);
        }
    }
}

/// One splice of up to [`CHUNK`] bytes, retried when a signal interrupts it.
fn splice_some(from: &OwnedFd, to: &OwnedFd) -> Result<usize, Errno> {
    use rustix::pipe::{SpliceFlags, splice};
    loop {
        match splice(from, None, to, None, CHUNK, SpliceFlags::MOVE) {
            Err(Errno::INTR) => {}
            r => return r,
        }
    }
}

/// Runs `f`, adding its wall time to `counter`.
fn timed<T>(counter: &std::sync::atomic::AtomicU64, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let r = f();
    counter.fetch_add(nanos(t0.elapsed()), Ordering::Relaxed);
    r
}

/// Splices all `n` bytes of this process's pipe on to the output (writing).
fn drain(mid: &OwnedFd, out: &OwnedFd, mut n: usize, progress: &Progress) -> Result<(), Errno> {
    while n > 0 {
        let sent = timed(&progress.write_ns, || splice_some(mid, out))?;
        progress
            .bytes_copied
            .fetch_add(sent as u64, Ordering::Relaxed);
        n = n.saturating_sub(sent.max(1));
    }
    Ok(())
}

/// A file on the input into an output pipe with room: the splice's time is the file's read.
fn reads_a_file_first(job: &PipeJob) -> bool {
    if job.input_kind != EndKind::File || job.output_kind != EndKind::Pipe {
        return false;
    }
    let queued = rustix::io::ioctl_fionread(&job.output).unwrap_or(0);
    let room = rustix::pipe::fcntl_getpipe_size(&job.output).map_or(0, |c| c as u64);
    queued < room
}

/// Whether the input is a pipe with nothing in it now.
fn input_empty(job: &PipeJob) -> bool {
    job.input_kind == EndKind::Pipe && rustix::io::ioctl_fionread(&job.input).is_ok_and(|n| n == 0)
}

/// read(2) and write(2) through a 1 MiB buffer, each call's time counted on its side.
fn copy_all(job: &PipeJob, progress: &Progress, control: &Control) -> Result<Ended, Errno> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        if let Some(e) = held(control) {
            return Ok(e);
        }
        let t0 = Instant::now();
        let n = match rustix::io::read(&job.input, &mut buf) {
            Err(Errno::INTR) => continue,
            r => r?,
        };
        progress
            .read_ns
            .fetch_add(nanos(t0.elapsed()), Ordering::Relaxed);
        if n == 0 {
            return Ok(Ended::Eof);
        }
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let t0 = Instant::now();
            let w = match rustix::io::write(&job.output, rest) {
                Err(Errno::INTR) => continue,
                r => r?,
            };
            progress
                .write_ns
                .fetch_add(nanos(t0.elapsed()), Ordering::Relaxed);
            progress.bytes_copied.fetch_add(w as u64, Ordering::Relaxed);
            rest = &rest[w..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn job(input: OwnedFd, output: OwnedFd, size: Option<u64>) -> PipeJob {
        PipeJob {
            input_kind: EndKind::of(input.as_fd()),
            output_kind: EndKind::of(output.as_fd()),
            input,
            output,
            size,
        }
    }

    /// A file in, a pipe out (spliced); a file in, a file out (the buffer): every byte, in order.
    #[test]
    fn data_passes_unchanged_by_splice_and_by_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let src = dir.path().join("src");
        std::fs::write(&src, &data).unwrap();
        let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let j = job(std::fs::File::open(&src).unwrap().into(), w, None);
        assert_eq!(
            (j.input_kind, j.output_kind),
            (EndKind::File, EndKind::Pipe)
        );
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            std::fs::File::from(r).read_to_end(&mut got).unwrap();
            got
        });
        let progress = Progress::default();
        assert_eq!(
            pass(&j, &progress, &Control::default()).unwrap(),
            Ended::Eof
        );
        drop(j);
        assert_eq!(reader.join().unwrap(), data);
        assert_eq!(progress.bytes_copied.load(Ordering::Relaxed), 3_000_000);
        let out = dir.path().join("out");
        let j = job(
            std::fs::File::open(&src).unwrap().into(),
            std::fs::File::create(&out).unwrap().into(),
            None,
        );
        pass(&j, &Progress::default(), &Control::default()).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), data);
    }

    /// A reader that closes its end ends the run as a broken pipe, not an error.
    #[test]
    fn a_closed_reader_is_a_broken_pipe() {
        let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let (r2, w2) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        drop(r2);
        let mut feed = std::fs::File::from(w);
        feed.write_all(b"some data").unwrap();
        drop(feed);
        let j = job(r, w2, None);
        assert_eq!(
            pass(&j, &Progress::default(), &Control::default()).unwrap(),
            Ended::BrokenPipe
        );
    }

    #[test]
    fn a_file_on_the_input_gives_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::write(&src, vec![1u8; 5000]).unwrap();
        let mut f = std::fs::File::open(&src).unwrap();
        f.read_exact(&mut [0u8; 1000]).unwrap();
        assert_eq!(left_in(&f.into()), Some(4000));
    }
}
