//! Speed-drop detection (DESIGN §5a): a rolling reference (median of recent non-drop
//! ticks), a short time-weighted smoothing for decisions, and a small state machine
//! (idle → candidate → drop → ended) whose boundaries are refined from raw ticks.

use std::collections::VecDeque;

/// Detector settings (copied from `ModelConfig`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DetectConfig {
    pub drop_ratio: f64,
    pub recover_ratio: f64,
    pub min_drop_ns: u64,
    pub reference_window_ns: u64,
    pub min_reference_ns: u64,
    pub smooth_ticks: usize,
    pub rebase_after_ns: u64,
}

/// One tick of copy progress: `bytes` copied between `t0` and `t1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SpeedTick {
    pub t0: u64,
    pub t1: u64,
    pub bytes: u64,
}

impl SpeedTick {
    pub fn dt(&self) -> u64 {
        self.t1 - self.t0
    }
    pub fn bps(&self) -> f64 {
        self.bytes as f64 * 1e9 / self.dt() as f64
    }
}

/// What a tick did to the detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step {
    /// Nothing happening (or still in the same state).
    Quiet,
    /// A possible drop began at `start` (backdated to the first slow raw tick).
    Candidate { start: u64, reference: f64 },
    /// The candidate lasted long enough: it is a drop.
    Confirmed { start: u64 },
    /// The candidate recovered before `min_drop_ns`: forget it.
    Abandoned,
    /// The drop ended.
    Ended(DropSpan),
}

/// A finished drop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DropSpan {
    pub start: u64,
    pub end: u64,
    pub reference: f64,
    pub min_bps: f64,
    pub bytes_lost: f64,
}

#[derive(Debug, Clone, Copy)]
struct RefEntry {
    t1: u64,
    dt: u64,
    bps: f64,
}

#[derive(Debug, Clone, Copy)]
struct Open {
    confirmed: bool,
    start: u64,
    reference: f64,
    /// End of the latest raw tick below the drop threshold.
    last_below_end: u64,
    min_bps: f64,
    /// Bytes copied since `start`.
    bytes: u64,
    /// Start of the current run of raw ticks at or above the recovery threshold, and the
    /// bytes copied before it: the drop ends there when the smoothed speed confirms it.
    recovering_since: Option<(u64, u64)>,
}

/// Cap on kept ticks per ring (10 s at 100 ms is 100; faster ticks are covered by the cap).
const REF_CAP: usize = 600;
/// Recent raw ticks kept for backdating a candidate's start.
const RECENT_CAP: usize = 16;

#[derive(Debug, Clone)]
pub(crate) struct Detector {
    cfg: DetectConfig,
    smooth: VecDeque<SpeedTick>,
    /// Ticks of normal copying, the newest `reference_window_ns` of them: the window counts
    /// copying time, not wall time, so a copy that stalls most of the time keeps a reference.
    normal: VecDeque<RefEntry>,
    normal_ns: u64,
    /// Ticks of the open candidate or drop (the newest window of them).
    in_drop: VecDeque<RefEntry>,
    recent: VecDeque<SpeedTick>,
    open: Option<Open>,
    scratch: Vec<f64>,
    /// Smoothed speed after the last tick.
    smoothed: f64,
    /// What the destination can sustain (device saturated, pool syncing back to back): the
    /// reference never exceeds it, so running at the disk's speed is not a drop.
    ceiling: Option<f64>,
}

impl Detector {
    pub fn new(cfg: DetectConfig) -> Detector {
        Detector {
            cfg,
            smooth: VecDeque::with_capacity(cfg.smooth_ticks.max(1)),
            normal: VecDeque::new(),
            normal_ns: 0,
            in_drop: VecDeque::new(),
            recent: VecDeque::with_capacity(RECENT_CAP),
            open: None,
            scratch: Vec::new(),
            smoothed: 0.0,
            ceiling: None,
        }
    }

    /// Start of a confirmed, still open drop.
    pub fn open_drop_start(&self) -> Option<u64> {
        self.open.filter(|o| o.confirmed).map(|o| o.start)
    }

    /// The reference the open drop is measured against.
    pub fn open_reference(&self) -> Option<f64> {
        self.open.map(|o| o.reference)
    }

    /// Bytes copied since the open drop started.
    pub fn open_bytes(&self) -> Option<u64> {
        self.open.map(|o| o.bytes)
    }

