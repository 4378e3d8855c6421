//! What a window of a long trace starts from ([`Builder::carried`]): the state the
//! builder of the window before it holds, with every edge an open state points at
//! copied into the new timeline, and the context an open sample still needs.

use super::*;

/// The edges a carried builder copied ([`Builder::carried`]): old index → new.
#[derive(Default)]
struct EdgeCopy(FxHashMap<u32, u32>);

impl EdgeCopy {
    /// Edge `i` of `old` copied into `new` (once), its new index; [`NONE`] stays so.
    /// The timer whose callback caused it is copied too (its own cause is not).
    fn copy(&mut self, i: u32, old: &Timeline, new: &mut Timeline) -> u32 {
        self.copy_to(i, old, new, 1)
    }

    fn copy_to(&mut self, i: u32, old: &Timeline, new: &mut Timeline, depth: u8) -> u32 {
        let Some(e) = old.edges.get(i as usize) else {
            return NONE;
        };
        if let Some(&j) = self.0.get(&i) {
            return j;
        }
        let mut e = *e;
        // What it led to is in the old timeline ([`EdgeCopy::relink`] mends the links
        // between copies).
        (e.span, e.link) = (NONE, NONE);
        let cause = match e.from {
            Ctx::Timer { edge } => Some(edge),
            _ => None,
        };
        if cause.is_some() {
            e.from = Ctx::Unknown;
        }
        let j = new.edges.len() as u32;
        new.edges.push(e);
        self.0.insert(i, j);
        if let (Some(t), 1..) = (cause, depth) {
            let t = self.copy_to(t, old, new, depth - 1);
            new.edges[j as usize].from = Ctx::Timer { edge: t };
        }
        j
    }

    /// `c` as the new timeline names it: a timer's context points at its copied edge.
    fn ctx(&mut self, c: Ctx, old: &Timeline, new: &mut Timeline) -> Ctx {
        match c {
            Ctx::Timer { edge } => Ctx::Timer {
                edge: self.copy(edge, old, new),
            },
            c => c,
        }
    }

    /// Links each copied timer edge to the copy of the wakeup it made, when copied.
    fn relink(&self, old: &Timeline, new: &mut Timeline) {
        for (&i, &j) in &self.0 {
            let link = old.edges[i as usize].link;
            if let Some(&l) = self.0.get(&link) {
                new.edges[j as usize].link = l;
            }
        }
    }
}

/// Timer expiries a window carries at most for the clock estimate (see
/// `Builder::carry_clock`).
const CLOCK_EDGES: usize = 4096;

/// How far back an armed timer past its due time counts as a wait still open (see
/// `Builder::carry_context`): an entry overdue by more is one whose cancel or expiry the
/// trace lacks.
const OVERDUE_REACH_NS: u64 = 1_000_000_000;

/// Spans a window carries at most as context for a wait still open, shared among the
/// CPUs (see `Builder::carry_context`): about 10 MB.
const CONTEXT_SPANS: usize = 1 << 18;

