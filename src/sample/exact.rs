//! Exact time-in-cause: every off-CPU interval of the writer's threads, with the kernel
//! stack each one began in, from a private tracefs instance (`sched_switch` with a
//! `stacktrace` trigger, `sched_wakeup`, `writeback:balance_dirty_pages`), added up per
//! [`WaitClass`] into each sample. Needs root; without it the samples carry the fallback's
//! level ([`EvidenceLevel`]) and the thread sampler's instants stay the evidence.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Instant;

use rustix::time::{ClockId, clock_gettime};
use serde::{Deserialize, Serialize};

use super::root::SysRoot;
use super::{Sample, WaitClass};

pub mod intervals;
pub mod parse;
pub mod tracefs;

use intervals::Accounts;
use parse::{TraceEvent, TraceParser};
use tracefs::{Instance, TRACEFS};

/// How the writer's time was measured, best first: the fallback chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceLevel {
    /// Every off-CPU interval from the kernel's trace (root).
    Exact,
    /// The threads' kernel stacks sampled each tick (root).
    Stacks,
    /// Wait channel and state sampled each tick (any user).
    Wchan,
    /// No thread states: the system's counters only.
    Counters,
}

impl EvidenceLevel {
    pub const ALL: [EvidenceLevel; 4] = [
        EvidenceLevel::Exact,
        EvidenceLevel::Stacks,
        EvidenceLevel::Wchan,
        EvidenceLevel::Counters,
    ];

