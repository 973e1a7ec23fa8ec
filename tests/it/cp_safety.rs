//! cp's protections and semantics through the real binary (issue 8 items 3, 4, 5, 8, 10):
//! same file, the destination's own protections, modes without preserved metadata, a
//! source that changes while it is copied, directories after an interrupted copy. Cases
//! ported from GNU coreutils' tests/cp/*.sh name their origin; where copyscope differs on
//! purpose, docs/compat.md says why.

use crate::util;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use util::*;

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

fn umask() -> u32 {
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.bits()
}

/// Runs the binary in `dir` (cwd) with relative operands, as nobody when the tests run as
/// root (root may write anything, so cp's permission checks need another user).
fn run_in(dir: &Path, args: &[&str], as_nobody: bool) -> Output {
    let mut c = if as_nobody {
        unprivileged_cmd(dir, false)
    } else {
        Command::new(bin())
    };
    c.current_dir(dir).arg("--plain").args(args);
    c.env_remove("COPYSCOPE_TEST_THROTTLE_BPS");
    run_timeout(c, Duration::from_secs(60))
}

/// `ls -gG`-like view of a directory for the same-file table: "name" or "name -> target".
fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            match fs::read_link(e.path()) {
                Ok(t) => format!("{n} -> {}", t.display()),
                Err(_) => n,
            }
        })
        .collect();
    names.sort();
    names.join(" ")
}

/// Ported from GNU coreutils tests/cp/same-file.sh: the rows for options '', -d, -f and -df
/// (copyscope has no -b, -l, -s or --remove-destination). Each row: exit status, cp's
/// message, the directory afterwards, and every named file still holding its data.
#[test]
fn coreutils_same_file_table() {
    let rows: &[(&str, &[&str], i32, bool, &str)] = &[
        ("foo symlink", &[], 1, true, "foo symlink -> foo"),
        ("foo symlink", &["-d"], 1, true, "foo symlink -> foo"),
        ("foo symlink", &["-f"], 1, true, "foo symlink -> foo"),
        ("foo symlink", &["-d", "-f"], 1, true, "foo symlink -> foo"),
        ("symlink foo", &[], 1, true, "foo symlink -> foo"),
        ("symlink foo", &["-d"], 1, true, "foo symlink -> foo"),
        ("symlink foo", &["-f"], 1, true, "foo symlink -> foo"),
        ("symlink foo", &["-d", "-f"], 1, true, "foo symlink -> foo"),
        ("foo foo", &[], 1, true, "foo"),
        ("foo foo", &["-d"], 1, true, "foo"),
        ("foo foo", &["-f"], 1, true, "foo"),
        ("foo foo", &["-d", "-f"], 1, true, "foo"),
        ("sl1 sl2", &[], 1, true, "foo sl1 -> foo sl2 -> foo"),
        ("sl1 sl2", &["-d"], 0, false, "foo sl1 -> foo sl2 -> foo"),
        ("sl1 sl2", &["-f"], 1, true, "foo sl1 -> foo sl2 -> foo"),
        (
            "sl1 sl2",
            &["-d", "-f"],
            0,
            false,
            "foo sl1 -> foo sl2 -> foo",
        ),
        ("foo hardlink", &[], 1, true, "foo hardlink"),
        ("foo hardlink", &["-d"], 1, true, "foo hardlink"),
        ("foo hardlink", &["-f"], 1, true, "foo hardlink"),
        ("foo hardlink", &["-d", "-f"], 1, true, "foo hardlink"),
        ("hlsl sl2", &[], 1, true, "foo hlsl -> foo sl2 -> foo"),
        ("hlsl sl2", &["-d"], 0, false, "foo hlsl -> foo sl2 -> foo"),
        ("hlsl sl2", &["-f"], 1, true, "foo hlsl -> foo sl2 -> foo"),
        (
            "hlsl sl2",
            &["-d", "-f"],
            0,
            false,
            "foo hlsl -> foo sl2 -> foo",
        ),
    ];
    for (args, opts, code, same, after) in rows {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        fs::write(d.join("foo"), b"XYZ\n").unwrap();
        if args.contains("symlink") {
            symlink("foo", d.join("symlink")).unwrap();
        }
        if args.contains("hardlink") {
            fs::hard_link(d.join("foo"), d.join("hardlink")).unwrap();
        }
        if args.contains("sl1") {
            symlink("foo", d.join("sl1")).unwrap();
        }
        if args.contains("sl2") {
            symlink("foo", d.join("sl2")).unwrap();
        }
        if args.contains("hlsl") {
            fs::hard_link(d.join("sl2"), d.join("hlsl")).unwrap();
        }
        let names: Vec<&str> = args.split(' ').collect();
        let mut all: Vec<&str> = opts.to_vec();
        all.extend(&names);
        let o = run_in(d, &all, false);
        let row = format!("cp {} {args}", opts.join(" "));
        assert_eq!(o.status.code(), Some(*code), "{row}: {}", text(&o));
        if *same {
            let want = format!("'{}' and '{}' are the same file", names[0], names[1]);
            assert!(err(&o).contains(&want), "{row}: {}", err(&o));
        }
        assert_eq!(listing(d), *after, "{row}");
        for n in &names {
            assert_eq!(fs::read(d.join(n)).unwrap(), b"XYZ\n", "{row}: {n}");
        }
    }
}

