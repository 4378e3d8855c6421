//! `--timer`: late hrtimer periods (requested expiry to the woken task running), the
//! timer deadline policy, and why the interrupt or the wakeup came late.

use super::advice::{advise, context};
use super::dist::quantile;
use super::driver::rank;
use super::engine::{scale, Engine, LinkKind, RawLink};
use super::report::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window};
use super::{explain_mode, Mode};
use crate::event::{Interner, Sym};
use crate::read::{OpenOptions, ReadError};
use crate::stats::dur;
use crate::timeline::{span, EdgeKind, OccupantKind, SpanKind, Timeline, NONE};
use rustc_hash::FxHashMap;
use std::path::PathBuf;

/// What `--timer` explains.
#[derive(Clone, Debug, Default)]
pub struct TimerOptions {
    /// Only timers that wake this task (pid, or comm glob).
    pub task: Option<crate::measure::TaskSel>,
    /// Periods later than this (requested expiry → the task runs) are misses; the slowest
    /// 1% when absent.
    pub deadline_ns: Option<u64>,
    /// Misses shown in full.
    pub top: usize,
}

/// `whylate explain --timer`: late hrtimer expiries and the wakeups after them (seed 004).
pub fn explain_timers(
    paths: &[PathBuf],
    open: &OpenOptions,
    o: &TimerOptions,
) -> Result<ExplainReport, ReadError> {
    explain_mode(paths, open, &Mode::Timer(o.clone()))
}

pub(super) struct TimerSample {
    /// Requested expiry, in trace time.
    pub(super) expiry: u64,
    /// Callback entered.
    pub(super) fired: u64,
    /// The interrupt's own lateness (from when it could first fire).
    pub(super) irq_late: u64,
    /// Requested expiry → callback.
    pub(super) late: u64,
    pub(super) cpu: u32,
    pub(super) tid: i32,
    pub(super) function: String,
    /// The woken task's wait: runnable span.
    pub(super) wait: Option<(u64, u64, u32)>,
    pub(super) armed_late: bool,
    /// When the timer was armed, in trace time.
    pub(super) armed: Option<u64>,
}

