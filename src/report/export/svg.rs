//! SVG export: the one drawing of a run (title, filled speed area, device overlay,
//! average, drop spans, event lanes with a legend, stats table). The PNG is this SVG
//! rasterised, so the two never disagree.

use std::fmt::Write as _;

use crate::model::{EventKind, Slice};

use super::describe::{cause_label, drop_label, lost_secs};
use super::{ChartData, ChartPoint, ChartStats, DeviceSource, MarkerKind};
use crate::present::axis::{RateUnit, Steps, fmt_axis_time, fmt_tick, nice_step, rate_unit};
use crate::present::format::{fmt_bytes, fmt_count, fmt_pct, fmt_rate, fmt_secs};
use crate::present::text::ellipsize_middle;

const INK: &str = "#0f172a";
const MUTED: &str = "#475569";
const FAINT: &str = "#94a3b8";
const GRID: &str = "#e2e8f0";
const BRAND: &str = "#2563eb";
/// Copy-speed area fill (opaque, so it reads the same over drop shading and in tests).
pub const FILL: &str = "#93c5fd";
const FILL_LINE: &str = "#1d4ed8";
const ENVELOPE: &str = "#dbeafe";
const DEVICE: &str = "#d97706";
/// `watch --net`: the receive rate's line (the TUI draws it magenta too).
const NETWORK: &str = "#c026d3";
const AVERAGE: &str = "#15803d";
const DROP_SHADE: &str = "#fde2e2";
const FLUSH_SHADE: &str = "#eef2f6";
const PANEL: &str = "#f8fafc";

/// Font stack: the embedded face first (the PNG has only it), common fallbacks for browsers.
const FONTS: &str = "DejaVu Sans, Verdana, Arial, sans-serif";

/// Where everything goes, in pixels.
struct Layout {
    s: f64,
    w: f64,
    h: f64,
    pad: f64,
    plot_left: f64,
    plot_right: f64,
    plot_top: f64,
    plot_bottom: f64,
    lanes_top: f64,
    lane_h: f64,
    time_base: f64,
    legend_base: f64,
    stats_top: f64,
    stats_h: f64,
    /// The verdict band (budget bar and verdict) just above the stats panel; 0 high without one.
    verdict_top: f64,
    verdict_h: f64,
}

impl Layout {
    fn new(w: f64, h: f64, lanes: usize, verdict_units: f64) -> Layout {
        // Everything scales with the picture, but text stays readable on small pictures
        // (at least 0.62 of the 1600×900 sizes) as long as the plot keeps 80 px.
        let per_unit = 2.0 * 28.0
            + 86.0
            + 150.0
            + verdict_units
            + 18.0
            + 32.0
            + 18.0
            + lanes as f64 * 18.0
            + 8.0;
        let raw = (w / 1600.0).min(h / 900.0);
        let s = raw.max(0.62f64.min((h - 80.0) / per_unit)).max(0.2);
        let pad = 28.0 * s;
        let stats_h = 150.0 * s;
        let stats_top = h - pad - stats_h;
        let verdict_h = verdict_units * s;
        let verdict_top = stats_top - verdict_h;
        let legend_base = verdict_top - 18.0 * s;
        let time_base = legend_base - 32.0 * s;
        let lane_h = 18.0 * s;
        let lanes_bottom = time_base - 18.0 * s;
        let lanes_top = lanes_bottom - lanes as f64 * lane_h;
        Layout {
            s,
            w,
            h,
            pad,
            plot_left: pad + 104.0 * s,
            plot_right: w - pad - 8.0 * s,
            plot_top: pad + 86.0 * s,
            plot_bottom: lanes_top - 8.0 * s,
            lanes_top,
            lane_h,
            time_base,
            legend_base,
            stats_top,
            stats_h,
            verdict_top,
            verdict_h,
        }
    }
}

/// Maps data to pixels.
struct Scale {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    duration: f64,
    ymax: f64,
}

impl Scale {
    fn x(&self, t: f64) -> f64 {
        self.x0 + (t / self.duration).clamp(0.0, 1.0) * (self.x1 - self.x0)
    }
    fn y(&self, v: f64) -> f64 {
        self.y1 - (v / self.ymax).clamp(0.0, 1.0) * (self.y1 - self.y0)
    }
}

/// Escapes text for XML content and attributes.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Rough text width for layout decisions (DejaVu Sans averages ~0.6 em per character).
/// Width of a bold character, in ems (see [`header`]).
const BOLD_EM: f64 = 0.68;

fn text_w(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// What the user may fix about a picture (`--title`, `--ymax`, `--unit`) and what `compare`
/// fixes so that stacked panels share one time axis and one speed scale.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Look<'a> {
    /// Replaces "source → destination" in the title line.
    pub title: Option<&'a str>,
    /// Top of the speed axis, bytes/s (rounded up to the next tick).
    pub ymax_bps: Option<f64>,
    /// Length of the time axis, seconds (never shorter than the run).
    pub duration_s: Option<f64>,
    /// The axis unit (otherwise the one that suits the run's peak).
    pub unit: Option<RateUnit>,
}

/// Renders the chart as an SVG document of `width`×`height` pixels.
pub fn render_svg(data: &ChartData, width: u32, height: u32) -> String {
    render_svg_look(data, width, height, &Look::default())
}

