//! Refusals happen before anything is written: into itself, same file, dir onto file,
//! several sources onto a non-directory, missing operands. Exit 2, destination untouched.

use crate::util;

use std::ffi::OsStr;
use std::fs;

use util::*;

fn assert_refused(args: &[&OsStr], needle: &str) {
    // cp: a same-file copy is a failed file (exit 1); the other refusals are usage errors.
    let code = if needle == "same file" { 1 } else { 2 };
    let o = copyscope(args);
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
}

#[test]
fn directory_into_itself() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("d");
    write(&d.join("f"), b"x");
    let before = snapshot(&d);
    assert_refused(&[d.as_os_str(), d.join("sub").as_os_str()], "into itself");
    // d onto d: DEST exists, so this means d/d, inside the source.
    assert_refused(&[d.as_os_str(), d.as_os_str()], "into itself");
    let o = copyscope(&[d.as_os_str(), d.join("..").join("d").join("x").as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(before, snapshot(&d), "nothing was written");
}

#[test]
fn same_file_including_through_a_hard_link_and_into_its_own_dir() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("f");
    write(&f, b"precious");
    fs::hard_link(&f, t.path().join("g")).unwrap();
    assert_refused(&[f.as_os_str(), f.as_os_str()], "same file");
    assert_refused(
        &[f.as_os_str(), t.path().join("g").as_os_str()],
        "same file",
    );
    assert_refused(&[f.as_os_str(), t.path().as_os_str()], "same file");
    assert_eq!(fs::read(&f).unwrap(), b"precious");
}

#[test]
fn directory_onto_a_file_and_file_onto_a_directory() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("d");
    write(&d.join("f"), b"x");
    let f = t.path().join("file");
    write(&f, b"keep");
    assert_refused(
        &[d.as_os_str(), f.as_os_str()],
        "cannot overwrite non-directory",
    );
    assert_eq!(fs::read(&f).unwrap(), b"keep");
    let e = t.path().join("e");
    fs::create_dir(&e).unwrap();
    assert_refused(
        &[OsStr::new("-T"), f.as_os_str(), e.as_os_str()],
        "cannot overwrite directory",
    );
}

#[test]
fn several_sources_onto_a_non_directory() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let b = t.path().join("b");
    write(&a, b"a");
    write(&b, b"b");
    let c = t.path().join("c");
    write(&c, b"c");
    assert_refused(
        &[a.as_os_str(), b.as_os_str(), c.as_os_str()],
        "is not a directory",
    );
    assert_eq!(fs::read(&c).unwrap(), b"c");
    let missing = t.path().join("missing");
    assert_refused(
        &[a.as_os_str(), b.as_os_str(), missing.as_os_str()],
        "is not a directory",
    );
    assert!(!missing.exists());
}

#[test]
fn missing_source_and_operands() {
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().join("d");
    // As cp: reported, and exit 1 (a failed file, not a usage error); nothing is made.
    let o = copyscope(&[t.path().join("nope").as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot stat"));
    assert!(!dst.exists());
    assert_refused(&[OsStr::new("only")], "missing destination");
    let x = t.path().join("x");
    write(&x, b"x");
    assert_refused(
        &[x.as_os_str(), t.path().join("no/such/dir/y").as_os_str()],
        "does not exist",
    );
    assert!(!t.path().join("no").exists());
}
