//! `copyscope man`: the man page. clap_mangen writes the title, synopsis and the copy's
//! options; the rest is written here from the same sources the program uses — each
//! subcommand with its own options (clap), the keys (present/keys.rs), the chart legend
//! (present/markers.rs), the environment and the exit status — so the page names no other
//! page that does not exist and cannot drift from the help screens.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::present::keys::KEYS;
use crate::present::markers::LEGEND;

/// Every environment variable copyscope reads (the tests check each `env::var` is here), but
/// for the [`TEST_HOOKS`].
pub const ENVIRONMENT: [(&str, &str); 7] = [
    (
        "NO_COLOR",
        "When set and not empty, the TUI draws without colour (glyphs still tell every series and marker apart).",
    ),
    (
        "COPYSCOPE_SYS_ROOT",
        "A directory that stands for / when reading /proc, /sys and the ZFS kstats (tests and demos replay a captured machine this way).",
    ),
    (
        "TERM",
        "The terminal type: \"dumb\" or an unknown type gets --plain output; its terminfo entry decides colours and line drawing.",
    ),
    (
        "LC_ALL, LC_CTYPE, LANG",
        "Without a UTF-8 locale the TUI draws with ASCII characters only (as --ascii).",
    ),
    (
        "TERMINFO, TERMINFO_DIRS, HOME",
        "Where the terminal's terminfo entry is looked up, as ncurses does.",
    ),
    (
        "PATH",
        "Searched for the tools named in the environment report (zpool, for a pool's layout).",
    ),
    (
        "COPYSCOPE_EXACT",
        "Set to 0 to turn the exact evidence off (the kernel trace of the writer's waits, as root): copyscope then samples the writer's stacks every 100 ms, as it does without root. For measuring the trace's cost against the same copy.",
    ),
];

/// The tests' hooks, read only by a build with the `test-hooks` feature (what `cargo test`
/// builds), and documented only in its man page.
#[cfg(feature = "test-hooks")]
const TEST_HOOKS: [(&str, &str); 2] = [
    (
        "COPYSCOPE_TEST_THROTTLE_BPS",
        "Testing and the demo: paces the copy at this many bytes per second.",
    ),
    (
        "COPYSCOPE_TEST_PANIC_AFTER_MS",
        "Testing: makes the copy panic after this many ms, to check the terminal is restored.",
    ),
];
#[cfg(not(feature = "test-hooks"))]
const TEST_HOOKS: [(&str, &str); 0] = [];

/// Escapes text for a roff line: backslashes, hyphens (so they are not hyphenation points)
/// and a leading dot or quote (which would be read as a request).
fn roff(text: &str) -> String {
    let s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// Writes one tagged paragraph: the tag in bold, then the body.
fn item(w: &mut dyn Write, tag: &str, body: &str) -> std::io::Result<()> {
    writeln!(w, ".TP\n\\fB{}\\fR\n{}", roff(tag), roff(body))
}

/// The options of one (sub)command, as `.TP` paragraphs.
fn options(w: &mut dyn Write, cmd: &clap::Command) -> std::io::Result<()> {
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let mut tag = Vec::new();
        if let Some(s) = arg.get_short() {
            tag.push(format!("-{s}"));
        }
        if let Some(l) = arg.get_long() {
            tag.push(format!("--{l}"));
        }
        let value = arg
            .get_value_names()
            .map(|v| {
                v.iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|_| arg.get_action().takes_values());
        let tag = match (tag.is_empty(), value) {
            (true, Some(v)) => v,
            (true, None) => arg.get_id().to_string().to_uppercase(),
            (false, Some(v)) => format!("{} {v}", tag.join(", ")),
            (false, None) => tag.join(", "),
        };
        let mut body = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            body.push_str(&format!(" [default: {}]", defaults.join(" ")));
        }
        item(w, &tag, &body)?;
    }
    Ok(())
}

/// Renders the whole page.
#[expect(
    clippy::too_many_lines,
    reason = "the man page's sections written in their order"
)]
pub fn render(w: &mut dyn Write) -> std::io::Result<()> {
    let mut cmd = Cli::command();
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    writeln!(w, ".SH OPTIONS")?;
    options(w, &cmd)?;

    writeln!(w, ".SH COMMANDS")?;
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        writeln!(w, ".SS \"copyscope {}\"", sub.get_name())?;
        let about = sub
            .get_long_about()
            .or(sub.get_about())
            .map(|a| a.to_string())
            .unwrap_or_default();
        writeln!(w, "{}", roff(&about))?;
        options(w, sub)?;
        if let Some(extra) = sub.get_after_help() {
            writeln!(w, ".PP\n.nf")?;
            for line in extra.to_string().lines() {
                writeln!(w, "{}", roff(line))?;
            }
            writeln!(w, ".fi")?;
        }
    }

    writeln!(w, ".SH KEYS")?;
    writeln!(
        w,
        "In the live TUI (a copy, the demo, watch) and in replay; ? shows them on screen."
    )?;
    for k in KEYS {
        let mode = match k.mode {
            crate::present::keys::Mode::Live => " (live)",
            crate::present::keys::Mode::Replay => " (replay)",
            crate::present::keys::Mode::Both => "",
        };
        item(w, &format!("{}{mode}", k.keys), k.what)?;
    }

    writeln!(w, ".SH CHART LEGEND")?;
    writeln!(
        w,
        "{}",
        roff(
            "The chart's columns are the copy speed (what the copier wrote, per tick); a dotted line is what reached the destination's disks, a dashed line the average. Columns inside a drop are shaded and marked above; a column's minimum shows as a lighter cell when a dip was shorter than the column. Under the chart, one glyph per event (with --ascii the second glyph):"
        )
    )?;
    for kind in LEGEND {
        let (u, a) = kind.glyph();
        let tag = if u == a {
            format!("{u}  {}", kind.label())
        } else {
            format!("{u} {a}  {}", kind.label())
        };
        item(w, &tag, kind.meaning())?;
    }

    writeln!(w, ".SH ENVIRONMENT")?;
    for (name, what) in ENVIRONMENT.iter().chain(&TEST_HOOKS) {
        item(w, name, what)?;
    }

    writeln!(w, ".SH EXIT STATUS")?;
    for (code, what) in [
        (
            "0",
            "Everything was copied (and flushed, unless --no-sync).",
        ),
        (
            "1",
            "Some files failed or were skipped; the others were copied.",
        ),
        (
            "2",
            "Usage error, or a fatal error that stopped the copy (disk full, a refusal before anything was written, an unreadable recording).",
        ),
        (
            "130",
            "Cancelled (q in the TUI, Ctrl-C, SIGTERM, SIGHUP, SIGQUIT); the file in progress is removed, never left truncated.",
        ),
        (
            "141",
            "copyscope pipe: the reader of standard output closed it before the end of input (128 + SIGPIPE, what a shell reports for cat there).",
        ),
    ] {
        item(w, code, what)?;
    }

    writeln!(w, ".SH EXAMPLES\n.nf")?;
    if let Some(extra) = cmd.get_after_help() {
        for line in extra
            .to_string()
            .lines()
            .skip_while(|l| l.starts_with("Examples"))
            .take_while(|l| !l.starts_with("Exit status"))
        {
            writeln!(w, "{}", roff(line))?;
        }
    }
    writeln!(w, ".fi")?;
    writeln!(w, ".SH SEE ALSO\n\\fBcp\\fR(1)")?;
    man.render_version_section(w)?;
    Ok(())
}
