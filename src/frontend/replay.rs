//! `copyscope replay FILE`: re-draws a recording in the same TUI (same model, widgets and
//! events) with playback speed, pause and seek; `--plain` prints its summary instead.

use std::path::Path;
use std::time::Instant;

use crate::frontend::state::App;
use crate::frontend::tui::{
    FRAME_INTERVAL, LiveHooks, Shell, TerminalGuard, TuiSignals, on_key, spawn_key_reader,
};
use crate::frontend::update::{Event, ReplayItem, State, Timeline};
use crate::model::whatif::Hindsight;
use crate::model::{self, Model, ModelConfig};
use crate::report::recording::{Header as RecHeader, Recording, RecordingCursor, Replayed};
use crate::ui::view::{Header, UiOptions};

/// The recording's timeline ([`Recording::replay_items`]) as owned replay items.
fn timeline(rec: &Recording) -> Vec<ReplayItem> {
    rec.replay_items()
        .into_iter()
        .map(|i| match i {
            model::ReplayItem::Sample(s) => ReplayItem::Sample(Box::new(s.clone())),
            model::ReplayItem::Engine { t_ns, event } => ReplayItem::Engine(t_ns, event.clone()),
        })
        .collect()
}

/// The header line facts of a recording.
pub fn header_of(rec: &Recording) -> Header {
    header_line(&rec.header)
}

/// The header line facts of a recording's header.
fn header_line(header: &RecHeader) -> Header {
    Header {
        source: header.sources.join(", "),
        dest: header.destination.clone(),
        fs: crate::frontend::session::fs_label(&header.environment),
    }
}

/// The model's settings for a recording ([`Recording::model_config`]).
fn for_recording(rec: &Recording, cfg: ModelConfig) -> ModelConfig {
    rec.model_config(cfg)
}

/// The interactive replay's state at its start, streaming the file at `path` (the model's
/// compacted series is all it keeps; a seek backwards reads the file again from the top).
pub fn replay_state_streamed(
    path: &Path,
    cfg: ModelConfig,
    opts: UiOptions,
    speed: f64,
) -> anyhow::Result<(State, RecHeader)> {
    let (cursor, header, total_ns) = RecordingCursor::open(path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read recording {}",
            crate::present::quote::file_line(path, &e.to_string())
        )
    })?;
    let shell = Recording::new(header);
    let app = replay_app(
        Model::new(shell.model_config(cfg), shell.header.environment.clone()),
        &shell.header,
        header_line(&shell.header),
        opts,
    );
    let timeline = Timeline::Stream(Box::new(cursor));
    Ok((State::replay(app, timeline, total_ns, speed), shell.header))
}

/// The replay screen over `model`: a watch's recording is drawn as the watch was (its intake
/// row, its writers or its pipeline's stages), not as a copy of unknown size.
fn replay_app(model: Model, rec: &RecHeader, header: Header, opts: UiOptions) -> App {
    let mut app = App::new(model, header, opts);
    app.watch = rec.watch.is_some();
    app
}

/// A model fed with the whole recording: what `replay --plain` and `export` summarise.
pub fn replay_model(rec: &Recording, cfg: ModelConfig) -> Model {
    rec.model(cfg)
}

/// The replay's state at its start: the app on the recording's model, and the timeline.
pub fn replay_state(rec: &Recording, cfg: ModelConfig, opts: UiOptions, speed: f64) -> State {
    let app = replay_app(
        Model::new(for_recording(rec, cfg), rec.header.environment.clone()),
        &rec.header,
        header_of(rec),
        opts,
    );
    State::replay(app, timeline(rec), rec.duration_ns(), speed)
}

/// The replay screen's state at `t_ns` into the recording, as a live screen showed it then
/// (tests use it).
pub fn app_at(rec: &Recording, cfg: ModelConfig, opts: UiOptions, t_ns: u64) -> App {
    let mut app = replay_app(
        Model::new(for_recording(rec, cfg), rec.header.environment.clone()),
        &rec.header,
        header_of(rec),
        opts,
    );
    for item in rec.replay_items() {
        match item {
            model::ReplayItem::Sample(s) if s.t_ns <= t_ns => {
                app.on_sample(s);
            }
            model::ReplayItem::Engine { t_ns: t, event } if t <= t_ns => {
                app.on_engine(t, event);
            }
            _ => break,
        }
    }
    app.now_ns = t_ns.max(app.now_ns);
    app
}

