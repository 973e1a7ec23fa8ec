//! The copier's own threads: each tick, what every copy thread
//! was doing — on a CPU, waiting for one, or blocked, and in which kernel function — read from
//! `/proc/self/task/*/{stat,schedstat,wchan,stack}` under the [`SysRoot`]. The parsers and the
//! classification are pure; [`ThreadReader`] only reads files and keeps the run-queue totals
//! monotonic across threads that come and go.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::root::SysRoot;

/// Thread names (comm, at most 15 bytes) of the threads that move the data: the engine thread
/// and its copy workers (`copyscope-engine`, `copyscope-copy-N`, src/copy/engine.rs), and the
/// write-behind child that submits a nearly full destination's writeback for them
/// (src/copy/writeback.rs; a process of its own, so its thread is read from its own task
/// directory), and `copyscope pipe`'s thread that passes standard input to standard output
/// (src/copy/pipe.rs).
pub const COPIER_COMM_PREFIXES: [&str; 4] = [
    "copyscope-engi",
    "copyscope-copy",
    crate::copy::writeback::CHILD_COMM,
    crate::copy::pipe::PIPE_COMM,
];

/// What one thread was doing at the instant it was sampled, best evidence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitClass {
    /// State R: on a CPU or on a run queue (the schedstat wait tells which).
    Running,
    /// Paced by the page cache: `balance_dirty_pages`.
    DirtyThrottle,
    /// Waiting for the disk: pages under writeback (stable pages, `folio_wait_writeback`), or
    /// the block layer's queue after submitting writeback itself (`rq_qos_wait`,
    /// `blk_mq_get_tag`; e.g. the copier's write-behind on a nearly full destination).
    WritebackWait,
    /// ext4 on a nearly full filesystem: free space under ~1.5 × its dirty data switches
    /// delayed allocation off, and each write first waits for the filesystem's writeback
    /// (`ext4_nonda_switch`; seen on the 40 MB/s lab disk with 247 MB free).
    NearlyFull,
    /// Held by a ZFS transaction group: `txg_wait_synced`, `txg_wait_open`, `dmu_tx_wait`,
    /// `dmu_tx_delay`.
    ZfsTxg,
    /// Synchronous write committing the ZFS intent log: `zil_commit`.
    ZilCommit,
    /// A whole txg sync the thread asked for itself: `txg_wait_synced` under one of the
    /// [`OWN_SYNC_CALLS`] (placing an `O_TMPFILE` by `linkat`, `sync`/`syncfs`, an fsync that
    /// falls back to a txg sync). The pool's rate is not what held it: its own call was.
    OwnTxgSync,
    /// ext4/jbd2 journal: `jbd2_*`, `start_this_handle`, `do_get_write_access`.
    Journal,
    /// Reading the source: `filemap_read`, a read syscall or a page-cache read wait.
    SourceRead,
    /// fsync/fdatasync waiting for data to reach the disk (not ZIL): `file_write_and_wait_range`.
    SyncWait,
    /// Writing into a full pipe: the process reading it stopped taking data (`pipe_write`,
    /// `anon_pipe_write` from 6.15; `pipe_wait_writable` under splice).
    PipeFull,
    /// Uninterruptible (D) for another or an unreadable reason.
    OtherBlocked,
    /// Interruptible sleep (S): idle, waiting for work or a lock in user space.
    Sleeping,
}

impl WaitClass {
    /// Every class, in declaration order ([`WaitClass::index`] is the position here).
    pub const ALL: [WaitClass; 13] = [
        WaitClass::Running,
        WaitClass::DirtyThrottle,
        WaitClass::WritebackWait,
        WaitClass::NearlyFull,
        WaitClass::ZfsTxg,
        WaitClass::ZilCommit,
        WaitClass::OwnTxgSync,
        WaitClass::Journal,
        WaitClass::SourceRead,
        WaitClass::SyncWait,
        WaitClass::PipeFull,
        WaitClass::OtherBlocked,
        WaitClass::Sleeping,
    ];

    /// Position in [`WaitClass::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// True for the classes where the thread was held by the kernel on the write side.
    pub fn is_destination(self) -> bool {
        matches!(
            self,
            WaitClass::DirtyThrottle
                | WaitClass::WritebackWait
                | WaitClass::NearlyFull
                | WaitClass::ZfsTxg
                | WaitClass::ZilCommit
                | WaitClass::OwnTxgSync
                | WaitClass::Journal
                | WaitClass::SyncWait
                | WaitClass::PipeFull
        )
    }
}

