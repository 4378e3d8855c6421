//! The cycle cutter alone, on one core: `cut_speed FILE [FROM TO]` reads every event of
//! FILE into memory (not timed), then feeds them to a cutter five times and prints each
//! run's time. FROM and TO default to bench/explain.py's selectors, so that a change to
//! the selectors or the cutter is measured without the reading pass around it (issue 51).
//! The events stream from memory here, where the pass hands over each one just decoded:
//! each run also times that streaming alone (`stream`: every event's time stamp summed).
//! With the default selectors it also times a bare cut of the same cycles (`bare`): a
//! queue of open requests per thread in a hash map and a vector of (start, end), the
//! selectors written as comparisons and nothing counted. That is the floor under any cutter of
//! these cycles; what the cutter spends above it buys selectors of any shape, keyed and
//! queued pairing, and the counts behind its diagnostics.
#![allow(clippy::print_stdout)]
use std::time::Instant;
use whylate::event::{Event, Interner, Kind};
use whylate::explain::{Cycles, Options, Pairing, Same};
use whylate::selector::Selector;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: cut_speed FILE [FROM TO]");
    let from = args.next().unwrap_or(DEFAULT_FROM.into());
    let to = args.next().unwrap_or(DEFAULT_TO.into());
    let defaults = (from.clone(), to.clone()) == (DEFAULT_FROM.into(), DEFAULT_TO.into());
    let mut src = whylate::read::open(path.as_ref(), &Default::default()).expect("open");
    let mut s = Interner::new();
    let mut events = Vec::new();
    while let Some(e) = src.next_ref(&mut s).expect("read") {
        events.push(e.clone());
    }
    let o = Options {
        from: Selector::parse(&from).expect("FROM"),
        to: vec![Selector::parse(&to).expect("TO")],
        deadline_ns: Some(1_000_000),
        same: Same::Thread,
        pairing: Pairing::Fifo,
        arch: src.arch(),
        top: 10,
        learned: Default::default(),
    };
    for _ in 0..5 {
        let t = Instant::now();
        let mut c = Cycles::new(&o);
        for e in &events {
            c.push(e, &s);
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let sum = events.iter().fold(0u64, |a, e| a.wrapping_add(e.ts));
        let stream = t.elapsed().as_secs_f64() * 1e3;
        std::hint::black_box(sum);
        let bare = defaults.then(|| {
            let t = Instant::now();
            let n = bare_cut(&events, &s).len();
            (n, t.elapsed().as_secs_f64() * 1e3)
        });
        let bare = bare.map_or(String::new(), |(n, b)| {
            format!(", bare cut {b:.1} ms ({n})")
        });
        println!(
            "{} events {} cycles {ms:.1} ms; stream {stream:.1} ms{bare}",
            events.len(),
            c.cycles.len()
        );
    }
}

const DEFAULT_FROM: &str = "sys_enter_write[comm=dd,count=1]";
const DEFAULT_TO: &str = "sys_exit_write[comm=dd,ret=1]";

/// The default selectors' replied cycles, cut with nothing but what they need: a dd
/// thread's write(2) of one byte opens one, its next return of 1 closes the oldest one
/// open, as the cutter pairs them (x86-64 numbers).
fn bare_cut(events: &[Event], s: &Interner) -> Vec<(u64, u64)> {
    const WRITE: i64 = 1;
    let dd = (0..s.len() as u32)
        .map(whylate::event::Sym)
        .find(|&y| s.get(y) == "dd");
    let mut open = rustc_hash::FxHashMap::<i32, std::collections::VecDeque<u64>>::default();
    let mut cycles = Vec::new();
    for e in events.iter().filter(|e| Some(e.comm) == dd) {
        match e.kind {
            Kind::SysEnter { nr: WRITE, args } if args[2] == 1 => {
                open.entry(e.tid).or_default().push_back(e.ts);
            }
            Kind::SysExit { nr: WRITE, ret: 1 } => {
                if let Some(start) = open.get_mut(&e.tid).and_then(|q| q.pop_front()) {
                    cycles.push((start, e.ts));
                }
            }
            _ => {}
        }
    }
    std::hint::black_box(cycles)
}
