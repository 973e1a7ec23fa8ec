//! The writers panel of a watch that follows several processes (`--comm smbd`, `--pid` of a
//! parallel copy's controller, `--all`): one row per writer, the most bytes first — its pid
//! and name, its bytes and its share of what they all wrote, and the file it writes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::fit::{ellipsize_start, render_fitted};
use crate::present::format::fmt_pct;
use crate::present::quote::shell_escape;
use crate::ui::view::View;

/// Rows the panel shows at most; the rest are counted on the last one.
pub const MAX_WRITER_ROWS: u16 = 6;

/// Whether the screen has a writers panel: a watch with more than one writer.
pub fn has_writers(app: &View) -> bool {
    app.watch && app.writers.len() > 1
}

/// "   4242 rsync     21.0 MB  12 %  /tank/w1/.big.iso.Xy1", the living first in bytes order.
pub fn writers(area: Rect, buf: &mut Buffer, app: &View) {
    let t = app.opts.theme;
    let u = app.opts.units;
    let total: u64 = app.writers.iter().map(|w| w.bytes).sum();
    let room = usize::from(area.height);
    let many = app.writers.len() > room;
    let shown = if many { room.saturating_sub(1) } else { room };
    for (i, w) in app.writers.iter().take(shown).enumerate() {
        let share = if total > 0 {
            w.bytes as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let head = format!(
            "{:>7} {:<15} {:>9} {:>5}  ",
            w.pid,
            shell_escape(&w.comm),
            u.size(w.bytes),
            fmt_pct(share)
        );
        let name = w.file.as_ref().map_or_else(String::new, |f| {
            let n = shell_escape(&f.path);
            if app.opts.theme.ascii() {
                crate::present::text::asciify(&n)
            } else {
                n.into_owned()
            }
        });
        let name_w = usize::from(area.width).saturating_sub(head.chars().count());
        let style = if w.alive { t.label() } else { t.dim() };
        let line = Line::from(vec![
            Span::styled(head, style),
            Span::styled(ellipsize_start(&name, name_w, t.glyphs.ellipsis), style),
        ]);
        let row = Rect {
            y: area.y + i as u16,
            height: 1,
            ..area
        };
        render_fitted(line, row, buf, t.glyphs.ellipsis);
    }
    if many {
        let rest = app.writers.len() - shown;
        let row = Rect {
            y: area.y + shown as u16,
            height: 1,
            ..area
        };
        render_fitted(
            Line::from(Span::styled(format!("  … and {rest} more"), t.dim())),
            row,
            buf,
            t.glyphs.ellipsis,
        );
    }
}
