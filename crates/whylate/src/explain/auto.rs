//! Automatic mode: the worst outliers across the measures (waits for a CPU, long irq
//! handlers, irqs-off sections, deferred softirqs, slow work, late timers), each one a
//! one-link miss explained by the engine.

use super::advice::{advise, context};
use super::dist::quantile;
use super::driver::rank;
use super::engine::{scale, Engine, LinkKind, RawLink};
use super::report::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window};
use super::timer::{analyze_timers, TimerOptions};
use super::{explain_mode, Mode};
use crate::event::{Interner, Sym, SOFTIRQ_NAMES};
use crate::read::{OpenOptions, ReadError};
use crate::timeline::{span, Cause as RunCause, EdgeKind, SpanKind, Timeline, NONE};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::PathBuf;

/// `whylate explain FILE` without selectors: the worst outliers across the measures —
/// waits for a CPU (real-time tasks first), long irq handlers, irqs-off sections, softirqs
/// deferred to ksoftirqd, late timers, slow work items — each explained by the same engine.
pub fn explain_auto(
    paths: &[PathBuf],
    open: &OpenOptions,
    top: usize,
) -> Result<ExplainReport, ReadError> {
    explain_mode(paths, open, &Mode::Auto { top })
}

pub(super) fn median_of(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

pub(super) fn one_link_miss(
    start: u64,
    dur_ns: u64,
    tid: i32,
    cpu: u32,
    late: u64,
    mut l: Link,
) -> Miss {
    l.offset_ns = 0;
    let blamed = l.held_by.iter().map(|h| h.ns).sum();
    Miss {
        start_ns: start,
        duration_ns: Some(dur_ns),
        tid,
        cpu,
        late_ns: late,
        blamed_ns: blamed,
        chain: vec![l],
    }
}

/// The automatic mode on a built timeline.
pub fn analyze_auto(tl: &Timeline, s: &Interner, top: usize) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let sp = &tl.spans;
    let mut found: Vec<Miss> = Vec::new();
    let link =
        |kind: &str, ts: u64, cpu: u32, what: String, d: u64, usual: u64, held: Vec<Hold>| Link {
            offset_ns: 0,
            ts_ns: ts,
            cpu: Some(cpu),
            kind: kind.into(),
            what,
            duration_ns: d,
            usual_ns: Some(usual),
            excess_ns: d.saturating_sub(usual),
            pending_at_deadline: false,
            held_by: held,
            waiter: None,
            queued_in_irq: None,
        };
    // 1. Waits for a CPU: per thread, far above its own usual wait. Real-time threads
    //    count from 100 us, others from 1 ms.
    let mut per_tid: FxHashMap<i32, Vec<u64>> = FxHashMap::default();
    let waits: Vec<usize> = (0..sp.len())
        .filter(|&i| {
            sp.kind[i] == SpanKind::Runnable
                && sp.tid[i] > 0
                && sp.flags[i] & (span::END_UNKNOWN | span::START_UNKNOWN) == 0
                && RunCause::from_key(sp.key[i]) != RunCause::Preempted
        })
        .collect();
    for &i in &waits {
        per_tid
            .entry(sp.tid[i])
            .or_default()
            .push(sp.end[i] - sp.start[i]);
    }
    let usual: FxHashMap<i32, u64> = per_tid
        .into_iter()
        .map(|(t, v)| (t, median_of(v)))
        .collect();
    for &i in &waits {
        let tid = sp.tid[i];
        let d = sp.end[i] - sp.start[i];
        let rt = tl.prios.get(&tid).is_some_and(|&p| p < 100);
        let u = usual.get(&tid).copied().unwrap_or(0);
        if d < if rt { 100_000 } else { 1_000_000 } || d < 4 * u {
            continue;
        }
        let l = RawLink {
            kind: LinkKind::Run,
            key: (LinkKind::Run, String::new(), 1),
            start: sp.start[i],
            end: sp.end[i],
            cpu: sp.cpu[i],
            tid,
            what: String::new(),
            preempted: false,
            irq: None,
        };
        let ex = d - u;
        let mut held = eng.holds(&l, sp.end[i] - ex, sp.end[i]);
        scale(&mut held, ex);
        let by = if sp.aux[i] != NONE {
            let e = &tl.edges[sp.aux[i] as usize];
            format!(
                " (woken by {})",
                eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts)
            )
        } else {
            String::new()
        };
        let mut lk = link(
            "wakeup",
            sp.start[i],
            sp.cpu[i],
            format!("{}{} waited for CPU{}", eng.task(tid), by, sp.cpu[i]),
            d,
            u,
            held,
        );
        lk.waiter = Some(Culprit {
            comm: Some(s.get(tl.comm(tid)).to_string()),
            pid: Some(tid),
            prio: tl.prios.get(&tid).copied(),
            cpu: Some(sp.cpu[i]),
            ..Default::default()
        });
        // Real-time waits rank first: they are the ones a deadline usually hangs on.
        let rank = if rt { ex.saturating_mul(10) } else { ex };
        found.push(one_link_miss(sp.start[i], d, tid, sp.cpu[i], rank, lk));
    }
    // 2. Long irq handlers and 3. irqs-off sections.
    let mut per_irq: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
    for i in 0..sp.len() {
        if sp.kind[i] == SpanKind::Hardirq && sp.flags[i] & span::END_UNKNOWN == 0 {
            per_irq
                .entry(sp.key[i])
                .or_default()
                .push(sp.end[i] - sp.start[i]);
        }
    }
    let usual_irq: FxHashMap<u32, u64> = per_irq
        .into_iter()
        .map(|(k, v)| (k, median_of(v)))
        .collect();
    for i in 0..sp.len() {
        let d = sp.end[i] - sp.start[i];
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            continue;
        }
        match sp.kind[i] {
            SpanKind::Hardirq if sp.key[i] != u32::MAX && d >= 100_000 => {
                let irq = sp.key[i];
                let u = usual_irq.get(&irq).copied().unwrap_or(0);
                if d < 3 * u {
                    continue;
                }
                let name = tl.irq_names.get(&irq).map(|n| s.get(*n).to_string());
                let held = vec![Hold {
                    category: "hardirq".into(),
                    culprit: Culprit {
                        irq: Some(irq),
                        irq_name: name.clone(),
                        cpu: Some(sp.cpu[i]),
                        ..Default::default()
                    },
                    ns: d - u,
                }];
                let what = format!(
                    "irq {irq}{} handler ran on CPU{}, interrupting {}",
                    name.map(|n| format!(" ({n})")).unwrap_or_default(),
                    sp.cpu[i],
                    eng.task(sp.tid[i])
                );
                let lk = link("irq", sp.start[i], sp.cpu[i], what, d, u, held);
                found.push(one_link_miss(
                    sp.start[i],
                    d,
                    sp.tid[i],
                    sp.cpu[i],
                    d - u,
                    lk,
                ));
            }
            SpanKind::IrqsOff | SpanKind::PreemptOff if d >= 100_000 => {
                let caller = s
                    .get(Sym(sp.key[i]))
                    .split('+')
                    .next()
                    .unwrap_or("")
                    .to_string();
                let cat = if sp.kind[i] == SpanKind::IrqsOff {
                    "irqs-off"
                } else {
                    "preempt-off"
                };
                let held = vec![Hold {
                    category: cat.into(),
                    culprit: Culprit {
                        caller: Some(caller.clone()),
                        cpu: Some(sp.cpu[i]),
                        ..Default::default()
                    },
                    ns: d,
                }];
                let what = format!(
                    "{cat} on CPU{} in {}, opened by {caller}",
                    sp.cpu[i],
                    eng.task(sp.tid[i])
                );
                let lk = link(cat, sp.start[i], sp.cpu[i], what, d, 0, held);
                found.push(one_link_miss(sp.start[i], d, sp.tid[i], sp.cpu[i], d, lk));
            }
            _ => {}
        }
    }
    // 4. Softirqs deferred to ksoftirqd, and 5. slow work items.
    let mut per_fn: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
    for e in &tl.edges {
        if e.kind == EdgeKind::Work {
            per_fn.entry(e.key).or_default().push(e.at - e.ts);
        }
    }
    let usual_fn: FxHashMap<u32, u64> =
        per_fn.into_iter().map(|(k, v)| (k, median_of(v))).collect();
    for e in &tl.edges {
        let d = e.at.saturating_sub(e.ts);
        let (kind, u, min) = match e.kind {
            EdgeKind::Softirq if e.val as u8 & span::KSOFTIRQD != 0 => ("softirq", 0, 100_000),
            EdgeKind::Work => (
                "work",
                usual_fn.get(&e.key).copied().unwrap_or(0),
                1_000_000,
            ),
            _ => continue,
        };
        if d < min || d < 3 * u {
            continue;
        }
        let l = RawLink {
            kind: LinkKind::Work,
            key: (LinkKind::Work, String::new(), 1),
            start: e.ts,
            end: e.at,
            cpu: e.to_cpu,
            tid: e.to_tid,
            what: String::new(),
            preempted: false,
            irq: None,
        };
        let ex = d - u;
        let mut held = eng.holds(&l, e.at - ex, e.at);
        scale(&mut held, ex);
        for h in &mut held {
            if kind == "softirq" && h.category == "runqueue-wait" {
                h.category = "deferred-to-ksoftirqd".into();
            }
        }
        let what = if kind == "softirq" {
            format!(
                "softirq {} raised in {} on CPU{}, deferred to {}",
                SOFTIRQ_NAMES.get(e.key as usize).copied().unwrap_or("?"),
                eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                e.from_cpu,
                eng.task(e.to_tid)
            )
        } else {
            format!(
                "work {} queued by {} on CPU{}, started in {} on CPU{}",
                s.get(Sym(e.key)),
                eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                e.from_cpu,
                eng.task(e.to_tid),
                e.to_cpu
            )
        };
        let mut lk = link(kind, e.ts, e.to_cpu, what, d, u, held);
        lk.waiter = (e.to_tid > 0).then(|| Culprit {
            comm: Some(s.get(tl.comm(e.to_tid)).to_string()),
            pid: Some(e.to_tid),
            prio: tl.prios.get(&e.to_tid).copied(),
            cpu: Some(e.to_cpu),
            ..Default::default()
        });
        found.push(one_link_miss(e.ts, d, e.to_tid, e.to_cpu, ex, lk));
    }
    // 6. Late timers: periods whose expiry-to-running exceeds 500 us.
    let timers = analyze_timers(
        tl,
        s,
        &TimerOptions {
            task: None,
            deadline_ns: Some(500_000),
            top,
        },
    );
    found.extend(timers.misses);
    found.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    found.truncate(200);
    // Rank causes over the outliers.
    let mut causes: FxHashMap<(String, Culprit), (u64, u64)> = FxHashMap::default();
    let mut cpus: FxHashMap<u32, u64> = FxHashMap::default();
    for m in &found {
        let mut seen: FxHashSet<(String, Culprit)> = FxHashSet::default();
        for l in &m.chain {
            for h in &l.held_by {
                let k = (h.category.clone(), h.culprit.clone());
                let e = causes.entry(k.clone()).or_default();
                if seen.insert(k) {
                    e.0 += 1;
                }
                e.1 += h.ns;
                if let Some(c) = h.culprit.cpu {
                    *cpus.entry(c).or_default() += h.ns;
                }
            }
        }
    }
    let causes = rank(causes);
    let mut d: Vec<u64> = found.iter().filter_map(|m| m.duration_ns).collect();
    d.sort_unstable();
    let st = CycleStats {
        count: found.len() as u64,
        replied: found.len() as u64,
        no_reply: 0,
        misses: found.len() as u64,
        min_ns: d.first().copied().unwrap_or(0),
        p50_ns: quantile(&d, 0.5),
        p90_ns: quantile(&d, 0.9),
        p99_ns: quantile(&d, 0.99),
        max_ns: d.last().copied().unwrap_or(0),
        histogram: crate::measure::log_histogram(&d, 1000),
    };
    let context = context(tl, s, &causes, &cpus);
    let advice = advise(tl, s, &causes, &found);
    let mut notes = vec![
        "automatic mode: outliers are waits for a CPU over 1 ms (100 us for real-time tasks) and 4x the task's usual, irq handlers over 100 us and 3x their usual, irqs-off/preempt-off sections over 100 us, softirqs deferred to ksoftirqd over 100 us, work items waiting over 1 ms and 3x their usual, timer periods over 500 us; give --from/--to for your own request/response cycle".to_string(),
    ];
    if found.is_empty() {
        notes.push("no outlier above those thresholds".into());
    }
    let mut windows: Vec<Window> = found
        .iter()
        .map(|m| Window {
            start_ns: m.start_ns,
            end_ns: m.duration_ns.map(|d| m.start_ns + d),
            horizon_ns: m.start_ns + m.duration_ns.unwrap_or(0),
            tid: m.tid,
            cpu: m.cpu,
            miss: true,
        })
        .collect();
    windows.sort_by_key(|w| w.start_ns);
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: "automatic".into(),
        to: Vec::new(),
        deadline_ns: None,
        deadline_source: "automatic mode: per-measure thresholds (see notes)".into(),
        cycles: st,
        causes,
        misses: found,
        context,
        advice,
        notes,
        machine: None,
        cpus: Vec::new(),
        windows,
        top,
        noun: "outliers",
    }
}
