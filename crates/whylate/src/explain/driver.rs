//! The steps every mode shares once its misses are explained: causes tallied and
//! ranked.

use super::report::{CauseRow, Culprit};
use rustc_hash::FxHashMap;

/// Causes as rows, largest total first.
pub(super) fn rank(causes: FxHashMap<(String, Culprit), (u64, u64)>) -> Vec<CauseRow> {
    let sum: u64 = causes.values().map(|v| v.1).sum::<u64>().max(1);
    let mut rows: Vec<CauseRow> = causes
        .into_iter()
        .map(|((category, culprit), (count, ns))| CauseRow {
            category,
            culprit,
            count,
            total_excess_ns: ns,
            mean_excess_ns: ns / count.max(1),
            share: ns as f64 / sum as f64,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_excess_ns
            .cmp(&a.total_excess_ns)
            .then(a.culprit.label().cmp(&b.culprit.label()))
    });
    rows
}
