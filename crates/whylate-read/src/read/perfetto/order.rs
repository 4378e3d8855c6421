//! Time order across CPUs. Each CPU's bundles come in time order, but the CPUs' bundles
//! interleave by when Perfetto read each CPU's buffer (every drain period, 100 ms by
//! default), so an event may be followed in the file by earlier events of other CPUs.
//! Events wait until every CPU has been read past them; a CPU whose latest event is over
//! [`STALE_NS`] behind the newest (idle, or offline) holds the others back by that much
//! only, and at most [`Hold::max`] events wait ([`DEFAULT_HOLD`], or `--reorder`). An
//! event that still comes late is given as it comes and counted (`OrderStats::unsorted`).

use super::bundle::Held;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A CPU this far behind the newest event read holds nothing back.
pub const STALE_NS: u64 = 2_000_000_000;
/// At most this many events wait by default (about 50 MiB; a bundle read may pass it
/// before the next events go): one drain period of
/// every CPU must fit, and a busy 2-CPU host writes over 300,000 events per period (two
/// `dd bs=1`: 131,072 left 19% of the events of bench/perfetto.py's traces out).
pub const DEFAULT_HOLD: usize = 1 << 19;

/// A run of one CPU's events in time order whose read order is consecutive: usually one
/// bundle, moved in whole (a copy of every event into a queue cost a tenth of the
/// feeding thread).
struct Chunk {
    items: VecDeque<Held>,
    /// Read order of the first item; each next one is one more.
    seq: u64,
}

impl Chunk {
    fn key(&self) -> Option<(u64, u64)> {
        self.items.front().map(|h| (h.ts, self.seq))
    }
}

/// An event that came earlier than its CPU's queued chunks end, with its read order.
struct Early(u64, Held);

impl Early {
    fn key(&self) -> (u64, u64) {
        (self.1.ts, self.0)
    }
}

impl PartialEq for Early {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Early {}
impl PartialOrd for Early {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Early {
    /// Reversed: the earliest on top of the heap.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.key().cmp(&self.key())
    }
}

/// One CPU's events read and not yet given: chunks in time order as the kernel wrote them,
/// and, in a heap of their own, the events that came earlier than the chunks' end (a loss
/// marker, a bundle overlapping the last, damage). Splitting a chunk for each such event
/// instead copied its tail every time: a hostile trace of one early event per bundle
/// took gigabytes.
#[derive(Default)]
struct Queue {
    chunks: VecDeque<Chunk>,
    early: BinaryHeap<Early>,
}

impl Queue {
    /// The first event's (ts, read order).
    fn key(&self) -> Option<(u64, u64)> {
        let c = self.chunks.front().and_then(Chunk::key);
        match (c, self.early.peek().map(Early::key)) {
            (Some(c), Some(e)) => Some(c.min(e)),
            (c, e) => c.or(e),
        }
    }

    /// The time of the chunks' last event.
    fn back(&self) -> Option<u64> {
        self.chunks
            .back()
            .and_then(|k| k.items.back())
            .map(|h| h.ts)
    }

    /// Room allocated for events.
    #[cfg(test)]
    fn room(&self) -> usize {
        self.chunks
            .iter()
            .map(|k| k.items.capacity())
            .sum::<usize>()
            + self.early.capacity()
    }
}

/// The events read and not yet given: one queue of chunks per CPU, each in time order as
/// the kernel wrote it, merged by a heap of the queues' first events. A heap of every
/// event cost 16% of reading a trace (a sift through 17 levels per event); the queues
/// cost a push of each bundle, and the heap only holds one entry per CPU.
#[derive(Default)]
pub(super) struct Hold {
    /// Per CPU: its events.
    queues: Vec<Queue>,
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
    /// cost a compare here instead of a pop and a push of the heap. Its queue's first
    /// event has no live entry in the heap meanwhile (an older copy may linger: stale or
    /// duplicate entries only make a bound earlier, which is safe).
    run: Option<(u32, (u64, u64))>,
    /// Emptied chunks' vectors, for the next bundles.
    spare: Vec<Vec<Held>>,
    /// At most this many events wait (0: [`DEFAULT_HOLD`]).
    max: usize,
    /// Events given before their time had come because more than [`Hold::max`] waited.
    pub full: u64,
}

impl Hold {
    /// At most this many events wait: `window` (`--reorder`) where larger than
    /// [`DEFAULT_HOLD`].
    pub fn set_max(&mut self, window: usize) {
        self.max = window.max(DEFAULT_HOLD);
    }

    /// At most this many events wait.
    pub fn max(&self) -> usize {
        if self.max == 0 {
            DEFAULT_HOLD
        } else {
            self.max
        }
    }
    /// An empty vector for the next bundle's events (one an earlier bundle gave back).
    pub fn vec(&mut self) -> Vec<Held> {
        self.spare.pop().unwrap_or_default()
    }

