//! Pop-ups drawn over the screen: the help overlay with the marker legend, the cancel
//! confirmation and the overwrite dialog.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::present::format::fmt_count;
use crate::present::keys::KEYS;
use crate::ui::markers::{self, LEGEND};
use crate::ui::panels::{ellipsize_start, fit_line};
use crate::ui::theme::Theme;
use crate::ui::view::{ConflictView, Dialog, FileSide, SpaceView, View};

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

/// The name of a terminal colour, said beside each sample in the help (NO_COLOR: nothing).
fn colour_name(c: Color) -> &'static str {
    match c {
        Color::Red => "red",
        Color::LightRed => "light red",
        Color::Green => "green",
        Color::Yellow => "yellow",
        Color::Blue => "blue",
        Color::Magenta => "magenta",
        Color::Cyan => "cyan",
        Color::Gray => "grey",
        Color::DarkGray => "dark grey",
        _ => "",
    }
}

/// Keys (for a live run or a replay), then every glyph and colour the screen draws: the
/// chart's, the markers' (the one table in present/markers.rs) and the panels'. On a short
/// terminal the glyphs flow several to a line with their names only.
pub fn help(area: Rect, buf: &mut Buffer, app: &View) {
    let t = app.opts.theme;
    let replay = app.replay.is_some();
    let title = |s: &str| Line::from(Span::styled(s.to_string(), t.title()));
    let (chart, marks, panels) = legend(app);
    let mut lines = vec![title("keys")];
    let keys_w = KEYS.iter().map(|k| k.keys.len()).max().unwrap_or(0) + 1;
    for k in KEYS.iter().filter(|k| k.applies(replay)) {
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<keys_w$}", k.keys), t.value()),
            Span::raw(k.what.to_string()),
        ]));
    }
    let groups = [("chart", &chart), ("markers", &marks), ("panels", &panels)];
    let full: Vec<Vec<Line<'static>>> = groups
        .iter()
        .map(|(_, items)| sample_lines(items, t))
        .collect();
    let widest = lines
        .iter()
        .chain(full.iter().flatten())
        .map(Line::width)
        .max()
        .unwrap_or(0) as u16
        + 2;
    let full_len = lines.len() + full.iter().map(|v| v.len() + 1).sum::<usize>() + 3;
    let roomy = full_len <= area.height as usize && widest <= area.width;
    let width = if roomy {
        widest
    } else {
        area.width.min(widest)
    };
    for ((name, items), full) in groups.iter().zip(full) {
        if roomy {
            lines.push(title(name));
            lines.extend(full);
        } else {
            lines.extend(flowed(name, items, width, t));
        }
    }
    if roomy {
        lines.push(Line::from(Span::styled(
            "any key closes this help",
            t.dim(),
        )));
    }
    popup(area, buf, app, "help", lines, width);
}

/// One sample of the help's legend: (glyph, style, short name, what it means).
type Sample = (String, Style, &'static str, String);

/// The help's legend: the chart's glyphs, the markers' (the one table in present/markers.rs)
/// and the panels'.
fn legend(app: &View) -> (Vec<Sample>, Vec<Sample>, Vec<Sample>) {
    let t = app.opts.theme;
    let g = t.glyphs;
    let marker_style = |kind| {
        if t.color {
            Style::new().fg(markers::color(kind))
        } else {
            Style::new()
        }
    };
    let chart = chart_samples(t);
    let marks: Vec<Sample> = LEGEND
        .iter()
        .map(|&kind| {
            (
                markers::glyph(kind, t.ascii()).to_string(),
                marker_style(kind),
                kind.label(),
                kind.meaning().to_string(),
            )
        })
        .collect();
    let panels: Vec<Sample> = vec![
        (
            g.gauge_full.into(),
            t.gauge(),
            "progress",
            "bytes copied of the total".into(),
        ),
        (
            "!".into(),
            t.warn(),
            "holding",
            "a drop, throttling, flushing: what holds the copy".into(),
        ),
        ("!".into(), t.error(), "error", "an error".into()),
    ];
    (chart, marks, panels)
}

/// The chart's glyphs.
fn chart_samples(t: Theme) -> Vec<Sample> {
    let g = t.glyphs;
    vec![
        (
            g.full.into(),
            t.fill(),
            "copy speed",
            "what the copier wrote".into(),
        ),
        (
            g.full_drop.into(),
            t.drop_fill(),
            "in a drop",
            "copy speed during a drop".into(),
        ),
        (
            g.drop_top.into(),
            t.drop_mark(),
            "drop",
            "above a drop: marks its columns without colour".into(),
        ),
        (
            g.dip.into(),
            t.dip(),
            "dip",
            "a dip shorter than a column (the column's minimum)".into(),
        ),
        (
            g.clipped.into(),
            t.fill(),
            "clipped",
            "column cut at the top: a burst above the scale".into(),
        ),
        (
            g.overlay.into(),
            t.overlay(),
            "disk writes",
            "what reached the disks".into(),
        ),
        (g.avg.into(), t.avg(), "average", "average speed".into()),
        (
            g.avg.into(),
            t.warn(),
            "--bwlimit",
            "the --bwlimit rate, or the pace --pace auto holds".into(),
        ),
    ]
}

/// One sample a line: the glyph in its colour, the colour's name and what it means.
fn sample_lines(items: &[Sample], t: Theme) -> Vec<Line<'static>> {
    items
        .iter()
        .map(|(glyph, style, short, what)| {
            let colour = style.fg.filter(|_| t.color).map(colour_name).unwrap_or("");
            let colour = if colour.is_empty() {
                String::new()
            } else {
                format!(" ({colour})")
            };
            Line::from(vec![
                Span::styled(format!("  {glyph:<3}"), *style),
                Span::raw(format!("{short}{colour}: {what}")),
            ])
        })
        .collect()
}

