//! Linux dirty throttling for one writer onto one disk (mm/page-writeback.c), continuous in
//! bytes:
//!
//! - Limits (`domain_dirty_limits`): `thresh` from `vm.dirty_bytes` or `vm.dirty_ratio` of
//!   the dirtyable memory, `bg_thresh` likewise, halved when not below `thresh`;
//!   freerun = (thresh + bg_thresh) / 2 (`dirty_freerun_ceiling`), limit = thresh, setpoint =
//!   (freerun + limit) / 2.
//! - Under freerun the writer is never paused; above, `balance_dirty_pages` paces it at
//!   `dirty_ratelimit × pos_ratio`, with `pos_ratio = 1 + ((setpoint − dirty) / (limit −
//!   setpoint))³` clamped to [0, 2] (`wb_position_ratio`) and `dirty_ratelimit` the disk's
//!   write bandwidth, which it tracks: the writer settles at the setpoint at the disk's rate.
//! - The flusher writes at the disk's rate, oldest data first, while dirty + writeback is
//!   above `bg_thresh`, while data older than `dirty_expire_centisecs` waits, and in the
//!   final flush.
//! - A device whose own limit held the recorded copy below freerun (a bdi's `strict_limit`)
//!   keeps that level: the same curve, scaled to it.

use std::collections::VecDeque;

/// `dirty_expire_centisecs`' default, seconds.
const EXPIRE_S: f64 = 30.0;
/// What a sample shows under writeback while the disk writes: about a quarter second of it.
const IN_FLIGHT_S: f64 = 0.25;

/// Limits and the disk's rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct CacheParams {
    pub bg_thresh: f64,
    pub thresh: f64,
    pub disk_bps: f64,
    /// Dirty + writeback where the device held the recorded copy, when under freerun.
    pub device_hold: Option<f64>,
}

impl CacheParams {
    /// (background, freerun, setpoint, limit) the writer meets: the global ones, or the
    /// device's lower level with the same proportions.
    pub fn curve(&self) -> (f64, f64, f64, f64) {
        let freerun = (self.thresh + self.bg_thresh) / 2.0;
        let scale = match self.device_hold {
            Some(h) if h < freerun => h / freerun,
            _ => 1.0,
        };
        let setpoint = (freerun + self.thresh) / 2.0;
        (
            self.bg_thresh * scale,
            freerun * scale,
            setpoint * scale,
            self.thresh * scale,
        )
    }

    /// `pos_ratio` at `dirty` above freerun.
    fn pos_ratio(&self, dirty: f64) -> f64 {
        let (_, _, setpoint, limit) = self.curve();
        let x = (setpoint - dirty) / (limit - setpoint).max(1.0);
        (1.0 + x * x * x).clamp(0.0, 2.0)
    }
}

/// The page cache and the disk behind it.
#[derive(Debug, Clone)]
pub(super) struct Cache {
    p: CacheParams,
    /// Data not yet on disk, oldest first: (time dirtied, bytes).
    chunks: VecDeque<(f64, f64)>,
    cached: f64,
    written: f64,
    busy_s: f64,
    writing: bool,
    flushing: bool,
}

/// What the cache let the writer do in one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Accepted {
    pub bytes: f64,
    /// Share of the step the writer sat in `balance_dirty_pages`, 0–1.
    pub held: f64,
}

impl Cache {
    pub fn new(p: CacheParams) -> Cache {
        Cache {
            p,
            chunks: VecDeque::new(),
            cached: 0.0,
            written: 0.0,
            busy_s: 0.0,
            writing: false,
            flushing: false,
        }
    }

    /// The writer offers `want` bytes over `dt` seconds at `t`.
    pub fn accept(&mut self, t: f64, want: f64, dt: f64) -> Accepted {
        if want <= 0.0 {
            return Accepted {
                bytes: 0.0,
                held: 0.0,
            };
        }
        let (_, freerun, _, _) = self.p.curve();
        let bytes = if self.cached <= freerun {
            want
        } else {
            want.min(self.p.disk_bps * self.p.pos_ratio(self.cached) * dt)
        };
        if bytes > 0.0 {
            self.chunks.push_back((t, bytes));
            self.cached += bytes;
        }
        Accepted {
            bytes,
            held: 1.0 - bytes / want,
        }
    }

