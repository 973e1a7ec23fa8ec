//! Writer processes followed by `watch --pid/--comm`: their `/proc/PID/io` write counters
//! (the intake a copy's own counters stand for), the file each is writing and its position
//! from `/proc/PID/fd` and `fdinfo` (as progress(1) does), and the set of pids by command name.
//! Pure parsers plus one stateful reader; every path is under the [`SysRoot`].

use std::collections::HashMap;
use std::path::PathBuf;

use super::root::SysRoot;
use crate::copy::CurrentFile;

/// Ticks between two scans of /proc for new processes with a followed command name
/// (smbd forks one per client connection; a scan reads every /proc/PID/comm).
const COMM_RESCAN_TICKS: u64 = 10;

/// The write counters of `/proc/PID/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcIo {
    /// Bytes passed to write()-like syscalls (files, pipes and sockets).
    pub wchar: u64,
    /// Bytes this process caused to be sent to the storage layer (page dirtying included).
    pub write_bytes: u64,
}

/// Parses `/proc/PID/io`; `None` when `wchar` is missing.
pub fn parse_proc_io(text: &str) -> Option<ProcIo> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some(ProcIo {
        wchar: field("wchar")?,
        write_bytes: field("write_bytes").unwrap_or(0),
    })
}

/// Parses `/proc/PID/fdinfo/FD`: (pos, open flags).
pub fn parse_fdinfo(text: &str) -> Option<(u64, u32)> {
    let mut pos = None;
    let mut flags = None;
    for l in text.lines() {
        match l.split_once(':') {
            Some(("pos", v)) => pos = v.trim().parse().ok(),
            Some(("flags", v)) => flags = u32::from_str_radix(v.trim(), 8).ok(),
            _ => {}
        }
    }
    Some((pos?, flags?))
}

/// True for a descriptor opened for writing (O_WRONLY or O_RDWR) on a path that names a
/// file (not a socket, pipe, anon inode or a pseudo filesystem).
pub fn is_written_file(target: &str, flags: u32) -> bool {
    const PSEUDO: [&str; 3] = ["/dev/", "/proc/", "/sys/"];
    flags & 0o3 != 0 && target.starts_with('/') && !PSEUDO.iter().any(|p| target.starts_with(p))
}

/// The parent pid from `/proc/PID/stat` (the field after the parenthesised name, which may
/// itself hold spaces and parentheses).
pub fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The state letter from `/proc/PID/stat` (`R`, `S`, `D`, `Z` …).
pub fn parse_state(stat: &str) -> Option<char> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// The process's name from `/proc/PID/comm`.
pub fn parse_comm(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

/// A file a writer holds open for writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    pub pid: u32,
    pub fd: u32,
    pub path: String,
    pub pos: u64,
}

/// Among the files held open for writing, the one being written now: the one whose position
/// moved most since the previous tick, else the furthest along.
pub fn current_of(files: &[WrittenFile], before: &HashMap<(u32, u32), u64>) -> Option<usize> {
    let moved = |f: &WrittenFile| {
        f.pos
            .saturating_sub(before.get(&(f.pid, f.fd)).copied().unwrap_or(f.pos))
    };
    (0..files.len()).max_by_key(|&i| (moved(&files[i]), files[i].pos))
}

/// What the followed writers did up to this tick.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritersTick {
    /// Bytes written since the watch started (exited threads and processes keep theirs).
    pub wchar: u64,
    /// Processes followed now.
    pub pids: Vec<u32>,
    /// A followed process whose io file could not be read (not root, or another user's).
    pub unreadable: bool,
    pub current: Option<CurrentFile>,
}

/// Follows writer processes by pid and command name.
#[derive(Debug)]
pub struct WriterReader {
    root: SysRoot,
    fixed: Vec<u32>,
    comms: Vec<String>,
    by_comm: Vec<u32>,
    ticks: u64,
    /// Per process: the wchar at the start, the last seen (less its reaped children's), the
    /// last raw figure and the parent. The intake is the sum of (last - first).
    io: HashMap<u32, Followed>,
    /// What followed children that ended had written, by parent: reaping adds a child's
    /// counters to its parent's (smbd's parent would count each finished connection again).
    reaped: HashMap<u32, u64>,
    positions: HashMap<(u32, u32), u64>,
}

