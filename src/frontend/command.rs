//! The top-level dispatch: runs the command a [`Config`] describes, each in a function of its
//! own. What ends a command early goes back to `main` as one error, said there once.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::config::{Command, CompareRequest, Config};
use crate::copy::CopyJob;
use crate::exit::{ExitStatus, Fatal};
use crate::frontend::session::model_config;
use crate::frontend::{
    Frontend, adapt_to_terminal, choose_frontend, control_with_signals, endpoints, event_loop,
    run_planned, start_metrics,
};
use crate::model::ModelConfig;
use crate::present::quote::{error_chain, quote, said, shell_escape};
use crate::report::screenshot::SCREENSHOT_SIZE;

/// Runs the configured command and returns its exit status, or the error that ended it.
pub fn run(mut config: Config) -> anyhow::Result<ExitStatus> {
    adapt_to_terminal(&mut config);
    Ok(match &config.command {
        Command::Copy(request) => copy(&config, request)?,
        Command::Demo { size_mb, replay } => {
            if *replay {
                crate::frontend::demo::replay_bundled(&config)
                    .map_err(|e| Fatal::of("demo", error_chain(&e)))?;
            }
            crate::frontend::demo::run(*size_mb, &config)?
        }
        Command::Watch(req) => crate::frontend::watch::run(&config, req)?,
        Command::Pipe(req) => crate::frontend::pipe::run(&config, req)?,
        Command::Bench(req) => crate::frontend::bench::run(&config, req)?,
        Command::Completions(shell) => {
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "copyscope", &mut std::io::stdout());
            ExitStatus::Success
        }
        Command::Man => {
            crate::frontend::man::render(&mut std::io::stdout().lock())
                .map_err(|e| Fatal::new(said(&e)))?;
            ExitStatus::Success
        }
        Command::Replay { file, .. } | Command::Export { file, .. } if !file.exists() => {
            return Err(missing(file).into());
        }
        Command::Replay { file, speed } => replay(&config, file, *speed)?,
        Command::Compare(req) => compare(req, model_config(&config.display))?,
        Command::Report { file, output } => report(
            file,
            output.as_deref(),
            model_config(&config.display),
            config.display.ascii,
        )?,
        Command::Export { .. } => export(&config)?,
        Command::Whatif(req) => whatif(req, model_config(&config.display), config.display.ascii)?,
    })
}

/// The recording predicted under the request's changes, held to `--against`'s run when given
/// (the prediction is then of that run's copy: its size, its flush).
fn whatif_outcome(
    req: &crate::config::WhatifRequest,
    cfg: ModelConfig,
) -> anyhow::Result<crate::report::whatif::Outcome> {
    use crate::report::whatif::{Twin, load, outcome};
    let name = |f: &Path| {
        f.file_name().map_or_else(
            || shell_escape(f).into_owned(),
            |n| shell_escape(n).into_owned(),
        )
    };
    let rec = load(&req.file, cfg)?;
    let twin = req.against.as_deref().map(|f| load(f, cfg)).transpose()?;
    if let Some(t) = &twin {
        let fs = |r: &crate::report::whatif::Recorded| {
            r.measured
                .env
                .fs_type
                .clone()
                .unwrap_or_else(|| "unknown".into())
        };
        if fs(t) != fs(&rec) {
            anyhow::bail!(
                "--against: that run wrote onto {}, the recording onto {}: not the same destination",
                fs(t),
                fs(&rec)
            );
        }
    }
    let scenario = crate::model::whatif::Scenario {
        settings: req.settings.clone(),
        model: cfg,
        bytes: twin.as_ref().map(|t| t.measured.bytes),
        flush: twin.as_ref().map(|t| t.measured.flushed),
    };
    let twin = twin
        .zip(req.against.as_deref())
        .map(|(t, f)| Twin::of(&t, &name(f)));
    outcome(&rec, &scenario, &name(&req.file), twin)
}

