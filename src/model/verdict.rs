//! The verdict: one short paragraph naming what limited the copy and at what rate,
//! built only from figures of the run (the time budget, the txgs, the page-cache limits, the
//! environment's tunables). Pure; every output prints [`Verdict::text`] as it is.

use serde::{Deserialize, Serialize};

use super::Stats;
use super::budget::{Budget, Slice};
use super::phase::SATURATED_UTIL_PCT;
use super::txg::OthersIntake;
use crate::present::format::{fmt_bytes, fmt_rate, fmt_rate_with, fmt_secs};
use crate::present::quote::quote;
use crate::sample::{Environment, TxgRow};

/// A wait must hold the writer at least this share of the measured copying time to be named.
pub const NAMED_SHARE: f64 = 0.2;
/// Without thread states, drops of one cause must cost at least this share of the copy time.
pub const LOST_SHARE: f64 = 0.25;
/// Thread states must cover at least this share of the copying time to be used.
pub const MEASURED_SHARE: f64 = 0.5;
/// A copy shorter than this says "unknown".
pub const MIN_COPY_SECS: f64 = 2.0;
/// A copy averaging at least this share of the pool's write rate ran at the pool's pace.
pub const AT_POOL_SHARE: f64 = 0.85;
/// A copy's average at least this multiple of its disks' rate while saturated was inflated by
/// the first burst into RAM: the verdict then quotes the disks' rate.
pub const INFLATED_AVG: f64 = 1.2;
/// Logical ÷ physical bytes from which a ZFS copy "measures the CPU, not the disks".
pub const COMPRESSED_RATIO: f64 = 10.0;
/// Logical ÷ physical at or above this: zeros stored as holes, not compressed data.
pub const HOLES_RATIO: f64 = 50.0;
/// The final flush took at least this share of the run (copy + flush): the verdict tells the
/// two phases' story ("copied into RAM at A, then the disk wrote the backlog at B for C s").
pub const FLUSH_SHARE: f64 = 0.5;
/// Beside a pool-bound verdict, the writer's own syncs are told from this share of the time.
const OWN_SYNC_TOLD_SHARE: f64 = 0.05;
/// Smallest copy for which the compression ratio is judged.
const MIN_COMPRESS_BYTES: u64 = 64 << 20;
/// A txg sync at least this long stalls the writers for as long (a Samba client timed out
/// behind a 22 s one): the advice is then to make txgs smaller, never larger.
pub const LONG_SYNC_SECS: f64 = 5.0;
/// The sync length the advice for long syncs aims at.
pub const TARGET_SYNC_SECS: f64 = 2.0;
/// Txgs that wrote less than this are idle ticks of the pool, not the copy's data.
const MIN_TXG_BYTES: u64 = 1 << 20;

/// What limited the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The ZFS pool's write rate (the writer waited for txgs).
    Pool,
    /// The destination disk behind the page cache (dirty throttling).
    Disk,
    /// Reading the source.
    Source,
    /// `copyscope pipe`: the process reading the pipe took the data no faster.
    PipeReader,
    /// Waiting for a CPU.
    Cpu,
    /// Synchronous writes (ZIL, fsync).
    SyncWrites,
    /// The ext4 journal.
    Journal,
    /// Nothing in the kernel held the copier: it ran on a CPU most of the time.
    Copier,
    /// copyscope's own rate limit (`--bwlimit`, the demo's pace) held the writer.
    RateLimit,
    /// `watch --pipeline`: one of its stages (named in the text).
    Stage,
    /// The evidence is too thin to say.
    Unknown,
}

/// The verdict: the limit, its rate, and the paragraph every output prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub limit: Limit,
    /// The limiting rate, bytes/s, when one was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// Logical ÷ physical bytes on ZFS when the data compressed at least 10:1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compressed_ratio: Option<f64>,
    pub text: String,
}

