//! `copyscope watch`: the session of a watch — the filesystem probed, the intake chosen, the
//! sampler started on it and a watcher thread that ends the run (q/Ctrl-C, `--duration`,
//! `--until-idle`) — handed to the same TUI and plain/JSON loops as a copy.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::oneshot;

use crate::config::{Config, WatchRequest};
use crate::copy::{Control, CopyOutcome, Progress, ProgressSnapshot};
use crate::exit::{ExitStatus, Fatal};
use crate::frontend::metrics::MetricsEndpoint;
use crate::frontend::session::{Session, SessionPlan};
use crate::frontend::{Frontend, choose_frontend};
use crate::present::quote::{quote, said, shell_escape};
use crate::report::recording::WatchTarget;
use crate::sample::intake::{Intake, IntakeSource};
use crate::sample::net::NetReader;
use crate::sample::pipeline::PipelineReader;
use crate::sample::writers::{WatchedFs, WriterReader};
use crate::sample::{SampleSource, SysRoot, probe_environment};
use crate::ui::view::{Header as UiHeader, RunState};

/// How often the watcher thread checks the end conditions.
const WATCHER_TICK: Duration = Duration::from_millis(50);

/// What ends a watch.
#[derive(Debug, Clone, Copy)]
struct EndRule {
    duration: Option<Duration>,
    until_idle: Option<Duration>,
}

/// Without followed writers the intake is every writer's (the device's sectors, the dataset's
/// bytes): a second carrying less than this share of the busiest second is another writer's
/// trickle (journal commits, a log), not the writes being watched.
const TRICKLE_SHARE: f64 = 0.05;

/// How long the intake has been quiet: since its last byte, or since the followed writer was
/// last held in the kernel (a stall is not the end); without followed writers, since the last
/// second that was more than a trickle.
#[derive(Debug)]
struct QuietClock {
    trickle: bool,
    /// The span a rate is measured over (a second, or two sampling intervals if longer).
    window: Duration,
    recent: std::collections::VecDeque<(Duration, u64)>,
    peak_bps: f64,
    last: u64,
    since: Duration,
}

impl QuietClock {
    fn new(trickle: bool, window: Duration) -> Self {
        QuietClock {
            trickle,
            window,
            recent: std::collections::VecDeque::new(),
            peak_bps: 0.0,
            last: 0,
            since: Duration::ZERO,
        }
    }

    /// The intake `written` at `t` (since the watch started); returns how long it was quiet.
    fn update(&mut self, t: Duration, written: u64, held: bool) -> Duration {
        self.recent.push_back((t, written));
        // Keep one reading at or before the window's start, so the rate spans the window.
        while self.recent.len() > 1 && self.recent[1].0 + self.window <= t {
            self.recent.pop_front();
        }
        let (t0, b0) = self.recent[0];
        let span = t.saturating_sub(t0);
        let full = span >= self.window;
        let bps = if span.is_zero() {
            0.0
        } else {
            written.saturating_sub(b0) as f64 / span.as_secs_f64()
        };
        if full {
            self.peak_bps = self.peak_bps.max(bps);
        }
        let moved =
            written != self.last && (!self.trickle || !full || bps > TRICKLE_SHARE * self.peak_bps);
        if moved || held {
            self.since = t;
        }
        self.last = written;
        t.saturating_sub(self.since)
    }
}

impl EndRule {
    /// `Some(status)` once the watch should end: cancelled (q, Ctrl-C, SIGTERM), the duration
    /// is over, or nothing was written for `until_idle` after something was.
    fn check(
        &self,
        cancelled: bool,
        elapsed: Duration,
        written: u64,
        quiet: Duration,
    ) -> Option<ExitStatus> {
        if cancelled {
            return Some(ExitStatus::Cancelled);
        }
        let over = self.duration.is_some_and(|d| elapsed >= d);
        let idle = self.until_idle.is_some_and(|i| written > 0 && quiet >= i);
        (over || idle).then_some(ExitStatus::Success)
    }
}

