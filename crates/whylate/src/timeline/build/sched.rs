//! Scheduler events: switches, wakeups, forks, exits, execs.

use super::*;

impl Builder {
    /// Scheduler events: switches, wakeups, forks, exits, execs.
    pub(super) fn on_sched(&mut self, at: At, e: &Event, strings: &Interner) {
        let At {
            c, cpu, ts, ctx, ..
        } = at;
        match &e.kind {
            Kind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } => {
                self.tl.set_prio(*prev_pid, *prev_prio, ts);
                self.tl.set_prio(*next_pid, *next_prio, ts);
                if *prev_pid == 0 {
                    *self.tl.anomalies.traced_from_idle.entry(cpu).or_default() += 1;
                }
                if !self.cpus[c].switched {
                    self.cpus[c].switched = true;
                    self.tl.anomalies.switching_cpus.insert(cpu);
                }
                self.switch(
                    c,
                    ts,
                    *prev_pid,
                    *prev_comm,
                    *prev_state,
                    *next_pid,
                    *next_comm,
                    strings,
                );
            }
            Kind::SchedWaking {
                comm,
                pid,
                prio,
                target_cpu,
            } => {
                self.tl.set_prio(*pid, *prio, ts);
                self.learn(*pid, *comm, strings);
                self.wake(c, ts, ctx, *pid, *target_cpu, Cause::Woken, true);
            }
            Kind::SchedWakeup {
                comm,
                pid,
                prio,
                target_cpu,
                new,
            } => {
                self.tl.set_prio(*pid, *prio, ts);
                self.learn(*pid, *comm, strings);
                let cause = if *new { Cause::New } else { Cause::Woken };
                self.wake(c, ts, ctx, *pid, *target_cpu, cause, false);
            }
            Kind::SchedFork {
                child_pid,
                child_comm,
                ..
            } => {
                // pid reuse: a fork names a fresh task, whatever ran under that pid before.
                self.close_task(*child_pid, ts);
                self.tl.forks.entry(*child_pid).or_default().push(ts);
                self.tasks.insert(*child_pid, Task::new(cpu));
                self.learn(*child_pid, *child_comm, strings);
            }
            Kind::SchedMigrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } => self.migrate(*pid, (*orig_cpu, *dest_cpu), ts),
            Kind::SchedExit { pid, .. } => {
                if let Some(t) = self.tasks.get_mut(pid) {
                    t.sys = None;
                    t.work = None;
                }
            }
            Kind::SchedExec { pid, .. } if e.comm != Sym::EMPTY => {
                self.set_comm(*pid, e.comm);
            }
            _ => {}
        }
    }

    /// An event shows `tid` running on CPU `c` although no switch to it was seen.
    pub(super) fn implicit_switch(&mut self, c: usize, tid: i32, comm: Sym, ts: u64) {
        let cpu = c as u32;
        let cs = &mut self.cpus[c];
        let old = cs.curr;
        let first = !cs.seen && old < 0;
        if old >= 0 {
            // The old task left at some point after its last event: end its run there.
            let end = cs.last_ts.max(cs.curr_since);
            let (since, ocomm, fl) = (cs.curr_since, cs.curr_comm, cs.curr_flags);
            let bound = ts.saturating_sub(end) + cs.inferred_start();
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                old,
                ocomm,
                since,
                end,
                prio_key(&self.tl, old),
                NONE,
                fl | span::INFERRED,
            );
            self.tl.inferred_bound.insert(i, bound);
            self.tl.runs_by_cpu[c].push(i);
            if old > 0 {
                if let Some(t) = self.tasks.get_mut(&old) {
                    if t.state == St::Running {
                        t.state = St::Unknown;
                    }
                }
            }
            self.tl.anomalies.implicit_switches += 1;
            if old == 0 && self.owns(ts) {
                *self.tl.anomalies.implicit_from_idle.entry(cpu).or_default() += 1;
            }
        }
        let cs = &mut self.cpus[c];
        // The switch-in came after this CPU's event before (where `old` still ran).
        let after = cs.seen.then_some(cs.last_ts);
        cs.curr = tid;
        cs.curr_since = ts;
        cs.curr_comm = comm;
        cs.curr_flags = if first || old < 0 {
            span::START_UNKNOWN
        } else {
            span::INFERRED
        };
        cs.curr_bound = after.map_or(0, |a| ts.saturating_sub(a));
        if tid > 0 {
            let wait = self.run_task(tid, cpu, ts, true);
            if let (Some(i), Some(after)) = (wait, after) {
                let bound = ts.saturating_sub(after.max(self.tl.spans.start[i as usize]));
                self.tl.inferred_bound.insert(i, bound);
                if old == 0 && self.owns(ts) {
                    let e = self.tl.anomalies.idle_exit_bound.entry(cpu).or_default();
                    *e = (e.0 + 1, e.1.max(bound));
                }
            }
        }
    }

    /// `tid` starts running on `cpu` at `ts`: close its runnable/sleep state. The
    /// runnable span it closes, if any.
    pub(super) fn run_task(&mut self, tid: i32, cpu: u32, ts: u64, inferred: bool) -> Option<u32> {
        let t = self.tasks.entry(tid).or_insert_with(|| Task::new(cpu));
        let (state, since, sflags, cause, edge, bits, prev_cpu) = (
            t.state,
            t.since,
            t.sflags,
            t.cause,
            t.edge,
            t.sleep_bits,
            t.cpu,
        );
        t.state = St::Running;
        t.since = ts;
        t.sflags = 0;
        t.edge = NONE;
        t.cpu = cpu;
        t.raced = None;
        if prev_cpu != cpu && prev_cpu != u32::MAX {
            if let Some(s) = t.sys.as_mut() {
                s.migrations += 1;
            }
        }
        let comm = self.tl.comm(tid);
        let inf = if inferred { span::INFERRED } else { 0 };
        // Moved while it waited: the CPU it waited on longest (this one, unless another
        // held it longer).
        let last = ts.saturating_sub(t.waits_on.1);
        let wait_cpu = match t.longest {
            (c, ns) if c != u32::MAX && ns > last => c,
            _ => cpu,
        };
        t.waits_on = (u32::MAX, 0);
        t.longest = (u32::MAX, 0);
        match state {
            St::Runnable => {
                let fl = sflags | inf | self.loss_flag(u32::MAX, since, ts);
                let i = self.tl.spans.push(
                    SpanKind::Runnable,
                    wait_cpu,
                    tid,
                    comm,
                    since,
                    ts,
                    cause as u32,
                    edge,
                    fl,
                );
                if edge != NONE {
                    self.tl.edges[edge as usize].span = i;
                }
                Some(i)
            }
            St::Sleeping => {
                // Switched in with no wakeup seen: the wakeup was not traced or was lost.
                // The sleep ended somewhere before `ts`; the wait is unknown.
                self.tl.anomalies.switch_in_without_wakeup += 1;
                let fl = sflags | span::INFERRED | self.loss_flag(u32::MAX, since, ts);
                self.tl.spans.push(
                    SpanKind::Sleep,
                    cpu,
                    tid,
                    comm,
                    since,
                    ts,
                    bits as u32,
                    NONE,
                    fl,
                );
                None
            }
            _ => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn switch(
        &mut self,
        c: usize,
        ts: u64,
        prev: i32,
        prev_comm: Sym,
        prev_state: TaskState,
        next: i32,
        next_comm: Sym,
        strings: &Interner,
    ) {
        let cpu = c as u32;
        self.learn(prev, prev_comm, strings);
        self.learn(next, next_comm, strings);
        let cs = &mut self.cpus[c];
        let (curr, since, cflags) = (cs.curr, cs.curr_since, cs.curr_flags);
        if curr >= 0 && curr != prev {
            // We had someone else running: their switch out is missing.
            self.tl.anomalies.switch_mismatch += 1;
            let end = cs.last_ts.max(since);
            let bound = ts.saturating_sub(end) + cs.inferred_start();
            let ccomm = cs.curr_comm;
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                curr,
                ccomm,
                since,
                end,
                prio_key(&self.tl, curr),
                NONE,
                cflags | span::INFERRED,
            );
            self.tl.inferred_bound.insert(i, bound);
            self.tl.runs_by_cpu[c].push(i);
            if let Some(t) = self.tasks.get_mut(&curr) {
                if t.state == St::Running {
                    t.state = St::Unknown;
                }
            }
        }
        // prev's run.
        let start_bound = (curr == prev).then(|| cs.inferred_start());
        let (pstart, pflags) = if curr == prev {
            (since, cflags)
        } else if curr < 0 {
            // First sight of this CPU: prev ran since before the trace.
            (ts, span::START_UNKNOWN)
        } else {
            // prev's switch-in was not traced: when it started is unknown.
            (ts, span::START_UNKNOWN | span::INFERRED)
        };
        {
            let fl = pflags | self.loss_flag(cpu, pstart, ts);
            let comm = if prev == 0 {
                prev_comm
            } else {
                self.tl.comm(prev)
            };
            let comm = if comm == Sym::EMPTY { prev_comm } else { comm };
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                prev,
                comm,
                pstart,
                ts,
                prio_key(&self.tl, prev),
                NONE,
                fl,
            );
            if let Some(b) = start_bound.filter(|_| fl & span::INFERRED != 0) {
                self.tl.inferred_bound.insert(i, b);
            }
            self.tl.runs_by_cpu[c].push(i);
        }
        if prev > 0 {
            let t = self.tasks.entry(prev).or_insert_with(|| Task::new(cpu));
            t.cpu = cpu;
            t.since = ts;
            t.sflags = 0;
            t.edge = NONE;
            let dead = matches!(prev_state, TaskState::Letters { bits, .. } if bits & 0x30 != 0);
            if dead {
                t.state = St::Dead;
            } else if prev_state.is_runnable() {
                t.state = St::Runnable;
                t.cause = Cause::Preempted;
            } else {
                t.state = St::Sleeping;
                t.sleep_bits = match prev_state {
                    TaskState::Letters { bits, .. } => bits,
                    _ => 0,
                };
            }
            let raced = t.raced.take();
            if dead {
                self.tasks.remove(&prev);
            } else if let (Some((wts, wctx, wcpu, wtid, target)), St::Sleeping) = (raced, t.state) {
                // Woken while it was still switching out: runnable from the switch on.
                let comm = self.tl.comm(prev);
                let edge = self.edge(Edge {
                    kind: EdgeKind::Wakeup,
                    ts: wts,
                    at: wts,
                    from_cpu: wcpu,
                    from_tid: wtid,
                    from: wctx,
                    to_tid: prev,
                    to_cpu: target,
                    key: comm.0,
                    val: 0,
                    val2: 0,
                    span: NONE,
                    link: NONE,
                });
                let t = self.tasks.get_mut(&prev).expect("present");
                t.state = St::Runnable;
                t.cause = Cause::Woken;
                t.edge = edge;
                t.sflags = span::RACED;
                t.by_waking = true;
            }
        }
        let cs = &mut self.cpus[c];
        cs.curr = next;
        cs.curr_since = ts;
        cs.curr_comm = next_comm;
        cs.curr_flags = 0;
        cs.curr_bound = 0;
        if next > 0 {
            self.run_task(next, cpu, ts, false);
            let comm = self.tl.comm(next);
            if comm != Sym::EMPTY {
                self.cpus[c].curr_comm = comm;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn wake(
        &mut self,
        c: usize,
        ts: u64,
        ctx: Ctx,
        pid: i32,
        target: i32,
        cause: Cause,
        waking: bool,
    ) {
        if pid <= 0 {
            return;
        }
        let cpu = c as u32;
        let from_tid = self.cpus[c].curr;
        let target = if target >= 0 { target as u32 } else { u32::MAX };
        let no_waking_yet = self.tl.seen[KindClass::SchedWaking as usize] == 0;
        let t = self.tasks.entry(pid).or_insert_with(|| Task::new(target));
        // The kernel traces a waking only for a task that went to sleep: a second one
        // while we think it is runnable means it ran and slept where we could not see
        // (an untraced CPU, lost events). Its earlier wait is unknown; start over.
        let rewoken = t.state == St::Runnable
            && t.cause == Cause::Woken
            && t.edge != NONE
            && ((waking && t.by_waking) || (!waking && !t.by_waking && no_waking_yet));
        if rewoken {
            self.tl.anomalies.rewoken_while_runnable += 1;
            t.state = St::Unknown;
        }
        // Running: a wakeup that found the task before it slept. Runnable: already woken
        // (sched_waking then sched_wakeup): the first is the true waker.
        if matches!(t.state, St::Running | St::Runnable) {
            if t.state == St::Running && waking {
                t.raced = Some((ts, ctx, cpu, from_tid, target));
            }
            if let (St::Running, Ctx::Timer { edge: te }) = (t.state, ctx) {
                // The timer fired before its sleeper got off the CPU: it never waited.
                let tedge = &mut self.tl.edges[te as usize];
                if tedge.to_tid < 0 {
                    tedge.to_tid = pid;
                }
            }
            return;
        }
        let (state, since, sflags, bits) = (t.state, t.since, t.sflags, t.sleep_bits);
        let comm = self.tl.comm(pid);
        if state == St::Sleeping {
            let fl = sflags | self.loss_flag(u32::MAX, since, ts);
            self.tl.spans.push(
                SpanKind::Sleep,
                target,
                pid,
                comm,
                since,
                ts,
                bits as u32,
                NONE,
                fl,
            );
        }
        let edge = self.edge(Edge {
            kind: EdgeKind::Wakeup,
            ts,
            at: ts,
            from_cpu: cpu,
            from_tid,
            from: ctx,
            to_tid: pid,
            to_cpu: target,
            key: comm.0,
            val: 0,
            val2: 0,
            span: NONE,
            link: NONE,
        });
        if let Ctx::Timer { edge: te } = ctx {
            let tedge = &mut self.tl.edges[te as usize];
            if tedge.to_tid < 0 {
                tedge.to_tid = pid;
                tedge.link = edge;
            }
        }
        let t = self.tasks.get_mut(&pid).expect("inserted above");
        t.state = St::Runnable;
        t.waits_on = (target, ts);
        t.longest = (u32::MAX, 0);
        t.since = ts;
        t.sflags = 0;
        t.cause = cause;
        t.edge = edge;
        t.by_waking = waking;
    }

    /// `pid` moved from one CPU's runqueue to another's: while it waits, the time on the
    /// one it leaves is remembered.
    fn migrate(&mut self, pid: i32, (orig, dest): (i32, i32), ts: u64) {
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        if t.state != St::Runnable || orig < 0 || dest < 0 {
            return;
        }
        let (on, from) = t.waits_on;
        let on = if on == u32::MAX { orig as u32 } else { on };
        let ns = ts.saturating_sub(from.max(t.since));
        if ns > t.longest.1 {
            t.longest = (on, ns);
        }
        t.waits_on = (dest as u32, ts);
    }

    pub(super) fn close_task(&mut self, pid: i32, _ts: u64) {
        self.tasks.remove(&pid);
    }
}
