//! What a pipeline stage's thread was doing at one instant, in a pipeline's terms: on a CPU,
//! waiting for its input (its reads of a pipe or socket), for room on its output (its writes),
//! for the disk, reading files, in a poll over several descriptors, or asleep on something
//! else. Built on the copier's classification ([`threads::classify`]'s write-side classes,
//! its full pipe, its idle reads); pure.

use serde::{Deserialize, Serialize};

use crate::sample::threads::{self, WaitClass, frame_function};

/// One stage's state at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageWait {
    /// State R: on a CPU or on a run queue.
    Busy,
    /// A write-side kernel wait for the disk: dirty throttling, a ZFS txg, the journal,
    /// writeback, an fsync.
    Disk,
    /// Reading a file (the page cache or the disk under it).
    Reading,
    /// Blocked writing: a full pipe (`pipe_write`, `anon_pipe_write`, splice's
    /// `pipe_wait_writable`) or a socket's send buffer (`sock_sendmsg`, `tcp_sendmsg`,
    /// `sk_stream_wait_memory`, `wait_woken` under a send).
    Output,
    /// Blocked reading: an empty pipe (`pipe_read`, `anon_pipe_read`, `pipe_wait`, splice's
    /// `pipe_wait_readable`) or a socket (`sock_read_iter`, `tcp_recvmsg`, `unix_stream_read`).
    Input,
    /// In poll/select/epoll over its descriptors: which of them it waits for is not said.
    Poll,
    /// Asleep or blocked on something else: a timer (a rate limit), a lock, a child.
    Other,
}

impl StageWait {
    /// Every state, in declaration order.
    pub const ALL: [StageWait; 7] = [
        StageWait::Busy,
        StageWait::Disk,
        StageWait::Reading,
        StageWait::Output,
        StageWait::Input,
        StageWait::Poll,
        StageWait::Other,
    ];

    /// Position in [`StageWait::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// How much a thread in this state says of its process, when its threads differ: one
    /// running or held by the disk is what the process does; one blocked on a pipe is more
    /// telling than one asleep on a lock (a worker waiting for work).
    fn rank(self) -> u8 {
        match self {
            StageWait::Busy => 6,
            StageWait::Disk => 5,
            StageWait::Reading => 4,
            StageWait::Output => 3,
            StageWait::Input => 2,
            StageWait::Poll => 1,
            StageWait::Other => 0,
        }
    }
}

/// Frames of a blocked send beside the copier's full pipe.
const SENDS: [&str; 4] = [
    "sock_sendmsg",
    "tcp_sendmsg",
    "unix_stream_sendmsg",
    "sk_stream_wait_memory",
];

/// Frames of a blocked receive beside the copier's idle reads (a wait channel alone says
/// these, without the `sock_read_iter` frame above them).
const RECEIVES: [&str; 5] = [
    "tcp_recvmsg",
    "sk_wait_data",
    "unix_stream_read",
    "sock_recvmsg",
    "pipe_wait_readable",
];

/// A poll over several descriptors.
const POLLS: [&str; 6] = [
    "do_sys_poll",
    "do_select",
    "core_sys_select",
    "ep_poll",
    "do_epoll_wait",
    "poll_schedule_timeout",
];

/// The wait channel and the stack's functions, innermost first.
fn frames<'a>(wchan: &'a str, stack: &'a str) -> Vec<&'a str> {
    std::iter::once(wchan.trim())
        .chain(stack.lines().map(frame_function))
        .filter(|f| !f.is_empty() && *f != "0")
        .collect()
}

fn first_of<'a>(frames: &[&'a str], names: &[&str]) -> Option<&'a str> {
    frames
        .iter()
        .find(|f| names.iter().any(|n| f.contains(n)))
        .copied()
}

/// One thread's state from its stat letter, wait channel and kernel stack (either may be
/// empty), with the kernel function that shows it.
pub fn thread_wait(state: char, wchan: &str, stack: &str) -> (StageWait, Option<String>) {
    if state == 'R' {
        return (StageWait::Busy, None);
    }
    let fr = frames(wchan, stack);
    let named = |f: Option<&str>| f.map(str::to_string);
    let (class, func) = threads::classify(state, wchan.trim(), stack);
    if class.is_destination() && class != WaitClass::PipeFull {
        return (StageWait::Disk, func);
    }
    if class == WaitClass::PipeFull {
        return (StageWait::Output, func);
    }
    if let Some(f) = first_of(&fr, &SENDS) {
        return (StageWait::Output, named(Some(f)));
    }
    if threads::waits_for_a_process(wchan.trim(), stack) || first_of(&fr, &RECEIVES).is_some() {
        return (StageWait::Input, named(fr.first().copied()));
    }
    // `wait_woken` is a socket's wait; the syscall under it says which way.
    if fr.contains(&"wait_woken") {
        let write = fr.iter().any(|f| f.contains("write") || f.contains("send"));
        let side = if write {
            StageWait::Output
        } else {
            StageWait::Input
        };
        return (side, Some("wait_woken".into()));
    }
    if let Some(f) = first_of(&fr, &POLLS) {
        return (StageWait::Poll, named(Some(f)));
    }
    if class == WaitClass::SourceRead {
        return (StageWait::Reading, func);
    }
    (StageWait::Other, named(fr.first().copied()))
}

