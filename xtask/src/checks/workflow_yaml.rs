//! A reader of the GitHub Actions workflow in docs/pmu-qemu.md, for `cargo xtask
//! pmu-qemu-workflow`: the fenced block is found in its Markdown section, its YAML read
//! into the steps of its one job, and `${{ … }}` expressions replaced by given values.
//!
//! The reader knows the block-style subset such a workflow is written in (YAML 1.2,
//! yaml.org/spec/1.2.2, chapter 8 "Block Style Productions"): mappings `key: value`
//! nested by indentation, sequences of `- ` items (also at their key's indentation),
//! literal block scalars (`|`, `|-`, `|+`, all read as `|`: lines kept, one final line
//! break), plain scalars with `#` comments, and single- and double-quoted scalars (in
//! double quotes only `\\` and `\"`). Anything else (flow `{…}`/`[…]`, folded `>`,
//! anchors, tags, tabs, several documents, a duplicate key) is an error naming its line,
//! never a silent misreading. The workspace has no YAML crate, and this subset does not
//! need one.

/// A YAML node of the subset.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A scalar's text.
    Scalar(String),
    /// `key: value` pairs in their order.
    Map(Vec<(String, Node)>),
    /// `- item`s.
    List(Vec<Node>),
}

/// One step of the workflow's job, as written (expressions not yet replaced).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct WorkflowStep {
    /// `name:`.
    pub name: Option<String>,
    /// `uses:` (an action).
    pub uses: Option<String>,
    /// `run:` (a script for bash).
    pub run: Option<String>,
    /// `with:` (the action's inputs).
    pub with: Vec<(String, String)>,
    /// `env:`.
    pub env: Vec<(String, String)>,
    /// `if:`.
    pub condition: Option<String>,
}

impl WorkflowStep {
    /// How the output names the step: its `name`, else its action, else its script.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .or_else(|| self.uses.as_ref().map(|u| format!("uses: {u}")))
            .or_else(|| self.run.as_ref().map(|r| format!("run: {}", r.trim())))
            .unwrap_or_default()
    }

    /// The input `key` of the action.
    pub fn input(&self, key: &str) -> Option<&str> {
        self.with
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The one job of a workflow.
#[derive(Debug, Default, PartialEq)]
pub struct Workflow {
    /// The job's `env:`.
    pub env: Vec<(String, String)>,
    /// The job's `steps:`.
    pub steps: Vec<WorkflowStep>,
}

/// The first fenced block whose info string is `lang` in the Markdown section whose
/// heading line is `heading` (up to the next heading of level 2 or higher).
pub fn fenced_block(markdown: &str, heading: &str, lang: &str) -> Result<String, String> {
    let mut lines = markdown.lines();
    lines
        .by_ref()
        .find(|l| l.trim_end() == heading)
        .ok_or_else(|| format!("no section `{heading}`"))?;
    let opening = format!("```{lang}");
    let mut fenced = false;
    for line in lines.by_ref() {
        if line.starts_with("```") {
            if line.trim_end() == opening {
                let mut block = String::new();
                for inner in lines.by_ref() {
                    if inner.starts_with("```") {
                        return Ok(block);
                    }
                    block += inner;
                    block += "\n";
                }
                return Err(format!("the ```{lang} block of `{heading}` is not closed"));
            }
            fenced = !fenced;
        } else if !fenced && (line.starts_with("# ") || line.starts_with("## ")) {
            break;
        }
    }
    Err(format!("no ```{lang} block in the section `{heading}`"))
}

/// A line of structure: `- ` markers are lines of their own, so `- key: v` is a marker
/// and a `key: v` two columns further in.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    /// The index of the source line (0-based).
    raw: usize,
    indent: usize,
    text: &'a str,
    dash: bool,
}