    /// Words for the summary and the header.
    pub fn label(self) -> &'static str {
        match self {
            EvidenceLevel::Exact => "exact (kernel trace)",
            EvidenceLevel::Stacks => "sampled stacks",
            EvidenceLevel::Wchan => "wchan/stat",
            EvidenceLevel::Counters => "counters only",
        }
    }

    /// `exact (kernel trace) → sampled stacks → wchan/stat → counters only`, the one in use
    /// in brackets.
    pub fn chain(used: EvidenceLevel) -> String {
        EvidenceLevel::ALL
            .iter()
            .map(|l| {
                if *l == used {
                    format!("[{}]", l.label())
                } else {
                    l.label().to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

/// The exact figures of the writer's threads so far (cumulative, like every counter in a
/// [`Sample`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactSample {
    /// Thread time under trace, ns, summed over the writer's threads.
    pub traced_ns: u64,
    /// Of it, off the CPU per class, ns (asleep in user space is `sleeping`).
    #[serde(default)]
    pub off_cpu_ns: BTreeMap<WaitClass, u64>,
    /// Threads followed at this tick.
    pub threads: u32,
    /// `balance_dirty_pages` pauses of the writer and their length, ms.
    #[serde(default)]
    pub throttle_pauses: u64,
    #[serde(default)]
    pub throttle_pause_ms: u64,
    /// Trace entries the kernel dropped (a tick that lost some is not exact).
    #[serde(default)]
    pub lost_events: u64,
}

impl ExactSample {
    pub fn off_cpu(&self, class: WaitClass) -> u64 {
        self.off_cpu_ns.get(&class).copied().unwrap_or(0)
    }
}

/// Most threads named in the filters (a filter is one page of text).
const MAX_THREADS: usize = 64;

/// The exact source of one sampler: the instance, the parser and the accounts.
#[derive(Debug)]
pub struct ExactSource {
    instance: Instance,
    parser: TraceParser,
    accounts: Accounts,
    /// CLOCK_MONOTONIC at the sampler's `t_ns` = 0.
    mono_at_start: u64,
    buf: Vec<u8>,
    events: Vec<TraceEvent>,
    failed: bool,
}

/// Why there is no exact source, for the notes.
#[derive(Debug)]
pub struct NotExact(pub String);

/// `COPYSCOPE_EXACT=0` turns the trace off (to measure its cost against the same copy).
pub const DISABLE_ENV: &str = "COPYSCOPE_EXACT";

fn mono_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    u64::try_from(t.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0))
}

impl ExactSource {
    /// Starts the trace for the live system (`elapsed_ns`: the sampler's clock now, to line
    /// the trace's timestamps up with the samples'); removes stale instances first.
    pub fn start(root: &SysRoot, elapsed_ns: u64) -> Result<ExactSource, NotExact> {
        Self::allowed(root)?;
        let mono_at_start = mono_ns().saturating_sub(elapsed_ns);
        Self::start_at(Path::new(TRACEFS), mono_at_start)
    }

    /// [`ExactSource::start`] on a thread of its own: making and configuring an instance waits
    /// for the kernel (setting its `trace_clock` waits for RCU grace periods: 21–27 ms
    /// measured under `strace -T`), which would hold the sampler's first
    /// samples back and, for a copy shorter than that, its end. `start` is the instant the
    /// sampler's `t_ns` counts from.
    pub fn start_in_background(root: &SysRoot, start: Instant) -> PendingExact {
        if Self::allowed(root).is_err() {
            return PendingExact(None);
        }
        let thread = std::thread::Builder::new()
            .name("copyscope-trace".into())
            .spawn(move || {
                let elapsed = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                let mono_at_start = mono_ns().saturating_sub(elapsed);
                Self::start_at(Path::new(TRACEFS), mono_at_start)
            });
        PendingExact(thread.ok())
    }

    /// Whether this process may trace the live system (root, and not turned off).
    fn allowed(root: &SysRoot) -> Result<(), NotExact> {
        if !root.is_live() {
            return Err(NotExact("not the live system".into()));
        }
        if std::env::var_os(DISABLE_ENV).is_some_and(|v| v == "0") {
            return Err(NotExact(format!("{DISABLE_ENV}=0")));
        }
        if !rustix::process::geteuid().is_root() {
            return Err(NotExact("not root".into()));
        }
        Ok(())
    }

    /// Ends the trace; the instance's removal goes on after this process has exited
    /// ([`Instance::remove_detached`]).
    pub fn close_detached(self) {
        self.instance.remove_detached();
    }

    /// `mono_at_start`: CLOCK_MONOTONIC at the sampler's `t_ns` = 0, read with the sampler's
    /// clock before the instance is made (which takes tens of ms).
    fn start_at(tracefs: &Path, mono_at_start: u64) -> Result<ExactSource, NotExact> {
        tracefs::ensure_mounted(tracefs).map_err(|e| NotExact(e.to_string()))?;
        tracefs::remove_stale(tracefs, tracefs::copyscope_alive);
        let instance = Instance::create(tracefs).map_err(|e| NotExact(e.to_string()))?;
        let parser = TraceParser::new(instance.fields.clone());
        Ok(ExactSource {
            instance,
            parser,
            accounts: Accounts::default(),
            mono_at_start,
            buf: Vec::new(),
            events: Vec::new(),
            failed: false,
        })
    }

    /// The instance's directory (tests check it is gone after drop).
    pub fn instance_dir(&self) -> PathBuf {
        self.instance.dir().to_path_buf()
    }

    /// One tick at `t_ns`: the pipe read to its end, the events applied, the writer's threads
    /// (`(tid, running)`, as the thread sampler saw them this tick) followed; `None` once the
    /// trace failed (the sample falls back).
    pub fn tick(&mut self, t_ns: u64, writers: &[(u32, bool)]) -> Option<ExactSample> {
        if self.failed {
            return None;
        }
        let now = self.mono_at_start.saturating_add(t_ns);
        if self.instance.read_available(&mut self.buf).is_err() {
            self.failed = true;
            return None;
        }
        self.events.clear();
        self.parser.feed(&self.buf, &mut self.events);
        self.parser.flush(&mut self.events);
        for ev in &self.events {
            self.accounts.apply(ev);
        }
        self.accounts.close_tick(now);
        if self
            .accounts
            .totals
            .off_cpu_ns
            .contains_key(&WaitClass::DirtyThrottle)
        {
            self.instance.trace_throttle();
        }
        self.name_writers(now, writers);
        let t = &self.accounts.totals;
        Some(ExactSample {
            traced_ns: t.traced_ns,
            off_cpu_ns: t.off_cpu_ns.clone(),
            threads: u32::try_from(self.accounts.threads()).unwrap_or(u32::MAX),
            throttle_pauses: t.throttle_pauses,
            throttle_pause_ms: t.throttle_pause_ms,
            lost_events: t.lost_events,
        })
    }

    /// Adds writer threads not followed yet and drops those gone, then rewrites the filters
    /// when the set changed.
    fn name_writers(&mut self, now: u64, list: &[(u32, bool)]) {
        let present: HashSet<u32> = list.iter().map(|(t, _)| *t).collect();
        let gone: Vec<u32> = self
            .accounts
            .tracked()
            .filter(|t| !present.contains(t))
            .collect();
        for t in gone {
            self.accounts.remove(t);
        }
        for (tid, running) in list.iter().take(MAX_THREADS) {
            if !self.accounts.is_tracked(*tid) {
                self.accounts.add(*tid, now, *running);
            }
        }
        let tids: Vec<u32> = self.accounts.tracked().collect();
        if !tids.is_empty() && self.instance.follow(&tids).is_err() {
            self.failed = true;
        }
    }
}

/// An exact source being started ([`ExactSource::start_in_background`]).
pub struct PendingExact(Option<JoinHandle<Result<ExactSource, NotExact>>>);

impl PendingExact {
    /// No trace to wait for (a run that is not traced).
    pub fn none() -> Self {
        PendingExact(None)
    }

    /// The source once its thread has made it; None before, and for good once it is taken or
    /// could not be made.
    pub fn ready(&mut self) -> Option<ExactSource> {
        match &self.0 {
            Some(t) if t.is_finished() => self.wait(),
            _ => None,
        }
    }

    /// Waits for the source (a run that ends before it was ready).
    pub fn wait(&mut self) -> Option<ExactSource> {
        self.0.take()?.join().ok().and_then(Result::ok)
    }

    /// Waits for the source at most `limit`: a run that ends (a cancel answered at once)
    /// must not wait for the kernel's grace periods under load. Past it the setup thread is
    /// left to finish; the source it makes is dropped there, which removes its instance (and
    /// should the process exit first, the next run removes it as a killed run's).
    pub fn wait_for(&mut self, limit: std::time::Duration) -> Option<ExactSource> {
        let deadline = std::time::Instant::now() + limit;
        while self.0.as_ref().is_some_and(|t| !t.is_finished()) {
            if std::time::Instant::now() >= deadline {
                self.0 = None;
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.wait()
    }
}

/// Fills the sample's exact figures and evidence level from what this tick had: the trace
/// counts only for a tick that follows a writer's threads (a watch of the intake alone, or
/// of a pipeline's stages, whose states are sampled, is not traced however the trace runs).
/// `stacks_readable`: the thread sampler can read kernel stacks (root); `writers`: the
/// writer's threads it saw this tick.
pub fn fill(
    sample: &mut Sample,
    exact: Option<&mut ExactSource>,
    stacks_readable: bool,
    writers: &[(u32, bool)],
) {
    let figures = exact.and_then(|x| x.tick(sample.t_ns, writers));
    sample.exact = figures.filter(|_| sample.threads.is_some());
    sample.evidence = Some(if sample.exact.is_some() {
        EvidenceLevel::Exact
    } else if sample.threads.is_none() && sample.pipeline.is_none() {
        EvidenceLevel::Counters
    } else if stacks_readable {
        EvidenceLevel::Stacks
    } else {
        EvidenceLevel::Wchan
    });
}

/// Whether this process can read its own threads' kernel stacks (root: the sampled-stack
/// level of the fallback).
pub fn stacks_readable(root: &SysRoot) -> bool {
    root.read_to_string("proc/thread-self/stack").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_marks_the_level_used() {
        assert_eq!(
            EvidenceLevel::chain(EvidenceLevel::Wchan),
            "exact (kernel trace) → sampled stacks → [wchan/stat] → counters only"
        );
    }

    #[test]
    fn a_fixture_root_never_traces() {
        let t = tempfile::tempdir().unwrap();
        assert!(ExactSource::start(&SysRoot::new(t.path()), 0).is_err());
        let mut s = Sample::default();
        fill(&mut s, None, false, &[]);
        assert_eq!(s.evidence, Some(EvidenceLevel::Counters));
    }

    #[test]
    fn a_pipeline_s_stages_rest_on_their_sampled_states() {
        let mut s = Sample {
            pipeline: Some(Default::default()),
            ..Sample::default()
        };
        fill(&mut s, None, true, &[]);
        assert_eq!(s.evidence, Some(EvidenceLevel::Stacks));
        fill(&mut s, None, false, &[]);
        assert_eq!(s.evidence, Some(EvidenceLevel::Wchan));
    }
}