/// Kernel function names (substrings of a stack frame or wchan) and the class they prove, in
/// the order they are tried: the write-side waits first, because a read wait can sit under a
/// write (copy_file_range reads inside the write call).
const SIGNATURES: [(&str, WaitClass); 26] = [
    // Before the writeback waits it causes (`wb_wait_for_completion` under it).
    ("ext4_nonda_switch", WaitClass::NearlyFull),
    ("balance_dirty_pages", WaitClass::DirtyThrottle),
    ("zil_commit", WaitClass::ZilCommit),
    ("txg_wait_synced", WaitClass::ZfsTxg),
    ("txg_wait_open", WaitClass::ZfsTxg),
    ("dmu_tx_wait", WaitClass::ZfsTxg),
    ("dmu_tx_delay", WaitClass::ZfsTxg),
    ("dmu_tx_assign", WaitClass::ZfsTxg),
    ("jbd2_", WaitClass::Journal),
    ("start_this_handle", WaitClass::Journal),
    ("do_get_write_access", WaitClass::Journal),
    ("wait_on_page_writeback", WaitClass::WritebackWait),
    ("folio_wait_writeback", WaitClass::WritebackWait),
    ("folio_wait_stable", WaitClass::WritebackWait),
    ("rq_qos_wait", WaitClass::WritebackWait),
    ("blk_mq_get_tag", WaitClass::WritebackWait),
    ("file_write_and_wait_range", WaitClass::SyncWait),
    ("filemap_fdatawait", WaitClass::SyncWait),
    // A full pipe: `pipe_write` (`anon_pipe_write` from 6.15) for write(2), and splice's wait
    // for room in the pipe it fills.
    ("pipe_write", WaitClass::PipeFull),
    ("pipe_wait_writable", WaitClass::PipeFull),
    // splice waiting for data in the pipe it drains: the process writing into that pipe has
    // sent nothing (only a splicer sits here; read(2) on an empty pipe is one of IDLE_READS).
    ("pipe_wait_readable", WaitClass::SourceRead),
    ("filemap_read", WaitClass::SourceRead),
    ("filemap_get_pages", WaitClass::SourceRead),
    ("generic_file_read_iter", WaitClass::SourceRead),
    ("zfs_read", WaitClass::SourceRead),
    ("ksys_read", WaitClass::SourceRead),
];

/// The ZFS calls that wait for a whole txg sync on the caller's own behalf
/// (module/os/linux/zfs: `zfs_link` for an `O_TMPFILE` on a dataset that is not
/// `sync=disabled`, `zfs_sync` for `sync(2)`/`syncfs(2)`, `zpl_fsync`/`zfs_fsync` when the
/// intent log cannot serve it). A `txg_wait_synced` frame under one of them is a sync the
/// writer caused, not the pool's pace.
pub const OWN_SYNC_CALLS: [&str; 5] = [
    "zfs_link",
    "zpl_link",
    "zfs_sync",
    "zpl_sync_fs",
    "zfs_fsync",
];

/// Frames of a sleep that waits for another process, not for a file: reading a pipe or a
/// socket (`anon_pipe_read` from 6.15, `pipe_read` before; parts of these names). Under
/// `ksys_read` like a file read, so they are looked for first: the write-behind child waiting
/// for its next piece sits there, idle (the copy thread's kernel stacks, traced on a slow
/// disk, were in `balance_dirty_pages` in those ticks, and the child counted as "reading
/// source").
const IDLE_READS: [&str; 3] = ["pipe_read", "sock_read_iter", "unix_stream_read"];

/// Before 5.5 a reader of an empty pipe slept in `pipe_wait` itself (a whole name: its
/// successors `pipe_wait_readable` and `pipe_wait_writable` are splice's waits, not idle).
const IDLE_PIPE_WAIT: &str = "pipe_wait";

/// The first signature found in the wait channel or any stack frame, with the frame's
/// function name.
fn signature(wchan: &str, stack: &str) -> Option<(WaitClass, String)> {
    let frames: Vec<&str> = std::iter::once(wchan)
        .chain(stack.lines().map(frame_function))
        .filter(|f| !f.is_empty() && *f != "0")
        .collect();
    let found = SIGNATURES.iter().find_map(|(needle, class)| {
        frames
            .iter()
            .find(|f| f.contains(needle))
            .map(|f| (*class, (*f).to_string()))
    })?;
    let own = found.0 == WaitClass::ZfsTxg
        && frames.iter().any(|f| f.starts_with("txg_wait_synced"))
        && frames
            .iter()
            .any(|f| OWN_SYNC_CALLS.iter().any(|call| f == call));
    Some(if own {
        (WaitClass::OwnTxgSync, found.1)
    } else {
        found
    })
}

/// The innermost function a blocked thread sits in (wchan, else the stack's first frame), so
/// an unknown wait is still named in the recording.
fn top_frame(wchan: &str, stack: &str) -> Option<String> {
    std::iter::once(wchan)
        .chain(stack.lines().map(frame_function))
        .find(|f| !f.is_empty() && *f != "0")
        .map(str::to_string)
}

