//! The sustained rate: what the destination can absorb durably, measured while
//! it runs saturated — the destination disks busy ≥ 90 % at a steady rate, or a ZFS pool
//! syncing back to back. It caps the drop reference (running at the disk's speed after the
//! page cache filled is a *phase*, not a drop), and time lost is measured against it: a writer
//! that stops while the disks keep writing its backlog at full speed loses nothing durable;
//! only the part of a stall longer than the backlog lasts (backlog / sustained rate) is lost.
//! A disk that slows down (an SMR disk whose cache filled, a RAID resync beside the copy) does
//! not lower it at once: the rate it sustained before is kept, so the fall is a drop measured
//! against it, and only a fall that lasts [`LEARN_FALL_NS`] becomes the disk's new level.

use std::collections::VecDeque;

use super::attrib::TickInfo;

/// The destination counts as saturated when its disks were busy at least this much …
pub const SATURATED_UTIL_PCT: f64 = 90.0;
/// … for at least this share of the window.
pub const SATURATED_SHARE: f64 = 0.8;
/// Window over which saturation is judged (disks).
pub const DISK_WINDOW_NS: u64 = 3_000_000_000;
/// Window over which "syncs back to back" is judged (ZFS: a txg sync takes seconds).
pub const POOL_WINDOW_NS: u64 = 5_000_000_000;
/// The copy had been faster than this multiple of the sustained rate (the cache filling) …
pub const BURST_FACTOR: f64 = 2.0;
/// … and is now within this multiple of it: the phase changed.
pub const AT_RATE_FACTOR: f64 = 1.5;
/// The sustained rate of disks is the highest rate they were measured at, saturated (a 3 s
/// mean), within this long: a disk that slows is measured against what it sustained before,
/// and only a fall that lasts this long lowers it. Below the detector's 30 s rebase, so a
/// lasting fall is a phase, not a 30 s drop.
pub const LEARN_FALL_NS: u64 = 20_000_000_000;
/// Ticks kept to find where the cache-filling burst ended, until the phase is announced.
const FILL_TICKS: usize = 600;
/// The burst into the cache is judged on rates over this long: single 100 ms ticks of a
/// copy swing by 3 ×, and a writer that hands over 8 MiB at a time (smbd) fills a short
/// window with one write.
const FILL_WINDOW_NS: u64 = 500_000_000;
/// Onto disks, the copy runs at their rate this long before the phase is told.
const SETTLE_NS: u64 = 1_000_000_000;
/// Measured below this share of the sustained rate, the destination has slowed (the drop
/// detector's threshold is the same share); a fall that lowers the sustained rate below this
/// share of what it was is announced as a phase.
pub const FALL_SHARE: f64 = 0.5;

/// What saturated, for the phase event's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    Disk,
    Pool,
}

/// Sustained rate and the one-time phase announcement.
#[derive(Debug, Clone, Default)]
pub(crate) struct PhaseTracker {
    ceiling: Option<(f64, Limit)>,
    /// When the sustained rate was first measured (ns since start).
    known_since: Option<u64>,
    /// The copy ran faster than [`BURST_FACTOR`] × the ceiling at some point.
    burst: bool,
    announced: bool,
    /// Measured rates of the last [`LEARN_FALL_NS`], (t, rate), each lower than the one
    /// before it (the first is the highest).
    history: VecDeque<(u64, f64)>,
    /// The destination measured below [`FALL_SHARE`] × the sustained rate: since when, the
    /// sustained rate then, and the latest rate measured.
    fall: Option<Fall>,
    /// A fall that lowered the sustained rate, until the model announces it.
    learned: Option<Fall>,
    /// The copy's ticks since its first byte, until the phase is announced (at most
    /// [`FILL_TICKS`]): where the burst into the cache ended is found in them.
    fill: VecDeque<FillTick>,
    /// Since when the copy has run at the disks' sustained rate.
    at_rate_since: Option<u64>,
    /// The cache (dirty + writeback) where the burst into it ended: the level at which the
    /// kernel began to pace the copy to the disks.
    fill_level: Option<u64>,
}

