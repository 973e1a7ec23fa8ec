//! The TUI frontend of a copy: runs a [`Session`] under the live loop, takes screenshots on `s`,
//! and prints the summary once the terminal is restored.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{Config, Display};
use crate::copy::{Control, CopyJob, CopyOutcome, EngineEvent};
use crate::exit::ExitStatus;
use crate::frontend::metrics::MetricsEndpoint;
use crate::frontend::session::{Recorder, Session, fs_label, model_config, summary_of};
use crate::frontend::state::App;
use crate::frontend::tui::{FRAME_INTERVAL, LiveHooks, LiveIo, TuiConflictAsk, run_live};
use crate::model::{Event, Model};
use crate::present::quote::shell_escape;
use crate::present::units::Units;
use crate::report::export::{ChartData, write_screenshot_set};
use crate::report::recording::Header;
use crate::sample::Sample;
use crate::ui::theme::Theme;
use crate::ui::view::{Header as UiHeader, RunState, UiOptions};

/// Default PNG/SVG size for screenshots.
pub const SCREENSHOT_SIZE: (u32, u32) = (1600, 900);

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

/// Writes a screenshot set (PNG, SVG, text, Markdown) of `data` into `dir` (default: the current
/// directory), named after the run's start time.
pub fn screenshot_to(
    data: &ChartData,
    header: &Header,
    dir: Option<&Path>,
    ascii: bool,
) -> Result<Vec<PathBuf>, String> {
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let stamp = header
        .started_at
        .replace([':', '-'], "")
        .replace('T', "-")
        .replace('Z', "");
    let stem = format!("copyscope-{stamp}");
    write_screenshot_set(data, &dir, &stem, SCREENSHOT_SIZE, ascii)
        .map_err(|e| crate::present::quote::error_chain(&e))
}

