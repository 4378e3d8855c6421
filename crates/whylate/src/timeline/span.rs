//! Span flag bits, shared by [`super::Spans`] and [`super::Syscalls`].

/// The span began before the trace (or before a loss): its start is when we first saw it.
pub const START_UNKNOWN: u8 = 1;
/// Still open when the trace ended: its end is the last timestamp.
pub const END_UNKNOWN: u8 = 2;
/// Crosses a lost-events window: events inside it may be missing.
pub const UNCERTAIN: u8 = 4;
/// An endpoint was inferred (no sched_switch recorded where one must have happened).
pub const INFERRED: u8 = 8;
/// Softirq run by ksoftirqd.
pub const KSOFTIRQD: u8 = 16;
/// Softirq run in task context (local_bh_enable), neither irq exit nor ksoftirqd.
pub const IN_TASK: u8 = 32;
/// Syscall key is a name symbol, not a number.
pub const NAMED: u8 = 64;
/// Runnable: the wakeup came while the task was still switching out (the waker's
/// try_to_wake_up waited for it to leave the CPU); the wait starts at the switch.
pub const RACED: u8 = 128;
