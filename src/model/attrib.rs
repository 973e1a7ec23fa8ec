//! Attribution of a drop (DESIGN §5a): evidence gathered tick by tick while a drop is
//! open, then one pure decision that lists the causes best first, each with its numbers.
//! The thresholds are documented in docs/attribution.md.

use super::Cause;
use crate::sample::{Cpu, PageCache};

/// The writer "sat in write()": share of the drop's time spent inside write calls.
pub const WRITE_BLOCKED_SHARE: f64 = 0.5;
/// A source stall: share of time spent inside read calls …
pub const READ_STALL_SHARE: f64 = 0.5;
/// … while writes took less than this share.
pub const READ_STALL_MAX_WRITE_SHARE: f64 = 0.25;
/// Part of the drop that dirty + writeback must spend above freerun.
pub const ABOVE_FREERUN_FRACTION: f64 = 0.3;
/// Writeback growth that counts as a burst (bytes).
pub const WRITEBACK_JUMP: u64 = 16 << 20;
/// Device write rate during the drop against the rate before it that counts as a burst.
pub const DEVICE_RATE_UP: f64 = 1.5;
/// Device busy (io_ticks per disk) that counts as saturated, percent.
pub const DEVICE_SATURATED_PCT: f64 = 90.0;
/// CPU busy over all cores that counts as saturated, percent.
pub const CPU_SATURATED_PCT: f64 = 90.0;
/// Part of the drop a txg sync must cover.
pub const TXG_OVERLAP_FRACTION: f64 = 0.5;
/// ZFS delays and dirty data are also counted this long before the drop: the throttle
/// ramps up just before the writer stops.
pub const ZFS_LOOKBACK_NS: u64 = 1_000_000_000;

/// (thresh + bg) / 2 without overflow on garbage input.
pub(crate) fn freerun(p: &PageCache) -> u64 {
    ((p.thresh as u128 + p.bg_thresh as u128) / 2) as u64
}

/// What the kernel counts against the limits: Dirty + Writeback.
pub(crate) fn dirty_and_writeback(p: &PageCache) -> u64 {
    p.dirty.saturating_add(p.writeback)
}

/// Derived figures of one tick.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TickInfo {
    pub t0: u64,
    pub t1: u64,
    pub bytes: u64,
    pub read_ns: u64,
    pub write_ns: u64,
    pub page: Option<PageCache>,
    /// Destination write rate, bytes/s.
    pub dev_bps: Option<f64>,
    /// Destination busy, percent per disk.
    pub dev_util: Option<f64>,
    pub source_disk: bool,
    pub psi_some_pct: Option<f64>,
    pub cpu: Option<Cpu>,
    pub zfs_delays: u64,
    pub zfs_over_max: u64,
    pub arc_anon: Option<u64>,
}

impl TickInfo {
    pub fn dt(&self) -> u64 {
        self.t1.saturating_sub(self.t0)
    }
}

/// Evidence of one open drop.
#[derive(Debug, Clone, Default)]
pub(crate) struct Evidence {
    span_ns: u64,
    read_ns: u64,
    write_ns: u64,
    page_ns: u64,
    above_freerun_ns: u64,
    max_dirty_wb: u64,
    freerun_at_max: u64,
    max_writeback: u64,
    writeback_at_start: Option<u64>,
    /// Σ rate × ns, for a time-weighted mean.
    dev_bps_ns: f64,
    dev_ns: u64,
    pre_dev_bps: Option<f64>,
    util_sum: f64,
    util_ns: u64,
    cpu_sum: f64,
    cpu_ns: u64,
    source_disk: bool,
    pub zfs_delays: u64,
    pub zfs_over_max: u64,
    pub arc_anon_peak: Option<u64>,
}

impl Evidence {
    /// Starts at `start`; `before` are recent ticks ending at or before it (for the baseline
    /// device rate and the ZFS lookback).
    pub fn new<'a>(start: u64, before: impl Iterator<Item = &'a TickInfo>) -> Evidence {
        let mut e = Evidence::default();
        let (mut dev_b, mut dev_ns) = (0.0, 0u64);
        for t in before {
            if let Some(b) = t.dev_bps {
                dev_b += b * t.dt() as f64;
                dev_ns += t.dt();
            }
            if t.t1 + ZFS_LOOKBACK_NS > start {
                e.zfs_delays = e.zfs_delays.saturating_add(t.zfs_delays);
                e.zfs_over_max = e.zfs_over_max.saturating_add(t.zfs_over_max);
                e.note_anon(t.arc_anon);
            }
            if let Some(p) = t.page {
                e.writeback_at_start = Some(p.writeback);
            }
        }
        e.pre_dev_bps = (dev_ns > 0).then(|| dev_b / dev_ns as f64);
        e
    }

    fn note_anon(&mut self, anon: Option<u64>) {
        if let Some(a) = anon {
            self.arc_anon_peak = Some(self.arc_anon_peak.map_or(a, |p| p.max(a)));
        }
    }

    /// Adds a tick that lies in the drop (or in its recovery, until the drop closes: a
    /// write blocked through the whole drop is only counted when it returns).
    pub fn fold(&mut self, t: &TickInfo) {
        let dt = t.dt();
        self.span_ns += dt;
        self.read_ns = self.read_ns.saturating_add(t.read_ns);
        self.write_ns = self.write_ns.saturating_add(t.write_ns);
        if let Some(p) = t.page {
            self.page_ns += dt;
            let dw = dirty_and_writeback(&p);
            let freerun = freerun(&p);
            if freerun > 0 && dw > freerun {
                self.above_freerun_ns += dt;
            }
            if dw >= self.max_dirty_wb {
                self.max_dirty_wb = dw;
                self.freerun_at_max = freerun;
            }
            self.max_writeback = self.max_writeback.max(p.writeback);
            self.writeback_at_start.get_or_insert(p.writeback);
        }
        if let Some(b) = t.dev_bps {
            self.dev_bps_ns += b * dt as f64;
            self.dev_ns += dt;
        }
        if let Some(u) = t.dev_util {
            self.util_sum += u * dt as f64;
            self.util_ns += dt;
        }
        if let Some(c) = t.cpu {
            self.cpu_sum += c.busy_pct as f64 * dt as f64;
            self.cpu_ns += dt;
        }
        self.source_disk |= t.source_disk;
        self.zfs_delays = self.zfs_delays.saturating_add(t.zfs_delays);
        self.zfs_over_max = self.zfs_over_max.saturating_add(t.zfs_over_max);
        self.note_anon(t.arc_anon);
    }

    /// Time-weighted mean destination write rate during the drop.
    fn dev_mean(&self) -> Option<f64> {
        (self.dev_ns > 0).then(|| self.dev_bps_ns / self.dev_ns as f64)
    }

    fn share(&self, ns: u64) -> f64 {
        if self.span_ns == 0 {
            0.0
        } else {
            ns as f64 / self.span_ns as f64
        }
    }
}

