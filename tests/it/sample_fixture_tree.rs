//! probe_environment and read_sample against whole fixture trees through `SysRoot`:
//! this machine's /proc + /sys block graph (a partitioned loop device mounted at
//! /tmp/cs-mnt), and the ZFS 2.1 lab VM's tree captured while a write ran.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use copyscope::copy::Progress;
use copyscope::sample::blockdev::{disks_for_dev, disks_for_name};
use copyscope::sample::{
    BlockDev, SignalReader, SysRoot, probe_environment, probe_environment_with, read_sample,
    spawn_sampler,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn host_root() -> SysRoot {
    SysRoot::new(fixtures().join("linux-host"))
}

fn zfs_root() -> SysRoot {
    SysRoot::new(fixtures().join("zfs-2.1/vm-root"))
}

fn zpool_output(_pool: &str) -> Result<String, String> {
    std::fs::read_to_string(fixtures().join("zfs-2.1/zpool-list-vHP.txt"))
        .map_err(|e| e.to_string())
}

fn read(root: &SysRoot, rel: &str) -> String {
    root.read_to_string(rel).unwrap()
}

fn dev(major: u32, minor: u32, name: &str) -> BlockDev {
    BlockDev {
        major,
        minor,
        name: name.to_string(),
    }
}

/// Copies a fixture tree, keeping symlinks as symlinks, so a test can alter it.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if ft.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
fn host_partition_maps_to_its_whole_disk() {
    let root = host_root();
    assert_eq!(disks_for_dev(&root, 259, 0), vec![dev(7, 0, "loop0")]);
    assert_eq!(disks_for_name(&root, "loop0p1"), vec![dev(7, 0, "loop0")]);
    assert_eq!(disks_for_dev(&root, 254, 0), vec![dev(254, 0, "vda")]);
    assert!(
        disks_for_dev(&root, 0, 28).is_empty(),
        "major 0 has no sysfs entry"
    );
}

#[test]
fn host_environment_from_fixture_tree() {
    let root = host_root();
    let env = probe_environment(
        &root,
        &[PathBuf::from("/work/src/file")],
        Path::new("/tmp/cs-mnt/new/dir"),
    );
    assert_eq!(env.fs_type.as_deref(), Some("ext4"));
    assert_eq!(env.mount_source.as_deref(), Some("/dev/loop0p1"));
    assert_eq!(env.mount_point.as_deref(), Some("/tmp/cs-mnt"));
    assert_eq!(env.dest_devices, vec![dev(7, 0, "loop0")]);
    assert_eq!(env.dest_disks, vec!["loop0"]);
    assert_eq!(env.source_devices, vec![dev(254, 0, "vda")]);
    assert!(env.zfs_pool.is_none());
    let ratio = read(&root, "proc/sys/vm/dirty_ratio");
    assert!(
        env.tunables
            .contains(&("vm.dirty_ratio".into(), ratio.trim().into()))
    );
    // The only thing missing from a fixture tree is the live CPU meter.
    assert_eq!(env.notes.len(), 1, "{:?}", env.notes);
    assert!(env.notes[0].starts_with("cpu n/a"));
}

#[test]
fn host_sample_from_fixture_tree_matches_the_files() {
    let root = host_root();
    let env = probe_environment(&root, &[PathBuf::from("/work")], Path::new("/tmp/cs-mnt"));
    let mut reader = SignalReader::new(&root, &env);
    let progress = Progress::default();
    let s = read_sample(&mut reader, &progress, Instant::now());
    let pc = s.page_cache.unwrap();
    let mem = copyscope::sample::procfs::parse_meminfo(&read(&root, "proc/meminfo")).unwrap();
    assert_eq!((pc.dirty, pc.writeback), (mem.dirty, mem.writeback));
    let ds = read(&root, "proc/diskstats");
    let loop0 = ds
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some("loop0"))
        .unwrap();
    let f: Vec<u64> = loop0
        .split_whitespace()
        .skip(3)
        .map(|t| t.parse().unwrap())
        .collect();
    let d = s.dest_disk.unwrap();
    assert_eq!(
        (d.sectors_read, d.sectors_written, d.io_ticks_ms, d.disks),
        (f[2], f[6], f[9], 1)
    );
    assert!(
        d.sectors_written > 0,
        "the capture wrote 20 MiB through the partition"
    );
    assert!(s.source_disk.unwrap().sectors_written > 0);
    assert!(s.psi_io.is_some());
    assert!(s.cpu.is_none(), "no live CPU meter on a fixture root");
    assert!(s.zfs.is_none());
}

