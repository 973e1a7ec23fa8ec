//! Forum-ready exports of a run: the chart data they share ([`ChartData`]),
//! built from a recording, and the four renderings: SVG (the source drawing), PNG (its
//! rasterisation with embedded fonts), a Unicode/ASCII text chart and a Markdown table.
//!
//! Building the data is kept apart from rendering, so the TUI can later build a
//! [`ChartData`] from the live model instead of a recording.

pub mod compare;
pub mod describe;
pub mod markdown;
pub mod outline;
pub mod png;
pub mod svg;
pub mod text;

use crate::present::quote::quote;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::model::{Event, EventKind};
use crate::report::recording::{Recording, Replayed};

pub use markdown::render_markdown;
pub use png::{PngError, render_png};
pub use svg::{Look, render_svg, render_svg_look};
pub use text::render_text;

/// The tick step of a picture's time axis over `span_s` seconds, for at most `target` ticks:
/// present's steps up to a day, then round numbers of days, so that a span of centuries (a
/// damaged recording whose last sample says 2^64 ns) gets a handful of ticks rather than one
/// a day (200 000 labels: minutes of text layout and gigabytes for one picture).
pub(crate) fn time_axis_step(span_s: f64, target: usize) -> f64 {
    const DAY: f64 = 86_400.0;
    let step = crate::present::axis::time_step(span_s, target);
    if span_s / step <= target.max(1) as f64 {
        return step;
    }
    crate::present::axis::nice_step(span_s / DAY, target, crate::present::axis::Steps::Round)
        .max(1.0)
        * DAY
}

/// Default picture size: crisp on a forum at full width.
pub const DEFAULT_SIZE: (u32, u32) = (1600, 900);

/// Title facts shown above every export.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Title {
    /// Source path(s), joined for display.
    pub source: String,
    pub dest: String,
    /// "zfs tank/backup", "ext4 /dev/sda2", or empty when unknown.
    pub fs: String,
    /// "2026-11-30 04:20 UTC".
    pub date: String,
    pub host: String,
    pub kernel: String,
}

/// One sample interval of the chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChartPoint {
    /// Middle of the interval, seconds since start.
    pub t_s: f64,
    /// Copy speed over the interval, bytes/s (application level).
    pub copy_bps: f64,
    /// Lowest and highest copy speed this point stands for (equal to `copy_bps` for a raw
    /// sample; a downsampled point keeps the extremes so a short drop never vanishes).
    pub min_bps: f64,
    pub max_bps: f64,
    /// What reached the destination's disks, bytes/s, when known.
    pub device_bps: Option<f64>,
    /// `watch --net`: what the watched interface received, bytes/s.
    pub net_bps: Option<f64>,
}

/// Where the device-rate overlay comes from, for its legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceSource {
    /// No overlay.
    #[default]
    None,
    /// /proc/diskstats sectors written on the destination disks.
    Diskstats,
    /// ZFS txg rows: each sync's nwritten spread over its sync window.
    ZfsTxg,
}

impl DeviceSource {
    /// Legend text for the overlay line.
    pub fn legend(self) -> &'static str {
        match self {
            DeviceSource::None => "",
            DeviceSource::Diskstats => "device writes (diskstats)",
            DeviceSource::ZfsTxg => "pool writes (txg nwritten / sync time)",
        }
    }
}

/// Figures for the stats table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartStats {
    /// Average copy speed to the page cache, bytes/s.
    pub avg_bps: f64,
    /// Lowest and highest sample speed while copying, bytes/s.
    pub min_bps: f64,
    pub peak_bps: f64,
    /// Speed counting the final flush, bytes/s.
    pub durable_bps: Option<f64>,
    pub drops: u64,
    /// Seconds lost per cause label, largest first.
    pub lost_secs_by_cause: Vec<(String, f64)>,
    /// Seconds the writer spent in drops per cause label, largest first: how long a cause
    /// held it, whether or not the disks kept writing the backlog meanwhile (the model's).
    pub stalled_secs_by_cause: Vec<(String, f64)>,
    pub bytes: u64,
    pub files: u64,
    pub failed: u64,
    /// Seconds until the last byte was written.
    pub elapsed_s: f64,
    /// Seconds until the data was durable (after the flush).
    pub durable_s: Option<f64>,
    /// `watch --net`: the interface's receive figures (the model's).
    pub net: Option<crate::model::NetStats>,
}

