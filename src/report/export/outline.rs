//! The exported SVG's text as glyph outlines: every `<text>` of the drawing is laid out once
//! with the DejaVu faces carried in the binary (the PNG's fonts) and written beside it as
//! `<path>`s, while the text itself stays in the file, transparent, so the picture is still
//! searchable, selectable and read by screen readers. A viewer without DejaVu (or without any
//! font) therefore draws the same glyphs with the same metrics as the PNG.

use std::fmt::Write as _;

use resvg::usvg::{self, Node, Paint, PaintOrder, tiny_skia_path::PathSegment};

/// Prefix of the ids given to every `<text>` in the copy usvg reads, to find them in its tree
/// (the drawing's own ids need not be unique: a comparison repeats each panel's).
const ID_PREFIX: &str = "copyscope-text-";

/// One `<text …>…</text>` element of the source: where it is and the id usvg will know it by.
struct TextSpan {
    start: usize,
    /// Index just past the `<text` tag's name, where an id attribute can be inserted.
    tag_end: usize,
    /// Index of the `>` closing the opening tag.
    open_end: usize,
    end: usize,
    id: String,
}

/// The exported form of the drawing `svg`: each `<text>` made transparent (`opacity="0"`)
/// and followed by its outline paths. Fails only when `svg` does not parse.
pub fn outline_text(svg: &str) -> Result<String, usvg::Error> {
    let spans = text_spans(svg);
    let with_ids = with_ids(svg, &spans);
    let opt = usvg::Options {
        font_family: super::png::FONT_FAMILY.to_string(),
        fontdb: super::png::fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(&with_ids, &opt)?;
    let mut outlines = std::collections::HashMap::new();
    collect(tree.root(), &mut outlines);
    let mut out = String::with_capacity(svg.len() * 4);
    let mut at = 0;
    for span in &spans {
        out.push_str(&svg[at..span.start]);
        // The text stays for search and screen readers; the paths after it draw it. No
        // wrapping group: the drawing's own groups still close at their first `</g>`.
        out.push_str(&svg[span.start..span.tag_end]);
        out.push_str(r#" opacity="0""#);
        out.push_str(&svg[span.tag_end..span.end]);
        if let Some(paths) = outlines.get(&span.id) {
            out.push_str(paths);
        }
        at = span.end;
    }
    out.push_str(&svg[at..]);
    Ok(out)
}

/// Finds every `<text` element (our drawing never nests them) and its id.
fn text_spans(svg: &str) -> Vec<TextSpan> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(rel) = svg[from..].find("<text") {
        let start = from + rel;
        let tag_end = start + "<text".len();
        let Some(close) = svg[tag_end..].find("</text>") else {
            break;
        };
        let end = tag_end + close + "</text>".len();
        let open_end = svg[tag_end..end].find('>').map_or(end, |i| tag_end + i);
        spans.push(TextSpan {
            start,
            tag_end,
            open_end,
            end,
            id: format!("{ID_PREFIX}{}", spans.len()),
        });
        from = end;
    }
    spans
}

/// `tag` (a tag's attribute text) without its `id` attribute.
fn without_id(tag: &str) -> String {
    let Some(i) = tag.find(" id=\"") else {
        return tag.to_string();
    };
    let value = i + " id=\"".len();
    let close = tag[value..].find('"').map_or(tag.len(), |n| value + n + 1);
    format!("{}{}", &tag[..i], &tag[close..])
}

/// `svg` with our own unique id on every `<text>`, in place of its own.
fn with_ids(svg: &str, spans: &[TextSpan]) -> String {
    let mut out = String::with_capacity(svg.len() + spans.len() * 32);
    let mut at = 0;
    for span in spans {
        out.push_str(&svg[at..span.tag_end]);
        let _ = write!(out, r#" id="{}""#, span.id);
        out.push_str(&without_id(&svg[span.tag_end..span.open_end]));
        at = span.open_end;
    }
    out.push_str(&svg[at..]);
    out
}

/// The outline paths of every text node under `group`, by the text's id.
fn collect(group: &usvg::Group, out: &mut std::collections::HashMap<String, String>) {
    for node in group.children() {
        match node {
            Node::Group(g) => collect(g, out),
            Node::Text(text) => {
                let mut paths = String::new();
                write_paths(text.flattened(), &mut paths);
                out.insert(text.id().to_string(), paths);
            }
            Node::Path(_) | Node::Image(_) => {}
        }
    }
}

/// The paths of a flattened text (in the text element's own coordinates) as SVG markup.
fn write_paths(group: &usvg::Group, out: &mut String) {
    for node in group.children() {
        match node {
            Node::Group(g) => write_paths(g, out),
            Node::Path(p) if p.is_visible() => write_path(p, out),
            _ => {}
        }
    }
}

fn write_path(p: &usvg::Path, out: &mut String) {
    out.push_str(r#"<path class="glyphs" aria-hidden="true" d=""#);
    path_data(p.data(), out);
    out.push('"');
    match p.fill() {
        Some(fill) => {
            let _ = write!(out, r#" fill="{}""#, paint(fill.paint()));
            opacity(out, "fill-opacity", fill.opacity().get());
        }
        None => out.push_str(r#" fill="none""#),
    }
    if let Some(stroke) = p.stroke() {
        let _ = write!(
            out,
            r#" stroke="{}" stroke-width="{}""#,
            paint(stroke.paint()),
            num(stroke.width().get())
        );
        opacity(out, "stroke-opacity", stroke.opacity().get());
        let join = match stroke.linejoin() {
            usvg::LineJoin::Miter => None,
            usvg::LineJoin::MiterClip => Some("miter-clip"),
            usvg::LineJoin::Round => Some("round"),
            usvg::LineJoin::Bevel => Some("bevel"),
        };
        if let Some(join) = join {
            let _ = write!(out, r#" stroke-linejoin="{join}""#);
        }
    }
    if p.paint_order() == PaintOrder::StrokeAndFill {
        out.push_str(r#" paint-order="stroke""#);
    }
    out.push_str("/>");
}

fn opacity(out: &mut String, name: &str, v: f32) {
    if v < 1.0 {
        let _ = write!(out, r#" {name}="{}""#, num(v));
    }
}

/// A colour as `#rrggbb`; the drawing uses no gradients or patterns on text.
fn paint(p: &Paint) -> String {
    match p {
        Paint::Color(c) => format!("#{:02x}{:02x}{:02x}", c.red, c.green, c.blue),
        _ => "black".to_string(),
    }
}

/// Path data in relative commands with two decimals (a hundredth of a pixel: no visible
/// change). Deltas are taken between rounded points, so rounding never accumulates.
fn path_data(path: &usvg::tiny_skia_path::Path, out: &mut String) {
    let mut at = (0i64, 0i64);
    let mut start = at;
    let rel = |p: usvg::tiny_skia_path::Point, at: (i64, i64)| {
        let q = (hundredths(p.x), hundredths(p.y));
        (q, format!("{} {}", fixed(q.0 - at.0), fixed(q.1 - at.1)))
    };
    for seg in path.segments() {
        match seg {
            PathSegment::MoveTo(p) => {
                let (q, d) = rel(p, at);
                let _ = write!(out, "m{d}");
                (at, start) = (q, q);
            }
            PathSegment::LineTo(p) => {
                let (q, d) = rel(p, at);
                let _ = write!(out, "l{d}");
                at = q;
            }
            PathSegment::QuadTo(a, p) => {
                let (_, da) = rel(a, at);
                let (q, d) = rel(p, at);
                let _ = write!(out, "q{da} {d}");
                at = q;
            }
            PathSegment::CubicTo(a, b, p) => {
                let (_, da) = rel(a, at);
                let (_, db) = rel(b, at);
                let (q, d) = rel(p, at);
                let _ = write!(out, "c{da} {db} {d}");
                at = q;
            }
            PathSegment::Close => {
                out.push('z');
                at = start;
            }
        }
    }
}

fn hundredths(v: f32) -> i64 {
    (f64::from(v) * 100.0).round() as i64
}

/// A number of hundredths as a short decimal: 1250 → `12.5`, -3 → `-.03`.
fn fixed(h: i64) -> String {
    let sign = if h < 0 { "-" } else { "" };
    let (int, frac) = (h.abs() / 100, h.abs() % 100);
    match (int, frac) {
        (_, 0) => format!("{sign}{int}"),
        (0, f) if f % 10 == 0 => format!("{sign}.{}", f / 10),
        (0, f) => format!("{sign}.{f:02}"),
        (i, f) if f % 10 == 0 => format!("{sign}{i}.{}", f / 10),
        (i, f) => format!("{sign}{i}.{f:02}"),
    }
}

/// A number rounded to 0.01, without trailing zeros.
fn num(v: f32) -> String {
    fixed(hundredths(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(0.5), ".5");
        assert_eq!(fixed(-3), "-.03");
        assert_eq!(fixed(1250), "12.5");
    }

    #[test]
    fn texts_become_paths_and_stay_searchable() {
        let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="40"><text id="title" x="5" y="20" font-size="12" fill="#112233">Hi <tspan fill="#ff0000">there</tspan></text><text x="5" y="35" font-size="10">42 MB/s</text></svg>"##;
        let out = outline_text(svg).unwrap();
        // One path per span: the title's two colours, the second text's one.
        assert_eq!(out.matches(r#"<path class="glyphs""#).count(), 3, "{out}");
        assert!(out.contains(r##"fill="#112233""##) && out.contains(r##"fill="#ff0000""##));
        assert!(
            out.contains(r#"<text opacity="0" id="title" x="5""#),
            "{out}"
        );
        assert!(out.contains(">42 MB/s</text><path"));
        assert!(
            !out.contains(ID_PREFIX),
            "the helper ids stay out of the file"
        );
        // Repeated ids (a comparison's panels) each get their own outline.
        let twice = svg.replace(
            "</svg>",
            r##"<text id="title" x="5" y="20" font-size="12">.</text></svg>"##,
        );
        let out = outline_text(&twice).unwrap();
        let after: Vec<usize> = out
            .split("</text>")
            .skip(1)
            .map(|rest| rest.split("<text").next().unwrap_or("").len())
            .collect();
        assert_eq!(after.len(), 3);
        assert!(
            after[0] > 3 * after[2],
            "the first title keeps its own outline: {after:?}"
        );
    }
}
