//! `--pace auto`: the rate the copy holds so that its data waiting in RAM stays under the
//! point where the kernel starts to hold it (Linux's dirty throttling, ZFS's write throttle
//! and full txgs), measured as the copy goes. At that rate the destination writes as fast as
//! it can, the writer is never throttled or stalled, and the other writers of the same disks
//! (a NAS's Samba clients) keep the room above it.

use super::Model;
use super::phase::Limit;

/// Below its target the cache may grow: the pace runs above the measured drain rate, so a
/// rate measured low (a pool's small txgs carry a fixed cost per sync; a starved CPU
/// stretches them) cannot hold the copy down, and a destination that got faster shows it.
/// The cache level, not the rate, is what the pace steers by.
pub const BELOW_TARGET: f64 = 1.15;
/// Above its target the pace drains it: a tenth of the drain rate each second.
pub const ABOVE_TARGET: f64 = 0.9;
/// Onto disks, the cache is kept at this share of the level where the kernel began to hold
/// the copy: under the throttle, yet above the background-writeback threshold below it (under
/// that the flusher stops and the disk idles).
pub const DISK_TARGET_SHARE: f64 = 0.85;
/// On ZFS, dirty data is kept at this share of the write throttle's threshold
/// (`zfs_delay_min_dirty_percent` of `zfs_dirty_data_max`).
pub const ZFS_TARGET_SHARE: f64 = 0.5;
/// On ZFS, until the pool's rate is known (no txg of the copy committed yet), the dirty data
/// is kept under this: the first txg is then small and quick, and tells the rate.
pub const ZFS_PROBE_BYTES: u64 = 64 << 20;
/// On ZFS, the share of the pool's rate the copy keeps however much other writers put in: a
/// pace that yields them everything would never end.
pub const ZFS_LEAST_SHARE: f64 = 0.25;
/// The slowest pace asked for, bytes/s: a destination that wrote nothing measurable yet.
pub const MIN_PACE_BPS: f64 = 1e6;

/// What `--pace auto` holds now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// The rate to hold, bytes/s; `None`: run free (nothing measured that asks for a pace).
    pub bps: Option<f64>,
    /// The rate the destination drains at, bytes/s, when measured.
    pub drain_bps: Option<f64>,
    /// The cache level the pace keeps the copy under, bytes, when known.
    pub target: Option<u64>,
    /// On ZFS, what other writers put into the pool, bytes/s, when measured: the pace leaves
    /// them room.
    pub others_bps: Option<f64>,
}

impl Model {
    /// The pace `--pace auto` holds after the latest sample.
    pub fn pace(&self) -> Pace {
        if self.on_zfs() {
            self.zfs_pace()
        } else {
            self.disk_pace()
        }
    }

    /// Onto disks: free until the page-cache phase is known (the disks' sustained rate and the
    /// level where the kernel began to hold the copy); then that rate, a little less while the
    /// cache is above [`DISK_TARGET_SHARE`] of that level.
    fn disk_pace(&self) -> Pace {
        let drain = self
            .phase
            .ceiling()
            .filter(|_| self.phase.limit() == Some(Limit::Disk));
        let target = self
            .phase
            .fill_level()
            .map(|l| (l as f64 * DISK_TARGET_SHARE) as u64);
        let cached = self
            .latest
            .as_ref()
            .and_then(|s| s.page_cache.as_ref())
            .map(|p| p.dirty.saturating_add(p.writeback));
        let bps = match (drain, target, cached) {
            (Some(d), Some(t), Some(c)) => Some(steer(d, c, t)),
            (Some(d), None, _) => Some(d),
            _ => None,
        };
        Pace {
            bps,
            drain_bps: drain,
            target,
            others_bps: None,
        }
    }

    /// On ZFS: the pool's rate from the copy's txgs (their dirty bytes over their syncs' time:
    /// the copy's own bytes, where `nwritten` counts mirror copies and parity and little of
    /// compressed data) less what other writers put into them
    /// (at least [`ZFS_LEAST_SHARE`] of it), a little less while dirty data is above
    /// [`ZFS_TARGET_SHARE`] of the write throttle's threshold; before a txg of the copy
    /// committed, dirty data under [`ZFS_PROBE_BYTES`] at the pool's disks' rate.
    fn zfs_pace(&self) -> Pace {
        let cached = self
            .latest
            .as_ref()
            .and_then(|s| s.zfs.as_ref())
            .and_then(|z| z.arc_anon);
        let threshold = self.env.zfs_dirty_data_max.map(|m| {
            let pct = self.env.zfs_delay_percent.unwrap_or(60);
            m as f64 * f64::from(pct) / 100.0
        });
        let target = threshold.map(|t| (t * ZFS_TARGET_SHARE) as u64);
        let others = self.facts.others_bps();
        let drain = self.facts.pool_dirty_bps();
        let room = drain.map(|pool| (pool - others.unwrap_or(0.0)).max(pool * ZFS_LEAST_SHARE));
        let bps = match (room, target, cached) {
            (Some(r), Some(t), Some(c)) => Some(steer(r, c, t)),
            (Some(r), _, _) => Some(r),
            (None, _, Some(c)) if c > ZFS_PROBE_BYTES => {
                // The disks' rate once the first txg syncs; before, what fills the probe in
                // one zfs_txg_timeout, when the txg closes by itself.
                let disks = self.recent.back().and_then(|t| t.dev_bps).unwrap_or(0.0);
                let timeout = self.txg_timeout_secs();
                Some(disks.max(ZFS_PROBE_BYTES as f64 / timeout))
            }
            _ => None,
        };
        Pace {
            bps,
            drain_bps: drain,
            target: if drain.is_some() {
                target
            } else {
                Some(ZFS_PROBE_BYTES)
            },
            others_bps: others,
        }
    }
}

impl Model {
    /// `zfs_txg_timeout` from the recorded tunables, seconds (OpenZFS's default 5 when not
    /// recorded).
    fn txg_timeout_secs(&self) -> f64 {
        self.env
            .tunables
            .iter()
            .find(|(k, _)| k == "zfs_txg_timeout")
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .filter(|t| *t > 0.0)
            .unwrap_or(5.0)
    }
}

/// The drain rate, nudged by where the cache stands against its target.
fn steer(drain_bps: f64, cached: u64, target: u64) -> f64 {
    let k = if cached > target {
        ABOVE_TARGET
    } else {
        BELOW_TARGET
    };
    (drain_bps * k).max(MIN_PACE_BPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_above_its_target_is_drained_below_it_may_grow() {
        assert_eq!(steer(40e6, 200, 100), 40e6 * ABOVE_TARGET);
        assert_eq!(steer(40e6, 50, 100), 40e6 * BELOW_TARGET);
        assert_eq!(steer(0.0, 50, 100), MIN_PACE_BPS);
    }
}
