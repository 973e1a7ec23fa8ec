//! Scenario tests of the model: sequences of 100 ms samples over time, each built to
//! show one cause of a drop with the signal levels of ../shared/reference/signals.md
//! (§4.2 example machine: 16 GiB, ~14 GiB dirtyable → bg 1.4 GiB, thresh 2.8 GiB,
//! freerun 2.1 GiB), run through the model, asserting the exact events and attributions.

use copyscope::copy::{EngineEvent, ProgressSnapshot};
use copyscope::model::{
    BacklogScope, Cause, Event, EventKind, Limit, Model, ModelConfig, ReplayItem,
};
use copyscope::sample::{
    Cpu, DiskCounters, DmuTx, Environment, PageCache, Psi, Sample, ThreadSample, TxgRow, WaitClass,
    ZfsSample,
};

const TICK: u64 = 100_000_000;
const MB: u64 = 1_000_000;
const GIB: f64 = (1u64 << 30) as f64;
/// 10 % and 20 % of 14 GiB dirtyable (signals.md §4.2).
const BG: u64 = (1.4 * GIB) as u64;
const THRESH: u64 = (2.8 * GIB) as u64;
const FREERUN: u64 = (BG + THRESH) / 2;

/// Signal levels that hold until changed.
#[derive(Debug, Clone)]
struct Levels {
    copy_mbps: f64,
    read_share: f64,
    write_share: f64,
    dirty: u64,
    writeback: u64,
    dev_mbps: f64,
    util_pct: f64,
    separate_source: bool,
    cpu_pct: f32,
    psi_pct: f64,
    zfs: Option<ZfsLevels>,
    /// The copy thread's state each tick (readable kernel stack) and the share of the tick it
    /// waited on a run queue; `None`: no thread data (recordings before it existed).
    writer: Option<(WaitClass, f64)>,
    /// The writer hands over `copy_mbps` in writes of this many bytes (smbd: 8 MiB), spaced
    /// 0.5-1.5 × the mean interval apart; `None`: a little every tick.
    burst: Option<f64>,
    /// The writer's kernel stacks could be read (root); else only its states are known.
    stacks: bool,
}

#[derive(Debug, Clone, Default)]
struct ZfsLevels {
    rows: Vec<TxgRow>,
    delays_per_tick: u64,
    over_max_per_tick: u64,
    arc_anon: Option<u64>,
}

impl Default for Levels {
    fn default() -> Self {
        Levels {
            copy_mbps: 0.0,
            read_share: 0.3,
            write_share: 0.4,
            dirty: 200 * MB,
            writeback: 10 * MB,
            dev_mbps: 100.0,
            util_pct: 50.0,
            separate_source: true,
            cpu_pct: 20.0,
            psi_pct: 5.0,
            zfs: None,
            writer: None,
            burst: None,
            stacks: true,
        }
    }
}

enum Item {
    Sample(Box<Sample>),
    Engine(u64, EngineEvent),
}

/// Builds the interleaved input of one scenario.
struct Scenario {
    t: u64,
    lv: Levels,
    bytes: f64,
    read_ns: u64,
    write_ns: u64,
    sectors: f64,
    io_ticks_ms: f64,
    psi_us: f64,
    delays: u64,
    over_max: u64,
    runq_ns: u64,
    /// Bursty writer: when the next write lands (ns) and the jitter's state.
    next_burst: u64,
    seed: u64,
    items: Vec<Item>,
}

impl Scenario {
    fn new(lv: Levels) -> Scenario {
        let mut s = Scenario {
            t: 0,
            lv,
            bytes: 0.0,
            read_ns: 0,
            write_ns: 0,
            sectors: 0.0,
            io_ticks_ms: 0.0,
            psi_us: 0.0,
            delays: 1000,
            over_max: 7,
            runq_ns: 0,
            next_burst: 0,
            seed: 7,
            items: Vec::new(),
        };
        s.emit();
        s
    }

    /// Changes the levels, then samples for `ms`.
    fn run(&mut self, ms: u64, change: impl FnOnce(&mut Levels)) -> &mut Self {
        change(&mut self.lv);
        for _ in 0..ms * 1_000_000 / TICK {
            self.t += TICK;
            let secs = TICK as f64 / 1e9;
            self.bytes += self.intake(secs);
            self.read_ns += (self.lv.read_share * TICK as f64) as u64;
            self.write_ns += (self.lv.write_share * TICK as f64) as u64;
            self.sectors += self.lv.dev_mbps * 1e6 * secs / 512.0;
            self.io_ticks_ms += self.lv.util_pct / 100.0 * secs * 1e3;
            self.psi_us += self.lv.psi_pct / 100.0 * secs * 1e6;
            if let Some((_, wait)) = self.lv.writer {
                self.runq_ns += (wait * TICK as f64) as u64;
            }
            if let Some(z) = &self.lv.zfs {
                self.delays += z.delays_per_tick;
                self.over_max += z.over_max_per_tick;
            }
            self.emit();
        }
        self
    }

    /// Bytes the writer hands over in the tick that just ended.
    fn intake(&mut self, secs: f64) -> f64 {
        let rate = self.lv.copy_mbps * 1e6;
        let Some(burst) = self.lv.burst else {
            return rate * secs;
        };
        if rate <= 0.0 {
            self.next_burst = self.t;
            return 0.0;
        }
        let mut bytes = 0.0;
        while self.next_burst < self.t {
            bytes += burst;
            self.seed = self
                .seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let jitter = 0.5 + (self.seed >> 33) as f64 / (1u64 << 31) as f64;
            self.next_burst += (burst / rate * jitter * 1e9) as u64;
        }
        bytes
    }

    fn engine(&mut self, ev: EngineEvent) -> &mut Self {
        self.items.push(Item::Engine(self.t, ev));
        self
    }

    fn emit(&mut self) {
        let lv = &self.lv;
        let disk = DiskCounters {
            sectors_read: 0,
            sectors_written: self.sectors.round() as u64,
            io_ticks_ms: self.io_ticks_ms.round() as u64,
            weighted_ms: 0,
            disks: 1,
        };
        let sample = Sample {
            t_ns: self.t,
            engine: ProgressSnapshot {
                bytes_copied: self.bytes.round() as u64,
                files_done: 0,
                files_failed: 0,
                bytes_total: 0,
                files_total: 0,
                scan_done: false,
                read_ns: self.read_ns,
                write_ns: self.write_ns,
                paced_ns: 0,
            },
            page_cache: Some(PageCache {
                dirty: lv.dirty,
                writeback: lv.writeback,
                bg_thresh: BG,
                thresh: THRESH,
                written: 0,
            }),
            dest_disk: Some(disk),
            source_disk: lv.separate_source.then_some(DiskCounters {
                disks: 1,
                ..Default::default()
            }),
            psi_io: Some(Psi {
                some_us: self.psi_us.round() as u64,
                full_us: 0,
            }),
            cpu: Some(Cpu {
                busy_pct: lv.cpu_pct,
                max_core_pct: lv.cpu_pct,
            }),
            zfs: lv.zfs.as_ref().map(|z| ZfsSample {
                pool: "tank".into(),
                txgs: z.rows.clone(),
                dmu_tx: DmuTx {
                    assigned: 0,
                    delay: 0,
                    dirty_throttle: 0,
                    dirty_delay: self.delays,
                    dirty_over_max: self.over_max,
                },
                arc_anon: z.arc_anon,
                birth_offset_ns: 0,
                ..Default::default()
            }),
            threads: lv.writer.map(|(class, _)| ThreadSample {
                threads: 2,
                active: 1,
                run_ns: 0,
                runq_wait_ns: self.runq_ns,
                classes: [(class, 1), (WaitClass::Sleeping, 1)].into_iter().collect(),
                held_in: None,
                stacks_readable: lv.stacks,
            }),
            net_rx: None,
            exact: None,
            evidence: None,
            pipeline: None,
        };
        self.items.push(Item::Sample(Box::new(sample)));
    }

    fn model(&self, env: Environment) -> Model {
        Model::replay_stream(
            ModelConfig::default(),
            env,
            self.items.iter().map(|i| match i {
                Item::Sample(s) => ReplayItem::Sample(s),
                Item::Engine(t, e) => ReplayItem::Engine { t_ns: *t, event: e },
            }),
        )
    }
}

fn ext4() -> Environment {
    Environment {
        fs_type: Some("ext4".into()),
        mount_source: Some("/dev/sda1".into()),
        mount_point: Some("/".into()),
        dest_disks: vec!["sda".into()],
        page_size: 4096,
        ..Default::default()
    }
}

