//! The model: bounded time series built from [`Sample`]s, drop detection and
//! attribution (docs/attribution.md). Pure: time comes in with each sample, never from a clock.
//!
//! Contract: the main loop owns one [`Model`] and calls `apply(&Sample)` each tick and
//! `engine_event(t_ns, &EngineEvent)` for engine events; it reads `events()` and the
//! series for drawing. Replay feeds a recording through the same calls and must get the
//! same events.

pub mod attrib;
mod backlog;
pub mod budget;
mod describe;
mod detect;
mod eta;
mod exact;
pub mod metrics;
mod net;
pub mod pace;
mod phase;
pub mod pipeline;
pub mod series;
mod tally;
mod timeline;
mod txg;
pub mod verdict;
pub mod whatif;

use crate::present::quote::quote;
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

pub use backlog::{Backlog, BacklogScope};
pub use budget::{Budget, Slice};
pub use eta::{CHECK_AT_FRACTION, Eta, EtaCheck, OnDisk, RealEnd, Said};
pub use net::NetStats;
pub use series::{Point, Series};
pub use verdict::{Limit, Verdict};

use crate::copy::EngineEvent;
use crate::sample::{Environment, PageCache, Sample};
use attrib::{Context, Evidence, ThreadTick, TickInfo, TxgHit, dirty_and_writeback, freerun};
use detect::{DetectConfig, Detector, DropSpan, SpeedTick, Step};
use phase::PhaseTracker;
use tally::{DropTally, EventArms, SpeedRange};
use timeline::Timeline;
use txg::{TxgChange, TxgTracker};

/// Something worth marking on the chart, with the time it happened (ns since start).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub t_ns: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A speed drop. `t_ns` of the event is the drop's start.
    Drop(DropInfo),
    TxgSyncStarted {
        txg: u64,
    },
    TxgCommitted {
        txg: u64,
        ndirty: u64,
        nwritten: u64,
        stime_ns: u64,
    },
    /// Page-cache dirty crossed the background threshold: flusher writeback starts.
    WritebackStarted {
        dirty: u64,
        bg_thresh: u64,
        /// Pages under writeback then (the flusher moves dirty pages there as it starts, so on
        /// a fast disk dirty alone may sit under the threshold); 0 in older recordings.
        #[serde(default, skip_serializing_if = "is_zero")]
        writeback: u64,
    },
    /// Dirty + writeback entered the throttle zone (above freerun).
    DirtyThrottleZone {
        dirty: u64,
        freerun: u64,
    },
    /// ZFS write throttle engaged (dmu_tx_dirty_delay rose).
    ZfsDelay {
        delays: u64,
    },
    /// The copy came down from filling the cache to what the destination sustains (its disks
    /// saturated, or on ZFS the pool syncing back to back): a new phase, not a drop.
    Phase {
        /// Bytes copied when it changed.
        bytes: u64,
        /// The sustained rate, bytes/s.
        rate_bps: f64,
        /// The limit is the ZFS pool (else the destination disks).
        #[serde(default)]
        pool: bool,
        /// The destination slowed to this new level and stayed there: the rate it sustained
        /// before, bytes/s (the phase is that fall, not the page cache filling).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slowed_from_bps: Option<f64>,
    },
    FileError {
        path: String,
        error: String,
    },
    Paused,
    Resumed,
    ScanDone {
        files: u64,
        bytes: u64,
    },
    /// `dirty`: this copy's data still to reach the destination (the system's Dirty +
    /// Writeback when `system`: the destination's counters were unknown).
    FlushStarted {
        dirty: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        system: bool,
    },
    FlushDone {
        secs: f64,
    },
    Note {
        text: String,
    },
}

/// A drop and what explains it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DropInfo {
    pub end_ns: u64,
    /// Reference speed before the drop, bytes/s.
    pub reference_bps: f64,
    /// Lowest smoothed speed during the drop, bytes/s.
    pub min_bps: f64,
    /// Bytes not copied against the reference during the drop.
    pub bytes_lost: f64,
    /// Best cause first; `Unknown` when nothing explains it.
    pub causes: Vec<Cause>,
    /// The time the writer spent held by the first cause, ns, when the kernel trace measured
    /// it exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_exact_ns: Option<u64>,
}

/// Several txgs that synced one after another through a drop, none covering half of it alone
/// (small txgs: a tree of small files, or syncs forced by the copy).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TxgSyncs {
    pub first: u64,
    pub last: u64,
    pub count: u32,
    /// Time within the drop some of them was syncing, ns.
    pub covered_ns: u64,
    /// The drop's length, ns.
    pub drop_ns: u64,
    /// Share of the writer's time in a txg wait, percent, when its stacks were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_pct: Option<f64>,
}

/// A cause with its evidence numbers (a drop lists them best first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum Cause {
    /// The destination's disks slowed: saturated, they wrote at most half the rate they
    /// sustained before the drop, and the writer was held on the write side.
    DiskSlowed {
        /// The destination's disks ("vda", "sdb+sdc").
        device: String,
        /// The rate they sustained before, and their write rate during the drop, bytes/s.
        before_bps: f64,
        during_bps: f64,
        /// How the slow disk held the writer ("dirty throttling"), when the evidence shows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        held: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        held_pct: Option<f64>,
    },
    TxgSync {
        txg: u64,
        ndirty: u64,
        stime_ns: u64,
        dirty_pct_of_max: Option<f64>,
        /// Set when several syncs together held the drop; `txg` is the one that overlapped it
        /// the most.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        syncs: Option<TxgSyncs>,
        /// Share of the drop the writer waited for a whole txg sync its own call asked for
        /// (`linkat` of an `O_TMPFILE`, `syncfs`), percent, when its stacks show it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        own_pct: Option<f64>,
    },
    ZfsThrottle {
        delays: u64,
        over_max: u64,
    },
    DirtyThrottle {
        dirty: u64,
        freerun: u64,
        write_share: f64,
    },
    WritebackBurst {
        writeback: u64,
        device_bps: f64,
    },
    DeviceSaturated {
        util_pct: f64,
        device_bps: f64,
    },
    SourceStall {
        read_share: f64,
    },
    /// `copyscope pipe` writing into a pipe: the process reading it stopped taking data (the
    /// writer sat in `pipe_write`/`pipe_wait_writable`, or, without its wait channel, in its
    /// writes while the output was a pipe).
    PipeReader {
        /// Share of the drop the writer waited for room in the pipe, percent, from its
        /// threads' states.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        held_pct: Option<f64>,
        /// Share of the drop spent in write calls (the engine's count).
        write_share: f64,
    },
    /// `watch --pipeline`: the stage that held the pipeline through the drop, by the rule
    /// that names the run's limiting stage, applied to the drop's ticks.
    PipelineStage {
        /// Its place (1-based) and the pipeline's length.
        stage: usize,
        of: usize,
        /// "'ssh' (pid 4242)".
        name: String,
        /// What held it, and its share of the drop, percent.
        by: crate::sample::pipeline::StageWait,
        held_pct: f64,
    },
    /// Recordings before the copier's threads were sampled: all-core CPU busy. No longer
    /// produced (the all-core average never showed that the writer waited for a CPU).
    CpuSaturated {
        busy_pct: f64,
    },
    /// Synchronous writes: the writer sat in `zil_commit` (or, without kernel stacks, ZIL
    /// commits rose while it was blocked).
    ZilCommit {
        commits: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        held_pct: Option<f64>,
    },
    /// The ext4/jbd2 journal held the writer.
    JournalWait {
        held_pct: f64,
    },
    /// ext4 nearly full: delayed allocation off, the writer waited in `ext4_nonda_switch` for
    /// the filesystem's writeback before each allocation.
    NearlyFull {
        held_pct: f64,
    },
    /// Other processes wrote to the destination's disks while they ran saturated and held
    /// the writer: what the disks wrote beyond what this copy can have given them.
    AnotherWriter {
        /// The destination's disks ("vda", "sdb+sdc").
        device: String,
        /// At least this much per second was not this copy's, bytes/s.
        other_bps: f64,
        /// The disks' write rate during the drop, bytes/s.
        device_bps: f64,
    },
    /// The copy's threads waited on a run queue for a CPU.
    CpuStarved {
        runq_wait_pct: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_core_pct: Option<f64>,
    },
    /// `watch --net`: the interface's receive rate fell with the writes while nothing on the
    /// write side held the writer: the data stopped arriving (sender, link, Wi-Fi).
    NetworkReceive {
        /// Receive rate before the drop and during it, bytes/s.
        before_bps: f64,
        during_bps: f64,
    },
    Unknown,
}

const SEC: u64 = 1_000_000_000;
/// Recent ticks kept for evidence lookback and the kernel panel (6.4 s at 100 ms).
const RECENT_TICKS: usize = 64;
/// Longest writer stall that can be the kernel pacing it at the disk's speed
/// (balance_dirty_pages pauses, a jbd2 commit on a slow disk), not a drop.
const PACED_MAX_NS: u64 = 3 * SEC;
/// Window the kernel panel averages rates over.
const KERNEL_WINDOW_NS: u64 = SEC;
/// Hysteresis of the page-cache threshold events: re-armed below this share of the threshold.
const REARM: f64 = 0.9;
/// ZFS delay events: at most one per this interval.
const DELAY_EVENT_EVERY_NS: u64 = SEC;

