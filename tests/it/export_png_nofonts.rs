//! The PNG renders with no font available on the system: the fonts it needs are embedded.
//! The outer test re-runs this test binary with every font path (fontconfig, XDG data
//! dirs, HOME) pointed at an empty directory and runs the inner test there.

use crate::export_support;

use copyscope::report::export::{ChartData, render_png, render_svg};

#[test]
fn png_renders_text_with_no_system_fonts() {
    let empty = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "export_png_nofonts::inner_render_without_fonts",
            "--nocapture",
        ])
        .env_clear()
        .env("FONTCONFIG_PATH", empty.path())
        .env("FONTCONFIG_FILE", empty.path().join("fonts.conf"))
        .env("XDG_DATA_DIRS", empty.path())
        .env("XDG_DATA_HOME", empty.path())
        .env("HOME", empty.path())
        .env("COPYSCOPE_NOFONT_INNER", "1")
        .output()
        .expect("run inner test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inner test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "inner test did not run:\n{stdout}"
    );
}

#[test]
#[ignore = "run by png_renders_text_with_no_system_fonts in a font-less environment"]
fn inner_render_without_fonts() {
    assert_eq!(
        std::env::var("COPYSCOPE_NOFONT_INNER").as_deref(),
        Ok("1"),
        "only meaningful inside the outer test"
    );
    let data = ChartData::from_recording(&export_support::built_recording(true));
    let svg = render_svg(&data, 1600, 900);
    let doc = roxmltree::Document::parse(&svg).expect("xml");
    let area = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("title-area"))
        .expect("title area");
    let f = |a: &str| -> u32 { area.attribute(a).expect(a).parse::<f64>().expect("num") as u32 };
    let (x0, y0, w, h) = (f("x"), f("y"), f("width"), f("height"));

    let png = render_png(&data, 1600, 900).expect("png without system fonts");
    let img = tiny_decode(&png);
    // The title is dark/blue text on white: count inked pixels in its box.
    let mut ink = 0;
    for y in y0..y0 + h {
        for x in x0..x0 + w {
            let i = ((y * 1600 + x) * 4) as usize;
            if img[i] < 120 && img[i + 1] < 160 {
                ink += 1;
            }
        }
    }
    assert!(
        ink > 2000,
        "title has {ink} inked pixels: text was not drawn"
    );
}

fn tiny_decode(bytes: &[u8]) -> Vec<u8> {
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
    dec.set_transformations(png::Transformations::EXPAND);
    let mut reader = dec.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("frame");
    assert_eq!((info.width, info.height), (1600, 900));
    buf
}
