//! Signals: root-relative readers of /proc, /sys and the ZFS kstats, pure parsers,
//! and the sampler thread that ticks on fixed deadlines (docs/signals.md).
//!
//! The [`Sample`] type is the contract between the sampler, the model, recordings
//! and replay: it holds raw cumulative counters (never rates), so a recording replays
//! through the model into exactly the same events.

use serde::{Deserialize, Serialize};

use crate::copy::ProgressSnapshot;

pub mod blockdev;
pub mod cpu;
pub mod discover;
pub mod diskstats;
pub mod env;
pub mod error;
pub mod exact;
pub mod intake;
pub mod mountinfo;
pub mod net;
pub mod pipeline;
pub mod procfiles;
pub mod procfs;
pub mod reader;
pub mod root;
pub mod sampler;
pub mod threads;
pub mod writers;
pub mod zfs;

pub use blockdev::BlockDev;
pub use env::{probe_environment, probe_environment_with, probe_stream_environment};
pub use error::ParseError;
pub use exact::{EvidenceLevel, ExactSample};
pub use reader::{SignalReader, read_sample};
pub use root::SysRoot;
pub use sampler::{SampleSource, SamplerHandle, SamplerStats, spawn_sampler, spawn_sampler_from};
pub use threads::{ThreadSample, WaitClass};

/// One tick of every signal. Optional parts are `None` when the source is missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Nanoseconds since the copy started, on the monotonic clock.
    pub t_ns: u64,
    /// Engine counters (cumulative).
    pub engine: ProgressSnapshot,
    /// Page cache figures, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cache: Option<PageCache>,
    /// Destination block devices summed (leaf disks), cumulative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dest_disk: Option<DiskCounters>,
    /// Source block devices summed, cumulative (None when the same as destination or unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_disk: Option<DiskCounters>,
    /// /proc/pressure/io totals, µs cumulative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_io: Option<Psi>,
    /// CPU busy in percent (0–100) averaged over all cores since the previous tick, and the busiest core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Cpu>,
    /// ZFS state of the destination pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs: Option<ZfsSample>,
    /// The copier's own threads: states, kernel waits, run-queue wait (absent in recordings
    /// made before it existed, and when /proc/self/task is not readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<ThreadSample>,
    /// `watch --net IFACE`: bytes the interface received so far (sysfs rx_bytes, cumulative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx: Option<u64>,
    /// The writer's threads' exact off-CPU time by class, from the kernel's trace (root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<ExactSample>,
    /// What the writer's time was measured with at this tick (the fallback chain's level;
    /// absent in recordings made before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceLevel>,
    /// `watch --pipeline`: each stage's bytes so far and its state at this tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<pipeline::PipelineSample>,
}

/// /proc/meminfo and /proc/vmstat figures, all converted to bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageCache {
    /// meminfo Dirty.
    pub dirty: u64,
    /// meminfo Writeback.
    pub writeback: u64,
    /// vmstat nr_dirty_background_threshold × page size.
    pub bg_thresh: u64,
    /// vmstat nr_dirty_threshold × page size.
    pub thresh: u64,
    /// vmstat nr_written × page size (cumulative).
    pub written: u64,
}

impl PageCache {
    /// (thresh + bg) / 2: below this the kernel never pauses a writer.
    pub fn freerun(&self) -> u64 {
        // Halve first: the sum of two u64 values from an arbitrary file can overflow.
        self.thresh / 2 + self.bg_thresh / 2 + (self.thresh % 2 + self.bg_thresh % 2) / 2
    }
}

/// /proc/diskstats fields summed over the relevant whole disks (cumulative).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskCounters {
    pub sectors_read: u64,
    pub sectors_written: u64,
    /// Field 10: ms the device had I/O in flight.
    pub io_ticks_ms: u64,
    /// Field 11: weighted ms.
    pub weighted_ms: u64,
    /// Number of whole disks summed (for utilisation: io_ticks / disks).
    pub disks: u32,
}

/// /proc/pressure/io totals (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Psi {
    pub some_us: u64,
    pub full_us: u64,
}

/// CPU use over the last tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub busy_pct: f32,
    pub max_core_pct: f32,
}

/// ZFS pool signals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZfsSample {
    pub pool: String,
    /// The rows of `txgs` from the last read, oldest first (only the newest few are kept per sample).
    pub txgs: Vec<TxgRow>,
    /// Cumulative dmu_tx counters.
    pub dmu_tx: DmuTx,
    /// arcstats anon_size (dirty + in-flight) in bytes, the live stand-in for dirty data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arc_anon: Option<u64>,
    /// Offset to add to a txg `birth` (ns, CLOCK_MONOTONIC_RAW) to get `t_ns` (may be negative).
    pub birth_offset_ns: i64,
    /// Cumulative logical bytes written into the destination dataset (objset kstat
    /// `nwritten`, OpenZFS 0.8+): the watch-mode intake signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objset_nwritten: Option<u64>,
    /// Cumulative ZIL commits (`/proc/spl/kstat/zfs/zil` `zil_commit_count`, all pools):
    /// synchronous writes (fsync, O_SYNC, `sync=always`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zil_commits: Option<u64>,
}

