//! Attribution of a drop: evidence gathered tick by tick while a drop is
//! open, then one pure decision that lists the causes best first, each with its numbers.
//! The thresholds are documented in docs/attribution.md.

use super::exact::ExactTick;
use super::{Cause, TxgSyncs};
use crate::sample::{Cpu, PageCache, ThreadSample, WaitClass};

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
/// A kernel wait that held the copy threads at least this share of the drop (sampled states,
/// weighted by the threads that were not idle) counts as evidence against it.
pub const HELD_SHARE: f64 = 0.2;
/// The copy threads waited on a run queue for a CPU at least this share of their time:
/// CPU starvation.
pub const RUNQ_WAIT_SHARE: f64 = 0.25;
/// A source stall from the threads' states: reading at least this share …
pub const READ_HELD_SHARE: f64 = 0.5;
/// Part of the drop a txg sync must cover.
pub const TXG_OVERLAP_FRACTION: f64 = 0.5;
/// ZFS delays and dirty data are also counted this long before the drop: the throttle
/// ramps up just before the writer stops.
pub const ZFS_LOOKBACK_NS: u64 = 1_000_000_000;
/// Another writer: the destination disks wrote at least this many bytes during the drop that
/// cannot have been this copy's …
pub const OTHER_WRITER_MIN_BYTES: u64 = 16 << 20;
/// … and at least this share of everything they wrote.
pub const OTHER_WRITER_SHARE: f64 = 0.25;
/// The disk slowed: the destination's disks wrote at most this share of their sustained rate
/// during the drop (the drop threshold's share).
pub const DISK_SLOWED_SHARE: f64 = 0.5;
/// Network: the receive rate during the drop is at most this share of its rate before.
pub const NET_FELL_SHARE: f64 = 0.5;
/// Network: before the drop the interface received at least this share of the intake — the
/// writes' data came through it (protocol overhead makes the share above 1 for a sole sender).
pub const NET_MIN_SHARE_OF_INTAKE: f64 = 0.5;
/// Network: the destination disk was busy less than this share of the drop (it was not what
/// held the writes; a disk that holds them closes the TCP window, and rx falls too).
pub const NET_DEVICE_IDLE_PCT: f64 = 50.0;
/// A drop's time in its cause is told exactly when the kernel trace covered this share of the
/// writer's time in it.
pub const EXACT_SHARE: f64 = 0.8;
/// … unless the writer's threads slept (waiting for data) at least this share of the drop.
pub const NET_ASLEEP_SHARE: f64 = 0.5;
/// A receive rate under this is the link at rest (keep-alives, ACKs), not data arriving.
pub const NET_MOVING_BPS: f64 = 100_000.0;

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
    /// ZIL commits (zil kstat zil_commit_count) during the tick.
    pub zil_commits: u64,
    pub threads: Option<ThreadTick>,
    /// `watch --net`: the interface's receive rate, bytes/s.
    pub net_bps: Option<f64>,
    /// Wall time a writer slept for `--bwlimit` during the tick (the engine's count), ns.
    pub paced_ns: u64,
}

/// The copy threads over one tick: their states at its end and the run-queue wait during it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ThreadTick {
    /// Threads not idle at the sample.
    pub active: u32,
    /// Threads per [`WaitClass::index`].
    pub classes: [u32; WaitClass::ALL.len()],
    /// Run-queue wait added during the tick, ns (all copy threads).
    pub runq_ns: u64,
    /// Some blocked thread's wait channel or stack was readable.
    pub readable: bool,
    /// The tick's exact off-CPU time, when traced: it replaces the instant's counts.
    pub exact: Option<ExactTick>,
}

impl ThreadTick {
    /// From two consecutive thread samples (the wait is their difference; none before the first).
    pub fn between(prev: Option<&ThreadSample>, cur: Option<&ThreadSample>) -> Option<ThreadTick> {
        let cur = cur?;
        let mut classes = [0; WaitClass::ALL.len()];
        for (c, n) in &cur.classes {
            classes[c.index()] = *n;
        }
        Some(ThreadTick {
            active: cur.active,
            classes,
            runq_ns: prev.map_or(0, |p| cur.runq_wait_ns.saturating_sub(p.runq_wait_ns)),
            readable: cur.stacks_readable,
            exact: None,
        })
    }

