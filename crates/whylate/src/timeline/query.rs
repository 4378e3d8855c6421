//! Queries on a built timeline: names, contexts, who occupied a CPU over a window.

use super::model::*;
use super::span;
use crate::event::{Interner, Sym};
use rustc_hash::FxHashMap;

impl Timeline {
    /// Events of class `c` seen.
    pub fn saw(&self, c: KindClass) -> u64 {
        self.seen[c as usize]
    }

    /// Names a context the flags could only call "some hardirq/softirq", when an exit
    /// later in the trace said which one.
    pub fn resolve(&self, ctx: Ctx, cpu: u32, ts: u64) -> Ctx {
        let want_hard = matches!(ctx, Ctx::Hardirq { irq: u32::MAX });
        let want_soft = matches!(ctx, Ctx::Softirq { vec: u8::MAX });
        if !want_hard && !want_soft {
            return ctx;
        }
        for &(c, from, to, r) in &self.retro {
            let kind_ok = match r {
                Ctx::Hardirq { .. } => want_hard,
                Ctx::Softirq { .. } => want_soft,
                _ => false,
            };
            if kind_ok && c == cpu && from <= ts && ts <= to {
                return r;
            }
        }
        ctx
    }

    /// Which life of `tid` was current at `ts`: the number of forks that created it
    /// before then (pid reuse gives one thread id several lives).
    pub fn life(&self, tid: i32, ts: u64) -> usize {
        self.forks
            .get(&tid)
            .map_or(0, |f| f.partition_point(|&t| t <= ts))
    }

    /// `tid`'s priority at `ts` (kernel prio: below 100 real-time), when the trace shows it.
    pub fn prio_at(&self, tid: i32, ts: u64) -> Option<i32> {
        match self.prio_changes.get(&tid) {
            Some(h) => {
                let n = h.partition_point(|&(t, _)| t <= ts);
                Some(h[n.saturating_sub(1)].1)
            }
            None => self.prios.get(&tid).copied(),
        }
    }

    /// Records `tid`'s priority as seen at `ts` (keeping the history when it changes).
    pub(crate) fn set_prio(&mut self, tid: i32, prio: i32, ts: u64) {
        if let Some(old) = self.prios.insert(tid, prio) {
            if old != prio {
                (self.prio_changes.entry(tid))
                    .or_insert_with(|| vec![(0, old)])
                    .push((ts, prio));
            }
        }
    }

    /// Best known name of a task.
    pub fn comm(&self, tid: i32) -> Sym {
        self.comms.get(&tid).copied().unwrap_or(Sym::EMPTY)
    }

    /// Whether `tid` is one of the recorder's own threads (see [`Timeline::recorder`]).
    pub fn is_recorder(&self, tid: i32) -> bool {
        tid > 0 && self.recorder.contains(&tid)
    }

    /// Time in `[a, b]` during which `cpu` (any CPU when `None`) recorded nothing while a
    /// task was on it ([`Silence`]s), summed over the silences.
    pub fn silent_ns(&self, cpu: Option<u32>, a: u64, b: u64) -> u64 {
        (self.silences.iter())
            .filter(|x| cpu.is_none_or(|c| x.cpu == c))
            .map(|x| x.to.min(b).saturating_sub(x.from.max(a)))
            .sum()
    }

    /// Where the trace is blind on `cpu` (any CPU when `u32::MAX`) inside `[start, end]`:
    /// the earliest blind point there.
    pub fn blind_in(&self, cpu: u32, start: u64, end: u64) -> Option<&Blind> {
        (self.blind.iter())
            .filter(|b| (cpu == u32::MAX || b.cpu == cpu) && b.from < end && self.last_ts > start)
            .min_by_key(|b| b.from)
    }

    /// True when a lost-events window on `cpu` (any CPU when `cpu` is `u32::MAX`)
    /// intersects `[start, end]`.
    pub fn crosses_loss(&self, cpu: u32, start: u64, end: u64) -> bool {
        let first = self.lost.partition_point(|w| w.to < start);
        self.lost[first..]
            .iter()
            .any(|w| w.from <= end && (cpu == u32::MAX || w.cpu == cpu || w.cpu == u32::MAX))
    }

    /// `comm[tid]` as reports print a task (`idle` for tid 0, `[tid]` with no name known).
    pub fn task_name(&self, s: &Interner, tid: i32) -> String {
        if tid == 0 {
            return "idle".into();
        }
        let c = s.get(self.comm(tid));
        if c.is_empty() {
            format!("[{tid}]")
        } else {
            format!("{c}[{tid}]")
        }
    }

    /// A syscall span's name (`read`), from its key and flags.
    pub fn syscall_name(&self, s: &Interner, key: u32, flags: u8) -> String {
        if flags & span::NAMED != 0 {
            return s.get(Sym(key)).to_string();
        }
        match self.syscall_names.get(&key) {
            Some(n) => s.get(*n).to_string(),
            None => match self.arch.name(key as i64) {
                Some(n) => n.to_string(),
                None => format!("NR {key}"),
            },
        }
    }

    /// How a call reads in a chain's words: its name, with the operation for futex
    /// (`futex(WAIT)`), else `name()`.
    pub fn call_words(&self, s: &Interner, c: &super::Syscall) -> String {
        let name = self.syscall_name(s, c.key, c.flags);
        let op = (name == "futex")
            .then(|| self.futex_ops.get(&(c.tid, c.start)))
            .flatten()
            .and_then(|&op| super::futex_op_name(op));
        match op {
            Some(op) => format!("{name}({op})"),
            None => format!("{name}()"),
        }
    }

