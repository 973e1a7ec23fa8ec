//! The private staging directory: where the temporaries of a destination directory that
//! other users can write in are made, so no name they can touch is ever renamed into place.
//!
//! A destination directory is *private* when only this process's user can make, rename or
//! remove names in it (owned by our euid, no group or other write bit; an ACL granting
//! write shows in the group bits as its mask). Temporaries there are safe as they are. In
//! any other directory (a NAS share, `/tmp`, a tree another user owns) a temporary made
//! under a name could be swapped between its check and its rename, so it is made inside a
//! `.copyscope-stage-XXXXXXXX` directory (mode 0700, ours) made in that directory, and
//! renamed from there into place: `renameat2(stage, tmp, dir, name)` moves the very entry
//! this run made, since nobody else can reach a name inside the stage.
//!
//! The stage is made with `mkdirat`, opened with `O_NOFOLLOW` and accepted only if it is
//! ours, 0700-like, empty and not a directory this run made for the copy (someone who can
//! write in the directory could rename one of those into the stage's name between the two
//! calls). It is removed when its directory's last child is done, and on every exit path
//! of the engine ([`StageSet::remove_all`]); only a SIGKILL can leave one behind, empty but
//! for partial temporaries, which the next run does not touch (its names are random).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::nofollow::{self, Ident, NodeErr};
use super::shared::{TEMP_MARKER, lock};

/// Marker of a staging directory's name: `.copyscope-stage-XXXXXXXX`.
pub const STAGE_MARKER: &str = ".copyscope-stage-";

/// Whether only we can make, rename or remove names in the directory `fd` holds.
pub(crate) fn is_private(fd: impl AsFd) -> bool {
    rfs::fstat(fd).is_ok_and(|s| is_private_stat(&s))
}

/// [`is_private`] of a directory already `fstat`ed.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
pub(crate) fn is_private_stat(s: &rfs::Stat) -> bool {
    s.st_uid as u32 == nofollow::euid() && s.st_mode as u32 & 0o022 == 0
}

/// A staging directory this run made and holds open.
pub(crate) struct Stage {
    /// The directory it was made in (a descriptor of its own, so removal never walks a path).
    parent: OwnedFd,
    name: OsString,
    fd: OwnedFd,
    id: Ident,
    removed: Mutex<bool>,
}

impl Stage {
    /// Makes a staging directory in `parent` and checks it is the one made (see the module
    /// comment). `ours` are the directories this run made for the copy.
    pub(crate) fn make(parent: BorrowedFd<'_>, ours: &MadeDirs) -> Result<Stage, NodeErr> {
        let mut last = Errno::EXIST;
        for _ in 0..16 {
            let name = OsString::from(format!("{STAGE_MARKER}{:08x}", rand::random::<u32>()));
            match rfs::mkdirat(parent, &name, Mode::from_raw_mode(0o700)) {
                Ok(()) => return Self::open_made(parent, name, ours),
                Err(Errno::EXIST) => last = Errno::EXIST,
                Err(e) => return Err(NodeErr::Io(e)),
            }
        }
        Err(NodeErr::Io(last))
    }

    fn open_made(
        parent: BorrowedFd<'_>,
        name: OsString,
        ours: &MadeDirs,
    ) -> Result<Stage, NodeErr> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rfs::openat(parent, &name, flags, Mode::empty()) {
            Ok(fd) => fd,
            // A symlink or a file took the stage's name between the mkdir and the open, or
            // the stage was renamed away (the directory is others' to rename in).
            Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => return Err(NodeErr::Replaced),
            Err(e) => return Err(NodeErr::Io(e)),
        };
        let mode = nofollow::check_made_dir(parent, &name, &fd)?;
        let id = nofollow::ident_of(&fd)?;
        let st = rfs::fstat(&fd)?;
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        let nlink = st.st_nlink as u64;
        if mode & 0o077 != 0 || nlink != 2 || ours.contains(id) || !is_empty(&fd)? {
            return Err(NodeErr::Replaced);
        }
        Ok(Stage {
            parent: rustix::io::fcntl_dupfd_cloexec(parent, 0)?,
            name,
            fd,
            id,
            removed: Mutex::new(false),
        })
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Removes what is left in it (temporaries of files a cancel gave up) and the directory
    /// itself, if its name still holds it. Once; later calls do nothing.
    pub(crate) fn remove(&self) {
        let mut removed = lock(&self.removed);
        if *removed {
            return;
        }
        *removed = true;
        if let Ok(names) = list(&self.fd) {
            for (name, kind) in names {
                let flags = if kind == FileType::Directory {
                    AtFlags::REMOVEDIR
                } else {
                    AtFlags::empty()
                };
                // Only names this run makes here: temporaries (files, nodes, directories).
                if contains(&name, TEMP_MARKER) {
                    let _ = rfs::unlinkat(&self.fd, &name, flags);
                }
            }
        }
        if nofollow::ident_at(&self.parent, &self.name) == Ok(self.id) {
            let _ = rfs::unlinkat(&self.parent, &self.name, AtFlags::REMOVEDIR);
        }
    }
}

fn contains(name: &OsStr, marker: &str) -> bool {
    use std::os::unix::ffi::OsStrExt;
    name.as_bytes()
        .windows(marker.len())
        .any(|w| w == marker.as_bytes())
}

