//! What every measure reads: the timeline, its strings and the sample filter, with the lookups they share (task names, contexts, who held a CPU).

use super::report::{Bound, Filter, Holder, Settle, TaskSel};
use crate::event::{Interner, Sym, SOFTIRQ_NAMES};
use crate::timeline::{Ctx, OccupantKind, SpanKind, Timeline};
use crate::units::{dur, secs};

pub(super) struct Cx<'a> {
    pub(super) tl: &'a Timeline,
    pub(super) s: &'a Interner,
    pub(super) f: &'a Filter,
    /// Which samples count (see [`Settle`]).
    pub(super) settle: Settle,
    pub(super) first: u64,
    pub(super) runnable_by_cpu: std::cell::OnceCell<Vec<Vec<u32>>>,
    pub(super) offs_by_cpu: std::cell::OnceCell<Vec<Vec<u32>>>,
    /// Samples left out because open at the trace's end, in the current measure.
    pub(super) open: std::cell::Cell<u64>,
}

impl<'a> Cx<'a> {
    /// The same lookups over the same timeline, for another thread (its caches start
    /// empty; its `open` count starts at 0).
    pub(super) fn fork(&self) -> Cx<'a> {
        Cx {
            tl: self.tl,
            s: self.s,
            f: self.f,
            settle: self.settle,
            first: self.first,
            runnable_by_cpu: Default::default(),
            offs_by_cpu: Default::default(),
            open: Default::default(),
        }
    }

    /// Whether the sample from `ts` to `end` counts: it passes the filter and is this
    /// timeline's to settle.
    pub(super) fn keep(&self, ts: u64, end: u64, cpu: u32, tid: i32, comm: Sym) -> bool {
        self.settle.ends(end) && self.passes(ts, cpu, tid, comm)
    }

    /// [`Cx::keep`] for the sample that is span `i` (or ends with it): settled where the
    /// span closed.
    pub(super) fn keep_span(&self, i: usize, ts: u64, cpu: u32, tid: i32, comm: Sym) -> bool {
        let end = self.tl.spans.end[i];
        self.settle.span(i, end) && self.passes(ts, cpu, tid, comm)
    }

    /// Whether a sample passes the user's filter.
    fn passes(&self, ts: u64, cpu: u32, tid: i32, comm: Sym) -> bool {
        if let Some(c) = self.f.cpu {
            if cpu != c {
                return false;
            }
        }
        let abs = |b: Bound| match b {
            Bound::Abs(v) => v,
            Bound::Rel(v) => self.first.saturating_add(v),
        };
        if let Some(a) = self.f.window.0 {
            if ts < abs(a) {
                return false;
            }
        }
        if let Some(b) = self.f.window.1 {
            if ts > abs(b) {
                return false;
            }
        }
        match &self.f.task {
            None => true,
            Some(TaskSel::Pid(p)) => tid == *p,
            Some(TaskSel::Comm(g)) => {
                let name = if comm != Sym::EMPTY {
                    comm
                } else {
                    self.tl.comm(tid)
                };
                g.is_match(self.s.get(name)) || g.is_match(self.s.get(self.tl.comm(tid)))
            }
        }
    }

    /// Counts a sample left out for being open at an end of the trace: `end` is its end
    /// when only its start is missing, `None` when its end is. Each is counted once over
    /// a trace's windows (see [`Settle`]).
    pub(super) fn open_one(&self, end: Option<u64>) {
        if self.settle.counts_open(end) {
            self.open.set(self.open.get() + 1);
        }
    }

    pub(super) fn task(&self, tid: i32, comm: Sym) -> String {
        if tid == 0 {
            return "idle[0]".to_string();
        }
        let c = if comm != Sym::EMPTY && !self.s.get(comm).starts_with('<') {
            comm
        } else {
            self.tl.comm(tid)
        };
        let name = self.s.get(c);
        if name.is_empty() {
            format!("[{tid}]")
        } else {
            format!("{name}[{tid}]")
        }
    }

    pub(super) fn irq(&self, irq: u32) -> String {
        if irq == u32::MAX {
            return "a hardirq without irq_handler_entry (entry before the trace, or the local timer)".to_string();
        }
        match self.tl.irq_names.get(&irq) {
            Some(n) => format!("irq {irq} ({})", self.s.get(*n)),
            None => format!("irq {irq}"),
        }
    }

    pub(super) fn ctx(&self, ctx: Ctx, tid: i32, cpu: u32, ts: u64) -> String {
        match self.tl.resolve(ctx, cpu, ts) {
            Ctx::Task { tid } => self.task(tid, Sym::EMPTY),
            Ctx::Hardirq { irq } => self.irq(irq),
            Ctx::Softirq { vec: u8::MAX } => {
                "a softirq whose entry is not in the trace".to_string()
            }
            Ctx::Softirq { vec } => format!("softirq {}", vec_name(vec as u32)),
            Ctx::Timer { edge } => {
                let e = &self.tl.edges[edge as usize];
                format!("hrtimer {}", self.s.get(Sym(e.key)))
            }
            Ctx::Unknown if tid >= 0 => self.task(tid, Sym::EMPTY),
            Ctx::Unknown => "unknown context".to_string(),
        }
    }

    pub(super) fn holders(&self, cpu: u32, from: u64, to: u64, skip_tid: i32) -> Vec<Holder> {
        if cpu == u32::MAX || to <= from {
            return Vec::new();
        }
        self.tl
            .occupants(cpu, from, to)
            .into_iter()
            .filter(|o| !(o.what == OccupantKind::Task && o.id == skip_tid as i64))
            .take(4)
            .map(|o| Holder {
                what: o.what,
                name: match o.what {
                    OccupantKind::Task => self.task(o.id as i32, o.name),
                    OccupantKind::Hardirq => self.irq(o.id as u32),
                    OccupantKind::Softirq => format!("softirq {}", vec_name(o.id as u32)),
                },
                ns: o.ns,
            })
            .collect()
    }

    /// Spans of some kinds per CPU, sorted by start; built once, on first use.
    pub(super) fn index_of(&self, kinds: &[SpanKind]) -> Vec<Vec<u32>> {
        let sp = &self.tl.spans;
        let mut v: Vec<Vec<u32>> = vec![Vec::new(); self.tl.cpus as usize];
        for i in 0..sp.len() {
            if kinds.contains(&sp.kind[i]) {
                if let Some(l) = v.get_mut(sp.cpu[i] as usize) {
                    l.push(i as u32);
                }
            }
        }
        for l in &mut v {
            l.sort_by_key(|&i| sp.start[i as usize]);
        }
        v
    }

    pub(super) fn runnable_index(&self) -> &Vec<Vec<u32>> {
        self.runnable_by_cpu
            .get_or_init(|| self.index_of(&[SpanKind::Runnable]))
    }

    /// Irqs-off and preempt-off sections on `cpu` that overlap `[from, to]`, described.
    pub(super) fn offs(&self, cpu: u32, from: u64, to: u64) -> Vec<String> {
        let idx = self
            .offs_by_cpu
            .get_or_init(|| self.index_of(&[SpanKind::IrqsOff, SpanKind::PreemptOff]));
        let sp = &self.tl.spans;
        let Some(l) = idx.get(cpu as usize) else {
            return Vec::new();
        };
        let stop = l.partition_point(|&j| sp.start[j as usize] <= to);
        let mut out = Vec::new();
        for &j in l[..stop].iter().rev().take(256) {
            let j = j as usize;
            if sp.end[j] >= from {
                let what = if sp.kind[j] == SpanKind::IrqsOff {
                    "irqs"
                } else {
                    "preemption"
                };
                out.push(format!(
                    "{what} off on CPU{cpu} from {} for {} (disabled by {})",
                    secs(sp.start[j]),
                    dur(sp.end[j] - sp.start[j]),
                    self.s.get(Sym(sp.key[j]))
                ));
            }
        }
        out.reverse();
        out
    }
}

/// A per-thread group key: one group per life of a thread id (pid reuse), named after
/// the thread's name in that life once all samples are in (see `finish_report`).
pub(super) fn life_key(cx: &Cx<'_>, tid: i32, ts: u64) -> ((u64, u64), impl FnOnce() -> String) {
    let life = cx.tl.life(tid, ts);
    (((tid as u32 as u64) << 16 | life as u64, 0), move || {
        format!("\u{1}{tid}#{life}")
    })
}

pub(super) fn vec_name(v: u32) -> String {
    SOFTIRQ_NAMES
        .get(v as usize)
        .map_or_else(|| format!("vec {v}"), |s| s.to_string())
}

/// Strips `+0x1c/0x40` from a kernel caller.
pub(super) fn func_of(caller: &str) -> &str {
    caller.split('+').next().unwrap_or(caller)
}
