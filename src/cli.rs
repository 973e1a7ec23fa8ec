//! Raw command-line flags (clap derive). Validation lives in `config`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXAMPLES: &str = "\
Examples:
  copyscope ~/iso /tank/backup/           copy a tree into a directory, with the live chart
  copyscope -a photos/ /mnt/nas/photos    keep ownership, hard links and symlinks as they are
  copyscope --verify big.img /mnt/usb/    read every file back from the device and compare
  copyscope --plain a b c dir/ > log      one progress line every 2 s and a summary
  copyscope --json src/ dst/ | jq .       JSON lines: one per interval and one per event
  copyscope -- demo dst                   copy a file that is literally named 'demo'
  copyscope demo                          make sample data in a temp dir and copy it live

Exit status: 0 all copied, 1 some files failed, 2 usage or fatal error (disk full, refusal),
130 cancelled (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT).";

/// Copy files and trees with a live speed chart that explains every drop.
#[derive(Debug, Parser)]
#[command(
    name = "copyscope",
    version = env!("COPYSCOPE_VERSION"),
    about,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    override_usage = "copyscope [OPTIONS] SOURCE... DEST\n       copyscope [OPTIONS] -t DIR SOURCE...\n       copyscope <COMMAND>"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub copy: CopyArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
}

/// Options of the default command: the copy.
#[derive(Debug, Args, Default, Clone)]
pub struct CopyArgs {
    /// SOURCE... DEST, as with cp (DEST may be an existing directory to copy into).
    #[arg(value_name = "PATHS", required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// Copy all SOURCE arguments into DIR.
    #[arg(short = 't', long = "target-directory", value_name = "DIR")]
    pub target_directory: Option<PathBuf>,
    /// Treat DEST as a normal file (never copy into it).
    #[arg(
        short = 'T',
        long = "no-target-directory",
        conflicts_with = "target_directory"
    )]
    pub no_target_directory: bool,
    /// Accepted for habit: directories are always copied recursively.
    #[arg(short = 'r', short_alias = 'R', long = "recursive")]
    pub recursive: bool,
    /// What to do when a destination file exists [default: ask in the TUI, always without a terminal].
    #[arg(long, value_enum, value_name = "WHEN")]
    pub overwrite: Option<OverwriteArg>,
    /// Ask before overwriting (--overwrite=ask); without the TUI the question goes to stderr and
    /// the answer is read from stdin, as with cp. The later of -i and -n wins.
    #[arg(short = 'i', long = "interactive", overrides_with = "no_clobber")]
    pub interactive: bool,
    /// Overwrite without asking (--overwrite=always); -n wins over it, whatever the order.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Never overwrite (--overwrite=never).
    #[arg(short = 'n', long = "no-clobber", overrides_with = "interactive")]
    pub no_clobber: bool,
    /// Overwrite only when the source is newer (--overwrite=update); with -i, ask only then.
    #[arg(short = 'u', long = "update")]
    pub update: bool,
    /// Also preserve ownership (when permitted).
    #[arg(short = 'p')]
    pub preserve: bool,
    /// Archive: -p plus hard links kept within the tree, symlinks never followed, extended
    /// attributes and POSIX ACLs kept.
    #[arg(short = 'a', long = "archive")]
    pub archive: bool,
    /// With -a: do not keep extended attributes and POSIX ACLs.
    #[arg(long = "no-xattrs")]
    pub no_xattrs: bool,
    /// Follow symlinks inside the tree (copy what they point to).
    #[arg(
        short = 'L',
        long = "dereference",
        conflicts_with = "archive",
        overrides_with = "no_dereference"
    )]
    pub dereference: bool,
    /// Never follow symlinks in SOURCE, not even those named on the command line.
    #[arg(short = 'P', long = "no-dereference", overrides_with = "dereference")]
    pub no_dereference: bool,
    /// Same as --no-dereference with hard links kept within the tree (cp's -d).
    #[arg(short = 'd')]
    pub no_dereference_links: bool,
    /// Print 'SOURCE' -> 'DEST' for every directory made and file copied, as cp -v (plain output;
    /// the TUI shows the current file).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Stay on the source's file system: directories that are mount points are created empty.
    #[arg(short = 'x', long = "one-file-system")]
    pub one_file_system: bool,
    /// Leave out entries matching PATTERN (gitignore syntax, matched against the path relative
    /// to the source directory, e.g. `*.tmp`, `/build`, `cache/`, `**/node_modules`); repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Limit the copy speed to RATE per second, e.g. 40M, 1.5G, 500k (k, M, G, T: powers of
    /// 1024; kB, MB, GB, TB: powers of 1000; B: bytes). A unit is required.
    #[arg(long, value_name = "RATE")]
    pub bwlimit: Option<String>,
    /// `auto`: pace the copy to the destination's sustained rate, measured as it goes, so the
    /// data waiting in RAM stays under the point where the kernel holds writers (Linux dirty
    /// throttling, the ZFS write throttle and full txgs): no stalls for this copy or the
    /// destination's other writers, about the same end.
    #[arg(long, value_name = "MODE", conflicts_with = "bwlimit")]
    pub pace: Option<PaceArg>,
    /// Do not preserve mode and modification time.
    #[arg(long = "no-preserve")]
    pub no_preserve: bool,
    /// fsync every file before it gets its real name, instead of one syncfs at the end.
    #[arg(long, conflicts_with = "no_sync")]
    pub fsync: bool,
    /// Skip the final flush: "done" then means "in the page cache".
    #[arg(long = "no-sync")]
    pub no_sync: bool,
    /// Read every written file back from the device and compare a BLAKE3 hash with the source.
    #[arg(long)]
    pub verify: bool,
    /// Share blocks with the source (FICLONE) instead of copying data.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "never")]
    pub reflink: ReflinkArg,
    /// Parallel workers for small files (large files stream one at a time) [default: CPUs, 2 to 8].
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Benchmarking: read/write buffer size in KiB.
    #[arg(long = "buffer-kib", value_name = "KIB", hide = true)]
    pub buffer_kib: Option<usize>,
    /// Benchmarking: never use copy_file_range (always pread/pwrite through the buffer).
    #[arg(long = "no-copy-file-range", hide = true)]
    pub no_copy_file_range: bool,
}