fn zfs_env() -> Environment {
    Environment {
        fs_type: Some("zfs".into()),
        mount_source: Some("tank/backup".into()),
        zfs_pool: Some("tank".into()),
        zfs_dataset: Some("tank/backup".into()),
        zfs_dirty_data_max: Some(4 << 30),
        zfs_sync_percent: Some(20),
        zfs_delay_percent: Some(60),
        page_size: 4096,
        ..Default::default()
    }
}

fn drops(m: &Model) -> Vec<(u64, u64, Vec<Cause>)> {
    m.events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Drop(d) => Some((e.t_ns, d.end_ns, d.causes.clone())),
            _ => None,
        })
        .collect()
}

fn non_drop(m: &Model) -> Vec<&Event> {
    m.events()
        .iter()
        .filter(|e| !matches!(e.kind, EventKind::Drop(_)))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

/// Share of the evidence span (the drop plus the recovery ticks until it closed).
fn weighted(parts: &[(f64, f64)]) -> f64 {
    let total: f64 = parts.iter().map(|p| p.1).sum();
    parts.iter().map(|p| p.0 * p.1).sum::<f64>() / total
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scenario fed tick by tick, then its checks: the ticks are the story the test tells"
)]
fn dirty_above_freerun_with_the_writer_in_write() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 300.0,
        read_share: 0.2,
        write_share: 0.5,
        dirty: 900 * MB,
        writeback: 50 * MB,
        dev_mbps: 120.0,
        util_pct: 60.0,
        ..Default::default()
    });
    sc.run(3000, |_| {})
        // Dirty passes the background threshold: the flusher starts.
        .run(2000, |l| {
            l.dirty = 1600 * MB;
            l.writeback = 100 * MB;
            l.dev_mbps = 130.0;
            l.util_pct = 70.0;
        })
        // Dirty + writeback above freerun: balance_dirty_pages pauses the writer, which
        // now sits in write() and copies far below the disk's rate (copying at the disk's
        // rate would be a phase, not a drop: see the test after this one).
        .run(3000, |l| {
            l.copy_mbps = 30.0;
            l.read_share = 0.03;
            l.write_share = 0.95;
            l.dirty = 2200 * MB;
            l.writeback = 300 * MB;
            l.dev_mbps = 125.0;
            l.util_pct = 97.0;
            l.psi_pct = 40.0;
        })
        .run(3000, |l| {
            l.copy_mbps = 300.0;
            l.read_share = 0.2;
            l.write_share = 0.5;
            l.dirty = 1000 * MB;
            l.writeback = 100 * MB;
            l.dev_mbps = 120.0;
            l.util_pct = 60.0;
            l.psi_pct = 5.0;
        });
    let m = sc.model(ext4());

    let others = non_drop(&m);
    assert_eq!(others.len(), 2, "{others:?}");
    assert_eq!(
        *others[0],
        Event {
            t_ns: 31 * TICK,
            kind: EventKind::WritebackStarted {
                dirty: 1600 * MB,
                bg_thresh: BG,
                writeback: 100 * MB
            }
        }
    );
    assert_eq!(
        *others[1],
        Event {
            t_ns: 51 * TICK,
            kind: EventKind::DirtyThrottleZone {
                dirty: 2500 * MB,
                freerun: FREERUN
            }
        }
    );

    let d = drops(&m);
    assert_eq!(d.len(), 1);
    let (start, end, causes) = &d[0];
    assert_eq!((*start, *end), (50 * TICK, 80 * TICK));
    assert_eq!(causes.len(), 2, "{causes:?}");
    // Evidence runs until the smoothed speed is back: against the disk's sustained 125 MB/s
    // (the reference once the disk ran saturated) one recovery tick at 300 MB/s is enough.
    let Cause::DirtyThrottle {
        dirty,
        freerun,
        write_share,
    } = causes[0]
    else {
        panic!("{causes:?}")
    };
    assert_eq!((dirty, freerun), (2500 * MB, FREERUN));
    assert!(close(write_share, weighted(&[(0.95, 3.0), (0.5, 0.1)])));
    let Cause::DeviceSaturated {
        util_pct,
        device_bps,
    } = causes[1]
    else {
        panic!("{causes:?}")
    };
    assert!((util_pct - weighted(&[(97.0, 3.0), (60.0, 0.1)])).abs() < 0.05);
    assert!((device_bps - weighted(&[(125e6, 3.0), (120e6, 0.1)])).abs() < 1e3);
    let k = m.kernel();
    assert!((k.device_bps.unwrap() - 120e6).abs() < 1e3);
    assert!((k.device_util_pct.unwrap() - 60.0).abs() < 0.5);
    assert!((k.psi_some_pct.unwrap() - 5.0).abs() < 0.01);
    assert_eq!(k.cpu_pct, Some(20.0));
    assert!(k.zfs.is_none());
}

#[test]
fn saturated_device_alone() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 200.0,
        write_share: 0.5,
        dev_mbps: 200.0,
        util_pct: 70.0,
        ..Default::default()
    });
    sc.run(3000, |_| {})
        // Another job hammers the disk: our writes wait in the queue.
        .run(2000, |l| {
            l.copy_mbps = 40.0;
            l.write_share = 0.9;
            l.read_share = 0.05;
            l.dev_mbps = 45.0;
            l.util_pct = 99.5;
        })
        .run(3000, |l| {
            l.copy_mbps = 200.0;
            l.write_share = 0.5;
            l.read_share = 0.3;
            l.dev_mbps = 200.0;
            l.util_pct = 70.0;
        });
    let m = sc.model(ext4());
    let d = drops(&m);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].0, d[0].1), (30 * TICK, 50 * TICK));
    let [Cause::DeviceSaturated { util_pct, .. }] = d[0].2[..] else {
        panic!("{:?}", d[0].2)
    };
    assert!((util_pct - weighted(&[(99.5, 2.0), (70.0, 0.3)])).abs() < 0.05);
    assert!(non_drop(&m).is_empty());
}

#[test]
fn stalled_reader() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 150.0,
        ..Default::default()
    });
    sc.run(3000, |_| {})
        // The source (an NFS mount, a dying disk) stops delivering; the destination idles.
        .run(1500, |l| {
            l.copy_mbps = 5.0;
            l.read_share = 0.97;
            l.write_share = 0.01;
            l.dev_mbps = 3.0;
            l.util_pct = 5.0;
        })
        .run(3000, |l| {
            l.copy_mbps = 150.0;
            l.read_share = 0.3;
            l.write_share = 0.4;
            l.dev_mbps = 100.0;
            l.util_pct = 50.0;
        });
    let m = sc.model(ext4());
    let d = drops(&m);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].0, d[0].1), (30 * TICK, 45 * TICK));
    let [Cause::SourceStall { read_share }] = d[0].2[..] else {
        panic!("{:?}", d[0].2)
    };
    assert!(close(read_share, weighted(&[(0.97, 1.5), (0.3, 0.3)])));
    let ev = m
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Drop(_)))
        .unwrap();
    assert_eq!(
        ev.describe(),
        "drop 150 → 5.00 MB/s for 1.5 s: source stalled: reading 86 % of the time"
    );
}

#[test]
fn stalled_reader_on_zfs_is_not_blamed_on_the_syncing_txg() {
    // A txg syncs right through the read stall (signals.md §1.7 row layout): the writer
    // was not waiting on it, so it is no cause.
    let syncing = TxgRow {
        txg: 1204,
        birth: 1_000_000_000,
        state: 'S',
        otime: 2_012_345_678,
        qtime: 39_876,
        wtime: 1_234_567,
        ..Default::default()
    };
    let open = TxgRow {
        txg: 1205,
        birth: 3_013_620_121,
        state: 'O',
        ..Default::default()
    };
    let before = TxgRow {
        state: 'O',
        otime: 0,
        qtime: 0,
        wtime: 0,
        ..syncing
    };
    let mut sc = Scenario::new(Levels {
        copy_mbps: 150.0,
        zfs: Some(ZfsLevels {
            rows: vec![before],
            arc_anon: Some(300 * MB),
            ..Default::default()
        }),
        ..Default::default()
    });
    sc.run(3000, |_| {}).run(1500, |l| {
        l.copy_mbps = 5.0;
        l.read_share = 0.97;
        l.write_share = 0.01;
        l.zfs.as_mut().unwrap().rows = vec![syncing, open];
    });
    sc.run(3000, |l| {
        l.copy_mbps = 150.0;
        l.read_share = 0.3;
        l.write_share = 0.4;
    });
    let m = sc.model(zfs_env());
    let d = drops(&m);
    assert_eq!(d.len(), 1);
    assert!(
        matches!(d[0].2[..], [Cause::SourceStall { .. }]),
        "{:?}",
        d[0].2
    );
    // The sync itself is still an event.
    assert!(
        m.events()
            .iter()
            .any(|e| e.kind == EventKind::TxgSyncStarted { txg: 1204 })
    );
}

