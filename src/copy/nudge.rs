//! A wake-up the copy's waiting threads share: the engine waiting for its workers and for
//! the flush sleeps until something it waits for happened (a worker ended, the flush child
//! exited, the user cancelled) instead of looking every few ms. Each look was a switch of a
//! copy thread, and under the exact trace a kernel stack recorded and read back.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A generation counter and its condition variable: a waiter remembers the generation it
/// last looked at, checks its conditions, then sleeps until the generation moves past it,
/// so a wake between its check and its sleep is never lost.
#[derive(Debug, Default)]
pub struct Nudge {
    generation: Mutex<u64>,
    moved: Condvar,
}

impl Nudge {
    /// Wakes every waiter.
    pub fn wake(&self) {
        let mut g = self.generation.lock().unwrap_or_else(|p| p.into_inner());
        *g = g.wrapping_add(1);
        self.moved.notify_all();
    }

    /// The generation now: take it before checking what is waited for.
    pub fn seen(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps until the generation moves past `seen` or `timeout` passes (the fallback for a
    /// condition that nobody wakes for).
    pub fn wait_past(&self, seen: u64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut g = self.generation.lock().unwrap_or_else(|p| p.into_inner());
        while *g == seen {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            g = self
                .moved
                .wait_timeout(g, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_wake_before_the_sleep_is_not_lost_and_one_during_it_ends_it() {
        let n = Nudge::default();
        let seen = n.seen();
        n.wake();
        let t = Instant::now();
        n.wait_past(seen, Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(5));

        let n = Arc::new(Nudge::default());
        let seen = n.seen();
        let waker = {
            let n = n.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                n.wake();
            })
        };
        let t = Instant::now();
        n.wait_past(seen, Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(5));
        waker.join().unwrap();
    }

    #[test]
    fn without_a_wake_the_timeout_ends_the_sleep() {
        let n = Nudge::default();
        let t = Instant::now();
        n.wait_past(n.seen(), Duration::from_millis(30));
        assert!(t.elapsed() >= Duration::from_millis(30));
    }
}
