//! Time order: [`Sorted`] puts one reader's events in order within a bounded window;
//! [`Merged`] merges several inputs by timestamp.

use crate::event::{Event, Interner};
use crate::read::source::{Diag, EventSource, OrderStats, ReadError};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Puts a nearly sorted stream in time order with a bounded window: every event is delayed
/// by `window` events, and one that arrives earlier than events already queued waits in a
/// heap until it is the earliest. In-order input costs one push and one pop per event; an
/// event out of order costs a heap push and pop (log of the window), so the time stays
/// linear in the input whatever arrives late and however wide the window. An event later
/// than the window allows is passed on as it comes and counted in [`OrderStats::unsorted`].
pub struct Sorted<R> {
    pub(crate) inner: R,
    /// Events in input order that were no earlier than every event before them: sorted.
    queue: VecDeque<Event>,
    /// Events that came earlier than one already queued, earliest first.
    early: BinaryHeap<Reverse<Early>>,
    /// Input position of the next event into `early`: equal stamps keep input order.
    seq: u64,
    /// Stamp of the newest event in `queue` (the latest stamp queued so far).
    newest: Option<u64>,
    /// Events too late for their place, to go out before the queue.
    late: VecDeque<Event>,
    /// Which store [`Sorted::next_ref`] lent out (released on the next call).
    lent: Option<Lent>,
    window: usize,
    last_out: Option<u64>,
    order: OrderStats,
    eof: bool,
}

/// An event waiting in [`Sorted`]'s heap, ordered by stamp, then input position.
struct Early {
    key: (u64, u64),
    event: Event,
}

impl PartialEq for Early {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Early {}
impl PartialOrd for Early {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Early {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl<R> Sorted<R> {
    /// The underlying reader.
    pub fn reader(&self) -> &R {
        &self.inner
    }
}

impl<R: EventSource> Sorted<R> {
    /// Wraps `inner` with a window of `window` events.
    pub fn new(inner: R, window: usize) -> Self {
        Sorted {
            inner,
            queue: VecDeque::new(),
            early: BinaryHeap::new(),
            seq: 0,
            newest: None,
            late: VecDeque::new(),
            lent: None,
            window: window.max(1),
            last_out: None,
            order: OrderStats {
                window: window.max(1),
                ..OrderStats::default()
            },
            eof: false,
        }
    }
}

impl<R: EventSource> Sorted<R> {
    /// Puts the events `fill_into` appended from index `from` on in time order, with the
    /// same rules as one event at a time: one no earlier than every event queued stays; an
    /// earlier one waits in the heap for its turn (after equal stamps, so ties keep input
    /// order), unless its place was already emitted, in which case it goes out next, as it
    /// came.
    fn settle(&mut self, from: usize) {
        let mut newest = self.newest;
        let in_order = self.queue.range(from..).all(|e| {
            let ok = newest.is_none_or(|n| e.ts >= n);
            newest = Some(e.ts);
            ok
        });
        if in_order {
            self.newest = newest;
            return;
        }
        // Rare: take the batch apart, one event at a time.
        let batch: Vec<Event> = self.queue.drain(from..).collect();
        for e in batch {
            self.place(e);
        }
    }

    /// Puts one event where it belongs: the sorted queue, the heap, or out as late.
    fn place(&mut self, e: Event) {
        if self.newest.is_none_or(|n| e.ts >= n) {
            self.newest = Some(e.ts);
            self.queue.push_back(e);
        } else if self.last_out.is_some_and(|l| e.ts < l) {
            self.order.unsorted += 1;
            self.late.push_back(e);
        } else {
            self.order.reordered += 1;
            self.early.push(Reverse(Early {
                key: (e.ts, self.seq),
                event: e,
            }));
            self.seq += 1;
        }
    }

