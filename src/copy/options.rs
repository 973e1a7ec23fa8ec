//! Engine options: the validated knobs the copy engine obeys (built by `config`).

use std::path::PathBuf;

/// What to do when a destination file already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverwritePolicy {
    /// Ask the [`super::ConflictAsk`] given to the engine; without one, overwrite (cp without a terminal).
    Ask,
    Always,
    Never,
    /// Overwrite only when the source is newer than the destination.
    Update,
}

/// Which symlinks are followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dereference {
    /// `-a`: never; a symlink named on the command line is copied as a symlink too.
    Never,
    /// Default (cp `-H`): symlinks named on the command line are followed, those inside a tree are not.
    CommandLine,
    /// `-L`: every symlink is followed.
    Always,
}

/// How the end of the copy is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncMode {
    /// One syncfs per destination filesystem after the last byte (default).
    Syncfs,
    /// fsync every file before it is renamed into place (`--fsync`).
    PerFile,
    /// No flush (`--no-sync`): "done" means "in the page cache".
    None,
}

/// `--reflink`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReflinkMode {
    Never,
    Auto,
    Always,
}

/// Fewest and most default workers for small files.
pub const DEFAULT_JOBS_RANGE: (usize, usize) = (2, 8);
/// Default read/write buffer for the pread/pwrite path: 128 KiB was the fastest of
/// 128 KiB/256 KiB/1 MiB/4 MiB in scripts/bench.sh (it stays in the CPU's L2 cache);
/// see docs/benchmarks.md.
pub const DEFAULT_BUFFER: usize = 128 << 10;

/// Default `--jobs`: one worker per CPU, at least 2 (one can wait on metadata while the
/// other copies) and at most 8 (more only adds directory-lock contention); see docs/benchmarks.md.
pub fn default_jobs() -> usize {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    cpus.clamp(DEFAULT_JOBS_RANGE.0, DEFAULT_JOBS_RANGE.1)
}
/// Files at least this large stream one at a time, whatever `--jobs` says (disks prefer one stream).
pub const LARGE_FILE: u64 = 32 << 20;

/// Everything the engine needs to know besides the paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOptions {
    pub overwrite: OverwritePolicy,
    /// Mode and modification time (default on; `--no-preserve` turns it off).
    pub preserve_mode_time: bool,
    /// Ownership (`-p`, `-a`), when permitted.
    pub preserve_owner: bool,
    /// Hard links within the tree stay hard links (`-a`).
    pub hard_links: bool,
    /// Extended attributes and POSIX ACLs are kept (`-a`, unless `--no-xattrs`).
    pub xattrs: bool,
    pub dereference: Dereference,
    pub sync: SyncMode,
    pub verify: bool,
    pub reflink: ReflinkMode,
    /// Workers for small files (>= 1).
    pub jobs: usize,
    /// Read/write buffer size in bytes.
    pub buffer_size: usize,
    /// Use copy_file_range where the destination cannot clone (benchmarks turn it off).
    pub copy_file_range: bool,
    /// Test hook: cap the data rate (bytes/s). Set only from the `COPYSCOPE_TEST_THROTTLE_BPS`
    /// environment variable so signal and vanish tests have a slow copy to act on.
    pub throttle_bps: Option<u64>,
    /// `--bwlimit`: the engine paces its writes to this many bytes per second.
    pub bwlimit_bps: Option<u64>,
    /// The limit is `copyscope demo`'s own pace, not one the user set: the verdict says so.
    pub bwlimit_is_demo_pace: bool,
    /// `--pace auto`: the engine holds the rate the session sets in
    /// [`Progress::pace_bps`](super::Progress::pace_bps) (0: free), measured as the copy goes.
    pub pace_auto: bool,
    /// `-i -u` (cp): only a source newer than the destination is asked about; the others are
    /// skipped without a question.
    pub only_newer: bool,
    /// `-x`: directories on another file system than their source root are made, not entered.
    pub one_file_system: bool,
    /// `--exclude` patterns (gitignore syntax, relative to each source directory).
    pub exclude: Vec<String>,
}

impl CopyOptions {
    /// The data rate is held down (`--bwlimit` or the test throttle): the data path then
    /// writes small chunks so the pacing is smooth at 100 ms resolution.
    pub fn paced(&self) -> bool {
        self.throttle_bps.is_some() || self.bwlimit_bps.is_some() || self.pace_auto
    }
}

impl Default for CopyOptions {
    fn default() -> Self {
        Self {
            overwrite: OverwritePolicy::Ask,
            preserve_mode_time: true,
            preserve_owner: false,
            hard_links: false,
            xattrs: false,
            dereference: Dereference::CommandLine,
            sync: SyncMode::Syncfs,
            verify: false,
            reflink: ReflinkMode::Never,
            jobs: default_jobs(),
            buffer_size: DEFAULT_BUFFER,
            copy_file_range: true,
            throttle_bps: None,
            bwlimit_bps: None,
            bwlimit_is_demo_pace: false,
            pace_auto: false,
            only_newer: false,
            one_file_system: false,
            exclude: Vec::new(),
        }
    }
}

/// One (source → destination) pair after cp's SOURCE/DEST/-t/-T rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub source: PathBuf,
    pub dest: PathBuf,
}

/// What to copy and how: the input of [`super::CopyJob::plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyRequest {
    pub pairs: Vec<Pair>,
    pub options: CopyOptions,
}
