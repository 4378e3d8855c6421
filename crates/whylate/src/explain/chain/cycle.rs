//! One request/response cycle, and where the cutter keeps them: all are kept until the
//! deadline is known. The first [`PLAIN_MAX`] are kept as they are (32 bytes each); past
//! that, cycles can number millions, and all but the newest few thousand are packed (6
//! to 10 bytes each) and read back in order.

use crate::packed::{get_i, get_u, put_i, put_u, Pack, Packed};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// One cycle as cut from the stream (a reply's time and the horizon share a field, the
/// horizon of a replied cycle being its reply).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cycle {
    /// The `from` event.
    pub start_ns: u64,
    /// The reply's time if one came, else when the cycle stopped waiting.
    stop_ns: u64,
    /// Thread that matched `from`.
    pub tid: i32,
    /// Its CPU.
    pub cpu: u32,
    /// Thread that matched `to` (the reply); meaningless without one.
    reply_tid: i32,
    /// [`REPLIED`], [`IN_IRQ`] when the reply event was traced in an interrupt, and
    /// [`END_LOST`] (one byte, where bools would make the struct 40 bytes).
    replied: u8,
    /// Still open when the trace ended.
    pub at_end: bool,
    /// Write syscalls the thread made inside the cycle, up to 8 (a timeout log line is one
    /// way a deadline shows); their offsets are in [`crate::explain::Cycles::writes`].
    pub writes: u8,
    /// Replied or given up: it changes no more.
    closed: bool,
}

/// `Cycle::replied`: a reply came.
const REPLIED: u8 = 1;
/// `Cycle::replied`: its event was traced in an interrupt.
const IN_IRQ: u8 = 2;
/// `Cycle::replied`: see [`Cycle::end_lost`].
const END_LOST: u8 = 4;

impl Cycle {
    /// A cycle opened at `start_ns` by `tid` on `cpu`, with no reply yet.
    pub fn open(start_ns: u64, tid: i32, cpu: u32) -> Cycle {
        Cycle {
            start_ns,
            stop_ns: start_ns,
            tid,
            cpu,
            ..Cycle::default()
        }
    }

    /// The reply came at `ts` from `tid`.
    pub fn reply(&mut self, ts: u64, tid: i32) {
        (self.stop_ns, self.reply_tid, self.replied) = (ts, tid, REPLIED);
        self.closed = true;
    }

    /// The `to` event, if one came.
    pub fn end_ns(&self) -> Option<u64> {
        self.is_replied().then_some(self.stop_ns)
    }

    /// Thread that matched `to`, if one did.
    pub fn end_tid(&self) -> Option<i32> {
        self.is_replied().then_some(self.reply_tid)
    }

    fn is_replied(&self) -> bool {
        self.replied & REPLIED != 0
    }

    /// True when the reply (`to`) event was traced in a hard or soft interrupt: its
    /// thread is the task that was interrupted, not a reader.
    pub fn reply_in_irq(&self) -> bool {
        self.replied & IN_IRQ != 0
    }

    /// Says whether the reply event was traced in an interrupt (after [`Cycle::reply`]).
    pub fn set_reply_in_irq(&mut self, yes: bool) {
        self.replied = (self.replied & !IN_IRQ) | if yes { IN_IRQ } else { 0 };
    }

    /// Its end event is not in the trace: it was a system call's exit, and the thread
    /// entered its next call first (a thread is in one call at a time), so the trace
    /// lost that exit. Not judged.
    pub fn end_lost(&self) -> bool {
        self.replied & END_LOST != 0
    }

    /// Stops waiting at `ts`, the trace having lost its end ([`Cycle::end_lost`]).
    pub fn lose_end(&mut self, ts: u64) {
        self.give_up(ts);
        self.replied |= END_LOST;
    }

    /// When the cycle stopped waiting: its reply, else the next `from` or the trace end.
    pub fn stop_ns(&self) -> u64 {
        self.stop_ns
    }

    /// Stops waiting, unreplied, at `ts`.
    pub fn give_up(&mut self, ts: u64) {
        self.stop_ns = ts;
        self.closed = true;
    }
}

