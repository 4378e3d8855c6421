//! Time the idle task spent in interrupt context. The trace spans a handler only between
//! its entry and exit events, and an hrtimer callback only between its expire events, but
//! the CPU stays in interrupt context around them: the softirq loop after a vector's
//! `softirq_exit` until it wakes ksoftirqd (seed 002: `dns3`), a timer interrupt whose
//! entry is not traced raising a softirq (`d.h1`), the irq exit after a callback. Counted
//! as the idle task's, that time was blamed on `cpu-idle` (and advised as C-state
//! latency). Here, events that the kernel marked as in hard or soft interrupt context
//! (a wakeup, a raise) and the spans of handlers and callbacks are marks; the idle time
//! between two marks close together with nothing but the idle task between them was
//! interrupt context too, and is blamed on the context it was in.

use crate::event::{Sym, SOFTIRQ_NAMES};
use crate::explain::causes as cause;
use crate::explain::engine::Engine;
use crate::explain::report::{Culprit, Hold};
use crate::timeline::{Ctx, OccupantKind, SpanKind};

/// Marks further apart than this are not taken for one stay in interrupt context.
const BRIDGE_NS: u64 = 100_000;

/// What context a mark says the CPU was in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum In {
    /// A hard interrupt (its number when known).
    Hard(Option<u32>),
    /// An hrtimer callback in the timer interrupt (its function).
    Timer(Sym),
    /// A softirq (its vector when known).
    Soft(Option<u8>),
}

/// One mark: `[start, end]` in a context (a point for an event); `span` when the end is
/// an exit from that context.
#[derive(Clone, Copy, Debug)]
struct Mark {
    start: u64,
    end: u64,
    ctx: In,
    span: bool,
}

