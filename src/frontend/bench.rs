//! `copyscope bench DIR`: each phase of the bench engine (`copy::bench`) runs as a session with
//! the copy's own frontends (TUI, --plain, --json), its own model and its own recording; the
//! results table is built from those recordings through the model. The scratch directory is
//! removed at the end, on cancel and on disk full, and DIR is checked to be as it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{BenchRequest, Config};
use crate::copy::CopyOutcome;
use crate::copy::bench::{BenchSize, Phase, Scratch, check_dir, remove_file, spawn_phase};
use crate::exit::{ExitStatus, Fatal};
use crate::frontend::session::{SessionPlan, model_config};
use crate::frontend::{Frontend, choose_frontend, control_with_signals};
use crate::present::quote::{quote, said, shell_escape};
use crate::report::bench::{BenchFacts, PhaseResult, render_bench_markdown, render_bench_text};
use crate::report::export::ChartData;
use crate::report::recording::{Header, Replayed};
use crate::sample::{Environment, SysRoot, probe_environment};
use crate::ui::view::Header as UiHeader;

/// `--quick`: each phase stops after this long.
const QUICK_PHASE: Duration = Duration::from_secs(12);
/// The tree's default shape: a 6.8 GB photo tree of 14 139 files.
const TREE_BYTES: u64 = 6_800_000_000;
/// Share of the free space a phase may fill (the rest is for metadata and other writers).
const FREE_SHARE: f64 = 0.8;

/// Free bytes for an unprivileged writer on the filesystem of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    rustix::fs::statvfs(dir)
        .ok()
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
}

/// The names in DIR, to check that the bench left it as it found it.
fn listing(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|it| it.filter_map(|e| e.ok().map(|e| e.file_name())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// `zfs get compression,compressratio` of the dataset: no kstat holds either (the objset
/// kstat of OpenZFS 2.1 has only write/read counters), so the command is run and the note
/// says so.
fn zfs_compression(dataset: &str) -> Option<String> {
    let out = std::process::Command::new("zfs")
        .args([
            "get",
            "-H",
            "-o",
            "property,value",
            "compression,compressratio",
        ])
        .arg(dataset)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('\t').map(str::to_string))
    };
    Some(format!(
        "ZFS dataset {dataset}: compression={}, compressratio {} after the bench (from `zfs get`: no kstat carries them)",
        get("compression")?,
        get("compressratio")?
    ))
}

/// How fast the PRNG fills memory here, bytes/s (so a reader can see it was not the limit).
fn prng_rate() -> f64 {
    let mut buf = vec![0u8; 64 << 20];
    let t = Instant::now();
    crate::copy::bench::fill_random(&mut buf);
    buf.len() as f64 / t.elapsed().as_secs_f64().max(1e-9)
}

/// The default output directory: `./copyscope-bench-YYYYMMDD-HHMMSS`.
fn default_out(started: &str) -> PathBuf {
    let stamp = crate::report::screenshot::run_stamp(started);
    PathBuf::from(format!("copyscope-bench-{stamp}"))
}

