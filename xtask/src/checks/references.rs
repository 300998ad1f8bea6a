//! Tests that every reference in the repository resolves for a reader who has only the
//! repository: relative Markdown links point at files that exist, and nothing cites the
//! team's working notes, which are not part of it.

#[cfg(test)]
mod tests {
    use crate::engine::paths::workspace_root;
    use crate::engine::step::stdout_of;
    use std::path::Path;
    use std::process::Command;

    /// The repository's tracked files (`git ls-files`), as paths relative to its root.
    fn tracked_files() -> Vec<String> {
        let out = stdout_of(
            Command::new("git")
                .args(["ls-files", "-z"])
                .current_dir(workspace_root()),
        )
        .unwrap();
        out.split('\0')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The targets of the inline links `[text](target)` of a Markdown text, outside code
    /// blocks and code spans.
    fn link_targets(markdown: &str) -> Vec<String> {
        let mut targets = Vec::new();
        let mut in_block = false;
        for line in markdown.lines() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                continue;
            }
            if in_block {
                continue;
            }
            // Outside code spans: the even-numbered pieces between backticks.
            for text in line.split('`').step_by(2) {
                let mut rest = text;
                while let Some(at) = rest.find("](") {
                    let after = &rest[at + 2..];
                    let Some(end) = after.find(')') else { break };
                    targets.push(after[..end].to_string());
                    rest = &after[end..];
                }
            }
        }
        targets
    }

    #[test]
    fn link_targets_of_markdown() {
        let md = "see [a](docs/a.md) and [b](../b.md#part), `[c](not/a/link)`\n```\n[d](in/a/block)\n```\n[e](https://example.org)";
        assert_eq!(
            link_targets(md),
            ["docs/a.md", "../b.md#part", "https://example.org"]
        );
    }

    /// Every relative link of every tracked Markdown file names a file or directory of
    /// the repository.
    #[test]
    fn markdown_links_resolve() {
        let root = workspace_root();
        let mut checked = 0;
        let mut broken = Vec::new();
        for file in tracked_files().iter().filter(|f| f.ends_with(".md")) {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let dir = Path::new(file).parent().unwrap_or(Path::new(""));
            for target in link_targets(&text) {
                if target.contains("://")
                    || target.starts_with('#')
                    || target.starts_with("mailto:")
                {
                    continue;
                }
                let path = target.split('#').next().unwrap_or_default();
                checked += 1;
                if !root.join(dir).join(path).exists() {
                    broken.push(format!("{file}: ({target})"));
                }
            }
        }
        assert!(
            broken.is_empty(),
            "links to nothing:\n{}",
            broken.join("\n")
        );
        assert!(
            checked > 20,
            "only {checked} relative links found: is the scan broken?"
        );
    }

    /// Names of documents outside the repository that a citation must not use (state the
    /// fact with its public source instead: a manual section, a Linux source file and
    /// version, or a file of this repository such as docs/qemu.md).
    const OUTSIDE_DOCUMENTS: [&str; 4] =
        ["DESIGN.md", "qemu-facts", "shared/notes", "shared/seeds"];

    /// Whether `line` cites one of the team's numbered seed documents ("seed 004",
    /// "Seed 000", "seed004"), which are not part of the repository either.
    fn cites_a_seed(line: &str) -> bool {
        let lower = line.to_ascii_lowercase();
        lower.match_indices("seed").any(|(at, _)| {
            let rest = lower[at + 4..].trim_start_matches(' ');
            rest.len() >= 3 && rest.as_bytes()[..3].iter().all(u8::is_ascii_digit)
        })
    }

    #[test]
    fn seed_citations_are_recognised() {
        assert!(cites_a_seed("// Seed 000 would read counter 0xFFFFFFFF"));
        assert!(cites_a_seed("the ARM1176 layout (seed004)"));
        assert!(!cites_a_seed(
            "xorshift-driven Fisher-Yates, fixed seed: repeatable"
        ));
        assert!(!cites_a_seed("seed 42"));
    }

    #[test]
    fn no_citation_of_documents_outside_the_repository() {
        let root = workspace_root();
        let mut found = Vec::new();
        for file in tracked_files() {
            if file.ends_with("references.rs") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
                continue; // not text
            };
            for (n, line) in text.lines().enumerate() {
                if OUTSIDE_DOCUMENTS.iter().any(|d| line.contains(d)) || cites_a_seed(line) {
                    found.push(format!("{file}:{}: {line}", n + 1));
                }
            }
        }
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}
