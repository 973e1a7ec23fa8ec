//! `copyscope demo`: makes sample data in a temp dir (one large file plus a tree of small
//! files, partly incompressible), copies it with the normal engine and frontend, paced to
//! about 20 s so the live chart can be watched, with one real drop for the model to explain
//! (busy threads starve the copy of CPU for 4 s), ends with the summary and a picture (one
//! set, replacing the last demo's), cleans up (also after Ctrl-C: the temp dir is removed
//! when the run returns).

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::copy::{Control, CopyJob, CopyOptions, CopyRequest, Pair};
use crate::exit::{ExitStatus, Fatal};
use crate::present::quote::said;
use crate::report::plain::PlainSettings;

/// xorshift64*: fast enough to make hundreds of MB of incompressible data in well under a second per 100 MB.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

const MB: u64 = 1_000_000;

/// Writes `size` bytes: alternating 1 MiB blocks of random and of repeated text, so a
/// compressing filesystem (ZFS lz4) sees a realistic mix.
fn write_mixed(path: &Path, size: u64, rng: &mut Rng, control: &Control) -> std::io::Result<bool> {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, fs::File::create(path)?);
    let text: Vec<u8> = b"copyscope demo data: compressible text block. "
        .iter()
        .copied()
        .cycle()
        .take(1 << 20)
        .collect();
    let mut rnd = vec![0u8; 1 << 20];
    let mut left = size;
    let mut i = 0u64;
    while left > 0 {
        if control.cancelled.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let n = left.min(1 << 20) as usize;
        if i % 3 == 2 {
            f.write_all(&text[..n])?;
        } else {
            rng.fill(&mut rnd[..n]);
            f.write_all(&rnd[..n])?;
        }
        left -= n as u64;
        i += 1;
    }
    f.flush()?;
    Ok(true)
}

/// Makes the sample tree; false when cancelled.
fn make_data(src: &Path, size_mb: u64, control: &Control) -> std::io::Result<(u64, u64)> {
    let total = size_mb * MB;
    let big = total * 6 / 10;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ size_mb);
    fs::create_dir_all(src.join("tree"))?;
    if !write_mixed(&src.join("large.bin"), big, &mut rng, control)? {
        return Ok((0, 0));
    }
    let mut files = 1u64;
    let mut made = big;
    let mut left = total - big;
    while left > 0 {
        let dir = src.join("tree").join(format!("dir{:02}", files % 16));
        fs::create_dir_all(&dir)?;
        // 4 KiB to 2 MiB, skewed small like a photo/document tree.
        let r = rng.next();
        let size = (4096 + (r % (2 << 20)) * (r >> 60) / 15).min(left);
        if !write_mixed(
            &dir.join(format!("file{files:05}.dat")),
            size,
            &mut rng,
            control,
        )? {
            return Ok((0, 0));
        }
        left -= size;
        made += size;
        files += 1;
    }
    Ok((files, made))
}

/// When the demo's drop starts (after the copy began) and how long it lasts.
const STORM_AT: std::time::Duration = std::time::Duration::from_secs(6);
const STORM_FOR: std::time::Duration = std::time::Duration::from_secs(4);

/// Busy threads per CPU during the drop: with the copy's threads at nice 19 (weight 15
/// against 1024 at nice 0) eight of them leave the copy about 0.2 % of a CPU, a quarter of
/// what it needs at the demo's pace. With three (0.5 %) the copy got whole slices now and
/// then and caught up for a few hundred ms: one storm showed as two or three drops.
const BUSY_PER_CPU: usize = 8;

/// The demo's drop, a real one: from [`STORM_AT`] for [`STORM_FOR`] the copy's threads run
/// at nice 19 (as under `nice -n 19 copyscope`) while busy threads at normal priority take
/// every CPU (as a build started beside the copy would). The copy then waits on the run
/// queue, which its threads' scheduler statistics show; the model names the cause from
/// them. Raising a nice value needs no privilege; the copy keeps nice 19 afterwards (going
/// back would need CAP_SYS_NICE), which on an idle machine costs it nothing.
fn cpu_storm(stop: std::sync::Arc<AtomicBool>) -> Option<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("demo-storm".into())
        .spawn(move || {
            let until = std::time::Instant::now() + STORM_AT;
            while std::time::Instant::now() < until {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            renice_copy_threads(19);
            let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
            let end = std::time::Instant::now() + STORM_FOR;
            let busy: Vec<_> = (0..cpus * BUSY_PER_CPU)
                .filter_map(|_| {
                    let stop = stop.clone();
                    std::thread::Builder::new()
                        .name("demo-busy".into())
                        .spawn(move || {
                            let mut x = 1u64;
                            while std::time::Instant::now() < end && !stop.load(Ordering::Relaxed) {
                                for _ in 0..10_000 {
                                    x = std::hint::black_box(
                                        x.wrapping_mul(6364136223846793005).wrapping_add(1),
                                    );
                                }
                            }
                        })
                        .ok()
                })
                .collect();
            for b in busy {
                let _ = b.join();
            }
        })
        .ok()
}

