//! The frontend's rules as one pure function: `update(&mut State, Event) -> Vec<Effect>`.
//! The live TUI (a copy or a watch) and the replay are thin shells (frontend/tui.rs,
//! frontend/replay.rs) that turn the world — keys, samples, engine events, overwrite
//! questions, signals, the frame clock — into [`Event`]s and run the [`Effect`]s. Every rule
//! (keys, pause, cancel, the dialogs' answers, seeking) lives here, so tests drive it with no
//! terminal, no engine and no clock.

use crossterm::event::{KeyEvent, KeyEventKind};

use crate::copy::{ConflictAnswer, EngineEvent, SpaceAnswer, Stamped};
use crate::frontend::state::{Action, App};
use crate::model;
use crate::report::recording::RecordingCursor;
use crate::sample::Sample;
use crate::ui::view::{
    ConflictView, Dialog, FileProgress, ReplayStatus, RunState, SpaceView, WriterView,
};

/// A signal the shell caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Int,
    Hup,
    /// SIGCONT; `foreground`: this process group owns the terminal again (`fg`), as opposed
    /// to `kill -CONT` of a job the shell keeps in the background.
    Cont {
        foreground: bool,
    },
}

/// Everything that can happen to a frontend.
#[derive(Debug, Clone)]
pub enum Event {
    Key(KeyEvent),
    Resize,
    /// A sample from the sampler, with what the shell read beside it from the engine's
    /// counters: the current file, and the bytes read back so far by `--verify`.
    Sample {
        sample: Box<Sample>,
        current: Option<FileProgress>,
        verified: Option<u64>,
        /// A watch's followed writers (empty otherwise).
        writers: Vec<WriterView>,
    },
    /// An event from the copy engine, stamped when the engine sent it.
    Engine(Stamped),
    /// The engine asks what to do with an existing destination.
    Conflict(ConflictView),
    /// The engine asks whether to copy although the destination has too little free space
    /// (its workers wait for the answer).
    LowSpace(SpaceView),
    Signal(Signal),
    /// The terminal is gone: input ended or hung up, a draw or a resume failed, or a thread
    /// panicked (its hook restored the terminal).
    TerminalGone,
    /// The frame clock. `elapsed_ns`: wall time since the previous tick (a replay plays by
    /// it). `cancelling`: once the engine was told to stop (by a key, a signal handler or a
    /// "Cancel" answer), the size of the write the kernel still holds.
    Tick {
        elapsed_ns: u64,
        cancelling: Option<u64>,
    },
    /// A screenshot was written (or failed): the message for the footer.
    Screenshot(String),
    /// The engine returned; its final state.
    Finished(RunState),
    /// The frame was not sent (the terminal still needs time for the last ones): draw again.
    Partial,
}

/// What the shell must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Draw a frame now (the user just did something).
    Draw,
    /// Draw a frame when the terminal can take it (what samples and the clock change): over
    /// a slow link or after a big frame the shell skips it and answers [`Event::Partial`].
    DrawPaced,
    /// Back from a suspend: raw mode, the alternate screen, and a full redraw next.
    ResumeTerminal,
    /// Ctrl-Z: give the terminal back to the shell and stop.
    Suspend,
    /// Tell the engine to stop (it removes its temporaries).
    Cancel,
    /// Hold the engine / let it go on.
    Pause,
    Resume,
    /// Answer the engine's pending overwrite question.
    Answer(ConflictAnswer),
    /// Answer the engine's pending free-space question.
    AnswerSpace(SpaceAnswer),
    /// An engine event this run saw (from the engine, or pause/resume from the user: one
    /// source for each), stamped with the model's time, for the recording.
    Record {
        t_ns: u64,
        event: EngineEvent,
    },
    /// New model events, for the recording.
    Events(Vec<model::Event>),
    /// Write a screenshot of the run so far; the shell answers with [`Event::Screenshot`].
    Screenshot,
    /// Leave the loop.
    Quit,
}

