//! The TUI's speed chart ([`SpeedChart`]): a filled area of copy speed with sub-cell
//! resolution, overlay lines (the device's write rate, a watch's network receive rate), the
//! average and `--bwlimit` lines, drop highlighting, a marker row and axes, on a time or a
//! percent axis; and the compact layout's [`SpeedBar`], the chart inside the progress bar.
//! Drawn live and in replay; the after-exit summary's chart is the text export's
//! (`report::export::render_text`).
//!
//! Long histories compress into the width (`present::columns`): every column keeps the min and
//! max of the points it covers, so a 300 ms drop inside a 3-hour copy still shows as a notch.
//! The y scale is held between frames with hysteresis ([`YScale::next`]).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::Widget;

use crate::model::series::Point;
use crate::present::axis::{Steps, fmt_axis_pct, fmt_axis_time, fmt_tick_at, nice_step};
use crate::present::columns::{Bucket, Reading, bucket, column_of};
use crate::present::units::Units;
use crate::ui::theme::Theme;

/// Which quantity the x axis shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XAxis {
    /// Time since the start (the default: a stall stays visible as a gap in progress).
    #[default]
    Time,
    /// Percent of bytes complete, as Total Commander and Explorer draw it.
    Percent,
}

/// A glyph under the chart at the column where something happened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Marker {
    pub t_ns: u64,
    /// Position on the percent axis, if known.
    pub progress: Option<f64>,
    pub glyph: char,
    pub color: Color,
    /// Higher wins when two markers share a column.
    pub priority: u8,
}

/// A highlighted time span (a detected drop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Most overlay lines a chart draws.
pub const MAX_OVERLAYS: usize = 4;

/// A line drawn over the filled area, one value (bytes/s) per point: the destination's write
/// rate today; any other per-point series of the model tomorrow.
#[derive(Debug, Clone, Copy)]
pub struct Overlay {
    /// Glyph for the Unicode and the ASCII glyph sets.
    pub glyph: (&'static str, &'static str),
    pub color: Color,
    pub value: fn(&Point) -> Option<f64>,
}

impl Overlay {
    /// What actually reaches the destination's disks.
    pub const DEVICE: Overlay = Overlay {
        glyph: ("•", "*"),
        color: Color::Cyan,
        value: |p| p.device_bps,
    };
    /// `watch --net`: what the watched interface received.
    pub const NETWORK: Overlay = Overlay {
        glyph: ("∘", "o"),
        color: Color::Magenta,
        value: |p| p.net_bps,
    };
}

/// The speed chart. `window` is the time range shown on the time axis.
#[derive(Debug, Clone)]
pub struct SpeedChart<'a> {
    pub points: &'a [Point],
    pub window: (u64, u64),
    pub axis: XAxis,
    pub avg_bps: Option<f64>,
    /// `--bwlimit`, or the pace `--pace auto` holds now: drawn as a dashed line across the
    /// whole plot (the limit holds ahead too).
    pub limit_bps: Option<f64>,
    /// Lines over the area (at most [`MAX_OVERLAYS`]; the first one draws on top).
    pub overlays: &'a [Overlay],
    pub markers: &'a [Marker],
    pub spans: &'a [Span],
    pub units: Units,
    pub theme: Theme,
    /// The y scale the previous frame showed, kept while it still fits (see [`YScale::next`]).
    pub y_prev: Option<YScale>,
}

/// The y axis of a chart: its top and tick step in display units (MB/s or MiB/s), and what it
/// was made for (plot rows, the unit), since a scale is only kept for the same.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YScale {
    pub top: f64,
    pub step: f64,
    rows: u16,
    unit: f64,
}

/// Room a scale that has to grow leaves above the new peak, so a copy that speeds up step by
/// step does not rescale at each new peak.
const GROW_ROOM: f64 = 1.25;

/// A scale shrinks only once the data in view fills at most this share of it.
const SHRINK_BELOW: f64 = 0.4;

impl YScale {
    /// The scale that holds `peak` units with `room` (1.05: 5 %) above it: a round step
    /// (1, 2, 2.5, 5 × 10^k) for about `rows / 2` ticks (at most 5), the top a multiple of it.
    pub fn fit(peak: f64, room: f64, rows: u16, unit: f64) -> YScale {
        let want = peak.max(1.0) * room;
        let step = nice_step(want, (rows as usize / 2).clamp(1, 5), Steps::Round);
        YScale {
            top: (want / step).ceil() * step,
            step,
            rows,
            unit,
        }
    }