/// One read of a followed process.
struct Reading {
    io: ProcIo,
    ppid: u32,
}

/// The counters of one followed process.
#[derive(Debug, Clone, Copy)]
struct Followed {
    base: u64,
    last: u64,
    raw: u64,
    ppid: u32,
    ended: bool,
}

impl WriterReader {
    pub fn new(root: &SysRoot, pids: &[u32], comms: &[String]) -> Self {
        WriterReader {
            root: root.clone(),
            fixed: pids.to_vec(),
            comms: comms.to_vec(),
            by_comm: Vec::new(),
            ticks: 0,
            io: HashMap::new(),
            reaped: HashMap::new(),
            positions: HashMap::new(),
        }
    }

    /// Reads every followed process once.
    pub fn read(&mut self) -> WritersTick {
        if !self.comms.is_empty() && self.ticks.is_multiple_of(COMM_RESCAN_TICKS) {
            self.by_comm = self.scan_comms();
        }
        let first = self.ticks == 0;
        self.ticks += 1;
        let mut pids = self.fixed.clone();
        pids.extend(self.by_comm.iter().filter(|p| !self.fixed.contains(p)));
        let mut tick = WritersTick::default();
        // Ended processes first: a parent read before its reaped child is found gone would
        // count the child's bytes again.
        let gone: Vec<u32> = (self.io.keys())
            .filter(|p| !self.root.join(format!("proc/{p}")).exists())
            .copied()
            .collect();
        for pid in gone {
            self.ended(pid);
        }
        let readings: Vec<(u32, Option<Reading>)> =
            pids.iter().map(|&pid| (pid, self.read_raw(pid))).collect();
        // The kernel adds a child's counters to its parent's when it reaps it, and removes
        // the child from /proc only after that: a parent read in between already holds the
        // child's bytes (an 800 MB Samba upload was counted twice). So every followed process
        // that is dead (a zombie) or gone by now is ended before any parent's figure is
        // adjusted: at worst a parent is undercounted for a tick, never the child counted twice.
        // Only a followed process's children can be in a followed counter twice: only they are
        // looked at again.
        let mut children: Vec<u32> =
            (self.io.iter())
                .filter(|(_, f)| !f.ended && pids.contains(&f.ppid))
                .map(|(pid, _)| *pid)
                .chain(readings.iter().filter_map(|(pid, r)| {
                    r.as_ref().filter(|r| pids.contains(&r.ppid)).map(|_| *pid)
                }))
                .collect();
        children.sort_unstable();
        children.dedup();
        let dead: Vec<u32> = children.into_iter().filter(|p| !self.alive(*p)).collect();
        let (dying, living): (Vec<_>, Vec<_>) = readings
            .into_iter()
            .partition(|(pid, _)| dead.contains(pid));
        for (pid, reading) in dying {
            self.account(pid, reading, first);
        }
        for pid in dead {
            self.ended(pid);
        }
        for (pid, reading) in living {
            tick.unreadable |= !self.account(pid, reading, first);
        }
        tick.wchar = self.io.values().map(|f| f.last - f.base).sum();
        tick.current = self.current_file(&pids);
        tick.pids = pids;
        tick
    }

