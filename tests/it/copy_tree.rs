//! Trees and cp semantics through the real binary: contents and metadata, symlinks,
//! specials, names, sparse files, hard links, conflict policies, verify and JSON.

use crate::util;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::time::Duration;

use util::*;

fn make_tree(root: &Path) {
    write(&root.join("a.txt"), b"hello\n");
    write(&root.join("empty"), b"");
    write(&root.join("sub/big.bin"), &data(3 << 20, 1));
    write(&root.join("sub/deeper/x"), &data(12345, 2));
    fs::set_permissions(root.join("sub/deeper/x"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o755)).unwrap();
    symlink("../a.txt", root.join("sub/link")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
    set_mtime(&root.join("a.txt"), 1_000_000_000);
    set_mtime(&root.join("sub/big.bin"), 1_100_000_000);
    fs::set_permissions(root.join("sub/deeper"), fs::Permissions::from_mode(0o750)).unwrap();
    set_mtime(&root.join("sub/deeper"), 1_200_000_000);
    set_mtime(&root.join("sub"), 1_300_000_000);
}

#[test]
fn tree_copy_keeps_content_modes_times_and_symlinks() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    make_tree(&src);
    let dst = t.path().join("dst");
    let o = copyscope(&[src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_same_tree(&src, &dst);
    assert!(temp_leftovers(&dst).is_empty());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("speed to cache") && out.contains("durable"),
        "{out}"
    );
    assert!(out.contains("in 6 files"), "{out}");
}

#[test]
fn copy_into_existing_dir_several_sources_and_t_and_big_t() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let b = t.path().join("b");
    write(&a, b"A");
    write(&b.join("inner"), b"B");
    let d = t.path().join("d");
    fs::create_dir(&d).unwrap();
    let o = copyscope(&[a.as_os_str(), b.as_os_str(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(d.join("a")).unwrap(), b"A");
    assert_eq!(fs::read(d.join("b/inner")).unwrap(), b"B");
    let e = t.path().join("e");
    fs::create_dir(&e).unwrap();
    let o = copyscope(&[
        OsStr::new("-t"),
        e.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(e.join("a").is_file() && e.join("b/inner").is_file());
    // -T: DEST is the target even though it is an existing directory (merge).
    let f = t.path().join("f");
    fs::create_dir(&f).unwrap();
    let o = copyscope(&[OsStr::new("-T"), b.as_os_str(), f.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(f.join("inner").is_file());
    // -r is accepted for habit.
    let g = t.path().join("g");
    let o = copyscope(&[OsStr::new("-r"), b.as_os_str(), g.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(g.join("inner").is_file());
}

#[test]
fn symlinks_command_line_followed_tree_kept_l_and_a() {
    let t = tempfile::tempdir().unwrap();
    let real = t.path().join("real");
    write(&real.join("f"), b"data");
    symlink("f", real.join("lf")).unwrap();
    let cl = t.path().join("cl");
    symlink(&real, &cl).unwrap();
    // Command-line symlink followed (cp -H), tree symlink copied as a symlink.
    let d1 = t.path().join("d1");
    let o = copyscope(&[cl.as_os_str(), d1.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(d1.symlink_metadata().unwrap().is_dir());
    assert_eq!(fs::read_link(d1.join("lf")).unwrap(), Path::new("f"));
    // -L: dereferenced.
    let d2 = t.path().join("d2");
    let o = copyscope(&[OsStr::new("-L"), cl.as_os_str(), d2.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(d2.join("lf").symlink_metadata().unwrap().is_file());
    assert_eq!(fs::read(d2.join("lf")).unwrap(), b"data");
    // -a: never followed, even on the command line.
    let d3 = t.path().join("d3");
    let o = copyscope(&[OsStr::new("-a"), cl.as_os_str(), d3.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(d3.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(fs::read_link(&d3).unwrap(), real);
}

#[test]
fn symlink_loop_is_copied_as_links_and_fails_cleanly_with_l() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("ok"), b"ok");
    symlink("b", src.join("a")).unwrap();
    symlink("a", src.join("b")).unwrap();
    symlink(".", src.join("self")).unwrap();
    let d = t.path().join("d");
    let o = copyscope(&[src.as_os_str(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read_link(d.join("a")).unwrap(), Path::new("b"));
    assert_eq!(fs::read_link(d.join("self")).unwrap(), Path::new("."));
    let d2 = t.path().join("d2");
    let o = copyscope(&[OsStr::new("-L"), src.as_os_str(), d2.as_os_str()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("symlink loop"), "{err}");
    assert_eq!(fs::read(d2.join("ok")).unwrap(), b"ok");
}

#[test]
fn fifo_socket_and_device_in_a_tree() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("f"), b"x");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        src.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o640),
        0,
    )
    .unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(src.join("sock")).unwrap();
    let dev_made = is_root()
        && rustix::fs::mknodat(
            rustix::fs::CWD,
            src.join("null"),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 3),
        )
        .is_ok();
    let d = t.path().join("d");
    // A FIFO opened for reading would block forever: the timeout proves it is never opened.
    let mut c = cmd();
    c.arg(&src).arg(&d);
    let o = run_timeout(c, Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let fm = d.join("fifo").symlink_metadata().unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fm.file_type()));
    assert_eq!(fm.mode() & 0o777, 0o640);
    assert!(!d.join("sock").exists(), "sockets are skipped");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sock") && err.contains("socket skipped"),
        "{err}"
    );
    if dev_made {
        let m = d.join("null").symlink_metadata().unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(
            &m.file_type()
        ));
        assert_eq!(m.rdev(), rustix::fs::makedev(1, 3));
    } else {
        eprintln!("device node part skipped: not root or mknod not permitted");
    }
}

#[test]
fn odd_names_non_utf8_and_255_bytes_and_empty_files() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    fs::create_dir(&src).unwrap();
    let bad = OsStr::from_bytes(b"bad-\xff\xfe-name");
    write(&src.join(bad), b"non utf8");
    let long = "L".repeat(255);
    write(&src.join(&long), b"long name");
    let long_dir = "D".repeat(255);
    write(&src.join(&long_dir).join(&long), b"");
    write(&src.join("empty"), b"");
    write(&src.join("sp ace\nnewline"), b"nl");
    let d = t.path().join("d");
    let o = copyscope(&[src.as_os_str(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_same_tree(&src, &d);
    assert_eq!(fs::read(d.join(bad)).unwrap(), b"non utf8");
    assert_eq!(fs::read(d.join(&long_dir).join(&long)).unwrap(), b"");
}

/// Builds a chain of 255-byte directories deeper than PATH_MAX with *at calls.
#[test]
fn paths_deeper_than_path_max() {
    use rustix::fs::{AtFlags, Mode, OFlags, mkdirat, openat};
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    fs::create_dir(&src).unwrap();
    let name = "d".repeat(250);
    let levels = 20; // 20 × 251 bytes ≈ 5 KB > PATH_MAX (4096)
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
    let mut fd = rustix::fs::open(&src, dir_flags, Mode::empty()).unwrap();
    for _ in 0..levels {
        mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        fd = openat(&fd, name.as_str(), dir_flags, Mode::empty()).unwrap();
    }
    let f = openat(
        &fd,
        "leaf",
        OFlags::WRONLY | OFlags::CREATE,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&f, b"deep data").unwrap();
    drop(f);
    let d = t.path().join("d");
    let o = copyscope(&[src.as_os_str(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut fd = rustix::fs::open(&d, dir_flags, Mode::empty()).unwrap();
    for _ in 0..levels {
        fd = openat(&fd, name.as_str(), dir_flags, Mode::empty()).unwrap();
    }
    let st = rustix::fs::statat(&fd, "leaf", AtFlags::empty()).unwrap();
    assert_eq!(st.st_size, 9);
    let leaf = openat(&fd, "leaf", OFlags::RDONLY, Mode::empty()).unwrap();
    let mut buf = [0u8; 32];
    let n = rustix::io::read(&leaf, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"deep data");
    // Clean up with the same relative walk (remove_dir_all handles long paths itself).
}

#[test]
fn sparse_file_keeps_its_holes() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("sparse");
    let f = fs::File::create(&src).unwrap();
    f.set_len(1 << 30).unwrap(); // 1 GiB logical
    drop(f);
    {
        use std::os::unix::fs::FileExt;
        let f = fs::OpenOptions::new().write(true).open(&src).unwrap();
        f.write_all_at(&data(65536, 7), 100 << 20).unwrap();
        f.write_all_at(b"tail", (1 << 30) - 4).unwrap();
    }
    let dst = t.path().join("copy");
    let o = copyscope(&[src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (ms, md) = (fs::metadata(&src).unwrap(), fs::metadata(&dst).unwrap());
    assert_eq!(md.len(), 1 << 30);
    assert!(
        md.blocks() <= ms.blocks() + 16,
        "copy {} blocks, source {}",
        md.blocks(),
        ms.blocks()
    );
    assert!(
        md.blocks() < 4096,
        "holes were filled: {} blocks",
        md.blocks()
    );
    use std::os::unix::fs::FileExt;
    let g = fs::File::open(&dst).unwrap();
    let mut buf = vec![0u8; 65536];
    g.read_exact_at(&mut buf, 100 << 20).unwrap();
    assert_eq!(buf, data(65536, 7));
    let mut tail = [0u8; 4];
    g.read_exact_at(&mut tail, (1 << 30) - 4).unwrap();
    assert_eq!(&tail, b"tail");
}

#[test]
fn archive_keeps_hard_links_and_ownership() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("one"), &data(10000, 3));
    fs::hard_link(src.join("one"), src.join("sub_two")).unwrap();
    if is_root() {
        rustix::fs::chown(
            src.join("one"),
            Some(rustix::fs::Uid::from_raw(65534)),
            Some(rustix::fs::Gid::from_raw(65534)),
        )
        .unwrap();
    }
    let d = t.path().join("d");
    let o = copyscope(&[OsStr::new("-a"), src.as_os_str(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (a, b) = (
        fs::metadata(d.join("one")).unwrap(),
        fs::metadata(d.join("sub_two")).unwrap(),
    );
    assert_eq!(a.ino(), b.ino(), "hard link kept");
    if is_root() {
        assert_eq!((a.uid(), a.gid()), (65534, 65534));
    }
    // Without -a the two names become two files.
    let d2 = t.path().join("d2");
    let o = copyscope(&[src.as_os_str(), d2.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_ne!(
        fs::metadata(d2.join("one")).unwrap().ino(),
        fs::metadata(d2.join("sub_two")).unwrap().ino()
    );
}

#[test]
fn overwrite_policies() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("s");
    let dst = t.path().join("d");
    write(&src, b"new");
    write(&dst, b"old");
    set_mtime(&src, 2_000_000_000);
    set_mtime(&dst, 1_000_000_000);
    let o = copyscope(&[OsStr::new("-n"), src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(&dst).unwrap(), b"old");
    let o = copyscope(&[OsStr::new("-u"), src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(&dst).unwrap(), b"new", "source newer: updated");
    write(&dst, b"newest");
    set_mtime(&dst, 2_100_000_000);
    let o = copyscope(&[
        OsStr::new("--overwrite=update"),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        fs::read(&dst).unwrap(),
        b"newest",
        "destination newer: kept"
    );
    // Default without a terminal: overwrite, like cp.
    let o = copyscope(&[src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(&dst).unwrap(), b"new");
    let o = copyscope(&[OsStr::new("-i"), src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn verify_fsync_no_sync_and_no_preserve() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    make_tree(&src);
    let d = t.path().join("d");
    let o = copyscope(&[OsStr::new("--verify"), src.as_os_str(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("verified 4 files: all match"), "{out}");
    assert!(out.contains("DONTNEED"), "{out}");
    // The durable rate of a verified copy counts each file's read-back: said so.
    assert!(
        out.contains("(fsync per file and read back: --verify)"),
        "{out}"
    );
    assert_same_tree(&src, &d);
    let d2 = t.path().join("d2");
    let o = copyscope(&[OsStr::new("--fsync"), src.as_os_str(), d2.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("fsync per file"));
    let d3 = t.path().join("d3");
    let o = copyscope(&[
        OsStr::new("--no-sync"),
        OsStr::new("--no-preserve"),
        src.as_os_str(),
        d3.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--no-sync"));
    let m = fs::metadata(d3.join("a.txt")).unwrap();
    assert_ne!(m.mtime(), 1_000_000_000, "--no-preserve drops the mtime");
    assert_eq!(m.mode() & 0o7000, 0, "--no-preserve drops setuid");
}

#[test]
fn reflink_always_fails_per_file_where_cloning_is_impossible() {
    let t = tempfile::tempdir().unwrap();
    let mnt = t.path().join("m");
    let Some(_m) = (if is_root() {
        Mount::tmpfs(&mnt, "size=8m")
    } else {
        None
    }) else {
        eprintln!("skipped: needs root to mount a tmpfs (which cannot clone)");
        return;
    };
    let src = t.path().join("f");
    write(&src, b"abc");
    let o = copyscope(&[
        OsStr::new("--reflink=always"),
        src.as_os_str(),
        mnt.join("f").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!mnt.join("f").exists());
    assert!(temp_leftovers(&mnt).is_empty());
    let o = copyscope(&[
        OsStr::new("--reflink=auto"),
        src.as_os_str(),
        mnt.join("f").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(mnt.join("f")).unwrap(), b"abc");
}

#[test]
fn json_lines_are_valid_and_end_with_a_summary() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    make_tree(&src);
    let d = t.path().join("d");
    // --plain and --json conflict: a bare command, not util::cmd().
    let mut c = std::process::Command::new(bin());
    c.args([
        OsStr::new("--json"),
        OsStr::new("--interval"),
        OsStr::new("20"),
        src.as_os_str(),
        d.as_os_str(),
    ]);
    let o = run_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert_eq!(last["exit_code"], 0);
    assert_eq!(last["files_copied"], 6);
    let kinds: Vec<&str> = lines
        .iter()
        .filter(|v| v["type"] == "event")
        .filter_map(|v| v["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"file_done") && kinds.contains(&"scan_done"),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"flush_started") && kinds.contains(&"flush_done"),
        "{kinds:?}"
    );
}

/// Pseudo-files whose size says 0 (/proc, /sys) are read to their end and copied, as cp
/// copies them (exit 0, the bytes read).
#[test]
fn zero_size_pseudo_files_are_copied_to_their_end() {
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().join("cpuinfo");
    let o = copyscope(&[OsStr::new("/proc/self/status"), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let got = fs::read_to_string(&dst).unwrap();
    assert!(got.starts_with("Name:") && got.contains("\nPid:"), "{got}");
}

/// A POSIX access ACL as the kernel stores it (version 2, then tag/perm/id entries).
fn acl_xattr(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in entries {
        v.extend_from_slice(&tag.to_le_bytes());
        v.extend_from_slice(&perm.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
    }
    v
}

/// A copy that keeps modes keeps POSIX ACLs too (as cp -p does): with an ACL the group
/// bits are only its mask, so dropping it would give the owning group the mask's rights.
#[test]
fn acls_are_kept_with_the_modes() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("f"), b"acl");
    let f = src.join("f");
    // user::rw- user:nobody:r-- group::--- mask::r-- other::---
    let any = u32::MAX;
    let acl = acl_xattr(&[
        (0x01, 6, any),
        (0x02, 4, 65534),
        (0x04, 0, any),
        (0x10, 4, any),
        (0x20, 0, any),
    ]);
    if rustix::fs::setxattr(
        &f,
        "system.posix_acl_access",
        &acl,
        rustix::fs::XattrFlags::empty(),
    )
    .is_err()
    {
        return eprintln!("skipped: no POSIX ACLs on the temporary directory's file system");
    }
    for args in [vec![], vec![OsStr::new("-p")]] {
        let dst = t.path().join(format!("dst{}", args.len()));
        let mut a = args.clone();
        a.extend([src.as_os_str(), dst.as_os_str()]);
        let o = copyscope(&a);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let mut buf = vec![0u8; 256];
        let n = rustix::fs::getxattr(dst.join("f"), "system.posix_acl_access", &mut buf)
            .expect("the ACL is on the copy");
        assert_eq!(&buf[..n], &acl[..], "{args:?}");
        let mode = fs::metadata(dst.join("f")).unwrap().mode() & 0o777;
        assert_eq!(mode, fs::metadata(&f).unwrap().mode() & 0o777);
    }
}
