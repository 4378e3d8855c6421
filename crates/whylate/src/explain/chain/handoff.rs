//! Backward from the reply: when the task that woke the reply's thread is not on the
//! forward chain (a packet crossed CPUs in a softirq, a device interrupt queued work), the
//! hand-offs that led to that wakeup are found from the wakeup's side: the waker, the
//! work item it was running and who queued it, and the softirq that carried it — how
//! long it was pending on its CPU (deferred to ksoftirqd, and who kept ksoftirqd off the
//! CPU) and how long it ran before it woke the next step.

use crate::event::SOFTIRQ_NAMES;
use crate::explain::engine::{Engine, LinkKind, RawLink};
use crate::timeline::{span, Ctx, Edge, EdgeKind};
use rustc_hash::FxHashSet;

/// Steps walked back from the reply at most (waker -> work -> softirq ...).
const DEPTH: usize = 4;

/// Edges looked at backwards from a time, at most, when searching a wakeup or a work item.
const LOOK_BACK: usize = 4096;

/// What walking back from the reply found: links and the tasks they add to the chain.
#[derive(Default)]
pub(in crate::explain) struct Handoffs {
    pub(in crate::explain) links: Vec<RawLink>,
    pub(in crate::explain) tids: Vec<i32>,
}

impl Engine<'_> {
    /// The hand-offs behind `tid`'s last wakeup in `[s, e]`, walked back while the waker
    /// is not on `chain` (which already explains it).
    pub(in crate::explain) fn reply_handoffs(
        &self,
        (requester, tid): (i32, i32),
        s: u64,
        e: u64,
        chain: &FxHashSet<i32>,
    ) -> Handoffs {
        let mut out = Handoffs::default();
        if self.packet_step(requester, s, e, &mut out) {
            return out;
        }
        let (mut who, mut upto) = (tid, e);
        for depth in 0..DEPTH {
            let wake = self.last_wakeup(who, s, upto);
            // After its last wakeup (or all along) the thread was on its CPU, where a
            // softirq run in its own context (bh enable, an interrupt exit over it) may
            // have delivered the reply: that run, and the backlog it worked through since
            // the wakeup, are links.
            if depth == 0 {
                let after = wake.map_or(s, |w| self.tl.edges[w].ts);
                if let Some((cpu, run)) = self.own_softirq(tid, after, e) {
                    let end = match run.span {
                        crate::timeline::NONE => e,
                        sp => self.tl.spans.end[sp as usize].min(e),
                    };
                    self.softirq_step(run.key as u8, cpu, end, after, &mut out);
                }
            }
            let Some(w) = wake else {
                // Not woken in the cycle: it may have been waiting for its CPU since an
                // earlier wakeup (for an earlier request), and could not reply before it
                // ran, whatever ran in its context after.
                if depth == 0 {
                    out.links.extend(self.waiting_since_before(tid, s, e));
                }
                break;
            };
            let w = &self.tl.edges[w];
            match self.tl.resolve(w.from, w.from_cpu, w.ts) {
                Ctx::Task { tid: t } if t > 0 && !chain.contains(&t) => {
                    out.tids.push(t);
                    // A worker woke it: the work item it was running carries the chain on.
                    match self.work_running(t, w.ts).filter(|q| q.ts >= s) {
                        Some(q) => {
                            out.links.push(self.work_link_of(q));
                            match self.tl.resolve(q.from, q.from_cpu, q.ts) {
                                Ctx::Softirq { vec } => {
                                    self.softirq_step(vec, q.from_cpu, q.ts, s, &mut out);
                                    break;
                                }
                                Ctx::Task { tid: t } if t > 0 && !chain.contains(&t) => {
                                    out.tids.push(t);
                                    (who, upto) = (t, q.ts);
                                }
                                _ => break,
                            }
                        }
                        None => (who, upto) = (t, w.ts),
                    }
                }
                Ctx::Softirq { vec } => {
                    self.softirq_step(vec, w.from_cpu, w.ts, s, &mut out);
                    break;
                }
                // On the chain already, idle, a device interrupt, a timer: nothing to add.
                _ => break,
            }
        }
        out
    }

    /// With network events in the trace, the packet the requester sent in `[s, e]`, matched
    /// by skb address to where the stack took it: how long it waited on the receiving CPU
    /// for a NET_RX run (deferred to ksoftirqd, or behind the backlog), and how long that
    /// run worked before it took this packet. False when the trace has no such packet.
    fn packet_step(&self, requester: i32, s: u64, e: u64, out: &mut Handoffs) -> bool {
        let tl = self.tl;
        let first = self
            .packets
            .partition_point(|&i| tl.edges[i as usize].ts < s);
        let Some(p) = (self.packets[first..].iter())
            .map(|&i| &tl.edges[i as usize])
            .take_while(|p| p.ts <= e)
            .find(|p| p.from_tid == requester && p.at <= e)
        else {
            return false;
        };
        let cpu = p.to_cpu;
        let by = self.ctx(p.from, p.from_tid, p.from_cpu, p.ts);
        let skb = format!("skb {:#x}", p.val);
        let Some(run) = self.softirq_run_at(3, cpu, p.at).filter(|r| r.at >= p.ts) else {
            // Taken in the run that was going on when it arrived (or outside NET_RX).
            out.links.push(RawLink {
                key: (LinkKind::Softirq, "NET_RX run".into(), 1),
                what: format!("packet ({skb}) from {by} on CPU{}, taken by the stack on CPU{cpu} (matched by skb address)", p.from_cpu),
                queue: Some(3),
                ..RawLink::wait(LinkKind::Softirq, p.ts, p.at, cpu, -1)
            });
            return true;
        };
        let place = self.served_in(run);
        let ksoftirqd = self.ksoftirqd_waiting(cpu, p.ts, run.at);
        let deferred = ksoftirqd
            .map(|i| format!(", deferred to {}", self.task(self.tl.spans.tid[i])))
            .unwrap_or_default();
        out.links.push(RawLink {
            key: (LinkKind::Softirq, "NET_RX pending".into(), 1),
            tid: ksoftirqd.map_or(-1, |i| self.tl.spans.tid[i]),
            what: format!(
                "packet ({skb}) from {by} on CPU{}, waiting on CPU{cpu} for NET_RX{deferred} until {place} ran it (matched by skb address)",
                p.from_cpu
            ),
            deferred: Some(ksoftirqd.is_some()),
            defer_from: self.ksoftirqd_woken(cpu, p.ts, run.at),
            queue: Some(3),
            ..RawLink::wait(LinkKind::Softirq, p.ts, run.at, cpu, -1)
        });
        out.links.push(RawLink {
            key: (LinkKind::Softirq, "NET_RX run".into(), 1),
            what: format!(
                "softirq NET_RX ran on CPU{cpu} in {place} before it took the packet ({skb})"
            ),
            queue: Some(3),
            ..RawLink::wait(LinkKind::Softirq, run.at, p.at, cpu, -1)
        });
        true
    }

    /// The last softirq run in `tid`'s own context that began in `[a, e]` and could have
    /// carried data to it, with its CPU: HI, NET_RX, BLOCK, IRQ_POLL or TASKLET. The others
    /// hand data on only by waking someone (timer callbacks), or never (NET_TX frees what
    /// was sent, SCHED balances load, RCU runs callbacks after a grace period).
    fn own_softirq(&self, tid: i32, a: u64, e: u64) -> Option<(u32, &Edge)> {
        const CARRIERS: [u32; 5] = [0, 3, 4, 5, 6];
        let tl = self.tl;
        (self.softirq_runs.iter().enumerate())
            .filter_map(|(cpu, runs)| {
                let n = runs.partition_point(|&i| tl.edges[i as usize].at <= e);
                (runs[..n].iter().rev())
                    .map(|&i| &tl.edges[i as usize])
                    .take_while(|r| r.at >= a)
                    .find(|r| r.to_tid == tid && CARRIERS.contains(&r.key))
                    .map(|r| (cpu as u32, r))
            })
            .max_by_key(|(_, r)| r.at)
    }

    /// `tid` runnable since before `s` and running by `e` (it was not yet waiting for the
    /// reply when the request came, but for a CPU), as a link from `s`.
    fn waiting_since_before(&self, tid: i32, s: u64, e: u64) -> Option<RawLink> {
        let sp = &self.tl.spans;
        let n = self.runnable.partition_point(|&i| sp.start[i as usize] < s);
        let i = (self.runnable[..n].iter().rev().take(LOOK_BACK))
            .map(|&i| i as usize)
            .find(|&i| sp.tid[i] == tid && sp.end[i] > s)?;
        if sp.end[i] > e || sp.flags[i] & span::END_UNKNOWN != 0 {
            return None;
        }
        let inferred = sp.flags[i] & span::INFERRED != 0;
        Some(RawLink {
            key: (
                LinkKind::Run,
                format!(
                    "{} (since before)",
                    crate::explain::engine::norm_comm(self.s.get(self.tl.comm(tid)))
                ),
                1,
            ),
            what: format!(
                "{} waited for CPU{} since before the request (not yet waiting for it){}",
                self.task(tid),
                sp.cpu[i],
                crate::explain::engine::untraced_words(inferred)
            ),
            preempted: crate::timeline::Cause::from_key(sp.key[i])
                == crate::timeline::Cause::Preempted,
            untraced_end: inferred,
            waits_for: None,
            ..RawLink::wait(LinkKind::Run, s, sp.end[i], sp.cpu[i], tid)
        })
    }

    /// The last wakeup of `tid` in `[s, upto]`.
    pub(in crate::explain) fn last_wakeup(&self, tid: i32, s: u64, upto: u64) -> Option<usize> {
        self.last_wakeup_near(tid, s, upto, &mut 0)
    }

    /// The number of edges at or before `upto`, searched from `hint` (the answer for an
    /// earlier time, updated): cycles are walked in start order, so the answer moves a
    /// little each time, where a search of the whole table took a cache miss per step.
    pub(in crate::explain) fn edges_upto(&self, upto: u64, hint: &mut usize) -> usize {
        count_upto(&self.edge_ts, upto, hint)
    }

    /// [`Self::last_wakeup`], the edges searched from `hint` ([`Self::edges_upto`]).
    pub(in crate::explain) fn last_wakeup_near(
        &self,
        tid: i32,
        s: u64,
        upto: u64,
        hint: &mut usize,
    ) -> Option<usize> {
        let tl = self.tl;
        let n = self.edges_upto(upto, hint);
        // Most cycles have no edge at all inside them: that costs no look into the table.
        if n == 0 || self.edge_ts[n - 1] < s {
            return None;
        }
        (self.edges[..n].iter().rev().take(LOOK_BACK))
            .map(|&i| i as usize)
            .take_while(|&i| tl.edges[i].ts >= s)
            .find(|&i| tl.edges[i].kind == EdgeKind::Wakeup && tl.edges[i].to_tid == tid)
    }

    /// The work item worker `tid` was running at `ts`, if any.
    pub(in crate::explain) fn work_running(&self, tid: i32, ts: u64) -> Option<&Edge> {
        let tl = self.tl;
        let n = self.edge_ts.partition_point(|&t| t <= ts);
        (self.edges[..n].iter().rev().take(LOOK_BACK))
            .map(|&i| &tl.edges[i as usize])
            .find(|q| {
                q.kind == EdgeKind::Work
                    && q.to_tid == tid
                    && q.at <= ts
                    && (q.span == crate::timeline::NONE || tl.spans.end[q.span as usize] >= ts)
            })
    }

    /// The softirq run of `vec` on `cpu` in progress at `ts` (it woke the next step or
    /// queued its work), as two links: the time the work waited on that CPU for it —
    /// from the request (or the raise, if later) to the run's entry, through any earlier
    /// runs of the same vector that re-raised it (a backlog drained a budget at a time,
    /// the rest deferred to ksoftirqd or to the next interrupt exit) — and the run itself
    /// up to `ts`.
    fn softirq_step(&self, vec: u8, cpu: u32, ts: u64, s: u64, out: &mut Handoffs) {
        let Some(run) = self.softirq_run_at(vec, cpu, ts) else {
            return;
        };
        let name = SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?");
        let place = self.served_in(run);
        let first = self.first_of_backlog(run, vec, s);
        let from = first.ts.max(s);
        if first.ts > s {
            out.links.extend(self.busy_before(vec, cpu, s, first.ts));
        }
        if run.at > from {
            let ksoftirqd = self.ksoftirqd_waiting(cpu, from, run.at);
            let deferred = ksoftirqd
                .map(|i| format!(", deferred to {}", self.task(self.tl.spans.tid[i])))
                .unwrap_or_default();
            let by = self.ctx(first.from, first.from_tid, first.from_cpu, first.ts);
            let raised = if first.ts < s {
                format!("pending since before the request (raised in {by})")
            } else {
                format!("raised in {by}")
            };
            out.links.push(RawLink {
                key: (LinkKind::Softirq, format!("{name} pending"), 1),
                tid: ksoftirqd.map_or(-1, |i| self.tl.spans.tid[i]),
                what: format!(
                    "softirq {name} on CPU{cpu} {raised}, not run for this work{deferred} until {place} ran it (inferred: no per-packet events)"
                ),
                deferred: Some(ksoftirqd.is_some()),
                defer_from: self.ksoftirqd_woken(cpu, from, run.at),
                queue: Some(vec),
                ..RawLink::wait(LinkKind::Softirq, from, run.at, cpu, -1)
            });
        }
        out.links.push(RawLink {
            key: (LinkKind::Softirq, format!("{name} run"), 1),
            what: format!("softirq {name} ran on CPU{cpu} in {place} before it handed on"),
            queue: Some(vec),
            ..RawLink::wait(LinkKind::Softirq, run.at.max(s), ts, cpu, -1)
        });
    }

    /// Between the request (`s`) and the raise of the run that handed on (`upto`), the
    /// vector mostly running on `cpu` already: the work queued behind an earlier backlog
    /// (a flood's packets) that those runs worked through, each ending its budget at an
    /// empty queue or re-raising. With no per-packet events this is the closest evidence of
    /// where it waited, said as such; a CPU that ran the vector less than half the time
    /// proves nothing and gives no link.
    fn busy_before(&self, vec: u8, cpu: u32, s: u64, upto: u64) -> Option<RawLink> {
        let tl = self.tl;
        let runs = self.softirq_runs.get(cpu as usize)?;
        // Runs are by entry: the one in progress at `s` began before it.
        let lo = runs
            .partition_point(|&i| tl.edges[i as usize].at < s)
            .saturating_sub(1);
        let (mut busy, mut n, mut last) = (0u64, 0u32, None);
        for &i in &runs[lo..] {
            let e = &tl.edges[i as usize];
            if e.at >= upto {
                break;
            }
            if e.key != vec as u32 || e.span == crate::timeline::NONE {
                continue;
            }
            let (a, b) = (e.at.max(s), tl.spans.end[e.span as usize].min(upto));
            if b > a {
                busy += b - a;
                n += 1;
                last = Some(e);
            }
        }
        if busy * 2 < upto - s {
            return None;
        }
        let name = SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?");
        let place = self.served_in(last?);
        Some(RawLink {
            key: (LinkKind::Softirq, format!("{name} backlog"), 1),
            what: format!(
                "softirq {name} on CPU{cpu} busy with an earlier backlog: {n} runs ({} of the {} until it was raised again, the last in {place}); the work queued behind it (inferred: no per-packet events)",
                crate::units::dur(busy),
                crate::units::dur(upto - s)
            ),
            queue: Some(vec),
            ..RawLink::wait(LinkKind::Softirq, s, upto, cpu, -1)
        })
    }

    /// The first run of the backlog `run` belongs to: walking back over earlier runs of
    /// `vec` on its CPU while each was raised by the vector itself (a budget used up,
    /// the rest re-raised), until one raised at or before `s`.
    fn first_of_backlog<'e>(&'e self, run: &'e Edge, vec: u8, s: u64) -> &'e Edge {
        let tl = self.tl;
        let Some(runs) = self.softirq_runs.get(run.to_cpu as usize) else {
            return run;
        };
        let mut first = run;
        let mut n = runs.partition_point(|&i| tl.edges[i as usize].at < run.at);
        while first.ts > s {
            let self_raised = first.from_cpu == run.to_cpu
                && matches!(tl.resolve(first.from, first.from_cpu, first.ts),
                    Ctx::Softirq { vec: v } if v == vec);
            let prev = (runs[..n].iter().rev())
                .map(|&i| (i, &tl.edges[i as usize]))
                .find(|(_, e)| e.key == vec as u32);
            match prev {
                Some((i, p)) if self_raised => {
                    n = runs[..n].iter().position(|&j| j == i).unwrap_or(0);
                    first = p;
                }
                _ => break,
            }
        }
        first
    }

    /// The softirq run (its raise edge) of `vec` on `cpu` in progress at `ts`.
    pub(in crate::explain) fn softirq_run_at(&self, vec: u8, cpu: u32, ts: u64) -> Option<&Edge> {
        let tl = self.tl;
        let runs = self.softirq_runs.get(cpu as usize)?;
        let n = runs.partition_point(|&i| tl.edges[i as usize].at <= ts);
        (runs[..n].iter().rev())
            .map(|&i| &tl.edges[i as usize])
            .find(|e| e.key == vec as u32)
    }

    /// Where softirq run `e` was served: `ksoftirqd/1`, `irq exit (task)`, `task (bh
    /// enable)`.
    pub(in crate::explain) fn served_in(&self, e: &Edge) -> String {
        let f = e.val as u8;
        if f & span::KSOFTIRQD != 0 {
            self.task(e.to_tid)
        } else if f & span::IN_TASK != 0 {
            format!("{} (bh enable)", self.task(e.to_tid))
        } else {
            format!("an irq exit over {}", self.task(e.to_tid))
        }
    }

    /// When `cpu`'s ksoftirqd was first runnable in `[a, b]` (`a` when it already was):
    /// the deferral begins there, whatever it ran or waited for after.
    pub(in crate::explain) fn ksoftirqd_woken(&self, cpu: u32, a: u64, b: u64) -> Option<u64> {
        let (tl, sp) = (self.tl, &self.tl.spans);
        let upto = (self.runnable).partition_point(|&i| sp.start[i as usize] < b);
        (self.runnable[..upto].iter().rev().take(LOOK_BACK))
            .map(|&i| i as usize)
            .filter(|&i| {
                sp.cpu[i] == cpu
                    && sp.end[i] > a
                    && self.s.get(tl.comm(sp.tid[i])).starts_with("ksoftirqd")
            })
            .map(|i| sp.start[i].max(a))
            .min()
    }

    /// A runnable span of `cpu`'s ksoftirqd overlapping `[a, b]` (it waited for the CPU
    /// while a softirq was pending there), if any: latest first.
    pub(in crate::explain) fn ksoftirqd_waiting(&self, cpu: u32, a: u64, b: u64) -> Option<usize> {
        let (tl, sp) = (self.tl, &self.tl.spans);
        let upto = (self.runnable).partition_point(|&i| sp.start[i as usize] < b);
        self.runnable[..upto]
            .iter()
            .rev()
            .take(LOOK_BACK)
            .map(|&i| i as usize)
            .find(|&i| {
                sp.cpu[i] == cpu
                    && sp.end[i] > a
                    && self.s.get(tl.comm(sp.tid[i])).starts_with("ksoftirqd")
            })
    }
}