/// `[<0>] balance_dirty_pages+0x2c4/0xb80` → `balance_dirty_pages`.
pub fn frame_function(line: &str) -> &str {
    let s = line.trim();
    let s = s
        .strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .map_or(s, |(_, r)| r);
    let s = s.trim();
    s.split(['+', ' ']).next().unwrap_or("")
}

/// Classifies one thread from its state letter, wait channel and kernel stack (either may be
/// empty when unreadable). Returns the class and, for a blocked thread, the kernel function
/// that proves it.
pub fn classify(state: char, wchan: &str, stack: &str) -> (WaitClass, Option<String>) {
    match state {
        'R' => (WaitClass::Running, None),
        'D' => signature(wchan, stack).map_or_else(
            || (WaitClass::OtherBlocked, top_frame(wchan, stack)),
            |(c, f)| (c, Some(f)),
        ),
        // A sleeping writer can still be in a known wait (killable waits show as S on some
        // kernels, e.g. zil_commit's cv_wait); an unknown S is idle.
        'S' if waits_for_a_process(wchan, stack) => (WaitClass::Sleeping, None),
        'S' => signature(wchan, stack).map_or((WaitClass::Sleeping, None), |(c, f)| (c, Some(f))),
        _ => (WaitClass::Sleeping, None),
    }
}

/// Whether the wait channel or a stack frame is one of the [`IDLE_READS`]: a read of a pipe
/// or a socket, waiting for the process on its other end.
pub fn waits_for_a_process(wchan: &str, stack: &str) -> bool {
    std::iter::once(wchan)
        .chain(stack.lines().map(frame_function))
        .any(|f| f == IDLE_PIPE_WAIT || IDLE_READS.iter().any(|idle| f.contains(idle)))
}

/// `(comm, state)` from `/proc/PID/task/TID/stat`. The name sits in parentheses and may itself
/// contain spaces and parentheses, so the state is the first field after the *last* `)`.
pub fn parse_task_stat(text: &str) -> Option<(String, char)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let state = text.get(close + 1..)?.split_ascii_whitespace().next()?;
    let mut chars = state.chars();
    let c = chars.next()?;
    chars.next().is_none().then_some((comm, c))
}

/// `(on-CPU ns, run-queue wait ns)` from `/proc/PID/task/TID/schedstat`
/// (`run_ns wait_ns timeslices`, cumulative).
pub fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut it = text.split_ascii_whitespace();
    let run = it.next()?.parse().ok()?;
    let wait = it.next()?.parse().ok()?;
    Some((run, wait))
}

/// The copier's threads at one tick.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSample {
    /// Copy threads seen this tick.
    pub threads: u32,
    /// Copy threads not idle (not in an unexplained interruptible sleep).
    pub active: u32,
    /// Cumulative ns on a CPU, summed over every copy thread seen since the start (a thread
    /// that exited keeps its last value, so the sum never goes back).
    pub run_ns: u64,
    /// Cumulative ns waiting on a run queue for a CPU, summed the same way.
    pub runq_wait_ns: u64,
    /// How many copy threads were in each class at this instant (absent classes had none).
    pub classes: BTreeMap<WaitClass, u32>,
    /// For the first blocked thread with a known wait: the kernel function that held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_in: Option<String>,
    /// A wait channel or kernel stack was readable for at least one blocked thread, so an
    /// unexplained D state means "not one of the known waits" rather than "cannot tell".
    #[serde(default)]
    pub stacks_readable: bool,
}

impl ThreadSample {
    /// Threads in `class` at this instant.
    pub fn count(&self, class: WaitClass) -> u32 {
        self.classes.get(&class).copied().unwrap_or(0)
    }
}

/// One thread's view for [`summarize`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadView {
    pub tid: u32,
    pub comm: String,
    pub state: char,
    pub run_ns: u64,
    pub wait_ns: u64,
    pub wchan: String,
    pub stack: String,
}

/// True for the threads that move the data.
pub fn is_copier(comm: &str) -> bool {
    COPIER_COMM_PREFIXES.iter().any(|p| comm.starts_with(p))
}

/// Reads the copier's threads under a root; keeps per-thread totals so the sums stay monotonic.
#[derive(Debug)]
pub struct ThreadReader {
    root: SysRoot,
    /// Last (run, wait) of every copy thread seen, by tid.
    seen: HashMap<u32, (u64, u64)>,
    /// Watch mode: every thread of these processes instead of this process's copy threads.
    followed: Option<Vec<u32>>,
    /// The copy's helper processes to read beside `self` (the write-behind children).
    helpers: fn() -> Vec<u32>,
    /// Threads of this process seen with another name than a copier's (the sampler, the
    /// scan, the terminal's threads): a thread keeps its name, so their stat is not read
    /// again while they live (four syscalls per thread and tick, a third of the sampler's).
    not_copiers: HashSet<u32>,
    /// `(tid, running)` of the copy threads the last [`ThreadReader::read`] saw: the exact
    /// trace follows these, so it lists no task directory of its own.
    copiers: Vec<(u32, bool)>,
}

