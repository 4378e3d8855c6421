//! System call spans, kept apart from the other spans and packed.
//!
//! A syscall-heavy trace has one call per two events, and at a full span's 38 bytes the
//! calls were nine tenths of the timeline. Here a call costs about 10 bytes:
//! - its duration and whether it is uncertain, 4 bytes at a fixed place, because grouping
//!   reads them for every call;
//! - everything else in blocks of [`BLOCK`] calls, each field a varint delta from the call
//!   before it in the block (a thread or syscall is an index into a small table of the
//!   distinct ones), so a block decodes on its own and reading call `i` decodes at most
//!   `BLOCK - 1` calls before it.
//!
//! Calls keep the order they were pushed in (their exits'), which is the order a span
//! index gave them before they moved here.

use super::span;
use crate::event::Sym;
use crate::packed::{get_i, get_u, put_i, put_u};
use rustc_hash::FxHashMap;

/// Calls per block.
pub const BLOCK: usize = 64;

/// One system call, as read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syscall {
    /// Entry, ns.
    pub start: u64,
    /// Exit, ns.
    pub end: u64,
    /// CPU it entered on (`u32::MAX` when unknown).
    pub cpu: u32,
    /// The calling thread.
    pub tid: i32,
    /// Its name at the exit.
    pub comm: Sym,
    /// Syscall number, or name symbol with [`span::NAMED`].
    pub key: u32,
    /// CPU migrations during the call.
    pub migrations: u32,
    /// [`span`] flag bits.
    pub flags: u8,
}

impl Syscall {
    /// Exit minus entry.
    pub fn dur(&self) -> u64 {
        self.end - self.start
    }
}

/// In `durs`: the call is uncertain ([`span::UNCERTAIN`] or [`span::INFERRED`]).
const DUR_UNCERTAIN: u32 = 1 << 31;
/// In `durs`: the duration did not fit in 31 bits; it is in `long`.
const DUR_LONG: u32 = DUR_UNCERTAIN - 1;

// Head byte of a packed call: the four low flag bits as they are, then these.
const H_NAMED: u8 = 0x10;
const H_SAME_THREAD: u8 = 0x20;
const H_MIGRATED: u8 = 0x40;
const H_OTHER_FLAGS: u8 = 0x80;
const LOW_FLAGS: u8 = span::START_UNKNOWN | span::END_UNKNOWN | span::UNCERTAIN | span::INFERRED;

/// What queries by start search: per block the latest start up to it and the earliest
/// (non-straggler) start from it on, and the stragglers as (start, index), by start.
type StartIndex = (Vec<u64>, Vec<u64>, Vec<(u64, u32)>);

/// The system calls of a timeline, in the order they were pushed.
#[derive(Debug, Default)]
pub struct Syscalls {
    /// Per call: duration (or [`DUR_LONG`]) and [`DUR_UNCERTAIN`].
    durs: Vec<u32>,
    /// Durations of 2^31 - 1 ns or more, by call.
    long: FxHashMap<u32, u64>,
    /// The packed calls.
    bytes: Vec<u8>,
    /// Per block: where it starts in `bytes`, and its first call's start.
    blocks: Vec<(usize, u64)>,
    /// Per block: its earliest start and latest end, so a query by time skips the blocks
    /// that cannot hold an answer without decoding them.
    bounds: Vec<(u64, u64)>,
    /// Per block: its latest start (calls are pushed roughly, not exactly, by start).
    max_start: Vec<u64>,
    /// Built at the first query by start: per block, the latest start up to it and the
    /// earliest start from it on. Both are monotone, so the blocks a time range can hit
    /// are found by binary search, not by a scan of every block per query (a scan made
    /// explaining tens of thousands of misses quadratic).
    by_start: std::sync::OnceLock<StartIndex>,
    /// Per block: the earliest start of its calls that are not stragglers.
    min_start: Vec<u64>,
    /// Stragglers, (start, index): calls pushed more than a block after their start
    /// (a call blocked for long is pushed at its exit). Kept apart, so one of them does
    /// not make every block before it a candidate for every query.
    stragglers: Vec<(u64, u32)>,
    /// Distinct (thread, name) pairs, and their indices.
    threads: Vec<(i32, Sym)>,
    thread_ix: Interned<(i32, Sym)>,
    /// Distinct keys, and their indices.
    keys: Vec<u32>,
    key_ix: Interned<u32>,
    /// The previous call's start and thread, for the deltas.
    last: (u64, u32),
}

