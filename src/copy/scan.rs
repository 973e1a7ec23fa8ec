//! The scan: walks the sources through directory file descriptors (every call is
//! `*at`-relative, so paths deeper than PATH_MAX work), creates directories, symlinks and
//! special files itself, and queues regular files to the copy workers. The totals come from
//! the census (census.rs), which walks ahead of this walk; this one is held back by the
//! workers' bounded queue.

use crate::present::quote::quote;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::nofollow::{self, Ident, NodeErr};
use super::options::Dereference;
use super::plan::Root;
use super::queue::WorkQueue;
use super::shared::{
    DirNode, Entry, Meta, Shared, cfr_cannot_clone, errmsg, is_zfs, sizes_are_true,
};
use super::stage::{self, LazyStage};

/// Directory entry names with the type `getdents` gave (`d_type`; `Unknown` on file systems
/// that do not fill it), sorted by name so the copy order is predictable.
/// Reads `fd` itself from its current offset (freshly opened: the start), with no second
/// descriptor (`Dir::read_from` reopens the directory: an openat, fcntl and close more).
pub(crate) fn read_typed(fd: &OwnedFd) -> Result<Vec<(OsString, FileType)>, Errno> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 32 << 10];
    let mut dir = rfs::RawDir::new(fd, &mut buf);
    let mut names = Vec::new();
    while let Some(ent) = dir.next() {
        let ent = ent?;
        let b = ent.file_name().to_bytes();
        if b == b"." || b == b".." {
            continue;
        }
        names.push((OsStr::from_bytes(b).to_os_string(), ent.file_type()));
    }
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(names)
}

fn open_dir(path: &Path, follow: bool) -> Result<OwnedFd, Errno> {
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::open(path, flags, Mode::empty())
}

fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(pp) if !pp.as_os_str().is_empty() => pp.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The parent as the user wrote it ("" for a bare name, so events say "file", not "./file").
fn display_parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// A destination directory opened for the copy, and what this run did to it.
struct DestDir {
    fd: OwnedFd,
    /// This run made it.
    created: bool,
    /// Made with the mode it ends with, so nothing sets its mode later.
    mode_set: bool,
}

impl DestDir {
    /// Whether its owner, mode, extended attributes or mtime are set after its last child.
    fn finalize(&self, sh: &Shared) -> bool {
        let o = &sh.opts;
        o.preserve_owner || (self.created && (!self.mode_set || o.preserve_mode_time || o.xattrs))
    }
}

/// The mode a directory this run makes starts with: the one it ends with when that lets
/// nobody else write in it, lets us write in it, and neither its owner nor its ACL change
/// later (as `cp -r` makes it: no fchmod at the end); otherwise 0700, so nobody enters it
/// before its owner, ACL and mode are final (as `cp -p` does).
fn mkdir_mode(sh: &Shared, final_mode: u32) -> u32 {
    let closed_later = sh.opts.preserve_owner || sh.opts.xattrs;
    if !closed_later && final_mode & 0o722 == 0o700 {
        final_mode & 0o1777
    } else {
        0o700
    }
}

/// Opens a destination directory `name` in `parent` without following a symlink; one this
/// run just made must still be the directory it made (ours, not one someone swapped in).
/// `final_mode` is the mode the directory ends with, to tell whether it has it already.
fn open_made_dir(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    created: bool,
    final_mode: u32,
) -> Result<DestDir, NodeErr> {
    let fd = rfs::openat(parent, name, DIR_NOFOLLOW, Mode::empty())?;
    let mut mode_set = false;
    if created {
        let mode = nofollow::check_made_dir(parent, name, &fd)?;
        mode_set = final_mode == mode & !0o2000;
    }
    Ok(DestDir {
        fd,
        created,
        mode_set,
    })
}