/// Runs the interactive replay until the user quits: the same key reader, [`update`] and
/// [`Shell`] as the live TUI (no crossterm EventStream: it spins on a hung-up terminal).
pub async fn run_tui(
    path: &Path,
    cfg: ModelConfig,
    opts: UiOptions,
    speed: f64,
) -> anyhow::Result<()> {
    let (mut st, header) = replay_state_streamed(path, cfg, opts, speed)?;
    let mut hooks = ReplayHooks { header: &header };
    let mut sh = Shell {
        guard: TerminalGuard::enter()?,
        control: None,
        reply: None,
        hooks: &mut hooks,
    };
    let mut keys = spawn_key_reader();
    let mut signals = TuiSignals::listen()?;
    let mut frame = tokio::time::interval(FRAME_INTERVAL);
    frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last = Instant::now();
    let mut keys_open = true;
    while !st.quit {
        tokio::select! {
            ev = signals.next() => sh.step(&mut st, ev),
            maybe = keys.recv(), if keys_open => {
                keys_open = on_key(&mut sh, &mut st, maybe);
            }
            _ = frame.tick() => {
                let elapsed_ns = last.elapsed().as_nanos() as u64;
                last = Instant::now();
                sh.step(&mut st, Event::Tick { elapsed_ns, cancelling: None });
            }
        }
    }
    drop(sh);
    Ok(())
}

/// A replay records nothing; `s` writes the pictures of what it has shown so far.
struct ReplayHooks<'a> {
    header: &'a crate::report::recording::Header,
}

impl LiveHooks for ReplayHooks<'_> {
    fn screenshot(&mut self, app: &App) -> String {
        crate::frontend::live::screenshot_message(app, self.header, None)
    }
}

/// `replay --plain`: the same summary the TUI prints after a copy.
/// A `--pace auto` recording ends with its comparison with the unpaced run, as the live
/// summary did.
pub fn run_plain(path: &Path, cfg: ModelConfig, opts: UiOptions) -> anyhow::Result<String> {
    let (run, pace_check) = stream_checked(path, cfg)?;
    let data = crate::report::export::ChartData::from_replayed(&run);
    let mut text = crate::report::summary::final_summary(
        &data,
        &run.model,
        opts.theme.ascii(),
        opts.units,
        None,
        100,
    );
    if let Some(c) = &pace_check {
        text.push_str(&crate::report::summary::pace_check_text(
            c,
            opts.theme.ascii(),
        ));
    }
    Ok(text)
}

/// `replay --json`: the recording through the model, as JSON lines
/// ([`crate::report::summary::replay_json`]).
pub fn run_json(path: &Path, cfg: ModelConfig) -> anyhow::Result<String> {
    let (run, pace_check) = stream_checked(path, cfg)?;
    Ok(crate::report::summary::replay_json(
        &run,
        path,
        pace_check.as_ref(),
    ))
}

/// `replay --plain/--json --screenshot DIR`: the pictures of the whole recording.
pub fn screenshot(path: &Path, dir: &Path, ascii: bool) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let run = stream(path, ModelConfig::default())?;
    let data = crate::report::export::ChartData::from_replayed(&run);
    // The causes said as every other error is, one line.
    crate::report::screenshot::write_run_screenshots(&data, &run.header, Some(dir), ascii)
        .map_err(|e| anyhow::Error::msg(crate::present::quote::error_chain(&e)))
}

/// The recording at `path` streamed into a model (bounded memory: no sample is kept), or an
/// error that names it (quoted).
fn stream(path: &Path, cfg: ModelConfig) -> anyhow::Result<Replayed> {
    Replayed::load(path, cfg).map_err(|e| cannot_read(path, &e))
}

/// [`stream`], and for a `--pace auto` recording its comparison with the unpaced run
/// predicted from its rates (or why there is none).
fn stream_checked(path: &Path, cfg: ModelConfig) -> anyhow::Result<(Replayed, PaceCheck)> {
    // The header alone tells whether the run was paced: an unpaced one is not observed.
    let paced =
        RecordingCursor::open(path).is_ok_and(|(_, h, _)| Hindsight::wanted(&h.environment));
    if !paced {
        return Ok((stream(path, cfg)?, None));
    }
    let mut seen = Hindsight::default();
    let run = Replayed::load_observed(path, cfg, &mut |s| seen.sample(s))
        .map_err(|e| cannot_read(path, &e))?;
    let check = seen
        .compare(&run.model, run.header.interval_ms.saturating_mul(1_000_000))
        .map_err(|e| e.to_string());
    Ok((run, Some(check)))
}

/// A paced run's comparison with its unpaced twin, when the run was paced.
type PaceCheck = Option<Result<crate::model::whatif::PaceComparison, String>>;

fn cannot_read(path: &Path, e: &crate::report::recording::RecordingError) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot read recording {}",
        crate::present::quote::file_line(path, &e.to_string())
    )
}
