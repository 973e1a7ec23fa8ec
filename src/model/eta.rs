//! The finish time (DESIGN §4): when the copy's last byte will have been handed to the kernel
//! ("to cache") and when it will be on disk, each with a band from how much the measured rates
//! varied. Copiers extrapolate from an average; here the flush counts, by the throttle math of
//! docs/eta.md:
//!
//! - The data still to copy goes into the page cache (ZFS: its dirty data) at the intake rate
//!   until the cache holds as much as the kernel lets it (freerun; ZFS's
//!   `zfs_delay_min_dirty_percent`); from then on the writer is held at the rate the disks
//!   drain it, so intake = drain.
//! - The disks write at the drain rate the whole time they have data waiting, so all of it —
//!   the bytes left plus this copy's backlog — is on disk after (left + backlog) / drain at the
//!   earliest, and never before the last byte arrived plus what is then still waiting.
//!
//! The drain rate is measured where it is a rate and not an idle disk's trickle: on ZFS from
//! the copy's own committed txgs (dirty bytes over sync time), elsewhere from the seconds the
//! destination's disks ran saturated. Until it is measured, the on-disk time is unknown, never
//! a guess; with no total (a watch, a scan still running) there is no ETA at all.

use std::collections::VecDeque;

use super::Model;
use super::attrib::{TickInfo, dirty_and_writeback, freerun};
use super::pace::ZFS_LEAST_SHARE;
use super::phase::{AT_RATE_FACTOR, SATURATED_UTIL_PCT};
use super::txg::MIN_RATE_TXG_BYTES;
use super::{Event, EventKind};
use crate::present::format::{fmt_clock, fmt_pct, fmt_secs};

const SEC: u64 = 1_000_000_000;
/// The rates are the means over this much of the latest measurements: long enough for several
/// txg cycles (5 s each at most by default) and to average a disk's bursts, short enough to
/// follow a disk that slowed.
pub const WINDOW_NS: u64 = 30 * SEC;
/// The band comes from the means over windows of this length inside [`WINDOW_NS`] (one per
/// second): a 1-second rate of a copy onto ZFS is 0 in a sync and twice the mean between, a
/// spread no finish time is subject to; over 5 s that cycle averages out and what is left is
/// how much the copy's pace really moved.
pub const SPREAD_NS: u64 = 5 * SEC;
/// The band spans these quantiles of those means (the rest of the copy as slow as the
/// slowest tenth of the recent windows, or as fast as the fastest tenth).
pub const BAND_QUANTILES: (f64, f64) = (0.1, 0.9);
/// A spread window counts when at least this share of it was measured.
const SPREAD_MIN_SHARE: f64 = 0.5;
/// On ZFS, the drain rate is that of the copy's latest committed txgs, at most this many.
const TXGS_KEPT: usize = 8;
/// `zfs_vdev_async_write_active_max_dirty_percent`'s default.
const ZFS_FULL_CONCURRENCY_PCT: f64 = 60.0;
/// The summary's check of the finish time: what it said once this share of the bytes was
/// copied.
pub const CHECK_AT_FRACTION: f64 = 0.25;

/// When the copy will be done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eta {
    /// Seconds until the last byte is handed to the kernel (in the page cache or ZFS's dirty
    /// data): the end of a `--no-sync` copy.
    pub to_cache_secs: f64,
    /// Half-width of the band around it, seconds (`None` until enough was measured).
    pub to_cache_band_secs: Option<f64>,
    pub on_disk: OnDisk,
}

/// When the last byte will be on disk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OnDisk {
    /// In `secs`, give or take `band_secs`.
    Secs { secs: f64, band_secs: Option<f64> },
    /// The destination's drain rate is not measured yet (its disks have not run saturated, no
    /// txg of this copy has committed).
    Unmeasured,
    /// Nothing goes to a disk (tmpfs, ramfs, a bench phase that only reads): the run ends when
    /// the last byte is in memory.
    NoDisk,
}

impl Eta {
    /// Seconds until the run's end: on disk when the copy flushes, else in the cache.
    pub fn secs(&self, flushes: bool) -> Option<f64> {
        match self.on_disk {
            OnDisk::Secs { secs, .. } if flushes => Some(secs),
            OnDisk::Unmeasured if flushes => None,
            _ => Some(self.to_cache_secs),
        }
    }

    /// The band of [`Eta::secs`].
    pub fn band_secs(&self, flushes: bool) -> Option<f64> {
        match self.on_disk {
            OnDisk::Secs { band_secs, .. } if flushes => band_secs,
            OnDisk::Unmeasured if flushes => None,
            _ => self.to_cache_band_secs,
        }
    }

