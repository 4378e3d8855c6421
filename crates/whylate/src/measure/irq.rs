//! `irq`: hard irq handler durations, per irq, with what they delayed.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options, Sample};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Raw};
use crate::timeline::{span, KindClass, SpanKind, Timeline};
use crate::units::dur;
use std::fmt::Write as _;

/// The handler runs of known irqs, by span index: the samples of this measure and of
/// automatic mode's long handlers. Runs whose exit the trace lacks are counted as open.
pub fn handlers(tl: &Timeline) -> (Vec<usize>, u64) {
    let sp = &tl.spans;
    let mut open = 0;
    let mut out = Vec::new();
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Hardirq || sp.key[i] == u32::MAX {
            continue;
        }
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            open += 1;
            continue;
        }
        out.push(i);
    }
    (out, open)
}

pub(super) fn irq(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    let (runs, open) = handlers(tl);
    if cx.settle.is_last() {
        cx.open.set(cx.open.get() + open);
    }
    for i in runs {
        let r = span_raw(tl, i);
        if !cx.keep_span(r.idx as usize, r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        coll.at((sp.key[i] as u64, 0), "handler", || cx.irq(sp.key[i]))
            .push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Irq,
        "hard irq handler duration (irq_handler_entry to exit), per irq; the worst with what they delayed on their CPU",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &irq_detail,
    );
    if tl.saw(KindClass::IrqHandler) == 0 {
        rep.missing_events.push(needs(
            Measure::Irq,
            "irq handler durations",
            &["irq:irq_handler_entry", "irq:irq_handler_exit"],
        ));
    }
    rep
}

pub(super) fn irq_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    let sp = &tl.spans;
    let i = r.idx as usize;
    let irq = sp.key[i];
    let mut d = format!("on CPU{}, interrupting {}", r.cpu, cx.task(r.tid, r.comm));
    // Interrupts that entered right after it were most likely pending behind it.
    let mut after = Vec::new();
    if let Some(list) = tl.irqs_by_cpu.get(r.cpu as usize) {
        let pos = list.partition_point(|&j| sp.end[j as usize] <= r.end);
        for &j in &list[pos..] {
            let j = j as usize;
            if sp.start[j] > r.end + 100_000 {
                break;
            }
            if sp.start[j] >= r.end && sp.kind[j] == SpanKind::Hardirq && sp.key[j] != irq {
                after.push(format!(
                    "{} +{}",
                    cx.irq(sp.key[j]),
                    dur(sp.start[j] - r.end)
                ));
            }
        }
    }
    if !after.is_empty() {
        let _ = write!(d, "; then {}", after.join(", "));
    }
    // Tasks that were runnable on this CPU while the handler ran waited for it.
    let idx = cx.runnable_index();
    let mut waited = Vec::new();
    if let Some(l) = idx.get(r.cpu as usize) {
        let stop = l.partition_point(|&j| sp.start[j as usize] < r.end);
        for &j in l[..stop].iter().rev().take(10_000) {
            let j = j as usize;
            let ov = sp.end[j].min(r.end).saturating_sub(sp.start[j].max(r.ts));
            if ov > 0 {
                waited.push(format!("{} {}", cx.task(sp.tid[j], sp.comm[j]), dur(ov)));
            }
        }
    }
    if !waited.is_empty() {
        waited.truncate(5);
        let _ = write!(d, "; tasks kept waiting: {}", waited.join(", "));
    }
    base_sample(cx, r, cx.irq(irq), d)
}

/// The `irq` measure.
pub(super) struct Irq;

impl Measurer for Irq {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        irq(i.cx, i.o)
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::{line, pass};

    /// Two whole runs of irq 11 (40 and 150 us) are samples; one whose exit the trace
    /// lacks is open, not a sample.
    #[test]
    fn handlers_are_the_whole_runs_and_an_unfinished_one_is_open() {
        let mut t = String::new();
        for (at, len) in [(1_000_000u64, 40u64), (1_001_000, 150)] {
            t += &line(at, 0, "a-5", "d.h1.", "irq_handler_entry: irq=11 name=eth0");
            t += &line(
                at + len,
                0,
                "a-5",
                "d.h1.",
                "irq_handler_exit: irq=11 ret=handled",
            );
        }
        t += &line(
            1_002_000,
            0,
            "a-5",
            "d.h1.",
            "irq_handler_entry: irq=11 name=eth0",
        );
        let p = pass(&t);
        let (runs, open) = super::handlers(&p.tl);
        let sp = &p.tl.spans;
        let d: Vec<u64> = runs.iter().map(|&i| sp.end[i] - sp.start[i]).collect();
        assert_eq!((d, open), (vec![40_000, 150_000], 1));
    }
}
