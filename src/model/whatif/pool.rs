//! The ZFS write throttle and txg cycle of OpenZFS 2.1, one writer, continuous in bytes:
//!
//! - A txg is open until the sync thread takes it: at `zfs_txg_timeout` after the previous
//!   sync began, or at once when a sync ends and the open txg was kicked — its own dirty
//!   data (`dp_dirty_pertxg`) passed `zfs_dirty_data_sync_percent` of `zfs_dirty_data_max`
//!   (`dsl_pool_dirty_space` → `txg_kick`; `txg_sync_thread`, module/zfs/txg.c). One txg
//!   syncs while the next is open.
//! - A sync writes its dirty data at the pool's measured rate, each write undirtying its
//!   share (`dbuf_write_physdone` → `dsl_pool_undirty_space`), then pays the fixed cost (MOS,
//!   space maps, uberblock).
//! - A writer's tx is delayed once pool-wide dirty data passes `zfs_delay_min_dirty_percent`:
//!   `min_time = zfs_delay_scale × (dirty − min) / (max − dirty)`, at most 100 ms, the sleeps
//!   serialised pool-wide (`dmu_tx_delay`, module/zfs/dmu_tx.c), so the writer's rate is at
//!   most one tx per `min_time`; at `zfs_dirty_data_max` it waits (`dmu_tx_wait`,
//!   `dmu_tx_dirty_over_max`).
//! - The pool's space reservation, when the recording showed it: a tx is refused while
//!   `24 × unsynced dirty data ≥ the space left` (`dsl_dir_tempreserve_impl`: each txg's
//!   `dd_space_towrite`, released by `dsl_dir_sync` when its data is written), and the writer
//!   waits for the syncing txg (`txg_wait_synced`).

use super::measure::{ASIZE_INFLATION, PoolRates};
use crate::sample::{DmuTx, TxgRow};

/// `zfs_delay_max_ns` (module/zfs/dmu_tx.c).
const DELAY_MAX_S: f64 = 0.1;
/// Committed rows a sample carries (the model needs the newest few).
const ROWS_KEPT: usize = 8;

/// The tunables and measured rates the pool runs with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct PoolParams {
    pub dirty_max: f64,
    pub sync_bytes: f64,
    pub delay_min: f64,
    pub delay_scale_s: f64,
    pub txg_timeout_s: f64,
    pub drain_bps: f64,
    pub fixed_s: f64,
    pub written_per_dirty: f64,
    pub tx_bytes: f64,
    pub free_space: Option<f64>,
}

impl PoolParams {
    pub fn new(rates: &PoolRates, t: Tunables) -> PoolParams {
        PoolParams {
            dirty_max: t.dirty_max,
            sync_bytes: t.dirty_max * t.sync_pct / 100.0,
            delay_min: t.dirty_max * t.delay_pct / 100.0,
            delay_scale_s: t.delay_scale_ns / 1e9,
            txg_timeout_s: t.txg_timeout_s,
            drain_bps: rates.drain_bps.max(1e5),
            fixed_s: rates.fixed_ns as f64 / 1e9,
            written_per_dirty: rates.written_per_dirty,
            tx_bytes: rates.tx_bytes.max(4096.0),
            free_space: rates.free_space.map(|f| f as f64),
        }
    }

    /// The shortest time one tx may take at `dirty` (0: no delay).
    fn tx_time(&self, dirty: f64) -> f64 {
        if dirty <= self.delay_min {
            return 0.0;
        }
        let room = (self.dirty_max - dirty).max(1.0);
        (self.delay_scale_s * (dirty - self.delay_min) / room).min(DELAY_MAX_S)
    }
}

/// The ZFS tunables of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tunables {
    pub dirty_max: f64,
    pub sync_pct: f64,
    pub delay_pct: f64,
    pub delay_scale_ns: f64,
    pub txg_timeout_s: f64,
}

/// Why the writer was held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// `dmu_tx_delay`'s sleeps.
    Delay,
    /// Dirty data at `zfs_dirty_data_max`.
    OverMax,
    /// The space reservation: waiting for the syncing txg.
    Space,
}

