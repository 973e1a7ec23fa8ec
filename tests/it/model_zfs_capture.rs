//! The model on a real ZFS run: the lab's 100 ms time series of `dd` writing 3 GB of
//! zeros onto a pool throttled to 40 MB/s (tests/scenarios/zfs-40mbps-zero, copied from
//! ../shared/lab/zfs-vm/captures/timeseries-40mbps-zero). Every stall there is a txg
//! sync with the ZFS write throttle; the page cache stays at zero and must never be blamed.

use std::collections::{BTreeMap, BTreeSet};

use copyscope::copy::{EngineEvent, ProgressSnapshot};
use copyscope::model::{Cause, Event, EventKind, Model, ModelConfig, ReplayItem};
use copyscope::sample::{DmuTx, Environment, PageCache, Sample, TxgRow, ZfsSample};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scenarios/zfs-40mbps-zero"
);
/// The same run with the pool throttled to 100 MB/s.
const DIR_100: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scenarios/zfs-100mbps-zero"
);
/// dd wrote 3000 MiB (meta.txt).
const TOTAL: u64 = 3000 << 20;
/// vmstat thresholds of the same VM (4 GB RAM), from the lab's fixtures-80mbps-zero/before/vmstat.txt.
const BG_PAGES: u64 = 94_780;
const THRESH_PAGES: u64 = 189_792;
const DIRTY_MAX: u64 = 410_327_040;

struct Capture {
    /// (phase, sample) in time order.
    samples: Vec<(String, Sample)>,
}

fn env() -> Environment {
    Environment {
        fs_type: Some("zfs".into()),
        mount_source: Some("tank".into()),
        mount_point: Some("/tank".into()),
        zfs_pool: Some("tank".into()),
        zfs_dataset: Some("tank".into()),
        zfs_dirty_data_max: Some(DIRTY_MAX),
        zfs_sync_percent: Some(20),
        zfs_delay_percent: Some(60),
        page_size: 4096,
        ..Default::default()
    }
}

fn parse_row(line: &str) -> Option<TxgRow> {
    let w: Vec<&str> = line.split_whitespace().collect();
    if w.len() != 12 {
        return None;
    }
    let n = |i: usize| w[i].parse::<u64>().ok();
    Some(TxgRow {
        txg: n(0)?,
        birth: n(1)?,
        state: w[2].chars().next()?,
        ndirty: n(3)?,
        nread: n(4)?,
        nwritten: n(5)?,
        reads: n(6)?,
        writes: n(7)?,
        otime: n(8)?,
        qtime: n(9)?,
        wtime: n(10)?,
        stime: n(11)?,
    })
}

fn ns(t_s: &str) -> u64 {
    (t_s.parse::<f64>().expect("t_s") * 1e9).round() as u64
}

fn load() -> Capture {
    load_from(DIR)
}