fn entries<'a>(raw: &[&'a str]) -> Result<Vec<Entry<'a>>, String> {
    let mut out = Vec::new();
    for (n, line) in raw.iter().enumerate() {
        let trimmed = line.trim_start_matches(' ');
        if trimmed.starts_with('\t') {
            return Err(format!("line {}: a tab in the indentation", n + 1));
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if n > 0 && (*line == "---" || *line == "...") {
            return Err(format!("line {}: several documents", n + 1));
        }
        let mut indent = line.len() - trimmed.len();
        let mut text = trimmed.trim_end();
        while text == "-" || text.starts_with("- ") {
            out.push(Entry {
                raw: n,
                indent,
                text: "-",
                dash: true,
            });
            let rest = text[1..].trim_start_matches(' ');
            indent += text.len() - rest.len();
            text = rest;
        }
        if !text.is_empty() {
            out.push(Entry {
                raw: n,
                indent,
                text,
                dash: false,
            });
        }
    }
    Ok(out)
}

struct Parser<'a> {
    raw: Vec<&'a str>,
    entries: Vec<Entry<'a>>,
    at: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Entry<'a>> {
        self.entries.get(self.at).copied()
    }

    /// The node whose first entry is the next one, at `indent`.
    fn node(&mut self, indent: usize) -> Result<Node, String> {
        match self.peek() {
            Some(e) if e.dash => self.list(indent),
            _ => self.map(indent),
        }
    }

    fn list(&mut self, indent: usize) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(e) = self.peek() {
            if e.indent != indent || !e.dash {
                break;
            }
            self.at += 1;
            match self.peek() {
                Some(n) if n.indent > indent && n.raw == e.raw => items.push(self.node(n.indent)?),
                Some(n) if n.indent > indent => {
                    return Err(format!(
                        "line {}: a `-` item's content must follow the `-` on its line",
                        e.raw + 1
                    ))
                }
                _ => items.push(Node::Scalar(String::new())),
            }
        }
        Ok(Node::List(items))
    }

    fn map(&mut self, indent: usize) -> Result<Node, String> {
        let mut pairs: Vec<(String, Node)> = Vec::new();
        while let Some(e) = self.peek() {
            if e.indent < indent {
                break;
            }
            if e.indent > indent || e.dash {
                return Err(format!("line {}: unexpected indentation or `-`", e.raw + 1));
            }
            let line = e.raw + 1;
            let (key, value) = split_key(e.text).ok_or_else(|| {
                format!("line {line}: not `key: value` (this reader knows block mappings only)")
            })?;
            self.at += 1;
            let node = match value {
                "" => match self.peek() {
                    Some(n) if n.indent > indent || (n.dash && n.indent == indent) => {
                        self.node(n.indent)?
                    }
                    _ => Node::Scalar(String::new()),
                },
                "|" | "|-" | "|+" => Node::Scalar(self.block_scalar(e.raw, indent)),
                v => Node::Scalar(scalar(v).map_err(|why| format!("line {line}: {why}"))?),
            };
            if pairs.iter().any(|(k, _)| k == key) {
                return Err(format!("line {line}: `{key}` twice"));
            }
            pairs.push((key.to_owned(), node));
        }
        Ok(Node::Map(pairs))
    }

    /// The literal block scalar after the key on source line `raw` (at `indent`): the
    /// lines indented further, or blank, less the first one's indentation.
    fn block_scalar(&mut self, raw: usize, indent: usize) -> String {
        let mut lines = Vec::new();
        let mut content_indent = None;
        let mut last = raw;
        for (n, line) in self.raw.iter().enumerate().skip(raw + 1) {
            let trimmed = line.trim_start_matches(' ');
            let this_indent = line.len() - trimmed.len();
            if trimmed.is_empty() {
                lines.push("");
                continue;
            }
            if this_indent <= indent {
                break;
            }
            let at = *content_indent.get_or_insert(this_indent);
            lines.push(line.get(at.min(this_indent)..).unwrap_or(""));
            last = n;
        }
        while self.peek().is_some_and(|e| e.raw <= last) {
            self.at += 1;
        }
        let text = lines[..lines.len().min(last - raw)].join("\n");
        format!("{}\n", text.trim_end_matches('\n'))
    }
}

