//! The blame rules: what held a waiting link's CPU (`Engine::holds`: runqueue-wait,
//! preempted-by, hardirq, softirq, irqs-off, cpu-idle, timer-irq-late...), the excess
//! split over them (`scale`), and the time no link explains: the gaps between a cycle's
//! links and what the chain was doing then (on-cpu, blocked-on, device/external).

pub(crate) mod console;
pub(crate) mod driver;
pub(crate) mod irq_stack;
pub(crate) mod irqctx;
pub(crate) mod once;

use crate::event::{Sym, SOFTIRQ_NAMES};
use crate::explain::causes::{self as cause, Category};
use crate::explain::cycle::Cycle;
use crate::explain::engine::{Engine, LinkKind, RawLink, Wait};
use crate::explain::report::{prio_words, Culprit, Hold};
use crate::timeline::{Ctx, OccupantKind, NONE};
use crate::units::dur;
use rustc_hash::FxHashSet;

/// The gap blamed on events lost in window `w`.
fn lost_cause(w: &crate::timeline::LostWindow) -> (Category, Culprit, String) {
    let on = match w.cpu {
        u32::MAX => "some CPU".to_string(),
        c => format!("CPU{c}"),
    };
    let culprit = Culprit {
        cpu: (w.cpu != u32::MAX).then_some(w.cpu),
        ..Default::default()
    };
    let what = format!(
        "events were lost on {on} between {} and {}: what happened there is not in the trace",
        crate::units::secs(w.from),
        crate::units::secs(w.to)
    );
    (cause::UNKNOWN_LOST_EVENTS, culprit, what)
}

/// The first lost-events window that overlaps `[a, b]`, on any CPU.
fn lost_in(tl: &crate::timeline::Timeline, a: u64, b: u64) -> Option<&crate::timeline::LostWindow> {
    tl.lost.iter().find(|w| w.from < b && w.to > a)
}

/// What the chain was doing in `[a, b]`, where no wait explains the time.
pub(in crate::explain) fn gap_cause(
    eng: &Engine<'_>,
    (links, chain, waiting): (&[RawLink], &FxHashSet<i32>, Option<&Wait>),
    c: &Cycle,
    a: u64,
    b: u64,
    connected: bool,
) -> (Category, Culprit, String) {
    let tl = eng.tl;
    let sp = &tl.spans;
    if let Some(bl) = tl.blind_in(u32::MAX, a, b) {
        return (
            cause::TRACE_CUT,
            Culprit {
                cpu: Some(bl.cpu),
                ..Default::default()
            },
            format!(
                "CPU{}'s data ends at {} (the file is cut short): what happened there is not in the trace",
                bl.cpu,
                crate::units::secs(bl.from)
            ),
        );
    }
    if let Some(w) = lost_in(tl, a, b) {
        // Events were lost (or their page damaged) inside the gap: the reply, the wakeup
        // or the work that explains it may be among them.
        return lost_cause(w);
    }
    if let Some(found) = waiting.and_then(|w| waker_cause(eng, w, a, b)) {
        return found;
    }
    if waiting.is_none() && (!connected || links.iter().all(|l| l.start >= b)) {
        // An interrupt handler that held a CPU most of the time: the device's own
        // interrupt could not be taken behind it (seed 003: a 56 ms storage handler).
        if let Some((irq, cpu, ns)) = longest_handler(eng, a, b).filter(|x| x.2 * 2 >= b - a) {
            let culprit = Culprit {
                irq: Some(irq),
                irq_name: tl.irq_names.get(&irq).map(|n| eng.s.get(*n).to_string()),
                cpu: Some(cpu),
                ..Default::default()
            };
            let what = format!(
                "nothing on the chain moved for {} while {} ran {} on CPU{cpu}: an interrupt behind it there could not be taken",
                dur(b - a),
                culprit.label(),
                dur(ns)
            );
            return (cause::HARDIRQ, culprit, what);
        }
        if let Some(late) = late_interrupt(eng, links, a, b) {
            return late;
        }
        if let Some(own) = inside_own_call(eng, c, a, b) {
            return own;
        }
        return (
            cause::DEVICE_EXTERNAL,
            Culprit {
                cpu: Some(c.cpu),
                ..Default::default()
            },
            format!(
                "nothing on the chain moved for {}: the device or peer took that long to answer",
                dur(b - a)
            ),
        );
    }
    // A chain task (other than a thread busy-polling for the reply) on a CPU: computing.
    let mut best: Option<(i32, u32, u64)> = None;
    for cpu in 0..tl.cpus {
        for o in tl.occupants(cpu, a, b) {
            let tid = o.id as i32;
            if o.what == OccupantKind::Task
                && tid > 0
                && tid != c.tid
                && chain.contains(&tid)
                && best.is_none_or(|x| o.ns > x.2)
            {
                best = Some((tid, cpu, o.ns));
            }
        }
    }
    if let Some((tid, cpu, ns)) = best.filter(|x| x.2 * 2 >= b - a) {
        let _ = ns;
        return (
            cause::ON_CPU,
            Culprit {
                comm: Some(eng.s.get(tl.comm(tid)).to_string()),
                pid: Some(tid),
                prio: tl.prios.get(&tid).copied(),
                cpu: Some(cpu),
                ..Default::default()
            },
            format!(
                "{} ran on CPU{cpu} (the chain's work itself took longer)",
                eng.task(tid)
            ),
        );
    }
    // Asleep: the wakeup that ended the gap says who the chain waited for.
    // Waits are sorted by start: look only at those that began inside the gap.
    let first = eng.runnable.partition_point(|&i| sp.start[i as usize] < a);
    let woke = eng.runnable[first..]
        .iter()
        .map(|&i| i as usize)
        .take_while(|&i| sp.start[i] <= b + 1_000)
        .find(|&i| chain.contains(&sp.tid[i]) && sp.aux[i] != NONE);
    match woke {
        Some(i) => {
            let e = &tl.edges[sp.aux[i] as usize];
            let by = eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts);
            (
                cause::BLOCKED_ON,
                Culprit {
                    caller: Some(by.clone()),
                    cpu: Some(e.from_cpu),
                    ..Default::default()
                },
                format!("{} slept until {by} woke it", eng.task(sp.tid[i])),
            )
        }
        None => (
            cause::UNKNOWN,
            Culprit {
                cpu: Some(c.cpu),
                ..Default::default()
            },
            "no wait and no task of the chain on a CPU: time the trace does not explain".into(),
        ),
    }
}