/// Display options of the copy, the demo and watch: how the run is shown, sampled, recorded.
#[derive(Debug, Args, Clone)]
pub struct DisplayArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// Sampling interval in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub interval: u64,
    /// Write a recording (JSON Lines) of the run to FILE; `copyscope replay` and `export` read it.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Write PNG, SVG, text and Markdown pictures of the run into DIR at the end.
    #[arg(long, value_name = "DIR")]
    pub screenshot: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics while the copy or watch runs
    /// (e.g. 127.0.0.1:9727; :9727 is every interface). No authentication: keep it on
    /// localhost or a trusted network (docs/metrics.md).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Directory that stands for / when reading /proc and /sys (tests and demos); also COPYSCOPE_SYS_ROOT.
    #[arg(long = "sys-root", value_name = "DIR", hide = true)]
    pub sys_root: Option<PathBuf>,
    #[command(flatten)]
    pub drops: DropArgs,
}

impl Default for DisplayArgs {
    fn default() -> Self {
        DisplayArgs {
            output: OutputArgs::default(),
            interval: 100,
            record: None,
            screenshot: None,
            metrics: None,
            sys_root: None,
            drops: DropArgs::default(),
        }
    }
}

/// How the run is shown: the copy, the demo, watch and replay.
#[derive(Debug, Args, Default, Clone)]
pub struct OutputArgs {
    /// Plain text instead of the TUI, even on a terminal: a progress line every 2 s and a
    /// summary.
    #[arg(long)]
    pub plain: bool,
    /// JSON lines on stdout: one object per interval and one per event.
    #[arg(long, conflicts_with = "plain")]
    pub json: bool,
    /// Draw with ASCII characters only.
    #[arg(long)]
    pub ascii: bool,
    /// Compact layout: the chart inside the progress bar.
    #[arg(long)]
    pub compact: bool,
    /// Binary units (MiB/s) instead of decimal (MB/s).
    #[arg(long)]
    pub binary: bool,
}