const DIR_NOFOLLOW: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// An existing directory `name` in `parent`, opened without following a symlink, that must
/// be the inode `want` (what the plan or a no-follow stat saw there): a name swapped since
/// for a symlink fails to open, one swapped for another directory is refused.
fn open_existing_dir(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    want: Ident,
) -> Result<DestDir, NodeErr> {
    let fd = match rfs::openat(parent, name, DIR_NOFOLLOW, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::LOOP | Errno::NOTDIR) => return Err(NodeErr::Swapped),
        Err(e) => return Err(NodeErr::Io(e)),
    };
    if nofollow::ident_of(&fd)? != want {
        return Err(NodeErr::Swapped);
    }
    Ok(DestDir {
        fd,
        created: false,
        mode_set: false,
    })
}

/// Makes directory `name` in `parent` with `mode` and opens it, or, when the name is taken
/// by a directory, opens that one (checked to be the directory a no-follow stat saw).
/// With `stage` (the parent is not private) the directory is made and opened inside the
/// stage under a temporary name, then renamed into place without replacing anything, so
/// the directory this run fills is certainly the one it made.
fn make_or_open_dir(
    parent: BorrowedFd<'_>,
    stage: Option<BorrowedFd<'_>>,
    name: &OsStr,
    mode: u32,
    final_mode: u32,
) -> Result<DestDir, (&'static str, NodeErr)> {
    let made = match stage {
        // A merge meets existing directories most of the time: those are opened at once.
        Some(_) if rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW).is_ok() => Ok(None),
        Some(st) => mkdir_staged(parent, st, name, mode, final_mode),
        None => match rfs::mkdirat(parent, name, Mode::from_raw_mode(mode)) {
            Ok(()) => open_made_dir(parent, name, true, final_mode).map(Some),
            Err(Errno::EXIST) => Ok(None),
            Err(e) => Err(NodeErr::Io(e)),
        },
    };
    match made {
        Ok(Some(d)) => Ok(d),
        Ok(None) => open_taken(parent, name),
        Err(e) => Err(("cannot create directory", e)),
    }
}

/// What [`open_taken`] says of a name taken by something that is not a directory.
const NOT_DIR: &str = "cannot overwrite non-directory with a directory";

/// The directory already at `name`: opened if it is one, else cp's refusal.
fn open_taken(parent: BorrowedFd<'_>, name: &OsStr) -> Result<DestDir, (&'static str, NodeErr)> {
    match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) if Meta::from_stat(&s).file_type() == FileType::Directory => {
            let m = Meta::from_stat(&s);
            let want = Ident {
                dev: m.dev,
                ino: m.ino,
            };
            open_existing_dir(parent, name, want).map_err(|e| ("cannot open directory", e))
        }
        Ok(_) => Err((NOT_DIR, NodeErr::Io(Errno::NOTDIR))),
        Err(e) => Err(("cannot open directory", NodeErr::Io(e))),
    }
}

