//! Hard links kept with `-a`: the first name of a linked inode is copied, every later name
//! waits here and is linked to that copy once the files are done.

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::{Arc, Mutex, OnceLock};

use super::shared::{DirNode, Entry, lock};

/// A hard link to make once its first name has been copied (`-a`).
pub(crate) struct LinkItem {
    pub(crate) entry: Entry,
    pub(crate) first: FirstName,
}

/// Where the first name of a hard-linked file went, and the inode of its copy.
#[derive(Clone)]
pub(crate) struct FirstName {
    pub dir: Arc<DirNode>,
    pub name: OsString,
    pub made: Arc<OnceLock<u64>>,
}

/// The inodes met with several names, and the names to link.
#[derive(Default)]
pub(crate) struct HardLinks {
    /// By source (dev, inode): where its first name went.
    first_names: Mutex<HashMap<(u64, u64), FirstName>>,
    later: Mutex<Vec<LinkItem>>,
}

impl HardLinks {
    /// A regular file with several names: the first one met is returned to be copied (and
    /// told where its copy's inode goes); a later one is kept to be linked, its directory
    /// held open for it, and None returned.
    pub(crate) fn first_or_later(&self, mut entry: Entry) -> Option<Entry> {
        let key = (entry.meta.dev, entry.meta.ino);
        let mut map = lock(&self.first_names);
        if let Some(first) = map.get(&key) {
            entry.parent.hold();
            let first = first.clone();
            lock(&self.later).push(LinkItem { first, entry });
            return None;
        }
        let made = Arc::new(OnceLock::new());
        entry.made = Some(made.clone());
        let first = FirstName {
            dir: entry.parent.clone(),
            name: entry.dst_name.clone(),
            made,
        };
        map.insert(key, first);
        Some(entry)
    }

    /// The later names to link, once every first name is copied; the table is emptied too.
    pub(crate) fn take_later(&self) -> Vec<LinkItem> {
        lock(&self.first_names).clear();
        std::mem::take(&mut *lock(&self.later))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::super::shared::Meta;
    use super::*;

    fn entry(dir: &Arc<DirNode>, name: &str, ino: u64) -> Entry {
        let mut meta = Meta::regular_unknown();
        meta.dev = 1;
        meta.ino = ino;
        meta.nlink = 2;
        Entry {
            parent: dir.clone(),
            src_name: OsString::from(name),
            dst_name: OsString::from(name),
            meta,
            follow: false,
            made: None,
            clash: None,
            meta_later: false,
        }
    }

    #[test]
    fn the_first_name_is_copied_and_a_later_one_waits_for_its_copy() {
        let t = tempfile::tempdir().unwrap();
        let d = DirNode::open_for_test(t.path());
        let links = HardLinks::default();
        let first = links
            .first_or_later(entry(&d, "a", 7))
            .expect("the first name is copied");
        let made = first.made.clone().expect("told where its inode goes");
        assert!(
            links.first_or_later(entry(&d, "b", 7)).is_none(),
            "a later name waits"
        );
        assert!(
            links.first_or_later(entry(&d, "c", 8)).is_some(),
            "another inode is a first"
        );
        assert_eq!(
            d.pending.load(Ordering::SeqCst),
            2,
            "the waiting name holds its directory"
        );
        let later = links.take_later();
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].entry.dst_name, "b");
        assert_eq!(later[0].first.name, "a");
        assert!(Arc::ptr_eq(&later[0].first.made, &made));
        assert!(links.take_later().is_empty());
        assert!(
            links.first_or_later(entry(&d, "d", 7)).is_some(),
            "the table was emptied"
        );
    }
}