    /// The scale after `prev` for a chart whose data now peaks at `peak` units: with
    /// hysteresis, so a speed that wobbles around a tick never makes the axis jump back and
    /// forth. It grows at once when the data no longer fits (with [`GROW_ROOM`]), shrinks to
    /// the fitting scale only once the data fills at most [`SHRINK_BELOW`] of it, and
    /// otherwise stays as it was; a new plot height or unit starts afresh.
    pub fn next(prev: Option<YScale>, peak: f64, rows: u16, unit: f64) -> YScale {
        let fit = YScale::fit(peak, 1.05, rows, unit);
        let Some(p) = prev.filter(|p| p.rows == rows && p.unit == unit) else {
            return fit;
        };
        if fit.top > p.top * (1.0 + 1e-9) {
            YScale::fit(peak, GROW_ROOM, rows, unit)
        } else if peak.max(1.0) * 1.05 <= p.top * SHRINK_BELOW {
            fit
        } else {
            p
        }
    }

    /// The tick values, bottom to top: one arithmetic sequence from 0 to the top.
    pub fn ticks(&self) -> Vec<f64> {
        let n = (self.top / self.step).round() as usize;
        (0..=n).map(|i| i as f64 * self.step).collect()
    }
}

/// One screen column's aggregate of the points it covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Mean of each overlay's values in the column, in [`SpeedChart::overlays`] order.
    pub overlay: [Option<f64>; MAX_OVERLAYS],
    pub in_drop: bool,
    /// Number of points that fell into this column (0 = carried from the left).
    pub count: u32,
}

impl SpeedChart<'_> {
    /// The y scale this chart draws in `area` (what [`SpeedChart::y_prev`] should be next).
    pub fn y_scale(&self, area: Rect) -> YScale {
        let (plot_h, _) = Self::rows(area);
        let cols = self.columns(area.width.saturating_sub(5) as usize);
        self.y_scale_of(&cols, plot_h)
    }

    fn y_scale_of(&self, cols: &[Option<Column>], plot_h: u16) -> YScale {
        let peak = robust_peak(cols)
            .max(self.avg_bps.unwrap_or(0.0))
            .max(self.limit_bps.unwrap_or(0.0));
        let unit = self.units.scale();
        YScale::next(self.y_prev, peak / unit, plot_h, unit)
    }

    /// Plot rows and whether there is a unit row above them, for a chart in `area`.
    fn rows(area: Rect) -> (u16, bool) {
        let has_unit_row = area.height >= 6;
        let has_labels = area.height >= 4;
        let reserved = 1 + u16::from(has_unit_row) + u16::from(has_labels);
        (area.height.saturating_sub(reserved).max(1), has_unit_row)
    }

    /// Aggregates the points into `ncols` columns for the current axis.
    pub fn columns(&self, ncols: usize) -> Vec<Option<Column>> {
        if ncols == 0 {
            return Vec::new();
        }
        let overlays = &self.overlays[..self.overlays.len().min(MAX_OVERLAYS)];
        let (w0, w1) = self.window;
        let span = w1.saturating_sub(w0).max(1) as f64;
        let place = |p: &Point| -> Option<f64> {
            match self.axis {
                XAxis::Time => {
                    let mid = p.t_ns + p.dt_ns / 2; // t_ns is the start of the interval
                    (w0..=w1).contains(&mid).then(|| (mid - w0) as f64 / span)
                }
                XAxis::Percent => p.progress,
            }
        };
        let weight = |p: &Point| (p.dt_ns.max(1)) as f64;
        let copy = bucket(self.points, ncols, place, |p| {
            Some(Reading {
                value: p.copy_bps,
                min: p.copy_min_bps,
                max: p.copy_max_bps,
                weight: weight(p),
            })
        });
        let over: Vec<Vec<Option<Bucket>>> = overlays
            .iter()
            .map(|ov| {
                bucket(self.points, ncols, place, |p| {
                    (ov.value)(p).map(|v| Reading {
                        weight: weight(p),
                        ..Reading::of(v)
                    })
                })
            })
            .collect();
        let mut cols: Vec<Option<Column>> = copy
            .iter()
            .enumerate()
            .map(|(c, b)| {
                b.map(|b| {
                    let mut overlay = [None; MAX_OVERLAYS];
                    for (k, o) in over.iter().enumerate() {
                        overlay[k] = o[c].map(|o| o.mean);
                    }
                    Column {
                        mean: b.mean,
                        min: b.min,
                        max: b.max,
                        overlay,
                        in_drop: false,
                        count: b.count,
                    }
                })
            })
            .collect();
        carry_forward(&mut cols);
        if self.axis == XAxis::Time {
            self.mark_drops(&mut cols);
        }
        cols
    }

    /// Flags the columns the drop spans cover (on the time axis).
    fn mark_drops(&self, cols: &mut [Option<Column>]) {
        let ncols = cols.len();
        let (w0, w1) = self.window;
        let span = w1.saturating_sub(w0).max(1) as f64;
        for span_ in self.spans {
            let a = span_.start_ns.max(w0);
            let b = span_.end_ns.min(w1);
            if b < a {
                continue;
            }
            let ca = column_of((a - w0) as f64 / span, ncols);
            let cb = column_of((b - w0) as f64 / span, ncols);
            for c in cols.iter_mut().take(cb + 1).skip(ca).flatten() {
                c.in_drop = true;
            }
        }
    }

    fn marker_col(&self, m: &Marker, ncols: usize) -> Option<usize> {
        let x = match self.axis {
            XAxis::Time => {
                let (w0, w1) = self.window;
                if m.t_ns < w0 || m.t_ns > w1 {
                    return None;
                }
                (m.t_ns - w0) as f64 / (w1.saturating_sub(w0).max(1)) as f64
            }
            XAxis::Percent => m.progress?,
        };
        Some(column_of(x, ncols))
    }
}

