//! Writes a long recording for the bounded-memory replay/export benchmark (issue 14):
//! `cargo run --release --example gen_long_recording -- OUT.jsonl [HOURS] [SOURCE.jsonl]`.
//!
//! The shape is a real run's, not invented: the per-tick deltas of every counter (bytes
//! copied, read/write time, page-cache written, diskstats, PSI) and the gauges (dirty,
//! writeback, CPU) of the steady part of a real recording (default: the 40 MB/s slowdev ext4
//! run in assets/, with its writeback-throttle drops) are replayed over and over, counters kept
//! cumulative, for HOURS (default 24) at the source's tick (100 ms: 864 000 samples for 24 h).
//! The copy is a tree of files the size of the source's file, each with its engine lines;
//! the run ends with the flush and a summary line, as `--record` writes them.

use std::path::PathBuf;

use copyscope::copy::EngineEvent;
use copyscope::report::recording::{Recording, RecordingWriter, Summary};
use copyscope::sample::Sample;

#[expect(
    clippy::too_many_lines,
    reason = "a tool for tests: its arguments and the generating loop, read top to bottom"
)]
fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let out = PathBuf::from(args.next().ok_or_else(|| {
        anyhow::anyhow!("usage: gen_long_recording OUT.jsonl [HOURS] [SOURCE.jsonl]")
    })?);
    let hours: f64 = match args.next() {
        Some(h) => h.to_string_lossy().parse()?,
        None => 24.0,
    };
    let source = args.next().map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/slowdev-40mbps-ext4.jsonl"),
        PathBuf::from,
    );
    let src = Recording::load(&source)?;
    let file_size = src.summary.as_ref().map_or(1 << 30, |s| s.bytes.max(1));
    // The steady part: from the first tick after the initial burst into the page cache (the
    // first 2 s) to the last tick that still copied (the flush tail copies nothing).
    let last_copy = src
        .samples
        .windows(2)
        .rposition(|w| w[1].engine.bytes_copied > w[0].engine.bytes_copied)
        .unwrap_or(0)
        + 1;
    let steady: Vec<&Sample> = src
        .samples
        .iter()
        .take(last_copy + 1)
        .skip_while(|s| s.t_ns < 2_000_000_000)
        .collect();
    anyhow::ensure!(
        steady.len() >= 10,
        "{}: too few steady ticks",
        source.display()
    );
    let deltas: Vec<(&Sample, &Sample)> = steady.windows(2).map(|w| (w[0], w[1])).collect();

    let tick_ns = src.header.interval_ms.max(1) * 1_000_000;
    let total_ticks = (hours * 3600e9 / tick_ns as f64).round() as u64;
    // The bytes the ticks will copy, so the tree's size (known to the scan) is what gets copied.
    let total_bytes: u64 = (0..total_ticks as usize)
        .map(|i| {
            let (a, b) = deltas[i % deltas.len()];
            b.engine.bytes_copied - a.engine.bytes_copied
        })
        .sum();
    let files_total = total_bytes.div_ceil(file_size);

    let mut header = src.header.clone();
    header.command_line = vec![
        "copyscope".into(),
        "--record".into(),
        out.display().to_string(),
        "/srv/archive/".into(),
        "/mnt/slow/archive/".into(),
    ];
    header.sources = vec!["/srv/archive/".into()];
    header.destination = "/mnt/slow/archive/".into();
    let mut w = RecordingWriter::create(&out, &header)?;

    let mut s = steady[0].clone();
    s.t_ns = 0;
    s.engine.bytes_copied = 0;
    s.engine.read_ns = 0;
    s.engine.write_ns = 0;
    s.engine.files_done = 0;
    s.engine.bytes_total = total_bytes;
    s.engine.files_total = files_total;
    s.engine.scan_done = true;
    w.write_sample(&s)?;
    w.write_engine_event(
        0,
        &EngineEvent::ScanDone {
            files: files_total,
            bytes: total_bytes,
        },
    )?;
    let name = |i: u64| PathBuf::from(format!("/srv/archive/part-{i:05}.bin"));
    w.write_engine_event(
        0,
        &EngineEvent::FileStarted {
            path: name(0),
            size: file_size,
        },
    )?;
    for i in 1..=total_ticks {
        let (a, b) = deltas[(i as usize - 1) % deltas.len()];
        s.t_ns = i * tick_ns;
        let before = s.engine.bytes_copied;
        step(&mut s, a, b);
        // A file boundary crossed in this tick: the engine's lines, as a tree copy writes them.
        let done = |b: u64| {
            if b >= total_bytes {
                files_total
            } else {
                b / file_size
            }
        };
        let (done_before, done_now) = (done(before), done(s.engine.bytes_copied));
        s.engine.files_done = done_now.min(files_total);
        w.write_sample(&s)?;
        for f in done_before..done_now.min(files_total) {
            w.write_engine_event(
                s.t_ns,
                &EngineEvent::FileDone {
                    path: name(f),
                    bytes: file_size.min(total_bytes - f * file_size),
                },
            )?;
            if f + 1 < files_total {
                w.write_engine_event(
                    s.t_ns,
                    &EngineEvent::FileStarted {
                        path: name(f + 1),
                        size: file_size,
                    },
                )?;
            }
        }
    }
    let end_ns = s.t_ns;
    let bytes = s.engine.bytes_copied;
    // The flush: the source run's own flush tail (its ticks after the last byte was copied).
    w.write_engine_event(end_ns, &EngineEvent::FlushStarted)?;
    let tail = &src.samples[last_copy.min(src.samples.len() - 1)..];
    for pair in tail.windows(2) {
        s.t_ns += pair[1].t_ns.saturating_sub(pair[0].t_ns);
        step(&mut s, &pair[0], &pair[1]);
        w.write_sample(&s)?;
    }
    w.write_engine_event(s.t_ns, &EngineEvent::FlushDone)?;
    let flush_ns = s.t_ns - end_ns;
    let elapsed = end_ns as f64 / 1e9;
    let durable = (end_ns + flush_ns) as f64 / 1e9;
    w.finish(&Summary {
        bytes,
        files: s.engine.files_done,
        failed: 0,
        elapsed_secs: elapsed,
        durable_secs: Some(durable),
        to_cache_bps: bytes as f64 / elapsed,
        durable_bps: Some(bytes as f64 / durable),
        drops: 0,
        lost_secs_by_cause: Vec::new(),
        exit_code: 0,
    })?;
    eprintln!(
        "{}: {} samples over {} h, {} files, {:.1} GB (shape of {})",
        out.display(),
        total_ticks + 1,
        hours,
        files_total,
        bytes as f64 / 1e9,
        source.display()
    );
    Ok(())
}

