//! Text export: the speed chart in Unicode block characters (▁▂▃▄▅▆▇█) or plain ASCII,
//! at most 100 columns, with y labels, a marker row, a time axis and a short stats block.
//! Fit for a forum code block and for the summary printed after the TUI exits.

use crate::model::EventKind;

use super::{ChartData, MarkerKind};
use crate::present::axis::{Steps, fmt_axis_time, fmt_tick, nice_step, rate_unit};
use crate::present::columns::{Reading, bucket, column_of};
use crate::present::format::{fmt_bytes, fmt_pct, fmt_rate, fmt_secs};
use crate::present::text::asciify;
use crate::present::text::ellipsize_middle;

/// Chart rows (each row holds eight levels with block characters).
const ROWS: usize = 8;
const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// ASCII stand-ins for the eighth levels: nothing, low, half, full.
fn ascii_block(eighths: usize) -> char {
    match eighths {
        0 => ' ',
        1..=3 => '.',
        4..=7 => '+',
        _ => '#',
    }
}

/// Greedy word wrap of `items` joined by `sep` into lines of at most `width` characters.
fn wrap(items: &[String], sep: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for item in items {
        let add = if cur.is_empty() {
            item.chars().count()
        } else {
            sep.chars().count() + item.chars().count()
        };
        if !cur.is_empty() && cur.chars().count() + add > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push_str(sep);
        }
        cur.push_str(item);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// "copyscope  SOURCE → DEST" in `width` columns: each path is shortened in its middle, the
/// longer one first, so the arrow between them always stays.
fn title_line(source: &str, dest: &str, width: usize) -> String {
    let head = "copyscope  ";
    let arrow = " → ";
    let room = width.saturating_sub(head.chars().count() + arrow.chars().count());
    let (ns, nd) = (source.chars().count(), dest.chars().count());
    let (ws, wd) = if ns + nd <= room {
        (ns, nd)
    } else {
        // Half each, a short one giving the rest of its half to the other.
        let half = room / 2;
        match (ns <= half, nd <= room - half) {
            (true, _) => (ns, room - ns),
            (_, true) => (room - nd, nd),
            _ => (half, room - half),
        }
    };
    format!(
        "{head}{}{arrow}{}",
        ellipsize_middle(source, ws),
        ellipsize_middle(dest, wd)
    )
}

/// Renders the chart as text no wider than `width_cols` (clamped to 40–100).
pub fn render_text(data: &ChartData, width_cols: usize, ascii: bool) -> String {
    render_text_scaled(data, width_cols, ascii, TextScale::default())
}

/// A fixed time axis and speed scale, so charts drawn one above the other compare.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TextScale {
    /// The highest column value to fit, bytes/s.
    pub peak_bps: Option<f64>,
    pub duration_s: Option<f64>,
}

/// The scale that fits every chart of `runs` at `width_cols`: the longest run, the highest
/// column of any.
pub fn shared_text_scale(runs: &[&ChartData], width_cols: usize) -> TextScale {
    let cols = width_cols.clamp(40, 100) - GUTTER - 1;
    let duration = runs.iter().map(|d| duration_of(d)).fold(1e-3, f64::max);
    let peak = runs
        .iter()
        .flat_map(|d| column_values(d, cols, duration))
        .fold(0.0, f64::max);
    TextScale {
        peak_bps: Some(peak),
        duration_s: Some(duration),
    }
}

fn duration_of(data: &ChartData) -> f64 {
    data.duration_s
        .max(data.points.last().map_or(0.0, |p| p.t_s))
        .max(1e-3)
}

