//! The Prometheus text exposition (format 0.0.4) of a model's [`Snapshot`]: the body of
//! `GET /metrics`. A pure function of the snapshot; every metric is listed in docs/metrics.md.

use std::fmt::Write;

use crate::model::metrics::{Histogram, Snapshot, TXG_SYNC_BUCKETS};

/// The content type Prometheus expects for this format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric family this module can write: (name, type). The Grafana dashboard test
/// checks its queries against this list, docs/metrics.md documents each.
pub const FAMILIES: [(&str, &str); 23] = [
    ("copyscope_info", "gauge"),
    ("copyscope_elapsed_seconds", "gauge"),
    ("copyscope_intake_bytes_total", "counter"),
    ("copyscope_intake_bytes_per_second", "gauge"),
    ("copyscope_device_written_bytes_total", "counter"),
    ("copyscope_device_write_bytes_per_second", "gauge"),
    ("copyscope_device_busy_ratio", "gauge"),
    ("copyscope_page_cache_dirty_bytes", "gauge"),
    ("copyscope_page_cache_writeback_bytes", "gauge"),
    ("copyscope_zfs_dirty_bytes", "gauge"),
    ("copyscope_zfs_txg_sync_duration_seconds", "histogram"),
    ("copyscope_zfs_txgs_synced_total", "counter"),
    ("copyscope_zfs_txg_written_bytes_total", "counter"),
    ("copyscope_drops_total", "counter"),
    ("copyscope_drop_lost_seconds_total", "counter"),
    ("copyscope_drop_stalled_seconds_total", "counter"),
    ("copyscope_network_receive_bytes_per_second", "gauge"),
    ("copyscope_copy_done_bytes", "gauge"),
    ("copyscope_copy_planned_bytes", "gauge"),
    ("copyscope_copy_done_files", "gauge"),
    ("copyscope_copy_planned_files", "gauge"),
    ("copyscope_copy_failed_files", "gauge"),
    ("copyscope_copy_scan_complete", "gauge"),
];

/// The names a query can use: each family's name, and a histogram's `_bucket`, `_sum` and
/// `_count` series.
pub fn series_names() -> Vec<String> {
    let mut v = Vec::new();
    for (name, kind) in FAMILIES {
        v.push(name.to_string());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                v.push(format!("{name}{suffix}"));
            }
        }
    }
    v
}

/// A label value escaped as the format asks: backslash, double quote and newline.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A float as Prometheus parses it (Rust's Display never uses an exponent; the infinities
/// and NaN have their own spellings).
fn num(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        // + 0.0: -0.0 prints as "-0".
        format!("{}", v + 0.0)
    }
}

/// The text being built: HELP and TYPE once per family, then its samples.
struct Out(String);

impl Out {
    fn family(&mut self, name: &str, help: &str) {
        let kind = FAMILIES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("untyped", |(_, k)| k);
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: &str) {
        self.0.push_str(name);
        if !labels.is_empty() {
            let l: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let _ = write!(self.0, "{{{}}}", l.join(","));
        }
        let _ = writeln!(self.0, " {value}");
    }

    /// A family with one unlabelled sample, or nothing when the figure is unknown.
    fn gauge(&mut self, name: &str, help: &str, v: Option<f64>) {
        if let Some(v) = v {
            self.family(name, help);
            self.sample(name, &[], &num(v));
        }
    }

    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let bucket = format!("{name}_bucket");
        for (le, n) in TXG_SYNC_BUCKETS.iter().zip(h.buckets) {
            let le = num(*le);
            let mut l = labels.to_vec();
            l.push(("le", &le));
            self.sample(&bucket, &l, &n.to_string());
        }
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        self.sample(&bucket, &l, &h.count.to_string());
        self.sample(&format!("{name}_sum"), labels, &num(h.sum));
        self.sample(&format!("{name}_count"), labels, &h.count.to_string());
    }
}

