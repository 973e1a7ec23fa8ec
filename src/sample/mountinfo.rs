//! Pure parser for /proc/self/mountinfo: which filesystem holds a path (longest mount-point
//! prefix), its type and source, octal escapes undone, and the ZFS pool of a dataset.

use std::path::{Component, Path, PathBuf};

/// One mountinfo line (proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    pub mount_id: u32,
    pub parent_id: u32,
    /// Field 3: st_dev of files on this mount (0:N for ZFS, NFS, tmpfs...).
    pub major: u32,
    pub minor: u32,
    pub root: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
}

/// Undoes the kernel's `\ooo` octal escapes (space, tab, newline, backslash). Invalid
/// escapes are kept literally; bytes that do not form UTF-8 are replaced.
pub fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (u32::from(b[i + 1] - b'0') << 6)
                | (u32::from(b[i + 2] - b'0') << 3)
                | u32::from(b[i + 3] - b'0');
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_line(line: &str) -> Option<MountEntry> {
    let mut it = line.split(' ').filter(|t| !t.is_empty());
    let mount_id = it.next()?.parse().ok()?;
    let parent_id = it.next()?.parse().ok()?;
    let (ma, mi) = it.next()?.split_once(':')?;
    let root = unescape_octal(it.next()?);
    let mount_point = unescape_octal(it.next()?);
    let _options = it.next()?;
    // Optional fields (shared:N, master:N, ...) run up to the lone "-" separator.
    it.by_ref().find(|t| *t == "-")?;
    let fs_type = unescape_octal(it.next()?);
    let source = unescape_octal(it.next()?);
    Some(MountEntry {
        mount_id,
        parent_id,
        major: ma.parse().ok()?,
        minor: mi.parse().ok()?,
        root,
        mount_point,
        fs_type,
        source,
    })
}

/// Parses every well-formed line; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(parse_line).collect()
}

/// Lexically normalises an absolute path (`.` and `..` removed) so prefix matching works for
/// paths that do not exist yet.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The mount holding `path` (absolute): the longest mount point that is a component-wise
/// prefix; among equal mount points the last one listed, since later mounts hide earlier.
pub fn find_mount<'a>(entries: &'a [MountEntry], path: &Path) -> Option<&'a MountEntry> {
    let path = normalize(path);
    let mut best: Option<&MountEntry> = None;
    for e in entries {
        if !path.starts_with(Path::new(&e.mount_point)) {
            continue;
        }
        let better = match best {
            None => true,
            Some(b) => e.mount_point.len() >= b.mount_point.len(),
        };
        if better {
            best = Some(e);
        }
    }
    best
}

/// The ZFS pool of a mount source: up to the first `/` or `@` (`tank/a@snap` → `tank`).
pub fn zfs_pool_of(source: &str) -> &str {
    let end = source.find(['/', '@']).unwrap_or(source.len());
    &source[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:45 / /tank rw,noatime shared:20 - zfs tank rw,xattr,noacl
41 40 0:46 / /tank/my\\040share rw,noatime shared:21 - zfs tank/my\\040share rw,xattr,noacl
42 22 0:47 / /snap rw - zfs tank/ds@monday ro
";

    #[test]
    fn parses_fields_and_unescapes() {
        let m = parse_mountinfo(TEXT);
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].fs_type, "ext4");
        assert_eq!(m[0].source, "/dev/vda");
        assert_eq!((m[0].major, m[0].minor), (254, 0));
        assert_eq!(m[2].mount_point, "/tank/my share");
        assert_eq!(m[2].source, "tank/my share");
    }

    #[test]
    fn longest_prefix_wins_and_is_component_wise() {
        let m = parse_mountinfo(TEXT);
        let hit = find_mount(&m, Path::new("/tank/my share/sub/file")).unwrap();
        assert_eq!(hit.source, "tank/my share");
        assert_eq!(find_mount(&m, Path::new("/tank/x")).unwrap().source, "tank");
        // "/tankfoo" is not under "/tank".
        assert_eq!(
            find_mount(&m, Path::new("/tankfoo")).unwrap().fs_type,
            "ext4"
        );
        assert_eq!(
            find_mount(&m, Path::new("/tank/a/../../tank/b"))
                .unwrap()
                .source,
            "tank"
        );
    }

    #[test]
    fn pool_is_source_up_to_slash_or_at() {
        assert_eq!(zfs_pool_of("tank/a/b"), "tank");
        assert_eq!(zfs_pool_of("tank@snap"), "tank");
        assert_eq!(zfs_pool_of("rpool"), "rpool");
    }

    #[test]
    fn bad_escapes_are_kept() {
        assert_eq!(unescape_octal("a\\09b\\"), "a\\09b\\");
        assert_eq!(unescape_octal("\\134x"), "\\x");
    }
}
