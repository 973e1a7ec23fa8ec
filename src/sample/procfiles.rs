//! A process's /proc files as watch mode reads them — `io` (its write counters), `fdinfo` (a
//! descriptor's position and open flags), `stat` (name, state, parent) — parsed by pure
//! functions, and the filesystem a watch watches. Shared by the followed writers
//! (`writers`) and the discovery of the running copies (`discover`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The write counters of `/proc/PID/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcIo {
    /// Bytes passed to write()-like syscalls (files, pipes and sockets).
    pub wchar: u64,
    /// Bytes this process caused to be sent to the storage layer: pages it dirtied in the
    /// page cache (whole pages) and direct writes. Never socket or pipe writes.
    pub write_bytes: u64,
}

/// Parses `/proc/PID/io`; `None` when `write_bytes` is missing.
pub fn parse_proc_io(text: &str) -> Option<ProcIo> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some(ProcIo {
        wchar: field("wchar").unwrap_or(0),
        write_bytes: field("write_bytes")?,
    })
}

/// Parses `/proc/PID/fdinfo/FD`: (pos, open flags).
pub fn parse_fdinfo(text: &str) -> Option<(u64, u32)> {
    let mut pos = None;
    let mut flags = None;
    for l in text.lines() {
        match l.split_once(':') {
            Some(("pos", v)) => pos = v.trim().parse().ok(),
            Some(("flags", v)) => flags = u32::from_str_radix(v.trim(), 8).ok(),
            _ => {}
        }
    }
    Some((pos?, flags?))
}

/// True for open flags that allow writing (O_WRONLY or O_RDWR).
pub fn opened_for_writing(flags: u32) -> bool {
    flags & 0o3 != 0
}

/// What `/proc/PID/stat` says of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub comm: String,
    /// `R`, `S`, `D`, `Z` …
    pub state: char,
    pub ppid: u32,
}

/// Parses `/proc/PID/stat`: the name sits in parentheses and may itself hold spaces and
/// parentheses, so the fields are those after the *last* `)`.
pub fn parse_stat(stat: &str) -> Option<ProcStat> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some(ProcStat {
        comm: stat.get(open + 1..close)?.to_string(),
        state,
        ppid,
    })
}

/// The filesystem a watch watches: the device number of PATH, and PATH itself (a file under
/// it on a filesystem mounted inside, such as a child ZFS dataset, counts too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedFs {
    pub dev: u64,
    pub path: PathBuf,
}

impl WatchedFs {
    /// PATH's filesystem.
    pub fn of(path: &Path) -> std::io::Result<WatchedFs> {
        let path = std::fs::canonicalize(path)?;
        let dev = std::fs::metadata(&path)?.dev();
        Ok(WatchedFs { dev, path })
    }

    /// Whether a file on device `dev`, opened as `target`, is on the watched filesystem.
    pub fn holds(&self, dev: u64, target: &str) -> bool {
        dev == self.dev || Path::new(target).starts_with(&self.path)
    }
}

/// The path a writer's open file is shown by. An unnamed file (`O_TMPFILE`, not linked yet)
/// reads in /proc as `DIR/#INODE (deleted)`; it is shown as `DIR/<unnamed file>`: it was
/// never deleted, and its name comes only when the writer links it.
pub fn shown_path(link: &str) -> String {
    let unnamed = link.strip_suffix(" (deleted)").and_then(|p| {
        let (dir, name) = p.rsplit_once('/')?;
        let ino = name.strip_prefix('#')?;
        (!ino.is_empty() && ino.bytes().all(|b| b.is_ascii_digit())).then_some(dir)
    });
    match unnamed {
        Some(dir) => format!("{dir}/<unnamed file>"),
        None => link.to_string(),
    }
}