impl ThreadReader {
    pub fn new(root: &SysRoot) -> Self {
        ThreadReader {
            root: root.clone(),
            seen: HashMap::new(),
            followed: None,
            helpers: crate::copy::writeback::children,
            not_copiers: HashSet::new(),
            copiers: Vec::new(),
        }
    }

    /// Reads these helper processes' threads beside `self` (tests: a fixture's pids).
    pub fn with_helpers(mut self, helpers: fn() -> Vec<u32>) -> Self {
        self.helpers = helpers;
        self
    }

    /// Watch mode: read every thread of `pids` (the writers followed) from now on.
    pub fn follow(&mut self, pids: &[u32]) {
        self.followed = Some(pids.to_vec());
    }

    /// The task directories to read: `proc/self` or each followed process.
    fn processes(&self) -> Vec<String> {
        match &self.followed {
            None => std::iter::once("self".to_string())
                .chain((self.helpers)().iter().map(u32::to_string))
                .collect(),
            Some(pids) => pids.iter().map(u32::to_string).collect(),
        }
    }

    /// The copier's threads now; `None` when the task directory is unreadable or holds no
    /// copy thread yet and none was ever seen.
    pub fn read(&mut self) -> Option<ThreadSample> {
        let views = self.read_views();
        self.copiers.clear();
        let views = views?;
        self.copiers
            .extend(views.iter().map(|v| (v.tid, v.state == 'R')));
        if views.is_empty() && self.seen.is_empty() {
            return None;
        }
        for v in &views {
            self.seen.insert(v.tid, (v.run_ns, v.wait_ns));
        }
        let (run, wait) = self.seen.values().fold((0u64, 0u64), |(r, w), (a, b)| {
            (r.saturating_add(*a), w.saturating_add(*b))
        });
        let mut s = summarize(&views);
        s.run_ns = run;
        s.runq_wait_ns = wait;
        Some(s)
    }

    /// `(tid, running)` of the copy threads seen by the last [`ThreadReader::read`].
    pub fn copiers(&self) -> &[(u32, bool)] {
        &self.copiers
    }