/// Short terminal: the group's name, then glyph and name, flowing across the width.
fn flowed(name: &str, items: &[Sample], width: u16, t: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut line: Vec<Span<'static>> = vec![Span::styled(format!("{name}  "), t.title())];
    let mut used = name.chars().count() + 2;
    for (glyph, style, short, _) in items {
        let w = glyph.chars().count() + 1 + short.chars().count() + 2;
        if used + w > width.saturating_sub(2) as usize && used > 2 {
            lines.push(Line::from(std::mem::take(&mut line)));
            line.push(Span::raw("  "));
            used = 2;
        }
        line.push(Span::styled(glyph.clone(), *style));
        line.push(Span::raw(format!(" {short}  ")));
        used += w;
    }
    lines.push(Line::from(line));
    lines
}

/// The cancel confirmation or the overwrite dialog.
pub fn dialog(area: Rect, buf: &mut Buffer, app: &View, d: &Dialog) {
    let t = app.opts.theme;
    match d {
        Dialog::ConfirmCancel if app.watch => {
            let lines = vec![
                Line::raw("Stop watching? The writer is not affected."),
                Line::from(Span::styled(
                    "y / q / Esc: stop     any other key: go on watching",
                    t.value(),
                )),
            ];
            popup(area, buf, app, "stop?", lines, 60);
        }
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
        Dialog::Conflict(c) => conflict(area, buf, app, c),
        Dialog::LowSpace(s) => low_space(area, buf, app, s),
    }
}

/// The overwrite question: the existing file and the new one side by side (size, time, which
/// is newer), then every answer's key.
fn conflict(area: Rect, buf: &mut Buffer, app: &View, c: &ConflictView) {
    let t = app.opts.theme;
    let w: u16 = 66.min(area.width);
    let inner = usize::from(w).saturating_sub(2);
    let e = t.glyphs.ellipsis;
    let units = app.opts.units;
    // Which side is newer, by modification time (what "overwrite all older" uses).
    let (new_tag, old_tag) = match c.new.mtime.cmp(&c.existing.mtime) {
        std::cmp::Ordering::Greater => ("   newer", ""),
        std::cmp::Ordering::Less => ("", "   newer"),
        std::cmp::Ordering::Equal => ("   same time", "   same time"),
    };
    // In the narrow form the tag follows the date after one blank.
    let (new_tag, old_tag) = if inner >= 52 {
        (new_tag.to_string(), old_tag.to_string())
    } else {
        let pad = |t: &str| {
            if t.is_empty() {
                String::new()
            } else {
                format!(" {}", t.trim_start())
            }
        };
        (pad(new_tag), pad(old_tag))
    };
    // Exact bytes only when the rounded sizes would look the same.
    let exact =
        c.new.size != c.existing.size && units.size(c.new.size) == units.size(c.existing.size);
    let side = |label: &str, s: &FileSide, tag: &str| side_line(label, s, tag, exact, inner, app);
    let mut lines = vec![
        Line::raw(if inner >= 52 {
            "The destination already exists:"
        } else {
            "Already exists:"
        }),
        Line::from(Span::styled(
            ellipsize_start(&c.destination, inner, e),
            t.value(),
        )),
        side("existing", &c.existing, &old_tag),
        Line::raw("replace it with"),
        Line::from(Span::styled(
            ellipsize_start(&c.source, inner, e),
            t.value(),
        )),
        side("new", &c.new, &new_tag),
        Line::raw(""),
    ];
    // Narrow terminals get the short words: every answer stays on screen.
    let keys: &[&str] = if inner >= 56 {
        &[
            "o Overwrite   s Skip   r Rename (copy as \"name (1)\")",
            "a Overwrite all   n Skip all   l Overwrite all older",
            "c Cancel the copy",
        ]
    } else {
        &[
            "o overwrite  s skip  r rename",
            "a overwrite all  n skip all",
            "l all older  c cancel",
        ]
    };
    lines.extend(keys.iter().map(|k| Line::from(Span::styled(*k, t.value()))));
    let lines = lines.into_iter().map(|l| fit_line(l, inner, e)).collect();
    popup(area, buf, app, "file exists", lines, w);
}

