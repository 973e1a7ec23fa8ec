//! The frontend without a terminal UI (`--plain`, `--json`, or stdout not a terminal): a
//! progress line every 2 s (JSON: every interval), each diagnosis the model makes (drops with
//! their causes, writeback and throttling) as it happens, and the summary. Runs the same session
//! (engine, sampler, model, recording) as the TUI. Write errors on stdout are ignored: after an
//! SSH drop the copy must still finish its cleanup.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::oneshot::error::TryRecvError;

use crate::config::Display;
use crate::copy::{
    ConflictAsk, Control, CopyJob, CopyOutcome, EngineEvent, ProgressSnapshot, Stamped,
};
use crate::frontend::arrivals::{Arrival, in_time_order};
use crate::frontend::session::{Session, model_config, summary_of};
use crate::frontend::watch::WatchLines;
use crate::model::{Cause, Event, EventKind, Model, Stats};
use crate::present::format::fmt_event_time;
use crate::present::quote::{file_line, quote, shell_escape};
use crate::report::json;
use crate::report::plain::{PLAIN_LINE_EVERY, Phase, progress_line, verify_line};
use crate::report::prompt::StdinAsk;

fn emit(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn emit_err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Which model events a plain log prints (JSON prints all): the ones that explain the speed.
fn worth_a_line(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Drop(_)
            | EventKind::WritebackStarted { .. }
            | EventKind::DirtyThrottleZone { .. }
            | EventKind::FlushDone { .. }
            | EventKind::Note { .. }
            | EventKind::Phase { .. }
    )
}

/// `-v`: cp's "'SOURCE' -> 'DEST'" for a finished entry, its destination found from the
/// (source root, destination root) pairs.
fn verbose_line(roots: &[(PathBuf, PathBuf)], path: &Path) -> Option<String> {
    let dest = roots.iter().find_map(|(src, dst)| {
        let rest = path.strip_prefix(src).ok()?;
        Some(if rest.as_os_str().is_empty() {
            dst.clone()
        } else {
            dst.join(rest)
        })
    })?;
    Some(format!("{} -> {}", quote(path), quote(&dest)))
}

pub(crate) struct Printer {
    json: bool,
    /// The display is ASCII (`--ascii`, or a non-UTF-8 locale): the model's own glyphs in
    /// its lines (arrows, middle dots) become their ASCII look-alikes. Set by [`run_session`].
    ascii: bool,
    /// `-v`: the (source, destination) roots; empty without -v.
    verbose: Vec<(PathBuf, PathBuf)>,
    /// `--verify` is on: the copy phase reads every file back too.
    verify: bool,
    /// Drops printed as "txg N was syncing" (their txg had not committed yet): (txg, drop
    /// start). When txg N commits, its size and duration get a line of their own.
    awaiting_commit: Vec<(u64, u64)>,
    /// Sample time of the last provisional line of the drop in progress.
    last_provisional: Option<u64>,
}

impl Printer {
    /// A printer without -v or --verify (watch mode).
    pub(crate) fn new(json: bool) -> Printer {
        Printer {
            json,
            ascii: false,
            verbose: Vec::new(),
            verify: false,
            awaiting_commit: Vec::new(),
            last_provisional: None,
        }
    }

    fn model_events(&mut self, evs: &[Event]) {
        for e in evs {
            if self.json {
                let mut v = serde_json::to_value(e).unwrap_or_else(|_| json!({}));
                if let serde_json::Value::Object(m) = &mut v {
                    m.insert("type".into(), json!("diagnosis"));
                    m.insert("t".into(), json!((e.t_ns as f64 / 1e6).round() / 1e3));
                    m.insert("text".into(), json!(e.describe()));
                }
                emit(&v.to_string());
            } else if worth_a_line(&e.kind) {
                self.human(&format!("[{}] {}", fmt_event_time(e.t_ns), e.describe()));
                self.await_commits(e);
            } else if let Some(line) = self.completed_by(e) {
                self.human(&line);
            }
        }
    }

