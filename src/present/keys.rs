//! The keys of the live TUI and of replay: one table that the `?` help screen and the man
//! page's KEYS section print and that the key handler (frontend/state.rs) looks keys up in,
//! so what is documented is what a key does.

/// Where a key works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The live copy (and watch).
    Live,
    /// `copyscope replay`.
    Replay,
    /// Both.
    Both,
}

/// A key as the handler sees it, without the terminal library's types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    Char(char),
    /// A character typed with Ctrl held (`^C`).
    Ctrl(char),
    Esc,
    Enter,
    Left,
    Right,
    Home,
    End,
    /// Any other key (a function key, Tab …): bound to nothing, but it closes the help.
    Other,
}

impl Press {
    /// The press a name in the table's `keys` stands for ("q", "Esc", "^C", "space" …).
    pub fn named(name: &str) -> Option<Press> {
        let mut chars = name.chars();
        Some(match (name, chars.next(), chars.next(), chars.next()) {
            ("Esc", ..) => Press::Esc,
            ("Enter", ..) => Press::Enter,
            ("Left", ..) => Press::Left,
            ("Right", ..) => Press::Right,
            ("Home", ..) => Press::Home,
            ("End", ..) => Press::End,
            ("space", ..) => Press::Char(' '),
            (_, Some('^'), Some(c), None) => Press::Ctrl(c.to_ascii_lowercase()),
            (_, Some(c), None, _) => Press::Char(c),
            _ => return None,
        })
    }
}

/// An answer to "the destination exists".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileExists {
    Overwrite,
    Skip,
    Rename,
    OverwriteAll,
    SkipAll,
    OverwriteAllOlder,
    /// Cancel the copy.
    Cancel,
}

/// What a key does where its row applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Does {
    /// Cancel a live run (asking first) or leave a finished one or a replay; in a dialog, its
    /// "cancel"; with the help open, close it.
    Quit,
    Pause,
    /// Ctrl-Z: back to the shell.
    Suspend,
    /// Replay: the next playback speed.
    Speed,
    /// Seek back in a replay, or scroll back through a zoomed chart.
    Back,
    /// Seek forward in a replay, or scroll forward through a zoomed chart.
    Forward,
    /// Replay: to the start.
    Start,
    /// Replay: to the end.
    End,
    Screenshot,
    /// The x axis: time or percent complete.
    Axis,
    ZoomIn,
    ZoomOut,
    EventsPanel,
    KernelPanel,
    Budget,
    Help,
    /// An answer in the "file exists" dialog.
    Exists(FileExists),
    /// "Not enough space": copy anyway; and yes to "cancel the copy?".
    Yes,
    /// "Not enough space": cancel.
    No,
}

/// One row of the key table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The keys as the user types them (ASCII names, so `--ascii` prints them unchanged).
    pub keys: &'static str,
    pub what: &'static str,
    pub mode: Mode,
    /// What each key of the row does: the ones `keys` names, and aliases it leaves out
    /// (upper case, Enter, `=` for `+`).
    pub binds: &'static [(Press, Does)],
}

impl Key {
    /// True when this key works in replay (`replay`) or in a live run (`!replay`).
    pub fn applies(&self, replay: bool) -> bool {
        match self.mode {
            Mode::Both => true,
            Mode::Live => !replay,
            Mode::Replay => replay,
        }
    }
}

const fn key(
    keys: &'static str,
    what: &'static str,
    mode: Mode,
    binds: &'static [(Press, Does)],
) -> Key {
    Key {
        keys,
        what,
        mode,
        binds,
    }
}

use Does::*;
use Press::{Char, Ctrl};

const QUIT: &[(Press, Does)] = &[(Char('q'), Quit), (Press::Esc, Quit), (Ctrl('c'), Quit)];
const PAUSE: &[(Press, Does)] = &[(Char('p'), Pause), (Char(' '), Pause)];
const SCROLL: &[(Press, Does)] = &[(Press::Left, Back), (Press::Right, Forward)];

