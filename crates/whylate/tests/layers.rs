//! The workspace's module graph, read from the source. Data flows one way: `whylate-read`
//! reads, `whylate` analyses (timeline -> measure -> explain), `whylate-report` renders
//! its reports, `whylate-live` records and watches on top of both. So:
//! - a crate never names a crate above it (`whylate` never names `whylate_report` or
//!   `whylate_live`, `whylate_report` never names `whylate_live`);
//! - in each library crate every top-level module uses only modules of a lower layer of
//!   that crate's own table;
//! - inside every directory module of every crate the files form no import cycle, however
//!   the import is written (`super::x`, `self::x`, `crate::a::b::x`, or an item the
//!   parent or an ancestor re-exports): a child never uses its parent's own items; the
//!   parent only declares and re-exports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate of the workspace: its directory under `crates/`, its layers (lowest first;
/// empty for the binaries, which only get the cycle check) and the crates above it.
struct Crate {
    dir: &'static str,
    layers: &'static [&'static [&'static str]],
    above: &'static [&'static str],
}

const CRATES: &[Crate] = &[
    Crate {
        dir: "whylate-read",
        layers: &[
            &[
                "units",
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
            &["selector"],
            // The trace files every reader is tried on (tests and the `testkit` feature).
            &["testfiles"],
        ],
        above: &["whylate", "whylate_report", "whylate_live", "whylate_fleet"],
    },
    Crate {
        dir: "whylate",
        layers: &[
            // whylate-read's modules, re-exported at the crate root under their own names.
            &[
                "event", "fdpath", "glob", "packed", "read", "selector", "snapshot", "suggest",
                "syscalls", "units",
            ],
            &["dist"],
            &["timeline"],
            &["pipeline"],
            &["measure"],
            &["explain", "latency", "stats"],
            &["diff"],
            // Unit-test traces (tests and the `testkit` feature only): read through the
            // pipeline, used by any analyzer's tests, here and in the crates above.
            &["testkit", "testkit_rtla"],
        ],
        above: &["whylate_report", "whylate_live", "whylate_fleet"],
    },
    Crate {
        dir: "whylate-report",
        // The terminal text and the raster's geometry first, the plots from them, then
        // the SVG and the page; the Perfetto export stands alone.
        layers: &[
            &["style", "labels", "sweep"],
            &["text", "raster"],
            &["plot"],
            &["svg"],
            &["html", "perfetto"],
        ],
        above: &["whylate_live", "whylate_fleet"],
    },
    Crate {
        dir: "whylate-live",
        layers: &[&["record"], &["watch"], &["demo"]],
        above: &["whylate_fleet"],
    },
    Crate {
        dir: "whylate-fleet",
        layers: &[],
        above: &["whylate_live"],
    },
    Crate {
        dir: "whylate-cli",
        layers: &[],
        above: &[],
    },
];

/// One crate's sources.
struct Src {
    root: PathBuf,
}

impl Src {
    fn of(c: &Crate) -> Src {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(c.dir)
            .join("src");
        Src { root }
    }

    /// The crate root file: `lib.rs`, or `main.rs` for a binary.
    fn root_file(&self) -> PathBuf {
        let lib = self.root.join("lib.rs");
        if lib.exists() {
            lib
        } else {
            self.root.join("main.rs")
        }
    }

    /// The module path of a source file: `read/text/ftrace.rs` is `[read, text,
    /// ftrace]`, `read/text/mod.rs` is `[read, text]`, `lib.rs` is `[]`.
    fn module_of(&self, file: &Path) -> Vec<String> {
        let rel = file.strip_prefix(&self.root).unwrap().with_extension("");
        let mut m: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().to_string())
            .collect();
        if (m.last()).is_some_and(|l| l == "mod")
            || (m.len() == 1 && (m[0] == "lib" || m[0] == "main"))
        {
            m.pop();
        }
        m
    }

    /// The file that declares module `m`'s items (its `.rs`, `mod.rs` or the crate
    /// root), if `m` is a module of this crate.
    fn file_of(&self, m: &[String]) -> Option<PathBuf> {
        if m.is_empty() {
            return Some(self.root_file());
        }
        let mut p = self.root.clone();
        for s in m {
            p.push(s);
        }
        let file = p.with_extension("rs");
        if file.exists() {
            return Some(file);
        }
        let dir = p.join("mod.rs");
        dir.exists().then_some(dir)
    }

    /// What the module that `file` declares re-exports: item name -> the path it
    /// names (`pub use text::lines::LineReader` in `read/mod.rs` gives `LineReader ->
    /// [read, text, lines, LineReader]`; a glob, each public item of its module).
    fn reexports(&self, file: &Path) -> BTreeMap<String, Vec<String>> {
        let me = self.module_of(file);
        let mut map = BTreeMap::new();
        // Statements, not lines: a re-export may span several lines.
        for stmt in code(file).split(';').map(|s| s.trim().replace('\n', " ")) {
            let Some(tree) =
                (stmt.strip_prefix("pub use ")).or_else(|| stmt.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            // A rename is still a use of the item it renames.
            let tree = tree.replace(" as ", "#as#").replace(' ', "");
            let mut named = Vec::new();
            let heads = ["crate::", "self::", "super::"];
            if heads.iter().any(|h| tree.starts_with(h)) {
                named = paths(&tree, &me);
            } else {
                use_tree(&tree, &me, &mut named);
            }
            for p in named {
                let Some(item) = p.last().cloned() else {
                    continue;
                };
                if item != "*" {
                    let (target, alias) = match item.split_once("#as#") {
                        Some((t, a)) => (t.to_string(), a.to_string()),
                        None => (item.clone(), item.clone()),
                    };
                    let mut to = p.clone();
                    *to.last_mut().unwrap() = target;
                    map.insert(alias, to);
                    continue;
                }
                let module = &p[..p.len() - 1];
                let Some(f) = self.file_of(module) else {
                    continue;
                };
                for n in declared(&f) {
                    let mut to = module.to_vec();
                    to.push(n.clone());
                    map.insert(n, to);
                }
            }
        }
        map
    }

    /// `p` with every item an ancestor re-exports replaced by what it names, until it
    /// reaches a file: `[read, LineReader]` is `[read, text, lines, LineReader]`.
    fn resolve(&self, p: &[String], exports: &mut Exports) -> Vec<String> {
        let mut p = p.to_vec();
        // Re-exports may chain; a bound keeps a self-naming re-export from looping.
        for _ in 0..16 {
            let mut at = 0;
            let mut changed = false;
            while at < p.len() {
                let prefix = &p[..at];
                let Some(file) = self.file_of(prefix) else {
                    break;
                };
                let mut child = prefix.to_vec();
                child.push(p[at].clone());
                if self.file_of(&child).is_some() {
                    at += 1;
                    continue;
                }
                let map = exports
                    .entry(file.clone())
                    .or_insert_with(|| self.reexports(&file));
                if let Some(to) = map.get(&p[at]) {
                    if to[..] != p[..=at] {
                        let mut np = to.clone();
                        np.extend_from_slice(&p[at + 1..]);
                        p = np;
                        changed = true;
                    }
                }
                break;
            }
            if !changed {
                break;
            }
        }
        p
    }
}

/// Re-exports by the file that declares them, computed once.
type Exports = BTreeMap<PathBuf, BTreeMap<String, Vec<String>>>;

/// The public items (`pub` or `pub(crate)`) a file declares at its top level.
fn declared(f: &Path) -> Vec<String> {
    let kinds = [
        "struct", "enum", "fn", "trait", "type", "const", "static", "mod",
    ];
    let mut out = Vec::new();
    for l in code(f).lines().map(str::trim) {
        let Some(decl) = (l.strip_prefix("pub ")).or_else(|| l.strip_prefix("pub(crate) ")) else {
            continue;
        };
        for k in kinds {
            if let Some(n) = decl.strip_prefix(k).and_then(|d| d.strip_prefix(' ')) {
                let n: String = (n.chars())
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(n);
            }
        }
    }
    out
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

/// Where a file's unit-test module begins: a `#[cfg(...)]` that names `test`
/// (`#[cfg(all(test, feature = "query"))]` too) followed by an inline module whose name
/// ends in `tests` (`mod tests {`, `pub(super) mod size_tests {`); the file's end if
/// none. A `mod tests;` declaration is not the end: code may follow it, and the file it
/// names is a test file.
fn unit_tests_start(text: &str) -> usize {
    let mut at = 0;
    while let Some(i) = text[at..].find("#[cfg(") {
        let start = at + i;
        at = start + 1;
        let mut lines = text[start..].lines();
        let cfg = lines.next().unwrap_or("");
        if !cfg.contains("test") {
            continue;
        }
        let line = lines.next().unwrap_or("").trim_start();
        let line = ["pub(super) ", "pub(crate) ", "pub "]
            .iter()
            .find_map(|v| line.strip_prefix(v))
            .unwrap_or(line);
        let Some(name) = line.strip_prefix("mod ") else {
            continue;
        };
        let name = name.trim_end();
        if name
            .strip_suffix('{')
            .is_some_and(|n| n.trim_end().ends_with("tests"))
        {
            return start;
        }
    }
    text.len()
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

/// Whether a file is a unit-test file (`tests.rs`, `net_tests.rs`..., or any file of a
/// `tests/` module): those may use anything.
fn test_file(src: &Src, f: &Path) -> bool {
    (f.strip_prefix(&src.root).unwrap().iter())
        .filter_map(|c| c.to_str())
        .any(|n| n.ends_with("tests.rs") || n == "tests")
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
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '*' || *c == '#')
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

/// The inline modules of `code` (`mod name { .. }`): (name, where its body starts,
/// where it ends). Braces in string and character literals are skipped.
fn inline_mods(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("mod ") {
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            continue;
        }
        let rest = &code[i + 4..];
        let name: String = (rest.chars())
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = rest[name.len()..].trim_start().strip_prefix('{') else {
            continue;
        };
        let start = code.len() - open.len();
        let (mut depth, mut j, mut in_str) = (1, start, false);
        while j < b.len() && depth > 0 {
            match b[j] {
                b'\\' if in_str => j += 1,
                b'"' => in_str = !in_str,
                b'\'' if !in_str && b.get(j + 2) == Some(&b'\'') => j += 2,
                b'{' if !in_str => depth += 1,
                b'}' if !in_str => depth -= 1,
                _ => {}
            }
            j += 1;
        }
        out.push((name, start, j));
    }
    out
}

/// Every absolute module path `code` (of a file in module `me`) names through `crate::`,
/// `super::` (any number) or `self::`; inside an inline module (`mod x { .. }`, as
/// generated code has) those count from that module.
fn paths(code: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let inline = inline_mods(code);
    for (i, _) in code.match_indices("::") {
        let mut me = me.to_vec();
        me.extend(
            (inline.iter())
                .filter(|(_, from, to)| (*from..*to).contains(&i))
                .map(|m| m.0.clone()),
        );
        let me = &me[..];
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

/// Top-level module name -> the files it is made of.
fn top_modules(src: &Src) -> BTreeMap<String, Vec<PathBuf>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(&src.root).unwrap() {
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
    let mut wrong = Vec::new();
    for c in CRATES.iter().filter(|c| !c.layers.is_empty()) {
        let src = Src::of(c);
        let mut exports = Exports::new();
        let layer = |m: &str| c.layers.iter().position(|l| l.contains(&m));
        for (name, fs) in top_modules(&src) {
            let Some(mine) = layer(&name) else {
                wrong.push(format!(
                    "{}: {name}: not in its layers (tests/layers.rs): place it",
                    c.dir
                ));
                continue;
            };
            for f in fs.iter().filter(|f| !test_file(&src, f)) {
                let text = code(f);
                let used: BTreeSet<String> = (paths(&text, &src.module_of(f)).iter())
                    .map(|p| src.resolve(p, &mut exports))
                    .filter_map(|p| p.first().cloned())
                    .collect();
                for dep in used {
                    if dep == name {
                        continue;
                    }
                    match layer(&dep) {
                        Some(l) if l < mine => {}
                        _ => wrong.push(format!(
                            "{}/src/{}: uses crate::{dep}, which is not below {name}",
                            c.dir,
                            f.strip_prefix(&src.root).unwrap().display()
                        )),
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "upward imports:\n{}", wrong.join("\n"));
}

/// Every word of `code` that is `name` (not part of a longer name).
fn names(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().last();
        let after = code[i + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
        !word(before) && !word(after)
    })
}

/// Whether `code` names the crate `name` as a path: `name::`, as a word.
fn names_path(code: &str, name: &str) -> bool {
    let path = format!("{name}::");
    code.match_indices(&path).any(|(i, _)| {
        let before = code[..i].chars().last();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn crates_never_name_a_crate_above_them() {
    let mut wrong = Vec::new();
    for c in CRATES {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(c.dir)
            .join("Cargo.toml");
        let manifest: String = (std::fs::read_to_string(manifest).unwrap().lines())
            .map(|l| l.find('#').map_or(l, |i| &l[..i]))
            .collect::<Vec<_>>()
            .join("\n");
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(c.dir);
        let mut fs = files(&crate_dir.join("src"));
        if crate_dir.join("tests").exists() {
            fs.extend(files(&crate_dir.join("tests")));
        }
        // This file names them all to check them.
        fs.retain(|f| !f.ends_with("tests/layers.rs"));
        for above in c.above {
            if names(&manifest, &above.replace('_', "-")) {
                wrong.push(format!("{}/Cargo.toml: depends on {above}", c.dir));
            }
            // Tests too: a dev-dependency on a crate above would be a cycle all the same.
            for f in &fs {
                let text = std::fs::read_to_string(f).unwrap();
                let text: String = (text.lines())
                    .map(|l| l.find("//").map_or(l, |i| &l[..i]))
                    .collect::<Vec<_>>()
                    .join("\n");
                // Code names a crate by its path (`whylate::x`, `use whylate::{..}`); the
                // bare word is also the product's name in messages.
                if names_path(&text, above) {
                    wrong.push(format!(
                        "{}: names {above}",
                        f.strip_prefix(crate_dir.parent().unwrap())
                            .unwrap()
                            .display()
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a crate names one above it:\n{}",
        wrong.join("\n")
    );
}

/// Edges between the children of directory module `dir` (and `mod` for the code of its
/// `mod.rs`, or of the crate root), from every path a child's files name: `super::x`,
/// `crate::read::x`, `super::super::x` from a grandchild, an item any ancestor
/// re-exports (resolved to the child that defines it).
fn child_graph(
    src: &Src,
    modfile: &Path,
    exports: &mut Exports,
) -> BTreeMap<String, BTreeSet<String>> {
    let dir = modfile.parent().unwrap();
    let me = src.module_of(modfile);
    let children: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
        .filter(|p| p != modfile)
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .filter(|n| !(me.is_empty() && (n == "lib" || n == "main")))
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // The parent's own code uses a child when it names it in a path (`use
    // cycles::analyze`, `crate::read::merge::X`); its re-exports only pass a child's
    // items on.
    let text: String = (code(modfile).lines())
        .filter(|l| !l.trim().starts_with("pub use ") && !l.trim().starts_with("pub(crate) use "))
        .collect::<Vec<_>>()
        .join("\n");
    let edges = g.entry("mod".into()).or_default();
    for c in &children {
        if starts_path(&text, c) {
            edges.insert(c.clone());
        }
    }
    for p in paths(&text, &me) {
        let p = src.resolve(&p, exports);
        if p.len() > me.len() && p[..me.len()] == me[..] && children.contains(&p[me.len()]) {
            edges.insert(p[me.len()].clone());
        }
    }
    for child in &children {
        let path = dir.join(format!("{child}.rs"));
        let sub = dir.join(child);
        let fs = if sub.is_dir() {
            files(&sub)
        } else {
            vec![path]
        };
        let mut edges = BTreeSet::new();
        // Unit-test files may use anything (nothing but their parent declares them).
        for f in fs.into_iter().filter(|f| !test_file(src, f)) {
            let text = code(&f);
            for p in paths(&text, &src.module_of(&f)) {
                let p = src.resolve(&p, exports);
                if p.len() <= me.len() || p[..me.len()] != me[..] {
                    continue;
                }
                let next = &p[me.len()];
                edges.insert(if children.contains(next) {
                    next.clone()
                } else {
                    "mod".into()
                });
            }
        }
        edges.remove(child);
        g.insert(child.clone(), edges);
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
    for c in CRATES {
        let src = Src::of(c);
        let mut exports = Exports::new();
        // Every directory module, and the crate root (its top-level modules).
        let mods = (files(&src.root).into_iter())
            .filter(|f| f.file_name().is_some_and(|n| n == "mod.rs"))
            .chain([src.root_file()]);
        for m in mods {
            if let Some(cy) = cycle(&child_graph(&src, &m, &mut exports)) {
                let dir = m.parent().unwrap();
                let at = format!(
                    "{}/src/{}",
                    c.dir,
                    dir.strip_prefix(&src.root).unwrap().display()
                );
                found.push(format!("{at}: {}", cy.join(" -> ")));
            }
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}
