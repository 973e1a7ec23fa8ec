//! The writer's time budget: where the copy's wall time went, from the copier's
//! sampled thread states, tick by tick. Pure: every tick arrives with its length; the mapping
//! from thread states to time is documented in docs/attribution.md ("Time budget").

use serde::{Deserialize, Serialize};

use super::attrib::ThreadTick;
use crate::present::format::fmt_pct;
use crate::sample::WaitClass;

/// One slice of the budget, in the order the bar draws them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slice {
    /// On a CPU moving data (state R, less the measured run-queue wait).
    Writing,
    /// Paced by the page cache: `balance_dirty_pages`.
    DirtyThrottle,
    /// Waiting for the disk: pages under writeback, or the block layer's queue.
    DiskWait,
    /// A ZFS txg wait: `txg_wait_synced`, `txg_wait_open`, `dmu_tx_wait`/`delay`/`assign`.
    TxgWait,
    /// Synchronous writes: `zil_commit`, or an fsync waiting for its data.
    SyncWrites,
    /// ext4/jbd2 journal waits.
    Journal,
    /// Reading the source.
    SourceRead,
    /// Writing into a full pipe: the reader downstream took the data no faster.
    PipeReader,
    /// Runnable but waiting on a run queue for a CPU (schedstat).
    CpuWait,
    /// Held by copyscope's own rate limit (`--bwlimit`): the engine's pacing sleeps, measured
    /// by the engine itself.
    RateLimit,
    /// The user paused the copy.
    Paused,
    /// The final sync after the last byte.
    Flushing,
    /// Blocked elsewhere in the kernel, or every copy thread idle in user space.
    Other,
    /// No thread states for the tick (not sampled, an old recording, another program).
    Unknown,
}

impl Slice {
    /// Every slice, in bar order ([`Slice::index`] is the position here).
    pub const ALL: [Slice; 14] = [
        Slice::Writing,
        Slice::DirtyThrottle,
        Slice::DiskWait,
        Slice::TxgWait,
        Slice::SyncWrites,
        Slice::Journal,
        Slice::SourceRead,
        Slice::PipeReader,
        Slice::CpuWait,
        Slice::RateLimit,
        Slice::Paused,
        Slice::Flushing,
        Slice::Other,
        Slice::Unknown,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// Short label for legends and text.
    pub fn label(self) -> &'static str {
        match self {
            Slice::Writing => "writing",
            Slice::DirtyThrottle => "dirty throttle",
            Slice::DiskWait => "disk wait",
            Slice::TxgWait => "txg wait",
            Slice::SyncWrites => "sync writes",
            Slice::Journal => "journal",
            Slice::SourceRead => "reading source",
            Slice::PipeReader => "pipe reader",
            Slice::CpuWait => "CPU wait",
            Slice::RateLimit => "rate limit",
            Slice::Paused => "paused",
            Slice::Flushing => "flushing",
            Slice::Other => "other",
            Slice::Unknown => "unknown",
        }
    }

    /// One character per slice for the text bar.
    pub fn glyph(self) -> char {
        match self {
            Slice::Writing => 'W',
            Slice::DirtyThrottle => 'D',
            Slice::DiskWait => 'K',
            Slice::TxgWait => 'T',
            Slice::SyncWrites => 'Z',
            Slice::Journal => 'J',
            Slice::SourceRead => 'R',
            Slice::PipeReader => 'O',
            Slice::CpuWait => 'C',
            Slice::RateLimit => 'L',
            Slice::Paused => 'P',
            Slice::Flushing => 'F',
            Slice::Other => 'o',
            Slice::Unknown => '?',
        }
    }

