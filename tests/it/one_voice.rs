//! One interpreter, one set of figures: for every committed recording, the TUI header, the
//! plain (after-exit) summary, the JSON summary, the Markdown table, the SVG and the PNG report
//! the same peak, min, average, durable speed, drop count and time lost — the model's
//! ([`copyscope::model::Stats`]), each written by its own output's formatter.

use std::path::Path;

use copyscope::frontend::replay::{app_at, run_json};
use copyscope::model::{ModelConfig, Stats};
use copyscope::present::format::{fmt_mbps, fmt_rate, fmt_secs};
use copyscope::present::units::Units;
use copyscope::report::export::ChartData;
use copyscope::report::export::markdown::render_markdown;
use copyscope::report::export::png::{rasterize, render_png};
use copyscope::report::export::svg::render_svg;
use copyscope::report::recording::{Recording, Replayed};
use copyscope::report::summary::final_summary;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::util;
use util::{committed_recordings as recordings, plain_ui_options as opts};

/// The TUI's header row (the line with "avg"), drawn wide enough to hold every figure.
fn tui_header(rec: &Recording) -> String {
    let app = app_at(rec, ModelConfig::default(), opts(), rec.duration_ns());
    let mut term = Terminal::new(TestBackend::new(220, 40)).expect("terminal");
    term.draw(|f| copyscope::ui::render(f, &app.view()))
        .expect("draw");
    let screen = term.backend().to_string();
    screen
        .lines()
        .find(|l| l.contains(" avg "))
        .unwrap_or_else(|| panic!("no header row in\n{screen}"))
        .to_string()
}