/// What a chain blocked on a task (`w`) waited for in `[a, b]`: that task's own work where
/// it ran most of the time (a lock held long), or the call it slept in itself (its own
/// timer, a peer not on the chain): the wait is on that task, not on nothing.
fn waker_cause(eng: &Engine<'_>, w: &Wait, a: u64, b: u64) -> Option<(Category, Culprit, String)> {
    let tl = eng.tl;
    if let Some(cpu) = on_cpu_most(eng, w.waker, a, b) {
        let what = format!(
            "{} ran on CPU{cpu} while {} waited for it (its own work until it woke it)",
            eng.task(w.waker),
            eng.task(w.sleeper)
        );
        return Some((cause::ON_CPU, Culprit::task(tl, eng.s, w.waker, cpu), what));
    }
    let mid = a + (b - a) / 2;
    let call = (tl.syscalls.covering(w.waker, mid, mid))
        .filter(|c| (c.end.min(b) - c.start.max(a)) * 2 >= b - a)?;
    let what = format!(
        "{} waited for {}, itself asleep in {}",
        eng.task(w.sleeper),
        eng.task(w.waker),
        tl.call_words(eng.s, &call)
    );
    Some((
        cause::BLOCKED_ON,
        Culprit::task(tl, eng.s, w.waker, w.cpu),
        what,
    ))
}

/// The CPU `tid` ran on for at least half of `[a, b]`, if it did.
fn on_cpu_most(eng: &Engine<'_>, tid: i32, a: u64, b: u64) -> Option<u32> {
    (0..eng.tl.cpus).find(|&cpu| {
        let ns: u64 = (eng.tl.occupants(cpu, a, b).iter())
            .filter(|o| o.what == OccupantKind::Task && o.id == tid as i64)
            .map(|o| o.ns)
            .sum();
        ns * 2 >= b - a
    })
}

/// One hold per category and culprit, in the order each first came, their times (and
/// the part inside a deferral's wait) summed.
pub(in crate::explain) fn merge_same(held: Vec<Hold>) -> Vec<Hold> {
    let mut out: Vec<Hold> = Vec::with_capacity(held.len());
    for h in held {
        match (out.iter_mut()).find(|o| o.category == h.category && o.culprit == h.culprit) {
            Some(o) => {
                o.ns += h.ns;
                o.nested_ns += h.nested_ns;
            }
            None => out.push(h),
        }
    }
    out
}

/// Rescales holds so they add up to `ex`: the excess is split in proportion to what held
/// the CPU.
pub(in crate::explain) fn scale(held: &mut [Hold], ex: u64) {
    let sum: u64 = held.iter().map(|h| h.ns).sum::<u64>().max(1);
    for h in held {
        h.ns = (h.ns as u128 * ex as u128 / sum as u128) as u64;
        h.nested_ns = (h.nested_ns as u128 * ex as u128 / sum as u128) as u64;
    }
}

/// A wait whose end is inferred (its task's switch onto the CPU is not in the trace):
/// what the trace shows on the CPU keeps its own time, and the rest of the excess `ex` is
/// `switch-in-untraced`, a blind spot, rather than scaled onto what was seen. False when
/// the holds already cover `ex` (they are then scaled like any other).
pub(in crate::explain) fn untraced_rest(held: &mut Vec<Hold>, ex: u64, cpu: u32) -> bool {
    let seen: u64 = held.iter().map(|h| h.ns).sum();
    if seen >= ex {
        return false;
    }
    held.push(Hold::on_cpu(cause::SWITCH_IN_UNTRACED, cpu, ex - seen));
    true
}

