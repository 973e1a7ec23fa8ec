//! Drawing: `render(frame, &View)` is a pure function of the app state (its `now_ns` is the
//! clock). One file per screen region; nothing here reads /proc or the wall clock.

pub mod chart;
pub mod markers;
pub mod overlay;
pub mod panels;
pub mod theme;
pub mod view;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use crate::model::pipeline::PipelineView;
use crate::present::format::fmt_clock;
use crate::ui::chart::{SpeedBar, SpeedChart, YScale};
use crate::ui::view::{RunState, View};

/// Height below which the chart moves into the progress bar (the compact layout), so a short
/// terminal keeps the progress, events and kernel rows.
pub const COMPACT_BELOW_ROWS: u16 = 18;

/// What one frame hands the next: the chart's y scale, kept while it fits (hysteresis), for
/// the same x axis, zoom and scroll position.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Held {
    chart: Option<(ChartKey, YScale)>,
}

type ChartKey = (chart::XAxis, u8, u64);

/// Draws the whole screen as a first frame would (no scale held).
pub fn render(frame: &mut Frame, app: &View) {
    let area = frame.area();
    render_to(area, frame.buffer_mut(), app);
}

/// Draws the whole screen after the frame that left `held`, and updates it.
pub fn render_held(frame: &mut Frame, app: &View, held: &mut Held) {
    let area = frame.area();
    *held = render_after(area, frame.buffer_mut(), app, *held);
}

/// Draws into any buffer (tests use a TestBackend buffer).
pub fn render_to(area: Rect, buf: &mut Buffer, app: &View) {
    render_after(area, buf, app, Held::default());
}

/// Draws into `buf` after the frame that left `held`; returns what this frame leaves.
pub fn render_after(area: Rect, buf: &mut Buffer, app: &View, held: Held) -> Held {
    if area.width == 0 || area.height == 0 {
        return held;
    }
    if area.width < 30 || area.height < 7 {
        panels::tiny(area, buf, app);
        return held;
    }
    let inner = frame(area, buf, app);
    let compact = app.opts.compact || area.height < COMPACT_BELOW_ROWS;
    // Built once per frame: the layout needs their count, the panel draws them.
    let kernel_lines = if app.view.show_kernel {
        panels::kernel_lines(app, !compact && inner.height >= 30)
    } else {
        Vec::new()
    };
    // Built once per frame too: the layout needs its stage count, the panel draws it.
    let pipeline = panels::pipeline_of(app);
    let rows = if compact {
        compact_layout(inner, app, pipeline.as_ref())
    } else {
        full_layout(inner, app, kernel_lines.len() as u16, pipeline.as_ref())
    };
    panels::speeds(rows.speeds, buf, app);
    let next = charts(&rows, buf, app, held);
    if let Some(sep) = rows.progress_sep {
        separator(buf, area, sep.y, "", app);
    }
    panels::progress(rows.progress, buf, app, rows.speed_bar.is_none());
    if let Some(w) = rows.writers {
        match &pipeline {
            Some(p) => {
                separator(buf, area, w.y, "pipeline", app);
                panels::stages(under_title(w), buf, app, p);
            }
            None => {
                separator(buf, area, w.y, "writers", app);
                panels::writers(under_title(w), buf, app);
            }
        }
    }
    if let Some(ev) = rows.events {
        separator(buf, area, ev.y, "events", app);
        panels::events(under_title(ev), buf, app);
    }
    if let Some(k) = rows.kernel {
        separator(buf, area, k.y, "kernel", app);
        panels::kernel(
            under_title(k),
            buf,
            kernel_lines,
            app.opts.theme.glyphs.ellipsis,
        );
    }
    // A status message too long for the bottom border (the screenshot's file names) is
    // shown in full, wrapped, over the events (or whatever is below the progress rows).
    if let Some(msg) = panels::status_message(app)
        && !panels::status_fits_footer(msg, area.width)
    {
        // Everything below the progress rows (events and kernel panel), or the chart.
        let top = rows.progress.bottom();
        let under = if inner.bottom() > top + 1 {
            Rect {
                y: top + 1,
                height: inner.bottom() - top - 1,
                ..inner
            }
        } else {
            rows.chart.unwrap_or(rows.speeds)
        };
        status_over(under, buf, msg, app);
    }
    if app.view.help {
        overlay::help(area, buf, app);
    }
    if let Some(d) = &app.dialog {
        overlay::dialog(area, buf, app, d);
    }
    if app.opts.theme.ascii() {
        ascii_only(area, buf);
    }
    next
}

