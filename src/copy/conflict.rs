//! Conflict decisions: what to do with a destination name that already exists
//! (`--overwrite=ask|always|never|update`, the dialog's answers and those that stick:
//! "Overwrite all", "Skip all", "Overwrite all older"; "Rename" copies under a free name),
//! after cp's protections of the destination (never through a dangling or
//! unreachable symlink, never over a name this run made, never over a file the user may
//! not write unless `-f`).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::atomic::Ordering;

use rustix::fs::{self as rfs, AtFlags, FileType};
use rustix::io::Errno;

use super::options::OverwritePolicy;
use super::shared::{DirNode, Meta, Shared, errmsg, lock};
use super::{ConflictAnswer, ConflictQuestion, ConflictSide};
use crate::present::quote::quote;

/// Policy answers that stick ("Overwrite all", "Skip all").
pub(crate) const ALL_NONE: u8 = 0;
pub(crate) const ALL_OVERWRITE: u8 = 1;
pub(crate) const ALL_SKIP: u8 = 2;
pub(crate) const ALL_OLDER: u8 = 3;

pub(crate) enum Decision {
    /// Write; with the destination it replaces (None: the name was free).
    Proceed(Option<Meta>),
    /// Keep the existing file; write under a free name beside it ("name (1).ext").
    Rename,
    Skip(String),
    Fail(String),
    Stop,
}

/// The `k`-th alternative to `name` for "Rename": "report (1).pdf", "archive (2).tar.gz",
/// ".bashrc (1)", "README (3)" — the number goes before the extension, as file managers do.
pub(crate) fn free_name(name: &OsStr, k: u32) -> OsString {
    let b = name.as_bytes();
    // The extension starts at the first dot after a leading one, so "a.tar.gz" keeps ".tar.gz";
    // a name that is only a dot-file (".bashrc") has none.
    let split = b
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, c)| **c == b'.')
        .map_or(b.len(), |(i, _)| i);
    let mut out = b[..split].to_vec();
    out.extend_from_slice(format!(" ({k})").as_bytes());
    out.extend_from_slice(&b[split..]);
    OsString::from_vec(out)
}

impl Shared {
    /// The conflict policy for an existing destination name, after [`Shared::protect`].
    /// `clash`: the kind of an earlier entry of this run made under the same name.
    #[expect(
        clippy::too_many_lines,
        reason = "the overwrite policy's cases in cp's precedence order"
    )]
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
                let older = src_mtime > existing.mtime;
                let older_rule = |d: Decision| {
                    if older {
                        d
                    } else {
                        Decision::Skip(
                            "destination is not older than the source (overwrite all older)".into(),
                        )
                    }
                };
                match self.conflict_all.load(Ordering::SeqCst) {
                    ALL_OVERWRITE => return proceed,
                    ALL_SKIP => return Decision::Skip("destination exists (skip all)".into()),
                    ALL_OLDER => return older_rule(proceed),
                    _ => {}
                }
                if self.is_stopped() {
                    return Decision::Stop;
                }
                let side = |m: &Meta| ConflictSide {
                    size: m.size,
                    mtime: m.mtime,
                };
                let question = ConflictQuestion {
                    destination: dst.clone(),
                    source: src.to_path_buf(),
                    new: side(smeta),
                    existing: side(&existing),
                };
                match ask.ask(&question) {
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
                    ConflictAnswer::OverwriteAllOlder => {
                        self.conflict_all.store(ALL_OLDER, Ordering::SeqCst);
                        older_rule(proceed)
                    }
                    ConflictAnswer::Rename => Decision::Rename,
                    ConflictAnswer::Cancel => {
                        self.control.cancel();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_names_number_before_the_extension() {
        let f = |n: &str, k| free_name(OsStr::new(n), k).into_string().unwrap();
        assert_eq!(f("report.pdf", 1), "report (1).pdf");
        assert_eq!(f("archive.tar.gz", 2), "archive (2).tar.gz");
        assert_eq!(f(".bashrc", 1), ".bashrc (1)");
        assert_eq!(f(".config.json", 1), ".config (1).json");
        assert_eq!(f("README", 3), "README (3)");
        // Bytes that are not UTF-8 stay as they are.
        let odd = OsStr::from_bytes(b"x\xff.bin");
        assert_eq!(free_name(odd, 1).as_bytes(), b"x\xff (1).bin");
    }
}
