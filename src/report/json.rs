//! `--json`: one JSON object per interval, one per engine event and a final summary
//! (documented in docs/json-output.md). Paths that are not UTF-8 are written lossily.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::copy::{CopyOutcome, CurrentFile, EngineEvent, FileIssue, ProgressSnapshot};
use crate::model::{Backlog, Eta, EtaCheck, OnDisk, Stats};

fn lossy(p: &std::path::Path) -> PathBuf {
    PathBuf::from(p.to_string_lossy().into_owned())
}

/// The event with every path made UTF-8 (serde refuses non-UTF-8 paths).
pub fn lossy_event(ev: &EngineEvent) -> EngineEvent {
    use EngineEvent::*;
    match ev {
        FileStarted { path, size } => FileStarted {
            path: lossy(path),
            size: *size,
        },
        FileDone { path, bytes } => FileDone {
            path: lossy(path),
            bytes: *bytes,
        },
        DirCreated { path } => DirCreated { path: lossy(path) },
        FileFailed { path, error } => FileFailed {
            path: lossy(path),
            error: error.clone(),
        },
        FileSkipped { path, reason } => FileSkipped {
            path: lossy(path),
            reason: reason.clone(),
        },
        FileChanged { path, detail } => FileChanged {
            path: lossy(path),
            detail: detail.clone(),
        },
        other => other.clone(),
    }
}

/// `{"type":"event","t":1.25,"kind":"file_done","path":"…","bytes":…}`.
pub fn event_json(t_secs: f64, ev: &EngineEvent) -> Value {
    let mut v = serde_json::to_value(lossy_event(ev))
        .unwrap_or_else(|e| json!({ "kind": "unserialisable", "error": e.to_string() }));
    if let Value::Object(m) = &mut v {
        m.insert("type".into(), json!("event"));
        m.insert("t".into(), json!(round3(t_secs)));
    }
    v
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// What a progress object says besides the engine's counters: the model's figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProgressFigures<'a> {
    pub eta_secs: Option<f64>,
    /// Both finish times with their bands ([`crate::model::Model::eta`]).
    pub eta: Option<Eta>,
    pub current: Option<&'a CurrentFile>,
    /// Data still to reach the destination: this copy's, or the system's when the
    /// destination's counters are unknown (`to_flush.scope`).
    pub to_flush: Option<Backlog>,
}

/// One interval's progress.
pub fn progress_json(
    t_secs: f64,
    phase: &str,
    snap: &ProgressSnapshot,
    now_bps: f64,
    avg_bps: f64,
    fig: ProgressFigures<'_>,
) -> Value {
    let ProgressFigures {
        eta_secs,
        eta,
        current,
        to_flush,
    } = fig;
    json!({
        "type": "progress",
        "t": round3(t_secs),
        "phase": phase,
        "bytes_copied": snap.bytes_copied,
        "bytes_total": snap.bytes_total,
        "files_done": snap.files_done,
        "files_failed": snap.files_failed,
        "files_total": snap.files_total,
        "scan_done": snap.scan_done,
        "speed_bps": now_bps.round(),
        "avg_bps": avg_bps.round(),
        "eta_s": eta_secs.map(|e| e.round()),
        "eta": eta.map(|e| eta_json(&e)),
        "read_ns": snap.read_ns,
        "write_ns": snap.write_ns,
        "to_flush": to_flush.map(|b| json!({"bytes": b.bytes, "scope": b.scope})),
        "current": current.map(|c| json!({
            "path": c.path.to_string_lossy(),
            "size": c.size,
            "done": c.done,
        })),
    })
}