/// The verdict's words for wrapping, a unit kept with its number ("48 %", "40 MB/s", "3.1 s")
/// so a line never starts with one.
pub fn words(text: &str) -> Vec<String> {
    const UNITS: [&str; 12] = [
        "%", "B", "kB", "MB", "GB", "TB", "B/s", "kB/s", "MB/s", "GB/s", "s", "min",
    ];
    let mut out: Vec<String> = Vec::new();
    for w in text.split(' ') {
        let bare = w.trim_end_matches([',', ';', ':', '.', ')']);
        match out.last_mut() {
            Some(prev) if UNITS.contains(&bare) && prev.ends_with(|c: char| c.is_ascii_digit()) => {
                prev.push(' ');
                prev.push_str(w);
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// Figures of the copy the model collects for the verdict as samples pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Facts {
    /// Txgs committed after the first byte that wrote at least [`MIN_TXG_BYTES`].
    txgs: u64,
    txg_ndirty: u64,
    txg_nwritten: u64,
    txg_stime_ns: u64,
    /// The longest of those syncs, ns.
    txg_max_stime_ns: u64,
    /// Every byte the pool wrote in txgs committed after the first byte (physical).
    pool_written: u64,
    /// When the last txg commit was seen (its data includes the copy's last bytes only if it
    /// came after the copy phase ended).
    last_commit_ns: Option<u64>,
    /// First time dirty + writeback passed freerun: (t, bytes copied, dirty + writeback).
    throttle_zone: Option<(u64, u64, u64)>,
    /// Highest busiest-core load seen while copying, percent.
    max_core_pct: Option<f64>,
    /// The destination disks' busy time while copying: (Σ util % × tick ns, Σ tick ns).
    busy: (f64, f64),
    /// Their write rate while saturated: (Σ rate × tick ns, Σ tick ns).
    saturated: (f64, f64),
    /// This copy's data still to reach the destination when the final flush began (bytes; and
    /// whether it is the system's figure, other writers' data included).
    flush_backlog: Option<(u64, bool)>,
    /// What other writers put into the pool's recent txgs.
    others: OthersIntake,
}

impl Facts {
    /// A txg committed after the first byte; `own`: the copy's bytes in it.
    pub fn txg_committed(&mut self, t_ns: u64, row: &TxgRow, own: u64) {
        self.others.committed(row, own);
        self.last_commit_ns = Some(t_ns);
        self.pool_written = self.pool_written.saturating_add(row.nwritten);
        if row.nwritten >= MIN_TXG_BYTES && row.stime > 0 {
            self.txgs += 1;
            self.txg_ndirty = self.txg_ndirty.saturating_add(row.ndirty);
            self.txg_nwritten = self.txg_nwritten.saturating_add(row.nwritten);
            self.txg_stime_ns = self.txg_stime_ns.saturating_add(row.stime);
            self.txg_max_stime_ns = self.txg_max_stime_ns.max(row.stime);
        }
    }

    pub fn flush_started(&mut self, backlog: u64, system: bool) {
        self.flush_backlog.get_or_insert((backlog, system));
    }

    pub fn throttle_zone(&mut self, t_ns: u64, bytes: u64, dirty: u64) {
        self.throttle_zone.get_or_insert((t_ns, bytes, dirty));
    }

    /// One copying tick's destination busy (percent per disk) over `dt_ns`, and the disks'
    /// write rate then.
    pub fn disk_busy(&mut self, util_pct: f64, dt_ns: u64, dev_bps: Option<f64>) {
        self.busy.0 += util_pct * dt_ns as f64;
        self.busy.1 += dt_ns as f64;
        if let Some(b) = dev_bps.filter(|_| util_pct >= SATURATED_UTIL_PCT) {
            self.saturated.0 += b * dt_ns as f64;
            self.saturated.1 += dt_ns as f64;
        }
    }

    /// The destination disks' write rate while they were saturated, over at least a second.
    fn saturated_bps(&self) -> Option<f64> {
        (self.saturated.1 >= 1e9).then(|| self.saturated.0 / self.saturated.1)
    }

    /// The destination disks' mean busy while copying, percent.
    fn busy_pct(&self) -> Option<f64> {
        (self.busy.1 > 0.0).then(|| self.busy.0 / self.busy.1)
    }

    pub fn core_load(&mut self, pct: f64) {
        self.max_core_pct = Some(self.max_core_pct.map_or(pct, |m| m.max(pct)));
    }

    /// Other writers' intake into the pool lately, bytes/s (`None` before a txg of the copy
    /// committed).
    pub(crate) fn others_bps(&self) -> Option<f64> {
        self.others.bps()
    }

    /// The pool's rate in the bytes writers hand it (Σ ndirty / Σ stime of the copy's txgs),
    /// the pool's written bytes where the kstat has no dirty figure.
    pub(crate) fn pool_dirty_bps(&self) -> Option<f64> {
        if self.txg_ndirty == 0 {
            return self.pool_bps();
        }
        (self.txg_stime_ns > 0).then(|| self.txg_ndirty as f64 * 1e9 / self.txg_stime_ns as f64)
    }

    /// The pool's write rate while syncing: Σ written ÷ Σ sync time of the copy's txgs.
    pub(crate) fn pool_bps(&self) -> Option<f64> {
        (self.txg_stime_ns > 0).then(|| self.txg_nwritten as f64 * 1e9 / self.txg_stime_ns as f64)
    }
}

/// Copy-phase times the model knows (ns since start).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Span {
    pub first_byte: Option<u64>,
    /// End of the copy phase (last byte, flush, fatal), else the last sample.
    pub copy_end: u64,
    pub on_zfs: bool,
    /// The pool synced back to back while the copy ran (the model's sustained-rate phase).
    pub pool_saturated: bool,
}

/// Everything the verdict reads.
pub(crate) struct Input<'a> {
    pub budget: &'a Budget,
    pub facts: &'a Facts,
    pub stats: &'a Stats,
    pub env: &'a Environment,
    pub span: Span,
}

/// Whose time the budget is, in the verdict's words: the copier of a copy, the writers a
/// watch followed (their threads were sampled), or — a watch that followed none — only the
/// intake counter, with no thread states to speak of.
struct Who {
    /// Who ran or waited for a CPU: "the copier", "the writer 'rsync'", "the writers 'smbd',
    /// pid 4242".
    agent: String,
    /// Who waited for the disks: "the writer" in a copy, else as `agent`.
    writer: String,
    /// "the copy", "the watched writes".
    run: &'static str,
    /// What drops held: "the copy", "the intake".
    held: &'static str,
    /// Why there is no budget: "the copier's threads were not sampled", …
    unsampled: String,
}

impl Who {
    fn of(env: &Environment) -> Who {
        if env.reads_only {
            return Who {
                agent: "the reader".into(),
                writer: "the reader".into(),
                run: "the read",
                held: "the read",
                unsampled: "the reader's threads were not sampled".into(),
            };
        }
        if env.pipe.is_some() {
            return Who {
                agent: "copyscope".into(),
                writer: "copyscope".into(),
                run: "the pipe",
                held: "the pipe",
                unsampled: "copyscope's thread was not sampled".into(),
            };
        }
        let Some(w) = &env.watched else {
            return Who {
                agent: "the copier".into(),
                writer: "the writer".into(),
                run: "the copy",
                held: "the copy",
                unsampled: "the copier's threads were not sampled".into(),
            };
        };
        let names: Vec<String> = w
            .comms
            .iter()
            .map(quote)
            .chain(w.pids.iter().map(|p| format!("pid {p}")))
            .collect();
        if names.is_empty() && w.all {
            return Who {
                agent: "the writers found".into(),
                writer: "the writers found".into(),
                run: "the watched writes",
                held: "the intake",
                unsampled: "the writers' threads were not sampled".into(),
            };
        }
        if names.is_empty() {
            let intake = if w.intake.is_empty() {
                String::new()
            } else {
                format!(", {},", w.intake)
            };
            return Who {
                agent: "the writers".into(),
                writer: "the writers".into(),
                run: "the watched writes",
                held: "the intake",
                unsampled: format!(
                    "only the intake{intake} was measured: no writer was followed with --pid or --comm"
                ),
            };
        }
        let agent = match (names.as_slice(), w.comms.len()) {
            ([one], 1) => format!("the writer {one}"),
            ([one], _) => format!("the writer ({one})"),
            (all, _) => format!("the writers {}", all.join(", ")),
        };
        Who {
            unsampled: format!("the threads of {agent} could not be read"),
            writer: agent.clone(),
            agent,
            run: "the watched writes",
            held: "the writes",
        }
    }
}

/// The verdict of a watched pipeline: the stage that limited it over the run, or why none is
/// named.
pub(crate) fn of_pipeline(p: &super::pipeline::PipelineView, stats: &Stats) -> Verdict {
    let named = p.limiting_stage().is_some();
    Verdict {
        limit: if named { Limit::Stage } else { Limit::Unknown },
        rate_bps: named.then_some(stats.avg_bps),
        compressed_ratio: None,
        text: super::pipeline::verdict_text(p, stats.avg_bps),
    }
}

/// The verdict of a run.
pub(crate) fn judge(i: &Input) -> Verdict {
    if let Some(v) = flush_story(i) {
        return v;
    }
    let copy_secs = i.budget.copying_ns() / 1e9;
    if i.stats.bytes == 0 || copy_secs < MIN_COPY_SECS {
        return Verdict {
            limit: Limit::Unknown,
            rate_bps: None,
            compressed_ratio: None,
            text: format!(
                "Unknown: {} lasted {}, too short to name a limit.",
                Who::of(i.env).run,
                // A copy shorter than a tick has no tick in its budget: the copy phase's span
                // (the "copy" time every output prints) says how long; a watch's writers ran
                // for what the budget measured.
                fmt_secs(if i.env.watched.is_some() {
                    copy_secs
                } else {
                    i.span.copy_end as f64 / 1e9
                })
            ),
        };
    }
    let compressed = compression(i);
    let (limit, rate_bps, body) = if i.budget.measured() >= MEASURED_SHARE {
        from_budget(i)
    } else {
        from_drops(i)
    };
    let mut text = String::new();
    if let Some((_, sentence)) = &compressed {
        text.push_str(sentence);
        text.push(' ');
    }
    text.push_str(&body);
    Verdict {
        limit,
        rate_bps,
        compressed_ratio: compressed.map(|c| c.0),
        text,
    }
}

/// When the final flush was the larger part of the run (at least [`FLUSH_SHARE`], or the
/// copy phase too short to judge and the flush not): "Disk-bound: copied into RAM at A (X in
/// Y s), then the disk wrote the backlog (Z) at B for C s; the flush was N % of the run." B is
/// the backlog at the flush's start ÷ the flush's length.
fn flush_story(i: &Input) -> Option<Verdict> {
    let flush = i.stats.flush_secs?;
    let (backlog, system) = i.facts.flush_backlog?;
    let copy = i.stats.copy_secs;
    // The system's figure holds other writers' data too: at most this copy's bytes were ours.
    let backlog = if system {
        backlog.min(i.stats.bytes)
    } else {
        backlog
    };
    let share = flush / (copy + flush).max(f64::MIN_POSITIVE);
    let story = share >= FLUSH_SHARE || (copy < MIN_COPY_SECS && flush >= MIN_COPY_SECS);
    if !story || backlog == 0 || flush <= 0.0 || i.stats.bytes == 0 {
        return None;
    }
    let rate = backlog as f64 / flush;
    let (limit, what) = if i.span.on_zfs {
        (Limit::Pool, "the pool")
    } else {
        (Limit::Disk, "the disk")
    };
    let mut text = format!(
        "{}: copied into RAM at {} ({} in {}), then {what} wrote the backlog ({}) at {} for {}; the flush was {} of the run.",
        if i.span.on_zfs {
            "Pool-bound"
        } else {
            "Disk-bound"
        },
        fmt_rate(i.stats.avg_bps),
        fmt_bytes(i.stats.bytes),
        fmt_secs(copy),
        fmt_bytes(backlog),
        fmt_rate(rate),
        fmt_secs(flush),
        pct(share)
    );
    if !i.span.on_zfs
        && let Some((name, value)) = dirty_limit(i.env)
    {
        text.push_str(&format!(
            " More RAM or a higher {name} (now {value}) only moves more of the copy into the flush; it cannot raise {}.",
            fmt_rate(rate)
        ));
    }
    Some(Verdict {
        limit,
        rate_bps: Some(rate),
        compressed_ratio: None,
        text,
    })
}

fn pct(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// The verdict from where the writer's time went.
#[expect(
    clippy::too_many_lines,
    reason = "the verdict's rules in precedence order, one after another"
)]
fn from_budget(i: &Input) -> (Limit, Option<f64>, String) {
    let b = i.budget;
    let who = Who::of(i.env);
    let (agent, writer) = (&who.agent, &who.writer);
    let measured_ns = b.copying_ns() - b.ns(Slice::Unknown);
    // The disk's two faces add up: paced by the page cache, or waiting for the device's queue.
    let waits = [
        (Limit::RateLimit, vec![Slice::RateLimit]),
        (Limit::Pool, vec![Slice::TxgWait]),
        (Limit::Disk, vec![Slice::DirtyThrottle, Slice::DiskWait]),
        (Limit::Source, vec![Slice::SourceRead]),
        (Limit::PipeReader, vec![Slice::PipeReader]),
        (Limit::Cpu, vec![Slice::CpuWait]),
        (Limit::SyncWrites, vec![Slice::SyncWrites]),
        (Limit::Journal, vec![Slice::Journal]),
    ];
    let best = waits
        .iter()
        .map(|(l, slices)| {
            let ns: f64 = slices.iter().map(|s| b.ns(*s)).sum();
            (*l, slices.clone(), ns / measured_ns)
        })
        .max_by(|a, c| a.2.total_cmp(&c.2))
        .filter(|w| w.2 >= NAMED_SHARE);
    let avg = i.stats.avg_bps;
    let Some((limit, slices, _)) = best else {
        let writing = b.ns(Slice::Writing) / measured_ns;
        if writing >= 0.5 {
            return (
                Limit::Copier,
                Some(avg),
                format!(
                    "Not held by the kernel: {agent} ran on a CPU {} of the time and no wait held it {} of the time; {} is the pace of {} itself.",
                    pct(b.share(Slice::Writing)),
                    pct(NAMED_SHARE),
                    fmt_rate(avg),
                    who.run
                ),
            );
        }
        return (
            Limit::Unknown,
            None,
            format!(
                "Unknown: no single wait held {writer} {} of the time ({}).",
                pct(NAMED_SHARE),
                b.legend()
            ),
        );
    };
    let held = pct(slices.iter().map(|s| b.share(*s)).sum());
    if let Some(v) = pool_despite(i, limit, &who) {
        return v;
    }
    match limit {
        Limit::RateLimit => rate_limit(i, &held),
        Limit::Pool => {
            let own = b.share(Slice::SyncWrites);
            let also = if own >= OWN_SYNC_TOLD_SHARE {
                format!(
                    " and for syncs its own calls asked for (fsync, syncfs, linkat) {}",
                    pct(own)
                )
            } else {
                String::new()
            };
            pool(
                i,
                &format!("{writer} waited for them {held} of the time{also}"),
            )
        }
        Limit::Disk => {
            let how = match (b.share(Slice::DirtyThrottle), b.share(Slice::DiskWait)) {
                (d, 0.0) => format!("{writer} was held by dirty throttling {}", pct(d)),
                (0.0, w) => format!("{writer} waited for the disk {}", pct(w)),
                (d, w) => format!(
                    "{writer} was held by dirty throttling {} and waited for the disk {}",
                    pct(d),
                    pct(w)
                ),
            };
            disk(i, &format!("{how} of the time"))
        }
        Limit::Source => (
            limit,
            Some(avg),
            format!(
                "Limited by the source, {}: reads waited {held} of the time.",
                fmt_rate(avg)
            ),
        ),
        Limit::PipeReader => (
            limit,
            Some(avg),
            format!(
                "Limited by the reader of the pipe, {}: {writer} waited for room in the pipe {held} of the time.",
                fmt_rate(avg)
            ),
        ),
        Limit::Cpu => (
            limit,
            Some(avg),
            format!(
                "CPU: {agent} waited for a core {held} of the time{}; {} averaged {}.",
                i.facts
                    .max_core_pct
                    .map(|c| format!(" (busiest core {c:.0} % busy)"))
                    .unwrap_or_default(),
                who.run,
                fmt_rate(avg)
            ),
        ),
        Limit::SyncWrites => sync_writes(i, &who, &held),
        _ => (
            Limit::Journal,
            Some(avg),
            format!(
                "Limited by the ext4 journal, {}: {writer} waited for jbd2 {held} of the time.",
                fmt_rate(avg)
            ),
        ),
    }
}