/// When a dip in speed counts as a drop (every command that runs the model).
#[derive(Debug, Args, Clone)]
pub struct DropArgs {
    /// A drop starts when speed falls below this share of the reference.
    #[arg(long = "drop-ratio", value_name = "R", default_value_t = 0.5)]
    pub drop_ratio: f64,
    /// A drop ends when speed recovers to this share of the reference.
    #[arg(long = "recover-ratio", value_name = "R", default_value_t = 0.8)]
    pub recover_ratio: f64,
    /// A drop must last at least this long (ms).
    #[arg(long = "min-drop-ms", value_name = "MS", default_value_t = 300)]
    pub min_drop_ms: u64,
}

impl Default for DropArgs {
    fn default() -> Self {
        DropArgs {
            drop_ratio: 0.5,
            recover_ratio: 0.8,
            min_drop_ms: 300,
        }
    }
}

impl Cli {
    /// The display options of the command given: each subcommand takes only its own
    /// options, and the rest keep their defaults.
    pub fn display_args(&self) -> DisplayArgs {
        match &self.command {
            None => self.display.clone(),
            Some(Command::Demo { display, .. }) => display.clone(),
            Some(Command::Watch(w)) => w.display.clone(),
            Some(Command::Pipe(p)) => p.display.clone(),
            Some(Command::Bench(b)) => b.display.clone(),
            Some(Command::Replay {
                plain,
                json,
                ascii,
                compact,
                binary,
                screenshot,
                drops,
                ..
            }) => DisplayArgs {
                output: OutputArgs {
                    plain: *plain,
                    json: *json,
                    ascii: *ascii,
                    compact: *compact,
                    binary: *binary,
                },
                screenshot: screenshot.clone(),
                drops: drops.clone(),
                ..DisplayArgs::default()
            },
            Some(Command::Export { ascii, drops, .. }) => DisplayArgs {
                output: OutputArgs {
                    ascii: *ascii,
                    ..OutputArgs::default()
                },
                drops: drops.clone(),
                ..DisplayArgs::default()
            },
            Some(Command::Compare(c)) => DisplayArgs {
                drops: c.drops.clone(),
                ..DisplayArgs::default()
            },
            Some(Command::Report { ascii, drops, .. }) => DisplayArgs {
                output: OutputArgs {
                    ascii: *ascii,
                    ..OutputArgs::default()
                },
                drops: drops.clone(),
                ..DisplayArgs::default()
            },
            Some(Command::Whatif(w)) => DisplayArgs {
                output: OutputArgs {
                    ascii: w.ascii,
                    ..OutputArgs::default()
                },
                drops: w.drops.clone(),
                ..DisplayArgs::default()
            },
            Some(Command::Completions { .. } | Command::Man) => DisplayArgs::default(),
        }
    }
}

/// `--overwrite` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverwriteArg {
    Ask,
    Always,
    Never,
    Update,
}

/// `--reflink` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReflinkArg {
    #[default]
    Never,
    Auto,
    Always,
}

/// `--pace` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PaceArg {
    Auto,
    /// Unpaced (the default for a copy; for `whatif`, a paced recording replayed free).
    Off,
}