/// Both finish times: `{"to_cache_s":40.0,"to_cache_band_s":2.0,"on_disk_s":190.0,
/// "on_disk_band_s":20.0,"on_disk":"measured"}`; `on_disk` is `"unmeasured"` (the disks' rate
/// not known yet: `on_disk_s` null) or `"no_disk"` (a memory filesystem).
pub fn eta_json(e: &Eta) -> Value {
    let (on_disk, secs, band) = match e.on_disk {
        OnDisk::Secs { secs, band_secs } => ("measured", Some(secs), band_secs),
        OnDisk::Unmeasured => ("unmeasured", None, None),
        OnDisk::NoDisk => ("no_disk", None, None),
    };
    json!({
        "to_cache_s": round1(e.to_cache_secs),
        "to_cache_band_s": e.to_cache_band_secs.map(round1),
        "on_disk": on_disk,
        "on_disk_s": secs.map(round1),
        "on_disk_band_s": band.map(round1),
    })
}

/// What the finish time said at 25 % of the bytes and how the run ended (seconds since the
/// start, pauses excluded): `{"at_s":6.2,"said_cache_s":…,"said_on_disk_s":…,"band_s":…,
/// "real_s":44.0,"real_on_disk":true,"error_s":2.0,"text":"finish time said at 25 % …"}`.
pub fn eta_check_json(c: &EtaCheck) -> Value {
    json!({
        "at_fraction": crate::model::CHECK_AT_FRACTION,
        "at_s": round3(c.at_secs),
        "said_cache_s": round3(c.said_cache.secs),
        "said_on_disk_s": c.said_disk.map(|s| round3(s.secs)),
        "band_s": c.said().and_then(|s| s.band_secs).map(round3),
        "real_s": c.real.map(|r| round3(r.secs)),
        "real_on_disk": c.real.map(|r| r.on_disk),
        "error_s": c.error_secs().map(round3),
        "text": c.describe(),
    })
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn issues(v: &[FileIssue]) -> Value {
    Value::Array(
        v.iter()
            .map(|i| json!({ "path": i.path.to_string_lossy(), "message": i.message }))
            .collect(),
    )
}

/// The writer's time budget: seconds and share of the run per slice, in bar order, e.g.
/// `{"total_secs":30.1,"slices":[{"slice":"writing","secs":9.0,"share":0.3},…]}`.
pub fn budget_json(b: &crate::model::Budget) -> Value {
    let slices: Vec<Value> = b
        .shares()
        .iter()
        .map(|(s, share)| {
            json!({"slice": s, "secs": round3(b.ns(*s) / 1e9), "share": round3(*share)})
        })
        .collect();
    json!({"total_secs": round3(b.total_ns() / 1e9), "slices": slices, "exact": b.is_exact()})
}

/// The model's figures: the same numbers, by the same definitions, as the TUI header, the
/// text summaries and every export (see [`Stats`]).
pub fn stats_json(st: &Stats) -> Value {
    json!({
        "bytes_copied": st.bytes,
        "elapsed_s": round3(st.elapsed_ns as f64 / 1e9),
        "to_cache_bps": st.avg_bps.round(),
        "min_bps": st.min_bps.round(),
        "peak_bps": st.peak_bps.round(),
        "durable_bps": st.durable_bps.map(f64::round),
        "drops": st.drops,
        "lost_s": round3(st.lost_total_secs()),
        "lost_secs_by_cause": st.lost_by_cause_owned(),
    })
}

/// `watch --net`: the interface's receive figures (the model's [`crate::model::NetStats`]),
/// `{"iface":"eth0","rx_bps":…,"avg_bps":…,"min_bps":…,"peak_bps":…}`; `rx_bps` is the last
/// second's. In every progress line and the summary of a watch with `--net`.
pub fn net_json(iface: Option<&str>, n: &crate::model::NetStats) -> Value {
    json!({
        "iface": iface,
        "rx_bps": n.now_bps.round(),
        "avg_bps": n.avg_bps.round(),
        "min_bps": n.min_bps.round(),
        "peak_bps": n.peak_bps.round(),
    })
}

/// The final summary object: the engine's counts, the model's times, speeds and drops
/// (`st`, the same figures as the TUI header and every export).
pub fn summary_json(o: &CopyOutcome, st: &Stats) -> Value {
    json!({
        "type": "summary",
        "status": o.status,
        "exit_code": o.status.code(),
        "files_copied": o.files_copied,
        "bytes_copied": o.bytes_copied,
        "bytes_cloned": o.bytes_cloned,
        // The model's copy time (what to_cache_bps divides by), the engine's where none ran.
        "copy_s": round3(if st.bytes > 0 { st.copy_secs } else { o.copy_secs }),
        // The model's flush time (its flush_done event's), the engine's where no model ran.
        "flush_s": o.flush_secs.map(|e| round3(st.flush_secs.unwrap_or(e))),
        "flush_abandoned": o.flush_abandoned,
        "to_cache_bps": st.avg_bps.round(),
        "min_bps": st.min_bps.round(),
        "peak_bps": st.peak_bps.round(),
        "durable_bps": st.durable_bps.map(f64::round),
        "drops": st.drops,
        "lost_s": round3(st.lost_total_secs()),
        "lost_secs_by_cause": st.lost_by_cause_owned(),
        "sync": o.sync,
        "fatal": o.fatal,
        "failures": issues(&o.failures),
        "skipped": issues(&o.skipped),
        "changed": issues(&o.changed),
        "notes": issues(&o.notes),
        "verify": o.verify,
    })
}

/// A model's finding as a JSON line: its own fields, tagged with `type` ("diagnosis" for an
/// event, "provisional" for a drop in progress), its time `t` in seconds (ms precision) and
/// its words.
pub fn finding_json(v: &impl serde::Serialize, kind: &str, t_ns: u64, text: String) -> Value {
    let mut v = serde_json::to_value(v).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut v {
        m.insert("type".into(), json!(kind));
        m.insert("t".into(), json!((t_ns as f64 / 1e6).round() / 1e3));
        m.insert("text".into(), json!(text));
    }
    v
}

/// `watch --net`: `v` with the model's receive figures as its `net` member.
pub fn with_net(
    mut v: Value,
    watch: Option<&crate::report::recording::WatchTarget>,
    st: &Stats,
) -> Value {
    if let (Value::Object(m), Some(n)) = (&mut v, &st.net) {
        let iface = watch.and_then(|w| w.net.as_deref());
        m.insert("net".into(), net_json(iface, n));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn events_carry_type_time_and_kind() {
        let v = event_json(
            1.23456,
            &EngineEvent::FileDone {
                path: "a/b".into(),
                bytes: 7,
            },
        );
        assert_eq!(v["type"], "event");
        assert_eq!(v["kind"], "file_done");
        assert_eq!(v["path"], "a/b");
        assert_eq!(v["bytes"], 7);
        assert_eq!(v["t"], 1.235);
    }

    #[test]
    fn non_utf8_paths_do_not_break_the_output() {
        let p = PathBuf::from(std::ffi::OsString::from_vec(vec![b'a', 0xff]));
        let v = event_json(
            0.0,
            &EngineEvent::FileFailed {
                path: p,
                error: "x".into(),
            },
        );
        assert_eq!(v["path"], "a\u{fffd}");
    }

    #[test]
    fn progress_has_eta_null_while_estimating() {
        let s = ProgressSnapshot {
            bytes_copied: 5,
            bytes_total: 10,
            ..Default::default()
        };
        let v = progress_json(2.0, "copying", &s, 1.0, 2.0, ProgressFigures::default());
        assert!(v["to_flush"].is_null());
        assert!(v["eta_s"].is_null());
        assert_eq!(v["bytes_total"], 10);
        assert_eq!(v["phase"], "copying");
    }

    #[test]
    fn progress_says_whose_backlog_it_is() {
        use crate::model::BacklogScope;
        let s = ProgressSnapshot::default();
        let fig = |scope| ProgressFigures {
            to_flush: Some(Backlog {
                bytes: 310_000_000,
                scope,
            }),
            ..Default::default()
        };
        let v = progress_json(2.0, "flushing", &s, 0.0, 2.0, fig(BacklogScope::ThisCopy));
        assert_eq!(
            v["to_flush"],
            json!({"bytes": 310_000_000u64, "scope": "this_copy"})
        );
        let v = progress_json(2.0, "flushing", &s, 0.0, 2.0, fig(BacklogScope::System));
        assert_eq!(v["to_flush"]["scope"], "system");
    }
}