/// One row of /proc/spl/kstat/zfs/POOL/txgs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxgRow {
    pub txg: u64,
    pub birth: u64,
    /// O, Q, W, S or C.
    pub state: char,
    pub ndirty: u64,
    pub nread: u64,
    pub nwritten: u64,
    pub reads: u64,
    pub writes: u64,
    pub otime: u64,
    pub qtime: u64,
    pub wtime: u64,
    pub stime: u64,
}

/// Cumulative counters from /proc/spl/kstat/zfs/dmu_tx (missing fields are 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DmuTx {
    pub assigned: u64,
    pub delay: u64,
    pub dirty_throttle: u64,
    pub dirty_delay: u64,
    pub dirty_over_max: u64,
}

/// Facts read once at start (tunables, filesystem), for the header, the kernel panel and recordings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Destination filesystem type from mountinfo (ext4, zfs, ...).
    pub fs_type: Option<String>,
    /// Mount source (device or pool/dataset).
    pub mount_source: Option<String>,
    pub mount_point: Option<String>,
    /// ZFS pool and dataset when the destination is on ZFS.
    pub zfs_pool: Option<String>,
    pub zfs_dataset: Option<String>,
    /// Destination leaf disks used for diskstats (names).
    pub dest_disks: Vec<String>,
    /// Tunables as (name, value) text pairs: vm.dirty_* and the ZFS module parameters that matter.
    pub tunables: Vec<(String, String)>,
    /// zfs_dirty_data_max in bytes, when on ZFS.
    pub zfs_dirty_data_max: Option<u64>,
    /// The loaded OpenZFS module's version (`/sys/module/zfs/version`, e.g. `2.1.11-1`), when
    /// on ZFS; `None` in recordings made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_version: Option<String>,
    /// zfs_dirty_data_sync_percent and zfs_delay_min_dirty_percent.
    pub zfs_sync_percent: Option<u32>,
    pub zfs_delay_percent: Option<u32>,
    /// Page size used for vmstat conversions.
    pub page_size: u64,
    /// One line per missing source: what is n/a and what to do about it.
    pub notes: Vec<String>,
    /// The destination's physical whole disks, by device number (diskstats is looked up by
    /// number); `dest_disks` holds their names.
    #[serde(default)]
    pub dest_devices: Vec<BlockDev>,
    /// The sources' physical whole disks; empty when they are the destination's or unknown.
    #[serde(default)]
    pub source_devices: Vec<BlockDev>,
    /// The destination dataset's objset kstat file name (`objset-0x36`), when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_objset: Option<String>,
    /// MemTotal from /proc/meminfo, bytes: the verdict says what share of RAM the dirty limits
    /// are (ZFS sizes `zfs_dirty_data_max` from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_total: Option<u64>,
    /// Space free on the destination's filesystem as the copy began (`statvfs` `f_bavail`),
    /// bytes: on ZFS, what the pool's space reservation weighs 24 × the unsynced data against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dest_free_bytes: Option<u64>,
    /// The copy's own rate limit (`--bwlimit`, or the demo's pace), bytes/s: the verdict names
    /// it when the writer waited for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_bps: Option<u64>,
    /// A bench phase that only reads (it writes nothing): the verdict speaks of "the read".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reads_only: bool,
    /// `--pace auto`: the copy paced itself to the destination's sustained rate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pace_auto: bool,
    /// That limit is the demo's pace (the user typed no `--bwlimit`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rate_limit_is_demo_pace: bool,
    /// `copyscope watch`: whose writes were measured, so the verdict speaks of them and not of
    /// a copier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watched: Option<Box<Watched>>,
    /// `copyscope pipe`: what its standard input and output are (the destination's
    /// filesystem and disks above are those of a file on the output, the sources' those of a
    /// file on the input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe: Option<PipeEnds>,
}

/// `copyscope pipe`'s two ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipeEnds {
    pub input: crate::copy::pipe::EndKind,
    pub output: crate::copy::pipe::EndKind,
}

/// What a watch measured: the writers it followed (their threads' states are the budget), or
/// none (only the intake counter, no thread states).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watched {
    /// `--comm` names.
    #[serde(default)]
    pub comms: Vec<String>,
    /// `--pid` values.
    #[serde(default)]
    pub pids: Vec<u32>,
    /// The intake signal ("process wchar", "objset nwritten", "diskstats sectors written").
    #[serde(default)]
    pub intake: String,
    /// `--all`: the writers were found, not named.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// `--pipeline`: the pids given (a stage of it, or the shell that runs it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipeline: Vec<u32>,
}
