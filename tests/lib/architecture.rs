//! The library's layers hold: every `crate::…` and `super::…` path in `src/` (tests left out)
//! points to a module of the same layer or a lower one, the modules form no circle, and the
//! files of one folder form no circle (of any length: `a → b → c → a` as well as `a ⇄ b`).
//!
//! The layer table is read from `docs/architecture.md`, so the document and this test cannot
//! say different things; a module missing from the table fails here too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// One use of another module: where it is written and what it names.
#[derive(Debug, Clone)]
struct Edge {
    /// The file that uses, relative to the repository.
    file: String,
    /// Its line.
    line: usize,
    /// The top-level module of `src/` the file belongs to.
    from: String,
    /// The top-level module it names.
    to: String,
}

/// The layers of `docs/architecture.md`, lowest first: module → layer number.
fn layers() -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(Path::new(REPO).join("docs/architecture.md"))
        .expect("docs/architecture.md holds the layer table");
    let start = doc
        .find("<!-- layers -->")
        .expect("docs/architecture.md marks its layer table with <!-- layers -->");
    let mut table = BTreeMap::new();
    let rows = doc[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'));
    for row in rows {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let Ok(layer) = cells[0].parse::<usize>() else {
            continue; // the header and its rule
        };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`');
            assert!(
                table.insert(module.to_string(), layer).is_none(),
                "docs/architecture.md places `{module}` twice"
            );
        }
    }
    assert!(
        table.len() > 10,
        "the layer table of docs/architecture.md was not read"
    );
    table
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether the item's attributes hold `#[cfg(test)]` (or `cfg(all(test, …))` and the like).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let mut test = false;
            let _ = a.parse_nested_meta(|m| {
                test |= m.path.is_ident("test");
                if m.path.is_ident("all") {
                    m.parse_nested_meta(|inner| {
                        test |= inner.path.is_ident("test");
                        Ok(())
                    })?;
                }
                Ok(())
            });
            test
        }
    })
}

/// Collects the paths a file writes, as (first segments, line); `super` resolved against
/// the file's own module path.
struct Paths<'a> {
    /// The module path of the file, e.g. `["harness", "case"]`.
    module: &'a [String],
    found: Vec<(Vec<String>, usize)>,
}

impl Paths<'_> {
    fn add(&mut self, segments: Vec<String>, line: usize) {
        let mut resolved: Vec<String> = Vec::new();
        let mut rest = segments.as_slice();
        match rest.first().map(String::as_str) {
            Some("crate") => rest = &rest[1..],
            Some("super") => {
                let mut base = self.module.to_vec();
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
                resolved = base;
            }
            Some("self") => {
                resolved = self.module.to_vec();
                rest = &rest[1..];
            }
            _ => return,
        }
        resolved.extend(rest.iter().take(2).cloned());
        self.found.push((resolved, line));
    }

    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                full.push(n.ident.to_string());
                self.add(full, n.ident.span().start().line);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.add(full, r.ident.span().start().line);
            }
            syn::UseTree::Glob(g) => {
                self.add(prefix.clone(), g.star_token.spans[0].start().line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        // `add` keeps only the paths that start at `crate`, `super` or `self`.
        self.tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            let line = path.segments[0].ident.span().start().line;
            self.add(segments, line);
        }
        syn::visit::visit_path(self, path);
    }
}

/// The module path of a file under `src/`: `src/harness/case.rs` → `["harness", "case"]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap();
    let stem = file.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// A use of one file of a folder by another: `folder` is the folder's module path, `from` and
