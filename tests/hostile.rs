//! A hostile destination (docs/security.md): root copies into a directory that an
//! unprivileged user can write, while that user races the copy. Nothing outside the tree
//! may change: a root-owned 0600 canary keeps its mode, owner, content and ctime.
//! These tests need root (CI runs as root); as another user they say so and pass.

mod util;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use util::*;

const NOBODY: u32 = 65534;

fn need_root(test: &str) -> bool {
    if !is_root() {
        eprintln!("{test}: skipped, needs root (CI runs as root)");
    }
    is_root()
}

/// A root-owned 0600 file outside every tree, and what must never change about it.
struct Canary {
    path: PathBuf,
    before: (u32, u32, i64, i64, Vec<u8>),
}

impl Canary {
    fn new(dir: &Path) -> Canary {
        let path = dir.join("canary");
        fs::write(&path, b"root's secret").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let before = Self::state(&path);
        Canary { path, before }
    }

    fn state(p: &Path) -> (u32, u32, i64, i64, Vec<u8>) {
        let m = fs::symlink_metadata(p).unwrap();
        (
            m.mode(),
            m.uid(),
            m.ctime(),
            m.ctime_nsec(),
            fs::read(p).unwrap(),
        )
    }

    fn assert_untouched(&self) {
        assert_eq!(
            Self::state(&self.path),
            self.before,
            "the canary outside the tree changed (mode, owner, ctime, content)"
        );
    }
}

/// A world-traversable scratch directory (tempdirs are 0700: nobody could not reach in).
fn scratch() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    t
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

/// The racer, run as its own process under `setpriv --reuid=nobody` by
/// `special_file_chmod_race`: it watches the destination with inotify and, for every new
/// temporary name, renames the temporary away and plants a symlink to the canary in its
/// place: the attack of issue 8 item 1. It stops at EOF on stdin and prints its score.
/// Run by the test harness on its own, it has nothing to do.
#[test]
fn racer_process_entry() {
    let (Ok(dir), Ok(canary)) = (
        std::env::var("COPYSCOPE_HOSTILE_RACER"),
        std::env::var("COPYSCOPE_HOSTILE_CANARY"),
    ) else {
        return;
    };
    use rustix::fs::{self as rfs, Mode, OFlags, inotify};
    let dfd = rfs::open(
        &dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("racer: open dir");
    let ino = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
        .expect("inotify");
    inotify::add_watch(
        &ino,
        &dir,
        inotify::WatchFlags::CREATE | inotify::WatchFlags::MOVED_TO,
    )
    .expect("watch");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().lines().count();
        s2.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let (mut seen, mut swapped) = (0u64, 0u64);
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 1 << 16];
    let mut names: Vec<OsString> = Vec::new();
    let mut planted = std::collections::HashSet::new();
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        {
            let mut rd = inotify::Reader::new(&ino, &mut buf);
            while let Ok(ev) = rd.next() {
                if let Some(n) = ev.file_name() {
                    let n = n.to_bytes();
                    if n.windows(TEMP_MARKER.len())
                        .any(|w| w == TEMP_MARKER.as_bytes())
                    {
                        names.push(OsStr::from_bytes(n).to_os_string());
                    }
                }
            }
        }
        if names.is_empty() {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        for n in names.drain(..) {
            // Its own symlinks carry the temporary's name too: not a new temporary.
            if !planted.insert(n.clone()) {
                continue;
            }
            seen += 1;
            let away = format!(".racer-moved-{seen}");
            if rfs::renameat(&dfd, &n, &dfd, away.as_str()).is_ok()
                && rfs::symlinkat(canary.as_str(), &dfd, &n).is_ok()
            {
                swapped += 1;
                println!("racer: swapped {}", n.to_string_lossy());
            }
        }
    }
    println!("racer: seen {seen} swapped {swapped}");
}

/// Starts the racer process as nobody on `dir`: this test binary, copied next to `dir`
/// (the build directory may not be reachable by nobody, e.g. a checkout under /root).
fn start_racer(dir: &Path, canary: &Path) -> std::process::Child {
    let exe = dir.parent().unwrap().join("racer");
    fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(exe)
    .args(["--exact", "racer_process_entry", "--nocapture"])
    .env("COPYSCOPE_HOSTILE_RACER", dir)
    .env("COPYSCOPE_HOSTILE_CANARY", canary)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    let child = c.spawn().expect("setpriv (util-linux) runs the racer");
    // Give it time to set up its watch.
    std::thread::sleep(Duration::from_millis(300));
    child
}

