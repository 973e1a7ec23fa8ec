//! A hostile destination (docs/security.md): root copies into a directory that an
//! unprivileged user can write, while that user races the copy from a process of its own.
//! Nothing outside the tree may change: the canaries (a root-owned 0600 file, a root-only
//! directory) keep their content, mode, owner and times, ctime included. Set-id bits of a
//! copy follow cp's rule (kept only with the owner). These tests need root (CI runs as
//! root); as another user they say so and pass.

use crate::util;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use util::*;

const NOBODY: u32 = 65534;
/// The name copyscope gives its private staging directories.
const STAGE_MARKER: &str = ".copyscope-stage-";

fn need_root(test: &str) -> bool {
    if !is_root() {
        eprintln!("{test}: skipped, needs root (CI runs as root)");
    }
    is_root()
}

/// Everything a copy must never change about an entry outside its tree.
#[derive(Debug, PartialEq, Eq)]
struct Untouched {
    kind: &'static str,
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// The canaries hold text: shown as text when they differ.
    content: Option<String>,
    link: Option<PathBuf>,
}

/// [`Untouched`] for `root` itself and every entry below it.
fn untouched_state(root: &Path) -> BTreeMap<PathBuf, Untouched> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root) {
        let e = e.unwrap();
        let m = fs::symlink_metadata(e.path()).unwrap();
        let kind = kind(m.file_type());
        out.insert(
            e.path().to_path_buf(),
            Untouched {
                kind,
                mode: m.mode(),
                uid: m.uid(),
                gid: m.gid(),
                mtime: (m.mtime(), m.mtime_nsec()),
                ctime: (m.ctime(), m.ctime_nsec()),
                content: (kind == "file")
                    .then(|| String::from_utf8_lossy(&fs::read(e.path()).unwrap()).into_owned()),
                link: (kind == "symlink").then(|| fs::read_link(e.path()).unwrap()),
            },
        );
    }
    out
}

/// A root-owned 0600 file outside every tree, and what must never change about it.
struct Canary {
    path: PathBuf,
    before: BTreeMap<PathBuf, Untouched>,
}

impl Canary {
    fn new(dir: &Path) -> Canary {
        let path = dir.join("canary");
        fs::write(&path, b"root's secret").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let before = untouched_state(&path);
        Canary { path, before }
    }

    fn assert_untouched(&self) {
        assert_eq!(
            untouched_state(&self.path),
            self.before,
            "the canary outside the tree changed (content, mode, owner, times)"
        );
    }
}

/// A root-only (0700) directory outside every tree with a 0600 file and a subdirectory:
/// what a racer points its symlinks at. Nothing in it may change.
struct VictimDir {
    path: PathBuf,
    before: BTreeMap<PathBuf, Untouched>,
}

impl VictimDir {
    fn new(path: PathBuf) -> VictimDir {
        write(&path.join("f"), b"root-only file");
        write(&path.join("sub/g"), b"root-only, one level down");
        fs::set_permissions(path.join("f"), fs::Permissions::from_mode(0o600)).unwrap();
        for d in [path.join("sub"), path.clone()] {
            fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
            set_times_nofollow(&d, 1_500_000_000);
        }
        let before = untouched_state(&path);
        VictimDir { path, before }
    }

    fn assert_untouched(&self, when: &str) {
        assert_eq!(
            untouched_state(&self.path),
            self.before,
            "{when}: the root-only directory outside the tree changed"
        );
    }
}

/// A world-traversable scratch directory (tempdirs are 0700: nobody could not reach in).
fn scratch() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    t
}

fn chown_nofollow(p: &Path, uid: u32, gid: u32) {
    use rustix::fs as rfs;
    rfs::chownat(
        rfs::CWD,
        p,
        Some(rfs::Uid::from_raw(uid)),
        Some(rfs::Gid::from_raw(gid)),
        rfs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// Sets atime and mtime of `p` (not following a symlink, not opening a FIFO).
fn set_times_nofollow(p: &Path, secs: i64) {
    use rustix::fs as rfs;
    let t = rfs::Timespec {
        tv_sec: secs,
        tv_nsec: 123_456_789,
    };
    let ts = rfs::Timestamps {
        last_access: t,
        last_modification: t,
    };
    rfs::utimensat(rfs::CWD, p, &ts, rfs::AtFlags::SYMLINK_NOFOLLOW).unwrap();
}

/// `copyscope --json ARGS`: exit code, and the failed paths with their messages.
fn run_json(args: &[&OsStr], limit: Duration) -> (Option<i32>, BTreeMap<String, String>, String) {
    let mut c = Command::new(bin());
    c.arg("--json").args(args);
    c.env_remove("COPYSCOPE_TEST_THROTTLE_BPS");
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Thousands of events overflow a pipe: read while it runs, kill it if it hangs.
    let child = c.spawn().expect("spawn copyscope");
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(limit).is_err() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            return true;
        }
        false
    });
    let o = child.wait_with_output().expect("output");
    let _ = done_tx.send(());
    assert!(
        !watchdog.join().unwrap(),
        "copyscope did not finish within {limit:?}"
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let mut failed = BTreeMap::new();
    for l in out.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
        if v["kind"] == "file_failed" {
            failed.insert(
                v["path"].as_str().unwrap_or_default().to_string(),
                v["error"].as_str().unwrap_or_default().to_string(),
            );
        }
    }
    let all = format!("{out}\n{}", String::from_utf8_lossy(&o.stderr));
    (o.status.code(), failed, all)
}

fn contains(name: &[u8], marker: &str) -> bool {
    name.windows(marker.len()).any(|w| w == marker.as_bytes())
}

/// The racer: this test binary run again as its own process under `setpriv` as nobody
/// (see [`Racer::start`]). `COPYSCOPE_HOSTILE_MODE` says what it attacks:
/// - `exchange`: [`race_exchange`], the directory a tree merges into;
/// - `stage` (the default): [`race_stage`], the temporaries and staging directories.
///
/// It prints `racer: ready` once set up, stops at EOF on stdin and prints its counts as
/// `racer: stat NAME N`. Run by the test harness on its own, it has nothing to do.
#[test]
fn racer_process_entry() {
    let Ok(dir) = std::env::var("COPYSCOPE_HOSTILE_RACER") else {
        return;
    };
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().lines().count();
        s2.store(true, Ordering::SeqCst);
    });
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let dir = Path::new(&dir);
    let stats = match env("COPYSCOPE_HOSTILE_MODE").as_str() {
        "exchange" => race_exchange(dir, &env("COPYSCOPE_HOSTILE_TARGET"), &stop),
        _ => race_stage(dir, &stop),
    };
    for (k, v) in stats {
        println!("racer: stat {k} {v}");
    }
    let _ = std::io::stdout().flush();
}

fn ready() {
    println!("racer: ready");
    let _ = std::io::stdout().flush();
}

/// Exchanges `DIR/src` with a symlink `DIR/lnk -> TARGET` (`renameat2(RENAME_EXCHANGE)`)
/// as fast as it can until stopped: the name a tree merges into is, at any instant, the
/// real directory or a symlink to a root-only one.
fn race_exchange(dir: &Path, target: &str, stop: &AtomicBool) -> BTreeMap<&'static str, u64> {
    use rustix::fs::{self as rfs, Mode, OFlags, RenameFlags};
    let dfd = rfs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("racer: open dir");
    rfs::symlinkat(target, &dfd, "lnk").expect("racer: symlink");
    ready();
    let (mut tried, mut done) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        tried += 1;
        if rfs::renameat_with(&dfd, "src", &dfd, "lnk", RenameFlags::EXCHANGE).is_ok() {
            done += 1;
        }
        std::thread::yield_now();
    }
    BTreeMap::from([("exchanges_tried", tried), ("exchanges", done)])
}