    /// Lowest smoothed speed of the open drop.
    pub fn open_min(&self) -> Option<f64> {
        self.open.map(|o| o.min_bps)
    }

    /// The current reference, once enough normal copying has been seen.
    pub fn reference(&mut self) -> Option<f64> {
        if self.normal_ns < self.cfg.min_reference_ns || self.normal.is_empty() {
            return None;
        }
        let m = median(&mut self.scratch, self.normal.iter().map(|e| e.bps));
        let r = self.ceiling.map_or(m, |c| m.min(c));
        (r > 0.0).then_some(r)
    }

    /// Sets (or clears) the sustained rate that caps the reference. An open drop measured
    /// against a higher reference is reconsidered: if the copy runs at or near the new
    /// ceiling it was no drop but a phase change — it is dropped and its start returned (its
    /// ticks become normal copying); if it is still far below, it stays open, measured
    /// against the ceiling.
    pub fn set_ceiling(&mut self, ceiling: Option<f64>) -> Option<u64> {
        self.ceiling = ceiling.filter(|c| *c > 0.0);
        let c = self.ceiling?;
        let mut o = self.open?;
        if o.reference <= c {
            return None;
        }
        if self.smoothed >= self.cfg.drop_ratio * c {
            self.open = None;
            self.release_in_drop(0);
            return Some(o.start);
        }
        o.reference = c;
        self.open = Some(o);
        None
    }

    fn push_normal(&mut self, e: RefEntry) {
        self.normal_ns += e.dt;
        self.normal.push_back(e);
        while let Some(front) = self.normal.front() {
            let over = self.normal_ns - front.dt >= self.cfg.reference_window_ns;
            if over || self.normal.len() > REF_CAP {
                self.normal_ns -= front.dt;
                self.normal.pop_front();
            } else {
                break;
            }
        }
    }

    fn push_in_drop(&mut self, e: RefEntry) {
        self.in_drop.push_back(e);
        let from = e.t1.saturating_sub(self.cfg.reference_window_ns);
        while let Some(front) = self.in_drop.front() {
            if front.t1 <= from || self.in_drop.len() > REF_CAP {
                self.in_drop.pop_front();
            } else {
                break;
            }
        }
    }

    /// Moves the drop ticks that end after `t` back to normal copying (recovery ticks, an
    /// abandoned candidate, a rebase) and forgets the rest.
    fn release_in_drop(&mut self, after: u64) {
        let ticks: Vec<RefEntry> = self.in_drop.drain(..).filter(|e| e.t1 > after).collect();
        for e in ticks {
            self.push_normal(e);
        }
    }

    /// Feeds one tick while detection is allowed.
    pub fn step(&mut self, tick: SpeedTick) -> Step {
        if tick.t1 <= tick.t0 {
            return Step::Quiet;
        }
        push_capped(&mut self.smooth, tick, self.cfg.smooth_ticks.max(1));
        push_capped(&mut self.recent, tick, RECENT_CAP);
        let (b, d) = self.smooth.iter().fold((0u64, 0u64), |(b, d), t| {
            (b.saturating_add(t.bytes), d + t.dt())
        });
        self.smoothed = b as f64 * 1e9 / d as f64;
        let s = self.smoothed;
        let raw = tick.bps();
        let entry = RefEntry {
            t1: tick.t1,
            dt: tick.dt(),
            bps: raw,
        };

        match self.open {
            None => {
                let step = self.step_idle(tick, s);
                if self.open.is_some() {
                    self.push_in_drop(entry);
                } else {
                    self.push_normal(entry);
                }
                step
            }
            Some(open) => {
                self.push_in_drop(entry);
                self.step_open(open, tick, raw, s)
            }
        }
    }

