//! The frontend without a terminal UI (`--plain`, `--json`, or stdout not a terminal): a
//! progress line every 2 s (JSON: every interval), each diagnosis the model makes (drops with
//! their causes, writeback and throttling) as it happens, and the summary. Runs the same session
//! (engine, sampler, model, recording) as the TUI. Write errors on stdout are ignored: after an
//! SSH drop the copy must still finish its cleanup.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::oneshot::error::TryRecvError;

use crate::config::Display;
use crate::copy::{
    ConflictAsk, Control, CopyJob, CopyOutcome, EngineEvent, ProgressSnapshot, Stamped,
};
use crate::frontend::session::arrivals::{Arrival, Counters};
use crate::frontend::session::{Finished, Recorder, Session, SessionPlan, feed, model_config};
use crate::model::{Cause, Event, EventKind, Model};
use crate::present::format::fmt_event_time;
use crate::present::quote::{file_line, quote};
use crate::report::json;
use crate::report::plain::{PLAIN_LINE_EVERY, Phase, progress_line, verify_line};
use crate::report::prompt::StdinAsk;
use crate::report::screenshot::{join_paths, write_run_screenshots};

/// A line on the faces' stream (stdout; stderr under `copyscope pipe`).
fn emit(line: &str) {
    let mut o = crate::frontend::out::face_out();
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
    /// `copyscope pipe` on a terminal: the progress is one line rewritten in place (`\r`), as
    /// pv's; the width of the line shown now (0: none).
    in_place: Option<Cell<usize>>,
}

