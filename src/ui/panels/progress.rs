//! The progress rows: the bytes gauge with percent, files and ETA (to cache and on disk), then
//! the current file, the flush or the cancel.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::fit::{cells, ellipsize_end, ellipsize_start, render_fitted};
use crate::model::BacklogScope;
use crate::present::format::{fmt_clock, fmt_count, fmt_pct_done};
use crate::present::quote::shell_escape;
use crate::ui::view::{RunState, View};

/// Bytes done and bytes of work: under `--verify` writing and reading back are each half the
/// work.
fn work_done(app: &View) -> (u64, u64) {
    let p = &app.progress;
    match app.verified {
        Some(v) => (p.bytes_copied + v, 2 * p.bytes_total),
        None => (p.bytes_copied, p.bytes_total),
    }
}

/// Fraction of bytes done, once the total is known and non-zero.
pub fn fraction_done(app: &View) -> Option<f64> {
    let (done, work) = work_done(app);
    (work > 0).then(|| (done as f64 / work as f64).clamp(0.0, 1.0))
}

/// The percentage done, once the total is known and non-zero: `42 %`.
pub fn pct_done(app: &View) -> Option<String> {
    let (done, work) = work_done(app);
    (work > 0).then(|| fmt_pct_done(done, work))
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

/// The ETA's words, longest first (the row keeps the longest that fits): both finish times
/// while copying, the disk's while flushing, from the model ([`crate::model::Eta::texts`]);
/// under `--verify` the work left at the pace so far; a pipe's, its input's end at the
/// average rate; "done" or "cancelled" at the end.
pub fn eta_texts(app: &View) -> Vec<String> {
    let t = app.opts.theme;
    let shaped = |s: String| {
        if t.ascii() {
            crate::present::text::asciify(&s)
        } else {
            s
        }
    };
    let clock =
        |e: Option<f64>| e.map_or("ETA --:--".to_string(), |e| format!("ETA {}", fmt_clock(e)));
    match (app.state, app.verified) {
        (RunState::Done, _) => vec!["done".to_string()],
        (RunState::Cancelled, _) => vec!["cancelled".to_string()],
        (RunState::Verifying | RunState::Paused, Some(_)) => vec![clock(eta_secs(app))],
        // A pipe writes no cache of its own to wait for: the end of its input.
        _ if app.pipe => vec![clock(app.model.eta_secs(false))],
        _ => match app.model.eta() {
            Some(e) => e
                .texts(app.state == RunState::Flushing)
                .into_iter()
                .map(|s| shaped(format!("ETA {s}")))
                .collect(),
            None => vec![clock(None)],
        },
    }
}

fn gauge(width: usize, frac: f64, app: &View) -> (String, String) {
    let g = app.opts.theme.glyphs;
    let done = ((frac.clamp(0.0, 1.0)) * width as f64).round() as usize;
    (g.gauge_full.repeat(done), g.empty_bar.repeat(width - done))
}

/// The progress rows: the bytes gauge with files and ETA, then the current file (or the flush).
pub fn progress(area: Rect, buf: &mut Buffer, app: &View, with_gauge: bool) {
    if area.height == 0 {
        return;
    }
    if app.watch {
        watch_progress(area, buf, app);
        return;
    }
    if app.pipe && !app.progress.scan_done {
        passed_row(Rect { height: 1, ..area }, buf, app);
        return;
    }
    bytes_row(Rect { height: 1, ..area }, buf, app, with_gauge);
    if area.height < 2 {
        return;
    }
    let row1 = Rect {
        y: area.y + 1,
        height: 1,
        ..area
    };
    let t = app.opts.theme;
    match app.state {
        RunState::Flushing => render_fitted(flush_line(app), row1, buf, t.glyphs.ellipsis),
        _ if app.cancelling.is_some() => {
            let u = app.opts.units;
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
        _ => current_file_row(row1, buf, app),
    }
}

/// "42 %  1.20 GB / 2.90 GB  files 120 / 300  ETA to cache 00:40 · on disk 00:42", after
/// the gauge when there is one: percent and the whole ETA first; then the bytes, then the
/// files, then the ETA's longer words, as far as the width allows (shown in reading order).
fn bytes_row(row: Rect, buf: &mut Buffer, app: &View, with_gauge: bool) {
    let t = app.opts.theme;
    let u = app.opts.units;
    let p = &app.progress;
    let plus = if p.scan_done { "" } else { "+" };
    let pct = if p.scan_done {
        let (done, work) = work_done(app);
        format!("{:>5}", fmt_pct_done(done, work))
    } else {
        "estimating".to_string()
    };
    let etas = eta_texts(app);
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
    let compose = |with_bytes: bool, with_files: bool, eta: &str| {
        let mut parts = vec![pct.as_str()];
        if with_bytes {
            parts.push(&bytes);
        }
        if with_files {
            parts.push(&files);
        }
        parts.push(eta);
        parts.join("  ")
    };
    let w = row.width as usize;
    let (full, shortest) = (&etas[0], &etas[etas.len() - 1]);
    // A pipe has no files.
    let text = [(true, !app.pipe), (true, false)]
        .into_iter()
        .map(|(b, f)| compose(b, f, full))
        .chain(etas.iter().map(|e| compose(false, false, e)))
        .find(|t| cells(t) <= w)
        .unwrap_or_else(|| compose(false, false, shortest));
    let e = t.glyphs.ellipsis;
    if !with_gauge {
        render_fitted(Line::from(text), row, buf, e);
        return;
    }
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
    render_fitted(Line::from(spans), row, buf, e);
}

/// The flush's row: what is left to write of the backlog the flush started with, on a gauge;
/// without this copy's figures, the wait for syncfs.
fn flush_line(app: &View) -> Line<'static> {
    let t = app.opts.theme;
    let u = app.opts.units;
    let k = app.model.kernel();
    let (Some(b), Some(start)) = (k.this_copy_backlog, app.flush_start_dirty) else {
        return syncfs_wait(app);
    };
    if start == 0 {
        return syncfs_wait(app);
    }
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
        Span::raw(format!(
            " {}",
            fmt_pct_done(start - b.bytes.min(start), start)
        )),
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

fn syncfs_wait(app: &View) -> Line<'static> {
    Line::from(Span::styled(
        "flushing: waiting for the filesystem to report the data durable (syncfs)",
        app.opts.theme.warn(),
    ))
}

/// A path as the progress rows show it: quoted for the terminal, and under `--ascii`
/// transliterated as a whole, so "ß" stays "ss" and wide characters keep their width.
fn shown_name(path: &std::path::Path, app: &View) -> String {
    let name = shell_escape(path);
    if app.opts.theme.ascii() {
        crate::present::text::asciify(&name)
    } else {
        name.into_owned()
    }
}

/// The file being copied, with its own gauge and percentage.
fn current_file_row(row: Rect, buf: &mut Buffer, app: &View) {
    let Some(cur) = &app.current else {
        return;
    };
    let t = app.opts.theme;
    let name = shown_name(&cur.path, app);
    let frac = if cur.size > 0 {
        cur.done as f64 / cur.size as f64
    } else {
        1.0
    };
    let tail = format!("  {:>5}", fmt_pct_done(cur.done, cur.size));
    let bar_w = 10usize.min((row.width as usize).saturating_sub(20));
    let name_w = (row.width as usize).saturating_sub(bar_w + tail.len() + 2);
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
    .render(row, buf);
}

/// A pipe's progress row without a size (`-s`): what passed so far.
fn passed_row(row: Rect, buf: &mut Buffer, app: &View) {
    let t = app.opts.theme;
    let u = app.opts.units;
    let state = match app.state {
        RunState::Done => "  done",
        RunState::Cancelled => "  cancelled",
        _ => "",
    };
    Line::from(vec![
        Span::styled("passed ", t.label()),
        Span::raw(format!("{}{state}", u.size(app.progress.bytes_copied))),
    ])
    .render(row, buf);
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
    let name = shown_name(&cur.path, app);
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

#[cfg(test)]
mod tests {
    use super::*;

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
