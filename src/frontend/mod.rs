//! The frontends: the live TUI, replay, plain/JSON streaming and the demo, and the choice
//! between them — the top-level dispatch that runs the command a [`Config`] describes.
//! The loops here own the model; `ui/` only draws and `report/` only writes files.

pub mod bench;
pub mod caps;
pub mod demo;
pub mod live;
pub mod man;
pub mod metrics;
pub mod replay;
pub mod session;
pub mod state;
pub mod stream;
pub mod tui;
pub mod update;
pub mod watch;

use crate::present::quote::error_chain;
use std::sync::Arc;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::config::{Command, Config};
use crate::copy::{Control, CopyJob, OverwritePolicy, SignalGuard, install_signal_handlers};
use crate::exit::ExitStatus;
use crate::report::prompt::StdinAsk;

/// Which output a copy uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frontend {
    /// A progress line every 2 s and a summary.
    Plain,
    /// JSON lines.
    Json,
    /// The live chart (stdout is a terminal, neither `--plain` nor `--json`).
    Tui,
}

/// A fresh [`Control`] with SIGINT, SIGTERM, SIGHUP and SIGQUIT wired to cancel it (while the
/// guard lives); `None` after printing why when the handlers cannot be installed.
pub(crate) fn control_with_signals() -> Option<(Arc<Control>, SignalGuard)> {
    let control = Arc::new(Control::default());
    match install_signal_handlers(control.clone()) {
        Ok(guard) => Some((control, guard)),
        Err(e) => {
            eprintln!(
                "copyscope: cannot install signal handlers: {}",
                crate::present::quote::said(&e)
            );
            None
        }
    }
}

/// The event loop the TUI and the plain/JSON loops wait on: one thread, timers and I/O.
pub(crate) fn event_loop() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// `--json` → JSON; otherwise plain. The lead's TUI takes over here when stdout is a
/// terminal and neither `--plain` nor `--json` was given.
pub fn choose_frontend(config: &Config) -> Frontend {
    use std::io::IsTerminal;
    if config.display.json {
        Frontend::Json
    } else if config.display.plain || !std::io::stdout().is_terminal() {
        Frontend::Plain
    } else {
        Frontend::Tui
    }
}

/// Falls back to what the terminal and locale can show: plain output when the TUI cannot run
/// there (TERM=dumb, unset, or without a terminfo entry; said once on stderr), ASCII glyphs
/// when the locale is not UTF-8.
fn adapt_to_terminal(config: &mut Config) {
    use std::io::IsTerminal;
    let d = &mut config.display;
    if !caps::utf8_locale(&caps::env_var) {
        d.ascii = true;
    }
    if !d.plain
        && !d.json
        && std::io::stdout().is_terminal()
        && let Some(why) = caps::tui_blocker(&caps::env_var)
    {
        eprintln!("copyscope: {why}: plain output (the live chart needs a full-screen terminal)");
        d.plain = true;
    }
}

/// What the header shows for a request: the sources, and the destination (the target
/// directory when there are several sources). Sources that could not be stat'ed (already
/// reported) are left out.
fn endpoints(request: &crate::copy::CopyRequest, job: &CopyJob) -> (Vec<String>, String) {
    let sources = request
        .pairs
        .iter()
        .filter(|p| !job.missing.iter().any(|(m, _)| *m == p.source))
        .map(|p| p.source.display().to_string())
        .collect();
    let dest = match request.pairs.as_slice() {
        [one] => one.dest.display().to_string(),
        [first, ..] => first
            .dest
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        [] => String::new(),
    };
    (sources, dest)
}

/// `--metrics ADDR`: the endpoint, listening before anything is copied or watched; `Err`
/// after saying why it cannot listen.
pub(crate) fn start_metrics(
    config: &Config,
    mode: &'static str,
) -> Result<Option<metrics::MetricsEndpoint>, ExitStatus> {
    let Some(addr) = config.display.metrics else {
        return Ok(None);
    };
    match metrics::MetricsEndpoint::start(addr, mode) {
        Ok(m) => {
            eprintln!(
                "copyscope: metrics at http://{}/metrics (no authentication)",
                m.local_addr()
            );
            Ok(Some(m))
        }
        Err(e) => {
            eprintln!("copyscope: {}", crate::present::quote::said(&e));
            Err(ExitStatus::Fatal)
        }
    }
}

