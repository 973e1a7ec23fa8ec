//! One run's lifecycle, for every face (the TUI, `--plain`, `--json`) and every kind of run
//! (a copy, a bench phase, a watch): a [`SessionPlan`] (the environment, the recording's
//! header) opens the recording and starts the sampler and the engine (or a watch's watcher)
//! on one clock; the
//! [`Session`] hands the face the samples and engine events in the order they happened
//! ([`arrivals`]), feeds them to the model and the recording, waits for the sample with the
//! engine's final counters, and [`Session::finish`]es into a [`Finished`] run — the model
//! closed, the outcome, the recording's summary written — that the face prints. Every run is
//! recorded when it can be saved — to `--record FILE`, or else to a temporary file that the
//! TUI's `s` can save — so nobody has to decide in advance.

pub mod arrivals;
pub mod recorder;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};

use crate::config::Display;
use crate::copy::{
    ConflictAsk, Control, CopyJob, CopyOutcome, EventSender, Progress, Stamped, spawn_engine,
};
use crate::frontend::metrics::MetricsEndpoint;
use crate::model::whatif::PaceComparison;
use crate::model::{Event, Model, ModelConfig};
use crate::report::export::ChartData;
use crate::report::recording::{Header, Summary};
use crate::report::summary::RunEnd;
use crate::sample::{
    Environment, SampleSource, SamplerHandle, SysRoot, probe_environment, spawn_sampler,
    spawn_sampler_from,
};

use arrivals::{Arrival, Arrivals};
pub use recorder::Recorder;

/// Model thresholds from the command line.
pub fn model_config(d: &Display) -> ModelConfig {
    ModelConfig {
        stopped_tail_is_end: d.watch,
        drop_ratio: d.drop_ratio,
        recover_ratio: d.recover_ratio,
        min_drop_ns: d.min_drop.as_nanos() as u64,
        ..ModelConfig::default()
    }
}

/// "zfs tank/backup", "ext4 /dev/vda1", or "".
pub fn fs_label(env: &Environment) -> String {
    match (&env.fs_type, &env.zfs_dataset, &env.mount_source) {
        (Some(t), Some(ds), _) => format!("{t} {ds}"),
        // tmpfs's source is "tmpfs" (or "none"): said once.
        (Some(t), None, Some(src)) if src == t || src == "none" => t.clone(),
        (Some(t), None, Some(src)) => format!("{t} {src}"),
        (Some(t), None, None) => t.clone(),
        _ => String::new(),
    }
}

/// The summary line of a recording, from the engine's outcome and the model.
pub fn summary_of(o: &CopyOutcome, model: &Model) -> Summary {
    let st = model.stats();
    Summary {
        bytes: o.bytes_copied,
        files: o.files_copied,
        failed: o.failures.len() as u64,
        // The model's copy and durable times, the ones its speeds divide by (one voice).
        elapsed_secs: st.copy_secs,
        durable_secs: st.durable_secs.or(o.flush_secs.map(|f| st.copy_secs + f)),
        to_cache_bps: st.avg_bps,
        durable_bps: st.durable_bps,
        drops: st.drops as u64,
        lost_secs_by_cause: st.lost_by_cause_owned(),
        exit_code: i32::from(o.status.code()),
    }
}

/// Test-only (the `test-hooks` feature): `COPYSCOPE_TEST_PANIC_AFTER_MS=N` panics a helper
/// thread after N ms, so the end-to-end tests can prove that a panic on any thread ends the
/// program cleanly with the terminal restored and nothing lost.
#[cfg(feature = "test-hooks")]
fn spawn_test_panic() {
    let Some(ms) = std::env::var("COPYSCOPE_TEST_PANIC_AFTER_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        panic!("test panic requested by COPYSCOPE_TEST_PANIC_AFTER_MS");
    });
}

#[cfg(not(feature = "test-hooks"))]
fn spawn_test_panic() {}

/// Feeds one arrival to the recording and the model (the sample or engine event first, then
/// the model's events it led to); returns those events. A face whose screen state holds the
/// model (the TUI) records through its hooks instead.
pub fn feed(recorder: &mut Recorder, model: &mut Model, a: &Arrival) -> Vec<Event> {
    let evs = match a {
        Arrival::Sample(s) => {
            recorder.sample(s);
            model.apply(s)
        }
        Arrival::Engine(Stamped { t_ns, event }) => {
            recorder.engine_event(*t_ns, event);
            model.engine_events(*t_ns, event)
        }
    };
    recorder.events(&evs);
    evs
}