/// A panel's rows under its separator line.
fn under_title(r: Rect) -> Rect {
    Rect {
        y: r.y + 1,
        height: r.height - 1,
        ..r
    }
}

/// The border with the title, the state and the clock at the top and the keys at the bottom;
/// returns the room inside, less a column of air on each side.
fn frame(area: Rect, buf: &mut Buffer, app: &View) -> Rect {
    let t = app.opts.theme;
    let state = state_line(app);
    // The title gets what the state leaves of the top border.
    let title_room = area.width.saturating_sub(2 + state.width() as u16 + 1);
    let title = panels::title_line(app, title_room);
    let footer = panels::footer_line(app, area.width);
    let block = Block::new()
        .borders(Borders::ALL)
        .border_set(t.border_set())
        .title_top(title)
        .title_top(state)
        .title_bottom(footer);
    let inner = block.inner(area);
    block.render(area, buf);
    Rect {
        x: inner.x + 1,
        width: inner.width.saturating_sub(2),
        ..inner
    }
}

/// The top border's right end: " replay 2× " or " copying ", and the clock.
fn state_line(app: &View) -> Line<'static> {
    let t = app.opts.theme;
    let mut state_spans = Vec::new();
    if let Some(r) = app.replay {
        let speed = if r.speed.is_infinite() {
            "max".to_string()
        } else {
            format!("{}×", r.speed)
        };
        let what = if r.paused {
            "replay paused".to_string()
        } else {
            format!("replay {speed}")
        };
        state_spans.push(Span::styled(format!(" {what} "), t.warn()));
    }
    if app.state != RunState::Replay {
        state_spans.push(Span::styled(format!(" {} ", app.state.label()), t.title()));
    }
    state_spans.push(Span::raw(format!(
        "{} ",
        fmt_clock(app.now_ns as f64 / 1e9)
    )));
    Line::from(state_spans).right_aligned()
}

/// The speed chart (or, compact, the speed bar); returns what the chart's scale leaves the
/// next frame.
fn charts(rows: &Rows, buf: &mut Buffer, app: &View, held: Held) -> Held {
    let mut next = held;
    let t = app.opts.theme;
    let points = app.model.series().points();
    let events = app.model.events();
    let marks = markers::markers(events, t.ascii(), |t_ns| progress_at(points, t_ns));
    let spans = markers::drop_spans(app.model, app.now_ns);
    if let Some(chart_area) = rows.chart {
        let stats = app.model.stats();
        let key = (app.view.axis, app.view.zoom, app.view.scroll_ns);
        let chart = SpeedChart {
            points,
            window: app.window(),
            axis: app.view.axis,
            avg_bps: (stats.avg_bps > 0.0).then_some(stats.avg_bps),
            // `--pace auto`: the pace the copy holds now, where `--bwlimit` draws its limit.
            limit_bps: app.limit_bps.or_else(|| {
                app.model
                    .env()
                    .pace_auto
                    .then(|| app.model.pace().bps)
                    .flatten()
            }),
            overlays: &[chart::Overlay::DEVICE, chart::Overlay::NETWORK],
            markers: &marks,
            spans: &spans,
            units: app.opts.units,
            theme: t,
            y_prev: held.chart.filter(|(k, _)| *k == key).map(|(_, y)| y),
        };
        next.chart = Some((key, chart.y_scale(chart_area)));
        chart.render(chart_area, buf);
    }
    if let Some(bar) = rows.speed_bar {
        SpeedBar {
            points,
            progress: panels::fraction_done(app).unwrap_or(0.0),
            markers: &marks,
            spans: &spans,
            theme: t,
        }
        .render(bar, buf);
    }
    next
}

