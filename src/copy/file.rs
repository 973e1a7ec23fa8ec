//! One entry at a time: a regular file's data path (reflink, sparse-aware
//! copy_file_range or pread/pwrite), its temporary name and rename, metadata, fsync and
//! read-back verification; symlinks, FIFOs and devices; hard links (`-a`).

use std::ffi::{OsStr, OsString};
use std::num::NonZeroU64;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use super::EngineEvent;
use super::conflict::Decision;
use super::links::FirstName;
use super::nofollow::{self, Expect, Ident, NodeErr, Pinned};
use super::options::{LARGE_FILE, OverwritePolicy, ReflinkMode, SyncMode};
use super::rate::bwlimit_chunk;
use super::scan::node_error;
use super::shared::{
    DirNode, Entry, Meta, Shared, Stopped, TEMP_MARKER, ends_write, errmsg, is_zfs,
    permission_bits, timestamps,
};
use super::stage::TempDir;
use super::writeback::WriteBehind;
use crate::present::quote::quote;

/// Largest single copy_file_range call: small enough that progress moves every sampler
/// tick even on a 40 MB/s disk (2 MiB = 50 ms there) and a cancel is prompt.
const CFR_CHUNK: u64 = 2 << 20;
/// Largest single pwrite, whatever `--buffer-size` says: the kernel paces a writer inside
/// write() (balance_dirty_pages), so a bigger write holds the thread longer before the next
/// cancel check. 1 MiB is 25 ms at 40 MB/s; with other writers filling the page cache the
/// kernel pacing this one far below the disk's speed, a 4 MiB write sat 1.4–1.7 s in
/// balance_dirty_pages while a cancel waited (its kernel stack traced in the slow-disk cancel
/// test with a build running beside it).
const MAX_WRITE: usize = 1 << 20;
/// Chunk size under the test throttle, so a signal lands mid-file.
const THROTTLED_CHUNK: usize = 64 << 10;
/// How long one write may hold the thread in the kernel at the rate the destination takes
/// data: on a device slower than the caps above, chunks shrink to this much of its rate (the
/// kernel's dirty throttling pauses a writer inside write(), so the cancel check between
/// chunks comes that much sooner).
const CHUNK_SECS: f64 = 0.1;
/// Smallest adaptive chunk: below this the syscalls cost more than they save.
const MIN_CHUNK: usize = 256 << 10;

/// `.NAME.copyscope-tmp-XXXXXX`, with NAME cut so the whole stays within NAME_MAX (255).
pub fn temp_name(name: &OsStr, rnd: u32) -> OsString {
    let b = name.as_bytes();
    let keep = &b[..b.len().min(200)];
    let mut v = Vec::with_capacity(keep.len() + 24);
    v.push(b'.');
    v.extend_from_slice(keep);
    v.extend_from_slice(format!("{TEMP_MARKER}{:06x}", rnd & 0xff_ffff).as_bytes());
    OsString::from_vec(v)
}

/// How many "name (N).ext" a Rename tries before it gives up (EEXIST).
const MAX_RENAME: u32 = 10_000;

/// A temporary name, removed on drop unless renamed into place. It lives in `at`: the
/// destination directory when that is private, else its staging directory (`stage.rs`).
struct Temp<'a> {
    dir: &'a DirNode,
    at: TempDir,
    name: OsString,
    armed: bool,
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if self.armed {
            // unlinkat never follows: at worst it removes what someone put under our name.
            let _ = rfs::unlinkat(self.at.fd(self.dir), &self.name, AtFlags::empty());
        }
    }
}

