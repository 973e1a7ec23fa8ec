//! PNG and SVG exports: the PNG decodes at the requested size and its chart is really
//! drawn (pixel checks against the SVG's own geometry); the SVG is well-formed XML with
//! the series, the overlay and the markers.

use crate::export_support;

use copyscope::report::export::{ChartData, MarkerKind, render_png, render_svg};

use export_support::{DROPS, FAST_BPS, SLOW_BPS, built_recording, zfs_lab};

struct Image {
    w: u32,
    h: u32,
    rgba: Vec<u8>,
}

impl Image {
    fn decode(bytes: &[u8]) -> Image {
        let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
        dec.set_transformations(png::Transformations::EXPAND);
        let mut reader = dec.read_info().expect("png header");
        let mut buf = vec![0; reader.output_buffer_size().expect("size")];
        let info = reader.next_frame(&mut buf).expect("png frame");
        assert_eq!(info.color_type, png::ColorType::Rgba);
        buf.truncate(info.buffer_size());
        Image {
            w: info.width,
            h: info.height,
            rgba: buf,
        }
    }
    fn px(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.w + x) * 4) as usize;
        [self.rgba[i], self.rgba[i + 1], self.rgba[i + 2]]
    }
}

fn hex(c: &str) -> [u8; 3] {
    let v = u32::from_str_radix(c.trim_start_matches('#'), 16).expect("hex colour");
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

fn close(a: [u8; 3], b: [u8; 3], tol: i32) -> bool {
    (0..3).all(|i| (a[i] as i32 - b[i] as i32).abs() <= tol)
}

/// Geometry the SVG declares for its plot and lanes.
struct Geometry {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
    ymax: f64,
    duration: f64,
    lanes: (f64, f64, f64, f64),
}

fn geometry(svg: &str) -> Geometry {
    let doc = roxmltree::Document::parse(svg).expect("svg is XML");
    let node = |id: &str| {
        doc.descendants()
            .find(|n| n.attribute("id") == Some(id))
            .unwrap_or_else(|| panic!("no #{id}"))
    };
    let f = |n: roxmltree::Node, a: &str| -> f64 {
        n.attribute(a).expect("attribute").parse().expect("number")
    };
    let plot = node("plot-area");
    let lanes = node("lanes-area");
    Geometry {
        x0: f(plot, "x"),
        y0: f(plot, "y"),
        w: f(plot, "width"),
        h: f(plot, "height"),
        ymax: f(plot, "data-ymax-bps"),
        duration: f(plot, "data-duration-s"),
        lanes: (
            f(lanes, "x"),
            f(lanes, "y"),
            f(lanes, "width"),
            f(lanes, "height"),
        ),
    }
}

/// Height in pixels of the filled area (fill colour or its outline) in column x.
fn fill_height(img: &Image, g: &Geometry, x: u32) -> u32 {
    let fill = hex(copyscope::report::export::svg::FILL);
    let line = hex("#1d4ed8");
    (g.y0 as u32..(g.y0 + g.h) as u32)
        .filter(|&y| {
            let p = img.px(x, y);
            close(p, fill, 24) || close(p, line, 60)
        })
        .count() as u32
}

#[test]
fn png_has_the_requested_size_and_a_drawn_chart() {
    let data = ChartData::from_recording(&built_recording(true));
    let (w, h) = (1600, 900);
    let svg = render_svg(&data, w, h);
    let g = geometry(&svg);
    let img = Image::decode(&render_png(&data, w, h).expect("png"));
    assert_eq!((img.w, img.h), (w, h));

    let x_at = |t: f64| (g.x0 + t / g.duration * g.w).round() as u32;
    // Fill height is proportional to speed on both plateaus (110 and 80 MB/s).
    let fast = fill_height(&img, &g, x_at(6.3));
    let slow = fill_height(&img, &g, x_at(41.3));
    let expect_fast = FAST_BPS / g.ymax * g.h;
    let expect_slow = SLOW_BPS / g.ymax * g.h;
    assert!(
        (fast as f64 - expect_fast).abs() < 0.05 * expect_fast,
        "fast column {fast} px, expected {expect_fast:.0}"
    );
    assert!(
        (slow as f64 - expect_slow).abs() < 0.05 * expect_slow,
        "slow column {slow} px, expected {expect_slow:.0}"
    );
    // Inside a drop the fill nearly vanishes.
    let (a, b, _) = DROPS[0];
    let dip = fill_height(&img, &g, x_at((a + b) / 2.0));
    assert!(dip < fast / 10, "drop column {dip} px vs {fast}");

    // Above the peak the plot is background: white or light grey grid lines, nothing else.
    let top_fill = (g.y0 + g.h - expect_fast * 1.03 - 6.0) as u32;
    let mut neutral = 0;
    let mut total = 0;
    for x in [x_at(3.3), x_at(6.3), x_at(20.3)] {
        for y in g.y0 as u32 + 20..top_fill {
            let p = img.px(x, y);
            total += 1;
            let spread = p.iter().max().expect("rgb") - p.iter().min().expect("rgb");
            if p[0] > 215 && spread < 30 {
                neutral += 1;
            }
        }
    }
    assert!(total > 100);
    assert!(
        neutral as f64 / total as f64 > 0.97,
        "{neutral}/{total} background"
    );

    // The marker lanes hold drop markers (red) at each drop and txg markers (teal).
    let (lx, ly, lw, lh) = g.lanes;
    let red = hex(MarkerKind::Drop.colour());
    let count = |colour: [u8; 3], x0: u32, x1: u32| {
        (x0..x1)
            .flat_map(|x| (ly as u32..(ly + lh) as u32).map(move |y| (x, y)))
            .filter(|&(x, y)| close(img.px(x, y), colour, 40))
            .count()
    };
    // The model's drops (it reads the 110 → 80 MB/s step as one long drop from 30.5 s).
    let drops: Vec<f64> = data.drops().map(|(e, _)| e.t_ns as f64 / 1e9).collect();
    assert!(drops.len() >= 2, "drops: {drops:?}");
    for a in drops {
        let x = x_at(a);
        assert!(count(red, x - 8, x + 8) > 20, "no drop marker at {a} s");
    }
    assert!(count(red, x_at(3.0), x_at(9.0)) == 0, "stray drop marker");
    let teal = hex(MarkerKind::Txg.colour());
    assert!(
        count(teal, lx as u32, (lx + lw) as u32) > 100,
        "txg lane empty"
    );
}

#[test]
fn png_honours_other_sizes() {
    let data = ChartData::from_recording(&built_recording(true));
    for (w, h) in [(800, 450), (1920, 1080), (1200, 1200)] {
        let img = Image::decode(&render_png(&data, w, h).expect("png"));
        assert_eq!((img.w, img.h), (w, h));
        let g = geometry(&render_svg(&data, w, h));
        // Some of the plot is filled.
        let filled = (0..40)
            .map(|i| (g.x0 + g.w * (i as f64 + 0.5) / 40.0) as u32)
            .map(|x| fill_height(&img, &g, x))
            .filter(|&n| n > 2)
            .count();
        assert!(filled >= 34, "{w}x{h}: only {filled}/40 columns filled");
    }
    // The real ZFS run is mostly stalls: about a quarter of its columns carry data.
    let zfs = ChartData::from_recording(&zfs_lab());
    let img = Image::decode(&render_png(&zfs, 1600, 900).expect("png"));
    let g = geometry(&render_svg(&zfs, 1600, 900));
    let filled = (0..200)
        .map(|i| (g.x0 + g.w * (i as f64 + 0.5) / 200.0) as u32)
        .filter(|&x| fill_height(&img, &g, x) > 2)
        .count();
    assert!((30..=90).contains(&filled), "{filled}/200 columns filled");
}

#[test]
fn svg_is_xml_with_series_overlay_markers_and_legend() {
    let data = ChartData::from_recording(&built_recording(true));
    let svg = render_svg(&data, 1600, 900);
    let doc = roxmltree::Document::parse(&svg).expect("svg is XML");
    let by_id = |id: &str| doc.descendants().find(|n| n.attribute("id") == Some(id));
    let series = by_id("copy-series").expect("copy series");
    assert_eq!(series.tag_name().name(), "path");
    assert!(series.attribute("d").expect("d").matches('L').count() >= 500);
    let overlay = by_id("device-series").expect("device overlay");
    assert!(
        overlay
            .attribute("points")
            .expect("points")
            .split(' ')
            .count()
            >= 500
    );
    assert!(by_id("average").is_some());
    let markers = by_id("markers").expect("markers");
    let class_count = |c: &str| {
        markers
            .descendants()
            .filter(|n| {
                n.attribute("class")
                    .is_some_and(|v| v.split(' ').any(|x| x == c))
            })
            .count()
    };
    let drops = data.drops().count();
    assert!(drops >= 2, "the model's drops: {drops}");
    assert_eq!(class_count("marker-drop"), drops);
    assert_eq!(class_count("txg-sync"), 12);
    assert_eq!(class_count("marker-file-error"), 1);
    let spans = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("drop-span"))
        .count();
    assert_eq!(spans, drops);
    let texts: String = doc
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("|");
    for needle in [
        "/home/ann/iso → /tank/backup",
        "zfs tank/backup",
        "2026-11-30 04:20 UTC",
        "copy speed",
        "device writes (diskstats)",
        "txg sync",
        "Time lost to drops",
        "MB/s",
    ] {
        assert!(texts.contains(needle), "missing text {needle:?}");
    }
}

