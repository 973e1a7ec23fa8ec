//! `copyscope whatif`: the recording's run and the one predicted under other tunables
//! (`model::whatif`), side by side — the summary (drops, longest stall, time lost, the end,
//! the advice that follows, what was measured and what the simulation does not know), the
//! two charts on one scale (`export::compare`'s picture, the text chart), written as
//! `export` writes its outputs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::model::ModelConfig;
use crate::model::whatif::measure::{Dest, IntakeFrom, PoolRates};
use crate::model::whatif::{
    Change, Figures, Limits, Measured, Observer, PaceComparison, Prediction, Scenario, predict,
};
use crate::present::format::{fmt_bytes, fmt_pct, fmt_rate, fmt_secs};
use crate::present::quote::quote;
use crate::report::export::compare::{CompareLook, Run, render_compare_svg};
use crate::report::export::text::{TextScale, render_text_scaled, shared_text_scale};
use crate::report::export::{ChartData, ExportTargets, outline, png};
use crate::report::recording::{Header, Replayed};

/// A recording and what it measured.
pub struct Recorded {
    pub header: Header,
    pub replayed: Replayed,
    pub measured: Measured,
}

/// Reads a recording through the model and measures it.
pub fn load(path: &Path, cfg: ModelConfig) -> anyhow::Result<Recorded> {
    let mut observer = Observer::default();
    let replayed = Replayed::load_observed(path, cfg, &mut |s| observer.sample(s))
        .with_context(|| format!("reading recording {}", quote(path)))?;
    let measured = Measured::new(
        &replayed.model,
        &observer,
        replayed.header.interval_ms.saturating_mul(1_000_000),
    )
    .with_context(|| format!("{}: cannot predict", quote(path)))?;
    Ok(Recorded {
        header: replayed.header.clone(),
        replayed,
        measured,
    })
}

/// The recorded run against the predicted one.
pub struct Outcome {
    pub name: String,
    pub scenario: Scenario,
    pub measured: Measured,
    pub recorded: ChartData,
    pub predicted: ChartData,
    pub real: Figures,
    pub pred: Figures,
    pub limits: Limits,
    /// The recorded value of each changed tunable, by name.
    pub was: Vec<(&'static str, Option<String>)>,
    /// A real run made with the changes (`--against`), to hold the prediction to.
    pub twin: Option<Twin>,
}

/// A real run of the predicted copy under the changed tunables.
pub struct Twin {
    pub name: String,
    pub data: ChartData,
    pub figures: Figures,
}

impl Twin {
    /// `rec` as the run the prediction is held to; `name` is how the summary calls it.
    pub fn of(rec: &Recorded, name: &str) -> Twin {
        Twin {
            name: name.to_string(),
            data: ChartData::from_replayed(&rec.replayed),
            figures: Figures::of(&rec.replayed.model),
        }
    }
}

/// Predicts `scenario` on `rec` and gathers both runs' figures (and `twin`'s, the real run
/// made with the changes, when there is one).
pub fn outcome(
    rec: &Recorded,
    scenario: &Scenario,
    name: &str,
    twin: Option<Twin>,
) -> anyhow::Result<Outcome> {
    let Prediction { model, env, limits } = predict(&rec.measured, scenario)?;
    let recorded = ChartData::from_replayed(&rec.replayed);
    let header = Header {
        environment: env,
        ..rec.header.clone()
    };
    let predicted = ChartData::from_model(&model, &header, None);
    let was = scenario
        .settings
        .changes()
        .into_iter()
        .map(|(k, _)| (k, recorded_value(&rec.measured, k)))
        .collect();
    Ok(Outcome {
        name: name.to_string(),
        scenario: scenario.clone(),
        measured: rec.measured.clone(),
        real: Figures::of(&rec.replayed.model),
        pred: Figures::of(&model),
        recorded,
        predicted,
        limits,
        was,
        twin,
    })
}

/// What the recording held for tunable `k`, formatted as [`change_text`] does.
fn recorded_value(m: &Measured, k: &str) -> Option<String> {
    if k == "--pace" {
        return Some(if m.env.pace_auto { "auto" } else { "off" }.into());
    }
    let get = |k: &str| -> Option<u64> {
        m.env
            .tunables
            .iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.trim().parse().ok())
    };
    let n = get(k)?;
    let ratio = |r: &str| {
        get(r).map_or("the ratio".to_string(), |p| {
            format!("{r} {}", fmt_pct(p as f64))
        })
    };
    Some(match k {
        "vm.dirty_bytes" if n == 0 => format!("0 B, {}", ratio("vm.dirty_ratio")),
        "vm.dirty_background_bytes" if n == 0 => {
            format!("0 B, {}", ratio("vm.dirty_background_ratio"))
        }
        "zfs_dirty_data_max" | "vm.dirty_bytes" | "vm.dirty_background_bytes" => fmt_bytes(n),
        "zfs_txg_timeout" => fmt_secs(n as f64),
        "zfs_delay_scale" => format!("{n} ns"),
        _ => fmt_pct(n as f64),
    })
}