/// `to` its two children (a file `x.rs`, or a child folder with its files, counted as one), and
/// `file:line` where it is written.
#[derive(Debug, Clone)]
struct FolderEdge {
    folder: Vec<String>,
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// Whether the module at `path` (under `src/`) is a file or a folder of its own.
fn is_module(src: &Path, path: &[String]) -> bool {
    let base = path.iter().collect::<PathBuf>();
    src.join(&base).with_extension("rs").is_file() || src.join(&base).join("mod.rs").is_file()
}

/// Every edge between two top-level modules, and every edge between two children of a folder.
fn edges() -> (Vec<Edge>, Vec<FolderEdge>) {
    let src = Path::new(REPO).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut modules = Vec::new();
    let mut siblings = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&src).unwrap().to_path_buf();
        let shown = format!("src/{}", relative.display());
        if relative.starts_with("bin") || shown == "src/lib.rs" {
            continue; // the binary is a crate of its own; lib.rs is the facade
        }
        let stem = relative.file_stem().unwrap().to_string_lossy().into_owned();
        if stem == "tests" || stem.ends_with("_tests") {
            continue; // files that are test modules
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{shown}: {e}"));
        let module = module_path(&relative);
        let mut paths = Paths {
            module: &module,
            found: Vec::new(),
        };
        paths.visit_file(&file);
        for (target, line) in paths.found {
            let Some(to) = target.first() else { continue };
            if to != &module[0] {
                modules.push(Edge {
                    file: shown.clone(),
                    line,
                    from: module[0].clone(),
                    to: to.clone(),
                });
                continue;
            }
            // In the deepest folder holding both, the two children the use runs between (a
            // file of a child folder speaks for that folder). A folder's own mod.rs, or the
            // file a folder hangs from, is its parent and belongs to no child; a name that is
            // not a child module is an item of the parent.
            let depth = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if let (Some(from), Some(to)) = (module.get(depth), target.get(depth)) {
                if is_module(&src, &target[..=depth]) {
                    siblings.push(FolderEdge {
                        folder: module[..depth].to_vec(),
                        from: from.clone(),
                        to: to.clone(),
                        file: shown.clone(),
                        line,
                    });
                }
            }
        }
    }
    assert!(
        modules.len() > 500
            && modules
                .iter()
                .any(|e| e.from == "harness" && e.to == "eval"),
        "the library's paths were not read: {} edges",
        modules.len()
    );
    (modules, siblings)
}

/// The top-level modules `src/lib.rs` declares.
fn declared() -> BTreeSet<String> {
    let text = std::fs::read_to_string(Path::new(REPO).join("src/lib.rs")).unwrap();
    let file = syn::parse_file(&text).unwrap();
    file.items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m)
                if !is_test(&m.attrs) && m.ident != "prelude" && m.ident != "__private" =>
            {
                Some(m.ident.to_string())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn every_module_has_a_layer() {
    let layers = layers();
    let declared = declared();
    let missing: Vec<_> = declared
        .iter()
        .filter(|m| !layers.contains_key(*m))
        .collect();
    assert!(
        missing.is_empty(),
        "modules of src/lib.rs without a layer in docs/architecture.md: {missing:?}"
    );
    let gone: Vec<_> = layers.keys().filter(|m| !declared.contains(*m)).collect();
    assert!(
        gone.is_empty(),
        "docs/architecture.md places modules that do not exist: {gone:?}"
    );
}

#[test]
fn no_module_uses_a_higher_layer() {
    let layers = layers();
    let (edges, _) = edges();
    let mut wrong: Vec<String> = edges
        .iter()
        .filter_map(|e| {
            let (from, to) = (layers.get(&e.from)?, layers.get(&e.to)?);
            (to > from).then(|| {
                format!(
                    "{}:{}: `{}` (layer {from}) uses `{}` (layer {to})",
                    e.file, e.line, e.from, e.to
                )
            })
        })
        .collect();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "arrows that run back up:\n{}",
        wrong.join("\n")
    );
}

/// The circles of `graph` (node → the nodes it uses): each group of nodes from any of which
/// every other can be reached, of two or more nodes (Tarjan's strongly connected components),
/// in sorted order.
fn circles<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Walk<'g, 'a> {
        graph: &'g BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<&'a str>>,
    }
    impl<'a> Walk<'_, 'a> {
        fn visit(&mut self, node: &'a str) {
            let i = self.index.len();
            self.index.insert(node, i);
            self.low.insert(node, i);
            self.stack.push(node);
            self.on_stack.insert(node);
            for &next in self.graph.get(node).into_iter().flatten() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    group.push(top);
                    if top == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for &node in graph.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.found.sort();
    walk.found
}

