//! Conflict decisions: what to do with a destination name that already exists
//! (`--overwrite=ask|always|never|update`, and the answers that stick: "Overwrite all",
//! "Skip all"), after cp's protections of the destination (never through a dangling or
//! unreachable symlink, never over a name this run made, never over a file the user may
//! not write unless `-f`).

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::Ordering;

use rustix::fs::{self as rfs, AtFlags, FileType};
use rustix::io::Errno;

use super::ConflictAnswer;
use super::options::OverwritePolicy;
use super::shared::{DirNode, Meta, Shared, errmsg, lock};
use crate::present::quote::quote;

/// Policy answers that stick ("Overwrite all", "Skip all").
pub(crate) const ALL_NONE: u8 = 0;
pub(crate) const ALL_OVERWRITE: u8 = 1;
pub(crate) const ALL_SKIP: u8 = 2;

pub(crate) enum Decision {
    /// Write; with the destination it replaces (None: the name was free).
    Proceed(Option<Meta>),
    Skip(String),
    Fail(String),
    Stop,
}

impl Shared {
    /// The conflict policy for an existing destination name, after [`Shared::protect`].
    pub fn decide(&self, dir: &DirNode, name: &OsStr, src: &Path, smeta: &Meta) -> Decision {
        if dir.fresh {
            return Decision::Proceed(None);
        }
        let dst = dir.dst_display.join(name);
        let existing = match rfs::statat(&dir.dst, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) => Meta::from_stat(&s),
            Err(Errno::NOENT) => return Decision::Proceed(None),
            Err(e) => return Decision::Fail(format!("cannot stat {}: {}", quote(&dst), errmsg(e))),
        };
        if let Some(refusal) = self.protect(dir, name, &dst, src, smeta, &existing) {
            return Decision::Fail(refusal);
        }
        let src_mtime = smeta.mtime;
        let proceed = Decision::Proceed(Some(existing));
        match self.opts.overwrite {
            OverwritePolicy::Always => proceed,
            OverwritePolicy::Never => {
                Decision::Skip("destination exists (--overwrite=never)".into())
            }
            OverwritePolicy::Update => {
                if src_mtime > existing.mtime {
                    proceed
                } else {
                    Decision::Skip(
                        "destination is not older than the source (--overwrite=update)".into(),
                    )
                }
            }
            OverwritePolicy::Ask if self.opts.only_newer && src_mtime <= existing.mtime => {
                Decision::Skip("destination is not older than the source (--update)".into())
            }
            OverwritePolicy::Ask => {
                let Some(ask) = &self.ask else {
                    return proceed;
                };
                let _one_dialog_at_a_time = lock(&self.ask_lock);
                match self.conflict_all.load(Ordering::SeqCst) {
                    ALL_OVERWRITE => return proceed,
                    ALL_SKIP => return Decision::Skip("destination exists (skip all)".into()),
                    _ => {}
                }
                if self.is_stopped() {
                    return Decision::Stop;
                }
                match ask.ask(&dir.dst_display.join(name)) {
                    ConflictAnswer::Overwrite => proceed,
                    ConflictAnswer::Skip => Decision::Skip("destination exists (skipped)".into()),
                    ConflictAnswer::OverwriteAll => {
                        self.conflict_all.store(ALL_OVERWRITE, Ordering::SeqCst);
                        proceed
                    }
                    ConflictAnswer::SkipAll => {
                        self.conflict_all.store(ALL_SKIP, Ordering::SeqCst);
                        Decision::Skip("destination exists (skip all)".into())
                    }
                    ConflictAnswer::Cancel => {
                        self.control.cancelled.store(true, Ordering::SeqCst);
                        Decision::Stop
                    }
                }
            }
        }
    }

    /// cp's refusals for an existing destination `dst` (None: it may be replaced).
    fn protect(
        &self,
        dir: &DirNode,
        name: &OsStr,
        dst: &Path,
        src: &Path,
        smeta: &Meta,
        existing: &Meta,
    ) -> Option<String> {
        let (d, s) = (quote(dst), quote(src));
        let kind = existing.file_type();
        if kind == FileType::Directory {
            return Some(format!("cannot overwrite directory {d} with non-directory"));
        }
        if self.was_made(dir, name) {
            return Some(if kind == FileType::Symlink {
                format!("will not copy {s} through just-created symlink {d}")
            } else {
                format!("will not overwrite just-created {d} with {s}")
            });
        }
        // cp writes a regular file into what the destination name resolves to; these are
        // its refusals (copyscope then replaces the name itself, never writing through).
        if smeta.file_type() != FileType::RegularFile {
            return None;
        }
        if kind == FileType::Symlink {
            return match rfs::statat(&dir.dst, name, AtFlags::empty()) {
                Ok(_) => None,
                Err(Errno::NOENT) => Some(format!("not writing through dangling symlink {d}")),
                Err(e) => Some(format!("cannot stat {d}: {}", errmsg(e))),
            };
        }
        if kind == FileType::RegularFile
            && self.opts.overwrite != OverwritePolicy::Always
            && let Err(e) = rfs::accessat(&dir.dst, name, rfs::Access::WRITE_OK, AtFlags::EACCESS)
        {
            return Some(format!("cannot create regular file {d}: {}", errmsg(e)));
        }
        None
    }

    /// Remembers a name this run made, when several sources could meet in one directory.
    pub fn record_made(&self, dir: &DirNode, name: &OsStr) {
        if let Some(set) = &self.made_names
            && let Ok(st) = rfs::fstat(&dir.dst)
        {
            let m = Meta::from_stat(&st);
            lock(set).insert((m.dev, m.ino, name.to_os_string()));
        }
    }

    fn was_made(&self, dir: &DirNode, name: &OsStr) -> bool {
        let Some(set) = &self.made_names else {
            return false;
        };
        let Ok(st) = rfs::fstat(&dir.dst) else {
            return false;
        };
        let m = Meta::from_stat(&st);
        lock(set).contains(&(m.dev, m.ino, name.to_os_string()))
    }
}