/// A txg sync that covered the drop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TxgHit {
    pub txg: u64,
    /// 0 until the txg commits.
    pub ndirty: u64,
    /// 0 until the txg commits.
    pub stime_ns: u64,
}

/// What the decision needs besides the evidence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    pub on_zfs: bool,
    /// The engine reported read/write times at some point in the run.
    pub engine_timing: bool,
    pub txg: Option<TxgHit>,
    pub dirty_max: Option<u64>,
}

/// The causes of a drop, best first; `[Unknown]` when nothing explains it.
pub(crate) fn decide(e: &Evidence, cx: &Context) -> Vec<Cause> {
    let read_share = e.share(e.read_ns);
    let write_share = e.share(e.write_ns);
    let source_stall = cx.engine_timing
        && read_share >= READ_STALL_SHARE
        && write_share < READ_STALL_MAX_WRITE_SHARE;
    // Without engine times (watch mode, the dd capture) the page cache alone decides.
    let writer_blocked = !cx.engine_timing || write_share >= WRITE_BLOCKED_SHARE;
    // A read stall can still come from the destination when both share one disk.
    let device_may_matter = !source_stall || !e.source_disk;
    let mut causes = Vec::new();

    if !source_stall && cx.on_zfs {
        if let Some(h) = cx.txg {
            let pct = match (e.arc_anon_peak, h.ndirty, cx.dirty_max) {
                (Some(a), _, Some(m)) if m > 0 => Some(a as f64 * 100.0 / m as f64),
                (None, n, Some(m)) if m > 0 && n > 0 => Some(n as f64 * 100.0 / m as f64),
                _ => None,
            };
            causes.push(Cause::TxgSync {
                txg: h.txg,
                ndirty: h.ndirty,
                stime_ns: h.stime_ns,
                dirty_pct_of_max: pct,
            });
        }
        if e.zfs_delays > 0 || e.zfs_over_max > 0 {
            causes.push(Cause::ZfsThrottle {
                delays: e.zfs_delays,
                over_max: e.zfs_over_max,
            });
        }
    }
    // On ZFS, file data never passes through the page cache's dirty accounting.
    if !cx.on_zfs && e.page_ns > 0 {
        let above = e.share(e.above_freerun_ns) >= ABOVE_FREERUN_FRACTION;
        if !source_stall && above && writer_blocked {
            causes.push(Cause::DirtyThrottle {
                dirty: e.max_dirty_wb,
                freerun: e.freerun_at_max,
                write_share,
            });
        }
        let dev_bps = e.dev_mean();
        let wb_jump = e
            .max_writeback
            .saturating_sub(e.writeback_at_start.unwrap_or(e.max_writeback));
        let dev_up = match (dev_bps, e.pre_dev_bps) {
            (Some(now), Some(before)) => now >= 1e6 && now >= DEVICE_RATE_UP * before,
            _ => false,
        };
        if device_may_matter && e.above_freerun_ns == 0 && (wb_jump >= WRITEBACK_JUMP || dev_up) {
            causes.push(Cause::WritebackBurst {
                writeback: e.max_writeback,
                device_bps: dev_bps.unwrap_or(0.0),
            });
        }
    }
    if device_may_matter && e.util_ns > 0 {
        let util = e.util_sum / e.util_ns as f64;
        if util >= DEVICE_SATURATED_PCT {
            causes.push(Cause::DeviceSaturated {
                util_pct: util,
                device_bps: e.dev_mean().unwrap_or(0.0),
            });
        }
    }
    if source_stall {
        causes.push(Cause::SourceStall { read_share });
    }
    if e.cpu_ns > 0 {
        let busy = e.cpu_sum / e.cpu_ns as f64;
        if busy >= CPU_SATURATED_PCT {
            causes.push(Cause::CpuSaturated { busy_pct: busy });
        }
    }
    if causes.is_empty() {
        causes.push(Cause::Unknown);
    }
    causes
}
