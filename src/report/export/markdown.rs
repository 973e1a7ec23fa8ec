//! Markdown export: a summary table in the shape of forum result tables (what, MB/s,
//! time, drops, time lost per cause) and the list of drops with their causes.

use std::fmt::Write as _;

use super::ChartData;
use super::describe::{describe_causes, lost_secs};
use crate::present::format::{fmt_bytes, fmt_event_time, fmt_mbps, fmt_pct, fmt_rate, fmt_secs};

/// At most this many drops are listed; the rest are counted.
const MAX_DROPS: usize = 50;

/// Escapes text for a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', " ")
}

/// Renders the run as Markdown.
pub fn render_markdown(data: &ChartData) -> String {
    render_markdown_titled(data, None)
}

/// [`render_markdown`] with the user's `--title` in the heading instead of
/// "source → destination", as the pictures have it.
#[expect(
    clippy::too_many_lines,
    reason = "one document written top to bottom, its sections in the pictures' order"
)]
pub fn render_markdown_titled(data: &ChartData, title: Option<&str>) -> String {
    let t = &data.title;
    let st = &data.stats;
    let mut o = String::new();
    match title {
        Some(title) => {
            let _ = writeln!(o, "### copyscope: {}", cell(title));
        }
        None => {
            let _ = writeln!(o, "### copyscope: {} → {}", cell(&t.source), cell(&t.dest));
        }
    }
    o.push('\n');
    let mut facts: Vec<String> = Vec::new();
    if !t.fs.is_empty() {
        facts.push(t.fs.clone());
    }
    if !t.date.is_empty() {
        facts.push(t.date.clone());
    }
    if !t.host.is_empty() {
        facts.push(format!("host {}", t.host));
    }
    if !t.kernel.is_empty() {
        facts.push(format!("Linux {}", t.kernel));
    }
    facts.push(format!(
        "{}{}",
        data.amount_text(fmt_bytes),
        if st.failed > 0 {
            format!(" ({} failed)", st.failed)
        } else {
            String::new()
        }
    ));
    let _ = writeln!(o, "{}", cell(&facts.join(" · ")));
    o.push('\n');

    let causes: Vec<String> = st
        .lost_listed()
        .map(|(c, s)| format!("{c} {}", fmt_secs(s)))
        .collect();
    let lost = if !causes.is_empty() {
        format!("{} ({})", fmt_secs(st.lost_total()), causes.join(", "))
    } else if st.stalled_not_lost() {
        format!("none (stalled {}, not lost)", fmt_secs(st.stalled_total()))
    } else {
        "none".to_string()
    };
    o.push_str("| what | MB/s | time | drops | time lost |\n");
    o.push_str("|:--|--:|--:|--:|:--|\n");
    let what = data.speed_of().row_words();
    let _ = writeln!(
        o,
        "| {what} | {} | {} | {} | {} |",
        fmt_mbps(st.avg_bps),
        fmt_secs(st.elapsed_s),
        st.drops,
        cell(&lost)
    );
    if let (Some(bps), Some(secs)) = (st.durable_bps, st.durable_s) {
        let _ = writeln!(
            o,
            "| durable (after flush) | {} | {} | | |",
            fmt_mbps(bps),
            fmt_secs(secs)
        );
    }
    let _ = writeln!(
        o,
        "| min / peak (1-second means) | {} / {} | | | |",
        fmt_mbps(st.min_bps),
        fmt_mbps(st.peak_bps)
    );
    if let Some(n) = &st.net {
        // The same figures as every text output's "network rx: avg A (min B, peak C)".
        let _ = writeln!(
            o,
            "| {} avg (min / peak) | {} ({} / {}) | | | |",
            cell(&data.net_label()),
            fmt_mbps(n.avg_bps),
            fmt_mbps(n.min_bps),
            fmt_mbps(n.peak_bps)
        );
    }
    if let Some(note) = st.stall_note() {
        let mut note = note;
        note[..1].make_ascii_uppercase();
        let _ = writeln!(o, "\n{}.", cell(&note));
    }
    o.push('\n');
    verdict(data, &mut o);
    stages(data, &mut o);

    let drops: Vec<_> = data.drops().collect();
    if drops.is_empty() {
        o.push_str("No speed drops.\n");
        return o;
    }
    if st.drops as usize > drops.len() {
        // A long run keeps its newest events only (bounded memory): say so.
        let _ = writeln!(
            o,
            "**Drops** ({}; the last {} are kept):",
            st.drops,
            drops.len()
        );
    } else {
        let _ = writeln!(o, "**Drops** ({}):", drops.len());
    }
    o.push('\n');
    o.push_str("| # | at | speed | for | lost | cause |\n");
    o.push_str("|--:|--:|:--|--:|--:|:--|\n");
    for (i, (e, d)) in drops.iter().take(MAX_DROPS).enumerate() {
        let _ = writeln!(
            o,
            "| {} | {} | {} → {} | {} | {} | {} |",
            i + 1,
            fmt_event_time(e.t_ns),
            fmt_rate(d.reference_bps),
            fmt_rate(d.min_bps),
            fmt_secs(d.end_ns.saturating_sub(e.t_ns) as f64 / 1e9),
            lost_cell(lost_secs(d)),
            cell(&describe_causes(d))
        );
    }
    if drops.len() > MAX_DROPS {
        let _ = writeln!(o, "\n… and {} more drops.", drops.len() - MAX_DROPS);
    }
    o
}

