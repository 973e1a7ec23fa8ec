//! A pipeline's stages as the model reads them (`watch --pipeline`): each stage's read and
//! write rates and the shares of time it spent busy, blocked on its input, on its output, on
//! the disk … over the last seconds and over the run, and which stage limits the pipeline —
//! the one doing its own work (busy, writing to disk, asleep on a timer) while every stage
//! before it waits to write and every stage after it waits to read. Pure: time comes with
//! the samples.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::present::format::{fmt_pct, fmt_rate, fmt_secs};
use crate::present::quote::quote;
use crate::sample::pipeline::{PipeFill, PipelineSample, StageWait};

/// The live figures span this much of the newest samples.
pub const WINDOW_NS: u64 = 5_000_000_000;
/// A stage limits when its own work (or, at an end of the pipeline, its wait on the outside)
/// holds at least this share of its measured time …
pub const OWN_SHARE: f64 = 0.5;
/// … and each stage upstream of it waited to write, each one downstream to read, at least
/// this share of theirs.
pub const WAITING_SHARE: f64 = 0.5;
/// A stage that ended this share of the span before the others is said to have ended.
pub const ENDED_EARLY_SHARE: f64 = 0.1;
/// A stage measured for less than this is not weighed yet: nothing is named before.
pub const MIN_MEASURED_NS: u64 = 1_000_000_000;
/// Over a drop, a stage is weighed from three ticks of it.
pub const DROP_MIN_MEASURED_NS: u64 = 300_000_000;
/// Ticks are kept this long, for the drops that end within it.
pub const KEEP_NS: u64 = 120_000_000_000;

/// Nanoseconds per state, time with no state (threads unreadable), and time after the stage
/// ended while others still ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    ns: [u64; StageWait::ALL.len()],
    unread_ns: u64,
    ended_ns: u64,
    /// Time its output pipe's fill was read, and of that the time it was full.
    pipe_read_ns: u64,
    pipe_full_ns: u64,
}

impl Tally {
    fn add(&mut self, w: Option<StageWait>, dt: u64) {
        match w {
            Some(w) => self.ns[w.index()] = self.ns[w.index()].saturating_add(dt),
            None => self.unread_ns = self.unread_ns.saturating_add(dt),
        }
    }

    fn add_pipe(&mut self, fill: Option<PipeFill>, dt: u64) {
        if let Some(f) = fill {
            self.pipe_read_ns = self.pipe_read_ns.saturating_add(dt);
            if f.full() {
                self.pipe_full_ns = self.pipe_full_ns.saturating_add(dt);
            }
        }
    }

    fn add_ended(&mut self, dt: u64) {
        self.ended_ns = self.ended_ns.saturating_add(dt);
    }

    fn shares(&self) -> Shares {
        let measured: u64 = self.ns.iter().sum();
        let mut of = [0.0; StageWait::ALL.len()];
        if measured > 0 {
            for (s, n) in of.iter_mut().zip(self.ns) {
                *s = n as f64 / measured as f64;
            }
        }
        Shares {
            of,
            measured_ns: measured,
            ended_ns: self.ended_ns,
            pipe_full: (self.pipe_read_ns > 0)
                .then(|| self.pipe_full_ns as f64 / self.pipe_read_ns as f64),
        }
    }
}

/// A stage's states as shares (0–1) of the time they were measured, and how long it had
/// ended while other stages still ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Shares {
    pub of: [f64; StageWait::ALL.len()],
    pub measured_ns: u64,
    pub ended_ns: u64,
    /// The share of the time its output pipe was full, when its fill could be read.
    pub pipe_full: Option<f64>,
}

impl Shares {
    pub fn get(&self, w: StageWait) -> f64 {
        self.of[w.index()]
    }

