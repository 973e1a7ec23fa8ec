//! The bounded speed time series behind the chart: one point per tick until full, then
//! adjacent pairs merge (time-weighted mean, min of mins, max of maxes) so memory stays
//! fixed however long the copy runs and a short drop survives as a minimum.

use serde::{Deserialize, Serialize};

/// Default number of points kept.
pub const DEFAULT_MAX_POINTS: usize = 4096;

/// One interval of the chart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Start of the interval, ns since the copy started.
    pub t_ns: u64,
    /// Length of the interval.
    pub dt_ns: u64,
    /// Mean copy speed over the interval, bytes/s.
    pub copy_bps: f64,
    /// Lowest per-tick copy speed inside the interval.
    pub copy_min_bps: f64,
    /// Highest per-tick copy speed inside the interval.
    pub copy_max_bps: f64,
    /// Mean write rate reaching the destination disks, when diskstats are known.
    pub device_bps: Option<f64>,
    /// Mean receive rate of the watched network interface (`watch --net`).
    pub net_bps: Option<f64>,
    /// Fraction of the bytes copied at the end of the interval (0..=1); None while the total is unknown.
    pub progress: Option<f64>,
}

impl Point {
    /// One tick: min = max = mean.
    pub fn tick(
        t_ns: u64,
        dt_ns: u64,
        copy_bps: f64,
        device_bps: Option<f64>,
        progress: Option<f64>,
    ) -> Point {
        Point {
            t_ns,
            dt_ns,
            copy_bps,
            copy_min_bps: copy_bps,
            copy_max_bps: copy_bps,
            device_bps,
            net_bps: None,
            progress,
        }
    }

    /// The same point with the network receive rate of its interval.
    pub fn with_net(self, net_bps: Option<f64>) -> Point {
        Point { net_bps, ..self }
    }

    /// End of the interval.
    pub fn end_ns(&self) -> u64 {
        self.t_ns + self.dt_ns
    }

    /// `a` followed by `b` as one interval.
    fn merge(a: &Point, b: &Point) -> Point {
        let end = a.end_ns().max(b.end_ns());
        let (wa, wb) = (a.dt_ns as f64, b.dt_ns as f64);
        let mean = |x: f64, y: f64| {
            if wa + wb > 0.0 {
                (x * wa + y * wb) / (wa + wb)
            } else {
                (x + y) / 2.0
            }
        };
        Point {
            t_ns: a.t_ns,
            dt_ns: end - a.t_ns,
            copy_bps: mean(a.copy_bps, b.copy_bps),
            copy_min_bps: a.copy_min_bps.min(b.copy_min_bps),
            copy_max_bps: a.copy_max_bps.max(b.copy_max_bps),
            device_bps: match (a.device_bps, b.device_bps) {
                (Some(x), Some(y)) => Some(mean(x, y)),
                (x, y) => x.or(y),
            },
            net_bps: match (a.net_bps, b.net_bps) {
                (Some(x), Some(y)) => Some(mean(x, y)),
                (x, y) => x.or(y),
            },
            progress: b.progress.or(a.progress),
        }
    }
}

/// Bounded series of [`Point`]s, oldest first.
#[derive(Debug, Clone)]
pub struct Series {
    points: Vec<Point>,
    max_points: usize,
    /// Ticks folded into each point at the current resolution (doubles at each compaction).
    ticks_per_point: u64,
    /// Ticks already folded into the last point.
    last_ticks: u64,
}

impl Default for Series {
    fn default() -> Self {
        Series::new(DEFAULT_MAX_POINTS)
    }
}

impl Series {
    /// A series holding at most `max_points` (rounded up to an even number, at least 4).
    pub fn new(max_points: usize) -> Series {
        let max_points = max_points.max(4).next_multiple_of(2);
        Series {
            points: Vec::with_capacity(max_points),
            max_points,
            ticks_per_point: 1,
            last_ticks: 0,
        }
    }

    /// Adds one tick. The last point stays open until it holds `ticks_per_point` ticks,
    /// so every point covers the same number of ticks after a compaction.
    pub fn push(&mut self, p: Point) {
        if let Some(last) = self.points.last_mut()
            && self.last_ticks < self.ticks_per_point
        {
            *last = Point::merge(last, &p);
            self.last_ticks += 1;
            return;
        }
        if self.points.len() >= self.max_points {
            self.compact();
        }
        self.points.push(p);
        self.last_ticks = 1;
    }

