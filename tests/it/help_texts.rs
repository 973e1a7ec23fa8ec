//! Help that reads well (issue 10): every subcommand shows only its own options, each
//! described; the man page has its KEYS, ENVIRONMENT, EXIT STATUS and CHART LEGEND sections,
//! names every environment variable the code reads and no page that does not exist; the `?`
//! screen shows every key, glyph and marker.

use std::path::Path;

use clap::CommandFactory;
use copyscope::cli::Cli;
use copyscope::frontend::replay::app_at;
use copyscope::model::ModelConfig;
use copyscope::present::keys::KEYS;
use copyscope::present::markers::LEGEND;
use copyscope::present::units::Units;
use copyscope::report::recording::Recording;
use copyscope::ui::theme::Theme;
use copyscope::ui::view::UiOptions;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn longs(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

#[test]
fn every_option_of_every_command_is_described() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut all = vec![cmd.clone()];
    all.extend(cmd.get_subcommands().cloned());
    for c in &all {
        assert!(
            c.get_name() == "help" || c.get_about().is_some(),
            "{} has no description",
            c.get_name()
        );
        for a in c.get_arguments().filter(|a| !a.is_hide_set()) {
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(
                !help.trim().is_empty(),
                "{} {:?}: no description",
                c.get_name(),
                a.get_id()
            );
        }
    }
}

#[test]
fn subcommands_show_only_their_own_options() {
    let mut cmd = Cli::command();
    cmd.build();
    let sub = |n: &str| {
        cmd.find_subcommand(n)
            .unwrap_or_else(|| panic!("no subcommand {n}"))
    };
    let export = longs(sub("export"));
    for copy_only in [
        "verify",
        "overwrite",
        "record",
        "interval",
        "plain",
        "json",
        "jobs",
        "bwlimit",
    ] {
        assert!(
            !export.iter().any(|l| l == copy_only),
            "export shows --{copy_only}: {export:?}"
        );
    }
    for own in ["png", "svg", "text", "markdown", "size", "ascii"] {
        assert!(export.iter().any(|l| l == own), "export lacks --{own}");
    }
    let replay = longs(sub("replay"));
    for not_here in ["record", "interval", "verify", "png"] {
        assert!(
            !replay.iter().any(|l| l == not_here),
            "replay shows --{not_here}"
        );
    }
    let whatif = longs(sub("whatif"));
    for own in [
        "set", "pace", "against", "png", "svg", "text", "size", "overlay", "ascii",
    ] {
        assert!(whatif.iter().any(|l| l == own), "whatif lacks --{own}");
    }
    for copy_only in [
        "verify", "record", "interval", "plain", "bwlimit", "markdown",
    ] {
        assert!(
            !whatif.iter().any(|l| l == copy_only),
            "whatif shows --{copy_only}: {whatif:?}"
        );
    }
    for c in ["completions", "man"] {
        assert_eq!(longs(sub(c)), ["help"], "{c} takes no options");
    }
    // The copy's own flags are not offered to the demo, and the display flags follow the
    // subcommand (they are not global).
    let demo = longs(sub("demo"));
    assert!(demo.iter().any(|l| l == "plain") && !demo.iter().any(|l| l == "verify"));
}

#[test]
fn man_page_has_its_sections_and_no_dangling_references() {
    let mut page = Vec::new();
    copyscope::frontend::man::render(&mut page).expect("render");
    let page = String::from_utf8(page).expect("utf-8");
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH OPTIONS",
        ".SH COMMANDS",
        ".SH KEYS",
        ".SH CHART LEGEND",
        ".SH ENVIRONMENT",
        ".SH EXIT STATUS",
    ] {
        assert!(page.contains(section), "man page lacks {section}");
    }
    // No copyscope-demo(1) & co.: those pages do not exist.
    assert!(!page.contains("copyscope\\-"), "dangling page reference");
    let see_also = page.split(".SH SEE ALSO").nth(1).unwrap_or("");
    let refs: Vec<&str> = see_also
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('.'))
        .collect();
    assert_eq!(refs, ["\\fBcp\\fR(1)"]);
    for code in ["0", "1", "2", "130", "141"] {
        assert!(
            page.contains(&format!(".TP\n\\fB{code}\\fR\n")),
            "exit status {code}"
        );
    }
    for k in KEYS {
        assert!(page.contains(&k.what.replace('-', "\\-")), "key {k:?}");
    }
    for kind in LEGEND {
        assert!(
            page.contains(&kind.meaning().replace('-', "\\-")),
            "{kind:?}"
        );
    }
    // Every environment variable the code reads is documented.
    let mut read = Vec::new();
    collect_env_reads(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut read,
    );
    for v in [
        "NO_COLOR",
        "COPYSCOPE_SYS_ROOT",
        "COPYSCOPE_EXACT",
        "LANG",
        "TERMINFO",
        "PATH",
    ] {
        assert!(read.iter().any(|r| r == v), "the scan missed {v}: {read:?}");
    }
    for var in read {
        assert!(
            page.contains(&var.replace('-', "\\-")),
            "man page ENVIRONMENT lacks {var}"
        );
    }
}

