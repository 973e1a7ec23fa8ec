//! Screens for the terminals users really have: a non-UTF-8 locale (LANG=C) decides ASCII
//! glyphs, `--ascii` maps every glyph and every file name to ASCII without a `?` (the help
//! key), and small terminals (40×12, 60×15) keep progress and ETA first. Built from the real
//! ZFS lab recording, drawn with ratatui's TestBackend, compared with insta snapshots.

use std::path::Path;

use copyscope::frontend::caps;
use copyscope::frontend::replay::app_at;
use copyscope::frontend::state::App;
use copyscope::model::ModelConfig;
use copyscope::present::units::Units;
use copyscope::report::recording::Recording;
use copyscope::ui::theme::Theme;
use copyscope::ui::view::{FileProgress, RunState, UiOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn app(ascii: bool, t_s: f64) -> App {
    let rec = Recording::load(Path::new("tests/fixtures/recordings/zfs-40mbps-zero.jsonl"))
        .expect("fixture loads");
    let opts = UiOptions {
        theme: Theme::new(true, ascii),
        units: Units::Decimal,
        compact: false,
    };
    let mut a = app_at(&rec, ModelConfig::default(), opts, (t_s * 1e9) as u64);
    a.state = RunState::Copying;
    a.current = Some(FileProgress {
        path: "Fotos/Müller – Straße €5 ½ 写真.jpg".into(),
        size: 3_145_728_000,
        done: a.progress.bytes_copied,
    });
    a
}

fn screen(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| copyscope::ui::render(f, app)).unwrap();
    term.backend().to_string()
}

/// `?` is only allowed as the help key in the footer ("? help").
fn stray_question_marks(s: &str) -> Vec<String> {
    s.lines()
        .filter(|l| l.replace("? help", "").replace("? h ", "").contains('?'))
        .map(str::to_string)
        .collect()
}

#[test]
fn lang_c_draws_ascii_without_question_marks() {
    let lang_c = |k: &str| (k == "LANG").then(|| "C".to_string());
    let ascii = !caps::utf8_locale(&lang_c);
    assert!(ascii, "LANG=C is not a UTF-8 locale");
    let a = app(ascii, 30.0);
    let s = screen(&a, 80, 24);
    assert!(s.is_ascii(), "LANG=C draws ASCII only:\n{s}");
    assert!(stray_question_marks(&s).is_empty(), "{s}");
    insta::assert_snapshot!("lang_c_80x24", s);
}

#[test]
fn ascii_maps_every_glyph_and_name_without_question_marks() {
    let mut a = app(true, 30.0);
    for (w, h) in [(120, 40), (80, 24), (60, 15), (40, 12)] {
        for help in [false, true] {
            a.view.help = help;
            let s = screen(&a, w, h);
            assert!(s.is_ascii(), "--ascii at {w}x{h}:\n{s}");
            let stray = stray_question_marks(&s);
            assert!(
                stray.is_empty(),
                "--ascii at {w}x{h} drew '?' for a glyph: {stray:?}\n{s}"
            );
        }
    }
    a.view.help = false;
    let s = screen(&a, 120, 40);
    assert!(
        s.contains("Muller"),
        "names are transliterated, not blanked:\n{s}"
    );
    insta::assert_snapshot!("ascii_names_120x40", s);
}

#[test]
fn small_terminals() {
    let a = app(false, 30.0);
    insta::assert_snapshot!("small_40x12", screen(&a, 40, 12));
    insta::assert_snapshot!("small_60x15", screen(&a, 60, 15));
}
