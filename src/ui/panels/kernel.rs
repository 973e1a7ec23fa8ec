//! The kernel panel: this copy's backlog and the page cache, the ZFS pool, the device, pressure and
//! CPU.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::budget::budget_lines;
use super::fit::fit_line;
use crate::model::{BacklogScope, KernelView, ZfsView};
use crate::present::format::fmt_pct;
use crate::ui::view::View;

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

/// The kernel panel's lines (page cache, ZFS, device/pressure/CPU), "n/a" where missing.
/// Each figure says whose it is: this copy's backlog is its own data; Dirty, Writeback, the
/// device's rate, PSI and CPU count every writer on the machine.
pub fn kernel_lines(app: &View, with_note: bool) -> Vec<Line<'static>> {
    let k: KernelView = app.model.kernel();
    let mut lines = vec![page_cache_line(app, &k)];
    if let Some(z) = &k.zfs {
        lines.push(zfs_line(app, z));
    }
    lines.push(device_line(app, &k));
    if app.view.show_budget {
        lines.extend(budget_lines(app));
    }
    let env = app.model.env();
    if let Some(note) = env.notes.first().filter(|_| with_note) {
        lines.push(Line::from(Span::styled(
            format!("note: {note}"),
            app.opts.theme.dim(),
        )));
    }
    lines
}

/// "this copy: to flush 120 MB   system: dirty 1.20 GB  writeback …  limit …" ("watched:"
/// in a watch).
fn page_cache_line(app: &View, k: &KernelView) -> Line<'static> {
    let t = app.opts.theme;
    let u = app.opts.units;
    let on_zfs = k.zfs.is_some();
    // A watch has no copy of its own: its backlog is the watched writers'.
    let whose = if app.watch {
        "watched: "
    } else {
        "this copy: "
    };
    let mut pc = vec![Span::styled(whose, t.label())];
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
    Line::from(pc)
}

/// "zfs tank  txg 1234 open  1233 syncing  dirty [gauge] 40 % of 4.00 GB …".
fn zfs_line(app: &View, z: &ZfsView) -> Line<'static> {
    let t = app.opts.theme;
    let u = app.opts.units;
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
                " {} of {}",
                fmt_pct(frac * 100.0),
                u.size(max)
            )));
            if let (Some(sp), Some(dp)) = (z.sync_pct, z.delay_pct) {
                s.push(Span::styled(
                    format!(
                        " (sync {}, delay {})",
                        fmt_pct(f64::from(sp)),
                        fmt_pct(f64::from(dp))
                    ),
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
    Line::from(s)
}

/// "device sda  118 MB/s all writers  util 97 %   system: psi io 40 %  cpu 12 %".
fn device_line(app: &View, k: &KernelView) -> Line<'static> {
    let t = app.opts.theme;
    let u = app.opts.units;
    let env = app.model.env();
    let na = || Span::styled("n/a".to_string(), t.dim());
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
        Some(v) => d.push(Span::raw(fmt_pct(v))),
        None => d.push(na()),
    }
    d.push(Span::styled("   system: ", t.label()));
    d.push(Span::raw("psi io "));
    match k.psi_some_pct {
        Some(v) => d.push(Span::raw(fmt_pct(v))),
        None => d.push(na()),
    }
    d.push(Span::raw("  cpu "));
    match k.cpu_pct {
        Some(v) => d.push(Span::raw(fmt_pct(v))),
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
    Line::from(d)
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
