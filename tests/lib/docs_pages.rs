//! The pages people read (README.md and every page under docs/) point at what exists: each
//! relative link reaches a file of the repository, each `#anchor` a heading of its page (as
//! GitHub makes heading anchors), each repository path named in code (`docs/…`, `src/…`) a
//! file, each subcommand named in code (`dataset import`) one of the command-line reference's;
//! and each code block closes where its author meant it to. A closing fence with text
//! after it closes nothing (CommonMark reads it as code), so everything below it renders as a
//! code block; text after an opening fence's info string is never shown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The repository as the checker sees it: every file and folder (paths from the root, `/`
/// separated), and the text of every Markdown file (the anchors of a link's target).
#[derive(Default)]
struct Tree {
    paths: BTreeSet<String>,
    markdown: BTreeMap<String, String>,
}

/// The first folders of paths that name this repository's own files when a page puts them in
/// code (`docs/reference/commands.md`); other paths in code (`golden/…`, `target/…`) are the
/// reader's.
const REPOSITORY_FOLDERS: [&str; 7] = [
    "docs/",
    "src/",
    "tests/",
    "benches/",
    "macros/",
    "examples/",
    ".ci/",
];

impl Tree {
    /// The repository under `root`, without `.git` and build folders.
    fn read(root: &Path) -> Tree {
        let mut tree = Tree::default();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if matches!(name.as_str(), ".git" | "target") {
                    continue;
                }
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if path.is_dir() {
                    stack.push(path);
                } else if name.ends_with(".md") {
                    tree.markdown
                        .insert(rel.clone(), std::fs::read_to_string(&path).unwrap());
                }
                tree.paths.insert(rel);
            }
        }
        tree
    }

    /// A tree of the given Markdown pages (and their folders) and other files.
    fn of(pages: &[(&str, &str)], files: &[&str]) -> Tree {
        let mut tree = Tree::default();
        for (path, text) in pages {
            tree.markdown.insert((*path).into(), (*text).into());
        }
        for path in pages.iter().map(|(p, _)| *p).chain(files.iter().copied()) {
            let mut at = String::new();
            for part in path.split('/') {
                if !at.is_empty() {
                    at.push('/');
                }
                at.push_str(part);
                tree.paths.insert(at.clone());
            }
        }
        tree
    }

    /// The problems of the page at `page`, each `page:line: what`.
    fn check(&self, page: &str) -> Vec<String> {
        let text = &self.markdown[page];
        let mut problems = Vec::new();
        let mut say = |line: usize, what: String| problems.push(format!("{page}:{line}: {what}"));
        let mut fence: Option<Fence> = None;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if let Some(open) = &fence {
                if let Some(marker) = Fence::parse(line) {
                    if marker.ch == open.ch && marker.len >= open.len {
                        if marker.info.is_empty() {
                            fence = None;
                        } else {
                            say(
                                n,
                                format!(
                                    "a fence with `{}` after it does not close the code block opened at line {}: a closing fence has nothing after it, so this line and those below it render as code",
                                    marker.info, open.line
                                ),
                            );
                        }
                    }
                }
                continue;
            }
            if let Some(marker) = Fence::parse(line) {
                if marker.info.split_whitespace().count() > 1 {
                    say(
                        n,
                        format!(
                            "the code block opens with `{}` after its fence: the info string is one word (a language, or rustdoc's `rust,ignore`), and the words after it are never shown",
                            marker.info
                        ),
                    );
                }
                fence = Some(Fence { line: n, ..marker });
                continue;
            }
            let (prose, code) = split_code_spans(line);
            for target in link_targets(&prose) {
                if let Some(what) = self.broken_link(page, &target) {
                    say(n, what);
                }
            }
            for c in code {
                if let Some(what) = self.missing_named_file(&c) {
                    say(n, what);
                }
                if let Some(what) = self.unknown_subcommand(&c) {
                    say(n, what);
                }
            }
        }
        if let Some(open) = fence {
            say(
                open.line,
                "this code block never closes: every line after it renders as code".into(),
            );
        }
        problems
    }

    /// What is wrong with the link to `target` on `page`, if anything.
    fn broken_link(&self, page: &str, target: &str) -> Option<String> {
        if target.contains("://") || target.starts_with("mailto:") {
            return None;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target, None),
        };
        let resolved = if path.is_empty() {
            page.to_owned()
        } else {
            let dir = page.rsplit_once('/').map_or("", |(d, _)| d);
            match normalise(dir, path) {
                Some(p) => p,
                None => return Some(format!("link to `{target}` leads out of the repository")),
            }
        };
        if !resolved.is_empty() && !self.paths.contains(&resolved) {
            return Some(format!(
                "link to `{target}`: there is no `{resolved}` in the repository"
            ));
        }
        let anchor = anchor?;
        let text = self.markdown.get(&resolved)?;
        if anchors(text).contains(anchor) {
            return None;
        }
        Some(format!(
            "link to `{target}`: `{resolved}` has no heading whose anchor is `#{anchor}`"
        ))
    }

    /// What is wrong with a path of this repository named in code, if anything.
    fn missing_named_file(&self, code: &str) -> Option<String> {
        let path = code.trim();
        let looks_like_file = REPOSITORY_FOLDERS.iter().any(|f| path.starts_with(f))
            && !path.contains(|c: char| c.is_whitespace() || "*?{}<>…[]".contains(c))
            && path
                .rsplit('/')
                .next()
                .is_some_and(|name| name.contains('.'));
        if !looks_like_file || self.paths.contains(path) {
            return None;
        }
        Some(format!(
            "`{path}` names a file of the repository that does not exist"
        ))
    }
}

