//! `copyscope compare A.jsonl B.jsonl …` (and `export --compare`): several runs in one picture,
//! stacked on a shared time axis and one speed scale (or overlaid), each labelled, and a
//! Markdown table of the runs side by side. Every figure is the model's
//! ([`ChartData::from_replayed`]); nothing here re-derives a speed from samples.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::model::ModelConfig;
use crate::present::quote::quote;
use crate::report::recording::Replayed;

use super::describe::{drop_label, lost_secs};
use super::svg::{Look, render_svg_look, top_value};
use super::{ChartData, ExportTargets, png};
use crate::present::axis::{RateUnit, Steps, fmt_axis_time, fmt_tick, nice_step, rate_unit};
use crate::present::format::{fmt_bytes, fmt_event_time, fmt_mbps, fmt_rate, fmt_secs};

/// One run of a comparison: its label and its chart (from the model).
#[derive(Debug, Clone)]
pub struct Run {
    pub label: String,
    pub data: ChartData,
}

/// What the user fixed for the whole picture.
#[derive(Debug, Clone, Default)]
pub struct CompareLook {
    /// A common title above the panels.
    pub title: Option<String>,
    /// Top of the shared speed axis, bytes/s (default: the highest run's, rounded up).
    pub ymax_bps: Option<f64>,
    /// The shared axis unit (default: the one that suits the highest run).
    pub unit: Option<RateUnit>,
    /// One plot with a line per run instead of stacked panels.
    pub overlay: bool,
}

/// Line colours of overlaid runs, distinct in print and for the common colour blindnesses
/// (Okabe–Ito).
const RUN_COLOURS: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];

/// Default label of a run: the destination filesystem and host, plus the bench phase or
/// "watch" so that runs on one machine stay apart.
pub fn default_label(data: &ChartData, phase: Option<&str>) -> String {
    let t = &data.title;
    let mut parts: Vec<String> = Vec::new();
    if !t.fs.is_empty() {
        parts.push(t.fs.clone());
    }
    if !t.host.is_empty() {
        parts.push(format!("on {}", t.host));
    }
    if let Some(p) = phase {
        parts.push(format!("({p})"));
    }
    if parts.is_empty() {
        parts.push(t.dest.clone());
    }
    parts.join(" ")
}

/// Loads each recording through the model; `labels` name them in order (the rest get
/// [`default_label`]).
pub fn load_runs(
    files: &[PathBuf],
    labels: &[String],
    cfg: ModelConfig,
) -> anyhow::Result<Vec<Run>> {
    let mut runs = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let run = Replayed::load(f, cfg)
                .with_context(|| format!("reading recording {}", quote(f)))?;
            let data = ChartData::from_replayed(&run);
            let label = labels.get(i).cloned().unwrap_or_else(|| {
                let phase = run.header.bench.as_deref();
                default_label(&data, phase)
            });
            Ok(Run { label, data })
        })
        .collect::<anyhow::Result<Vec<Run>>>()?;
    let given = labels.len().min(files.len());
    let names: Vec<String> = files.iter().map(|f| file_name(f)).collect();
    tell_apart(&mut runs[given..], &names[given..]);
    Ok(runs)
}

/// The recording's name as the user typed it, without the directory and `.jsonl`.
fn file_name(f: &std::path::Path) -> String {
    let name = f.file_name().map_or_else(
        || f.to_string_lossy().into_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    name.strip_suffix(".jsonl").unwrap_or(&name).to_string()
}

/// Runs onto one filesystem of one host get the same default label: each one that shares its
/// label with another gets its recording's name after it ("ext4 /dev/vda on vm · before"), and
/// its start time when the names are the same too.
fn tell_apart(runs: &mut [Run], names: &[String]) {
    let same = |runs: &[Run], i: usize| {
        runs.iter()
            .enumerate()
            .any(|(j, r)| j != i && r.label == runs[i].label)
    };
    let shared: Vec<bool> = (0..runs.len()).map(|i| same(runs, i)).collect();
    for (i, name) in names.iter().enumerate() {
        if shared[i] {
            runs[i].label = format!("{} · {name}", runs[i].label);
        }
    }
    let shared: Vec<bool> = (0..runs.len()).map(|i| same(runs, i)).collect();
    for (i, run) in runs.iter_mut().enumerate() {
        if shared[i] && !run.data.title.date.is_empty() {
            run.label = format!("{} · {}", run.label, run.data.title.date);
        }
    }
}

/// The shared scale: the longest run's duration, the highest run's top speed (or the user's),
/// one unit for all.
fn shared_look<'a>(runs: &[Run], look: &'a CompareLook) -> Look<'a> {
    let top = runs.iter().map(|r| top_value(&r.data)).fold(0.0, f64::max);
    let ymax = look.ymax_bps.unwrap_or(top * 1.06);
    let unit = look
        .unit
        .unwrap_or_else(|| rate_unit((ymax / 1.06).max(1e6)));
    let duration = runs
        .iter()
        .map(|r| {
            r.data
                .duration_s
                .max(r.data.points.last().map_or(0.0, |p| p.t_s))
        })
        .fold(1e-3, f64::max);
    Look {
        title: None,
        ymax_bps: Some(ymax),
        duration_s: Some(duration),
        unit: Some(unit),
    }
}