/// A fall of the destination's rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fall {
    pub since: u64,
    /// Bytes copied when it began.
    pub bytes: u64,
    pub from: f64,
    pub to: f64,
}

/// The phase change, once: the sustained rate, what limits it, and where the burst into the
/// cache ended (`(t, bytes copied)`), when known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PhaseChange {
    pub rate: f64,
    pub limit: Limit,
    pub burst_end: Option<(u64, u64)>,
}

/// One tick of the copy before the phase change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FillTick {
    /// End of the tick, ns since start.
    pub t1: u64,
    /// Bytes copied by its end.
    pub bytes: u64,
    /// The cache then (dirty + writeback, or ZFS's dirty data), when known.
    pub cached: Option<u64>,
}

/// The copy's rate over a [`FILL_WINDOW_NS`] window ending at a kept tick, and whether the
/// cache grew over it (`None`: unknown). A fast window while the cache drains is the copy
/// catching up after a stall, not filling it.
#[derive(Debug, Clone, Copy)]
struct FillWindow {
    end: FillTick,
    rate: f64,
    filling: Option<bool>,
}

impl FillWindow {
    fn fills_at(&self, rate: f64) -> bool {
        self.filling != Some(false) && self.rate >= rate
    }
}

impl PhaseTracker {
    /// The sustained rate known so far (it stays once measured, updated while saturated).
    pub fn ceiling(&self) -> Option<f64> {
        self.ceiling.map(|c| c.0)
    }

    /// The cache level at which the kernel began to pace the copy to the disks, once the
    /// page-cache phase is known.
    pub fn fill_level(&self) -> Option<u64> {
        self.fill_level
    }

    /// The copy came down from filling the cache to the sustained rate (the phase was said).
    pub fn announced(&self) -> bool {
        self.announced
    }

    /// What limits the sustained rate, once known.
    pub fn limit(&self) -> Option<Limit> {
        self.ceiling.map(|c| c.1)
    }

    /// The sustained rate was known at `t`: the copy was already running at the
    /// destination's speed then.
    pub fn known_at(&self, t: u64) -> bool {
        self.known_since.is_some_and(|k| k <= t)
    }

    /// Measures saturation on the latest ticks: destination disks (`recent`, newest last) or,
    /// on ZFS, `pool` = (ns of the window some txg was syncing, pool write rate while syncing).
    /// `bytes` is what the copy has copied so far. Returns the (possibly updated) ceiling.
    pub fn measure(
        &mut self,
        recent: &VecDeque<TickInfo>,
        on_zfs: bool,
        pool: Option<(u64, Option<f64>)>,
        bytes: u64,
    ) -> Option<f64> {
        let measured = if on_zfs {
            pool.and_then(|(covered, rate)| {
                let rate = rate?;
                let copying = window(recent, POOL_WINDOW_NS).any(|t| t.bytes > 0);
                (copying && covered as f64 >= SATURATED_SHARE * POOL_WINDOW_NS as f64)
                    .then_some((rate, Limit::Pool))
            })
        } else {
            disk_saturated(recent).map(|r| (r, Limit::Disk))
        };
        let now = recent.back().map_or(0, |t| t.t1);
        if let Some((rate, limit)) = measured {
            if limit == Limit::Pool {
                // A pool's rate is its txgs' (Σ nwritten ÷ Σ stime of those in the window):
                // it follows them, and a slower txg is reported with its own figures.
                self.history.clear();
            }
            while self.history.back().is_some_and(|h| h.1 <= rate) {
                self.history.pop_back();
            }
            self.history.push_back((now, rate));
            while self.history.len() > 1
                && self
                    .history
                    .front()
                    .is_some_and(|h| h.0 + LEARN_FALL_NS <= now)
            {
                self.history.pop_front();
            }
            let c = self.history.front().map_or(rate, |h| h.1);
            self.ceiling = Some((c, limit));
            self.track_fall((now, bytes), c, rate);
            self.known_since.get_or_insert(now);
        }
        self.ceiling()
    }