    /// The flusher and the disk over `dt` seconds ending at `t`.
    pub fn advance(&mut self, t: f64, dt: f64) {
        let (bg, ..) = self.p.curve();
        let expired = self
            .chunks
            .front()
            .is_some_and(|(at, _)| t - at >= EXPIRE_S);
        self.writing = self.cached > 0.0 && (self.flushing || self.cached > bg || expired);
        if !self.writing {
            return;
        }
        let mut left = (self.p.disk_bps * dt).min(self.cached);
        let wrote = left;
        while left > 0.0 {
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            let take = front.1.min(left);
            front.1 -= take;
            left -= take;
            if front.1 <= 0.0 {
                self.chunks.pop_front();
            }
        }
        self.cached -= wrote;
        self.written += wrote;
        self.busy_s += wrote / self.p.disk_bps;
    }

    /// `syncfs` after the last byte: everything is written at the disk's rate.
    pub fn start_flush(&mut self) {
        self.flushing = true;
    }

    pub fn flushed(&self) -> bool {
        self.flushing && self.cached <= 0.5
    }

    /// (dirty, writeback) as meminfo would show them.
    pub fn levels(&self) -> (f64, f64) {
        let wb = if self.writing {
            self.cached.min(self.p.disk_bps * IN_FLIGHT_S)
        } else {
            0.0
        };
        (self.cached - wb, wb)
    }

    /// The global (background, limit) thresholds, as vmstat shows them.
    pub fn limits(&self) -> (f64, f64) {
        (self.p.bg_thresh, self.p.thresh)
    }

    /// Bytes the disk wrote so far, and the seconds it was busy.
    pub fn disk(&self) -> (f64, f64) {
        (self.written, self.busy_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(bg: f64, thresh: f64, hold: Option<f64>) -> CacheParams {
        CacheParams {
            bg_thresh: bg,
            thresh,
            disk_bps: 40e6,
            device_hold: hold,
        }
    }

    #[test]
    fn pos_ratio_is_two_at_freerun_one_at_the_setpoint_zero_at_the_limit() {
        let p = params(100e6, 300e6, None);
        assert_eq!(p.curve(), (100e6, 200e6, 250e6, 300e6));
        assert!((p.pos_ratio(200e6) - 2.0).abs() < 1e-9);
        assert!((p.pos_ratio(250e6) - 1.0).abs() < 1e-9);
        assert!(p.pos_ratio(300e6).abs() < 1e-9);
    }

    #[test]
    fn a_fast_writer_settles_at_the_setpoint_at_the_disks_rate() {
        let mut c = Cache::new(params(100e6, 300e6, None));
        let dt = 0.01;
        let mut bytes = 0.0;
        for i in 0..6000 {
            let t = (i + 1) as f64 * dt;
            bytes += c.accept(t, 400e6 * dt, dt).bytes;
            c.advance(t, dt);
        }
        let (d, w) = c.levels();
        assert!(((d + w) - 250e6).abs() < 10e6, "{}", d + w);
        // 60 s: the first 250 MB at memory speed, the rest at the disk's 40 MB/s.
        assert!((bytes - (250e6 + 40e6 * 59.4)).abs() < 30e6, "{bytes}");
    }

    #[test]
    fn a_device_hold_scales_the_curve_down() {
        let p = params(1.75e9, 3.5e9, Some(375e6));
        let (bg, freerun, setpoint, limit) = p.curve();
        assert!((freerun - 375e6).abs() < 1.0);
        assert!(bg < freerun && freerun < setpoint && setpoint < limit);
        // A hold above the global freerun is no hold.
        assert_eq!(params(100e6, 300e6, Some(375e6)).curve().1, 200e6);
    }
}
