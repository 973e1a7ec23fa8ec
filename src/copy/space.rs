//! The destination's free space as the copy sees it: the budget files claim before the
//! census has compared the totals with the free space, the hold while the user is asked
//! about a copy that will not fit, and the strikes that stop a copy once the disk is full.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

/// Free space below which a destination counts as full for every file still to come.
pub(crate) const FULL_BELOW: u64 = 64 << 10;

/// Shared by the census (which opens and settles the check) and the workers (which claim).
pub(crate) struct SpaceGate {
    /// Set while the free-space question is open: workers wait before their next write.
    hold: AtomicBool,
    /// Set until the census has compared the totals with the free space.
    pending: AtomicBool,
    /// Bytes the copy may write before that comparison: most of the space free at the start
    /// (`u64::MAX` when unknown). Files are claimed against it as they start.
    budget: AtomicU64,
    claimed: AtomicU64,
    /// An entry failed with ENOSPC since the last [`SpaceGate::full_strike`].
    out_of_space: AtomicBool,
    /// Failures for want of space in a row that left the destination full.
    full_strikes: AtomicU8,
}

impl Default for SpaceGate {
    fn default() -> SpaceGate {
        SpaceGate {
            hold: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            budget: AtomicU64::new(u64::MAX),
            claimed: AtomicU64::new(0),
            out_of_space: AtomicBool::new(false),
            full_strikes: AtomicU8::new(0),
        }
    }
}

impl SpaceGate {
    /// The census will compare the totals with the free space; until then files may claim
    /// `budget` bytes.
    pub(crate) fn open_check(&self, budget: u64) {
        self.budget.store(budget, Ordering::SeqCst);
        self.pending.store(true, Ordering::SeqCst);
    }

    /// The census has compared (or was stopped): nothing waits for it any more.
    pub(crate) fn settle_check(&self) {
        self.pending.store(false, Ordering::SeqCst);
    }

    pub(crate) fn check_pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst)
    }

    /// A file of `len` bytes is about to be written: whether it must wait for the check,
    /// since with it the copy would pass the budget while the check is still open.
    pub(crate) fn claim_must_wait(&self, len: u64) -> bool {
        if !self.check_pending() {
            return false;
        }
        let claimed = self.claimed.fetch_add(len, Ordering::SeqCst) + len;
        claimed > self.budget.load(Ordering::SeqCst)
    }

    pub(crate) fn set_hold(&self, on: bool) {
        self.hold.store(on, Ordering::SeqCst);
    }

    pub(crate) fn held(&self) -> bool {
        self.hold.load(Ordering::SeqCst)
    }

    /// An entry failed with ENOSPC.
    pub(crate) fn mark_out_of_space(&self) {
        self.out_of_space.store(true, Ordering::SeqCst);
    }

    /// Whether an entry failed with ENOSPC since the last call (and so whether the free
    /// space is worth a look).
    pub(crate) fn take_out_of_space(&self) -> bool {
        self.out_of_space.swap(false, Ordering::SeqCst)
    }

    /// After a failure for want of space, with `free` bytes left once its temporary is
    /// gone: true on the second strike in a row of a destination with next to no space.
    pub(crate) fn full_strike(&self, free: u64) -> bool {
        if free >= FULL_BELOW {
            self.full_strikes.store(0, Ordering::SeqCst);
            false
        } else {
            self.full_strikes.fetch_add(1, Ordering::SeqCst) >= 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_wait_only_past_the_budget_and_only_while_the_check_is_open() {
        let g = SpaceGate::default();
        assert!(
            !g.claim_must_wait(u64::MAX / 2),
            "no check open: nothing waits"
        );
        g.open_check(100);
        assert!(!g.claim_must_wait(60));
        assert!(!g.claim_must_wait(40), "exactly the budget fits");
        assert!(g.claim_must_wait(1), "one byte past it waits");
        g.settle_check();
        assert!(!g.claim_must_wait(1_000), "a settled check holds nothing");
    }

    #[test]
    fn a_full_disk_stops_the_copy_on_the_second_strike_in_a_row() {
        let g = SpaceGate::default();
        assert!(!g.full_strike(0), "the first strike only counts");
        assert!(
            !g.full_strike(FULL_BELOW),
            "space came back: the count starts again"
        );
        assert!(!g.full_strike(FULL_BELOW - 1));
        assert!(g.full_strike(0), "two in a row stop it");
    }

    #[test]
    fn out_of_space_is_taken_once() {
        let g = SpaceGate::default();
        assert!(!g.take_out_of_space());
        g.mark_out_of_space();
        assert!(g.take_out_of_space());
        assert!(!g.take_out_of_space());
    }
}
