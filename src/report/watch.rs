//! The texts of `copyscope watch` where a copy prints its own: the progress line of a
//! `--plain` watch and the summary's first line.

use std::time::Duration;

use crate::copy::{CopyOutcome, CurrentFile, ProgressSnapshot, WriterRow};
use crate::model::NetStats;
use crate::present::format::{
    fmt_bytes_with, fmt_clock, fmt_event_time, fmt_pct, fmt_pct_done, fmt_rate_with, fmt_secs,
};
use crate::present::quote::shell_escape;
use crate::report::recording::WatchTarget;
use crate::sample::discover::Running;

/// "[00:12] intake 98 MB/s now, avg 95 MB/s, 1.2 GB written (writers' files); eth0 rx
/// 99 MB/s now, avg 96 MB/s; writing /srv/share/f.bin at 512 MB" — the receive rate only
/// with `--net`, the file only when a followed writer has one open.
pub fn progress_line(
    target: &WatchTarget,
    elapsed: Duration,
    (snap, current): (&ProgressSnapshot, Option<&CurrentFile>),
    (now_bps, avg_bps): (f64, f64),
    net: Option<&NetStats>,
    binary: bool,
) -> String {
    let mut line = format!(
        "[{}] intake {} now, avg {}, {} written ({})",
        fmt_clock(elapsed.as_secs_f64()),
        fmt_rate_with(now_bps, binary),
        fmt_rate_with(avg_bps, binary),
        fmt_bytes_with(snap.bytes_copied, binary),
        target.intake
    );
    if let Some(n) = net {
        line.push_str(&format!(
            "; {} rx {} now, avg {}",
            target.net.as_deref().unwrap_or("network"),
            fmt_rate_with(n.now_bps, binary),
            fmt_rate_with(n.avg_bps, binary)
        ));
    }
    if let Some(c) = current {
        line.push_str(&format!(
            "; writing {} at {}",
            shell_escape(&c.path),
            fmt_bytes_with(c.done, binary)
        ));
    }
    line
}

/// `watch --list`: two lines per process found writing, fastest first —
/// "  4242 cp  /dst/big.iso  at 945 MB  120 MB/s" and, when it reads a file,
/// "        reading /src/big.iso  45 % of 2.10 GB  ETA 00:09" — or why there is none.
pub fn found_text(found: &[Running], secs: f64, binary: bool) -> String {
    if found.is_empty() {
        return format!(
            "no process wrote regular files in {} (at least {} each)\n",
            fmt_secs(secs),
            fmt_bytes_with(crate::sample::discover::MIN_GROWTH, binary)
        );
    }
    let mut s = String::new();
    for r in found {
        s.push_str(&format!(
            "{:>7} {}  {}  at {}  {}\n",
            r.pid,
            shell_escape(&r.comm),
            shell_escape(&r.file),
            fmt_bytes_with(r.at, binary),
            fmt_rate_with(r.rate_bps, binary)
        ));
        if let Some(src) = &r.source {
            let eta = r
                .eta_secs()
                .map(|e| format!("  ETA {}", fmt_clock(e)))
                .unwrap_or_default();
            s.push_str(&format!(
                "        reading {}  {} of {}{eta}\n",
                shell_escape(&src.path),
                fmt_pct_done(src.pos, src.size),
                fmt_bytes_with(src.size, binary)
            ));
        }
    }
    s
}

/// `watch --list --json`: one object per process found writing.
pub fn found_json(r: &Running) -> serde_json::Value {
    serde_json::json!({
        "type": "writer",
        "pid": r.pid,
        "comm": r.comm,
        "file": r.file,
        "at": r.at,
        "bytes": r.grew,
        "rate_bps": r.rate_bps.round(),
        "source": r.source.as_ref().map(|s| serde_json::json!({
            "path": s.path, "pos": s.pos, "size": s.size,
        })),
        "percent": r.percent().map(f64::floor),
        "eta_s": r.eta_secs().map(f64::round),
    })
}

/// "[00:03.2] writer: cp (pid 4242) writing /dst/big.iso" — a writer `watch --all` found.
pub fn writer_line(t_ns: u64, w: &WriterRow) -> String {
    let what = w.file.as_ref().map_or_else(String::new, |f| {
        format!(" writing {}", shell_escape(&f.path))
    });
    format!(
        "[{}] writer: {} (pid {}){what}",
        fmt_event_time(t_ns),
        shell_escape(&w.comm),
        w.pid
    )
}

/// Each writer's share of what the writers wrote, percent (0 when none wrote).
pub fn shares(rows: &[WriterRow]) -> Vec<f64> {
    let total: u64 = rows.iter().map(|r| r.bytes).sum();
    rows.iter()
        .map(|r| match total {
            0 => 0.0,
            t => r.bytes as f64 * 100.0 / t as f64,
        })
        .collect()
}