/// The exposition of `snap`.
pub fn render(snap: &Snapshot) -> String {
    let mut o = Out(String::new());
    info(&mut o, snap);
    intake(&mut o, snap);
    device(&mut o, snap);
    zfs(&mut o, snap);
    drops(&mut o, snap);
    o.gauge(
        "copyscope_network_receive_bytes_per_second",
        "watch --net: the interface's receive rate over the last second, bytes/s.",
        snap.net_rx_bps,
    );
    progress(&mut o, snap);
    o.0
}

fn info(o: &mut Out, snap: &Snapshot) {
    let i = &snap.info;
    o.family(
        "copyscope_info",
        "The run: copyscope's version, copy or watch, and the destination (value always 1).",
    );
    o.sample(
        "copyscope_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("mode", i.mode),
            ("fstype", &i.fs_type),
            ("mountpoint", &i.mount_point),
            ("dataset", &i.dataset),
            ("pool", &i.pool),
        ],
        "1",
    );
    o.gauge(
        "copyscope_elapsed_seconds",
        "Seconds since the run started (the model's latest sample).",
        Some(snap.elapsed_secs),
    );
}

fn intake(o: &mut Out, snap: &Snapshot) {
    o.family(
        "copyscope_intake_bytes_total",
        "Bytes written so far: a copy's bytes copied, a watch's intake.",
    );
    o.sample(
        "copyscope_intake_bytes_total",
        &[],
        &snap.intake_bytes.to_string(),
    );
    o.gauge(
        "copyscope_intake_bytes_per_second",
        "The intake's speed now (smoothed over the last ticks), bytes/s.",
        Some(snap.intake_bps),
    );
    o.gauge(
        "copyscope_page_cache_dirty_bytes",
        "Page cache Dirty (system-wide), bytes.",
        snap.dirty.map(|v| v as f64),
    );
    o.gauge(
        "copyscope_page_cache_writeback_bytes",
        "Page cache Writeback (system-wide), bytes.",
        snap.writeback.map(|v| v as f64),
    );
}

fn device(o: &mut Out, snap: &Snapshot) {
    let Some(d) = &snap.device else {
        return;
    };
    let l = [("device", d.device.as_str())];
    o.family(
        "copyscope_device_written_bytes_total",
        "Bytes the destination's disks wrote since the run started (diskstats, summed).",
    );
    o.sample(
        "copyscope_device_written_bytes_total",
        &l,
        &d.written.to_string(),
    );
    if let Some(v) = d.write_bps {
        o.family(
            "copyscope_device_write_bytes_per_second",
            "The destination's disks' write rate over the last second, bytes/s.",
        );
        o.sample("copyscope_device_write_bytes_per_second", &l, &num(v));
    }
    if let Some(v) = d.busy_ratio {
        o.family(
            "copyscope_device_busy_ratio",
            "Share of the last second the destination's disks were busy (per disk, 0-1).",
        );
        o.sample("copyscope_device_busy_ratio", &l, &num(v));
    }
}

fn zfs(o: &mut Out, snap: &Snapshot) {
    if let Some((pool, v)) = &snap.zfs_dirty {
        o.family(
            "copyscope_zfs_dirty_bytes",
            "The pool's dirty data not yet synced (arcstats anon_size), bytes.",
        );
        o.sample(
            "copyscope_zfs_dirty_bytes",
            &[("pool", pool)],
            &v.to_string(),
        );
    }
    if snap.pools.is_empty() {
        return;
    }
    o.family(
        "copyscope_zfs_txg_sync_duration_seconds",
        "How long each committed txg took to sync (txgs kstat stime), seconds.",
    );
    for p in &snap.pools {
        o.histogram(
            "copyscope_zfs_txg_sync_duration_seconds",
            &[("pool", &p.pool)],
            &p.sync_secs,
        );
    }
    o.family(
        "copyscope_zfs_txgs_synced_total",
        "Txgs committed while copyscope ran.",
    );
    for p in &snap.pools {
        o.sample(
            "copyscope_zfs_txgs_synced_total",
            &[("pool", &p.pool)],
            &p.sync_secs.count.to_string(),
        );
    }
    o.family(
        "copyscope_zfs_txg_written_bytes_total",
        "Bytes the committed txgs wrote (txgs kstat nwritten).",
    );
    for p in &snap.pools {
        o.sample(
            "copyscope_zfs_txg_written_bytes_total",
            &[("pool", &p.pool)],
            &p.written.to_string(),
        );
    }
}

