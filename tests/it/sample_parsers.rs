//! Parser tests on real files: this machine's /proc (tests/fixtures/linux-host), the ZFS VM
//! captures (tests/fixtures/zfs-2.1), and the exact formats of signals.md §1.7/§2.

use std::path::{Path, PathBuf};

use copyscope::sample::diskstats::{parse_diskstats, sum_diskstats};
use copyscope::sample::mountinfo::{find_mount, parse_mountinfo, zfs_pool_of};
use copyscope::sample::procfs::{page_cache, parse_meminfo, parse_psi, parse_vmstat};
use copyscope::sample::zfs::{
    TxgTransition, named_kstat_header, named_kstat_rows, named_kstat_str, named_kstat_u64,
    parse_dmu_tx, parse_objset, parse_txgs, parse_zpool_list_vhp, txg_transitions,
};

fn fixture(rel: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const LAB: &str = "zfs-2.1/lab-captures";

/// The value of `key` in a real /proc file, found by plain text search (independent of the
/// parser under test).
fn raw_field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next()?.trim_end_matches(':') == key).then(|| it.next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("{key} not in fixture"))
}

#[test]
fn host_meminfo_vmstat_psi() {
    let mi = fixture("linux-host/proc/meminfo");
    let m = parse_meminfo(&mi).unwrap();
    assert_eq!(m.dirty, raw_field(&mi, "Dirty") * 1024);
    assert_eq!(m.writeback, raw_field(&mi, "Writeback") * 1024);
    assert_eq!(m.mem_total, Some(raw_field(&mi, "MemTotal") * 1024));

    let vs = fixture("linux-host/proc/vmstat");
    let v = parse_vmstat(&vs).unwrap();
    assert_eq!(v.nr_dirty_threshold, raw_field(&vs, "nr_dirty_threshold"));
    assert_eq!(
        v.nr_dirty_background_threshold,
        raw_field(&vs, "nr_dirty_background_threshold")
    );
    assert_eq!(v.nr_written, raw_field(&vs, "nr_written"));
    // The kernel makes bg half of thresh when bg >= thresh, so bg < thresh always.
    assert!(v.nr_dirty_background_threshold < v.nr_dirty_threshold);
    let pc = page_cache(&m, &v, 4096);
    assert!(pc.bg_thresh < pc.freerun() && pc.freerun() < pc.thresh);

    let p = parse_psi(&fixture("linux-host/proc/pressure/io")).unwrap();
    assert!(p.some_us >= p.full_us, "some includes full");
}

#[test]
fn host_diskstats_and_mountinfo() {
    let ds = fixture("linux-host/proc/diskstats");
    let all = parse_diskstats(&ds);
    assert_eq!(all.len(), ds.lines().count(), "every real line parses");
    let vda = all.iter().find(|d| d.name == "vda").unwrap();
    let s = sum_diskstats(&ds, &[(vda.major, vda.minor)]).unwrap();
    assert_eq!(s.sectors_written, vda.sectors_written);
    assert_eq!(s.disks, 1);

    let mi = parse_mountinfo(&fixture("linux-host/proc/self/mountinfo"));
    let root = find_mount(&mi, Path::new("/work/anything")).unwrap();
    assert_eq!(root.fs_type, "ext4");
    let lp = find_mount(&mi, Path::new("/tmp/cs-mnt/dir/file")).unwrap();
    assert_eq!(lp.source, "/dev/loop0p1");
    assert_eq!((lp.major, lp.minor), (259, 0));
}

#[test]
fn txgs_2x_layout() {
    let t = parse_txgs(&fixture("txgs/txgs_2x_linux.txt")).unwrap();
    assert!(t.kstat.is_none());
    assert_eq!(t.rows.len(), 5);
    let r = t.rows[0];
    assert_eq!((r.txg, r.birth, r.state), (1201, 86_400_123_456_789, 'C'));
    assert_eq!(
        (r.ndirty, r.nwritten, r.writes),
        (412_090_368, 398_458_880, 3301)
    );
    assert_eq!(
        (r.otime, r.qtime, r.wtime, r.stime),
        (2_101_876_543, 41_234, 20_567, 1_789_012_345)
    );
    assert_eq!(t.rows[3].state, 'S');
    assert_eq!(t.rows[4].state, 'O');
    // birth(N+1) = birth(N) + otime(N) (txg.c:393-406).
    assert_eq!(t.rows[0].birth + t.rows[0].otime, t.rows[1].birth);
}

