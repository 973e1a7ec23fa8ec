//! Build script: stamps the version `copyscope --version` prints with the git commit the binary
//! is built from (`0.1.0 (d25021b)`, `0.1.0 (d25021b-dirty)` when a build input differs from
//! that commit), or the bare version when built outside a git checkout (a release tarball, a
//! crates.io download). Also compiled into tests/it/package_version.rs, which tests these rules.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the binary is built from: a change to one of them reruns this script, and "-dirty"
/// means one of them differs from the commit (an edited README does not make a build dirty).
pub const BUILD_INPUTS: &[&str] = &["src", "assets", "build.rs", "Cargo.toml", "Cargo.lock"];

fn main() {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let dir = Path::new(&manifest_dir);
    let package_version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets it");
    let commit = git_commit(dir);
    println!(
        "cargo::rustc-env=COPYSCOPE_VERSION={}",
        version_string(&package_version, commit.as_deref())
    );
    for input in BUILD_INPUTS {
        println!("cargo::rerun-if-changed={input}");
    }
    // A commit, checkout or `git add` changes one of these without touching the inputs.
    for file in git_state_files(dir) {
        println!("cargo::rerun-if-changed={}", file.display());
    }
}

/// `0.1.0 (d25021b)`, or `0.1.0` when the commit is unknown.
pub fn version_string(package_version: &str, commit: Option<&str>) -> String {
    match commit {
        Some(c) => format!("{package_version} ({c})"),
        None => package_version.to_string(),
    }
}

/// The short hash of HEAD, with `-dirty` when a tracked build input differs from it; `None`
/// when `dir` is not the top of a git work tree (no git, no `.git`, or a tarball unpacked
/// inside some other checkout, whose commit says nothing about these sources).
pub fn git_commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let hash = git(dir, &["rev-parse", "--short", "HEAD"])?;
    // --no-optional-locks: a build must not rewrite the index (its mtime would rerun us).
    let mut status = vec![
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
    ];
    status.extend_from_slice(BUILD_INPUTS);
    let changes = git(dir, &status)?;
    Some(if changes.is_empty() {
        hash
    } else {
        format!("{hash}-dirty")
    })
}

/// HEAD, the current branch's ref, packed-refs and the index, as far as they exist
/// (cargo reruns a script forever when a file it was told to watch is missing).
fn git_state_files(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_string(), "index".into(), "packed-refs".into()];
    names.extend(git(dir, &["symbolic-ref", "-q", "HEAD"]));
    names
        .iter()
        .filter_map(|name| git(dir, &["rev-parse", "--git-path", name]))
        .map(|p| dir.join(p))
        .filter(|p| p.exists())
        .collect()
}

/// Trimmed stdout of a successful `git -C dir ARGS`, ignoring GIT_DIR and friends from the
/// environment (a build started from a git hook must still describe `dir`).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