/// Synchronous writes: the intent log's commits and fsyncs, or whole txg syncs the writer's
/// own calls asked for (`linkat` of an `O_TMPFILE`, `syncfs`). When those are most of it, the
/// pool's rate did not hold the copy — its own calls did — and the pool's rate is told beside.
fn sync_writes(i: &Input, who: &Who, held: &str) -> (Limit, Option<f64>, String) {
    let b = i.budget;
    let avg = i.stats.avg_bps;
    let sync_ns = b.ns(Slice::SyncWrites);
    let own_ns = b.own_txg_sync_ns();
    if sync_ns <= 0.0 || own_ns < 0.5 * sync_ns {
        return (
            Limit::SyncWrites,
            Some(avg),
            format!(
                "Limited by synchronous writes, {}: {} waited in zil_commit or fsync {held} of the time.",
                fmt_rate(avg),
                who.writer
            ),
        );
    }
    let f = i.facts;
    let each = if f.txgs > 0 {
        format!(
            ", each ~{} for a txg of ~{}: a sync's fixed cost paid per call, not the pool falling behind",
            fmt_secs(f.txg_stime_ns as f64 / f.txgs as f64 / 1e9),
            fmt_bytes(f.txg_ndirty / f.txgs)
        )
    } else {
        String::new()
    };
    (
        Limit::SyncWrites,
        Some(avg),
        format!(
            "Limited by syncs {writer} asked for, {}: calls that wait for a whole txg sync (linkat of an unnamed file, syncfs) held {writer} {} of the time{each}.",
            fmt_rate(avg),
            pct(own_ns / b.total_ns()),
            writer = who.writer
        ),
    )
}

