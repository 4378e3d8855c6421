//! The engine: a cycle's chain of hand-offs from the timeline's causal edges, and each
//! link's usual duration in the whole trace (what held each link is in `blame`).

use crate::event::{Interner, Sym, SOFTIRQ_NAMES};
use crate::timeline::{span, Cause as RunCause, Ctx, EdgeKind, SpanKind, Timeline, NONE};
use rustc_hash::{FxHashMap, FxHashSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::explain) enum LinkKind {
    Run,
    Work,
    Timer,
    /// A softirq that carried the chain: pending on its CPU, or running.
    Softirq,
}

/// A cycle's chain: its links, its tasks, and the waits of its tasks for other tasks.
pub(in crate::explain) struct Chain {
    pub(in crate::explain) links: Vec<RawLink>,
    pub(in crate::explain) tasks: FxHashSet<i32>,
    pub(in crate::explain) waits: Vec<Wait>,
}

/// One wait of a task for another.
#[derive(Clone, Debug)]
pub(in crate::explain) struct Wait {
    /// The task that waited: the one that slept, or, where that one's waker held up a
    /// higher-priority task waiting on it in turn, that task (`waitfor`).
    pub(in crate::explain) sleeper: i32,
    /// The task that woke it.
    pub(in crate::explain) waker: i32,
    /// The sleep (clipped to the window it was looked for in) and the wakeup.
    pub(in crate::explain) from: u64,
    pub(in crate::explain) woke: u64,
    /// The CPU the waker woke it from.
    pub(in crate::explain) cpu: u32,
    /// The words of the step: who slept where, until whom.
    pub(in crate::explain) what: String,
}

/// A link's template key: kind, normalised name, and its order among links with that
/// name (the same hand-off in every cycle).
pub(in crate::explain) type LinkKey = (LinkKind, String, u32);

/// A hand-off inside a cycle.
#[derive(Clone, Debug)]
pub(in crate::explain) struct RawLink {
    pub(in crate::explain) kind: LinkKind,
    /// Template key: kind, normalised name, and its order among links with that name.
    pub(in crate::explain) key: LinkKey,
    pub(in crate::explain) start: u64,
    pub(in crate::explain) end: u64,
    pub(in crate::explain) cpu: u32,
    /// The waiting task.
    pub(in crate::explain) tid: i32,
    pub(in crate::explain) what: String,
    pub(in crate::explain) preempted: bool,
    /// Work queued from this hardirq (or from outside the chain: `Some(u32::MAX)`).
    pub(in crate::explain) irq: Option<u32>,
    /// A softirq pending: `Some(true)` while its ksoftirqd waited for the CPU (the time
    /// is a deferral), `Some(false)` with no ksoftirqd waiting.
    pub(in crate::explain) deferred: Option<bool>,
    /// A softirq pending: when its ksoftirqd was first woken in the link (clipped to its
    /// start). From then on the wait is the deferral, never usual: good cycles that were
    /// deferred too would otherwise teach a long deferral as the norm.
    pub(in crate::explain) defer_from: Option<u64>,
    /// The softirq vector whose queue the work waits in: that vector's own runs on the
    /// link's CPU meanwhile are the backlog ahead of it, not interference.
    pub(in crate::explain) queue: Option<u8>,
    /// A wait for a CPU whose end is inferred: no sched_switch put the task on the CPU,
    /// and the wait ends at its first event there ([`span::INFERRED`]).
    pub(in crate::explain) untraced_end: bool,
    /// A waker's wait for a CPU while this task of the chain slept until it woke it
    /// (`waitfor`): the wait of a higher-priority sleeper is a priority inversion.
    pub(in crate::explain) waits_for: Option<i32>,
}

impl RawLink {
    /// A wait of `tid` on `cpu` over `[start, end]` that is not part of a chain (a timer
    /// period's wakeup, an outlier): no template name, no words.
    pub(in crate::explain) fn wait(
        kind: LinkKind,
        start: u64,
        end: u64,
        cpu: u32,
        tid: i32,
    ) -> RawLink {
        RawLink {
            kind,
            key: (kind, String::new(), 1),
            start,
            end,
            cpu,
            tid,
            what: String::new(),
            preempted: false,
            irq: None,
            deferred: None,
            defer_from: None,
            queue: None,
            untraced_end: false,
            waits_for: None,
        }
    }

