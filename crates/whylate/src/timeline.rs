//! The timeline: one streaming pass that rebuilds what every CPU and task was doing.
//!
//! Input: time-ordered [`Event`]s. Output: [`Spans`] (run, runnable-wait, sleep, hardirq,
//! softirq, tasklet, work, syscall, hrtimer callback, irqs-off, preempt-off) in columnar
//! vectors, and causal [`Edge`]s (who woke whom from which context, who queued the work a
//! worker ran, which context raised the softirq that ran, which hrtimer woke a task).
//!
//! Memory grows with spans and edges kept, never with events read: a span costs
//! [`Spans::BYTES_PER_SPAN`] bytes, an edge `size_of::<Edge>()`. Per-event work is a few
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

use crate::event::{flags, Event, Interner, Kind, Sym, TaskState};
use rustc_hash::FxHashMap;

/// "No index" for span and edge references.
pub const NONE: u32 = u32::MAX;

/// What a span is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u8)]
pub enum SpanKind {
    /// A task (or the idle task, tid 0) on a CPU. `key`: prio (+ 1000 when unknown).
    Run,
    /// A task runnable but not running. `key`: a [`Cause`]; `aux`: the wakeup edge.
    Runnable,
    /// A task blocked. `key`: the `TaskState` letter bits it slept in.
    Sleep,
    /// A hard interrupt handler. `key`: irq number (`u32::MAX` when the trace has no
    /// irq_handler event for it, e.g. the local timer). `tid`: the interrupted task.
    Hardirq,
    /// A softirq handler run. `key`: vector; `aux`: the raise edge; flags say where it ran.
    Softirq,
    /// A tasklet. `key`: its function.
    Tasklet,
    /// A work item executing. `key`: work function; `aux`: the queue edge; `tid`: worker.
    Work,
    /// A system call. `key`: syscall number, or name symbol with [`span::NAMED`];
    /// `aux`: CPU migrations during the call.
    Syscall,
    /// An hrtimer callback. `key`: function; `aux`: the timer edge.
    TimerCb,
    /// Interrupts disabled. `key`: caller that disabled them; `aux`: caller that enabled.
    IrqsOff,
    /// Preemption disabled. `key`/`aux` as for [`SpanKind::IrqsOff`].
    PreemptOff,
}

/// Why a task was runnable (the `key` of a [`SpanKind::Runnable`] span).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u32)]
pub enum Cause {
    /// Woken (sched_waking / sched_wakeup); `aux` is the wakeup edge.
    Woken = 0,
    /// Preempted: switched out while still runnable.
    Preempted = 1,
    /// A new task (sched_wakeup_new).
    New = 2,
}

impl Cause {
    /// From a span key.
    pub fn from_key(k: u32) -> Cause {
        match k {
            1 => Cause::Preempted,
            2 => Cause::New,
            _ => Cause::Woken,
        }
    }
}

/// Span flag bits.
pub mod span {
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
}

/// Spans in columnar form: index `i` of every vector is span `i`. Spans are pushed when they
/// close, so per CPU they are in order of their end.
#[derive(Debug, Default)]
pub struct Spans {
    /// What each span is.
    pub kind: Vec<SpanKind>,
    /// CPU (`u32::MAX` when unknown).
    pub cpu: Vec<u32>,
    /// Task: the running/waiting task, the worker, the interrupted task.
    pub tid: Vec<i32>,
    /// The task's name at the time.
    pub comm: Vec<Sym>,
    /// Start, ns.
    pub start: Vec<u64>,
    /// End, ns.
    pub end: Vec<u64>,
    /// Kind-specific key (see [`SpanKind`]).
    pub key: Vec<u32>,
    /// Kind-specific reference (see [`SpanKind`]).
    pub aux: Vec<u32>,
    /// [`span`] flag bits.
    pub flags: Vec<u8>,
}

impl Spans {
    /// Memory per span.
    pub const BYTES_PER_SPAN: usize = 1 + 4 + 4 + 4 + 8 + 8 + 4 + 4 + 1;

    /// Number of spans.
    pub fn len(&self) -> usize {
        self.kind.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }

    /// Duration of span `i`.
    pub fn dur(&self, i: u32) -> u64 {
        let i = i as usize;
        self.end[i].saturating_sub(self.start[i])
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        kind: SpanKind,
        cpu: u32,
        tid: i32,
        comm: Sym,
        start: u64,
        end: u64,
        key: u32,
        aux: u32,
        flags: u8,
    ) -> u32 {
        let i = self.kind.len() as u32;
        self.kind.push(kind);
        self.cpu.push(cpu);
        self.tid.push(tid);
        self.comm.push(comm);
        self.start.push(start);
        self.end.push(end.max(start));
        self.key.push(key);
        self.aux.push(aux);
        self.flags.push(flags);
        i
    }
}

/// The context an event happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Ctx {
    /// A task (tid; 0 is idle).
    Task {
        /// Thread id.
        tid: i32,
    },
    /// A hard interrupt handler.
    Hardirq {
        /// Irq number, `u32::MAX` when only the flags said "hardirq".
        irq: u32,
    },
    /// A softirq handler.
    Softirq {
        /// Vector.
        vec: u8,
    },
    /// An hrtimer callback; the timer edge.
    Timer {
        /// Edge index of the timer expiry.
        edge: u32,
    },
    /// Unknown (no state for this CPU yet).
    Unknown,
}

/// What an edge links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// `from` woke `to_tid` at `ts`; `span` is the runnable span that followed.
    Wakeup,
    /// Work queued at `ts` by `from`, executed from `at` by worker `to_tid`; `key` function,
    /// `val` activation time (0: not seen); `span` the work span.
    Work,
    /// Softirq `key` raised at `ts` by `from`, entered at `at`; `span` the softirq span;
    /// `val` the [`span`] flags saying where it ran.
    Softirq,
    /// hrtimer armed at `ts` by `from` (0 when armed before the trace), callback entered
    /// at `at`; `val` requested expiry (softexpires) and `val2` the timer clock at expiry,
    /// both in the timer's clock base; `to_tid` the task the callback woke.
    Timer,
    /// Tasklet scheduled at `ts` (function tracer `__tasklet_schedule`), run from `at`.
    Tasklet,
}

/// A causal link.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Edge {
    /// What it links.
    pub kind: EdgeKind,
    /// When the cause happened.
    pub ts: u64,
    /// When the effect started (wakeup: = `ts`).
    pub at: u64,
    /// CPU of the cause.
    pub from_cpu: u32,
    /// Task current on that CPU at the time.
    pub from_tid: i32,
    /// The cause's context.
    pub from: Ctx,
    /// Task affected.
    pub to_tid: i32,
    /// CPU affected (wakeup target, worker CPU, timer CPU).
    pub to_cpu: u32,
    /// Kind-specific key.
    pub key: u32,
    /// Kind-specific value.
    pub val: u64,
    /// Kind-specific value.
    pub val2: u64,
    /// The span this edge led to, or [`NONE`].
    pub span: u32,
    /// Timer edges: the wakeup edge of the task the callback woke, or [`NONE`] (with
    /// `to_tid` set: the task was still on the CPU and did not wait).
    pub link: u32,
}

/// A window in which a CPU lost events.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LostWindow {
    /// The CPU (`u32::MAX`: unknown, counts for all).
    pub cpu: u32,
    /// Last event before the loss on that CPU (0: nothing before).
    pub from: u64,
    /// The marker's time.
    pub to: u64,
    /// Events lost, when said.
    pub count: Option<u64>,
}

/// Silences shorter than this are not kept. The ones kept at the end are those longer than
/// 1.5 scheduler ticks (the tick period is measured in the trace; 8 ms when it cannot be).
pub const SILENCE_NS: u64 = 2_000_000;

/// A CPU that recorded nothing while a task was on it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Silence {
    /// The CPU.
    pub cpu: u32,
    /// Its last event before.
    pub from: u64,
    /// Its next event.
    pub to: u64,
    /// The task that was on it.
    pub tid: i32,
}

/// A timer lateness the traced code reported itself (trace_printk/marker text with `now`
/// and an expected expiry, as seed 004's test module printed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReportedLate {
    /// Event time.
    pub ts: u64,
    /// CPU.
    pub cpu: u32,
    /// Task current.
    pub tid: i32,
    /// Event name.
    pub name: Sym,
    /// Lateness, ns.
    pub late_ns: u64,
    /// Overruns reported right after (`N overruns`).
    pub overruns: Option<u64>,
}