#[expect(
    clippy::too_many_lines,
    reason = "every face's figures compared with the model's for one recording: the checks read side by side"
)]
fn check(path: &Path) {
    let rec = Recording::load(path).expect("recording loads");
    let model = rec.model(ModelConfig::default());
    let st: Stats = model.stats();
    if st.bytes > 0 {
        assert!(
            st.min_bps <= st.avg_bps && st.avg_bps <= st.peak_bps,
            "{}: min {} ≤ avg {} ≤ peak {}",
            path.display(),
            st.min_bps,
            st.avg_bps,
            st.peak_bps
        );
    }
    let name = path.display();
    let u = Units::Decimal;

    // `export` and `replay --plain/--json` stream the file into the model (bounded memory);
    // that model says exactly what the whole recording in memory says.
    let run = Replayed::load(path, ModelConfig::default()).expect("recording streams");
    assert_eq!(run.model.stats(), st, "{name}: streamed model");
    assert_eq!(
        run.model.events(),
        model.events(),
        "{name}: streamed events"
    );
    assert_eq!(
        run.duration_ns,
        rec.duration_ns(),
        "{name}: streamed duration"
    );

    // The export data is the model's, number for number.
    let data = ChartData::from_replayed(&run);
    assert_eq!(data, ChartData::from_recording(&rec), "{name}: export data");
    assert_eq!(data.stats.avg_bps, st.avg_bps, "{name}: export avg");
    assert_eq!(data.stats.min_bps, st.min_bps, "{name}: export min");
    assert_eq!(data.stats.peak_bps, st.peak_bps, "{name}: export peak");
    assert_eq!(data.stats.durable_bps, st.durable_bps, "{name}: durable");
    assert_eq!(data.stats.drops, st.drops as u64, "{name}: export drops");
    assert_eq!(
        data.stats.lost_secs_by_cause,
        st.lost_by_cause_owned(),
        "{name}: export time lost"
    );

    // TUI header.
    let header = tui_header(&rec);
    for (label, v) in [
        ("avg", st.avg_bps),
        ("peak", st.peak_bps),
        ("min", st.min_bps),
    ] {
        let want = format!("{label} {}", u.rate(v));
        assert!(
            header.contains(&want),
            "{name}: TUI header lacks {want:?}: {header}"
        );
    }
    if let Some(d) = st.durable_bps {
        let want = format!("durable {}", u.rate(d));
        assert!(
            header.contains(&want),
            "{name}: TUI header lacks {want:?}: {header}"
        );
    }
    if st.drops > 0 {
        let want = format!(
            "drops {} ({} lost)",
            st.drops,
            fmt_secs(st.lost_total_secs())
        );
        assert!(
            header.contains(&want),
            "{name}: TUI header lacks {want:?}: {header}"
        );
    }

    // Plain summary (printed after the TUI and by replay --plain).
    let plain = final_summary(&data, &model, false, u, None, 100);
    let rate = |v| copyscope::present::format::fmt_rate_with(v, false);
    // A watch's average is its intake's, not a copy's into the cache.
    let what = if rec.header.watch.is_some() {
        "intake speed"
    } else {
        "speed to cache"
    };
    let want = format!(
        "{what} {} (min {}, peak {})",
        rate(st.avg_bps),
        rate(st.min_bps),
        rate(st.peak_bps)
    );
    assert!(
        plain.contains(&want),
        "{name}: plain lacks {want:?}:\n{plain}"
    );
    if let Some(d) = st.durable_bps {
        let want = format!("durable {}", rate(d));
        assert!(
            plain.contains(&want),
            "{name}: plain lacks {want:?}:\n{plain}"
        );
    }
    if st.drops > 0 {
        let want = format!(
            "drops: {} ({} lost",
            st.drops,
            fmt_secs(st.lost_total_secs())
        );
        assert!(
            plain.contains(&want),
            "{name}: plain lacks {want:?}:\n{plain}"
        );
    }

    // JSON summary (replay --json's last line).
    let json = run_json(path, ModelConfig::default()).expect("replay --json");
    let last = json.lines().last().expect("a summary line");
    let v: serde_json::Value = serde_json::from_str(last).expect("JSON");
    assert_eq!(v["type"], "summary", "{name}: {last}");
    assert_eq!(v["to_cache_bps"], st.avg_bps.round(), "{name}: JSON avg");
    assert_eq!(v["min_bps"], st.min_bps.round(), "{name}: JSON min");
    assert_eq!(v["peak_bps"], st.peak_bps.round(), "{name}: JSON peak");
    assert_eq!(
        v["durable_bps"].as_f64(),
        st.durable_bps.map(f64::round),
        "{name}: JSON durable"
    );
    assert_eq!(v["drops"], st.drops, "{name}: JSON drops");
    // The same budget and verdict as the live `--json` run's summary.
    assert_eq!(
        v["verdict"],
        serde_json::to_value(model.verdict()).unwrap(),
        "{name}: JSON verdict"
    );
    assert_eq!(
        v["budget"],
        copyscope::report::json::budget_json(model.budget()),
        "{name}: JSON budget"
    );
    let lost = v["lost_s"].as_f64().expect("lost_s");
    assert!(
        (lost - st.lost_total_secs()).abs() < 1e-3,
        "{name}: JSON time lost {lost} vs {}",
        st.lost_total_secs()
    );

    // Markdown.
    let md = render_markdown(&data);
    let want = format!("| {} / {} |", fmt_mbps(st.min_bps), fmt_mbps(st.peak_bps));
    assert!(md.contains(&want), "{name}: Markdown lacks {want:?}:\n{md}");
    assert!(
        md.contains(&format!("| {} |", fmt_mbps(st.avg_bps))),
        "{name}: Markdown avg"
    );

    // SVG, and the PNG is that SVG rasterised (one drawing, two outputs).
    let svg = render_svg(&data, 1200, 700);
    for want in [
        format!("{} / {}", fmt_rate(st.min_bps), fmt_rate(st.peak_bps)),
        fmt_rate(st.avg_bps),
    ] {
        let esc = want.replace('&', "&amp;");
        assert!(svg.contains(&esc), "{name}: SVG lacks {want:?}");
    }
    if let Some(d) = st.durable_bps {
        assert!(svg.contains(&fmt_rate(d)), "{name}: SVG durable");
    }
    if let Some(n) = &st.net {
        check_net(path, n, &header, &plain, &v, &md, &svg);
    }
    // Small: the rasteriser is slow in a debug build, and the point is that they are equal.
    let png = render_png(&data, 320, 180).expect("png");
    let again = rasterize(&render_svg(&data, 320, 180), 320, 180).expect("png of the svg");
    assert_eq!(png, again, "{name}: the PNG is not the SVG's rasterisation");
}

