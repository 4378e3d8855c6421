//! `osnoise`: the osnoise tracer's noise per period and CPU, with its interference counts,
//! and the durations of each noise source (`irq_noise`, `softirq_noise`, `thread_noise`,
//! `nmi_noise`) and of the `sample_threshold` hits.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport};
use super::series::{base_sample, finish_report, needs, Collector, Raw, Src, Tally, Unc};
use crate::event::Sym;
use crate::timeline::rtla::NoiseKind;

/// The interference counters of a period, as `extra` names them.
const COUNTS: [&str; 5] = ["hw", "nmi", "irq", "softirq", "thread"];

/// A sample of `value` ns from `start` to `end` on `cpu`.
fn raw(start: u64, end: u64, value: u64, cpu: u32, tid: i32) -> Raw {
    Raw {
        ts: start,
        end,
        value,
        cpu,
        tid,
        comm: Sym::EMPTY,
        idx: 0,
        src: Src::None,
        unc: Unc::default(),
    }
}

/// The group key of a noise source.
fn source(kind: NoiseKind, name: &str, id: i32) -> String {
    match kind {
        NoiseKind::Irq => format!("irq {id} ({name})"),
        NoiseKind::Softirq => format!("softirq {}", name.trim()),
        NoiseKind::Thread => format!("{}[{id}]", name.trim()),
        NoiseKind::Nmi => "nmi".to_string(),
    }
}

pub(super) fn osnoise(cx: &Cx<'_>, top: usize, raw_samples: bool) -> MeasureReport {
    let r = &cx.tl.rtla;
    let mut coll = Collector::new();
    for p in &r.periods {
        let start = p.ts.saturating_sub(p.runtime_us * 1000);
        if !cx.keep(start, p.ts, p.cpu, -1, Sym::EMPTY) {
            continue;
        }
        let s = coll.get(format!("CPU{}", p.cpu), "period-noise");
        s.push(cx, raw(start, p.ts, p.noise_us * 1000, p.cpu, -1));
        s.count("runtime_us", Tally::Plain, p.runtime_us);
        for (name, n) in COUNTS.iter().zip(p.counts) {
            s.count("interference", Tally::Str(name), n);
        }
        let m = coll.get(format!("CPU{}", p.cpu), "max-single-noise");
        m.push(cx, raw(start, p.ts, p.max_us * 1000, p.cpu, -1));
    }
    for n in &r.noise {
        if !cx.keep(n.start, n.ts, n.cpu, -1, Sym::EMPTY) {
            continue;
        }
        let tid = if n.kind == NoiseKind::Thread {
            n.id
        } else {
            -1
        };
        let key = source(n.kind, &n.name, n.id);
        let s = coll.get(key, n.kind.event());
        s.push(cx, raw(n.start, n.start + n.dur_ns, n.dur_ns, n.cpu, tid));
    }
    for t in &r.thresholds {
        if !cx.keep(t.start, t.ts, t.cpu, -1, Sym::EMPTY) {
            continue;
        }
        let s = coll.get(format!("CPU{}", t.cpu), "sample_threshold");
        s.push(cx, raw(t.start, t.start + t.dur_ns, t.dur_ns, t.cpu, -1));
        s.count("interference", Tally::Plain, t.interference);
    }
    let mut rep = finish_report(
        cx,
        Measure::Osnoise,
        "osnoise: noise per period and CPU (with its interference counts), the largest single noise, each noise source's durations and the sample_threshold hits",
        "ns",
        coll,
        top,
        raw_samples,
        &|cx, r| base_sample(cx, r, format!("CPU{}", r.cpu), format!("on CPU{}", r.cpu)),
    );
    if r.periods.is_empty() && r.noise.is_empty() && r.thresholds.is_empty() {
        rep.missing_events.push(needs(
            Measure::Osnoise,
            "operating-system noise",
            &["the osnoise tracer (echo osnoise > current_tracer), or osnoise:* events"],
        ));
    }
    rep
}

/// The `osnoise` measure.
pub(super) struct Osnoise;

impl Measurer for Osnoise {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        osnoise(i.cx, i.o.top, i.o.raw_samples)
    }
}

#[cfg(test)]
mod tests {
    use crate::measure::{compute, Measure, Options};
    use crate::testkit::pass;
    use crate::testkit_rtla::osnoise_trace;

    /// 2 CPUs x 10 periods: noise per period, its interference counts, the threshold hits.
    #[test]
    fn noise_per_period_and_cpu() {
        let p = pass(&osnoise_trace(2, 10));
        assert_eq!(p.tl.rtla.periods.len(), 20);
        let o = Options {
            measures: vec![Measure::Osnoise],
            ..Default::default()
        };
        let r = compute(&p.tl, &p.strings, &o, &[], None);
        let g = &r[0].groups;
        let find = |k: &str, m: &str| g.iter().find(|g| g.key == k && g.metric == m).unwrap();
        let n0 = find("CPU0", "period-noise");
        assert_eq!((n0.count, n0.min_ns, n0.max_ns), (10, 10_000, 500_000));
        assert_eq!(n0.total_ns, 784_000);
        assert_eq!(n0.extra["interference"]["irq"], 23);
        assert_eq!(n0.extra["interference"]["softirq"], 10);
        assert_eq!(n0.extra["runtime_us"], 10_000_000);
        let t1 = find("CPU1", "sample_threshold");
        assert_eq!((t1.count, t1.max_ns), (1, 20_000));
        assert_eq!(t1.extra["interference"], 2);
    }
}
