//! Distribution summaries: nearest-rank quantiles and the 1-2-5 log histogram, shared by
//! explain's cycle statistics and the measures' groups (so both say the same p99 for the
//! same values).

use serde::Serialize;

/// A histogram bucket `[lo, hi)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Lower bound (ns or rate).
    pub lo: u64,
    /// Upper bound.
    pub hi: u64,
    /// Samples in it.
    pub count: u64,
}

/// The summary of a set of values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dist {
    /// Values.
    pub count: u64,
    /// Smallest (0 when empty).
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
    /// Sum (saturating).
    pub total: u64,
}

impl Dist {
    /// The summary of values sorted ascending (`u64`s, or `u32`s where a large set of
    /// values fits in half the memory).
    pub fn of_sorted<T: Copy + Into<u64>>(sorted: &[T]) -> Dist {
        Dist {
            count: sorted.len() as u64,
            min: sorted.first().map_or(0, |&v| v.into()),
            p50: quantile(sorted, 0.5),
            p90: quantile(sorted, 0.9),
            p99: quantile(sorted, 0.99),
            p999: quantile(sorted, 0.999),
            max: sorted.last().map_or(0, |&v| v.into()),
            total: sorted.iter().fold(0u64, |a, &v| a.saturating_add(v.into())),
        }
    }

    /// The mean (0 when empty).
    pub fn mean(&self) -> u64 {
        self.total.checked_div(self.count).unwrap_or(0)
    }
}

/// Nearest-rank quantile of sorted values (0 when empty): always a value that occurred.
pub fn quantile<T: Copy + Into<u64>>(sorted: &[T], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].into()
}

