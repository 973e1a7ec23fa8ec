//! Validated configuration: [`Config`] from the raw [`Cli`] flags (TryFrom), with cp's
//! SOURCE/DEST/-t/-T rules resolved into (source → destination) pairs.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{Cli, Command as CliCommand, OverwriteArg, PaceArg, ReflinkArg};
use crate::copy::{
    CopyError, CopyOptions, CopyRequest, Dereference, OverwritePolicy, ReflinkMode, SyncMode,
    resolve_targets,
};

/// Environment variable naming the directory that stands for `/` (same as `--sys-root`).
pub const SYS_ROOT_ENV: &str = "COPYSCOPE_SYS_ROOT";
/// Test-only: caps the engine's data rate (bytes/s) so tests can signal a copy mid-file.
pub const TEST_THROTTLE_ENV: &str = "COPYSCOPE_TEST_THROTTLE_BPS";

/// The tests' pacing hook: the rate [`TEST_THROTTLE_ENV`] asks for, in a build with the
/// `test-hooks` feature (the one `cargo test` makes); `None` in every other build, so a
/// release binary never reads the variable.
pub fn test_throttle_bps() -> Option<u64> {
    #[cfg(feature = "test-hooks")]
    {
        std::env::var(TEST_THROTTLE_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|v| *v > 0)
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        None
    }
}

/// Why the command line cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Copy(#[from] CopyError),
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Copy(CopyRequest),
    Demo {
        size_mb: u64,
        /// Replay the bundled ZFS recording first.
        replay: bool,
    },
    Replay {
        file: PathBuf,
        speed: f64,
    },
    Export {
        file: PathBuf,
        png: Option<PathBuf>,
        svg: Option<PathBuf>,
        text: Option<PathBuf>,
        markdown: Option<PathBuf>,
        /// Picture size in pixels (width, height).
        size: Option<(u32, u32)>,
        picture: Picture,
        /// Overwrite the default set beside the recording.
        force: bool,
    },
    /// `compare` and `export --compare`.
    Compare(CompareRequest),
    /// `report`: the Markdown report of a recording, to `output` or standard output.
    Report {
        file: PathBuf,
        output: Option<PathBuf>,
    },
    Bench(BenchRequest),
    Whatif(WhatifRequest),
    Completions(clap_complete::Shell),
    Man,
    Watch(WatchRequest),
    /// `copyscope pipe`: standard input to standard output.
    Pipe(PipeRequest),
}

/// `copyscope pipe`: the bytes expected (`-s`), for the percent and the ETA.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PipeRequest {
    pub size: Option<u64>,
}

/// What the user fixed about a picture: `--title`, `--ymax`, `--unit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Picture {
    pub title: Option<String>,
    /// Top of the speed axis, bytes/s.
    pub ymax_bps: Option<f64>,
    /// The axis unit: its divisor and label ("MB/s").
    pub unit: Option<(f64, &'static str)>,
}

/// `copyscope compare`: the recordings, their labels and the outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompareRequest {
    pub files: Vec<PathBuf>,
    pub labels: Vec<String>,
    pub overlay: bool,
    pub png: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub text: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub size: Option<(u32, u32)>,
    pub picture: Picture,
    pub force: bool,
}

/// `copyscope whatif`: the recording, the changes (validated) and the outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WhatifRequest {
    pub file: PathBuf,
    /// The real run made with the changes, to hold the prediction to.
    pub against: Option<PathBuf>,
    pub settings: crate::model::whatif::Settings,
    pub png: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub text: Option<PathBuf>,
    pub size: Option<(u32, u32)>,
    pub overlay: bool,
}

fn whatif_request(w: crate::cli::WhatifArgs) -> Result<WhatifRequest, ConfigError> {
    let mut settings = crate::model::whatif::Settings {
        pace_auto: w.pace == Some(PaceArg::Auto),
        pace_off: w.pace == Some(PaceArg::Off),
        ..Default::default()
    };
    for spec in &w.set {
        settings
            .set(spec)
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
    }
    if w.set.is_empty() && w.pace.is_none() {
        return Err(ConfigError::Invalid(
            "whatif: nothing to change: give --set NAME=VALUE (e.g. zfs_dirty_data_max=1G) or --pace auto|off".into(),
        ));
    }
    Ok(WhatifRequest {
        file: w.file,
        against: w.against,
        settings,
        png: w.png,
        svg: w.svg,
        text: w.text,
        size: w.size.as_deref().map(parse_size).transpose()?,
        overlay: w.overlay,
    })
}

