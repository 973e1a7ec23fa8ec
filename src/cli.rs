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
130 cancelled (Ctrl-C, SIGTERM, SIGHUP).";

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

/// Display options shared by the copy and the demo.
#[derive(Debug, Args, Default, Clone)]
pub struct DisplayArgs {
    /// Plain text output even on a terminal: a progress line every 2 s and a summary.
    #[arg(long, global = true)]
    pub plain: bool,
    /// JSON lines on stdout: one object per interval and one per event.
    #[arg(long, global = true, conflicts_with = "plain")]
    pub json: bool,
    /// Sampling interval in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100, global = true)]
    pub interval: u64,
    /// Draw with ASCII characters only.
    #[arg(long, global = true)]
    pub ascii: bool,
    /// Compact layout: the chart inside the progress bar.
    #[arg(long, global = true)]
    pub compact: bool,
    /// Binary units (MiB/s) instead of decimal (MB/s).
    #[arg(long, global = true)]
    pub binary: bool,
    /// Write a recording (JSON Lines) of the run to FILE.
    #[arg(long, value_name = "FILE", global = true)]
    pub record: Option<PathBuf>,
    /// Write PNG, SVG, text and Markdown pictures of the run into DIR at the end.
    #[arg(long, value_name = "DIR", global = true)]
    pub screenshot: Option<PathBuf>,
    /// Directory that stands for / when reading /proc and /sys (tests and demos); also COPYSCOPE_SYS_ROOT.
    #[arg(long = "sys-root", value_name = "DIR", hide = true, global = true)]
    pub sys_root: Option<PathBuf>,
    /// A drop starts when speed falls below this share of the reference.
    #[arg(
        long = "drop-ratio",
        value_name = "R",
        default_value_t = 0.5,
        global = true
    )]
    pub drop_ratio: f64,
    /// A drop ends when speed recovers to this share of the reference.
    #[arg(
        long = "recover-ratio",
        value_name = "R",
        default_value_t = 0.8,
        global = true
    )]
    pub recover_ratio: f64,
    /// A drop must last at least this long (ms).
    #[arg(
        long = "min-drop-ms",
        value_name = "MS",
        default_value_t = 300,
        global = true
    )]
    pub min_drop_ms: u64,
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

/// Subcommands (the copy itself is the default command).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make sample data in a temp dir, copy it live, clean up.
    Demo {
        /// Amount of sample data in MB.
        #[arg(long, value_name = "MB", default_value_t = 400)]
        size: u64,
        /// First replay the bundled real recording of a copy onto ZFS with txg stalls
        /// (q ends the replay), then run the live demo.
        #[arg(long)]
        replay: bool,
    },
    /// Re-draw a recording made with --record.
    Replay {
        /// The recording (JSON Lines).
        file: PathBuf,
        /// Playback speed factor (1, 10, …; `inf` = as fast as possible). `x` cycles it.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
    },
    /// Write pictures and tables of a recording.
    Export {
        /// The recording (JSON Lines).
        file: PathBuf,
        #[arg(long, value_name = "F")]
        png: Option<PathBuf>,
        #[arg(long, value_name = "F")]
        svg: Option<PathBuf>,
        #[arg(long, value_name = "F")]
        text: Option<PathBuf>,
        #[arg(long, value_name = "F")]
        markdown: Option<PathBuf>,
        /// Picture size in pixels, WxH.
        #[arg(long, value_name = "WxH")]
        size: Option<String>,
    },
    /// Chart and explain the writes something else makes into the filesystem holding PATH
    /// (smbd, nfsd, rsync, zfs receive, another cp), until q, --duration or --until-idle.
    Watch(WatchArgs),
    /// Print shell completions.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Man,
}

/// `copyscope watch` options.
#[derive(Debug, Args, Default, Clone)]
pub struct WatchArgs {
    /// A path on the filesystem to watch [default: the current directory].
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
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
}