/// One item of a recording's timeline.
pub use crate::report::recording::TimelineItem as ReplayItem;

/// Where a replay's items come from: a list in memory (tests, short recordings), or the
/// recording file read forward as it plays (the interactive replay: bounded memory for a
/// day-long recording).
#[derive(Clone)]
pub enum Timeline {
    Items {
        items: Vec<ReplayItem>,
        /// Index of the next unapplied item.
        next: usize,
    },
    Stream(Box<RecordingCursor>),
}

impl Timeline {
    fn peek_t(&mut self) -> Option<u64> {
        match self {
            Timeline::Items { items, next } => items.get(*next).map(ReplayItem::t_ns),
            Timeline::Stream(c) => c.peek_t(),
        }
    }

    fn next_item(&mut self) -> Option<ReplayItem> {
        match self {
            Timeline::Items { items, next } => {
                let item = items.get(*next).cloned();
                *next += usize::from(item.is_some());
                item
            }
            Timeline::Stream(c) => c.next_item(),
        }
    }

    fn rewind(&mut self) {
        match self {
            Timeline::Items { next, .. } => *next = 0,
            Timeline::Stream(c) => c.rewind(),
        }
    }

    /// Why the file stopped before its end, once.
    fn take_error(&mut self) -> Option<String> {
        match self {
            Timeline::Items { .. } => None,
            Timeline::Stream(c) => c.take_error(),
        }
    }
}

impl From<Vec<ReplayItem>> for Timeline {
    fn from(items: Vec<ReplayItem>) -> Self {
        Timeline::Items { items, next: 0 }
    }
}

/// A replay's position in its recording.
#[derive(Clone)]
pub struct Player {
    timeline: Timeline,
    pos_ns: u64,
    /// The app before any item: a seek backwards rebuilds the model from it (the model only
    /// moves forward).
    initial: App,
}

impl Player {
    pub fn new(initial: App, timeline: impl Into<Timeline>) -> Self {
        Player {
            timeline: timeline.into(),
            pos_ns: 0,
            initial,
        }
    }

    /// Where the replay is, in ns since the recording's start.
    pub fn position_ns(&self) -> u64 {
        self.pos_ns
    }

    /// Applies the items up to `pos_ns` to `app`.
    fn advance(&mut self, app: &mut App, pos_ns: u64) {
        while self.timeline.peek_t().is_some_and(|t| t <= pos_ns) {
            match self.timeline.next_item() {
                Some(ReplayItem::Sample(s)) => {
                    app.on_sample(&s);
                }
                Some(ReplayItem::Engine(t, e)) => {
                    app.on_engine(t, &e);
                }
                None => break,
            }
        }
        if let Some(why) = self.timeline.take_error() {
            app.status = Some((format!("the recording ends early: {why}"), app.now_ns));
        }
        self.pos_ns = pos_ns;
        app.now_ns = app.now_ns.max(pos_ns);
    }

    /// Moves to `target_ns`; backwards means replaying from the start (a streamed recording
    /// is read again from its first line), keeping what the user is looking at (axis, zoom,
    /// panels) and the playback speed.
    fn seek(&mut self, app: &mut App, target_ns: u64) {
        if target_ns < self.pos_ns {
            let (view, replay, status) = (app.view, app.replay, app.status.take());
            *app = self.initial.clone();
            app.view = view;
            app.replay = replay;
            app.status = status;
            self.timeline.rewind();
        }
        self.advance(app, target_ns);
        app.now_ns = target_ns;
    }
}

/// Which loop a state belongs to.
#[derive(Clone)]
pub enum Mode {
    /// A copy or a watch: the engine runs while the screen is up.
    Live,
    Replay(Box<Player>),
}

/// Playback speeds cycled with `x`.
pub const SPEEDS: [f64; 4] = [1.0, 10.0, 100.0, f64::INFINITY];