/// `watch --net`: the receive figures (the model's [`copyscope::model::NetStats`]) in the TUI
/// header, the plain summary, the JSON summary, the Markdown table and the SVG.
fn check_net(
    path: &Path,
    n: &copyscope::model::NetStats,
    header: &str,
    plain: &str,
    json: &serde_json::Value,
    md: &str,
    svg: &str,
) {
    let name = path.display();
    let want = format!("rx avg {}", Units::Decimal.rate(n.avg_bps));
    assert!(
        header.contains(&want),
        "{name}: TUI header lacks {want:?}: {header}"
    );
    let want = format!(
        "network rx: avg {} (min {}, peak {})",
        fmt_rate(n.avg_bps),
        fmt_rate(n.min_bps),
        fmt_rate(n.peak_bps)
    );
    assert!(
        plain.contains(&want),
        "{name}: plain lacks {want:?}:\n{plain}"
    );
    let j = &json["net"];
    assert_eq!(j["avg_bps"], n.avg_bps.round(), "{name}: JSON rx avg");
    assert_eq!(j["min_bps"], n.min_bps.round(), "{name}: JSON rx min");
    assert_eq!(j["peak_bps"], n.peak_bps.round(), "{name}: JSON rx peak");
    let want = format!(
        "| {} ({} / {}) |",
        fmt_mbps(n.avg_bps),
        fmt_mbps(n.min_bps),
        fmt_mbps(n.peak_bps)
    );
    assert!(md.contains(&want), "{name}: Markdown lacks {want:?}:\n{md}");
    for want in [
        fmt_rate(n.avg_bps),
        format!("{} / {}", fmt_rate(n.min_bps), fmt_rate(n.peak_bps)),
    ] {
        assert!(svg.contains(&want), "{name}: SVG lacks {want:?}");
    }
    assert!(svg.contains("id=\"net-series\""), "{name}: SVG rx line");
}

#[test]
fn every_output_reports_the_models_figures() {
    for p in recordings() {
        check(&p);
    }
}

#[test]
fn min_is_outside_drops() {
    // The ZFS lab copy stalls to ~0 in its drops; its min (outside drops) must not be 0.
    let rec = Recording::load(Path::new("tests/fixtures/recordings/zfs-40mbps-zero.jsonl"))
        .expect("fixture");
    let st = rec.model(ModelConfig::default()).stats();
    assert!(st.drops > 0, "the fixture has drops");
    assert!(
        st.min_bps > 1e6 && st.min_bps <= st.avg_bps.max(st.peak_bps),
        "min {} (avg {}, peak {})",
        st.min_bps,
        st.avg_bps,
        st.peak_bps
    );
}

/// Bounded memory (issue 14): a recording far longer than the model's series streams into
/// the model with the series capped and the events capped, and reports what the whole
/// recording in memory reports.
#[test]
fn a_long_recording_streams_into_a_bounded_model() {
    use copyscope::copy::{EngineEvent, ProgressSnapshot};
    use copyscope::report::recording::{FORMAT_VERSION, Header, RecordingWriter};
    use copyscope::sample::{Environment, PageCache, Sample};

    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("long.jsonl");
    let header = Header {
        format_version: FORMAT_VERSION,
        copyscope_version: "test".into(),
        started_at: "2026-11-30T04:20:55Z".into(),
        host: "h".into(),
        kernel: "k".into(),
        command_line: vec![],
        sources: vec!["/a".into()],
        destination: "/b".into(),
        environment: Environment::default(),
        interval_ms: 100,
        watch: None,
        bench: None,
    };
    let mut w = RecordingWriter::create(&path, &header).expect("create");
    // 40 000 ticks (67 min at 100 ms), ten times the series' capacity: 40 MB/s with a
    // 1.5 s stall every 20 s, as a disk-bound copy through a throttled page cache looks.
    let ticks = 40_000u64;
    let mut bytes = 0u64;
    for i in 0..=ticks {
        let stalled = i % 200 >= 185;
        if i > 0 && !stalled {
            bytes += 4_000_000;
        }
        w.write_sample(&Sample {
            t_ns: i * 100_000_000,
            engine: ProgressSnapshot {
                bytes_copied: bytes,
                bytes_total: 4_000_000 * ticks,
                files_total: 1,
                scan_done: true,
                ..Default::default()
            },
            page_cache: Some(PageCache {
                dirty: if stalled { 310_000_000 } else { 200_000_000 },
                writeback: 20_000_000,
                bg_thresh: 100_000_000,
                thresh: 300_000_000,
                written: bytes,
            }),
            dest_disk: None,
            source_disk: None,
            psi_io: None,
            cpu: None,
            zfs: None,
            threads: None,
            net_rx: None,
            exact: None,
            evidence: None,
            pipeline: None,
        })
        .expect("sample");
    }
    w.write_engine_event(ticks * 100_000_000, &EngineEvent::FlushStarted)
        .expect("engine");
    w.close().expect("close");

    let run = Replayed::load(&path, ModelConfig::default()).expect("streams");
    let cfg = ModelConfig::default();
    let points = run.model.series().points().len();
    assert!(
        points <= cfg.max_points && points > cfg.max_points / 4,
        "series holds {points} points (cap {})",
        cfg.max_points
    );
    assert!(run.model.events().len() <= cfg.max_events);
    assert_eq!(run.duration_ns, ticks * 100_000_000);
    let rec = Recording::load(&path).expect("loads");
    assert_eq!(rec.samples.len() as u64, ticks + 1);
    assert_eq!(run.model.stats(), rec.model(cfg).stats());
    assert!(run.model.stats().drops > 0, "the stalls are drops");
}

