//! `watch`'s tick on recorded pages, with a scripted clock: the bundled recordings cut
//! back into their ring-buffer pages and handed to a run as the readers would (each
//! CPU's pages in order, all CPUs by the time of their first record), a tick every
//! 500 ms of trace time (and more often, to cut the samples in more places). Every miss
//! must be reported once, by the first window that held it whole, and be the miss
//! `explain` finds in the whole recording. The script is a monotonic trace clock (as
//! `watch` records); deadlines are given, not learnt.

use super::driver::{Host, Run};
use super::ring::RawPage;
use super::types::{LiveMiss, Status, WatchOptions, Watcher};
use crate::record::readback::{example, read_back};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;
use whylate::explain::{self, ExplainReport, Mode};
use whylate::read::ringbuf::{PageCursor, PageLayout};
use whylate::read::{OpenOptions, Opened};

/// Trace time as the script sets it; the run's start is the first page's time.
struct Script {
    now: Rc<Cell<u64>>,
    t0: u64,
    cmdlines: Vec<u8>,
}

impl Host for Script {
    fn trace_now(&self) -> Option<u64> {
        Some(self.now.get())
    }
    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.now.get().saturating_sub(self.t0))
    }
    fn cpu_ns(&self) -> u64 {
        0
    }
    fn cmdlines(&self) -> Vec<u8> {
        self.cmdlines.clone()
    }
}

/// The misses reported, in order, each with the end of the window that reported it
/// (`u64::MAX`: the last one), how many statuses came, the ends of the windows before
/// the last, and the whole run's counts (samples, misses).
#[derive(Default)]
struct Seen {
    misses: Vec<(LiveMiss, u64)>,
    statuses: usize,
    ends: Vec<u64>,
    /// The end of the window being explained.
    to: u64,
    counts: (u64, u64),
}

impl Watcher for Seen {
    fn miss(&mut self, m: &LiveMiss, _: &ExplainReport) {
        self.misses.push((m.clone(), self.to));
    }
    fn status(&mut self, _: &Status) {
        self.statuses += 1;
    }
}

fn options(mode: Mode) -> WatchOptions {
    WatchOptions {
        mode,
        timerlat: None,
        events: Vec::new(),
        buffer_kb: 0,
        duration: None,
        until: None,
        command: Vec::new(),
        command_stdout_to_stderr: false,
        before_ns: 500_000_000,
        after_ns: 100_000_000,
        keep: None,
        on_miss: None,
        ring_bytes: 1 << 30,
    }
}

/// The pages of a recording as the readers hand them over, by their first record's time
/// (a CPU's own pages stay in their order).
fn pages(name: &str) -> (crate::record::Meta, Vec<RawPage>) {
    let (meta, cpus) = read_back(&example(name)).unwrap();
    let layout = PageLayout::from_header_page(&meta.header_page, 8, Default::default());
    let mut out = Vec::new();
    for c in cpus {
        for data in c.pages {
            let Some(cur) = PageCursor::new(&data, &layout).filter(|c| !c.is_empty()) else {
                continue;
            };
            let (ts, lost) = (cur.ts, cur.missed);
            out.push(RawPage {
                cpu: c.cpu,
                ts,
                lost,
                data,
            });
        }
    }
    out.sort_by_key(|p| p.ts);
    (meta, out)
}

/// What watch reported of `name` in `mode`, ticking every `tick` ns of trace time.
fn replay(name: &str, mode: &Mode, tick: u64) -> Seen {
    let (meta, pages) = pages(name);
    let t0 = pages.first().map_or(0, |p| p.ts);
    let now = Rc::new(Cell::new(t0));
    let host = Script {
        now: now.clone(),
        t0,
        cmdlines: meta.cmdlines.clone(),
    };
    let o = options(mode.clone());
    let mut run = Run::new(&o, (meta, Box::new(host)), None, "(replay)".into());
    let mut seen = Seen::default();
    let mut next = t0 + tick;
    for p in pages {
        // Every page whose first record is before `next` is in: no record before it
        // is still to come, as after the readers' lag live.
        while p.ts >= next {
            now.set(next + super::driver::LAG_NS);
            (seen.to, seen.ends) = (next, [&seen.ends[..], &[next]].concat());
            run.tick(false, &mut seen).unwrap();
            next += tick;
        }
        run.take(p);
    }
    seen.to = u64::MAX;
    run.tick(true, &mut seen).unwrap();
    let whole = run.finish(None, Vec::new(), Vec::new(), &mut seen).unwrap();
    let c = whole.report.expect("samples settled").cycles;
    seen.counts = (c.count, c.misses);
    seen
}