/// The outcome a watch reports: what was written while it watched.
fn outcome(status: ExitStatus, written: u64, secs: f64) -> CopyOutcome {
    let counters = ProgressSnapshot {
        bytes_copied: written,
        ..ProgressSnapshot::default()
    };
    CopyOutcome::measured(status, &counters, secs, None)
}

/// Watches the end conditions on its own thread; resolves `done` with the outcome.
fn spawn_watcher(
    rule: EndRule,
    mut quiet: QuietClock,
    progress: Arc<Progress>,
    control: Arc<Control>,
    start: Instant,
) -> oneshot::Receiver<CopyOutcome> {
    let (tx, rx) = oneshot::channel();
    std::thread::spawn(move || {
        loop {
            let written = progress.bytes_copied.load(Ordering::Relaxed);
            // A writer held in the kernel (a txg, dirty throttling, a nearly full disk) is
            // stalled, not quiet: the stall is what is being watched.
            let held = progress.writer_held.load(Ordering::Relaxed);
            let elapsed = start.elapsed();
            let quiet_for = quiet.update(elapsed, written, held);
            let cancelled = control.cancelled.load(Ordering::SeqCst);
            // A watched pipeline whose every stage has ended is over.
            let ended = progress
                .watched_ended
                .load(Ordering::Relaxed)
                .then_some(ExitStatus::Success);
            if let Some(status) =
                ended.or_else(|| rule.check(cancelled, elapsed, written, quiet_for))
            {
                let _ = tx.send(outcome(status, written, start.elapsed().as_secs_f64()));
                return;
            }
            std::thread::sleep(WATCHER_TICK);
        }
    });
    rx
}

/// "watch: comm smbd, pid 4242" (the header's and the picture's source side).
fn writers_label(req: &WatchRequest) -> Vec<String> {
    let mut v: Vec<String> = req.comms.iter().map(|c| format!("comm {c}")).collect();
    v.extend(req.pids.iter().map(|p| format!("pid {p}")));
    if !req.pipeline.is_empty() {
        let pids: Vec<String> = req.pipeline.iter().map(u32::to_string).collect();
        v.push(format!("pipeline of pid {}", pids.join(", ")));
    } else if req.all {
        v.push("every writer found".to_string());
    } else if v.is_empty() {
        v.push("every writer".to_string());
    }
    if let Some(n) = &req.net {
        v.push(format!("net {n}"));
    }
    vec![format!("watch: {}", v.join(", "))]
}

/// Why a watch cannot start (the paths and names already quoted).
#[derive(Debug, thiserror::Error)]
enum WatchError {
    #[error("watch {0}: no such file or directory")]
    NoPath(String),
    #[error("{0} {1}: no such process")]
    NoProcess(&'static str, u32),
    #[error(
        "--pipeline {0}: no pipeline found: neither its standard input or output nor its \
         children's is a pipe (or the process cannot be read: run as its owner or root)"
    )]
    NoPipeline(String),
    #[error("--net {0}: no such network interface (/sys/class/net/{0}/statistics/rx_bytes)")]
    NoInterface(String),
    #[error(
        "watch {0}: no intake to read: the filesystem is neither ZFS nor on a block device \
         (follow the writer with --pid or --comm)"
    )]
    NoIntake(String),
    #[error("watch {path}: {why}")]
    Unwatchable { path: String, why: String },
}

