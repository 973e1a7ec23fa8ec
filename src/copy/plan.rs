//! From operands to a checked job: cp's SOURCE/DEST/-t/-T rules and every refusal
//! (into itself, same file, dir onto file, several sources onto a non-directory),
//! all decided before a single byte is written.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::error::{CopyError, io_reason};
use super::options::{CopyOptions, CopyRequest, Dereference, Pair};
use crate::present::quote::quote;

/// A checked source → destination pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub source: PathBuf,
    pub dest: PathBuf,
    /// The source is a directory (after following a command-line symlink, unless `-a`).
    pub is_dir: bool,
    /// Destination existed as a directory: the tree is merged into it.
    pub dest_exists: bool,
    /// The (device, inode) of that directory as the plan saw it (not following a symlink):
    /// the copy opens it without following and refuses any other directory found there.
    pub dest_ident: Option<(u64, u64)>,
}

/// A planned copy: every refusal has been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyJob {
    pub roots: Vec<Root>,
    /// Sources that cannot be stat'ed, or that are the same file as their destination, with
    /// cp's message ("cannot stat 'x': No such file or directory", "'a' and 'b' are the
    /// same file"): as cp, the others are still copied and the run exits 1.
    pub missing: Vec<(PathBuf, String)>,
    pub options: CopyOptions,
}

/// A path in a message, quoted as cp quotes it (never raw bytes to the terminal).
fn display(p: &Path) -> String {
    quote(p)
}

/// Applies cp's operand rules. `paths` are the positional operands; with `target_dir`
/// all of them are sources, otherwise the last one is DEST.
pub fn resolve_targets(
    paths: &[PathBuf],
    target_dir: Option<&Path>,
    no_target_dir: bool,
) -> Result<Vec<Pair>, CopyError> {
    if let Some(dir) = target_dir {
        if paths.is_empty() {
            return Err(CopyError::Usage("missing file operand".into()));
        }
        if !dir.is_dir() {
            return Err(CopyError::Usage(format!(
                "target directory {} is not a directory",
                display(dir)
            )));
        }
        return Ok(paths.iter().map(|s| into_dir(s, dir)).collect());
    }
    let (dest, sources) = match paths.split_last() {
        Some((d, s)) if !s.is_empty() => (d, s),
        Some((d, _)) => {
            return Err(CopyError::Usage(format!(
                "missing destination file operand after {}",
                display(d)
            )));
        }
        None => return Err(CopyError::Usage("missing file operand".into())),
    };
    if no_target_dir {
        if sources.len() > 1 {
            return Err(CopyError::Usage(format!(
                "extra operand {} (-T takes one SOURCE and one DEST)",
                display(&sources[1])
            )));
        }
        return Ok(vec![Pair {
            source: sources[0].clone(),
            dest: dest.clone(),
        }]);
    }
    if sources.len() > 1 {
        if !dest.is_dir() {
            return Err(CopyError::Refused(format!(
                "target {} is not a directory (several sources need a directory to copy into)",
                display(dest)
            )));
        }
        return Ok(sources.iter().map(|s| into_dir(s, dest)).collect());
    }
    let source = &sources[0];
    if dest.is_dir() {
        Ok(vec![into_dir(source, dest)])
    } else {
        Ok(vec![Pair {
            source: source.clone(),
            dest: dest.clone(),
        }])
    }
}

/// `dir/basename(source)`; `src/.` (or `.`) means "the contents of src", merged into dir.
fn into_dir(source: &Path, dir: &Path) -> Pair {
    let bytes = source.as_os_str().as_bytes();
    let contents_only = bytes == b"." || bytes.ends_with(b"/.");
    let dest = match source.file_name() {
        Some(name) if !contents_only => dir.join(name),
        _ => dir.to_path_buf(),
    };
    Pair {
        source: source.to_path_buf(),
        dest,
    }
}

/// Absolute, symlink-resolved form of a path that may not exist yet: the longest existing
/// ancestor is canonicalised and the rest appended lexically.
fn canonical_lenient(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut rest: Vec<&OsStr> = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(c) = fs::canonicalize(cur) {
            let mut out = c;
            for r in rest.iter().rev() {
                match Path::new(r).components().next() {
                    Some(Component::ParentDir) => {
                        out.pop();
                    }
                    Some(Component::CurDir) | None => {}
                    _ => out.push(r),
                }
            }
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                cur = parent;
            }
            _ => return abs,
        }
    }
}

