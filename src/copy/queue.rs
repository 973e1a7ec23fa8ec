//! The bounded queue between the copy's walk and the workers. Unlike a plain bounded
//! channel, it wakes a side only when that side sleeps, and the walk (which runs far ahead
//! of the workers once it no longer stats each file) only when the queue has drained to half:
//! about one wake-up per [`QUEUE_LEN`]/2 files instead of one or two per file (measured with
//! `strace -f -c`: 2.8 futex calls per file with `std::sync::mpsc::sync_channel`).
//!
//! Items are kept in runs of one group (a destination directory), in the walk's order. A
//! worker takes the oldest run no other worker is in: two workers creating and linking in one
//! directory take its lock in turn and spin on it (a tree of 1 000 000 empty files, 1 000 to
//! a directory: 5.9 s with every worker in the oldest run, 5.4 s spread, docs/benchmarks.md).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Files queued ahead of the workers.
pub(crate) const QUEUE_LEN: usize = 4096;

/// Runs (directories) queued ahead of the workers. Each file holds its directory open (two
/// descriptors), so this bounds the descriptors the queue keeps beyond the walk's one per
/// level of depth: 2 × 64, whatever [`QUEUE_LEN`] is.
pub(crate) const QUEUE_RUNS: usize = 64;

/// How long a waiting side sleeps before it looks at the stop flag again.
const RECHECK: Duration = Duration::from_millis(100);

/// What a queued item belongs to: items of one group in a row form a run, and workers keep
/// to different groups while there is a choice.
pub(crate) trait Grouped {
    fn group(&self) -> usize;
}

struct Run<T> {
    group: usize,
    items: VecDeque<T>,
}

struct State<T> {
    runs: VecDeque<Run<T>>,
    /// Items in all runs.
    len: usize,
    /// The walk is done: nothing more comes.
    closed: bool,
    /// Workers that have not left (a stopped copy's workers leave with items queued).
    workers: usize,
    /// Workers asleep in [`WorkQueue::pop`].
    idle: usize,
    /// The walk is asleep in [`WorkQueue::push`], waiting for room.
    walk_waits: bool,
    /// The group of each worker's latest item (the directory it works in).
    working_in: Vec<Option<usize>>,
}

impl<T> State<T> {
    fn full(&self, cap: usize, runs: usize, group: usize) -> bool {
        let new_run = self.runs.back().is_none_or(|r| r.group != group);
        self.len >= cap || (new_run && self.runs.len() >= runs)
    }

    /// The oldest run no other worker than `worker` is in, else the oldest.
    fn pick(&self, worker: usize) -> Option<usize> {
        if self.runs.is_empty() {
            return None;
        }
        let taken = |g: usize| {
            self.working_in
                .iter()
                .enumerate()
                .any(|(w, x)| w != worker && *x == Some(g))
        };
        Some(self.runs.iter().position(|r| !taken(r.group)).unwrap_or(0))
    }

    fn take(&mut self, worker: usize) -> Option<T> {
        let i = self.pick(worker)?;
        let run = &mut self.runs[i];
        let item = run.items.pop_front()?;
        let group = run.group;
        if run.items.is_empty() {
            self.runs.remove(i);
        }
        self.len -= 1;
        if let Some(w) = self.working_in.get_mut(worker) {
            *w = Some(group);
        }
        Some(item)
    }
}

/// What [`WorkQueue::pop`] found.
pub(crate) enum Popped<T> {
    Item(T),
    /// Nothing within [`RECHECK`]: look at the stop flag, then ask again.
    Empty,
    /// Closed and drained.
    Done,
}

pub(crate) struct WorkQueue<T> {
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    cap: usize,
    max_runs: usize,
}

