//! `work`: workqueue items, queued to started and run time, per function.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options, Sample};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Raw, Src, Tally, Unc};
use crate::event::Sym;
use crate::timeline::{span, EdgeKind, KindClass, SpanKind};

pub(super) fn work(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for (ei, e) in tl.edges.iter().enumerate() {
        if e.kind != EdgeKind::Work {
            continue;
        }
        let r = Raw {
            ts: e.ts,
            end: e.at,
            value: e.at - e.ts,
            cpu: e.to_cpu,
            tid: e.to_tid,
            comm: Sym::EMPTY,
            idx: ei as u32,
            src: Src::Edge,
            unc: Unc::lost(!tl.lost.is_empty() && tl.crosses_loss(u32::MAX, e.ts, e.at)),
        };
        if !cx.keep(r.ts, r.end, r.cpu, r.tid, r.comm) {
            continue;
        }
        let s = coll.at((e.key as u64, 0), "queue-to-start", || {
            cx.s.get(Sym(e.key)).to_string()
        });
        s.count("workers", Tally::Task(e.to_tid, Sym::EMPTY), 1);
        s.push(cx, r);
    }
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Work {
            continue;
        }
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open_one(None);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep_span(r.idx as usize, r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        let s = coll.at((sp.key[i] as u64, 0), "run", || {
            cx.s.get(Sym(sp.key[i])).to_string()
        });
        s.count("workers", Tally::Task(r.tid, r.comm), 1);
        s.push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Work,
        "work items: queue-to-start latency and run time, per work function (and the workers that ran it)",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &work_detail,
    );
    if tl.saw(KindClass::WorkExecute) == 0 {
        rep.missing_events.push(needs(
            Measure::Work,
            "work run time",
            &[
                "workqueue:workqueue_execute_start",
                "workqueue:workqueue_execute_end",
            ],
        ));
    }
    if tl.saw(KindClass::WorkQueue) == 0 {
        rep.missing_events.push(needs(
            Measure::Work,
            "queue-to-start latency",
            &["workqueue:workqueue_queue_work"],
        ));
    }
    rep
}

pub(super) fn work_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    if r.src == Src::Span {
        let key = cx.s.get(Sym(tl.spans.key[r.idx as usize])).to_string();
        let d = format!("ran in {} on CPU{}", cx.task(r.tid, r.comm), r.cpu);
        return base_sample(cx, r, key, d);
    }
    let e = &tl.edges[r.idx as usize];
    let key = cx.s.get(Sym(e.key)).to_string();
    let d = format!(
        "queued by {} on CPU{}; ran in {} on CPU{}",
        cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
        e.from_cpu,
        cx.task(e.to_tid, Sym::EMPTY),
        e.to_cpu
    );
    let mut s = base_sample(cx, r, key, d);
    s.cpu_held_by = cx.holders(e.to_cpu, e.ts, e.at, e.to_tid);
    s
}

/// The `work` measure.
pub(super) struct Work;

impl Measurer for Work {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        work(i.cx, i.o)
    }
}
