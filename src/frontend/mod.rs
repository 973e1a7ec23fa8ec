//! The frontends: the live TUI, replay, plain/JSON streaming and the demo, and what they
//! share — the choice between them, the event loop, the signal handlers, the metrics
//! endpoint. `command` runs the command a [`Config`] describes. The loops here own the
//! model; `ui/` only draws and `report/` only writes files.

pub mod bench;
pub mod caps;
pub mod command;
pub mod demo;
pub mod live;
pub mod man;
pub mod metrics;
pub mod out;
pub mod pipe;
pub mod replay;
pub mod session;
pub mod state;
pub mod stream;
pub mod tui;
pub mod update;
pub mod watch;

use std::sync::Arc;

use crate::config::Config;
use crate::copy::{Control, CopyJob, OverwritePolicy, SignalGuard, install_signal_handlers};
use crate::exit::Fatal;
use crate::report::prompt::StdinAsk;

pub use command::run;

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
/// guard lives).
pub(crate) fn control_with_signals() -> Result<(Arc<Control>, SignalGuard), Fatal> {
    let control = Arc::new(Control::default());
    let guard = install_signal_handlers(control.clone()).map_err(|e| {
        Fatal::new(format!(
            "cannot install signal handlers: {}",
            crate::present::quote::said(&e)
        ))
    })?;
    Ok((control, guard))
}

/// The one way an event loop is made (the TUI's, the plain/JSON loop's, the `--metrics`
/// server's on its own thread): one thread, timers and I/O.
pub(crate) fn event_loop() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The face a run is shown in: `--json` → JSON, `--plain` or a stdout that is not a terminal →
/// plain lines, else the TUI (which `adapt_to_terminal` may already have turned into plain).
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
pub(crate) fn adapt_to_terminal(config: &mut Config) {
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
pub(crate) fn endpoints(
    request: &crate::copy::CopyRequest,
    job: &CopyJob,
) -> (Vec<String>, String) {
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

/// `--metrics ADDR`: the endpoint, listening before anything is copied or watched.
pub(crate) fn start_metrics(
    config: &Config,
    mode: &'static str,
) -> Result<Option<metrics::MetricsEndpoint>, Fatal> {
    let Some(addr) = config.display.metrics else {
        return Ok(None);
    };
    let m = metrics::MetricsEndpoint::start(addr, mode)
        .map_err(|e| Fatal::new(crate::present::quote::said(&e)))?;
    eprintln!(
        "copyscope: metrics at http://{}/metrics (no authentication)",
        m.local_addr()
    );
    Ok(Some(m))
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
