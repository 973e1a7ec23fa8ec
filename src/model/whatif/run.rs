//! The simulated copy: a writer offering the measured intake to the simulated destination in
//! sub-steps, a sample at every interval (the engine's counters, the pool's `txgs`, `dmu_tx`
//! and dirty data, or the page cache and the disk), the engine's events, all fed to a fresh
//! model as a recording is replayed. `--pace auto` takes the model's pace after each sample,
//! as a live copy's engine does.

use std::collections::BTreeMap;

use super::cache::{Cache, CacheParams};
use super::measure::{Dest, DiskRates, Measured, PoolRates, Second, WINDOW_NS};
use super::pool::{Hold, Pool, PoolParams, Tunables};
use super::{Limits, Prediction, Scenario, Settings, WhatifError};
use crate::copy::{EngineEvent, ProgressSnapshot};
use crate::model::Model;
use crate::sample::{
    Cpu, DiskCounters, Environment, PageCache, Sample, ThreadSample, WaitClass, ZfsSample,
};

/// Sub-steps per sample interval.
const SUBSTEPS: u64 = 10;
/// The longest run simulated, seconds (a destination measured at a trickle).
const MAX_SIM_S: f64 = 86_400.0;
/// The name the simulated copy's file has in its engine events.
const FILE: &str = "whatif";

/// The destination being simulated.
enum Sim {
    Pool(Box<Pool>),
    Cache(Cache),
}

impl Sim {
    /// (bytes taken, share of the step held, the class that held the writer).
    fn accept(&mut self, t: f64, want: f64, dt: f64) -> (f64, f64, WaitClass, &'static str) {
        match self {
            Sim::Pool(p) => {
                let a = p.accept(want, dt);
                let held_in = match a.hold {
                    Some(Hold::Delay) => "dmu_tx_delay",
                    Some(Hold::OverMax) => "dmu_tx_wait",
                    Some(Hold::Space) | None => "txg_wait_synced",
                };
                (a.bytes, a.held, WaitClass::ZfsTxg, held_in)
            }
            Sim::Cache(c) => {
                let a = c.accept(t, want, dt);
                (
                    a.bytes,
                    a.held,
                    WaitClass::DirtyThrottle,
                    "balance_dirty_pages",
                )
            }
        }
    }

    fn advance(&mut self, t: f64, dt: f64) {
        match self {
            Sim::Pool(p) => p.advance(t, dt),
            Sim::Cache(c) => c.advance(t, dt),
        }
    }

    fn start_flush(&mut self) {
        match self {
            Sim::Pool(p) => p.start_flush(),
            Sim::Cache(c) => c.start_flush(),
        }
    }

    fn flushed(&self) -> bool {
        match self {
            Sim::Pool(p) => p.flushed(),
            Sim::Cache(c) => c.flushed(),
        }
    }
}

/// The writer's counters.
#[derive(Debug, Default)]
struct Writer {
    copied: f64,
    write_s: f64,
    paced_s: f64,
    run_s: f64,
    runq_s: f64,
    /// The recorded second the writer replays now.
    second: Second,
    /// Error diffusion of the held share, so the instant's class samples the time held.
    held_acc: f64,
    class: Option<(WaitClass, &'static str)>,
}

/// The simulated copy in progress.
struct Copy<'a> {
    m: &'a Measured,
    env: Environment,
    sim: Sim,
    model: Model,
    w: Writer,
    total: u64,
    flush: bool,
    /// The copy's own `--bwlimit`, bytes/s.
    limit: f64,
    paced: bool,
    pace: Option<f64>,
    /// Engine events not yet fed, in time order.
    engine: Vec<(u64, EngineEvent)>,
    last_byte: Option<u64>,
    done: Option<u64>,
}

