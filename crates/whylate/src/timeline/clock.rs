//! Where each hrtimer expiry falls on the trace clock: timers run on their base's clock,
//! traces on another; the offset is learnt from nearby expiries.

use super::model::{EdgeKind, Timeline};

/// Trace clock minus the timers' clock, per hrtimer expiry: where in trace time each
/// timer was due. `now` of hrtimer_expire_entry is read when the timer interrupt starts and
/// the event comes after it, so the smallest `at - now` among the expiries around one is
/// the clocks' offset there, and the rest of its own difference is how long its callback
/// waited for the interrupt's earlier callbacks (or a stalled vCPU). Estimated locally
/// because a trace clock that is not CLOCK_MONOTONIC (tracefs' `local`, perf's sched_clock)
/// drifts from it by NTP's slew, up to a millisecond per minute. Only differences within
/// 1 s below the expiry's own count: a CLOCK_REALTIME timer's `now` is decades away, a
/// CLOCK_BOOTTIME one's by the time spent suspended (none on a machine that never
/// suspended), while a callback's own wait, a vCPU stalled inside the interrupt, has been
/// seen at 12 ms on this project's VM.
pub struct TimerClock {
    /// (edge index, offset in ns), by edge index.
    offsets: Vec<(u32, i64)>,
}

/// Neighbours on each side an offset is taken from, and how far away they may be.
const CLOCK_NEIGHBOURS: usize = 64;
pub(crate) const CLOCK_WINDOW_NS: u64 = 20_000_000;
const CLOCK_BAND_NS: i64 = 1_000_000_000;

impl TimerClock {
    /// The offsets of every timer edge that has its `now`.
    pub fn new(tl: &Timeline) -> Self {
        let mut pts: Vec<(u64, i64, u32)> = tl
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == EdgeKind::Timer && e.val2 != u64::MAX)
            .map(|(i, e)| (e.at, e.at as i64 - e.val2 as i64, i as u32))
            .collect();
        pts.sort_unstable();
        let mut offsets: Vec<(u32, i64)> = pts
            .iter()
            .enumerate()
            .map(|(k, &(at, d, idx))| {
                let lo = k.saturating_sub(CLOCK_NEIGHBOURS);
                let hi = (k + CLOCK_NEIGHBOURS + 1).min(pts.len());
                let off = pts[lo..hi]
                    .iter()
                    .filter(|p| p.0.abs_diff(at) <= CLOCK_WINDOW_NS)
                    .map(|p| p.1)
                    .filter(|&x| x <= d && x >= d.saturating_sub(CLOCK_BAND_NS))
                    .fold(d, i64::min);
                (idx, off)
            })
            .collect();
        offsets.sort_unstable();
        TimerClock { offsets }
    }

    /// Trace time minus timer time around edge `ei`.
    fn offset(&self, ei: usize) -> Option<i64> {
        let i = self
            .offsets
            .binary_search_by_key(&(ei as u32), |p| p.0)
            .ok()?;
        Some(self.offsets[i].1)
    }

    /// When timer edge `ei` was due, in trace time (its softexpires moved to the trace
    /// clock, never after the callback), if it has `now` and its expiry.
    pub fn due(&self, tl: &Timeline, ei: usize) -> Option<u64> {
        let e = &tl.edges[ei];
        if e.val == u64::MAX {
            return None;
        }
        let due = (e.val as i64).saturating_add(self.offset(ei)?).max(0) as u64;
        Some(due.min(e.at))
    }

    /// For a timer armed for a time already past (its task overran the period): its
    /// lateness from when it could first have fired, the arming, rather than from its
    /// expiry. `None` for a timer armed in time or whose arming is unknown.
    pub fn armed_late(&self, tl: &Timeline, ei: usize) -> Option<u64> {
        let e = &tl.edges[ei];
        if e.ts == 0 {
            return None;
        }
        let armed = (e.ts as i64).saturating_sub(self.offset(ei)?).max(0) as u64;
        (armed > e.val).then(|| e.val2.saturating_sub(armed))
    }
}