    fn track_fall(&mut self, (now, bytes): (u64, u64), c: f64, rate: f64) {
        match self.fall.as_mut() {
            Some(f) if c < FALL_SHARE * f.from => {
                f.to = rate;
                self.learned = self.fall.take();
            }
            Some(_) if rate >= FALL_SHARE * c => self.fall = None,
            Some(f) => f.to = rate,
            None if rate < FALL_SHARE * c => {
                self.fall = Some(Fall {
                    since: now,
                    bytes,
                    from: c,
                    to: rate,
                })
            }
            None => {}
        }
    }

    /// The destination's latest measured rate while it has slowed below [`FALL_SHARE`] of the
    /// sustained rate (not yet long enough to be its new level).
    pub fn slowed_to(&self) -> Option<f64> {
        self.fall.map(|f| f.to)
    }

    /// Once per lasting fall: when it began, the rate before and the new level.
    pub fn take_learned(&mut self) -> Option<Fall> {
        self.learned.take()
    }

    /// Seconds a stall of `secs` cost against the sustained rate when `backlog` bytes were
    /// waiting to be written as it began: the disks keep writing for backlog / rate seconds,
    /// so only the rest is lost. `None` without a sustained rate.
    pub fn lost_secs(&self, secs: f64, backlog: Option<u64>) -> Option<f64> {
        let c = self.ceiling()?;
        let covered = backlog.map_or(0.0, |b| b as f64 / c);
        Some((secs - covered).max(0.0))
    }

    /// Keeps one tick of the copy until the phase is announced.
    pub fn observe(&mut self, tick: FillTick) {
        if self.announced {
            return;
        }
        if self.fill.len() >= FILL_TICKS {
            self.fill.pop_front();
        }
        self.fill.push_back(tick);
    }

    /// Once per run: the copy came down from a burst into the cache above the sustained rate
    /// to it. `smoothed` is the copy speed at `t`. Returns the sustained rate, what limits it,
    /// and, onto disks, where the burst ended (`(t, bytes copied)`).
    ///
    /// A pool comes down to its rate in its first long sync, a drop of its own: the phase is
    /// told beside it once the copy's speed is at the rate after a burst, and its rate is the
    /// one its txgs told by then. Onto disks, the burst is a [`FILL_WINDOW_NS`] window that
    /// filled the cache at [`BURST_FACTOR`] × the rate (a fast window while the cache drains is
    /// the copy catching up after a stall), and the copy must then run at the rate (within
    /// [`FALL_SHARE`]–[`AT_RATE_FACTOR`] ×, no drop open) for [`SETTLE_NS`]: a copy passing
    /// through the disk's rate on its way into a drop is the drop's story. The burst ended at
    /// the last window that still filled the cache faster than [`AT_RATE_FACTOR`] × the rate.
    pub fn phase_change(&mut self, t: u64, smoothed: f64, in_drop: bool) -> Option<PhaseChange> {
        let (c, limit) = self.ceiling?;
        if self.announced {
            return None;
        }
        if limit == Limit::Pool {
            self.burst |= smoothed >= BURST_FACTOR * c;
            if !self.burst || smoothed > AT_RATE_FACTOR * c {
                return None;
            }
            self.announced = true;
            self.fill.clear();
            return Some(PhaseChange {
                rate: c,
                limit,
                burst_end: None,
            });
        }
        let windows = self.fill_windows();
        self.burst |= windows.iter().any(|w| w.fills_at(BURST_FACTOR * c));
        let at_rate = !in_drop && (FALL_SHARE * c..=AT_RATE_FACTOR * c).contains(&smoothed);
        if !at_rate {
            self.at_rate_since = None;
        }
        let since = *self.at_rate_since.get_or_insert(t);
        if !self.burst || !at_rate || t < since + SETTLE_NS {
            return None;
        }
        self.announced = true;
        let last = windows
            .iter()
            .rev()
            .find(|w| w.fills_at(AT_RATE_FACTOR * c));
        self.fill_level = last.and_then(|w| w.end.cached);
        let end = last.map(|w| (w.end.t1, w.end.bytes));
        self.fill.clear();
        Some(PhaseChange {
            rate: c,
            limit,
            burst_end: end,
        })
    }