/// [`render_svg`] with the user's or a comparison's fixed title, scale and unit.
pub fn render_svg_look(data: &ChartData, width: u32, height: u32, look: &Look) -> String {
    let (w, h) = (width.max(200) as f64, height.max(150) as f64);
    let kinds = data.marker_kinds();
    let lanes = kinds.len().max(1);
    let l = Layout::new(w, h, lanes, verdict_units(data, w, h));
    let s = l.s;

    let duration = data
        .duration_s
        .max(data.points.last().map_or(0.0, |p| p.t_s))
        .max(look.duration_s.unwrap_or(0.0))
        .max(1e-3);
    let (unit, step, ymax_units) = y_scale(data, look);
    let sc = Scale {
        x0: l.plot_left,
        x1: l.plot_right,
        y0: l.plot_top,
        y1: l.plot_bottom,
        duration,
        ymax: ymax_units * unit.divisor,
    };

    let mut o = String::with_capacity(64 * 1024);
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONTS}">"#
    );
    let _ = writeln!(
        o,
        r#"<title>copyscope: {} → {}</title>"#,
        esc(&data.title.source),
        esc(&data.title.dest)
    );
    let _ = writeln!(o, r#"<rect width="{w}" height="{h}" fill="white"/>"#);

    // Invisible frames naming the plot and the marker lanes, for tools and tests that
    // measure the picture.
    let _ = writeln!(
        o,
        r#"<rect id="plot-area" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" data-ymax-bps="{}" data-duration-s="{}"/>"#,
        l.plot_left,
        l.plot_top,
        l.plot_right - l.plot_left,
        l.plot_bottom - l.plot_top,
        sc.ymax,
        sc.duration
    );
    let _ = writeln!(
        o,
        r#"<rect id="lanes-area" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none"/>"#,
        l.plot_left,
        l.lanes_top,
        l.plot_right - l.plot_left,
        lanes as f64 * l.lane_h
    );
    let _ = writeln!(
        o,
        r#"<rect id="title-area" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none"/>"#,
        l.pad,
        l.pad,
        l.w - 2.0 * l.pad,
        36.0 * s
    );
    header(&mut o, data, &l, look.title);
    spans(&mut o, data, &l, &sc);
    grid(&mut o, &l, &sc, step, ymax_units, unit.label);
    series(&mut o, data, &l, &sc);
    average(&mut o, data, &l, &sc);
    lanes_and_markers(&mut o, data, &kinds, &l, &sc);
    legend(&mut o, data, &kinds, &l);
    verdict_band(&mut o, data, &l);
    stats_panel(&mut o, data, &l);
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{FAINT}" text-anchor="end">made with copyscope {}</text>"#,
        w - l.pad,
        l.h - 9.0 * s,
        10.5 * s,
        env!("CARGO_PKG_VERSION")
    );
    o.push_str("</svg>\n");
    o
}

/// How far above the copy's own peak the device overlay may lift the speed axis. The device
/// counts every writer on the disk: on a busy server other writers' bursts (800 MB/s beside a
/// 20 MB/s copy) squashed the copy into a sliver. A pool's or disk's own bursts of this copy's
/// data (a txg sync at 2 × the intake) stay in view; what goes higher is drawn clipped at the
/// top, and the legend says so.
const DEVICE_HEADROOM: f64 = 2.5;

/// The highest speed the run's picture must show: its peaks, the average, and the device
/// overlay up to [`DEVICE_HEADROOM`] × the copy's peak (all of it when nothing was copied).
pub fn top_value(data: &ChartData) -> f64 {
    let copy = data
        .points
        .iter()
        .map(|p| p.max_bps)
        .fold(data.stats.avg_bps, f64::max);
    // The receive rate shares the speed axis and the device's headroom rule.
    let device = data
        .points
        .iter()
        .flat_map(|p| [p.device_bps, p.net_bps])
        .flatten()
        .fold(0.0, f64::max);
    if copy > 0.0 {
        copy.max(device.min(copy * DEVICE_HEADROOM))
    } else {
        device
    }
}

/// True when the device overlay rises above [`top_value`]: its line is clipped at the top.
pub fn device_clipped(data: &ChartData) -> bool {
    let top = top_value(data);
    data.points
        .iter()
        .any(|p| p.device_bps.is_some_and(|d| d > top * 1.06))
}

/// The speed axis: its unit, tick step and top (in units). A fixed `ymax_bps` is rounded up to
/// the next tick, so pictures given the same `ymax_bps` and unit get the same axis labels.
fn y_scale(data: &ChartData, look: &Look) -> (RateUnit, f64, f64) {
    let target = look
        .ymax_bps
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or_else(|| top_value(data) * 1.06);
    let unit = look
        .unit
        .unwrap_or_else(|| rate_unit((target / 1.06).max(1e6)));
    let step = nice_step(target / unit.divisor, 5, Steps::Round);
    let ymax_units = (target / unit.divisor / step).ceil().max(1.0) * step;
    (unit, step, ymax_units)
}

#[expect(
    clippy::too_many_lines,
    reason = "the picture's header (title, headline figures, subtitle) laid out on one cursor"
)]
fn header(o: &mut String, data: &ChartData, l: &Layout, title: Option<&str>) {
    let s = l.s;
    let t = &data.title;
    let title_size = 26.0 * s;
    let headline = format!("{} average", fmt_rate(data.stats.avg_bps));
    let headline2 = data
        .stats
        .durable_bps
        .map(|d| format!("{} durable", fmt_rate(d)));
    let right_w = text_w(&headline, 22.0 * s) + 24.0 * s;
    let avail = (l.w - 2.0 * l.pad - right_w - text_w("copyscope  ", title_size)).max(60.0);
    // The title is bold: DejaVu Sans Bold runs ~0.68 em a character over paths (measured on
    // the rendered PNG), wider than the regular text's 0.6; at 0.6 a long route ran into the
    // headline.
    let max_chars = (avail / (title_size * BOLD_EM)) as usize;
    let half = max_chars.saturating_sub(3) / 2;
    let route = if let Some(title) = title {
        ellipsize_middle(title, max_chars.max(12))
    } else if t.source.chars().count() + t.dest.chars().count() + 3 <= max_chars {
        format!("{} → {}", t.source, t.dest)
    } else {
        format!(
            "{} → {}",
            ellipsize_middle(&t.source, half.max(6)),
            ellipsize_middle(&t.dest, half.max(6))
        )
    };
    let y = l.pad + 26.0 * s;
    let _ = writeln!(
        o,
        r#"<text id="title" x="{:.1}" y="{y:.1}" font-size="{title_size:.1}" font-weight="bold" fill="{INK}"><tspan fill="{BRAND}">copyscope</tspan>  {}</text>"#,
        l.pad,
        esc(&route)
    );
    let mut sub: Vec<String> = Vec::new();
    if !t.fs.is_empty() {
        sub.push(t.fs.clone());
    }
    if !t.date.is_empty() {
        sub.push(t.date.clone());
    }
    if !t.host.is_empty() {
        sub.push(format!("host {}", t.host));
    }
    if !t.kernel.is_empty() {
        sub.push(format!("Linux {}", t.kernel));
    }
    let files = crate::present::format::fmt_files(data.stats.files);
    sub.push(match data.watch {
        // A watch counts no files: only what the writers put in.
        Some(_) => format!(
            "{} written in {}",
            fmt_bytes(data.stats.bytes),
            fmt_secs(data.stats.elapsed_s)
        ),
        None if data.pipe => format!(
            "{} passed in {}",
            fmt_bytes(data.stats.bytes),
            fmt_secs(data.stats.elapsed_s)
        ),
        None => format!(
            "{} in {}, {}",
            fmt_bytes(data.stats.bytes),
            fmt_secs(data.stats.elapsed_s),
            files
        ),
    });
    let _ = writeln!(
        o,
        r#"<text id="subtitle" x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}">{}</text>"#,
        l.pad,
        y + 26.0 * s,
        15.0 * s,
        esc(&sub.join("  ·  "))
    );
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{y:.1}" font-size="{:.1}" font-weight="bold" fill="{BRAND}" text-anchor="end">{}</text>"#,
        l.w - l.pad,
        22.0 * s,
        esc(&headline)
    );
    if let Some(h2) = headline2 {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}" text-anchor="end">{}</text>"#,
            l.w - l.pad,
            y + 26.0 * s,
            15.0 * s,
            esc(&h2)
        );
    }
}