    /// Whether the heap's earliest goes out before the queue's front: strictly earlier
    /// only, since a queued event with the same stamp came first in the input.
    fn heap_first(&self) -> bool {
        match (self.early.peek(), self.queue.front()) {
            (Some(Reverse(h)), Some(q)) => h.key.0 < q.ts,
            (Some(_), None) => true,
            _ => false,
        }
    }

    fn held(&self) -> usize {
        self.queue.len() + self.early.len()
    }
}

#[derive(Clone, Copy, Debug)]
enum Lent {
    Queue,
    Early,
    Late,
}

impl<R: EventSource> Sorted<R> {
    /// Drops the event lent by the last [`Sorted::next_ref`], then reads until the window
    /// is full or something is due.
    fn advance(&mut self, strings: &mut Interner) -> Result<(), ReadError> {
        match self.lent.take() {
            Some(Lent::Queue) => drop(self.queue.pop_front()),
            Some(Lent::Early) => drop(self.early.pop()),
            Some(Lent::Late) => drop(self.late.pop_front()),
            None => {}
        }
        while self.late.is_empty() && !self.eof && self.held() <= self.window {
            let before = self.queue.len();
            if !self.inner.fill_into(strings, &mut self.queue)? {
                self.eof = true;
            }
            self.settle(before);
        }
        Ok(())
    }

    /// The next event in time order, lent from where it waits: the hot consumers read it
    /// in place instead of moving it out through every layer.
    pub fn next_ref(&mut self, strings: &mut Interner) -> Result<Option<&Event>, ReadError> {
        self.advance(strings)?;
        if !self.late.is_empty() {
            self.lent = Some(Lent::Late);
            return Ok(self.late.front());
        }
        if self.heap_first() {
            let e = self.early.peek().map(|Reverse(h)| &h.event);
            self.last_out = e.map(|e| e.ts);
            self.lent = Some(Lent::Early);
            return Ok(e);
        }
        let Some(ts) = self.queue.front().map(|e| e.ts) else {
            return Ok(None);
        };
        self.last_out = Some(ts);
        self.lent = Some(Lent::Queue);
        Ok(self.queue.front())
    }
}

impl<R: EventSource> EventSource for Sorted<R> {
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.advance(strings)?;
        if let Some(e) = self.late.pop_front() {
            return Ok(Some(e));
        }
        if self.heap_first() {
            let e = self.early.pop().map(|Reverse(h)| h.event);
            self.last_out = e.as_ref().map(|e| e.ts);
            return Ok(e);
        }
        Ok(self.queue.pop_front().inspect(|e| {
            self.last_out = Some(e.ts);
        }))
    }
    fn diag(&self) -> &Diag {
        self.inner.diag()
    }
    fn order(&self) -> OrderStats {
        self.order
    }
}

/// Merges several time-ordered sources (e.g. per-CPU `trace_pipe` captures) by timestamp.
pub struct Merged<S> {
    sources: Vec<S>,
    heads: Vec<Option<Event>>,
    primed: bool,
    /// The event [`Merged::next_ref`] lends when it merges several inputs.
    slot: Option<(usize, Event)>,
    /// Sources by their head's stamp, when there are many.
    order: Option<BinaryHeap<Reverse<(u64, usize)>>>,
}

impl<S: EventSource> Merged<S> {
    /// Merges `sources`.
    pub fn new(sources: Vec<S>) -> Self {
        let n = sources.len();
        Merged {
            sources,
            heads: (0..n).map(|_| None).collect(),
            primed: false,
            slot: None,
            order: None,
        }
    }
    /// The merged sources.
    pub fn sources(&self) -> &[S] {
        &self.sources
    }
    /// The sources, to change how they are read (before the first event).
    pub fn sources_mut(&mut self) -> &mut [S] {
        &mut self.sources
    }
    /// The next event across all sources, with the index of its source.
    pub fn next_indexed(
        &mut self,
        strings: &mut Interner,
    ) -> Result<Option<(usize, Event)>, ReadError> {
        if self.sources.len() == 1 {
            // One input: no merge, no head buffering.
            return Ok(self.sources[0].next_event(strings)?.map(|e| (0, e)));
        }
        if !self.primed {
            for i in 0..self.sources.len() {
                self.heads[i] = self.sources[i].next_event(strings)?;
            }
            self.primed = true;
        }
        let Some(i) = self.earliest() else {
            return Ok(None);
        };
        let e = self.heads[i].take();
        self.heads[i] = self.sources[i].next_event(strings)?;
        if let (Some(order), Some(h)) = (self.order.as_mut(), &self.heads[i]) {
            order.push(Reverse((h.ts, i)));
        }
        Ok(e.map(|e| (i, e)))
    }