/// What the pool let the writer do in one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Accepted {
    pub bytes: f64,
    /// Share of the step the writer was held, 0–1, and by what.
    pub held: f64,
    pub hold: Option<Hold>,
}

#[derive(Debug, Clone, Copy)]
struct Open {
    txg: u64,
    birth: f64,
    dirty: f64,
}

#[derive(Debug, Clone, Copy)]
struct Syncing {
    txg: u64,
    birth: f64,
    otime: f64,
    start: f64,
    ndirty: f64,
    data_left: f64,
    /// `dsl_dir_sync` ran: its space reservation is released.
    space_released: bool,
    tail_left: f64,
}

/// The pool's state.
#[derive(Debug, Clone)]
pub(super) struct Pool {
    p: PoolParams,
    open: Open,
    syncing: Option<Syncing>,
    last_sync_start: f64,
    kicked: bool,
    dirty_total: f64,
    /// What the copy's committed txgs dirtied (the pool space it now uses).
    synced: f64,
    /// The writer waits until this txg committed.
    wait_for: Option<u64>,
    over_max_waiting: bool,
    /// A flush asked for every txg up to this one.
    flush_to: Option<u64>,
    committed: Vec<TxgRow>,
    dmu_tx: DmuTx,
    /// Fractional txs not yet counted.
    tx_carry: (f64, f64),
    disk_written: f64,
    disk_busy_s: f64,
}

impl Pool {
    pub fn new(p: PoolParams) -> Pool {
        Pool {
            p,
            open: Open {
                txg: 1,
                birth: 0.0,
                dirty: 0.0,
            },
            syncing: None,
            last_sync_start: 0.0,
            kicked: false,
            dirty_total: 0.0,
            synced: 0.0,
            wait_for: None,
            over_max_waiting: false,
            flush_to: None,
            committed: Vec::new(),
            dmu_tx: DmuTx::default(),
            tx_carry: (0.0, 0.0),
            disk_written: 0.0,
            disk_busy_s: 0.0,
        }
    }

    /// The writer offers `want` bytes over `dt` seconds.
    pub fn accept(&mut self, want: f64, dt: f64) -> Accepted {
        let held = |hold| Accepted {
            bytes: 0.0,
            held: 1.0,
            hold: Some(hold),
        };
        if want <= 0.0 {
            return Accepted {
                bytes: 0.0,
                held: 0.0,
                hold: None,
            };
        }
        if self.wait_for.is_some() {
            return held(Hold::Space);
        }
        if self.dirty_total >= self.p.dirty_max {
            if !self.over_max_waiting {
                self.over_max_waiting = true;
                self.dmu_tx.dirty_over_max += 1;
            }
            return held(Hold::OverMax);
        }
        self.over_max_waiting = false;
        let tx_time = self.p.tx_time(self.dirty_total);
        let cap = if tx_time > 0.0 {
            self.p.tx_bytes / tx_time * dt
        } else {
            f64::INFINITY
        };
        let mut bytes = want.min(cap).min(self.p.dirty_max - self.dirty_total);
        let mut hold = (bytes < want).then_some(Hold::Delay);
        if let Some(room) = self.space_room()
            && bytes >= room
        {
            bytes = room.max(0.0);
            self.wait_for = Some(self.syncing.map_or(self.open.txg, |s| s.txg));
            hold = Some(Hold::Space);
        }
        self.count_txs(bytes, tx_time > 0.0);
        self.open.dirty += bytes;
        self.dirty_total += bytes;
        if self.open.dirty > self.p.sync_bytes {
            self.kicked = true;
        }
        Accepted {
            bytes,
            held: 1.0 - bytes / want,
            hold,
        }
    }

    /// Unsynced dirty data the reservation still allows, bytes (`None`: no limit known).
    fn space_room(&self) -> Option<f64> {
        let free = self.p.free_space?;
        let reserved = self.open.dirty
            + self
                .syncing
                .filter(|s| !s.space_released)
                .map_or(0.0, |s| s.ndirty);
        Some((free - self.synced) / ASIZE_INFLATION - reserved)
    }