/// Everything a frontend loop knows: the screen's [`App`] and the loop's own facts.
#[derive(Clone)]
pub struct State {
    pub app: App,
    pub mode: Mode,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// The terminal is gone: draw nothing more, print nothing after.
    pub hung_up: bool,
    /// Continued in the background (`kill -CONT` of a stopped job): draw nothing until `fg`.
    pub background: bool,
    /// The engine is paused by the user.
    pub paused: bool,
    /// The engine was told to stop.
    pub cancelled: bool,
    /// An overwrite question waits for its answer.
    pub asking: bool,
    /// The free-space question waits for its answer.
    pub asking_space: bool,
    /// The loop ends.
    pub quit: bool,
    /// The next frame answers the user (a key, a dialog, a signal): sent whole, not paced.
    pub urgent: bool,
}

impl State {
    /// A live copy's or watch's state.
    pub fn live(app: App) -> Self {
        State::new(app, Mode::Live)
    }

    /// A replay of `timeline` (time-ordered) lasting `total_ns`, from its beginning.
    pub fn replay(mut app: App, timeline: impl Into<Timeline>, total_ns: u64, speed: f64) -> Self {
        app.state = RunState::Replay;
        app.replay = Some(ReplayStatus {
            speed,
            paused: false,
            total_ns,
        });
        let player = Player::new(app.clone(), timeline);
        State::new(app, Mode::Replay(Box::new(player)))
    }

    fn new(app: App, mode: Mode) -> Self {
        State {
            app,
            mode,
            dirty: true,
            hung_up: false,
            background: false,
            paused: false,
            cancelled: false,
            asking: false,
            asking_space: false,
            quit: false,
            urgent: true,
        }
    }

    /// The replay's position, if this is a replay.
    pub fn replay_position_ns(&self) -> Option<u64> {
        match &self.mode {
            Mode::Replay(p) => Some(p.position_ns()),
            Mode::Live => None,
        }
    }

    fn is_replay(&self) -> bool {
        matches!(self.mode, Mode::Replay(_))
    }

    /// Stops the engine once: answers a pending question with "Cancel" first, so its worker
    /// returns, and says "cancelling" at once.
    fn cancel(&mut self, fx: &mut Vec<Effect>) {
        if self.asking {
            self.asking = false;
            if matches!(self.app.dialog, Some(Dialog::Conflict(_))) {
                self.app.dialog = None;
            }
            fx.push(Effect::Answer(ConflictAnswer::Cancel));
        }
        if self.asking_space {
            self.asking_space = false;
            if matches!(self.app.dialog, Some(Dialog::LowSpace(_))) {
                self.app.dialog = None;
            }
            fx.push(Effect::AnswerSpace(SpaceAnswer::Cancel));
        }
        if !self.cancelled {
            self.cancelled = true;
            self.paused = false;
            if self.app.cancelling.is_none() {
                self.app.cancelling = Some(0);
            }
            fx.push(Effect::Cancel);
        }
        self.dirty = true;
    }

    /// The way out for a terminal that is gone or a signal: a live run cancels (the shell
    /// then waits for the engine to clean up), a replay just ends.
    fn stop(&mut self, fx: &mut Vec<Effect>) {
        if self.is_replay() {
            self.quit = true;
            fx.push(Effect::Quit);
        } else {
            self.cancel(fx);
        }
    }

    /// Feeds an engine event (from the engine, stamped when it was sent, or made by the user
    /// now) to the model and the recording.
    fn engine(&mut self, t: u64, ev: EngineEvent, fx: &mut Vec<Effect>) {
        let evs = self.app.on_engine(t, &ev);
        fx.push(Effect::Record { t_ns: t, event: ev });
        if !evs.is_empty() {
            fx.push(Effect::Events(evs));
        }
        self.dirty = true;
    }

    /// p / space in a live run: the one place a pause or resume is decided and recorded.
    fn toggle_pause(&mut self, fx: &mut Vec<Effect>) {
        if self.cancelled {
            return;
        }
        self.paused = !self.paused;
        let (effect, event) = if self.paused {
            (Effect::Pause, EngineEvent::Paused)
        } else {
            (Effect::Resume, EngineEvent::Resumed)
        };
        fx.push(effect);
        self.engine(self.app.now_ns, event, fx);
    }
}