/// Sets the nice value of this process's copy threads (the engine, the scan and the copy
/// workers, found by name).
fn renice_copy_threads(nice: i32) {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return;
    };
    for t in tasks.flatten() {
        let comm = fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let copier = ["copyscope-engi", "copyscope-copy", "copyscope-scan"]
            .iter()
            .any(|p| comm.starts_with(p));
        let tid = t
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
            .and_then(rustix::process::Pid::from_raw);
        if let (true, Some(tid)) = (copier, tid) {
            let _ = rustix::process::setpriority_process(Some(tid), nice);
        }
    }
}

/// The demo's pace: the data over about 20 seconds, in whole MB/s, at least 1 MB/s.
fn pace_bps(bytes: u64) -> u64 {
    (bytes / 20 / MB).max(1) * MB
}

/// Where the demo's pictures go when no --screenshot DIR was given: `copyscope-demo` in the
/// temp dir, emptied of the previous demo's pictures so one set is left, not one per run. A
/// `copyscope-demo` that is not this user's own directory (a shared /tmp where another user
/// made it, or a symlink there) is left alone: `copyscope-demo-UID` is used instead.
fn pictures_dir(tmp: &Path) -> std::path::PathBuf {
    let uid = rustix::process::getuid().as_raw();
    let ours = |d: &Path| {
        use std::os::unix::fs::MetadataExt;
        fs::symlink_metadata(d).is_ok_and(|m| m.is_dir() && m.uid() == uid)
    };
    let shared = tmp.join("copyscope-demo");
    let dir = if !shared.exists() || ours(&shared) {
        shared
    } else {
        tmp.join(format!("copyscope-demo-{uid}"))
    };
    if ours(&dir) {
        remove_previous_pictures(&dir);
    }
    dir
}

