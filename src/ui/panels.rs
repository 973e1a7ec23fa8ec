//! The text regions around the chart: title, speeds line, progress, events, kernel panel,
//! footer, and the one-line fallback for tiny terminals.

use crate::present::quote::shell_escape;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::{BacklogScope, EventKind, KernelView};
use crate::present::format::fmt_clock;
use crate::present::format::fmt_count;
use crate::present::text::wrap_words;
use crate::ui::view::{RunState, View};

/// Cells a string takes on the terminal (wide characters take two).
pub fn cells(s: &str) -> usize {
    Span::raw(s).width()
}

fn char_cells(c: char) -> usize {
    let mut b = [0u8; 4];
    cells(c.encode_utf8(&mut b))
}

/// The longest prefix of `s` that fits in `max` cells.
fn head_cells(s: &str, max: usize) -> &str {
    let mut w = 0;
    for (i, c) in s.char_indices() {
        w += char_cells(c);
        if w > max {
            return &s[..i];
        }
    }
    s
}

/// The longest suffix of `s` that fits in `max` cells.
fn tail_cells(s: &str, max: usize) -> &str {
    let mut w = 0;
    for (i, c) in s.char_indices().rev() {
        w += char_cells(c);
        if w > max {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

/// Shortens `s` to `max` cells, keeping the end (the file name matters most).
pub fn ellipsize_start(s: &str, max: usize, ellipsis: &str) -> String {
    if cells(s) <= max {
        return s.to_string();
    }
    let e = cells(ellipsis);
    if max <= e {
        return tail_cells(s, max).to_string();
    }
    format!("{ellipsis}{}", tail_cells(s, max - e))
}

/// Shortens `s` to `max` cells, keeping the start and marking the cut with `ellipsis`.
pub fn ellipsize_end(s: &str, max: usize, ellipsis: &str) -> String {
    if cells(s) <= max {
        return s.to_string();
    }
    let e = cells(ellipsis);
    if max <= e {
        return head_cells(s, max).to_string();
    }
    format!("{}{ellipsis}", head_cells(s, max - e).trim_end())
}

/// Cuts a styled line to `max` cells; a line that was cut ends with the ellipsis (in the
/// style of the text it replaces), so a reader always knows there was more.
pub fn fit_line(line: Line<'static>, max: usize, ellipsis: &str) -> Line<'static> {
    if line.width() <= max {
        return line;
    }
    let e = cells(ellipsis);
    let room = max.saturating_sub(e);
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    let mut last_style = line.spans.first().map(|s| s.style).unwrap_or_default();
    for span in line.spans {
        let w = span.width();
        last_style = span.style;
        if used + w <= room {
            used += w;
            out.push(span);
            continue;
        }
        let head = head_cells(&span.content, room - used).to_string();
        out.push(Span::styled(head, span.style));
        break;
    }
    // No blank before the ellipsis: "peak 288…", not "peak 288 …".
    while let Some(last) = out.last_mut() {
        let trimmed = last.content.trim_end().to_string();
        if trimmed.is_empty() {
            out.pop();
            continue;
        }
        last.content = trimmed.into();
        break;
    }
    if max >= e {
        out.push(Span::styled(ellipsis.to_string(), last_style));
    }
    Line::from(out)
}

/// Renders `line` on one row of `area`, cut with an ellipsis if it does not fit.
pub fn render_fitted(line: Line<'static>, area: Rect, buf: &mut Buffer, ellipsis: &str) {
    fit_line(line, area.width as usize, ellipsis).render(area, buf);
}

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

/// The status message (where the screenshot went), while it is fresh.
pub fn status_message<'a>(app: &View<'a>) -> Option<&'a str> {
    app.screen
        .status
        .as_ref()
        .filter(|(_, at)| app.now_ns.saturating_sub(*at) < STATUS_NS)
        .map(|(m, _)| m.as_str())
}

/// How long a status message stays up (in the model's time).
const STATUS_NS: u64 = 8_000_000_000;

/// True when the status message fits in the bottom border of a `width`-wide screen; else it
/// is shown in full over the events (see `ui::render_to`).
pub fn status_fits_footer(msg: &str, width: u16) -> bool {
    cells(msg) + 2 <= usize::from(width).saturating_sub(2)
}

/// Keys (or a status message that fits) in the bottom border of a `width`-wide screen. Keys
/// that do not fit are left out whole, from the right; `q` and `? help` always stay.
pub fn footer_line(app: &View, width: u16) -> Line<'static> {
    let t = app.opts.theme;
    if let Some(msg) = status_message(app)
        && status_fits_footer(msg, width)
    {
        return Line::from(Span::styled(format!(" {msg} "), t.warn()));
    }
    let keys: &[&str] = if app.replay.is_some() {
        &[
            "space pause",
            "x speed",
            "←/→ seek",
            "Home/End",
            "s screenshot",
            "t axis",
            "+/- zoom",
        ]
    } else if app.state.finished() {
        &["s screenshot", "t axis", "+/- zoom", "e events", "k kernel"]
    } else {
        &["p pause", "s screenshot", "t axis", "+/- zoom", "e events"]
    };
    let room = usize::from(width).saturating_sub(4);
    let mut text = format!(" q {}", app.opts.then.unwrap_or("quit"));
    let end = "  ? help ";
    for k in keys {
        if cells(&text) + 2 + cells(k) + cells(end) > room {
            break;
        }
        text.push_str("  ");
        text.push_str(k);
    }
    text.push_str(end);
    Line::from(Span::styled(text, t.dim()))
}

fn labeled(label: &str, value: String, gap: &'static str, app: &View) -> Vec<Span<'static>> {
    let t = app.opts.theme;
    vec![
        Span::styled(format!("{label} "), t.label()),
        Span::styled(value, t.value()),
        Span::raw(gap),
    ]
}

/// "now 118 MB/s   avg 104 MB/s   peak 121 MB/s   min 40 MB/s   durable 96 MB/s   drops 3 (4.2 s lost)";
/// where that does not fit, narrower gaps and "drops 3 (4.2 s)" before anything is cut. A
/// watch with `--net` ends with "rx avg 99 MB/s".
pub fn speeds(area: Rect, buf: &mut Buffer, app: &View) {
    let u = app.opts.units;
    let s = app.model.stats();
    let line = |gap: &'static str, short: bool| {
        let mut spans = Vec::new();
        spans.extend(labeled("now", u.rate(s.now_bps), gap, app));
        spans.extend(labeled("avg", u.rate(s.avg_bps), gap, app));
        spans.extend(labeled("peak", u.rate(s.peak_bps), gap, app));
        spans.extend(labeled("min", u.rate(s.min_bps), gap, app));
        if let Some(d) = s.durable_bps {
            spans.extend(labeled("durable", u.rate(d), gap, app));
        }
        if s.drops > 0 {
            let lost = crate::present::format::fmt_secs(s.lost_total_secs());
            let what = if short { "" } else { " lost" };
            spans.extend(labeled(
                "drops",
                format!("{} ({lost}{what})", s.drops),
                gap,
                app,
            ));
        }
        // `watch --net`: the receive average beside the intake's (its "now" is in the kernel
        // panel); after the drops, so a narrow terminal cuts it first.
        if let Some(n) = &s.net {
            spans.extend(labeled("rx avg", u.rate(n.avg_bps), gap, app));
        }
        // The blank after the last figure is not part of what could be cut.
        spans.pop();
        Line::from(spans)
    };
    let fitting = [("   ", false), ("  ", false), ("  ", true)]
        .into_iter()
        .map(|(gap, short)| line(gap, short))
        .find(|l| l.width() <= area.width as usize)
        .unwrap_or_else(|| line("  ", true));
    render_fitted(fitting, area, buf, app.opts.theme.glyphs.ellipsis);
}

/// Fraction of bytes done, once the total is known and non-zero.
pub fn fraction_done(app: &View) -> Option<f64> {
    let p = &app.progress;
    let (done, work) = match app.verified {
        // --verify: writing and reading back are each half the work.
        Some(v) => (p.bytes_copied + v, 2 * p.bytes_total),
        None => (p.bytes_copied, p.bytes_total),
    };
    (work > 0).then(|| (done as f64 / work as f64).clamp(0.0, 1.0))
}

/// Seconds until durable, including the backlog still in RAM (the model decides how). Under
/// `--verify` while copying, the work left (writes and read-backs) at the pace so far.
pub fn eta_secs(app: &View) -> Option<f64> {
    match (app.verified, app.state) {
        (Some(_), RunState::Verifying | RunState::Paused) => {
            let f = fraction_done(app)?;
            let secs = app.now_ns as f64 / 1e9;
            (app.progress.scan_done && f > 0.0 && secs > 0.0).then(|| secs * (1.0 - f) / f)
        }
        _ => app.model.eta_secs(true),
    }
}

fn gauge(width: usize, frac: f64, app: &View) -> (String, String) {
    let g = app.opts.theme.glyphs;
    let done = ((frac.clamp(0.0, 1.0)) * width as f64).round() as usize;
    (g.gauge_full.repeat(done), g.empty_bar.repeat(width - done))
}

/// A gauge with the ZFS marks on it: `|` where a txg is pushed to sync
/// (`zfs_dirty_data_sync_percent`), `!` where the write throttle starts delaying writers
/// (`zfs_delay_min_dirty_percent`), so the fill shows how close the next stall is.
fn marked_gauge(
    width: usize,
    frac: f64,
    sync_pct: Option<u32>,
    delay_pct: Option<u32>,
    app: &View,
) -> Vec<Span<'static>> {
    let t = app.opts.theme;
    let g = t.glyphs;
    let done = (frac.clamp(0.0, 1.0) * width as f64).round() as usize;
    let mark_at = |p: Option<u32>| p.map(|p| ((p as usize * width) / 100).min(width - 1));
    let (sync, delay) = (mark_at(sync_pct), mark_at(delay_pct));
    (0..width)
        .map(|i| {
            let filled = i < done;
            let sym = if Some(i) == delay {
                "!"
            } else if Some(i) == sync {
                "|"
            } else if filled {
                g.gauge_full
            } else {
                g.empty_bar
            };
            let style = match (Some(i) == delay || Some(i) == sync, filled) {
                (true, _) => t.warn(),
                (false, true) => t.gauge(),
                (false, false) => t.dim(),
            };
            Span::styled(sym.to_string(), style)
        })
        .collect()
}

