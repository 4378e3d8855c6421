//! Which samples a window decides. Windows overlap, so a sample is seen several times;
//! it is *settled* by the first window that holds it whole: its start at least `before`
//! after the window's start (the context of its chain is inside), its end (or, with no
//! reply, where it stopped waiting) at least `after` before the window's end. Each is
//! taken once. A sample with no reply yet is decided once its deadline and `after` have
//! passed: a miss is reported within about a second of its deadline, not when the next
//! request finally comes. The next window starts early enough to hold whole any sample
//! shorter than `span`, and earlier still (up to [`MAX_BACK`] spans) when a sample was
//! seen unfinished.

use std::collections::BTreeSet;
use whylate::explain::Window;

/// How many spans a window may reach back for an unfinished sample: a bound on the pages
/// held, whatever the workload does.
const MAX_BACK: u64 = 10;

/// The window bookkeeping of one run.
pub(crate) struct Settler {
    pub(crate) before: u64,
    pub(crate) after: u64,
    /// The longest sample every window is made to hold whole.
    pub(crate) span: u64,
    /// Settled samples still inside the overlap: (start, tid, cpu).
    seen: BTreeSet<(u64, i32, u32)>,
    /// End of the last window.
    last_end: Option<u64>,
    /// The earliest start of a sample seen unfinished.
    pending: Option<u64>,
    /// Samples over this are misses (none while it is being learnt).
    pub(crate) deadline: Option<u64>,
}

impl Settler {
    /// Windows with `before` of context ahead of a sample and `after` behind it.
    pub(crate) fn new(before: u64, after: u64, span: u64) -> Settler {
        Settler {
            before,
            after,
            span,
            seen: BTreeSet::new(),
            last_end: None,
            pending: None,
            deadline: None,
        }
    }

    /// Where the window ending at `end` begins (never before `floor`, the oldest data).
    pub(crate) fn start(&self, floor: u64) -> u64 {
        let Some(last) = self.last_end else {
            return floor;
        };
        let overlap = self.before + self.after + self.span;
        let mut s = last.saturating_sub(overlap);
        if let Some(p) = self.pending {
            let back = last.saturating_sub(MAX_BACK * overlap);
            s = s.min(p.saturating_sub(self.before).max(back));
        }
        s.max(floor)
    }

    /// The samples of a window `[from, to]` it decides; `first` when the window starts
    /// where the recording did (nothing before it to miss), `last` when nothing will come
    /// after it.
    pub(crate) fn settle(
        &mut self,
        samples: impl IntoIterator<Item = Window>,
        (from, to): (u64, u64),
        first: bool,
        last: bool,
    ) -> Vec<Window> {
        let mut out = Vec::new();
        self.pending = None;
        for w in samples {
            let end = match (w.end_ns(), self.deadline) {
                (Some(e), _) => e,
                // No reply yet: decided at its deadline (its window shows what was
                // pending then), or where it stopped waiting if that came first.
                (None, Some(d)) if w.miss => w.stop_ns().min(w.start_ns + d),
                (None, _) => w.stop_ns(),
            };
            if !first && w.start_ns < from + self.before {
                continue;
            }
            if !last && end + self.after > to {
                self.pending = Some(self.pending.map_or(w.start_ns, |p| p.min(w.start_ns)));
                continue;
            }
            if self.seen.insert((w.start_ns, w.tid, w.cpu)) {
                out.push(w);
            }
        }
        self.last_end = Some(to);
        // What the next window can no longer see needs no remembering.
        let keep_from = self.start(0).saturating_sub(self.span);
        self.seen = self.seen.split_off(&(keep_from, i32::MIN, 0));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Settler;
    use whylate::explain::Window;

    fn w(start: u64, end: Option<u64>) -> Window {
        Window::new(
            start,
            end,
            end.unwrap_or(start + 50),
            1,
            0,
            end.is_none_or(|e| e - start > 10),
        )
    }

    #[test]
    fn each_sample_is_settled_once_by_the_first_window_that_holds_it_whole() {
        // before 5, after 5, span 20: windows overlap by 30.
        let mut s = Settler::new(5, 5, 20);
        let all = [
            w(2, Some(6)),
            w(40, Some(45)),
            w(95, Some(140)),
            w(150, Some(152)),
        ];
        assert_eq!(s.start(0), 0);
        // [0, 100]: the first window settles what ends by 95; the long one is unfinished.
        let a = s.settle(all, (0, 100), true, false);
        assert_eq!(
            a.iter().map(|x| x.start_ns).collect::<Vec<_>>(),
            vec![2, 40]
        );
        // The next starts at 100 - 30 = 70, and earlier for the one seen unfinished (95-5).
        assert_eq!(s.start(0), 70);
        let b = s.settle(all[1..].iter().copied(), (70, 160), false, false);
        assert_eq!(
            b.iter().map(|x| x.start_ns).collect::<Vec<_>>(),
            vec![95, 150]
        );
        assert_eq!(s.start(0), 130);
        // A sample seen again is not settled twice; one still without a reply is decided
        // once its deadline (10) and `after` passed, not when its wait ends.
        s.deadline = Some(10);
        let late = [w(150, Some(152)), w(160, None), w(166, None)];
        let c = s.settle(late, (130, 175), false, false);
        assert_eq!(c.iter().map(|x| x.start_ns).collect::<Vec<_>>(), vec![160]);
        // The last window takes what is left, as offline explain would.
        let d = s.settle(late, (150, 400), false, true);
        assert_eq!(d.iter().map(|x| x.start_ns).collect::<Vec<_>>(), vec![166]);
    }
}
