//! The copies running now, found without being told, as progress(1) finds them: every
//! process's descriptors open on regular files (`/proc/PID/fd` and `fdinfo`) and its write
//! counters (`/proc/PID/io`), read twice some time apart. A process writes when a file it
//! holds open for writing grew between the two reads (its size, or the descriptor's
//! position: a file rewritten in place keeps its size), or when its `write_bytes` grew while
//! it holds one (a `pwrite` into a preallocated file moves neither). Its progress is the file
//! it reads: the position of a descriptor open read-only on a regular file against that
//! file's size. [`scan`] reads (everything under the [`SysRoot`]); [`running`] decides, pure.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::time::SystemTime;

use super::procfiles::{
    ProcIo, WatchedFs, opened_for_writing, parse_fdinfo, parse_proc_io, shown_path,
};
use super::root::SysRoot;

/// Growth below this in one window is a log line or a journal's trickle, not a copy.
pub const MIN_GROWTH: u64 = 64 << 10;

/// One descriptor open on a regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdSeen {
    pub fd: u32,
    /// The name it was opened by (`/proc/PID/fd/N`'s link; " (deleted)" when unlinked).
    pub path: String,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub pos: u64,
    pub write: bool,
    /// The file's birth (statx), when the filesystem keeps it.
    pub born: Option<SystemTime>,
    /// Its last modification.
    pub mtime: Option<SystemTime>,
}

/// One process as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcSeen {
    pub comm: String,
    pub fds: Vec<FdSeen>,
    pub io: Option<ProcIo>,
}

/// Every readable process at one moment, by pid; `unreadable` counts those whose
/// descriptors could not be listed (another user's, without root).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    pub procs: BTreeMap<u32, ProcSeen>,
    pub unreadable: u32,
    /// When it was read (wall clock: files' birth times are compared with it).
    pub at: Option<SystemTime>,
}

/// Reads every process under `root` except `skip` (this process and its helpers).
pub fn scan(root: &SysRoot, skip: &[u32]) -> Scan {
    let mut out = Scan {
        at: Some(SystemTime::now()),
        ..Scan::default()
    };
    let Ok(dir) = std::fs::read_dir(root.join("proc")) else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if skip.contains(&pid) {
            continue;
        }
        match read_process(root, pid) {
            Some(p) => {
                out.procs.insert(pid, p);
            }
            None if root.join(format!("proc/{pid}")).exists() => out.unreadable += 1,
            None => {}
        }
    }
    out
}

/// One process's name, regular-file descriptors and counters; `None` when its descriptors
/// cannot be listed.
fn read_process(root: &SysRoot, pid: u32) -> Option<ProcSeen> {
    let fd_dir = std::fs::read_dir(root.join(format!("proc/{pid}/fd"))).ok()?;
    let comm = root
        .read_to_string(format!("proc/{pid}/comm"))
        .map(|c| c.trim_end_matches('\n').to_string())
        .unwrap_or_default();
    let fds = fd_dir
        .flatten()
        .filter_map(|e| {
            let fd: u32 = e.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            // Sockets, pipes and anonymous inodes name no file: not worth their fdinfo.
            let path = target.to_str().filter(|t| t.starts_with('/'))?.to_string();
            let meta = std::fs::metadata(e.path()).ok().filter(|m| m.is_file())?;
            let info = root
                .read_to_string(format!("proc/{pid}/fdinfo/{fd}"))
                .ok()?;
            let (pos, flags) = parse_fdinfo(&info)?;
            Some(FdSeen {
                fd,
                path,
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.len(),
                pos,
                write: opened_for_writing(flags),
                born: meta.created().ok(),
                mtime: meta.modified().ok(),
            })
        })
        .collect();
    let io = root
        .read_to_string(format!("proc/{pid}/io"))
        .ok()
        .and_then(|t| parse_proc_io(&t));
    Some(ProcSeen { comm, fds, io })
}

/// A file a running copy reads: how far it got.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub path: String,
    pub pos: u64,
    pub size: u64,
}

/// A process found writing.
#[derive(Debug, Clone, PartialEq)]
pub struct Running {
    pub pid: u32,
    pub comm: String,
    /// The file it writes (the one that grew most), and its filesystem's device.
    pub file: String,
    pub dev: u64,
    /// How far into it: the descriptor's position, or the file's size for a writer that
    /// leaves its position at 0 (`pwrite`).
    pub at: u64,
    /// Bytes it wrote in the window: its files' growth, or its `write_bytes`.
    pub grew: u64,
    /// `grew` over the window, bytes/s.
    pub rate_bps: f64,
    /// The file it reads, when it holds one open read-only that is not empty.
    pub source: Option<Source>,
}

impl Running {
    /// Percent of the source read (progress(1)'s figure), when there is a source.
    pub fn percent(&self) -> Option<f64> {
        let s = self.source.as_ref()?;
        (s.size > 0).then(|| s.pos.min(s.size) as f64 * 100.0 / s.size as f64)
    }