/// How often the line rewritten in place changes (pv's default interval).
const IN_PLACE_EVERY: Duration = Duration::from_secs(1);

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
            in_place: None,
        }
    }

    /// The progress as one line rewritten in place (a terminal on stderr under `pipe`).
    pub(crate) fn in_place(self) -> Printer {
        Printer {
            in_place: Some(Cell::new(0)),
            ..self
        }
    }

    /// A progress line: on a line of its own, or over the last one.
    fn progress(&self, line: &str) {
        let Some(shown) = &self.in_place else {
            return emit(line);
        };
        let width = line.chars().count();
        let pad = " ".repeat(shown.get().saturating_sub(width));
        let mut o = crate::frontend::out::face_out();
        let _ = write!(o, "\r{line}{pad}");
        let _ = o.flush();
        shown.set(width);
    }

    /// Ends the line rewritten in place, so what follows starts on a line of its own.
    fn end_line(&self) {
        if let Some(shown) = self.in_place.as_ref().filter(|s| s.get() > 0) {
            let mut o = crate::frontend::out::face_out();
            let _ = write!(o, "\r{}\r", " ".repeat(shown.get()));
            let _ = o.flush();
            shown.set(0);
        }
    }

    fn model_events(&mut self, evs: &[Event]) {
        for e in evs {
            if self.json {
                emit(&json::finding_json(e, "diagnosis", e.t_ns, e.describe()).to_string());
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
        if self.in_place.is_some() && !self.json {
            // The line rewritten in place says it (see `Lines::line`).
            return;
        }
        if self.json {
            emit(&json::finding_json(&open, "provisional", now, open.describe()).to_string());
        } else {
            // Stamped with the drop's start, as its final line will be: the lines stay in time
            // order, and "for 1.3 s" says how far it has gone.
            self.human(&format!(
                "[{}] {} (so far)",
                fmt_event_time(open.t_ns),
                open.describe()
            ));
        }
    }

    /// A line of the model's own words (no file names), printed as [`Printer::shaped`].
    fn human(&self, line: &str) {
        self.end_line();
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
    endpoints: (Vec<String>, String),
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
        verbose,
        ..Printer::new(d.json)
    };
    let asking = ask.as_ref().map(|a| a.asking.clone());
    let ask = ask.map(|a| a as Arc<dyn ConflictAsk>);
    let sess = SessionPlan::copy(d, &job, endpoints, control)
        .recorded(d.record.as_deref(), false)
        .metrics(metrics)
        .start_copy(job, ask);
    run_session(d, sess, p, asking)
}

/// Runs a started session (a copy, a bench phase, or a watch: its header says what is
/// watched) to its end with plain or JSON output; returns the outcome.
pub(crate) fn run_session(
    d: &Display,
    mut sess: Session,
    mut p: Printer,
    asking: Option<Arc<AtomicBool>>,
) -> CopyOutcome {
    p.ascii = d.ascii && !d.json;
    let rt = match crate::frontend::event_loop() {
        Ok(rt) => rt,
        Err(e) => {
            sess.control.cancel();
            emit_err(&format!(
                "copyscope: cannot start the event loop: {}",
                crate::present::quote::said(&e)
            ));
            return CopyOutcome::crashed("no event loop");
        }
    };
    let period = match (d.json, p.in_place.is_some()) {
        (true, _) => d.interval,
        (false, true) => IN_PLACE_EVERY,
        (false, false) => PLAIN_LINE_EVERY,
    };
    let mut lines = Lines {
        model: Model::new(model_config(d), sess.env.clone()),
        p,
        phase: Phase::Copying,
        snap: ProgressSnapshot::default(),
        shown: None,
        period,
        next: Instant::now() + period,
        announced: std::collections::HashSet::new(),
    };
    sess.publish(&lines.model);
    let outcome = rt.block_on(lines.follow(d, &mut sess, asking.as_deref()));
    let last = sess.progress.snapshot();
    let Session {
        arrivals, recorder, ..
    } = &mut sess;
    rt.block_on(arrivals.until_final_sample(&last, |batch| {
        lines.take(recorder, batch);
        Counters {
            bytes: lines.snap.bytes_copied,
            files: lines.snap.files_done,
        }
    }));
    sess.stop_sampling();
    let batch = sess.arrivals.queued(None);
    lines.take(&mut sess.recorder, batch);
    let Lines { model, mut p, .. } = lines;
    let writers = sess.progress.writers();
    let finished = sess.finish(model, outcome);
    p.model_events(&finished.last_events);
    p.end_line();
    print_summary(d, &finished, &writers);
    finished.outcome
}

/// What the plain/JSON face keeps while a run goes: the model, the printer, the run's phase
/// and the counters of the last sample, and when the next progress line is due.
struct Lines {
    model: Model,
    p: Printer,
    phase: Phase,
    snap: ProgressSnapshot,
    /// The newest sample a progress line showed.
    shown: Option<u64>,
    period: Duration,
    next: Instant,
    /// `watch --all`: the writers already announced.
    announced: std::collections::HashSet<u32>,
}

impl Lines {
    /// Follows the run until the engine returns: takes what arrives through the recording,
    /// the model and the printer, and prints a progress line every period. Sleeps until the
    /// engine ends, a sample arrives or the next line is due: the end is noticed at once, and
    /// the loop wakes about once per sample. It polled every 20 ms, and on 2 busy cores those
    /// wake-ups took the CPU from the copy thread 505 times in 1.4 s of a cached 2 GiB copy
    /// (perf sched; cp: 47). Engine events wait for the next wake (at most a sample
    /// interval): a tree's two events per file would otherwise wake it per file.
    async fn follow(
        &mut self,
        d: &Display,
        sess: &mut Session,
        asking: Option<&AtomicBool>,
    ) -> CopyOutcome {
        let vanished = || CopyOutcome::crashed("the copy engine vanished");
        let mut ended = None;
        let mut woke: Option<Arrival> = None;
        let mut samples_open = true;
        loop {
            let finished = ended.take().or_else(|| match sess.done.try_recv() {
                Ok(o) => Some(o),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Closed) => Some(vanished()),
            });
            let batch = sess.arrivals.queued(woke.take());
            if self.take(&mut sess.recorder, batch) {
                sess.publish(&self.model);
            }
            if let Some(o) = finished {
                return o;
            }
            let quiet = asking.is_some_and(|a| a.load(Ordering::SeqCst));
            self.announce_writers(d, sess);
            self.progress_line(d, sess, quiet);
            // With the line due and a question open (lines wait for the answer), a pause
            // rather than a spin.
            let until = match self.next.saturating_duration_since(Instant::now()) {
                Duration::ZERO => Duration::from_millis(100),
                d => d,
            };
            tokio::select! {
                r = &mut sess.done => ended = Some(r.unwrap_or_else(|_| vanished())),
                s = sess.arrivals.samples.recv(), if samples_open => match s {
                    Some(s) => woke = Some(Arrival::Sample(Box::new(s))),
                    None => samples_open = false,
                },
                _ = tokio::time::sleep(until) => {}
            }
        }
    }

    /// `watch --all`: a line for each writer found since the last, once it has a file here
    /// (JSON: the `writers` of the summary say it).
    fn announce_writers(&mut self, d: &Display, sess: &Session) {
        if d.json || !sess.header.watch.as_ref().is_some_and(|w| w.all) {
            return;
        }
        let t = self.model.latest().map_or(0, |s| s.t_ns);
        for w in sess.progress.writers() {
            if w.file.is_some() && self.announced.insert(w.pid) {
                self.p.human(&crate::report::watch::writer_line(t, &w));
            }
        }
    }

    /// Takes a batch of arrivals through the recording, the model and the printer; true when
    /// there was any.
    fn take(&mut self, recorder: &mut Recorder, batch: Vec<Arrival>) -> bool {
        for a in &batch {
            if let Arrival::Engine(Stamped { t_ns, event }) = a {
                self.engine_event(*t_ns, event);
            }
            let evs = feed(recorder, &mut self.model, a);
            self.p.model_events(&evs);
            if let Arrival::Sample(s) = a {
                self.snap = s.engine;
                self.p.provisional(&self.model);
            }
        }
        !batch.is_empty()
    }

    /// An engine event, at the time the engine sent it: the run's phase and the printer.
    fn engine_event(&mut self, t: u64, ev: &EngineEvent) {
        match ev {
            EngineEvent::Paused => self.phase = Phase::Paused,
            // --verify reads each file back right after writing it: copying and verifying
            // are one phase, announced at the start.
            EngineEvent::VerifyStarted => {
                self.p.verify = true;
                self.phase = Phase::CopyVerify;
            }
            EngineEvent::Resumed if self.p.verify => self.phase = Phase::CopyVerify,
            EngineEvent::Resumed => self.phase = Phase::Copying,
            EngineEvent::FlushStarted => self.phase = Phase::Flushing,
            EngineEvent::FlushDone => self.phase = Phase::Done,
            _ => {}
        }
        self.p.engine_event(t, ev);
    }

    /// The progress line, once its period is over and a sample it has not shown came (one
    /// woken by the clock just before the sample due at the same moment would repeat the
    /// last figures); never while a question waits for its answer (`quiet`). The first
    /// sample is the baseline (rates, `net` among them, need a second), so lines start after
    /// it.
    fn progress_line(&mut self, d: &Display, sess: &Session, quiet: bool) {
        let now = Instant::now();
        let newest = self.model.latest().map(|s| s.t_ns);
        if self.shown.is_none() {
            self.shown = newest;
        }
        if now < self.next || quiet || newest <= self.shown {
            return;
        }
        self.shown = newest;
        self.p
            .progress(&self.line(d, sess, now.duration_since(sess.start)));
        while self.next <= now {
            self.next += self.period;
        }
    }

    /// The progress line's text: JSON, a watch's, a verifying copy's or a copy's.
    fn line(&self, d: &Display, sess: &Session, elapsed: Duration) -> String {
        let (model, snap) = (&self.model, &self.snap);
        let st = model.stats();
        let watch = sess.header.watch.as_ref();
        let cur = sess.progress.current();
        if !d.json && sess.env.pipe.is_some() {
            let eta = model.eta_secs(false);
            let rates = (st.now_bps, st.avg_bps);
            let line = crate::report::pipe::progress_line(elapsed, snap, rates, eta, d.binary);
            return match self
                .p
                .in_place
                .is_some()
                .then(|| model.open_drop())
                .flatten()
            {
                // The drop's line comes when it ends; meanwhile the line says what holds it.
                Some(open) => format!("{line}  {}", crate::report::pipe::held_by(&open)),
                None => line,
            };
        }
        if d.json {
            let eta = model.eta_secs(true).filter(|_| watch.is_none());
            let v = json::progress_json(
                elapsed.as_secs_f64(),
                watch.map_or(self.phase.as_str(), |_| "watching"),
                snap,
                st.now_bps,
                st.avg_bps,
                json::ProgressFigures {
                    eta_secs: eta,
                    eta: model.eta().filter(|_| watch.is_none()),
                    current: cur.as_ref(),
                    to_flush: model.flush_backlog().filter(|_| watch.is_none()),
                },
            );
            let mut v = json::with_net(v, watch, &st);
            if let (Some(p), serde_json::Value::Object(m)) = (model.pipeline(), &mut v) {
                m.insert(
                    "pipeline".into(),
                    crate::report::pipeline::pipeline_json(&p),
                );
            }
            v.to_string()
        } else if let Some(w) = watch {
            let line = crate::report::watch::progress_line(
                w,
                elapsed,
                (snap, cur.as_ref()),
                (st.now_bps, st.avg_bps),
                st.net.as_ref(),
                d.binary,
            );
            match model.pipeline() {
                // Each stage on a line of its own under it.
                Some(p) => std::iter::once(format!(
                    "{line}; {}",
                    crate::report::pipeline::limiter_line(&p)
                ))
                .chain(crate::report::pipeline::stage_lines(&p, d.binary))
                .collect::<Vec<_>>()
                .join("\n"),
                None => line,
            }
        } else if self.phase == Phase::CopyVerify {
            let verified = sess.progress.bytes_verified.load(Ordering::Relaxed);
            verify_line(elapsed, snap, verified, d.binary)
        } else {
            let line = progress_line(
                elapsed,
                self.phase,
                snap,
                crate::report::plain::LineFigures::of(model),
                d.binary,
            );
            // No file names in it: the ETA's middle dot and ± shaped for an ASCII display.
            if d.ascii {
                crate::present::text::asciify(&line)
            } else {
                line
            }
        }
    }
}