/// Runs a planned copy with the frontend the configuration calls for (and the metrics
/// endpoint, when one was started, fed from its model).
pub fn run_planned(
    config: &Config,
    job: CopyJob,
    endpoints: (Vec<String>, String),
    control: Arc<Control>,
    metrics: Option<metrics::MetricsEndpoint>,
) -> crate::copy::CopyOutcome {
    if choose_frontend(config) == Frontend::Tui {
        crate::frontend::live::run_copy_tui(config, job, endpoints, control, metrics)
    } else {
        // -i/--overwrite=ask without the TUI: cp's question on stderr, the answer from stdin.
        // Without the flag the default is cp's: overwrite.
        let ask = (config.overwrite_explicit && job.options.overwrite == OverwritePolicy::Ask)
            .then(|| Arc::new(StdinAsk::default()));
        crate::frontend::stream::run_copy(&config.display, job, endpoints, control, ask, metrics)
    }
}

/// Runs the configured command and returns its exit status (messages already printed).
pub fn run(mut config: Config) -> ExitStatus {
    adapt_to_terminal(&mut config);
    match &config.command {
        Command::Copy(request) => {
            let job = match CopyJob::plan(request) {
                Ok(j) => j,
                Err(e) => {
                    eprintln!("copyscope: {}", crate::present::quote::said(&e));
                    return ExitStatus::Fatal;
                }
            };
            let Some((control, _signals)) = control_with_signals() else {
                return ExitStatus::Fatal;
            };
            // cp: a source that cannot be stat'ed is reported, the others are copied, exit 1.
            // With nothing left to copy, the messages are all there is (the engine reports them
            // as failures otherwise).
            if job.roots.is_empty() {
                for (_, msg) in &job.missing {
                    eprintln!("copyscope: {msg}");
                }
                return ExitStatus::Partial;
            }
            let endpoints = endpoints(request, &job);
            let metrics = match start_metrics(&config, "copy") {
                Ok(m) => m,
                Err(status) => return status,
            };
            run_planned(&config, job, endpoints, control, metrics).status
        }
        Command::Demo { size_mb, replay } => {
            if *replay && let Err(e) = crate::frontend::demo::replay_bundled(&config) {
                eprintln!("copyscope demo: {}", error_chain(&e));
                return ExitStatus::Fatal;
            }
            crate::frontend::demo::run(*size_mb, &config)
        }
        Command::Watch(req) => crate::frontend::watch::run(&config, req),
        Command::Bench(req) => crate::frontend::bench::run(&config, req),
        Command::Completions(shell) => {
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "copyscope", &mut std::io::stdout());
            ExitStatus::Success
        }
        Command::Man => match crate::frontend::man::render(&mut std::io::stdout().lock()) {
            Ok(()) => ExitStatus::Success,
            Err(e) => {
                eprintln!("copyscope: {}", crate::present::quote::said(&e));
                ExitStatus::Fatal
            }
        },
        Command::Replay { file, .. } | Command::Export { file, .. } if !file.exists() => {
            eprintln!(
                "copyscope: {} does not exist (a recording is made with --record FILE)",
                crate::present::quote::quote(file)
            );
            ExitStatus::Fatal
        }
        Command::Replay { file, speed } => {
            let cfg = crate::frontend::session::model_config(&config.display);
            let opts = crate::frontend::live::ui_options(&config.display);
            if choose_frontend(&config) == Frontend::Tui {
                match event_loop().map_err(anyhow::Error::from).and_then(|rt| {
                    rt.block_on(crate::frontend::replay::run_tui(file, cfg, opts, *speed))
                }) {
                    Ok(()) => ExitStatus::Success,
                    Err(e) => {
                        eprintln!("copyscope: {}", error_chain(&e));
                        ExitStatus::Fatal
                    }
                }
            } else {
                if let Some(dir) = &config.display.screenshot {
                    match crate::frontend::replay::screenshot(file, dir, config.display.ascii) {
                        Ok(paths) => {
                            for p in paths {
                                eprintln!(
                                    "screenshot: {}",
                                    crate::present::quote::shell_escape(&p)
                                );
                            }
                        }
                        Err(e) => {
                            eprintln!("copyscope: screenshot failed: {e:#}");
                            return ExitStatus::Fatal;
                        }
                    }
                }
                let text = if config.display.json {
                    crate::frontend::replay::run_json(file, cfg)
                } else {
                    crate::frontend::replay::run_plain(file, cfg, opts)
                };
                match text {
                    Ok(text) => {
                        print!("{text}");
                        ExitStatus::Success
                    }
                    Err(e) => {
                        eprintln!("copyscope: {}", error_chain(&e));
                        ExitStatus::Fatal
                    }
                }
            }
        }
        Command::Compare(req) => {
            compare(req, crate::frontend::session::model_config(&config.display))
        }
        Command::Report { file, output } => report(
            file,
            output.as_deref(),
            crate::frontend::session::model_config(&config.display),
            config.display.ascii,
        ),
        Command::Export {
            file,
            png,
            svg,
            text,
            markdown,
            size,
            picture,
            force,
        } => {
            let targets = crate::report::export::ExportTargets {
                png: png.clone(),
                svg: svg.clone(),
                text: text.clone(),
                markdown: markdown.clone(),
            };
            let size = size.unwrap_or(crate::report::screenshot::SCREENSHOT_SIZE);
            let look = crate::report::export::Look {
                title: picture.title.as_deref(),
                ymax_bps: picture.ymax_bps,
                duration_s: None,
                unit: picture
                    .unit
                    .map(|(divisor, label)| crate::present::axis::RateUnit { divisor, label }),
            };
            match crate::report::export::run_export_look(
                file,
                &targets,
                size,
                config.display.ascii,
                crate::frontend::session::model_config(&config.display),
                &look,
                *force,
            ) {
                Ok(paths) => {
                    for p in paths {
                        println!("wrote {}", crate::present::quote::shell_escape(&p));
                    }
                    ExitStatus::Success
                }
                Err(e) => {
                    eprintln!("copyscope: {}", error_chain(&e));
                    ExitStatus::Fatal
                }
            }
        }
    }
}