/// A copy onto tmpfs while other writers' dirty data crosses the background threshold and
/// the throttle zone: tmpfs is never written back nor throttled, so neither is this copy's
/// event ("the kernel is pacing writes" would be false).
#[test]
fn a_tmpfs_copy_gets_no_page_cache_events_from_other_writers() {
    let tmpfs = Environment {
        fs_type: Some("tmpfs".into()),
        mount_point: Some("/dev/shm".into()),
        page_size: 4096,
        ..Default::default()
    };
    let mut sc = Scenario::new(Levels {
        copy_mbps: 800.0,
        dirty: 10 * MB,
        ..Default::default()
    });
    sc.run(2000, |_| {})
        .run(3000, |l| l.dirty = THRESH + 100 * MB)
        .run(2000, |l| l.dirty = 10 * MB);
    let m = sc.model(tmpfs);
    let page_cache: Vec<_> = m
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::WritebackStarted { .. } | EventKind::DirtyThrottleZone { .. }
            )
        })
        .collect();
    assert!(page_cache.is_empty(), "{page_cache:?}");
    assert!(
        sc.model(ext4())
            .events()
            .iter()
            .any(|e| matches!(e.kind, EventKind::WritebackStarted { .. }))
    );
}

/// Small txgs sync one after another through a stall (a tree of small files: each txg holds
/// a few files): none covers half of the drop, together they cover it, and the writer's stack
/// is in a txg wait throughout. The drop names them all and the share of the wait.
#[test]
fn short_syncs_back_to_back_through_a_stall_are_named_together() {
    let row = |txg: u64, state: char, birth: u64, otime: u64, stime: u64| TxgRow {
        txg,
        birth,
        state,
        otime,
        stime,
        ndirty: if state == 'C' { 20 * MB } else { 0 },
        nwritten: if state == 'C' { 20 * MB } else { 0 },
        ..Default::default()
    };
    let ms = 1_000_000;
    // txg 310 syncs 3.0-3.6 s, 311 3.7-4.3 s, 312 4.4-5.0 s.
    let t310 = |st| {
        row(
            310,
            st,
            1000 * ms,
            2000 * ms,
            if st == 'C' { 600 * ms } else { 0 },
        )
    };
    let t311 = |st| {
        row(
            311,
            st,
            3000 * ms,
            if st == 'O' { 0 } else { 700 * ms },
            if st == 'C' { 600 * ms } else { 0 },
        )
    };
    let t312 = |st| {
        row(
            312,
            st,
            3700 * ms,
            if st == 'O' { 0 } else { 700 * ms },
            if st == 'C' { 600 * ms } else { 0 },
        )
    };
    let mut sc = Scenario::new(Levels {
        copy_mbps: 150.0,
        writer: Some((WaitClass::Running, 0.02)),
        zfs: Some(ZfsLevels {
            rows: vec![row(310, 'O', 1000 * ms, 0, 0)],
            arc_anon: Some(300 * MB),
            ..Default::default()
        }),
        ..Default::default()
    });
    let set = |l: &mut Levels, rows: Vec<TxgRow>| l.zfs.as_mut().unwrap().rows = rows;
    sc.run(3000, |_| {})
        .run(600, |l| {
            l.copy_mbps = 1.0;
            l.write_share = 0.95;
            l.writer = Some((WaitClass::ZfsTxg, 0.0));
            set(l, vec![t310('S'), t311('O')]);
        })
        .run(100, |l| set(l, vec![t310('C'), t311('O')]))
        .run(600, |l| set(l, vec![t310('C'), t311('S'), t312('O')]))
        .run(100, |l| set(l, vec![t311('C'), t312('O')]))
        .run(600, |l| set(l, vec![t311('C'), t312('S')]))
        .run(3000, |l| {
            l.copy_mbps = 150.0;
            l.write_share = 0.4;
            l.writer = Some((WaitClass::Running, 0.02));
            set(l, vec![t312('C'), row(313, 'O', 5000 * ms, 0, 0)]);
        });
    let m = sc.model(zfs_env());
    let d = drops(&m);
    assert_eq!(d.len(), 1, "{d:?}");
    let Cause::TxgSync { syncs: Some(s), .. } = &d[0].2[0] else {
        panic!("{:?}", d[0].2)
    };
    assert_eq!((s.first, s.last, s.count), (310, 312, 3), "{s:?}");
    assert!(s.held_pct.is_some_and(|p| p > 80.0), "{s:?}");
    let text = d[0].2[0].describe();
    assert!(
        text.starts_with("txgs 310-312 synced one after another"),
        "{text}"
    );
}

/// A hog takes the copier's core while a txg syncs: every copy thread is runnable (R, 80 % of
/// the time on the run queue), none waits on the txg. The sync is an event, not the cause;
/// with or without readable kernel stacks (the states alone show the writer was not blocked).
#[test]
fn a_cpu_dip_during_a_txg_sync_is_the_cpu() {
    for stacks in [true, false] {
        let syncing = TxgRow {
            txg: 310,
            birth: 1_000_000_000,
            state: 'S',
            otime: 2_000_000_000,
            qtime: 40_000,
            wtime: 1_000_000,
            ..Default::default()
        };
        let open = TxgRow {
            txg: 311,
            birth: 3_001_040_000,
            state: 'O',
            ..Default::default()
        };
        let before = TxgRow {
            state: 'O',
            otime: 0,
            qtime: 0,
            wtime: 0,
            ..syncing
        };
        let mut sc = Scenario::new(Levels {
            copy_mbps: 150.0,
            writer: Some((WaitClass::Running, 0.02)),
            stacks,
            zfs: Some(ZfsLevels {
                rows: vec![before],
                arc_anon: Some(300 * MB),
                ..Default::default()
            }),
            ..Default::default()
        });
        sc.run(3000, |_| {})
            .run(2000, |l| {
                l.copy_mbps = 20.0;
                l.cpu_pct = 100.0;
                l.writer = Some((WaitClass::Running, 0.8));
                l.zfs.as_mut().unwrap().rows = vec![syncing, open];
            })
            .run(3000, |l| {
                l.copy_mbps = 150.0;
                l.cpu_pct = 20.0;
                l.writer = Some((WaitClass::Running, 0.02));
            });
        let m = sc.model(zfs_env());
        let d = drops(&m);
        assert_eq!(d.len(), 1, "stacks {stacks}: {d:?}");
        assert!(
            matches!(d[0].2[..], [Cause::CpuStarved { .. }]),
            "stacks {stacks}: {:?}",
            d[0].2
        );
    }
}

/// A hog takes the copier's core while it reads: the engine sits in read() 90 % of the time,
/// but the copy thread is runnable throughout (80 % on the run queue), never blocked on the
/// source: the read was slow because it waited for a CPU.
#[test]
fn a_read_stretched_by_a_starved_cpu_is_the_cpu() {
    for stacks in [true, false] {
        let mut sc = Scenario::new(Levels {
            copy_mbps: 300.0,
            writer: Some((WaitClass::Running, 0.02)),
            stacks,
            ..Default::default()
        });
        sc.run(3000, |_| {})
            .run(2000, |l| {
                l.copy_mbps = 30.0;
                l.cpu_pct = 100.0;
                l.read_share = 0.9;
                l.write_share = 0.05;
                l.writer = Some((WaitClass::Running, 0.8));
            })
            .run(3000, |l| {
                l.copy_mbps = 300.0;
                l.cpu_pct = 20.0;
                l.read_share = 0.3;
                l.write_share = 0.4;
                l.writer = Some((WaitClass::Running, 0.02));
            });
        let m = sc.model(ext4());
        let d = drops(&m);
        assert_eq!(d.len(), 1, "stacks {stacks}: {d:?}");
        assert!(
            matches!(d[0].2[..], [Cause::CpuStarved { .. }]),
            "stacks {stacks}: {:?}",
            d[0].2
        );
    }
}

