//! Reader throughput on one core, for bench/binary.py and bench/perfetto.py:
//! `read_speed FILE [--raw|--perf-generic|--prost]`.
//! Prints `events bytes seconds`. `--raw` (trace.dat only) walks the records without
//! decoding them into events: the container and page-parsing cost alone. `--perf-generic`
//! (perf.data only) reads through linux-perf-data's record iterator instead of the
//! in-place path, for the comparison. `--prost` (an uncompressed Perfetto trace) decodes
//! every packet with prost and nothing else, on one core (the bytes read into memory
//! first, not timed; events counted typed and compact, as the reader counts them).
#![allow(clippy::print_stdout, clippy::print_stderr)]
use std::time::Instant;
use whylate_read::event::Interner;
use whylate_read::read::{self, perfdata::PerfData, tracedat};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = std::path::PathBuf::from(
        args.next()
            .expect("usage: read_speed FILE [--raw|--perf-generic|--prost]"),
    );
    let flag = args.next();
    if flag.as_deref() == Some("--prost") {
        return prost_only(&path);
    }
    let t = Instant::now();
    let mut n = 0u64;
    let mut s = Interner::new();
    let bytes = match flag.as_deref() {
        Some("--raw") => {
            let f = std::fs::File::open(&path).expect("open");
            let mut d = tracedat::TraceDat::open(&path, f).expect("a trace.dat");
            while let Some(r) = d.next_raw().expect("read") {
                if let tracedat::Raw::Record { data, .. } = r {
                    n += data.len().min(1) as u64;
                }
            }
            d.data_bytes()
        }
        Some("--perf-generic") => {
            let f = std::fs::File::open(&path).expect("open");
            let mut d = PerfData::open_generic(&path, f, read::PERF_WINDOW).expect("a perf.data");
            while d.next_ref(&mut s).expect("read").is_some() {
                n += 1;
            }
            d.bytes()
        }
        _ => {
            let mut src = read::open(&path, &Default::default()).expect("open");
            while src.next_ref(&mut s).expect("read").is_some() {
                n += 1;
            }
            std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        }
    };
    println!("{n} {bytes} {:.6}", t.elapsed().as_secs_f64());
}

/// Every packet of a Perfetto trace decoded by prost, timed without the file's reading.
fn prost_only(path: &std::path::Path) {
    use prost::encoding::{decode_key, decode_varint, WireType};
    use prost::Message;
    use whylate_read::read::perfetto::protos::{trace_packet::Data, TracePacket};
    let data = std::fs::read(path).expect("read");
    let t = Instant::now();
    let (mut buf, mut n) = (&data[..], 0u64);
    while !buf.is_empty() {
        let (field, wire) = decode_key(&mut buf).expect("a field of Trace");
        assert!(
            field == 1 && wire == WireType::LengthDelimited,
            "not a packet"
        );
        let len = decode_varint(&mut buf).expect("a length") as usize;
        let Some((packet, rest)) = buf.split_at_checked(len) else {
            eprintln!("the trace is cut inside its last packet");
            break;
        };
        if let Some(Data::FtraceEvents(b)) = TracePacket::decode(packet).expect("a packet").data {
            let compact = (b.compact_sched)
                .map_or(0, |c| c.switch_timestamp.len() + c.waking_timestamp.len());
            n += (b.event.len() + compact) as u64;
        }
        buf = rest;
    }
    println!("{n} {} {:.6}", data.len(), t.elapsed().as_secs_f64());
}
