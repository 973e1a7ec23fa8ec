//! `copyscope --version` names the commit it was built from: the built binary against git,
//! and build.rs's rules (clean, `-dirty`, no git, a tarball inside another checkout) on
//! throwaway repositories.

use crate::build_script;
use crate::util;

use std::fs;
use std::path::Path;
use std::process::Command;

use build_script::{git_commit, version_string};

/// Runs git in `dir` with a fixed identity, failing the test on error.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A crate-shaped repository with one commit.
fn repo_with_commit(dir: &Path) -> String {
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    fs::write(dir.join("README.md"), "x\n").unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "one"]);
    git(dir, &["rev-parse", "--short", "HEAD"])
}

#[test]
fn built_binary_reports_package_version_and_this_checkout_commit() {
    let out = Command::new(util::bin()).arg("--version").output().unwrap();
    assert!(out.status.success());
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let expected_start = format!("copyscope {}", env!("CARGO_PKG_VERSION"));
    assert!(line.starts_with(&expected_start), "{line}");
    // In a checkout (CI clones one), the commit is HEAD's; from a tarball, the bare version.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    match git_commit(dir) {
        Some(commit) => {
            let head = git(dir, &["rev-parse", "--short", "HEAD"]);
            assert!(commit.starts_with(&head), "{commit} vs HEAD {head}");
            assert!(
                line.contains(&format!("({head}")),
                "{line} lacks HEAD {head}"
            );
        }
        None => assert_eq!(line, expected_start),
    }
}

#[test]
fn clean_checkout_gives_the_short_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let head = repo_with_commit(tmp.path());
    assert_eq!(git_commit(tmp.path()), Some(head.clone()));
    assert_eq!(
        version_string("0.1.0", Some(&head)),
        format!("0.1.0 ({head})")
    );
}

#[test]
fn edited_build_input_is_dirty_but_readme_and_untracked_files_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let head = repo_with_commit(tmp.path());
    fs::write(tmp.path().join("README.md"), "changed\n").unwrap();
    fs::write(tmp.path().join("src/new_untracked.rs"), "\n").unwrap();
    assert_eq!(git_commit(tmp.path()), Some(head.clone()));
    fs::write(tmp.path().join("src/main.rs"), "fn main() { }\n").unwrap();
    assert_eq!(git_commit(tmp.path()), Some(format!("{head}-dirty")));
    // Staged but not committed is still not the commit.
    git(tmp.path(), &["add", "src/main.rs"]);
    assert_eq!(git_commit(tmp.path()), Some(format!("{head}-dirty")));
}

#[test]
fn without_git_the_version_is_bare() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("Cargo.toml"), "[package]\n").unwrap();
    assert_eq!(git_commit(tmp.path()), None);
    assert_eq!(version_string("0.1.0", None), "0.1.0");
}

#[test]
fn tarball_unpacked_inside_another_checkout_does_not_borrow_its_commit() {
    let tmp = tempfile::tempdir().unwrap();
    repo_with_commit(tmp.path());
    let unpacked = tmp.path().join("target/package/copyscope-0.1.0");
    fs::create_dir_all(unpacked.join("src")).unwrap();
    fs::write(unpacked.join("Cargo.toml"), "[package]\n").unwrap();
    assert_eq!(git_commit(&unpacked), None);
}