impl Syscalls {
    /// Number of calls.
    pub fn len(&self) -> usize {
        self.durs.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.durs.is_empty()
    }

    /// Bytes held per call, on average (for the docs and benchmarks).
    pub fn bytes_per_call(&self) -> f64 {
        let held = self.durs.len() * 4 + self.bytes.len() + self.blocks.len() * 32;
        held as f64 / self.len().max(1) as f64
    }

    /// Adds a call; its index is returned.
    pub fn push(&mut self, c: Syscall) -> u32 {
        let i = self.durs.len();
        let end = c.end.max(c.start);
        let dur = end - c.start;
        let unc = if c.flags & (span::UNCERTAIN | span::INFERRED) != 0 {
            DUR_UNCERTAIN
        } else {
            0
        };
        if dur >= DUR_LONG as u64 {
            self.long.insert(i as u32, dur);
            self.durs.push(DUR_LONG | unc);
        } else {
            self.durs.push(dur as u32 | unc);
        }
        if i.is_multiple_of(BLOCK) {
            self.blocks.push((self.bytes.len(), c.start));
            self.bounds.push((c.start, end));
            self.max_start.push(c.start);
            self.last = (c.start, u32::MAX);
        }
        if let Some(b) = self.bounds.last_mut() {
            *b = (b.0.min(c.start), b.1.max(end));
        }
        if let Some(m) = self.max_start.last_mut() {
            *m = (*m).max(c.start);
        }
        let nb = self.blocks.len();
        let behind = nb >= 2 && c.start < self.blocks[nb - 2].1;
        if behind {
            self.stragglers.push((c.start, i as u32));
        } else if i.is_multiple_of(BLOCK) {
            self.min_start.push(c.start);
        } else if let Some(m) = self.min_start.last_mut() {
            *m = (*m).min(c.start);
        }
        if i.is_multiple_of(BLOCK) && behind {
            // A block that starts with a straggler: its first regular call sets it.
            self.min_start.push(u64::MAX);
        }
        self.by_start.take();
        let thread = self
            .thread_ix
            .of(&mut self.threads, (c.tid, c.comm), c.tid as u32);
        let key = self.key_ix.of(&mut self.keys, c.key, c.key);
        let mut head = c.flags & LOW_FLAGS;
        if c.flags & span::NAMED != 0 {
            head |= H_NAMED;
        }
        if thread == self.last.1 {
            head |= H_SAME_THREAD;
        }
        if c.migrations != 0 {
            head |= H_MIGRATED;
        }
        if c.flags & !(LOW_FLAGS | span::NAMED) != 0 {
            head |= H_OTHER_FLAGS;
        }
        self.bytes.push(head);
        put_i(&mut self.bytes, c.start.wrapping_sub(self.last.0) as i64);
        if head & H_SAME_THREAD == 0 {
            put_u(&mut self.bytes, thread as u64);
        }
        put_u(&mut self.bytes, key as u64);
        put_u(&mut self.bytes, c.cpu.wrapping_add(1) as u64);
        if head & H_MIGRATED != 0 {
            put_u(&mut self.bytes, c.migrations as u64);
        }
        if head & H_OTHER_FLAGS != 0 {
            self.bytes.push(c.flags);
        }
        self.last = (c.start, thread);
        i as u32
    }

    /// Call `i`'s duration.
    #[inline]
    pub fn dur(&self, i: u32) -> u64 {
        match self.durs[i as usize] & !DUR_UNCERTAIN {
            DUR_LONG => self.long[&i],
            d => d as u64,
        }
    }