/// Runs the scenario; see the module comment.
pub(super) fn simulate(m: &Measured, sc: &Scenario) -> Result<Prediction, WhatifError> {
    let env = changed_env(&m.env, &sc.settings);
    let (sim, limits) = destination(m, &env, &sc.settings)?;
    let total = sc.bytes.unwrap_or(m.bytes).max(1);
    let mut c = Copy {
        m,
        model: Model::new(sc.model, env.clone()),
        paced: sc.settings.paced(&m.env),
        env,
        sim,
        w: Writer::default(),
        total,
        flush: sc.flush.unwrap_or(m.flushed),
        limit: match m.env.rate_limit_bps {
            Some(l) if !m.env.rate_limit_is_demo_pace => l as f64,
            _ => f64::INFINITY,
        },
        pace: None,
        engine: vec![
            (
                0,
                EngineEvent::ScanDone {
                    files: 1,
                    bytes: total,
                },
            ),
            (
                0,
                EngineEvent::FileStarted {
                    path: FILE.into(),
                    size: total,
                },
            ),
        ],
        last_byte: None,
        done: None,
    };
    c.model.apply(&sample(0, &c.w, total, &c.sim, &c.env));
    let mut k: u64 = 0;
    while c.done.is_none() {
        k += 1;
        c.interval(k * m.interval_ns);
        if (k * m.interval_ns) as f64 / 1e9 > MAX_SIM_S {
            return Err(WhatifError::Unmeasured(
                "the simulated copy would take more than a day: the measured rates are too low to predict".into(),
            ));
        }
    }
    for (t, ev) in c.engine.drain(..) {
        c.model.engine_events(t, &ev);
    }
    c.model.finish(k * m.interval_ns);
    Ok(Prediction {
        model: c.model,
        env: c.env,
        limits,
    })
}

impl Copy<'_> {
    /// The recorded second the writer replays at `t` seconds (past the recording: the mean).
    fn second_at(&self, t: f64) -> Second {
        let w = (t * 1e9) as u64 / WINDOW_NS;
        let i = usize::try_from(w).unwrap_or(usize::MAX);
        let sec = self.m.intake_profile.get(i).copied().unwrap_or_default();
        Second {
            intake_bps: Some(sec.intake_bps.unwrap_or(self.m.intake_bps).min(self.limit)),
            ..sec
        }
    }

    /// One sample interval ending at `t_end` ns: its sub-steps, then the sample and the
    /// engine events before it into the model (and the pace it gives, when paced).
    fn interval(&mut self, t_end: u64) {
        let step_ns = self.m.interval_ns;
        let dt = step_ns as f64 / 1e9 / SUBSTEPS as f64;
        for i in 0..SUBSTEPS {
            let t = (t_end - step_ns) as f64 / 1e9 + (i + 1) as f64 * dt;
            self.substep(t, dt);
        }
        let s = sample(t_end, &self.w, self.total, &self.sim, &self.env);
        for (t, ev) in self.engine.extract_if(.., |(t, _)| *t < t_end) {
            self.model.engine_events(t, &ev);
        }
        self.model.apply(&s);
        if self.paced {
            self.pace = self.model.pace().bps;
        }
    }

    /// The writer (until its last byte) and the destination over `dt` ending at `t`.
    fn substep(&mut self, t: f64, dt: f64) {
        let t_ns = (t * 1e9).round() as u64;
        if self.last_byte.is_none() {
            self.w.second = self.second_at(t - dt);
            step_writer(
                &mut self.w,
                &mut self.sim,
                t,
                dt,
                self.pace,
                self.total as f64,
            );
            if self.w.copied >= self.total as f64 - 0.5 {
                self.w.copied = self.total as f64;
                self.last_byte = Some(t_ns);
                let (path, bytes) = (FILE.into(), self.total);
                self.engine
                    .push((t_ns, EngineEvent::FileDone { path, bytes }));
                if self.flush {
                    self.engine.push((t_ns, EngineEvent::FlushStarted));
                    self.sim.start_flush();
                }
            }
        }
        self.sim.advance(t, dt);
        if self.done.is_none() && self.last_byte.is_some() && (!self.flush || self.sim.flushed()) {
            self.done = Some(t_ns);
            if self.flush {
                self.engine.push((t_ns, EngineEvent::FlushDone));
            }
        }
    }
}

/// One sub-step of the writer: what it offers (the intake, less what its pace allows), what
/// the destination takes, and where its time went.
fn step_writer(w: &mut Writer, sim: &mut Sim, t: f64, dt: f64, pace: Option<f64>, total: f64) {
    let intake = w.second.intake_bps.unwrap_or(0.0).max(1.0);
    let rate = pace.map_or(intake, |p| p.min(intake));
    let paced = 1.0 - rate / intake;
    let want = (rate * dt).min(total - w.copied);
    let (bytes, held, class, held_in) = sim.accept(t, want, dt);
    w.copied += bytes;
    let busy = 1.0 - paced;
    w.paced_s += paced * dt;
    w.write_s += busy * dt;
    let free = busy * (1.0 - held) * dt;
    w.runq_s += free * w.second.runq_share;
    w.run_s += free * (1.0 - w.second.runq_share);
    w.held_acc += held * busy;
    w.class = if w.held_acc >= 0.5 {
        w.held_acc -= 1.0;
        Some((class, held_in))
    } else {
        None
    };
}