/// Names read with env::var / var_os / env_var("…") anywhere in src/, and the values of the
/// `*_ENV` constants.
fn collect_env_reads(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).expect("src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            collect_env_reads(&p, out);
            continue;
        }
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read");
        for (i, _) in text.match_indices('"') {
            let rest = &text[i + 1..];
            let Some(end) = rest.find('"') else { continue };
            let name = &rest[..end];
            let is_var = name.len() > 2
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit());
            let before = &text[..i];
            let read_here = ["var(", "var_os(", "env_var(", "_ENV: &str = ", "var(k) "]
                .iter()
                .any(|m| before.ends_with(m));
            let in_list = before.ends_with('[') || before.ends_with(", ");
            let after = rest.split('\n').take(3).collect::<Vec<_>>().join("\n");
            let near_env = before
                .rsplit('\n')
                .take(3)
                .any(|l| l.contains("env") || l.contains("var("))
                || after.contains("var(");
            if is_var && (read_here || (in_list && near_env)) && !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        }
    }
}

fn help_screen(w: u16, h: u16, replay: bool, ascii: bool) -> String {
    let rec = Recording::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recordings/zfs-40mbps-zero.jsonl"
    )))
    .expect("fixture");
    let opts = UiOptions {
        theme: Theme::new(true, ascii),
        units: Units::Decimal,
        compact: false,
        then: None,
    };
    let mut app = app_at(&rec, ModelConfig::default(), opts, 20_000_000_000);
    app.view.help = true;
    if replay {
        app.replay = Some(copyscope::ui::view::ReplayStatus {
            speed: 1.0,
            paused: false,
            total_ns: rec.duration_ns(),
        });
    }
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| copyscope::ui::render(f, &app.view()))
        .expect("draw");
    term.backend().to_string()
}

#[test]
fn help_screen_explains_every_key_glyph_and_marker() {
    for (w, h) in [(200, 60), (80, 24)] {
        for replay in [false, true] {
            for ascii in [false, true] {
                let s = help_screen(w, h, replay, ascii);
                for k in KEYS.iter().filter(|k| k.applies(replay)) {
                    assert!(s.contains(k.keys), "{w}x{h}: key {}:\n{s}", k.keys);
                }
                for kind in LEGEND {
                    let (u, a) = kind.glyph();
                    let g = if ascii { a } else { u };
                    assert!(
                        s.contains(&format!("{g} {}", kind.label())) || s.contains(kind.label()),
                        "{w}x{h}: marker {kind:?}:\n{s}"
                    );
                }
                for name in [
                    "copy speed",
                    "dip",
                    "clipped",
                    "disk",
                    "average",
                    "progress",
                ] {
                    assert!(s.contains(name), "{w}x{h}: {name}:\n{s}");
                }
                assert!(s.contains("any key closes"), "{w}x{h} cut:\n{s}");
            }
        }
    }
}

/// Issue 11: whether the copy keeps going while suspended is stated where a user looks — the
/// `?` help of a live run, the man page's KEYS and the README — and it is what happens
/// (tests/cancel_slowdev_e2e.rs checks the threads are stopped and the file does not grow).
#[test]
fn ctrl_z_says_the_copy_waits_too() {
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = flat(&help_screen(120, 40, false, false));
    assert!(
        help.contains("^Z suspend: the copy waits too until fg; use tmux to keep it going"),
        "{help}"
    );
    let mut man = Vec::new();
    copyscope::frontend::man::render(&mut man).unwrap();
    let man = flat(&String::from_utf8_lossy(&man));
    assert!(man.contains("the copy waits too until fg"), "{man}");
    let readme =
        flat(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap());
    assert!(
        readme.contains(
            "Ctrl-Z suspends to the shell (the whole process stops, so the copy waits too;"
        ),
        "README"
    );
}
