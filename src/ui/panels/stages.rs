//! The stages panel of `watch --pipeline`: the stage that limits the pipeline (or why none
//! is named), then one row per stage, upstream first — its number, name and pid, the rates
//! it read and wrote, its main state over the last seconds with its share, and its command
//! line — the limiting stage marked.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::fit::render_fitted;
use crate::model::pipeline::{PipelineView, StageFigures, state_words};
use crate::present::format::fmt_pct;
use crate::present::quote::{command_line, shell_escape};
use crate::ui::view::View;

/// The narrowest panel that shows how full each stage's output pipe was.
const PIPE_COLUMN_FROM: usize = 100;

/// Stage rows the panel shows at most; the rest are counted on the last one.
pub const MAX_STAGE_ROWS: u16 = 8;

/// The pipeline a watch follows, over the last seconds; `None` for any other run.
pub fn pipeline_of(app: &View) -> Option<PipelineView> {
    app.watch.then(|| app.model.pipeline()).flatten()
}

/// The panel's height for `p`: the limiter's row and a row per stage (at most
/// [`MAX_STAGE_ROWS`]).
pub fn stage_rows(p: &PipelineView) -> u16 {
    1 + (p.stages.len() as u16).min(MAX_STAGE_ROWS)
}

/// "* 2/2 perl         4242  r 3.24 MB/s  w    0 B/s  asleep 95 %   perl -e …", with
/// "pipe full 93 %" before the command line when the panel has a `pipe` column.
fn row_text(
    i: usize,
    n: usize,
    s: &StageFigures,
    limiting: bool,
    pipe: bool,
    app: &View,
) -> String {
    let u = app.opts.units;
    let mark = if limiting { '*' } else { ' ' };
    let state = s.shares.main().map_or_else(
        || "state n/a".to_string(),
        |w| format!("{} {}", state_words(w), fmt_pct(s.shares.get(w) * 100.0)),
    );
    let pipe = match s.shares.pipe_full {
        Some(f) if pipe => format!("pipe full {:<5} ", fmt_pct(f * 100.0)),
        _ if pipe => " ".repeat(16),
        _ => String::new(),
    };
    format!(
        "{mark}{}/{n} {:<10} {:>7}  r {:>9}  w {:>9}  {:<23} {pipe}",
        i + 1,
        shell_escape(&s.comm),
        s.pid,
        u.rate(s.read_bps),
        u.rate(s.written_bps),
        state
    )
}

/// The stages that get a row in `room` rows, upstream first: all when they fit, else the
/// first ones with a row left to count the rest, the limiting stage always among them (alone
/// in one row, where its "2/3" tells how many there are).
fn shown_stages(p: &PipelineView, room: usize) -> Vec<usize> {
    let n = p.stages.len();
    if n <= room {
        return (0..n).collect();
    }
    let limiting = match p.limiter {
        crate::model::pipeline::Limiter::Stage { index, .. } => Some(index),
        crate::model::pipeline::Limiter::Unknown { .. } => None,
    };
    let mut shown: Vec<usize> = (0..room.saturating_sub(1)).collect();
    if let Some(l) = limiting.filter(|l| !shown.contains(l)) {
        if room == 1 || shown.is_empty() {
            shown = vec![l];
        } else {
            shown.pop();
            shown.push(l);
        }
    }
    shown
}

/// Draws the panel for `p` into `area`.
pub fn stages(area: Rect, buf: &mut Buffer, app: &View, p: &PipelineView) {
    let t = app.opts.theme;
    let width = usize::from(area.width);
    let row = |k: u16| Rect {
        y: area.y + k,
        height: 1,
        ..area
    };
    let head = format!("limited by {}", p.limiter_words());
    let style = if p.limiting_stage().is_some() {
        t.warn()
    } else {
        t.dim()
    };
    render_fitted(
        Line::from(Span::styled(head, style)),
        row(0),
        buf,
        t.glyphs.ellipsis,
    );
    let limiting = p.limiting_stage().map(|s| s.pid);
    let room = usize::from(area.height.saturating_sub(1));
    let shown = shown_stages(p, room);
    // The pipe column only where it leaves the state and some of the command line whole.
    let pipe = width >= PIPE_COLUMN_FROM && p.stages.iter().any(|s| s.shares.pipe_full.is_some());
    let many = shown.len() < p.stages.len() && shown.len() < room;
    for (k, &i) in shown.iter().enumerate() {
        let s = &p.stages[i];
        let text = row_text(i, p.stages.len(), s, limiting == Some(s.pid), pipe, app);
        let args = command_line(&s.args, width.saturating_sub(text.chars().count()));
        let args = if t.ascii() {
            crate::present::text::asciify(&args)
        } else {
            args
        };
        let style = if s.alive { t.label() } else { t.dim() };
        let line = Line::from(vec![Span::styled(text, style), Span::styled(args, t.dim())]);
        render_fitted(line, row(1 + k as u16), buf, t.glyphs.ellipsis);
    }
    if many {
        let rest = p.stages.len() - shown.len();
        render_fitted(
            Line::from(Span::styled(format!("  … and {rest} more"), t.dim())),
            row(1 + shown.len() as u16),
            buf,
            t.glyphs.ellipsis,
        );
    }
}