/// A stage's state from its threads' (and its processes'): the most telling one
/// ([`StageWait::rank`]), with its function; `None` when there were none.
pub fn stage_wait(threads: &[(StageWait, Option<String>)]) -> Option<(StageWait, Option<String>)> {
    threads.iter().max_by_key(|(w, _)| w.rank()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read from this machine (6.18): `cat /dev/zero | perl -e '… usleep …'`, and
    /// `perl … | cat`.
    const WRITE_FULL: &str = "[<0>] anon_pipe_write+0x35f/0x6e0\n[<0>] vfs_write+0x400/0x4c0\n\
        [<0>] ksys_write+0xc3/0xf0\n[<0>] do_syscall_64+0x71/0x290\n";
    const READ_EMPTY: &str = "[<0>] anon_pipe_read+0x393/0x440\n[<0>] vfs_read+0x397/0x3d0\n\
        [<0>] ksys_read+0xc3/0xf0\n[<0>] do_syscall_64+0x71/0x290\n";
    const NANOSLEEP: &str = "[<0>] hrtimer_nanosleep+0xb5/0x130\n[<0>] common_nsleep+0x30/0x60\n\
        [<0>] __x64_sys_clock_nanosleep+0xde/0x150\n";

    #[test]
    fn pipes_either_way_and_a_timer() {
        assert_eq!(
            thread_wait('S', "anon_pipe_write", WRITE_FULL),
            (StageWait::Output, Some("anon_pipe_write".into()))
        );
        assert_eq!(
            thread_wait('S', "anon_pipe_read", READ_EMPTY).0,
            StageWait::Input
        );
        // Without the stack (not root): the wait channel alone; before 5.5, `pipe_wait`.
        assert_eq!(thread_wait('S', "pipe_write", "").0, StageWait::Output);
        assert_eq!(thread_wait('S', "pipe_read", "").0, StageWait::Input);
        assert_eq!(thread_wait('S', "pipe_wait", "").0, StageWait::Input);
        let (w, f) = thread_wait('S', "hrtimer_nanosleep", NANOSLEEP);
        assert_eq!(
            (w, f.as_deref()),
            (StageWait::Other, Some("hrtimer_nanosleep"))
        );
        assert_eq!(thread_wait('R', "", "").0, StageWait::Busy);
    }

    #[test]
    fn sockets_disks_files_and_polls() {
        let send = "[<0>] wait_woken+0x1/0x2\n[<0>] sk_stream_wait_memory+0x1/0x2\n\
                    [<0>] tcp_sendmsg_locked+0x1/0x2\n[<0>] tcp_sendmsg+0x1/0x2\n\
                    [<0>] sock_write_iter+0x1/0x2\n[<0>] vfs_write+0x1/0x2\n";
        assert_eq!(thread_wait('S', "wait_woken", send).0, StageWait::Output);
        let recv = "[<0>] wait_woken+0x1/0x2\n[<0>] sk_wait_data+0x1/0x2\n\
                    [<0>] tcp_recvmsg_locked+0x1/0x2\n[<0>] tcp_recvmsg+0x1/0x2\n\
                    [<0>] sock_read_iter+0x1/0x2\n";
        assert_eq!(thread_wait('S', "wait_woken", recv).0, StageWait::Input);
        assert_eq!(thread_wait('S', "wait_woken", "").0, StageWait::Input);
        let dirty = "[<0>] balance_dirty_pages+0x2c4/0xb80\n[<0>] vfs_write+0x236/0x3f0\n";
        assert_eq!(thread_wait('D', "", dirty).0, StageWait::Disk);
        let txg = "[<0>] cv_wait_common+0x1/0x2 [spl]\n[<0>] txg_wait_open+0x1/0x2 [zfs]\n\
                   [<0>] dmu_tx_wait+0x1/0x2 [zfs]\n[<0>] zfs_write+0x1/0x2 [zfs]\n";
        assert_eq!(thread_wait('D', "cv_wait_common", txg).0, StageWait::Disk);
        let read = "[<0>] folio_wait_bit_common+0x1/0x2\n[<0>] filemap_read+0x1/0x2\n\
                    [<0>] vfs_read+0x1/0x2\n[<0>] ksys_read+0x1/0x2\n";
        assert_eq!(
            thread_wait('D', "folio_wait_bit_common", read).0,
            StageWait::Reading
        );
        let poll = "[<0>] do_sys_poll+0x1/0x2\n[<0>] __x64_sys_ppoll+0x1/0x2\n";
        assert_eq!(thread_wait('S', "do_sys_poll", poll).0, StageWait::Poll);
        assert_eq!(thread_wait('S', "do_select", "").0, StageWait::Poll);
        assert_eq!(thread_wait('S', "futex_do_wait", "").0, StageWait::Other);
        assert_eq!(thread_wait('S', "do_wait", "").0, StageWait::Other);
    }

    #[test]
    fn the_most_telling_thread_speaks_for_the_stage() {
        let t = |w| (w, None);
        assert_eq!(
            stage_wait(&[t(StageWait::Other), t(StageWait::Output)]).map(|x| x.0),
            Some(StageWait::Output)
        );
        assert_eq!(
            stage_wait(&[t(StageWait::Input), t(StageWait::Busy)]).map(|x| x.0),
            Some(StageWait::Busy)
        );
        assert_eq!(stage_wait(&[]), None);
    }
}