    /// Its own work: busy, the disk, reading files, asleep on something else — and, at an end
    /// of the pipeline, waiting on the outside (the first stage's input, the last one's
    /// output, a poll there).
    fn own(&self, first: bool, last: bool) -> f64 {
        use StageWait::{Busy, Disk, Input, Other, Output, Poll, Reading};
        let mut s = self.get(Busy) + self.get(Disk) + self.get(Reading) + self.get(Other);
        if first {
            s += self.get(Input);
        }
        if last {
            s += self.get(Output);
        }
        if first || last {
            s += self.get(Poll);
        }
        s
    }

    /// Waiting to write to the next stage (a poll may be that).
    fn waits_out(&self) -> f64 {
        self.get(StageWait::Output) + self.get(StageWait::Poll)
    }

    /// Waiting to read from the previous stage.
    fn waits_in(&self) -> f64 {
        self.get(StageWait::Input) + self.get(StageWait::Poll)
    }

    /// "its pipe full 93 %": how much of the time its output pipe was full, when read.
    pub fn pipe_full_words(&self) -> Option<String> {
        self.pipe_full
            .map(|f| format!("its pipe full {}", fmt_pct(f * 100.0)))
    }

    /// It ended while others ran on for a tenth of the span or more: worth saying (stages
    /// that end together at the pipeline's end are not).
    pub fn ended_early(&self) -> bool {
        self.ended_share() >= ENDED_EARLY_SHARE
    }

    /// The time it lived and was measured, and the time after its end while others ran.
    fn span_ns(&self) -> u64 {
        self.measured_ns.saturating_add(self.ended_ns)
    }

    /// A share of the measured time as a share of the whole span: the rule weighs every
    /// stage over the same stretch of the pipeline's life.
    fn of_span(&self, share: f64) -> f64 {
        match self.span_ns() {
            0 => 0.0,
            span => share * self.measured_ns as f64 / span as f64,
        }
    }

    /// The share of the span after it ended: a stage that has handed on all it had holds
    /// no neighbour back, so that time counts as waiting on either side.
    fn ended_share(&self) -> f64 {
        match self.span_ns() {
            0 => 0.0,
            span => self.ended_ns as f64 / span as f64,
        }
    }

    /// The state with the largest share (`None` before any was measured).
    pub fn main(&self) -> Option<StageWait> {
        (self.measured_ns > 0).then(|| {
            StageWait::ALL
                .into_iter()
                .max_by(|a, b| self.get(*a).total_cmp(&self.get(*b)))
                .unwrap_or(StageWait::Other)
        })
    }

    /// The largest of its own states as a stage at that place (what it limits by).
    fn own_main(&self, first: bool, last: bool) -> StageWait {
        use StageWait::{Busy, Disk, Input, Other, Output, Poll, Reading};
        let mut own = vec![Busy, Disk, Reading, Other];
        if first {
            own.push(Input);
        }
        if last {
            own.push(Output);
        }
        if first || last {
            own.push(Poll);
        }
        own.into_iter()
            .max_by(|a, b| self.get(*a).total_cmp(&self.get(*b)))
            .unwrap_or(Other)
    }
}

/// Why no stage is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unclear {
    /// No stage was found, or none measured yet.
    NoStages,
    /// A stage was measured for less than [`MIN_MEASURED_NS`].
    TooShort,
    /// Several stages each fit the rule (all busy, or all in poll).
    Several,
    /// No stage fits it: the waits do not point at one.
    NoneFits,
}

/// Which stage limits the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Limiter {
    /// The stage at this index (upstream first), by its own state that held it most.
    Stage {
        index: usize,
        by: StageWait,
    },
    Unknown {
        why: Unclear,
    },
}

/// One stage's figures over a span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageFigures {
    pub pid: u32,
    pub pids: Vec<u32>,
    pub comm: String,
    pub args: Vec<String>,
    pub alive: bool,
    /// Bytes/s it read and wrote over the span.
    pub read_bps: f64,
    pub written_bps: f64,
    pub shares: Shares,
    /// Its state at the newest sample, and the kernel function that showed it.
    pub now: Option<StageWait>,
    pub held_in: Option<String>,
    /// Its output pipe at the newest sample.
    pub output_pipe: Option<PipeFill>,
}

