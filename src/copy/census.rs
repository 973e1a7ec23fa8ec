//! The census: a metadata-only walk of the sources on its own thread, ahead of the copy, so
//! the totals (files, bytes), the ETA and the percent axis are known within seconds instead
//! of when the copy's own walk (held back by the workers' bounded queue) reaches the end.
//! Once complete it checks the free space of each destination filesystem against what the
//! copy will still write (less what overwriting existing files frees).
//!
//! It only reads: directories are opened through their parent's descriptor with
//! `O_NOFOLLOW|O_DIRECTORY` (unless `-L`), entries are `fstatat`ed without following, and on
//! the destination side only existing directories are opened the same way and existing names
//! `fstatat`ed, never created, written or followed. Memory is one open directory and its
//! sorted names per level of depth, as in the copy's walk.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};

use super::options::{Dereference, OverwritePolicy};
use super::plan::Root;
use super::scan::read_typed;
use super::shared::{Meta, Shared};
use super::{EngineEvent, LowSpace, SpaceAnswer};

/// Space accounting for one destination filesystem.
#[derive(Debug, Default)]
struct DestSpace {
    /// The destination as the user named it (the first root onto this filesystem).
    dest: PathBuf,
    /// A directory on it, for statvfs at the end of the census.
    dir: Option<OwnedFd>,
    /// Bytes the new data will occupy, in whole blocks of the destination.
    needed: u64,
    /// Bytes that overwriting existing files frees (their blocks, when no other name holds
    /// them).
    freed: u64,
    /// The largest of those: an old file's blocks come back only when its replacement is
    /// renamed over it, so while the last one is written both are held.
    freed_max: u64,
    /// The destination's block size: every file's data takes whole blocks.
    block: u64,
}

struct Census<'a> {
    sh: &'a Shared,
    follow_all: bool,
    /// `--hard-links`: a second name of an inode takes no space.
    seen: HashSet<(u64, u64)>,
    space: HashMap<u64, DestSpace>,
}

/// Runs the census over every root and publishes the totals; then the free-space check.
/// Returns early (totals left incomplete, no `ScanDone`) when the copy is stopped.
pub(crate) fn census(sh: &Arc<Shared>, roots: &[Root]) {
    count_and_check(sh, roots);
    sh.space.settle_check();
}

fn count_and_check(sh: &Arc<Shared>, roots: &[Root]) {
    let mut c = Census {
        sh,
        follow_all: sh.opts.dereference == Dereference::Always,
        seen: HashSet::new(),
        space: HashMap::new(),
    };
    for root in roots {
        if sh.is_stopped() {
            return;
        }
        if root.is_dir {
            c.tree(root);
        } else {
            c.file_root(root);
        }
    }
    if sh.is_stopped() {
        return;
    }
    sh.progress.scan_done.store(true, Ordering::SeqCst);
    let s = sh.progress.snapshot();
    let _ = sh.events.send(EngineEvent::ScanDone {
        files: s.files_total,
        bytes: s.bytes_total,
    });
    c.check_space();
}

/// The destination's filesystem type in words, for the warning ("ext4").
fn fs_name(fd: &OwnedFd) -> String {
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let magic = rfs::fstatfs(fd).map_or(0, |s| s.f_type as i64);
    match magic {
        0xEF53 => "ext4",
        0x0102_1994 => "tmpfs",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x2fc1_2fc1 => "zfs",
        0x6969 => "nfs",
        0xFF53_4D42 => "cifs",
        0x6573_5546 => "fuse",
        0x4d44 => "vfat",
        0x5346_544e => "ntfs",
        0x2011_BAB0 => "exfat",
        0xF2F5_2010 => "f2fs",
        _ => "",
    }
    .to_string()
}

fn open_dir_at(parent: &OwnedFd, name: &OsString, follow: bool) -> Option<OwnedFd> {
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::openat(parent, name, flags, Mode::empty()).ok()
}

fn open_path(path: &Path, follow: bool) -> Option<OwnedFd> {
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::open(path, flags, Mode::empty()).ok()
}

