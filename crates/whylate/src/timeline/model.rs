//! The timeline's tables: spans (what each CPU and task was doing, in columns), causal
//! edges, lost windows, silences, self-reported lateness, and what had to be inferred.

use crate::event::{Kind, Sym};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

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
    /// [`super::span`] flag bits.
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
    pub(super) fn push(
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
    /// `val` the [`super::span`] flags saying where it ran.
    Softirq,
    /// hrtimer armed at `ts` by `from` (0 when armed before the trace), callback entered
    /// at `at`; `val` requested expiry (softexpires) and `val2` the timer clock at expiry,
    /// both in the timer's clock base; `to_tid` the task the callback woke.
    Timer,
    /// Tasklet scheduled at `ts` (function tracer `__tasklet_schedule`), run from `at`.
    Tasklet,
    /// A packet (skb at address `val`) handed to the stack at `ts` by `from`
    /// (`net:netif_rx`, `net:net_dev_queue`), taken by it at `at` on `to_cpu`
    /// (`net:netif_receive_skb`).
    Packet,
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

/// A function call, from function_graph entry/exit events.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Call {
    /// The function.
    pub func: Sym,
    /// CPU.
    pub cpu: u32,
    /// Task that made it.
    pub tid: i32,
    /// Entry, ns (exit minus the duration the tracer printed, when it printed one).
    pub start: u64,
    /// Duration: the tracer's own figure when the exit line carries it, else exit - entry.
    pub dur: u64,
    /// When its exit was traced (the trace's end for a call still open then): a pasted
    /// excerpt's times need not agree with the durations it prints.
    pub exit: u64,
    /// Its own time: `dur` less its direct children's.
    pub self_ns: u64,
    /// Nesting depth as the tracer printed it.
    pub depth: u16,
    /// This call's entry number, and its caller's ([`NONE`]: none in the trace).
    pub id: u32,
    /// See `id`.
    pub parent: u32,
    /// The entry was before the trace: children that returned before it are not known,
    /// so `self_ns` may include them.
    pub entry_unseen: bool,
    /// Still open when the trace ended: `dur` only says how long it ran at least.
    pub exit_unseen: bool,
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

/// futex's number in the syscall tables whylate knows (x86_64, the asm-generic one):
/// raw entries with one of these keep their operation until the call is named.
pub const FUTEX_NRS: [i64; 2] = [202, 98];

/// A futex operation's name (the command, without the private and clock flags).
pub fn futex_op_name(op: u32) -> Option<&'static str> {
    const OPS: [&str; 14] = [
        "WAIT",
        "WAKE",
        "FD",
        "REQUEUE",
        "CMP_REQUEUE",
        "WAKE_OP",
        "LOCK_PI",
        "UNLOCK_PI",
        "TRYLOCK_PI",
        "WAIT_BITSET",
        "WAKE_BITSET",
        "WAIT_REQUEUE_PI",
        "CMP_REQUEUE_PI",
        "LOCK_PI2",
    ];
    OPS.get((op & 0x7f) as usize).copied()
}

/// Where the analysis is blind: a CPU whose data the trace lost from `from` on (a cut
/// file). Time there is not the workload's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blind {
    /// The CPU.
    pub cpu: u32,
    /// Its last event.
    pub from: u64,
}

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