/// The pipeline over a span: its stages upstream first and which one limits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineView {
    pub stages: Vec<StageFigures>,
    pub limiter: Limiter,
    pub span_ns: u64,
}

/// The stage that fits the rule among `shares` (upstream first), or why none does. Each
/// stage is weighed over the span it lived plus the time after its end while others ran:
/// once `zfs send` has handed all its data on, the `zfs recv` still writing it limits.
pub fn limiting(shares: &[Shares]) -> Limiter {
    limiting_from(shares, MIN_MEASURED_NS)
}

/// [`limiting`], every stage weighed once measured for `min_measured_ns`.
fn limiting_from(shares: &[Shares], min_measured_ns: u64) -> Limiter {
    // Stages seen alive or ended; one never read (another user's threads) is left out.
    let seen: Vec<usize> = (0..shares.len())
        .filter(|&i| shares[i].span_ns() > 0)
        .collect();
    if seen.is_empty() {
        return Limiter::Unknown {
            why: Unclear::NoStages,
        };
    }
    if seen.iter().any(|&i| shares[i].span_ns() < min_measured_ns) {
        return Limiter::Unknown {
            why: Unclear::TooShort,
        };
    }
    let n = seen.len();
    let fits: Vec<(usize, StageWait)> = (0..n)
        .filter_map(|k| {
            let s = &shares[seen[k]];
            let (first, last) = (k == 0, k + 1 == n);
            let own = s.of_span(s.own(first, last)) >= OWN_SHARE;
            let before = seen[..k].iter().all(|&j| {
                let up = &shares[j];
                up.of_span(up.waits_out()) + up.ended_share() >= WAITING_SHARE
            });
            let after = seen[k + 1..].iter().all(|&j| {
                let down = &shares[j];
                down.of_span(down.waits_in()) + down.ended_share() >= WAITING_SHARE
            });
            let alive = s.measured_ns > 0;
            (alive && own && before && after).then(|| (seen[k], s.own_main(first, last)))
        })
        .collect();
    match fits.as_slice() {
        [(index, by)] => Limiter::Stage {
            index: *index,
            by: *by,
        },
        [] => Limiter::Unknown {
            why: Unclear::NoneFits,
        },
        _ => Limiter::Unknown {
            why: Unclear::Several,
        },
    }
}

/// A stage's state in words ("blocked on output").
pub fn state_words(w: StageWait) -> &'static str {
    match w {
        StageWait::Busy => "busy",
        StageWait::Disk => "writing to disk",
        StageWait::Reading => "reading files",
        StageWait::Output => "blocked on output",
        StageWait::Input => "blocked on input",
        StageWait::Poll => "in poll",
        StageWait::Other => "asleep",
    }
}

/// What a limiting stage was doing, in words: at an end of the pipeline a wait on a pipe or
/// socket is on the outside.
pub fn limited_by_words(by: StageWait) -> &'static str {
    match by {
        StageWait::Output => "blocked on its output, outside the pipeline",
        StageWait::Input => "blocked on its input, outside the pipeline",
        StageWait::Poll => "waiting in poll for what lies outside the pipeline",
        StageWait::Other => "asleep on something other than its pipes (a timer, a lock)",
        w => state_words(w),
    }
}

/// "'perl' (pid 4242)".
pub fn stage_name(s: &StageFigures) -> String {
    format!("{} (pid {})", quote(&s.comm), s.pid)
}

impl PipelineView {
    /// The limiting stage, or why none is named, in a few words: "'perl' (pid 4242), asleep
    /// 97 %" or "unknown: every stage fits …".
    pub fn limiter_words(&self) -> String {
        match self.limiter {
            Limiter::Stage { index, by } => {
                let s = &self.stages[index];
                format!(
                    "{}, {} {}",
                    stage_name(s),
                    state_words(by),
                    fmt_pct(s.shares.get(by) * 100.0)
                )
            }
            Limiter::Unknown { why } => format!("unknown: {}", unclear_words(why)),
        }
    }

