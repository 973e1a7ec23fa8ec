//! Maps a device number or a device path to the physical whole disks behind it, through
//! /sys/dev/block and /sys/class/block under the [`SysRoot`]: partitions go to their parent
//! disk, dm (LVM, crypt) and md go down `slaves/` recursively.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::root::SysRoot;

/// A whole block device whose /proc/diskstats line is summed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BlockDev {
    pub major: u32,
    pub minor: u32,
    pub name: String,
}

/// Parses a sysfs `dev` file (`254:0`).
pub fn parse_dev_number(text: &str) -> Option<(u32, u32)> {
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// dm/md stacks are shallow; the limit only guards against a looping fixture tree.
const MAX_DEPTH: usize = 16;

fn walk(root: &SysRoot, dir: PathBuf, depth: usize, out: &mut BTreeSet<BlockDev>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(mut dir) = dir.canonicalize() else {
        return;
    };
    if dir.join("partition").exists() {
        match dir.parent() {
            Some(p) => dir = p.to_path_buf(),
            None => return,
        }
    }
    let mut slaves: Vec<String> = std::fs::read_dir(dir.join("slaves"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !slaves.is_empty() {
        slaves.sort();
        for s in slaves {
            walk(root, root.join("sys/class/block").join(&s), depth + 1, out);
        }
        return;
    }
    let Some(name) = dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let Some((major, minor)) = super::root::read_kernel_file(&dir.join("dev"))
        .ok()
        .as_deref()
        .and_then(parse_dev_number)
    else {
        return;
    };
    out.insert(BlockDev { major, minor, name });
}

/// The physical whole disks behind device `major:minor` (empty when sysfs has no entry,
/// e.g. major 0 for ZFS, NFS, tmpfs, btrfs).
pub fn disks_for_dev(root: &SysRoot, major: u32, minor: u32) -> Vec<BlockDev> {
    let mut out = BTreeSet::new();
    walk(
        root,
        root.join(format!("sys/dev/block/{major}:{minor}")),
        0,
        &mut out,
    );
    out.into_iter().collect()
}

/// The physical whole disks behind a kernel block device name (`vdb1`, `dm-0`, `sda`).
pub fn disks_for_name(root: &SysRoot, name: &str) -> Vec<BlockDev> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Vec::new();
    }
    let mut out = BTreeSet::new();
    walk(root, root.join("sys/class/block").join(name), 0, &mut out);
    out.into_iter().collect()
}

/// The kernel name of a device path such as `/dev/disk/by-id/virtio-pool1-part1`: the
/// symlink is resolved under the root, and the last component is the name (`vdb1`).
pub fn block_name_of_path(root: &SysRoot, dev_path: &Path) -> Option<String> {
    let under = root.join(dev_path);
    let resolved = under.canonicalize().unwrap_or(under);
    resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_number_parses_and_rejects_garbage() {
        assert_eq!(parse_dev_number("254:0\n"), Some((254, 0)));
        assert_eq!(parse_dev_number("254"), None);
        assert_eq!(parse_dev_number("a:b"), None);
    }

    #[test]
    fn missing_sysfs_entry_gives_no_disks() {
        let root = SysRoot::new("/nonexistent-copyscope-root");
        assert!(disks_for_dev(&root, 0, 42).is_empty());
        assert!(disks_for_name(&root, "../etc").is_empty());
    }
}