/// Flush and drop spans behind everything else, with drop numbers on top.
fn spans(o: &mut String, data: &ChartData, l: &Layout, sc: &Scale) {
    let s = l.s;
    let height = l.plot_bottom - l.plot_top;
    o.push_str("<g id=\"spans\">\n");
    for (a, b) in data.flush_spans() {
        let (x0, x1) = (sc.x(a), sc.x(b));
        let _ = writeln!(
            o,
            r#"<rect class="flush-span" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{height:.1}" fill="{FLUSH_SHADE}"/>"#,
            l.plot_top,
            (x1 - x0).max(1.0)
        );
        if x1 - x0 > 44.0 * s {
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}" text-anchor="middle">flush</text>"#,
                (x0 + x1) / 2.0,
                l.plot_top + 16.0 * s,
                12.0 * s
            );
        }
    }
    let mut last_label_x = f64::NEG_INFINITY;
    for (n, (e, d)) in data.drops().enumerate() {
        let x0 = sc.x(e.t_ns as f64 / 1e9);
        let x1 = sc.x(d.end_ns as f64 / 1e9);
        let _ = writeln!(
            o,
            r#"<rect class="drop-span" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{height:.1}" fill="{DROP_SHADE}"/>"#,
            l.plot_top,
            (x1 - x0).max(1.5 * s)
        );
        let label = format!("{}", n + 1);
        let cx = (x0 + x1) / 2.0;
        if cx - last_label_x > text_w(&label, 12.0 * s) + 4.0 * s {
            last_label_x = cx;
            let _ = writeln!(
                o,
                r#"<text class="drop-number" x="{cx:.1}" y="{:.1}" font-size="{:.1}" font-weight="bold" fill="{}" text-anchor="middle">{label}</text>"#,
                l.plot_top + 14.0 * s,
                12.0 * s,
                MarkerKind::Drop.colour()
            );
        }
    }
    o.push_str("</g>\n");
}

