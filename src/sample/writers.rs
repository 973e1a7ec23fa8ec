//! Writer processes followed by `watch --pid/--comm`, with their children: the bytes they put
//! into regular files on the watched filesystem, and the file they are writing. Two witnesses,
//! neither enough alone: `/proc/PID/io` `write_bytes` (pages a process dirtied or wrote
//! directly; socket and pipe writes never count, a file written and closed between two ticks
//! does) and the growth of the regular files the processes hold open for writing (size and fd
//! position from `/proc/PID/fd` and `fdinfo`: exact per file, and what tells the watched
//! filesystem from the others). One stateful reader over the pure parsers of `procfiles`;
//! with `--all` it also follows the writers `discover` finds. Every path is under the
//! [`SysRoot`].

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::discover::{self, Scan, Source};
pub use super::procfiles::{
    ProcIo, ProcStat, WatchedFs, opened_for_writing, parse_fdinfo, parse_proc_io, parse_stat,
    shown_path,
};
use super::root::SysRoot;
use crate::copy::{CurrentFile, WriterRow};

/// Ticks between two reads of every /proc/PID/stat (a process can change its name by
/// exec'ing). In between, each tick reads only the processes that are new or young: a `cp` of
/// a small tree lives for less than a second, and smbd forks one process per client.
const RESCAN_TICKS: u64 = 10;

/// Ticks a process counts as young: its name is read again, as a shell that forked it
/// exec's the real command moments later.
const YOUNG_TICKS: u64 = 5;

/// `statfs` magic numbers of filesystems whose pages are never accounted as `write_bytes`
/// (no writeback: tmpfs, ramfs, hugetlbfs): growth there is not in a process's counter.
const UNACCOUNTED_FS: [i64; 3] = [0x0102_1994, 0x8584_58f6, 0x9584_58f6];

/// The processes to follow: the pids given, those whose name is followed, and every
/// descendant of either, from `(pid, comm, ppid)` of every process. Sorted.
pub fn followed_set(table: &[(u32, String, u32)], pids: &[u32], comms: &[String]) -> Vec<u32> {
    let mut set: HashSet<u32> = pids.iter().copied().collect();
    set.extend(
        (table.iter())
            .filter(|(_, c, _)| comms.iter().any(|n| n == c))
            .map(|(p, _, _)| *p),
    );
    loop {
        let before = set.len();
        let children: Vec<u32> = (table.iter())
            .filter(|(p, _, pp)| set.contains(pp) && !set.contains(p))
            .map(|(p, _, _)| *p)
            .collect();
        set.extend(children);
        if set.len() == before {
            break;
        }
    }
    let mut v: Vec<u32> = set.into_iter().collect();
    v.sort_unstable();
    v
}

/// A descriptor open for writing on a regular file of the watched filesystem, this tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    pub pid: u32,
    pub fd: u32,
    pub path: String,
    pub pos: u64,
    pub size: u64,
    /// Bytes its file grew since the previous tick (size or position).
    pub grew: u64,
    /// The tick its file last grew; `None` while it never did.
    pub grew_at: Option<u64>,
}

/// Among the files held open for writing on the watched filesystem, the one being written:
/// the one that grew most recently (this tick first, the most among those), so a writer
/// between two 8 MiB `pwrite`s still shows its file. A file never seen growing is not shown.
pub fn current_of(files: &[WrittenFile]) -> Option<usize> {
    (0..files.len())
        .filter(|&i| files[i].grew_at.is_some())
        .max_by_key(|&i| (files[i].grew_at, files[i].grew))
}

/// A file as the screen shows it: how far the writer got.
fn shown(f: &WrittenFile) -> CurrentFile {
    CurrentFile {
        path: PathBuf::from(shown_path(&f.path)),
        size: f.size.max(f.pos),
        // A `pwrite` writer (smbd) leaves the position at 0: its file's size is how far it
        // got.
        done: if f.pos > 0 { f.pos } else { f.size },
    }
}

/// What the followed writers did up to this tick.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritersTick {
    /// Bytes written into regular files on the watched filesystem since the watch started
    /// (exited threads and processes keep theirs).
    pub bytes: u64,
    /// Processes followed now.
    pub pids: Vec<u32>,
    /// A followed process whose io file could not be read (not root, or another user's).
    pub unreadable: bool,
    pub current: Option<CurrentFile>,
    /// Each followed process that wrote or held a file here: its file and its bytes (the
    /// ended ones too), the most bytes first.
    pub rows: Vec<WriterRow>,
}

