//! The marker vocabulary: which glyph and colour each event kind gets under the chart, which
//! wins when two share a column, and the legend text the help overlay shows.

use ratatui::style::Color;

use crate::model::{Event, EventKind};
use crate::ui::chart::{Marker, Span};

/// One legend row: glyph, colour, meaning.
pub struct LegendEntry {
    pub glyph: char,
    pub color: Color,
    pub meaning: &'static str,
}

/// Every marker glyph with its meaning (the help overlay's legend).
pub const LEGEND: &[LegendEntry] = &[
    LegendEntry {
        glyph: 'D',
        color: Color::Red,
        meaning: "speed drop (cause in the events panel)",
    },
    LegendEntry {
        glyph: 'T',
        color: Color::Magenta,
        meaning: "ZFS txg committed (flushed to disk)",
    },
    LegendEntry {
        glyph: 's',
        color: Color::Magenta,
        meaning: "ZFS txg sync started",
    },
    LegendEntry {
        glyph: 'Z',
        color: Color::LightRed,
        meaning: "ZFS write throttle delayed writers",
    },
    LegendEntry {
        glyph: 'W',
        color: Color::Yellow,
        meaning: "page cache writeback started (dirty > background)",
    },
    LegendEntry {
        glyph: 'X',
        color: Color::LightRed,
        meaning: "dirty pages in the throttle zone (> freerun)",
    },
    LegendEntry {
        glyph: '!',
        color: Color::Red,
        meaning: "file error",
    },
    LegendEntry {
        glyph: 'P',
        color: Color::Blue,
        meaning: "paused / resumed",
    },
    LegendEntry {
        glyph: 'F',
        color: Color::Cyan,
        meaning: "flush to disk started / done",
    },
    LegendEntry {
        glyph: 'S',
        color: Color::Cyan,
        meaning: "scan finished (totals final)",
    },
];

/// The glyph, colour and priority for an event, or None for events not marked on the chart.
pub fn marker_style(kind: &EventKind) -> Option<(char, Color, u8)> {
    Some(match kind {
        EventKind::Drop(_) => ('D', Color::Red, 9),
        EventKind::TxgCommitted { .. } => ('T', Color::Magenta, 6),
        EventKind::TxgSyncStarted { .. } => ('s', Color::Magenta, 3),
        EventKind::ZfsDelay { .. } => ('Z', Color::LightRed, 5),
        EventKind::WritebackStarted { .. } => ('W', Color::Yellow, 7),
        EventKind::DirtyThrottleZone { .. } => ('X', Color::LightRed, 8),
        EventKind::FileError { .. } => ('!', Color::Red, 8),
        EventKind::Paused | EventKind::Resumed => ('P', Color::Blue, 4),
        EventKind::FlushStarted { .. } | EventKind::FlushDone { .. } => ('F', Color::Cyan, 4),
        EventKind::ScanDone { .. } => ('S', Color::Cyan, 2),
        EventKind::Note { .. } => return None,
    })
}

/// Markers for a list of events; `progress_at` maps a time to the fraction complete.
pub fn markers(events: &[Event], progress_at: impl Fn(u64) -> Option<f64>) -> Vec<Marker> {
    events
        .iter()
        .filter_map(|e| {
            let (glyph, color, priority) = marker_style(&e.kind)?;
            Some(Marker {
                t_ns: e.t_ns,
                progress: progress_at(e.t_ns),
                glyph,
                color,
                priority,
            })
        })
        .collect()
}

/// Drop spans to highlight, from drop events plus the drop still open (if any).
pub fn drop_spans(events: &[Event], open_drop_start: Option<u64>, now_ns: u64) -> Vec<Span> {
    let mut spans: Vec<Span> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Drop(d) => Some(Span {
                start_ns: e.t_ns,
                end_ns: d.end_ns,
            }),
            _ => None,
        })
        .collect();
    if let Some(s) = open_drop_start {
        spans.push(Span {
            start_ns: s,
            end_ns: now_ns,
        });
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_marked_glyph_is_in_the_legend() {
        let kinds = [
            EventKind::TxgSyncStarted { txg: 1 },
            EventKind::TxgCommitted {
                txg: 1,
                ndirty: 1,
                nwritten: 1,
                stime_ns: 1,
            },
            EventKind::WritebackStarted {
                dirty: 1,
                bg_thresh: 1,
            },
            EventKind::DirtyThrottleZone {
                dirty: 1,
                freerun: 1,
            },
            EventKind::ZfsDelay { delays: 1 },
            EventKind::Paused,
            EventKind::ScanDone { files: 1, bytes: 1 },
            EventKind::FlushDone { secs: 1.0 },
        ];
        for k in kinds {
            let (g, _, _) = marker_style(&k).expect("marked");
            assert!(
                LEGEND.iter().any(|l| l.glyph == g),
                "{g} missing from legend"
            );
        }
    }
}