#[test]
fn txgs_07_layout_keeps_kstat_line_and_freebsd_leading_newline() {
    let base = parse_txgs(&fixture("txgs/txgs_2x_linux.txt")).unwrap();
    let t07 = parse_txgs(&fixture("txgs/txgs_07_linux.txt")).unwrap();
    let k = t07.kstat.unwrap();
    assert_eq!(
        (k.kid, k.ktype, k.flags, k.ndata, k.data_size),
        (9, 0, 1, 5, 560)
    );
    assert_eq!(k.snaptime, 86_408_583_192_578);
    assert_eq!(t07.rows, base.rows);
    let bsd = parse_txgs(&fixture("txgs/txgs_freebsd.txt")).unwrap();
    assert_eq!(bsd.rows, base.rows);
    assert!(bsd.kstat.is_none());
}

#[test]
fn txgs_wide_txg_numbers_break_alignment_but_parse() {
    // #3409: 10-digit txg numbers push the columns right.
    let text = "txg      birth            state ndirty       nread        nwritten     reads    writes   otime        qtime        wtime        stime       \n\
                1234567890 86400123456789   C     412090368    0            398458880    0        3301     2101876543   41234        20567        1789012345  \n";
    let t = parse_txgs(text).unwrap();
    assert_eq!(t.rows[0].txg, 1_234_567_890);
    assert_eq!(t.rows[0].stime, 1_789_012_345);
}

#[test]
fn txgs_garbled_head_like_tail_100() {
    // #4512: a file taken with `tail` can start mid-line; lines before the header are skipped.
    let body = fixture("txgs/txgs_2x_linux.txt");
    let text = format!("x01 5 560 112162\n{body}");
    assert_eq!(parse_txgs(&text).unwrap().rows.len(), 5);
    assert!(parse_txgs("1201 86400123456789 C 0 0 0 0 0 0 0 0 0\n").is_err());
}

#[test]
fn txgs_real_capture_with_syncing_row() {
    let t = parse_txgs(&fixture(&format!(
        "{LAB}/fixtures-80mbps-zero/after/tank.txgs.right-after-dd.txt"
    )))
    .unwrap();
    let states: String = t.rows.iter().map(|r| r.state).collect();
    assert!(states.ends_with("SO"), "{states}");
    let last_c = t.rows.iter().rev().find(|r| r.state == 'C').unwrap();
    assert_eq!(last_c.txg, 27);
    assert_eq!(last_c.ndirty, 164_773_888);
    assert_eq!(last_c.stime, 2_053_690_990);
    // Committed txgs are consecutive and each opened when the previous closed.
    for w in t.rows.windows(2) {
        assert_eq!(w[1].txg, w[0].txg + 1);
        if w[0].otime > 0 {
            assert_eq!(w[1].birth, w[0].birth + w[0].otime);
        }
    }
    // The open and syncing rows have no I/O figures yet (set_io runs after the sync).
    let s = t.rows.iter().find(|r| r.state == 'S').unwrap();
    assert_eq!((s.ndirty, s.nwritten, s.stime), (0, 0, 0));
}

#[test]
fn dmu_tx_real_and_22_field_sets() {
    let before = parse_dmu_tx(&fixture(&format!(
        "{LAB}/fixtures-80mbps-zero/before/dmu_tx.txt"
    )))
    .unwrap();
    let after = parse_dmu_tx(&fixture(&format!(
        "{LAB}/fixtures-80mbps-zero/after/dmu_tx.txt"
    )))
    .unwrap();
    assert_eq!(after.dirty_delay, 364);
    assert_eq!(after.assigned, 12_012);
    assert!(
        after.dirty_delay > before.dirty_delay,
        "the throttled run delayed writers"
    );
    let unthrottled = parse_dmu_tx(&fixture(&format!(
        "{LAB}/fixtures-unthrottled-urandom/after/dmu_tx.txt"
    )))
    .unwrap();
    assert_eq!(unthrottled.dirty_delay, 0);
    let d22 = parse_dmu_tx(&fixture("txgs/dmu_tx_22.txt")).unwrap();
    assert_eq!(
        (d22.dirty_delay, d22.dirty_over_max, d22.assigned),
        (187_355, 41, 48_211_902)
    );
    assert_eq!(
        named_kstat_u64(&fixture("txgs/dmu_tx_22.txt"), "dmu_tx_wrlog_delay"),
        Some(0)
    );
    let h = named_kstat_header(&fixture("txgs/dmu_tx_22.txt")).unwrap();
    assert_eq!((h.kid, h.ktype, h.ndata), (14, 1, 13));
}

