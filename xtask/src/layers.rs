//! The shape of xtask, checked: its folders are layers, and a file names only files of
//! its own layer or of layers below it (`crate::…` and `super::…` paths, comments left
//! out). From the bottom:
//!
//! | layer | what it holds |
//! |---|---|
//! | `engine/` | steps, plans, lanes, needs, locks, stdout, every path root |
//! | `host/` | set-up, apt |
//! | `build/` | kernels, modules, initramfs archives, images, boards |
//! | `guests/` | the end-to-end runs |
//! | `reports/` | commands that turn a guest's console into a report |
//! | `checks/` | whole-workspace checks |
//! | `main.rs` | the command line and the plans |
//!
//! Inside a layer files may name each other, but no circle of three or more files may
//! form anywhere (Tarjan's strongly connected components over the file graph).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom first; `main.rs` and the files beside it are above them all.
const LAYERS: [&str; 6] = ["engine", "host", "build", "guests", "reports", "checks"];

/// A source file: its module path (`engine::step`; `""` for main.rs) and its text.
struct Source {
    module: String,
    text: String,
}

/// Every `.rs` file under `dir`, as modules of the crate.
fn sources(dir: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("a source directory").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(dir).expect("under src");
            let mut parts: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod" || p == "main") {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).expect("readable source");
            out.push(Source {
                module: parts.join("::"),
                text,
            });
        }
    }
    out
}

/// The layer of `module` (its index in [`LAYERS`]); above them all for the crate root
/// and the files beside main.rs.
fn layer(module: &str) -> usize {
    let top = module.split("::").next().unwrap_or("");
    LAYERS
        .iter()
        .position(|l| *l == top)
        .unwrap_or(LAYERS.len())
}

/// The modules `text` (the source of `module`) names: each `crate::a::b::…` or
/// `super::…` path resolved to the longest prefix that is one of `modules`.
fn references(module: &str, text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        for (prefix, base) in [("crate::", String::new()), ("super::", parent(module))] {
            for (at, _) in code.match_indices(prefix) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue; // `xcrate::`, `mysuper::`
                }
                let mut path = Vec::new();
                for part in code[at + prefix.len()..].split("::") {
                    let end = part
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(part.len());
                    if end == 0 {
                        break;
                    }
                    path.push(&part[..end]);
                    if end < part.len() {
                        break;
                    }
                }
                let mut target = None;
                for n in (0..=path.len()).rev() {
                    let mut candidate: Vec<&str> = if base.is_empty() {
                        Vec::new()
                    } else {
                        base.split("::").collect()
                    };
                    candidate.extend(&path[..n]);
                    let candidate = candidate.join("::");
                    if modules.contains(&candidate) {
                        target = Some(candidate);
                        break;
                    }
                }
                if let Some(target) = target {
                    if target != module {
                        found.insert(target);
                    }
                }
            }
        }
    }
    found
}

/// The module `super::` names inside `module`.
fn parent(module: &str) -> String {
    match module.rsplit_once("::") {
        Some((parent, _)) => parent.to_string(),
        None => String::new(),
    }
}

/// The file graph of xtask's sources: module → the modules it names.
fn graph(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = sources.iter().map(|s| s.module.clone()).collect();
    sources
        .iter()
        .map(|s| (s.module.clone(), references(&s.module, &s.text, &modules)))
        .collect()
}

/// The arrows that point from a lower layer to a higher one.
fn upward(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut up = Vec::new();
    for (from, tos) in graph {
        for to in tos {
            if layer(to) > layer(from) {
                let name = |m: &str| {
                    if m.is_empty() {
                        "main".to_string()
                    } else {
                        m.to_string()
                    }
                };
                up.push(format!("{} -> {}", name(from), name(to)));
            }
        }
    }
    up
}

/// The strongly connected components of `graph` (Tarjan), each sorted.
fn components(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                component.sort();
                self.out.push(component);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

fn xtask_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = sources(&src);
    assert!(sources.len() > 20, "xtask's sources were found");
    graph(&sources)
}

/// No file names a file of a higher layer.
#[test]
fn imports_run_downward_only() {
    let up = upward(&xtask_graph());
    assert!(up.is_empty(), "upward imports: {up:#?}");
}

/// No import circle of three or more files.
#[test]
fn no_import_circle_of_three_or_more_files() {
    let circles: Vec<Vec<String>> = components(&xtask_graph())
        .into_iter()
        .filter(|c| c.len() >= 3)
        .collect();
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

/// The checks above stand on this reading of a source: paths through `crate::` and
/// `super::` resolve to the longest module prefix, comments do not count, a lower layer
/// naming a higher one is found, and a three-file circle is one component (the graphs
/// here are made up for the test).
#[test]
fn the_checker_finds_what_it_must() {
    let sources = [
        (
            "engine::step",
            "use crate::host::setup::TOOLCHAIN;\n// crate::checks::demo\n",
        ),
        ("host::setup", "pub fn f() { super::apt::g(); }\n"),
        ("host::apt", "use crate::engine::step::{Plan, Step};\n"),
        ("host", "pub mod apt;\n"),
        ("checks::demo", "notcrate::guests::e2e;\n"),
        ("guests::e2e", "fn f() -> crate::engine::step::Step {}\n"),
    ]
    .map(|(module, text)| Source {
        module: module.into(),
        text: text.into(),
    });
    let g = graph(&sources);
    assert_eq!(
        g["engine::step"],
        BTreeSet::from(["host::setup".to_string()])
    );
    assert_eq!(g["host::setup"], BTreeSet::from(["host::apt".to_string()]));
    assert_eq!(g["checks::demo"], BTreeSet::new());
    assert_eq!(upward(&g), ["engine::step -> host::setup"]);
    let ring = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
        ("d".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    let mut parts = components(&ring);
    parts.sort();
    assert_eq!(parts, [vec!["a", "b", "c"], vec!["d"]]);
}