/// Fewer points than columns: a point covers the columns up to the next one (a step), up to
/// the last point.
fn carry_forward(cols: &mut [Option<Column>]) {
    let Some(last) = cols.iter().rposition(Option::is_some) else {
        return;
    };
    let mut prev: Option<Column> = None;
    for col in cols.iter_mut().take(last + 1) {
        match col {
            Some(c) => prev = Some(*c),
            None => {
                if let Some(p) = prev {
                    *col = Some(Column { count: 0, ..p });
                }
            }
        }
    }
}

/// The value the y axis must hold: the highest column, unless a few columns (≤ 3 %, e.g. the
/// first burst into an empty page cache) tower over the rest — then those are clipped (drawn
/// full height with a `▲`) so the other 97 % of the chart keeps its resolution.
///
/// The copy speed sets the scale; the overlays only when nothing was copied yet (a disk shared
/// with other writers can run far above the copy, and its dots then sit on the top row).
pub fn robust_peak(cols: &[Option<Column>]) -> f64 {
    let copy = robust_max(cols.iter().flatten().map(|c| c.mean).collect());
    if copy > 0.0 {
        copy
    } else {
        robust_max(
            cols.iter()
                .flatten()
                .flat_map(|c| c.overlay.iter().flatten().copied())
                .collect(),
        )
    }
}

fn robust_max(mut vals: Vec<f64>) -> f64 {
    vals.sort_by(f64::total_cmp);
    let Some(&max) = vals.last() else { return 0.0 };
    if vals.len() < 20 {
        return max;
    }
    let p97 = vals[vals.len() * 97 / 100];
    if max > p97 * 1.5 { p97 * 1.2 } else { max }
}

/// Where the plot sits in the chart's area, and the rate its top row stands for.
#[derive(Debug, Clone, Copy)]
struct Plot {
    x: u16,
    w: u16,
    top: u16,
    h: u16,
    /// The row under the plot: the x axis with the event markers.
    marker_y: u16,
    /// Bytes/s at the top of the plot.
    y_max: f64,
}

impl Plot {
    /// The row whose bottom edge is at or below `v` bytes/s.
    fn row_of(&self, v: f64) -> u16 {
        let frac = (v / self.y_max).clamp(0.0, 1.0);
        let r = (frac * self.h as f64).round() as u16;
        self.top + self.h - r.min(self.h)
    }

