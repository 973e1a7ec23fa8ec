//! Human sentences for events, drops and causes as the exports print them.
//! (The model may grow its own `describe()`; these are the export's wording until the
//! lead reconciles the two.)

use crate::model::{Cause, DropInfo, Event, EventKind};

use super::units::{fmt_bytes, fmt_rate, fmt_secs};

/// A short label for a cause, used as the key of "time lost per cause".
pub fn cause_label(cause: &Cause) -> &'static str {
    match cause {
        Cause::TxgSync { .. } => "txg sync",
        Cause::ZfsThrottle { .. } => "ZFS write throttle",
        Cause::DirtyThrottle { .. } => "dirty throttling",
        Cause::WritebackBurst { .. } => "writeback burst",
        Cause::DeviceSaturated { .. } => "device saturated",
        Cause::SourceStall { .. } => "source stall",
        Cause::CpuSaturated { .. } => "CPU saturated",
        Cause::Unknown => "unknown",
    }
}

/// The label of a drop's best cause ("unknown" when it has none).
pub fn drop_label(drop: &DropInfo) -> &'static str {
    drop.causes.first().map_or("unknown", cause_label)
}

/// A share given either as a fraction (0–1) or already in percent, as a percentage.
fn pct(share: f64) -> f64 {
    if share <= 1.0 { share * 100.0 } else { share }
}

/// One cause with its evidence: "txg 48211 synced 1.1 GB in 1.6 s (27 % of zfs_dirty_data_max)".
pub fn describe_cause(cause: &Cause) -> String {
    match cause {
        Cause::TxgSync {
            txg,
            ndirty,
            stime_ns,
            dirty_pct_of_max,
        } => {
            // stime 0: the txg had not committed when the recording ended.
            let mut s = if *stime_ns > 0 {
                format!(
                    "txg {txg} synced {} in {}",
                    fmt_bytes(*ndirty as f64),
                    fmt_secs(*stime_ns as f64 / 1e9)
                )
            } else {
                format!("txg {txg} was syncing")
            };
            if let Some(p) = dirty_pct_of_max {
                s.push_str(&format!(" ({p:.0} % of zfs_dirty_data_max)"));
            }
            s
        }
        Cause::ZfsThrottle { delays, over_max } => {
            let mut s = format!("ZFS write throttle delayed {delays} writes");
            if *over_max > 0 {
                s.push_str(&format!(", {over_max} waited at zfs_dirty_data_max"));
            }
            s
        }
        Cause::DirtyThrottle {
            dirty,
            freerun,
            write_share,
        } => format!(
            "dirty {} above the freerun limit {}: the kernel paced writes ({:.0} % of the time in write())",
            fmt_bytes(*dirty as f64),
            fmt_bytes(*freerun as f64),
            pct(*write_share)
        ),
        Cause::WritebackBurst {
            writeback,
            device_bps,
        } => format!(
            "writeback burst: {} under writeback, device writing {}",
            fmt_bytes(*writeback as f64),
            fmt_rate(*device_bps)
        ),
        Cause::DeviceSaturated {
            util_pct,
            device_bps,
        } => format!(
            "destination device {util_pct:.0} % busy at {}",
            fmt_rate(*device_bps)
        ),
        Cause::SourceStall { read_share } => format!(
            "source read stall ({:.0} % of the time in read())",
            pct(*read_share)
        ),
        Cause::CpuSaturated { busy_pct } => format!("CPU saturated ({busy_pct:.0} % busy)"),
        Cause::Unknown => "no signal explains it".to_string(),
    }
}

/// The time a drop cost: bytes lost at the reference speed.
pub fn lost_secs(drop: &DropInfo) -> f64 {
    if drop.reference_bps > 0.0 {
        (drop.bytes_lost / drop.reference_bps).max(0.0)
    } else {
        0.0
    }
}

/// "drop 126 MB/s → 0 MB/s for 4.0 s (3.9 s lost)".
pub fn describe_drop_speed(start_ns: u64, drop: &DropInfo) -> String {
    let dur = drop.end_ns.saturating_sub(start_ns) as f64 / 1e9;
    format!(
        "drop {} → {} for {} ({} lost)",
        fmt_rate(drop.reference_bps),
        fmt_rate(drop.min_bps),
        fmt_secs(dur),
        fmt_secs(lost_secs(drop))
    )
}