/// How many of the sorted `ts` are at or before `upto`, searched from `hint` (an earlier
/// answer), which it becomes: galloping forward from it, else searching before it.
fn count_upto(ts: &[u64], upto: u64, hint: &mut usize) -> usize {
    let h = (*hint).min(ts.len());
    let n = if h > 0 && ts[h - 1] > upto {
        ts[..h].partition_point(|&t| t <= upto)
    } else {
        let mut step = 1;
        while h + step <= ts.len() && ts[h + step - 1] <= upto {
            step *= 2;
        }
        // ts[lo - 1] <= upto, and ts[hi - 1] > upto unless hi is the end.
        let (lo, hi) = (h + step / 2, (h + step).min(ts.len()));
        lo + ts[lo..hi].partition_point(|&t| t <= upto)
    };
    *hint = n;
    n
}

#[cfg(test)]
mod count_tests {
    use super::count_upto;

    #[test]
    fn counting_from_a_hint_gives_what_a_search_of_the_whole_table_gives() {
        // Times with runs of equal values and gaps; asked forward, backward, at equal
        // times, before the first and after the last, from every kind of hint.
        let ts: Vec<u64> = (0..500u64).map(|i| (i / 3) * 7 + (i % 5) / 4).collect();
        let mut sorted = ts.clone();
        sorted.sort_unstable();
        let mut hint = 0;
        let mut x: u64 = 12345;
        for k in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let upto = match k % 4 {
                0 => (x >> 33) % 1300,
                1 => sorted[((x >> 33) % 500) as usize],
                _ => (k * 3) % 1300,
            };
            if k % 97 == 0 {
                hint = ((x >> 40) % 600) as usize;
            }
            let want = sorted.partition_point(|&t| t <= upto);
            assert_eq!(count_upto(&sorted, upto, &mut hint), want, "upto {upto}");
            assert_eq!(hint, want);
        }
        assert_eq!(count_upto(&[], 5, &mut 3), 0);
    }
}
