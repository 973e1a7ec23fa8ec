//! A running copy: the engine, the sampler and the recording started together, with the
//! channels a frontend (TUI or plain/JSON) listens to. Every run is recorded — to `--record
//! FILE`, or else to a temporary file that the TUI's `s` can save — so nobody has to decide in
//! advance.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};

use crate::config::Display;
use crate::copy::{
    ConflictAsk, Control, CopyJob, CopyOutcome, EngineEvent, EventSender, Progress, Stamped,
    spawn_engine,
};
use crate::model::{Event, Model, ModelConfig};
use crate::report::recording::{Header, RecordingError, RecordingWriter, Summary};
use crate::sample::{
    Environment, Sample, SamplerHandle, SysRoot, probe_environment, spawn_sampler,
};

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
        (Some(t), None, Some(src)) => format!("{t} {src}"),
        (Some(t), None, None) => t.clone(),
        _ => String::new(),
    }
}

/// The recording of the run in progress: to the user's file or to a temporary one. A write
/// error stops recording (and is reported at the end); it never stops the copy.
pub struct Recorder {
    writer: Option<RecordingWriter>,
    /// Written only for the TUI's `s` to save: removed unread otherwise.
    temporary: bool,
    /// Holds the temporary directory alive (removed when the recorder is dropped).
    _temp: Option<tempfile::TempDir>,
    failed: Option<String>,
}

impl Recorder {
    /// No recording: a plain or JSON copy without `--record` has no `s` key to save one
    /// (writing the temporary file anyway serialised two JSON lines per file of a tree into
    /// a file nobody read: most of the copy's user time over 10 000 small files).
    pub fn none() -> Recorder {
        Recorder {
            writer: None,
            temporary: false,
            _temp: None,
            failed: None,
        }
    }

    /// Opens the recording: `record` if given, else a temporary file — unnamed where the
    /// filesystem allows (a SIGKILLed run left its /tmp/copyscope-run-* directory behind),
    /// else in a temporary directory.
    pub fn open(record: Option<&Path>, header: &Header) -> Recorder {
        if record.is_none()
            && let Ok(w) = RecordingWriter::create_unnamed(&std::env::temp_dir(), header)
        {
            return Recorder {
                writer: Some(w),
                temporary: true,
                _temp: None,
                failed: None,
            };
        }
        let (path, temp) = match record {
            Some(p) => (p.to_path_buf(), None),
            None => match tempfile::Builder::new().prefix("copyscope-run-").tempdir() {
                Ok(d) => (d.path().join("run.jsonl"), Some(d)),
                Err(e) => {
                    return Recorder {
                        writer: None,
                        temporary: true,
                        _temp: None,
                        failed: Some(format!(
                            "cannot create a temporary recording: {}",
                            crate::present::quote::said(&e)
                        )),
                    };
                }
            },
        };
        match RecordingWriter::create(&path, header) {
            Ok(w) => Recorder {
                writer: Some(w),
                temporary: record.is_none(),
                _temp: temp,
                failed: None,
            },
            Err(e) => Recorder {
                writer: None,
                temporary: record.is_none(),
                _temp: temp,
                failed: Some(e.to_string()),
            },
        }
    }

    fn write(&mut self, f: impl FnOnce(&mut RecordingWriter) -> Result<(), RecordingError>) {
        if let Some(w) = self.writer.as_mut()
            && let Err(e) = f(w)
        {
            self.failed.get_or_insert(e.to_string());
            self.writer = None;
        }
    }

    pub fn sample(&mut self, s: &Sample) {
        self.write(|w| w.write_sample(s));
    }

    pub fn event(&mut self, e: &Event) {
        self.write(|w| w.write_event(e));
    }

    pub fn events(&mut self, evs: &[Event]) {
        for e in evs {
            self.event(e);
        }
    }

    /// Engine events carry paths; non-UTF-8 ones are written lossily (JSON has no other way).
    pub fn engine_event(&mut self, t_ns: u64, e: &EngineEvent) {
        let e = crate::report::json::lossy_event(e);
        self.write(|w| w.write_engine_event(t_ns, &e));
    }

