//! The texts of the output without a terminal UI: the 2-second progress line and the summary
//! (`--plain`, or stdout not a terminal). The loop that prints them is `report::stream`.

use std::time::Duration;

use crate::copy::{CopyOutcome, ProgressSnapshot, SyncMode};
use crate::exit::ExitStatus;
use crate::model::{Backlog, BacklogScope, Eta, Stats};
use crate::present::format::{fmt_bytes_with, fmt_clock, fmt_pct_done, fmt_rate_with, fmt_secs};
use crate::present::quote::file_line;

/// Plain progress lines come this often.
pub const PLAIN_LINE_EVERY: Duration = Duration::from_secs(2);

/// How the plain/JSON frontend prints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlainSettings {
    pub json: bool,
    /// JSON progress objects come once per interval.
    pub interval: Duration,
    /// MiB/s instead of MB/s.
    pub binary: bool,
}

/// What the copy is doing, for the progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Copying,
    /// `--verify`: each file is copied, then read back from the device.
    CopyVerify,
    Paused,
    Flushing,
    Done,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Copying => "copying",
            Phase::CopyVerify => "copying+verifying",
            Phase::Paused => "paused",
            Phase::Flushing => "flushing",
            Phase::Done => "done",
        }
    }
}

/// The model's figures a progress line prints: speeds, its ETA (copy plus the flush of the
/// data still in RAM, [`crate::model::Model::eta_secs`]), both finish times with their band
/// ([`crate::model::Model::eta`]) and that backlog.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LineFigures {
    pub now_bps: f64,
    pub avg_bps: f64,
    pub eta_s: Option<f64>,
    pub eta: Option<Eta>,
    /// This copy's data still to reach the disk, or the system's dirty data when the
    /// destination's counters are unknown ([`crate::model::Model::flush_backlog`]).
    pub backlog: Option<Backlog>,
}

impl LineFigures {
    /// The figures of `model` now.
    pub fn of(model: &crate::model::Model) -> LineFigures {
        let st = model.stats();
        LineFigures {
            now_bps: st.now_bps,
            avg_bps: st.avg_bps,
            eta_s: model.eta_secs(true),
            eta: model.eta(),
            backlog: model.flush_backlog(),
        }
    }
}

/// The 2-second line.
pub fn progress_line(
    elapsed: Duration,
    phase: Phase,
    snap: &ProgressSnapshot,
    f: LineFigures,
    binary: bool,
) -> String {
    let LineFigures {
        now_bps, avg_bps, ..
    } = f;
    let t = fmt_clock(elapsed.as_secs_f64());
    let eta = f
        .eta_s
        .map_or_else(|| "ETA --".to_string(), |e| format!("ETA {}", fmt_clock(e)));
    if phase == Phase::Flushing {
        // Not "100 % … ETA 0:00" for the whole flush: what is left, and when it will be on disk.
        // Whose data it is: this copy's, or every writer's when the destination's
        // disks are unknown — the words of the flush event.
        return match f.backlog {
            Some(Backlog {
                bytes: b,
                scope: BacklogScope::ThisCopy,
            }) if b > 0 => format!(
                "[{t}] flushing this copy's {} to disk, {eta}  ({} copied)",
                fmt_bytes_with(b, binary),
                fmt_bytes_with(snap.bytes_copied, binary)
            ),
            Some(Backlog {
                bytes: b,
                scope: BacklogScope::System,
            }) if b > 0 => format!(
                "[{t}] flushing to disk (system: dirty {}, all writers), {eta}  ({} copied)",
                fmt_bytes_with(b, binary),
                fmt_bytes_with(snap.bytes_copied, binary)
            ),
            _ => format!(
                "[{t}] flushing: {} copied, waiting for the disk (syncfs), {eta}",
                fmt_bytes_with(snap.bytes_copied, binary)
            ),
        };
    }
    // Copying: both finish times, "ETA to cache 00:40 · on disk 03:10 (± 20 s)".
    let eta = f.eta.map_or(eta, |e| format!("ETA {}", e.describe(true)));
    let (total, files_total, pct, eta) = if snap.scan_done {
        (
            fmt_bytes_with(snap.bytes_total, binary),
            snap.files_total.to_string(),
            fmt_pct_done(snap.bytes_copied, snap.bytes_total),
            eta,
        )
    } else {
        (
            format!("{}+", fmt_bytes_with(snap.bytes_total, binary)),
            format!("{}+", snap.files_total),
            "estimating".to_string(),
            "ETA estimating".to_string(),
        )
    };
    let failed = if snap.files_failed > 0 {
        format!("  failed/skipped {}", snap.files_failed)
    } else {
        String::new()
    };
    format!(
        "[{t}] {} {} / {total} {pct}  files {}/{files_total}{failed}  now {}  avg {}  {eta}",
        phase.as_str(),
        fmt_bytes_with(snap.bytes_copied, binary),
        snap.files_done,
        fmt_rate_with(now_bps, binary),
        fmt_rate_with(avg_bps, binary),
    )
}