    /// The kept ticks as windows of [`FILL_WINDOW_NS`] ending at each.
    fn fill_windows(&self) -> Vec<FillWindow> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, end) in self.fill.iter().enumerate() {
            while start + 1 < i && self.fill[start + 1].t1 + FILL_WINDOW_NS <= end.t1 {
                start += 1;
            }
            let first = self.fill[start];
            let span = end.t1.saturating_sub(first.t1);
            if span < FILL_WINDOW_NS {
                continue;
            }
            out.push(FillWindow {
                end: *end,
                rate: end.bytes.saturating_sub(first.bytes) as f64 * 1e9 / span as f64,
                filling: match (first.cached, end.cached) {
                    (Some(a), Some(b)) => Some(b > a),
                    _ => None,
                },
            });
        }
        out
    }

    /// A drop was found to be the phase change itself (the detector cancelled it).
    pub fn announce(&mut self) -> Option<(f64, Limit)> {
        if self.announced {
            return None;
        }
        self.announced = true;
        self.fill.clear();
        self.ceiling
    }
}

/// Ticks ending within `ns` of the newest.
fn window(recent: &VecDeque<TickInfo>, ns: u64) -> impl Iterator<Item = &TickInfo> {
    let now = recent.back().map_or(0, |t| t.t1);
    recent.iter().filter(move |t| t.t1 + ns > now)
}

