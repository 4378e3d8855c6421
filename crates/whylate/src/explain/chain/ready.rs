//! When a cycle's reply was ready for its reader, where that is not when it was read.
//!
//! A reader that waits for its reply (blocked in `read`/`poll`, or polling) is woken by
//! the hand-off that delivers it, and the cycle ends when it reads: one time. A reader
//! that gave up (it slept, logged, did other work) was woken later by something else,
//! its own timer mostly, and read a reply that had been ready for a while. Its cycle has
//! two times: ready (the end of the last hand-off on the chain into the reader) and read.
//! Durations, percentiles and misses are judged on the first; the second is said beside
//! it (issue 54).

use crate::event::Sym;
use crate::explain::cycle::Cycle;
use crate::explain::engine::{Engine, LinkKind};
use crate::timeline::{Ctx, EdgeKind, NONE};
use crate::units::dur;
use rustc_hash::FxHashMap;

/// A reply that was ready before its reader read it.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::explain) struct Ready {
    /// When the last hand-off into the reader ended (trace time).
    pub(in crate::explain) at: u64,
    /// That hand-off, in words ("flush_to_ldisc done in kworker/1:1[85] on CPU1").
    pub(in crate::explain) by: String,
    /// What the reader was doing then, in words ("in clock_nanosleep() from +3.620 ms",
    /// or "not waiting for it" where the trace has no system call of it then).
    pub(in crate::explain) reader: String,
    /// When the reader was woken again (by its own timer, mostly), trace time.
    pub(in crate::explain) woken: u64,
}

/// System calls whose exit makes data readable to another task without a work item or
/// softirq in between (a pipe, a local socket): the responder's write.
const WRITES: [&str; 6] = [
    "write", "writev", "pwrite64", "sendto", "sendmsg", "sendmmsg",
];

/// System calls that only sleep: no data ends them, so a wakeup inside one is the
/// caller's own timer (`select`/`poll` with no descriptors sleep too, but the trace
/// cannot tell them from waits for data).
const SLEEPS: [&str; 2] = ["nanosleep", "clock_nanosleep"];

/// Every reply's time by the thread that read it (the `to` events cycles ended with),
/// sorted: a reader that read a reply after a hand-off took what that hand-off made ready.
#[derive(Default)]
pub(in crate::explain) struct Replies(FxHashMap<i32, Vec<u64>>);

impl Replies {
    /// The replies of `cycles`.
    pub(in crate::explain) fn of(cycles: impl Iterator<Item = Cycle>) -> Replies {
        let mut m: FxHashMap<i32, Vec<u64>> = FxHashMap::default();
        for c in cycles {
            if let (Some(e), Some(t)) = (c.end_ns(), c.end_tid()) {
                m.entry(t).or_default().push(e);
            }
        }
        m.values_mut().for_each(|v| v.sort_unstable());
        Replies(m)
    }

    /// True when `c`'s reader read another reply after `r` made `c`'s ready and before
    /// it read `c`'s: that one took what was ready (overlapping requests paired to
    /// replies in order), and `c`'s reply is not known to have been ready then.
    pub(in crate::explain) fn took_before(&self, c: &Cycle, r: &Ready) -> bool {
        match (c.end_tid(), c.end_ns()) {
            (Some(reader), Some(end)) => self.any_in(reader, r.at, end),
            _ => false,
        }
    }

    /// True when `tid` read a reply in `(a, b)`.
    fn any_in(&self, tid: i32, a: u64, b: u64) -> bool {
        self.0.get(&tid).is_some_and(|v| {
            let i = v.partition_point(|&t| t <= a);
            v.get(i).is_some_and(|&t| t < b)
        })
    }
}

