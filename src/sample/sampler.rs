//! The sampler thread: one tick per `interval` on fixed deadlines (next += interval, so
//! ticks never drift; a late tick skips the missed deadlines instead of bursting), one
//! [`Sample`] per tick sent to the main loop, and its own lateness and CPU statistics (the
//! sampler's cost, docs/benchmarks.md).

use std::sync::mpsc::{self as std_mpsc, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::time::{ClockId, clock_gettime};
use tokio::sync::mpsc::UnboundedSender;

use super::exact::{self, ExactSource};
use super::intake::Intake;
use super::reader::{SignalReader, read_sample};
use super::root::SysRoot;
use super::{Environment, Sample};
use crate::copy::Progress;

/// Nice value the sampler thread asks for (see `spawn_sampler`).
const SAMPLER_NICE: i32 = -10;

/// Per-tick figures kept for percentiles (the most recent ones; max and counts are all-time).
const STATS_WINDOW: usize = 16_384;

/// Lateness and cost of the sampler so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SamplerStats {
    pub ticks: u64,
    /// Deadlines skipped because a tick ran later than the next deadline.
    pub skipped: u64,
    /// Wake-up time minus deadline, ns.
    pub late_p50_ns: u64,
    pub late_p99_ns: u64,
    pub late_max_ns: u64,
    /// Thread CPU time (CLOCK_THREAD_CPUTIME_ID) spent building one sample, ns.
    pub cpu_p50_ns: u64,
    pub cpu_p99_ns: u64,
    pub cpu_max_ns: u64,
    pub cpu_mean_ns: u64,
}

#[derive(Debug, Default)]
struct StatsAcc {
    ticks: u64,
    skipped: u64,
    late: Vec<u64>,
    cpu: Vec<u64>,
    late_max: u64,
    cpu_max: u64,
    cpu_sum: u128,
}

impl StatsAcc {
    fn record(&mut self, late: u64, cpu: u64) {
        let i = (self.ticks % STATS_WINDOW as u64) as usize;
        if self.late.len() < STATS_WINDOW {
            self.late.push(late);
            self.cpu.push(cpu);
        } else {
            self.late[i] = late;
            self.cpu[i] = cpu;
        }
        self.ticks += 1;
        self.late_max = self.late_max.max(late);
        self.cpu_max = self.cpu_max.max(cpu);
        self.cpu_sum += u128::from(cpu);
    }

    fn snapshot(&self) -> SamplerStats {
        let late = sorted(&self.late);
        let cpu = sorted(&self.cpu);
        SamplerStats {
            ticks: self.ticks,
            skipped: self.skipped,
            late_p50_ns: percentile(&late, 50),
            late_p99_ns: percentile(&late, 99),
            late_max_ns: self.late_max,
            cpu_p50_ns: percentile(&cpu, 50),
            cpu_p99_ns: percentile(&cpu, 99),
            cpu_max_ns: self.cpu_max,
            cpu_mean_ns: if self.ticks == 0 {
                0
            } else {
                u64::try_from(self.cpu_sum / u128::from(self.ticks)).unwrap_or(u64::MAX)
            },
        }
    }
}

fn sorted(v: &[u64]) -> Vec<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    s
}

/// Nearest-rank percentile of sorted values (0 when empty).
pub fn percentile(sorted: &[u64], pct: u32) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (u64::from(pct) * sorted.len() as u64).div_ceil(100).max(1);
    sorted[(rank as usize - 1).min(sorted.len() - 1)]
}

fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0))
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What the sampler thread is told besides its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Stop,
    /// Take a sample now, off the schedule (which continues as before).
    Now,
}

/// Asks the sampler for a sample at once: the engine has finished, and the frontends wait for
/// a sample that carries its last counters (without this, up to one interval: measured 90 ms
/// of a 0.12 s run at the default 100 ms).
#[derive(Clone)]
pub struct SampleNow(std_mpsc::Sender<Cmd>);

impl SampleNow {
    pub fn now(&self) {
        let _ = self.0.send(Cmd::Now);
    }
}

/// The running sampler. Dropping it stops the thread.
#[derive(Debug)]
pub struct SamplerHandle {
    stop_tx: Option<std_mpsc::Sender<Cmd>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<Mutex<StatsAcc>>,
}

