//! Shared helpers for the integration tests: run the real binary with a timeout, build
//! trees, and compare trees with full content and metadata checks.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const TEMP_MARKER: &str = ".copyscope-tmp-";

/// The binary under test; `COPYSCOPE_TEST_BIN` overrides it (several worktrees sharing one
/// CARGO_TARGET_DIR overwrite each other's target/debug/copyscope: copy yours and point here).
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("COPYSCOPE_TEST_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_copyscope").into())
    })
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A command for the binary with plain output.
pub fn cmd() -> Command {
    let mut c = Command::new(bin());
    c.arg("--plain");
    c.env_remove("COPYSCOPE_TEST_THROTTLE_BPS");
    c
}

/// Runs to completion with a timeout (the child is killed if it hangs).
pub fn run_timeout(mut c: Command, limit: Duration) -> Output {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let child = c.spawn().expect("spawn copyscope");
    wait_timeout(child, limit)
}

pub fn wait_timeout(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "copyscope did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `copyscope --plain ARGS...` with a 60 s limit.
pub fn copyscope(args: &[&std::ffi::OsStr]) -> Output {
    let mut c = cmd();
    c.args(args);
    run_timeout(c, Duration::from_secs(60))
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

pub fn write(p: &Path, bytes: &[u8]) {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(p, bytes).unwrap();
}

pub fn set_mtime(p: &Path, secs: i64) {
    let f = fs::File::options()
        .write(true)
        .open(p)
        .or_else(|_| fs::File::open(p))
        .unwrap();
    let t = std::time::UNIX_EPOCH + Duration::from_secs(secs as u64);
    f.set_times(fs::FileTimes::new().set_modified(t).set_accessed(t))
        .unwrap();
}

/// What we compare per entry.
#[derive(Debug, PartialEq, Eq)]
pub struct EntryInfo {
    pub kind: &'static str,
    pub mode: u32,
    pub mtime: (i64, i64),
    pub size: u64,
    pub blocks: u64,
    pub link: Option<PathBuf>,
    pub rdev: u64,
    pub hash: Option<blake3::Hash>,
}

/// A file type as a word (`dir`, `symlink`, `fifo`, …), for comparing trees.
pub fn kind(ft: fs::FileType) -> &'static str {
    if ft.is_dir() {
        "dir"
    } else if ft.is_symlink() {
        "symlink"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_char_device() {
        "chardev"
    } else if ft.is_block_device() {
        "blockdev"
    } else {
        "file"
    }
}

fn hash_file(p: &Path) -> blake3::Hash {
    let mut f = fs::File::open(p).unwrap();
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    h.finalize()
}

/// Every entry under `root` (relative path → info), via relative walking so deep trees work.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, EntryInfo> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1) {
        let e = e.unwrap();
        let m = e.path().symlink_metadata().unwrap();
        let k = kind(m.file_type());
        out.insert(
            e.path().strip_prefix(root).unwrap().to_path_buf(),
            EntryInfo {
                kind: k,
                mode: if k == "symlink" { 0 } else { m.mode() & 0o7777 },
                mtime: (m.mtime(), m.mtime_nsec()),
                size: if k == "file" || k == "symlink" {
                    m.size()
                } else {
                    0
                },
                blocks: if k == "file" { m.blocks() } else { 0 },
                link: (k == "symlink").then(|| fs::read_link(e.path()).unwrap()),
                rdev: m.rdev(),
                hash: (k == "file").then(|| hash_file(e.path())),
            },
        );
    }
    out
}

/// Asserts two trees are equal in content, type, mode, mtime, symlink targets and holes
/// (allocated blocks of a copy may not exceed the source's by more than one 4 KiB block
/// per file). Directory mtimes are compared too.
pub fn assert_same_tree(src: &Path, dst: &Path) {
    let a = snapshot(src);
    let b = snapshot(dst);
    let ka: Vec<_> = a.keys().collect();
    let kb: Vec<_> = b.keys().collect();
    assert_eq!(ka, kb, "entries differ");
    for (k, x) in &a {
        let y = &b[k];
        assert_eq!(x.kind, y.kind, "{k:?} kind");
        assert_eq!(x.mode, y.mode, "{k:?} mode");
        if x.kind != "symlink" {
            assert_eq!(x.mtime, y.mtime, "{k:?} mtime");
        }
        assert_eq!(x.size, y.size, "{k:?} size");
        assert_eq!(x.link, y.link, "{k:?} link target");
        assert_eq!(x.hash, y.hash, "{k:?} content");
        assert_eq!(x.rdev, y.rdev, "{k:?} rdev");
        if x.kind == "file" {
            assert!(
                y.blocks <= x.blocks + 8,
                "{k:?}: copy uses {} blocks, source {}",
                y.blocks,
                x.blocks
            );
        }
    }
}

