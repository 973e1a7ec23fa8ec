//! `copyscope replay FILE`: re-draws a recording in the same TUI (same model, widgets and
//! events) with playback speed, pause and seek; `--plain` prints its summary instead.

use std::path::Path;
use std::time::Instant;

use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use tokio::signal::unix::{SignalKind, signal};

use crate::copy::EngineEvent;
use crate::frontend::state::{Action, App};
use crate::frontend::tui::{FRAME_INTERVAL, TerminalGuard};
use crate::model::{Model, ModelConfig, ReplayItem};
use crate::report::recording::{Recording, Replayed};
use crate::sample::Sample;
use crate::ui::view::{Header, ReplayStatus, RunState, UiOptions};

/// One item of the recording's timeline.
#[derive(Debug, Clone, Copy)]
enum Item<'a> {
    Sample(&'a Sample),
    Engine(u64, &'a EngineEvent),
}

impl Item<'_> {
    fn t_ns(&self) -> u64 {
        match self {
            Item::Sample(s) => s.t_ns,
            Item::Engine(t, _) => *t,
        }
    }
}

/// The recording's timeline ([`Recording::replay_items`]) as replay items.
fn timeline(rec: &Recording) -> Vec<Item<'_>> {
    rec.replay_items()
        .into_iter()
        .map(|i| match i {
            ReplayItem::Sample(s) => Item::Sample(s),
            ReplayItem::Engine { t_ns, event } => Item::Engine(t_ns, event),
        })
        .collect()
}

/// The header line facts of a recording.
pub fn header_of(rec: &Recording) -> Header {
    let env = &rec.header.environment;
    let fs = match (&env.fs_type, &env.zfs_dataset, &env.mount_source) {
        (Some(t), Some(ds), _) => format!("{t} {ds}"),
        (Some(t), None, Some(src)) => format!("{t} {src}"),
        (Some(t), None, None) => t.clone(),
        _ => String::new(),
    };
    Header {
        source: rec.header.sources.join(", "),
        dest: rec.header.destination.clone(),
        fs,
    }
}

/// The model's settings for a recording ([`Recording::model_config`]).
fn for_recording(rec: &Recording, cfg: ModelConfig) -> ModelConfig {
    rec.model_config(cfg)
}

/// A model fed with the whole recording: what `replay --plain` and `export` summarise.
pub fn replay_model(rec: &Recording, cfg: ModelConfig) -> Model {
    rec.model(cfg)
}

/// Applies timeline items up to `pos_ns`; returns the index of the next unapplied item.
fn advance(app: &mut App, items: &[Item<'_>], mut next: usize, pos_ns: u64) -> usize {
    while next < items.len() && items[next].t_ns() <= pos_ns {
        match items[next] {
            Item::Sample(s) => {
                app.on_sample(s);
            }
            Item::Engine(t, e) => {
                app.on_engine(t, e);
            }
        }
        next += 1;
    }
    next
}

/// The replay screen's state at `t_ns` into the recording (tests and seeking use it).
pub fn app_at(rec: &Recording, cfg: ModelConfig, opts: UiOptions, t_ns: u64) -> App {
    let mut app = App::new(
        Model::new(for_recording(rec, cfg), rec.header.environment.clone()),
        header_of(rec),
        opts,
    );
    let items = timeline(rec);
    advance(&mut app, &items, 0, t_ns);
    app.now_ns = t_ns.max(app.now_ns);
    app
}

/// Playback speeds cycled with `x`.
const SPEEDS: [f64; 4] = [1.0, 10.0, 100.0, f64::INFINITY];

/// Runs the interactive replay until the user quits.
pub async fn run_tui(
    path: &Path,
    cfg: ModelConfig,
    opts: UiOptions,
    speed: f64,
) -> anyhow::Result<()> {
    let rec = Recording::load(path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read recording {}",
            crate::present::quote::file_line(path, &e.to_string())
        )
    })?;
    let items = timeline(&rec);
    let total = rec.duration_ns();
    let fresh_app = |rec: &Recording| {
        let mut app = App::new(
            Model::new(for_recording(rec, cfg), rec.header.environment.clone()),
            header_of(rec),
            opts,
        );
        app.state = RunState::Replay;
        app.replay = Some(ReplayStatus {
            speed,
            paused: false,
            total_ns: total,
        });
        app
    };
    let mut app = fresh_app(&rec);
    let mut next = 0usize;
    let mut pos: u64 = 0;
    let mut guard = TerminalGuard::enter()?;
    let mut keys = EventStream::new();
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut frame = tokio::time::interval(FRAME_INTERVAL);
    frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last = Instant::now();
    loop {
        tokio::select! {
            _ = sigterm.recv() => break,
            _ = sighup.recv() => break,
            maybe = keys.next() => {
                let Some(Ok(ev)) = maybe else { break };
                if let TermEvent::Key(k) = ev {
                    let status = app.replay.unwrap_or(ReplayStatus { speed, paused: false, total_ns: total });
                    let mut seek_to: Option<u64> = None;
                    match app.handle_key(k) {
                        Action::Quit | Action::Cancel => break,
                        Action::TogglePause => {
                            app.replay = Some(ReplayStatus { paused: !status.paused, ..status });
                        }
                        Action::CycleSpeed => {
                            let i = SPEEDS.iter().position(|s| *s == status.speed).map_or(0, |i| (i + 1) % SPEEDS.len());
                            app.replay = Some(ReplayStatus { speed: SPEEDS[i], ..status });
                        }
                        Action::Seek(d) => seek_to = Some(pos.saturating_add_signed(d).min(total)),
                        Action::SeekStart => seek_to = Some(0),
                        Action::SeekEnd => seek_to = Some(total),
                        Action::Screenshot => {
                            let msg = crate::frontend::live::screenshot_message(&app, &rec.header, None);
                            app.status = Some((msg, app.now_ns));
                        }
                        _ => {}
                    }
                    if let Some(target) = seek_to {
                        if target < pos {
                            // The model only moves forward: rebuild it up to the target.
                            let view = app.view;
                            let replay = app.replay;
                            app = fresh_app(&rec);
                            app.view = view;
                            app.replay = replay;
                            next = 0;
                        }
                        pos = target;
                        next = advance(&mut app, &items, next, pos);
                        app.now_ns = pos;
                    }
                }
            }
            _ = frame.tick() => {
                let dt = last.elapsed();
                last = Instant::now();
                if let Some(st) = app.replay
                    && !st.paused && pos < total {
                        pos = if st.speed.is_infinite() {
                            total
                        } else {
                            (pos as f64 + dt.as_nanos() as f64 * st.speed).min(total as f64) as u64
                        };
                        next = advance(&mut app, &items, next, pos);
                        app.now_ns = pos.max(app.now_ns);
                    }
                if guard.draw(&app).is_err() {
                    break;
                }
            }
        }
    }
    drop(guard);
    Ok(())
}