    /// The words for a narrowing row, longest first: [`Eta::describe`]'s, then the run's end
    /// alone with its band (`on disk 03:10 (± 20 s)`; the cache's time while the disks' rate
    /// is unmeasured), then that time alone. Once the copy phase is over (`flushing`), only
    /// the disk's time.
    pub fn texts(&self, flushing: bool) -> [String; 3] {
        let band = |b: Option<f64>| {
            b.filter(|b| *b >= 0.5)
                .map(|b| format!(" (± {})", fmt_secs(b)))
                .unwrap_or_default()
        };
        let cache = fmt_clock(self.to_cache_secs);
        match self.on_disk {
            OnDisk::Secs { secs, band_secs } => {
                let disk = format!("on disk {}{}", fmt_clock(secs), band(band_secs));
                let full = if flushing {
                    disk.clone()
                } else {
                    self.describe(true)
                };
                [full, disk, fmt_clock(secs)]
            }
            OnDisk::Unmeasured => [self.describe(true), format!("to cache {cache}"), cache],
            OnDisk::NoDisk => [self.describe(true), cache.clone(), cache],
        }
    }

    /// The words every face prints: `to cache 00:40 · on disk 03:10 (± 20 s)`; only the
    /// cache's time (and its band) on a memory filesystem or a copy that does not flush.
    pub fn describe(&self, flushes: bool) -> String {
        let band = |b: Option<f64>| {
            b.filter(|b| *b >= 0.5)
                .map(|b| format!(" (± {})", fmt_secs(b)))
                .unwrap_or_default()
        };
        let cache = fmt_clock(self.to_cache_secs);
        match self.on_disk {
            OnDisk::Secs { secs, band_secs } if flushes => format!(
                "to cache {cache} · on disk {}{}",
                fmt_clock(secs),
                band(band_secs)
            ),
            OnDisk::Unmeasured if flushes => format!("to cache {cache} · on disk --:--"),
            _ => format!("{cache}{}", band(self.to_cache_band_secs)),
        }
    }
}

/// What the finish time said once [`CHECK_AT_FRACTION`] of the bytes was copied, and how the
/// run really ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EtaCheck {
    /// When the copy passed that share, seconds since the start (pauses excluded).
    pub at_secs: f64,
    /// The ends it announced then, seconds since the start (pauses excluded): the last byte
    /// in the cache, and on disk when the drain rate was measured.
    pub said_cache: Said,
    pub said_disk: Option<Said>,
    /// How the run really ended, once it did.
    pub real: Option<RealEnd>,
    /// Nothing of the run goes to a disk ([`OnDisk::NoDisk`]): its end is the last byte.
    pub no_disk: bool,
}

/// An end the finish time announced: seconds since the start, and the band's half-width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Said {
    pub secs: f64,
    pub band_secs: Option<f64>,
}

/// The real end: seconds since the start (pauses excluded), and whether that was the data on
/// disk (the flush done) or the last byte in the cache (a copy that did not flush).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RealEnd {
    pub secs: f64,
    pub on_disk: bool,
}

impl EtaCheck {
    /// The announced end that the run's real end is compared with: on disk after a flush
    /// (none when it was not measured at the check), in the cache otherwise.
    pub fn said(&self) -> Option<Said> {
        match self.real {
            Some(RealEnd { on_disk: true, .. }) => self.said_disk,
            _ => Some(self.said_cache),
        }
    }

    /// The announced end's error, seconds: + when the run ended later than said.
    pub fn error_secs(&self) -> Option<f64> {
        Some(self.real?.secs - self.said()?.secs)
    }

    /// `finish time said at 25 % (00:10): on disk at 00:44 (± 3.1 s); it was 00:45, 1.2 s
    /// later (3 % of the time left)`.
    pub fn describe(&self) -> String {
        let Some(said) = self.said() else {
            return format!(
                "finish time at {:.0} % ({}): the disks' rate was not measured yet",
                CHECK_AT_FRACTION * 100.0,
                fmt_clock(self.at_secs)
            );
        };
        let band = said
            .band_secs
            .filter(|b| *b >= 0.5)
            .map(|b| format!(" (± {})", fmt_secs(b)))
            .unwrap_or_default();
        let on_disk = self.real.map_or(self.said_disk.is_some(), |r| r.on_disk);
        let what = match (self.no_disk, on_disk) {
            (true, _) => "done",
            (false, true) => "on disk",
            (false, false) => "in cache",
        };
        let mut s = format!(
            "finish time said at {:.0} % ({}): {what} at {}{band}",
            CHECK_AT_FRACTION * 100.0,
            fmt_clock(self.at_secs),
            fmt_clock(said.secs)
        );
        if let (Some(real), Some(err)) = (self.real, self.error_secs()) {
            let left = real.secs - self.at_secs;
            let when = if err < 0.0 { "earlier" } else { "later" };
            s.push_str(&format!(
                "; it was {}, {} {when}",
                fmt_clock(real.secs),
                fmt_secs(err.abs())
            ));
            if left > 0.0 {
                s.push_str(&format!(
                    " ({} of the time left)",
                    fmt_pct((err / left * 100.0).abs())
                ));
            }
        }
        s
    }
}