/// A kernel message printk logged (printk:console). The kernel emits the event when it
/// stores the message, in the logging task's context, before any console prints it; a
/// message below the console log level is logged the same way and never printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsoleLine {
    /// When it was logged.
    pub ts: u64,
    /// The CPU it was logged on.
    pub cpu: u32,
    /// The task that logged it.
    pub tid: i32,
    /// Its length with the newline the console adds.
    pub bytes: u32,
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
    /// Of those, per CPU: the ones out of the idle task (some guests record none there).
    /// Said under explain's verdict, not in this summary's JSON.
    #[serde(skip)]
    pub implicit_from_idle: BTreeMap<u32, u64>,
    /// Per CPU, the switches out of the idle task the trace does record.
    #[serde(skip)]
    pub traced_from_idle: BTreeMap<u32, u64>,
    /// The CPUs whose trace records sched_switch at all: only there is an untraced idle
    /// exit a blind spot (a trace of no switches, timerlat's alone, has none to miss).
    #[serde(skip)]
    pub switching_cpus: std::collections::BTreeSet<u32>,
    /// Per CPU, of the implicit switches out of idle that ended a wait: (how many, the
    /// largest bound on how late the inferred end can be, ns). See
    /// [`Timeline::inferred_bound`].
    #[serde(skip)]
    pub idle_exit_bound: BTreeMap<u32, (u64, u64)>,
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
    /// Events earlier than one already taken (later than the readers' reorder window
    /// could place): left out, since at a clamped time they would make spans of 0 ns and
    /// a wrong span for the trace.
    pub late_events: u64,
    /// The earliest and latest time among those events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_range: Option<(u64, u64)>,
    /// A window of a long trace began with the context of a wait or call still open
    /// cut at its cap (`Builder::carried`): what ran before this time was not carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_cut: Option<u64>,
}

impl Anomalies {
    /// What was counted after `before` (an earlier copy of the same counters): the
    /// counts of a stretch. The per-CPU idle-exit counts, which a window's builder
    /// already counts for its own stretch alone, and the range of late events stay as
    /// they are.
    pub fn since(&self, before: &Anomalies) -> Anomalies {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        Anomalies {
            implicit_switches: d(self.implicit_switches, before.implicit_switches),
            switch_mismatch: d(self.switch_mismatch, before.switch_mismatch),
            switch_in_without_wakeup: d(
                self.switch_in_without_wakeup,
                before.switch_in_without_wakeup,
            ),
            unmatched_exits: d(self.unmatched_exits, before.unmatched_exits),
            syscalls_without_exit: d(self.syscalls_without_exit, before.syscalls_without_exit),
            lost_markers: d(self.lost_markers, before.lost_markers),
            rewoken_while_runnable: d(self.rewoken_while_runnable, before.rewoken_while_runnable),
            stale_frames: d(self.stale_frames, before.stale_frames),
            late_events: d(self.late_events, before.late_events),
            ..self.clone()
        }
    }

    /// Adds the counts of `o`, a later stretch of the same trace (each count of one
    /// stretch only, [`Anomalies::since`]).
    pub fn add(&mut self, o: &Anomalies) {
        self.context_cut = self.context_cut.max(o.context_cut);
        self.implicit_switches += o.implicit_switches;
        self.switch_mismatch += o.switch_mismatch;
        self.switch_in_without_wakeup += o.switch_in_without_wakeup;
        self.unmatched_exits += o.unmatched_exits;
        self.syscalls_without_exit += o.syscalls_without_exit;
        self.lost_markers += o.lost_markers;
        self.rewoken_while_runnable += o.rewoken_while_runnable;
        self.stale_frames += o.stale_frames;
        self.late_events += o.late_events;
        self.late_range = match (self.late_range, o.late_range) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        self.add_idle_exits(o);
    }

    /// Adds what `o` (a later stretch of the same trace) saw of idle exits, for
    /// [`Anomalies::untraced_idle_note`] over both: whether a CPU records its idle exits
    /// is a fact of the whole trace, not of one stretch.
    pub fn add_idle_exits(&mut self, o: &Anomalies) {
        for (c, n) in &o.implicit_from_idle {
            *self.implicit_from_idle.entry(*c).or_default() += n;
        }
        for (c, n) in &o.traced_from_idle {
            *self.traced_from_idle.entry(*c).or_default() += n;
        }
        self.switching_cpus.extend(&o.switching_cpus);
        for (c, (n, b)) in &o.idle_exit_bound {
            let e = self.idle_exit_bound.entry(*c).or_default();
            (e.0, e.1) = (e.0 + n, e.1.max(*b));
        }
    }

