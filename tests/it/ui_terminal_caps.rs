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
        then: None,
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
    term.draw(|f| copyscope::ui::render(f, &app.view()))
        .unwrap();
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
    insta::assert_snapshot!("size_80x24", screen(&a, 80, 24));
    insta::assert_snapshot!("size_200x60", screen(&a, 200, 60));
    insta::assert_snapshot!("ascii_40x12", screen(&app(true, 30.0), 40, 12));
}

/// What a small screen keeps: the percentage and the ETA on the progress row, the chart
/// (in the bar), the events before the kernel panel; and every line it cuts ends with the
/// ellipsis ("..." in ASCII).
#[test]
fn small_terminals_keep_progress_eta_and_mark_cuts() {
    for ascii in [false, true] {
        let a = app(ascii, 30.0);
        let e = if ascii { "..." } else { "…" };
        for (w, h) in [(40, 12), (60, 15), (80, 24)] {
            let s = screen(&a, w, h);
            assert!(
                s.contains("41 %") && s.contains("on disk 00:50"),
                "{w}x{h}:\n{s}"
            );
            assert!(
                s.contains("events"),
                "events before the kernel panel at {w}x{h}:\n{s}"
            );
            // The speeds row is cut at 40 and 60 columns: it says so.
            let speeds = s.lines().nth(1).unwrap();
            if w < 80 {
                assert!(speeds.contains(e), "{w}x{h}: {speeds}");
            }
            // Every row that reaches the right border (text in the last column) was cut,
            // and shows it.
            for l in s.lines().skip(1) {
                let l = l.split('"').nth(1).unwrap_or_default();
                let cells: Vec<char> = l.chars().collect();
                if cells.len() < 3 {
                    continue;
                }
                let before_border = cells[cells.len() - 2];
                let last_text = cells[cells.len() - 3];
                if before_border != ' ' && !"─-+┤├│|".contains(before_border) {
                    assert!(
                        l.contains(e) || "░.█#▇▆▅▄▃▂▁%:v^*".contains(last_text),
                        "{w}x{h}: a cut line without an ellipsis: {l}"
                    );
                }
            }
        }
        let s = screen(&a, 40, 12);
        assert!(
            !s.contains("kernel"),
            "at 40x12 the kernel panel gives way:\n{s}"
        );
    }
}

/// The screenshot message ("wrote X.png, X.svg, …") is shown in full however narrow the
/// screen: in the bottom border when it fits, else wrapped over the events.
#[test]
fn the_screenshot_message_is_shown_in_full() {
    let mut a = app(false, 30.0);
    let msg = "wrote '/home/ann/forum posts/copyscope-20261130-194207.png', .svg, .txt, .md, \
               .jsonl";
    a.status = Some((msg.to_string(), a.now_ns));
    for (w, h) in [(40, 12), (60, 15), (80, 24), (120, 40), (200, 60)] {
        let s = screen(&a, w, h);
        let text: String = s
            .lines()
            .map(|l| {
                l.trim_matches('"')
                    .trim_matches(|c| c == '│' || c == '└' || c == '┘' || c == '─')
            })
            .collect::<Vec<_>>()
            .join(" ");
        let squashed: String = text.split_whitespace().collect::<Vec<_>>().join("");
        for part in msg.split_whitespace() {
            assert!(squashed.contains(part), "{w}x{h}: {part} missing:\n{s}");
        }
    }
    insta::assert_snapshot!("screenshot_message_80x24", screen(&a, 80, 24));
}

/// The overwrite dialog keeps both sides, the "newer" mark and every answer on a 40x12
/// screen.
#[test]
fn the_overwrite_dialog_fits_a_small_terminal() {
    use copyscope::ui::view::{ConflictView, Dialog, FileSide};
    let mut a = app(false, 30.0);
    a.dialog = Some(Dialog::Conflict(ConflictView {
        destination: "'/tank/backup/photos/2019/IMG_2231.CR2'".into(),
        source: "'/home/ann/photos/2019/IMG_2231.CR2'".into(),
        new: FileSide {
            size: 25_165_824,
            mtime: (1_796_067_727, 0),
            when: "2026-11-30 20:42:07 CET".into(),
        },
        existing: FileSide {
            size: 24_117_248,
            mtime: (1_764_531_727, 0),
            when: "2025-11-30 20:42:07 CET".into(),
        },
    }));
    let s = screen(&a, 40, 12);
    for want in [
        "IMG_2231.CR2",
        "old 24.1 MB 2025-11-30 20:42 CET",
        "new 25.2 MB 2026-11-30 20:42 CET newer",
        "o overwrite",
        "r rename",
        "n skip all",
        "l all older",
        "c cancel",
    ] {
        assert!(s.contains(want), "{want:?} missing at 40x12:\n{s}");
    }
    insta::assert_snapshot!("overwrite_dialog_40x12", s);
}

/// The plain end-of-copy summary in LANG=C (a copy piped to a file, an old terminal over SSH):
/// ASCII only, the time line's legend included.
#[test]
fn lang_c_plain_summary_is_ascii() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src.bin");
    std::fs::write(&src, vec![5u8; 1 << 20]).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_copyscope"))
        .env_remove("LC_ALL")
        .env_remove("LC_CTYPE")
        .env("LANG", "C")
        // 0.5 s of copying, so the summary has a time line.
        .env("COPYSCOPE_TEST_THROTTLE_BPS", "2000000")
        .arg("--plain")
        .arg(&src)
        .arg(t.path().join("dst.bin"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("time: ["), "{text}");
    assert!(out.stdout.is_ascii(), "LANG=C prints ASCII only:\n{text}");
}
