//! Workqueue events: work queued, activated, run.

use super::*;

impl Builder {
    /// Workqueue events: work queued, activated, run.
    pub(super) fn on_work(&mut self, at: At, e: &Event, _strings: &Interner) {
        let At {
            cpu, ts, ctx, curr, ..
        } = at;
        match &e.kind {
            Kind::WorkQueue { work, function, .. } => {
                self.queued.insert(
                    *work,
                    Queued {
                        ts,
                        cpu,
                        tid: curr,
                        ctx,
                        function: *function,
                        activated: 0,
                    },
                );
            }
            Kind::WorkActivate { work, .. } => {
                if let Some(q) = self.queued.get_mut(work) {
                    q.activated = ts;
                }
            }
            Kind::WorkStart { work, function } => {
                let edge = match self.queued.remove(work) {
                    Some(q) => self.edge(Edge {
                        kind: EdgeKind::Work,
                        ts: q.ts,
                        at: ts,
                        from_cpu: q.cpu,
                        from_tid: q.tid,
                        from: q.ctx,
                        to_tid: e.tid,
                        to_cpu: cpu,
                        key: pick(*function, q.function).0,
                        val: q.activated,
                        val2: 0,
                        span: NONE,
                        link: NONE,
                    }),
                    None => NONE,
                };
                let t = self.tasks.entry(e.tid).or_insert_with(|| Task::new(cpu));
                t.work = Some(Work {
                    start: ts,
                    work: *work,
                    function: *function,
                    edge,
                    cpu,
                });
            }
            Kind::WorkEnd { work, function } => {
                let w = self.tasks.get_mut(&e.tid).and_then(|t| t.work.take());
                match w {
                    Some(w) if w.work == *work => {
                        let func = pick(w.function, *function);
                        let func = if func == Sym::EMPTY && w.edge != NONE {
                            Sym(self.tl.edges[w.edge as usize].key)
                        } else {
                            func
                        };
                        let fl = self.loss_flag(w.cpu, w.start, ts);
                        let i = self.tl.spans.push(
                            SpanKind::Work,
                            cpu,
                            e.tid,
                            e.comm,
                            w.start,
                            ts,
                            func.0,
                            w.edge,
                            fl,
                        );
                        if w.edge != NONE {
                            self.tl.edges[w.edge as usize].span = i;
                        }
                    }
                    _ => self.tl.anomalies.unmatched_exits += 1,
                }
            }
            _ => {}
        }
    }
}