/// One directory the stage racer watches.
struct Watched {
    rel: String,
    fd: OwnedFd,
}

/// The attack on a destination others can write in, watched with inotify (`DIR` and the
/// subdirectories in `COPYSCOPE_HOSTILE_WATCH`, comma-separated):
/// - a new temporary name (`.copyscope-tmp-`) is renamed away and a symlink to
///   `COPYSCOPE_HOSTILE_CANARY` put in its place (the attack of issue 8: with the staging
///   directory there should be none to see);
/// - a new staging directory is first tried (can it be opened or written?), then renamed
///   away and its name taken by a symlink to `COPYSCOPE_HOSTILE_OUTSIDE` or by a directory
///   of the racer's own (alternating, starting with `COPYSCOPE_HOSTILE_ROUND`), racing
///   copyscope's open of it; then, while the copy runs, the stage and the racer's object
///   are exchanged back and forth under the stage's name;
/// - a new final name `<prefix><digits>` makes it plant symlinks to the canary at the
///   names 5 and 23 further on, ahead of the copy.
#[expect(
    clippy::too_many_lines,
    reason = "one race, staged step by step: each step and its check, in the order they happen"
)]
fn race_stage(dir: &Path, stop: &AtomicBool) -> BTreeMap<&'static str, u64> {
    use rustix::fs::{self as rfs, Mode, OFlags, RenameFlags, inotify};
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let (canary, outside) = (
        env("COPYSCOPE_HOSTILE_CANARY"),
        env("COPYSCOPE_HOSTILE_OUTSIDE"),
    );
    let round: u64 = env("COPYSCOPE_HOSTILE_ROUND").parse().unwrap_or(0);
    let ino = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
        .expect("inotify");
    let mut dirs: HashMap<i32, Watched> = HashMap::new();
    let watch = env("COPYSCOPE_HOSTILE_WATCH");
    let rels = std::iter::once("").chain(watch.split(',').filter(|s| !s.is_empty()));
    for rel in rels {
        let p = dir.join(rel);
        let fd = rfs::open(
            &p,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("racer: open dir");
        let flags = inotify::WatchFlags::CREATE | inotify::WatchFlags::MOVED_TO;
        let wd = inotify::add_watch(&ino, &p, flags).expect("watch");
        let rel = rel.to_string();
        dirs.insert(wd, Watched { rel, fd });
    }
    ready();
    let mut st: BTreeMap<&'static str, u64> = BTreeMap::new();
    let bump = |st: &mut BTreeMap<&'static str, u64>, k: &'static str| {
        *st.entry(k).or_default() += 1;
    };
    for k in [
        "temporaries_seen",
        "temporaries_swapped",
        "stages_seen",
        "stages_entered",
        "stages_moved",
        "stage_names_taken",
        "stage_exchanges",
        "planted",
    ] {
        st.insert(k, 0);
    }
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 1 << 16];
    // The racer's own names per watched directory: its events are not copyscope's.
    let mut mine: HashSet<(i32, Vec<u8>)> = HashSet::new();
    // Stages moved away: (watch, stage name, where the stage went).
    let mut moved: Vec<(i32, OsString, OsString)> = Vec::new();
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut events = Vec::new();
        {
            let mut rd = inotify::Reader::new(&ino, &mut buf);
            while let Ok(ev) = rd.next() {
                if let (Some(n), Some(wd)) = (ev.file_name(), Some(ev.wd())) {
                    events.push((wd, n.to_bytes().to_vec()));
                }
            }
        }
        for (wd, n) in events {
            if !mine.insert((wd, n.clone())) {
                continue;
            }
            let Some(w) = dirs.get(&wd) else { continue };
            let name = OsStr::from_bytes(&n);
            k += 1;
            if contains(&n, STAGE_MARKER) {
                bump(&mut st, "stages_seen");
                // Can the racer reach into it? (It is root's and 0700: it must not.)
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
                let mut inside = PathBuf::from(name);
                inside.push("racer-was-here");
                if rfs::openat(&w.fd, name, flags, Mode::empty()).is_ok()
                    || rfs::openat(&w.fd, &inside, OFlags::CREATE | OFlags::WRONLY, Mode::RUSR)
                        .is_ok()
                {
                    bump(&mut st, "stages_entered");
                }
                let away = OsString::from(format!(".racer-stage-away-{k}"));
                if rfs::renameat(&w.fd, name, &w.fd, &away).is_ok() {
                    bump(&mut st, "stages_moved");
                    mine.insert((wd, away.as_bytes().to_vec()));
                    let took = if (k + round).is_multiple_of(2) {
                        rfs::symlinkat(outside.as_str(), &w.fd, name)
                    } else {
                        rfs::mkdirat(&w.fd, name, Mode::from_raw_mode(0o777))
                    };
                    if took.is_ok() {
                        bump(&mut st, "stage_names_taken");
                    }
                    moved.push((wd, name.to_os_string(), away));
                }
            } else if contains(&n, TEMP_MARKER) {
                bump(&mut st, "temporaries_seen");
                let away = format!(".racer-moved-{k}");
                if rfs::renameat(&w.fd, name, &w.fd, away.as_str()).is_ok()
                    && rfs::symlinkat(canary.as_str(), &w.fd, name).is_ok()
                {
                    bump(&mut st, "temporaries_swapped");
                    println!("racer: swapped {}", name.to_string_lossy());
                }
            } else if !n.starts_with(b".") {
                for ahead in plant_names(&n) {
                    if rfs::symlinkat(canary.as_str(), &w.fd, ahead.as_str()).is_ok() {
                        mine.insert((wd, ahead.as_bytes().to_vec()));
                        bump(&mut st, "planted");
                        println!(
                            "racer: planted {}",
                            Path::new(&w.rel).join(&ahead).display()
                        );
                    }
                }
            }
        }
        for (wd, name, away) in &moved {
            let fd = &dirs[wd].fd;
            if rfs::renameat_with(fd, name, fd, away, RenameFlags::EXCHANGE).is_ok() {
                bump(&mut st, "stage_exchanges");
            }
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    st
}

/// The names 5 and 23 after `<prefix><digits>` (same width), where the racer plants.
fn plant_names(n: &[u8]) -> Vec<String> {
    let digits = n.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits == n.len() {
        return Vec::new();
    }
    let (prefix, num) = n.split_at(n.len() - digits);
    let num: u64 = std::str::from_utf8(num).unwrap().parse().unwrap();
    let prefix = String::from_utf8_lossy(prefix);
    [5, 23]
        .iter()
        .map(|d| format!("{prefix}{:0digits$}", num + d))
        .collect()
}

