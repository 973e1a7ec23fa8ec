//! The fallback below 30×7: one status line per row, as many as fit.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::fit::render_fitted;
use super::progress::pct_done;
use crate::present::format::fmt_clock;
use crate::ui::view::View;

/// Below 30×7 the frame cannot hold the layout: one status line per row, as many as fit.
pub fn tiny(area: Rect, buf: &mut Buffer, app: &View) {
    let u = app.opts.units;
    let s = app.model.stats();
    let pct = pct_done(app).unwrap_or_else(|| "..".into());
    let lines = [
        format!("{} {pct} {}", app.state.label(), u.rate(s.now_bps)),
        format!(
            "avg {} {}",
            u.rate(s.avg_bps),
            fmt_clock(app.now_ns as f64 / 1e9)
        ),
        format!("drops {}", s.drops),
    ];
    for (i, l) in lines.into_iter().take(area.height as usize).enumerate() {
        let row = Rect {
            y: area.y + i as u16,
            height: 1,
            ..area
        };
        render_fitted(Line::raw(l), row, buf, app.opts.theme.glyphs.ellipsis);
    }
}
