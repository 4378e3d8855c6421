//! The cycle cutter alone, on one core: `cut_speed FILE [FROM TO]` reads every event of
//! FILE into memory (not timed), then feeds them to a cutter five times and prints each
//! run's time. FROM and TO default to bench/explain.py's selectors, so that a change to
//! the selectors or the cutter is measured without the reading pass around it (issue 51).
//! The events stream from memory here, where the pass hands over each one just decoded:
//! about 6 ns of each event's time here is that reading.
#![allow(clippy::print_stdout)]
use std::time::Instant;
use whylate::event::Interner;
use whylate::explain::{Cycles, Options, Pairing, Same};
use whylate::selector::Selector;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: cut_speed FILE [FROM TO]");
    let from = args
        .next()
        .unwrap_or("sys_enter_write[comm=dd,count=1]".into());
    let to = args
        .next()
        .unwrap_or("sys_exit_write[comm=dd,ret=1]".into());
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
        println!(
            "{} events {} cycles {ms:.1} ms",
            events.len(),
            c.cycles.len()
        );
    }
}
