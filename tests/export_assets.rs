//! Regenerates the example pictures in assets/ from the real ZFS recording fixture
//! (run by scripts/make-assets.sh; ignored in the normal test run because it writes
//! into the source tree).

use std::path::Path;

use std::time::Instant;

use copyscope::report::export::{
    ChartData, DEFAULT_SIZE, render_markdown, render_png, render_svg, render_text,
    write_screenshot_set,
};
use copyscope::report::recording::Recording;

#[test]
#[ignore = "writes assets/; run through scripts/make-assets.sh"]
fn regenerate_assets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rec = Recording::load(&root.join("tests/fixtures/recordings/zfs-40mbps-zero.jsonl"))
        .expect("fixture loads");
    let data = ChartData::from_recording(&rec);
    // Timings for the record (the TUI's `s` key runs the same code).
    let (w, h) = DEFAULT_SIZE;
    let t = Instant::now();
    let svg = render_svg(&data, w, h);
    let t_svg = t.elapsed();
    let t = Instant::now();
    let png = render_png(&data, w, h).expect("png");
    let t_png = t.elapsed();
    let t = Instant::now();
    let _ = (render_text(&data, 100, false), render_markdown(&data));
    println!(
        "svg {} B in {t_svg:?}, png {} B in {t_png:?} (svg + raster), text + markdown in {:?}",
        svg.len(),
        png.len(),
        t.elapsed()
    );
    let written = write_screenshot_set(
        &data,
        &root.join("assets"),
        "example-zfs-40mbps",
        DEFAULT_SIZE,
        false,
    )
    .expect("export works");
    for p in written {
        println!("wrote {}", p.display());
    }
}
