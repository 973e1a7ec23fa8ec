//! The compact summary printed after the TUI leaves the alternate screen (and by
//! `replay --plain`): the text chart, the drops with their causes, and the copy figures, so
//! the result stays in the scrollback.

use crate::copy::CopyOutcome;
use crate::model::format::fmt_clock;
use crate::model::{EventKind, Model};
use crate::report::export::{ChartData, render_text};
use crate::report::plain::summary_text;
use crate::report::recording::Recording;
use crate::ui::app::{Header, UiOptions};
use crate::ui::units::Units;

/// Most drops listed one by one; the rest are counted.
const MAX_DROPS_LISTED: usize = 12;

/// The after-exit summary. `outcome` is the engine's result (None for a replay).
pub fn final_summary(
    model: &Model,
    _header: &Header,
    opts: UiOptions,
    rec: &Recording,
    outcome: Option<&CopyOutcome>,
) -> String {
    let ascii = opts.theme.ascii();
    let data = ChartData::from_recording(rec);
    let mut s = render_text(&data, 100, ascii);
    let drops: Vec<_> = model
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Drop(_)))
        .collect();
    if !drops.is_empty() {
        s.push_str(&format!("drops ({}):\n", drops.len()));
        for e in drops.iter().take(MAX_DROPS_LISTED) {
            s.push_str(&format!("  {}  {}\n", fmt_clock(e.t_ns), e.describe()));
        }
        if drops.len() > MAX_DROPS_LISTED {
            s.push_str(&format!(
                "  ... and {} more (copyscope export / replay show all)\n",
                drops.len() - MAX_DROPS_LISTED
            ));
        }
    }
    match outcome {
        Some(o) => s.push_str(&summary_text(o, opts.units == Units::Binary)),
        None => {
            if let Some(sum) = &rec.summary {
                s.push_str(&format!(
                    "recorded: {} in {} files, {} failed, exit {}\n",
                    opts.units.size(sum.bytes),
                    sum.files,
                    sum.failed,
                    sum.exit_code
                ));
            }
        }
    }
    s
}
