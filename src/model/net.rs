//! `watch --net`: the receive figures every output prints (now, avg, min, peak), kept as the
//! model folds each tick's receive rate, in constant memory (the chart's series is in
//! [`super::series`]).

use std::collections::VecDeque;

/// The watched interface's receive figures, bytes/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetStats {
    /// Mean over the last second (the kernel panel's window).
    pub now_bps: f64,
    /// Bytes received over the time the interface was sampled.
    pub avg_bps: f64,
    /// Lowest and highest one-second mean (the same window as `now_bps`); before a whole
    /// second was sampled, the mean so far.
    pub min_bps: f64,
    pub peak_bps: f64,
}

/// The running tally behind [`NetStats`].
#[derive(Debug, Clone, Default)]
pub(super) struct NetTally {
    bytes: f64,
    ns: u64,
    /// (end of the tick, its bytes, its length) for the last `window_ns`.
    recent: VecDeque<(u64, f64, u64)>,
    min: Option<f64>,
    peak: f64,
    /// A whole window has been sampled: min and peak are of one-second means from now on.
    whole: bool,
}

impl NetTally {
    /// One tick `[t1 - dt, t1]` at `bps`; `window_ns` is the "now" window.
    pub(super) fn fold(&mut self, t1: u64, dt: u64, bps: f64, window_ns: u64) {
        let bytes = bps * dt as f64 / 1e9;
        self.bytes += bytes;
        self.ns += dt;
        self.recent.push_back((t1, bytes, dt));
        // The same window as the kernel panel: ticks ending less than window_ns ago.
        while self
            .recent
            .front()
            .is_some_and(|&(end, _, _)| end + window_ns <= t1)
        {
            self.recent.pop_front();
        }
        let now = self.now();
        if self.ns >= window_ns && self.whole {
            self.min = Some(self.min.map_or(now, |m| m.min(now)));
            self.peak = self.peak.max(now);
        } else {
            // Before the first whole second: the mean so far stands for both.
            self.whole = self.ns >= window_ns;
            self.min = Some(now);
            self.peak = now;
        }
    }

    fn now(&self) -> f64 {
        let (b, ns) = self
            .recent
            .iter()
            .fold((0.0, 0u64), |(b, ns), &(_, x, d)| (b + x, ns + d));
        if ns > 0 { b * 1e9 / ns as f64 } else { 0.0 }
    }

    /// The figures so far; None while the interface was never sampled. `span_ns`: the time
    /// the average divides by, the same as the intake's (the writer's active time), so the
    /// two averages compare; None: the whole time sampled.
    pub(super) fn stats(&self, span_ns: Option<u64>) -> Option<NetStats> {
        let ns = span_ns.filter(|s| *s > 0).unwrap_or(self.ns);
        (self.ns > 0).then(|| NetStats {
            now_bps: self.now(),
            avg_bps: self.bytes * 1e9 / ns as f64,
            min_bps: self.min.unwrap_or(0.0),
            peak_bps: self.peak,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 100_000_000;
    const SEC: u64 = 1_000_000_000;

    fn run(rates: &[f64]) -> NetStats {
        let mut t = NetTally::default();
        for (i, r) in rates.iter().enumerate() {
            t.fold((i as u64 + 1) * TICK, TICK, *r, SEC);
        }
        t.stats(None).expect("sampled")
    }

    #[test]
    fn never_sampled_is_none() {
        assert_eq!(NetTally::default().stats(None), None);
    }

    #[test]
    fn avg_counts_bytes_over_time_and_extremes_are_one_second_means() {
        // 2 s at 100 MB/s, 1 s at 0, 2 s at 100 MB/s.
        let mut r = vec![100e6; 20];
        r.extend([0.0; 10]);
        r.extend([100e6; 20]);
        let n = run(&r);
        assert!((n.avg_bps - 80e6).abs() < 1.0, "{n:?}");
        assert!((n.peak_bps - 100e6).abs() < 1.0, "{n:?}");
        // One whole second of nothing: its mean is 0.
        assert!(n.min_bps.abs() < 1.0, "{n:?}");
        assert!((n.now_bps - 100e6).abs() < 1.0, "{n:?}");
    }

    #[test]
    fn a_short_dip_is_averaged_over_the_second() {
        let mut r = vec![100e6; 20];
        r[15] = 0.0;
        let n = run(&r);
        assert!((n.min_bps - 90e6).abs() < 1.0, "{n:?}");
    }

    #[test]
    fn before_a_whole_second_the_mean_so_far_stands_for_min_and_peak() {
        let n = run(&[10e6, 30e6]);
        assert_eq!((n.min_bps, n.peak_bps, n.now_bps), (20e6, 20e6, 20e6));
    }
}
