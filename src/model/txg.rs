//! ZFS txg tracking: rows keyed by txg across samples, sync-start (S) and commit (C)
//! events deduplicated by txg, and each sync's window on the model's clock.

use std::collections::VecDeque;

use crate::sample::{TxgRow, ZfsSample};

/// A committed txg must have written at least this much to tell the pool's write rate.
pub const MIN_RATE_TXG_BYTES: u64 = 1 << 20;

/// Txgs remembered (100 ms ticks and 5 s txgs: 32 rows cover minutes).
const TRACK_CAP: usize = 32;
/// How far a mapped time may sit outside the observed bracket and still be trusted.
const MAP_SLACK_NS: i128 = 250_000_000;

/// What is known about one txg.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TxgTrack {
    pub row: TxgRow,
    /// Last sample time the row was seen before it reached S (O, Q or W).
    pub pre_sync_seen: Option<u64>,
    /// First sample time the row was seen in S or C.
    pub sync_seen: Option<u64>,
    /// Last sample time the row was seen in S.
    pub last_s_seen: Option<u64>,
    /// First sample time the row was seen in C.
    pub commit_seen: Option<u64>,
    pub birth_offset_ns: i64,
    /// This copy's bytes written while the txg was the open one ([`TxgTracker::credit_open`]):
    /// the rest of its `ndirty` is other writers'.
    pub own_bytes: u64,
}

impl TxgTrack {
    fn map(&self, hrtime: u64) -> i128 {
        hrtime as i128 + self.birth_offset_ns as i128
    }

    /// Sync start from the row's times, on the model's clock (needs the row past O/Q/W).
    fn mapped_sync_start(&self) -> Option<i128> {
        (self.row.otime > 0 && matches!(self.row.state, 'S' | 'C')).then(|| {
            self.map(
                self.row
                    .birth
                    .saturating_add(self.row.otime)
                    .saturating_add(self.row.qtime)
                    .saturating_add(self.row.wtime),
            )
        })
    }

    /// When the sync started, ns since the copy started: the row's own times when they
    /// fall where the samples saw the state change, else the first sample that saw it.
    pub fn sync_start(&self) -> Option<u64> {
        let seen = self.sync_seen?;
        let lo = self.pre_sync_seen.map(|t| t as i128).unwrap_or(i128::MIN);
        match self.mapped_sync_start() {
            Some(m) if m >= lo.saturating_sub(MAP_SLACK_NS) && m <= seen as i128 + MAP_SLACK_NS => {
                Some(m.clamp(0, u64::MAX as i128) as u64)
            }
            _ => Some(self.pre_sync_seen.unwrap_or(seen)),
        }
    }

    /// When the sync ended (None while it runs).
    pub fn sync_end(&self) -> Option<u64> {
        let seen = self.commit_seen?;
        let start = self.sync_start()?;
        let lo = self.last_s_seen.unwrap_or(start) as i128;
        match self.mapped_sync_start() {
            Some(m) if self.row.stime > 0 => {
                let end = m + self.row.stime as i128;
                if end >= lo - MAP_SLACK_NS && end <= seen as i128 + MAP_SLACK_NS {
                    Some(end.clamp(start as i128, u64::MAX as i128) as u64)
                } else {
                    Some(seen)
                }
            }
            _ => Some(seen),
        }
    }

    /// Overlap of the sync window (open-ended syncs run until `now`) with `[a, b]`.
    pub fn overlap(&self, a: u64, b: u64, now: u64) -> u64 {
        let Some(s0) = self.sync_start() else {
            return 0;
        };
        let s1 = self.sync_end().unwrap_or(now);
        s1.min(b).saturating_sub(s0.max(a))
    }
}

/// Committed txgs that tell the other writers' intake ([`OthersIntake`]).
const OTHERS_TXGS: usize = 4;

/// What writers other than the copy put into the pool, from its recent txgs: each one's
/// `ndirty` less the copy's own bytes in it, over the time it was open. Samba clients and
/// other jobs on a NAS fill the same txgs; a pace that leaves them no room holds them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct OthersIntake {
    /// `(ndirty, the copy's bytes, otime ns)` of the last committed txgs.
    txgs: VecDeque<(u64, u64, u64)>,
}