/// The holds of a softirq's pending time: what ran instead of ksoftirqd is a deferral
/// (`deferred-to-ksoftirqd`, when it waited for the CPU), else the softirq waited for an
/// interrupt exit or bh enable (`softirq-pending`).
pub(in crate::explain) fn as_pending(held: &mut [Hold], ksoftirqd: bool) {
    for h in held {
        if h.category == cause::RUNQUEUE_WAIT || h.category == cause::PREEMPTED_BY {
            h.category = if ksoftirqd {
                cause::DEFERRED_TO_KSOFTIRQD
            } else {
                cause::SOFTIRQ_PENDING
            };
        }
    }
}

/// How far before a softirq queue wait its backlog's deferral is looked for.
const BACKLOG_LOOK_BACK: u64 = 50_000_000;

/// The holds of a wait in softirq `vec`'s queue: the vector's own runs meanwhile worked
/// through the backlog queued ahead of the work (`softirq-backlog`); they did not cut in
/// ahead of it the way another vector's runs do.
pub(in crate::explain) fn as_backlog(held: &mut [Hold], vec: u8) {
    let name = SOFTIRQ_NAMES.get(vec as usize).copied();
    for h in held {
        if h.category == cause::SOFTIRQ && h.culprit.vector.as_deref() == name {
            h.category = cause::SOFTIRQ_BACKLOG;
        }
    }
}

