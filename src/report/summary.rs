//! The summary a run ends with, in each face: after the TUI leaves the alternate screen (and
//! `replay --plain`) the text chart, the drops with their causes and the copy figures, so the
//! result stays in the scrollback; after a `--plain` run its figures, time budget, verdict
//! and notes; after a `--json` run one summary object. Also the lines that say where the
//! recording went.

use std::path::Path;

use serde_json::{Value, json};

use crate::copy::CopyOutcome;
use crate::model::whatif::PaceComparison;
use crate::model::{EventKind, Model};
use crate::present::format::fmt_event_time;
use crate::present::format::fmt_rate_with;
use crate::present::quote::{file_line, shell_escape};
use crate::present::text::{asciify, wrap_words};
use crate::present::units::Units;
use crate::report::export::{ChartData, render_text};
use crate::report::plain::{Reads, reads, speeds_text, summary_text_as};
use crate::report::recording::Header;
use crate::sample::EvidenceLevel;

/// What the summary of a finished run (a copy, a bench phase or a watch) reads.
#[derive(Clone, Copy)]
pub struct RunEnd<'a> {
    pub outcome: &'a CopyOutcome,
    /// The model after its last sample, closed.
    pub model: &'a Model,
    pub header: &'a Header,
    /// The environment's notes as the run ended (the demo adds its own to the probed ones).
    pub notes: &'a [String],
    /// `--pace auto`: the run against its predicted unpaced twin, or why there is none.
    pub pace_check: Option<&'a Result<PaceComparison, String>>,
}

/// Most drops listed one by one; the rest are counted.
const MAX_DROPS_LISTED: usize = 12;

/// `evidence: exact (kernel trace) → sampled stacks → [wchan/stat] → counters only`: the
/// fallback chain with the level the run's time rests on marked; `None` for a recording that
/// does not say.
pub fn evidence_line(model: &Model) -> Option<String> {
    model
        .evidence()
        .map(|l| format!("evidence: {}", EvidenceLevel::chain(l)))
}

/// `finish time said at 25 % (00:06): on disk at 00:42; it was 00:44, 2.0 s later (5 % of
/// the time left)`: how the ETA compared with the real end, once the run ended.
pub fn eta_check_line(model: &Model) -> Option<String> {
    model
        .eta_check()
        .filter(|c| c.real.is_some())
        .map(|c| c.describe())
}

/// The after-exit summary, at most `width` columns wide (the text chart stays within 40–100).
/// `outcome` is the engine's result (None for a replay).
pub fn final_summary(
    data: &ChartData,
    model: &Model,
    ascii: bool,
    units: Units,
    outcome: Option<&CopyOutcome>,
    width: usize,
) -> String {
    final_summary_as(data, model, ascii, units, outcome, width, Reads::No)
}

/// [`final_summary`]; `reads`: a bench phase that reads (see [`crate::report::plain::reads`]).
pub fn final_summary_as(
    data: &ChartData,
    model: &Model,
    ascii: bool,
    units: Units,
    outcome: Option<&CopyOutcome>,
    width: usize,
    reads: Reads,
) -> String {
    let mut s = chart_and_drops(data, model, ascii, width);
    match outcome {
        Some(o) => s.push_str(&summary_text_as(
            o,
            Some(&model.stats()),
            units == Units::Binary,
            reads,
        )),
        // A watch has no files and no flush of its own: its figures are the intake's.
        None if data.watch.is_some() => {
            s.push_str(&crate::report::plain::speeds_text_as(
                &model.stats(),
                watch_speed_words(model),
                "durable: n/a (watch)",
                units == Units::Binary,
            ));
        }
        // A pipe has no files and never syncs.
        None if model.env().pipe.is_some() => {
            s.push_str(&pipe_speeds(&model.stats(), units == Units::Binary));
        }
        None => {
            let st = &data.stats;
            s.push_str(&format!(
                "recorded: {} in {}, {} failed\n",
                units.size(st.bytes),
                crate::present::format::fmt_files(st.files),
                st.failed
            ));
            let ms = model.stats();
            let durable = match ms.durable_bps {
                Some(d) => format!("durable {}", fmt_rate_with(d, units == Units::Binary)),
                None => "durable: not reached".to_string(),
            };
            s.push_str(&speeds_text(&ms, &durable, units == Units::Binary));
        }
    }
    s
}