    /// The slice a blocked or running thread's class counts toward.
    fn of(class: WaitClass) -> Option<Slice> {
        Some(match class {
            WaitClass::Running => Slice::Writing,
            WaitClass::DirtyThrottle => Slice::DirtyThrottle,
            WaitClass::WritebackWait | WaitClass::NearlyFull => Slice::DiskWait,
            WaitClass::ZfsTxg => Slice::TxgWait,
            WaitClass::ZilCommit | WaitClass::SyncWait | WaitClass::OwnTxgSync => Slice::SyncWrites,
            WaitClass::Journal => Slice::Journal,
            WaitClass::SourceRead => Slice::SourceRead,
            WaitClass::PipeFull => Slice::PipeReader,
            WaitClass::OtherBlocked => Slice::Other,
            WaitClass::Sleeping => return None,
        })
    }
}

/// What the copy was doing during a tick, as the model knows it at the tick's end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Phase {
    Copying,
    Paused,
    Flushing,
}

/// Accumulated time per slice, ns (fractional: a tick splits between slices).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    ns: [f64; Slice::ALL.len()],
    /// Copying time whose split came from the exact trace, ns.
    #[serde(default)]
    exact_ns: f64,
    /// The run reads (a bench's read-back): its threads on a CPU are reading, not writing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    reads: bool,
    /// Of the sync writes, the time in whole ZFS txg syncs the writer's own calls waited for
    /// (`linkat` of an `O_TMPFILE`, `syncfs`: [`WaitClass::OwnTxgSync`]), ns.
    #[serde(default, skip_serializing_if = "is_zero")]
    own_txg_sync_ns: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Budget {
    /// Adds one tick of `dt_ns`. A copying tick first gives the engine's own rate-limit
    /// sleeps (`paced_ns`, wall time with a writer held by `--bwlimit`, measured by the engine)
    /// their share; the rest splits by the copy threads' states at its end (each active thread
    /// weighs the same) and the run-queue wait measured over it.
    pub(crate) fn add(
        &mut self,
        dt_ns: u64,
        phase: Phase,
        threads: Option<&ThreadTick>,
        paced_ns: u64,
    ) {
        let dt = dt_ns as f64;
        match phase {
            Phase::Paused => self.ns[Slice::Paused.index()] += dt,
            Phase::Flushing => self.ns[Slice::Flushing.index()] += dt,
            Phase::Copying => {
                let paced = if dt_ns > 0 {
                    (paced_ns as f64 / dt).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                self.ns[Slice::RateLimit.index()] += paced * dt;
                let rest = (1.0 - paced) * dt;
                match threads {
                    None => self.ns[Slice::Unknown.index()] += rest,
                    Some(t) => {
                        if t.exact.is_some() {
                            self.exact_ns += rest;
                        }
                        for (slice, share) in split(t, dt_ns) {
                            self.ns[slice.index()] += share * rest;
                            if slice == Slice::SyncWrites {
                                self.own_txg_sync_ns += share * rest * own_sync_part(t);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Of the sync writes, the time the writer waited for whole txg syncs its own calls asked
    /// for (`linkat` of an `O_TMPFILE`, `syncfs`), ns.
    pub fn own_txg_sync_ns(&self) -> f64 {
        self.own_txg_sync_ns
    }

    /// Time in every slice, ns.
    pub fn total_ns(&self) -> f64 {
        self.ns.iter().sum()
    }

    pub fn ns(&self, slice: Slice) -> f64 {
        self.ns[slice.index()]
    }

    /// Share of the whole budget, 0–1 (0 when empty).
    pub fn share(&self, slice: Slice) -> f64 {
        let t = self.total_ns();
        if t > 0.0 { self.ns(slice) / t } else { 0.0 }
    }

    /// Share of the copying time (paused and flushing left out), 0–1.
    pub fn copy_share(&self, slice: Slice) -> f64 {
        let t = self.copying_ns();
        if t > 0.0 { self.ns(slice) / t } else { 0.0 }
    }

    /// Time the copy was copying (not paused, not flushing), ns.
    pub fn copying_ns(&self) -> f64 {
        self.total_ns() - self.ns(Slice::Paused) - self.ns(Slice::Flushing)
    }

    /// Share of the copying time with thread states (0 when nothing was copied).
    pub fn measured(&self) -> f64 {
        let copying = self.copying_ns();
        if copying <= 0.0 {
            return 0.0;
        }
        1.0 - self.ns(Slice::Unknown) / copying
    }

    /// Thread states cover at least half of the copying time: the bar says something.
    pub fn is_measured(&self) -> bool {
        self.measured() >= 0.5
    }

    /// The exact trace gave the split of at least half the copying time measured.
    pub fn is_exact(&self) -> bool {
        let measured = self.copying_ns() - self.ns(Slice::Unknown);
        measured > 0.0 && self.exact_ns >= 0.5 * measured
    }

    /// Non-empty slices with their share of the whole, in bar order.
    pub fn shares(&self) -> Vec<(Slice, f64)> {
        Slice::ALL
            .iter()
            .map(|s| (*s, self.share(*s)))
            .filter(|(_, v)| *v > 0.0)
            .collect()
    }

    /// A text bar of `width` cells (one glyph per slice, largest remainders first so the cells
    /// add up to `width`) and its legend, e.g. `WWWWTTTTTTFF  writing 40 % · txg wait 55 % ·
    /// flushing 5 %`. Empty when the thread states cover less than half the copying time.
    pub fn text_bar(&self, width: usize) -> String {
        if !self.is_measured() {
            return String::new();
        }
        let cells = self.cells(width);
        if cells.is_empty() {
            return String::new();
        }
        let bar: String = cells
            .iter()
            .flat_map(|(s, n)| std::iter::repeat_n(s.glyph(), *n))
            .collect();
        let exact = if self.is_exact() { "  (exact)" } else { "" };
        format!("[{bar}]  {}{exact}", self.legend())
    }

    /// A budget for a run that reads (`reads`) or writes.
    pub(crate) fn for_run(reads: bool) -> Budget {
        Budget {
            reads,
            ..Budget::default()
        }
    }

    /// A slice's label in this run: "on a CPU" for the time a read spent copying in memory.
    pub fn label(&self, s: Slice) -> &'static str {
        match s {
            Slice::Writing if self.reads => "on a CPU",
            _ => s.label(),
        }
    }

    /// `writing 40 % · txg wait 55 %`: every slice of at least 0.5 %.
    pub fn legend(&self) -> String {
        self.shares()
            .iter()
            .filter(|(_, v)| *v >= 0.005)
            .map(|(s, v)| format!("{} {}", self.label(*s), fmt_pct(v * 100.0)))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// Cells per slice for a bar of `width` (largest remainder, so they sum to `width`).
    pub fn cells(&self, width: usize) -> Vec<(Slice, usize)> {
        let shares = self.shares();
        if shares.is_empty() || width == 0 {
            return Vec::new();
        }
        let mut cells: Vec<(Slice, usize, f64)> = shares
            .iter()
            .map(|(s, v)| {
                let exact = v * width as f64;
                (*s, exact.floor() as usize, exact - exact.floor())
            })
            .collect();
        let used: usize = cells.iter().map(|c| c.1).sum();
        let mut order: Vec<usize> = (0..cells.len()).collect();
        order.sort_by(|a, b| cells[*b].2.total_cmp(&cells[*a].2));
        for i in order.into_iter().take(width.saturating_sub(used)) {
            cells[i].1 += 1;
        }
        cells
            .into_iter()
            .filter(|c| c.1 > 0)
            .map(|c| (c.0, c.1))
            .collect()
    }
}

/// The part of a tick's sync-write time that was whole txg syncs of the writer's own calls.
fn own_sync_part(t: &ThreadTick) -> f64 {
    let of = |c: WaitClass| match t.exact {
        Some(x) => x.blocked_ns[c.index()] as f64,
        None => f64::from(t.classes[c.index()]),
    };
    let sync = of(WaitClass::ZilCommit) + of(WaitClass::SyncWait) + of(WaitClass::OwnTxgSync);
    if sync > 0.0 {
        of(WaitClass::OwnTxgSync) / sync
    } else {
        0.0
    }
}

/// A copying tick's split between slices (shares sum to 1). With the exact trace, each class's
/// share of the threads' active time over the tick; else the states are an instant at the
/// tick's end, each active thread weighing 1/active; the run-queue wait is measured over the
/// tick (Σ over copy threads ÷ active threads × tick), is time in state R, and so comes out of
/// the running share first, then, if larger, out of the others in proportion.
fn split(t: &ThreadTick, dt_ns: u64) -> Vec<(Slice, f64)> {
    // Exact: each class's share of the threads' active time, the wait against that time.
    let (class_shares, capacity) = match t.exact {
        Some(x) => (x.shares(), x.active_ns as f64),
        None => {
            let mut c = [0.0; WaitClass::ALL.len()];
            for class in WaitClass::ALL {
                c[class.index()] = t.classes[class.index()] as f64 / f64::from(t.active.max(1));
            }
            (c, f64::from(t.active) * dt_ns as f64)
        }
    };
    if capacity <= 0.0 || dt_ns == 0 {
        return vec![(Slice::Other, 1.0)];
    }
    let mut shares = [0.0; Slice::ALL.len()];
    for class in WaitClass::ALL {
        if let Some(slice) = Slice::of(class) {
            shares[slice.index()] += class_shares[class.index()];
        }
    }
    let sum: f64 = shares.iter().sum();
    if sum <= 0.0 {
        return vec![(Slice::Other, 1.0)];
    }
    for s in &mut shares {
        *s /= sum;
    }
    let wait = (t.runq_ns as f64 / capacity).clamp(0.0, 1.0);
    let running = shares[Slice::Writing.index()];
    if wait <= running {
        shares[Slice::Writing.index()] -= wait;
    } else {
        let rest = 1.0 - running;
        let scale = if rest > 0.0 { (1.0 - wait) / rest } else { 0.0 };
        for s in &mut shares {
            *s *= scale;
        }
        shares[Slice::Writing.index()] = 0.0;
    }
    shares[Slice::CpuWait.index()] = wait;
    Slice::ALL
        .iter()
        .map(|s| (*s, shares[s.index()]))
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

#[cfg(test)]
mod tests {

    /// A bench's read-back spends its time on a CPU reading: never "writing".
    #[test]
    fn a_read_is_never_writing() {
        assert_eq!(Budget::for_run(true).label(Slice::Writing), "on a CPU");
        assert_eq!(Budget::for_run(false).label(Slice::Writing), "writing");
        assert_eq!(Budget::for_run(true).label(Slice::CpuWait), "CPU wait");
    }

    use super::*;

    fn tick(classes: &[(WaitClass, u32)], runq_ns: u64) -> ThreadTick {
        let mut t = ThreadTick::default();
        for (c, n) in classes {
            t.classes[c.index()] = *n;
            if *c != WaitClass::Sleeping {
                t.active += n;
            }
        }
        t.runq_ns = runq_ns;
        t.readable = true;
        t
    }

    const MS100: u64 = 100_000_000;

    impl Budget {
        /// A tick with no rate-limit sleep.
        fn add_t(&mut self, dt_ns: u64, phase: Phase, threads: Option<&ThreadTick>) {
            self.add(dt_ns, phase, threads, 0);
        }
    }

    #[test]
    fn the_engines_own_pacing_is_the_rate_limit_share() {
        // A writer that slept 90 ms of a 100 ms tick for --bwlimit and wrote for the rest:
        // idle (sleeping) at the sample, as a paced writer mostly is.
        let mut b = Budget::default();
        let idle = tick(&[(WaitClass::Sleeping, 1)], 0);
        b.add(MS100, Phase::Copying, Some(&idle), 90_000_000);
        let running = tick(&[(WaitClass::Running, 1)], 0);
        b.add(MS100, Phase::Copying, Some(&running), 90_000_000);
        assert!((b.share(Slice::RateLimit) - 0.9).abs() < 1e-9);
        assert!((b.share(Slice::Other) - 0.05).abs() < 1e-9);
        assert!((b.share(Slice::Writing) - 0.05).abs() < 1e-9);
        // Measured by the engine: counts as measured even without thread states.
        let mut b = Budget::default();
        b.add(MS100, Phase::Copying, None, 80_000_000);
        assert!((b.measured() - 0.8).abs() < 1e-9 && b.is_measured());
        // More than the tick (clock skew between the engine and the sampler): capped.
        let mut b = Budget::default();
        b.add(MS100, Phase::Copying, None, 2 * MS100);
        assert_eq!(b.share(Slice::RateLimit), 1.0);
        assert!(b.text_bar(10).starts_with("[LLLLLLLLLL]  rate limit 100 %"));
    }

    #[test]
    fn each_active_thread_weighs_the_same_and_idle_ones_not_at_all() {
        let mut b = Budget::default();
        let t = tick(
            &[
                (WaitClass::ZfsTxg, 1),
                (WaitClass::Running, 1),
                (WaitClass::Sleeping, 2),
            ],
            0,
        );
        b.add_t(MS100, Phase::Copying, Some(&t));
        assert!((b.share(Slice::TxgWait) - 0.5).abs() < 1e-9);
        assert!((b.share(Slice::Writing) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn run_queue_wait_comes_out_of_running_first_then_the_rest() {
        let mut b = Budget::default();
        // One running thread that waited 40 ms of the 100 ms tick for a CPU.
        b.add_t(
            MS100,
            Phase::Copying,
            Some(&tick(&[(WaitClass::Running, 1)], 40_000_000)),
        );
        assert!((b.share(Slice::CpuWait) - 0.4).abs() < 1e-9);
        assert!((b.share(Slice::Writing) - 0.6).abs() < 1e-9);
        // Blocked at the sample but waited 50 ms on a run queue before: 50 % CPU, 50 % read.
        let mut b = Budget::default();
        b.add_t(
            MS100,
            Phase::Copying,
            Some(&tick(&[(WaitClass::SourceRead, 1)], 50_000_000)),
        );
        assert!((b.share(Slice::CpuWait) - 0.5).abs() < 1e-9);
        assert!((b.share(Slice::SourceRead) - 0.5).abs() < 1e-9);
        assert_eq!(b.share(Slice::Writing), 0.0);
    }

    #[test]
    fn phases_and_missing_states_have_their_own_slices() {
        let mut b = Budget::default();
        b.add_t(MS100, Phase::Paused, None);
        b.add_t(MS100, Phase::Flushing, None);
        b.add_t(2 * MS100, Phase::Copying, None);
        b.add_t(
            0,
            Phase::Copying,
            Some(&tick(&[(WaitClass::Sleeping, 1)], 0)),
        );
        assert!((b.share(Slice::Unknown) - 0.5).abs() < 1e-9);
        assert!((b.copy_share(Slice::Unknown) - 1.0).abs() < 1e-9);
        assert_eq!(b.ns(Slice::Other), 0.0);
        b.add_t(
            MS100,
            Phase::Copying,
            Some(&tick(&[(WaitClass::Sleeping, 1)], 0)),
        );
        assert!((b.ns(Slice::Other) - MS100 as f64).abs() < 1e-6);
    }

    #[test]
    fn text_bar_fills_its_width_exactly() {
        let mut b = Budget::default();
        b.add_t(
            MS100,
            Phase::Copying,
            Some(&tick(&[(WaitClass::Running, 1)], 0)),
        );
        b.add_t(
            2 * MS100,
            Phase::Copying,
            Some(&tick(&[(WaitClass::ZfsTxg, 1)], 0)),
        );
        let cells = b.cells(10);
        assert_eq!(cells.iter().map(|c| c.1).sum::<usize>(), 10);
        assert_eq!(cells, vec![(Slice::Writing, 3), (Slice::TxgWait, 7)]);
        assert!(
            b.text_bar(10)
                .starts_with("[WWWTTTTTTT]  writing 33 % · txg wait 67 %")
        );
        assert_eq!(Budget::default().text_bar(10), "");
    }
}