    /// Whether call `i` is uncertain (crosses lost events, or an endpoint was inferred).
    #[inline]
    pub fn uncertain(&self, i: u32) -> bool {
        self.durs[i as usize] & DUR_UNCERTAIN != 0
    }

    /// Call `i`.
    pub fn get(&self, i: u32) -> Syscall {
        let mut r = self.iter_from(i as usize);
        r.next().map(|(_, c)| c).expect("syscall index in range")
    }

    /// The calls that start in `[from, to]`, by start (ties in call order).
    pub fn starting_in(&self, from: u64, to: u64) -> Vec<(u32, Syscall)> {
        self.starting_in_where(from, to, |_| true)
    }

    /// The calls that start in `[from, to]` and that `keep` accepts, by start (ties in
    /// call order): filtered before they are sorted, for queries that want a few threads'.
    pub fn starting_in_where(
        &self,
        from: u64,
        to: u64,
        keep: impl Fn(&Syscall) -> bool,
    ) -> Vec<(u32, Syscall)> {
        let (upto, onward, late) = self.by_start.get_or_init(|| self.start_index());
        let first = upto.partition_point(|&m| m < from);
        let end = onward.partition_point(|&m| m <= to).max(first);
        let mut v: Vec<(u32, Syscall)> = (first..end)
            .filter(|&b| self.bounds[b].0 <= to && self.max_start[b] >= from)
            .flat_map(|b| {
                self.iter_from(b * BLOCK)
                    .take(BLOCK.min(self.len() - b * BLOCK))
            })
            .filter(|(_, c)| (from..=to).contains(&c.start) && keep(c))
            .collect();
        // Stragglers in range whose block the search did not reach.
        let reached = (first * BLOCK) as u32..(end * BLOCK) as u32;
        let at = late.partition_point(|&(st, _)| st < from);
        v.extend(
            (late[at..].iter())
                .take_while(|&&(st, _)| st <= to)
                .filter(|&&(_, i)| !reached.contains(&i))
                .map(|&(_, i)| (i, self.get(i)))
                .filter(|(_, c)| keep(c)),
        );
        v.sort_unstable_by_key(|(i, c)| (c.start, *i));
        v
    }

    /// Per block, the latest start up to it and the earliest start from it on; the
    /// stragglers by start.
    fn start_index(&self) -> StartIndex {
        let upto: Vec<u64> = (self.max_start.iter())
            .scan(0, |m, &x| {
                *m = x.max(*m);
                Some(*m)
            })
            .collect();
        let mut onward: Vec<u64> = self.min_start.clone();
        for b in (0..onward.len().saturating_sub(1)).rev() {
            onward[b] = onward[b].min(onward[b + 1]);
        }
        let mut late = self.stragglers.clone();
        late.sort_unstable();
        (upto, onward, late)
    }

    /// Of `tid`'s calls that were in progress over all of `[from, to]`, the one that
    /// started last (the latest in call order among equal starts).
    pub fn covering(&self, tid: i32, from: u64, to: u64) -> Option<Syscall> {
        self.blocks_where(|(lo, hi)| lo <= from && hi >= to)
            .filter(|(_, c)| c.tid == tid && c.start <= from && c.end >= to)
            .max_by_key(|(i, c)| (c.start, *i))
            .map(|(_, c)| c)
    }

    /// The calls of the blocks whose (earliest start, latest end) `keep` accepts.
    fn blocks_where<'a>(
        &'a self,
        keep: impl Fn((u64, u64)) -> bool + 'a,
    ) -> impl Iterator<Item = (u32, Syscall)> + 'a {
        (0..self.bounds.len())
            .filter(move |&b| keep(self.bounds[b]))
            .flat_map(move |b| {
                let n = BLOCK.min(self.len() - b * BLOCK);
                self.iter_from(b * BLOCK).take(n)
            })
    }

    /// The earliest start among the calls of block `b` (calls `b * BLOCK` on), whatever
    /// their flags.
    pub fn earliest_start_in_block(&self, b: usize) -> u64 {
        self.bounds[b].0
    }

    /// Every call with its index, in order.
    pub fn iter(&self) -> Reader<'_> {
        self.iter_from(0)
    }

    /// The calls from index `from` on.
    pub fn iter_from(&self, from: usize) -> Reader<'_> {
        let b = from / BLOCK;
        let mut r = Reader {
            s: self,
            next: b * BLOCK,
            pos: self.blocks.get(b).map_or(0, |x| x.0),
            last: (self.blocks.get(b).map_or(0, |x| x.1), u32::MAX),
        };
        // Calls before `from` in its block are decoded for their deltas and dropped.
        while r.next < from.min(self.len()) {
            r.next();
        }
        r
    }
}