impl OthersIntake {
    /// A committed txg; `own`: the copy's bytes in it. One that was open for no time, or
    /// wrote under [`MIN_RATE_TXG_BYTES`] (a sync's fixed cost), tells no rate.
    pub fn committed(&mut self, row: &TxgRow, own: u64) {
        if row.otime == 0 || row.nwritten < MIN_RATE_TXG_BYTES || row.ndirty == 0 {
            return;
        }
        if self.txgs.len() >= OTHERS_TXGS {
            self.txgs.pop_front();
        }
        self.txgs.push_back((row.ndirty, own, row.otime));
    }

    /// Their intake, bytes/s of dirty data (the units of the copy's own rate). Summed before
    /// the copy's bytes are taken off: a tick's bytes credited to the txg after the one they
    /// joined would otherwise count as others' there and be lost here.
    pub fn bps(&self) -> Option<f64> {
        // In f64: four txgs' figures from a corrupt kstat line could overflow a u64 sum.
        let sum = |f: fn(&(u64, u64, u64)) -> u64| self.txgs.iter().map(|t| f(t) as f64).sum();
        let (dirty, own, open): (f64, f64, f64) = (sum(|t| t.0), sum(|t| t.1), sum(|t| t.2));
        (open > 0.0).then(|| (dirty - own).max(0.0) * 1e9 / open)
    }
}

/// The txgs whose syncs overlapped a span ([`TxgTracker::overlapping`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Overlapping {
    pub first: u64,
    pub last: u64,
    pub count: u32,
    /// Time within the span some of them was syncing (syncs do not overlap each other).
    pub covered: u64,
    /// The one that overlapped the span the most.
    pub most: TxgTrack,
}

/// A txg event found by [`TxgTracker::update`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TxgChange {
    SyncStarted {
        t: u64,
        txg: u64,
    },
    /// `own`: this copy's bytes in it ([`TxgTrack::own_bytes`]).
    Committed {
        t: u64,
        row: TxgRow,
        own: u64,
    },
}

#[derive(Debug, Clone, Default)]
pub(crate) struct TxgTracker {
    tracks: VecDeque<TxgTrack>,
    baseline_done: bool,
    max_started: u64,
    max_committed: u64,
    pool: String,
}

impl TxgTracker {
    /// Folds one sample's rows in; returns S and C transitions not reported before.
    /// The first sample is a baseline: history before the copy raises no events.
    pub fn update(&mut self, t: u64, zfs: &ZfsSample) -> Vec<TxgChange> {
        let mut out = Vec::new();
        if self.pool != zfs.pool {
            // Another pool (or the first sample): old rows mean nothing here.
            self.tracks.clear();
            self.baseline_done = false;
            self.pool.clone_from(&zfs.pool);
        }
        let baseline = !self.baseline_done;
        for row in &zfs.txgs {
            let idx = match self.tracks.iter().position(|k| k.row.txg == row.txg) {
                Some(i) => i,
                None => {
                    if self.tracks.len() >= TRACK_CAP {
                        self.tracks.pop_front();
                    }
                    // Keep them ordered by txg; rows arrive oldest first.
                    let pos = self.tracks.partition_point(|k| k.row.txg < row.txg);
                    self.tracks.insert(
                        pos,
                        TxgTrack {
                            row: *row,
                            pre_sync_seen: None,
                            sync_seen: None,
                            last_s_seen: None,
                            commit_seen: None,
                            birth_offset_ns: zfs.birth_offset_ns,
                            own_bytes: 0,
                        },
                    );
                    pos
                }
            };
            let k = &mut self.tracks[idx];
            k.row = *row;
            k.birth_offset_ns = zfs.birth_offset_ns;
            match row.state {
                'S' => {
                    k.sync_seen.get_or_insert(t);
                    k.last_s_seen = Some(t);
                }
                'C' => {
                    k.sync_seen.get_or_insert(t);
                    k.commit_seen.get_or_insert(t);
                }
                _ => k.pre_sync_seen = Some(t),
            }
            let k = *k;
            if baseline {
                if matches!(row.state, 'S' | 'C') {
                    self.max_started = self.max_started.max(row.txg);
                }
                if row.state == 'C' {
                    self.max_committed = self.max_committed.max(row.txg);
                }
                continue;
            }
            if matches!(row.state, 'S' | 'C') && row.txg > self.max_started {
                self.max_started = row.txg;
                if row.state == 'S' {
                    out.push(TxgChange::SyncStarted {
                        t: k.sync_start().unwrap_or(t).min(t),
                        txg: row.txg,
                    });
                }
            }
            if row.state == 'C' && row.txg > self.max_committed {
                self.max_committed = row.txg;
                out.push(TxgChange::Committed {
                    t: k.sync_end().unwrap_or(t).min(t),
                    row: *row,
                    own: k.own_bytes,
                });
            }
        }
        self.baseline_done = true;
        out
    }