/// Explains late timers on a built timeline.
pub fn analyze_timers(tl: &Timeline, s: &Interner, o: &TimerOptions) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let clock = &eng.clock;
    let mut notes = Vec::new();
    let sp = &tl.spans;
    let keep = |tid: i32| match &o.task {
        None => true,
        Some(crate::measure::TaskSel::Pid(p)) => tid == *p,
        Some(crate::measure::TaskSel::Comm(g)) => crate::measure::glob(g, s.get(tl.comm(tid))),
    };
    // The runnable spans of the timers' tasks, for periods the task overran.
    let mut runnable: FxHashMap<i32, Vec<u32>> = FxHashMap::default();
    let mut samples: Vec<TimerSample> = Vec::new();
    for (ei, e) in tl.edges.iter().enumerate() {
        if e.kind != EdgeKind::Timer || e.val == u64::MAX || e.val2 == u64::MAX || e.to_tid <= 0 {
            continue;
        }
        if !keep(e.to_tid) {
            continue;
        }
        // From the expiry on the trace clock to the callback, as `latency --measure timer`
        // counts expiry to running: a callback's wait behind others in the same interrupt
        // (or a stalled vCPU there) is part of the period's lateness.
        let due = clock.due(tl, ei).unwrap_or(e.at);
        let late = e.at - due;
        let from_armed = clock.armed_late(tl, ei);
        let armed_late = from_armed.is_some();
        let irq_late = from_armed.unwrap_or(late);
        let wait = (e.link != NONE)
            .then(|| tl.edges[e.link as usize].span)
            .filter(|&si| si != NONE && sp.flags[si as usize] & span::END_UNKNOWN == 0)
            .map(|si| {
                (
                    sp.start[si as usize],
                    sp.end[si as usize],
                    sp.cpu[si as usize],
                )
            });
        samples.push(TimerSample {
            expiry: due,
            fired: e.at,
            irq_late,
            late,
            cpu: e.to_cpu,
            tid: e.to_tid,
            function: s.get(Sym(e.key)).to_string(),
            wait,
            armed_late,
            armed: (e.ts != 0).then_some(e.ts),
        });
    }
    for r in &tl.reported {
        if o.task.is_some() && !keep(r.tid) {
            continue;
        }
        samples.push(TimerSample {
            expiry: r.ts.saturating_sub(r.late_ns),
            fired: r.ts,
            irq_late: r.late_ns,
            late: r.late_ns,
            cpu: r.cpu,
            tid: r.tid,
            function: format!("{} (self-reported)", s.get(r.name)),
            wait: None,
            armed_late: false,
            armed: None,
        });
    }
    if samples.iter().any(|x| x.armed_late) {
        for i in 0..sp.len() {
            if matches!(sp.kind[i], SpanKind::Runnable | SpanKind::Sleep) && keep(sp.tid[i]) {
                runnable.entry(sp.tid[i]).or_default().push(i as u32);
            }
        }
        for v in runnable.values_mut() {
            v.sort_by_key(|&i| sp.start[i as usize]);
        }
    }
    // Expiry to running, as `latency --measure timer` counts it: the callback's own few us
    // before the wakeup belong to the period too.
    let total = |x: &TimerSample| x.late + x.wait.map_or(0, |w| w.1.saturating_sub(x.fired));
    let mut totals: Vec<u64> = samples.iter().map(total).collect();
    totals.sort_unstable();
    let (deadline, source) = match o.deadline_ns {
        Some(d) => (Some(d), "given".to_string()),
        None if totals.len() >= 100 => (
            Some(quantile(&totals, 0.99)),
            "none given: the periods above p99 are explained".to_string(),
        ),
        None if !totals.is_empty() => (
            Some(1_000_000),
            "none given and too few periods for a p99: 1 ms assumed".to_string(),
        ),
        None => (None, "none".to_string()),
    };
    let is_miss = |x: &TimerSample| deadline.is_some_and(|d| total(x) > d);
    let mut irq_lates: Vec<u64> = samples
        .iter()
        .filter(|x| !is_miss(x))
        .map(|x| x.irq_late)
        .collect();
    irq_lates.sort_unstable();
    let usual_irq = irq_lates.get(irq_lates.len() / 2).copied().unwrap_or(0);
    let mut waits: Vec<u64> = samples
        .iter()
        .filter(|x| !is_miss(x))
        .filter_map(|x| x.wait.map(|w| w.1 - w.0))
        .collect();
    waits.sort_unstable();
    let usual_wait = waits.get(waits.len() / 2).copied().unwrap_or(0);
    let mut causes: FxHashMap<(String, Culprit), (u64, u64)> = FxHashMap::default();
    let mut cpus_blamed: FxHashMap<u32, u64> = FxHashMap::default();
    let mut misses = Vec::new();
    for x in samples.iter().filter(|x| is_miss(x)) {
        let mut per: FxHashMap<(String, Culprit), u64> = FxHashMap::default();
        let mut chain = vec![Link {
            offset_ns: 0,
            ts_ns: x.expiry,
            cpu: Some(x.cpu),
            kind: "from".into(),
            what: format!("hrtimer {} due, for {}", x.function, eng.task(x.tid)),
            duration_ns: 0,
            usual_ns: None,
            excess_ns: 0,
            pending_at_deadline: false,
            held_by: Vec::new(),
            waiter: None,
            queued_in_irq: None,
        }];
        // 0. A task still busy with an earlier period when this one was due: what kept it
        // from coming back (waits for its CPU, its own running) is this period's lateness.
        if let Some(armed) = x.armed.filter(|_| x.armed_late) {
            let (a, b) = (x.expiry, armed.min(x.fired));
            let mut parts: Vec<Hold> = Vec::new();
            let (mut waited, mut slept) = (0, 0);
            if let Some(list) = runnable.get(&x.tid) {
                let first = list.partition_point(|&i| sp.end[i as usize] <= a);
                for &i in &list[first..] {
                    let i = i as usize;
                    if sp.start[i] >= b {
                        break;
                    }
                    let (ra, rb) = (sp.start[i].max(a), sp.end[i].min(b));
                    if rb <= ra {
                        continue;
                    }
                    if sp.kind[i] == SpanKind::Sleep {
                        // Asleep on its earlier period's timer: what made that one late.
                        slept += rb - ra;
                        parts.extend(timer_holds(&eng, x.cpu, ra, rb, rb - ra));
                        continue;
                    }
                    waited += rb - ra;
                    let l = RawLink {
                        kind: LinkKind::Run,
                        key: (LinkKind::Run, String::new(), 1),
                        start: sp.start[i],
                        end: sp.end[i],
                        cpu: sp.cpu[i],
                        tid: x.tid,
                        what: String::new(),
                        preempted: crate::timeline::Cause::from_key(sp.key[i])
                            == crate::timeline::Cause::Preempted,
                        irq: None,
                    };
                    parts.extend(eng.holds(&l, ra, rb));
                }
            }
            // One entry per (category, culprit) over all the pieces.
            let mut held: Vec<Hold> = Vec::new();
            for h in parts {
                match held
                    .iter_mut()
                    .find(|o| o.category == h.category && o.culprit == h.culprit)
                {
                    Some(o) => o.ns += h.ns,
                    None => held.push(h),
                }
            }
            held.sort_by_key(|h| std::cmp::Reverse(h.ns));
            held.truncate(4);
            for h in &held {
                *per.entry((h.category.clone(), h.culprit.clone()))
                    .or_default() += h.ns;
            }
            *cpus_blamed.entry(x.cpu).or_default() += waited + slept;
            chain.push(Link {
                offset_ns: 0,
                ts_ns: a,
                cpu: Some(x.cpu),
                kind: "overrun".into(),
                what: format!(
                    "{} was still on an earlier period: it armed this timer {} after its expiry ({} waiting for a CPU, {} for the earlier period's late timer)",
                    eng.task(x.tid),
                    dur(b - a),
                    dur(waited),
                    dur(slept)
                ),
                duration_ns: b - a,
                usual_ns: Some(0),
                excess_ns: waited + slept,
                pending_at_deadline: false,
                held_by: held,
                waiter: None,
                queued_in_irq: None,
            });
        }
        // 1. The interrupt itself.
        let ex = x.irq_late.saturating_sub(usual_irq);
        let mut held = Vec::new();
        if ex > 10_000 {
            let (a, b) = (x.fired - ex, x.fired);
            held = timer_holds(&eng, x.cpu, a, b, ex);
            for h in &held {
                *per.entry((h.category.clone(), h.culprit.clone()))
                    .or_default() += h.ns;
            }
            *cpus_blamed.entry(x.cpu).or_default() += ex;
        }
        chain.push(Link {
            offset_ns: 0,
            ts_ns: x.expiry,
            cpu: Some(x.cpu),
            kind: "timer".into(),
            what: format!(
                "the timer interrupt fired on CPU{}{}",
                x.cpu,
                if x.armed_late {
                    " (armed after its expiry: the task overran its period)"
                } else {
                    ""
                }
            ),
            duration_ns: x.late,
            usual_ns: Some(usual_irq),
            excess_ns: if ex > 10_000 { ex } else { 0 },
            pending_at_deadline: false,
            held_by: held,
            waiter: None,
            queued_in_irq: None,
        });
        // 2. The woken task's wait for its CPU.
        if let Some((ws, we, wcpu)) = x.wait {
            let ex = (we - ws).saturating_sub(usual_wait);
            let mut held = Vec::new();
            if ex > 10_000 {
                let l = RawLink {
                    kind: LinkKind::Run,
                    key: (LinkKind::Run, String::new(), 1),
                    start: ws,
                    end: we,
                    cpu: wcpu,
                    tid: x.tid,
                    what: String::new(),
                    preempted: false,
                    irq: None,
                };
                held = eng.holds(&l, we - ex, we);
                scale(&mut held, ex);
                for h in &held {
                    *per.entry((h.category.clone(), h.culprit.clone()))
                        .or_default() += h.ns;
                }
                *cpus_blamed.entry(wcpu).or_default() += ex;
            }
            chain.push(Link {
                offset_ns: ws.saturating_sub(x.expiry),
                ts_ns: ws,
                cpu: Some(wcpu),
                kind: "wakeup".into(),
                what: format!(
                    "{} woken by the timer, runnable on CPU{wcpu}, then ran",
                    eng.task(x.tid)
                ),
                duration_ns: we - ws,
                usual_ns: Some(usual_wait),
                excess_ns: if ex > 10_000 { ex } else { 0 },
                pending_at_deadline: false,
                held_by: held,
                waiter: Some(Culprit {
                    comm: Some(s.get(tl.comm(x.tid)).to_string()),
                    pid: Some(x.tid),
                    prio: tl.prios.get(&x.tid).copied(),
                    cpu: Some(wcpu),
                    ..Default::default()
                }),
                queued_in_irq: None,
            });
        }
        let blamed: u64 = per.values().sum();
        for (k, ns) in per {
            let e = causes.entry(k).or_default();
            e.0 += 1;
            e.1 += ns;
        }
        misses.push(Miss {
            start_ns: x.expiry,
            duration_ns: Some(total(x)),
            tid: x.tid,
            cpu: x.cpu,
            late_ns: total(x).saturating_sub(deadline.unwrap_or(0)),
            blamed_ns: blamed,
            chain,
        });
    }
    misses.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let causes = rank(causes);
    let overran = samples
        .iter()
        .filter(|x| x.armed_late && is_miss(x))
        .count();
    if overran > 0 {
        notes.push(format!(
            "{overran} late periods were armed after they were due (the task was still on an earlier period): each one's lateness includes the waits that made the earlier ones late, so the totals count such a wait once per period it delayed"
        ));
    }
    if samples.is_empty() {
        notes.push(
            "no hrtimer expiry that woke a task (or self-reported lateness) matched: record timer:hrtimer_start, timer:hrtimer_expire_entry/exit and sched:sched_waking/sched_switch".into(),
        );
    }
    let mut st = CycleStats {
        count: samples.len() as u64,
        replied: samples.len() as u64,
        no_reply: 0,
        misses: misses.len() as u64,
        min_ns: totals.first().copied().unwrap_or(0),
        p50_ns: quantile(&totals, 0.5),
        p90_ns: quantile(&totals, 0.9),
        p99_ns: quantile(&totals, 0.99),
        max_ns: totals.last().copied().unwrap_or(0),
        histogram: Vec::new(),
    };
    st.histogram = crate::measure::log_histogram(&totals, 1000);
    let context = context(tl, s, &causes, &cpus_blamed);
    let advice = advise(tl, s, &causes, &misses);
    let mut windows: Vec<Window> = samples
        .iter()
        .map(|x| Window {
            start_ns: x.expiry,
            end_ns: Some(x.expiry + total(x)),
            horizon_ns: x.expiry + total(x),
            tid: x.tid,
            cpu: x.cpu,
            miss: is_miss(x),
        })
        .collect();
    windows.sort_by_key(|w| w.start_ns);
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: "hrtimer expiry (requested time)".into(),
        to: vec!["the woken task runs".into()],
        deadline_ns: deadline,
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
        top: o.top,
        noun: "timer periods",
    }
}