fn grid(o: &mut String, l: &Layout, sc: &Scale, step: f64, ymax_units: f64, unit: &str) {
    let s = l.s;
    o.push_str("<g id=\"grid\">\n");
    let ticks = (ymax_units / step).round() as usize;
    for i in 0..=ticks {
        let v = i as f64 * step;
        let y = sc.y(v * sc.ymax / ymax_units);
        if i > 0 {
            let _ = writeln!(
                o,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{GRID}" stroke-width="{:.2}"/>"#,
                l.plot_left, l.plot_right, s
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}" text-anchor="end">{}</text>"#,
            l.plot_left - 8.0 * s,
            y + 4.5 * s,
            13.0 * s,
            fmt_tick(v)
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" font-weight="bold" fill="{MUTED}" text-anchor="end">{unit}</text>"#,
        l.plot_left - 8.0 * s,
        l.plot_top - 12.0 * s,
        13.0 * s
    );
    let tstep = super::time_axis_step(
        sc.duration,
        ((l.plot_right - l.plot_left) / (90.0 * s)) as usize,
    );
    let mut t = 0.0;
    while t <= sc.duration + 1e-9 {
        let x = sc.x(t);
        let _ = writeln!(
            o,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{GRID}" stroke-width="{:.2}"/>"#,
            l.plot_top,
            l.time_base - 14.0 * s,
            s
        );
        let _ = writeln!(
            o,
            r#"<text x="{x:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}" text-anchor="middle">{}</text>"#,
            l.time_base,
            13.0 * s,
            fmt_axis_time(t, tstep)
        );
        t += tstep;
    }
    o.push_str("</g>\n");
}

/// SVG path data through the points' values, closed down to the baseline.
fn area_path(
    pts: &[ChartPoint],
    sc: &Scale,
    top: impl Fn(&ChartPoint) -> f64,
    bottom: Option<&dyn Fn(&ChartPoint) -> f64>,
) -> String {
    let mut d = String::new();
    let first_x = sc.x(0.0);
    let last_x = sc.x(pts.last().map_or(0.0, |p| p.t_s)).max(first_x);
    let _ = write!(d, "M{first_x:.1},{:.1}", sc.y(0.0));
    if let Some(p) = pts.first() {
        let _ = write!(d, " L{first_x:.1},{:.1}", sc.y(top(p)));
    }
    for p in pts {
        let _ = write!(d, " L{:.1},{:.1}", sc.x(p.t_s), sc.y(top(p)));
    }
    match bottom {
        None => {
            let _ = write!(d, " L{last_x:.1},{:.1} Z", sc.y(0.0));
        }
        Some(b) => {
            for p in pts.iter().rev() {
                let _ = write!(d, " L{:.1},{:.1}", sc.x(p.t_s), sc.y(b(p)));
            }
            d.push_str(" Z");
        }
    }
    d
}

fn series(o: &mut String, data: &ChartData, l: &Layout, sc: &Scale) {
    let s = l.s;
    let pts = data.downsample(((l.plot_right - l.plot_left) / 2.0).max(10.0) as usize);
    if pts.is_empty() {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}" text-anchor="middle">no samples recorded</text>"#,
            (l.plot_left + l.plot_right) / 2.0,
            (l.plot_top + l.plot_bottom) / 2.0,
            16.0 * s
        );
        return;
    }
    if pts.iter().any(|p| p.max_bps > p.min_bps) {
        let d = area_path(&pts, sc, |p| p.max_bps, Some(&|p: &ChartPoint| p.min_bps));
        let _ = writeln!(o, r#"<path id="copy-envelope" d="{d}" fill="{ENVELOPE}"/>"#);
    }
    let d = area_path(&pts, sc, |p| p.copy_bps, None);
    let _ = writeln!(o, r#"<path id="copy-series" d="{d}" fill="{FILL}"/>"#);
    let mut line = String::new();
    for (i, p) in pts.iter().enumerate() {
        let _ = write!(
            line,
            "{}{:.1},{:.1}",
            if i == 0 { "" } else { " " },
            sc.x(p.t_s),
            sc.y(p.copy_bps)
        );
    }
    let _ = writeln!(
        o,
        r#"<polyline id="copy-line" points="{line}" fill="none" stroke="{FILL_LINE}" stroke-width="{:.2}" stroke-linejoin="round"/>"#,
        1.6 * s
    );
    if data.device_source != DeviceSource::None {
        let mut dev = String::new();
        for p in &pts {
            if let Some(v) = p.device_bps {
                let _ = write!(
                    dev,
                    "{}{:.1},{:.1}",
                    if dev.is_empty() { "" } else { " " },
                    sc.x(p.t_s),
                    sc.y(v)
                );
            }
        }
        if !dev.is_empty() {
            let _ = writeln!(
                o,
                r#"<polyline id="device-series" points="{dev}" fill="none" stroke="{DEVICE}" stroke-width="{:.2}" stroke-linejoin="round"/>"#,
                2.2 * s
            );
        }
    }
    net_line(o, &pts, l, sc);
    // Axes on top of the fill so the baseline stays crisp.
    let _ = writeln!(
        o,
        r#"<path d="M{:.1},{:.1} V{:.1} H{:.1}" fill="none" stroke="{FAINT}" stroke-width="{:.2}"/>"#,
        l.plot_left,
        l.plot_top,
        l.plot_bottom,
        l.plot_right,
        1.2 * s
    );
}

/// `watch --net`: the interface's receive rate as a line of its own on the speed axis, clipped
/// at the top like the device's.
fn net_line(o: &mut String, pts: &[ChartPoint], l: &Layout, sc: &Scale) {
    let mut line = String::new();
    for p in pts {
        if let Some(v) = p.net_bps {
            let _ = write!(
                line,
                "{}{:.1},{:.1}",
                if line.is_empty() { "" } else { " " },
                sc.x(p.t_s),
                sc.y(v).max(l.plot_top)
            );
        }
    }
    if !line.is_empty() {
        let _ = writeln!(
            o,
            r#"<polyline id="net-series" points="{line}" fill="none" stroke="{NETWORK}" stroke-width="{:.2}" stroke-linejoin="round"/>"#,
            1.8 * l.s
        );
    }
}

fn average(o: &mut String, data: &ChartData, l: &Layout, sc: &Scale) {
    let s = l.s;
    let avg = data.stats.avg_bps;
    if avg <= 0.0 || data.points.is_empty() {
        return;
    }
    let y = sc.y(avg);
    let x1 = sc
        .x(data.stats.elapsed_s.min(sc.duration))
        .max(l.plot_left + 40.0 * s);
    let _ = writeln!(
        o,
        r#"<line id="average" x1="{:.1}" y1="{y:.1}" x2="{x1:.1}" y2="{y:.1}" stroke="{AVERAGE}" stroke-width="{:.2}" stroke-dasharray="{:.1} {:.1}"/>"#,
        l.plot_left,
        1.8 * s,
        8.0 * s,
        5.0 * s
    );
    let label = format!("avg {}", fmt_rate(avg));
    let lx = (x1 - 6.0 * s).max(l.plot_left + text_w(&label, 12.5 * s) + 6.0 * s);
    let _ = writeln!(
        o,
        r#"<text x="{lx:.1}" y="{:.1}" font-size="{:.1}" font-weight="bold" fill="{AVERAGE}" text-anchor="end" stroke="white" stroke-width="{:.1}" paint-order="stroke">{}</text>"#,
        y - 6.0 * s,
        12.5 * s,
        3.0 * s,
        esc(&label)
    );
}

/// One marker glyph centred at (x, y).
fn glyph(o: &mut String, kind: MarkerKind, x: f64, y: f64, r: f64, class: &str) {
    let c = kind.colour();
    match kind {
        MarkerKind::Drop => {
            let _ = writeln!(
                o,
                r#"<path class="{class}" d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{c}"/>"#,
                x - r,
                y - r * 0.8,
                x + r,
                y - r * 0.8,
                x,
                y + r
            );
        }
        MarkerKind::ZfsThrottle => {
            let _ = writeln!(
                o,
                r#"<path class="{class}" d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" fill="{c}"/>"#,
                y - r,
                x + r,
                y + r,
                x - r
            );
        }
        MarkerKind::DirtyThrottle | MarkerKind::Flush => {
            let _ = writeln!(
                o,
                r#"<rect class="{class}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}"/>"#,
                x - r * 0.8,
                y - r * 0.8,
                r * 1.6,
                r * 1.6
            );
        }
        MarkerKind::FileError => {
            let _ = writeln!(
                o,
                r#"<path class="{class}" d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{c}"/>"#,
                y - r,
                x + r,
                y + r * 0.8,
                x - r,
                y + r * 0.8
            );
        }
        MarkerKind::Txg => {
            let _ = writeln!(
                o,
                r#"<rect class="{class}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}"/>"#,
                x - r * 0.3,
                y - r,
                r * 0.6,
                r * 2.0
            );
        }
        MarkerKind::Writeback
        | MarkerKind::Pause
        | MarkerKind::Scan
        | MarkerKind::Note
        | MarkerKind::Phase => {
            let _ = writeln!(
                o,
                r#"<circle class="{class}" cx="{x:.1}" cy="{y:.1}" r="{:.1}" fill="{c}"/>"#,
                r * 0.85
            );
        }
    }
}

fn lanes_and_markers(
    o: &mut String,
    data: &ChartData,
    kinds: &[MarkerKind],
    l: &Layout,
    sc: &Scale,
) {
    let s = l.s;
    o.push_str("<g id=\"markers\">\n");
    if kinds.is_empty() {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{FAINT}" text-anchor="end">events</text>"#,
            l.plot_left - 8.0 * s,
            l.lanes_top + l.lane_h * 0.5 + 4.0 * s,
            11.5 * s
        );
    }
    for (lane, kind) in kinds.iter().enumerate() {
        let cy = l.lanes_top + (lane as f64 + 0.5) * l.lane_h;
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{}" text-anchor="end">{}</text>"#,
            l.plot_left - 8.0 * s,
            cy + 4.0 * s,
            11.5 * s,
            kind.colour(),
            kind.label()
        );
        let _ = writeln!(
            o,
            r#"<line x1="{:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="{GRID}" stroke-width="{:.2}"/>"#,
            l.plot_left, l.plot_right, s
        );
        let r = 5.5 * s;
        let class = format!(
            "marker marker-{}",
            kind.label().replace(' ', "-").to_lowercase()
        );
        if *kind == MarkerKind::Txg {
            for (a, b, txg) in data.txg_spans() {
                let (x0, x1) = (sc.x(a), sc.x(b));
                let _ = writeln!(
                    o,
                    r#"<rect class="{class} txg-sync" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.45"><title>txg {txg}</title></rect>"#,
                    cy - 4.0 * s,
                    (x1 - x0).max(1.5 * s),
                    8.0 * s,
                    kind.colour()
                );
            }
        }
        if *kind == MarkerKind::Flush {
            for (a, b) in data.flush_spans() {
                let (x0, x1) = (sc.x(a), sc.x(b));
                let _ = writeln!(
                    o,
                    r#"<rect class="{class}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.35"/>"#,
                    cy - 4.0 * s,
                    (x1 - x0).max(1.5 * s),
                    8.0 * s,
                    kind.colour()
                );
            }
        }
        let committed: Vec<u64> = data.txg_spans().iter().map(|(_, _, txg)| *txg).collect();
        let mut last_x = f64::NEG_INFINITY;
        for e in data
            .events
            .iter()
            .filter(|e| MarkerKind::of(&e.kind) == *kind)
        {
            // A sync start is drawn by its window once the txg commits; only a sync still
            // running at the end gets a tick of its own.
            if let EventKind::TxgSyncStarted { txg } = e.kind
                && committed.contains(&txg)
            {
                continue;
            }
            let x = sc.x(e.t_ns as f64 / 1e9);
            if x - last_x < 1.2 * r && *kind != MarkerKind::Txg {
                continue;
            }
            last_x = x;
            glyph(o, *kind, x, cy, r, &class);
        }
    }
    o.push_str("</g>\n");
}