/// Subcommands (the copy itself is the default command).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Copy sample data into a temp dir with the live chart, paced so you can watch, then
    /// print the summary and write a picture of the run.
    #[command(after_help = DEMO_HELP)]
    Demo {
        /// Amount of sample data in MB.
        #[arg(long, value_name = "MB", default_value_t = 400)]
        size: u64,
        /// First replay the bundled real recording of a copy onto ZFS with txg stalls
        /// (q ends the replay), then run the live demo.
        #[arg(long)]
        replay: bool,
        #[command(flatten)]
        display: DisplayArgs,
    },
    /// Re-draw a recording made with --record: the same chart, drops and causes, with
    /// playback speed, pause and seeking; --plain or --json print its summary instead.
    #[command(after_help = REPLAY_HELP)]
    Replay {
        /// The recording (JSON Lines, written by --record).
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Playback speed factor (1, 10, …; `inf` = as fast as possible). `x` cycles it.
        #[arg(long, value_name = "FACTOR", default_value_t = 1.0)]
        speed: f64,
        /// Print the summary the copy printed instead of the TUI.
        #[arg(long)]
        plain: bool,
        /// Print JSON lines instead of the TUI: each event the model finds, then a summary.
        #[arg(long, conflicts_with = "plain")]
        json: bool,
        /// Draw with ASCII characters only.
        #[arg(long)]
        ascii: bool,
        /// Compact layout: the chart inside the progress bar.
        #[arg(long)]
        compact: bool,
        /// Binary units (MiB/s) instead of decimal (MB/s).
        #[arg(long)]
        binary: bool,
        /// Also write PNG, SVG, text and Markdown pictures of the whole recording into DIR.
        #[arg(long, value_name = "DIR")]
        screenshot: Option<PathBuf>,
        #[command(flatten)]
        drops: DropArgs,
    },
    /// Write pictures and tables of a recording, for a forum post or a bug report. With no
    /// --png/--svg/--text/--markdown, writes all four beside the recording (NAME.png, …).
    #[command(after_help = EXPORT_HELP)]
    Export {
        /// The recording (JSON Lines, written by --record).
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Write the chart as a PNG picture to FILE.
        #[arg(long, value_name = "FILE")]
        png: Option<PathBuf>,
        /// Write the chart as an SVG drawing to FILE (the PNG is this drawing, rasterised).
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Write a text chart with the drop list to FILE (`-`: standard output).
        #[arg(long, value_name = "FILE")]
        text: Option<PathBuf>,
        /// Write a Markdown table of the figures and drops to FILE (`-`: standard output).
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
        /// Picture size in pixels, WxH [default: 1600x900].
        #[arg(long, value_name = "WxH")]
        size: Option<String>,
        /// Draw the text chart with ASCII characters only.
        #[arg(long)]
        ascii: bool,
        #[command(flatten)]
        drops: DropArgs,
        #[command(flatten)]
        picture: PictureArgs,
        /// Without named outputs: overwrite the set beside the recording if it exists.
        #[arg(long)]
        force: bool,
        /// Compare with these recordings: one picture of all the runs (see `compare`).
        #[arg(long, value_name = "FILE")]
        compare: Vec<PathBuf>,
        /// With --compare: the runs' labels, in order (repeatable).
        #[arg(long, value_name = "TEXT", requires = "compare")]
        label: Vec<String>,
        /// With --compare: one plot with a line per run instead of stacked panels.
        #[arg(long, requires = "compare")]
        overlay: bool,
    },
    /// One Markdown file of a recording for a GitHub issue or a forum post: the figures,
    /// drops, verdict and time budget, the text chart, the system (kernel and OpenZFS
    /// versions, RAM) and its tunables (with the files they come from), and the txgs, dmu_tx,
    /// disk and page-cache figures around the worst drop.
    Report {
        /// The recording (JSON Lines, written by --record).
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Write the report to FILE instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Draw the text chart with ASCII characters only.
        #[arg(long)]
        ascii: bool,
        #[command(flatten)]
        drops: DropArgs,
    },
    /// Draw several recordings (copy, watch or bench) in one picture on a shared time axis
    /// and speed scale, with a Markdown table of the runs side by side.
    #[command(after_help = COMPARE_HELP)]
    Compare(CompareArgs),
    /// Predict a recorded copy under other tunables: its measured rates replayed through a
    /// simulation of the ZFS write throttle and txg cycle, or of Linux's dirty throttling;
    /// the predicted drops, longest stall, time lost and end against the real ones, the advice
    /// that follows, and both charts on one scale.
    #[command(after_help = WHATIF_HELP)]
    Whatif(WhatifArgs),
    /// Chart and explain the writes something else makes into the filesystem holding PATH
    /// (smbd, nfsd, rsync, zfs receive, another cp), until q, --duration or --until-idle.
    Watch(WatchArgs),
    /// Pass standard input to standard output unchanged (as pv does) with the live chart on
    /// the terminal (stderr), explaining every drop: a reader downstream that stopped taking
    /// data, the disk behind `> FILE`, a source upstream that stalled.
    #[command(after_help = PIPE_HELP)]
    Pipe(PipeArgs),
    /// Benchmark the filesystem holding DIR with the live chart: sequential write of zeros and
    /// of random data, read back uncached, a tree of many files written and read back; prints a
    /// Markdown table and a summary for a forum post and keeps a recording per phase.
    #[command(after_help = BENCH_HELP)]
    Bench(BenchArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) to standard output.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to standard output: `copyscope man | man -l -`.
    Man,
}