impl<T: Grouped> WorkQueue<T> {
    /// A queue of at most `cap` items in at most `max_runs` runs, for `workers` workers
    /// (numbered from 0 in [`WorkQueue::pop`]).
    pub fn new(cap: usize, max_runs: usize, workers: usize) -> Self {
        WorkQueue {
            state: Mutex::new(State {
                runs: VecDeque::new(),
                len: 0,
                closed: false,
                workers,
                idle: 0,
                walk_waits: false,
                working_in: vec![None; workers],
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            cap: cap.max(2),
            max_runs: max_runs.max(2),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `item`, waiting while the queue is full. Gives it back when every worker has
    /// left (the copy stopped).
    pub fn push(&self, item: T) -> Result<(), T> {
        let group = item.group();
        let mut s = self.lock();
        while s.full(self.cap, self.max_runs, group) && s.workers > 0 {
            s.walk_waits = true;
            s = self
                .not_full
                .wait_timeout(s, RECHECK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        if s.workers == 0 {
            return Err(item);
        }
        match s.runs.back_mut() {
            Some(r) if r.group == group => r.items.push_back(item),
            _ => s.runs.push_back(Run {
                group,
                items: VecDeque::from([item]),
            }),
        }
        s.len += 1;
        if s.idle > 0 {
            self.not_empty.notify_one();
        }
        Ok(())
    }

    /// The next item for worker `worker` (see [`State::pick`]), waiting up to [`RECHECK`]
    /// for one.
    pub fn pop(&self, worker: usize) -> Popped<T> {
        let mut s = self.lock();
        if s.len == 0 && !s.closed {
            s.idle += 1;
            s = self
                .not_empty
                .wait_timeout(s, RECHECK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            s.idle -= 1;
        }
        match s.take(worker) {
            Some(item) => {
                if s.walk_waits && s.len <= self.cap / 2 && s.runs.len() <= self.max_runs / 2 {
                    s.walk_waits = false;
                    self.not_full.notify_one();
                }
                Popped::Item(item)
            }
            None if s.closed => Popped::Done,
            None => Popped::Empty,
        }
    }

    /// The walk is done.
    pub fn close(&self) {
        self.lock().closed = true;
        self.not_empty.notify_all();
    }

    /// A worker leaves (done, or the copy stopped); the last one lets a waiting walk go.
    pub fn leave(&self) {
        let mut s = self.lock();
        s.workers = s.workers.saturating_sub(1);
        if s.workers == 0 {
            self.not_full.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A test item: its group is its hundreds.
    impl Grouped for u32 {
        fn group(&self) -> usize {
            (*self / 100) as usize
        }
    }

    #[test]
    fn every_item_arrives_once_in_order_per_worker_and_the_walk_waits_for_room() {
        let q = Arc::new(WorkQueue::new(8, 4, 2));
        let mut handles = Vec::new();
        for w in 0..2 {
            let q = q.clone();
            handles.push(std::thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    match q.pop(w) {
                        Popped::Item(i) => got.push(i),
                        Popped::Empty => {}
                        Popped::Done => break,
                    }
                }
                q.leave();
                got
            }));
        }
        for i in 0..10_000u32 {
            q.push(i).unwrap();
            let s = q.lock();
            assert!(s.len <= 8 && s.runs.len() <= 4);
        }
        q.close();
        let mut all: Vec<u32> = Vec::new();
        for h in handles {
            let got = h.join().unwrap();
            for g in got.chunk_by(|a, b| a / 100 == b / 100) {
                assert!(g.windows(2).all(|w| w[0] < w[1]), "a run in its order");
            }
            all.extend(got);
        }
        all.sort_unstable();
        assert_eq!(all, (0..10_000).collect::<Vec<_>>());
    }

    #[test]
    fn workers_take_different_directories_while_there_is_a_choice() {
        let q = WorkQueue::new(64, 8, 2);
        for i in [100, 101, 102, 200, 201, 300u32] {
            q.push(i).unwrap();
        }
        let next = |w| match q.pop(w) {
            Popped::Item(i) => i,
            _ => panic!("an item was queued"),
        };
        assert_eq!(next(0), 100);
        // Worker 0 is in group 1: worker 1 takes the oldest other run.
        assert_eq!(next(1), 200);
        assert_eq!(next(0), 101);
        assert_eq!(next(1), 201);
        // Group 2 is done: worker 1 goes on to group 3, not into worker 0's.
        assert_eq!(next(1), 300);
        // Only worker 0's group is left: worker 1 joins it rather than wait.
        assert_eq!(next(1), 102);
        assert!(matches!(q.pop(0), Popped::Empty));
    }

    #[test]
    fn a_new_directory_waits_for_room_in_the_runs_not_only_in_the_items() {
        let q = Arc::new(WorkQueue::new(64, 2, 1));
        q.push(100u32).unwrap();
        q.push(200).unwrap();
        // A third run must wait; more of the newest run need not.
        q.push(201).unwrap();
        let pusher = {
            let q = q.clone();
            std::thread::spawn(move || q.push(300).unwrap())
        };
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(q.lock().runs.len(), 2, "the third directory waited");
        assert!(matches!(q.pop(0), Popped::Item(100)));
        pusher.join().unwrap();
        assert_eq!(q.lock().runs.len(), 2);
    }

    #[test]
    fn a_full_queue_gives_the_item_back_once_the_workers_left() {
        let q = WorkQueue::new(2, 4, 1);
        q.push(1u32).unwrap();
        q.push(2).unwrap();
        q.leave();
        assert_eq!(q.push(3), Err(3));
    }
}
