//! Property tests: the model takes any sample stream (counters that jump, go backwards,
//! repeat timestamps, garbage txg rows) without panicking, and stays within its bounds.

use copyscope::copy::{EngineEvent, ProgressSnapshot};
use copyscope::model::{Model, ModelConfig};
use copyscope::sample::{
    Cpu, DiskCounters, DmuTx, Environment, PageCache, Psi, Sample, TxgRow, ZfsSample,
};
use proptest::prelude::*;

fn row() -> impl Strategy<Value = TxgRow> {
    (
        0u64..50,
        any::<u64>(),
        prop::sample::select(vec!['O', 'Q', 'W', 'S', 'C', 'B', '?']),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(txg, birth, state, ndirty, nwritten, otime, wtime, stime)| TxgRow {
                txg,
                birth,
                state,
                ndirty,
                nwritten,
                otime,
                wtime,
                stime,
                ..Default::default()
            },
        )
}

fn sample() -> impl Strategy<Value = (u64, Sample)> {
    (
        0u64..400_000_000,
        any::<u64>(),
        any::<(u64, u64, bool)>(),
        prop::option::of(any::<(u64, u64, u64, u64)>()),
        prop::option::of(any::<(u64, u64, u32)>()),
        prop::option::of(any::<u64>()),
        prop::option::of(0f32..200.0),
        prop::option::of((
            prop::collection::vec(row(), 0..6),
            any::<(u64, u64)>(),
            prop::option::of(any::<u64>()),
            any::<i64>(),
        )),
    )
        .prop_map(
            |(dt, bytes, (read_ns, write_ns, done), page, disk, psi, cpu, zfs)| {
                let s = Sample {
                    t_ns: 0,
                    engine: ProgressSnapshot {
                        bytes_copied: bytes % (1 << 40),
                        bytes_total: 1 << 39,
                        scan_done: done,
                        read_ns,
                        write_ns,
                        ..Default::default()
                    },
                    page_cache: page.map(|(dirty, writeback, bg_thresh, thresh)| PageCache {
                        dirty,
                        writeback: writeback % (1 << 50),
                        bg_thresh,
                        thresh: thresh % (1 << 60),
                        written: 0,
                    }),
                    dest_disk: disk.map(|(sectors_written, io_ticks_ms, disks)| DiskCounters {
                        sectors_written: sectors_written % (1 << 50),
                        io_ticks_ms,
                        disks,
                        ..Default::default()
                    }),
                    source_disk: None,
                    psi_io: psi.map(|some_us| Psi {
                        some_us,
                        full_us: 0,
                    }),
                    cpu: cpu.map(|busy_pct| Cpu {
                        busy_pct,
                        max_core_pct: busy_pct,
                    }),
                    threads: None,
                    net_rx: None,
                    exact: None,
                    evidence: None,
                    pipeline: None,
                    zfs: zfs.map(|(txgs, (dly, over), arc_anon, birth_offset_ns)| ZfsSample {
                        pool: "tank".into(),
                        txgs,
                        dmu_tx: DmuTx {
                            dirty_delay: dly,
                            dirty_over_max: over,
                            ..Default::default()
                        },
                        arc_anon,
                        birth_offset_ns,
                        ..Default::default()
                    }),
                };
                (dt, s)
            },
        )
}

fn engine_event() -> impl Strategy<Value = Option<EngineEvent>> {
    prop::option::weighted(
        0.1,
        prop::sample::select(vec![
            EngineEvent::Paused,
            EngineEvent::Resumed,
            EngineEvent::FlushStarted,
            EngineEvent::FlushDone,
            EngineEvent::ScanDone { files: 3, bytes: 9 },
            EngineEvent::Fatal { error: "x".into() },
        ]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn never_panics_and_stays_bounded(
        steps in prop::collection::vec((sample(), engine_event()), 1..300),
        zfs_env in any::<bool>(),
    ) {
        let cfg = ModelConfig { max_points: 16, max_events: 8, ..Default::default() };
        let env = Environment {
            fs_type: Some(if zfs_env { "zfs" } else { "ext4" }.into()),
            zfs_dirty_data_max: zfs_env.then_some(1 << 30),
            ..Default::default()
        };
        let mut m = Model::new(cfg, env);
        let mut t = 0u64;
        for ((dt, mut s), ev) in steps {
            t += dt;
            s.t_ns = t;
            m.apply(&s);
            if let Some(ev) = ev {
                m.engine_events(t, &ev);
            }
            prop_assert!(m.series().len() <= 16);
            prop_assert!(m.events().len() <= 8);
            for e in m.events() {
                let _ = e.describe();
            }
            let _ = m.kernel();
            let _ = m.stats();
            let _ = m.open_drop();
            if let Some(e) = m.eta() {
                // Never NaN or infinite, never negative, whatever the counters did.
                prop_assert!(e.to_cache_secs.is_finite() && e.to_cache_secs >= 0.0, "{e:?}");
                let _ = e.describe(true);
            }
        }
        m.finish(t + 1);
        if let Some(c) = m.eta_check() {
            let _ = c.describe();
        }
        prop_assert!(m.events().windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    }
}