/// `s` on a screen: a screenshot of what the app's model holds; a message for the footer.
pub fn screenshot_message(app: &App, header: &Header, dir: Option<&Path>) -> String {
    let data = ChartData::from_model(&app.model, header, None);
    match screenshot_to(&data, header, dir, app.opts.theme.ascii()) {
        Ok(p) => format!("wrote {}", short_paths(&p)),
        Err(e) => format!("screenshot failed: {}", crate::present::quote::said(&e)),
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

/// The files of one screenshot set, short enough for the screen: the first path in full
/// (quoted), the others by their extension when they share its directory and name —
/// "wrote ./copyscope-20261130-194207.png, .svg, .txt, .md".
pub fn short_paths(p: &[PathBuf]) -> String {
    let split = |p: &Path| {
        let name = p.file_name()?.to_str()?;
        let dot = name.find('.')?;
        Some((
            p.parent()?.to_path_buf(),
            name[..dot].to_string(),
            name[dot..].to_string(),
        ))
    };
    let Some(first) = p.first() else {
        return String::new();
    };
    let Some((dir, stem, _)) = split(first) else {
        return join_paths(p);
    };
    let mut out = shell_escape(first).into_owned();
    for q in &p[1..] {
        match split(q) {
            Some((d, s, ext)) if d == dir && s == stem => {
                out.push_str(", ");
                out.push_str(&shell_escape(&ext));
            }
            _ => {
                out.push_str(", ");
                out.push_str(&shell_escape(q));
            }
        }
    }
    out
}

fn join_paths(p: &[PathBuf]) -> String {
    p.iter()
        .map(|p| shell_escape(p).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

struct Hooks<'a> {
    recorder: &'a mut Recorder,
    header: &'a Header,
    screenshot_dir: Option<PathBuf>,
    metrics: Option<&'a MetricsEndpoint>,
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
        if let Some(m) = self.metrics {
            m.publish(model);
        }
    }
    fn screenshot(&mut self, app: &App) -> String {
        let msg = screenshot_message(app, self.header, self.screenshot_dir.as_deref());
        // Save the run so far beside the pictures, so it can be replayed or exported later.
        let stamp = self
            .header
            .started_at
            .replace([':', '-'], "")
            .replace('T', "-")
            .replace('Z', "");
        let dir = self
            .screenshot_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        let jsonl = dir.join(format!("copyscope-{stamp}.jsonl"));
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
    sources: Vec<String>,
    dest: String,
    control: Arc<Control>,
    metrics: Option<MetricsEndpoint>,
) -> CopyOutcome {
    let d = &config.display;
    // Always an asker: the free-space question comes under every policy (the engine asks
    // about existing files only under --overwrite=ask).
    let (a, rx) = TuiConflictAsk::new();
    let (ask, conflicts) = (Some(a as Arc<dyn crate::copy::ConflictAsk>), Some(rx));
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
    let mut sess = Session::start(d, job, (sources, dest), control.clone(), ask, true);
    sess.metrics = metrics;
    let mut app = new_app(d, &sess, ui_header);
    app.limit_bps = limit_bps;
    run_session_tui(config, sess, app, conflicts, None)
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

/// Runs a started session (a copy or a watch) under the live loop, then prints the summary
/// once the terminal is restored; returns the outcome.
pub(crate) fn run_session_tui(
    config: &Config,
    sess: Session,
    app: App,
    conflicts: Option<tokio::sync::mpsc::UnboundedReceiver<crate::frontend::tui::AskRequest>>,
    watch: Option<&crate::frontend::watch::WatchLines>,
) -> CopyOutcome {
    let shots = config.display.screenshot.clone();
    run_session_tui_with(config, sess, app, conflicts, watch, shots)
}

/// [`run_session_tui`] with the directory `s` writes into given apart from `--screenshot`
/// (the bench takes its own end-of-phase pictures, yet its `s` writes where a copy's does).
pub(crate) fn run_session_tui_with(
    config: &Config,
    sess: Session,
    app: App,
    conflicts: Option<tokio::sync::mpsc::UnboundedReceiver<crate::frontend::tui::AskRequest>>,
    watch: Option<&crate::frontend::watch::WatchLines>,
    shots: Option<PathBuf>,
) -> CopyOutcome {
    let d = &config.display;
    let opts = app.opts;
    let control = sess.control.clone();
    let Session {
        header,
        mut recorder,
        progress,
        samples,
        engine_events,
        done,
        mut sampler,
        metrics,
        ..
    } = sess;
    if let Some(m) = &metrics {
        m.publish(&app.model);
    }
    let io = LiveIo {
        samples,
        engine_events,
        conflicts,
        control: control.clone(),
        progress,
        done,
        frame_interval: FRAME_INTERVAL,
    };
    let mut hooks = Hooks {
        recorder: &mut recorder,
        header: &header,
        screenshot_dir: shots,
        metrics: metrics.as_ref(),
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
            err(&format!(
                "copyscope: cannot start the event loop: {}",
                crate::present::quote::said(&e)
            ));
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
            err(&format!(
                "copyscope: cannot use the terminal: {}",
                crate::present::quote::said(&e)
            ));
            (None, None, false)
        }
    };
    let outcome = outcome.unwrap_or_else(|| CopyOutcome::crashed("the copy did not report back"));
    if let Some(app) = app.as_mut() {
        let t = app.now_ns;
        let evs = app.model.finish(t);
        recorder.events(&evs);
        if let Some(m) = &metrics {
            m.publish(&app.model);
        }
    }
    let summary = app
        .as_ref()
        .map(|a| summary_of(&outcome, &a.model))
        .unwrap_or_default();
    let rec_err = recorder.finish(&summary);
    if crate::frontend::tui::panicked() {
        // The hook restored the terminal and printed the panic; the copy was stopped and its
        // temporary files removed. Say so, and fail.
        err(
            "copyscope: internal error (see above): the copy was stopped safely; files already \
             copied are complete, the unfinished one was removed",
        );
        return CopyOutcome {
            status: ExitStatus::Fatal,
            ..outcome
        };
    }
    if hung_up {
        return outcome;
    }
    if let Some(app) = app.as_ref() {
        let data = ChartData::from_model(&app.model, &header, Some(&summary));
        let width = crossterm::terminal::size().map_or(100, |(w, _)| usize::from(w).clamp(40, 100));
        out(&crate::report::summary::final_summary_as(
            &data,
            &app.model,
            opts.theme.ascii(),
            opts.units,
            watch.is_none().then_some(&outcome),
            width,
            crate::report::plain::reads(header.bench.as_deref()),
        ));
        if let Some(w) = watch {
            out(&w.summary_text(&outcome, opts.units == Units::Binary));
        }
        if let Some(dir) = &d.screenshot {
            match screenshot_to(&data, &header, Some(dir), d.ascii) {
                Ok(p) => out(&format!("screenshot: {}\n", join_paths(&p))),
                Err(e) => err(&format!(
                    "copyscope: screenshot failed: {}",
                    crate::present::quote::said(&e)
                )),
            }
        }
    } else {
        out(&crate::report::plain::summary_text(
            &outcome, None, d.binary,
        ));
    }
    if let Some(p) = &d.record {
        match rec_err {
            None => out(&format!("recording: {}\n", shell_escape(p))),
            Some(e) => err(&format!(
                "copyscope: recording {}",
                crate::present::quote::file_line(p, &e)
            )),
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_screenshot_set_is_named_once() {
        let p = |s: &str| PathBuf::from(s);
        let set = [
            p("./copyscope-20261130-194207.png"),
            p("./copyscope-20261130-194207.svg"),
            p("./copyscope-20261130-194207.md"),
        ];
        assert_eq!(
            short_paths(&set),
            "./copyscope-20261130-194207.png, .svg, .md"
        );
        // Another directory or name is written in full; names are quoted.
        let mixed = [p("shots/a b.png"), p("elsewhere/a b.svg"), p("shots/c.txt")];
        assert_eq!(
            short_paths(&mixed),
            "'shots/a b.png', 'elsewhere/a b.svg', shots/c.txt"
        );
    }
}
