//! Hard irqs, softirqs and tasklets: handler frames and the raise -> entry edges.

use super::*;

impl Builder {
    /// Hard irq handlers entered and left: their frames and spans.
    pub(super) fn on_irq(&mut self, at: At, e: &Event, _strings: &Interner) {
        let At {
            c, cpu, ts, curr, ..
        } = at;
        match &e.kind {
            Kind::IrqEntry { irq, name } => {
                let irq = *irq as u32;
                if *name != Sym::EMPTY {
                    self.tl.irq_names.insert(irq, *name);
                }
                self.cpus[c].frames.push(Frame {
                    kind: FrameKind::Irq(irq),
                    start: ts,
                });
            }
            Kind::IrqExit { irq, .. } => {
                let irq = *irq as u32;
                let cs = &mut self.cpus[c];
                cs.origin = BhOrigin::IrqExit;
                match pop_frame(cs, |k| matches!(k, FrameKind::Irq(i) if i == irq)) {
                    Some(f) => {
                        let fl = self.loss_flag(cpu, f.start, ts);
                        let comm = self.cpus[c].curr_comm;
                        let i = self.tl.spans.push(
                            SpanKind::Hardirq,
                            cpu,
                            curr,
                            comm,
                            f.start,
                            ts,
                            irq,
                            NONE,
                            fl,
                        );
                        self.tl.irqs_by_cpu[c].push(i);
                    }
                    None => {
                        self.tl.anomalies.unmatched_exits += 1;
                        if let Some(a) = self.cpus[c].anon_hard.take() {
                            self.tl.retro.push((cpu, a, ts, Ctx::Hardirq { irq }));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Softirqs raised, entered and left, and tasklets run.
    pub(super) fn on_softirq(&mut self, at: At, e: &Event, strings: &Interner) {
        let At {
            c,
            cpu,
            ts,
            ctx,
            curr,
            ..
        } = at;
        match &e.kind {
            Kind::SoftirqRaise { vec } => {
                let v = *vec as usize;
                if v < 10 {
                    let p = &mut self.cpus[c].pending[v];
                    if p.is_none() {
                        *p = Some((ts, ctx, curr));
                    }
                }
            }
            Kind::SoftirqEntry { vec } => {
                let v = *vec;
                let comm = self.cpus[c].curr_comm;
                let origin = if self.cpus[c].curr > 0 && self.is_ksoftirqd(comm, strings) {
                    span::KSOFTIRQD
                } else if matches!(ctx, Ctx::Hardirq { .. })
                    || self.cpus[c].origin == BhOrigin::IrqExit
                {
                    0
                } else {
                    span::IN_TASK
                };
                let raised = if (v as usize) < 10 {
                    self.cpus[c].pending[v as usize].take()
                } else {
                    None
                };
                let edge = match raised {
                    Some((rts, rctx, rtid)) => self.edge(Edge {
                        kind: EdgeKind::Softirq,
                        ts: rts,
                        at: ts,
                        from_cpu: cpu,
                        from_tid: rtid,
                        from: rctx,
                        to_tid: curr,
                        to_cpu: cpu,
                        key: v as u32,
                        val: origin as u64,
                        val2: 0,
                        span: NONE,
                        link: NONE,
                    }),
                    None => NONE,
                };
                self.cpus[c].frames.push(Frame {
                    kind: FrameKind::Softirq(v, edge, origin),
                    start: ts,
                });
            }
            Kind::SoftirqExit { vec } => {
                let v = *vec;
                let cs = &mut self.cpus[c];
                let found =
                    match pop_frame(cs, |k| matches!(k, FrameKind::Softirq(x, ..) if x == v)) {
                        Some(Frame {
                            kind: FrameKind::Softirq(_, edge, origin),
                            start,
                        }) => Some((start, edge, self.loss_flag(cpu, start, ts) | origin)),
                        _ => {
                            self.tl.anomalies.unmatched_exits += 1;
                            // The flags said softirq since `a`: that time was this vector's, not
                            // the task's it ran on (a dump that starts mid-softirq).
                            self.cpus[c].anon_soft.take().map(|a| {
                                self.tl.retro.push((cpu, a, ts, Ctx::Softirq { vec: v }));
                                (a, NONE, span::START_UNKNOWN | span::INFERRED)
                            })
                        }
                    };
                if let Some((start, edge, fl)) = found {
                    let comm = self.cpus[c].curr_comm;
                    let i = self.tl.spans.push(
                        SpanKind::Softirq,
                        cpu,
                        curr,
                        comm,
                        start,
                        ts,
                        v as u32,
                        edge,
                        fl,
                    );
                    self.tl.irqs_by_cpu[c].push(i);
                    if edge != NONE {
                        self.tl.edges[edge as usize].span = i;
                    }
                }
            }
            Kind::TaskletEntry { func } => {
                self.cpus[c].tasklet = Some((ts, *func));
                self.tasklet_run(c, ts);
            }
            Kind::TaskletExit { func } => {
                if let Some((start, f)) = self.cpus[c].tasklet.take() {
                    let f = if f == Sym::EMPTY { *func } else { f };
                    let fl = self.loss_flag(cpu, start, ts);
                    let comm = self.cpus[c].curr_comm;
                    self.tl.spans.push(
                        SpanKind::Tasklet,
                        cpu,
                        curr,
                        comm,
                        start,
                        ts,
                        f.0,
                        NONE,
                        fl,
                    );
                } else {
                    self.tl.anomalies.unmatched_exits += 1;
                }
            }
            Kind::Function { func, .. } => {
                let name = strings.get(*func);
                if matches!(
                    name,
                    "__tasklet_schedule"
                        | "tasklet_schedule"
                        | "__tasklet_schedule_common"
                        | "__tasklet_hi_schedule"
                ) {
                    if self.cpus[c].tasklet_sched.is_none() {
                        self.cpus[c].tasklet_sched = Some((ts, ctx, curr));
                    }
                } else if matches!(name, "tasklet_action" | "tasklet_action_common") {
                    self.tasklet_run(c, ts);
                }
            }
            _ => {}
        }
    }

    pub(super) fn tasklet_run(&mut self, c: usize, ts: u64) {
        if let Some((sts, sctx, stid)) = self.cpus[c].tasklet_sched.take() {
            let curr = self.cpus[c].curr;
            self.edge(Edge {
                kind: EdgeKind::Tasklet,
                ts: sts,
                at: ts,
                from_cpu: c as u32,
                from_tid: stid,
                from: sctx,
                to_tid: curr,
                to_cpu: c as u32,
                key: 0,
                val: 0,
                val2: 0,
                span: NONE,
                link: NONE,
            });
        }
    }

    /// Drops handler frames whose exit the trace lacks: the event's flags say which
    /// context it is in, and a callback's entry closes the one before it.
    pub(super) fn drop_stale_frames(&mut self, c: usize, e: &Event) {
        if e.flags & flags::KNOWN != 0 && !self.cpus[c].frames.is_empty() {
            // The flags say which context the event is in: frames whose exit the trace
            // lacks (tracing began inside a handler, an event not enabled yet) must go, or
            // every later event would be blamed on a handler long finished.
            let hard = e.flags & (flags::HARDIRQ | flags::NMI) != 0;
            let soft = e.flags & flags::SOFTIRQ != 0;
            let cs = &mut self.cpus[c];
            let before = cs.frames.len();
            while let Some(top) = cs.frames.last() {
                let stale = match top.kind {
                    FrameKind::Irq(_) => !hard,
                    FrameKind::Timer(..) => !hard && !soft,
                    FrameKind::Softirq(..) => !hard && !soft,
                };
                if !stale {
                    break;
                }
                cs.frames.pop();
            }
            self.tl.anomalies.stale_frames += (before - self.cpus[c].frames.len()) as u64;
        }
        if let Kind::HrtimerExpireEntry { .. } = e.kind {
            // Callbacks of one CPU run one after another: an open one missed its exit.
            if let Some(Frame {
                kind: FrameKind::Timer(..),
                ..
            }) = self.cpus[c].frames.last()
            {
                self.cpus[c].frames.pop();
                self.tl.anomalies.stale_frames += 1;
            }
        }
    }

    /// After each event: where a softirq entered next would have been raised from, and
    /// interrupt context the flags show with no handler event (anonymous frames).
    pub(super) fn note_context(&mut self, c: usize, ts: u64, e: &Event) {
        let cs = &mut self.cpus[c];
        cs.last_ts = ts;
        cs.seen = true;
        // Where a softirq entered next would have been raised from: irq exit when the
        // last thing on this CPU was hardirq work, task context (bh enable) otherwise.
        if !matches!(
            e.kind,
            Kind::SoftirqEntry { .. } | Kind::SoftirqExit { .. } | Kind::IrqExit { .. }
        ) {
            let hard = matches!(
                cs.frames.last(),
                Some(Frame {
                    kind: FrameKind::Irq(_),
                    ..
                })
            ) || (e.flags & flags::KNOWN != 0 && e.flags & flags::HARDIRQ != 0);
            let soft = cs
                .frames
                .iter()
                .any(|f| matches!(f.kind, FrameKind::Softirq(..)));
            if hard {
                cs.origin = BhOrigin::IrqExit;
            } else if !soft {
                cs.origin = BhOrigin::Task;
            }
        }
        if e.flags & flags::KNOWN != 0 {
            let f = e.flags;
            let irq_frame = cs
                .frames
                .iter()
                .any(|f| matches!(f.kind, FrameKind::Irq(_)));
            let soft_frame = cs
                .frames
                .iter()
                .any(|f| matches!(f.kind, FrameKind::Softirq(..)));
            if f & flags::HARDIRQ != 0 && !irq_frame {
                cs.anon_hard.get_or_insert(ts);
            } else if f & flags::HARDIRQ == 0 {
                cs.anon_hard = None;
            }
            if f & flags::SOFTIRQ != 0 && !soft_frame {
                cs.anon_soft.get_or_insert(ts);
            } else if f & (flags::SOFTIRQ | flags::HARDIRQ) == 0 || soft_frame {
                cs.anon_soft = None;
            }
        }
    }
}