/// A racer process, running as nobody.
struct Racer {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

/// What a racer reported when stopped.
struct RacerReport {
    stats: BTreeMap<String, u64>,
    swapped: Vec<String>,
    planted: BTreeSet<PathBuf>,
}

impl RacerReport {
    fn stat(&self, k: &str) -> u64 {
        *self
            .stats
            .get(k)
            .unwrap_or_else(|| panic!("the racer reported no {k}: {:?}", self.stats))
    }
}

impl Racer {
    /// Starts the racer as nobody on `dir` with `env`: this test binary, copied next to
    /// `dir` (the build directory may not be reachable by nobody, e.g. a checkout under
    /// /root). Returns once it has set up (its watches, its symlink).
    fn start(dir: &Path, env: &[(&str, &OsStr)]) -> Racer {
        let exe = dir.parent().unwrap().join("racer");
        if !exe.exists() {
            fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
            fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        }
        // Another test thread that forks while the copy is open for writing holds that
        // descriptor until its exec: the racer's exec then fails with ETXTBSY. Try again.
        for _ in 0..20 {
            if let Some(r) = Self::try_start(&exe, dir, env) {
                return r;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the racer did not start (see its stderr above)");
    }

    /// One start of the racer: None when it ended before it was ready.
    fn try_start(exe: &Path, dir: &Path, env: &[(&str, &OsStr)]) -> Option<Racer> {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(exe)
        .args(["--exact", "hostile::racer_process_entry", "--nocapture"])
        .env("COPYSCOPE_HOSTILE_RACER", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().expect("setpriv (util-linux) runs the racer");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) if l == "racer: ready" => break,
                Ok(_) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = child.wait();
                    return None;
                }
                Err(e) => panic!("the racer did not get ready within 60 s: {e}"),
            }
        }
        Some(Racer { child, lines: rx })
    }

    /// Stops the racer and returns what it reported.
    fn stop(mut self) -> RacerReport {
        drop(self.child.stdin.take());
        let mut r = RacerReport {
            stats: BTreeMap::new(),
            swapped: Vec::new(),
            planted: BTreeSet::new(),
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(60)) {
            if let Some(n) = l.strip_prefix("racer: swapped ") {
                r.swapped.push(n.to_string());
            } else if let Some(n) = l.strip_prefix("racer: planted ") {
                r.planted.insert(PathBuf::from(n));
            } else if let Some(rest) = l.strip_prefix("racer: stat ") {
                let (k, v) = rest.split_once(' ').unwrap();
                r.stats.insert(k.to_string(), v.parse().unwrap());
            }
        }
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the racer failed: {status:?}");
        r
    }
}

fn mknod(p: &Path, kind: rustix::fs::FileType, mode: u32, dev: u64) {
    use rustix::fs as rfs;
    rfs::mknodat(rfs::CWD, p, kind, rfs::Mode::from_raw_mode(mode), dev as _).unwrap();
    // mknod applied the umask.
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// A source entry of [`special_file_chmod_race`] and what its copy must be.
#[derive(Clone, Copy, PartialEq)]
enum Node {
    Fifo,
    Dev,
    Link,
    File,
    Dir,
}

/// The source of [`special_file_chmod_race`]: 3000 entries: 2400 at the top (`nNNNN`), 400
/// in `shared/` (`sNNN`, which exists in the destination, owned by nobody, so it gets a
/// staging directory of its own) and 200 in four new directories `aK/` (`mNN`, made by the
/// copy through the stage). Returns every entry by relative path.
fn race_source(src: &Path) -> BTreeMap<PathBuf, Node> {
    use rustix::fs::FileType;
    let mut nodes = BTreeMap::new();
    let null = rustix::fs::makedev(1, 3);
    let mut add = |rel: PathBuf, i: usize| {
        let p = src.join(&rel);
        let node = match i % 10 {
            0..=5 => Node::Fifo,
            6 | 7 => Node::Dev,
            8 => Node::Link,
            _ => Node::File,
        };
        match node {
            Node::Fifo => mknod(&p, FileType::Fifo, 0o666, 0),
            Node::Dev => mknod(&p, FileType::CharacterDevice, 0o666, null),
            Node::Link => symlink("target", &p).unwrap(),
            _ => {
                fs::write(&p, rel.as_os_str().as_bytes()).unwrap();
                fs::set_permissions(&p, fs::Permissions::from_mode(0o666)).unwrap();
            }
        }
        if node != Node::Link {
            set_times_nofollow(&p, 1_600_000_000 + i as i64);
        }
        nodes.insert(rel, node);
    };
    fs::create_dir_all(src.join("shared")).unwrap();
    for k in 0..4 {
        fs::create_dir(src.join(format!("a{k}"))).unwrap();
    }
    for i in 0..2400 {
        add(PathBuf::from(format!("n{i:04}")), i);
    }
    for i in 0..400 {
        add(PathBuf::from(format!("shared/s{i:03}")), i);
    }
    for i in 0..200 {
        add(PathBuf::from(format!("a{}/m{:02}", i / 50, i % 50)), i);
    }
    for d in ["shared", "a0", "a1", "a2", "a3"] {
        set_times_nofollow(&src.join(d), 1_650_000_000);
        nodes.insert(PathBuf::from(d), Node::Dir);
    }
    nodes
}

/// Names under `root` (recursively) with their metadata, the root excluded.
fn walk(root: &Path) -> BTreeMap<PathBuf, fs::Metadata> {
    walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
            (rel, fs::symlink_metadata(e.path()).unwrap())
        })
        .collect()
}

