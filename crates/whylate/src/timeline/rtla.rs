//! What the kernel's real-time latency tracers left in a trace: timerlat samples (one per
//! activation and context), osnoise noise intervals (with their own start and net
//! duration), `sample_threshold` hits and osnoise period summaries; and the activations
//! the samples pair into.

pub use crate::read::rtla::{LatCtx, NoiseKind, Period};

/// One timerlat sample: `#seq context C timer_latency N ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatSample {
    /// When it was recorded.
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// The task the event was recorded in (the timerlat thread, or whoever the IRQ
    /// interrupted).
    pub tid: i32,
    /// Activation id (per CPU).
    pub seq: u64,
    /// Which context.
    pub ctx: LatCtx,
    /// Latency from the timer's expiry, ns.
    pub lat_ns: u64,
    /// The stack saved right after it (index into [`Rtla::stacks`]).
    pub stack: Option<u32>,
}

/// One noise interval: what ran, from `start` for `dur_ns` of its own time (the time of
/// the noise nested in it is not counted twice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Noise {
    /// When the event was recorded (at the noise's end).
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// What kind.
    pub kind: NoiseKind,
    /// The IRQ's description, the softirq's name, the thread's comm (empty for NMIs).
    pub name: Box<str>,
    /// The IRQ vector, softirq number or thread id (-1 for NMIs).
    pub id: i32,
    /// Start, ns on the trace clock.
    pub start: u64,
    /// Net duration, ns.
    pub dur_ns: u64,
}

/// An osnoise `sample_threshold` hit: a stretch of noise over the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    /// When it was recorded.
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// The task it was recorded in (the osnoise thread).
    pub tid: i32,
    /// Start, ns.
    pub start: u64,
    /// Its duration, ns.
    pub dur_ns: u64,
    /// Interference events counted in it.
    pub interference: u64,
}

/// Everything of the real-time latency tracers in a trace.
#[derive(Clone, Debug, Default)]
pub struct Rtla {
    /// timerlat samples, in time order.
    pub samples: Vec<LatSample>,
    /// Noise intervals, in the order they were recorded.
    pub noise: Vec<Noise>,
    /// `sample_threshold` hits.
    pub thresholds: Vec<Threshold>,
    /// osnoise tracer period summaries.
    pub periods: Vec<Period>,
    /// Every kernel stack the trace saved, in time order.
    pub stacks: Vec<Stack>,
    /// Events of these tracers whose values are not numbers a trace can hold (a
    /// negative or 64-bit-overflowing duration): left out, counted, and the first one
    /// (time, CPU, name and text) kept to be shown.
    pub unreadable: u64,
    /// The first of them.
    pub first_unreadable: Option<(u64, u32, String)>,
}

/// A kernel stack saved in the trace (`<stack trace>` block, `kernel_stack` record): it
/// belongs to the event before it on its CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    /// When it was recorded.
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// The task it was recorded in.
    pub tid: i32,
    /// The frames, innermost first, as `=> name` ([`crate::read::stack::frames`]).
    pub frames: Box<str>,
}

impl Stack {
    /// The frames, innermost first.
    pub fn frames(&self) -> impl Iterator<Item = &str> {
        crate::read::stack::frames(&self.frames)
    }
}

/// One timerlat activation: a CPU's samples of one activation id paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Activation {
    /// The CPU.
    pub cpu: u32,
    /// Which run of the tracer on that CPU (0 = the first): ids restart at 1 with each.
    pub run: u32,
    /// Activation id.
    pub seq: u64,
    /// The IRQ sample's time and latency.
    pub irq: Option<(u64, u64)>,
    /// The stack saved after the IRQ sample, else after the thread sample (the
    /// timerlat tracer's `print_stack` dumps the IRQ's stack there).
    pub stack: Option<u32>,
    /// The thread sample's time, latency and task.
    pub thread: Option<(u64, u64, i32)>,
    /// The user-ret sample's latency.
    pub user_ret: Option<u64>,
}

impl Activation {
    /// When the timer expired: the IRQ's (else the thread's) time minus its latency.
    pub fn expiry(&self) -> u64 {
        match (self.irq, self.thread) {
            (Some((ts, l)), _) => ts.saturating_sub(l),
            (None, Some((ts, l, _))) => ts.saturating_sub(l),
            _ => 0,
        }
    }
}

impl Rtla {
    /// True when the trace holds nothing of these tracers.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
            && self.noise.is_empty()
            && self.thresholds.is_empty()
            && self.periods.is_empty()
    }

    /// The timerlat activations, by CPU, run and activation id: each CPU's samples paired
    /// by id in time order (the IRQ sample comes first, the thread's and user-ret's after
    /// it). An id lower than the CPU's last one starts a new run (the tracer was started
    /// again and its ids restart at 1), so two runs never pair with each other.
    pub fn activations(&self) -> Vec<Activation> {
        let mut by: rustc_hash::FxHashMap<(u32, u32, u64), Activation> = Default::default();
        let mut last: rustc_hash::FxHashMap<u32, (u32, u64)> = Default::default();
        for s in &self.samples {
            let (run, seq) = last.entry(s.cpu).or_insert((0, s.seq));
            if s.seq < *seq {
                *run += 1;
            }
            *seq = s.seq;
            let run = *run;
            let a = by.entry((s.cpu, run, s.seq)).or_insert(Activation {
                cpu: s.cpu,
                run,
                seq: s.seq,
                irq: None,
                thread: None,
                user_ret: None,
                stack: None,
            });
            match s.ctx {
                LatCtx::Irq => {
                    a.irq = Some((s.ts, s.lat_ns));
                    a.stack = s.stack.or(a.stack);
                }
                LatCtx::Thread => {
                    a.thread = Some((s.ts, s.lat_ns, s.tid));
                    a.stack = a.stack.or(s.stack);
                }
                LatCtx::UserRet => a.user_ret = Some(s.lat_ns),
            }
        }
        let mut v: Vec<Activation> = by.into_values().collect();
        v.sort_by_key(|a| (a.cpu, a.run, a.seq));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activations_pair_by_cpu_and_id() {
        let s = |ts, cpu, seq, ctx, lat| LatSample {
            ts,
            cpu,
            tid: 9,
            seq,
            ctx,
            lat_ns: lat,
            stack: None,
        };
        let r = Rtla {
            samples: vec![
                s(1000, 0, 1, LatCtx::Irq, 100),
                s(1000, 1, 1, LatCtx::Irq, 200),
                s(1500, 0, 1, LatCtx::Thread, 600),
                s(1600, 1, 1, LatCtx::Thread, 800),
            ],
            ..Default::default()
        };
        let a = r.activations();
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].irq, a[0].thread),
            (Some((1000, 100)), Some((1500, 600, 9)))
        );
        assert_eq!(a[0].expiry(), 900);
        assert_eq!(a[1].expiry(), 800);
    }
}