#[test]
fn circles_of_any_length_are_found_and_nothing_else() {
    let graph = |edges: &[(&'static str, &'static str)]| {
        let mut g: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a).or_default().insert(b);
        }
        g
    };
    // eval → score → answers → eval: three files, no pair uses each other.
    let three = graph(&[("eval", "score"), ("score", "answers"), ("answers", "eval")]);
    assert_eq!(circles(&three), [["answers", "eval", "score"]]);
    // A pair, a circle of four beside it, and arrows into them that close nothing.
    let many = graph(&[
        ("a", "b"),
        ("b", "a"),
        ("c", "d"),
        ("d", "e"),
        ("e", "f"),
        ("f", "c"),
        ("x", "a"),
        ("x", "c"),
        ("f", "y"),
    ]);
    assert_eq!(circles(&many), [vec!["a", "b"], vec!["c", "d", "e", "f"]]);
    // A line and a diamond are no circles.
    let none = graph(&[("a", "b"), ("b", "c"), ("a", "d"), ("d", "c")]);
    assert!(circles(&none).is_empty());
}

/// The lines that close `circle`: each edge of `edges` between two of its nodes, where written.
fn written<'e>(
    circle: &[&str],
    edges: impl Iterator<Item = (&'e str, &'e str, String)>,
) -> Vec<String> {
    let mut lines: Vec<String> = edges
        .filter(|(from, to, _)| circle.contains(from) && circle.contains(to))
        .map(|(from, to, place)| format!("  {place}: `{from}` → `{to}`"))
        .collect();
    lines.dedup();
    lines
}

#[test]
fn modules_form_no_circle() {
    let (edges, _) = edges();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in &edges {
        graph.entry(&e.from).or_default().insert(&e.to);
    }
    let found: Vec<String> = circles(&graph)
        .iter()
        .map(|c| {
            let uses = edges.iter().map(|e| {
                (
                    e.from.as_str(),
                    e.to.as_str(),
                    format!("{}:{}", e.file, e.line),
                )
            });
            format!("{}:\n{}", c.join(", "), written(c, uses).join("\n"))
        })
        .collect();
    assert!(found.is_empty(), "module circles:\n{}", found.join("\n"));
}

#[test]
fn the_files_of_a_folder_form_no_circle() {
    let (_, siblings) = edges();
    let mut folders: BTreeMap<&[String], BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for e in &siblings {
        folders
            .entry(&e.folder)
            .or_default()
            .entry(&e.from)
            .or_default()
            .insert(&e.to);
    }
    assert!(
        folders.len() > 5,
        "the folders' files were not read: {} folders",
        folders.len()
    );
    let mut found = Vec::new();
    for (folder, graph) in &folders {
        for c in circles(graph) {
            let uses = siblings
                .iter()
                .filter(|e| &e.folder[..] == *folder)
                .map(|e| {
                    (
                        e.from.as_str(),
                        e.to.as_str(),
                        format!("{}:{}", e.file, e.line),
                    )
                });
            found.push(format!(
                "src/{}/: {}:\n{}",
                folder.join("/"),
                c.join(", "),
                written(&c, uses).join("\n")
            ));
        }
    }
    assert!(found.is_empty(), "file circles:\n{}", found.join("\n"));
}

/// A test binary that starts the `rag-eval` command needs the `cli` feature: without it the
/// default `cargo test` builds the test but not the command, and every case fails with "No such
/// file or directory" (a stale binary in `target/` hides this locally).
#[test]
fn every_test_that_runs_the_command_requires_the_cli_feature() {
    let manifest = std::fs::read_to_string(Path::new(REPO).join("Cargo.toml")).unwrap();
    let mut requires_cli = BTreeSet::new();
    for block in manifest.split("[[test]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim_start().strip_prefix('='))
                .map(str::trim)
        };
        if let (Some(name), Some(features)) = (field("name"), field("required-features")) {
            if features.contains("\"cli\"") {
                requires_cli.insert(name.trim_matches('"').to_owned());
            }
        }
    }
    // A test binary is `tests/<name>.rs` or `tests/<name>/main.rs` with the files beside it.
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(Path::new(REPO).join("tests")).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let mut files = Vec::new();
        if path.join("main.rs").is_file() {
            sources(&path, &mut files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path.clone());
        }
        if files.iter().any(|file| {
            std::fs::read_to_string(file)
                .unwrap()
                .contains(concat!("CARGO_BIN_EXE_", "rag-eval"))
        }) && !requires_cli.contains(stem)
        {
            missing.push(stem.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "these tests run the `rag-eval` command but Cargo.toml does not give them \
         `required-features = [\"cli\"]`: {missing:?}"
    );
}
