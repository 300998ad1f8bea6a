//! The library crates as crates.io would build them: `cargo package` of each published
//! crate, which packs its files and builds the package alone, with its workspace path
//! dependencies replaced by the packages just made (what `cargo publish --dry-run` does,
//! offline and without the upload check).

use crate::step::Step;

/// The crates published to crates.io, in the workspace's `publish` settings: every other
/// member (xtask, the images, the tests, pmu-demo, the module's object) has
/// `publish = false`. A test keeps this list equal to `cargo metadata`'s.
pub const PUBLISHED: [&str; 6] = [
    "pmu-core",
    "pmu-x86",
    "pmu-armv6",
    "pmu-armv7",
    "pmu-armv8",
    "pmu-linux",
];

/// `cargo package --offline` of every [`PUBLISHED`] crate (`--allow-dirty`: a working
/// tree with uncommitted changes is what is being tested).
pub fn step() -> Step {
    let mut args = vec!["package", "--offline", "--allow-dirty"];
    for name in PUBLISHED {
        args.extend(["-p", name]);
    }
    Step::cargo(
        "the library crates packaged and built as crates.io would (cargo package --offline)",
        args,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::{stdout_of, workspace_root};
    use std::process::Command;

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