/// A hog shares the copier's core: the copy thread is runnable but waits on the run queue
/// 80 % of the time. The all-core average (98 % during the drop) is not what decides.
#[test]
fn cpu_starvation_is_the_run_queue_wait_of_the_copy_threads() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 300.0,
        cpu_pct: 40.0,
        writer: Some((WaitClass::Running, 0.02)),
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(2000, |l| {
            l.copy_mbps = 60.0;
            l.cpu_pct = 98.0;
            l.read_share = 0.1;
            l.write_share = 0.1;
            l.writer = Some((WaitClass::Running, 0.8));
        })
        .run(3000, |l| {
            l.copy_mbps = 300.0;
            l.cpu_pct = 40.0;
            l.read_share = 0.3;
            l.write_share = 0.4;
            l.writer = Some((WaitClass::Running, 0.02));
        });
    let m = sc.model(ext4());
    let d = drops(&m);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].0, d[0].1), (30 * TICK, 50 * TICK));
    let [
        Cause::CpuStarved {
            runq_wait_pct,
            max_core_pct,
        },
    ] = d[0].2[..]
    else {
        panic!("{:?}", d[0].2)
    };
    // 2 s at 80 % and the 0.3 s of recovery until the drop closed at 2 %.
    assert!(
        close(runq_wait_pct, weighted(&[(80.0, 2.0), (2.0, 0.3)])),
        "{runq_wait_pct}"
    );
    assert_eq!(max_core_pct, Some(98.0));
}

/// All cores busy is not a cause by itself: without the copy threads' run-queue wait nothing
/// shows the writer waited for a CPU (another process may have used the idle CPU time while
/// the copy waited on something else).
#[test]
fn busy_cores_without_thread_evidence_are_not_blamed() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 300.0,
        cpu_pct: 40.0,
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(2000, |l| {
            l.copy_mbps = 90.0;
            l.cpu_pct = 98.0;
            l.read_share = 0.25;
            l.write_share = 0.25;
        })
        .run(3000, |l| {
            l.copy_mbps = 300.0;
            l.cpu_pct = 40.0;
        });
    let d = drops(&sc.model(ext4()));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].2, vec![Cause::Unknown]);
}

#[test]
fn nothing_explains_it() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 200.0,
        ..Default::default()
    });
    sc.run(3000, |_| {})
        // The engine neither reads nor writes much, the disk and CPU are idle, dirty is low.
        .run(1000, |l| {
            l.copy_mbps = 20.0;
            l.read_share = 0.1;
            l.write_share = 0.1;
            l.util_pct = 20.0;
            l.dev_mbps = 20.0;
        })
        .run(3000, |l| {
            l.copy_mbps = 200.0;
            l.read_share = 0.3;
            l.write_share = 0.4;
            l.util_pct = 50.0;
            l.dev_mbps = 100.0;
        });
    let m = sc.model(ext4());
    let d = drops(&m);
    assert_eq!(d, vec![(30 * TICK, 40 * TICK, vec![Cause::Unknown])]);
    let ev = m
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Drop(_)))
        .unwrap();
    assert_eq!(
        ev.describe(),
        "drop 200 → 20.0 MB/s for 1.0 s: no signal explains it"
    );
    assert_eq!(m.stats().lost_secs_by_cause[0].0, "unknown");
    // 180 MB/s × 1 s lost against 200 MB/s: 0.9 s.
    assert!((m.stats().lost_secs_by_cause[0].1 - 0.9).abs() < 1e-9);
}

#[test]
fn dmu_tx_deltas_are_a_zfs_throttle_and_the_page_cache_is_never_blamed_on_zfs() {
    // zfs_txg_history = 0: no txg rows, only the dmu_tx counters. Meanwhile another writer
    // keeps the page cache above freerun (on another filesystem): not our cause on ZFS.
    let mut sc = Scenario::new(Levels {
        copy_mbps: 120.0,
        write_share: 0.6,
        dirty: 2300 * MB,
        writeback: 200 * MB,
        zfs: Some(ZfsLevels {
            arc_anon: Some(2 << 30),
            ..Default::default()
        }),
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(1500, |l| {
            l.copy_mbps = 30.0;
            l.write_share = 0.95;
            let z = l.zfs.as_mut().unwrap();
            z.delays_per_tick = 40;
            z.arc_anon = Some(3500 * MB);
        })
        // Dirty reaches zfs_dirty_data_max: hard waits too.
        .run(500, |l| {
            l.zfs.as_mut().unwrap().over_max_per_tick = 2;
        })
        .run(3000, |l| {
            l.copy_mbps = 120.0;
            l.write_share = 0.6;
            let z = l.zfs.as_mut().unwrap();
            z.delays_per_tick = 0;
            z.over_max_per_tick = 0;
            z.arc_anon = Some(2 << 30);
        });
    let m = sc.model(zfs_env());
    let d = drops(&m);
    assert_eq!(
        d,
        vec![(
            30 * TICK,
            50 * TICK,
            vec![Cause::ZfsThrottle {
                delays: 800,
                over_max: 10
            }]
        )]
    );
    // Delay events: the first at once, then at most one per second, the rest flushed at the
    // last rise; together they count every delay.
    let delays: Vec<(u64, u64)> = m
        .events()
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::ZfsDelay { delays } => Some((e.t_ns, delays)),
            _ => None,
        })
        .collect();
    assert_eq!(
        delays,
        vec![(31 * TICK, 40), (41 * TICK, 400), (50 * TICK, 360)]
    );
    // Already above freerun at the start: no page-cache events either.
    assert!(
        m.events()
            .iter()
            .all(|e| matches!(e.kind, EventKind::Drop(_) | EventKind::ZfsDelay { .. }))
    );
    let z = m.kernel().zfs.unwrap();
    assert_eq!(z.dirty_estimate, Some(2 << 30));
    assert_eq!(z.delays_per_s, 0.0);
}

#[test]
fn writeback_burst_on_a_shared_disk() {
    // Source and destination on one disk (no separate source counters): the flusher's
    // burst competes with our reads.
    let mut sc = Scenario::new(Levels {
        copy_mbps: 150.0,
        read_share: 0.4,
        write_share: 0.3,
        dirty: 600 * MB,
        writeback: 20 * MB,
        dev_mbps: 100.0,
        util_pct: 60.0,
        separate_source: false,
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(1500, |l| {
            l.copy_mbps = 40.0;
            l.read_share = 0.8;
            l.write_share = 0.1;
            l.dirty = 300 * MB;
            l.writeback = 450 * MB;
            l.dev_mbps = 260.0;
            l.util_pct = 85.0;
        })
        .run(3000, |l| {
            l.copy_mbps = 150.0;
            l.read_share = 0.4;
            l.write_share = 0.3;
            l.dirty = 600 * MB;
            l.writeback = 20 * MB;
            l.dev_mbps = 100.0;
            l.util_pct = 60.0;
        });
    let m = sc.model(ext4());
    let d = drops(&m);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].0, d[0].1), (30 * TICK, 45 * TICK));
    let [
        Cause::WritebackBurst {
            writeback,
            device_bps,
        },
        Cause::SourceStall { read_share },
    ] = d[0].2[..]
    else {
        panic!("{:?}", d[0].2)
    };
    assert_eq!(writeback, 450 * MB);
    assert!((device_bps - weighted(&[(260e6, 1.5), (100e6, 0.3)])).abs() < 1e3);
    assert!(close(read_share, weighted(&[(0.8, 1.5), (0.4, 0.3)])));
}

#[test]
fn pause_is_not_a_drop_and_closes_an_open_one() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 200.0,
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(1000, |l| {
            l.copy_mbps = 20.0;
            l.read_share = 0.1;
            l.write_share = 0.1;
        })
        .engine(EngineEvent::Paused)
        .run(2000, |l| {
            l.copy_mbps = 0.0;
            l.read_share = 0.0;
            l.write_share = 0.0;
        })
        .engine(EngineEvent::Resumed)
        .run(3000, |l| {
            l.copy_mbps = 200.0;
            l.read_share = 0.3;
            l.write_share = 0.4;
        });
    let m = sc.model(ext4());
    let kinds: Vec<(u64, &str)> = m
        .events()
        .iter()
        .map(|e| (e.t_ns, e.kind.short()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (30 * TICK, "drop"),
            (40 * TICK, "paused"),
            (60 * TICK, "resumed")
        ]
    );
    assert_eq!(drops(&m)[0].1, 40 * TICK);
    assert_eq!(
        m.drop_spans().collect::<Vec<_>>(),
        vec![(30 * TICK, 40 * TICK)]
    );
    assert_eq!(m.open_drop_start(), None);
    let s = m.stats();
    assert_eq!(s.drops, 1);
    // 3 s × 200 + 1 s × 20 + 3 s × 200 MB over 7 s of copying (the pause does not count).
    assert_eq!(s.bytes, 1220 * MB);
    assert!(close(s.avg_bps, 1220e6 / 7.0));
    assert!(close(s.peak_bps, 200e6));
}