fn drops(o: &mut Out, snap: &Snapshot) {
    type Pick = fn(&crate::model::metrics::CauseFigures) -> String;
    let families: [(&str, &str, Pick); 3] = [
        (
            "copyscope_drops_total",
            "Speed drops, by their main cause.",
            |c| c.drops.to_string(),
        ),
        (
            "copyscope_drop_lost_seconds_total",
            "Seconds of writing lost in drops against the speed before them, by main cause.",
            |c| num(c.lost_secs),
        ),
        (
            "copyscope_drop_stalled_seconds_total",
            "Seconds spent in drops, by main cause.",
            |c| num(c.stalled_secs),
        ),
    ];
    for (name, help, pick) in families {
        o.family(name, help);
        for c in &snap.causes {
            o.sample(name, &[("cause", c.cause)], &pick(c));
        }
    }
}

fn progress(o: &mut Out, snap: &Snapshot) {
    let Some(p) = &snap.progress else {
        return;
    };
    let figures = [
        (
            "copyscope_copy_done_bytes",
            "A copy's bytes copied so far.",
            p.bytes_copied,
        ),
        (
            "copyscope_copy_planned_bytes",
            "A copy's bytes to copy (grows while the scan runs).",
            p.bytes_total,
        ),
        (
            "copyscope_copy_done_files",
            "A copy's files copied so far.",
            p.files_done,
        ),
        (
            "copyscope_copy_planned_files",
            "A copy's files to copy (grows while the scan runs).",
            p.files_total,
        ),
        (
            "copyscope_copy_failed_files",
            "A copy's files that failed.",
            p.files_failed,
        ),
        (
            "copyscope_copy_scan_complete",
            "1 once the copy's scan has found every file (the planned figures are final).",
            u64::from(p.scan_done),
        ),
    ];
    for (name, help, v) in figures {
        o.gauge(name, help, Some(v as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::ProgressSnapshot;
    use crate::model::metrics::{CauseFigures, DeviceFigures, PoolTally, RunInfo};

    fn snapshot() -> Snapshot {
        let mut h = Histogram::default();
        for s in [0.4, 2.2, 2.9, 7.0] {
            h.observe(s);
        }
        Snapshot {
            info: RunInfo {
                mode: "watch",
                fs_type: "zfs".into(),
                mount_point: "/tank/share \"a\"".into(),
                dataset: "tank/share".into(),
                pool: "tank".into(),
            },
            elapsed_secs: 12.5,
            intake_bytes: 1_234_567_890,
            intake_bps: 41_900_000.0,
            device: Some(DeviceFigures {
                device: "sdb+sdc".into(),
                written: 1_000_000_000,
                write_bps: Some(40e6),
                busy_ratio: Some(0.97),
            }),
            dirty: Some(30_000_000),
            writeback: Some(4096),
            zfs_dirty: Some(("tank".into(), 268_435_456)),
            pools: vec![PoolTally {
                pool: "tank".into(),
                sync_secs: h,
                written: 900_000_000,
            }],
            causes: vec![
                CauseFigures {
                    cause: "txg_sync",
                    drops: 3,
                    lost_secs: 4.25,
                    stalled_secs: 6.5,
                },
                CauseFigures {
                    cause: "unknown",
                    drops: 0,
                    lost_secs: 0.0,
                    stalled_secs: 0.0,
                },
            ],
            net_rx_bps: None,
            progress: None,
        }
    }

    #[test]
    fn every_family_has_help_and_type_before_its_samples() {
        let text = render(&snapshot());
        let mut typed: Vec<&str> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(
                    FAMILIES.contains(&(name, kind)),
                    "{name} {kind} is listed in FAMILIES"
                );
                assert!(!typed.contains(&name), "{name} typed once");
                typed.push(name);
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                let family = typed.last().unwrap();
                assert!(
                    name.strip_prefix(family)
                        .is_some_and(|r| ["", "_bucket", "_sum", "_count"].contains(&r)),
                    "{name} follows its own TYPE line ({family})"
                );
            }
        }
        for (name, kind) in FAMILIES {
            assert_eq!(
                kind == "counter",
                name.ends_with("_total"),
                "{name}: counters and only counters end in _total"
            );
        }
    }

    #[test]
    fn the_figures_are_the_snapshots() {
        let text = render(&snapshot());
        for line in [
            "copyscope_intake_bytes_total 1234567890",
            "copyscope_intake_bytes_per_second 41900000",
            "copyscope_device_written_bytes_total{device=\"sdb+sdc\"} 1000000000",
            "copyscope_device_busy_ratio{device=\"sdb+sdc\"} 0.97",
            "copyscope_page_cache_writeback_bytes 4096",
            "copyscope_zfs_dirty_bytes{pool=\"tank\"} 268435456",
            "copyscope_zfs_txgs_synced_total{pool=\"tank\"} 4",
            "copyscope_zfs_txg_written_bytes_total{pool=\"tank\"} 900000000",
            "copyscope_drops_total{cause=\"txg_sync\"} 3",
            "copyscope_drops_total{cause=\"unknown\"} 0",
            "copyscope_drop_lost_seconds_total{cause=\"txg_sync\"} 4.25",
            "copyscope_drop_stalled_seconds_total{cause=\"unknown\"} 0",
            "copyscope_elapsed_seconds 12.5",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
        // No --net, no copy: those families are absent, not zero.
        assert!(!text.contains("network_receive"));
        assert!(!text.contains("copyscope_copy_"));
    }

    #[test]
    fn the_histogram_is_cumulative_and_ends_at_its_count() {
        let text = render(&snapshot());
        let bucket = |le: &str| {
            let prefix = format!(
                "copyscope_zfs_txg_sync_duration_seconds_bucket{{pool=\"tank\",le=\"{le}\"}} "
            );
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("bucket {le} in:\n{text}"))
                .to_string()
        };
        assert_eq!(bucket("0.25"), "0");
        assert_eq!(bucket("0.5"), "1");
        assert_eq!(bucket("2"), "1");
        assert_eq!(bucket("3"), "3");
        assert_eq!(bucket("7.5"), "4");
        assert_eq!(bucket("+Inf"), "4");
        assert!(text.contains("copyscope_zfs_txg_sync_duration_seconds_sum{pool=\"tank\"} 12.5\n"));
        assert!(text.contains("copyscope_zfs_txg_sync_duration_seconds_count{pool=\"tank\"} 4\n"));
    }

    #[test]
    fn label_values_are_escaped_and_the_info_names_the_run() {
        let text = render(&snapshot());
        let info = text
            .lines()
            .find(|l| l.starts_with("copyscope_info{"))
            .unwrap();
        assert_eq!(
            info,
            format!(
                "copyscope_info{{version=\"{}\",mode=\"watch\",fstype=\"zfs\",\
                 mountpoint=\"/tank/share \\\"a\\\"\",dataset=\"tank/share\",pool=\"tank\"}} 1",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(escape("a\\b\nc"), "a\\\\b\\nc");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(f64::INFINITY), "+Inf");
    }

    #[test]
    fn a_copy_shows_its_progress() {
        let mut s = snapshot();
        s.info.mode = "copy";
        s.progress = Some(ProgressSnapshot {
            bytes_copied: 500,
            bytes_total: 2000,
            files_done: 1,
            files_total: 4,
            scan_done: true,
            ..ProgressSnapshot::default()
        });
        let text = render(&s);
        for line in [
            "copyscope_copy_done_bytes 500",
            "copyscope_copy_planned_bytes 2000",
            "copyscope_copy_done_files 1",
            "copyscope_copy_planned_files 4",
            "copyscope_copy_failed_files 0",
            "copyscope_copy_scan_complete 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }
}