/// A copy held by its CPU (or its own pace, or the source) that still ran at the pool's write
/// rate or faster, onto a pool that synced back to back, was limited by the pool: a faster
/// CPU would only have filled the pool's dirty data sooner. The other wait is told beside it.
fn pool_despite(i: &Input, limit: Limit, who: &Who) -> Option<(Limit, Option<f64>, String)> {
    let other = match limit {
        Limit::Cpu => Slice::CpuWait,
        Limit::Source => Slice::SourceRead,
        Limit::Copier => Slice::Writing,
        _ => return None,
    };
    let rate = i.facts.pool_bps()?;
    if !i.span.on_zfs || !i.span.pool_saturated || i.stats.avg_bps < AT_POOL_SHARE * rate {
        return None;
    }
    let b = i.budget;
    let what = match other {
        Slice::CpuWait => "waited for a core",
        Slice::SourceRead => "waited for reads",
        _ => "ran on a CPU",
    };
    Some(pool(
        i,
        &format!(
            "{} waited for them {} of the time; it also {what} {} of the time, yet {} averaged {}, as fast as the pool writes",
            who.writer,
            pct(b.share(Slice::TxgWait)),
            pct(b.share(other)),
            who.run,
            fmt_rate(i.stats.avg_bps)
        ),
    ))
}

