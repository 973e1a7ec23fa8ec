//! The dependency policy of deny.toml, checked on every test run: each crate built for the
//! targets it names carries an allowed licence, no crate comes in two versions unless its
//! pair is listed under `bans.skip` (and every listed pair still exists), and every crate
//! comes from crates.io. The graph is `cargo tree`'s, which resolves features as the build
//! does; cargo-deny reads the same file where it is installed (docs/dependencies.md).

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The strings of the array `key = [ … ]` inside the `[section]` of a TOML file, or of the
/// `field = "…"` entries of its inline tables: the subset deny.toml uses.
fn toml_array(text: &str, section: &str, key: &str, field: Option<&str>) -> Vec<String> {
    let header = format!("[{section}]");
    let body = text
        .split_once(&header)
        .unwrap_or_else(|| panic!("deny.toml has no {header}"))
        .1;
    let body = body.split("\n[").next().unwrap_or(body);
    let array = body
        .split_once(&format!("\n{key} = ["))
        .unwrap_or_else(|| panic!("{header} has no {key}"))
        .1;
    let array = array.split_once("\n]").expect("the array is closed").0;
    array
        .lines()
        .map(|l| l.split_once('#').map_or(l, |(code, _)| code).trim())
        .filter_map(|l| match field {
            None => quoted(l),
            Some(f) => l
                .split_once(&format!("{f} = "))
                .and_then(|(_, rest)| quoted(rest)),
        })
        .collect()
}

fn quoted(s: &str) -> Option<String> {
    let s = s.trim_start().strip_prefix('"')?;
    Some(s.split_once('"')?.0.to_string())
}

fn deny_toml() -> String {
    fs::read_to_string(root().join("deny.toml")).expect("deny.toml is readable")
}

fn targets() -> Vec<String> {
    let text = deny_toml();
    let line = text
        .lines()
        .find(|l| l.starts_with("targets = ["))
        .expect("[graph] targets");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// `cargo tree` for one target, normal, build and dev edges, one line per crate.
fn cargo_tree(target: &str, extra: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args([
            "tree",
            "--locked",
            "--target",
            target,
            "-e",
            "normal,build,dev",
        ])
        .args(["--prefix", "none"])
        .args(extra)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("cargo tree prints UTF-8")
}

/// Every crate of the graph as (`name vVERSION`, licence expression).
fn crates_with_licences(target: &str) -> BTreeSet<(String, String)> {
    cargo_tree(target, &["--format", "{p}|{l}"])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (p, lic) = l.split_once('|').expect("{p}|{l}");
            let lic = lic.trim_end_matches(" (*)").trim();
            let p = p.split(" (").next().unwrap_or(p).trim();
            (p.to_string(), lic.to_string())
        })
        .collect()
}

