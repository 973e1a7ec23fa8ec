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
    /// `clash`: the kind of an earlier entry of this run made under the same name.
    pub fn decide(
        &self,
        dir: &DirNode,
        name: &OsStr,
        src: &Path,
        smeta: &Meta,
        clash: Option<FileType>,
    ) -> Decision {
        let dst = dir.dst_display.join(name);
        // Decided in the scan's order, before the earlier entry is even written (workers
        // run in parallel): cp refuses the later one.
        if let Some(earlier) = clash {
            let (d, s) = (quote(&dst), quote(src));
            return Decision::Fail(if earlier == FileType::Symlink {
                format!("will not copy {s} through just-created symlink {d}")
            } else {
                format!("will not overwrite just-created {d} with {s}")
            });
        }
        if dir.fresh {
            return Decision::Proceed(None);
        }
        let existing = match rfs::statat(&dir.dst, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) => Meta::from_stat(&s),
            Err(Errno::NOENT) => return Decision::Proceed(None),
            Err(e) => return Decision::Fail(format!("cannot stat {}: {}", quote(&dst), errmsg(e))),
        };
        if let Some(refusal) = self.protect(dir, name, &dst, smeta, &existing) {
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
        smeta: &Meta,
        existing: &Meta,
    ) -> Option<String> {
        let d = quote(dst);
        let kind = existing.file_type();
        if kind == FileType::Directory {
            return Some(format!("cannot overwrite directory {d} with non-directory"));
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

    /// Claims a destination name for an entry, in the scan's order (cp copies its sources
    /// one after the other): the kind of an earlier entry of this run that claimed the same
    /// name, if any. Kept only when there are several sources.
    pub fn claim(&self, dir: &DirNode, name: &OsStr, kind: FileType) -> Option<FileType> {
        let set = self.made_names.as_ref()?;
        let st = rfs::fstat(&dir.dst).ok()?;
        let m = Meta::from_stat(&st);
        let mut set = lock(set);
        let key = (m.dev, m.ino, name.to_os_string());
        if let Some(k) = set.get(&key) {
            return Some(*k);
        }
        set.insert(key, kind);
        None
    }
}