/// `zfs_dirty_data_max=67.1 MB`.
fn change_text(k: &str, c: Change) -> String {
    match c {
        Change::Bytes(b) => format!("{k}={}", fmt_bytes(b)),
        Change::Secs(s) => format!("{k}={}", fmt_secs(s)),
        Change::Percent(p) => format!("{k}={}", fmt_pct(f64::from(p))),
        Change::Nanos(n) => format!("{k}={n} ns"),
        Change::PaceAuto => "--pace auto".to_string(),
        Change::PaceOff => "--pace off".to_string(),
    }
}

impl Outcome {
    /// "zfs_dirty_data_max=67.1 MB, zfs_txg_timeout=2.0 s"; "the recorded tunables" with none.
    pub fn changes_text(&self) -> String {
        let c: Vec<String> = self
            .scenario
            .settings
            .changes()
            .into_iter()
            .map(|(k, c)| change_text(k, c))
            .collect();
        if c.is_empty() {
            "the recorded tunables".to_string()
        } else {
            c.join(", ")
        }
    }
}

/// "9", or "9 (8 by the pool, 1 cpu)" when not every drop is one the simulation models. A
/// predicted drop nothing at the destination caused is the recorded intake's own dip.
fn drops_cell(f: &Figures, dest: &str, predicted: bool) -> String {
    if f.other_drops.is_empty() {
        return f.drops.to_string();
    }
    let mut parts = vec![format!("{} {dest}", f.dest_drops)];
    parts.extend(f.other_drops.iter().map(|(l, n)| match *l {
        "unknown" if predicted => format!("{n} by the recorded intake"),
        l => format!("{n} {l}"),
    }));
    format!("{} ({})", f.drops, parts.join(", "))
}

/// "3 stalls of up to 12 s", "1 stall of 2.0 s", "no stall".
fn stalls_text(n: usize, longest_s: f64) -> String {
    match n {
        0 => "no stall".to_string(),
        1 => format!("1 stall of {}", fmt_secs(longest_s)),
        n => format!("{n} stalls of up to {}", fmt_secs(longest_s)),
    }
}

/// The same after "instead of": "9 of up to 11 s", "1 of 2.0 s", "none".
fn stalls_again(n: usize, longest_s: f64) -> String {
    match n {
        0 => "none".to_string(),
        1 => format!("1 of {}", fmt_secs(longest_s)),
        n => format!("{n} of up to {}", fmt_secs(longest_s)),
    }
}

/// "ends at about the same time", "ends 4.1 s earlier (−9 %)", "ends 12 s later (+26 %)".
fn end_text(real_s: f64, pred_s: f64) -> String {
    let d = pred_s - real_s;
    if d.abs() <= (0.03 * real_s).max(1.0) {
        return "ends at about the same time".to_string();
    }
    let pct = d.abs() / real_s.max(1e-9) * 100.0;
    let (word, run) = if d < 0.0 {
        ("earlier", "shorter")
    } else {
        ("later", "longer")
    };
    format!("ends {} {word} ({} {run})", fmt_secs(d.abs()), fmt_pct(pct))
}