/// One second of measurements: bytes and the nanoseconds they were measured over.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bin {
    /// Index of the second (t / 1 s).
    sec: u64,
    bytes: f64,
    ns: u64,
}

/// Bins of the last [`WINDOW_NS`], newest last.
#[derive(Debug, Clone, Default)]
struct Bins(VecDeque<Bin>);

impl Bins {
    fn add(&mut self, t1: u64, bytes: f64, ns: u64) {
        let sec = t1 / SEC;
        match self.0.back_mut() {
            Some(b) if b.sec == sec => {
                b.bytes += bytes;
                b.ns = b.ns.saturating_add(ns);
            }
            _ => self.0.push_back(Bin { sec, bytes, ns }),
        }
        let oldest = sec.saturating_sub(WINDOW_NS / SEC);
        while self.0.front().is_some_and(|b| b.sec < oldest) {
            self.0.pop_front();
        }
    }

    /// Mean rate over the bins of the last `ns` before `now` (at least 1 s measured).
    fn rate(&self, now: u64, ns: u64) -> Option<f64> {
        let from = now.saturating_sub(ns) / SEC;
        let (b, n) = self
            .0
            .iter()
            .filter(|b| b.sec >= from)
            .fold((0.0, 0u64), |(b, n), x| {
                (b + x.bytes, n.saturating_add(x.ns))
            });
        (n >= SEC).then(|| b * 1e9 / n as f64)
    }

    /// The means over every [`SPREAD_NS`] window that ends on a bin (sliding by a second)
    /// and was measured for at least half its length.
    fn spread(&self) -> Vec<f64> {
        let len = SPREAD_NS / SEC;
        let Some(last) = self.0.back().map(|b| b.sec) else {
            return Vec::new();
        };
        let first = self.0.front().map_or(last, |b| b.sec);
        ((first + len - 1)..=last)
            .filter_map(|end| {
                let (b, n) = self
                    .0
                    .iter()
                    .filter(|x| x.sec + len > end && x.sec <= end)
                    .fold((0.0, 0u64), |(b, n), x| {
                        (b + x.bytes, n.saturating_add(x.ns))
                    });
                (n as f64 >= SPREAD_MIN_SHARE * SPREAD_NS as f64).then(|| b * 1e9 / n as f64)
            })
            .collect()
    }
}

/// A rate and the band of rates around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rate {
    pub mean: f64,
    /// The band's slow and fast ends ([`BAND_QUANTILES`]), when enough was measured.
    pub band: Option<(f64, f64)>,
}

impl Rate {
    fn of(mean: f64, spread: &[f64]) -> Option<Rate> {
        (mean > 0.0).then(|| Rate {
            mean,
            band: band(spread),
        })
    }

    /// The rate less `other` bytes/s, each figure kept at `least` of itself at most.
    fn less(self, other: f64, least: f64) -> Rate {
        let cut = |x: f64| (x - other).max(x * least);
        Rate {
            mean: cut(self.mean),
            band: self.band.map(|(lo, hi)| (cut(lo), cut(hi))),
        }
    }
}

/// The [`BAND_QUANTILES`] of `xs` (linear interpolation between order statistics), from two
/// values on.
fn band(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let x = p * (v.len() - 1) as f64;
        let (i, f) = (x.floor() as usize, x.fract());
        v[i] + (v[(i + 1).min(v.len() - 1)] - v[i]) * f
    };
    Some((q(BAND_QUANTILES.0), q(BAND_QUANTILES.1)))
}

/// What the model measured for the finish time.
#[derive(Debug, Clone, Default)]
pub(crate) struct EtaTracker {
    /// Bytes the copy handed over, per second of copying (pauses excluded).
    intake: Bins,
    /// Bytes the destination's disks wrote, per second, over the ticks they were saturated.
    drain: Bins,
    /// The copy's committed txgs: (dirty bytes, bytes written, sync ns), newest last.
    txgs: VecDeque<(u64, u64, u64)>,
    check: Option<EtaCheck>,
    /// The ends the estimate announced, once a second over the window.
    said: VecDeque<SaidEnds>,
}

/// The ends the estimate announced at one second: in the cache and on disk, seconds since the
/// start with pauses excluded.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SaidEnds {
    sec: u64,
    cache: f64,
    disk: Option<f64>,
}