impl SamplerHandle {
    /// Stops the thread and waits for it (returns within one tick's read).
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop_tx.take() {
            let _ = tx.send(Cmd::Stop);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// A handle that asks for an immediate sample (a no-op once the sampler stopped).
    pub fn sample_now(&self) -> Option<SampleNow> {
        self.stop_tx.clone().map(SampleNow)
    }

    /// Lateness and per-tick CPU so far.
    pub fn stats(&self) -> SamplerStats {
        self.stats.lock().map(|s| s.snapshot()).unwrap_or_default()
    }

    /// True while the thread runs (it ends on stop or when the receiver is dropped).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for SamplerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What a sample's byte counter comes from.
#[derive(Debug)]
pub enum SampleSource {
    /// The copy engine's own counters.
    Copy(Arc<Progress>),
    /// Watch mode: the filesystem's or the followed writers' intake.
    Watch(Box<Intake>),
}

impl SampleSource {
    fn tick(&mut self, reader: &mut SignalReader, start: Instant) -> Sample {
        match self {
            SampleSource::Copy(progress) => read_sample(reader, progress, start),
            SampleSource::Watch(intake) => intake.tick(
                reader,
                u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
            ),
        }
    }
}

/// Starts the sampler thread for a copy (see [`spawn_sampler_from`]).
pub fn spawn_sampler(
    root: SysRoot,
    env: &Environment,
    progress: Arc<Progress>,
    interval: Duration,
    start: Instant,
    tx: UnboundedSender<Sample>,
) -> SamplerHandle {
    spawn_sampler_from(root, env, SampleSource::Copy(progress), interval, start, tx)
}

/// A run that ends before its trace was set up waits this long for it, ms.
const UNREADY_TRACE_MS: u64 = 200;

/// The run's age at which the trace is set up. Its set-up waits for an RCU grace period
/// (setting the instance's clock resets its ring: ~30 ms) and no process can exit while a
/// thread of it waits there, so a run that ended during the set-up waited for it: an empty
/// directory's copy took 69 ms instead of 4. No drop can be found this early (the reference
/// needs a second of copying), so these ticks lose nothing but the budget's exact split of
/// the first half second; a copy that ends before it never traces.
const TRACE_AFTER: Duration = Duration::from_millis(500);

/// The kernel's trace of the writer's threads when allowed (root), set up in the background
/// once the run is [`TRACE_AFTER`] old and used from the first tick after that (the ticks
/// before carry the fallback's level); its removal is left to a child process when the
/// sampler ends normally, and done there when it unwinds. Not for `copyscope pipe`: its
/// thread blocks on the pipes every few KiB, and a stack traced at each of those switches
/// cut a 2 GiB stream to a quarter of cat's rate (docs/benchmarks.md, "pipe").
struct Trace {
    wanted: bool,
    pending: exact::PendingExact,
    source: Option<ExactSource>,
}

impl Trace {
    fn new(env: &Environment) -> Trace {
        Trace {
            wanted: env.pipe.is_none(),
            pending: exact::PendingExact::none(),
            source: None,
        }
    }

    /// The source for the tick of a run `age` old: set-up started once the run is old enough,
    /// taken once made.
    fn for_tick(
        &mut self,
        root: &SysRoot,
        start: Instant,
        age: Duration,
    ) -> Option<&mut ExactSource> {
        if self.wanted && age >= TRACE_AFTER {
            self.wanted = false;
            self.pending = ExactSource::start_in_background(root, start);
        }
        if self.source.is_none() {
            self.source = self.pending.ready();
        }
        self.source.as_mut()
    }

    /// The run is over: the trace's removal goes to a child process (a set-up still under
    /// way is waited for, at most [`UNREADY_TRACE_MS`]).
    fn close(mut self) {
        let unready = Duration::from_millis(UNREADY_TRACE_MS);
        if let Some(x) = self.source.or_else(|| self.pending.wait_for(unready)) {
            x.close_detached();
        }
    }
}

/// Starts the sampler thread: a first sample at once, then one every `interval` on fixed
/// deadlines, stamped with ns since `start`. It ends on [`SamplerHandle::stop`], on drop, or
/// when `tx`'s receiver is gone.
pub fn spawn_sampler_from(
    root: SysRoot,
    env: &Environment,
    mut source: SampleSource,
    interval: Duration,
    start: Instant,
    tx: UnboundedSender<Sample>,
) -> SamplerHandle {
    let interval = interval.max(Duration::from_millis(1));
    let (stop_tx, stop_rx) = std_mpsc::channel::<Cmd>();
    let stats = Arc::new(Mutex::new(StatsAcc::default()));
    let stats_t = Arc::clone(&stats);
    let env = env.clone();
    let thread = std::thread::Builder::new()
        .name("copyscope-sampler".to_string())
        .spawn(move || {
            // Built here, not by the caller: its first reading (the CPU meter's /proc/stat)
            // then overlaps the start of the copy instead of delaying it.
            let mut reader = SignalReader::new(&root, &env);
            let mut trace = Trace::new(&env);
            let stacks = exact::stacks_readable(&root);
            let mut take = |source: &mut SampleSource, reader: &mut SignalReader| {
                let mut s = source.tick(reader, start);
                let exact = trace.for_tick(&root, start, start.elapsed());
                exact::fill(&mut s, exact, stacks, reader.writer_threads());
                s
            };
            // Best effort: a tick costs ~0.2 ms of CPU, but on a machine busy with
            // compression or other jobs the scheduler can delay its wake-up by tens of ms.
            // A higher priority (lower nice) needs CAP_SYS_NICE; without it nothing changes.
            // On Linux, PRIO_PROCESS with pid 0 applies to the calling thread only.
            let _ = rustix::process::setpriority_process(None, SAMPLER_NICE);
            let mut next = Instant::now();
            loop {
                let now = Instant::now();
                let cmd = if next > now {
                    match stop_rx.recv_timeout(next - now) {
                        Err(RecvTimeoutError::Timeout) => None,
                        Ok(c) => Some(c),
                        Err(RecvTimeoutError::Disconnected) => Some(Cmd::Stop),
                    }
                } else {
                    match stop_rx.try_recv() {
                        Err(TryRecvError::Empty) => None,
                        Ok(c) => Some(c),
                        Err(TryRecvError::Disconnected) => Some(Cmd::Stop),
                    }
                };
                if cmd == Some(Cmd::Stop) {
                    break;
                }
                if cmd == Some(Cmd::Now) {
                    // Off the schedule: neither lateness nor a step of `next`.
                    if tx.send(take(&mut source, &mut reader)).is_err() {
                        break;
                    }
                    continue;
                }
                let late = nanos(Instant::now().saturating_duration_since(next));
                let cpu0 = thread_cpu_ns();
                let sample = take(&mut source, &mut reader);
                let cpu = thread_cpu_ns().saturating_sub(cpu0);
                if let Ok(mut s) = stats_t.lock() {
                    s.record(late, cpu);
                }
                if tx.send(sample).is_err() {
                    break;
                }
                next += interval;
                let now = Instant::now();
                if now >= next {
                    let missed = nanos(now - next) / nanos(interval) + 1;
                    next += interval * u32::try_from(missed).unwrap_or(u32::MAX);
                    if let Ok(mut s) = stats_t.lock() {
                        s.skipped += missed;
                    }
                }
            }
            trace.close();
        });
    SamplerHandle {
        stop_tx: Some(stop_tx),
        thread: thread.ok(),
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_is_set_up_only_once_the_run_is_half_a_second_old() {
        let root = SysRoot::new("/nonexistent-fixture-root");
        let mut t = Trace {
            wanted: true,
            pending: exact::PendingExact::none(),
            source: None,
        };
        let start = Instant::now();
        assert!(
            t.for_tick(&root, start, Duration::from_millis(400))
                .is_none()
        );
        assert!(t.wanted, "a run 400 ms old is not traced yet");
        assert!(t.for_tick(&root, start, TRACE_AFTER).is_none());
        assert!(
            !t.wanted,
            "set-up asked for once (a fixture root is never traced)"
        );
    }

    #[test]
    fn percentile_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), 50);
        assert_eq!(percentile(&v, 99), 99);
        assert_eq!(percentile(&v, 100), 100);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 50), 0);
    }

    #[test]
    fn stats_window_is_bounded_but_max_is_all_time() {
        let mut acc = StatsAcc::default();
        acc.record(1_000_000, 5);
        for _ in 0..STATS_WINDOW {
            acc.record(10, 5);
        }
        let s = acc.snapshot();
        assert_eq!(acc.late.len(), STATS_WINDOW);
        assert_eq!(s.late_max_ns, 1_000_000);
        assert_eq!(s.late_p99_ns, 10);
        assert_eq!(s.ticks, STATS_WINDOW as u64 + 1);
    }
}
