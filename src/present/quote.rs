//! File names for the terminal, quoted as GNU coreutils quotes them (gnulib quotearg's
//! `shell-escape` styles), so a name can never move the cursor, retitle or clear the
//! terminal, or split a line: control characters and invalid UTF-8 become `$'\033'`-style
//! escapes, everything else stays readable. JSON output does not use this (it escapes by itself).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `name` as cp writes it in messages: always quoted (`'a b'`, `"it's"`, `''$'\033''[2J'`).
pub fn quote<S: AsRef<OsStr> + ?Sized>(name: &S) -> String {
    quote_bytes(name.as_ref().as_bytes())
}

/// `name` as `ls` shows it: plain when that is safe to paste into a shell, else quoted as
/// [`quote`] does.
pub fn shell_escape<S: AsRef<OsStr> + ?Sized>(name: &S) -> Cow<'_, str> {
    let b = name.as_ref().as_bytes();
    match std::str::from_utf8(b) {
        Ok(s) if !s.is_empty() && s.char_indices().all(|(i, c)| plain_safe(s, i, c)) => {
            Cow::Borrowed(s)
        }
        _ => Cow::Owned(quote_bytes(b)),
    }
}

/// A command line as a shell would take it back (each argument as [`shell_escape`] shows it),
/// shortened in the middle to at most `width` characters.
pub fn command_line(args: &[String], width: usize) -> String {
    let joined: Vec<String> = args.iter().map(|a| shell_escape(a).into_owned()).collect();
    crate::present::text::ellipsize_middle(&joined.join(" "), width)
}

/// A name that may stay unquoted: no shell metacharacter, nothing unprintable.
fn plain_safe(s: &str, i: usize, c: char) -> bool {
    match c {
        ' ' | '!' | '"' | '$' | '&' | '\'' | '(' | ')' | '*' | ';' | '<' | '=' | '>' | '?'
        | '[' | '\\' | '^' | '`' | '|' => false,
        '#' | '~' => i != 0,
        '{' | '}' => s.len() != 1,
        c => printable(c),
    }
}

/// A per-file problem as one message line (after "copyscope: "): a message that already names
/// its file, as cp words them ("cannot open 'x' for reading: Permission denied"), stays as it
/// is; any other gets the quoted name in front ("'x': destination exists").
pub fn file_line(path: &Path, message: &str) -> String {
    let q = quote(path);
    if message.contains(&q) {
        message.to_string()
    } else {
        format!("{q}: {message}")
    }
}

/// An error's text as cp would say it: every " (os error N)" that Rust's io::Error adds is cut.
pub fn said(e: &(impl std::fmt::Display + ?Sized)) -> String {
    let mut s = e.to_string();
    while let Some(i) = s.find(" (os error ") {
        match s[i..].find(')') {
            Some(j) => s.replace_range(i..i + j + 1, ""),
            None => break,
        }
    }
    s
}

/// An error and its causes on one line, `: `-separated as cp chains them, each I/O error said
/// in words without Rust's " (os error N)" tail.
pub fn error_chain(e: &anyhow::Error) -> String {
    e.chain().map(said).collect::<Vec<_>>().join(": ")
}

/// What gnulib's `c32isprint` accepts in a UTF-8 locale, minus its table of unassigned code
/// points (those print as themselves here; they cannot drive a terminal).
fn printable(c: char) -> bool {
    !(c.is_control() || c == '\u{2028}' || c == '\u{2029}')
}

/// How one byte (or one UTF-8 sequence) is treated in the quoted form.
enum Class {
    /// Stored as is; `compat` says whether a double-quoted form could hold it too.
    Plain {
        compat: bool,
    },
    /// A C escape letter (`\n` → `n`).
    Letter(u8),
    /// Bytes written as octal escapes.
    Octal(usize),
    /// A valid printable multibyte character of this many bytes.
    Wide(usize),
    Quote,
}

fn classify(arg: &[u8], i: usize) -> Class {
    let c = arg[i];
    match c {
        b'\x07' => Class::Letter(b'a'),
        b'\x08' => Class::Letter(b'b'),
        b'\x0c' => Class::Letter(b'f'),
        b'\n' => Class::Letter(b'n'),
        b'\r' => Class::Letter(b'r'),
        b'\t' => Class::Letter(b't'),
        b'\x0b' => Class::Letter(b'v'),
        b'\'' => Class::Quote,
        b'{' | b'}' if arg.len() == 1 => Class::Plain { compat: true },
        b'#' | b'~' | b' ' if c == b' ' || i == 0 => Class::Plain { compat: true },
        b'\\' | b'?' | b'!' | b'"' | b'$' | b'&' | b'(' | b')' | b'*' | b';' | b'<' | b'='
        | b'>' | b'[' | b'^' | b'`' | b'|' | b'#' | b'~' | b'{' | b'}' => {
            Class::Plain { compat: false }
        }
        0x20..=0x7e => Class::Plain { compat: true },
        0x00..=0x1f | 0x7f => Class::Octal(1),
        _ => multibyte(&arg[i..]),
    }
}