    /// With the tick's exact figures (a trace is as readable as a stack).
    pub fn with_exact(mut self, exact: Option<ExactTick>) -> ThreadTick {
        self.readable |= exact.is_some();
        self.exact = exact;
        self
    }
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
    /// Σ rate × ns, for a time-weighted mean (÷ 1e9: the bytes the disks wrote).
    dev_bps_ns: f64,
    /// Bytes this copy handed to the kernel during the drop.
    intake: u64,
    dev_ns: u64,
    pre_dev_bps: Option<f64>,
    util_sum: f64,
    util_ns: u64,
    source_disk: bool,
    pub zfs_delays: u64,
    pub zfs_over_max: u64,
    pub arc_anon_peak: Option<u64>,
    pub zil_commits: u64,
    /// Data waiting to be written when the drop began: Dirty + Writeback, or on ZFS anon_size.
    backlog_at_start: Option<u64>,
    /// Time with copy-thread data in which some thread was active, ns.
    thread_ns: u64,
    /// The part of `thread_ns` measured exactly (the kernel trace), ns.
    exact_ns: u64,
    /// Per class: Σ dt × (threads in the class / active threads).
    class_ns: [f64; WaitClass::ALL.len()],
    /// Σ dt × active threads (the time the run-queue wait is measured against).
    thread_capacity_ns: f64,
    runq_ns: f64,
    stacks_readable: bool,
    /// Highest busiest-core load during the drop, percent.
    max_core_pct: Option<f64>,
    /// `watch --net`: Σ receive rate × ns during the drop, its ns, and the rate before it.
    net_bps_ns: f64,
    net_ns: u64,
    pre_net_bps: Option<f64>,
    /// The intake before the drop, bytes/s (over the same ticks as `pre_net_bps`).
    pre_intake_bps: Option<f64>,
    /// Time the writer's threads were readable and all idle (sleeping, e.g. in recv()), ns.
    idle_ns: u64,
    /// The newest folded ticks' (t0, device rate × ns, ns): the recovery ticks folded after
    /// the drop's end are taken out of the disks' rate "during" it.
    dev_tail: std::collections::VecDeque<(u64, f64, u64)>,
    /// Where the drop ended, once known (the rate during it stops there).
    end: Option<u64>,
}

/// Folded ticks kept to take the recovery out of the device rate (a recovery lasts a few).
const DEV_TAIL: usize = 32;

