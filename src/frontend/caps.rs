//! What the terminal and the locale can show: whether the full-screen TUI can run at all
//! (TERM names a terminal with a terminfo entry, and is not `dumb`) and whether Unicode glyphs
//! can be drawn (the locale's character set is UTF-8). Pure functions over the environment,
//! so tests pass it in.

use std::path::{Path, PathBuf};

/// Why the TUI cannot run on this terminal, in words for a one-line note; None when it can.
pub fn tui_blocker(var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let term = var("TERM").unwrap_or_default();
    if term.is_empty() {
        return Some("TERM is not set".into());
    }
    if term == "dumb" {
        return Some("TERM=dumb".into());
    }
    if !terminfo_dirs(var).iter().any(|d| has_entry(d, &term)) {
        return Some(format!("no terminfo entry for TERM={term}"));
    }
    None
}

/// True when the locale's character set is UTF-8. The first of LC_ALL, LC_CTYPE and LANG
/// that is set and not empty decides (POSIX precedence); none at all is the "C" locale.
pub fn utf8_locale(var: &dyn Fn(&str) -> Option<String>) -> bool {
    let Some(loc) = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| var(k).filter(|v| !v.is_empty()))
    else {
        return false;
    };
    let codeset = loc
        .split_once('.')
        .map_or("", |(_, rest)| rest.split('@').next().unwrap_or(""));
    let norm = codeset.to_ascii_lowercase().replace('-', "");
    norm == "utf8"
}

/// The process environment, for the functions above.
pub fn env_var(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// Where ncurses looks for terminfo entries, in its order: $TERMINFO, ~/.terminfo,
/// $TERMINFO_DIRS (an empty element means the system default), then the system directories.
fn terminfo_dirs(var: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let system = ["/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo"];
    let mut dirs = Vec::new();
    if let Some(t) = var("TERMINFO").filter(|t| !t.is_empty()) {
        dirs.push(PathBuf::from(t));
    }
    if let Some(h) = var("HOME").filter(|h| !h.is_empty()) {
        dirs.push(Path::new(&h).join(".terminfo"));
    }
    if let Some(list) = var("TERMINFO_DIRS") {
        for d in list.split(':') {
            if d.is_empty() {
                dirs.extend(system.iter().map(PathBuf::from));
            } else {
                dirs.push(PathBuf::from(d));
            }
        }
    }
    dirs.extend(system.iter().map(PathBuf::from));
    dirs
}

/// An entry is stored under its first letter (`x/xterm`) or, on some systems, under that
/// letter's hex code (`78/xterm`).
fn has_entry(dir: &Path, term: &str) -> bool {
    let Some(first) = term.chars().next() else {
        return false;
    };
    if term.contains('/') {
        return false;
    }
    let hex = format!("{:02x}", first as u32);
    dir.join(first.to_string()).join(term).is_file() || dir.join(hex).join(term).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn locale_precedence_and_codesets() {
        assert!(!utf8_locale(&env(&[])));
        assert!(utf8_locale(&env(&[("LANG", "en_US.UTF-8")])));
        assert!(utf8_locale(&env(&[("LANG", "de_DE.utf8@euro")])));
        assert!(!utf8_locale(&env(&[("LANG", "C")])));
        assert!(!utf8_locale(&env(&[("LANG", "en_US.ISO-8859-1")])));
        // LC_ALL wins over everything, LC_CTYPE over LANG; empty values do not count.
        assert!(!utf8_locale(&env(&[
            ("LC_ALL", "C"),
            ("LANG", "en_US.UTF-8")
        ])));
        assert!(!utf8_locale(&env(&[
            ("LC_CTYPE", "POSIX"),
            ("LANG", "en_US.UTF-8")
        ])));
        assert!(utf8_locale(&env(&[
            ("LC_ALL", ""),
            ("LC_CTYPE", "C.UTF-8"),
            ("LANG", "C")
        ])));
    }

    #[test]
    fn dumb_unset_and_unknown_terminals_block_the_tui() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("x")).unwrap();
        std::fs::write(dir.path().join("x/xterm-test"), b"entry").unwrap();
        std::fs::create_dir_all(dir.path().join("76")).unwrap();
        std::fs::write(dir.path().join("76/vt-test"), b"entry").unwrap();
        let ti = dir.path().to_str().unwrap();
        assert_eq!(
            tui_blocker(&env(&[("TERMINFO", ti)])).as_deref(),
            Some("TERM is not set")
        );
        assert_eq!(
            tui_blocker(&env(&[("TERM", "dumb"), ("TERMINFO", ti)])).as_deref(),
            Some("TERM=dumb")
        );
        assert_eq!(
            tui_blocker(&env(&[("TERM", "xterm-test"), ("TERMINFO", ti)])),
            None
        );
        assert_eq!(
            tui_blocker(&env(&[("TERM", "vt-test"), ("TERMINFO", ti)])),
            None
        );
        assert_eq!(
            tui_blocker(&env(&[("TERM", "no-such-terminal-xyz"), ("TERMINFO", ti)])).as_deref(),
            Some("no terminfo entry for TERM=no-such-terminal-xyz")
        );
        assert!(tui_blocker(&env(&[("TERM", "../x/xterm-test"), ("TERMINFO", ti)])).is_some());
    }
}