/// Issue 8 item 1 and issue 23 item 3: 3000 entries (FIFOs, device nodes, symlinks, small
/// files, in the top directory, in a subdirectory the attacker owns and in new ones)
/// copied as root with `-a -j 2` into a directory nobody owns, three times, while nobody
/// attacks everything it can reach ([`race_stage`]): temporaries (there must be none to
/// see: they are made in a private staging directory), the staging directories (it must
/// not get in; it moves them away and puts a symlink to a root-only directory or a
/// directory of its own in their name, and swaps them back and forth), and the final
/// names (symlinks to a root-owned canary planted before the copy and ahead of it).
///
/// Whether the racer wins its race for a stage's name (between copyscope's mkdir and open
/// of it) is luck; the asserts hold either way: the canaries do not change; nothing is
/// ever placed under a name from where the racer could have swapped it (no temporary name
/// appears in a directory it can write); every entry reported copied is the node copied
/// (type, mode, device number, owner, times, content or target) and none is a planted
/// symlink; an entry reported failed holds nothing or the racer's own symlink; a symlink
/// planted before the copy is replaced by the copy; no other name is left but the racer's
/// own and, if it moved one away, an empty root-owned stage.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a hostile user's race against the copy: each move and the check after it, in the order they happen"
)]
fn special_file_chmod_race() {
    if !need_root("special_file_chmod_race") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let victim = VictimDir::new(t.path().join("outside"));
    let src = t.path().join("src");
    let nodes = race_source(&src);
    let null = rustix::fs::makedev(1, 3);
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = 0;
    for round in 0..3u32 {
        let dst = t.path().join(format!("dst{round}"));
        for d in [dst.clone(), dst.join("shared")] {
            fs::create_dir(&d).unwrap();
            fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
            chown_nofollow(&d, NOBODY, NOBODY);
        }
        // Planted before the copy (owned by nobody, as the attacker would): every 97th name.
        let mut preplanted = BTreeSet::new();
        for (i, rel) in nodes.keys().enumerate() {
            let in_existing = rel.components().count() == 1 || rel.starts_with("shared");
            if i % 97 == 0 && in_existing && nodes[rel] != Node::Dir {
                symlink(&canary.path, dst.join(rel)).unwrap();
                chown_nofollow(&dst.join(rel), NOBODY, NOBODY);
                preplanted.insert(rel.clone());
            }
        }
        let round_s = round.to_string();
        let racer = Racer::start(
            &dst,
            &[
                ("COPYSCOPE_HOSTILE_MODE", OsStr::new("stage")),
                ("COPYSCOPE_HOSTILE_CANARY", canary.path.as_os_str()),
                ("COPYSCOPE_HOSTILE_OUTSIDE", victim.path.as_os_str()),
                ("COPYSCOPE_HOSTILE_WATCH", OsStr::new("shared")),
                ("COPYSCOPE_HOSTILE_ROUND", OsStr::new(&round_s)),
            ],
        );
        let mut contents = src.clone().into_os_string();
        contents.push("/.");
        let (code, failed, out) = run_json(
            &[
                OsStr::new("-a"),
                OsStr::new("-j"),
                OsStr::new("2"),
                OsStr::new("--no-sync"),
                &contents,
                dst.as_os_str(),
            ],
            Duration::from_secs(300),
        );
        let report = racer.stop();
        canary.assert_untouched();
        victim.assert_untouched(&format!("round {round}"));
        eprintln!(
            "round {round}: racer {:?}; {} entries failed",
            report.stats,
            failed.len()
        );
        for (k, v) in &report.stats {
            *totals.entry(k.clone()).or_default() += v;
        }
        failures += failed.len();
        assert_eq!(
            report.stat("temporaries_seen"),
            0,
            "a temporary name appeared where nobody can swap it (swapped: {:?})",
            &report.swapped[..report.swapped.len().min(20)]
        );
        assert_eq!(report.stat("stages_entered"), 0, "nobody got into a stage");
        assert!(report.stat("stages_seen") >= 2, "{:?}", report.stats);
        assert_eq!(code, Some(if failed.is_empty() { 0 } else { 1 }), "{out}");
        let failed_rel: BTreeMap<PathBuf, &String> = failed
            .iter()
            .map(|(k, v)| {
                // Named by its source path, or by its destination path (a directory).
                let rel = match k.split_once("/src/./") {
                    Some((_, rel)) => PathBuf::from(rel),
                    None => Path::new(k).strip_prefix(&dst).unwrap().to_path_buf(),
                };
                (rel, v)
            })
            .collect();
        // "File exists": the racer's symlink took a name after the copy found it free.
        // "Not a directory" or "replaced": the racer won the race for a stage's name
        // (a symlink or its own directory there when copyscope opened it).
        for (rel, msg) in &failed_rel {
            let taken = msg.contains("File exists");
            assert!(
                taken || msg.contains("Not a directory") || msg.contains("replaced"),
                "round {round}: unexpected failure of {rel:?}: {msg}\n{out}"
            );
            assert!(
                !(taken && preplanted.contains(rel)),
                "round {round}: a symlink planted before the copy was not replaced: {rel:?}: {msg}"
            );
        }
        // An entry below a directory that failed is not reported on its own (as with cp).
        let failed_here = |rel: &Path| rel.ancestors().any(|a| failed_rel.contains_key(a));
        let entries = walk(&dst);
        for (rel, node) in &nodes {
            let p = dst.join(rel);
            let m = entries.get(rel);
            if failed_here(rel) {
                // Nothing, or the racer's own symlink: never a copy, never a temporary.
                if let Some(m) = m {
                    assert!(
                        m.is_symlink()
                            && m.uid() == NOBODY
                            && fs::read_link(&p).unwrap() == canary.path,
                        "round {round}: failed {rel:?} holds {:?} of uid {}",
                        m.file_type(),
                        m.uid()
                    );
                }
                continue;
            }
            let m = m.unwrap_or_else(|| panic!("round {round}: {rel:?} neither failed nor copied"));
            let ft = m.file_type();
            let ok = match node {
                Node::Fifo => ft.is_fifo() && m.mode() & 0o7777 == 0o666,
                Node::Dev => ft.is_char_device() && m.rdev() == null && m.mode() & 0o7777 == 0o666,
                Node::Link => ft.is_symlink() && fs::read_link(&p).unwrap() == Path::new("target"),
                Node::File => {
                    ft.is_file()
                        && m.mode() & 0o7777 == 0o666
                        && fs::read(&p).unwrap() == rel.as_os_str().as_bytes()
                }
                Node::Dir => ft.is_dir() && m.mode() & 0o7777 == 0o755,
            };
            assert!(
                ok,
                "round {round}: {rel:?}: wrong node {ft:?} {:o} (a planted name under a real name?)",
                m.mode()
            );
            assert_eq!((m.uid(), m.gid()), (0, 0), "round {round}: {rel:?}: owner");
            if *node != Node::Link {
                let want = fs::symlink_metadata(src.join(rel)).unwrap();
                assert_eq!(
                    (m.mtime(), m.mtime_nsec()),
                    (want.mtime(), want.mtime_nsec()),
                    "round {round}: {rel:?}: mtime"
                );
            }
        }
        // Every other name is the racer's own, or a stage it moved away (emptied by the copy).
        let mut others = 0;
        for (rel, m) in &entries {
            if nodes.contains_key(rel) {
                continue;
            }
            others += 1;
            let name = rel.file_name().unwrap().as_bytes();
            assert!(!contains(name, TEMP_MARKER), "round {round}: left {rel:?}");
            if m.uid() == NOBODY {
                // The racer's: planted symlinks, its directories (empty: nothing of the copy).
                assert!(
                    report.planted.contains(rel)
                        || contains(name, STAGE_MARKER)
                        || name.starts_with(b".racer-"),
                    "round {round}: unexpected {rel:?}"
                );
                if m.is_dir() {
                    assert_eq!(fs::read_dir(dst.join(rel)).unwrap().count(), 0, "{rel:?}");
                }
            } else {
                // A stage the racer renamed away or swapped back: ours, 0700, emptied.
                assert!(
                    m.is_dir()
                        && m.mode() & 0o7777 == 0o700
                        && (contains(name, STAGE_MARKER)
                            || name.starts_with(b".racer-stage-away-")),
                    "round {round}: unexpected {rel:?} {:?} {:o} uid {} size {} holds {:?}",
                    m.file_type(),
                    m.mode(),
                    m.uid(),
                    m.len(),
                    fs::read(dst.join(rel))
                        .map(|b| String::from_utf8_lossy(&b[..b.len().min(80)]).to_string())
                );
                assert_eq!(fs::read_dir(dst.join(rel)).unwrap().count(), 0, "{rel:?}");
            }
        }
        // What points outside: only the racer's symlinks, never under a name reported copied.
        let outside_links = entries
            .iter()
            .filter(|(_, m)| m.is_symlink())
            .filter(|(rel, _)| fs::read_link(dst.join(rel)).unwrap() != Path::new("target"))
            .count();
        let planted_under_real = report
            .planted
            .iter()
            .filter(|rel| nodes.contains_key(*rel) && !failed_here(rel))
            .filter(|rel| fs::read_link(dst.join(rel)).is_ok_and(|l| l == canary.path))
            .count();
        assert_eq!(planted_under_real, 0);
        // Planted at a real name and replaced by the copy (checked above, entry by entry).
        let replaced = report
            .planted
            .iter()
            .chain(&preplanted)
            .filter(|rel| nodes.contains_key(*rel) && !failed_here(rel))
            .count();
        let exists = failed_rel
            .values()
            .filter(|m| m.contains("File exists"))
            .count();
        eprintln!(
            "round {round}: symlinks planted at final names: {} before the copy, {} during it; \
             {replaced} replaced by the copy, {exists} names taken first (reported failed: \
             File exists), {} failures of the stage race won; {outside_links} racer symlinks left, {others} names \
             not of the source",
            preplanted.len(),
            report.planted.len(),
            failed_rel.len() - exists
        );
        *totals.entry("planted_before".into()).or_default() += preplanted.len() as u64;
        *totals.entry("stage_race_failures".into()).or_default() +=
            (failed_rel.len() - exists) as u64;
        *totals.entry("replaced_by_the_copy".into()).or_default() += replaced as u64;
    }
    eprintln!("race totals over 3 x 3000 entries: {totals:?}; {failures} entries failed");
}

