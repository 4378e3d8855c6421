#![allow(dead_code, clippy::print_stderr)]
use std::path::{Path, PathBuf};

mod skip;
#[allow(unused_imports)]
pub use skip::skip_or_fail;
use whylate::event::{Event, Interner};
use whylate::read::{self, Diag, EventSource, OpenOptions, OrderStats};

pub struct Read {
    pub events: Vec<Event>,
    pub strings: Interner,
    pub diag: Diag,
    pub order: OrderStats,
    pub format: read::Format,
}

pub fn read_all(path: &Path) -> Read {
    let mut src = read::open(path, &OpenOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut strings = Interner::new();
    let mut events = Vec::new();
    while let Some(e) = src
        .next_event(&mut strings)
        .unwrap_or_else(|e| panic!("{e}"))
    {
        events.push(e);
    }
    Read {
        events,
        diag: src.diag().clone(),
        order: src.order(),
        format: src.format(),
        strings,
    }
}

pub fn count(r: &Read, name: &str) -> usize {
    r.events
        .iter()
        .filter(|e| e.name().render(&r.strings) == name)
        .count()
}

/// The public corpus: `$WHYLATE_CORPUS`, else ../shared/corpus beside this checkout (CI has
/// it). Tests using it print why they skip when it is absent.
pub fn corpus() -> Option<PathBuf> {
    let p = match std::env::var_os("WHYLATE_CORPUS") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    if p.is_dir() {
        Some(p)
    } else {
        skip::skip_or_fail(&format!(
            "corpus not found at {} (set WHYLATE_CORPUS)",
            p.display()
        ));
        None
    }
}

pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

pub mod report;
#[allow(unused_imports)]
pub use report::{dat_raw_lines, report_r_lines};
