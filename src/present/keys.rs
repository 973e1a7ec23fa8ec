//! The keys of the live TUI and of replay: one table that the `?` help screen and the man
//! page's KEYS section both print, so they never disagree with each other.

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

/// One row of the key table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The keys as the user types them (ASCII names, so `--ascii` prints them unchanged).
    pub keys: &'static str,
    pub what: &'static str,
    pub mode: Mode,
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

const fn key(keys: &'static str, what: &'static str, mode: Mode) -> Key {
    Key { keys, what, mode }
}

/// Every key, in the order the help screen lists them.
pub const KEYS: [Key; 16] = [
    key(
        "q Esc ^C",
        "cancel (asks once; press again to cancel at once)",
        Mode::Live,
    ),
    key("q Esc ^C", "quit", Mode::Replay),
    key(
        "p space",
        "pause / resume (no I/O is issued while paused)",
        Mode::Live,
    ),
    key("p space", "pause / resume the playback", Mode::Replay),
    key(
        "^Z",
        "suspend: the copy waits too until fg; use tmux to keep it going",
        Mode::Live,
    ),
    key(
        "x",
        "playback speed: 1x, 10x, 100x, as fast as possible",
        Mode::Replay,
    ),
    key(
        "Left Right",
        "seek 5 s back / forward (when not zoomed)",
        Mode::Replay,
    ),
    key("Home End", "jump to the start / the end", Mode::Replay),
    key(
        "s",
        "screenshot (PNG, SVG, text, Markdown) to --screenshot DIR or ./",
        Mode::Both,
    ),
    key("t", "x axis: time / percent complete", Mode::Both),
    key(
        "+ -",
        "zoom in / out; Left Right then scroll through history",
        Mode::Both,
    ),
    key(
        "e k",
        "show / hide the events and kernel panels",
        Mode::Both,
    ),
    key(
        "b",
        "the writer's time budget and verdict in the kernel panel",
        Mode::Both,
    ),
    key(
        "o s r a n l",
        "file exists: overwrite, skip, rename, all, skip all, all older",
        Mode::Live,
    ),
    key(
        "c / y n",
        "file exists: cancel; not enough space: copy anyway, cancel",
        Mode::Live,
    ),
    key("? h", "this help (any key closes it)", Mode::Both),
];

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
}