#[test]
fn engine_events_map_to_model_events() {
    let mut m = Model::new(ModelConfig::default(), ext4());
    let t = 5 * TICK;
    let e = m.engine_event(
        t,
        &EngineEvent::FileFailed {
            path: "photos/a.jpg".into(),
            error: "Permission denied (os error 13)".into(),
        },
    );
    assert_eq!(
        e.unwrap().describe(),
        "'photos/a.jpg': Permission denied (os error 13)"
    );
    let e = m.engine_event(
        t,
        &EngineEvent::ScanDone {
            files: 14_139,
            bytes: 6_800_000_000,
        },
    );
    assert_eq!(e.unwrap().describe(), "scan done: 14 139 files, 6.80 GB");
    assert!(
        m.engine_event(
            t,
            &EngineEvent::FileStarted {
                path: "x".into(),
                size: 1
            }
        )
        .is_none()
    );
    m.engine_event(6 * TICK, &EngineEvent::FlushStarted);
    let e = m.engine_event(26 * TICK, &EngineEvent::FlushDone).unwrap();
    assert_eq!(e.kind, EventKind::FlushDone { secs: 2.0 });
    assert_eq!(m.stats().flush_secs, Some(2.0));
    let e = m
        .engine_event(
            27 * TICK,
            &EngineEvent::Fatal {
                error: "No space left on device".into(),
            },
        )
        .unwrap();
    assert_eq!(
        copyscope::present::markers::MarkerKind::of(&e.kind).glyph(),
        ('!', '!')
    );
    assert_eq!(e.describe(), "error: No space left on device");
    assert_eq!(m.events().len(), 5);
}

#[test]
fn a_million_samples_stay_bounded() {
    // 27.8 h at 100 ms: every minute a 3 s stall while dirty crosses the background
    // threshold, so both drops and markers keep coming.
    let cfg = ModelConfig::default();
    let mut m = Model::new(cfg, ext4());
    let mut bytes = 0u64;
    let mut stalls = 0;
    for i in 0..1_000_000u64 {
        let in_minute = i % 600;
        let stalled = (500..530).contains(&in_minute);
        if stalled && in_minute == 500 {
            stalls += 1;
        }
        if !stalled {
            bytes += 10 * MB;
        }
        let s = Sample {
            t_ns: i * TICK,
            engine: ProgressSnapshot {
                bytes_copied: bytes,
                write_ns: i * TICK / 2,
                ..Default::default()
            },
            page_cache: Some(PageCache {
                dirty: if stalled { 1600 * MB } else { 500 * MB },
                writeback: 10 * MB,
                bg_thresh: BG,
                thresh: THRESH,
                written: 0,
            }),
            ..Default::default()
        };
        m.apply(&s);
    }
    let stats = m.stats();
    assert_eq!(stats.drops, stalls);
    assert_eq!(m.events().len(), cfg.max_events);
    // Drops are kept in preference to markers: all of them are still there.
    let kept_drops = m
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Drop(_)))
        .count();
    assert_eq!(kept_drops, stalls);
    assert!(m.series().len() <= cfg.max_points);
    assert_eq!(m.series().span_ns(), 999_999 * TICK);
    // Every stall is still visible as a zero minimum somewhere in the compacted series.
    assert!(m.series().points().iter().any(|p| p.copy_min_bps == 0.0));
    // Events stay in time order.
    assert!(m.events().windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scenario fed tick by tick, then its checks: the ticks are the story the test tells"
)]
fn txg_sync_learns_its_size_when_it_commits_after_the_drop() {
    // birth_offset 0: txg times are the model's times. Txg 1204 syncs from 3.0 s to 5.5 s;
    // the writer stalls 3.0–4.5 s, so the drop closes before the txg commits.
    let open = TxgRow {
        txg: 1204,
        birth: 1_000_000_000,
        state: 'O',
        ..Default::default()
    };
    let syncing = TxgRow {
        state: 'S',
        otime: 2_000_000_000,
        ..open
    };
    let next = TxgRow {
        txg: 1205,
        birth: 3_000_000_000,
        state: 'O',
        ..Default::default()
    };
    let committed = TxgRow {
        state: 'C',
        ndirty: 300 * MB,
        nwritten: 290 * MB,
        writes: 2400,
        stime: 2_500_000_000,
        ..syncing
    };
    let mut sc = Scenario::new(Levels {
        copy_mbps: 120.0,
        zfs: Some(ZfsLevels {
            rows: vec![open],
            arc_anon: None,
            ..Default::default()
        }),
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(1500, |l| {
            l.copy_mbps = 10.0;
            l.write_share = 0.9;
            l.zfs.as_mut().unwrap().rows = vec![syncing, next];
        })
        .run(1000, |l| {
            l.copy_mbps = 120.0;
            l.write_share = 0.4;
        })
        .run(2000, |l| {
            l.zfs.as_mut().unwrap().rows = vec![committed, next];
        });
    let m = sc.model(zfs_env());
    let d = drops(&m);
    assert_eq!(
        d,
        vec![(
            30 * TICK,
            45 * TICK,
            vec![Cause::TxgSync {
                txg: 1204,
                ndirty: 300 * MB,
                stime_ns: 2_500_000_000,
                // No arcstats: the percentage comes from ndirty against 4 GiB.
                dirty_pct_of_max: Some(300e6 * 100.0 / (4u64 << 30) as f64),
                syncs: None,
                own_pct: None,
            }]
        )]
    );
    let txg_events: Vec<(u64, &EventKind)> = m
        .events()
        .iter()
        .filter(|e| e.kind.short().starts_with("txg"))
        .map(|e| (e.t_ns, &e.kind))
        .collect();
    assert_eq!(
        txg_events,
        vec![
            (30 * TICK, &EventKind::TxgSyncStarted { txg: 1204 }),
            (
                55 * TICK,
                &EventKind::TxgCommitted {
                    txg: 1204,
                    ndirty: 300 * MB,
                    nwritten: 290 * MB,
                    stime_ns: 2_500_000_000
                }
            ),
        ]
    );
    // Without arcstats the kernel panel estimates dirty data from the bytes copied since
    // the open txg (1205, born at 3.0 s) began: 1.5 s × 10 + 3 s × 120 MB/s.
    let z = m.kernel().zfs.unwrap();
    assert_eq!(z.dirty_source, "written since txg open");
    assert_eq!(z.dirty_estimate, Some(375 * MB));
    assert_eq!((z.open_txg, z.syncing_txg), (Some(1205), None));
    assert_eq!(z.last_sync, Some((1204, 300 * MB, 2_500_000_000)));
}

#[test]
fn eta_counts_the_backlog_at_the_disk_rate() {
    let model_of = |util_pct: f64| {
        let mut sc = Scenario::new(Levels {
            copy_mbps: 200.0,
            dirty: 800 * MB,
            writeback: 200 * MB,
            dev_mbps: 100.0,
            util_pct,
            ..Default::default()
        });
        sc.run(5000, |_| {});
        let mut m = Model::new(ModelConfig::default(), ext4());
        for item in &sc.items {
            if let Item::Sample(s) = item {
                let mut s = (**s).clone();
                // 1 GB copied of 3 GB; the scan is done.
                s.engine.bytes_total = 3000 * MB;
                s.engine.scan_done = true;
                m.apply(&s);
            }
        }
        (sc, m)
    };
    // A disk writing 100 MB/s at 20 % busy could write more: its rate is not its speed, and
    // the flush is not guessed at from it.
    let (_, idle) = model_of(20.0);
    assert!((idle.eta_secs(true).unwrap() - 10.0).abs() < 1e-6);
    let (sc, m) = model_of(100.0);
    // 2 GB at 200 MB/s into the cache (its 1.26 GB of room to freerun fill at 100 MB/s
    // net, after the copy's end); on disk, all of it plus this copy's backlog at the busy
    // disk's 100 MB/s: it handed 1 GB to the kernel and the disk wrote 500 MB since it started,
    // so 500 MB are still its own (the system holds 1 GB of dirty + writeback, every
    // writer's). (2000 + 500) MB / 100 MB/s, not 10 s + 5 s: the disk cannot write the 2 GB
    // still to come any faster than the backlog.
    assert!((m.eta_secs(false).unwrap() - 10.0).abs() < 1e-6);
    assert!((m.eta_secs(true).unwrap() - 25.0).abs() < 1e-3);
    assert_eq!(m.backlog(), Some(1000 * MB));
    let b = m.flush_backlog().unwrap();
    assert_eq!(b.scope, BacklogScope::ThisCopy);
    // Sectors are whole: within one sector of 500 MB.
    assert!(b.bytes.abs_diff(500 * MB) < 512, "{b:?}");
    // While scanning there is no honest ETA.
    let mut m2 = Model::new(ModelConfig::default(), ext4());
    for item in &sc.items {
        if let Item::Sample(s) = item {
            m2.apply(s);
        }
    }
    assert_eq!(m2.eta_secs(true), None);
}

/// Issue 9: other processes write to the destination's disk. The copy (writer held in
/// balance_dirty_pages) falls from 40 to 2 MB/s for 10 s while the disk, 100 % busy, keeps
/// writing 40 MB/s: 400 MB, of which this copy can have given it at most the 160 MB of dirty +
/// writeback waiting at the start plus the 20 MB it handed over — 220 MB (22 MB/s) were
/// someone else's.
#[test]
fn another_writer_on_the_destination_disk_is_named_with_its_rate() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 40.0,
        write_share: 0.9,
        dirty: 150 * MB,
        writeback: 10 * MB,
        dev_mbps: 40.0,
        util_pct: 100.0,
        writer: Some((WaitClass::Running, 0.0)),
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(10_000, |l| {
            l.copy_mbps = 2.0;
            l.writer = Some((WaitClass::DirtyThrottle, 0.0));
        })
        .run(3000, |l| {
            l.copy_mbps = 40.0;
            l.writer = Some((WaitClass::Running, 0.0));
        });
    let m = sc.model(ext4());
    let d = drops(&m);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].0, d[0].1), (30 * TICK, 130 * TICK));
    let Cause::AnotherWriter {
        device,
        other_bps,
        device_bps,
    } = &d[0].2[0]
    else {
        panic!("{:?}", d[0].2)
    };
    assert_eq!(device, "sda");
    // Over the evidence's span, which runs to the first recovery tick (10.1 s, the disk wrote
    // 404 MB, this copy at most 160 + 20 + 4 MB): 220 MB in 10.3 s.
    assert!((other_bps / 1e6 - 21.4).abs() < 0.1, "{other_bps}");
    assert!((device_bps / 1e6 - 40.0).abs() < 0.5, "{device_bps}");
    assert!(d[0].2.iter().any(|c| c.label() == "dirty throttle"));
    let text = m
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Drop(_)))
        .unwrap()
        .describe();
    assert!(
        text.contains("another writer: 21.4 MB/s to sda besides this copy"),
        "{text}"
    );
}

