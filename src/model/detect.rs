//! Speed-drop detection: a rolling reference (median rate of ≥ 1 s windows of
//! recent non-drop copying), a short time-weighted smoothing for decisions that widens for a
//! writer that writes in bursts, and a small state machine (idle → candidate → drop → ended)
//! whose boundaries are refined from raw ticks.

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
    bytes: u64,
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
    /// End of the latest raw tick at or above the recovery threshold.
    last_fast_end: u64,
}

/// Cap on kept ticks per ring (10 s at 100 ms is 100; faster ticks are covered by the cap).
const REF_CAP: usize = 600;
/// Recent raw ticks kept for backdating a candidate's start (a bursty writer's smoothing
/// window is up to `smooth_ticks` × [`MAX_BURST_GAP_NS`]).
const RECENT_CAP: usize = 96;
/// The reference is the median rate of windows of normal copying at least this long: a
/// writer that writes 8 MiB at a time leaves most 100 ms ticks at zero, and a median of ticks
/// was zero (or half the real rate for a stop-and-go writer).
pub const REFERENCE_CHUNK_NS: u64 = 1_000_000_000;
/// A writer is bursty when its normal copying has a byte-carrying tick only every this many
/// ticks or fewer (mean time between them ÷ mean tick).
pub const BURSTY_GAP_FACTOR: f64 = 1.5;
/// The burst gap used is at most this long.
pub const MAX_BURST_GAP_NS: u64 = 2_000_000_000;
/// Smoothing ring cap (ticks).
const SMOOTH_CAP: usize = 96;

#[derive(Debug, Clone)]
pub(crate) struct Detector {
    cfg: DetectConfig,
    /// The newest ticks: `smooth_ticks` of them, or for a bursty writer as many as span
    /// `smooth_ticks` burst gaps.
    smooth: VecDeque<SpeedTick>,
    /// Mean time between byte-carrying ticks of normal copying, when the writer is bursty
    /// (see [`BURSTY_GAP_FACTOR`]).
    burst_gap: Option<u64>,
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
            burst_gap: None,
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

    /// The current reference, once enough normal copying has been seen: the median rate of
    /// the newest windows of normal copying, each at least [`REFERENCE_CHUNK_NS`] long,
    /// counted back from the newest tick (an older rest shorter than a window is left out);
    /// for a bursty writer the mean rate of all of it.
    pub fn reference(&mut self) -> Option<f64> {
        if self.normal_ns < self.cfg.min_reference_ns || self.normal.is_empty() {
            return None;
        }
        if self.burst_gap.is_some() {
            // A few writes per window make window rates coarse (one 8 MiB write more or less
            // is a quarter of a 2 s window at 12 MB/s): the whole window's mean is the rate.
            let bytes = self
                .normal
                .iter()
                .map(|e| e.bytes)
                .fold(0, u64::saturating_add);
            let m = bytes as f64 * 1e9 / self.normal_ns as f64;
            let r = self.ceiling.map_or(m, |c| m.min(c));
            return (r > 0.0).then_some(r);
        }
        let chunk = REFERENCE_CHUNK_NS;
        let mut rates = Vec::new();
        let (mut bytes, mut ns) = (0u64, 0u64);
        for e in self.normal.iter().rev() {
            bytes = bytes.saturating_add(e.bytes);
            ns += e.dt;
            if ns >= chunk {
                rates.push(bytes as f64 * 1e9 / ns as f64);
                (bytes, ns) = (0, 0);
            }
        }
        if rates.is_empty() {
            return None;
        }
        let m = median_of(&mut rates);
        let r = self.ceiling.map_or(m, |c| m.min(c));
        (r > 0.0).then_some(r)
    }

    /// The smoothing window for a bursty writer (`smooth_ticks` burst gaps), else 0: the
    /// window is then `smooth_ticks` ticks.
    fn smooth_window_ns(&self) -> u64 {
        self.burst_gap
            .map_or(0, |g| g.saturating_mul(self.cfg.smooth_ticks as u64))
    }

    /// The shortest slow run that is a drop: `min_drop_ns`, or a bursty writer's smoothing
    /// window (a pause between two bursts is how it writes, not a drop).
    fn min_drop_ns(&self) -> u64 {
        self.cfg.min_drop_ns.max(self.smooth_window_ns())
    }

    /// Mean time between the byte-carrying ticks of normal copying, when it is at least
    /// [`BURSTY_GAP_FACTOR`] mean ticks (capped at [`MAX_BURST_GAP_NS`]).
    fn measure_burst_gap(&self) -> Option<u64> {
        if self.normal_ns < self.cfg.min_reference_ns {
            return self.burst_gap;
        }
        let active = self.normal.iter().filter(|e| e.bytes > 0).count() as u64;
        if active == 0 {
            return self.burst_gap;
        }
        let gap = self.normal_ns / active;
        let tick = self.normal_ns / self.normal.len() as u64;
        (gap as f64 >= BURSTY_GAP_FACTOR * tick as f64).then_some(gap.min(MAX_BURST_GAP_NS))
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
        self.push_smooth(tick);
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
            bytes: tick.bytes,
            bps: tick.bps(),
        };