    fn step_idle(&mut self, tick: SpeedTick, s: f64) -> Step {
        // The median never exceeds the maximum: above ratio × max no drop is possible and
        // the median (the costly part of a tick) is not needed.
        let max = self.normal.iter().map(|e| e.bps).fold(0.0, f64::max);
        if s >= self.cfg.drop_ratio * max {
            return Step::Quiet;
        }
        let Some(reference) = self.reference() else {
            return Step::Quiet;
        };
        let thr = self.cfg.drop_ratio * reference;
        if s >= thr {
            return Step::Quiet;
        }
        // Backdate to the first raw tick of the slow run that dragged the mean down.
        let mut start = tick.t0;
        let mut bytes: u64 = 0;
        let mut last_below_end = None;
        for t in self.recent.iter().rev() {
            if t.bps() >= thr {
                break;
            }
            start = t.t0;
            bytes = bytes.saturating_add(t.bytes);
            last_below_end.get_or_insert(t.t1);
        }
        if last_below_end.is_none() {
            bytes = tick.bytes;
        }
        // Ticks already taken as normal inside the candidate move to the drop.
        while let Some(back) = self.normal.back() {
            if back.t1 <= start {
                break;
            }
            self.normal_ns -= back.dt;
            let e = *back;
            self.normal.pop_back();
            self.in_drop.push_front(e);
        }
        self.open = Some(Open {
            confirmed: false,
            start,
            reference,
            last_below_end: last_below_end.unwrap_or(start),
            min_bps: s,
            bytes,
            recovering_since: None,
        });
        self.maybe_confirm()
            .unwrap_or(Step::Candidate { start, reference })
    }

    fn maybe_confirm(&mut self) -> Option<Step> {
        let o = self.open.as_mut()?;
        if !o.confirmed && o.last_below_end.saturating_sub(o.start) >= self.cfg.min_drop_ns {
            o.confirmed = true;
            return Some(Step::Confirmed { start: o.start });
        }
        None
    }

    fn step_open(&mut self, mut o: Open, tick: SpeedTick, raw: f64, s: f64) -> Step {
        let drop_thr = self.cfg.drop_ratio * o.reference;
        let rec_thr = self.cfg.recover_ratio * o.reference;
        let bytes_before = o.bytes;
        o.bytes = o.bytes.saturating_add(tick.bytes);
        o.min_bps = o.min_bps.min(s);
        if raw < drop_thr {
            o.last_below_end = tick.t1;
        }
        if raw >= rec_thr {
            o.recovering_since.get_or_insert((tick.t0, bytes_before));
        } else {
            o.recovering_since = None;
        }

        if !o.confirmed {
            if s >= drop_thr {
                self.open = None;
                // The candidate's ticks were ordinary after all.
                self.release_in_drop(0);
                return Step::Abandoned;
            }
            self.open = Some(o);
            return self.maybe_confirm().unwrap_or(Step::Quiet);
        }

        if s >= rec_thr {
            let (end, bytes) = o.recovering_since.unwrap_or((tick.t1, o.bytes));
            let end = end.max(o.start);
            self.open = None;
            // The recovery ticks are normal copying again.
            self.release_in_drop(end);
            return Step::Ended(span(&o, end, bytes));
        }
        if tick.t1.saturating_sub(o.start) >= self.cfg.rebase_after_ns
            && median(&mut self.scratch, self.in_drop.iter().map(|e| e.bps)) > 0.0
        {
            // A long drop that still moves is a new normal (e.g. from large files to small
            // ones): close it here and let the recent level become the reference.
            self.open = None;
            self.normal.clear();
            self.normal_ns = 0;
            self.release_in_drop(0);
            return Step::Ended(span(&o, tick.t1, o.bytes));
        }
        self.open = Some(o);
        Step::Quiet
    }

    /// Stops detection at `t` (pause, end of the copy phase): an open drop ends there, a
    /// candidate is forgotten, and smoothing starts afresh.
    pub fn interrupt(&mut self, t: u64) -> Option<DropSpan> {
        self.smooth.clear();
        self.recent.clear();
        let o = self.open.take();
        match o {
            Some(o) if o.confirmed => {
                self.in_drop.clear();
                Some(span(&o, t.max(o.start), o.bytes))
            }
            _ => {
                self.release_in_drop(0);
                None
            }
        }
    }

    /// Latest smoothed speed.
    pub fn smoothed(&self) -> f64 {
        self.smoothed
    }
}

fn median(scratch: &mut Vec<f64>, values: impl Iterator<Item = f64>) -> f64 {
    scratch.clear();
    scratch.extend(values);
    if scratch.is_empty() {
        return 0.0;
    }
    let mid = scratch.len() / 2;
    *scratch.select_nth_unstable_by(mid, f64::total_cmp).1
}