    /// The plot row a line at `v` bytes/s is drawn on.
    fn line_row(&self, v: f64) -> u16 {
        self.row_of(v).clamp(self.top, self.marker_y - 1)
    }

    fn xs(&self) -> std::ops::Range<u16> {
        self.x..self.x + self.w
    }
}

impl Widget for SpeedChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < 6 || area.height < 2 {
            return;
        }
        let Some((plot, ys, cols)) = self.plot(area) else {
            return;
        };
        if plot.top > area.y {
            buf.set_stringn(
                area.x,
                area.y,
                self.units.rate_label(),
                area.width as usize,
                self.theme.dim(),
            );
        }
        self.draw_y_axis(buf, &plot, &ys);
        self.draw_area(buf, &plot, &cols);
        self.draw_avg(buf, &plot, &cols);
        self.draw_limit(buf, &plot);
        self.draw_overlays(buf, &plot, &cols);
        self.draw_markers(buf, &plot);
        if area.height >= 4 {
            self.draw_x_labels(buf, &plot);
        }
    }
}

impl SpeedChart<'_> {
    /// The plot's place and scale in `area` (rows: [unit row] plot rows, marker row, [x
    /// labels]), with the columns it draws; `None` when no column fits beside the labels. The
    /// y scale comes from the data in view, held from the last frame (see `YScale::next`).
    fn plot(&self, area: Rect) -> Option<(Plot, YScale, Vec<Option<Column>>)> {
        let (plot_h, has_unit_row) = Self::rows(area);
        let top = area.y + u16::from(has_unit_row);
        let label_w_guess = 5u16;
        let guess_cols = area.width.saturating_sub(label_w_guess) as usize;
        let cols = self.columns(guess_cols);
        let ys = self.y_scale_of(&cols, plot_h);
        let label_w = (fmt_tick_at(ys.top, ys.step).len() as u16 + 1).max(label_w_guess);
        let plot_w = area.width.saturating_sub(label_w);
        if plot_w == 0 {
            return None;
        }
        let cols = if plot_w as usize == guess_cols {
            cols
        } else {
            self.columns(plot_w as usize)
        };
        let plot = Plot {
            x: area.x + label_w,
            w: plot_w,
            top,
            h: plot_h,
            marker_y: top + plot_h,
            y_max: ys.top * self.units.scale(),
        };
        Some((plot, ys, cols))
    }

    /// The y axis: its line, and a labelled tick at each of the scale's ticks.
    fn draw_y_axis(&self, buf: &mut Buffer, p: &Plot, ys: &YScale) {
        let (t, g) = (self.theme, self.theme.glyphs);
        let scale = self.units.scale();
        for v in ys.ticks() {
            let y = if v == 0.0 {
                p.marker_y
            } else {
                p.row_of(v * scale)
            };
            if y >= p.top && y <= p.marker_y {
                let s = fmt_tick_at(v, ys.step);
                let x = p.x.saturating_sub(1 + s.len() as u16);
                buf.set_string(x, y, &s, t.dim());
                let axis_glyph = if v == 0.0 { g.axis_origin } else { g.axis_tick };
                buf[(p.x - 1, y)].set_symbol(axis_glyph).set_style(t.dim());
            }
        }
        for y in p.top..p.marker_y {
            let cell = &mut buf[(p.x - 1, y)];
            if cell.symbol() == " " {
                cell.set_symbol(g.axis_v).set_style(t.dim());
            }
        }
    }

    /// The filled area in eighths of a cell, with the dips inside a column and the drops.
    fn draw_area(&self, buf: &mut Buffer, p: &Plot, cols: &[Option<Column>]) {
        let (t, g) = (self.theme, self.theme.glyphs);
        let eighths_total = p.h as f64 * 8.0;
        for (i, col) in cols.iter().enumerate() {
            let Some(col) = col else { continue };
            let x = p.x + i as u16;
            let h8 = ((col.mean / p.y_max) * eighths_total).round().max(0.0) as u32;
            let h8 = if col.mean > 0.0 { h8.max(1) } else { 0 };
            let min8 = ((col.min.max(0.0) / p.y_max) * eighths_total).round() as u32;
            let dip = !col.in_drop && col.count > 1 && col.min < col.mean * 0.5;
            let fill_style = if col.in_drop { t.drop_fill() } else { t.fill() };
            for row in 0..p.h {
                let y = p.top + p.h - 1 - row;
                let lo = row as u32 * 8;
                if h8 <= lo {
                    break;
                }
                let level = (h8 - lo).min(8);
                let dip_cell = dip && lo >= min8;
                let sym = if level == 8 {
                    if col.in_drop { g.full_drop } else { g.full }
                } else {
                    g.partial[level as usize]
                };
                let sym = if dip_cell && level == 8 { g.dip } else { sym };
                let style = if dip_cell { t.dip() } else { fill_style };
                buf[(x, y)].set_symbol(sym).set_style(style);
            }
            if h8 > p.h as u32 * 8 {
                // Clipped by the robust scale: say so at the top.
                buf[(x, p.top)].set_symbol(g.clipped).set_style(fill_style);
            }
            if col.in_drop && h8 < p.h as u32 * 8 && buf[(x, p.top)].symbol() == " " {
                // Mark the empty space above a drop so it reads even without colour.
                buf[(x, p.top)]
                    .set_symbol(g.drop_top)
                    .set_style(t.drop_mark());
            }
        }
    }

    /// The average line in the empty cells, only under the history: the right part of a
    /// growing axis is the future.
    fn draw_avg(&self, buf: &mut Buffer, p: &Plot, cols: &[Option<Column>]) {
        let Some(avg) = self.avg_bps.filter(|a| *a > 0.0) else {
            return;
        };
        let (t, g) = (self.theme, self.theme.glyphs);
        let y = p.line_row(avg);
        let last = cols
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |c| c as u16 + 1);
        for x in p.x..p.x + last.min(p.w) {
            if buf[(x, y)].symbol() == " " {
                buf[(x, y)].set_symbol(g.avg).set_style(t.avg());
            }
        }
    }

    /// The --bwlimit line in the cells still empty, across the whole width.
    fn draw_limit(&self, buf: &mut Buffer, p: &Plot) {
        let Some(limit) = self.limit_bps.filter(|l| *l > 0.0) else {
            return;
        };
        let t = self.theme;
        let y = p.line_row(limit);
        let glyph = if t.ascii() { "-" } else { "╌" };
        for x in p.xs() {
            if buf[(x, y)].symbol() == " " {
                buf[(x, y)].set_symbol(glyph).set_style(t.warn());
            }
        }
    }

    /// The overlay lines, the first on top.
    fn draw_overlays(&self, buf: &mut Buffer, p: &Plot, cols: &[Option<Column>]) {
        let (t, g) = (self.theme, self.theme.glyphs);
        for (k, ov) in self.overlays.iter().enumerate().take(MAX_OVERLAYS).rev() {
            let glyph = if t.ascii() { ov.glyph.1 } else { ov.glyph.0 };
            for (i, col) in cols.iter().enumerate() {
                let Some(v) = col.and_then(|c| c.overlay[k]) else {
                    continue;
                };
                // An idle device would draw a dotted line on the axis: leave the baseline clean.
                if v < p.y_max / (p.h as f64 * 4.0) {
                    continue;
                }
                let y = p.line_row(v);
                let x = p.x + i as u16;
                let cell = buf[(x, y)].symbol();
                let empty = cell == " " || cell == g.avg;
                let full = cell == g.full || cell == g.full_drop || cell == g.dip;
                // Never hide the copy speed: inside the area the dot needs colour to stand out
                // (drawn on the fill's colour); a partly filled cell keeps its block.
                if !(empty || (full && t.color)) {
                    continue;
                }
                let mut style = if t.color {
                    Style::new().fg(ov.color)
                } else {
                    Style::new()
                };
                if full {
                    style = style.bg(t.fill_color());
                }
                buf[(x, y)].set_symbol(glyph).set_style(style);
            }
        }
    }

    /// The marker row: the x axis line with the event glyphs, the higher priority winning a
    /// shared column.
    fn draw_markers(&self, buf: &mut Buffer, p: &Plot) {
        let (t, g) = (self.theme, self.theme.glyphs);
        for x in p.xs() {
            buf[(x, p.marker_y)].set_symbol(g.axis_h).set_style(t.dim());
        }
        let mut best: Vec<Option<&Marker>> = vec![None; p.w as usize];
        for m in self.markers {
            if let Some(c) = self.marker_col(m, p.w as usize)
                && best[c].is_none_or(|b| m.priority >= b.priority)
            {
                best[c] = Some(m);
            }
        }
        for (c, m) in best.iter().enumerate() {
            if let Some(m) = m {
                let mut style = Style::new().add_modifier(Modifier::BOLD);
                if t.color {
                    style = style.fg(m.color);
                }
                let mut tmp = [0u8; 4];
                buf[(p.x + c as u16, p.marker_y)]
                    .set_symbol(m.glyph.encode_utf8(&mut tmp))
                    .set_style(style);
            }
        }
    }

    /// The x labels under the marker row, each centred on its tick, none overlapping.
    fn draw_x_labels(&self, buf: &mut Buffer, p: &Plot) {
        let y = p.marker_y + 1;
        let mut next_free = 0usize;
        for (c, s) in self.x_labels(p.w as usize) {
            let start = c.saturating_sub(s.len() / 2);
            if start < next_free || start + s.len() > p.w as usize {
                continue;
            }
            buf.set_string(p.x + start as u16, y, &s, self.theme.dim());
            next_free = start + s.len() + 2;
        }
    }
}

