//! Operations on new names inside the destination that a hostile user who can write there
//! cannot redirect (docs/security.md): each node this run makes is pinned by an
//! `O_PATH|O_NOFOLLOW` descriptor and checked to be the node it made; mode, owner and times
//! are set through that descriptor; the rename into place is checked against the pinned
//! inode before and after.

use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// Why an operation on a new destination name did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeErr {
    Io(Errno),
    /// The name no longer holds the node this run made: someone else renamed, removed or
    /// replaced it. Nothing was done through it.
    Replaced,
    /// An existing directory's name holds something else than when the copy looked at it:
    /// someone swapped it. Nothing was done through it.
    Swapped,
}

impl From<Errno> for NodeErr {
    fn from(e: Errno) -> Self {
        NodeErr::Io(e)
    }
}

/// Words for [`NodeErr::Swapped`] in per-file messages.
pub(crate) const SWAPPED: &str = "the directory there was replaced by something else after the copy looked at it (someone else is writing into this directory); nothing was done through it";

/// Words for [`NodeErr::Replaced`] in per-file messages.
pub(crate) const REPLACED: &str = "its temporary name was replaced by another file while it was being made (someone else is writing into this directory); nothing was done through it";

/// Our effective uid, asked once: the process never changes it, and new nodes are checked
/// against it once per directory and special file.
pub(crate) fn euid() -> u32 {
    static EUID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *EUID.get_or_init(|| rustix::process::geteuid().as_raw())
}

/// Which inode a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ident {
    pub dev: u64,
    pub ino: u64,
}

#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn ident(st: &rfs::Stat) -> Ident {
    Ident {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    }
}

/// The inode an open descriptor refers to.
pub(crate) fn ident_of(fd: impl AsFd) -> Result<Ident, Errno> {
    rfs::fstat(fd).map(|s| ident(&s))
}

/// The inode a name in `dir` holds, without following a symlink.
pub(crate) fn ident_at(dir: impl AsFd, name: &OsStr) -> Result<Ident, Errno> {
    rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map(|s| ident(&s))
}

/// A node this run made, held by an `O_PATH` descriptor: operations on it reach this inode
/// whatever happens to its name.
pub(crate) struct Pinned {
    fd: OwnedFd,
    pub id: Ident,
}

/// What a freshly made node must look like.
pub(crate) struct Expect {
    pub kind: FileType,
    /// Device number of a device node.
    pub rdev: Option<u64>,
    /// Our effective uid: the owner new nodes get, unless the file system maps it.
    pub owner: u32,
}

/// Opens `name` in `dir` as `O_PATH|O_NOFOLLOW` and checks it is the node just made: the
/// expected type (a symlink planted in its place is the symlink itself, never followed),
/// device number, owner, and a single link (a hard link to a file elsewhere has two).
pub(crate) fn pin(dir: BorrowedFd<'_>, name: &OsStr, want: &Expect) -> Result<Pinned, NodeErr> {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rfs::fstat(&fd)?;
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let (kind, nlink, uid, rdev) = (
        FileType::from_raw_mode(st.st_mode as u32),
        st.st_nlink as u64,
        st.st_uid as u32,
        st.st_rdev as u64,
    );
    let ok = kind == want.kind && nlink == 1 && want.rdev.is_none_or(|r| rdev == r);
    if !ok || (uid != want.owner && new_node_owner(dir, name)? != uid) {
        return Err(NodeErr::Replaced);
    }
    Ok(Pinned { id: ident(&st), fd })
}

/// The owner a new file gets in `dir` when it is not our euid (NFS with root_squash maps
/// root to nobody): an unnamed probe file (`O_TMPFILE`), which nobody can see or move and
/// which goes when closed; where the filesystem has no unnamed files (NFS), a probe made
/// with `O_EXCL` (certainly ours) and removed at once. Only the named probe can be left
/// behind, by someone who renames it away before it is removed.
fn new_node_owner(dir: BorrowedFd<'_>, near: &OsStr) -> Result<u32, Errno> {
    let unnamed = OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC;
    match rfs::openat(dir, c".", unnamed, Mode::from_raw_mode(0o600)) {
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        Ok(fd) => return rfs::fstat(&fd).map(|s| s.st_uid as u32),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT) => {}
        Err(e) => return Err(e),
    }
    let mut probe = near.to_os_string();
    probe.push(format!(".probe{:08x}", rand::random::<u32>()));
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(dir, &probe, flags, Mode::from_raw_mode(0o600))?;
    let st = rfs::fstat(&fd);
    let _ = rfs::unlinkat(dir, &probe, AtFlags::empty());
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    st.map(|s| s.st_uid as u32)
}