impl EtaTracker {
    /// Folds one tick in; `copying`: the copy phase runs and is not paused; `drain_bps`: the
    /// destination's disks' write rate when the tick measured the drain ([`Model::eta_tick`]).
    pub fn tick(
        &mut self,
        tick: &TickInfo,
        copying: bool,
        drain_bps: Option<f64>,
        events: &[Event],
    ) {
        if copying {
            self.intake.add(tick.t1, tick.bytes as f64, tick.dt());
        }
        if let Some(bps) = drain_bps {
            self.drain
                .add(tick.t1, bps * tick.dt() as f64 / 1e9, tick.dt());
        }
        for e in events {
            if let EventKind::TxgCommitted {
                ndirty,
                nwritten,
                stime_ns,
                ..
            } = e.kind
            {
                self.txg_committed(ndirty, nwritten, stime_ns);
            }
        }
    }

    /// A committed txg of this copy. Its dirty bytes are what the copy handed over (its
    /// `nwritten` also counts mirror copies and parity, and little of compressed data); one
    /// under [`MIN_RATE_TXG_BYTES`] tells a sync's fixed cost, not a rate.
    fn txg_committed(&mut self, ndirty: u64, nwritten: u64, stime_ns: u64) {
        let bytes = if ndirty > 0 { ndirty } else { nwritten };
        if bytes < MIN_RATE_TXG_BYTES || stime_ns == 0 {
            return;
        }
        if self.txgs.len() >= TXGS_KEPT {
            self.txgs.pop_front();
        }
        self.txgs.push_back((bytes, nwritten, stime_ns));
    }

    /// The intake rate over the window, with its band.
    fn intake(&self, now: u64) -> Option<Rate> {
        Rate::of(self.intake.rate(now, WINDOW_NS)?, &self.intake.spread())
    }

    /// The rate this copy's data leaves for the disks: their write rate over the ticks that
    /// measured it; on ZFS in the copy's bytes (its txgs' dirty bytes per byte written: a
    /// mirror writes each twice), and from the txgs alone (dirty bytes over sync time) until
    /// the disks were measured at full concurrency.
    fn drain(&self, now: u64, on_zfs: bool) -> Option<Rate> {
        let disks = || Rate::of(self.drain.rate(now, WINDOW_NS)?, &self.drain.spread());
        if !on_zfs {
            return disks();
        }
        let (dirty, written, ns) =
            self.txgs
                .iter()
                .fold((0u64, 0u64, 0u64), |(d, w, n), (x, y, s)| {
                    (
                        d.saturating_add(*x),
                        w.saturating_add(*y),
                        n.saturating_add(*s),
                    )
                });
        if written > 0
            && let Some(r) = disks()
        {
            let per_byte = dirty as f64 / written as f64;
            return Some(Rate {
                mean: r.mean * per_byte,
                band: r.band.map(|(lo, hi)| (lo * per_byte, hi * per_byte)),
            });
        }
        let each: Vec<f64> = self
            .txgs
            .iter()
            .map(|(b, _, s)| *b as f64 * 1e9 / *s as f64)
            .collect();
        (ns > 0).then(|| Rate::of(dirty as f64 * 1e9 / ns as f64, &each))?
    }
}

/// Seconds until the last of `left` bytes is in the cache and until it is on disk, with
/// `backlog` bytes of this copy waiting now, at `intake` and (when measured) `drain` bytes/s.
/// `headroom`: what the cache still takes before the writer is held at the drain rate (None:
/// unknown, the intake is taken to last); `held`: it is held already.
pub(crate) fn finish(
    left: f64,
    backlog: f64,
    intake: f64,
    drain: Option<f64>,
    headroom: Option<f64>,
    held: bool,
) -> (f64, Option<f64>) {
    let Some(d) = drain.filter(|d| *d > 0.0) else {
        return (left / intake, None);
    };
    let to_cache = if held {
        // Held at the disks' pace (or slower on its own): what it sustains.
        left / intake.min(d)
    } else {
        match headroom {
            Some(h) if intake > d => {
                // The cache fills at intake − drain; past that, the writer keeps the disks' pace.
                let fill = h.max(0.0) / (intake - d);
                if intake * fill >= left {
                    left / intake
                } else {
                    fill + (left - intake * fill) / d
                }
            }
            _ => left / intake,
        }
    };
    // The disks have (left + backlog) to write at d, and after the last byte still what is
    // waiting then: the backlog's level when the copy keeps it steady.
    let on_disk = ((left + backlog) / d).max(to_cache + backlog / d);
    (to_cache, Some(on_disk))
}