impl Tree {
    /// The commands of the command-line reference (`docs/reference/cli.md`), each a heading
    /// `` ## `rag-eval dataset import` ``: `["dataset", "import"]`.
    fn commands(&self) -> Vec<Vec<&str>> {
        let Some(reference) = self.markdown.get("docs/reference/cli.md") else {
            return Vec::new();
        };
        reference
            .lines()
            .filter_map(|l| l.strip_prefix("## `rag-eval")?.strip_suffix('`'))
            .map(|c| c.split_whitespace().collect())
            .collect()
    }

    /// What is wrong with a subcommand named in code (`dataset generate`, `rag-eval runs
    /// lst`): a command with subcommands followed by a word that is none of them.
    fn unknown_subcommand(&self, code: &str) -> Option<String> {
        let words: Vec<&str> = code.split_whitespace().collect();
        let words = match words.first() {
            Some(&"rag-eval") => &words[1..],
            _ => &words[..],
        };
        let [parent, sub, ..] = words else {
            return None;
        };
        let commands = self.commands();
        let subcommands: Vec<&str> = commands
            .iter()
            .filter(|c| c.len() == 2 && c[0] == *parent)
            .map(|c| c[1])
            .collect();
        let is_word = !sub.is_empty() && sub.chars().all(|c| c.is_ascii_lowercase());
        if subcommands.is_empty() || !is_word || subcommands.contains(sub) {
            return None;
        }
        Some(format!(
            "`{code}`: `rag-eval {parent}` has no subcommand `{sub}` (docs/reference/cli.md has {})",
            subcommands.join(", ")
        ))
    }
}

/// A fence line: its character, how many, and what follows them.
#[derive(Debug)]
struct Fence {
    ch: char,
    len: usize,
    info: String,
    line: usize,
}

impl Fence {
    /// The fence `line` is, if it is one (three or more backticks or tildes, at any indent:
    /// list items indent their blocks). Backticks with backticks after them on the line are
    /// inline code, not a fence.
    fn parse(line: &str) -> Option<Fence> {
        let body = line.trim_start();
        let ch = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let len = body.chars().take_while(|c| *c == ch).count();
        let info = body[len..].trim();
        (len >= 3 && !(ch == '`' && info.contains('`'))).then(|| Fence {
            ch,
            len,
            info: info.to_owned(),
            line: 0,
        })
    }
}