#[test]
fn zfs_environment_from_vm_tree() {
    let root = zfs_root();
    let env = probe_environment_with(&root, &[], Path::new("/tank/backup"), &zpool_output);
    assert_eq!(env.fs_type.as_deref(), Some("zfs"));
    assert_eq!(env.zfs_pool.as_deref(), Some("tank"));
    assert_eq!(env.zfs_dataset.as_deref(), Some("tank"));
    assert_eq!(env.zfs_objset.as_deref(), Some("objset-0x36"));
    // Leaf vdevs are partitions (virtio-pool1-part1 -> vdb1); their whole disks are summed.
    assert_eq!(env.dest_disks, vec!["vdb", "vdc"]);
    assert_eq!(env.zfs_dirty_data_max, Some(410_326_220));
    assert_eq!(env.zfs_sync_percent, Some(20));
    assert_eq!(env.zfs_delay_percent, Some(60));
    assert!(
        env.tunables
            .contains(&("zfs_txg_timeout".into(), "5".into()))
    );
    assert_eq!(env.notes.len(), 1, "{:?}", env.notes);
    // The capture did not copy the module's version file: none, not a guess.
    assert_eq!(env.zfs_version, None);
}

#[test]
fn the_zfs_modules_version_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("zfs-2.1/vm-root"), dir.path());
    // The lab VM's module (tests/fixtures/zfs-2.1/README.md), as sysfs prints it.
    std::fs::write(
        dir.path().join("sys/module/zfs/version"),
        "2.1.11-1+deb12u1\n",
    )
    .unwrap();
    let env = probe_environment_with(
        &SysRoot::new(dir.path()),
        &[],
        Path::new("/tank/backup"),
        &zpool_output,
    );
    assert_eq!(env.zfs_version.as_deref(), Some("2.1.11-1+deb12u1"));
}

#[test]
fn zfs_without_zpool_says_why_device_rate_is_missing() {
    let env = probe_environment(&zfs_root(), &[], Path::new("/tank"));
    assert!(env.dest_devices.is_empty());
    assert!(
        env.notes
            .iter()
            .any(|n| n.starts_with("device n/a: leaf disks of pool tank unknown")),
        "{:?}",
        env.notes
    );
}

#[test]
fn zfs_sample_from_vm_tree() {
    let root = zfs_root();
    let env = probe_environment_with(&root, &[], Path::new("/tank"), &zpool_output);
    let mut reader = SignalReader::new(&root, &env);
    let s = read_sample(&mut reader, &Progress::default(), Instant::now());
    let z = s.zfs.unwrap();
    assert_eq!(z.pool, "tank");
    let txgs =
        copyscope::sample::zfs::parse_txgs(&read(&root, "proc/spl/kstat/zfs/tank/txgs")).unwrap();
    assert!(txgs.rows.len() > 8);
    assert_eq!(
        z.txgs,
        txgs.rows[txgs.rows.len() - 8..].to_vec(),
        "the newest 8 rows"
    );
    let dmu =
        copyscope::sample::zfs::parse_dmu_tx(&read(&root, "proc/spl/kstat/zfs/dmu_tx")).unwrap();
    assert_eq!(z.dmu_tx, dmu);
    let objset = read(&root, "proc/spl/kstat/zfs/tank/objset-0x36");
    assert_eq!(
        z.objset_nwritten,
        copyscope::sample::zfs::named_kstat_u64(&objset, "nwritten")
    );
    assert!(z.arc_anon.is_some());
    assert_eq!(s.dest_disk.unwrap().disks, 2);
    // ZFS data does not go through the page cache.
    assert!(s.page_cache.unwrap().dirty < 1 << 20);
}

#[test]
fn txg_history_zero_and_missing_psi_give_notes_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(zfs_root().path(), tmp.path());
    let root = SysRoot::new(tmp.path());
    std::fs::write(
        root.join("sys/module/zfs/parameters/zfs_txg_history"),
        "0\n",
    )
    .unwrap();
    std::fs::write(root.join("proc/spl/kstat/zfs/tank/txgs"), "txg      birth            state ndirty       nread        nwritten     reads    writes   otime        qtime        wtime        stime       \n").unwrap();
    std::fs::remove_file(root.join("proc/pressure/io")).unwrap();
    std::fs::remove_file(root.join("proc/spl/kstat/zfs/dmu_tx")).unwrap();
    let env = probe_environment_with(&root, &[], Path::new("/tank"), &zpool_output);
    let notes = env.notes.join("\n");
    assert!(
        notes.contains("echo 100 > /sys/module/zfs/parameters/zfs_txg_history"),
        "{notes}"
    );
    assert!(
        notes.contains("io pressure n/a: kernel without PSI (boot with psi=1)"),
        "{notes}"
    );
    assert!(notes.contains("zfs write throttle n/a"), "{notes}");
    // Missing sources are n/a in the sample, not errors.
    let mut reader = SignalReader::new(&root, &env);
    let s = read_sample(&mut reader, &Progress::default(), Instant::now());
    assert!(s.psi_io.is_none());
    let z = s.zfs.unwrap();
    assert!(z.txgs.is_empty());
    assert_eq!(z.dmu_tx, Default::default());
}