/// Everything an export draws.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartData {
    pub title: Title,
    pub points: Vec<ChartPoint>,
    pub device_source: DeviceSource,
    pub events: Vec<Event>,
    pub stats: ChartStats,
    /// Length of the time axis, seconds.
    pub duration_s: f64,
    /// Where the writer's time went, and the verdict: the model's, never re-derived.
    pub budget: Option<crate::model::Budget>,
    pub verdict: Option<crate::model::Verdict>,
    /// A watch's intake source ("objset nwritten", "process wchar", ...): the run charted
    /// someone else's writes, so the figures are worded as intake, not as a copy's files.
    pub watch: Option<String>,
    /// `copyscope pipe`: the figures are what passed through, with no files.
    pub pipe: bool,
    /// `watch --net IFACE`: the interface whose receive rate is drawn (`net_bps`).
    pub net_iface: Option<String>,
    /// `watch --pipeline`: the stages over the run, the model's.
    pub pipeline: Option<crate::model::pipeline::PipelineView>,
}

pub use crate::present::markers::MarkerKind;

/// What a run's average speed is of: a copy into the cache (ZFS holds written data in the
/// ARC, not in the page cache), a watch's intake, or what passed through a pipeline or a
/// pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeedOf {
    CopyToPageCache,
    CopyToArc,
    Intake,
    Pipeline,
    Pipe,
}

impl SpeedOf {
    /// The Markdown table's row: "copy (to page cache)", "intake", "through the pipeline" …
    pub fn row_words(self) -> &'static str {
        match self {
            SpeedOf::CopyToPageCache => "copy (to page cache)",
            SpeedOf::CopyToArc => "copy (to ARC)",
            SpeedOf::Intake => "intake",
            SpeedOf::Pipeline => "through the pipeline",
            SpeedOf::Pipe => "through the pipe",
        }
    }

    /// The pictures' stats label: "average (to cache)", "average (intake)" …
    pub fn average_label(self) -> &'static str {
        match self {
            SpeedOf::CopyToPageCache | SpeedOf::CopyToArc => "average (to cache)",
            SpeedOf::Intake => "average (intake)",
            SpeedOf::Pipeline => "average (pipeline)",
            SpeedOf::Pipe => "average (through)",
        }
    }
}

impl ChartData {
    /// The chart of a recording in memory: the recording replayed through the model (the one
    /// interpreter; nothing here re-derives speeds, events or figures from raw samples).
    /// `export` and `replay` stream the file instead ([`Replayed`]).
    pub fn from_recording(rec: &Recording) -> ChartData {
        let model = rec.model(crate::model::ModelConfig::default());
        ChartData::from_model(&model, &rec.header, rec.summary.as_ref())
    }

    /// The chart of a recording streamed into the model.
    pub fn from_replayed(run: &Replayed) -> ChartData {
        ChartData::from_model(&run.model, &run.header, run.summary.as_ref())
    }

    /// The chart of a run straight from its model (bounded: the model's compacted series), so
    /// a summary or a screenshot never has to read a long recording back. `summary` (the
    /// engine's figures, when the run has ended) takes precedence over the model's estimates.
    pub fn from_model(
        model: &crate::model::Model,
        header: &crate::report::recording::Header,
        summary: Option<&crate::report::recording::Summary>,
    ) -> ChartData {
        let points: Vec<ChartPoint> = model
            .series()
            .points()
            .iter()
            .map(|p| ChartPoint {
                t_s: (p.t_ns + p.dt_ns / 2) as f64 / 1e9,
                copy_bps: p.copy_bps,
                min_bps: p.copy_min_bps,
                max_bps: p.copy_max_bps,
                device_bps: p.device_bps,
                net_bps: p.net_bps,
            })
            .collect();
        let mut points = points;
        let device_source = if points.iter().any(|p| p.device_bps.is_some()) {
            DeviceSource::Diskstats
        } else if txg_overlay(&mut points, model.series().points(), model.events()) {
            DeviceSource::ZfsTxg
        } else {
            DeviceSource::None
        };
        let st = model.stats();
        let engine = model.latest().map(|s| s.engine).unwrap_or_default();
        // Speeds, times, drops and time lost are the model's (the same numbers the TUI header
        // and the summaries print); the engine's summary only supplies its counts.
        let stats = ChartStats {
            avg_bps: st.avg_bps,
            min_bps: st.min_bps,
            peak_bps: st.peak_bps,
            durable_bps: st.durable_bps,
            drops: st.drops as u64,
            lost_secs_by_cause: st.lost_by_cause_owned(),
            stalled_secs_by_cause: st
                .stalled_secs_by_cause
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            bytes: summary.map_or(st.bytes, |s| s.bytes),
            files: summary.map_or(engine.files_done, |s| s.files),
            failed: summary.map_or(engine.files_failed, |s| s.failed),
            // The model's copy and durable times (what its speeds divide by); a watch has no
            // copy phase of its own: its length.
            elapsed_s: if header.watch.is_some() || st.bytes == 0 {
                st.elapsed_ns as f64 / 1e9
            } else {
                st.copy_secs
            },
            durable_s: st.durable_secs.or(summary.and_then(|s| s.durable_secs)),
            net: st.net,
        };
        ChartData {
            title: title_of(header),
            points,
            device_source,
            events: model.events().to_vec(),
            stats,
            duration_s: st.elapsed_ns as f64 / 1e9,
            budget: Some(model.budget().clone()),
            verdict: Some(model.verdict()),
            watch: header.watch.as_ref().map(|w| w.intake.clone()),
            pipe: header.environment.pipe.is_some(),
            net_iface: header.watch.as_ref().and_then(|w| w.net.clone()),
            pipeline: model.pipeline_run(),
        }
    }

