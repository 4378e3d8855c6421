//! `whylate latency`: read the trace once, build the timeline, compute the measures;
//! a trace longer than a window is measured in windows (`latency::windowed`, [`latency_in`]).

mod windowed;

pub use windowed::{latency_in, WINDOWING};

use crate::event::Interner;
use crate::measure::{self, Measure, MeasureReport, Options, Throughput};
use crate::measure::{Bound, Filter};
use crate::pipeline::{self, Pass};
use crate::read::inputs::{InputInfo, Unparsed};
use crate::read::{OpenOptions, Opened, ReadError};
use crate::timeline::{Anomalies, LostWindow, Timeline};
use crate::units::secs;
use serde::Serialize;

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
    /// Where the trace is blind, in words, for under the first line: events left out
    /// for coming late, CPUs whose switches out of idle are not traced (and how late that
    /// makes a wakeup there at worst).
    pub blind: Vec<String>,
    /// Where the analysis is blind or approximate.
    pub notes: Vec<String>,
    /// A `--cpu` or `--window` that names nothing in the trace (a CPU with no events, a
    /// window outside it), said as the command line's error (exit 2), not as "no samples".
    #[serde(skip)]
    pub void_filter: Option<String>,
}

/// Reads the inputs, builds the timeline and computes the measures.
pub fn latency(
    inputs: Opened,
    open: &OpenOptions,
    opts: &Options,
    tput: Option<measure::ThroughputOpts>,
) -> Result<LatencyReport, ReadError> {
    let (pass, tput) = build(inputs, open, tput)?;
    crate::read::inputs::Unread::nothing_read(&pass.inputs, pass.events)?;
    Ok(report(pass, opts, tput.as_ref()))
}

/// Reads the inputs into a timeline, counting throughput on the way.
pub fn build(
    inputs: Opened,
    open: &OpenOptions,
    tput: Option<measure::ThroughputOpts>,
) -> Result<(Pass, Option<Throughput>), ReadError> {
    let mut t = tput.map(Throughput::new);
    let p = pipeline::read(
        inputs,
        open,
        &mut |e: &crate::event::Event, s: &Interner| {
            if let Some(t) = t.as_mut() {
                t.push(e, s);
            }
        },
    )?;
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
    let measures = measure::compute(&tl, &strings, opts, &tracers, tput);
    let seen = Seen::of(&tl);
    let parts = Parts {
        spans: (tl.spans.len() + tl.syscalls.len()) as u64,
        edges: tl.edges.len() as u64,
        lost: tl.lost.clone(),
        anomalies: tl.anomalies.clone(),
    };
    assemble(inputs, events, seen, parts, measures, &opts.filter)
}

/// What a report says of the trace's extent: its first and last time, the CPUs with
/// events.
#[derive(Clone, Debug, Default)]
pub(crate) struct Seen {
    first: Option<u64>,
    last: u64,
    /// Per CPU, whether it had events.
    cpus: Vec<bool>,
}

impl Seen {
    /// The first event's time (0 before any).
    fn first_ns(&self) -> u64 {
        self.first.unwrap_or(0)
    }

    fn of(tl: &Timeline) -> Seen {
        let mut s = Seen::default();
        s.add(tl);
        s
    }

    /// Adds a later stretch of the same trace.
    fn add(&mut self, tl: &Timeline) {
        self.first = self.first.or(tl.first_ts);
        if tl.first_ts.is_some() {
            self.last = self.last.max(tl.last_ts);
        }
        let n = tl.cpus as usize;
        if self.cpus.len() < n {
            self.cpus.resize(n, false);
        }
        for c in 0..n {
            self.cpus[c] |= tl.cpu_last_ts.get(c).is_some_and(|&t| t > 0);
        }
    }
}

/// The timeline's counts a report gives beside its measures.
pub(crate) struct Parts {
    spans: u64,
    edges: u64,
    lost: Vec<LostWindow>,
    anomalies: Anomalies,
}

