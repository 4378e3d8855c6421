//! The usual chain's memory across the analyses of one live stream: `watch` explains it
//! window by window, and each window's good cycles add to what the next compares with.
//! The template (template.rs) fills and reads it.

use crate::explain::engine::LinkKey;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The last `KEEP` durations of each link and of the uncovered time, from every good
/// cycle seen so far, each cycle taken once.
#[derive(Debug, Default)]
pub struct TemplateMemory {
    pub(in crate::explain) links: FxHashMap<LinkKey, VecDeque<u64>>,
    pub(in crate::explain) gaps: VecDeque<u64>,
    pub(in crate::explain) good: usize,
    /// Start of the latest cycle absorbed: windows overlap, later ones start after it.
    pub(in crate::explain) mark: u64,
}

/// Durations kept per link: enough for a steady median, flat over hours.
const KEEP: usize = 256;

/// A [`TemplateMemory`] shared by the analyses of one stream (none: each analysis learns
/// from its own good cycles, as offline).
#[derive(Clone, Debug, Default)]
pub struct Learned(pub Option<Arc<Mutex<TemplateMemory>>>);

impl Learned {
    /// A fresh memory to share.
    pub fn shared() -> Learned {
        Learned(Some(Arc::default()))
    }
}

/// Appends `v`, dropping the oldest beyond [`KEEP`].
pub(in crate::explain) fn push_capped(q: &mut VecDeque<u64>, v: u64) {
    if q.len() == KEEP {
        q.pop_front();
    }
    q.push_back(v);
}