    /// Takes one event read.
    #[cfg(test)]
    pub fn push(&mut self, h: Held) {
        let cpu = h.cpu;
        self.push_bundle(cpu, vec![h]);
    }

    /// Takes the events of one bundle of `cpu`, in the bundle's order.
    pub fn push_bundle(&mut self, cpu: u32, items: Vec<Held>) {
        // How far the CPU was read: its last event, the latest the ring buffer wrote. Not
        // the bundle's largest time: one damaged timestamp an hour ahead in a bundle's
        // middle made every other CPU's events come too late.
        let Some(last) = items.last().map(|h| h.ts) else {
            self.spare.push(items);
            return;
        };
        let c = cpu as usize;
        if self.latest.len() <= c {
            self.latest.resize(c + 1, None);
            self.queues.resize_with(c + 1, Queue::default);
        }
        let l = self.latest[c].get_or_insert(last);
        *l = (*l).max(last);
        self.newest = self.newest.max(last);
        let (n, seq) = (items.len() as u64, self.seq + 1);
        self.seq += n;
        self.len += n as usize;
        let q = &mut self.queues[c];
        let back = q.back();
        let in_order = items.windows(2).all(|w| w[0].ts <= w[1].ts);
        if in_order && back.is_none_or(|b| b <= items[0].ts) {
            let first = q.key().is_none();
            q.chunks.push_back(Chunk {
                items: items.into(),
                seq,
            });
            if first {
                self.new_head(cpu);
            }
        } else {
            self.merge_in(cpu, items, seq);
        }
    }

    /// Out of order within a CPU (a loss marker, a bundle that overlaps the last: rare):
    /// the events from the chunks' end on go on as chunks, each earlier one into the
    /// queue's heap, so that every event goes as a heap of every event would give it.
    #[cold]
    fn merge_in(&mut self, cpu: u32, items: Vec<Held>, seq: u64) {
        let q = &mut self.queues[cpu as usize];
        let mut back = q.back().unwrap_or(0);
        for (h, seq) in items.into_iter().zip(seq..) {
            if h.ts < back {
                q.early.push(Early(seq, h));
                continue;
            }
            back = h.ts;
            // A chunk's read orders are consecutive: a gap (an event gone to the heap)
            // starts another.
            match q.chunks.back_mut() {
                Some(k) if k.seq + k.items.len() as u64 == seq => k.items.push_back(h),
                _ => q.chunks.push_back(Chunk {
                    items: VecDeque::from([h]),
                    seq,
                }),
            }
        }
        self.new_head(cpu);
    }

