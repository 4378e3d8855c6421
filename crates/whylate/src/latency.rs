//! `whylate latency`: read the trace once, build the timeline, compute the measures.

use crate::event::Interner;
use crate::measure::{self, Measure, MeasureReport, Options, Throughput};
use crate::pipeline::{self, Pass};
use crate::read::inputs::{InputInfo, Unparsed};
use crate::read::{OpenOptions, ReadError};
use crate::timeline::{Anomalies, LostWindow};
use serde::Serialize;
use std::path::PathBuf;

/// The result of `whylate latency`.
#[derive(Debug, Serialize)]
pub struct LatencyReport {
    /// Per input.
    pub inputs: Vec<InputInfo>,
    /// Events read.
    pub events: u64,
    /// First timestamp.
    pub first_ns: Option<u64>,
    /// Last timestamp.
    pub last_ns: Option<u64>,
    /// Spans the timeline built, system calls included.
    pub spans: u64,
    /// Causal edges the timeline built.
    pub edges: u64,
    /// The measures.
    pub measures: Vec<MeasureReport>,
    /// Lost-event windows.
    pub lost: Vec<LostWindow>,
    /// What the timeline had to infer.
    pub anomalies: Anomalies,
    /// Lines not understood, all inputs.
    pub unparsed: u64,
    /// The first of them.
    pub unparsed_samples: Vec<Unparsed>,
    /// The unread part of the input as a whole (null when everything was read).
    pub unread: Option<crate::read::inputs::Unread>,
    /// Where the analysis is blind or approximate.
    pub notes: Vec<String>,
}

/// Reads `paths`, builds the timeline and computes the measures.
pub fn latency(
    paths: &[PathBuf],
    open: &OpenOptions,
    opts: &Options,
    tput: Option<measure::ThroughputOpts>,
) -> Result<LatencyReport, ReadError> {
    let (pass, tput) = build(paths, open, tput)?;
    crate::read::inputs::Unread::nothing_read(&pass.inputs, pass.events)?;
    Ok(report(pass, opts, tput.as_ref()))
}

/// Reads the inputs into a timeline, counting throughput on the way.
pub fn build(
    paths: &[PathBuf],
    open: &OpenOptions,
    tput: Option<measure::ThroughputOpts>,
) -> Result<(Pass, Option<Throughput>), ReadError> {
    let mut t = tput.map(Throughput::new);
    let p = pipeline::read(paths, open, &mut |e: &crate::event::Event, s: &Interner| {
        if let Some(t) = t.as_mut() {
            t.push(e, s);
        }
    })?;
    Ok((p, t))
}

/// Computes the measures on a built timeline.
pub fn report(pass: Pass, opts: &Options, tput: Option<&Throughput>) -> LatencyReport {
    let Pass {
        tl,
        strings,
        inputs,
        events,
        tracers,
        ..
    } = pass;
    let tl = &tl;
    let measures = measure::compute(tl, &strings, opts, &tracers, tput);
    let unread = crate::read::inputs::Unread::of(&inputs, events);
    let mut notes = inputs.notes;
    let a = &tl.anomalies;
    if a.implicit_switches > 0 {
        notes.push(format!(
            "{} switch-ins were not traced (a task showed up running with no sched_switch to it); they were inferred from the task's first event",
            a.implicit_switches
        ));
    }
    if a.switch_in_without_wakeup > 0 {
        notes.push(format!(
            "{} switch-ins of sleeping tasks had no wakeup before them (sched_waking/sched_wakeup not traced or lost): their wait is unknown",
            a.switch_in_without_wakeup
        ));
    }
    if a.rewoken_while_runnable > 0 {
        notes.push(format!(
            "{} wakeups found their task already runnable: it ran and slept where the trace cannot see (an untraced CPU or lost events); those earlier waits are left out",
            a.rewoken_while_runnable
        ));
    }
    if !tl.lost.is_empty() {
        let n: u64 = tl.lost.iter().filter_map(|w| w.count).sum();
        notes.push(format!(
            "events were lost in {} window(s) ({n} counted); spans crossing them are marked uncertain",
            tl.lost.len()
        ));
    }
    LatencyReport {
        inputs: inputs.inputs,
        events,
        first_ns: tl.first_ts,
        last_ns: tl.first_ts.map(|_| tl.last_ts),
        spans: (tl.spans.len() + tl.syscalls.len()) as u64,
        edges: tl.edges.len() as u64,
        measures,
        lost: tl.lost.clone(),
        anomalies: tl.anomalies.clone(),
        unparsed: inputs.unparsed,
        unparsed_samples: inputs.samples,
        unread,
        notes,
    }
}

/// Parses a `--measure` list (`wakeup,irq`).
pub fn parse_measures(s: &str) -> Result<Vec<Measure>, String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| {
            Measure::parse(x.trim()).ok_or_else(|| {
                let all: Vec<&str> = Measure::ALL.iter().map(|m| m.name()).collect();
                format!("unknown measure {x:?}; known: {}", all.join(", "))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::measure::{Measure, Options};
    use crate::read::OpenOptions;
    use crate::testkit;

    #[test]
    fn runqueue_waits_per_task() {
        // The worker waits 8 us in five cycles and 3 ms behind hog in one.
        let f = testkit::file(&testkit::three_cpu_chain(6, &[4], 3_000));
        let o = Options {
            measures: vec![Measure::Runqueue],
            ..Default::default()
        };
        let r = super::latency(&[f.to_path_buf()], &OpenOptions::default(), &o, None).unwrap();
        let m = &r.measures[0];
        let g = (m.groups.iter())
            .find(|g| g.key.starts_with("kworker/1:1[40]"))
            .unwrap_or_else(|| panic!("{:?}", m.groups.iter().map(|g| &g.key).collect::<Vec<_>>()));
        assert_eq!(
            (g.count, g.min_ns, g.p50_ns, g.max_ns),
            (6, 8_000, 8_000, 3_000_000)
        );
        assert_eq!(g.worst[0].value_ns, 3_000_000);
        assert_eq!(g.worst[0].cpu, Some(1));
    }
}
