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
//!
//! The same reading holds pmu-linux to its shape: no circle of three or more files
//! there either, and no backend names the front door (`meter`). A file's test module
//! (`#[cfg(test)] mod tests`) and test-only files are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom first; `main.rs` and the files beside it are above them all.
const LAYERS: [&str; 6] = ["engine", "host", "build", "guests", "reports", "checks"];

/// A source file: its module path (`engine::step`; `""` for main.rs and lib.rs) and its
/// text without its test module.
struct Source {
    module: String,
    text: String,
    /// Modules it declares under another file's name (`#[path = "meter/perf.rs"] mod
    /// perf_rungs;`): the name as the code says it, and the file's module path.
    aliases: Vec<(String, String)>,
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
            let module = module_of(rel);
            if module.rsplit("::").next() == Some("tests") {
                continue; // a test-only file
            }
            let text = std::fs::read_to_string(&path).expect("readable source");
            let text = without_test_modules(&text);
            let aliases = path_aliases(&module, rel.parent().unwrap_or(Path::new("")), &text);
            out.push(Source {
                module,
                text,
                aliases,
            });
        }
    }
    out
}

/// `text` without its inline test modules: a `#[cfg(test)]` line followed by `mod x {`
/// (or `pub(crate) mod x {`), through its closing `}` in the first column.
fn without_test_modules(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let opens_test_module = line == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                let item = next
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ");
                item.starts_with("mod ") && item.ends_with('{')
            });
        if opens_test_module {
            for inner in lines.by_ref() {
                if inner == "}" {
                    break;
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The module path of the file at `rel` (relative to `src/`): `direct/armv8.rs` is
/// `direct::armv8`; `main.rs`, `lib.rs` and `mod.rs` name their directory.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "main" || p == "lib")
    {
        parts.pop();
    }
    parts.join("::")
}

/// The `#[path = "…"] mod name;` declarations in `text` (the file of `module`, in
/// directory `dir` under `src/`): `module::name` and the module path of the file it
/// names. Paths are relative to the declaring file's directory, as rustc takes them
/// outside inline modules.
fn path_aliases(module: &str, dir: &Path, text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let code = line.trim_start();
        if let Some(rest) = code.strip_prefix("#[path = \"") {
            pending = rest.split('"').next().map(str::to_string);
            continue;
        }
        let Some(file) = pending.as_ref() else {
            continue;
        };
        if code.starts_with("#[") {
            continue; // another attribute of the same item
        }
        let item = code
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        if let Some(name) = item.strip_prefix("mod ") {
            let name = name.trim_end_matches(';').trim();
            let alias = if module.is_empty() {
                name.to_string()
            } else {
                format!("{module}::{name}")
            };
            out.push((alias, module_of(&dir.join(file))));
        }
        pending = None;
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
/// `super::…` path, and each path through a module `module` declares (`armv8::open`),
/// resolved to the longest prefix that is one of `names` (a module's path, or the
/// name a `#[path]` declaration gives it), then to the files behind that name.
fn references(
    module: &str,
    text: &str,
    names: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeSet<String> {
    let children: Vec<&str> = names
        .keys()
        .filter_map(|n| {
            let rest = if module.is_empty() {
                Some(n.as_str())
            } else {
                n.strip_prefix(module).and_then(|r| r.strip_prefix("::"))
            }?;
            (!rest.is_empty() && !rest.contains("::")).then_some(rest)
        })
        .collect();
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let mut prefixes = vec![
            ("crate::".to_string(), String::new()),
            ("super::".to_string(), parent(module)),
        ];
        for child in &children {
            prefixes.push((format!("{child}::"), module.to_string()));
        }
        for (prefix, base) in &prefixes {
            let relative = prefix != "crate::" && prefix != "super::";
            for (at, _) in code.match_indices(prefix.as_str()) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue; // `xcrate::`, `mysuper::`, `a::armv8::`
                }
                let start = if relative { at } else { at + prefix.len() };
                let mut path = Vec::new();
                for part in code[start..].split("::") {
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
                for n in (0..=path.len()).rev() {
                    let mut candidate: Vec<&str> = if base.is_empty() {
                        Vec::new()
                    } else {
                        base.split("::").collect()
                    };
                    candidate.extend(&path[..n]);
                    if let Some(files) = names.get(&candidate.join("::")) {
                        found.extend(files.iter().filter(|f| *f != module).cloned());
                        break;
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

/// The file graph of a crate's sources: module → the modules it names.
fn graph(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let mut names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        names
            .entry(s.module.clone())
            .or_default()
            .insert(s.module.clone());
        for (alias, file) in &s.aliases {
            names.entry(alias.clone()).or_default().insert(file.clone());
        }
    }
    sources
        .iter()
        .map(|s| (s.module.clone(), references(&s.module, &s.text, &names)))
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

/// pmu-linux's file graph without its root: lib.rs declares every module and
/// re-exports the front door's names, and the files name `crate::Error` or
/// `crate::Sentinel` through it; the root is the crate's facade, not a room.
fn pmu_linux_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pmu-linux/src");
    let sources = sources(&src);
    assert!(sources.len() > 30, "pmu-linux's sources were found");
    graph(&sources)
        .into_iter()
        .filter(|(from, _)| !from.is_empty())
        .map(|(from, tos)| (from, tos.into_iter().filter(|to| !to.is_empty()).collect()))
        .collect()
}

/// pmu-linux: no import circle of three or more files (parent and child may name each
/// other, as `error` and `direct::grant` do).
#[test]
fn pmu_linux_has_no_import_circle_of_three_or_more_files() {
    let circles: Vec<Vec<String>> = components(&pmu_linux_graph())
        .into_iter()
        .filter(|c| c.len() >= 3)
        .collect();
    assert!(
        circles.is_empty(),
        "import circles in pmu-linux: {circles:#?}"
    );
}

/// pmu-linux: the backends never name the front door; only `meter` and its files do.
#[test]
fn pmu_linux_backends_do_not_name_the_meter() {
    let up: Vec<String> = pmu_linux_graph()
        .into_iter()
        .filter(|(from, _)| from != "meter" && !from.starts_with("meter::"))
        .flat_map(|(from, tos)| {
            tos.into_iter()
                .filter(|to| to == "meter" || to.starts_with("meter::"))
                .map(move |to| format!("{from} -> {to}"))
        })
        .collect();
    assert!(up.is_empty(), "pmu-linux files naming the meter: {up:#?}");
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
        aliases: path_aliases(module, Path::new(""), text),
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