/// Removes the picture sets an earlier demo wrote into `dir` (copyscope-STAMP.png, .svg,
/// .txt, .md) and nothing else.
fn remove_previous_pictures(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let picture = name.starts_with("copyscope-")
            && [".png", ".svg", ".txt", ".md"]
                .iter()
                .any(|x| name.ends_with(x));
        if picture && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Runs the demo and returns the copy's exit status.
pub fn run(size_mb: u64, config: &crate::config::Config) -> Result<ExitStatus, Fatal> {
    let settings = PlainSettings {
        json: config.display.json,
        interval: config.display.interval,
        binary: config.display.binary,
    };
    let (control, _signals) = super::control_with_signals()?;
    let tmp = tempfile::Builder::new()
        .prefix("copyscope-demo-")
        .tempdir()
        .map_err(|e| Fatal::of("demo", format!("cannot make a temp dir: {}", said(&e))))?;
    let src = tmp.path().join("sample");
    let dst = tmp.path().join("copy");
    if !settings.json {
        println!(
            "copyscope demo: making {} of sample data in {}",
            crate::present::format::fmt_bytes(size_mb * MB),
            tmp.path().display()
        );
    }
    let (files, made) = make_data(&src, size_mb, &control)
        .map_err(|e| Fatal::of("demo", format!("cannot make sample data: {}", said(&e))))?;
    if control.cancelled.load(Ordering::SeqCst) {
        eprintln!("copyscope demo: cancelled; sample data removed");
        return Ok(ExitStatus::Cancelled);
    }
    if !settings.json {
        println!(
            "copyscope demo: {} in {files} files (one large file, a tree of small ones); copying to {}",
            crate::present::format::fmt_bytes_with(made, settings.binary),
            dst.display()
        );
    }
    let (job, pace) = paced_job(&src, &dst, made)?;
    let notes = Notes::of(pace, made, settings.binary);
    if !settings.json {
        for n in notes.pace.iter().chain(&notes.storm) {
            println!("copyscope {n}");
        }
    }
    let stop_storm = std::sync::Arc::new(AtomicBool::new(false));
    let storm = notes
        .storm
        .is_some()
        .then(|| cpu_storm(stop_storm.clone()))
        .flatten();
    // The demo ends with a picture of the run: in --screenshot DIR, else in the temp dir's
    // sibling that outlives it, which holds the last demo's pictures only.
    let mut config = config.clone();
    if config.display.screenshot.is_none() && !settings.json {
        config.display.screenshot = Some(pictures_dir(&std::env::temp_dir()));
    }
    let outcome = copy(&config, job, (&src, &dst), control, notes);
    stop_storm.store(true, Ordering::SeqCst);
    if let Some(s) = storm {
        let _ = s.join();
    }
    if !settings.json {
        println!("copyscope demo: removing {}", tmp.path().display());
    }
    if let Err(e) = tmp.close() {
        eprintln!(
            "copyscope demo: cleanup failed: {}",
            crate::present::quote::said(&e)
        );
    }
    Ok(outcome.status)
}

/// The copy of the sample data, paced so the live chart has time to show what it does (a
/// fast disk copies 400 MB in under a second): a real rate limit, as --bwlimit sets, drawn on
/// the chart as its line. The tests' pacing hook (COPYSCOPE_TEST_THROTTLE_BPS) replaces it.
/// Returns the job and the demo's own pace, if it has one.
fn paced_job(src: &Path, dst: &Path, made: u64) -> Result<(CopyJob, Option<u64>), Fatal> {
    let test_pace = crate::config::test_throttle_bps();
    let pace = test_pace.is_none().then(|| pace_bps(made));
    let request = CopyRequest {
        pairs: vec![Pair {
            source: src.to_path_buf(),
            dest: dst.to_path_buf(),
        }],
        options: CopyOptions {
            throttle_bps: test_pace,
            bwlimit_bps: pace,
            bwlimit_is_demo_pace: pace.is_some(),
            ..CopyOptions::default()
        },
    };
    let job = CopyJob::plan(&request).map_err(|e| Fatal::of("demo", said(&e)))?;
    Ok((job, pace))
}

/// What the demo says about itself (only with its own pace: the tests' pacing is too fast
/// for the drop).
struct Notes {
    /// The pace, and how long the copy takes at it.
    pace: Option<String>,
    /// The drop it shows, said before it comes.
    storm: Option<String>,
    pace_bps: Option<u64>,
}

impl Notes {
    fn of(pace: Option<u64>, made: u64, binary: bool) -> Notes {
        Notes {
            pace: pace.map(|p| {
                format!(
                    "demo: paced at {} so you can watch (about {} s)",
                    crate::present::format::fmt_rate_with(p as f64, binary),
                    made / p.max(1)
                )
            }),
            storm: pace.map(|_| {
                format!(
                    "demo: at {} s busy threads take every CPU for {} s, the copy at nice 19 (a build beside a niced copy)",
                    STORM_AT.as_secs(),
                    STORM_FOR.as_secs()
                )
            }),
            pace_bps: pace,
        }
    }
}

/// Copies the sample data with the configured frontend: the live TUI with the pace said on
/// screen (a status line for the first seconds, the first notes of the kernel panel for the
/// whole run), else a copy's plain or JSON output.
fn copy(
    config: &crate::config::Config,
    job: CopyJob,
    (src, dst): (&Path, &Path),
    control: std::sync::Arc<Control>,
    notes: Notes,
) -> crate::copy::CopyOutcome {
    let endpoints = (vec![src.display().to_string()], dst.display().to_string());
    if crate::frontend::choose_frontend(config) != crate::frontend::Frontend::Tui {
        return crate::frontend::run_planned(config, job, endpoints, control, None);
    }
    let d = &config.display;
    let mut sess = crate::frontend::session::SessionPlan::copy(d, &job, endpoints, control)
        .recorded(d.record.as_deref(), true)
        .start_copy(job, None);
    // The drop's note first: the kernel panel may have room for one line only.
    for n in notes.storm.iter().chain(&notes.pace).rev() {
        sess.env.notes.insert(0, n.clone());
    }
    let header = crate::ui::view::Header {
        source: src.display().to_string(),
        dest: dst.display().to_string(),
        fs: String::new(),
    };
    let mut app = crate::frontend::live::new_app(d, &sess, header);
    app.limit_bps = notes.pace_bps.map(|p| p as f64);
    if let Some(n) = notes.pace {
        app.status = Some((n, 0));
    }
    crate::frontend::live::run_session_tui(config, sess, app, None, d.screenshot.clone())
}

/// A real recording of copyscope copying 1.6 GB onto an OpenZFS 2.1 pool limited to 40 MB/s
/// (txg stalls; scripts/zfs-lab-copy.sh), shipped in the binary so `demo --replay` works
/// wherever copyscope was installed.
pub const BUNDLED_ZFS_RECORDING: &str = include_str!("../../assets/zfs-40mbps-copy.jsonl");

/// `demo --replay`: plays the bundled recording (TUI on a terminal, else its summary).
pub fn replay_bundled(config: &crate::config::Config) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("copyscope-demo-")
        .tempdir()?;
    let path = dir.path().join("zfs-40mbps.jsonl");
    fs::write(&path, BUNDLED_ZFS_RECORDING)?;
    let cfg = crate::frontend::session::model_config(&config.display);
    let opts = crate::ui::view::UiOptions {
        // q ends the replay; the live demo follows.
        then: Some("on to the live demo"),
        ..crate::frontend::live::ui_options(&config.display)
    };
    if crate::frontend::choose_frontend(config) == crate::frontend::Frontend::Tui {
        // Nothing to cancel, but the screen answers the signals.
        let (_control, _signals) = crate::frontend::control_with_signals()?;
        let rt = crate::frontend::event_loop()?;
        rt.block_on(crate::frontend::replay::run_tui(&path, cfg, opts, 1.0))
    } else {
        print!("{}", crate::frontend::replay::run_plain(&path, cfg, opts)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_makes_the_demo_last_about_20_s() {
        assert_eq!(pace_bps(400 * MB), 20 * MB);
        assert_eq!(pace_bps(200 * MB), 10 * MB);
        assert_eq!(pace_bps(5 * MB), MB);
    }

    #[test]
    fn the_bundled_recording_loads_and_has_txg_stalls() {
        let rec = crate::report::recording::Recording::parse(BUNDLED_ZFS_RECORDING).unwrap();
        let model = crate::frontend::replay::replay_model(&rec, Default::default());
        assert!(model.stats().drops >= 5, "{}", model.stats().drops);
        assert!(
            model
                .events()
                .iter()
                .any(|e| matches!(e.kind, crate::model::EventKind::TxgCommitted { .. }))
        );
    }

    /// One picture set per demo: the previous demo's pictures go, anything else stays; a
    /// `copyscope-demo` that is another user's (or a symlink) is not touched.
    #[test]
    fn the_next_demo_replaces_the_last_ones_pictures() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("copyscope-demo");
        fs::create_dir(&dir).unwrap();
        for f in [
            "copyscope-20261201-101010.png",
            "copyscope-20261201-101010.md",
            "notes.txt",
        ] {
            fs::write(dir.join(f), "x").unwrap();
        }
        assert_eq!(pictures_dir(t.path()), dir);
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["notes.txt"]);
        // A symlink named copyscope-demo (to a directory of someone's pictures): left alone.
        let u = tempfile::tempdir().unwrap();
        let theirs = u.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        fs::write(theirs.join("copyscope-1.png"), "x").unwrap();
        std::os::unix::fs::symlink(&theirs, u.path().join("copyscope-demo")).unwrap();
        let uid = rustix::process::getuid().as_raw();
        assert_eq!(
            pictures_dir(u.path()),
            u.path().join(format!("copyscope-demo-{uid}"))
        );
        assert!(theirs.join("copyscope-1.png").exists());
    }

    /// The copy's threads, found by name, get the nice value; other threads keep theirs.
    #[test]
    fn copy_threads_are_reniced_by_name() {
        let nice_of = |tid: i32| -> i32 {
            let stat = fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
            let after = &stat[stat.rfind(')').unwrap() + 2..];
            after.split(' ').nth(16).unwrap().parse().unwrap()
        };
        let tid = || rustix::thread::gettid().as_raw_nonzero().get();
        let before = nice_of(tid());
        let (tx, rx) = std::sync::mpsc::channel();
        let threads: Vec<_> = ["copyscope-copy-7", "other-thread"]
            .into_iter()
            .map(|name| {
                let tx = tx.clone();
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn(move || {
                        tx.send((name, tid())).unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(300));
                    })
                    .unwrap()
            })
            .collect();
        let ids: std::collections::HashMap<_, _> = (0..2).map(|_| rx.recv().unwrap()).collect();
        renice_copy_threads(19);
        assert_eq!(nice_of(ids["copyscope-copy-7"]), 19);
        assert_eq!(nice_of(ids["other-thread"]), before);
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn sample_data_has_the_requested_size_and_many_files() {
        let t = tempfile::tempdir().unwrap();
        let c = Control::default();
        let (files, made) = make_data(&t.path().join("s"), 8, &c).unwrap();
        assert_eq!(made, 8 * MB);
        assert!(files > 3, "{files}");
        let big = fs::metadata(t.path().join("s/large.bin")).unwrap().len();
        assert_eq!(big, 8 * MB * 6 / 10);
    }
}
