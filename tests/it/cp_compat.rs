//! cp's flags through the real binary: -i answered from a pipe, -n/-f/-i/-u precedence, -P,
//! -d, -v, -x, --exclude, --bwlimit, a missing source among several, and names quoted for the
//! terminal. Cases ported from GNU coreutils' tests/cp/*.sh name their origin.

use crate::util;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use util::*;

/// `copyscope --plain ARGS` with `input` on stdin (None: stdin is /dev/null).
fn with_stdin(args: &[&OsStr], input: Option<&[u8]>) -> Output {
    let mut c = cmd();
    c.args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn copyscope");
    if let Some(bytes) = input {
        let mut stdin = child.stdin.take().unwrap();
        // The reader may exit before reading everything (e.g. `yes |`): ignore EPIPE.
        let _ = stdin.write_all(bytes);
    }
    wait_timeout(child, Duration::from_secs(60))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The -v lines of a plain run (the progress lines and summary are the rest of stdout).
fn verbose_lines(o: &Output) -> Vec<String> {
    stdout(o)
        .lines()
        .filter(|l| l.contains(" -> "))
        .map(str::to_string)
        .collect()
}

fn two_files(t: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let src = t.join("src");
    let dst = t.join("dst");
    write(&src.join("passwd"), b"new contents\n");
    write(&dst.join("passwd"), b"old contents\n");
    (src.join("passwd"), dst)
}

#[test]
fn interactive_without_a_terminal_reads_the_answer_from_stdin() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = two_files(t.path());
    let target = dst.join("passwd");
    let args = [OsStr::new("-i"), src.as_os_str(), dst.as_os_str()];

    // `echo n | copyscope -i …`: asked on stderr as cp asks, kept, exit 0 (cp's status).
    let o = with_stdin(&args, Some(b"n\n"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let question = format!("copyscope: overwrite '{}'? ", target.display());
    assert!(stderr(&o).contains(&question), "{}", text(&o));
    assert_eq!(fs::read(&target).unwrap(), b"old contents\n");

    // `</dev/null`: end of input is "no".
    let o = with_stdin(&args, None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stderr(&o).contains(&question), "{}", text(&o));
    assert_eq!(fs::read(&target).unwrap(), b"old contents\n");

    // `yes | copyscope -i …`: overwritten.
    let o = with_stdin(&args, Some(&b"y\n".repeat(1000)));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(&target).unwrap(), b"new contents\n");
    assert_eq!(
        stdout(&o).matches("overwrite").count(),
        0,
        "the question goes to stderr"
    );
}

#[test]
fn one_question_per_existing_file_answered_in_order() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("s");
    let dst = t.path().join("d");
    for n in ["a", "b", "c"] {
        write(&src.join(n), format!("new {n}").as_bytes());
        write(&dst.join("s").join(n), b"old");
    }
    write(&src.join("fresh"), b"fresh");
    let o = with_stdin(
        &[
            OsStr::new("-i"),
            OsStr::new("-j1"),
            src.as_os_str(),
            dst.as_os_str(),
        ],
        Some(b"yes\nn\nY\n"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(stderr(&o).matches("? ").count(), 3, "{}", text(&o));
    let d = dst.join("s");
    assert_eq!(fs::read(d.join("a")).unwrap(), b"new a");
    assert_eq!(fs::read(d.join("b")).unwrap(), b"old");
    assert_eq!(fs::read(d.join("c")).unwrap(), b"new c");
    assert_eq!(fs::read(d.join("fresh")).unwrap(), b"fresh", "no question");
}

/// Ported from GNU coreutils tests/cp/cp-i.sh: every -f/-i/-n combination, with -v showing
/// whether the copy happened ("'c' -> 'd'" or nothing).
#[test]
fn coreutils_cp_i_flag_combinations() {
    let t = tempfile::tempdir().unwrap();
    let c = t.path().join("c");
    let d = t.path().join("d");
    write(&c, b"c");
    let copied = vec![format!("'{}' -> '{}'", c.display(), d.display())];
    let none: Vec<String> = Vec::new();
    let cases: [(&[&str], &[u8], &Vec<String>); 6] = [
        (&["-vi"], b"n\n", &none),    // ask, answer no
        (&["-vi"], b"y\n", &copied),  // ask, answer yes
        (&["-vni"], b"y\n", &copied), // -i wins over -n (the later one)
        (&["-vin"], b"y\n", &none),   // -n wins over -i (the later one)
        (&["-vfi"], b"y\n", &copied), // ask, answer yes
        (&["-vfn"], b"n\n", &none),   // -n wins over -f
    ];
    for (flags, answer, want) in cases {
        write(&d, b"d");
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        args.extend([c.as_os_str(), d.as_os_str()]);
        let o = with_stdin(&args, Some(answer));
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", text(&o));
        assert_eq!(&verbose_lines(&o), want, "{flags:?}: {}", text(&o));
        let expect: &[u8] = if want.is_empty() { b"d" } else { b"c" };
        assert_eq!(fs::read(&d).unwrap(), expect, "{flags:?}");
    }
    // -n -f in the other order too (cp-i.sh's last case): -n wins whatever the order.
    write(&d, b"d");
    let o = with_stdin(
        &[
            OsStr::new("-v"),
            OsStr::new("-n"),
            OsStr::new("-f"),
            c.as_os_str(),
            d.as_os_str(),
        ],
        Some(b"n\n"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(&d).unwrap(), b"d");
    // coreutils 6.2 forgot to ask when the conflict is inside a directory (cp-i.sh's first case).
    let a = t.path().join("a");
    let b = t.path().join("b");
    write(&a.join("c"), b"new");
    fs::create_dir_all(b.join("a").join("c")).unwrap();
    let o = with_stdin(
        &[OsStr::new("-i"), a.as_os_str(), b.as_os_str()],
        Some(b"n\n"),
    );
    assert!(b.join("a").join("c").is_dir(), "{}", text(&o));
}

#[test]
fn no_dereference_flags_copy_command_line_symlinks_as_symlinks() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("target");
    write(&target, b"data");
    let link = t.path().join("link");
    std::os::unix::fs::symlink("target", &link).unwrap();
    for flag in ["-P", "--no-dereference", "-d"] {
        let out = t.path().join(format!("out{flag}"));
        let o = copyscope(&[OsStr::new(flag), link.as_os_str(), out.as_os_str()]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", text(&o));
        assert_eq!(fs::read_link(&out).unwrap(), Path::new("target"), "{flag}");
    }
    // Without the flag a command-line symlink is followed (cp's default without -r/-a).
    let out = t.path().join("plain");
    let o = copyscope(&[link.as_os_str(), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(fs::symlink_metadata(&out).unwrap().is_file());
    // -L then -P: the later wins, as with cp.
    let out = t.path().join("lp");
    let o = copyscope(&[
        OsStr::new("-L"),
        OsStr::new("-P"),
        link.as_os_str(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(fs::symlink_metadata(&out).unwrap().is_symlink());
}

/// Ported from GNU coreutils tests/cp/link-preserve.sh: `cp -d` (and -a) keep hard links
/// between files of the tree.
#[test]
fn d_keeps_hard_links_within_the_tree() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("a"), b"linked");
    fs::hard_link(src.join("a"), src.join("b")).unwrap();
    fs::create_dir(src.join("sub")).unwrap();
    fs::hard_link(src.join("a"), src.join("sub/c")).unwrap();
    for flag in ["-d", "-a"] {
        let dst = t.path().join(format!("dst{flag}"));
        let o = copyscope(&[OsStr::new(flag), src.as_os_str(), dst.as_os_str()]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", text(&o));
        let ino = |p: &str| fs::metadata(dst.join(p)).unwrap().ino();
        assert_eq!(ino("a"), ino("b"), "{flag}");
        assert_eq!(ino("a"), ino("sub/c"), "{flag}");
        assert_eq!(fs::metadata(dst.join("a")).unwrap().nlink(), 3, "{flag}");
    }
    // Without -d/-a the names are separate copies (cp -r).
    let dst = t.path().join("dst-r");
    let o = copyscope(&[src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_ne!(
        fs::metadata(dst.join("a")).unwrap().ino(),
        fs::metadata(dst.join("b")).unwrap().ino()
    );
}

/// `-a -u` with a hard-link group whose first name is not newer than its destination: as
/// coreutils copy.c, the later names become links to that kept destination (the group stays
/// whole) instead of being judged one by one.
#[test]
fn archive_update_keeps_hard_link_groups_whole() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("s");
    let dst = t.path().join("d");
    write(&src.join("a"), b"src");
    fs::hard_link(src.join("a"), src.join("b")).unwrap();
    set_mtime(&src.join("a"), 1_577_836_800); // 2020
    write(&dst.join("a"), b"dst a newer");
    set_mtime(&dst.join("a"), 1_735_689_600); // 2025
    write(&dst.join("b"), b"dst b older");
    set_mtime(&dst.join("b"), 946_684_800); // 2000
    let mut contents = src.clone().into_os_string();
    contents.push("/.");
    let o = copyscope(&[
        OsStr::new("-a"),
        OsStr::new("-u"),
        &contents,
        dst.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (a, b) = (
        fs::metadata(dst.join("a")).unwrap(),
        fs::metadata(dst.join("b")).unwrap(),
    );
    assert_eq!(a.ino(), b.ino(), "one group: {}", text(&o));
    assert_eq!(fs::read(dst.join("a")).unwrap(), b"dst a newer");
}

#[test]
fn verbose_prints_cp_lines_with_quoted_names() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let evil = OsString::from_vec(b"x\x1b]0;TITLE\x07 y".to_vec());
    write(&src.join("plain.txt"), b"1");
    write(&src.join(&evil), b"2");
    let dst = t.path().join("dst");
    let o = copyscope(&[
        OsStr::new("-v"),
        OsStr::new("-j1"),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let lines = verbose_lines(&o);
    let s = src.display();
    let d = dst.display();
    // As cp -v: the directory it makes comes first.
    assert_eq!(lines.first(), Some(&format!("'{s}' -> '{d}'")), "{lines:?}");
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines.contains(&format!("'{s}/plain.txt' -> '{d}/plain.txt'")),
        "{lines:?}"
    );
    assert!(
        lines.contains(&format!(
            "'{s}/x'$'\\033'']0;TITLE'$'\\a'' y' -> '{d}/x'$'\\033'']0;TITLE'$'\\a'' y'"
        )),
        "{lines:?}"
    );
    assert!(
        !o.stdout.contains(&0x1b),
        "no raw escape reaches the terminal"
    );
    assert_eq!(fs::read(dst.join(&evil)).unwrap(), b"2");
}

#[test]
fn hostile_names_are_quoted_in_errors_and_the_summary() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let dst = t.path().join("dst");
    let names: [&[u8]; 4] = [
        b"t\x1b]0;TITLE\x07",
        b"c\x1b[2J",
        b"new\nline",
        b"bad\xff\xfe",
    ];
    for n in names {
        write(&src.join(OsStr::from_bytes(n)), b"new");
        write(&dst.join("src").join(OsStr::from_bytes(n)), b"old");
    }
    // -n: every file is skipped, and each skip is reported (stderr) and listed (summary).
    let o = copyscope(&[OsStr::new("-n"), src.as_os_str(), dst.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for out in [&o.stdout, &o.stderr] {
        assert!(!out.contains(&0x1b), "raw ESC in output: {}", text(&o));
        assert!(!out.windows(2).any(|w| w == b"\xff\xfe"));
    }
    let err = stderr(&o);
    assert!(err.contains(r"c'$'\033''[2J'"), "{err}");
    assert!(err.contains(r"new'$'\n''line'"), "{err}");
    assert!(err.contains(r"bad'$'\377\376'"), "{err}");
    // Each message stays on one line.
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("destination exists"))
            .count(),
        4,
        "{err}"
    );
    assert!(
        stdout(&o).contains(r"t'$'\033'']0;TITLE'$'\a'"),
        "summary: {}",
        text(&o)
    );
}

#[test]
fn a_missing_source_among_several_is_reported_and_the_rest_copied() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let b = t.path().join("b");
    write(&a, b"a");
    write(&b.join("f"), b"f");
    let missing = t.path().join("x");
    let dst = t.path().join("dst");
    fs::create_dir(&dst).unwrap();
    let o = copyscope(&[
        a.as_os_str(),
        missing.as_os_str(),
        b.as_os_str(),
        dst.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "copyscope: cannot stat '{}': No such file or directory\n",
            missing.display()
        )),
        "{}",
        text(&o)
    );
    assert!(!stderr(&o).contains("os error"));
    assert_eq!(stderr(&o).matches("cannot stat").count(), 1, "{}", text(&o));
    assert!(
        stdout(&o).contains("failed (1)"),
        "the summary lists it: {}",
        text(&o)
    );
    assert_eq!(fs::read(dst.join("a")).unwrap(), b"a");
    assert_eq!(fs::read(dst.join("b/f")).unwrap(), b"f");
    assert!(!dst.join("x").exists());
}

#[test]
fn exclude_uses_gitignore_patterns_relative_to_the_source() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    for p in [
        "keep.txt",
        "a.tmp",
        "deep/er/b.tmp",
        "build/out.o",
        "lib/build/kept.o",
        "x/cache/c",
        "y/cache",
        "p/node_modules/m.js",
        "keep.tmp",
    ] {
        write(&src.join(p), p.as_bytes());
    }
    let dst = t.path().join("dst");
    let o = copyscope(&[
        OsStr::new("--exclude"),
        OsStr::new("*.tmp"),
        OsStr::new("--exclude=/build"),
        OsStr::new("--exclude=cache/"),
        OsStr::new("--exclude"),
        OsStr::new("**/node_modules"),
        OsStr::new("--exclude=!keep.tmp"),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for kept in [
        "keep.txt",
        "lib/build/kept.o",
        "y/cache",
        "keep.tmp",
        "deep/er",
    ] {
        assert!(dst.join(kept).exists(), "{kept} should be copied");
    }
    for gone in [
        "a.tmp",
        "deep/er/b.tmp",
        "build",
        "x/cache",
        "p/node_modules",
    ] {
        assert!(!dst.join(gone).exists(), "{gone} should be excluded");
    }
    // A bad pattern is a usage error before anything is written.
    let o = copyscope(&[
        OsStr::new("--exclude={a,b"),
        src.as_os_str(),
        t.path().join("d2").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!t.path().join("d2").exists());
}

#[test]
fn one_file_system_makes_mount_points_but_does_not_enter_them() {
    if !is_root() {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("d/f"), b"f");
    fs::create_dir(src.join("m")).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "none"])
        .arg(src.join("m"))
        .status();
    if !st.is_ok_and(|s| s.success()) {
        // A container without CAP_SYS_ADMIN: nothing to test -x against.
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    write(&src.join("m/g"), b"on another fs");
    let dst = t.path().join("dst");
    let o = copyscope(&[OsStr::new("-x"), src.as_os_str(), dst.as_os_str()]);
    let dst2 = t.path().join("dst2");
    let o2 = copyscope(&[src.as_os_str(), dst2.as_os_str()]);
    let _ = Command::new("umount").arg(src.join("m")).status();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(dst.join("d/f")).unwrap(), b"f");
    assert!(
        dst.join("m").is_dir(),
        "the mount point is made, as cp -x does"
    );
    assert!(!dst.join("m/g").exists());
    assert_eq!(o2.status.code(), Some(0), "{}", text(&o2));
    assert!(dst2.join("m/g").exists(), "without -x the mount is copied");
}

#[test]
fn bwlimit_paces_the_copy_and_rejects_unitless_rates() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("big");
    write(&src, &data(6 << 20, 7));
    let dst = t.path().join("out");
    let start = Instant::now();
    let o = copyscope(&[
        OsStr::new("--bwlimit"),
        OsStr::new("2M"),
        OsStr::new("--no-sync"),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read(&dst).unwrap(), fs::read(&src).unwrap());
    // 6 MiB at 2 MiB/s: 3 s less the 100 ms burst, plus start-up (however slow a loaded
    // machine makes that: the limit is what is checked).
    assert!((2.8..60.0).contains(&secs), "took {secs:.2} s");
    for bad in ["1000", "1.5", "2X", "0k", "1.5.2M"] {
        let o = copyscope(&[
            OsStr::new("--bwlimit"),
            OsStr::new(bad),
            src.as_os_str(),
            t.path().join("never").as_os_str(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(stderr(&o).contains("--bwlimit"), "{bad}");
    }
    assert!(!t.path().join("never").exists());
}

#[test]
fn a_file_swapped_for_a_symlink_mid_copy_gets_a_clear_message() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("a"), &data(3 << 20, 3));
    write(&src.join("b"), b"small");
    write(&t.path().join("secret"), b"not to be copied");
    let dst = t.path().join("dst");
    let mut c = cmd();
    c.env("COPYSCOPE_TEST_THROTTLE_BPS", (2 << 20).to_string())
        .args([OsStr::new("-j1"), src.as_os_str(), dst.as_os_str()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    // The scan has queued both files; while `a` is copied, `b` becomes a symlink.
    std::thread::sleep(Duration::from_millis(500));
    fs::remove_file(src.join("b")).unwrap();
    std::os::unix::fs::symlink(t.path().join("secret"), src.join("b")).unwrap();
    let o = wait_timeout(child, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(err.contains("was replaced by a symlink"), "{}", text(&o));
    assert!(!err.contains("Too many levels"), "{err}");
    assert!(!dst.join("b").exists(), "nothing under b's name");
    assert_eq!(fs::read(dst.join("a")).unwrap().len(), 3 << 20);
}

/// `--verify`: the phase is announced as copying+verifying from the start, and the 2-second
/// line counts the read-back (no "avg 250 GB/s", no "ETA 0:00" while a file is read back).
#[test]
fn verify_progress_line_is_sensible() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("big");
    write(&src, &data(6 << 20, 5));
    let mut c = cmd();
    c.env("COPYSCOPE_TEST_THROTTLE_BPS", (2 << 20).to_string())
        .args([
            OsStr::new("--verify"),
            src.as_os_str(),
            t.path().join("out").as_os_str(),
        ]);
    let o = run_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.contains("copying+verifying") && l.contains("read back"))
        .unwrap_or_else(|| panic!("no verify progress line: {out}"));
    assert!(!line.contains("TB/s") && !line.contains("GB/s"), "{line}");
    assert!(!line.contains(" 100 %"), "{line}");
    assert!(!line.contains("ETA 0:00"), "{line}");
    assert!(out.contains("verified 1 file: all match"), "{out}");
    assert!(!out.contains("verifying: reading the copies back"), "{out}");
}

/// cp's wording for I/O errors, without "(os error N)": an unreadable file and an unreadable
/// directory, run as nobody when the tests run as root (root reads anything).
#[test]
fn io_errors_are_worded_as_cp_words_them() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let base = t.path();
    let src = base.join("src");
    write(&src.join("ok"), b"ok");
    write(&src.join("secret"), b"no");
    write(&src.join("closed/inner"), b"no");
    fs::set_permissions(src.join("secret"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(src.join("closed"), fs::Permissions::from_mode(0o000)).unwrap();
    let dst = base.join("dst");
    let mut c = unprivileged_cmd(base, true);
    c.arg("--plain").arg(&src).arg(&dst);
    let o = run_timeout(c, Duration::from_secs(60));
    fs::set_permissions(src.join("closed"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    let s = src.display();
    assert!(
        err.contains(&format!(
            "copyscope: cannot open '{s}/secret' for reading: Permission denied\n"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "copyscope: cannot open directory '{s}/closed': Permission denied\n"
        )),
        "{err}"
    );
    assert!(!text(&o).contains("os error"), "{}", text(&o));
    assert_eq!(fs::read(dst.join("ok")).unwrap(), b"ok");
}

/// `-i -u` (cp): only a newer source is asked about; an older one is skipped without a question.
#[test]
fn interactive_update_asks_only_about_newer_sources() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("s");
    let dst = t.path().join("d");
    write(&src.join("newer"), b"new");
    write(&src.join("older"), b"new");
    set_mtime(&src.join("newer"), 1_735_689_600); // 2025
    set_mtime(&src.join("older"), 946_684_800); // 2000
    for n in ["newer", "older"] {
        write(&dst.join("s").join(n), b"old");
        set_mtime(&dst.join("s").join(n), 1_577_836_800); // 2020
    }
    let o = with_stdin(
        &[OsStr::new("-iu"), src.as_os_str(), dst.as_os_str()],
        Some(b"y\ny\n"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("overwrite").count(), 1, "{err}");
    assert!(err.contains("s/newer'? "), "{err}");
    assert_eq!(fs::read(dst.join("s/newer")).unwrap(), b"new");
    assert_eq!(fs::read(dst.join("s/older")).unwrap(), b"old");
}

/// No "(os error N)" tail anywhere: a recording that cannot be written, a replay of a
/// directory, a missing source.
#[test]
fn no_os_error_tails() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("f");
    write(&f, b"x");
    let rec = t.path().join("no/such/dir/rec.jsonl");
    let o = copyscope(&[
        OsStr::new("--record"),
        rec.as_os_str(),
        f.as_os_str(),
        t.path().join("g").as_os_str(),
    ]);
    let all = text(&o);
    assert!(
        all.contains(&format!(
            "copyscope: recording '{}': No such file or directory",
            rec.display()
        )),
        "{all}"
    );
    let o = run_timeout(
        {
            let mut c = Command::new(bin());
            c.args([
                OsStr::new("replay"),
                OsStr::new("--plain"),
                t.path().as_os_str(),
            ]);
            c
        },
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "cannot read recording '{}': Is a directory",
            t.path().display()
        )),
        "{}",
        text(&o)
    );
    let o = copyscope(&[t.path().join("nope").as_os_str(), f.as_os_str()]);
    assert!(!text(&o).contains("os error"), "{}", text(&o));
    // An export that cannot be written (the recording made above by --record on a good path).
    let good = t.path().join("rec.jsonl");
    let o = copyscope(&[
        OsStr::new("--record"),
        good.as_os_str(),
        f.as_os_str(),
        t.path().join("h").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let png = t.path().join("no/such/x.png");
    let o = run_timeout(
        {
            let mut c = Command::new(bin());
            c.args([OsStr::new("export"), good.as_os_str(), OsStr::new("--png")])
                .arg(&png);
            c
        },
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "copyscope: writing '{}': No such file or directory",
            png.display()
        )),
        "{}",
        text(&o)
    );
    assert!(!all.contains("os error"), "{all}");
}
