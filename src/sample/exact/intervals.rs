//! Off-CPU intervals of the writer's threads from trace events: each switch-out of a
//! blocked thread opens an interval, classified from the kernel stack logged with it; the
//! thread's wakeup closes it (the run-queue wait after the wakeup is schedstat's, as for the
//! sampled evidence). Pure: time comes only from the events and from [`Accounts::close_tick`].

use std::collections::{BTreeMap, HashMap};

use super::parse::{Throttle, TraceEvent};
use crate::sample::WaitClass;
use crate::sample::threads::classify;

/// Where a traced thread is, as far as the events tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not known yet (just added, or events were lost): its time is not counted.
    Unknown,
    /// On a CPU or runnable.
    Running,
    /// Off the CPU since it switched out in state `letter`; `class` is settled once its
    /// stack has been read (`stacked`).
    Blocked {
        letter: char,
        class: WaitClass,
        stacked: bool,
    },
}

#[derive(Debug, Clone, Copy)]
struct Track {
    state: State,
    /// Monotonic ns up to which this thread's time has been counted.
    counted_to: u64,
}

/// Cumulative figures of the traced threads (the contents of an `ExactSample`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Thread time under trace, ns (Σ over threads).
    pub traced_ns: u64,
    /// Off-CPU time per class, ns (asleep is [`WaitClass::Sleeping`]).
    pub off_cpu_ns: BTreeMap<WaitClass, u64>,
    /// `balance_dirty_pages` calls that paused the writer, and their pauses, ms.
    pub throttle_pauses: u64,
    pub throttle_pause_ms: u64,
    /// The figures of the last of them.
    pub last_throttle: Option<Throttle>,
    /// Entries the kernel dropped (ring full).
    pub lost_events: u64,
}

/// The traced threads and what their events added up to.
#[derive(Debug, Default)]
pub struct Accounts {
    tracks: HashMap<u32, Track>,
    pub totals: Totals,
}

impl Accounts {
    /// Starts following `tid` at `now_ns`; `running`: /proc said it was on a CPU or
    /// runnable (its time counts from now), else it counts from its first event.
    pub fn add(&mut self, tid: u32, now_ns: u64, running: bool) {
        self.tracks.entry(tid).or_insert(Track {
            state: if running {
                State::Running
            } else {
                State::Unknown
            },
            counted_to: now_ns,
        });
    }

    /// Stops following a thread that is gone (its last interval ends at its last event).
    pub fn remove(&mut self, tid: u32) {
        self.tracks.remove(&tid);
    }

    pub fn is_tracked(&self, tid: u32) -> bool {
        self.tracks.contains_key(&tid)
    }