/// See [`make_or_open_dir`]: None when the name was taken meanwhile.
fn mkdir_staged(
    parent: BorrowedFd<'_>,
    stage: BorrowedFd<'_>,
    name: &OsStr,
    mode: u32,
    final_mode: u32,
) -> Result<Option<DestDir>, NodeErr> {
    let mut tmp = None;
    for _ in 0..16 {
        let t = super::file::temp_name(name, rand::random::<u32>());
        match rfs::mkdirat(stage, &t, Mode::from_raw_mode(mode)) {
            Ok(()) => {
                tmp = Some(t);
                break;
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(NodeErr::Io(e)),
        }
    }
    let tmp = tmp.ok_or(NodeErr::Io(Errno::EXIST))?;
    let rmdir = || rfs::unlinkat(stage, &tmp, AtFlags::REMOVEDIR);
    let dir = match open_made_dir(stage, &tmp, true, final_mode) {
        Ok(d) => d,
        Err(e) => {
            let _ = rmdir();
            return Err(e);
        }
    };
    match rfs::renameat_with(stage, &tmp, parent, name, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(Some(dir)),
        Err(e) => {
            let _ = rmdir();
            match e {
                Errno::EXIST => Ok(None),
                // No RENAME_NOREPLACE here: made in place (the owner check still applies).
                Errno::INVAL => match rfs::mkdirat(parent, name, Mode::from_raw_mode(mode)) {
                    Ok(()) => open_made_dir(parent, name, true, final_mode).map(Some),
                    Err(Errno::EXIST) => Ok(None),
                    Err(e) => Err(NodeErr::Io(e)),
                },
                e => Err(NodeErr::Io(e)),
            }
        }
    }
}

fn dest_ident(root: &Root) -> Option<Ident> {
    root.dest_ident.map(|(dev, ino)| Ident { dev, ino })
}

/// The destination directory of a tree root. The path the user named is resolved as cp
/// resolves it up to its parent (which may be a symlink: the user's choice); the last name,
/// the root of the copy, is made or opened relative to that parent without following.
/// A directory the plan saw there must still be that directory.
fn open_root_dest(
    sh: &Shared,
    root: &Root,
    smeta: &Meta,
) -> Result<DestDir, (&'static str, NodeErr)> {
    let open_err = |e| ("cannot open directory", e);
    let Some(name) = root.dest.file_name() else {
        // "/", "..", "dir/.": no last name to open relative to a parent.
        let fd = open_dir(&root.dest, true).map_err(|e| open_err(e.into()))?;
        if let Some(want) = dest_ident(root)
            && nofollow::ident_of(&fd).map_err(|e| open_err(e.into()))? != want
        {
            return Err(open_err(NodeErr::Swapped));
        }
        return Ok(DestDir {
            fd,
            created: false,
            mode_set: false,
        });
    };
    let parent = open_dir(&parent_of(&root.dest), true).map_err(|e| open_err(e.into()))?;
    if let Some(want) = dest_ident(root) {
        return open_existing_dir(parent.as_fd(), name, want).map_err(open_err);
    }
    let final_mode = sh.new_dir_mode(smeta);
    let mode = mkdir_mode(sh, final_mode);
    if stage::is_private(&parent) {
        return make_or_open_dir(parent.as_fd(), None, name, mode, final_mode);
    }
    let st = stage::Stage::make(parent.as_fd(), &sh.made_dirs).map_err(open_err)?;
    let r = make_or_open_dir(parent.as_fd(), Some(st.fd()), name, mode, final_mode);
    st.remove();
    r
}

/// Reports a failed operation on a destination node.
pub(crate) fn node_error(sh: &Shared, path: &Path, what: &str, e: NodeErr) {
    match e {
        NodeErr::Io(err) => sh.dest_error(path, what, err),
        NodeErr::Replaced => sh.fail(path, format!("{what}: {}", nofollow::REPLACED)),
        NodeErr::Swapped => sh.fail(path, format!("{what}: {}", nofollow::SWAPPED)),
    }
}

/// Walks every root; creates directories and specials; queues regular files.
pub(crate) fn scan(sh: &Arc<Shared>, roots: &[Root], tx: &WorkQueue<Entry>) {
    for root in roots {
        if sh.gate().is_err() {
            break;
        }
        let ok = if root.is_dir {
            scan_tree(sh, root, tx)
        } else {
            scan_file_root(sh, root, tx)
        };
        if !ok {
            break;
        }
    }
    tx.close();
}

/// A file (or symlink, FIFO, ...) named on the command line. Returns false when the
/// workers are gone (stopped).
fn scan_file_root(sh: &Arc<Shared>, root: &Root, tx: &WorkQueue<Entry>) -> bool {
    let (Some(src_name), Some(dst_name)) = (root.source.file_name(), root.dest.file_name()) else {
        sh.fail(&root.source, "cannot copy this path (no file name)".into());
        return true;
    };
    let src_parent = parent_of(&root.source);
    let dst_parent = parent_of(&root.dest);
    let path_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let src = match rfs::open(&src_parent, path_flags, Mode::empty()) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let dst = match rfs::open(&dst_parent, path_flags, Mode::empty()) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(&root.dest, errmsg(e));
            return true;
        }
    };
    if let Ok(rd) = open_dir(&dst_parent, true)
        && let Ok(st) = rfs::fstat(&rd)
    {
        sh.add_sync_target(Meta::from_stat(&st).dev, &rd);
    }
    let follow = sh.opts.dereference != Dereference::Never;
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let meta = match rfs::statat(&src, src_name, flags) {
        Ok(s) => Meta::from_stat(&s),
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let cfr_ok = cfr_cannot_clone(&dst);
    let (tmpfile_ok, private) = (!is_zfs(&dst), stage::is_private(&dst));
    let src_sizes_true = sizes_are_true(&src);
    let node = Arc::new(DirNode {
        src,
        dst,
        pending: AtomicUsize::new(1),
        meta: None,
        finalize: false,
        fresh: false,
        mode_set: false,
        parent: None,
        src_display: display_parent(&root.source),
        dst_display: display_parent(&root.dest),
        rel: PathBuf::new(),
        cfr_ok,
        src_sizes_true,
        tmpfile_ok: AtomicBool::new(tmpfile_ok),
        private,
        stage: LazyStage::default(),
    });
    let entry = Entry {
        parent: node.clone(),
        src_name: src_name.to_os_string(),
        dst_name: dst_name.to_os_string(),
        meta,
        follow,
        made: None,
        clash: None,
        meta_later: false,
    };
    let alive = dispatch(sh, entry, tx);
    node.release(sh);
    alive
}

