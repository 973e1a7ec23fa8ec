//! CPU busy per tick through sysinfo, refreshing only CPU usage (it reads the live
//! /proc/stat, so it is used only when the [`SysRoot`](super::SysRoot) is the real `/`).

use sysinfo::{CpuRefreshKind, RefreshKind, System};

use super::Cpu;

/// Keeps the previous /proc/stat reading so each refresh yields usage since the last one.
pub struct CpuMeter {
    sys: System,
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
        Some(CpuMeter { sys })
    }

    /// Usage since the previous call: the all-core average and the busiest core.
    pub fn read(&mut self) -> Cpu {
        self.sys.refresh_cpu_usage();
        let max_core_pct = self
            .sys
            .cpus()
            .iter()
            .map(|c| c.usage())
            .fold(0.0f32, f32::max);
        Cpu {
            busy_pct: self.sys.global_cpu_usage(),
            max_core_pct,
        }
    }
}