impl Engine<'_> {
    /// The time a deferred softirq's ksoftirqd (the link's waiter) ran in `[a, b)` outside
    /// any handler run (the thread between its runs): the softirq itself, as `softirq`
    /// with its vector. `holds` leaves the waiter's own time out of every other wait.
    pub(in crate::explain) fn ksoftirqd_own(&self, l: &RawLink, a: u64, b: u64) -> Option<Hold> {
        if l.defer_from.is_none() || l.tid <= 0 || b <= a {
            return None;
        }
        let own = (self.tl.occupants(l.cpu, a, b).into_iter())
            .find(|o| o.what == OccupantKind::Task && o.id == l.tid as i64)?;
        let vector = l.queue.and_then(|v| SOFTIRQ_NAMES.get(v as usize));
        Some(Hold {
            category: cause::SOFTIRQ,
            culprit: Culprit {
                vector: vector.map(|v| v.to_string()),
                cpu: Some(l.cpu),
                ..Default::default()
            },
            ns: own.ns,
            why: None,
            nested_ns: 0,
        })
    }

    /// With per-packet events, whose packets NET_RX took on the link's CPU in `[a, b)`
    /// (before the link's own, which is taken at or after its end), said under its
    /// `softirq-backlog` hold: the backlog ahead of the work, by sender.
    pub(in crate::explain) fn backlog_packets(
        &self,
        held: &mut [Hold],
        l: &RawLink,
        a: u64,
        b: u64,
    ) {
        let Some(h) = (held.iter_mut()).find(|h| h.category == cause::SOFTIRQ_BACKLOG) else {
            return;
        };
        if l.queue != Some(3) || self.packets.is_empty() {
            return;
        }
        let tl = self.tl;
        let b = b.min(l.end);
        let n = self
            .packets
            .partition_point(|&i| tl.edges[i as usize].ts < b);
        let mut by: Vec<(i32, u32)> = Vec::new();
        for p in (self.packets[..n].iter().rev().take(4096)).map(|&i| &tl.edges[i as usize]) {
            if p.to_cpu != l.cpu || p.at < a || p.at >= b {
                continue;
            }
            match by.iter_mut().find(|x| x.0 == p.from_tid) {
                Some(x) => x.1 += 1,
                None => by.push((p.from_tid, 1)),
            }
        }
        if by.is_empty() {
            return;
        }
        by.sort_by_key(|x| (std::cmp::Reverse(x.1), x.0));
        let total: u32 = by.iter().map(|x| x.1).sum();
        let senders: Vec<String> = (by.iter().take(3))
            .map(|&(t, k)| format!("{k} from {}", self.task(t)))
            .collect();
        let more = if by.len() > 3 { ", ..." } else { "" };
        h.why = Some(format!(
            "NET_RX took {total} other packet(s) on CPU{} meanwhile: {}{more} (matched by skb address)",
            l.cpu,
            senders.join(", ")
        ));
    }

    /// A wait in a softirq's queue whose backlog piled up before it (the link's own time
    /// shows only the vector working through it): where that backlog followed a wait of
    /// the CPU's ksoftirqd for the CPU, ended at most [`BACKLOG_LOOK_BACK`] before `a`
    /// and followed by the vector's work (ksoftirqd or its runs filling 80 % of the time
    /// since), the backlog's time is that deferral's, named after the task that ran
    /// instead of ksoftirqd, with the wait in the words.
    pub(in crate::explain) fn backlog_root(&self, held: &mut [Hold], l: &RawLink, a: u64) {
        let vec = match l.queue {
            Some(v) => v,
            None => return,
        };
        if held
            .iter()
            .any(|h| h.category == cause::DEFERRED_TO_KSOFTIRQD)
        {
            return;
        }
        let Some(h) = (held.iter_mut()).find(|h| h.category == cause::SOFTIRQ_BACKLOG) else {
            return;
        };
        let Some((k, culprit, waited)) = self.ksoftirqd_wait_before(l.cpu, vec, a, l.end) else {
            return;
        };
        let root = format!(
            "the {} backlog it waited behind piled up while {} waited {} for CPU{} behind {}, until {} before this wait",
            SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("softirq"),
            self.task(k.0),
            dur(waited),
            l.cpu,
            culprit.label(),
            dur(a.saturating_sub(k.1))
        );
        // The packets taken meanwhile, where per-packet events said so, stay said.
        h.why = Some(match h.why.take() {
            Some(packets) => format!("{root}; {packets}"),
            None => root,
        });
        h.category = cause::DEFERRED_TO_KSOFTIRQD;
        h.culprit = culprit;
    }

    /// The last wait of `cpu`'s ksoftirqd for the CPU that ended in `[a - look-back, b)`
    /// with the vector `vec` at work from its end to `a`: (ksoftirqd, the wait's end), the
    /// task that held the CPU most of it, and the wait's length.
    fn ksoftirqd_wait_before(
        &self,
        cpu: u32,
        vec: u8,
        a: u64,
        b: u64,
    ) -> Option<((i32, u64), Culprit, u64)> {
        let (tl, sp) = (self.tl, &self.tl.spans);
        let n = self.runnable.partition_point(|&i| sp.start[i as usize] < b);
        let name = format!("ksoftirqd/{cpu}");
        let i = (self.runnable[..n].iter().rev().take(4096))
            .map(|&i| i as usize)
            .filter(|&i| sp.cpu[i] == cpu && sp.end[i] < b)
            .take_while(|&i| sp.start[i] + BACKLOG_LOOK_BACK >= a)
            .find(|&i| {
                sp.end[i] + BACKLOG_LOOK_BACK >= a && self.s.get(tl.comm(sp.tid[i])) == name
            })?;
        let (k, end) = (sp.tid[i], sp.end[i]);
        if end < a {
            let busy: u64 = (tl.occupants(cpu, end, a).into_iter())
                .filter(|o| {
                    (o.what == OccupantKind::Task && o.id == k as i64)
                        || (o.what == OccupantKind::Softirq && o.id == vec as i64)
                })
                .map(|o| o.ns)
                .sum();
            if busy * 5 < (a - end) * 4 {
                return None;
            }
        }
        let wait = self.run_link(i);
        let top = (self.holds(&wait, sp.start[i], end).into_iter())
            .filter(|h| h.culprit.pid.is_some_and(|p| p > 0))
            .max_by_key(|h| h.ns)?;
        Some(((k, end), top.culprit, end - sp.start[i]))
    }

    /// What held `cpu` during `[a, b)` while `waiter` waited: categories and culprits.
    pub(in crate::explain) fn holds(&self, l: &RawLink, a: u64, b: u64) -> Vec<Hold> {
        let tl = self.tl;
        if b <= a || l.cpu == u32::MAX {
            return Vec::new();
        }
        if !tl.lost.is_empty() && tl.crosses_loss(l.cpu, a, b) {
            return vec![Hold::on_cpu(cause::UNKNOWN_LOST_EVENTS, l.cpu, b - a)];
        }
        // After a cut CPU's last event nothing is known there.
        if let Some(from) = tl.blind_in(l.cpu, a, b).map(|bl| bl.from.max(a)) {
            let mut out = self.holds(l, a, from);
            out.push(Hold::on_cpu(cause::TRACE_CUT, l.cpu, b - from));
            return out;
        }
        let mut out = Vec::new();
        // An irqs-off section over a late timer is the reason the interrupt came late.
        if l.kind == LinkKind::Timer {
            let sp = &tl.spans;
            if let Some(list) = self.irqsoff_by_cpu.get(l.cpu as usize) {
                for &j in list {
                    let j = j as usize;
                    let ov = sp.end[j].min(b).saturating_sub(sp.start[j].max(a));
                    if ov > 0 {
                        out.push(Hold {
                            category: cause::IRQS_OFF,
                            culprit: Culprit {
                                caller: Some(
                                    self.s
                                        .get(Sym(sp.key[j]))
                                        .split('+')
                                        .next()
                                        .unwrap_or("")
                                        .to_string(),
                                ),
                                cpu: Some(l.cpu),
                                ..Default::default()
                            },
                            ns: ov,
                            why: None,
                            nested_ns: 0,
                        });
                    }
                }
            }
            if !out.is_empty() {
                return out;
            }
            // A CPU idle throughout woke late for its timer: idle exit, or on a VM a host
            // that did not run the vCPU in time.
            let occ = tl.occupants(l.cpu, a, b);
            if occ.len() == 1 && occ[0].what == OccupantKind::Task && occ[0].id == 0 {
                return vec![Hold::on_cpu(cause::CPU_IDLE, l.cpu, b - a)];
            }
            // A running task does not delay a hard timer interrupt; with no irqs-off section
            // in the trace the reason is not visible (preemptirq events would show it).
            return vec![Hold::on_cpu(cause::TIMER_IRQ_LATE, l.cpu, b - a)];
        }
        let occ = tl.occupants(l.cpu, a, b);
        // The idle task's time in interrupt context is the interrupt's, not idleness.
        let in_irq = match occ
            .iter()
            .any(|o| o.what == OccupantKind::Task && o.id == 0)
        {
            true => self.idle_in_irq(l.cpu, a, b),
            false => Vec::new(),
        };
        let irq_ns: u64 = in_irq.iter().map(|h| h.ns).sum();
        out.extend(in_irq);
        for o in occ {
            let (category, culprit) = match o.what {
                OccupantKind::Task if o.id == l.tid as i64 => continue,
                OccupantKind::Task if o.id == 0 && o.ns <= irq_ns => continue,
                OccupantKind::Task if o.id == 0 => (
                    cause::CPU_IDLE,
                    Culprit {
                        cpu: Some(l.cpu),
                        ..Default::default()
                    },
                ),
                OccupantKind::Task => behind_task(
                    tl,
                    self.s,
                    l.cpu,
                    (l.tid, l.preempted),
                    o.id as i32,
                    a,
                    o.name,
                ),
                OccupantKind::Hardirq => (
                    cause::HARDIRQ,
                    Culprit {
                        irq: Some(o.id as u32),
                        irq_name: Some(self.s.get(o.name).to_string()).filter(|n| !n.is_empty()),
                        cpu: Some(l.cpu),
                        ..Default::default()
                    },
                ),
                OccupantKind::Softirq => (
                    cause::SOFTIRQ,
                    Culprit {
                        vector: SOFTIRQ_NAMES.get(o.id as usize).map(|s| s.to_string()),
                        cpu: Some(l.cpu),
                        ..Default::default()
                    },
                ),
            };
            let idle = o.what == OccupantKind::Task && o.id == 0;
            out.push(Hold {
                category,
                culprit,
                ns: if idle { o.ns - irq_ns } else { o.ns },
                why: None,
                nested_ns: 0,
            });
        }
        if let Some(sleeper) = l.waits_for {
            self.as_inversion(&mut out, l, sleeper, a);
        }
        out
    }

    /// The waker `l.tid` was kept off its CPU while `sleeper` (a task of the chain) slept
    /// until it woke it: when the sleeper outranks the waker, each task that held the
    /// waker off is a priority inversion, said with the three priorities.
    fn as_inversion(&self, held: &mut [Hold], l: &RawLink, sleeper: i32, at: u64) {
        let tl = self.tl;
        let (Some(hi), Some(lo)) = (tl.prio_at(sleeper, at), tl.prio_at(l.tid, at)) else {
            return;
        };
        if hi >= lo {
            return;
        }
        for h in held.iter_mut() {
            let by_task = [
                cause::PREEMPTED_BY,
                cause::RUNQUEUE_WAIT,
                cause::PREEMPTION_DELAY,
            ];
            let Some(pid) = h.culprit.pid.filter(|_| by_task.contains(&h.category)) else {
                continue;
            };
            let nonpreemptible = h.category == cause::PREEMPTION_DELAY;
            let mid = tl.prio_at(pid, at).or(h.culprit.prio);
            let between = mid.is_some_and(|m| hi <= m && m < lo);
            h.category = cause::PRIORITY_INVERSION;
            h.why = Some(format!(
                "{}{} waited for {}{}, which {}{}{} kept off CPU{}{}",
                self.task(sleeper),
                prio_words(Some(hi)),
                self.task(l.tid),
                prio_words(Some(lo)),
                self.task(pid),
                prio_words(mid),
                if between { " (between the two)" } else { "" },
                l.cpu,
                if nonpreemptible {
                    " in non-preemptible code"
                } else {
                    ""
                },
            ));
        }
    }
}