/// Issue 8 item 3 as a user meets it: `-a symlink foo` with symlink -> foo used to leave
/// foo a symlink to itself, its data gone. Several sources: the others are still copied.
#[test]
fn archive_symlink_onto_its_target_is_refused_and_the_rest_copied() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::write(d.join("foo"), b"data").unwrap();
    symlink("foo", d.join("symlink")).unwrap();
    let o = run_in(d, &["-a", "symlink", "foo"], false);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        err(&o).contains("'symlink' and 'foo' are the same file"),
        "{}",
        err(&o)
    );
    assert_eq!(fs::read(d.join("foo")).unwrap(), b"data");
    assert!(fs::symlink_metadata(d.join("foo")).unwrap().is_file());
}

/// Ported from GNU coreutils tests/cp/thru-dangling.sh: a regular file is never written
/// through a dangling destination symlink (the target is not created); the symlink stays.
#[test]
fn coreutils_thru_dangling() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    symlink("no-such", d.join("dangle")).unwrap();
    fs::write(d.join("f"), b"hi\n").unwrap();
    for opts in [&[][..], &["-f"][..]] {
        let mut args = opts.to_vec();
        args.extend(["f", "dangle"]);
        let o = run_in(d, &args, false);
        assert_eq!(o.status.code(), Some(1), "{opts:?}: {}", text(&o));
        assert!(
            err(&o).contains("not writing through dangling symlink 'dangle'"),
            "{}",
            err(&o)
        );
        assert!(!d.join("no-such").exists());
        assert_eq!(
            fs::read_link(d.join("dangle")).unwrap(),
            Path::new("no-such")
        );
    }
    // A symlink copied as a symlink (-a) replaces a dangling one, as cp -d does.
    symlink("f", d.join("tof")).unwrap();
    let o = run_in(d, &["-a", "tof", "dangle"], false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read_link(d.join("dangle")).unwrap(), Path::new("f"));
}

/// Ported from GNU coreutils tests/cp/abuse.sh: `cp -dR a/1 b/1 c` where a/1 is a symlink
/// to ../t: the second source must not be written through the symlink just made (t is
/// neither created nor changed), with t absent and with t present.
#[test]
fn coreutils_abuse_just_created_symlink() {
    for t_exists in [false, true] {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        for s in ["a", "b", "c"] {
            fs::create_dir(d.join(s)).unwrap();
        }
        symlink("../t", d.join("a/1")).unwrap();
        fs::write(d.join("b/1"), b"payload").unwrap();
        if t_exists {
            fs::write(d.join("t"), b"original").unwrap();
        }
        let o = run_in(d, &["-d", "-R", "a/1", "b/1", "c"], false);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            err(&o).contains("will not copy 'b/1' through just-created symlink 'c/1'"),
            "{}",
            err(&o)
        );
        assert_eq!(fs::read_link(d.join("c/1")).unwrap(), Path::new("../t"));
        if t_exists {
            assert_eq!(fs::read(d.join("t")).unwrap(), b"original");
        } else {
            assert!(!d.join("t").exists(), "written through the new symlink");
        }
    }
    // The same for a regular file made earlier in the run (cp: "will not overwrite
    // just-created").
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::write(d.join("1"), b"first").unwrap();
    fs::create_dir_all(d.join("b")).unwrap();
    fs::create_dir_all(d.join("c")).unwrap();
    fs::write(d.join("b/1"), b"second").unwrap();
    let o = run_in(d, &["1", "b/1", "c"], false);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        err(&o).contains("will not overwrite just-created 'c/1' with 'b/1'"),
        "{}",
        err(&o)
    );
    assert_eq!(fs::read(d.join("c/1")).unwrap(), b"first");
}