    /// The CPUs that record no switch out of their idle task although tasks came out of
    /// it (a guest's kernel, here), in one short line for under a verdict: how many idle
    /// exits were inferred, and how late that makes a wakeup there at worst (a stray lost
    /// switch is said on its own sample only).
    pub fn untraced_idle_note(&self) -> Option<String> {
        let never = |cpu: &&u32| {
            !self.traced_from_idle.contains_key(cpu) && self.switching_cpus.contains(cpu)
        };
        let cpus: Vec<u32> = (self.implicit_from_idle.keys().filter(never))
            .copied()
            .collect();
        if cpus.is_empty() {
            return None;
        }
        let n: u64 = cpus.iter().map(|c| self.implicit_from_idle[c]).sum();
        let names: Vec<String> = cpus.iter().map(|c| format!("CPU{c}'s")).collect();
        let names = match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => unreachable!(),
        };
        let worst = (cpus.iter().filter_map(|c| self.idle_exit_bound.get(c)))
            .map(|b| b.1)
            .max();
        let effect = match worst {
            Some(b) => format!(
                "a wakeup there ends at the task's first event, up to {} late in the worst case",
                crate::units::dur(b)
            ),
            None => "a wakeup there would end at the task's first event".to_string(),
        };
        Some(format!(
            "{names} idle exits are not traced ({n} inferred): {effect}"
        ))
    }

    /// Implicit switch-ins [`Anomalies::untraced_idle_note`] does not cover (nor those out
    /// of idle on a CPU that records no switch at all: nothing there is missing).
    pub fn implicit_switches_unexplained(&self) -> u64 {
        let never = |cpu: &&u32| !self.traced_from_idle.contains_key(cpu);
        let idle: u64 = (self.implicit_from_idle.iter().filter(|(c, _)| never(c)))
            .map(|(_, n)| n)
            .sum();
        self.implicit_switches.saturating_sub(idle)
    }

    /// What a window's context cut at its cap means, for under a verdict.
    pub fn context_cut_note(&self) -> Option<String> {
        let at = self.context_cut?;
        Some(format!(
            "a wait or function call open across windows began long before its window: who ran before {} was not carried into it (at most 262,144 runs, handlers and calls), so time there is not blamed; --window-events 0 holds the whole trace",
            crate::units::secs(at)
        ))
    }

    /// What the events left out for coming too late mean, for under a verdict.
    pub fn late_note(&self) -> Option<String> {
        let (lo, hi) = self.late_range?;
        Some(format!(
            "{} events came earlier than events already read (out of order beyond the reorder window) and were left out: between {} and {} the analysis misses them; sort the input by time, give per-CPU captures as separate files, or raise --reorder",
            self.late_events,
            crate::units::secs(lo),
            crate::units::secs(hi)
        ))
    }
}

/// A timer_list callback's run (`timer:timer_expire_entry` to `_exit`): where the timeouts
/// of `schedule_timeout()` (`SO_RCVTIMEO`, a tty's `VTIME`) expire, in the TIMER softirq.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimerListRun {
    /// CPU it ran on.
    pub cpu: u32,
    /// Entry.
    pub start: u64,
    /// Exit.
    pub end: u64,
    /// The callback (`process_timeout`...).
    pub function: Sym,
    /// The task that armed it (`timer_start` in its context), -1 when not seen.
    pub armed_by: i32,
}

