//! Terminal lifecycle and the live TUI's I/O shell: one `tokio::select!` turns keys, samples,
//! engine events, conflict questions, signals and a capped frame tick into events for the
//! pure [`update`] (frontend/update.rs) and runs its effects ([`Shell`]). The loop is the only
//! owner of the state (and so of the model). The terminal is restored on every way out: normal end,
//! error, panic on any thread, SIGINT/SIGTERM/SIGHUP and a vanished terminal (SSH dropped).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use crossterm::event::Event as TermEvent;
use crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::{mpsc, oneshot};

use crate::copy::{
    ConflictAnswer, ConflictAsk, ConflictQuestion, Control, EngineEvent, LowSpace, Progress,
    SpaceAnswer,
};
use crate::frontend::out::face_out;
use crate::frontend::session::arrivals::{Arrival, Arrivals, Counters};
use crate::frontend::state::App;
use crate::frontend::update::{Effect, Event as UiEvent, Signal, State, update};
use crate::model::Event;
use crate::present::quote::shell_escape;
use crate::sample::Sample;
use crate::ui::view::{ConflictView, FileSide, RunState, SpaceView};

/// Default time between frames: ~5 fps keeps SSH traffic small and is still smooth for a chart
/// that gains one column per sample.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(200);

/// Bytes a second the frames may cost on average (SSH): a screen that changes a lot (an axis
/// rescale) lowers the frame rate until the average is back under this.
pub const BYTES_PER_SEC: f64 = 3_500.0;

/// Bytes of credit a quiet screen saves up, so one big frame (a rescale, the events panel
/// scrolling) goes at once and only the frames after it wait.
pub const BURST_BYTES: f64 = 8_000.0;

static PANICKED: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();
static TERMINAL_ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back: raw mode off, main screen, cursor shown. Safe to call twice and on
/// a dead terminal (errors are ignored: there may be nobody left to tell).
pub fn restore_terminal() {
    if TERMINAL_ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let mut out = face_out();
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

/// When the next frame may go: frames are always sent whole, and over a slow link or after a
/// big frame the frame rate falls instead. Two limits, from what the last frames cost: a byte
/// budget ([`BYTES_PER_SEC`] on average, [`BURST_BYTES`] at once), and the terminal's own
/// drain rate — after a frame whose write took `d` (the terminal, or ssh behind it, took that
/// long to take the bytes), the next one waits at least `d`, so the loop never spends more
/// than half its time blocked on a slow link. Times are passed in: this reads no clock.
#[derive(Debug, Clone, Default)]
pub struct FrameRate {
    /// Bytes that may be sent now (negative: a debt the next frames wait out).
    credit: f64,
    /// When the last frame was sent.
    last: Option<std::time::Instant>,
    /// No frame that can wait goes before this.
    not_before: Option<std::time::Instant>,
}

impl FrameRate {
    /// Whether a frame that can wait (what samples and the clock changed) may go at `now`.
    pub fn ready(&self, now: std::time::Instant) -> bool {
        self.not_before.is_none_or(|t| now >= t)
    }

    /// A frame of `bytes` was written from `start` until `end` (write and flush returned).
    pub fn sent(&mut self, bytes: usize, start: std::time::Instant, end: std::time::Instant) {
        let saved = match self.last {
            Some(l) => {
                self.credit + start.saturating_duration_since(l).as_secs_f64() * BYTES_PER_SEC
            }
            None => BURST_BYTES,
        };
        self.credit = saved.min(BURST_BYTES) - bytes as f64;
        self.last = Some(start);
        let debt = Duration::from_secs_f64((-self.credit).max(0.0) / BYTES_PER_SEC);
        let drain = end.saturating_duration_since(start);
        self.not_before = Some(end + debt.max(drain));
    }
}

/// The terminal's output: a whole frame is collected and written in one `write` at the
/// frame's end (so a terminal that does not know synchronized updates still never reads half
/// a frame between two of ours), and the bytes are counted for [`FrameRate`]. Shared with
/// [`TerminalGuard`], which decides when the frame is complete.
#[derive(Clone, Default)]
pub struct FrameWriter(Arc<std::sync::Mutex<FrameBuf>>);

#[derive(Default)]
struct FrameBuf {
    bytes: Vec<u8>,
    /// While true (inside [`TerminalGuard::draw`]), a flush keeps the bytes for the frame's
    /// one write.
    hold: bool,
}

impl FrameWriter {
    fn buf(&self) -> std::sync::MutexGuard<'_, FrameBuf> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn hold(&self, hold: bool) {
        self.buf().hold = hold;
    }

    /// Drops what was collected (half a frame, after a failed draw).
    fn discard(&self) {
        self.buf().bytes.clear();
    }

    /// Writes what was collected; returns its size.
    fn send(&self) -> io::Result<usize> {
        let mut b = self.buf();
        let n = b.bytes.len();
        let mut out = face_out();
        let res = out.write_all(&b.bytes).and_then(|_| out.flush());
        b.bytes.clear();
        res.map(|_| n)
    }
}

