//! The usual chain of a request/response cycle, learnt from the good cycles: each link's
//! median duration by its template key, and the median time no link covers. A link's
//! excess in a miss is its time above this.

use crate::dist::median;
use crate::explain::cycle::Cycle;
use crate::explain::engine::uncovered;
use crate::explain::engine::{Engine, LinkKey};
use crate::explain::learned::{push_capped, Learned, TemplateMemory};
use rustc_hash::FxHashMap;

/// The usual chain, learnt from the good cycles (those within the deadline).
pub(in crate::explain) struct Template {
    /// Each link's median duration, by its template key.
    pub(in crate::explain) links: FxHashMap<LinkKey, u64>,
    /// The median time no link covers.
    pub(in crate::explain) gap: u64,
    /// Good cycles there were.
    pub(in crate::explain) good: usize,
}

/// Link durations and uncovered gaps of some good cycles, by template key.
type Samples = (FxHashMap<LinkKey, Vec<u64>>, Vec<u64>);

/// Each good cycle's links by key, and the time no link covers.
fn samples(eng: &Engine<'_>, good: &[Cycle]) -> Samples {
    let mut usual: FxHashMap<LinkKey, Vec<u64>> = FxHashMap::default();
    let mut gaps: Vec<u64> = Vec::new();
    for c in good {
        let h = c.stop_ns();
        let links = eng.chain(c.tid, c.end_tid(), c.start_ns, h).links;
        gaps.push(
            uncovered(&links, c.start_ns, h)
                .iter()
                .map(|(a, b)| b - a)
                .sum(),
        );
        for l in links {
            usual.entry(l.key.clone()).or_default().push(l.usual_part());
        }
    }
    (usual, gaps)
}

/// The upper median of a non-empty set (every key has at least one duration).
fn upper_median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

impl TemplateMemory {
    /// Takes in the good cycles it has not seen yet.
    fn absorb(&mut self, eng: &Engine<'_>, good: &[Cycle]) {
        let fresh: Vec<Cycle> = good
            .iter()
            .copied()
            .filter(|c| c.start_ns > self.mark)
            .collect();
        let (usual, gaps) = samples(eng, &fresh);
        for (k, v) in usual {
            let q = self.links.entry(k).or_default();
            v.into_iter().for_each(|d| push_capped(q, d));
        }
        gaps.into_iter()
            .for_each(|g| push_capped(&mut self.gaps, g));
        self.good += fresh.len();
        self.mark = fresh
            .iter()
            .map(|c| c.start_ns)
            .max()
            .unwrap_or(self.mark)
            .max(self.mark);
    }

    fn template(&self) -> Template {
        let links = (self.links.iter())
            .map(|(k, q)| (k.clone(), upper_median(q.iter().copied().collect())))
            .collect();
        Template {
            links,
            gap: median(self.gaps.iter().copied().collect()),
            good: self.good,
        }
    }
}

impl Template {
    /// Learns from up to ~400 good cycles spread over the trace, or, with a shared
    /// memory, from every good cycle the stream has shown so far. `good` (`n` of them) is
    /// walked once rather than held: cycles can be millions.
    pub(in crate::explain) fn learn<I>(
        eng: &Engine<'_>,
        good: I,
        n: usize,
        learned: &Learned,
    ) -> Template
    where
        I: Iterator<Item = Cycle>,
    {
        if let Some(m) = &learned.0 {
            let good: Vec<Cycle> = good.collect();
            let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
            m.absorb(eng, &good);
            return m.template();
        }
        let step = (n / Self::SPREAD as usize).max(1);
        let spread: Vec<Cycle> = good.step_by(step).collect();
        Self::from_spread(eng, &spread, n)
    }

    /// Good cycles the template is learnt from at most (about; spread over the trace).
    pub(in crate::explain) const SPREAD: u64 = 400;

    /// Learns from `spread`, good cycles spread over the trace's `n`.
    pub(in crate::explain) fn from_spread(
        eng: &Engine<'_>,
        spread: &[Cycle],
        n: usize,
    ) -> Template {
        let (usual, gaps) = samples(eng, spread);
        let links = usual
            .into_iter()
            .map(|(k, v)| (k, upper_median(v)))
            .collect();
        Template {
            links,
            gap: median(gaps),
            good: n,
        }
    }
}