/// What a legend entry shows as its swatch.
#[derive(Clone, Copy)]
enum Swatch {
    Fill,
    Device,
    Network,
    Average,
    DropSpan,
    Marker(MarkerKind),
}

#[expect(
    clippy::too_many_lines,
    reason = "the legend's entries in their one order, laid out left to right on one cursor"
)]
fn legend(o: &mut String, data: &ChartData, kinds: &[MarkerKind], l: &Layout) {
    let s = l.s;
    let y = l.legend_base;
    let mut device_label = data.device_source.legend().to_string();
    if device_clipped(data) {
        device_label.push_str(", clipped at the top");
    }
    let mut items: Vec<(Swatch, &str)> = vec![(Swatch::Fill, data.speed_label())];
    if data.device_source != DeviceSource::None {
        items.push((Swatch::Device, &device_label));
    }
    let net_label = data.net_label();
    if data.has_net() {
        items.push((Swatch::Network, &net_label));
    }
    items.push((Swatch::Average, "average"));
    if data.stats.drops > 0 || data.drops().next().is_some() {
        items.push((
            Swatch::DropSpan,
            if data.stats.stalled_not_lost() {
                "speed drop: writer stalled (numbered)"
            } else {
                "speed drop (numbered)"
            },
        ));
    }
    for kind in kinds {
        let label = match kind {
            MarkerKind::Txg => "txg sync window",
            other => other.label(),
        };
        items.push((Swatch::Marker(*kind), label));
    }
    // Shrink the text and gaps (not the swatches) when the row would overflow.
    let size = 13.0 * s;
    let fixed = items.len() as f64 * 24.0 * s;
    let flexible: f64 = items.iter().map(|(_, t)| text_w(t, size) + 22.0 * s).sum();
    let avail = l.plot_right - l.plot_left;
    let k = ((avail - fixed) / flexible).clamp(0.55, 1.0);
    let mut x = l.plot_left;
    o.push_str("<g id=\"legend\">\n");
    for (swatch, text) in items {
        match swatch {
            Swatch::Fill => {
                let _ = writeln!(
                    o,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{FILL}" stroke="{FILL_LINE}" stroke-width="{:.2}"/>"#,
                    y - 11.0 * s,
                    18.0 * s,
                    12.0 * s,
                    s
                );
            }
            Swatch::Device => {
                let _ = writeln!(
                    o,
                    r#"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{DEVICE}" stroke-width="{:.1}"/>"#,
                    y - 5.0 * s,
                    x + 18.0 * s,
                    y - 5.0 * s,
                    2.5 * s
                );
            }
            Swatch::Network => {
                let _ = writeln!(
                    o,
                    r#"<line id="net-legend" x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{NETWORK}" stroke-width="{:.1}"/>"#,
                    y - 5.0 * s,
                    x + 18.0 * s,
                    y - 5.0 * s,
                    2.5 * s
                );
            }
            Swatch::Average => {
                let _ = writeln!(
                    o,
                    r#"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{AVERAGE}" stroke-width="{:.1}" stroke-dasharray="{:.1} {:.1}"/>"#,
                    y - 5.0 * s,
                    x + 18.0 * s,
                    y - 5.0 * s,
                    2.0 * s,
                    5.0 * s,
                    3.0 * s
                );
            }
            Swatch::DropSpan => {
                let _ = writeln!(
                    o,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{DROP_SHADE}" stroke="{}" stroke-width="{:.2}"/>"#,
                    y - 11.0 * s,
                    18.0 * s,
                    12.0 * s,
                    MarkerKind::Drop.colour(),
                    0.8 * s
                );
            }
            Swatch::Marker(kind) => {
                glyph(o, kind, x + 9.0 * s, y - 5.0 * s, 5.5 * s, "legend-glyph");
            }
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{y:.1}" font-size="{:.1}" fill="{INK}">{}</text>"#,
            x + 24.0 * s,
            size * k,
            esc(text)
        );
        x += 24.0 * s + (text_w(text, size) + 22.0 * s) * k;
    }
    o.push_str("</g>\n");
}

