//! Words for the model's events: one-line diagnoses for the events panel and reports,
//! short cause labels, and the marker glyph of each event kind.

use super::{Cause, DropInfo, Event, EventKind};
use crate::present::format::{fmt_bytes, fmt_count, fmt_pct, fmt_rate, fmt_rate_pair, fmt_secs};
use crate::present::markers::MarkerKind;
use crate::present::quote::file_line;

impl EventKind {
    /// A short name of the kind.
    pub fn short(&self) -> &'static str {
        match self {
            EventKind::Drop(_) => "drop",
            EventKind::TxgSyncStarted { .. } => "txg sync",
            EventKind::TxgCommitted { .. } => "txg commit",
            EventKind::WritebackStarted { .. } => "writeback",
            EventKind::DirtyThrottleZone { .. } => "throttle zone",
            EventKind::ZfsDelay { .. } => "zfs delay",
            EventKind::Phase { .. } => "phase",
            EventKind::FileError { .. } => "error",
            EventKind::Paused => "paused",
            EventKind::Resumed => "resumed",
            EventKind::ScanDone { .. } => "scan done",
            EventKind::FlushStarted { .. } => "flush",
            EventKind::FlushDone { .. } => "flushed",
            EventKind::Note { .. } => "note",
        }
    }
}

impl Cause {
    /// A short label for tables and totals.
    pub fn label(&self) -> &'static str {
        match self {
            Cause::DiskSlowed { .. } => "disk slowed",
            Cause::TxgSync { .. } => "txg sync",
            Cause::ZfsThrottle { .. } => "zfs throttle",
            Cause::DirtyThrottle { .. } => "dirty throttle",
            Cause::WritebackBurst { .. } => "writeback",
            Cause::DeviceSaturated { .. } => "disk busy",
            Cause::SourceStall { .. } => "source stall",
            Cause::PipeReader { .. } => "pipe reader",
            Cause::PipelineStage { .. } => "pipeline stage",
            Cause::CpuSaturated { .. } | Cause::CpuStarved { .. } => "cpu",
            Cause::ZilCommit { .. } => "sync writes",
            Cause::JournalWait { .. } => "journal",
            Cause::NearlyFull { .. } => "nearly full",
            Cause::AnotherWriter { .. } => "another writer",
            Cause::NetworkReceive { .. } => "network",
            Cause::Unknown => "unknown",
        }
    }

    /// The cause with its evidence, as a clause.
    #[expect(
        clippy::too_many_lines,
        reason = "one arm per cause: every cause's words side by side, one vocabulary"
    )]
    pub fn describe(&self) -> String {
        match self {
            Cause::DiskSlowed {
                device,
                before_bps,
                during_bps,
                held,
                held_pct,
            } => {
                let mut s = format!(
                    "the disk slowed: {}",
                    fmt_rate_pair(*before_bps, *during_bps)
                );
                if !device.is_empty() {
                    s.push_str(&format!(" ({device} saturated)"));
                }
                if let Some(h) = held {
                    s.push_str(&format!("; the writer was held by {h}"));
                    if let Some(p) = held_pct {
                        s.push_str(&format!(" {} of the time", fmt_pct(*p)));
                    }
                }
                s
            }
            Cause::TxgSync { syncs: Some(r), .. } => {
                let mut s = format!(
                    "txgs {}-{} synced one after another through it ({} syncs, {} of the {})",
                    r.first,
                    r.last,
                    r.count,
                    fmt_secs(r.covered_ns as f64 / 1e9),
                    fmt_secs(r.drop_ns as f64 / 1e9)
                );
                if let Some(p) = r.held_pct {
                    s.push_str(&format!(
                        "; the writer waited on a txg {} of the time",
                        fmt_pct(p)
                    ));
                }
                if let Cause::TxgSync {
                    own_pct: Some(p), ..
                } = self
                {
                    s.push_str(&format!("; {}", own_sync_clause(*p)));
                }
                s
            }
            Cause::TxgSync {
                txg,
                ndirty,
                stime_ns,
                dirty_pct_of_max,
                syncs: None,
                own_pct,
            } => {
                let mut s = if *stime_ns > 0 {
                    format!(
                        "txg {txg} syncing {} took {}",
                        fmt_bytes(*ndirty),
                        fmt_secs(*stime_ns as f64 / 1e9)
                    )
                } else {
                    format!("txg {txg} was syncing")
                };
                if let Some(p) = dirty_pct_of_max {
                    s.push_str(&format!(
                        "; dirty had reached {} of zfs_dirty_data_max",
                        fmt_pct(*p)
                    ));
                }
                if let Some(p) = own_pct {
                    s.push_str(&format!("; {}", own_sync_clause(*p)));
                }
                s
            }
            Cause::ZfsThrottle { delays, over_max } => {
                let mut s = format!("ZFS write throttle delayed {} writes", fmt_count(*delays));
                if *over_max > 0 {
                    s.push_str(&format!(
                        " and {} waited at zfs_dirty_data_max",
                        fmt_count(*over_max)
                    ));
                }
                s
            }
            Cause::DirtyThrottle {
                dirty,
                freerun,
                write_share,
            } => {
                let mut s = if dirty > freerun {
                    format!(
                        "dirty {} above freerun {}: the kernel paced the writer",
                        fmt_bytes(*dirty),
                        fmt_bytes(*freerun)
                    )
                } else {
                    // Seen on the writer's stack below the system's freerun: the device's own
                    // share (strictlimit, max_ratio) or a cgroup's limit paced it.
                    format!(
                        "the kernel paced the writer at dirty {}, under the system's freerun {} \
                         (a per-device or cgroup limit)",
                        fmt_bytes(*dirty),
                        fmt_bytes(*freerun)
                    )
                };
                if *write_share > 0.0 {
                    s.push_str(&format!(
                        " (in write() {} of the time)",
                        // Time blocked in write() is counted when the call returns, and several
                        // workers add up: the share of wall time can exceed 1.
                        fmt_pct((write_share * 100.0).min(100.0))
                    ));
                }
                s
            }
            Cause::WritebackBurst {
                writeback,
                device_bps,
            } => format!(
                "writeback burst: {} under writeback, disk writing {}",
                fmt_bytes(*writeback),
                fmt_rate(*device_bps)
            ),
            Cause::DeviceSaturated {
                util_pct,
                device_bps,
            } => format!(
                "destination disk {} busy at {}",
                fmt_pct(*util_pct),
                fmt_rate(*device_bps)
            ),
            Cause::SourceStall { read_share } => format!(
                "source stalled: reading {} of the time",
                fmt_pct((read_share * 100.0).min(100.0))
            ),
            Cause::PipeReader {
                held_pct,
                write_share,
            } => format!(
                "the reader of the pipe stopped taking data: waited for room in the pipe {} of the time",
                fmt_pct(held_pct.unwrap_or(write_share * 100.0).min(100.0))
            ),
            Cause::PipelineStage {
                stage,
                of,
                name,
                by,
                held_pct,
            } => format!(
                "stage {stage} of {of}, {name}, held the pipeline: {} {} of the time",
                super::pipeline::limited_by_words(*by),
                fmt_pct(held_pct.min(100.0))
            ),
            Cause::CpuSaturated { busy_pct } => format!("CPU {} busy", fmt_pct(*busy_pct)),
            Cause::CpuStarved {
                runq_wait_pct,
                max_core_pct,
            } => {
                let mut s = format!("waiting for a CPU {} of the time", fmt_pct(*runq_wait_pct));
                if let Some(c) = max_core_pct {
                    s.push_str(&format!(" (busiest core {})", fmt_pct(*c)));
                }
                s
            }
            Cause::ZilCommit { commits, held_pct } => {
                let mut s = "synchronous writes: ".to_string();
                match held_pct {
                    Some(p) => {
                        s.push_str(&format!("writer in zil_commit {} of the time", fmt_pct(*p)))
                    }
                    None => s.push_str("the writer waited while the ZIL committed"),
                }
                if *commits > 0 {
                    s.push_str(&format!(", {} ZIL commits", fmt_count(*commits)));
                }
                s
            }
            Cause::JournalWait { held_pct } => {
                format!(
                    "ext4 journal: writer waiting on jbd2 {} of the time",
                    fmt_pct(*held_pct)
                )
            }
            Cause::NearlyFull { held_pct } => format!(
                "filesystem nearly full: ext4 stopped delaying allocation, writer waiting for \
                 its writeback {} of the time",
                fmt_pct(*held_pct)
            ),
            Cause::AnotherWriter {
                device, other_bps, ..
            } => format!(
                "another writer: {} to {device} besides this copy",
                fmt_rate(*other_bps)
            ),
            Cause::NetworkReceive {
                before_bps,
                during_bps,
            } => format!(
                "network: receive rate fell with the writes ({} → {})",
                fmt_rate(*before_bps),
                fmt_rate(*during_bps)
            ),
            Cause::Unknown => "no signal explains it".to_string(),
        }
    }
}

