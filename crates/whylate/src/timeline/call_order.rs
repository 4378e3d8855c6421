//! System calls in start order, streamed. [`Syscalls`] keeps calls in exit order, so a
//! call can come after calls that started later, by up to its own duration. Sorting them
//! all took 16 bytes a call; here calls longer than [`LONG_NS`] are gathered and sorted
//! apart (few: each covers that much time), and the rest pass through a heap that only
//! holds those not yet known to be next.

use super::span;
use super::syscalls::{Syscalls, BLOCK};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Calls longer than this are sorted apart.
pub const LONG_NS: u64 = 1_000_000;

/// (start, index) of the calls with a known start, by start, ties in call order.
pub struct ByStart<'a> {
    reader: super::syscalls::Reader<'a>,
    calls: &'a Syscalls,
    /// Per block of calls: the earliest start of a short call in that block or after.
    floor: Vec<u64>,
    /// The long calls, sorted, and how many were given out.
    long: Vec<(u64, u32)>,
    long_at: usize,
    /// Short calls read and not given out yet.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Syscalls {
    /// The calls whose start is known, as (start, index) by start (ties in call order),
    /// read in two passes without holding them all.
    pub fn by_start(&self) -> ByStart<'_> {
        let blocks = self.len().div_ceil(BLOCK);
        let mut floor = vec![u64::MAX; blocks + 1];
        let mut long = Vec::new();
        for (b, f) in floor.iter_mut().enumerate().take(blocks) {
            let calls = b * BLOCK..self.len().min((b + 1) * BLOCK);
            // Durations are at fixed places: only a block with a long call is decoded.
            if !calls.clone().any(|i| self.dur(i as u32) > LONG_NS) {
                *f = self.earliest_start_in_block(b);
                continue;
            }
            for (i, c) in self.iter_from(calls.start).take(calls.len()) {
                if c.flags & span::START_UNKNOWN != 0 {
                    continue;
                }
                match self.dur(i) > LONG_NS {
                    true => long.push((c.start, i)),
                    false => *f = (*f).min(c.start),
                }
            }
        }
        for b in (0..blocks).rev() {
            floor[b] = floor[b].min(floor[b + 1]);
        }
        long.sort_unstable();
        ByStart {
            reader: self.iter(),
            calls: self,
            floor,
            long,
            long_at: 0,
            heap: BinaryHeap::new(),
        }
    }
}

impl ByStart<'_> {
    /// The earliest start a short call not read yet can have.
    fn unread_floor(&self) -> u64 {
        let next = self.reader_pos();
        self.floor[next.div_ceil(BLOCK).min(self.floor.len() - 1)]
    }

    /// Index of the next call the reader gives.
    fn reader_pos(&self) -> usize {
        self.reader.position()
    }
}

impl Iterator for ByStart<'_> {
    type Item = (u64, u32);

    fn next(&mut self) -> Option<(u64, u32)> {
        loop {
            let short = self.heap.peek().map(|r| r.0);
            let long = self.long.get(self.long_at).copied();
            let best = match (short, long) {
                (Some(s), Some(l)) => Some(s.min(l)),
                (s, l) => s.or(l),
            };
            // A call read can go once no unread one can come before it. Whole blocks
            // are read at once, so the floor is that of the next block.
            let done = self.reader_pos() >= self.calls.len();
            if let Some(b) = best.filter(|b| done || b.0 < self.unread_floor()) {
                if Some(b) == long {
                    self.long_at += 1;
                } else {
                    self.heap.pop();
                }
                return Some(b);
            }
            if done {
                return None;
            }
            for _ in 0..BLOCK {
                let Some((i, c)) = self.reader.next() else {
                    break;
                };
                let short = self.calls.dur(i) <= LONG_NS;
                if short && c.flags & span::START_UNKNOWN == 0 {
                    self.heap.push(Reverse((c.start, i)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Sym;
    use crate::timeline::Syscall;

    fn call(start: u64, end: u64, flags: u8) -> Syscall {
        Syscall {
            start,
            end,
            cpu: 0,
            tid: 7,
            comm: Sym::default(),
            key: 1,
            migrations: 0,
            flags,
        }
    }

    /// Calls pushed by exit come out by start, ties in call order, as a sort of them all
    /// would give: short ones ending out of start order on two CPUs, long ones (a 5 s
    /// poll, one over the 31-bit duration) that started blocks earlier, equal starts, and
    /// no call whose start is unknown.
    #[test]
    fn calls_pushed_by_exit_come_out_by_start() {
        let mut s = Syscalls::default();
        let mut all = Vec::new();
        for i in 0..2_000u64 {
            let end = 10_000_000 + i * 1_000;
            let c = match i {
                100 => call(1_000, end, 0),
                700 => call(end - 3 * LONG_NS, end, 0),
                900 => call(0, end + (5u64 << 32), 0),
                1_200 => call(5, end, span::START_UNKNOWN),
                _ if i % 3 == 0 => call(end - 300, end, 0),
                _ if i % 50 == 0 => call(end - 20_000, end, 0),
                _ => call(end - 900 - (i % 7) * 400, end, 0),
            };
            all.push(c);
        }
        // Two calls starting together, the later pushed last.
        all[400].start = all[401].start;
        for c in &all {
            s.push(*c);
        }
        let mut want: Vec<(u64, u32)> = (all.iter().enumerate())
            .filter(|(_, c)| c.flags & span::START_UNKNOWN == 0)
            .map(|(i, c)| (c.start, i as u32))
            .collect();
        want.sort_unstable();
        assert_eq!(s.by_start().collect::<Vec<_>>(), want);
        assert_eq!(want.len(), 1_999);
        assert_eq!(Syscalls::default().by_start().next(), None);
    }
}
