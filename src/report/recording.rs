//! Recordings: the versioned JSON Lines file that `--record` writes and `replay`/`export`
//! read (docs/recording.md). Owns the line types, the buffered writer and the
//! tolerant loader.
//!
//! Every line is one JSON object with a `"type"` field: `header` (always first), then
//! `sample`, `event` and `engine` lines in time order, and a final `summary`. Readers ignore
//! unknown line types and unknown fields, so later versions can add both without breaking
//! older readers; the version number changes only when the meaning of an existing field does.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::copy::EngineEvent;
use crate::model::{Event, Model, ModelConfig, ReplayItem};
use crate::sample::{Environment, Sample};

/// The format version this build writes. Readers accept every version from 1 up to this one.
pub const FORMAT_VERSION: u32 = 1;

/// The longest line a reader takes, bytes. copyscope writes lines of a few kB (a header with
/// a very long command line: some MB); a longer one is refused after this much was read,
/// so a damaged or hostile file cannot make a reader hold gigabytes. docs/recording.md.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Why the next line could not be read.
enum LineError {
    Io(std::io::Error),
    /// Longer than [`MAX_LINE_BYTES`].
    TooLong,
}

/// What a line over [`MAX_LINE_BYTES`] is called.
fn too_long() -> String {
    format!(
        "longer than {} MiB, the most a recording's line may be (copyscope writes lines of a few kB)",
        MAX_LINE_BYTES >> 20
    )
}

/// Reads the next line into `buf` (cleared first), its newline included; 0 at the end. Reads
/// at most one byte past [`MAX_LINE_BYTES`] of it.
fn read_line_bounded(
    input: &mut impl std::io::BufRead,
    buf: &mut Vec<u8>,
) -> Result<usize, LineError> {
    use std::io::{BufRead as _, Read as _};
    buf.clear();
    let n = input
        .by_ref()
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(LineError::Io)?;
    if n > MAX_LINE_BYTES {
        buf.clear();
        return Err(LineError::TooLong);
    }
    Ok(n)
}

/// How much sample time may pass between flushes, so a crash loses at most about this much.
const FLUSH_EVERY_NS: u64 = 1_000_000_000;

/// Errors reading or writing a recording.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// Said as cp says it ("'x': No such file or directory"); the io::Error is kept but not
    /// chained, so `{:#}` does not repeat it with an "(os error N)" tail.
    #[error(
        "{}: {}",
        crate::present::quote::quote(path),
        crate::copy::error::io_reason(error)
    )]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("not a copyscope recording: the first line must be a header line")]
    MissingHeader,
    #[error("the recording is empty")]
    Empty,
    #[error(
        "recording format version {found} is not supported (this build reads 1 to {FORMAT_VERSION})"
    )]
    UnsupportedVersion { found: u32 },
    #[error("could not encode a {what} line: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// The first line: what was copied where, on what, and how it was sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Recording format version ([`FORMAT_VERSION`] when written by this build).
    pub format_version: u32,
    /// `CARGO_PKG_VERSION` of the copyscope that wrote it.
    pub copyscope_version: String,
    /// Wall-clock start, RFC 3339 in UTC (`2026-11-30T04:20:55Z`).
    pub started_at: String,
    /// Host name (uname nodename).
    #[serde(default)]
    pub host: String,
    /// Kernel release (uname release).
    #[serde(default)]
    pub kernel: String,
    /// The command line, one element per argument (lossy UTF-8).
    #[serde(default)]
    pub command_line: Vec<String>,
    /// Source paths as given (lossy UTF-8).
    #[serde(default)]
    pub sources: Vec<String>,
    /// Destination path as given (lossy UTF-8).
    #[serde(default)]
    pub destination: String,
    /// Filesystem, pool, dataset, tunables and notes read at start.
    #[serde(default)]
    pub environment: Environment,
    /// Sampler interval in milliseconds.
    pub interval_ms: u64,
    /// Set when the run was `copyscope watch` (writes made by others), not a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchTarget>,
    /// Set when the run was one phase of `copyscope bench` ("write zeros", "read back" …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<String>,
}

/// What a watch run watched, and where its intake figure came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchTarget {
    /// The path given (lossy UTF-8); the filesystem is in the environment.
    pub path: String,
    /// `--pid` values.
    #[serde(default)]
    pub pids: Vec<u32>,
    /// `--comm` names.
    #[serde(default)]
    pub comms: Vec<String>,
    /// The intake signal: "process wchar", "objset nwritten" or "diskstats sectors written".
    pub intake: String,
    /// `--net IFACE`: the interface whose receive counter is in the samples (`net_rx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
    /// `--all`: every process found writing regular files there was followed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// `--pipeline`: the pids given (a stage of it, or the shell running it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipeline: Vec<u32>,
}