    /// Halves the number of points by merging adjacent pairs.
    fn compact(&mut self) {
        let n = self.points.len();
        let mut w = 0;
        let mut r = 0;
        while r < n {
            self.points[w] = if r + 1 < n {
                Point::merge(&self.points[r], &self.points[r + 1])
            } else {
                self.points[r]
            };
            w += 1;
            r += 2;
        }
        self.points.truncate(w);
        self.ticks_per_point *= 2;
        // max_points is even and compaction only runs when full, so the last point is full.
        self.last_ticks = self.ticks_per_point;
    }

    /// The points, oldest first (the last one may still be filling).
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// True before the first tick.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Time covered, from the first point's start to the last point's end.
    pub fn span_ns(&self) -> u64 {
        match (self.points.first(), self.points.last()) {
            (Some(a), Some(b)) => b.end_ns().saturating_sub(a.t_ns),
            _ => 0,
        }
    }

    /// The cap on points.
    pub fn max_points(&self) -> usize {
        self.max_points
    }

    /// Ticks per point at the current resolution.
    pub fn ticks_per_point(&self) -> u64 {
        self.ticks_per_point
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 100_000_000;

    fn feed(series: &mut Series, speeds: impl IntoIterator<Item = f64>, t0: &mut u64) {
        for s in speeds {
            series.push(Point::tick(*t0, TICK, s, Some(s / 2.0), None));
            *t0 += TICK;
        }
    }

    #[test]
    fn keeps_every_tick_until_full() {
        let mut s = Series::new(8);
        let mut t = 0;
        feed(&mut s, (0..8).map(|i| i as f64), &mut t);
        assert_eq!(s.len(), 8);
        assert_eq!(s.ticks_per_point(), 1);
        assert_eq!(s.points()[3].copy_bps, 3.0);
        assert_eq!(s.span_ns(), 8 * TICK);
    }

    #[test]
    fn compaction_merges_pairs_time_weighted() {
        let mut s = Series::new(4);
        let mut t = 0;
        feed(&mut s, [10.0, 20.0, 30.0, 50.0, 7.0], &mut t);
        // Full at 4 points; the fifth tick compacts to 2 points of 2 ticks, then starts a third.
        assert_eq!(s.len(), 3);
        assert_eq!(s.ticks_per_point(), 2);
        let p = s.points();
        assert_eq!(p[0].copy_bps, 15.0);
        assert_eq!((p[0].copy_min_bps, p[0].copy_max_bps), (10.0, 20.0));
        assert_eq!(p[1].copy_bps, 40.0);
        assert_eq!(p[1].device_bps, Some(20.0));
        assert_eq!((p[1].t_ns, p[1].dt_ns), (2 * TICK, 2 * TICK));
        // The open point takes one more tick before a new one starts.
        feed(&mut s, [9.0], &mut t);
        assert_eq!(s.len(), 3);
        assert_eq!(s.points()[2].copy_bps, 8.0);
        feed(&mut s, [1.0], &mut t);
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn short_drop_survives_a_day_of_compaction_as_a_min() {
        // 24 h at 100 ms with one 300 ms drop to zero in the middle of hour 7.
        let ticks = 24 * 36_000u64;
        let drop_at = 7 * 36_000 + 1234;
        let mut s = Series::new(DEFAULT_MAX_POINTS);
        let mut bytes = 0.0;
        for i in 0..ticks {
            let v = if (drop_at..drop_at + 3).contains(&i) {
                0.0
            } else {
                100e6 + (i % 7) as f64 * 1e6
            };
            bytes += v * 0.1;
            s.push(Point::tick(i * TICK, TICK, v, None, None));
        }
        assert!(s.len() <= DEFAULT_MAX_POINTS);
        assert!(s.len() >= DEFAULT_MAX_POINTS / 2);
        assert_eq!(s.span_ns(), ticks * TICK);
        let t_drop = drop_at * TICK;
        let holder: Vec<&Point> = s
            .points()
            .iter()
            .filter(|p| p.t_ns <= t_drop && t_drop < p.end_ns())
            .collect();
        assert_eq!(holder.len(), 1);
        assert_eq!(holder[0].copy_min_bps, 0.0);
        assert!(
            holder[0].copy_bps > 90e6,
            "the mean hides the drop: {}",
            holder[0].copy_bps
        );
        let zero_mins = s.points().iter().filter(|p| p.copy_min_bps == 0.0).count();
        assert_eq!(zero_mins, 1);
        // Time-weighted merging keeps the bytes.
        let kept: f64 = s
            .points()
            .iter()
            .map(|p| p.copy_bps * p.dt_ns as f64 / 1e9)
            .sum();
        assert!((kept - bytes).abs() / bytes < 1e-9);
    }
}