impl Evidence {
    /// Starts at `start`; `before` are recent ticks ending at or before it (for the baseline
    /// device rate and the ZFS lookback).
    pub fn new<'a>(start: u64, before: impl Iterator<Item = &'a TickInfo>) -> Evidence {
        let mut e = Evidence::default();
        let (mut dev_b, mut dev_ns) = (0.0, 0u64);
        let (mut net_b, mut net_ns, mut intake) = (0.0, 0u64, 0u64);
        for t in before {
            // The receive rate while data arrived: an earlier pause in the window would halve
            // "the rate before" (44 MB/s quoted where the link carried ~84).
            if let Some(b) = t.net_bps.filter(|b| *b > NET_MOVING_BPS) {
                net_b += b * t.dt() as f64;
                net_ns += t.dt();
                intake = intake.saturating_add(t.bytes);
            }
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
            e.backlog_at_start = t.arc_anon.or(t.page.map(|p| dirty_and_writeback(&p)));
        }
        e.pre_dev_bps = (dev_ns > 0).then(|| dev_b / dev_ns as f64);
        e.pre_net_bps = (net_ns > 0).then(|| net_b / net_ns as f64);
        e.pre_intake_bps = (net_ns > 0).then(|| intake as f64 * 1e9 / net_ns as f64);
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
        self.intake = self.intake.saturating_add(t.bytes);
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
            if self.dev_tail.len() >= DEV_TAIL {
                self.dev_tail.pop_front();
            }
            self.dev_tail.push_back((t.t0, b * dt as f64, dt));
        }
        if let Some(b) = t.net_bps {
            self.net_bps_ns += b * dt as f64;
            self.net_ns += dt;
        }
        if let Some(u) = t.dev_util {
            self.util_sum += u * dt as f64;
            self.util_ns += dt;
        }
        if let Some(c) = t.cpu {
            let core = c.max_core_pct as f64;
            self.max_core_pct = Some(self.max_core_pct.map_or(core, |m| m.max(core)));
        }
        self.source_disk |= t.source_disk;
        self.zfs_delays = self.zfs_delays.saturating_add(t.zfs_delays);
        self.zfs_over_max = self.zfs_over_max.saturating_add(t.zfs_over_max);
        self.zil_commits = self.zil_commits.saturating_add(t.zil_commits);
        self.note_anon(t.arc_anon);
        if let Some(th) = t.threads {
            self.fold_threads(&th, dt);
        }
    }

    fn fold_threads(&mut self, th: &ThreadTick, dt: u64) {
        self.stacks_readable |= th.readable;
        if let Some(x) = th.exact {
            self.fold_exact(&x, th.runq_ns, dt);
            return;
        }
        if th.active == 0 {
            if th.readable {
                self.idle_ns += dt;
            }
            return;
        }
        self.thread_ns += dt;
        let active = th.active as f64;
        for (slot, n) in self.class_ns.iter_mut().zip(th.classes) {
            *slot += dt as f64 * n as f64 / active;
        }
        let capacity = dt as f64 * active;
        self.thread_capacity_ns += capacity;
        self.runq_ns += (th.runq_ns as f64).min(capacity);
    }

    /// [`Evidence::fold_threads`] from the exact figures: each class's share of the threads'
    /// active time, and the run-queue wait against that time.
    fn fold_exact(&mut self, x: &ExactTick, runq_ns: u64, dt: u64) {
        if x.active_ns == 0 {
            self.idle_ns += dt;
            return;
        }
        self.thread_ns += dt;
        self.exact_ns += dt;
        for (slot, share) in self.class_ns.iter_mut().zip(x.shares()) {
            *slot += dt as f64 * share;
        }
        self.thread_capacity_ns += x.active_ns as f64;
        self.runq_ns += (runq_ns as f64).min(x.active_ns as f64);
    }

    /// The time the writer spent held by `cause` during the drop, ns, when the kernel trace
    /// measured (nearly) all of it: each wait's exact length, not a share of 100 ms samples.
    pub fn held_exact_ns(&self, cause: &Cause) -> Option<u64> {
        if self.thread_ns == 0 || (self.exact_ns as f64) < EXACT_SHARE * self.thread_ns as f64 {
            return None;
        }
        let classes: &[WaitClass] = match cause {
            Cause::TxgSync { .. } | Cause::ZfsThrottle { .. } => {
                &[WaitClass::ZfsTxg, WaitClass::OwnTxgSync]
            }
            Cause::ZilCommit { .. } => &[WaitClass::ZilCommit],
            Cause::JournalWait { .. } => &[WaitClass::Journal],
            Cause::SourceStall { .. } => &[WaitClass::SourceRead],
            Cause::PipeReader { .. } => &[WaitClass::PipeFull],
            Cause::NearlyFull { .. } => &[WaitClass::NearlyFull],
            Cause::DirtyThrottle { .. }
            | Cause::DiskSlowed { .. }
            | Cause::AnotherWriter { .. } => &[WaitClass::DirtyThrottle, WaitClass::WritebackWait],
            Cause::WritebackBurst { .. } | Cause::DeviceSaturated { .. } => {
                &[WaitClass::DirtyThrottle, WaitClass::WritebackWait]
            }
            Cause::CpuStarved { .. } | Cause::CpuSaturated { .. } => {
                let share = self.runq_share()?;
                return Some((share * self.thread_ns as f64) as u64);
            }
            Cause::NetworkReceive { .. } | Cause::PipelineStage { .. } | Cause::Unknown => {
                return None;
            }
        };
        Some(
            classes
                .iter()
                .map(|c| self.class_ns[c.index()])
                .sum::<f64>() as u64,
        )
    }

    /// Data waiting to be written when the drop began (ZFS anon_size, else Dirty + Writeback).
    pub fn backlog_at_start(&self) -> Option<u64> {
        self.backlog_at_start
    }

    /// Share of the drop's thread time the copy threads spent in `class`.
    pub fn held(&self, class: WaitClass) -> f64 {
        if self.thread_ns == 0 {
            0.0
        } else {
            self.class_ns[class.index()] / self.thread_ns as f64
        }
    }

    /// Share of the copy threads' time spent waiting for a CPU; `None` without thread data.
    pub fn runq_share(&self) -> Option<f64> {
        (self.thread_capacity_ns > 0.0).then(|| self.runq_ns / self.thread_capacity_ns)
    }

    /// The threads' states are known and their kernel waits readable: a cause with a kernel
    /// signature must then show it.
    fn stacks_known(&self) -> bool {
        self.thread_ns > 0 && self.stacks_readable
    }

    /// Share of the thread time waiting on a txg, for the pool or for the writer's own sync.
    fn held_txg(&self) -> f64 {
        self.held(WaitClass::ZfsTxg) + self.held(WaitClass::OwnTxgSync)
    }

    /// Share of the thread time blocked in the kernel (neither running nor asleep).
    fn blocked_share(&self) -> f64 {
        1.0 - self.held(WaitClass::Running) - self.held(WaitClass::Sleeping)
    }

    /// Share of the thread time held on the write side (a known write wait or an unexplained D).
    fn held_writing(&self) -> f64 {
        WaitClass::ALL
            .iter()
            .filter(|c| c.is_destination() || **c == WaitClass::OtherBlocked)
            .map(|c| self.held(*c))
            .sum()
    }

    /// Time-weighted mean utilisation of the destination disks during the drop, percent.
    pub fn util_mean(&self) -> Option<f64> {
        (self.util_ns > 0).then(|| self.util_sum / self.util_ns as f64)
    }

    /// Time-weighted mean destination write rate during the drop.
    fn dev_mean(&self) -> Option<f64> {
        (self.dev_ns > 0).then(|| self.dev_bps_ns / self.dev_ns as f64)
    }

    /// The drop ended at `end` (the ticks folded after it were its recovery).
    pub fn set_end(&mut self, end: u64) {
        self.end = Some(end);
    }

    /// Time-weighted mean destination write rate until the drop's end (without the recovery
    /// ticks folded after it, as far as they are kept).
    fn dev_mean_until_end(&self) -> Option<f64> {
        let (mut b, mut ns) = (self.dev_bps_ns, self.dev_ns);
        if let Some(end) = self.end {
            for (_, tb, dt) in self.dev_tail.iter().filter(|x| x.0 >= end) {
                b -= tb;
                ns -= dt;
            }
        }
        (ns > 0).then(|| b.max(0.0) / ns as f64)
    }

    /// Bytes the destination disks wrote during the drop that cannot have been this copy's:
    /// at most its data was waiting when the drop began (bounded by the system's Dirty +
    /// Writeback then, which holds all of it) plus what it handed over during the drop.
    /// `None` without disk counters or without the backlog at the start (no bound).
    pub fn others_bytes(&self) -> Option<f64> {
        let written = (self.dev_ns > 0).then(|| self.dev_bps_ns / 1e9)?;
        let ours = self.backlog_at_start? as f64 + self.intake as f64;
        Some((written - ours).max(0.0))
    }

    /// `watch --net`: (receive rate before the drop, during it), when both were sampled.
    fn net_rates(&self) -> Option<(f64, f64)> {
        let before = self.pre_net_bps?;
        (self.net_ns > 0).then(|| (before, self.net_bps_ns / self.net_ns as f64))
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
    /// Several syncs together covered the drop: (first txg, last txg, count, ns covered, drop ns).
    pub syncs: Option<(u64, u64, u32, u64, u64)>,
}