/// The same fall with the disk writing only what this copy left in the cache (the backlog
/// covers the disk's 40 MB/s for the whole drop): no other writer is named; the copy is held
/// by the disk and the kernel, not by someone else.
#[test]
fn a_disk_writing_this_copys_backlog_is_not_another_writer() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 40.0,
        write_share: 0.9,
        dirty: 450 * MB,
        writeback: 20 * MB,
        dev_mbps: 40.0,
        util_pct: 70.0,
        writer: Some((WaitClass::Running, 0.0)),
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(5000, |l| {
            l.copy_mbps = 2.0;
            l.util_pct = 100.0;
            l.writer = Some((WaitClass::DirtyThrottle, 0.0));
        })
        .run(3000, |l| {
            l.copy_mbps = 40.0;
            l.util_pct = 70.0;
            l.writer = Some((WaitClass::Running, 0.0));
        });
    let m = sc.model(ext4());
    let d = drops(&m);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        d[0].2.iter().all(|c| c.label() != "another writer"),
        "{:?}",
        d[0].2
    );
    assert_eq!(d[0].2[0].label(), "dirty throttle");
}

/// A copy at the disk's speed (disk 100 % busy at 40 MB/s for seconds: the sustained rate)
/// whose writer the kernel stops for 1 s while the disk goes on writing its 300 MB backlog:
/// nothing durable is lost, it is the kernel pacing the writer, not a drop (the budget still
/// counts the time in balance_dirty_pages). With a backlog too small to cover the stall (10 MB,
/// which the disk writes in 0.25 s), the same stall is a drop.
#[test]
fn a_paced_writer_at_the_disks_speed_is_not_a_drop() {
    let run = |dirty: u64| {
        let mut sc = Scenario::new(Levels {
            copy_mbps: 40.0,
            write_share: 0.9,
            dirty,
            writeback: 0,
            dev_mbps: 40.0,
            util_pct: 100.0,
            writer: Some((WaitClass::Running, 0.0)),
            ..Default::default()
        });
        sc.run(5000, |_| {})
            .run(1000, |l| {
                l.copy_mbps = 0.0;
                // The disk writes what is waiting: all of a 300 MB backlog's 40 MB/s, or the
                // 10 MB of a small one.
                l.dev_mbps = (dirty as f64 / 1e6).min(40.0);
                // A small backlog is written in its first quarter second: the disk idles the
                // rest (busy at a quarter of its rate would be a disk that slowed).
                l.util_pct = (l.dev_mbps / 40.0 * 100.0).min(100.0);
                l.writer = Some((WaitClass::DirtyThrottle, 0.0));
            })
            .run(3000, |l| {
                l.copy_mbps = 40.0;
                l.dev_mbps = 40.0;
                l.util_pct = 100.0;
                l.writer = Some((WaitClass::Running, 0.0));
            });
        sc.model(ext4())
    };
    let paced = run(300 * MB);
    assert!(drops(&paced).is_empty(), "{:?}", drops(&paced));
    assert_eq!(paced.stats().drops, 0);
    assert_eq!(paced.open_drop_start(), None);
    // 10 MB waiting covers 0.25 s of the disk's 40 MB/s: the rest of the stall is lost.
    let stalled = run(10 * MB);
    let d = drops(&stalled);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].2[0].label(), "dirty throttle");
    assert!(stalled.stats().lost_total_secs() > 0.5);
}

/// The flush event counts this copy's data: 400 MB handed to the kernel, 90 MB of them
/// written by the destination's disk, while another writer keeps the system's dirty pages at
/// 2.2 GB. A destination whose disks are unknown (here a network share) can only give the
/// system's figure, and says so.
#[test]
fn the_flush_counts_this_copys_data_not_the_systems() {
    let build = || {
        let mut sc = Scenario::new(Levels {
            copy_mbps: 100.0,
            dirty: 2100 * MB,
            writeback: 100 * MB,
            dev_mbps: 22.5,
            ..Default::default()
        });
        sc.run(4000, |_| {}).engine(EngineEvent::FlushStarted);
        sc
    };
    let flush = |m: &Model| {
        m.events()
            .iter()
            .find_map(|e| match e.kind {
                EventKind::FlushStarted { dirty, system } => Some((dirty, system, e.describe())),
                _ => None,
            })
            .unwrap()
    };
    let (dirty, system, text) = flush(&build().model(ext4()));
    assert!((dirty as f64 - 310e6).abs() < 1e3, "{dirty}");
    assert!(!system);
    assert_eq!(text, "flushing this copy's 310 MB to disk");
    let mut nfs = ext4();
    nfs.fs_type = Some("nfs4".into());
    nfs.dest_disks.clear();
    let mut sc = build();
    for item in &mut sc.items {
        if let Item::Sample(s) = item {
            s.dest_disk = None;
        }
    }
    let (dirty, system, text) = flush(&sc.model(nfs));
    assert_eq!((dirty, system), (2200 * MB, true));
    assert_eq!(
        text,
        "flushing to disk (system: dirty 2.20 GB, all writers)"
    );
}

