//! Recordings are bounded inputs: a line over `MAX_LINE_BYTES` is refused with an error that
//! names it, after reading no more than the limit (a 2 GiB line took 2 GiB of memory), and a
//! recording whose last sample says 2^64 ns draws a picture with a handful of time ticks
//! (one a day took minutes and gigabytes). Each through the real binary under an address
//! space limit the old reads and drawings could not stay within.

use crate::util;

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use copyscope::report::recording::{MAX_LINE_BYTES, RecordingCursor, RecordingError};
use util::{bin, run_timeout, text};

/// A real recording (the ZFS lab's 3000 MiB copy).
fn real_recording() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/zfs-40mbps-zero.jsonl")
}

/// The binary with `args` in an address space of 1 GB: room for any honest recording's
/// reading and drawing, not for a 2 GiB line nor 200 000 tick labels.
fn bounded(args: &[&std::ffi::OsStr]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("ulimit -v 1000000 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args);
    c
}

/// The real recording's header, then a line of 2 GiB (a sparse file: no disk, no time to
/// write), then the rest of the recording.
fn recording_with_a_2gib_line(dir: &Path) -> PathBuf {
    let real = fs::read_to_string(real_recording()).unwrap();
    let (header, rest) = real.split_once('\n').unwrap();
    let p = dir.join("long-line.jsonl");
    let mut f = fs::File::create(&p).unwrap();
    writeln!(f, "{header}").unwrap();
    f.write_all(br#"{"type":"note","text":""#).unwrap();
    f.seek(SeekFrom::Current(2 << 30)).unwrap();
    f.write_all(b"\"}\n").unwrap();
    f.write_all(rest.as_bytes()).unwrap();
    p
}

#[test]
fn a_line_over_the_limit_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording_with_a_2gib_line(dir.path());
    let want = format!(
        "line 2: longer than {} MiB, the most a recording's line may be",
        MAX_LINE_BYTES >> 20
    );
    let png = dir.path().join("out.png");
    let out = run_timeout(
        bounded(&[
            "export".as_ref(),
            rec.as_os_str(),
            "--png".as_ref(),
            png.as_os_str(),
        ]),
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("reading recording '{}': {want}", rec.display())),
        "{}",
        text(&out)
    );
    assert!(!png.exists(), "no picture of a refused recording");
    let out = run_timeout(
        bounded(&["replay".as_ref(), "--plain".as_ref(), rec.as_os_str()]),
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "cannot read recording '{}': {want}",
            rec.display()
        )),
        "{}",
        text(&out)
    );
    assert!(out.stdout.is_empty(), "{}", text(&out));
}

/// The interactive replay's cursor: a long header refuses the file, a long line later ends
/// the replay there with the reason.
#[test]
fn the_replay_cursor_refuses_a_line_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.jsonl");
    fs::write(&first, vec![b' '; MAX_LINE_BYTES + 1]).unwrap();
    match RecordingCursor::open(&first) {
        Err(RecordingError::Parse { line: 1, message }) => {
            assert!(message.starts_with("longer than 16 MiB"), "{message}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a 16 MiB first line is refused"),
    }
    let rec = recording_with_a_2gib_line(dir.path());
    let (mut cursor, _, _) = RecordingCursor::open(&rec).unwrap();
    assert!(cursor.next_item().is_none(), "nothing after the long line");
    let why = cursor.take_error().expect("the reason");
    assert!(why.starts_with("line 2: longer than 16 MiB"), "{why}");
    // Exactly the limit is still a line (blank, so skipped).
    let at = dir.path().join("at.jsonl");
    let real = fs::read_to_string(real_recording()).unwrap();
    let (header, rest) = real.split_once('\n').unwrap();
    let mut body = format!("{header}\n").into_bytes();
    body.extend(vec![b' '; MAX_LINE_BYTES - 1]);
    body.push(b'\n');
    body.extend(rest.as_bytes());
    fs::write(&at, body).unwrap();
    let (mut cursor, _, _) = RecordingCursor::open(&at).unwrap();
    assert!(cursor.next_item().is_some());
    while cursor.next_item().is_some() {}
    assert_eq!(cursor.take_error(), None);
}

/// The real recording with its last sample moved to 2^64 - 1 ns.
fn recording_spanning_2_pow_64_ns(dir: &Path) -> PathBuf {
    let real = fs::read_to_string(real_recording()).unwrap();
    let mut lines: Vec<String> = real.lines().map(str::to_string).collect();
    let last = lines
        .iter()
        .rposition(|l| l.starts_with(r#"{"type":"sample","t_ns":"#))
        .unwrap();
    let (_, after) = lines[last].split_once(r#","engine":"#).unwrap();
    lines[last] = format!(r#"{{"type":"sample","t_ns":{},"engine":{after}"#, u64::MAX);
    let p = dir.join("span.jsonl");
    fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

#[test]
fn a_recording_spanning_2_pow_64_ns_draws_a_handful_of_ticks() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording_spanning_2_pow_64_ns(dir.path());
    let (png, svg, txt) = (
        dir.path().join("out.png"),
        dir.path().join("out.svg"),
        dir.path().join("out.txt"),
    );
    let out = run_timeout(
        bounded(&[
            "export".as_ref(),
            rec.as_os_str(),
            "--png".as_ref(),
            png.as_os_str(),
            "--svg".as_ref(),
            svg.as_os_str(),
            "--text".as_ref(),
            txt.as_os_str(),
        ]),
        Duration::from_secs(300),
    );
    assert!(out.status.success(), "{}", text(&out));
    let picture = fs::read_to_string(&svg).unwrap();
    // The time axis' labels end in "h" at this span (hours since the start).
    let doc = roxmltree::Document::parse(&picture).unwrap();
    let ticks = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some("middle"))
        .filter_map(|n| n.text())
        .filter(|t| t.ends_with('h') && t[..t.len() - 1].bytes().all(|b| b.is_ascii_digit()))
        .count();
    assert!((3..=20).contains(&ticks), "{ticks} time ticks");
    assert!(picture.len() < 1 << 20, "{} bytes of SVG", picture.len());
    let png_bytes = fs::read(&png).unwrap();
    assert!(png_bytes.starts_with(b"\x89PNG"));
    let chart = fs::read_to_string(&txt).unwrap();
    assert!(chart.contains("h"), "{chart}");
}