/// The destination's own protections (issue 8 item 4), after GNU coreutils
/// tests/cp/fail-perm.sh: as a user (not root), an existing destination file of mode 000
/// is refused without -f ("Permission denied", left as it was) and replaced with -f; a
/// destination symlink whose target cannot be reached (D/D with D mode 000) is refused
/// ("cannot stat").
#[test]
fn coreutils_fail_perm_destination_protections() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::set_permissions(d, fs::Permissions::from_mode(0o777)).unwrap();
    let own = |p: &Path| {
        if is_root() {
            rustix::fs::chown(
                p,
                Some(rustix::fs::Uid::from_raw(65534)),
                Some(rustix::fs::Gid::from_raw(65534)),
            )
            .unwrap();
        }
    };
    fs::write(d.join("src"), b"new").unwrap();
    fs::write(d.join("locked"), b"old").unwrap();
    fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::create_dir(d.join("D")).unwrap();
    fs::write(d.join("D/D"), b"deep").unwrap();
    symlink("D/D", d.join("unreachable")).unwrap();
    for p in ["src", "locked", "D", "D/D"] {
        own(&d.join(p));
    }
    fs::set_permissions(d.join("D"), fs::Permissions::from_mode(0o000)).unwrap();
    let before = fs::metadata(d.join("locked")).unwrap();

    let o = run_in(d, &["src", "locked"], true);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        err(&o).contains("cannot create regular file 'locked': Permission denied"),
        "{}",
        err(&o)
    );
    let after = fs::metadata(d.join("locked")).unwrap();
    assert_eq!(
        (after.ino(), after.mode(), after.size()),
        (before.ino(), before.mode(), before.size()),
        "refused: the destination is untouched"
    );

    let o = run_in(d, &["src", "unreachable"], true);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        err(&o).contains("cannot stat 'unreachable': Permission denied"),
        "{}",
        err(&o)
    );
    assert!(
        fs::symlink_metadata(d.join("unreachable"))
            .unwrap()
            .is_symlink()
    );

    let o = run_in(d, &["-f", "src", "locked"], true);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(fs::read(d.join("locked")).unwrap(), b"new");
    fs::set_permissions(d.join("D"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// Ported from GNU coreutils tests/cp/preserve-mode.sh, for copyscope's flags (mode and
/// mtime are preserved by default; `--no-preserve` is cp's `--no-preserve=mode`, issue 8
/// item 5): without preserved modes a new file gets 0666 and a new directory 0777 minus
/// the umask (a read-only source gives a writable copy); an existing destination keeps its
/// own mode (cp writes into it); by default the source's mode is kept.
#[test]
fn coreutils_preserve_mode() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let um = umask();
    let src = d.join("src");
    write(&src.join("ro"), b"read-only");
    write(&src.join("sub/x"), b"x");
    fs::set_permissions(src.join("ro"), fs::Permissions::from_mode(0o444)).unwrap();
    fs::set_permissions(src.join("sub"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::set_permissions(&src, fs::Permissions::from_mode(0o750)).unwrap();

    let o = copyscope(&[
        OsStr::new("--no-preserve"),
        src.as_os_str(),
        d.join("np").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(mode(&d.join("np/ro")), 0o666 & !um, "new file");
    assert_eq!(mode(&d.join("np/sub")), 0o777 & !um, "new directory");
    assert_eq!(mode(&d.join("np")), 0o777 & !um, "new root directory");

    let o = copyscope(&[src.as_os_str(), d.join("p").as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(mode(&d.join("p/ro")), 0o444);
    assert_eq!(mode(&d.join("p/sub")), 0o700);
    assert_eq!(mode(&d.join("p")), 0o750);

    // Overwrite: --no-preserve keeps the existing file's mode; the default takes the source's.
    let existing = d.join("existing");
    fs::write(&existing, b"old").unwrap();
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o640)).unwrap();
    let o = copyscope(&[
        OsStr::new("--no-preserve"),
        src.join("ro").as_os_str(),
        existing.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(&existing).unwrap(), b"read-only");
    assert_eq!(
        mode(&existing),
        0o640,
        "the existing destination's mode is kept"
    );
    let o = copyscope(&[src.join("ro").as_os_str(), existing.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(mode(&existing), 0o444);
}

/// Ported from GNU coreutils tests/cp/special-f.sh: a FIFO copied (-f, and with -R) onto
/// an existing file replaces it with a FIFO, never opening it (no hang), exit 0.
#[test]
fn coreutils_special_f() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        d.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    for opts in [&["-f"][..], &["-R", "-f"][..], &["-a"][..]] {
        fs::write(d.join("e"), b"existing").unwrap();
        let mut args = opts.to_vec();
        args.extend(["fifo", "e"]);
        let o = run_in(d, &args, false);
        assert_eq!(o.status.code(), Some(0), "{opts:?}: {}", text(&o));
        assert!(
            fs::symlink_metadata(d.join("e"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
        fs::remove_file(d.join("e")).unwrap();
    }
}

/// Issue 8 item 8: a source modified in place (same size, new mtime) while it is copied is
/// a failure, exit 1; its copy never gets the real name and no temporary is left.
#[test]
fn a_source_modified_mid_copy_is_not_kept() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("big"), &data(2 << 20, 3));
    write(&src.join("small"), b"small");
    let dst = t.path().join("dst");
    let mut r = start_json(
        &[
            OsStr::new("-j"),
            OsStr::new("1"),
            src.as_os_str(),
            dst.as_os_str(),
        ],
        1 << 20,
    );
    r.wait_copying();
    {
        use std::os::unix::fs::FileExt;
        let f = fs::OpenOptions::new()
            .write(true)
            .open(src.join("big"))
            .unwrap();
        f.write_all_at(b"CHANGED", 10).unwrap();
    }
    set_mtime(&src.join("big"), 1_700_000_000);
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        out.contains("changed while it was copied (modified)"),
        "{out}"
    );
    assert!(!dst.join("big").exists());
    assert_eq!(fs::read(dst.join("small")).unwrap(), b"small");
    assert!(
        temp_leftovers(&dst).is_empty(),
        "{:?}",
        temp_leftovers(&dst)
    );
}

/// Starts `copyscope --json -j 1 SRC SRC/../dst` paced at `bps` (SRC made 0755 first) and
/// returns once more than `after` bytes are copied: the copy is then mid-way.
fn paced_tree_copy(src: &Path, bps: u64, after: u64) -> (PathBuf, Running) {
    fs::set_permissions(src, fs::Permissions::from_mode(0o755)).unwrap();
    let dst = src.parent().unwrap().join("dst");
    let args = [
        OsStr::new("-j"),
        OsStr::new("1"),
        src.as_os_str(),
        dst.as_os_str(),
    ];
    let mut r = start_json(&args, bps);
    r.wait_for(|v| v["type"] == "progress" && v["bytes_copied"].as_u64().unwrap_or(0) > after);
    (dst, r)
}

/// Issue 8 item 10: an interrupted copy (SIGHUP: the SSH connection dropped) leaves no
/// directory at the 0700 it was made with: every directory it made has the source's mode;
/// those whose content was complete also have the source's mtime.
#[test]
fn directories_get_their_modes_after_an_interrupted_copy() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("a_done/small"), b"small");
    for i in 0..8 {
        write(&src.join(format!("b_busy/f{i}")), &data(512 << 10, i));
    }
    write(&src.join("c_never/x"), b"x");
    // c_never is group-writable, so it is made 0700 and opened up at the end; the others
    // are made with their final modes.
    for (p, m) in [("a_done", 0o751), ("b_busy", 0o755), ("c_never", 0o775)] {
        fs::set_permissions(src.join(p), fs::Permissions::from_mode(m)).unwrap();
        set_mtime(&src.join(p), 1_000_000_000);
    }
    let (dst, r) = paced_tree_copy(&src, 1 << 20, 600_000);
    r.signal(rustix::process::Signal::HUP);
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(130), "{out}\n{err}");
    let mut seen = 0;
    for e in walkdir::WalkDir::new(&dst).min_depth(0) {
        let e = e.unwrap();
        if !e.file_type().is_dir() {
            continue;
        }
        let rel: PathBuf = e.path().strip_prefix(&dst).unwrap().to_path_buf();
        let m = mode(e.path());
        assert_ne!(m, 0o700, "{rel:?} left at 0700\n{out}");
        assert_eq!(m, mode(&src.join(&rel)), "{rel:?} mode");
        seen += 1;
    }
    assert!(seen >= 2, "{out}");
    let done = fs::metadata(dst.join("a_done")).unwrap();
    assert_eq!(
        done.mtime(),
        1_000_000_000,
        "a complete directory has its mtime"
    );
    assert!(
        temp_leftovers(&dst).is_empty(),
        "{:?}",
        temp_leftovers(&dst)
    );
}

/// Issue 14 (syscalls per file) with DESIGN §11: a directory is made with its final mode when
/// that lets nobody else write in it (no fchmod later, as `cp -r`); one others may write in,
/// or one we could not write in ourselves, stays 0700 until its content is copied. At the
/// end every directory has the source's mode, the sticky bit included; the setgid bit only
/// with the owner kept (cp's rule; this copy keeps no owner).
#[test]
fn directories_others_may_write_in_stay_closed_until_copied() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let modes = [
        ("plain", 0o755),
        ("private", 0o700),
        ("group_rw", 0o775),
        ("shared", 0o777),
        ("sticky", 0o1777),
        ("setgid", 0o2755),
        ("read_only", 0o555),
    ];
    for (i, (p, _)) in modes.iter().enumerate() {
        for j in 0..3 {
            write(
                &src.join(p).join(format!("f{j}")),
                &data(256 << 10, (i * 3 + j) as u64),
            );
        }
    }
    for (p, m) in modes {
        fs::set_permissions(src.join(p), fs::Permissions::from_mode(m)).unwrap();
    }
    let (dst, r) = paced_tree_copy(&src, 2 << 20, 100_000);
    let um = umask();
    // Each directory's mode while copying, and whether all its files were in place by then
    // (read before the mode: a directory whose content is all copied may have its final mode
    // already, on a machine loaded enough to delay this look).
    let mid: Vec<(&str, Option<u32>, bool)> = modes
        .iter()
        .map(|(p, _)| {
            let complete = (0..3).all(|j| dst.join(p).join(format!("f{j}")).exists());
            let mode = fs::symlink_metadata(dst.join(p))
                .ok()
                .map(|m| m.mode() & 0o7777);
            (*p, mode, complete)
        })
        .collect();
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(0), "{out}\n{err}");
    for (p, m) in modes {
        let opened_at_once = m & 0o722 == 0o700 && m & !um == m && m & 0o6000 == 0;
        let (_, seen, complete) = *mid.iter().find(|(q, ..)| *q == p).unwrap();
        match seen {
            Some(seen) if opened_at_once => assert_eq!(seen, m, "{p} while copying"),
            Some(seen) if complete && seen == m & !0o6000 => {}
            Some(seen) if m & 0o022 != 0 || m & 0o700 != 0o700 => {
                assert_eq!(seen, 0o700, "{p} while copying")
            }
            _ => {}
        }
        assert_eq!(mode(&dst.join(p)), m & !0o6000, "{p} at the end");
    }
    assert!(
        mid.iter().filter(|(_, m, _)| m.is_some()).count() >= 4,
        "{mid:?}"
    );
}

/// A POSIX ACL in the kernel's xattr form (version 2, entries sorted by tag and id):
/// owner rw, user 65534 rw, group r, mask rw, other none.
fn acl_user_nobody_rw() -> Vec<u8> {
    const UNDEF: u32 = u32::MAX;
    let mut v = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 6u16, UNDEF),
        (0x02, 6, 65534),
        (0x04, 4, UNDEF),
        (0x10, 6, UNDEF),
        (0x20, 0, UNDEF),
    ] {
        v.extend(tag.to_le_bytes());
        v.extend(perm.to_le_bytes());
        v.extend(id.to_le_bytes());
    }
    v
}