/// `copyscope watch --comm smbd` beside a Samba upload onto ZFS: smbd writes 8 MiB at a time at
/// `mbps`, so most 100 ms ticks are zero, and stalls 4 s, 10 s and 47 s while txgs 100-102
/// sync, in `txg_wait_synced`. Each stall is one drop naming its txg; the pauses between two
/// writes are none.
fn samba_upload(mbps: f64) {
    const S: u64 = 1_000_000_000;
    let mib8 = 8.0 * 1_048_576.0;
    let mut sc = Scenario::new(Levels {
        copy_mbps: mbps,
        burst: Some(mib8),
        write_share: 0.0,
        read_share: 0.0,
        writer: Some((WaitClass::Running, 0.0)),
        zfs: Some(ZfsLevels::default()),
        ..Default::default()
    });
    let rows = |txg: u64, state: char, birth: u64, open_for: u64, stime: u64| TxgRow {
        txg,
        birth,
        state,
        otime: open_for,
        ndirty: if state == 'C' { stime / S * 40 * MB } else { 0 },
        nwritten: if state == 'C' { stime / S * 40 * MB } else { 0 },
        stime: if state == 'C' { stime } else { 0 },
        ..Default::default()
    };
    let mut t = 0;
    let mut stalls = Vec::new();
    for (txg, stall) in [(100, 4 * S), (101, 10 * S), (102, 47 * S)] {
        let born = t;
        let open = rows(txg, 'O', born, 0, 0);
        sc.run(12_000, |l| {
            l.copy_mbps = mbps;
            l.writer = Some((WaitClass::Running, 0.0));
            let z = l.zfs.as_mut().unwrap();
            z.rows.retain(|r| r.state == 'C');
            z.rows.push(open);
        });
        t += 12 * S;
        let open_for = t - born;
        stalls.push((t, t + stall, txg));
        sc.run(stall / 1_000_000, |l| {
            l.copy_mbps = 0.0;
            l.writer = Some((WaitClass::ZfsTxg, 0.0));
            let z = l.zfs.as_mut().unwrap();
            z.rows.retain(|r| r.state == 'C');
            z.rows.push(rows(txg, 'S', born, open_for, 0));
            z.rows.push(rows(txg + 1, 'O', t, 0, 0));
        });
        t += stall;
        let done = rows(txg, 'C', born, open_for, stall);
        let z = sc.lv.zfs.as_mut().unwrap();
        z.rows.retain(|r| r.txg != txg);
        z.rows.push(done);
    }
    sc.run(12_000, |l| {
        l.copy_mbps = mbps;
        l.writer = Some((WaitClass::Running, 0.0));
    });
    let m = sc.model(Environment {
        watched: Some(Box::new(copyscope::sample::Watched {
            comms: vec!["smbd".into()],
            ..Default::default()
        })),
        ..zfs_env()
    });
    let d = drops(&m);
    assert_eq!(d.len(), 3, "{d:?}");
    for ((start, end, causes), (a, b, txg)) in d.iter().zip(&stalls) {
        // Each begins after smbd's last write before the stall and ends at its first after.
        assert!(*start <= *a && *start + S > *a, "{start} vs {a}");
        assert!(*end >= *b && *end < *b + S, "{end} vs {b}");
        assert!(
            matches!(causes[0], Cause::TxgSync { txg: t, stime_ns, .. } if t == *txg && stime_ns == *b - *a),
            "{causes:?}"
        );
    }
    // The reference is smbd's rate, not the zero of most ticks.
    for e in m.events() {
        if let EventKind::Drop(d) = &e.kind {
            let r = d.reference_bps / 1e6;
            assert!(r > 0.85 * mbps && r < 1.15 * mbps, "{mbps}: reference {r}");
        }
    }
}

#[test]
fn a_samba_upload_at_40_mbps_has_its_txg_stalls_detected_and_no_drop_between_writes() {
    samba_upload(40.0);
}

/// Issue 24's upload: smbclient's 12.3 MB/s, one 8 MiB write every 0.7 s (six ticks in seven
/// are zero; the median of ticks was 0 and no stall was ever a drop).
#[test]
fn a_samba_upload_at_12_mbps_has_its_txg_stalls_detected_and_no_drop_between_writes() {
    samba_upload(12.3);
}

/// The slow lab disk's cut, as issue 27 measured it: a copy running at the disk's 40 MB/s
/// (dirty throttled, the disk 100 % busy) when the disk falls to 5 MB/s for `secs`.
fn disk_cut(secs: u64) -> Model {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 400.0,
        dirty: 1200 * MB,
        writeback: 50 * MB,
        dev_mbps: 40.0,
        util_pct: 100.0,
        writer: Some((WaitClass::Running, 0.0)),
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(10_000, |l| {
            l.copy_mbps = 40.0;
            l.dirty = 2300 * MB;
            l.writer = Some((WaitClass::DirtyThrottle, 0.0));
        })
        .run(secs * 1000, |l| {
            l.copy_mbps = 5.0;
            l.dev_mbps = 5.0;
        })
        .run(10_000, |l| {
            l.copy_mbps = 40.0;
            l.dev_mbps = 40.0;
        });
    sc.model(ext4())
}

#[test]
fn a_disk_that_slows_for_8_s_is_a_drop_of_its_own_with_its_lost_time() {
    let m = disk_cut(8);
    let d = drops(&m);
    assert_eq!(d.len(), 1, "{d:?}");
    let (start, end, causes) = &d[0];
    assert!((129..=131).contains(&(start / TICK)), "{start}");
    assert!((209..=212).contains(&(end / TICK)), "{end}");
    let Cause::DiskSlowed {
        before_bps,
        during_bps,
        held,
        ..
    } = &causes[0]
    else {
        panic!("{causes:?}")
    };
    assert_eq!((before_bps / 1e6).round(), 40.0, "{before_bps}");
    assert!((5e6..6e6).contains(during_bps), "{during_bps}");
    assert_eq!(held.as_deref(), Some("dirty throttling"));
    // The disk's own busy figure is in the cause; no separate "disk busy".
    assert!(
        !causes
            .iter()
            .any(|c| matches!(c, Cause::DeviceSaturated { .. }))
    );
    let ev = m
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Drop(_)))
        .unwrap();
    assert!(
        ev.describe().contains(": the disk slowed: 40.0 → 5.0")
            && ev
                .describe()
                .contains("; the writer was held by dirty throttling 100 % of the time"),
        "{}",
        ev.describe()
    );
    // Truth: 8 s at 5 of 40 MB/s is 7 s of the disk's time lost; within 20 %.
    let lost = m.stats().lost_total_secs();
    assert!((5.6..=8.4).contains(&lost), "{lost}");
    // The page cache filling before was the phase change, said once.
    let phases: Vec<_> = m
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Phase { .. }))
        .collect();
    assert_eq!(phases.len(), 1, "{phases:?}");
}

#[test]
fn a_disk_that_stays_slow_is_a_phase_not_a_drop() {
    let m = disk_cut(60);
    assert_eq!(drops(&m), vec![]);
    let slowed: Vec<String> = m
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Phase {
                    slowed_from_bps: Some(_),
                    ..
                }
            )
        })
        .map(|e| format!("{:.1} {}", e.t_ns as f64 / 1e9, e.describe()))
        .collect();
    assert_eq!(slowed.len(), 1, "{:?}", m.events());
    assert!(slowed[0].starts_with("13."), "{slowed:?}");
    assert!(
        slowed[0].contains("the disk slowed after")
            && slowed[0].contains("now at 5.00 MB/s, was 40.0 MB/s"),
        "{slowed:?}"
    );
}

/// A writer that places each new file by `linkat` of an `O_TMPFILE` (or syncs each one with
/// `syncfs`) waits for a whole txg sync per file (OpenZFS `zfs_link`): small txgs that sync in
/// a fraction of a second, a pool far from busy. The copy is held by its own calls, not by the
/// pool's rate; the verdict says so, with the pool's rate beside it, and the drops name the
/// txg with the writer's own share.
#[test]
fn a_writer_waiting_for_syncs_it_asked_for_is_not_pool_bound() {
    let ms = 1_000_000;
    // txg n: open from n-1 s, syncs 4 MB in 0.6 s from n s.
    let row = |txg: u64, state: char| TxgRow {
        txg,
        birth: (txg - 1) * 1000 * ms,
        state,
        otime: if state == 'O' { 0 } else { 1000 * ms },
        stime: if state == 'C' { 600 * ms } else { 0 },
        ndirty: if state == 'C' { 4 * MB } else { 0 },
        nwritten: if state == 'C' { 4 * MB } else { 0 },
        ..Default::default()
    };
    let mut sc = Scenario::new(Levels {
        copy_mbps: 10.0,
        writer: Some((WaitClass::Running, 0.02)),
        zfs: Some(ZfsLevels {
            rows: vec![row(1, 'O')],
            arc_anon: Some(4 * MB),
            ..Default::default()
        }),
        ..Default::default()
    });
    let set = |l: &mut Levels, rows: Vec<TxgRow>| l.zfs.as_mut().unwrap().rows = rows;
    for n in 1..=15u64 {
        sc.run(400, |l| {
            l.copy_mbps = 10.0;
            l.write_share = 0.4;
            l.writer = Some((WaitClass::Running, 0.02));
            let mut rows = vec![row(n, 'O')];
            if n > 1 {
                rows.insert(0, row(n - 1, 'C'));
            }
            set(l, rows);
        })
        .run(600, |l| {
            l.copy_mbps = 0.0;
            l.write_share = 0.95;
            l.writer = Some((WaitClass::OwnTxgSync, 0.0));
            set(l, vec![row(n, 'S'), row(n + 1, 'O')]);
        });
    }
    sc.run(400, |l| {
        l.writer = Some((WaitClass::Running, 0.02));
        set(l, vec![row(15, 'C'), row(16, 'O')]);
    });
    let m = sc.model(zfs_env());
    let v = m.verdict();
    assert_eq!(v.limit, Limit::SyncWrites, "{}", v.text);
    assert!(
        v.text
            .starts_with("Limited by syncs the writer asked for, "),
        "{}",
        v.text
    );
    assert!(v.text.contains("linkat"), "{}", v.text);
    assert!(
        v.text.contains("each ~0.6 s for a txg of ~4.00 MB"),
        "{}",
        v.text
    );
    assert!(!v.text.contains("pool's write rate"), "{}", v.text);
    let d = drops(&m);
    assert!(!d.is_empty());
    for (_, _, causes) in d {
        let own = causes.iter().find_map(|c| match c {
            Cause::TxgSync { own_pct, .. } => Some(*own_pct),
            _ => None,
        });
        assert!(own.flatten().is_some_and(|p| p > 50.0), "{causes:?}");
        assert!(
            causes[0].describe().contains("own calls asked for it"),
            "{causes:?}"
        );
    }
}

