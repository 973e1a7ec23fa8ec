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
