//! Recording format: writer → loader round trips, the pinned v1 fixture, and the loader's
//! tolerance (unknown lines and fields, a crash-truncated last line) and its errors.

use crate::export_support;

use copyscope::copy::EngineEvent;
use copyscope::model::{Cause, EventKind};
use copyscope::report::recording::{
    FORMAT_VERSION, Recording, RecordingError, RecordingWriter, write_recording,
};

use export_support::{built_recording, fixture_path};

fn write_with_writer(rec: &Recording, path: &std::path::Path) {
    let mut w = RecordingWriter::create(path, &rec.header).expect("create");
    for s in &rec.samples {
        w.write_sample(s).expect("sample");
    }
    for e in &rec.events {
        w.write_event(e).expect("event");
    }
    for (t, e) in &rec.engine_events {
        w.write_engine_event(*t, e).expect("engine");
    }
    w.finish(rec.summary.as_ref().expect("summary"))
        .expect("finish");
}

#[test]
fn writer_then_load_gives_identical_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("run.jsonl");
    let rec = built_recording(true);
    write_with_writer(&rec, &path);
    let back = Recording::load(&path).expect("load");
    assert_eq!(back.header, rec.header);
    assert_eq!(back.samples.len(), 601);
    assert_eq!(back.samples, rec.samples);
    assert_eq!(back.events, rec.events);
    assert_eq!(back.engine_events, rec.engine_events);
    assert_eq!(back.summary, rec.summary);
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
}

#[test]
fn write_recording_interleaves_by_time_and_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("saved.jsonl");
    let mut rec = built_recording(false);
    rec.warnings.clear();
    write_recording(&path, &rec).expect("write");
    let text = std::fs::read_to_string(&path).expect("read");
    // Lines are in time order, so a partial file is a consistent prefix of the run.
    let mut last = 0u64;
    for line in text.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(line).expect("json line");
        let t = v["t_ns"].as_u64().expect("t_ns");
        assert!(t >= last, "line out of order: {line}");
        last = t;
    }
    let back = Recording::load(&path).expect("load");
    assert_eq!(back, rec);
    assert!(back.summary.is_none());
}

#[test]
fn header_is_on_disk_at_once_and_samples_within_a_second() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.jsonl");
    let rec = built_recording(false);
    let mut w = RecordingWriter::create(&path, &rec.header).expect("create");
    let on_disk = Recording::load(&path).expect("header alone loads");
    assert_eq!(on_disk.header, rec.header);
    assert!(on_disk.samples.is_empty());
    // Write 2.5 s of samples without closing: at least the first 1.5 s must be on disk.
    for s in rec.samples.iter().take(26) {
        w.write_sample(s).expect("sample");
    }
    let partial = Recording::load(&path).expect("partial loads");
    assert!(
        partial.samples.len() >= 16,
        "only {} samples flushed",
        partial.samples.len()
    );
    // "Save the run so far": a copy that loads without a summary.
    let copy = dir.path().join("copy.jsonl");
    w.save_copy_to(&copy).expect("copy");
    let saved = Recording::load(&copy).expect("copy loads");
    assert_eq!(saved.samples, rec.samples[..26].to_vec());
    assert!(saved.summary.is_none());
    w.close().expect("close");
}

#[test]
fn handwritten_v1_fixture_loads() {
    let rec = Recording::load(&fixture_path("v1-handwritten.jsonl")).expect("v1 loads");
    assert_eq!(rec.header.format_version, 1);
    const { assert!(FORMAT_VERSION >= 1) };
    assert_eq!(rec.header.host, "nas");
    assert_eq!(
        rec.header.environment.zfs_dataset.as_deref(),
        Some("tank/backup")
    );
    assert_eq!(
        rec.header.environment.tunables[1],
        ("vm.dirty_ratio".to_string(), "20".to_string())
    );
    assert_eq!(rec.samples.len(), 4);
    let s0 = &rec.samples[0];
    let z = s0.zfs.as_ref().expect("zfs part");
    assert_eq!(z.txgs[0].state, 'C');
    assert_eq!(z.txgs[0].stime, 1_789_012_345);
    assert_eq!(z.dmu_tx.dirty_over_max, 41);
    assert_eq!(rec.samples[1].cpu.expect("cpu").busy_pct, 12.5);
    assert!(rec.samples[2].page_cache.is_none());
    assert_eq!(rec.samples[2].psi_io.expect("psi").some_us, 40_000);
    assert_eq!(rec.events.len(), 3);
    let EventKind::Drop(d) = &rec.events[1].kind else {
        panic!("second event is the drop: {:?}", rec.events[1]);
    };
    assert_eq!(d.causes.len(), 2);
    assert!(matches!(d.causes[0], Cause::TxgSync { txg: 48211, .. }));
    assert_eq!(d.causes[1], Cause::Unknown);
    assert_eq!(
        rec.engine_events,
        vec![(
            250_000_000,
            EngineEvent::FileFailed {
                path: "other.bin".into(),
                error: "Permission denied (os error 13)".to_string()
            }
        )]
    );
    let sum = rec.summary.expect("summary");
    assert_eq!(sum.exit_code, 1);
    assert_eq!(sum.lost_secs_by_cause, vec![("txg sync".to_string(), 0.36)]);
}

