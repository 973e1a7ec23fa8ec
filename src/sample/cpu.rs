//! CPU busy per tick from /proc/stat under the [`SysRoot`]: the pure [`parse_stat`], and
//! [`CpuMeter`], which turns two readings into the all-core average and the busiest core.
//!
//! /proc/stat counts USER_HZ ticks (10 ms on every Linux userspace sees), so a 100 ms window
//! holds 10 ticks per core and one tick of rounding is 10 %. A figure therefore covers at
//! least [`MIN_WINDOW_TICKS`] per core (200 ms): at 100 ms sampling it is recomputed on
//! alternate ticks and repeated in between.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use super::error::ParseError;
use super::root::{MAX_FILE_BYTES, open_kernel_file};
use super::{Cpu, SysRoot};

/// The shortest window a figure covers, in USER_HZ ticks per core.
pub const MIN_WINDOW_TICKS: u64 = 20;

/// One `cpu` line of /proc/stat, in USER_HZ ticks since boot. `user` and `nice` include the
/// time spent running guests (`guest`, `guest_nice`), so those two are not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// (busy, idle) ticks from `prev` to `self`. Each counter's own difference, never below
    /// zero: iowait is known to step backwards on tickless kernels.
    fn since(&self, prev: &CpuTimes) -> (u64, u64) {
        // Summed before the difference: a core's iowait may go back while its idle goes on
        // (proc(5)), and saturating each field on its own counted that tick twice on the
        // core and once in the `cpu` line, so a core's share fell under the machine's mean.
        (
            self.busy().saturating_sub(prev.busy()),
            self.idle_all().saturating_sub(prev.idle_all()),
        )
    }

    /// Steal is time the hypervisor gave this CPU to someone else: not available to the
    /// copy, so busy.
    fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq + self.steal
    }

    fn idle_all(&self) -> u64 {
        self.idle + self.iowait
    }
}

/// The CPU lines of one /proc/stat reading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stat {
    /// The `cpu` line: all cores summed.
    pub all: CpuTimes,
    /// The `cpuN` lines as (N, times); an offline core has no line.
    pub cores: Vec<(u32, CpuTimes)>,
}

/// Parses the `cpu` and `cpuN` lines of /proc/stat (the other lines are skipped). The first
/// four counters are required; the later ones, which old kernels lack, read as 0.
pub fn parse_stat(text: &str) -> Result<Stat, ParseError> {
    const FILE: &str = "stat";
    let mut all = None;
    let mut cores = Vec::new();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let Some(core) = it.next().and_then(|k| k.strip_prefix("cpu")) else {
            continue;
        };
        let times = cpu_times(it).ok_or(ParseError::BadValue {
            file: FILE,
            field: "cpu",
        })?;
        if core.is_empty() {
            all = Some(times);
        } else {
            let n = core.parse().map_err(|_| ParseError::BadValue {
                file: FILE,
                field: "cpuN",
            })?;
            cores.push((n, times));
        }
    }
    let all = all.ok_or(ParseError::Missing {
        file: FILE,
        field: "cpu",
    })?;
    if cores.is_empty() {
        return Err(ParseError::Missing {
            file: FILE,
            field: "cpuN",
        });
    }
    Ok(Stat { all, cores })
}

/// The counters after a `cpu` label; `None` when fewer than four or one is not a number.
fn cpu_times<'a>(fields: impl Iterator<Item = &'a str>) -> Option<CpuTimes> {
    let mut v = [0u64; 8];
    let mut n = 0;
    for (slot, field) in v.iter_mut().zip(fields) {
        *slot = field.parse().ok()?;
        n += 1;
    }
    (n >= 4).then_some(CpuTimes {
        user: v[0],
        nice: v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        steal: v[7],
    })
}

/// Usage from `prev` to `now`, or `None` when the window is shorter than
/// [`MIN_WINDOW_TICKS`] per core or no core is in both readings.
///
/// The machine's share is summed from the same per-core differences as the busiest core's,
/// not read from the `cpu` line: the kernel sums that line at another instant than the core
/// lines (each idle figure includes the sleep in progress when it is read), so on a busy
/// machine the two disagreed by a tick and the mean came out above the busiest core.
pub fn usage(prev: &Stat, now: &Stat) -> Option<Cpu> {
    let per_core: Vec<(u64, u64)> = now
        .cores
        .iter()
        .filter_map(|(n, t)| {
            let (_, before) = prev.cores.iter().find(|(m, _)| m == n)?;
            Some(t.since(before))
        })
        .collect();
    let cores = u64::try_from(per_core.len()).ok().filter(|&c| c > 0)?;
    let (busy, idle) = per_core
        .iter()
        .fold((0, 0), |(b, i), &(cb, ci)| (b + cb, i + ci));
    if (busy + idle) / cores < MIN_WINDOW_TICKS {
        return None;
    }
    let max_core_pct = per_core
        .iter()
        .filter_map(|&(b, i)| share(b, i))
        .reduce(f32::max)?;
    Some(Cpu {
        busy_pct: share(busy, idle)?,
        max_core_pct,
    })
}