#[expect(
    clippy::too_many_lines,
    reason = "the capture's files parsed one after another into one value"
)]
fn load_from(dir: &str) -> Capture {
    let raw = std::fs::read_to_string(format!("{dir}/txgs-raw.log")).expect("txgs-raw.log");
    let mut blocks: Vec<(u64, Vec<TxgRow>)> = Vec::new();
    for line in raw.lines() {
        if let Some(t) = line.strip_prefix("## t=") {
            blocks.push((ns(t), Vec::new()));
        } else if let (Some(row), Some(b)) = (parse_row(line), blocks.last_mut()) {
            b.1.push(row);
        }
    }
    // birth is CLOCK_MONOTONIC_RAW; the capture's t is seconds since its start. A txg
    // appears in the file the moment it is born, so (first sample showing it − birth)
    // bounds the offset from above, within one 100 ms tick; the smallest bound wins.
    let mut first_seen: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (t, rows) in &blocks[1..] {
        for r in rows {
            first_seen.entry(r.txg).or_insert((*t, r.birth));
        }
    }
    let seen_at_start: BTreeSet<u64> = blocks[0].1.iter().map(|r| r.txg).collect();
    let offset = first_seen
        .iter()
        .filter(|(txg, _)| !seen_at_start.contains(txg))
        .map(|(_, (t, birth))| *t as i64 - *birth as i64)
        .min()
        .expect("txgs born during the capture");

    let csv = std::fs::read_to_string(format!("{dir}/timeseries.csv")).expect("timeseries.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (c_t, c_phase, c_wchar) = (col("t_s"), col("phase"), col("dd_wchar_bytes"));
    let (c_dirty, c_wb, c_written) = (
        col("meminfo_dirty_kb"),
        col("meminfo_writeback_kb"),
        col("nr_written"),
    );
    let (c_anon, c_thr, c_dly, c_over, c_delay) = (
        col("arc_anon_size"),
        col("dmu_tx_dirty_throttle"),
        col("dmu_tx_dirty_delay"),
        col("dmu_tx_dirty_over_max"),
        col("dmu_tx_delay"),
    );
    let mut samples = Vec::new();
    for (i, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let num = |c: usize| f[c].parse::<u64>().unwrap_or(0);
        let t_ns = ns(f[c_t]);
        let (bt, rows) = &blocks[i];
        assert_eq!(*bt, t_ns, "txgs-raw.log and timeseries.csv line up");
        let sample = Sample {
            t_ns,
            engine: ProgressSnapshot {
                bytes_copied: num(c_wchar),
                files_done: 0,
                files_failed: 0,
                bytes_total: TOTAL,
                files_total: 1,
                scan_done: true,
                read_ns: 0,
                write_ns: 0,
                paced_ns: 0,
            },
            page_cache: Some(PageCache {
                dirty: num(c_dirty) * 1024,
                writeback: num(c_wb) * 1024,
                bg_thresh: BG_PAGES * 4096,
                thresh: THRESH_PAGES * 4096,
                written: num(c_written) * 4096,
            }),
            threads: None,
            zfs: Some(ZfsSample {
                pool: "tank".into(),
                txgs: rows.clone(),
                dmu_tx: DmuTx {
                    assigned: 0,
                    delay: num(c_delay),
                    dirty_throttle: num(c_thr),
                    dirty_delay: num(c_dly),
                    dirty_over_max: num(c_over),
                },
                arc_anon: Some(num(c_anon)),
                birth_offset_ns: offset,
                ..Default::default()
            }),
            ..Default::default()
        };
        samples.push((f[c_phase].to_string(), sample));
    }
    Capture { samples }
}

enum Input<'a> {
    Sample(&'a Sample),
    Engine(u64, EngineEvent),
}

/// The capture as the TUI would see it: samples, with the flush phase's engine events
/// where the lab's phase column changes (dd exited → sync → tail).
fn stream(cap: &Capture) -> Vec<Input<'_>> {
    let mut out = Vec::new();
    let mut phase = "";
    for (p, s) in &cap.samples {
        if p != phase {
            match p.as_str() {
                "sync" => out.push(Input::Engine(s.t_ns, EngineEvent::FlushStarted)),
                "tail" => out.push(Input::Engine(s.t_ns, EngineEvent::FlushDone)),
                _ => {}
            }
            phase = p;
        }
        out.push(Input::Sample(s));
    }
    out
}

fn run(cap: &Capture) -> Model {
    let st = stream(cap);
    let items = st.iter().map(|i| match i {
        Input::Sample(s) => ReplayItem::Sample(s),
        Input::Engine(t, ev) => ReplayItem::Engine {
            t_ns: *t,
            event: ev,
        },
    });
    Model::replay_stream(ModelConfig::default(), env(), items)
}

fn drops(m: &Model) -> Vec<&Event> {
    m.events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Drop(_)))
        .collect()
}

#[test]
fn every_stall_is_a_txg_sync_and_none_blames_the_page_cache() {
    let cap = load();
    let m = run(&cap);
    let drops = drops(&m);
    // One drop per stall: the 21 stalls of the capture, while txgs 11..=31 synced.
    assert_eq!(drops.len(), 21);
    assert_eq!(m.stats().drops, 21);
    let mut txgs = Vec::new();
    for ev in &drops {
        let EventKind::Drop(d) = &ev.kind else {
            unreachable!()
        };
        assert!(!d.causes.is_empty());
        for c in &d.causes {
            assert!(
                matches!(c, Cause::TxgSync { .. } | Cause::ZfsThrottle { .. }),
                "{}",
                ev.describe()
            );
        }
        let Cause::TxgSync {
            txg,
            ndirty,
            stime_ns,
            dirty_pct_of_max,
            ..
        } = &d.causes[0]
        else {
            panic!("first cause is the txg sync: {}", ev.describe());
        };
        // Every txg committed before the end, so the drop learned its size and duration.
        assert!(
            *ndirty > 70_000_000 && *stime_ns > 1_700_000_000,
            "{}",
            ev.describe()
        );
        let pct = dirty_pct_of_max.expect("arc anon_size is known");
        assert!((50.0..=80.0).contains(&pct), "{}", ev.describe());
        // The drop lies inside its txg's sync window.
        assert!(
            d.end_ns - ev.t_ns <= *stime_ns + 200_000_000,
            "{}",
            ev.describe()
        );
        assert_eq!(d.min_bps, 0.0);
        txgs.push(*txg);
    }
    assert_eq!(txgs, (11..=31).collect::<Vec<u64>>());
    // Time lost is measured against the pool's sustained rate (~40 MB/s, the syncs run back
    // to back): dd stalls, but the pool writes its backlog at full speed through every stall,
    // so the copy ends no later than one running at the pool's speed all along.
    let stats = m.stats();
    assert!(
        stats.lost_secs_by_cause.is_empty(),
        "{:?}",
        stats.lost_secs_by_cause
    );
    let texts: Vec<String> = m.events().iter().map(|e| e.describe()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t == "pool syncing back to back after 646 MB: now at pool speed, 39.8 MB/s"),
        "{texts:#?}"
    );
}

