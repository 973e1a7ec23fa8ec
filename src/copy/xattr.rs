//! Extended attributes and POSIX ACLs (`-a`, unless `--no-xattrs`): copied raw, name by
//! name, from the source's descriptor to the copy's, before the copy gets its real name.
//! POSIX ACLs are the `system.posix_acl_access` and `system.posix_acl_default`
//! attributes; Samba keeps DOS attributes in `user.DOSATTRIB`; `trusted.*` is listed only
//! to root, `security.*` is kept where the kernel allows it.

use std::os::fd::AsFd;

use rustix::fs::{self as rfs, XattrFlags};
use rustix::io::Errno;

use super::shared::errmsg;

/// Reads a list or a value, growing the buffer until it fits.
fn read_all(mut f: impl FnMut(&mut Vec<u8>) -> Result<usize, Errno>) -> Result<Vec<u8>, Errno> {
    let mut cap = 256;
    loop {
        let mut buf = vec![0u8; cap];
        match f(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(Errno::RANGE) if cap < 1 << 20 => cap *= 8,
            Err(e) => return Err(e),
        }
    }
}

fn names(fd: impl AsFd) -> Result<Vec<Vec<u8>>, Errno> {
    let list = read_all(|b| rfs::flistxattr(&fd, b))?;
    Ok(list
        .split(|c| *c == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// Copies every extended attribute of `src` onto `dst`. Returns what could not be kept,
/// in words for a per-file note (None: all kept, or the source has none).
pub(crate) fn copy(src: impl AsFd, dst: impl AsFd) -> Option<String> {
    let list = match names(&src) {
        Ok(l) => l,
        // The source file system has no xattrs: nothing to keep.
        Err(Errno::NOTSUP) => return None,
        Err(e) => {
            return Some(format!(
                "cannot list its extended attributes: {}",
                errmsg(e)
            ));
        }
    };
    let (mut unsupported, mut failed) = (Vec::new(), Vec::new());
    for name in list {
        let shown = String::from_utf8_lossy(&name).into_owned();
        let Ok(cname) = std::ffi::CString::new(name) else {
            continue;
        };
        let value = match read_all(|b| rfs::fgetxattr(&src, cname.as_c_str(), b)) {
            Ok(v) => v,
            // Removed since it was listed.
            Err(Errno::NODATA) => continue,
            Err(e) => {
                failed.push(format!("{shown} ({})", errmsg(e)));
                continue;
            }
        };
        match rfs::fsetxattr(&dst, cname.as_c_str(), &value, XattrFlags::empty()) {
            Ok(()) => {}
            Err(Errno::NOTSUP) => unsupported.push(shown),
            Err(e) => failed.push(format!("{shown} ({})", errmsg(e))),
        }
    }
    let mut parts = Vec::new();
    if !unsupported.is_empty() {
        parts.push(format!(
            "the destination file system cannot hold {}: not kept",
            unsupported.join(", ")
        ));
    }
    if !failed.is_empty() {
        parts.push(format!(
            "extended attributes not kept: {}",
            failed.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The POSIX ACL attributes: what a copy that keeps modes must keep too, since with an ACL
/// the mode's group bits are only its mask (dropping the ACL can widen access).
const ACLS: [&std::ffi::CStr; 2] = [c"system.posix_acl_access", c"system.posix_acl_default"];

/// Copies the POSIX ACLs of `src` onto `dst`: the access ACL, and for a directory its
/// default ACL (only directories have one: the kernel refuses to set one on anything else, so
/// asking a file for it would be one syscall per file answered ENODATA, 5 % of the kernel
/// time of a flat directory of small files). After the mode is set: an access ACL sets the
/// permission bits again, to the same values. Returns what could not be kept, in words for
/// a per-file note.
pub(crate) fn copy_acls(src: impl AsFd, dst: impl AsFd, is_dir: bool) -> Option<String> {
    let mut failed = Vec::new();
    let names = if is_dir { &ACLS[..] } else { &ACLS[..1] };
    for &name in names {
        let value = match read_all(|b| rfs::fgetxattr(&src, name, b)) {
            Ok(v) => v,
            // None (the usual case), or a file system without ACLs.
            Err(Errno::NODATA | Errno::NOTSUP) => continue,
            Err(e) => {
                failed.push(format!("{} ({})", name.to_string_lossy(), errmsg(e)));
                continue;
            }
        };
        if let Err(e) = rfs::fsetxattr(&dst, name, &value, XattrFlags::empty()) {
            failed.push(format!("{} ({})", name.to_string_lossy(), errmsg(e)));
        }
    }
    (!failed.is_empty()).then(|| format!("ACL not kept: {}", failed.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{Mode, OFlags};

    fn open(p: &std::path::Path) -> std::os::fd::OwnedFd {
        rfs::open(p, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).unwrap()
    }

    #[test]
    fn user_attributes_and_a_large_value_are_copied() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let (fa, fb) = (open(&a), open(&b));
        let big = vec![7u8; 3000];
        if rfs::fsetxattr(&fa, "user.DOSATTRIB", b"0x20", XattrFlags::empty()) == Err(Errno::NOTSUP)
        {
            eprintln!("skipped: no user xattrs on this file system");
            return;
        }
        rfs::fsetxattr(&fa, "user.big", &big, XattrFlags::empty()).unwrap();
        assert_eq!(copy(&fa, &fb), None);
        let got = read_all(|v| rfs::fgetxattr(&fb, "user.big", v)).unwrap();
        assert_eq!(got, big);
        let got = read_all(|v| rfs::fgetxattr(&fb, "user.DOSATTRIB", v)).unwrap();
        assert_eq!(got, b"0x20");
    }
}