#[test]
fn arcstats_and_histogram_names_with_spaces() {
    let arc = fixture(&format!("{LAB}/fixtures-80mbps-zero/after/arcstats.txt"));
    assert_eq!(named_kstat_u64(&arc, "anon_size"), Some(0));
    assert!(named_kstat_u64(&arc, "c_max").unwrap() > 0);
    assert_eq!(named_kstat_rows(&arc).count(), 123, "header says ndata 123");
    let ts = fixture(&format!("{LAB}/timeseries-100mbps-zero/arcstats-final.txt"));
    assert!(named_kstat_u64(&ts, "size").is_some());

    let hist = fixture(&format!(
        "{LAB}/fixtures-80mbps-zero/after/tank.dmu_tx_assign.txt"
    ));
    assert_eq!(named_kstat_u64(&hist, "1048576 ns"), Some(3));
    assert_eq!(named_kstat_u64(&hist, "2147483648 ns"), Some(4));
}

#[test]
fn objset_real_and_string_with_space() {
    let o = parse_objset(&fixture(&format!(
        "{LAB}/fixtures-80mbps-zero/after/tank.objset-0x36.txt"
    )))
    .unwrap();
    assert_eq!(o.dataset_name, "tank");
    assert_eq!(o.nwritten, 1_572_864_000, "1500 MiB written by dd");
    assert_eq!(o.writes, 1500);
    let s = parse_objset(&fixture("txgs/objset_share.txt")).unwrap();
    assert_eq!(s.dataset_name, "tank/share");
    assert_eq!(s.nwritten, 241_357_209_600);
    let spaced = fixture("txgs/objset_share.txt").replace("tank/share", "tank/my share");
    assert_eq!(
        named_kstat_str(&spaced, "dataset_name"),
        Some("tank/my share")
    );
}

#[test]
fn zpool_list_real_output() {
    // `zpool list -v` (not scripted) from the lab: names are indented with spaces.
    let text = fixture(&format!("{LAB}/fixtures-80mbps-zero/after/zpool-list.txt"));
    // Without -P the leaves are not paths, so none are taken.
    assert!(parse_zpool_list_vhp(&text, "tank").is_empty());
    assert_eq!(zfs_pool_of("tank/backup@x"), "tank");
}

/// Replays the lab's 100 ms txgs capture through `txg_transitions` and checks the syncs it
/// finds against the C sampler's own columns in timeseries.csv.
#[test]
fn txg_transitions_match_lab_timeseries() {
    let raw = fixture(&format!("{LAB}/timeseries-100mbps-zero/txgs-raw.log"));
    let header = fixture("txgs/txgs_2x_linux.txt")
        .lines()
        .next()
        .unwrap()
        .to_string();
    let mut blocks: Vec<String> = Vec::new();
    for line in raw.lines() {
        if line.starts_with("## t=") {
            blocks.push(format!("{header}\n"));
        } else if let Some(b) = blocks.last_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    let mut prev = Vec::new();
    let mut started = Vec::new();
    let mut committed = Vec::new();
    for b in &blocks {
        let rows = parse_txgs(b).unwrap().rows;
        for t in txg_transitions(&prev, &rows) {
            match t {
                TxgTransition::SyncStarted { txg } => started.push(txg),
                TxgTransition::Committed { row } => committed.push(row.txg),
            }
        }
        prev = rows;
    }
    // The first block's committed rows are history, not events of this run.
    let first_rows = parse_txgs(&blocks[0]).unwrap().rows;
    let history: Vec<u64> = first_rows
        .iter()
        .filter(|r| r.state == 'C')
        .map(|r| r.txg)
        .collect();
    let committed: Vec<u64> = committed
        .into_iter()
        .filter(|t| !history.contains(t))
        .collect();
    let started: Vec<u64> = started
        .into_iter()
        .filter(|t| !history.contains(t))
        .collect();

    let csv = fixture(&format!("{LAB}/timeseries-100mbps-zero/timeseries.csv"));
    let mut cols = csv.lines().next().unwrap().split(',');
    let idx = cols.position(|c| c == "txg_last_committed").unwrap();
    let mut csv_committed: Vec<u64> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(idx)?.parse().ok())
        .collect();
    csv_committed.dedup();
    let csv_new: Vec<u64> = csv_committed
        .into_iter()
        .filter(|t| !history.contains(t))
        .collect();
    assert!(committed.len() >= 10, "a 3000 MiB write syncs many txgs");
    assert_eq!(
        committed, csv_new,
        "every commit the C sampler saw, in order"
    );
    // Each commit was preceded by its sync start, in txg order.
    assert_eq!(started, committed[..started.len()].to_vec());
    assert!(started.len() >= committed.len());
}

