//! Marker families: the one vocabulary of event glyphs, colours and names that the live
//! chart, the text chart, the SVG/PNG and the legends share.

/// Marker families: one glyph and colour each, one lane each in the SVG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MarkerKind {
    Drop,
    Txg,
    ZfsThrottle,
    Writeback,
    DirtyThrottle,
    FileError,
    Flush,
    Pause,
    Scan,
    Note,
    /// The copy reached the destination's sustained speed (cache full).
    Phase,
}

/// Every family, in legend order: the `?` help, the man page and the legends list them so.
pub const LEGEND: [MarkerKind; 11] = [
    MarkerKind::Drop,
    MarkerKind::Txg,
    MarkerKind::ZfsThrottle,
    MarkerKind::Writeback,
    MarkerKind::DirtyThrottle,
    MarkerKind::Phase,
    MarkerKind::FileError,
    MarkerKind::Flush,
    MarkerKind::Pause,
    MarkerKind::Scan,
    MarkerKind::Note,
];

impl MarkerKind {
    /// What the marker means, for the help screen and the man page.
    pub fn meaning(self) -> &'static str {
        match self {
            MarkerKind::Drop => "a speed drop (its cause is in the events panel)",
            MarkerKind::Txg => "a ZFS transaction group synced to disk",
            MarkerKind::ZfsThrottle => "the ZFS write throttle delayed writes",
            MarkerKind::Writeback => "dirty data passed the background threshold: writeback began",
            MarkerKind::DirtyThrottle => {
                "dirty data passed the throttle limit: the kernel paces the writer"
            }
            MarkerKind::Phase => "the page cache is full: from here on, the disk's speed",
            MarkerKind::FileError => "a file failed",
            MarkerKind::Flush => "the final flush started / finished",
            MarkerKind::Pause => "paused / resumed",
            MarkerKind::Scan => "the scan of the sources finished (total known)",
            MarkerKind::Note => "a note (events panel only)",
        }
    }

    /// Text-chart glyph: (Unicode, ASCII).
    pub fn glyph(self) -> (char, char) {
        match self {
            MarkerKind::Drop => ('▼', 'v'),
            MarkerKind::Txg => ('T', 'T'),
            MarkerKind::ZfsThrottle => ('Z', 'Z'),
            MarkerKind::Writeback => ('W', 'W'),
            MarkerKind::DirtyThrottle => ('D', 'D'),
            MarkerKind::FileError => ('!', '!'),
            MarkerKind::Flush => ('F', 'F'),
            MarkerKind::Pause => ('P', 'P'),
            MarkerKind::Scan => ('S', 'S'),
            MarkerKind::Note => ('i', 'i'),
            MarkerKind::Phase => ('»', '>'),
        }
    }

    /// Colour in the SVG.
    pub fn colour(self) -> &'static str {
        match self {
            MarkerKind::Drop => "#dc2626",
            MarkerKind::Txg => "#0f766e",
            MarkerKind::ZfsThrottle => "#c026d3",
            MarkerKind::Writeback => "#ea580c",
            MarkerKind::DirtyThrottle => "#7c3aed",
            MarkerKind::FileError => "#b91c1c",
            MarkerKind::Flush => "#475569",
            MarkerKind::Pause => "#64748b",
            MarkerKind::Scan => "#16a34a",
            MarkerKind::Note => "#0369a1",
            MarkerKind::Phase => "#2563eb",
        }
    }

    /// Legend / lane label.
    pub fn label(self) -> &'static str {
        match self {
            MarkerKind::Drop => "drop",
            MarkerKind::Txg => "txg sync",
            MarkerKind::ZfsThrottle => "ZFS throttle",
            MarkerKind::Writeback => "writeback",
            MarkerKind::DirtyThrottle => "dirty throttle",
            MarkerKind::FileError => "file error",
            MarkerKind::Flush => "flush",
            MarkerKind::Pause => "pause",
            MarkerKind::Scan => "scan done",
            MarkerKind::Note => "note",
            MarkerKind::Phase => "at disk speed",
        }
    }

    /// Which glyph wins a text column shared by several events (lower wins).
    pub fn priority(self) -> u8 {
        match self {
            MarkerKind::FileError => 0,
            MarkerKind::Drop => 1,
            MarkerKind::ZfsThrottle => 2,
            MarkerKind::DirtyThrottle => 3,
            MarkerKind::Writeback => 4,
            MarkerKind::Txg => 5,
            MarkerKind::Flush => 6,
            MarkerKind::Pause => 7,
            MarkerKind::Scan => 8,
            MarkerKind::Note => 9,
            MarkerKind::Phase => 5,
        }
    }
}
