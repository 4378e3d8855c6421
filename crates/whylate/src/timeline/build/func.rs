//! function_graph calls: each entry opens a frame on its CPU, each exit closes it into a
//! [`Call`] with its duration (the tracer's own figure when printed), its self time (less
//! the direct children that returned inside it) and its caller.

use super::*;

impl Builder {
    /// A function_graph entry or exit.
    pub(super) fn on_call(&mut self, at: At, e: &Event) {
        let (c, ts) = (at.c, at.ts);
        match e.kind {
            Kind::FuncEntry { func, depth } => {
                // Frames at this depth or deeper lost their exit: they are dropped.
                let st = &mut self.cpus[c].calls;
                while st.last().is_some_and(|f| f.depth >= depth) {
                    st.pop();
                }
                st.push(CallFrame {
                    func,
                    depth,
                    start: ts,
                    id: self.call_ids,
                    children_ns: 0,
                });
                self.call_ids += 1;
            }
            Kind::FuncExit {
                func,
                depth,
                duration_ns,
            } => self.close_call(at, e.tid, func, depth, duration_ns),
            _ => {}
        }
    }

    fn close_call(&mut self, at: At, tid: i32, func: Sym, depth: u16, dur: Option<u64>) {
        let (c, ts) = (at.c, at.ts);
        let st = &mut self.cpus[c].calls;
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
                    let id = self.call_ids;
                    self.call_ids += 1;
                    (ts.saturating_sub(d), d, 0, id, func, true)
                }
                _ => return,
            },
        };
        let parent = st.last_mut().map_or(NONE, |p| {
            p.children_ns += d;
            p.id
        });
        self.tl.calls.push(Call {
            func,
            cpu: at.cpu,
            tid,
            start,
            dur: d,
            self_ns: d.saturating_sub(children),
            depth,
            id,
            parent,
            entry_unseen: unseen,
        });
    }
}