impl Temp<'_> {
    fn at(&self) -> BorrowedFd<'_> {
        self.at.fd(self.dir)
    }

    fn rename(&self, final_name: &OsStr, id: Ident, noreplace: bool) -> Result<(), NodeErr> {
        let to = self.dir.dst.as_fd();
        nofollow::rename_checked(self.at(), &self.name, to, final_name, id, noreplace)
    }

    /// Renames into place if the temporary name still holds node `id` (see
    /// [`nofollow::rename_checked`]); `noreplace` when the final name was free.
    fn commit(mut self, final_name: &OsStr, id: Ident, noreplace: bool) -> Result<(), NodeErr> {
        let r = self.rename(final_name, id, noreplace);
        // On failure the temporary name is removed on drop, whatever holds it now (unlinkat
        // does not follow: at worst it removes what someone else put there).
        self.armed = r.is_err();
        r
    }

    /// "Rename": renames onto the first free `free_name(final_name, k)`. RENAME_NOREPLACE
    /// makes "free" and "taken" one atomic step: a name that appears meanwhile is skipped,
    /// never replaced. (On a file system without RENAME_NOREPLACE the name is checked with a
    /// no-follow stat just before the rename; only there a racing creation could be replaced.)
    fn commit_free(mut self, final_name: &OsStr, id: Ident) -> Result<OsString, NodeErr> {
        for k in 1..=MAX_RENAME {
            let name = super::conflict::free_name(final_name, k);
            match rfs::statat(&self.dir.dst, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Err(Errno::NOENT) => {}
                Ok(_) => continue,
                Err(e) => return Err(NodeErr::Io(e)),
            }
            match self.rename(&name, id, true) {
                Ok(()) => {
                    self.armed = false;
                    return Ok(name);
                }
                Err(NodeErr::Io(Errno::EXIST)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(NodeErr::Io(Errno::EXIST))
    }

    /// A cancelled copy's temporary: the name goes at once; the inode is let go by
    /// [`release_elsewhere`], so the process does not wait for the device to finish the
    /// writes already in flight for it.
    fn abandon(mut self, fd: OwnedFd) {
        let _ = rfs::unlinkat(self.at(), &self.name, AtFlags::empty());
        self.armed = false;
        release_elsewhere(fd);
    }

    /// Pins the node just made under this name (see [`nofollow::pin`]).
    fn pin(&self, kind: FileType, rdev: Option<u64>) -> Result<Pinned, NodeErr> {
        let want = Expect {
            kind,
            rdev,
            owner: nofollow::euid(),
        };
        nofollow::pin(self.at(), &self.name, &want)
    }
}

/// Closes the last descriptor of an unlinked, partly written temporary in a short-lived
/// child process instead of here. The last close of an unlinked file frees its pages, and
/// ext4 (any filesystem: `truncate_inode_pages`) first waits for every page already under
/// writeback to reach the device: with the copier's kernel stacks sampled on a 40 MB/s
/// disk, the copier sat 2.1 s in `folio_wait_writeback < truncate_inode_pages_range <
/// ext4_evict_inode` after a cancel while the user waited for the prompt. Waiting gains the
/// user nothing (those writes cannot be recalled; the name is already gone), so a `cat`
/// holding the descriptor (as its stderr; it writes nothing) outlives ours: it reads its
/// stdin, a pipe, until we close that after our descriptor, and its exit does the waiting.
/// It is reaped by init once copyscope has exited. Without data on the filesystem, or if
/// `cat` cannot be started, the descriptor is simply closed here.
pub(crate) fn release_elsewhere(fd: OwnedFd) {
    let _ = spawn_holder(fd);
}

/// [`release_elsewhere`] while other descriptors of the file stay open here (a worker held in
/// the kernel keeps its own until the process exits): the child's stdin pipe is left open, so
/// it holds the file until this process has exited. The exit drops every reference of ours
/// (close_files) before the pipe's release wakes the child (deferred to task work), so the
/// child's is the last and the wait for the pages under writeback is the child's, not ours.
pub(crate) fn release_after_exit(fd: OwnedFd) {
    if let Some(mut child) = spawn_holder(fd) {
        std::mem::forget(child.stdin.take());
    }
}

/// Starts the `cat` that holds `fd` (as its stderr) until its stdin, a pipe, is closed.
fn spawn_holder(fd: OwnedFd) -> Option<std::process::Child> {
    use std::process::{Command, Stdio};
    if !rfs::fstat(&fd).is_ok_and(|s| s.st_blocks > 0) {
        return None;
    }
    // By absolute path: a root copy does not run whatever `cat` its PATH finds first.
    let cat = ["/bin/cat", "/usr/bin/cat"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    // spawn drops our copy of the descriptor once the child holds its own; the child's stdin
    // closes when the returned `Child` (or its stdin) is dropped.
    Command::new(cat)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::from(fd))
        .spawn()
        .ok()
}

/// Makes a temporary object for `dir` with `make(at, name)`, retrying on a name clash.
/// `at` is where it goes: `dir` itself when private, else its staging directory.
fn with_temp<'a>(
    sh: &Shared,
    dir: &'a DirNode,
    name: &OsStr,
    mut make: impl FnMut(BorrowedFd<'_>, &OsStr) -> Result<(), Errno>,
) -> Result<Temp<'a>, NodeErr> {
    let at = dir.temp_dir(sh)?;
    let mut last = Errno::EXIST;
    for _ in 0..16 {
        let t = temp_name(name, rand::random::<u32>());
        match make(at.fd(dir), &t) {
            Ok(()) => {
                return Ok(Temp {
                    dir,
                    at,
                    name: t,
                    armed: true,
                });
            }
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(e) => return Err(NodeErr::Io(e)),
        }
    }
    Err(NodeErr::Io(last))
}

/// Where a regular file's data is written before it gets its name.
enum Staged<'a> {
    /// Under a temporary name, to be renamed into place if that name still holds this inode.
    Named(Temp<'a>, Ident),
    /// An unnamed inode (`O_TMPFILE`) in this directory, linked under its final name once
    /// complete. Nothing exists under any name until then: no temporary to clean up after a
    /// crash or kill, no name for anyone else to swap, and the link fails (EEXIST) rather than
    /// replace a name that appeared meanwhile.
    Unnamed(&'a DirNode),
}

impl Staged<'_> {
    /// A cancelled copy's file: the temporary name (if any) goes at once, the inode is let go
    /// by [`release_elsewhere`].
    fn abandon(self, fd: OwnedFd) {
        match self {
            Staged::Named(t, _) => t.abandon(fd),
            Staged::Unnamed(_) => release_elsewhere(fd),
        }
    }
}

/// Creates the file the data goes to, with the permission bits it will keep (the kernel
/// applies the umask), so the usual case needs no fchmod; `apply_file_meta` fixes the rest.
/// Unnamed when the final name was free and the file system links unnamed files cheaply
/// (the usual case); else under a temporary name with `O_EXCL|O_NOFOLLOW` (created by this
/// call or the call fails: it never opens a file or follows a symlink someone put there),
/// in the directory when it is private, else in its staging directory.
fn create_destination<'a>(
    sh: &Shared,
    e: &'a Entry,
    st: &Meta,
    t: &Target,
) -> Result<(Staged<'a>, OwnedFd), NodeErr> {
    let dir = &*e.parent;
    let mode = Mode::from_raw_mode(st.mode & 0o777);
    if t.existing.is_none() && !t.rename && dir.tmpfile_ok.load(Ordering::Relaxed) {
        let flags = OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC;
        match rfs::openat(&dir.dst, c".", flags, mode) {
            Ok(fd) => return Ok((Staged::Unnamed(dir), fd)),
            // No O_TMPFILE on this file system (or kernel: EISDIR): named temporaries.
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
                dir.tmpfile_ok.store(false, Ordering::Relaxed);
            }
            Err(err) => return Err(NodeErr::Io(err)),
        }
    }
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd: Option<OwnedFd> = None;
    let tmp = with_temp(sh, dir, &e.dst_name, |at, t| {
        fd = Some(rfs::openat(at, t, flags, mode)?);
        Ok(())
    })?;
    let fd = fd.ok_or(NodeErr::Io(Errno::INVAL))?;
    let id = nofollow::ident_of(&fd)?;
    Ok((Staged::Named(tmp, id), fd))
}

