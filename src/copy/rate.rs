//! The schedules that hold the writers to a rate: `--bwlimit` and `--pace auto` (one token
//! bucket over the whole engine) and the tests' throttle. Each says when the next byte may
//! be written; the writers sleep until then.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::shared::lock;

/// How far behind its schedule a `--bwlimit` writer may fall and still catch up: a sleep
/// that overshoots (timer slack, a busy machine) by less than this loses no rate. It is also
/// the most credit a pause or a scan can bank, so a burst after idle time stays under 1 %
/// of any 1 s window. The start banks none (a 100 ms head start, with the first chunks,
/// ran a 30 MB copy at 10 MB/s at 11.1 MB/s over its first second).
const BWLIMIT_SLACK: Duration = Duration::from_millis(8);

/// How far ahead of its schedule a paced writer may run before it sleeps: it then sleeps
/// once for several of its 2 ms chunks instead of after each. Every sleep is a switch the
/// exact trace records with its kernel stack (~50 µs of CPU each: docs/benchmarks.md, "A
/// `--bwlimit` copy"), 500 a second at every limit; this makes them ~125. A 1 s window
/// then holds at most the slack, this and one chunk over the limit: 1.6 %.
pub(crate) const RUN_AHEAD: Duration = Duration::from_millis(6);

/// The `--bwlimit` chunk: 2 ms of the limit (so one chunk written before its sleep adds at
/// most 0.2 % to a 1 s window), at least 512 bytes, at most 64 KiB, and whole 4 KiB pages
/// from 4 KiB up (so every write starts and ends on a page boundary).
pub(crate) fn bwlimit_chunk(bps: u64) -> usize {
    let c = (bps / 500).clamp(512, 64 << 10) as usize;
    if c >= 4096 { c & !4095 } else { c }
}

#[derive(Default)]
pub(crate) struct RateSchedules {
    /// `--bwlimit` / `--pace auto`: when the next byte may be written (a token bucket's
    /// theoretical arrival time).
    limit: Mutex<Option<Instant>>,
    /// The tests' throttle: its start and the bytes written since.
    test: Mutex<(Option<Instant>, u64)>,
}

impl RateSchedules {
    /// `n` bytes were written at `now` under a limit of `bps`: when the writer may go on.
    /// Every chunk moves the schedule on by its size at the limit rate, from where it stood
    /// or from [`BWLIMIT_SLACK`] ago if it fell further behind (idle time banks no more
    /// credit than that), so the bytes of any window exceed the limit by at most the slack
    /// plus one chunk ([`bwlimit_chunk`]). All workers share it.
    pub(crate) fn limit_due(&self, n: u64, bps: u64, now: Instant) -> Instant {
        let mut tat = lock(&self.limit);
        let from = tat.map_or(now, |t| {
            t.max(now.checked_sub(BWLIMIT_SLACK).unwrap_or(now))
        });
        let next = from + Duration::from_secs_f64(n as f64 / bps as f64);
        *tat = Some(next);
        next
    }

    /// The tests' throttle: the whole engine at `bps` from its first write, no slack.
    pub(crate) fn test_due(&self, n: u64, bps: u64, now: Instant) -> Instant {
        let mut t = lock(&self.test);
        let start = *t.0.get_or_insert(now);
        t.1 += n;
        start + Duration::from_secs_f64(t.1 as f64 / bps as f64)
    }
}

/// The union of the writers' `--bwlimit` sleeps, each up to its due time: a writer woken
/// by its timer that then waits for a CPU (a busy machine, the copy at nice 19) is held by
/// the CPU, not by the limit, and the budget counts that wait as CPU wait. Every event
/// returns the time to bank since the previous one.
#[derive(Debug, Default)]
pub(crate) struct PacedClock {
    /// Writers sleeping now.
    sleepers: u32,
    /// The previous event while a writer slept.
    since: Option<Instant>,
    /// The latest due time of the sleeps that overlap since the count was last zero: until
    /// then a writer sleeps on schedule.
    due: Option<Instant>,
}