/// What held `waiter` (the task, and whether it was preempted) off `cpu` while task `tid`
/// (`name` when the trace never named it) ran there from `at`. A lower-priority task
/// cannot hold a real-time one off the CPU except inside code that cannot be preempted:
/// that is the kernel's delay, still charged to `tid` so that the recorder's own threads
/// are known as such. Otherwise a runqueue wait, or a preemption.
pub(in crate::explain) fn behind_task(
    tl: &crate::timeline::Timeline,
    s: &crate::event::Interner,
    cpu: u32,
    (waiter, preempted): (i32, bool),
    tid: i32,
    at: u64,
    name: Sym,
) -> (Category, Culprit) {
    let comm = Some(s.get(tl.comm(tid)).to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| s.get(name).to_string());
    let category = match (tl.prio_at(waiter, at), tl.prio_at(tid, at)) {
        (Some(w), Some(p)) if w < 100 && w < p => {
            return (
                cause::PREEMPTION_DELAY,
                Culprit {
                    caller: Some(format!(
                        "non-preemptible kernel code while {comm}[{tid}] ran"
                    )),
                    pid: Some(tid),
                    cpu: Some(cpu),
                    ..Default::default()
                },
            )
        }
        _ if preempted => cause::PREEMPTED_BY,
        _ => cause::RUNQUEUE_WAIT,
    };
    (
        category,
        Culprit {
            comm: Some(comm),
            pid: Some(tid),
            prio: tl.prios.get(&tid).copied(),
            cpu: Some(cpu),
            ..Default::default()
        },
    )
}

