//! End-to-end over a real SSH session: sshd on 127.0.0.1 with throwaway keys, a copy run through
//! `ssh -tt`, the ssh client killed mid-copy (the SSH connection drops). copyscope must end,
//! leave no truncated file under a real name and remove its temporary files.
//! Needs root (sshd) — CI runs as root and .ci/run installs openssh-server.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod sshd;
mod util;

const BIN: &str = env!("CARGO_BIN_EXE_copyscope");

fn temps_and_files(dst: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut temps, mut files) = (Vec::new(), Vec::new());
    for e in walkdir::WalkDir::new(dst).into_iter().flatten() {
        if e.file_type().is_file() {
            if e.file_name().to_string_lossy().contains("copyscope-tmp") {
                temps.push(e.path().to_path_buf());
            } else {
                files.push(e.path().to_path_buf());
            }
        }
    }
    (temps, files)
}

/// Some process holds a file under `dst` open: the copy is writing there. A new file may have
/// no name until it is complete (O_TMPFILE: "dst/#1234 (deleted)"), a replacement is a named
/// temporary; either shows as an open descriptor.
fn writing_into(dst: &Path) -> bool {
    let under = format!("{}/", dst.display());
    fs::read_dir("/proc").unwrap().flatten().any(|p| {
        fs::read_dir(p.path().join("fd")).is_ok_and(|rd| {
            rd.flatten()
                .filter_map(|f| fs::read_link(f.path()).ok())
                .any(|t| t.to_string_lossy().starts_with(&under))
        })
    })
}

/// A live copyscope process (argv[0] is the binary) whose arguments contain `marker`.
fn copyscope_running(marker: &str) -> bool {
    fs::read_dir("/proc").unwrap().flatten().any(|p| {
        fs::read(p.path().join("cmdline"))
            .map(|c| {
                let mut args = c
                    .split(|b| *b == 0)
                    .map(|a| String::from_utf8_lossy(a).into_owned());
                let argv0 = args.next().unwrap_or_default();
                argv0.ends_with("/copyscope") && args.any(|a| a.contains(marker))
            })
            .unwrap_or(false)
    })
}

