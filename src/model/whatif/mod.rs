//! `copyscope whatif`: a recorded copy replayed under other tunables. The recording's measured
//! rates ([`Measured`]: the intake the source and CPU gave, the pool's or the disks' write
//! rate, a txg sync's fixed cost, limits the recorded run met that no tunable sets) drive a
//! simulation of OpenZFS 2.1's write throttle and txg cycle (`pool`) or of Linux's dirty
//! throttling (`cache`), stepped at the recording's interval (`run`); the simulated samples go
//! through a fresh [`Model`], so the prediction's drops, stalls, time lost and end are found
//! by the same rules as the real run's. Pure: no clock, no file (docs/whatif.md).

pub mod hindsight;
pub mod measure;

mod cache;
mod pool;
mod run;

pub use hindsight::{Hindsight, PaceComparison};
pub use measure::{Measured, Observer};

use super::Model;
use crate::sample::Environment;

/// What a `--set` changes, validated ([`Settings::set`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub zfs_dirty_data_max: Option<u64>,
    pub zfs_txg_timeout: Option<u32>,
    pub zfs_dirty_data_sync_percent: Option<u32>,
    pub zfs_delay_min_dirty_percent: Option<u32>,
    pub zfs_delay_scale: Option<u64>,
    /// `vm.dirty_bytes` (0: the ratio applies, as in the kernel).
    pub dirty_bytes: Option<u64>,
    pub dirty_background_bytes: Option<u64>,
    pub dirty_ratio: Option<u32>,
    pub dirty_background_ratio: Option<u32>,
    /// `--pace auto`: the copy holds the pace `Model::pace` gives, as a live copy does.
    pub pace_auto: bool,
    /// `--pace off`: the copy runs free, even where the recorded one was paced.
    pub pace_off: bool,
}

/// The tunables `--set` takes, as the user writes them.
pub const KEYS: [&str; 9] = [
    "zfs_dirty_data_max",
    "zfs_txg_timeout",
    "zfs_dirty_data_sync_percent",
    "zfs_delay_min_dirty_percent",
    "zfs_delay_scale",
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
];

/// A `--set` that cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("--set {0}: expected NAME=VALUE, e.g. zfs_dirty_data_max=1G")]
    Form(String),
    #[error("--set {key}: not a tunable the simulation knows (one of: {})", KEYS.join(", "))]
    Unknown { key: String },
    #[error("--set {key}={value}: {why}")]
    Value {
        key: String,
        value: String,
        why: &'static str,
    },
    #[error("--set {key}: the recording's destination is {fs}, {why}")]
    WrongFilesystem {
        key: String,
        fs: String,
        why: &'static str,
    },
}