/// Stops the racer; returns its score and the names it swapped.
fn stop_racer(mut child: std::process::Child) -> (u64, Vec<String>) {
    drop(child.stdin.take());
    let out = child.stdout.take().unwrap();
    let mut score = None;
    let mut names = Vec::new();
    for l in BufReader::new(out).lines().map_while(Result::ok) {
        if let Some(n) = l.strip_prefix("racer: swapped ") {
            names.push(n.to_string());
        }
        if let Some(rest) = l.strip_prefix("racer: seen ") {
            let n: Vec<u64> = rest
                .split(" swapped ")
                .map(|x| x.trim().parse().unwrap())
                .collect();
            score = Some(n[1]);
        }
    }
    let _ = child.wait();
    (score.expect("the racer reported its score"), names)
}

fn mknod(p: &Path, kind: rustix::fs::FileType, mode: u32, dev: u64) {
    use rustix::fs as rfs;
    rfs::mknodat(rfs::CWD, p, kind, rfs::Mode::from_raw_mode(mode), dev as _).unwrap();
    // mknod applied the umask.
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// Issue 8 item 1: thousands of FIFOs and device nodes (and symlinks and small files)
/// copied as root with `-a -j 2` into a directory nobody can write, while nobody swaps
/// each temporary for a symlink to a root-owned 0600 file. The canary must not change;
/// every entry is either the node copied (type, mode, device number) or reported failed.
#[test]
fn special_file_chmod_race() {
    if !need_root("special_file_chmod_race") {
        return;
    }
    let t = scratch();
    let canary = Canary::new(t.path());
    let src = t.path().join("src");
    fs::create_dir(&src).unwrap();
    use rustix::fs::FileType;
    let null = rustix::fs::makedev(1, 3);
    let mut kinds = BTreeMap::new();
    for i in 0..3000 {
        let name = format!("n{i:04}");
        let p = src.join(&name);
        match i % 10 {
            0..=5 => mknod(&p, FileType::Fifo, 0o666, 0),
            6 | 7 => mknod(&p, FileType::CharacterDevice, 0o666, null),
            8 => symlink("target", &p).unwrap(),
            _ => {
                fs::write(&p, name.as_bytes()).unwrap();
                fs::set_permissions(&p, fs::Permissions::from_mode(0o666)).unwrap();
            }
        }
        kinds.insert(name, i % 10);
    }
    let dst = t.path().join("dst");
    fs::create_dir(&dst).unwrap();
    fs::set_permissions(&dst, fs::Permissions::from_mode(0o777)).unwrap();
    rustix::fs::chown(
        &dst,
        Some(rustix::fs::Uid::from_raw(NOBODY)),
        Some(rustix::fs::Gid::from_raw(NOBODY)),
    )
    .unwrap();

    let racer = start_racer(&dst, &canary.path);
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
        Duration::from_secs(180),
    );
    let (swapped, swapped_names) = stop_racer(racer);
    canary.assert_untouched();
    assert!(
        swapped > 0,
        "the racer never won a swap, so this run proved nothing\n{out}"
    );
    assert_eq!(code, Some(if failed.is_empty() { 0 } else { 1 }), "{out}");
    for f in failed.values() {
        assert!(
            f.contains("replaced") || f.contains("No such file"),
            "unexpected failure: {f}"
        );
    }
    let mut checked = 0;
    for (name, kind) in &kinds {
        let shown = src
            .join(name)
            .display()
            .to_string()
            .replacen("src", "src/.", 0);
        if failed.keys().any(|k| k.ends_with(&format!("/{name}"))) {
            continue;
        }
        let p = dst.join(name);
        let m = fs::symlink_metadata(&p)
            .unwrap_or_else(|e| panic!("{shown} not failed and not copied: {e}\n{out}"));
        let ft = m.file_type();
        let ok = match kind {
            0..=5 => ft.is_fifo() && m.mode() & 0o7777 == 0o666,
            6 | 7 => ft.is_char_device() && m.rdev() == null && m.mode() & 0o7777 == 0o666,
            8 => ft.is_symlink() && fs::read_link(&p).unwrap() == Path::new("target"),
            _ => ft.is_file() && fs::read(&p).unwrap() == name.as_bytes(),
        };
        assert!(ok, "{name}: wrong node {ft:?} {:o}", m.mode());
        assert_eq!(m.uid(), 0, "{name}: owner");
        checked += 1;
    }
    // Every temporary the racer swapped belongs to an entry reported failed (probe files,
    // made only after a mismatch, are not entries).
    let unfailed: Vec<_> = swapped_names
        .iter()
        .filter(|n| !n.contains(".probe"))
        .filter(|n| {
            let base = n
                .trim_start_matches('.')
                .split(TEMP_MARKER)
                .next()
                .unwrap_or("");
            !failed.keys().any(|k| k.ends_with(&format!("/{base}")))
        })
        .collect();
    eprintln!(
        "race: racer swapped {swapped} temporaries; {} entries failed, {checked} checked; swapped but not failed: {:?}",
        failed.len(),
        &unfailed[..unfailed.len().min(10)]
    );
    assert!(
        unfailed.is_empty(),
        "swapped but not reported: {unfailed:?}"
    );
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
