//! The events panel: drops with their causes, txg syncs, file errors, newest first.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::fit::fit_line;
use crate::model::EventKind;
use crate::present::text::wrap_words;
use crate::ui::view::View;

/// The events panel: newest first; a drop's diagnosis wraps onto following lines.
pub fn events(area: Rect, buf: &mut Buffer, app: &View) {
    let t = app.opts.theme;
    let evs = app.model.events();
    // A drop still in progress comes first, with the cause the evidence so far gives
    // (provisional: it is decided again when the drop ends).
    let open = app.model.open_drop();
    if evs.is_empty() && open.is_none() {
        Line::from(Span::styled("no events yet", t.dim())).render(Rect { height: 1, ..area }, buf);
        return;
    }
    let stamp_w = 9usize;
    let text_w = (area.width as usize).saturating_sub(stamp_w).max(10);
    let mut y = area.y;
    // A small panel keeps its rows for what explains the chart: sync starts are implied by the
    // commit line that follows them.
    let roomy = area.height >= 8;
    for e in open.iter().chain(evs.iter().rev()) {
        if y >= area.bottom() {
            break;
        }
        let provisional = open.as_ref().is_some_and(|o| std::ptr::eq(o, e));
        if !roomy && matches!(e.kind, EventKind::TxgSyncStarted { .. }) {
            continue;
        }
        let style = match &e.kind {
            EventKind::Drop(_) => t.warn(),
            EventKind::FileError { .. } => t.error(),
            _ => Style::new(),
        };
        let described = if provisional {
            format!("{} (so far)", e.describe())
        } else {
            e.describe()
        };
        let text = if t.ascii() {
            crate::present::text::asciify(&described)
        } else {
            described
        };
        let wrap = matches!(e.kind, EventKind::Drop(_) | EventKind::FileError { .. });
        let lines = if wrap {
            wrap_words(&text, text_w)
        } else {
            vec![text]
        };
        // At most three lines an event; a longer one, or one the panel's bottom cuts, ends
        // its last shown line with the ellipsis.
        let n = lines.len();
        for (i, l) in lines.into_iter().take(3).enumerate() {
            if y >= area.bottom() {
                break;
            }
            let stamp = if i == 0 {
                format!("{}  ", crate::present::format::fmt_event_time(e.t_ns))
            } else {
                " ".repeat(stamp_w)
            };
            let more = i + 1 < n && (i == 2 || y + 1 >= area.bottom());
            let mut line = fit_line(
                Line::from(vec![Span::styled(stamp, t.dim()), Span::styled(l, style)]),
                area.width as usize,
                t.glyphs.ellipsis,
            );
            if more {
                // Appended, then cut again if that made it too long: one ellipsis either way.
                line.spans
                    .push(Span::styled(t.glyphs.ellipsis.to_string(), style));
                line = fit_line(line, area.width as usize, t.glyphs.ellipsis);
            }
            line.render(
                Rect {
                    y,
                    height: 1,
                    ..area
                },
                buf,
            );
            y += 1;
        }
    }
}
