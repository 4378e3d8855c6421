//! `softirq`: raise to entry and run time per vector, where it was served.

use super::cx::{vec_name, Cx};
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options, Sample};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Raw, Src, Tally, Unc};
use crate::event::Sym;
use crate::timeline::{span, EdgeKind, KindClass, SpanKind};
use crate::units::{dur, secs};
use std::fmt::Write as _;

pub(super) fn softirq(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for (ei, e) in tl.edges.iter().enumerate() {
        match e.kind {
            EdgeKind::Softirq => {
                let where_ = served_in(e.val as u8);
                let r = Raw {
                    ts: e.ts,
                    end: e.at,
                    value: e.at - e.ts,
                    cpu: e.to_cpu,
                    tid: e.to_tid,
                    comm: Sym::EMPTY,
                    idx: ei as u32,
                    src: Src::Edge,
                    unc: Unc::lost(tl.crosses_loss(e.to_cpu, e.ts, e.at) && !tl.lost.is_empty()),
                };
                if !cx.keep(r.ts, r.end, r.cpu, r.tid, r.comm) {
                    continue;
                }
                let s = coll.at((e.key as u64, 0), "raise-to-entry", || vec_name(e.key));
                s.count("served_in", Tally::Str(where_), 1);
                s.push(cx, r);
            }
            EdgeKind::Tasklet => {
                let r = Raw {
                    ts: e.ts,
                    end: e.at,
                    value: e.at - e.ts,
                    cpu: e.to_cpu,
                    tid: e.to_tid,
                    comm: Sym::EMPTY,
                    idx: ei as u32,
                    src: Src::Edge,
                    unc: Unc::default(),
                };
                if cx.keep(r.ts, r.end, r.cpu, r.tid, r.comm) {
                    coll.add(cx, "tasklet".to_string(), "schedule-to-run", r);
                }
            }
            _ => {}
        }
    }
    for i in 0..sp.len() {
        let (key, metric) = match sp.kind[i] {
            SpanKind::Softirq => (vec_name(sp.key[i]), "run"),
            SpanKind::Tasklet => (format!("tasklet {}", cx.s.get(Sym(sp.key[i]))), "run"),
            _ => continue,
        };
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open_one(None);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep_span(r.idx as usize, r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        let s = coll.get(key, metric);
        if sp.kind[i] == SpanKind::Softirq {
            s.count("served_in", Tally::Str(served_in(sp.flags[i])), 1);
        }
        s.push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Softirq,
        "softirq raise-to-entry latency and run time per vector, where it ran (irq exit, ksoftirqd, task), and tasklets",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &softirq_detail,
    );
    if tl.saw(KindClass::SoftirqEntry) == 0 {
        rep.missing_events.push(needs(
            Measure::Softirq,
            "softirq run time",
            &["irq:softirq_entry", "irq:softirq_exit"],
        ));
    }
    if tl.saw(KindClass::SoftirqRaise) == 0 {
        rep.missing_events.push(needs(
            Measure::Softirq,
            "raise-to-entry latency",
            &["irq:softirq_raise"],
        ));
    }
    rep
}

pub(super) fn served_in(flags: u8) -> &'static str {
    if flags & span::KSOFTIRQD != 0 {
        "ksoftirqd"
    } else if flags & span::IN_TASK != 0 {
        "task (bh enable)"
    } else {
        "irq exit"
    }
}

pub(super) fn softirq_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    if r.src != Src::Edge {
        let sp = &tl.spans;
        let i = r.idx as usize;
        let key = if sp.kind[i] == SpanKind::Softirq {
            vec_name(sp.key[i])
        } else {
            format!("tasklet {}", cx.s.get(Sym(sp.key[i])))
        };
        let d = format!("ran in {} on CPU{}", served_in(sp.flags[i]), r.cpu);
        return base_sample(cx, r, key, d);
    }
    let e = &tl.edges[r.idx as usize];
    let key = if e.kind == EdgeKind::Tasklet {
        "tasklet".to_string()
    } else {
        vec_name(e.key)
    };
    let mut d = format!(
        "raised in {} on CPU{}",
        cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
        e.from_cpu
    );
    if e.kind == EdgeKind::Softirq {
        let fl = e.val as u8;
        let _ = write!(d, "; served in {}", served_in(fl));
        if fl & span::KSOFTIRQD == 0 {
            let _ = write!(d, " ({})", cx.task(e.to_tid, Sym::EMPTY));
        }
    }
    // Was ksoftirqd waiting on this CPU meanwhile? That is the deferral.
    let idx = cx.runnable_index();
    if let Some(l) = idx.get(r.cpu as usize) {
        let stop = l.partition_point(|&j| tl.spans.start[j as usize] < r.end);
        for &j in l[..stop].iter().rev().take(64) {
            let j = j as usize;
            let name = cx.s.get(cx.tl.comm(tl.spans.tid[j]));
            if name.starts_with("ksoftirqd") && tl.spans.end[j] > r.ts {
                let _ = write!(
                    d,
                    "; deferred to {} (runnable {} from {})",
                    cx.task(tl.spans.tid[j], Sym::EMPTY),
                    dur(tl.spans.dur(j as u32)),
                    secs(tl.spans.start[j])
                );
                break;
            }
        }
    }
    let mut s = base_sample(cx, r, key, d);
    s.cpu_held_by = cx.holders(r.cpu, r.ts, r.end, -1);
    s
}

/// The `softirq` measure.
pub(super) struct Softirq;

impl Measurer for Softirq {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        softirq(i.cx, i.o)
    }
}
