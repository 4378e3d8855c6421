//! What every CPU spent the trace on: shares of tasks, irq handlers, softirqs and idle,
//! and the interrupts handled there (what `diff` compares and every explain report
//! carries).

use super::model::Timeline;
use super::query::OccupantKind;
use crate::event::Interner;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// What one CPU spent the trace on.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuProfile {
    /// The CPU.
    pub cpu: u32,
    /// Share of the trace's span it was not idle (tasks, interrupts, softirqs).
    pub busy: f64,
    /// Who held it, as shares of the span, largest first (at most 12, each ≥ 0.1%): tasks by
    /// name (all pids of a name together), hard interrupts, softirq vectors. Time in an
    /// interrupt counts for the interrupt, not for the task it interrupted.
    pub shares: Vec<Share>,
    /// Hard interrupts handled here, most first.
    pub irqs: Vec<IrqCount>,
}

/// One holder's share of a CPU.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Share {
    /// `hog`, `irq virtio3-tx`, `softirq NET_RX`.
    pub what: String,
    /// `task`, `hardirq` or `softirq`.
    pub kind: &'static str,
    /// Fraction of the span.
    pub share: f64,
}

/// How often one interrupt line was handled on a CPU.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IrqCount {
    /// Line number.
    pub irq: u32,
    /// Its name (`/proc/interrupts` or the trace), empty when unknown.
    pub name: String,
    /// Handler runs.
    pub count: u64,
}

/// The profile of every CPU with anything recorded on it.
pub fn profile(tl: &Timeline, s: &Interner) -> Vec<CpuProfile> {
    let (from, to) = (tl.first_ts.unwrap_or(0), tl.last_ts);
    let mut u = Usage::default();
    u.add(tl, s, (from, to.max(from + 1)), |_| true);
    u.span = to.saturating_sub(from);
    u.profiles()
}

/// What every CPU spent a stretch of time on, in nanoseconds: profiles of a trace read in
/// windows add up each window's own stretch, then share the sums out ([`Usage::profiles`]).
#[derive(Clone, Debug, Default)]
pub struct Usage {
    /// Per CPU with anything recorded: its busy time, time per holder (kind, name) and
    /// hard interrupt runs per line.
    cpus: std::collections::BTreeMap<u32, CpuUsage>,
    /// Irq line names.
    names: FxHashMap<u32, String>,
    /// Each task's name and priority as the latest stretch knew them.
    tasks: FxHashMap<i32, (String, Option<i32>)>,
    /// Each thread's label in the profiles, as the latest stretch that ran it named it.
    labels: FxHashMap<i32, String>,
    /// The time the shares are of.
    pub span: u64,
}

#[derive(Clone, Debug, Default)]
struct CpuUsage {
    busy: u64,
    /// Interrupts and softirqs by (kind, name); tasks are in `threads`.
    by: FxHashMap<(u8, String), u64>,
    /// Each thread's time, labelled when the profiles are made.
    threads: FxHashMap<i32, u64>,
    irqs: FxHashMap<u32, u64>,
    /// Each task's runs here, interrupts inside them included (as the chain's context
    /// counts them).
    runs: FxHashMap<i32, u64>,
}

impl Usage {
    /// Adds what each CPU of `tl` spent `[from, to)` on, and the handler runs `count`
    /// takes (by their start time).
    pub fn add(
        &mut self,
        tl: &Timeline,
        s: &Interner,
        (from, to): (u64, u64),
        count: impl Fn(u64) -> bool,
    ) {
        for cpu in 0..tl.cpus {
            let occ = tl.occupants(cpu, from, to);
            if occ.is_empty() {
                continue;
            }
            let u = self.cpus.entry(cpu).or_default();
            add_runs(tl, cpu, (from, to), &mut u.runs);
            for o in &occ {
                let key = match o.what {
                    OccupantKind::Task if o.id == 0 => continue,
                    // By thread, named at the end: a task that exec'd is the trace's
                    // last name for all of its time, as in one pass over the trace.
                    OccupantKind::Task => {
                        let tid = o.id as i32;
                        self.labels.insert(tid, task_label(tl, s, tid, o.name));
                        u.busy += o.ns;
                        *u.threads.entry(tid).or_default() += o.ns;
                        continue;
                    }
                    OccupantKind::Hardirq => (1, irq_label(o.id as u32, s.get(o.name))),
                    OccupantKind::Softirq => (
                        2,
                        format!(
                            "softirq {}",
                            crate::event::SOFTIRQ_NAMES
                                .get(o.id as usize)
                                .copied()
                                .unwrap_or("?")
                        ),
                    ),
                };
                u.busy += o.ns;
                *u.by.entry(key).or_default() += o.ns;
            }
            for &tid in u.runs.keys() {
                let comm = s.get(tl.comm(tid)).to_string();
                self.tasks.insert(tid, (comm, tl.prios.get(&tid).copied()));
            }
            for (irq, n) in tl.hardirq_counts_where(cpu, &count) {
                *u.irqs.entry(irq).or_default() += n;
                if let Some(n) = tl.irq_names.get(&irq) {
                    self.names
                        .entry(irq)
                        .or_insert_with(|| s.get(*n).to_string());
                }
            }
        }
    }