/// The one task that ran on `cpu` through `[a, b]` from inside one syscall, if so.
pub(in crate::explain) fn one_syscall(
    eng: &Engine<'_>,
    cpu: u32,
    a: u64,
    b: u64,
) -> Option<(i32, String)> {
    let tl = eng.tl;
    let occ = tl.occupants(cpu, a, b);
    let top = occ.first()?;
    if top.what != OccupantKind::Task || top.id <= 0 || top.ns * 100 < (b - a) * 95 {
        return None;
    }
    let tid = top.id as i32;
    let c = tl.syscalls.covering(tid, a, b)?;
    Some((tid, tl.syscall_name(eng.s, c.key, c.flags)))
}

/// The cycle's own thread held its CPU inside one system call through `[a, b]` (never
/// switched out): the time went inside that call (its kernel work, a driver's busy wait,
/// or an interrupt or the host the trace does not record), not to a device or a peer,
/// which the thread would have slept for.
fn inside_own_call(
    eng: &Engine<'_>,
    c: &Cycle,
    a: u64,
    b: u64,
) -> Option<(Category, Culprit, String)> {
    let (tid, name) = one_syscall(eng, c.cpu, a, b).filter(|x| x.0 == c.tid)?;
    let tl = eng.tl;
    let culprit = Culprit {
        comm: Some(eng.s.get(tl.comm(tid)).to_string()),
        pid: Some(tid),
        prio: tl.prios.get(&tid).copied(),
        cpu: Some(c.cpu),
        ..Default::default()
    };
    let what = format!(
        "{} stayed on CPU{} inside its {name}() for {}: the call's own kernel work, or an interrupt or the host the trace does not record (record irq:* and irq_vectors:* to tell)",
        eng.task(tid),
        c.cpu,
        dur(b - a)
    );
    Some((cause::ON_CPU, culprit, what))
}

/// Why `cpu` took no timer interrupt over `[a, b]` (it recorded nothing, or its timer
/// fired late), weighed on the evidence, with the evidence in `why`. A task inside one
/// system call the whole time is kernel code that ran with interrupts off: `irqs-off
/// (inferred)` naming the task and call (`on-cpu` when the task is the waiter's own
/// chain: its own call held it up). Otherwise user space cannot hold the tick off, so the
/// CPU itself did not run (a host that did not schedule the vCPU) or events were lost:
/// `cpu-stalled`. What the other busy CPUs recorded meanwhile is said either way.
pub(in crate::explain) fn silent_cpu(
    eng: &Engine<'_>,
    cpu: u32,
    (a, b): (u64, u64),
    ns: u64,
    own: &dyn Fn(i32) -> bool,
) -> Hold {
    let tl = eng.tl;
    let silent = tl.ticks > 0 && tl.silent_ns(Some(cpu), a, b) * 2 >= b - a;
    let what = if silent {
        format!(
            "CPU{cpu} recorded nothing, not even its tick, for {}",
            dur(b - a)
        )
    } else {
        format!("the timer interrupt on CPU{cpu} came {} late", dur(b - a))
    };
    let others = others_view(tl, cpu, a, b);
    if let Some(h) = console_untraced_call(eng, cpu, (a, b), ns) {
        return h;
    }
    if let Some((tid, name)) = one_syscall(eng, cpu, a, b) {
        let start = tl.syscalls.covering(tid, a, b).map_or(a, |c| c.start);
        let (call, short) = (format!("one {name}() call"), format!("{name}()"));
        if let Some(h) = console_since(eng, cpu, (a, b), ns, (tid, &call, &short), start, &what) {
            return h;
        }
        let task = eng.task(tid);
        let why = format!(
            "{what} while {task} stayed inside one {name}() call{others}: that call ran with interrupts off (inferred; irq_disable events would show it, and a host not running the vCPU then would look the same)"
        );
        let category = if own(tid) {
            cause::ON_CPU
        } else {
            cause::IRQS_OFF_INFERRED
        };
        return Hold {
            category,
            culprit: Culprit {
                caller: Some(format!("inside {name}()")),
                ..Culprit::task(tl, eng.s, tid, cpu)
            },
            ns,
            why: Some(why),
            nested_ns: 0,
        };
    }
    let on = tl
        .silences
        .iter()
        .find(|s| s.cpu == cpu && s.from < b && s.to > a)
        .map_or_else(|| "a task".to_string(), |s| eng.task(s.tid));
    let place = if tl.syscalls.is_empty() {
        "(the trace has no syscall events to say whether it was in the kernel)"
    } else {
        "outside any system call (user space cannot keep the tick off)"
    };
    Hold {
        why: Some(format!(
            "{what} while {on} ran {place}{others}: the (virtual) CPU did not run (host preemption, steal time) or events were lost"
        )),
        ..Hold::on_cpu(cause::CPU_STALLED, cpu, ns)
    }
}

