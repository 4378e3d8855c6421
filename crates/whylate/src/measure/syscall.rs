//! `syscall`: system call durations, per syscall and task.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options};
use super::series::{base_sample, finish_report, needs, Collector, Tally};
use crate::timeline::{span, KindClass};
use rustc_hash::FxHashMap;

pub(super) fn syscall_name(cx: &Cx<'_>, key: u32, flags: u8) -> String {
    cx.tl.syscall_name(cx.s, key, flags)
}

/// Each group's syscall, by label: its name and number, for the JSON.
type Calls = FxHashMap<String, (String, Option<i64>)>;

/// Calls from which the syscalls are collected on two threads: a syscall-heavy trace has
/// millions, and the collection was most of `latency`'s time after the pass.
const SPLIT_MIN: usize = 1 << 20;

/// The system calls among `range` into groups per syscall and task.
fn collect(cx: &Cx<'_>, range: std::ops::Range<usize>) -> (Collector, Calls) {
    let tl = cx.tl;
    let mut coll = Collector::new();
    let mut calls = Calls::default();
    for (i, c) in tl.syscalls.iter_from(range.start).take(range.len()) {
        if c.flags & span::END_UNKNOWN != 0 {
            cx.open_one(None);
            continue;
        }
        if !cx.keep(c.start, c.end, c.cpu, c.tid, c.comm) {
            continue;
        }
        let (key, fl) = (c.key, c.flags);
        let named = u64::from(fl & span::NAMED != 0);
        let id = (
            (key as u64) << 1 | named,
            (c.tid as u32 as u64) << 32 | c.comm.0 as u64,
        );
        let s = coll.at(id, "duration", || {
            let name = syscall_name(cx, key, fl);
            let label = format!("{name} {}", cx.task(c.tid, c.comm));
            calls.insert(label.clone(), (name, tl.syscall_nr(cx.s, key, fl)));
            label
        });
        let mig = c.migrations as u64;
        s.count("migrations", Tally::Plain, mig);
        s.count("calls_with_migrations", Tally::Plain, u64::from(mig > 0));
        s.push_call(i);
    }
    (coll, calls)
}

/// [`collect`] over every call: the second half on another thread when there are many
/// and the machine has a second core; the halves are joined in call order.
fn collect_all(cx: &Cx<'_>) -> (Collector, Calls) {
    let n = cx.tl.syscalls.len();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if n < SPLIT_MIN || cores < 2 {
        return collect(cx, 0..n);
    }
    let mid = n / 2;
    // The fork is made here: a `Cx` has caches only its own thread may fill.
    let cx2 = cx.fork();
    let ((mut a, mut calls), (b, more, open)) = std::thread::scope(|sc| {
        let far = sc.spawn(move || {
            let (b, more) = collect(&cx2, mid..n);
            (b, more, cx2.open.get())
        });
        let near = collect(cx, 0..mid);
        let far = far.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (near, far)
    });
    a.append(b);
    calls.extend(more);
    cx.open.set(cx.open.get() + open);
    (a, calls)
}

pub(super) fn syscall(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let (coll, calls) = collect_all(cx);
    let mut rep = finish_report(
        cx,
        Measure::Syscall,
        "system call duration (enter to exit) per syscall and task, with CPU migrations inside the call",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &|cx, r| {
            let c = cx.tl.syscalls.get(r.idx);
            let name = syscall_name(cx, c.key, c.flags);
            let key = format!("{} {}", name, cx.task(r.tid, r.comm));
            let d = format!(
                "{name} entered on CPU{}, {} migration(s) before it returned",
                r.cpu, c.migrations
            );
            base_sample(cx, r, key, d)
        },
    );
    for g in &mut rep.groups {
        if let Some((name, nr)) = calls.get(&g.key) {
            g.extra.insert("syscall".into(), name.clone().into());
            if let Some(nr) = nr {
                g.extra.insert("nr".into(), (*nr).into());
            }
        }
    }
    if tl.saw(KindClass::RawSyscall) + tl.saw(KindClass::Syscall) == 0 {
        rep.missing_events.push(needs(
            Measure::Syscall,
            "syscall durations",
            &[
                "raw_syscalls:sys_enter",
                "raw_syscalls:sys_exit (or syscalls:sys_enter_*/sys_exit_*)",
            ],
        ));
    }
    rep
}

/// The `syscall` measure.
pub(super) struct Syscall;