/// `key: value` or `key:`, the key plain.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let (key, value) = match text.find(": ") {
        Some(i) => (&text[..i], text[i + 2..].trim()),
        None => (text.strip_suffix(':')?, ""),
    };
    let plain = !key.is_empty()
        && !key.starts_with(['"', '\'', '{', '[', '&', '*', '!', '?'])
        && !key.contains('#');
    plain.then_some((key, value))
}

/// A scalar written on its key's line.
fn scalar(v: &str) -> Result<String, String> {
    if let Some(inner) = v.strip_prefix('\'') {
        let inner = inner
            .strip_suffix('\'')
            .ok_or("a single-quoted scalar must end on its line")?;
        return Ok(inner.replace("''", "'"));
    }
    if let Some(inner) = v.strip_prefix('"') {
        let inner = inner
            .strip_suffix('"')
            .ok_or("a double-quoted scalar must end on its line")?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some(c @ ('\\' | '"')) => out.push(c),
                    other => {
                        return Err(format!(
                            "the escape `\\{}` is not read here",
                            other.unwrap_or(' ')
                        ))
                    }
                }
            } else {
                out.push(c);
            }
        }
        return Ok(out);
    }
    if v.starts_with(['{', '[', '>', '&', '*', '!', '%', '@', '`']) {
        return Err(format!(
            "`{v}`: flow, folded, anchor and tag syntax is not read here"
        ));
    }
    // A plain scalar ends before ` #` (a comment).
    let v = v.split(" #").next().unwrap_or(v).trim_end();
    Ok(v.to_owned())
}

/// The YAML text as a node.
pub fn read_yaml(text: &str) -> Result<Node, String> {
    let raw: Vec<&str> = text.lines().collect();
    let entries = entries(&raw)?;
    let first = entries.first().map_or(0, |e| e.indent);
    let mut parser = Parser {
        raw,
        entries,
        at: 0,
    };
    let node = parser.node(first)?;
    match parser.peek() {
        Some(e) => Err(format!("line {}: unexpected indentation", e.raw + 1)),
        None => Ok(node),
    }
}

fn get<'a>(pairs: &'a [(String, Node)], key: &str) -> Option<&'a Node> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn scalars(node: &Node, what: &str) -> Result<Vec<(String, String)>, String> {
    let Node::Map(pairs) = node else {
        return Err(format!("`{what}` is not a mapping"));
    };
    pairs
        .iter()
        .map(|(k, v)| match v {
            Node::Scalar(s) => Ok((k.clone(), s.clone())),
            _ => Err(format!("`{what}.{k}` is not a scalar")),
        })
        .collect()
}

/// The keys of a step this reader knows; another is an error, so that a step the check
/// would misread never passes.
const STEP_KEYS: [&str; 6] = ["name", "uses", "run", "with", "env", "if"];

