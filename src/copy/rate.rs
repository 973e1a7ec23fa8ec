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
}
