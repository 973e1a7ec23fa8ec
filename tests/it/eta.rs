//! The finish time against the real end (docs/eta.md): committed recordings of real copies
//! replayed through the model tick by tick, what it said once a quarter of the bytes was
//! copied held to when the data was really on disk, and what it must never do (guess a disk
//! it has not measured, give a watch an ETA, put the disk before the cache).
//!
//! `ETA_PRINT=1 cargo test --test it eta:: -- --nocapture` prints each run's ETA over time.

use std::path::Path;

use copyscope::model::{Eta, Model, ModelConfig, OnDisk, ReplayItem};
use copyscope::report::recording::Recording;

fn path(rel: &str) -> String {
    format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// The model after each sample of a replay: (t s, share copied, its ETA), and the model
/// closed at the end.
fn timeline(rel: &str) -> (Model, Vec<(f64, f64, Option<Eta>)>) {
    let p = path(rel);
    let rec = Recording::load(Path::new(&p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    let mut m = Model::new(
        rec.model_config(ModelConfig::default()),
        rec.header.environment.clone(),
    );
    let mut out = Vec::new();
    for item in rec.replay_items() {
        match item {
            ReplayItem::Sample(s) => {
                m.apply(s);
                let e = &s.engine;
                let frac = if e.bytes_total > 0 {
                    e.bytes_copied as f64 / e.bytes_total as f64
                } else {
                    0.0
                };
                out.push((s.t_ns as f64 / 1e9, frac, m.eta()));
            }
            ReplayItem::Engine { t_ns, event } => {
                m.engine_events(t_ns, event);
            }
        }
    }
    m.finish(rec.duration_ns());
    if std::env::var_os("ETA_PRINT").is_some() {
        println!("== {rel}");
        let mut next = 0.0;
        for (t, f, e) in &out {
            if *t >= next {
                next = t.floor() + 1.0;
                let words = e.map_or("none".to_string(), |e| e.describe(true));
                println!("{t:6.1} {:5.1} %  {words}", f * 100.0);
            }
        }
        if let Some(c) = m.eta_check() {
            println!("{}", c.describe());
        }
    }
    (m, out)
}

/// Real copies that ended with a flush: the slow disk with the machine's default dirty limits
/// (made by scripts/eta-check.sh) and with lowered ones, the ZFS lab pool fresh (1.5 and 3 GiB),
/// aged, and with `zfs_dirty_data_max` lowered to 64 MiB; the aged pool at 20 MB/s beside a
/// Samba client, unpaced and `--pace auto` (the client's part of the pool is not the copy's).
const FLUSHED: &[&str] = &[
    "tests/fixtures/recordings/slowdev-2000mb-default.jsonl",
    "assets/slowdev-40mbps-ext4.jsonl",
    "assets/zfs-40mbps-copy.jsonl",
    "tests/fixtures/recordings/zfs-40mbps-zero.jsonl",
    "tests/fixtures/corpus/zfs-aged-bigfile.jsonl",
    "tests/fixtures/corpus/zfs-throttle-64m.jsonl",
    "tests/fixtures/corpus/ext4-disk-lowered.jsonl",
    "tests/fixtures/corpus/zfs-samba-unpaced.jsonl",
    "tests/fixtures/corpus/zfs-samba-paced.jsonl",
];

#[test]
fn at_a_quarter_of_the_bytes_the_on_disk_finish_is_within_ten_percent_of_the_real_end() {
    for rel in FLUSHED {
        let (m, _) = timeline(rel);
        let c = m.eta_check().unwrap_or_else(|| panic!("{rel}: no check"));
        let real = c.real.unwrap_or_else(|| panic!("{rel}: not ended"));
        assert!(real.on_disk, "{rel}: {c:?}");
        let said = c
            .said()
            .unwrap_or_else(|| panic!("{rel}: no disk time at 25 %"));
        let err = (real.secs - said.secs).abs() / real.secs;
        assert!(
            err <= 0.10,
            "{rel}: {} ({:.1} %)",
            c.describe(),
            err * 100.0
        );
        // The summary's line says the same figures.
        assert!(c.describe().contains("on disk at"), "{}", c.describe());
    }
}

#[test]
fn a_copy_that_does_not_flush_is_held_to_its_last_byte() {
    // --no-sync, 4600 MB onto the slow disk with the default limits.
    let (m, _) = timeline("tests/fixtures/corpus/ext4-disk-default.jsonl");
    let c = m.eta_check().expect("check");
    let real = c.real.expect("ended");
    assert!(!real.on_disk, "{c:?}");
    let err = (real.secs - c.said_cache.secs).abs() / real.secs;
    assert!(err <= 0.10, "{} ({:.1} %)", c.describe(), err * 100.0);
    assert!(c.describe().contains("in cache at"), "{}", c.describe());
}

#[test]
fn the_disk_comes_after_the_cache_and_every_figure_is_finite() {
    for rel in FLUSHED {
        let (_, tl) = timeline(rel);
        let mut measured = 0;
        for (t, _, e) in tl {
            let Some(e) = e else { continue };
            assert!(
                e.to_cache_secs.is_finite() && e.to_cache_secs >= 0.0,
                "{rel} {t}"
            );
            if let Some(b) = e.to_cache_band_secs {
                assert!(b.is_finite() && b >= 0.0, "{rel} {t}: {e:?}");
            }
            if let OnDisk::Secs { secs, band_secs } = e.on_disk {
                measured += 1;
                assert!(
                    secs.is_finite() && secs + 1e-9 >= e.to_cache_secs,
                    "{rel} {t}: {e:?}"
                );
                assert!(band_secs.is_none_or(|b| b.is_finite() && b >= 0.0));
            }
        }
        assert!(measured > 100, "{rel}: {measured} ticks with a disk time");
    }
}

#[test]
fn the_disk_is_not_guessed_before_it_is_measured() {
    // Onto ZFS, the first seconds fill the dirty data before any txg of the copy committed
    // or the disks wrote at full concurrency: the cache's time only.
    let (_, tl) = timeline("assets/zfs-40mbps-copy.jsonl");
    let first = tl
        .iter()
        .find_map(|(t, _, e)| e.map(|e| (*t, e)))
        .expect("an ETA");
    assert_eq!(first.1.on_disk, OnDisk::Unmeasured, "{first:?}");
    assert!(first.1.describe(true).ends_with("on disk --:--"));
    assert!(
        tl.iter()
            .any(|(_, _, e)| e.is_some_and(|e| matches!(e.on_disk, OnDisk::Secs { .. })))
    );
}

#[test]
fn a_watch_has_no_finish_time_and_tmpfs_no_disk() {
    for rel in ["assets/zfs-watch-dd.jsonl", "assets/samba-watch.jsonl"] {
        let (m, tl) = timeline(rel);
        assert!(tl.iter().all(|(_, _, e)| e.is_none()), "{rel}");
        assert_eq!(m.eta_check(), None, "{rel}");
    }
    let (m, tl) = timeline("tests/fixtures/corpus/tmpfs-other-writer.jsonl");
    let c = m.eta_check().expect("check");
    assert!(c.no_disk && c.describe().contains(": done at"), "{c:?}");
    let etas: Vec<Eta> = tl.iter().filter_map(|x| x.2).collect();
    assert!(!etas.is_empty());
    assert!(etas.iter().all(|e| e.on_disk == OnDisk::NoDisk), "{etas:?}");
    assert!(!etas[0].describe(true).contains("on disk"));
}
