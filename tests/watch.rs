//! `copyscope watch` end to end on this machine: real writer processes followed by pid and
//! by command name, the intake counted from their /proc io counters, the file being written
//! shown with its position, and the recording replayed and exported.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

mod util;
use util::bin;

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A writer that starts after the watch: `sleep` first, then `exec` into dd under the same
/// pid (the shell itself writes nothing, so all the pid's wchar is dd's).
fn delayed_dd(out: &Path, mib: u32) -> std::process::Child {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "sleep 1; exec dd if=/dev/zero of='{}' bs=1M count={mib} status=none",
            out.display()
        ))
        .spawn()
        .expect("sh")
}

#[test]
fn watch_by_pid_counts_exactly_what_the_writer_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("watch.jsonl");
    let mut dd = delayed_dd(&dir.path().join("out"), 200);
    let out = Command::new(bin())
        .args([
            "watch",
            "--plain",
            "--until-idle",
            "1.5",
            "--duration",
            "60",
        ])
        .arg("--pid")
        .arg(dd.id().to_string())
        .arg("--record")
        .arg(&rec)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(dd.wait().unwrap().success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("copyscope watch: 210 MB written into"),
        "200 MiB written by dd, all of it after the watch started:\n{stdout}"
    );
    assert!(stdout.contains("intake from writers' files"), "{stdout}");

    // The recording says it was a watch, and of what.
    let text = std::fs::read_to_string(&rec).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["watch"]["intake"], "writers' files");
    assert_eq!(header["watch"]["pids"][0], dd.id());
    assert_eq!(header["sources"][0], format!("watch: pid {}", dd.id()));

    // Replay and export read it like a copy's.
    let replay = Command::new(bin())
        .args(["replay", "--plain"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(replay.status.success());
    let replayed = String::from_utf8_lossy(&replay.stdout);
    assert!(replayed.contains("210 MB"), "{replayed}");
    // Worded as a watch: intake and bytes written, no files and no flush of its own.
    assert!(replayed.contains("█ intake"), "{replayed}");
    assert!(replayed.contains("210 MB written"), "{replayed}");
    assert!(replayed.contains("durable: n/a (watch)"), "{replayed}");
    assert!(!replayed.contains(" files"), "{replayed}");
    let png = dir.path().join("watch.png");
    let export = Command::new(bin())
        .arg("export")
        .arg(&rec)
        .arg("--png")
        .arg(&png)
        .output()
        .unwrap();
    assert!(export.status.success());
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}

#[test]
fn watch_by_comm_finds_a_writer_that_starts_later_and_shows_its_file() {
    let dir = tempfile::tempdir().unwrap();
    // A command name no other process on the machine has: a shell under another name (a
    // symlink: the kernel names the task after the path it was exec'd by; a copy of the binary
    // failed with ETXTBSY when another test forked while the copy's write fd was open). It
    // holds the file open and its `head` children write into it at a slow, steady pace; their
    // counters join the shell's as it reaps them, and the file position is the shell's fd's.
    // Named after this test process too: two runs of the suite on one machine (a CI clone
    // beside a checkout) would otherwise follow each other's writer.
    let name = format!("csw{}", std::process::id());
    let writer = dir.path().join(&name);
    std::os::unix::fs::symlink("/bin/sh", &writer).unwrap();
    let target = dir.path().join("being-written");
    let mut w = Command::new(&writer)
        .arg("-c")
        .arg(format!(
            "sleep 1; exec 3>'{}'; i=0; while [ $i -lt 40 ]; do head -c 65536 /dev/zero >&3; \
             sleep 0.05; i=$((i+1)); done",
            target.display()
        ))
        // Not the test's stdout: a file the runner writes to would grow as the writer's own.
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let watch = Command::new(bin())
        .args(["watch", "--json", "--until-idle", "3", "--duration", "60"])
        .args(["--comm", &name])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(w.wait().unwrap().success());
    assert!(watch.status.success());
    let lines = json_lines(&watch.stdout);
    let progress: Vec<&Value> = lines.iter().filter(|v| v["type"] == "progress").collect();
    assert!(progress.iter().all(|p| p["phase"] == "watching"));
    let seen = progress
        .iter()
        .filter_map(|p| p["current"].as_object())
        .find(|c| c["path"] == target.to_str().unwrap())
        .unwrap_or_else(|| panic!("the file being written is shown: {lines:?}"));
    assert!(seen["done"].as_u64().unwrap() > 0);
    let last = progress.last().unwrap();
    // write_bytes counts the page-cache folios a write dirtied: a few pages more at most.
    let bytes = last["bytes_copied"].as_u64().unwrap();
    let summary = lines.iter().find(|v| v["type"] == "summary");
    assert!(
        (40 * 65536..40 * 65536 + (256 << 10)).contains(&bytes),
        "{last}\nwriters: {}",
        summary.map_or(Value::Null, |s| s["writers"].clone())
    );
}

#[test]
fn watch_refuses_what_it_cannot_watch() {
    let out = Command::new(bin())
        .args(["watch", "/nonexistent/path", "--plain", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file or directory"));
    let out = Command::new(bin())
        .args([
            "watch",
            ".",
            "--plain",
            "--duration",
            "1",
            "--pid",
            "4294967295",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such process"));
}

#[test]
fn watch_of_the_block_device_ends_after_its_duration() {
    // No writer followed: the intake is the device's sectors written, whatever writes them.
    let dir = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let out = Command::new(bin())
        .args(["watch", "--json", "--duration", "1.5"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("no intake to read") {
        eprintln!("skipped: the temporary directory is on neither ZFS nor a block device");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let secs = t.elapsed().as_secs_f64();
    assert!((1.4..10.0).contains(&secs), "{secs}");
    let lines = json_lines(&out.stdout);
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary", "{summary}");
}

/// The model at the end of a watch: writes that stopped and never resumed are the writer
/// being done (a note), where a copy's model would call the same tail a drop.
#[test]
fn a_stopped_tail_ends_a_watch_without_a_drop() {
    use copyscope::model::{EventKind, Model, ModelConfig};
    use copyscope::sample::Sample;
    let run = |cfg: ModelConfig| {
        let mut m = Model::new(cfg, Default::default());
        let mut bytes = 0;
        for i in 0..60u64 {
            // 3 s at 100 MB/s, then nothing for 3 s.
            if i < 30 {
                bytes += 10_000_000;
            }
            let mut s = Sample {
                t_ns: i * 100_000_000,
                ..Default::default()
            };
            s.engine.bytes_copied = bytes;
            m.apply(&s);
        }
        m.finish(5_900_000_000);
        m.events().to_vec()
    };
    let copy = run(ModelConfig::default());
    assert!(copy.iter().any(|e| matches!(e.kind, EventKind::Drop(_))));
    let watch = run(ModelConfig {
        stopped_tail_is_end: true,
        ..Default::default()
    });
    assert!(
        !watch.iter().any(|e| matches!(e.kind, EventKind::Drop(_))),
        "{watch:?}"
    );
    assert!(
        watch.iter().any(
            |e| matches!(&e.kind, EventKind::Note { text } if text.contains("writes stopped"))
        )
    );
}

/// `--pid` on a running `cp -r` of a tree: the file cp is writing now and how far it got, in
/// --plain and in --json. The tree's last entry is a FIFO copied with --copy-contents, fed at
/// a steady pace by this test: cp is really held by its source (a stalled sender), so the
/// file stays "current" long enough to be seen on any machine, without root or a slow disk.
#[test]
fn watch_by_pid_follows_a_cp_of_a_tree_to_its_current_file_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("tree");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    for (i, d) in ["a", "a/b", "."].iter().enumerate() {
        std::fs::write(src.join(d).join(format!("f{i}")), vec![7u8; 1 << 20]).unwrap();
    }
    let fifo = src.join("a/b/zz stream.bin");
    let ok = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    let dst = dir.path().join("copy");
    let run = |mode: &str| {
        let _ = std::fs::remove_dir_all(&dst);
        let mut cp = Command::new("cp")
            .args(["-r", "--copy-contents"])
            .arg(&src)
            .arg(&dst)
            .spawn()
            .expect("cp");
        // 40 chunks of 128 KiB, one every 0.1 s: over 4 s of cp holding "zz stream.bin", so
        // at least one plain line (every 2 s) falls inside it.
        let feeder = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec 3>'{}'; i=0; while [ $i -lt 40 ]; do head -c 131072 /dev/zero >&3; \
                 sleep 0.1; i=$((i+1)); done",
                fifo.display()
            ))
            .spawn()
            .unwrap();
        let out = Command::new(bin())
            .args(["watch", mode, "--interval", "100", "--duration", "30"])
            .args(["--until-idle", "1"])
            .arg("--pid")
            .arg(cp.id().to_string())
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(cp.wait().unwrap().success());
        let _ = { feeder }.wait();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let want = dst.join("a/b/zz stream.bin");

    let json = run("--json");
    let lines = json_lines(json.as_bytes());
    let seen: Vec<u64> = lines
        .iter()
        .filter(|v| v["type"] == "progress")
        .filter_map(|p| p["current"].as_object())
        .filter(|c| c["path"] == want.to_str().unwrap())
        .map(|c| c["done"].as_u64().unwrap())
        .collect();
    assert!(seen.len() >= 3, "cp's current file, several times: {json}");
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]) && seen.last() > seen.first(),
        "its position grows as cp writes: {seen:?}"
    );
    assert!(*seen.last().unwrap() <= 40 * 131_072);

    let plain = run("--plain");
    let quoted = format!("writing '{}' at ", want.display());
    let line = plain
        .lines()
        .find(|l| l.contains(&quoted))
        .unwrap_or_else(|| panic!("{quoted} in the plain lines:\n{plain}"));
    assert!(line.contains("(writers' files)"), "{line}");
}