/// Names under `root` (recursively) that look like our temporaries.
pub fn temp_leftovers(root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(TEMP_MARKER))
        .map(|e| e.path().to_path_buf())
        .collect()
}

pub fn os(s: impl Into<OsString>) -> OsString {
    s.into()
}

/// Mounts a tmpfs of `size` (e.g. "2m") at `dir` (root only). Unmounted on drop.
pub struct Mount(pub PathBuf);

impl Mount {
    pub fn tmpfs(dir: &Path, opts: &str) -> Option<Mount> {
        fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A running `copyscope --json` whose stdout lines arrive on a channel.
pub struct Running {
    pub child: Child,
    pub lines: std::sync::mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

/// Starts `copyscope --json --interval 50 ARGS` with the test throttle (bytes/s).
pub fn start_json(args: &[&std::ffi::OsStr], throttle_bps: u64) -> Running {
    let mut c = Command::new(bin());
    c.args(["--json", "--interval", "50"]).args(args);
    c.env("COPYSCOPE_TEST_THROTTLE_BPS", throttle_bps.to_string());
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let mut child = c.spawn().expect("spawn");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    Running {
        child,
        lines: rx,
        seen: Vec::new(),
    }
}

impl Running {
    /// Waits (up to 30 s) for a line for which `pred` holds.
    pub fn wait_for(&mut self, pred: impl Fn(&serde_json::Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(100)) {
                let v: serde_json::Value = serde_json::from_str(&l).unwrap_or_default();
                self.seen.push(l);
                if pred(&v) {
                    return;
                }
            }
        }
        let _ = self.child.kill();
        panic!("timed out; lines so far:\n{}", self.seen.join("\n"));
    }

    /// Waits until some data was copied.
    pub fn wait_copying(&mut self) {
        self.wait_for(|v| v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) > 0);
    }

    pub fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("pid");
        rustix::process::kill_process(pid, sig).expect("kill");
    }

    /// Waits for exit (30 s) and returns the code, the rest of stdout and stderr.
    pub fn finish(mut self) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("did not exit; lines:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(l);
        }
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        (status.code(), self.seen.join("\n"), err)
    }
}

/// The binary as an unprivileged user: as root (which may read and write anything, so cp's
/// permission checks need another user) a copy of it in `dir` run as nobody through
/// `setpriv` (util-linux); otherwise the binary itself. `dir` is made world-writable when
/// `open_dir` is set, so that nobody can create names in it.
pub fn unprivileged_cmd(dir: &Path, open_dir: bool) -> Command {
    if !is_root() {
        return Command::new(bin());
    }
    if open_dir {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o777)).unwrap();
    }
    let exe = dir.join(".copyscope-bin");
    if !exe.exists() {
        fs::copy(bin(), &exe).unwrap();
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe);
    c
}

/// Every committed recording (the test fixtures and the README's assets), sorted.
pub fn committed_recordings() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [
        "tests/fixtures/recordings",
        "tests/fixtures/corpus",
        "tests/fixtures/verdict",
        "assets",
    ] {
        for e in fs::read_dir(root.join(dir)).expect("recording dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 18, "recordings found: {out:?}");
    out
}

/// The TUI options the output tests render with: no colour, decimal units, full layout.
pub fn plain_ui_options() -> copyscope::ui::view::UiOptions {
    copyscope::ui::view::UiOptions {
        theme: copyscope::ui::theme::Theme::new(false, false),
        units: copyscope::present::units::Units::Decimal,
        compact: false,
        then: None,
    }
}

/// A port nobody listens on now (the kernel's pick for port 0, released again).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The command is on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}