/// Gives a finished unnamed file its name: `linkat` never follows and never replaces (EEXIST
/// when the name was taken meanwhile). Through `AT_EMPTY_PATH` where allowed, else the
/// descriptor's /proc link (which the kernel resolves to the inode itself).
fn link_unnamed(sh: &Shared, dir: &DirNode, fd: &OwnedFd, name: &OsStr) -> Result<(), NodeErr> {
    if sh.flink_empty_path.load(Ordering::Relaxed) {
        match rfs::linkat(fd, c"", &dir.dst, name, AtFlags::EMPTY_PATH) {
            Err(Errno::NOENT | Errno::PERM) => sh.flink_empty_path.store(false, Ordering::Relaxed),
            r => return r.map_err(NodeErr::Io),
        }
    }
    link_via_proc(fd, &dir.dst, name).map_err(NodeErr::Io)
}

/// `linkat` of an open file through its /proc/self/fd link (no capability needed).
fn link_via_proc(fd: &OwnedFd, dir: &OwnedFd, name: &OsStr) -> Result<(), Errno> {
    let proc = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd));
    rfs::linkat(rfs::CWD, proc.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW)
}

enum DataErr {
    Stop,
    Read(Errno),
    Write(Errno),
    Clone(Errno),
}

impl From<Stopped> for DataErr {
    fn from(_: Stopped) -> Self {
        DataErr::Stop
    }
}

