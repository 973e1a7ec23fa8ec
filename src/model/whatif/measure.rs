//! What a recorded run measured, as the simulation takes it: the intake (the copy's rate
//! while nothing at the destination held it), the destination's write rate, a txg sync's
//! fixed cost, and the limits the run met that no tunable sets (on ZFS the pool's space
//! reservation, on a disk the device's own dirty limit). From the replayed model, plus what
//! only the raw samples hold ([`Observer`]: the idle txgs' sync time, the bytes per tx).

use super::WhatifError;
use crate::model::budget::Slice;
use crate::model::phase::Limit;
use crate::model::{Cause, EventKind, Model};
use crate::sample::{Environment, Sample, WaitClass};

/// `spa_asize_inflation` (module/zfs/spa_misc.c): a dirtied byte reserves this much pool
/// space until its txg syncs (`dmu_objset_willuse_space` → `dsl_dir_willuse_space`).
pub const ASIZE_INFLATION: f64 = 24.0;
/// A txg of less than this dirtied nothing of the copy: its sync time is the fixed cost.
const IDLE_TXG_BYTES: u64 = 1 << 20;
/// One `zfs_write` tx per record (`zfs_write` loops per `max_blksz`): 128 KiB, the default
/// `recordsize`, when the recording cannot tell.
pub const DEFAULT_TX_BYTES: f64 = 131_072.0;
/// A device hold counts when the writer was held this far under the global freerun.
const DEVICE_HOLD_SHARE: f64 = 0.8;

/// The intake is replayed in windows of this length.
pub const WINDOW_NS: u64 = 1_000_000_000;
/// A tick the page cache held the writer this share of tells the level it holds writers at
/// (a share as [`held_share`] counts it: one of two copy threads held all the tick is a half).
const THROTTLED_SHARE: f64 = 0.25;
/// Ticks held by the page cache that tell its level.
const MIN_THROTTLED_TICKS: usize = 5;
/// A window tells the intake when the writer was free at least this share of it.
const MIN_FREE_SHARE: f64 = 0.3;

/// One window of the copy: bytes, the ns the writer was free (not held by the destination),
/// the ns it covered.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Window {
    bytes: u64,
    free_ns: f64,
    ns: f64,
    /// The copy threads' run-queue wait, ns.
    runq_ns: f64,
    /// The busiest core's load, percent (the highest tick's).
    max_core_pct: Option<f32>,
}

/// One second of the recorded copy, as the simulated writer replays it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Second {
    /// What the source and the CPU gave while the destination did not hold the writer,
    /// bytes/s; `None` where it was held too much of the second to tell.
    pub intake_bps: Option<f64>,
    /// Share of the writer's free time it waited for a CPU, 0–1.
    pub runq_share: f64,
    /// The busiest core's load, percent, when recorded.
    pub max_core_pct: Option<f32>,
}

/// What the raw samples of a recording hold beyond the model's figures.
#[derive(Debug, Clone, Default)]
pub struct Observer {
    /// The copy's windows, from its first sample on.
    windows: Vec<Window>,
    last: Option<Sample>,
    /// Sync times of committed txgs that dirtied (almost) nothing, ns, one per txg.
    idle_stimes: Vec<(u64, u64)>,
    /// Bytes copied and txs assigned over ticks that did both.
    tx: (u64, u64),
    prev: Option<(u64, u64)>,
    /// The page-cache limits of the first sample that had them: (bg_thresh, thresh).
    limits: Option<(u64, u64)>,
    disks: u32,
    /// The most data the run held in RAM for the destination (ZFS dirty data, or dirty +
    /// writeback), bytes.
    max_cached: Option<u64>,
    /// Dirty + writeback at each tick the page cache held the writer most of, bytes.
    throttled_levels: Vec<u64>,
}