/// The sample a recording would hold at `t_ns`.
fn sample(t_ns: u64, w: &Writer, total: u64, sim: &Sim, env: &Environment) -> Sample {
    let ns = |s: f64| (s * 1e9) as u64;
    let t = t_ns as f64 / 1e9;
    let mut classes = BTreeMap::new();
    let (class, held_in) = match w.class {
        Some((c, f)) => (c, Some(f.to_string())),
        None => (WaitClass::Running, None),
    };
    classes.insert(class, 1);
    let mut s = Sample {
        t_ns,
        engine: ProgressSnapshot {
            bytes_copied: w.copied as u64,
            files_done: u64::from(w.copied as u64 >= total),
            files_failed: 0,
            bytes_total: total,
            files_total: 1,
            scan_done: true,
            read_ns: 0,
            write_ns: ns(w.write_s),
            paced_ns: ns(w.paced_s),
        },
        threads: Some(ThreadSample {
            threads: 1,
            active: 1,
            run_ns: ns(w.run_s),
            runq_wait_ns: ns(w.runq_s),
            classes,
            held_in,
            stacks_readable: true,
        }),
        cpu: w.second.max_core_pct.map(|c| Cpu {
            busy_pct: c,
            max_core_pct: c,
        }),
        ..Sample::default()
    };
    let disks = env.dest_devices.len().max(1) as u32;
    let counters = |written: f64, busy_s: f64| DiskCounters {
        sectors_read: 0,
        sectors_written: (written / 512.0) as u64,
        io_ticks_ms: (busy_s * 1e3 * f64::from(disks)) as u64,
        weighted_ms: (busy_s * 1e3 * f64::from(disks)) as u64,
        disks,
    };
    match sim {
        Sim::Pool(p) => {
            let (written, busy) = p.disks();
            s.dest_disk = Some(counters(written, busy));
            s.zfs = Some(ZfsSample {
                pool: env.zfs_pool.clone().unwrap_or_default(),
                txgs: p.rows(t),
                dmu_tx: p.dmu_tx(),
                arc_anon: Some(p.dirty() as u64),
                birth_offset_ns: 0,
                objset_nwritten: None,
                zil_commits: None,
            });
        }
        Sim::Cache(c) => {
            let (written, busy) = c.disk();
            let (dirty, writeback) = c.levels();
            s.dest_disk = Some(counters(written, busy));
            s.page_cache = Some(PageCache {
                dirty: dirty as u64,
                writeback: writeback as u64,
                bg_thresh: c.limits().0 as u64,
                thresh: c.limits().1 as u64,
                written: written as u64,
            });
        }
    }
    s
}

/// The recorded environment with the changes applied, as the kernel would read them back
/// (`vm.dirty_bytes` and `vm.dirty_ratio` exclude each other).
fn changed_env(env: &Environment, s: &Settings) -> Environment {
    let mut e = env.clone();
    let mut put = |k: &str, v: String| match e.tunables.iter_mut().find(|(n, _)| n == k) {
        Some(t) => t.1 = v,
        None => e.tunables.push((k.to_string(), v)),
    };
    if let Some(b) = s.zfs_dirty_data_max {
        put("zfs_dirty_data_max", b.to_string());
    }
    if let Some(v) = s.zfs_txg_timeout {
        put("zfs_txg_timeout", v.to_string());
    }
    if let Some(v) = s.zfs_dirty_data_sync_percent {
        put("zfs_dirty_data_sync_percent", v.to_string());
    }
    if let Some(v) = s.zfs_delay_min_dirty_percent {
        put("zfs_delay_min_dirty_percent", v.to_string());
    }
    if let Some(v) = s.zfs_delay_scale {
        put("zfs_delay_scale", v.to_string());
    }
    for (bytes, ratio, kb, kr) in [
        (
            s.dirty_bytes,
            s.dirty_ratio,
            "vm.dirty_bytes",
            "vm.dirty_ratio",
        ),
        (
            s.dirty_background_bytes,
            s.dirty_background_ratio,
            "vm.dirty_background_bytes",
            "vm.dirty_background_ratio",
        ),
    ] {
        match (bytes, ratio) {
            (Some(b), _) if b > 0 => {
                put(kb, b.to_string());
                put(kr, "0".into());
            }
            (_, Some(r)) => {
                put(kr, r.to_string());
                put(kb, "0".into());
            }
            _ => {}
        }
    }
    if s.zfs_dirty_data_max.is_some() {
        e.zfs_dirty_data_max = s.zfs_dirty_data_max;
    }
    if s.zfs_dirty_data_sync_percent.is_some() {
        e.zfs_sync_percent = s.zfs_dirty_data_sync_percent;
    }
    if s.zfs_delay_min_dirty_percent.is_some() {
        e.zfs_delay_percent = s.zfs_delay_min_dirty_percent;
    }
    e.pace_auto = s.paced(env);
    e
}