    /// `cpu`'s queue has a new first event: into the heap, and it may bound the run (on
    /// the run's own queue, it ends the run, whose head then goes back to the heap a
    /// second time: the copy that is no longer first is dropped as stale).
    fn new_head(&mut self, cpu: u32) {
        let Some((ts, seq)) = self.queues[cpu as usize].key() else {
            return;
        };
        self.heads.push(Reverse((ts, seq, cpu)));
        if let Some((_, b)) = &mut self.run {
            *b = (*b).min((ts, seq));
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

    /// Bundles come by their earliest event time and the next starts at `first`: every
    /// event before it may go (no bundle still to come holds an earlier one).
    pub fn settle_before(&mut self, first: u64) {
        self.horizon = self.horizon.max(first.saturating_sub(1));
    }

    /// The first event of `cpu`'s queue, taken; an emptied chunk's vector is kept.
    fn take(&mut self, cpu: u32) -> Option<Held> {
        let q = &mut self.queues[cpu as usize];
        let chunk = q.chunks.front().and_then(Chunk::key);
        if q.early
            .peek()
            .is_some_and(|e| chunk.is_none_or(|c| e.key() < c))
        {
            self.len -= 1;
            return q.early.pop().map(|e| e.1);
        }
        let k = q.chunks.front_mut()?;
        let h = k.items.pop_front()?;
        k.seq += 1;
        if k.items.is_empty() {
            let k = q.chunks.pop_front().expect("a chunk");
            if self.spare.len() < 8 {
                self.spare.push(Vec::from(k.items));
            }
        }
        self.len -= 1;
        Some(h)
    }

    /// The earliest event, when it may go (`all`: the input ended).
    pub fn pop(&mut self, all: bool) -> Option<Held> {
        if let Some((cpu, bound)) = self.run {
            let (horizon, over) = (self.horizon, self.len > self.max());
            let may = |ts: u64| all || ts <= horizon || over;
            match self.queues[cpu as usize].key() {
                Some(k) if k < bound && may(k.0) => {
                    self.full += u64::from(!all && k.0 > horizon);
                    return self.take(cpu);
                }
                Some((ts, seq)) => self.heads.push(Reverse((ts, seq, cpu))),
                None => {}
            }
            self.run = None;
        }
        loop {
            let &Reverse((ts, seq, cpu)) = self.heads.peek()?;
            let first = self.queues[cpu as usize].key();
            if first.is_none_or(|f| f.1 != seq) {
                self.heads.pop();
                continue;
            }
            if !(all || ts <= self.horizon || self.len > self.max()) {
                return None;
            }
            self.full += u64::from(!all && ts > self.horizon);
            self.heads.pop();
            let h = self.take(cpu);
            // The next earliest of the other queues bounds this queue's run (an entry
            // gone stale is earlier than its queue's first: a bound too early is safe).
            let bound = self
                .heads
                .peek()
                .map_or((u64::MAX, u64::MAX), |r| (r.0 .0, r.0 .1));
            self.run = Some((cpu, bound));
            return h;
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
            let mut bundle = h.vec();
            for _ in 0..rnd(40) {
                clock[cpu as usize] += rnd(5);
                let back = if rnd(50) == 0 { rnd(20) } else { 0 };
                let ts = clock[cpu as usize].saturating_sub(back);
                bundle.push(held(ts, cpu, tid));
                m.1 += 1;
                m.0.push(Reverse((ts, m.1, tid)));
            }
            // Now and then one event alone, as a loss marker may come.
            match rnd(30) {
                0 => bundle.drain(..).for_each(|e| h.push(e)),
                _ => h.push_bundle(cpu, bundle),
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

    /// What `h` gives of two CPUs' bundles of `n` events each over the same times, the
    /// second read after the first (one drain period): whether they come in time order,
    /// and how many went early because the hold was full.
    fn one_period(mut h: Hold, n: u64) -> (bool, u64) {
        h.expect(2);
        let mut got = Vec::new();
        for cpu in 0..2 {
            h.push_bundle(cpu, (0..n).map(|t| held(t * 10, cpu, t as i32)).collect());
            h.settle();
            got.extend(std::iter::from_fn(|| h.pop(false)));
        }
        got.extend(std::iter::from_fn(|| h.pop(true)));
        assert_eq!(got.len() as u64, 2 * n);
        (got.windows(2).all(|w| w[0].ts <= w[1].ts), h.full)
    }

    #[test]
    fn a_drain_period_of_every_cpu_must_fit_and_reorder_raises_the_bound() {
        let small = |max| Hold {
            max,
            ..Hold::default()
        };
        // Both CPUs' periods held (over the bound only once both are in, when every CPU
        // is past them anyway): in order, none given early.
        assert_eq!(one_period(small(1000), 600), (true, 0));
        // One CPU's period alone over the bound: its events go before the other's came.
        let (sorted, full) = one_period(small(1000), 1500);
        assert!(!sorted && full > 0);
        assert_eq!(one_period(small(4000), 1500), (true, 0));
        // --reorder raises the default bound; it never lowers it.
        let mut h = Hold::default();
        assert_eq!(h.max(), DEFAULT_HOLD);
        h.set_max(DEFAULT_HOLD * 2);
        assert_eq!(h.max(), DEFAULT_HOLD * 2);
        h.set_max(4096);
        assert_eq!(h.max(), DEFAULT_HOLD);
    }

    #[test]
    fn early_events_inside_a_waiting_bundle_take_room_for_themselves_only() {
        // One bundle of 100,000 events waits (CPU1 never read past it), then 2,000
        // one-event bundles land inside it, each later than the last. Splitting the chunk
        // for each copied its tail and kept the room: 3.8 GB for 400 of them.
        let mut h = Hold::default();
        h.expect(2);
        h.push_bundle(0, (0..100_000).map(|t| held(t * 10, 0, 1)).collect());
        for k in 0..2_000 {
            h.push_bundle(0, vec![held(5 + k * 497, 0, 2)]);
        }
        let room = h.queues[0].room();
        assert!(room < 110_000, "room for {room} events");
        let got: Vec<u64> = std::iter::from_fn(|| h.pop(true)).map(|e| e.ts).collect();
        assert_eq!(got.len(), 102_000);
        assert!(got.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn early_events_one_per_bundle_cost_a_heap_push_not_a_sort_of_the_hold() {
        // One CPU held back (the other never read past it): 100,000 events wait, then
        // 20,000 bundles of one event earlier than all of them. Re-sorting what waits
        // for each took minutes here; now each is a search.
        let mut h = Hold::default();
        h.expect(2);
        h.push_bundle(0, (0..100_000).map(|t| held(1_000 + t, 0, 1)).collect());
        for t in 0..20_000 {
            h.push_bundle(0, vec![held(999 - t % 1000, 0, 2)]);
        }
        let got: Vec<u64> = std::iter::from_fn(|| h.pop(true)).map(|e| e.ts).collect();
        assert_eq!(got.len(), 120_000);
        assert!(got.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!((got[0], got[19_999], got[20_000]), (0, 999, 1_000));
    }
}
