//! The model: bounded time series built from [`Sample`]s, drop detection and
//! attribution (DESIGN §5a). Pure: time comes in with each sample, never from a clock.
//!
//! Contract: the main loop owns one [`Model`] and calls `apply(&Sample)` each tick and
//! `engine_event(t_ns, &EngineEvent)` for engine events; it reads `events()` and the
//! series for drawing. Replay feeds a recording through the same calls and must get the
//! same events.

use serde::{Deserialize, Serialize};

/// Something worth marking on the chart, with the time it happened (ns since start).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub t_ns: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A speed drop (§5a). `t_ns` of the event is the drop's start.
    Drop(DropInfo),
    TxgSyncStarted {
        txg: u64,
    },
    TxgCommitted {
        txg: u64,
        ndirty: u64,
        nwritten: u64,
        stime_ns: u64,
    },
    /// Page-cache dirty crossed the background threshold: flusher writeback starts.
    WritebackStarted {
        dirty: u64,
        bg_thresh: u64,
    },
    /// Dirty + writeback entered the throttle zone (above freerun).
    DirtyThrottleZone {
        dirty: u64,
        freerun: u64,
    },
    /// ZFS write throttle engaged (dmu_tx_dirty_delay rose).
    ZfsDelay {
        delays: u64,
    },
    FileError {
        path: String,
        error: String,
    },
    Paused,
    Resumed,
    ScanDone {
        files: u64,
        bytes: u64,
    },
    FlushStarted {
        dirty: u64,
    },
    FlushDone {
        secs: f64,
    },
    Note {
        text: String,
    },
}

/// A drop and what explains it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DropInfo {
    pub end_ns: u64,
    /// Reference speed before the drop, bytes/s.
    pub reference_bps: f64,
    /// Lowest smoothed speed during the drop, bytes/s.
    pub min_bps: f64,
    /// Bytes not copied against the reference during the drop.
    pub bytes_lost: f64,
    /// Best cause first; `Unknown` when nothing explains it.
    pub causes: Vec<Cause>,
}

/// A cause with its evidence numbers (§5a order: best first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum Cause {
    TxgSync {
        txg: u64,
        ndirty: u64,
        stime_ns: u64,
        dirty_pct_of_max: Option<f64>,
    },
    ZfsThrottle {
        delays: u64,
        over_max: u64,
    },
    DirtyThrottle {
        dirty: u64,
        freerun: u64,
        write_share: f64,
    },
    WritebackBurst {
        writeback: u64,
        device_bps: f64,
    },
    DeviceSaturated {
        util_pct: f64,
        device_bps: f64,
    },
    SourceStall {
        read_share: f64,
    },
    CpuSaturated {
        busy_pct: f64,
    },
    Unknown,
}
