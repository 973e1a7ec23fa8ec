//! One family of numbers: every size, rate, duration and clock a run's outputs print follows
//! `present::format`'s rules (three significant digits — `4.00 GB`, `118 MB/s`; clocks
//! `mm:ss`/`h:mm:ss`, event times with tenths; durations `4.2 s`, `42 s`, `2 min 05 s`;
//! percentages whole and spaced, `42 %`), so a
//! second formatting family cannot come back unnoticed. Scanned: a real `--plain` copy (its
//! progress lines and summary), and for every committed recording the after-exit summary,
//! `replay --plain`, the texts of `replay --json`, the Markdown and the text export.

use std::process::Command;
use std::time::Duration;

use copyscope::frontend::replay::{run_json, run_plain};
use copyscope::model::ModelConfig;
use copyscope::present::units::Units;
use copyscope::report::export::ChartData;
use copyscope::report::export::markdown::render_markdown;
use copyscope::report::export::text::render_text;
use copyscope::report::recording::Replayed;
use copyscope::report::summary::final_summary;

const UNITS: [&str; 13] = [
    "B", "kB", "MB", "GB", "TB", "PB", "EB", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
];

/// The token without the punctuation around it in a sentence, a table or a bracket.
fn bare(tok: &str) -> &str {
    tok.trim_matches(|c: char| "()[]{},;|~≈'\"".contains(c))
        .trim_end_matches([':', '.'])
}

fn is_digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

/// Three significant digits: `4.00`, `12.3`, `118`.
fn sig3(n: &str) -> bool {
    match n.split_once('.') {
        Some((i, f)) => {
            (is_digits(i, 1) && is_digits(f, 2)) || (is_digits(i, 2) && is_digits(f, 1))
        }
        None => is_digits(n, 3) && !n.starts_with('0'),
    }
}

/// A size or rate `n unit`.
fn amount_ok(n: &str, unit: &str) -> bool {
    let (base, rate) = match unit.strip_suffix("/s") {
        Some(b) => (b, true),
        None => (unit, false),
    };
    if base == "B" {
        // Whole bytes below 1 kB.
        return n.parse::<u32>().is_ok_and(|v| v < 1000) && !n.contains('.');
    }
    // "0 MB/s" is a stall; a zero size is "0 B".
    (rate && n == "0") || sig3(n)
}

/// A duration in seconds `n s` (not after "min"): one decimal below 10 s, whole up to 99.
fn secs_ok(n: &str) -> bool {
    match n.split_once('.') {
        Some((i, f)) => is_digits(i, 1) && is_digits(f, 1),
        None => n.len() == 2 && is_digits(n, 2) && !n.starts_with('0'),
    }
}

/// A clock `mm:ss`, `h:mm:ss`, with or without tenths.
fn clock_ok(t: &str) -> bool {
    let (main, tenth) = match t.split_once('.') {
        Some((m, f)) => (m, Some(f)),
        None => (t, None),
    };
    if tenth.is_some_and(|f| !is_digits(f, 1)) {
        return false;
    }
    let parts: Vec<&str> = main.split(':').collect();
    match parts.as_slice() {
        [m, s] => is_digits(m, 2) && is_digits(s, 2),
        [h, m, s] => {
            !h.is_empty()
                && h.bytes().all(|b| b.is_ascii_digit())
                && is_digits(m, 2)
                && is_digits(s, 2)
        }
        _ => false,
    }
}

/// Every number-with-unit, duration and clock in `text` that breaks the rules.
fn violations(text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for line in text.lines() {
        let toks: Vec<&str> = line.split_whitespace().map(bare).collect();
        for (i, tok) in toks.iter().enumerate() {
            let prev = if i > 0 { toks[i - 1] } else { "" };
            let numeric = !prev.is_empty() && prev.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            let unit = tok.strip_suffix("/s").unwrap_or(tok);
            if numeric && UNITS.contains(&unit) && !amount_ok(prev, tok) {
                bad.push(format!("{prev} {tok}  in: {line}"));
            }
            if numeric && *tok == "s" {
                let after_min = i >= 2 && toks[i - 2] == "min";
                let ok = if after_min {
                    is_digits(prev, 2)
                } else {
                    secs_ok(prev)
                };
                if !ok {
                    bad.push(format!("{prev} s  in: {line}"));
                }
            }
            // Percentages are whole and spaced: "42 %", never "42%" or "41.7 %".
            if *tok == "%" && !prev.is_empty() && !prev.bytes().all(|b| b.is_ascii_digit()) {
                bad.push(format!("{prev} %  in: {line}"));
            }
            if tok.len() > 1
                && tok.strip_suffix('%').is_some_and(|n| {
                    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                })
            {
                bad.push(format!("{tok}  in: {line}"));
            }
            // Counts are grouped by threes: "1 200 files", never "1200 files".
            if matches!(*tok, "files" | "drops" | "txgs")
                && is_digits(prev, prev.len())
                && prev.len() > 3
            {
                bad.push(format!("{prev} {tok}  in: {line}"));
            }
            // A clock ends in two-digit seconds; "256:1" is a ratio.
            let clockish = tok.contains(':')
                && tok
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b':' || b == b'.')
                && tok.rsplit(':').next().is_some_and(|s| s.len() >= 2);
            if clockish && !clock_ok(tok) {
                bad.push(format!("{tok}  in: {line}"));
            }
        }
    }
    bad
}

