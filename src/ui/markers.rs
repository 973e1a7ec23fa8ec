//! Event markers under the chart. The vocabulary (families, glyphs, priorities, labels) is the
//! exporters' [`MarkerKind`], so the terminal, the PNG and the text chart speak one language;
//! this file adds the terminal colours and the drop spans.

use ratatui::style::Color;

use crate::model::{Event, EventKind, Model};
use crate::present::markers::MarkerKind;
use crate::ui::chart::{Marker, Span};

pub use crate::present::markers::LEGEND;

/// Terminal colour of a family.
pub fn color(kind: MarkerKind) -> Color {
    match kind {
        MarkerKind::Drop | MarkerKind::FileError => Color::Red,
        MarkerKind::Txg => Color::Magenta,
        MarkerKind::ZfsThrottle | MarkerKind::DirtyThrottle => Color::LightRed,
        MarkerKind::Writeback => Color::Yellow,
        MarkerKind::Flush | MarkerKind::Scan | MarkerKind::Note | MarkerKind::Phase => Color::Cyan,
        MarkerKind::Pause => Color::Blue,
    }
}

/// The glyph of a family (`ascii` for `--ascii`).
pub fn glyph(kind: MarkerKind, ascii: bool) -> char {
    let (u, a) = kind.glyph();
    if ascii { a } else { u }
}

/// Markers for a list of events; `progress_at` maps a time to the fraction complete.
pub fn markers(
    events: &[Event],
    ascii: bool,
    progress_at: impl Fn(u64) -> Option<f64>,
) -> Vec<Marker> {
    events
        .iter()
        .filter(|e| !matches!(e.kind, EventKind::Note { .. }))
        .map(|e| {
            let kind = MarkerKind::of(&e.kind);
            Marker {
                t_ns: e.t_ns,
                progress: progress_at(e.t_ns),
                glyph: glyph(kind, ascii),
                color: color(kind),
                // MarkerKind: lower wins; the chart: higher wins.
                priority: u8::MAX - kind.priority(),
            }
        })
        .collect()
}

/// Drop spans to highlight: the model's finished drops plus the one still open.
pub fn drop_spans(model: &Model, now_ns: u64) -> Vec<Span> {
    let mut spans: Vec<Span> = model
        .drop_spans()
        .map(|(start_ns, end_ns)| Span { start_ns, end_ns })
        .collect();
    if let Some(start_ns) = model.open_drop_start() {
        spans.push(Span {
            start_ns,
            end_ns: now_ns,
        });
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_win_over_txg_markers_in_a_shared_column() {
        let evs = vec![
            Event {
                t_ns: 5,
                kind: EventKind::TxgCommitted {
                    txg: 1,
                    ndirty: 1,
                    nwritten: 1,
                    stime_ns: 1,
                },
            },
            Event {
                t_ns: 5,
                kind: EventKind::Drop(crate::model::DropInfo {
                    end_ns: 9,
                    reference_bps: 1.0,
                    min_bps: 0.0,
                    bytes_lost: 1.0,
                    causes: vec![],
                    held_exact_ns: None,
                }),
            },
            Event {
                t_ns: 6,
                kind: EventKind::Note { text: "x".into() },
            },
        ];
        let m = markers(&evs, true, |_| None);
        assert_eq!(m.len(), 2, "notes are not marked");
        let best = m.iter().max_by_key(|m| m.priority).unwrap();
        assert_eq!(best.glyph, 'v');
    }
}