/// The key table's suspend key, pressed (not repeated): the shell's, so it is taken before
/// the screen's keys.
fn is_suspend(k: &KeyEvent) -> bool {
    k.kind == KeyEventKind::Press
        && crate::frontend::state::press_of(k).is_some_and(crate::present::keys::suspends)
}

/// The frontend's one rule book: applies `event` to `st` and says what the shell must do.
pub fn update(st: &mut State, event: Event) -> Vec<Effect> {
    let mut fx = Vec::new();
    if matches!(
        event,
        Event::Key(_)
            | Event::Resize
            | Event::Conflict(_)
            | Event::LowSpace(_)
            | Event::Signal(_)
            | Event::TerminalGone
            | Event::Screenshot(_)
    ) {
        st.urgent = true;
    }
    match event {
        Event::Key(k) if is_suspend(&k) => {
            fx.push(Effect::Suspend);
            st.dirty = true;
        }
        Event::Key(k) => key(st, k, &mut fx),
        Event::Resize => st.dirty = true,
        e @ Event::Sample { .. } => on_sample(st, e, &mut fx),
        // The engine never pauses on its own; a pause or resume it echoes was already
        // recorded when the key was pressed, and is not recorded twice.
        Event::Engine(Stamped {
            event: EngineEvent::Paused,
            ..
        }) if st.paused => {}
        Event::Engine(Stamped {
            event: EngineEvent::Resumed,
            ..
        }) if !st.paused => {}
        Event::Engine(Stamped { t_ns, event: ev }) => {
            match ev {
                EngineEvent::Paused => st.paused = true,
                EngineEvent::Resumed => st.paused = false,
                _ => {}
            }
            st.engine(t_ns, ev, &mut fx);
        }
        // A question after the cancel is answered "cancel" at once; else its dialog opens.
        Event::Conflict(_) if st.cancelled => fx.push(Effect::Answer(ConflictAnswer::Cancel)),
        Event::LowSpace(_) if st.cancelled => fx.push(Effect::AnswerSpace(SpaceAnswer::Cancel)),
        Event::Conflict(c) => {
            st.app.dialog = Some(Dialog::Conflict(c));
            st.asking = true;
            st.dirty = true;
        }
        Event::LowSpace(s) => {
            st.app.dialog = Some(Dialog::LowSpace(s));
            st.asking_space = true;
            st.dirty = true;
        }
        Event::Signal(Signal::Term | Signal::Int) => st.stop(&mut fx),
        Event::Signal(Signal::Hup) | Event::TerminalGone => {
            st.hung_up = true;
            st.stop(&mut fx);
        }
        Event::Signal(Signal::Cont { foreground }) => {
            // In the background, touching the terminal would stop us again (SIGTTOU) or draw
            // over the shell: wait for `fg`, which sends SIGCONT again.
            st.background = !foreground;
            if foreground && !st.hung_up {
                fx.push(Effect::ResumeTerminal);
            }
            st.dirty = true;
        }
        Event::Tick {
            elapsed_ns,
            cancelling,
        } => tick(st, elapsed_ns, cancelling, &mut fx),
        Event::Screenshot(msg) => {
            st.app.status = Some((msg, st.app.now_ns));
            st.dirty = true;
        }
        Event::Partial => st.dirty = true,
        Event::Finished(state) => finished(st, state, &mut fx),
    }
    fx
}

/// A sample through the app and its model, with the engine's current file, the bytes read
/// back and a watch's writers beside it.
fn on_sample(st: &mut State, e: Event, fx: &mut Vec<Effect>) {
    let Event::Sample {
        sample,
        current,
        verified,
        writers,
    } = e
    else {
        return;
    };
    st.app.writers = writers;
    let evs = st.app.on_sample(&sample);
    if !evs.is_empty() {
        fx.push(Effect::Events(evs));
    }
    st.app.current = current;
    if st.app.state == RunState::Verifying || st.app.verified.is_some() {
        st.app.verified = verified.or(st.app.verified);
    }
    st.dirty = true;
}