#[test]
fn first_stall_exactly() {
    let cap = load();
    let m = run(&cap);
    let first = drops(&m)[0].clone();
    // dd stops at 4.700 s (the tick to 4.802 copied nothing); txg 11 commits at 10.09 s,
    // the tick to 10.100 s moves 1 MB and the one from 10.100 s is back above 80 %.
    assert_eq!(first.t_ns, 4_700_000_000);
    let EventKind::Drop(d) = &first.kind else {
        unreachable!()
    };
    assert_eq!(d.end_ns, 10_100_000_000);
    // Reference: dd ran at 11 × 1 MiB per 100 ms, but the pool syncs back to back from the
    // first stall on, so the reference is what it sustains: the txgs' nwritten / stime.
    assert!(
        (d.reference_bps - 39.84e6).abs() < 0.01e6,
        "{}",
        d.reference_bps
    );
    assert_eq!(
        d.causes,
        vec![
            Cause::TxgSync {
                txg: 11,
                ndirty: 249_577_472,
                stime_ns: 6_244_167_340,
                // arc anon_size peaked at 319 844 352 just before the stall.
                dirty_pct_of_max: Some(319_844_352.0 * 100.0 / DIRTY_MAX as f64),
                syncs: None,
                own_pct: None,
            },
            // dmu_tx_dirty_delay rose 0 → 656 in the second before the stall, then froze.
            Cause::ZfsThrottle {
                delays: 656,
                over_max: 0
            },
        ]
    );
    assert_eq!(
        first.describe(),
        "drop 39.8 → 0 MB/s for 5.4 s: txg 11 syncing 250 MB took 6.2 s; \
         dirty had reached 78 % of zfs_dirty_data_max; also zfs throttle"
    );
}

#[test]
fn txg_events_once_per_txg_and_delays_rate_limited() {
    let cap = load();
    let m = run(&cap);
    let mut started = Vec::new();
    let mut committed = Vec::new();
    let mut delay_total = 0;
    let mut delay_times = Vec::new();
    for e in m.events() {
        match &e.kind {
            EventKind::TxgSyncStarted { txg } => started.push(*txg),
            EventKind::TxgCommitted { txg, .. } => committed.push(*txg),
            EventKind::ZfsDelay { delays } => {
                delay_total += delays;
                delay_times.push(e.t_ns);
            }
            EventKind::WritebackStarted { .. } | EventKind::DirtyThrottleZone { .. } => {
                panic!("page cache event on ZFS: {}", e.describe())
            }
            _ => {}
        }
    }
    // Txg 9 was committed before the capture began; 10..=33 synced during it, 34 is the
    // idle txg that committed in the tail.
    assert_eq!(committed, (10..=34).collect::<Vec<u64>>());
    assert_eq!(started, (10..=33).collect::<Vec<u64>>());
    // All 2522 delays of the run are reported, in at most one event per second of rising.
    assert_eq!(delay_total, 2522);
    let (first, last) = (delay_times[0], *delay_times.last().unwrap());
    assert!(delay_times.len() as u64 <= (last - first) / 1_000_000_000 + 1);
    // The commit of txg 11 lands on its own sync end, mapped through birth_offset_ns.
    let c11 = m
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::TxgCommitted { txg: 11, .. }))
        .unwrap();
    assert!((10_000_000_000..=10_100_000_000).contains(&c11.t_ns));
}

#[test]
fn flush_phase_and_summary() {
    let cap = load();
    let m = run(&cap);
    let s = m.stats();
    assert_eq!(s.bytes, 3_133_149_482);
    // dd's own figure for the copy was 41.6 MB/s; the samples' copy phase ends at 76.9 s.
    assert!((s.avg_bps - 3_133_149_482.0 / 76.9).abs() < 1.0);
    assert_eq!(
        s.flush_secs,
        Some(80.801 - 76.9).map(|x| (x * 1e3_f64).round() / 1e3)
    );
    assert!(s.durable_bps.unwrap() < s.avg_bps);
    let flush = m
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::FlushStarted { .. }))
        .unwrap();
    // This copy's backlog: the 3 133 149 482 bytes dd handed over less the 2 985 115 648 the
    // txgs committed during the capture wrote, bounded by arc anon_size of the last sample
    // before the flush (166 744 064 at 76.801 s, every writer's). The flush then took 3.9 s at
    // the pool's ~40 MB/s: ~156 MB.
    assert_eq!(
        flush.kind,
        EventKind::FlushStarted {
            dirty: 148_033_834,
            system: false
        }
    );
    let k = m.kernel();
    let z = k.zfs.unwrap();
    assert_eq!(z.dirty_source, "arc anon_size");
    assert_eq!(z.open_txg, Some(35));
    assert_eq!(z.last_sync, Some((34, 0, 68_755_180)));
    assert_eq!(z.dirty_max, Some(DIRTY_MAX));
}