/// `--pace auto` on ZFS: free while the copy's dirty data is small and no txg of it has
/// committed; then, before the pool's rate is known, the pool's disks' rate; once a txg told
/// it, the pool's rate — a little less while dirty data is above half the write throttle's
/// threshold (60 % of 4 GiB here), a little more below it.
#[test]
fn pace_auto_holds_the_pools_rate_from_its_txgs() {
    use copyscope::model::pace::{ABOVE_TARGET, BELOW_TARGET};
    let ms = 1_000_000;
    let open = TxgRow {
        txg: 7,
        birth: 0,
        state: 'O',
        ..Default::default()
    };
    let committed = TxgRow {
        txg: 7,
        birth: 0,
        state: 'C',
        otime: 1000 * ms,
        stime: 5000 * ms,
        ndirty: 200 * MB,
        nwritten: 200 * MB,
        ..Default::default()
    };
    let next = TxgRow {
        txg: 8,
        birth: 6000 * ms,
        state: 'O',
        ..Default::default()
    };
    let level = |arc: u64, rows: Vec<TxgRow>| Levels {
        copy_mbps: 300.0,
        dev_mbps: 37.0,
        zfs: Some(ZfsLevels {
            rows,
            arc_anon: Some(arc),
            ..Default::default()
        }),
        ..Default::default()
    };
    let syncing = TxgRow {
        state: 'S',
        otime: 1000 * ms,
        ..open
    };
    let set = |l: &mut Levels, arc: u64, rows: Vec<TxgRow>| {
        let z = l.zfs.as_mut().unwrap();
        z.arc_anon = Some(arc);
        z.rows = rows;
    };
    let mut sc = Scenario::new(level(32 * MB, vec![open]));
    sc.run(1000, |_| {});
    assert_eq!(sc.model(zfs_env()).pace().bps, None);
    sc.run(1000, |l| set(l, 300 * MB, vec![syncing, next]));
    let probe = sc.model(zfs_env()).pace().bps.unwrap();
    assert!((probe - 37e6).abs() < 1e5, "{probe}");
    sc.run(1000, |l| set(l, 2000 * MB, vec![committed, next]));
    let above = sc.model(zfs_env()).pace();
    assert_eq!(above.drain_bps, Some(40e6));
    assert_eq!(above.bps, Some(40e6 * ABOVE_TARGET));
    sc.run(1000, |l| set(l, 500 * MB, vec![committed, next]));
    assert_eq!(sc.model(zfs_env()).pace().bps, Some(40e6 * BELOW_TARGET));
}

/// `--pace auto` on ZFS beside other writers (a NAS's Samba clients): their part of each txg
/// (its dirty bytes less the copy's own, over the time it was open) is left to them, so that
/// together they stay under the pool's rate; however much they write, the copy keeps a
/// quarter of it.
#[test]
fn pace_auto_leaves_the_pool_room_for_other_writers() {
    use copyscope::model::pace::{BELOW_TARGET, ZFS_LEAST_SHARE};
    let ms = 1_000_000;
    let open = |txg, birth| TxgRow {
        txg,
        birth,
        state: 'O',
        ..Default::default()
    };
    // Open for 5 s while the copy wrote 20 MB/s (100 MB) and others 8 MB/s (40 MB); synced
    // in 4 s: the pool takes 35 MB/s, 27 of them left to the copy.
    let committed = |txg, ndirty| TxgRow {
        txg,
        birth: 0,
        state: 'C',
        otime: 5000 * ms,
        stime: 4000 * ms,
        ndirty,
        nwritten: ndirty,
        ..Default::default()
    };
    let level = |rows| Levels {
        copy_mbps: 20.0,
        dev_mbps: 35.0,
        zfs: Some(ZfsLevels {
            rows,
            arc_anon: Some(100 * MB),
            ..Default::default()
        }),
        ..Default::default()
    };
    let pace_after = |ndirty: u64| {
        let mut sc = Scenario::new(level(vec![open(7, 0)]));
        sc.run(5000, |_| {});
        sc.run(100, |l| {
            l.zfs.as_mut().unwrap().rows = vec![committed(7, ndirty), open(8, 5000 * ms)];
        });
        sc.model(zfs_env()).pace()
    };
    let p = pace_after(140 * MB);
    let others = p.others_bps.unwrap();
    // The tick that saw txg 7 still open at 5 s is counted in it: 20 MB/s over one tick.
    assert!((others - 8e6).abs() < 0.5e6, "{others}");
    assert_eq!(p.drain_bps, Some(35e6));
    let room = 35e6 - others;
    assert!((p.bps.unwrap() - room * BELOW_TARGET).abs() < 1.0, "{p:?}");
    // 4 GB in 4 s of sync, 3.9 GB of it others' in 5 s open: 1000 MB/s, 780 taken.
    let crowded = pace_after(4000 * MB);
    assert_eq!(crowded.bps, Some(1000e6 * ZFS_LEAST_SHARE * BELOW_TARGET));
}

/// `copyscope pipe` between two pipes: no filesystem, no disks.
fn pipe_env() -> Environment {
    use copyscope::copy::pipe::EndKind;
    Environment {
        page_size: 4096,
        pipe: Some(copyscope::sample::PipeEnds {
            input: EndKind::Pipe,
            output: EndKind::Pipe,
        }),
        ..Default::default()
    }
}

/// The reader downstream stops for 2 s (`| ssh` over a link that stalled): the writer sits in
/// `pipe_wait_writable`, and the drop names the reader; with only the engine's times (no
/// thread states), its writes into a pipe say the same.
#[test]
fn a_pipe_whose_reader_stops_names_the_reader() {
    for states in [true, false] {
        let normal = if states {
            Some((WaitClass::Running, 0.02))
        } else {
            None
        };
        let mut sc = Scenario::new(Levels {
            copy_mbps: 400.0,
            dev_mbps: 0.0,
            util_pct: 0.0,
            writer: normal,
            ..Default::default()
        });
        sc.run(3000, |_| {})
            .run(2000, |l| {
                l.copy_mbps = 0.0;
                l.read_share = 0.0;
                l.write_share = 1.0;
                if states {
                    l.writer = Some((WaitClass::PipeFull, 0.0));
                }
            })
            .run(3000, |l| {
                l.copy_mbps = 400.0;
                l.read_share = 0.3;
                l.write_share = 0.4;
                l.writer = normal;
            });
        let m = sc.model(pipe_env());
        let d = drops(&m);
        assert_eq!(d.len(), 1, "{d:?}");
        let [Cause::PipeReader { held_pct, .. }] = d[0].2[..] else {
            panic!("{:?}", d[0].2)
        };
        assert_eq!(held_pct.is_some(), states);
        let text = m
            .events()
            .iter()
            .find(|e| matches!(e.kind, EventKind::Drop(_)))
            .unwrap()
            .describe();
        assert!(
            text.contains("the reader of the pipe stopped taking data"),
            "{text}"
        );
    }
}

/// Upstream stalls instead (`zfs send` waiting on its pool): the splice waits for input in
/// `pipe_wait_readable`, a source stall, and the reader is not blamed.
#[test]
fn a_pipe_whose_writer_upstream_stops_is_a_source_stall() {
    let mut sc = Scenario::new(Levels {
        copy_mbps: 400.0,
        dev_mbps: 0.0,
        util_pct: 0.0,
        writer: Some((WaitClass::Running, 0.02)),
        ..Default::default()
    });
    sc.run(3000, |_| {})
        .run(2000, |l| {
            l.copy_mbps = 0.0;
            l.read_share = 1.0;
            l.write_share = 0.0;
            l.writer = Some((WaitClass::SourceRead, 0.0));
        })
        .run(3000, |l| {
            l.copy_mbps = 400.0;
            l.read_share = 0.3;
            l.write_share = 0.4;
            l.writer = Some((WaitClass::Running, 0.02));
        });
    let m = sc.model(pipe_env());
    let d = drops(&m);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        matches!(d[0].2[..], [Cause::SourceStall { .. }]),
        "{:?}",
        d[0].2
    );
}