/// Probes PATH's filesystem, picks the intake and starts the sampler and the watcher; the
/// session's header names what is watched.
fn start(
    config: &Config,
    req: &WatchRequest,
    control: Arc<Control>,
    metrics: Option<MetricsEndpoint>,
) -> Result<Session, WatchError> {
    let d = &config.display;
    let path = || quote(&req.path);
    if !req.path.exists() {
        return Err(WatchError::NoPath(path()));
    }
    let root = SysRoot::new(d.sys_root.clone());
    let gone = |p: &&u32| !root.join(format!("proc/{p}")).exists();
    if let Some(pid) = req.pids.iter().find(gone) {
        return Err(WatchError::NoProcess("--pid", *pid));
    }
    if let Some(pid) = req.pipeline.iter().find(gone) {
        return Err(WatchError::NoProcess("--pipeline", *pid));
    }
    let net = net_reader(&root, req)?;
    let mut env = environment(&root, req);
    let following = !req.pids.is_empty() || !req.comms.is_empty() || req.all;
    let pipeline = pipeline_reader(&root, req)?;
    let source = match &pipeline {
        Some(p) if p.lone().is_some() => IntakeSource::LoneStage,
        Some(_) => IntakeSource::Pipeline,
        None => {
            IntakeSource::choose(&env, following).ok_or_else(|| WatchError::NoIntake(path()))?
        }
    };
    note_unreadable_writers(&root, req, &mut env);
    let target = WatchTarget {
        path: req.path.to_string_lossy().into_owned(),
        pids: req.pids.clone(),
        comms: req.comms.clone(),
        intake: source.label().to_string(),
        net: req.net.clone(),
        all: req.all,
        pipeline: req.pipeline.clone(),
    };
    env.watched = Some(Box::new(crate::sample::Watched {
        comms: req.comms.clone(),
        pids: req.pids.clone(),
        intake: target.intake.clone(),
        all: req.all,
        pipeline: req.pipeline.clone(),
    }));
    let endpoints = (writers_label(req), target.path.clone());
    let mut plan = SessionPlan::new(d, env, endpoints, control)
        .recorded(d.record.as_deref(), true)
        .metrics(metrics);
    plan.header.watch = Some(target);
    let writers = match following {
        false => None,
        true => {
            let fs = WatchedFs::of(&req.path).map_err(|e| WatchError::Unwatchable {
                path: path(),
                why: said(&e),
            })?;
            let since = SystemTime::now();
            let r = WriterReader::new(&root, &req.pids, &req.comms, fs, since);
            Some(match req.all {
                true => r.discovering(vec![std::process::id()]),
                false => r,
            })
        }
    };
    let mut intake = Intake::new(source, writers, net, plan.progress());
    if let Some(p) = pipeline {
        intake = intake.with_pipeline(p);
    }
    let rule = EndRule {
        duration: req.duration,
        until_idle: req.until_idle,
    };
    let window = Duration::from_secs(1).max(2 * d.interval);
    let quiet = QuietClock::new(!following && req.pipeline.is_empty(), window);
    Ok(plan.start_watch(
        SampleSource::Watch(Box::new(intake)),
        |progress, control, start| spawn_watcher(rule, quiet, progress, control, start),
    ))
}

/// PATH's environment; for `--all` without PATH, that of the filesystem the writers found
/// in a first second all write on, else none (no device or page-cache cause is named then).
fn environment(root: &SysRoot, req: &WatchRequest) -> crate::sample::Environment {
    if !req.all || req.path_given {
        return probe_environment(root, &[], &req.path);
    }
    let found = find_writers(root, None).0;
    let devs: std::collections::BTreeSet<u64> = found.iter().map(|r| r.dev).collect();
    match (devs.len(), found.first()) {
        (1, Some(r)) => probe_environment(root, &[], Path::new(&r.file)),
        _ => {
            let mut env = crate::sample::probe_stream_environment(root, None, None);
            env.notes.push(format!(
                "{} writers on {} filesystems at the start: no device or page-cache cause is \
                 named (give PATH to watch one)",
                found.len(),
                devs.len()
            ));
            env
        }
    }
}

/// How long `--list` (and `--all` without PATH, at its start) watches for writers.
const FIND_FOR: Duration = Duration::from_secs(1);

