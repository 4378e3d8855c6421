//! A late timerlat activation's thread wait told from the scheduler and interrupt
//! tracepoints in the same trace, when the osnoise events saw nothing of it: who held
//! its CPU from the timer IRQ to the thread running (`Timeline::occupants`), each
//! hardirq and softirq by name from irq_handler_* / softirq_*, each other task as blame
//! calls it: a runqueue wait behind a task of its priority or above, a preemption delay
//! behind a lower-priority one (only non-preemptible kernel code holds off a real-time
//! thread so).

use crate::event::Interner;
use crate::explain::causes as cause;
use crate::explain::report::{Culprit, Hold};
use crate::timeline::{OccupantKind, Timeline};

/// The parts of `cpu`'s time over `[from, to)` that the tracepoints name, largest first;
/// `tid` (the timerlat thread) and idle are left to the remainder. Empty when the trace
/// holds no such spans there.
pub(in crate::explain) fn traced_parts(
    tl: &Timeline,
    s: &Interner,
    cpu: u32,
    (from, to): (u64, u64),
    tid: i32,
) -> Vec<Hold> {
    let mut out = Vec::new();
    if to <= from {
        return out;
    }
    for o in tl.occupants(cpu, from, to) {
        let id = o.id;
        let (category, culprit) = match o.what {
            OccupantKind::Task if id == i64::from(tid) || id <= 0 => continue,
            OccupantKind::Task => crate::explain::blame::behind_task(
                tl,
                s,
                cpu,
                (tid, false),
                id as i32,
                from,
                o.name,
            ),
            OccupantKind::Hardirq => (
                cause::HARDIRQ,
                Culprit {
                    irq: u32::try_from(id).ok(),
                    irq_name: Some(s.get(o.name).to_string()).filter(|n| !n.is_empty()),
                    cpu: Some(cpu),
                    ..Default::default()
                },
            ),
            OccupantKind::Softirq => (
                cause::SOFTIRQ,
                Culprit {
                    vector: Some(crate::read::softirq_name(id as u8).to_string()),
                    cpu: Some(cpu),
                    ..Default::default()
                },
            ),
        };
        out.push(Hold {
            category,
            culprit,
            ns: o.ns,
            why: None,
            nested_ns: 0,
        });
    }
    out
}
