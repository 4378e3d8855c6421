//! function_graph calls: each entry opens a frame on its CPU (or, for events without a
//! CPU, on its task), each exit closes it into a [`Call`] with its duration (the tracer's
//! own figure when printed), its self time (less the direct children that returned inside
//! it) and its caller.

use super::*;

impl Builder {
    /// A function_graph entry or exit.
    pub(super) fn on_call(&mut self, at: At, e: &Event) {
        let mut calls = Calls {
            stack: &mut self.cpus[at.c].calls,
            ids: &mut self.call_ids,
            out: &mut self.tl.calls,
        };
        calls.event(at.cpu, at.ts, e);
    }

    /// Calls still open when the trace ends become calls whose exit is unseen (their
    /// duration is a lower bound): callers of the calls that returned keep their names.
    pub(super) fn close_open_calls(&mut self, end: u64) {
        let mut cpuless: Vec<_> = self.cpuless_calls.drain().collect();
        cpuless.sort_by_key(|(tid, _)| *tid);
        let cpus = (self.cpus.iter_mut().enumerate())
            .map(|(c, s)| (c as u32, std::mem::take(&mut s.calls)));
        let stacks = cpus.chain(cpuless.into_iter().map(|(_, s)| (Event::NO_CPU, s)));
        for (cpu, stack) in stacks {
            let mut parent = NONE;
            for f in stack {
                let dur = end.saturating_sub(f.start);
                self.tl.calls.push(Call {
                    func: f.func,
                    cpu,
                    tid: f.tid,
                    start: f.start,
                    dur,
                    exit: end,
                    self_ns: dur.saturating_sub(f.children_ns),
                    depth: f.depth,
                    id: f.id,
                    parent,
                    entry_unseen: false,
                    exit_unseen: true,
                });
                parent = f.id;
            }
        }
    }

    /// A function_graph entry or exit without a CPU: the frames are the task's.
    pub(super) fn on_cpuless_call(&mut self, ts: u64, e: &Event) {
        let mut calls = Calls {
            stack: self.cpuless_calls.entry(e.tid).or_default(),
            ids: &mut self.call_ids,
            out: &mut self.tl.calls,
        };
        calls.event(Event::NO_CPU, ts, e);
    }
}

/// One call stack and where its closed calls go.
struct Calls<'a> {
    stack: &'a mut Vec<CallFrame>,
    ids: &'a mut u32,
    out: &'a mut Vec<Call>,
}

impl Calls<'_> {
    fn event(&mut self, cpu: u32, ts: u64, e: &Event) {
        match e.kind {
            Kind::FuncEntry { func, depth } => {
                // Frames at this depth or deeper lost their exit: they are dropped.
                while self.stack.last().is_some_and(|f| f.depth >= depth) {
                    self.stack.pop();
                }
                self.stack.push(CallFrame {
                    func,
                    depth,
                    start: ts,
                    id: *self.ids,
                    tid: e.tid,
                    children_ns: 0,
                });
                *self.ids += 1;
            }
            Kind::FuncExit {
                func,
                depth,
                duration_ns,
            } => self.close(cpu, ts, e.tid, (func, depth), duration_ns),
            _ => {}
        }
    }

    fn close(&mut self, cpu: u32, ts: u64, tid: i32, (func, depth): (Sym, u16), dur: Option<u64>) {
        let st = &mut *self.stack;
        while st.last().is_some_and(|f| f.depth > depth) {
            st.pop();
        }
        let open = st
            .last()
            .filter(|f| f.depth == depth && (func == Sym::EMPTY || f.func == func))
            .is_some()
            .then(|| st.pop())
            .flatten();
        let (start, d, children, id, func, unseen) = match open {
            Some(f) => {
                let d = dur.unwrap_or(ts.saturating_sub(f.start));
                (f.start, d, f.children_ns, f.id, f.func, false)
            }
            // Entered before the trace: known only by the duration the tracer printed.
            None => match dur {
                Some(d) if func != Sym::EMPTY => {
                    let id = *self.ids;
                    *self.ids += 1;
                    (ts.saturating_sub(d), d, 0, id, func, true)
                }
                _ => return,
            },
        };
        let parent = st.last_mut().map_or(NONE, |p| {
            p.children_ns += d;
            p.id
        });
        self.out.push(Call {
            func,
            cpu,
            tid,
            start,
            dur: d,
            exit: ts,
            self_ns: d.saturating_sub(children),
            depth,
            id,
            parent,
            entry_unseen: unseen,
            exit_unseen: false,
        });
    }
}