/// The workflow's one job: its `env` and `steps`.
pub fn read_workflow(text: &str) -> Result<Workflow, String> {
    let Node::Map(top) = read_yaml(text)? else {
        return Err("the workflow is not a mapping".into());
    };
    let Some(Node::Map(jobs)) = get(&top, "jobs") else {
        return Err("the workflow has no `jobs:` mapping".into());
    };
    let [(job_id, Node::Map(job))] = jobs.as_slice() else {
        return Err(format!(
            "the workflow must have one job (a mapping), not {}",
            jobs.len()
        ));
    };
    let env = get(job, "env")
        .map(|n| scalars(n, "env"))
        .transpose()?
        .unwrap_or_default();
    let Some(Node::List(items)) = get(job, "steps") else {
        return Err(format!("the job `{job_id}` has no `steps:` list"));
    };
    let mut steps = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Node::Map(pairs) = item else {
            return Err(format!("step {} is not a mapping", i + 1));
        };
        let mut step = WorkflowStep::default();
        for (key, value) in pairs {
            let text = || match value {
                Node::Scalar(s) => Ok(s.clone()),
                _ => Err(format!("step {}: `{key}` is not a scalar", i + 1)),
            };
            match key.as_str() {
                "name" => step.name = Some(text()?),
                "uses" => step.uses = Some(text()?),
                "run" => step.run = Some(text()?),
                "if" => step.condition = Some(text()?),
                "with" => step.with = scalars(value, "with")?,
                "env" => step.env = scalars(value, "env")?,
                other => {
                    return Err(format!(
                        "step {}: `{other}` is not read here (only {})",
                        i + 1,
                        STEP_KEYS.join(", ")
                    ))
                }
            }
        }
        if step.uses.is_some() == step.run.is_some() {
            return Err(format!(
                "step {} (`{}`): one of `uses` and `run`",
                i + 1,
                step.label()
            ));
        }
        steps.push(step);
    }
    Ok(Workflow { env, steps })
}

