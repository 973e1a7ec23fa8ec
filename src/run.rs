//! Top-level dispatch: picks the frontend and runs the command a [`Config`] describes.

use std::sync::Arc;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::config::{Command, Config};
use crate::copy::{Control, CopyJob, install_signal_handlers};
use crate::exit::ExitStatus;
use crate::report::plain::{self, PlainSettings};

/// Which output a copy uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frontend {
    /// A progress line every 2 s and a summary.
    Plain,
    /// JSON lines.
    Json,
}

/// `--json` → JSON; otherwise plain. The lead's TUI takes over here when stdout is a
/// terminal and neither `--plain` nor `--json` was given.
pub fn choose_frontend(config: &Config) -> Frontend {
    if config.display.json {
        Frontend::Json
    } else {
        Frontend::Plain
    }
}

fn settings(config: &Config) -> PlainSettings {
    PlainSettings {
        json: choose_frontend(config) == Frontend::Json,
        interval: config.display.interval,
        binary: config.display.binary,
    }
}

/// Runs the configured command and returns its exit status (messages already printed).
pub fn run(config: Config) -> ExitStatus {
    match &config.command {
        Command::Copy(request) => {
            let job = match CopyJob::plan(request) {
                Ok(j) => j,
                Err(e) => {
                    eprintln!("copyscope: {e}");
                    return ExitStatus::Fatal;
                }
            };
            let control = Arc::new(Control::default());
            let _signals = match install_signal_handlers(control.clone()) {
                Ok(g) => g,
                Err(e) => {
                    eprintln!("copyscope: cannot install signal handlers: {e}");
                    return ExitStatus::Fatal;
                }
            };
            plain::run_copy(job, settings(&config), control).status
        }
        Command::Demo { size_mb } => crate::demo::run(*size_mb, settings(&config)),
        Command::Completions(shell) => {
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "copyscope", &mut std::io::stdout());
            ExitStatus::Success
        }
        Command::Man => {
            let man = clap_mangen::Man::new(Cli::command());
            match man.render(&mut std::io::stdout()) {
                Ok(()) => ExitStatus::Success,
                Err(e) => {
                    eprintln!("copyscope: {e}");
                    ExitStatus::Fatal
                }
            }
        }
        // Wired by the recording/export module (lead): until then say what is missing.
        Command::Replay { file, .. } => not_wired("replay", file),
        Command::Export { file, .. } => not_wired("export", file),
    }
}

fn not_wired(what: &str, file: &std::path::Path) -> ExitStatus {
    if !file.exists() {
        eprintln!(
            "copyscope: {what} needs a recording made with --record: '{}' does not exist",
            file.display()
        );
    } else {
        eprintln!("copyscope: {what}: the recording reader is not part of this build yet");
    }
    ExitStatus::Fatal
}