/// Writes `msg` wrapped over the top rows of `area` (cleared first).
fn status_over(area: Rect, buf: &mut Buffer, msg: &str, app: &View) {
    let t = app.opts.theme;
    let lines = crate::present::text::wrap_words(msg, usize::from(area.width));
    let n = lines.len().min(usize::from(area.height));
    for (i, l) in lines.into_iter().take(n).enumerate() {
        let row = Rect {
            y: area.y + i as u16,
            height: 1,
            ..area
        };
        ratatui::widgets::Clear.render(row, buf);
        Line::from(Span::styled(l, t.warn())).render(row, buf);
    }
}

/// `--ascii` promises ASCII only: event texts ("118 → 3 MB/s") and file names are mapped too.
fn ascii_only(area: Rect, buf: &mut Buffer) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            if !cell.symbol().is_ascii() {
                let mapped = crate::present::text::asciify(cell.symbol());
                let first = mapped.chars().next().unwrap_or('_');
                let mut tmp = [0u8; 4];
                cell.set_symbol(first.encode_utf8(&mut tmp));
            }
        }
    }
}

/// The fraction of bytes complete at time `t_ns`, from the series (for the percent axis).
pub fn progress_at(points: &[crate::model::series::Point], t_ns: u64) -> Option<f64> {
    let i = points.partition_point(|p| p.t_ns < t_ns);
    points
        .get(i)
        .or_else(|| points.last())
        .and_then(|p| p.progress)
}

struct Rows {
    speeds: Rect,
    chart: Option<Rect>,
    speed_bar: Option<Rect>,
    progress_sep: Option<Rect>,
    progress: Rect,
    /// A watch's writers panel (several writers), or its pipeline's stages.
    writers: Option<Rect>,
    events: Option<Rect>,
    kernel: Option<Rect>,
}

fn take(area: &mut Rect, h: u16) -> Rect {
    let h = h.min(area.height);
    let r = Rect { height: h, ..*area };
    area.y += h;
    area.height -= h;
    r
}

fn take_bottom(area: &mut Rect, h: u16) -> Rect {
    let h = h.min(area.height);
    area.height -= h;
    Rect {
        y: area.y + area.height,
        height: h,
        ..*area
    }
}

/// Rows of chart a full layout keeps before it gives any to the events or the kernel panel.
const MIN_CHART_ROWS: u16 = 6;

/// The full layout, by priority: speeds and progress always; then the chart (at least
/// [`MIN_CHART_ROWS`]); then the events; then the kernel panel, which gives up its lines
/// first when the terminal is short.
fn full_layout(
    inner: Rect,
    app: &View,
    kernel_lines: u16,
    pipeline: Option<&PipelineView>,
) -> Rows {
    let mut rest = inner;
    let speeds = take(&mut rest, 1);
    let mut kernel_h = if app.view.show_kernel {
        1 + kernel_lines
    } else {
        0
    };
    // Events grow with the terminal: a quarter of what the kernel panel leaves after a
    // minimum chart.
    let mut events_h = if app.view.show_events {
        let spare = rest.height.saturating_sub(kernel_h + 3 + 10);
        1 + (3 + spare / 4).min(12)
    } else {
        0
    };
    // Progress (2) and its separator (1) are never given up; the writers panel comes next.
    let mut left = rest.height.saturating_sub(3 + MIN_CHART_ROWS);
    let writers_h = match (pipeline, panels::has_writers(app)) {
        (Some(p), _) => (1 + panels::stage_rows(p)).min(left),
        (None, true) => (1 + (app.writers.len() as u16).min(panels::MAX_WRITER_ROWS)).min(left),
        (None, false) => 0,
    };
    let writers_h = if writers_h < 2 { 0 } else { writers_h };
    left -= writers_h;
    if events_h + kernel_h > left {
        // The kernel panel shrinks first (a separator and at least one line, or nothing),
        // then the events (a separator and at least two lines, or nothing).
        kernel_h = kernel_h.min(left.saturating_sub(events_h.min(3)));
        if kernel_h < 2 {
            kernel_h = 0;
        }
        events_h = events_h.min(left - kernel_h);
        if events_h < 3 {
            events_h = 0;
        }
    }
    let kernel = (kernel_h > 0).then(|| take_bottom(&mut rest, kernel_h));
    let events = (events_h > 0).then(|| take_bottom(&mut rest, events_h));
    let writers = (writers_h > 0).then(|| take_bottom(&mut rest, writers_h));
    let progress = take_bottom(&mut rest, 2);
    let progress_sep = Some(take_bottom(&mut rest, 1));
    Rows {
        speeds,
        chart: Some(rest),
        speed_bar: None,
        progress_sep,
        progress,
        writers,
        events,
        kernel,
    }
}