    /// The part of the link a usual duration is learnt from and compared with: all of it,
    /// but for a deferred softirq only the time before its ksoftirqd was woken.
    pub(in crate::explain) fn usual_part(&self) -> u64 {
        self.defer_from
            .map_or(self.end, |w| w.clamp(self.start, self.end))
            - self.start
    }
}

/// What a wait's words add when its end is inferred ([`span::INFERRED`]): the task's
/// switch onto the CPU is not in the trace, so the wait ends at its first event there.
pub(in crate::explain) fn untraced_words(inferred: bool) -> &'static str {
    if inferred {
        " (switch-in not traced: the end is its first event there)"
    } else {
        ""
    }
}

/// `kworker/u8:1` → `kworker/u8:*`: workers of a pool are interchangeable.
pub(in crate::explain) fn norm_comm(c: &str) -> String {
    if c.starts_with("kworker/") {
        if let Some(i) = c.rfind(':') {
            return format!("{}:*", &c[..i]);
        }
    }
    c.to_string()
}

/// How the trace ties a softirq run to the hard irq behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::explain) enum IrqEvidence {
    /// The handler raised it (`softirq_raise` in its frame), or was itself the context.
    Raised,
    /// No raise event: the softirq loop ran at this handler's exit.
    RanAtExit,
}

/// The longest gap between a handler's exit and the softirq loop it runs (or between two
/// vectors of one loop) that still counts as the same exit: `irq_exit` goes straight
/// into `__do_softirq`, a few microseconds at most even with tracing on.
const LOOP_GAP_NS: u64 = 20_000;

pub(in crate::explain) struct Engine<'a> {
    pub(in crate::explain) tl: &'a Timeline,
    pub(in crate::explain) s: &'a Interner,
    /// Where each hrtimer expiry falls on the trace clock.
    pub(in crate::explain) clock: crate::timeline::TimerClock,
    /// Runnable spans by start.
    pub(in crate::explain) runnable: Vec<u32>,
    /// Sleep spans by end (the wakeup that ended them).
    pub(in crate::explain) sleeps: Vec<u32>,
    /// Per CPU, hrtimer callback spans by start.
    pub(in crate::explain) timer_cbs: Vec<Vec<u32>>,
    /// Per CPU, each hrtimer expiry as (due on the trace clock, fired), by due.
    pub(in crate::explain) expiries: Vec<Vec<(u64, u64)>>,
    /// Wakeup, work and timer edges by cause time.
    pub(in crate::explain) edges: Vec<u32>,
    /// Their cause times, side by side: searched without a jump into the edge table per
    /// step (a search per cycle, millions of cycles).
    pub(in crate::explain) edge_ts: Vec<u64>,
    pub(in crate::explain) irqsoff_by_cpu: Vec<Vec<u32>>,
    /// Per CPU, softirq raise edges by the time the softirq ran.
    pub(in crate::explain) softirq_runs: Vec<Vec<u32>>,
    /// Packet edges (skb handed to the stack -> taken by it) by the hand-off time.
    pub(in crate::explain) packets: Vec<u32>,
    /// Trace-wide median per link key (name), for links good cycles lack.
    /// (Behind a lock so that threads can share the engine: cycles are read in parts.)
    pub(in crate::explain) trace_median: std::sync::Mutex<FxHashMap<(LinkKind, String), u64>>,
}

/// The spans of one kind, by start (ties in index order, as a stable sort leaves them).
/// Sorted as (start, index) pairs side by side: an index sort that looks each start up
/// jumps around the span table (12% of `explain` on a 4 M-event trace).
fn spans_by_start(sp: &crate::timeline::Spans, kind: SpanKind) -> Vec<u32> {
    let mut v: Vec<(u64, u32)> = (0..sp.len())
        .filter(|&i| sp.kind[i] == kind)
        .map(|i| (sp.start[i], i as u32))
        .collect();
    v.sort_unstable();
    v.into_iter().map(|(_, i)| i).collect()
}