/// Things the pass noticed that limit what it can say.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Anomalies {
    /// Tasks switched in with no sched_switch (implicit switch-ins).
    pub implicit_switches: u64,
    /// sched_switch whose prev was not the task we thought was running.
    pub switch_mismatch: u64,
    /// Switch-ins of a task we last saw sleeping, with no wakeup in between.
    pub switch_in_without_wakeup: u64,
    /// Exits (irq, softirq, syscall, work, timer) with no matching entry.
    pub unmatched_exits: u64,
    /// Syscall entries whose exit never came (a new entry came first).
    pub syscalls_without_exit: u64,
    /// Lost-event markers.
    pub lost_markers: u64,
    /// Wakeups of a task we believed already runnable: it ran and slept unseen.
    pub rewoken_while_runnable: u64,
    /// Handler frames (irq, softirq, hrtimer callback) dropped because their exit never
    /// came (the event's flags, or the next callback, showed they had ended).
    pub stale_frames: u64,
}

/// The result of the pass.
#[derive(Debug, Default)]
pub struct Timeline {
    /// All spans.
    pub spans: Spans,
    /// All edges.
    pub edges: Vec<Edge>,
    /// Lost-event windows in time order.
    pub lost: Vec<LostWindow>,
    /// Per CPU: indices of run spans, in time order.
    pub runs_by_cpu: Vec<Vec<u32>>,
    /// Per CPU: indices of hardirq and softirq spans, in order of their end.
    pub irqs_by_cpu: Vec<Vec<u32>>,
    /// Irq number → name from irq_handler_entry.
    pub irq_names: FxHashMap<u32, Sym>,
    /// Syscall number → name, learnt where raw and per-syscall events pair up.
    pub syscall_names: FxHashMap<u32, Sym>,
    /// Thread → last known name.
    pub comms: FxHashMap<i32, Sym>,
    /// Thread → priority seen last (sched events).
    pub prios: FxHashMap<i32, i32>,
    /// Self-reported timer lateness.
    pub reported: Vec<ReportedLate>,
    /// Thread → times a fork created it (a pid reused in the trace has several).
    pub forks: FxHashMap<i32, Vec<u64>>,
    /// What limits the analysis.
    pub anomalies: Anomalies,
    /// Events seen per [`KindClass`].
    pub seen: [u64; KindClass::COUNT],
    /// First and last timestamps.
    pub first_ts: Option<u64>,
    /// See `first_ts`.
    pub last_ts: u64,
    /// CPUs seen (highest + 1).
    pub cpus: u32,
    /// Silences: a CPU recorded no event for longer than [`SILENCE_NS`] while a task (not
    /// idle) was on it. With the scheduler tick traced, that means the CPU did not run at
    /// all (a virtual CPU preempted by its host) or events were lost.
    pub silences: Vec<Silence>,
    /// hrtimer expiries of the scheduler tick seen (`tick_*` functions).
    pub ticks: u64,
    /// The scheduler tick period measured in the trace.
    pub tick_ns: Option<u64>,
    /// Contexts named after the fact: `(cpu, from, to, ctx)` where the flags said hardirq
    /// or softirq but the entry preceded the trace, and a later exit named it.
    pub retro: Vec<(u32, u64, u64, Ctx)>,
}

/// Coarse classes of events, to say which measures a trace can feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum KindClass {
    SchedSwitch,
    SchedWaking,
    SchedWakeup,
    IrqHandler,
    SoftirqRaise,
    SoftirqEntry,
    Tasklet,
    WorkQueue,
    WorkExecute,
    RawSyscall,
    Syscall,
    HrtimerStart,
    HrtimerExpire,
    IrqToggle,
    PreemptToggle,
    Function,
    Other,
}

impl KindClass {
    /// Number of classes.
    pub const COUNT: usize = 17;

    /// The class of `k`.
    pub fn of(k: &Kind) -> KindClass {
        use Kind::*;
        match k {
            SchedSwitch { .. } => KindClass::SchedSwitch,
            SchedWaking { .. } => KindClass::SchedWaking,
            SchedWakeup { .. } => KindClass::SchedWakeup,
            IrqEntry { .. } | IrqExit { .. } => KindClass::IrqHandler,
            SoftirqRaise { .. } => KindClass::SoftirqRaise,
            SoftirqEntry { .. } | SoftirqExit { .. } => KindClass::SoftirqEntry,
            TaskletEntry { .. } | TaskletExit { .. } => KindClass::Tasklet,
            WorkQueue { .. } | WorkActivate { .. } => KindClass::WorkQueue,
            WorkStart { .. } | WorkEnd { .. } => KindClass::WorkExecute,
            SysEnter { .. } | SysExit { .. } => KindClass::RawSyscall,
            SyscallEnter { .. } | SyscallExit { .. } => KindClass::Syscall,
            HrtimerStart { .. } => KindClass::HrtimerStart,
            HrtimerExpireEntry { .. } | HrtimerExpireExit { .. } => KindClass::HrtimerExpire,
            IrqDisable { .. } | IrqEnable { .. } => KindClass::IrqToggle,
            PreemptDisable { .. } | PreemptEnable { .. } => KindClass::PreemptToggle,
            Function { .. } | FuncEntry { .. } | FuncExit { .. } => KindClass::Function,
            _ => KindClass::Other,
        }
    }
}

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
const CLOCK_WINDOW_NS: u64 = 20_000_000;
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

impl Timeline {
    /// Events of class `c` seen.
    pub fn saw(&self, c: KindClass) -> u64 {
        self.seen[c as usize]
    }

    /// Names a context the flags could only call "some hardirq/softirq", when an exit
    /// later in the trace said which one.
    pub fn resolve(&self, ctx: Ctx, cpu: u32, ts: u64) -> Ctx {
        let want_hard = matches!(ctx, Ctx::Hardirq { irq: u32::MAX });
        let want_soft = matches!(ctx, Ctx::Softirq { vec: u8::MAX });
        if !want_hard && !want_soft {
            return ctx;
        }
        for &(c, from, to, r) in &self.retro {
            let kind_ok = match r {
                Ctx::Hardirq { .. } => want_hard,
                Ctx::Softirq { .. } => want_soft,
                _ => false,
            };
            if kind_ok && c == cpu && from <= ts && ts <= to {
                return r;
            }
        }
        ctx
    }

    /// Which life of `tid` was current at `ts`: the number of forks that created it
    /// before then (pid reuse gives one thread id several lives).
    pub fn life(&self, tid: i32, ts: u64) -> usize {
        self.forks
            .get(&tid)
            .map_or(0, |f| f.partition_point(|&t| t <= ts))
    }

    /// Best known name of a task.
    pub fn comm(&self, tid: i32) -> Sym {
        self.comms.get(&tid).copied().unwrap_or(Sym::EMPTY)
    }

    /// True when a lost-events window on `cpu` (any CPU when `cpu` is `u32::MAX`)
    /// intersects `[start, end]`.
    pub fn crosses_loss(&self, cpu: u32, start: u64, end: u64) -> bool {
        let first = self.lost.partition_point(|w| w.to < start);
        self.lost[first..]
            .iter()
            .any(|w| w.from <= end && (cpu == u32::MAX || w.cpu == cpu || w.cpu == u32::MAX))
    }

    /// `comm[tid]` as reports print a task (`idle` for tid 0, `[tid]` with no name known).
    pub fn task_name(&self, s: &Interner, tid: i32) -> String {
        if tid == 0 {
            return "idle".into();
        }
        let c = s.get(self.comm(tid));
        if c.is_empty() {
            format!("[{tid}]")
        } else {
            format!("{c}[{tid}]")
        }
    }