/// The compact layout (the chart inside a two-row bar), by priority: progress and ETA; then
/// the speed bar; then the speeds line; then the events (a separator and two lines at
/// least); the kernel panel only with what is left after that.
fn compact_layout(inner: Rect, app: &View, pipeline: Option<&PipelineView>) -> Rows {
    let h = inner.height;
    let progress_h = h.min(2);
    let bar_h = (h - progress_h).min(2);
    let speeds_h = (h - progress_h - bar_h).min(1);
    let mut left = h - progress_h - bar_h - speeds_h;
    // A pipeline's stages are what a pipeline watch is for: they come before the events.
    let writers_h = pipeline.map_or(0, |p| (1 + panels::stage_rows(p)).min(left));
    let writers_h = if writers_h < 2 { 0 } else { writers_h };
    left -= writers_h;
    let events_h = if app.view.show_events && left >= 3 {
        // With room for both, the kernel panel gets a separator and two lines.
        if app.view.show_kernel && left >= 6 {
            left - 3
        } else {
            left
        }
    } else {
        0
    };
    left -= events_h;
    let kernel_h = if app.view.show_kernel && left >= 2 {
        left.min(4)
    } else {
        0
    };
    let mut rest = inner;
    let speeds = take(&mut rest, speeds_h);
    let speed_bar = (bar_h > 0).then(|| take(&mut rest, bar_h));
    let progress = take(&mut rest, progress_h);
    let writers = (writers_h > 0).then(|| take(&mut rest, writers_h));
    let events = (events_h > 0).then(|| take(&mut rest, events_h));
    let kernel = (kernel_h > 0).then(|| take(&mut rest, kernel_h));
    Rows {
        speeds,
        chart: None,
        speed_bar,
        progress_sep: None,
        progress,
        writers,
        events,
        kernel,
    }
}

/// A horizontal rule across the outer block at row `y`, joined to its borders, with a title.
fn separator(buf: &mut Buffer, outer: Rect, y: u16, title: &str, app: &View) {
    if y <= outer.y || y >= outer.bottom().saturating_sub(1) {
        return;
    }
    let t = app.opts.theme;
    let g = t.glyphs;
    let (l, r) = if t.ascii() {
        ("+", "+")
    } else {
        ("├", "┤")
    };
    buf[(outer.x, y)].set_symbol(l);
    buf[(outer.right() - 1, y)].set_symbol(r);
    for x in outer.x + 1..outer.right() - 1 {
        buf[(x, y)]
            .set_symbol(g.axis_h)
            .set_style(ratatui::style::Style::new());
    }
    if !title.is_empty() && outer.width > title.len() as u16 + 4 {
        buf.set_string(outer.x + 2, y, format!(" {title} "), t.title());
    }
}
