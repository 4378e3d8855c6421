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
pub(in crate::explain) struct Once(FxHashMap<CauseKey, Held>);

/// What one cause held: its links still kept, the sum of each miss's own union, and what
/// the links retired before a time swept to ([`Once::retire_before`]) and how many.
#[derive(Clone, Default)]
struct Held {
    spans: Vec<Span>,
    per_miss: u64,
    retired: f64,
    retired_spans: u64,
}

/// A link a cause held: (start, end, held ns per ns of it).
type Span = (u64, u64, f64);

impl Once {
    /// Adds one explained miss's links (those that can be blamed).
    pub(in crate::explain) fn add(&mut self, m: &Miss) {
        let mut mine: FxHashMap<CauseKey, Vec<Span>> = FxHashMap::default();
        for l in m.chain.iter().filter(|l| !l.after_deadline) {
            for h in l.held_by.iter().filter(|h| h.ns > 0) {
                let k = (h.category, h.culprit.clone());
                let end = l.ts_ns + l.duration_ns.max(1);
                let rate = h.ns as f64 / (end - l.ts_ns) as f64;
                mine.entry(k).or_default().push((l.ts_ns, end, rate));
            }
        }
        for (k, spans) in mine {
            let e = self.0.entry(k).or_default();
            e.per_miss += swept(&spans).round() as u64;
            e.spans.extend(spans);
        }
    }

    /// Sweeps what the links kept hold before `t` into one sum and keeps only their part
    /// from `t` on: misses added from now on begin at `t` or later, so what is before it
    /// can no longer overlap (a long trace merged from windows keeps the links of its
    /// last stretch, not all of them). The union splits at `t` exactly.
    pub(in crate::explain) fn retire_before(&mut self, t: u64) {
        for h in self.0.values_mut() {
            if !h.spans.iter().any(|s| s.0 < t) {
                continue;
            }
            let (mut before, mut after) = (Vec::new(), Vec::new());
            for &(a, b, rate) in &h.spans {
                if b <= t {
                    // A link cut in two is still one link (it stays among those kept).
                    h.retired_spans += 1;
                    before.push((a, b, rate));
                } else if a >= t {
                    after.push((a, b, rate));
                } else {
                    before.push((a, t, rate));
                    after.push((t, b, rate));
                }
            }
            h.retired += swept(&before);
            h.spans = after;
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
        for (k, h) in &self.0 {
            // Each miss's union is rounded to the ns: apart, the sums may differ by that.
            let n = h.spans.len() as u64 + h.retired_spans;
            let once = (h.retired + swept(&h.spans)).round() as u64 + n;
            if once < h.per_miss {
                out.insert(k.clone(), h.per_miss - once);
            }
        }
        out
    }
}

/// The union of `spans`, each ns of it weighted by the largest rate of a span over it.
fn swept(spans: &[Span]) -> f64 {
    // Boundaries: +rate at a start, -rate at an end; rates are positive, so their f64 bits
    // order as the rates do.
    let mut edges: Vec<(u64, bool, u64)> = Vec::with_capacity(spans.len() * 2);
    for &(a, b, rate) in spans {
        let rate = rate.to_bits();
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
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_nested_in_another_counts_once_at_its_rate() {
        // A 150 us wait fully held, and a period armed 1.3 us into it that waited the
        // rest: 150 us once, not 298.7.
        let s = [(0, 150_000, 1.0), (1_300, 150_000, 1.0)];
        assert_eq!(swept(&s), 150_000.0);
        // Half-held links: the overlap at the larger rate.
        let s = [(0, 100, 0.5), (50, 150, 1.0)];
        // [0,50) at 0.5, [50,100) at 1.0, [100,150) at 1.0.
        assert_eq!(swept(&s), 125.0);
        // Apart: the sum.
        let s = [(0, 10, 1.0), (20, 30, 0.5)];
        assert_eq!(swept(&s), 15.0);
    }

    /// Links retired at any time give the overlap the whole set gives.
    #[test]
    fn retiring_the_links_before_a_time_keeps_the_overlap() {
        let spans = vec![
            (0, 100, 0.5),
            (50, 150, 1.0),
            (120, 300, 1.0),
            (400, 500, 0.25),
        ];
        let per_miss = spans.iter().map(|s| swept(&[*s]).round() as u64).sum();
        let key = (crate::explain::causes::HARDIRQ, Default::default());
        let of = |retire: &[u64]| {
            let mut o = Once::default();
            let held = Held {
                spans: spans.clone(),
                per_miss,
                ..Default::default()
            };
            o.0.insert(key.clone(), held);
            for &t in retire {
                o.retire_before(t);
            }
            o.repeated().get(&key).copied()
        };
        // 50 + 100 + 180 + 25 = 355 summed; the union 25 + 250 + 25 = 300 (less a ns
        // of rounding per link).
        let whole = of(&[]);
        assert_eq!(whole, Some(355 - 300 - 4));
        for retire in [&[60][..], &[110, 130], &[0, 150, 350, 600]] {
            assert_eq!(of(retire), whole, "{retire:?}");
        }
    }
}