/// Thresholds and bounds of the model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelConfig {
    /// A drop starts below this share of the reference speed.
    pub drop_ratio: f64,
    /// A drop ends when the speed is back to this share of the reference.
    pub recover_ratio: f64,
    /// Shortest drop reported.
    pub min_drop_ns: u64,
    /// Chart points kept (the series compacts beyond this).
    pub max_points: usize,
    /// Events kept (drops are evicted last).
    pub max_events: usize,
    /// The reference is the median of non-drop ticks within this window.
    pub reference_window_ns: u64,
    /// No drop is detected before this much non-drop copying exists as reference.
    pub min_reference_ns: u64,
    /// Ticks in the smoothing mean used for decisions.
    pub smooth_ticks: usize,
    /// A drop that keeps moving at a lower level this long becomes the new normal.
    pub rebase_after_ns: u64,
    /// Watch mode: writes that stopped and had not resumed when the watch ended are the
    /// writer being done (a note), not a drop — a copy always ends at its last byte.
    pub stopped_tail_is_end: bool,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            drop_ratio: 0.5,
            recover_ratio: 0.8,
            min_drop_ns: 300_000_000,
            max_points: series::DEFAULT_MAX_POINTS,
            max_events: 2000,
            reference_window_ns: 10 * SEC,
            min_reference_ns: SEC,
            smooth_ticks: 3,
            rebase_after_ns: 30 * SEC,
            stopped_tail_is_end: false,
        }
    }
}

impl ModelConfig {
    fn detect(&self) -> DetectConfig {
        DetectConfig {
            drop_ratio: self.drop_ratio,
            recover_ratio: self.recover_ratio.max(self.drop_ratio),
            min_drop_ns: self.min_drop_ns,
            reference_window_ns: self.reference_window_ns,
            min_reference_ns: self.min_reference_ns,
            smooth_ticks: self.smooth_ticks.max(1),
            rebase_after_ns: self.rebase_after_ns,
        }
    }
}

/// Summary figures (speeds in bytes/s).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub elapsed_ns: u64,
    pub bytes: u64,
    /// Smoothed speed of the last ticks.
    pub now_bps: f64,
    /// Bytes over copying time (pauses excluded; up to the end of the copy phase, i.e. the
    /// speed into the page cache). Every output's "avg" / "to cache" is this number.
    pub avg_bps: f64,
    /// Highest smoothed speed while copying (from the first reference window on, so the
    /// very first burst into RAM is not a "peak"; before that window, the highest so far).
    pub peak_bps: f64,
    /// Lowest smoothed speed while copying *outside drops* (same window as the peak). A
    /// drop's own floor is its [`DropInfo::min_bps`] ("min in drops"). Before the first
    /// reference window, the lowest so far; 0 before any tick.
    pub min_bps: f64,
    /// Drops detected (all of them, also those evicted from the event list).
    pub drops: usize,
    /// Seconds lost against the reference, by the first cause of each drop, largest first.
    pub lost_secs_by_cause: Vec<(&'static str, f64)>,
    /// Seconds the copy spent in drops, by each drop's main cause, largest first: how long a
    /// cause held the writer, whether or not the disks kept writing the backlog meanwhile.
    pub stalled_secs_by_cause: Vec<(&'static str, f64)>,
    /// Bytes over the time until the data was on disk (after the flush; pauses excluded).
    /// Every output's "durable" is this number.
    pub durable_bps: Option<f64>,
    pub flush_secs: Option<f64>,
    /// The copy phase's length (pauses excluded): what `avg_bps` divides by, and every
    /// output's "copy" time.
    pub copy_secs: f64,
    /// Until the data was on disk (pauses excluded): what `durable_bps` divides by.
    pub durable_secs: Option<f64>,
    /// `watch --net`: the interface's receive figures; None when it was not sampled.
    pub net: Option<NetStats>,
}

impl Stats {
    /// Only the engine's two speeds, for a summary printed without a model.
    pub fn of_engine(avg_bps: f64, durable_bps: Option<f64>) -> Stats {
        Stats {
            elapsed_ns: 0,
            bytes: 0,
            now_bps: 0.0,
            avg_bps,
            peak_bps: 0.0,
            min_bps: 0.0,
            drops: 0,
            lost_secs_by_cause: Vec::new(),
            stalled_secs_by_cause: Vec::new(),
            durable_bps,
            flush_secs: None,
            copy_secs: 0.0,
            durable_secs: None,
            net: None,
        }
    }

    /// Seconds lost in all drops: the sum over causes (one definition for every output).
    pub fn lost_total_secs(&self) -> f64 {
        // + 0.0: an empty f64 sum is -0.0, which would print as "-0.0 s lost".
        self.lost_secs_by_cause.iter().map(|(_, s)| s).sum::<f64>() + 0.0
    }

    /// `lost_secs_by_cause` with owned labels, as recordings and exports store it.
    pub fn lost_by_cause_owned(&self) -> Vec<(String, f64)> {
        self.lost_secs_by_cause
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }
}

/// What the kernel panel shows.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelView {
    /// System-wide: every writer's dirty pages.
    pub page_cache: Option<PageCache>,
    /// This copy's data still to reach the destination (see [`Model::flush_backlog`]).
    pub this_copy_backlog: Option<Backlog>,
    /// Destination write rate over the last second.
    pub device_bps: Option<f64>,
    /// Destination busy per disk over the last second, percent.
    pub device_util_pct: Option<f64>,
    /// io pressure "some" over the last second, percent.
    pub psi_some_pct: Option<f64>,
    pub cpu_pct: Option<f64>,
    pub zfs: Option<ZfsView>,
    /// `watch --net`: the interface's receive rate over the last second.
    pub net_bps: Option<f64>,
}

/// ZFS part of the kernel panel.
#[derive(Debug, Clone, PartialEq)]
pub struct ZfsView {
    pub pool: String,
    pub open_txg: Option<u64>,
    pub syncing_txg: Option<u64>,
    /// No kstat gives live dirty data: this is an estimate, see `dirty_source`.
    pub dirty_estimate: Option<u64>,
    /// "arc anon_size" | "written since txg open".
    pub dirty_source: &'static str,
    pub dirty_max: Option<u64>,
    pub sync_pct: Option<u32>,
    pub delay_pct: Option<u32>,
    /// dmu_tx_dirty_delay per second over the last second.
    pub delays_per_s: f64,
    /// Last committed txg: (txg, ndirty, stime ns).
    pub last_sync: Option<(u64, u64, u64)>,
}