/// `copyscope bench`: where and how big.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchRequest {
    pub dir: PathBuf,
    /// Bytes of each sequential write (default: from RAM and free space).
    pub size: Option<u64>,
    pub quick: bool,
    pub files: u64,
    /// Bytes of the tree (default: 6.8 GB capped by free space).
    pub tree_size: Option<u64>,
    pub force: bool,
    pub out: Option<PathBuf>,
}

/// A byte count with a unit (as `--bwlimit`'s: k/M/G/T powers of 1024, kB/MB/GB/TB of 1000).
fn parse_bytes(flag: &str, v: &str) -> Result<u64, ConfigError> {
    parse_rate(v).map_err(|_| {
        ConfigError::Invalid(format!(
            "{flag} '{v}': expected a size with a unit, e.g. 8G, 500M, 6.8GB (k/M/G/T powers of 1024, kB/MB/GB/TB of 1000)"
        ))
    })
}

fn bench_request(b: crate::cli::BenchArgs) -> Result<BenchRequest, ConfigError> {
    let files = b.files.unwrap_or(14_139);
    if files == 0 || files > 10_000_000 {
        return Err(ConfigError::Invalid("bench --files: 1 to 10000000".into()));
    }
    Ok(BenchRequest {
        dir: b.dir,
        size: b
            .size
            .as_deref()
            .map(|v| parse_bytes("--size", v))
            .transpose()?,
        quick: b.quick,
        files,
        tree_size: b
            .tree_size
            .as_deref()
            .map(|v| parse_bytes("--tree-size", v))
            .transpose()?,
        force: b.force,
        out: b.out,
    })
}

/// `--title`, `--ymax` and `--unit`, checked.
fn picture(p: crate::cli::PictureArgs) -> Result<Picture, ConfigError> {
    let ymax_bps = match p.ymax.as_deref() {
        None => None,
        Some(v) => Some(parse_rate(v).map_err(|_| {
            ConfigError::Invalid(format!(
                "--ymax '{v}': expected a speed with a unit, e.g. 200MB/s, 1.5GB/s, 100M"
            ))
        })? as f64),
    };
    let unit = match p.unit.as_deref() {
        None => None,
        Some(u) => Some(match u.trim().trim_end_matches("/s") {
            "B" => (1.0, "B/s"),
            "kB" | "KB" => (1e3, "kB/s"),
            "MB" => (1e6, "MB/s"),
            "GB" => (1e9, "GB/s"),
            _ => {
                return Err(ConfigError::Invalid(format!(
                    "--unit '{u}': one of B/s, kB/s, MB/s, GB/s"
                )));
            }
        }),
    };
    Ok(Picture {
        title: p.title,
        ymax_bps,
        unit,
    })
}

/// `copyscope watch`: what to watch and when to stop.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchRequest {
    /// A path on the watched filesystem.
    pub path: PathBuf,
    pub duration: Option<Duration>,
    pub until_idle: Option<Duration>,
    pub pids: Vec<u32>,
    pub comms: Vec<String>,
    /// `--net IFACE`: the interface whose receive rate is sampled.
    pub net: Option<String>,
    /// PATH was given (else `path` is the current directory, or with `all`/`list` every
    /// filesystem).
    pub path_given: bool,
    /// `--all`: follow every process found writing regular files.
    pub all: bool,
    /// `--list`: print the processes writing now and exit.
    pub list: bool,
    /// `--pipeline`: a stage of a pipeline, or the shell running it.
    pub pipeline: Vec<u32>,
}

/// How results are shown and sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct Display {
    pub plain: bool,
    pub json: bool,
    pub interval: Duration,
    pub ascii: bool,
    pub compact: bool,
    /// MiB/s instead of MB/s.
    pub binary: bool,
    pub record: Option<PathBuf>,
    pub screenshot: Option<PathBuf>,
    /// `--metrics ADDR`: where the Prometheus endpoint listens (copy and watch).
    pub metrics: Option<std::net::SocketAddr>,
    /// The directory standing for `/` when reading /proc and /sys.
    pub sys_root: PathBuf,
    pub drop_ratio: f64,
    pub recover_ratio: f64,
    pub min_drop: Duration,
    /// `-v`: a "'SOURCE' -> 'DEST'" line per file in plain output.
    pub verbose: bool,
    /// `copyscope watch`: the writes are someone else's.
    pub watch: bool,
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub command: Command,
    pub display: Display,
    /// `--overwrite`/-i/-f/-n/-u was given (otherwise the frontend picks: ask in the TUI,
    /// always without a terminal).
    pub overwrite_explicit: bool,
}