impl PacedClock {
    /// A writer starts sleeping at `now` until `due`.
    pub(crate) fn start(&mut self, now: Instant, due: Instant) -> u64 {
        let ns = self.bank(now);
        self.sleepers += 1;
        self.due = Some(self.due.map_or(due, |d| d.max(due)));
        self.since = Some(now);
        ns
    }

    /// A writer's sleep ended at `now`.
    pub(crate) fn end(&mut self, now: Instant) -> u64 {
        let ns = self.bank(now);
        self.sleepers = self.sleepers.saturating_sub(1);
        if self.sleepers == 0 {
            (self.since, self.due) = (None, None);
        } else {
            self.since = Some(now);
        }
        ns
    }

    fn bank(&self, now: Instant) -> u64 {
        let (Some(since), Some(due)) = (self.since, self.due) else {
            return 0;
        };
        now.min(due).saturating_duration_since(since).as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_limit_schedule_adds_each_chunk_at_the_rate_and_banks_at_most_the_slack() {
        let r = RateSchedules::default();
        let t0 = Instant::now();
        // 1 MB/s: 1 000 bytes are 1 ms.
        assert_eq!(r.limit_due(1_000, 1_000_000, t0), t0 + MS);
        assert_eq!(
            r.limit_due(1_000, 1_000_000, t0),
            t0 + 2 * MS,
            "back to back: it adds up"
        );
        let late = t0 + 1_000 * MS;
        assert_eq!(
            r.limit_due(1_000, 1_000_000, late),
            late - BWLIMIT_SLACK + MS,
            "a second idle banks only the slack"
        );
    }

    #[test]
    fn the_test_throttle_counts_from_the_first_write() {
        let r = RateSchedules::default();
        let t0 = Instant::now();
        assert_eq!(r.test_due(500, 1_000, t0), t0 + 500 * MS);
        assert_eq!(r.test_due(500, 1_000, t0 + 900 * MS), t0 + 1_000 * MS);
    }

    #[test]
    fn bwlimit_chunks_are_at_most_2_ms_of_the_limit_and_whole_pages() {
        for bps in [1_000, 100_000, 1_000_000, 10_000_000, 10 << 20, 150_000_000] {
            let c = bwlimit_chunk(bps);
            assert!(c == 512 || c as u64 * 500 <= bps, "{bps}: {c}");
            assert!(c < 4096 || c.is_multiple_of(4096), "{bps}: {c}");
            assert!((512..=64 << 10).contains(&c), "{bps}: {c}");
        }
        assert_eq!(bwlimit_chunk(10_000_000), 16 << 10);
    }

    #[test]
    fn a_sleep_that_ends_late_counts_up_to_its_due_time() {
        let mut c = PacedClock::default();
        let t0 = Instant::now();
        assert_eq!(c.start(t0, t0 + 10 * MS), 0);
        // Woken 30 ms late (waiting for a CPU): 10 ms were the limit's.
        assert_eq!(c.end(t0 + 40 * MS), 10_000_000);
        // A sleep that ends on time counts whole.
        c.start(t0 + 50 * MS, t0 + 55 * MS);
        assert_eq!(c.end(t0 + 55 * MS), 5_000_000);
    }

    #[test]
    fn overlapping_sleeps_count_once_up_to_the_latest_due_time() {
        let mut c = PacedClock::default();
        let t0 = Instant::now();
        let mut ns = c.start(t0, t0 + 10 * MS);
        ns += c.start(t0 + 4 * MS, t0 + 20 * MS);
        ns += c.end(t0 + 12 * MS);
        // The second is on schedule until 20 ms; it wakes at 26 ms.
        ns += c.end(t0 + 26 * MS);
        assert_eq!(ns, 20_000_000);
        // Nothing banks while no writer sleeps.
        assert_eq!(c.start(t0 + 100 * MS, t0 + 101 * MS), 0);
    }
}