/// cp's "are the same file": the destination (followed) is the source; or the source is a
/// symlink copied as a symlink and the destination is the file it points to (copying it
/// would leave a symlink to itself where the file was, its data gone).
fn same_file(
    src: &Path,
    smeta: &fs::Metadata,
    dst_follow: Option<&fs::Metadata>,
    dst_link: Option<&fs::Metadata>,
) -> bool {
    let same = |a: &fs::Metadata, b: &fs::Metadata| a.dev() == b.dev() && a.ino() == b.ino();
    if dst_follow.is_some_and(|d| same(d, smeta)) {
        return true;
    }
    smeta.file_type().is_symlink()
        && dst_link.is_some_and(|d| !d.file_type().is_symlink())
        && fs::metadata(src).is_ok_and(|target| dst_link.is_some_and(|d| same(d, &target)))
}

impl CopyJob {
    /// Checks every pair and refuses, before any write, the copies cp refuses.
    #[expect(
        clippy::too_many_lines,
        reason = "cp's refusals checked in cp's order, before anything is written"
    )]
    pub fn plan(request: &CopyRequest) -> Result<CopyJob, CopyError> {
        if request.pairs.is_empty() {
            return Err(CopyError::Usage("missing file operand".into()));
        }
        let follow_root = request.options.dereference != Dereference::Never;
        let mut roots = Vec::with_capacity(request.pairs.len());
        let mut missing = Vec::new();
        for pair in &request.pairs {
            let src = &pair.source;
            let dst = &pair.dest;
            let smeta = match if follow_root {
                fs::metadata(src)
            } else {
                fs::symlink_metadata(src)
            } {
                Ok(m) => m,
                Err(e) => {
                    let msg = format!("cannot stat {}: {}", quote(src), io_reason(&e));
                    missing.push((src.clone(), msg));
                    continue;
                }
            };
            let dmeta_follow = fs::metadata(dst).ok();
            let dmeta_link = fs::symlink_metadata(dst).ok();
            if same_file(src, &smeta, dmeta_follow.as_ref(), dmeta_link.as_ref()) {
                // cp: reported, the other sources are still copied, exit 1.
                let msg = format!("{} and {} are the same file", display(src), display(dst));
                missing.push((src.clone(), msg));
                continue;
            }
            let dest_is_dir = dmeta_follow.as_ref().is_some_and(|m| m.is_dir());
            if smeta.is_dir() {
                // A symlink where the directory goes is never followed (cp refuses it too):
                // in a destination others can write, it may point anywhere.
                if dmeta_link.as_ref().is_some_and(|m| !m.is_dir()) {
                    return Err(CopyError::Refused(format!(
                        "cannot overwrite non-directory {} with directory {}",
                        display(dst),
                        display(src)
                    )));
                }
                let cs = canonical_lenient(src);
                let cd = canonical_lenient(dst);
                if cd.starts_with(&cs) {
                    return Err(CopyError::Refused(format!(
                        "cannot copy a directory, {}, into itself, {}",
                        display(src),
                        display(dst)
                    )));
                }
            } else if !dest_is_dir && dst.as_os_str().as_bytes().ends_with(b"/") {
                // cp: a trailing slash names a directory; a file cannot become one.
                return Err(CopyError::Refused(format!(
                    "cannot create regular file {}: Not a directory",
                    display(dst)
                )));
            } else if dest_is_dir && dmeta_link.as_ref().is_some_and(|m| m.is_dir()) {
                return Err(CopyError::Refused(format!(
                    "cannot overwrite directory {} with non-directory {}",
                    display(dst),
                    display(src)
                )));
            }
            let parent = match dst.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if dst.file_name().is_some() && !parent.is_dir() {
                return Err(CopyError::Refused(format!(
                    "cannot create {}: directory {} does not exist",
                    display(dst),
                    display(&parent)
                )));
            }
            roots.push(Root {
                source: src.clone(),
                dest: dst.clone(),
                is_dir: smeta.is_dir(),
                dest_exists: dest_is_dir,
                dest_ident: dmeta_link
                    .as_ref()
                    .filter(|m| dest_is_dir && m.is_dir())
                    .map(|m| (m.dev(), m.ino())),
            });
        }
        Ok(CopyJob {
            roots,
            missing,
            options: request.options.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pb(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn one_source_onto_missing_dest_is_the_target() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("a");
        fs::write(&src, b"x").unwrap();
        let dst = t.path().join("b");
        let pairs = resolve_targets(&[src.clone(), dst.clone()], None, false).unwrap();
        assert_eq!(
            pairs,
            vec![Pair {
                source: src,
                dest: dst
            }]
        );
    }

    #[test]
    fn existing_dir_dest_means_into() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("a");
        fs::write(&src, b"x").unwrap();
        let d = t.path().join("d");
        fs::create_dir(&d).unwrap();
        let pairs = resolve_targets(&[src.clone(), d.clone()], None, false).unwrap();
        assert_eq!(pairs[0].dest, d.join("a"));
        let pairs = resolve_targets(&[src.clone(), d.clone()], None, true).unwrap();
        assert_eq!(pairs[0].dest, d, "-T never copies into");
        let pairs = resolve_targets(std::slice::from_ref(&src), Some(&d), false).unwrap();
        assert_eq!(pairs[0].dest, d.join("a"));
    }

    #[test]
    fn several_sources_need_a_directory() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f");
        fs::write(&f, b"x").unwrap();
        let err = resolve_targets(&[pb("a"), pb("b"), f], None, false).unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
        assert!(resolve_targets(&[pb("a")], None, false).is_err());
    }

    #[test]
    fn dot_means_contents() {
        let p = into_dir(Path::new("src/."), Path::new("d"));
        assert_eq!(p.dest, pb("d"));
        let p = into_dir(Path::new("src/x/"), Path::new("d"));
        assert_eq!(p.dest, pb("d/x"));
    }

    #[test]
    fn same_file_through_a_symlink_copied_as_a_symlink() {
        // coreutils tests/cp/same-file.sh, 'symlink foo' with -d: "'symlink' and 'foo' are
        // the same file" (copying it would leave foo a symlink to itself, its data gone).
        let t = tempfile::tempdir().unwrap();
        let foo = t.path().join("foo");
        fs::write(&foo, b"XYZ").unwrap();
        let link = t.path().join("symlink");
        std::os::unix::fs::symlink("foo", &link).unwrap();
        let options = CopyOptions {
            dereference: Dereference::Never,
            ..CopyOptions::default()
        };
        let req = CopyRequest {
            pairs: vec![Pair {
                source: link.clone(),
                dest: foo.clone(),
            }],
            options,
        };
        let j = CopyJob::plan(&req).unwrap();
        assert!(j.roots.is_empty(), "{j:?}");
        assert!(j.missing[0].1.contains("are the same file"));
        // 'sl1 sl2' with -d (both symlinks to foo): copied, the symlink replaces the symlink.
        let sl2 = t.path().join("sl2");
        std::os::unix::fs::symlink("foo", &sl2).unwrap();
        let mut req = req;
        req.pairs[0].dest = sl2;
        assert_eq!(CopyJob::plan(&req).unwrap().roots.len(), 1);
    }

    #[test]
    fn refusals() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        fs::create_dir_all(d.join("sub")).unwrap();
        let f = t.path().join("f");
        fs::write(&f, b"x").unwrap();
        let req = |s: &Path, dd: &Path| CopyRequest {
            pairs: vec![Pair {
                source: s.to_path_buf(),
                dest: dd.to_path_buf(),
            }],
            options: CopyOptions::default(),
        };
        let e = CopyJob::plan(&req(&d, &d.join("sub/x"))).unwrap_err();
        assert!(e.to_string().contains("into itself"), "{e}");
        // Same file: cp's per-source failure (the other sources are still copied, exit 1).
        let j = CopyJob::plan(&req(&f, &f)).unwrap();
        assert!(j.roots.is_empty());
        assert!(
            j.missing[0].1.contains("are the same file"),
            "{:?}",
            j.missing
        );
        let e = CopyJob::plan(&req(&d, &f)).unwrap_err();
        assert!(e.to_string().contains("non-directory"), "{e}");
        let e = CopyJob::plan(&req(&f, &t.path().join("nope/x"))).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(CopyJob::plan(&req(&d, &t.path().join("d2"))).is_ok());
        let slash = PathBuf::from(format!("{}/", t.path().join("newdir").display()));
        let e = CopyJob::plan(&req(&f, &slash)).unwrap_err();
        assert!(e.to_string().contains("Not a directory"), "{e}");
        assert!(
            CopyJob::plan(&req(&d, &slash)).is_ok(),
            "a directory may be created at dir/"
        );
    }
}
