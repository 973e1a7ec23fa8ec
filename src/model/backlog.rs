//! This copy's flush backlog: the bytes it handed to the kernel that have not
//! reached the destination yet, told apart from the system-wide Dirty + Writeback (or ZFS
//! `anon_size`), which holds every writer's data. The flush gauge, the flush event and the ETA
//! use it, so a 400 MB copy beside a busy writer says "flushing 400 MB", not the system's 2.2 GB.

use serde::{Deserialize, Serialize};

/// Whose data a backlog figure counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BacklogScope {
    /// This copy's own data, from the destination's counters since the copy started.
    ThisCopy,
    /// The whole system's dirty data (the destination's counters are unknown): an upper bound.
    System,
}

/// Bytes still to reach the destination, and whose they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backlog {
    pub bytes: u64,
    pub scope: BacklogScope,
}

/// Dirty data the system may hold besides a copy whose own is all written (the journal, other
/// writers' trickle) before the copy's share counts as unknown.
const UNKNOWN_SHARE_MIN: u64 = 16 << 20;

/// This copy's backlog from what it `handed` to the kernel and what `reached` the destination
/// since it started (its disks' sectors written, on ZFS the committed txgs' bytes; `None`
/// when the destination's counters are unknown), bounded by the `system` backlog (all of this
/// copy's unwritten data is in it: the figure `reached` also counts other writers, journal and
/// metadata, so handed − reached is a low estimate and the system figure a high one). A memory
/// filesystem has nothing to flush. Without counters, the system figure, labelled as such.
pub(crate) fn this_copy(
    handed: u64,
    reached: Option<u64>,
    system: Option<u64>,
    memory_fs: bool,
) -> Option<Backlog> {
    if memory_fs {
        return Some(Backlog {
            bytes: 0,
            scope: BacklogScope::ThisCopy,
        });
    }
    match reached {
        // The disks wrote all this copy handed over and more, while the system still holds
        // dirty data: others wrote there too, and which of what is left is ours is unknown
        // (calling it 0 said "to flush 0 B" before a 3.4 s flush). The system's figure.
        Some(r) if r >= handed && system.is_some_and(|s| s > UNKNOWN_SHARE_MIN) => {
            system.map(|bytes| Backlog {
                bytes,
                scope: BacklogScope::System,
            })
        }
        Some(r) => {
            let own = handed.saturating_sub(r);
            Some(Backlog {
                bytes: system.map_or(own, |s| own.min(s)),
                scope: BacklogScope::ThisCopy,
            })
        }
        None => system.map(|bytes| Backlog {
            bytes,
            scope: BacklogScope::System,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    fn own(bytes: u64) -> Option<Backlog> {
        Some(Backlog {
            bytes,
            scope: BacklogScope::ThisCopy,
        })
    }

    #[test]
    fn a_copy_beside_a_busy_writer_counts_only_its_own_data() {
        // 400 MB handed over, 90 MB of it written so far; the system holds 2.2 GB dirty
        // (another writer): this copy still has 310 MB to flush.
        assert_eq!(
            this_copy(400 * MB, Some(90 * MB), Some(2200 * MB), false),
            own(310 * MB)
        );
    }

    #[test]
    fn the_system_figure_bounds_it_and_it_never_goes_negative() {
        // The disks wrote little (compression, or the counters started late) but the system
        // has only 50 MB dirty: this copy cannot have more than that waiting.
        assert_eq!(
            this_copy(400 * MB, Some(0), Some(50 * MB), false),
            own(50 * MB)
        );
        // Other writers made the disks write more than this copy handed over, and 300 MB are
        // still dirty: how much of it is this copy's is unknown, so the system's figure.
        assert_eq!(
            this_copy(400 * MB, Some(900 * MB), Some(300 * MB), false),
            Some(Backlog {
                bytes: 300 * MB,
                scope: BacklogScope::System
            })
        );
        // All written (the journal wrote a little more); the system holds a trickle only.
        assert_eq!(
            this_copy(400 * MB, Some(404 * MB), Some(2 * MB), false),
            own(0)
        );
    }

    #[test]
    fn memory_filesystems_have_nothing_to_flush_and_unknown_disks_fall_back_to_the_system() {
        assert_eq!(this_copy(400 * MB, None, Some(2200 * MB), true), own(0));
        assert_eq!(
            this_copy(400 * MB, None, Some(2200 * MB), false),
            Some(Backlog {
                bytes: 2200 * MB,
                scope: BacklogScope::System
            })
        );
        assert_eq!(this_copy(400 * MB, None, None, false), None);
    }
}