/// The 2-second line under `--verify`: every byte is written, then read back from the device,
/// so the work is twice the bytes; the percentage and the ETA count both halves (the written
/// bytes alone would reach 100 % and "ETA 0:00" while the largest file is still being read back).
pub fn verify_line(
    elapsed: Duration,
    snap: &ProgressSnapshot,
    verified: u64,
    binary: bool,
) -> String {
    let t = fmt_clock(elapsed.as_secs_f64());
    let secs = elapsed.as_secs_f64();
    let done = snap.bytes_copied + verified;
    let (total, pct, eta) = if snap.scan_done {
        let work = 2 * snap.bytes_total;
        let eta = if done > 0 && secs > 0.0 {
            format!(
                "ETA {}",
                fmt_clock(work.saturating_sub(done) as f64 * secs / done as f64)
            )
        } else {
            "ETA --".to_string()
        };
        (
            fmt_bytes_with(snap.bytes_total, binary),
            fmt_pct_done(done, work),
            eta,
        )
    } else {
        (
            format!("{}+", fmt_bytes_with(snap.bytes_total, binary)),
            "estimating".to_string(),
            "ETA estimating".to_string(),
        )
    };
    let avg = if secs > 0.0 {
        snap.bytes_copied as f64 / secs
    } else {
        0.0
    };
    format!(
        "[{t}] copying+verifying {} written, {} read back / {total} {pct}  files {}/{}  avg {} (copy and read-back)  {eta}",
        fmt_bytes_with(snap.bytes_copied, binary),
        fmt_bytes_with(verified, binary),
        snap.files_done,
        snap.files_total,
        fmt_rate_with(avg, binary),
    )
}

fn issue_block(out: &mut String, title: &str, items: &[crate::copy::FileIssue]) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("  {title} ({}):\n", items.len()));
    for i in items.iter().take(50) {
        out.push_str(&format!("    {}\n", file_line(&i.path, &i.message)));
    }
    if items.len() > 50 {
        out.push_str(&format!("    ... and {} more\n", items.len() - 50));
    }
}

/// The model's figures, as every text summary words them: "speed to cache A (min B, peak C),
/// DURABLE" and, when there were drops, "drops: N (T s lost: cause S s, ...)".
pub fn speeds_text(st: &Stats, durable: &str, binary: bool) -> String {
    speeds_text_as(st, "speed to cache", durable, binary)
}

/// [`speeds_text`] with its own name for the average ("read from the device" for a bench
/// phase that reads).
pub fn speeds_text_as(st: &Stats, what: &str, durable: &str, binary: bool) -> String {
    // A copy shorter than one sample interval (or a summary without a model) has no per-tick
    // speed: "n/a", not "min 0, peak 0".
    let extremes = if st.peak_bps > 0.0 {
        format!(
            "min {}, peak {}",
            fmt_rate_with(st.min_bps, binary),
            fmt_rate_with(st.peak_bps, binary)
        )
    } else {
        "min/peak n/a".to_string()
    };
    let mut s = format!(
        "  {what} {} ({extremes}), {durable}\n",
        fmt_rate_with(st.avg_bps, binary),
    );
    if let Some(n) = &st.net {
        s.push_str(&format!("  {}\n", net_text(n, binary)));
    }
    if st.drops > 0 {
        // Causes that round to 0.0 s cost nothing worth naming.
        let lost: Vec<String> = st
            .lost_secs_by_cause
            .iter()
            .filter(|(_, v)| *v >= 0.05)
            .map(|(k, v)| format!("{k} {}", fmt_secs(*v)))
            .collect();
        // Measured against the sustained rate, drops the disks' backlog covered cost nothing:
        // then there is no cause to list after the total.
        let causes = if lost.is_empty() {
            String::new()
        } else {
            format!(": {}", lost.join(", "))
        };
        s.push_str(&format!(
            "  drops: {} ({} lost{causes})\n",
            st.drops,
            fmt_secs(st.lost_total_secs()),
        ));
    }
    s
}

