//! Fitting text to terminal cells: widths, middle and end ellipses, a styled line cut to a row.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// Cells a string takes on the terminal (wide characters take two).
pub fn cells(s: &str) -> usize {
    Span::raw(s).width()
}

fn char_cells(c: char) -> usize {
    let mut b = [0u8; 4];
    cells(c.encode_utf8(&mut b))
}

/// The longest prefix of `s` that fits in `max` cells.
fn head_cells(s: &str, max: usize) -> &str {
    let mut w = 0;
    for (i, c) in s.char_indices() {
        w += char_cells(c);
        if w > max {
            return &s[..i];
        }
    }
    s
}

/// The longest suffix of `s` that fits in `max` cells.
fn tail_cells(s: &str, max: usize) -> &str {
    let mut w = 0;
    for (i, c) in s.char_indices().rev() {
        w += char_cells(c);
        if w > max {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

/// Shortens `s` to `max` cells, keeping the end (the file name matters most).
pub fn ellipsize_start(s: &str, max: usize, ellipsis: &str) -> String {
    if cells(s) <= max {
        return s.to_string();
    }
    let e = cells(ellipsis);
    if max <= e {
        return tail_cells(s, max).to_string();
    }
    format!("{ellipsis}{}", tail_cells(s, max - e))
}

/// Shortens `s` to `max` cells, keeping the start and marking the cut with `ellipsis`.
pub fn ellipsize_end(s: &str, max: usize, ellipsis: &str) -> String {
    if cells(s) <= max {
        return s.to_string();
    }
    let e = cells(ellipsis);
    if max <= e {
        return head_cells(s, max).to_string();
    }
    format!("{}{ellipsis}", head_cells(s, max - e).trim_end())
}

/// Cuts a styled line to `max` cells; a line that was cut ends with the ellipsis (in the
/// style of the text it replaces), so a reader always knows there was more.
pub fn fit_line(line: Line<'static>, max: usize, ellipsis: &str) -> Line<'static> {
    if line.width() <= max {
        return line;
    }
    let e = cells(ellipsis);
    let room = max.saturating_sub(e);
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    let mut last_style = line.spans.first().map(|s| s.style).unwrap_or_default();
    for span in line.spans {
        let w = span.width();
        last_style = span.style;
        if used + w <= room {
            used += w;
            out.push(span);
            continue;
        }
        let head = head_cells(&span.content, room - used).to_string();
        out.push(Span::styled(head, span.style));
        break;
    }
    // No blank before the ellipsis: "peak 288…", not "peak 288 …".
    while let Some(last) = out.last_mut() {
        let trimmed = last.content.trim_end().to_string();
        if trimmed.is_empty() {
            out.pop();
            continue;
        }
        last.content = trimmed.into();
        break;
    }
    if max >= e {
        out.push(Span::styled(ellipsis.to_string(), last_style));
    }
    Line::from(out)
}

/// Renders `line` on one row of `area`, cut with an ellipsis if it does not fit.
pub fn render_fitted(line: Line<'static>, area: Rect, buf: &mut Buffer, ellipsis: &str) {
    fit_line(line, area.width as usize, ellipsis).render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ellipsize_start_keeps_the_end() {
        assert_eq!(
            ellipsize_start("photos/2019/IMG_2231.CR2", 10, "…"),
            "…_2231.CR2"
        );
    }
}
