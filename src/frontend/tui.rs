//! Terminal lifecycle and the live main loop: one `tokio::select!` over keys, samples, engine
//! events, conflict questions, signals and a capped frame tick. The loop is the only owner of
//! the [`App`] (and so of the model). The terminal is restored on every way out: normal end,
//! error, panic on any thread, SIGINT/SIGTERM/SIGHUP and a vanished terminal (SSH dropped).

use std::io::{self, Stdout, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use crossterm::event::Event as TermEvent;
use crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, oneshot};

use crate::copy::{ConflictAnswer, ConflictAsk, Control, EngineEvent, Progress};
use crate::frontend::state::{Action, App};
use crate::model::Event;
use crate::sample::Sample;
use crate::ui::view::{Dialog, RunState};

/// Default time between frames: ~5 fps keeps SSH traffic small (DESIGN §10) and is still smooth
/// for a chart that gains one column per sample.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(200);

/// How long the end of a copy waits for the sample that shows its final counters.
pub const FINAL_SAMPLE_WAIT: Duration = Duration::from_millis(600);

static PANICKED: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();
static TERMINAL_ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back: raw mode off, main screen, cursor shown. Safe to call twice and on
/// a dead terminal (errors are ignored: there may be nobody left to tell).
pub fn restore_terminal() {
    if TERMINAL_ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let mut out = io::stdout();
        let _ = execute!(out, terminal::LeaveAlternateScreen, cursor::Show);
        let _ = out.flush();
    }
}

/// True once any thread panicked while the TUI was up.
pub fn panicked() -> bool {
    PANICKED.load(Ordering::SeqCst)
}

/// Installs (once) a panic hook that restores the terminal before the message is printed and
/// flags the main loop, so a worker's panic ends the program cleanly instead of leaving a
/// half-alive UI.
pub fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            restore_terminal();
            previous(info);
        }));
    });
}