/// `busy` as a percentage of `busy + idle`; `None` when no tick passed.
fn share(busy: u64, idle: u64) -> Option<f32> {
    let total = busy + idle;
    (total > 0).then(|| (busy as f64 * 100.0 / total as f64) as f32)
}

/// Keeps /proc/stat open and the reading that starts the current window.
#[derive(Debug)]
pub struct CpuMeter {
    path: PathBuf,
    file: Option<File>,
    buf: Vec<u8>,
    start: Stat,
    last: Option<Cpu>,
}

impl CpuMeter {
    /// Takes the first reading of `root`'s /proc/stat; `None` when it cannot be read or parsed.
    pub fn new(root: &SysRoot) -> Option<Self> {
        let mut meter = CpuMeter {
            path: root.join("proc/stat"),
            file: None,
            buf: Vec::new(),
            start: Stat::default(),
            last: None,
        };
        meter.start = meter.read_stat()?;
        Some(meter)
    }

    /// Usage over the latest window of at least [`MIN_WINDOW_TICKS`] per core: a new figure
    /// once the window is long enough, else the previous one. `None` until the first window
    /// is complete and on a tick when /proc/stat cannot be read.
    pub fn read(&mut self) -> Option<Cpu> {
        let now = self.read_stat()?;
        self.advance(now)
    }

    /// Closes the window at `now` when it is long enough.
    fn advance(&mut self, now: Stat) -> Option<Cpu> {
        if let Some(cpu) = usage(&self.start, &now) {
            self.last = Some(cpu);
            self.start = now;
        }
        self.last
    }