    /// What the average speed is of.
    pub fn speed_of(&self) -> SpeedOf {
        if self.pipeline.is_some() {
            SpeedOf::Pipeline
        } else if self.pipe {
            SpeedOf::Pipe
        } else if self.watch.is_some() {
            SpeedOf::Intake
        } else if self.title.fs == "zfs" || self.title.fs.starts_with("zfs ") {
            SpeedOf::CopyToArc
        } else {
            SpeedOf::CopyToPageCache
        }
    }

    /// True when the run sampled a network interface: its receive rate is drawn and listed.
    pub fn has_net(&self) -> bool {
        self.points.iter().any(|p| p.net_bps.is_some())
    }

    /// "network rx (lo)", or "network rx" when the interface is not named.
    pub fn net_label(&self) -> String {
        match &self.net_iface {
            Some(i) => format!("network rx ({i})"),
            None => "network rx".to_string(),
        }
    }

    /// The speed series' name in legends: a copy's speed, or a watch's intake.
    pub fn speed_label(&self) -> &'static str {
        if self.watch.is_some() {
            "intake"
        } else if self.pipe {
            "rate"
        } else {
            "copy speed"
        }
    }

    /// "1.2 GB in 3 files" for a copy, "1.2 GB written" for a watch (the writer's files are
    /// not counted), "1.2 GB passed" for a pipe, with `size` formatting the bytes.
    pub fn amount_text(&self, size: impl Fn(u64) -> String) -> String {
        let st = &self.stats;
        if self.watch.is_some() {
            return format!("{} written", size(st.bytes));
        }
        if self.pipe {
            return format!("{} passed", size(st.bytes));
        }
        format!(
            "{} in {}",
            size(st.bytes),
            crate::present::format::fmt_files(st.files)
        )
    }

    /// Drop events, in time order.
    pub fn drops(&self) -> impl Iterator<Item = (&Event, &crate::model::DropInfo)> {
        self.events.iter().filter_map(|e| match &e.kind {
            EventKind::Drop(d) => Some((e, d)),
            _ => None,
        })
    }

    /// Points merged into at most `buckets` equal time slices, each keeping the mean speed
    /// and the extremes of what it covers. Returns the points unchanged when they fit.
    pub fn downsample(&self, buckets: usize) -> Vec<ChartPoint> {
        downsample(&self.points, self.duration_s, buckets)
    }

    /// Marker families that occur, in lane order.
    pub fn marker_kinds(&self) -> Vec<MarkerKind> {
        let mut kinds: Vec<MarkerKind> = self
            .events
            .iter()
            .map(|e| MarkerKind::of(&e.kind))
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// Time windows of flushing (FlushStarted to FlushDone, or to the end), seconds.
    pub fn flush_spans(&self) -> Vec<(f64, f64)> {
        let mut spans = Vec::new();
        let mut open: Option<f64> = None;
        for e in &self.events {
            let t = e.t_ns as f64 / 1e9;
            match e.kind {
                EventKind::FlushStarted { .. } => open = Some(t),
                EventKind::FlushDone { .. } => {
                    if let Some(s) = open.take() {
                        spans.push((s, t));
                    }
                }
                _ => {}
            }
        }
        if let Some(s) = open {
            spans.push((s, self.duration_s));
        }
        spans
    }

    /// Sync windows of committed txgs (start, end, txg), seconds.
    pub fn txg_spans(&self) -> Vec<(f64, f64, u64)> {
        self.events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::TxgCommitted { txg, stime_ns, .. } => {
                    let end = e.t_ns as f64 / 1e9;
                    Some(((end - stime_ns as f64 / 1e9).max(0.0), end, txg))
                }
                _ => None,
            })
            .collect()
    }
}

