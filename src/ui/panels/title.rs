//! The title row: the program's name, the source and destination paths and the destination's
//! filesystem.

use ratatui::text::{Line, Span};

use super::fit::ellipsize_start;
use crate::ui::view::View;

/// " copyscope  ~/iso → /tank/backup (zfs tank/backup) "
pub fn title_line(app: &View, width: u16) -> Line<'static> {
    let t = app.opts.theme;
    let g = t.glyphs;
    // " copyscope " + "  " + " → " + " ": what surrounds the paths.
    let fixed = 11 + 2 + g.arrow.chars().count() + 2 + 1;
    let room = (width as usize).saturating_sub(fixed);
    let fs_full = if app.header.fs.is_empty() {
        String::new()
    } else {
        format!(" ({})", app.header.fs)
    };
    // The filesystem goes first when space is short: the paths say more.
    let fs = if room >= 24 + fs_full.chars().count() {
        fs_full
    } else {
        String::new()
    };
    let budget = room.saturating_sub(fs.chars().count()).max(8);
    let half = budget / 2;
    let src = ellipsize_start(&app.header.source, half, g.ellipsis);
    let dst = ellipsize_start(
        &app.header.dest,
        budget - src.chars().count().min(half),
        g.ellipsis,
    );
    Line::from(vec![
        Span::styled(" copyscope ", t.title()),
        Span::raw(format!(" {src} {} {dst}{fs} ", g.arrow)),
    ])
}