/// Owns the terminal while the TUI is up; restores it when dropped (also on unwinding).
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    /// Raw mode + alternate screen + hidden cursor.
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if let Err(e) = execute!(out, terminal::EnterAlternateScreen, cursor::Hide) {
            restore_terminal();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(io::stdout())) {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                restore_terminal();
                Err(e)
            }
        }
    }

    /// Ctrl-Z: gives the terminal back to the shell (main screen, cooked mode, cursor), then
    /// stops the process group as the kernel would have for a Ctrl-Z outside raw mode. The
    /// whole process stops, so the copy waits too; [`TerminalGuard::resume`] runs on SIGCONT.
    pub fn suspend(&mut self) {
        restore_terminal();
        let _ = rustix::process::kill_current_process_group(rustix::process::Signal::TSTP);
    }

    /// SIGCONT (`fg`, `bg`, or `kill -CONT` after `kill -STOP`): the shell may have put the
    /// terminal back into cooked mode and drawn over the screen, so raw mode is applied again
    /// (crossterm keeps it as "already raw" otherwise), the alternate screen re-entered and the
    /// next frame drawn in full. Keys typed at the frozen screen (after `kill -STOP`) are
    /// dropped: replayed later they could answer an overwrite question nobody saw.
    pub fn resume(&mut self) -> io::Result<()> {
        let _ = terminal::disable_raw_mode();
        terminal::enable_raw_mode()?;
        let _ = rustix::termios::tcflush(io::stdin(), rustix::termios::QueueSelector::IFlush);
        TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
        execute!(
            io::stdout(),
            terminal::EnterAlternateScreen,
            terminal::Clear(terminal::ClearType::All),
            cursor::Hide
        )?;
        // The screen is blank now; an empty frame tells ratatui so, and the next frame is then
        // drawn in full. (Terminal::clear would ask the terminal for the cursor position, which
        // waits on the key reader thread's lock: a deadlock.)
        self.terminal.draw(|_| {}).map(|_| ())
    }

    /// Draws one frame. An error means the terminal is gone (e.g. SSH dropped).
    pub fn draw(&mut self, app: &App) -> io::Result<()> {
        self.terminal
            .draw(|f| crate::ui::render(f, app))
            .map(|_| ())
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Terminal input on its own thread, so nothing the terminal does can hold the loop: on a
/// hung-up terminal crossterm's reader sees `read() = 0` forever and, inside EventStream, spun
/// on the loop's own thread (100 % CPU, signals never handled). Here it polls with a timeout,
/// asks the terminal itself between polls, and ends the channel with an error on a hang-up.
fn spawn_key_reader() -> mpsc::UnboundedReceiver<io::Result<TermEvent>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("copyscope-keys".into())
        .spawn(move || {
            let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the terminal hung up");
            while !tx.is_closed() {
                if terminal_hung_up() {
                    let _ = tx.send(Err(gone()));
                    return;
                }
                match crossterm::event::poll(Duration::from_millis(100)) {
                    Ok(false) => {}
                    Ok(true) => match crossterm::event::read() {
                        Ok(ev) => {
                            let _ = tx.send(Ok(ev));
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    },
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(Err(e));
        return rx;
    }
    rx
}

fn is_ctrl_z(k: &crossterm::event::KeyEvent) -> bool {
    use crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
    k.kind == KeyEventKind::Press
        && k.modifiers.contains(KeyModifiers::CONTROL)
        && matches!(k.code, KeyCode::Char('z') | KeyCode::Char('Z'))
}

/// True when this process group owns the terminal (drawing and raw mode are ours to set).
fn in_foreground() -> bool {
    rustix::termios::tcgetpgrp(io::stdout()).is_ok_and(|pg| pg == rustix::process::getpgrp())
}

/// True once the terminal was hung up (the SSH connection dropped, the terminal window
/// closed): the kernel then answers every terminal ioctl on it with EIO.
fn terminal_hung_up() -> bool {
    matches!(
        rustix::termios::tcgetattr(io::stdout()),
        Err(rustix::io::Errno::IO)
    )
}

/// A question from an engine worker: "this destination exists; what now?"
pub struct ConflictRequest {
    pub path: PathBuf,
    pub reply: std::sync::mpsc::Sender<ConflictAnswer>,
}

/// The engine side of the overwrite dialog: blocks the asking worker until the user answers.
pub struct TuiConflictAsk {
    tx: mpsc::UnboundedSender<ConflictRequest>,
    /// Once the user picked "all", later conflicts are answered without asking.
    sticky: Mutex<Option<ConflictAnswer>>,
}

impl TuiConflictAsk {
    pub fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<ConflictRequest>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Arc::new(TuiConflictAsk {
                tx,
                sticky: Mutex::new(None),
            }),
            rx,
        )
    }
}

impl ConflictAsk for TuiConflictAsk {
    fn ask(&self, destination: &std::path::Path) -> ConflictAnswer {
        if let Ok(s) = self.sticky.lock()
            && let Some(a) = *s
        {
            return a;
        }
        let (reply, answer) = std::sync::mpsc::channel();
        let req = ConflictRequest {
            path: destination.to_path_buf(),
            reply,
        };
        if self.tx.send(req).is_err() {
            return ConflictAnswer::Cancel;
        }
        let a = answer.recv().unwrap_or(ConflictAnswer::Cancel);
        if matches!(a, ConflictAnswer::OverwriteAll | ConflictAnswer::SkipAll)
            && let Ok(mut s) = self.sticky.lock()
        {
            *s = Some(a);
        }
        a
    }
}

/// Channels and handles the live loop listens to.
pub struct LiveIo<T> {
    pub samples: mpsc::UnboundedReceiver<Sample>,
    pub engine_events: mpsc::UnboundedReceiver<EngineEvent>,
    pub conflicts: Option<mpsc::UnboundedReceiver<ConflictRequest>>,
    pub control: Arc<Control>,
    pub progress: Arc<Progress>,
    /// Resolves when the engine thread has returned.
    pub done: oneshot::Receiver<T>,
    pub frame_interval: Duration,
}

/// Hooks the loop calls so the caller can record and take screenshots without the loop
/// knowing about files.
pub trait LiveHooks {
    fn on_sample(&mut self, _s: &Sample) {}
    /// Model events produced by a sample or an engine event.
    fn on_events(&mut self, _evs: &[Event]) {}
    fn on_engine_event(&mut self, _t_ns: u64, _ev: &EngineEvent) {}
    /// `s` pressed: write a screenshot of the run so far; returns a message for the footer.
    fn screenshot(&mut self, app: &App) -> String;
}

/// How the live loop ended.
pub struct LiveEnd<T> {
    pub app: App,
    /// The engine's result (None only when the loop had to give up waiting for it).
    pub outcome: Option<T>,
    /// The terminal went away (SIGHUP or a failed write): print nothing more to it.
    pub hung_up: bool,
}

/// Runs the TUI until the engine finishes (or is cancelled and has cleaned up).
pub async fn run_live<T>(
    mut app: App,
    mut io: LiveIo<T>,
    hooks: &mut dyn LiveHooks,
    final_state: impl Fn(&T) -> RunState,
) -> io::Result<LiveEnd<T>> {
    let mut guard = TerminalGuard::enter()?;
    let mut keys = spawn_key_reader();
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigcont = signal(SignalKind::from_raw(libc::SIGCONT))?;
    let mut frame = tokio::time::interval(io.frame_interval);
    frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut pending_reply: Option<std::sync::mpsc::Sender<ConflictAnswer>> = None;
    let mut dirty = true;
    let mut hung_up = false;
    let mut outcome: Option<T> = None;
    let mut keys_open = true;
    // Continued while another process group holds the terminal: draw nothing until `fg`.
    let mut background = false;

    let cancel = |control: &Control,
                  reply: &mut Option<std::sync::mpsc::Sender<ConflictAnswer>>| {
        control.paused.store(false, Ordering::SeqCst);
        control.cancelled.store(true, Ordering::SeqCst);
        if let Some(r) = reply.take() {
            let _ = r.send(ConflictAnswer::Cancel);
        }
    };

    loop {
        if io.control.cancelled.load(Ordering::SeqCst) && outcome.is_none() {
            // Said at once, and kept current until the engine is back (the kernel may hold
            // the copier inside a write for a moment).
            let n = io.progress.in_write.load(Ordering::Relaxed);
            if app.cancelling != Some(n) {
                app.cancelling = Some(n);
                dirty = true;
            }
        }
        if panicked() {
            cancel(&io.control, &mut pending_reply);
            hung_up = true; // the hook restored the terminal; draw nothing more
        }
        tokio::select! {
            biased;
            res = &mut io.done, if outcome.is_none() => {
                match res {
                    Ok(o) => {
                        app.state = final_state(&o);
                        outcome = Some(o);
                    }
                    Err(_) => app.state = RunState::Failed,
                }
                // Wait (briefly) for a sample that shows the engine's final counters, so the
                // model, the summary and the recording end on the last byte.
                let last = io.progress.snapshot();
                let deadline = tokio::time::Instant::now() + FINAL_SAMPLE_WAIT;
                loop {
                    while let Ok(s) = io.samples.try_recv() {
                        hooks.on_sample(&s);
                        let evs = app.on_sample(&s);
                        hooks.on_events(&evs);
                    }
                    if app.progress.bytes_copied >= last.bytes_copied && app.progress.files_done >= last.files_done {
                        break;
                    }
                    match tokio::time::timeout_at(deadline, io.samples.recv()).await {
                        Ok(Some(s)) => {
                            hooks.on_sample(&s);
                            let evs = app.on_sample(&s);
                            hooks.on_events(&evs);
                        }
                        _ => break,
                    }
                }
                while let Ok(ev) = io.engine_events.try_recv() {
                    let t = app.now_ns;
                    hooks.on_engine_event(t, &ev);
                    let evs = app.on_engine(t, &ev);
                    hooks.on_events(&evs);
                }
                if let Some(o) = &outcome { app.state = final_state(o); }
                app.current = None;
                if !hung_up { let _ = guard.draw(&app); }
                break;
            }
            _ = sigterm.recv() => { cancel(&io.control, &mut pending_reply); }
            _ = sighup.recv() => { hung_up = true; cancel(&io.control, &mut pending_reply); }
            _ = sigint.recv() => { cancel(&io.control, &mut pending_reply); }
            _ = sigcont.recv() => {
                // `kill -CONT` while the shell holds the terminal (after `kill -STOP`, the
                // job is in the background): touching the terminal would stop us again
                // (SIGTTOU) or draw over the shell. Wait for `fg`, which sends SIGCONT again.
                background = !in_foreground();
                if !hung_up && !background && guard.resume().is_err() {
                    hung_up = true;
                    cancel(&io.control, &mut pending_reply);
                }
                dirty = true;
            }
            Some(s) = io.samples.recv() => {
                hooks.on_sample(&s);
                let evs = app.on_sample(&s);
                hooks.on_events(&evs);
                app.current = io.progress.current().as_ref().map(crate::frontend::state::file_of);
                if app.state == RunState::Verifying || app.verified.is_some() {
                    let v = io.progress.bytes_verified.load(std::sync::atomic::Ordering::Relaxed);
                    app.verified = Some(v);
                }
                dirty = true;
            }
            Some(ev) = io.engine_events.recv() => {
                let t = app.now_ns;
                hooks.on_engine_event(t, &ev);
                let evs = app.on_engine(t, &ev);
                hooks.on_events(&evs);
                dirty = true;
            }
            Some(req) = async { match io.conflicts.as_mut() { Some(c) => c.recv().await, None => None } } => {
                if io.control.cancelled.load(Ordering::SeqCst) {
                    let _ = req.reply.send(ConflictAnswer::Cancel);
                } else {
                    app.dialog = Some(Dialog::Conflict { path: crate::present::quote::shell_escape(&req.path).into_owned() });
                    pending_reply = Some(req.reply);
                    dirty = true;
                }
            }
            maybe = keys.recv(), if keys_open => {
                match maybe {
                    Some(Ok(TermEvent::Key(k))) if is_ctrl_z(&k) => {
                        guard.suspend();
                        dirty = true;
                    }
                    Some(Ok(TermEvent::Key(k))) => {
                        match app.handle_key(k) {
                            Action::Cancel => cancel(&io.control, &mut pending_reply),
                            Action::Answer(a) => {
                                if let Some(r) = pending_reply.take() { let _ = r.send(a); }
                                if a == ConflictAnswer::Cancel { cancel(&io.control, &mut pending_reply); }
                            }
                            Action::TogglePause => {
                                let was = io.control.paused.fetch_xor(true, Ordering::SeqCst);
                                let t = app.now_ns;
                                let ev = if was { EngineEvent::Resumed } else { EngineEvent::Paused };
                                hooks.on_engine_event(t, &ev);
                                let evs = app.on_engine(t, &ev);
                                hooks.on_events(&evs);
                            }
                            Action::Screenshot => {
                                let msg = hooks.screenshot(&app);
                                app.status = Some((msg, app.now_ns));
                            }
                            _ => {}
                        }
                        dirty = true;
                    }
                    Some(Ok(TermEvent::Resize(_, _))) => { dirty = true; }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => {
                        // The terminal is gone: behave as for SIGHUP.
                        keys_open = false;
                        hung_up = true;
                        cancel(&io.control, &mut pending_reply);
                    }
                }
            }
            _ = frame.tick() => {
                if !hung_up && terminal_hung_up() {
                    // The input side may only ever say "end of file" (read returning 0):
                    // ask the terminal itself, so a dropped session always ends the copy.
                    keys_open = false;
                    hung_up = true;
                    cancel(&io.control, &mut pending_reply);
                }
                if dirty && !hung_up && !background {
                    if guard.draw(&app).is_err() {
                        hung_up = true;
                        cancel(&io.control, &mut pending_reply);
                    }
                    dirty = false;
                }
            }
        }
    }
    drop(guard);
    Ok(LiveEnd {
        app,
        outcome,
        hung_up,
    })
}