fn stats_panel(o: &mut String, data: &ChartData, l: &Layout) {
    let s = l.s;
    let (x0, y0) = (l.pad, l.stats_top);
    let width = l.w - 2.0 * l.pad;
    let _ = writeln!(
        o,
        r#"<rect id="stats" x="{x0:.1}" y="{y0:.1}" width="{width:.1}" height="{:.1}" rx="{:.1}" fill="{PANEL}" stroke="{GRID}" stroke-width="{:.2}"/>"#,
        l.stats_h,
        8.0 * s,
        s
    );
    let g = StatsGrid {
        s,
        x0,
        col_w: width / 4.0,
        head: 14.0 * s,
        row: 13.5 * s,
        row_gap: 24.0 * s,
        head_y: y0 + 28.0 * s,
    };
    speed_stats(o, &g, data);
    run_stats(o, &g, data);
    lost_stats(o, &g, &data.stats);
    match &data.pipeline {
        Some(p) if data.drops().next().is_none() => stages_column(o, &g, p),
        _ => largest_drops(o, &g, data),
    }
}

/// The stats panel's four columns: a heading, then rows of a label and its figure.
struct StatsGrid {
    s: f64,
    x0: f64,
    col_w: f64,
    /// Font sizes of a heading and of a row.
    head: f64,
    row: f64,
    row_gap: f64,
    head_y: f64,
}

impl StatsGrid {
    /// The left edge of column `col`'s text.
    fn col_x(&self, col: usize) -> f64 {
        self.x0 + col as f64 * self.col_w + 18.0 * self.s
    }

    /// The baseline of row `i` under the heading.
    fn row_y(&self, i: usize) -> f64 {
        self.head_y + (i as f64 + 1.0) * self.row_gap
    }

    fn heading(&self, o: &mut String, col: usize, text: &str) {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" font-weight="bold" fill="{INK}">{}</text>"#,
            self.col_x(col),
            self.head_y,
            self.head,
            esc(text)
        );
    }

    /// Row `i` of column `col`: the label `k` on the left, the figure `v` right-aligned.
    fn pair(&self, o: &mut String, col: usize, i: usize, k: &str, v: &str) {
        let (y, cx, row) = (self.row_y(i), self.col_x(col), self.row);
        let _ = writeln!(
            o,
            r#"<text x="{cx:.1}" y="{y:.1}" font-size="{row:.1}" fill="{MUTED}">{}</text>"#,
            esc(k)
        );
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{y:.1}" font-size="{row:.1}" font-weight="bold" fill="{INK}" text-anchor="end">{}</text>"#,
            cx + self.col_w - 48.0 * self.s,
            esc(v)
        );
    }
}

/// Speed: average, min / peak, durable (or a watch's network average), drops.
fn speed_stats(o: &mut String, g: &StatsGrid, data: &ChartData) {
    let st = &data.stats;
    g.heading(o, 0, "Speed");
    g.pair(
        o,
        0,
        0,
        data.speed_of().average_label(),
        &fmt_rate(st.avg_bps),
    );
    g.pair(
        o,
        0,
        1,
        "min / peak (1-s means)",
        &format!("{} / {}", fmt_rate(st.min_bps), fmt_rate(st.peak_bps)),
    );
    match &st.net {
        // A watch has no flush of its own: its row says what the interface received.
        Some(n) => g.pair(o, 0, 2, "network rx avg", &fmt_rate(n.avg_bps)),
        None => g.pair(
            o,
            0,
            2,
            "durable (after flush)",
            &st.durable_bps.map_or("n/a".to_string(), fmt_rate),
        ),
    }
    g.pair(o, 0, 3, "drops", &format!("{}", st.drops));
}

/// Run: what was copied (or written under a watch), when the last byte was written, when it
/// was on disk.
fn run_stats(o: &mut String, g: &StatsGrid, data: &ChartData) {
    let st = &data.stats;
    g.heading(o, 1, "Run");
    let files = if st.failed > 0 {
        format!("{} ({} failed)", fmt_count(st.files), fmt_count(st.failed))
    } else {
        fmt_count(st.files)
    };
    match &data.watch {
        Some(intake) => {
            g.pair(o, 1, 0, "written (watched)", &fmt_bytes(st.bytes));
            g.pair(o, 1, 1, "intake from", intake);
        }
        None => {
            g.pair(o, 1, 0, "copied", &fmt_bytes(st.bytes));
            g.pair(o, 1, 1, "files", &files);
        }
    }
    g.pair(o, 1, 2, "last byte written", &fmt_secs(st.elapsed_s));
    if let Some(n) = &st.net {
        g.pair(
            o,
            1,
            3,
            "network rx min / peak",
            &format!("{} / {}", fmt_rate(n.min_bps), fmt_rate(n.peak_bps)),
        );
    } else {
        g.pair(
            o,
            1,
            3,
            "on disk (flushed)",
            &st.durable_s.map_or("n/a".to_string(), |d| {
                format!(
                    "{} (+{})",
                    fmt_secs(d),
                    fmt_secs((d - st.elapsed_s).max(0.0))
                )
            }),
        );
    }
}