    /// A drop's cause when this view is of the drop's ticks and names the stage that held it.
    pub fn drop_cause(&self) -> Option<super::Cause> {
        let Limiter::Stage { index, by } = self.limiter else {
            return None;
        };
        let s = self.stages.get(index)?;
        Some(super::Cause::PipelineStage {
            stage: index + 1,
            of: self.stages.len(),
            name: stage_name(s),
            by,
            held_pct: s.shares.get(by) * 100.0,
        })
    }

    /// The limiting stage, when one is named.
    pub fn limiting_stage(&self) -> Option<&StageFigures> {
        match self.limiter {
            Limiter::Stage { index, .. } => self.stages.get(index),
            Limiter::Unknown { .. } => None,
        }
    }
}

fn unclear_words(why: Unclear) -> &'static str {
    match why {
        Unclear::NoStages => "no stage measured yet",
        Unclear::TooShort => "measured for less than a second",
        Unclear::Several => {
            "several stages do their own work while their neighbours wait (each could limit)"
        }
        Unclear::NoneFits => "the stages' waits do not point at one stage",
    }
}

/// The verdict's paragraph for a pipeline over the run.
pub fn verdict_text(v: &PipelineView, avg_bps: f64) -> String {
    let Some(s) = v.limiting_stage() else {
        return format!(
            "Unknown: {} ({} stages).",
            unclear_words(match v.limiter {
                Limiter::Unknown { why } => why,
                Limiter::Stage { .. } => Unclear::NoneFits,
            }),
            v.stages.len()
        );
    };
    let Limiter::Stage { index, by } = v.limiter else {
        return String::new();
    };
    let n = v.stages.len();
    let mut text = format!(
        "Limited by stage {} of {n}, {}, at {}: it was {} {} of the time",
        index + 1,
        stage_name(s),
        fmt_rate(avg_bps),
        limited_by_words(by),
        fmt_pct(s.shares.get(by) * 100.0)
    );
    let waited = |w: &StageFigures, side: StageWait| {
        let pct = fmt_pct((w.shares.get(side) + w.shares.get(StageWait::Poll)) * 100.0);
        match w.shares.main().filter(|_| w.shares.ended_early()) {
            Some(main) => format!(
                "{} ended after {} ({} {} until then)",
                stage_name(w),
                fmt_secs(w.shares.measured_ns as f64 / 1e9),
                state_words(main),
                fmt_pct(w.shares.get(main) * 100.0)
            ),
            None => {
                let pipe = (w.shares.pipe_full_words())
                    .filter(|_| side == StageWait::Output)
                    .map_or_else(String::new, |p| format!(" ({p})"));
                format!("{} {} {pct}{pipe}", stage_name(w), state_words(side))
            }
        }
    };
    let before: Vec<String> = (v.stages[..index].iter())
        .filter(|w| w.shares.measured_ns > 0)
        .map(|w| waited(w, StageWait::Output))
        .collect();
    let after: Vec<String> = (v.stages[index + 1..].iter())
        .filter(|w| w.shares.measured_ns > 0)
        .map(|w| waited(w, StageWait::Input))
        .collect();
    if !before.is_empty() {
        text.push_str(&format!("; before it {}", before.join(", ")));
    }
    if !after.is_empty() {
        text.push_str(&format!("; after it {}", after.join(", ")));
    }
    text.push('.');
    text
}

/// One tick of one stage: its state over the tick and its bytes at the tick's end.
#[derive(Debug, Clone, Copy)]
struct StageTick {
    pid: u32,
    alive: bool,
    wait: Option<StageWait>,
    output_pipe: Option<PipeFill>,
    read: u64,
    written: u64,
}

#[derive(Debug, Clone)]
struct Tick {
    t1: u64,
    dt: u64,
    stages: Vec<StageTick>,
}

/// A stage's first reading: when, and its bytes then (for the run's rates).
#[derive(Debug, Clone, Copy)]
struct First {
    t: u64,
    read: u64,
    written: u64,
}