/// Sizes from the request, RAM and free space; notes say what was chosen and why.
fn plan_size(req: &BenchRequest, env: &Environment, free: Option<u64>) -> (BenchSize, Vec<String>) {
    let mut notes = Vec::new();
    let room = free.map(|f| (f as f64 * FREE_SHARE) as u64);
    let ram = env.mem_total.unwrap_or(0);
    let want = req.size.unwrap_or(ram.saturating_mul(2).max(1 << 30));
    let seq_bytes = match room {
        Some(r) if want > r => {
            notes.push(format!(
                "sequential writes of {} instead of {} (2 x RAM would not fit: {} free); with less than 2 x RAM part of each write may stay in RAM, so read the durable figure",
                crate::present::format::fmt_bytes(r),
                crate::present::format::fmt_bytes(want),
                crate::present::format::fmt_bytes(free.unwrap_or(0)),
            ));
            r
        }
        _ => want,
    };
    if req.size.is_some() && seq_bytes < ram.saturating_mul(2) && notes.is_empty() {
        notes.push(format!(
            "sequential writes of {} (--size), less than 2 x RAM ({}): part of each may stay in RAM (page cache or ARC); the durable figure counts the flush",
            crate::present::format::fmt_bytes(seq_bytes),
            crate::present::format::fmt_bytes(ram.saturating_mul(2)),
        ));
    }
    let tree_want = req.tree_size.unwrap_or(TREE_BYTES);
    let tree_bytes = match room {
        Some(r) if tree_want > r => {
            notes.push(format!(
                "tree of {} instead of {} (free space)",
                crate::present::format::fmt_bytes(r),
                crate::present::format::fmt_bytes(tree_want)
            ));
            r
        }
        _ => tree_want,
    };
    // --quick: what each phase really wrote is known only afterwards (quick_note); the
    // planned sizes above would be misread as the sizes used.
    if req.quick {
        notes.clear();
    }
    (
        BenchSize {
            seq_bytes,
            tree_files: req.files,
            tree_bytes,
            phase_limit: req.quick.then_some(QUICK_PHASE),
            throttle_bps: crate::config::test_throttle_bps(),
        },
        notes,
    )
}

/// What every phase of one bench shares.
struct Bench<'a> {
    config: &'a Config,
    env: &'a Environment,
    scratch: &'a Arc<Scratch>,
    size: BenchSize,
    control: &'a Arc<crate::copy::Control>,
    /// DIR, the directory benchmarked.
    dir: &'a Path,
}

impl Bench<'_> {
    /// Runs one phase as a session, recorded to `recording`, with the configured frontend;
    /// returns its outcome.
    fn run_phase(&self, phase: Phase, recording: &Path) -> CopyOutcome {
        let (config, d) = (self.config, &self.config.display);
        let source = format!("bench: {}", phase.name());
        let env = Environment {
            reads_only: !phase.writes(),
            ..self.env.clone()
        };
        let endpoints = (
            vec![source.clone()],
            self.dir.to_string_lossy().into_owned(),
        );
        let mut plan = SessionPlan::new(d, env, endpoints, self.control.clone())
            .recorded(Some(recording), false);
        plan.header.bench = Some(phase.name().to_string());
        let (scratch, size) = (self.scratch.clone(), self.size);
        let sess = plan.start_engine(
            |progress, control, events| {
                spawn_phase(phase, scratch, size, progress, control, events)
            },
            "the bench engine panicked",
        );
        // The pictures are written per phase, named after it, once the bench has ended: the
        // session's own would be named after the start second, and short phases share one.
        // The `s` key still writes where a copy's does: --screenshot DIR, else the current
        // directory.
        let mut phase_config = config.clone();
        let shots = phase_config.display.screenshot.take();
        if choose_frontend(config) == Frontend::Tui {
            let ui_header = UiHeader {
                source,
                dest: shell_escape(self.dir).into_owned(),
                fs: String::new(),
            };
            let app = crate::frontend::live::new_app(d, &sess, ui_header);
            crate::frontend::live::run_session_tui(&phase_config, sess, app, None, shots)
        } else {
            if !d.json {
                println!("== bench phase: {} ==", phase.name());
            }
            let p = crate::frontend::stream::Printer::new(d.json);
            crate::frontend::stream::run_session(&phase_config.display, sess, p, None)
        }
    }
}