fn add_ns(counter: &std::sync::atomic::AtomicU64, since: Instant) {
    counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// Where an entry goes once the conflict policy allowed it.
struct Target {
    /// The existing destination it replaces (None: the name was free, or "Rename").
    existing: Option<Meta>,
    /// "Rename": keep the existing file, take the first free "name (N).ext".
    rename: bool,
}

/// Waits out a pause, then applies the conflict policy to `e`'s destination name. None
/// when the entry must not be written (cancelled, skipped or failed; already reported
/// through `sh`); else where it goes.
fn may_write(sh: &Shared, e: &Entry, path: &Path) -> Option<Target> {
    if sh.gate().is_err() {
        return None;
    }
    match sh.decide(&e.parent, &e.dst_name, path, &e.meta, e.clash) {
        Decision::Proceed(existing) => Some(Target {
            existing,
            rename: false,
        }),
        Decision::Rename => Some(Target {
            existing: None,
            rename: true,
        }),
        Decision::Skip(r) => {
            sh.skip(path, r);
            None
        }
        Decision::Fail(m) => {
            sh.fail(path, m);
            None
        }
        Decision::Stop => None,
    }
}

/// Renames a finished temporary into place: over the name (or onto it when it was free), or
/// for "Rename" onto the first free "name (N).ext", noted in the events.
fn place(
    sh: &Shared,
    path: &Path,
    tmp: Temp<'_>,
    e: &Entry,
    id: Ident,
    t: &Target,
) -> Result<(), NodeErr> {
    if !t.rename {
        return tmp.commit(&e.dst_name, id, t.existing.is_none());
    }
    let name = tmp.commit_free(&e.dst_name, id)?;
    sh.note(
        path,
        format!(
            "the destination existed and was kept; copied as {}",
            quote(&e.parent.dst_display.join(name))
        ),
    );
    Ok(())
}

/// Opens a source file for reading. Never blocks and never opens anything but a regular
/// file: the name may have been swapped for a FIFO or device since the scan (a hostile
/// user who can write into the source); `O_NONBLOCK` makes the open of a FIFO return at
/// once, and the type is checked on the descriptor before a byte is read.
fn open_source(sh: &Shared, e: &Entry, path: &Path) -> Option<(OwnedFd, Meta)> {
    let mut oflags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if !e.follow {
        oflags |= OFlags::NOFOLLOW;
    }
    let src = match rfs::openat(&e.parent.src, &e.src_name, oflags, Mode::empty()) {
        Ok(f) => f,
        Err(Errno::NOENT) => {
            sh.fail(path, "vanished before it could be copied".into());
            return None;
        }
        // O_NOFOLLOW met a symlink where the scan saw a regular file: say that, not ELOOP's
        // "Too many levels of symbolic links".
        Err(Errno::LOOP) if !e.follow => {
            sh.fail(
                path,
                "was replaced by a symlink after it was found; the symlink was not followed".into(),
            );
            return None;
        }
        Err(err) => {
            let m = format!("cannot open {} for reading: {}", quote(path), errmsg(err));
            sh.fail(path, m);
            return None;
        }
    };
    let st = match rfs::fstat(&src) {
        Ok(s) => Meta::from_stat(&s),
        Err(err) => {
            sh.fail(
                path,
                format!("cannot fstat {}: {}", quote(path), errmsg(err)),
            );
            return None;
        }
    };
    if st.file_type() != FileType::RegularFile {
        sh.fail(
            path,
            "was replaced by something that is not a regular file while it was copied; not read"
                .into(),
        );
        return None;
    }
    Some((src, st))
}

/// Copies one regular file: conflict policy, temp file, data, metadata, optional fsync and
/// verify, rename. Errors are reported through `sh` (per file, or fatal for the destination).
#[expect(
    clippy::too_many_lines,
    reason = "one file's copy in its order (conflict, temporary, data, metadata, fsync, verify, link): each step's outcome decides what the next may do; the steps are functions already"
)]
pub(crate) fn copy_regular(sh: &Shared, e: &Entry, buf: &mut [u8]) {
    let path = e.src_display();
    let Some(target) = may_write(sh, e, &path) else {
        return;
    };
    let existing = target.existing;
    let Some((src, st)) = open_source(sh, e, &path) else {
        return;
    };
    if e.meta_later {
        sh.walked_bytes.fetch_add(st.data_size(), Ordering::Relaxed);
    }
    if sh.await_space_check(st.size).is_err() {
        return;
    }
    let rel = e.rel();
    let _ = sh.events.send(EngineEvent::FileStarted {
        path: path.clone(),
        size: st.size,
    });
    sh.set_current(&rel, st.size);
    if st.size >= 1 << 20 {
        let _ = rfs::fadvise(&src, 0, None, rfs::Advice::Sequential);
    }

    let (tmp, dst) = match create_destination(sh, e, &st, &target) {
        Ok((tmp, fd)) => (tmp, Arc::new(fd)),
        Err(err) => return node_error(sh, &path, "cannot create the destination file", err),
    };
    let temp = match &tmp {
        Staged::Named(t, _) => Some((&t.at, t.name.as_os_str())),
        Staged::Unnamed(_) => None,
    };
    let flight = sh.in_flight.stage(&e.parent, temp, &dst);

    let lane = (st.size >= LARGE_FILE).then(|| sh.big_lane.lock());
    // An empty file on a file system whose sizes are true has nothing to read: one system
    // call fewer per empty file (a file that grew meanwhile fails the check below).
    let res = if st.size == 0 && e.parent.src_sizes_true {
        Ok(0)
    } else {
        copy_contents(sh, &src, &dst, &st, &rel, e.parent.cfr_ok, buf)
    };
    drop(lane);
    let written = match res {
        Ok(n) => n,
        Err(DataErr::Stop) => {
            drop(flight);
            return match Arc::try_unwrap(dst) {
                Ok(fd) => tmp.abandon(fd),
                // A cancel's abandon holds it for the moment and hands it away itself.
                Err(_) => drop(tmp),
            };
        }
        Err(DataErr::Read(err)) => {
            return sh.fail(
                &path,
                format!("error reading {}: {}", quote(&path), errmsg(err)),
            );
        }
        Err(DataErr::Write(err)) => return sh.dest_error(&path, "write error", err),
        Err(DataErr::Clone(err)) => {
            return sh.fail(
                &path,
                format!("cannot share blocks (--reflink=always): {}", errmsg(err)),
            );
        }
    };
    // One fstat after the data serves both checks: changed while copied, and deleted.
    let now = match rfs::fstat(&src) {
        Ok(s) => Meta::from_stat(&s),
        Err(err) => {
            return sh.fail(
                &path,
                format!("changed while it was copied (cannot stat it again: {}); not kept, copy it again", errmsg(err)),
            );
        }
    };
    if let Some(why) = source_changed(&now, &st, written) {
        // The temporary goes with `tmp`: a copy that matches neither the old nor the new
        // source never gets the real name.
        return sh.fail(
            &path,
            format!("changed while it was copied ({why}); not kept, copy it again"),
        );
    }

    if let Err(m) = apply_file_meta(sh, &path, &dst, &st, existing.as_ref()) {
        return sh.fail(&path, m);
    }
    // After the data and chown, which clear security.capability.
    let kept = if sh.opts.xattrs {
        super::xattr::copy(&src, &dst)
    } else if sh.opts.preserve_mode_time {
        super::xattr::copy_acls(&src, &dst, false)
    } else {
        None
    };
    if let Some(m) = kept {
        sh.note(&path, m);
    }
    if sh.opts.sync == SyncMode::PerFile || sh.opts.verify {
        let t = Instant::now();
        let r = rfs::fsync(&dst);
        add_ns(&sh.progress.write_ns, t);
        if let Err(err) = r {
            return sh.dest_error(&path, "fsync failed", err);
        }
    }
    if sh.opts.verify {
        match verify(sh, &src, &dst, buf) {
            Ok(true) => {
                sh.outcomes.verified.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {
                sh.outcomes.mismatches.fetch_add(1, Ordering::Relaxed);
                return sh.fail(&path, "verify: the copy read back from the device differs from the source; it was not kept".into());
            }
            Err(DataErr::Stop) => return,
            Err(DataErr::Read(err) | DataErr::Clone(err)) => {
                return sh.fail(&path, format!("verify: cannot read back: {}", errmsg(err)));
            }
            Err(DataErr::Write(err)) => return sh.dest_error(&path, "verify", err),
        }
    }
    // Never after a cancel gave the in-flight files up (their names are gone, their
    // descriptors handed away): a file put in place then would outlive the cancel.
    let placed = sh.in_flight.place(flight, || match tmp {
        Staged::Named(tmp, id) => place(sh, &path, tmp, e, id, &target).map(|()| Some(id)),
        Staged::Unnamed(dir) => link_unnamed(sh, dir, &dst, &e.dst_name).map(|()| None),
    });
    let id = match placed {
        None => return,
        Some(Ok(id)) => id,
        Some(Err(err)) => {
            return node_error(sh, &path, "cannot put the finished file in place", err);
        }
    };
    if let Some(made) = &e.made {
        let ino = id
            .map(|i| i.ino)
            .or_else(|| nofollow::ident_of(&dst).ok().map(|i| i.ino));
        if let Some(ino) = ino {
            let _ = made.set(ino);
        }
    }
    if now.nlink == 0 && st.nlink > 0 {
        sh.changed(
            &path,
            "was deleted while it was copied; the copy holds the data as it was read".into(),
        );
    }
    sh.done(path, written);
}

/// Why the source no longer matches what was copied: its size, modification time or
/// change time moved since it was opened (a rewrite at the same size with its mtime put
/// back still moves the ctime, which no user can set), or fewer bytes than its size could
/// be read. A file whose size says 0 (/proc, /sys pseudo-files) is read to its end and
/// kept with what was read, as cp does.
fn source_changed(now: &Meta, before: &Meta, written: u64) -> Option<String> {
    if now.size != before.size {
        let how = if now.size > before.size {
            "grew"
        } else {
            "shrank"
        };
        return Some(format!("{how} from {} to {} bytes", before.size, now.size));
    }
    if now.mtime != before.mtime || now.ctime != before.ctime {
        return Some("modified".into());
    }
    if written != before.size && before.size > 0 {
        return Some(format!(
            "{written} of {} bytes could be read before the end of the file",
            before.size
        ));
    }
    None
}

/// Mode, times and (with `-p`) ownership onto the temporary file before the rename.
/// Without preserved metadata, a file that replaces an existing one keeps that file's
/// mode (cp writes into the existing file, so its mode stays) and a new one gets
/// 0666 minus the umask (cp `--no-preserve=mode`); without -p it keeps its owner.
fn apply_file_meta(
    sh: &Shared,
    path: &Path,
    dst: &OwnedFd,
    st: &Meta,
    existing: Option<&Meta>,
) -> Result<(), String> {
    // Without -p, a file that replaces an existing one keeps that file's owner, as cp's
    // in-place write does (a root copy onto a user's file must not make it root's); only
    // root can give a file away.
    let owner = if sh.opts.preserve_owner {
        Some((st.uid, st.gid))
    } else {
        existing
            .filter(|x| x.file_type() == FileType::RegularFile && sh.is_root)
            .map(|x| (x.uid, x.gid))
    };
    let mut owner_kept = false;
    if let Some((uid, gid)) = owner {
        let (uid, gid) = (Some(rfs::Uid::from_raw(uid)), Some(rfs::Gid::from_raw(gid)));
        match rfs::fchown(dst, uid, gid) {
            Ok(()) => owner_kept = sh.opts.preserve_owner,
            Err(Errno::PERM) if sh.opts.preserve_owner => sh.owner_unkept(path),
            Err(Errno::PERM) => {}
            Err(e) => return Err(format!("cannot preserve ownership: {}", errmsg(e))),
        }
    }
    let created = st.mode & 0o777 & !sh.umask;
    let mode = if sh.opts.preserve_mode_time {
        permission_bits(st.mode, owner_kept, false)
    } else {
        match existing {
            Some(x) if x.file_type() == FileType::RegularFile => x.mode & 0o777,
            _ => 0o666 & !sh.umask,
        }
    };
    // fchown clears set-id bits, so after it the mode is always set.
    if mode != created || owner.is_some() {
        rfs::fchmod(dst, Mode::from_raw_mode(mode))
            .map_err(|e| format!("cannot set the mode: {}", errmsg(e)))?;
    }
    if sh.opts.preserve_mode_time {
        rfs::futimens(dst, &timestamps(st))
            .map_err(|e| format!("cannot set the times: {}", errmsg(e)))?;
    }
    Ok(())
}

/// The data: a clone when asked, else holes skipped (SEEK_DATA/SEEK_HOLE) and data copied.
/// Returns the logical size of the copy.
fn copy_contents(
    sh: &Shared,
    src: &OwnedFd,
    dst: &OwnedFd,
    st: &Meta,
    rel: &Path,
    cfr_ok: bool,
    buf: &mut [u8],
) -> Result<u64, DataErr> {
    if sh.opts.reflink != ReflinkMode::Never {
        match rfs::ioctl_ficlone(dst, src) {
            Ok(()) => {
                sh.outcomes.cloned.fetch_add(st.size, Ordering::Relaxed);
                sh.add_bytes(rel, st.size, st.size, st.size);
                return Ok(st.size);
            }
            Err(e) if sh.opts.reflink == ReflinkMode::Always => return Err(DataErr::Clone(e)),
            Err(_) => {}
        }
    }
    let mut cx = RangeCopy {
        sh,
        src,
        dst,
        rel,
        size: st.size,
        use_cfr: cfr_ok && sh.opts.copy_file_range && !sh.opts.paced(),
        buf,
        // A large file of a copy that ends with a flush: the disk starts while the copy goes.
        // Not on ZFS, whose writes bypass the page cache: there sync_file_range has nothing to
        // start, and the child would be spawned for nothing (scripts/zfs-early-writeback.sh).
        behind: WriteBehind::new(
            0,
            (sh.opts.sync != SyncMode::None || sh.opts.pace_auto)
                && st.size >= LARGE_FILE
                && !is_zfs(dst),
        )
        .paced(sh.opts.pace_auto),
        rate: 0.0,
    };
    if !st.is_sparse() {
        // Up to the size it had when opened: the read that would return 0 at the end is one
        // syscall per file, and a file that grew is refused anyway (the fstat after the copy).
        // A size of 0 may be a lie (/proc, /sys): read those to the end.
        return cx.copy(0, (st.size > 0).then_some(st.size));
    }
    let mut pos = 0u64;
    loop {
        let data = match rfs::seek(src, SeekFrom::Data(pos)) {
            Ok(d) => d,
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL | Errno::OPNOTSUPP) if pos == 0 => return cx.copy(0, None),
            Err(e) => return Err(DataErr::Read(e)),
        };
        let hole = rfs::seek(src, SeekFrom::Hole(data)).map_err(DataErr::Read)?;
        cx.copy(data, Some(hole))?;
        pos = hole;
    }
    let now = rfs::fstat(src)
        .map(|s| Meta::from_stat(&s).size)
        .map_err(DataErr::Read)?;
    let end = now.max(pos);
    rfs::ftruncate(dst, end).map_err(DataErr::Write)?;
    Ok(end)
}