    /// The whole file from offset 0 to end of file, parsed; `None` (and a reopen next time)
    /// on any error.
    fn read_stat(&mut self) -> Option<Stat> {
        if self.file.is_none() {
            self.file = open_kernel_file(&self.path).ok();
        }
        let mut f = self.file.as_ref()?;
        self.buf.clear();
        // `take` also keeps `read_to_end` from sizing its buffer by fstat (/proc says 0 bytes).
        let read = f
            .seek(SeekFrom::Start(0))
            .and_then(|_| f.take(MAX_FILE_BYTES as u64).read_to_end(&mut self.buf));
        if read.is_err() {
            self.file = None;
            return None;
        }
        parse_stat(std::str::from_utf8(&self.buf).ok()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy share in percent of `now` since `prev`; `None` when no tick passed.
    fn busy_pct(now: &CpuTimes, prev: &CpuTimes) -> Option<f32> {
        let (busy, idle) = now.since(prev);
        share(busy, idle)
    }

    /// This machine's /proc/stat, read twice one second apart (tests/fixtures/linux-host).
    const T0: &str = include_str!("../../tests/fixtures/linux-host/proc/stat");
    const T1: &str = include_str!("../../tests/fixtures/linux-host/stat-after-1s");

    fn times(s: &str) -> CpuTimes {
        cpu_times(s.split_ascii_whitespace()).unwrap()
    }

    #[test]
    fn parses_the_aggregate_and_every_core() {
        let s = parse_stat(T0).unwrap();
        assert_eq!(s.cores.len(), 2);
        assert_eq!(s.cores[1].0, 1);
        // The aggregate is the cores' sum, converted to ticks once: within a tick per core.
        let sum = s.cores.iter().fold(0, |a, (_, t)| a + t.user);
        assert!(s.all.user.abs_diff(sum) <= 2, "{} vs {sum}", s.all.user);
        assert_eq!(s.all.user, 283_053, "the fixture's first counter");
    }

    #[test]
    fn old_kernels_without_the_later_counters_still_parse() {
        let s = parse_stat("cpu  10 0 5 85\ncpu0 10 0 5 85\n").unwrap();
        assert_eq!(s.all.idle, 85);
        assert_eq!(s.all.steal, 0);
    }

    #[test]
    fn missing_or_broken_lines_are_errors() {
        assert!(parse_stat("intr 1 2 3\n").is_err());
        assert!(parse_stat("cpu  1 2 3 4\n").is_err(), "no core line");
        assert!(parse_stat("cpu  1 2 x 4\ncpu0 1 2 3 4\n").is_err());
        assert!(parse_stat("cpu  1 2 3\ncpu0 1 2 3 4\n").is_err());
    }

    #[test]
    fn guest_time_is_not_counted_twice() {
        // user 50 includes guest 30: 50 busy of 100, not 80.
        let a = times("0 0 0 0 0 0 0 0 0 0");
        let b = times("50 0 0 50 0 0 0 0 30 0");
        assert_eq!(busy_pct(&b, &a), Some(50.0));
    }

    #[test]
    fn steal_is_busy_and_a_backwards_iowait_is_no_negative_time() {
        let a = times("0 0 0 0 40 0 0 0");
        let b = times("10 0 0 70 30 0 0 20");
        // busy 10 + 20 steal; idle + iowait 40 → 100: the 10 iowait went back into idle, not
        // into nothing, so 60 idle (not 70, which would count those 10 twice).
        assert_eq!(busy_pct(&b, &a), Some(100.0 / 3.0));
        // A sum that goes back is still no negative time.
        let c = times("10 0 0 30 0 0 0 20");
        assert_eq!(busy_pct(&c, &a), Some(100.0));
    }

    #[test]
    fn a_window_shorter_than_the_minimum_gives_no_figure() {
        let a = parse_stat("cpu  0 0 0 0\ncpu0 0 0 0 0\ncpu1 0 0 0 0\n").unwrap();
        // 38 ticks over 2 cores: 19 each, one short.
        let b = parse_stat("cpu  19 0 0 19\ncpu0 19 0 0 0\ncpu1 0 0 0 19\n").unwrap();
        assert_eq!(usage(&a, &b), None);
        let c = parse_stat("cpu  20 0 0 20\ncpu0 20 0 0 0\ncpu1 0 0 0 20\n").unwrap();
        let u = usage(&a, &c).unwrap();
        assert_eq!((u.busy_pct, u.max_core_pct), (50.0, 100.0));
    }

    /// A core whose iowait goes back a little while its idle goes on (proc(5) allows it) and
    /// a busy core: the busiest core is never under the machine's mean.
    #[test]
    fn iowait_going_back_keeps_the_busiest_core_over_the_mean() {
        let a = parse_stat("cpu  100 0 0 100 20\ncpu0 0 0 0 100 20\ncpu1 100 0 0 0 0\n").unwrap();
        let b = parse_stat("cpu  130 0 0 150 20\ncpu0 0 0 0 150 10\ncpu1 130 0 0 0 10\n").unwrap();
        let u = usage(&a, &b).unwrap();
        assert!(u.max_core_pct >= u.busy_pct, "{u:?}");
        assert_eq!(u.max_core_pct, 75.0);
    }

    /// The `cpu` line summed a tick later than the core lines (one more busy tick than the
    /// cores show): the mean comes from the cores and stays under the busiest one.
    #[test]
    fn a_cpu_line_read_at_another_instant_never_puts_the_mean_over_the_busiest_core() {
        let a = parse_stat("cpu  0 0 0 0\ncpu0 0 0 0 0\ncpu1 0 0 0 0\n").unwrap();
        let b = parse_stat("cpu  23 0 0 21\ncpu0 11 0 0 11\ncpu1 11 0 0 11\n").unwrap();
        let u = usage(&a, &b).unwrap();
        assert_eq!((u.busy_pct, u.max_core_pct), (50.0, 50.0));
        let c = parse_stat("cpu  30 0 0 14\ncpu0 22 0 0 0\ncpu1 7 0 0 15\n").unwrap();
        let u = usage(&a, &c).unwrap();
        assert!(u.busy_pct <= u.max_core_pct, "{u:?}");
        assert_eq!(u.busy_pct, 29.0 * 100.0 / 44.0);
    }

    #[test]
    fn an_unchanged_file_never_gives_a_figure() {
        let s = parse_stat(T0).unwrap();
        assert_eq!(usage(&s, &s), None);
    }

    #[test]
    fn one_second_on_this_machine() {
        let (a, b) = (parse_stat(T0).unwrap(), parse_stat(T1).unwrap());
        let u = usage(&a, &b).unwrap();
        let expect = |pa: &CpuTimes, pb: &CpuTimes| busy_pct(pb, pa).unwrap();
        let cores: Vec<f32> = (0..2)
            .map(|i| expect(&a.cores[i].1, &b.cores[i].1))
            .collect();
        let whole = expect(&a.all, &b.all);
        assert!(
            (u.busy_pct - whole).abs() < 1.0,
            "{} vs the cpu line's {whole}",
            u.busy_pct
        );
        assert_eq!(u.max_core_pct, cores[0].max(cores[1]));
        assert!(u.busy_pct <= u.max_core_pct);
    }

    #[test]
    fn the_meter_reads_under_the_sys_root_and_repeats_within_a_window() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        let stat = dir.path().join("proc/stat");
        std::fs::write(&stat, T0).unwrap();
        let mut m = CpuMeter::new(&SysRoot::new(dir.path())).unwrap();
        assert_eq!(m.read(), None, "the file has not moved: no window yet");
        // Rewritten in place: the meter keeps the file open and reads it again from 0.
        std::fs::write(&stat, T1).unwrap();
        let first = m.read().unwrap();
        let (a, b) = (parse_stat(T0).unwrap(), parse_stat(T1).unwrap());
        assert_eq!(Some(first), usage(&a, &b));
        assert_eq!(
            m.read(),
            Some(first),
            "no tick since: the last figure again"
        );
    }

    #[test]
    fn no_meter_without_a_readable_stat() {
        let dir = tempfile::tempdir().unwrap();
        assert!(CpuMeter::new(&SysRoot::new(dir.path())).is_none());
    }

    #[test]
    fn a_fifo_planted_as_stat_is_no_meter_and_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        let fifo = dir.path().join("proc/stat");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from(0o600)).unwrap();
        assert!(CpuMeter::new(&SysRoot::new(dir.path())).is_none());
    }
}
