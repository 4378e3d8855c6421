//! Each wait counted once: when misses overlap in time (a timer task still on an earlier
//! period, requests in flight together, two analyses of automatic mode finding the same
//! wait), one wait holds up several of them and the causes table's per-miss sums count it
//! once per miss. This module finds how much of each cause's sum is such repetition.

use crate::explain::report::{CauseKey, Miss};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Where each cause held each miss's chain: per cause, (start, end, held ns) of every link
/// it held, from every miss seen, and the sum over misses of each miss's own union (two
/// links of one chain can show one wait, the work pending and its worker runnable, which
/// the miss's blame already counts once).
#[derive(Clone, Default)]
pub(in crate::explain) struct Once(FxHashMap<CauseKey, (Vec<Span>, u64)>);

/// A link a cause held: (start, end, held ns).
type Span = (u64, u64, u64);

impl Once {
    /// Adds one explained miss's links (those that can be blamed).
    pub(in crate::explain) fn add(&mut self, m: &Miss) {
        let mut mine: FxHashMap<CauseKey, Vec<Span>> = FxHashMap::default();
        for l in m.chain.iter().filter(|l| !l.after_deadline) {
            for h in l.held_by.iter().filter(|h| h.ns > 0) {
                let k = (h.category, h.culprit.clone());
                let end = l.ts_ns + l.duration_ns.max(1);
                mine.entry(k).or_default().push((l.ts_ns, end, h.ns));
            }
        }
        for (k, spans) in mine {
            let e = self.0.entry(k).or_default();
            e.1 += swept(&spans);
            e.0.extend(spans);
        }
    }

    /// Adds every miss of a batch.
    pub(in crate::explain) fn of(misses: &[Miss]) -> Once {
        let mut o = Once::default();
        for m in misses {
            o.add(m);
        }
        o
    }

    /// Per cause, the time its sum over misses counts twice or more: where links of
    /// different misses overlap, the overlap counts once, at the largest rate (held ns per
    /// ns of link) any of them gives the cause there. Causes with no overlap (beyond rounding)
    /// are absent.
    pub(in crate::explain) fn repeated(&self) -> FxHashMap<CauseKey, u64> {
        let mut out = FxHashMap::default();
        for (k, (spans, per_miss)) in &self.0 {
            // Each miss's union is rounded to the ns: apart, the sums may differ by that.
            let once = swept(spans) + spans.len() as u64;
            if once < *per_miss {
                out.insert(k.clone(), per_miss - once);
            }
        }
        out
    }
}

/// The union of `spans`, each ns of it weighted by the largest rate of a span over it.
fn swept(spans: &[Span]) -> u64 {
    // Boundaries: +rate at a start, -rate at an end; rates are positive, so their f64 bits
    // order as the rates do.
    let mut edges: Vec<(u64, bool, u64)> = Vec::with_capacity(spans.len() * 2);
    for &(a, b, ns) in spans {
        let rate = (ns as f64 / (b - a) as f64).to_bits();
        edges.push((a, true, rate));
        edges.push((b, false, rate));
    }
    edges.sort_unstable();
    let mut open: BTreeMap<u64, u32> = BTreeMap::new();
    let (mut total, mut last) = (0f64, 0u64);
    for (t, start, rate) in edges {
        if let Some((&top, _)) = open.last_key_value() {
            total += (t - last) as f64 * f64::from_bits(top);
        }
        last = t;
        if start {
            *open.entry(rate).or_default() += 1;
        } else if let Some(n) = open.get_mut(&rate) {
            *n -= 1;
            if *n == 0 {
                open.remove(&rate);
            }
        }
    }
    total.round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_nested_in_another_counts_once_at_its_rate() {
        // A 150 us wait fully held, and a period armed 1.3 us into it that waited the
        // rest: 150 us once, not 298.7.
        let s = [(0, 150_000, 150_000), (1_300, 150_000, 148_700)];
        assert_eq!(swept(&s), 150_000);
        // Half-held links: the overlap at the larger rate.
        let s = [(0, 100, 50), (50, 150, 100)];
        // [0,50) at 0.5, [50,100) at 1.0, [100,150) at 1.0.
        assert_eq!(swept(&s), 125);
        // Apart: the sum.
        let s = [(0, 10, 10), (20, 30, 5)];
        assert_eq!(swept(&s), 15);
    }
}