/// All causes of a drop, best first, joined with "; ".
pub fn describe_causes(drop: &DropInfo) -> String {
    if drop.causes.is_empty() {
        return describe_cause(&Cause::Unknown);
    }
    drop.causes
        .iter()
        .map(describe_cause)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One line for any event, as the events list prints it.
pub fn describe_event(event: &Event) -> String {
    match &event.kind {
        EventKind::Drop(d) => format!(
            "{}: {}",
            describe_drop_speed(event.t_ns, d),
            describe_causes(d)
        ),
        EventKind::TxgSyncStarted { txg } => format!("txg {txg} sync started"),
        EventKind::TxgCommitted {
            txg,
            ndirty,
            nwritten,
            stime_ns,
        } => {
            let secs = *stime_ns as f64 / 1e9;
            let rate = if secs > 0.0 {
                format!(", {}", fmt_rate(*nwritten as f64 / secs))
            } else {
                String::new()
            };
            format!(
                "txg {txg} committed: {} dirty, {} written in {}{rate}",
                fmt_bytes(*ndirty as f64),
                fmt_bytes(*nwritten as f64),
                fmt_secs(secs)
            )
        }
        EventKind::WritebackStarted { dirty, bg_thresh } => format!(
            "dirty {} crossed the background threshold {}: writeback started",
            fmt_bytes(*dirty as f64),
            fmt_bytes(*bg_thresh as f64)
        ),
        EventKind::DirtyThrottleZone { dirty, freerun } => format!(
            "dirty {} passed the freerun limit {}: the kernel is pacing writes",
            fmt_bytes(*dirty as f64),
            fmt_bytes(*freerun as f64)
        ),
        EventKind::ZfsDelay { delays } => format!("ZFS write throttle delayed {delays} writes"),
        EventKind::FileError { path, error } => format!("{path}: {error}"),
        EventKind::Paused => "paused".to_string(),
        EventKind::Resumed => "resumed".to_string(),
        EventKind::ScanDone { files, bytes } => {
            format!("scan finished: {files} files, {}", fmt_bytes(*bytes as f64))
        }
        EventKind::FlushStarted { dirty } => {
            format!("flushing {} to disk", fmt_bytes(*dirty as f64))
        }
        EventKind::FlushDone { secs } => format!("flush finished in {}", fmt_secs(*secs)),
        EventKind::Note { text } => text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txg_cause_reads_naturally() {
        let c = Cause::TxgSync {
            txg: 11,
            ndirty: 249_577_472,
            stime_ns: 6_244_167_340,
            dirty_pct_of_max: Some(60.8),
        };
        assert_eq!(
            describe_cause(&c),
            "txg 11 synced 250 MB in 6.2 s (61 % of zfs_dirty_data_max)"
        );
    }

    #[test]
    fn txg_still_syncing_at_the_end_has_no_made_up_size() {
        let c = Cause::TxgSync {
            txg: 21,
            ndirty: 0,
            stime_ns: 0,
            dirty_pct_of_max: Some(34.2),
        };
        assert_eq!(
            describe_cause(&c),
            "txg 21 was syncing (34 % of zfs_dirty_data_max)"
        );
    }

    #[test]
    fn shares_accept_fraction_or_percent() {
        let a = describe_cause(&Cause::SourceStall { read_share: 0.8 });
        let b = describe_cause(&Cause::SourceStall { read_share: 80.0 });
        assert_eq!(a, b);
        assert!(a.contains("80 %"));
    }

    #[test]
    fn drop_without_causes_is_unknown() {
        let d = DropInfo {
            end_ns: 2_000_000_000,
            reference_bps: 100e6,
            min_bps: 1e6,
            bytes_lost: 150e6,
            causes: vec![],
        };
        assert_eq!(drop_label(&d), "unknown");
        assert!((lost_secs(&d) - 1.5).abs() < 1e-9);
        assert_eq!(
            describe_drop_speed(500_000_000, &d),
            "drop 100 MB/s → 1.00 MB/s for 1.5 s (1.5 s lost)"
        );
    }
}