impl Builder {
    /// A builder for a window of the same stream that begins now: it starts knowing
    /// what this one knows of the state, so its first stretch is not blind and a sample
    /// open now is whole in it: who runs on each CPU since when, each task's state since
    /// when and the system call it is in, the wakeup a waiting task waits on, the work
    /// item running; the handlers, tasklets, function calls and irqs-off sections open
    /// on each CPU; the softirqs raised, hrtimers armed and work queued; the names,
    /// priorities and forks (which life of a pid reuse a sample is). An edge an open
    /// state points at is copied into the new timeline (its span not yet made).
    pub fn carried(&self) -> Builder {
        let mut b = Builder::new();
        let t = &self.tl;
        b.tl.comms.clone_from(&t.comms);
        b.tl.prios.clone_from(&t.prios);
        b.tl.irq_names.clone_from(&t.irq_names);
        b.tl.syscall_names.clone_from(&t.syscall_names);
        b.tl.forks.clone_from(&t.forks);
        // What the trace so far has shown: an event earlier than one already taken is
        // late in the new window too, and the event kinds seen decide as they would
        // over the whole trace (a sched_wakeup after sched_waking was seen).
        b.tl.last_ts = t.last_ts;
        b.tl.seen = t.seen;
        b.tl.cpus = t.cpus;
        if let Some(last) = self.cpus.len().checked_sub(1) {
            b.cpu(last as u32);
        }
        let mut edges = EdgeCopy::default();
        b.cpus = (self.cpus.iter())
            .map(|c| self.carried_cpu(c, &mut b.tl, &mut edges))
            .collect();
        let mut tasks: Vec<(&i32, &Task)> = self.tasks.iter().collect();
        // Edges are copied in one order whatever the map's.
        tasks.sort_unstable_by_key(|(&tid, _)| tid);
        b.tasks = (tasks.into_iter())
            .map(|(&tid, t)| {
                let mut t = t.clone();
                t.edge = edges.copy(t.edge, &self.tl, &mut b.tl);
                if let Some(w) = t.work.as_mut() {
                    w.edge = edges.copy(w.edge, &self.tl, &mut b.tl);
                }
                if let Some(r) = t.raced.as_mut() {
                    r.1 = edges.ctx(r.1, &self.tl, &mut b.tl);
                }
                (tid, t)
            })
            .collect();
        // The expiries a sample still to settle hangs on (a callback running, the timer
        // behind a wakeup still waiting), not those an armed timer's context names.
        let clock_from = (b.tl.edges.iter())
            .filter(|e| e.kind == EdgeKind::Timer)
            .map(|e| e.at)
            .min();
        let mut armed: Vec<(&u64, &Armed)> = self.armed.iter().collect();
        armed.sort_unstable_by_key(|(&k, _)| k);
        for (&k, a) in armed {
            let ctx = edges.ctx(a.ctx, &self.tl, &mut b.tl);
            b.armed.insert(k, Armed { ctx, ..*a });
        }
        let mut queued: Vec<(&u64, &Queued)> = self.queued.iter().collect();
        queued.sort_unstable_by_key(|(&k, _)| k);
        for (&k, q) in queued {
            let ctx = edges.ctx(q.ctx, &self.tl, &mut b.tl);
            b.queued.insert(k, Queued { ctx, ..*q });
        }
        let mut flying: Vec<(&u64, &InFlight)> = self.in_flight.iter().collect();
        flying.sort_unstable_by_key(|(&k, _)| k);
        for (&k, &(ts, cpu, ctx, tid)) in flying {
            let ctx = edges.ctx(ctx, &self.tl, &mut b.tl);
            b.in_flight.insert(k, (ts, cpu, ctx, tid));
        }
        self.carry_context(&mut b.tl);
        // A sample open now that crosses lost events is uncertain in the window it ends
        // in, as in the whole trace.
        let since = self.open_since();
        b.tl.lost = (self.tl.lost.iter())
            .filter(|l| l.to >= since)
            .copied()
            .collect();
        self.carry_clock(clock_from, &mut b.tl, &mut edges);
        self.carry_children(&mut b.tl);
        edges.relink(&self.tl, &mut b.tl);
        b.timer_armed.clone_from(&self.timer_armed);
        b.timer_open.clone_from(&self.timer_open);
        b.cpuless_calls.clone_from(&self.cpuless_calls);
        b.call_ids = self.call_ids;
        b.timer_offset = self.timer_offset;
        b.last_comm = self.last_comm;
        b
    }