/// `copyscope whatif FILE --set …`: the prediction's summary on standard output (unless the
/// text goes there), and the pictures and text asked for.
fn whatif(
    req: &crate::config::WhatifRequest,
    cfg: ModelConfig,
    ascii: bool,
) -> Result<ExitStatus, Fatal> {
    use crate::report::export::ExportTargets;
    use crate::report::whatif::write_outputs;
    if let Some(f) = std::iter::once(&req.file)
        .chain(&req.against)
        .find(|f| !f.exists())
    {
        return Err(missing(f));
    }
    let targets = ExportTargets {
        png: req.png.clone(),
        svg: req.svg.clone(),
        text: req.text.clone(),
        markdown: None,
    };
    targets
        .check_extensions()
        .map_err(|e| Fatal::new(e.to_string()))?;
    let o = whatif_outcome(req, cfg).map_err(|e| Fatal::new(error_chain(&e)))?;
    if req.text.as_deref() != Some(Path::new("-")) {
        let summary = o.summary();
        say(&if ascii {
            crate::present::text::asciify(&summary)
        } else {
            summary
        })?;
    }
    let size = req.size.unwrap_or(if req.overlay {
        SCREENSHOT_SIZE
    } else {
        (1600, if o.twin.is_some() { 1848 } else { 1248 })
    });
    let paths = write_outputs(&o, &targets, size, ascii, req.overlay)
        .map_err(|e| Fatal::new(error_chain(&e)))?;
    for p in paths.iter().filter(|p| p.as_path() != Path::new("-")) {
        say(&format!("wrote {}\n", shell_escape(p)))?;
    }
    Ok(ExitStatus::Success)
}

/// Writes `text` to standard output; a reader that went away (`| head`) is no error.
fn say(text: &str) -> Result<(), Fatal> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Fatal::new(said(&e))),
        _ => Ok(()),
    }
}

/// "FILE does not exist (a recording is made with --record FILE)".
fn missing(file: &Path) -> Fatal {
    Fatal::new(format!(
        "{} does not exist (a recording is made with --record FILE)",
        quote(file)
    ))
}

/// A copy: planned (refusals before anything is written), then run with the frontend the
/// configuration calls for.
fn copy(config: &Config, request: &crate::copy::CopyRequest) -> Result<ExitStatus, Fatal> {
    let job = CopyJob::plan(request).map_err(|e| Fatal::new(said(&e)))?;
    let (control, _signals) = control_with_signals()?;
    // cp: a source that cannot be stat'ed is reported, the others are copied, exit 1. With
    // nothing left to copy, the messages are all there is (the engine reports them as
    // failures otherwise).
    if job.roots.is_empty() {
        for (_, msg) in &job.missing {
            eprintln!("copyscope: {msg}");
        }
        return Ok(ExitStatus::Partial);
    }
    let endpoints = endpoints(request, &job);
    let metrics = start_metrics(config, "copy")?;
    Ok(run_planned(config, job, endpoints, control, metrics).status)
}

/// `copyscope replay FILE`: the interactive replay on a terminal; else (`--plain`, `--json`)
/// its text, after `--screenshot DIR`'s pictures.
fn replay(config: &Config, file: &Path, speed: f64) -> Result<ExitStatus, Fatal> {
    let cfg = model_config(&config.display);
    let opts = crate::frontend::live::ui_options(&config.display);
    if choose_frontend(config) == Frontend::Tui {
        // Nothing to cancel, but the screen answers the signals.
        let (_control, _signals) = control_with_signals()?;
        event_loop()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(crate::frontend::replay::run_tui(file, cfg, opts, speed)))
            .map_err(|e| Fatal::new(error_chain(&e)))?;
        return Ok(ExitStatus::Success);
    }
    if let Some(dir) = &config.display.screenshot {
        let paths = crate::frontend::replay::screenshot(file, dir, config.display.ascii)
            .map_err(|e| Fatal::new(format!("screenshot failed: {e:#}")))?;
        for p in paths {
            eprintln!("screenshot: {}", shell_escape(&p));
        }
    }
    let text = if config.display.json {
        crate::frontend::replay::run_json(file, cfg)
    } else {
        crate::frontend::replay::run_plain(file, cfg, opts)
    };
    print!("{}", text.map_err(|e| Fatal::new(error_chain(&e)))?);
    Ok(ExitStatus::Success)
}

