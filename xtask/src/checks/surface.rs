//! `cargo xtask surface`: how large pmu-linux's public surface is, per top-level module,
//! counted from rustdoc's JSON output for aarch64-unknown-linux-musl (the target where
//! every backend is built: perf, direct, software), with pmu-linux's default features:
//! its `rig` feature (the internals the workspace's guest rigs read, not part of the
//! stable API) is not counted. `surface FILE` counts another build's JSON, e.g. one
//! made with `--features rig`.
//!
//! What counts is what a program can reach from the crate root: every public name
//! (module, type, trait, function, constant, re-export) reached through public modules,
//! and the members a program calls through those names: the items of inherent `impl`
//! blocks and the items declared by traits. Trait implementations (`Display`, `From`
//! …), fields and enum variants are left out. An item reached under two names counts
//! once in the total and once in each module that names it. Names pmu-linux re-exports
//! from another crate (`pmu_core`) count as names, without their members.
//!
//! rustdoc's JSON output is unstable (`-Z unstable-options --output-format json`, format
//! version 57 on the pinned 1.95.0), so the command builds it with `RUSTC_BOOTSTRAP=1`,
//! in the build-std target directory ([`crate::engine::paths::bootstrap_target_dir`]).
//! The field names read here are those of the `rustdoc-types` crate, format 57:
//! `index`, `root`, `inner.module.items`, `inner.use.{name,id,is_glob}`,
//! `inner.{struct,enum,union}.impls`, `inner.impl.{trait,is_synthetic,blanket_impl,items}`,
//! `inner.trait.items`, `visibility`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, ExitCode};

use serde_json::Value;

use crate::engine::paths::{bootstrap_target_dir, workspace_root};
use crate::engine::step::run_logged;

/// This module's command in `cargo xtask help`.
pub const USAGE: &str =
    "    surface [FILE]    pmu-linux's public surface, per top-level module: the names
                      reachable from the crate root, and the inherent methods and
                      trait items behind them (rustdoc JSON, aarch64 musl, default
                      features: the guest rigs' `rig` feature is not counted; FILE:
                      count a rustdoc JSON made before, of another commit, say).
";

/// The target whose surface is counted.
const TARGET: &str = "aarch64-unknown-linux-musl";

/// The root module's own names are listed under this heading.
const ROOT: &str = "(root)";

/// What one module (or the root) holds.
#[derive(Default, Debug, PartialEq, Eq)]
struct Module {
    /// Public names in it.
    names: usize,
    /// Inherent methods (and associated items) and trait items behind those names.
    members: usize,
}

/// The surface: per module (by path: `direct::armv8`), and the distinct items over all.
#[derive(Default, Debug, PartialEq, Eq)]
struct Surface {
    modules: BTreeMap<String, Module>,
    /// Distinct named items (by rustdoc id).
    items: usize,
    /// Distinct members (by rustdoc id).
    members: usize,
}

/// Counts `doc` (one crate's rustdoc JSON) from its root module.
fn count(doc: &Value) -> Result<Surface, String> {
    let index = doc
        .get("index")
        .and_then(Value::as_object)
        .ok_or("rustdoc JSON without an `index`")?;
    let root = doc
        .get("root")
        .map(id_key)
        .ok_or("rustdoc JSON without a `root`")?;
    let mut walk = Walk {
        index,
        surface: Surface::default(),
        named: BTreeSet::new(),
        members: BTreeSet::new(),
        modules: BTreeSet::new(),
    };
    walk.surface.modules.insert(ROOT.into(), Module::default());
    walk.module(&root, None)?;
    walk.surface.items = walk.named.len();
    walk.surface.members = walk.members.len();
    Ok(walk.surface)
}

/// A rustdoc id as the key of `index` (ids are numbers, the keys their text).
fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

struct Walk<'a> {
    index: &'a serde_json::Map<String, Value>,
    surface: Surface,
    named: BTreeSet<String>,
    members: BTreeSet<String>,
    /// Modules walked already (a module re-exported twice is walked once).
    modules: BTreeSet<String>,
}