/// Counts an entry and routes it: regular files to the workers, the rest made here.
/// Returns false when the workers are gone.
fn dispatch(sh: &Arc<Shared>, mut entry: Entry, tx: &WorkQueue<Entry>) -> bool {
    let m = entry.meta;
    sh.walked_files.fetch_add(1, Ordering::Relaxed);
    entry.clash = sh.claim(&entry.parent, &entry.dst_name, m.file_type());
    match m.file_type() {
        FileType::RegularFile => {
            sh.walked_bytes.fetch_add(m.data_size(), Ordering::Relaxed);
            if sh.opts.hard_links && m.nlink > 1 {
                match sh.hard_links.first_or_later(entry) {
                    Some(first) => entry = first,
                    None => return true,
                }
            }
            entry.parent.hold();
            let parent = entry.parent.clone();
            if tx.push(entry).is_err() {
                parent.release(sh);
                return false;
            }
            true
        }
        _ => {
            super::file::copy_special(sh, &entry);
            sh.stop_if_full(&entry.parent.dst);
            true
        }
    }
}

/// A regular file (by `d_type`) in a directory this run made, queued without a stat of its
/// own: nothing there can conflict, so the conflict policy never reads its metadata, and the
/// worker's `fstat` of the opened source gives its size and times (and checks it is still a
/// regular file). Not with `-a`: hard links need the inode before the copy.
fn unstatted_file(
    sh: &Shared,
    node: &Arc<DirNode>,
    name: &OsStr,
    d_type: FileType,
) -> Option<Entry> {
    if d_type != FileType::RegularFile || !node.fresh || sh.opts.hard_links {
        return None;
    }
    Some(Entry {
        parent: node.clone(),
        src_name: name.to_os_string(),
        dst_name: name.to_os_string(),
        meta: Meta::regular_unknown(),
        follow: sh.opts.dereference == Dereference::Always,
        made: None,
        clash: None,
        meta_later: true,
    })
}

struct Frame {
    node: Arc<DirNode>,
    names: Vec<(OsString, FileType)>,
    next: usize,
}