/// A stage's bytes at the first and the last tick of a stretch, and when the first was.
#[derive(Debug, Clone, Copy)]
struct ByteSpan {
    from_t: u64,
    read: (u64, u64),
    written: (u64, u64),
}

/// The pipeline's samples: the newest [`WINDOW_NS`] of ticks and the run's tallies.
#[derive(Debug, Clone, Default)]
pub struct PipelineTracker {
    recent: VecDeque<Tick>,
    run: BTreeMap<u32, Tally>,
    first: BTreeMap<u32, First>,
    latest: Option<(u64, PipelineSample)>,
    /// The end of the newest tick in which a stage still had work of its own (anything but
    /// waiting for its input): the pipeline carries its bytes until then.
    working_until: Option<u64>,
}

impl PipelineTracker {
    /// A sample at `t1`, the previous one at `t0`: each stage's state at `t1` stands for the
    /// tick.
    pub fn observe(&mut self, t0: u64, t1: u64, p: &PipelineSample) {
        let dt = t1.saturating_sub(t0);
        let mut stages = Vec::with_capacity(p.stages.len());
        for s in &p.stages {
            self.first.entry(s.pid).or_insert(First {
                t: t1,
                read: s.read,
                written: s.written,
            });
            let wait = s.wait.filter(|_| s.alive);
            if s.alive && !matches!(wait, Some(StageWait::Input | StageWait::Poll)) {
                self.working_until = Some(t1);
            }
            let tally = self.run.entry(s.pid).or_default();
            if s.alive {
                tally.add(wait, dt);
                tally.add_pipe(s.output_pipe, dt);
            } else {
                tally.add_ended(dt);
            }
            stages.push(StageTick {
                pid: s.pid,
                alive: s.alive,
                wait,
                output_pipe: s.output_pipe,
                read: s.read,
                written: s.written,
            });
        }
        self.recent.push_back(Tick { t1, dt, stages });
        while self
            .recent
            .front()
            .is_some_and(|f| f.t1.saturating_sub(f.dt) + KEEP_NS < t1)
        {
            self.recent.pop_front();
        }
        self.latest = Some((t1, p.clone()));
    }

    /// Until when the pipeline carried bytes: the end of the newest tick in which a stage was
    /// alive and not merely waiting for its input (a stage whose threads could not be read
    /// counts as working). The bytes the first stage wrote are through the pipeline only then.
    pub fn working_until(&self) -> Option<u64> {
        self.working_until
    }

    /// Whether a pipeline was sampled.
    pub fn active(&self) -> bool {
        self.latest.is_some()
    }

    /// The newest [`WINDOW_NS`].
    pub fn window(&self) -> Option<PipelineView> {
        let t1 = self.latest.as_ref()?.0;
        self.between(t1.saturating_sub(WINDOW_NS), t1, MIN_MEASURED_NS)
    }

    /// The ticks of a drop from `t0` to `t1`: which stage held the pipeline through it.
    pub fn during(&self, t0: u64, t1: u64) -> Option<PipelineView> {
        self.between(t0, t1, DROP_MIN_MEASURED_NS)
    }

    /// The ticks that lie within [`t0`, `t1`], each stage weighed once measured for
    /// `min_measured_ns`; the stages as the newest sample has them.
    fn between(&self, t0: u64, t1: u64, min_measured_ns: u64) -> Option<PipelineView> {
        let (now, latest) = self.latest.as_ref()?;
        let ticks: Vec<&Tick> = (self.recent.iter())
            .filter(|t| t.t1.saturating_sub(t.dt) >= t0 && t.t1 <= t1)
            .collect();
        let end = ticks.last().map_or(*now, |t| t.t1);
        let mut tallies: BTreeMap<u32, Tally> = BTreeMap::new();
        for tick in &ticks {
            for s in &tick.stages {
                let tally = tallies.entry(s.pid).or_default();
                if s.alive {
                    tally.add(s.wait, tick.dt);
                    tally.add_pipe(s.output_pipe, tick.dt);
                } else {
                    tally.add_ended(tick.dt);
                }
            }
        }
        // Each stage's bytes at its first and last tick in the stretch: the rate spans them.
        let mut spans: BTreeMap<u32, ByteSpan> = BTreeMap::new();
        for tick in &ticks {
            for s in &tick.stages {
                let span = spans.entry(s.pid).or_insert(ByteSpan {
                    from_t: tick.t1,
                    read: (s.read, s.read),
                    written: (s.written, s.written),
                });
                span.read.1 = s.read;
                span.written.1 = s.written;
            }
        }
        Some(self.view(latest, end, &tallies, &spans, min_measured_ns))
    }

