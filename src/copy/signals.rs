//! The one place signals are caught. SIGINT/SIGTERM/SIGHUP/SIGQUIT → `Control.cancelled`:
//! the engine then stops, removes its temporary files, finishes its directories and returns
//! `Cancelled` (exit 130 for all four: "cancelled"; SIGQUIT's default, a core dump, would
//! leave 0700 directories behind). A loop that answers signals itself (the TUI's: a hang-up
//! draws nothing more, SIGCONT redraws) [`listen`]s to the same handler.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::Control;

static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The loops that hear every signal the handler catches.
static LISTENERS: Mutex<Vec<UnboundedSender<i32>>> = Mutex::new(Vec::new());

/// A handler thread is running.
static HANDLING: AtomicBool = AtomicBool::new(false);

/// Keeps the handler thread alive; dropping it restores nothing (the handlers stay
/// registered so a late signal still only cancels) but stops the thread.
pub struct SignalGuard {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        HANDLING.store(false, Ordering::SeqCst);
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Routes SIGINT, SIGTERM, SIGHUP and SIGQUIT to `control.cancelled` from a small thread
/// (no work in signal context), and every signal it catches (SIGCONT too, which cancels
/// nothing) to the loops that [`listen`]. Used by every command that runs a loop.
pub fn install_signal_handlers(control: Arc<Control>) -> std::io::Result<SignalGuard> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCONT])?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new()
        .name("copyscope-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if sig != SIGCONT {
                    LAST_SIGNAL.store(sig, Ordering::SeqCst);
                    control.cancel();
                }
                listeners().retain(|l| l.send(sig).is_ok());
            }
        })?;
    HANDLING.store(true, Ordering::SeqCst);
    Ok(SignalGuard {
        handle,
        thread: Some(thread),
    })
}

fn listeners() -> std::sync::MutexGuard<'static, Vec<UnboundedSender<i32>>> {
    LISTENERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every signal the handler catches from now on (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCONT);
/// an error when no handler runs, so a loop never goes without its signals unnoticed.
pub fn listen() -> std::io::Result<UnboundedReceiver<i32>> {
    if !HANDLING.load(Ordering::SeqCst) {
        return Err(std::io::Error::other("no signal handler is installed"));
    }
    let (tx, rx) = unbounded_channel();
    listeners().push(tx);
    Ok(rx)
}

/// The last of SIGINT/SIGTERM/SIGHUP/SIGQUIT received, if any.
pub fn last_signal() -> Option<i32> {
    match LAST_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
