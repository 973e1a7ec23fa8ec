//! How the model uses the exact trace: a tick's off-CPU time per class from two consecutive
//! [`ExactSample`]s, as shares of the writer threads' active time (in place of the sampled
//! instant's thread counts), and which level of the fallback chain the run's time rests on.

use crate::sample::{EvidenceLevel, ExactSample, WaitClass};

/// One tick of exact figures: what the writer's threads did with their time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ExactTick {
    /// Thread time traced during the tick, less time asleep in user space, ns.
    pub active_ns: u64,
    /// Off-CPU ns per [`WaitClass::index`] (blocked classes; `Running` and `Sleeping` 0).
    pub blocked_ns: [u64; WaitClass::ALL.len()],
}

impl ExactTick {
    /// The tick between two samples; `None` when either has no trace, entries were lost in
    /// between (the tick is not exact), or nothing was traced.
    pub fn between(prev: Option<&ExactSample>, cur: Option<&ExactSample>) -> Option<ExactTick> {
        let (prev, cur) = (prev?, cur?);
        if cur.lost_events != prev.lost_events || cur.traced_ns <= prev.traced_ns {
            return None;
        }
        let delta = |c: WaitClass| cur.off_cpu(c).saturating_sub(prev.off_cpu(c));
        let traced = cur.traced_ns - prev.traced_ns;
        let mut blocked_ns = [0; WaitClass::ALL.len()];
        for c in WaitClass::ALL {
            if !matches!(c, WaitClass::Running | WaitClass::Sleeping) {
                blocked_ns[c.index()] = delta(c);
            }
        }
        Some(ExactTick {
            active_ns: traced.saturating_sub(delta(WaitClass::Sleeping)),
            blocked_ns,
        })
    }

    /// Share of the active time per [`WaitClass::index`]; `Running` is the rest (on a CPU or
    /// on a run queue). All zero when every thread was asleep.
    pub fn shares(&self) -> [f64; WaitClass::ALL.len()] {
        let mut s = [0.0; WaitClass::ALL.len()];
        if self.active_ns == 0 {
            return s;
        }
        let active = self.active_ns as f64;
        let mut blocked = 0.0;
        for c in WaitClass::ALL {
            let v = (self.blocked_ns[c.index()] as f64 / active).min(1.0);
            s[c.index()] = v;
            blocked += v;
        }
        if blocked > 1.0 {
            for v in &mut s {
                *v /= blocked;
            }
        }
        s[WaitClass::Running.index()] = (1.0 - blocked).max(0.0);
        s
    }
}

/// Copying time per evidence level, for "what was this measured with".
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EvidenceTally {
    ns: [u64; EvidenceLevel::ALL.len()],
}

impl EvidenceTally {
    pub fn add(&mut self, level: Option<EvidenceLevel>, dt_ns: u64) {
        if let Some(l) = level {
            self.ns[l as usize] = self.ns[l as usize].saturating_add(dt_ns);
        }
    }

    /// The level most of the recorded time rests on (`None`: samples that do not say).
    pub fn main(&self) -> Option<EvidenceLevel> {
        let (i, ns) = self
            .ns
            .iter()
            .enumerate()
            .max_by_key(|(i, ns)| (**ns, std::cmp::Reverse(*i)))?;
        (*ns > 0).then_some(EvidenceLevel::ALL[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(traced: u64, off: &[(WaitClass, u64)], lost: u64) -> ExactSample {
        ExactSample {
            traced_ns: traced,
            off_cpu_ns: off.iter().copied().collect(),
            threads: 1,
            lost_events: lost,
            ..Default::default()
        }
    }

    #[test]
    fn shares_are_of_the_time_not_asleep() {
        let a = sample(1_000, &[(WaitClass::DirtyThrottle, 100)], 0);
        // 2 threads × 100 ns: one asleep 100 ns, the other throttled 60 ns of it.
        let b = sample(
            1_200,
            &[(WaitClass::DirtyThrottle, 160), (WaitClass::Sleeping, 100)],
            0,
        );
        let t = ExactTick::between(Some(&a), Some(&b)).unwrap();
        assert_eq!(t.active_ns, 100);
        let s = t.shares();
        assert!((s[WaitClass::DirtyThrottle.index()] - 0.6).abs() < 1e-9);
        assert!((s[WaitClass::Running.index()] - 0.4).abs() < 1e-9);
        let lost = sample(1_300, &[], 2);
        assert_eq!(ExactTick::between(Some(&b), Some(&lost)), None);
        assert_eq!(ExactTick::between(None, Some(&b)), None);
    }

    #[test]
    fn the_main_level_is_the_one_with_most_time() {
        let mut t = EvidenceTally::default();
        assert_eq!(t.main(), None);
        t.add(Some(EvidenceLevel::Wchan), 10);
        t.add(Some(EvidenceLevel::Exact), 30);
        t.add(None, 100);
        assert_eq!(t.main(), Some(EvidenceLevel::Exact));
    }
}