/// The processes writing regular files over [`FIND_FOR`] (on `fs` when given), and how many
/// processes could not be read.
fn find_writers(
    root: &SysRoot,
    fs: Option<&WatchedFs>,
) -> (Vec<crate::sample::discover::Running>, u32) {
    use crate::sample::discover::{running, scan};
    let me = [std::process::id()];
    let t0 = Instant::now();
    let before = scan(root, &me);
    std::thread::sleep(FIND_FOR.saturating_sub(t0.elapsed()));
    let after = scan(root, &me);
    let secs = t0.elapsed().as_secs_f64();
    let unreadable = after.unreadable;
    (running(&before, &after, secs, fs), unreadable)
}

/// `watch --list`: the processes writing now, in words or JSON lines; exits.
fn list(config: &Config, req: &WatchRequest) -> Result<ExitStatus, Fatal> {
    let d = &config.display;
    let root = SysRoot::new(d.sys_root.clone());
    let fs = match req.path_given {
        true => Some(
            WatchedFs::of(&req.path)
                .map_err(|e| Fatal::new(format!("watch {}: {}", quote(&req.path), said(&e))))?,
        ),
        false => None,
    };
    let (found, unreadable) = find_writers(&root, fs.as_ref());
    if d.json {
        for r in &found {
            println!("{}", crate::report::watch::found_json(r));
        }
    } else {
        let secs = FIND_FOR.as_secs_f64();
        print!(
            "{}",
            crate::report::watch::found_text(&found, secs, d.binary)
        );
    }
    if unreadable > 0 {
        eprintln!(
            "copyscope: {unreadable} processes could not be read (another user's): run as root to see them"
        );
    }
    Ok(ExitStatus::Success)
}

/// `--pipeline PID…`: the reader of its stages, once some are found, or why there are none.
fn pipeline_reader(
    root: &SysRoot,
    req: &WatchRequest,
) -> Result<Option<PipelineReader>, WatchError> {
    if req.pipeline.is_empty() {
        return Ok(None);
    }
    let mut reader = PipelineReader::new(root, &req.pipeline, vec![std::process::id()]);
    if reader.discover() == 0 {
        let pids: Vec<String> = req.pipeline.iter().map(u32::to_string).collect();
        return Err(WatchError::NoPipeline(pids.join(" ")));
    }
    Ok(Some(reader))
}

/// `--net IFACE`: the reader of its receive counter, or why there is none.
fn net_reader(root: &SysRoot, req: &WatchRequest) -> Result<Option<NetReader>, WatchError> {
    let Some(n) = req.net.as_deref() else {
        return Ok(None);
    };
    let reader = NetReader::new(root, n);
    if !reader.present() {
        return Err(WatchError::NoInterface(quote(Path::new(n))));
    }
    Ok(Some(reader))
}

/// Without root another user's /proc/PID/io is unreadable: the intake of that writer is n/a.
fn note_unreadable_writers(
    root: &SysRoot,
    req: &WatchRequest,
    env: &mut crate::sample::Environment,
) {
    for pid in &req.pids {
        if root.read_to_string(format!("proc/{pid}/io")).is_err() {
            env.notes.push(format!(
                "pid {pid}: /proc/{pid}/io is not readable (another user's process): its intake \
                 is n/a; run as root or as its owner"
            ));
        }
    }
}