    /// The source whose head is earliest (the first such source on a tie). Few sources: a
    /// linear scan beats a heap; many (thousands of files): a heap keeps it logarithmic.
    fn earliest(&mut self) -> Option<usize> {
        if self.sources.len() > HEAP_FROM {
            let heads = &self.heads;
            let order = self.order.get_or_insert_with(|| {
                let by_ts = heads.iter().enumerate();
                by_ts
                    .filter_map(|(i, h)| h.as_ref().map(|e| Reverse((e.ts, i))))
                    .collect()
            });
            return order.pop().map(|Reverse((_, i))| i);
        }
        let mut best: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(e) = h {
                if best.is_none_or(|b| e.ts < self.heads[b].as_ref().map_or(u64::MAX, |x| x.ts)) {
                    best = Some(i);
                }
            }
        }
        best
    }
}

/// Sources merged through a heap from this many on.
const HEAP_FROM: usize = 16;

/// A source that can lend its next event where it holds it instead of moving it out
/// (an opened input: its reorder window or reader queue holds the event).
pub trait Lend: EventSource {
    /// The next event, lent until the next call.
    fn next_ref(&mut self, strings: &mut Interner) -> Result<Option<&Event>, ReadError>;
}

impl<S: Lend> Merged<S> {
    /// Like [`Merged::next_indexed`], but the event is lent: with one input (the usual case)
    /// it is read where the reader's queue holds it, never copied.
    pub fn next_ref(
        &mut self,
        strings: &mut Interner,
    ) -> Result<Option<(usize, &Event)>, ReadError> {
        if self.sources.len() == 1 {
            return Ok(self.sources[0].next_ref(strings)?.map(|e| (0, e)));
        }
        self.slot = self.next_indexed(strings)?;
        Ok(self.slot.as_ref().map(|(i, e)| (*i, e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Kind;

    struct Vecsrc(Vec<u64>, Diag);
    impl EventSource for Vecsrc {
        fn next_event(&mut self, _: &mut Interner) -> Result<Option<Event>, ReadError> {
            Ok(if self.0.is_empty() {
                None
            } else {
                Some(Event {
                    ts: self.0.remove(0),
                    cpu: 0,
                    tid: 0,
                    tgid: -1,
                    comm: Default::default(),
                    flags: 0,
                    kind: Kind::Lost { count: None },
                })
            })
        }
        fn diag(&self) -> &Diag {
            &self.1
        }
        fn order(&self) -> OrderStats {
            OrderStats::default()
        }
    }

    fn drain(s: &mut impl EventSource) -> Vec<u64> {
        let mut i = Interner::new();
        let mut v = vec![];
        while let Some(e) = s.next_event(&mut i).unwrap() {
            v.push(e.ts);
        }
        v
    }

    #[test]
    fn sorter_reorders_within_window_and_counts_the_rest() {
        let mut s = Sorted::new(Vecsrc(vec![1, 5, 3, 4, 9, 2], Diag::default()), 3);
        let out = drain(&mut s);
        // 2 arrives after 3 was emitted: passed on as it came, counted.
        assert_eq!(out, vec![1, 3, 2, 4, 5, 9]);
        assert_eq!(s.order().unsorted, 1);
        assert_eq!(s.order().reordered, 2);
        let mut s = Sorted::new(Vecsrc(vec![1, 5, 3, 4, 9, 2], Diag::default()), 100);
        assert_eq!(drain(&mut s), vec![1, 2, 3, 4, 5, 9]);
        assert_eq!(s.order().unsorted, 0);
    }

    /// Hands out its stamps `batch` at a time through `fill_into`, like a text line that
    /// makes several events.
    struct Batches(Vec<u64>, usize, Diag, i32);
    impl EventSource for Batches {
        fn next_event(&mut self, _: &mut Interner) -> Result<Option<Event>, ReadError> {
            Ok(None)
        }
        fn diag(&self) -> &Diag {
            &self.2
        }
        fn order(&self) -> OrderStats {
            OrderStats::default()
        }
        fn fill_into(
            &mut self,
            _: &mut Interner,
            out: &mut VecDeque<Event>,
        ) -> Result<bool, ReadError> {
            if self.0.is_empty() {
                return Ok(false);
            }
            let n = self.1.min(self.0.len());
            for ts in self.0.drain(..n) {
                let mut e = Event::lost(ts, 0, None);
                // The input position, so the order of equal stamps is visible.
                e.tid = self.3;
                self.3 += 1;
                out.push_back(e);
            }
            Ok(true)
        }
    }

    /// The reorder rules written plainly, one event at a time: the model `Sorted` is
    /// checked against.
    fn reference_sort(input: &[u64], window: usize) -> (Vec<(u64, i32)>, OrderStats) {
        let mut order = OrderStats {
            window,
            ..Default::default()
        };
        let mut queue: Vec<(u64, i32)> = vec![];
        let mut out = vec![];
        let mut last_out: Option<u64> = None;
        let mut it = input.iter().copied().zip(0..);
        loop {
            let mut late = None;
            while late.is_none() && queue.len() <= window {
                let Some((ts, i)) = it.next() else { break };
                match queue.last() {
                    Some(&(newest, _)) if ts < newest => {
                        if last_out.is_some_and(|l| ts < l) {
                            order.unsorted += 1;
                            late = Some((ts, i));
                        } else {
                            order.reordered += 1;
                            let at = queue.partition_point(|q| q.0 <= ts);
                            queue.insert(at, (ts, i));
                        }
                    }
                    _ => queue.push((ts, i)),
                }
            }
            if let Some(e) = late {
                out.push(e);
                continue;
            }
            if queue.is_empty() {
                return (out, order);
            }
            let e = queue.remove(0);
            last_out = Some(e.0);
            out.push(e);
        }
    }

    #[test]
    fn batched_fill_settles_like_one_at_a_time() {
        // Pseudo-random stamps with local disorder and many ties, some too late for a
        // small window.
        let mut x = 12345u64;
        let stamps: Vec<u64> = (0..3000u64)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (i / 3) * 10 + (x >> 60) * 4
            })
            .collect();
        for window in [1, 3, 16, 4096] {
            let (want, want_order) = reference_sort(&stamps, window);
            let mut one = Sorted::new(Vecsrc(stamps.clone(), Diag::default()), window);
            let want_ts: Vec<u64> = want.iter().map(|e| e.0).collect();
            assert_eq!(drain(&mut one), want_ts, "window {window}");
            assert_eq!(one.order(), want_order, "window {window}");
            for batch in [1, 2, 5] {
                let mut b = Sorted::new(Batches(stamps.clone(), batch, Diag::default(), 0), window);
                let mut i = Interner::new();
                let mut got = vec![];
                // Lent and moved-out reads mixed: both release the event they handed out.
                loop {
                    if got.len() % 3 == 0 {
                        match b.next_event(&mut i).unwrap() {
                            Some(e) => got.push((e.ts, e.tid)),
                            None => break,
                        }
                    } else {
                        match b.next_ref(&mut i).unwrap() {
                            Some(e) => got.push((e.ts, e.tid)),
                            None => break,
                        }
                    }
                }
                assert_eq!(got.len(), stamps.len(), "window {window} batch {batch}");
                let mut sorted = got.clone();
                sorted.sort();
                let mut all: Vec<(u64, i32)> = stamps.iter().copied().zip(0..).collect();
                all.sort();
                assert_eq!(
                    sorted, all,
                    "every event once, window {window} batch {batch}"
                );
                if batch == 1 {
                    assert_eq!(got, want, "window {window}");
                    assert_eq!(b.order(), want_order, "window {window}");
                }
                let inversions = got.windows(2).filter(|w| w[1].0 < w[0].0).count() as u64;
                assert!(
                    inversions <= b.order().unsorted,
                    "window {window} batch {batch}"
                );
                if window == 4096 {
                    assert_eq!(inversions, 0);
                    assert_eq!(b.order().unsorted, 0);
                }
            }
        }
    }

    /// Two captures of the same span given as one stream (the second starts back at the
    /// first's start) within a wide window: every event of the second is out of order. The
    /// work must stay linear in the input; an insertion into the window per event made this
    /// quadratic (minutes here, a tenth of a second now).
    #[test]
    fn two_concatenated_captures_sort_in_linear_time() {
        let n = 200_000u64;
        let stamps: Vec<u64> = (0..n).chain(0..n).map(|t| t * 10).collect();
        let mut s = Sorted::new(Batches(stamps, 64, Diag::default(), 0), 2 * n as usize);
        let out = drain(&mut s);
        assert_eq!(out.len(), 2 * n as usize);
        assert!(out.windows(2).all(|w| w[0] <= w[1]), "sorted whole");
        // The second capture's last stamp equals the newest queued: in order.
        assert_eq!(s.order().reordered, n - 1);
        assert_eq!(s.order().unsorted, 0);
        // A window too small to hold the first capture: the second is passed on late and
        // counted, never lost.
        let stamps: Vec<u64> = (0..n).chain(0..n).map(|t| t * 10).collect();
        let mut s = Sorted::new(Batches(stamps, 64, Diag::default(), 0), 4096);
        assert_eq!(drain(&mut s).len(), 2 * n as usize);
        assert!(s.order().unsorted > n - 5000);
    }

    #[test]
    fn merge_interleaves() {
        let mut m = Merged::new(vec![
            Vecsrc(vec![1, 4, 6], Diag::default()),
            Vecsrc(vec![2, 3, 7], Diag::default()),
        ]);
        let mut i = Interner::new();
        let mut v = vec![];
        while let Some((_, e)) = m.next_indexed(&mut i).unwrap() {
            v.push(e.ts);
        }
        assert_eq!(v, vec![1, 2, 3, 4, 6, 7]);
    }

    /// Many inputs (past the heap threshold) merge as the scan does: by stamp, ties to the
    /// input given first, each input's own order kept.
    #[test]
    fn many_inputs_merge_like_few() {
        for n in [3usize, HEAP_FROM + 1, 300] {
            let stamps = |k: usize| -> Vec<u64> {
                (0..5)
                    .map(|j| ((k * 7 + j * 13) % 20) as u64 * 3 + j as u64 * 60)
                    .collect()
            };
            let mut m = Merged::new((0..n).map(|k| Vecsrc(stamps(k), Diag::default())).collect());
            let mut i = Interner::new();
            let mut got = vec![];
            while let Some((k, e)) = m.next_indexed(&mut i).unwrap() {
                got.push((e.ts, k));
            }
            let mut want: Vec<(u64, usize)> = (0..n)
                .flat_map(|k| stamps(k).into_iter().map(move |t| (t, k)))
                .collect();
            want.sort();
            assert_eq!(got, want, "{n} inputs");
        }
    }
}
