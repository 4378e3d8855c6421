//! Lost events and silences: where a CPU's data has holes.

use super::*;

impl Builder {
    pub(super) fn lost(&mut self, c: usize, ts: u64, count: Option<u64>) {
        let cpu = c as u32;
        self.tl.anomalies.lost_markers += 1;
        let from = if self.cpus[c].seen {
            self.cpus[c].last_ts
        } else {
            0
        };
        self.tl.lost.push(LostWindow {
            cpu,
            from,
            to: ts,
            count,
        });
        // Forget what this CPU was doing: the switches and exits we missed would make
        // every span we closed from here wrong.
        let cs = &mut self.cpus[c];
        cs.frames.clear();
        cs.pending = [None; 10];
        cs.irqsoff = None;
        cs.preemptoff = None;
        cs.tasklet = None;
        cs.tasklet_sched = None;
        let curr = cs.curr;
        if curr >= 0 {
            let (since, comm, fl, last) = (cs.curr_since, cs.curr_comm, cs.curr_flags, from);
            cs.curr = -1;
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                curr,
                comm,
                since,
                last.max(since),
                prio_key(&self.tl, curr),
                NONE,
                fl | span::UNCERTAIN,
            );
            self.tl.runs_by_cpu[c].push(i);
            if curr > 0 {
                if let Some(t) = self.tasks.get_mut(&curr) {
                    t.state = St::Unknown;
                }
            }
        }
        self.cpus[c].last_ts = ts;
    }

    /// A CPU that recorded nothing for over [`SILENCE_NS`] while a task was on it: noted
    /// before anything changes `curr` (who was on the CPU during the silence).
    pub(super) fn silence(&mut self, c: usize, ts: u64) {
        // Before anything changes `curr`: who was on the CPU during the silence.
        let cs = &self.cpus[c];
        if cs.seen && cs.curr > 0 && ts.saturating_sub(cs.last_ts) > SILENCE_NS {
            self.tl.silences.push(Silence {
                cpu: c as u32,
                from: cs.last_ts,
                to: ts,
                tid: cs.curr,
            });
        }
    }
}
