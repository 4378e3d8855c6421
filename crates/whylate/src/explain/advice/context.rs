//! The CPUs behind the causes: where the chain lost the most time, what ran there and
//! which interrupts it handled, from one timeline or summed over a trace's windows.

use crate::event::Interner;
use crate::explain::report::{CauseRow, CpuContext};
use crate::timeline::{Timeline, Usage};
use rustc_hash::FxHashMap;

/// The (at most two) CPUs where the chain lost the most time, with what ran there and the
/// interrupts handled there.
pub(in crate::explain) fn context(
    tl: &Timeline,
    s: &Interner,
    causes: &[CauseRow],
    blamed: &FxHashMap<u32, u64>,
) -> Vec<CpuContext> {
    let span = tl.last_ts.saturating_sub(tl.first_ts.unwrap_or(0)).max(1);
    let sp = &tl.spans;
    let busy = |cpu: u32| {
        let mut run: FxHashMap<i32, u64> = FxHashMap::default();
        if let Some(l) = tl.runs_by_cpu.get(cpu as usize) {
            for &i in l {
                let i = i as usize;
                if sp.tid[i] > 0 {
                    *run.entry(sp.tid[i]).or_default() += sp.end[i] - sp.start[i];
                }
            }
        }
        let who = |tid: i32| (s.get(tl.comm(tid)), tl.prios.get(&tid).copied());
        shares(run.into_iter(), span, who)
    };
    let irqs = |cpu: u32| {
        (tl.hardirq_counts(cpu).into_iter())
            .map(|(irq, n)| {
                let name = tl.irq_names.get(&irq).map(|n| s.get(*n)).unwrap_or("");
                (irq, n, name)
            })
            .collect()
    };
    let rec = |p: i32| tl.is_recorder(p);
    context_of(causes, blamed, rec, busy, irqs)
}

/// [`context`] of a trace explained in windows, from what every window ran ([`Usage`]).
pub(in crate::explain) fn context_of_usage(
    u: &Usage,
    causes: &[CauseRow],
    blamed: &FxHashMap<u32, u64>,
    recorder: &[i32],
) -> Vec<CpuContext> {
    let busy = |cpu: u32| {
        let who = |tid: i32| u.task(tid).unwrap_or(("", None));
        shares(u.runs(cpu).into_iter(), u.span.max(1), who)
    };
    let irqs = |cpu: u32| u.irq_counts(cpu);
    let rec = |p: i32| p > 0 && recorder.binary_search(&p).is_ok();
    context_of(causes, blamed, rec, busy, irqs)
}

/// The five tasks that ran most, as shares of `span`, each with its priority: a victim at
/// nice 19 beside a hog at nice 0 is the finding, not a detail.
fn shares<'a>(
    run: impl Iterator<Item = (i32, u64)>,
    span: u64,
    who: impl Fn(i32) -> (&'a str, Option<i32>),
) -> Vec<(String, f64)> {
    let mut busy: Vec<(String, f64)> = run
        .map(|(tid, ns)| {
            let (comm, prio) = who(tid);
            let prio = crate::explain::report::prio_words(prio);
            (format!("{comm}[{tid}]{prio}"), ns as f64 / span as f64)
        })
        .collect();
    busy.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    busy.truncate(5);
    busy
}

/// The context of the two CPUs that lost the most: `busy` and `irqs` say what ran on a
/// CPU and which lines it handled (most first), `rec` whether a pid is the recorder's.
fn context_of<'a>(
    causes: &[CauseRow],
    blamed: &FxHashMap<u32, u64>,
    rec: impl Fn(i32) -> bool,
    busy: impl Fn(u32) -> Vec<(String, f64)>,
    irqs: impl Fn(u32) -> Vec<(u32, u64, &'a str)>,
) -> Vec<CpuContext> {
    let mut cpus: Vec<(u32, u64)> = blamed.iter().map(|(c, n)| (*c, *n)).collect();
    cpus.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    cpus.into_iter()
        .take(2)
        .map(|(cpu, _)| {
            let irqs: Vec<(String, u64)> = (irqs(cpu).into_iter().take(5))
                .map(|(irq, n, name)| (format!("irq {irq} {name}").trim_end().to_string(), n))
                .collect();
            // The workload's cause first, as the causes table ranks it: the recorder's
            // own rows come after the workload's there.
            let here = |c: &&CauseRow| c.culprit.cpu == Some(cpu);
            let rec = |c: &&CauseRow| c.culprit.pid.is_some_and(&rec);
            let role = (causes.iter().filter(here))
                .find(|c| !rec(c))
                .or_else(|| causes.iter().filter(here).find(rec))
                .map(|c| {
                    format!(
                        "the chain waited here ({} {})",
                        c.category,
                        c.culprit.label_in(c.category)
                    )
                })
                .unwrap_or_else(|| "the chain waited here".into());
            CpuContext {
                cpu,
                role,
                busy: busy(cpu),
                irqs,
            }
        })
        .collect()
}
