//! Text and Markdown exports: insta snapshots from deterministic recordings (the built
//! 60 s copy and the real ZFS lab run), plus width and character-set rules.

use crate::export_support;

use copyscope::report::export::{ChartData, render_markdown, render_text};

use export_support::{built_recording, zfs_lab};

fn check_shape(text: &str, width: usize, ascii: bool) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width,
            "line wider than {width}: {line:?}"
        );
    }
    if ascii {
        assert!(text.is_ascii(), "non-ASCII in --ascii output");
    }
}

#[test]
fn text_chart_unicode() {
    let data = ChartData::from_recording(&built_recording(true));
    let text = render_text(&data, 100, false);
    check_shape(&text, 100, false);
    insta::assert_snapshot!("built_unicode_100", text);
}

#[test]
fn text_chart_ascii_narrow() {
    let data = ChartData::from_recording(&built_recording(true));
    let text = render_text(&data, 72, true);
    check_shape(&text, 72, true);
    insta::assert_snapshot!("built_ascii_72", text);
}

#[test]
fn text_chart_real_zfs_run() {
    let data = ChartData::from_recording(&zfs_lab());
    let text = render_text(&data, 100, false);
    check_shape(&text, 100, false);
    insta::assert_snapshot!("zfs_lab_unicode_100", text);
}

#[test]
fn text_width_is_clamped() {
    let data = ChartData::from_recording(&zfs_lab());
    check_shape(&render_text(&data, 500, true), 100, true);
    check_shape(&render_text(&data, 10, false), 40, false);
}

#[test]
fn markdown_built() {
    let data = ChartData::from_recording(&built_recording(true));
    insta::assert_snapshot!("built_markdown", render_markdown(&data));
}

#[test]
fn markdown_real_zfs_run() {
    let data = ChartData::from_recording(&zfs_lab());
    insta::assert_snapshot!("zfs_lab_markdown", render_markdown(&data));
}

/// `--title` names the Markdown's heading, as it names the pictures'.
#[test]
fn markdown_heading_takes_the_users_title() {
    let data = ChartData::from_recording(&zfs_lab());
    let md = copyscope::report::export::markdown::render_markdown_titled(
        &data,
        Some("NAS upload, before the fix"),
    );
    assert_eq!(
        md.lines().next(),
        Some("### copyscope: NAS upload, before the fix")
    );
    assert_eq!(
        render_markdown(&data).lines().next(),
        Some(format!("### copyscope: {} → {}", data.title.source, data.title.dest).as_str())
    );
}

#[test]
fn markdown_escapes_table_cells() {
    let mut rec = built_recording(true);
    rec.header.destination = "/mnt/a|b".to_string();
    let md = render_markdown(&ChartData::from_recording(&rec));
    assert!(md.contains("/mnt/a\\|b"));
}