/// Other writers' intake the verdict names, as a share of the pool's rate: under it the pace
/// was the pool's rate in all but rounding.
const OTHERS_WORTH_SAYING: f64 = 0.1;

/// Other writers' share of the pool the pace left them, when worth saying
/// ([`OTHERS_WORTH_SAYING`]): `(the pool's rate, theirs)`.
fn shared_pool(f: &Facts) -> Option<(f64, f64)> {
    let pool = f.pool_dirty_bps()?;
    let others = f.others_bps()?;
    (others >= pool * OTHERS_WORTH_SAYING).then_some((pool, others))
}

/// "Limited by --bwlimit 20 MB/s: the copy waited for its own rate limit 92 % of the time;
/// the destination disk was 3 % busy." The wait is the engine's own count of its pacing
/// sleeps; the disk's figure says whether the disk could have gone faster.
fn rate_limit(i: &Input, held: &str) -> (Limit, Option<f64>, String) {
    let avg = i.stats.avg_bps;
    let rate = i.env.rate_limit_bps.map(|b| b as f64);
    let head = match i.env.rate_limit_bps {
        Some(r) if i.env.rate_limit_is_demo_pace => format!(
            "Limited by the demo's pace, {} (its own rate limit, as --bwlimit sets)",
            fmt_rate(r as f64)
        ),
        // As the user likely typed it: `--bwlimit 10M` is 10 MiB/s, which is 10.5 MB/s.
        Some(r) if r % 1024 == 0 => format!(
            "Limited by --bwlimit {} ({})",
            fmt_rate_with(r as f64, true),
            fmt_rate(r as f64)
        ),
        Some(r) => format!("Limited by --bwlimit {}", fmt_rate(r as f64)),
        None if i.env.pace_auto => match shared_pool(i.facts) {
            Some((pool, others)) => format!(
                "Paced by --pace auto to the pool's rate less what other writers put in, {} \
                 (the pool took {}, others {})",
                fmt_rate(avg),
                fmt_rate(pool),
                fmt_rate(others)
            ),
            None => format!(
                "Paced by --pace auto to the destination's sustained rate, {}",
                fmt_rate(avg)
            ),
        },
        None => format!("Limited by its own rate limit, {}", fmt_rate(avg)),
    };
    let what = if i.env.pace_auto && i.env.rate_limit_bps.is_none() {
        "its own pace"
    } else {
        "its own rate limit"
    };
    let disk = match i.facts.busy_pct() {
        Some(b) => format!("; the destination disk was {b:.0} % busy"),
        None => String::new(),
    };
    (
        Limit::RateLimit,
        Some(rate.unwrap_or(avg)),
        format!(
            "{head}: the copy waited for {what} {held} of the time{disk}; it averaged {}.",
            fmt_rate(avg)
        ),
    )
}