/// The end of a plain or JSON run: `--screenshot DIR`'s pictures (as the TUI writes them at
/// the end), the summary (a watch's with its writers' rows), and where the recording went.
fn print_summary(d: &Display, finished: &Finished, writers: &[crate::copy::WriterRow]) {
    if let Some(dir) = &d.screenshot {
        let data = finished.chart();
        match write_run_screenshots(&data, &finished.header, Some(dir), d.ascii) {
            Ok(paths) if !d.json => emit_err(&format!("screenshot: {}", join_paths(&paths))),
            Ok(_) => {}
            Err(e) => emit_err(&format!(
                "copyscope: screenshot failed: {}",
                crate::present::quote::error_chain(&e)
            )),
        }
    }
    let end = finished.end();
    let watch = finished.header.watch.is_some();
    if d.json {
        let mut v = crate::report::summary::json_summary(&end);
        if let (true, serde_json::Value::Object(m)) = (watch, &mut v) {
            m.insert(
                "writers".into(),
                crate::report::watch::writers_json(writers),
            );
            if let Some(p) = finished.model.pipeline_run() {
                m.insert(
                    "pipeline".into(),
                    crate::report::pipeline::pipeline_json(&p),
                );
            }
        }
        emit(&v.to_string());
    } else {
        let mut text = crate::report::summary::plain_summary(&end, d.binary, d.ascii);
        if watch {
            text.push_str(&crate::report::watch::writers_table(writers, d.binary));
        }
        if let Some(p) = finished.model.pipeline_run() {
            text.push_str(&crate::report::pipeline::stages_table(&p, d.binary));
        }
        let mut o = crate::frontend::out::face_out();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }
    match finished.recording_line() {
        Some(Ok(line)) if !d.json => emit(&line),
        Some(Ok(_)) | None => {}
        Some(Err(e)) => emit_err(&e),
    }
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
                    own_pct: None,
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
            in_place: None,
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