/// The writers' rows after a watch's summary, when there were several: each one's bytes,
/// its share of what they all wrote, and its last file —
/// "    4242 rsync  21.0 MB  12 %  /tank/w1/.big.iso.Xy1 (ended)".
pub fn writers_table(rows: &[WriterRow], binary: bool) -> String {
    if rows.len() < 2 {
        return String::new();
    }
    let mut s = format!(
        "  writers ({}), each one's bytes and share of what they wrote:\n",
        rows.len()
    );
    let shares = shares(rows);
    // The rows under 1 % (a compiler's helpers, a shell) are counted, not listed.
    let small = shares.iter().filter(|p| **p < 1.0).count();
    let listed = if small > 0 && small < rows.len() {
        rows.len() - small
    } else {
        rows.len()
    };
    for (r, share) in rows.iter().zip(shares).take(listed) {
        let file = r
            .file
            .as_ref()
            .map(|f| format!("  {}", shell_escape(&f.path)))
            .unwrap_or_default();
        let ended = if r.alive { "" } else { " (ended)" };
        s.push_str(&format!(
            "  {:>7} {}  {}  {}{file}{ended}\n",
            r.pid,
            shell_escape(&r.comm),
            fmt_bytes_with(r.bytes, binary),
            fmt_pct(share)
        ));
    }
    if listed < rows.len() {
        s.push_str(&format!(
            "    and {} more under 1 % each\n",
            rows.len() - listed
        ));
    }
    s
}

/// The writers' rows for a `--json` watch's summary (`writers`).
pub fn writers_json(rows: &[WriterRow]) -> serde_json::Value {
    serde_json::Value::Array(
        rows.iter()
            .zip(shares(rows))
            .map(|(r, share)| {
                serde_json::json!({
                    "pid": r.pid,
                    "comm": r.comm,
                    "bytes": r.bytes,
                    "share_pct": (share * 10.0).round() / 10.0,
                    "file": r.file.as_ref().map(|f| f.path.to_string_lossy()),
                    "alive": r.alive,
                })
            })
            .collect(),
    )
}

/// The summary's first line: what was written and how long the watch ran. The average is
/// the model's, on the speeds line below it.
pub fn summary_line(target: &WatchTarget, o: &CopyOutcome, binary: bool) -> String {
    if !target.pipeline.is_empty() {
        return format!(
            "copyscope watch: {} through the pipeline in {} (intake from {})\n",
            fmt_bytes_with(o.bytes_copied, binary),
            fmt_secs(o.copy_secs),
            target.intake
        );
    }
    format!(
        "copyscope watch: {} written into {} in {} (intake from {})\n",
        fmt_bytes_with(o.bytes_copied, binary),
        shell_escape(&target.path),
        fmt_secs(o.copy_secs),
        target.intake
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writers_table_lists_each_share_and_counts_the_small_ones() {
        let row = |pid, comm: &str, bytes, alive| WriterRow {
            pid,
            comm: comm.into(),
            file: Some(CurrentFile {
                path: format!("/tank/w{pid}").into(),
                size: bytes,
                done: bytes,
            }),
            bytes,
            source: None,
            alive,
        };
        let rows = [
            row(11, "rsync", 600_000_000, true),
            row(12, "rsync", 399_000_000, false),
            row(13, "sh", 1_000_000, false),
        ];
        assert_eq!(
            writers_table(&rows, false),
            concat!(
                "  writers (3), each one's bytes and share of what they wrote:\n",
                "       11 rsync  600 MB  60 %  /tank/w11\n",
                "       12 rsync  399 MB  40 %  /tank/w12 (ended)\n",
                "    and 1 more under 1 % each\n"
            )
        );
        assert_eq!(
            writers_table(&rows[..1], false),
            "",
            "one writer: the summary says it"
        );
        let v = writers_json(&rows);
        assert_eq!(v[2]["share_pct"], 0.1);
        assert_eq!(v[1]["alive"], false);
    }

    #[test]
    fn the_plain_line_says_the_receive_rate() {
        let target = WatchTarget {
            path: "/srv/share".into(),
            intake: "writers' files".into(),
            net: Some("eth0".into()),
            ..Default::default()
        };
        let snap = ProgressSnapshot {
            bytes_copied: 1_200_000_000,
            ..Default::default()
        };
        let net = NetStats {
            now_bps: 99e6,
            avg_bps: 96e6,
            min_bps: 0.0,
            peak_bps: 118e6,
        };
        let l = progress_line(
            &target,
            Duration::from_secs(12),
            (&snap, None),
            (98e6, 95e6),
            Some(&net),
            false,
        );
        assert!(
            l.ends_with("1.20 GB written (writers' files); eth0 rx 99.0 MB/s now, avg 96.0 MB/s"),
            "{l}"
        );
        let l = progress_line(
            &target,
            Duration::ZERO,
            (&snap, None),
            (0.0, 0.0),
            None,
            false,
        );
        assert!(!l.contains(" rx "), "{l}");
    }
}
