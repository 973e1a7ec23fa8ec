//! The TUI face of a session (a copy, a watch or a bench phase): runs it under the live loop
//! (frontend/tui.rs), where `s` writes screenshots and saves the recording beside them, and
//! prints the finished run's summary once the terminal is restored.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{Config, Display};
use crate::copy::{Control, CopyJob, CopyOutcome, EngineEvent, Progress};
use crate::exit::ExitStatus;
use crate::frontend::metrics::MetricsEndpoint;
use crate::frontend::session::{
    Finished, Recorder, Session, SessionPlan, fs_label, model_config, model_stepped,
};
use crate::frontend::state::App;
use crate::frontend::tui::{
    AskRequest, FRAME_INTERVAL, LiveEnd, LiveHooks, LiveIo, TuiConflictAsk, run_live,
};
use crate::model::{Event, Model};
use crate::present::quote::{error_chain, said, shell_escape};
use crate::present::units::Units;
use crate::report::export::ChartData;
use crate::report::recording::Header;
use crate::report::screenshot::{join_paths, run_stem, short_paths, write_run_screenshots};
use crate::sample::{Environment, Sample};
use crate::ui::theme::Theme;
use crate::ui::view::{Header as UiHeader, RunState, UiOptions};

/// The questions the engine asks the TUI (overwrite, free space), as the live loop reads them.
pub(crate) type Questions = tokio::sync::mpsc::UnboundedReceiver<AskRequest>;

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
        then: None,
    }
}

/// `s` on a screen: a screenshot of what the app's model holds; a message for the footer.
pub fn screenshot_message(app: &App, header: &Header, dir: Option<&Path>) -> String {
    let data = ChartData::from_model(&app.model, header, None);
    match write_run_screenshots(&data, header, dir, app.opts.theme.ascii()) {
        Ok(p) => format!("wrote {}", short_paths(&p)),
        Err(e) => format!("screenshot failed: {}", error_chain(&e)),
    }
}

/// Writes to the faces' stream (stdout; stderr under `copyscope pipe`), ignoring errors: after
/// an SSH drop there is no terminal left, and a failed write must not turn a clean cancel into
/// a panic.
fn out(text: &str) {
    use std::io::Write;
    let mut o = crate::frontend::out::face_out();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// Like [`out`] for stderr.
fn err(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// What the live loop hands the session while it runs: every sample, engine event and model
/// event to the recording, the model to `--metrics`, and `s` to the screenshot writer.
struct Hooks<'a> {
    recorder: &'a mut Recorder,
    header: &'a Header,
    screenshot_dir: Option<PathBuf>,
    metrics: Option<&'a MetricsEndpoint>,
    progress: &'a Progress,
    env: &'a Environment,
}

impl LiveHooks for Hooks<'_> {
    fn on_sample(&mut self, s: &Sample) {
        self.recorder.sample(s);
    }
    fn on_events(&mut self, evs: &[Event]) {
        self.recorder.events(evs);
    }
    fn on_engine_event(&mut self, t_ns: u64, ev: &EngineEvent) {
        self.recorder.engine_event(t_ns, ev);
    }
    fn on_model(&mut self, model: &Model) {
        model_stepped(self.metrics, self.progress, self.env, model);
    }
    fn screenshot(&mut self, app: &App) -> String {
        let dir = self.screenshot_dir.as_deref();
        let msg = screenshot_message(app, self.header, dir);
        // Save the run so far beside the pictures, so it can be replayed or exported later.
        let jsonl = dir
            .unwrap_or(Path::new("."))
            .join(format!("{}.jsonl", run_stem(self.header)));
        match self.recorder.save_to(&jsonl) {
            // The recording shares the pictures' name: only its extension is new.
            Ok(()) if msg.starts_with("wrote") => format!("{msg}, .jsonl"),
            _ => msg,
        }
    }
}

/// Runs a planned copy with the TUI and returns its outcome (the summary is printed).
pub fn run_copy_tui(
    config: &Config,
    job: CopyJob,
    (sources, dest): (Vec<String>, String),
    control: Arc<Control>,
    metrics: Option<MetricsEndpoint>,
) -> CopyOutcome {
    let d = &config.display;
    // Always an asker: the free-space question comes under every policy (the engine asks
    // about existing files only under --overwrite=ask).
    let (ask, questions) = TuiConflictAsk::new();
    let ui_header = UiHeader {
        source: sources
            .iter()
            .map(|s| shell_escape(s).into_owned())
            .collect::<Vec<_>>()
            .join(", "),
        dest: shell_escape(&dest).into_owned(),
        fs: String::new(),
    };
    let limit_bps = job.options.bwlimit_bps.map(|b| b as f64);
    let sess = SessionPlan::copy(d, &job, (sources, dest), control)
        .recorded(d.record.as_deref(), true)
        .metrics(metrics)
        .start_copy(job, Some(ask as Arc<dyn crate::copy::ConflictAsk>));
    let mut app = new_app(d, &sess, ui_header);
    app.limit_bps = limit_bps;
    run_session_tui(config, sess, app, Some(questions), d.screenshot.clone())
}

