//! No parser panics: arbitrary text, arbitrary bytes made text, and every real fixture cut at
//! every byte offset (DESIGN §11).

use std::path::Path;

use copyscope::sample::blockdev::parse_dev_number;
use copyscope::sample::diskstats::{parse_diskstats, sum_diskstats};
use copyscope::sample::mountinfo::{find_mount, parse_mountinfo, unescape_octal};
use copyscope::sample::procfs::{parse_meminfo, parse_psi, parse_u64_value, parse_vmstat};
use copyscope::sample::zfs::{
    named_kstat_rows, parse_dmu_tx, parse_kstat_header, parse_kstat_row, parse_objset, parse_txgs,
    parse_zpool_list_vhp, txg_transitions,
};
use proptest::prelude::*;

/// Runs every parser on `s`; the only requirement is that none panics.
fn all_parsers(s: &str) {
    let _ = parse_meminfo(s);
    let _ = parse_vmstat(s);
    let _ = parse_psi(s);
    let _ = parse_u64_value(s);
    let _ = parse_diskstats(s);
    let _ = sum_diskstats(s, &[(254, 0), (7, 0), (0, 0)]);
    let m = parse_mountinfo(s);
    let _ = find_mount(&m, Path::new("/tank/a b/c"));
    let _ = unescape_octal(s);
    let _ = parse_dev_number(s);
    if let Ok(t) = parse_txgs(s) {
        let _ = txg_transitions(&t.rows, &t.rows);
        let _ = txg_transitions(&[], &t.rows);
    }
    let _ = parse_dmu_tx(s);
    let _ = parse_objset(s);
    let _ = named_kstat_rows(s).count();
    for line in s.lines() {
        let _ = parse_kstat_row(line);
        let _ = parse_kstat_header(line);
    }
    let _ = parse_zpool_list_vhp(s, "tank");
}

fn fixture_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_symlink() {
                continue;
            }
            if p.is_dir() {
                // 300 one-number parameter files add nothing over one of them.
                if !p.ends_with("parameters") {
                    stack.push(p);
                }
            } else {
                // Only parser inputs (proc, sysfs, kstat text); the lab's csv/log files and
                // scripts are not read by copyscope.
                let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
                let small = std::fs::metadata(&p).unwrap().len() <= 16 * 1024;
                if small && !matches!(ext, "csv" | "log" | "py" | "md" | "jsonl") {
                    out.push(p);
                }
            }
        }
    }
    out
}

#[test]
fn every_fixture_truncated_at_every_byte_offset() {
    let files = fixture_files();
    assert!(files.len() > 50, "fixtures present: {}", files.len());
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for i in 0..=text.len() {
            if let Some(head) = text.get(..i) {
                all_parsers(head);
            }
        }
    }
}

#[test]
fn truncated_txgs_never_yield_a_row_from_a_cut_line() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/txgs/txgs_2x_linux.txt"),
    )
    .unwrap();
    let full = parse_txgs(&text).unwrap().rows;
    for i in 0..=text.len() {
        if let Ok(t) = parse_txgs(&text[..i]) {
            // Every row parsed from a prefix is exactly a row of the full file.
            for r in &t.rows {
                assert!(full.contains(r), "cut at {i} gave {r:?}");
            }
        }
    }
}

fn line_soup() -> impl Strategy<Value = String> {
    let tok = prop_oneof![
        Just("txg".to_string()),
        Just("name type data".to_string()),
        Just("-".to_string()),
        Just("7".to_string()),
        Just("\\040".to_string()),
        Just("some avg10=0.00 total=".to_string()),
        Just("Dirty:".to_string()),
        Just("kB".to_string()),
        Just("\t".to_string()),
        Just("\n".to_string()),
        Just("0x01".to_string()),
        "[0-9]{1,25}",
        "[A-Za-z_]{1,12}",
        "[ \t]{1,40}",
        any::<char>().prop_map(|c| c.to_string()),
    ];
    prop::collection::vec(tok, 0..200).prop_map(|v| v.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        all_parsers(&s);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..2048)) {
        all_parsers(&String::from_utf8_lossy(&b));
    }

    #[test]
    fn token_soup_never_panics(s in line_soup()) {
        all_parsers(&s);
    }

    #[test]
    fn garbled_real_txgs_never_panics(cut in 0usize..1200, junk in "[ -~\n]{0,80}") {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/txgs/txgs_07_linux.txt"),
        ).unwrap();
        let cut = cut.min(text.len());
        let garbled = format!("{}{}{}", &text[..cut], junk, &text[cut..]);
        all_parsers(&garbled);
    }
}