impl Engine<'_> {
    /// When `c`'s reply was ready, if its reader was not waiting for it then (its last
    /// wakeup before the read came from its own timer, after the last hand-off into it);
    /// `None` when the reader was waiting (woken by the chain), read another reply in
    /// between (it took what was ready then: [`Replies::took_before`], asked apart), when
    /// the trace does not show the hand-off, when the cycle has no reply, or when its
    /// reply event came in an interrupt. `hint` carries the edge search from one cycle
    /// to the next ([`Self::edges_upto`]).
    pub(in crate::explain) fn ready(&self, c: &Cycle, hint: &mut usize) -> Option<Ready> {
        // A reply event traced in an interrupt names the task it interrupted, which may
        // never read anything: there is no reader to follow.
        if c.reply_in_irq() {
            return None;
        }
        let (end, reader) = (c.end_ns()?, c.end_tid()?);
        let w = &self.tl.edges[self.last_wakeup_near(reader, c.start_ns, end, hint)?];
        if !self.own_wakeup(reader, w.from, w.from_cpu, w.ts) && !self.asleep(reader, w.ts) {
            return None;
        }
        // Searched up to the read: a hand-off that ended after that wakeup found the
        // reader awake (spinning after a timed-out poll, say), not asleep elsewhere.
        let (at, by) = self.last_delivery(c.tid, reader, c.start_ns, end)?;
        if at > w.ts {
            return None;
        }
        let reader_was = self.doing_at(reader, at, c.start_ns);
        Some(Ready {
            at,
            by,
            reader: reader_was,
            woken: w.ts,
        })
    }

    /// True when the wakeup of `reader` from context `from` cannot be the reply's
    /// delivery: its own timer (armed by itself) or a timer interrupt by name. A task, a
    /// worker, a softirq or any other interrupt waking it may be the chain's hand-off.
    fn own_wakeup(&self, reader: i32, from: Ctx, cpu: u32, ts: u64) -> bool {
        match self.tl.resolve(from, cpu, ts) {
            // The TIMER softirq: its own timeout when a timer_list callback of its own
            // (armed by it, or `process_timeout`, which wakes the task that slept in
            // `schedule_timeout()`) was running there then.
            Ctx::Softirq { vec } if vec == 1 || vec == u8::MAX => {
                self.own_timer_list(reader, cpu, ts)
            }
            Ctx::Timer { edge } => {
                let t = &self.tl.edges[edge as usize];
                matches!(t.from, Ctx::Task { tid } if tid == reader) || t.from_tid == reader
            }
            // A timer interrupt by name (`timer`, `arch_timer`, `riscv-timer`...).
            Ctx::Hardirq { irq } if irq != u32::MAX => {
                (self.tl.irq_names.get(&irq)).is_some_and(|&n| self.s.get(n).contains("timer"))
            }
            // Without hrtimer events an unnamed interrupt or the idle task may be a
            // device's delivery as well as a timer: the trace cannot tell, so no claim.
            _ => false,
        }
    }

    /// True when `reader` was woken at `ts` out of a sleep it asked for (`nanosleep`,
    /// `clock_nanosleep`): only its own timer, or a signal, ends one, whatever context
    /// the trace shows waking it (a timer interrupt with no handler event, as x86's local
    /// timer is, or the idle task in a trace without context flags). Seed 000's client
    /// polls a non-blocking read and, past its timeout, sleeps so.
    fn asleep(&self, reader: i32, ts: u64) -> bool {
        (self.tl.syscalls.covering(reader, ts, ts)).is_some_and(|c| {
            SLEEPS.contains(&self.tl.syscall_name(self.s, c.key, c.flags).as_str())
        })
    }

    /// True when a timer_list callback of `reader`'s own ran on `cpu` at `ts`.
    fn own_timer_list(&self, reader: i32, cpu: u32, ts: u64) -> bool {
        let runs = &self.tl.timer_list;
        let upto = runs.partition_point(|r| r.start <= ts);
        // Callbacks last microseconds: the one covering `ts` is among the last started.
        (runs[..upto].iter().rev().take(64))
            .filter(|r| r.cpu == cpu && ts <= r.end)
            .any(|r| r.armed_by == reader || self.s.get(r.function) == "process_timeout")
    }

    /// The end of the last hand-off on the chain from `requester` into `reader` in
    /// `[s, upto]`: a work item queued for the chain (done) or a softirq that carried the
    /// chain (its run); without either, a write by another task of the chain (its exit). One that woke another task handed
    /// on to that task (the request's own delivery to the responder, a log line to a
    /// terminal), not to the reader, and is passed over.
    fn last_delivery(
        &self,
        requester: i32,
        reader: i32,
        s: u64,
        upto: u64,
    ) -> Option<(u64, String)> {
        let tl = self.tl;
        let found = self.chain(requester, Some(reader), s, upto);
        let (links, chain) = (found.links, found.tasks);
        let mut best: Option<(u64, String)> = None;
        let mut take = |at: u64, what: String| {
            if at <= upto && best.as_ref().is_none_or(|b| at > b.0) {
                best = Some((at, what));
            }
        };
        let first = self.edge_ts.partition_point(|&t| t < s);
        for &i in &self.edges[first..] {
            let e = &tl.edges[i as usize];
            if e.ts > upto {
                break;
            }
            if e.kind != EdgeKind::Work || e.span == NONE || !self.for_chain(e, &chain, s) {
                continue;
            }
            let done = tl.spans.end[e.span as usize];
            if !self.woke_other(reader, Ctx::Task { tid: e.to_tid }, e.to_cpu, (e.at, done)) {
                let f = self.s.get(Sym(e.key));
                take(
                    done,
                    format!("{f} done in {} on CPU{}", self.task(e.to_tid), e.to_cpu),
                );
            }
        }
        for l in links.iter().filter(|l| l.kind == LinkKind::Softirq) {
            let vec = crate::event::SOFTIRQ_NAMES
                .iter()
                .position(|n| l.key.1.starts_with(n));
            let ctx = Ctx::Softirq {
                vec: vec.map_or(u8::MAX, |v| v as u8),
            };
            if !self.woke_other(reader, ctx, l.cpu, (l.start, l.end)) {
                take(l.end, format!("softirq {} on CPU{}", l.key.1, l.cpu));
            }
        }
        if best.is_some() {
            return best;
        }
        // No work item or softirq carried it: a write straight into the reader's pipe or
        // socket did.
        let mut take = |at: u64, what: String| {
            if at <= upto && best.as_ref().is_none_or(|b| at > b.0) {
                best = Some((at, what));
            }
        };
        let theirs = |c: &crate::timeline::Syscall| c.tid != reader && chain.contains(&c.tid);
        for (_, c) in tl.syscalls.starting_in_where(s, upto, theirs) {
            let name = tl.syscall_name(self.s, c.key, c.flags);
            let ctx = Ctx::Task { tid: c.tid };
            if WRITES.contains(&name.as_str())
                && !self.woke_other(reader, ctx, c.cpu, (c.start, c.end))
            {
                take(
                    c.end,
                    format!("{} {name}() returned on CPU{}", self.task(c.tid), c.cpu),
                );
            }
        }
        best
    }

    /// True when work edge `e` was queued for the chain: by a task of the chain, and, when
    /// that task is a worker, from a work item queued for the chain too (a worker of the
    /// chain later runs other work: what that queues is not the chain's).
    fn for_chain(
        &self,
        e: &crate::timeline::Edge,
        chain: &rustc_hash::FxHashSet<i32>,
        s: u64,
    ) -> bool {
        let mut e = e;
        for _ in 0..4 {
            let Ctx::Task { tid } = e.from else {
                return false;
            };
            if !chain.contains(&tid) {
                return false;
            }
            match self.work_running(tid, e.ts) {
                Some(q) if q.ts >= s => e = q,
                Some(_) => return false,
                None => return true,
            }
        }
        false
    }

    /// True when context `from` (a softirq: on `cpu`) woke a task other than `reader`
    /// in `[a, b]`.
    fn woke_other(&self, reader: i32, from: Ctx, cpu: u32, (a, b): (u64, u64)) -> bool {
        let tl = self.tl;
        let first = self.edge_ts.partition_point(|&t| t < a);
        (self.edges[first..].iter())
            .map(|&i| &tl.edges[i as usize])
            .take_while(|e| e.ts <= b)
            .any(|e| {
                let same = match (from, e.from) {
                    (Ctx::Softirq { vec: v }, Ctx::Softirq { vec: w }) => {
                        e.from_cpu == cpu && (v == w || v == u8::MAX || w == u8::MAX)
                    }
                    (x, y) => x == y,
                };
                e.kind == EdgeKind::Wakeup && e.to_tid != reader && same
            })
    }

    /// What `tid` was doing at `ts`, in words, with offsets from the cycle start `s`.
    fn doing_at(&self, tid: i32, ts: u64, s: u64) -> String {
        match self.tl.syscalls.covering(tid, ts, ts) {
            Some(c) => format!(
                "in {} from +{}",
                self.tl.call_words(self.s, &c),
                dur(c.start.saturating_sub(s))
            ),
            None => "not waiting for it".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Replies;
    use crate::explain::cycle::Cycle;

    #[test]
    fn a_reply_read_in_between_is_found_by_its_reader_and_time() {
        let mut cycles = Vec::new();
        for (start, end, tid) in [(100, 300, 5), (200, 900, 5), (150, 400, 6)] {
            let mut c = Cycle::open(start, tid, 0);
            c.reply(end, tid);
            cycles.push(c);
        }
        let r = Replies::of(cycles.into_iter());
        // Thread 5 read at 300 and 900: a hand-off ready at 250 was taken at 300.
        assert!(r.any_in(5, 250, 900));
        assert!(!r.any_in(5, 300, 900), "bounds are open");
        assert!(!r.any_in(6, 0, 400) && r.any_in(6, 0, 401));
        assert!(!r.any_in(7, 0, u64::MAX));
    }
}
