//! The crate's module graph, read from the source: data flows one way (read -> timeline ->
//! measure -> explain -> report), so every top-level module may use only modules of a
//! lower layer, and inside a directory module the files form no import cycle (a child
//! never uses its parent's own items; the parent only declares and re-exports).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules, lowest layer first. A module may use only modules of lower layers.
const LAYERS: &[&[&str]] = &[
    &[
        "units",
        "dist",
        "glob",
        "suggest",
        "syscalls",
        "syscalls_table",
        "snapshot",
        "swar",
        "packed",
    ],
    &["event"],
    &["read", "fdpath"],
    &["timeline"],
    &["pipeline", "selector"],
    &["measure"],
    &["explain", "latency", "stats"],
    &["diff"],
    &["report"],
    &["record"],
    &["watch"],
    &["demo"],
    // Unit-test traces (cfg(test) only): read through the pipeline, used by any analyzer.
    &["testkit", "testkit_rtla"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The code of a file without its comments (doc links are not imports) and its unit
/// tests (they may use anything).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = &text[..unit_tests_start(&text)];
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a file's unit-test module begins: a `#[cfg(test)]` line followed by a
/// `mod tests` of any visibility (`pub(super) mod tests` too); the file's end if none.
fn unit_tests_start(text: &str) -> usize {
    let mut at = 0;
    while let Some(i) = text[at..].find("#[cfg(test)]\n") {
        let start = at + i;
        let next = &text[start + "#[cfg(test)]\n".len()..];
        let line = next.lines().next().unwrap_or("");
        if line.trim_start().starts_with("mod tests")
            || line.trim_start().starts_with("pub(super) mod tests")
            || line.trim_start().starts_with("pub(crate) mod tests")
        {
            return start;
        }
        at = start + 1;
    }
    text.len()
}

/// The first path segments that follow `prefix::` in `code`, brace groups expanded
/// (`super::{a::X, b}` gives `a` and `b`).
fn segments(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let pat = format!("{prefix}::");
    let mut at = 0;
    while let Some(i) = code[at..].find(&pat) {
        let start = at + i;
        at = start + pat.len();
        let before = code[..start].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Whether `code` has a path that starts with `name::` (not `x::name::`).
fn starts_path(code: &str, name: &str) -> bool {
    let pat = format!("{name}::");
    code.match_indices(&pat).any(|(i, _)| {
        let before = code[..i].chars().last();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    })
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Top-level module name -> the files it is made of.
fn top_modules() -> BTreeMap<String, Vec<PathBuf>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(src()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib" || name == "main" {
            continue;
        }
        let fs = if p.is_dir() { files(&p) } else { vec![p] };
        m.insert(name, fs);
    }
    m
}

#[test]
fn modules_use_only_lower_layers() {
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut wrong = Vec::new();
    for (name, fs) in top_modules() {
        let Some(mine) = layer(&name) else {
            wrong.push(format!("{name}: not in LAYERS (tests/layers.rs): place it"));
            continue;
        };
        // Unit-test files (`tests.rs`, `net_tests.rs`..., and every file of a `tests/`
        // module) may use anything.
        let test_file = |f: &&PathBuf| {
            (f.strip_prefix(src()).unwrap().iter())
                .filter_map(|c| c.to_str())
                .any(|n| n.ends_with("tests.rs") || n == "tests")
        };
        for f in fs.iter().filter(|f| !test_file(f)) {
            for dep in segments(&code(f), "crate") {
                if dep == name {
                    continue;
                }
                match layer(&dep) {
                    Some(l) if l < mine => {}
                    _ => wrong.push(format!(
                        "{}: uses crate::{dep}, which is not below {name}",
                        f.strip_prefix(src()).unwrap().display()
                    )),
                }
            }
        }
    }
    assert!(wrong.is_empty(), "upward imports:\n{}", wrong.join("\n"));
}

/// The module path of a source file: `read/text/ftrace.rs` is `[read, text, ftrace]`,
/// `read/text/mod.rs` is `[read, text]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut m: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().to_string())
        .collect();
    if m.last().is_some_and(|l| l == "mod") {
        m.pop();
    }
    m
}

/// The paths a use tree names, from `rest` (what follows `prefix::`): `a::{b, c::D}`
/// gives `[a, b]` and `[a, c, D]`; each path stops at its first non-name segment.
fn use_tree(rest: &str, base: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = base.to_vec();
    let mut rest = rest;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut from) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        use_tree(group[from..i].trim(), &path, out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        use_tree(group[from..i].trim(), &path, out);
                        from = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let name: String = (rest.chars())
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '*')
            .collect();
        if name.is_empty() {
            break;
        }
        path.push(name.clone());
        match rest[name.len()..].strip_prefix("::") {
            Some(more) => rest = more,
            None => break,
        }
    }
    if path.len() > base.len() {
        out.push(path);
    }
}