/// Reads calls one after another, decoding each block once.
pub struct Reader<'a> {
    s: &'a Syscalls,
    next: usize,
    pos: usize,
    last: (u64, u32),
}

impl Reader<'_> {
    /// Index of the call it reads next.
    pub fn position(&self) -> usize {
        self.next
    }
}

impl Iterator for Reader<'_> {
    type Item = (u32, Syscall);

    fn next(&mut self) -> Option<(u32, Syscall)> {
        let s = self.s;
        let i = self.next;
        if i >= s.len() {
            return None;
        }
        if i.is_multiple_of(BLOCK) {
            (self.pos, self.last.0) = s.blocks[i / BLOCK];
            self.last.1 = u32::MAX;
        }
        let b = &s.bytes;
        let head = b[self.pos];
        self.pos += 1;
        let start = self.last.0.wrapping_add(get_i(b, &mut self.pos) as u64);
        let thread = if head & H_SAME_THREAD != 0 {
            self.last.1
        } else {
            get_u(b, &mut self.pos) as u32
        };
        let key = s.keys[get_u(b, &mut self.pos) as usize];
        let cpu = (get_u(b, &mut self.pos) as u32).wrapping_sub(1);
        let migrations = if head & H_MIGRATED != 0 {
            get_u(b, &mut self.pos) as u32
        } else {
            0
        };
        let flags = if head & H_OTHER_FLAGS != 0 {
            self.pos += 1;
            b[self.pos - 1]
        } else {
            head & LOW_FLAGS | if head & H_NAMED != 0 { span::NAMED } else { 0 }
        };
        self.last = (start, thread);
        self.next += 1;
        let (tid, comm) = s.threads[thread as usize];
        let c = Syscall {
            start,
            end: start + s.dur(i as u32),
            cpu,
            tid,
            comm,
            key,
            migrations,
            flags,
        };
        Some((i as u32, c))
    }
}

/// Indices of distinct values, with the last few answers in front of the map: a trace
/// has few threads and syscalls, and hashing each call's twice was a tenth of the pass.
#[derive(Debug)]
struct Interned<T> {
    map: FxHashMap<T, u32>,
    recent: [Option<(T, u32)>; 16],
}

impl<T: Copy> Default for Interned<T> {
    fn default() -> Self {
        Interned {
            map: FxHashMap::default(),
            recent: [None; 16],
        }
    }
}

