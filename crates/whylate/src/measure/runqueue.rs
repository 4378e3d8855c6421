//! `runqueue`: time runnable but not running, per task, with who held the CPU.

use super::cx::{life_key, Cx};
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options};
use super::series::{
    add_u64, base_sample, finish_report, merge_worst, needs, span_raw, Collector, Tally,
};
use super::wakeup::wake_detail;
use crate::event::Sym;
use crate::timeline::{span, Cause, KindClass, SpanKind, Timeline};
use rustc_hash::FxHashMap;

/// Whether span `i` is a runqueue wait this measure samples: runnable, its end traced.
/// Automatic mode takes its CPU waits from the same spans.
pub fn is_wait(tl: &Timeline, i: usize) -> bool {
    let sp = &tl.spans;
    sp.kind[i] == SpanKind::Runnable && sp.flags[i] & span::END_UNKNOWN == 0
}

pub(super) fn runqueue(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    let mut open = 0;
    // Runs and waits with an endpoint inferred (a switch the trace lacks), per thread,
    // and when the last began.
    let mut inferred: FxHashMap<i32, (u64, u64)> = FxHashMap::default();
    for i in 0..sp.len() {
        match sp.kind[i] {
            // Runs too, per thread: waiting means little without the running beside it
            // (perf sched timehist's view). A run whose start the trace lacks is no sample.
            SpanKind::Run if sp.tid[i] > 0 => {
                // Counted by the window that settles the run (all of them when whole).
                let settled = match sp.flags[i] & span::END_UNKNOWN {
                    0 => cx.settle.span(i, sp.end[i]),
                    _ => cx.settle.is_last(),
                };
                if sp.flags[i] & span::INFERRED != 0 && settled {
                    let e = inferred.entry(sp.tid[i]).or_default();
                    (e.0, e.1) = (e.0 + 1, sp.start[i]);
                }
                if sp.flags[i] & span::START_UNKNOWN != 0 {
                    continue;
                }
                if sp.flags[i] & span::END_UNKNOWN != 0 {
                    open += u64::from(cx.settle.is_last());
                    continue;
                }
                let r = span_raw(tl, i);
                if cx.keep_span(r.idx as usize, r.ts, r.cpu, r.tid, r.comm) {
                    let (id, label) = life_key(cx, r.tid, r.ts);
                    coll.at(id, "run", label).push(cx, r);
                }
            }
            SpanKind::Runnable => {
                if !is_wait(tl, i) {
                    open += u64::from(cx.settle.is_last());
                    continue;
                }
                let r = span_raw(tl, i);
                if !cx.keep_span(r.idx as usize, r.ts, r.cpu, r.tid, r.comm) {
                    continue;
                }
                let cause = match Cause::from_key(sp.key[i]) {
                    Cause::Preempted => "preempted",
                    Cause::New => "new",
                    Cause::Woken => "woken",
                };
                if sp.flags[i] & span::INFERRED != 0 {
                    let e = inferred.entry(r.tid).or_default();
                    (e.0, e.1) = (e.0 + 1, r.ts);
                }
                let (id, label) = life_key(cx, r.tid, r.ts);
                let s = coll.at(id, "runnable", label);
                s.count("by_cause_ns", Tally::Str(cause), r.value);
                if sp.flags[i] & span::RACED != 0 {
                    s.count("woken_during_switch_out_ns", Tally::Plain, r.value);
                }
                s.push(cx, r);
                if r.cpu != u32::MAX {
                    let s = coll.at((r.cpu as u64, 1), "runnable-on-cpu", || {
                        format!("cpu {}", r.cpu)
                    });
                    s.push(cx, r);
                }
            }
            _ => {}
        }
    }
    if cx.settle.is_window() {
        // A window's inferred endpoints count for the thread's groups even where it has
        // no sample of them (its samples are other windows'): empty groups carry them
        // to the merge.
        for (&tid, &(_, ts)) in &inferred {
            for metric in ["run", "runnable"] {
                let (id, label) = life_key(cx, tid, ts);
                coll.at(id, metric, label);
            }
        }
    }
    for s in coll.series.iter_mut() {
        if s.metric == "runnable" || s.metric == "run" {
            let tid = (s.key.strip_prefix('\u{1}'))
                .and_then(|k| k.split('#').next()?.parse::<i32>().ok());
            if let Some(tid) = tid {
                add_u64(&mut s.extra, "tid", tid.max(0) as u64);
                let n = inferred.get(&tid).map_or(0, |i| i.0);
                add_u64(&mut s.extra, "inferred", n);
            }
        }
    }
    let mut rep = finish_report(
        cx,
        Measure::Runqueue,
        "runqueue wait: time runnable but not running (after a wakeup or a preemption), per task and per CPU",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &|cx, r| {
            if cx.tl.spans.kind[r.idx as usize] == SpanKind::Run {
                let d = format!("ran on CPU{}", r.cpu);
                return base_sample(cx, r, cx.task(r.tid, Sym::EMPTY), d);
            }
            wake_detail(cx, r)
        },
    );
    rep.open = open;
    rep.groups.sort_by_key(|g| metric_rank(&g.metric));
    rep.worst = merge_worst(&rep.groups, o.top, |g| g.metric != "run");
    let mut partial: Vec<i32> = inferred.keys().copied().collect();
    partial.sort_unstable();
    rep.partial_tids = partial;
    if tl.saw(KindClass::SchedSwitch) == 0 {
        rep.missing_events.push(needs(
            Measure::Runqueue,
            "runqueue wait",
            &["sched:sched_switch", "sched:sched_waking"],
        ));
    }
    rep
}

/// Where a group of `metric` goes in the report: waits first, they are what this
/// measure is about.
pub(super) fn metric_rank(metric: &str) -> u8 {
    match metric {
        "runnable" => 0,
        "runnable-on-cpu" => 1,
        _ => 2,
    }
}

/// The `runqueue` measure.
pub(super) struct Runqueue;

impl Measurer for Runqueue {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        runqueue(i.cx, i.o)
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::{line, pass};
    use crate::timeline::SpanKind;

    /// p waits 30 us behind a (a wait); a, preempted, and q, woken, have not run again
    /// when the trace ends (open, no wait).
    #[test]
    fn a_wait_needs_its_end() {
        let t = [
            line(1_000, 0, "a-5", "d..2.", "sched_waking: comm=p pid=7 prio=120 target_cpu=000"),
            line(1_030, 0, "a-5", "d..2.", "sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R ==> next_comm=p next_pid=7 next_prio=120"),
            line(1_040, 0, "p-7", "d..2.", "sched_waking: comm=q pid=8 prio=120 target_cpu=000"),
        ]
        .concat();
        let p = pass(&t);
        let sp = &p.tl.spans;
        let waits: Vec<(i32, u64)> = (0..sp.len())
            .filter(|&i| sp.kind[i] == SpanKind::Runnable)
            .map(|i| (sp.tid[i], u64::from(super::is_wait(&p.tl, i))))
            .collect();
        assert_eq!(waits, [(7, 1), (5, 0), (8, 0)]);
        let i = (0..sp.len()).find(|&i| super::is_wait(&p.tl, i)).unwrap();
        assert_eq!(sp.end[i] - sp.start[i], 30_000);
    }
}
