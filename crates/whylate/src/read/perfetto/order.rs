//! Time order across CPUs. Each CPU's bundles come in time order, but the CPUs' bundles
//! interleave by when Perfetto read each CPU's buffer (every drain period, 100 ms by
//! default), so an event may be followed in the file by earlier events of other CPUs.
//! Events wait in a heap until every CPU has been read past them; a CPU whose latest
//! event is over [`STALE_NS`] behind the newest (idle, or offline) holds the others back
//! by that much only, and at most [`HOLD_MAX`] events wait. An event that still comes
//! late is given as it comes and counted (`OrderStats::unsorted`).

use super::bundle::Held;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A CPU this far behind the newest event read holds nothing back.
pub const STALE_NS: u64 = 2_000_000_000;
/// At most this many events wait (about 10 MiB).
pub const HOLD_MAX: usize = 1 << 17;

/// The events read and not yet given: one queue per CPU, each in time order as the
/// kernel wrote it, merged by a heap of the queues' first events. A heap of every event
/// cost 16% of reading a trace (a sift through 17 levels per event); the queues cost a
/// push at their back, and the heap only holds one entry per CPU.
#[derive(Default)]
pub(super) struct Hold {
    /// Per CPU: (event, read sequence), earliest first.
    queues: Vec<VecDeque<(Held, u64)>>,
    /// Each queue's first event as (ts, seq, cpu). An entry whose seq no longer is its
    /// queue's first is stale and dropped when met.
    heads: BinaryHeap<Reverse<(u64, u64, u32)>>,
    len: usize,
    seq: u64,
    /// Each CPU's latest event read.
    latest: Vec<Option<u64>>,
    newest: u64,
    /// CPUs the trace says it has (`system_info`): one not seen yet may still come.
    expect: usize,
    /// Events up to this time may go.
    horizon: u64,
    /// The queue being given from while its first event stays before every other
    /// queue's (ts, seq) bound: a trace's CPUs interleave by whole bundles, so most events
    /// cost a compare here instead of a pop and a push of the heap. Its queue has no
    /// entry in the heap meanwhile.
    run: Option<(u32, (u64, u64))>,
}

