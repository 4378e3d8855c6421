//! The property every fuzz target checks: any bytes, read as `format` (or sniffed), give
//! events or a clean error, never a panic.
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
        while let Ok(Some(_)) = src.next_event(&mut strings) {}
    }
}