    /// Counts `bytes` the copy wrote in the tick just folded in as the open txg's: a write
    /// joins the txg open when it is made, and the txg open at the tick's end held most of
    /// the tick (txgs stay open for seconds; a tick is 100 ms).
    pub fn credit_open(&mut self, bytes: u64) {
        if let Some(k) = self.tracks.iter_mut().rev().find(|k| k.row.state == 'O') {
            k.own_bytes = k.own_bytes.saturating_add(bytes);
        }
    }

    /// The txg whose sync overlaps `[a, b]` the most, if that covers at least `min_fraction` of it.
    pub fn best_overlap(&self, a: u64, b: u64, now: u64, min_fraction: f64) -> Option<TxgTrack> {
        let len = b.saturating_sub(a).max(1);
        self.tracks
            .iter()
            .map(|k| (k.overlap(a, b, now), k))
            .filter(|(o, _)| *o > 0 && *o as f64 >= min_fraction * len as f64)
            .max_by_key(|(o, k)| (*o, k.row.txg))
            .map(|(_, k)| *k)
    }

    /// Every txg whose sync overlapped `[a, b]`: how many, the first and last, the time some
    /// of them was syncing, and the one that overlapped most (count 0 when none did).
    pub fn overlapping(&self, a: u64, b: u64, now: u64) -> Overlapping {
        let mut run = Overlapping::default();
        let mut most = 0;
        for k in &self.tracks {
            let o = k.overlap(a, b, now);
            if o == 0 {
                continue;
            }
            if run.count == 0 {
                run.first = k.row.txg;
            }
            run.count += 1;
            run.last = k.row.txg;
            run.covered += o;
            if o >= most {
                most = o;
                run.most = *k;
            }
        }
        run.covered = run.covered.min(b.saturating_sub(a));
        run
    }

    /// Time within `[a, b]` some txg was syncing, and the pool's write rate while syncing
    /// (Σ nwritten / Σ stime of the committed txgs that synced in it), for "syncs back to back".
    /// Only syncs that began at or after `since` (the copy's first byte) count: the txgs a pool
    /// syncs before (its creation, a `zpool sync`, an idle pool's housekeeping) carry a few
    /// hundred KB each, and their fixed cost would pass for a slow pool. A txg that wrote less
    /// than [`MIN_RATE_TXG_BYTES`] tells the same fixed cost, not the pool's rate.
    pub fn sync_coverage(&self, since: u64, (a, b): (u64, u64), now: u64) -> (u64, Option<f64>) {
        let (mut covered, mut bytes, mut stime) = (0u64, 0u64, 0u64);
        for k in &self.tracks {
            if k.sync_start().is_none_or(|s| s < since) {
                continue;
            }
            let o = k.overlap(a, b, now);
            covered += o;
            if o > 0
                && k.row.state == 'C'
                && k.row.stime > 0
                && k.row.nwritten >= MIN_RATE_TXG_BYTES
            {
                bytes = bytes.saturating_add(k.row.nwritten);
                stime = stime.saturating_add(k.row.stime);
            }
        }
        let rate = (stime > 0 && bytes > 0).then(|| bytes as f64 * 1e9 / stime as f64);
        (covered.min(b.saturating_sub(a)), rate)
    }