impl Pack for Cycle {
    fn pack(&self, prev: &Self, out: &mut Vec<u8>) {
        // Cycles come by start, mostly of one thread or a few: small deltas.
        put_i(out, self.start_ns.wrapping_sub(prev.start_ns) as i64);
        put_i(out, self.stop_ns.wrapping_sub(self.start_ns) as i64);
        put_i(out, i64::from(self.tid) - i64::from(prev.tid));
        let flags = u64::from(self.cpu) << 9
            | u64::from(self.end_lost()) << 8
            | u64::from(self.reply_in_irq()) << 7
            | u64::from(self.writes.min(15)) << 3
            | u64::from(self.closed) << 2
            | u64::from(self.at_end) << 1
            | u64::from(self.is_replied());
        put_u(out, flags);
        if self.is_replied() {
            put_i(out, i64::from(self.reply_tid) - i64::from(self.tid));
        }
    }

    fn unpack(prev: &Self, buf: &[u8], at: &mut usize) -> Self {
        let start_ns = prev.start_ns.wrapping_add(get_i(buf, at) as u64);
        let stop_ns = start_ns.wrapping_add(get_i(buf, at) as u64);
        let tid = (i64::from(prev.tid) + get_i(buf, at)) as i32;
        let f = get_u(buf, at);
        let replied = f & 1 != 0;
        let reply_tid = if replied {
            (i64::from(tid) + get_i(buf, at)) as i32
        } else {
            0
        };
        Cycle {
            start_ns,
            stop_ns,
            tid,
            cpu: (f >> 9) as u32,
            reply_tid,
            replied: (u8::from(replied) * REPLIED)
                | (u8::from(f & 128 != 0) * IN_IRQ)
                | (u8::from(f & 256 != 0) * END_LOST),
            at_end: f & 2 != 0,
            writes: ((f >> 3) & 15) as u8,
            closed: f & 4 != 0,
        }
    }
}

/// Cycles kept unpacked behind the newest: a reply mostly comes before this many later
/// requests, so nearly every cycle is packed closed, never to change again.
const RECENT: usize = 4096;

/// Cycles kept as they are, 32 MiB: packing each cycle and unpacking it on every walk
/// after the pass cost cycle mode a fifth of its time over automatic mode (3 M events,
/// 750 k cycles), where few recordings have more cycles than this.
#[cfg(not(test))]
const PLAIN_MAX: usize = 1 << 20;
/// Small in tests, so that tests of thousands of cycles pack (the bundled examples have
/// hundreds).
#[cfg(test)]
const PLAIN_MAX: usize = 2 * RECENT;

/// Every cycle, in start order: up to a million (`PLAIN_MAX`) as they are; past that, the newest
/// `RECENT` as they are and the older packed. An older one still open when packed (its
/// reply is far behind) lives on in a side table, where the cutter updates it.
#[derive(Debug, Default)]
pub struct CycleStore {
    /// Every cycle while there are at most [`PLAIN_MAX`] (then empty for good).
    plain: Vec<Cycle>,
    packed: Packed<Cycle>,
    recent: VecDeque<Cycle>,
    open_packed: FxHashMap<usize, Cycle>,
    /// Threads the walks over the cycles may use; 0: as many as [`threads`] says.
    pub(in crate::explain) threads: usize,
    /// Cycles marked [`Cycle::end_lost`].
    pub end_lost: u64,
}

impl CycleStore {
    /// Appends a cycle; returns its index.
    pub fn push(&mut self, c: Cycle) -> usize {
        let i = self.len();
        if self.packs() {
            self.push_packing(c);
        } else if self.plain.len() < PLAIN_MAX {
            self.plain.push(c);
        } else {
            for old in std::mem::take(&mut self.plain) {
                self.push_packing(old);
            }
            self.push_packing(c);
        }
        i
    }

    /// True once the cycles outgrew [`PLAIN_MAX`].
    pub(in crate::explain) fn packs(&self) -> bool {
        !self.packed.is_empty() || !self.recent.is_empty()
    }

    /// Appends a cycle to the newest, packing the oldest of them.
    fn push_packing(&mut self, c: Cycle) {
        self.recent.push_back(c);
        if self.recent.len() > RECENT {
            let old = self.recent.pop_front().expect("more than RECENT");
            if !old.closed {
                self.open_packed.insert(self.packed.len(), old);
            }
            self.packed.push(old);
        }
    }