    /// `pid`'s write counter and parent, if it can be read.
    fn read_raw(&self, pid: u32) -> Option<Reading> {
        let io = self
            .root
            .read_to_string(format!("proc/{pid}/io"))
            .ok()
            .and_then(|t| parse_proc_io(&t))?;
        // No reading without the parent: a child reaped between the two reads had its bytes
        // added to its parent's counter, and without knowing that parent they would be
        // counted again (once here, once in the parent's counter: one 64 KiB `head` too many
        // in tests/watch.rs under load).
        let ppid = self
            .root
            .read_to_string(format!("proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_ppid(&t))?;
        Some(Reading { io, ppid })
    }

    /// Running (not a zombie, not gone).
    fn alive(&self, pid: u32) -> bool {
        self.root
            .read_to_string(format!("proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_state(&t))
            .is_some_and(|s| !matches!(s, 'Z' | 'X' | 'x'))
    }

    /// Takes `pid`'s reading into the intake; false when the process exists but could not
    /// be read.
    fn account(&mut self, pid: u32, reading: Option<Reading>, first: bool) -> bool {
        if self.io.get(&pid).is_some_and(|f| f.ended) {
            return true; // a zombie's counters were final when it was ended
        }
        let Some(Reading { io, ppid }) = reading else {
            if self.root.join(format!("proc/{pid}")).exists() {
                return false;
            }
            self.ended(pid);
            return true;
        };
        // What a process wrote before the watch is not intake; one that appeared since (smbd
        // forks one per client) wrote all of it in view.
        let base = if first { io.wchar } else { 0 };
        let adjusted = io
            .wchar
            .saturating_sub(self.reaped.get(&pid).copied().unwrap_or(0));
        let f = self.io.entry(pid).or_insert(Followed {
            base,
            last: base,
            raw: io.wchar,
            ppid,
            ended: false,
        });
        f.last = f.last.max(adjusted);
        f.raw = io.wchar;
        true
    }

    /// A followed process is gone: its parent's counter will include it once reaped.
    fn ended(&mut self, pid: u32) {
        if let Some(f) = self.io.get_mut(&pid).filter(|f| !f.ended) {
            f.ended = true;
            *self.reaped.entry(f.ppid).or_insert(0) += f.raw;
        }
    }

    /// Pids whose comm is one of the followed names.
    fn scan_comms(&self) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir(self.root.join("proc")) else {
            return Vec::new();
        };
        let mut pids: Vec<u32> = dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                self.root
                    .read_to_string(format!("proc/{pid}/comm"))
                    .is_ok_and(|t| self.comms.iter().any(|c| c == parse_comm(&t)))
            })
            .collect();
        pids.sort_unstable();
        pids
    }

    fn current_file(&mut self, pids: &[u32]) -> Option<CurrentFile> {
        let files: Vec<WrittenFile> = pids.iter().flat_map(|&p| self.written_files(p)).collect();
        let pick = current_of(&files, &self.positions);
        self.positions = files.iter().map(|f| ((f.pid, f.fd), f.pos)).collect();
        let f = &files[pick?];
        let size = std::fs::metadata(self.root.join(format!("proc/{}/fd/{}", f.pid, f.fd)))
            .map_or(f.pos, |m| m.len().max(f.pos));
        Some(CurrentFile {
            path: PathBuf::from(&f.path),
            size,
            done: f.pos,
        })
    }

    /// The files `pid` holds open for writing, from its fd links and fdinfo.
    fn written_files(&self, pid: u32) -> Vec<WrittenFile> {
        let Ok(dir) = std::fs::read_dir(self.root.join(format!("proc/{pid}/fd"))) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let fd: u32 = e.file_name().to_str()?.parse().ok()?;
                let target = std::fs::read_link(e.path()).ok()?;
                let target = target.to_str()?;
                let info = self
                    .root
                    .read_to_string(format!("proc/{pid}/fdinfo/{fd}"))
                    .ok()?;
                let (pos, flags) = parse_fdinfo(&info)?;
                is_written_file(target, flags).then(|| WrittenFile {
                    pid,
                    fd,
                    path: target.to_string(),
                    pos,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_io_of_a_real_process() {
        // /proc/PID/io of `dd oflag=dsync` writing a file on this machine (kernel 6.18).
        let t = "rchar: 164633408\nwchar: 163577856\nsyscr: 167\nsyscw: 156\n\
                 read_bytes: 0\nwrite_bytes: 164663296\ncancelled_write_bytes: 0\n";
        assert_eq!(
            parse_proc_io(t),
            Some(ProcIo {
                wchar: 163_577_856,
                write_bytes: 164_663_296
            })
        );
        assert_eq!(parse_proc_io("rchar: 5\n"), None);
    }

    #[test]
    fn fdinfo_gives_position_and_flags() {
        // fdinfo/1 of the same dd (O_WRONLY|O_DSYNC|O_LARGEFILE).
        let t = "pos:\t163577856\nflags:\t0110001\nmnt_id:\t27\nino:\t10010667\n";
        assert_eq!(parse_fdinfo(t), Some((163_577_856, 0o110001)));
        assert!(is_written_file("/srv/share/big.iso", 0o100001));
        assert!(is_written_file("/srv/share/big.iso", 0o2));
        assert!(
            !is_written_file("/srv/share/big.iso", 0o100000),
            "read-only"
        );
        assert!(!is_written_file("socket:[12345]", 0o2));
        assert!(!is_written_file("/dev/null", 0o1));
    }

    #[test]
    fn the_current_file_is_the_one_that_moved() {
        let f = |fd, pos| WrittenFile {
            pid: 7,
            fd,
            path: format!("/f{fd}"),
            pos,
        };
        let files = [f(3, 900), f(4, 200)];
        let mut before = HashMap::new();
        assert_eq!(current_of(&files, &before), Some(0), "furthest along");
        before.insert((7, 3), 900);
        before.insert((7, 4), 100);
        assert_eq!(current_of(&files, &before), Some(1), "the one that moved");
        assert_eq!(current_of(&[], &before), None);
    }

    /// A fixture /proc: smbd 4242 writing /srv/share/big.iso at fd 7; 4243 is something else.
    fn fixture(wchar: u64, pos: u64) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proc/4242");
        std::fs::create_dir_all(p.join("fd")).unwrap();
        std::fs::create_dir_all(p.join("fdinfo")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/4243")).unwrap();
        std::fs::write(p.join("comm"), "smbd\n").unwrap();
        std::fs::write(p.join("stat"), "4242 (smbd) S 4200 4200 4200 0 -1\n").unwrap();
        std::fs::write(dir.path().join("proc/4243/comm"), "sshd\n").unwrap();
        std::os::unix::fs::symlink("/srv/share/big.iso", p.join("fd/7")).unwrap();
        std::os::unix::fs::symlink("socket:[99]", p.join("fd/8")).unwrap();
        write_counters(dir.path(), wchar, pos);
        std::fs::write(p.join("fdinfo/8"), "pos:\t0\nflags:\t02000002\n").unwrap();
        dir
    }

    fn write_counters(root: &std::path::Path, wchar: u64, pos: u64) {
        let p = root.join("proc/4242");
        std::fs::write(
            p.join("io"),
            format!("rchar: 9\nwchar: {wchar}\nwrite_bytes: {wchar}\n"),
        )
        .unwrap();
        std::fs::write(
            p.join("fdinfo/7"),
            format!("pos:\t{pos}\nflags:\t0100001\n"),
        )
        .unwrap();
    }

    #[test]
    fn a_writer_found_by_comm_in_a_fixture_tree() {
        let dir = fixture(1_000_000, 500);
        let root = SysRoot::new(dir.path());
        let mut r = WriterReader::new(&root, &[], &["smbd".to_string()]);
        let first = r.read();
        assert_eq!(first.pids, vec![4242]);
        assert_eq!(
            first.wchar, 0,
            "what it wrote before the watch is not counted"
        );
        write_counters(dir.path(), 9_000_000, 8_000_500);
        let next = r.read();
        assert_eq!(next.wchar, 8_000_000);
        let cur = next.current.unwrap();
        assert_eq!(cur.path, PathBuf::from("/srv/share/big.iso"));
        assert_eq!(cur.done, 8_000_500);
        assert!(!next.unreadable);
    }

    #[test]
    fn a_reaped_child_is_not_counted_twice() {
        let dir = tempfile::tempdir().unwrap();
        let proc = |pid: u32, ppid: u32, wchar: u64| {
            let p = dir.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("comm"), "smbd\n").unwrap();
            std::fs::write(p.join("stat"), format!("{pid} (smbd) S {ppid} 1 1 0\n")).unwrap();
            std::fs::write(p.join("io"), format!("wchar: {wchar}\n")).unwrap();
        };
        proc(4200, 1, 50);
        let mut r = WriterReader::new(&SysRoot::new(dir.path()), &[], &["smbd".to_string()]);
        assert_eq!(r.read().wchar, 0);
        // A client connects: smbd forks a child that writes 10 MB, 9 MB of them seen.
        proc(4242, 4200, 9_000_000);
        for _ in 0..COMM_RESCAN_TICKS {
            r.read();
        }
        assert_eq!(r.read().wchar, 9_000_000);
        // The child ends and is reaped: the parent's counter now holds its 10 MB too.
        std::fs::remove_dir_all(dir.path().join("proc/4242")).unwrap();
        proc(4200, 1, 50 + 10_000_000 + 7);
        for _ in 0..=COMM_RESCAN_TICKS {
            r.read();
        }
        assert_eq!(
            r.read().wchar,
            10_000_007,
            "the child's 10 MB once, and the parent's 7 bytes"
        );
    }

    /// A child read between its reaping and its leaving /proc: its counters are readable, its
    /// stat (and so its parent) is not. It is not counted: its bytes are in its parent's.
    #[test]
    fn a_child_whose_parent_cannot_be_read_is_left_to_its_parents_counter() {
        let dir = tempfile::tempdir().unwrap();
        let proc = |pid: u32, stat: Option<u32>, wchar: u64| {
            let p = dir.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("comm"), "cswatchwr\n").unwrap();
            if let Some(ppid) = stat {
                let line = format!("{pid} (cswatchwr) S {ppid} 1 1 0\n");
                std::fs::write(p.join("stat"), line).unwrap();
            }
            std::fs::write(p.join("io"), format!("wchar: {wchar}\n")).unwrap();
        };
        proc(4200, Some(1), 50);
        let comms = ["cswatchwr".to_string()];
        let mut r = WriterReader::new(&SysRoot::new(dir.path()), &[], &comms);
        assert_eq!(r.read().wchar, 0);
        proc(4242, None, 65536);
        for _ in 0..COMM_RESCAN_TICKS {
            r.read();
        }
        std::fs::remove_dir_all(dir.path().join("proc/4242")).unwrap();
        proc(4200, Some(1), 50 + 65536);
        for _ in 0..=COMM_RESCAN_TICKS {
            r.read();
        }
        assert_eq!(r.read().wchar, 65536, "the child's bytes once");
    }

    /// The kernel's order when smbd reaps a connection's process: the child's counters are
    /// added to the parent's first, and the child leaves /proc after — a read in between sees
    /// the bytes in both. Seen for real: an 800 MB upload counted as 1.60 GB.
    #[test]
    fn a_child_being_reaped_is_not_counted_twice() {
        let dir = tempfile::tempdir().unwrap();
        let proc = |pid: u32, ppid: u32, state: char, wchar: u64| {
            let p = dir.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("comm"), "smbd\n").unwrap();
            let stat = format!("{pid} (smbd) {state} {ppid} 1 1 0\n");
            std::fs::write(p.join("stat"), stat).unwrap();
            std::fs::write(p.join("io"), format!("wchar: {wchar}\n")).unwrap();
        };
        proc(4200, 1, 'S', 50);
        let mut r = WriterReader::new(&SysRoot::new(dir.path()), &[], &["smbd".to_string()]);
        assert_eq!(r.read().wchar, 0);
        proc(4242, 4200, 'S', 9_000_000);
        for _ in 0..COMM_RESCAN_TICKS {
            r.read();
        }
        assert_eq!(r.read().wchar, 9_000_000);
        // Exited after 1 MB more; being reaped: its bytes are in the parent's counter already
        // while its /proc entry (a zombie's) is still there.
        proc(4242, 4200, 'Z', 10_000_000);
        proc(4200, 1, 'S', 50 + 10_000_000);
        assert_eq!(r.read().wchar, 10_000_000, "once, while being reaped");
        std::fs::remove_dir_all(dir.path().join("proc/4242")).unwrap();
        proc(4200, 1, 'S', 50 + 10_000_000 + 7);
        for _ in 0..=COMM_RESCAN_TICKS {
            assert!(r.read().wchar <= 10_000_007);
        }
        assert_eq!(r.read().wchar, 10_000_007);
    }
}
