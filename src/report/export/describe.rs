//! Sentences for drops and causes as the exports lay them out; the wording of each cause and
//! event is the model's own (`Cause::describe`, `Event::describe`).

use crate::model::{Cause, DropInfo, Event};

use super::units::{fmt_rate, fmt_secs};

/// A short label for a cause, used as the key of "time lost per cause" (the model's label, so
/// the pictures, the TUI and the recording's summary agree).
pub fn cause_label(cause: &Cause) -> &'static str {
    cause.label()
}

/// The label of a drop's best cause ("unknown" when it has none).
pub fn drop_label(drop: &DropInfo) -> &'static str {
    drop.causes.first().map_or("unknown", cause_label)
}

/// One cause with its evidence, in the model's words (the TUI's events panel says the same).
pub fn describe_cause(cause: &Cause) -> String {
    cause.describe()
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

/// One line for any event, as the events list prints it (the model's wording).
pub fn describe_event(event: &Event) -> String {
    event.describe()
}

#[cfg(test)]
mod tests {
    use super::*;

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