impl DropInfo {
    /// Length of the drop in seconds, given its start.
    pub fn secs(&self, start_ns: u64) -> f64 {
        self.end_ns.saturating_sub(start_ns) as f64 / 1e9
    }
}

impl Event {
    /// One line that reads like a diagnosis.
    #[expect(
        clippy::too_many_lines,
        reason = "one arm per event kind: every event's line side by side"
    )]
    pub fn describe(&self) -> String {
        match &self.kind {
            EventKind::Drop(d) => {
                let mut s = format!(
                    "drop {} for {}",
                    fmt_rate_pair(d.reference_bps, d.min_bps),
                    fmt_secs(d.secs(self.t_ns))
                );
                let mut causes = d.causes.iter();
                if let Some(first) = causes.next() {
                    s.push_str(": ");
                    s.push_str(&first.describe());
                    if let Some(ns) = d.held_exact_ns {
                        s.push_str(&format!(
                            " (the writer held there {}, traced)",
                            fmt_secs(ns as f64 / 1e9)
                        ));
                    }
                }
                let rest: Vec<&str> = causes.map(Cause::label).collect();
                if !rest.is_empty() {
                    s.push_str("; also ");
                    s.push_str(&rest.join(", "));
                }
                s
            }
            EventKind::TxgSyncStarted { txg } => format!("txg {txg} sync started"),
            EventKind::TxgCommitted {
                txg,
                ndirty,
                nwritten,
                stime_ns,
            } => {
                let secs = *stime_ns as f64 / 1e9;
                let mut s = format!(
                    "txg {txg} committed {} in {}",
                    fmt_bytes(*ndirty),
                    fmt_secs(secs)
                );
                if secs > 0.0 && *nwritten > 0 {
                    s.push_str(&format!(" ({} to disk)", fmt_rate(*nwritten as f64 / secs)));
                }
                s
            }
            EventKind::WritebackStarted {
                dirty,
                bg_thresh,
                writeback,
            } => match (dirty > bg_thresh, *writeback > 0) {
                (true, _) => format!(
                    "dirty {} crossed the background threshold {}: writeback started",
                    fmt_bytes(*dirty),
                    fmt_bytes(*bg_thresh)
                ),
                (false, true) => format!(
                    "dirty {} + writeback {} crossed the background threshold {}: writeback started",
                    fmt_bytes(*dirty),
                    fmt_bytes(*writeback),
                    fmt_bytes(*bg_thresh)
                ),
                (false, false) => format!(
                    "writeback started at the background threshold {} (dirty {}, the rest already being written back)",
                    fmt_bytes(*bg_thresh),
                    fmt_bytes(*dirty)
                ),
            },
            EventKind::DirtyThrottleZone { dirty, freerun } => format!(
                "dirty + writeback {} reached the throttle limit ({} freerun): the kernel is pacing writes",
                fmt_bytes(*dirty),
                fmt_bytes(*freerun)
            ),
            EventKind::ZfsDelay { delays } => format!(
                "ZFS write throttle: {} writes delayed (dirty above zfs_delay_min_dirty_percent)",
                fmt_count(*delays)
            ),
            EventKind::Phase {
                bytes,
                rate_bps,
                slowed_from_bps: Some(from),
                ..
            } => format!(
                "the disk slowed after {} and stayed slow: now at {}, was {}",
                fmt_bytes(*bytes),
                fmt_rate(*rate_bps),
                fmt_rate(*from)
            ),
            EventKind::Phase {
                bytes,
                rate_bps,
                pool: false,
                ..
            } => format!(
                "page cache full after {}: now at disk speed, {}",
                fmt_bytes(*bytes),
                fmt_rate(*rate_bps)
            ),
            EventKind::Phase {
                bytes,
                rate_bps,
                pool: true,
                ..
            } => format!(
                "pool syncing back to back after {}: now at pool speed, {}",
                fmt_bytes(*bytes),
                fmt_rate(*rate_bps)
            ),
            EventKind::FileError { path, error } if path.is_empty() => format!("error: {error}"),
            EventKind::FileError { path, error } => file_line(std::path::Path::new(path), error),
            EventKind::Paused => "paused".to_string(),
            EventKind::Resumed => "resumed".to_string(),
            EventKind::ScanDone { files, bytes } => format!(
                "scan done: {}, {}",
                crate::present::format::fmt_files(*files),
                fmt_bytes(*bytes)
            ),
            EventKind::FlushStarted {
                dirty,
                system: false,
            } => format!("flushing this copy's {} to disk", fmt_bytes(*dirty)),
            EventKind::FlushStarted {
                dirty,
                system: true,
            } => format!(
                "flushing to disk (system: dirty {}, all writers)",
                fmt_bytes(*dirty)
            ),
            EventKind::FlushDone { secs } => format!("flushed in {}", fmt_secs(*secs)),
            EventKind::Note { text } => text.clone(),
        }
    }
}