/// The progress rows: the bytes gauge with files and ETA, then the current file (or the flush).
pub fn progress(area: Rect, buf: &mut Buffer, app: &View, with_gauge: bool) {
    if area.height == 0 {
        return;
    }
    let t = app.opts.theme;
    let u = app.opts.units;
    if app.watch {
        watch_progress(area, buf, app);
        return;
    }
    let p = &app.progress;
    let plus = if p.scan_done { "" } else { "+" };
    let pct = match (p.scan_done, fraction_done(app)) {
        (true, Some(f)) => format!("{:>3.0} %", (f * 100.0).floor()),
        (true, None) => "100 %".to_string(),
        (false, _) => "estimating".to_string(),
    };
    let eta = match (app.state, eta_secs(app)) {
        (RunState::Done, _) => "done".to_string(),
        (RunState::Cancelled, _) => "cancelled".to_string(),
        (_, Some(e)) => format!("ETA {}", fmt_clock(e)),
        (_, None) => "ETA --:--".to_string(),
    };
    let bytes = format!(
        "{} / {}{plus}",
        u.size(p.bytes_copied),
        u.size(p.bytes_total)
    );
    let files = format!(
        "files {} / {}{plus}",
        fmt_count(p.files_done),
        fmt_count(p.files_total)
    );
    // Percent and ETA first; then the bytes, then the files, as far as the width allows
    // (shown in reading order).
    let compose = |with_bytes: bool, with_files: bool| {
        let mut parts = vec![pct.as_str()];
        if with_bytes {
            parts.push(&bytes);
        }
        if with_files {
            parts.push(&files);
        }
        parts.push(&eta);
        parts.join("  ")
    };
    let w = area.width as usize;
    let text = [(true, true), (true, false), (false, false)]
        .into_iter()
        .map(|(b, f)| compose(b, f))
        .find(|t| cells(t) <= w)
        .unwrap_or_else(|| compose(false, false));
    let row0 = Rect { height: 1, ..area };
    let e = t.glyphs.ellipsis;
    if with_gauge {
        let text_w = cells(&text) + 1;
        let gauge_w = w.saturating_sub(text_w).min(40);
        // A gauge of a few cells says nothing the percentage does not.
        let gauge_w = if gauge_w < 6 { 0 } else { gauge_w };
        let (a, b) = gauge(gauge_w, fraction_done(app).unwrap_or(0.0), app);
        let mut spans = vec![Span::styled(a, t.gauge()), Span::styled(b, t.dim())];
        if gauge_w > 0 {
            spans.push(Span::raw(" "));
        }
        spans.push(Span::raw(text));
        render_fitted(Line::from(spans), row0, buf, e);
    } else {
        render_fitted(Line::from(text), row0, buf, e);
    }
    if area.height < 2 {
        return;
    }
    let row1 = Rect {
        y: area.y + 1,
        height: 1,
        ..area
    };
    match app.state {
        RunState::Flushing => {
            let k = app.model.kernel();
            let line = match (k.this_copy_backlog, app.flush_start_dirty) {
                (Some(b), Some(start)) if start > 0 => {
                    let frac = 1.0 - (b.bytes as f64 / start as f64).min(1.0);
                    let (a, rest) = gauge(20, frac, app);
                    let whose = match b.scope {
                        BacklogScope::ThisCopy => "this copy: ",
                        BacklogScope::System => "system dirty: ",
                    };
                    let mut spans = vec![
                        Span::styled(
                            format!("flushing {whose}{} to disk ", u.size(b.bytes)),
                            t.warn(),
                        ),
                        Span::styled(a, t.gauge()),
                        Span::styled(rest, t.dim()),
                        Span::raw(format!(" {:.0} %", frac * 100.0)),
                    ];
                    if let (Some(pc), BacklogScope::ThisCopy) = (&k.page_cache, b.scope) {
                        spans.push(Span::styled(
                            format!(
                                "  system: dirty {}  writeback {}",
                                u.size(pc.dirty),
                                u.size(pc.writeback)
                            ),
                            t.dim(),
                        ));
                    }
                    Line::from(spans)
                }
                _ => Line::from(Span::styled(
                    "flushing: waiting for the filesystem to report the data durable (syncfs)",
                    t.warn(),
                )),
            };
            render_fitted(line, row1, buf, t.glyphs.ellipsis);
        }
        _ if app.cancelling.is_some() => {
            let text = match app.cancelling {
                Some(n) if n > 0 => format!(
                    "cancelling: waiting for the kernel to take the current write ({})",
                    u.size(n)
                ),
                _ => "cancelling: removing the unfinished file".to_string(),
            };
            Line::from(Span::styled(
                ellipsize_end(&text, area.width as usize, t.glyphs.ellipsis),
                t.warn(),
            ))
            .render(row1, buf);
        }
        _ => {
            if let Some(cur) = &app.current {
                let name = shell_escape(&cur.path);
                // Transliterated as a whole, so "ß" stays "ss" and wide characters keep their width.
                let name = if t.ascii() {
                    crate::present::text::asciify(&name).into()
                } else {
                    name
                };
                let frac = if cur.size > 0 {
                    cur.done as f64 / cur.size as f64
                } else {
                    1.0
                };
                let tail = format!("  {:>3.0} %", frac * 100.0);
                let bar_w = 10usize.min((area.width as usize).saturating_sub(20));
                let name_w = (area.width as usize).saturating_sub(bar_w + tail.len() + 2);
                let (a, b) = gauge(bar_w, frac, app);
                Line::from(vec![
                    Span::raw(format!(
                        "{}  ",
                        ellipsize_start(&name, name_w, t.glyphs.ellipsis)
                    )),
                    Span::styled(a, t.gauge()),
                    Span::styled(b, t.dim()),
                    Span::raw(tail),
                ])
                .render(row1, buf);
            }
        }
    }
}