/// `replay --plain`: the same summary the TUI prints after a copy.
pub fn run_plain(path: &Path, cfg: ModelConfig, opts: UiOptions) -> anyhow::Result<String> {
    let run = stream(path, cfg)?;
    let data = crate::report::export::ChartData::from_replayed(&run);
    Ok(crate::report::summary::final_summary(
        &data,
        &run.model,
        opts.theme.ascii(),
        opts.units,
        None,
        100,
    ))
}

/// `replay --json`: the recording through the model, as JSON lines — each of the model's
/// events (`"type": "diagnosis"`, as a live `--json` copy prints them) and one final
/// `"type": "summary"` object with the model's figures.
pub fn run_json(path: &Path, cfg: ModelConfig) -> anyhow::Result<String> {
    let run = stream(path, cfg)?;
    let (model, rec) = (&run.model, &run);
    let mut out = String::new();
    for e in model.events() {
        let mut v = serde_json::to_value(e)?;
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("type".into(), "diagnosis".into());
            m.insert("t".into(), ((e.t_ns as f64 / 1e6).round() / 1e3).into());
            m.insert("text".into(), e.describe().into());
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    let mut summary = crate::report::json::stats_json(&model.stats());
    if let serde_json::Value::Object(m) = &mut summary {
        m.insert("type".into(), "summary".into());
        m.insert(
            "recording".into(),
            path.to_string_lossy().into_owned().into(),
        );
        if let Some(s) = &rec.summary {
            m.insert("files_copied".into(), s.files.into());
            m.insert("files_failed".into(), s.failed.into());
            m.insert("exit_code".into(), s.exit_code.into());
        }
    }
    out.push_str(&summary.to_string());
    out.push('\n');
    Ok(out)
}

/// `replay --plain/--json --screenshot DIR`: the pictures of the whole recording.
pub fn screenshot(path: &Path, dir: &Path, ascii: bool) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let run = stream(path, ModelConfig::default())?;
    let data = crate::report::export::ChartData::from_replayed(&run);
    crate::frontend::live::screenshot_to(&data, &run.header, Some(dir), ascii)
        .map_err(anyhow::Error::msg)
}

/// The recording at `path` streamed into a model (bounded memory: no sample is kept), or an
/// error that names it (quoted).
fn stream(path: &Path, cfg: ModelConfig) -> anyhow::Result<Replayed> {
    Replayed::load(path, cfg).map_err(|e| {
        anyhow::anyhow!(
            "cannot read recording {}",
            crate::present::quote::file_line(path, &e.to_string())
        )
    })
}