impl Write for FrameWriter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf().bytes.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf().hold {
            return Ok(());
        }
        self.send().map(|_| ())
    }
}

/// Owns the terminal while the TUI is up; restores it when dropped (also on unwinding).
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<FrameWriter>>,
    out: FrameWriter,
    rate: FrameRate,
    /// What the last frame hands the next (the chart's y scale).
    held: crate::ui::Held,
}

impl TerminalGuard {
    /// Raw mode + alternate screen + hidden cursor.
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
        let mut out = face_out();
        if let Err(e) = execute!(out, terminal::EnterAlternateScreen, cursor::Hide) {
            restore_terminal();
            return Err(e);
        }
        let out = FrameWriter::default();
        match Terminal::new(CrosstermBackend::new(out.clone())) {
            Ok(terminal) => Ok(TerminalGuard {
                terminal,
                out,
                rate: FrameRate::default(),
                held: Default::default(),
            }),
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
            face_out(),
            terminal::EnterAlternateScreen,
            terminal::Clear(terminal::ClearType::All),
            cursor::Hide
        )?;
        // The screen is blank now; an empty frame tells ratatui so, and the next frame is then
        // drawn in full. (Terminal::clear would ask the terminal for the cursor position, which
        // waits on the key reader thread's lock: a deadlock.)
        self.terminal.draw(|_| {}).map(|_| ())
    }

    /// Draws one frame, whole, from the state as it is now, inside the terminal's
    /// synchronized-update brackets (mode 2026: a terminal that knows them shows the frame at
    /// once, never half of it) and in one write. A frame that `can_wait` is skipped while
    /// [`FrameRate`] says the terminal needs time: Ok(false), draw again later. An error
    /// means the terminal is gone (e.g. SSH dropped).
    pub fn draw(&mut self, app: &App, can_wait: bool) -> io::Result<bool> {
        let start = std::time::Instant::now();
        if can_wait && !self.rate.ready(start) {
            return Ok(false);
        }
        self.out.hold(true);
        let drawn = crossterm::queue!(
            self.terminal.backend_mut(),
            terminal::BeginSynchronizedUpdate
        )
        .and_then(|_| {
            let held = &mut self.held;
            self.terminal
                .draw(|f| crate::ui::render_held(f, &app.view(), held))
                .map(|_| ())
        })
        .and_then(|_| {
            crossterm::queue!(self.terminal.backend_mut(), terminal::EndSynchronizedUpdate)
        });
        self.out.hold(false);
        if let Err(e) = drawn {
            self.out.discard();
            return Err(e);
        }
        // The write alone tells how fast the terminal drains (drawing is this process's time).
        let write = std::time::Instant::now();
        let bytes = self.out.send()?;
        self.rate.sent(bytes, write, std::time::Instant::now());
        Ok(true)
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
pub(crate) fn spawn_key_reader() -> mpsc::UnboundedReceiver<io::Result<TermEvent>> {
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

/// True when this process group owns the terminal (drawing and raw mode are ours to set).
fn in_foreground() -> bool {
    rustix::termios::tcgetpgrp(face_out()).is_ok_and(|pg| pg == rustix::process::getpgrp())
}

/// True once the terminal was hung up (the SSH connection dropped, the terminal window
/// closed): the kernel then answers every terminal ioctl on it with EIO.
fn terminal_hung_up() -> bool {
    matches!(
        rustix::termios::tcgetattr(face_out()),
        Err(rustix::io::Errno::IO)
    )
}

/// A question from the engine: "this destination exists; what now?" (from a worker) or
/// "this copy does not fit; copy anyway?" (from the scan, once it is complete).
pub enum AskRequest {
    Conflict {
        question: ConflictQuestion,
        reply: std::sync::mpsc::Sender<ConflictAnswer>,
    },
    Space {
        low: LowSpace,
        reply: std::sync::mpsc::Sender<SpaceAnswer>,
    },
}

/// Where the answer to the question on screen goes.
pub(crate) enum Pending {
    Conflict(std::sync::mpsc::Sender<ConflictAnswer>),
    Space(std::sync::mpsc::Sender<SpaceAnswer>),
}

/// The engine side of the TUI's questions: blocks the asking thread until the user answers.
/// (Answers that stick — "all", "all older" — are kept by the engine, which then stops asking.)
pub struct TuiConflictAsk {
    tx: mpsc::UnboundedSender<AskRequest>,
}

impl TuiConflictAsk {
    pub fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<AskRequest>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Arc::new(TuiConflictAsk { tx }), rx)
    }
}