/// One input of an interleaved replay.
#[derive(Debug, Clone, Copy)]
pub enum ReplayItem<'a> {
    Sample(&'a Sample),
    Engine { t_ns: u64, event: &'a EngineEvent },
}

/// Causes by their slot in the per-cause totals (see `cause_index`).
pub(crate) const CAUSE_LABELS: [&str; 16] = [
    "disk slowed",
    "nearly full",
    "another writer",
    "txg sync",
    "zfs throttle",
    "sync writes",
    "dirty throttle",
    "writeback",
    "journal",
    "disk busy",
    "source stall",
    "pipe reader",
    "pipeline stage",
    "cpu",
    "network",
    "unknown",
];

/// The same causes' stable machine names (the `cause` tag of the JSON output; the metrics'
/// `cause` label). `cpu_starved` also counts the retired `cpu_saturated`.
pub const CAUSE_NAMES: [&str; CAUSE_LABELS.len()] = [
    "disk_slowed",
    "nearly_full",
    "another_writer",
    "txg_sync",
    "zfs_throttle",
    "zil_commit",
    "dirty_throttle",
    "writeback_burst",
    "journal_wait",
    "device_saturated",
    "source_stall",
    "pipe_reader",
    "pipeline_stage",
    "cpu_starved",
    "network_receive",
    "unknown",
];

/// Per-cause seconds, labelled, without the zeros, largest first.
fn by_cause(secs: [f64; CAUSE_LABELS.len()]) -> Vec<(&'static str, f64)> {
    let mut v: Vec<(&'static str, f64)> = CAUSE_LABELS
        .iter()
        .zip(secs)
        .filter(|(_, s)| *s > 0.0)
        .map(|(l, s)| (*l, s))
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

fn cause_index(c: &Cause) -> usize {
    match c {
        Cause::DiskSlowed { .. } => 0,
        Cause::NearlyFull { .. } => 1,
        Cause::AnotherWriter { .. } => 2,
        Cause::TxgSync { .. } => 3,
        Cause::ZfsThrottle { .. } => 4,
        Cause::ZilCommit { .. } => 5,
        Cause::DirtyThrottle { .. } => 6,
        Cause::WritebackBurst { .. } => 7,
        Cause::JournalWait { .. } => 8,
        Cause::DeviceSaturated { .. } => 9,
        Cause::SourceStall { .. } => 10,
        Cause::PipeReader { .. } => 11,
        Cause::PipelineStage { .. } => 12,
        Cause::CpuSaturated { .. } | Cause::CpuStarved { .. } => 13,
        Cause::NetworkReceive { .. } => 14,
        Cause::Unknown => 15,
    }
}

/// Eviction class: informational markers go first, errors next, drops last.
fn keep_class(k: &EventKind) -> u8 {
    match k {
        EventKind::Drop(_) => 2,
        EventKind::FileError { .. } => 1,
        _ => 0,
    }
}

/// The model of one run: series, events, attribution state. Bounded in memory.
#[derive(Debug, Clone)]
pub struct Model {
    cfg: ModelConfig,
    env: Environment,
    series: Series,
    events: Vec<Event>,
    latest: Option<Sample>,
    recent: VecDeque<TickInfo>,
    now_ring: VecDeque<SpeedTick>,
    /// `watch --net`: the receive figures (the chart's rx line is in `series`).
    net: net::NetTally,
    detector: Detector,
    evidence: Option<Evidence>,
    txgs: TxgTracker,
    /// When the run began, paused, stopped copying, flushed and ended.
    time: Timeline,
    engine_timing: bool,
    /// Which page-cache and ZFS-delay events may be said again.
    arms: EventArms,
    /// The copy's peak and floor speeds.
    range: SpeedRange,
    /// Drops and the time they cost, by cause.
    tally_drops: DropTally,
    /// Txg syncs by pool, for the metrics.
    tally: metrics::Tally,
    budget: Budget,
    /// Time per level of evidence the samples carried.
    levels: exact::EvidenceTally,
    facts: verdict::Facts,
    phase: PhaseTracker,
    /// The destination's disks as the words name them ("vda", "sdb+sdc"), quoted.
    dest_disks: String,
    /// What has reached the destination since the first sample, for this copy's backlog:
    /// its disks' sectors written at the first sample (bytes) …
    dest_written_base: Option<u64>,
    /// … and on ZFS the bytes the txgs committed since then wrote.
    zfs_written: u64,
    /// The finish time's measurements.
    eta: eta::EtaTracker,
    /// `watch --pipeline`: its stages' states and rates.
    pipeline: pipeline::PipelineTracker,
}

impl Model {
    pub fn new(cfg: ModelConfig, env: Environment) -> Self {
        let reads = env.reads_only;
        // Kernel device names ("vda", "nvme0n1") read as they are; anything else is quoted.
        let dest_disks = env
            .dest_disks
            .iter()
            .map(|d| {
                if !d.is_empty()
                    && d.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
                {
                    d.clone()
                } else {
                    quote(d)
                }
            })
            .collect::<Vec<_>>()
            .join("+");
        Model {
            series: Series::new(cfg.max_points),
            detector: Detector::new(cfg.detect()),
            cfg,
            env,
            events: Vec::new(),
            latest: None,
            recent: VecDeque::with_capacity(RECENT_TICKS),
            now_ring: VecDeque::new(),
            net: net::NetTally::default(),
            evidence: None,
            txgs: TxgTracker::default(),
            time: Timeline::default(),
            engine_timing: false,
            arms: EventArms::default(),
            range: SpeedRange::default(),
            tally_drops: DropTally::default(),
            tally: metrics::Tally::default(),
            budget: Budget::for_run(reads),
            levels: exact::EvidenceTally::default(),
            facts: verdict::Facts::default(),
            phase: PhaseTracker::default(),
            dest_disks,
            dest_written_base: None,
            eta: eta::EtaTracker::default(),
            zfs_written: 0,
            pipeline: pipeline::PipelineTracker::default(),
        }
    }

    /// Feeds one sample; returns the events it produced (they are also stored).
    /// A sample not later than the previous one is ignored.
    pub fn apply(&mut self, s: &Sample) -> Vec<Event> {
        let mut out = Vec::new();
        let Some(prev) = self.latest.take() else {
            self.baseline(s);
            self.latest = Some(s.clone());
            return out;
        };
        if s.t_ns <= prev.t_ns {
            self.latest = Some(prev);
            return out;
        }
        let tick = tick_info(&prev, s);
        self.latest = Some(s.clone());
        if let Some(p) = &s.pipeline {
            self.pipeline.observe(prev.t_ns, s.t_ns, p);
        }
        if tick.read_ns > 0 || tick.write_ns > 0 {
            self.engine_timing = true;
        }
        let speed = SpeedTick {
            t0: tick.t0,
            t1: tick.t1,
            bytes: tick.bytes,
        };
        self.series.push(
            Point::tick(tick.t0, tick.dt(), speed.bps(), tick.dev_bps, progress(s))
                .with_net(tick.net_bps),
        );
        if self.recent.len() >= RECENT_TICKS {
            self.recent.pop_front();
        }
        self.recent.push_back(tick);
        if self.now_ring.len() >= self.cfg.smooth_ticks.max(1) {
            self.now_ring.pop_front();
        }
        self.now_ring.push_back(speed);
        if let Some(b) = tick.net_bps {
            self.net.fold(tick.t1, tick.dt(), b, KERNEL_WINDOW_NS);
        }
        self.add_to_budget(&tick);
        self.levels.add(s.evidence, tick.dt());

        if let Some(z) = &s.zfs {
            for ch in self.txgs.update(s.t_ns, z) {
                out.push(match ch {
                    TxgChange::SyncStarted { t, txg } => Event {
                        t_ns: t,
                        kind: EventKind::TxgSyncStarted { txg },
                    },
                    TxgChange::Committed { t, row, own } => {
                        self.zfs_written = self.zfs_written.saturating_add(row.nwritten);
                        self.tally.txg_committed(&z.pool, row.stime, row.nwritten);
                        self.patch_drops(row.txg, row.ndirty, row.stime);
                        if self.time.first_byte_t.is_some() {
                            self.facts.txg_committed(t, &row, own);
                        }
                        Event {
                            t_ns: t,
                            kind: EventKind::TxgCommitted {
                                txg: row.txg,
                                ndirty: row.ndirty,
                                nwritten: row.nwritten,
                                stime_ns: row.stime,
                            },
                        }
                    }
                });
            }
            self.txgs.credit_open(tick.bytes);
        }
        self.page_cache_events(s, &mut out);
        self.delay_events(&tick, &mut out);
        self.detect(&tick, &mut out);
        self.eta_tick(&tick, &out);

        let e = &s.engine;
        if e.scan_done && e.bytes_total > 0 && e.bytes_copied >= e.bytes_total {
            self.end_copy(s.t_ns, &mut out);
        }
        for ev in &out {
            self.store(ev.clone());
        }
        out
    }

    /// Adds the tick to the writer's time budget, in the phase the copy is in at its end;
    /// nothing after the flush or the end of the run.
    fn add_to_budget(&mut self, tick: &TickInfo) {
        // Watch mode: no time of a writer that is gone.
        if self.time.finished_at.is_some()
            || self.time.flush_done.is_some()
            || self.no_writer_alive(tick)
        {
            return;
        }
        let phase = if self.time.paused_since.is_some() {
            budget::Phase::Paused
        } else if self.time.flush_start.is_some() {
            budget::Phase::Flushing
        } else {
            if let (Some(c), None) = (tick.cpu, self.time.copy_end) {
                self.facts.core_load(c.max_core_pct as f64);
            }
            if let Some(u) = tick.dev_util {
                self.facts.disk_busy(u, tick.dt(), tick.dev_bps);
            }
            budget::Phase::Copying
        };
        self.budget
            .add(tick.dt(), phase, tick.threads.as_ref(), tick.paced_ns);
    }

    /// The copy phase is over (last byte written, flush, fatal error, or the run finished).
    pub fn copy_ended(&self) -> bool {
        self.time.copy_end.is_some() || self.time.finished_at.is_some()
    }

    /// Where the writer's time went so far.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The level of the fallback chain (exact → sampled stacks → wchan/stat → counters) the
    /// run's time mostly rests on; `None` for recordings that do not say.
    pub fn evidence(&self) -> Option<crate::sample::EvidenceLevel> {
        self.levels.main()
    }

    /// `watch --pipeline`: its stages over the newest seconds, and which one limits.
    pub fn pipeline(&self) -> Option<pipeline::PipelineView> {
        self.pipeline.window()
    }

    /// `watch --pipeline`: its stages over the whole run.
    pub fn pipeline_run(&self) -> Option<pipeline::PipelineView> {
        self.pipeline.run()
    }

    /// What limits the copy, in one paragraph from the run's figures (a pipeline's: the
    /// stage that limits it).
    pub fn verdict(&self) -> Verdict {
        let stats = self.stats();
        if let Some(p) = self.pipeline.run() {
            return verdict::of_pipeline(&p, &stats);
        }
        verdict::judge(&verdict::Input {
            budget: &self.budget,
            facts: &self.facts,
            stats: &stats,
            env: &self.env,
            span: verdict::Span {
                first_byte: self.time.first_byte_t,
                copy_end: self.time.copy_end.unwrap_or(stats.elapsed_ns),
                on_zfs: self.on_zfs(),
                pool_saturated: self.phase.limit() == Some(phase::Limit::Pool),
            },
        })
    }

    fn baseline(&mut self, s: &Sample) {
        self.dest_written_base = s.dest_disk.map(|d| d.sectors_written.saturating_mul(512));
        if let Some(p) = s.page_cache {
            // Already above at the start: the copy did not cause it, wait for a re-crossing.
            self.arms.wb_armed = p.bg_thresh == 0 || p.dirty <= p.bg_thresh;
            self.arms.zone_armed = freerun(&p) == 0 || dirty_and_writeback(&p) <= freerun(&p);
        }
        if let Some(z) = &s.zfs {
            self.txgs.update(s.t_ns, z);
        }
        if s.engine.bytes_copied > 0 {
            self.time.first_byte_t = Some(s.t_ns);
        }
    }

    fn detect(&mut self, tick: &TickInfo, out: &mut Vec<Event>) {
        if self.time.first_byte_t.is_none() && tick.bytes > 0 {
            self.time.first_byte_t = Some(tick.t0);
        }
        if tick.bytes > 0 {
            self.time.last_byte_t = Some(tick.t1);
        }
        if self.writers_exited(tick, out) {
            return;
        }
        let enabled = self.time.detecting_at(tick.t0);
        if !enabled {
            return;
        }
        self.sustained(tick, out);
        let step = self.detector.step(SpeedTick {
            t0: tick.t0,
            t1: tick.t1,
            bytes: tick.bytes,
        });
        let smoothed = self.detector.smoothed();
        // Before the first reference window the figures are provisional (a copy shorter than
        // it still has a peak and a min, not "peak 0").
        self.range.early(smoothed);
        self.phase.observe(self.fill_tick(tick));
        let in_drop = self.detector.open_reference().is_some();
        if let Some(change) = self.phase.phase_change(tick.t1, smoothed, in_drop) {
            let (t, bytes) = change
                .burst_end
                .unwrap_or((tick.t0, self.bytes_now().saturating_sub(tick.bytes)));
            out.push(phase_event(t, bytes, change.rate, change.limit));
        }
        if self
            .time
            .first_byte_t
            .is_some_and(|f| tick.t1 >= f + self.cfg.min_reference_ns)
        {
            let in_drop = matches!(step, Step::Candidate { .. } | Step::Confirmed { .. })
                || self.evidence.is_some();
            self.range.settled(smoothed, in_drop);
        }
        match step {
            Step::Candidate { start, .. } | Step::Confirmed { start } => {
                if let Some(e) = &mut self.evidence {
                    e.fold(tick);
                } else {
                    let mut e = Evidence::new(start, self.recent.iter().filter(|t| t.t1 <= start));
                    for t in self.recent.iter().filter(|t| t.t0 >= start) {
                        e.fold(t);
                    }
                    self.evidence = Some(e);
                }
            }
            Step::Quiet => {
                if let Some(e) = &mut self.evidence {
                    e.fold(tick);
                }
            }
            Step::Abandoned => self.evidence = None,
            Step::Ended(span) => {
                if let Some(e) = &mut self.evidence {
                    e.fold(tick);
                }
                out.extend(self.close_drop(span, tick.t1));
            }
        }
    }

    /// Measures the sustained rate and caps the reference with it; an open drop that was only
    /// the copy reaching that rate becomes the phase event instead.
    fn sustained(&mut self, tick: &TickInfo, out: &mut Vec<Event>) {
        let on_zfs = self.on_zfs();
        let pool = on_zfs.then(|| {
            let a = tick.t1.saturating_sub(phase::POOL_WINDOW_NS);
            let since = self.time.first_byte_t.unwrap_or(u64::MAX);
            self.txgs.sync_coverage(since, (a, tick.t1), tick.t1)
        });
        let before = self.bytes_now().saturating_sub(tick.bytes);
        let ceiling = self
            .phase
            .measure(&self.recent, on_zfs, pool, self.bytes_now());
        let open_bytes = self.detector.open_bytes().unwrap_or(0);
        // `--pace auto`: running at the pace the copy holds is no drop, whatever it ran at
        // before (the first seconds, or the probe of a pool's rate).
        let pace = self.env.pace_auto.then(|| self.pace().bps).flatten();
        let cap = match (ceiling, pace) {
            (Some(c), Some(p)) => Some(c.min(p)),
            (c, p) => c.or(p),
        };
        let cancelled = self.detector.set_ceiling(cap);
        if cancelled.is_some() {
            self.evidence = None;
        }
        // A fall that lasted is the destination's new level: a phase from where it began (the
        // drop it was is withdrawn), said once the detector holds no drop against the old rate.
        if self.detector.open_drop_start().is_none()
            && let Some(f) = self.phase.take_learned()
        {
            let t = cancelled.map_or(f.since, |s| s.min(f.since));
            let bytes = match cancelled {
                Some(s) if s < f.since => before.saturating_sub(open_bytes),
                _ => f.bytes,
            };
            self.phase.announce();
            out.push(Event {
                t_ns: t,
                kind: EventKind::Phase {
                    bytes,
                    rate_bps: f.to,
                    pool: self.phase.limit() == Some(phase::Limit::Pool),
                    slowed_from_bps: Some(f.from),
                },
            });
            return;
        }
        if let Some(start) = cancelled
            && let Some((rate, limit)) = self.phase.announce()
        {
            out.push(phase_event(
                start,
                before.saturating_sub(open_bytes),
                rate,
                limit,
            ));
        }
    }

    /// The tick as the phase tracker keeps it: when it ended, the bytes copied by then, and
    /// the cache (ZFS's dirty data, else dirty + writeback).
    fn fill_tick(&self, tick: &TickInfo) -> phase::FillTick {
        phase::FillTick {
            t1: tick.t1,
            bytes: self.bytes_now(),
            cached: tick.arc_anon.or_else(|| {
                tick.page
                    .as_ref()
                    .map(|p| p.dirty.saturating_add(p.writeback))
            }),
        }
    }

    /// The destination lives in memory (tmpfs, ramfs): nothing of it is ever written back.
    fn in_memory(&self) -> bool {
        matches!(self.env.fs_type.as_deref(), Some("tmpfs" | "ramfs"))
    }

    fn bytes_now(&self) -> u64 {
        self.latest.as_ref().map_or(0, |s| s.engine.bytes_copied)
    }

    fn on_zfs(&self) -> bool {
        self.env.fs_type.as_deref() == Some("zfs")
            || self.env.zfs_pool.is_some()
            || self.latest.as_ref().is_some_and(|s| s.zfs.is_some())
    }

    /// The txg sync that covered `[start, end]`: one covering at least
    /// [`attrib::TXG_OVERLAP_FRACTION`] of it, else several that together did (the one that
    /// overlapped most, with the run of them).
    fn txg_hit(&self, start: u64, end: u64, now: u64) -> Option<TxgHit> {
        let hit = |k: txg::TxgTrack, syncs| {
            let done = k.row.state == 'C';
            TxgHit {
                txg: k.row.txg,
                ndirty: if done { k.row.ndirty } else { 0 },
                stime_ns: if done { k.row.stime } else { 0 },
                syncs,
            }
        };
        if let Some(k) = self
            .txgs
            .best_overlap(start, end, now, attrib::TXG_OVERLAP_FRACTION)
        {
            return Some(hit(k, None));
        }
        let run = self.txgs.overlapping(start, end, now);
        let len = end.saturating_sub(start).max(1);
        if run.count < 2 || (run.covered as f64) < attrib::TXG_OVERLAP_FRACTION * len as f64 {
            return None;
        }
        let syncs = (run.first, run.last, run.count, run.covered, len);
        Some(hit(run.most, Some(syncs)))
    }

    fn context(&self, start: u64, end: u64, now: u64) -> Context<'_> {
        let on_zfs = self.on_zfs();
        let txg = on_zfs.then(|| self.txg_hit(start, end, now)).flatten();
        Context {
            disks: &self.dest_disks,
            on_zfs,
            has_device: !self.env.dest_devices.is_empty() || !self.env.dest_disks.is_empty(),
            engine_timing: self.engine_timing,
            txg,
            dirty_max: self.env.zfs_dirty_data_max,
            sustained_bps: (self.phase.limit() == Some(phase::Limit::Disk)
                && self.phase.known_at(start))
            .then(|| self.phase.ceiling())
            .flatten(),
            to_pipe: self
                .env
                .pipe
                .as_ref()
                .is_some_and(|p| p.output == crate::copy::pipe::EndKind::Pipe),
        }
    }

    /// Causes and bytes lost of a drop from `start` to `end` against `reference`; `None` when
    /// it was the kernel pacing the writer at the disk's speed, not a drop: on a
    /// destination with its own disks (not ZFS, whose txg stalls are reported with the txg
    /// that held them), the copy already ran at the disks' sustained rate when it began, the
    /// stall was short ([`PACED_MAX_NS`]), the disks stayed saturated through it writing a
    /// backlog that covered all of it (nothing durable was lost), and no other writer took
    /// the disks meanwhile. `lost_without_rate` is the loss when no sustained rate is
    /// known.
    fn judge_drop(
        &self,
        e: &Evidence,
        (start, end, now): (u64, u64, u64),
        reference: f64,
        lost_without_rate: f64,
    ) -> Option<(Vec<Cause>, f64)> {
        let mut causes = attrib::decide(e, &self.context(start, end, now));
        // A pipeline's stages say what held its intake: the rule that names the run's
        // limiting stage, over the drop's ticks.
        if let Some(c) = (self.pipeline.during(start, end)).and_then(|v| v.drop_cause()) {
            causes.retain(|c| !matches!(c, Cause::Unknown));
            causes.insert(0, c);
        }
        let secs = end.saturating_sub(start) as f64 / 1e9;
        // The disks wrote other writers' data meanwhile: only the rest of the backlog can
        // have been this copy's.
        let others = causes
            .iter()
            .any(|c| matches!(c, Cause::AnotherWriter { .. }))
            .then(|| e.others_bytes().unwrap_or(0.0) as u64);
        let backlog = e
            .backlog_at_start()
            .map(|b| b.saturating_sub(others.unwrap_or(0)));
        // A disk that slowed did not write the backlog at its sustained rate: lost is the time
        // it fell short of that rate.
        let lost = match causes.first() {
            Some(Cause::DiskSlowed {
                before_bps,
                during_bps,
                ..
            }) if *before_bps > 0.0 => Some(secs * (1.0 - during_bps / before_bps).max(0.0)),
            _ => self.phase.lost_secs(secs, backlog),
        };
        let paced = !self.on_zfs()
            && self.phase.limit() == Some(phase::Limit::Disk)
            && self.phase.known_at(start)
            && end.saturating_sub(start) <= PACED_MAX_NS
            && others.is_none()
            && lost == Some(0.0)
            && e.util_mean()
                .is_some_and(|u| u >= attrib::DEVICE_SATURATED_PCT);
        if paced {
            return None;
        }
        // Against the sustained rate: while the disks still write the backlog at full
        // speed, a stopped writer loses nothing durable.
        let bytes_lost = lost.map_or(lost_without_rate, |l| l * reference);
        Some((causes, bytes_lost))
    }

    fn close_drop(&mut self, span: DropSpan, now: u64) -> Option<Event> {
        let mut e = self
            .evidence
            .take()
            .unwrap_or_else(|| Evidence::new(span.start, std::iter::empty()));
        e.set_end(span.end);
        let (causes, bytes_lost) = self.judge_drop(
            &e,
            (span.start, span.end, now),
            span.reference,
            span.bytes_lost,
        )?;
        let secs = span.end.saturating_sub(span.start) as f64 / 1e9;
        let lost_secs = (span.reference > 0.0).then(|| bytes_lost / span.reference);
        self.tally_drops
            .record(cause_index(&causes[0]), secs, lost_secs);
        let held_exact_ns = e.held_exact_ns(&causes[0]);
        Some(Event {
            t_ns: span.start,
            kind: EventKind::Drop(DropInfo {
                end_ns: span.end,
                reference_bps: span.reference,
                min_bps: span.min_bps,
                bytes_lost,
                causes,
                held_exact_ns,
            }),
        })
    }

    /// A drop closed before its txg committed learns the txg's size and duration later.
    fn patch_drops(&mut self, txg: u64, ndirty: u64, stime: u64) {
        let max = self.env.zfs_dirty_data_max;
        for ev in self.events.iter_mut().rev().take(64) {
            if let EventKind::Drop(d) = &mut ev.kind {
                fill_txg_cause(d, txg, ndirty, stime, max);
            }
        }
    }

    fn page_cache_events(&mut self, s: &Sample, out: &mut Vec<Event>) {
        let Some(p) = s.page_cache else {
            return;
        };
        // Only where this copy's writes pass through the dirty page cache: on tmpfs (no
        // device, never written back) and on ZFS (its own dirty data) the figures are other
        // writers', and "the kernel is pacing writes" would not be this copy's.
        if self.on_zfs() || self.in_memory() {
            return;
        }
        if p.bg_thresh > 0 {
            // The flusher starts when Dirty passes the background threshold. On a disk as fast as
            // the writer, Dirty only pokes above it between two samples and the flusher moves it
            // straight to Writeback, so a Writeback surge with dirty + writeback above the
            // threshold counts as the same moment.
            let surged =
                p.writeback >= p.bg_thresh / 8 && p.dirty.saturating_add(p.writeback) > p.bg_thresh;
            if self.arms.wb_armed && (p.dirty > p.bg_thresh || surged) {
                self.arms.wb_armed = false;
                out.push(Event {
                    t_ns: s.t_ns,
                    kind: EventKind::WritebackStarted {
                        dirty: p.dirty,
                        bg_thresh: p.bg_thresh,
                        writeback: p.writeback,
                    },
                });
            } else if !self.arms.wb_armed
                && (p.dirty.saturating_add(p.writeback) as f64) < REARM * p.bg_thresh as f64
            {
                self.arms.wb_armed = true;
            }
        }
        let freerun = freerun(&p);
        let dw = dirty_and_writeback(&p);
        if freerun > 0 {
            if self.arms.zone_armed && dw > freerun {
                self.arms.zone_armed = false;
                if self.time.first_byte_t.is_some() && self.time.copy_end.is_none() {
                    self.facts.throttle_zone(s.t_ns, s.engine.bytes_copied, dw);
                }
                out.push(Event {
                    t_ns: s.t_ns,
                    kind: EventKind::DirtyThrottleZone { dirty: dw, freerun },
                });
            } else if !self.arms.zone_armed && (dw as f64) < REARM * freerun as f64 {
                self.arms.zone_armed = true;
            }
        }
    }

    fn delay_events(&mut self, tick: &TickInfo, out: &mut Vec<Event>) {
        let due = |last: Option<u64>, t: u64| last.is_none_or(|l| t >= l + DELAY_EVENT_EVERY_NS);
        if tick.zfs_delays > 0 {
            self.arms.delay_pending = self.arms.delay_pending.saturating_add(tick.zfs_delays);
            self.arms.delay_last_rise = tick.t1;
            if due(self.arms.delay_last_emit, tick.t1) {
                out.push(self.take_delays(tick.t1));
            }
        } else if self.arms.delay_pending > 0 && due(self.arms.delay_last_emit, tick.t1) {
            out.push(self.take_delays(self.arms.delay_last_rise));
        }
    }

    fn take_delays(&mut self, t: u64) -> Event {
        let delays = std::mem::take(&mut self.arms.delay_pending);
        self.arms.delay_last_emit = Some(t);
        Event {
            t_ns: t,
            kind: EventKind::ZfsDelay { delays },
        }
    }

    /// Ends detection for good: the copy phase is over (flush, verify, fatal, all bytes written).
    /// The earliest evidence wins: a sample sees the last byte at its tick, the engine's flush
    /// event says when the last write returned.
    fn end_copy(&mut self, t: u64, out: &mut Vec<Event>) {
        if let Some(end) = self.time.copy_end.as_mut() {
            *end = (*end).min(t);
            return;
        }
        self.time.copy_end = Some(t);
        self.interrupt(t, out);
    }

    /// Watch mode: with writers followed and none of them alive any more, writes stopped
    /// because the writer is gone, not because anything held it: no drop (an open one ends
    /// where the last writer exited), said once, until a followed writer runs again.
    fn no_writer_alive(&self, tick: &TickInfo) -> bool {
        self.cfg.stopped_tail_is_end
            && tick
                .threads
                .is_some_and(|t| t.classes.iter().all(|n| *n == 0))
    }

    fn writers_exited(&mut self, tick: &TickInfo, out: &mut Vec<Event>) -> bool {
        let gone = self.no_writer_alive(tick);
        if gone && !self.time.writers_gone {
            self.interrupt(tick.t0, out);
            if !self.time.writers_gone_said {
                self.time.writers_gone_said = true;
                out.push(Event {
                    t_ns: tick.t0,
                    kind: EventKind::Note {
                        text: "the followed writers exited: no drops until one writes again"
                            .to_string(),
                    },
                });
            }
        }
        self.time.writers_gone = gone;
        gone
    }

    fn interrupt(&mut self, t: u64, out: &mut Vec<Event>) {
        match self.detector.interrupt(t) {
            Some(span) => out.extend(self.close_drop(span, t)),
            None => self.evidence = None,
        }
    }

    /// Keeps events ordered by time (drops are emitted at their end with their start time)
    /// and within `max_events`, evicting markers first, then errors, then drops.
    fn store(&mut self, ev: Event) {
        let pos = self.events.partition_point(|e| e.t_ns <= ev.t_ns);
        self.events.insert(pos, ev);
        let cap = self.cfg.max_events.max(1);
        while self.events.len() > cap {
            let victim = (0..=2u8)
                .find_map(|class| {
                    self.events
                        .iter()
                        .position(|e| keep_class(&e.kind) == class)
                })
                .unwrap_or(0);
            self.events.remove(victim);
        }
    }

    /// Maps an engine event to a model event (stored too). A pause or the end of the copy
    /// phase may also close an open drop: that drop is stored as well, and
    /// [`Model::engine_events`] returns it along with the mapped event.
    pub fn engine_event(&mut self, t_ns: u64, ev: &EngineEvent) -> Option<Event> {
        let all = self.engine_events(t_ns, ev);
        all.into_iter()
            .rfind(|e| !matches!(e.kind, EventKind::Drop(_)))
    }

    /// Like [`Model::engine_event`], returning every event it produced.
    #[expect(clippy::too_many_lines, reason = "one arm per engine event")]
    pub fn engine_events(&mut self, t_ns: u64, ev: &EngineEvent) -> Vec<Event> {
        let mut out = Vec::new();
        let kind = match ev {
            EngineEvent::FileFailed { path, error } => Some(EventKind::FileError {
                path: path.display().to_string(),
                error: error.clone(),
            }),
            EngineEvent::FileSkipped { path, reason } => Some(EventKind::Note {
                text: format!("skipped {}: {reason}", quote(path)),
            }),
            EngineEvent::FileNote { path, note } => Some(EventKind::Note {
                text: format!("{}: {note}", quote(path)),
            }),
            EngineEvent::FileChanged { path, detail } => Some(EventKind::Note {
                text: format!("{} changed while copied: {detail}", quote(path)),
            }),
            EngineEvent::ScanDone { files, bytes } => Some(EventKind::ScanDone {
                files: *files,
                bytes: *bytes,
            }),
            EngineEvent::LowSpace(low) => Some(EventKind::Note {
                text: low.describe(),
            }),
            EngineEvent::FlushStarted => {
                self.end_copy(t_ns, &mut out);
                self.time.flush_start.get_or_insert(t_ns);
                let b = self.flush_backlog();
                if let Some(b) = b {
                    self.facts
                        .flush_started(b.bytes, b.scope == BacklogScope::System);
                }
                Some(EventKind::FlushStarted {
                    dirty: b.map_or(0, |b| b.bytes),
                    system: b.is_some_and(|b| b.scope == BacklogScope::System),
                })
            }
            EngineEvent::FlushDone => {
                let start = self.time.flush_start.or(self.time.copy_end).unwrap_or(t_ns);
                let secs = t_ns.saturating_sub(start) as f64 / 1e9;
                self.time.flush_done = Some((t_ns, secs));
                Some(EventKind::FlushDone { secs })
            }
            // Announced at the start: each file is read back right after it is written, so the
            // copy phase (its speed, its ETA) goes on until the flush.
            EngineEvent::VerifyStarted => Some(EventKind::Note {
                text: "--verify: each file is read back from the device after it is written"
                    .to_string(),
            }),
            EngineEvent::VerifyDone { files, mismatches } => Some(EventKind::Note {
                text: if *mismatches == 0 {
                    format!(
                        "verified {}: all match",
                        crate::present::format::fmt_files(*files)
                    )
                } else {
                    format!(
                        "verified {}: {} differ",
                        crate::present::format::fmt_files(*files),
                        crate::present::format::fmt_count(*mismatches)
                    )
                },
            }),
            EngineEvent::Paused => {
                if self.time.paused_since.is_none() {
                    self.time.paused_since = Some(t_ns);
                    self.interrupt(t_ns, &mut out);
                }
                Some(EventKind::Paused)
            }
            EngineEvent::Resumed => {
                if let Some(since) = self.time.paused_since.take() {
                    self.time.paused_ns += t_ns.saturating_sub(since);
                }
                // The tick that spans the resume is partly paused: detection restarts after it.
                self.time.resume_at = Some(t_ns);
                Some(EventKind::Resumed)
            }
            EngineEvent::Fatal { error } => {
                self.end_copy(t_ns, &mut out);
                Some(EventKind::FileError {
                    path: String::new(),
                    error: error.clone(),
                })
            }
            EngineEvent::FileStarted { .. }
            | EngineEvent::FileDone { .. }
            | EngineEvent::DirCreated { .. } => None,
        };
        if let Some(kind) = kind {
            out.push(Event { t_ns, kind });
        }
        for e in &out {
            self.store(e.clone());
        }
        out
    }

    /// Seconds until done: with `include_flush`, until the data is on disk when
    /// the drain rate is measured (else until the last byte is in the cache, the least it
    /// takes); without, until the last byte is in the cache. None while the total is unknown
    /// (scanning). [`Model::eta`] has both times and their bands.
    pub fn eta_secs(&self, include_flush: bool) -> Option<f64> {
        let e = self.eta()?;
        Some(
            include_flush
                .then(|| e.secs(true))
                .flatten()
                .unwrap_or(e.to_cache_secs),
        )
    }

    /// This copy's data still to reach the destination: what it handed to
    /// the kernel less what its disks (on ZFS the committed txgs) wrote since it started,
    /// bounded by [`Model::backlog`]; that system figure, labelled so, when the destination's
    /// counters are unknown. The flush gauge, the flush event and the ETA use it.
    pub fn flush_backlog(&self) -> Option<Backlog> {
        let s = self.latest.as_ref()?;
        let reached = if self.on_zfs() {
            s.zfs.as_ref().map(|_| self.zfs_written)
        } else {
            match (s.dest_disk, self.dest_written_base) {
                (Some(d), Some(base)) => {
                    Some(d.sectors_written.saturating_mul(512).saturating_sub(base))
                }
                _ => None,
            }
        };
        backlog::this_copy(
            s.engine.bytes_copied,
            reached,
            self.backlog(),
            self.memory_fs(),
        )
    }

    fn memory_fs(&self) -> bool {
        matches!(self.env.fs_type.as_deref(), Some("tmpfs" | "ramfs"))
    }

    /// The system's data still to reach the disk: page-cache Dirty + Writeback, or on ZFS arc
    /// anon_size (every writer's). Nothing for a memory filesystem: the system's dirty pages
    /// belong to other writers.
    pub fn backlog(&self) -> Option<u64> {
        let s = self.latest.as_ref()?;
        if self.memory_fs() {
            return Some(0);
        }
        if self.on_zfs() {
            s.zfs.as_ref().and_then(|z| z.arc_anon)
        } else {
            s.page_cache.map(|p| dirty_and_writeback(&p))
        }
    }

    /// Ends the run at `t_ns`: closes an open drop and reports pending ZFS delays.
    pub fn finish(&mut self, t_ns: u64) -> Vec<Event> {
        let mut out = Vec::new();
        if self.time.finished_at.is_some() {
            return out;
        }
        match self.stopped_tail() {
            Some(start) => {
                // What held the writer so far, when the evidence names something.
                let held = self.open_drop().and_then(|e| match e.kind {
                    EventKind::Drop(d) => d
                        .causes
                        .first()
                        .filter(|c| !matches!(c, Cause::Unknown))
                        .map(Cause::describe),
                    _ => None,
                });
                self.detector.interrupt(t_ns);
                self.evidence = None;
                let mut text =
                    "writes stopped here and had not resumed when the watch ended".to_string();
                if let Some(h) = held {
                    text.push_str(&format!(" (so far: {h})"));
                }
                out.push(Event {
                    t_ns: start,
                    kind: EventKind::Note { text },
                });
            }
            None => self.interrupt(t_ns, &mut out),
        }
        if self.arms.delay_pending > 0 {
            out.push(self.take_delays(self.arms.delay_last_rise));
        }
        if let Some(since) = self.time.paused_since.take() {
            self.time.paused_ns += t_ns.saturating_sub(since);
        }
        self.time.finished_at = Some(t_ns);
        for e in &out {
            self.store(e.clone());
        }
        out
    }

    /// Watch mode: the start of an open drop in which nothing is being written any more.
    fn stopped_tail(&self) -> Option<u64> {
        let start = self.detector.open_drop_start()?;
        (self.cfg.stopped_tail_is_end
            && self.detector.smoothed() == 0.0
            && self.detector.open_min() == Some(0.0))
        .then_some(start)
    }

    pub fn series(&self) -> &Series {
        &self.series
    }

    /// Stored events, oldest first, at most `max_events`.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Spans `(start, end)` of the stored drops, oldest first, for highlighting (the one
    /// in progress is [`Model::open_drop_start`] → now).
    pub fn drop_spans(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.events.iter().filter_map(|e| match &e.kind {
            EventKind::Drop(d) => Some((e.t_ns, d.end_ns)),
            _ => None,
        })
    }

    /// Start of a drop in progress (confirmed, not yet recovered).
    /// Not while it is only the kernel pacing the writer at the disk's speed (see
    /// [`Model::open_drop`]).
    pub fn open_drop_start(&self) -> Option<u64> {
        self.open_drop().map(|e| e.t_ns)
    }

    /// The drop in progress as it would be reported if it ended now (for live display).
    pub fn open_drop(&self) -> Option<Event> {
        let start = self.detector.open_drop_start()?;
        let now = self.latest.as_ref()?.t_ns;
        let e = self.evidence.as_ref()?;
        let reference = self.detector.open_reference().unwrap_or(0.0);
        let secs = now.saturating_sub(start) as f64 / 1e9;
        let copied = self.detector.open_bytes().unwrap_or(0);
        let (causes, bytes_lost) = self.judge_drop(
            e,
            (start, now, now),
            reference,
            (reference * secs - copied as f64).max(0.0),
        )?;
        let held_exact_ns = e.held_exact_ns(&causes[0]);
        Some(Event {
            t_ns: start,
            kind: EventKind::Drop(DropInfo {
                end_ns: now,
                reference_bps: reference,
                min_bps: self.detector.open_min().unwrap_or(0.0),
                bytes_lost,
                causes,
                held_exact_ns,
            }),
        })
    }

    pub fn latest(&self) -> Option<&Sample> {
        self.latest.as_ref()
    }

    pub fn env(&self) -> &Environment {
        &self.env
    }

    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// The time the average divides by. A copy: from its start to the end of its copy phase.
    /// A watch: the time the writer was active, from its first byte to its last (the wait
    /// before the first write and the idle tail after the last are not the writer's; a stall
    /// between two writes is, and is shown as a drop; a pipeline's is active while a stage
    /// still works on what it was handed). A function of the samples alone, so
    /// every output says the same average at every instant, live or replayed.
    fn active_span(&self, elapsed_ns: u64) -> u64 {
        if !self.cfg.stopped_tail_is_end {
            return self.time.copy_end.unwrap_or(elapsed_ns);
        }
        // A pipeline's bytes are through it only when its last working stage is done with
        // them: `zfs recv` still writing what `zfs send` handed on long ago.
        let last = self.time.last_byte_t.max(self.pipeline.working_until());
        match (self.time.first_byte_t, last) {
            (Some(first), Some(last)) => last.saturating_sub(first),
            _ => 0,
        }
    }

    pub fn stats(&self) -> Stats {
        let last_t = self.latest.as_ref().map_or(0, |s| s.t_ns);
        let elapsed_ns = last_t.max(self.time.finished_at.unwrap_or(0));
        let bytes = self.latest.as_ref().map_or(0, |s| s.engine.bytes_copied);
        let paused_now = self
            .time
            .paused_since
            .map_or(0, |p| elapsed_ns.saturating_sub(p));
        let copy_ns = self
            .active_span(elapsed_ns)
            .saturating_sub(self.time.paused_ns + paused_now);
        let rate = |ns: u64| {
            if ns > 0 {
                bytes as f64 * 1e9 / ns as f64
            } else {
                0.0
            }
        };
        let (b, d) = self.now_ring.iter().fold((0u64, 0u64), |(b, d), t| {
            (b.saturating_add(t.bytes), d + t.dt())
        });
        let lost = by_cause(self.tally_drops.lost_by_cause);
        let stalled = by_cause(self.tally_drops.stalled_by_cause);
        let avg_bps = rate(copy_ns);
        let peak_bps = self.range.peak();
        // With no second of its own to measure (a copy shorter than a tick), the run's one
        // rate is its average: min = average = peak, not "min 0 MB/s".
        let min_bps = self.range.floor().unwrap_or(avg_bps);
        // min ≤ average ≤ peak, always: min is the floor outside drops and peak a smoothed
        // second, while the average also counts what is neither (the seconds before a watched
        // writer starts, a stop too short to be a drop, a burst before the first reference
        // window). "min 439 MB/s, peak 439 MB/s" beside "average 67.5 MB/s" read as a bug.
        let (min_bps, peak_bps) = if bytes > 0 {
            (min_bps.min(avg_bps), peak_bps.max(avg_bps))
        } else {
            (min_bps, peak_bps)
        };
        Stats {
            elapsed_ns,
            bytes,
            now_bps: if d > 0 && self.time.paused_since.is_none() {
                b as f64 * 1e9 / d as f64
            } else {
                0.0
            },
            avg_bps,
            peak_bps,
            min_bps,
            drops: self.tally_drops.drops,
            lost_secs_by_cause: lost,
            stalled_secs_by_cause: stalled,
            durable_bps: self
                .time
                .flush_done
                .map(|(t, _)| rate(t.saturating_sub(self.time.paused_ns))),
            flush_secs: self.time.flush_done.map(|(_, s)| s),
            copy_secs: copy_ns as f64 / 1e9,
            durable_secs: self
                .time
                .flush_done
                .map(|(t, _)| t.saturating_sub(self.time.paused_ns) as f64 / 1e9),
            net: self
                .net
                .stats(self.cfg.stopped_tail_is_end.then_some(copy_ns)),
        }
    }

    /// Every figure `--metrics` exports, as the model holds it now (`mode`: "copy" or
    /// "watch"; a copy also gets its progress).
    pub fn metrics(&self, mode: &'static str) -> metrics::Snapshot {
        let st = self.stats();
        let k = self.kernel();
        let latest = self.latest.as_ref();
        let env = &self.env;
        let text = |o: &Option<String>| o.clone().unwrap_or_default();
        let device = match (latest.and_then(|s| s.dest_disk), &self.dest_written_base) {
            (Some(d), Some(base)) if !self.dest_disks.is_empty() => Some(metrics::DeviceFigures {
                device: self.dest_disks.clone(),
                written: d.sectors_written.saturating_mul(512).saturating_sub(*base),
                write_bps: k.device_bps,
                busy_ratio: k.device_util_pct.map(|u| u / 100.0),
            }),
            _ => None,
        };
        // The same per-cause totals `Stats` sums (lost_secs_by_cause, stalled_secs_by_cause).
        let causes = (0..CAUSE_LABELS.len())
            .map(|i| metrics::CauseFigures {
                cause: CAUSE_NAMES[i],
                drops: self.tally_drops.drops_by_cause[i],
                lost_secs: self.tally_drops.lost_by_cause[i],
                stalled_secs: self.tally_drops.stalled_by_cause[i],
            })
            .collect();
        metrics::Snapshot {
            info: metrics::RunInfo {
                mode,
                fs_type: text(&env.fs_type),
                mount_point: text(&env.mount_point),
                dataset: text(&env.zfs_dataset),
                pool: text(&env.zfs_pool),
            },
            elapsed_secs: st.elapsed_ns as f64 / 1e9,
            intake_bytes: st.bytes,
            intake_bps: st.now_bps,
            device,
            dirty: k.page_cache.map(|p| p.dirty),
            writeback: k.page_cache.map(|p| p.writeback),
            // Only the kstat's figure: "written since txg open" is the panel's guess.
            zfs_dirty: k
                .zfs
                .as_ref()
                .filter(|z| z.dirty_source == "arc anon_size")
                .and_then(|z| Some((z.pool.clone(), z.dirty_estimate?))),
            pools: self.tally.pools.clone(),
            causes,
            net_rx_bps: k.net_bps,
            progress: (mode == "copy").then(|| latest.map(|s| s.engine).unwrap_or_default()),
        }
    }

    pub fn kernel(&self) -> KernelView {
        let latest = self.latest.as_ref();
        let now = latest.map_or(0, |s| s.t_ns);
        let window: Vec<&TickInfo> = self
            .recent
            .iter()
            .filter(|t| t.t1 + KERNEL_WINDOW_NS > now)
            .collect();
        let mean = |f: &dyn Fn(&TickInfo) -> Option<f64>| {
            let (mut sum, mut ns) = (0.0, 0u64);
            for t in &window {
                if let Some(v) = f(t) {
                    sum += v * t.dt() as f64;
                    ns += t.dt();
                }
            }
            (ns > 0).then(|| sum / ns as f64)
        };
        let window_ns: u64 = window.iter().map(|t| t.dt()).sum();
        let zfs = latest.and_then(|s| s.zfs.as_ref()).map(|z| {
            let find = |st: char| z.txgs.iter().rev().find(|r| r.state == st);
            let open = find('O');
            let (dirty_estimate, dirty_source) = match (z.arc_anon, open) {
                (Some(a), _) => (Some(a), "arc anon_size"),
                (None, Some(r)) => {
                    let born = r.birth as i128 + z.birth_offset_ns as i128;
                    let since: u64 = self
                        .recent
                        .iter()
                        .filter(|t| t.t1 as i128 > born)
                        .map(|t| t.bytes)
                        .fold(0, u64::saturating_add);
                    (Some(since), "written since txg open")
                }
                (None, None) => (None, "written since txg open"),
            };
            let delays = window
                .iter()
                .map(|t| t.zfs_delays)
                .fold(0, u64::saturating_add);
            ZfsView {
                pool: z.pool.clone(),
                open_txg: open.map(|r| r.txg),
                syncing_txg: find('S').map(|r| r.txg),
                dirty_estimate,
                dirty_source,
                dirty_max: self.env.zfs_dirty_data_max,
                sync_pct: self.env.zfs_sync_percent,
                delay_pct: self.env.zfs_delay_percent,
                delays_per_s: if window_ns > 0 {
                    delays as f64 * 1e9 / window_ns as f64
                } else {
                    0.0
                },
                last_sync: find('C').map(|r| (r.txg, r.ndirty, r.stime)),
            }
        });
        KernelView {
            page_cache: latest.and_then(|s| s.page_cache),
            this_copy_backlog: self.flush_backlog(),
            device_bps: mean(&|t| t.dev_bps),
            device_util_pct: mean(&|t| t.dev_util),
            psi_some_pct: mean(&|t| t.psi_some_pct),
            cpu_pct: latest.and_then(|s| s.cpu).map(|c| c.busy_pct as f64),
            zfs,
            net_bps: mean(&|t| t.net_bps),
        }
    }

    /// Runs samples through a new model and finishes it at the last sample.
    /// Engine events are not in samples: use [`Model::replay_stream`] for a recording.
    pub fn replay<'a>(
        cfg: ModelConfig,
        env: Environment,
        samples: impl IntoIterator<Item = &'a Sample>,
    ) -> Model {
        Model::replay_stream(cfg, env, samples.into_iter().map(ReplayItem::Sample))
    }

    /// Runs samples and engine events, in recorded order, through a new model and
    /// finishes it at the last time seen.
    pub fn replay_stream<'a>(
        cfg: ModelConfig,
        env: Environment,
        items: impl IntoIterator<Item = ReplayItem<'a>>,
    ) -> Model {
        let mut m = Model::new(cfg, env);
        let mut last = 0;
        for item in items {
            match item {
                ReplayItem::Sample(s) => {
                    last = last.max(s.t_ns);
                    m.apply(s);
                }
                ReplayItem::Engine { t_ns, event } => {
                    last = last.max(t_ns);
                    m.engine_events(t_ns, event);
                }
            }
        }
        m.finish(last);
        m
    }
}

