//! Conflict decisions: what to do with a destination name that already exists
//! (`--overwrite=ask|always|never|update`, and the answers that stick: "Overwrite all",
//! "Skip all").

use std::ffi::OsStr;
use std::sync::atomic::Ordering;

use rustix::fs::{self as rfs, AtFlags, FileType};
use rustix::io::Errno;

use super::ConflictAnswer;
use super::options::OverwritePolicy;
use super::shared::{DirNode, Meta, Shared, errmsg, lock};

/// Policy answers that stick ("Overwrite all", "Skip all").
pub(crate) const ALL_NONE: u8 = 0;
pub(crate) const ALL_OVERWRITE: u8 = 1;
pub(crate) const ALL_SKIP: u8 = 2;

pub(crate) enum Decision {
    Proceed,
    Skip(String),
    Fail(String),
    Stop,
}

impl Shared {
    /// The conflict policy for an existing destination name.
    pub fn decide(&self, dir: &DirNode, name: &OsStr, src_mtime: (i64, i64)) -> Decision {
        if dir.fresh {
            return Decision::Proceed;
        }
        let existing = match rfs::statat(&dir.dst, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) => Meta::from_stat(&s),
            Err(Errno::NOENT) => return Decision::Proceed,
            Err(e) => return Decision::Fail(errmsg(e)),
        };
        if existing.file_type() == FileType::Directory {
            return Decision::Fail(format!(
                "cannot overwrite directory {} with non-directory",
                crate::present::quote::quote(&dir.dst_display.join(name))
            ));
        }
        match self.opts.overwrite {
            OverwritePolicy::Always => Decision::Proceed,
            OverwritePolicy::Never => {
                Decision::Skip("destination exists (--overwrite=never)".into())
            }
            OverwritePolicy::Update => {
                if src_mtime > existing.mtime {
                    Decision::Proceed
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
                    return Decision::Proceed;
                };
                let _one_dialog_at_a_time = lock(&self.ask_lock);
                match self.conflict_all.load(Ordering::SeqCst) {
                    ALL_OVERWRITE => return Decision::Proceed,
                    ALL_SKIP => return Decision::Skip("destination exists (skip all)".into()),
                    _ => {}
                }
                if self.is_stopped() {
                    return Decision::Stop;
                }
                match ask.ask(&dir.dst_display.join(name)) {
                    ConflictAnswer::Overwrite => Decision::Proceed,
                    ConflictAnswer::Skip => Decision::Skip("destination exists (skipped)".into()),
                    ConflictAnswer::OverwriteAll => {
                        self.conflict_all.store(ALL_OVERWRITE, Ordering::SeqCst);
                        Decision::Proceed
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
}