/// [`render_text`] on a fixed scale.
pub fn render_text_scaled(
    data: &ChartData,
    width_cols: usize,
    ascii: bool,
    scale: TextScale,
) -> String {
    let width = width_cols.clamp(40, 100);
    let mut out: Vec<String> = Vec::new();
    let t = &data.title;
    out.push(title_line(&t.source, &t.dest, width));
    let mut sub: Vec<String> = Vec::new();
    for part in [&t.fs, &t.date] {
        if !part.is_empty() {
            sub.push(part.clone());
        }
    }
    if !t.host.is_empty() {
        sub.push(format!("host {}", t.host));
    }
    out.extend(wrap(&sub, " · ", width));

    if data.points.is_empty() {
        out.push("(no samples recorded)".to_string());
    } else {
        chart(data, width, ascii, scale, &mut out);
    }
    stats(data, width, &mut out);
    verdict(data, width, &mut out);

    let mut text = String::new();
    for line in out {
        let line = if ascii { asciify(&line) } else { line };
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// The value each of `cols` columns over `duration` seconds shows. Column values are means;
/// the column at each drop's middle shows the drop's minimum instead, so a drop shorter than
/// a column never averages away while the bursts between drops keep their height.
fn column_values(data: &ChartData, cols: usize, duration: f64) -> Vec<f64> {
    let mut drop_cols = vec![false; cols];
    for (e, d) in data.drops() {
        drop_cols[column_of((e.t_ns + d.end_ns) as f64 / 2e9 / duration, cols)] = true;
    }
    let buckets = bucket(
        &data.points,
        cols,
        |p| Some(p.t_s / duration),
        |p| {
            Some(Reading {
                min: p.min_bps,
                ..Reading::of(p.copy_bps)
            })
        },
    );
    // A column no point fell in carries the one before it.
    let mut values = vec![0.0f64; cols];
    let mut last = 0.0;
    for (c, b) in buckets.iter().enumerate() {
        if let Some(b) = b {
            last = if drop_cols[c] { b.min } else { b.mean };
        }
        values[c] = last;
    }
    values
}

/// The time axis under the chart: labels at round steps, none overlapping.
fn time_axis(duration: f64, gutter: usize, cols: usize, width: usize) -> String {
    let col_of = |t: f64| column_of(t / duration, cols);
    let tstep = super::time_axis_step(duration, (cols / 10).max(1));
    let mut axis_line: Vec<char> = vec![' '; gutter + 1 + cols + 8];
    let mut next_free = 0usize;
    let mut t = 0.0;
    while t <= duration + 1e-9 {
        let label = fmt_axis_time(t, tstep);
        let start = gutter + 1 + col_of(t);
        let len = label.chars().count();
        if start >= next_free && start + len <= width {
            for (i, ch) in label.chars().enumerate() {
                axis_line[start + i] = ch;
            }
            next_free = start + len + 1;
        }
        t += tstep;
    }
    axis_line.into_iter().collect()
}

/// The y-label gutter: labels are at most 4 characters ("1000" cannot occur: 4 steps of a
/// nice step < 1000 units switch to the next unit).
const GUTTER: usize = 4;

fn chart(data: &ChartData, width: usize, ascii: bool, scale: TextScale, out: &mut Vec<String>) {
    let duration = scale
        .duration_s
        .unwrap_or_else(|| duration_of(data))
        .max(1e-3);
    let gutter = GUTTER;
    let cols = width - gutter - 1;
    let col_of = |t: f64| column_of(t / duration, cols);

    let values = column_values(data, cols, duration);

    // Scale to what the columns show, so one 100 ms spike does not flatten the chart.
    let peak = scale
        .peak_bps
        .unwrap_or_else(|| values.iter().copied().fold(0.0, f64::max))
        .max(1.0);
    let unit = rate_unit(peak.max(1e6));
    // Four labelled steps over eight rows: the fine steps (see `Steps::Fine`).
    let step = nice_step(peak / unit.divisor, ROWS / 2, Steps::Fine);
    let ymax = step * (ROWS / 2) as f64 * unit.divisor;
    let row_value = ymax / ROWS as f64;
    let labels: Vec<String> = (0..ROWS)
        .map(|r| {
            let level = ROWS - r;
            if level.is_multiple_of(2) {
                fmt_tick(level as f64 * row_value / unit.divisor)
            } else {
                String::new()
            }
        })
        .collect();

    out.push(format!("{:>gutter$}", unit.label));
    let (tick, axis, corner, bar) = if ascii {
        ('|', '-', '+', '|')
    } else {
        ('┤', '─', '┼', '│')
    };
    for (r, label) in labels.iter().enumerate() {
        let from_bottom = ROWS - 1 - r;
        let mut line = format!(
            "{label:>gutter$}{}",
            if label.is_empty() { bar } else { tick }
        );
        for v in &values {
            let eighths = ((v / ymax) * (ROWS * 8) as f64).round().max(0.0) as usize;
            let cell = eighths.saturating_sub(from_bottom * 8).min(8);
            line.push(if ascii {
                ascii_block(cell)
            } else {
                BLOCKS[cell]
            });
        }
        out.push(line);
    }

    // Marker row on the baseline: the highest-priority kind wins a shared column.
    let mut marks: Vec<Option<MarkerKind>> = vec![None; cols];
    for e in &data.events {
        if matches!(e.kind, EventKind::TxgSyncStarted { .. }) {
            continue;
        }
        let kind = MarkerKind::of(&e.kind);
        let c = col_of(e.t_ns as f64 / 1e9);
        if marks[c].is_none_or(|k| kind.priority() < k.priority()) {
            marks[c] = Some(kind);
        }
    }
    let mut base = format!("{:>gutter$}{corner}", "0");
    for m in &marks {
        base.push(match m {
            Some(k) if ascii => k.glyph().1,
            Some(k) => k.glyph().0,
            None => axis,
        });
    }
    out.push(base);

    out.push(time_axis(duration, gutter, cols, width));

    let mut legend = vec![format!(
        "{} {}",
        if ascii { '#' } else { '█' },
        data.speed_label()
    )];
    for k in data.marker_kinds() {
        let g = if ascii { k.glyph().1 } else { k.glyph().0 };
        legend.push(format!("{g} {}", k.label()));
    }
    out.extend(wrap(&legend, "  ", width));
}

fn stats(data: &ChartData, width: usize, out: &mut Vec<String>) {
    let st = &data.stats;
    let mut speed = vec![
        format!("avg {}", fmt_rate(st.avg_bps)),
        format!("min {}", fmt_rate(st.min_bps)),
        format!("peak {}", fmt_rate(st.peak_bps)),
    ];
    if let Some(d) = st.durable_bps {
        speed.push(format!("durable {}", fmt_rate(d)));
    }
    out.extend(wrap(&speed, " · ", width));
    if let Some(n) = &st.net {
        let words: Vec<String> = crate::report::plain::net_text(n, false)
            .split(' ')
            .map(str::to_string)
            .collect();
        out.extend(wrap(&words, " ", width));
    }
    let mut run = vec![
        data.amount_text(fmt_bytes),
        format!("last byte {}", fmt_secs(st.elapsed_s)),
    ];
    if let Some(d) = st.durable_s {
        run.push(format!("on disk {}", fmt_secs(d)));
    }
    if st.failed > 0 {
        run.push(format!("{} failed", st.failed));
    }
    out.extend(wrap(&run, " · ", width));
    if st.drops == 0 {
        out.push("no drops".to_string());
        return;
    }
    let causes: Vec<String> = st
        .lost_listed()
        .map(|(c, s)| format!("{c} {}", fmt_secs(s)))
        .collect();
    let plural = if st.drops == 1 { "" } else { "s" };
    if causes.is_empty() {
        // Nothing lost: say what the drops were instead of "0.00 s lost".
        let text = match st.stall_note() {
            Some(note) => format!("{} drop{plural}, no time lost: {note}", st.drops),
            None => format!("{} drop{plural}, no time lost", st.drops),
        };
        let words: Vec<String> = text.split(' ').map(str::to_string).collect();
        out.extend(wrap(&words, " ", width));
    } else {
        let head = format!(
            "{} drop{plural}, {} lost",
            st.drops,
            fmt_secs(st.lost_total())
        );
        let mut items = vec![format!("{head}:")];
        let n = causes.len();
        for (i, c) in causes.into_iter().enumerate() {
            items.push(if i + 1 < n { format!("{c},") } else { c });
        }
        out.extend(wrap(&items, " ", width));
    }
}

/// The writer's time budget as a bar with its legend, then the verdict, wrapped.
fn verdict(data: &ChartData, width: usize, out: &mut Vec<String>) {
    if let Some(b) = data.budget.as_ref().filter(|b| b.is_measured()) {
        // "time   [" + bar + "]" within the width.
        let cells = b.cells(width.saturating_sub(9).min(60));
        if !cells.is_empty() {
            let bar: String = cells
                .iter()
                .flat_map(|(s, n)| std::iter::repeat_n(s.glyph(), *n))
                .collect();
            out.push(format!("time   [{bar}]"));
            let legend: Vec<String> = b
                .shares()
                .iter()
                .filter(|(_, v)| *v >= 0.005)
                .map(|(s, v)| format!("{} {} {}", s.glyph(), b.label(*s), fmt_pct(v * 100.0)))
                .collect();
            out.extend(wrap(&legend, " · ", width));
        }
    }
    if let Some(v) = &data.verdict {
        // A word longer than the line (a path) is cut, so no line passes the width.
        let words: Vec<String> = crate::model::verdict::words(&v.text)
            .into_iter()
            .flat_map(|w| {
                let chars: Vec<char> = w.chars().collect();
                chars
                    .chunks(width.max(1))
                    .map(|c| c.iter().collect::<String>())
                    .collect::<Vec<_>>()
            })
            .collect();
        out.extend(wrap(&words, " ", width));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortened_title_keeps_its_arrow() {
        let long = format!("/srv/{}/src", "a".repeat(80));
        let dest = format!("/tank/{}/dst", "b".repeat(80));
        for (src, dst) in [
            (long.as_str(), dest.as_str()),
            (long.as_str(), "/tank"),
            ("/src", dest.as_str()),
        ] {
            let line = title_line(src, dst, 60);
            assert!(line.chars().count() <= 60, "{line}");
            assert!(line.contains(" → "), "{line}");
        }
        assert_eq!(title_line("/a", "/b", 60), "copyscope  /a → /b");
        assert!(title_line(&long, "/tank", 60).ends_with(" → /tank"));
    }
}