fn lost_stats(o: &mut String, g: &StatsGrid, st: &ChartStats) {
    let (s, x0, col_w, row) = (g.s, g.x0, g.col_w, g.row);
    // Lost time per cause in red; when the drops cost nothing (the disks kept writing the
    // backlog at their own rate), the stall per cause in grey under "stalled, not lost", so
    // the pink spans are never left beside a bare "0.00 s".
    let lost: Vec<(&str, f64)> = st.lost_listed().collect();
    let total = st.lost_total();
    let (rows, colour, first_row): (Vec<(&str, f64)>, &str, usize) = if !lost.is_empty() {
        (lost, MarkerKind::Drop.colour(), 0)
    } else {
        (st.stalled_listed().collect(), MUTED, 1)
    };
    let heading_text = if total >= 0.005 {
        format!("Time lost to drops: {}", fmt_secs(total))
    } else {
        "Time lost to drops: none".to_string()
    };
    g.heading(o, 2, &heading_text);
    if st.drops == 0 {
        g.pair(o, 2, 0, "no drops", "");
    } else if first_row == 1 {
        g.pair(o, 2, 0, "stalled, not lost (disks kept writing):", "");
    }
    let bar_total: f64 = rows.iter().map(|(_, v)| v).sum();
    let bar_x = x0 + 2.0 * col_w + 18.0 * s;
    let bar_max = col_w - 150.0 * s;
    for (i, (cause, secs)) in rows.iter().take(4 - first_row).enumerate() {
        let y = g.row_y(i + first_row);
        let bw = if bar_total > 0.0 {
            secs / bar_total * bar_max * 0.55
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            r#"<text x="{bar_x:.1}" y="{y:.1}" font-size="{row:.1}" fill="{MUTED}">{}</text>"#,
            esc(cause)
        );
        let bx = bar_x + 150.0 * s;
        let _ = writeln!(
            o,
            r#"<rect x="{bx:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="{:.1}" fill="{colour}"/>"#,
            y - 10.0 * s,
            bw.max(2.0 * s),
            11.0 * s,
            2.0 * s,
        );
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{y:.1}" font-size="{row:.1}" font-weight="bold" fill="{INK}">{}</text>"#,
            bx + bw.max(2.0 * s) + 8.0 * s,
            fmt_secs(*secs)
        );
    }
}

/// A pipeline watch without drops: its stages in the drops' column, upstream first (four at
/// most), each with its main state over the run, the limiting one marked.
fn stages_column(o: &mut String, g: &StatsGrid, p: &crate::model::pipeline::PipelineView) {
    g.heading(o, 3, "Stages");
    let limiting = p.limiting_stage().map(|s| s.pid);
    let max_chars = ((g.col_w - 24.0 * g.s) / (g.row * 0.6)) as usize;
    for (i, s) in p.stages.iter().take(4).enumerate() {
        let mark = if limiting == Some(s.pid) { "*" } else { " " };
        let state = s.shares.main().map_or_else(
            || "state n/a".to_string(),
            |w| {
                format!(
                    "{} {}",
                    crate::model::pipeline::state_words(w),
                    fmt_pct(s.shares.get(w) * 100.0)
                )
            },
        );
        let text = format!(
            "{mark}{} {}  {state}",
            i + 1,
            crate::present::quote::shell_escape(&s.comm)
        );
        let text = cut_end(text, max_chars);
        let (cx, y, row) = (g.col_x(3), g.row_y(i), g.row);
        let _ = writeln!(
            o,
            r#"<text x="{cx:.1}" y="{y:.1}" font-size="{row:.1}" fill="{INK}">{}</text>"#,
            esc(&text)
        );
    }
}

/// `text` cut to `max` characters, the last one an ellipsis when cut.
fn cut_end(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// Largest drops: the four that cost the most, each with its length, rates and cause.
fn largest_drops(o: &mut String, g: &StatsGrid, data: &ChartData) {
    let (s, col_w, row) = (g.s, g.col_w, g.row);
    g.heading(o, 3, "Largest drops");
    let mut drops: Vec<(usize, &crate::model::Event, &crate::model::DropInfo)> = data
        .drops()
        .enumerate()
        .map(|(i, (e, d))| (i + 1, e, d))
        .collect();
    // By time lost, then (drops that cost nothing: stalls) by how long they held the writer.
    let held =
        |e: &crate::model::Event, d: &crate::model::DropInfo| d.end_ns.saturating_sub(e.t_ns);
    drops.sort_by(|a, b| {
        lost_secs(b.2)
            .total_cmp(&lost_secs(a.2))
            .then(held(b.1, b.2).cmp(&held(a.1, a.2)))
    });
    if drops.is_empty() {
        g.pair(o, 3, 0, "none", "");
    }
    for (i, (n, e, d)) in drops.iter().take(4).enumerate() {
        let y = g.row_y(i);
        let cx = g.col_x(3);
        let cause = match d.causes.first() {
            Some(crate::model::Cause::TxgSync { syncs: Some(r), .. }) => {
                format!("txgs {}-{}", r.first, r.last)
            }
            Some(crate::model::Cause::TxgSync { txg, .. }) => format!("txg {txg}"),
            Some(c) => cause_label(c).to_string(),
            None => drop_label(d).to_string(),
        };
        let unit = rate_unit(d.reference_bps.max(1e6));
        // The number already places the drop on the chart: lead with what it cost.
        let text = format!(
            "#{n}  {}  {}→{} {}  {}",
            fmt_secs(d.end_ns.saturating_sub(e.t_ns) as f64 / 1e9),
            fmt_tick((d.reference_bps / unit.divisor).round()),
            fmt_tick((d.min_bps / unit.divisor).round()),
            unit.label,
            cause
        );
        let max_chars = ((col_w - 24.0 * s) / (row * 0.6)) as usize;
        let text = cut_end(text, max_chars);
        let _ = writeln!(
            o,
            r#"<text x="{cx:.1}" y="{y:.1}" font-size="{row:.1}" fill="{INK}">{}</text>"#,
            esc(&text)
        );
    }
}

/// Colour of each budget slice in the bar.
fn slice_colour(slice: Slice) -> &'static str {
    match slice {
        Slice::Writing => "#16a34a",
        Slice::DirtyThrottle => "#dc2626",
        Slice::DiskWait => "#ea580c",
        Slice::TxgWait => "#7c3aed",
        Slice::SyncWrites => "#db2777",
        Slice::Journal => "#b45309",
        Slice::SourceRead => "#0891b2",
        Slice::PipeReader => "#2563eb",
        Slice::CpuWait => "#ca8a04",
        Slice::RateLimit => "#0d9488",
        Slice::Paused => "#94a3b8",
        Slice::Flushing => "#64748b",
        Slice::Other => "#cbd5e1",
        Slice::Unknown => "#e2e8f0",
    }
}