/// Escapes text for XML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The comparison picture as SVG, `width`×`height` pixels.
pub fn render_compare_svg(runs: &[Run], look: &CompareLook, width: u32, height: u32) -> String {
    let (w, h) = (width.max(300), height.max(200));
    let shared = shared_look(runs, look);
    let s = (f64::from(w) / 1600.0).min(f64::from(h) / 900.0).max(0.4);
    let title_h = if look.title.is_some() {
        (48.0 * s).round() as u32
    } else {
        0
    };
    let mut o = String::with_capacity(256 * 1024);
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Verdana, Arial, sans-serif">"#
    );
    let _ = writeln!(o, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    if let Some(t) = &look.title {
        let _ = writeln!(
            o,
            r##"<text id="compare-title" x="{:.1}" y="{:.1}" font-size="{:.1}" font-weight="bold" fill="#0f172a">{}</text>"##,
            28.0 * s,
            34.0 * s,
            26.0 * s,
            esc(t)
        );
    }
    if look.overlay {
        overlay(&mut o, runs, &shared, w, h, title_h, s);
    } else {
        let n = runs.len().max(1) as u32;
        let panel_h = (h - title_h) / n;
        for (i, run) in runs.iter().enumerate() {
            let panel_look = Look {
                title: Some(&run.label),
                ..shared
            };
            let inner = render_svg_look(&run.data, w, panel_h, &panel_look);
            let y = title_h + i as u32 * panel_h;
            let _ = writeln!(
                o,
                r#"<g id="panel-{i}" class="panel" transform="translate(0,{y})">"#
            );
            // The panel's own document without its <svg> wrapper: one coordinate system.
            for line in inner.lines() {
                if line.starts_with("<svg ") || line == "</svg>" {
                    continue;
                }
                o.push_str(line);
                o.push('\n');
            }
            o.push_str("</g>\n");
        }
    }
    o.push_str("</svg>\n");
    o
}

