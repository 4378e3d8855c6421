//! The one streaming pass that builds the timeline: `Builder::push` keeps each CPU's
//! and task's state and dispatches each event to the tracker of its topic (one file
//! each); `finish` closes what is still open.

use super::model::*;
use super::span;
use super::syscalls::Syscall;
use crate::event::{flags, Event, Interner, Kind, Sym, TaskState};
use rustc_hash::FxHashMap;

mod carry;
mod func;
mod hrtimer;
mod irq;
mod irqsoff;
mod lost;
mod packet;
mod rtla;
mod sched;
mod syscall;
mod work;

/// Where an event happened, as every topic handler needs it.
#[derive(Clone, Copy)]
struct At {
    /// CPU index.
    c: usize,
    /// The same, as the trace numbers it.
    cpu: u32,
    /// Timestamp, never before the previous event's.
    ts: u64,
    /// The context the event ran in.
    ctx: Ctx,
    /// Task on the CPU.
    curr: i32,
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
    /// Where it entered: the span's CPU (the exit may come on another after migrating).
    cpu: u32,
    migrations: u32,
    /// A futex call's operation (its second argument), or a call that may be futex on
    /// some table (raw numbers are named after the pass: `timeline::FUTEX_NRS`).
    op: Option<u32>,
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
    /// While runnable: the runqueue it waits on and since when, and the one it waited on
    /// longest before (cpu, ns). A task the load balancer moves while it waits
    /// (sched_migrate_task) waited on the CPU it spent most of the wait on.
    waits_on: (u32, u64),
    longest: (u32, u64),
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
            waits_on: (u32::MAX, 0),
            longest: (u32::MAX, 0),
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

/// A function_graph call entered and not yet returned (`func.rs`).
#[derive(Clone, Debug)]
struct CallFrame {
    func: Sym,
    depth: u16,
    start: u64,
    id: u32,
    tid: i32,
    /// Time of the direct children that returned so far.
    children_ns: u64,
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
    /// How much earlier the running task's switch-in could have been, ns, when it was
    /// inferred (see [`Timeline::inferred_bound`]).
    curr_bound: u64,
    frames: Vec<Frame>,
    pending: [Option<(u64, Ctx, i32)>; 10],
    irqsoff: Option<(u64, Sym)>,
    preemptoff: Option<(u64, Sym)>,
    tasklet: Option<(u64, Sym)>,
    tasklet_sched: Option<(u64, Ctx, i32)>,
    last_ts: u64,
    seen: bool,
    /// A sched_switch was recorded on it.
    switched: bool,
    origin: BhOrigin,
    /// Since when the flags say hardirq (softirq) context but the entry is not in the
    /// trace; an exit without entry then names the context retroactively.
    anon_hard: Option<u64>,
    anon_soft: Option<u64>,
    /// function_graph calls entered and not yet returned, outermost first.
    calls: Vec<CallFrame>,
}

impl CpuState {
    /// How much earlier the running task's inferred switch-in could have been (0 when it
    /// was traced).
    fn inferred_start(&self) -> u64 {
        if self.curr_flags & span::INFERRED != 0 {
            self.curr_bound
        } else {
            0
        }
    }