/// An SPDX expression (`A OR B`, `A AND (B OR C)`, `A WITH EXCEPTION`, and the old `A/B`)
/// holds if some choice of its alternatives uses allowed licences only. An exception only
/// grants more, so `A WITH X` needs `A`.
fn licence_allowed(expr: &str, allow: &[String]) -> bool {
    let spaced = expr
        .replace('/', " OR ")
        .replace('(', " ( ")
        .replace(')', " ) ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut pos = 0;
    let ok = spdx_or(&tokens, &mut pos, allow);
    assert_eq!(
        pos,
        tokens.len(),
        "licence expression {expr:?} parses whole"
    );
    ok
}

fn spdx_or(t: &[&str], pos: &mut usize, allow: &[String]) -> bool {
    let mut ok = spdx_and(t, pos, allow);
    while t.get(*pos) == Some(&"OR") {
        *pos += 1;
        ok |= spdx_and(t, pos, allow);
    }
    ok
}

fn spdx_and(t: &[&str], pos: &mut usize, allow: &[String]) -> bool {
    let mut ok = spdx_one(t, pos, allow);
    while t.get(*pos) == Some(&"AND") {
        *pos += 1;
        ok &= spdx_one(t, pos, allow);
    }
    ok
}

fn spdx_one(t: &[&str], pos: &mut usize, allow: &[String]) -> bool {
    let token = t.get(*pos).copied().expect("a licence or '('");
    *pos += 1;
    let ok = if token == "(" {
        let inner = spdx_or(t, pos, allow);
        assert_eq!(t.get(*pos), Some(&")"), "parentheses close");
        *pos += 1;
        inner
    } else {
        allow.iter().any(|a| a == token)
    };
    if t.get(*pos) == Some(&"WITH") {
        *pos += 2;
    }
    ok
}

#[test]
fn the_licence_expression_reader_follows_spdx() {
    let allow: Vec<String> = ["MIT", "Apache-2.0"].map(String::from).to_vec();
    assert!(licence_allowed("MIT OR Apache-2.0", &allow));
    assert!(licence_allowed("Unlicense/MIT", &allow));
    assert!(licence_allowed(
        "Apache-2.0 WITH LLVM-exception OR GPL-3.0",
        &allow
    ));
    assert!(!licence_allowed(
        "(MIT OR Apache-2.0) AND Unicode-3.0",
        &allow
    ));
    assert!(!licence_allowed("GPL-2.0 OR LGPL-2.1", &allow));
    assert!(!licence_allowed("MIT AND GPL-3.0", &allow));
    assert!(licence_allowed("GPL-3.0 OR (MIT AND Apache-2.0)", &allow));
}

#[test]
fn every_crate_carries_an_allowed_licence_and_every_allowed_licence_is_used() {
    let allow = toml_array(&deny_toml(), "licenses", "allow", None);
    assert!(allow.len() >= 3, "read the allow list: {allow:?}");
    let mut used = BTreeSet::new();
    for target in targets() {
        for (krate, lic) in crates_with_licences(&target) {
            assert!(!lic.is_empty(), "{krate} ({target}) states no licence");
            assert!(
                licence_allowed(&lic, &allow),
                "{krate} ({target}) is under {lic:?}, which deny.toml does not allow"
            );
            for a in &allow {
                if lic
                    .split(|c: char| c.is_whitespace() || "()/".contains(c))
                    .any(|w| w == a)
                {
                    used.insert(a.clone());
                }
            }
        }
    }
    let unused: Vec<_> = allow.iter().filter(|a| !used.contains(*a)).collect();
    assert!(
        unused.is_empty(),
        "deny.toml allows licences no crate uses: {unused:?}"
    );
}

#[test]
fn only_the_listed_crates_come_in_two_versions() {
    let skip: BTreeSet<String> = toml_array(&deny_toml(), "bans", "skip", Some("crate"))
        .into_iter()
        .map(|c| c.replace('@', " v"))
        .collect();
    assert!(!skip.is_empty(), "read bans.skip");
    let mut seen_duplicates = BTreeSet::new();
    for target in targets() {
        let dups = cargo_tree(&target, &["--duplicates", "--depth", "0"]);
        let dups: BTreeSet<String> = dups
            .lines()
            .map(|l| l.split(" (").next().unwrap_or(l).trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        for name in dups.iter().map(|d| d.split(" v").next().unwrap_or(d)) {
            let versions: Vec<_> = dups
                .iter()
                .filter(|d| d.starts_with(&format!("{name} v")))
                .collect();
            assert!(
                versions.iter().any(|v| skip.contains(*v)),
                "{name} comes in {versions:?} ({target}) and deny.toml lists none of them under bans.skip"
            );
        }
        seen_duplicates.extend(dups);
    }
    let stale: Vec<_> = skip.difference(&seen_duplicates).collect();
    assert!(
        stale.is_empty(),
        "bans.skip lists versions that are no longer a duplicate: {stale:?}"
    );
}

#[test]
fn every_crate_comes_from_crates_io() {
    let lock = fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock is readable");
    let sources: BTreeSet<&str> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("source = "))
        .collect();
    let crates_io = "\"registry+https://github.com/rust-lang/crates.io-index\"";
    assert_eq!(sources.into_iter().collect::<Vec<_>>(), vec![crates_io]);
}
