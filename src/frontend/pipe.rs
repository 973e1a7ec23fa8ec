//! `copyscope pipe`: the session of a filter from standard input to standard output — its
//! environment (a file on either end brings its filesystem and disks), the data thread
//! (copy/pipe.rs) started with the sampler — handed to the TUI or the plain/JSON face, both
//! writing to standard error (frontend/out.rs), as pv's display does.

use std::io::IsTerminal;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;

use crate::config::{Config, PipeRequest};
use crate::copy::pipe::{EndKind, PipeJob, spawn_pipe};
use crate::exit::{ExitStatus, Fatal};
use crate::frontend::session::SessionPlan;
use crate::present::quote::{said, shell_escape};
use crate::report::pipe::end_label;
use crate::sample::{Environment, PipeEnds, SysRoot, probe_stream_environment};
use crate::ui::view::{Header as UiHeader, RunState};

/// How the run is shown on standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Face {
    /// The live chart (stderr is a terminal and the data's ends are not).
    Tui,
    /// One line rewritten in place (`--plain` on a terminal, or the TUI cannot run there).
    InPlace,
    /// A line every 2 s (stderr is a file or a pipe).
    Lines,
    Json,
}

/// The face for this run. The TUI needs the terminal to itself: not while the data comes
/// from or goes to it.
fn face(config: &Config, job: &PipeJob) -> Face {
    let d = &config.display;
    if d.json {
        return Face::Json;
    }
    if !std::io::stderr().is_terminal() {
        return Face::Lines;
    }
    let on_terminal = |k: EndKind| k == EndKind::Terminal;
    if d.plain || on_terminal(job.input_kind) || on_terminal(job.output_kind) {
        return Face::InPlace;
    }
    if let Some(why) = crate::frontend::caps::tui_blocker(&crate::frontend::caps::env_var) {
        eprintln!(
            "copyscope: {why}: one-line output (the live chart needs a full-screen terminal)"
        );
        return Face::InPlace;
    }
    Face::Tui
}

/// The file behind a descriptor of this process, when it is a regular file.
fn file_path(fd: BorrowedFd<'_>, kind: EndKind) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    (kind == EndKind::File)
        .then(|| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok())
        .flatten()
}

/// "stdin (pipe)", or a file's name.
fn end_name(name: &str, kind: EndKind, path: Option<&PathBuf>) -> String {
    match path {
        Some(p) => p.to_string_lossy().into_owned(),
        None => end_label(name, kind),
    }
}

/// Refuses `copyscope pipe < f > f` (cat's "input file is output file"): it would read what
/// it writes, or truncate what it reads.
fn same_file(job: &PipeJob) -> bool {
    let id = |fd: BorrowedFd<'_>| rustix::fs::fstat(fd).ok().map(|s| (s.st_dev, s.st_ino));
    job.input_kind == EndKind::File
        && job.output_kind == EndKind::File
        && id(job.input.as_fd()) == id(job.output.as_fd())
}

/// The ends' environment: a file's filesystem and disks (the destination's causes then
/// apply as for a copy); a pipe, socket or device has none.
fn environment(
    config: &Config,
    job: &PipeJob,
    paths: (&Option<PathBuf>, &Option<PathBuf>),
) -> Environment {
    let root = SysRoot::new(config.display.sys_root.clone());
    let mut env = probe_stream_environment(&root, paths.0.as_deref(), paths.1.as_deref());
    env.pipe = Some(PipeEnds {
        input: job.input_kind,
        output: job.output_kind,
    });
    if rustix::process::geteuid().is_root() && root.is_live() {
        env.notes.push(
            "exact evidence off for a pipe: its thread waits on the pipes too often to trace \
             each wait; the waits are sampled every interval"
                .to_string(),
        );
    }
    env
}

/// Runs `copyscope pipe`.
pub fn run(config: &Config, req: &PipeRequest) -> Result<ExitStatus, Fatal> {
    let job = PipeJob::stdio(req.size)
        .map_err(|e| Fatal::of("pipe", format!("standard input or output: {}", said(&e))))?;
    if same_file(&job) {
        return Err(Fatal::of(
            "pipe",
            "standard input is standard output (the same file)",
        ));
    }
    crate::frontend::out::faces_to_stderr();
    let (control, _signals) = crate::frontend::control_with_signals()?;
    let metrics = crate::frontend::start_metrics(config, "pipe")?;
    let d = &config.display;
    let src = file_path(job.input.as_fd(), job.input_kind);
    let dst = file_path(job.output.as_fd(), job.output_kind);
    let env = environment(config, &job, (&src, &dst));
    let source = end_name("stdin", job.input_kind, src.as_ref());
    let dest = end_name("stdout", job.output_kind, dst.as_ref());
    let ui_header = UiHeader {
        source: src
            .as_ref()
            .map_or(source.clone(), |p| shell_escape(p).into_owned()),
        dest: dst
            .as_ref()
            .map_or(dest.clone(), |p| shell_escape(p).into_owned()),
        fs: String::new(),
    };
    let face = face(config, &job);
    let plan = SessionPlan::new(d, env, (vec![source], dest), control)
        .recorded(d.record.as_deref(), face == Face::Tui)
        .metrics(metrics);
    let sess = plan.start_engine(
        |progress, control, _events| spawn_pipe(job, progress, control),
        "the pipe's thread panicked",
    );
    let o = match face {
        Face::Tui => {
            let mut app = crate::frontend::live::new_app(d, &sess, ui_header);
            app.state = RunState::Copying;
            app.pipe = true;
            crate::frontend::live::run_session_tui(config, sess, app, None, d.screenshot.clone())
        }
        Face::InPlace | Face::Lines | Face::Json => {
            let p = crate::frontend::stream::Printer::new(d.json);
            let p = if face == Face::InPlace {
                p.in_place()
            } else {
                p
            };
            crate::frontend::stream::run_session(d, sess, p, None)
        }
    };
    Ok(o.status)
}
