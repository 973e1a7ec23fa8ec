//! ChartData derivation from recordings, and the file-writing entry points.

use crate::export_support;

use copyscope::model::EventKind;
use copyscope::model::ModelConfig;
use copyscope::report::export::{
    ChartData, DeviceSource, ExportTargets, MarkerKind, run_export, write_screenshot_set,
};
use copyscope::report::recording::write_recording;

use export_support::{COPY_END, FAST_BPS, FLUSH_END, SLOW_BPS, built_recording, zfs_lab};

fn near(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

#[test]
fn speeds_come_from_counter_deltas() {
    let data = ChartData::from_recording(&built_recording(true));
    assert_eq!(data.points.len(), 600);
    let at = |t: f64| {
        data.points
            .iter()
            .min_by(|a, b| (a.t_s - t).abs().total_cmp(&(b.t_s - t).abs()))
            .expect("points")
    };
    assert!(near(at(5.05).copy_bps, FAST_BPS, 0.03), "{:?}", at(5.05));
    assert!(near(at(40.05).copy_bps, SLOW_BPS, 0.03), "{:?}", at(40.05));
    assert!(at(12.55).copy_bps < 6e6);
    assert_eq!(data.device_source, DeviceSource::Diskstats);
    // Diskstats: 60 MB/s outside txg syncs, 280 MB/s inside (txg 101 syncs 2.0–3.5 s).
    assert!(near(at(1.05).device_bps.expect("device"), 60e6, 0.01));
    assert!(near(at(2.55).device_bps.expect("device"), 280e6, 0.01));
    assert!((data.duration_s - 60.0).abs() < 1e-9);
}

#[test]
fn engine_events_fill_in_what_the_model_did_not_record() {
    let data = ChartData::from_recording(&built_recording(true));
    let kinds = data.marker_kinds();
    assert_eq!(
        kinds,
        vec![
            MarkerKind::Drop,
            MarkerKind::Txg,
            MarkerKind::ZfsThrottle,
            MarkerKind::FileError,
            MarkerKind::Flush,
            MarkerKind::Scan
        ]
    );
    let err = data
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::FileError { .. }))
        .expect("file error from the engine");
    assert_eq!(err.t_ns, 20_000_000_000);
    assert_eq!(data.flush_spans(), vec![(COPY_END, FLUSH_END)]);
    assert!(data.events.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
}

#[test]
fn stats_are_the_models_and_counts_come_from_the_samples() {
    // One interpreter: speeds, drops and time lost are what the model says about the same
    // recording (tests/it/one_voice.rs checks every output against it); without a summary line
    // the counts come from the last sample.
    let rec = built_recording(false);
    let total = rec.samples.last().expect("samples").engine.bytes_copied;
    let data = ChartData::from_recording(&rec);
    let model = rec.model(copyscope::model::ModelConfig::default()).stats();
    let st = &data.stats;
    assert_eq!(st.avg_bps, model.avg_bps);
    assert_eq!(st.min_bps, model.min_bps);
    assert_eq!(st.peak_bps, model.peak_bps);
    assert_eq!(st.durable_bps, model.durable_bps);
    assert_eq!(st.drops, model.drops as u64);
    assert_eq!(st.lost_secs_by_cause, model.lost_by_cause_owned());
    assert!(
        near(st.avg_bps, total as f64 / COPY_END, 0.02),
        "{}",
        st.avg_bps
    );
    assert!(st.min_bps > 3e6, "min is outside drops: {}", st.min_bps);
    assert_eq!(st.bytes, total);
    assert_eq!(st.files, 10);
    assert_eq!(st.failed, 1);
}

#[test]
fn summary_counts_win_but_not_its_speeds() {
    let rec = built_recording(true);
    let data = ChartData::from_recording(&rec);
    let model = rec.model(copyscope::model::ModelConfig::default()).stats();
    assert_eq!(data.stats.lost_secs_by_cause, model.lost_by_cause_owned());
    assert_eq!(data.stats.elapsed_s, COPY_END);
    assert_eq!(data.title.fs, "zfs tank/backup");
    assert_eq!(data.title.date, "2026-11-30 04:20 UTC");
    assert_eq!(data.title.source, "/home/ann/iso");
}

