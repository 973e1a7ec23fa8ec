//! When the run began, paused, stopped copying, flushed and ended, as the samples and the
//! engine's events told the model.

/// The run's moments (ns since start).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Timeline {
    /// Start of the first tick that carried bytes.
    pub first_byte_t: Option<u64>,
    /// End of the last tick that carried bytes (watch: the writer's last write).
    pub last_byte_t: Option<u64>,
    /// Watch mode: every followed writer had exited at the last tick (and whether that was
    /// already said once).
    pub writers_gone: bool,
    pub writers_gone_said: bool,
    /// Paused since, and the time paused before it.
    pub paused_since: Option<u64>,
    pub paused_ns: u64,
    /// Drops are looked for again from here (the first tick after a resume).
    pub resume_at: Option<u64>,
    /// The copy phase ended (the last byte, the flush's start, a fatal error).
    pub copy_end: Option<u64>,
    pub flush_start: Option<u64>,
    /// The flush ended, and how long it took, seconds.
    pub flush_done: Option<(u64, f64)>,
    pub finished_at: Option<u64>,
}

impl Timeline {
    /// Drops are looked for at `t`: after the first byte, not paused, still copying and not
    /// within the tick of a resume.
    pub fn detecting_at(&self, t: u64) -> bool {
        self.first_byte_t.is_some()
            && self.paused_since.is_none()
            && self.copy_end.is_none()
            && self.finished_at.is_none()
            && self.resume_at.is_none_or(|r| t >= r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_looked_for_only_while_copying() {
        let mut t = Timeline::default();
        assert!(!t.detecting_at(0), "before the first byte");
        t.first_byte_t = Some(10);
        assert!(t.detecting_at(20));
        t.paused_since = Some(30);
        assert!(!t.detecting_at(40));
        t.paused_since = None;
        t.resume_at = Some(50);
        assert!(!t.detecting_at(45) && t.detecting_at(50));
        t.copy_end = Some(60);
        assert!(!t.detecting_at(70));
    }
}