/// What the decision needs besides the evidence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The destination's disks, for the words ("vda", "sdb+sdc").
    pub disks: &'a str,
    pub on_zfs: bool,
    /// The destination has block devices of its own (not tmpfs, not a network share).
    pub has_device: bool,
    /// The engine reported read/write times at some point in the run.
    pub engine_timing: bool,
    pub txg: Option<TxgHit>,
    pub dirty_max: Option<u64>,
    /// What the destination's disks sustained when the drop began (known then; kept through
    /// a fall, see `phase.rs`), bytes/s.
    pub sustained_bps: Option<f64>,
    /// `copyscope pipe` writes into a pipe: a writer held in its writes waited for the reader.
    pub to_pipe: bool,
}

/// The causes of a drop, best first; `[Unknown]` when nothing explains it.
#[expect(
    clippy::too_many_lines,
    reason = "the evidence rules in precedence order, best first, as docs/attribution.md lists them"
)]
pub(crate) fn decide(e: &Evidence, cx: &Context<'_>) -> Vec<Cause> {
    let read_share = e.share(e.read_ns);
    let write_share = e.share(e.write_ns);
    let threads = e.thread_ns > 0;
    let stacks = e.stacks_known();
    // A copier that ran or waited for a CPU through the drop and was hardly ever blocked: its
    // long read() calls were the CPU's (a starved reader copies slowly inside read()).
    let cpu_only = threads
        && e.runq_share().is_some_and(|w| w >= RUNQ_WAIT_SHARE)
        && e.blocked_share() < HELD_SHARE;
    // A source stall: the engine sat in read(), or (copy_file_range, where reads happen inside
    // the write call) its threads' kernel stacks were in the read path.
    let source_stall = !cpu_only
        && ((cx.engine_timing
            && read_share >= READ_STALL_SHARE
            && write_share < READ_STALL_MAX_WRITE_SHARE)
            || (stacks
                && e.held(WaitClass::SourceRead) >= READ_HELD_SHARE
                && e.held_writing() < READ_STALL_MAX_WRITE_SHARE));
    // Held on the write side: the kernel stacks say so when readable; else the engine's time
    // in write calls; without engine times (watch mode, the dd capture) the counters decide.
    // A writer whose threads were readable and slept through the whole drop (a receiver in
    // recv(), waiting for data) was not held by anything on the write side.
    let writer_idle = e.thread_ns == 0 && e.idle_ns > 0;
    let writer_blocked = if stacks {
        e.held_writing() >= HELD_SHARE
    } else if writer_idle {
        false
    } else {
        !cx.engine_timing || write_share >= WRITE_BLOCKED_SHARE
    };
    // A kernel wait with a known signature: shown by the stacks when they are readable. With
    // only the threads' states, such a wait is at least a blocked (D) writer: a writer that
    // ran or waited for a CPU through the drop was held by none of them.
    let held = |class: WaitClass| {
        if stacks {
            e.held(class) >= HELD_SHARE
        } else {
            !threads || e.held_writing() >= HELD_SHARE
        }
    };
    // A read stall can still come from the destination when both share one disk.
    let has_device = cx.has_device || e.dev_ns > 0;
    let device_may_matter = has_device && (!source_stall || !e.source_disk);
    // The device held the copy: the writer waited on it, or the reader did on a disk it shares.
    let device_held = device_may_matter && (writer_blocked || source_stall);
    let mut causes = Vec::new();
    if !source_stall && let Some(c) = pipe_reader(e, cx) {
        causes.push(c);
    }
    let util = e.util_mean();
    let saturated = util.is_some_and(|u| u >= DEVICE_SATURATED_PCT);

    // Another writer on the destination's disks: they ran saturated while the writer was held,
    // and wrote more than this copy can have given them. Not on ZFS: its disks write every
    // block more than once (ZIL then txg, mirror copies, metadata), so their counters cannot
    // be set against this copy's bytes.
    if !source_stall && !cx.on_zfs && device_held && saturated {
        let others = e.others_bytes().unwrap_or(0.0);
        let written = e.dev_bps_ns / 1e9;
        if others >= OTHER_WRITER_MIN_BYTES as f64
            && others >= OTHER_WRITER_SHARE * written
            && e.span_ns > 0
        {
            causes.push(Cause::AnotherWriter {
                device: cx.disks.to_string(),
                other_bps: others * 1e9 / e.span_ns as f64,
                device_bps: e.dev_mean().unwrap_or(0.0),
            });
        }
    }
    if !source_stall && cx.on_zfs {
        let txg_held = if stacks {
            e.held_txg() >= HELD_SHARE
        } else {
            held(WaitClass::ZfsTxg)
        };
        zfs_causes(e, cx, txg_held && !writer_idle, &mut causes);
        if (stacks && e.held(WaitClass::ZilCommit) >= HELD_SHARE)
            || (!stacks && writer_blocked && e.zil_commits > 0)
        {
            causes.push(Cause::ZilCommit {
                commits: e.zil_commits,
                held_pct: stacks.then(|| e.held(WaitClass::ZilCommit) * 100.0),
            });
        }
    }
    // A nearly full ext4 makes every write wait for the filesystem's writeback first: the
    // root of the writeback waits found below, so it comes first.
    if !cx.on_zfs && stacks && e.held(WaitClass::NearlyFull) >= HELD_SHARE {
        causes.push(Cause::NearlyFull {
            held_pct: e.held(WaitClass::NearlyFull) * 100.0,
        });
    }
    // On ZFS, file data never passes through the page cache's dirty accounting; without a
    // device of its own (tmpfs) nothing is written back.
    if !cx.on_zfs && has_device && e.page_ns > 0 {
        let by_dirty = held(WaitClass::DirtyThrottle);
        page_cache_causes(
            e,
            source_stall,
            writer_blocked,
            device_held,
            by_dirty,
            &mut causes,
        );
    }
    if !cx.on_zfs && stacks && e.held(WaitClass::Journal) >= HELD_SHARE {
        causes.push(Cause::JournalWait {
            held_pct: e.held(WaitClass::Journal) * 100.0,
        });
    }
    if let Some(util) = util
        && device_held
        && saturated
    {
        causes.push(Cause::DeviceSaturated {
            util_pct: util,
            device_bps: e.dev_mean().unwrap_or(0.0),
        });
    }
    if source_stall {
        causes.push(Cause::SourceStall {
            read_share: if stacks && read_share < READ_STALL_SHARE {
                e.held(WaitClass::SourceRead)
            } else {
                read_share
            },
        });
    }
    if let Some(wait) = e.runq_share()
        && threads
        && wait >= RUNQ_WAIT_SHARE
    {
        causes.push(Cause::CpuStarved {
            runq_wait_pct: wait * 100.0,
            max_core_pct: e.max_core_pct,
        });
    }
    if let Some(c) = disk_slowed(e, cx, device_held && !source_stall && saturated, &causes) {
        // The root of the waits found: the disk itself wrote less. Its busy figure is in it.
        causes.retain(|c| !matches!(c, Cause::DeviceSaturated { .. }));
        causes.insert(0, c);
    }
    if let Some(c) = network_cause(e, &causes, writer_blocked && stacks) {
        // The data stopped arriving: that is what held the writes, before anything it caused.
        causes.insert(0, c);
    }
    if causes.is_empty() {
        causes.push(Cause::Unknown);
    }
    causes
}