/// Advances the cumulative counters of `s` by what the source run's counters did from `a` to
/// `b`, and takes `b`'s gauges (dirty, writeback, CPU).
fn step(s: &mut Sample, a: &Sample, b: &Sample) {
    let add = |x: &mut u64, from: u64, to: u64| *x = x.saturating_add(to.saturating_sub(from));
    add(
        &mut s.engine.bytes_copied,
        a.engine.bytes_copied,
        b.engine.bytes_copied,
    );
    add(&mut s.engine.read_ns, a.engine.read_ns, b.engine.read_ns);
    add(&mut s.engine.write_ns, a.engine.write_ns, b.engine.write_ns);
    if let (Some(pc), Some(pa), Some(pb)) = (&mut s.page_cache, a.page_cache, b.page_cache) {
        pc.dirty = pb.dirty;
        pc.writeback = pb.writeback;
        add(&mut pc.written, pa.written, pb.written);
    }
    for (mine, da, db) in [
        (&mut s.dest_disk, a.dest_disk, b.dest_disk),
        (&mut s.source_disk, a.source_disk, b.source_disk),
    ] {
        if let (Some(d), Some(x), Some(y)) = (mine, da, db) {
            add(&mut d.sectors_read, x.sectors_read, y.sectors_read);
            add(&mut d.sectors_written, x.sectors_written, y.sectors_written);
            add(&mut d.io_ticks_ms, x.io_ticks_ms, y.io_ticks_ms);
            add(&mut d.weighted_ms, x.weighted_ms, y.weighted_ms);
        }
    }
    if let (Some(p), Some(x), Some(y)) = (&mut s.psi_io, a.psi_io, b.psi_io) {
        add(&mut p.some_us, x.some_us, y.some_us);
        add(&mut p.full_us, x.full_us, y.full_us);
    }
    s.cpu = b.cpu;
}
