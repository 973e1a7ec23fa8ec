//! A live copy session: starts the engine, the sampler and the recording, then hands them to
//! a frontend (the TUI here). Every run is recorded — to `--record FILE`, or else to a
//! temporary file that `s` can save — so nobody has to decide in advance.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::config::{Config, Display};
use crate::copy::{
    Control, CopyJob, CopyOutcome, EngineEvent, OverwritePolicy, Progress, spawn_engine,
};
use crate::exit::ExitStatus;
use crate::model::{Event, Model, ModelConfig};
use crate::report::export::{ChartData, write_screenshot_set};
use crate::report::recording::{Header, Recording, RecordingWriter, Summary};
use crate::sample::{Environment, Sample, SysRoot, probe_environment, spawn_sampler};
use crate::tui::{FRAME_INTERVAL, LiveHooks, LiveIo, TuiConflictAsk, run_live};
use crate::ui::app::{App, Header as UiHeader, RunState, UiOptions};
use crate::ui::theme::Theme;
use crate::ui::units::Units;

/// Default PNG/SVG size for screenshots.
pub const SCREENSHOT_SIZE: (u32, u32) = (1600, 900);

/// Model thresholds from the command line.
pub fn model_config(d: &Display) -> ModelConfig {
    ModelConfig {
        drop_ratio: d.drop_ratio,
        recover_ratio: d.recover_ratio,
        min_drop_ns: d.min_drop.as_nanos() as u64,
        ..ModelConfig::default()
    }
}