impl Header {
    /// A header for a run starting now on this machine: fills the version, wall-clock
    /// start, host and kernel; the caller gives what was copied and the environment.
    pub fn for_this_run(
        command_line: Vec<String>,
        sources: Vec<String>,
        destination: String,
        environment: Environment,
        interval_ms: u64,
    ) -> Header {
        let uname = rustix::system::uname();
        Header {
            format_version: FORMAT_VERSION,
            copyscope_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: rfc3339_utc(std::time::SystemTime::now()),
            host: uname.nodename().to_string_lossy().into_owned(),
            kernel: uname.release().to_string_lossy().into_owned(),
            command_line,
            sources,
            destination,
            environment,
            interval_ms,
            watch: None,
            bench: None,
        }
    }
}

/// The last line: the figures the after-exit summary printed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// File data bytes copied.
    pub bytes: u64,
    /// Files completed.
    pub files: u64,
    /// Files that failed or were skipped.
    #[serde(default)]
    pub failed: u64,
    /// Seconds from start until the last byte was written (to the page cache).
    pub elapsed_secs: f64,
    /// Seconds from start until the flush finished (None with `--no-sync` or when cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_secs: Option<f64>,
    /// bytes / elapsed_secs, bytes per second.
    pub to_cache_bps: f64,
    /// bytes / durable_secs, bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_bps: Option<f64>,
    /// Number of speed drops.
    #[serde(default)]
    pub drops: u64,
    /// Seconds lost against the reference speed, per cause label (best cause of each drop).
    #[serde(default)]
    pub lost_secs_by_cause: Vec<(String, f64)>,
    /// The process exit code (0 ok, 1 some files failed, 2 fatal, 130 cancelled).
    #[serde(default)]
    pub exit_code: i32,
}

/// An engine event with the time it was received (ns since start, same clock as samples).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct EngineLine {
    t_ns: u64,
    event: EngineEvent,
}

/// One line of the file, tagged by `"type"`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Header(Box<Header>),
    /// Boxed: a sample is large, and parsed lines travel in batches between threads.
    Sample(Box<Sample>),
    Event(Event),
    Engine(EngineLine),
    Summary(Summary),
    /// Line types from later versions: skipped.
    #[serde(other)]
    Unknown,
}