/// The report of the measures `measures` of a trace read as `inputs`.
fn assemble(
    inputs: crate::read::inputs::Inputs,
    events: u64,
    seen: Seen,
    parts: Parts,
    measures: Vec<MeasureReport>,
    filter: &Filter,
) -> LatencyReport {
    let unread = crate::read::inputs::Unread::of(&inputs, events);
    let skipped = crate::read::inputs::skipped_line(&inputs, events);
    let mut notes = inputs.notes;
    let kept: u64 = (measures.iter().flat_map(|m| &m.groups))
        .map(|g| g.count)
        .sum();
    let mut void_filter = None;
    if kept == 0 {
        // First: it explains every "no samples" below it.
        let (note, void) = filter_left_nothing(&seen, filter).unzip();
        void_filter = note.clone().filter(|_| void == Some(true));
        notes.splice(0..0, note);
    }
    let a = &parts.anomalies;
    // Those out of an idle task never traced are said once, under the first line.
    let implicit = a.implicit_switches_unexplained();
    if implicit > 0 {
        notes.push(format!(
            "{implicit} switch-ins were not traced (a task showed up running with no sched_switch to it); they were inferred from the task's first event",
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
    if !parts.lost.is_empty() {
        let n: u64 = parts.lost.iter().filter_map(|w| w.count).sum();
        notes.push(format!(
            "events were lost in {} window(s) ({n} counted); spans crossing them are marked uncertain",
            parts.lost.len()
        ));
    }
    let blind = (skipped.into_iter())
        .chain(a.late_note())
        .chain(a.untraced_idle_note())
        .collect();
    LatencyReport {
        inputs: inputs.inputs,
        events,
        first_ns: seen.first,
        last_ns: seen.first.map(|_| seen.last),
        spans: parts.spans,
        edges: parts.edges,
        measures,
        lost: parts.lost,
        anomalies: parts.anomalies,
        unparsed: inputs.unparsed,
        unparsed_samples: inputs.samples,
        unread,
        blind,
        notes,
        void_filter,
    }
}

/// When `--window` or `--cpu` left no sample: what was asked against what the trace
/// has (its span, its CPUs), so "no samples" is not taken for a quiet system; and
/// whether a value names nothing in the trace.
fn filter_left_nothing(seen: &Seen, f: &Filter) -> Option<(String, bool)> {
    let first = seen.first?;
    let last = seen.last;
    let mut asked = Vec::new();
    let mut why = Vec::new();
    if f.window.0.is_some() || f.window.1.is_some() {
        let abs = |b: Option<Bound>, open: u64| match b {
            None => open,
            Some(Bound::Abs(v)) => v,
            Some(Bound::Rel(v)) => first.saturating_add(v),
        };
        let (a, b) = (abs(f.window.0, 0), abs(f.window.1, u64::MAX));
        asked.push(format!(
            "--window {}..{}",
            side(f.window.0),
            side(f.window.1)
        ));
        if a > b {
            why.push(format!(
                "the window ends ({}) before it starts ({})",
                secs(b),
                secs(a)
            ));
        } else if b < first || a > last {
            why.push("the window lies outside the trace".into());
        }
    }
    let cpus: Vec<u32> = (0..seen.cpus.len() as u32)
        .filter(|&c| seen.cpus[c as usize])
        .collect();
    if let Some(c) = f.cpu {
        asked.push(format!("--cpu {c}"));
        if !cpus.contains(&c) {
            why.push(format!("the trace has no events on CPU {c}"));
        }
    }
    if asked.is_empty() {
        return None;
    }
    let void = !why.is_empty();
    let text = format!(
        "{} left no samples{}: the trace spans {} to {} s (+0 to +{} s) on CPUs {}",
        asked.join(" and "),
        if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join("; "))
        },
        secs(first),
        secs(last),
        secs(last - first),
        cpu_ranges(&cpus)
    );
    Some((text, void))
}

/// A window side as given: absolute seconds, `+S` after the first event, or open.
fn side(b: Option<Bound>) -> String {
    match b {
        None => String::new(),
        Some(Bound::Abs(v)) => secs(v),
        Some(Bound::Rel(v)) => format!("+{}", secs(v)),
    }
}

/// `0-3,6`: CPU numbers as runs.
fn cpu_ranges(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    if out.is_empty() {
        "(none)".into()
    } else {
        out.join(",")
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
        let o = Options {
            measures: vec![Measure::Runqueue],
            ..Default::default()
        };
        let r = super::latency(
            crate::testkit::opened(&testkit::three_cpu_chain(6, &[4], 3_000)),
            &OpenOptions::default(),
            &o,
            None,
        )
        .unwrap();
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

    #[test]
    fn a_window_or_cpu_that_leaves_nothing_names_the_traces_span_and_cpus() {
        use crate::measure::{Bound, Filter};
        let run = |filter: Filter| {
            let o = Options {
                measures: vec![Measure::Runqueue],
                filter,
                ..Default::default()
            };
            super::latency(
                crate::testkit::opened(&testkit::three_cpu_chain(6, &[4], 3_000)),
                &OpenOptions::default(),
                &o,
                None,
            )
            .unwrap()
        };
        let outside = run(Filter {
            window: (
                Some(Bound::Abs(100_000_000_000)),
                Some(Bound::Abs(200_000_000_000)),
            ),
            ..Default::default()
        });
        let n = &outside.notes[0];
        assert!(
            n.starts_with("--window 100.000000..200.000000 left no samples (the window lies outside the trace): the trace spans ")
                && n.ends_with("on CPUs 0-2"),
            "{n}"
        );
        let cpu = run(Filter {
            cpu: Some(4096),
            ..Default::default()
        });
        let n = &cpu.notes[0];
        assert!(
            n.starts_with("--cpu 4096 left no samples (the trace has no events on CPU 4096)"),
            "{n}"
        );
        // Values that name nothing in the trace are errors for the command line.
        assert_eq!(cpu.void_filter.as_deref(), Some(n.as_str()));
        assert!(outside.void_filter.is_some());
        // A filter that keeps samples says nothing.
        let kept = run(Filter {
            cpu: Some(1),
            ..Default::default()
        });
        assert!(!kept.notes.iter().any(|n| n.contains("left no samples")));
    }

    /// trace-cmd's reader waits 5 ms behind the workload; the workload waits 50 us. The
    /// recorder's thread is the measurement: ranked after the workload, marked, left out
    /// of the worst samples, and named in a note.
    #[test]
    fn the_recorders_threads_are_ranked_last_and_left_out_of_the_worst() {
        let l = testkit::line;
        let sw = |p: &str, ps: &str, n: &str| {
            format!("sched_switch: prev_comm={p} prev_state={ps} ==> next_comm={n}")
        };
        let (app, tc, idle) = (
            "app prev_pid=7 prev_prio=120",
            "trace-cmd prev_pid=100 prev_prio=120",
            "swapper/0 prev_pid=0 prev_prio=120",
        );
        let (app_n, tc_n, idle_n) = (
            "app next_pid=7 next_prio=120",
            "trace-cmd next_pid=100 next_prio=120",
            "swapper/0 next_pid=0 next_prio=120",
        );
        let wake =
            |c: &str, p: u32| format!("sched_waking: comm={c} pid={p} prio=120 target_cpu=000");
        let mut t = String::new();
        t += &l(999_000, 0, "<idle>-0", "d..2.", &sw(idle, "R", app_n));
        t += &l(1_000_100, 0, "app-7", "d..2.", &wake("trace-cmd", 100));
        t += &l(1_005_100, 0, "app-7", "d..2.", &sw(app, "R", tc_n));
        t += &l(1_005_200, 0, "trace-cmd-100", "d..2.", &sw(tc, "S", app_n));
        t += &l(1_006_000, 0, "app-7", "d..2.", &sw(app, "S", idle_n));
        t += &l(1_007_000, 0, "<idle>-0", "d.h2.", &wake("app", 7));
        t += &l(1_007_050, 0, "<idle>-0", "d..2.", &sw(idle, "R", app_n));
        let o = Options {
            measures: vec![Measure::Wakeup],
            ..Default::default()
        };
        let r = super::latency(
            crate::testkit::opened(&t),
            &OpenOptions::default(),
            &o,
            None,
        )
        .unwrap();
        let m = &r.measures[0];
        let keys: Vec<(&str, u64)> = m
            .groups
            .iter()
            .map(|g| (g.key.as_str(), g.max_ns))
            .collect();
        assert_eq!(keys, [("app[7]", 50_000), ("trace-cmd[100]", 5_000_000)]);
        assert!(m.groups[1].extra.contains_key("recorder"));
        assert!(!m.groups[0].extra.contains_key("recorder"));
        let worst: Vec<u64> = m.worst.iter().map(|w| w.value_ns).collect();
        assert_eq!(worst, [50_000]);
        assert!(
            m.notes.iter().any(|n| n
                .starts_with("the recorder's own threads (trace-cmd[100]) are the measurement")),
            "{:?}",
            m.notes
        );
    }
}

#[cfg(test)]
mod uncertainty_tests {
    use super::*;
    use crate::testkit::{idle_exits_untraced, pass};

    fn wakeups(text: &str) -> LatencyReport {
        let o = Options {
            measures: vec![Measure::Wakeup],
            ..Options::default()
        };
        report(pass(text), &o, None)
    }

    fn group<'a>(r: &'a LatencyReport, key: &str) -> &'a crate::measure::Group {
        (r.measures[0].groups.iter())
            .find(|g| g.key == key)
            .unwrap_or_else(|| panic!("no group {key}: {:?}", r.measures[0].groups))
    }

    #[test]
    fn a_cpu_whose_idle_exits_are_never_traced_is_said_once_with_the_worst_bound() {
        let r = wakeups(&idle_exits_untraced(false));
        assert_eq!(
            r.blind,
            vec!["CPU1's idle exits are not traced (3 inferred): a wakeup there ends at the task's first event, up to 300.0 us late in the worst case"]
        );
        // Not said again at the end: every implicit switch-in was one of those.
        assert!(
            r.notes
                .iter()
                .all(|n| !n.contains("switch-ins were not traced")),
            "{:?}",
            r.notes
        );
        // The terminal text says it once too: whylate-report's text/latency.rs tests.
    }

    #[test]
    fn only_inferred_ends_that_could_move_a_sample_by_over_100_us_and_a_tenth_are_uncertain() {
        let r = wakeups(&idle_exits_untraced(false));
        let g = group(&r, "p[7]");
        // 21 us (20 unseen), 301 us (300 unseen), 624 us (20 unseen after the irq).
        assert_eq!(g.count, 3);
        assert_eq!((g.inferred, g.lost, g.uncertain), (3, 0, 1));
        assert_eq!(g.inferred_bound_ns, Some(300_000));
        let flagged: Vec<(u64, Option<u64>, bool)> = (g.worst.iter())
            .map(|s| (s.value_ns, s.inferred_bound_ns, s.uncertain))
            .collect();
        assert_eq!(
            flagged,
            vec![
                (624_000, Some(20_000), false),
                (301_000, Some(300_000), true),
                (21_000, Some(20_000), false)
            ]
        );
        assert!(
            g.worst[1].detail.ends_with(
                "(switch-in not traced: end inferred from its first event, up to 300.0 us late)"
            ),
            "{}",
            g.worst[1].detail
        );
        assert_eq!(
            r.measures[0].notes,
            vec!["3 samples have an inferred endpoint (the kernel did not trace it), at most 300.0 us off; 1 could be off by over 100 us and a tenth of their value: marked uncertain"]
        );
    }

    #[test]
    fn samples_crossing_lost_events_are_counted_apart_from_inferred_ones() {
        let r = wakeups(&idle_exits_untraced(true));
        let q = group(&r, "q[8]");
        assert_eq!((q.count, q.lost, q.inferred, q.uncertain), (1, 1, 0, 1));
        assert_eq!(q.inferred_bound_ns, None);
        assert!(q.worst[0].lost && q.worst[0].uncertain);
        let p = group(&r, "p[7]");
        assert_eq!((p.lost, p.inferred, p.uncertain), (0, 3, 1));
        assert_eq!(
            r.measures[0].notes,
            vec![
                "1 samples cross lost events (the trace dropped events there): marked uncertain",
                "3 samples have an inferred endpoint (the kernel did not trace it), at most 300.0 us off; 1 could be off by over 100 us and a tenth of their value: marked uncertain"
            ]
        );
        let j = serde_json::to_value(&r).unwrap();
        let w = &j["measures"][0]["groups"];
        let q = (w.as_array().unwrap().iter())
            .find(|g| g["key"] == "q[8]")
            .unwrap();
        assert_eq!(
            (
                q["lost"].as_u64(),
                q["inferred"].as_u64(),
                q["uncertain"].as_u64()
            ),
            (Some(1), Some(0), Some(1))
        );
    }

    #[test]
    fn the_uncertainty_rule_needs_over_100_us_and_over_a_tenth() {
        use crate::measure::uncertain;
        assert!(uncertain(true, None, 1));
        assert!(!uncertain(false, None, 1_000_000));
        assert!(uncertain(false, Some(None), 1_000_000));
        assert!(!uncertain(false, Some(Some(100_000)), 200_000));
        assert!(uncertain(false, Some(Some(100_001)), 200_000));
        assert!(!uncertain(false, Some(Some(150_000)), 1_500_000));
        assert!(uncertain(false, Some(Some(150_000)), 1_499_999));
    }
}