/// The `--quick` note, from what the phases really wrote: each phase stops after
/// [`QUICK_PHASE`] or at its planned size, so the sizes used are the written ones
/// ("--quick: each phase stopped after 12 s or at its size: write zeros 1.20 GB, write random
/// 900 MB (planned 16 GB each), tree write 310 MB in 820 files (planned 6.80 GB); …").
fn quick_note(planned: &BenchSize, used: &[(Phase, u64, u64)], ram: u64) -> String {
    let b = |n: u64| crate::present::format::fmt_bytes(n);
    let wrote = |want: Phase| used.iter().find(|(p, _, _)| *p == want);
    let mut parts = Vec::new();
    let seq: Vec<String> = [Phase::WriteZeros, Phase::WriteRandom]
        .into_iter()
        .filter_map(|p| wrote(p).map(|(_, bytes, _)| format!("{} {}", p.name(), b(*bytes))))
        .collect();
    if !seq.is_empty() {
        parts.push(format!(
            "{} (planned {} each)",
            seq.join(", "),
            b(planned.seq_bytes)
        ));
    }
    if let Some((p, bytes, files)) = wrote(Phase::TreeWrite) {
        parts.push(format!(
            "{} {} in {} files (planned {} in {})",
            p.name(),
            b(*bytes),
            files,
            b(planned.tree_bytes),
            planned.tree_files
        ));
    }
    let largest = used
        .iter()
        .filter(|(p, _, _)| p.writes())
        .map(|(_, bytes, _)| *bytes)
        .max()
        .unwrap_or(0);
    let ram_note = if ram > 0 && largest < ram.saturating_mul(2) {
        format!(
            "; each write is less than 2 x RAM ({}), so part of it may stay in RAM: read the durable figure",
            b(ram.saturating_mul(2))
        )
    } else {
        String::new()
    };
    format!(
        "--quick: each phase stopped after {} s or at its planned size: {}; the read-backs read what was written{ram_note}",
        QUICK_PHASE.as_secs(),
        if parts.is_empty() {
            "no phase ran".to_string()
        } else {
            parts.join(", ")
        }
    )
}

/// What one phase ran: its recording and the engine's outcome.
type Ran = (Phase, PathBuf, CopyOutcome);

/// `copyscope bench DIR`.
pub fn run(config: &Config, req: &BenchRequest) -> Result<ExitStatus, Fatal> {
    let d = &config.display;
    check_dir(&req.dir, req.force).map_err(|e| Fatal::of("bench", e.to_string()))?;
    let before = listing(&req.dir);
    let root = SysRoot::new(d.sys_root.clone());
    let env = probe_environment(&root, &[], &req.dir);
    let started = Header::for_this_run(Vec::new(), Vec::new(), String::new(), env.clone(), 0);
    let out = results_dir(req, &started)?;
    let (size, planned_notes) = plan_size(req, &env, free_bytes(&req.dir));
    let (control, _signals) = control_with_signals()?;
    let scratch =
        Arc::new(Scratch::create(&req.dir).map_err(|e| Fatal::of("bench", e.to_string()))?);
    let bench = Bench {
        config,
        env: &env,
        scratch: &scratch,
        size,
        control: &control,
        dir: &req.dir,
    };
    let (ran, mut status) = bench.run_phases(&out);
    // Cleanup: the scratch directory and everything in it, through its descriptors.
    if let Err(e) = remove_scratch(scratch) {
        eprintln!("copyscope bench: {e}");
        status = ExitStatus::Fatal;
    }
    if listing(&req.dir) != before {
        eprintln!(
            "copyscope bench: {} is not as it was before the bench (something else wrote there meanwhile?)",
            quote(&req.dir)
        );
    }
    let phases = phase_results(d, &ran);
    let facts = BenchFacts {
        fs: crate::frontend::session::fs_label(&env),
        host: started.host.clone(),
        kernel: started.kernel.clone(),
        date: started.started_at.replace('T', " ").replace('Z', " UTC"),
        notes: bench_notes(req, (&size, planned_notes), &env, &ran),
    };
    write_results(d, &out, &facts, &phases);
    Ok(status)
}

/// `--out DIR`, else `./copyscope-bench-STAMP`: made, and never inside DIR (the bench
/// leaves DIR as it was).
fn results_dir(req: &BenchRequest, started: &Header) -> Result<PathBuf, Fatal> {
    let out = req
        .out
        .clone()
        .unwrap_or_else(|| default_out(&started.started_at));
    std::fs::create_dir_all(&out)
        .map_err(|e| Fatal::of("bench", format!("--out {}: {}", quote(&out), said(&e))))?;
    if let (Ok(o), Ok(dd)) = (out.canonicalize(), req.dir.canonicalize())
        && o.starts_with(&dd)
    {
        let _ = std::fs::remove_dir(&out);
        return Err(Fatal::of(
            "bench",
            format!(
                "the results directory {} is inside {}: give --out elsewhere",
                quote(&out),
                quote(&req.dir)
            ),
        ));
    }
    Ok(out)
}

