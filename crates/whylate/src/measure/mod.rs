//! Latency measures built on the [`Timeline`]: wakeup, runqueue, irq, softirq, work,
//! syscall, timer, throughput and irqs-off. Each gives groups (per task, irq, vector,
//! function...) with count, quantiles, a log-bucket histogram and the worst samples, each
//! with its absolute time, CPU and task so the user can find it in the trace.

mod cx;
mod function;
mod irq;
mod irqsoff;
mod measurer;
mod rate;
mod report;
mod runqueue;
mod series;
mod softirq;
mod syscall;
mod throughput;
mod timer;
mod wakeup;
mod work;

pub use rate::Throughput;
pub use report::*;

use crate::event::Interner;
use crate::timeline::Timeline;
use cx::Cx;
use measurer::{Input, Measurer};

/// The implementation of `m`.
fn measurer(m: Measure) -> &'static dyn Measurer {
    match m {
        Measure::Wakeup => &wakeup::Wakeup,
        Measure::Runqueue => &runqueue::Runqueue,
        Measure::Irq => &irq::Irq,
        Measure::Softirq => &softirq::Softirq,
        Measure::Work => &work::Work,
        Measure::Syscall => &syscall::Syscall,
        Measure::Timer => &timer::Timer,
        Measure::Throughput => &throughput::ThroughputMeasure,
        Measure::Irqsoff => &irqsoff::Irqsoff,
        Measure::Function => &function::Function,
    }
}

/// Computes the measures asked for (or every measure the trace can feed) on a timeline.
pub fn compute(
    tl: &Timeline,
    strings: &Interner,
    o: &Options,
    tracers: &[TracerSample],
    tput: Option<&Throughput>,
) -> Vec<MeasureReport> {
    let cx = Cx {
        tl,
        s: strings,
        f: &o.filter,
        first: tl.first_ts.unwrap_or(0),
        runnable_by_cpu: std::cell::OnceCell::new(),
        offs_by_cpu: std::cell::OnceCell::new(),
        open: std::cell::Cell::new(0),
    };
    let list: Vec<Measure> = if o.measures.is_empty() {
        Measure::ALL
            .into_iter()
            .filter(|m| *m != Measure::Throughput || tput.is_some())
            // Function durations only when the trace has function_graph events.
            .filter(|m| *m != Measure::Function || tl.saw(crate::timeline::KindClass::Function) > 0)
            .collect()
    } else {
        o.measures.clone()
    };
    let mut out = Vec::new();
    for m in list {
        cx.open.set(0);
        let input = Input {
            cx: &cx,
            o,
            tracers,
            tput,
        };
        let mut r = measurer(m).measure(&input);
        r.open += cx.open.get();
        if r.open > 0 {
            r.notes.push(format!(
                "{} samples open at the trace's start or end are left out",
                r.open
            ));
        }
        let unc: u64 = r.groups.iter().map(|g| g.uncertain).sum();
        if unc > 0 {
            r.notes.push(format!(
                "{unc} samples cross lost events or have an inferred endpoint (marked uncertain)"
            ));
        }
        out.push(r);
    }
    out
}
