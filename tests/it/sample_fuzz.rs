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

/// One real file of each format the parsers read (cutting all 400 fixture files at every
/// offset takes minutes in a debug build and adds nothing).
const REAL_FILES: &[&str] = &[
    "linux-host/proc/meminfo",
    "linux-host/proc/vmstat",
    "linux-host/proc/diskstats",
    "linux-host/proc/pressure/io",
    "linux-host/proc/self/mountinfo",
    "linux-host/sys/devices/virtual/block/loop0/loop0p1/dev",
    "zfs-2.1/vm-root/proc/self/mountinfo",
    "zfs-2.1/vm-root/proc/diskstats",
    "zfs-2.1/vm-root/proc/spl/kstat/zfs/tank/txgs",
    "zfs-2.1/vm-root/proc/spl/kstat/zfs/tank/objset-0x36",
    "zfs-2.1/vm-root/proc/spl/kstat/zfs/tank/dmu_tx_assign",
    "zfs-2.1/vm-root/proc/spl/kstat/zfs/tank/state",
    "zfs-2.1/vm-root/proc/spl/kstat/zfs/dmu_tx",
    "zfs-2.1/vm-root/proc/spl/kstat/zfs/arcstats",
    "zfs-2.1/txgs-during/05.txt",
    "zfs-2.1/zpool-list-vHP.txt",
    "txgs/txgs_07_linux.txt",
    "txgs/txgs_freebsd.txt",
    "txgs/dmu_tx_22.txt",
];

fn fixture_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    REAL_FILES.iter().map(|f| root.join(f)).collect()
}

#[test]
fn every_fixture_truncated_at_every_byte_offset() {
    let files = fixture_files();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
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
    #![proptest_config(ProptestConfig::with_cases(1000))]

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
