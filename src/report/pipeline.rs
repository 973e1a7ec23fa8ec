//! The texts of `watch --pipeline`: a line per stage under each `--plain` progress line, the
//! `pipeline` object of the `--json` progress lines and summary, and the summary's table of
//! stages — all from the model's [`PipelineView`].

use crate::model::pipeline::{Limiter, PipelineView, StageFigures, state_words};
use crate::present::format::{fmt_pct, fmt_rate_with};
use crate::present::quote::{command_line, shell_escape};
use crate::sample::pipeline::StageWait;

/// A stage's command line as shown: each argument shell-quoted, shortened in the middle.
pub const ARGS_WIDTH: usize = 40;

/// "head -c 200M /dev/zero", at most `width` characters.
pub fn args_text(s: &StageFigures, width: usize) -> String {
    command_line(&s.args, width)
}

/// "blocked on output 97 %, busy 3 %": the states of 1 % or more, the largest first.
pub fn shares_text(s: &StageFigures) -> String {
    if s.shares.measured_ns == 0 {
        return "state n/a".into();
    }
    let mut v: Vec<(StageWait, f64)> = StageWait::ALL
        .into_iter()
        .map(|w| (w, s.shares.get(w)))
        .filter(|(_, x)| *x >= 0.01)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let parts: Vec<String> = v
        .iter()
        .map(|(w, x)| format!("{} {}", state_words(*w), fmt_pct(x * 100.0)))
        .collect();
    parts.join(", ")
}

/// "  stage 1/2 cat (pid 4242) cat /dev/zero: read 0 B/s, wrote 3.28 MB/s; blocked on
/// output 97 %, busy 3 %" — one per stage, the limiting one marked `*`.
pub fn stage_lines(v: &PipelineView, binary: bool) -> Vec<String> {
    let n = v.stages.len();
    let limiting = match v.limiter {
        Limiter::Stage { index, .. } => Some(index),
        Limiter::Unknown { .. } => None,
    };
    (v.stages.iter().enumerate())
        .map(|(i, s)| {
            let mark = if limiting == Some(i) { '*' } else { ' ' };
            let ended = if s.alive { "" } else { " (ended)" };
            let pipe = (s.shares.pipe_full_words()).map_or_else(String::new, |p| format!("; {p}"));
            format!(
                "{mark} stage {}/{n} {} (pid {}){ended} {}: read {}, wrote {}; {}{pipe}",
                i + 1,
                shell_escape(&s.comm),
                s.pid,
                args_text(s, ARGS_WIDTH),
                fmt_rate_with(s.read_bps, binary),
                fmt_rate_with(s.written_bps, binary),
                shares_text(s)
            )
        })
        .collect()
}

/// "limited by 'perl' (pid 4242), asleep 97 %" or "limited by unknown: …".
pub fn limiter_line(v: &PipelineView) -> String {
    format!("limited by {}", v.limiter_words())
}

/// The `pipeline` object: each stage's figures (shares in percent) and the limiting stage.
pub fn pipeline_json(v: &PipelineView) -> serde_json::Value {
    let stages: Vec<serde_json::Value> = (v.stages.iter())
        .map(|s| {
            let shares: serde_json::Map<String, serde_json::Value> = StageWait::ALL
                .into_iter()
                .map(|w| {
                    let key = serde_json::to_value(w)
                        .ok()
                        .and_then(|k| k.as_str().map(str::to_string))
                        .unwrap_or_default();
                    let pct = (s.shares.get(w) * 1000.0).round() / 10.0;
                    (key, serde_json::json!(pct))
                })
                .collect();
            serde_json::json!({
                "pid": s.pid,
                "pids": s.pids,
                "comm": s.comm,
                "args": s.args,
                "alive": s.alive,
                "read_bps": s.read_bps.round(),
                "written_bps": s.written_bps.round(),
                "state_pct": shares,
                "measured_s": s.shares.measured_ns as f64 / 1e9,
                "ended_s": s.shares.ended_ns as f64 / 1e9,
                "now": s.now,
                "held_in": s.held_in,
                "output_pipe": s.output_pipe,
                "pipe_full_pct": s.shares.pipe_full.map(|f| (f * 1000.0).round() / 10.0),
            })
        })
        .collect();
    let limiting = match v.limiter {
        Limiter::Stage { index, by } => serde_json::json!({
            "stage": index + 1,
            "pid": v.stages[index].pid,
            "comm": v.stages[index].comm,
            "by": by,
        }),
        Limiter::Unknown { why } => serde_json::json!({ "unknown": why }),
    };
    serde_json::json!({
        "stages": stages,
        "limiting": limiting,
        "span_s": v.span_ns as f64 / 1e9,
    })
}

/// The plain summary's part: "pipeline (2 stages), over the run:" and the stage lines.
pub fn stages_table(v: &PipelineView, binary: bool) -> String {
    let n = v.stages.len();
    let mut s = format!(
        "pipeline ({n} stage{}), over the run ({}):\n",
        if n == 1 { "" } else { "s" },
        limiter_line(v)
    );
    for l in stage_lines(v, binary) {
        s.push_str(&l);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pipeline::{PipelineTracker, Unclear};
    use crate::sample::pipeline::{PipelineSample, StageSample};

    fn stage(
        pid: u32,
        comm: &str,
        args: &[&str],
        read: u64,
        written: u64,
        wait: StageWait,
    ) -> StageSample {
        StageSample {
            pid,
            comm: comm.into(),
            args: args.iter().map(|a| (*a).to_string()).collect(),
            read,
            written,
            wait: Some(wait),
            alive: true,
            ..Default::default()
        }
    }

    #[test]
    fn lines_name_each_stage_and_mark_the_limiting_one() {
        let mut t = PipelineTracker::default();
        for i in 1..=20u64 {
            let p = PipelineSample {
                lone: None,
                stages: vec![
                    stage(
                        11,
                        "cat",
                        &["cat", "/dev/zero"],
                        0,
                        i * 1_000_000,
                        StageWait::Output,
                    ),
                    stage(
                        12,
                        "perl",
                        &["perl", "-e", "slow it down"],
                        i * 1_000_000,
                        0,
                        StageWait::Other,
                    ),
                ],
            };
            t.observe((i - 1) * 100_000_000, i * 100_000_000, &p);
        }
        let v = t.window().unwrap();
        let lines = stage_lines(&v, false);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("  stage 1/2 cat (pid 11) cat /dev/zero: read 0 MB/s, wrote 10.0 MB/s; blocked on output 100 %"), "{}", lines[0]);
        assert!(
            lines[1]
                .starts_with("* stage 2/2 perl (pid 12) perl -e 'slow it down': read 10.0 MB/s"),
            "{}",
            lines[1]
        );
        assert_eq!(limiter_line(&v), "limited by 'perl' (pid 12), asleep 100 %");
        let j = pipeline_json(&v);
        assert_eq!(j["limiting"]["pid"], 12);
        assert_eq!(j["stages"][0]["state_pct"]["output"], 100.0);
        assert_eq!(j["stages"][1]["now"], "other");
        assert!(
            stages_table(&v, false)
                .starts_with("pipeline (2 stages), over the run (limited by 'perl'")
        );
        let one = PipelineView {
            stages: v.stages[..1].to_vec(),
            limiter: Limiter::Unknown {
                why: Unclear::Several,
            },
            span_ns: 0,
        };
        assert_eq!(pipeline_json(&one)["limiting"]["unknown"], "several");
    }
}