/// Every live process (not a zombie) whose command line or open descriptors mention `marker`:
/// pid and command line.
fn leftovers(marker: &str) -> Vec<(String, String)> {
    let mut left = Vec::new();
    for p in fs::read_dir("/proc").unwrap().flatten() {
        let name = p.file_name().to_string_lossy().into_owned();
        if name.parse::<u32>().is_err() || name == std::process::id().to_string() {
            continue;
        }
        let stat = fs::read_to_string(p.path().join("stat")).unwrap_or_default();
        if stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            == Some("Z")
        {
            continue;
        }
        let cmd = fs::read(p.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let fds = fs::read_dir(p.path().join("fd"))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|f| fs::read_link(f.path()).ok())
                    .any(|t| t.to_string_lossy().contains(marker))
            })
            .unwrap_or(false);
        if cmd.contains(marker) || fds {
            left.push((name, cmd));
        }
    }
    left
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario: the SSH session, the drop and every check on what it left, in order"
)]
fn ssh_drop_mid_copy_loses_nothing() {
    if !rustix::process::geteuid().is_root() {
        panic!("this test starts sshd and needs root (CI runs as root)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let sshd = sshd::start(sshd::binary().expect("sshd installed"), tmp.path());
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst-dropped");
    fs::create_dir_all(&src).unwrap();
    let data: Vec<u8> = (0..48u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    fs::write(src.join("big.bin"), &data).unwrap();
    for i in 0..10 {
        fs::write(src.join(format!("small{i}")), vec![i as u8; 5000]).unwrap();
    }
    let remote = format!(
        "cd {} && COPYSCOPE_TEST_THROTTLE_BPS=4000000 TERM=xterm {BIN} {} {}",
        tmp.path().display(),
        src.display(),
        dst.display()
    );
    let mut ssh = Command::new("ssh")
        .args(["-tt", "-p", &sshd.port.to_string(), "-i"])
        .arg(sshd.dir.join("client_key"))
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "BatchMode=yes",
        ])
        .arg("root@127.0.0.1")
        .arg(&remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssh runs");

    // Wait until the big file is being written, then drop the connection.
    let start = Instant::now();
    loop {
        if writing_into(&dst) {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = ssh.kill();
            let out = ssh.wait_with_output().unwrap();
            panic!(
                "copy never started over ssh: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(700));
    ssh.kill().unwrap(); // SIGKILL to the client: the connection just vanishes
    let _ = ssh.wait();

    let marker = "dst-dropped";
    assert!(
        copyscope_running(marker) || dst.exists(),
        "copyscope was started"
    );
    let start = Instant::now();
    while copyscope_running(marker) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "copyscope still running 20 s after the SSH connection dropped"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (temps, files) = temps_and_files(&dst);
    assert!(temps.is_empty(), "temporary files left: {temps:?}");
    for f in files {
        let rel = f.strip_prefix(&dst).unwrap();
        let a = fs::read(src.join(rel)).unwrap();
        let b = fs::read(&f).unwrap();
        assert!(
            a == b,
            "{} truncated under its real name ({} of {} bytes)",
            rel.display(),
            b.len(),
            a.len()
        );
    }
    assert!(!dst.join("big.bin").exists() || fs::read(dst.join("big.bin")).unwrap() == data);
}

/// Issue 11: a dropped SSH session with input streaming at the moment of the drop (stdin from
/// /dev/zero, so the terminal's input never pauses) could leave copyscope spinning on
/// `read() = 0` forever. Twenty drops in a row: each time copyscope ends within 10 s, removes
/// its temporary, and leaves no process behind — none whose command line or open descriptors
/// name the run's destination (copyscope, the remote shell, a `cat` holding the removed
/// temporary).
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario: the SSH sessions, the drops and every check on what they left, in order"
)]
fn ssh_drop_with_streaming_input_twenty_times() {
    if !rustix::process::geteuid().is_root() {
        panic!("this test starts sshd and needs root (CI runs as root)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let sshd = sshd::start(sshd::binary().expect("sshd installed"), tmp.path());
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    let data: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i.wrapping_mul(40503) >> 7) as u8)
        .collect();
    fs::write(src.join("big.bin"), &data).unwrap();
    for round in 0..20 {
        let marker = format!("dst-hup-{round}");
        let dst = tmp.path().join(&marker);
        let remote = format!(
            "COPYSCOPE_TEST_THROTTLE_BPS=2000000 TERM=xterm {BIN} {} {}",
            src.display(),
            dst.display()
        );
        let mut ssh = Command::new("ssh")
            .args(["-tt", "-p", &sshd.port.to_string(), "-i"])
            .arg(sshd.dir.join("client_key"))
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "BatchMode=yes",
            ])
            .arg("root@127.0.0.1")
            .arg(&remote)
            .stdin(Stdio::from(fs::File::open("/dev/zero").unwrap()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ssh runs");
        let start = Instant::now();
        while !writing_into(&dst) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "round {round}: the copy never started over ssh"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        // The detector sees the run while it lives (copyscope and the shell sshd started).
        assert!(
            leftovers(&marker).len() >= 2,
            "round {round}: {:?}",
            leftovers(&marker)
        );
        ssh.kill().unwrap();
        let _ = ssh.wait();
        let start = Instant::now();
        while copyscope_running(&marker) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "round {round}: copyscope still running 10 s after the SSH connection dropped"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // Nothing else of the run either: the remote shell, or a `cat` still holding the
        // removed temporary (copy/file.rs hands its last descriptor to one).
        loop {
            let left = leftovers(&marker);
            if left.is_empty() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "round {round}: processes left 20 s after the drop: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let (temps, _) = temps_and_files(&dst);
        assert!(
            temps.is_empty(),
            "round {round}: temporaries left: {temps:?}"
        );
        assert!(
            !dst.join("big.bin").exists() || fs::read(dst.join("big.bin")).unwrap() == data,
            "round {round}: truncated file under the real name"
        );
    }
}
