//! `SysRoot`: the directory that stands for `/` when reading /proc and /sys, so tests
//! and demos can point every reader at a fixture tree, and the one way such files are opened
//! ([`open_kernel_file`]: never blocking, regular files only).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A /proc or /sys file is a few KiB; reading stops here, so a planted file that is not one
/// cannot make a reader hold more.
pub const MAX_FILE_BYTES: usize = 16 << 20;

/// Opens a /proc, /sys or kstat file (or its stand-in under a `--sys-root` tree) for reading:
/// with `O_NONBLOCK`, so that a FIFO or device planted there cannot block the open, and
/// refused unless it is a regular file (every kernel file read here is one), so that no read
/// of it can block either. Symlinks are followed: sysfs is made of them.
pub fn open_kernel_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Reads a whole kernel file ([`open_kernel_file`]) to EOF, at most [`MAX_FILE_BYTES`] of
/// it. Not `fs::read_to_string`: that stats the file to size its buffer, and /proc and /sys
/// files say size 0 or 4096 whatever they hold (one syscall per read wasted, many times a
/// second).
pub fn read_kernel_file(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let file = open_kernel_file(path)?;
    let mut text = String::with_capacity(4096);
    file.take(MAX_FILE_BYTES as u64).read_to_string(&mut text)?;
    Ok(text)
}

/// Environment variable naming the directory that stands for `/`.
pub const SYS_ROOT_ENV: &str = "COPYSCOPE_SYS_ROOT";

/// The directory that stands for `/` (default `/`). Every /proc and /sys path is joined to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot(PathBuf);

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot(PathBuf::from("/"))
    }
}

impl SysRoot {
    /// A root at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SysRoot(dir.into())
    }

    /// The `--sys-root` option if given, else `COPYSCOPE_SYS_ROOT` if set and non-empty, else `/`.
    pub fn from_option_or_env(option: Option<PathBuf>) -> Self {
        if let Some(dir) = option {
            return SysRoot(dir);
        }
        match std::env::var_os(SYS_ROOT_ENV) {
            Some(v) if !v.is_empty() => SysRoot(PathBuf::from(v)),
            _ => SysRoot::default(),
        }
    }

    /// The directory standing for `/`.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// True when the root is the real `/`, i.e. live kernel data of this process.
    /// Things that cannot be redirected (`zpool`) only run then.
    pub fn is_live(&self) -> bool {
        self.0 == Path::new("/")
    }

    /// `rel` (absolute or relative, e.g. `/proc/meminfo` or `proc/meminfo`) under the root.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.0.join(rel)
    }

    /// Opens a file under the root for reading, as [`open_kernel_file`] does.
    pub fn open(&self, rel: impl AsRef<Path>) -> io::Result<File> {
        open_kernel_file(&self.join(rel))
    }

    /// Reads a whole (small) file under the root, to EOF, as [`read_kernel_file`] does.
    pub fn read_to_string(&self, rel: impl AsRef<Path>) -> io::Result<String> {
        read_kernel_file(&self.join(rel))
    }

    /// Reads a one-value file (sysctl, module parameter) and trims it.
    pub fn read_value(&self, rel: impl AsRef<Path>) -> Option<String> {
        self.read_to_string(rel).ok().map(|s| s.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_strips_leading_slash_so_paths_stay_under_root() {
        let r = SysRoot::new("/fixture");
        assert_eq!(
            r.join("/proc/meminfo"),
            PathBuf::from("/fixture/proc/meminfo")
        );
        assert_eq!(r.join("proc/vmstat"), PathBuf::from("/fixture/proc/vmstat"));
        assert!(!r.is_live());
        assert!(SysRoot::default().is_live());
    }

    #[test]
    fn option_wins_over_default() {
        let r = SysRoot::from_option_or_env(Some(PathBuf::from("/x")));
        assert_eq!(r.path(), Path::new("/x"));
    }
}