/// The entries of a directory, read through a descriptor of its own (a directory's read
/// offset is shared by its duplicates).
fn list(fd: &OwnedFd) -> Result<Vec<(OsString, FileType)>, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let own = rfs::openat(fd, c".", flags, Mode::empty())?;
    super::scan::read_typed(&own)
}

fn is_empty(fd: &OwnedFd) -> Result<bool, Errno> {
    list(fd).map(|l| l.is_empty())
}

/// The directories this run made for the copy (their inodes): never accepted as a stage.
#[derive(Default)]
pub(crate) struct MadeDirs(Mutex<HashSet<(u64, u64)>>);

impl MadeDirs {
    pub(crate) fn insert(&self, id: Ident) {
        lock(&self.0).insert((id.dev, id.ino));
    }

    fn contains(&self, id: Ident) -> bool {
        lock(&self.0).contains(&(id.dev, id.ino))
    }
}

/// Every stage of the run, so the engine's end removes those whose directory never
/// completed (a cancel, a fatal error, a worker held in the kernel).
#[derive(Default)]
pub(crate) struct StageSet(Mutex<Vec<Arc<Stage>>>);

impl StageSet {
    pub(crate) fn add(&self, s: &Arc<Stage>) {
        lock(&self.0).push(s.clone());
    }

    pub(crate) fn remove_all(&self) {
        let all = std::mem::take(&mut *lock(&self.0));
        for s in all {
            s.remove();
        }
    }
}

/// Where a directory's temporaries are made.
#[derive(Clone)]
pub(crate) enum TempDir {
    /// In the directory itself (it is private).
    Here,
    Staged(Arc<Stage>),
}

impl TempDir {
    /// The directory to make temporaries in, for destination directory `dir`.
    pub(crate) fn fd<'a>(&'a self, dir: &'a super::shared::DirNode) -> BorrowedFd<'a> {
        match self {
            TempDir::Here => dir.dst.as_fd(),
            TempDir::Staged(s) => s.fd(),
        }
    }
}

/// A directory's stage, made the first time one of its entries needs a temporary.
#[derive(Default)]
pub(crate) struct LazyStage(Mutex<Option<Arc<Stage>>>);

impl LazyStage {
    /// The stage of directory `dir`, made now if it has none yet.
    pub(crate) fn get(
        &self,
        dir: BorrowedFd<'_>,
        made: &MadeDirs,
        all: &StageSet,
    ) -> Result<Arc<Stage>, NodeErr> {
        let mut g = lock(&self.0);
        if let Some(s) = g.as_ref() {
            return Ok(s.clone());
        }
        let s = Arc::new(Stage::make(dir, made)?);
        all.add(&s);
        *g = Some(s.clone());
        Ok(s)
    }

    /// Removes the stage, if one was made (the directory's last child is done).
    pub(crate) fn remove(&self) {
        if let Some(s) = lock(&self.0).take() {
            s.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(p: &std::path::Path) -> OwnedFd {
        rfs::open(p, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap()
    }

    #[test]
    fn a_stage_is_private_and_removed_with_what_is_left_in_it() {
        let t = tempfile::tempdir().unwrap();
        let d = open(t.path());
        let s = Stage::make(d.as_fd(), &MadeDirs::default()).unwrap();
        assert!(is_private(s.fd()));
        let tmp = format!(".f{TEMP_MARKER}000001");
        rfs::openat(
            s.fd(),
            tmp.as_str(),
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o600),
        )
        .unwrap();
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
        s.remove();
        assert_eq!(
            std::fs::read_dir(t.path()).unwrap().count(),
            0,
            "stage gone"
        );
    }

    #[test]
    fn a_directory_of_the_copy_renamed_into_the_stage_name_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = open(t.path());
        std::fs::create_dir(t.path().join("ours")).unwrap();
        let made = MadeDirs::default();
        made.insert(nofollow::ident_of(open(&t.path().join("ours"))).unwrap());
        // As if the racer won: the stage's name now holds a directory of the copy.
        let name = OsString::from(format!("{STAGE_MARKER}00000000"));
        std::fs::rename(t.path().join("ours"), t.path().join(&name)).unwrap();
        assert!(matches!(
            Stage::open_made(d.as_fd(), name, &made),
            Err(NodeErr::Replaced)
        ));
    }

    #[test]
    fn a_stage_renamed_away_before_it_is_opened_is_refused_as_replaced() {
        let t = tempfile::tempdir().unwrap();
        let d = open(t.path());
        // As if the racer moved the stage away between the mkdir and the open.
        let name = OsString::from(format!("{STAGE_MARKER}00000002"));
        assert!(matches!(
            Stage::open_made(d.as_fd(), name, &MadeDirs::default()),
            Err(NodeErr::Replaced)
        ));
    }

    #[test]
    fn a_non_empty_directory_is_never_a_stage() {
        let t = tempfile::tempdir().unwrap();
        let d = open(t.path());
        let name = OsString::from(format!("{STAGE_MARKER}00000001"));
        std::fs::create_dir(t.path().join(&name)).unwrap();
        std::fs::write(t.path().join(&name).join("precious"), b"x").unwrap();
        assert!(matches!(
            Stage::open_made(d.as_fd(), name.clone(), &MadeDirs::default()),
            Err(NodeErr::Replaced)
        ));
        assert!(t.path().join(&name).join("precious").exists());
    }
}