/// The reader of the pipe stopped taking data (docs/attribution.md, "pipe reader"): the
/// writer's threads waited for room in a full pipe at least [`HELD_SHARE`] of the drop; or,
/// without their wait channels, `copyscope pipe` writing into a pipe sat in its writes at
/// least [`WRITE_BLOCKED_SHARE`] of it.
fn pipe_reader(e: &Evidence, cx: &Context<'_>) -> Option<Cause> {
    let write_share = e.share(e.write_ns);
    let held = e.held(WaitClass::PipeFull);
    let by_states = e.stacks_known() && held >= HELD_SHARE;
    let by_writes =
        !e.stacks_known() && cx.to_pipe && cx.engine_timing && write_share >= WRITE_BLOCKED_SHARE;
    (by_states || by_writes).then(|| Cause::PipeReader {
        held_pct: by_states.then_some(held * 100.0),
        write_share,
    })
}

/// The disk slowed (docs/attribution.md, "disk slowed"): the destination's disks, saturated
/// through the drop (`held`: and the writer held on the write side), wrote at most
/// [`DISK_SLOWED_SHARE`] of the rate they sustained when it began. Not on ZFS (its disks write
/// each block more than once) nor beside another writer (the disks then wrote more, not less).
fn disk_slowed(e: &Evidence, cx: &Context<'_>, held: bool, found: &[Cause]) -> Option<Cause> {
    let before = cx.sustained_bps?;
    let during = e.dev_mean_until_end()?;
    let other = found
        .iter()
        .any(|c| matches!(c, Cause::AnotherWriter { .. }));
    if cx.on_zfs || other || !held || before <= 0.0 || during > DISK_SLOWED_SHARE * before {
        return None;
    }
    let (held, held_pct) = match write_wait(e) {
        Some((words, pct)) => (Some(words.to_string()), Some(pct * 100.0)),
        None if found
            .iter()
            .any(|c| matches!(c, Cause::DirtyThrottle { .. })) =>
        {
            (Some("dirty throttling".to_string()), None)
        }
        None => (None, None),
    };
    Some(Cause::DiskSlowed {
        device: cx.disks.to_string(),
        before_bps: before,
        during_bps: during,
        held,
        held_pct,
    })
}