impl ConflictAsk for TuiConflictAsk {
    fn ask(&self, question: &ConflictQuestion) -> ConflictAnswer {
        let (reply, answer) = std::sync::mpsc::channel();
        let req = AskRequest::Conflict {
            question: question.clone(),
            reply,
        };
        if self.tx.send(req).is_err() {
            return ConflictAnswer::Cancel;
        }
        answer.recv().unwrap_or(ConflictAnswer::Cancel)
    }

    /// A loop that is gone cannot answer: the copy stops rather than filling the disk unseen.
    fn low_space(&self, low: &LowSpace) -> SpaceAnswer {
        let (reply, answer) = std::sync::mpsc::channel();
        let req = AskRequest::Space {
            low: low.clone(),
            reply,
        };
        if self.tx.send(req).is_err() {
            return SpaceAnswer::Cancel;
        }
        answer.recv().unwrap_or(SpaceAnswer::Cancel)
    }
}

/// The dialog's view of a question: names quoted for the terminal, both sides, their dates in
/// local time.
pub fn conflict_view(q: &ConflictQuestion) -> ConflictView {
    let side = |s: &crate::copy::ConflictSide| FileSide {
        size: s.size,
        mtime: s.mtime,
        when: local_datetime(s.mtime.0),
    };
    ConflictView {
        destination: shell_escape(&q.destination).into_owned(),
        source: shell_escape(&q.source).into_owned(),
        new: side(&q.new),
        existing: side(&q.existing),
    }
}

/// The free-space dialog's view: the destination quoted for the terminal.
pub fn space_view(low: &LowSpace) -> SpaceView {
    SpaceView {
        needed: low.needed,
        free: low.free,
        freed: low.freed,
        dest: shell_escape(&low.dest).into_owned(),
        fs_type: low.fs_type.clone(),
    }
}

