//! The texts of `copyscope pipe` where a copy prints its own: the progress line (rewritten in
//! place on a terminal, as pv's) and the summary's first line.

use std::time::Duration;

use crate::copy::pipe::EndKind;
use crate::copy::{CopyOutcome, ProgressSnapshot};
use crate::exit::ExitStatus;
use crate::present::format::{fmt_bytes_with, fmt_clock, fmt_pct_done, fmt_rate_with, fmt_secs};
use crate::sample::PipeEnds;

/// "[00:05] 1.23 GB / 2.68 GB  45 %  now 245 MB/s  avg 230 MB/s  ETA 00:06" — the total,
/// percent and ETA only when the size is known (`-s`, or a file on stdin).
pub fn progress_line(
    elapsed: Duration,
    snap: &ProgressSnapshot,
    (now_bps, avg_bps): (f64, f64),
    eta_s: Option<f64>,
    binary: bool,
) -> String {
    let t = fmt_clock(elapsed.as_secs_f64());
    let passed = fmt_bytes_with(snap.bytes_copied, binary);
    let rates = format!(
        "now {}  avg {}",
        fmt_rate_with(now_bps, binary),
        fmt_rate_with(avg_bps, binary)
    );
    if !snap.scan_done || snap.bytes_total == 0 {
        return format!("[{t}] {passed}  {rates}");
    }
    let eta = eta_s.map_or_else(
        || "ETA --:--".to_string(),
        |e| format!("ETA {}", fmt_clock(e)),
    );
    format!(
        "[{t}] {passed} / {}  {}  {rates}  {eta}",
        fmt_bytes_with(snap.bytes_total, binary),
        fmt_pct_done(snap.bytes_copied, snap.bytes_total)
    )
}

/// "stalled: pipe reader": what holds the drop in progress, for the line rewritten in place.
pub fn held_by(open: &crate::model::Event) -> String {
    match &open.kind {
        crate::model::EventKind::Drop(d) => format!(
            "stalled: {}",
            d.causes.first().map_or("unknown", |c| c.label())
        ),
        _ => String::new(),
    }
}

/// "stdin (pipe)", "stdout (file)".
pub fn end_label(name: &str, kind: EndKind) -> String {
    format!("{name} ({})", kind.word())
}

/// "copyscope: done: 2.00 GB from stdin (pipe) to stdout (file) in 8.2 s", and the error
/// that stopped it.
pub fn summary_line(ends: &PipeEnds, o: &CopyOutcome, secs: f64, binary: bool) -> String {
    let head = match o.status {
        ExitStatus::Success | ExitStatus::Partial => "done",
        ExitStatus::BrokenPipe => "the reader closed the pipe",
        ExitStatus::Cancelled => "cancelled",
        ExitStatus::Fatal => "stopped",
    };
    let mut s = format!(
        "copyscope: {head}: {} from {} to {} in {}\n",
        fmt_bytes_with(o.bytes_copied, binary),
        end_label("stdin", ends.input),
        end_label("stdout", ends.output),
        fmt_secs(secs)
    );
    if let Some(f) = &o.fatal {
        s.push_str(&format!("  error: {f}\n"));
    }
    s
}

/// What the summary says instead of a durable rate: a pipe never syncs.
pub const NOT_DURABLE: &str = "durable: n/a (a pipe does not sync)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_has_percent_and_eta_only_with_a_size() {
        let mut snap = ProgressSnapshot {
            bytes_copied: 1_230_000_000,
            ..ProgressSnapshot::default()
        };
        let t = Duration::from_secs(5);
        assert_eq!(
            progress_line(t, &snap, (245e6, 230e6), None, false),
            "[00:05] 1.23 GB  now 245 MB/s  avg 230 MB/s"
        );
        snap.bytes_total = 2_680_000_000;
        snap.scan_done = true;
        assert_eq!(
            progress_line(t, &snap, (245e6, 230e6), Some(6.3), false),
            "[00:05] 1.23 GB / 2.68 GB  45 %  now 245 MB/s  avg 230 MB/s  ETA 00:06"
        );
    }
}