/// What a run does with the model each time it stepped: `--metrics` publishes its figures,
/// `--pace auto` hands the engine the pace it holds now.
pub fn model_stepped(
    metrics: Option<&MetricsEndpoint>,
    progress: &Progress,
    env: &Environment,
    model: &Model,
) {
    if let Some(m) = metrics {
        m.publish(model);
    }
    if env.pace_auto {
        let bps = model.pace().bps.map_or(0, |b| b as u64);
        progress
            .pace_bps
            .store(bps, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A run about to start: its environment, the recording's header, and what it is recorded
/// to. The one way a [`Session`] is made.
pub struct SessionPlan {
    pub env: Environment,
    /// The recording's header (a watch or a bench phase marks itself in it).
    pub header: Header,
    root: SysRoot,
    interval: std::time::Duration,
    control: Arc<Control>,
    progress: Arc<Progress>,
    /// `--record FILE` (or a bench phase's file), and whether a temporary recording is kept
    /// for `s` to save when there is none.
    record: (Option<PathBuf>, bool),
    metrics: Option<MetricsEndpoint>,
}

impl SessionPlan {
    /// A run on `env` between `sources` and `dest` (as the header names them), on the
    /// display's sampling interval and system root; not recorded unless told.
    pub fn new(
        d: &Display,
        env: Environment,
        (sources, dest): (Vec<String>, String),
        control: Arc<Control>,
    ) -> SessionPlan {
        let header = Header::for_this_run(
            std::env::args().collect(),
            sources,
            dest,
            env.clone(),
            d.interval.as_millis() as u64,
        );
        SessionPlan {
            env,
            header,
            root: SysRoot::new(d.sys_root.clone()),
            interval: d.interval,
            control,
            progress: Arc::new(Progress::default()),
            record: (None, false),
            metrics: None,
        }
    }

    /// A copy of `job`: the sources' and the destination's filesystems probed, the rate
    /// limit noted.
    pub fn copy(
        d: &Display,
        job: &CopyJob,
        (sources, dest): (Vec<String>, String),
        control: Arc<Control>,
    ) -> SessionPlan {
        let root = SysRoot::new(d.sys_root.clone());
        let src_paths: Vec<PathBuf> = sources.iter().map(PathBuf::from).collect();
        let mut env = probe_environment(&root, &src_paths, Path::new(&dest));
        env.rate_limit_bps = job.options.bwlimit_bps.filter(|b| *b > 0);
        env.rate_limit_is_demo_pace = job.options.bwlimit_is_demo_pace;
        env.pace_auto = job.options.pace_auto;
        SessionPlan::new(d, env, (sources, dest), control)
    }

    /// Records to `record`; without one, to a temporary file when `savable` (the TUI's `s`
    /// saves it), else not at all.
    pub fn recorded(mut self, record: Option<&Path>, savable: bool) -> SessionPlan {
        self.record = (record.map(Path::to_path_buf), savable);
        self
    }

    /// `--metrics`: the endpoint the session publishes the model's figures to.
    pub fn metrics(mut self, metrics: Option<MetricsEndpoint>) -> SessionPlan {
        self.metrics = metrics;
        self
    }

    /// The counters the run's engine (or a watch's intake) bumps and the sampler reads.
    pub fn progress(&self) -> Arc<Progress> {
        self.progress.clone()
    }

    /// Starts the copy of `job` (`ask` answers its questions).
    pub fn start_copy(self, job: CopyJob, ask: Option<Arc<dyn ConflictAsk>>) -> Session {
        let sess = self.start_engine(
            |progress, control, events| spawn_engine(job, progress, control, events, ask),
            "the copy engine panicked",
        );
        spawn_test_panic();
        sess
    }

    /// Starts the sampler on the engine's counters and the engine `spawn` makes; the session
    /// ends when the engine thread returns (`crashed` says why when it panics), and the
    /// sampler is asked at once for the sample with its last counters.
    pub fn start_engine(
        self,
        spawn: impl FnOnce(Arc<Progress>, Arc<Control>, EventSender) -> JoinHandle<CopyOutcome>,
        crashed: &'static str,
    ) -> Session {
        let recorder = self.recorder();
        let (s_tx, samples) = mpsc::unbounded_channel();
        let start = Instant::now();
        let (ev_tx, engine_events) = EventSender::channel(start);
        let sampler = spawn_sampler(
            self.root.clone(),
            &self.env,
            self.progress.clone(),
            self.interval,
            start,
            s_tx,
        );
        let engine = spawn(self.progress.clone(), self.control.clone(), ev_tx);
        let (done_tx, done) = oneshot::channel();
        let final_sample = sampler.sample_now();
        std::thread::spawn(move || {
            let outcome = engine
                .join()
                .unwrap_or_else(|_| CopyOutcome::crashed(crashed));
            // The sample with the engine's last counters, at once rather than at the next tick.
            if let Some(s) = final_sample {
                s.now();
            }
            let _ = done_tx.send(outcome);
        });
        let arrivals = Arrivals {
            samples,
            events: engine_events,
        };
        self.session(recorder, arrivals, done, sampler, start)
    }

    /// Starts a watch: the sampler reads `source`; `watcher` resolves the outcome once the
    /// watch should end. No engine sends events.
    pub fn start_watch(
        self,
        source: SampleSource,
        watcher: impl FnOnce(Arc<Progress>, Arc<Control>, Instant) -> oneshot::Receiver<CopyOutcome>,
    ) -> Session {
        let recorder = self.recorder();
        let (s_tx, samples) = mpsc::unbounded_channel();
        let (_no_engine, events) = mpsc::unbounded_channel::<Stamped>();
        let start = Instant::now();
        let sampler = spawn_sampler_from(
            self.root.clone(),
            &self.env,
            source,
            self.interval,
            start,
            s_tx,
        );
        let done = watcher(self.progress.clone(), self.control.clone(), start);
        self.session(recorder, Arrivals { samples, events }, done, sampler, start)
    }

    /// Opens the recording, before anything runs.
    fn recorder(&self) -> Recorder {
        let (record, savable) = &self.record;
        Recorder::for_run(record.as_deref(), *savable, &self.header)
    }

    fn session(
        self,
        recorder: Recorder,
        arrivals: Arrivals,
        done: oneshot::Receiver<CopyOutcome>,
        sampler: SamplerHandle,
        start: Instant,
    ) -> Session {
        let (record, _) = self.record;
        Session {
            env: self.env,
            header: self.header,
            recorder,
            record,
            progress: self.progress,
            control: self.control,
            arrivals,
            done,
            sampler,
            start,
            metrics: self.metrics,
        }
    }
}

/// A run in progress: what a face listens to, and what it feeds.
pub struct Session {
    pub env: Environment,
    pub header: Header,
    pub recorder: Recorder,
    /// The named file the run is recorded to (`--record FILE`, a bench phase's file).
    record: Option<PathBuf>,
    pub progress: Arc<Progress>,
    pub control: Arc<Control>,
    /// The samples and engine events, taken in the order they happened.
    pub arrivals: Arrivals,
    /// Resolves with the engine's outcome (a panicking engine reports a crash).
    pub done: oneshot::Receiver<CopyOutcome>,
    sampler: SamplerHandle,
    /// The instant every `t_ns` counts from.
    pub start: Instant,
    /// `--metrics`: the endpoint the model's figures are published to.
    pub metrics: Option<MetricsEndpoint>,
}

impl Session {
    /// Nanoseconds since the start.
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// After the model stepped: see [`model_stepped`].
    pub fn publish(&self, model: &Model) {
        model_stepped(self.metrics.as_ref(), &self.progress, &self.env, model);
    }

    /// Stops the sampler: the run is over, what it sent is still queued.
    pub fn stop_sampling(&mut self) {
        self.sampler.stop();
    }

    /// Ends the run: closes the model at its last sample (an open drop at the end is still
    /// reported), publishes it, writes the recording's summary line and closes the file.
    pub fn finish(mut self, mut model: Model, outcome: CopyOutcome) -> Finished {
        self.sampler.stop();
        let last_events = model.finish(model.latest().map_or(0, |s| s.t_ns));
        self.recorder.events(&last_events);
        self.publish(&model);
        let summary = summary_of(&outcome, &model);
        let pace_check = self.recorder.take_hindsight().map(|h| {
            h.compare(&model, self.header.interval_ms.saturating_mul(1_000_000))
                .map_err(|e| e.to_string())
        });
        let recording_error = self.recorder.finish(&summary);
        Finished {
            pace_check,
            model,
            outcome,
            summary,
            header: self.header,
            env: self.env,
            last_events,
            record: self.record,
            recording_error,
        }
    }
}

/// A run that is over, as every face prints it.
pub struct Finished {
    /// The model after the last sample, closed.
    pub model: Model,
    pub outcome: CopyOutcome,
    /// The recording's summary line.
    pub summary: Summary,
    pub header: Header,
    pub env: Environment,
    /// What closing the model added (recorded already), for a face that prints events.
    pub last_events: Vec<Event>,
    /// `--pace auto`: the run against its predicted unpaced twin, or why there is none.
    pub pace_check: Option<Result<PaceComparison, String>>,
    record: Option<PathBuf>,
    recording_error: Option<String>,
}

impl Finished {
    /// What the summaries read.
    pub fn end(&self) -> RunEnd<'_> {
        RunEnd {
            outcome: &self.outcome,
            model: &self.model,
            header: &self.header,
            notes: &self.env.notes,
            pace_check: self.pace_check.as_ref(),
        }
    }

    /// The chart and figures of the pictures and the text summary.
    pub fn chart(&self) -> ChartData {
        ChartData::from_model(&self.model, &self.header, Some(&self.summary))
    }

    /// For a run recorded to a named file: "recording: FILE", or (`Err`) why it failed.
    pub fn recording_line(&self) -> Option<Result<String, String>> {
        let path = self.record.as_deref()?;
        Some(crate::report::summary::recording_line(
            path,
            self.recording_error.as_deref(),
        ))
    }
}
