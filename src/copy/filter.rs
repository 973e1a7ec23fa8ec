//! Which entries of a source directory the scan leaves out: `--exclude` patterns with
//! gitignore semantics (the `ignore` crate's matcher, as ripgrep uses it).
//!
//! A pattern is matched against the entry's path relative to the source directory named on
//! the command line (for `copyscope photos/ /mnt/nas`, `photos/2024/raw/x.cr2` is matched as
//! `2024/raw/x.cr2`): `*.tmp` matches at any depth, `/build` only at the top, `cache/` only
//! directories, `**` any number of levels, `!keep.tmp` re-includes. An excluded directory is
//! not entered. Operands themselves are never excluded: naming a file is asking for it.

use std::path::Path;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Compiled `--exclude` patterns.
#[derive(Debug, Clone)]
pub struct Exclude {
    matcher: Gitignore,
}

impl Exclude {
    /// Compiles the patterns; the error names the bad one.
    pub fn new(patterns: &[String]) -> Result<Exclude, String> {
        let mut b = GitignoreBuilder::new("");
        for p in patterns {
            b.add_line(None, p)
                .map_err(|e| format!("--exclude '{p}': {e}"))?;
        }
        let matcher = b.build().map_err(|e| format!("--exclude: {e}"))?;
        Ok(Exclude { matcher })
    }

    /// Whether `rel` (relative to the source directory) is left out.
    pub fn excludes(&self, rel: &Path, is_dir: bool) -> bool {
        matches!(self.matcher.matched(rel, is_dir), Match::Ignore(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(p: &[&str]) -> Exclude {
        Exclude::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn gitignore_semantics_relative_to_the_source_directory() {
        let e = ex(&["*.tmp", "/build", "cache/", "**/node_modules", "!keep.tmp"]);
        assert!(e.excludes(Path::new("a.tmp"), false));
        assert!(e.excludes(Path::new("deep/er/a.tmp"), false));
        assert!(
            !e.excludes(Path::new("keep.tmp"), false),
            "negation re-includes"
        );
        assert!(e.excludes(Path::new("build"), true));
        assert!(
            !e.excludes(Path::new("src/build"), true),
            "/build is anchored"
        );
        assert!(e.excludes(Path::new("x/cache"), true));
        assert!(
            !e.excludes(Path::new("x/cache"), false),
            "cache/ is for directories"
        );
        assert!(e.excludes(Path::new("a/b/node_modules"), true));
        assert!(!e.excludes(Path::new("a.tmpx"), false));
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let err = Exclude::new(&["ok".to_string(), "{a,b".to_string()]).unwrap_err();
        assert!(err.contains("'{a,b'"), "{err}");
        assert!(err.contains("unclosed"), "{err}");
    }
}