const PIPE_HELP: &str = "\
The chart, the one-line progress (--plain; also when stderr is not a terminal) and --json go to
stderr: stdout carries the data. Exit status: 0 all passed, 130 cancelled, 141 the reader of
stdout closed it (as a shell reports for cat), 2 a read or write error.

Examples:
  tar c photos | copyscope pipe | ssh nas 'tar x -C /tank'    which stage holds the transfer
  copyscope pipe -s 20G < disk.img > /mnt/usb/disk.img         percent and ETA; the disk's causes
  zfs send tank@snap | copyscope pipe --record send.jsonl | zfs recv backup/tank";

const DEMO_HELP: &str = "\
Examples:
  copyscope demo                  the live chart for about 20 s, then the summary and a picture
  copyscope demo --size 2000      more data (still paced)
  copyscope demo --replay         first a real copy onto ZFS with txg stalls, replayed";

const REPLAY_HELP: &str = "\
Keys: space pause, x playback speed, ← → seek 5 s, Home/End start/end, + - zoom, ? help, q quit.

Examples:
  copyscope replay run.jsonl                  re-draw it in the TUI
  copyscope replay --plain run.jsonl          print the summary the copy printed
  copyscope replay --json run.jsonl | jq .    each drop with its cause, and the figures";

const BENCH_HELP: &str = "\
Everything is written in a hidden scratch directory with a unique name made inside DIR, and
removed at the end, on cancel (q q, Ctrl-C, SIGTERM) and when the disk fills up. The recordings,
bench.md and bench.txt go to --out (default: a new directory named after the date and time in
the current directory; never inside DIR).