/// A live plain copy: the flush time in its "flushed in" line, in the summary's "flush" and in
/// `--json`'s `flush_s` is one figure (the summary took the engine's own clock, the event the
/// model's: "flushed in 0.1 s" above "flush 0.0 s").
#[test]
fn a_live_copys_flush_time_is_told_once() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.bin");
    std::fs::write(&src, vec![7u8; 24 << 20]).unwrap();
    let bin = util::bin();
    let plain = Command::new(bin)
        .args(["--plain", "--bwlimit", "40M"])
        .arg(&src)
        .arg(dir.path().join("a.bin"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&plain.stdout).to_string()
        + &String::from_utf8_lossy(&plain.stderr);
    let after = |key: &str| {
        text.split(key)
            .nth(1)
            .and_then(|r| r.split(['\n', ',']).next())
            .unwrap_or_else(|| panic!("no {key:?} in {text}"))
            .to_string()
    };
    assert_eq!(after("flushed in "), after(", flush "), "{text}");
    let json = Command::new(bin)
        .args(["--json", "--bwlimit", "40M"])
        .arg(&src)
        .arg(dir.path().join("b.bin"))
        .output()
        .unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let done = lines
        .iter()
        .find(|v| v["type"] == "diagnosis" && v["kind"] == "flush_done")
        .expect("flush_done event");
    let summary = lines.iter().find(|v| v["type"] == "summary").unwrap();
    let secs = done["secs"].as_f64().expect("flush_done secs");
    let flush_s = summary["flush_s"].as_f64().unwrap();
    assert!((secs - flush_s).abs() < 1e-3, "{done} vs {summary}");
}

/// A copy shorter than one sampler tick: the engine stamps its own events, so the model's copy
/// phase ends where the engine's flush began — not at the next sample — and the copy time, the
/// average it divides by and the flush event agree, live and replayed.
#[test]
fn a_copy_shorter_than_a_tick_is_timed_by_the_engines_events() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.bin");
    std::fs::write(&src, util::data(30 << 20, 5)).unwrap();
    let rec = dir.path().join("run.jsonl");
    let out = Command::new(util::bin())
        .args(["--json", "--interval", "1000", "--record"])
        .arg(&rec)
        .arg(&src)
        .arg(dir.path().join("dst.bin"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let summary = lines.iter().find(|v| v["type"] == "summary").unwrap();
    let f = |k: &str| {
        summary[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {summary}"))
    };
    let (copy_s, avg, bytes) = (f("copy_s"), f("to_cache_bps"), f("bytes_copied"));
    // The time every output prints is the one the average divides by (copy_s has 3 decimals).
    assert!(
        (copy_s * avg - bytes).abs() <= avg * 0.0006 + bytes * 0.01,
        "{summary}"
    );
    assert!(f("min_bps") <= avg && avg <= f("peak_bps"), "{summary}");
    // The flush began when the last write returned: at the end of the copy phase.
    let flush = lines
        .iter()
        .find(|v| v["type"] == "diagnosis" && v["kind"] == "flush_started")
        .expect("flush_started event");
    let flush_t = flush["t_ns"].as_f64().unwrap() / 1e9;
    assert!((flush_t - copy_s).abs() < 0.0006, "{flush} vs {summary}");
    // Replayed, the recording tells the same figures.
    let replay = Command::new(util::bin())
        .args(["replay", "--json"])
        .arg(&rec)
        .output()
        .unwrap();
    let again: serde_json::Value = String::from_utf8_lossy(&replay.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary in replay: {replay:?}"));
    for k in ["to_cache_bps", "min_bps", "peak_bps", "durable_bps"] {
        assert_eq!(again[k], summary[k], "{k}: {again} vs {summary}");
    }
}
