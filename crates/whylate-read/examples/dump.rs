//! Prints every event a reader yields, one per line in Rust debug form, then the reader's
//! diagnostics: `dump FILE...`. For checking that a reader change keeps its output.
//! `dump --perf-generic FILE` reads one perf.data through the generic (linux-perf-data)
//! path instead of the in-place one, to compare the two.
#![allow(clippy::print_stdout, clippy::print_stderr)]
use std::io::Write;
use whylate_read::event::Interner;
use whylate_read::read::{self, EventSource, Merged};

fn main() {
    let mut paths: Vec<std::path::PathBuf> = std::env::args().skip(1).map(Into::into).collect();
    if paths
        .first()
        .is_some_and(|p| p.as_os_str() == "--perf-generic")
    {
        paths.remove(0);
        return perf_generic(&paths[0]);
    }
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

fn perf_generic(path: &std::path::Path) {
    let file = std::fs::File::open(path).expect("open");
    let mut rd =
        whylate_read::read::perfdata::PerfData::open_generic(path, file, read::PERF_WINDOW)
            .unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(2);
            });
    let mut strings = Interner::new();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    loop {
        match rd.next_decoded(&mut strings) {
            Ok(Some(e)) => {
                let _ = writeln!(out, "0 {}", resolve(&format!("{e:?}"), &strings));
            }
            Ok(None) => break,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        }
    }
    let _ = writeln!(out, "{:?}", rd.diag());
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
                out.push_str(&format!("{:?}", strings.get(whylate_read::event::Sym(n))));
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
