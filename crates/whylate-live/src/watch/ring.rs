//! The pages of the last seconds, per CPU, as the readers hand them over: what a window
//! trace.dat is cut from. Bounded by time (older pages are dropped once no window can
//! reach them) and by bytes (the oldest go first when a burst outruns the time bound).

use crate::record::{MemPages, PageSink};
use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::Sender;
use whylate::read::ringbuf::{PageCursor, PageLayout};

/// One ring-buffer page as read: its CPU, the time of its first record, its bytes.
pub(crate) struct RawPage {
    pub(crate) cpu: u32,
    pub(crate) ts: u64,
    /// The kernel dropped events before this page (the count, when it kept one).
    pub(crate) lost: Option<Option<u64>>,
    pub(crate) data: std::sync::Arc<[u8]>,
}

/// A reader's sink for `watch`: each page goes to the main thread.
pub(crate) struct ToChannel {
    pub(crate) cpu: u32,
    pub(crate) layout: PageLayout,
    pub(crate) tx: Sender<RawPage>,
}

impl PageSink for ToChannel {
    fn page(&mut self, page: &[u8]) -> io::Result<()> {
        let (ts, lost) = match PageCursor::new(page, &self.layout) {
            Some(c) if !c.is_empty() => (c.ts, c.missed),
            // An empty page says nothing; a page we cannot read is kept for the reader
            // of the window to complain about.
            Some(_) => return Ok(()),
            None => (0, None),
        };
        let p = RawPage {
            cpu: self.cpu,
            ts,
            lost,
            data: page.into(),
        };
        // The receiver is gone only when watch is ending: the page is not needed.
        let _ = self.tx.send(p);
        Ok(())
    }
}

/// Pages per CPU, oldest first.
#[derive(Default)]
pub(crate) struct Ring {
    cpus: Vec<VecDeque<RawPage>>,
    bytes: u64,
    /// Pages dropped for the byte bound before their time.
    pub(crate) squeezed: u64,
    /// Per CPU: times where the kernel reported lost events, and how many (0: unknown).
    pub(crate) lost: Vec<VecDeque<(u64, u64)>>,
    /// Per CPU: its records before this time were dropped from the ring (0: none yet).
    dropped: Vec<u64>,
}

impl Ring {
    /// Takes a page; drops the oldest pages while more than `cap` bytes are held.
    pub(crate) fn push(&mut self, p: RawPage, cap: u64) {
        let c = p.cpu as usize;
        if self.cpus.len() <= c {
            self.cpus.resize_with(c + 1, VecDeque::new);
            self.lost.resize_with(c + 1, VecDeque::new);
        }
        if let Some(n) = p.lost {
            self.lost[c].push_back((p.ts, n.unwrap_or(0)));
        }
        self.bytes += p.data.len() as u64;
        self.cpus[c].push_back(p);
        while self.bytes > cap {
            let oldest = (0..self.cpus.len())
                .filter(|&i| self.cpus[i].len() > 1)
                .min_by_key(|&i| self.cpus[i][0].ts);
            let Some(i) = oldest else { break };
            self.drop_front(i);
            self.squeezed += 1;
        }
    }

    fn drop_front(&mut self, i: usize) {
        if let Some(p) = self.cpus[i].pop_front() {
            self.bytes -= p.data.len() as u64;
            // This CPU's records before its new first page are gone.
            let from = self.cpus[i].front().map_or(p.ts, |n| n.ts);
            if self.dropped.len() <= i {
                self.dropped.resize(i + 1, 0);
            }
            self.dropped[i] = self.dropped[i].max(from);
        }
    }

    /// Drops the pages whose records all lie before `ts` (a page's last record is before
    /// the next page's first), and lost-event marks older than it.
    pub(crate) fn trim(&mut self, ts: u64) {
        for i in 0..self.cpus.len() {
            while self.cpus[i].len() > 1 && self.cpus[i][1].ts <= ts {
                self.drop_front(i);
            }
            while self.lost[i].front().is_some_and(|l| l.0 < ts) {
                self.lost[i].pop_front();
            }
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Where the ring's data is whole on every CPU: after the latest time any CPU's
    /// records were dropped; before any drop, its earliest record. A CPU that was idle at
    /// the start does not move it (its first page simply comes later).
    pub(crate) fn complete_from(&self) -> Option<u64> {
        let first = self
            .cpus
            .iter()
            .filter_map(|q| q.front())
            .map(|p| p.ts)
            .min()?;
        Some(self.dropped.iter().copied().fold(first, u64::max))
    }

    /// Per CPU, the pages that may hold records in `[from, to]`, in order.
    pub(crate) fn window(&self, from: u64, to: u64) -> Vec<MemPages> {
        let mut out = Vec::new();
        for (cpu, q) in self.cpus.iter().enumerate() {
            let pages: Vec<std::sync::Arc<[u8]>> = (0..q.len())
                .filter(|&k| q[k].ts <= to && q.get(k + 1).is_none_or(|n| n.ts > from))
                .map(|k| q[k].data.clone())
                .collect();
            out.push(MemPages {
                cpu: cpu as u32,
                pages,
            });
        }
        out
    }

    /// Lost-event marks on any CPU in `[from, to]`: (CPU, count; 0 = unknown).
    pub(crate) fn lost_in(&self, from: u64, to: u64) -> Vec<(u32, u64)> {
        let mut v = Vec::new();
        for (cpu, q) in self.lost.iter().enumerate() {
            for &(ts, n) in q {
                if (from..=to).contains(&ts) {
                    v.push((cpu as u32, n));
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::{RawPage, Ring};

    fn page(cpu: u32, ts: u64, lost: bool) -> RawPage {
        RawPage {
            cpu,
            ts,
            lost: lost.then_some(Some(3)),
            data: vec![0u8; 100].into(),
        }
    }

    #[test]
    fn windows_take_the_pages_that_reach_them_and_the_bounds_hold() {
        let mut r = Ring::default();
        for (i, ts) in [10, 20, 30, 40].into_iter().enumerate() {
            r.push(page(0, ts, i == 2), u64::MAX);
            r.push(page(1, ts + 5, false), u64::MAX);
        }
        // [22, 31]: CPU0's page at 20 (its records run to 30), 30; CPU1's 15, 25, 35? no:
        // 35 > 31; 15 reaches 25 > 22.
        let w = r.window(22, 31);
        assert_eq!((w[0].pages.len(), w[1].pages.len()), (2, 2));
        assert_eq!(r.lost_in(0, 100), vec![(0, 3)]);
        // Nothing dropped yet: whole from the earliest record, whichever CPU holds it.
        assert_eq!(r.complete_from(), Some(10));
        r.trim(31);
        // CPU0 lost what came before 30, CPU1 before 25: whole from 30.
        assert_eq!(r.complete_from(), Some(30));
        assert_eq!(r.bytes(), 500);
        // 300 bytes allowed: the oldest pages go, each CPU keeps its newest.
        r.push(page(0, 50, false), 300);
        assert_eq!((r.bytes(), r.squeezed), (300, 3));
    }
}
