//! `sample_dump`: runs the sampler against a destination and prints the probed
//! Environment, then one Sample per tick, then the sampler's lateness/CPU statistics, all as
//! JSON lines. With `--write-bytes N` it also writes N bytes of zeros into DEST (like dd,
//! updating the engine counters), so the ZFS lab and the §10 sampler check can drive a load.
//!
//! Usage: sample_dump --dest DIR [--source PATH]... [--seconds S] [--interval-ms MS]
//!                    [--write-bytes N[K|M|G]] [--sys-root DIR]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use copyscope::copy::Progress;
use copyscope::sample::{SysRoot, probe_environment, spawn_sampler};

struct Args {
    dest: PathBuf,
    sources: Vec<PathBuf>,
    seconds: f64,
    interval: Duration,
    write_bytes: u64,
    sys_root: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<u64> {
    let (num, mul) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    Ok(num.parse::<u64>().context("bad size")? * mul)
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        dest: PathBuf::new(),
        sources: Vec::new(),
        seconds: 10.0,
        interval: Duration::from_millis(100),
        write_bytes: 0,
        sys_root: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--dest" => a.dest = PathBuf::from(val()?),
            "--source" => a.sources.push(PathBuf::from(val()?)),
            "--seconds" => a.seconds = val()?.parse()?,
            "--interval-ms" => a.interval = Duration::from_millis(val()?.parse()?),
            "--write-bytes" => a.write_bytes = parse_size(&val()?)?,
            "--sys-root" => a.sys_root = Some(PathBuf::from(val()?)),
            other => bail!("unknown argument {other}"),
        }
    }
    if a.dest.as_os_str().is_empty() {
        bail!("--dest DIR is required");
    }
    Ok(a)
}

/// Writes `bytes` zeros to `path` in 1 MiB chunks, counting like the copy engine does.
fn write_load(
    path: PathBuf,
    bytes: u64,
    progress: Arc<Progress>,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let mut f =
        std::fs::File::create(&path).with_context(|| format!("create {}", path.display()))?;
    let chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 && !stop.load(Ordering::Relaxed) {
        let n = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let t = Instant::now();
        f.write_all(&chunk[..n])?;
        progress.write_ns.fetch_add(
            u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        progress.bytes_copied.fetch_add(n as u64, Ordering::Relaxed);
        left -= n as u64;
    }
    progress.files_done.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let root = SysRoot::from_option_or_env(args.sys_root.clone());
    let env = probe_environment(&root, &args.sources, &args.dest);
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "{}", serde_json::json!({ "environment": env }))?;

    let progress = Arc::new(Progress::default());
    progress
        .bytes_total
        .store(args.write_bytes, Ordering::Relaxed);
    progress
        .files_total
        .store(u64::from(args.write_bytes > 0), Ordering::Relaxed);
    progress.scan_done.store(true, Ordering::Relaxed);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let start = Instant::now();
    let mut sampler = spawn_sampler(root, &env, Arc::clone(&progress), args.interval, start, tx);
    let writer = (args.write_bytes > 0).then(|| {
        let (p, s) = (Arc::clone(&progress), Arc::clone(&stop));
        let path = args.dest.join("copyscope-sample-dump.bin");
        let bytes = args.write_bytes;
        std::thread::spawn(move || write_load(path, bytes, p, s))
    });
    let end = start + Duration::from_secs_f64(args.seconds);
    while Instant::now() < end {
        match rx.try_recv() {
            Ok(s) => writeln!(out, "{}", serde_json::to_string(&s)?)?,
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => break,
        }
    }
    sampler.stop();
    while let Ok(s) = rx.try_recv() {
        writeln!(out, "{}", serde_json::to_string(&s)?)?;
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(w) = writer {
        match w.join() {
            Ok(r) => r?,
            Err(_) => bail!("writer thread panicked"),
        }
    }
    writeln!(
        out,
        "{}",
        serde_json::json!({ "sampler_stats": sampler.stats() })
    )?;
    Ok(())
}