/// A watch's progress rows: what the writers put in so far (no total, no files, no ETA: the
/// writer decides those), then the file a followed writer is writing and its position.
fn watch_progress(area: Rect, buf: &mut Buffer, app: &View) {
    let t = app.opts.theme;
    let u = app.opts.units;
    let row0 = Rect { height: 1, ..area };
    Line::from(vec![
        Span::styled("intake ", t.label()),
        Span::raw(format!("{} written", u.size(app.progress.bytes_copied))),
    ])
    .render(row0, buf);
    let Some(cur) = app.current.as_ref().filter(|_| area.height >= 2) else {
        return;
    };
    let name = shell_escape(&cur.path);
    let name = if t.ascii() {
        crate::present::text::asciify(&name).into()
    } else {
        name
    };
    let tail = format!("  at {}", u.size(cur.done));
    let name_w = (area.width as usize).saturating_sub(tail.len() + 8);
    Line::from(vec![
        Span::styled("writing ", t.label()),
        Span::raw(ellipsize_start(&name, name_w, t.glyphs.ellipsis)),
        Span::raw(tail),
    ])
    .render(
        Rect {
            y: area.y + 1,
            height: 1,
            ..area
        },
        buf,
    );
}

/// The events panel: newest first; a drop's diagnosis wraps onto following lines.
pub fn events(area: Rect, buf: &mut Buffer, app: &View) {
    let t = app.opts.theme;
    let evs = app.model.events();
    // A drop still in progress comes first, with the cause the evidence so far gives
    // (provisional: it is decided again when the drop ends).
    let open = app.model.open_drop();
    if evs.is_empty() && open.is_none() {
        Line::from(Span::styled("no events yet", t.dim())).render(Rect { height: 1, ..area }, buf);
        return;
    }
    let stamp_w = 9usize;
    let text_w = (area.width as usize).saturating_sub(stamp_w).max(10);
    let mut y = area.y;
    // A small panel keeps its rows for what explains the chart: sync starts are implied by the
    // commit line that follows them.
    let roomy = area.height >= 8;
    for e in open.iter().chain(evs.iter().rev()) {
        if y >= area.bottom() {
            break;
        }
        let provisional = open.as_ref().is_some_and(|o| std::ptr::eq(o, e));
        if !roomy && matches!(e.kind, EventKind::TxgSyncStarted { .. }) {
            continue;
        }
        let style = match &e.kind {
            EventKind::Drop(_) => t.warn(),
            EventKind::FileError { .. } => t.error(),
            _ => Style::new(),
        };
        let described = if provisional {
            format!("{} (so far)", e.describe())
        } else {
            e.describe()
        };
        let text = if t.ascii() {
            crate::present::text::asciify(&described)
        } else {
            described
        };
        let wrap = matches!(e.kind, EventKind::Drop(_) | EventKind::FileError { .. });
        let lines = if wrap {
            wrap_words(&text, text_w)
        } else {
            vec![text]
        };
        // At most three lines an event; a longer one, or one the panel's bottom cuts, ends
        // its last shown line with the ellipsis.
        let n = lines.len();
        for (i, l) in lines.into_iter().take(3).enumerate() {
            if y >= area.bottom() {
                break;
            }
            let stamp = if i == 0 {
                format!("{}  ", crate::present::format::fmt_event_time(e.t_ns))
            } else {
                " ".repeat(stamp_w)
            };
            let more = i + 1 < n && (i == 2 || y + 1 >= area.bottom());
            let mut line = fit_line(
                Line::from(vec![Span::styled(stamp, t.dim()), Span::styled(l, style)]),
                area.width as usize,
                t.glyphs.ellipsis,
            );
            if more {
                // Appended, then cut again if that made it too long: one ellipsis either way.
                line.spans
                    .push(Span::styled(t.glyphs.ellipsis.to_string(), style));
                line = fit_line(line, area.width as usize, t.glyphs.ellipsis);
            }
            line.render(
                Rect {
                    y,
                    height: 1,
                    ..area
                },
                buf,
            );
            y += 1;
        }
    }
}

