//! The compact summary printed after the TUI leaves the alternate screen (and by
//! `replay --plain`): the text chart, the drops with their causes, and the copy figures, so
//! the result stays in the scrollback.

use crate::copy::CopyOutcome;
use crate::model::{EventKind, Model};
use crate::present::format::fmt_event_time;
use crate::present::format::fmt_rate_with;
use crate::present::text::{asciify, wrap_words};
use crate::present::units::Units;
use crate::report::export::{ChartData, render_text};
use crate::report::plain::{speeds_text, summary_text_as};
use crate::sample::EvidenceLevel;

/// Most drops listed one by one; the rest are counted.
const MAX_DROPS_LISTED: usize = 12;

/// `evidence: exact (kernel trace) → sampled stacks → [wchan/stat] → counters only`: the
/// fallback chain with the level the run's time rests on marked; `None` for a recording that
/// does not say.
pub fn evidence_line(model: &Model) -> Option<String> {
    model
        .evidence()
        .map(|l| format!("evidence: {}", EvidenceLevel::chain(l)))
}

/// The after-exit summary, at most `width` columns wide (the text chart stays within 40–100).
/// `outcome` is the engine's result (None for a replay).
pub fn final_summary(
    data: &ChartData,
    model: &Model,
    ascii: bool,
    units: Units,
    outcome: Option<&CopyOutcome>,
    width: usize,
) -> String {
    final_summary_as(data, model, ascii, units, outcome, width, false)
}

/// [`final_summary`]; `reads`: a bench phase that reads (see [`crate::report::plain::reads`]).
pub fn final_summary_as(
    data: &ChartData,
    model: &Model,
    ascii: bool,
    units: Units,
    outcome: Option<&CopyOutcome>,
    width: usize,
    reads: bool,
) -> String {
    let mut s = render_text(data, width.min(100), ascii);
    let drops: Vec<_> = model
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Drop(_)))
        .collect();
    if !drops.is_empty() {
        s.push_str(&format!("drops ({}):\n", drops.len()));
        // "  00:31.2  " then the diagnosis, wrapped under itself.
        let indent = 11;
        for e in drops.iter().take(MAX_DROPS_LISTED) {
            let text = if ascii {
                asciify(&e.describe())
            } else {
                e.describe()
            };
            for (i, line) in wrap_words(&text, width.saturating_sub(indent).max(20))
                .iter()
                .enumerate()
            {
                if i == 0 {
                    s.push_str(&format!("  {}  {line}\n", fmt_event_time(e.t_ns)));
                } else {
                    s.push_str(&format!("{}{line}\n", " ".repeat(indent)));
                }
            }
        }
        if drops.len() > MAX_DROPS_LISTED {
            s.push_str(&format!(
                "  ... and {} more (copyscope export / replay show all)\n",
                drops.len() - MAX_DROPS_LISTED
            ));
        }
    }
    if let Some(line) = evidence_line(model) {
        s.push_str(&if ascii { asciify(&line) } else { line });
        s.push('\n');
    }
    match outcome {
        Some(o) => s.push_str(&summary_text_as(
            o,
            Some(&model.stats()),
            units == Units::Binary,
            reads,
        )),
        // A watch has no files and no flush of its own: its figures are the intake's.
        None if data.watch.is_some() => {
            s.push_str(&speeds_text(
                &model.stats(),
                "durable: n/a (watch)",
                units == Units::Binary,
            ));
        }
        None => {
            let st = &data.stats;
            s.push_str(&format!(
                "recorded: {} in {}, {} failed\n",
                units.size(st.bytes),
                crate::present::format::fmt_files(st.files),
                st.failed
            ));
            let ms = model.stats();
            let durable = match ms.durable_bps {
                Some(d) => format!("durable {}", fmt_rate_with(d, units == Units::Binary)),
                None => "durable: not reached".to_string(),
            };
            s.push_str(&speeds_text(&ms, &durable, units == Units::Binary));
        }
    }
    s
}