    /// The row of `txg`, if still tracked.
    #[cfg(test)]
    pub fn get(&self, txg: u64) -> Option<&TxgTrack> {
        self.tracks.iter().find(|k| k.row.txg == txg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Rows from the lab capture (timeseries-40mbps-zero/txgs-raw.log), birth offset as the
    // capture's first-seen times give it.
    const OFFSET: i64 = -24_990_000_000;

    fn row(line: &str) -> TxgRow {
        let f: Vec<u64> = line
            .split_whitespace()
            .enumerate()
            .filter(|(i, _)| *i != 2)
            .map(|(_, w)| w.parse().unwrap())
            .collect();
        let state = line
            .split_whitespace()
            .nth(2)
            .unwrap()
            .chars()
            .next()
            .unwrap();
        TxgRow {
            txg: f[0],
            birth: f[1],
            state,
            ndirty: f[2],
            nread: f[3],
            nwritten: f[4],
            reads: f[5],
            writes: f[6],
            otime: f[7],
            qtime: f[8],
            wtime: f[9],
            stime: f[10],
        }
    }

    fn sample(rows: &[&str]) -> ZfsSample {
        ZfsSample {
            pool: "tank".into(),
            txgs: rows.iter().map(|l| row(l)).collect(),
            birth_offset_ns: OFFSET,
            ..Default::default()
        }
    }

    const R10_S: &str = "10       22239745430      S     0            0            0            0        0        4600608410   178800       122000       0";
    const R10_C: &str = "10       22239745430      C     82248192     0            81735680     0        190      4600608410   178800       122000       2004599040";
    const R11_O: &str = "11       26840353840      O     0            0            0            0        0        0            0            0            0";
    const R11_S: &str = "11       26840353840      S     0            0            0            0        0        2005063640   27610        1469350      0";
    const R12_O: &str = "12       28845417480      O     0            0            0            0        0        0            0            0            0";
    const R9_C: &str = "9        17236819610      C     0            0            0            0        0        5002925820   324120       269520       1778100";
    const R10_O: &str = "10       22239745430      O     0            0            0            0        0        0            0            0            0";

    #[test]
    fn baseline_then_one_event_per_transition() {
        let mut tr = TxgTracker::default();
        assert!(tr.update(0, &sample(&[R9_C, R10_O])).is_empty());
        assert!(tr.update(1_800_000_000, &sample(&[R9_C, R10_O])).is_empty());
        let ev = tr.update(1_901_000_000, &sample(&[R9_C, R10_S, R11_O]));
        // birth + otime + qtime + wtime + offset = 1.8505 s, inside (1.800, 1.901].
        assert_eq!(
            ev,
            vec![TxgChange::SyncStarted {
                t: 1_850_654_640,
                txg: 10
            }]
        );
        // Seen again in S: no repeat.
        assert!(
            tr.update(2_004_000_000, &sample(&[R9_C, R10_S, R11_O]))
                .is_empty()
        );
        let ev = tr.update(3_903_000_000, &sample(&[R9_C, R10_C, R11_S, R12_O]));
        assert_eq!(ev.len(), 2);
        assert_eq!(
            ev[0],
            TxgChange::Committed {
                t: 3_855_253_680,
                row: row(R10_C),
                own: 0,
            }
        );
        assert!(matches!(ev[1], TxgChange::SyncStarted { txg: 11, .. }));
        let k = tr.get(10).unwrap();
        assert_eq!(k.sync_start(), Some(1_850_654_640));
        assert_eq!(k.overlap(0, 10_000_000_000, 10_000_000_000), 2_004_599_040);
        let best = tr.best_overlap(3_000_000_000, 3_500_000_000, 3_903_000_000, 0.5);
        assert_eq!(best.map(|k| k.row.txg), Some(10));
    }

    #[test]
    fn implausible_offset_falls_back_to_sample_times() {
        let mut tr = TxgTracker::default();
        let mut s = sample(&[R9_C, R10_O]);
        s.birth_offset_ns = 0;
        tr.update(0, &s);
        tr.update(1_800_000_000, &s);
        let mut s = sample(&[R9_C, R10_S, R11_O]);
        s.birth_offset_ns = 0;
        let ev = tr.update(1_901_000_000, &s);
        assert_eq!(
            ev,
            vec![TxgChange::SyncStarted {
                t: 1_800_000_000,
                txg: 10
            }]
        );
    }
}