/// The verdict as a paragraph and the writer's time budget as a bar in a code span and a
/// one-row table (Markdown has no stacked bar).
fn verdict(data: &ChartData, o: &mut String) {
    if let Some(v) = &data.verdict {
        let _ = writeln!(o, "**Verdict:** {}", cell(&v.text));
        o.push('\n');
    }
    let Some(b) = data.budget.as_ref().filter(|b| b.is_measured()) else {
        return;
    };
    let shares: Vec<_> = b
        .shares()
        .into_iter()
        .filter(|(_, v)| *v >= 0.005)
        .collect();
    if shares.is_empty() {
        return;
    }
    let bar: String = b
        .cells(50)
        .iter()
        .flat_map(|(s, n)| std::iter::repeat_n(s.glyph(), *n))
        .collect();
    let _ = writeln!(o, "Writer's time: `{bar}`");
    o.push('\n');
    let head: Vec<String> = shares
        .iter()
        .map(|(s, _)| format!("{} {}", s.glyph(), b.label(*s)))
        .collect();
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(o, "|{}", "--:|".repeat(shares.len()));
    let row: Vec<String> = shares.iter().map(|(_, v)| fmt_pct(v * 100.0)).collect();
    let _ = writeln!(o, "| {} |", row.join(" | "));
    o.push('\n');
}

/// A pipeline watch's stages over the run: a row each, upstream first, the limiting one
/// marked.
fn stages(data: &ChartData, o: &mut String) {
    let Some(p) = &data.pipeline else {
        return;
    };
    let limiting = p.limiting_stage().map(|s| s.pid);
    o.push_str("| stage | pid | command | read MB/s | wrote MB/s | over the run |\n");
    o.push_str("|:--|--:|:--|--:|--:|:--|\n");
    for (i, s) in p.stages.iter().enumerate() {
        let mark = if limiting == Some(s.pid) {
            " (limits)"
        } else {
            ""
        };
        let mut state = crate::report::pipeline::shares_text(s);
        if let Some(p) = s.shares.pipe_full_words() {
            state.push_str(&format!("; {p}"));
        }
        let _ = writeln!(
            o,
            "| {}{mark} | {} | `{}` | {} | {} | {} |",
            i + 1,
            s.pid,
            cell(&crate::report::pipeline::args_text(s, 60)).replace('`', "'"),
            fmt_mbps(s.read_bps),
            fmt_mbps(s.written_bps),
            cell(&state)
        );
    }
    o.push('\n');
}

/// A drop's lost time, or "none" when it cost nothing worth printing (a stall the disks
/// spent writing the backlog).
fn lost_cell(secs: f64) -> String {
    if secs < 0.005 {
        "none".to_string()
    } else {
        fmt_secs(secs)
    }
}