    /// While a drop lasts: its provisional cause, at most once a second (sample time), until
    /// the final line comes with the drop's end.
    fn provisional(&mut self, model: &Model) {
        let (Some(open), Some(now)) = (model.open_drop(), model.latest().map(|s| s.t_ns)) else {
            self.last_provisional = None;
            return;
        };
        if self
            .last_provisional
            .is_some_and(|t| now < t + 1_000_000_000)
        {
            return;
        }
        self.last_provisional = Some(now);
        if self.json {
            let mut v = serde_json::to_value(&open).unwrap_or_else(|_| json!({}));
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("type".into(), json!("provisional"));
                m.insert("t".into(), json!((now as f64 / 1e6).round() / 1e3));
                m.insert("text".into(), json!(open.describe()));
            }
            emit(&v.to_string());
        } else {
            self.human(&format!(
                "[{}] {} (so far)",
                fmt_event_time(now),
                open.describe()
            ));
        }
    }

    /// A line of the model's own words (no file names), printed as [`Printer::shaped`].
    fn human(&self, line: &str) {
        emit(&self.shaped(line));
    }

    /// ASCII on an ASCII display: a drop's arrow and the budget's middle dots included.
    fn shaped<'a>(&self, line: &'a str) -> std::borrow::Cow<'a, str> {
        if self.ascii {
            crate::present::text::asciify(line).into()
        } else {
            line.into()
        }
    }

    fn await_commits(&mut self, e: &Event) {
        if let EventKind::Drop(d) = &e.kind {
            for c in &d.causes {
                if let Cause::TxgSync {
                    txg, stime_ns: 0, ..
                } = c
                {
                    self.awaiting_commit.push((*txg, e.t_ns));
                }
            }
        }
    }

    /// The commit line of a txg that explained drops printed before it committed.
    fn completed_by(&mut self, e: &Event) -> Option<String> {
        let EventKind::TxgCommitted { txg, .. } = e.kind else {
            return None;
        };
        let starts: Vec<String> = self
            .awaiting_commit
            .iter()
            .filter(|(t, _)| *t == txg)
            .map(|(_, start)| fmt_event_time(*start))
            .collect();
        if starts.is_empty() {
            return None;
        }
        self.awaiting_commit.retain(|(t, _)| *t != txg);
        Some(format!(
            "[{}] {}: the sync behind the drop at {}",
            fmt_event_time(e.t_ns),
            e.describe(),
            starts.join(", ")
        ))
    }

    fn engine_event(&self, t_ns: u64, ev: &EngineEvent) {
        // cp goes on when space is short; so does copyscope here, after saying so.
        if let EngineEvent::LowSpace(low) = ev {
            emit_err(&low.warning());
        }
        if self.json {
            emit(&json::event_json(t_ns as f64 / 1e9, ev).to_string());
            return;
        }
        match ev {
            EngineEvent::FileFailed { path, error } => {
                emit_err(&format!("copyscope: {}", file_line(path, error)))
            }
            EngineEvent::FileSkipped { path, reason } => {
                emit_err(&format!("copyscope: {}", file_line(path, reason)))
            }
            EngineEvent::FileChanged { path, detail } => {
                emit_err(&format!("copyscope: {}", file_line(path, detail)))
            }
            EngineEvent::FileDone { path, .. } | EngineEvent::DirCreated { path }
                if !self.verbose.is_empty() =>
            {
                if let Some(line) = verbose_line(&self.verbose, path) {
                    emit(&line);
                }
            }
            EngineEvent::Fatal { error } => emit_err(&format!("copyscope: {error}")),
            _ => {}
        }
    }
}