impl Observer {
    /// Looks at one recorded sample (every one, in order).
    pub fn sample(&mut self, s: &Sample) {
        if let Some(prev) = self.last.replace(s.clone()) {
            self.window_tick(&prev, s);
        }
        if let Some(d) = &s.dest_disk {
            self.disks = self.disks.max(d.disks);
        }
        let cached = match (&s.zfs, &s.page_cache) {
            (Some(z), _) => z.arc_anon,
            (None, Some(p)) => Some(p.dirty.saturating_add(p.writeback)),
            _ => None,
        };
        if let Some(c) = cached {
            self.max_cached = Some(self.max_cached.unwrap_or(0).max(c));
        }
        if let (None, Some(p)) = (self.limits, &s.page_cache) {
            self.limits = Some((p.bg_thresh, p.thresh)).filter(|(_, t)| *t > 0);
        }
        let Some(z) = &s.zfs else { return };
        for r in &z.txgs {
            let seen = self.idle_stimes.iter().any(|(t, _)| *t == r.txg);
            if r.state == 'C' && r.ndirty < IDLE_TXG_BYTES && r.stime > 0 && !seen {
                self.idle_stimes.push((r.txg, r.stime));
            }
        }
        let now = (s.engine.bytes_copied, z.dmu_tx.assigned);
        if let Some((b, a)) = self.prev {
            let (db, da) = (now.0.saturating_sub(b), now.1.saturating_sub(a));
            if db > 0 && da > 0 {
                self.tx.0 += db;
                self.tx.1 += da;
            }
        }
        self.prev = Some(now);
    }

    /// Adds a copying tick to its window: the writer's time held by the destination from
    /// the exact trace, else from its threads' state at the tick's end.
    fn window_tick(&mut self, prev: &Sample, s: &Sample) {
        let e = &prev.engine;
        if s.t_ns <= prev.t_ns || (e.bytes_total > 0 && e.bytes_copied >= e.bytes_total) {
            return;
        }
        let dt = (s.t_ns - prev.t_ns) as f64;
        let held = held_share(prev, s, WaitClass::is_destination);
        if held_share(prev, s, |c| c == WaitClass::DirtyThrottle) >= THROTTLED_SHARE
            && let Some(p) = &s.page_cache
        {
            self.throttled_levels
                .push(p.dirty.saturating_add(p.writeback));
        }
        let i = (prev.t_ns / WINDOW_NS) as usize;
        if self.windows.len() <= i {
            self.windows.resize(i + 1, Window::default());
        }
        // A writer sleeping for its own pace (`--pace auto`, `--bwlimit`) is not free either:
        // the intake is what it gave while it ran.
        let paced = (s.engine.paced_ns.saturating_sub(e.paced_ns) as f64 / dt).min(1.0);
        let w = &mut self.windows[i];
        w.bytes += s.engine.bytes_copied.saturating_sub(e.bytes_copied);
        w.free_ns += dt * (1.0 - (held + paced).min(1.0));
        w.ns += dt;
        if let (Some(a), Some(b)) = (&prev.threads, &s.threads) {
            w.runq_ns += b.runq_wait_ns.saturating_sub(a.runq_wait_ns) as f64;
        }
        if let Some(c) = s.cpu {
            w.max_core_pct = Some(
                w.max_core_pct
                    .map_or(c.max_core_pct, |m| m.max(c.max_core_pct)),
            );
        }
    }

    /// Each second from the copy's first byte on.
    fn intake_profile(&self) -> Vec<Second> {
        let first = self.windows.iter().position(|w| w.bytes > 0).unwrap_or(0);
        self.windows[first..]
            .iter()
            .map(|w| Second {
                intake_bps: (w.ns > 0.0 && w.free_ns >= MIN_FREE_SHARE * w.ns)
                    .then(|| w.bytes as f64 * 1e9 / w.free_ns),
                runq_share: if w.free_ns > 0.0 {
                    (w.runq_ns / w.free_ns).clamp(0.0, 1.0)
                } else {
                    0.0
                },
                max_core_pct: w.max_core_pct,
            })
            .collect()
    }

    /// The median sync time of the idle txgs, ns.
    fn fixed_ns(&self) -> Option<u64> {
        let mut v: Vec<u64> = self.idle_stimes.iter().map(|(_, s)| *s).collect();
        v.sort_unstable();
        (v.len() >= 3).then(|| v[v.len() / 2])
    }

    /// Bytes the copy wrote per assigned tx: the dataset's record size, as ZFS sees it.
    fn tx_bytes(&self) -> Option<f64> {
        (self.tx.1 >= 100).then(|| self.tx.0 as f64 / self.tx.1 as f64)
    }

    /// Where the page cache began to hold the writer: dirty + writeback at the lowest tenth
    /// of the ticks it held the writer most of (the kernel starts holding at freerun and
    /// settles above it), once a few such ticks were seen.
    fn throttled_level(&self) -> Option<u64> {
        let mut v = self.throttled_levels.clone();
        v.sort_unstable();
        (v.len() >= MIN_THROTTLED_TICKS).then(|| v[v.len() / 10])
    }
}

