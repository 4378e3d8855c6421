//! The property every fuzz target checks: any bytes, read as `format` (or sniffed), give
//! events or a clean error, never a panic; and whatever events come out go through the
//! timeline and every measure without a panic either. The bytes go to the library as they
//! are, in memory: no file is written.
use whylate::read::{EventSource, Format, OpenOptions, Opened};

pub fn run(data: &[u8], format: Option<Format>) {
    let opts = OpenOptions {
        format,
        ..Default::default()
    };
    if let Ok(o) = Opened::bytes("input", data.to_vec(), &opts) {
        let (_, mut srcs) = o.into_parts();
        let mut strings = whylate::event::Interner::new();
        let mut b = whylate::timeline::Builder::new();
        while let Ok(Some(e)) = srcs[0].next_event(&mut strings) {
            b.push(&e, &strings);
        }
        let tl = b.finish();
        let o = whylate::measure::Options::default();
        let _ = whylate::measure::compute(&tl, &strings, &o, &[], None);
        let _ = whylate::explain::analyze_auto(&tl, &strings, 3);
    }
}

/// The format `--format` calls `arg` (every target names its reader this way, as the
/// registry lists it).
#[allow(dead_code)]
pub fn format(arg: &str) -> Format {
    whylate::read::formats()
        .find(|f| f.arg() == arg)
        .unwrap_or_else(|| panic!("no reader is called {arg}"))
}
