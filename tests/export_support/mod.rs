//! Test data for the recording and export tests: a realistic 60 s copy onto ZFS built in
//! code (deterministic), and the real ZFS lab recording fixture.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use copyscope::copy::{EngineEvent, ProgressSnapshot};
use copyscope::model::{Cause, DropInfo, Event, EventKind};
use copyscope::report::recording::{FORMAT_VERSION, Header, Recording, Summary};
use copyscope::sample::{
    Cpu, DiskCounters, DmuTx, Environment, PageCache, Psi, Sample, TxgRow, ZfsSample,
};

pub const MB: f64 = 1e6;
/// Plateau speeds of the built copy: 110 MB/s for the first 30 s, 80 MB/s after.
pub const FAST_BPS: f64 = 110.0 * MB;
pub const SLOW_BPS: f64 = 80.0 * MB;
/// The three drops (start s, end s, speed during the drop).
pub const DROPS: [(f64, f64, f64); 3] = [
    (12.0, 13.5, 5.0 * MB),
    (30.5, 31.7, 2.0 * MB),
    (47.0, 48.8, 4.0 * MB),
];
/// The copy ends here; a flush runs to FLUSH_END.
pub const COPY_END: f64 = 57.0;
pub const FLUSH_END: f64 = 59.5;
pub const DURATION: f64 = 60.0;
const TICK: f64 = 0.1;

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings")
        .join(name)
}

/// The real ZFS lab recording (dd of 3000 MiB onto a 40 MB/s pool).
pub fn zfs_lab() -> Recording {
    Recording::load(&fixture_path("zfs-40mbps-zero.jsonl")).expect("ZFS lab fixture loads")
}

/// Copy speed at time t (bytes/s): two plateaus, ±2 % deterministic ripple, three drops.
pub fn speed_at(t: f64) -> f64 {
    if t >= COPY_END {
        return 0.0;
    }
    for (a, b, v) in DROPS {
        if t >= a && t < b {
            return v;
        }
    }
    let base = if t < 30.0 { FAST_BPS } else { SLOW_BPS };
    let i = (t / TICK).round() as i64;
    base * (1.0 + 0.004 * (((i * 37) % 11) - 5) as f64)
}

fn header() -> Header {
    Header {
        format_version: FORMAT_VERSION,
        copyscope_version: "0.1.0".to_string(),
        started_at: "2026-11-30T04:20:55Z".to_string(),
        host: "nas".to_string(),
        kernel: "6.1.0-57-amd64".to_string(),
        command_line: vec![
            "copyscope".to_string(),
            "/home/ann/iso".to_string(),
            "/tank/backup".to_string(),
        ],
        sources: vec!["/home/ann/iso".to_string()],
        destination: "/tank/backup".to_string(),
        environment: Environment {
            fs_type: Some("zfs".to_string()),
            mount_source: Some("tank/backup".to_string()),
            mount_point: Some("/tank/backup".to_string()),
            zfs_pool: Some("tank".to_string()),
            zfs_dataset: Some("tank/backup".to_string()),
            dest_disks: vec!["sdb".to_string(), "sdc".to_string()],
            tunables: vec![("zfs_dirty_data_max".to_string(), "4294967296".to_string())],
            zfs_dirty_data_max: Some(4_294_967_296),
            zfs_sync_percent: Some(20),
            zfs_delay_percent: Some(60),
            page_size: 4096,
            notes: vec![],
            ..Default::default()
        },
        interval_ms: 100,
        watch: None,
        bench: None,
    }
}

/// Txg n syncs during [5n - 3, 5n - 1.5] s for n = 1..12 (ndirty 500 MB, 420 MB written).
fn txg_window(n: u64) -> (f64, f64) {
    (5.0 * n as f64 - 3.0, 5.0 * n as f64 - 1.5)
}