    fn count_txs(&mut self, bytes: f64, delayed: bool) {
        self.tx_carry.0 += bytes / self.p.tx_bytes;
        let n = self.tx_carry.0.floor();
        self.tx_carry.0 -= n;
        self.dmu_tx.assigned += n as u64;
        if delayed {
            self.tx_carry.1 += bytes / self.p.tx_bytes;
            let d = self.tx_carry.1.floor();
            self.tx_carry.1 -= d;
            self.dmu_tx.dirty_delay += d as u64;
        }
    }

    /// The sync thread over `dt` seconds ending at `t`.
    pub fn advance(&mut self, t: f64, dt: f64) {
        let mut left = dt;
        while left > 1e-9 {
            match self.syncing {
                Some(_) => left = self.sync_for(t - left, left),
                None if self.should_sync(t - left) => self.start_sync(t - left),
                None => break,
            }
        }
    }

    fn should_sync(&self, t: f64) -> bool {
        self.kicked
            || self.wait_for.is_some()
            || self.flush_to.is_some_and(|f| f >= self.open.txg)
            || t - self.last_sync_start >= self.p.txg_timeout_s
    }

    fn start_sync(&mut self, t: f64) {
        let o = self.open;
        self.syncing = Some(Syncing {
            txg: o.txg,
            birth: o.birth,
            otime: t - o.birth,
            start: t,
            ndirty: o.dirty,
            data_left: o.dirty,
            space_released: false,
            tail_left: self.p.fixed_s,
        });
        self.last_sync_start = t;
        self.kicked = false;
        self.open = Open {
            txg: o.txg + 1,
            birth: t,
            dirty: 0.0,
        };
    }

    /// Syncs from `t` for at most `dt`; returns the time left when the sync ended within it.
    fn sync_for(&mut self, t: f64, dt: f64) -> f64 {
        let Some(mut s) = self.syncing else {
            return 0.0;
        };
        let mut used = 0.0;
        if s.data_left > 0.0 {
            let w = s.data_left.min(self.p.drain_bps * dt);
            s.data_left -= w;
            self.dirty_total = (self.dirty_total - w).max(0.0);
            self.disk_written += w * self.p.written_per_dirty;
            used = w / self.p.drain_bps;
            self.disk_busy_s += used;
        }
        if s.data_left <= 0.0 {
            s.space_released = true;
            let tail = s.tail_left.min(dt - used);
            s.tail_left -= tail;
            used += tail;
        }
        self.syncing = Some(s);
        if s.data_left <= 0.0 && s.tail_left <= 1e-12 {
            self.commit(s, t + used);
            return dt - used;
        }
        0.0
    }

    fn commit(&mut self, s: Syncing, end: f64) {
        let ns = |x: f64| (x.max(0.0) * 1e9) as u64;
        self.committed.push(TxgRow {
            txg: s.txg,
            birth: ns(s.birth),
            state: 'C',
            ndirty: s.ndirty as u64,
            nread: 0,
            nwritten: (s.ndirty * self.p.written_per_dirty) as u64,
            reads: 0,
            writes: (s.ndirty / self.p.tx_bytes) as u64,
            otime: ns(s.otime),
            qtime: 0,
            wtime: 0,
            stime: ns(end - s.start),
        });
        if self.committed.len() > ROWS_KEPT {
            self.committed.remove(0);
        }
        self.synced += s.ndirty;
        self.syncing = None;
        if self.wait_for.is_some_and(|w| w <= s.txg) {
            self.wait_for = None;
        }
    }

    /// `syncfs` after the last byte: every txg up to the one holding it syncs, one after
    /// another (0: nothing of the copy is unsynced).
    pub fn start_flush(&mut self) {
        let last = if self.open.dirty > 0.0 {
            self.open.txg
        } else {
            self.syncing.map_or(0, |s| s.txg)
        };
        self.flush_to = Some(last);
    }

    /// The data the copy wrote is all synced.
    pub fn flushed(&self) -> bool {
        self.flush_to
            .is_some_and(|f| f == 0 || self.committed.last().is_some_and(|c| c.txg >= f))
    }

    /// Dirty data pool-wide (arcstats `anon_size` stands in for it in samples).
    pub fn dirty(&self) -> f64 {
        self.dirty_total
    }