fn xattr(p: &Path, name: &str) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::lgetxattr(p, name, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// Issue 8 item 9: `-a` keeps extended attributes (Samba's user.DOSATTRIB) and POSIX ACLs
/// on files and directories, as `cp -a` and `rsync -aAX` do; `--no-xattrs` skips them;
/// without -a they are not copied (cp without --preserve=xattr).
#[test]
fn archive_keeps_extended_attributes_and_acls() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("doc.txt"), b"document");
    fs::create_dir(src.join("share")).unwrap();
    let set = |p: &Path, n: &str, v: &[u8]| {
        rustix::fs::setxattr(p, n, v, rustix::fs::XattrFlags::empty())
    };
    if set(&src.join("doc.txt"), "user.DOSATTRIB", b"0x20").is_err() {
        eprintln!("skipped: this file system has no user xattrs");
        return;
    }
    set(&src.join("share"), "user.note", b"dir attr").unwrap();
    let acl = acl_user_nobody_rw();
    let with_acl = set(&src.join("doc.txt"), "system.posix_acl_access", &acl).is_ok();
    set_mtime(&src.join("doc.txt"), 1_000_000_000);

    let a = t.path().join("a");
    let o = copyscope(&[OsStr::new("-a"), src.as_os_str(), a.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        xattr(&a.join("doc.txt"), "user.DOSATTRIB").as_deref(),
        Some(&b"0x20"[..])
    );
    assert_eq!(
        xattr(&a.join("share"), "user.note").as_deref(),
        Some(&b"dir attr"[..])
    );
    if with_acl {
        assert_eq!(
            xattr(&a.join("doc.txt"), "system.posix_acl_access"),
            Some(acl.clone())
        );
    }
    assert_same_tree(&src, &a);

    for (flags, name) in [(&["-a", "--no-xattrs"][..], "nox"), (&[][..], "plain")] {
        let d = t.path().join(name);
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        args.extend([src.as_os_str(), d.as_os_str()]);
        let o = copyscope(&args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(
            xattr(&d.join("doc.txt"), "user.DOSATTRIB"),
            None,
            "{flags:?}"
        );
        // The ACL is part of the mode, which both copies keep (as `cp -p` keeps it).
        if with_acl {
            assert_eq!(
                xattr(&d.join("doc.txt"), "system.posix_acl_access"),
                Some(acl.clone()),
                "{flags:?}"
            );
        }
    }
}

/// A destination file system that cannot hold extended attributes (ramfs): the file is
/// copied, the run succeeds (exit 0), and the summary says per file what was not kept.
#[test]
fn extended_attributes_the_destination_cannot_hold_are_reported_per_file() {
    if !is_root() {
        eprintln!("skipped: mounting ramfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("doc.txt"), b"document");
    if rustix::fs::setxattr(
        src.join("doc.txt"),
        "user.DOSATTRIB",
        b"0x20",
        rustix::fs::XattrFlags::empty(),
    )
    .is_err()
    {
        eprintln!("skipped: this file system has no user xattrs");
        return;
    }
    let mnt = t.path().join("ramfs");
    fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "ramfs", "ramfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mount -t ramfs");
    let _m = Mount(mnt.clone());
    let o = copyscope(&[OsStr::new("-a"), src.as_os_str(), mnt.join("d").as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(mnt.join("d/doc.txt")).unwrap(), b"document");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("notes (1)")
            && out.contains("doc.txt")
            && out.contains("the destination file system cannot hold user.DOSATTRIB: not kept"),
        "{out}"
    );
}

/// Overwriting as root keeps the existing file's owner without -p (cp writes into the
/// existing file, so a root copy onto a user's file leaves it the user's); -p gives it the
/// source's owner.
#[test]
fn overwrite_as_root_keeps_the_existing_owner_without_p() {
    if !is_root() {
        eprintln!("skipped: giving a file away needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::write(d.join("src"), b"new").unwrap();
    fs::set_permissions(d.join("src"), fs::Permissions::from_mode(0o644)).unwrap();
    let dst = d.join("users_file");
    let reset = || {
        fs::write(&dst, b"old").unwrap();
        rustix::fs::chown(
            &dst,
            Some(rustix::fs::Uid::from_raw(65534)),
            Some(rustix::fs::Gid::from_raw(65534)),
        )
        .unwrap();
        fs::set_permissions(&dst, fs::Permissions::from_mode(0o640)).unwrap();
    };
    for (flags, owner, mode) in [
        (&[][..], 65534, 0o644),
        (&["--no-preserve"][..], 65534, 0o640),
        (&["-p"][..], 0, 0o644),
    ] {
        reset();
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        args.extend([
            d.join("src").into_os_string().leak() as &OsStr,
            dst.as_os_str(),
        ]);
        let o = copyscope(&args);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", text(&o));
        let m = fs::metadata(&dst).unwrap();
        assert_eq!(fs::read(&dst).unwrap(), b"new");
        assert_eq!((m.uid(), m.gid()), (owner, owner), "{flags:?} owner");
        assert_eq!(m.mode() & 0o7777, mode, "{flags:?} mode");
    }
}
