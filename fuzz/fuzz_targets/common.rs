//! The property every fuzz target checks: any bytes, read as `format` (or sniffed), give
//! events or a clean error, never a panic; and whatever events come out go through the
//! timeline and every measure without a panic either.
use whylate::read::{open, EventSource, Format, OpenOptions};

pub fn run(data: &[u8], format: Option<Format>) {
    let dir = std::env::temp_dir().join(format!("whylate-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("input");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let opts = OpenOptions {
        format,
        ..Default::default()
    };
    if let Ok(mut src) = open(&path, &opts) {
        let mut strings = whylate::event::Interner::new();
        let mut b = whylate::timeline::Builder::new();
        while let Ok(Some(e)) = src.next_event(&mut strings) {
            b.push(&e, &strings);
        }
        let tl = b.finish();
        let o = whylate::measure::Options::default();
        let _ = whylate::measure::compute(&tl, &strings, &o, &[], None);
        let _ = whylate::explain::analyze_auto(&tl, &strings, 3);
    }
}