/// `text` with each `${{ expression }}` replaced by its value in `values`; an
/// expression without one is an error naming it.
pub fn substitute(text: &str, values: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out += &rest[..start];
        let after = &rest[start + 3..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("`${{{{` without `}}}}` in `{text}`"))?;
        let expression = after[..end].trim();
        let value = values
            .iter()
            .find(|(k, _)| *k == expression)
            .map(|(_, v)| v)
            .ok_or_else(|| {
                format!(
                    "`${{{{ {expression} }}}}` has no local value (known: {})",
                    values
                        .iter()
                        .map(|(k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        out += value;
        rest = &after[end + 2..];
    }
    out += rest;
    Ok(out)
}

/// Whether the relative path `path` (components split by `/`) matches `pattern`, a glob
/// as actions/upload-artifact's `path` takes it: `**` any number of components, `*` any
/// text within one.
pub fn glob_matches(pattern: &str, path: &str) -> bool {
    fn components(p: &[&str], s: &[&str]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(&"**"), _) => components(&p[1..], s) || (!s.is_empty() && components(p, &s[1..])),
            (Some(pc), Some(sc)) => component(pc, sc) && components(&p[1..], &s[1..]),
            _ => false,
        }
    }
    fn component(p: &str, s: &str) -> bool {
        match p.split_once('*') {
            None => p == s,
            Some((head, tail)) => {
                s.starts_with(head)
                    && (0..=s.len() - head.len()).any(|i| {
                        s.is_char_boundary(head.len() + i) && component(tail, &s[head.len() + i..])
                    })
            }
        }
    }
    let p: Vec<&str> = pattern.split('/').collect();
    let s: Vec<&str> = path.split('/').collect();
    components(&p, &s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOCS: &str = include_str!("../../../docs/pmu-qemu.md");

    /// The input of `cargo xtask pmu-qemu-workflow`: docs/pmu-qemu.md's `## CI` block.
    #[test]
    fn the_docs_workflow_block_is_read_into_its_steps() {
        let yaml = fenced_block(DOCS, "## CI", "yaml").unwrap();
        let workflow = read_workflow(&yaml).unwrap();
        assert!(workflow.steps.len() >= 6, "{workflow:#?}");
        assert_eq!(
            workflow.steps[0].uses.as_deref(),
            Some("actions/checkout@v4")
        );
        assert_eq!(workflow.steps[0].input("fetch-depth"), Some("0"));
        // The comment after a plain scalar is not part of the script.
        let runs: Vec<&str> = workflow
            .steps
            .iter()
            .filter_map(|s| s.run.as_deref())
            .collect();
        assert!(runs.contains(&"pmu-qemu --prepare"), "{runs:#?}");
        // The block scalar keeps its three lines.
        let base = runs.iter().find(|r| r.contains("--save-baseline")).unwrap();
        assert_eq!(base.lines().count(), 3, "{base}");
        assert!(
            base.starts_with("git checkout --quiet ${{ github.event.pull_request.base.sha }}\n")
        );
        let upload = workflow.steps.last().unwrap();
        assert_eq!(upload.condition.as_deref(), Some("always()"));
        assert_eq!(
            upload.input("path"),
            Some("**/target/pmu-criterion/summary/*.json")
        );
        let toml = fenced_block(DOCS, "## CI", "toml").unwrap();
        assert!(toml.contains("runner = \"pmu-qemu\""), "{toml}");
    }

    #[test]
    fn the_reader_knows_its_subset() {
        let yaml = "jobs:\n  j:\n    env:\n      A: 'it''s'\n    steps:\n    - run: |\n        one\n\n          two # kept\n      name: \"q \\\"x\\\"\"\n    -   uses: a/b@v1\n        with:\n          k: v # comment\n";
        let w = read_workflow(yaml).unwrap();
        assert_eq!(w.env, vec![("A".into(), "it's".into())]);
        assert_eq!(w.steps[0].run.as_deref(), Some("one\n\n  two # kept\n"));
        assert_eq!(w.steps[0].name.as_deref(), Some("q \"x\""));
        assert_eq!(w.steps[1].with, vec![("k".into(), "v".into())]);
    }

    #[test]
    fn what_the_reader_does_not_know_is_an_error() {
        let step = |s: &str| format!("jobs:\n  j:\n    steps:\n      - {s}\n");
        for (yaml, why) in [
            (step("run: {a: b}"), "flow"),
            (step("run: >\n          folded"), "folded"),
            (step("shell: sh"), "not read here"),
            (step("run: a\n        run: b"), "twice"),
            (step("name: only"), "one of `uses` and `run`"),
            (step("run: 'open"), "must end"),
            (
                "jobs:\n  a:\n    steps:\n  b:\n    steps:\n".to_owned(),
                "one job",
            ),
            ("jobs:\n\tj: x\n".to_owned(), "tab"),
            ("a: b\n   c: d\n".to_owned(), "indentation"),
        ] {
            let err = read_workflow(&yaml).unwrap_err();
            assert!(err.contains(why), "{yaml:?}: {err}");
        }
    }

    #[test]
    fn expressions_are_replaced_or_named() {
        let values = [("github.sha", "abc".to_owned())];
        assert_eq!(
            substitute("git checkout ${{ github.sha }}; ${{github.sha}}", &values).unwrap(),
            "git checkout abc; abc"
        );
        let err = substitute("${{ runner.os }}", &values).unwrap_err();
        assert!(
            err.contains("runner.os") && err.contains("github.sha"),
            "{err}"
        );
        assert!(substitute("${{ open", &values).is_err());
    }

    #[test]
    fn the_section_ends_at_the_next_heading() {
        let md = "## CI\ntext\n## Next\n```yaml\na: b\n```\n";
        assert!(fenced_block(md, "## CI", "yaml").is_err());
        let md = "## CI\n```sh\n## not a heading\n```\n```yaml\na: b\n```\n";
        assert_eq!(fenced_block(md, "## CI", "yaml").unwrap(), "a: b\n");
    }

    /// actions/upload-artifact's globs (@actions/glob: `**` any depth, `*` in a name).
    #[test]
    fn globs_match_as_upload_artifact_does() {
        let p = "**/target/pmu-criterion/summary/*.json";
        assert!(glob_matches(p, "target/pmu-criterion/summary/work.json"));
        assert!(glob_matches(p, "a/b/target/pmu-criterion/summary/x.json"));
        assert!(!glob_matches(p, "target/pmu-criterion/summary/work.txt"));
        assert!(!glob_matches(
            p,
            "target/pmu-criterion/baselines/base/work.json"
        ));
        assert!(glob_matches("*", "x"));
        assert!(!glob_matches("*", "x/y"));
    }
}