impl Outcome {
    /// The destination's word in the table: "by the pool" or "by the cache".
    fn dest_word(&self) -> &'static str {
        match self.measured.dest {
            Dest::Pool(_) => "by the pool",
            Dest::Disk(_) => "by the cache",
        }
    }

    /// The one line of advice: what changes, from the two runs' figures.
    pub fn advice(&self) -> String {
        let (r, p) = (&self.real, &self.pred);
        let same = r.dest_drops == p.dest_drops
            && (r.longest_dest_stall_s - p.longest_dest_stall_s).abs()
                <= 0.1 * r.longest_dest_stall_s.max(1.0);
        if let Some(t) = &self.twin {
            let f = &t.figures;
            let end = end_text(f.end_s, p.end_s);
            let end = if end.contains("same time") {
                format!("{end} as the real run")
            } else {
                format!("{end} than the real run")
            };
            return format!(
                "With {}, for {}'s copy: {} against its real {}; {end}.",
                self.changes_text(),
                t.name,
                stalls_text(p.dest_drops, p.longest_dest_stall_s),
                stalls_again(f.dest_drops, f.longest_dest_stall_s),
            );
        }
        if same {
            return format!(
                "With {}: {}, as recorded; {}.",
                self.changes_text(),
                stalls_text(p.dest_drops, p.longest_dest_stall_s),
                end_text(r.end_s, p.end_s)
            );
        }
        format!(
            "With {}: {} instead of {}; {}.",
            self.changes_text(),
            stalls_text(p.dest_drops, p.longest_dest_stall_s),
            stalls_again(r.dest_drops, r.longest_dest_stall_s),
            end_text(r.end_s, p.end_s)
        )
    }

    /// The summary: the table of both runs, the advice, what was measured, what the
    /// simulation ran with and what it does not know.
    pub fn summary(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "copyscope whatif  {}", self.name);
        let _ = writeln!(o, "with {}{}", self.changes_text(), self.was_text());
        o.push('\n');
        self.table(&mut o);
        o.push('\n');
        let _ = writeln!(o, "{}", self.advice());
        for n in self.notes() {
            let _ = writeln!(o, "{n}");
        }
        o.push('\n');
        let _ = writeln!(o, "measured from the recording:");
        for line in self.measured_lines() {
            let _ = writeln!(o, "  {line}");
        }
        let _ = writeln!(o, "simulated: {}", self.limits_text());
        let _ = writeln!(o, "not known to the simulation: {}", self.unknowns());
        o
    }

    /// " (recorded: 515 MB)" for the changed tunables the recording holds.
    fn was_text(&self) -> String {
        let was: Vec<String> = self
            .was
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
            .collect();
        if was.is_empty() {
            String::new()
        } else {
            format!(" (recorded: {})", was.join(", "))
        }
    }

    fn table(&self, o: &mut String) {
        let dest = self.dest_word();
        let mut cols: Vec<(String, &Figures, bool)> = vec![
            ("recorded".into(), &self.real, false),
            ("predicted".into(), &self.pred, true),
        ];
        if let Some(t) = &self.twin {
            cols.push((format!("real ({})", t.name), &t.figures, false));
        }
        let mixed =
            cols.iter().any(|(_, f, _)| f.durable) && cols.iter().any(|(_, f, _)| !f.durable);
        let end = match (mixed, cols.iter().any(|(_, f, _)| f.durable)) {
            (true, _) => "ends at",
            (false, true) => "on disk at",
            (false, false) => "last byte at",
        };
        let end_cell = |f: &Figures| match (mixed, f.durable) {
            (true, true) => format!("{} (on disk)", fmt_secs(f.end_s)),
            (true, false) => format!("{} (last byte)", fmt_secs(f.end_s)),
            _ => fmt_secs(f.end_s),
        };
        let stall = |f: &Figures| {
            if f.drops == 0 {
                "–".to_string()
            } else {
                fmt_secs(f.longest_stall_s)
            }
        };
        let cells: Vec<[String; 5]> = cols
            .iter()
            .map(|(head, f, predicted)| {
                [
                    head.clone(),
                    drops_cell(f, dest, *predicted),
                    stall(f),
                    fmt_secs(f.lost_s),
                    end_cell(f),
                ]
            })
            .collect();
        let names = ["", "drops", "longest stall", "time lost", end];
        for (row, name) in names.iter().enumerate() {
            let _ = write!(o, "{name:<15}");
            for (c, col) in cells.iter().enumerate() {
                let w = col.iter().map(|x| x.chars().count()).max().unwrap_or(0);
                if c + 1 == cells.len() {
                    let _ = write!(o, "{}", col[row]);
                } else {
                    let _ = write!(o, "{:<w$}   ", col[row]);
                }
            }
            o.push('\n');
        }
    }

    /// What the advice rests on: a limit the recording showed that no tunable sets, or one it
    /// could not show.
    pub fn notes(&self) -> Vec<String> {
        let seen = self.measured.max_cached;
        match (&self.measured.dest, self.limits) {
            (
                Dest::Pool(r),
                Limits::Zfs {
                    delay_min_bytes, ..
                },
            ) => match (r.free_space.filter(|_| r.free_space_from_stalls), seen) {
                (Some(free), _) => {
                    let stop =
                        (free as f64 / crate::model::whatif::measure::ASIZE_INFLATION) as u64;
                    vec![format!(
                        "The recorded stalls came from the pool's space reservation, not from zfs_dirty_data_max: a write waits for the syncing txg once 24 × the unsynced dirty data reaches the space left ({} less what the copy has synced), which stops the writer at about {} of unsynced data{}.",
                        fmt_bytes(free),
                        fmt_bytes(stop),
                        if stop < delay_min_bytes {
                            ", before the write throttle starts: a larger zfs_dirty_data_max does not lift it"
                        } else {
                            ""
                        }
                    )]
                }
                (None, Some(seen)) if delay_min_bytes > seen && r.free_space.is_none() => {
                    vec![format!(
                        "The recording's dirty data never passed {}: a limit between that and the write throttle's {} (the pool's space reservation, 24 × the unsynced dirty data against the free space) would not show in it, and would stop the writer earlier than predicted.",
                        fmt_bytes(seen),
                        fmt_bytes(delay_min_bytes)
                    )]
                }
                _ => Vec::new(),
            },
            (Dest::Disk(d), Limits::PageCache { hold, .. }) => {
                match d
                    .fill_level
                    .or(seen)
                    .filter(|s| d.device_hold.is_none() && hold as f64 > *s as f64 * 1.2)
                {
                    Some(s) => vec![format!(
                        "The recorded copy was held at {} of dirty + writeback, where its global limits held it: a device's own lower limit (a bdi's strict_limit or max_ratio) would not show in it, and would hold the copy from there rather than from {}.",
                        fmt_bytes(s),
                        fmt_bytes(hold)
                    )],
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    fn measured_lines(&self) -> Vec<String> {
        let m = &self.measured;
        let mut v = vec![format!(
            "intake {}: {}",
            fmt_rate(m.intake_bps),
            match m.intake_from {
                IntakeFrom::Budget =>
                    "the copy's rate while the destination did not hold it (its thread states)",
                IntakeFrom::FastestSecond =>
                    "the copy's fastest second (no thread states were recorded)",
            }
        )];
        match &m.dest {
            Dest::Pool(p) => v.extend(pool_lines(p)),
            Dest::Disk(d) => {
                v.push(format!("disks {} while saturated", fmt_rate(d.disk_bps)));
                v.push(format!(
                    "page-cache limits {} background, {} throttle (vmstat)",
                    fmt_bytes(d.bg_thresh),
                    fmt_bytes(d.thresh)
                ));
                if let Some(h) = d.device_hold {
                    v.push(format!(
                        "the kernel began to hold the copy at {} of dirty + writeback, under the global freerun {}: the device's own limit (a bdi's strict_limit or max_ratio), kept as measured",
                        fmt_bytes(h),
                        fmt_bytes((d.bg_thresh + d.thresh) / 2)
                    ));
                }
            }
        }
        v
    }

    fn limits_text(&self) -> String {
        match self.limits {
            Limits::Zfs {
                dirty_max,
                sync_bytes,
                delay_min_bytes,
                txg_timeout_s,
            } => format!(
                "a txg closes at {} of its own dirty data or {} after the previous sync began; writers are delayed above {} of dirty data and wait at {}{}.",
                fmt_bytes(sync_bytes),
                fmt_secs(txg_timeout_s),
                fmt_bytes(delay_min_bytes),
                fmt_bytes(dirty_max),
                if self.scenario.settings.paced(&self.measured.env) {
                    "; the copy holds --pace auto's pace"
                } else {
                    ""
                }
            ),
            Limits::PageCache {
                bg_thresh,
                thresh,
                hold,
            } => format!(
                "background writeback from {}, the writer held from {} (limit {}){}.",
                fmt_bytes(bg_thresh),
                fmt_bytes(hold),
                fmt_bytes(thresh),
                if self.scenario.settings.paced(&self.measured.env) {
                    "; the copy holds --pace auto's pace"
                } else {
                    ""
                }
            ),
        }
    }

    fn unknowns(&self) -> String {
        let cpu = self
            .real
            .other_drops
            .iter()
            .map(|(l, n)| format!("{n} {l}"))
            .collect::<Vec<_>>();
        let other = if cpu.is_empty() {
            String::new()
        } else {
            format!(
                " (drops of other causes are not predicted: the recording has {})",
                cpu.join(", ")
            )
        };
        match self.measured.dest {
            Dest::Pool(_) => format!(
                "other writers on the pool, compression (the copy's bytes are taken as written), the disks' queueing (ZFS writes fewer blocks at once below {} dirty: one rate stands for all), the CPU the syncs take from the writer, the ARC's memory limits{other}.",
                fmt_pct(60.0)
            ),
            Dest::Disk(_) => format!(
                "other writers, the disks' queueing, the filesystem's journal commits, the CPU{other}."
            ),
        }
    }
}

fn pool_lines(p: &PoolRates) -> Vec<String> {
    let mut v = vec![
        format!(
            "pool {} of dirty data per second of sync (Σ ndirty ÷ Σ (stime − fixed cost) over {} txgs; the disks {}: Σ nwritten ÷ Σ stime)",
            fmt_rate(p.drain_bps),
            p.txgs,
            fmt_rate(p.physical_bps)
        ),
        format!(
            "a txg sync's fixed cost {} (the idle txgs' median sync time)",
            fmt_secs(p.fixed_ns as f64 / 1e9)
        ),
        format!(
            "{} per tx ({})",
            fmt_bytes(p.tx_bytes as u64),
            if p.tx_measured {
                "bytes copied per dmu_tx assigned"
            } else {
                "one tx per 128 KiB record assumed"
            }
        ),
    ];
    if let Some(f) = p.free_space {
        v.push(format!(
            "the pool's space reservation: 24 × the unsynced data may reach {} less what the copy synced ({})",
            fmt_bytes(f),
            if p.free_space_from_stalls {
                "from the stalls below the write throttle"
            } else {
                "the destination's free space as the copy began"
            }
        ));
    }
    v
}

/// The two runs as `compare` draws them: the recording, then the prediction, one scale.
pub fn runs(o: &Outcome) -> Vec<Run> {
    let label = |what: &str, with: &str| format!("{what}: {with}");
    let was: Vec<String> = o
        .was
        .iter()
        .map(|(k, v)| format!("{k} {}", v.as_deref().unwrap_or("?")))
        .collect();
    vec![
        Run {
            label: label(
                "recorded",
                &if was.is_empty() {
                    o.name.clone()
                } else {
                    was.join(", ")
                },
            ),
            data: o.recorded.clone(),
        },
        Run {
            label: label("predicted", &o.changes_text()),
            data: o.predicted.clone(),
        },
    ]
    .into_iter()
    .chain(o.twin.iter().map(|t| Run {
        label: label("real", &format!("{} · {}", o.changes_text(), t.name)),
        data: t.data.clone(),
    }))
    .collect()
}

/// The two text charts on one scale, then the summary.
pub fn render_text(o: &Outcome, ascii: bool) -> String {
    const WIDTH: usize = 100;
    let all = runs(o);
    let datas: Vec<&ChartData> = all.iter().map(|r| &r.data).collect();
    let scale: TextScale = shared_text_scale(&datas, WIDTH);
    let mut t = String::new();
    for run in &all {
        let _ = writeln!(t, "── {} ──", run.label);
        t.push_str(&render_text_scaled(&run.data, WIDTH, ascii, scale));
        t.push('\n');
    }
    t.push_str(&o.summary());
    if ascii {
        crate::present::text::asciify(&t)
    } else {
        t
    }
}

/// Writes the requested outputs; returns the paths written. A text path of `-` is standard
/// output.
pub fn write_outputs(
    o: &Outcome,
    targets: &ExportTargets,
    size: (u32, u32),
    ascii: bool,
    overlay: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    targets.check_extensions()?;
    let mut written = Vec::new();
    let write = |path: &Path, bytes: &[u8]| -> anyhow::Result<()> {
        if path == Path::new("-") {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            return out
                .write_all(bytes)
                .and_then(|()| out.flush())
                .context("writing to stdout");
        }
        std::fs::write(path, bytes).with_context(|| format!("writing {}", quote(path)))
    };
    if targets.png.is_some() || targets.svg.is_some() {
        let look = CompareLook {
            title: Some(format!("what if {} · {}", o.changes_text(), o.name)),
            overlay,
            ..CompareLook::default()
        };
        let svg = render_compare_svg(&runs(o), &look, size.0, size.1);
        if let Some(p) = &targets.svg {
            let exported = outline::outline_text(&svg).context("outlining the SVG's text")?;
            write(p, exported.as_bytes())?;
            written.push(p.clone());
        }
        if let Some(p) = &targets.png {
            let bytes = png::rasterize(&svg, size.0, size.1).context("rendering the PNG")?;
            write(p, &bytes)?;
            written.push(p.clone());
        }
    }
    if let Some(p) = &targets.text {
        write(p, render_text(o, ascii).as_bytes())?;
        written.push(p.clone());
    }
    Ok(written)
}

/// `pace: 0 drops, on disk at 01:31; unpaced (predicted from this run's rates) 10 drops for
/// 52 s, the longest 11 s, on disk at 01:25: pacing avoided 10 drops and cost 6.0 s (7 %)`:
/// a `--pace auto` run against its unpaced twin, or why there is no comparison.
pub fn pace_check_line(check: &Result<PaceComparison, String>) -> String {
    let c = match check {
        Ok(c) => c,
        Err(why) => return format!("pace: no comparison with an unpaced run: {why}"),
    };
    let drops = |f: &Figures| match f.drops {
        0 => "no drop".to_string(),
        n => format!(
            "{n} drop{} for {}, the longest {}",
            if n == 1 { "" } else { "s" },
            fmt_secs(f.drop_s),
            fmt_secs(f.longest_stall_s)
        ),
    };
    let end = |f: &Figures| {
        let at = crate::present::format::fmt_clock(f.end_s);
        if f.durable {
            format!("on disk at {at}")
        } else {
            format!("last byte at {at}")
        }
    };
    let (p, u) = (&c.paced, &c.unpaced);
    let avoided = match c.drops_avoided() {
        n if n > 0 => format!("pacing avoided {n} drop{}", if n == 1 { "" } else { "s" }),
        0 => "pacing changed no drop count".to_string(),
        n => format!(
            "pacing made {} more drop{}",
            -n,
            if n == -1 { "" } else { "s" }
        ),
    };
    let cost = c.end_cost_s();
    let share = (cost / u.end_s.max(1e-9) * 100.0).round();
    let kept = if cost >= 0.0 {
        format!("cost {} ({share:.0} %)", fmt_secs(cost))
    } else {
        format!("ended {} sooner", fmt_secs(-cost))
    };
    format!(
        "pace: {}, {}; unpaced (predicted from this run's rates) {}, {}: {avoided} and {kept}",
        drops(p),
        end(p),
        drops(u),
        end(u)
    )
}

/// The comparison as the JSON summary carries it.
pub fn pace_check_json(check: &Result<PaceComparison, String>) -> serde_json::Value {
    let figures = |f: &Figures| {
        serde_json::json!({
            "drops": f.drops,
            "drop_s": f.drop_s,
            "longest_stall_s": f.longest_stall_s,
            "lost_s": f.lost_s,
            "end_s": f.end_s,
            "durable": f.durable,
        })
    };
    match check {
        Ok(c) => serde_json::json!({
            "paced": figures(&c.paced),
            "unpaced_predicted": figures(&c.unpaced),
            "drops_avoided": c.drops_avoided(),
            "end_cost_s": c.end_cost_s(),
        }),
        Err(why) => serde_json::json!({ "error": why }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(drops: usize, drop_s: f64, longest: f64, end_s: f64) -> Figures {
        Figures {
            drops,
            dest_drops: drops,
            other_drops: Vec::new(),
            longest_stall_s: longest,
            longest_dest_stall_s: longest,
            drop_s,
            lost_s: drop_s / 2.0,
            end_s,
            durable: true,
        }
    }

    #[test]
    fn the_pace_line_says_what_pacing_avoided_and_what_it_cost() {
        let c = PaceComparison {
            paced: figures(0, 0.0, 0.0, 91.2),
            unpaced: figures(10, 52.4, 11.3, 85.2),
        };
        assert_eq!(
            pace_check_line(&Ok(c.clone())),
            "pace: no drop, on disk at 01:31; unpaced (predicted from this run's rates) 10 drops \
             for 52 s, the longest 11 s, on disk at 01:25: pacing avoided 10 drops and cost \
             6.0 s (7 %)"
        );
        let v = pace_check_json(&Ok(c));
        assert_eq!(v["drops_avoided"], 10);
        assert_eq!(v["unpaced_predicted"]["drops"], 10);
        assert!((v["end_cost_s"].as_f64().unwrap() - 6.0).abs() < 1e-9);
        let sooner = PaceComparison {
            paced: figures(1, 0.4, 0.4, 30.0),
            unpaced: figures(1, 2.0, 2.0, 31.0),
        };
        assert!(
            pace_check_line(&Ok(sooner))
                .ends_with("pacing changed no drop count and ended 1.0 s sooner"),
        );
        assert_eq!(
            pace_check_line(&Err("the recording copied nothing".into())),
            "pace: no comparison with an unpaced run: the recording copied nothing"
        );
    }
}