/// The median of unsorted values (the lower one of an even count; 0 when empty).
pub fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// Bucket bounds 1-2-5 per decade, from `base` (1 µs for durations, 1 for rates): easier
/// to read in a terminal than powers of two, and as fine.
fn bucket_of(v: u64, base: u64) -> (u64, u64) {
    if v < base {
        return (0, base);
    }
    let mut decade = base;
    loop {
        for (l, h) in [(1u64, 2u64), (2, 5), (5, 10)] {
            let hi = decade.saturating_mul(h);
            if v < hi || hi == u64::MAX {
                return (decade.saturating_mul(l), hi);
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// A 1-2-5 log histogram of sorted values, from `base` (1000 for ns: buckets from 1 µs).
pub fn log_histogram<T: Copy + Into<u64>>(sorted: &[T], base: u64) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    for &v in sorted {
        let (lo, hi) = bucket_of(v.into(), base);
        match out.last_mut() {
            Some(l) if l.lo == lo => l.count += 1,
            _ => out.push(Bucket { lo, hi, count: 1 }),
        }
    }
    out
}

/// Values kept in bounded memory for hours of samples: exact while they take at most
/// [`Sketch::EXACT`] distinct values (a trace with microsecond timestamps rarely has more),
/// then each rounded down to 8 significant bits (under 0.8% off), so at most 64 x 128
/// buckets exist whatever the count; min, max, the sum and the 1-2-5 histogram from 1 µs
/// stay exact. Quantiles are nearest-rank over the values kept.
#[derive(Clone, Debug, Default)]
pub struct Sketch {
    /// Count per value kept (sorted when read: adding is the hot side).
    buckets: rustc_hash::FxHashMap<u64, u64>,
    /// Values are rounded (past [`Sketch::EXACT`] distinct ones).
    rounded: bool,
    /// Counts per 1-2-5 bucket from [`Sketch::HIST_BASE`], by the bucket's low bound.
    hist: rustc_hash::FxHashMap<u64, u64>,
    /// The histogram bucket of the last value: most values fall in the same one.
    last: (u64, u64),
    count: u64,
    min: u64,
    max: u64,
    total: u64,
}

impl Sketch {
    /// Distinct values kept exactly.
    pub const EXACT: usize = 8192;
    /// The base of the exact histogram (1 µs, in ns).
    pub const HIST_BASE: u64 = 1000;

    /// `v` rounded down to its top 8 bits.
    fn round(v: u64) -> u64 {
        let bits = 64 - v.leading_zeros();
        let drop = bits.saturating_sub(8);
        (v >> drop) << drop
    }

    /// Adds one value.
    pub fn add(&mut self, v: u64) {
        self.add_n(v, 1);
    }

    /// Adds `n` times the value `v` (`n` > 0): one lookup for a run of equal values.
    pub fn add_n(&mut self, v: u64, n: u64) {
        let key = if self.rounded { Sketch::round(v) } else { v };
        *self.buckets.entry(key).or_default() += n;
        if !self.rounded && self.buckets.len() > Sketch::EXACT {
            self.round_all();
        }
        if !(self.last.0..self.last.1).contains(&v) {
            self.last = bucket_of(v, Sketch::HIST_BASE);
        }
        *self.hist.entry(self.last.0).or_default() += n;
        self.min = if self.count == 0 { v } else { self.min.min(v) };
        self.max = self.max.max(v);
        self.total = self.total.saturating_add(v.saturating_mul(n));
        self.count += n;
    }

    /// Rounds the values kept from now on.
    fn round_all(&mut self) {
        let mut b = rustc_hash::FxHashMap::default();
        for (k, n) in std::mem::take(&mut self.buckets) {
            *b.entry(Sketch::round(k)).or_default() += n;
        }
        (self.buckets, self.rounded) = (b, true);
    }

    /// The values of `sorted` (in order).
    pub fn of_sorted<T: Copy + Into<u64>>(sorted: &[T]) -> Sketch {
        let mut s = Sketch::default();
        s.add_sorted(sorted);
        s
    }

    /// Adds the values of `sorted` (in order) as [`Sketch::add`] would one by one, with
    /// one lookup per run of values that share a kept value and a histogram bucket.
    pub fn add_sorted<T: Copy + Into<u64>>(&mut self, sorted: &[T]) {
        // A run is taken as one bucket's values: out of order, a value would join the
        // bucket of the one before it.
        debug_assert!(sorted.windows(2).all(|p| p[0].into() <= p[1].into()));
        let mut i = 0;
        while i < sorted.len() {
            let v: u64 = sorted[i].into();
            let rounded = self.rounded;
            let key = if rounded { Sketch::round(v) } else { v };
            let (lo, hi) = bucket_of(v, Sketch::HIST_BASE);
            let same = |x: u64| {
                x < hi
                    && if rounded {
                        Sketch::round(x) == key
                    } else {
                        x == v
                    }
            };
            let run = 1 + sorted[i + 1..]
                .iter()
                .take_while(|&&x| same(x.into()))
                .count();
            let n = run as u64;
            *self.buckets.entry(key).or_default() += n;
            if !self.rounded && self.buckets.len() > Sketch::EXACT {
                self.round_all();
            }
            *self.hist.entry(lo).or_default() += n;
            self.last = (lo, hi);
            self.min = if self.count == 0 { v } else { self.min.min(v) };
            for &x in &sorted[i..i + run] {
                self.total = self.total.saturating_add(x.into());
            }
            self.max = self.max.max(sorted[i + run - 1].into());
            self.count += n;
            i += run;
        }
    }

    /// Adds every value of `o`: as one sketch of both would hold them (rounded when
    /// either is, or when together they take more distinct values than are kept exact).
    pub fn merge(&mut self, o: &Sketch) {
        if o.count == 0 {
            return;
        }
        if o.rounded && !self.rounded {
            self.round_all();
        }
        for (&k, &n) in &o.buckets {
            let key = if self.rounded { Sketch::round(k) } else { k };
            *self.buckets.entry(key).or_default() += n;
        }
        if !self.rounded && self.buckets.len() > Sketch::EXACT {
            self.round_all();
        }
        for (&lo, &n) in &o.hist {
            *self.hist.entry(lo).or_default() += n;
        }
        self.min = if self.count == 0 {
            o.min
        } else {
            self.min.min(o.min)
        };
        self.max = self.max.max(o.max);
        self.total = self.total.saturating_add(o.total);
        self.count += o.count;
    }

    /// How many values were added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The `k`-th smallest value added (from 0), as the sorted values would give it: exact
    /// while [`Sketch::exact`], else to within the rounding; the max past the last.
    pub fn nth(&self, k: u64) -> u64 {
        if k + 1 >= self.count {
            return self.max;
        }
        let mut seen = 0;
        for (v, n) in self.sorted() {
            seen += n;
            if seen > k {
                return v.max(self.min);
            }
        }
        self.max
    }

    /// How many values added were at most `v` (to within the rounding where values were
    /// rounded: a rounded value counts as its bucket's low bound).
    pub fn at_most(&self, v: u64) -> u64 {
        (self.buckets.iter())
            .filter(|(&k, _)| k <= v)
            .map(|(_, &n)| n)
            .sum()
    }

    /// The nearest-rank quantile `q` of the values added, as [`quantile`] gives it for
    /// the sorted values (to within the rounding; 0 when empty).
    pub fn nearest_rank(&self, q: f64) -> u64 {
        self.quantile(&self.sorted(), q)
    }

    /// Whether the values kept are exact (none was rounded yet).
    pub fn exact(&self) -> bool {
        !self.rounded
    }

    /// The values kept and their counts, in order.
    fn sorted(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.buckets.iter().map(|(&k, &n)| (k, n)).collect();
        v.sort_unstable();
        v
    }

    /// Nearest-rank quantile of the values kept, `sorted` (0 when empty); the exact max
    /// for the top rank.
    fn quantile(&self, sorted: &[(u64, u64)], q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return self.max;
        }
        let mut seen = 0;
        for &(v, n) in sorted {
            seen += n;
            if seen >= rank {
                return v.max(self.min);
            }
        }
        self.max
    }

    /// The summary, as [`Dist::of_sorted`] gives for the values themselves (quantiles to
    /// within the rounding).
    pub fn dist(&self) -> Dist {
        let sorted = self.sorted();
        Dist {
            count: self.count,
            min: self.min,
            p50: self.quantile(&sorted, 0.5),
            p90: self.quantile(&sorted, 0.9),
            p99: self.quantile(&sorted, 0.99),
            p999: self.quantile(&sorted, 0.999),
            max: self.max,
            total: self.total,
        }
    }

    /// The 1-2-5 log histogram from `base`, as [`log_histogram`] draws it: exact from
    /// [`Sketch::HIST_BASE`], else from the values kept.
    pub fn histogram(&self, base: u64) -> Vec<Bucket> {
        if base == Sketch::HIST_BASE {
            let mut h: Vec<Bucket> = (self.hist.iter())
                .map(|(&lo, &count)| Bucket {
                    lo,
                    hi: bucket_of(lo, base).1,
                    count,
                })
                .collect();
            h.sort_unstable_by_key(|b| b.lo);
            return h;
        }
        let mut out: Vec<Bucket> = Vec::new();
        for (v, n) in self.sorted() {
            let (lo, hi) = bucket_of(v, base);
            match out.last_mut() {
                Some(l) if l.lo == lo => l.count += n,
                _ => out.push(Bucket { lo, hi, count: n }),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Microsecond timestamps give durations in whole microseconds: few distinct values,
    /// kept exactly, so a merged summary gives the same quantiles as the values
    /// themselves. Past that the histogram stays exact: a value on a bucket's bound
    /// (5 µs) rounded down would move to the bucket below.
    #[test]
    fn a_sketch_is_exact_while_the_values_are_few_and_its_histogram_always() {
        let v: Vec<u64> = (0..200_000u64).map(|i| (i % 50) * 1000).collect();
        let mut s = Sketch::default();
        v.iter().for_each(|&x| s.add(x));
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert!(s.exact());
        assert_eq!(s.dist(), Dist::of_sorted(&sorted));
        assert_eq!(s.histogram(1000), log_histogram(&sorted, 1000));
        // Many distinct values, some on a bound: rounded, the histogram still exact.
        let mut v: Vec<u64> = (1..=20_000u64).map(|i| 4_000 + i * 7).collect();
        v.extend([5_000u64; 10]);
        let mut s = Sketch::default();
        v.iter().for_each(|&x| s.add(x));
        v.sort_unstable();
        assert!(!s.exact());
        assert_eq!(s.histogram(1000), log_histogram(&v, 1000));
        assert_eq!(
            s.histogram(1000)[0],
            Bucket {
                lo: 2_000,
                hi: 5_000,
                count: 142
            }
        );
    }

    /// Sorted values added in bulk (a run per kept value and histogram bucket) give the
    /// sketch that adding them one by one gives: exact, then past [`Sketch::EXACT`]
    /// distinct values, rounded, with a run on a histogram bound (5 µs) split.
    #[test]
    fn sorted_values_added_in_bulk_sketch_as_one_by_one() {
        let mut v: Vec<u64> = (0..30_000u64)
            .map(|i| 3_000 + (i * 7919) % 20_011)
            .collect();
        v.extend([5_000u64; 10]);
        v.sort_unstable();
        for n in [0, 1, 500, 8_192, 8_200, v.len()] {
            let (mut one, mut bulk) = (Sketch::default(), Sketch::default());
            v[..n].iter().for_each(|&x| one.add(x));
            bulk.add_sorted(&v[..n]);
            let kept = |s: &Sketch| s.sorted();
            assert_eq!(kept(&bulk), kept(&one), "{n} values");
            assert_eq!((bulk.exact(), bulk.dist()), (one.exact(), one.dist()));
            assert_eq!(bulk.histogram(1000), one.histogram(1000));
        }
        let s = Sketch::of_sorted(&v);
        assert_eq!(
            (s.exact(), s.count(), s.histogram(1000)[0].count),
            (false, 30_010, 2_998)
        );
        // Parts sketched in bulk and merged, as windows are: the sketch of all of them
        // one by one (each part exact, their union past the limit).
        let mut parts = Sketch::default();
        for part in v.chunks(7_000) {
            let mut p = Sketch::default();
            p.add_sorted(part);
            assert!(p.exact());
            parts.merge(&p);
        }
        let mut one = Sketch::default();
        v.iter().for_each(|&x| one.add(x));
        assert_eq!(parts.sorted(), one.sorted());
        assert_eq!((parts.exact(), parts.dist()), (one.exact(), one.dist()));
        assert_eq!(parts.histogram(1000), one.histogram(1000));
    }

    #[test]
    fn a_sketch_keeps_quantiles_within_its_rounding_in_bounded_buckets() {
        let mut s = Sketch::default();
        let v: Vec<u64> = (1..=100_000u64).map(|i| i * 997).collect();
        for &x in v.iter().rev() {
            s.add(x);
        }
        let exact = Dist::of_sorted(&v);
        let d = s.dist();
        assert_eq!(
            (d.count, d.min, d.max, d.total),
            (exact.count, 997, 99_700_000, exact.total)
        );
        for (a, b) in [(d.p50, exact.p50), (d.p90, exact.p90), (d.p99, exact.p99)] {
            assert!(a <= b && b - a <= b / 128, "{a} vs {b}");
        }
        assert!(s.buckets.len() <= 64 * 128);
        let h: u64 = s.histogram(1000).iter().map(|b| b.count).sum();
        assert_eq!(h, 100_000);
        assert_eq!(Sketch::default().dist(), Dist::default());
    }

    #[test]
    fn quantiles_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), 50);
        assert_eq!(quantile(&v, 0.99), 99);
        assert_eq!(quantile(&v, 0.999), 100);
        assert_eq!(quantile(&[7u64], 0.5), 7);
        let d = Dist::of_sorted(&v);
        assert_eq!(
            (d.min, d.p90, d.max, d.total, d.mean()),
            (1, 90, 100, 5050, 50)
        );
        assert_eq!(median(vec![4, 1, 3, 2]), 2);
        assert_eq!(Dist::of_sorted::<u64>(&[]), Dist::default());
        // Values kept as u32 summarise as the same values as u64 do.
        let narrow: Vec<u32> = (1..=100).collect();
        assert_eq!(Dist::of_sorted(&narrow), d);
        let h = |b: Vec<Bucket>| b.iter().map(|b| (b.lo, b.hi, b.count)).collect::<Vec<_>>();
        assert_eq!(h(log_histogram(&narrow, 10)), h(log_histogram(&v, 10)));
    }

    #[test]
    fn log_buckets() {
        let h = log_histogram(
            &[0u64, 999, 1000, 2500, 2600, 7000, 10_000, 2_686_000],
            1000,
        );
        let got: Vec<(u64, u64, u64)> = h.iter().map(|b| (b.lo, b.hi, b.count)).collect();
        assert_eq!(
            got,
            vec![
                (0, 1000, 2),
                (1000, 2000, 1),
                (2000, 5000, 2),
                (5000, 10_000, 1),
                (10_000, 20_000, 1),
                (2_000_000, 5_000_000, 1)
            ]
        );
    }
}
