//! `copyscope whatif` against reality (docs/whatif.md): each lab recording predicts its twin
//! — the same copy onto the same disks with other tunables — and the prediction is held to
//! what the twin really did.
//!
//! `WHATIF_PRINT=1 cargo test --test it whatif:: -- --nocapture` prints each summary.

use std::path::Path;

use copyscope::model::ModelConfig;
use copyscope::model::whatif::{Figures, Scenario, Settings};
use copyscope::report::whatif::{Outcome, Recorded, load, outcome};

fn corpus(name: &str) -> Recorded {
    let p = format!(
        "{}/tests/fixtures/corpus/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    load(Path::new(&p), ModelConfig::default()).unwrap_or_else(|e| panic!("{p}: {e:#}"))
}

fn settings(specs: &[&str]) -> Settings {
    let mut s = Settings::default();
    for spec in specs {
        s.set(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
    s
}

/// `from` predicting the copy `to` made, with `to`'s tunables `specs`.
fn cross(from: &Recorded, to: &Recorded, specs: &[&str], name: &str) -> Outcome {
    let scenario = Scenario {
        settings: settings(specs),
        bytes: Some(to.measured.bytes),
        flush: Some(to.measured.flushed),
        ..Scenario::default()
    };
    let o = outcome(from, &scenario, name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    if std::env::var_os("WHATIF_PRINT").is_some() {
        println!("{}", o.summary());
        let real = Figures::of(&to.replayed.model);
        println!("REAL {name}: {real:?}\nPRED {name}: {:?}\n", o.pred);
    }
    o
}

#[test]
fn zfs_64m_from_aged_and_back() {
    let aged = corpus("zfs-aged-bigfile");
    let small = corpus("zfs-throttle-64m");
    cross(
        &aged,
        &small,
        &["zfs_dirty_data_max=67108864"],
        "aged → 64m",
    );
    cross(
        &small,
        &aged,
        &["zfs_dirty_data_max=515396075"],
        "64m → aged",
    );
    cross(&aged, &aged, &[], "aged → aged");
    cross(&small, &small, &[], "64m → 64m");
}

#[test]
fn ext4_lowered_from_default_and_back() {
    let low = corpus("ext4-disk-lowered");
    let def = corpus("ext4-disk-default");
    cross(
        &def,
        &low,
        &[
            "vm.dirty_bytes=300000000",
            "vm.dirty_background_bytes=100000000",
        ],
        "default → lowered",
    );
    cross(
        &low,
        &def,
        &[
            "vm.dirty_bytes=4674920448",
            "vm.dirty_background_bytes=2334605312",
        ],
        "lowered → default",
    );
    cross(&low, &low, &[], "lowered → lowered");
    cross(&def, &def, &[], "default → default");
}

#[test]
fn debug_print() {
    let Some(which) = std::env::var_os("WHATIF_DEBUG") else {
        return;
    };
    let (a, b, specs): (&str, &str, Vec<&str>) = match which.to_str() {
        Some("ld") => (
            "ext4-disk-lowered",
            "ext4-disk-default",
            vec![
                "vm.dirty_bytes=4674920448",
                "vm.dirty_background_bytes=2334605312",
            ],
        ),
        _ => ("zfs-aged-bigfile", "zfs-aged-bigfile", vec![]),
    };
    let (from, to) = (corpus(a), corpus(b));
    let prof: Vec<String> = from
        .measured
        .intake_profile
        .iter()
        .map(|v| {
            v.intake_bps
                .map_or("-".into(), |x| format!("{:.0}", x / 1e6))
        })
        .collect();
    println!("profile {}", prof.join(" "));
    let o = cross(&from, &to, &specs, "debug");
    for e in &o.predicted.events {
        println!("{:7.2} {:?}", e.t_ns as f64 / 1e9, e.kind);
    }
    for p in o.predicted.points.iter().step_by(10) {
        print!(
            "{:.0}:{:.0}/{:.0} ",
            p.t_s,
            p.copy_bps / 1e6,
            p.device_bps.unwrap_or(0.0) / 1e6
        );
    }
    println!();
}