impl Settings {
    /// Parses one `NAME=VALUE` (sizes with a unit, `1G`, `500MB`; a `/sys/module/zfs/
    /// parameters/` or `/proc/sys/vm/` path prefix is accepted as the name).
    pub fn set(&mut self, spec: &str) -> Result<(), SettingError> {
        let (key, value) = spec
            .split_once('=')
            .ok_or_else(|| SettingError::Form(spec.to_string()))?;
        let key = normalize_key(key.trim());
        let value = value.trim();
        let bad = |why: &'static str| SettingError::Value {
            key: key.clone(),
            value: value.to_string(),
            why,
        };
        let percent = |v: &str| -> Result<u32, SettingError> {
            v.parse::<u32>()
                .ok()
                .filter(|p| (1..=100).contains(p))
                .ok_or_else(|| bad("a whole percent, 1 to 100"))
        };
        match key.as_str() {
            "zfs_dirty_data_max" => {
                self.zfs_dirty_data_max =
                    Some(size(value).filter(|b| *b >= 1 << 20).ok_or_else(|| {
                        bad("a size of at least 1 MiB, e.g. 64M, 1G, 4294967296")
                    })?);
            }
            "zfs_txg_timeout" => {
                self.zfs_txg_timeout = Some(
                    value
                        .parse::<u32>()
                        .ok()
                        .filter(|s| (1..=3600).contains(s))
                        .ok_or_else(|| bad("whole seconds, 1 to 3600"))?,
                );
            }
            "zfs_dirty_data_sync_percent" => {
                self.zfs_dirty_data_sync_percent = Some(percent(value)?)
            }
            "zfs_delay_min_dirty_percent" => {
                self.zfs_delay_min_dirty_percent = Some(percent(value)?)
            }
            "zfs_delay_scale" => {
                self.zfs_delay_scale = Some(
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|s| *s > 0)
                        .ok_or_else(|| bad("nanoseconds, e.g. 500000"))?,
                );
            }
            "vm.dirty_bytes" | "vm.dirty_background_bytes" => {
                let b = size(value)
                    .filter(|b| *b == 0 || *b >= 1 << 20)
                    .ok_or_else(|| bad("a size (0, or at least 1 MiB), e.g. 300M, 1G"))?;
                if key == "vm.dirty_bytes" {
                    self.dirty_bytes = Some(b);
                } else {
                    self.dirty_background_bytes = Some(b);
                }
            }
            "vm.dirty_ratio" => self.dirty_ratio = Some(percent(value)?),
            "vm.dirty_background_ratio" => self.dirty_background_ratio = Some(percent(value)?),
            _ => return Err(SettingError::Unknown { key }),
        }
        Ok(())
    }

    /// True when a ZFS tunable is set.
    pub fn touches_zfs(&self) -> bool {
        self.zfs_dirty_data_max.is_some()
            || self.zfs_txg_timeout.is_some()
            || self.zfs_dirty_data_sync_percent.is_some()
            || self.zfs_delay_min_dirty_percent.is_some()
            || self.zfs_delay_scale.is_some()
    }

    /// True when a page-cache tunable is set.
    pub fn touches_page_cache(&self) -> bool {
        self.dirty_bytes.is_some()
            || self.dirty_background_bytes.is_some()
            || self.dirty_ratio.is_some()
            || self.dirty_background_ratio.is_some()
    }

    /// Each change as `name=value` (sizes as the kernel takes them), in [`KEYS`] order, then
    /// `--pace auto`.
    pub fn changes(&self) -> Vec<(&'static str, Change)> {
        let mut out = Vec::new();
        let mut push = |k: &'static str, c: Option<Change>| {
            if let Some(c) = c {
                out.push((k, c));
            }
        };
        push(KEYS[0], self.zfs_dirty_data_max.map(Change::Bytes));
        push(
            KEYS[1],
            self.zfs_txg_timeout.map(|s| Change::Secs(f64::from(s))),
        );
        push(
            KEYS[2],
            self.zfs_dirty_data_sync_percent.map(Change::Percent),
        );
        push(
            KEYS[3],
            self.zfs_delay_min_dirty_percent.map(Change::Percent),
        );
        push(KEYS[4], self.zfs_delay_scale.map(Change::Nanos));
        push(KEYS[5], self.dirty_bytes.map(Change::Bytes));
        push(KEYS[6], self.dirty_background_bytes.map(Change::Bytes));
        push(KEYS[7], self.dirty_ratio.map(Change::Percent));
        push(KEYS[8], self.dirty_background_ratio.map(Change::Percent));
        if self.pace_auto {
            out.push(("--pace", Change::PaceAuto));
        }
        if self.pace_off {
            out.push(("--pace", Change::PaceOff));
        }
        out
    }

    /// Whether the simulated copy holds `--pace auto`'s pace: as told, else as the recorded
    /// copy (`env`) did.
    pub fn paced(&self, env: &Environment) -> bool {
        !self.pace_off && (self.pace_auto || env.pace_auto)
    }

    /// Refuses a change the recording's destination has nothing to apply it to: a ZFS
    /// tunable off ZFS, a page-cache limit on ZFS (its writes bypass the page cache).
    pub fn check_against(&self, env: &Environment) -> Result<(), SettingError> {
        let fs = env.fs_type.clone().unwrap_or_else(|| "unknown".into());
        let on_zfs = fs == "zfs";
        let first = |zfs: bool| {
            self.changes()
                .into_iter()
                .find(|(k, _)| k.starts_with("zfs_") == zfs && *k != "--pace")
                .map_or_else(String::new, |(k, _)| k.to_string())
        };
        if !on_zfs && self.touches_zfs() {
            return Err(SettingError::WrongFilesystem {
                key: first(true),
                fs,
                why: "not ZFS: a ZFS tunable changes nothing there",
            });
        }
        if on_zfs && self.touches_page_cache() {
            return Err(SettingError::WrongFilesystem {
                key: first(false),
                fs,
                why: "whose writes bypass the page cache: the vm.dirty_* limits do not hold them",
            });
        }
        Ok(())
    }
}

