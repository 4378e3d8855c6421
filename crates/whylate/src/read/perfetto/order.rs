//! Time order across CPUs. Each CPU's bundles come in time order, but the CPUs' bundles
//! interleave by when Perfetto read each CPU's buffer (every drain period, 100 ms by
//! default), so an event may be followed in the file by earlier events of other CPUs.
//! Events wait in a heap until every CPU has been read past them; a CPU whose latest
//! event is over [`STALE_NS`] behind the newest (idle, or offline) holds the others back
//! by that much only, and at most [`HOLD_MAX`] events wait. An event that still comes
//! late is given as it comes and counted (`OrderStats::unsorted`).

use super::bundle::Held;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A CPU this far behind the newest event read holds nothing back.
pub const STALE_NS: u64 = 2_000_000_000;
/// At most this many events wait (about 10 MiB).
pub const HOLD_MAX: usize = 1 << 17;

struct Slot(Held, u64);

impl PartialEq for Slot {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Slot {
    /// Reversed (the heap gives its greatest): the earliest, then the first read.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.0.ts, o.1).cmp(&(self.0.ts, self.1))
    }
}

/// The events read and not yet given.
#[derive(Default)]
pub(super) struct Hold {
    heap: BinaryHeap<Slot>,
    seq: u64,
    /// Each CPU's latest event read.
    latest: Vec<Option<u64>>,
    newest: u64,
    /// CPUs the trace says it has (`system_info`): one not seen yet may still come.
    expect: usize,
    /// Events up to this time may go.
    horizon: u64,
}

impl Hold {
    /// Takes one event read.
    pub fn push(&mut self, h: Held) {
        let c = h.cpu as usize;
        if self.latest.len() <= c {
            self.latest.resize(c + 1, None);
        }
        let l = self.latest[c].get_or_insert(h.ts);
        *l = (*l).max(h.ts);
        self.newest = self.newest.max(h.ts);
        self.seq += 1;
        self.heap.push(Slot(h, self.seq));
    }

    /// The trace has `n` CPUs: one not seen yet may still bring events as early as
    /// [`STALE_NS`] before the newest.
    pub fn expect(&mut self, n: usize) {
        self.expect = n.min(4096);
    }

    /// After a bundle: how far every CPU has been read, where a CPU quiet for longer than
    /// [`STALE_NS`] (or not seen yet) counts as read up to that far behind the newest
    /// event: its next bundle may still hold events of the drain period it comes back in.
    pub fn settle(&mut self) {
        let floor = self.newest.saturating_sub(STALE_NS);
        let n = self.latest.len().max(self.expect);
        self.horizon = (0..n)
            .map(|c| {
                self.latest
                    .get(c)
                    .copied()
                    .flatten()
                    .unwrap_or(0)
                    .max(floor)
            })
            .min()
            .unwrap_or(0);
    }

    /// The earliest event, when it may go (`all`: the input ended).
    pub fn pop(&mut self, all: bool) -> Option<Held> {
        let top = self.heap.peek()?;
        if all || top.0.ts <= self.horizon || self.heap.len() > HOLD_MAX {
            return self.heap.pop().map(|s| s.0);
        }
        None
    }
}