/// `watch --net`: "network rx: avg A (min B, peak C)", the model's receive figures worded as
/// the intake's are, for every text output (summaries, exports).
pub fn net_text(n: &crate::model::NetStats, binary: bool) -> String {
    format!(
        "network rx: avg {} (min {}, peak {})",
        fmt_rate_with(n.avg_bps, binary),
        fmt_rate_with(n.min_bps, binary),
        fmt_rate_with(n.peak_bps, binary)
    )
}

/// The end-of-run summary: bytes, files, times, the model's speeds and drops (`st`, the same
/// figures as the TUI header and every export), problems, verification. Without a model (the
/// TUI never started) the engine's own two speeds stand in.
pub fn summary_text(o: &CopyOutcome, st: Option<&Stats>, binary: bool) -> String {
    summary_text_as(o, st, binary, Reads::No)
}

/// What a bench phase's recording header (`bench`) says about its data: true for a phase that
/// reads back (its summary then speaks of reading, not of copying and flushing).
/// What a run read back from, for a bench phase that reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// Not a read: a copy, a write phase.
    No,
    /// A device (uncached), or on ZFS perhaps the ARC.
    Device,
    /// A filesystem in RAM (tmpfs, ramfs): there is no device to read.
    Memory,
}

/// Whether the bench phase `bench` (of a recording's header) reads, and from what, on the
/// filesystem `fs_type`.
pub fn reads(bench: Option<&str>, fs_type: Option<&str>) -> Reads {
    let reading = bench
        .and_then(crate::copy::bench::Phase::named)
        .is_some_and(|p| !p.writes());
    match (reading, fs_type) {
        (false, _) => Reads::No,
        (true, Some("tmpfs" | "ramfs")) => Reads::Memory,
        (true, _) => Reads::Device,
    }
}