/// One change, for the summary's words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    Bytes(u64),
    Secs(f64),
    Percent(u32),
    Nanos(u64),
    PaceAuto,
    PaceOff,
}

/// `/sys/module/zfs/parameters/zfs_txg_timeout` and `/proc/sys/vm/dirty_bytes` name the
/// same tunables as `zfs_txg_timeout` and `vm.dirty_bytes`; `vm/dirty_bytes` too.
fn normalize_key(key: &str) -> String {
    let k = key
        .trim_start_matches("/sys/module/zfs/parameters/")
        .trim_start_matches("/proc/sys/");
    let k = k.replace('/', ".");
    match k.strip_prefix("dirty_") {
        Some(_) => format!("vm.{k}"),
        None => k,
    }
}

/// A byte count: a bare number is bytes (as the kernel's files take it), or a number with a
/// unit (`k`/`M`/`G`/`T` powers of 1024, `kB`/`MB`/`GB`/`TB` powers of 1000).
fn size(v: &str) -> Option<u64> {
    let v = v.trim();
    if let Ok(n) = v.parse::<u64>() {
        return Some(n);
    }
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let k = match unit.trim() {
        "B" => 1.0,
        "k" | "K" | "KiB" => 1024.0,
        "M" | "MiB" => 1024f64.powi(2),
        "G" | "GiB" => 1024f64.powi(3),
        "T" | "TiB" => 1024f64.powi(4),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => return None,
    };
    let b = n * k;
    (b.is_finite() && b < 1e18).then_some(b as u64)
}

/// The copy the prediction runs: the recording's own unless told (a cross-check predicts
/// another recording's copy: its size, whether it flushed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scenario {
    pub settings: Settings,
    /// Bytes to copy (default: the recording's).
    pub bytes: Option<u64>,
    /// End with a flush (default: as the recording did).
    pub flush: Option<bool>,
    /// The drop detector's thresholds, as for the recorded run.
    pub model: super::ModelConfig,
}

/// The predicted run: its model (fed the simulated samples and engine events, finished), the
/// environment it ran in (the recording's with the changes applied), and what the simulation
/// assumed.
pub struct Prediction {
    pub model: Model,
    pub env: Environment,
    /// The limits the simulation ran with, for the summary.
    pub limits: Limits,
}

/// The effective limits of the simulated run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limits {
    Zfs {
        dirty_max: u64,
        sync_bytes: u64,
        delay_min_bytes: u64,
        txg_timeout_s: f64,
    },
    PageCache {
        bg_thresh: u64,
        thresh: u64,
        /// Where the writer is first held: freerun, or the device's own lower level.
        hold: u64,
    },
}

/// Why a recording cannot be predicted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhatifError {
    #[error(transparent)]
    Setting(#[from] SettingError),
    #[error("{0}")]
    Unmeasured(String),
}

/// Runs the copy of `scenario` under its settings on the destination `measured` describes.
pub fn predict(measured: &Measured, scenario: &Scenario) -> Result<Prediction, WhatifError> {
    scenario.settings.check_against(&measured.env)?;
    run::simulate(measured, scenario)
}

/// The figures a run is judged by, from its model: what the summary compares.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub drops: usize,
    /// Drops whose first cause the simulation models (a txg sync, ZFS's or the page cache's
    /// throttle, writeback, a saturated disk).
    pub dest_drops: usize,
    /// The other drops by their first cause's label (cpu, source stall, journal …).
    pub other_drops: Vec<(&'static str, usize)>,
    /// The longest drop, and the longest of the modelled ones, seconds.
    pub longest_stall_s: f64,
    pub longest_dest_stall_s: f64,
    /// The drops' time, seconds.
    pub drop_s: f64,
    pub lost_s: f64,
    /// When the copy ended: the data on disk after its flush, else its last byte, seconds.
    pub end_s: f64,
    /// The end is the flush's.
    pub durable: bool,
}