/// Mean destination write rate over the last [`DISK_WINDOW_NS`] when the disks were busy
/// ≥ 90 % for ≥ 80 % of it while this copy was writing.
fn disk_saturated(recent: &VecDeque<TickInfo>) -> Option<f64> {
    let (mut span, mut busy, mut bytes, mut dev_ns, mut copied) = (0u64, 0u64, 0.0, 0u64, 0u64);
    for t in window(recent, DISK_WINDOW_NS) {
        let (Some(b), Some(u)) = (t.dev_bps, t.dev_util) else {
            continue;
        };
        span += t.dt();
        if u >= SATURATED_UTIL_PCT {
            busy += t.dt();
        }
        bytes += b * t.dt() as f64;
        dev_ns += t.dt();
        copied = copied.saturating_add(t.bytes);
    }
    let full = span as f64 >= 0.8 * DISK_WINDOW_NS as f64;
    let rate = bytes / dev_ns.max(1) as f64;
    (full && copied > 0 && busy as f64 >= SATURATED_SHARE * span as f64 && rate >= 1e6)
        .then_some(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 100_000_000;

    fn tick(i: u64, mbps: f64, dev_mbps: f64, util: f64) -> TickInfo {
        TickInfo {
            t0: i * TICK,
            t1: (i + 1) * TICK,
            bytes: (mbps * 1e5) as u64,
            dev_bps: Some(dev_mbps * 1e6),
            dev_util: Some(util),
            ..Default::default()
        }
    }

    #[test]
    fn a_saturated_disk_sets_the_ceiling_and_the_backlog_absorbs_a_stall() {
        let mut p = PhaseTracker::default();
        let mut recent = VecDeque::new();
        // 3 s at 400 MB/s into the cache while the disk writes 40 MB/s flat out.
        let mut bytes = 0;
        for i in 0..30 {
            recent.push_back(tick(i, 400.0, 40.0, 100.0));
            bytes += 40_000_000;
            p.observe(FillTick {
                t1: (i + 1) * TICK,
                bytes,
                cached: Some(bytes * 9 / 10),
            });
            p.measure(&recent, false, None, 0);
        }
        assert_eq!(p.ceiling().map(|c| c.round()), Some(40e6));
        assert_eq!(p.phase_change(30 * TICK, 400e6, false), None);
        // Then at disk speed, the cache full: the phase is told once the copy has run there
        // for a second, from the end of the last half second that still filled the cache.
        for i in 30..41 {
            bytes += 4_100_000;
            p.observe(FillTick {
                t1: (i + 1) * TICK,
                bytes,
                cached: Some(1_080_000_000),
            });
        }
        assert_eq!(p.phase_change(31 * TICK, 41e6, false), None);
        let change = p.phase_change(41 * TICK, 41e6, false).unwrap();
        assert_eq!(change.limit, Limit::Disk);
        assert_eq!(change.burst_end, Some((34 * TICK, 1_216_400_000)));
        assert_eq!(p.phase_change(42 * TICK, 41e6, false), None);
        // A 2 s stall with 120 MB waiting: the disk stays busy 3 s, nothing is lost.
        assert_eq!(p.lost_secs(2.0, Some(120_000_000)), Some(0.0));
        // With 40 MB waiting, the last second of a 2 s stall is lost.
        let lost = p.lost_secs(2.0, Some(40_000_000)).unwrap();
        assert!((lost - 1.0).abs() < 1e-6, "{lost}");
        assert_eq!(PhaseTracker::default().lost_secs(2.0, None), None);
    }

    #[test]
    fn a_disk_that_slows_keeps_its_rate_until_the_fall_lasts() {
        let mut p = PhaseTracker::default();
        let mut recent = VecDeque::new();
        let mut feed = |p: &mut PhaseTracker, from: u64, to: u64, dev: f64| {
            for i in from..to {
                if recent.len() >= 64 {
                    recent.pop_front();
                }
                recent.push_back(tick(i, dev, dev, 100.0));
                p.measure(&recent, false, None, 0);
            }
        };
        feed(&mut p, 0, 100, 40.0);
        assert_eq!(p.ceiling().map(|c| c.round()), Some(40e6));
        // 8 s at 5 MB/s: still 40 MB/s sustained, the fall seen.
        feed(&mut p, 100, 180, 5.0);
        assert_eq!(p.ceiling().map(|c| c.round()), Some(40e6));
        assert_eq!(p.slowed_to().map(|c| c.round()), Some(5e6));
        feed(&mut p, 180, 260, 40.0);
        assert_eq!(p.slowed_to(), None);
        assert_eq!(p.take_learned(), None);
        // A fall to 5 MB/s that lasts: after 20 s it is the new level, said once.
        feed(&mut p, 260, 500, 5.0);
        assert_eq!(p.ceiling().map(|c| c.round()), Some(5e6));
        let f = p.take_learned().unwrap();
        assert_eq!((f.from.round(), f.to.round()), (40e6, 5e6));
        // Since the 3 s mean fell under half (1.8 s into the fall).
        assert!((26.0..28.5).contains(&(f.since as f64 / 1e9)), "{f:?}");
        assert_eq!(p.take_learned(), None);
        // A faster disk raises it at once.
        feed(&mut p, 500, 540, 30.0);
        assert_eq!(p.ceiling().map(|c| c.round()), Some(30e6));
    }

    #[test]
    fn a_disk_that_is_not_busy_sets_nothing() {
        let mut p = PhaseTracker::default();
        let recent: VecDeque<_> = (0..30).map(|i| tick(i, 400.0, 40.0, 60.0)).collect();
        assert_eq!(p.measure(&recent, false, None, 0), None);
        // Busy but the copy wrote nothing (someone else's writes): no ceiling either.
        let recent: VecDeque<_> = (0..30).map(|i| tick(i, 0.0, 40.0, 100.0)).collect();
        assert_eq!(p.measure(&recent, false, None, 0), None);
    }
}