    /// Seconds left at the window's rate, when the source says how much is left.
    pub fn eta_secs(&self) -> Option<f64> {
        let s = self.source.as_ref()?;
        (self.rate_bps > 0.0).then(|| s.size.saturating_sub(s.pos) as f64 / self.rate_bps)
    }
}

/// What each descriptor open for writing did since `before` (the scan at `since`):
/// `(fd seen now, bytes grown, modified)`. A file the descriptor held then grew by its size
/// or its position's move; one opened since counts whole if it was born since, else from
/// nothing. `modified`: its mtime moved (or it is new to the descriptor): written in the window.
fn written(
    before: Option<&ProcSeen>,
    since: Option<SystemTime>,
    now: &ProcSeen,
) -> Vec<(FdSeen, u64, bool)> {
    now.fds
        .iter()
        .filter(|f| f.write)
        .map(|f| {
            let was = before.and_then(|b| {
                b.fds
                    .iter()
                    .find(|o| o.fd == f.fd && (o.dev, o.ino) == (f.dev, f.ino))
            });
            let grew = match was {
                Some(o) => f
                    .size
                    .saturating_sub(o.size)
                    .max(f.pos.saturating_sub(o.pos)),
                None if f.born.zip(since).is_some_and(|(b, s)| b >= s) => f.size.max(f.pos),
                None => 0,
            };
            let modified = was.is_none_or(|o| o.mtime != f.mtime);
            (f.clone(), grew, modified)
        })
        .collect()
}

/// The file a process reads: a read-only descriptor on a non-empty regular file, the one
/// whose position moved most in the window, else the largest.
fn source_of(before: Option<&ProcSeen>, now: &ProcSeen) -> Option<Source> {
    let moved = |f: &FdSeen| {
        before
            .and_then(|b| b.fds.iter().find(|o| o.fd == f.fd && o.ino == f.ino))
            .map_or(0, |o| f.pos.saturating_sub(o.pos))
    };
    now.fds
        .iter()
        .filter(|f| !f.write && f.size > 0)
        .max_by_key(|f| (moved(f), f.size))
        .map(|f| Source {
            path: f.path.clone(),
            pos: f.pos,
            size: f.size,
        })
}

/// The processes writing regular files between two scans `secs` apart (on `fs` when given),
/// fastest first.
pub fn running(before: &Scan, after: &Scan, secs: f64, fs: Option<&WatchedFs>) -> Vec<Running> {
    let mut out: Vec<Running> = after
        .procs
        .iter()
        .filter_map(|(&pid, now)| one(pid, before.procs.get(&pid), before.at, now, fs))
        .map(|mut r| {
            r.rate_bps = if secs > 0.0 {
                r.grew as f64 / secs
            } else {
                0.0
            };
            r
        })
        .collect();
    out.sort_by(|a, b| b.rate_bps.total_cmp(&a.rate_bps).then(a.pid.cmp(&b.pid)));
    out
}