/// What the set-id test compares between cp's copy and copyscope's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Copied {
    kind: &'static str,
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
    rdev: u64,
    link: Option<PathBuf>,
    content: Option<Vec<u8>>,
}

fn copied_tree(root: &Path) -> BTreeMap<PathBuf, Copied> {
    walk(root)
        .into_iter()
        .map(|(rel, m)| {
            let kind = kind(m.file_type());
            let p = root.join(&rel);
            let c = Copied {
                kind,
                mode: m.mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
                mtime: (m.mtime(), m.mtime_nsec()),
                rdev: m.rdev(),
                link: (kind == "symlink").then(|| fs::read_link(&p).unwrap()),
                content: (kind == "file").then(|| fs::read(&p).unwrap()),
            };
            (rel, c)
        })
        .collect()
}

/// Who runs a copy in the set-id test.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Root,
    Nobody,
    /// Root without CAP_CHOWN: every chown to another owner fails with EPERM, as on a file
    /// system that refuses it.
    RootWithoutChown,
}

fn run_as(who: Who, prog: &Path) -> Command {
    let mut c = match who {
        Who::Root => return Command::new(prog),
        Who::Nobody => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            c
        }
        Who::RootWithoutChown => {
            let mut c = Command::new("setpriv");
            c.args(["--bounding-set=-chown", "--inh-caps=-chown"]);
            c
        }
    };
    c.arg("--").arg(prog);
    c
}

/// The effective uid and gid that running `id` (the copy) as nobody gives.
fn ids_as_nobody(exe: &Path) -> (u32, u32) {
    let id = |flag: &str| {
        let o = run_as(Who::Nobody, exe).arg(flag).output().unwrap();
        assert!(o.status.success(), "{exe:?} {flag}: {o:?}");
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}

/// The source of the set-id test: `id` binaries with set-id bits owned by nobody and by
/// root, set-id and sticky directories, a set-id FIFO and device node, a symlink.
fn set_id_source(src: &Path) {
    use rustix::fs::FileType;
    let id = fs::read("/usr/bin/id").expect("/usr/bin/id");
    fs::create_dir(src).unwrap();
    let files: &[(&str, u32, u32, u32)] = &[
        ("suid", NOBODY, NOBODY, 0o4755),
        ("sgid", NOBODY, NOBODY, 0o2755),
        ("both", NOBODY, NOBODY, 0o6755),
        ("rsuid", 0, 0, 0o4755),
        ("rsgid", 0, 0, 0o2755),
        ("grp", NOBODY, 0, 0o2755),
        ("sticky", NOBODY, NOBODY, 0o1755),
        ("gdir/x", NOBODY, NOBODY, 0o2711),
        ("gdir/rx", 0, 0, 0o6755),
    ];
    let dirs: &[(&str, u32, u32, u32)] = &[
        ("gdir", NOBODY, NOBODY, 0o2775),
        ("udir", NOBODY, NOBODY, 0o4755),
        ("sdir", NOBODY, NOBODY, 0o3777),
        ("rdir", 0, 0, 0o2755),
    ];
    for (d, ..) in dirs {
        fs::create_dir(src.join(d)).unwrap();
    }
    for (f, uid, gid, mode) in files {
        let p = src.join(f);
        fs::write(&p, &id).unwrap();
        chown_nofollow(&p, *uid, *gid);
        fs::set_permissions(&p, fs::Permissions::from_mode(*mode)).unwrap();
    }
    mknod(&src.join("fifo"), FileType::Fifo, 0o6644, 0);
    chown_nofollow(&src.join("fifo"), NOBODY, NOBODY);
    fs::set_permissions(src.join("fifo"), fs::Permissions::from_mode(0o6644)).unwrap();
    mknod(
        &src.join("null"),
        FileType::CharacterDevice,
        0o4666,
        rustix::fs::makedev(1, 3),
    );
    symlink("suid", src.join("link")).unwrap();
    chown_nofollow(&src.join("link"), NOBODY, NOBODY);
    for (d, uid, gid, mode) in dirs {
        chown_nofollow(&src.join(d), *uid, *gid);
        fs::set_permissions(src.join(d), fs::Permissions::from_mode(*mode)).unwrap();
    }
    chown_nofollow(src, NOBODY, NOBODY);
    for (i, rel) in walk(src).keys().rev().enumerate() {
        set_times_nofollow(&src.join(rel), 1_400_000_000 + i as i64);
    }
    set_times_nofollow(src, 1_400_000_000);
}

/// One way of copying in the set-id test, with cp's equivalent run side by side.
struct SetIdCase {
    who: Who,
    copyscope: &'static [&'static str],
    cp: &'static [&'static str],
    /// -p or -a: ownership is kept where the chown succeeds.
    keeps_owner: bool,
    times: bool,
}