/// The share of the tick (`prev` to `s`) the writer was held in the classes `held`: from the
/// exact trace (its threads' time, at most two of them counted as the writer), else from its
/// threads' state at the tick's end.
fn held_share(prev: &Sample, s: &Sample, held: impl Fn(WaitClass) -> bool) -> f64 {
    let dt = (s.t_ns - prev.t_ns) as f64;
    match (&prev.exact, &s.exact) {
        (Some(a), Some(b)) if b.traced_ns > a.traced_ns && b.lost_events == a.lost_events => {
            let active = b.threads.max(1) as f64;
            let ns: u64 = WaitClass::ALL
                .iter()
                .filter(|c| held(**c))
                .map(|c| b.off_cpu(*c).saturating_sub(a.off_cpu(*c)))
                .sum();
            (ns as f64 / active.min(2.0)).min(dt) / dt
        }
        _ => match &s.threads {
            Some(t) if t.active > 0 => {
                let n: u32 = t
                    .classes
                    .iter()
                    .filter(|(c, _)| held(**c))
                    .map(|(_, n)| *n)
                    .sum();
                (f64::from(n) / f64::from(t.active)).min(1.0)
            }
            _ => 0.0,
        },
    }
}

/// The recorded run's rates and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The recorded environment (tunables, filesystem, RAM).
    pub env: Environment,
    /// The sample interval, ns.
    pub interval_ns: u64,
    /// Bytes the copy wrote.
    pub bytes: u64,
    /// The copy ended with a flush (the durable end is its end).
    pub flushed: bool,
    /// What the source and the CPU gave while the destination did not hold the writer,
    /// bytes/s.
    pub intake_bps: f64,
    /// How the intake was measured (for the summary).
    pub intake_from: IntakeFrom,
    /// The intake second by second from the copy's first byte ([`WINDOW_NS`]), where the
    /// writer was free long enough to tell; the simulated copy offers it in turn (and
    /// `intake_bps` where a window does not tell, or past the recorded copy's end).
    pub intake_profile: Vec<Second>,
    /// The most data the recorded run held in RAM for the destination, bytes: limits above
    /// it never showed in the recording.
    pub max_cached: Option<u64>,
    pub dest: Dest,
}

/// Where the intake figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntakeFrom {
    /// The bytes over the copying time the writer's threads were not held by the destination.
    Budget,
    /// No thread states: the copy's fastest second.
    FastestSecond,
}

/// The destination as measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Dest {
    Pool(PoolRates),
    Disk(DiskRates),
}

/// A ZFS pool from the copy's txgs.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolRates {
    /// Dirty data the sync writes per second, less the fixed cost: Σ ndirty ÷ Σ (stime −
    /// fixed), bytes/s (logical, as the dirty accounting counts).
    pub drain_bps: f64,
    /// Σ nwritten ÷ Σ stime, bytes/s: what the disks wrote while syncing.
    pub physical_bps: f64,
    /// A sync's fixed cost: the idle txgs' median sync time, ns.
    pub fixed_ns: u64,
    /// The copy's committed txgs the rates come from.
    pub txgs: usize,
    /// Bytes the disks wrote per dirty byte (metadata, mirror copies, parity).
    pub written_per_dirty: f64,
    /// Bytes per tx (the record size), and whether measured.
    pub tx_bytes: f64,
    pub tx_measured: bool,
    /// The pool space the reservation check allowed the copy's unsynced data, bytes (24 ×
    /// that data plus what the copy already synced): measured from stalls below the write
    /// throttle, else the destination's free space as the copy began (`statvfs`); `None`
    /// when neither is known.
    pub free_space: Option<u64>,
    /// `free_space` was measured from the run's stalls.
    pub free_space_from_stalls: bool,
    pub disks: u32,
}

/// Disks behind the page cache.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskRates {
    /// The disks' write rate while saturated, bytes/s.
    pub disk_bps: f64,
    /// The recorded limits (vmstat `nr_dirty_background_threshold`, `nr_dirty_threshold`).
    pub bg_thresh: u64,
    pub thresh: u64,
    /// Memory the ratios apply to (`global_dirtyable_memory`): the recorded threshold over
    /// its ratio; `None` when the recording set the limits in bytes.
    pub dirtyable: Option<u64>,
    /// Dirty + writeback where the kernel began to hold the recorded copy.
    pub fill_level: Option<u64>,
    /// That level, when it lay well under the global freerun: the device's own limit (a
    /// bdi's `strict_limit`/`max_ratio`), which the vm.dirty_* tunables do not move.
    pub device_hold: Option<u64>,
    pub disks: u32,
}