/// The engine returned: its final state drawn (unless the terminal is gone), and the loop
/// ends.
fn finished(st: &mut State, state: RunState, fx: &mut Vec<Effect>) {
    st.app.state = state;
    st.app.current = None;
    st.asking = false;
    st.asking_space = false;
    if !st.hung_up {
        fx.push(Effect::Draw);
    }
    st.dirty = false;
    st.quit = true;
    fx.push(Effect::Quit);
}

/// The frame clock: a cancel from outside the keys noticed, a replay moved on by the wall
/// time since the last tick at its speed, and a frame when something changed (at once when
/// it answers the user, paced otherwise).
fn tick(st: &mut State, elapsed_ns: u64, cancelling: Option<u64>, fx: &mut Vec<Effect>) {
    if let Some(n) = cancelling
        && st.app.cancelling != Some(n)
    {
        // Cancelled from outside the keys too (a signal handler, a "Cancel" answer).
        st.cancelled = true;
        st.app.cancelling = Some(n);
        st.dirty = true;
        st.urgent = true;
    }
    if let Mode::Replay(p) = &mut st.mode
        && let Some(r) = st.app.replay
        && !r.paused
        && p.pos_ns < r.total_ns
    {
        let pos = if r.speed.is_infinite() {
            r.total_ns
        } else {
            ((p.pos_ns as f64 + elapsed_ns as f64 * r.speed) as u64).min(r.total_ns)
        };
        p.advance(&mut st.app, pos);
        st.dirty = true;
    }
    if st.dirty && !st.hung_up && !st.background {
        fx.push(if st.urgent {
            Effect::Draw
        } else {
            Effect::DrawPaced
        });
        st.dirty = false;
        st.urgent = false;
    }
}

/// A key press: the app maps it to an action (changing what is shown on the way); the
/// action becomes effects here.
fn key(st: &mut State, k: KeyEvent, fx: &mut Vec<Effect>) {
    let action = st.app.handle_key(k);
    st.dirty = true;
    match action {
        Action::None | Action::Redraw => {}
        Action::Quit => {
            st.quit = true;
            fx.push(Effect::Quit);
        }
        Action::Cancel if st.is_replay() => {
            st.quit = true;
            fx.push(Effect::Quit);
        }
        Action::Cancel => st.cancel(fx),
        Action::Answer(a) => {
            if st.asking {
                st.asking = false;
                fx.push(Effect::Answer(a));
            }
            if a == ConflictAnswer::Cancel {
                st.cancel(fx);
            }
        }
        Action::AnswerSpace(a) => {
            if st.asking_space {
                st.asking_space = false;
                fx.push(Effect::AnswerSpace(a));
            }
            if a == SpaceAnswer::Cancel {
                st.cancel(fx);
            }
        }
        Action::TogglePause => match &st.mode {
            Mode::Live => st.toggle_pause(fx),
            Mode::Replay(_) => {
                if let Some(r) = &mut st.app.replay {
                    r.paused = !r.paused;
                }
            }
        },
        Action::Screenshot => fx.push(Effect::Screenshot),
        Action::CycleSpeed => {
            if let Some(r) = &mut st.app.replay {
                let i = SPEEDS
                    .iter()
                    .position(|s| *s == r.speed)
                    .map_or(0, |i| (i + 1) % SPEEDS.len());
                r.speed = SPEEDS[i];
            }
        }
        Action::Seek(_) | Action::SeekStart | Action::SeekEnd => {
            if let Mode::Replay(p) = &mut st.mode {
                let total = st.app.replay.map_or(0, |r| r.total_ns);
                let target = match action {
                    Action::Seek(d) => p.pos_ns.saturating_add_signed(d).min(total),
                    Action::SeekStart => 0,
                    _ => total,
                };
                p.seek(&mut st.app, target);
            }
        }
    }
}