/// Issue 23 item 1: set-id bits of files, directories and special files follow cp's rule
/// (kept only when the ownership is kept: -p/-a and a chown that succeeded), for root
/// copies with and without -p/-a, for nobody copying root's set-id files with -p/-a (the
/// chown fails), and for root whose chown fails (no CAP_CHOWN) with -p/-a. Each copy is
/// compared entry by entry with what cp makes in the same situation (kind, owner, group,
/// content, target, device number, mtime where kept, and the mode), and every copied
/// binary is run as nobody: it may not give an effective uid or gid the source did not.
///
/// The mode is cp's, except where copyscope's rule is stricter than cp (written out in
/// `want_mode`): with modes kept and ownership not (copyscope's default, `cp
/// --preserve=mode`) cp keeps the set-id bits, making a root-owned setuid binary of
/// nobody's (it gives nobody euid 0); and cp keeps them on a FIFO or device node whose
/// owner it could not keep. Where cp differs otherwise it is written out too: `cp
/// --no-preserve=mode` keeps a directory's sticky bit, copyscope's `--no-preserve` does
/// not; cp run as root whose chown fails narrows the copy to 0700-like modes and exits 1
/// ("failed to preserve ownership"), copyscope keeps the source's permission bits.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a hostile-owner scenario: the files, the copies and every check on their modes and owners, in order"
)]
fn set_id_bits_follow_the_owner() {
    if !need_root("set_id_bits_follow_the_owner") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let src = t.path().join("s/src");
    fs::create_dir(t.path().join("s")).unwrap();
    set_id_source(&src);
    // The binary as nobody can run it (the build directory may not be reachable).
    let exe = t.path().join("bin/copyscope");
    fs::create_dir(exe.parent().unwrap()).unwrap();
    fs::copy(bin(), &exe).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    // This file system honours set-id bits, so running a copy as nobody can tell.
    assert_eq!(
        ids_as_nobody(&src.join("rsuid")).0,
        0,
        "a root-owned setuid binary does not give euid 0 here (nosuid?): this test would prove nothing"
    );
    // Keyed as the copies are: "src/...".
    let src_tree = copied_tree(src.parent().unwrap());
    let src_ids: BTreeMap<PathBuf, (u32, u32)> = src_tree
        .iter()
        .filter(|(_, c)| c.kind == "file")
        .map(|(rel, _)| (rel.clone(), ids_as_nobody(&src.parent().unwrap().join(rel))))
        .collect();
    let mp = &["-r", "--preserve=mode,timestamps"][..];
    let cases = [
        (Who::Root, &[][..], mp, false, true),
        (
            Who::Root,
            &["--no-preserve"][..],
            &["-r", "--no-preserve=mode"][..],
            false,
            false,
        ),
        (Who::Root, &["-p"][..], &["-r", "-p"][..], true, true),
        (Who::Root, &["-a"][..], &["-a"][..], true, true),
        (Who::Nobody, &[][..], mp, false, true),
        (Who::Nobody, &["-p"][..], &["-r", "-p"][..], true, true),
        (Who::Nobody, &["-a"][..], &["-a"][..], true, true),
        (
            Who::RootWithoutChown,
            &["-p"][..],
            &["-r", "-p"][..],
            true,
            true,
        ),
        (Who::RootWithoutChown, &["-a"][..], &["-a"][..], true, true),
    ]
    .map(|(who, copyscope, cp, keeps_owner, times)| SetIdCase {
        who,
        copyscope,
        cp,
        keeps_owner,
        times,
    });
    let mut execs = 0;
    for (n, case) in cases.iter().enumerate() {
        let what = format!(
            "{:?} copyscope {:?} / cp {:?}",
            case.who, case.copyscope, case.cp
        );
        let (d_cp, d_cs) = (
            t.path().join(format!("cp{n}")),
            t.path().join(format!("cs{n}")),
        );
        for d in [&d_cp, &d_cs] {
            fs::create_dir(d).unwrap();
            if case.who == Who::Nobody {
                chown_nofollow(d, NOBODY, NOBODY);
            }
        }
        let mut cp = run_as(case.who, Path::new("cp"));
        cp.args(case.cp).arg(&src).arg(&d_cp);
        let cp_out = run_timeout(cp, Duration::from_secs(60));
        let mut cs = run_as(case.who, &exe);
        cs.arg("--plain").args(case.copyscope).arg(&src).arg(&d_cs);
        let cs_out = run_timeout(cs, Duration::from_secs(60));
        canary.assert_untouched();
        // Root that may not chown (NFS root_squash, no CAP_CHOWN): cp says it failed to
        // preserve ownership and exits 1; so does copyscope. Anyone else is not asked to.
        if case.who == Who::RootWithoutChown {
            assert_eq!(
                (cs_out.status.code(), cp_out.status.code()),
                (Some(1), Some(1)),
                "{what}: exit status\ncp: {}\ncopyscope: {}",
                String::from_utf8_lossy(&cp_out.stderr),
                String::from_utf8_lossy(&cs_out.stdout)
            );
            assert!(
                String::from_utf8_lossy(&cs_out.stdout).contains("failed to preserve ownership"),
                "{what}: {}",
                String::from_utf8_lossy(&cs_out.stdout)
            );
        }
        let (a, b) = (copied_tree(&d_cp), copied_tree(&d_cs));
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "{what}: entries\ncp: {}\ncopyscope: {}",
            text(&cp_out),
            text(&cs_out)
        );
        // cp fails on the device node as nobody (copyscope skips it, docs/compat.md); both
        // fail (exit 1, the files kept) on every failed chown as root.
        let chown_fails = case.who == Who::RootWithoutChown;
        assert_eq!(
            cs_out.status.code(),
            Some(if chown_fails { 1 } else { 0 }),
            "{what}: copyscope's exit\n{}",
            text(&cs_out)
        );
        if case.who == Who::Root {
            assert_eq!(
                cp_out.status.code(),
                Some(0),
                "{what}: cp\n{}",
                text(&cp_out)
            );
        }
        for (rel, c) in &b {
            let (want, s) = (&a[rel], &src_tree[rel]);
            let kept = case.keeps_owner && (c.uid, c.gid) == (s.uid, s.gid);
            let want_mode = want_mode(case, chown_fails, want, s, kept);
            assert_eq!(
                (c.kind, c.uid, c.gid, &c.link, &c.content, c.rdev),
                (
                    want.kind,
                    want.uid,
                    want.gid,
                    &want.link,
                    &want.content,
                    want.rdev
                ),
                "{what}: {rel:?}: kind, owner, target, content or device differ from cp's"
            );
            assert_eq!(
                c.mode, want_mode,
                "{what}: {rel:?}: mode {:o}, cp gives {:o}, wanted {want_mode:o} (source {:o} {}:{})",
                c.mode, want.mode, s.mode, s.uid, s.gid
            );
            if case.times && c.kind != "symlink" {
                assert_eq!(c.mtime, want.mtime, "{what}: {rel:?}: mtime");
            }
            if c.kind == "file" && c.mode & 0o111 != 0 {
                let (euid, egid) = ids_as_nobody(&d_cs.join(rel));
                let (src_euid, src_egid) = src_ids[rel];
                execs += 1;
                assert!(
                    euid == NOBODY || (kept && euid == src_euid),
                    "{what}: {rel:?} run as nobody gives euid {euid}"
                );
                assert!(
                    egid == NOBODY || (kept && egid == src_egid),
                    "{what}: {rel:?} run as nobody gives egid {egid}"
                );
                if !case.keeps_owner || chown_fails && s.uid != 0 {
                    assert_eq!((euid, egid), (NOBODY, NOBODY), "{what}: {rel:?}");
                }
            }
        }
        eprintln!(
            "{what}: {} entries as cp's; cp exit {:?}, copyscope exit {:?}",
            b.len(),
            cp_out.status.code(),
            cs_out.status.code()
        );
    }
    eprintln!(
        "set-id: {} cases, {execs} copies run as nobody",
        cases.len()
    );
}

/// The mode copyscope must give an entry, from cp's copy `cp` of source entry `s`:
/// cp's, without set-id bits unless the owner was kept (see
/// [`set_id_bits_follow_the_owner`] for where and why cp keeps them).
fn want_mode(case: &SetIdCase, chown_fails: bool, cp: &Copied, s: &Copied, kept: bool) -> u32 {
    let mut want = cp.mode;
    if !kept {
        // The sticky bit (meaningless on a file) goes with the set-id bits.
        want &= if cp.kind == "dir" { !0o6000 } else { !0o7000 };
    }
    if case.copyscope == ["--no-preserve"] && cp.kind == "dir" {
        want &= !0o1000;
    }
    if chown_fails {
        want = want & 0o7000 | s.mode & 0o777;
    }
    want
}