#[test]
fn zpool_list_vhp_real_scripted_output() {
    let text = fixture("zfs-2.1/zpool-list-vHP.txt");
    assert_eq!(
        parse_zpool_list_vhp(&text, "tank"),
        vec![
            "/dev/disk/by-id/virtio-pool1-part1",
            "/dev/disk/by-id/virtio-pool2-part1"
        ]
    );
    assert!(parse_zpool_list_vhp(&text, "rpool").is_empty());
}

#[test]
fn txgs_real_o_s_c_snapshots() {
    for n in ["03", "05", "10", "15"] {
        let t = parse_txgs(&fixture(&format!("zfs-2.1/txgs-during/{n}.txt"))).unwrap();
        let states: String = t.rows.iter().map(|r| r.state).collect();
        assert!(states.ends_with("CSO"), "{n}: {states}");
        assert!(
            t.rows
                .iter()
                .filter(|r| r.state == 'C')
                .all(|r| r.stime > 0)
        );
    }
}

/// The lab run's sampler output: every line is a valid Sample (the recording contract), the
/// objset intake reaches exactly the bytes written, and txg syncs and throttle delays show.
#[test]
fn lab_sample_dump_is_consistent() {
    use copyscope::sample::Sample;
    let text = fixture("zfs-2.1/sample-dump-40mbps.jsonl");
    let samples: Vec<Sample> = text
        .lines()
        .filter(|l| l.starts_with("{\"t_ns\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(samples.len() > 300);
    let written = samples.last().unwrap().engine.bytes_copied;
    assert_eq!(written, 800 << 20);
    let z_last = samples.last().unwrap().zfs.as_ref().unwrap();
    let z_first = samples[0].zfs.as_ref().unwrap();
    assert_eq!(
        z_last.objset_nwritten.unwrap() - z_first.objset_nwritten.unwrap(),
        written,
        "objset nwritten counts exactly the logical bytes written"
    );
    assert!(
        z_last.dmu_tx.dirty_delay > z_first.dmu_tx.dirty_delay,
        "throttled at 40 MB/s"
    );
    let mut commits = Vec::new();
    for w in samples.windows(2) {
        let (a, b) = (w[0].zfs.as_ref().unwrap(), w[1].zfs.as_ref().unwrap());
        for t in txg_transitions(&a.txgs, &b.txgs) {
            if let TxgTransition::Committed { row } = t {
                commits.push(row);
            }
        }
        // birth is put on the sample clock: an open txg was born before its sample was
        // read. The reads of one tick take a few ms in the emulated VM, so allow one tick.
        if let Some(o) = b.txgs.iter().find(|r| r.state == 'O') {
            let born = o.birth as i64 + b.birth_offset_ns;
            assert!(
                born <= w[1].t_ns as i64 + 100_000_000,
                "open txg born in the future"
            );
        }
        assert!(
            (a.birth_offset_ns - b.birth_offset_ns).abs() < 100_000_000,
            "stable offset"
        );
    }
    // The txgs committed during the run dirtied what was written (plus a little metadata),
    // each in a sync of seconds at 40 MB/s.
    let dirtied: u64 = commits.iter().map(|r| r.ndirty).sum();
    assert!(commits.len() >= 5, "{} commits", commits.len());
    assert!(
        dirtied >= written && dirtied < written + written / 20,
        "{dirtied} vs {written}"
    );
    assert!(
        commits
            .iter()
            .filter(|r| r.ndirty > 0)
            .all(|r| r.stime > 1_000_000_000)
    );
    // ZFS data bypasses the page cache.
    assert!(
        samples
            .iter()
            .all(|s| s.page_cache.unwrap().dirty < 1 << 20)
    );
}

#[test]
fn host_stat() {
    use copyscope::sample::cpu::{parse_stat, usage};
    let text = fixture("linux-host/proc/stat");
    let s = parse_stat(&text).unwrap();
    // Found by plain text search: the fields of the `cpu` and `cpu1` lines.
    let line = |label: &str| -> Vec<u64> {
        let l = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(label));
        let l = l.unwrap_or_else(|| panic!("{label} not in fixture"));
        l.split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let (all, cpu1) = (line("cpu"), line("cpu1"));
    assert_eq!(
        (s.all.user, s.all.idle, s.all.steal),
        (all[0], all[3], all[7])
    );
    assert_eq!(s.cores.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(
        (s.cores[1].1.system, s.cores[1].1.softirq),
        (cpu1[2], cpu1[6])
    );
    // One second later on the same machine (2 cores, 100 ticks a second): a figure.
    let later = parse_stat(&fixture("linux-host/stat-after-1s")).unwrap();
    let u = usage(&s, &later).expect("a 1 s window is long enough");
    assert!((0.0..=100.0).contains(&u.busy_pct) && u.busy_pct <= u.max_core_pct);
}
