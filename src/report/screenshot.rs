//! A run's screenshot set (PNG, SVG, text, Markdown) named after its start time, and the
//! lines that say where it went.

use std::path::{Path, PathBuf};

use crate::present::quote::shell_escape;
use crate::report::export::{ChartData, write_screenshot_set};
use crate::report::recording::Header;

/// Default PNG/SVG size for screenshots.
pub const SCREENSHOT_SIZE: (u32, u32) = (1600, 900);

/// The run's start as a file-name stamp: "2026-11-30T19:42:07Z" → "20261130-194207".
pub fn run_stamp(started_at: &str) -> String {
    started_at
        .replace([':', '-'], "")
        .replace('T', "-")
        .replace('Z', "")
}

/// The name every file of a run's screenshot set (and its saved recording) shares:
/// `copyscope-20261130-194207`.
pub fn run_stem(header: &Header) -> String {
    format!("copyscope-{}", run_stamp(&header.started_at))
}

/// Writes a screenshot set of `data` into `dir` (default: the current directory), named
/// after the run's start time.
pub fn write_run_screenshots(
    data: &ChartData,
    header: &Header,
    dir: Option<&Path>,
    ascii: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let dir = dir.unwrap_or(Path::new("."));
    write_screenshot_set(data, dir, &run_stem(header), SCREENSHOT_SIZE, ascii)
}

/// The files of one screenshot set, short enough for the screen: the first path in full
/// (quoted), the others by their extension when they share its directory and name —
/// "wrote ./copyscope-20261130-194207.png, .svg, .txt, .md".
pub fn short_paths(p: &[PathBuf]) -> String {
    let split = |p: &Path| {
        let name = p.file_name()?.to_str()?;
        let dot = name.find('.')?;
        Some((
            p.parent()?.to_path_buf(),
            name[..dot].to_string(),
            name[dot..].to_string(),
        ))
    };
    let Some(first) = p.first() else {
        return String::new();
    };
    let Some((dir, stem, _)) = split(first) else {
        return join_paths(p);
    };
    let mut out = shell_escape(first).into_owned();
    for q in &p[1..] {
        out.push_str(", ");
        match split(q) {
            Some((d, s, ext)) if d == dir && s == stem => out.push_str(&shell_escape(&ext)),
            _ => out.push_str(&shell_escape(q)),
        }
    }
    out
}

/// Every path in full, quoted, comma-separated.
pub fn join_paths(p: &[PathBuf]) -> String {
    p.iter()
        .map(|p| shell_escape(p).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_screenshot_set_is_named_once() {
        let p = |s: &str| PathBuf::from(s);
        let set = [
            p("./copyscope-20261130-194207.png"),
            p("./copyscope-20261130-194207.svg"),
            p("./copyscope-20261130-194207.md"),
        ];
        assert_eq!(
            short_paths(&set),
            "./copyscope-20261130-194207.png, .svg, .md"
        );
        // Another directory or name is written in full; names are quoted.
        let mixed = [p("shots/a b.png"), p("elsewhere/a b.svg"), p("shots/c.txt")];
        assert_eq!(
            short_paths(&mixed),
            "'shots/a b.png', 'elsewhere/a b.svg', shots/c.txt"
        );
    }

    #[test]
    fn the_stamp_is_the_start_time_without_separators() {
        assert_eq!(run_stamp("2026-11-30T19:42:07Z"), "20261130-194207");
    }
}