    /// A syscall span's name (`read`), from its key and flags.
    pub fn syscall_name(&self, s: &Interner, key: u32, flags: u8) -> String {
        if flags & span::NAMED != 0 {
            return s.get(Sym(key)).to_string();
        }
        match self.syscall_names.get(&key) {
            Some(n) => s.get(*n).to_string(),
            None => format!("NR {key}"),
        }
    }
    /// How many times each irq line's handler ran on `cpu`, most first.
    pub fn hardirq_counts(&self, cpu: u32) -> Vec<(u32, u64)> {
        let sp = &self.spans;
        let mut m: FxHashMap<u32, u64> = FxHashMap::default();
        for &i in self
            .irqs_by_cpu
            .get(cpu as usize)
            .map_or(&[][..], |l| &l[..])
        {
            let i = i as usize;
            if sp.kind[i] == SpanKind::Hardirq && sp.key[i] != u32::MAX {
                *m.entry(sp.key[i]).or_default() += 1;
            }
        }
        let mut v: Vec<(u32, u64)> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Who occupied `cpu` during `[from, to)`: time per running task (idle included as tid
    /// 0), and time in hardirq and softirq handlers, largest first. Each instant counts once,
    /// for the innermost occupant: a softirq run on top of a task (or of idle) is the
    /// softirq's time, not the task's, and a hardirq inside a softirq is the hardirq's.
    pub fn occupants(&self, cpu: u32, from: u64, to: u64) -> Vec<Occupant> {
        let mut acc: FxHashMap<(u8, i64), (u64, Sym)> = FxHashMap::default();
        let s = &self.spans;
        // Clipped spans of one list that overlap the window, in start order.
        let clipped = |list: &[u32]| -> Vec<(u64, u64, usize)> {
            let first = list.partition_point(|&i| s.end[i as usize] <= from);
            let mut past = 0;
            let mut out = Vec::new();
            for &i in &list[first..] {
                let iu = i as usize;
                if s.start[iu] >= to {
                    // Nested irq spans end out of start order: look a little further.
                    past += 1;
                    if past > 8 {
                        break;
                    }
                    continue;
                }
                let (a, b) = (s.start[iu].max(from), s.end[iu].min(to));
                if b > a {
                    out.push((a, b, iu));
                }
            }
            out
        };
        let irqs = self
            .irqs_by_cpu
            .get(cpu as usize)
            .map(|l| clipped(l))
            .unwrap_or_default();
        let hard = merge(irqs.iter().filter(|x| s.kind[x.2] == SpanKind::Hardirq));
        let all = merge(irqs.iter());
        let mut add = |k: u8, id: i64, name: Sym, ns: u64| {
            if ns == 0 {
                return;
            }
            let e = acc.entry((k, id)).or_insert((0, name));
            e.0 += ns;
            if e.1 == Sym::EMPTY {
                e.1 = name;
            }
        };
        for &(a, b, iu) in &irqs {
            if s.kind[iu] == SpanKind::Hardirq {
                let irq = s.key[iu];
                let name = self.irq_names.get(&irq).copied().unwrap_or_default();
                add(1, irq as i64, name, b - a);
            } else {
                add(
                    2,
                    s.key[iu] as i64,
                    Sym::EMPTY,
                    b - a - covered(&hard, a, b),
                );
            }
        }
        if let Some(l) = self.runs_by_cpu.get(cpu as usize) {
            for (a, b, iu) in clipped(l) {
                add(0, s.tid[iu] as i64, s.comm[iu], b - a - covered(&all, a, b));
            }
        }
        let mut v: Vec<Occupant> = acc
            .into_iter()
            .map(|((k, id), (ns, name))| Occupant {
                what: match k {
                    0 => OccupantKind::Task,
                    1 => OccupantKind::Hardirq,
                    _ => OccupantKind::Softirq,
                },
                id,
                name,
                ns,
            })
            .collect();
        v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.id.cmp(&b.id)));
        v
    }
}

/// What occupied a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OccupantKind {
    /// A task (id = tid).
    Task,
    /// An interrupt handler (id = irq).
    Hardirq,
    /// A softirq (id = vector).
    Softirq,
}

/// The union of clipped intervals, sorted and disjoint.
fn merge<'a>(iv: impl Iterator<Item = &'a (u64, u64, usize)>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = iv.map(|&(a, b, _)| (a, b)).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// How much of `[a, b)` the disjoint sorted intervals cover.
fn covered(u: &[(u64, u64)], a: u64, b: u64) -> u64 {
    let first = u.partition_point(|x| x.1 <= a);
    u[first..]
        .iter()
        .take_while(|x| x.0 < b)
        .map(|x| x.1.min(b).saturating_sub(x.0.max(a)))
        .sum()
}

/// One entry of [`Timeline::occupants`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Occupant {
    /// Task, hardirq or softirq.
    pub what: OccupantKind,
    /// tid, irq or vector.
    pub id: i64,
    /// Comm or irq name.
    pub name: Sym,
    /// Time, ns.
    pub ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Unknown,
    Running,
    Runnable,
    Sleeping,
    Dead,
}

#[derive(Clone, Copy, Debug)]
struct Sys {
    key: u32,
    named: bool,
    raw: bool,
    start: u64,
    migrations: u32,
}

#[derive(Clone, Copy, Debug)]
struct Work {
    start: u64,
    work: u64,
    function: Sym,
    edge: u32,
    cpu: u32,
}

#[derive(Clone, Debug)]
struct Task {
    state: St,
    since: u64,
    /// Span flags carried into the span that closes the current state.
    sflags: u8,
    cause: Cause,
    edge: u32,
    sleep_bits: u16,
    cpu: u32,
    sys: Option<Sys>,
    /// Time and type (true = raw) of the last syscall exit, to drop the twin exit event.
    last_sys_exit: (u64, bool),
    work: Option<Work>,
    /// The current wait began with a sched_waking (not a sched_wakeup).
    by_waking: bool,
    /// A sched_waking seen while the task still ran: (ts, ctx, waker cpu, waker tid,
    /// target cpu). If its next switch-out is to sleep, that wakeup raced the switch.
    raced: Option<(u64, Ctx, u32, i32, u32)>,
}