#[test]
fn svg_escapes_hostile_names() {
    let mut rec = built_recording(true);
    rec.header.sources = vec!["<script>&\"x'".to_string()];
    let svg = render_svg(&ChartData::from_recording(&rec), 1600, 900);
    let doc = roxmltree::Document::parse(&svg).expect("still XML");
    let title = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("title"))
        .expect("title");
    let text: String = title.descendants().filter_map(|n| n.text()).collect();
    assert!(text.contains("<script>&\"x'"), "{text}");
}

#[test]
fn empty_recording_still_renders() {
    let mut rec = built_recording(false);
    rec.samples.clear();
    rec.events.clear();
    rec.engine_events.clear();
    let data = ChartData::from_recording(&rec);
    let svg = render_svg(&data, 1600, 900);
    assert!(svg.contains("no samples recorded"));
    let img = Image::decode(&render_png(&data, 400, 300).expect("png"));
    assert_eq!((img.w, img.h), (400, 300));
}

#[test]
#[ignore = "writes preview pictures to $CARGO_TARGET_TMPDIR for a person to look at"]
fn write_previews() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let data = ChartData::from_recording(&built_recording(true));
    for (w, h) in [(1600, 900), (800, 450)] {
        let p = dir.join(format!("built-{w}x{h}.png"));
        std::fs::write(&p, render_png(&data, w, h).expect("png")).expect("write");
        println!("{}", p.display());
    }
}