    /// Every copy thread's view now; `None` when this process's task directory is unreadable.
    fn read_views(&mut self) -> Option<Vec<ThreadView>> {
        let mut views = Vec::new();
        let mut any_dir = false;
        let mut listed = HashSet::new();
        for proc in self.processes() {
            let Ok(dir) = std::fs::read_dir(self.root.join(format!("proc/{proc}/task"))) else {
                continue;
            };
            any_dir = true;
            for entry in dir.flatten() {
                let Some(tid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                // Thread ids are unique on the machine, whichever process holds them.
                if !self.not_copiers.contains(&tid) {
                    match self.read_thread(&proc, tid) {
                        Thread::Copier(v) => views.push(v),
                        Thread::Other => {
                            self.not_copiers.insert(tid);
                        }
                        Thread::Gone => {}
                    }
                }
                listed.insert(tid);
            }
        }
        // A thread id seen again after its thread ended is another thread.
        self.not_copiers.retain(|k| listed.contains(k));
        (any_dir || self.followed.is_some()).then_some(views)
    }

    fn read_thread(&self, proc: &str, tid: u32) -> Thread {
        let base = format!("proc/{proc}/task/{tid}");
        let read = |f: &str| self.root.read_to_string(format!("{base}/{f}")).ok();
        let Some((comm, state)) = read("stat").as_deref().and_then(parse_task_stat) else {
            return Thread::Gone;
        };
        // A followed writer's threads all count: its thread names are its own.
        if self.followed.is_none() && !is_copier(&comm) {
            // A thread just spawned carries its creator's name until it names itself: the
            // process's own name (the main thread's) is not final, and is read again.
            let own = read("../../comm").is_some_and(|c| c.trim_end() == comm);
            return if own { Thread::Gone } else { Thread::Other };
        }
        let (run_ns, wait_ns) = read("schedstat")
            .and_then(|t| parse_schedstat(&t))
            .unwrap_or((0, 0));
        // The stack is only worth reading for a thread that is not running.
        let blocked = state != 'R';
        let wchan = if blocked {
            read("wchan").unwrap_or_default()
        } else {
            String::new()
        };
        // Asleep on a futex is idle in user space (a lock, a condvar, the work queue): no
        // kernel wait to name, so its stack is not read.
        let idle = state == 'S' && wchan.contains("futex");
        Thread::Copier(ThreadView {
            tid,
            comm,
            state,
            run_ns,
            wait_ns,
            stack: if blocked && !idle {
                read("stack").unwrap_or_default()
            } else {
                String::new()
            },
            wchan,
        })
    }
}

/// What [`ThreadReader::read_thread`] found.
enum Thread {
    Copier(ThreadView),
    /// Not one of the copy's threads (its name says so).
    Other,
    /// Ended, or its stat is unreadable.
    Gone,
}

/// The per-tick summary of some copy threads (run-queue sums are those of `views`).
pub fn summarize(views: &[ThreadView]) -> ThreadSample {
    let mut s = ThreadSample::default();
    for v in views {
        let (class, func) = classify(v.state, v.wchan.trim(), &v.stack);
        s.threads += 1;
        if class != WaitClass::Sleeping {
            s.active += 1;
        }
        *s.classes.entry(class).or_insert(0) += 1;
        s.run_ns = s.run_ns.saturating_add(v.run_ns);
        s.runq_wait_ns = s.runq_wait_ns.saturating_add(v.wait_ns);
        let wchan = v.wchan.trim();
        if v.state != 'R' && (!v.stack.trim().is_empty() || (!wchan.is_empty() && wchan != "0")) {
            s.stacks_readable = true;
        }
        if s.held_in.is_none() && class != WaitClass::Running && class != WaitClass::Sleeping {
            s.held_in = func;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a fixture file under `root`, making its directories.
    fn put_file(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const DIRTY_STACK: &str = "[<0>] balance_dirty_pages+0x2c4/0xb80\n\
        [<0>] balance_dirty_pages_ratelimited_flags+0x2a1/0x3b0\n\
        [<0>] generic_perform_write+0x16b/0x270\n\
        [<0>] ext4_buffered_write_iter+0x6f/0x120\n\
        [<0>] vfs_write+0x236/0x3f0\n";

    #[test]
    fn stat_name_with_parens_and_spaces() {
        let t = "4242 (copyscope-copy-0) D 1 2 3";
        assert_eq!(parse_task_stat(t), Some(("copyscope-copy-0".into(), 'D')));
        let t = "7 (a) b) (c) R 1 2";
        assert_eq!(parse_task_stat(t), Some(("a) b) (c".into(), 'R')));
        assert_eq!(parse_task_stat("7 (x"), None);
        assert_eq!(parse_task_stat("7 (x) DD 1"), None);
    }

    #[test]
    fn a_nearly_full_ext4_is_told_by_its_switch_not_by_the_writeback_wait_under_it() {
        // dd's stack on the 40 MB/s lab disk with 247 MB free (tests/fixtures/corpus,
        // ext4-nearly-full): ext4 waits for its own writeback before allocating.
        let stack = "[<0>] wb_wait_for_completion+0x5e/0x90\n\
                     [<0>] __writeback_inodes_sb_nr+0x9a/0xc0\n\
                     [<0>] try_to_writeback_inodes_sb+0x52/0x70\n\
                     [<0>] ext4_nonda_switch+0x8f/0xa0\n\
                     [<0>] ext4_da_write_begin+0x4f/0x2b0\n\
                     [<0>] generic_perform_write+0x97/0x1f0\n";
        let (c, f) = classify('D', "wb_wait_for_completion", stack);
        assert_eq!(c, WaitClass::NearlyFull);
        assert_eq!(f.as_deref(), Some("ext4_nonda_switch"));
        assert!(c.is_destination());
    }

    #[test]
    fn a_txg_sync_the_writer_asked_for_is_its_own() {
        // OpenZFS 2.1's frames (the lab VM's 6.1 kernel): linkat placing an O_TMPFILE, syncfs.
        let link = "[<0>] cv_wait_common+0xfa/0x130 [spl]\n[<0>] txg_wait_synced_impl+0xc0/0x110 [zfs]\n\
                    [<0>] txg_wait_synced+0xc/0x40 [zfs]\n[<0>] zfs_link+0x3b4/0x470 [zfs]\n\
                    [<0>] zpl_link+0xd5/0x1a0 [zfs]\n[<0>] vfs_link+0x1d4/0x2c0\n\
                    [<0>] do_linkat+0x2d5/0x320\n[<0>] __x64_sys_linkat+0x2c/0x40\n";
        let (c, f) = classify('D', "cv_wait_common", link);
        assert_eq!(c, WaitClass::OwnTxgSync);
        assert_eq!(f.as_deref(), Some("txg_wait_synced_impl"));
        let syncfs = "[<0>] txg_wait_synced_impl+0xc0/0x110 [zfs]\n[<0>] txg_wait_synced+0xc/0x40 [zfs]\n\
                      [<0>] zfs_sync+0x6a/0xe0 [zfs]\n[<0>] zpl_sync_fs+0x41/0x70 [zfs]\n\
                      [<0>] sync_filesystem+0x6a/0x90\n[<0>] __x64_sys_syncfs+0x38/0x70\n";
        assert_eq!(classify('D', "", syncfs).0, WaitClass::OwnTxgSync);
        // The write path waiting for the pool (smbd's stack in the lab's Samba upload) is not.
        let write = "[<0>] txg_wait_synced_impl+0xc0/0x110 [zfs]\n[<0>] txg_wait_synced+0xc/0x40 [zfs]\n\
                     [<0>] dmu_tx_wait+0x1e4/0x3a0 [zfs]\n[<0>] dmu_tx_assign+0x16b/0x4c0 [zfs]\n\
                     [<0>] zfs_write+0x465/0xd40 [zfs]\n";
        assert_eq!(classify('D', "", write).0, WaitClass::ZfsTxg);
    }

    #[test]
    fn schedstat_fields() {
        assert_eq!(
            parse_schedstat("943098 1008349 3\n"),
            Some((943_098, 1_008_349))
        );
        assert_eq!(parse_schedstat("943098\n"), None);
    }

    #[test]
    fn write_side_signature_wins_over_the_read_under_it() {
        assert_eq!(
            frame_function("[<0>] txg_wait_synced+0x9c/0x140 [zfs]"),
            "txg_wait_synced"
        );
        let (c, f) = classify('D', "0", DIRTY_STACK);
        assert_eq!(c, WaitClass::DirtyThrottle);
        assert_eq!(f.as_deref(), Some("balance_dirty_pages"));
        let cfr = "[<0>] folio_wait_bit_common+0x12/0x30\n[<0>] filemap_read+0x1/0x2\n\
                   [<0>] splice_file_to_pipe+0x1/0x2\n[<0>] do_splice_direct+0x1/0x2\n";
        assert_eq!(classify('D', "", cfr).0, WaitClass::SourceRead);
        assert_eq!(classify('D', "zil_commit_impl", "").0, WaitClass::ZilCommit);
        // Write-behind: the writer submitted writeback itself and waits for the disk's queue.
        let wb = "[<0>] rq_qos_wait+0xbd/0x130\n[<0>] wbt_wait+0x9f/0x100\n\
                  [<0>] blk_mq_submit_bio+0x1f0/0x5a0\n[<0>] generic_fadvise+0x1e0/0x280\n";
        assert_eq!(classify('D', "rq_qos_wait", wb).0, WaitClass::WritebackWait);
        assert_eq!(
            classify('S', "", "[<0>] futex_wait_queue+0x1/0x2\n").0,
            WaitClass::Sleeping
        );
        assert_eq!(classify('D', "", ""), (WaitClass::OtherBlocked, None));
        let (c, f) = classify(
            'D',
            "0",
            "[<0>] sync_inodes_sb+0x1/0x2\n[<0>] syncfs+0x1/0x2\n",
        );
        assert_eq!(
            (c, f.as_deref()),
            (WaitClass::OtherBlocked, Some("sync_inodes_sb"))
        );
        assert_eq!(classify('R', "", DIRTY_STACK).0, WaitClass::Running);
    }

    /// Read from this machine (kernel 6.18): `cat` waiting on an empty pipe, as the
    /// write-behind child waits for its next piece.
    const PIPE_READ_STACK: &str = "[<0>] anon_pipe_read+0x393/0x440\n[<0>] vfs_read+0x397/0x3d0\n\
        [<0>] ksys_read+0xc3/0xf0\n[<0>] do_syscall_64+0x71/0x290\n\
        [<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n";

    #[test]
    fn a_thread_waiting_on_a_pipe_is_idle_not_reading_a_source() {
        assert_eq!(
            classify('S', "anon_pipe_read", PIPE_READ_STACK),
            (WaitClass::Sleeping, None)
        );
        // Older kernels, and a stack that could not be read.
        assert_eq!(classify('S', "pipe_wait", "").0, WaitClass::Sleeping);
        assert_eq!(classify('S', "pipe_read", "").0, WaitClass::Sleeping);
        // A FUSE source (sshfs) waits for its daemon in S under ksys_read: still a source read.
        let fuse = "[<0>] request_wait_answer+0x1/0x2\n[<0>] fuse_simple_request+0x1/0x2\n\
                    [<0>] fuse_file_read_iter+0x1/0x2\n[<0>] vfs_read+0x1/0x2\n\
                    [<0>] ksys_read+0x1/0x2\n";
        assert_eq!(
            classify('S', "request_wait_answer", fuse).0,
            WaitClass::SourceRead
        );
    }

    /// Read from this machine (6.18): `copyscope pipe`'s thread splicing into a pipe a slow
    /// reader drains, out of an empty pipe, and out of an empty pipe into a file; `yes` whose
    /// reader stopped.
    const SPLICE_INTO_FULL_PIPE: &str = "[<0>] pipe_wait_writable+0xc6/0x130\n\
        [<0>] opipe_prep.part.0+0x53/0xe0\n[<0>] do_splice+0xe0/0x890\n\
        [<0>] __do_splice+0xa5/0x220\n[<0>] __x64_sys_splice+0x84/0x120\n";
    const SPLICE_FROM_EMPTY_PIPE: &str = "[<0>] pipe_wait_readable+0xf1/0x120\n\
        [<0>] ipipe_prep.part.0+0x62/0xa0\n[<0>] do_splice+0x5a1/0x890\n\
        [<0>] __do_splice+0xa5/0x220\n[<0>] __x64_sys_splice+0x84/0x120\n";
    const SPLICE_TO_FILE_FROM_EMPTY_PIPE: &str = "[<0>] pipe_wait_readable+0xf1/0x120\n\
        [<0>] splice_from_pipe_next+0xb7/0x150\n[<0>] iter_file_splice_write+0xcd/0x540\n\
        [<0>] do_splice+0x38a/0x890\n[<0>] __do_splice+0x209/0x220\n";
    const WRITE_INTO_FULL_PIPE: &str = "[<0>] anon_pipe_write+0x332/0x6c0\n\
        [<0>] vfs_write+0x398/0x450\n[<0>] ksys_write+0xba/0xe0\n";

    #[test]
    fn a_full_pipe_holds_the_writer_and_an_empty_one_the_splicer() {
        let full = classify('S', "pipe_wait_writable", SPLICE_INTO_FULL_PIPE);
        assert_eq!(full.0, WaitClass::PipeFull);
        assert_eq!(full.1.as_deref(), Some("pipe_wait_writable"));
        assert!(full.0.is_destination());
        assert_eq!(
            classify('S', "anon_pipe_write", WRITE_INTO_FULL_PIPE).0,
            WaitClass::PipeFull
        );
        // Without the stack (not root), the wait channel alone; before 6.15, `pipe_write`.
        assert_eq!(classify('S', "pipe_write", "").0, WaitClass::PipeFull);
        for stack in [SPLICE_FROM_EMPTY_PIPE, SPLICE_TO_FILE_FROM_EMPTY_PIPE] {
            assert_eq!(
                classify('S', "pipe_wait_readable", stack).0,
                WaitClass::SourceRead
            );
        }
        // read(2) on an empty pipe stays idle (the write-behind child waiting for work), and
        // so does a pre-5.5 kernel's `pipe_wait`.
        assert_eq!(
            classify('S', "anon_pipe_read", PIPE_READ_STACK).0,
            WaitClass::Sleeping
        );
        assert_eq!(classify('S', "pipe_wait", "").0, WaitClass::Sleeping);
    }

    #[test]
    fn summary_counts_classes_and_names_the_wait() {
        let v = |tid, comm: &str, state, stack: &str| ThreadView {
            tid,
            comm: comm.into(),
            state,
            run_ns: 10,
            wait_ns: 5,
            wchan: String::new(),
            stack: stack.into(),
        };
        let s = summarize(&[
            v(1, "copyscope-engine", 'S', "[<0>] futex_wait+0x1/0x2\n"),
            v(2, "copyscope-copy-0", 'D', DIRTY_STACK),
            v(3, "copyscope-copy-1", 'R', ""),
        ]);
        assert_eq!((s.threads, s.active), (3, 2));
        assert_eq!(s.count(WaitClass::DirtyThrottle), 1);
        assert_eq!(s.count(WaitClass::Running), 1);
        assert_eq!(s.held_in.as_deref(), Some("balance_dirty_pages"));
        assert!(s.stacks_readable);
        assert_eq!((s.run_ns, s.runq_wait_ns), (30, 15));
    }

    /// A copy waiting for its write-behind child is explained by where the child waits: the
    /// child's thread (its own process) is read beside this process's copy threads.
    #[test]
    fn another_threads_stat_is_read_once_while_it_lives() {
        let t = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| put_file(t.path(), rel, text);
        put("proc/self/task/10/stat", "10 (copyscope-copy-0) R 1 2 3");
        put("proc/self/task/11/stat", "11 (copyscope-sampl) R 1 2 3");
        let root = SysRoot::new(t.path());
        let mut reader = ThreadReader::new(&root).with_helpers(Vec::new);
        assert_eq!(reader.read().unwrap().threads, 1);
        // Its stat is not read again: a thread keeps its name.
        put("proc/self/task/11/stat", "11 (copyscope-copy-1) R 1 2 3");
        assert_eq!(reader.read().unwrap().threads, 1);
        // Once the id has left the task list, a thread that gets it is read afresh.
        std::fs::remove_dir_all(t.path().join("proc/self/task/11")).unwrap();
        assert_eq!(reader.read().unwrap().threads, 1);
        put("proc/self/task/11/stat", "11 (copyscope-copy-1) R 1 2 3");
        assert_eq!(reader.read().unwrap().threads, 2);
    }

    /// The exact trace follows the threads this reader saw, with whether each was running.
    #[test]
    fn the_copy_threads_seen_are_listed_for_the_trace() {
        let t = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| put_file(t.path(), rel, text);
        put("proc/self/task/10/stat", "10 (copyscope-copy-0) R 1 2 3");
        put("proc/self/task/11/stat", "11 (copyscope-sampl) R 1 2 3");
        put("proc/self/task/12/stat", "12 (copyscope-copy-1) D 1 2 3");
        let root = SysRoot::new(t.path());
        let mut reader = ThreadReader::new(&root).with_helpers(Vec::new);
        reader.read();
        let mut seen = reader.copiers().to_vec();
        seen.sort_unstable();
        assert_eq!(seen, [(10, true), (12, false)]);
        std::fs::remove_dir_all(t.path().join("proc/self/task")).unwrap();
        assert_eq!(reader.read(), None);
        assert!(reader.copiers().is_empty(), "a thread gone is not followed");
    }

    /// A thread spawned by the main thread has the process's name until it names itself
    /// (`copyscope-pipe` is spawned so): seen then, it is read again, not taken for another.
    #[test]
    fn a_thread_still_named_as_its_process_is_read_again() {
        let t = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| put_file(t.path(), rel, text);
        put("proc/self/comm", "copyscope\n");
        put("proc/self/task/1/stat", "1 (copyscope) S 1 2 3");
        put("proc/self/task/12/stat", "12 (copyscope) R 1 2 3");
        let root = SysRoot::new(t.path());
        let mut reader = ThreadReader::new(&root).with_helpers(Vec::new);
        assert_eq!(reader.read(), None, "no copy thread yet");
        put("proc/self/task/12/stat", "12 (copyscope-pipe) S 1 2 3");
        assert_eq!(reader.read().unwrap().threads, 1);
    }

    #[test]
    fn a_copy_thread_asleep_on_a_futex_is_idle_and_its_stack_is_not_read() {
        let t = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| put_file(t.path(), rel, text);
        put("proc/self/task/10/stat", "10 (copyscope-copy-0) S 1 2 3");
        put("proc/self/task/10/wchan", "futex_do_wait");
        // A stack that would name a wait if it were read (it is not: a futex is user space).
        put("proc/self/task/10/stack", "[<0>] zil_commit+0x1/0x2\n");
        put("proc/self/task/11/stat", "11 (copyscope-copy-1) S 1 2 3");
        put("proc/self/task/11/wchan", "cv_wait_common");
        put("proc/self/task/11/stack", "[<0>] zil_commit+0x1/0x2\n");
        let s = ThreadReader::new(&SysRoot::new(t.path()))
            .with_helpers(Vec::new)
            .read()
            .unwrap();
        assert_eq!((s.threads, s.active), (2, 1));
        assert_eq!(s.count(WaitClass::Sleeping), 1);
        assert_eq!(s.count(WaitClass::ZilCommit), 1);
    }

    #[test]
    fn the_write_behind_childs_wait_explains_the_copy_waiting_for_it() {
        let t = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| put_file(t.path(), rel, text);
        put("proc/self/task/10/stat", "10 (copyscope-copy-0) S 1 2 3");
        put("proc/self/task/10/schedstat", "100 20 3");
        put("proc/self/task/10/wchan", "do_sys_poll");
        put("proc/4242/task/4242/stat", "4242 (copyscope-wback) D 1 2 3");
        put("proc/4242/task/4242/schedstat", "5 1 1");
        put("proc/4242/task/4242/wchan", "rq_qos_wait");
        put(
            "proc/4242/task/4242/stack",
            "[<0>] rq_qos_wait+0xd5/0x180\n[<0>] wbt_wait+0xb0/0x110\n\
             [<0>] generic_fadvise+0x1c2/0x2c0\n",
        );
        let root = SysRoot::new(t.path());
        let s = ThreadReader::new(&root)
            .with_helpers(|| vec![4242])
            .read()
            .unwrap();
        assert_eq!((s.threads, s.active), (2, 1));
        assert_eq!(s.count(WaitClass::WritebackWait), 1);
        assert_eq!(s.held_in.as_deref(), Some("rq_qos_wait"));
        assert_eq!((s.run_ns, s.runq_wait_ns), (105, 21));
        let alone = ThreadReader::new(&root)
            .with_helpers(Vec::new)
            .read()
            .unwrap();
        assert_eq!(alone.count(WaitClass::WritebackWait), 0);
    }
}
