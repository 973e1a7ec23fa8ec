//! The kernel panel's budget rows (`b`): the writer's time budget and, once the copy has ended, the
//! verdict.

use ratatui::text::{Line, Span};

use crate::ui::view::View;

/// The writer's time budget so far (`b`), and the model's verdict once the copy has ended.
pub(super) fn budget_lines(app: &View) -> Vec<Line<'static>> {
    let t = app.opts.theme;
    let b = app.model.budget();
    let bar = b.text_bar(30);
    let mut lines = vec![Line::from(vec![
        Span::styled("time  ".to_string(), t.label()),
        if bar.is_empty() {
            Span::styled("n/a (no thread states yet)".to_string(), t.dim())
        } else {
            Span::raw(bar)
        },
    ])];
    if app.model.copy_ended() {
        lines.push(Line::from(vec![
            Span::styled("verdict  ".to_string(), t.label()),
            Span::raw(app.model.verdict().text),
        ]));
    }
    lines
}