impl Bench<'_> {
    /// Every phase in turn, each recorded into `out`, until one is cancelled or fails (that
    /// status is the bench's).
    fn run_phases(&self, out: &Path) -> (Vec<Ran>, ExitStatus) {
        let mut ran = Vec::new();
        for (i, phase) in Phase::ALL.into_iter().enumerate() {
            let file = format!("{}-{}.jsonl", i + 1, phase.name().replace(' ', "-"));
            let recording = out.join(&file);
            let outcome = self.run_phase(phase, &recording);
            let st = outcome.status;
            ran.push((phase, recording, outcome));
            match phase {
                Phase::WriteZeros => remove_file(self.scratch, "zeros.bin"),
                Phase::ReadBack => remove_file(self.scratch, "random.bin"),
                _ => {}
            }
            if matches!(st, ExitStatus::Cancelled | ExitStatus::Fatal) {
                return (ran, st);
            }
        }
        (ran, ExitStatus::Success)
    }
}

/// Removes the scratch directory once no engine holds it.
fn remove_scratch(scratch: Arc<Scratch>) -> Result<(), String> {
    match Arc::try_unwrap(scratch) {
        Ok(mut s) => s.remove(),
        Err(s) => Err(format!(
            "cannot remove {}: the bench engine still holds it",
            quote(&s.path)
        )),
    }
}

/// The results, from each phase's recording through the model; `--screenshot DIR`: a
/// picture set per phase, named after it.
fn phase_results(d: &crate::config::Display, ran: &[Ran]) -> Vec<PhaseResult> {
    let cfg = model_config(d);
    let mut phases = Vec::new();
    for (phase, rec, outcome) in ran {
        let Ok(run) = Replayed::load(rec, cfg) else {
            continue;
        };
        let data = ChartData::from_replayed(&run);
        if let Some(dir) = &d.screenshot {
            let stem = rec
                .file_stem()
                .map(|s| format!("bench-{}", s.to_string_lossy()))
                .unwrap_or_else(|| "bench".into());
            let size = crate::report::screenshot::SCREENSHOT_SIZE;
            match crate::report::export::write_screenshot_set(&data, dir, &stem, size, d.ascii) {
                Ok(paths) => {
                    for p in paths {
                        eprintln!("screenshot: {}", shell_escape(&p));
                    }
                }
                Err(e) => eprintln!(
                    "copyscope bench: screenshot failed: {}",
                    crate::present::quote::error_chain(&e)
                ),
            }
        }
        phases.push(PhaseResult {
            name: phase.name().to_string(),
            data,
            recording: rec
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            stopped: match outcome.status {
                ExitStatus::Cancelled => Some("cancelled".into()),
                ExitStatus::Fatal => outcome.fatal.clone(),
                _ => None,
            },
        });
    }
    phases
}

/// The table's notes: the planned sizes' (or `--quick`'s, from what was written), the
/// dataset's compression, and how each phase's data was made and read.
fn bench_notes(
    req: &BenchRequest,
    (size, mut notes): (&BenchSize, Vec<String>),
    env: &Environment,
    ran: &[Ran],
) -> Vec<String> {
    if req.quick {
        let used: Vec<(Phase, u64, u64)> = ran
            .iter()
            .map(|(p, _, o)| (*p, o.bytes_copied, o.files_copied))
            .collect();
        notes.insert(0, quick_note(size, &used, env.mem_total.unwrap_or(0)));
    }
    let on_zfs = env.fs_type.as_deref() == Some("zfs");
    if on_zfs
        && let Some(ds) = &env.zfs_dataset
        && let Some(c) = zfs_compression(ds)
    {
        notes.push(c);
    }
    let in_memory = matches!(env.fs_type.as_deref(), Some("tmpfs" | "ramfs"));
    notes.push(if on_zfs {
        "read back: after syncfs, posix_fadvise(DONTNEED) on each file; ZFS keeps its own cache (the ARC), which DONTNEED does not drop, so on ZFS the read-back may be served from RAM".to_string()
    } else if in_memory {
        "read back: tmpfs keeps its files in RAM, so there is no device: the read-back is a read from memory".to_string()
    } else {
        "read back: after syncfs, each file's cached pages dropped with posix_fadvise(DONTNEED), so the reads come from the device".to_string()
    });
    notes.push(random_note(prng_rate(), ran));
    notes.push("tree: one writer, files of 1 KiB to 64 x the mean (log-uniform), half zeros, half random, 200 per directory".to_string());
    notes
}