#[test]
fn the_checker_rejects_the_old_families() {
    for old in [
        "copied 4 GB",
        "118.40 MB",
        "at 118.4 MB/s",
        "ETA 0:12",
        "[0:04.1] drop",
        "took 75.8 s",
        "last byte 57.0 s",
        "1.1 GB",
        "629 MB in 1200 files",
        "copying 42% done",
        "busy 41.7 % of the time",
        "9.99 kB", // fine…
    ] {
        let v = violations(old);
        assert_eq!(v.is_empty(), old == "9.99 kB", "{old}: {v:?}");
    }
    for good in [
        "copied 4.00 GB in 12 s (850 kB, 512 B)",
        "drop 118 → 3.40 MB/s for 1.4 s; now 0 MB/s",
        "[00:10.4] txg 12 committed; ETA 1:02:03; stalled 2 min 05 s",
        "| 00:12.0 | 110 MB/s → 5.00 MB/s | 26 s |",
        "copying 4.00 GB / 9.60 GB 41 %; CPU 100 % busy (busiest core 97 %)",
    ] {
        assert_eq!(violations(good), Vec::<String>::new(), "{good}");
    }
}

use crate::util;
use util::{committed_recordings as recordings, plain_ui_options as opts};

#[test]
fn every_recordings_texts_follow_the_one_format() {
    let mut bad = Vec::new();
    for path in recordings() {
        let cfg = ModelConfig::default();
        let run = Replayed::load(&path, cfg).expect("recording");
        let data = ChartData::from_replayed(&run);
        let mut texts = vec![
            final_summary(&data, &run.model, false, Units::Decimal, None, 100),
            render_markdown(&data),
            render_text(&data, 100, false),
            run_plain(&path, cfg, opts()).expect("replay --plain"),
        ];
        for line in run_json(&path, cfg).expect("replay --json").lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("json line");
            if let Some(t) = v.get("text").and_then(|t| t.as_str()) {
                texts.push(t.to_string());
            }
        }
        for t in texts {
            // The recorded host line is the recording's words ("4 GB" of RAM), not ours.
            let t = t.replace(&run.header.host, "HOST");
            bad.extend(
                violations(&t)
                    .into_iter()
                    .map(|v| format!("{}: {v}", path.display())),
            );
        }
    }
    assert!(
        bad.is_empty(),
        "{} numbers off the format:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn whatif_texts_follow_the_one_format() {
    use copyscope::model::whatif::{Scenario, Settings};
    use copyscope::report::whatif::{load, outcome, render_text};
    let mut bad = Vec::new();
    for (name, spec) in [
        ("zfs-aged-bigfile", "zfs_dirty_data_max=64M"),
        ("zfs-throttle-64m", "zfs_txg_timeout=2"),
        ("ext4-disk-lowered", "vm.dirty_bytes=1G"),
        ("ext4-disk-default", "vm.dirty_background_bytes=100M"),
    ] {
        let p = format!(
            "{}/tests/fixtures/corpus/{name}.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let rec = load(std::path::Path::new(&p), ModelConfig::default()).expect(name);
        let mut settings = Settings::default();
        settings.set(spec).expect(spec);
        for pace in [false, true] {
            settings.pace_auto = pace;
            let sc = Scenario {
                settings: settings.clone(),
                ..Scenario::default()
            };
            let o = outcome(&rec, &sc, name, None).expect("predicted");
            let t = render_text(&o, false).replace(&rec.header.host, "HOST");
            bad.extend(violations(&t).into_iter().map(|v| format!("{name}: {v}")));
        }
    }
    assert!(
        bad.is_empty(),
        "{} numbers off the format:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn a_plain_copys_progress_and_summary_follow_the_one_format() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src.bin");
    std::fs::write(&src, vec![7u8; 12_345_678]).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_copyscope"));
    // Paced to ~5 s by the tests' rate hook, so the 2-second progress lines come.
    c.env("COPYSCOPE_TEST_THROTTLE_BPS", "2500000")
        .arg("--plain")
        .arg(&src)
        .arg(t.path().join("dst.bin"));
    let mut child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(120), "the copy hangs");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("] copying "), "a progress line: {stdout}");
    assert!(
        stdout.contains("copyscope: done: 12.3 MB in 1 file"),
        "{stdout}"
    );
    let bad = violations(&stdout);
    assert!(bad.is_empty(), "{bad:#?}\n{stdout}");
}