/// `secs` since the epoch as the user's file manager shows it: local time (TZ, else
/// /etc/localtime) with the zone's name, "2026-11-30 20:42:07 CET". `localtime_r`, because the
/// `time` crate refuses the local offset in a multi-threaded program (the only unsafe code:
/// this program never sets the environment, so the C library's read of TZ cannot race).
/// Unconvertible: UTC.
#[allow(unsafe_code)]
pub fn local_datetime(secs: i64) -> String {
    let t: libc::time_t = secs;
    // SAFETY: `tm` is plain data that localtime_r fills; both pointers are valid for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = !unsafe { libc::localtime_r(&t, &mut tm) }.is_null();
    if !ok {
        return format!("{} UTC", crate::present::format::fmt_utc_datetime(secs));
    }
    let zone = if tm.tm_zone.is_null() {
        String::new()
    } else {
        // SAFETY: glibc points tm_zone at a NUL-terminated name that lives as long as the
        // process's time zone data.
        let name = unsafe { std::ffi::CStr::from_ptr(tm.tm_zone) };
        format!(" {}", name.to_string_lossy())
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{zone}",
        i64::from(tm.tm_year) + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Channels and handles the live loop listens to (the session's, borrowed while it runs).
pub struct LiveIo<'a, T> {
    pub arrivals: &'a mut Arrivals,
    pub conflicts: Option<mpsc::UnboundedReceiver<AskRequest>>,
    pub control: Arc<Control>,
    pub progress: Arc<Progress>,
    /// Resolves when the engine thread has returned.
    pub done: &'a mut oneshot::Receiver<T>,
    pub frame_interval: Duration,
}

/// Hooks the loop calls so the caller can record and take screenshots without the loop
/// knowing about files.
pub trait LiveHooks {
    fn on_sample(&mut self, _s: &Sample) {}
    /// Model events produced by a sample or an engine event.
    fn on_events(&mut self, _evs: &[Event]) {}
    fn on_engine_event(&mut self, _t_ns: u64, _ev: &EngineEvent) {}
    /// The model after a sample or an engine event changed it (`--metrics` publishes it).
    fn on_model(&mut self, _model: &crate::model::Model) {}
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
    /// The terminal (or the signals) could not be set up: the loop never ran.
    pub error: Option<io::Error>,
}

/// Runs the effects of [`update`] on the terminal, the engine and the hooks: the I/O half of
/// every TUI loop (live copy, watch, replay).
pub(crate) struct Shell<'a> {
    pub guard: TerminalGuard,
    /// The engine's pause/cancel flags (None in a replay).
    pub control: Option<Arc<Control>>,
    /// The reply channel of the question the dialog shows.
    pub reply: Option<Pending>,
    pub hooks: &'a mut dyn LiveHooks,
}

impl Shell<'_> {
    /// Feeds `ev` to [`update`] and runs the effects, and the events they lead to.
    pub fn step(&mut self, st: &mut State, ev: UiEvent) {
        let mut queue = std::collections::VecDeque::from([ev]);
        while let Some(ev) = queue.pop_front() {
            for fx in update(st, ev) {
                if let Some(next) = self.run(st, fx) {
                    queue.push_back(next);
                }
            }
        }
    }

    fn run(&mut self, st: &State, fx: Effect) -> Option<UiEvent> {
        match fx {
            Effect::Draw | Effect::DrawPaced => {
                match self.guard.draw(&st.app, fx == Effect::DrawPaced) {
                    Ok(true) => None,
                    Ok(false) => Some(UiEvent::Partial),
                    Err(_) => Some(UiEvent::TerminalGone),
                }
            }
            Effect::ResumeTerminal => self.guard.resume().err().map(|_| UiEvent::TerminalGone),
            Effect::Suspend => {
                self.guard.suspend();
                None
            }
            Effect::Cancel => {
                if let Some(c) = &self.control {
                    c.paused.store(false, Ordering::SeqCst);
                    c.cancel();
                }
                None
            }
            Effect::Pause | Effect::Resume => {
                if let Some(c) = &self.control {
                    c.paused.store(fx == Effect::Pause, Ordering::SeqCst);
                }
                None
            }
            Effect::Answer(a) => {
                if let Some(Pending::Conflict(r)) = self.reply.take() {
                    let _ = r.send(a);
                }
                None
            }
            Effect::AnswerSpace(a) => {
                if let Some(Pending::Space(r)) = self.reply.take() {
                    let _ = r.send(a);
                }
                None
            }
            Effect::Record { t_ns, event } => {
                self.hooks.on_engine_event(t_ns, &event);
                None
            }
            Effect::Events(evs) => {
                self.hooks.on_events(&evs);
                None
            }
            Effect::Screenshot => Some(UiEvent::Screenshot(self.hooks.screenshot(&st.app))),
            Effect::Quit => None,
        }
    }
}

/// Turns what the key reader thread read into an event.
pub(crate) fn from_terminal(ev: Option<io::Result<TermEvent>>) -> Option<UiEvent> {
    match ev {
        Some(Ok(TermEvent::Key(k))) => Some(UiEvent::Key(k)),
        Some(Ok(TermEvent::Resize(_, _))) => Some(UiEvent::Resize),
        Some(Ok(_)) => None,
        Some(Err(_)) | None => Some(UiEvent::TerminalGone),
    }
}

/// The SIGCONT event: whether the terminal is ours again.
pub(crate) fn cont_event() -> UiEvent {
    UiEvent::Signal(Signal::Cont {
        foreground: in_foreground(),
    })
}

/// The signals a TUI loop answers: SIGTERM, SIGQUIT, SIGHUP, SIGINT and SIGCONT, from the
/// one signal handler (copy/signals.rs), which also cancels the engine.
pub(crate) struct TuiSignals(mpsc::UnboundedReceiver<i32>);

impl TuiSignals {
    pub fn listen() -> io::Result<TuiSignals> {
        crate::copy::signals::listen().map(TuiSignals)
    }