/// Runs `copyscope watch` with the frontend the configuration calls for.
pub fn run(config: &Config, req: &WatchRequest) -> Result<ExitStatus, Fatal> {
    if req.list {
        return list(config, req);
    }
    let (control, _signals) = crate::frontend::control_with_signals()?;
    let metrics = crate::frontend::start_metrics(config, "watch")?;
    let sess = start(config, req, control, metrics).map_err(|e| Fatal::new(e.to_string()))?;
    let d = &config.display;
    let o = if choose_frontend(config) == Frontend::Tui {
        // The state label says "watching"; the source side names only the writers, so the
        // watched path keeps its room on an 80-column header.
        let ui_header = UiHeader {
            source: writers_label(req)[0]
                .trim_start_matches("watch: ")
                .to_string(),
            dest: shell_escape(Path::new(&sess.header.destination)).into_owned(),
            fs: String::new(),
        };
        let mut app = crate::frontend::live::new_app(d, &sess, ui_header);
        app.state = RunState::Watching;
        app.watch = true;
        crate::frontend::live::run_session_tui(config, sess, app, None, d.screenshot.clone())
    } else {
        let p = crate::frontend::stream::Printer::new(d.json);
        crate::frontend::stream::run_session(d, sess, p, None)
    };
    // Stopping a watch is how it ends: q and Ctrl-C are a success, not a cancelled copy.
    Ok(match o.status {
        ExitStatus::Cancelled => ExitStatus::Success,
        s => s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks of 50 ms: `rate` bytes/s for `secs`, the clock's quiet time after each.
    fn run(
        q: &mut QuietClock,
        t: &mut Duration,
        bytes: &mut u64,
        rate: u64,
        secs: f64,
    ) -> Duration {
        let tick = Duration::from_millis(50);
        let mut quiet = Duration::ZERO;
        for _ in 0..(secs * 20.0).round() as u32 {
            *t += tick;
            *bytes += rate / 20;
            quiet = q.update(*t, *bytes, false);
        }
        quiet
    }

    #[test]
    fn another_writers_trickle_is_quiet_when_no_writer_is_followed() {
        let (mut t, mut b) = (Duration::ZERO, 0);
        let mut q = QuietClock::new(true, Duration::from_secs(1));
        assert!(run(&mut q, &mut t, &mut b, 80_000_000, 10.0) < Duration::from_millis(100));
        // The copy is over; the journal and a log keep writing 1.4 MB/s.
        let quiet = run(&mut q, &mut t, &mut b, 1_400_000, 6.0);
        assert!(quiet >= Duration::from_secs(4), "{quiet:?}");
        // A writer that comes back at 10 MB/s is writing again.
        assert!(run(&mut q, &mut t, &mut b, 10_000_000, 2.0) < Duration::from_millis(100));
        // Followed writers: every byte is theirs.
        let (mut t, mut b) = (Duration::ZERO, 0);
        let mut q = QuietClock::new(false, Duration::from_secs(1));
        run(&mut q, &mut t, &mut b, 80_000_000, 10.0);
        assert!(run(&mut q, &mut t, &mut b, 1_400_000, 6.0) < Duration::from_millis(100));
    }

    #[test]
    fn a_held_writer_is_not_quiet() {
        let mut q = QuietClock::new(false, Duration::from_secs(1));
        let s = Duration::from_secs;
        assert_eq!(q.update(s(1), 100, false), Duration::ZERO);
        assert_eq!(q.update(s(5), 100, false), s(4));
        assert_eq!(
            q.update(s(9), 100, true),
            Duration::ZERO,
            "8 s in the kernel"
        );
        assert_eq!(q.update(s(12), 100, false), s(3), "from the last held tick");
    }

    #[test]
    fn a_watch_ends_on_cancel_duration_or_idle() {
        let s = Duration::from_secs;
        let rule = EndRule {
            duration: Some(s(60)),
            until_idle: Some(s(5)),
        };
        assert_eq!(
            rule.check(false, s(10), 0, s(10)),
            None,
            "idle before any write"
        );
        assert_eq!(rule.check(false, s(10), 1, s(4)), None);
        assert_eq!(rule.check(false, s(10), 1, s(5)), Some(ExitStatus::Success));
        assert_eq!(rule.check(false, s(60), 1, s(0)), Some(ExitStatus::Success));
        assert_eq!(rule.check(true, s(1), 0, s(0)), Some(ExitStatus::Cancelled));
        let forever = EndRule {
            duration: None,
            until_idle: None,
        };
        assert_eq!(forever.check(false, s(86_400), 1, s(86_400)), None);
    }
}