    /// The whole run.
    pub fn run(&self) -> Option<PipelineView> {
        let (t1, latest) = self.latest.as_ref()?;
        let spans = (latest.stages.iter())
            .filter_map(|s| {
                let f = self.first.get(&s.pid)?;
                let span = ByteSpan {
                    from_t: f.t,
                    read: (f.read, s.read),
                    written: (f.written, s.written),
                };
                Some((s.pid, span))
            })
            .collect();
        Some(self.view(latest, *t1, &self.run, &spans, MIN_MEASURED_NS))
    }

    fn view(
        &self,
        latest: &PipelineSample,
        t1: u64,
        tallies: &BTreeMap<u32, Tally>,
        spans: &BTreeMap<u32, ByteSpan>,
        min_measured_ns: u64,
    ) -> PipelineView {
        let stages: Vec<StageFigures> = (latest.stages.iter())
            .map(|s| {
                let shares = tallies.get(&s.pid).map(Tally::shares).unwrap_or_default();
                let (read_bps, written_bps) = match spans.get(&s.pid) {
                    Some(b) if t1 > b.from_t => {
                        let secs = (t1 - b.from_t) as f64 / 1e9;
                        (
                            b.read.1.saturating_sub(b.read.0) as f64 / secs,
                            b.written.1.saturating_sub(b.written.0) as f64 / secs,
                        )
                    }
                    _ => (0.0, 0.0),
                };
                StageFigures {
                    pid: s.pid,
                    pids: if s.pids.is_empty() {
                        vec![s.pid]
                    } else {
                        s.pids.clone()
                    },
                    comm: s.comm.clone(),
                    args: s.args.clone(),
                    alive: s.alive,
                    read_bps,
                    written_bps,
                    shares,
                    now: s.wait.filter(|_| s.alive),
                    held_in: s.held_in.clone().filter(|_| s.alive),
                    output_pipe: s.output_pipe.filter(|_| s.alive),
                }
            })
            .collect();
        let shares: Vec<Shares> = stages.iter().map(|s| s.shares).collect();
        let span_ns = tallies
            .values()
            .map(|t| t.ns.iter().sum::<u64>())
            .max()
            .unwrap_or(0);
        PipelineView {
            limiter: limiting_from(&shares, min_measured_ns),
            stages,
            span_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StageWait::{Busy, Input, Other, Output, Poll};

    fn shares(pairs: &[(StageWait, f64)]) -> Shares {
        let mut t = Tally::default();
        for (w, s) in pairs {
            t.add(Some(*w), (*s * 1e9) as u64);
        }
        t.shares()
    }

    #[test]
    fn the_slow_consumer_limits_a_producer_blocked_on_output() {
        let p = shares(&[(Output, 0.97), (Busy, 0.03)]);
        let c = shares(&[(Other, 0.95), (Busy, 0.05)]);
        assert_eq!(
            limiting(&[p, c]),
            Limiter::Stage {
                index: 1,
                by: Other
            }
        );
    }

    #[test]
    fn the_slow_producer_limits_a_consumer_blocked_on_input() {
        let p = shares(&[(Other, 0.9), (Busy, 0.1)]);
        let c = shares(&[(Input, 0.99), (Busy, 0.01)]);
        assert_eq!(
            limiting(&[p, c]),
            Limiter::Stage {
                index: 0,
                by: Other
            }
        );
    }

    #[test]
    fn a_middle_stage_limits_with_its_neighbours_on_either_side() {
        let up = shares(&[(Output, 0.8), (Busy, 0.2)]);
        let mid = shares(&[(Busy, 0.9), (Input, 0.1)]);
        let down = shares(&[(Input, 0.9), (Busy, 0.1)]);
        assert_eq!(
            limiting(&[up, mid, down]),
            Limiter::Stage { index: 1, by: Busy }
        );
    }

    #[test]
    fn unclear_pipelines_say_unknown() {
        let busy = shares(&[(Busy, 1.0)]);
        let poll = shares(&[(Poll, 1.0)]);
        assert_eq!(
            limiting(&[busy, busy]),
            Limiter::Unknown {
                why: Unclear::NoneFits
            }
        );
        assert_eq!(
            limiting(&[poll, poll]),
            Limiter::Unknown {
                why: Unclear::Several
            }
        );
        // A lone stage (sshd feeding `zfs recv` through a socket pair) is both ends: its own
        // work or its wait on the outside limits.
        assert_eq!(limiting(&[busy]), Limiter::Stage { index: 0, by: Busy });
        let fed = shares(&[(Input, 0.94), (Busy, 0.06)]);
        assert_eq!(
            limiting(&[fed]),
            Limiter::Stage {
                index: 0,
                by: Input
            }
        );
        assert_eq!(
            limiting(&[]),
            Limiter::Unknown {
                why: Unclear::NoStages
            }
        );
        let brief = shares(&[(Busy, 0.3)]);
        let out = shares(&[(Output, 1.0)]);
        assert_eq!(
            limiting(&[out, brief]),
            Limiter::Unknown {
                why: Unclear::TooShort
            }
        );
        // A stage never measured (threads unreadable) does not count.
        let none = Shares::default();
        assert_eq!(
            limiting(&[out, none, busy]),
            Limiter::Stage { index: 2, by: Busy }
        );
    }

    /// `shares` of a stage that lived `alive_s` and had ended for `ended_s` more.
    fn ended_after(pairs: &[(StageWait, f64)], alive_s: f64, ended_s: f64) -> Shares {
        let mut t = Tally::default();
        for (w, share) in pairs {
            t.add(Some(*w), (share * alive_s * 1e9) as u64);
        }
        t.add_ended((ended_s * 1e9) as u64);
        t.shares()
    }

    /// `zfs send | zfs recv` onto a throttled pool, as in the ZFS lab: the sender busy for
    /// 2 s, then ended; the receiver writing to disk for 12 s more. Weighed only over the
    /// time each lived, the sender (busy, not blocked on output) hid the receiver.
    #[test]
    fn the_stage_left_working_after_its_upstream_ended_limits() {
        let send = ended_after(&[(Busy, 0.73), (Output, 0.27)], 2.0, 12.0);
        let recv = ended_after(&[(StageWait::Disk, 0.85), (Input, 0.15)], 14.0, 0.0);
        assert_eq!(
            limiting(&[send, recv]),
            Limiter::Stage {
                index: 1,
                by: StageWait::Disk
            }
        );
        // A producer that held the pipeline for 10 s stays named when the consumer drains
        // the pipe for a second after its end.
        let producer = ended_after(&[(Busy, 1.0)], 10.0, 1.0);
        let consumer = ended_after(&[(Input, 0.9), (Busy, 0.1)], 11.0, 0.0);
        assert_eq!(
            limiting(&[producer, consumer]),
            Limiter::Stage { index: 0, by: Busy }
        );
    }

    #[test]
    fn the_last_stage_blocked_sending_to_the_network_limits() {
        // `tar c d | ssh host …` with a slow link: tar waits to write, ssh to send.
        let tar = shares(&[(Output, 0.9), (Busy, 0.1)]);
        let ssh = shares(&[(Output, 0.7), (Poll, 0.2), (Busy, 0.1)]);
        assert_eq!(
            limiting(&[tar, ssh]),
            Limiter::Stage {
                index: 1,
                by: Output
            }
        );
    }
}