    /// The next signal as an event.
    pub async fn next(&mut self) -> UiEvent {
        loop {
            match self.0.recv().await {
                // SIGQUIT ends a run as SIGTERM does (its default, a core dump, would skip
                // the cleanup).
                Some(libc::SIGTERM | libc::SIGQUIT) => return UiEvent::Signal(Signal::Term),
                Some(libc::SIGHUP) => return UiEvent::Signal(Signal::Hup),
                Some(libc::SIGINT) => return UiEvent::Signal(Signal::Int),
                Some(libc::SIGCONT) => return cont_event(),
                Some(_) => {}
                // The handler is gone (the run is ending): no signal comes any more.
                None => std::future::pending::<()>().await,
            }
        }
    }
}

/// Runs the TUI until the engine finishes (or is cancelled and has cleaned up).
pub async fn run_live<T>(
    app: App,
    mut io: LiveIo<'_, T>,
    hooks: &mut dyn LiveHooks,
    final_state: impl Fn(&T) -> RunState,
) -> LiveEnd<T> {
    let (guard, mut signals) =
        match TerminalGuard::enter().and_then(|g| Ok((g, TuiSignals::listen()?))) {
            Ok(set_up) => set_up,
            Err(e) => {
                return LiveEnd {
                    app,
                    outcome: None,
                    hung_up: false,
                    error: Some(e),
                };
            }
        };
    let mut keys = spawn_key_reader();
    let mut frame = tokio::time::interval(io.frame_interval);
    frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut st = State::live(app);
    let mut sh = Shell {
        guard,
        control: Some(io.control.clone()),
        reply: None,
        hooks,
    };
    let mut outcome: Option<T> = None;
    let mut keys_open = true;
    let mut last_tick = std::time::Instant::now();

    loop {
        if panicked() && !st.hung_up {
            // The hook restored the terminal; draw nothing more, stop the copy.
            sh.step(&mut st, UiEvent::TerminalGone);
        }
        tokio::select! {
            biased;
            res = &mut *io.done, if outcome.is_none() => {
                let end = res.as_ref().map_or(RunState::Failed, &final_state);
                outcome = res.ok();
                take_final_samples(&mut sh, &mut st, &mut io).await;
                sh.step(&mut st, UiEvent::Finished(end));
                break;
            }
            ev = signals.next() => sh.step(&mut st, ev),
            // Engine events are taken with each sample (and at each frame), in time order: a
            // tree's two events per file would otherwise wake this loop per file.
            Some(s) = io.arrivals.samples.recv() => {
                let batch = io.arrivals.queued(Some(Arrival::Sample(Box::new(s))));
                feed(&mut sh, &mut st, &io.progress, batch);
                sh.hooks.on_model(&st.app.model);
            }
            Some(req) = async { match io.conflicts.as_mut() { Some(c) => c.recv().await, None => None } } => {
                ask(&mut sh, &mut st, req);
            }
            maybe = keys.recv(), if keys_open => {
                keys_open = on_key(&mut sh, &mut st, maybe);
            }
            _ = frame.tick() => {
                if !st.hung_up && terminal_hung_up() {
                    // The input side may only ever say "end of file" (read returning 0):
                    // ask the terminal itself, so a dropped session always ends the copy.
                    keys_open = false;
                    sh.step(&mut st, UiEvent::TerminalGone);
                }
                on_frame(&mut sh, &mut st, &mut io, &mut last_tick);
            }
        }
    }
    let Shell { guard, .. } = sh;
    drop(guard);
    LiveEnd {
        app: st.app,
        outcome,
        hung_up: st.hung_up,
        error: None,
    }
}

/// What the key reader read, as an event; false once it ended (the terminal is gone).
pub(crate) fn on_key(sh: &mut Shell, st: &mut State, read: Option<io::Result<TermEvent>>) -> bool {
    let open = read.as_ref().is_some_and(Result::is_ok);
    if let Some(ev) = from_terminal(read) {
        sh.step(st, ev);
    }
    open
}

/// The frame clock's tick: what is queued, then the tick (with the size of the write the
/// kernel still holds, once the engine was told to stop).
fn on_frame<T>(
    sh: &mut Shell,
    st: &mut State,
    io: &mut LiveIo<'_, T>,
    last_tick: &mut std::time::Instant,
) {
    let cancelling = io
        .control
        .cancelled
        .load(Ordering::SeqCst)
        .then(|| io.progress.in_write.load(Ordering::Relaxed));
    feed(sh, st, &io.progress, io.arrivals.queued(None));
    let elapsed_ns = last_tick.elapsed().as_nanos() as u64;
    *last_tick = std::time::Instant::now();
    sh.step(
        st,
        UiEvent::Tick {
            elapsed_ns,
            cancelling,
        },
    );
}

