//! `whylate latency`: read the trace once, build the timeline, compute the measures.

use crate::event::Interner;
use crate::measure::{self, Measure, MeasureReport, Options, Throughput};
use crate::pipeline::{self, Pass};
use crate::read::inputs::{InputInfo, Unparsed};
use crate::read::{OpenOptions, ReadError};
use crate::timeline::{Anomalies, LostWindow, Spans};
use crate::units::{dur, secs};
use serde::Serialize;
use std::fmt::Write as _;
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
    /// Spans the timeline built.
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
    Ok(report(&pass, opts, tput.as_ref()))
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
pub fn report(pass: &Pass, opts: &Options, tput: Option<&Throughput>) -> LatencyReport {
    let (tl, strings) = (&pass.tl, &pass.strings);
    let measures = measure::compute(tl, strings, opts, &pass.tracers, tput);
    let mut notes = pass.inputs.notes.clone();
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
        inputs: pass.inputs.inputs.clone(),
        events: pass.events,
        first_ns: tl.first_ts,
        last_ns: tl.first_ts.map(|_| tl.last_ts),
        spans: tl.spans.len() as u64,
        edges: tl.edges.len() as u64,
        measures,
        lost: tl.lost.clone(),
        anomalies: tl.anomalies.clone(),
        unparsed: pass.inputs.unparsed,
        unparsed_samples: pass.inputs.samples.clone(),
        notes,
    }
}

impl LatencyReport {
    /// Memory the timeline holds, bytes (spans and edges).
    pub fn timeline_bytes(&self) -> u64 {
        self.spans * Spans::BYTES_PER_SPAN as u64
            + self.edges * std::mem::size_of::<crate::timeline::Edge>() as u64
    }

    /// Terminal rendering.
    pub fn render_text(&self, top_groups: usize) -> String {
        let mut o = String::new();
        let span = match (self.first_ns, self.last_ns) {
            (Some(f), Some(l)) => format!("{} .. {} ({})", secs(f), secs(l), dur(l - f)),
            _ => "empty".to_string(),
        };
        let names: Vec<&str> = self.inputs.iter().map(|i| i.path.as_str()).collect();
        let _ = writeln!(
            o,
            "{}: {} events, {span}; {} spans, {} edges",
            names.join(", "),
            self.events,
            self.spans,
            self.edges
        );
        for m in &self.measures {
            o.push('\n');
            render_measure(&mut o, m, top_groups);
        }
        if !self.notes.is_empty() {
            o.push_str("\nnotes:\n");
            for n in &self.notes {
                let _ = writeln!(o, "  - {n}");
            }
        }
        if self.unparsed > 0 {
            let _ = writeln!(
                o,
                "\n{} lines were not understood (first: {})",
                self.unparsed,
                self.unparsed_samples
                    .first()
                    .map(|u| format!("{}:{}: {}", u.file, u.line, u.why))
                    .unwrap_or_default()
            );
        }
        o
    }
}

fn val(unit: &str, v: u64) -> String {
    if unit == "ns" {
        dur(v)
    } else {
        format!("{v}/s")
    }
}

fn render_measure(o: &mut String, m: &MeasureReport, top_groups: usize) {
    let total: u64 = m.groups.iter().map(|g| g.count).sum();
    let _ = writeln!(o, "== {} == {}", m.measure.name(), m.description);
    if m.groups.is_empty() {
        if m.missing_events.is_empty() {
            let _ = writeln!(o, "  no samples");
        }
    } else {
        let _ = writeln!(o, "  {total} samples in {} groups", m.groups.len());
        let _ = writeln!(
            o,
            "  {:<34} {:<18} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "group", "metric", "count", "min", "p50", "p90", "p99", "max", "total"
        );
        for g in m.groups.iter().take(top_groups) {
            let _ = writeln!(
                o,
                "  {:<34} {:<18} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
                clip(&g.key, 34),
                clip(&g.metric, 18),
                g.count,
                val(&m.unit, g.min_ns),
                val(&m.unit, g.p50_ns),
                val(&m.unit, g.p90_ns),
                val(&m.unit, g.p99_ns),
                val(&m.unit, g.max_ns),
                val(&m.unit, g.total_ns),
            );
        }
        if m.groups.len() > top_groups {
            let _ = writeln!(
                o,
                "  ... {} more groups (--top, --json)",
                m.groups.len() - top_groups
            );
        }
        if let Some(g) = m.groups.first() {
            let _ = writeln!(o, "  histogram of {} {}:", g.key, g.metric);
            render_hist(o, g, &m.unit);
        }
        if !m.worst.is_empty() {
            let _ = writeln!(o, "  worst:");
            for w in &m.worst {
                let cpu = w.cpu.map_or("cpu?".to_string(), |c| format!("cpu{c}"));
                let _ = writeln!(
                    o,
                    "    {} {:>5} {:>10}  {}{}",
                    secs(w.ts_ns),
                    cpu,
                    val(&m.unit, w.value_ns),
                    w.group,
                    if w.uncertain { " (uncertain)" } else { "" }
                );
                if !w.detail.is_empty() {
                    let _ = writeln!(o, "        {}", w.detail);
                }
                if !w.cpu_held_by.is_empty() {
                    let held: Vec<String> = w
                        .cpu_held_by
                        .iter()
                        .map(|h| format!("{} {}", h.name, dur(h.ns)))
                        .collect();
                    let _ = writeln!(o, "        CPU held by: {}", held.join(", "));
                }
            }
        }
    }
    for mi in &m.missing_events {
        let _ = writeln!(
            o,
            "  cannot compute {}: record {}",
            mi.part,
            mi.needs.join(", ")
        );
    }
    for n in &m.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}

fn render_hist(o: &mut String, g: &measure::Group, unit: &str) {
    let max = g
        .histogram
        .iter()
        .map(|b| b.count)
        .max()
        .unwrap_or(0)
        .max(1);
    for b in &g.histogram {
        let bar = ((b.count as f64 / max as f64) * 40.0).ceil() as usize;
        let _ = writeln!(
            o,
            "    [{:>9}, {:>9}) {:>8} |{}",
            val(unit, b.lo),
            if b.hi == u64::MAX {
                "inf".to_string()
            } else {
                val(unit, b.hi)
            },
            b.count,
            "#".repeat(bar)
        );
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
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