/// One process, if it wrote at least [`MIN_GROWTH`] (rate not yet set).
fn one(
    pid: u32,
    was: Option<&ProcSeen>,
    since: Option<SystemTime>,
    now: &ProcSeen,
    fs: Option<&WatchedFs>,
) -> Option<Running> {
    let all = written(was, since, now);
    let on_fs = |f: &FdSeen| fs.is_none_or(|w| w.holds(f.dev, &f.path));
    let here: Vec<&(FdSeen, u64, bool)> = all.iter().filter(|(f, _, _)| on_fs(f)).collect();
    let (file, _, _) = here.iter().max_by_key(|(f, g, m)| (*g, *m, f.size))?;
    let files: u64 = here.iter().map(|(_, g, _)| g).sum();
    let counted = match (was.and_then(|w| w.io), now.io) {
        (Some(a), Some(b)) => b.write_bytes.saturating_sub(a.write_bytes),
        _ => 0,
    };
    // A `pwrite` into a preallocated file moves neither its size nor a position: its
    // counter speaks for it, when its files are all here and one of them was modified. (A
    // shell's counter also jumps when it reaps a child that wrote: its files stay as they were.)
    let grew = if here.len() == all.len() && here.iter().any(|(_, _, m)| *m) {
        files.max(counted)
    } else {
        files
    };
    (grew >= MIN_GROWTH).then(|| Running {
        pid,
        comm: now.comm.clone(),
        file: shown_path(&file.path),
        dev: file.dev,
        at: if file.pos > 0 { file.pos } else { file.size },
        grew,
        rate_bps: 0.0,
        source: source_of(was, now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A fixture /proc: process `pid` named `comm`, its descriptors `(fd, file, flags, pos)`
    /// (a file under `data`, or a socket's link name) and its `write_bytes`.
    fn put_proc(root: &Path, pid: u32, comm: &str, fds: &[(u32, &Path, &str, u64)], wb: u64) {
        let p = root.join(format!("proc/{pid}"));
        std::fs::create_dir_all(p.join("fd")).unwrap();
        std::fs::create_dir_all(p.join("fdinfo")).unwrap();
        std::fs::write(p.join("comm"), format!("{comm}\n")).unwrap();
        std::fs::write(
            p.join("io"),
            format!("rchar: 0\nwchar: {wb}\nwrite_bytes: {wb}\n"),
        )
        .unwrap();
        for (fd, target, flags, pos) in fds {
            let link = p.join(format!("fd/{fd}"));
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(target, &link).unwrap();
            std::fs::write(
                p.join(format!("fdinfo/{fd}")),
                format!("pos:\t{pos}\nflags:\t{flags}\nmnt_id:\t27\n"),
            )
            .unwrap();
        }
    }

    fn grow(file: &Path, to: u64) {
        let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
        f.set_len(to).unwrap();
    }

    #[test]
    fn a_copy_is_found_with_its_file_and_percent_and_a_log_is_not() {
        let t = tempfile::tempdir().unwrap();
        let data = t.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let (src, dst, log) = (data.join("src.iso"), data.join("dst.iso"), data.join("log"));
        std::fs::write(&src, vec![0u8; 4 << 20]).unwrap();
        std::fs::write(&dst, vec![0u8; 1 << 20]).unwrap();
        std::fs::write(&log, b"started\n").unwrap();
        let sock = Path::new("socket:[4242]");
        let root = SysRoot::new(t.path());
        // cp: source read-only (0100000), destination write-only (0100001), a socket.
        let cp = |pos_src, pos_dst| {
            put_proc(
                t.path(),
                100,
                "cp",
                &[
                    (3, &src, "0100000", pos_src),
                    (4, &dst, "0100001", pos_dst),
                    (5, sock, "02", 0),
                ],
                pos_dst,
            );
        };
        cp(1 << 20, 1 << 20);
        // A daemon appending to its log, and a reader writing nothing.
        put_proc(t.path(), 200, "syslogd", &[(1, &log, "02002001", 8)], 8);
        put_proc(t.path(), 300, "sha256sum", &[(3, &src, "0100000", 0)], 0);
        let before = scan(&root, &[]);
        assert_eq!(before.procs.len(), 3);
        assert_eq!(before.procs[&100].fds.len(), 2, "the socket is no file");
        grow(&dst, 3 << 20);
        cp(3 << 20, 3 << 20);
        std::fs::write(&log, b"started\nanother line\n").unwrap();
        put_proc(t.path(), 200, "syslogd", &[(1, &log, "02002001", 21)], 21);
        let after = scan(&root, &[300]);
        let found = running(&before, &after, 2.0, None);
        assert_eq!(found.len(), 1, "{found:?}");
        let r = &found[0];
        assert_eq!((r.pid, r.comm.as_str()), (100, "cp"));
        assert_eq!(r.file, dst.to_str().unwrap());
        assert_eq!((r.at, r.grew), (3 << 20, 2 << 20));
        assert_eq!(r.rate_bps, 1_048_576.0);
        assert_eq!(r.source.as_ref().unwrap().path, src.to_str().unwrap());
        assert_eq!(r.percent(), Some(75.0));
        assert_eq!(r.eta_secs(), Some(1.0));
        // Only what is on the watched filesystem: a PATH elsewhere finds nothing.
        let elsewhere = WatchedFs {
            dev: u64::MAX,
            path: "/nowhere".into(),
        };
        assert!(running(&before, &after, 2.0, Some(&elsewhere)).is_empty());
        // A shell whose counter took its reaped child's bytes, holding a file it never wrote.
        put_proc(t.path(), 400, "bash", &[(1, &log, "0100001", 0)], 1 << 20);
        let quiet = scan(&root, &[100, 200, 300]);
        put_proc(t.path(), 400, "bash", &[(1, &log, "0100001", 0)], 1 << 30);
        let reaped = scan(&root, &[100, 200, 300]);
        assert!(
            running(&quiet, &reaped, 1.0, None).is_empty(),
            "a reaped child's bytes"
        );
        let here = WatchedFs::of(&data).unwrap();
        assert_eq!(running(&before, &after, 2.0, Some(&here)).len(), 1);
    }

    #[test]
    fn a_pwrite_into_a_preallocated_file_is_found_by_its_counter() {
        let t = tempfile::tempdir().unwrap();
        let img = t.path().join("disk.img");
        std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
        let root = SysRoot::new(t.path());
        put_proc(t.path(), 7, "qemu-img", &[(9, &img, "0100002", 0)], 1 << 20);
        let before = scan(&root, &[]);
        // Rewritten in place: the same size, a new mtime.
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        f.set_modified(SystemTime::now() + std::time::Duration::from_secs(1))
            .unwrap();
        put_proc(t.path(), 7, "qemu-img", &[(9, &img, "0100002", 0)], 5 << 20);
        let after = scan(&root, &[]);
        let found = running(&before, &after, 1.0, None);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].grew, found[0].at), (4 << 20, 8 << 20));
        assert_eq!(found[0].percent(), None, "it reads no file");
    }
}
