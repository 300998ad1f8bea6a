//! The library crates as crates.io would build them: `cargo package` of each published
//! crate, which packs its files and builds the package alone, with its workspace path
//! dependencies replaced by the packages just made (what `cargo publish --dry-run` does,
//! offline and without the upload check).

use crate::engine::step::Step;

/// The crates published to crates.io, in the workspace's `publish` settings: every other
/// member (xtask, the images, the tests, pmu-demo, the module's object) has
/// `publish = false`. A test keeps this list equal to `cargo metadata`'s.
pub const PUBLISHED: [&str; 9] = [
    "pmu-core",
    "pmu-events",
    "pmu-x86",
    "pmu-armv6",
    "pmu-armv7",
    "pmu-armv8",
    "pmu-linux",
    "pmu-qemu",
    "pmu-criterion",
];

/// `cargo package --offline` of every [`PUBLISHED`] crate (`--allow-dirty`: a working
/// tree with uncommitted changes is what is being tested).
pub fn steps() -> Vec<Step> {
    let mut args = vec!["package", "--offline", "--allow-dirty"];
    for name in PUBLISHED {
        args.extend(["-p", name]);
    }
    vec![
        Step::func(
            "forget earlier package verifications' unpacked sources (cargo reuses them)",
            forget_unpacked,
        ),
        // In the clone's own target/, never the shared one (crate::engine::shared_target): the
        // verification's local registry would have the same path in every run, and cargo
        // takes a registry crate's build by its name and version, so a run would verify
        // against the crates an earlier run packaged.
        Step::cargo(
            "the library crates packaged and built as crates.io would (cargo package --offline)",
            args,
        )
        .env("CARGO_TARGET_DIR", crate::engine::paths::work_dir()),
    ]
}

/// `cargo package` verifies each crate against the others through a local registry in
/// `target/package/tmp-registry`, whose crates cargo unpacks into
/// `$CARGO_HOME/registry/src/-<hash of that path>/<name>-<version>` and, when that
/// directory exists already, reuses without comparing it with the new package: a
/// clone at a path an earlier run used (same version, older sources) was verified
/// against the older ones (seen: `Hazards::KERNEL_ENTRY` not found). Removes those
/// directories of this workspace's crates; crates.io's sources (`index.crates.io-…`)
/// are left alone.
fn forget_unpacked() -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let src = home.join("registry/src");
    let Ok(registries) = std::fs::read_dir(&src) else {
        return Ok(()); // nothing unpacked yet
    };
    for registry in registries.flatten() {
        if !is_local_registry(&registry.file_name().to_string_lossy()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            if is_ours(&entry.file_name().to_string_lossy()) {
                std::fs::remove_dir_all(entry.path())
                    .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            }
        }
    }
    Ok(())
}

/// A registry source directory of a local (`file://`) registry: cargo names it by the
/// URL's host, empty there, so the name starts with the dash before the hash.
fn is_local_registry(dir: &str) -> bool {
    dir.starts_with('-')
}

/// `<name>-<version>` of one of [`PUBLISHED`].
fn is_ours(dir: &str) -> bool {
    PUBLISHED.iter().any(|name| {
        dir.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::paths::workspace_root;
    use crate::engine::step::stdout_of;
    use std::process::Command;

    /// What `forget_unpacked` removes: this workspace's crates in local registries
    /// (names as seen in `~/.cargo/registry/src` after `cargo package`), nothing of
    /// crates.io's, nor a crate whose name only starts like ours.
    #[test]
    fn forgets_only_our_unpacked_crates() {
        assert!(is_local_registry("-31bfa3159cf5eb4d"));
        assert!(!is_local_registry("index.crates.io-1949cf8c6b5b557f"));
        assert!(is_ours("pmu-core-0.1.0"));
        assert!(is_ours("pmu-linux-0.2.3"));
        assert!(!is_ours("pmu-core-extra-0.1.0"));
        assert!(!is_ours("bitflags-2.13.2"));
    }

    /// `cargo metadata`: a member whose `publish` is null may be published anywhere, an
    /// empty list nowhere. The publishable members are exactly [`PUBLISHED`], so a new
    /// library crate is packaged by the test step or marked unpublished on purpose.
    #[test]
    fn published_crates_match_the_manifests() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = stdout_of(
            Command::new(cargo)
                .args([
                    "metadata",
                    "--no-deps",
                    "--offline",
                    "--format-version",
                    "1",
                ])
                .current_dir(workspace_root()),
        )
        .unwrap();
        let metadata: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mut publishable: Vec<&str> = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["publish"].is_null())
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        publishable.sort_unstable();
        let mut expected = PUBLISHED.to_vec();
        expected.sort_unstable();
        assert_eq!(publishable, expected);
        // Each has what crates.io shows and needs.
        for package in metadata["packages"].as_array().unwrap() {
            if !package["publish"].is_null() {
                continue;
            }
            let name = package["name"].as_str().unwrap();
            for key in [
                "description",
                "license",
                "repository",
                "documentation",
                "readme",
            ] {
                assert!(package[key].is_string(), "{name} has no {key}");
            }
            assert!(
                !package["keywords"].as_array().unwrap().is_empty(),
                "{name}"
            );
            assert!(
                !package["categories"].as_array().unwrap().is_empty(),
                "{name}"
            );
        }
    }
}
