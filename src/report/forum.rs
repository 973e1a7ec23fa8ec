//! `copyscope report RECORDING`: one Markdown file for a GitHub issue or a forum post — the
//! figures, drops, verdict and time budget (the Markdown export), the text chart, the system
//! (kernel, OpenZFS, RAM, how the ETA compared with the real end) and every tunable with the
//! file it comes from, and the raw evidence around the worst drop (the pool's `txgs` rows, the
//! `dmu_tx` counters, the destination disks and the page cache over that window, or what the
//! recording lacks of them), so nobody has to paste kstats by hand.

use std::fmt::Write as _;
use std::path::Path;

use super::export::ChartData;
use super::export::markdown::render_markdown;
use super::export::text::render_text;
use super::recording::{RecordingCursor, RecordingError, Replayed, TimelineItem};
use crate::model::{EventKind, ModelConfig};
use crate::present::format::{fmt_bytes, fmt_event_time, fmt_pct, fmt_rate};
use crate::sample::{DiskCounters, DmuTx, Environment, PageCache, Sample, TxgRow};

/// Seconds of context kept on each side of the worst drop.
const CONTEXT_S: u64 = 5;
/// Width of the text chart in the report.
const CHART_COLS: usize = 100;

/// The worst drop: the one that lost the most bytes against its reference (the longest,
/// when none lost any: the writer stalled while the disks kept writing).
#[derive(Debug, Clone, PartialEq)]
pub struct WorstDrop {
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes_lost: f64,
    /// The model's words for it.
    pub text: String,
}

/// What the recording holds over the worst drop's window.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Window {
    /// Every txg row seen in the window, by txg number, in its last state seen.
    pub txgs: Vec<TxgRow>,
    pub dmu_first: Option<DmuTx>,
    pub dmu_last: Option<DmuTx>,
    pub disk_first: Option<(u64, DiskCounters)>,
    pub disk_last: Option<(u64, DiskCounters)>,
    /// The page cache (system-wide) at the window's first and last sample, and the highest
    /// dirty + writeback in it.
    pub page_first: Option<PageCache>,
    pub page_last: Option<PageCache>,
    pub page_peak: u64,
}

/// The report of the recording at `path`.
pub fn render_report(path: &Path, cfg: ModelConfig, ascii: bool) -> Result<String, RecordingError> {
    let run = Replayed::load(path, cfg)?;
    let data = ChartData::from_replayed(&run);
    let worst = worst_drop(&run);
    let window = match &worst {
        Some(w) => read_window(path, w)?,
        None => Window::default(),
    };
    let mut o = render_markdown(&data);
    let _ = writeln!(
        o,
        "\n#### Chart\n\n```text\n{}```",
        render_text(&data, CHART_COLS, ascii)
    );
    system(&run, &mut o);
    tunables(&run.header.environment, &mut o);
    match &worst {
        Some(w) => around_the_worst_drop(w, &window, &run.header.environment, &mut o),
        None => o.push_str("\n#### Around the worst drop\n\nNo drop in this run.\n"),
    }
    let _ = writeln!(
        o,
        "\n<sub>Made by copyscope {} from {}.</sub>",
        env!("CARGO_PKG_VERSION"),
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    Ok(o)
}

/// The model's drop that lost the most bytes.
pub fn worst_drop(run: &Replayed) -> Option<WorstDrop> {
    run.model
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Drop(d) => Some(WorstDrop {
                start_ns: e.t_ns,
                end_ns: d.end_ns,
                bytes_lost: d.bytes_lost,
                text: e.describe(),
            }),
            _ => None,
        })
        .max_by(|a, b| {
            let len = |w: &WorstDrop| w.end_ns.saturating_sub(w.start_ns);
            a.bytes_lost
                .total_cmp(&b.bytes_lost)
                .then(len(a).cmp(&len(b)))
        })
}