fn phase_event(t_ns: u64, bytes: u64, rate_bps: f64, limit: phase::Limit) -> Event {
    Event {
        t_ns,
        kind: EventKind::Phase {
            bytes,
            rate_bps,
            pool: limit == phase::Limit::Pool,
            slowed_from_bps: None,
        },
    }
}

/// Gives a drop's cause "txg `txg` was syncing" the size and duration it committed with.
fn fill_txg_cause(d: &mut DropInfo, txg: u64, ndirty: u64, stime: u64, max: Option<u64>) {
    for c in &mut d.causes {
        if let Cause::TxgSync {
            txg: t,
            ndirty: n,
            stime_ns,
            dirty_pct_of_max,
            ..
        } = c
            && *t == txg
            && *stime_ns == 0
        {
            *n = ndirty;
            *stime_ns = stime;
            if dirty_pct_of_max.is_none() {
                *dirty_pct_of_max = max
                    .filter(|m| *m > 0)
                    .map(|m| ndirty as f64 * 100.0 / m as f64);
            }
        }
    }
}

/// A drop that closes while its txg still syncs is emitted (printed, recorded) as "txg N was
/// syncing"; the model completes its stored copy when txg N commits. This applies the same
/// completion to events in the order they were emitted (a recording's event lines), so
/// exports of a recording say what the model said at the end: every commit fills the drops
/// before it.
pub fn complete_txg_causes(events: &mut [Event], zfs_dirty_data_max: Option<u64>) {
    for i in 0..events.len() {
        let EventKind::TxgCommitted {
            txg,
            ndirty,
            stime_ns,
            ..
        } = events[i].kind
        else {
            continue;
        };
        for ev in &mut events[..i] {
            if let EventKind::Drop(d) = &mut ev.kind {
                fill_txg_cause(d, txg, ndirty, stime_ns, zfs_dirty_data_max);
            }
        }
    }
}