impl Walk<'_> {
    /// Walks the public items of module `id`, reached as `top` (`None`: the root).
    fn module(&mut self, id: &str, top: Option<&str>) -> Result<(), String> {
        if !self.modules.insert(id.to_owned()) {
            return Ok(());
        }
        let items = self.index[id]["inner"]["module"]["items"]
            .as_array()
            .ok_or_else(|| format!("item {id} is not a module"))?
            .clone();
        for child in &items {
            let key = id_key(child);
            let Some(item) = self.index.get(&key) else {
                continue;
            };
            if item["visibility"] != "public" {
                continue;
            }
            let inner = &item["inner"];
            if let Some(reexport) = inner.get("use") {
                let target = reexport.get("id").filter(|t| !t.is_null()).map(id_key);
                let local = target
                    .clone()
                    .filter(|t| self.index.contains_key(t.as_str()));
                if reexport["is_glob"] == true {
                    if let Some(t) = &local {
                        self.module(t, top)?;
                    }
                    continue;
                }
                let name = reexport["name"].as_str().unwrap_or_default().to_owned();
                self.named(target.unwrap_or_else(|| format!("extern {name}")), top);
                if let Some(t) = &local {
                    self.item(t, &name, top)?;
                }
            } else {
                let name = item["name"].as_str().unwrap_or_default().to_owned();
                self.named(key.clone(), top);
                self.item(&key, &name, top)?;
            }
        }
        Ok(())
    }

    /// Counts a name in `top`'s module.
    fn named(&mut self, id: String, top: Option<&str>) {
        self.named.insert(id);
        self.surface
            .modules
            .entry(top.unwrap_or(ROOT).to_owned())
            .or_default()
            .names += 1;
    }

    /// Walks local item `id`, named `name` in `top`: a module's items, a type's
    /// inherent members, a trait's items.
    fn item(&mut self, id: &str, name: &str, top: Option<&str>) -> Result<(), String> {
        let inner = &self.index[id]["inner"];
        if inner.get("module").is_some() {
            let path = match top {
                Some(parent) => format!("{parent}::{name}"),
                None => name.to_owned(),
            };
            return self.module(id, Some(&path));
        }
        let mut members = Vec::new();
        for kind in ["struct", "enum", "union"] {
            for imp in inner[kind]["impls"].as_array().into_iter().flatten() {
                let imp = &self.index[&id_key(imp)]["inner"]["impl"];
                let inherent = imp["trait"].is_null()
                    && imp["is_synthetic"] != true
                    && imp["blanket_impl"].is_null();
                if inherent {
                    members.extend(imp["items"].as_array().into_iter().flatten().cloned());
                }
            }
        }
        members.extend(
            inner["trait"]["items"]
                .as_array()
                .into_iter()
                .flatten()
                .cloned(),
        );
        for member in members {
            let key = id_key(&member);
            let public = self
                .index
                .get(&key)
                .is_some_and(|m| m["visibility"] == "public" || m["visibility"] == "default");
            if public {
                self.members.insert(key);
                self.surface
                    .modules
                    .entry(top.unwrap_or(ROOT).to_owned())
                    .or_default()
                    .members += 1;
            }
        }
        Ok(())
    }
}

/// The table `surface` prints: each module, then each top-level module with its
/// submodules, then the distinct items.
fn table(surface: &Surface) -> String {
    let row = |name: &str, m: &Module| {
        format!(
            "{name:<24} {:>6} {:>8} {:>6}\n",
            m.names,
            m.members,
            m.names + m.members
        )
    };
    let mut out = format!(
        "{:<24} {:>6} {:>8} {:>6}\n",
        "module", "names", "members", "all"
    );
    let mut tops: BTreeMap<&str, Module> = BTreeMap::new();
    for (name, m) in &surface.modules {
        out += &row(name, m);
        let top = tops
            .entry(name.split("::").next().unwrap_or(name))
            .or_default();
        top.names += m.names;
        top.members += m.members;
    }
    out += "\nwith their submodules:\n";
    for (name, m) in &tops {
        out += &row(name, m);
    }
    out += &format!(
        "{:<24} {:>6} {:>8} {:>6}  (distinct items)\n",
        "total",
        surface.items,
        surface.members,
        surface.items + surface.members
    );
    out
}

