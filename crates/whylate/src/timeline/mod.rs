//! The timeline: the model one streaming pass builds (`build`), of what every CPU and task was doing.
//!
//! Input: time-ordered [`Event`](crate::event::Event)s. Output: [`Spans`] (run, runnable-wait, sleep, hardirq,
//! softirq, tasklet, work, hrtimer callback, irqs-off, preempt-off) in columnar vectors,
//! system calls packed apart ([`Syscalls`]), and causal [`Edge`]s (who woke whom from
//! which context, who queued the work a worker ran, which context raised the softirq that
//! ran, which hrtimer woke a task).
//!
//! Memory grows with spans and edges kept, never with events read: a span costs
//! [`Spans::BYTES_PER_SPAN`] bytes, a system call about 10, an edge `size_of::<Edge>()`. Per-event work is a few
//! compares plus at most two hash lookups (the tasks a sched event names).
//!
//! Real traces are incomplete, and the timeline says so instead of guessing:
//! - tasks already running or runnable when the trace starts get spans flagged
//!   [`span::START_UNKNOWN`] (or none, where the start matters, such as runnable waits);
//! - a task seen running on a CPU with no switch to it (kernels that do not trace the switch
//!   out of idle, lost switches) is switched in implicitly, flagged [`span::INFERRED`];
//! - a span that crosses a lost-events window on its CPU (or on any CPU, for task states
//!   that any CPU can change) is flagged [`span::UNCERTAIN`]; after a loss the CPU's state is
//!   forgotten and rebuilt from the next events, never invented.

mod build;
mod call_order;
mod clock;
mod model;
mod profile;
mod query;
pub mod rtla;
pub mod span;
mod syscalls;

pub use build::Builder;
pub use call_order::ByStart;
pub use clock::TimerClock;
pub use model::*;
pub(crate) use profile::irq_label;
pub use profile::{profile, CpuProfile, IrqCount, Share, Usage};
pub use query::{Occupant, OccupantKind};
pub use syscalls::{Syscall, Syscalls, BLOCK as SYSCALL_BLOCK};

#[cfg(test)]
mod tests {
    use super::*;

    fn timer_edge(at: u64, now: u64, soft: u64) -> Edge {
        Edge {
            kind: EdgeKind::Timer,
            ts: 0,
            at,
            from_cpu: 0,
            from_tid: -1,
            from: Ctx::Unknown,
            to_tid: 7,
            to_cpu: 0,
            key: 0,
            val: soft,
            val2: now,
            span: NONE,
            link: NONE,
        }
    }

    /// Expiries are placed on the trace clock by the offset around them: it follows a
    /// drifting clock, ignores a callback that ran 12 ms after its interrupt read `now`
    /// and realtime timers on the same CPU, and falls back to the expiry's own difference.
    #[test]
    fn timer_clock_offsets_are_local_and_per_base() {
        let mut tl = Timeline::default();
        // Trace clock = monotonic + 5 ms + 20 ppm drift; callbacks 1-3 us after `now`.
        let mono = |t: u64| (t as f64 / (1.0 + 20e-6)) as u64 - 5_000_000;
        for k in 0..3000u64 {
            let at = 10_000_000_000 + k * 1_000_000;
            let now = mono(at) - 1_000 - (k % 3) * 1_000;
            tl.edges.push(timer_edge(at, now, now - 20_000));
            // A CLOCK_REALTIME timer beside it every 10 ms.
            if k % 10 == 0 {
                let rt = 1_700_000_000_000_000_000 + at;
                tl.edges.push(timer_edge(at + 10, rt, rt - 5_000));
            }
        }
        // A callback that waited 12 ms behind its interrupt's start.
        let late_at = 12_345_600_000;
        let now = mono(late_at - 12_000_000);
        tl.edges.push(timer_edge(late_at, now, now - 20_000));
        let clock = TimerClock::new(&tl);
        let ei = tl.edges.len() - 1;
        let due = clock.due(&tl, ei).unwrap();
        let want = late_at - 12_000_000 - 20_000;
        assert!(due.abs_diff(want) <= 3_000, "due {due}, want {want}");
        // Early and late in the trace alike (the drift moved the offset by 60 us).
        for ei in [0, tl.edges.len() - 2] {
            let e = tl.edges[ei];
            let due = clock.due(&tl, ei).unwrap();
            let want = e.at - 20_000 - clock_gap(&tl, ei);
            assert!(
                due.abs_diff(want) <= 3_000,
                "edge {ei}: due {due}, want {want}"
            );
        }
        // Realtime timers get their own base's offset.
        let rt = tl.edges.iter().position(|e| e.val2 > 1 << 60).unwrap();
        let due = clock.due(&tl, rt).unwrap();
        assert!(due.abs_diff(tl.edges[rt].at - 5_000) <= 1_000, "{due}");
        // Alone: its own difference.
        let mut one = Timeline::default();
        one.edges.push(timer_edge(50_000, 40_000, 30_000));
        assert_eq!(TimerClock::new(&one).due(&one, 0), Some(40_000));
    }

    /// The callback's own wait in the synthetic trace: 1-3 us.
    fn clock_gap(tl: &Timeline, ei: usize) -> u64 {
        let k = tl.edges[..ei].iter().filter(|e| e.val2 < 1 << 60).count() as u64;
        1_000 + (k % 3) * 1_000
    }
}
