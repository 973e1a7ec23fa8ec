//! The bench's results for a forum post: a Markdown table of the phases and a one-screen text
//! summary. Every figure is a phase's model's ([`ChartData`] from its recording); this file only
//! lays them out.

use std::fmt::Write as _;

use super::export::ChartData;
use super::export::describe::drop_label;
use crate::present::format::{fmt_bytes, fmt_mbps, fmt_rate, fmt_secs};

/// One finished (or stopped) phase.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub name: String,
    pub data: ChartData,
    /// The recording's file name (beside bench.md).
    pub recording: String,
    /// Why the phase stopped early, if it did ("cancelled", the disk-full message).
    pub stopped: Option<String>,
}

/// Facts of the whole bench, said once above the table.
#[derive(Debug, Clone, Default)]
pub struct BenchFacts {
    /// "zfs tank/bench", "ext4 /dev/vdb".
    pub fs: String,
    pub host: String,
    pub kernel: String,
    pub date: String,
    /// Lines that qualify the figures: the sizes chosen, compression, how the read-back
    /// avoided the cache, the PRNG's rate.
    pub notes: Vec<String>,
}

fn lost_total(d: &ChartData) -> f64 {
    d.stats
        .lost_secs_by_cause
        .iter()
        .fold(0.0, |a, (_, s)| a + s)
}

/// "1.2 s (txg sync 0.8 s, journal 0.4 s)" or "0 s".
fn lost_text(d: &ChartData) -> String {
    if d.stats.lost_secs_by_cause.is_empty() {
        return fmt_secs(0.0);
    }
    let by: Vec<String> = d
        .stats
        .lost_secs_by_cause
        .iter()
        .map(|(c, s)| format!("{c} {}", fmt_secs(*s)))
        .collect();
    format!("{} ({})", fmt_secs(lost_total(d)), by.join(", "))
}

/// The cause behind most drops of the phase, by count ("–" without drops).
fn main_cause(d: &ChartData) -> String {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for (_, dr) in d.drops() {
        let l = drop_label(dr);
        match counts.iter_mut().find(|(k, _)| *k == l) {
            Some((_, n)) => *n += 1,
            None => counts.push((l, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts
        .first()
        .map_or("–".to_string(), |(l, n)| format!("{l} ({n})"))
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown report: facts, the table, the verdict of each phase, the recordings.
pub fn render_bench_markdown(f: &BenchFacts, phases: &[PhaseResult]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### copyscope bench: {}\n", cell(&f.fs));
    let mut facts = vec![f.date.clone()];
    if !f.host.is_empty() {
        facts.push(format!("host {}", f.host));
    }
    if !f.kernel.is_empty() {
        facts.push(format!("Linux {}", f.kernel));
    }
    let _ = writeln!(o, "{}\n", cell(&facts.join(" · ")));
    // A write phase's speed is into the cache; a read phase's is from the device (its pages
    // were dropped first): one column, its header says both.
    o.push_str("| phase | data | files | MB/s (writes: to cache; reads: from the device) | MB/s durable | drops | time lost | drops mostly |\n");
    o.push_str("|:--|--:|--:|--:|--:|--:|:--|:--|\n");
    for p in phases {
        let st = &p.data.stats;
        let name = match &p.stopped {
            Some(why) => format!("{} (stopped: {why})", p.name),
            None => p.name.clone(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&name),
            fmt_bytes(st.bytes),
            st.files,
            fmt_mbps(st.avg_bps),
            st.durable_bps.map_or("–".into(), fmt_mbps),
            st.drops,
            cell(&lost_text(&p.data)),
            main_cause(&p.data)
        );
    }
    o.push('\n');
    for n in &f.notes {
        let _ = writeln!(o, "- {}", cell(n));
    }
    if phases.iter().any(|p| p.data.verdict.is_some()) {
        o.push_str("\n**Verdicts** (from each phase's own figures):\n\n");
        for p in phases {
            if let Some(v) = &p.data.verdict {
                let _ = writeln!(o, "- *{}*: {}", p.name, cell(&v.text));
            }
        }
    }
    o.push_str("\nRecordings (`copyscope replay FILE`, `copyscope compare A B`): ");
    let files: Vec<String> = phases
        .iter()
        .map(|p| format!("`{}`", p.recording))
        .collect();
    o.push_str(&files.join(", "));
    o.push('\n');
    o
}

/// The one-screen text summary (fits 80 columns) for a code block in a post.
pub fn render_bench_text(f: &BenchFacts, phases: &[PhaseResult]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "copyscope bench  {}", f.fs);
    let _ = writeln!(o, "{}  host {}  Linux {}", f.date, f.host, f.kernel);
    o.push('\n');
    let _ = writeln!(
        o,
        "{:<15} {:>9} {:>11} {:>11} {:>5}  lost",
        "phase", "data", "speed", "durable", "drops"
    );
    for p in phases {
        let st = &p.data.stats;
        let _ = writeln!(
            o,
            "{:<15} {:>9} {:>11} {:>11} {:>5}  {}{}",
            p.name,
            fmt_bytes(st.bytes),
            fmt_rate(st.avg_bps),
            st.durable_bps.map_or("–".into(), fmt_rate),
            st.drops,
            lost_text(&p.data),
            p.stopped
                .as_ref()
                .map(|w| format!("  [stopped: {w}]"))
                .unwrap_or_default()
        );
    }
    o.push('\n');
    for n in &f.notes {
        let _ = writeln!(o, "{n}");
    }
    o
}
