//! The exported SVG carries its glyphs: rendered with resvg and no font at all it gives the
//! same pixels as with the bundled DejaVu faces, and it agrees with the PNG export — while
//! the drawing's text is still in the file for search.

use std::path::Path;
use std::sync::Arc;

use copyscope::model::ModelConfig;
use copyscope::report::export::{
    ChartData, DEFAULT_SIZE, ExportTargets, render_svg, write_targets,
};
use copyscope::report::recording::Replayed;
use resvg::{tiny_skia, usvg};

/// A fontdb with nothing in it (a server with no fonts installed), or the bundled faces.
fn fontdb(bundled: bool) -> Arc<usvg::fontdb::Database> {
    let mut db = usvg::fontdb::Database::new();
    if bundled {
        db.load_font_data(dejavu::sans::regular().to_vec());
        db.load_font_data(dejavu::sans::bold().to_vec());
        db.set_sans_serif_family("DejaVu Sans");
    }
    Arc::new(db)
}

/// RGBA pixels of `svg` rendered at its own size with only the fonts of `db`.
fn render(svg: &str, db: Arc<usvg::fontdb::Database>) -> Vec<u8> {
    let opt = usvg::Options {
        fontdb: db,
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).expect("the SVG parses");
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).expect("pixmap");
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.data().to_vec()
}

fn decode_png(bytes: &[u8]) -> Vec<u8> {
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
    dec.set_transformations(png::Transformations::EXPAND);
    let mut reader = dec.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("png frame");
    buf.truncate(info.buffer_size());
    buf
}

/// Pixels whose colour differs by more than `tol` in some channel.
fn differing(a: &[u8], b: &[u8], tol: u8) -> usize {
    assert_eq!(a.len(), b.len(), "same size");
    a.chunks(4)
        .zip(b.chunks(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(x, y)| x.abs_diff(*y) > tol))
        .count()
}

fn chart() -> ChartData {
    let rec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings/zfs-40mbps-zero.jsonl");
    let run = Replayed::load(&rec, ModelConfig::default()).expect("recording");
    ChartData::from_replayed(&run)
}

#[test]
fn the_exported_svg_renders_the_same_without_fonts_and_matches_the_png() {
    let data = chart();
    let dir = tempfile::tempdir().unwrap();
    let targets = ExportTargets {
        png: Some(dir.path().join("c.png")),
        svg: Some(dir.path().join("c.svg")),
        text: None,
        markdown: None,
    };
    write_targets(&data, &targets, DEFAULT_SIZE, false).expect("export");
    let svg = std::fs::read_to_string(dir.path().join("c.svg")).unwrap();
    let png = decode_png(&std::fs::read(dir.path().join("c.png")).unwrap());
    eprintln!("exported SVG: {} bytes", svg.len());

    // Every text is drawn by its outline; the text stays, transparent, for search.
    let texts = svg.matches("<text").count();
    assert!(texts > 20, "the chart has its labels ({texts})");
    assert_eq!(svg.matches("<text opacity=\"0\"").count(), texts);
    assert!(
        svg.matches("class=\"glyphs\"").count() >= texts - 2,
        "outlines for (nearly) every text"
    );
    assert!(
        svg.contains("made with copyscope"),
        "the words are still searchable"
    );
    assert!(
        svg.len() < 1_500_000,
        "a reasonable file: {} bytes",
        svg.len()
    );

    let without = render(&svg, fontdb(false));
    let with = render(&svg, fontdb(true));
    assert_eq!(differing(&without, &with, 0), 0, "no font changes nothing");
    let px = (DEFAULT_SIZE.0 * DEFAULT_SIZE.1) as usize;
    let off = differing(&without, &png, 24);
    eprintln!("SVG (no fonts) vs PNG: {off} of {px} pixels differ by more than 24");
    assert!(
        off * 2000 < px,
        "the SVG and the PNG agree: {off} of {px} pixels differ"
    );

    // The check can fail: the drawing before outlining loses its text without fonts.
    let plain = render_svg(&data, DEFAULT_SIZE.0, DEFAULT_SIZE.1);
    let bare = differing(&render(&plain, fontdb(false)), &png, 24);
    eprintln!(
        "the drawing before outlining, no fonts, vs PNG: {bare} pixels differ; its size {} bytes",
        plain.len()
    );
    assert!(
        bare > 20 * off.max(100),
        "text drawn by fonts only: {bare} pixels differ"
    );
}