impl Measured {
    /// Measures a replayed recording (`model`, finished) with what `observer` saw of its
    /// samples.
    pub fn new(
        model: &Model,
        observer: &Observer,
        interval_ns: u64,
    ) -> Result<Measured, WhatifError> {
        let stats = model.stats();
        if stats.bytes == 0 {
            return Err(WhatifError::Unmeasured(
                "the recording copied nothing: there is no rate to replay".into(),
            ));
        }
        if model.env.watched.is_some() {
            return Err(WhatifError::Unmeasured(
                "a watch recording: its writer's intake is another program's, not a copy to replay"
                    .into(),
            ));
        }
        let (intake_bps, intake_from) = intake(model);
        let dest = if model.on_zfs() {
            Dest::Pool(pool_rates(model, observer)?)
        } else {
            Dest::Disk(disk_rates(model, observer)?)
        };
        Ok(Measured {
            env: model.env.clone(),
            interval_ns: interval_ns.clamp(10_000_000, 1_000_000_000),
            bytes: stats.bytes,
            flushed: model.time.flush_done.is_some(),
            intake_bps,
            intake_from,
            intake_profile: if intake_from == IntakeFrom::Budget {
                observer.intake_profile()
            } else {
                Vec::new()
            },
            max_cached: observer.max_cached,
            dest,
        })
    }
}

/// The slices where the destination held the writer.
const HELD: [Slice; 6] = [
    Slice::DirtyThrottle,
    Slice::DiskWait,
    Slice::TxgWait,
    Slice::SyncWrites,
    Slice::Journal,
    Slice::RateLimit,
];

/// The copy's bytes over its copying time less the time the destination held the writer;
/// without thread states, its fastest second.
fn intake(model: &Model) -> (f64, IntakeFrom) {
    let b = model.budget();
    let bytes = model.stats().bytes as f64;
    let held: f64 = HELD.iter().map(|s| b.ns(*s)).sum();
    let free_ns = b.copying_ns() - held;
    if b.is_measured() && free_ns > 1e8 {
        return (bytes * 1e9 / free_ns, IntakeFrom::Budget);
    }
    (fastest_second(model), IntakeFrom::FastestSecond)
}

/// The highest mean rate over one second of the series.
fn fastest_second(model: &Model) -> f64 {
    let pts = model.series().points();
    let mut best = 0.0f64;
    let (mut lo, mut bytes, mut ns) = (0usize, 0.0f64, 0u64);
    for p in pts {
        bytes += p.copy_bps * p.dt_ns as f64 / 1e9;
        ns += p.dt_ns;
        while ns > 1_000_000_000 && lo < pts.len() {
            let q = &pts[lo];
            bytes -= q.copy_bps * q.dt_ns as f64 / 1e9;
            ns -= q.dt_ns;
            lo += 1;
        }
        if ns >= 900_000_000 {
            best = best.max(bytes * 1e9 / ns as f64);
        }
    }
    best.max(model.stats().avg_bps)
}

/// One committed txg of the copy.
#[derive(Debug, Clone, Copy)]
struct Committed {
    txg: u64,
    ndirty: u64,
    nwritten: u64,
    stime_ns: u64,
}

/// The txgs committed after the copy's first byte that dirtied something.
fn copy_txgs(model: &Model) -> Vec<Committed> {
    let first = model.time.first_byte_t.unwrap_or(0);
    model
        .events()
        .iter()
        .filter(|e| e.t_ns >= first)
        .filter_map(|e| match e.kind {
            EventKind::TxgCommitted {
                txg,
                ndirty,
                nwritten,
                stime_ns,
            } if ndirty >= IDLE_TXG_BYTES && stime_ns > 0 => Some(Committed {
                txg,
                ndirty,
                nwritten,
                stime_ns,
            }),
            _ => None,
        })
        .collect()
}