/// Font size of the verdict, in 1600-px units.
const VERDICT_SIZE: f64 = 14.0;
const VERDICT_LINE: f64 = 19.0;
const BUDGET_BAR: f64 = 22.0;

/// The verdict's lines at a picture width (1600-px units scale with the picture).
fn verdict_lines(text: &str, width_units: f64) -> Vec<String> {
    let words: Vec<String> = std::iter::once("Verdict:".to_string())
        .chain(crate::model::verdict::words(text))
        .collect();
    let max = (width_units / (VERDICT_SIZE * 0.55)).max(20.0) as usize;
    let mut lines: Vec<String> = Vec::new();
    for w in words {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + w.chars().count() <= max => {
                l.push(' ');
                l.push_str(&w);
            }
            _ => lines.push(w),
        }
    }
    lines
}

/// Width for the verdict's text in 1600-px units (the picture's width less the padding).
fn text_units(w: f64, h: f64) -> f64 {
    w / (w / 1600.0).min(h / 900.0).max(0.2) - 2.0 * 28.0 - 36.0
}

/// Height of the verdict band in 1600-px units: the budget bar (when the thread states cover
/// the copy) and the verdict's lines; 0 when there is neither.
fn verdict_units(data: &ChartData, w: f64, h: f64) -> f64 {
    let bar = data
        .budget
        .as_ref()
        .filter(|b| b.is_measured())
        .map_or(0.0, |_| BUDGET_BAR + 12.0);
    let lines = data
        .verdict
        .as_ref()
        .map_or(0, |v| verdict_lines(&v.text, text_units(w, h)).len());
    if bar == 0.0 && lines == 0 {
        return 0.0;
    }
    bar + lines as f64 * VERDICT_LINE + 14.0
}

/// The writer's time budget as one stacked bar (each slice labelled where it fits) and the
/// verdict under it, the model's words unchanged.
#[expect(
    clippy::too_many_lines,
    reason = "the budget bar and the verdict under it laid out on one cursor"
)]
fn verdict_band(o: &mut String, data: &ChartData, l: &Layout) {
    if l.verdict_h <= 0.0 {
        return;
    }
    let s = l.s;
    let x0 = l.pad + 18.0 * s;
    let width = l.w - 2.0 * l.pad - 36.0 * s;
    let mut y = l.verdict_top + 2.0 * s;
    let _ = writeln!(
        o,
        r#"<g id="verdict" data-limit="{}">"#,
        data.verdict
            .as_ref()
            .map_or("none".to_string(), |v| format!("{:?}", v.limit)
                .to_lowercase())
    );
    if let Some(b) = data.budget.as_ref().filter(|b| b.is_measured()) {
        let label = "writer's time";
        let _ = writeln!(
            o,
            r#"<text x="{x0:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}">{label}</text>"#,
            y + 15.5 * s,
            12.5 * s
        );
        let bx = x0 + 110.0 * s;
        let bw = width - 110.0 * s;
        let mut x = bx;
        let mut unlabelled: Vec<String> = Vec::new();
        for (slice, share) in b.shares() {
            let sw = share * bw;
            let _ = writeln!(
                o,
                r#"<rect class="budget-slice" data-slice="{}" data-share="{share:.4}" x="{x:.1}" y="{y:.1}" width="{sw:.1}" height="{:.1}" fill="{}"><title>{} {}</title></rect>"#,
                slice.label(),
                BUDGET_BAR * s,
                slice_colour(slice),
                b.label(slice),
                fmt_pct(share * 100.0)
            );
            let text = format!("{} {}", b.label(slice), fmt_pct(share * 100.0));
            let ink = if matches!(slice, Slice::Other | Slice::Unknown) {
                INK
            } else {
                "white"
            };
            // The whole label where it fits, else the share alone; a slice too narrow even
            // for that is named under the bar's end.
            let short = fmt_pct(share * 100.0);
            let fits = |t: &str| text_w(t, 12.0 * s) + 8.0 * s <= sw;
            let shown = if fits(&text) {
                Some(&text)
            } else if fits(&short) {
                Some(&short)
            } else {
                if share >= 0.005 {
                    unlabelled.push(text.clone());
                }
                None
            };
            if let Some(shown) = shown {
                let _ = writeln!(
                    o,
                    r#"<text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{ink}" text-anchor="middle">{}</text>"#,
                    x + sw / 2.0,
                    y + 15.5 * s,
                    12.0 * s,
                    esc(shown)
                );
            }
            x += sw;
        }
        if !unlabelled.is_empty() {
            let _ = writeln!(
                o,
                r#"<text class="budget-rest" x="{:.1}" y="{:.1}" font-size="{:.1}" fill="{MUTED}" text-anchor="end">{}</text>"#,
                bx + bw,
                y + (BUDGET_BAR + 10.0) * s,
                9.5 * s,
                esc(&format!("also {}", unlabelled.join(" · ")))
            );
        }
        y += (BUDGET_BAR + 12.0) * s;
    }
    if let Some(v) = &data.verdict {
        for (i, line) in verdict_lines(&v.text, text_units(l.w, l.h))
            .iter()
            .enumerate()
        {
            let body = match line.strip_prefix("Verdict:") {
                Some(rest) if i == 0 => {
                    format!(r#"<tspan font-weight="bold">Verdict:</tspan>{}"#, esc(rest))
                }
                _ => esc(line),
            };
            let _ = writeln!(
                o,
                r#"<text class="verdict-line" x="{x0:.1}" y="{:.1}" font-size="{:.1}" fill="{INK}">{body}</text>"#,
                y + (i as f64 + 1.0) * VERDICT_LINE * s - 4.0 * s,
                VERDICT_SIZE * s,
            );
        }
    }
    o.push_str("</g>\n");
}