/// One plot, a line per run, a legend with the labels.
#[expect(
    clippy::too_many_lines,
    reason = "one plot drawn in order (grid, axes, a line per run, legend) on one geometry"
)]
fn overlay(o: &mut String, runs: &[Run], look: &Look, w: u32, h: u32, top: u32, s: f64) {
    let (w, h) = (f64::from(w), f64::from(h));
    let unit = look.unit.unwrap_or_else(|| rate_unit(1e6));
    let target = look.ymax_bps.unwrap_or(1e6);
    let step = nice_step(target / unit.divisor, 5, Steps::Round);
    let ymax_units = (target / unit.divisor / step).ceil().max(1.0) * step;
    let ymax = ymax_units * unit.divisor;
    let duration = look.duration_s.unwrap_or(1.0).max(1e-3);
    let legend_h = (runs.len() as f64 * 22.0 + 16.0) * s;
    let (x0, x1) = (132.0 * s, w - 36.0 * s);
    let (y0, y1) = (f64::from(top) + 40.0 * s, h - legend_h - 48.0 * s);
    let x = |t: f64| x0 + (t / duration).clamp(0.0, 1.0) * (x1 - x0);
    let y = |v: f64| y1 - (v / ymax).clamp(0.0, 1.0) * (y1 - y0);
    let _ = writeln!(
        o,
        r#"<rect id="plot-area" x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="none" data-ymax-bps="{ymax}" data-duration-s="{duration}"/>"#,
        x1 - x0,
        y1 - y0
    );
    o.push_str("<g id=\"grid\">\n");
    let ticks = (ymax_units / step).round() as usize;
    for i in 0..=ticks {
        let v = i as f64 * step;
        let yy = y(v * unit.divisor);
        let _ = writeln!(
            o,
            r##"<line x1="{x0:.1}" y1="{yy:.1}" x2="{x1:.1}" y2="{yy:.1}" stroke="#e2e8f0" stroke-width="{s:.2}"/>"##
        );
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="#475569" text-anchor="end">{}</text>"##,
            x0 - 8.0 * s,
            yy + 4.5 * s,
            13.0 * s,
            fmt_tick(v)
        );
    }
    let _ = writeln!(
        o,
        r##"<text x="{:.1}" y="{:.1}" font-size="{:.1}" font-weight="bold" fill="#475569" text-anchor="end">{}</text>"##,
        x0 - 8.0 * s,
        y0 - 12.0 * s,
        13.0 * s,
        unit.label
    );
    let tstep = super::time_axis_step(duration, ((x1 - x0) / (90.0 * s)) as usize);
    let mut t = 0.0;
    while t <= duration + 1e-9 {
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="#475569" text-anchor="middle">{}</text>"##,
            x(t),
            y1 + 20.0 * s,
            13.0 * s,
            fmt_axis_time(t, tstep)
        );
        t += tstep;
    }
    o.push_str("</g>\n");
    let buckets = ((x1 - x0) / 2.0).max(10.0) as usize;
    for (i, run) in runs.iter().enumerate() {
        let colour = RUN_COLOURS[i % RUN_COLOURS.len()];
        let pts = run.data.downsample(buckets);
        let mut d = String::new();
        for (k, p) in pts.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1} ",
                if k == 0 { "M" } else { "L" },
                x(p.t_s),
                y(p.copy_bps)
            );
        }
        let _ = writeln!(
            o,
            r#"<path class="run-line" data-run="{i}" d="{}" fill="none" stroke="{colour}" stroke-width="{:.2}"/>"#,
            d.trim_end(),
            2.0 * s
        );
        // `watch --net`: the run's receive rate, dashed in the run's colour.
        let mut rx = String::new();
        for p in &pts {
            if let Some(v) = p.net_bps {
                let _ = write!(
                    rx,
                    "{}{:.1},{:.1} ",
                    if rx.is_empty() { "M" } else { "L" },
                    x(p.t_s),
                    y(v)
                );
            }
        }
        if !rx.is_empty() {
            let _ = writeln!(
                o,
                r#"<path class="run-net-line" data-run="{i}" d="{}" fill="none" stroke="{colour}" stroke-width="{:.2}" stroke-dasharray="{:.1} {:.1}"/>"#,
                rx.trim_end(),
                1.4 * s,
                4.0 * s,
                3.0 * s
            );
        }
        let ly = y1 + 44.0 * s + i as f64 * 22.0 * s;
        let _ = writeln!(
            o,
            r#"<line x1="{x0:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="{:.2}"/>"#,
            ly - 5.0 * s,
            x0 + 28.0 * s,
            ly - 5.0 * s,
            3.0 * s
        );
        let st = &run.data.stats;
        let _ = writeln!(
            o,
            r##"<text class="run-label" x="{:.1}" y="{ly:.1}" font-size="{:.1}" fill="#0f172a">{}  ·  {} average{}{}  ·  {} drop{}</text>"##,
            x0 + 36.0 * s,
            15.0 * s,
            esc(&run.label),
            fmt_rate(st.avg_bps),
            st.durable_bps
                .map(|d| format!(", {} durable", fmt_rate(d)))
                .unwrap_or_default(),
            st.net
                .map(|n| format!(
                    ", {} avg {} (dashed)",
                    run.data.net_label(),
                    fmt_rate(n.avg_bps)
                ))
                .unwrap_or_default(),
            st.drops,
            if st.drops == 1 { "" } else { "s" }
        );
    }
}

/// Escapes text for a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', " ")
}

