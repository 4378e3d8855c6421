//! Latency measures built on the [`Timeline`]: wakeup, runqueue, irq, softirq, work,
//! syscall, timer, throughput, irqs-off, function, and the real-time tracers' timerlat
//! and osnoise. Each gives groups (per task, irq, vector,
//! function...) with count, quantiles, a log-bucket histogram and the worst samples, each
//! with its absolute time, CPU and task so the user can find it in the trace.

mod cx;
mod function;
pub mod irq;
mod irqsoff;
mod measurer;
mod merge;
mod osnoise;
mod rate;
mod report;
pub mod runqueue;
mod series;
mod softirq;
mod syscall;
mod throughput;
pub mod timer;
mod timerlat;
mod wakeup;
mod work;

pub use merge::Merged;
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
        Measure::Timerlat => &timerlat::Timerlat,
        Measure::Osnoise => &osnoise::Osnoise,
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
        settle: o.settle,
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
            // The real-time tracers' measures only when their events are in the trace.
            .filter(|m| *m != Measure::Timerlat || !tl.rtla.samples.is_empty())
            .filter(|m| {
                let r = &tl.rtla;
                *m != Measure::Osnoise
                    || !(r.periods.is_empty() && r.noise.is_empty() && r.thresholds.is_empty())
            })
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
        // A window's notes on counts are said once, over the merged windows.
        if !o.settle.is_window() {
            count_notes(&mut r);
        }
        out.push(r);
    }
    out
}

/// Adds the notes on counts over a measure's groups: samples open at the trace's ends,
/// samples uncertain.
pub fn count_notes(r: &mut MeasureReport) {
    if r.open > 0 {
        r.notes.push(format!(
            "{} samples open at the trace's start or end are left out",
            r.open
        ));
    }
    let notes = uncertainty_notes(&r.groups);
    r.notes.extend(notes);
}

/// What makes a measure's samples uncertain, said apart: samples crossing lost events
/// (the trace dropped events there: always uncertain), and samples with an inferred
/// endpoint (one the kernel did not trace), how far off that can be at worst, and how many
/// of them it could move by enough to matter ([`uncertain`]).
fn uncertainty_notes(groups: &[Group]) -> Vec<String> {
    let sum = |f: fn(&Group) -> u64| -> u64 { groups.iter().map(f).sum() };
    let (unc, lost, inferred) = (sum(|g| g.uncertain), sum(|g| g.lost), sum(|g| g.inferred));
    let mut out = Vec::new();
    if lost > 0 {
        out.push(format!(
            "{lost} samples cross lost events (the trace dropped events there): marked uncertain"
        ));
    }
    if inferred > 0 {
        let bound = (groups.iter().filter(|g| g.inferred > 0))
            .map(|g| g.inferred_bound_ns)
            .try_fold(0u64, |m, b| Some(m.max(b?)));
        let off = match bound {
            Some(b) => format!("at most {} off", crate::units::dur(b)),
            None => "some by an unknown amount".to_string(),
        };
        // Uncertain for their inferred endpoint alone (those crossing a loss are above).
        let which = match unc.saturating_sub(lost) {
            0 => "none by over 100 us and a tenth of its value, so none is marked uncertain"
                .to_string(),
            k => format!(
                "{k} could be off by over 100 us and a tenth of their value: marked uncertain"
            ),
        };
        out.push(format!(
            "{inferred} samples have an inferred endpoint (the kernel did not trace it), {off}; {which}"
        ));
    }
    out
}