        match self.open {
            None => {
                let step = self.step_idle(tick, s);
                if self.open.is_some() {
                    self.push_in_drop(entry);
                } else {
                    self.push_normal(entry);
                    self.burst_gap = self.measure_burst_gap();
                }
                step
            }
            Some(open) => {
                self.push_in_drop(entry);
                self.step_open(open, tick, raw, s)
            }
        }
    }

    /// Keeps `smooth_ticks` ticks, or as many as span the bursty writer's window.
    fn push_smooth(&mut self, tick: SpeedTick) {
        self.smooth.push_back(tick);
        let keep = self.cfg.smooth_ticks.max(1);
        let window = self.smooth_window_ns();
        let mut span: u64 = self.smooth.iter().map(SpeedTick::dt).sum();
        while let Some(front) = self.smooth.front() {
            let over = self.smooth.len() > SMOOTH_CAP
                || (self.smooth.len() > keep && span - front.dt() >= window);
            if !over {
                break;
            }
            span -= front.dt();
            self.smooth.pop_front();
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
        // Ticks already taken as normal inside the candidate move to the drop, and the
        // reference is what came before it.
        let mut moved = false;
        while let Some(back) = self.normal.back() {
            if back.t1 <= start {
                break;
            }
            self.normal_ns -= back.dt;
            let e = *back;
            self.normal.pop_back();
            self.in_drop.push_front(e);
            moved = true;
        }
        let reference = if moved {
            self.reference().unwrap_or(reference)
        } else {
            reference
        };
        self.open = Some(Open {
            confirmed: false,
            start,
            reference,
            last_below_end: last_below_end.unwrap_or(start),
            min_bps: s,
            bytes,
            recovering_since: None,
            last_fast_end: start,
        });
        self.maybe_confirm()
            .unwrap_or(Step::Candidate { start, reference })
    }

    fn maybe_confirm(&mut self) -> Option<Step> {
        let min_drop = self.min_drop_ns();
        let o = self.open.as_mut()?;
        if !o.confirmed && o.last_below_end.saturating_sub(o.start) >= min_drop {
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
            o.last_fast_end = tick.t1;
        } else if self
            .burst_gap
            .is_none_or(|g| tick.t1.saturating_sub(o.last_fast_end) >= 2 * g)
        {
            // A bursty writer recovers with pauses between its writes: only a pause longer
            // than two burst gaps breaks the recovering run.
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

/// The median, the mean of the two middle values for an even count (a reference of two
/// windows is not the faster one).
fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
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
    fn no_reference_before_a_second_of_copying() {
        // Stalled from the start: nothing copied, no reference, no drop.
        assert!(run(&[0.0; 30]).is_empty());
        // Stalled 0.3 s after the start: no drop before a second of copying exists; then the
        // first second's rate (30 MB/s) is the reference and the stall a drop from 0.3 s.
        let mut v = vec![100.0; 3];
        v.extend([0.0; 20]);
        let steps = run(&v);
        assert_eq!(
            steps.first(),
            Some(&(
                10,
                Step::Candidate {
                    start: 3 * TICK,
                    reference: 30e6
                }
            ))
        );
    }

    /// 8 MiB writes at ~40 MB/s with jitter (one write every 0.1-0.35 s), the way smbd writes
    /// a Samba upload: most 100 ms ticks are zero.
    fn bursty(secs: f64, mbps: f64, seed: &mut u64) -> Vec<f64> {
        let mut ticks = vec![0.0; (secs * 10.0) as usize];
        let mut t = 0.0;
        let interval = 8.0 * 1.048576 / mbps;
        loop {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += interval * (0.5 + (*seed >> 33) as f64 / (1u64 << 31) as f64);
            let i = (t * 10.0) as usize;
            if i >= ticks.len() {
                return ticks;
            }
            ticks[i] += 8.0 * 1.048576 * 10.0;
        }
    }

    #[test]
    fn a_bursty_writer_has_its_real_rate_as_reference_and_its_stalls_as_drops() {
        bursty_stall(40.0);
        bursty_stall(12.0);
    }

    fn bursty_stall(mbps: f64) {
        let mut seed = 7;
        let mut v = bursty(20.0, mbps, &mut seed);
        let stall_at = v.len();
        v.extend([0.0; 40]);
        v.extend(bursty(20.0, mbps, &mut seed));
        let steps = run(&v);
        let ends: Vec<DropSpan> = steps
            .iter()
            .filter_map(|(_, s)| match s {
                Step::Ended(sp) => Some(*sp),
                _ => None,
            })
            .collect();
        // One drop, the stall: none from the pauses between two writes.
        assert_eq!(ends.len(), 1, "{mbps}: {steps:?}");
        let d = ends[0];
        let r = d.reference / 1e6;
        assert!(r > 0.8 * mbps && r < 1.2 * mbps, "{mbps}: reference {r}");
        let (start, end) = (d.start as f64 / 1e9, d.end as f64 / 1e9);
        let stall = stall_at as f64 / 10.0;
        assert!(
            start <= stall && start > stall - 1.5 * 8.4 / mbps,
            "start {start}"
        );
        let gap = 8.4 / mbps;
        // It ends at the first write after the stall (which comes up to 1.5 gaps later).
        let first = (stall_at + 40..v.len()).find(|i| v[*i] > 0.0).unwrap() as f64 / 10.0;
        assert!(
            end == first && first < stall + 4.0 + 1.5 * gap,
            "{mbps}: end {end}, {first}"
        );
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