impl Engine<'_> {
    /// The idle task's time in `[a, b]` on `cpu` that was interrupt context: holds by
    /// the context, their sum taken from `cpu-idle` by the caller.
    pub(in crate::explain) fn idle_in_irq(&self, cpu: u32, a: u64, b: u64) -> Vec<Hold> {
        let marks = self.marks(cpu, a.saturating_sub(BRIDGE_NS), b + BRIDGE_NS);
        let mut parts: Vec<(u64, u64, In)> = Vec::new();
        for m in &marks {
            // A callback's own run: the spans of handlers are the caller's already.
            if matches!(m.ctx, In::Timer(_)) && m.span {
                parts.push((m.start, m.end, m.ctx));
            }
        }
        // Swept by start, against the mark that ends last so far (a softirq run outlasts
        // the handlers nested in it).
        let mut last: Option<Mark> = None;
        for &y in &marks {
            if let Some(x) = last.filter(|x| y.start > x.end && y.start - x.end <= BRIDGE_NS) {
                // Leaving a span, the CPU was still in its context; else in the next one's.
                let ctx = if x.span { x.ctx } else { y.ctx };
                parts.push((x.end, y.start, ctx));
            }
            if last.is_none_or(|x| y.end >= x.end) {
                last = Some(y);
            }
        }
        let mut out: Vec<Hold> = Vec::new();
        for (s, e, ctx) in parts {
            let (s, e) = (s.max(a), e.min(b));
            if e <= s {
                continue;
            }
            let occ = self.tl.occupants(cpu, s, e);
            // Only where nothing but the idle task ran (a task between the marks means
            // the CPU left interrupt context).
            if occ
                .iter()
                .any(|o| o.what == OccupantKind::Task && o.id != 0)
            {
                continue;
            }
            let idle: u64 = (occ.iter())
                .filter(|o| o.what == OccupantKind::Task)
                .map(|o| o.ns)
                .sum();
            if idle > 0 {
                out.push(self.irq_hold(cpu, ctx, idle));
            }
        }
        crate::explain::blame::merge_same(out)
    }

    /// The marks on `cpu` in `[from, to]`, by start.
    fn marks(&self, cpu: u32, from: u64, to: u64) -> Vec<Mark> {
        let (tl, sp) = (self.tl, &self.tl.spans);
        let mut out = Vec::new();
        if let Some(list) = tl.irqs_by_cpu.get(cpu as usize) {
            let first = list.partition_point(|&i| sp.end[i as usize] < from);
            for &i in &list[first..] {
                let i = i as usize;
                if sp.start[i] > to {
                    continue;
                }
                let ctx = match sp.kind[i] {
                    SpanKind::Hardirq => In::Hard((sp.key[i] != u32::MAX).then_some(sp.key[i])),
                    _ => In::Soft(Some(sp.key[i] as u8)),
                };
                out.push(Mark {
                    start: sp.start[i],
                    end: sp.end[i],
                    ctx,
                    span: true,
                });
                if sp.end[i] > to + BRIDGE_NS {
                    break;
                }
            }
        }
        if let Some(list) = self.timer_cbs.get(cpu as usize) {
            let first = list.partition_point(|&i| sp.start[i as usize] + BRIDGE_NS < from);
            for &i in list[first..]
                .iter()
                .take_while(|&&i| sp.start[i as usize] <= to)
            {
                let i = i as usize;
                out.push(Mark {
                    start: sp.start[i],
                    end: sp.end[i],
                    ctx: In::Timer(Sym(sp.key[i])),
                    span: true,
                });
            }
        }
        let first = self.edge_ts.partition_point(|&t| t < from);
        let raises = self
            .softirq_runs
            .get(cpu as usize)
            .map_or(&[][..], |v| &v[..]);
        let r0 = raises.partition_point(|&i| tl.edges[i as usize].at < from);
        let edges = (self.edges[first..].iter())
            .take_while(|&&i| tl.edges[i as usize].ts <= to)
            .chain(
                raises[r0..]
                    .iter()
                    .filter(|&&i| tl.edges[i as usize].ts <= to),
            );
        for &i in edges {
            let e = &tl.edges[i as usize];
            if e.from_cpu != cpu || e.ts < from {
                continue;
            }
            let ctx = match tl.resolve(e.from, e.from_cpu, e.ts) {
                Ctx::Hardirq { irq } => In::Hard((irq != u32::MAX).then_some(irq)),
                Ctx::Softirq { vec } => In::Soft((vec != u8::MAX).then_some(vec)),
                _ => continue,
            };
            out.push(Mark {
                start: e.ts,
                end: e.ts,
                ctx,
                span: false,
            });
        }
        out.sort_by_key(|m| (m.start, m.end));
        out
    }

    /// A hold of `ns` on `cpu` in context `ctx`.
    fn irq_hold(&self, cpu: u32, ctx: In, ns: u64) -> Hold {
        let tl = self.tl;
        let (category, culprit) = match ctx {
            In::Hard(irq) => (
                cause::HARDIRQ,
                Culprit {
                    irq,
                    irq_name: irq
                        .and_then(|i| tl.irq_names.get(&i))
                        .map(|n| self.s.get(*n).to_string()),
                    caller: irq
                        .is_none()
                        .then(|| "interrupt context (untraced handler)".into()),
                    cpu: Some(cpu),
                    ..Default::default()
                },
            ),
            In::Timer(f) => (
                cause::HARDIRQ,
                Culprit {
                    caller: Some(format!("timer interrupt ({})", self.s.get(f))),
                    cpu: Some(cpu),
                    ..Default::default()
                },
            ),
            In::Soft(vec) => (
                cause::SOFTIRQ,
                Culprit {
                    vector: vec
                        .and_then(|v| SOFTIRQ_NAMES.get(v as usize))
                        .map(|s| s.to_string()),
                    caller: vec.is_none().then(|| "softirq context".into()),
                    cpu: Some(cpu),
                    ..Default::default()
                },
            ),
        };
        Hold {
            category,
            culprit,
            ns,
            why: None,
            nested_ns: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::explain::engine::Engine;
    use crate::testkit::{line, pass};

    /// CPU1 idle: a device interrupt (entry untraced) raises NET_RX at +0, an hrtimer
    /// callback runs +9..+88 in the timer interrupt, NET_RX runs from +97 to +100, and
    /// the softirq loop wakes ksoftirqd/1 at +104 after it. A task on CPU0 throughout.
    fn trace() -> String {
        let mut t = String::new();
        t += &line(900, 0, "t-7", ".....", "sys_getpid -> 0x7");
        t += &line(950, 1, "<idle>-0", "d..2.", "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120");
        t += &line(
            1_000,
            1,
            "<idle>-0",
            "d.h1.",
            "softirq_raise: vec=3 [action=NET_RX]",
        );
        t += &line(
            1_009,
            1,
            "<idle>-0",
            "d.H1.",
            "hrtimer_expire_entry: hrtimer=00000000deadbeef function=hrtimer_wakeup now=1009000",
        );
        t += &line(
            1_088,
            1,
            "<idle>-0",
            "d.H1.",
            "hrtimer_expire_exit: hrtimer=00000000deadbeef",
        );
        t += &line(
            1_097,
            1,
            "<idle>-0",
            "..s1.",
            "softirq_entry: vec=3 [action=NET_RX]",
        );
        t += &line(
            1_100,
            1,
            "<idle>-0",
            "..s1.",
            "softirq_exit: vec=3 [action=NET_RX]",
        );
        t += &line(
            1_104,
            1,
            "<idle>-0",
            "dNs2.",
            "sched_waking: comm=ksoftirqd/1 pid=22 prio=120 target_cpu=001",
        );
        t += &line(1_200, 0, "t-7", ".....", "sys_getpid -> 0x7");
        t
    }

    #[test]
    fn the_idle_task_in_interrupt_context_is_the_interrupt() {
        let p = pass(&trace());
        let eng = Engine::new(&p.tl, &p.strings);
        let us = 1_000;
        let held = eng.idle_in_irq(1, 1_000 * us, 1_104 * us);
        let got: Vec<(String, String, u64)> = (held.iter())
            .map(|h| (h.category.id().to_string(), h.culprit.label(), h.ns / us))
            .collect();
        // +0..+9 in hard interrupt context up to the callback (the same interrupt, as
        // far as the trace tells), the callback 79 us, the irq exit 9 us: 97 us; the
        // softirq loop after NET_RX 4 us. Nothing left is idle.
        assert_eq!(
            got,
            [
                (
                    "hardirq".into(),
                    "timer interrupt (hrtimer_wakeup)".into(),
                    97
                ),
                ("softirq".into(), "softirq NET_RX".into(), 4),
            ]
        );
        // A task between two marks: the CPU left interrupt context, nothing is taken.
        assert!(eng.idle_in_irq(0, 900 * us, 1_200 * us).is_empty());
    }
}
