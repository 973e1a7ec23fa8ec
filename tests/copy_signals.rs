//! Cancel by signal mid-copy: SIGINT, SIGTERM and SIGHUP end with exit 130, temporaries
//! removed and no truncated file under a real name; SIGKILL leaves only temp-named files.
//! The copy is slowed with the test-only COPYSCOPE_TEST_THROTTLE_BPS hook.

mod util;

use std::fs;

use rustix::process::Signal;
use util::*;

fn tree(root: &std::path::Path) {
    write(&root.join("a_small"), &data(1000, 1));
    write(&root.join("b_big"), &data(6 << 20, 2));
    write(&root.join("c_after"), &data(1000, 3));
}

fn cancelled_by(sig: Signal) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    tree(&src);
    let dst = t.path().join("dst");
    let mut r = start_json(&[src.as_os_str(), dst.as_os_str()], 2 << 20);
    r.wait_for(|v| v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) > 100_000);
    r.signal(sig);
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(out.contains("\"status\":\"cancelled\""), "{out}");
    assert!(
        temp_leftovers(&dst).is_empty(),
        "temporaries left: {:?}",
        temp_leftovers(&dst)
    );
    // Complete files only: small files (copied in parallel) may be there, whole; the big one is not.
    if let Ok(b) = fs::read(dst.join("a_small")) {
        assert_eq!(b, data(1000, 1));
    }
    if let Ok(b) = fs::read(dst.join("c_after")) {
        assert_eq!(b, data(1000, 3));
    }
    assert!(
        !dst.join("b_big").exists(),
        "truncated file under its real name"
    );
    // The source is untouched.
    assert_eq!(fs::read(src.join("b_big")).unwrap(), data(6 << 20, 2));
}

#[test]
fn sigint_mid_copy() {
    cancelled_by(Signal::INT);
}

#[test]
fn sigterm_mid_copy() {
    cancelled_by(Signal::TERM);
}

#[test]
fn sighup_mid_copy() {
    cancelled_by(Signal::HUP);
}

/// Killed mid-file, into a new directory: the file being written was unnamed (`O_TMPFILE`),
/// so nothing of it exists under any name, and every name present holds a whole file.
#[test]
fn sigkill_leaves_no_partial_file_under_any_name() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    tree(&src);
    let dst = t.path().join("dst");
    let mut r = start_json(&[src.as_os_str(), dst.as_os_str()], 2 << 20);
    r.wait_for(|v| v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) > 100_000);
    r.signal(Signal::KILL);
    let (code, _, _) = r.finish();
    assert_eq!(code, None, "killed by a signal");
    assert!(
        !dst.join("b_big").exists(),
        "truncated file under its real name"
    );
    assert!(
        temp_leftovers(&dst).is_empty(),
        "{:?}",
        temp_leftovers(&dst)
    );
    for e in fs::read_dir(&dst).unwrap() {
        let e = e.unwrap();
        let n = e.file_name().to_string_lossy().into_owned();
        let want = match n.as_str() {
            "a_small" => data(1000, 1),
            "c_after" => data(1000, 3),
            _ => panic!("unexpected {n}"),
        };
        assert_eq!(fs::read(e.path()).unwrap(), want, "{n} is whole");
    }
}

/// Killed mid-file over an existing file: the replacement is written under a temporary name
/// (to be renamed over the old file), so the old file stays whole under its name and only the
/// marked temporary is left behind.
#[test]
fn sigkill_over_an_existing_file_keeps_it_whole() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    tree(&src);
    let dst = t.path().join("dst");
    fs::create_dir(&dst).unwrap();
    write(&dst.join("b_big"), b"the old b_big");
    let mut contents = src.clone().into_os_string();
    contents.push("/.");
    let mut r = start_json(&[contents.as_os_str(), dst.as_os_str()], 2 << 20);
    r.wait_for(|v| v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) > 100_000);
    r.signal(Signal::KILL);
    let (code, _, _) = r.finish();
    assert_eq!(code, None, "killed by a signal");
    assert_eq!(fs::read(dst.join("b_big")).unwrap(), b"the old b_big");
    let leftovers: Vec<String> = temp_leftovers(&dst)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        leftovers
            .iter()
            .any(|n| n.starts_with(".b_big.copyscope-tmp-")),
        "{leftovers:?}"
    );
}

#[test]
fn throttled_copy_without_a_signal_completes() {
    // A single small copy with the throttle: exits 0 and the file is whole.
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("f");
    write(&src, &data(300_000, 9));
    let r = start_json(&[src.as_os_str(), t.path().join("g").as_os_str()], 1 << 20);
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(fs::read(t.path().join("g")).unwrap(), data(300_000, 9));
}