fn downsample(points: &[ChartPoint], duration_s: f64, buckets: usize) -> Vec<ChartPoint> {
    use crate::present::columns::{Reading, bucket};
    if buckets == 0 || points.len() <= buckets || duration_s <= 0.0 {
        return points.to_vec();
    }
    let width = duration_s / buckets as f64;
    let place = |p: &ChartPoint| Some(p.t_s / duration_s);
    let copy = bucket(points, buckets, place, |p| {
        Some(Reading {
            min: p.min_bps,
            max: p.max_bps,
            ..Reading::of(p.copy_bps)
        })
    });
    let device = bucket(points, buckets, place, |p| p.device_bps.map(Reading::of));
    let net = bucket(points, buckets, place, |p| p.net_bps.map(Reading::of));
    copy.iter()
        .enumerate()
        .filter_map(|(b, c)| {
            let c = c.as_ref()?;
            Some(ChartPoint {
                t_s: (b as f64 + 0.5) * width,
                copy_bps: c.mean,
                min_bps: c.min,
                max_bps: c.max,
                device_bps: device[b].map(|d| d.mean),
                net_bps: net[b].map(|n| n.mean),
            })
        })
        .collect()
}

/// On a pool without diskstats (a ZFS dataset over files, a VM's pool), the overlay is what
/// the model's committed txgs wrote: each txg's `nwritten` spread evenly over its sync window
/// (the event's time is the sync's end, `stime_ns` its length). Fills each point's
/// `device_bps` from the series intervals; false when there is no committed txg to draw.
fn txg_overlay(
    points: &mut [ChartPoint],
    intervals: &[crate::model::Point],
    events: &[Event],
) -> bool {
    let windows: Vec<(f64, f64, f64)> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::TxgCommitted {
                nwritten, stime_ns, ..
            } if stime_ns > 0 => {
                let end = e.t_ns as f64 / 1e9;
                let dur = stime_ns as f64 / 1e9;
                Some((end - dur, end, nwritten as f64 / dur))
            }
            _ => None,
        })
        .collect();
    if windows.is_empty() {
        return false;
    }
    for (p, iv) in points.iter_mut().zip(intervals) {
        let (t0, t1) = (iv.t_ns as f64 / 1e9, iv.end_ns() as f64 / 1e9);
        if t1 <= t0 {
            continue;
        }
        let bytes: f64 = windows
            .iter()
            .map(|(s, e, rate)| (e.min(t1) - s.max(t0)).max(0.0) * rate)
            .sum();
        p.device_bps = Some(bytes / (t1 - t0));
    }
    true
}

/// The picture's title from a recording header.
fn title_of(h: &crate::report::recording::Header) -> Title {
    let source = match h.sources.len() {
        0 => String::new(),
        1 | 2 => h.sources.join(", "),
        n => format!("{}, {} +{} more", h.sources[0], h.sources[1], n - 2),
    };
    let env = &h.environment;
    let detail = env
        .zfs_dataset
        .clone()
        .or_else(|| env.zfs_pool.clone())
        .or_else(|| env.mount_source.clone());
    let fs = match (&env.fs_type, detail) {
        (Some(t), Some(d)) => format!("{t} {d}"),
        (Some(t), None) => t.clone(),
        (None, Some(d)) => d,
        (None, None) => String::new(),
    };
    Title {
        source,
        dest: h.destination.clone(),
        fs,
        date: display_date(&h.started_at),
        host: h.host.clone(),
        kernel: h.kernel.clone(),
    }
}

/// "2026-11-30T04:20:55Z" → "2026-11-30 04:20 UTC"; other text is shown as it is.
fn display_date(rfc3339: &str) -> String {
    let b = rfc3339.as_bytes();
    if b.len() >= 16 && b[10] == b'T' && rfc3339.ends_with('Z') {
        format!("{} {} UTC", &rfc3339[..10], &rfc3339[11..16])
    } else {
        rfc3339.to_string()
    }
}