/// `--bwlimit` RATE: a number with a unit, bytes per second. k, M, G, T (and KiB, MiB…) are
/// powers of 1024 as in pv and rsync; kB, MB, GB, TB are powers of 1000. A bare number is refused:
/// pv reads it as bytes/s and rsync as KiB/s, so either guess would surprise half the users.
pub fn parse_rate(s: &str) -> Result<u64, ConfigError> {
    let bad = |why: &str| {
        ConfigError::Invalid(format!(
            "--bwlimit '{s}': {why} (e.g. 40M, 1.5G, 500k; k/M/G/T are powers of 1024, kB/MB/GB powers of 1000, B bytes)"
        ))
    };
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| bad("give a unit"))?;
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad("not a number"))?;
    let k: f64 = match unit.trim() {
        "B" => 1.0,
        "k" | "K" | "KiB" | "kiB" => 1024.0,
        "M" | "MiB" => 1024f64.powi(2),
        "G" | "GiB" => 1024f64.powi(3),
        "T" | "TiB" => 1024f64.powi(4),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => return Err(bad("unknown unit")),
    };
    let bps = n * k;
    if !(1024.0..1e15).contains(&bps) {
        return Err(bad("must be between 1k and 1000T"));
    }
    Ok(bps as u64)
}

fn parse_size(s: &str) -> Result<(u32, u32), ConfigError> {
    let bad = || {
        ConfigError::Invalid(format!(
            "--size '{s}': expected WIDTHxHEIGHT, e.g. 1200x600"
        ))
    };
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if w == 0 || h == 0 || w > 10_000 || h > 10_000 {
        return Err(bad());
    }
    Ok((w, h))
}

/// `--metrics ADDR`: HOST:PORT (a name is resolved, its first address taken), or :PORT for
/// every interface as Prometheus exporters read it; only for a copy and watch.
fn metrics_addr(cli: &Cli, v: Option<&str>) -> Result<Option<std::net::SocketAddr>, ConfigError> {
    use std::net::ToSocketAddrs;
    let Some(v) = v else {
        return Ok(None);
    };
    if !matches!(
        cli.command,
        None | Some(CliCommand::Watch(_) | CliCommand::Pipe(_))
    ) {
        return Err(ConfigError::Invalid(
            "--metrics: only for a copy, copyscope watch and copyscope pipe".into(),
        ));
    }
    let bad = |why: String| {
        ConfigError::Invalid(format!(
            "--metrics '{v}': {why} (e.g. 127.0.0.1:9727, localhost:9727, or :9727 for every interface)"
        ))
    };
    let spelled = match v.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => v.to_string(),
    };
    let mut addrs = spelled
        .to_socket_addrs()
        .map_err(|e| bad(crate::present::quote::said(&e)))?;
    addrs
        .next()
        .map(Some)
        .ok_or_else(|| bad("no address".into()))
}

impl TryFrom<Cli> for Config {
    type Error = ConfigError;