/// How the random data was made, and — when the random write ran at [`PACED_BY_PRNG`] of the
/// generator's rate or more — that the generator, not the disk, set its pace.
fn random_note(prng_bps: f64, ran: &[Ran]) -> String {
    use crate::present::format::{fmt_pct, fmt_rate};
    let mut s = format!(
        "random data: xoshiro256** generated in memory at {} on one core (not /dev/urandom)",
        fmt_rate(prng_bps)
    );
    let random = ran
        .iter()
        .find(|(p, _, o)| *p == Phase::WriteRandom && o.copy_secs > 0.0);
    if let Some((_, _, o)) = random {
        let bps = o.bytes_copied as f64 / o.copy_secs;
        if prng_bps > 0.0 && bps >= PACED_BY_PRNG * prng_bps {
            s.push_str(&format!(
                "; the random write ran at {} ({} of it): the generator, not the disk, set its pace",
                fmt_rate(bps),
                fmt_pct(bps * 100.0 / prng_bps)
            ));
        }
    }
    s
}

/// A random write at this share of the generator's rate or more was paced by the generator.
const PACED_BY_PRNG: f64 = 0.75;

/// bench.md and bench.txt into `out`, and (without `--json`) the table on stdout.
fn write_results(
    d: &crate::config::Display,
    out: &Path,
    facts: &BenchFacts,
    phases: &[PhaseResult],
) {
    let md = render_bench_markdown(facts, phases);
    let text = render_bench_text(facts, phases);
    let md_path = out.join("bench.md");
    let txt_path = out.join("bench.txt");
    for (p, body) in [(&md_path, &md), (&txt_path, &text)] {
        if let Err(e) = std::fs::write(p, body) {
            eprintln!("copyscope bench: writing {}: {}", quote(p), said(&e));
        }
    }
    if !d.json {
        println!();
        print!("{text}");
        println!(
            "\nwrote {}, {} and a recording per phase in {}",
            shell_escape(&md_path),
            shell_escape(&txt_path),
            shell_escape(out)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_note_states_what_was_written_not_what_was_planned() {
        let planned = BenchSize {
            seq_bytes: 16_000_000_000,
            tree_files: 14_139,
            tree_bytes: 6_800_000_000,
            phase_limit: Some(QUICK_PHASE),
            throttle_bps: None,
        };
        let used = [
            (Phase::WriteZeros, 1_200_000_000, 1),
            (Phase::WriteRandom, 900_000_000, 1),
            (Phase::ReadBack, 900_000_000, 1),
            (Phase::TreeWrite, 310_000_000, 820),
            (Phase::TreeRead, 310_000_000, 820),
        ];
        let note = quick_note(&planned, &used, 8_000_000_000);
        assert!(
            note.starts_with("--quick: each phase stopped after 12 s or at its planned size: write zeros 1.20 GB, write random 900 MB (planned 16.0 GB each), tree write 310 MB in 820 files (planned 6.80 GB in 14139)"),
            "{note}"
        );
        assert!(note.contains("less than 2 x RAM (16.0 GB)"), "{note}");
        // A cancelled bench: only the phases that ran.
        let note = quick_note(&planned, &used[..1], 0);
        assert!(
            note.contains("write zeros 1.20 GB (planned 16.0 GB each);"),
            "{note}"
        );
        assert!(!note.contains("tree") && !note.contains("RAM"), "{note}");
    }
}