/// Issue 23 item 2: while root runs `copyscope -a src share/` (share and share/src owned by
/// nobody), nobody exchanges share/src with a symlink to a root-only directory in a
/// `renameat2(RENAME_EXCHANGE)` loop ([`race_exchange`]). Many short copies, each with a
/// new stamp file: every run either copies into the real share/src (exit 0, the stamp is
/// there, found through a descriptor of that directory) or fails cleanly (refused as cp
/// refuses a symlink there, or refused because the name no longer holds the directory
/// the plan saw) and copies nothing; the root-only directory and its files never change.
///
/// Which state each run meets is the racer's luck; the test runs until it has seen both
/// outcomes (and at least 1000 runs), which with a racer exchanging thousands of times per
/// run takes a few hundred runs at most; the safety asserts hold for every run.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a hostile user's race against the copy: each move and the check after it, in the order they happen"
)]
fn merge_directory_exchanged_with_a_symlink() {
    if !need_root("merge_directory_exchanged_with_a_symlink") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let victim = VictimDir::new(t.path().join("victim"));
    let src = t.path().join("src");
    write(
        &src.join("f"),
        b"from the source: must never replace victim/f",
    );
    write(&src.join("sub/g"), b"one level down");
    for p in [
        src.join("sub/g"),
        src.join("f"),
        src.join("sub"),
        src.clone(),
    ] {
        chown_nofollow(&p, NOBODY, NOBODY);
    }
    fs::set_permissions(&src, fs::Permissions::from_mode(0o777)).unwrap();
    let share = t.path().join("share");
    let real = share.join("src");
    fs::create_dir_all(&real).unwrap();
    fs::write(real.join("theirs"), b"nobody's file, already there").unwrap();
    for p in [real.join("theirs"), real.clone(), share.clone()] {
        chown_nofollow(&p, NOBODY, NOBODY);
    }
    // The real directory, wherever its name goes.
    let real_fd = fs::File::open(&real).unwrap();
    let real_ino = real_fd.metadata().unwrap().ino();
    let real_path = PathBuf::from(format!("/proc/self/fd/{}", {
        use std::os::fd::AsRawFd;
        real_fd.as_raw_fd()
    }));
    let racer = Racer::start(
        &share,
        &[
            ("COPYSCOPE_HOSTILE_MODE", OsStr::new("exchange")),
            ("COPYSCOPE_HOSTILE_TARGET", victim.path.as_os_str()),
        ],
    );
    let (mut copied, mut refused_plan, mut refused_open) = (0u32, 0u32, 0u32);
    let mut last_stamp = String::new();
    let started = Instant::now();
    let mut runs = 0u32;
    while runs < 1000 || copied == 0 || refused_plan + refused_open == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "{runs} runs in 10 min: {copied} copied, {refused_plan} + {refused_open} refused"
        );
        let stamp = format!("run {runs}");
        fs::write(src.join("stamp"), &stamp).unwrap();
        chown_nofollow(&src.join("stamp"), NOBODY, NOBODY);
        let (code, failed, out) = run_json(
            &[
                OsStr::new("-a"),
                OsStr::new("--no-sync"),
                src.as_os_str(),
                share.as_os_str(),
            ],
            Duration::from_secs(60),
        );
        runs += 1;
        victim.assert_untouched(&format!("run {runs}"));
        canary.assert_untouched();
        let now = fs::read_to_string(real_path.join("stamp")).unwrap_or_default();
        match code {
            Some(0) => {
                copied += 1;
                assert_eq!(
                    now, stamp,
                    "run {runs} succeeded but not into share/src\n{out}"
                );
                last_stamp = stamp;
            }
            _ if out.contains("cannot overwrite non-directory") && code == Some(2) => {
                refused_plan += 1;
                if refused_plan == 1 {
                    let l = out
                        .lines()
                        .find(|l| l.contains("non-directory"))
                        .unwrap_or("");
                    eprintln!("refused by the plan: {l}");
                }
                assert_eq!(now, last_stamp, "run {runs} refused but copied\n{out}");
            }
            _ if out.contains("replaced") || failed.values().any(|m| m.contains("replaced")) => {
                refused_open += 1;
                if refused_open == 1 {
                    eprintln!("refused at the open: exit {code:?}, {failed:?}");
                }
                assert_eq!(now, last_stamp, "run {runs} refused but copied\n{out}");
            }
            _ => panic!("run {runs}: neither copied nor cleanly refused: {code:?}\n{out}"),
        }
    }
    let report = racer.stop();
    victim.assert_untouched("the end");
    // Put the real directory back under its name and check all of it.
    let lnk = share.join("lnk");
    if fs::symlink_metadata(&real).unwrap().ino() != real_ino {
        assert_eq!(fs::symlink_metadata(&lnk).unwrap().ino(), real_ino);
        fs::remove_file(&real).unwrap();
        fs::rename(&lnk, &real).unwrap();
    } else {
        fs::remove_file(&lnk).unwrap();
    }
    assert_eq!(
        fs::read_dir(&share).unwrap().count(),
        1,
        "only src left in share"
    );
    assert_eq!(
        fs::read(real.join("theirs")).unwrap(),
        b"nobody's file, already there"
    );
    fs::remove_file(real.join("theirs")).unwrap();
    assert_eq!(fs::read_to_string(real.join("stamp")).unwrap(), last_stamp);
    let (a, b) = (snapshot(&src), snapshot(&real));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "share/src: entries"
    );
    for (k, x) in a.iter().filter(|(k, _)| *k != Path::new("stamp")) {
        let y = &b[k];
        assert_eq!(
            (x.kind, x.mode, x.mtime, &x.hash, &x.link),
            (y.kind, y.mode, y.mtime, &y.hash, &y.link),
            "share/src/{k:?}"
        );
    }
    for (rel, m) in walk(&real) {
        assert_eq!((m.uid(), m.gid()), (NOBODY, NOBODY), "{rel:?}: owner");
    }
    let m = fs::metadata(&real).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (NOBODY, 0o777), "share/src");
    eprintln!(
        "merge race: {runs} runs ({copied} copied, {refused_plan} refused by the plan, \
         {refused_open} refused at the open), racer {:?}",
        report.stats
    );
}

