//! Waits through other tasks. A task of the chain blocked (S or D) and another task woke
//! it: a mutex's holder unlocking, a pipe's writer, a condition's signaller. The wait is
//! a hand-off from that waker, and what delayed the waker is the chain's delay: its waits
//! for a CPU inside the wait (a preemption of a lock's holder is the classic priority
//! inversion), its own run until the wakeup (the holder's work), and its own blocks on a
//! third task, followed the same way (each task once, at most [`DEPTH`] deep). A wakeup
//! from an interrupt, a softirq or a timer (a sleep that ran out) is not a wait for a task,
//! nor is a kernel thread's sleep outside a system call (a worker woken for queued work:
//! the work's hand-off is on the chain already).

use crate::explain::causes as cause;
use crate::explain::engine::{Engine, RawLink, Wait};
use crate::explain::report::{prio_words, Culprit, Hold};
use crate::timeline::{span, Cause as RunCause, Ctx, SpanKind, NONE};
use rustc_hash::FxHashSet;

/// Tasks followed behind one another at most (A waits on B, B on C, ...).
pub(in crate::explain) const DEPTH: usize = 4;

/// Runnable spans looked at backwards from a window's start, at most, for one that began
/// before it.
const LOOK_BACK: usize = 4096;

/// What following the chain's blocks found: the waits, the wakers' waits for a CPU inside
/// them, and the wakers (tasks of the chain from then on).
#[derive(Default)]
pub(in crate::explain) struct WaitsFor {
    pub(in crate::explain) waits: Vec<Wait>,
    pub(in crate::explain) links: Vec<RawLink>,
    pub(in crate::explain) tids: Vec<i32>,
}