    #[expect(
        clippy::too_many_lines,
        reason = "every flag validated in one pass, one check after another, each with its own error"
    )]
    fn try_from(cli: Cli) -> Result<Self, Self::Error> {
        let d = &cli.display_args();
        if !(10..=60_000).contains(&d.interval) {
            return Err(ConfigError::Invalid(format!(
                "--interval {}: must be between 10 and 60000 ms",
                d.interval
            )));
        }
        let (o, r) = (&d.output, &d.drops);
        if !(r.drop_ratio > 0.0 && r.drop_ratio < 1.0) {
            return Err(ConfigError::Invalid(
                "--drop-ratio must be between 0 and 1".into(),
            ));
        }
        if !(r.recover_ratio > r.drop_ratio && r.recover_ratio <= 1.0) {
            return Err(ConfigError::Invalid(
                "--recover-ratio must be above --drop-ratio and at most 1".into(),
            ));
        }
        let sys_root = d
            .sys_root
            .clone()
            .or_else(|| {
                std::env::var_os(SYS_ROOT_ENV)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from("/"));
        let display = Display {
            plain: o.plain,
            json: o.json,
            interval: Duration::from_millis(d.interval),
            ascii: o.ascii,
            compact: o.compact,
            binary: o.binary,
            record: d.record.clone(),
            screenshot: d.screenshot.clone(),
            metrics: metrics_addr(&cli, d.metrics.as_deref())?,
            sys_root,
            drop_ratio: r.drop_ratio,
            recover_ratio: r.recover_ratio,
            min_drop: Duration::from_millis(r.min_drop_ms),
            verbose: cli.copy.verbose,
            watch: matches!(cli.command, Some(CliCommand::Watch(_))),
        };
        let c = &cli.copy;
        let overwrite_explicit =
            c.interactive || c.force || c.no_clobber || c.update || c.overwrite.is_some();
        let command = match cli.command {
            Some(CliCommand::Demo { size, replay, .. }) => {
                if size == 0 || size > 1_000_000 {
                    return Err(ConfigError::Invalid("demo --size: 1 to 1000000 MB".into()));
                }
                Command::Demo {
                    size_mb: size,
                    replay,
                }
            }
            Some(CliCommand::Replay { file, speed, .. }) => {
                if speed.is_nan() || speed <= 0.0 {
                    return Err(ConfigError::Invalid(
                        "replay --speed must be above 0".into(),
                    ));
                }
                Command::Replay { file, speed }
            }
            Some(CliCommand::Export {
                file,
                png,
                svg,
                text,
                markdown,
                size,
                picture: pic,
                force,
                compare,
                label,
                overlay,
                ..
            }) if !compare.is_empty() => Command::Compare(CompareRequest {
                files: std::iter::once(file).chain(compare).collect(),
                labels: label,
                overlay,
                png,
                svg,
                text,
                markdown,
                size: size.as_deref().map(parse_size).transpose()?,
                picture: picture(pic)?,
                force,
            }),
            Some(CliCommand::Export {
                file,
                png,
                svg,
                text,
                markdown,
                size,
                picture: pic,
                force,
                ..
            }) => Command::Export {
                file,
                png,
                svg,
                text,
                markdown,
                size: size.as_deref().map(parse_size).transpose()?,
                picture: picture(pic)?,
                force,
            },
            Some(CliCommand::Compare(c)) => Command::Compare(CompareRequest {
                files: c.files,
                labels: c.label,
                overlay: c.overlay,
                png: c.png,
                svg: c.svg,
                text: c.text,
                markdown: c.markdown,
                size: c.size.as_deref().map(parse_size).transpose()?,
                picture: picture(c.picture)?,
                force: c.force,
            }),
            Some(CliCommand::Report { file, output, .. }) => Command::Report { file, output },
            Some(CliCommand::Completions { shell }) => Command::Completions(shell),
            Some(CliCommand::Man) => Command::Man,
            Some(CliCommand::Watch(w)) => Command::Watch(watch_request(w)?),
            Some(CliCommand::Bench(b)) => Command::Bench(bench_request(b)?),
            Some(CliCommand::Whatif(w)) => Command::Whatif(whatif_request(w)?),
            Some(CliCommand::Pipe(p)) => Command::Pipe(PipeRequest {
                size: p
                    .size
                    .as_deref()
                    .map(|v| parse_bytes("-s/--size", v))
                    .transpose()?,
            }),
            None => Command::Copy(copy_request(&cli)?),
        };
        Ok(Config {
            command,
            display,
            overwrite_explicit,
        })
    }
}

/// Seconds from the command line as a duration (positive and finite).
fn seconds(flag: &str, v: Option<f64>) -> Result<Option<Duration>, ConfigError> {
    v.map(|secs| {
        Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| ConfigError::Invalid(format!("{flag} {secs}: must be above 0 seconds")))
    })
    .transpose()
}

/// `watch`'s flags: the path defaults to the current directory (with `--all` or `--list`, to
/// `/`: every filesystem); a /proc comm is at most 15 bytes.
fn watch_request(w: crate::cli::WatchArgs) -> Result<WatchRequest, ConfigError> {
    if let Some(c) = w.comm.iter().find(|c| c.is_empty() || c.len() > 15) {
        return Err(ConfigError::Invalid(format!(
            "--comm {c:?}: a command name is 1 to 15 bytes (as in /proc/PID/comm)"
        )));
    }
    if let Some(n) = w
        .net
        .as_deref()
        .filter(|n| !crate::sample::net::valid_iface(n))
    {
        return Err(ConfigError::Invalid(format!(
            "--net {n:?}: an interface name is 1 to 15 bytes without '/' (as in /sys/class/net)"
        )));
    }
    let everywhere = if w.all || w.list { "/" } else { "." };
    Ok(WatchRequest {
        path_given: w.path.is_some(),
        all: w.all,
        list: w.list,
        path: w.path.unwrap_or_else(|| PathBuf::from(everywhere)),
        duration: seconds("--duration", w.duration)?,
        until_idle: seconds("--until-idle", w.until_idle)?,
        pids: w.pid,
        comms: w.comm,
        net: w.net,
        pipeline: w.pipeline,
    })
}