    fn new() -> CpuState {
        CpuState {
            curr: -1,
            curr_since: 0,
            curr_comm: Sym::EMPTY,
            curr_flags: 0,
            curr_bound: 0,
            frames: Vec::new(),
            pending: [None; 10],
            irqsoff: None,
            preemptoff: None,
            tasklet: None,
            tasklet_sched: None,
            last_ts: 0,
            seen: false,
            switched: false,
            origin: BhOrigin::Task,
            anon_hard: None,
            anon_soft: None,
            calls: Vec::new(),
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

/// An skb handed to the stack: (when, CPU, context, task).
type InFlight = (u64, u32, Ctx, i32);

/// CPUs above this are ignored (a corrupt line must not allocate gigabytes).
const MAX_CPUS: u32 = 1 << 14;

/// Builds a [`Timeline`] from events pushed in time order.
pub struct Builder {
    tl: Timeline,
    cpus: Vec<CpuState>,
    tasks: FxHashMap<i32, Task>,
    armed: FxHashMap<u64, Armed>,
    /// timer_list timers armed by a task: address → its thread.
    timer_armed: FxHashMap<u64, i32>,
    /// Per CPU, the timer_list callback running: (timer, entry, function).
    timer_open: FxHashMap<u32, (u64, u64, Sym)>,
    queued: FxHashMap<u64, Queued>,
    ksoftirqd: FxHashMap<Sym, bool>,
    overrun_name: Sym,
    last_reported: Option<usize>,
    last_comm: (i32, Sym),
    /// Per CPU (the first few thousand), the last (tid, comm) the comms table was seen to
    /// hold, and `renames` then: while no name has changed since, the table still holds it.
    comm_cache: Vec<(i32, Sym, u64)>,
    /// How many times a task's name in the comms table changed.
    renames: u64,
    tick_last: Vec<u64>,
    tick_gaps: Vec<u64>,
    /// Function calls entered so far (their entry numbers).
    call_ids: u32,
    /// Open calls of events without a CPU (a pasted function_graph excerpt), per task.
    cpuless_calls: FxHashMap<i32, Vec<CallFrame>>,
    /// skbs handed to the stack, by address: (when, CPU, context, task).
    in_flight: FxHashMap<u64, InFlight>,
    /// Per CPU, the timerlat sample that was its last event (a stack after it is its own).
    rtla_last: Vec<Option<u32>>,
    /// The timerlat sample the event being fed made, if any.
    rtla_now: Option<u32>,
    /// The stretch `[from, to)` whose idle exits this builder counts: a window of a long
    /// trace counts its own, not those of the context it shares with its neighbours.
    own: (u64, u64),
    /// The anomalies counted before the own stretch began and before it ended (taken
    /// as the first event at or past each bound comes), and the next bound to watch.
    marks: [Option<(Anomalies, usize, usize)>; 2],
    /// Trace time minus hrtimer time at the latest expiry that gave its `now`: when an
    /// armed timer is due on the trace clock, roughly.
    timer_offset: Option<i64>,
    next_mark: u64,
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
            timer_armed: FxHashMap::default(),
            timer_open: FxHashMap::default(),
            queued: FxHashMap::default(),
            ksoftirqd: FxHashMap::default(),
            overrun_name: Sym::EMPTY,
            last_reported: None,
            last_comm: (-1, Sym::EMPTY),
            rtla_last: Vec::new(),
            rtla_now: None,
            own: (0, u64::MAX),
            marks: [None, None],
            timer_offset: None,
            next_mark: u64::MAX,
            comm_cache: Vec::new(),
            renames: 0,
            tick_last: Vec::new(),
            tick_gaps: Vec::new(),
            in_flight: FxHashMap::default(),
            call_ids: 0,
            cpuless_calls: FxHashMap::default(),
        }
    }

    /// Counts the idle exits of `[from, to)` only (see [`Builder::carried`]).
    pub fn own_stretch(&mut self, from: u64, to: u64) {
        self.own = (from, to);
        self.next_mark = match self.marks {
            [None, _] => from,
            _ => to,
        };
    }

    /// Takes the anomalies counted so far as a bound of the own stretch is reached.
    #[cold]
    fn mark(&mut self, ts: u64) {
        let now = || {
            (
                self.tl.anomalies.clone(),
                self.tl.edges.len(),
                self.tl.spans.len(),
            )
        };
        if self.marks[0].is_none() && ts >= self.own.0 {
            self.marks[0] = Some(now());
            self.next_mark = self.own.1;
        }
        if self.marks[1].is_none() && ts >= self.own.1 {
            self.marks[1] = Some(now());
            self.next_mark = u64::MAX;
        }
    }

    fn owns(&self, ts: u64) -> bool {
        ts >= self.own.0 && ts < self.own.1
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

    /// True when an event at `ts` would come too late: earlier than one already fed
    /// ([`Builder::push`] leaves it out).
    #[inline]
    pub fn is_late(&self, ts: u64) -> bool {
        ts < self.tl.last_ts
    }

    /// Feeds one event. Events must come in time order (the readers' reorder
    /// window makes sure of it); one earlier than the last is left out and counted
    /// ([`Anomalies::late_events`]).
    pub fn push(&mut self, e: &Event, strings: &Interner) {
        let tl = &mut self.tl;
        if e.ts < tl.last_ts {
            let a = &mut tl.anomalies;
            a.late_events += 1;
            let (lo, hi) = a.late_range.unwrap_or((e.ts, e.ts));
            a.late_range = Some((lo.min(e.ts), hi.max(e.ts)));
            return;
        }
        if e.ts >= self.next_mark {
            self.mark(e.ts);
        }
        let tl = &mut self.tl;
        tl.seen[KindClass::of(&e.kind) as usize] += 1;
        if tl.first_ts.is_none() {
            tl.first_ts = Some(e.ts);
        }
        let ts = e.ts;
        tl.last_ts = ts;
        // Consecutive events mostly come from the same thread: one compare, no lookup.
        if e.tid > 0 && (e.tid, e.comm) != self.last_comm {
            self.last_comm = (e.tid, e.comm);
            self.note_comm(e, strings);
        }
        let Some(c) = self.cpu(e.cpu) else {
            self.push_cpuless(e, ts, strings);
            return;
        };
        if let Kind::Lost { count } = e.kind {
            self.lost(c, ts, count);
            return;
        }
        self.silence(c, ts);
        if !matches!(e.kind, Kind::SchedSwitch { .. }) && e.tid >= 0 && self.cpus[c].curr != e.tid {
            self.implicit_switch(c, e.tid, e.comm, ts);
        }
        let cpu = c as u32;
        self.drop_stale_frames(c, e);
        let ctx = self.cpus[c].ctx(e.flags);
        let curr = self.cpus[c].curr;
        let at = At {
            c,
            cpu,
            ts,
            ctx,
            curr,
        };
        match &e.kind {
            Kind::SchedSwitch { .. }
            | Kind::SchedWaking { .. }
            | Kind::SchedWakeup { .. }
            | Kind::SchedFork { .. }
            | Kind::SchedExit { .. }
            | Kind::SchedExec { .. }
            | Kind::SchedMigrate { .. } => self.on_sched(at, e, strings),
            Kind::IrqEntry { .. } | Kind::IrqExit { .. } => self.on_irq(at, e, strings),
            Kind::SoftirqRaise { .. }
            | Kind::SoftirqEntry { .. }
            | Kind::SoftirqExit { .. }
            | Kind::TaskletEntry { .. }
            | Kind::TaskletExit { .. }
            | Kind::Function { .. } => self.on_softirq(at, e, strings),
            Kind::FuncEntry { .. } | Kind::FuncExit { .. } => self.on_call(at, e),
            Kind::WorkQueue { .. }
            | Kind::WorkActivate { .. }
            | Kind::WorkStart { .. }
            | Kind::WorkEnd { .. } => self.on_work(at, e, strings),
            Kind::SysEnter { .. }
            | Kind::SyscallEnter { .. }
            | Kind::SysExit { .. }
            | Kind::SyscallExit { .. } => self.on_syscall(at, e, strings),
            Kind::Other { name, fields } if self.on_packet(at, strings.get(*name), fields) => {}
            Kind::Other { name, fields }
                if self.on_rtla(at, e.tid, strings.get(*name), fields, strings) => {}
            Kind::HrtimerStart { .. }
            | Kind::HrtimerCancel { .. }
            | Kind::HrtimerExpireEntry { .. }
            | Kind::HrtimerExpireExit { .. }
            | Kind::TimerStart { .. }
            | Kind::TimerExpireEntry { .. }
            | Kind::TimerExpireExit { .. }
            | Kind::Other { .. }
            | Kind::Print { .. } => self.on_hrtimer(at, e, strings),
            Kind::IrqDisable { .. }
            | Kind::IrqEnable { .. }
            | Kind::PreemptDisable { .. }
            | Kind::PreemptEnable { .. } => self.on_irqsoff(at, e, strings),
            Kind::Console { msg } => self.tl.console.push(ConsoleLine {
                ts,
                cpu,
                tid: e.tid,
                bytes: msg.len() as u32 + 1,
            }),
            _ => {}
        }
        if let Some(last) = self.rtla_last.get_mut(c) {
            *last = self.rtla_now.take();
        }
        self.note_context(c, ts, e);
    }

    fn push_cpuless(&mut self, e: &Event, ts: u64, _strings: &Interner) {
        // Formats without a CPU column (some function_graph dumps) can still feed
        // self-reported lateness and function calls; nothing per-CPU is rebuilt from them.
        match &e.kind {
            Kind::Other { name, fields } => self.reported(*name, fields, ts, u32::MAX, e.tid),
            Kind::Print { name, msg } => self.reported(*name, msg, ts, u32::MAX, e.tid),
            Kind::FuncEntry { .. } | Kind::FuncExit { .. } => self.on_cpuless_call(ts, e),
            _ => {}
        }
    }

    fn learn(&mut self, pid: i32, comm: Sym, strings: &Interner) {
        if pid > 0 && comm != Sym::EMPTY && !strings.get(comm).starts_with('<') {
            self.set_comm(pid, comm);
        }
    }

    /// Names `tid` `comm` in the comms table, counting a change of name.
    fn set_comm(&mut self, tid: i32, comm: Sym) {
        if self
            .tl
            .comms
            .insert(tid, comm)
            .is_some_and(|old| old != comm)
        {
            self.renames += 1;
        }
    }

    /// The name event `e` gives its task. Events of tasks on different CPUs interleave,
    /// so the last pair alone rarely matches; each CPU's last pair skips the table when
    /// no name changed since it was written (the write would change nothing).
    fn note_comm(&mut self, e: &Event, strings: &Interner) {
        let slot = (e.cpu as usize) < 4096;
        let c = e.cpu as usize;
        if slot && self.comm_cache.get(c) == Some(&(e.tid, e.comm, self.renames)) {
            return;
        }
        // `<...>` never replaces a real name.
        if e.comm == Sym::EMPTY || strings.get(e.comm).starts_with('<') {
            return;
        }
        self.set_comm(e.tid, e.comm);
        if slot {
            if c >= self.comm_cache.len() {
                self.comm_cache.resize(c + 1, (-1, Sym::EMPTY, 0));
            }
            self.comm_cache[c] = (e.tid, e.comm, self.renames);
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

    /// Ends the pass: states still open become spans flagged [`span::END_UNKNOWN`].
    pub fn finish(mut self) -> Timeline {
        let end = self.tl.last_ts;
        if self.own != (0, u64::MAX) {
            // A bound no event reached is at the end: a stretch past the last event has
            // counted nothing.
            let end = (
                self.tl.anomalies.clone(),
                self.tl.edges.len(),
                self.tl.spans.len(),
            );
            let before = self.marks[0].take().unwrap_or_else(|| end.clone());
            let after = self.marks[1].take().unwrap_or(end);
            self.tl.own_anomalies = Some(after.0.since(&before.0));
            self.tl.own_edges = (after.1 - before.1) as u64;
            self.tl.own_spans = Some((before.2 as u32, after.2 as u32));
        }
        // Pushed at their exits; callbacks do not nest on a CPU, so this is nearly sorted.
        self.tl.timer_list.sort_by_key(|r| (r.start, r.cpu));
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
        self.close_open_calls(end);
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
        self.tl.cpu_last_ts = self.cpus.iter().map(|c| c.last_ts).collect();
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

#[cfg(test)]
mod tests {
    use crate::testkit::{line, pass};

    /// Tasks on two CPUs interleave; each CPU's last name skips the table only while no
    /// name changed: a switch that names pid 5 `z` on CPU1 is undone by pid 5's next
    /// event on CPU0, as writing every change of (tid, comm) does.
    #[test]
    fn an_interleaved_tasks_name_is_written_back_after_a_rename() {
        let mark = "tracing_mark_write: x";
        let mut t = String::new();
        t += &line(1, 0, "a-5", "....", mark);
        t += &line(2, 1, "b-6", "....", mark);
        t += &line(3, 0, "a-5", "....", mark);
        let switch = "sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=S ==> next_comm=z next_pid=5 next_prio=120";
        t += &line(4, 1, "b-6", "d...", switch);
        let p = pass(&t);
        assert_eq!(p.strings.get(p.tl.comm(5)), "z");
        t += &line(5, 0, "a-5", "....", mark);
        let p = pass(&t);
        assert_eq!(p.strings.get(p.tl.comm(5)), "a");
        assert_eq!(p.strings.get(p.tl.comm(6)), "b");
    }

    /// Only some calls' events recorded (`sys_enter_write`, `sys_exit_read`): a read's
    /// exit does not end the write entered before it (the write ended untraced), so no
    /// write of the read's length is made up; a call whose both ends are traced stays.
    #[test]
    fn an_exit_of_another_call_does_not_end_the_one_entered() {
        let mut t = String::new();
        t += &line(10, 0, "d-7", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
        t += &line(5_000, 0, "d-7", "....1", "sys_read -> 0x1");
        t += &line(
            6_000,
            0,
            "d-7",
            "....1",
            "sys_write(fd: 3, buf: 0, count: 7)",
        );
        t += &line(6_010, 0, "d-7", "....1", "sys_write -> 0x7");
        let p = pass(&t);
        let calls: Vec<(u64, u64)> = (p.tl.syscalls.iter())
            .map(|(_, c)| (c.start, c.end))
            .collect();
        assert_eq!(calls, [(6_000_000, 6_010_000)]);
        assert_eq!(p.tl.anomalies.syscalls_without_exit, 1);
    }

    /// Woken onto busy CPU1, r waits 10 ms behind hog there until the load balancer moves
    /// it to idle CPU0, where it runs 50 us later: its wait was on CPU1's runqueue (seed
    /// of the deferral demo's cpu-idle-on-CPU0 blame).
    #[test]
    fn a_wait_moved_by_the_load_balancer_is_the_cpu_it_waited_on_longest() {
        let mut t = String::new();
        t += &line(1_000, 1, "<idle>-0", "d..2.", "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=9 next_prio=120");
        t += &line(
            2_000,
            1,
            "hog-9",
            "d..3.",
            "sched_waking: comm=r pid=5 prio=120 target_cpu=001",
        );
        t += &line(
            12_000,
            0,
            "<idle>-0",
            "d.s2.",
            "sched_migrate_task: comm=r pid=5 prio=120 orig_cpu=1 dest_cpu=0",
        );
        t += &line(12_050, 0, "<idle>-0", "d..2.", "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120");
        t += &line(12_100, 0, "r-5", "d..2.", "sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120");
        let p = pass(&t);
        let sp = &p.tl.spans;
        let i = (0..sp.len())
            .find(|&i| sp.kind[i] == crate::timeline::SpanKind::Runnable && sp.tid[i] == 5)
            .unwrap();
        assert_eq!(
            (sp.cpu[i], sp.start[i], sp.end[i]),
            (1, 2_000_000, 12_050_000)
        );
    }
}
