//! The trace files every reader is tried on: the seeds' excerpts, the bad inputs, the
//! examples and the shared corpus. Tests only (and the `testkit` feature of the crates
//! above); not part of the library's interface.

use crate::read::OpenOptions;
use std::path::{Path, PathBuf};

/// Every trace file we have: the seeds' excerpts, the bad inputs, the examples and the
/// shared corpus (`WHYLATE_CORPUS`, else `../shared/corpus`, when it exists).
pub fn every_trace_file() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../whylate");
    let corpus = match std::env::var_os("WHYLATE_CORPUS") {
        Some(p) => PathBuf::from(p),
        None => root.join("../../../shared/corpus"),
    };
    let dirs = [
        root.join("tests/data/seeds"),
        root.join("tests/data/bad"),
        root.join("../../examples"),
        corpus,
    ];
    let mut files = vec![];
    for dir in dirs {
        if let Ok(rd) = std::fs::read_dir(dir) {
            files.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    files
}

/// The trace files of [`every_trace_file`] that open as one of `formats`.
pub fn every_trace_of(formats: &[crate::read::Format]) -> Vec<PathBuf> {
    let opts = OpenOptions::default();
    let is = |f: &PathBuf| crate::read::open(f, &opts).is_ok_and(|s| formats.contains(&s.format()));
    every_trace_file().into_iter().filter(is).collect()
}
