//! Documentation that must follow the code: docs/causes.md is generated from the cause
//! catalogue, and every path docs/architecture.md names exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn causes_md_is_what_the_catalogue_generates() {
    let path = root().join("docs/causes.md");
    let want = whylate::explain::causes::markdown();
    if std::env::var_os("WHYLATE_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/causes.md differs from crates/whylate/src/explain/causes.rs; regenerate it with\n  \
         WHYLATE_BLESS=1 cargo test -p whylate --test docs"
    );
}

/// The backticked words of `text` that look like repository paths: a `/` or a `.rs`/`.md`
/// ending, no spaces, no glob or placeholder.
fn paths_named(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        let looks = part.contains('/') || part.ends_with(".rs") || part.ends_with(".md");
        let plain = !part.contains(|c: char| c.is_whitespace() || "*<>{}()=:".contains(c));
        if i % 2 == 1 && looks && plain && !part.starts_with('/') && !part.contains("//") {
            out.push(part);
        }
    }
    out
}

#[test]
fn architecture_md_names_only_paths_that_exist() {
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let srcs = [
        root().join("crates/whylate/src"),
        root().join("crates/whylate-read/src"),
    ];
    let missing: Vec<&str> = paths_named(&text)
        .into_iter()
        .filter(|p| {
            // A path is taken from the repository's root, else from a library's src/.
            let p = p.trim_end_matches('/');
            !root().join(p).exists() && !srcs.iter().any(|s| s.join(p).exists())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn paths_are_picked_out_of_backticks() {
    let t = "see `read/open.rs` and `explain/` but not `a b/c`, `x::y` or `*.rs`; `docs/x.md`";
    assert_eq!(paths_named(t), ["read/open.rs", "explain/", "docs/x.md"]);
}