fn progress(s: &Sample) -> Option<f64> {
    let e = &s.engine;
    (e.scan_done && e.bytes_total > 0)
        .then(|| (e.bytes_copied as f64 / e.bytes_total as f64).min(1.0))
}

/// Deltas between two samples (counters that went backwards give nothing).
fn tick_info(prev: &Sample, s: &Sample) -> TickInfo {
    let dt = s.t_ns - prev.t_ns;
    let per_s = |x: f64| x * 1e9 / dt as f64;
    let (dev_bps, dev_util) = match (prev.dest_disk, s.dest_disk) {
        (Some(a), Some(b))
            if b.sectors_written >= a.sectors_written && b.io_ticks_ms >= a.io_ticks_ms =>
        {
            let bps = per_s((b.sectors_written - a.sectors_written) as f64 * 512.0);
            let busy_ns = (b.io_ticks_ms - a.io_ticks_ms) as f64 * 1e6;
            let util = busy_ns * 100.0 / (dt as f64 * b.disks.max(1) as f64);
            (Some(bps), Some(util.clamp(0.0, 100.0)))
        }
        _ => (None, None),
    };
    let psi_some_pct = match (prev.psi_io, s.psi_io) {
        (Some(a), Some(b)) if b.some_us >= a.some_us => {
            Some(((b.some_us - a.some_us) as f64 * 1e3 * 100.0 / dt as f64).min(100.0))
        }
        _ => None,
    };
    let (zfs_delays, zfs_over_max) = match (&prev.zfs, &s.zfs) {
        (Some(a), Some(b)) if a.pool == b.pool => (
            b.dmu_tx.dirty_delay.saturating_sub(a.dmu_tx.dirty_delay),
            b.dmu_tx
                .dirty_over_max
                .saturating_sub(a.dmu_tx.dirty_over_max),
        ),
        _ => (0, 0),
    };
    let net_bps = match (prev.net_rx, s.net_rx) {
        (Some(a), Some(b)) if b >= a => Some(per_s((b - a) as f64)),
        _ => None,
    };
    TickInfo {
        net_bps,
        t0: prev.t_ns,
        t1: s.t_ns,
        bytes: s
            .engine
            .bytes_copied
            .saturating_sub(prev.engine.bytes_copied),
        read_ns: s.engine.read_ns.saturating_sub(prev.engine.read_ns),
        write_ns: s.engine.write_ns.saturating_sub(prev.engine.write_ns),
        page: s.page_cache,
        dev_bps,
        dev_util,
        source_disk: s.source_disk.is_some(),
        psi_some_pct,
        cpu: s.cpu,
        zfs_delays,
        zfs_over_max,
        arc_anon: s.zfs.as_ref().and_then(|z| z.arc_anon),
        zil_commits: match (&prev.zfs, &s.zfs) {
            (Some(a), Some(b)) => b
                .zil_commits
                .unwrap_or(0)
                .saturating_sub(a.zil_commits.unwrap_or(0)),
            _ => 0,
        },
        threads: ThreadTick::between(prev.threads.as_ref(), s.threads.as_ref()).map(|t| {
            t.with_exact(exact::ExactTick::between(
                prev.exact.as_ref(),
                s.exact.as_ref(),
            ))
        }),
        paced_ns: s.engine.paced_ns.saturating_sub(prev.engine.paced_ns),
    }
}