    /// When the oldest sample still open began, of those explain's modes settle by their
    /// start: a wait for a CPU; a handler, tasklet or irqs-off / preempt-off section
    /// open; a softirq raised or a tasklet scheduled and not yet run; a function call
    /// not yet returned; work queued and not yet started; a timer past its due time; a
    /// real-time task's sleep (a block on a lock's holder is an inversion's sample). A pass in windows keeps a window until these have ended, but
    /// looks back 1 s at most: state the trace never closes (work whose start was lost,
    /// a real-time thread asleep for good) would hold every window, and a sample open
    /// longer is settled where it ends, from the state carried. None: nothing open.
    pub fn oldest_sample(&self) -> Option<u64> {
        let reach = self.tl.last_ts.saturating_sub(OVERDUE_REACH_NS);
        let tasks = self.tasks.iter().filter_map(|(tid, t)| match t.state {
            St::Runnable => Some(t.since),
            St::Sleeping if self.tl.prios.get(tid).is_some_and(|&p| p < 100) => Some(t.since),
            _ => None,
        });
        let cpus = self.cpus.iter().flat_map(|c| {
            let frames = c.frames.iter().map(|f| f.start);
            let pending = c.pending.iter().flatten().map(|p| p.0);
            let sections = [c.irqsoff, c.preemptoff, c.tasklet].into_iter().flatten();
            let calls = c.calls.iter().map(|f| f.start);
            let scheduled = c.tasklet_sched.map(|t| t.0);
            (frames.chain(pending).chain(sections.map(|x| x.0)))
                .chain(calls)
                .chain(scheduled)
        });
        let cpuless = self.cpuless_calls.values().flatten().map(|f| f.start);
        let cpus = cpus.chain(cpuless);
        let queued = self.queued.values().map(|q| q.ts);
        let now = self.tl.last_ts as i64;
        let overdue = (self.timer_offset.into_iter())
            .flat_map(|off| self.armed.values().map(move |a| a.soft as i64 + off))
            .filter(|&due| due < now)
            .map(|due| due.max(0) as u64);
        let all = tasks.chain(cpus).chain(queued).chain(overdue);
        all.min().map(|t| t.max(reach))
    }

    /// When the oldest state still open began: a task running, waiting or in a system
    /// call, a handler or function call on a CPU.
    fn open_since(&self) -> u64 {
        let tasks = self.tasks.values().flat_map(|t| {
            let state = matches!(t.state, St::Running | St::Runnable).then_some(t.since);
            state.into_iter().chain(t.sys.map(|s| s.start))
        });
        let cpus = self.cpus.iter().flat_map(|c| {
            let frames = c.frames.iter().map(|f| f.start);
            frames.chain(c.calls.iter().map(|f| f.start))
        });
        tasks.chain(cpus).min().unwrap_or(self.tl.last_ts)
    }

    /// Copies into `tl` who held each CPU since the oldest wait still open began (the
    /// runs and handlers that end after it), so that a window measuring that wait when
    /// it ends knows who held the CPU all along, not only since the window began. At most
    /// [`CONTEXT_SPANS`] in all, the latest, shared among the CPUs.
    fn carry_context(&self, tl: &mut Timeline) {
        let waits = (self.tasks.values())
            .filter(|t| t.state == St::Runnable)
            .map(|t| t.since);
        // A timer past its due time: its lateness is a wait too.
        let now = self.tl.last_ts as i64;
        let overdue = (self.timer_offset.into_iter())
            .flat_map(|off| self.armed.values().map(move |a| a.soft as i64 + off))
            .filter(|&due| due < now)
            .map(|due| (due.max(0) as u64).max(self.tl.last_ts.saturating_sub(OVERDUE_REACH_NS)));
        let Some(from) = waits.chain(overdue).min() else {
            return;
        };
        // Shared among the CPUs and their two lists.
        let per_cpu = CONTEXT_SPANS / (2 * self.tl.runs_by_cpu.len().max(1));
        let old = &self.tl;
        let sp = &old.spans;
        for c in 0..old.runs_by_cpu.len().min(tl.runs_by_cpu.len()) {
            for (lists, into) in [(&old.runs_by_cpu, 0), (&old.irqs_by_cpu, 1)] {
                let l = &lists[c];
                let wanted = l.partition_point(|&i| sp.end[i as usize] <= from);
                let first = wanted.max(l.len().saturating_sub(per_cpu));
                if first > wanted {
                    let at = sp.start[l[first] as usize];
                    let cut = &mut tl.anomalies.context_cut;
                    *cut = (*cut).max(Some(at));
                }
                for &i in &l[first..] {
                    let i = i as usize;
                    let j = tl.spans.push(
                        sp.kind[i],
                        sp.cpu[i],
                        sp.tid[i],
                        sp.comm[i],
                        sp.start[i],
                        sp.end[i],
                        sp.key[i],
                        NONE,
                        sp.flags[i],
                    );
                    match into {
                        0 => tl.runs_by_cpu[c].push(j),
                        _ => tl.irqs_by_cpu[c].push(j),
                    }
                }
            }
        }
    }

