//! The model's figures for `--metrics`: the running totals only a metrics endpoint needs
//! (txg sync durations as a histogram, txgs and drops counted by pool and cause) and the
//! [`Snapshot`] a frontend hands to the endpoint each tick. Everything here is read from the
//! model's own state; nothing is derived from samples a second time.

use crate::copy::ProgressSnapshot;

/// Upper bounds (seconds) of the txg sync duration histogram. ZFS syncs a txg at least every
/// `zfs_txg_timeout` (5 s); a healthy pool takes well under a second, a pool held at its
/// write rate by a full dirty limit takes seconds, a sick one tens of seconds.
pub const TXG_SYNC_BUCKETS: [f64; 12] = [
    0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 20.0, 30.0, 60.0,
];

/// A cumulative histogram (Prometheus semantics: each bucket counts observations ≤ its bound).
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Counts per bound of [`TXG_SYNC_BUCKETS`] (cumulative), the +Inf bucket is `count`.
    pub buckets: [u64; TXG_SYNC_BUCKETS.len()],
    pub count: u64,
    pub sum: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: [0; TXG_SYNC_BUCKETS.len()],
            count: 0,
            sum: 0.0,
        }
    }
}

impl Histogram {
    pub fn observe(&mut self, v: f64) {
        for (b, le) in self.buckets.iter_mut().zip(TXG_SYNC_BUCKETS) {
            if v <= le {
                *b += 1;
            }
        }
        self.count += 1;
        self.sum += v;
    }
}

/// One pool's committed txgs: how long each sync took, and what they wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolTally {
    pub pool: String,
    pub sync_secs: Histogram,
    /// Bytes the committed txgs wrote (the txgs kstat `nwritten`).
    pub written: u64,
}

/// Totals kept by the model as it applies samples (bounded: one entry per pool and cause).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub pools: Vec<PoolTally>,
}

impl Tally {
    /// A txg of `pool` committed after syncing `stime_ns`, writing `nwritten` bytes.
    pub fn txg_committed(&mut self, pool: &str, stime_ns: u64, nwritten: u64) {
        let i = match self.pools.iter().position(|p| p.pool == pool) {
            Some(i) => i,
            None => {
                self.pools.push(PoolTally {
                    pool: pool.to_string(),
                    ..PoolTally::default()
                });
                self.pools.len() - 1
            }
        };
        let p = &mut self.pools[i];
        p.sync_secs.observe(stime_ns as f64 / 1e9);
        p.written = p.written.saturating_add(nwritten);
    }
}

/// One cause's counters: drops whose main cause it was, and the seconds they cost.
#[derive(Debug, Clone, PartialEq)]
pub struct CauseFigures {
    /// A stable machine name (the `cause` tag of the JSON output, e.g. `txg_sync`).
    pub cause: &'static str,
    pub drops: u64,
    /// Seconds lost against the reference speed ([`crate::model::Stats::lost_secs_by_cause`]).
    pub lost_secs: f64,
    /// Seconds spent in those drops ([`crate::model::Stats::stalled_secs_by_cause`]).
    pub stalled_secs: f64,
}

/// The destination's disks, summed as the model reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceFigures {
    /// Their names as the model words them ("vda", "sdb+sdc").
    pub device: String,
    /// Bytes they wrote since the run started.
    pub written: u64,
    /// Their write rate over the last second, bytes/s.
    pub write_bps: Option<f64>,
    /// Busy share per disk over the last second, 0–1.
    pub busy_ratio: Option<f64>,
}

/// What the run is, for the info metric.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInfo {
    /// "copy" or "watch".
    pub mode: &'static str,
    pub fs_type: String,
    pub mount_point: String,
    pub dataset: String,
    pub pool: String,
}

/// Every figure the metrics endpoint exports, taken from the model at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub info: RunInfo,
    /// Seconds since the run started (the latest sample's time).
    pub elapsed_secs: f64,
    /// Bytes written so far (a copy's bytes copied, a watch's intake).
    pub intake_bytes: u64,
    /// Smoothed intake over the last ticks, bytes/s (the "now" of every output).
    pub intake_bps: f64,
    pub device: Option<DeviceFigures>,
    /// Page cache Dirty and Writeback, bytes (system-wide).
    pub dirty: Option<u64>,
    pub writeback: Option<u64>,
    /// ZFS: the pool's dirty data estimate (arc anon_size), bytes.
    pub zfs_dirty: Option<(String, u64)>,
    pub pools: Vec<PoolTally>,
    /// Every cause, in the model's order, zeros included (so a first drop is an increase).
    pub causes: Vec<CauseFigures>,
    /// `watch --net`: the interface's receive rate over the last second.
    pub net_rx_bps: Option<f64>,
    /// A copy's progress (None for a watch).
    pub progress: Option<ProgressSnapshot>,
}