/// For serde: a count of 0 is left out.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop_citing(t_ns: u64, txg: u64, ndirty: u64, stime_ns: u64) -> Event {
        Event {
            t_ns,
            kind: EventKind::Drop(DropInfo {
                end_ns: t_ns + 1,
                reference_bps: 1.0,
                min_bps: 0.0,
                bytes_lost: 1.0,
                causes: vec![
                    Cause::TxgSync {
                        txg,
                        ndirty,
                        stime_ns,
                        dirty_pct_of_max: None,
                        syncs: None,
                        own_pct: None,
                    },
                    Cause::ZfsThrottle {
                        delays: 3,
                        over_max: 0,
                    },
                ],
                held_exact_ns: None,
            }),
        }
    }

    fn commit(t_ns: u64, txg: u64) -> Event {
        Event {
            t_ns,
            kind: EventKind::TxgCommitted {
                txg,
                ndirty: 100,
                nwritten: 90,
                stime_ns: 7,
            },
        }
    }

    #[test]
    fn commits_complete_the_earlier_drops_of_their_txg_only() {
        let mut evs = vec![
            drop_citing(10, 12, 0, 0),
            drop_citing(20, 13, 0, 0),
            commit(30, 12),
            drop_citing(40, 12, 0, 0),
            drop_citing(50, 14, 55, 5),
            commit(60, 14),
        ];
        complete_txg_causes(&mut evs, Some(400));
        let txg_cause = |i: usize| match &evs[i].kind {
            EventKind::Drop(d) => d.causes[0].clone(),
            _ => unreachable!(),
        };
        assert_eq!(
            txg_cause(0),
            Cause::TxgSync {
                txg: 12,
                ndirty: 100,
                stime_ns: 7,
                dirty_pct_of_max: Some(25.0),
                syncs: None,
                own_pct: None,
            }
        );
        // Txg 13 never committed; a drop after the commit is not touched; a drop that
        // already knew its txg's figures keeps them.
        assert_eq!(txg_cause(1), drop_citing(0, 13, 0, 0).kind_cause());
        assert_eq!(txg_cause(3), drop_citing(0, 12, 0, 0).kind_cause());
        assert_eq!(txg_cause(4), drop_citing(0, 14, 55, 5).kind_cause());
        // Other causes stay as they were.
        let EventKind::Drop(d) = &evs[0].kind else {
            unreachable!()
        };
        assert_eq!(
            d.causes[1],
            Cause::ZfsThrottle {
                delays: 3,
                over_max: 0
            }
        );
    }

    impl Event {
        fn kind_cause(&self) -> Cause {
            match &self.kind {
                EventKind::Drop(d) => d.causes[0].clone(),
                _ => unreachable!(),
            }
        }
    }
}