impl Task {
    fn new(cpu: u32) -> Task {
        Task {
            state: St::Unknown,
            since: 0,
            sflags: 0,
            cause: Cause::Woken,
            edge: NONE,
            sleep_bits: 0,
            cpu,
            sys: None,
            last_sys_exit: (u64::MAX, false),
            work: None,
            by_waking: false,
            raced: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum FrameKind {
    Irq(u32),
    Softirq(u8, u32, u8),
    Timer(u32, Sym),
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    kind: FrameKind,
    start: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BhOrigin {
    IrqExit,
    Task,
}

#[derive(Clone, Debug)]
struct CpuState {
    /// Running task, -1 when unknown.
    curr: i32,
    curr_since: u64,
    curr_comm: Sym,
    curr_flags: u8,
    frames: Vec<Frame>,
    pending: [Option<(u64, Ctx, i32)>; 10],
    irqsoff: Option<(u64, Sym)>,
    preemptoff: Option<(u64, Sym)>,
    tasklet: Option<(u64, Sym)>,
    tasklet_sched: Option<(u64, Ctx, i32)>,
    last_ts: u64,
    seen: bool,
    origin: BhOrigin,
    /// Since when the flags say hardirq (softirq) context but the entry is not in the
    /// trace; an exit without entry then names the context retroactively.
    anon_hard: Option<u64>,
    anon_soft: Option<u64>,
}

impl CpuState {
    fn new() -> CpuState {
        CpuState {
            curr: -1,
            curr_since: 0,
            curr_comm: Sym::EMPTY,
            curr_flags: 0,
            frames: Vec::new(),
            pending: [None; 10],
            irqsoff: None,
            preemptoff: None,
            tasklet: None,
            tasklet_sched: None,
            last_ts: 0,
            seen: false,
            origin: BhOrigin::Task,
            anon_hard: None,
            anon_soft: None,
        }
    }

    fn ctx(&self, e_flags: u16) -> Ctx {
        match self.frames.last() {
            Some(f) => match f.kind {
                FrameKind::Irq(irq) => Ctx::Hardirq { irq },
                FrameKind::Softirq(vec, ..) => Ctx::Softirq { vec },
                FrameKind::Timer(edge, _) => Ctx::Timer { edge },
            },
            None if e_flags & flags::KNOWN != 0 && e_flags & flags::HARDIRQ != 0 => {
                Ctx::Hardirq { irq: u32::MAX }
            }
            None if e_flags & flags::KNOWN != 0 && e_flags & flags::SOFTIRQ != 0 => {
                Ctx::Softirq { vec: u8::MAX }
            }
            None if self.curr >= 0 => Ctx::Task { tid: self.curr },
            None => Ctx::Unknown,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Armed {
    ts: u64,
    cpu: u32,
    tid: i32,
    ctx: Ctx,
    function: Sym,
    soft: u64,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    ts: u64,
    cpu: u32,
    tid: i32,
    ctx: Ctx,
    function: Sym,
    activated: u64,
}

/// CPUs above this are ignored (a corrupt line must not allocate gigabytes).
const MAX_CPUS: u32 = 1 << 14;

/// Builds a [`Timeline`] from events pushed in time order.
pub struct Builder {
    tl: Timeline,
    cpus: Vec<CpuState>,
    tasks: FxHashMap<i32, Task>,
    armed: FxHashMap<u64, Armed>,
    queued: FxHashMap<u64, Queued>,
    ksoftirqd: FxHashMap<Sym, bool>,
    overrun_name: Sym,
    last_reported: Option<usize>,
    last_comm: (i32, Sym),
    tick_last: Vec<u64>,
    tick_gaps: Vec<u64>,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// An empty builder.
    pub fn new() -> Builder {
        Builder {
            tl: Timeline::default(),
            cpus: Vec::new(),
            tasks: FxHashMap::default(),
            armed: FxHashMap::default(),
            queued: FxHashMap::default(),
            ksoftirqd: FxHashMap::default(),
            overrun_name: Sym::EMPTY,
            last_reported: None,
            last_comm: (-1, Sym::EMPTY),
            tick_last: Vec::new(),
            tick_gaps: Vec::new(),
        }
    }

    fn cpu(&mut self, cpu: u32) -> Option<usize> {
        if cpu >= MAX_CPUS {
            return None;
        }
        let c = cpu as usize;
        if c >= self.cpus.len() {
            self.cpus.resize_with(c + 1, CpuState::new);
            self.tl.runs_by_cpu.resize_with(c + 1, Vec::new);
            self.tick_last.resize(c + 1, 0);
            self.tl.irqs_by_cpu.resize_with(c + 1, Vec::new);
        }
        Some(c)
    }

    fn is_ksoftirqd(&mut self, comm: Sym, strings: &Interner) -> bool {
        *self
            .ksoftirqd
            .entry(comm)
            .or_insert_with(|| strings.get(comm).starts_with("ksoftirqd"))
    }

    /// Feeds one event. Events must come in time order (the readers' [`crate::read::Sorted`]
    /// makes sure of it); a late event is still handled, with its timestamp clamped.
    pub fn push(&mut self, e: &Event, strings: &Interner) {
        let tl = &mut self.tl;
        tl.seen[KindClass::of(&e.kind) as usize] += 1;
        if tl.first_ts.is_none() {
            tl.first_ts = Some(e.ts);
        }
        let ts = e.ts.max(tl.last_ts);
        tl.last_ts = ts;
        // Consecutive events mostly come from the same thread: one compare, no lookup.
        if e.tid > 0 && (e.tid, e.comm) != self.last_comm {
            self.last_comm = (e.tid, e.comm);
            // `<...>` never replaces a real name.
            if e.comm != Sym::EMPTY && !strings.get(e.comm).starts_with('<') {
                tl.comms.insert(e.tid, e.comm);
            }
        }
        let Some(c) = self.cpu(e.cpu) else {
            self.push_cpuless(e, ts, strings);
            return;
        };
        if let Kind::Lost { count } = e.kind {
            self.lost(c, ts, count);
            return;
        }
        {
            // Before anything changes `curr`: who was on the CPU during the silence.
            let cs = &self.cpus[c];
            if cs.seen && cs.curr > 0 && ts.saturating_sub(cs.last_ts) > SILENCE_NS {
                self.tl.silences.push(Silence {
                    cpu: c as u32,
                    from: cs.last_ts,
                    to: ts,
                    tid: cs.curr,
                });
            }
        }
        if !matches!(e.kind, Kind::SchedSwitch { .. }) && e.tid >= 0 && self.cpus[c].curr != e.tid {
            self.implicit_switch(c, e.tid, e.comm, ts);
        }
        let cpu = c as u32;
        if e.flags & flags::KNOWN != 0 && !self.cpus[c].frames.is_empty() {
            // The flags say which context the event is in: frames whose exit the trace
            // lacks (tracing began inside a handler, an event not enabled yet) must go, or
            // every later event would be blamed on a handler long finished.
            let hard = e.flags & (flags::HARDIRQ | flags::NMI) != 0;
            let soft = e.flags & flags::SOFTIRQ != 0;
            let cs = &mut self.cpus[c];
            let before = cs.frames.len();
            while let Some(top) = cs.frames.last() {
                let stale = match top.kind {
                    FrameKind::Irq(_) => !hard,
                    FrameKind::Timer(..) => !hard && !soft,
                    FrameKind::Softirq(..) => !hard && !soft,
                };
                if !stale {
                    break;
                }
                cs.frames.pop();
            }
            self.tl.anomalies.stale_frames += (before - self.cpus[c].frames.len()) as u64;
        }
        if let Kind::HrtimerExpireEntry { .. } = e.kind {
            // Callbacks of one CPU run one after another: an open one missed its exit.
            if let Some(Frame {
                kind: FrameKind::Timer(..),
                ..
            }) = self.cpus[c].frames.last()
            {
                self.cpus[c].frames.pop();
                self.tl.anomalies.stale_frames += 1;
            }
        }
        let ctx = self.cpus[c].ctx(e.flags);
        let curr = self.cpus[c].curr;
        match &e.kind {
            Kind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } => {
                self.tl.prios.insert(*prev_pid, *prev_prio);
                self.tl.prios.insert(*next_pid, *next_prio);
                self.switch(
                    c,
                    ts,
                    *prev_pid,
                    *prev_comm,
                    *prev_state,
                    *next_pid,
                    *next_comm,
                    strings,
                );
            }
            Kind::SchedWaking {
                comm,
                pid,
                prio,
                target_cpu,
            } => {
                self.tl.prios.insert(*pid, *prio);
                self.learn(*pid, *comm, strings);
                self.wake(c, ts, ctx, *pid, *target_cpu, Cause::Woken, true);
            }
            Kind::SchedWakeup {
                comm,
                pid,
                prio,
                target_cpu,
                new,
            } => {
                self.tl.prios.insert(*pid, *prio);
                self.learn(*pid, *comm, strings);
                let cause = if *new { Cause::New } else { Cause::Woken };
                self.wake(c, ts, ctx, *pid, *target_cpu, cause, false);
            }
            Kind::SchedFork {
                child_pid,
                child_comm,
                ..
            } => {
                // pid reuse: a fork names a fresh task, whatever ran under that pid before.
                self.close_task(*child_pid, ts);
                self.tl.forks.entry(*child_pid).or_default().push(ts);
                self.tasks.insert(*child_pid, Task::new(cpu));
                self.learn(*child_pid, *child_comm, strings);
            }
            Kind::SchedExit { pid, .. } => {
                if let Some(t) = self.tasks.get_mut(pid) {
                    t.sys = None;
                    t.work = None;
                }
            }
            Kind::SchedExec { pid, .. } if e.comm != Sym::EMPTY => {
                self.tl.comms.insert(*pid, e.comm);
            }
            Kind::IrqEntry { irq, name } => {
                let irq = *irq as u32;
                if *name != Sym::EMPTY {
                    self.tl.irq_names.insert(irq, *name);
                }
                self.cpus[c].frames.push(Frame {
                    kind: FrameKind::Irq(irq),
                    start: ts,
                });
            }
            Kind::IrqExit { irq, .. } => {
                let irq = *irq as u32;
                let cs = &mut self.cpus[c];
                cs.origin = BhOrigin::IrqExit;
                match pop_frame(cs, |k| matches!(k, FrameKind::Irq(i) if i == irq)) {
                    Some(f) => {
                        let fl = self.loss_flag(cpu, f.start, ts);
                        let comm = self.cpus[c].curr_comm;
                        let i = self.tl.spans.push(
                            SpanKind::Hardirq,
                            cpu,
                            curr,
                            comm,
                            f.start,
                            ts,
                            irq,
                            NONE,
                            fl,
                        );
                        self.tl.irqs_by_cpu[c].push(i);
                    }
                    None => {
                        self.tl.anomalies.unmatched_exits += 1;
                        if let Some(a) = self.cpus[c].anon_hard.take() {
                            self.tl.retro.push((cpu, a, ts, Ctx::Hardirq { irq }));
                        }
                    }
                }
            }
            Kind::SoftirqRaise { vec } => {
                let v = *vec as usize;
                if v < 10 {
                    let p = &mut self.cpus[c].pending[v];
                    if p.is_none() {
                        *p = Some((ts, ctx, curr));
                    }
                }
            }
            Kind::SoftirqEntry { vec } => {
                let v = *vec;
                let comm = self.cpus[c].curr_comm;
                let origin = if self.cpus[c].curr > 0 && self.is_ksoftirqd(comm, strings) {
                    span::KSOFTIRQD
                } else if matches!(ctx, Ctx::Hardirq { .. })
                    || self.cpus[c].origin == BhOrigin::IrqExit
                {
                    0
                } else {
                    span::IN_TASK
                };
                let raised = if (v as usize) < 10 {
                    self.cpus[c].pending[v as usize].take()
                } else {
                    None
                };
                let edge = match raised {
                    Some((rts, rctx, rtid)) => self.edge(Edge {
                        kind: EdgeKind::Softirq,
                        ts: rts,
                        at: ts,
                        from_cpu: cpu,
                        from_tid: rtid,
                        from: rctx,
                        to_tid: curr,
                        to_cpu: cpu,
                        key: v as u32,
                        val: origin as u64,
                        val2: 0,
                        span: NONE,
                        link: NONE,
                    }),
                    None => NONE,
                };
                self.cpus[c].frames.push(Frame {
                    kind: FrameKind::Softirq(v, edge, origin),
                    start: ts,
                });
            }
            Kind::SoftirqExit { vec } => {
                let v = *vec;
                let cs = &mut self.cpus[c];
                let found =
                    match pop_frame(cs, |k| matches!(k, FrameKind::Softirq(x, ..) if x == v)) {
                        Some(Frame {
                            kind: FrameKind::Softirq(_, edge, origin),
                            start,
                        }) => Some((start, edge, self.loss_flag(cpu, start, ts) | origin)),
                        _ => {
                            self.tl.anomalies.unmatched_exits += 1;
                            // The flags said softirq since `a`: that time was this vector's, not
                            // the task's it ran on (a dump that starts mid-softirq).
                            self.cpus[c].anon_soft.take().map(|a| {
                                self.tl.retro.push((cpu, a, ts, Ctx::Softirq { vec: v }));
                                (a, NONE, span::START_UNKNOWN | span::INFERRED)
                            })
                        }
                    };
                if let Some((start, edge, fl)) = found {
                    let comm = self.cpus[c].curr_comm;
                    let i = self.tl.spans.push(
                        SpanKind::Softirq,
                        cpu,
                        curr,
                        comm,
                        start,
                        ts,
                        v as u32,
                        edge,
                        fl,
                    );
                    self.tl.irqs_by_cpu[c].push(i);
                    if edge != NONE {
                        self.tl.edges[edge as usize].span = i;
                    }
                }
            }
            Kind::TaskletEntry { func } => {
                self.cpus[c].tasklet = Some((ts, *func));
                self.tasklet_run(c, ts);
            }
            Kind::TaskletExit { func } => {
                if let Some((start, f)) = self.cpus[c].tasklet.take() {
                    let f = if f == Sym::EMPTY { *func } else { f };
                    let fl = self.loss_flag(cpu, start, ts);
                    let comm = self.cpus[c].curr_comm;
                    self.tl.spans.push(
                        SpanKind::Tasklet,
                        cpu,
                        curr,
                        comm,
                        start,
                        ts,
                        f.0,
                        NONE,
                        fl,
                    );
                } else {
                    self.tl.anomalies.unmatched_exits += 1;
                }
            }
            Kind::Function { func, .. } => {
                let name = strings.get(*func);
                if matches!(
                    name,
                    "__tasklet_schedule"
                        | "tasklet_schedule"
                        | "__tasklet_schedule_common"
                        | "__tasklet_hi_schedule"
                ) {
                    if self.cpus[c].tasklet_sched.is_none() {
                        self.cpus[c].tasklet_sched = Some((ts, ctx, curr));
                    }
                } else if matches!(name, "tasklet_action" | "tasklet_action_common") {
                    self.tasklet_run(c, ts);
                }
            }
            Kind::WorkQueue { work, function, .. } => {
                self.queued.insert(
                    *work,
                    Queued {
                        ts,
                        cpu,
                        tid: curr,
                        ctx,
                        function: *function,
                        activated: 0,
                    },
                );
            }
            Kind::WorkActivate { work, .. } => {
                if let Some(q) = self.queued.get_mut(work) {
                    q.activated = ts;
                }
            }
            Kind::WorkStart { work, function } => {
                let edge = match self.queued.remove(work) {
                    Some(q) => self.edge(Edge {
                        kind: EdgeKind::Work,
                        ts: q.ts,
                        at: ts,
                        from_cpu: q.cpu,
                        from_tid: q.tid,
                        from: q.ctx,
                        to_tid: e.tid,
                        to_cpu: cpu,
                        key: pick(*function, q.function).0,
                        val: q.activated,
                        val2: 0,
                        span: NONE,
                        link: NONE,
                    }),
                    None => NONE,
                };
                let t = self.tasks.entry(e.tid).or_insert_with(|| Task::new(cpu));
                t.work = Some(Work {
                    start: ts,
                    work: *work,
                    function: *function,
                    edge,
                    cpu,
                });
            }
            Kind::WorkEnd { work, function } => {
                let w = self.tasks.get_mut(&e.tid).and_then(|t| t.work.take());
                match w {
                    Some(w) if w.work == *work => {
                        let func = pick(w.function, *function);
                        let func = if func == Sym::EMPTY && w.edge != NONE {
                            Sym(self.tl.edges[w.edge as usize].key)
                        } else {
                            func
                        };
                        let fl = self.loss_flag(w.cpu, w.start, ts);
                        let i = self.tl.spans.push(
                            SpanKind::Work,
                            cpu,
                            e.tid,
                            e.comm,
                            w.start,
                            ts,
                            func.0,
                            w.edge,
                            fl,
                        );
                        if w.edge != NONE {
                            self.tl.edges[w.edge as usize].span = i;
                        }
                    }
                    _ => self.tl.anomalies.unmatched_exits += 1,
                }
            }
            Kind::SysEnter { nr, .. } => self.sys_enter(e.tid, cpu, ts, *nr as u32, false),
            Kind::SyscallEnter { name, .. } => self.sys_enter(e.tid, cpu, ts, name.0, true),
            Kind::SysExit { .. } => self.sys_exit(e.tid, e.comm, cpu, ts, false),
            Kind::SyscallExit { .. } => self.sys_exit(e.tid, e.comm, cpu, ts, true),
            Kind::HrtimerStart {
                timer,
                function,
                expires_ns,
                softexpires_ns,
            } => {
                let soft = if *softexpires_ns == 0 {
                    *expires_ns
                } else {
                    *softexpires_ns
                };
                self.armed.insert(
                    *timer,
                    Armed {
                        ts,
                        cpu,
                        tid: curr,
                        ctx,
                        function: *function,
                        soft,
                    },
                );
            }
            // The kernel traces hrtimer_cancel also when it dequeues a timer to run it,
            // right before hrtimer_expire_entry; a real cancel is always followed by a
            // new hrtimer_start before any expiry. So a cancel changes nothing here.
            Kind::HrtimerCancel { .. } => {}
            Kind::HrtimerExpireEntry {
                timer,
                function,
                now_ns,
            } => {
                if strings.get(*function).starts_with("tick_") {
                    self.tl.ticks += 1;
                    // Tick to tick on one CPU, for the period (a busy CPU never skips one).
                    let last = &mut self.tick_last[c];
                    if *last != 0 && self.tick_gaps.len() < 4096 {
                        self.tick_gaps.push(ts - *last);
                    }
                    *last = ts;
                }
                let a = self.armed.remove(timer);
                let function = pick(*function, a.map_or(Sym::EMPTY, |a| a.function));
                let edge = self.edge(Edge {
                    kind: EdgeKind::Timer,
                    ts: a.map_or(0, |a| a.ts),
                    at: ts,
                    from_cpu: a.map_or(u32::MAX, |a| a.cpu),
                    from_tid: a.map_or(-1, |a| a.tid),
                    from: a.map_or(Ctx::Unknown, |a| a.ctx),
                    to_tid: -1,
                    to_cpu: cpu,
                    key: function.0,
                    val: a.map_or(u64::MAX, |a| a.soft),
                    val2: now_ns.unwrap_or(u64::MAX),
                    span: NONE,
                    link: NONE,
                });
                self.cpus[c].frames.push(Frame {
                    kind: FrameKind::Timer(edge, function),
                    start: ts,
                });
            }
            Kind::HrtimerExpireExit { .. } => {
                let cs = &mut self.cpus[c];
                match pop_frame(cs, |k| matches!(k, FrameKind::Timer(..))) {
                    Some(Frame {
                        kind: FrameKind::Timer(edge, function),
                        start,
                    }) => {
                        let fl = self.loss_flag(cpu, start, ts);
                        let comm = self.cpus[c].curr_comm;
                        let i = self.tl.spans.push(
                            SpanKind::TimerCb,
                            cpu,
                            curr,
                            comm,
                            start,
                            ts,
                            function.0,
                            edge,
                            fl,
                        );
                        self.tl.edges[edge as usize].span = i;
                    }
                    _ => self.tl.anomalies.unmatched_exits += 1,
                }
            }
            Kind::IrqDisable { caller, .. } => {
                self.cpus[c].irqsoff.get_or_insert((ts, *caller));
            }
            Kind::IrqEnable { caller, .. } => {
                let open = self.cpus[c].irqsoff.take();
                self.close_off(c, SpanKind::IrqsOff, open, ts, *caller);
            }
            Kind::PreemptDisable { caller, .. } => {
                self.cpus[c].preemptoff.get_or_insert((ts, *caller));
            }
            Kind::PreemptEnable { caller, .. } => {
                let open = self.cpus[c].preemptoff.take();
                self.close_off(c, SpanKind::PreemptOff, open, ts, *caller);
            }
            Kind::Other { name, fields } => self.reported(*name, fields, ts, cpu, curr),
            Kind::Print { name, msg } => self.reported(*name, msg, ts, cpu, curr),
            _ => {}
        }
        let cs = &mut self.cpus[c];
        cs.last_ts = ts;
        cs.seen = true;
        // Where a softirq entered next would have been raised from: irq exit when the
        // last thing on this CPU was hardirq work, task context (bh enable) otherwise.
        if !matches!(
            e.kind,
            Kind::SoftirqEntry { .. } | Kind::SoftirqExit { .. } | Kind::IrqExit { .. }
        ) {
            let hard = matches!(
                cs.frames.last(),
                Some(Frame {
                    kind: FrameKind::Irq(_),
                    ..
                })
            ) || (e.flags & flags::KNOWN != 0 && e.flags & flags::HARDIRQ != 0);
            let soft = cs
                .frames
                .iter()
                .any(|f| matches!(f.kind, FrameKind::Softirq(..)));
            if hard {
                cs.origin = BhOrigin::IrqExit;
            } else if !soft {
                cs.origin = BhOrigin::Task;
            }
        }
        if e.flags & flags::KNOWN != 0 {
            let f = e.flags;
            let irq_frame = cs
                .frames
                .iter()
                .any(|f| matches!(f.kind, FrameKind::Irq(_)));
            let soft_frame = cs
                .frames
                .iter()
                .any(|f| matches!(f.kind, FrameKind::Softirq(..)));
            if f & flags::HARDIRQ != 0 && !irq_frame {
                cs.anon_hard.get_or_insert(ts);
            } else if f & flags::HARDIRQ == 0 {
                cs.anon_hard = None;
            }
            if f & flags::SOFTIRQ != 0 && !soft_frame {
                cs.anon_soft.get_or_insert(ts);
            } else if f & (flags::SOFTIRQ | flags::HARDIRQ) == 0 || soft_frame {
                cs.anon_soft = None;
            }
        }
    }

    /// Ends an irqs-off or preempt-off section opened by `open` (start, disabling caller).
    fn close_off(&mut self, c: usize, kind: SpanKind, open: Option<(u64, Sym)>, ts: u64, by: Sym) {
        if let Some((start, caller)) = open {
            let cpu = c as u32;
            let fl = self.loss_flag(cpu, start, ts);
            let (curr, comm) = (self.cpus[c].curr, self.cpus[c].curr_comm);
            self.tl
                .spans
                .push(kind, cpu, curr, comm, start, ts, caller.0, by.0, fl);
        }
    }

    fn push_cpuless(&mut self, e: &Event, ts: u64, _strings: &Interner) {
        // Formats without a CPU column (some function_graph dumps) can still feed
        // self-reported lateness; nothing per-CPU can be rebuilt from them.
        match &e.kind {
            Kind::Other { name, fields } => self.reported(*name, fields, ts, u32::MAX, e.tid),
            Kind::Print { name, msg } => self.reported(*name, msg, ts, u32::MAX, e.tid),
            _ => {}
        }
    }

    fn learn(&mut self, pid: i32, comm: Sym, strings: &Interner) {
        if pid > 0 && comm != Sym::EMPTY && !strings.get(comm).starts_with('<') {
            self.tl.comms.insert(pid, comm);
        }
    }

    fn edge(&mut self, e: Edge) -> u32 {
        self.tl.edges.push(e);
        (self.tl.edges.len() - 1) as u32
    }

    fn loss_flag(&self, cpu: u32, start: u64, end: u64) -> u8 {
        if !self.tl.lost.is_empty() && self.tl.crosses_loss(cpu, start, end) {
            span::UNCERTAIN
        } else {
            0
        }
    }

    fn lost(&mut self, c: usize, ts: u64, count: Option<u64>) {
        let cpu = c as u32;
        self.tl.anomalies.lost_markers += 1;
        let from = if self.cpus[c].seen {
            self.cpus[c].last_ts
        } else {
            0
        };
        self.tl.lost.push(LostWindow {
            cpu,
            from,
            to: ts,
            count,
        });
        // Forget what this CPU was doing: the switches and exits we missed would make
        // every span we closed from here wrong.
        let cs = &mut self.cpus[c];
        cs.frames.clear();
        cs.pending = [None; 10];
        cs.irqsoff = None;
        cs.preemptoff = None;
        cs.tasklet = None;
        cs.tasklet_sched = None;
        let curr = cs.curr;
        if curr >= 0 {
            let (since, comm, fl, last) = (cs.curr_since, cs.curr_comm, cs.curr_flags, from);
            cs.curr = -1;
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                curr,
                comm,
                since,
                last.max(since),
                prio_key(&self.tl, curr),
                NONE,
                fl | span::UNCERTAIN,
            );
            self.tl.runs_by_cpu[c].push(i);
            if curr > 0 {
                if let Some(t) = self.tasks.get_mut(&curr) {
                    t.state = St::Unknown;
                }
            }
        }
        self.cpus[c].last_ts = ts;
    }

    /// An event shows `tid` running on CPU `c` although no switch to it was seen.
    fn implicit_switch(&mut self, c: usize, tid: i32, comm: Sym, ts: u64) {
        let cpu = c as u32;
        let cs = &mut self.cpus[c];
        let old = cs.curr;
        let first = !cs.seen && old < 0;
        if old >= 0 {
            // The old task left at some point after its last event: end its run there.
            let end = cs.last_ts.max(cs.curr_since);
            let (since, ocomm, fl) = (cs.curr_since, cs.curr_comm, cs.curr_flags);
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                old,
                ocomm,
                since,
                end,
                prio_key(&self.tl, old),
                NONE,
                fl | span::INFERRED,
            );
            self.tl.runs_by_cpu[c].push(i);
            if old > 0 {
                if let Some(t) = self.tasks.get_mut(&old) {
                    if t.state == St::Running {
                        t.state = St::Unknown;
                    }
                }
            }
            self.tl.anomalies.implicit_switches += 1;
        }
        let cs = &mut self.cpus[c];
        cs.curr = tid;
        cs.curr_since = ts;
        cs.curr_comm = comm;
        cs.curr_flags = if first || old < 0 {
            span::START_UNKNOWN
        } else {
            span::INFERRED
        };
        if tid > 0 {
            self.run_task(tid, cpu, ts, true);
        }
    }

    /// `tid` starts running on `cpu` at `ts`: close its runnable/sleep state.
    fn run_task(&mut self, tid: i32, cpu: u32, ts: u64, inferred: bool) {
        let t = self.tasks.entry(tid).or_insert_with(|| Task::new(cpu));
        let (state, since, sflags, cause, edge, bits, prev_cpu) = (
            t.state,
            t.since,
            t.sflags,
            t.cause,
            t.edge,
            t.sleep_bits,
            t.cpu,
        );
        t.state = St::Running;
        t.since = ts;
        t.sflags = 0;
        t.edge = NONE;
        t.cpu = cpu;
        t.raced = None;
        if prev_cpu != cpu && prev_cpu != u32::MAX {
            if let Some(s) = t.sys.as_mut() {
                s.migrations += 1;
            }
        }
        let comm = self.tl.comm(tid);
        let inf = if inferred { span::INFERRED } else { 0 };
        match state {
            St::Runnable => {
                let fl = sflags | inf | self.loss_flag(u32::MAX, since, ts);
                let i = self.tl.spans.push(
                    SpanKind::Runnable,
                    cpu,
                    tid,
                    comm,
                    since,
                    ts,
                    cause as u32,
                    edge,
                    fl,
                );
                if edge != NONE {
                    self.tl.edges[edge as usize].span = i;
                }
            }
            St::Sleeping => {
                // Switched in with no wakeup seen: the wakeup was not traced or was lost.
                // The sleep ended somewhere before `ts`; the wait is unknown.
                self.tl.anomalies.switch_in_without_wakeup += 1;
                let fl = sflags | span::INFERRED | self.loss_flag(u32::MAX, since, ts);
                self.tl.spans.push(
                    SpanKind::Sleep,
                    cpu,
                    tid,
                    comm,
                    since,
                    ts,
                    bits as u32,
                    NONE,
                    fl,
                );
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn switch(
        &mut self,
        c: usize,
        ts: u64,
        prev: i32,
        prev_comm: Sym,
        prev_state: TaskState,
        next: i32,
        next_comm: Sym,
        strings: &Interner,
    ) {
        let cpu = c as u32;
        self.learn(prev, prev_comm, strings);
        self.learn(next, next_comm, strings);
        let cs = &mut self.cpus[c];
        let (curr, since, cflags) = (cs.curr, cs.curr_since, cs.curr_flags);
        if curr >= 0 && curr != prev {
            // We had someone else running: their switch out is missing.
            self.tl.anomalies.switch_mismatch += 1;
            let end = cs.last_ts.max(since);
            let ccomm = cs.curr_comm;
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                curr,
                ccomm,
                since,
                end,
                prio_key(&self.tl, curr),
                NONE,
                cflags | span::INFERRED,
            );
            self.tl.runs_by_cpu[c].push(i);
            if let Some(t) = self.tasks.get_mut(&curr) {
                if t.state == St::Running {
                    t.state = St::Unknown;
                }
            }
        }
        // prev's run.
        let (pstart, pflags) = if curr == prev {
            (since, cflags)
        } else if curr < 0 {
            // First sight of this CPU: prev ran since before the trace.
            (ts, span::START_UNKNOWN)
        } else {
            // prev's switch-in was not traced: when it started is unknown.
            (ts, span::START_UNKNOWN | span::INFERRED)
        };
        {
            let fl = pflags | self.loss_flag(cpu, pstart, ts);
            let comm = if prev == 0 {
                prev_comm
            } else {
                self.tl.comm(prev)
            };
            let comm = if comm == Sym::EMPTY { prev_comm } else { comm };
            let i = self.tl.spans.push(
                SpanKind::Run,
                cpu,
                prev,
                comm,
                pstart,
                ts,
                prio_key(&self.tl, prev),
                NONE,
                fl,
            );
            self.tl.runs_by_cpu[c].push(i);
        }
        if prev > 0 {
            let t = self.tasks.entry(prev).or_insert_with(|| Task::new(cpu));
            t.cpu = cpu;
            t.since = ts;
            t.sflags = 0;
            t.edge = NONE;
            let dead = matches!(prev_state, TaskState::Letters { bits, .. } if bits & 0x30 != 0);
            if dead {
                t.state = St::Dead;
            } else if prev_state.is_runnable() {
                t.state = St::Runnable;
                t.cause = Cause::Preempted;
            } else {
                t.state = St::Sleeping;
                t.sleep_bits = match prev_state {
                    TaskState::Letters { bits, .. } => bits,
                    _ => 0,
                };
            }
            let raced = t.raced.take();
            if dead {
                self.tasks.remove(&prev);
            } else if let (Some((wts, wctx, wcpu, wtid, target)), St::Sleeping) = (raced, t.state) {
                // Woken while it was still switching out: runnable from the switch on.
                let comm = self.tl.comm(prev);
                let edge = self.edge(Edge {
                    kind: EdgeKind::Wakeup,
                    ts: wts,
                    at: wts,
                    from_cpu: wcpu,
                    from_tid: wtid,
                    from: wctx,
                    to_tid: prev,
                    to_cpu: target,
                    key: comm.0,
                    val: 0,
                    val2: 0,
                    span: NONE,
                    link: NONE,
                });
                let t = self.tasks.get_mut(&prev).expect("present");
                t.state = St::Runnable;
                t.cause = Cause::Woken;
                t.edge = edge;
                t.sflags = span::RACED;
                t.by_waking = true;
            }
        }
        let cs = &mut self.cpus[c];
        cs.curr = next;
        cs.curr_since = ts;
        cs.curr_comm = next_comm;
        cs.curr_flags = 0;
        if next > 0 {
            self.run_task(next, cpu, ts, false);
            let comm = self.tl.comm(next);
            if comm != Sym::EMPTY {
                self.cpus[c].curr_comm = comm;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn wake(
        &mut self,
        c: usize,
        ts: u64,
        ctx: Ctx,
        pid: i32,
        target: i32,
        cause: Cause,
        waking: bool,
    ) {
        if pid <= 0 {
            return;
        }
        let cpu = c as u32;
        let from_tid = self.cpus[c].curr;
        let target = if target >= 0 { target as u32 } else { u32::MAX };
        let no_waking_yet = self.tl.seen[KindClass::SchedWaking as usize] == 0;
        let t = self.tasks.entry(pid).or_insert_with(|| Task::new(target));
        // The kernel traces a waking only for a task that went to sleep: a second one
        // while we think it is runnable means it ran and slept where we could not see
        // (an untraced CPU, lost events). Its earlier wait is unknown; start over.
        let rewoken = t.state == St::Runnable
            && t.cause == Cause::Woken
            && t.edge != NONE
            && ((waking && t.by_waking) || (!waking && !t.by_waking && no_waking_yet));
        if rewoken {
            self.tl.anomalies.rewoken_while_runnable += 1;
            t.state = St::Unknown;
        }
        // Running: a wakeup that found the task before it slept. Runnable: already woken
        // (sched_waking then sched_wakeup): the first is the true waker.
        if matches!(t.state, St::Running | St::Runnable) {
            if t.state == St::Running && waking {
                t.raced = Some((ts, ctx, cpu, from_tid, target));
            }
            if let (St::Running, Ctx::Timer { edge: te }) = (t.state, ctx) {
                // The timer fired before its sleeper got off the CPU: it never waited.
                let tedge = &mut self.tl.edges[te as usize];
                if tedge.to_tid < 0 {
                    tedge.to_tid = pid;
                }
            }
            return;
        }
        let (state, since, sflags, bits) = (t.state, t.since, t.sflags, t.sleep_bits);
        let comm = self.tl.comm(pid);
        if state == St::Sleeping {
            let fl = sflags | self.loss_flag(u32::MAX, since, ts);
            self.tl.spans.push(
                SpanKind::Sleep,
                target,
                pid,
                comm,
                since,
                ts,
                bits as u32,
                NONE,
                fl,
            );
        }
        let edge = self.edge(Edge {
            kind: EdgeKind::Wakeup,
            ts,
            at: ts,
            from_cpu: cpu,
            from_tid,
            from: ctx,
            to_tid: pid,
            to_cpu: target,
            key: comm.0,
            val: 0,
            val2: 0,
            span: NONE,
            link: NONE,
        });
        if let Ctx::Timer { edge: te } = ctx {
            let tedge = &mut self.tl.edges[te as usize];
            if tedge.to_tid < 0 {
                tedge.to_tid = pid;
                tedge.link = edge;
            }
        }
        let t = self.tasks.get_mut(&pid).expect("inserted above");
        t.state = St::Runnable;
        t.since = ts;
        t.sflags = 0;
        t.cause = cause;
        t.edge = edge;
        t.by_waking = waking;
    }

    fn close_task(&mut self, pid: i32, _ts: u64) {
        self.tasks.remove(&pid);
    }

    fn tasklet_run(&mut self, c: usize, ts: u64) {
        if let Some((sts, sctx, stid)) = self.cpus[c].tasklet_sched.take() {
            let curr = self.cpus[c].curr;
            self.edge(Edge {
                kind: EdgeKind::Tasklet,
                ts: sts,
                at: ts,
                from_cpu: c as u32,
                from_tid: stid,
                from: sctx,
                to_tid: curr,
                to_cpu: c as u32,
                key: 0,
                val: 0,
                val2: 0,
                span: NONE,
                link: NONE,
            });
        }
    }

    fn sys_enter(&mut self, tid: i32, cpu: u32, ts: u64, key: u32, named: bool) {
        if tid <= 0 {
            return;
        }
        let t = self.tasks.entry(tid).or_insert_with(|| Task::new(cpu));
        if let Some(s) = t.sys.as_mut() {
            // raw_syscalls and syscalls:* fire as twins for one call: merge them.
            let twin = if named { !s.named } else { !s.raw };
            if twin && ts.saturating_sub(s.start) < 1_000_000 {
                if named {
                    if s.raw {
                        self.tl.syscall_names.insert(s.key, Sym(key));
                    }
                    s.key = key;
                    s.named = true;
                } else {
                    if s.named {
                        self.tl.syscall_names.insert(key, Sym(s.key));
                    }
                    s.raw = true;
                }
                return;
            }
            self.tl.anomalies.syscalls_without_exit += 1;
        }
        t.sys = Some(Sys {
            key,
            named,
            raw: !named,
            start: ts,
            migrations: 0,
        });
    }

    fn sys_exit(&mut self, tid: i32, comm: Sym, cpu: u32, ts: u64, named: bool) {
        if tid <= 0 {
            return;
        }
        let Some(t) = self.tasks.get_mut(&tid) else {
            self.tl.anomalies.unmatched_exits += 1;
            return;
        };
        match t.sys.take() {
            Some(s) => {
                t.last_sys_exit = (ts, !named);
                let fl =
                    if s.named { span::NAMED } else { 0 } | self.loss_flag(u32::MAX, s.start, ts);
                self.tl.spans.push(
                    SpanKind::Syscall,
                    cpu,
                    tid,
                    comm,
                    s.start,
                    ts,
                    s.key,
                    s.migrations,
                    fl,
                );
            }
            None => {
                let (lts, lraw) = t.last_sys_exit;
                let twin = lts != u64::MAX && lraw == named && ts.saturating_sub(lts) < 1_000_000;
                if !twin {
                    self.tl.anomalies.unmatched_exits += 1;
                }
            }
        }
    }

    /// Text such as `hrtimer stat: now: 14372743560 [us] expect_expires: 14372733903 [us]`
    /// (a test module's own lateness report) and `8 overruns` right after it.
    fn reported(&mut self, name: Sym, text: &str, ts: u64, cpu: u32, tid: i32) {
        if let Some(late) = parse_reported(text) {
            self.tl.reported.push(ReportedLate {
                ts,
                cpu,
                tid,
                name,
                late_ns: late,
                overruns: None,
            });
            self.last_reported = Some(self.tl.reported.len() - 1);
            self.overrun_name = name;
        } else if let (Some(i), true) = (self.last_reported, name == self.overrun_name) {
            if let Some(n) = parse_overruns(text) {
                self.tl.reported[i].overruns = Some(n);
                self.last_reported = None;
            }
        }
    }

    /// Ends the pass: states still open become spans flagged [`span::END_UNKNOWN`].
    pub fn finish(mut self) -> Timeline {
        let end = self.tl.last_ts;
        for c in 0..self.cpus.len() {
            let cs = &self.cpus[c];
            if cs.curr >= 0 {
                let (curr, since, comm, fl) = (cs.curr, cs.curr_since, cs.curr_comm, cs.curr_flags);
                let i = self.tl.spans.push(
                    SpanKind::Run,
                    c as u32,
                    curr,
                    comm,
                    since,
                    end,
                    prio_key(&self.tl, curr),
                    NONE,
                    fl | span::END_UNKNOWN,
                );
                self.tl.runs_by_cpu[c].push(i);
            }
        }
        for c in 0..self.cpus.len() {
            let frames = std::mem::take(&mut self.cpus[c].frames);
            let (curr, comm) = (self.cpus[c].curr, self.cpus[c].curr_comm);
            for f in frames.into_iter().rev() {
                let (kind, key, aux) = match f.kind {
                    FrameKind::Irq(irq) => (SpanKind::Hardirq, irq, NONE),
                    FrameKind::Softirq(v, edge, _) => (SpanKind::Softirq, v as u32, edge),
                    FrameKind::Timer(edge, func) => (SpanKind::TimerCb, func.0, edge),
                };
                let i = self.tl.spans.push(
                    kind,
                    c as u32,
                    curr,
                    comm,
                    f.start,
                    end,
                    key,
                    aux,
                    span::END_UNKNOWN,
                );
                if kind != SpanKind::TimerCb {
                    self.tl.irqs_by_cpu[c].push(i);
                }
            }
        }
        let mut open: Vec<(i32, Task)> = self.tasks.drain().collect();
        open.sort_by_key(|(tid, _)| *tid);
        for (tid, t) in open {
            if t.state == St::Runnable {
                let comm = self.tl.comm(tid);
                let i = self.tl.spans.push(
                    SpanKind::Runnable,
                    t.cpu,
                    tid,
                    comm,
                    t.since,
                    end,
                    t.cause as u32,
                    t.edge,
                    t.sflags | span::END_UNKNOWN,
                );
                if t.edge != NONE {
                    self.tl.edges[t.edge as usize].span = i;
                }
            }
        }
        self.tl.cpus = self.cpus.len() as u32;
        let tick = if self.tick_gaps.len() >= 8 {
            self.tick_gaps.sort_unstable();
            // Idle CPUs skip ticks (NO_HZ): the lower quartile is a busy CPU's period.
            Some(self.tick_gaps[self.tick_gaps.len() / 4])
        } else {
            None
        };
        self.tl.tick_ns = tick;
        let limit = tick.map_or(8_000_000, |t| (t * 3 / 2).max(SILENCE_NS));
        self.tl.silences.retain(|x| x.to - x.from > limit);
        self.tl
    }
}

fn pick(a: Sym, b: Sym) -> Sym {
    if a != Sym::EMPTY {
        a
    } else {
        b
    }
}

fn prio_key(tl: &Timeline, tid: i32) -> u32 {
    tl.prios.get(&tid).map_or(1000, |&p| p.max(0) as u32)
}

/// Pops the innermost frame matching `want`; frames above it (whose exits were lost) go.
fn pop_frame(cs: &mut CpuState, want: impl Fn(FrameKind) -> bool) -> Option<Frame> {
    let pos = cs.frames.iter().rposition(|f| want(f.kind))?;
    let f = cs.frames[pos];
    cs.frames.truncate(pos);
    Some(f)
}

/// Number after `key` (`now: 123 [us]`, `now=123`), scaled by its unit to ns.
fn num_after(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let rest = text[at..].trim_start_matches([':', '=', ' ']);
    let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
    let v: u64 = rest[..digits].parse().ok()?;
    let unit = rest[digits..].trim_start();
    let mul = if unit.starts_with("[us]") || unit.starts_with("us") {
        1_000
    } else if unit.starts_with("[ms]") || unit.starts_with("ms") {
        1_000_000
    } else {
        1
    };
    v.checked_mul(mul)
}

fn parse_reported(text: &str) -> Option<u64> {
    if !text.contains("now") || !text.contains("expire") {
        return None;
    }
    let now = num_after(text, "now")?;
    let exp = ["expect_expires", "expected_expires", "expires", "expected"]
        .iter()
        .find_map(|k| num_after(text, k))?;
    Some(now.saturating_sub(exp))
}

fn parse_overruns(text: &str) -> Option<u64> {
    let t = text.trim();
    let n = t
        .strip_suffix("overruns")
        .or_else(|| t.strip_suffix("overrun"))?;
    n.trim().parse().ok()
}

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

    #[test]
    fn reported_lateness() {
        let t = "hrtimer stat: now: 14372743560 [us] expect_expires: 14372733903 [us], delta: 9656, next_expires: 14372744570";
        assert_eq!(parse_reported(t), Some(9_657_000));
        assert_eq!(parse_overruns("8 overruns"), Some(8));
        assert_eq!(parse_reported("comm=x pid=1"), None);
    }
}