/// The text chart, the drops with their causes and the evidence line: how every after-exit
/// summary begins.
fn chart_and_drops(data: &ChartData, model: &Model, ascii: bool, width: usize) -> String {
    let mut s = render_text(data, width.min(100), ascii);
    let drops: Vec<_> = model
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Drop(_)))
        .collect();
    if !drops.is_empty() {
        s.push_str(&format!("drops ({}):\n", drops.len()));
        // "  00:31.2  " then the diagnosis, wrapped under itself.
        let indent = 11;
        for e in drops.iter().take(MAX_DROPS_LISTED) {
            let text = if ascii {
                asciify(&e.describe())
            } else {
                e.describe()
            };
            for (i, line) in wrap_words(&text, width.saturating_sub(indent).max(20))
                .iter()
                .enumerate()
            {
                if i == 0 {
                    s.push_str(&format!("  {}  {line}\n", fmt_event_time(e.t_ns)));
                } else {
                    s.push_str(&format!("{}{line}\n", " ".repeat(indent)));
                }
            }
        }
        if drops.len() > MAX_DROPS_LISTED {
            s.push_str(&format!(
                "  ... and {} more (copyscope export / replay show all)\n",
                drops.len() - MAX_DROPS_LISTED
            ));
        }
    }
    for line in evidence_line(model)
        .into_iter()
        .chain(eta_check_line(model))
    {
        s.push_str(&if ascii { asciify(&line) } else { line });
        s.push('\n');
    }
    s
}

/// The TUI's after-exit summary of a finished run, `width` columns wide (every longer line
/// wrapped at its spaces): a watch's ends with what it watched instead of a copy's figures.
pub fn tui_summary(end: &RunEnd, data: &ChartData, looks: (bool, Units), width: usize) -> String {
    crate::present::text::fit_lines(&tui_summary_lines(end, data, looks, width), width)
}

fn tui_summary_lines(
    end: &RunEnd,
    data: &ChartData,
    (ascii, units): (bool, Units),
    width: usize,
) -> String {
    if let Some(ends) = &end.header.environment.pipe {
        let mut s = chart_and_drops(data, end.model, ascii, width);
        s.push_str(&pipe_figures(end, ends, units == Units::Binary));
        return s;
    }
    let watch = end.header.watch.as_ref();
    let mut s = final_summary_as(
        data,
        end.model,
        ascii,
        units,
        watch.is_none().then_some(end.outcome),
        width,
        reads(
            end.header.bench.as_deref(),
            end.model.env().fs_type.as_deref(),
        ),
    );
    if let Some(w) = watch {
        s.push_str(&crate::report::watch::summary_line(
            w,
            end.outcome,
            units == Units::Binary,
        ));
    }
    if let Some(c) = end.pace_check {
        s.push_str(&pace_check_text(c, ascii));
    }
    s
}

/// The pace comparison's line ([`crate::report::whatif::pace_check_line`]) as an after-exit
/// summary ends with it, ASCII where the terminal needs it.
pub fn pace_check_text(check: &Result<PaceComparison, String>, ascii: bool) -> String {
    let line = crate::report::whatif::pace_check_line(check);
    let mut t = if ascii { asciify(&line) } else { line };
    t.push('\n');
    t
}

/// What a watch's average is of: what it saw written (its intake), or what went through the
/// pipeline, not necessarily into a cache.
fn watch_speed_words(model: &crate::model::Model) -> &'static str {
    if model.pipeline_run().is_some() {
        "speed through the pipeline"
    } else {
        "intake speed"
    }
}

/// The summary of a `--plain` run: its figures (a watch's: what it watched and the intake's
/// speeds), the writer's time budget, the verdict, the evidence level and the notes.
pub fn plain_summary(end: &RunEnd, binary: bool, ascii: bool) -> String {
    let (model, outcome) = (end.model, end.outcome);
    let st = model.stats();
    let mut text = match (&end.header.watch, &end.header.environment.pipe) {
        (Some(w), _) => {
            let mut t = crate::report::watch::summary_line(w, outcome, binary);
            t.push_str(&crate::report::plain::speeds_text_as(
                &st,
                watch_speed_words(model),
                "durable: n/a (watch)",
                binary,
            ));
            t
        }
        (None, Some(ends)) => pipe_figures(end, ends, binary),
        (None, None) => summary_text_as(
            outcome,
            Some(&st),
            binary,
            reads(
                end.header.bench.as_deref(),
                end.model.env().fs_type.as_deref(),
            ),
        ),
    };
    let bar = model.budget().text_bar(40);
    if !bar.is_empty() {
        text.push_str(&format!("  time: {bar}\n"));
    }
    text.push_str(&format!("  verdict: {}\n", model.verdict().text));
    for line in evidence_line(model)
        .into_iter()
        .chain(eta_check_line(model))
        .chain(end.pace_check.map(crate::report::whatif::pace_check_line))
    {
        text.push_str(&format!("  {line}\n"));
    }
    for n in end.notes {
        text.push_str(&format!("  note: {n}\n"));
    }
    if ascii {
        // No file names in it, only the model's words, whose glyphs (the time legend's and
        // the verdict's middle dots, a drop's arrow) a non-UTF-8 terminal cannot show.
        text = asciify(&text);
    }
    text
}