/// Follows writer processes by pid and command name, with their children.
#[derive(Debug)]
pub struct WriterReader {
    root: SysRoot,
    fixed: Vec<u32>,
    comms: Vec<String>,
    fs: WatchedFs,
    /// The watch's start: a file born since then was written entirely in view.
    since: SystemTime,
    followed: Vec<u32>,
    /// Every process seen in /proc: its name, parent, and the tick it was first seen.
    known: HashMap<u32, Known>,
    ticks: u64,
    /// Per process: its `write_bytes` at the start and its own part (less what followed
    /// children it reaped had written), and its parent.
    io: HashMap<u32, Followed>,
    /// What followed children that ended had written, by parent: reaping adds a child's
    /// counters to its parent's (smbd's parent would count each finished connection again).
    reaped: HashMap<u32, u64>,
    files: HashMap<FileKey, FileRec>,
    fds: HashMap<(u32, u32), FdRec>,
    /// Growth so far of the open files on the watched filesystem, and on other filesystems
    /// whose writes are in `write_bytes`.
    grown_here: u64,
    grown_elsewhere: u64,
    /// The intake so far (never goes back).
    bytes: u64,
    /// Growth of files on the watched filesystem, by the process whose descriptor saw it.
    grown_by: HashMap<u32, u64>,
    /// `watch --all`: the processes found writing join `fixed` as they are found.
    discovery: Option<Discovery>,
    /// Every writer's row as last seen, by pid.
    rows_seen: std::collections::BTreeMap<u32, WriterRow>,
}

/// `watch --all`: the discovery scans (src/sample/discover.rs), one per full rescan.
#[derive(Debug)]
struct Discovery {
    /// This process: never a writer to follow.
    skip: Vec<u32>,
    last: Option<Scan>,
    /// When each writer was found: its intake counts from then (its counter and its files
    /// as they stood), so a copy found a second after it began does not arrive as a second's
    /// bytes in one tick.
    found: HashMap<u32, SystemTime>,
    /// The file each found writer reads, from the last scan.
    sources: HashMap<u32, Source>,
}

/// A process seen in /proc.
#[derive(Debug, Clone)]
struct Known {
    comm: String,
    ppid: u32,
    first_tick: u64,
}

/// One read of a followed process.
struct Reading {
    io: ProcIo,
    ppid: u32,
}

/// The counters of one followed process, in its `write_bytes` units.
#[derive(Debug, Clone, Copy)]
struct Followed {
    base: u64,
    /// The highest (counter − reaped children) seen: what the process wrote itself.
    own: u64,
    ppid: u32,
    ended: bool,
}

/// A file by identity: inode and birth (an inode number is reused once a file is deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FileKey {
    dev: u64,
    ino: u64,
    born: Option<SystemTime>,
}

/// What was seen of one file held open for writing.
#[derive(Debug, Clone, Copy)]
struct FileRec {
    base_size: u64,
    max_size: u64,
    /// The most any descriptor's position moved past where it was first seen.
    pos_growth: u64,
    watched: bool,
    /// Its growth is in the writers' `write_bytes` (not on tmpfs and the like).
    accounted: bool,
    grew_at: Option<u64>,
}

impl FileRec {
    /// Bytes written into it in view: its size growth, or how far a descriptor moved in it
    /// (a file rewritten in place keeps its size).
    fn growth(&self) -> u64 {
        (self.max_size - self.base_size).max(self.pos_growth)
    }
}

/// One descriptor of a followed process: its file, the name it was opened by, and where its
/// position was first seen.
#[derive(Debug, Clone)]
struct FdRec {
    key: FileKey,
    path: String,
    base_pos: u64,
}

/// A descriptor open for writing on a regular file, as read this tick.
struct OpenFd {
    pid: u32,
    fd: u32,
    path: String,
    pos: u64,
    meta: std::fs::Metadata,
}

impl WriterReader {
    pub fn new(
        root: &SysRoot,
        pids: &[u32],
        comms: &[String],
        fs: WatchedFs,
        since: SystemTime,
    ) -> Self {
        WriterReader {
            root: root.clone(),
            fixed: pids.to_vec(),
            comms: comms.to_vec(),
            fs,
            since,
            followed: pids.to_vec(),
            known: HashMap::new(),
            ticks: 0,
            io: HashMap::new(),
            reaped: HashMap::new(),
            files: HashMap::new(),
            fds: HashMap::new(),
            grown_here: 0,
            grown_elsewhere: 0,
            bytes: 0,
            grown_by: HashMap::new(),
            discovery: None,
            rows_seen: std::collections::BTreeMap::new(),
        }
    }

    /// `watch --all`: also follows every process found writing regular files on the watched
    /// filesystem (every second; `skip`: this process).
    pub fn discovering(mut self, skip: Vec<u32>) -> Self {
        self.discovery = Some(Discovery {
            skip,
            last: None,
            found: HashMap::new(),
            sources: HashMap::new(),
        });
        self
    }