/// `cargo xtask surface [FILE]`: counts `file`, else builds pmu-linux's JSON and counts it.
pub fn run(file: Option<&str>) -> ExitCode {
    match surface(file) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("surface: {why}");
            ExitCode::FAILURE
        }
    }
}

fn surface(file: Option<&str>) -> Result<String, String> {
    let path = match file {
        Some(f) => std::path::PathBuf::from(f),
        None => build()?,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = table(&count(&doc)?);
    if file.is_none() {
        out += "(pmu-linux's default features: the `rig` feature, the guest rigs' view of \
                internals, is not counted)\n";
    }
    Ok(out)
}

/// Builds pmu-linux's rustdoc JSON for [`TARGET`] with its default features (`-p
/// pmu-linux` alone: no other package's features are unified in); returns its path.
fn build() -> Result<std::path::PathBuf, String> {
    let target_dir = bootstrap_target_dir();
    run_logged(
        "rustdoc JSON of pmu-linux",
        "surface-rustdoc",
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(workspace_root())
            .args(["doc", "-p", "pmu-linux", "--no-deps", "--target", TARGET])
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json"),
    )?;
    Ok(target_dir.join(TARGET).join("doc/pmu_linux.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate in rustdoc's JSON shape (format 57, the `rustdoc-types` crate's field
    /// names), written by hand: root { struct S (inherent impl: 2 methods, a trait impl,
    /// an auto-trait impl), mod m { trait T (2 items), a private fn }, pub use m::T as
    /// U, pub use other::X }.
    fn doc() -> Value {
        serde_json::json!({
            "root": 0,
            "index": {
                "0": {"name": "c", "visibility": "public", "inner": {"module": {"items": [1, 10, 20, 21]}}},
                "1": {"name": "S", "visibility": "public", "inner": {"struct": {"impls": [2, 5, 6]}}},
                "2": {"name": null, "visibility": "default", "inner": {"impl": {"trait": null, "is_synthetic": false, "blanket_impl": null, "items": [3, 4]}}},
                "3": {"name": "new", "visibility": "public", "inner": {"function": {}}},
                "4": {"name": "get", "visibility": "public", "inner": {"function": {}}},
                "5": {"name": null, "visibility": "default", "inner": {"impl": {"trait": {"path": "Display"}, "is_synthetic": false, "blanket_impl": null, "items": [7]}}},
                "6": {"name": null, "visibility": "default", "inner": {"impl": {"trait": {"path": "Send"}, "is_synthetic": true, "blanket_impl": null, "items": []}}},
                "7": {"name": "fmt", "visibility": "default", "inner": {"function": {}}},
                "10": {"name": "m", "visibility": "public", "inner": {"module": {"items": [11, 14]}}},
                "11": {"name": "T", "visibility": "public", "inner": {"trait": {"items": [12, 13]}}},
                "12": {"name": "a", "visibility": "default", "inner": {"function": {}}},
                "13": {"name": "B", "visibility": "default", "inner": {"assoc_type": {}}},
                "14": {"name": "hidden", "visibility": "crate", "inner": {"function": {}}},
                "20": {"name": null, "visibility": "public", "inner": {"use": {"source": "m::T", "name": "U", "id": 11, "is_glob": false}}},
                "21": {"name": null, "visibility": "public", "inner": {"use": {"source": "other::X", "name": "X", "id": 99, "is_glob": false}}}
            }
        })
    }

    #[test]
    fn counts_names_and_members_per_module() {
        let surface = count(&doc()).expect("counts");
        // Root: S, m, U, X (4 names); S's 2 inherent methods and U's 2 trait items.
        assert_eq!(
            surface.modules[ROOT],
            Module {
                names: 4,
                members: 4
            }
        );
        // m: T (the private fn left out) and its 2 items.
        assert_eq!(
            surface.modules["m"],
            Module {
                names: 1,
                members: 2
            }
        );
        // Distinct: S, m, T (named twice), X; new, get, a, B.
        assert_eq!((surface.items, surface.members), (4, 4));
    }
}