/// The marker family of each event kind (the vocabulary itself is present/markers.rs).
impl MarkerKind {
    /// The family of an event.
    pub fn of(kind: &EventKind) -> MarkerKind {
        match kind {
            EventKind::Drop(_) => MarkerKind::Drop,
            EventKind::TxgSyncStarted { .. } | EventKind::TxgCommitted { .. } => MarkerKind::Txg,
            EventKind::ZfsDelay { .. } => MarkerKind::ZfsThrottle,
            EventKind::WritebackStarted { .. } => MarkerKind::Writeback,
            EventKind::DirtyThrottleZone { .. } => MarkerKind::DirtyThrottle,
            EventKind::FileError { .. } => MarkerKind::FileError,
            EventKind::FlushStarted { .. } | EventKind::FlushDone { .. } => MarkerKind::Flush,
            EventKind::Paused | EventKind::Resumed => MarkerKind::Pause,
            EventKind::ScanDone { .. } => MarkerKind::Scan,
            EventKind::Note { .. } => MarkerKind::Note,
            EventKind::Phase { .. } => MarkerKind::Phase,
        }
    }
}

/// "the writer's own calls asked for it (linkat, syncfs): 80 % of the time": a sync the
/// writer waited for because it asked for one, not because the pool fell behind.
fn own_sync_clause(pct: f64) -> String {
    format!(
        "the writer's own calls asked for it (linkat, syncfs) and waited {} of the time",
        fmt_pct(pct)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writeback line says what crossed the threshold: dirty alone, dirty + writeback (the
    /// flusher already moved part of it), or, from a recording without the writeback figure,
    /// never a smaller number "crossing" a larger one.
    #[test]
    fn writeback_started_names_what_crossed() {
        let says = |dirty, writeback| {
            Event {
                t_ns: 0,
                kind: EventKind::WritebackStarted {
                    dirty,
                    bg_thresh: 100_000_000,
                    writeback,
                },
            }
            .describe()
        };
        assert_eq!(
            says(112_000_000, 0),
            "dirty 112 MB crossed the background threshold 100 MB: writeback started"
        );
        assert_eq!(
            says(74_100_000, 40_000_000),
            "dirty 74.1 MB + writeback 40.0 MB crossed the background threshold 100 MB: writeback started"
        );
        assert_eq!(
            says(74_100_000, 0),
            "writeback started at the background threshold 100 MB (dirty 74.1 MB, the rest already being written back)"
        );
    }

    #[test]
    fn drop_reads_like_a_diagnosis() {
        let ev = Event {
            t_ns: 31_200_000_000,
            kind: EventKind::Drop(DropInfo {
                end_ns: 32_600_000_000,
                reference_bps: 118e6,
                min_bps: 3e6,
                bytes_lost: 150e6,
                causes: vec![
                    Cause::TxgSync {
                        txg: 48211,
                        ndirty: 1_100_000_000,
                        stime_ns: 1_600_000_000,
                        dirty_pct_of_max: Some(62.0),
                        syncs: None,
                        own_pct: None,
                    },
                    Cause::ZfsThrottle {
                        delays: 656,
                        over_max: 0,
                    },
                ],
                held_exact_ns: None,
            }),
        };
        assert_eq!(
            ev.describe(),
            "drop 118 → 3.00 MB/s for 1.4 s: txg 48211 syncing 1.10 GB took 1.6 s; \
             dirty had reached 62 % of zfs_dirty_data_max; also zfs throttle"
        );
    }
}