struct RangeCopy<'a> {
    sh: &'a Shared,
    src: &'a OwnedFd,
    dst: &'a OwnedFd,
    rel: &'a Path,
    size: u64,
    use_cfr: bool,
    buf: &'a mut [u8],
    behind: WriteBehind,
    /// Bytes per second the destination took in the recent writes (moving average; 0 until
    /// the first write), measured inside the write syscalls.
    rate: f64,
}

impl RangeCopy<'_> {
    /// Copies [start, end) (to EOF when `end` is None, so a growing file is copied whole)
    /// at the same offsets, one bounded [`RangeCopy::chunk`] at a time; between chunks: the
    /// pause/cancel gate, progress, write-behind on a nearly full destination, and pacing.
    fn copy(&mut self, start: u64, end: Option<u64>) -> Result<u64, DataErr> {
        let sh = self.sh;
        let mut off = start;
        loop {
            sh.gate()?;
            let want = match end {
                Some(e) if off >= e => break,
                Some(e) => e - off,
                None => u64::MAX,
            };
            let Some(n) = self.chunk(off, want)? else {
                break;
            };
            off += n;
            sh.add_bytes(self.rel, n, off, self.size);
            self.behind.after_write(sh, self.dst, off)?;
            sh.throttle(n);
        }
        Ok(off)
    }

    /// One transfer of at most `want` bytes at `off`, bounded so that a single syscall cannot
    /// hold the thread in the kernel for long (cancel is checked between chunks). Returns the
    /// bytes moved, or None at the source's end. copy_file_range time counts as write time:
    /// it is a destination-side syscall and the read happens inside it.
    fn chunk(&mut self, off: u64, want: u64) -> Result<Option<u64>, DataErr> {
        let sh = self.sh;
        loop {
            if self.use_cfr {
                let (mut in_off, mut out_off) = (off, off);
                let len = want.min(self.cap(CFR_CHUNK as usize) as u64) as usize;
                let t = Instant::now();
                sh.progress.in_write.store(len as u64, Ordering::Relaxed);
                let r = rfs::copy_file_range(
                    self.src,
                    Some(&mut in_off),
                    self.dst,
                    Some(&mut out_off),
                    len,
                );
                sh.progress.in_write.store(0, Ordering::Relaxed);
                add_ns(&sh.progress.write_ns, t);
                return match r {
                    Ok(0) => Ok(None),
                    Ok(n) => {
                        self.measure(n, t);
                        Ok(Some(n as u64))
                    }
                    Err(Errno::INTR | Errno::AGAIN) => continue,
                    Err(
                        Errno::XDEV | Errno::INVAL | Errno::OPNOTSUPP | Errno::NOSYS | Errno::BADF,
                    ) => {
                        // Not supported between these two files: fall back at the same offset.
                        self.use_cfr = false;
                        continue;
                    }
                    Err(e) if ends_write(e) => Err(DataErr::Write(e)),
                    Err(e) => Err(DataErr::Read(e)),
                };
            }
            let max = match (sh.opts.bwlimit_bps, sh.opts.paced()) {
                (Some(bps), _) if bps > 0 => bwlimit_chunk(bps).min(THROTTLED_CHUNK),
                // `--pace auto` holds a rate near the destination's: whole 1 MiB writes (50 ms
                // at 20 MB/s) keep the pace's own cost down; small ones cost a syscall and a
                // sleep each, which a starved CPU could not keep up with.
                (None, _) if sh.opts.pace_auto && sh.opts.throttle_bps.is_none() => MAX_WRITE,
                (_, true) => THROTTLED_CHUNK,
                _ => MAX_WRITE,
            };
            let len = want.min(self.cap(max.min(self.buf.len())) as u64) as usize;
            let t = Instant::now();
            let r = rustix::io::pread(self.src, &mut self.buf[..len], off);
            add_ns(&sh.progress.read_ns, t);
            let n = match r {
                Ok(0) => return Ok(None),
                Ok(n) => n,
                Err(Errno::INTR | Errno::AGAIN) => continue,
                Err(e) => return Err(DataErr::Read(e)),
            };
            let t = Instant::now();
            sh.progress.in_write.store(n as u64, Ordering::Relaxed);
            let r = write_all_at(self.dst, &self.buf[..n], off);
            sh.progress.in_write.store(0, Ordering::Relaxed);
            add_ns(&sh.progress.write_ns, t);
            if r.is_ok() {
                self.measure(n, t);
            }
            return r.map(|()| Some(n as u64)).map_err(DataErr::Write);
        }
    }

    /// The chunk for the next write: `max`, or less when the destination is taking data so
    /// slowly that `max` would hold the thread in the kernel for more than [`CHUNK_SECS`].
    fn cap(&self, max: usize) -> usize {
        if self.rate <= 0.0 {
            return max;
        }
        let fit = (self.rate * CHUNK_SECS) as usize;
        fit.clamp(MIN_CHUNK.min(max), max)
    }

    /// Folds one write of `n` bytes that started at `since` into the rate: a slower write
    /// brings it down at once, a faster one at most doubles it. Writes into an emptied page
    /// cache (after a pause, a stop, or the kernel catching up) are fast until the throttle
    /// bites again; trusting them at once sized the next writes for the cache, not the disk.
    fn measure(&mut self, n: usize, since: Instant) {
        let secs = since.elapsed().as_secs_f64().max(1e-6);
        let r = n as f64 / secs;
        self.rate = if self.rate <= 0.0 || r < self.rate {
            r
        } else {
            r.min(2.0 * self.rate)
        };
    }
}

