//! `watch --net` in every output, on a real recording (tests/fixtures/recordings/
//! watch-net-lo.jsonl, made by scripts/record-watch-net.sh: a python receiver on loopback
//! followed by `--pid`, a bash sender streaming over /dev/tcp with a 2 s pause, `--net lo`):
//! the receive rate is a line of its own with a legend entry in the SVG and the PNG, a row in
//! the Markdown and in `compare`, a line in the text export, and the JSON names the interface.
//! (tests/it/one_voice.rs checks that every output prints the model's same rx figures.)

use std::path::{Path, PathBuf};

use copyscope::frontend::replay::run_json;
use copyscope::model::ModelConfig;
use copyscope::report::export::compare::{
    CompareLook, Run, render_compare_markdown, render_compare_svg,
};
use copyscope::report::export::{ChartData, render_png, render_svg, render_text};
use copyscope::report::recording::Replayed;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/watch-net-lo.jsonl")
}

fn data() -> ChartData {
    let run = Replayed::load(&fixture(), ModelConfig::default()).expect("fixture loads");
    ChartData::from_replayed(&run)
}

/// The same run as if it had been watched without `--net`.
fn without_net(mut d: ChartData) -> ChartData {
    for p in &mut d.points {
        p.net_bps = None;
    }
    d.stats.net = None;
    d.net_iface = None;
    d
}

#[test]
fn the_receive_rate_carried_the_intake() {
    let d = data();
    let n = d.stats.net.expect("the fixture sampled lo");
    assert_eq!(d.net_iface.as_deref(), Some("lo"));
    // The receiver wrote what it received: lo's rate (payload plus TCP/IP headers) matches the
    // intake within a few percent, and the 2 s pause is the network's drop.
    let ratio = n.avg_bps / d.stats.avg_bps;
    assert!(
        (0.95..1.1).contains(&ratio),
        "rx {n:?} vs intake {}",
        d.stats.avg_bps
    );
    assert!(n.peak_bps > 30e6 && n.min_bps < 1e6, "{n:?}");
    assert_eq!(d.stats.lost_secs_by_cause[0].0, "network");
}

#[test]
fn svg_draws_the_receive_rate_with_its_legend_entry() {
    let svg = render_svg(&data(), 1600, 900);
    let doc = roxmltree::Document::parse(&svg).expect("svg is XML");
    let line = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("net-series"))
        .expect("an rx line");
    assert_eq!(line.attribute("stroke"), Some("#c026d3"));
    let points = line.attribute("points").unwrap_or("").split(' ').count();
    assert!(points > 50, "{points} points");
    let legend = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("legend"))
        .expect("legend");
    let texts: Vec<&str> = legend.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains(&"network rx (lo)"), "{texts:?}");
    assert!(
        legend
            .descendants()
            .any(|n| n.attribute("id") == Some("net-legend"))
    );
    // Without net samples: no line, no legend entry.
    let plain = render_svg(&without_net(data()), 1600, 900);
    assert!(!plain.contains("net-series") && !plain.contains("network rx"));
}

/// Pixels of the rx colour (#c026d3) inside the plot of a decoded PNG.
fn rx_pixels(png_bytes: &[u8]) -> usize {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND);
    let mut reader = dec.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("png frame");
    buf.truncate(info.buffer_size());
    buf.chunks(4)
        .filter(|p| {
            let d = |a: u8, b: u8| (a as i32 - b as i32).abs() <= 40;
            d(p[0], 0xc0) && d(p[1], 0x26) && d(p[2], 0xd3)
        })
        .count()
}

#[test]
fn png_shows_the_receive_rate_line() {
    let with = rx_pixels(&render_png(&data(), 800, 450).expect("png"));
    let without = rx_pixels(&render_png(&without_net(data()), 800, 450).expect("png"));
    assert_eq!(without, 0, "nothing else is drawn in the rx colour");
    // The line over the 7 s of sending (plus its legend swatch).
    assert!(with > 300, "{with} rx-coloured pixels");
}

#[test]
fn text_export_snapshot() {
    insta::assert_snapshot!("watch_net_lo_text_100", render_text(&data(), 100, false));
}

#[test]
fn json_summary_names_the_interface() {
    let out = run_json(&fixture(), ModelConfig::default()).expect("replay --json");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(v["net"]["iface"], "lo", "{v}");
    assert!(v["net"]["avg_bps"].as_f64().unwrap() > 1e6, "{v}");
}

#[test]
fn compare_shows_each_runs_receive_rate() {
    let runs = vec![
        Run {
            label: "with --net".into(),
            data: data(),
        },
        Run {
            label: "without".into(),
            data: without_net(data()),
        },
    ];
    let md = render_compare_markdown(&runs, None);
    let row = md
        .lines()
        .find(|l| l.starts_with("| network rx MB/s avg (min / peak) |"))
        .unwrap_or_else(|| panic!("no rx row:\n{md}"));
    let n = runs[0].data.stats.net.unwrap();
    let fmt = copyscope::present::format::fmt_mbps;
    assert!(
        row.contains(&format!(
            "| {} ({} / {}) |",
            fmt(n.avg_bps),
            fmt(n.min_bps),
            fmt(n.peak_bps)
        )),
        "{row}"
    );
    assert!(row.ends_with("| n/a (no --net) |"), "{row}");
    // Stacked panels: the first has its rx line, the second none.
    let svg = render_compare_svg(&runs, &CompareLook::default(), 1600, 1200);
    assert_eq!(svg.matches("id=\"net-series\"").count(), 1);
    let overlay = CompareLook {
        overlay: true,
        ..Default::default()
    };
    let svg = render_compare_svg(&runs, &overlay, 1600, 900);
    assert_eq!(svg.matches("class=\"run-net-line\"").count(), 1);
    assert!(
        svg.contains("network rx (lo) avg"),
        "the run's label names its rx"
    );
}