/// A task inside one system call (`call`: the task, the words for the call, and its short
/// name) over
/// `[a, b]` that logged kernel messages in it since `since` (printk:console): the silence
/// is printk printing them to the console with interrupts off, blamed on that task as
/// `slow-console`, with the lines, bytes and rate as evidence.
fn console_since(
    eng: &Engine<'_>,
    cpu: u32,
    (a, b): (u64, u64),
    ns: u64,
    (tid, call, short): (i32, &str, &str),
    since: u64,
    what: &str,
) -> Option<Hold> {
    let tl = eng.tl;
    let logged = crate::explain::console::logged(tl, cpu, tid, since, b)?;
    // The stretch runs from the first message to the CPU's next event.
    let end = (tl.silences.iter())
        .find(|s| s.cpu == cpu && s.from <= b && s.to >= a && s.to > logged.first)
        .map_or(b, |s| s.to.max(b));
    let said = crate::explain::console::words(&logged, end - logged.first, &tl.consoles);
    Some(Hold {
        category: cause::SLOW_CONSOLE,
        culprit: Culprit {
            caller: Some(format!("printk to the console inside {short}")),
            ..Culprit::task(tl, eng.s, tid, cpu)
        },
        ns,
        why: Some(format!(
            "{what} while {} stayed inside {call}: {said}",
            eng.task(tid)
        )),
        nested_ns: 0,
    })
}

/// Without syscall events: the one task on `cpu` through `[a, b]` logged console messages
/// since it got the CPU, so printk printed them with interrupts off (the call is not
/// named). None when the trace has syscall events (`one_syscall` decides there).
pub(in crate::explain) fn console_untraced_call(
    eng: &Engine<'_>,
    cpu: u32,
    (a, b): (u64, u64),
    ns: u64,
) -> Option<Hold> {
    let tl = eng.tl;
    if !tl.syscalls.is_empty() {
        return None;
    }
    let tid = one_task(eng, cpu, a, b)?;
    let since = run_start(tl, cpu, tid, a);
    let what = format!("the timer interrupt on CPU{cpu} came {} late", dur(b - a));
    let call = "a system call (the trace has no syscall events to name it)";
    console_since(
        eng,
        cpu,
        (a, b),
        ns,
        (tid, call, "a system call"),
        since,
        &what,
    )
}

/// The one task that held `cpu` through at least 95% of `[a, b]`, if one did.
fn one_task(eng: &Engine<'_>, cpu: u32, a: u64, b: u64) -> Option<i32> {
    let occ = eng.tl.occupants(cpu, a, b);
    let top = occ.first()?;
    (top.what == OccupantKind::Task && top.id > 0 && top.ns * 100 >= (b - a) * 95)
        .then_some(top.id as i32)
}

/// When `tid` last got `cpu` at or before `at` (`at` when the trace does not say).
fn run_start(tl: &crate::timeline::Timeline, cpu: u32, tid: i32, at: u64) -> u64 {
    let sp = &tl.spans;
    let Some(runs) = tl.runs_by_cpu.get(cpu as usize) else {
        return at;
    };
    let n = runs.partition_point(|&i| sp.start[i as usize] <= at);
    (runs[..n].iter().rev().take(64))
        .map(|&i| i as usize)
        .find(|&i| sp.tid[i] == tid)
        .map_or(at, |i| sp.start[i])
}

/// What the other CPUs recorded while `cpu` was silent over `[a, b]`, as a clause:
/// busy CPUs that kept recording make it this CPU's own silence; all of them silent at
/// once is the whole machine (or the tracer) stopping.
fn others_view(tl: &crate::timeline::Timeline, cpu: u32, a: u64, b: u64) -> String {
    let (mut kept, mut silent) = (Vec::new(), Vec::new());
    for c in (0..tl.cpus).filter(|&c| c != cpu) {
        if tl.silent_ns(Some(c), a, b) * 2 >= b - a {
            silent.push(format!("CPU{c}"));
            continue;
        }
        let busy: u64 = (tl.occupants(c, a, b).iter())
            .filter(|o| o.what != OccupantKind::Task || o.id > 0)
            .map(|o| o.ns)
            .sum();
        if busy * 2 >= b - a {
            kept.push(format!("CPU{c}"));
        }
    }
    match (kept.is_empty(), silent.is_empty()) {
        (_, false) => format!(
            "; {} went silent at the same time (the whole machine or the tracer stopped)",
            silent.join(", ")
        ),
        (false, true) => format!("; busy {} kept recording meanwhile", kept.join(", ")),
        (true, true) => "; no other busy CPU to compare with".into(),
    }
}