/// Without thread states: the cause that held the copy in drops the longest, when that is a
/// real part of the copy. Stall time, not time lost: measured against the sustained rate a
/// stall the disks' backlog covers costs nothing, yet it is still what the writer waited on.
fn from_drops(i: &Input) -> (Limit, Option<f64>, String) {
    let copy_secs = i.budget.copying_ns() / 1e9;
    let who = Who::of(i.env);
    let top = i.stats.stalled_secs_by_cause.first().copied();
    let Some((cause, stalled)) = top.filter(|(_, s)| *s >= LOST_SHARE * copy_secs) else {
        return (
            Limit::Unknown,
            None,
            format!(
                "Unknown: {}, and drops held {} {} of {}.",
                who.unsampled,
                who.held,
                fmt_secs(
                    i.stats
                        .stalled_secs_by_cause
                        .iter()
                        .map(|c| c.1)
                        .sum::<f64>()
                        + 0.0
                ),
                fmt_secs(copy_secs)
            ),
        );
    };
    let because = format!(
        "drops while {cause} held {} took {} of {} ({})",
        who.held,
        fmt_secs(stalled),
        fmt_secs(copy_secs),
        who.unsampled
    );
    let avg = i.stats.avg_bps;
    match cause {
        "txg sync" | "zfs throttle" => pool(i, &because),
        "dirty throttle" | "writeback" | "disk busy" | "another writer" => disk(i, &because),
        "source stall" => (
            Limit::Source,
            Some(avg),
            format!("Limited by the source, {}: {because}.", fmt_rate(avg)),
        ),
        "pipe reader" => (
            Limit::PipeReader,
            Some(avg),
            format!(
                "Limited by the reader of the pipe, {}: {because}.",
                fmt_rate(avg)
            ),
        ),
        "cpu" => (
            Limit::Cpu,
            Some(avg),
            format!("CPU, {}: {because}.", fmt_rate(avg)),
        ),
        "sync writes" => (
            Limit::SyncWrites,
            Some(avg),
            format!(
                "Limited by synchronous writes, {}: {because}.",
                fmt_rate(avg)
            ),
        ),
        "journal" => (
            Limit::Journal,
            Some(avg),
            format!("Limited by the ext4 journal, {}: {because}.", fmt_rate(avg)),
        ),
        _ => (
            Limit::Unknown,
            None,
            format!("Unknown: {because}, and no signal explains them."),
        ),
    }
}

/// "Limited by the pool's write rate, 40 MB/s: txgs of ~82 MB (20 % of zfs_dirty_data_max =
/// 410 MB) sync in ~2.1 s, and <held>." plus what RAM can and cannot change, when the txgs were
/// sized by the dirty-data limit.
fn pool(i: &Input, held: &str) -> (Limit, Option<f64>, String) {
    let f = i.facts;
    let rate = f.pool_bps().unwrap_or(i.stats.avg_bps);
    let mut s = format!("Limited by the pool's write rate, {}", fmt_rate(rate));
    if f.txgs == 0 {
        s.push_str(&format!(": {held}."));
        return (Limit::Pool, Some(rate), s);
    }
    let ndirty = f.txg_ndirty / f.txgs;
    let stime = f.txg_stime_ns as f64 / f.txgs as f64 / 1e9;
    let max = i.env.zfs_dirty_data_max.filter(|m| *m > 0);
    let of_max = max.map(|m| {
        let ram = i
            .env
            .mem_total
            .filter(|r| *r > 0)
            .map(|r| format!(", {:.0} % of RAM", m as f64 * 100.0 / r as f64))
            .unwrap_or_default();
        format!(
            " ({:.0} % of zfs_dirty_data_max = {}{ram})",
            ndirty as f64 * 100.0 / m as f64,
            fmt_bytes(m)
        )
    });
    s.push_str(&format!(
        ": txgs of ~{}{} sync in ~{}, and {held}.",
        fmt_bytes(ndirty),
        of_max.unwrap_or_default(),
        fmt_secs(stime)
    ));
    // The txgs closed at the dirty-data threshold (not at zfs_txg_timeout): the RAM-sized limit
    // sets when the first drop comes, the pool sets the rate.
    let sized_by_max = match (max, i.env.zfs_sync_percent) {
        (Some(m), Some(p)) => ndirty as f64 >= 0.8 * m as f64 * p as f64 / 100.0,
        _ => false,
    };
    let longest = f.txg_max_stime_ns as f64 / 1e9;
    if let Some(advice) = pool_advice(i, rate, stime, longest, sized_by_max) {
        s.push(' ');
        s.push_str(&advice);
    }
    (Limit::Pool, Some(rate), s)
}

