//! The module map holds (DESIGN §9, ARCHITECTURE.md): no import cycles between top-level
//! modules, `ui/` draws from the model and `present/` only (never `copy/` or `sample/`), and
//! `report/` runs no frontend. Read from the `crate::` paths in the source, so a new
//! `use crate::…` that breaks the map fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every `crate::NAME` a file mentions, as the top-level module it lives in → NAME.
fn graph() -> Graph {
    let mut g = Graph::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    walk(&src, &src, &mut g);
    g
}

fn walk(root: &Path, dir: &Path, g: &mut Graph) {
    for entry in fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            walk(root, &path, g);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(root).expect("under src");
        let first = rel.components().next().expect("a component");
        let top = first.as_os_str().to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = fs::read_to_string(&path).expect("source is UTF-8");
        let deps = g.entry(top.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            // `copyscope::` (in examples and docs) is not an intra-crate import.
            if text[..i].ends_with("copy") {
                continue;
            }
            let name: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != top {
                deps.insert(name);
            }
        }
    }
}

/// A cycle through `start`, if any (depth-first search).
fn cycle_from(g: &Graph, start: &str) -> Option<Vec<String>> {
    fn dfs(g: &Graph, node: &str, start: &str, path: &mut Vec<String>) -> bool {
        for next in g.get(node).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if path.contains(next) {
                continue;
            }
            path.push(next.clone());
            if dfs(g, next, start, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = vec![start.to_string()];
    dfs(g, start, start, &mut path).then_some(path)
}

#[test]
fn top_level_modules_form_no_cycle() {
    let g = graph();
    assert!(g.len() >= 8, "the scan found the modules: {g:?}");
    for m in g.keys() {
        if let Some(c) = cycle_from(&g, m) {
            panic!("import cycle between top-level modules: {}", c.join(" -> "));
        }
    }
}

#[test]
fn ui_draws_from_the_model_and_present_only() {
    let g = graph();
    let ui = &g["ui"];
    for forbidden in ["copy", "sample", "frontend", "report", "config", "cli"] {
        assert!(
            !ui.contains(forbidden),
            "ui/ imports crate::{forbidden}: drawing takes a View (ui/view.rs), it does not \
             reach into {forbidden}/ (ui imports: {ui:?})"
        );
    }
}

#[test]
fn lower_layers_do_not_reach_up() {
    let g = graph();
    for (module, forbidden) in [
        ("report", "frontend"),
        ("report", "ui"),
        ("model", "report"),
        ("model", "ui"),
        ("sample", "model"),
        ("copy", "model"),
        ("copy", "sample"),
        ("present", "model"),
        ("present", "ui"),
        ("present", "report"),
        ("present", "copy"),
        ("present", "sample"),
    ] {
        assert!(
            !g[module].contains(forbidden),
            "{module}/ imports crate::{forbidden} ({module} imports: {:?})",
            g[module]
        );
    }
}

#[test]
fn the_scan_sees_a_cycle_when_there_is_one() {
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        cycle_from(&g, "a"),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    g.get_mut("c").expect("c").clear();
    assert_eq!(cycle_from(&g, "a"), None);
}

/// The files of one directory module as a graph: each child file (or child directory, as
/// one node) → the siblings it names, by `crate::<module path>::NAME` or `super::NAME`. The
/// `mod.rs` is the module's root, which declares its children and may use them; it is no
/// node, so what it holds is shared by all of them. Test modules (`#[cfg(test)] mod tests`)
/// are not part of the map.
fn file_graph(dir: &Path, module: &str) -> Graph {
    let children: BTreeMap<String, Vec<std::path::PathBuf>> = fs::read_dir(dir)
        .expect("module dir")
        .filter_map(|e| {
            let path = e.expect("dir entry").path();
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            let is_rs = path.extension().is_some_and(|x| x == "rs");
            (stem != "mod" && (path.is_dir() || is_rs)).then_some((stem, path))
        })
        .fold(BTreeMap::new(), |mut m, (stem, path)| {
            m.entry(stem).or_insert_with(Vec::new).push(path);
            m
        });
    let mut g = Graph::new();
    for (child, paths) in &children {
        let deps = g.entry(child.clone()).or_default();
        for path in paths {
            for file in rust_files(path) {
                let text = fs::read_to_string(&file).expect("source is UTF-8");
                let text = code_of(&text);
                let direct = file.parent() == Some(dir);
                for name in sibling_names(&text, module, direct) {
                    if children.contains_key(&name) && name != *child {
                        deps.insert(name);
                    }
                }
            }
        }
    }
    g
}

/// A file's code: without comment lines (a doc link names a module it does not import) and
/// without its test module.
fn code_of(text: &str) -> String {
    let body = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    body.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `path` itself if it is a file, else every `.rs` file under it.
fn rust_files(path: &Path) -> Vec<std::path::PathBuf> {
    if !path.is_dir() {
        return vec![path.to_path_buf()];
    }
    let mut out = Vec::new();
    for e in fs::read_dir(path).expect("dir") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// The names after `crate::MODULE::` (each of a `{a, b::c}` list too) and, in a file directly
/// in the module's directory, after `super::`.
fn sibling_names(text: &str, module: &str, direct: bool) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut prefixes = vec![format!("crate::{module}::")];
    if direct {
        prefixes.push("super::".to_string());
    }
    let mut names = Vec::new();
    for prefix in &prefixes {
        for (i, _) in text.match_indices(prefix.as_str()) {
            if text[..i].ends_with("copy") || text[..i].ends_with("::") {
                continue;
            }
            let rest = &text[i + prefix.len()..];
            match rest.strip_prefix('{') {
                Some(list) => {
                    let mut depth = 0;
                    let end = list
                        .char_indices()
                        .find(|&(_, c)| {
                            depth += i32::from(c == '{') - i32::from(c == '}');
                            depth < 0
                        })
                        .map_or(list.len(), |(j, _)| j);
                    let mut depth = 0;
                    let mut start = true;
                    for (j, c) in list[..end].char_indices() {
                        if start && depth == 0 && !c.is_whitespace() {
                            names.push(ident(&list[j..]));
                            start = false;
                        }
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            ',' if depth == 0 => start = true,
                            _ => {}
                        }
                    }
                }
                None if !rest.starts_with("super::") => names.push(ident(rest)),
                None => {}
            }
        }
    }
    names
}

/// Every directory module under `src/` (a top-level one and the ones inside it), with its
/// crate path: ("frontend", src/frontend), ("report::export", src/report/export), …
fn directory_modules() -> Vec<(String, std::path::PathBuf)> {
    fn walk(dir: &Path, module: &str, out: &mut Vec<(String, std::path::PathBuf)>) {
        out.push((module.to_string(), dir.to_path_buf()));
        for e in fs::read_dir(dir).expect("dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                let name = p.file_name().expect("name").to_string_lossy().into_owned();
                walk(&p, &format!("{module}::{name}"), out);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    for e in fs::read_dir(&src).expect("src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            walk(&p, &name, &mut out);
        }
    }
    out
}

/// Modules whose files still import each other in a circle, and why. `copy/`: the state its
/// threads share (`shared`) and the parts that use it (`stage`, `scan`, `file`, `xattr`) call
/// back and forth. The test fails once such a module is free of cycles, so the entry goes.
const STILL_CIRCULAR: &[&str] = &["copy"];

#[test]
fn the_files_of_a_module_form_no_cycle() {
    let modules = directory_modules();
    assert!(
        modules.iter().any(|(m, _)| m == "frontend"),
        "the scan found the modules: {modules:?}"
    );
    let g = file_graph(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/frontend"),
        "frontend",
    );
    assert!(
        g.get("live").is_some_and(|d| d.contains("tui")),
        "the scan sees the files' imports: {g:?}"
    );
    let mut cycles = Vec::new();
    for (module, dir) in &modules {
        let g = file_graph(dir, module);
        let cycle = g.keys().find_map(|file| cycle_from(&g, file));
        match (cycle, STILL_CIRCULAR.contains(&module.as_str())) {
            (Some(c), false) => cycles.push(format!("{module}: {}", c.join(" -> "))),
            (None, true) => {
                panic!("{module}/ has no import cycle any more: drop it from STILL_CIRCULAR")
            }
            _ => {}
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles between the files of a module:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_file_scan_reads_lists_and_super() {
    let text = "use crate::frontend::{live::run, session::{Session, Recorder}, Frontend};\n\
                use super::tui::Shell;\nlet x = super::super::bench;";
    assert_eq!(
        sibling_names(text, "frontend", true),
        ["live", "session", "Frontend", "tui"]
    );
    assert_eq!(
        sibling_names(text, "frontend", false),
        ["live", "session", "Frontend"]
    );
}
