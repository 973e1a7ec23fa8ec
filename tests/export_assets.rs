//! Regenerates the example pictures in assets/ from the real ZFS recording fixture
//! (run by scripts/make-assets.sh; ignored in the normal test run because it writes
//! into the source tree).

use std::path::Path;

use copyscope::report::export::{ChartData, DEFAULT_SIZE, write_screenshot_set};
use copyscope::report::recording::Recording;

#[test]
#[ignore = "writes assets/; run through scripts/make-assets.sh"]
fn regenerate_assets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rec = Recording::load(&root.join("tests/fixtures/recordings/zfs-40mbps-zero.jsonl"))
        .expect("fixture loads");
    let data = ChartData::from_recording(&rec);
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
