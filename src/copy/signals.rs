//! SIGINT/SIGTERM/SIGHUP/SIGQUIT → `Control.cancelled`: the engine then stops, removes its
//! temporary files, finishes its directories and returns `Cancelled` (exit 130 for all four:
//! "cancelled"; SIGQUIT's default, a core dump, would leave 0700 directories behind).

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread::JoinHandle;

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

use super::Control;

static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Keeps the handler thread alive; dropping it restores nothing (the handlers stay
/// registered so a late signal still only cancels) but stops the thread.
pub struct SignalGuard {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Routes SIGINT, SIGTERM, SIGHUP and SIGQUIT to `control.cancelled` from a small thread
/// (no work in signal context). Used by the plain frontend, the demo and the TUI.
pub fn install_signal_handlers(control: Arc<Control>) -> std::io::Result<SignalGuard> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new()
        .name("copyscope-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                LAST_SIGNAL.store(sig, Ordering::SeqCst);
                control.cancelled.store(true, Ordering::SeqCst);
            }
        })?;
    Ok(SignalGuard {
        handle,
        thread: Some(thread),
    })
}

/// The last of SIGINT/SIGTERM/SIGHUP/SIGQUIT received, if any.
pub fn last_signal() -> Option<i32> {
    match LAST_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