/// The app for a started session: its model on the probed environment, the header's
/// filesystem label filled in.
pub(crate) fn new_app(d: &Display, sess: &Session, ui_header: UiHeader) -> App {
    let model = Model::new(model_config(d), sess.env.clone());
    App::new(
        model,
        UiHeader {
            fs: fs_label(&sess.env),
            ..ui_header
        },
        ui_options(d),
    )
}

/// The screen's last state for an engine's outcome.
fn final_state(o: &CopyOutcome) -> RunState {
    match o.status {
        // The reader of a pipe that closed it had what it wanted (`| head -c 1G`).
        ExitStatus::Success | ExitStatus::Partial | ExitStatus::BrokenPipe => RunState::Done,
        ExitStatus::Cancelled => RunState::Cancelled,
        ExitStatus::Fatal => RunState::Failed,
    }
}

/// Runs a started session (a copy, a watch or a bench phase) under the live loop, with `s`
/// writing into `shots` (the bench takes its own end-of-phase pictures, yet its `s` writes
/// where a copy's does); then prints the summary once the terminal is restored and returns
/// the outcome.
pub(crate) fn run_session_tui(
    config: &Config,
    mut sess: Session,
    app: App,
    questions: Option<Questions>,
    shots: Option<PathBuf>,
) -> CopyOutcome {
    let opts = app.opts;
    let Some(end) = live_loop(&mut sess, app, questions, shots) else {
        return CopyOutcome::crashed("no event loop");
    };
    let LiveEnd {
        app,
        outcome,
        hung_up,
        error,
    } = end;
    sess.stop_sampling();
    if let Some(e) = &error {
        // The terminal could not be set up: the engine already runs; stop it cleanly.
        sess.control.cancel();
        err(&format!("copyscope: cannot use the terminal: {}", said(e)));
    }
    let outcome = outcome.unwrap_or_else(|| CopyOutcome::crashed("the copy did not report back"));
    let writers = sess.progress.writers();
    let finished = sess.finish(app.model, outcome);
    if crate::frontend::tui::panicked() {
        // The hook restored the terminal and printed the panic; the copy was stopped and its
        // temporary files removed. Say so, and fail.
        err(
            "copyscope: internal error (see above): the copy was stopped safely; files already \
             copied are complete, the unfinished one was removed",
        );
        return CopyOutcome {
            status: ExitStatus::Fatal,
            ..finished.outcome
        };
    }
    if hung_up {
        return finished.outcome;
    }
    if error.is_some() {
        let d = &config.display;
        out(&crate::report::plain::summary_text(
            &finished.outcome,
            None,
            d.binary,
        ));
    } else {
        print_summary(&config.display, &finished, opts);
        if finished.header.watch.is_some() {
            out(&crate::report::watch::writers_table(
                &writers,
                config.display.binary,
            ));
        }
    }
    match finished.recording_line() {
        Some(Ok(line)) => out(&format!("{line}\n")),
        Some(Err(e)) => err(&e),
        None => {}
    }
    finished.outcome
}

/// The live loop over the session, on the event loop; `None` (the copy told to stop) when
/// there is no event loop to run it on.
fn live_loop(
    sess: &mut Session,
    app: App,
    questions: Option<Questions>,
    shots: Option<PathBuf>,
) -> Option<LiveEnd<CopyOutcome>> {
    sess.publish(&app.model);
    let rt = match crate::frontend::event_loop() {
        Ok(rt) => rt,
        Err(e) => {
            sess.control.cancel();
            err(&format!(
                "copyscope: cannot start the event loop: {}",
                said(&e)
            ));
            return None;
        }
    };
    let io = LiveIo {
        arrivals: &mut sess.arrivals,
        conflicts: questions,
        control: sess.control.clone(),
        progress: sess.progress.clone(),
        done: &mut sess.done,
        frame_interval: FRAME_INTERVAL,
    };
    let mut hooks = Hooks {
        recorder: &mut sess.recorder,
        header: &sess.header,
        screenshot_dir: shots,
        metrics: sess.metrics.as_ref(),
        progress: &sess.progress,
        env: &sess.env,
    };
    Some(rt.block_on(run_live(app, io, &mut hooks, final_state)))
}

/// The summary after the terminal is restored: the text chart, drops and figures (a
/// watch's, what it watched), then `--screenshot DIR`'s pictures.
fn print_summary(d: &Display, finished: &Finished, opts: UiOptions) {
    let data = finished.chart();
    let width = crossterm::terminal::size().map_or(100, |(w, _)| usize::from(w).clamp(40, 100));
    out(&crate::report::summary::tui_summary(
        &finished.end(),
        &data,
        (opts.theme.ascii(), opts.units),
        width,
    ));
    if let Some(dir) = &d.screenshot {
        match write_run_screenshots(&data, &finished.header, Some(dir), d.ascii) {
            Ok(p) => out(&format!("screenshot: {}\n", join_paths(&p))),
            Err(e) => err(&format!(
                "copyscope: screenshot failed: {}",
                error_chain(&e)
            )),
        }
    }
}