Examples:
  copyscope bench /tank/test                 the full bench (2 x RAM per sequential write)
  copyscope bench --quick /mnt/usb           about a minute
  copyscope bench --size 4G --files 2000 --tree-size 1G /srv/data --out results/
  copyscope compare results/*-write-random.jsonl other/*-write-random.jsonl --png vs.png";

const COMPARE_HELP: &str = "\
Without --png/--svg/--text/--markdown: compare.png and compare.md in the current directory.

Examples:
  copyscope compare zfs.jsonl ext4.jsonl --png vs.png --markdown -   stacked, one speed scale
  copyscope compare a.jsonl b.jsonl --overlay --label before --label after --png ab.png
  copyscope export a.jsonl --compare b.jsonl --title 'NAS: ZFS vs ext4' --ymax 200MB/s";

const WHATIF_HELP: &str = "\
Tunables for --set: zfs_dirty_data_max, zfs_txg_timeout, zfs_dirty_data_sync_percent,
zfs_delay_min_dirty_percent, zfs_delay_scale (a ZFS recording); vm.dirty_bytes,
vm.dirty_background_bytes, vm.dirty_ratio, vm.dirty_background_ratio (a disk's page cache).
Sizes as the kernel takes them (bytes) or with a unit (64M, 1G, 300MB). The summary goes to
standard output; it says what the simulation does not know (other writers, compression, the
disks' queueing, the CPU). Nothing on the system is changed.

Examples:
  copyscope whatif run.jsonl --set zfs_dirty_data_max=1G
  copyscope whatif run.jsonl --set zfs_dirty_data_max=256M --set zfs_txg_timeout=2 --png w.png
  copyscope whatif run.jsonl --pace auto --text -
  copyscope whatif before.jsonl --set zfs_dirty_data_max=64M --against after.jsonl --png vs.png
  copyscope whatif ext4.jsonl --set vm.dirty_bytes=300M --set vm.dirty_background_bytes=100M";

const EXPORT_HELP: &str = "\
Examples:
  copyscope export run.jsonl                   run.png, run.svg, run.txt and run.md beside it
  copyscope export run.jsonl --png chart.png   just the picture
  copyscope export run.jsonl --markdown -      a table to paste into a post";
/// What a picture shows, fixed by the user (export and compare).
#[derive(Debug, Args, Default, Clone)]
pub struct PictureArgs {
    /// Title of the picture (instead of "source → destination").
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Top of the speed axis, e.g. 200MB/s, 1.5GB/s, 100M (so pictures can be set side by side).
    #[arg(long, value_name = "RATE")]
    pub ymax: Option<String>,
    /// Unit of the speed axis: B/s, kB/s, MB/s or GB/s [default: what suits the peak].
    #[arg(long, value_name = "UNIT")]
    pub unit: Option<String>,
}

/// `copyscope compare` options.
#[derive(Debug, Args, Default, Clone)]
pub struct CompareArgs {
    /// The recordings (two or more), drawn top to bottom in this order.
    #[arg(value_name = "FILE", required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,
    /// The runs' labels, in order (repeatable) [default: destination filesystem and host].
    #[arg(long, value_name = "TEXT")]
    pub label: Vec<String>,
    /// One plot with a line per run instead of stacked panels.
    #[arg(long)]
    pub overlay: bool,
    /// Write the picture as a PNG to FILE.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// Write the picture as an SVG drawing to FILE (the PNG is this drawing, rasterised).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the side-by-side table to FILE as plain text (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub text: Option<PathBuf>,
    /// Write the side-by-side table to FILE as Markdown (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Picture size in pixels, WxH [default: 1600 wide, 600 high per run].
    #[arg(long, value_name = "WxH")]
    pub size: Option<String>,
    #[command(flatten)]
    pub picture: PictureArgs,
    /// Without named outputs: overwrite compare.png and compare.md if they exist.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub drops: DropArgs,
}

/// `copyscope whatif` options.
#[derive(Debug, Args, Default, Clone)]
pub struct WhatifArgs {
    /// The recording (JSON Lines, written by --record) of a copy.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// A tunable and the value to predict with, NAME=VALUE (repeatable; see below).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// A real run made with the changed tunables: the prediction is of its copy (its size,
    /// its flush) and is shown against it.
    #[arg(long, value_name = "FILE")]
    pub against: Option<PathBuf>,
    /// `auto`: predict the copy paced as --pace auto paces it; `off`: a paced recording's copy
    /// run free.
    #[arg(long, value_enum, value_name = "MODE")]
    pub pace: Option<PaceArg>,
    /// Write the recorded and the predicted chart, one scale, as a PNG picture to FILE.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// Write that picture as an SVG drawing to FILE (the PNG is this drawing, rasterised).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write both text charts, one scale, and the summary to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub text: Option<PathBuf>,
    /// Picture size in pixels, WxH [default: 1600 wide, 600 high per run].
    #[arg(long, value_name = "WxH")]
    pub size: Option<String>,
    /// One plot with both runs as lines instead of two panels.
    #[arg(long)]
    pub overlay: bool,
    /// Draw the text charts with ASCII characters only.
    #[arg(long)]
    pub ascii: bool,
    #[command(flatten)]
    pub drops: DropArgs,
}

/// `copyscope bench` options.
#[derive(Debug, Args, Default, Clone)]
pub struct BenchArgs {
    /// An empty directory on the filesystem to test.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Bytes of each sequential write, e.g. 8G, 500M [default: 2 x RAM, capped by free space].
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// A run of about a minute: each phase stops after 12 s.
    #[arg(long)]
    pub quick: bool,
    /// Files in the tree phase [default: 14139, the shape of a 6.8 GB photo tree].
    #[arg(long, value_name = "N")]
    pub files: Option<u64>,
    /// Total size of the tree phase, e.g. 6.8G [default: 6.8 GB, capped by free space].
    #[arg(long = "tree-size", value_name = "BYTES")]
    pub tree_size: Option<String>,
    /// Run in a DIR that is not empty (the bench still writes only in its scratch directory).
    #[arg(long)]
    pub force: bool,
    /// Directory for the recordings, bench.md and bench.txt [default: a new dated directory here].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub display: DisplayArgs,
}

/// `copyscope pipe` options.
#[derive(Debug, Args, Clone, Default)]
pub struct PipeArgs {
    /// Bytes expected, e.g. 20G, 700M (k/M/G/T powers of 1024, kB/MB/GB/TB of 1000), for the
    /// percent and the ETA [default: what is left of a file on stdin].
    #[arg(short = 's', long = "size", value_name = "SIZE")]
    pub size: Option<String>,
    #[command(flatten)]
    pub display: DisplayArgs,
}

/// `copyscope watch` options.
#[derive(Debug, Args, Clone, Default)]
pub struct WatchArgs {
    /// A path on the filesystem to watch [default: the current directory; with --all or
    /// --list, every filesystem].
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// Follow every process found writing regular files (on PATH's filesystem when PATH is
    /// given), as progress(1) finds them; copies that start later join within a second.
    #[arg(long, conflicts_with_all = ["pid", "comm", "pipeline"])]
    pub all: bool,
    /// Print the processes writing regular files now (on PATH's filesystem when given): each
    /// one's file, rate, and the percent and ETA of the file it reads; measured over 1 s.
    #[arg(long, conflicts_with_all = ["pid", "comm", "all", "record", "metrics", "pipeline"])]
    pub list: bool,
    /// Stop after SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Stop once nothing has been written for SECS seconds (after something was).
    #[arg(long = "until-idle", value_name = "SECS")]
    pub until_idle: Option<f64>,
    /// Follow this writer process: its write rate is the intake, its file and position are
    /// shown, its threads explain the drops (repeatable).
    #[arg(long, value_name = "PID")]
    pub pid: Vec<u32>,
    /// Follow every process with this command name (as in /proc/PID/comm, e.g. smbd, rsync),
    /// including ones that start later (repeatable).
    #[arg(long, value_name = "NAME")]
    pub comm: Vec<String>,
    /// Watch a shell pipeline: each stage's rate and whether it is busy, blocked on its input
    /// or on its output, and which stage limits the pipeline. Give any stage's PID (the others
    /// are found from the pipes between them) or the shell running the pipeline; the chart is
    /// the bytes its first stage writes.
    #[arg(long, value_name = "PID", num_args = 1.., conflicts_with_all = ["pid", "comm"])]
    pub pipeline: Vec<u32>,
    /// Chart this network interface's receive rate beside the intake (e.g. eth0, or lo for a
    /// local sender), so a sender or link that slowed is told apart from the disk.
    #[arg(long, value_name = "IFACE")]
    pub net: Option<String>,
    #[command(flatten)]
    pub display: DisplayArgs,
}