    /// Cycles held.
    pub fn len(&self) -> usize {
        self.plain.len() + self.packed.len() + self.recent.len()
    }

    /// True when none are.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cycle `i`, which must still be open (a closed packed one cannot be reached).
    pub fn open(&self, i: usize) -> &Cycle {
        if let Some(c) = self.plain.get(i) {
            return c;
        }
        match i.checked_sub(self.packed.len()) {
            Some(r) => &self.recent[r],
            None => &self.open_packed[&i],
        }
    }

    /// Cycle `i`, still open, to change.
    pub fn open_mut(&mut self, i: usize) -> &mut Cycle {
        if i < self.plain.len() {
            return &mut self.plain[i];
        }
        match i.checked_sub(self.packed.len()) {
            Some(r) => &mut self.recent[r],
            None => (self.open_packed.get_mut(&i)).expect("only open cycles change"),
        }
    }

    /// Every cycle, in start order.
    pub fn iter(&self) -> impl Iterator<Item = Cycle> + Clone + '_ {
        let late = &self.open_packed;
        (self.plain.iter().copied())
            .chain(
                (self.packed.iter().enumerate())
                    .map(move |(i, c)| if c.closed { c } else { late[&i] }),
            )
            .chain(self.recent.iter().copied())
    }

    /// Every cycle with its index, in parts read side by side by up to `n` threads
    /// ([`CycleStore::map_parts`]).
    pub fn parts(&self, n: usize) -> Vec<Part<'_>> {
        if !self.packs() {
            return self.plain_parts(n);
        }
        let part = |(first, packed)| Part {
            plain: Default::default(),
            packed,
            recent: Default::default(),
            late: &self.open_packed,
            next: first,
        };
        let mut parts: Vec<Part<'_>> = self.packed.parts(n).into_iter().map(part).collect();
        if parts.is_empty() {
            parts.push(part((0, self.packed.iter())));
        }
        parts.last_mut().expect("one at least").recent = self.recent.iter();
        parts
    }

    /// [`Self::parts`] of cycles kept as they are: `n` runs of (nearly) equal length.
    fn plain_parts(&self, n: usize) -> Vec<Part<'_>> {
        let len = self.plain.len();
        let n = n.clamp(1, len.max(1));
        (0..n)
            .map(|k| {
                let (from, to) = (len * k / n, len * (k + 1) / n);
                Part {
                    plain: self.plain[from..to].iter(),
                    packed: Default::default(),
                    recent: Default::default(),
                    late: &self.open_packed,
                    next: from,
                }
            })
            .collect()
    }

    /// Settles how many threads the walks use (unless set already), so that every walk
    /// cuts the cycles into the same parts: a walk may look up what an earlier one found
    /// per part, by its first index.
    pub fn settle_threads(&mut self) {
        if self.threads == 0 {
            self.threads = threads(self.len());
        }
    }

    /// `f` of each part of the cycles, in order: on a thread each where there are enough
    /// cycles and cores (the walks after the reading pass are most of cycle mode's cost
    /// after it, and the reading thread is idle by then).
    pub fn map_parts<R: Send>(&self, f: impl Fn(Part<'_>) -> R + Sync) -> Vec<R> {
        let n = match self.threads {
            0 => threads(self.len()),
            n => n,
        };
        let parts = self.parts(n);
        if parts.len() == 1 {
            return parts.into_iter().map(f).collect();
        }
        std::thread::scope(|sc| {
            let mut parts = parts.into_iter();
            let mine = parts.next().expect("more than one");
            let theirs: Vec<_> = parts.map(|p| sc.spawn(|| f(p))).collect();
            let mut out = vec![f(mine)];
            for t in theirs {
                out.push(t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
            out
        })
    }

    /// Only the cycles that start in `[lo, cut)` (a window of a long trace explains those
    /// alone: the others are another window's). Cycles are in start order, so those kept
    /// are one run: the cycles before and after it are dropped and the packed ones in it
    /// are kept packed, all but two chunks as they are (rebuilding the store cycle by
    /// cycle cost a second of a 96 M-event run's 22 s).
    pub fn starting_in(mut self, (lo, cut): (u64, u64)) -> CycleStore {
        let a = self.count_before(lo);
        let b = self.count_before(cut).max(a);
        let lost = |c: &Cycle| c.end_lost();
        let dropped = (self.cycles_from(0).take(a).filter(lost).count()
            + self.cycles_from(b).filter(lost).count()) as u64;
        let p = self.packed.len();
        let (pa, pb) = (a.min(p), b.min(p));
        // Cut in place: a window's plain cycles are up to a million, not copied again.
        let mut plain = std::mem::take(&mut self.plain);
        plain.truncate(b);
        plain.drain(..a.min(plain.len()));
        let packed = std::mem::take(&mut self.packed).range(pa, pb);
        let open_packed = (self.open_packed.drain())
            .filter(|(i, _)| (pa..pb).contains(i))
            .map(|(i, c)| (i - pa, c))
            .collect();
        let r = |i: usize| (i.max(p) - p).min(self.recent.len());
        let recent = self.recent.drain(r(a)..r(b)).collect();
        debug_assert!(
            dropped <= self.end_lost,
            "lost ends counted as they are marked"
        );
        // Read only from here on: `recent` may hold fewer than RECENT, `plain` nothing
        // while `packed` is short.
        CycleStore {
            plain,
            packed,
            recent,
            open_packed,
            threads: self.threads,
            end_lost: self.end_lost.saturating_sub(dropped),
        }
    }

    /// How many cycles start before `t` (they are in start order).
    fn count_before(&self, t: u64) -> usize {
        let before = |c: &Cycle| c.start_ns < t;
        if !self.packs() {
            return self.plain.partition_point(before);
        }
        match self.packed.partition_point(before) {
            p if p < self.packed.len() => p,
            p => p + self.recent.partition_point(before),
        }
    }

    /// The cycles from index `i` on, in start order (the packed ones decoded from the
    /// chunk that holds `i`).
    fn cycles_from(&self, i: usize) -> impl Iterator<Item = Cycle> + '_ {
        let late = &self.open_packed;
        let p = self.packed.len();
        let plain = self.plain.get(i..).unwrap_or_default();
        let packed =
            (self.packed.iter_from(i.min(p)).enumerate()).map(move |(k, c)| match c.closed {
                true => c,
                false => late[&(i.min(p) + k)],
            });
        let recent = self.recent.iter().skip(i.saturating_sub(p)).copied();
        plain.iter().copied().chain(packed).chain(recent)
    }

    /// Every cycle, in start order, giving back the packed ones' memory as they are read.
    pub fn into_cycles(self) -> impl Iterator<Item = Cycle> {
        let CycleStore {
            plain,
            packed,
            recent,
            mut open_packed,
            ..
        } = self;
        (plain.into_iter())
            .chain(
                (packed.into_iter().enumerate()).map(move |(i, c)| match c.closed {
                    true => c,
                    false => open_packed.remove(&i).expect("packed open, kept aside"),
                }),
            )
            .chain(recent)
    }
}

/// Threads for `n` cycles: one below [`PAR_MIN`] (a thread costs more than it saves) or
/// with `WHYLATE_ONE_THREAD` set, else a core each, four at most.
fn threads(n: usize) -> usize {
    if n < PAR_MIN || std::env::var_os("WHYLATE_ONE_THREAD").is_some() {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |c| c.get().min(4))
}

/// Cycles from which the walks over them are shared between threads.
const PAR_MIN: usize = 1 << 15;

/// A run of cycles with their indices, in start order (one of [`CycleStore::parts`]).
pub struct Part<'a> {
    plain: std::slice::Iter<'a, Cycle>,
    packed: crate::packed::Iter<'a, Cycle>,
    recent: std::collections::vec_deque::Iter<'a, Cycle>,
    late: &'a FxHashMap<usize, Cycle>,
    next: usize,
}

