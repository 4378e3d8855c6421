//! Prints every event a reader yields, one per line in Rust debug form, then the reader's
//! diagnostics: `dump FILE...`. For checking that a reader change keeps its output.
#![allow(clippy::print_stdout, clippy::print_stderr)]
use std::io::Write;
use whylate::event::Interner;
use whylate::read::{self, EventSource, Merged};

fn main() {
    let paths: Vec<std::path::PathBuf> = std::env::args().skip(1).map(Into::into).collect();
    let mut sources = Vec::new();
    for p in &paths {
        match read::open(p, &Default::default()) {
            Ok(s) => sources.push(s),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        }
    }
    let mut strings = Interner::new();
    let mut merged = Merged::new(sources);
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    loop {
        match merged.next_ref(&mut strings) {
            Ok(Some((i, e))) => {
                let _ = writeln!(out, "{i} {}", resolve(&format!("{e:?}"), &strings));
            }
            Ok(None) => break,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        }
    }
    for s in merged.sources() {
        let _ = writeln!(out, "{:?}", s.diag());
    }
}

/// Replaces each `Sym(N)` in debug text with the string it stands for, so two readers that
/// intern in a different order still print the same line.
fn resolve(text: &str, strings: &Interner) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("Sym(") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 4..];
        let end = tail.find(')').unwrap_or(0);
        match tail[..end].parse::<u32>() {
            Ok(n) => {
                out.push_str(&format!("{:?}", strings.get(whylate::event::Sym(n))));
                rest = &tail[end + 1..];
            }
            Err(_) => {
                out.push_str("Sym(");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}