impl Model {
    /// Folds the tick into the finish time's measurements (after the tick's events), and keeps
    /// what the finish time said when the copy passed [`CHECK_AT_FRACTION`] of its bytes.
    pub(super) fn eta_tick(&mut self, tick: &TickInfo, events: &[Event]) {
        let copying = self.time.first_byte_t.is_some()
            && self.time.paused_since.is_none()
            && self.time.copy_end.is_none()
            && self.time.finished_at.is_none();
        let drain = self.drain_measured(tick);
        self.eta.tick(tick, copying, drain, events);
        self.keep_said(tick.t1);
        if self.eta.check.is_none()
            && let Some(s) = &self.latest
            && s.engine.scan_done
            && s.engine.bytes_total > 0
            && s.engine.bytes_copied as f64 >= CHECK_AT_FRACTION * s.engine.bytes_total as f64
            && let Some(eta) = self.eta()
        {
            let at = self.unpaused_secs(tick.t1);
            self.eta.check = Some(EtaCheck {
                at_secs: at,
                said_cache: Said {
                    secs: at + eta.to_cache_secs,
                    band_secs: eta.to_cache_band_secs,
                },
                said_disk: match eta.on_disk {
                    OnDisk::Secs { secs, band_secs } => Some(Said {
                        secs: at + secs,
                        band_secs,
                    }),
                    OnDisk::NoDisk => Some(Said {
                        secs: at + eta.to_cache_secs,
                        band_secs: eta.to_cache_band_secs,
                    }),
                    OnDisk::Unmeasured => None,
                },
                real: None,
                no_disk: matches!(eta.on_disk, OnDisk::NoDisk),
            });
        }
    }

    /// The destination's disks' write rate when the tick measured how fast they drain: while
    /// saturated (busy ≥ 90 %); on ZFS also while the pool's dirty data stood at or above
    /// `zfs_vdev_async_write_active_max_dirty_percent` of `zfs_dirty_data_max`, where ZFS
    /// writes with all the concurrency it allows (its disks may then read under 90 % busy
    /// and still write all they can). Below that mark and unsaturated, ZFS writes fewer at
    /// once on purpose — the first sync of a copy runs there, slower than the pool.
    fn drain_measured(&self, tick: &TickInfo) -> Option<f64> {
        let bps = tick.dev_bps?;
        if tick.dev_util.is_some_and(|u| u >= SATURATED_UTIL_PCT) {
            return Some(bps);
        }
        if !self.on_zfs() {
            return None;
        }
        let max = self.env.zfs_dirty_data_max? as f64;
        let pct = self
            .env
            .tunables
            .iter()
            .find(|(k, _)| k == "zfs_vdev_async_write_active_max_dirty_percent")
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .unwrap_or(ZFS_FULL_CONCURRENCY_PCT);
        (tick.arc_anon? as f64 >= max * pct / 100.0).then_some(bps)
    }

    /// Nothing of the run goes to a disk: a memory filesystem, or a bench phase that only
    /// reads.
    fn nothing_to_disk(&self) -> bool {
        self.memory_fs() || self.env.reads_only
    }

    /// Seconds since the start at `t`, pauses excluded.
    fn unpaused_secs(&self, t: u64) -> f64 {
        let paused_now = self.time.paused_since.map_or(0, |p| t.saturating_sub(p));
        t.saturating_sub(self.time.paused_ns.saturating_add(paused_now)) as f64 / 1e9
    }

    /// When the copy will be done (DESIGN §4): `None` while the total is unknown (the scan
    /// runs, a watch) or nothing has been measured yet. The band is the wider of the rates'
    /// ([`BAND_QUANTILES`] of their 5-second means) and the estimate's own drift: how far
    /// the ends it announced over the window spread ([`BAND_QUANTILES`] again), so an
    /// estimate that is still settling says so even while the disks write at a steady rate.
    pub fn eta(&self) -> Option<Eta> {
        let mut eta = self.estimate()?;
        if self.time.copy_end.is_some() {
            return Some(eta);
        }
        let drift = |pick: fn(&SaidEnds) -> Option<f64>| {
            let ends: Vec<f64> = self.eta.said.iter().filter_map(pick).collect();
            band(&ends).map(|(lo, hi)| (hi - lo) / 2.0)
        };
        let widen = |b: Option<f64>, d: Option<f64>| match (b, d) {
            (Some(b), Some(d)) => Some(b.max(d)),
            (b, _) => b,
        };
        eta.to_cache_band_secs = widen(eta.to_cache_band_secs, drift(|x| Some(x.cache)));
        if let OnDisk::Secs { band_secs, .. } = &mut eta.on_disk {
            *band_secs = widen(*band_secs, drift(|x| x.disk));
        }
        Some(eta)
    }