impl Figures {
    pub fn of(model: &Model) -> Figures {
        let stats = model.stats();
        let mut f = Figures {
            drops: stats.drops,
            dest_drops: 0,
            other_drops: Vec::new(),
            longest_stall_s: 0.0,
            longest_dest_stall_s: 0.0,
            drop_s: 0.0,
            lost_s: stats.lost_total_secs(),
            end_s: stats.durable_secs.unwrap_or(stats.copy_secs),
            durable: stats.durable_secs.is_some(),
        };
        for e in model.events() {
            let super::EventKind::Drop(d) = &e.kind else {
                continue;
            };
            let secs = d.end_ns.saturating_sub(e.t_ns) as f64 / 1e9;
            f.longest_stall_s = f.longest_stall_s.max(secs);
            f.drop_s += secs;
            let cause = d.causes.first().unwrap_or(&super::Cause::Unknown);
            if modelled(cause) {
                f.dest_drops += 1;
                f.longest_dest_stall_s = f.longest_dest_stall_s.max(secs);
            } else {
                match f.other_drops.iter_mut().find(|(l, _)| *l == cause.label()) {
                    Some(o) => o.1 += 1,
                    None => f.other_drops.push((cause.label(), 1)),
                }
            }
        }
        f
    }

    /// Drops per minute of the run.
    pub fn per_minute(&self, drops: usize) -> f64 {
        drops as f64 * 60.0 / self.end_s.max(1.0)
    }
}

/// A cause the simulation can produce: the destination's throttles and txgs.
pub fn modelled(cause: &super::Cause) -> bool {
    use super::Cause as C;
    matches!(
        cause,
        C::TxgSync { .. }
            | C::ZfsThrottle { .. }
            | C::DirtyThrottle { .. }
            | C::WritebackBurst { .. }
            | C::DeviceSaturated { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_as_the_kernel_files_take_them() {
        let mut s = Settings::default();
        s.set("zfs_dirty_data_max=1G").expect("1G");
        assert_eq!(s.zfs_dirty_data_max, Some(1 << 30));
        s.set("/sys/module/zfs/parameters/zfs_dirty_data_max=67108864")
            .expect("bytes");
        assert_eq!(s.zfs_dirty_data_max, Some(64 << 20));
        s.set("vm.dirty_bytes=300MB").expect("MB");
        assert_eq!(s.dirty_bytes, Some(300_000_000));
        s.set("/proc/sys/vm/dirty_background_bytes=100M")
            .expect("path");
        assert_eq!(s.dirty_background_bytes, Some(100 << 20));
        s.set("zfs_txg_timeout=2").expect("secs");
        assert_eq!(s.zfs_txg_timeout, Some(2));
        assert!(matches!(
            s.set("zfs_txg_timeout=0"),
            Err(SettingError::Value { .. })
        ));
        assert!(matches!(
            s.set("zfs_arc_max=1G"),
            Err(SettingError::Unknown { .. })
        ));
        assert!(matches!(s.set("1G"), Err(SettingError::Form(_))));
        assert!(matches!(
            s.set("zfs_dirty_data_sync_percent=120"),
            Err(SettingError::Value { .. })
        ));
    }

    #[test]
    fn a_tunable_of_the_other_filesystem_is_refused() {
        let ext4 = Environment {
            fs_type: Some("ext4".into()),
            ..Environment::default()
        };
        let zfs = Environment {
            fs_type: Some("zfs".into()),
            ..Environment::default()
        };
        let mut s = Settings::default();
        s.set("zfs_dirty_data_max=1G").expect("set");
        assert!(s.check_against(&zfs).is_ok());
        let err = s.check_against(&ext4).expect_err("zfs on ext4");
        assert!(err.to_string().contains("zfs_dirty_data_max"), "{err}");
        let mut v = Settings::default();
        v.set("vm.dirty_bytes=300M").expect("set");
        assert!(v.check_against(&ext4).is_ok());
        assert!(v.check_against(&zfs).is_err());
    }
}