/// The same line types, borrowed, for writing without cloning.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum LineRef<'a> {
    Header(&'a Header),
    Sample(&'a Sample),
    Event(&'a Event),
    Engine { t_ns: u64, event: &'a EngineEvent },
    Summary(&'a Summary),
}

impl LineRef<'_> {
    fn what(&self) -> &'static str {
        match self {
            LineRef::Header(_) => "header",
            LineRef::Sample(_) => "sample",
            LineRef::Event(_) => "event",
            LineRef::Engine { .. } => "engine",
            LineRef::Summary(_) => "summary",
        }
    }
}

/// A whole recording in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub header: Header,
    pub samples: Vec<Sample>,
    pub events: Vec<Event>,
    /// Engine events with their receive time (ns since start).
    pub engine_events: Vec<(u64, EngineEvent)>,
    /// None when the run did not finish (crash, or a "save so far" copy).
    pub summary: Option<Summary>,
    /// What the loader tolerated (unknown line types, a truncated last line, a newer version).
    pub warnings: Vec<String>,
}

impl Recording {
    /// The model's settings for this recording: a watch's ends as a watch does.
    pub fn model_config(&self, cfg: ModelConfig) -> ModelConfig {
        ModelConfig {
            stopped_tail_is_end: cfg.stopped_tail_is_end || self.header.watch.is_some(),
            ..cfg
        }
    }

    /// A model fed with the whole recording the way the live run fed its own: the one
    /// interpreter that replay, `replay --plain/--json`, the summary and every export read.
    pub fn model(&self, cfg: ModelConfig) -> Model {
        let mut model = Model::new(self.model_config(cfg), self.header.environment.clone());
        for item in self.replay_items() {
            match item {
                ReplayItem::Sample(s) => {
                    model.apply(s);
                }
                ReplayItem::Engine { t_ns, event } => {
                    model.engine_events(t_ns, event);
                }
            }
        }
        model.finish(self.duration_ns());
        model
    }

    /// An empty recording with this header. A watch recorded before the environment named
    /// what it watched gets it from the header's watch target (the verdict reads it there).
    pub fn new(mut header: Header) -> Recording {
        if let (Some(w), None) = (&header.watch, &header.environment.watched) {
            header.environment.watched = Some(Box::new(crate::sample::Watched {
                comms: w.comms.clone(),
                pids: w.pids.clone(),
                intake: w.intake.clone(),
                all: w.all,
                pipeline: w.pipeline.clone(),
            }));
        }
        Recording {
            header,
            samples: Vec::new(),
            events: Vec::new(),
            engine_events: Vec::new(),
            summary: None,
            warnings: Vec::new(),
        }
    }

    /// Reads and parses a recording file, line by line (a day-long recording is large).
    pub fn load(path: &Path) -> Result<Recording, RecordingError> {
        let file = File::open(path).map_err(|error| RecordingError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Recording::read(std::io::BufReader::new(file)).map_err(|e| match e {
            RecordingError::Io { error, .. } => RecordingError::Io {
                path: path.to_path_buf(),
                error,
            },
            other => other,
        })
    }

    /// Parses the text of a recording. Tolerates unknown line types and fields, blank
    /// lines, and an unparseable last line without a newline (a crash mid-write); any
    /// other bad line is an error naming its line number.
    pub fn parse(text: &str) -> Result<Recording, RecordingError> {
        Recording::read(text.as_bytes())
    }

    /// Parses a recording from a reader; see [`Recording::parse`].
    pub fn read(input: impl std::io::BufRead) -> Result<Recording, RecordingError> {
        let mut recording: Option<Recording> = None;
        let warnings = for_each_line(input, |line| {
            match (line, recording.as_mut()) {
                (Line::Header(header), _) => recording = Some(Recording::new(*header)),
                (Line::Sample(sample), Some(rec)) => rec.samples.push(*sample),
                (Line::Event(event), Some(rec)) => rec.events.push(event),
                (Line::Engine(engine), Some(rec)) => {
                    rec.engine_events.push((engine.t_ns, engine.event))
                }
                (Line::Summary(summary), Some(rec)) => rec.summary = Some(summary),
                _ => {}
            }
            Ok(())
        })?;
        let mut rec = recording.ok_or(RecordingError::Empty)?;
        rec.warnings = warnings;
        Ok(rec)
    }

    /// Samples and engine events in time order (samples first at equal times), as the model
    /// is fed them live.
    pub fn replay_items(&self) -> Vec<crate::model::ReplayItem<'_>> {
        let mut items: Vec<(u64, u8, crate::model::ReplayItem<'_>)> = self
            .samples
            .iter()
            .map(|s| (s.t_ns, 0, crate::model::ReplayItem::Sample(s)))
            .chain(self.engine_events.iter().map(|(t, e)| {
                (
                    *t,
                    1,
                    crate::model::ReplayItem::Engine { t_ns: *t, event: e },
                )
            }))
            .collect();
        // Stable: events keep their recorded order within a time.
        items.sort_by_key(|(t, k, _)| (*t, *k));
        items.into_iter().map(|(_, _, i)| i).collect()
    }

    /// The time of the last sample, ns (0 when there are none).
    pub fn duration_ns(&self) -> u64 {
        self.samples.last().map_or(0, |s| s.t_ns)
    }
}

/// A recording read line by line straight into the model, keeping nothing else (a
/// day-long recording is 864 000 samples; the model keeps its bounded, compacted series). What
/// `export` and `replay --plain/--json` read.
pub struct Replayed {
    pub header: Header,
    /// The model fed every sample and engine event in the order [`Recording::replay_items`]
    /// gives, and finished at the last sample's time.
    pub model: Model,
    pub summary: Option<Summary>,
    /// The time of the last sample, ns.
    pub duration_ns: u64,
    pub warnings: Vec<String>,
}

impl Replayed {
    /// Streams the file at `path` into a model built with `cfg`
    /// ([`Recording::model_config`]'s rules).
    pub fn load(path: &Path, cfg: ModelConfig) -> Result<Replayed, RecordingError> {
        Replayed::load_observed(path, cfg, &mut |_| {})
    }

    /// [`Replayed::load`], showing each sample to `observe` as it goes into the model.
    pub fn load_observed(
        path: &Path,
        cfg: ModelConfig,
        observe: &mut dyn FnMut(&Sample),
    ) -> Result<Replayed, RecordingError> {
        let file = File::open(path).map_err(|error| RecordingError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Replayed::read_observed(std::io::BufReader::new(file), cfg, observe).map_err(|e| match e {
            RecordingError::Io { error, .. } => RecordingError::Io {
                path: path.to_path_buf(),
                error,
            },
            other => other,
        })
    }

    /// Streams a recording from a reader into a model; same tolerance as [`Recording::read`].
    /// Parsing runs on a second thread, a batch of lines ahead of the model (a bounded
    /// channel: memory stays a few batches), so a day-long recording reads in the time the
    /// slower of the two takes rather than their sum.
    pub fn read(
        input: impl std::io::BufRead + Send,
        cfg: ModelConfig,
    ) -> Result<Replayed, RecordingError> {
        Replayed::read_observed(input, cfg, &mut |_| {})
    }

    /// [`Replayed::read`], showing each sample to `observe` as it goes into the model.
    pub fn read_observed(
        input: impl std::io::BufRead + Send,
        cfg: ModelConfig,
        observe: &mut dyn FnMut(&Sample),
    ) -> Result<Replayed, RecordingError> {
        const BATCH: usize = 512;
        let mut run: Option<Replayed> = None;
        // Engine events wait until a later sample arrives: at equal times the model is fed
        // the sample first (as `replay_items` sorts them), and the recorder may have written
        // the engine line before the sample line of the same tick.
        let mut pending: std::collections::VecDeque<(u64, EngineEvent)> = Default::default();
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Line>>(4);
        let warnings = std::thread::scope(|scope| {
            let parser = scope.spawn(move || {
                let mut batch = Vec::with_capacity(BATCH);
                let warnings = for_each_line(input, |line| {
                    batch.push(line);
                    if batch.len() == BATCH {
                        // A closed channel means the model side stopped: nothing to do.
                        let _ = tx.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
                    }
                    Ok(())
                });
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
                warnings
            });
            for line in rx.iter().flatten() {
                feed(&mut run, &mut pending, line, cfg, observe);
            }
            parser
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })?;
        let mut run = run.ok_or(RecordingError::Empty)?;
        for (t, ev) in pending {
            run.model.engine_events(t, &ev);
        }
        run.model.finish(run.duration_ns);
        run.warnings = warnings;
        Ok(run)
    }
}

/// One item of a recording's timeline, owned: what the interactive replay feeds its model.
#[derive(Debug, Clone)]
pub enum TimelineItem {
    Sample(Box<Sample>),
    Engine(u64, EngineEvent),
}

impl TimelineItem {
    /// When it happened, ns since the start.
    pub fn t_ns(&self) -> u64 {
        match self {
            TimelineItem::Sample(s) => s.t_ns,
            TimelineItem::Engine(t, _) => *t,
        }
    }
}

/// A recording read forward one item at a time, in the order the model is fed live (the
/// order of [`Recording::replay_items`]): what the interactive replay plays. It holds one line
/// and the engine events waiting for a later sample, never the samples, so a day-long
/// recording (600 MB) replays in the memory of a short one; [`RecordingCursor::rewind`]
/// starts again after the header (a seek backwards re-reads from there).
pub struct RecordingCursor {
    path: PathBuf,
    /// None when a clone could not reopen the file: at its end, saying why.
    reader: Option<std::io::BufReader<File>>,
    /// Byte offset and number of the next unread line (a clone reopens the file there).
    offset: u64,
    line: usize,
    /// Where the first line after the header starts.
    body: (u64, usize),
    buf: Vec<u8>,
    /// Engine events in time order, waiting for a sample later than they are.
    pending: std::collections::VecDeque<(u64, EngineEvent)>,
    ready: std::collections::VecDeque<TimelineItem>,
    eof: bool,
    /// Why reading stopped before the end (a damaged line).
    error: Option<String>,
}

impl RecordingCursor {
    /// Opens the recording at `path`: its header, the time of its last sample (read from
    /// the file's tail, not by reading it all), and a cursor at its first item.
    pub fn open(path: &Path) -> Result<(RecordingCursor, Header, u64), RecordingError> {
        let io = |error| RecordingError::Io {
            path: path.to_path_buf(),
            error,
        };
        let file = File::open(path).map_err(io)?;
        let mut cursor = RecordingCursor {
            path: path.to_path_buf(),
            reader: Some(std::io::BufReader::new(file)),
            offset: 0,
            line: 0,
            body: (0, 0),
            buf: Vec::new(),
            pending: Default::default(),
            ready: Default::default(),
            eof: false,
            error: None,
        };
        let header = cursor.read_header()?;
        cursor.body = (cursor.offset, cursor.line);
        let duration_ns = last_sample_ns(path).map_err(io)?;
        Ok((cursor, header, duration_ns))
    }

    /// The first non-blank line, which must be a header this build can read.
    fn read_header(&mut self) -> Result<Header, RecordingError> {
        while let Some(complete) = self.read_line().map_err(|e| match e {
            LineError::Io(error) => RecordingError::Io {
                path: self.path.clone(),
                error,
            },
            LineError::TooLong => RecordingError::Parse {
                line: self.line + 1,
                message: too_long(),
            },
        })? {
            let line = self.buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            return match parse_line(line) {
                Ok(Line::Header(h)) if h.format_version == 0 => {
                    Err(RecordingError::UnsupportedVersion { found: 0 })
                }
                Ok(Line::Header(h)) => Ok(*h),
                Ok(_) => Err(RecordingError::MissingHeader),
                Err(_) if !complete => Err(RecordingError::Empty),
                Err(err) => Err(RecordingError::Parse {
                    line: self.line,
                    message: err.to_string(),
                }),
            };
        }
        Err(RecordingError::Empty)
    }

    /// Reads the next line into `buf`; Some(ends with a newline), None at the end.
    fn read_line(&mut self) -> Result<Option<bool>, LineError> {
        self.buf.clear();
        let Some(reader) = self.reader.as_mut() else {
            return Ok(None);
        };
        let n = read_line_bounded(reader, &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.offset += n as u64;
        self.line += 1;
        Ok(Some(self.buf.ends_with(b"\n")))
    }

    /// When the next item happened, if there is one.
    pub fn peek_t(&mut self) -> Option<u64> {
        self.fill();
        self.ready.front().map(TimelineItem::t_ns)
    }

    /// The next item in feeding order.
    pub fn next_item(&mut self) -> Option<TimelineItem> {
        self.fill();
        self.ready.pop_front()
    }

    /// Why the recording stopped before its end (a damaged line), once.
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    /// Back to the first item.
    pub fn rewind(&mut self) {
        use std::io::Seek as _;
        self.pending.clear();
        self.ready.clear();
        self.error = None;
        let Some(reader) = self.reader.as_mut() else {
            return self.stop("cannot read it again".to_string());
        };
        match reader.seek(std::io::SeekFrom::Start(self.body.0)) {
            Ok(_) => {
                (self.offset, self.line) = self.body;
                self.eof = false;
            }
            Err(e) => self.stop(format!("cannot read it again: {e}")),
        }
    }

    fn stop(&mut self, why: String) {
        self.error = Some(why);
        self.eof = true;
    }

    /// Reads lines until an item is ready or the file ends; engine events wait for a later
    /// sample, as [`Replayed::read`] feeds them (samples first at equal times).
    fn fill(&mut self) {
        while self.ready.is_empty() && !self.eof {
            let complete = match self.read_line() {
                Ok(Some(complete)) => complete,
                Ok(None) => {
                    self.eof = true;
                    break;
                }
                Err(LineError::Io(e)) => {
                    self.stop(format!("line {}: {e}", self.line + 1));
                    break;
                }
                Err(LineError::TooLong) => {
                    self.stop(format!("line {}: {}", self.line + 1, too_long()));
                    break;
                }
            };
            let line = self.buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            match parse_line(line) {
                Ok(Line::Sample(sample)) => {
                    while self.pending.front().is_some_and(|(t, _)| *t < sample.t_ns) {
                        if let Some((t, ev)) = self.pending.pop_front() {
                            self.ready.push_back(TimelineItem::Engine(t, ev));
                        }
                    }
                    self.ready.push_back(TimelineItem::Sample(sample));
                }
                Ok(Line::Engine(e)) => {
                    let at = self.pending.partition_point(|(t, _)| *t <= e.t_ns);
                    self.pending.insert(at, (e.t_ns, e.event));
                }
                Ok(_) => {}
                // A write cut short by a crash: the end, as the loader takes it.
                Err(_) if !complete => self.eof = true,
                Err(err) => self.stop(format!("line {}: {err}", self.line)),
            }
        }
        if self.eof && self.ready.is_empty() {
            self.ready.extend(
                self.pending
                    .drain(..)
                    .map(|(t, ev)| TimelineItem::Engine(t, ev)),
            );
        }
    }
}

impl Clone for RecordingCursor {
    /// The same position on a second handle of the file (the frontend's state is cloned).
    fn clone(&self) -> Self {
        use std::io::Seek as _;
        let reopened = File::open(&self.path).and_then(|f| {
            let mut r = std::io::BufReader::new(f);
            r.seek(std::io::SeekFrom::Start(self.offset))?;
            Ok(r)
        });
        let (reader, eof, error) = match reopened {
            Ok(r) => (Some(r), self.eof, self.error.clone()),
            Err(e) => (None, true, Some(format!("cannot read it again: {e}"))),
        };
        RecordingCursor {
            path: self.path.clone(),
            reader,
            offset: self.offset,
            line: self.line,
            body: self.body,
            buf: Vec::new(),
            pending: self.pending.clone(),
            ready: self.ready.clone(),
            eof,
            error,
        }
    }
}

/// The time of the last sample line of the recording at `path`, read from its last MiB (the
/// summary and the flush's engine lines follow it; a sample line is under 2 kB); the whole file
/// only when the tail holds none.
fn last_sample_ns(path: &Path) -> std::io::Result<u64> {
    use std::io::{Read as _, Seek as _};
    const TAIL: u64 = 1 << 20;
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let from = len.saturating_sub(TAIL);
    f.seek(std::io::SeekFrom::Start(from))?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail)?;
    // The first line of the window may be cut; only whole lines after it count.
    let whole = if from == 0 {
        &tail[..]
    } else {
        tail.iter()
            .position(|b| *b == b'\n')
            .map_or(&[][..], |i| &tail[i + 1..])
    };
    let last = whole
        .split(|b| *b == b'\n')
        .rev()
        .find_map(|l| match parse_line(l.trim_ascii()) {
            Ok(Line::Sample(s)) => Some(s.t_ns),
            _ => None,
        });
    if let Some(t) = last {
        return Ok(t);
    }
    if from == 0 {
        return Ok(0);
    }
    let mut t = 0;
    let reader = std::io::BufReader::new(File::open(path)?);
    // Damaged lines are the cursor's to report; here they only do not count.
    let _ = for_each_line(reader, |line| {
        if let Line::Sample(s) = line {
            t = s.t_ns;
        }
        Ok(())
    });
    Ok(t)
}

/// Feeds one line to the model (made when the header arrives).
fn feed(
    run: &mut Option<Replayed>,
    pending: &mut std::collections::VecDeque<(u64, EngineEvent)>,
    line: Line,
    cfg: ModelConfig,
    observe: &mut dyn FnMut(&Sample),
) {
    let Some(run) = run.as_mut() else {
        if let Line::Header(header) = line {
            let shell = Recording::new(*header);
            let model = Model::new(shell.model_config(cfg), shell.header.environment.clone());
            *run = Some(Replayed {
                header: shell.header,
                model,
                summary: None,
                duration_ns: 0,
                warnings: Vec::new(),
            });
        }
        return;
    };
    match line {
        Line::Sample(sample) => {
            while pending.front().is_some_and(|(t, _)| *t < sample.t_ns) {
                if let Some((t, ev)) = pending.pop_front() {
                    run.model.engine_events(t, &ev);
                }
            }
            run.duration_ns = sample.t_ns;
            observe(&sample);
            run.model.apply(&sample);
        }
        Line::Engine(e) => {
            // Kept in time order, stable within a time (the recorded order).
            let at = pending.partition_point(|(t, _)| *t <= e.t_ns);
            pending.insert(at, (e.t_ns, e.event));
        }
        Line::Summary(summary) => run.summary = Some(summary),
        // The recorded events are what the run said at the time; the model derives its own
        // from the samples, as it did live.
        Line::Event(_) | Line::Header(_) | Line::Unknown => {}
    }
}

/// Parses one line. The writer puts `"type"` first, so the common lines go straight into
/// their struct (serde ignores the extra `type` field); the internally tagged [`Line`], which
/// buffers the whole object before choosing, is only the fallback. A day-long recording has
/// 864 000 sample lines: this halves the time to read it. Invalid UTF-8 (never written by
/// copyscope) is read lossily, as before.
fn parse_line(line: &[u8]) -> Result<Line, serde_json::Error> {
    // One UTF-8 check of the whole line, then serde_json's &str reader, which does not check
    // each string again (from_slice did: 8 % of a day-long replay).
    let Ok(text) = std::str::from_utf8(line) else {
        return serde_json::from_str(&String::from_utf8_lossy(line));
    };
    // A fast path that fails (a damaged line) falls back to the general one, which says what
    // is wrong the same way for every line type.
    let fast = if text.starts_with(r#"{"type":"sample","#) {
        serde_json::from_str(text).map(Line::Sample).ok()
    } else if text.starts_with(r#"{"type":"engine","#) {
        serde_json::from_str(text).map(Line::Engine).ok()
    } else if text.starts_with(r#"{"type":"event","#) {
        serde_json::from_str(text).map(Line::Event).ok()
    } else {
        None
    };
    match fast {
        Some(parsed) => Ok(parsed),
        None => serde_json::from_str(text),
    }
}

/// Reads a recording line by line and hands each parsed line to `f`, header first. Tolerates
/// unknown line types and fields, blank lines, and an unparseable last line without a newline
/// (a crash mid-write); any other bad line is an error naming its line number. Returns the
/// warnings (what was tolerated).
fn for_each_line(
    mut input: impl std::io::BufRead,
    mut f: impl FnMut(Line) -> Result<(), RecordingError>,
) -> Result<Vec<String>, RecordingError> {
    let mut warnings = Vec::new();
    let mut seen_header = false;
    let mut unknown = 0usize;
    let mut buf = Vec::new();
    let mut number = 0usize;
    loop {
        let n = read_line_bounded(&mut input, &mut buf).map_err(|e| match e {
            LineError::Io(error) => RecordingError::Io {
                path: PathBuf::new(),
                error,
            },
            LineError::TooLong => RecordingError::Parse {
                line: number + 1,
                message: too_long(),
            },
        })?;
        if n == 0 {
            break;
        }
        number += 1;
        // Only the last line of a file can lack its newline: a write cut short.
        let complete = buf.ends_with(b"\n");
        let line = buf.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let parsed: Line = match parse_line(line) {
            Ok(parsed) => parsed,
            Err(err) => {
                if !complete && seen_header {
                    warnings.push(format!(
                        "line {number}: incomplete last line ignored (the run was interrupted while writing): {err}"
                    ));
                    break;
                }
                return Err(RecordingError::Parse {
                    line: number,
                    message: err.to_string(),
                });
            }
        };
        match (&parsed, seen_header) {
            (Line::Header(header), false) => {
                if header.format_version == 0 {
                    return Err(RecordingError::UnsupportedVersion { found: 0 });
                }
                if header.format_version > FORMAT_VERSION {
                    warnings.push(format!(
                        "written by a newer format (version {}); fields this build does not know are ignored",
                        header.format_version
                    ));
                }
                seen_header = true;
            }
            (_, false) => return Err(RecordingError::MissingHeader),
            (Line::Header(_), true) => {
                return Err(RecordingError::Parse {
                    line: number,
                    message: "a second header line".to_string(),
                });
            }
            (Line::Unknown, true) => unknown += 1,
            _ => {}
        }
        f(parsed)?;
    }
    if !seen_header {
        return Err(RecordingError::Empty);
    }
    if unknown > 0 {
        warnings.push(format!(
            "{unknown} line(s) of a type this build does not know were skipped"
        ));
    }
    Ok(warnings)
}

/// Writes a whole recording at once, in time order (the TUI's "save the run so far").
pub fn write_recording(path: &Path, recording: &Recording) -> Result<(), RecordingError> {
    let mut writer = RecordingWriter::create(path, &recording.header)?;
    let mut samples = recording.samples.iter().peekable();
    let mut events = recording.events.iter().peekable();
    let mut engine = recording.engine_events.iter().peekable();
    // Merge the three time-ordered lists; at equal times samples come first, so a reader
    // that replays line by line sees the tick before what was derived from it.
    loop {
        let ts = samples.peek().map(|s| s.t_ns);
        let te = events.peek().map(|e| e.t_ns);
        let tg = engine.peek().map(|(t, _)| *t);
        let next = [ts, te, tg].into_iter().flatten().min();
        let Some(t) = next else { break };
        if ts == Some(t) {
            if let Some(sample) = samples.next() {
                writer.write_sample(sample)?;
            }
        } else if tg == Some(t) {
            if let Some((t_ns, event)) = engine.next() {
                writer.write_engine_event(*t_ns, event)?;
            }
        } else if let Some(event) = events.next() {
            writer.write_event(event)?;
        }
    }
    match &recording.summary {
        Some(summary) => writer.finish(summary),
        None => writer.close(),
    }
}

/// Appends lines to a recording file as the run goes.
pub struct RecordingWriter {
    path: PathBuf,
    out: BufWriter<File>,
    last_flush_ns: u64,
}

impl RecordingWriter {
    /// Creates (truncates) the file and writes and flushes the header at once.
    pub fn create(path: &Path, header: &Header) -> Result<RecordingWriter, RecordingError> {
        let file = File::create(path).map_err(|error| RecordingError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let mut writer = RecordingWriter {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(64 * 1024, file),
            last_flush_ns: 0,
        };
        writer.write_line(&LineRef::Header(header))?;
        writer.flush()?;
        Ok(writer)
    }

    /// A recording with no name, in `dir` (`O_TMPFILE`): nothing is left behind however the
    /// process ends, even by SIGKILL; [`RecordingWriter::save_copy_to`] still copies it, through
    /// its descriptor's /proc link.
    pub fn create_unnamed(dir: &Path, header: &Header) -> Result<RecordingWriter, RecordingError> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .mode(0o600)
            .open(dir)
            .map_err(|error| RecordingError::Io {
                path: dir.to_path_buf(),
                error,
            })?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let mut writer = RecordingWriter {
            path,
            out: BufWriter::with_capacity(64 * 1024, file),
            last_flush_ns: 0,
        };
        writer.write_line(&LineRef::Header(header))?;
        writer.flush()?;
        Ok(writer)
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a sample; flushes when a second of sample time has passed since the last flush.
    pub fn write_sample(&mut self, sample: &Sample) -> Result<(), RecordingError> {
        self.write_line(&LineRef::Sample(sample))?;
        self.flush_if_due(sample.t_ns)
    }

    /// Appends a model event.
    pub fn write_event(&mut self, event: &Event) -> Result<(), RecordingError> {
        self.write_line(&LineRef::Event(event))?;
        self.flush_if_due(event.t_ns)
    }

    /// Appends an engine event received at `t_ns`. Paths that are not UTF-8 are written
    /// lossily (JSON strings must be UTF-8), so such a name never fails a recording.
    pub fn write_engine_event(
        &mut self,
        t_ns: u64,
        event: &EngineEvent,
    ) -> Result<(), RecordingError> {
        let lossy = lossy_paths(event);
        self.write_line(&LineRef::Engine {
            t_ns,
            event: lossy.as_ref().unwrap_or(event),
        })?;
        self.flush_if_due(t_ns)
    }

    /// Writes everything buffered to the file.
    pub fn flush(&mut self) -> Result<(), RecordingError> {
        self.out.flush().map_err(|error| RecordingError::Io {
            path: self.path.clone(),
            error,
        })
    }

    /// Flushes and copies the file as written so far to `dest` (a recording without a
    /// summary, which `load` accepts).
    pub fn save_copy_to(&mut self, dest: &Path) -> Result<(), RecordingError> {
        self.flush()?;
        std::fs::copy(&self.path, dest).map_err(|error| RecordingError::Io {
            path: dest.to_path_buf(),
            error,
        })?;
        Ok(())
    }

    /// Writes the summary line, flushes and closes the file.
    pub fn finish(mut self, summary: &Summary) -> Result<(), RecordingError> {
        self.write_line(&LineRef::Summary(summary))?;
        self.close_inner()
    }

    /// Closes the file without a summary (an interrupted run, or a partial save).
    pub fn close(mut self) -> Result<(), RecordingError> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<(), RecordingError> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(|error| RecordingError::Io {
                path: self.path.clone(),
                error,
            })
    }

    fn flush_if_due(&mut self, t_ns: u64) -> Result<(), RecordingError> {
        if t_ns.saturating_sub(self.last_flush_ns) >= FLUSH_EVERY_NS {
            self.last_flush_ns = t_ns;
            self.flush()?;
        }
        Ok(())
    }

    fn write_line(&mut self, line: &LineRef<'_>) -> Result<(), RecordingError> {
        let what = line.what();
        serde_json::to_writer(&mut self.out, line).map_err(|source| {
            if source.is_io() {
                RecordingError::Io {
                    path: self.path.clone(),
                    error: std::io::Error::other(source.to_string()),
                }
            } else {
                RecordingError::Encode { what, source }
            }
        })?;
        self.out
            .write_all(b"\n")
            .map_err(|error| RecordingError::Io {
                path: self.path.clone(),
                error,
            })
    }
}

/// A copy of `event` with its path made valid UTF-8, or None when it already is.
fn lossy_paths(event: &EngineEvent) -> Option<EngineEvent> {
    let fix = |p: &Path| -> Option<PathBuf> {
        match p.to_str() {
            Some(_) => None,
            None => Some(PathBuf::from(p.to_string_lossy().into_owned())),
        }
    };
    let mut copy = event.clone();
    let path = match &mut copy {
        EngineEvent::FileStarted { path, .. }
        | EngineEvent::FileDone { path, .. }
        | EngineEvent::DirCreated { path }
        | EngineEvent::FileFailed { path, .. }
        | EngineEvent::FileSkipped { path, .. }
        | EngineEvent::FileChanged { path, .. } => path,
        _ => return None,
    };
    let fixed = fix(path)?;
    *path = fixed;
    Some(copy)
}

/// Formats a wall-clock time as RFC 3339 UTC with second precision.
pub fn rfc3339_utc(time: std::time::SystemTime) -> String {
    let secs = match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm), so no date crate is needed for one timestamp.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_matches_known_dates() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2026-11-30T04:20:55Z, the ZFS lab capture's start.
        let t = UNIX_EPOCH + Duration::from_secs(1_796_012_455);
        assert_eq!(rfc3339_utc(t), "2026-11-30T04:20:55Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339_utc(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn header_for_this_run_describes_this_machine() {
        let h = Header::for_this_run(
            vec!["copyscope".into()],
            vec!["a".into()],
            "b".into(),
            Environment::default(),
            100,
        );
        assert_eq!(h.format_version, FORMAT_VERSION);
        assert!(!h.kernel.is_empty());
        assert_eq!(h.started_at.len(), 20);
        assert!(h.started_at.ends_with('Z'));
    }

    #[test]
    fn non_utf8_paths_become_lossy() {
        use std::os::unix::ffi::OsStrExt;
        let bad = PathBuf::from(std::ffi::OsStr::from_bytes(b"a\xffb"));
        let ev = EngineEvent::FileDone {
            path: bad,
            bytes: 3,
        };
        let fixed = lossy_paths(&ev).expect("needs fixing");
        assert!(serde_json::to_string(&fixed).is_ok());
        assert!(lossy_paths(&EngineEvent::FlushDone).is_none());
    }
}