/// Engine options and (source → destination) pairs from the copy flags.
fn copy_request(cli: &Cli) -> Result<CopyRequest, ConfigError> {
    let c = &cli.copy;
    // As cp: the later of -i and -n wins (clap keeps only that one); -n wins over -f in any
    // order; -u filters -f (only newer sources overwrite).
    let overwrite = if c.no_clobber {
        OverwritePolicy::Never
    } else if c.interactive {
        OverwritePolicy::Ask
    } else if c.update {
        OverwritePolicy::Update
    } else if c.force {
        OverwritePolicy::Always
    } else {
        match c.overwrite {
            Some(OverwriteArg::Always) => OverwritePolicy::Always,
            Some(OverwriteArg::Never) => OverwritePolicy::Never,
            Some(OverwriteArg::Update) => OverwritePolicy::Update,
            // Ask: the TUI asks; without a terminal the engine has no asker and overwrites, as cp.
            Some(OverwriteArg::Ask) | None => OverwritePolicy::Ask,
        }
    };
    let jobs = c.jobs.unwrap_or_else(crate::copy::options::default_jobs);
    if !(1..=256).contains(&jobs) {
        return Err(ConfigError::Invalid(
            "--jobs must be between 1 and 256".into(),
        ));
    }
    let buffer_size = match c.buffer_kib {
        None => crate::copy::options::DEFAULT_BUFFER,
        Some(k) if (4..=262_144).contains(&k) => k << 10,
        Some(_) => {
            return Err(ConfigError::Invalid(
                "--buffer-kib must be between 4 and 262144".into(),
            ));
        }
    };
    let throttle_bps = test_throttle_bps();
    let options = CopyOptions {
        overwrite,
        preserve_mode_time: !c.no_preserve,
        preserve_owner: c.preserve || c.archive,
        hard_links: c.archive || c.no_dereference_links,
        xattrs: c.archive && !c.no_xattrs,
        dereference: if c.archive || c.no_dereference || c.no_dereference_links {
            Dereference::Never
        } else if c.dereference {
            Dereference::Always
        } else {
            Dereference::CommandLine
        },
        sync: if c.no_sync {
            SyncMode::None
        } else if c.fsync {
            SyncMode::PerFile
        } else {
            SyncMode::Syncfs
        },
        verify: c.verify,
        reflink: match c.reflink {
            ReflinkArg::Never => ReflinkMode::Never,
            ReflinkArg::Auto => ReflinkMode::Auto,
            ReflinkArg::Always => ReflinkMode::Always,
        },
        jobs,
        buffer_size,
        copy_file_range: !c.no_copy_file_range,
        throttle_bps,
        bwlimit_bps: c.bwlimit.as_deref().map(parse_rate).transpose()?,
        bwlimit_is_demo_pace: false,
        pace_auto: c.pace == Some(PaceArg::Auto),
        one_file_system: c.one_file_system,
        only_newer: c.update && overwrite == OverwritePolicy::Ask,
        exclude: c.exclude.clone(),
    };
    if !options.exclude.is_empty() {
        // Checked here so a bad pattern is a usage error before anything is copied.
        crate::copy::filter::Exclude::new(&options.exclude).map_err(ConfigError::Invalid)?;
    }
    let pairs = resolve_targets(
        &c.paths,
        c.target_directory.as_deref(),
        c.no_target_directory,
    )?;
    Ok(CopyRequest { pairs, options })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Config, String> {
        let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
        Config::try_from(cli).map_err(|e| e.to_string())
    }

    #[test]
    fn copy_is_the_default_command_and_demo_a_subcommand() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let b = t.path().join("b");
        let c = parse(&["copyscope", a.to_str().unwrap(), b.to_str().unwrap()]).unwrap();
        match c.command {
            Command::Copy(r) => {
                assert_eq!(r.pairs.len(), 1);
                assert_eq!(r.pairs[0].dest, b);
                assert_eq!(r.options.overwrite, OverwritePolicy::Ask);
                assert_eq!(r.options.sync, SyncMode::Syncfs);
            }
            other => panic!("{other:?}"),
        }
        let c = parse(&["copyscope", "demo", "--size", "5", "--plain"]).unwrap();
        assert_eq!(
            c.command,
            Command::Demo {
                size_mb: 5,
                replay: false
            }
        );
        assert!(c.display.plain);
    }

    #[test]
    fn flags_map_to_options() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let b = t.path().join("b");
        let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
        let c = parse(&["copyscope", "-a", "-n", "--no-sync", "--jobs", "3", a, b]).unwrap();
        let Command::Copy(r) = c.command else {
            panic!()
        };
        assert!(r.options.preserve_owner && r.options.hard_links);
        assert_eq!(r.options.dereference, Dereference::Never);
        assert_eq!(r.options.overwrite, OverwritePolicy::Never);
        assert_eq!(r.options.sync, SyncMode::None);
        assert_eq!(r.options.jobs, 3);
        assert!(c.overwrite_explicit);
        let c = parse(&[
            "copyscope",
            "-L",
            "--fsync",
            "--overwrite=update",
            "--reflink=auto",
            a,
            b,
        ])
        .unwrap();
        let Command::Copy(r) = c.command else {
            panic!()
        };
        assert_eq!(r.options.dereference, Dereference::Always);
        assert_eq!(r.options.sync, SyncMode::PerFile);
        assert_eq!(r.options.overwrite, OverwritePolicy::Update);
        assert_eq!(r.options.reflink, ReflinkMode::Auto);
        assert!(parse(&["copyscope", "--interval", "1", a, b]).is_err());
        assert!(parse(&["copyscope", "--jobs", "0", a, b]).is_err());
        assert!(parse(&["copyscope", "--fsync", "--no-sync", a, b]).is_err());
    }

    #[test]
    fn bwlimit_rates_need_a_unit() {
        assert_eq!(parse_rate("40M").unwrap(), 40 << 20);
        assert_eq!(parse_rate("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_rate("500k").unwrap(), 500 << 10);
        assert_eq!(parse_rate("500kB").unwrap(), 500_000);
        assert_eq!(parse_rate("2MB/s").unwrap(), 2_000_000);
        assert_eq!(parse_rate("4096B").unwrap(), 4096);
        for bad in ["1000", "", "M", "1.2.3M", "5X", "0k", "10B"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_clobber_wins_over_force_and_the_later_of_i_and_n_wins() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let (a, b) = (a.to_str().unwrap(), t.path().join("b"));
        let b = b.to_str().unwrap();
        let policy = |flags: &[&str]| {
            let mut args = vec!["copyscope"];
            args.extend_from_slice(flags);
            args.extend([a, b]);
            match parse(&args).unwrap().command {
                Command::Copy(r) => r.options.overwrite,
                _ => panic!(),
            }
        };
        assert_eq!(policy(&["-n", "-f"]), OverwritePolicy::Never);
        assert_eq!(policy(&["-f", "-n"]), OverwritePolicy::Never);
        assert_eq!(policy(&["-i", "-n"]), OverwritePolicy::Never);
        assert_eq!(policy(&["-n", "-i"]), OverwritePolicy::Ask);
        assert_eq!(policy(&["-f", "-i"]), OverwritePolicy::Ask);
        assert_eq!(policy(&["-i", "-f"]), OverwritePolicy::Ask);
        assert_eq!(policy(&["-f", "-u"]), OverwritePolicy::Update);
        assert_eq!(policy(&["-i", "-u"]), OverwritePolicy::Ask);
        assert_eq!(policy(&["-f"]), OverwritePolicy::Always);
        let c = parse(&["copyscope", "-d", a, b]).unwrap();
        let Command::Copy(r) = c.command else {
            panic!()
        };
        assert!(r.options.hard_links);
        assert_eq!(r.options.dereference, Dereference::Never);
    }

    #[test]
    fn export_size_and_missing_operands() {
        assert_eq!(parse_size("1200x600").unwrap(), (1200, 600));
        assert!(parse_size("12x").is_err());
        assert!(
            parse(&["copyscope", "only-one"])
                .unwrap_err()
                .contains("missing destination")
        );
        let c = parse(&[
            "copyscope",
            "export",
            "rec.jsonl",
            "--png",
            "a.png",
            "--size",
            "800x400",
        ])
        .unwrap();
        assert!(matches!(
            c.command,
            Command::Export {
                size: Some((800, 400)),
                ..
            }
        ));
    }
}
