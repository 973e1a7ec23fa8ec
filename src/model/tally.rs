//! Small running tallies of a run the model keeps: its peak and floor speeds, its drops and
//! what they cost by cause, and which threshold events may be said again.

use super::CAUSE_LABELS;

/// The copy's peak and floor speeds (smoothed). Before the first reference window they are
/// provisional (a copy shorter than it still has a peak and a floor, not "peak 0").
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SpeedRange {
    pub peak_bps: f64,
    pub min_bps: Option<f64>,
    pub early_peak_bps: f64,
    pub early_min_bps: Option<f64>,
}

impl SpeedRange {
    /// Any smoothed speed, from the first byte: the provisional figures.
    pub fn early(&mut self, bps: f64) {
        self.early_peak_bps = self.early_peak_bps.max(bps);
        self.early_min_bps = Some(self.early_min_bps.map_or(bps, |m| m.min(bps)));
    }

    /// A smoothed speed once the reference is settled. The floor is what the copy ran at
    /// *outside* drops: inside one the speed is that drop's own minimum ("min in drops"), and
    /// counting it here would make "min 0" the answer for every copy that ever stalled.
    pub fn settled(&mut self, bps: f64, in_drop: bool) {
        self.peak_bps = self.peak_bps.max(bps);
        if !in_drop {
            self.min_bps = Some(self.min_bps.map_or(bps, |m| m.min(bps)));
        }
    }

    /// The peak: settled if there was one, else provisional.
    pub fn peak(&self) -> f64 {
        if self.peak_bps > 0.0 {
            self.peak_bps
        } else {
            self.early_peak_bps
        }
    }

    /// The floor outside drops: settled if there was one, else provisional.
    pub fn floor(&self) -> Option<f64> {
        self.min_bps.or(self.early_min_bps)
    }
}

/// Drops, and the seconds they stalled and lost, by their main cause
/// (indices of [`CAUSE_LABELS`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DropTally {
    pub drops: usize,
    pub drops_by_cause: [u64; CAUSE_LABELS.len()],
    pub stalled_by_cause: [f64; CAUSE_LABELS.len()],
    pub lost_by_cause: [f64; CAUSE_LABELS.len()],
}

impl DropTally {
    /// One drop of main cause `cause`, `secs` long, that lost `lost_secs` (unknown without a
    /// reference rate).
    pub fn record(&mut self, cause: usize, secs: f64, lost_secs: Option<f64>) {
        self.drops += 1;
        self.drops_by_cause[cause] += 1;
        self.stalled_by_cause[cause] += secs;
        if let Some(l) = lost_secs {
            self.lost_by_cause[cause] += l;
        }
    }
}

/// Which threshold events may be said again: the writeback start and the throttle zone once
/// the page cache went back under them, and the ZFS delays gathered since they were last said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventArms {
    pub wb_armed: bool,
    pub zone_armed: bool,
    pub delay_pending: u64,
    pub delay_last_rise: u64,
    pub delay_last_emit: Option<u64>,
}

impl Default for EventArms {
    fn default() -> Self {
        EventArms {
            wb_armed: true,
            zone_armed: true,
            delay_pending: 0,
            delay_last_rise: 0,
            delay_last_emit: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_leaves_drops_out_and_the_early_figures_stand_in() {
        let mut r = SpeedRange::default();
        r.early(80.0);
        r.early(20.0);
        assert_eq!((r.peak(), r.floor()), (80.0, Some(20.0)));
        r.settled(60.0, false);
        r.settled(0.0, true);
        r.settled(100.0, false);
        assert_eq!((r.peak(), r.floor()), (100.0, Some(60.0)));
    }

    #[test]
    fn a_drop_counts_under_its_cause_and_its_loss_only_when_known() {
        let mut t = DropTally::default();
        t.record(2, 3.0, Some(1.5));
        t.record(2, 1.0, None);
        assert_eq!(t.drops, 2);
        assert_eq!(t.drops_by_cause[2], 2);
        assert_eq!((t.stalled_by_cause[2], t.lost_by_cause[2]), (4.0, 1.5));
    }
}