/// The result of the pass.
#[derive(Debug, Default)]
pub struct Timeline {
    /// All spans but system calls.
    pub spans: Spans,
    /// System calls: one per two events in a syscall-heavy trace, so kept packed.
    pub syscalls: super::syscalls::Syscalls,
    /// All edges.
    pub edges: Vec<Edge>,
    /// Lost-event windows in time order.
    pub lost: Vec<LostWindow>,
    /// Runnable spans whose end was inferred (the switch-in was not traced, so the wait
    /// ends at the task's first event there) → how much earlier the switch-in could have
    /// been: from the CPU's event before, or the span's start when later. The inference
    /// is off by at most that much.
    pub inferred_bound: FxHashMap<u32, u64>,
    /// Per CPU: indices of run spans, in time order.
    pub runs_by_cpu: Vec<Vec<u32>>,
    /// Per CPU: indices of hardirq and softirq spans, in order of their end.
    pub irqs_by_cpu: Vec<Vec<u32>>,
    /// Irq number → name from irq_handler_entry.
    pub irq_names: FxHashMap<u32, Sym>,
    /// Syscall number → name, learnt where raw and per-syscall events pair up.
    pub syscall_names: FxHashMap<u32, Sym>,
    /// The operation of each futex call, by (thread, entry): what a wait on a lock says
    /// it was (`futex(WAIT)`, `futex(LOCK_PI)`). Raw calls whose number is futex on one
    /// of the tables ([`FUTEX_NRS`]) are kept too; only a call named futex is asked.
    pub futex_ops: FxHashMap<(i32, u64), u32>,
    /// The syscall table for raw syscall numbers (set by the reading pass).
    pub arch: crate::syscalls::Arch,
    /// Thread → last known name.
    pub comms: FxHashMap<i32, Sym>,
    /// Thread → priority seen last (sched events).
    pub prios: FxHashMap<i32, i32>,
    /// Function calls (function_graph), in the order they returned.
    pub calls: Vec<Call>,
    /// Threads whose priority changed during the trace (a thread that made itself
    /// real-time): each priority and from when it was seen, the first from 0.
    pub prio_changes: FxHashMap<i32, Vec<(u64, i32)>>,
    /// Self-reported timer lateness.
    pub reported: Vec<ReportedLate>,
    /// timer_list callback runs, by start.
    pub timer_list: Vec<TimerListRun>,
    /// Kernel messages logged (printk:console), in time order.
    pub console: Vec<ConsoleLine>,
    /// The serial consoles and their line speed (set by the reading pass from a
    /// recording's snapshot; empty when the trace does not say).
    pub consoles: Vec<crate::snapshot::ConsoleSpeed>,
    /// Thread → times a fork created it (a pid reused in the trace has several).
    pub forks: FxHashMap<i32, Vec<u64>>,
    /// What limits the analysis.
    pub anomalies: Anomalies,
    /// A window's timeline ([`crate::timeline::Builder::own_stretch`]): what its own
    /// stretch counted of `anomalies`, the stretches of a trace's windows adding up to
    /// the whole trace's.
    pub own_anomalies: Option<Anomalies>,
    /// A window's timeline: the edges made in its own stretch (those copied in from the
    /// window before and made in the context it shares with its neighbours left out).
    pub own_edges: u64,
    /// A window's timeline: the spans closed in its own stretch (their indices `a..b`;
    /// spans are pushed as they close, some with an end found only later, an implicit
    /// switch's run ending at the CPU's last event).
    pub own_spans: Option<(u32, u32)>,
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
    /// CPUs whose data ends early (set by the reading pass from what the readers said).
    pub blind: Vec<Blind>,
    /// Each CPU's last event.
    pub cpu_last_ts: Vec<u64>,
    /// hrtimer expiries of the scheduler tick seen (`tick_*` functions).
    pub ticks: u64,
    /// The scheduler tick period measured in the trace.
    pub tick_ns: Option<u64>,
    /// Contexts named after the fact: `(cpu, from, to, ctx)` where the flags said hardirq
    /// or softirq but the entry preceded the trace, and a later exit named it.
    pub retro: Vec<(u32, u64, u64, Ctx)>,
    /// Threads of the recorder that made the trace (set by the reading pass: `whylate
    /// record`'s own from its snapshot, trace-cmd's and perf's by name). They are the
    /// measurement, not the workload: never a victim to explain or a task to advise on.
    pub recorder: FxHashSet<i32>,
    /// The trace's PIDs name the same tasks on this machine now: `whylate record` made it
    /// in this boot (its snapshot says which). Else advice finds tasks by name.
    pub pids_here: bool,
    /// What the real-time latency tracers (timerlat, osnoise) recorded.
    pub rtla: super::rtla::Rtla,
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