/// A tunable of `env` as a number.
fn number(env: &Environment, key: &str) -> Option<f64> {
    env.tunables
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.trim().parse::<f64>().ok())
}

/// The simulated destination and its effective limits.
fn destination(
    m: &Measured,
    env: &Environment,
    s: &Settings,
) -> Result<(Sim, Limits), WhatifError> {
    match &m.dest {
        Dest::Pool(rates) => {
            let p = pool_params(rates, env)?;
            let limits = Limits::Zfs {
                dirty_max: p.dirty_max as u64,
                sync_bytes: p.sync_bytes as u64,
                delay_min_bytes: p.delay_min as u64,
                txg_timeout_s: p.txg_timeout_s,
            };
            Ok((Sim::Pool(Box::new(Pool::new(p))), limits))
        }
        Dest::Disk(d) => {
            let p = cache_params(d, env, s)?;
            let (_, hold, ..) = p.curve();
            let limits = Limits::PageCache {
                bg_thresh: p.bg_thresh as u64,
                thresh: p.thresh as u64,
                hold: hold as u64,
            };
            Ok((Sim::Cache(Cache::new(p)), limits))
        }
    }
}

fn pool_params(rates: &PoolRates, env: &Environment) -> Result<PoolParams, WhatifError> {
    let dirty_max = env.zfs_dirty_data_max.ok_or_else(|| {
        WhatifError::Unmeasured("the recording does not hold zfs_dirty_data_max".into())
    })? as f64;
    let t = Tunables {
        dirty_max,
        sync_pct: f64::from(env.zfs_sync_percent.unwrap_or(20)),
        delay_pct: f64::from(env.zfs_delay_percent.unwrap_or(60)),
        delay_scale_ns: number(env, "zfs_delay_scale").unwrap_or(500_000.0),
        txg_timeout_s: number(env, "zfs_txg_timeout").unwrap_or(5.0).max(1.0),
    };
    Ok(PoolParams::new(rates, t))
}

/// The page-cache limits after the changes (`domain_dirty_limits`): bytes when set, else
/// the ratio of the dirtyable memory (the recorded threshold over its ratio, or MemTotal
/// when the recording set bytes), else the recorded figure; a background limit not below
/// the limit is half of it.
fn cache_params(
    d: &DiskRates,
    env: &Environment,
    s: &Settings,
) -> Result<CacheParams, WhatifError> {
    let ratio_set = s.dirty_ratio.is_some() || s.dirty_background_ratio.is_some();
    let dirtyable = match d.dirtyable.or(env.mem_total) {
        Some(m) => m as f64,
        None if ratio_set => {
            return Err(WhatifError::Unmeasured(
                "vm.dirty_ratio: the recording set its limits in bytes and holds no MemTotal, so the memory a ratio applies to is unknown: give vm.dirty_bytes and vm.dirty_background_bytes".into(),
            ));
        }
        None => 0.0,
    };
    let limit = |bytes: Option<u64>, ratio: Option<u32>, recorded: u64| match (bytes, ratio) {
        (Some(b), _) if b > 0 => b as f64,
        (_, Some(r)) => dirtyable * f64::from(r) / 100.0,
        _ => recorded as f64,
    };
    let thresh = limit(s.dirty_bytes, s.dirty_ratio, d.thresh);
    let mut bg = limit(
        s.dirty_background_bytes,
        s.dirty_background_ratio,
        d.bg_thresh,
    );
    if bg >= thresh {
        bg = thresh / 2.0;
    }
    Ok(CacheParams {
        bg_thresh: bg,
        thresh,
        disk_bps: d.disk_bps,
        device_hold: d.device_hold.map(|h| h as f64),
    })
}