/// One side of the overwrite question: "existing   4.00 GB   2026-11-30 19:42:07   newer", in
/// `inner` cells; the size in exact bytes too when `exact`.
fn side_line(
    label: &str,
    s: &FileSide,
    tag: &str,
    exact: bool,
    inner: usize,
    app: &View,
) -> Line<'static> {
    let t = app.opts.theme;
    let units = app.opts.units;
    let size = if exact {
        format!("{} ({} B)", units.size(s.size), fmt_count(s.size))
    } else {
        units.size(s.size)
    };
    let date = &s.when;
    if inner >= 52 {
        let mut value = format!("{size:>9}   {date}");
        let mut tag = tag.to_string();
        if 10 + value.chars().count() + tag.chars().count() > inner {
            // Exact sizes and a long zone: the seconds go, the tag stays.
            value = format!("{size:>9}  {}", to_the_minute(date));
            tag = tag.replacen("   ", "  ", 1);
        }
        Line::from(vec![
            Span::raw(format!("{label:<10}")),
            Span::styled(value, t.value()),
            Span::styled(tag, t.title()),
        ])
    } else {
        // Narrow: shorter label, the date to the minute (its zone kept), the tag.
        let label = if label == "new" { "new" } else { "old" };
        Line::from(vec![
            Span::raw(format!("{label} ")),
            Span::styled(format!("{size} {}", to_the_minute(date)), t.value()),
            Span::styled(tag.to_string(), t.title()),
        ])
    }
}

/// "2026-11-30 20:42:07 CET" → "2026-11-30 20:42 CET" (the seconds dropped, the zone kept).
fn to_the_minute(when: &str) -> String {
    match (when.get(..16), when.get(19..)) {
        (Some(minute), Some(zone)) => format!("{minute}{zone}"),
        _ => when.to_string(),
    }
}

/// The free-space question: what the copy needs (less what overwrites free) against what the
/// destination has, and the two answers.
fn low_space(area: Rect, buf: &mut Buffer, app: &View, s: &SpaceView) {
    let t = app.opts.theme;
    let w: u16 = 66.min(area.width);
    let inner = usize::from(w).saturating_sub(2);
    let e = t.glyphs.ellipsis;
    let units = app.opts.units;
    let row = |label: &str, value: String, note: String| {
        Line::from(vec![
            Span::raw(format!("{label:<8}")),
            Span::styled(format!("{value:>9}"), t.value()),
            Span::raw(note),
        ])
    };
    let fs = if s.fs_type.is_empty() {
        String::new()
    } else {
        format!("   on {}", s.fs_type)
    };
    let freed = if s.freed > 0 {
        format!("   after {} that overwrites free", units.size(s.freed))
    } else {
        String::new()
    };
    let mut lines = vec![
        Line::raw("The copy needs more than the destination has free:"),
        Line::from(Span::styled(ellipsize_start(&s.dest, inner, e), t.value())),
        row("needed", units.size(s.needed), freed),
        row("free", units.size(s.free), fs),
        row(
            "short",
            units.size(s.needed.saturating_sub(s.free)),
            String::new(),
        ),
        Line::raw(""),
        Line::raw("Copy anyway: what fits is copied; the first file that does not"),
        Line::raw("fit stops the copy (No space left on device, exit 2)."),
        Line::raw(""),
    ];
    let keys = if inner >= 56 {
        "y Enter: copy anyway     n q Esc: cancel the copy"
    } else {
        "y: copy anyway  n q: cancel"
    };
    lines.push(Line::from(Span::styled(keys, t.warn())));
    let lines = lines.into_iter().map(|l| fit_line(l, inner, e)).collect();
    popup(area, buf, app, "not enough space", lines, w);
}