#[test]
fn sampler_thread_ticks_on_a_fixture_tree_and_stops() {
    let root = host_root();
    let env = probe_environment(&root, &[], Path::new("/tmp/cs-mnt"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let start = Instant::now();
    let mut h = spawn_sampler(
        root,
        &env,
        Arc::new(Progress::default()),
        Duration::from_millis(20),
        start,
        tx,
    );
    // Wait for ticks rather than for a fixed time: on a loaded CI machine the sampler thread can
    // be starved of a CPU for longer than the whole window, which says nothing about its timing.
    let mut ts = Vec::new();
    while ts.len() < 8 {
        match rx.try_recv() {
            Ok(s) => ts.push(s.t_ns),
            Err(_) if start.elapsed() > Duration::from_secs(20) => {
                panic!("only {} ticks in 20 s", ts.len())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    h.stop();
    let elapsed = start.elapsed();
    assert!(!h.is_running());
    while let Ok(s) = rx.try_recv() {
        ts.push(s.t_ns);
    }
    // Never more ticks than deadlines passed (missed deadlines are skipped, not caught up).
    let deadlines = (elapsed.as_millis() / 20) as usize + 1;
    assert!(
        ts.len() <= deadlines + 1,
        "{} ticks for {deadlines} deadlines in {elapsed:?}",
        ts.len()
    );
    // Fixed deadlines: tick k is at about k × 20 ms, never drifting by the read time.
    for (k, t) in ts.iter().enumerate() {
        let ideal = k as u64 * 20_000_000;
        assert!(
            t + 1_000_000 >= ideal,
            "tick {k} at {t} before its deadline"
        );
    }
    let st = h.stats();
    assert_eq!(st.ticks as usize, ts.len());
    assert!(st.cpu_max_ns > 0);
}

#[test]
fn dm_device_is_followed_through_its_slaves_to_the_disk() {
    // In the VM, dm-0 (253:0) is a dm-linear target over loop0p1, a partition of loop0.
    let root = zfs_root();
    assert_eq!(disks_for_dev(&root, 253, 0), vec![dev(7, 0, "loop0")]);
    let env = probe_environment_with(
        &root,
        &[PathBuf::from("/mnt/dm/src")],
        Path::new("/tank"),
        &zpool_output,
    );
    assert_eq!(env.source_devices, vec![dev(7, 0, "loop0")]);
    assert_eq!(
        env.dest_devices,
        vec![dev(254, 16, "vdb"), dev(254, 32, "vdc")]
    );
}

#[test]
fn anonymous_st_dev_with_a_device_source_uses_the_source() {
    // btrfs reports st_dev 0:N; its mountinfo source still names the partition.
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(host_root().path(), tmp.path());
    let root = SysRoot::new(tmp.path());
    let mi = root.join("proc/self/mountinfo");
    let mut text = std::fs::read_to_string(&mi).unwrap();
    text.push_str("99 22 0:77 / /data rw,relatime - btrfs /dev/loop0p1 rw,space_cache=v2\n");
    text.push_str("98 22 0:78 / /ram rw - tmpfs tmpfs rw\n");
    std::fs::write(&mi, text).unwrap();
    // The fixture has no dev/ directory, so the name comes from the path itself.
    let env = probe_environment(&root, &[PathBuf::from("/ram/x")], Path::new("/data/x"));
    assert_eq!(env.fs_type.as_deref(), Some("btrfs"));
    assert_eq!(env.dest_devices, vec![dev(7, 0, "loop0")]);
    assert!(env.source_devices.is_empty(), "tmpfs has no disk");
    let env = probe_environment(&root, &[], Path::new("/ram/x"));
    assert!(env.dest_devices.is_empty());
    assert!(
        env.notes
            .iter()
            .any(|n| n.contains("tmpfs has no block device")),
        "{:?}",
        env.notes
    );
}

/// A pool up for minutes holds zfs_txg_history rows (~14 KB, several kstat pages): the
/// sample must carry the newest txgs, not the oldest page's (issue: stale, invented txgs).
/// The fixture is real: scripts/zfs-capture-aged-txgs.sh in the lab VM, after 120 syncs.
#[test]
fn aged_pool_sample_carries_the_newest_txgs() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(zfs_root().path(), tmp.path());
    let aged = fixtures().join("zfs-2.1/aged-pool/txgs");
    let text = std::fs::read_to_string(&aged).unwrap();
    assert!(text.len() > 3 * 4096, "the capture spans several pages");
    std::fs::write(tmp.path().join("proc/spl/kstat/zfs/tank/txgs"), &text).unwrap();
    let root = SysRoot::new(tmp.path());
    let env = probe_environment_with(&root, &[], Path::new("/tank"), &zpool_output);
    let mut reader = SignalReader::new(&root, &env);
    let z = read_sample(&mut reader, &Progress::default(), Instant::now())
        .zfs
        .unwrap();
    let txgs: Vec<u64> = z.txgs.iter().map(|r| r.txg).collect();
    assert_eq!(txgs, (362..=369).collect::<Vec<u64>>());
}