    /// A syscall span's number, when known: raw events carry it, named ones are looked
    /// up in the syscall table.
    pub fn syscall_nr(&self, s: &Interner, key: u32, flags: u8) -> Option<i64> {
        if flags & span::NAMED == 0 {
            return Some(key as i64);
        }
        let name = s.get(Sym(key));
        self.arch.number(name.strip_prefix("sys_").unwrap_or(name))
    }
    /// How many times each irq line's handler ran on `cpu`, most first.
    pub fn hardirq_counts(&self, cpu: u32) -> Vec<(u32, u64)> {
        self.hardirq_counts_where(cpu, |_| true)
    }

    /// [`Self::hardirq_counts`] of the runs whose start `take` takes.
    pub fn hardirq_counts_where(&self, cpu: u32, take: impl Fn(u64) -> bool) -> Vec<(u32, u64)> {
        let sp = &self.spans;
        let mut m: FxHashMap<u32, u64> = FxHashMap::default();
        for &i in self
            .irqs_by_cpu
            .get(cpu as usize)
            .map_or(&[][..], |l| &l[..])
        {
            let i = i as usize;
            if sp.kind[i] == SpanKind::Hardirq && sp.key[i] != u32::MAX && take(sp.start[i]) {
                *m.entry(sp.key[i]).or_default() += 1;
            }
        }
        let mut v: Vec<(u32, u64)> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Who occupied `cpu` during `[from, to)`: time per running task (idle included as tid
    /// 0), and time in hardirq and softirq handlers, largest first. Each instant counts once,
    /// for the innermost occupant: a softirq run on top of a task (or of idle) is the
    /// softirq's time, not the task's, and a hardirq inside a softirq is the hardirq's.
    pub fn occupants(&self, cpu: u32, from: u64, to: u64) -> Vec<Occupant> {
        let mut acc: FxHashMap<(u8, i64), (u64, Sym)> = FxHashMap::default();
        let s = &self.spans;
        // Clipped spans of one list that overlap the window, in start order.
        let clipped = |list: &[u32]| -> Vec<(u64, u64, usize)> {
            let first = list.partition_point(|&i| s.end[i as usize] <= from);
            let mut past = 0;
            let mut out = Vec::new();
            for &i in &list[first..] {
                let iu = i as usize;
                if s.start[iu] >= to {
                    // Nested irq spans end out of start order: look a little further.
                    past += 1;
                    if past > 8 {
                        break;
                    }
                    continue;
                }
                let (a, b) = (s.start[iu].max(from), s.end[iu].min(to));
                if b > a {
                    out.push((a, b, iu));
                }
            }
            out
        };
        let irqs = self
            .irqs_by_cpu
            .get(cpu as usize)
            .map(|l| clipped(l))
            .unwrap_or_default();
        let hard = merge(irqs.iter().filter(|x| s.kind[x.2] == SpanKind::Hardirq));
        let all = merge(irqs.iter());
        let mut add = |k: u8, id: i64, name: Sym, ns: u64| {
            if ns == 0 {
                return;
            }
            let e = acc.entry((k, id)).or_insert((0, name));
            e.0 += ns;
            if e.1 == Sym::EMPTY {
                e.1 = name;
            }
        };
        for &(a, b, iu) in &irqs {
            if s.kind[iu] == SpanKind::Hardirq {
                let irq = s.key[iu];
                let name = self.irq_names.get(&irq).copied().unwrap_or_default();
                add(1, irq as i64, name, b - a);
            } else {
                add(
                    2,
                    s.key[iu] as i64,
                    Sym::EMPTY,
                    b - a - covered(&hard, a, b),
                );
            }
        }
        if let Some(l) = self.runs_by_cpu.get(cpu as usize) {
            for (a, b, iu) in clipped(l) {
                add(0, s.tid[iu] as i64, s.comm[iu], b - a - covered(&all, a, b));
            }
        }
        let mut v: Vec<Occupant> = acc
            .into_iter()
            .map(|((k, id), (ns, name))| Occupant {
                what: match k {
                    0 => OccupantKind::Task,
                    1 => OccupantKind::Hardirq,
                    _ => OccupantKind::Softirq,
                },
                id,
                name,
                ns,
            })
            .collect();
        v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.id.cmp(&b.id)));
        v
    }
}

/// What occupied a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OccupantKind {
    /// A task (id = tid).
    Task,
    /// An interrupt handler (id = irq).
    Hardirq,
    /// A softirq (id = vector).
    Softirq,
}

/// The union of clipped intervals, sorted and disjoint.
fn merge<'a>(iv: impl Iterator<Item = &'a (u64, u64, usize)>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = iv.map(|&(a, b, _)| (a, b)).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// How much of `[a, b)` the disjoint sorted intervals cover.
fn covered(u: &[(u64, u64)], a: u64, b: u64) -> u64 {
    let first = u.partition_point(|x| x.1 <= a);
    u[first..]
        .iter()
        .take_while(|x| x.0 < b)
        .map(|x| x.1.min(b).saturating_sub(x.0.max(a)))
        .sum()
}

/// One entry of [`Timeline::occupants`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Occupant {
    /// Task, hardirq or softirq.
    pub what: OccupantKind,
    /// tid, irq or vector.
    pub id: i64,
    /// Comm or irq name.
    pub name: Sym,
    /// Time, ns.
    pub ns: u64,
}