/// `line` with its code spans taken out, and the spans' contents.
fn split_code_spans(line: &str) -> (String, Vec<String>) {
    let mut prose = String::new();
    let mut code = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        prose.push_str(&rest[..start]);
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + run..];
        // The span ends at the next run of exactly as many backticks.
        let mut end = None;
        let mut at = 0;
        while let Some(i) = after[at..].find('`') {
            let i = at + i;
            let n = after[i..].chars().take_while(|c| *c == '`').count();
            if n == run {
                end = Some(i);
                break;
            }
            at = i + n;
        }
        match end {
            Some(i) => {
                code.push(after[..i].to_owned());
                prose.push(' ');
                rest = &after[i + run..];
            }
            None => {
                prose.push_str(&rest[start..start + run]);
                rest = after;
            }
        }
    }
    prose.push_str(rest);
    (prose, code)
}

/// The targets of the inline links and images (`[text](target "title")`) and of a reference
/// definition (`[name]: target`) in `prose`.
fn link_targets(prose: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let trimmed = prose.trim_start();
    if let Some(rest) = trimmed.strip_prefix('[') {
        if let Some((_, def)) = rest.split_once("]:") {
            if let Some(t) = def.split_whitespace().next() {
                targets.push(t.trim_matches(['<', '>']).to_owned());
            }
        }
    }
    let mut rest = prose;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let mut depth = 0usize;
        let end = after
            .char_indices()
            .find(|&(_, c)| match c {
                '(' => {
                    depth += 1;
                    false
                }
                ')' if depth == 0 => true,
                ')' => {
                    depth -= 1;
                    false
                }
                _ => false,
            })
            .map_or(after.len(), |(j, _)| j);
        let inside = after[..end].trim();
        let target = match inside.strip_prefix('<') {
            Some(t) => t.split('>').next().unwrap_or(""),
            None => inside.split_whitespace().next().unwrap_or(""),
        };
        targets.push(target.to_owned());
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// `path` (`/`-separated, `..` and `.` allowed) from the folder `dir`, from the repository's
/// root; `None` when it leaves the repository.
fn normalise(dir: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The anchors GitHub gives the headings of `text` (those outside code blocks): each
/// heading's text lowercased, every character but letters, digits, `-`, `_` and spaces left
/// out, spaces made `-`; a repeated anchor gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fence: Option<Fence> = None;
    for line in text.lines() {
        if let Some(marker) = Fence::parse(line) {
            match &fence {
                Some(open) if marker.ch == open.ch && marker.len >= open.len => {
                    if marker.info.is_empty() {
                        fence = None;
                    }
                }
                Some(_) => {}
                None => fence = Some(marker),
            }
            continue;
        }
        if fence.is_some() {
            continue;
        }
        let body = line.trim_start();
        let hashes = body.chars().take_while(|c| *c == '#').count();
        let heading = &body[hashes..];
        if !(1..=6).contains(&hashes) || !(heading.is_empty() || heading.starts_with(' ')) {
            continue;
        }
        let base = slug(heading.trim().trim_end_matches('#').trim());
        let mut anchor = base.clone();
        let mut n = 1;
        while !seen.insert(anchor.clone()) {
            anchor = format!("{base}-{n}");
            n += 1;
        }
    }
    seen
}

/// GitHub's anchor of a heading's Markdown text.
fn slug(heading: &str) -> String {
    // The rendered text: a link's text without its target, no code-span backticks.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(i) = rest.find("](") {
        text.push_str(&rest[..i]);
        rest = rest[i..].split_once(')').map_or("", |(_, r)| r);
    }
    text.push_str(rest);
    text.chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The pages checked: README.md and every Markdown page under docs/.
fn pages(tree: &Tree) -> Vec<&str> {
    tree.markdown
        .keys()
        .map(String::as_str)
        .filter(|p| *p == "README.md" || p.starts_with("docs/"))
        .collect()
}

#[test]
fn every_link_anchor_and_code_block_of_the_pages_holds() {
    let tree = Tree::read(Path::new(env!("CARGO_MANIFEST_DIR")));
    let pages = pages(&tree);
    assert!(
        pages.contains(&"README.md") && pages.contains(&"docs/guide/gate.md"),
        "{pages:?}"
    );
    let problems: Vec<String> = pages.iter().flat_map(|p| tree.check(p)).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_link_to_a_missing_file_or_anchor_is_named() {
    let tree = Tree::of(
        &[
            (
                "docs/guide/a.md",
                "# A page\n\n## The `rag-eval score` command (datasets)\n\n\
                 See [b](b.md#its-part), [ref](../reference/r.md), [here](#a-page),\n\
                 [there](#the-rag-eval-score-command-datasets), [web](https://example.com/x.md)\n\
                 and [src](../../src/lib.rs).\n\
                 [gone](../reference/json.md), [no part](b.md#no-such-part), [self](#nowhere)\n\
                 [out](../../../x.md)\n",
            ),
            (
                "docs/guide/b.md",
                "# B\n\n## Its part\n\n```sh\n# not a heading\n```\n",
            ),
            ("docs/reference/r.md", "# R\n"),
        ],
        &["src/lib.rs"],
    );
    assert_eq!(
        tree.check("docs/guide/a.md"),
        [
            "docs/guide/a.md:8: link to `../reference/json.md`: there is no `docs/reference/json.md` in the repository",
            "docs/guide/a.md:8: link to `b.md#no-such-part`: `docs/guide/b.md` has no heading whose anchor is `#no-such-part`",
            "docs/guide/a.md:8: link to `#nowhere`: `docs/guide/a.md` has no heading whose anchor is `#nowhere`",
            "docs/guide/a.md:9: link to `../../../x.md` leads out of the repository",
        ]
    );
    assert!(tree.check("docs/guide/b.md").is_empty());
    // A heading inside a code block is not one.
    assert!(!anchors(&tree.markdown["docs/guide/b.md"]).contains("not-a-heading"));
}

#[test]
fn anchors_are_github_s() {
    let page = "# Commands\n## `rag-eval score` (datasets)\n### `--dry-run`: the calls before they are paid for\n\
                ## Évaluer les réponses\n## Runs\n## Runs\n## [The guide](x.md) & more\n";
    let found = anchors(page);
    for a in [
        "commands",
        "rag-eval-score-datasets",
        "--dry-run-the-calls-before-they-are-paid-for",
        "évaluer-les-réponses",
        "runs",
        "runs-1",
        "the-guide--more",
    ] {
        assert!(found.contains(a), "{a} not in {found:?}");
    }
    assert_eq!(found.len(), 7);
}

#[test]
fn a_fence_with_text_after_it_or_that_never_closes_is_named() {
    // The gate guide's mistake: text after the closing fence kept the block open.
    let page = "Output:\n\n   ```text\n   failures:\n   ``` A question's own message\n   is not repeated there.\n\n```sh\ncargo test\n```\n";
    let tree = Tree::of(&[("README.md", page)], &[]);
    assert_eq!(
        tree.check("README.md"),
        [
            "README.md:5: a fence with `A question's own message` after it does not close the code block opened at line 3: a closing fence has nothing after it, so this line and those below it render as code",
            // What the renderer does next: the `sh` fence is code too, and the block ends at
            // the last fence.
            "README.md:8: a fence with `sh` after it does not close the code block opened at line 3: a closing fence has nothing after it, so this line and those below it render as code",
        ]
    );
    let unclosed = Tree::of(&[("README.md", "Run:\n\n```sh\ncargo test\n")], &[]);
    assert_eq!(
        unclosed.check("README.md"),
        ["README.md:3: this code block never closes: every line after it renders as code"]
    );
    let opening = Tree::of(
        &[(
            "README.md",
            "```rust,ignore\nfn f() {}\n```\n\n```text The output\nok\n```\n",
        )],
        &[],
    );
    assert_eq!(
        opening.check("README.md"),
        ["README.md:5: the code block opens with `text The output` after its fence: the info string is one word (a language, or rustdoc's `rust,ignore`), and the words after it are never shown"]
    );
    // A longer fence holds a shorter one; tildes and backticks do not close each other;
    // backticks on one line are inline code.
    let nested = "````md\n```sh\nx\n```\n````\n~~~\n```\n~~~\n```inline``` code\n";
    assert!(Tree::of(&[("README.md", nested)], &[])
        .check("README.md")
        .is_empty());
}

#[test]
fn a_repository_path_named_in_code_must_exist() {
    let page = "The JSON is in `docs/reference/json.md`; the command in `src/cli/eval.rs`.\n\
                Your crate's `golden/datasets/handbook.jsonl`, `docs/`, `tests/*.rs` and\n\
                `src/a b.rs` are not this repository's files. A link in code is no link: `[x](gone.md)`.\n\
                ```sh\ncat docs/missing.md\n```\n";
    let tree = Tree::of(&[("docs/guide/a.md", page)], &["src/cli/eval.rs"]);
    assert_eq!(
        tree.check("docs/guide/a.md"),
        ["docs/guide/a.md:1: `docs/reference/json.md` names a file of the repository that does not exist"]
    );
}

#[test]
fn a_subcommand_named_in_code_must_be_one_of_the_reference_s() {
    let reference =
        "# Command-line help\n## `rag-eval`\n## `rag-eval dataset`\n## `rag-eval dataset import`\n\
                     ## `rag-eval dataset validate`\n## `rag-eval generate`\n## `rag-eval eval`\n";
    let page = "`dataset import`, `rag-eval dataset validate x.jsonl`, `generate`, `eval --rag`,\n\
                `dataset --help`, `dataset` key and `eval dataset` are fine;\n\
                `dataset generate` and `rag-eval dataset pull` are not.\n";
    let tree = Tree::of(
        &[
            ("docs/reference/cli.md", reference),
            ("docs/guide/a.md", page),
        ],
        &[],
    );
    assert_eq!(
        tree.check("docs/guide/a.md"),
        [
            "docs/guide/a.md:3: `dataset generate`: `rag-eval dataset` has no subcommand `generate` (docs/reference/cli.md has import, validate)",
            "docs/guide/a.md:3: `rag-eval dataset pull`: `rag-eval dataset` has no subcommand `pull` (docs/reference/cli.md has import, validate)",
        ]
    );
}

/// The features page says what `cli` brings: every feature of its Cargo.toml line.
#[test]
fn the_features_page_names_every_feature_cli_brings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.starts_with("cli = ["))
        .expect("Cargo.toml has a `cli` feature");
    let brings: Vec<&str> = line
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|f| !f.contains(':') && !f.contains('/'))
        .collect();
    assert!(brings.contains(&"markdown"), "{brings:?}");
    let page = std::fs::read_to_string(root.join("docs/reference/features.md")).unwrap();
    let row = page
        .lines()
        .find(|l| l.starts_with("| `cli` |"))
        .expect("docs/reference/features.md has a `cli` row");
    let missing: Vec<&&str> = brings
        .iter()
        .filter(|f| !row.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference/features.md's `cli` row leaves out {missing:?}"
    );
}

/// The README's figure for a first `cargo test` is the one measured in docs/CONTRIBUTING.md.
#[test]
fn the_readme_gives_the_measured_first_test_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let contributing = read("docs/CONTRIBUTING.md");
    let measured = contributing
        .split("**")
        .skip(1)
        .step_by(2)
        .find(|bold| bold.contains(" min ") && bold.contains(" GB"))
        .expect("docs/CONTRIBUTING.md gives the first `cargo test`'s figures in bold");
    // "5 min 31 s and 2.3 GB of target": the time and the size.
    let (time, size) = measured.split_once(" and ").expect("a time and a size");
    let size = size.split(' ').take(2).collect::<Vec<_>>().join(" ");
    let readme = read("README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        readme.contains(time) && readme.contains(&size),
        "the README should give CONTRIBUTING's first `cargo test`: {time} and {size}"
    );
}