impl<T: Copy + Eq + std::hash::Hash> Interned<T> {
    /// The index of `v` in `all` (added when new); `hint` picks its cache slot.
    #[inline]
    fn of(&mut self, all: &mut Vec<T>, v: T, hint: u32) -> u32 {
        let slot = hint as usize % self.recent.len();
        if let Some((w, i)) = self.recent[slot] {
            if w == v {
                return i;
            }
        }
        let i = *self.map.entry(v).or_insert_with(|| {
            all.push(v);
            (all.len() - 1) as u32
        });
        self.recent[slot] = Some((v, i));
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(i: u64) -> Syscall {
        Syscall {
            // Starts that go back and forth, as exits on two CPUs push them.
            start: 1_000_000 + i * 700 - (i % 3) * 1_500,
            end: 1_000_000 + i * 700 + 5_000 + (i % 7) * 100,
            cpu: if i.is_multiple_of(50) {
                u32::MAX
            } else {
                (i % 2) as u32
            },
            tid: 100 + (i % 4) as i32 / 2,
            comm: Sym((i % 4) as u32 / 2),
            key: if i.is_multiple_of(9) {
                70_000
            } else {
                (i % 5) as u32
            },
            migrations: if i.is_multiple_of(11) { 300 } else { 0 },
            flags: match i % 13 {
                0 => span::UNCERTAIN | span::NAMED,
                1 => span::RACED,
                2 => span::END_UNKNOWN,
                _ => 0,
            },
        }
    }

    #[test]
    fn calls_read_back_as_pushed_from_anywhere() {
        let mut s = Syscalls::default();
        let mut all: Vec<Syscall> = (0..1000).map(call).collect();
        // A call longer than the 31-bit duration, in the middle of a block.
        all[130].end = all[130].start + (5u64 << 32);
        // Stragglers: calls pushed long after they started (blocked, pushed at exit),
        // one of them first in its block.
        all[700].start = all[200].start + 3;
        all[768].start = all[10].start;
        for (i, c) in all.iter().enumerate() {
            assert_eq!(s.push(*c), i as u32);
        }
        assert_eq!(s.len(), 1000);
        let read: Vec<Syscall> = s.iter().map(|(_, c)| c).collect();
        assert_eq!(read, all);
        for i in [0u32, 1, 63, 64, 65, 130, 999] {
            assert_eq!(s.get(i), all[i as usize]);
            assert_eq!(s.dur(i), all[i as usize].dur());
            let unc = all[i as usize].flags & span::UNCERTAIN != 0;
            assert_eq!(s.uncertain(i), unc);
        }
        assert_eq!(s.dur(130), 5u64 << 32);
        let tail: Vec<u32> = s.iter_from(998).map(|(i, _)| i).collect();
        assert_eq!(tail, vec![998, 999]);
        assert_eq!(s.iter_from(1000).count(), 0);
        // Window queries answer what a scan of every call would.
        for (from, to) in [
            (0, u64::MAX),
            (1_050_000, 1_060_000),
            (1_300_000, 1_300_000),
            // Across block ends (64 calls = 44.8 us), at the edges, and outside.
            (1_044_000, 1_046_500),
            (1_000_000 + 63 * 700 - 1_500, 1_000_000 + 64 * 700),
            (all[999].start, u64::MAX),
            (0, all[0].start),
            (0, 999_000),
            (2_000_000, 1_000_000),
            (all[200].start, all[200].start + 10),
            (all[10].start, all[10].start),
            (all[768].start - 1, all[760].start),
        ] {
            let mut want: Vec<(u64, u32)> = (all.iter().enumerate())
                .filter(|(_, c)| (from..=to).contains(&c.start))
                .map(|(i, c)| (c.start, i as u32))
                .collect();
            want.sort_unstable();
            let want: Vec<u32> = want.into_iter().map(|x| x.1).collect();
            let got: Vec<u32> = s.starting_in(from, to).iter().map(|x| x.0).collect();
            assert_eq!(got, want, "{from}..{to}");
        }
        let cover = |tid, a, b| {
            (all.iter().enumerate())
                .filter(|(_, c)| c.tid == tid && c.start <= a && c.end >= b)
                .max_by_key(|(i, c)| (c.start, *i))
                .map(|(_, c)| *c)
        };
        // Call 130 is the long one: it covers windows far after its block.
        let long = all[130];
        for (tid, a, b) in [
            (long.tid, long.start + 1_000, long.start + 1_000_000),
            (long.tid, long.start, long.start),
            (100, 1_200_000, 1_200_100),
            (101, 1_200_000, 1_200_100),
            (7, 1_200_000, 1_200_100),
        ] {
            assert_eq!(s.covering(tid, a, b), cover(tid, a, b), "{tid} {a} {b}");
        }
        assert_eq!(
            s.covering(long.tid, long.start + 9, long.start + 10),
            Some(long)
        );
        // Ten bytes a call or so, against a span's 38.
        assert!(s.bytes_per_call() < 14.0, "{}", s.bytes_per_call());
    }
}