impl<'a> Engine<'a> {
    pub(in crate::explain) fn new(tl: &'a Timeline, s: &'a Interner) -> Engine<'a> {
        let sp = &tl.spans;
        let runnable = spans_by_start(sp, SpanKind::Runnable);
        let mut sleeps: Vec<(u64, u32)> = (0..sp.len())
            .filter(|&i| sp.kind[i] == SpanKind::Sleep)
            .map(|i| (sp.end[i], i as u32))
            .collect();
        sleeps.sort_unstable();
        let sleeps = sleeps.into_iter().map(|(_, i)| i).collect();
        let mut timer_cbs = vec![Vec::new(); tl.cpus as usize];
        for i in spans_by_start(sp, SpanKind::TimerCb) {
            if let Some(l) = timer_cbs.get_mut(sp.cpu[i as usize] as usize) {
                l.push(i);
            }
        }
        let mut edges: Vec<u32> = (0..tl.edges.len() as u32)
            .filter(|&i| {
                matches!(
                    tl.edges[i as usize].kind,
                    EdgeKind::Wakeup | EdgeKind::Work | EdgeKind::Timer
                )
            })
            .collect();
        edges.sort_by_key(|&i| tl.edges[i as usize].ts);
        let edge_ts = edges.iter().map(|&i| tl.edges[i as usize].ts).collect();
        let mut irqsoff_by_cpu = vec![Vec::new(); tl.cpus as usize];
        for i in 0..sp.len() {
            if sp.kind[i] == SpanKind::IrqsOff {
                if let Some(l) = irqsoff_by_cpu.get_mut(sp.cpu[i] as usize) {
                    l.push(i as u32);
                }
            }
        }
        let mut softirq_runs = vec![Vec::new(); tl.cpus as usize];
        for (i, e) in tl.edges.iter().enumerate() {
            if e.kind == EdgeKind::Softirq {
                if let Some(l) = softirq_runs.get_mut(e.to_cpu as usize) {
                    l.push(i as u32);
                }
            }
        }
        for l in &mut softirq_runs {
            l.sort_by_key(|&i| tl.edges[i as usize].at);
        }
        let mut packets: Vec<u32> = (0..tl.edges.len() as u32)
            .filter(|&i| tl.edges[i as usize].kind == EdgeKind::Packet)
            .collect();
        packets.sort_by_key(|&i| tl.edges[i as usize].ts);
        let clock = crate::timeline::TimerClock::new(tl);
        let mut expiries = vec![Vec::new(); tl.cpus as usize];
        for (i, e) in tl.edges.iter().enumerate() {
            if e.kind == EdgeKind::Timer && e.val != u64::MAX && e.val2 != u64::MAX {
                if let (Some(l), Some(due)) =
                    (expiries.get_mut(e.to_cpu as usize), clock.due(tl, i))
                {
                    l.push((due, e.at));
                }
            }
        }
        for l in &mut expiries {
            l.sort_unstable();
        }
        Engine {
            expiries,
            softirq_runs,
            packets,
            clock,
            tl,
            s,
            runnable,
            sleeps,
            timer_cbs,
            edges,
            edge_ts,
            irqsoff_by_cpu,
            trace_median: Default::default(),
        }
    }

    pub(in crate::explain) fn task(&self, tid: i32) -> String {
        self.tl.task_name(self.s, tid)
    }

    pub(in crate::explain) fn ctx(&self, c: Ctx, tid: i32, cpu: u32, ts: u64) -> String {
        match self.tl.resolve(c, cpu, ts) {
            Ctx::Task { tid } => self.task(tid),
            Ctx::Hardirq { irq } if irq != u32::MAX => match self.tl.irq_names.get(&irq) {
                Some(n) => format!("irq {irq} ({})", self.s.get(*n)),
                None => format!("irq {irq}"),
            },
            Ctx::Hardirq { .. } => "a hardirq".into(),
            Ctx::Softirq { vec } => format!(
                "softirq {}",
                SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?")
            ),
            Ctx::Timer { edge } => {
                format!(
                    "hrtimer {}",
                    self.s.get(Sym(self.tl.edges[edge as usize].key))
                )
            }
            Ctx::Unknown => self.task(tid),
        }
    }

    /// The hard irq behind context `c` on `cpu` at `ts`, and how the trace shows it: the
    /// handler itself; for a softirq, the handler that raised it (its `softirq_raise`);
    /// without a raise event, the handler at whose exit the softirq loop ran.
    pub(in crate::explain) fn origin_irq(
        &self,
        c: Ctx,
        cpu: u32,
        ts: u64,
    ) -> Option<(u32, IrqEvidence)> {
        let tl = self.tl;
        let hard = |c: Ctx, cpu, ts| match tl.resolve(c, cpu, ts) {
            Ctx::Hardirq { irq } if irq != u32::MAX => Some(irq),
            _ => None,
        };
        match tl.resolve(c, cpu, ts) {
            Ctx::Softirq { vec } => {
                let run = self.softirq_span_at(cpu, vec, ts);
                let runs = self.softirq_runs.get(cpu as usize)?;
                let n = runs.partition_point(|&i| tl.edges[i as usize].at <= ts);
                let raise = (runs[..n].iter().rev())
                    .map(|&i| &tl.edges[i as usize])
                    .find(|e| e.key == vec as u32)
                    // A raise for an earlier run of the vector says nothing about this one.
                    .filter(|e| run.is_none_or(|r| e.at >= tl.spans.start[r as usize]));
                match raise {
                    Some(r) => hard(r.from, r.from_cpu, r.ts).map(|i| (i, IrqEvidence::Raised)),
                    None => self
                        .irq_exit_before(run?)
                        .map(|i| (i, IrqEvidence::RanAtExit)),
                }
            }
            other => hard(other, cpu, ts).map(|i| (i, IrqEvidence::Raised)),
        }
    }

    /// The span of softirq `vec`'s run on `cpu` that holds `ts`.
    fn softirq_span_at(&self, cpu: u32, vec: u8, ts: u64) -> Option<u32> {
        let sp = &self.tl.spans;
        let list = self.tl.irqs_by_cpu.get(cpu as usize)?;
        let n = list.partition_point(|&i| sp.end[i as usize] < ts);
        (list[n..].iter().take(16).copied()).find(|&i| {
            let k = i as usize;
            sp.kind[k] == SpanKind::Softirq && sp.key[k] == vec as u32 && sp.start[k] <= ts
        })
    }

    /// The hard irq at whose exit softirq run `run` began: the last handler on its CPU
    /// to end before it, with only softirq runs between (the same loop). None when the
    /// run was ksoftirqd's or a task's (`local_bh_enable`), or its start was not traced.
    fn irq_exit_before(&self, run: u32) -> Option<u32> {
        let sp = &self.tl.spans;
        let r = run as usize;
        if sp.flags[r] & (span::KSOFTIRQD | span::IN_TASK | span::START_UNKNOWN) != 0 {
            return None;
        }
        let list = self.tl.irqs_by_cpu.get(sp.cpu[r] as usize)?;
        let n = list.partition_point(|&i| sp.end[i as usize] <= sp.start[r]);
        let mut from = sp.start[r];
        for &i in list[..n].iter().rev().take(16) {
            let k = i as usize;
            match sp.kind[k] {
                SpanKind::Hardirq if from - sp.end[k] <= LOOP_GAP_NS => return Some(sp.key[k]),
                SpanKind::Softirq if from - sp.end[k] <= LOOP_GAP_NS => from = sp.start[k],
                _ => return None,
            }
        }
        None
    }

    /// Who queued work edge `e`, in words, with the interrupt behind it when a softirq
    /// (a tasklet) did: `softirq TASKLET (raised by irq 16 (ehci_hcd))`, or, when the
    /// trace has no `softirq_raise`, `(run at the exit of irq 16 (ehci_hcd))`.
    pub(in crate::explain) fn queued_by(&self, e: &crate::timeline::Edge) -> (String, Option<u32>) {
        let who = self.ctx(e.from, e.from_tid, e.from_cpu, e.ts);
        let irq = self.origin_irq(e.from, e.from_cpu, e.ts);
        match irq {
            Some((n, how)) if !who.starts_with("irq ") => {
                let name = self.ctx(Ctx::Hardirq { irq: n }, e.from_tid, e.from_cpu, e.ts);
                let said = match how {
                    IrqEvidence::Raised => format!("raised by {name}"),
                    IrqEvidence::RanAtExit => format!("run at the exit of {name}"),
                };
                (format!("{who} ({said})"), Some(n))
            }
            _ => (who, irq.map(|x| x.0)),
        }
    }

    /// Work edge `e` as a link: queued (by whom, and the interrupt behind it) to started.
    pub(in crate::explain) fn work_link_of(&self, e: &crate::timeline::Edge) -> RawLink {
        let f = self.s.get(Sym(e.key)).to_string();
        let (by, irq) = self.queued_by(e);
        RawLink {
            kind: LinkKind::Work,
            what: format!(
                "{f} queued by {by} on CPU{}, started in {} on CPU{}",
                e.from_cpu,
                self.task(e.to_tid),
                e.to_cpu
            ),
            key: (LinkKind::Work, f, 1),
            start: e.ts,
            end: e.at,
            cpu: e.to_cpu,
            tid: e.to_tid,
            preempted: false,
            irq,
            deferred: None,
            defer_from: None,
            queue: None,
            untraced_end: false,
            waits_for: None,
        }
    }

    /// The links of the chain that starts with `tid` at `s`, up to `h`: forward along the
    /// hand-offs from `tid`, back from the wakeup of `reply` (the thread that answered)
    /// where the forward chain does not reach it, and behind every task that woke one of
    /// the chain's tasks from a block (`waitfor`).
    pub(in crate::explain) fn chain(&self, tid: i32, reply: Option<i32>, s: u64, h: u64) -> Chain {
        let tl = self.tl;
        let mut chain: FxHashSet<i32> = FxHashSet::default();
        chain.insert(tid);
        let mut links = Vec::new();
        let mut nth: FxHashMap<(LinkKind, String), u32> = FxHashMap::default();
        let mut key = |k: LinkKind, name: String| {
            let n = nth.entry((k, name.clone())).or_default();
            *n += 1;
            (k, name, *n)
        };
        let first = self.edge_ts.partition_point(|&t| t < s);
        for &ei in &self.edges[first..] {
            let e = &tl.edges[ei as usize];
            if e.ts > h {
                break;
            }
            let from_chain = match e.from {
                Ctx::Task { tid } => chain.contains(&tid),
                // A timer callback acts for whoever armed the timer.
                Ctx::Timer { edge } => {
                    let t = &tl.edges[edge as usize];
                    matches!(t.from, Ctx::Task { tid } if chain.contains(&tid))
                }
                _ => false,
            };
            if !from_chain {
                continue;
            }
            match e.kind {
                EdgeKind::Wakeup => {
                    chain.insert(e.to_tid);
                }
                EdgeKind::Work => {
                    chain.insert(e.to_tid);
                    let mut l = self.work_link_of(e);
                    l.key = key(LinkKind::Work, l.key.1);
                    links.push(l);
                }
                EdgeKind::Timer if e.val != u64::MAX && e.val2 != u64::MAX => {
                    let f = self.s.get(Sym(e.key)).to_string();
                    // From the expiry on the trace clock, as `--timer` and `latency` count it.
                    let due = self.clock.due(tl, ei as usize).unwrap_or(e.at);
                    links.push(RawLink {
                        kind: LinkKind::Timer,
                        key: key(LinkKind::Timer, f.clone()),
                        start: due,
                        end: e.at,
                        cpu: e.to_cpu,
                        tid: e.to_tid,
                        what: format!("hrtimer {f} fired on CPU{}", e.to_cpu),
                        preempted: false,
                        irq: None,
                        deferred: None,
                        defer_from: None,
                        queue: None,
                        untraced_end: false,
                        waits_for: None,
                    });
                }
                _ => {}
            }
        }
        if let Some(r) = reply {
            let back = self.reply_handoffs((tid, r), s, h, &chain);
            chain.insert(r);
            chain.extend(back.tids);
            for mut l in back.links {
                l.key = key(l.kind, l.key.1);
                links.push(l);
            }
        }
        let behind = self.waits_for(&chain, s, h);
        // Waits for a CPU of every task on the chain (the wakers' are in `behind`).
        let sp = &tl.spans;
        let first = self.runnable.partition_point(|&i| sp.start[i as usize] < s);
        for &ri in &self.runnable[first..] {
            let i = ri as usize;
            if sp.start[i] > h {
                break;
            }
            if !chain.contains(&sp.tid[i]) || sp.flags[i] & span::END_UNKNOWN != 0 {
                continue;
            }
            let mut l = self.run_link(i);
            l.key = key(LinkKind::Run, std::mem::take(&mut l.key.1));
            // A chain task that also woke a sleeper of the chain: its wait inside that
            // sleep held the sleeper too.
            l.waits_for = (behind.waits.iter())
                .find(|w| w.waker == l.tid && w.from < l.end && l.start < w.woke)
                .map(|w| w.sleeper);
            links.push(l);
        }
        for mut l in behind.links {
            l.key = key(LinkKind::Run, std::mem::take(&mut l.key.1));
            links.push(l);
        }
        chain.extend(behind.tids);
        links.sort_by_key(|l| (l.start, l.end));
        Chain {
            links,
            tasks: chain,
            waits: behind.waits,
        }
    }

    /// System calls the chain's other tasks made in `[s, h]` (the responder's write...):
    /// steps of the chain, shown, not blamed.
    pub(in crate::explain) fn syscall_steps(
        &self,
        chain: &FxHashSet<i32>,
        me: i32,
        s: u64,
        h: u64,
    ) -> Vec<(u64, u64, u32, String)> {
        let tl = self.tl;
        let mut seen: FxHashMap<(i32, u32), u32> = FxHashMap::default();
        let mut out = Vec::new();
        let theirs = |c: &crate::timeline::Syscall| c.tid != me && chain.contains(&c.tid);
        for (_, c) in tl.syscalls.starting_in_where(s, h, theirs) {
            let n = seen.entry((c.tid, c.key)).or_default();
            *n += 1;
            if *n > 2 {
                continue;
            }
            out.push((
                c.start,
                c.dur(),
                c.cpu,
                format!(
                    "{} {} on CPU{}",
                    self.task(c.tid),
                    tl.call_words(self.s, &c),
                    c.cpu
                ),
            ));
        }
        out
    }

    /// The wait for a CPU that runnable span `i` is: who woke it (or that it was
    /// preempted), and whether its end is inferred. Its template key is its task's
    /// normalised name, first of that name.
    pub(in crate::explain) fn run_link(&self, i: usize) -> RawLink {
        let (tl, sp) = (self.tl, &self.tl.spans);
        let cause = RunCause::from_key(sp.key[i]);
        let by = if sp.aux[i] != NONE {
            let e = &tl.edges[sp.aux[i] as usize];
            format!(
                " (woken by {})",
                self.ctx(e.from, e.from_tid, e.from_cpu, e.ts)
            )
        } else if cause == RunCause::Preempted {
            " (preempted)".into()
        } else {
            String::new()
        };
        let inferred = sp.flags[i] & span::INFERRED != 0;
        RawLink {
            kind: LinkKind::Run,
            key: (LinkKind::Run, norm_comm(self.s.get(tl.comm(sp.tid[i]))), 1),
            start: sp.start[i],
            end: sp.end[i],
            cpu: sp.cpu[i],
            tid: sp.tid[i],
            what: format!(
                "{}{by} waited for CPU{}{}",
                self.task(sp.tid[i]),
                sp.cpu[i],
                untraced_words(inferred)
            ),
            preempted: cause == RunCause::Preempted,
            irq: None,
            deferred: None,
            defer_from: None,
            queue: None,
            untraced_end: inferred,
            waits_for: None,
        }
    }

    /// All waits in `[s, h]`, whoever they belong to: for cycles whose chain the trace
    /// does not connect (device interrupts, untraced hand-offs).
    pub(in crate::explain) fn all_waits(&self, s: u64, h: u64) -> Vec<RawLink> {
        let tl = self.tl;
        let sp = &tl.spans;
        let mut links = Vec::new();
        let first = self.edge_ts.partition_point(|&t| t < s);
        for &ei in &self.edges[first..] {
            let e = &tl.edges[ei as usize];
            if e.ts > h {
                break;
            }
            if e.kind == EdgeKind::Work {
                let mut l = self.work_link_of(e);
                // Not from the chain: an interrupt, the trace's or one it did not record.
                l.irq = Some(l.irq.unwrap_or(u32::MAX));
                links.push(l);
            }
        }
        let first = self.runnable.partition_point(|&i| sp.start[i as usize] < s);
        for &ri in &self.runnable[first..] {
            let i = ri as usize;
            if sp.start[i] > h {
                break;
            }
            if sp.tid[i] <= 0 || sp.flags[i] & span::END_UNKNOWN != 0 {
                continue;
            }
            links.push(self.run_link(i));
        }
        links.sort_by_key(|l| (l.start, l.end));
        links
    }

    /// A softirq link's durations over the whole trace, by its name (`NET_RX pending`:
    /// raise to entry; `NET_RX run`: the runs of that vector).
    fn softirq_usual(&self, name: &str) -> Vec<u64> {
        let tl = self.tl;
        let (vec, part) = name.split_once(' ').unwrap_or((name, ""));
        let Some(v) = SOFTIRQ_NAMES.iter().position(|n| *n == vec) else {
            return Vec::new();
        };
        let runs = (tl.edges.iter()).filter(|e| e.kind == EdgeKind::Softirq && e.key == v as u32);
        if part == "backlog" {
            // Work does not usually wait behind a backlog: all of it is excess.
            Vec::new()
        } else if part == "pending" {
            runs.map(|e| e.at - e.ts).collect()
        } else {
            runs.filter(|e| e.span != NONE)
                .map(|e| tl.spans.dur(e.span))
                .collect()
        }
    }

    /// Median of this link kind and name over the whole trace.
    pub(in crate::explain) fn usual_in_trace(&self, kind: LinkKind, name: &str) -> u64 {
        let known = |m: &FxHashMap<_, u64>| m.get(&(kind, name.to_string())).copied();
        if let Some(v) = known(&self.trace_median.lock().unwrap_or_else(|e| e.into_inner())) {
            return v;
        }
        let tl = self.tl;
        let mut v: Vec<u64> = match kind {
            LinkKind::Run => {
                let sp = &tl.spans;
                self.runnable
                    .iter()
                    .map(|&i| i as usize)
                    .filter(|&i| {
                        sp.flags[i] & span::END_UNKNOWN == 0
                            && norm_comm(self.s.get(tl.comm(sp.tid[i]))) == name
                    })
                    .map(|i| sp.end[i] - sp.start[i])
                    .collect()
            }
            LinkKind::Work => tl
                .edges
                .iter()
                .filter(|e| e.kind == EdgeKind::Work && self.s.get(Sym(e.key)) == name)
                .map(|e| e.at - e.ts)
                .collect(),
            LinkKind::Softirq => self.softirq_usual(name),
            LinkKind::Timer => tl
                .edges
                .iter()
                .filter(|e| {
                    e.kind == EdgeKind::Timer
                        && e.val != u64::MAX
                        && e.val2 != u64::MAX
                        && self.s.get(Sym(e.key)) == name
                })
                .map(|e| e.val2.saturating_sub(e.val))
                .collect(),
        };
        v.sort_unstable();
        // Few samples: the fastest is the best guess of "usual" (the slow one may be the
        // very miss being explained).
        let m = if v.len() < 3 {
            v.first().copied().unwrap_or(0)
        } else {
            v[(v.len() - 1) / 2]
        };
        (self.trace_median.lock().unwrap_or_else(|e| e.into_inner()))
            .insert((kind, name.to_string()), m);
        m
    }
}
/// `[s, h]` minus the union of the links' intervals: time no wait explains (the chain's
/// tasks computing, sleeping, or the device answering).
pub(in crate::explain) fn uncovered(links: &[RawLink], s: u64, h: u64) -> Vec<(u64, u64)> {
    let mut iv: Vec<(u64, u64)> = links
        .iter()
        .map(|l| (l.start.max(s), l.end.min(h)))
        .filter(|(a, b)| b > a)
        .collect();
    iv.sort_unstable();
    let mut out = Vec::new();
    let mut at = s;
    for (a, b) in iv {
        if a > at {
            out.push((at, a));
        }
        at = at.max(b);
    }
    if h > at {
        out.push((at, h));
    }
    out
}