/// Colours unless NO_COLOR is set (https://no-color.org: any non-empty value).
pub fn ui_options(d: &Display) -> UiOptions {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    UiOptions {
        theme: Theme::new(!no_color, d.ascii),
        units: if d.binary {
            Units::Binary
        } else {
            Units::Decimal
        },
        compact: d.compact,
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

/// The recording of the run in progress: to the user's file or to a temporary one.
pub struct Recorder {
    writer: Option<RecordingWriter>,
    /// Set when recording to a temporary file (removed when the session ends).
    _temp: Option<tempfile::TempDir>,
    path: PathBuf,
    failed: Option<String>,
}

impl Recorder {
    /// Opens the recording: `record` if given, else a temporary file.
    pub fn open(record: Option<&Path>, header: &Header) -> Recorder {
        let (path, temp) = match record {
            Some(p) => (p.to_path_buf(), None),
            None => match tempfile::Builder::new().prefix("copyscope-run-").tempdir() {
                Ok(d) => (d.path().join("run.jsonl"), Some(d)),
                Err(e) => {
                    return Recorder {
                        writer: None,
                        _temp: None,
                        path: PathBuf::new(),
                        failed: Some(format!("cannot create a temporary recording: {e}")),
                    };
                }
            },
        };
        match RecordingWriter::create(&path, header) {
            Ok(w) => Recorder {
                writer: Some(w),
                _temp: temp,
                path,
                failed: None,
            },
            Err(e) => Recorder {
                writer: None,
                _temp: temp,
                path,
                failed: Some(e.to_string()),
            },
        }
    }

    fn guard(&mut self, r: Result<(), crate::report::recording::RecordingError>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e.to_string());
            self.writer = None;
        }
    }

    pub fn sample(&mut self, s: &Sample) {
        if let Some(w) = self.writer.as_mut() {
            let r = w.write_sample(s);
            self.guard(r);
        }
    }

    pub fn event(&mut self, e: &Event) {
        if let Some(w) = self.writer.as_mut() {
            let r = w.write_event(e);
            self.guard(r);
        }
    }

    pub fn engine_event(&mut self, t_ns: u64, e: &EngineEvent) {
        if let Some(w) = self.writer.as_mut() {
            let r = w.write_engine_event(t_ns, e);
            self.guard(r);
        }
    }

    /// The run so far, read back from disk (flushes first).
    pub fn snapshot(&mut self) -> Option<Recording> {
        let w = self.writer.as_mut()?;
        let r = w.flush();
        self.guard(r);
        Recording::load(&self.path).ok()
    }

    /// Copies the run so far to `dest`.
    pub fn save_to(&mut self, dest: &Path) -> Result<(), String> {
        match self.writer.as_mut() {
            Some(w) => w.save_copy_to(dest).map_err(|e| e.to_string()),
            None => Err(self.failed.clone().unwrap_or_else(|| "no recording".into())),
        }
    }

    /// Writes the summary line and closes the file; returns the recording for the summary.
    pub fn finish(mut self, summary: &Summary) -> (Option<Recording>, Option<String>) {
        if let Some(w) = self.writer.take()
            && let Err(e) = w.finish(summary)
        {
            self.failed.get_or_insert(e.to_string());
        }
        let rec = Recording::load(&self.path).ok();
        (rec, self.failed)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The summary line of a recording, from the engine's outcome and the model.
pub fn summary_of(o: &CopyOutcome, model: &Model) -> Summary {
    let st = model.stats();
    Summary {
        bytes: o.bytes_copied,
        files: o.files_copied,
        failed: o.failures.len() as u64,
        elapsed_secs: o.copy_secs,
        durable_secs: o.flush_secs.map(|f| o.copy_secs + f),
        to_cache_bps: o.to_cache_bps,
        durable_bps: o.durable_bps,
        drops: st.drops as u64,
        lost_secs_by_cause: st
            .lost_secs_by_cause
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        exit_code: i32::from(o.status.code()),
    }
}

/// Writes a screenshot set of `rec` into `dir` (default: the current directory), named after the
/// wall-clock time; returns a one-line message for the footer.
pub fn screenshot_to(
    rec: &Recording,
    dir: Option<&Path>,
    ascii: bool,
) -> Result<Vec<PathBuf>, String> {
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let stamp = rec
        .header
        .started_at
        .replace([':', '-'], "")
        .replace('T', "-")
        .replace('Z', "");
    let stem = format!("copyscope-{stamp}");
    let data = ChartData::from_recording(rec);
    write_screenshot_set(&data, &dir, &stem, SCREENSHOT_SIZE, ascii).map_err(|e| format!("{e:#}"))
}

/// Screenshot from a replayed recording's file (replay's `s`).
pub fn screenshot_now(app: &App, _env: &Environment, rec: Option<&Recording>) -> String {
    match rec {
        Some(r) => match screenshot_to(r, None, app.opts.theme.ascii()) {
            Ok(p) => format!("wrote {}", join_paths(&p)),
            Err(e) => format!("screenshot failed: {e}"),
        },
        None => "screenshot: nothing recorded yet".to_string(),
    }
}

/// Writes to stdout, ignoring errors: after an SSH drop there is no terminal left, and a failed
/// write must not turn a clean cancel into a panic.
fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// Like [`out`] for stderr.
fn err(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

fn join_paths(p: &[PathBuf]) -> String {
    p.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

struct Hooks<'a> {
    recorder: &'a mut Recorder,
    screenshot_dir: Option<PathBuf>,
    ascii: bool,
}

impl LiveHooks for Hooks<'_> {
    fn on_sample(&mut self, s: &Sample) {
        self.recorder.sample(s);
    }
    fn on_events(&mut self, evs: &[Event]) {
        for e in evs {
            self.recorder.event(e);
        }
    }
    fn on_engine_event(&mut self, t_ns: u64, ev: &EngineEvent) {
        self.recorder.engine_event(t_ns, ev);
    }
    fn screenshot(&mut self, _app: &App) -> String {
        let Some(rec) = self.recorder.snapshot() else {
            return "screenshot failed: the recording could not be read".to_string();
        };
        let dir = self.screenshot_dir.clone();
        match screenshot_to(&rec, dir.as_deref(), self.ascii) {
            Ok(mut paths) => {
                // Save the run so far beside the pictures, so it can be replayed or exported later.
                if let Some(png) = paths.first() {
                    let jsonl = png.with_extension("jsonl");
                    if self.recorder.save_to(&jsonl).is_ok() {
                        paths.push(jsonl);
                    }
                }
                format!("wrote {}", join_paths(&paths))
            }
            Err(e) => format!("screenshot failed: {e}"),
        }
    }
}

/// Runs a planned copy with the TUI and returns its outcome (the summary is printed).
pub fn run_copy_tui(
    config: &Config,
    job: CopyJob,
    sources: Vec<String>,
    dest: String,
) -> CopyOutcome {
    let d = &config.display;
    let root = SysRoot::new(d.sys_root.clone());
    let src_paths: Vec<PathBuf> = sources.iter().map(PathBuf::from).collect();
    let env = probe_environment(&root, &src_paths, Path::new(&dest));
    let header = Header::for_this_run(
        std::env::args().collect(),
        sources.clone(),
        dest.clone(),
        env.clone(),
        d.interval.as_millis() as u64,
    );
    let mut recorder = Recorder::open(d.record.as_deref(), &header);
    let opts = ui_options(d);
    let model = Model::new(model_config(d), env.clone());
    let app = App::new(
        model,
        UiHeader {
            source: sources.join(", "),
            dest: dest.clone(),
            fs: fs_label(&env),
        },
        opts,
    );

    let progress = Arc::new(Progress::default());
    let control = Arc::new(Control::default());
    let (ev_tx, ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let (s_tx, s_rx) = tokio::sync::mpsc::unbounded_channel();
    let start = Instant::now();
    let mut sampler = spawn_sampler(root, &env, progress.clone(), d.interval, start, s_tx);
    let ask_needed = job.options.overwrite == OverwritePolicy::Ask;
    let (ask, conflicts) = if ask_needed {
        let (a, rx) = TuiConflictAsk::new();
        (Some(a as Arc<dyn crate::copy::ConflictAsk>), Some(rx))
    } else {
        (None, None)
    };
    let engine = spawn_engine(job, progress.clone(), control.clone(), ev_tx, ask);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let outcome = engine
            .join()
            .unwrap_or_else(|_| CopyOutcome::crashed("the copy engine panicked"));
        let _ = done_tx.send(outcome);
    });
    let io = LiveIo {
        samples: s_rx,
        engine_events: ev_rx,
        conflicts,
        control: control.clone(),
        progress,
        done: done_rx,
        start,
        frame_interval: FRAME_INTERVAL,
    };
    let mut hooks = Hooks {
        recorder: &mut recorder,
        screenshot_dir: d.screenshot.clone(),
        ascii: d.ascii,
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            control
                .cancelled
                .store(true, std::sync::atomic::Ordering::SeqCst);
            err(&format!("copyscope: cannot start the event loop: {e}"));
            return CopyOutcome::crashed("no event loop");
        }
    };
    let end = rt.block_on(run_live(app, io, &mut hooks, |o: &CopyOutcome| {
        match o.status {
            ExitStatus::Success | ExitStatus::Partial => RunState::Done,
            ExitStatus::Cancelled => RunState::Cancelled,
            ExitStatus::Fatal => RunState::Failed,
        }
    }));
    sampler.stop();
    let (mut app, outcome, hung_up) = match end {
        Ok(e) => (Some(e.app), e.outcome, e.hung_up),
        Err(e) => {
            // The terminal could not be set up: the engine already runs; stop it cleanly.
            control
                .cancelled
                .store(true, std::sync::atomic::Ordering::SeqCst);
            err(&format!("copyscope: cannot use the terminal: {e}"));
            (None, None, false)
        }
    };
    let outcome = outcome.unwrap_or_else(|| CopyOutcome::crashed("the copy did not report back"));
    if let Some(app) = app.as_mut() {
        let t = app.now_ns;
        for e in app.model.finish(t) {
            recorder.event(&e);
        }
    }
    let summary = app
        .as_ref()
        .map(|a| summary_of(&outcome, &a.model))
        .unwrap_or_default();
    let (rec, rec_err) = recorder.finish(&summary);
    if hung_up {
        return outcome;
    }
    if let (Some(app), Some(rec)) = (app.as_ref(), rec.as_ref()) {
        out(&crate::report::summary::final_summary(
            &app.model,
            &app.header,
            opts,
            rec,
            Some(&outcome),
        ));
        if let Some(dir) = &d.screenshot {
            match screenshot_to(rec, Some(dir), d.ascii) {
                Ok(p) => out(&format!("screenshot: {}\n", join_paths(&p))),
                Err(e) => err(&format!("copyscope: screenshot failed: {e}")),
            }
        }
    } else {
        out(&crate::report::plain::summary_text(&outcome, d.binary));
    }
    if let Some(p) = &d.record {
        match rec_err {
            None => out(&format!("recording: {}\n", p.display())),
            Some(e) => err(&format!("copyscope: recording {}: {e}", p.display())),
        }
    }
    outcome
}