/// The runs side by side: a column per run, a row per figure (all the model's).
#[expect(
    clippy::too_many_lines,
    reason = "one table, a row per figure of the model: the rows read together"
)]
pub fn render_compare_markdown(runs: &[Run], title: Option<&str>) -> String {
    let mut o = String::new();
    if let Some(t) = title {
        let _ = writeln!(o, "### {}\n", cell(t));
    }
    let _ = write!(o, "| |");
    for r in runs {
        let _ = write!(o, " {} |", cell(&r.label));
    }
    o.push('\n');
    o.push_str("|:--|");
    for _ in runs {
        o.push_str("--:|");
    }
    o.push('\n');
    let row = |o: &mut String, name: &str, f: &dyn Fn(&ChartData) -> String| {
        let _ = write!(o, "| {name} |");
        for r in runs {
            let _ = write!(o, " {} |", cell(&f(&r.data)));
        }
        o.push('\n');
    };
    row(&mut o, "data", &|d| fmt_bytes(d.stats.bytes));
    row(&mut o, "files", &|d| d.stats.files.to_string());
    row(&mut o, "average MB/s (to cache)", &|d| {
        fmt_mbps(d.stats.avg_bps)
    });
    row(&mut o, "durable MB/s (after flush)", &|d| {
        d.stats.durable_bps.map_or("n/a".into(), fmt_mbps)
    });
    row(&mut o, "min / peak MB/s", &|d| {
        format!(
            "{} / {}",
            fmt_mbps(d.stats.min_bps),
            fmt_mbps(d.stats.peak_bps)
        )
    });
    if runs.iter().any(|r| r.data.stats.net.is_some()) {
        row(&mut o, "network rx MB/s avg (min / peak)", &|d| {
            d.stats.net.map_or("n/a (no --net)".into(), |n| {
                format!(
                    "{} ({} / {})",
                    fmt_mbps(n.avg_bps),
                    fmt_mbps(n.min_bps),
                    fmt_mbps(n.peak_bps)
                )
            })
        });
    }
    row(&mut o, "time", &|d| fmt_secs(d.stats.elapsed_s));
    row(&mut o, "drops", &|d| d.stats.drops.to_string());
    row(&mut o, "time lost", &|d| {
        // fold from +0.0: an empty f64 sum is -0.0, printed "-0.00 s".
        fmt_secs(
            d.stats
                .lost_secs_by_cause
                .iter()
                .fold(0.0, |a, (_, s)| a + s),
        )
    });
    let mut causes: Vec<String> = Vec::new();
    for r in runs {
        for (c, _) in &r.data.stats.lost_secs_by_cause {
            if !causes.contains(c) {
                causes.push(c.clone());
            }
        }
    }
    for c in &causes {
        row(&mut o, &format!("· lost to {c}"), &|d| {
            d.stats
                .lost_secs_by_cause
                .iter()
                .find(|(k, _)| k == c)
                .map_or("–".into(), |(_, s)| fmt_secs(*s))
        });
    }
    for k in 0..3 {
        row(&mut o, &format!("largest drop {}", k + 1), &|d| {
            let mut drops: Vec<_> = d.drops().collect();
            // Largest by time lost, then by how long the speed stayed down.
            let dur = |e: &crate::model::Event, d: &crate::model::DropInfo| {
                d.end_ns.saturating_sub(e.t_ns)
            };
            drops.sort_by(|a, b| {
                lost_secs(b.1)
                    .total_cmp(&lost_secs(a.1))
                    .then(dur(b.0, b.1).cmp(&dur(a.0, a.1)))
            });
            drops.get(k).map_or("–".into(), |(e, dr)| {
                format!(
                    "{} → {} for {} at {}, {} lost ({})",
                    fmt_rate(dr.reference_bps),
                    fmt_rate(dr.min_bps),
                    fmt_secs(dr.end_ns.saturating_sub(e.t_ns) as f64 / 1e9),
                    fmt_event_time(e.t_ns),
                    fmt_secs(lost_secs(dr)),
                    drop_label(dr)
                )
            })
        });
    }
    o
}

/// `copyscope compare`: writes the requested outputs (PNG/SVG picture, Markdown table, text
/// = the table) and returns the paths written.
pub fn write_compare(
    runs: &[Run],
    look: &CompareLook,
    targets: &ExportTargets,
    size: (u32, u32),
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let write = |path: &Path, bytes: &[u8]| -> anyhow::Result<()> {
        if path == Path::new("-") {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            return out
                .write_all(bytes)
                .and_then(|()| out.flush())
                .context("writing to stdout");
        }
        std::fs::write(path, bytes).with_context(|| format!("writing {}", quote(path)))
    };
    if targets.png.is_some() || targets.svg.is_some() {
        let svg = render_compare_svg(runs, look, size.0, size.1);
        if let Some(p) = &targets.svg {
            let exported =
                super::outline::outline_text(&svg).context("outlining the SVG's text")?;
            write(p, exported.as_bytes())?;
            written.push(p.clone());
        }
        if let Some(p) = &targets.png {
            let bytes = png::rasterize(&svg, size.0, size.1).context("rendering the PNG")?;
            write(p, &bytes)?;
            written.push(p.clone());
        }
    }
    let table = render_compare_markdown(runs, look.title.as_deref());
    for p in [&targets.markdown, &targets.text].into_iter().flatten() {
        write(p, table.as_bytes())?;
        written.push(p.clone());
    }
    Ok(written)
}
