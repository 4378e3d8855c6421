//! `timerlat`: the kernel timerlat tracer's samples, per CPU and context (IRQ, thread,
//! user-ret): what `rtla timerlat hist` shows.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport};
use super::series::{base_sample, finish_report, needs, Collector, Raw, Src, Unc};
use crate::event::Sym;
use crate::timeline::rtla::LatCtx;

/// The metric of a context.
fn metric(c: LatCtx) -> &'static str {
    match c {
        LatCtx::Irq => "irq",
        LatCtx::Thread => "thread",
        LatCtx::UserRet => "user-ret",
    }
}

pub(super) fn timerlat(cx: &Cx<'_>, top: usize, raw: bool) -> MeasureReport {
    let mut coll = Collector::new();
    for s in &cx.tl.rtla.samples {
        let start = s.ts.saturating_sub(s.lat_ns);
        if !cx.keep(start, s.ts, s.cpu, s.tid, Sym::EMPTY) {
            continue;
        }
        let r = Raw {
            ts: start,
            end: s.ts,
            value: s.lat_ns,
            cpu: s.cpu,
            tid: s.tid,
            comm: Sym::EMPTY,
            idx: s.seq as u32,
            src: Src::None,
            unc: Unc::default(),
        };
        coll.add(cx, format!("CPU{}", s.cpu), metric(s.ctx), r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Timerlat,
        "timerlat tracer samples per CPU: the timer's expiry to its IRQ handler (irq), to the timerlat thread running (thread), to its return to user space (user-ret)",
        "ns",
        coll,
        top,
        raw,
        &|cx, r| {
            let d = format!(
                "activation #{} on CPU{}: expired at {}, {} after it",
                r.idx,
                r.cpu,
                crate::units::secs(r.ts),
                crate::units::dur(r.value)
            );
            base_sample(cx, r, format!("CPU{}", r.cpu), d)
        },
    );
    if cx.tl.rtla.samples.is_empty() {
        rep.missing_events.push(needs(
            Measure::Timerlat,
            "timer latency per CPU",
            &["the timerlat tracer (echo timerlat > current_tracer; rtla timerlat -t; whylate record --timerlat)"],
        ));
    }
    rep
}

/// The `timerlat` measure.
pub(super) struct Timerlat;

impl Measurer for Timerlat {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        timerlat(i.cx, i.o.top, i.o.raw_samples)
    }
}

#[cfg(test)]
mod tests {
    use crate::measure::{compute, Group, Measure, Options};
    use crate::testkit::pass;
    use crate::testkit_rtla::{planted, timerlat_trace};

    fn group<'a>(g: &'a [Group], key: &str, metric: &str) -> &'a Group {
        (g.iter().find(|g| g.key == key && g.metric == metric)).unwrap()
    }

    /// 4 CPUs x 250 activations: every sample counted per CPU and context, the planted
    /// ones the maxima.
    #[test]
    fn samples_per_cpu_and_context() {
        let p = pass(&timerlat_trace(4, 250, &planted(), false));
        assert_eq!(p.tl.rtla.samples.len(), 2000);
        let o = Options {
            measures: vec![Measure::Timerlat],
            ..Default::default()
        };
        let r = compute(&p.tl, &p.strings, &o, &[], None);
        let g = &r[0].groups;
        assert_eq!(g.len(), 8);
        assert!(g.iter().all(|g| g.count == 250));
        let irq2 = group(g, "CPU2", "irq");
        assert_eq!((irq2.min_ns, irq2.p50_ns, irq2.max_ns), (800, 900, 1000));
        assert_eq!(group(g, "CPU0", "thread").max_ns, 66_000);
        assert_eq!(group(g, "CPU1", "thread").max_ns, 65_000);
        assert_eq!(group(g, "CPU1", "irq").max_ns, 60_000);
        assert_eq!(group(g, "CPU2", "thread").max_ns, 51_000);
        assert_eq!(group(g, "CPU3", "thread").max_ns, 125_000);
        // The worst sample says when its timer expired: activation 241 of CPU3.
        let w = &r[0].worst[0];
        assert_eq!((w.value_ns, w.cpu), (125_000, Some(3)));
        assert_eq!(
            w.ts_ns / 1000,
            (crate::testkit_rtla::BASE_NS + 240 * 1_000_000 + 21_000) / 1000
        );
        assert!(
            w.detail.starts_with("activation #241 on CPU3"),
            "{}",
            w.detail
        );
    }
}
