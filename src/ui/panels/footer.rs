//! The bottom border: the keys that fit, or the status message (where the screenshot went) while it
//! is fresh.

use ratatui::text::{Line, Span};

use super::fit::cells;
use crate::ui::view::View;

/// The status message (where the screenshot went), while it is fresh.
pub fn status_message<'a>(app: &View<'a>) -> Option<&'a str> {
    app.screen
        .status
        .as_ref()
        .filter(|(_, at)| app.now_ns.saturating_sub(*at) < STATUS_NS)
        .map(|(m, _)| m.as_str())
}

/// How long a status message stays up (in the model's time).
const STATUS_NS: u64 = 8_000_000_000;

/// True when the status message fits in the bottom border of a `width`-wide screen; else it
/// is shown in full over the events (see `ui::render_to`).
pub fn status_fits_footer(msg: &str, width: u16) -> bool {
    cells(msg) + 2 <= usize::from(width).saturating_sub(2)
}

/// Keys (or a status message that fits) in the bottom border of a `width`-wide screen. Keys
/// that do not fit are left out whole, from the right; `q` and `? help` always stay.
pub fn footer_line(app: &View, width: u16) -> Line<'static> {
    let t = app.opts.theme;
    if let Some(msg) = status_message(app)
        && status_fits_footer(msg, width)
    {
        return Line::from(Span::styled(format!(" {msg} "), t.warn()));
    }
    let keys: &[&str] = if app.replay.is_some() {
        &[
            "space pause",
            "x speed",
            "←/→ seek",
            "Home/End",
            "s screenshot",
            "t axis",
            "+/- zoom",
        ]
    } else if app.state.finished() {
        &["s screenshot", "t axis", "+/- zoom", "e events", "k kernel"]
    } else {
        &["p pause", "s screenshot", "t axis", "+/- zoom", "e events"]
    };
    let room = usize::from(width).saturating_sub(4);
    let mut text = format!(" q {}", app.opts.then.unwrap_or("quit"));
    let end = "  ? help ";
    for k in keys {
        if cells(&text) + 2 + cells(k) + cells(end) > room {
            break;
        }
        text.push_str("  ");
        text.push_str(k);
    }
    text.push_str(end);
    Line::from(Span::styled(text, t.dim()))
}
