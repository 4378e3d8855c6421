//! `wakeup`: waking to running, per task (and latency-tracer dumps' own worst case).

use super::cx::{life_key, Cx};
use super::measurer::{Input, Measurer};
use super::report::TracerSample;
use super::report::{Measure, MeasureReport, Options, Sample};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Raw, Src, Unc};
use crate::event::Sym;
use crate::timeline::{span, Cause, KindClass, SpanKind, NONE};
use std::fmt::Write as _;

pub(super) fn wakeup(cx: &Cx<'_>, o: &Options, tracers: &[TracerSample]) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    let mut open = 0;
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Runnable {
            continue;
        }
        let cause = Cause::from_key(sp.key[i]);
        if cause == Cause::Preempted || (cause == Cause::Woken && sp.aux[i] == NONE) {
            continue;
        }
        if sp.flags[i] & (span::END_UNKNOWN | span::START_UNKNOWN) != 0 {
            let ours = match sp.flags[i] & span::END_UNKNOWN {
                0 => cx.settle.span(i, sp.end[i]),
                _ => cx.settle.is_last(),
            };
            open += u64::from(ours);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep_span(r.idx as usize, r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        // Per thread, named by its latest comm (exec and prctl rename threads).
        let (id, label) = life_key(cx, r.tid, r.ts);
        coll.at(id, "wakeup", label).push(cx, r);
    }
    for t in tracers.iter().filter(|t| t.tracer.starts_with("wakeup")) {
        let tid = t.pid.unwrap_or(-1);
        coll.add(
            cx,
            format!(
                "{} (from {} header)",
                t.task.clone().unwrap_or_default(),
                t.tracer
            ),
            "wakeup",
            Raw {
                ts: 0,
                end: t.latency_ns,
                value: t.latency_ns,
                cpu: t.cpu.unwrap_or(u32::MAX),
                tid,
                comm: Sym::EMPTY,
                idx: NONE,
                src: Src::None,
                unc: Unc::default(),
            },
        );
    }
    let mut rep = finish_report(
        cx,
        Measure::Wakeup,
        "wakeup latency: woken (sched_waking, or sched_wakeup) to running, per task",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &wake_detail,
    );
    rep.open = open;
    if tl.saw(KindClass::SchedSwitch) == 0
        || tl.saw(KindClass::SchedWaking) + tl.saw(KindClass::SchedWakeup) == 0
    {
        rep.missing_events.push(needs(
            Measure::Wakeup,
            "wakeup latency",
            &[
                "sched:sched_switch",
                "sched:sched_waking (or sched:sched_wakeup)",
            ],
        ));
    }
    rep
}

pub(super) fn wake_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let key = cx.task(r.tid, r.comm);
    if r.src != Src::Span {
        return base_sample(cx, r, key, "from the latency tracer's header".to_string());
    }
    let sp = &cx.tl.spans;
    let i = r.idx as usize;
    let edge = sp.aux[i];
    let mut d = String::new();
    if edge != NONE {
        let e = &cx.tl.edges[edge as usize];
        let _ = write!(
            d,
            "woken by {} on CPU{}",
            cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
            e.from_cpu
        );
    } else {
        d.push_str(match Cause::from_key(sp.key[i]) {
            Cause::New => "new task",
            Cause::Preempted => "preempted (switched out still runnable)",
            Cause::Woken => "woken (waker not traced)",
        });
    }
    let _ = write!(d, "; ran on CPU{}", r.cpu);
    if sp.flags[i] & span::INFERRED != 0 {
        d.push_str(" (switch-in not traced: end inferred from its first event");
        if let Some(b) = r.unc.bound {
            let _ = write!(d, ", up to {} late", crate::units::dur(b));
        }
        d.push(')');
    }
    let mut s = base_sample(cx, r, key, d);
    s.cpu_held_by = cx.holders(r.cpu, r.ts, r.end, r.tid);
    s
}

/// The `wakeup` measure.
pub(super) struct Wakeup;

impl Measurer for Wakeup {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        wakeup(i.cx, i.o, i.tracers)
    }
}