/// Runs a planned copy with plain or JSON output and returns its outcome. The caller installs
/// signal handlers on `control` (see [`crate::copy::install_signal_handlers`]).
pub fn run_copy(
    d: &Display,
    job: CopyJob,
    sources: Vec<String>,
    dest: String,
    control: Arc<Control>,
    ask: Option<Arc<StdinAsk>>,
    metrics: Option<crate::frontend::metrics::MetricsEndpoint>,
) -> CopyOutcome {
    let verbose = if d.verbose && !d.json {
        job.roots
            .iter()
            .map(|r| (r.source.clone(), r.dest.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let p = Printer {
        json: d.json,
        ascii: false,
        verbose,
        verify: false,
        awaiting_commit: Vec::new(),
        last_provisional: None,
    };
    let asking = ask.as_ref().map(|a| a.asking.clone());
    let ask = ask.map(|a| a as Arc<dyn ConflictAsk>);
    let mut sess = Session::start(d, job, (sources, dest), control, ask, false);
    sess.metrics = metrics;
    run_session(d, sess, p, asking, None)
}

/// Runs a started session (a copy, or a watch when `watch` says what is watched) to its end
/// with plain or JSON output; returns the outcome.
pub(crate) fn run_session(
    d: &Display,
    mut sess: Session,
    mut p: Printer,
    asking: Option<Arc<std::sync::atomic::AtomicBool>>,
    watch: Option<&WatchLines>,
) -> CopyOutcome {
    p.ascii = d.ascii && !d.json;
    let mut model = Model::new(model_config(d), sess.env.clone());
    let period = if d.json { d.interval } else { PLAIN_LINE_EVERY };
    let mut next = Instant::now() + period;
    let mut phase = Phase::Copying;
    let mut snap = ProgressSnapshot::default();
    publish(&sess, &model);
    // Sleeps until the engine ends, a sample arrives or the next line is due: the end is
    // noticed at once, and the loop wakes about once per sample. It polled every 20 ms, and
    // on 2 busy cores those wake-ups took the CPU from the copy thread 505 times in 1.4 s of a
    // cached 2 GiB copy (perf sched; cp: 47). Engine events wait for the next wake (at most a
    // sample interval): a tree's two events per file would otherwise wake it per file.
    let waiter = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .ok();
    let mut ended = None;
    let mut woke: Option<Arrival> = None;
    let mut shown: Option<u64> = None;
    let mut samples_open = true;
    let outcome = loop {
        let finished = ended.take().or_else(|| match sess.done.try_recv() {
            Ok(o) => Some(o),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Closed) => Some(CopyOutcome::crashed("the copy engine vanished")),
        });
        if drain(
            &mut sess,
            &mut model,
            &mut p,
            &mut phase,
            &mut snap,
            woke.take(),
        ) {
            publish(&sess, &model);
        }
        if let Some(o) = finished {
            break o;
        }
        let now = Instant::now();
        let quiet = asking.as_ref().is_some_and(|a| a.load(Ordering::SeqCst));
        // A line shows a sample it has not shown yet: one woken by the clock just before the
        // sample due at the same moment would repeat the last figures. The first sample is
        // the baseline (rates, `net` among them, need a second), so lines start after it.
        let newest = model.latest().map(|s| s.t_ns);
        if shown.is_none() {
            shown = newest;
        }
        if now >= next && !quiet && newest > shown {
            shown = newest;
            let st = model.stats();
            let elapsed = now.duration_since(sess.start);
            if d.json {
                let cur = sess.progress.current();
                let eta = model.eta_secs(true).filter(|_| watch.is_none());
                let v = json::progress_json(
                    elapsed.as_secs_f64(),
                    watch.map_or(phase.as_str(), |_| "watching"),
                    &snap,
                    st.now_bps,
                    st.avg_bps,
                    json::ProgressFigures {
                        eta_secs: eta,
                        current: cur.as_ref(),
                        to_flush: model.flush_backlog().filter(|_| watch.is_none()),
                    },
                );
                emit(&with_net(v, watch, &st).to_string());
            } else if let Some(w) = watch {
                let cur = sess.progress.current();
                emit(&w.progress_line(
                    elapsed,
                    &snap,
                    cur.as_ref(),
                    (st.now_bps, st.avg_bps),
                    st.net.as_ref(),
                    d.binary,
                ));
            } else if phase == Phase::CopyVerify {
                let verified = sess.progress.bytes_verified.load(Ordering::Relaxed);
                emit(&verify_line(elapsed, &snap, verified, d.binary));
            } else {
                emit(&progress_line(
                    elapsed,
                    phase,
                    &snap,
                    crate::report::plain::LineFigures::of(&model),
                    d.binary,
                ));
            }
            while next <= now {
                next += period;
            }
        }
        match &waiter {
            Some(rt) => {
                // With the line due and a question open (lines wait for the answer), a pause
                // rather than a spin.
                let until = match next.saturating_duration_since(Instant::now()) {
                    Duration::ZERO => Duration::from_millis(100),
                    d => d,
                };
                let (done, samples) = (&mut sess.done, &mut sess.samples);
                rt.block_on(async {
                    tokio::select! {
                        r = done => ended = Some(
                            r.unwrap_or_else(|_| CopyOutcome::crashed("the copy engine vanished")),
                        ),
                        s = samples.recv(), if samples_open => match s {
                            Some(s) => woke = Some(Arrival::Sample(Box::new(s))),
                            None => samples_open = false,
                        },
                        _ = tokio::time::sleep(until) => {}
                    }
                });
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    // Wait (briefly) for a sample that shows the engine's final counters, so the model, the
    // summary and the recording end on the last byte.
    let last = sess.progress.snapshot();
    let deadline = Instant::now() + crate::frontend::tui::FINAL_SAMPLE_WAIT;
    while (snap.bytes_copied < last.bytes_copied || snap.files_done < last.files_done)
        && Instant::now() < deadline
    {
        // Short: the sampler was asked for this sample when the engine ended.
        std::thread::sleep(Duration::from_millis(2));
        drain(&mut sess, &mut model, &mut p, &mut phase, &mut snap, None);
    }
    sess.sampler.stop();
    drain(&mut sess, &mut model, &mut p, &mut phase, &mut snap, None);
    finish_model(&mut sess, &mut model, &mut p);
    publish(&sess, &model);
    let summary = summary_of(&outcome, &model);
    let Session {
        recorder,
        env,
        header,
        ..
    } = sess;
    let rec_err = recorder.finish(&summary);
    // --screenshot DIR: the pictures of the run, as the TUI writes them at the end (plain and
    // JSON runs wrote nothing before, silently).
    if let Some(dir) = &d.screenshot {
        let data = crate::report::export::ChartData::from_model(&model, &header, Some(&summary));
        match crate::frontend::live::screenshot_to(&data, &header, Some(dir), d.ascii) {
            Ok(paths) if !d.json => {
                let names: Vec<String> =
                    paths.iter().map(|p| shell_escape(p).into_owned()).collect();
                emit_err(&format!("screenshot: {}", names.join(", ")));
            }
            Ok(_) => {}
            Err(e) => emit_err(&format!("copyscope: screenshot failed: {e}")),
        }
    }
    if d.json {
        let st = model.stats();
        let mut v = json::summary_json(&outcome, &st);
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("notes".into(), json!(env.notes));
            m.insert("budget".into(), json::budget_json(model.budget()));
            m.insert("evidence".into(), json!(model.evidence()));
            m.insert("verdict".into(), json!(model.verdict()));
        }
        emit(&with_net(v, watch, &st).to_string());
    } else {
        let st = model.stats();
        let mut text = match watch {
            Some(w) => {
                let mut t = w.summary_text(&outcome, d.binary);
                t.push_str(&crate::report::plain::speeds_text(
                    &st,
                    "durable: n/a (watch)",
                    d.binary,
                ));
                t
            }
            None => crate::report::plain::summary_text_as(
                &outcome,
                Some(&st),
                d.binary,
                crate::report::plain::reads(header.bench.as_deref()),
            ),
        };
        let bar = model.budget().text_bar(40);
        if !bar.is_empty() {
            text.push_str(&format!(
                "  time: {bar}
"
            ));
        }
        text.push_str(&format!(
            "  verdict: {}
",
            model.verdict().text
        ));
        if let Some(line) = crate::report::summary::evidence_line(&model) {
            text.push_str(&format!("  {line}\n"));
        }
        for n in &env.notes {
            text.push_str(&format!("  note: {n}\n"));
        }
        if d.ascii {
            // No file names in it, only the model's words, whose glyphs (the time legend's and
            // the verdict's middle dots, a drop's arrow) a non-UTF-8 terminal cannot show.
            text = crate::present::text::asciify(&text);
        }
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }
    if let Some(path) = &d.record {
        match rec_err {
            None if !d.json => emit(&format!("recording: {}", shell_escape(path))),
            None => {}
            Some(e) => emit_err(&format!("copyscope: recording {}", file_line(path, &e))),
        }
    }
    outcome
}

/// `watch --net`: a JSON object with the model's receive figures as its `net` member.
fn with_net(mut v: serde_json::Value, watch: Option<&WatchLines>, st: &Stats) -> serde_json::Value {
    if let (serde_json::Value::Object(m), Some(n)) = (&mut v, &st.net) {
        let iface = watch.and_then(|w| w.target.net.as_deref());
        m.insert("net".into(), json::net_json(iface, n));
    }
    v
}

/// `--metrics`: hands the endpoint the model's figures.
fn publish(sess: &Session, model: &Model) {
    if let Some(m) = &sess.metrics {
        m.publish(model);
    }
}

/// Takes every queued sample and engine event through the recording, the model and the
/// printer; true when there was any.
fn drain(
    sess: &mut Session,
    model: &mut Model,
    p: &mut Printer,
    phase: &mut Phase,
    snap: &mut ProgressSnapshot,
    first: Option<Arrival>,
) -> bool {
    let arrivals = in_time_order(first, &mut sess.samples, &mut sess.engine_events);
    for a in &arrivals {
        match a {
            Arrival::Sample(s) => {
                sess.recorder.sample(s);
                *snap = s.engine;
                let evs = model.apply(s);
                sess.recorder.events(&evs);
                p.model_events(&evs);
                p.provisional(model);
            }
            Arrival::Engine(Stamped { t_ns, event }) => {
                engine_event(sess, model, p, phase, (*t_ns, event))
            }
        }
    }
    !arrivals.is_empty()
}

/// One engine event, at the time the engine sent it, through the recording, the run's
/// phase, the printer and the model.
fn engine_event(
    sess: &mut Session,
    model: &mut Model,
    p: &mut Printer,
    phase: &mut Phase,
    (t, ev): (u64, &EngineEvent),
) {
    sess.recorder.engine_event(t, ev);
    match ev {
        EngineEvent::Paused => *phase = Phase::Paused,
        // --verify reads each file back right after writing it: copying and verifying are
        // one phase, announced at the start.
        EngineEvent::VerifyStarted => {
            p.verify = true;
            *phase = Phase::CopyVerify;
        }
        EngineEvent::Resumed if p.verify => *phase = Phase::CopyVerify,
        EngineEvent::Resumed => *phase = Phase::Copying,
        EngineEvent::FlushStarted => *phase = Phase::Flushing,
        EngineEvent::FlushDone => *phase = Phase::Done,
        _ => {}
    }
    p.engine_event(t, ev);
    let evs = model.engine_events(t, ev);
    sess.recorder.events(&evs);
    p.model_events(&evs);
}

/// Closes the model (an open drop at the end is still reported).
fn finish_model(sess: &mut Session, model: &mut Model, p: &mut Printer) {
    let evs = model.finish(model.latest().map_or(0, |s| s.t_ns));
    sess.recorder.events(&evs);
    p.model_events(&evs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DropInfo;

    fn drop_citing(t_ns: u64, txg: u64, stime_ns: u64) -> Event {
        Event {
            t_ns,
            kind: EventKind::Drop(DropInfo {
                end_ns: t_ns + 700_000_000,
                reference_bps: 82e6,
                min_bps: 28e6,
                bytes_lost: 26e6,
                causes: vec![Cause::TxgSync {
                    txg,
                    ndirty: 0,
                    stime_ns,
                    dirty_pct_of_max: Some(29.0),
                    syncs: None,
                }],
                held_exact_ns: None,
            }),
        }
    }

    fn commit(t_ns: u64, txg: u64) -> Event {
        Event {
            t_ns,
            kind: EventKind::TxgCommitted {
                txg,
                ndirty: 82_641_408,
                nwritten: 82_116_608,
                stime_ns: 2_249_212_880,
            },
        }
    }

    #[test]
    fn on_an_ascii_display_a_drops_line_is_ascii() {
        let e = drop_citing(1_846_126_690, 12, 0);
        let line = format!("[{}] {}", fmt_event_time(e.t_ns), e.describe());
        assert!(!line.is_ascii(), "the model's line has its arrow: {line}");
        let mut p = Printer::new(false);
        assert_eq!(p.shaped(&line), line);
        p.ascii = true;
        let shaped = p.shaped(&line);
        assert!(shaped.is_ascii() && shaped.contains("->"), "{shaped}");
    }

    #[test]
    fn a_drop_printed_before_its_txg_committed_gets_the_commit_line() {
        let mut p = Printer {
            json: false,
            ascii: false,
            verbose: Vec::new(),
            verify: false,
            awaiting_commit: Vec::new(),
            last_provisional: None,
        };
        p.await_commits(&drop_citing(1_846_126_690, 12, 0));
        assert_eq!(p.completed_by(&commit(2_000_000_000, 11)), None);
        assert_eq!(
            p.completed_by(&commit(3_145_883_140, 12)).as_deref(),
            Some(
                "[00:03.1] txg 12 committed 82.6 MB in 2.2 s (36.5 MB/s to disk): \
                 the sync behind the drop at 00:01.8"
            )
        );
        // Said once.
        assert_eq!(p.completed_by(&commit(3_145_883_140, 12)), None);
        // A drop that already had the size waits for nothing.
        p.await_commits(&drop_citing(5_846_125_330, 13, 3_406_266_360));
        assert_eq!(p.completed_by(&commit(6_566_542_690, 13)), None);
    }
}