/// [`summary_text`]; `reads`: a bench phase that reads back what an earlier phase wrote and
/// flushed, after dropping its cached pages, so its rate is the device's (or the ZFS ARC's)
/// read rate and there is nothing to make durable.
#[expect(
    clippy::too_many_lines,
    reason = "the plain summary's lines in the order they are printed"
)]
pub fn summary_text_as(o: &CopyOutcome, st: Option<&Stats>, binary: bool, from: Reads) -> String {
    let reads = from != Reads::No;
    let engine_only;
    let st = match st {
        Some(st) => st,
        None => {
            engine_only = Stats::of_engine(o.to_cache_bps, o.durable_bps);
            &engine_only
        }
    };
    let mut s = String::new();
    let head = match o.status {
        ExitStatus::Success => "done",
        ExitStatus::Partial => "done with errors",
        ExitStatus::Fatal => "stopped",
        ExitStatus::Cancelled => "cancelled",
        ExitStatus::BrokenPipe => "the reader closed the pipe",
    };
    s.push_str(&format!(
        "copyscope: {head}: {} in {}, {} {}",
        fmt_bytes_with(o.bytes_copied, binary),
        crate::present::format::fmt_files(o.files_copied),
        if reads { "read" } else { "copy" },
        // The model's copy time, which its speeds divide by; the engine's where none ran.
        fmt_secs(if st.bytes > 0 {
            st.copy_secs
        } else {
            o.copy_secs
        })
    ));
    // The model's flush time, as its "flushed in" event said it (one voice); the engine's own
    // measure where no model ran.
    if let Some(f) = o.flush_secs.map(|e| st.flush_secs.unwrap_or(e)) {
        s.push_str(&format!(", flush {}", fmt_secs(f)));
    }
    s.push('\n');
    if let Some(f) = &o.fatal {
        s.push_str(&format!("  error: {f}\n"));
    }
    if o.flush_abandoned {
        s.push_str("  all files complete; flush not awaited (cancelled during the flush: the kernel writes the rest back on its own)\n");
    }
    if o.status == ExitStatus::Cancelled {
        s.push_str("  unfinished files were removed; every file under its real name is complete\n");
    }
    let durable = match (st.durable_bps, o.sync) {
        _ if from == Reads::Memory => "tmpfs keeps its files in RAM: there is no device to read, and a read has nothing to make durable".to_string(),
        _ if reads => "uncached: each file's pages were dropped first (posix_fadvise(DONTNEED)), so this is the device's read rate (on ZFS the ARC may still serve it); a read has nothing to make durable".to_string(),
        // Each file is fsynced, then read back before the next: the rate counts the read-back.
        (Some(d), _) if o.verify.is_some() => format!("durable {} (fsync per file and read back: --verify)", fmt_rate_with(d, binary)),
        (Some(d), SyncMode::PerFile) => format!("durable {} (fsync per file)", fmt_rate_with(d, binary)),
        (Some(d), _) => format!("durable {} (after syncfs)", fmt_rate_with(d, binary)),
        (None, SyncMode::None) => {
            "durable: not measured (--no-sync: data may still be in RAM)".to_string()
        }
        (None, _) if o.flush_abandoned => "durable: not awaited".to_string(),
        (None, _) => "durable: not reached".to_string(),
    };
    let what = match from {
        Reads::Memory => "read from memory",
        Reads::Device => "read from the device",
        Reads::No => "speed to cache",
    };
    s.push_str(&speeds_text_as(st, what, &durable, binary));
    if o.bytes_cloned > 0 {
        s.push_str(&format!(
            "  {} shared with the source by reflink (no data copied)\n",
            fmt_bytes_with(o.bytes_cloned, binary)
        ));
    }
    if let Some(v) = &o.verify {
        if v.mismatches == 0 {
            s.push_str(&format!(
                "  verified {}: all match ({})\n",
                crate::present::format::fmt_files(v.files),
                v.method
            ));
        } else {
            s.push_str(&format!(
                "  verified {}: {} DIFFER ({})\n",
                crate::present::format::fmt_files(v.files),
                v.mismatches,
                v.method
            ));
        }
    }
    issue_block(&mut s, "failed", &o.failures);
    issue_block(&mut s, "skipped", &o.skipped);
    issue_block(&mut s, "changed while copied", &o.changed);
    issue_block(&mut s, "notes", &o.notes);
    s
}

#[cfg(test)]
mod tests {

    #[test]
    fn drops_that_cost_nothing_list_no_causes() {
        let mut st = Stats::of_engine(40e6, Some(39e6));
        st.drops = 4;
        assert!(speeds_text(&st, "durable", false).contains("  drops: 4 (0.0 s lost)\n"));
        st.lost_secs_by_cause = vec![("txg sync", 2.5)];
        assert!(speeds_text(&st, "durable", false).contains("(2.5 s lost: txg sync 2.5 s)"));
    }
    use super::*;
    use crate::copy::FileIssue;

    fn snap(copied: u64, total: u64, scan_done: bool) -> ProgressSnapshot {
        ProgressSnapshot {
            bytes_copied: copied,
            bytes_total: total,
            files_done: 3,
            files_total: 10,
            scan_done,
            ..Default::default()
        }
    }

    #[test]
    fn line_says_estimating_until_the_scan_is_done() {
        let l = progress_line(
            Duration::from_secs(4),
            Phase::Copying,
            &snap(1_000_000, 5_000_000, false),
            LineFigures {
                now_bps: 2e6,
                avg_bps: 1e6,
                eta_s: None,
                eta: None,
                backlog: None,
            },
            false,
        );
        assert!(l.contains("estimating"), "{l}");
        assert!(l.contains("files 3/10+"), "{l}");
        let l = progress_line(
            Duration::from_secs(4),
            Phase::Copying,
            &snap(1_000_000, 4_000_000, true),
            LineFigures {
                now_bps: 1e6,
                avg_bps: 1e6,
                eta_s: Some(3.0),
                eta: None,
                backlog: Some(Backlog {
                    bytes: 0,
                    scope: BacklogScope::ThisCopy,
                }),
            },
            false,
        );
        assert!(l.contains("25 %"), "{l}");
        assert!(l.contains("ETA 00:03"), "{l}");
        assert!(l.contains("now 1.00 MB/s"), "{l}");
        // Both finish times once the model has them.
        let l = progress_line(
            Duration::from_secs(4),
            Phase::Copying,
            &snap(1_000_000, 4_000_000, true),
            LineFigures {
                now_bps: 1e6,
                avg_bps: 1e6,
                eta_s: Some(5.0),
                eta: Some(Eta {
                    to_cache_secs: 3.0,
                    to_cache_band_secs: None,
                    on_disk: crate::model::OnDisk::Secs {
                        secs: 5.0,
                        band_secs: Some(1.5),
                    },
                }),
                backlog: None,
            },
            false,
        );
        assert!(
            l.ends_with("ETA to cache 00:03 · on disk 00:05 (± 1.5 s)"),
            "{l}"
        );
    }