fn write_all_at(dst: &OwnedFd, data: &[u8], off: u64) -> Result<(), Errno> {
    let mut w = 0;
    while w < data.len() {
        match rustix::io::pwrite(dst, &data[w..], off + w as u64) {
            Ok(0) => return Err(Errno::IO),
            Ok(k) => w += k,
            Err(Errno::INTR | Errno::AGAIN) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Hashes the source and the fsynced copy after dropping the copy's cached pages, so the
/// copy is read from the device rather than the page cache.
fn verify(sh: &Shared, src: &OwnedFd, dst: &OwnedFd, buf: &mut [u8]) -> Result<bool, DataErr> {
    if is_zfs(dst) {
        sh.verify_on_zfs.store(true, Ordering::Relaxed);
    }
    let _ = rfs::fadvise(dst, 0, None::<NonZeroU64>, rfs::Advice::DontNeed);
    let a = hash_fd(sh, src, buf, None).map_err(DataErr::Read)?;
    let b = hash_fd(sh, dst, buf, Some(&sh.progress.bytes_verified)).map_err(DataErr::Read)?;
    sh.gate()?;
    Ok(a == b)
}

/// BLAKE3 of a whole file; `counted` (the copy's read-back) moves the verify progress.
fn hash_fd(
    sh: &Shared,
    fd: &OwnedFd,
    buf: &mut [u8],
    counted: Option<&std::sync::atomic::AtomicU64>,
) -> Result<blake3::Hash, Errno> {
    let mut h = blake3::Hasher::new();
    let mut off = 0u64;
    loop {
        if sh.is_stopped() {
            return Err(Errno::CANCELED);
        }
        match rustix::io::pread(fd, &mut *buf, off) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                off += n as u64;
                if let Some(c) = counted {
                    c.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(h.finalize())
}

/// Symlinks, FIFOs (mkfifo: never opened), device nodes (root only); sockets are skipped.
/// The node is made under a temporary name, pinned (checked to be the node made, held by
/// an `O_PATH` descriptor), given its owner, mode and times through that descriptor, and
/// renamed into place only if the temporary name still holds it.
pub(crate) fn copy_special(sh: &Shared, e: &Entry) {
    let path = e.src_display();
    let ft = e.meta.file_type();
    match ft {
        FileType::Socket => {
            return sh.skip(
                &path,
                "socket skipped: a socket cannot be copied (its server makes a new one)".into(),
            );
        }
        FileType::CharacterDevice | FileType::BlockDevice if !sh.is_root => {
            return sh.skip(
                &path,
                "device node skipped: recreating devices needs root".into(),
            );
        }
        _ => {}
    }
    let Some(placing) = may_write(sh, e, &path) else {
        return;
    };
    let existing = placing.existing;
    let dir = &e.parent;
    let target = if ft == FileType::Symlink {
        match rfs::readlinkat(&dir.src, &e.src_name, Vec::new()) {
            Ok(t) => Some(t),
            Err(err) => return sh.fail(&path, format!("cannot read the symlink: {}", errmsg(err))),
        }
    } else {
        None
    };
    let mode = special_mode(sh, &e.meta, existing.as_ref());
    let rdev =
        matches!(ft, FileType::CharacterDevice | FileType::BlockDevice).then_some(e.meta.rdev);
    let tmp = with_temp(sh, dir, &e.dst_name, |at, t| match ft {
        FileType::Symlink => rfs::symlinkat(target.as_deref().unwrap_or(c""), at, t),
        _ => rfs::mknodat(at, t, ft, Mode::from_raw_mode(mode), rdev.unwrap_or(0) as _),
    });
    let tmp = match tmp {
        Ok(t) => t,
        Err(err) => return node_error(sh, &path, "cannot create", err),
    };
    let node = match tmp.pin(ft, rdev) {
        Ok(n) => n,
        Err(err) => return node_error(sh, &path, "cannot create", err),
    };
    if let Err(m) = apply_special_meta(sh, &path, &e.meta, &node, mode) {
        return sh.fail(&path, m);
    }
    if let Err(err) = place(sh, &path, tmp, e, node.id, &placing) {
        return node_error(sh, &path, "cannot rename into place", err);
    }
    sh.done(path, 0);
}

/// The permission bits a FIFO or device node is made with (symlinks have none); set-id
/// bits come back in `apply_special_meta` only with the owner.
fn special_mode(sh: &Shared, m: &Meta, existing: Option<&Meta>) -> u32 {
    if sh.opts.preserve_mode_time {
        return permission_bits(m.mode, false, false);
    }
    match existing {
        Some(x) if x.file_type() == m.file_type() => x.mode & 0o777,
        _ => 0o666 & !sh.umask,
    }
}

/// Owner (with `-p`), mode and times of a pinned special node, through its descriptor.
/// The source's set-id bits only when its owner was kept.
fn apply_special_meta(
    sh: &Shared,
    path: &Path,
    m: &Meta,
    node: &Pinned,
    mode: u32,
) -> Result<(), String> {
    let mut owner_kept = false;
    if sh.opts.preserve_owner {
        match node.chown(m.uid, m.gid) {
            Ok(()) => owner_kept = true,
            Err(Errno::PERM) => sh.owner_unkept(path),
            Err(err) => return Err(format!("cannot preserve ownership: {}", errmsg(err))),
        }
    }
    let mode = if owner_kept && sh.opts.preserve_mode_time {
        permission_bits(m.mode, true, false)
    } else {
        mode
    };
    // mknodat applied the umask; chown cleared set-id bits.
    if m.file_type() != FileType::Symlink
        && let Err(err) = node.chmod(mode)
    {
        return Err(format!("cannot set the mode: {}", errmsg(err)));
    }
    if sh.opts.preserve_mode_time
        && let Err(err) = node.set_times(&timestamps(m))
    {
        return Err(format!("cannot set the times: {}", errmsg(err)));
    }
    Ok(())
}

/// A second name of a hard-linked file (`-a`): linked to the first copy (checked to be
/// that copy's inode, not whatever its name holds now); copied on its own if the first
/// copy does not exist (it failed or was skipped).
pub(crate) fn make_link(sh: &Shared, e: &Entry, first: &FirstName) {
    // cp -u keeps a hard-link group whole: the group's first name decided (copied, or kept as
    // not newer), and every later name becomes a link to it, replacing what is there (coreutils
    // copy.c: "we currently replace DST_NAME unconditionally, even if it was a newer separate file").
    let update = sh.opts.overwrite == OverwritePolicy::Update || sh.opts.only_newer;
    let kept = || {
        rfs::statat(&first.dir.dst, &first.name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| Meta::from_stat(&st))
            .filter(|m| m.file_type() == FileType::RegularFile)
            .map(|m| m.ino)
    };
    let Some(ino) = first
        .made
        .get()
        .copied()
        .or_else(|| update.then(kept).flatten())
    else {
        let mut buf = vec![0u8; sh.opts.buffer_size.max(4096)];
        return copy_regular(sh, e, &mut buf);
    };
    let path = e.src_display();
    let target = if update {
        Target {
            existing: rfs::statat(&e.parent.dst, &e.dst_name, AtFlags::SYMLINK_NOFOLLOW)
                .ok()
                .map(|st| Meta::from_stat(&st)),
            rename: false,
        }
    } else {
        match may_write(sh, e, &path) {
            Some(x) => x,
            None => return,
        }
    };
    let dir = &e.parent;
    let tmp = with_temp(sh, dir, &e.dst_name, |at, t| {
        rfs::linkat(&first.dir.dst, &first.name, at, t, AtFlags::empty())
    });
    let tmp = match tmp {
        Ok(t) => t,
        Err(err) => return node_error(sh, &path, "cannot make the hard link", err),
    };
    let id = match rfs::statat(tmp.at(), &tmp.name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Meta::from_stat(&st),
        Err(err) => return sh.dest_error(&path, "cannot make the hard link", err),
    };
    if id.ino != ino || id.file_type() != FileType::RegularFile {
        return sh.fail(
            &path,
            format!(
                "cannot make the hard link: '{}' no longer holds the copy made by this run",
                first.dir.dst_display.join(&first.name).display()
            ),
        );
    }
    let id = Ident {
        dev: id.dev,
        ino: id.ino,
    };
    match place(sh, &path, tmp, e, id, &target) {
        Ok(()) => sh.done(path, 0),
        Err(err) => node_error(sh, &path, "cannot rename into place", err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unprivileged way to name an `O_TMPFILE` file: the whole file appears at once under
    /// the name, and an existing name is never replaced.
    #[test]
    fn an_unnamed_file_is_linked_through_proc_and_never_replaces() {
        let t = tempfile::tempdir().unwrap();
        let dir = rfs::open(t.path(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let flags = OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC;
        let Ok(fd) = rfs::openat(&dir, c".", flags, Mode::from_raw_mode(0o644)) else {
            return eprintln!("skipped: no O_TMPFILE on the temporary directory's file system");
        };
        rustix::io::write(&fd, b"whole").unwrap();
        assert!(std::fs::read_dir(t.path()).unwrap().next().is_none());
        link_via_proc(&fd, &dir, OsStr::new("f")).unwrap();
        assert_eq!(std::fs::read(t.path().join("f")).unwrap(), b"whole");
        std::fs::write(t.path().join("g"), b"old").unwrap();
        assert_eq!(link_via_proc(&fd, &dir, OsStr::new("g")), Err(Errno::EXIST));
        assert_eq!(std::fs::read(t.path().join("g")).unwrap(), b"old");
    }

    #[test]
    fn temp_names_fit_name_max_and_are_recognisable() {
        let long = OsString::from_vec(vec![b'x'; 255]);
        let t = temp_name(&long, 0xabcdef);
        assert!(t.len() <= 255, "{}", t.len());
        let s = t.to_string_lossy();
        assert!(s.starts_with(".xxx"));
        assert!(s.ends_with(".copyscope-tmp-abcdef"), "{s}");
        let t = temp_name(OsStr::new("a.txt"), 1);
        assert_eq!(t, OsString::from(".a.txt.copyscope-tmp-000001"));
        let nonutf = OsString::from_vec(vec![0xff, 0xfe, b'a']);
        assert!(
            temp_name(&nonutf, 2)
                .as_bytes()
                .starts_with(&[b'.', 0xff, 0xfe, b'a'])
        );
    }
}