/// Which files to write; `None` skips that format. A text or Markdown path of `-` means
/// standard output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportTargets {
    pub png: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub text: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
}

impl ExportTargets {
    /// True when no format was asked for.
    pub fn is_empty(&self) -> bool {
        self.png.is_none() && self.svg.is_none() && self.text.is_none() && self.markdown.is_none()
    }
}

/// Why an export's outputs were refused before anything was written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("--{flag} {}: the file name must end in {want} (the output is {what})", quote(.path))]
    Extension {
        flag: &'static str,
        path: PathBuf,
        want: String,
        what: &'static str,
    },
    #[error("{} already exist{}: give --force to overwrite, or name the outputs (--png, --svg, --text, --markdown)", .0.iter().map(quote).collect::<Vec<_>>().join(", "), if .0.len() == 1 { "s" } else { "" })]
    WouldOverwrite(Vec<PathBuf>),
}

impl ExportTargets {
    /// Each output's extension must match its format (`-`, standard output, is allowed for
    /// text and Markdown), so a `--png chart.svg` typo never writes a PNG under an SVG name.
    pub fn check_extensions(&self) -> Result<(), TargetError> {
        type Rule<'a> = (
            &'static str,
            &'a Option<PathBuf>,
            &'static [&'static str],
            &'static str,
        );
        let rules: [Rule; 4] = [
            ("png", &self.png, &["png"], "a PNG picture"),
            ("svg", &self.svg, &["svg"], "an SVG picture"),
            ("text", &self.text, &["txt", "text"], "text"),
            ("markdown", &self.markdown, &["md", "markdown"], "Markdown"),
        ];
        for (flag, path, exts, what) in rules {
            let Some(path) = path else { continue };
            // Text and Markdown may go to standard output.
            if path == Path::new("-") && exts.len() > 1 {
                continue;
            }
            let ok = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)));
            if !ok {
                return Err(TargetError::Extension {
                    flag,
                    path: path.clone(),
                    want: format!(".{}", exts[0]),
                    what,
                });
            }
        }
        Ok(())
    }

    /// The full set beside `recording`: `NAME.png`, `.svg`, `.txt`, `.md`.
    pub fn beside(recording: &Path) -> ExportTargets {
        // A bare name stays bare ("run.png", not "./run.png"), as the user typed it.
        let dir = recording.parent().unwrap_or(Path::new(""));
        let stem = recording
            .file_stem()
            .map_or_else(|| "copyscope".into(), |s| s.to_string_lossy().into_owned());
        ExportTargets {
            png: Some(dir.join(format!("{stem}.png"))),
            svg: Some(dir.join(format!("{stem}.svg"))),
            text: Some(dir.join(format!("{stem}.txt"))),
            markdown: Some(dir.join(format!("{stem}.md"))),
        }
    }

    /// The outputs that already exist.
    pub fn existing(&self) -> Vec<PathBuf> {
        [&self.png, &self.svg, &self.text, &self.markdown]
            .into_iter()
            .flatten()
            .filter(|p| p.as_path() != Path::new("-") && p.symlink_metadata().is_ok())
            .cloned()
            .collect()
    }
}

/// `copyscope export`: loads the recording and writes the requested files. With no
/// target at all it writes the full set beside the recording (`NAME.png/.svg/.txt/.md`).
/// Returns the paths written.
pub fn run_export(
    recording: &Path,
    targets: &ExportTargets,
    size: (u32, u32),
    ascii: bool,
    cfg: crate::model::ModelConfig,
) -> anyhow::Result<Vec<PathBuf>> {
    run_export_look(recording, targets, size, ascii, cfg, &Look::default(), true)
}

/// [`run_export`] with the user's title, scale and unit. Without named outputs, the full set
/// beside the recording is written only when none of it exists yet, or with `force`.
pub fn run_export_look(
    recording: &Path,
    targets: &ExportTargets,
    size: (u32, u32),
    ascii: bool,
    cfg: crate::model::ModelConfig,
    look: &Look,
    force: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let targets = if targets.is_empty() {
        let all = ExportTargets::beside(recording);
        let existing = all.existing();
        if !force && !existing.is_empty() {
            return Err(TargetError::WouldOverwrite(existing).into());
        }
        all
    } else {
        targets.check_extensions()?;
        targets.clone()
    };
    let run = Replayed::load(recording, cfg)
        .with_context(|| format!("reading recording {}", quote(recording)))?;
    let data = ChartData::from_replayed(&run);
    write_targets_look(&data, &targets, size, ascii, look)
}