    /// Keeps the ends the estimate announces, once a second (drift of [`Model::eta`]).
    fn keep_said(&mut self, t: u64) {
        let sec = t / SEC;
        if self.eta.said.back().is_some_and(|x| x.sec == sec) || self.time.copy_end.is_some() {
            return;
        }
        let Some(e) = self.estimate() else {
            return;
        };
        let now = self.unpaused_secs(t);
        let disk = match e.on_disk {
            OnDisk::Secs { secs, .. } => Some(now + secs),
            _ => None,
        };
        self.eta.said.push_back(SaidEnds {
            sec,
            cache: now + e.to_cache_secs,
            disk,
        });
        while self
            .eta
            .said
            .front()
            .is_some_and(|x| x.sec + WINDOW_NS / SEC < sec)
        {
            self.eta.said.pop_front();
        }
    }

    /// The estimate from the rates alone ([`Model::eta`] adds its drift to the band).
    fn estimate(&self) -> Option<Eta> {
        let s = self.latest.as_ref()?;
        let e = &s.engine;
        let backlog = self.flush_backlog().map_or(0, |b| b.bytes) as f64;
        let drain = self.drain_rate(s.t_ns);
        if self.time.copy_end.is_some() {
            return Some(self.flush_eta(backlog, drain));
        }
        if !e.scan_done || e.bytes_total == 0 {
            return None;
        }
        let intake = self.eta.intake(s.t_ns)?;
        let left = e.bytes_total.saturating_sub(e.bytes_copied) as f64;
        let headroom = self.cache_headroom();
        let held =
            self.phase.announced() || drain.is_some_and(|d| intake.mean <= AT_RATE_FACTOR * d.mean);
        let at = |i: f64, d: Option<f64>| finish(left, backlog, i, d, headroom, held);
        let (to_cache, disk) = at(intake.mean, drain.map(|d| d.mean));
        let slow_fast =
            band_ends(intake, drain, held).map(|((si, sd), (fi, fd))| (at(si, sd), at(fi, fd)));
        let on_disk = match disk {
            _ if self.nothing_to_disk() => OnDisk::NoDisk,
            Some(secs) => OnDisk::Secs {
                secs,
                band_secs: slow_fast.and_then(|(s, f)| Some(band_of(secs, s.1?, f.1?))),
            },
            None => OnDisk::Unmeasured,
        };
        Some(Eta {
            to_cache_secs: to_cache,
            to_cache_band_secs: slow_fast.map(|(s, f)| band_of(to_cache, s.0, f.0)),
            on_disk,
        })
    }

    /// The drain rate measured in the window; without a saturated second in it, what the
    /// disks sustained when they last ran saturated (no band: not measured lately).
    /// On ZFS, less what other writers put into the same txgs (a NAS's Samba clients): the
    /// pool drains theirs too, so this copy's share is the rest (never under
    /// [`ZFS_LEAST_SHARE`] of it, as `--pace auto` leaves it).
    fn drain_rate(&self, now: u64) -> Option<Rate> {
        let on_zfs = self.on_zfs();
        let r = self.eta.drain(now, on_zfs).or_else(|| {
            let c = self.phase.slowed_to().or(self.phase.ceiling())?;
            (!on_zfs).then_some(Rate {
                mean: c,
                band: None,
            })
        })?;
        match self.facts.others_bps().filter(|_| on_zfs) {
            Some(others) => Some(r.less(others, ZFS_LEAST_SHARE)),
            None => Some(r),
        }
    }

    /// The flush (the copy phase over): what is left in RAM at the drain rate.
    fn flush_eta(&self, backlog: f64, drain: Option<Rate>) -> Eta {
        let on_disk = match drain {
            _ if self.nothing_to_disk() => OnDisk::NoDisk,
            _ if self.time.flush_done.is_some() || backlog == 0.0 => OnDisk::Secs {
                secs: 0.0,
                band_secs: None,
            },
            Some(d) => OnDisk::Secs {
                secs: backlog / d.mean,
                band_secs: d
                    .band
                    .map(|(lo, hi)| band_of(backlog / d.mean, backlog / lo, backlog / hi)),
            },
            None => OnDisk::Unmeasured,
        };
        Eta {
            to_cache_secs: 0.0,
            to_cache_band_secs: None,
            on_disk,
        }
    }

    /// What the cache takes before the writer is held at the drain rate: freerun less the
    /// system's dirty data on a page-cache destination; on ZFS the dirty data at which the
    /// write throttle starts delaying (`zfs_delay_min_dirty_percent` of `zfs_dirty_data_max`)
    /// less what is dirty now (arc `anon_size`). `None` when the figures are not known.
    fn cache_headroom(&self) -> Option<f64> {
        let s = self.latest.as_ref()?;
        if self.on_zfs() {
            let max = self.env.zfs_dirty_data_max? as f64;
            let pct = f64::from(self.env.zfs_delay_percent?);
            let dirty = s.zfs.as_ref()?.arc_anon? as f64;
            return Some((max * pct / 100.0 - dirty).max(0.0));
        }
        let p = s.page_cache?;
        let f = freerun(&p);
        (f > 0).then(|| f.saturating_sub(dirty_and_writeback(&p)) as f64)
    }