    /// Copies the run so far to `dest`.
    pub fn save_to(&mut self, dest: &Path) -> Result<(), String> {
        match self.writer.as_mut() {
            Some(w) => w.save_copy_to(dest).map_err(|e| e.to_string()),
            None => Err(self.failed.clone().unwrap_or_else(|| "no recording".into())),
        }
    }

    /// Writes the summary line and closes the file; returns the first error, if any. A
    /// temporary recording is removed unread, so it gets no summary and no sync (its fsync
    /// on a busy root disk held a cancel's exit for up to 0.3 s).
    pub fn finish(mut self, summary: &Summary) -> Option<String> {
        if self.temporary {
            return self.failed;
        }
        if let Some(w) = self.writer.take()
            && let Err(e) = w.finish(summary)
        {
            self.failed.get_or_insert(e.to_string());
        }
        self.failed
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

/// Test-only: `COPYSCOPE_TEST_PANIC_AFTER_MS=N` panics a helper thread after N ms, so the
/// end-to-end tests can prove that a panic on any thread ends the program cleanly with the
/// terminal restored and nothing lost.
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

/// Everything a frontend needs while a copy runs.
pub struct Session {
    pub env: Environment,
    pub header: Header,
    pub recorder: Recorder,
    pub progress: Arc<Progress>,
    pub control: Arc<Control>,
    pub samples: mpsc::UnboundedReceiver<Sample>,
    pub engine_events: mpsc::UnboundedReceiver<Stamped>,
    /// Resolves with the engine's outcome (a panicking engine reports a crash).
    pub done: oneshot::Receiver<CopyOutcome>,
    pub sampler: SamplerHandle,
    /// The instant every `t_ns` counts from.
    pub start: Instant,
    /// `--metrics`: the endpoint the frontend publishes the model's figures to.
    pub metrics: Option<crate::frontend::metrics::MetricsEndpoint>,
}

impl Session {
    /// Probes the destination, opens the recording (with `savable`, a temporary one when no
    /// `--record` was asked for: the TUI's `s` saves it), starts the sampler and the engine.
    pub fn start(
        d: &Display,
        job: CopyJob,
        (sources, dest): (Vec<String>, String),
        control: Arc<Control>,
        ask: Option<Arc<dyn ConflictAsk>>,
        savable: bool,
    ) -> Session {
        let root = SysRoot::new(d.sys_root.clone());
        let src_paths: Vec<PathBuf> = sources.iter().map(PathBuf::from).collect();
        let mut env = probe_environment(&root, &src_paths, Path::new(&dest));
        env.rate_limit_bps = job.options.bwlimit_bps.filter(|b| *b > 0);
        env.rate_limit_is_demo_pace = job.options.bwlimit_is_demo_pace;
        let header = Header::for_this_run(
            std::env::args().collect(),
            sources,
            dest,
            env.clone(),
            d.interval.as_millis() as u64,
        );
        let recorder = match &d.record {
            None if !savable => Recorder::none(),
            record => Recorder::open(record.as_deref(), &header),
        };
        let progress = Arc::new(Progress::default());
        let (s_tx, samples) = mpsc::unbounded_channel();
        let start = Instant::now();
        let (ev_tx, engine_events) = EventSender::channel(start);
        let sampler = spawn_sampler(root, &env, progress.clone(), d.interval, start, s_tx);
        let engine = spawn_engine(job, progress.clone(), control.clone(), ev_tx, ask);
        spawn_test_panic();
        let (done_tx, done) = oneshot::channel();
        let final_sample = sampler.sample_now();
        std::thread::spawn(move || {
            let outcome = engine
                .join()
                .unwrap_or_else(|_| CopyOutcome::crashed("the copy engine panicked"));
            // The sample with the engine's last counters, at once rather than at the next tick.
            if let Some(s) = final_sample {
                s.now();
            }
            let _ = done_tx.send(outcome);
        });
        Session {
            env,
            header,
            recorder,
            progress,
            control,
            samples,
            engine_events,
            done,
            sampler,
            start,
            metrics: None,
        }
    }

    /// Nanoseconds since the start.
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}