/// Issue 23 item 4: a source file rewritten in place at the same size while it is copied,
/// its mtime then put back (what `touch -d` does): only its ctime tells. The copy must not
/// keep the torn file: exit 1, the file named, no file or temporary under its name in the
/// destination; the rest of the tree is copied. Deterministic: copyscope is stopped
/// (SIGSTOP) while it is in the middle of the file, the rewrite is made, then it goes on.
#[test]
fn same_size_rewrite_with_the_mtime_put_back() {
    if !need_root("same_size_rewrite_with_the_mtime_put_back") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let src = t.path().join("src");
    let big = src.join("big");
    write(&big, &data(4 << 20, 1));
    write(&src.join("small"), b"copied whole");
    set_mtime(&src.join("small"), 1_500_000_000);
    set_mtime(&big, 1_500_000_000);
    let before = fs::metadata(&big).unwrap();
    let dst = t.path().join("dst");
    let mut r = start_json(
        &[
            OsStr::new("-j"),
            OsStr::new("1"),
            OsStr::new("--no-sync"),
            src.as_os_str(),
            dst.as_os_str(),
        ],
        1 << 20,
    );
    // big is the only file that size: 1 MiB copied means it is open and half read.
    r.wait_for(|v| v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) >= 1 << 20);
    r.signal(rustix::process::Signal::STOP);
    while let Ok(l) = r.lines.recv_timeout(Duration::from_millis(300)) {
        r.seen.push(l);
    }
    let done_big = r
        .seen
        .iter()
        .any(|l| l.contains("file_done") && l.contains("/big\""));
    assert!(!done_big, "big was copied before the test could rewrite it");
    {
        use std::os::unix::fs::FileExt;
        let f = fs::OpenOptions::new().write(true).open(&big).unwrap();
        f.write_all_at(&data(4 << 20, 2), 0).unwrap();
        f.set_times(fs::FileTimes::new().set_modified(before.modified().unwrap()))
            .unwrap();
    }
    let after = fs::metadata(&big).unwrap();
    assert_eq!(
        (after.len(), after.mtime(), after.mtime_nsec()),
        (before.len(), before.mtime(), before.mtime_nsec())
    );
    assert_ne!(
        (after.ctime(), after.ctime_nsec()),
        (before.ctime(), before.ctime_nsec())
    );
    r.signal(rustix::process::Signal::CONT);
    let (code, out, err) = r.finish();
    canary.assert_untouched();
    assert_eq!(code, Some(1), "a torn copy was kept?\n{out}\n{err}");
    let failed: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "file_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{out}");
    assert!(
        failed[0]["path"].as_str().unwrap().ends_with("/src/big")
            && failed[0]["error"]
                .as_str()
                .unwrap()
                .contains("changed while it was copied"),
        "{failed:?}"
    );
    assert!(!dst.join("big").exists(), "the torn copy is there");
    assert!(temp_leftovers(&dst).is_empty());
    assert_eq!(walk(&dst).len(), 1, "{:?}", walk(&dst).keys());
    assert_eq!(fs::read(dst.join("small")).unwrap(), b"copied whole");
    assert_eq!(
        fs::metadata(dst.join("small")).unwrap().mtime(),
        1_500_000_000
    );
    assert_eq!(fs::read(&big).unwrap(), data(4 << 20, 2), "the source");
}

/// Pre-planted symlinks at every level of an existing destination: where a directory
/// will go, where a file will go (pointing at the canary), a dangling one whose target
/// would be created outside, and one below a real directory two levels down. Nothing is
/// written, created, chmod-ed or chown-ed outside; refusals say what cp says.
#[test]
fn planted_symlinks_at_every_destination_level() {
    if !need_root("planted_symlinks_at_every_destination_level") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let src = t.path().join("src");
    write(&src.join("f"), b"level 1 file");
    write(&src.join("d/f"), b"level 2 file");
    write(&src.join("d/e/f"), b"level 3 file");
    write(&src.join("d/e/new"), b"level 3 new");
    write(&src.join("x/f"), b"under a planted dir symlink");
    mknod(&src.join("d/e/fifo"), rustix::fs::FileType::Fifo, 0o666, 0);
    let dst = t.path().join("dst");
    fs::create_dir_all(dst.join("d/e")).unwrap();
    symlink(&canary.path, dst.join("f")).unwrap();
    symlink(&canary.path, dst.join("d/f")).unwrap();
    symlink(outside.join("created"), dst.join("d/e/new")).unwrap();
    symlink(&canary.path, dst.join("d/e/fifo")).unwrap();
    symlink(&outside, dst.join("x")).unwrap();
    symlink(&canary.path, dst.join("d/e/f")).unwrap();
    let outside_before = snapshot(&outside);

    for flags in [&[][..], &["-a"][..], &["-f"][..]] {
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        let mut contents = src.clone().into_os_string();
        contents.push("/.");
        args.push(&contents);
        args.push(dst.as_os_str());
        let (code, failed, out) = run_json(&args, Duration::from_secs(60));
        canary.assert_untouched();
        assert_eq!(
            snapshot(&outside),
            outside_before,
            "{flags:?}: outside changed"
        );
        assert_eq!(code, Some(1), "{flags:?}\n{out}");
        let msg = |suffix: &str| {
            failed
                .iter()
                .find(|(k, _)| k.ends_with(suffix))
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert!(
            msg("/x").contains("cannot overwrite non-directory") || out.contains("non-directory"),
            "{flags:?}: {out}"
        );
        if flags.is_empty() || flags == ["-f"] {
            assert!(
                msg("e/new").contains("not writing through dangling symlink"),
                "{flags:?}: {failed:?}"
            );
            assert!(
                fs::symlink_metadata(dst.join("d/e/new"))
                    .unwrap()
                    .is_symlink()
            );
        }
        // A symlink to an existing file is replaced by the copy, never written through.
        for (p, want) in [
            ("f", &b"level 1 file"[..]),
            ("d/f", b"level 2 file"),
            ("d/e/f", b"level 3 file"),
        ] {
            let m = fs::symlink_metadata(dst.join(p)).unwrap();
            assert!(m.is_file(), "{flags:?}: {p} is {:?}", m.file_type());
            assert_eq!(fs::read(dst.join(p)).unwrap(), want);
        }
        assert!(
            fs::symlink_metadata(dst.join("d/e/fifo"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert!(temp_leftovers(&dst).is_empty());
        // Plant them again for the next round.
        for p in ["f", "d/f", "d/e/f", "d/e/fifo"] {
            fs::remove_file(dst.join(p)).unwrap();
            symlink(&canary.path, dst.join(p)).unwrap();
        }
    }
}

/// A destination directory renamed away and replaced by a symlink to a directory outside
/// while its files are being copied: the copy goes on into the directory it opened (by
/// descriptor), never into the symlink's target.
#[test]
fn destination_directory_swapped_for_a_symlink_mid_copy() {
    if !need_root("destination_directory_swapped_for_a_symlink_mid_copy") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let src = t.path().join("src");
    for i in 0..40 {
        write(&src.join(format!("sub/f{i:02}")), &data(64 << 10, i));
    }
    write(&src.join("sub/deeper/g"), b"deeper");
    let dst = t.path().join("dst");
    let mut r = start_json(
        &[
            OsStr::new("-j"),
            OsStr::new("1"),
            OsStr::new("--no-sync"),
            src.as_os_str(),
            dst.as_os_str(),
        ],
        1 << 20,
    );
    r.wait_copying();
    let sub = dst.join("sub");
    let moved = dst.join("moved");
    fs::rename(&sub, &moved).unwrap();
    symlink(&outside, &sub).unwrap();
    let started = Instant::now();
    let (code, out, err) = r.finish();
    assert!(started.elapsed() < Duration::from_secs(30));
    canary.assert_untouched();
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing may land in the symlink's target\n{out}\n{err}"
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    fs::remove_file(&sub).unwrap();
    fs::rename(&moved, &sub).unwrap();
    assert_same_tree(&src, &dst);
}

/// The directory a tree is copied into (`copyscope src dst` with dst existing: dst/src)
/// is a symlink someone planted: never followed (cp: "cannot overwrite non-directory").
/// The same holds for the race where the name becomes a symlink between mkdir and open:
/// mkdirat then fails with EEXIST and the open does not follow.
#[test]
fn planted_symlink_where_the_tree_root_goes_is_not_followed() {
    if !need_root("planted_symlink_where_the_tree_root_goes_is_not_followed") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let src = t.path().join("src");
    write(&src.join("a/f"), b"x");
    let dst = t.path().join("dst");
    fs::create_dir(&dst).unwrap();
    symlink(&outside, dst.join("src")).unwrap();
    let o = copyscope(&[src.as_os_str(), dst.as_os_str()]);
    canary.assert_untouched();
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{}", text(&o));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot overwrite non-directory"),
        "{}",
        text(&o)
    );
}