/// The kernel panel's lines (page cache, ZFS, device/pressure/CPU), "n/a" where missing.
pub fn kernel_lines(app: &View, with_note: bool) -> Vec<Line<'static>> {
    let t = app.opts.theme;
    let u = app.opts.units;
    let k: KernelView = app.model.kernel();
    let env = app.model.env();
    let mut lines = Vec::new();
    let na = || Span::styled("n/a".to_string(), t.dim());
    let on_zfs = k.zfs.is_some();
    // Issue 9: say whose each figure is. This copy's backlog is its own data; Dirty,
    // Writeback, the device's rate, PSI and CPU count every writer on the machine.
    let mut pc = vec![Span::styled("this copy: ", t.label())];
    match k.this_copy_backlog {
        Some(b) if b.scope == BacklogScope::ThisCopy => pc.push(Span::styled(
            format!("to flush {}", u.size(b.bytes)),
            t.value(),
        )),
        // The destination's counters are unknown: only the system's figure (every writer's).
        Some(_) => pc.push(Span::styled("to flush n/a (see system dirty)", t.dim())),
        None => pc.push(Span::styled("to flush n/a", t.dim())),
    }
    pc.push(Span::styled("   system: ", t.label()));
    match &k.page_cache {
        Some(p) => {
            pc.push(Span::styled(
                format!("dirty {}", u.size(p.dirty)),
                t.value(),
            ));
            pc.push(Span::raw(format!(
                "  writeback {}   bg {}  freerun {}  limit {}",
                u.size(p.writeback),
                u.size(p.bg_thresh),
                u.size(p.freerun()),
                u.size(p.thresh)
            )));
            if on_zfs {
                pc.push(Span::styled("  (ZFS bypasses it)", t.dim()));
            }
        }
        None => pc.push(Span::styled("page cache n/a".to_string(), t.dim())),
    }
    lines.push(Line::from(pc));
    if let Some(z) = &k.zfs {
        let mut s = vec![Span::styled(format!("zfs {}  ", z.pool), t.label())];
        match z.open_txg {
            Some(txg) => s.push(Span::raw(format!("txg {txg} open  "))),
            None => s.push(Span::raw("txg n/a  ")),
        }
        if let Some(st) = z.syncing_txg {
            s.push(Span::styled(format!("{st} syncing  "), t.warn()));
        }
        match (z.dirty_estimate, z.dirty_max) {
            (Some(d), Some(max)) if max > 0 => {
                let frac = d as f64 / max as f64;
                s.push(Span::raw("dirty "));
                s.extend(marked_gauge(10, frac, z.sync_pct, z.delay_pct, app));
                s.push(Span::raw(format!(
                    " {:.0} % of {}",
                    frac * 100.0,
                    u.size(max)
                )));
                if let (Some(sp), Some(dp)) = (z.sync_pct, z.delay_pct) {
                    s.push(Span::styled(
                        format!(" (sync {sp} %, delay {dp} %)"),
                        t.dim(),
                    ));
                }
            }
            (Some(d), _) => s.push(Span::raw(format!(
                "dirty {} ({})",
                u.size(d),
                z.dirty_source
            ))),
            _ => s.push(Span::raw("dirty n/a")),
        }
        if z.delays_per_s > 0.0 {
            s.push(Span::styled(
                format!("  delays {:.0}/s", z.delays_per_s),
                t.error(),
            ));
        }
        if let Some((txg, nd, st)) = z.last_sync {
            s.push(Span::raw(format!(
                "  last sync {txg}: {} in {}",
                u.size(nd),
                crate::present::format::fmt_secs(st as f64 / 1e9)
            )));
        }
        lines.push(Line::from(s));
    }
    let disk = env.dest_disks.join("+");
    let mut d = vec![Span::styled(
        format!(
            "device {}  ",
            if disk.is_empty() {
                "-".to_string()
            } else {
                disk
            }
        ),
        t.label(),
    )];
    match k.device_bps {
        // The device's rate counts every writer on it, not only this copy.
        Some(b) => {
            d.push(Span::styled(u.rate(b), t.value()));
            d.push(Span::styled(" all writers", t.dim()));
        }
        None => d.push(na()),
    }
    d.push(Span::raw("  util "));
    match k.device_util_pct {
        Some(v) => d.push(Span::raw(format!("{v:.0} %"))),
        None => d.push(na()),
    }
    d.push(Span::styled("   system: ", t.label()));
    d.push(Span::raw("psi io "));
    match k.psi_some_pct {
        Some(v) => d.push(Span::raw(format!("{v:.0} %"))),
        None => d.push(na()),
    }
    d.push(Span::raw("  cpu "));
    match k.cpu_pct {
        Some(v) => d.push(Span::raw(format!("{v:.0} %"))),
        None => d.push(na()),
    }
    // `watch --net`: the receive rate, in the colour of its chart line.
    if let Some(b) = k.net_bps {
        d.push(Span::styled("   net rx ", t.label()));
        let style = if t.color {
            t.value().fg(crate::ui::chart::Overlay::NETWORK.color)
        } else {
            t.value()
        };
        d.push(Span::styled(u.rate(b), style));
    }
    lines.push(Line::from(d));
    if app.view.show_budget {
        lines.extend(budget_lines(app));
    }
    if let Some(note) = env.notes.first().filter(|_| with_note) {
        lines.push(Line::from(Span::styled(format!("note: {note}"), t.dim())));
    }
    lines
}