/// A non-ASCII byte: a whole printable character, or bytes to escape (an invalid byte alone;
/// a truncated sequence to the end, as gnulib does).
fn multibyte(rest: &[u8]) -> Class {
    let want = match rest[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Class::Octal(1),
    };
    if rest.len() < want {
        let valid_prefix = std::str::from_utf8(rest)
            .err()
            .is_some_and(|e| e.error_len().is_none());
        return Class::Octal(if valid_prefix { rest.len() } else { 1 });
    }
    match std::str::from_utf8(&rest[..want]) {
        Ok(s) if s.chars().all(printable) => Class::Wide(want),
        Ok(_) => Class::Octal(want),
        Err(e) if e.error_len().is_none() => Class::Octal(rest.len()),
        Err(_) => Class::Octal(1),
    }
}

/// gnulib's quotearg in `shell_escape_always_quoting_style`, byte for byte, except one
/// quirk: when a name holds a `'` and ends with an escape, gnulib reruns itself with stale
/// state and starts with a stray `''` (or, when the name also starts with an escape, writes a
/// wrong `'\t'`); this always writes the single-pass form, which a shell reads as the same name.
fn quote_bytes(arg: &[u8]) -> String {
    let mut out = String::from("'");
    let mut pending = false;
    let mut saw_quote = false;
    let mut all_compat = true;
    let mut i = 0;
    while i < arg.len() {
        match classify(arg, i) {
            Class::Plain { compat } => {
                end_esc(&mut out, &mut pending);
                out.push(char::from(arg[i]));
                all_compat &= compat;
                i += 1;
            }
            Class::Wide(w) => {
                end_esc(&mut out, &mut pending);
                out.push_str(std::str::from_utf8(&arg[i..i + w]).unwrap_or("\u{fffd}"));
                i += w;
            }
            Class::Quote => {
                // Close, an escaped quote, reopen.
                saw_quote = true;
                out.push_str("'\\''");
                pending = false;
                i += 1;
            }
            Class::Letter(l) => {
                start_esc(&mut out, &mut pending);
                out.push(char::from(l));
                all_compat = false;
                i += 1;
            }
            Class::Octal(n) => {
                for b in &arg[i..i + n] {
                    start_esc(&mut out, &mut pending);
                    out.push_str(&format!("{:o}{:o}{:o}", b >> 6, (b >> 3) & 7, b & 7));
                }
                all_compat = false;
                i += n;
            }
        }
    }
    if saw_quote && all_compat {
        // Only an apostrophe to protect: "it's" reads better than 'it'\''s'.
        return format!("\"{}\"", String::from_utf8_lossy(arg));
    }
    out.push('\'');
    out
}

fn start_esc(out: &mut String, pending: &mut bool) {
    if !*pending {
        out.push_str("'$'");
        *pending = true;
    }
    out.push('\\');
}