/// A pipe's first line and its rates.
fn pipe_figures(end: &RunEnd, ends: &crate::sample::PipeEnds, binary: bool) -> String {
    let st = end.model.stats();
    let o = end.outcome;
    let secs = if st.bytes > 0 {
        st.copy_secs
    } else {
        o.copy_secs
    };
    let mut s = crate::report::pipe::summary_line(ends, o, secs, binary);
    s.push_str(&pipe_speeds(&st, binary));
    s
}

/// A pipe's rates: no cache between, nothing made durable.
fn pipe_speeds(st: &crate::model::Stats, binary: bool) -> String {
    crate::report::plain::speeds_text_as(st, "rate", crate::report::pipe::NOT_DURABLE, binary)
}

/// The summary object of a `--json` run: the engine's counts and the model's figures, with
/// the notes, the time budget, the evidence level and the verdict (a watch's `net` too).
pub fn json_summary(end: &RunEnd) -> Value {
    let st = end.model.stats();
    let mut v = crate::report::json::summary_json(end.outcome, &st);
    if let Value::Object(m) = &mut v {
        m.insert("notes".into(), json!(end.notes));
        m.insert(
            "budget".into(),
            crate::report::json::budget_json(end.model.budget()),
        );
        m.insert("evidence".into(), json!(end.model.evidence()));
        m.insert("verdict".into(), json!(end.model.verdict()));
        if let Some(c) = end.model.eta_check() {
            m.insert("eta_check".into(), crate::report::json::eta_check_json(&c));
        }
        if let Some(c) = end.pace_check {
            m.insert(
                "pace_check".into(),
                crate::report::whatif::pace_check_json(c),
            );
        }
    }
    crate::report::json::with_net(v, end.header.watch.as_ref(), &st)
}

/// "recording: PATH" once `--record PATH` is closed, or why it failed (for stderr).
pub fn recording_line(path: &Path, error: Option<&str>) -> Result<String, String> {
    match error {
        None => Ok(format!("recording: {}", shell_escape(path))),
        Some(e) => Err(format!("copyscope: recording {}", file_line(path, e))),
    }
}

/// `replay --json`: each of the model's events (`"type": "diagnosis"`, as a live `--json`
/// copy prints them), then one `"type": "summary"` object with the model's figures, the same
/// budget and verdict a live `--json` run ends with, and the recording's own counts.
/// A paced recording's summary also holds `pace_check`, as the live run's did.
pub fn replay_json(
    run: &crate::report::recording::Replayed,
    path: &Path,
    pace_check: Option<&Result<PaceComparison, String>>,
) -> String {
    let model = &run.model;
    let mut out = String::new();
    for e in model.events() {
        let v = crate::report::json::finding_json(e, "diagnosis", e.t_ns, e.describe());
        out.push_str(&v.to_string());
        out.push('\n');
    }
    let mut summary = crate::report::json::stats_json(&model.stats());
    if let Value::Object(m) = &mut summary {
        m.insert("type".into(), "summary".into());
        m.insert(
            "recording".into(),
            path.to_string_lossy().into_owned().into(),
        );
        if let Some(n) = &model.stats().net {
            let iface = run.header.watch.as_ref().and_then(|w| w.net.as_deref());
            m.insert("net".into(), crate::report::json::net_json(iface, n));
        }
        m.insert(
            "budget".into(),
            crate::report::json::budget_json(model.budget()),
        );
        m.insert("verdict".into(), json!(model.verdict()));
        if let Some(c) = model.eta_check() {
            m.insert("eta_check".into(), crate::report::json::eta_check_json(&c));
        }
        if let Some(c) = pace_check {
            m.insert(
                "pace_check".into(),
                crate::report::whatif::pace_check_json(c),
            );
        }
        if let Some(s) = &run.summary {
            m.insert("files_copied".into(), s.files.into());
            m.insert("files_failed".into(), s.failed.into());
            m.insert("exit_code".into(), s.exit_code.into());
        }
    }
    out.push_str(&summary.to_string());
    out.push('\n');
    out
}