/// Checks that a directory this run just made and opened (`O_NOFOLLOW`) is still the one
/// it made: owned by us, not a directory someone else made after removing ours.
/// Returns the mode bits it has.
pub(crate) fn check_made_dir(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    fd: &OwnedFd,
) -> Result<u32, NodeErr> {
    let euid = euid();
    let st = rfs::fstat(fd)?;
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let uid = st.st_uid as u32;
    if uid != euid && new_node_owner(parent, name)? != uid {
        return Err(NodeErr::Replaced);
    }
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    Ok(st.st_mode as u32 & 0o7777)
}

/// `/proc/self/fd/N`: the kernel resolves it to the very inode the descriptor holds, so a
/// call through it never walks a name inside the destination.
fn proc_path(fd: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

impl Pinned {
    pub fn chown(&self, uid: u32, gid: u32) -> Result<(), Errno> {
        rfs::chownat(
            &self.fd,
            "",
            Some(rfs::Uid::from_raw(uid)),
            Some(rfs::Gid::from_raw(gid)),
            AtFlags::EMPTY_PATH,
        )
    }

    /// fchmod does not take an `O_PATH` descriptor (and symlinks have no mode of their own),
    /// so the mode goes through the descriptor's /proc link. Never called on a symlink.
    pub fn chmod(&self, mode: u32) -> Result<(), Errno> {
        match rfs::chmod(proc_path(&self.fd), Mode::from_raw_mode(mode)) {
            Err(Errno::NOENT) => Err(Errno::NOSYS),
            r => r,
        }
    }

    pub fn set_times(&self, ts: &rfs::Timestamps) -> Result<(), Errno> {
        let flags = AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW;
        match rfs::utimensat(&self.fd, "", ts, flags) {
            // Kernels without AT_EMPTY_PATH for utimensat: the /proc link, not followed
            // past the node itself.
            Err(Errno::INVAL | Errno::NOENT) => {
                rfs::utimensat(rfs::CWD, proc_path(&self.fd), ts, AtFlags::SYMLINK_NOFOLLOW)
            }
            r => r,
        }
    }
}

/// Renames `tmp` in `from` to `final_name` in `to` if and only if `tmp` still holds node
/// `id`, and checks afterwards that `final_name` holds it. `noreplace`: the name was free
/// when the copy decided to write, so a file that appeared there since is never replaced.
/// `from` is a directory nobody else can write in (the destination directory itself when
/// it is private, else its staging directory: see `stage.rs`), so nothing can change
/// between the check and the rename; the check after it reports a name someone replaced
/// at once as [`NodeErr::Replaced`].
pub(crate) fn rename_checked(
    from: BorrowedFd<'_>,
    tmp: &OsStr,
    to: BorrowedFd<'_>,
    final_name: &OsStr,
    id: Ident,
    noreplace: bool,
) -> Result<(), NodeErr> {
    if ident_at(from, tmp)? != id {
        return Err(NodeErr::Replaced);
    }
    let flags = if noreplace {
        RenameFlags::NOREPLACE
    } else {
        RenameFlags::empty()
    };
    match rfs::renameat_with(from, tmp, to, final_name, flags) {
        // File systems without RENAME_NOREPLACE: the plain rename.
        Err(Errno::INVAL) if noreplace => rfs::renameat(from, tmp, to, final_name)?,
        r => r?,
    }
    match ident_at(to, final_name) {
        Ok(now) if now == id => Ok(()),
        Ok(_) | Err(Errno::NOENT) => Err(NodeErr::Replaced),
        Err(e) => Err(NodeErr::Io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(p: &std::path::Path) -> OwnedFd {
        rfs::open(
            p,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    fn me() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    #[test]
    fn pin_refuses_a_symlink_or_hard_link_planted_in_place_of_the_node() {
        let t = tempfile::tempdir().unwrap();
        let d = dir(t.path());
        let outside = t.path().join("outside");
        std::fs::write(&outside, b"x").unwrap();
        std::os::unix::fs::symlink(&outside, t.path().join("tmp")).unwrap();
        let fifo = Expect {
            kind: FileType::Fifo,
            rdev: None,
            owner: me(),
        };
        assert_eq!(
            pin(d.as_fd(), OsStr::new("tmp"), &fifo).err(),
            Some(NodeErr::Replaced)
        );
        std::fs::remove_file(t.path().join("tmp")).unwrap();
        std::fs::hard_link(&outside, t.path().join("tmp")).unwrap();
        let file = Expect {
            kind: FileType::RegularFile,
            rdev: None,
            owner: me(),
        };
        assert_eq!(
            pin(d.as_fd(), OsStr::new("tmp"), &file).err(),
            Some(NodeErr::Replaced),
            "two links: not a node this run made"
        );
    }

    #[test]
    fn mode_and_times_go_to_the_pinned_inode_even_after_a_swap() {
        let t = tempfile::tempdir().unwrap();
        let d = dir(t.path());
        rfs::mknodat(&d, "tmp", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let fifo = Expect {
            kind: FileType::Fifo,
            rdev: None,
            owner: me(),
        };
        let p = pin(d.as_fd(), OsStr::new("tmp"), &fifo).unwrap();
        // The racer: the node moves away and a symlink to a victim takes its name.
        let victim = t.path().join("victim");
        std::fs::write(&victim, b"secret").unwrap();
        std::fs::set_permissions(&victim, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        std::fs::rename(t.path().join("tmp"), t.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&victim, t.path().join("tmp")).unwrap();
        p.chmod(0o666).unwrap();
        let ts = rfs::Timestamps {
            last_access: rfs::Timespec {
                tv_sec: 1000,
                tv_nsec: 0,
            },
            last_modification: rfs::Timespec {
                tv_sec: 2000,
                tv_nsec: 0,
            },
        };
        p.set_times(&ts).unwrap();
        use std::os::unix::fs::MetadataExt;
        let v = std::fs::metadata(&victim).unwrap();
        assert_eq!(v.mode() & 0o7777, 0o600, "the victim keeps its mode");
        assert_ne!(v.mtime(), 2000);
        let m = std::fs::symlink_metadata(t.path().join("moved")).unwrap();
        assert_eq!((m.mode() & 0o7777, m.mtime()), (0o666, 2000));
        // And the rename refuses to move the symlink into place.
        let r = rename_checked(
            d.as_fd(),
            OsStr::new("tmp"),
            d.as_fd(),
            OsStr::new("final"),
            p.id,
            true,
        );
        assert_eq!(r, Err(NodeErr::Replaced));
        assert!(!t.path().join("final").exists());
    }

    #[test]
    fn rename_checked_keeps_a_file_that_appeared_under_the_final_name() {
        let t = tempfile::tempdir().unwrap();
        let d = dir(t.path());
        std::fs::write(t.path().join("tmp"), b"ours").unwrap();
        std::fs::write(t.path().join("final"), b"theirs").unwrap();
        let id = ident_at(d.as_fd(), OsStr::new("tmp")).unwrap();
        let (tmp, fin) = (OsStr::new("tmp"), OsStr::new("final"));
        let r = rename_checked(d.as_fd(), tmp, d.as_fd(), fin, id, true);
        assert_eq!(r, Err(NodeErr::Io(Errno::EXIST)));
        assert_eq!(std::fs::read(t.path().join("final")).unwrap(), b"theirs");
        rename_checked(d.as_fd(), tmp, d.as_fd(), fin, id, false).unwrap();
        assert_eq!(std::fs::read(t.path().join("final")).unwrap(), b"ours");
    }
}