/// A directory named on the command line: depth-first, one frame per open directory.
#[expect(
    clippy::too_many_lines,
    reason = "the walk's one loop over its stack of open directories: a step taken out would need the stack and the descriptors passed through it"
)]
fn scan_tree(sh: &Arc<Shared>, root: &Root, tx: &WorkQueue<Entry>) -> bool {
    let follow_root = sh.opts.dereference != Dereference::Never;
    let src = match open_dir(&root.source, follow_root) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let smeta = match rfs::fstat(&src) {
        Ok(s) => Meta::from_stat(&s),
        Err(e) => {
            sh.fail(&root.source, errmsg(e));
            return true;
        }
    };
    let dest = match open_root_dest(sh, root, &smeta) {
        Ok(d) => d,
        Err((what, e)) => {
            node_error(sh, &root.dest, what, e);
            return !sh.is_stopped();
        }
    };
    let finalize = dest.finalize(sh);
    let DestDir {
        fd: dst,
        created,
        mode_set,
    } = dest;
    if created {
        sh.dir_created(&root.source);
        if let Ok(id) = nofollow::ident_of(&dst) {
            sh.made_dirs.insert(id);
        }
    }
    if let Ok(st) = rfs::fstat(&dst) {
        sh.add_sync_target(Meta::from_stat(&st).dev, &dst);
    }
    let names = match read_typed(&src) {
        Ok(n) => n,
        Err(e) => {
            sh.fail(
                &root.source,
                format!("cannot read directory: {}", errmsg(e)),
            );
            Vec::new()
        }
    };
    let rel = root
        .source
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| root.source.clone());
    let root_rel = rel.clone();
    let cfr_ok = cfr_cannot_clone(&dst);
    let (tmpfile_ok, private) = (!is_zfs(&dst), stage::is_private(&dst));
    let src_sizes_true = sizes_are_true(&src);
    let node = Arc::new(DirNode {
        src,
        dst,
        pending: AtomicUsize::new(1),
        meta: Some(smeta),
        finalize,
        fresh: created,
        mode_set,
        parent: None,
        src_display: root.source.clone(),
        dst_display: root.dest.clone(),
        rel,
        cfr_ok,
        src_sizes_true,
        tmpfile_ok: AtomicBool::new(tmpfile_ok),
        private,
        stage: LazyStage::default(),
    });
    sh.track_unfinished(&node);
    let mut stack = vec![Frame {
        node,
        names,
        next: 0,
    }];
    let follow_all = sh.opts.dereference == Dereference::Always;
    let stat_flags = if follow_all {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    while let Some(top) = stack.last_mut() {
        if sh.gate().is_err() {
            return false;
        }
        if top.next >= top.names.len() {
            if let Some(f) = stack.pop() {
                f.node.release(sh);
            }
            continue;
        }
        let d_type = top.names[top.next].1;
        let name = std::mem::take(&mut top.names[top.next].0);
        top.next += 1;
        let node = top.node.clone();
        if let Some(entry) = unstatted_file(sh, &node, &name, d_type) {
            let out = sh.exclude.is_some() && sh.excluded(&root_rel, &node.rel.join(&name), false);
            if !out && !dispatch(sh, entry, tx) {
                return false;
            }
            continue;
        }
        let path = node.src_display.join(&name);
        let meta = match rfs::statat(&node.src, &name, stat_flags) {
            Ok(s) => Meta::from_stat(&s),
            Err(Errno::LOOP) => {
                sh.walked_files.fetch_add(1, Ordering::Relaxed);
                sh.fail(
                    &path,
                    "symlink loop (too many levels of symbolic links)".into(),
                );
                continue;
            }
            Err(Errno::NOENT) if !follow_all => {
                sh.walked_files.fetch_add(1, Ordering::Relaxed);
                sh.fail(&path, "vanished before it could be copied".into());
                continue;
            }
            Err(e) => {
                sh.walked_files.fetch_add(1, Ordering::Relaxed);
                sh.fail(
                    &path,
                    format!("cannot stat {}: {}", quote(&path), errmsg(e)),
                );
                continue;
            }
        };
        let is_dir = meta.file_type() == FileType::Directory;
        if sh.excluded(&root_rel, &node.rel.join(&name), is_dir) {
            continue;
        }
        if !is_dir {
            let entry = Entry {
                parent: node,
                dst_name: name.clone(),
                src_name: name,
                meta,
                follow: follow_all,
                made: None,
                clash: None,
                meta_later: false,
            };
            if !dispatch(sh, entry, tx) {
                return false;
            }
            continue;
        }
        if let Some(child) = enter_dir(sh, &node, &name, &path, meta, follow_all) {
            // -x: a mount point is made (as cp does) but what is mounted there is not copied.
            let other_fs = sh.opts.one_file_system && meta.dev != smeta.dev;
            let names = match read_typed(&child.src) {
                Ok(_) if other_fs => Vec::new(),
                Ok(n) => n,
                Err(e) => {
                    let m = format!("cannot read directory {}: {}", quote(&path), errmsg(e));
                    sh.fail(&path, m);
                    Vec::new()
                }
            };
            stack.push(Frame {
                node: child,
                names,
                next: 0,
            });
        } else if sh.is_stopped() {
            return false;
        }
    }
    true
}

