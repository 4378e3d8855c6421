//! `--softirq VEC`: raise-to-entry services of one softirq vector (or tasklets) over
//! the deadline, and who held the CPU meanwhile.

use super::advice::{advise, context};
use super::dist::quantile;
use super::driver::rank;
use super::engine::{scale, Engine, LinkKind, RawLink};
use super::report::{Culprit, CycleStats, ExplainReport, Link, Miss, Window};
use super::{explain_mode, Mode};
use crate::event::{Interner, SOFTIRQ_NAMES};
use crate::read::{OpenOptions, ReadError};
use crate::stats::secs;
use crate::timeline::{span, EdgeKind, Timeline};
use rustc_hash::FxHashMap;
use std::path::PathBuf;

/// `--softirq VEC`: raise → service outliers of one softirq vector (and tasklets, for
/// TASKLET), each explained: where it was served, whether it was deferred to ksoftirqd,
/// and who held the CPU meanwhile (seed 002).
pub fn explain_softirq(
    paths: &[PathBuf],
    open: &OpenOptions,
    vector: &str,
    deadline_ns: Option<u64>,
    top: usize,
) -> Result<ExplainReport, ReadError> {
    explain_mode(
        paths,
        open,
        &Mode::Softirq {
            vector: vector.to_string(),
            deadline_ns,
            top,
        },
    )
}