/// The writer's time budget so far (`b`), and the model's verdict once the copy has ended.
fn budget_lines(app: &View) -> Vec<Line<'static>> {
    let t = app.opts.theme;
    let b = app.model.budget();
    let bar = b.text_bar(30);
    let mut lines = vec![Line::from(vec![
        Span::styled("time  ".to_string(), t.label()),
        if bar.is_empty() {
            Span::styled("n/a (no thread states yet)".to_string(), t.dim())
        } else {
            Span::raw(bar)
        },
    ])];
    if app.model.copy_ended() {
        lines.push(Line::from(vec![
            Span::styled("verdict  ".to_string(), t.label()),
            Span::raw(app.model.verdict().text),
        ]));
    }
    lines
}

/// The kernel panel: the lines from [`kernel_lines`], as many as fit, each cut with the
/// ellipsis.
pub fn kernel(area: Rect, buf: &mut Buffer, lines: Vec<Line<'static>>, ellipsis: &str) {
    for (i, line) in lines.into_iter().take(area.height as usize).enumerate() {
        fit_line(line, area.width as usize, ellipsis).render(
            Rect {
                y: area.y + i as u16,
                height: 1,
                ..area
            },
            buf,
        );
    }
}

/// Below 30×7 the frame cannot hold the layout: one status line per row, as many as fit.
pub fn tiny(area: Rect, buf: &mut Buffer, app: &View) {
    let u = app.opts.units;
    let s = app.model.stats();
    let pct = fraction_done(app)
        .map(|f| format!("{:.0}%", f * 100.0))
        .unwrap_or_else(|| "..".into());
    let lines = [
        format!("{} {pct} {}", app.state.label(), u.rate(s.now_bps)),
        format!(
            "avg {} {}",
            u.rate(s.avg_bps),
            fmt_clock(app.now_ns as f64 / 1e9)
        ),
        format!("drops {}", s.drops),
    ];
    for (i, l) in lines.into_iter().take(area.height as usize).enumerate() {
        let row = Rect {
            y: area.y + i as u16,
            height: 1,
            ..area
        };
        render_fitted(Line::raw(l), row, buf, app.opts.theme.glyphs.ellipsis);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ellipsize_start_keeps_the_end() {
        assert_eq!(
            ellipsize_start("photos/2019/IMG_2231.CR2", 10, "…"),
            "…_2231.CR2"
        );
    }

    #[test]
    fn verify_counts_the_read_back_in_the_gauge_and_the_eta() {
        use crate::model::{Model, ModelConfig};
        use crate::ui::view::{Header, UiOptions};
        let model = Model::new(ModelConfig::default(), Default::default());
        let mut screen = crate::ui::view::Screen::new(
            Header {
                source: "s".into(),
                dest: "d".into(),
                fs: String::new(),
            },
            UiOptions {
                theme: crate::ui::theme::Theme::plain(false),
                units: crate::present::units::Units::Decimal,
                compact: false,
                then: None,
            },
        );
        screen.progress.bytes_total = 600;
        screen.progress.bytes_copied = 600;
        screen.progress.scan_done = true;
        screen.now_ns = 3_000_000_000;
        screen.state = RunState::Verifying;
        // Everything written, a third read back: 2/3 of the work in 3 s, 1.5 s to go.
        screen.verified = Some(200);
        let app = View {
            model: &model,
            screen: &screen,
        };
        assert!((fraction_done(&app).unwrap() - 2.0 / 3.0).abs() < 1e-9);
        assert!((eta_secs(&app).unwrap() - 1.5).abs() < 1e-9);
        // Without --verify the written bytes are the whole work.
        screen.verified = None;
        let app = View {
            model: &model,
            screen: &screen,
        };
        assert_eq!(fraction_done(&app), Some(1.0));
    }
}
