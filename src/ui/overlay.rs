//! Pop-ups drawn over the screen: the help overlay with the marker legend, the cancel
//! confirmation and the overwrite dialog.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::ui::markers::{self, LEGEND};
use crate::ui::panels::ellipsize_start;
use crate::ui::view::{Dialog, View};

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn popup(area: Rect, buf: &mut Buffer, app: &View, title: &str, lines: Vec<Line<'static>>, w: u16) {
    let t = app.opts.theme;
    let h = lines.len() as u16 + 2;
    let r = centered(area, w, h);
    Clear.render(r, buf);
    let block = Block::new()
        .borders(Borders::ALL)
        .border_set(t.border_set())
        .title(Span::styled(format!(" {title} "), t.title()));
    Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false })
        .render(r, buf);
}

/// Keys and the marker legend.
pub fn help(area: Rect, buf: &mut Buffer, app: &View) {
    let t = app.opts.theme;
    let key = |k: &str, what: &str| {
        Line::from(vec![
            Span::styled(format!("{k:<10}"), t.value()),
            Span::raw(what.to_string()),
        ])
    };
    let mut lines = vec![
        key(
            "q Esc ^C",
            "cancel (asks once; press again to cancel at once)",
        ),
        key("p space", "pause / resume (no I/O is issued while paused)"),
        key(
            "^Z",
            "suspend to the shell: the copy stops too until fg (use p, or tmux, to leave it running)",
        ),
        key("s", "screenshot: PNG, SVG, text chart, Markdown"),
        key("t", "x axis: time / percent complete"),
        key("+ -", "zoom in / out;  ← → scroll through history"),
        key("e k", "show / hide the events and kernel panels"),
        key("b", "writer's time budget and verdict in the kernel panel"),
        Line::raw(""),
        Line::from(Span::styled("chart", t.title())),
        Line::raw(format!(
            "{} copy speed   {} disk write rate   {} average   {} drop",
            t.glyphs.full, t.glyphs.overlay, t.glyphs.avg, t.glyphs.drop_top
        )),
        Line::raw(format!(
            "{} within a column: a short dip hidden by compression",
            t.glyphs.dip
        )),
        Line::from(Span::styled("markers", t.title())),
    ];
    for kind in LEGEND {
        let style = if t.color {
            Style::new().fg(markers::color(kind))
        } else {
            Style::new()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("  {}  ", markers::glyph(kind, t.ascii())), style),
            Span::raw(kind.label().to_string()),
        ]));
    }
    lines.push(Line::from(Span::styled(
        "any key closes this help",
        t.dim(),
    )));
    popup(area, buf, app, "help", lines, 72);
}

/// The cancel confirmation or the overwrite dialog.
pub fn dialog(area: Rect, buf: &mut Buffer, app: &View, d: &Dialog) {
    let t = app.opts.theme;
    match d {
        Dialog::ConfirmCancel => {
            let lines = vec![
                Line::raw("Cancel the copy? Files already copied stay;"),
                Line::raw("the file in progress is removed (never left truncated)."),
                Line::from(Span::styled(
                    "y / q / Esc: cancel     any other key: continue",
                    t.value(),
                )),
            ];
            popup(area, buf, app, "cancel?", lines, 60);
        }
        Dialog::Conflict { path } => {
            let lines = vec![
                Line::raw("The destination already exists:"),
                Line::from(Span::styled(
                    ellipsize_start(path, 54, t.glyphs.ellipsis),
                    t.value(),
                )),
                Line::raw(""),
                Line::from(Span::styled(
                    "o Overwrite  s Skip  a Overwrite all  n Skip all  c Cancel",
                    t.value(),
                )),
            ];
            popup(area, buf, app, "file exists", lines, 62);
        }
    }
}