impl SpeedChart<'_> {
    /// Tick labels as (column, text).
    fn x_labels(&self, ncols: usize) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        if ncols < 4 {
            return out;
        }
        match self.axis {
            XAxis::Percent => {
                let n = if ncols >= 60 { 10 } else { 4 };
                for i in 0..=n {
                    let f = i as f64 / n as f64;
                    let c = column_of(f, ncols);
                    out.push((c, fmt_axis_pct(f)));
                }
            }
            XAxis::Time => {
                let (w0, w1) = self.window;
                let span_s = (w1.saturating_sub(w0)) as f64 / 1e9;
                let max_labels = (ncols / 9).max(1);
                let steps = [
                    1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
                    3600.0, 7200.0, 21600.0, 43200.0, 86400.0,
                ];
                let step = steps
                    .iter()
                    .copied()
                    .find(|s| span_s / s <= max_labels as f64)
                    .unwrap_or(86400.0);
                let first = ((w0 as f64 / 1e9) / step).ceil() * step;
                let mut s = first;
                while s <= w1 as f64 / 1e9 + 1e-9 {
                    let f = (s - w0 as f64 / 1e9) / span_s.max(1e-9);
                    let c = column_of(f, ncols);
                    out.push((c, fmt_axis_time(s, step)));
                    s += step;
                }
            }
        }
        out
    }
}