    /// What the finish time said at [`CHECK_AT_FRACTION`] of the bytes, and (once the run
    /// ended) when it really ended.
    pub fn eta_check(&self) -> Option<EtaCheck> {
        let mut c = self.eta.check?;
        let secs = |t: u64| t.saturating_sub(self.time.paused_ns) as f64 / 1e9;
        c.real = match (self.time.flush_done, self.time.copy_end) {
            (Some((t, _)), _) => Some(RealEnd {
                secs: secs(t),
                on_disk: true,
            }),
            // A copy that did not flush (--no-sync) ends with its last byte; one still
            // flushing has not ended.
            (None, Some(t))
                if self.time.finished_at.is_some() && self.time.flush_start.is_none() =>
            {
                Some(RealEnd {
                    secs: secs(t),
                    on_disk: self.nothing_to_disk(),
                })
            }
            _ => None,
        };
        Some(c)
    }
}

/// The rates (intake, drain) at the band's slow end and at its fast end, when both were
/// measured with a spread (the intake alone while the drain is unknown). A writer held at the
/// disks' pace has theirs for both: its own rate swings with each txg sync or writeback
/// pause while the disks keep writing through them.
type RatePair = (f64, Option<f64>);
fn band_ends(intake: Rate, drain: Option<Rate>, held: bool) -> Option<(RatePair, RatePair)> {
    match (drain.map(|d| d.band), intake.band) {
        (Some(Some((dlo, dhi))), _) if held => Some(((dlo, Some(dlo)), (dhi, Some(dhi)))),
        (Some(Some((dlo, dhi))), Some((ilo, ihi))) => Some(((ilo, Some(dlo)), (ihi, Some(dhi)))),
        (None, Some((ilo, ihi))) => Some(((ilo, None), (ihi, None))),
        _ => None,
    }
}