/// A 60 s copy at 100 ms ticks onto ZFS: cumulative counters, diskstats writing about
/// 100 MB/s (280 MB/s while a txg syncs), txg rows, three drops attributed to txg syncs,
/// a file error, and a flush from 57 s to 59.5 s reported by the engine.
#[expect(
    clippy::too_many_lines,
    reason = "one synthetic recording tick by tick: its counters, txgs, drops and flush are checked against each other in one place"
)]
pub fn built_recording(with_summary: bool) -> Recording {
    let mut rec = Recording::new(header());
    let ticks = (DURATION / TICK).round() as u64;
    let mut bytes = 0.0f64;
    let mut sectors = 0.0f64;
    for i in 0..=ticks {
        let t = i as f64 * TICK;
        if i > 0 {
            bytes += speed_at(t - TICK / 2.0) * TICK;
            let syncing = (1..=12).any(|n| {
                let (a, b) = txg_window(n);
                t - TICK / 2.0 >= a && t - TICK / 2.0 < b
            });
            let dev = if t > FLUSH_END {
                0.0
            } else if syncing {
                280.0 * MB
            } else {
                60.0 * MB
            };
            sectors += dev * TICK / 512.0;
        }
        let t_ns = i * 100_000_000;
        let committed = (1..=12u64).filter(|n| txg_window(*n).1 <= t).count() as u64;
        let txgs: Vec<TxgRow> = (committed.saturating_sub(2).max(1)..=committed)
            .map(|n| {
                let (a, b) = txg_window(n);
                TxgRow {
                    txg: 100 + n,
                    birth: ((a - 5.0).max(0.0) * 1e9) as u64 + 1_000_000_000_000,
                    state: 'C',
                    ndirty: 500_000_000,
                    nread: 0,
                    nwritten: 420_000_000,
                    reads: 0,
                    writes: 3000,
                    otime: ((a - (a - 5.0).max(0.0)) * 1e9) as u64,
                    qtime: 0,
                    wtime: 0,
                    stime: ((b - a) * 1e9) as u64,
                }
            })
            .collect();
        rec.samples.push(Sample {
            t_ns,
            engine: ProgressSnapshot {
                bytes_copied: bytes as u64,
                files_done: (t / 6.0).floor().min(9.0) as u64 + u64::from(t >= COPY_END),
                files_failed: u64::from(t >= 20.0),
                bytes_total: 6_000_000_000,
                files_total: 11,
                scan_done: t >= 0.5,
                read_ns: (t * 0.2e9) as u64,
                write_ns: (t * 0.7e9) as u64,
                paced_ns: 0,
            },
            page_cache: Some(PageCache {
                dirty: 120_000_000,
                writeback: 8_000_000,
                bg_thresh: 1_600_000_000,
                thresh: 3_200_000_000,
                written: (sectors * 512.0) as u64,
            }),
            dest_disk: Some(DiskCounters {
                sectors_read: 1000,
                sectors_written: sectors as u64,
                io_ticks_ms: (t * 900.0) as u64,
                weighted_ms: (t * 4000.0) as u64,
                disks: 2,
            }),
            source_disk: None,
            psi_io: Some(Psi {
                some_us: (t * 1e5) as u64,
                full_us: (t * 5e4) as u64,
            }),
            cpu: Some(Cpu {
                busy_pct: 23.5,
                max_core_pct: 41.25,
            }),
            threads: None,
            net_rx: None,
            exact: None,
            evidence: None,
            pipeline: None,
            zfs: Some(ZfsSample {
                pool: "tank".to_string(),
                txgs,
                dmu_tx: DmuTx {
                    assigned: i * 40,
                    delay: 0,
                    dirty_throttle: 0,
                    dirty_delay: if t > 30.5 { 77 } else { 0 },
                    dirty_over_max: 0,
                },
                arc_anon: Some(300_000_000),
                // Births above are offset by 1000 s on the raw clock.
                birth_offset_ns: -1_000_000_000_000,
                ..Default::default()
            }),
        });
    }
    for n in 1..=12u64 {
        let (a, b) = txg_window(n);
        rec.events.push(Event {
            t_ns: (a * 1e9) as u64,
            kind: EventKind::TxgSyncStarted { txg: 100 + n },
        });
        rec.events.push(Event {
            t_ns: (b * 1e9) as u64,
            kind: EventKind::TxgCommitted {
                txg: 100 + n,
                ndirty: 500_000_000,
                nwritten: 420_000_000,
                stime_ns: ((b - a) * 1e9) as u64,
            },
        });
    }
    for (k, (a, b, v)) in DROPS.iter().enumerate() {
        let reference = if *a < 30.0 { FAST_BPS } else { SLOW_BPS };
        let mut causes = vec![Cause::TxgSync {
            txg: 103 + 3 * k as u64,
            ndirty: 500_000_000,
            stime_ns: 1_500_000_000,
            dirty_pct_of_max: Some(11.6),
            syncs: None,
            own_pct: None,
        }];
        if k == 1 {
            causes.push(Cause::ZfsThrottle {
                delays: 77,
                over_max: 0,
            });
        }
        rec.events.push(Event {
            t_ns: (a * 1e9) as u64,
            kind: EventKind::Drop(DropInfo {
                end_ns: (b * 1e9) as u64,
                reference_bps: reference,
                min_bps: *v,
                bytes_lost: (reference - v) * (b - a),
                causes,
                held_exact_ns: None,
            }),
        });
    }
    rec.events.push(Event {
        t_ns: 31_000_000_000,
        kind: EventKind::ZfsDelay { delays: 77 },
    });
    rec.events.sort_by_key(|e| e.t_ns);
    rec.engine_events = vec![
        (
            0,
            EngineEvent::FileStarted {
                path: PathBuf::from("debian-12.iso"),
                size: 600_000_000,
            },
        ),
        (
            500_000_000,
            EngineEvent::ScanDone {
                files: 11,
                bytes: 6_000_000_000,
            },
        ),
        (
            20_000_000_000,
            EngineEvent::FileFailed {
                path: PathBuf::from("secret/shadow.img"),
                error: "Permission denied (os error 13)".to_string(),
            },
        ),
        (57_000_000_000, EngineEvent::FlushStarted),
        (59_500_000_000, EngineEvent::FlushDone),
    ];
    if with_summary {
        let total = rec.samples.last().map_or(0, |s| s.engine.bytes_copied);
        rec.summary = Some(Summary {
            bytes: total,
            files: 10,
            failed: 1,
            elapsed_secs: COPY_END,
            durable_secs: Some(FLUSH_END),
            to_cache_bps: total as f64 / COPY_END,
            durable_bps: Some(total as f64 / FLUSH_END),
            drops: 3,
            lost_secs_by_cause: vec![("txg sync".to_string(), 4.3)],
            exit_code: 1,
        });
    }
    rec
}