impl Measurer for Syscall {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        syscall(i.cx, i.o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::report::Filter;
    use crate::testkit;

    /// Two tasks calling read and write, `n` calls in all.
    fn calls_text(n: u64) -> String {
        let mut t = String::new();
        for k in 0..n {
            let (who, cpu) = if k % 2 == 0 {
                ("dd-100", 0)
            } else {
                ("dd-101", 1)
            };
            let nr = k % 3 / 2; // read, read, write...
            let at = 100 + k * 50;
            t += &testkit::line(
                at,
                cpu,
                who,
                "....",
                &format!("sys_enter: NR {nr} (3, 0, 1)"),
            );
            t += &testkit::line(
                at + 5 + k,
                cpu,
                who,
                "....",
                &format!("sys_exit: NR {nr} = 1"),
            );
        }
        t
    }

    fn cx<'a>(p: &'a crate::pipeline::Pass, f: &'a Filter) -> Cx<'a> {
        Cx {
            tl: &p.tl,
            s: &p.strings,
            f,
            settle: super::super::report::Settle::WHOLE,
            first: p.tl.first_ts.unwrap_or(0),
            runnable_by_cpu: Default::default(),
            offs_by_cpu: Default::default(),
            open: Default::default(),
        }
    }

    /// One series, comparable: its label, samples (call indices) and counters.
    type Shape = (String, Vec<u32>, Vec<(&'static str, u64)>);

    /// What a collector holds, series by series.
    fn shape(c: &Collector) -> Vec<Shape> {
        c.series
            .iter()
            .map(|s| {
                let raw = s.calls.clone();
                let tally = s.tally.iter().map(|t| (t.0, t.2)).collect();
                (s.key.clone(), raw, tally)
            })
            .collect()
    }

    /// The calls collected in two halves and joined are the calls collected in one, at
    /// every cut: same groups in the same order, same samples, same counters.
    #[test]
    fn halves_join_into_one_collection_at_every_cut() {
        let p = testkit::pass(&calls_text(12));
        let f = Filter::default();
        let cx = cx(&p, &f);
        let n = p.tl.syscalls.len();
        assert_eq!(n, 12);
        let (whole, calls) = collect(&cx, 0..n);
        let groups = shape(&whole);
        assert_eq!(groups.len(), 4, "{groups:?}");
        let counts: Vec<usize> = groups.iter().map(|g| g.1.len()).collect();
        assert_eq!(counts.iter().sum::<usize>(), 12);
        // The first call: dd-100's read, entered at 100 us and back 5 us later.
        assert_eq!(p.tl.syscalls.dur(groups[0].1[0]), 5_000);
        for mid in 0..=n {
            let (mut a, mut ca) = collect(&cx.fork(), 0..mid);
            let (b, cb) = collect(&cx.fork(), mid..n);
            a.append(b);
            ca.extend(cb);
            assert_eq!(shape(&a), groups, "cut at call {mid}");
            assert_eq!(ca, calls);
        }
    }

    /// A group made from samples kept as call indices equals the group made from the
    /// same samples as `Slim`s: values, quantiles, histogram, uncertain count and the
    /// worst list, for every length of that list.
    #[test]
    fn call_samples_group_as_slims_do() {
        use super::super::series::group;
        // 100 calls per group: more than the worst list's working buffer holds.
        let p = testkit::pass(&calls_text(400));
        let f = Filter::default();
        let cx = cx(&p, &f);
        let n = p.tl.syscalls.len();
        let detail = |cx: &Cx<'_>, r: &super::super::series::Raw| {
            super::super::series::base_sample(cx, r, String::new(), String::new())
        };
        for top in [0, 1, 2, 3, 100] {
            let (kept, _) = collect(&cx, 0..n);
            let (mut unpacked, _) = collect(&cx, 0..n);
            for (a, mut b) in kept.series.into_iter().zip(unpacked.series.drain(..)) {
                assert!(!a.calls.is_empty() && a.raw.is_empty());
                b.unpack(&cx);
                assert!(b.calls.is_empty() && !b.raw.is_empty());
                let ga = group(&cx, a, top, false, 1000, &detail);
                let gb = group(&cx, b, top, false, 1000, &detail);
                assert_eq!(ga.worst.len(), top.min(ga.count as usize));
                let (ja, jb) = (serde_json::to_string(&ga), serde_json::to_string(&gb));
                assert_eq!(ja.unwrap(), jb.unwrap(), "top {top}");
            }
        }
    }
}