/// The band's half-width around `mid` from its slow and fast ends (the wider side: the band
/// is said as one ±).
fn band_of(mid: f64, slow: f64, fast: f64) -> f64 {
    (slow - mid).max(mid - fast).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: f64 = 1e6;

    #[test]
    fn a_copy_held_at_the_disks_pace_ends_on_disk_one_backlog_after_its_last_byte() {
        // 400 MB left at the disks' 40 MB/s, 200 MB of this copy waiting: the last byte is in
        // the cache after 10 s and on disk after 15 s.
        let (cache, disk) = finish(
            400.0 * MB,
            200.0 * MB,
            40.0 * MB,
            Some(40.0 * MB),
            None,
            true,
        );
        assert!((cache - 10.0).abs() < 1e-9, "{cache}");
        assert!((disk.unwrap() - 15.0).abs() < 1e-9);
        // Held, but an average that still counts the first burst into the cache is not its
        // pace: the disks' rate is.
        let (cache, _) = finish(
            400.0 * MB,
            200.0 * MB,
            90.0 * MB,
            Some(40.0 * MB),
            None,
            true,
        );
        assert!((cache - 10.0).abs() < 1e-9, "{cache}");
    }

    #[test]
    fn a_burst_into_the_cache_slows_to_the_disks_pace_once_the_cache_is_full() {
        // 4 GB left at 1 GB/s into a cache with 2 GB of room, disks at 40 MB/s: the cache is
        // full after 2 / 0.96 s, then the writer keeps the disks' pace. On disk: all of it
        // at 40 MB/s, whatever the cache does.
        let (cache, disk) = finish(
            4000.0 * MB,
            500.0 * MB,
            1000.0 * MB,
            Some(40.0 * MB),
            Some(2000.0 * MB),
            false,
        );
        let fill = 2000.0 / 960.0;
        let expect = fill + (4000.0 - 1000.0 * fill) / 40.0;
        assert!((cache - expect).abs() < 1e-6, "{cache} vs {expect}");
        assert!((disk.unwrap() - 4500.0 / 40.0).abs() < 1e-6);
        // A copy that fits in the room left ends in the cache at its own pace, and on disk
        // when the disks have written it all.
        let (cache, disk) = finish(
            400.0 * MB,
            0.0,
            1000.0 * MB,
            Some(40.0 * MB),
            Some(2000.0 * MB),
            false,
        );
        assert!((cache - 0.4).abs() < 1e-9);
        assert!((disk.unwrap() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_slow_source_onto_a_fast_disk_ends_one_backlog_after_its_last_byte() {
        // 10 MB/s in, the disk drains 100 MB/s: 100 s to copy, then the 20 MB waiting.
        let (cache, disk) = finish(
            1000.0 * MB,
            20.0 * MB,
            10.0 * MB,
            Some(100.0 * MB),
            None,
            true,
        );
        assert!((cache - 100.0).abs() < 1e-9);
        assert!((disk.unwrap() - 100.2).abs() < 1e-9);
    }

    #[test]
    fn without_a_drain_rate_the_disk_time_is_not_guessed() {
        let (cache, disk) = finish(400.0 * MB, 200.0 * MB, 40.0 * MB, None, Some(1e9), false);
        assert!((cache - 10.0).abs() < 1e-9);
        assert_eq!(disk, None);
    }

    #[test]
    fn the_band_spans_the_tenth_to_ninetieth_percentile_of_the_five_second_means() {
        let mut bins = Bins::default();
        // 30 s at 40 MB/s, but the 5 s from 10 s at 20 MB/s.
        for i in 0..300u64 {
            let rate = if (100..150).contains(&i) { 20.0 } else { 40.0 };
            bins.add((i + 1) * SEC / 10, rate * MB / 10.0, SEC / 10);
        }
        let rate = bins.rate(30 * SEC, WINDOW_NS).unwrap();
        assert!((rate - 37.0 * MB).abs() < 0.5 * MB, "{rate}");
        let spread = bins.spread();
        // One window per second from the 5th on (the ticks end in 31 seconds, 0 to 30).
        assert_eq!(spread.len(), 27);
        let (lo, hi) = band(&spread).unwrap();
        assert!(lo < 30.0 * MB && (hi - 40.0 * MB).abs() < 1.0, "{lo} {hi}");
        assert_eq!(band(&[1.0]), None);
        assert_eq!(band(&[1.0, 3.0]), Some((1.2, 2.8)));
    }

    #[test]
    fn bins_keep_only_the_window() {
        let mut bins = Bins::default();
        for i in 0..100u64 {
            bins.add(i * SEC, 1.0, SEC);
        }
        assert!(bins.0.len() <= (WINDOW_NS / SEC) as usize + 1);
        assert_eq!(bins.0.back().map(|b| b.sec), Some(99));
    }

    #[test]
    fn the_words() {
        let eta = Eta {
            to_cache_secs: 40.0,
            to_cache_band_secs: Some(2.0),
            on_disk: OnDisk::Secs {
                secs: 190.0,
                band_secs: Some(20.0),
            },
        };
        assert_eq!(
            eta.describe(true),
            "to cache 00:40 · on disk 03:10 (± 20 s)"
        );
        assert_eq!(eta.describe(false), "00:40 (± 2.0 s)");
        assert_eq!(
            eta.texts(false),
            [
                "to cache 00:40 · on disk 03:10 (± 20 s)".to_string(),
                "on disk 03:10 (± 20 s)".to_string(),
                "03:10".to_string()
            ]
        );
        assert_eq!(eta.texts(true)[0], "on disk 03:10 (± 20 s)");
        let unknown = Eta {
            on_disk: OnDisk::Unmeasured,
            ..eta
        };
        assert_eq!(unknown.describe(true), "to cache 00:40 · on disk --:--");
        assert_eq!(unknown.secs(true), None);
        assert_eq!(unknown.texts(false)[1], "to cache 00:40");
        let tmpfs = Eta {
            on_disk: OnDisk::NoDisk,
            ..eta
        };
        assert_eq!(tmpfs.describe(true), "00:40 (± 2.0 s)");
        assert_eq!(tmpfs.secs(true), Some(40.0));
    }

    #[test]
    fn the_checks_words() {
        let check = EtaCheck {
            at_secs: 10.0,
            said_cache: Said {
                secs: 30.0,
                band_secs: None,
            },
            said_disk: Some(Said {
                secs: 44.0,
                band_secs: Some(3.1),
            }),
            real: Some(RealEnd {
                secs: 45.2,
                on_disk: true,
            }),
            no_disk: false,
        };
        assert_eq!(
            check.describe(),
            "finish time said at 25 % (00:10): on disk at 00:44 (± 3.1 s); it was 00:45, \
             1.2 s later (3 % of the time left)"
        );
        let no_sync = EtaCheck {
            real: Some(RealEnd {
                secs: 28.0,
                on_disk: false,
            }),
            ..check
        };
        assert_eq!(no_sync.error_secs().map(|e| e.round()), Some(-2.0));
        assert!(
            no_sync
                .describe()
                .contains("in cache at 00:30; it was 00:28, 2.0 s earlier (11 % of")
        );
        let tmpfs = EtaCheck {
            said_disk: Some(check.said_cache),
            no_disk: true,
            ..check
        };
        assert!(
            tmpfs.describe().contains(": done at 00:30;"),
            "{}",
            tmpfs.describe()
        );
    }
}