/// Every absolute module path `code` (of a file in module `me`) names through `crate::`,
/// `super::` (any number) or `self::`.
fn paths(code: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("::") {
        let before = &code[..i];
        let word_start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(0, |p| p + 1);
        let head = &before[word_start..];
        // Only the first `::` of a path starts one (`super::super::x` is one path).
        if head.contains("::") {
            continue;
        }
        let base: Vec<String> = match head {
            "crate" => Vec::new(),
            "self" => me.to_vec(),
            "super" => {
                let mut b = me.to_vec();
                b.pop();
                let mut rest = &code[i + 2..];
                while let Some(r) = rest.strip_prefix("super::") {
                    b.pop();
                    rest = r;
                }
                use_tree(rest, &b, &mut out);
                continue;
            }
            _ => continue,
        };
        use_tree(&code[i + 2..], &base, &mut out);
    }
    out
}

/// Item name -> the child of directory module `dir` that defines it, for the items its
/// mod.rs re-exports (`pub use child::Item`, `pub use child::*`): a sibling that names
/// `parent::Item` uses that child, not the parent.
fn reexports(dir: &Path, children: &BTreeSet<String>) -> BTreeMap<String, String> {
    let me = module_of(&dir.join("mod.rs"));
    let mut map = BTreeMap::new();
    let text = code(&dir.join("mod.rs"));
    // Statements, not lines: a re-export may span several lines.
    for stmt in text.split(';').map(|s| s.trim().replace('\n', " ")) {
        let Some(tree) =
            (stmt.strip_prefix("pub use ")).or_else(|| stmt.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let tree = tree.replace(' ', "");
        let mut named = Vec::new();
        use_tree(&tree, &me, &mut named);
        for p in named {
            let (Some(child), Some(item)) = (p.get(me.len()), p.last()) else {
                continue;
            };
            if !children.contains(child) {
                continue;
            }
            if item != "*" {
                map.insert(item.clone(), child.clone());
                continue;
            }
            // A glob: the public items the child declares.
            let f = dir.join(format!("{child}.rs"));
            let f = if f.exists() {
                f
            } else {
                dir.join(child).join("mod.rs")
            };
            let kinds = ["struct", "enum", "fn", "trait", "type", "const", "static"];
            for l in code(&f).lines().map(str::trim) {
                let Some(decl) = (l.strip_prefix("pub ")).or_else(|| l.strip_prefix("pub(crate) "))
                else {
                    continue;
                };
                for k in kinds {
                    if let Some(n) = decl.strip_prefix(k).and_then(|d| d.strip_prefix(' ')) {
                        let n: String = (n.chars())
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        map.insert(n, child.clone());
                    }
                }
            }
        }
    }
    map
}

/// Edges between the children of directory module `dir` (and `mod` for its mod.rs'
/// own code), from every path a child's files name: `super::x`, `crate::read::x`,
/// `super::super::x` from a grandchild. A name the parent re-exports counts as a use of
/// the child that defines it.
fn child_graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let children: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    let me = module_of(&dir.join("mod.rs"));
    let moved = reexports(dir, &children);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for child in &children {
        let path = dir.join(format!("{child}.rs"));
        let sub = dir.join(child).join("mod.rs");
        let edges = g.entry(child.clone()).or_default();
        if child == "mod" {
            // The parent's own code uses a child when it names it in a path (`use
            // cycles::analyze`); its re-exports only pass a child's items on.
            let text: String = (code(&path).lines())
                .filter(|l| {
                    !l.trim().starts_with("pub use ") && !l.trim().starts_with("pub(crate) use ")
                })
                .collect::<Vec<_>>()
                .join("\n");
            for c in children.iter().filter(|c| *c != "mod") {
                if starts_path(&text, c) {
                    edges.insert(c.clone());
                }
            }
            continue;
        }
        let fs = if sub.exists() {
            files(&dir.join(child))
        } else {
            vec![path]
        };
        for f in fs {
            let text = code(&f);
            for p in paths(&text, &module_of(&f)) {
                if p.len() <= me.len() || p[..me.len()] != me[..] {
                    continue;
                }
                let next = &p[me.len()];
                let to = if children.contains(next) {
                    next.clone()
                } else {
                    moved.get(next).cloned().unwrap_or_else(|| "mod".into())
                };
                edges.insert(to);
            }
        }
        edges.remove(child);
    }
    g
}

/// A cycle in `g`, if there is one.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(1) => {
                let i = path.iter().position(|x| x == n).unwrap();
                let mut c = path[i..].to_vec();
                c.push(n.to_string());
                return Some(c);
            }
            Some(2) => return None,
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn directory_modules_have_no_import_cycles() {
    let mut found = Vec::new();
    for f in files(&src()) {
        if f.file_name().is_some_and(|n| n == "mod.rs") {
            let dir = f.parent().unwrap();
            if let Some(c) = cycle(&child_graph(dir)) {
                found.push(format!(
                    "{}: {}",
                    dir.strip_prefix(src()).unwrap().display(),
                    c.join(" -> ")
                ));
            }
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}