/// A miss as both sides list it: (start, thread, CPU, duration).
type Key = (u64, i32, u32, Option<u64>);

/// Every miss `explain` finds in the whole recording, and its counts (samples, misses).
fn offline(name: &str, mode: &Mode) -> (Vec<Key>, (u64, u64)) {
    let d = example(name);
    let open = OpenOptions::default();
    let one = Opened::bytes(name, d, &open).unwrap();
    let r = explain::run(one, &open, mode).unwrap().report;
    assert_eq!(r.misses.len(), r.windows.iter().filter(|w| w.miss).count());
    let mut v: Vec<_> = (r.misses.iter())
        .map(|m| (m.start_ns, m.tid, m.cpu, m.duration_ns))
        .collect();
    v.sort();
    (v, (r.cycles.count, r.cycles.misses))
}

fn cycles() -> Mode {
    use whylate::selector::Selector;
    Mode::Cycles(explain::Options {
        from: Selector::parse("sys_enter_write[comm=frobnicator,count=7]").unwrap(),
        to: vec![Selector::parse("sys_exit_read[comm=frobnicator,ret>0]").unwrap()],
        deadline_ns: Some(3_500_000),
        same: explain::Same::Thread,
        pairing: Default::default(),
        arch: None,
        top: usize::MAX,
        learned: Default::default(),
    })
}

fn timer() -> Mode {
    Mode::Timer(explain::TimerOptions {
        task: Some(whylate::measure::TaskSel::parse("periodic").unwrap()),
        deadline_ns: Some(300_000),
        top: usize::MAX,
    })
}

#[test]
fn each_miss_is_reported_once_by_the_first_window_that_holds_it() {
    for (name, mode, want) in [
        ("frob.dat.zst", cycles(), Some(16)),
        ("timer.dat.zst", timer(), None),
        ("softirq.dat.zst", timer(), None),
    ] {
        // Live ticks come every 500 ms or more; shorter ones cut the samples in more
        // places.
        for tick in [500_000_000, 100_000_000, 37_000_000] {
            let seen = replay(name, &mode, tick);
            let mut got: Vec<_> = (seen.misses.iter())
                .map(|(m, _)| (m.miss.start_ns, m.miss.tid, m.miss.cpu, m.miss.duration_ns))
                .collect();
            // Reported in the order they settled: by start within each window.
            let numbered: Vec<u64> = seen.misses.iter().map(|(m, _)| m.n).collect();
            assert_eq!(
                numbered,
                (1..=got.len() as u64).collect::<Vec<_>>(),
                "{name}"
            );
            got.sort();
            let (whole, counts) = offline(name, &mode);
            assert_eq!(seen.counts, counts, "{name}: the run's samples and misses");
            if let Some(n) = want {
                assert_eq!(whole.len(), n, "{name}: the bundled truth");
            }
            assert!(!whole.is_empty(), "{name}: no miss to watch for");
            assert_eq!(got, whole, "{name}: watch's misses against explain's");
            assert!(seen.statuses > 2, "{name}: {} ticks", seen.statuses);
            reported_by_the_first_window_that_held_them(name, &seen);
        }
    }
}

/// Each miss came in the first window that ended at least `after` past its end (every
/// miss here is far shorter than the span each window holds before its end, so that
/// window also held its start and context): not later, and not held for the last.
fn reported_by_the_first_window_that_held_them(name: &str, seen: &Seen) {
    let after = options(cycles()).after_ns;
    let mut early = 0;
    for (m, to) in &seen.misses {
        let end = m.miss.start_ns + m.miss.duration_ns.unwrap_or(m.miss.late_ns);
        let first = seen.ends.iter().copied().find(|&e| e >= end + after);
        assert_eq!(*to, first.unwrap_or(u64::MAX), "{name}: miss {}", m.n);
        early += usize::from(*to != u64::MAX);
    }
    assert!(early > 0, "{name}: every miss waited for the last window");
}
