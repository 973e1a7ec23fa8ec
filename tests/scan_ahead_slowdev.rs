//! The scan runs ahead on a real slow disk: a 20 000-file tree copied onto the 40 MB/s lab
//! disk (tests/slowdev/slowdev.sh, dirty limits at their defaults) knows its totals within
//! 2 s, while the copy itself is still far from done. The copy is cancelled once the totals
//! are known, so the test takes seconds.
//!
//! Needs root, /dev/fuse, loop devices, qemu-storage-daemon and mkfs.ext4 (.ci/run installs
//! the packages); where the machine cannot provide them the test says why and skips.

mod slowdev;
mod tmux;

use std::sync::Arc;
use std::time::{Duration, Instant};

use copyscope::copy::{
    Control, CopyJob, CopyOptions, CopyRequest, EngineEvent, EventSender, Pair, Progress,
    spawn_engine,
};
use copyscope::exit::ExitStatus;

const FILES: usize = 20_000;
const SIZE: usize = 16 << 10;

#[test]
fn a_20000_file_tree_onto_the_slow_disk_knows_its_total_within_2_s() {
    let work = tempfile::Builder::new()
        .prefix("copyscope-slowscan-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let disk = match slowdev::slow_disk(&work.path().join("disk"), &[]) {
        Ok(d) => d,
        Err(why) => {
            eprintln!(
                "SKIPPED a_20000_file_tree_onto_the_slow_disk_knows_its_total_within_2_s: {why}"
            );
            return;
        }
    };
    // 20 000 files of 16 KiB (328 MB) in 200 directories: 8 s of the disk's 40 MB/s.
    let src = work.path().join("tree");
    let body = vec![0x5au8; SIZE];
    for d in 0..200 {
        let dir = src.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES / 200 {
            std::fs::write(dir.join(format!("f{f:03}")), &body).unwrap();
        }
    }
    // Cold metadata, as a tree the user has not just written would be.
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "2");

    let job = CopyJob::plan(&CopyRequest {
        pairs: vec![Pair {
            source: src.clone(),
            dest: disk.mnt.join("tree"),
        }],
        options: CopyOptions::default(),
    })
    .unwrap();
    let progress = Arc::new(Progress::default());
    let control = Arc::new(Control::default());
    let (tx, mut rx) = EventSender::channel(std::time::Instant::now());
    let start = Instant::now();
    let h = spawn_engine(job, progress.clone(), control.clone(), tx, None);
    let mut scan_done_at = None;
    let mut scan_event = None;
    while start.elapsed() < Duration::from_secs(30) {
        while let Ok(ev) = rx.try_recv() {
            if let EngineEvent::ScanDone { files, bytes } = ev.event {
                scan_event = Some((files, bytes));
            }
        }
        if scan_done_at.is_none() && progress.snapshot().scan_done {
            scan_done_at = Some(start.elapsed());
        }
        if scan_done_at.is_some() && scan_event.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let snap = progress.snapshot();
    control.cancel();
    let out = h.join().unwrap();
    let took = scan_done_at.expect("the scan completed");
    eprintln!(
        "totals known after {:.0} ms: {} files, {} bytes; {} bytes copied by then",
        took.as_secs_f64() * 1e3,
        snap.files_total,
        snap.bytes_total,
        snap.bytes_copied
    );
    assert!(took <= Duration::from_secs(2), "totals took {took:?}");
    assert_eq!(
        scan_event,
        Some((FILES as u64, (FILES * SIZE) as u64)),
        "the ScanDone event carries the totals"
    );
    assert!(
        snap.bytes_copied < snap.bytes_total / 2,
        "the copy was not the one holding the scan back: {snap:?}"
    );
    assert_eq!(out.status, ExitStatus::Cancelled);
    drop(disk);
}