/// Why a timer interrupt came late on `cpu` during `[a, b]`: irqs-off sections, a stalled
/// CPU, or, when neither is in the trace, a section inferred from one task sitting inside
/// one system call the whole time.
pub(super) fn timer_holds(eng: &Engine<'_>, cpu: u32, a: u64, b: u64, ex: u64) -> Vec<Hold> {
    let tl = eng.tl;
    let l = RawLink {
        kind: LinkKind::Timer,
        key: (LinkKind::Timer, String::new(), 1),
        start: a,
        end: b,
        cpu,
        tid: -1,
        what: String::new(),
        preempted: false,
        irq: None,
    };
    let mut h = eng.holds(&l, a, b);
    if h.len() == 1 && h[0].category == "timer-irq-late" {
        let stalled: u64 = tl
            .silences
            .iter()
            .filter(|x| x.cpu == cpu)
            .map(|x| x.to.min(b).saturating_sub(x.from.max(a)))
            .sum();
        if tl.ticks > 0 && stalled * 2 >= b - a {
            h[0].category = "cpu-stalled".into();
        } else if let Some((tid, name)) = one_syscall(eng, cpu, a, b) {
            h[0] = Hold {
                category: "irqs-off (inferred)".into(),
                culprit: Culprit {
                    comm: Some(eng.s.get(tl.comm(tid)).to_string()),
                    pid: Some(tid),
                    prio: tl.prios.get(&tid).copied(),
                    caller: Some(format!("inside {name}()")),
                    cpu: Some(cpu),
                    ..Default::default()
                },
                ns: ex,
            };
        }
    }
    scale(&mut h, ex);
    h
}

/// The one task that ran on `cpu` through `[a, b]` from inside one syscall, if so.
pub(super) fn one_syscall(eng: &Engine<'_>, cpu: u32, a: u64, b: u64) -> Option<(i32, String)> {
    let tl = eng.tl;
    let occ = tl.occupants(cpu, a, b);
    let top = occ.first()?;
    if top.what != OccupantKind::Task || top.id <= 0 || top.ns * 100 < (b - a) * 95 {
        return None;
    }
    let tid = top.id as i32;
    let sp = &tl.spans;
    let upto = eng.syscalls.partition_point(|&i| sp.start[i as usize] <= a);
    eng.syscalls[..upto]
        .iter()
        .rev()
        .take(10_000)
        .find_map(|&i| {
            let i = i as usize;
            (sp.tid[i] == tid && sp.end[i] >= b).then(|| {
                let name = if sp.flags[i] & span::NAMED != 0 {
                    eng.s.get(Sym(sp.key[i])).to_string()
                } else {
                    tl.syscall_names
                        .get(&sp.key[i])
                        .map(|x| eng.s.get(*x).to_string())
                        .unwrap_or_else(|| format!("syscall {}", sp.key[i]))
                };
                (tid, name)
            })
        })
}