fn span(o: &Open, end: u64, bytes_until_end: u64) -> DropSpan {
    let secs = end.saturating_sub(o.start) as f64 / 1e9;
    DropSpan {
        start: o.start,
        end,
        reference: o.reference,
        min_bps: o.min_bps,
        bytes_lost: (o.reference * secs - bytes_until_end as f64).max(0.0),
    }
}

fn push_capped<T>(q: &mut VecDeque<T>, v: T, cap: usize) {
    if q.len() >= cap {
        q.pop_front();
    }
    q.push_back(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 100_000_000;

    fn cfg() -> DetectConfig {
        DetectConfig {
            drop_ratio: 0.5,
            recover_ratio: 0.8,
            min_drop_ns: 300_000_000,
            reference_window_ns: 10_000_000_000,
            min_reference_ns: 1_000_000_000,
            smooth_ticks: 3,
            rebase_after_ns: 30_000_000_000,
        }
    }

    /// Runs MB/s per tick through a detector; returns the steps that are not Quiet.
    fn run(mbps: &[f64]) -> Vec<(usize, Step)> {
        let mut d = Detector::new(cfg());
        let mut out = Vec::new();
        for (i, v) in mbps.iter().enumerate() {
            let t0 = i as u64 * TICK;
            let step = d.step(SpeedTick {
                t0,
                t1: t0 + TICK,
                bytes: (v * 1e5) as u64,
            });
            if step != Step::Quiet {
                out.push((i, step));
            }
        }
        out
    }

    #[test]
    fn three_zero_ticks_make_a_drop_two_do_not() {
        let mut v = vec![100.0; 20];
        v.extend([0.0, 0.0]);
        v.extend([100.0; 10]);
        let steps = run(&v);
        assert_eq!(
            steps,
            vec![
                (
                    21,
                    Step::Candidate {
                        start: 20 * TICK,
                        reference: 100e6
                    }
                ),
                (23, Step::Abandoned)
            ]
        );

        let mut v = vec![100.0; 20];
        v.extend([0.0, 0.0, 0.0]);
        v.extend([100.0; 10]);
        let steps = run(&v);
        assert_eq!(steps.len(), 3, "{steps:?}");
        assert_eq!(steps[1], (22, Step::Confirmed { start: 20 * TICK }));
        let Step::Ended(span) = steps[2].1 else {
            panic!("{steps:?}")
        };
        assert_eq!(steps[2].0, 25);
        assert_eq!((span.start, span.end), (20 * TICK, 23 * TICK));
        assert_eq!(span.reference, 100e6);
        assert_eq!(span.min_bps, 0.0);
        assert!((span.bytes_lost - 30e6).abs() < 1.0);
    }

    #[test]
    fn no_reference_no_drop() {
        // Stalled 0.3 s after the start: the first second is mostly stall, so the median
        // (the reference) is zero and nothing counts as a drop.
        let mut v = vec![100.0; 3];
        v.extend([0.0; 20]);
        assert!(run(&v).is_empty());
    }

    #[test]
    fn a_new_steady_level_is_rebased_after_the_limit() {
        let mut v = vec![100.0; 20];
        v.extend([30.0; 400]);
        let steps = run(&v);
        let ends: Vec<_> = steps
            .iter()
            .filter_map(|(i, s)| match s {
                Step::Ended(sp) => Some((*i, *sp)),
                _ => None,
            })
            .collect();
        assert_eq!(ends.len(), 1, "{steps:?}");
        assert_eq!(ends[0].1.end - ends[0].1.start, 300 * TICK);
        // After the rebase 30 MB/s is normal: no further drops.
        assert!(matches!(steps.last(), Some((_, Step::Ended(_)))));
    }

    #[test]
    fn interrupt_closes_a_confirmed_drop_only() {
        let mut d = Detector::new(cfg());
        for i in 0..20 {
            d.step(SpeedTick {
                t0: i * TICK,
                t1: (i + 1) * TICK,
                bytes: 10_000_000,
            });
        }
        for i in 20..25 {
            d.step(SpeedTick {
                t0: i * TICK,
                t1: (i + 1) * TICK,
                bytes: 0,
            });
        }
        assert_eq!(d.open_drop_start(), Some(20 * TICK));
        let span = d.interrupt(26 * TICK).expect("open drop");
        assert_eq!((span.start, span.end), (20 * TICK, 26 * TICK));
        assert_eq!(d.open_drop_start(), None);
    }
}