/// What the pool's figures say to change, with the numbers it rests on: syncs long enough to
/// stall writers (≥ [`LONG_SYNC_SECS`]) → smaller txgs (zfs_dirty_data_max when the txgs were
/// sized by it, else zfs_txg_timeout) with the expected sync length; otherwise, for txgs sized
/// by the dirty limit, what raising it does — toward zfs_dirty_data_max_percent of RAM when it
/// was set lower by hand, else "more RAM" — and that it cannot raise the pool's rate.
fn pool_advice(
    i: &Input,
    rate: f64,
    stime: f64,
    longest: f64,
    sized_by_max: bool,
) -> Option<String> {
    let env = i.env;
    let max = env.zfs_dirty_data_max.filter(|m| *m > 0)?;
    let tunable = |n: &str| {
        env.tunables
            .iter()
            .find(|(k, _)| k == n)
            .and_then(|(_, v)| v.trim().parse::<u64>().ok())
    };
    if longest >= LONG_SYNC_SECS && stime > 0.0 {
        let head = format!(
            "Txg syncs of up to {} hold the writers as long (a network client may time out)",
            fmt_secs(longest)
        );
        if sized_by_max {
            let smaller = (max as f64 * TARGET_SYNC_SECS / longest) as u64;
            return Some(format!(
                "{head}: a smaller zfs_dirty_data_max (now {}) shortens them — at {} about {} would make them ~{}.",
                fmt_bytes(max),
                fmt_rate(rate),
                fmt_bytes(smaller),
                fmt_secs(TARGET_SYNC_SECS)
            ));
        }
        let timeout = tunable("zfs_txg_timeout")?;
        let shorter = ((timeout as f64 * TARGET_SYNC_SECS / longest).floor() as u64).max(1);
        return Some(format!(
            "{head}: the txgs closed at zfs_txg_timeout ({timeout} s), so a shorter one shortens them — {shorter} s would make them ~{}.",
            fmt_secs(longest * shorter as f64 / timeout as f64)
        ));
    }
    if !sized_by_max {
        return None;
    }
    let by_pct = match (tunable("zfs_dirty_data_max_percent"), env.mem_total) {
        (Some(p), Some(ram)) if ram > 0 => {
            let d = ram as f64 * p as f64 / 100.0;
            let d = tunable("zfs_dirty_data_max_max").map_or(d, |mm| d.min(mm as f64));
            Some((p, d as u64))
        }
        _ => None,
    };
    match by_pct {
        // Set by hand below what RAM gives it: more RAM changes nothing.
        Some((p, default)) if (max as f64) < 0.9 * default as f64 => Some(format!(
            "zfs_dirty_data_max was set to {} by hand, below its default of {} ({p} % of RAM, zfs_dirty_data_max_percent): raising it toward {} delays the first drop; it cannot raise {}.",
            fmt_bytes(max),
            fmt_bytes(default),
            fmt_bytes(default),
            fmt_rate(rate)
        )),
        _ => Some(format!(
            "More RAM delays the first drop (it raises zfs_dirty_data_max, in /sys/module/zfs/parameters/); it cannot raise {}.",
            fmt_rate(rate)
        )),
    }
}

/// "Disk-bound at 39 MB/s after the page cache filled (1.4 GB in 3.0 s): <held>."
fn disk(i: &Input, held: &str) -> (Limit, Option<f64>, String) {
    let avg = i.stats.avg_bps;
    let Some((t, bytes, dirty)) = i.facts.throttle_zone else {
        // The average holds the first burst into the page cache: the disks' own rate while
        // saturated is the limit, when measured.
        let rate = i
            .facts
            .saturated_bps()
            .filter(|r| avg >= INFLATED_AVG * r)
            .unwrap_or(avg);
        let mut s = if rate < avg {
            format!(
                "Disk-bound at {} (the disk's rate while busy; the average, {}, holds the first seconds into RAM): {held}.",
                fmt_rate(rate),
                fmt_rate(avg)
            )
        } else {
            format!("Disk-bound at {}: {held}.", fmt_rate(rate))
        };
        if let Some(nearly) = nearly_full(i) {
            s = format!("{nearly} {s}");
        }
        return (Limit::Disk, Some(rate), s);
    };
    let since = i.span.copy_end.saturating_sub(t) as f64 / 1e9;
    let after = i.stats.bytes.saturating_sub(bytes);
    let rate = if since >= 1.0 {
        after as f64 / since
    } else {
        avg
    };
    let fill_secs = t.saturating_sub(i.span.first_byte.unwrap_or(0)) as f64 / 1e9;
    let mut s = format!(
        "Disk-bound at {} after the page cache filled ({} in {}; {} dirty): {held}.",
        fmt_rate(rate),
        fmt_bytes(bytes),
        fmt_secs(fill_secs),
        fmt_bytes(dirty)
    );
    if let Some((name, value)) = dirty_limit(i.env) {
        s.push_str(&format!(
            " More RAM or a higher {name} (now {value}, /proc/sys/vm/{}) only delays the drop; it cannot raise {}.",
            name.trim_start_matches("vm."),
            fmt_rate(rate)
        ));
    }
    (Limit::Disk, Some(rate), s)
}

