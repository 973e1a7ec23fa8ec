//! The speeds row: now, average, peak, minimum, durable, drops and time lost.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::fit::render_fitted;
use crate::ui::view::View;

fn labeled(label: &str, value: String, gap: &'static str, app: &View) -> Vec<Span<'static>> {
    let t = app.opts.theme;
    vec![
        Span::styled(format!("{label} "), t.label()),
        Span::styled(value, t.value()),
        Span::raw(gap),
    ]
}

/// "now 118 MB/s   avg 104 MB/s   peak 121 MB/s   min 40 MB/s   durable 96 MB/s   drops 3 (4.2 s lost)";
/// where that does not fit, narrower gaps and "drops 3 (4.2 s)" before anything is cut. A
/// watch with `--net` ends with "rx avg 99 MB/s".
pub fn speeds(area: Rect, buf: &mut Buffer, app: &View) {
    let u = app.opts.units;
    let s = app.model.stats();
    let line = |gap: &'static str, short: bool| {
        let mut spans = Vec::new();
        spans.extend(labeled("now", u.rate(s.now_bps), gap, app));
        spans.extend(labeled("avg", u.rate(s.avg_bps), gap, app));
        spans.extend(labeled("peak", u.rate(s.peak_bps), gap, app));
        spans.extend(labeled("min", u.rate(s.min_bps), gap, app));
        if let Some(d) = s.durable_bps {
            spans.extend(labeled("durable", u.rate(d), gap, app));
        }
        if s.drops > 0 {
            let lost = crate::present::format::fmt_secs(s.lost_total_secs());
            let what = if short { "" } else { " lost" };
            spans.extend(labeled(
                "drops",
                format!("{} ({lost}{what})", s.drops),
                gap,
                app,
            ));
        }
        // `watch --net`: the receive average beside the intake's (its "now" is in the kernel
        // panel); after the drops, so a narrow terminal cuts it first.
        if let Some(n) = &s.net {
            spans.extend(labeled("rx avg", u.rate(n.avg_bps), gap, app));
        }
        // The blank after the last figure is not part of what could be cut.
        spans.pop();
        Line::from(spans)
    };
    let fitting = [("   ", false), ("  ", false), ("  ", true)]
        .into_iter()
        .map(|(gap, short)| line(gap, short))
        .find(|l| l.width() <= area.width as usize)
        .unwrap_or_else(|| line("  ", true));
    render_fitted(fitting, area, buf, app.opts.theme.glyphs.ellipsis);
}