/// The `--softirq` analysis on a built timeline. `vector`: a name (`NET_RX`) or number.
pub fn analyze_softirq(
    tl: &Timeline,
    s: &Interner,
    vector: &str,
    deadline_ns: Option<u64>,
    top: usize,
) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let sp = &tl.spans;
    let want: Option<u32> = SOFTIRQ_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(vector))
        .map(|i| i as u32)
        .or_else(|| vector.parse().ok());
    // Tasklets ride the TASKLET vector: their schedule → run timing is a sample only
    // when the trace has no softirq_raise/entry for the vector itself (function tracer
    // dumps such as seed 002's).
    let tasklet = want == Some(6)
        && !tl
            .edges
            .iter()
            .any(|e| e.kind == EdgeKind::Softirq && e.key == 6);
    let mut samples: Vec<usize> = tl
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            (e.kind == EdgeKind::Softirq && Some(e.key) == want)
                || (tasklet && e.kind == EdgeKind::Tasklet)
        })
        .map(|(i, _)| i)
        .collect();
    samples.sort_by_key(|&i| tl.edges[i].ts);
    let mut lat: Vec<u64> = samples
        .iter()
        .map(|&i| tl.edges[i].at - tl.edges[i].ts)
        .collect();
    lat.sort_unstable();
    let (deadline, source) = match deadline_ns {
        Some(d) => (d, "given".to_string()),
        None if lat.len() >= 100 => (
            quantile(&lat, 0.99),
            "none given: the services above p99 are explained".to_string(),
        ),
        None => (
            100_000,
            "none given and too few samples for a p99: 100 us assumed".to_string(),
        ),
    };
    // Usual = the median of the services within the deadline (0 when all were late).
    let good: Vec<u64> = lat.iter().copied().filter(|&d| d <= deadline).collect();
    let usual = good
        .get(good.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    let mut misses = Vec::new();
    let mut causes: FxHashMap<(String, Culprit), (u64, u64)> = FxHashMap::default();
    let mut cpus: FxHashMap<u32, u64> = FxHashMap::default();
    for &ei in &samples {
        let e = &tl.edges[ei];
        let d = e.at - e.ts;
        if d <= deadline {
            continue;
        }
        // Deferred: a ksoftirqd of this CPU was waiting for it meanwhile.
        // Waits sorted by start: the latest ones that began before the entry, backwards
        // (a ksoftirqd wait covering the raise began shortly before or after it).
        let upto = eng
            .runnable
            .partition_point(|&i| sp.start[i as usize] < e.at);
        let ksoftirqd = eng.runnable[..upto]
            .iter()
            .rev()
            .take(4096)
            .map(|&i| i as usize)
            .find(|&i| {
                sp.cpu[i] == e.to_cpu
                    && sp.end[i] > e.ts
                    && s.get(tl.comm(sp.tid[i])).starts_with("ksoftirqd")
            });
        let waiter = ksoftirqd.map_or(-1, |i| sp.tid[i]);
        let l = RawLink {
            kind: LinkKind::Work,
            key: (LinkKind::Work, String::new(), 1),
            start: e.ts,
            end: e.at,
            cpu: e.to_cpu,
            tid: waiter,
            what: String::new(),
            preempted: false,
            irq: None,
        };
        let ex = d.saturating_sub(usual);
        let mut held = eng.holds(&l, e.at - ex, e.at);
        scale(&mut held, ex);
        for h in &mut held {
            if h.category == "runqueue-wait" || h.category == "preempted-by" {
                h.category = if ksoftirqd.is_some() {
                    "deferred-to-ksoftirqd"
                } else {
                    "softirq-pending"
                }
                .into();
            }
        }
        let mut per: FxHashMap<(String, Culprit), u64> = FxHashMap::default();
        for h in &held {
            *per.entry((h.category.clone(), h.culprit.clone()))
                .or_default() += h.ns;
            *cpus.entry(e.to_cpu).or_default() += h.ns;
        }
        let name = if e.kind == EdgeKind::Tasklet {
            "tasklet (scheduled -> run)".to_string()
        } else {
            format!(
                "softirq {}",
                SOFTIRQ_NAMES.get(e.key as usize).copied().unwrap_or("?")
            )
        };
        let served = if e.kind == EdgeKind::Softirq {
            format!(", served in {}", {
                let f = e.val as u8;
                if f & span::KSOFTIRQD != 0 {
                    "ksoftirqd".to_string()
                } else if f & span::IN_TASK != 0 {
                    format!("task context ({})", eng.task(e.to_tid))
                } else {
                    format!("irq exit ({})", eng.task(e.to_tid))
                }
            })
        } else {
            String::new()
        };
        let deferred = ksoftirqd
            .map(|i| {
                format!(
                    "; deferred to {} (runnable from {})",
                    eng.task(sp.tid[i]),
                    secs(sp.start[i])
                )
            })
            .unwrap_or_default();
        let what = format!(
            "{name} raised in {} on CPU{}{served}{deferred}",
            eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
            e.from_cpu
        );
        let blamed = held.iter().map(|h| h.ns).sum();
        for (k, ns) in per {
            let c = causes.entry(k).or_default();
            c.0 += 1;
            c.1 += ns;
        }
        misses.push(Miss {
            start_ns: e.ts,
            duration_ns: Some(d),
            tid: e.to_tid,
            cpu: e.to_cpu,
            late_ns: d - deadline,
            blamed_ns: blamed,
            chain: vec![Link {
                offset_ns: 0,
                ts_ns: e.ts,
                cpu: Some(e.to_cpu),
                kind: "softirq".into(),
                what,
                duration_ns: d,
                usual_ns: Some(usual),
                excess_ns: ex,
                pending_at_deadline: false,
                held_by: held,
                waiter: ksoftirqd.map(|i| Culprit {
                    comm: Some(s.get(tl.comm(sp.tid[i])).to_string()),
                    pid: Some(sp.tid[i]),
                    prio: tl.prios.get(&sp.tid[i]).copied(),
                    cpu: Some(e.to_cpu),
                    ..Default::default()
                }),
                queued_in_irq: None,
            }],
        });
    }
    misses.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let causes = rank(causes);
    let mut notes = Vec::new();
    if want.is_none() {
        notes.push(format!(
            "{vector:?} is not a softirq vector (one of {}, or 0-9)",
            SOFTIRQ_NAMES.join(" ")
        ));
    } else if samples.is_empty() {
        notes.push("no raise of that vector was followed by its entry in this trace: record irq:softirq_raise and irq:softirq_entry/exit".into());
    }
    let st = CycleStats {
        count: samples.len() as u64,
        replied: samples.len() as u64,
        no_reply: 0,
        misses: misses.len() as u64,
        min_ns: lat.first().copied().unwrap_or(0),
        p50_ns: quantile(&lat, 0.5),
        p90_ns: quantile(&lat, 0.9),
        p99_ns: quantile(&lat, 0.99),
        max_ns: lat.last().copied().unwrap_or(0),
        histogram: crate::measure::log_histogram(&lat, 1000),
    };
    let context = context(tl, s, &causes, &cpus);
    let advice = advise(tl, s, &causes, &misses);
    let windows = samples
        .iter()
        .map(|&i| {
            let e = &tl.edges[i];
            Window {
                start_ns: e.ts,
                end_ns: Some(e.at),
                horizon_ns: e.at,
                tid: -1,
                cpu: e.to_cpu,
                miss: e.at - e.ts > deadline,
            }
        })
        .collect();
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: format!("softirq_raise {vector}"),
        to: vec!["softirq_entry (or tasklet run)".into()],
        deadline_ns: Some(deadline),
        deadline_source: source,
        cycles: st,
        causes,
        misses,
        context,
        advice,
        notes,
        machine: None,
        cpus: Vec::new(),
        windows,
        top,
        noun: "softirq services",
    }
}
