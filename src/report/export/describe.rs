//! Sentences for drops and causes as the exports lay them out; the wording of each cause and
//! event is the model's own (`Cause::describe`, `Event::describe`).

use crate::model::{Cause, DropInfo, Event};

use crate::present::format::{fmt_rate, fmt_secs};

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

/// A figure below this prints as "0.00 s": a cause that cost less is not listed.
const SHOWN_S: f64 = 0.005;

impl super::ChartStats {
    /// Seconds lost to drops, all causes.
    pub fn lost_total(&self) -> f64 {
        // An empty f64 sum is -0.0: start from +0.0 so nothing prints "-0.00 s".
        self.lost_secs_by_cause.iter().fold(0.0, |a, (_, s)| a + s)
    }

    /// The causes that cost time worth printing, largest first.
    pub fn lost_listed(&self) -> impl Iterator<Item = (&str, f64)> {
        self.lost_secs_by_cause
            .iter()
            .filter(|(_, s)| *s >= SHOWN_S)
            .map(|(c, s)| (c.as_str(), *s))
    }

    /// The causes that held the writer, largest first.
    pub fn stalled_listed(&self) -> impl Iterator<Item = (&str, f64)> {
        self.stalled_secs_by_cause
            .iter()
            .filter(|(_, s)| *s >= SHOWN_S)
            .map(|(c, s)| (c.as_str(), *s))
    }

    /// Seconds the writer spent in drops, all causes.
    pub fn stalled_total(&self) -> f64 {
        self.stalled_secs_by_cause
            .iter()
            .fold(0.0, |a, (_, s)| a + s)
    }

    /// True when the drops held the writer for noticeably longer than they cost: the disks
    /// kept writing the backlog at their own rate meanwhile, so the stall is not time lost.
    pub fn stalled_not_lost(&self) -> bool {
        self.drops > 0 && self.stalled_total() - self.lost_total() >= 0.05
    }

    /// The sentence that says so, for every export: "the writer stalled 25.6 s in 9 drops
    /// (txg sync 25.3 s, CPU 0.3 s) while the disks kept writing at their own rate: stalled,
    /// not lost". None when there is nothing to say.
    pub fn stall_note(&self) -> Option<String> {
        if !self.stalled_not_lost() {
            return None;
        }
        let causes: Vec<String> = self
            .stalled_listed()
            .map(|(c, s)| format!("{c} {}", fmt_secs(s)))
            .collect();
        let lost = self.lost_total();
        let tail = if lost < SHOWN_S {
            "stalled, not lost".to_string()
        } else {
            format!(
                "{} of it lost against the sustained rate, the rest stalled, not lost",
                fmt_secs(lost)
            )
        };
        Some(format!(
            "the writer stalled {} in {} drop{} ({}) while the disks kept writing at their own rate: {tail}",
            fmt_secs(self.stalled_total()),
            self.drops,
            if self.drops == 1 { "" } else { "s" },
            causes.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_that_cost_nothing_is_said_so_and_not_listed_as_lost() {
        let st = super::super::ChartStats {
            drops: 9,
            lost_secs_by_cause: vec![("txg sync".into(), 0.001)],
            stalled_secs_by_cause: vec![("txg sync".into(), 25.3), ("CPU".into(), 0.3)],
            ..Default::default()
        };
        assert_eq!(st.lost_listed().count(), 0);
        assert_eq!(
            st.stall_note().as_deref(),
            Some(
                "the writer stalled 26 s in 9 drops (txg sync 25 s, CPU 0.3 s) while the \
                 disks kept writing at their own rate: stalled, not lost"
            )
        );
        let lost = super::super::ChartStats {
            drops: 1,
            lost_secs_by_cause: vec![("txg sync".into(), 1.5)],
            stalled_secs_by_cause: vec![("txg sync".into(), 1.5)],
            ..Default::default()
        };
        assert_eq!(lost.stall_note(), None);
    }

    #[test]
    fn drop_without_causes_is_unknown() {
        let d = DropInfo {
            end_ns: 2_000_000_000,
            reference_bps: 100e6,
            min_bps: 1e6,
            bytes_lost: 150e6,
            causes: vec![],
            held_exact_ns: None,
        };
        assert_eq!(drop_label(&d), "unknown");
        assert!((lost_secs(&d) - 1.5).abs() < 1e-9);
        assert_eq!(
            describe_drop_speed(500_000_000, &d),
            "drop 100 MB/s → 1.00 MB/s for 1.5 s (1.5 s lost)"
        );
    }
}