impl Engine<'_> {
    /// The waits of `chain`'s tasks in `[s, h]` for tasks that woke them, followed behind
    /// each waker.
    pub(in crate::explain) fn waits_for(&self, chain: &FxHashSet<i32>, s: u64, h: u64) -> WaitsFor {
        let mut out = WaitsFor::default();
        let mut seen = chain.clone();
        let mut todo: Vec<(i32, u64, u64, usize)> = chain.iter().map(|&t| (t, s, h, 1)).collect();
        todo.sort_unstable();
        while let Some((tid, a, b, depth)) = todo.pop() {
            for w in self.woken_by_tasks(tid, a, b) {
                if seen.insert(w.waker) {
                    out.tids.push(w.waker);
                    out.links.extend(self.waker_waits(&w, u64::MAX));
                    if depth < DEPTH {
                        todo.push((w.waker, w.from, w.woke, depth + 1));
                    }
                } else if chain.contains(&w.waker) {
                    // The chain's own waits are the ones that began in the cycle: one
                    // that began before it and held the waker into the sleep is added.
                    out.links.extend(self.waker_waits(&w, s));
                }
                out.waits.push(w);
            }
        }
        self.highest_waiters(&mut out);
        out.waits.sort_by_key(|w| (w.woke, w.from));
        out
    }

    /// A sleep of `tid` over `[a, b]` that a task ended (a lock's holder unlocking, a
    /// pipe's writer), as holds: what delayed that task inside it (its waits for a CPU,
    /// priority inversion where the sleeper outranks it; the tasks it waited on in turn),
    /// and the rest its own work until the wakeup. `None` when no task woke it (its own
    /// timer, an interrupt). For modes whose samples are not chains of hand-offs (a
    /// timer period an earlier one overran).
    pub(in crate::explain) fn blocked_holds(
        &self,
        tid: i32,
        a: u64,
        b: u64,
    ) -> Option<(Vec<Hold>, Vec<Wait>)> {
        let me: FxHashSet<i32> = [tid].into_iter().collect();
        let behind = self.waits_for(&me, a, b);
        let w = behind.waits.iter().find(|w| w.woke >= a && w.woke <= b)?;
        let mut held = Vec::new();
        for l in &behind.links {
            let (la, lb) = (l.start.max(a), l.end.min(b));
            if lb > la {
                held.extend(self.holds(l, la, lb));
            }
        }
        let waited: u64 = held.iter().map(|h| h.ns).sum();
        let rest = (b - a).saturating_sub(waited);
        if rest > 0 {
            held.push(Hold {
                category: cause::ON_CPU,
                culprit: Culprit::task(self.tl, self.s, w.waker, w.cpu),
                ns: rest,
                why: Some(format!(
                    "{} held it up with its own work until it woke it",
                    self.task(w.waker)
                )),
                nested_ns: 0,
            });
        }
        Some((held, behind.waits))
    }

    /// Each wait's sleeper becomes the highest-priority task waiting behind it: up the
    /// line of waits that overlap it (A waits on B while B waits on C: C holds A up too,
    /// as a priority-inheritance chain would pass A's priority on), and the waker's
    /// links are marked with that task.
    fn highest_waiters(&self, out: &mut WaitsFor) {
        let tl = self.tl;
        let rank = |t: i32, at: u64| tl.prio_at(t, at).unwrap_or(i32::MAX);
        let direct: Vec<(i32, i32, u64, u64)> = (out.waits.iter())
            .map(|w| (w.sleeper, w.waker, w.from, w.woke))
            .collect();
        for w in &mut out.waits {
            let (mut cur, mut best) = ((w.sleeper, w.from, w.woke), w.sleeper);
            for _ in 0..DEPTH {
                let Some(&(up, _, f, t)) =
                    (direct.iter()).find(|&&(_, wk, f, t)| wk == cur.0 && f < cur.2 && cur.1 < t)
                else {
                    break;
                };
                if rank(up, w.woke) < rank(best, w.woke) {
                    best = up;
                }
                cur = (up, f, t);
            }
            w.sleeper = best;
        }
        for l in &mut out.links {
            let by =
                (out.waits.iter()).find(|w| w.waker == l.tid && w.from < l.end && l.start < w.woke);
            l.waits_for = by.map(|w| w.sleeper).or(l.waits_for);
        }
    }

    /// `tid`'s wakeups in `[a, b]` by a task (not itself, not an interrupt or a timer),
    /// each after a block.
    fn woken_by_tasks(&self, tid: i32, a: u64, b: u64) -> Vec<Wait> {
        let (tl, sp) = (self.tl, &self.tl.spans);
        let first = self.runnable.partition_point(|&i| sp.start[i as usize] < a);
        let mut out = Vec::new();
        for &ri in &self.runnable[first..] {
            let i = ri as usize;
            if sp.start[i] > b {
                break;
            }
            if sp.tid[i] != tid
                || RunCause::from_key(sp.key[i]) != RunCause::Woken
                || sp.aux[i] == NONE
            {
                continue;
            }
            let e = &tl.edges[sp.aux[i] as usize];
            let Ctx::Task { tid: waker } = tl.resolve(e.from, e.from_cpu, e.ts) else {
                continue;
            };
            if waker <= 0 || waker == tid {
                continue;
            }
            // A wait of a program: blocked inside a system call (a kernel thread's own
            // sleep, a worker woken for queued work, is a hand-off the chain has).
            let call = tl.syscalls.covering(tid, sp.start[i], sp.start[i]);
            if call.is_none()
                && (!tl.syscalls.is_empty() || kernel_thread(self.s.get(tl.comm(tid))))
            {
                continue;
            }
            let call = call
                .map(|c| format!(" in {}", tl.call_words(self.s, &c)))
                .unwrap_or_default();
            let from = self.sleep_before(tid, sp.start[i]).unwrap_or(a).max(a);
            let what = format!(
                "{}{} blocked{call} until {}{} woke it from CPU{}",
                self.task(tid),
                prio_words(tl.prio_at(tid, e.ts)),
                self.task(waker),
                prio_words(tl.prio_at(waker, e.ts)),
                e.from_cpu
            );
            out.push(Wait {
                sleeper: tid,
                waker,
                from,
                woke: e.ts,
                cpu: e.from_cpu,
                what,
            });
        }
        out
    }

    /// The start of `tid`'s sleep that ended at `end`. (Its state is not said: a
    /// trace.dat keeps the kernel's number, which means different letters on different
    /// kernels, and the words must not depend on the format.)
    fn sleep_before(&self, tid: i32, end: u64) -> Option<u64> {
        let sp = &self.tl.spans;
        let n = self.sleeps.partition_point(|&i| sp.end[i as usize] <= end);
        (self.sleeps[..n].iter().rev().take(64))
            .map(|&i| i as usize)
            .take_while(|&i| sp.end[i] + 1_000_000 >= end)
            .find(|&i| sp.tid[i] == tid && sp.kind[i] == SpanKind::Sleep)
            .map(|i| sp.start[i])
    }

    /// The waker's waits for a CPU inside `w`'s wait that began before `before`, as links
    /// clipped to it, marked as the sleeper's wait for this waker.
    fn waker_waits(&self, w: &Wait, began_before: u64) -> Vec<RawLink> {
        let sp = &self.tl.spans;
        let n = self
            .runnable
            .partition_point(|&i| sp.start[i as usize] < w.from);
        let before = (self.runnable[..n].iter().rev().take(LOOK_BACK))
            .map(|&i| i as usize)
            .filter(|&i| sp.end[i] > w.from);
        let inside = (self.runnable[n..].iter())
            .map(|&i| i as usize)
            .take_while(|&i| sp.start[i] < w.woke);
        let mut out: Vec<RawLink> = before
            .chain(inside)
            .filter(|&i| sp.tid[i] == w.waker && sp.start[i] < began_before)
            .filter(|&i| sp.flags[i] & span::END_UNKNOWN == 0)
            .map(|i| {
                let mut l = self.run_link(i);
                l.start = l.start.max(w.from);
                l.waits_for = Some(w.sleeper);
                l
            })
            .filter(|l| l.end > l.start)
            .collect();
        out.sort_by_key(|l| l.start);
        out
    }
}

/// A kernel thread by its name (kernel threads make no system calls, so without syscall
/// events this is what tells their own sleeps from a program's waits).
fn kernel_thread(comm: &str) -> bool {
    const PREFIXES: [&str; 12] = [
        "kworker/",
        "ksoftirqd/",
        "kthreadd",
        "rcu_",
        "rcuc/",
        "migration/",
        "irq/",
        "kswapd",
        "kcompactd",
        "watchdog",
        "cpuhp/",
        "idle_inject/",
    ];
    PREFIXES.iter().any(|p| comm.starts_with(p))
}
