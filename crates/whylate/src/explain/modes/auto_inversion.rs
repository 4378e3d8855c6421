//! Automatic mode's priority inversions: a real-time task blocked on a task below it (a
//! lock's holder) while a third task kept that one off its CPU. The block is no wait for
//! a CPU nor a late timer, so the other measures do not see it; the waiter's deadline
//! does.

use crate::explain::causes as cause;
use crate::explain::engine::Engine;
use crate::explain::report::{Culprit, Link, Miss};
use crate::timeline::SpanKind;

/// Inversions a real-time task waited this long in, at least, are outliers (automatic
/// mode's floor for a real-time task's wait for a CPU).
const FLOOR: u64 = 100_000;

/// Each sleep of a real-time task that a lower-priority task ended, and in which a third
/// task held that one off its CPU for [`FLOOR`] or more, as an outlier: the wait, with
/// what delayed the waker (its own work, usual for a lock's holder, is not the excess).
pub(in crate::explain) fn inversions(eng: &Engine<'_>, found: &mut Vec<Miss>) {
    let (tl, sp) = (eng.tl, &eng.tl.spans);
    for &i in &eng.sleeps {
        let i = i as usize;
        let (tid, a, b) = (sp.tid[i], sp.start[i], sp.end[i]);
        let rt = tl.prios.get(&tid).is_some_and(|&p| p < 100);
        if !rt || tid <= 0 || sp.kind[i] != SpanKind::Sleep || b - a < FLOOR {
            continue;
        }
        let Some((held, waits)) = eng.blocked_holds(tid, a, b) else {
            continue;
        };
        let held: Vec<_> = (held.into_iter())
            .filter(|h| h.category != cause::ON_CPU)
            .collect();
        let inverted: u64 = (held.iter())
            .filter(|h| h.category == cause::PRIORITY_INVERSION)
            .map(|h| h.ns)
            .sum();
        let Some(w) = waits
            .iter()
            .find(|w| w.woke == b || (a..=b).contains(&w.woke))
        else {
            continue;
        };
        if inverted < FLOOR {
            continue;
        }
        let excess: u64 = held.iter().map(|h| h.ns).sum();
        let link = Link {
            duration_ns: b - a,
            usual_ns: Some((b - a).saturating_sub(excess)),
            excess_ns: excess,
            held_by: held,
            waiter: Some(Culprit::task(tl, eng.s, tid, sp.cpu[i])),
            ..Link::mark("wait-for", a, a, Some(w.cpu), w.what.clone())
        };
        found.push(Miss {
            cpus: Vec::new(),
            read_ns: None,
            not_reading: false,
            uncertain: false,
            blame: Vec::new(),
            start_ns: a,
            duration_ns: Some(b - a),
            tid,
            cpu: sp.cpu[i],
            // Ranked as automatic mode ranks a real-time task's waits.
            late_ns: excess.saturating_mul(10),
            blamed_ns: excess,
            chain: vec![link],
        });
    }
}
