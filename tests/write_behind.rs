//! Write-behind on a nearly full destination is submitted by a child process (the binary run
//! with its hidden argument), so no copyscope thread waits in the block layer's queue: the
//! child's protocol, and a real copy that needs it.

mod util;

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use copyscope::copy::writeback::CHILD_ARG;
use util::{Mount, bin, copyscope, data, is_root, os, text};

/// The child reads "OFFSET LENGTH" lines, submits each range of the file it holds as its
/// stderr, answers one byte per line, ignores lines it cannot read, and ends with its input.
#[test]
fn the_child_answers_each_piece_and_ends_with_its_input() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("dst");
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    let mut child = Command::new(bin())
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::OpenOptions::new().write(true).open(&path).unwrap())
        .spawn()
        .unwrap();
    let mut requests = child.stdin.take().unwrap();
    let mut acks = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    writeln!(requests, "0 524288").unwrap();
    acks.read_exact(&mut one).unwrap();
    assert_eq!(&one, b"k");
    writeln!(requests, "not a request\n524288 524288").unwrap();
    acks.read_exact(&mut one).unwrap();
    assert_eq!(&one, b"k");
    drop(requests);
    let mut rest = Vec::new();
    acks.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "one answer per piece: {rest:?}");
    assert!(child.wait().unwrap().success());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        vec![7u8; 1 << 20],
        "the file is untouched"
    );
}

/// 40 MiB onto a 64 MiB file system: past a third of it the copy hands its writes to the
/// child. The copy is whole, and no child outlives it.
#[test]
fn a_copy_onto_a_nearly_full_file_system_is_whole_and_leaves_no_child() {
    if !is_root() {
        eprintln!("SKIPPED a_copy_onto_a_nearly_full_file_system...: mounting a tmpfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let Some(m) = Mount::tmpfs(&t.path().join("small"), "size=64m") else {
        eprintln!("SKIPPED a_copy_onto_a_nearly_full_file_system...: cannot mount a tmpfs");
        return;
    };
    let src = t.path().join("src.bin");
    let data = data(40 << 20, 7);
    std::fs::write(&src, &data).unwrap();
    let dst = m.0.join("copy.bin");
    let out = copyscope(&[
        os("--no-sync").as_os_str(),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::read(&dst).unwrap() == data, "the copy is whole");
    let children: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(CHILD_ARG))
        .collect();
    assert!(children.is_empty(), "children left: {children:?}");
}