/// The engine's question as an event, its reply channel kept for the answer.
fn ask(sh: &mut Shell, st: &mut State, req: AskRequest) {
    match req {
        AskRequest::Conflict { question, reply } => {
            sh.reply = Some(Pending::Conflict(reply));
            sh.step(st, UiEvent::Conflict(conflict_view(&question)));
        }
        AskRequest::Space { low, reply } => {
            sh.reply = Some(Pending::Space(reply));
            sh.step(st, UiEvent::LowSpace(space_view(&low)));
        }
    }
}

/// The engine has returned: everything up to the sample with its final counters.
async fn take_final_samples<T>(sh: &mut Shell<'_>, st: &mut State, io: &mut LiveIo<'_, T>) {
    let last = io.progress.snapshot();
    let progress = io.progress.clone();
    io.arrivals
        .until_final_sample(&last, |batch| {
            feed(sh, st, &progress, batch);
            Counters {
                bytes: st.app.progress.bytes_copied,
                files: st.app.progress.files_done,
            }
        })
        .await;
}

/// Steps a batch of arrivals (in the order they happened, see [`Arrivals::queued`]); a
/// sample is recorded first, as it arrived.
fn feed(sh: &mut Shell, st: &mut State, progress: &Progress, batch: Vec<Arrival>) {
    for a in batch {
        let ev = match a {
            Arrival::Sample(s) => sample_event(progress, &mut *sh.hooks, *s),
            Arrival::Engine(e) => UiEvent::Engine(e),
        };
        sh.step(st, ev);
    }
}

/// A sample as an event, with the engine's current file and verify counter read beside it.
fn sample_event(progress: &Progress, hooks: &mut dyn LiveHooks, s: Sample) -> UiEvent {
    hooks.on_sample(&s);
    UiEvent::Sample {
        current: progress
            .current()
            .as_ref()
            .map(crate::frontend::state::file_of),
        verified: Some(progress.bytes_verified.load(Ordering::Relaxed)),
        writers: (progress.writers().iter())
            .map(crate::frontend::state::writer_of)
            .collect(),
        sample: Box::new(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Small frames at 5 fps (~2 KB/s) never wait; a big one goes at once, and the frames
    /// after it wait until the average is back under the budget.
    #[test]
    fn a_big_frame_goes_whole_and_the_next_ones_wait_it_out() {
        let t0 = Instant::now();
        let mut r = FrameRate::default();
        for i in 0..50 {
            let t = t0 + ms(200 * i);
            assert!(r.ready(t), "frame {i}");
            r.sent(400, t, t + ms(1));
        }
        let t = t0 + ms(200 * 50);
        assert!(r.ready(t));
        r.sent(16_000, t, t + ms(1));
        // 8 000 of credit, 16 000 sent: 8 000 to wait out at BYTES_PER_SEC.
        let wait = 8_000.0 / BYTES_PER_SEC;
        assert!(!r.ready(t + Duration::from_secs_f64(wait - 0.1)));
        assert!(r.ready(t + ms(1) + Duration::from_secs_f64(wait)));
    }

    /// Whatever the frames cost, over a long run the bytes per second stay under the budget.
    #[test]
    fn the_average_stays_under_the_budget_when_every_frame_is_big() {
        let t0 = Instant::now();
        let mut r = FrameRate::default();
        let (mut sent, mut t) = (0usize, t0);
        while t < t0 + Duration::from_secs(60) {
            if r.ready(t) {
                r.sent(6_000, t, t);
                sent += 6_000;
            }
            t += ms(200);
        }
        // The saved credit, the budget's rate, and the last frame (it may overdraw).
        assert!(
            sent as f64 <= BURST_BYTES + BYTES_PER_SEC * 60.0 + 6_000.0,
            "{sent}"
        );
        let per_s = sent as f64 / 60.0;
        assert!(per_s > BYTES_PER_SEC * 0.6, "{per_s}: frames still go");
    }

    /// A terminal that drains slowly (a write took 800 ms: ssh over a thin link) lowers the
    /// frame rate even for small frames.
    #[test]
    fn a_slow_write_makes_the_next_frame_wait_as_long() {
        let t0 = Instant::now();
        let mut r = FrameRate::default();
        r.sent(300, t0, t0 + ms(800));
        assert!(!r.ready(t0 + ms(1_000)));
        assert!(r.ready(t0 + ms(1_600)));
    }
}