/// `copyscope export FILE`: the pictures and texts of a recording, named by the flags.
fn export(config: &Config) -> Result<ExitStatus, Fatal> {
    let Command::Export {
        file,
        png,
        svg,
        text,
        markdown,
        size,
        picture,
        force,
    } = &config.command
    else {
        unreachable!("export() runs the export command");
    };
    let targets = crate::report::export::ExportTargets {
        png: png.clone(),
        svg: svg.clone(),
        text: text.clone(),
        markdown: markdown.clone(),
    };
    let look = crate::report::export::Look {
        title: picture.title.as_deref(),
        ymax_bps: picture.ymax_bps,
        duration_s: None,
        unit: picture
            .unit
            .map(|(divisor, label)| crate::present::axis::RateUnit { divisor, label }),
    };
    let paths = crate::report::export::run_export_look(
        file,
        &targets,
        size.unwrap_or(SCREENSHOT_SIZE),
        config.display.ascii,
        model_config(&config.display),
        &look,
        *force,
    )
    .map_err(|e| Fatal::new(error_chain(&e)))?;
    for p in paths {
        println!("wrote {}", shell_escape(&p));
    }
    Ok(ExitStatus::Success)
}

/// `copyscope report`: the recording's Markdown report, to a file or standard output.
fn report(
    file: &Path,
    output: Option<&Path>,
    cfg: ModelConfig,
    ascii: bool,
) -> Result<ExitStatus, Fatal> {
    let text = crate::report::forum::render_report(file, cfg, ascii)
        .map_err(|e| Fatal::new(error_chain(&e.into())))?;
    let written = match output {
        Some(p) => {
            std::fs::write(p, text.as_bytes()).map(|()| println!("wrote {}", shell_escape(p)))
        }
        None => std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()),
    };
    written.map_err(|e| Fatal::new(format!("cannot write the report: {e}")))?;
    Ok(ExitStatus::Success)
}

/// `copyscope compare` (and `export --compare`): loads every recording through the model and
/// writes the picture and the side-by-side table. Without named outputs: `compare.png` and
/// `compare.md` in the current directory, never overwritten without `--force`.
fn compare(req: &CompareRequest, cfg: ModelConfig) -> Result<ExitStatus, Fatal> {
    use crate::present::axis::RateUnit;
    use crate::report::export::compare::{CompareLook, load_runs, write_compare};
    if let Some(missing_file) = req.files.iter().find(|f| !f.exists()) {
        return Err(missing(missing_file));
    }
    let targets = compare_targets(req)?;
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
        SCREENSHOT_SIZE
    } else {
        (1600, 600 * n + if look.title.is_some() { 48 } else { 0 })
    });
    let paths = load_runs(&req.files, &req.labels, cfg)
        .and_then(|runs| write_compare(&runs, &look, &targets, size))
        .map_err(|e| Fatal::new(error_chain(&e)))?;
    for p in paths.iter().filter(|p| p.as_path() != Path::new("-")) {
        println!("wrote {}", shell_escape(p));
    }
    Ok(ExitStatus::Success)
}

/// The files `compare` writes: the named ones, or `compare.png` and `compare.md` when none
/// are named (refused when they exist, unless `--force`).
fn compare_targets(req: &CompareRequest) -> Result<crate::report::export::ExportTargets, Fatal> {
    use crate::report::export::{ExportTargets, TargetError};
    let named = ExportTargets {
        png: req.png.clone(),
        svg: req.svg.clone(),
        text: req.text.clone(),
        markdown: req.markdown.clone(),
    };
    if !named.is_empty() {
        named
            .check_extensions()
            .map_err(|e| Fatal::new(e.to_string()))?;
        return Ok(named);
    }
    let all = ExportTargets {
        png: Some("compare.png".into()),
        markdown: Some("compare.md".into()),
        ..ExportTargets::default()
    };
    let existing = all.existing();
    if !req.force && !existing.is_empty() {
        return Err(Fatal::new(
            TargetError::WouldOverwrite(existing).to_string(),
        ));
    }
    Ok(all)
}