/// Writes each requested format of `data`.
pub fn write_targets(
    data: &ChartData,
    targets: &ExportTargets,
    size: (u32, u32),
    ascii: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    write_targets_look(data, targets, size, ascii, &Look::default())
}

/// [`write_targets`] with a fixed title, scale or unit for the pictures.
pub fn write_targets_look(
    data: &ChartData,
    targets: &ExportTargets,
    size: (u32, u32),
    ascii: bool,
    look: &Look,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let (w, h) = size;
    let write = |path: &Path, bytes: &[u8]| -> anyhow::Result<()> {
        std::fs::write(path, bytes).with_context(|| format!("writing {}", quote(path)))
    };
    if targets.png.is_some() || targets.svg.is_some() {
        let svg_text = render_svg_look(data, w, h, look);
        if let Some(p) = &targets.svg {
            // Glyph outlines from the PNG's fonts: the file draws the same without them.
            let exported = outline::outline_text(&svg_text).context("outlining the SVG's text")?;
            write(p, exported.as_bytes())?;
            written.push(p.clone());
        }
        if let Some(p) = &targets.png {
            let png = png::rasterize(&svg_text, w, h).context("rendering the PNG")?;
            write(p, &png)?;
            written.push(p.clone());
        }
    }
    // Text and Markdown may go to stdout ("-"), for pasting straight into a post.
    let write_or_print = |path: &Path, text: &str| -> anyhow::Result<()> {
        if path == Path::new("-") {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("writing to stdout")
        } else {
            write(path, text.as_bytes())
        }
    };
    if let Some(p) = &targets.text {
        write_or_print(p, &render_text(data, 100, ascii))?;
        written.push(p.clone());
    }
    if let Some(p) = &targets.markdown {
        write_or_print(p, &markdown::render_markdown_titled(data, look.title))?;
        written.push(p.clone());
    }
    Ok(written)
}

/// The TUI's `s` key and `--screenshot DIR`: writes `stem.png`, `stem.svg`, `stem.txt`
/// and `stem.md` into `dir` (created if missing).
pub fn write_screenshot_set(
    data: &ChartData,
    dir: &Path,
    stem: &str,
    size: (u32, u32),
    ascii: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", quote(dir)))?;
    let targets = ExportTargets {
        png: Some(dir.join(format!("{stem}.png"))),
        svg: Some(dir.join(format!("{stem}.svg"))),
        text: Some(dir.join(format!("{stem}.txt"))),
        markdown: Some(dir.join(format!("{stem}.md"))),
    };
    write_targets(data, &targets, size, ascii)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(t: f64, v: f64) -> ChartPoint {
        ChartPoint {
            t_s: t,
            copy_bps: v,
            min_bps: v,
            max_bps: v,
            device_bps: None,
            net_bps: None,
        }
    }

    #[test]
    fn a_time_axis_has_at_most_its_target_ticks_at_any_span() {
        // Up to days: present's steps, as the TUI's chart has them.
        assert_eq!(time_axis_step(76.0, 10), 10.0);
        assert_eq!(time_axis_step(3600.0, 10), 600.0);
        assert_eq!(time_axis_step(5.0 * 86_400.0, 10), 43_200.0);
        for span in [40.0 * 86_400.0, 3.7e7, u64::MAX as f64 / 1e9] {
            for target in [1, 9, 14] {
                let step = time_axis_step(span, target);
                assert!(span / step <= target as f64, "{span} s, {target}: {step}");
                assert_eq!(step % 86_400.0, 0.0, "{span} s, {target}: whole days");
            }
        }
    }

    #[test]
    fn downsample_keeps_a_short_drop() {
        let mut pts: Vec<ChartPoint> = (0..1000)
            .map(|i| pt(i as f64 * 0.1 + 0.05, 100.0))
            .collect();
        pts[503] = pt(50.35, 0.0);
        let out = downsample(&pts, 100.0, 50);
        assert_eq!(out.len(), 50);
        let dip = out.iter().find(|p| p.min_bps == 0.0).expect("drop kept");
        assert!(dip.max_bps == 100.0 && dip.copy_bps > 90.0);
        assert_eq!(out.iter().filter(|p| p.min_bps == 0.0).count(), 1);
    }

    #[test]
    fn display_date_shortens_rfc3339() {
        assert_eq!(display_date("2026-11-30T04:20:55Z"), "2026-11-30 04:20 UTC");
        assert_eq!(display_date("yesterday"), "yesterday");
    }
}