/// The interrupt handler that held one CPU longest in `[a, b]`: (irq, cpu, ns).
fn longest_handler(eng: &Engine<'_>, a: u64, b: u64) -> Option<(u32, u32, u64)> {
    let tl = eng.tl;
    (0..tl.cpus)
        .flat_map(|cpu| {
            (tl.occupants(cpu, a, b).into_iter())
                .filter(|o| o.what == OccupantKind::Hardirq && o.id >= 0 && o.id < u32::MAX as i64)
                .map(move |o| (o.id as u32, cpu, o.ns))
        })
        .max_by_key(|x| x.2)
}

/// A gap `[a, b]` that ended when the chain went on through an interrupt: the first
/// softirq hand-off after it was raised in a hardirq on its CPU. When that CPU had
/// recorded nothing (no switch, wakeup or softirq) for most of the gap while a task was on
/// it, the interrupt either came late (the device, or the sender's IPI) or could not be
/// taken there (interrupts off in that task's kernel code, or a vCPU the host did not
/// run): the trace cannot say which, and `irq-late` says so instead of blaming the device.
fn late_interrupt(
    eng: &Engine<'_>,
    links: &[RawLink],
    a: u64,
    b: u64,
) -> Option<(Category, Culprit, String)> {
    let tl = eng.tl;
    let next = (links.iter())
        .filter(|l| l.kind == LinkKind::Softirq && l.start >= b)
        .min_by_key(|l| l.start)?;
    let (cpu, at) = (next.cpu, next.start);
    let name = next.key.1.split(' ').next().unwrap_or("");
    let vec = SOFTIRQ_NAMES.iter().position(|n| *n == name)? as u8;
    // The run the link waited for or is: raised by `at`, entered at or after it.
    let runs = eng.softirq_runs.get(cpu as usize)?;
    let n = runs.partition_point(|&i| tl.edges[i as usize].at < at);
    let raise = (runs[n..].iter().take(8))
        .map(|&i| &tl.edges[i as usize])
        .find(|e| e.key == vec as u32 && e.ts <= at)?;
    if !matches!(
        tl.resolve(raise.from, raise.from_cpu, raise.ts),
        Ctx::Hardirq { .. }
    ) {
        return None;
    }
    let last = last_activity(eng, cpu, raise.ts)?;
    if (raise.ts.min(b)).saturating_sub(last.max(a)) * 2 < b - a {
        return None;
    }
    let on = tl.occupants(cpu, last, raise.ts);
    let top = on
        .first()
        .filter(|o| o.what == OccupantKind::Task && o.id > 0)?;
    let task = eng.task(top.id as i32);
    let what = format!(
        "nothing on the chain moved for {} until an interrupt on CPU{cpu} raised {name} there; CPU{cpu} had recorded nothing for {} before it while {task} ran: the interrupt came late (the device or the sender), or CPU{cpu} could not take it (interrupts off, or the vCPU did not run); the trace cannot tell which",
        dur(b - a),
        dur(raise.ts - last),
    );
    let culprit = Culprit {
        cpu: Some(cpu),
        ..Default::default()
    };
    Some((cause::IRQ_LATE, culprit, what))
}

/// The last time `cpu` recorded a switch, a wakeup or a softirq before `t`.
fn last_activity(eng: &Engine<'_>, cpu: u32, t: u64) -> Option<u64> {
    let tl = eng.tl;
    let sp = &tl.spans;
    let runs = tl.runs_by_cpu.get(cpu as usize)?;
    let n = runs.partition_point(|&i| sp.start[i as usize] < t);
    let switch = (runs[..n].iter().rev().take(2))
        .flat_map(|&i| [sp.start[i as usize], sp.end[i as usize]])
        .filter(|&x| x < t)
        .max();
    let softirqs = eng.softirq_runs.get(cpu as usize)?;
    let n = softirqs.partition_point(|&i| tl.edges[i as usize].at < t);
    let softirq = (softirqs[..n].iter().rev().take(2))
        .map(|&i| &tl.edges[i as usize])
        .flat_map(|e| {
            [
                e.ts,
                e.at,
                if e.span != NONE {
                    sp.end[e.span as usize]
                } else {
                    0
                },
            ]
        })
        .filter(|&x| x < t)
        .max();
    let n = eng.edge_ts.partition_point(|&e| e < t);
    let wakeup = (eng.edges[..n].iter().rev().take(4096))
        .map(|&i| &tl.edges[i as usize])
        .find(|e| e.from_cpu == cpu)
        .map(|e| e.ts);
    [switch, softirq, wakeup].into_iter().flatten().max()
}
