//! The destination files being written, for a cancel that cannot wait for their workers:
//! each worker registers its file while it writes it, puts it in place through the registry,
//! and a confirmed cancel abandons them all at once, so no partial file is left under a name.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rustix::fs as rfs;

use super::shared::{DirNode, lock};
use super::stage::TempDir;

/// A destination file being written: its worker's descriptor (shared, so the registry can
/// hand a dup of it away whatever its worker does, without a dup per file) and its temporary
/// name, if it has one (an `O_TMPFILE` file has none).
pub(crate) struct Staging {
    pub(crate) dir: Arc<DirNode>,
    /// The temporary's name in `at` (None: unnamed).
    pub(crate) name: Option<OsString>,
    pub(crate) at: Option<TempDir>,
    pub(crate) fd: Arc<OwnedFd>,
}

/// A worker's entry in [`InFlightFiles`], removed when dropped (the file was put in
/// place, or given up by its worker).
pub(crate) struct InFlight<'a> {
    reg: &'a InFlightFiles,
    pub(crate) id: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut reg = lock(&self.reg.list);
        if let Some(i) = reg.iter().position(|(id, _)| *id == self.id) {
            reg.swap_remove(i);
        }
    }
}

/// The registry: at most one file per worker, a short list, locked only to add or remove one
/// (never across a syscall).
#[derive(Default)]
pub(crate) struct InFlightFiles {
    list: Mutex<Vec<(u64, Staging)>>,
    next: AtomicU64,
    /// Held shared while a finished file is put in place, exclusively by the abandon: the two
    /// exclude each other without the workers' places waiting on one another.
    placing: RwLock<()>,
    /// Set by [`InFlightFiles::abandon`]: no file may be put in place after it.
    abandoned: AtomicBool,
}

impl InFlightFiles {
    /// Registers a destination file being written (see [`Staging`]).
    pub(crate) fn stage(
        &self,
        dir: &Arc<DirNode>,
        temp: Option<(&TempDir, &OsStr)>,
        fd: &Arc<OwnedFd>,
    ) -> InFlight<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let staging = Staging {
            dir: dir.clone(),
            name: temp.map(|(_, n)| n.to_os_string()),
            at: temp.map(|(at, _)| at.clone()),
            fd: fd.clone(),
        };
        lock(&self.list).push((id, staging));
        InFlight { reg: self, id }
    }

    /// Runs `place` (the rename or link that gives a finished file its name) unless a cancel
    /// has abandoned the in-flight files; the two exclude each other through `placing`. None
    /// when the file was abandoned.
    pub(crate) fn place<R>(&self, f: InFlight, place: impl FnOnce() -> R) -> Option<R> {
        let _shared = self.placing.read().unwrap_or_else(|e| e.into_inner());
        if self.abandoned.load(Ordering::SeqCst) {
            return None;
        }
        let r = place();
        drop(f);
        Some(r)
    }

    /// A confirmed cancel whose workers are still held in the kernel (a write inside
    /// balance_dirty_pages sleeps until it is done, and only SIGKILL ends that sleep): every
    /// in-flight file loses its temporary name at once and a dup of its descriptor goes to
    /// `release_after_exit`, so the process can exit (killing the held threads) without a
    /// partial file left under any name and without waiting for the pages under writeback.
    /// Nothing is put in place after this.
    pub(crate) fn abandon(&self) {
        let _exclusive = self.placing.write().unwrap_or_else(|e| e.into_inner());
        self.abandoned.store(true, Ordering::SeqCst);
        let staged: Vec<Staging> = lock(&self.list).drain(..).map(|(_, s)| s).collect();
        for s in staged {
            if let (Some(name), Some(at)) = (&s.name, &s.at) {
                // unlinkat never follows: at worst it removes what someone put under our name.
                let _ = rfs::unlinkat(at.fd(&s.dir), name, rfs::AtFlags::empty());
            }
            if let Ok(dup) = s.fd.try_clone() {
                super::file::release_after_exit(dup);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rustix::fs::Mode;

    use super::*;

    fn temp_file(d: &DirNode, name: &str) -> OwnedFd {
        let flags = rfs::OFlags::RDWR | rfs::OFlags::CREATE | rfs::OFlags::EXCL;
        let fd = rfs::openat(&d.dst, name, flags, Mode::from_raw_mode(0o600)).unwrap();
        rustix::io::write(&fd, &[7u8; 65536]).unwrap();
        fd
    }

    #[test]
    fn an_abandoned_file_loses_its_temporary_name_and_is_never_placed() {
        let t = tempfile::tempdir().unwrap();
        let reg = InFlightFiles::default();
        let d = DirNode::open_for_test(t.path());
        let name = ".a.copyscope-tmp-000001";
        let fd = Arc::new(temp_file(&d, name));
        let flight = reg.stage(&d, Some((&TempDir::Here, OsStr::new(name))), &fd);
        reg.abandon();
        assert!(
            !t.path().join(name).exists(),
            "the temporary name is removed"
        );
        assert!(lock(&reg.list).is_empty());
        let placed = reg.place(flight, || panic!("placed after the abandon"));
        assert!(placed.is_none());
        // The worker's own descriptor still works: a held write that returns writes nowhere
        // visible, and its close is not the last (the holder has one).
        rustix::io::write(&*fd, b"late").unwrap();
    }

    #[test]
    fn a_placed_file_leaves_the_registry_and_is_not_abandoned() {
        let t = tempfile::tempdir().unwrap();
        let reg = InFlightFiles::default();
        let d = DirNode::open_for_test(t.path());
        let name = ".b.copyscope-tmp-000002";
        let fd = Arc::new(temp_file(&d, name));
        let flight = reg.stage(&d, Some((&TempDir::Here, OsStr::new(name))), &fd);
        let placed = reg.place(flight, || {
            rfs::renameat(&d.dst, name, &d.dst, "b").map(|()| 1)
        });
        assert_eq!(placed.map(Result::unwrap), Some(1));
        assert!(lock(&reg.list).is_empty());
        reg.abandon();
        assert!(t.path().join("b").exists(), "a placed file stays");
    }

    #[test]
    fn a_worker_that_gives_up_on_its_own_leaves_the_registry() {
        let t = tempfile::tempdir().unwrap();
        let reg = InFlightFiles::default();
        let d = DirNode::open_for_test(t.path());
        let fd = Arc::new(temp_file(&d, "c"));
        let flight = reg.stage(&d, None, &fd);
        assert_eq!(lock(&reg.list).len(), 1);
        drop(flight);
        assert!(lock(&reg.list).is_empty());
    }
}