    /// Each task's time running on `cpu`, most first.
    pub fn runs(&self, cpu: u32) -> Vec<(i32, u64)> {
        let mut v: Vec<(i32, u64)> = (self.cpus.get(&cpu).into_iter())
            .flat_map(|u| u.runs.iter().map(|(&t, &n)| (t, n)))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// A task's name and priority, as the latest stretch that ran it knew them.
    pub fn task(&self, tid: i32) -> Option<(&str, Option<i32>)> {
        self.tasks.get(&tid).map(|(c, p)| (c.as_str(), *p))
    }

    /// Hard interrupt runs on `cpu` per line, with its name (empty when unknown), most
    /// first.
    pub fn irq_counts(&self, cpu: u32) -> Vec<(u32, u64, &str)> {
        let mut v: Vec<(u32, u64, &str)> = (self.cpus.get(&cpu).into_iter())
            .flat_map(|u| u.irqs.iter())
            .map(|(&i, &n)| (i, n, self.names.get(&i).map_or("", |s| s.as_str())))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// The profiles: each holder's share of [`Usage::span`].
    pub fn profiles(&self) -> Vec<CpuProfile> {
        let span = self.span.max(1) as f64;
        let mut out = Vec::new();
        for (&cpu, u) in &self.cpus {
            let mut by: FxHashMap<(u8, &str), u64> = FxHashMap::default();
            for (tid, &ns) in &u.threads {
                let label = self.labels.get(tid).map_or("", |l| l.as_str());
                *by.entry((0, label)).or_default() += ns;
            }
            for ((k, what), &ns) in &u.by {
                *by.entry((*k, what.as_str())).or_default() += ns;
            }
            let mut shares: Vec<Share> = (by.iter())
                .map(|((k, what), &ns)| Share {
                    what: what.to_string(),
                    kind: ["task", "hardirq", "softirq"][*k as usize],
                    share: ns as f64 / span,
                })
                .filter(|x| x.share >= 0.001)
                .collect();
            shares.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.what.cmp(&b.what)));
            shares.truncate(12);
            let mut irqs: Vec<(u32, u64)> = u.irqs.iter().map(|(&i, &n)| (i, n)).collect();
            irqs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let irqs = (irqs.into_iter())
                .map(|(irq, count)| IrqCount {
                    irq,
                    name: self.names.get(&irq).cloned().unwrap_or_default(),
                    count,
                })
                .collect();
            out.push(CpuProfile {
                cpu,
                busy: u.busy as f64 / span,
                shares,
                irqs,
            });
        }
        out
    }
}

/// Adds each task's run time on `cpu` inside `[from, to)`.
fn add_runs(tl: &Timeline, cpu: u32, (from, to): (u64, u64), runs: &mut FxHashMap<i32, u64>) {
    let sp = &tl.spans;
    for &i in tl.runs_by_cpu.get(cpu as usize).map_or(&[][..], |l| &l[..]) {
        let i = i as usize;
        let (a, b) = (sp.start[i].max(from), sp.end[i].min(to));
        if sp.tid[i] > 0 && a < b {
            *runs.entry(sp.tid[i]).or_default() += b - a;
        }
    }
}

/// A task by its name in the trace (`tid N` without one).
fn task_label(tl: &Timeline, s: &Interner, tid: i32, name: crate::event::Sym) -> String {
    let c = s.get(tl.comm(tid));
    let c = if c.is_empty() { s.get(name) } else { c };
    if c.is_empty() {
        format!("tid {tid}")
    } else {
        c.to_string()
    }
}

pub(crate) fn irq_label(irq: u32, name: &str) -> String {
    if name.is_empty() {
        format!("irq {irq}")
    } else {
        format!("irq {name}")
    }
}