fn parent_dir(p: &Path) -> PathBuf {
    match p.parent() {
        Some(pp) if !pp.as_os_str().is_empty() => pp.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// One open directory of the walk: the source, its destination twin if that exists already.
struct Level {
    src: OwnedFd,
    dst: Option<OwnedFd>,
    rel: PathBuf,
    /// Entry names with the type `getdents` gave.
    names: Vec<(OsString, FileType)>,
    next: usize,
    id: (u64, u64),
}

impl Census<'_> {
    fn space_for(&mut self, dest: &Path, dir: &OwnedFd) -> u64 {
        let dev = rfs::fstat(dir).map_or(0, |s| Meta::from_stat(&s).dev);
        self.space.entry(dev).or_insert_with(|| DestSpace {
            dest: dest.to_path_buf(),
            dir: dir.try_clone().ok(),
            block: rfs::fstatvfs(dir).map_or(4096, |v| v.f_frsize.max(512)),
            ..DestSpace::default()
        });
        dev
    }

    /// Counts one non-directory entry; a regular file adds its data and the space it takes
    /// on the destination (less what overwriting `dst_dir/name` frees).
    fn count(&mut self, m: &Meta, dev: u64, dst_dir: Option<&OwnedFd>, name: &OsString) {
        let p = &self.sh.progress;
        p.files_total.fetch_add(1, Ordering::Relaxed);
        if m.file_type() != FileType::RegularFile {
            return;
        }
        p.bytes_total.fetch_add(m.data_size(), Ordering::Relaxed);
        if self.sh.opts.hard_links && m.nlink > 1 && !self.seen.insert((m.dev, m.ino)) {
            return;
        }
        let existing = dst_dir.and_then(|d| {
            rfs::statat(d, name, AtFlags::SYMLINK_NOFOLLOW)
                .ok()
                .map(|s| Meta::from_stat(&s))
        });
        let opts = &self.sh.opts;
        let (needed, freed) = match existing {
            Some(e) if e.file_type() == FileType::RegularFile => {
                let kept = opts.overwrite == OverwritePolicy::Never
                    || ((opts.overwrite == OverwritePolicy::Update || opts.only_newer)
                        && m.mtime <= e.mtime);
                if kept {
                    (0, 0)
                } else {
                    // The temporary is renamed over it: its blocks come back unless
                    // another name still holds them.
                    let freed = if e.nlink == 1 {
                        e.blocks.saturating_mul(512)
                    } else {
                        0
                    };
                    (m.data_size(), freed)
                }
            }
            _ => (m.data_size(), 0),
        };
        if let Some(s) = self.space.get_mut(&dev) {
            s.needed += needed.div_ceil(s.block) * s.block;
            s.freed += freed;
            s.freed_max = s.freed_max.max(freed);
        }
    }

    fn stat_flags(&self) -> AtFlags {
        if self.follow_all {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        }
    }

    fn file_root(&mut self, root: &Root) {
        let (Some(src_name), Some(dst_name)) = (root.source.file_name(), root.dest.file_name())
        else {
            return;
        };
        let follow = self.sh.opts.dereference != Dereference::Never;
        let flags = if follow {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let Some(src) = open_path(&parent_dir(&root.source), true) else {
            self.sh.progress.files_total.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let Ok(st) = rfs::statat(&src, src_name, flags) else {
            self.sh.progress.files_total.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let dst = open_path(&parent_dir(&root.dest), true);
        let dev = match &dst {
            Some(d) => self.space_for(&root.dest, d),
            None => u64::MAX,
        };
        self.count(
            &Meta::from_stat(&st),
            dev,
            dst.as_ref(),
            &dst_name.to_os_string(),
        );
    }

    #[expect(
        clippy::too_many_lines,
        reason = "the census's one loop over its stack of open directories, as the copy's walk"
    )]
    fn tree(&mut self, root: &Root) {
        let sh = self.sh;
        let follow_root = sh.opts.dereference != Dereference::Never;
        let Some(src) = open_path(&root.source, follow_root) else {
            return;
        };
        let Ok(smeta) = rfs::fstat(&src).map(|s| Meta::from_stat(&s)) else {
            return;
        };
        // The destination twin exists only when the tree is merged into a directory.
        // Opened as the copy opens it: relative to its parent, never through a symlink.
        let dst = root
            .dest_exists
            .then(|| match root.dest.file_name() {
                Some(name) => open_path(&parent_dir(&root.dest), true)
                    .and_then(|p| open_dir_at(&p, &name.to_os_string(), false)),
                None => open_path(&root.dest, true),
            })
            .flatten();
        // A new tree lands on the filesystem of the directory it is made in.
        let on = match &dst {
            Some(d) => d.try_clone().ok(),
            None => open_path(&parent_dir(&root.dest), true),
        };
        let dev = match &on {
            Some(d) => self.space_for(&root.dest, d),
            None => u64::MAX,
        };
        let rel = root
            .source
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| root.source.clone());
        let root_rel = rel.clone();
        let names = read_typed(&src).unwrap_or_default();
        let mut stack = vec![Level {
            src,
            dst,
            rel,
            names,
            next: 0,
            id: (smeta.dev, smeta.ino),
        }];
        let stat_flags = self.stat_flags();
        while let Some(top) = stack.last_mut() {
            if sh.is_stopped() {
                return;
            }
            if top.next >= top.names.len() {
                stack.pop();
                continue;
            }
            let (name, kind) = top.names[top.next].clone();
            top.next += 1;
            // A directory's own metadata only serves the symlink-loop check (-L) and
            // --one-file-system: otherwise getdents' type spares a stat per directory.
            let dir_by_type =
                kind == FileType::Directory && !self.follow_all && !sh.opts.one_file_system;
            let meta = if dir_by_type {
                None
            } else {
                match rfs::statat(&top.src, &name, stat_flags) {
                    Ok(s) => Some(Meta::from_stat(&s)),
                    Err(_) => {
                        // The copy reports it as a failure; it is one entry of the total.
                        sh.progress.files_total.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                }
            };
            let is_dir = meta.is_none_or(|m| m.file_type() == FileType::Directory);
            let rel = top.rel.join(&name);
            if sh.excluded(&root_rel, &rel, is_dir) {
                continue;
            }
            if let Some(m) = meta.filter(|_| !is_dir) {
                self.count(&m, dev, top.dst.as_ref(), &name);
                continue;
            }
            let id = meta.map_or((0, 0), |m| (m.dev, m.ino));
            if self.follow_all && stack.iter().any(|l| l.id == id) {
                continue; // a symlink loop: the copy reports it
            }
            let Some(top) = stack.last() else { break };
            let Some(child) = open_dir_at(&top.src, &name, self.follow_all) else {
                continue;
            };
            let other_fs = sh.opts.one_file_system && meta.is_some_and(|m| m.dev != smeta.dev);
            let names = if other_fs {
                Vec::new()
            } else {
                read_typed(&child).unwrap_or_default()
            };
            let dst = top.dst.as_ref().and_then(|d| open_dir_at(d, &name, false));
            stack.push(Level {
                src: child,
                dst,
                rel,
                names,
                next: 0,
                id,
            });
        }
    }

    /// Compares, per destination filesystem, what the copy still has to write with the free
    /// space there now; short: `EngineEvent::LowSpace`, then the asker's answer (the TUI's
    /// continue/cancel question; without one the copy goes on, as cp's does). While the
    /// question is open the workers wait before their next write.
    fn check_space(&mut self) {
        let sh = self.sh;
        let single = self.space.len() == 1;
        for s in self.space.values() {
            let Some(dir) = &s.dir else { continue };
            let Ok(v) = rfs::fstatvfs(dir) else { continue };
            // Root may use the blocks reserved for it; others may not.
            let blocks = if sh.is_root { v.f_bfree } else { v.f_bavail };
            let free = blocks.saturating_mul(v.f_frsize);
            // Data already written is in `free` already (one filesystem: the progress
            // counter is all of it).
            let written = if single {
                sh.progress.bytes_copied.load(Ordering::Relaxed)
            } else {
                0
            };
            let freed = s.freed - s.freed_max;
            let needed = s.needed.saturating_sub(freed).saturating_sub(written);
            if needed <= free {
                continue;
            }
            let low = LowSpace {
                needed,
                freed,
                free,
                dest: s.dest.clone(),
                fs_type: fs_name(dir),
            };
            let _ = sh.events.send(EngineEvent::LowSpace(low.clone()));
            let Some(ask) = &sh.ask else { continue };
            sh.space.set_hold(true);
            let answer = ask.low_space(&low);
            sh.space.set_hold(false);
            if answer == SpaceAnswer::Cancel {
                sh.control.cancel();
                return;
            }
        }
    }
}