    pub fn tracked(&self) -> impl Iterator<Item = u32> + '_ {
        self.tracks.keys().copied()
    }

    pub fn threads(&self) -> usize {
        self.tracks.len()
    }

    /// Applies one event (in timestamp order).
    pub fn apply(&mut self, ev: &TraceEvent) {
        match *ev {
            TraceEvent::Lost { events } => {
                self.totals.lost_events = self.totals.lost_events.saturating_add(events);
                // Which switch or wakeup is missing is not known: start every thread afresh.
                for t in self.tracks.values_mut() {
                    t.state = State::Unknown;
                }
            }
            TraceEvent::SwitchOut { tid, ts_ns, state } => {
                let next = if state == 'R' {
                    State::Running
                } else if matches!(state, 'X' | 'Z' | 'x') {
                    State::Unknown
                } else {
                    let (class, _) = classify(state, "", "");
                    State::Blocked {
                        letter: state,
                        class,
                        stacked: false,
                    }
                };
                self.settle(tid, ts_ns, next);
            }
            TraceEvent::Stack {
                tid, ref frames, ..
            } => {
                if let Some(t) = self.tracks.get_mut(&tid)
                    && let State::Blocked {
                        letter,
                        stacked: false,
                        ..
                    } = t.state
                {
                    let (class, _) = classify(letter, "", &frames.join("\n"));
                    t.state = State::Blocked {
                        letter,
                        class,
                        stacked: true,
                    };
                }
            }
            TraceEvent::Wakeup { tid, ts_ns } => {
                if matches!(
                    self.tracks.get(&tid).map(|t| t.state),
                    Some(State::Blocked { .. } | State::Unknown)
                ) {
                    self.settle(tid, ts_ns, State::Running);
                }
            }
            TraceEvent::Exit { tid, ts_ns } => {
                self.settle(tid, ts_ns, State::Unknown);
                self.tracks.remove(&tid);
            }
            TraceEvent::Throttle { tid, throttle, .. } => {
                if self.tracks.contains_key(&tid) {
                    if throttle.pause_ms > 0 {
                        self.totals.throttle_pauses += 1;
                        self.totals.throttle_pause_ms = self
                            .totals
                            .throttle_pause_ms
                            .saturating_add(throttle.pause_ms.unsigned_abs());
                    }
                    self.totals.last_throttle = Some(throttle);
                }
            }
        }
    }

    /// Counts every thread's time up to `now_ns` in the state it is in (a thread whose
    /// stack has not arrived yet waits for it, so its time goes to the right class).
    pub fn close_tick(&mut self, now_ns: u64) {
        let tids: Vec<u32> = self.tracks.keys().copied().collect();
        for tid in tids {
            let pending = matches!(
                self.tracks[&tid].state,
                State::Blocked { stacked: false, .. }
            );
            if !pending {
                let state = self.tracks[&tid].state;
                self.settle(tid, now_ns, state);
            }
        }
    }

    /// Counts `tid`'s time up to `ts_ns` in its current state, then puts it in `next`.
    fn settle(&mut self, tid: u32, ts_ns: u64, next: State) {
        let Some(t) = self.tracks.get_mut(&tid) else {
            return;
        };
        // An event stamped before time already counted (read just after a tick) adds nothing.
        let dt = ts_ns.saturating_sub(t.counted_to);
        t.counted_to = t.counted_to.max(ts_ns);
        let totals = &mut self.totals;
        match t.state {
            State::Unknown => {}
            State::Running => totals.traced_ns = totals.traced_ns.saturating_add(dt),
            State::Blocked { class, .. } => {
                totals.traced_ns = totals.traced_ns.saturating_add(dt);
                let slot = totals.off_cpu_ns.entry(class).or_insert(0);
                *slot = slot.saturating_add(dt);
            }
        }
        t.state = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn stack(tid: u32, ts_ns: u64, frames: &[&str]) -> TraceEvent {
        TraceEvent::Stack {
            tid,
            ts_ns,
            frames: frames.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn a_blocked_interval_runs_from_switch_out_to_wakeup_in_its_class() {
        let mut a = Accounts::default();
        a.add(7, 0, true);
        a.apply(&TraceEvent::SwitchOut {
            tid: 7,
            ts_ns: 10 * MS,
            state: 'D',
        });
        a.apply(&stack(
            7,
            10 * MS,
            &["__schedule", "io_schedule_timeout", "balance_dirty_pages"],
        ));
        a.apply(&TraceEvent::Wakeup {
            tid: 7,
            ts_ns: 50 * MS,
        });
        // Preempted: still running as far as blocking goes (the run-queue wait is schedstat's).
        a.apply(&TraceEvent::SwitchOut {
            tid: 7,
            ts_ns: 60 * MS,
            state: 'R',
        });
        a.close_tick(100 * MS);
        assert_eq!(a.totals.traced_ns, 100 * MS);
        assert_eq!(a.totals.off_cpu_ns[&WaitClass::DirtyThrottle], 40 * MS);
        assert_eq!(a.totals.off_cpu_ns.len(), 1);
    }

    #[test]
    fn an_interval_open_at_the_tick_counts_to_it_and_goes_on() {
        let mut a = Accounts::default();
        a.add(7, 0, true);
        a.apply(&TraceEvent::SwitchOut {
            tid: 7,
            ts_ns: 80 * MS,
            state: 'S',
        });
        // The stack has not come yet: nothing is counted in a class it might not be.
        a.close_tick(90 * MS);
        assert_eq!(a.totals.off_cpu_ns.len(), 0);
        a.apply(&stack(7, 80 * MS, &["futex_wait_queue", "futex_wait"]));
        a.close_tick(100 * MS);
        assert_eq!(a.totals.off_cpu_ns[&WaitClass::Sleeping], 20 * MS);
        a.apply(&TraceEvent::Wakeup {
            tid: 7,
            ts_ns: 150 * MS,
        });
        a.close_tick(200 * MS);
        assert_eq!(a.totals.off_cpu_ns[&WaitClass::Sleeping], 70 * MS);
        assert_eq!(a.totals.traced_ns, 200 * MS);
    }

    #[test]
    fn the_switch_of_an_exiting_thread_ends_its_time() {
        let mut a = Accounts::default();
        a.add(7, 0, true);
        a.apply(&TraceEvent::SwitchOut {
            tid: 7,
            ts_ns: 30 * MS,
            state: 'X',
        });
        a.close_tick(100 * MS);
        assert_eq!(a.totals.traced_ns, 30 * MS);
        assert!(a.totals.off_cpu_ns.is_empty());
    }

    #[test]
    fn lost_events_and_unknown_threads_count_nothing_until_the_next_event() {
        let mut a = Accounts::default();
        a.add(7, 0, false);
        a.close_tick(50 * MS);
        assert_eq!(a.totals.traced_ns, 0);
        a.apply(&TraceEvent::Wakeup {
            tid: 7,
            ts_ns: 60 * MS,
        });
        a.close_tick(100 * MS);
        assert_eq!(a.totals.traced_ns, 40 * MS);
        a.apply(&TraceEvent::Lost { events: 3 });
        a.close_tick(200 * MS);
        assert_eq!((a.totals.traced_ns, a.totals.lost_events), (40 * MS, 3));
        // Events of threads not followed are ignored.
        a.apply(&TraceEvent::SwitchOut {
            tid: 8,
            ts_ns: 210 * MS,
            state: 'D',
        });
        a.apply(&TraceEvent::Exit {
            tid: 7,
            ts_ns: 220 * MS,
        });
        assert_eq!(a.threads(), 0);
    }
}