fn pool_rates(model: &Model, obs: &Observer) -> Result<PoolRates, WhatifError> {
    let txgs = copy_txgs(model);
    if txgs.is_empty() {
        return Err(WhatifError::Unmeasured(
            "no txg of the copy committed in the recording (zfs_txg_history 0?): the pool's rate is unknown".into(),
        ));
    }
    let fixed_ns = obs.fixed_ns().unwrap_or(0);
    let sum = |f: fn(&Committed) -> u64| txgs.iter().map(f).sum::<u64>() as f64;
    let (ndirty, nwritten, stime) = (sum(|c| c.ndirty), sum(|c| c.nwritten), sum(|c| c.stime_ns));
    let data_ns = (stime - fixed_ns as f64 * txgs.len() as f64).max(stime * 0.25);
    let (tx_bytes, tx_measured) = match obs.tx_bytes() {
        Some(b) => (b, true),
        None => (DEFAULT_TX_BYTES, false),
    };
    let stalls_free = free_space(model, &txgs);
    Ok(PoolRates {
        drain_bps: ndirty * 1e9 / data_ns,
        physical_bps: nwritten * 1e9 / stime,
        fixed_ns,
        txgs: txgs.len(),
        written_per_dirty: (nwritten / ndirty).clamp(0.5, 8.0),
        tx_bytes,
        tx_measured,
        // Measured from the run's own stalls, else the destination's free space at the start
        // (a paced run never meets the reservation).
        free_space: stalls_free.or(model.env.dest_free_bytes),
        free_space_from_stalls: stalls_free.is_some(),
        disks: obs.disks.max(1),
    })
}

/// The space the pool's reservation check allowed: from each stall where a txg sync held
/// the writer while dirty data stood below the write throttle (no delay, nothing over the
/// maximum): the writer then waited in `txg_wait_synced` because `dsl_dir_tempreserve_impl`
/// found `used + 24 × unsynced ≥ quota` (module/zfs/dsl_dir.c). Unsynced then is the syncing
/// txg's dirty data and the open one's (which syncs next, unchanged: the writer was stopped);
/// used is what the copy synced before. The median over at least two stalls.
fn free_space(model: &Model, txgs: &[Committed]) -> Option<u64> {
    let max = model.env.zfs_dirty_data_max? as f64;
    let delay_min = max * f64::from(model.env.zfs_delay_percent.unwrap_or(60)) / 100.0;
    let ndirty = |txg: u64| txgs.iter().find(|c| c.txg == txg).map(|c| c.ndirty);
    let mut found: Vec<f64> = model
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Drop(d) => Some(d),
            _ => None,
        })
        .filter(|d| {
            !d.causes
                .iter()
                .any(|c| matches!(c, Cause::ZfsThrottle { .. }))
        })
        .filter_map(|d| match d.causes.first() {
            Some(Cause::TxgSync {
                txg,
                dirty_pct_of_max: Some(p),
                syncs: None,
                ..
            }) if p / 100.0 * max < delay_min => {
                let unsynced = ndirty(*txg)? + ndirty(txg + 1)?;
                let used: u64 = txgs.iter().filter(|c| c.txg < *txg).map(|c| c.ndirty).sum();
                Some(ASIZE_INFLATION * unsynced as f64 + used as f64)
            }
            _ => None,
        })
        .collect();
    if found.len() < 2 {
        return None;
    }
    found.sort_by(f64::total_cmp);
    Some(found[found.len() / 2] as u64)
}

fn disk_rates(model: &Model, obs: &Observer) -> Result<DiskRates, WhatifError> {
    let disk_bps = model
        .phase
        .ceiling()
        .filter(|_| model.phase.limit() == Some(Limit::Disk))
        .ok_or_else(|| {
            WhatifError::Unmeasured(
                "the recording never ran its disks saturated: their sustained write rate is unknown".into(),
            )
        })?;
    let (bg_thresh, thresh) = obs
        .limits
        .or_else(|| {
            let p = model.latest()?.page_cache?;
            Some((p.bg_thresh, p.thresh))
        })
        .ok_or_else(|| {
            WhatifError::Unmeasured("the recording has no page-cache limits (vmstat)".into())
        })?;
    let tunable = |k: &str| {
        model
            .env
            .tunables
            .iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.trim().parse::<u64>().ok())
    };
    let dirtyable = match (tunable("vm.dirty_bytes"), tunable("vm.dirty_ratio")) {
        (Some(0) | None, Some(r)) if r > 0 => Some(thresh * 100 / r),
        _ => None,
    };
    let freerun = (bg_thresh + thresh) / 2;
    // The level where the copy's burst into the cache ended, else where the kernel was seen
    // holding the writer (a paced copy, or one held from its start, has no burst).
    let fill_level = model.phase.fill_level().or(obs.throttled_level());
    let device_hold = fill_level.filter(|l| (*l as f64) < freerun as f64 * DEVICE_HOLD_SHARE);
    Ok(DiskRates {
        disk_bps,
        bg_thresh,
        thresh,
        dirtyable,
        fill_level,
        device_hold,
        disks: obs.disks.max(1),
    })
}