#[test]
fn unknown_line_types_and_fields_are_ignored() {
    let text = std::fs::read_to_string(fixture_path("v1-handwritten.jsonl")).expect("fixture");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.insert(
        2,
        r#"{"type":"annotation","t_ns":5,"text":"from a later version"}"#.to_string(),
    );
    lines[1] = lines[1].replacen(
        "{\"type\":\"sample\",",
        "{\"type\":\"sample\",\"gpu\":{\"busy\":3},",
        1,
    );
    let rec = Recording::parse(&(lines.join("\n") + "\n")).expect("parses");
    assert_eq!(rec.samples.len(), 4);
    assert_eq!(rec.warnings.len(), 1, "{:?}", rec.warnings);
    assert!(rec.warnings[0].contains("1 line"));
}

#[test]
fn truncated_last_line_is_tolerated_with_a_warning() {
    let text = std::fs::read_to_string(fixture_path("v1-handwritten.jsonl")).expect("fixture");
    // Cut in the middle of the summary line, as a SIGKILL during a write would.
    let cut = text.rfind("\"drops\"").expect("summary present");
    let rec = Recording::parse(&text[..cut]).expect("truncated loads");
    assert_eq!(rec.samples.len(), 4);
    assert!(rec.summary.is_none());
    assert_eq!(rec.warnings.len(), 1);
    assert!(
        rec.warnings[0].starts_with("line 10:"),
        "{}",
        rec.warnings[0]
    );
}

#[test]
fn garbage_gives_a_line_numbered_error() {
    let text = std::fs::read_to_string(fixture_path("v1-handwritten.jsonl")).expect("fixture");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "this is not json";
    let err = Recording::parse(&(lines.join("\n") + "\n")).expect_err("garbage fails");
    assert!(
        matches!(err, RecordingError::Parse { line: 3, .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with("line 3: "), "{err}");

    // A known line type with a wrong field is an error too, with its line.
    lines[2] = r#"{"type":"sample","t_ns":"soon"}"#;
    let err = Recording::parse(&(lines.join("\n") + "\n")).expect_err("bad sample fails");
    assert!(
        matches!(err, RecordingError::Parse { line: 3, .. }),
        "{err}"
    );
}

#[test]
fn header_problems_are_clear() {
    assert!(matches!(Recording::parse(""), Err(RecordingError::Empty)));
    let sample_first = r#"{"type":"sample","t_ns":0,"engine":{"bytes_copied":0,"files_done":0,"files_failed":0,"bytes_total":0,"files_total":0,"scan_done":false,"read_ns":0,"write_ns":0}}"#;
    assert!(matches!(
        Recording::parse(&format!("{sample_first}\n")),
        Err(RecordingError::MissingHeader)
    ));
    let v0 = r#"{"type":"header","format_version":0,"copyscope_version":"x","started_at":"","interval_ms":100}"#;
    assert!(matches!(
        Recording::parse(&format!("{v0}\n")),
        Err(RecordingError::UnsupportedVersion { found: 0 })
    ));
    let newer = r#"{"type":"header","format_version":99,"copyscope_version":"9.0","started_at":"","interval_ms":100,"new_thing":1}"#;
    let rec = Recording::parse(&format!("{newer}\n")).expect("newer loads best-effort");
    assert_eq!(rec.warnings.len(), 1);
}

#[test]
fn real_zfs_lab_recording_loads() {
    let rec = export_support::zfs_lab();
    assert_eq!(rec.header.environment.zfs_dirty_data_max, Some(410_327_040));
    assert!(rec.samples.len() > 800);
    assert!(rec.samples.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
    let drops = rec
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Drop(_)))
        .count();
    assert_eq!(rec.summary.as_ref().map(|s| s.drops as usize), Some(drops));
}

proptest::proptest! {
    /// The loader never panics: garbage, cut or spliced files give a value or an error.
    #[test]
    fn loader_never_panics(cut in 0usize..4000, junk in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let text = std::fs::read(fixture_path("v1-handwritten.jsonl")).expect("fixture");
        let mut bytes = text[..cut.min(text.len())].to_vec();
        bytes.extend_from_slice(&junk);
        let _ = Recording::read(&bytes[..]);
    }
}

#[test]
fn cutting_anywhere_keeps_every_complete_line() {
    let text = std::fs::read_to_string(fixture_path("v1-handwritten.jsonl")).expect("fixture");
    let header_end = text.find('\n').expect("newline") + 1;
    for cut in header_end..text.len() {
        let rec = Recording::parse(&text[..cut]).expect("any cut after the header loads");
        let complete_lines = text[..cut].matches('\n').count();
        let kept = 1
            + rec.samples.len()
            + rec.events.len()
            + rec.engine_events.len()
            + usize::from(rec.summary.is_some());
        // A cut exactly at a line end, or just after a complete JSON object, keeps it.
        assert!(
            kept >= complete_lines,
            "cut {cut}: kept {kept} of {complete_lines}"
        );
    }
}
