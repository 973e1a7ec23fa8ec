//! Where the faces write — the TUI's frames, the progress lines, the summaries: standard
//! output, except under `copyscope pipe`, whose standard output is the data and whose faces
//! write to standard error (as pv's display does). One switch for the whole process, set
//! before a face starts.

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

static ON_STDERR: AtomicBool = AtomicBool::new(false);

/// From now on every face writes to standard error (standard output carries data).
pub fn faces_to_stderr() {
    ON_STDERR.store(true, Ordering::SeqCst);
}

/// Whether the faces write to standard error.
pub fn on_stderr() -> bool {
    ON_STDERR.load(Ordering::SeqCst)
}

/// The stream the faces write to.
pub enum FaceOut {
    Stdout(io::StdoutLock<'static>),
    Stderr(io::StderrLock<'static>),
}

/// The faces' stream, locked for one write.
pub fn face_out() -> FaceOut {
    if on_stderr() {
        FaceOut::Stderr(io::stderr().lock())
    } else {
        FaceOut::Stdout(io::stdout().lock())
    }
}

impl Write for FaceOut {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            FaceOut::Stdout(o) => o.write(b),
            FaceOut::Stderr(o) => o.write(b),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            FaceOut::Stdout(o) => o.flush(),
            FaceOut::Stderr(o) => o.flush(),
        }
    }
}

impl AsFd for FaceOut {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            FaceOut::Stdout(o) => o.as_fd(),
            FaceOut::Stderr(o) => o.as_fd(),
        }
    }
}