fn end_esc(out: &mut String, pending: &mut bool) {
    if *pending {
        out.push_str("''");
        *pending = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    /// (name, `ls --quoting-style=shell-escape`, `…=shell-escape-always`), captured from GNU
    /// coreutils 9.1 on this project's machine (LANG=C.UTF-8).
    const GNU: &[(&[u8], &str, &str)] = &[
        (
            b"\x1b\x5d\x30\x3b\x54\x49\x54\x4c\x45\x07",
            r#"''$'\033'']0;TITLE'$'\a'"#,
            r#"''$'\033'']0;TITLE'$'\a'"#,
        ),
        (
            b"\x1b\x5b\x32\x4a",
            r#"''$'\033''[2J'"#,
            r#"''$'\033''[2J'"#,
        ),
        (b"\x61\x0a\x62", r#"'a'$'\n''b'"#, r#"'a'$'\n''b'"#),
        (
            b"\x0a\x6c\x65\x61\x64",
            r#"''$'\n''lead'"#,
            r#"''$'\n''lead'"#,
        ),
        (b"\x69\x74\x27\x73", r#""it's""#, r#""it's""#),
        (b"\x73\x70\x20\x61\x63\x65", r#"'sp ace'"#, r#"'sp ace'"#),
        (
            b"\x70\x6c\x61\x69\x6e\x2e\x74\x78\x74",
            r#"plain.txt"#,
            r#"'plain.txt'"#,
        ),
        (
            b"\xff\xfe\x61\x62",
            r#"''$'\377\376''ab'"#,
            r#"''$'\377\376''ab'"#,
        ),
        (b"\x61\x22\x62", r#"'a"b'"#, r#"'a"b'"#),
        (b"\xc3\xa9", r#"é"#, r#"'é'"#),
        (b"\x24\x78", r#"'$x'"#, r#"'$x'"#),
        (b"\x7e\x68\x6f\x6d\x65", r#"'~home'"#, r#"'~home'"#),
        (b"\x61\x7e\x62", r#"a~b"#, r#"'a~b'"#),
        (b"\x23\x63", r#"'#c'"#, r#"'#c'"#),
        (b"\x61\x23\x62", r#"a#b"#, r#"'a#b'"#),
        (b"\x78\x3d\x79", r#"'x=y'"#, r#"'x=y'"#),
        (
            b"\xc2\x85\x78",
            r#"''$'\302\205''x'"#,
            r#"''$'\302\205''x'"#,
        ),
        (
            b"\xe2\x80\xa8\x78",
            r#"''$'\342\200\250''x'"#,
            r#"''$'\342\200\250''x'"#,
        ),
        (b"\xe2\x80\xae\x78", "\u{202e}x", "'\u{202e}x'"),
        (b"\x61\x5c\x62", r#"'a\b'"#, r#"'a\b'"#),
        (b"\x61\x7b", r#"a{"#, r#"'a{'"#),
        (b"\x7b", r#"'{'"#, r#"'{'"#),
        (b"\x7d", r#"'}'"#, r#"'}'"#),
        (b"\x61\x21", r#"'a!'"#, r#"'a!'"#),
        (
            b"\x69\x74\x27\x73\x23\x78",
            r#"'it'\''s#x'"#,
            r#"'it'\''s#x'"#,
        ),
        (b"\x7e\x69\x74\x27\x73", r#""~it's""#, r#""~it's""#),
        (b"\x7f", r#"''$'\177'"#, r#"''$'\177'"#),
        (b"\xc3", r#"''$'\303'"#, r#"''$'\303'"#),
        (b"\xe2\x82", r#"''$'\342\202'"#, r#"''$'\342\202'"#),
        (
            b"\x61\x2c\x62\x2b\x63\x25\x64",
            r#"a,b+c%d"#,
            r#"'a,b+c%d'"#,
        ),
        (b"\x40\x78", r#"@x"#, r#"'@x'"#),
        (b"\x61\x3a\x62", r#"a:b"#, r#"'a:b'"#),
        (b"\x27", r#""'""#, r#""'""#),
        (b"\x71\x3f", r#"'q?'"#, r#"'q?'"#),
        (
            b"\xe2\x82\x78",
            r#"''$'\342\202''x'"#,
            r#"''$'\342\202''x'"#,
        ),
        (
            b"\x74\x61\x62\x09\x68\x65\x72\x65",
            r#"'tab'$'\t''here'"#,
            r#"'tab'$'\t''here'"#,
        ),
        (b"\x63\x72\x0d\x78", r#"'cr'$'\r''x'"#, r#"'cr'$'\r''x'"#),
        (b"\x01\x02", r#"''$'\001\002'"#, r#"''$'\001\002'"#),
        (b"\x08\x0b\x0c", r#"''$'\b\v\f'"#, r#"''$'\b\v\f'"#),
    ];

    #[test]
    fn quotes_exactly_as_gnu_ls_and_cp() {
        for (name, escape, always) in GNU {
            let n = OsStr::from_bytes(name);
            assert_eq!(shell_escape(n), *escape, "shell-escape of {name:x?}");
            assert_eq!(quote(n), *always, "shell-escape-always of {name:x?}");
        }
    }

    #[test]
    fn nothing_that_reaches_the_terminal_is_a_control_byte() {
        for (name, _, _) in GNU {
            let q = quote(OsStr::from_bytes(name));
            assert!(!q.chars().any(|c| c.is_control()), "{q:?}");
            assert!(
                !shell_escape(OsStr::from_bytes(name))
                    .chars()
                    .any(|c| c.is_control())
            );
        }
    }

    #[test]
    fn apostrophe_with_an_escape_is_one_valid_shell_word() {
        // GNU writes '''a'\''b'$'\t' (a stray '') and, for a leading escape, '\t''x'\''y'$'\t'
        // (a literal backslash-t, wrong); the single pass writes what a shell reads back right.
        assert_eq!(quote("a'b\t"), r#"'a'\''b'$'\t'"#);
        assert_eq!(quote("\tx'y\t"), r#"''$'\t''x'\''y'$'\t'"#);
        assert_eq!(quote("\tx'y"), r#"''$'\t''x'\''y'"#);
        assert_eq!(quote(""), "''");
        assert_eq!(shell_escape(""), "''");
    }

    #[test]
    fn a_message_names_its_file_once() {
        let p = Path::new("src/se cret");
        assert_eq!(
            file_line(
                p,
                "cannot open 'src/se cret' for reading: Permission denied"
            ),
            "cannot open 'src/se cret' for reading: Permission denied"
        );
        assert_eq!(
            file_line(p, "destination exists"),
            "'src/se cret': destination exists"
        );
    }

    #[test]
    fn error_chains_have_no_os_error_tail() {
        let io = std::io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(io).context("writing 'x.png'");
        assert_eq!(
            error_chain(&e),
            "writing 'x.png': No such file or directory"
        );
    }

    #[test]
    fn said_cuts_every_os_error_tail() {
        let io = std::io::Error::from_raw_os_error(13);
        assert_eq!(said(&io), "Permission denied");
        assert_eq!(
            said("a: Is a directory (os error 21): Is a directory (os error 21)"),
            "a: Is a directory: Is a directory"
        );
        assert_eq!(said("fine"), "fine");
    }
}
