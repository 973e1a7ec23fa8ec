//! Per-file errors and fatal destination errors: unreadable source (others copied, exit 1),
//! read-only destination, disk full (small tmpfs), files that vanish or grow mid-copy.
//! Root-only parts (mounts, dropping privileges) print why they are skipped otherwise.

use crate::util;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use util::*;

#[test]
fn unreadable_source_file_fails_alone() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path();
    let src = base.join("src");
    write(&src.join("a"), b"a");
    write(&src.join("secret"), b"no");
    write(&src.join("z"), b"z");
    fs::set_permissions(src.join("secret"), fs::Permissions::from_mode(0o000)).unwrap();
    let dst = base.join("dst");
    let mut c = unprivileged_cmd(base, true);
    c.arg("--plain").arg(&src).arg(&dst);
    let o = run_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("secret") && err.contains("Permission denied"),
        "{err}"
    );
    assert_eq!(fs::read(dst.join("a")).unwrap(), b"a");
    assert_eq!(fs::read(dst.join("z")).unwrap(), b"z");
    assert!(!dst.join("secret").exists());
    assert!(temp_leftovers(&dst).is_empty());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("failed (1)"), "{out}");
}

/// cp's rule on a full disk: the file that does not fit fails, named, its unfinished copy
/// removed, and the copy goes on with the files that still fit (exit 1).
#[test]
fn disk_full_fails_the_file_and_copies_what_still_fits() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("a_small"), &data(100_000, 1));
    write(&src.join("b_big"), &data(5 << 20, 2));
    write(&src.join("c_more"), &data(100_000, 3));
    let mnt = t.path().join("m");
    let _m = Mount::tmpfs(&mnt, "size=2m").expect("mount tmpfs");
    let dst = mnt.join("dst");
    let o = copyscope(&[
        OsStr::new("--jobs"),
        OsStr::new("1"),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let all = text(&o);
    assert!(
        all.contains("b_big") && all.contains("No space left on device"),
        "the file that did not fit is named: {all}"
    );
    assert!(!all.contains("destination is full"), "{all}");
    assert!(
        !dst.join("b_big").exists(),
        "no truncated file under a real name"
    );
    assert!(
        temp_leftovers(&mnt).is_empty(),
        "{:?}",
        temp_leftovers(&mnt)
    );
    assert_eq!(fs::read(dst.join("a_small")).unwrap(), data(100_000, 1));
    assert_eq!(fs::read(dst.join("c_more")).unwrap(), data(100_000, 3));
}

/// A destination with no room for anything: the first failure stops the copy with one
/// clear message (exit 2) instead of one failure per remaining file.
#[test]
fn disk_full_for_everything_stops_cleanly() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    for i in 0..50 {
        write(&src.join(format!("f{i:02}")), &data(200_000, i));
    }
    let mnt = t.path().join("m");
    let _m = Mount::tmpfs(&mnt, "size=2m").expect("mount tmpfs");
    // Fill it, but for a few kilobytes.
    let filler = mnt.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    let chunk = vec![1u8; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    let dst = mnt.join("dst");
    let o = copyscope(&[
        OsStr::new("--jobs"),
        OsStr::new("1"),
        OsStr::new("--no-sync"),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let all = text(&o);
    assert!(all.contains("destination is full"), "{all}");
    assert!(
        all.matches("No space left on device").count() < 10,
        "stopped, not one failure per file: {all}"
    );
    assert!(
        temp_leftovers(&mnt).is_empty(),
        "{:?}",
        temp_leftovers(&mnt)
    );
}

#[test]
fn read_only_destination() {
    if !is_root() {
        eprintln!("skipped: mounting a read-only tmpfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("f"), b"data");
    let mnt = t.path().join("m");
    let _m = Mount::tmpfs(&mnt, "size=1m").expect("mount tmpfs");
    fs::create_dir(mnt.join("d")).unwrap();
    assert!(
        Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&mnt)
            .status()
            .unwrap()
            .success()
    );
    let o = copyscope(&[src.join("f").as_os_str(), mnt.join("d").as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("read-only"), "{}", text(&o));
    let o = copyscope(&[src.as_os_str(), mnt.join("d").as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(fs::read(src.join("f")).unwrap(), b"data");
}

/// Issue 8 item 8: a file that changes while it is copied is a failure (exit 1) and its
/// copy never gets the real name (a copy matching neither the old nor the new source).
#[test]
fn files_that_vanish_or_grow_mid_copy_are_reported() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("a_big"), &data(2 << 20, 1));
    write(&src.join("b_gone"), b"soon gone");
    write(&src.join("c_stays"), b"stays");
    let dst = t.path().join("dst");
    let mut r = start_json(
        &[
            OsStr::new("--jobs"),
            OsStr::new("1"),
            src.as_os_str(),
            dst.as_os_str(),
        ],
        1 << 20,
    );
    r.wait_for(|v| {
        v["type"] == "progress"
            && v["bytes_copied"].as_u64().unwrap_or(0) > 0
            && v["scan_done"] == true
    });
    fs::remove_file(src.join("b_gone")).unwrap();
    {
        use std::io::Write;
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(src.join("a_big"))
            .unwrap();
        f.write_all(&data(1000, 5)).unwrap();
    }
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(out.contains("vanished"), "{out}");
    assert!(
        out.contains("\"kind\":\"file_failed\"")
            && out.contains("changed while it was copied (grew from 2097152 to 2098152 bytes)"),
        "{out}"
    );
    assert!(!dst.join("a_big").exists(), "never under its real name");
    assert!(
        temp_leftovers(&dst).is_empty(),
        "{:?}",
        temp_leftovers(&dst)
    );
    assert_eq!(fs::read(dst.join("c_stays")).unwrap(), b"stays");
    assert!(!dst.join("b_gone").exists());
}