/// Streams the recording once more and keeps what its samples say over `w` and
/// [`CONTEXT_S`] on each side.
pub fn read_window(path: &Path, w: &WorstDrop) -> Result<Window, RecordingError> {
    let (mut cursor, _, _) = RecordingCursor::open(path)?;
    let from = w.start_ns.saturating_sub(CONTEXT_S * 1_000_000_000);
    let to = w.end_ns.saturating_add(CONTEXT_S * 1_000_000_000);
    let mut win = Window::default();
    while let Some(item) = cursor.next_item() {
        let TimelineItem::Sample(s) = item else {
            continue;
        };
        if s.t_ns > to {
            break;
        }
        if s.t_ns >= from {
            win.add(&s);
        }
    }
    Ok(win)
}

impl Window {
    fn add(&mut self, s: &Sample) {
        if let Some(z) = &s.zfs {
            for row in &z.txgs {
                match self.txgs.iter_mut().find(|r| r.txg == row.txg) {
                    Some(r) => *r = *row,
                    None => self.txgs.push(*row),
                }
            }
            self.dmu_first.get_or_insert(z.dmu_tx);
            self.dmu_last = Some(z.dmu_tx);
        }
        if let Some(p) = s.page_cache {
            self.page_first.get_or_insert(p);
            self.page_last = Some(p);
            self.page_peak = self.page_peak.max(p.dirty.saturating_add(p.writeback));
        }
        if let Some(d) = s.dest_disk {
            self.disk_first.get_or_insert((s.t_ns, d));
            self.disk_last = Some((s.t_ns, d));
        }
        self.txgs.sort_by_key(|r| r.txg);
    }
}

fn system(run: &Replayed, o: &mut String) {
    let h = &run.header;
    let e = &h.environment;
    o.push_str("\n#### System\n\n| | |\n|---|---|\n");
    let mut row = |k: &str, v: String| {
        if !v.is_empty() {
            let _ = writeln!(o, "| {k} | {} |", v.replace('|', "\\|"));
        }
    };
    row("kernel", h.kernel.clone());
    row("host", h.host.clone());
    row("command", h.command_line.join(" "));
    row("file system", e.fs_type.clone().unwrap_or_default());
    row("mounted", e.mount_source.clone().unwrap_or_default());
    row("on", e.mount_point.clone().unwrap_or_default());
    row("ZFS dataset", e.zfs_dataset.clone().unwrap_or_default());
    if e.zfs_pool.is_some() || e.fs_type.as_deref() == Some("zfs") {
        row(
            "OpenZFS",
            e.zfs_version.clone().unwrap_or_else(|| {
                "not recorded (a recording made before copyscope kept /sys/module/zfs/version)"
                    .to_string()
            }),
        );
    }
    row("disks", e.dest_disks.join(", "));
    row("RAM", e.mem_total.map(fmt_bytes).unwrap_or_default());
    if let Some(c) = run.model.eta_check().filter(|c| c.real.is_some()) {
        row("ETA", c.describe());
    }
}

/// Where a tunable of the header is read from.
pub fn tunable_source(name: &str) -> String {
    match name.strip_prefix("vm.") {
        Some(rest) => format!("/proc/sys/vm/{rest}"),
        None => format!("/sys/module/zfs/parameters/{name}"),
    }
}

fn tunables(e: &Environment, o: &mut String) {
    if e.tunables.is_empty() {
        return;
    }
    o.push_str("\n#### Tunables\n\n| name | value | read from |\n|---|---|---|\n");
    for (name, value) in &e.tunables {
        let _ = writeln!(o, "| `{name}` | `{value}` | `{}` |", tunable_source(name));
    }
}

fn around_the_worst_drop(w: &WorstDrop, win: &Window, e: &Environment, o: &mut String) {
    let _ = writeln!(
        o,
        "\n#### Around the worst drop\n\nAt {}: {}.\n\nBelow, what the recording holds from \
         {CONTEXT_S} s before it to {CONTEXT_S} s after.",
        fmt_event_time(w.start_ns),
        w.text.replace('|', "\\|"),
    );
    zfs_kstats(win, e, o);
    disks_and_page_cache(win, e, o);
}