#[test]
fn zfs_recording_without_diskstats_uses_txg_write_rates() {
    let rec = zfs_lab();
    let data = ChartData::from_recording(&rec);
    assert_eq!(data.device_source, DeviceSource::ZfsTxg);
    // The pool is limited to about 40 MB/s: while syncing, txg rows show that rate.
    let dev: Vec<f64> = data
        .points
        .iter()
        .filter(|p| p.t_s > 10.0 && p.t_s < 70.0)
        .filter_map(|p| p.device_bps)
        .collect();
    let mean = dev.iter().sum::<f64>() / dev.len() as f64;
    assert!(mean > 35e6 && mean < 45e6, "pool write rate {mean}");
    // The overlay spreads each committed txg's nwritten over its sync window, so its
    // integral equals the txgs' nwritten (those whose windows lie inside the recording).
    let overlay: f64 = data
        .points
        .iter()
        .filter_map(|p| p.device_bps)
        .map(|v| v * 0.1)
        .sum();
    let nwritten: u64 = data
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::TxgCommitted {
                nwritten, stime_ns, ..
            } if e.t_ns >= stime_ns && e.t_ns as f64 / 1e9 <= data.duration_s => Some(nwritten),
            _ => None,
        })
        .sum();
    assert!(
        near(overlay, nwritten as f64, 0.01),
        "{overlay} vs {nwritten}"
    );
    let copy_bytes: f64 = data.points.iter().map(|p| p.copy_bps * 0.1).sum();
    assert!(copy_bytes > 3.0e9 && copy_bytes < 3.2e9, "{copy_bytes}");
    assert_eq!(data.stats.bytes, 3_145_728_000);
    assert!(data.stats.peak_bps > 400e6);
    // min is the floor outside drops (the drops themselves reach ~0).
    assert!(data.stats.min_bps > 1e6, "{}", data.stats.min_bps);
}

#[test]
fn run_export_writes_requested_files_and_defaults_to_the_full_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec_path = dir.path().join("copy-1.jsonl");
    write_recording(&rec_path, &built_recording(true)).expect("write");

    let targets = ExportTargets {
        png: None,
        svg: Some(dir.path().join("out.svg")),
        text: Some(dir.path().join("out.txt")),
        markdown: None,
    };
    let written = run_export(
        &rec_path,
        &targets,
        (800, 450),
        true,
        ModelConfig::default(),
    )
    .expect("export");
    assert_eq!(
        written,
        vec![dir.path().join("out.svg"), dir.path().join("out.txt")]
    );
    let txt = std::fs::read_to_string(dir.path().join("out.txt")).expect("txt");
    assert!(txt.is_ascii());
    assert!(!dir.path().join("out.png").exists());

    let all = run_export(
        &rec_path,
        &ExportTargets::default(),
        (800, 450),
        false,
        ModelConfig::default(),
    )
    .expect("all");
    let names: Vec<String> = all
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["copy-1.svg", "copy-1.png", "copy-1.txt", "copy-1.md"]
    );
    for p in &all {
        assert!(std::fs::metadata(p).expect("exists").len() > 100);
    }

    let err = run_export(
        &dir.path().join("missing.jsonl"),
        &targets,
        (800, 450),
        false,
        ModelConfig::default(),
    )
    .expect_err("missing recording");
    assert!(format!("{err:#}").contains("missing.jsonl"));
}

#[test]
fn screenshot_set_creates_its_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = ChartData::from_recording(&built_recording(true));
    let out = dir.path().join("shots/nested");
    let written =
        write_screenshot_set(&data, &out, "copyscope-0042", (640, 360), false).expect("screenshot");
    assert_eq!(written.len(), 4);
    assert!(out.join("copyscope-0042.png").exists());
    assert!(out.join("copyscope-0042.md").exists());
}

/// Other writers on the destination disk (800 MB/s beside a 20 MB/s copy, seen in a demo on a
/// machine busy compiling) must not squash the copy into a sliver: the device overlay lifts the
/// axis to at most 2.5 × the copy's peak, is drawn clipped above, and the legend says so.
#[test]
fn other_writers_bursts_do_not_set_the_pictures_scale() {
    use copyscope::report::export::svg::{device_clipped, render_svg, top_value};
    let mut data = ChartData::from_recording(&built_recording(true));
    let copy_peak = data.points.iter().map(|p| p.max_bps).fold(0.0, f64::max);
    assert!(
        !device_clipped(&data),
        "the built run's own device rates stay in view"
    );
    let own_top = top_value(&data);
    assert!(own_top >= copy_peak);
    for p in data.points.iter_mut().step_by(50) {
        p.device_bps = Some(copy_peak * 40.0);
    }
    let top = top_value(&data);
    assert!(
        near(top, copy_peak * 2.5, 1e-9),
        "{top} vs copy peak {copy_peak}"
    );
    assert!(device_clipped(&data));
    let svg = render_svg(&data, 1600, 900);
    assert!(
        svg.contains("clipped at the top"),
        "legend says the overlay is clipped"
    );
    let ymax: f64 = svg
        .split("data-ymax-bps=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|v| v.parse().ok())
        .expect("plot area's ymax");
    assert!(
        ymax < copy_peak * 3.0,
        "axis top {ymax} follows the copy, not the spikes"
    );
}