    /// The rows a `txgs` read would show now, oldest first, with `t` the read's time.
    pub fn rows(&self, t: f64) -> Vec<TxgRow> {
        let ns = |x: f64| (x.max(0.0) * 1e9) as u64;
        let mut rows = self.committed.clone();
        if let Some(s) = self.syncing {
            rows.push(TxgRow {
                txg: s.txg,
                birth: ns(s.birth),
                state: 'S',
                otime: ns(s.otime),
                ..TxgRow::default()
            });
        }
        rows.push(TxgRow {
            txg: self.open.txg,
            birth: ns(self.open.birth.min(t)),
            state: 'O',
            ..TxgRow::default()
        });
        rows
    }

    pub fn dmu_tx(&self) -> DmuTx {
        self.dmu_tx
    }

    /// Bytes the disks wrote so far, and the seconds they were busy.
    pub fn disks(&self) -> (f64, f64) {
        (self.disk_written, self.disk_busy_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(max_mb: f64, free: Option<f64>) -> PoolParams {
        PoolParams {
            dirty_max: max_mb * 1e6,
            sync_bytes: max_mb * 0.2e6,
            delay_min: max_mb * 0.6e6,
            delay_scale_s: 500e-6,
            txg_timeout_s: 5.0,
            drain_bps: 40e6,
            fixed_s: 0.1,
            written_per_dirty: 1.0,
            tx_bytes: 131_072.0,
            free_space: free,
        }
    }

    /// Runs a writer offering `intake` for `secs`; returns (bytes written, pool).
    fn run(p: PoolParams, intake: f64, secs: f64) -> (f64, Pool) {
        let mut pool = Pool::new(p);
        let dt = 0.01;
        let mut bytes = 0.0;
        for i in 0..(secs / dt) as usize {
            bytes += pool.accept(intake * dt, dt).bytes;
            pool.advance((i + 1) as f64 * dt, dt);
        }
        (bytes, pool)
    }

    #[test]
    fn the_delay_curve_is_dmu_tx_delays() {
        let p = params(100.0, None);
        assert_eq!(p.tx_time(50e6), 0.0);
        // 80 %: scale × 20/20 = 500 µs; 90 %: × 30/10 = 1.5 ms; the cap is 100 ms.
        assert!((p.tx_time(80e6) - 500e-6).abs() < 1e-9);
        assert!((p.tx_time(90e6) - 1.5e-3).abs() < 1e-9);
        assert_eq!(p.tx_time(99.9999e6), DELAY_MAX_S);
    }

    #[test]
    fn a_fast_writer_is_held_at_the_pools_rate_by_the_delay() {
        // 64 MB of dirty data at most: the writer settles where one tx per min_time is the
        // pool's rate, under the maximum, and never waits at it.
        let (bytes, pool) = run(params(64.0, None), 80e6, 60.0);
        let rate = bytes / 60.0;
        assert!((rate - 40e6).abs() < 3e6, "{rate}");
        assert_eq!(pool.dmu_tx.dirty_over_max, 0);
        assert!(pool.dmu_tx.dirty_delay > 0);
        assert!(pool.dirty() > 0.6 * 64e6, "{}", pool.dirty());
    }

    #[test]
    fn a_slow_writer_syncs_at_the_timeout() {
        let (_, pool) = run(params(1000.0, None), 10e6, 30.0);
        // 50 MB per 5 s never reaches the 200 MB kick: every txg closes at the timeout.
        for r in &pool.committed[1..] {
            assert!((r.otime as f64 / 1e9 - 5.0).abs() < 0.05, "{r:?}");
        }
    }

    #[test]
    fn the_space_reservation_stops_the_writer_until_the_sync_ends() {
        // 24 × 150 MB of unsynced data fills 3.6 GB of space: the writer stops there, below
        // the write throttle, and goes on when the syncing txg committed.
        let (bytes, pool) = run(params(1000.0, Some(3.6e9)), 80e6, 40.0);
        assert_eq!(pool.dmu_tx.dirty_delay, 0);
        assert!(bytes / 40.0 < 45e6, "{}", bytes / 40.0);
        let last = pool.committed.last().expect("txgs");
        assert!(last.ndirty < 160_000_000, "{last:?}");
    }
}
