//! What became of each entry beyond "copied": the failures, skips, changes and notes the
//! workers record as they go, and the counts the copy's outcome is made of at its end.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::shared::lock;

/// One path and what went wrong (or was skipped, or changed) with it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileIssue {
    pub path: PathBuf,
    pub message: String,
}

/// Which list an entry goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IssueKind {
    Failed,
    Skipped,
    /// The source changed while it was copied.
    Changed,
    /// Copied with a caveat.
    Note,
}

/// The lists, as the run ends.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct IssueLists {
    pub(crate) failures: Vec<FileIssue>,
    pub(crate) skipped: Vec<FileIssue>,
    pub(crate) changed: Vec<FileIssue>,
    pub(crate) notes: Vec<FileIssue>,
}

/// Recorded by any worker at any time; taken once at the end.
#[derive(Default)]
pub(crate) struct Outcomes {
    lists: Mutex<IssueLists>,
    /// Entries whose owner `-p` could not keep, as root (each is also a note).
    pub(crate) owners_unkept: AtomicU64,
    /// `--verify`: files read back equal, and not.
    pub(crate) verified: AtomicU64,
    pub(crate) mismatches: AtomicU64,
    /// Bytes shared with the source (reflinks) instead of written.
    pub(crate) cloned: AtomicU64,
}

impl Outcomes {
    pub(crate) fn record(&self, kind: IssueKind, path: &Path, message: &str) {
        let issue = FileIssue {
            path: path.to_path_buf(),
            message: message.to_string(),
        };
        let mut l = lock(&self.lists);
        match kind {
            IssueKind::Failed => l.failures.push(issue),
            IssueKind::Skipped => l.skipped.push(issue),
            IssueKind::Changed => l.changed.push(issue),
            IssueKind::Note => l.notes.push(issue),
        }
    }

    /// The lists recorded so far, leaving them empty.
    pub(crate) fn take(&self) -> IssueLists {
        std::mem::take(&mut *lock(&self.lists))
    }

    /// Whether anything recorded makes the copy partial: a failure, a file that did not read
    /// back equal, an owner not kept.
    pub(crate) fn partial(&self, lists: &IssueLists) -> bool {
        !lists.failures.is_empty()
            || self.mismatches.load(Ordering::SeqCst) > 0
            || self.owners_unkept.load(Ordering::SeqCst) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_goes_to_its_list_in_order_and_is_taken_once() {
        let o = Outcomes::default();
        o.record(IssueKind::Failed, Path::new("a"), "gone");
        o.record(IssueKind::Note, Path::new("b"), "xattr not kept");
        o.record(IssueKind::Failed, Path::new("c"), "EIO");
        o.record(IssueKind::Changed, Path::new("d"), "grew");
        let l = o.take();
        let paths = |v: &[FileIssue]| v.iter().map(|i| i.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&l.failures), [PathBuf::from("a"), PathBuf::from("c")]);
        assert_eq!(paths(&l.notes), [PathBuf::from("b")]);
        assert_eq!(paths(&l.changed), [PathBuf::from("d")]);
        assert!(l.skipped.is_empty());
        assert_eq!(o.take(), IssueLists::default());
    }

    #[test]
    fn a_failure_a_mismatch_or_an_owner_not_kept_makes_the_copy_partial() {
        let o = Outcomes::default();
        assert!(!o.partial(&o.take()));
        o.record(IssueKind::Note, Path::new("n"), "caveat");
        assert!(!o.partial(&o.take()), "a note alone is not a failure");
        o.mismatches.fetch_add(1, Ordering::SeqCst);
        assert!(o.partial(&IssueLists::default()));
        let o = Outcomes::default();
        o.owners_unkept.fetch_add(1, Ordering::SeqCst);
        assert!(o.partial(&IssueLists::default()));
        let o = Outcomes::default();
        o.record(IssueKind::Failed, Path::new("f"), "EIO");
        assert!(o.partial(&o.take()));
    }
}