    /// One discovery scan: the processes that wrote here since the last one are followed.
    fn discover(&mut self) {
        let Some(d) = self.discovery.as_mut() else {
            return;
        };
        let now = discover::scan(&self.root, &d.skip);
        if let Some(last) = &d.last {
            for r in discover::running(last, &now, 1.0, Some(&self.fs)) {
                if !self.fixed.contains(&r.pid) {
                    self.fixed.push(r.pid);
                    d.found.insert(r.pid, SystemTime::now());
                }
                match r.source {
                    Some(src) => d.sources.insert(r.pid, src),
                    None => d.sources.remove(&r.pid),
                };
            }
        }
        d.last = Some(now);
    }

    /// When `pid`'s writes came into view: the watch's start, or when `--all` found it.
    fn since(&self, pid: u32) -> SystemTime {
        (self.discovery.as_ref())
            .and_then(|d| d.found.get(&pid).copied())
            .map_or(self.since, |t| t.max(self.since))
    }

    /// Whether `--all` found `pid` (its counter counts from its first reading).
    fn was_found(&self, pid: u32) -> bool {
        self.discovery
            .as_ref()
            .is_some_and(|d| d.found.contains_key(&pid))
    }

    /// Every followed process that wrote here or held a file here, the living updated from
    /// this tick, the ended as they were last seen; the most bytes first.
    fn rows(&mut self, pids: &[u32], open: &[WrittenFile]) -> Vec<WriterRow> {
        let now = self.living_rows(pids, open);
        for r in self.rows_seen.values_mut() {
            r.alive = false;
        }
        for mut r in now {
            // Between two writes (or two files) the row keeps the file it wrote last.
            if let Some(old) = self.rows_seen.get(&r.pid) {
                r.file = r.file.or_else(|| old.file.clone());
            }
            self.rows_seen.insert(r.pid, r);
        }
        let mut all: Vec<WriterRow> = self.rows_seen.values().cloned().collect();
        all.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.pid.cmp(&b.pid)));
        all
    }

    /// The rows of the living followed processes that wrote here or hold a file here.
    fn living_rows(&self, pids: &[u32], open: &[WrittenFile]) -> Vec<WriterRow> {
        pids.iter()
            .filter_map(|&pid| {
                let mine: Vec<WrittenFile> =
                    open.iter().filter(|f| f.pid == pid).cloned().collect();
                let own = self.io.get(&pid).map_or(0, |f| f.own - f.base);
                let bytes = own.max(self.grown_by.get(&pid).copied().unwrap_or(0));
                let file = current_of(&mine).map(|i| shown(&mine[i]));
                if bytes == 0 && file.is_none() {
                    return None;
                }
                let source = (self.discovery.as_ref())
                    .and_then(|d| d.sources.get(&pid))
                    .map(|s| (PathBuf::from(&s.path), s.pos, s.size));
                Some(WriterRow {
                    pid,
                    comm: self.comm_of(pid),
                    file,
                    bytes,
                    source,
                    alive: true,
                })
            })
            .collect()
    }

    /// `pid`'s name: as last read from its stat, else from its `comm` now.
    fn comm_of(&self, pid: u32) -> String {
        match self.known.get(&pid).filter(|k| !k.comm.is_empty()) {
            Some(k) => k.comm.clone(),
            None => (self.root)
                .read_to_string(format!("proc/{pid}/comm"))
                .map(|c| c.trim_end_matches('\n').to_string())
                .unwrap_or_default(),
        }
    }

    /// Reads every followed process once.
    pub fn read(&mut self) -> WritersTick {
        self.followed = self.scan();
        let first = self.ticks == 0;
        self.ticks += 1;
        let pids = self.followed.clone();
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
        for &pid in &dead {
            self.ended(pid);
        }
        let living_pids: Vec<u32> = living.iter().map(|(pid, _)| *pid).collect();
        for (pid, reading) in living {
            tick.unreadable |= !self.account(pid, reading, first);
        }
        let open = self.observe_files(&living_pids);
        let counted: u64 = self.io.values().map(|f| f.own - f.base).sum();
        let intake = self
            .grown_here
            .max(counted.saturating_sub(self.grown_elsewhere));
        self.bytes = self.bytes.max(intake);
        tick.bytes = self.bytes;
        tick.current = current_of(&open).map(|i| shown(&open[i]));
        tick.rows = self.rows(&living_pids, &open);
        tick.pids = pids;
        tick
    }

    /// Every process's (pid, comm, ppid), and from them the processes to follow.
    fn scan(&mut self) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir(self.root.join("proc")) else {
            return self.fixed.clone();
        };
        let pids: HashSet<u32> = dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .collect();
        self.known.retain(|p, _| pids.contains(p));
        let (tick, full) = (self.ticks, self.ticks.is_multiple_of(RESCAN_TICKS));
        for pid in pids {
            let first = self.known.get(&pid).map_or(tick, |k| k.first_tick);
            if !full && tick - first >= YOUNG_TICKS {
                continue;
            }
            let Some(s) = (self.root)
                .read_to_string(format!("proc/{pid}/stat"))
                .ok()
                .and_then(|t| parse_stat(&t))
            else {
                continue;
            };
            let k = Known {
                comm: s.comm,
                ppid: s.ppid,
                first_tick: first,
            };
            self.known.insert(pid, k);
        }
        if full {
            self.discover();
        }
        let table: Vec<(u32, String, u32)> = (self.known.iter())
            .map(|(p, k)| (*p, k.comm.clone(), k.ppid))
            .collect();
        followed_set(&table, &self.fixed, &self.comms)
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
            .and_then(|t| parse_stat(&t))?
            .ppid;
        Some(Reading { io, ppid })
    }

    /// Running (not a zombie, not gone).
    fn alive(&self, pid: u32) -> bool {
        self.root
            .read_to_string(format!("proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
            .is_some_and(|s| !matches!(s.state, 'Z' | 'X' | 'x'))
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
        let raw = io.write_bytes;
        let base = if first || self.was_found(pid) { raw } else { 0 };
        let own = raw.saturating_sub(self.reaped.get(&pid).copied().unwrap_or(0));
        let f = self.io.entry(pid).or_insert(Followed {
            base,
            own: base,
            ppid,
            ended: false,
        });
        f.own = f.own.max(own);
        true
    }

    /// A followed process is gone: its parent's counter will hold what it wrote, and what
    /// the children it reaped had written, once it is reaped. Its own children that are gone
    /// too are ended first: the amount added to its parent includes them (a grandchild ended
    /// after its parent was counted again in the grandparent's counter: rsync's chain).
    fn ended(&mut self, pid: u32) {
        let Some(f) = self.io.get(&pid).copied().filter(|f| !f.ended) else {
            return;
        };
        if let Some(f) = self.io.get_mut(&pid) {
            f.ended = true;
        }
        self.settle_files(pid);
        let kids: Vec<u32> = (self.io.iter())
            .filter(|(_, c)| !c.ended && c.ppid == pid)
            .map(|(k, _)| *k)
            .collect();
        for k in kids {
            if !self.alive(k) {
                self.ended(k);
            }
        }
        let credit = f.own + self.reaped.get(&pid).copied().unwrap_or(0);
        *self.reaped.entry(f.ppid).or_insert(0) += credit;
    }

    /// Reads the regular files the living followed processes hold open for writing, adds
    /// their growth since the previous tick, and returns those on the watched filesystem.
    fn observe_files(&mut self, pids: &[u32]) -> Vec<WrittenFile> {
        let fds: Vec<OpenFd> = pids.iter().flat_map(|&p| self.open_fds(p)).collect();
        let seen: HashSet<(u32, u32)> = fds.iter().map(|d| (d.pid, d.fd)).collect();
        let open = fds.into_iter().filter_map(|d| self.observe(d)).collect();
        self.fds.retain(|k, _| seen.contains(k));
        // A file not born in view is counted again from where it stands if it is opened again.
        let held: HashSet<FileKey> = self.fds.values().map(|r| r.key).collect();
        let since = self.since;
        self.files
            .retain(|k, _| held.contains(k) || k.born.is_some_and(|b| b >= since));
        open
    }

    /// Adds one descriptor's growth; the file as shown when it is on the watched filesystem.
    fn observe(&mut self, d: OpenFd) -> Option<WrittenFile> {
        let key = FileKey {
            dev: d.meta.dev(),
            ino: d.meta.ino(),
            born: d.meta.created().ok(),
        };
        // A file born during the watch (since `--all` found its writer) was written entirely
        // in view; any other is counted from where it stood when first seen.
        let since = self.since(d.pid);
        let fresh = key.born.is_some_and(|b| b >= since);
        let size = d.meta.len();
        if !self.files.contains_key(&key) {
            let watched = self.fs.holds(key.dev, &d.path);
            let accounted = watched || self.accounted(d.pid, d.fd);
            let base = if fresh { 0 } else { size };
            let rec = FileRec {
                base_size: base,
                max_size: base,
                pos_growth: 0,
                watched,
                accounted,
                grew_at: None,
            };
            self.files.insert(key, rec);
        }
        let rec = FdRec {
            key,
            path: d.path.clone(),
            base_pos: if fresh { 0 } else { d.pos },
        };
        let fdrec = self.fds.entry((d.pid, d.fd)).or_insert_with(|| rec.clone());
        if fdrec.key != key {
            *fdrec = rec;
        }
        let moved = d.pos.saturating_sub(fdrec.base_pos);
        let grew = self.grow(key, size, moved);
        if self.files.get(&key).is_some_and(|r| r.watched) {
            *self.grown_by.entry(d.pid).or_insert(0) += grew;
        }
        let rec = *self.files.get(&key)?;
        // Shown only inside the watched directory: a log or an inherited stdout elsewhere on
        // the same filesystem (appended to by others) counts, but is not the file written.
        let inside = Path::new(&d.path).starts_with(&self.fs.path);
        (rec.watched && inside).then_some(WrittenFile {
            pid: d.pid,
            fd: d.fd,
            path: d.path,
            pos: d.pos,
            size,
            grew,
            grew_at: rec.grew_at,
        })
    }

    /// Takes a file's size and a descriptor's move into its record and the totals; returns
    /// how much the file grew.
    fn grow(&mut self, key: FileKey, size: u64, moved: u64) -> u64 {
        let Some(rec) = self.files.get_mut(&key) else {
            return 0;
        };
        let before = rec.growth();
        rec.max_size = rec.max_size.max(size);
        rec.pos_growth = rec.pos_growth.max(moved);
        let grew = rec.growth() - before;
        if grew > 0 {
            rec.grew_at = Some(self.ticks);
        }
        if rec.watched {
            self.grown_here += grew;
        } else if rec.accounted {
            self.grown_elsewhere += grew;
        }
        grew
    }

    /// A process that ended wrote on after its last tick: the files it held are read once
    /// more by name (still the same file: same inode and birth), so `dd`'s last 100 ms count
    /// even though its parent, which now holds its counter, is not followed.
    fn settle_files(&mut self, pid: u32) {
        let held: Vec<(FileKey, String)> = (self.fds.iter())
            .filter(|((p, _), _)| *p == pid)
            .map(|(_, r)| (r.key, r.path.clone()))
            .collect();
        for (key, path) in held {
            let Ok(m) = std::fs::metadata(&path) else {
                continue;
            };
            if (m.dev(), m.ino(), m.created().ok()) == (key.dev, key.ino, key.born) {
                let grew = self.grow(key, m.len(), 0);
                if self.files.get(&key).is_some_and(|r| r.watched) {
                    *self.grown_by.entry(pid).or_insert(0) += grew;
                }
            }
        }
    }

    /// Whether writes through `pid`'s descriptor `fd` are in its `write_bytes` (its
    /// filesystem has writeback: not tmpfs, ramfs, hugetlbfs).
    fn accounted(&self, pid: u32, fd: u32) -> bool {
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        rustix::fs::statfs(self.root.join(format!("proc/{pid}/fd/{fd}")))
            .map_or(true, |s| !UNACCOUNTED_FS.contains(&(s.f_type as i64)))
    }

    /// The regular files `pid` holds open for writing, from its fd links and fdinfo.
    fn open_fds(&self, pid: u32) -> Vec<OpenFd> {
        let Ok(dir) = std::fs::read_dir(self.root.join(format!("proc/{pid}/fd"))) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let fd: u32 = e.file_name().to_str()?.parse().ok()?;
                let info = self
                    .root
                    .read_to_string(format!("proc/{pid}/fdinfo/{fd}"))
                    .ok()?;
                let (pos, flags) = parse_fdinfo(&info)?;
                if !opened_for_writing(flags) {
                    return None;
                }
                let target = std::fs::read_link(e.path()).ok()?;
                // The link is followed to the open file itself, even a deleted one: sockets,
                // pipes, devices and anonymous inodes are not regular files.
                let meta = std::fs::metadata(e.path()).ok().filter(|m| m.is_file())?;
                Some(OpenFd {
                    pid,
                    fd,
                    path: target.to_str()?.to_string(),
                    pos,
                    meta,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
        assert_eq!(parse_proc_io("rchar: 5\nwchar: 5\n"), None);
    }

    #[test]
    fn fdinfo_gives_position_and_flags() {
        // fdinfo/1 of the same dd (O_WRONLY|O_DSYNC|O_LARGEFILE).
        let t = "pos:\t163577856\nflags:\t0110001\nmnt_id:\t27\nino:\t10010667\n";
        assert_eq!(parse_fdinfo(t), Some((163_577_856, 0o110001)));
        assert!(opened_for_writing(0o100001));
        assert!(opened_for_writing(0o2));
        assert!(!opened_for_writing(0o100000), "read-only");
    }

    #[test]
    fn stat_fields_after_a_name_with_parens() {
        let s = parse_stat("4242 (rsync (x) y) D 4200 4200 4200 0 -1\n").unwrap();
        assert_eq!(
            (s.comm.as_str(), s.state, s.ppid),
            ("rsync (x) y", 'D', 4200)
        );
        assert_eq!(parse_stat("4242 (smbd"), None);
    }

    #[test]
    fn children_of_followed_processes_are_followed() {
        let row = |p: u32, c: &str, pp: u32| (p, c.to_string(), pp);
        // rsync's client 10, its receiver 11 and the receiver's generator 12; 20 is another
        // rsync, 30 an unrelated child of init.
        let table = [
            row(1, "init", 0),
            row(10, "rsync", 1),
            row(11, "rsync", 10),
            row(12, "rsync", 11),
            row(13, "ssh", 10),
            row(20, "rsync", 1),
            row(30, "cron", 1),
        ];
        assert_eq!(followed_set(&table, &[10], &[]), vec![10, 11, 12, 13]);
        assert_eq!(
            followed_set(&table, &[], &["rsync".into()]),
            vec![10, 11, 12, 13, 20]
        );
        assert_eq!(followed_set(&table, &[99], &[]), vec![99], "a pid kept");
    }

    #[test]
    fn an_unnamed_file_is_shown_as_one() {
        // /proc/PID/fd of the lab's linkat writer on ZFS (an O_TMPFILE not linked yet).
        assert_eq!(
            shown_path("/tank/linkat/#30 (deleted)"),
            "/tank/linkat/<unnamed file>"
        );
        assert_eq!(shown_path("/tank/a/f (deleted)"), "/tank/a/f (deleted)");
        assert_eq!(shown_path("/tank/a/#x (deleted)"), "/tank/a/#x (deleted)");
        assert_eq!(shown_path("/tank/a/#12"), "/tank/a/#12");
    }

    #[test]
    fn the_current_file_is_the_one_that_grew_last() {
        let f = |fd, grew, grew_at| WrittenFile {
            pid: 7,
            fd,
            path: format!("/f{fd}"),
            pos: 0,
            size: 1000,
            grew,
            grew_at,
        };
        assert_eq!(current_of(&[f(3, 0, None), f(4, 0, None)]), None);
        assert_eq!(current_of(&[f(3, 0, Some(5)), f(4, 10, Some(9))]), Some(1));
        assert_eq!(
            current_of(&[f(3, 0, Some(5)), f(4, 0, None)]),
            Some(0),
            "between two pwrites the file stays shown"
        );
        assert_eq!(current_of(&[f(3, 50, Some(9)), f(4, 10, Some(9))]), Some(0));
        assert_eq!(current_of(&[]), None);
    }

    /// A fixture /proc under `dir`: the files its fd links point to are real files in `dir`,
    /// so their size is what `stat` says.
    struct Fixture {
        dir: tempfile::TempDir,
    }

    impl Fixture {
        fn new() -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("share")).unwrap();
            std::fs::create_dir_all(dir.path().join("run")).unwrap();
            Fixture { dir }
        }

        fn root(&self) -> SysRoot {
            SysRoot::new(self.dir.path())
        }

        /// The share is the watched filesystem (by path: the whole fixture is on one device).
        fn fs(&self) -> WatchedFs {
            WatchedFs {
                dev: u64::MAX,
                path: self.dir.path().join("share"),
            }
        }

        fn reader(&self, comm: &str) -> WriterReader {
            let since = SystemTime::now() - std::time::Duration::from_secs(3600);
            WriterReader::new(&self.root(), &[], &[comm.to_string()], self.fs(), since)
        }

        fn proc(&self, pid: u32, comm: &str, state: char, ppid: u32, write_bytes: u64) {
            let p = self.dir.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(p.join("fd")).unwrap();
            std::fs::create_dir_all(p.join("fdinfo")).unwrap();
            let stat = format!("{pid} ({comm}) {state} {ppid} 1 1 0 -1\n");
            std::fs::write(p.join("stat"), stat).unwrap();
            // wchar far above write_bytes: the socket writes that must not count.
            let io = format!(
                "rchar: 9\nwchar: {}\nwrite_bytes: {write_bytes}\n",
                3 * write_bytes + 12345
            );
            std::fs::write(p.join("io"), io).unwrap();
        }

        fn gone(&self, pid: u32) {
            std::fs::remove_dir_all(self.dir.path().join(format!("proc/{pid}"))).unwrap();
        }

        /// `pid` holds `rel` (under the fixture) open for writing at `fd`, position `pos`.
        fn open(&self, pid: u32, fd: u32, rel: &str, pos: u64) {
            let p = self.dir.path().join(format!("proc/{pid}"));
            let link = p.join(format!("fd/{fd}"));
            if !link.exists() {
                std::os::unix::fs::symlink(self.dir.path().join(rel), link).unwrap();
            }
            std::fs::write(
                p.join(format!("fdinfo/{fd}")),
                format!("pos:\t{pos}\nflags:\t0100002\n"),
            )
            .unwrap();
        }

        fn grow(&self, rel: &str, size: u64) {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(self.dir.path().join(rel))
                .unwrap();
            f.set_len(size).unwrap();
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.dir.path().join(rel)
        }
    }

    fn rescan(r: &mut WriterReader) {
        for _ in 0..RESCAN_TICKS {
            r.read();
        }
    }

    /// smbd writes an upload with `pwrite` (its position stays 0) while it keeps rewriting
    /// its cache on another filesystem with plain writes (whose position moves) and answers
    /// on a socket: the upload is the file shown, and only its bytes are the intake.
    #[test]
    fn a_pwrite_writer_shows_its_growing_file_and_counts_only_that() {
        let fx = Fixture::new();
        fx.grow("run/gencache.tdb", 40_000);
        fx.proc(4242, "smbd", 'S', 1, 1_000_000);
        fx.open(4242, 9, "run/gencache.tdb", 40_000);
        std::os::unix::fs::symlink("socket:[99]", fx.dir.path().join("proc/4242/fd/8")).unwrap();
        std::fs::write(
            fx.dir.path().join("proc/4242/fdinfo/8"),
            "pos:\t0\nflags:\t02000002\n",
        )
        .unwrap();
        let mut r = fx.reader("smbd");
        let first = r.read();
        assert_eq!(first.pids, vec![4242]);
        assert_eq!(
            first.bytes, 0,
            "what it wrote before the watch is not counted"
        );
        // The client opens big.iso: 8 MiB arrive in one pwrite, the cache grows by 4 KiB.
        fx.grow("share/big.iso", 0);
        fx.open(4242, 7, "share/big.iso", 0);
        r.read();
        fx.grow("share/big.iso", 8 << 20);
        fx.grow("run/gencache.tdb", 44_096);
        fx.open(4242, 9, "run/gencache.tdb", 44_096);
        fx.proc(4242, "smbd", 'S', 1, 1_000_000 + (8 << 20) + 4096);
        let t = r.read();
        assert_eq!(t.bytes, 8 << 20);
        let cur = t.current.unwrap();
        assert_eq!(cur.path, fx.path("share/big.iso"));
        assert_eq!((cur.size, cur.done), (8 << 20, 8 << 20));
        // Between two pwrites only the cache moves: the upload stays the file shown.
        fx.grow("run/gencache.tdb", 48_192);
        fx.open(4242, 9, "run/gencache.tdb", 48_192);
        fx.proc(4242, "smbd", 'S', 1, 1_000_000 + (8 << 20) + 8192);
        let t = r.read();
        assert_eq!(t.bytes, 8 << 20);
        assert_eq!(t.current.unwrap().path, fx.path("share/big.iso"));
        assert!(!t.unreadable);
    }

    /// A writer's stdout is a log elsewhere on the watched filesystem that others append to:
    /// it is not the file shown, even while the writer's own file has not grown yet.
    #[test]
    fn a_file_outside_the_watched_directory_is_never_shown() {
        let fx = Fixture::new();
        let fs = WatchedFs {
            dev: std::fs::metadata(fx.dir.path()).unwrap().dev(),
            path: fx.path("share"),
        };
        fx.grow("run/ci.log", 1000);
        fx.proc(77, "python3", 'S', 1, 0);
        fx.open(77, 1, "run/ci.log", 1000);
        let since = SystemTime::now() - std::time::Duration::from_secs(3600);
        let mut r = WriterReader::new(&fx.root(), &[77], &[], fs, since);
        r.read();
        fx.grow("run/ci.log", 60_000);
        fx.open(77, 1, "run/ci.log", 60_000);
        assert_eq!(r.read().current, None);
        fx.grow("share/upload.bin", 0);
        fx.open(77, 5, "share/upload.bin", 0);
        r.read();
        fx.grow("share/upload.bin", 1 << 20);
        fx.grow("run/ci.log", 90_000);
        fx.open(77, 1, "run/ci.log", 90_000);
        let t = r.read();
        assert_eq!(t.current.unwrap().path, fx.path("share/upload.bin"));
    }

    /// A file written and closed between two ticks is never seen open: `write_bytes` has it.
    #[test]
    fn files_written_between_two_ticks_count_through_write_bytes() {
        let fx = Fixture::new();
        fx.proc(500, "cp", 'R', 1, 0);
        let since = SystemTime::now() - std::time::Duration::from_secs(3600);
        let mut r = WriterReader::new(&fx.root(), &[500], &[], fx.fs(), since);
        assert_eq!(r.read().bytes, 0);
        fx.proc(500, "cp", 'R', 1, 3 * 4096);
        let t = r.read();
        assert_eq!(t.bytes, 3 * 4096);
        assert_eq!(t.current, None, "nothing open to show");
    }

    #[test]
    fn a_reaped_child_is_not_counted_twice() {
        let fx = Fixture::new();
        fx.proc(4200, "smbd", 'S', 1, 50);
        let mut r = fx.reader("smbd");
        assert_eq!(r.read().bytes, 0);
        // A client connects: smbd forks a child that writes 10 MB, 9 MB of them seen.
        fx.proc(4242, "smbd", 'S', 4200, 9_000_000);
        rescan(&mut r);
        assert_eq!(r.read().bytes, 9_000_000);
        // The child ends and is reaped: the parent's counter now holds its 10 MB too.
        fx.gone(4242);
        fx.proc(4200, "smbd", 'S', 1, 50 + 10_000_000 + 7);
        rescan(&mut r);
        assert_eq!(
            r.read().bytes,
            10_000_007,
            "the child's 10 MB once, and the parent's 7 bytes"
        );
    }

    /// rsync's chain: the generator is reaped by the receiver, the receiver by the client,
    /// both between two ticks. Each one's bytes once: the receiver's counter held the
    /// generator's when it was reaped, and the client's then holds both.
    #[test]
    fn a_chain_reaped_within_one_tick_is_counted_once() {
        let fx = Fixture::new();
        fx.proc(10, "rsync", 'S', 1, 0);
        fx.proc(11, "rsync", 'S', 10, 0);
        fx.proc(12, "rsync", 'S', 11, 0);
        let mut r = fx.reader("rsync");
        assert_eq!(r.read().bytes, 0);
        fx.proc(11, "rsync", 'S', 10, 600);
        fx.proc(12, "rsync", 'S', 11, 30);
        assert_eq!(r.read().bytes, 630);
        // The generator writes 5 more and exits, the receiver 40 more and exits; the client
        // has reaped both (its own 2 bytes beside).
        fx.gone(12);
        fx.gone(11);
        fx.proc(10, "rsync", 'S', 1, 2 + 640 + 35);
        for _ in 0..3 * RESCAN_TICKS {
            assert!(r.read().bytes <= 677);
        }
        assert_eq!(r.read().bytes, 677);
    }

    /// A child read between its reaping and its leaving /proc: its counters are readable, its
    /// stat (and so its parent) is not. It is not counted: its bytes are in its parent's.
    #[test]
    fn a_child_whose_parent_cannot_be_read_is_left_to_its_parents_counter() {
        let fx = Fixture::new();
        fx.proc(4200, "cswatchwr", 'S', 1, 50);
        let mut r = fx.reader("cswatchwr");
        assert_eq!(r.read().bytes, 0);
        fx.proc(4242, "cswatchwr", 'S', 4200, 65536);
        rescan(&mut r);
        std::fs::remove_file(fx.dir.path().join("proc/4242/stat")).unwrap();
        r.read();
        fx.gone(4242);
        fx.proc(4200, "cswatchwr", 'S', 1, 50 + 65536);
        rescan(&mut r);
        assert_eq!(r.read().bytes, 65536, "the child's bytes once");
    }

    /// The kernel's order when smbd reaps a connection's process: the child's counters are
    /// added to the parent's first, and the child leaves /proc after — a read in between sees
    /// the bytes in both. Seen for real: an 800 MB upload counted as 1.60 GB.
    #[test]
    fn a_child_being_reaped_is_not_counted_twice() {
        let fx = Fixture::new();
        fx.proc(4200, "smbd", 'S', 1, 50);
        let mut r = fx.reader("smbd");
        assert_eq!(r.read().bytes, 0);
        fx.proc(4242, "smbd", 'S', 4200, 9_000_000);
        rescan(&mut r);
        assert_eq!(r.read().bytes, 9_000_000);
        // Exited after 1 MB more; being reaped: its bytes are in the parent's counter already
        // while its /proc entry (a zombie's) is still there.
        fx.proc(4242, "smbd", 'Z', 4200, 10_000_000);
        fx.proc(4200, "smbd", 'S', 1, 50 + 10_000_000);
        assert_eq!(r.read().bytes, 10_000_000, "once, while being reaped");
        fx.gone(4242);
        fx.proc(4200, "smbd", 'S', 1, 50 + 10_000_000 + 7);
        for _ in 0..=RESCAN_TICKS {
            assert!(r.read().bytes <= 10_000_007);
        }
        assert_eq!(r.read().bytes, 10_000_007);
    }

    /// On a filesystem that does not put file writes in `write_bytes` the open files' growth
    /// is the intake; a file seen again after it was closed is not counted twice.
    #[test]
    fn open_file_growth_counts_where_write_bytes_is_silent() {
        let fx = Fixture::new();
        fx.proc(700, "zfswr", 'R', 1, 0);
        let mut r = fx.reader("zfswr");
        r.read();
        fx.grow("share/a.bin", 1_000_000);
        fx.open(700, 3, "share/a.bin", 1_000_000);
        assert_eq!(r.read().bytes, 1_000_000, "born in view: all of it");
        std::fs::remove_file(fx.dir.path().join("proc/700/fd/3")).unwrap();
        r.read();
        fx.grow("share/a.bin", 1_500_000);
        fx.open(700, 4, "share/a.bin", 1_500_000);
        assert_eq!(r.read().bytes, 1_500_000);
        assert!(Path::new(&fx.path("share/a.bin")).exists());
    }
}
