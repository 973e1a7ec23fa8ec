//! CPU busy per tick through sysinfo, refreshing only CPU usage (it reads the live
//! /proc/stat, so it is used only when the [`SysRoot`](super::SysRoot) is the real `/`).
//!
//! sysinfo recomputes usage at most every `MINIMUM_CPU_UPDATE_INTERVAL` (200 ms on Linux;
//! /proc/stat counts 10 ms jiffies, so shorter windows would be noise): at 100 ms ticks each
//! value covers the last ≥200 ms window and repeats on alternate ticks.

use std::time::Instant;

use sysinfo::{CpuRefreshKind, MINIMUM_CPU_UPDATE_INTERVAL, RefreshKind, System};

use super::Cpu;

/// Keeps the previous /proc/stat reading so each refresh yields usage since the last one.
pub struct CpuMeter {
    sys: System,
    created: Instant,
}

impl std::fmt::Debug for CpuMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuMeter").finish_non_exhaustive()
    }
}

impl CpuMeter {
    /// Takes the first reading; `None` when sysinfo cannot read CPU figures here.
    pub fn new() -> Option<Self> {
        let kind = RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing().with_usage());
        let sys = System::new_with_specifics(kind).ok()?;
        if sys.cpus().is_empty() {
            return None;
        }
        Some(CpuMeter {
            sys,
            created: Instant::now(),
        })
    }

    /// Usage over the latest window: the all-core average and the busiest core. `None` for
    /// the first two windows after [`CpuMeter::new`]: the first per-core figures sysinfo
    /// computes were seen as 0 % while the global one was not (in the ZFS lab VM).
    pub fn read(&mut self) -> Option<Cpu> {
        self.sys.refresh_cpu_usage();
        if self.created.elapsed() < 2 * MINIMUM_CPU_UPDATE_INTERVAL {
            return None;
        }
        let max_core_pct = self
            .sys
            .cpus()
            .iter()
            .map(|c| c.usage())
            .fold(0.0f32, f32::max);
        Some(Cpu {
            busy_pct: self.sys.global_cpu_usage(),
            max_core_pct,
        })
    }
}