#[test]
fn a_sync_still_running_at_the_end_gets_its_own_tick() {
    use copyscope::model::{Event, EventKind};
    let mut data = ChartData::from_recording(&built_recording(true));
    data.events.push(Event {
        t_ns: 59_000_000_000,
        kind: EventKind::TxgSyncStarted { txg: 999 },
    });
    let svg = render_svg(&data, 1600, 900);
    let doc = roxmltree::Document::parse(&svg).expect("xml");
    let ticks = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("marker marker-txg-sync"))
        .count();
    // 12 commits plus the open sync; the 12 committed syncs' starts are drawn as windows.
    assert_eq!(ticks, 13);
}

/// Every slice of the writer's time of at least 0.5 % is named in the picture: inside its
/// segment (whole, or its share alone), or under the bar's end when too narrow even for that
/// (the real slowdev copy: journal and flushing under 2 % each).
#[test]
fn every_writers_time_slice_is_named() {
    let rec = copyscope::report::recording::Recording::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/slowdev-40mbps-ext4.jsonl"
    )))
    .unwrap();
    let data = ChartData::from_recording(&rec);
    let svg = render_svg(&data, 1600, 900);
    let b = data.budget.as_ref().unwrap();
    let texts: String = svg
        .lines()
        .filter(|l| l.contains("<text") && !l.contains("budget-slice"))
        .collect();
    for (slice, share) in b.shares() {
        if share < 0.005 {
            continue;
        }
        let pct = format!("{:.0} %", share * 100.0);
        let named = texts.contains(&format!(">{} {pct}<", b.label(slice)))
            || texts.contains(&format!("{} {pct}", b.label(slice)));
        assert!(
            named || texts.contains(&format!(">{pct}<")),
            "{slice:?} {pct}"
        );
    }
    assert!(svg.contains("class=\"budget-rest\""), "narrow slices named");
}