/// `copyscope report`: the recording's Markdown report, to a file or standard output.
fn report(
    file: &std::path::Path,
    output: Option<&std::path::Path>,
    cfg: crate::model::ModelConfig,
    ascii: bool,
) -> ExitStatus {
    let text = match crate::report::forum::render_report(file, cfg, ascii) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("copyscope: {}", error_chain(&e.into()));
            return ExitStatus::Fatal;
        }
    };
    let written = match output {
        Some(p) => std::fs::write(p, text.as_bytes())
            .map(|()| println!("wrote {}", crate::present::quote::shell_escape(p))),
        None => std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()),
    };
    match written {
        Ok(()) => ExitStatus::Success,
        Err(e) => {
            eprintln!("copyscope: cannot write the report: {e}");
            ExitStatus::Fatal
        }
    }
}

/// `copyscope compare` (and `export --compare`): loads every recording through the model and
/// writes the picture and the side-by-side table. Without named outputs: `compare.png` and
/// `compare.md` in the current directory, never overwritten without `--force`.
fn compare(req: &crate::config::CompareRequest, cfg: crate::model::ModelConfig) -> ExitStatus {
    use crate::present::axis::RateUnit;
    use crate::report::export::ExportTargets;
    use crate::report::export::compare::{CompareLook, load_runs, write_compare};
    if let Some(missing) = req.files.iter().find(|f| !f.exists()) {
        eprintln!(
            "copyscope: {} does not exist (a recording is made with --record FILE)",
            crate::present::quote::quote(missing)
        );
        return ExitStatus::Fatal;
    }
    let named = ExportTargets {
        png: req.png.clone(),
        svg: req.svg.clone(),
        text: req.text.clone(),
        markdown: req.markdown.clone(),
    };
    let targets = if named.is_empty() {
        let all = ExportTargets {
            png: Some("compare.png".into()),
            markdown: Some("compare.md".into()),
            ..ExportTargets::default()
        };
        let existing = all.existing();
        if !req.force && !existing.is_empty() {
            eprintln!(
                "copyscope: {}",
                crate::report::export::TargetError::WouldOverwrite(existing)
            );
            return ExitStatus::Fatal;
        }
        all
    } else {
        if let Err(e) = named.check_extensions() {
            eprintln!("copyscope: {e}");
            return ExitStatus::Fatal;
        }
        named
    };
    let look = CompareLook {
        title: req.picture.title.clone(),
        ymax_bps: req.picture.ymax_bps,
        unit: req
            .picture
            .unit
            .map(|(divisor, label)| RateUnit { divisor, label }),
        overlay: req.overlay,
    };
    let n = req.files.len() as u32;
    let size = req.size.unwrap_or(if req.overlay {
        crate::report::screenshot::SCREENSHOT_SIZE
    } else {
        (1600, 600 * n + if look.title.is_some() { 48 } else { 0 })
    });
    let result = load_runs(&req.files, &req.labels, cfg)
        .and_then(|runs| write_compare(&runs, &look, &targets, size));
    match result {
        Ok(paths) => {
            for p in paths
                .iter()
                .filter(|p| p.as_path() != std::path::Path::new("-"))
            {
                println!("wrote {}", crate::present::quote::shell_escape(p));
            }
            ExitStatus::Success
        }
        Err(e) => {
            eprintln!("copyscope: {}", error_chain(&e));
            ExitStatus::Fatal
        }
    }
}
