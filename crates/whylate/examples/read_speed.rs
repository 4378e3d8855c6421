//! Reader throughput on one core, for bench/binary.py: `read_speed FILE [--raw]`.
//! Prints `events bytes seconds`. `--raw` (trace.dat only) walks the records without
//! decoding them into events: the container and page-parsing cost alone.
#![allow(clippy::print_stdout)]
use std::time::Instant;
use whylate::event::Interner;
use whylate::read::{self, tracedat, EventSource};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = std::path::PathBuf::from(args.next().expect("usage: read_speed FILE [--raw]"));
    let raw = args.next().as_deref() == Some("--raw");
    let t = Instant::now();
    let mut n = 0u64;
    let bytes = if raw {
        let f = std::fs::File::open(&path).expect("open");
        let mut d = tracedat::TraceDat::open(&path, f).expect("a trace.dat");
        while let Some(r) = d.next_raw().expect("read") {
            if let tracedat::Raw::Record { data, .. } = r {
                n += data.len().min(1) as u64;
            }
        }
        d.data_bytes()
    } else {
        let mut src = read::open(&path, &Default::default()).expect("open");
        let mut s = Interner::new();
        while src.next_event(&mut s).expect("read").is_some() {
            n += 1;
        }
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
    };
    println!("{n} {bytes} {:.6}", t.elapsed().as_secs_f64());
}