    /// Copies into `tl` the hrtimer expiries that an expiry still to settle (from
    /// `from`, or one to come soon) takes its clock offset from
    /// ([`crate::timeline::TimerClock`]: its neighbours within 20 ms), at most
    /// [`CLOCK_EDGES`], the latest: so that a window measures a late timer against the
    /// clock the whole trace would give it. They end before the window's own stretch,
    /// which settles none of them.
    fn carry_clock(&self, from: Option<u64>, tl: &mut Timeline, edges: &mut EdgeCopy) {
        let oldest = from.unwrap_or(u64::MAX).min(self.tl.last_ts);
        let bound = oldest.saturating_sub(crate::timeline::clock::CLOCK_WINDOW_NS);
        let mut take = Vec::new();
        for (i, e) in self.tl.edges.iter().enumerate().rev() {
            if e.kind != EdgeKind::Timer {
                continue;
            }
            if e.at < bound || take.len() == CLOCK_EDGES {
                break;
            }
            take.push(i as u32);
        }
        for i in take.into_iter().rev() {
            edges.copy(i, &self.tl, tl);
        }
    }

    /// Copies into `tl` the calls that returned inside a function call still open: its
    /// whole subtree (the direct children its measure lists; every descendant, whose own
    /// time `explain --function` gives by function), at most [`CONTEXT_SPANS`], the
    /// latest. They returned before the window's own stretch, which settles none of them.
    fn carry_children(&self, tl: &mut Timeline) {
        let open = (self.cpus.iter().map(|c| &c.calls))
            .chain(self.cpuless_calls.values())
            .flatten();
        let mut ids: rustc_hash::FxHashSet<u32> = open.clone().map(|f| f.id).collect();
        let Some(oldest) = open.map(|f| f.start).min() else {
            return;
        };
        // Calls are listed as they return, a call after its callees: from the latest
        // back, a call's parent is met before it.
        let mut kids: Vec<Call> = (self.tl.calls.iter().rev())
            .take_while(|c| c.exit >= oldest)
            .filter(|c| ids.contains(&c.parent) && ids.insert(c.id))
            .take(CONTEXT_SPANS + 1)
            .copied()
            .collect();
        if kids.len() > CONTEXT_SPANS {
            kids.pop();
            let at = kids.last().map(|c| c.exit);
            tl.anomalies.context_cut = tl.anomalies.context_cut.max(at);
        }
        kids.reverse();
        tl.calls.extend(kids);
    }

    /// What `c` knows that a window beginning now starts from ([`Builder::carried`]).
    fn carried_cpu(&self, c: &CpuState, tl: &mut Timeline, edges: &mut EdgeCopy) -> CpuState {
        let old = &self.tl;
        let frames = (c.frames.iter())
            .map(|f| Frame {
                kind: match f.kind {
                    FrameKind::Softirq(v, e, o) => FrameKind::Softirq(v, edges.copy(e, old, tl), o),
                    FrameKind::Timer(e, sym) => FrameKind::Timer(edges.copy(e, old, tl), sym),
                    k @ FrameKind::Irq(_) => k,
                },
                start: f.start,
            })
            .collect();
        let mut pending = c.pending;
        for p in pending.iter_mut().flatten() {
            p.1 = edges.ctx(p.1, old, tl);
        }
        let tasklet_sched = c
            .tasklet_sched
            .map(|(ts, ctx, tid)| (ts, edges.ctx(ctx, old, tl), tid));
        CpuState {
            curr: c.curr,
            curr_since: c.curr_since,
            curr_comm: c.curr_comm,
            curr_flags: c.curr_flags,
            curr_bound: c.curr_bound,
            frames,
            pending,
            irqsoff: c.irqsoff,
            preemptoff: c.preemptoff,
            tasklet: c.tasklet,
            tasklet_sched,
            last_ts: c.last_ts,
            seen: c.seen,
            switched: c.switched,
            origin: c.origin,
            anon_hard: c.anon_hard,
            anon_soft: c.anon_soft,
            calls: c.calls.clone(),
        }
    }
}
