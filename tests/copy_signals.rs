//! Cancel by signal mid-copy: SIGINT, SIGTERM, SIGHUP and SIGQUIT end with exit 130,
//! temporaries removed and no truncated file under a real name; SIGKILL leaves only
//! temp-named files.
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

/// A tree copy with `-a` (every directory made 0700 and given its mode, owner and times at
/// the end) cancelled by `sig` mid-way: the exit code, the output, and each directory made
/// (relative path → mode).
fn tree_cancelled_by(sig: Signal) -> (Option<i32>, String, Vec<(std::path::PathBuf, u32)>) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("a_done/small"), b"small");
    for i in 0..8 {
        write(&src.join(format!("b_busy/f{i}")), &data(512 << 10, i));
    }
    write(&src.join("c_never/x"), b"x");
    for (p, m) in [
        ("", 0o755),
        ("a_done", 0o751),
        ("b_busy", 0o755),
        ("c_never", 0o775),
    ] {
        fs::set_permissions(src.join(p), fs::Permissions::from_mode(m)).unwrap();
    }
    let dst = t.path().join("dst");
    let args = [
        "-a".as_ref(),
        "-j".as_ref(),
        "1".as_ref(),
        src.as_os_str(),
        dst.as_os_str(),
    ];
    let mut r = start_json(&args, 1 << 20);
    r.wait_for(|v| v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) > 600_000);
    r.signal(sig);
    let (code, out, err) = r.finish();
    assert!(
        temp_leftovers(&dst).is_empty(),
        "{:?}",
        temp_leftovers(&dst)
    );
    let mut dirs = Vec::new();
    for e in walkdir::WalkDir::new(&dst).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_dir() {
            let rel = e.path().strip_prefix(&dst).unwrap().to_path_buf();
            let mode = e.metadata().unwrap().mode() & 0o7777;
            assert_eq!(
                mode,
                fs::metadata(src.join(&rel)).unwrap().mode() & 0o7777,
                "{rel:?}\n{out}"
            );
            dirs.push((rel, mode));
        }
    }
    // Whole files only under real names.
    for e in walkdir::WalkDir::new(&dst) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(&dst).unwrap();
            assert_eq!(
                fs::read(e.path()).unwrap(),
                fs::read(src.join(rel)).unwrap(),
                "{rel:?}"
            );
        }
    }
    (code, format!("{out}\n{err}"), dirs)
}

/// SIGQUIT ends a copy as SIGTERM does: exit 130, "cancelled", temporaries removed, and every
/// directory made given its mode (its default, a core dump, exited 131 with 0700 directories).
#[test]
fn sigquit_finishes_the_tree_as_sigterm_does() {
    let (term_code, term_out, term_dirs) = tree_cancelled_by(Signal::TERM);
    let (quit_code, quit_out, quit_dirs) = tree_cancelled_by(Signal::QUIT);
    assert_eq!(term_code, Some(130), "{term_out}");
    assert_eq!(quit_code, Some(130), "{quit_out}");
    assert!(quit_out.contains("\"status\":\"cancelled\""), "{quit_out}");
    for dirs in [&term_dirs, &quit_dirs] {
        assert!(
            dirs.len() >= 3,
            "the root and two directories were made: {dirs:?}"
        );
        assert!(dirs.iter().all(|(_, m)| *m != 0o700), "{dirs:?}");
    }
}
