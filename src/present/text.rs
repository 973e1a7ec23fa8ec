//! Text shaping shared by every output: ASCII fallbacks for the few non-ASCII glyphs in
//! messages, and word wrapping for the events panel and the summary.

/// An ASCII form of `s`: copyscope's own glyphs map to their drawn look-alikes (blocks to
/// `.:+#`, box lines to `-|+`, arrows to `->`), anything else (file names, units) is
/// transliterated ("Müller" → "Muller", "µs" → "us"), and what has no transliteration becomes
/// `_`. Never `?`: that is the help key, and a `?` in a chart reads as "unknown".
pub fn asciify(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match glyph_ascii(c) {
            Some(a) => out.push_str(a),
            None if c.is_ascii() => out.push(c),
            None => {
                let t = deunicode::deunicode_char(c).filter(|t| !t.is_empty() && t.is_ascii());
                out.push_str(t.unwrap_or("_"));
            }
        }
    }
    out
}

/// The drawn look-alike of each non-ASCII glyph copyscope itself draws.
fn glyph_ascii(c: char) -> Option<&'static str> {
    Some(match c {
        '→' => "->",
        '←' => "<-",
        '…' => "...",
        '·' => "-",
        '•' => "*",
        '▼' | '▾' => "v",
        '▲' | '▴' => "^",
        '█' | '▇' | '▓' => "#",
        '▆' | '▅' | '▄' => "+",
        '▃' | '▂' | '▁' | '░' => ".",
        '▒' => ":",
        '─' | '━' | '╌' | '┄' | '═' => "-",
        '│' | '┃' | '╎' | '║' => "|",
        '┌' | '┐' | '└' | '┘' | '├' | '┤' | '┬' | '┴' | '┼' | '╭' | '╮' | '╰' | '╯' => {
            "+"
        }
        '×' => "x",
        '±' => "+/-",
        '–' | '—' => "-",
        _ => return None,
    })
}

/// Units that stay on the line of the number before them ("97 %", "30.0 MB/s").
const UNITS: [&str; 18] = [
    "%", "s", "ms", "min", "B", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "B/s", "kB/s", "MB/s",
    "GB/s", "KiB/s", "MiB/s",
];

/// The words of `text` split at spaces, a unit kept with the number before it: slices of
/// `text` (a merged pair is the number, its space and the unit).
fn words(text: &str) -> Vec<&str> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for w in text.split(' ') {
        let (from, to) = (at, at + w.len());
        at = to + 1;
        match spans.last_mut() {
            Some(last)
                if UNITS.contains(&w)
                    && text[last.0..last.1].ends_with(|c: char| c.is_ascii_digit()) =>
            {
                last.1 = to;
            }
            _ => spans.push((from, to)),
        }
    }
    spans.into_iter().map(|(a, b)| &text[a..b]).collect()
}

/// Splits `text` into lines of at most `width` chars at spaces, never between a number and
/// its unit (long words are cut).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in words(text) {
        let cur = lines.last_mut().expect("one line");
        let need = cur.chars().count() + usize::from(!cur.is_empty()) + word.chars().count();
        if need <= width || cur.is_empty() {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        } else {
            lines.push(word.to_string());
        }
    }
    lines
        .into_iter()
        .flat_map(|l| {
            let chars: Vec<char> = l.chars().collect();
            chars
                .chunks(width)
                .map(|c| c.iter().collect::<String>())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every line of `text` longer than `width` chars wrapped at spaces, its continuation lines
/// indented two more than the line itself: a terminal would cut them mid-word.
pub fn fit_lines(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let lead = body.len() - body.trim_start_matches(' ').len();
        let indent = " ".repeat(lead + 2);
        let room = width.saturating_sub(lead + 2).max(20);
        let mut rest = body.trim_start_matches(' ');
        let first = wrap_words(rest, width.saturating_sub(lead).max(20));
        let head = first.first().cloned().unwrap_or_default();
        out.push_str(&" ".repeat(lead));
        out.push_str(&head);
        rest = rest.get(head.len()..).unwrap_or("").trim_start_matches(' ');
        if !rest.is_empty() {
            for l in wrap_words(rest, room) {
                out.push('\n');
                out.push_str(&indent);
                out.push_str(&l);
            }
        }
        out.push_str(nl);
    }
    out
}

/// Shortens `s` to at most `max` characters, keeping both ends ("/tank/…/file.iso").
pub fn ellipsize_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return s.to_string();
    }
    let keep = max - 1;
    let head = keep / 2;
    let tail = keep - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_keeps_its_unit_on_its_line() {
        assert_eq!(wrap_words("held 97 % of it", 8), ["held", "97 % of", "it"]);
        assert_eq!(
            wrap_words("at 30.0 MB/s now", 9),
            ["at", "30.0 MB/s", "now"]
        );
        assert_eq!(wrap_words("the s key", 5), ["the s", "key"]);
    }

    #[test]
    fn long_lines_wrap_at_spaces_under_their_own_indent() {
        let text = "short\n  speed through the pipeline 28.6 MB/s (min 16.4 MB/s, peak 90.1 MB/s), durable: n/a (watch)\nend";
        let fit = fit_lines(text, 40);
        assert_eq!(
            fit,
            "short\n  speed through the pipeline 28.6 MB/s\n    (min 16.4 MB/s, peak 90.1 MB/s),\n    durable: n/a (watch)\nend"
        );
        assert!(fit.lines().all(|l| l.chars().count() <= 40));
        assert_eq!(fit_lines("fits\n", 40), "fits\n");
    }

    #[test]
    fn wrap_words_splits_at_spaces_and_cuts_long_words() {
        assert_eq!(
            wrap_words("drop 118 → 3 MB/s for 1.4 s", 12),
            vec!["drop 118 →", "3 MB/s for", "1.4 s"]
        );
        assert_eq!(wrap_words("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
    }
}