impl Hold {
    /// Takes one event read.
    pub fn push(&mut self, h: Held) {
        let c = h.cpu as usize;
        if self.latest.len() <= c {
            self.latest.resize(c + 1, None);
            self.queues.resize_with(c + 1, VecDeque::new);
        }
        let l = self.latest[c].get_or_insert(h.ts);
        *l = (*l).max(h.ts);
        self.newest = self.newest.max(h.ts);
        self.seq += 1;
        self.len += 1;
        let (ts, seq) = (h.ts, self.seq);
        let q = &mut self.queues[c];
        // Out of order within a CPU (a loss marker, a bundle that overlaps the last) is
        // rare: placed after the events of its time already there, as a heap would.
        let at = match q.back() {
            Some(b) if b.0.ts > ts => q.partition_point(|x| x.0.ts <= ts),
            _ => q.len(),
        };
        if at == q.len() {
            q.push_back((h, seq));
        } else {
            q.insert(at, (h, seq));
        }
        if at == 0 {
            self.heads.push(Reverse((ts, seq, c as u32)));
            // A new first event may come before the run's bound (on the run's own queue,
            // it ends the run, whose head then goes back to the heap a second time: the
            // copy that is no longer first is dropped as stale).
            if let Some((_, b)) = &mut self.run {
                *b = (*b).min((ts, seq));
            }
        }
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
        if let Some((cpu, bound)) = self.run {
            let (horizon, over) = (self.horizon, self.len > HOLD_MAX);
            let may = |ts: u64| all || ts <= horizon || over;
            let q = &mut self.queues[cpu as usize];
            match q.front() {
                Some(f) if (f.0.ts, f.1) < bound && may(f.0.ts) => {
                    self.len -= 1;
                    return q.pop_front().map(|(h, _)| h);
                }
                Some(f) => self.heads.push(Reverse((f.0.ts, f.1, cpu))),
                None => {}
            }
            self.run = None;
        }
        loop {
            let &Reverse((ts, seq, cpu)) = self.heads.peek()?;
            let q = &mut self.queues[cpu as usize];
            if q.front().is_none_or(|f| f.1 != seq) {
                self.heads.pop();
                continue;
            }
            if !(all || ts <= self.horizon || self.len > HOLD_MAX) {
                return None;
            }
            self.heads.pop();
            let (h, _) = q.pop_front()?;
            // The next earliest of the other queues bounds this queue's run (an entry
            // gone stale is earlier than its queue's first: a bound too early is safe).
            let bound = self
                .heads
                .peek()
                .map_or((u64::MAX, u64::MAX), |r| (r.0 .0, r.0 .1));
            self.run = Some((cpu, bound));
            self.len -= 1;
            return Some(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Kind;

    fn held(ts: u64, cpu: u32, tid: i32) -> Held {
        Held {
            ts,
            cpu,
            tid,
            flags: 0,
            kind: Kind::Lost { count: None },
            names: None,
        }
    }

    #[test]
    fn queues_merge_by_time_then_by_read_order_and_wait_for_the_horizon() {
        let mut h = Hold::default();
        h.expect(2);
        // CPU0 read past CPU1: nothing goes until CPU1 has been read that far.
        for (ts, tid) in [(10, 1), (30, 2), (30, 3)] {
            h.push(held(ts, 0, tid));
        }
        h.settle();
        assert!(h.pop(false).is_none());
        // CPU1's bundle, one event out of order inside it, and one tying CPU0's 30.
        for (ts, tid) in [(20, 4), (40, 5), (15, 6), (30, 7)] {
            h.push(held(ts, 1, tid));
        }
        h.settle();
        let mut got = Vec::new();
        while let Some(e) = h.pop(false) {
            got.push((e.ts, e.tid));
        }
        // The horizon is CPU0's latest (30): CPU1's 40 waits. Equal times go in read order.
        assert_eq!(got, [(10, 1), (15, 6), (20, 4), (30, 2), (30, 3), (30, 7)]);
        assert_eq!(h.pop(true).map(|e| e.ts), Some(40));
        assert!(h.pop(true).is_none());
    }

    /// One heap of every event, (ts, read order): what the queues and their runs must give.
    #[derive(Default)]
    struct Model(BinaryHeap<Reverse<(u64, u64, i32)>>, u64);

    impl Model {
        fn pop(&mut self, horizon: u64, all: bool) -> Option<(u64, i32)> {
            let &Reverse((ts, _, tid)) = self.0.peek()?;
            (all || ts <= horizon).then(|| {
                self.0.pop();
                (ts, tid)
            })
        }
    }

    #[test]
    fn runs_give_what_one_heap_of_every_event_gives() {
        // Bundles of CPUs interleaved, a few events out of order inside them, ties
        // across CPUs, and pops between bundles.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let (mut h, mut m) = (Hold::default(), Model::default());
        h.expect(3);
        let mut clock = [0u64; 3];
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for tid in 0..20_000 {
            let cpu = rnd(3) as u32;
            for _ in 0..rnd(40) {
                clock[cpu as usize] += rnd(5);
                let back = if rnd(50) == 0 { rnd(20) } else { 0 };
                let ts = clock[cpu as usize].saturating_sub(back);
                h.push(held(ts, cpu, tid));
                m.1 += 1;
                m.0.push(Reverse((ts, m.1, tid)));
            }
            h.settle();
            for _ in 0..rnd(60) {
                match (h.pop(false), m.pop(h.horizon, false)) {
                    (None, None) => break,
                    (a, b) => {
                        got.push(a.map(|e| (e.ts, e.tid)));
                        want.push(b);
                    }
                }
            }
        }
        while let Some(e) = h.pop(true) {
            got.push(Some((e.ts, e.tid)));
        }
        while let Some(e) = m.pop(0, true) {
            want.push(Some(e));
        }
        assert!(got.len() > 100_000);
        assert_eq!(got, want);
    }
}