/// Every key, in the order the help screen lists them.
pub const KEYS: [Key; 16] = [
    key(
        "q Esc ^C",
        "cancel (asks once; press again to cancel at once)",
        Mode::Live,
        QUIT,
    ),
    key("q Esc ^C", "quit", Mode::Replay, QUIT),
    key(
        "p space",
        "pause / resume (no I/O is issued while paused)",
        Mode::Live,
        PAUSE,
    ),
    key(
        "p space",
        "pause / resume the playback",
        Mode::Replay,
        PAUSE,
    ),
    key(
        "^Z",
        "suspend: the copy waits too until fg; use tmux to keep it going",
        Mode::Live,
        &[(Ctrl('z'), Suspend), (Ctrl('Z'), Suspend)],
    ),
    key(
        "x",
        "playback speed: 1x, 10x, 100x, as fast as possible",
        Mode::Replay,
        &[(Char('x'), Speed)],
    ),
    key(
        "Left Right",
        "seek 5 s back / forward (when not zoomed)",
        Mode::Replay,
        SCROLL,
    ),
    key(
        "Home End",
        "jump to the start / the end",
        Mode::Replay,
        &[(Press::Home, Start), (Press::End, End)],
    ),
    key(
        "s",
        "screenshot (PNG, SVG, text, Markdown) to --screenshot DIR or ./",
        Mode::Both,
        &[(Char('s'), Screenshot)],
    ),
    key(
        "t",
        "x axis: time / percent complete",
        Mode::Both,
        &[(Char('t'), Axis)],
    ),
    key(
        "+ -",
        "zoom in / out; Left Right then scroll through history",
        Mode::Both,
        &[
            (Char('+'), ZoomIn),
            (Char('='), ZoomIn),
            (Char('-'), ZoomOut),
            (Char('_'), ZoomOut),
            (Press::Left, Back),
            (Press::Right, Forward),
        ],
    ),
    key(
        "e k",
        "show / hide the events and kernel panels",
        Mode::Both,
        &[(Char('e'), EventsPanel), (Char('k'), KernelPanel)],
    ),
    key(
        "b",
        "the writer's time budget and verdict in the kernel panel",
        Mode::Both,
        &[(Char('b'), Budget)],
    ),
    key(
        "o s r a n l",
        "file exists: overwrite, skip, rename, all, skip all, all older",
        Mode::Live,
        &[
            (Char('o'), Exists(FileExists::Overwrite)),
            (Char('O'), Exists(FileExists::Overwrite)),
            (Press::Enter, Exists(FileExists::Overwrite)),
            (Char('s'), Exists(FileExists::Skip)),
            (Char('r'), Exists(FileExists::Rename)),
            (Char('R'), Exists(FileExists::Rename)),
            (Char('a'), Exists(FileExists::OverwriteAll)),
            (Char('A'), Exists(FileExists::OverwriteAll)),
            (Char('n'), Exists(FileExists::SkipAll)),
            (Char('S'), Exists(FileExists::SkipAll)),
            (Char('l'), Exists(FileExists::OverwriteAllOlder)),
            (Char('L'), Exists(FileExists::OverwriteAllOlder)),
        ],
    ),
    key(
        "c / y n",
        "file exists: cancel; not enough space: copy anyway, cancel",
        Mode::Live,
        &[
            (Char('c'), Exists(FileExists::Cancel)),
            (Char('y'), Yes),
            (Char('Y'), Yes),
            (Press::Enter, Yes),
            (Char('n'), No),
        ],
    ),
    key(
        "? h",
        "this help (any key closes it)",
        Mode::Both,
        &[(Char('?'), Help), (Char('h'), Help)],
    ),
];

/// What `press` does in a live run or a replay, among the actions `wanted` admits (a
/// dialog admits its answers only: `s` is "skip" there, not a screenshot).
pub fn lookup(press: Press, replay: bool, wanted: impl Fn(Does) -> bool) -> Option<Does> {
    KEYS.iter()
        .filter(|k| k.applies(replay))
        .flat_map(|k| k.binds)
        .find(|(p, d)| *p == press && wanted(*d))
        .map(|(_, d)| *d)
}

/// Whether `press` is the shell's suspend key. It suspends every screen, a replay's too; the
/// table lists it for the live run, where the copy waits with it.
pub fn suspends(press: Press) -> bool {
    KEYS.iter()
        .flat_map(|k| k.binds)
        .any(|(p, d)| *p == press && *d == Suspend)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_ascii_and_described() {
        for k in KEYS {
            assert!(k.keys.is_ascii() && !k.what.is_empty(), "{k:?}");
        }
        assert!(KEYS.iter().any(|k| k.applies(true)) && KEYS.iter().any(|k| k.applies(false)));
    }

    #[test]
    fn a_dialog_finds_its_own_meaning_of_a_key() {
        let exists = |d: Does| matches!(d, Does::Exists(_));
        assert_eq!(
            lookup(Char('s'), false, exists),
            Some(Does::Exists(FileExists::Skip))
        );
        assert_eq!(lookup(Char('s'), false, |_| true), Some(Screenshot));
        assert_eq!(lookup(Press::Home, false, |_| true), None, "replay only");
        assert!(suspends(Ctrl('z')) && !suspends(Char('z')));
    }
}