    #[test]
    fn a_copy_shorter_than_a_sample_has_no_min_or_peak() {
        let st = Stats::of_engine(5e9, Some(2e8));
        let s = speeds_text(&st, "durable 200 MB/s", false);
        assert!(s.contains("min/peak n/a"), "{s}");
        assert!(!s.contains("peak 0"), "{s}");
    }

    #[test]
    fn the_flush_says_what_is_left_and_when_it_is_on_disk() {
        let l = progress_line(
            Duration::from_secs(40),
            Phase::Flushing,
            &snap(4_000_000_000, 4_000_000_000, true),
            LineFigures {
                now_bps: 0.0,
                avg_bps: 100e6,
                eta_s: Some(36.0),
                eta: None,
                backlog: Some(Backlog {
                    bytes: 1_440_000_000,
                    scope: BacklogScope::ThisCopy,
                }),
            },
            false,
        );
        assert_eq!(
            l,
            "[00:40] flushing this copy's 1.44 GB to disk, ETA 00:36  (4.00 GB copied)"
        );
        assert!(!l.contains("100 %"), "{l}");
        // The destination's disks unknown: the system's dirty data, every writer's, said so.
        let l = progress_line(
            Duration::from_secs(40),
            Phase::Flushing,
            &snap(4_000_000_000, 4_000_000_000, true),
            LineFigures {
                now_bps: 0.0,
                avg_bps: 100e6,
                eta_s: Some(36.0),
                eta: None,
                backlog: Some(Backlog {
                    bytes: 2_200_000_000,
                    scope: BacklogScope::System,
                }),
            },
            false,
        );
        assert_eq!(
            l,
            "[00:40] flushing to disk (system: dirty 2.20 GB, all writers), ETA 00:36  (4.00 GB copied)"
        );
    }

    #[test]
    fn summary_lists_both_speeds_and_failures() {
        let mut o = CopyOutcome::crashed("x");
        o.fatal = None;
        o.status = ExitStatus::Partial;
        o.bytes_copied = 2_000_000;
        o.files_copied = 2;
        o.copy_secs = 2.0;
        o.flush_secs = Some(2.0);
        o.to_cache_bps = 1e6;
        o.durable_bps = Some(5e5);
        o.failures = vec![FileIssue {
            path: "a/b".into(),
            message: "Permission denied".into(),
        }];
        let s = summary_text(&o, None, false);
        assert!(
            s.contains("done with errors: 2.00 MB in 2 files, copy 2.0 s, flush 2.0 s"),
            "{s}"
        );
        assert!(
            s.contains("speed to cache 1.00 MB/s (min/peak n/a), durable 500 kB/s (after syncfs)"),
            "{s}"
        );
        assert!(s.contains("'a/b': Permission denied"), "{s}");
    }

    #[test]
    fn verify_line_counts_the_read_back() {
        // All 734 MB written, the big file still being read back: not 100 %, not ETA 0:00.
        let mut s = snap(734_000_000, 734_000_000, true);
        s.files_done = 50;
        s.files_total = 51;
        let l = verify_line(Duration::from_secs(2), &s, 134_000_000, false);
        assert!(
            l.contains("copying+verifying 734 MB written, 134 MB read back / 734 MB 59 %"),
            "{l}"
        );
        assert!(l.contains("ETA 00:01"), "{l}");
        assert!(l.contains("avg 367 MB/s"), "{l}");
    }
}