impl Part<'_> {
    /// The index of the part's first cycle (its first still to read).
    pub fn first(&self) -> usize {
        self.next
    }
}

impl Iterator for Part<'_> {
    type Item = (usize, Cycle);

    #[inline]
    fn next(&mut self) -> Option<(usize, Cycle)> {
        let c = match self.plain.next() {
            Some(c) => *c,
            None => match self.packed.next() {
                Some(c) if c.closed => c,
                Some(_) => self.late[&self.next],
                None => *self.recent.next()?,
            },
        };
        self.next += 1;
        Some((self.next - 1, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cycles answered far behind their request (a deep queue) are packed while open and
    /// still take their reply; every cycle comes back as it was left.
    #[test]
    fn cycles_packed_while_open_still_change_and_all_come_back_in_order() {
        let n = 3 * RECENT;
        let mut st = CycleStore::default();
        let mut want = Vec::new();
        for k in 0..n {
            let c = Cycle::open(1_000 + k as u64 * 500, 40 + (k % 3) as i32, (k % 2) as u32);
            assert_eq!(st.push(c), k);
            want.push(c);
            // Every tenth request is answered only 2*RECENT requests later.
            if !k.is_multiple_of(10) {
                st.open_mut(k).reply(1_200 + k as u64 * 500, 7);
                want[k].reply(1_200 + k as u64 * 500, 7);
            }
            if k >= 2 * RECENT && (k - 2 * RECENT).is_multiple_of(10) {
                let j = k - 2 * RECENT;
                assert_eq!(st.open(j).tid, want[j].tid);
                let at = want[j].start_ns + 9_000_000;
                st.open_mut(j).reply(at, 8);
                want[j].reply(at, 8);
                // Some replies came in an interrupt: the flag survives the packing.
                st.open_mut(j).set_reply_in_irq(j.is_multiple_of(20));
                want[j].set_reply_in_irq(j.is_multiple_of(20));
            }
        }
        st.open_mut(n - 10).give_up(99_000_000);
        want[n - 10].give_up(99_000_000);
        want[n - 10].at_end = true;
        st.open_mut(n - 10).at_end = true;
        // A cycle whose end the trace lost: the flag survives the packing too.
        st.open_mut(n - 11).lose_end(98_000_000);
        want[n - 11].lose_end(98_000_000);
        assert!(!st.open_packed.is_empty());
        assert_eq!(st.len(), n);
        assert_eq!(st.iter().collect::<Vec<_>>(), want);
        let bytes = st.packed.heap_bytes();
        assert!(bytes < st.packed.len() * 12, "{bytes}");
        for n in [1, 2, 3] {
            let parts = st.parts(n);
            assert!(!parts.is_empty() && parts.len() <= n);
            let read: Vec<(usize, Cycle)> = parts.into_iter().flatten().collect();
            assert_eq!(read, want.iter().copied().enumerate().collect::<Vec<_>>());
        }
        assert_eq!(
            CycleStore::default().parts(2).into_iter().flatten().count(),
            0
        );
        let counted: usize = st.map_parts(|p| p.count()).into_iter().sum();
        assert_eq!(counted, n);
        assert_eq!(st.into_cycles().collect::<Vec<_>>(), want);
    }

    /// `n` cycles 500 ns apart: every seventh answered late (packed while open once
    /// there are more than PLAIN_MAX), half of those with their end lost.
    fn store_of(n: usize) -> (CycleStore, Vec<Cycle>) {
        let mut st = CycleStore::default();
        let mut want = Vec::new();
        for k in 0..n {
            let c = Cycle::open(1_000 + k as u64 * 500, 40, 0);
            st.push(c);
            want.push(c);
            if !k.is_multiple_of(7) {
                st.open_mut(k).reply(c.start_ns + 100, 7);
                want[k].reply(c.start_ns + 100, 7);
            }
            if k >= 2 * RECENT && (k - 2 * RECENT).is_multiple_of(7) {
                let j = k - 2 * RECENT;
                let t = want[j].start_ns;
                if j.is_multiple_of(2) {
                    st.open_mut(j).lose_end(t + 9);
                    want[j].lose_end(t + 9);
                    st.end_lost += 1;
                } else {
                    st.open_mut(j).reply(t + 9_000, 8);
                    want[j].reply(t + 9_000, 8);
                }
            }
        }
        (st, want)
    }

    /// A window's own stretch of a store, packed (with cycles packed while open and some
    /// whose end was lost) or kept as they are: the same cycles, in order, with the same
    /// count of lost ends, as filtering every cycle by its start.
    #[test]
    fn a_stretch_of_the_store_is_the_cycles_that_start_in_it() {
        // 40,000 cycles pack into several chunks: a stretch moves some of them whole.
        for n in [40_000, 3 * RECENT + 17, RECENT] {
            let at = |k: usize| 1_000 + k as u64 * 500;
            let stretches = [
                (0, n + 1),
                (3, n - 3),
                (5, RECENT + 5),
                (n - 3, n + 9),
                (9, 9),
            ];
            for (x, y) in stretches {
                let (st, want) = store_of(n);
                assert_eq!(st.packs(), n > PLAIN_MAX);
                if n == 40_000 {
                    let chunks = st.packed.heap_bytes() >> 16;
                    assert!(chunks >= 3, "{chunks} chunks");
                }
                let (lo, cut) = (at(x) - 1, at(y) - 1);
                let kept: Vec<Cycle> = (want.iter().copied())
                    .filter(|c| c.start_ns >= lo && c.start_ns < cut)
                    .collect();
                let lost = kept.iter().filter(|c| c.end_lost()).count() as u64;
                let got = st.starting_in((lo, cut));
                assert_eq!(got.len(), kept.len(), "{x}..{y} of {n}");
                assert_eq!(got.end_lost, lost, "{x}..{y} of {n}");
                assert_eq!(got.iter().collect::<Vec<_>>(), kept, "{x}..{y} of {n}");
                let read: Vec<Cycle> = (got.parts(2).into_iter().flatten())
                    .map(|(_, c)| c)
                    .collect();
                assert_eq!(read, kept);
                assert_eq!(got.into_cycles().collect::<Vec<_>>(), kept);
            }
        }
    }

    /// Up to PLAIN_MAX cycles are kept as they are: still open ones change in place,
    /// and the parts split them evenly; the next one packs them all.
    #[test]
    fn cycles_stay_plain_until_the_cap_then_pack() {
        let mut st = CycleStore::default();
        let mut want = Vec::new();
        for k in 0..PLAIN_MAX {
            let c = Cycle::open(10 * k as u64, 5, 0);
            st.push(c);
            want.push(c);
        }
        st.open_mut(3).reply(35, 6);
        want[3].reply(35, 6);
        assert!(!st.packs() && st.open(PLAIN_MAX - 1).tid == 5);
        let parts = st.parts(3);
        let sizes: Vec<usize> = parts.iter().map(|p| p.first()).collect();
        assert_eq!(sizes, [0, PLAIN_MAX / 3, 2 * PLAIN_MAX / 3]);
        let read: Vec<(usize, Cycle)> = parts.into_iter().flatten().collect();
        assert_eq!(read, want.iter().copied().enumerate().collect::<Vec<_>>());
        // The next one packs every cycle but the newest RECENT; the open ones stay
        // reachable.
        let c = Cycle::open(10 * PLAIN_MAX as u64, 5, 0);
        assert_eq!(st.push(c), PLAIN_MAX);
        want.push(c);
        assert!(st.packs() && st.plain.is_empty());
        assert_eq!(st.packed.len(), PLAIN_MAX + 1 - RECENT);
        st.open_mut(PLAIN_MAX - 1).reply(1, 2);
        want[PLAIN_MAX - 1].reply(1, 2);
        assert_eq!(st.iter().collect::<Vec<_>>(), want);
        assert_eq!(st.into_cycles().collect::<Vec<_>>(), want);
    }

    #[test]
    fn a_cycle_is_32_bytes_and_keeps_its_reply_or_horizon() {
        assert_eq!(std::mem::size_of::<Cycle>(), 32);
        let mut c = Cycle::open(100, 7, 1);
        assert_eq!((c.end_ns(), c.end_tid(), c.stop_ns()), (None, None, 100));
        c.give_up(150);
        assert_eq!((c.end_ns(), c.stop_ns()), (None, 150));
        c.reply(180, 9);
        assert_eq!(
            (c.end_ns(), c.end_tid(), c.stop_ns()),
            (Some(180), Some(9), 180)
        );
    }
}