/// The write-side wait that held the copy threads longest, in words, when readable stacks show
/// one at least [`HELD_SHARE`] of the drop.
fn write_wait(e: &Evidence) -> Option<(&'static str, f64)> {
    if !e.stacks_known() {
        return None;
    }
    [
        (WaitClass::DirtyThrottle, "dirty throttling"),
        (WaitClass::WritebackWait, "waiting for the disk"),
        (WaitClass::NearlyFull, "waiting for the disk"),
        (WaitClass::Journal, "the ext4 journal"),
    ]
    .into_iter()
    .map(|(c, w)| (w, e.held(c)))
    .filter(|(_, h)| *h >= HELD_SHARE)
    .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// `watch --net` (docs/attribution.md, "network"): the receive rate fell with the intake —
/// to at most [`NET_FELL_SHARE`] of its rate before the drop, which was itself at least
/// [`NET_MIN_SHARE_OF_INTAKE`] of the intake before the drop — while the write side held
/// nothing: the disk was busy less than [`NET_DEVICE_IDLE_PCT`], no cause of the pool, the
/// page cache, the journal or a busy disk was found, and the writer's stacks (when readable)
/// do not show it held in a write.
fn network_cause(e: &Evidence, found: &[Cause], held_writing: bool) -> Option<Cause> {
    let (before, during) = e.net_rates()?;
    let write_side = found.iter().any(|c| {
        !matches!(
            c,
            Cause::SourceStall { .. } | Cause::CpuStarved { .. } | Cause::CpuSaturated { .. }
        )
    });
    let fell = before > 0.0 && during <= before * NET_FELL_SHARE;
    let disk_idle = e.util_ns == 0 || e.util_sum / (e.util_ns as f64) < NET_DEVICE_IDLE_PCT;
    // The writer's threads were readable and asleep (in recv()) most of the drop: a busy disk
    // (writing back what came before) did not hold it.
    let asleep = e.span_ns > 0 && e.idle_ns as f64 >= NET_ASLEEP_SHARE * e.span_ns as f64;
    let carried = e
        .pre_intake_bps
        .is_some_and(|i| i > 0.0 && before >= i * NET_MIN_SHARE_OF_INTAKE);
    (fell && carried && (disk_idle || asleep) && !write_side && !held_writing).then_some(
        Cause::NetworkReceive {
            before_bps: before,
            during_bps: during,
        },
    )
}

/// Txg sync and write throttle (destination on ZFS, not a source stall). `held` is false
/// when readable stacks show the writer never waited on a txg or the throttle.
fn zfs_causes(e: &Evidence, cx: &Context<'_>, held: bool, causes: &mut Vec<Cause>) {
    if !held {
        return;
    }
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
            syncs: h
                .syncs
                .map(|(first, last, count, covered_ns, drop_ns)| TxgSyncs {
                    first,
                    last,
                    count,
                    covered_ns,
                    drop_ns,
                    held_pct: e.stacks_known().then(|| e.held_txg() * 100.0),
                }),
            own_pct: (e.stacks_known() && e.held(WaitClass::OwnTxgSync) >= HELD_SHARE)
                .then(|| e.held(WaitClass::OwnTxgSync) * 100.0),
        });
    }
    if e.zfs_delays > 0 || e.zfs_over_max > 0 {
        causes.push(Cause::ZfsThrottle {
            delays: e.zfs_delays,
            over_max: e.zfs_over_max,
        });
    }
}

/// Dirty throttling and writeback bursts (a destination with a block device, not on ZFS).
/// `device_held`: the writer (or a reader sharing the disk) waited on the device;
/// `held_by_dirty` is false when readable stacks never showed `balance_dirty_pages`.
fn page_cache_causes(
    e: &Evidence,
    source_stall: bool,
    writer_blocked: bool,
    device_held: bool,
    held_by_dirty: bool,
    causes: &mut Vec<Cause>,
) {
    let write_share = e.share(e.write_ns);
    let above = e.share(e.above_freerun_ns) >= ABOVE_FREERUN_FRACTION;
    if !source_stall && held_by_dirty && (above || e.stacks_known()) && writer_blocked {
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
    if device_held && e.above_freerun_ns == 0 && (wb_jump >= WRITEBACK_JUMP || dev_up) {
        causes.push(Cause::WritebackBurst {
            writeback: e.max_writeback,
            device_bps: dev_bps.unwrap_or(0.0),
        });
    }
}