/// "The filesystem is nearly full: …" when that held the writer longest in its drops.
fn nearly_full(i: &Input) -> Option<String> {
    let (cause, secs) = i.stats.stalled_secs_by_cause.first().copied()?;
    (cause == "nearly full").then(|| {
        format!(
            "The filesystem is nearly full: ext4 stopped delaying allocation, so writes waited for the disk ({} in drops).",
            fmt_secs(secs)
        )
    })
}

/// The page-cache limit in force: vm.dirty_bytes when set, else vm.dirty_ratio.
fn dirty_limit(env: &Environment) -> Option<(String, String)> {
    let get = |n: &str| {
        env.tunables
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.trim().to_string())
    };
    match get("vm.dirty_bytes") {
        Some(v) if v != "0" => Some(("vm.dirty_bytes".into(), v)),
        _ => get("vm.dirty_ratio").map(|v| ("vm.dirty_ratio".into(), v)),
    }
}

/// On ZFS, the copy's logical bytes against what the pool wrote: zeros and other compressible
/// data never reach the disks, so the run measured the CPU.
fn compression(i: &Input) -> Option<(f64, String)> {
    // Only once a txg committed after the last byte: before that the pool has not written
    // all of the copy yet and any data would look compressed.
    let covered = i.facts.last_commit_ns.is_some_and(|t| t >= i.span.copy_end);
    if !i.span.on_zfs || i.stats.bytes < MIN_COMPRESS_BYTES || !covered {
        return None;
    }
    let physical = i.facts.pool_written;
    let ratio = i.stats.bytes as f64 / physical.max(1) as f64;
    if ratio < COMPRESSED_RATIO {
        return None;
    }
    // No compressor reaches such ratios on real data: blocks of zeros, which ZFS with any
    // compression stores as holes. `zfs get compressratio` counts no hole, so it says 1.00x.
    let text = if ratio >= HOLES_RATIO {
        format!(
            "The pool wrote {} for the {} copied: the data was zeros, which ZFS with compression on stores as holes, not as blocks (so `zfs get compressratio` stays near 1.00x); this measures the CPU, not the disks.",
            fmt_bytes(physical),
            fmt_bytes(i.stats.bytes)
        )
    } else {
        format!(
            "The data compressed {:.0}:1 ({} copied, {} written by the pool): this measures the CPU, not the disks.",
            ratio,
            fmt_bytes(i.stats.bytes),
            fmt_bytes(physical)
        )
    };
    Some((ratio, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;

    /// `pool_advice` for a pool at 40 MB/s whose syncs took `longest` s, zfs_dirty_data_max
    /// `max`, on a machine with `ram` (zfs_dirty_data_max_percent 10, zfs_txg_timeout 5).
    fn advice(longest: f64, max: u64, ram: u64, sized_by_max: bool) -> Option<String> {
        let env = Environment {
            zfs_dirty_data_max: Some(max),
            mem_total: Some(ram),
            tunables: vec![
                ("zfs_dirty_data_max_percent".into(), "10".into()),
                ("zfs_txg_timeout".into(), "5".into()),
            ],
            ..Default::default()
        };
        let stats = Stats::of_engine(40e6, None);
        let i = Input {
            budget: &Budget::default(),
            facts: &Facts::default(),
            stats: &stats,
            env: &env,
            span: Span::default(),
        };
        pool_advice(&i, 40e6, longest * 0.8, longest, sized_by_max)
    }

    #[test]
    fn long_syncs_get_smaller_txgs_never_more_ram() {
        // 22 s syncs of 4 GB-sized txgs (the Samba timeout): a smaller limit, with its length.
        let a = advice(22.0, 4 * GB, 40 * GB, true).unwrap();
        assert_eq!(
            a,
            "Txg syncs of up to 22 s hold the writers as long (a network client may time out): a \
             smaller zfs_dirty_data_max (now 4.00 GB) shortens them — at 40.0 MB/s about 364 MB \
             would make them ~2.0 s."
        );
        assert!(!a.contains("RAM"));
        // Txgs closed by the timeout: a shorter timeout, with the sync length it gives.
        let a = advice(8.0, 4 * GB, 40 * GB, false).unwrap();
        assert!(
            a.ends_with("closed at zfs_txg_timeout (5 s), so a shorter one shortens them — 1 s would make them ~1.6 s."),
            "{a}"
        );
    }

    #[test]
    fn a_hand_set_limit_is_named_and_more_ram_only_for_the_default() {
        // 1 % of 40 GB set by hand where the default is 10 %.
        let a = advice(2.0, 400_000_000, 40 * GB, true).unwrap();
        assert!(
            a.starts_with("zfs_dirty_data_max was set to 400 MB by hand, below its default of 4.00 GB (10 % of RAM"),
            "{a}"
        );
        assert!(a.contains(
            "raising it toward 4.00 GB delays the first drop; it cannot raise 40.0 MB/s."
        ));
        assert!(!a.contains("More RAM"), "{a}");
        // At its default: more RAM is what raises it.
        let a = advice(2.0, 4 * GB, 40 * GB, true).unwrap();
        assert!(a.starts_with("More RAM delays the first drop"), "{a}");
        // Short syncs of txgs not sized by the limit: nothing to change.
        assert_eq!(advice(2.0, 4 * GB, 40 * GB, false), None);
    }
}