/// The pool's `txgs` rows and the `dmu_tx` increases over the window (or that the recording
/// holds no rows).
fn zfs_kstats(win: &Window, e: &Environment, o: &mut String) {
    if !win.txgs.is_empty() {
        let pool = e.zfs_pool.as_deref().unwrap_or("POOL");
        let _ = writeln!(
            o,
            "\n`/proc/spl/kstat/zfs/{pool}/txgs` (times in ns):\n\n```text\n{:>8} {:>16} {:>5} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "txg", "birth", "state", "ndirty", "nwritten", "otime", "qtime", "stime"
        );
        for r in &win.txgs {
            let _ = writeln!(
                o,
                "{:>8} {:>16} {:>5} {:>12} {:>12} {:>12} {:>12} {:>12}",
                r.txg, r.birth, r.state, r.ndirty, r.nwritten, r.otime, r.qtime, r.stime
            );
        }
        o.push_str("```\n");
    } else if e.zfs_pool.is_some() {
        o.push_str(
            "\nThe recording holds no `txgs` rows for this window (`zfs_txg_history` 0, or the \
             kstat unreadable: see the notes).\n",
        );
    }
    if let (Some(a), Some(b)) = (win.dmu_first, win.dmu_last) {
        o.push_str("\n`/proc/spl/kstat/zfs/dmu_tx` over the window (increase):\n\n");
        o.push_str("| counter | increase |\n|---|---|\n");
        for (name, x, y) in [
            ("dmu_tx_assigned", a.assigned, b.assigned),
            ("dmu_tx_delay", a.delay, b.delay),
            ("dmu_tx_dirty_throttle", a.dirty_throttle, b.dirty_throttle),
            ("dmu_tx_dirty_delay", a.dirty_delay, b.dirty_delay),
            ("dmu_tx_dirty_over_max", a.dirty_over_max, b.dirty_over_max),
        ] {
            let _ = writeln!(o, "| `{name}` | {} |", y.saturating_sub(x));
        }
    }
}

/// The destination disks' figures over the window (or that it holds none), and on a page-cache
/// destination the system's dirty data against its thresholds.
fn disks_and_page_cache(win: &Window, e: &Environment, o: &mut String) {
    if let (Some((t0, a)), Some((t1, b))) = (win.disk_first, win.disk_last)
        && t1 > t0
    {
        let secs = (t1 - t0) as f64 / 1e9;
        let written = b.sectors_written.saturating_sub(a.sectors_written) * 512;
        let busy_ms =
            b.io_ticks_ms.saturating_sub(a.io_ticks_ms) as f64 / f64::from(b.disks.max(1));
        let _ = writeln!(
            o,
            "\nDestination disks ({}) over the window: {} written, {}, busy {} of the time.",
            e.dest_disks.join(", "),
            fmt_bytes(written),
            fmt_rate(written as f64 / secs),
            fmt_pct((busy_ms / 10.0 / secs).min(100.0))
        );
    } else {
        o.push_str("\nThe recording holds no destination disk counters for this window.\n");
    }
    if e.zfs_pool.is_none()
        && let (Some(a), Some(b)) = (win.page_first, win.page_last)
    {
        let dw = |p: &PageCache| p.dirty.saturating_add(p.writeback);
        let _ = writeln!(
            o,
            "\nPage cache over the window (`/proc/vmstat`, every writer's): dirty + writeback {} \
             → {}, at most {}; background threshold {}, dirty threshold {}.",
            fmt_bytes(dw(&a)),
            fmt_bytes(dw(&b)),
            fmt_bytes(win.page_peak),
            fmt_bytes(b.bg_thresh),
            fmt_bytes(b.thresh),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunables_name_their_files() {
        assert_eq!(tunable_source("vm.dirty_bytes"), "/proc/sys/vm/dirty_bytes");
        assert_eq!(
            tunable_source("zfs_dirty_data_max"),
            "/sys/module/zfs/parameters/zfs_dirty_data_max"
        );
    }
}
