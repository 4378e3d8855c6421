//! `irqsoff`: irqs-off and preempt-off sections per caller that opened them.

use super::cx::{func_of, Cx};
use super::measurer::{Input, Measurer};
use super::report::TracerSample;
use super::report::{Measure, MeasureReport, Options};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Raw, Src, Unc};
use crate::event::Sym;
use crate::timeline::{span, KindClass, SpanKind, NONE};

pub(super) fn irqsoff(cx: &Cx<'_>, o: &Options, tracers: &[TracerSample]) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for i in 0..sp.len() {
        let metric = match sp.kind[i] {
            SpanKind::IrqsOff => "irqs-off",
            SpanKind::PreemptOff => "preempt-off",
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
        coll.add(cx, func_of(cx.s.get(Sym(sp.key[i]))).to_string(), metric, r);
    }
    for t in tracers.iter().filter(|t| !t.tracer.starts_with("wakeup")) {
        let metric: &'static str = match t.tracer.as_str() {
            "irqsoff" => "irqs-off",
            "preemptoff" => "preempt-off",
            "preemptirqsoff" => "preempt-irqs-off",
            _ => "latency-tracer",
        };
        let key = t
            .started_at
            .as_deref()
            .map_or_else(|| "?".to_string(), |s| func_of(s.trim()).to_string());
        coll.add(
            cx,
            key,
            metric,
            Raw {
                ts: 0,
                end: t.latency_ns,
                value: t.latency_ns,
                cpu: t.cpu.unwrap_or(u32::MAX),
                tid: t.pid.unwrap_or(-1),
                comm: Sym::EMPTY,
                idx: NONE,
                src: Src::None,
                unc: Unc::default(),
            },
        );
    }
    let tr = tracers.to_vec();
    let mut rep = finish_report(
        cx,
        Measure::Irqsoff,
        "irqs-off and preempt-off sections per caller that opened them (preemptirq events, latency-tracer dumps)",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &move |cx, r| {
            if r.src == Src::None {
                let t = tr.iter().find(|t| t.latency_ns == r.value);
                let key = t
                    .and_then(|t| t.started_at.as_deref())
                    .map_or_else(|| "?".to_string(), |s| func_of(s.trim()).to_string());
                let d = t.map_or_else(String::new, |t| {
                    format!(
                        "{} tracer dump {}: started at {}, ended at {}",
                        t.tracer,
                        t.file,
                        t.started_at.as_deref().unwrap_or("?").trim(),
                        t.ended_at.as_deref().unwrap_or("?").trim()
                    )
                });
                return base_sample(cx, r, key, d);
            }
            let sp = &cx.tl.spans;
            let i = r.idx as usize;
            let what = if sp.kind[i] == SpanKind::IrqsOff { "irqs off" } else { "preemption off" };
            let d = format!(
                "{what} on CPU{} in {}: disabled at {}, enabled at {}",
                r.cpu,
                cx.task(r.tid, r.comm),
                cx.s.get(Sym(sp.key[i])),
                cx.s.get(Sym(sp.aux[i]))
            );
            base_sample(cx, r, func_of(cx.s.get(Sym(sp.key[i]))).to_string(), d)
        },
    );
    if tl.saw(KindClass::IrqToggle) + tl.saw(KindClass::PreemptToggle) == 0 && tracers.is_empty() {
        rep.missing_events.push(needs(
            Measure::Irqsoff,
            "irqs-off / preempt-off sections",
            &[
                "preemptirq:irq_disable",
                "preemptirq:irq_enable",
                "preemptirq:preempt_disable",
                "preemptirq:preempt_enable (CONFIG_PREEMPTIRQ_TRACEPOINTS), or an irqsoff tracer dump",
            ],
        ));
    }
    rep
}

/// The `irqsoff` measure.
pub(super) struct Irqsoff;

impl Measurer for Irqsoff {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        irqsoff(i.cx, i.o, i.tracers)
    }
}