/// The compact chart: the speed graph drawn inside the progress bar itself, like Total
/// Commander's, on one row, with markers on a second row when there is room.
#[derive(Debug, Clone)]
pub struct SpeedBar<'a> {
    pub points: &'a [Point],
    pub progress: f64,
    pub markers: &'a [Marker],
    pub spans: &'a [Span],
    pub theme: Theme,
}

impl Widget for SpeedBar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let t = self.theme;
        let g = t.glyphs;
        let chart = SpeedChart {
            points: self.points,
            window: (0, 0),
            axis: XAxis::Percent,
            avg_bps: None,
            limit_bps: None,
            overlays: &[],
            markers: self.markers,
            spans: self.spans,
            units: Units::Decimal,
            theme: t,
            y_prev: None,
        };
        let w = area.width as usize;
        let cols = chart.columns(w);
        let peak = cols
            .iter()
            .flatten()
            .map(|c| c.mean)
            .fold(0.0f64, f64::max)
            .max(1.0);
        let filled = ((self.progress.clamp(0.0, 1.0)) * w as f64).round() as usize;
        for (i, col) in cols.iter().enumerate() {
            let x = area.x + i as u16;
            let cell = &mut buf[(x, area.y)];
            if i < filled {
                let level = col
                    .map(|c| ((c.mean / peak) * 8.0).round().clamp(1.0, 8.0) as usize)
                    .unwrap_or(8);
                let dip = col.is_some_and(|c| c.count > 1 && c.min < c.mean * 0.5);
                let sym = if level == 8 { g.full } else { g.partial[level] };
                let style = if dip { t.dip() } else { t.fill() };
                cell.set_symbol(sym).set_style(style);
            } else {
                cell.set_symbol(g.empty_bar).set_style(t.dim());
            }
        }
        if area.height >= 2 {
            let y = area.y + 1;
            let mut best: Vec<Option<&Marker>> = vec![None; w];
            for m in self.markers {
                if let Some(c) = chart.marker_col(m, w)
                    && best[c].is_none_or(|b| m.priority >= b.priority)
                {
                    best[c] = Some(m);
                }
            }
            for (c, m) in best.iter().enumerate() {
                if let Some(m) = m {
                    let mut style = Style::new();
                    if t.color {
                        style = style.fg(m.color);
                    }
                    let mut tmp = [0u8; 4];
                    buf[(area.x + c as u16, y)]
                        .set_symbol(m.glyph.encode_utf8(&mut tmp))
                        .set_style(style);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A speed that wobbles around a tick (38–52 MB/s) rescales once, upwards, and then stays.
    #[test]
    fn the_y_scale_holds_while_the_speed_wobbles() {
        let mut y = None;
        let mut tops = Vec::new();
        for i in 0..200 {
            let peak = if i % 7 < 3 { 38.0 } else { 52.0 };
            let next = YScale::next(y, peak, 20, 1e6);
            if y.is_none_or(|p: YScale| p.top != next.top) {
                tops.push(next.top);
            }
            y = Some(next);
        }
        assert_eq!(tops, [40.0, 80.0], "rescales");
        // Every scale's ticks are one arithmetic sequence from 0.
        let t = y.unwrap().ticks();
        assert!(
            t.windows(2)
                .all(|w| (w[1] - w[0] - y.unwrap().step).abs() < 1e-9)
        );
        assert_eq!(t[0], 0.0);
        assert_eq!(*t.last().unwrap(), y.unwrap().top);
    }

    /// It shrinks once the data fills well under half of it, to the scale that fits; and a
    /// new plot height starts afresh.
    #[test]
    fn the_y_scale_shrinks_only_when_the_data_fills_little_of_it() {
        let big = YScale::next(None, 190.0, 20, 1e6);
        assert_eq!(big.top, 200.0);
        assert_eq!(YScale::next(Some(big), 100.0, 20, 1e6), big, "half: kept");
        let small = YScale::next(Some(big), 60.0, 20, 1e6);
        assert_eq!(small, YScale::fit(60.0, 1.05, 20, 1e6));
        assert!(small.top < 100.0);
        assert_eq!(
            YScale::next(Some(big), 100.0, 30, 1e6),
            YScale::fit(100.0, 1.05, 30, 1e6)
        );
    }

    fn pt(t_s: f64, mbps: f64) -> Point {
        Point {
            t_ns: (t_s * 1e9) as u64,
            dt_ns: 100_000_000,
            copy_bps: mbps * 1e6,
            copy_min_bps: mbps * 1e6,
            copy_max_bps: mbps * 1e6,
            device_bps: None,
            net_bps: None,
            progress: Some(t_s / 100.0),
        }
    }

    #[test]
    fn a_lone_burst_is_clipped_but_a_real_fast_phase_sets_the_scale() {
        let col = |m: f64| {
            Some(Column {
                mean: m,
                min: m,
                max: m,
                overlay: [None; MAX_OVERLAYS],
                in_drop: false,
                count: 1,
            })
        };
        let mut cols: Vec<Option<Column>> = (0..100).map(|_| col(40e6)).collect();
        cols[0] = col(1.7e9);
        assert!(
            (robust_peak(&cols) - 48e6).abs() < 1.0,
            "one burst column is clipped"
        );
        for c in cols.iter_mut().take(10) {
            *c = col(200e6);
        }
        assert_eq!(
            robust_peak(&cols),
            200e6,
            "10 % of the run at 200 MB/s is real"
        );
    }

    #[test]
    fn every_overlay_series_is_drawn_with_its_glyph() {
        let mut pts: Vec<Point> = (0..50).map(|i| pt(i as f64 * 0.1, 100.0)).collect();
        for p in &mut pts {
            p.device_bps = Some(40e6);
        }
        let quarter: Overlay = Overlay {
            glyph: ("×", "x"),
            color: Color::Yellow,
            value: |p| Some(p.copy_bps / 4.0),
        };
        let draw = |theme: Theme| {
            let chart = SpeedChart {
                points: &pts,
                window: (0, 5_000_000_000),
                axis: XAxis::Time,
                avg_bps: None,
                limit_bps: None,
                overlays: &[Overlay::DEVICE, quarter],
                markers: &[],
                spans: &[],
                units: Units::Decimal,
                theme,
                y_prev: None,
            };
            let area = Rect::new(0, 0, 60, 14);
            let mut buf = Buffer::empty(area);
            chart.render(area, &mut buf);
            buf.content().iter().map(|c| c.symbol()).collect::<String>()
        };
        // In colour the dots run through the area on the fill's colour.
        let text = draw(Theme::new(true, false));
        assert!(text.contains('•'), "device overlay drawn");
        assert!(text.contains('×'), "second overlay drawn");
        // Without colour a dot would read as a hole in the area: the fill wins.
        let text = draw(Theme::plain(false));
        assert!(!text.contains('•') && !text.contains('×'), "{text}");
    }

    #[test]
    fn columns_keep_min_of_a_short_drop_in_a_long_history() {
        // 3 hours at 100 ms with one 300 ms drop to 3 MB/s.
        let mut pts: Vec<Point> = (1..=108_000).map(|i| pt(i as f64 * 0.1, 118.0)).collect();
        for p in pts.iter_mut().skip(50_000).take(3) {
            p.copy_bps = 3e6;
            p.copy_min_bps = 3e6;
        }
        let chart = SpeedChart {
            points: &pts,
            window: (0, 10_800_000_000_000),
            axis: XAxis::Time,
            avg_bps: None,
            limit_bps: None,
            overlays: &[],
            markers: &[],
            spans: &[],
            units: Units::Decimal,
            theme: Theme::plain(false),
            y_prev: None,
        };
        let cols = chart.columns(70);
        let dips = cols.iter().flatten().filter(|c| c.min < 10e6).count();
        assert_eq!(dips, 1, "exactly one column shows the drop");
        assert!(cols.iter().flatten().all(|c| (c.mean - 118e6).abs() < 1e6));
    }

    #[test]
    fn few_points_stretch_as_steps_up_to_the_last_point() {
        let pts = vec![pt(0.0, 10.0), pt(0.1, 20.0)];
        let chart = SpeedChart {
            points: &pts,
            window: (0, 400_000_000),
            axis: XAxis::Time,
            avg_bps: None,
            limit_bps: None,
            overlays: &[],
            markers: &[],
            spans: &[],
            units: Units::Decimal,
            theme: Theme::plain(false),
            y_prev: None,
        };
        let cols = chart.columns(8);
        assert!(cols[1].is_some(), "first point at its mid-time column");
        assert_eq!(cols[2].map(|c| c.count), Some(0), "carried forward");
        assert!(cols[3].is_some());
        assert!(cols[7].is_none(), "nothing after the data");
    }

    #[test]
    fn the_bwlimit_is_a_line_across_the_whole_plot() {
        let pts: Vec<Point> = (1..=20).map(|i| pt(i as f64 * 0.1, 40.0)).collect();
        let chart = SpeedChart {
            points: &pts,
            window: (0, 10_000_000_000),
            axis: XAxis::Time,
            avg_bps: None,
            limit_bps: Some(80e6),
            overlays: &[],
            markers: &[],
            spans: &[],
            units: Units::Decimal,
            theme: Theme::plain(false),
            y_prev: None,
        };
        let area = Rect::new(0, 0, 60, 14);
        let mut buf = Buffer::empty(area);
        chart.render(area, &mut buf);
        let rows: Vec<String> = (0..area.height)
            .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol()).collect())
            .collect();
        let line = rows
            .iter()
            .find(|r| r.matches('╌').count() > 40)
            .unwrap_or_else(|| panic!("no limit line:\n{}", rows.join("\n")));
        // Drawn past the data (2 s of a 10 s window): the limit holds ahead too.
        assert!(line.trim_end().ends_with('╌'), "{line}");
        // Above the 40 MB/s fill: the scale made room for it.
        let fill_top = rows.iter().position(|r| r.contains('█')).unwrap();
        let line_y = rows.iter().position(|r| r == line).unwrap();
        assert!(line_y < fill_top, "{}", rows.join("\n"));
    }
}