#[test]
fn kernel_view_mid_stall() {
    let cap = load();
    // Stop in the middle of the first stall (t = 7.000 s).
    let upto: Vec<&Sample> = cap
        .samples
        .iter()
        .map(|(_, s)| s)
        .take_while(|s| s.t_ns <= 7_000_000_000)
        .collect();
    let mut m = Model::new(ModelConfig::default(), env());
    for s in &upto {
        m.apply(s);
    }
    assert_eq!(m.open_drop_start(), Some(4_700_000_000));
    let open = m.open_drop().unwrap();
    let EventKind::Drop(d) = &open.kind else {
        unreachable!()
    };
    assert_eq!(d.end_ns, 7_000_000_000);
    // The pool already syncs back to back at ~40 MB/s, which caps the reference; with 320 MB
    // of dirty data (anon_size) still to write it stays busy ~8 s, so 2.3 s of stall have cost
    // nothing durable yet.
    assert!(
        (d.reference_bps - 40.8e6).abs() < 0.1e6,
        "{}",
        d.reference_bps
    );
    assert_eq!(d.bytes_lost, 0.0);
    // Still syncing: no size yet, but the txg is named.
    assert!(matches!(
        d.causes[0],
        Cause::TxgSync {
            txg: 11,
            ndirty: 0,
            stime_ns: 0,
            ..
        }
    ));
    let z = m.kernel().zfs.unwrap();
    assert_eq!((z.open_txg, z.syncing_txg), (Some(12), Some(11)));
    assert_eq!(z.dirty_estimate, Some(227_569_664));
    assert_eq!(z.delays_per_s, 0.0);
    assert_eq!(z.last_sync, Some((10, 82_248_192, 2_004_599_040)));
}

#[test]
fn replay_is_deterministic_and_survives_a_json_round_trip() {
    let cap = load();
    let a = run(&cap);
    let b = run(&cap);
    assert_eq!(a.events(), b.events());
    // Samples as a recording stores them (JSON) give the same events.
    let json: Vec<String> = cap
        .samples
        .iter()
        .map(|(_, s)| serde_json::to_string(s).unwrap())
        .collect();
    let back: Vec<Sample> = json
        .iter()
        .map(|j| serde_json::from_str(j).unwrap())
        .collect();
    let mut cap2 = Capture {
        samples: Vec::new(),
    };
    for ((p, _), s) in cap.samples.iter().zip(back) {
        cap2.samples.push((p.clone(), s));
    }
    let c = run(&cap2);
    assert_eq!(a.events(), c.events());
    // Events survive JSON (floats to the last digit need serde_json's float_roundtrip,
    // so compare what a reader sees).
    for e in a.events() {
        let back: Event = serde_json::from_str(&serde_json::to_string(e).unwrap()).unwrap();
        assert_eq!(back.t_ns, e.t_ns);
        assert_eq!(back.describe(), e.describe());
    }
}

#[test]
fn the_100_mbps_run_too() {
    let m = run(&load_from(DIR_100));
    let mut txgs = Vec::new();
    for ev in drops(&m) {
        let EventKind::Drop(d) = &ev.kind else {
            unreachable!()
        };
        assert!(
            d.causes
                .iter()
                .all(|c| matches!(c, Cause::TxgSync { .. } | Cause::ZfsThrottle { .. })),
            "{}",
            ev.describe()
        );
        let Cause::TxgSync { txg, ndirty, .. } = d.causes[0] else {
            panic!("{}", ev.describe())
        };
        assert!(ndirty > 80_000_000, "{}", ev.describe());
        txgs.push(txg);
    }
    // Txg 12's stall is where the copy came down to the pool's speed (the phase event, not a
    // drop); txgs 27 (89 MB, 0.9 s) and 31 synced while dd kept above half the pool's rate.
    assert!(
        m.events().iter().any(|e| e.describe()
            == "pool syncing back to back after 514 MB: now at pool speed, 101 MB/s")
    );
    let expected: Vec<u64> = (13..=32).filter(|t| *t != 27 && *t != 31).collect();
    assert_eq!(txgs, expected);
}
