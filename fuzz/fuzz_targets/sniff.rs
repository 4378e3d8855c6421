//! Fuzz the sniff reader: any bytes must give events or a clean error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use whylate::read::{open, EventSource, OpenOptions};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("whylate-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("input");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let opts = OpenOptions { format: None, ..Default::default() };
    if let Ok(mut src) = open(&path, &opts) {
        let mut strings = whylate::event::Interner::new();
        while let Ok(Some(_)) = src.next_event(&mut strings) {}
    }
});