/// Opens a source subdirectory and makes (or merges into) its destination twin.
#[expect(
    clippy::too_many_lines,
    reason = "open, check and make the twin directory in one sequence: each check is on the descriptor the step before opened"
)]
fn enter_dir(
    sh: &Arc<Shared>,
    node: &Arc<DirNode>,
    name: &OsStr,
    path: &Path,
    meta: Meta,
    follow_all: bool,
) -> Option<Arc<DirNode>> {
    if follow_all {
        let mut a = Some(node.clone());
        while let Some(n) = a {
            if n.meta
                .is_some_and(|m| m.dev == meta.dev && m.ino == meta.ino)
            {
                sh.fail(
                    path,
                    "symlink loop: this directory is already being copied higher up".into(),
                );
                return None;
            }
            a = n.parent.clone();
        }
    }
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow_all {
        flags |= OFlags::NOFOLLOW;
    }
    let src = match rfs::openat(&node.src, name, flags, Mode::empty()) {
        Ok(f) => f,
        Err(e) => {
            sh.fail(
                path,
                format!("cannot open directory {}: {}", quote(path), errmsg(e)),
            );
            return None;
        }
    };
    let dst_path = node.dst_display.join(name);
    let final_mode = sh.new_dir_mode(&meta);
    let mode = mkdir_mode(sh, final_mode);
    let at = match node.temp_dir(sh) {
        Ok(at) => at,
        Err(e) => {
            node_error(sh, &dst_path, "cannot create directory", e);
            return None;
        }
    };
    let stage = match &at {
        stage::TempDir::Here => None,
        stage::TempDir::Staged(s) => Some(s.fd()),
    };
    let dest = match make_or_open_dir(node.dst.as_fd(), stage, name, mode, final_mode) {
        Ok(d) => d,
        Err((NOT_DIR, _)) => {
            let m = format!(
                "cannot overwrite non-directory {} with a directory",
                quote(&dst_path)
            );
            sh.fail(path, m);
            return None;
        }
        Err((what, e)) => {
            node_error(sh, &dst_path, what, e);
            return None;
        }
    };
    if dest.created {
        sh.dir_created(path);
    }
    // One fstat for both: whether it is private, and (made by this run) its inode.
    let st = rfs::fstat(&dest.fd).ok();
    if dest.created
        && let Some(m) = st.as_ref().map(Meta::from_stat)
    {
        sh.made_dirs.insert(Ident {
            dev: m.dev,
            ino: m.ino,
        });
    }
    let private = st.as_ref().is_some_and(stage::is_private_stat);
    // The parent's file system unless this is a mount point of the source.
    let src_sizes_true = match node.meta {
        Some(m) if m.dev == meta.dev => node.src_sizes_true,
        _ => sizes_are_true(&src),
    };
    node.hold();
    let child = Arc::new(DirNode {
        src,
        pending: AtomicUsize::new(1),
        meta: Some(meta),
        finalize: dest.finalize(sh),
        fresh: dest.created,
        mode_set: dest.mode_set,
        dst: dest.fd,
        parent: Some(node.clone()),
        src_display: path.to_path_buf(),
        dst_display: dst_path,
        rel: node.rel.join(name),
        cfr_ok: node.cfr_ok,
        src_sizes_true,
        tmpfile_ok: AtomicBool::new(node.tmpfile_ok.load(Ordering::Relaxed)),
        private,
        stage: LazyStage::default(),
    });
    sh.track_unfinished(&child);
    Some(child)
}
