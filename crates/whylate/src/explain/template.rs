//! The usual chain of a request/response cycle, learnt from the good cycles: each link's
//! median duration by its template key, and the median time no link covers. A link's
//! excess in a miss is its time above this.

use super::blame::uncovered;
use super::cutter::Cycle;
use super::engine::{Engine, LinkKey};
use crate::dist::median;
use rustc_hash::FxHashMap;

/// The usual chain, learnt from the good cycles (those within the deadline).
pub(super) struct Template {
    /// Each link's median duration, by its template key.
    pub(super) links: FxHashMap<LinkKey, u64>,
    /// The median time no link covers.
    pub(super) gap: u64,
    /// Good cycles there were.
    pub(super) good: usize,
}

impl Template {
    /// Learns from up to ~400 good cycles spread over the trace.
    pub(super) fn learn(eng: &Engine<'_>, good: &[&Cycle]) -> Template {
        let mut usual: FxHashMap<LinkKey, Vec<u64>> = FxHashMap::default();
        let step = (good.len() / 400).max(1);
        let mut gaps: Vec<u64> = Vec::new();
        for c in good.iter().step_by(step) {
            let h = c.end_ns.unwrap_or(c.horizon_ns);
            let (links, _) = eng.chain(c.tid, c.end_tid, c.start_ns, h);
            gaps.push(
                uncovered(&links, c.start_ns, h)
                    .iter()
                    .map(|(a, b)| b - a)
                    .sum(),
            );
            for l in links {
                usual
                    .entry(l.key.clone())
                    .or_default()
                    .push(l.end - l.start);
            }
        }
        let links = usual
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_unstable();
                (k, v[v.len() / 2])
            })
            .collect();
        Template {
            links,
            gap: median(gaps),
            good: good.len(),
        }
    }
}
