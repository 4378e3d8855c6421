//! The event model every reader produces.
//!
//! One `Event` per trace record, whatever the input format. Timestamps are integer
//! nanoseconds (never `f64 * 1e9`), strings are interned into [`Sym`]s, and the kinds the
//! analysis understands are typed. Everything else is [`Kind::Other`], whose `key=value`
//! text is only split when someone asks ([`fields`]).

use rustc_hash::FxHashMap;
use std::fmt;

/// An interned string. `Sym::EMPTY` is the empty string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Sym(pub u32);

impl Sym {
    /// The empty string, always present in every [`Interner`].
    pub const EMPTY: Sym = Sym(0);
}

/// Owns the strings behind [`Sym`]s. Memory grows with the number of *distinct* strings
/// (comms, function names), not with the number of events.
#[derive(Clone, Debug)]
pub struct Interner {
    map: FxHashMap<Box<str>, Sym>,
    strs: Vec<Box<str>>,
    /// Recently interned byte strings, one per slot picked by length and end bytes: a busy
    /// trace names a few tasks over and over (every sched_switch names two), and one
    /// compare saves the UTF-8 check and the hash lookup.
    recent: [Sym; RECENT],
    /// Bytes of the strings held, for [`MAX_STRING_BYTES`].
    bytes: usize,
    /// A new string was refused for the caps.
    capped: bool,
}

const RECENT: usize = 64;

/// At most this many distinct strings are held (a real trace has tens of thousands of
/// comms and functions): memory stays bounded whatever the input names.
pub const MAX_STRINGS: usize = 1 << 20;
/// At most this many bytes of distinct strings are held.
pub const MAX_STRING_BYTES: usize = 64 << 20;
/// What every new string past the caps is interned as.
pub const CAPPED_NAME: &str = "<too many names>";

/// The [`Interner::recent`] slot of `b`.
#[inline(always)]
fn recent_slot(b: &[u8]) -> usize {
    let (first, last) = match b {
        [] => (0, 0),
        [f, .., l] => (*f as usize, *l as usize),
        [f] => (*f as usize, *f as usize),
    };
    (b.len().wrapping_mul(31) ^ first.wrapping_mul(7) ^ last.wrapping_mul(13)) % RECENT
}

impl Default for Interner {
    fn default() -> Self {
        let mut i = Interner {
            map: FxHashMap::default(),
            strs: Vec::new(),
            recent: [Sym::EMPTY; RECENT],
            bytes: 0,
            capped: false,
        };
        i.intern("");
        i
    }
}

impl Interner {
    /// A new interner holding only the empty string.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns `s`, returning its symbol.
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&sym) = self.map.get(s) {
            return sym;
        }
        // The placeholder arriving new was capped in another interner (a worker's).
        let full = self.strs.len() >= MAX_STRINGS || self.bytes + s.len() > MAX_STRING_BYTES;
        if full || s == CAPPED_NAME {
            self.capped = true;
            if let Some(&sym) = self.map.get(CAPPED_NAME) {
                return sym;
            }
            return self.add(CAPPED_NAME);
        }
        self.add(s)
    }

    fn add(&mut self, s: &str) -> Sym {
        let sym = Sym(self.strs.len() as u32);
        self.bytes += s.len();
        self.strs.push(s.into());
        self.map.insert(s.into(), sym);
        sym
    }

    /// True when a new string was refused for [`MAX_STRINGS`] or [`MAX_STRING_BYTES`]
    /// and named [`CAPPED_NAME`] instead.
    pub fn capped(&self) -> bool {
        self.capped
    }

    /// The note to give when [`Interner::capped`].
    pub fn cap_note(&self) -> Option<String> {
        self.capped.then(|| {
            format!(
                "the trace names more than {MAX_STRINGS} distinct tasks, events or fields (or {} MiB of them): names past that are all shown as {CAPPED_NAME}",
                MAX_STRING_BYTES >> 20
            )
        })
    }

    /// Interns raw bytes; invalid UTF-8 is replaced, not rejected (comms are arbitrary bytes).
    pub fn intern_bytes(&mut self, b: &[u8]) -> Sym {
        let slot = recent_slot(b);
        let r = self.recent[slot];
        if crate::swar::same(self.strs[r.0 as usize].as_bytes(), b) {
            return r;
        }
        let sym = match std::str::from_utf8(b) {
            Ok(s) => self.intern(s),
            Err(_) => self.intern(&String::from_utf8_lossy(b)),
        };
        // Invalid UTF-8 interns its replacement, whose bytes differ: never a false hit.
        self.recent[slot] = sym;
        sym
    }

    /// The string behind `sym`.
    pub fn get(&self, sym: Sym) -> &str {
        self.strs.get(sym.0 as usize).map(|s| &**s).unwrap_or("")
    }

    /// The strings from symbol `from` on, in symbol order (what was interned since the
    /// interner held `from` strings).
    pub fn strings_from(&self, from: usize) -> impl Iterator<Item = &str> {
        self.strs.get(from..).unwrap_or(&[]).iter().map(|s| &**s)
    }

    /// Number of distinct strings held.
    pub fn len(&self) -> usize {
        self.strs.len()
    }

    /// True when only the empty string is held.
    pub fn is_empty(&self) -> bool {
        self.strs.len() <= 1
    }
}

/// `prev_state` of a sched_switch, kept as the kernel reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Letters as printed by the kernel's print fmt (`S`, `D`, `R+`, `D|K`, `I`...).
    /// Bit i set = letter `TASK_LETTERS[i]`; `preempted` = the `+` suffix.
    Letters {
        /// One bit per letter of [`TASK_LETTERS`].
        bits: u16,
        /// The `+` suffix.
        preempted: bool,
    },
    /// A numeric value (`trace-cmd report -R`, old kernels). Its meaning depends on the
    /// kernel version, so it is kept as is.
    Numeric(u64),
    /// The trace does not say (sysdig's `switch`).
    Unknown,
}

/// Letters of task states in the order of [`TaskState::Letters`] bits.
pub const TASK_LETTERS: &[u8] = b"SDTtXZPIKWNx";

impl TaskState {
    /// Parses `R`, `R+`, `S`, `D|K`, `x`, or a number.
    pub fn parse(s: &[u8]) -> Option<TaskState> {
        if s.is_empty() {
            return None;
        }
        if s[0].is_ascii_digit() {
            let v = if let Some(hex) = s.strip_prefix(b"0x") {
                parse_hex(hex)?
            } else {
                parse_u64(s)?
            };
            return Some(TaskState::Numeric(v));
        }
        let mut bits = 0u16;
        let mut preempted = false;
        for &c in s {
            match c {
                b'R' => {}
                b'+' => preempted = true,
                b'|' => {}
                _ => {
                    let i = TASK_LETTERS.iter().position(|&l| l == c)?;
                    bits |= 1 << i;
                }
            }
        }
        Some(TaskState::Letters { bits, preempted })
    }

    /// True when the task stayed runnable after switching out (it was preempted).
    pub fn is_runnable(&self) -> bool {
        match *self {
            TaskState::Letters { bits, .. } => bits == 0,
            // 0 is TASK_RUNNING on every kernel. A single high bit (>= 256) is how kernels
            // report preemption (TASK_REPORT_MAX on 4.14+, TASK_STATE_MAX before).
            TaskState::Numeric(v) => v == 0 || (v >= 256 && v.is_power_of_two()),
            TaskState::Unknown => false,
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TaskState::Numeric(v) => write!(f, "{v}"),
            TaskState::Unknown => f.write_str("?"),
            TaskState::Letters { bits, preempted } => {
                if bits == 0 {
                    f.write_str("R")?;
                } else {
                    let mut first = true;
                    for (i, &l) in TASK_LETTERS.iter().enumerate() {
                        if bits & (1 << i) != 0 {
                            if !first {
                                f.write_str("|")?;
                            }
                            first = false;
                            write!(f, "{}", l as char)?;
                        }
                    }
                }
                if preempted {
                    f.write_str("+")?;
                }
                Ok(())
            }
        }
    }
}

impl Kind {
    /// sched_waking (`waking`) or sched_wakeup(_new) of `pid`.
    pub fn wake(comm: Sym, pid: i32, prio: i32, target_cpu: i32, waking: bool, new: bool) -> Kind {
        if waking {
            Kind::SchedWaking {
                comm,
                pid,
                prio,
                target_cpu,
            }
        } else {
            Kind::SchedWakeup {
                comm,
                pid,
                prio,
                target_cpu,
                new,
            }
        }
    }
}

/// Which `sched_stat_*` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedStat {
    /// sched_stat_wait: time runnable before running.
    Wait,
    /// sched_stat_sleep.
    Sleep,
    /// sched_stat_iowait.
    Iowait,
    /// sched_stat_blocked.
    Blocked,
    /// sched_stat_runtime (delay = runtime).
    Runtime,
}

/// Softirq vector names in kernel order (`vec=N`).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The vector `s` names: a name of [`SOFTIRQ_NAMES`] (any case) or its number; else the
/// error listing the names (`--softirq BOGUS` would otherwise explain nothing, silently).
pub fn softirq_vector(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let by_name = SOFTIRQ_NAMES.iter().position(|n| n.eq_ignore_ascii_case(t));
    let by_number = t.parse::<usize>().ok().filter(|&n| n < SOFTIRQ_NAMES.len());
    match by_name.or(by_number) {
        Some(v) => Ok(v as u32),
        None => {
            let close = crate::suggest::closest(&t.to_ascii_uppercase(), SOFTIRQ_NAMES, 2);
            Err(format!(
                "{s:?} is not a softirq vector{}; expected one of {} or its number 0-{}",
                crate::suggest::did_you_mean(&close),
                SOFTIRQ_NAMES.join(" "),
                SOFTIRQ_NAMES.len() - 1
            ))
        }
    }
}

/// The typed payload of an event.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Kind {
    SchedSwitch {
        prev_comm: Sym,
        prev_pid: i32,
        prev_prio: i32,
        prev_state: TaskState,
        next_comm: Sym,
        next_pid: i32,
        next_prio: i32,
    },
    /// sched_waking (the waker's context).
    SchedWaking {
        comm: Sym,
        pid: i32,
        prio: i32,
        target_cpu: i32,
    },
    /// sched_wakeup and, with `new`, sched_wakeup_new.
    SchedWakeup {
        comm: Sym,
        pid: i32,
        prio: i32,
        target_cpu: i32,
        new: bool,
    },
    SchedMigrate {
        comm: Sym,
        pid: i32,
        prio: i32,
        orig_cpu: i32,
        dest_cpu: i32,
    },
    SchedFork {
        parent_comm: Sym,
        parent_pid: i32,
        child_comm: Sym,
        child_pid: i32,
    },
    SchedExec {
        filename: Sym,
        pid: i32,
        old_pid: i32,
    },
    SchedExit {
        comm: Sym,
        pid: i32,
        prio: i32,
    },
    SchedStat {
        stat: SchedStat,
        comm: Sym,
        pid: i32,
        delay_ns: u64,
    },
    IrqEntry {
        irq: i32,
        name: Sym,
    },
    IrqExit {
        irq: i32,
        handled: bool,
    },
    SoftirqRaise {
        vec: u8,
    },
    SoftirqEntry {
        vec: u8,
    },
    SoftirqExit {
        vec: u8,
    },
    TaskletEntry {
        func: Sym,
    },
    TaskletExit {
        func: Sym,
    },
    WorkQueue {
        work: u64,
        function: Sym,
        workqueue: Sym,
        req_cpu: i32,
        cpu: i32,
    },
    WorkActivate {
        work: u64,
        function: Sym,
    },
    WorkStart {
        work: u64,
        function: Sym,
    },
    WorkEnd {
        work: u64,
        function: Sym,
    },
    /// raw_syscalls:sys_enter.
    SysEnter {
        nr: i64,
        args: [u64; 6],
    },
    /// raw_syscalls:sys_exit.
    SysExit {
        nr: i64,
        ret: i64,
    },
    /// syscalls:sys_enter_NAME; `name` is the bare syscall name (`openat`).
    SyscallEnter {
        name: Sym,
        args: Box<[(Sym, u64)]>,
    },
    /// syscalls:sys_exit_NAME.
    SyscallExit {
        name: Sym,
        ret: i64,
    },
    HrtimerStart {
        timer: u64,
        function: Sym,
        expires_ns: u64,
        softexpires_ns: u64,
    },
    HrtimerExpireEntry {
        timer: u64,
        function: Sym,
        /// The timer base's clock at expiry; None on kernels that did not print it.
        now_ns: Option<u64>,
    },
    HrtimerExpireExit {
        timer: u64,
    },
    HrtimerCancel {
        timer: u64,
    },
    TimerStart {
        timer: u64,
        function: Sym,
        expires: u64,
    },
    TimerExpireEntry {
        timer: u64,
        function: Sym,
        now: u64,
    },
    TimerExpireExit {
        timer: u64,
    },
    TimerCancel {
        timer: u64,
    },
    NapiPoll {
        napi: u64,
        dev: Sym,
        work: i32,
        budget: i32,
    },
    IrqDisable {
        caller: Sym,
        parent: Sym,
    },
    IrqEnable {
        caller: Sym,
        parent: Sym,
    },
    PreemptDisable {
        caller: Sym,
        parent: Sym,
    },
    PreemptEnable {
        caller: Sym,
        parent: Sym,
    },
    /// printk:console.
    Console {
        msg: Box<str>,
    },
    /// trace_marker writes: ftrace `print`, Android `tracing_mark_write`, old `0:` lines.
    /// `name` is the event name as the trace printed it.
    Print {
        name: Sym,
        msg: Box<str>,
    },
    /// function tracer: `func <-parent`.
    Function {
        func: Sym,
        parent: Sym,
    },
    /// function_graph entry of a call (`f() {`, or the entry half of a leaf `f();`).
    FuncEntry {
        func: Sym,
        depth: u16,
    },
    /// function_graph exit, with the duration the tracer printed when it printed one.
    FuncExit {
        func: Sym,
        depth: u16,
        duration_ns: Option<u64>,
    },
    /// Events were lost on this CPU just before this point. `count` is None when the
    /// trace only says that a buffer (re)started.
    Lost {
        count: Option<u64>,
    },
    /// Any other event; `fields` is the event's text, split on demand by [`fields`].
    Other {
        name: Sym,
        fields: Box<str>,
    },
}

/// One trace record.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Nanoseconds (or raw counter ticks for `counter`/`x86-tsc` clocks).
    pub ts: u64,
    /// CPU, or [`Event::NO_CPU`] when the format does not say.
    pub cpu: u32,
    /// Thread id (`pid` in kernel terms). 0 is the idle task.
    pub tid: i32,
    /// Thread group id when the trace carries it, else -1.
    pub tgid: i32,
    /// Thread name as the trace printed it (`<...>` when the kernel did not know it).
    pub comm: Sym,
    /// Context flags (see [`flags`]); 0 with [`flags::KNOWN`] clear when not recorded.
    pub flags: u16,
    /// What happened.
    pub kind: Kind,
}

/// Bits of [`Event::flags`]: the kernel's `common_flags` layout in the low byte.
pub mod flags {
    /// Interrupts disabled.
    pub const IRQS_OFF: u16 = 0x01;
    /// Lazy reschedule pending (6.13+).
    pub const NEED_RESCHED_LAZY: u16 = 0x02;
    /// Reschedule pending.
    pub const NEED_RESCHED: u16 = 0x04;
    /// In hard interrupt context.
    pub const HARDIRQ: u16 = 0x08;
    /// In softirq context.
    pub const SOFTIRQ: u16 = 0x10;
    /// Preempt-resched pending.
    pub const PREEMPT_RESCHED: u16 = 0x20;
    /// In NMI context.
    pub const NMI: u16 = 0x40;
    /// Bottom halves disabled.
    pub const BH_OFF: u16 = 0x80;
    /// The trace recorded flags for this event.
    pub const KNOWN: u16 = 0x8000;
    /// Shift of the preempt depth nibble stored in bits 8..12.
    pub const PREEMPT_SHIFT: u16 = 8;
    /// Shift of the migrate-disable depth stored in bits 12..15 (7 and above: 7).
    pub const MIGRATE_SHIFT: u16 = 12;
    /// The migrate-disable depth field, once shifted down.
    pub const MIGRATE_MASK: u16 = 0x7;

    /// `depth` as the migrate-disable field (saturated at 7: the count is a nesting
    /// depth, and more than 7 only says "disabled").
    pub fn migrate(depth: u16) -> u16 {
        depth.min(MIGRATE_MASK) << MIGRATE_SHIFT
    }
}

impl Event {
    /// CPU value for formats that do not record one.
    pub const NO_CPU: u32 = u32::MAX;

    /// A lost-events marker: `count` events (None = some) were lost on `cpu` before `ts`.
    pub fn lost(ts: u64, cpu: u32, count: Option<u64>) -> Event {
        Event {
            ts,
            cpu,
            tid: -1,
            tgid: -1,
            comm: Sym::EMPTY,
            flags: 0,
            kind: Kind::Lost { count },
        }
    }

    /// Replaces every symbol the event holds by `f`'s: events parsed with an interner of
    /// their own (a chunk parsed on another thread) are renamed into the shared one.
    /// The match lists every kind, so a new kind with a symbol cannot be forgotten.
    pub fn map_syms(&mut self, f: impl Fn(Sym) -> Sym) {
        self.comm = f(self.comm);
        match &mut self.kind {
            Kind::SchedSwitch {
                prev_comm,
                next_comm,
                ..
            } => {
                *prev_comm = f(*prev_comm);
                *next_comm = f(*next_comm);
            }
            Kind::SchedFork {
                parent_comm,
                child_comm,
                ..
            } => {
                *parent_comm = f(*parent_comm);
                *child_comm = f(*child_comm);
            }
            Kind::SchedWaking { comm, .. }
            | Kind::SchedWakeup { comm, .. }
            | Kind::SchedMigrate { comm, .. }
            | Kind::SchedExit { comm, .. }
            | Kind::SchedStat { comm, .. } => *comm = f(*comm),
            Kind::SchedExec { filename: s, .. }
            | Kind::IrqEntry { name: s, .. }
            | Kind::TaskletEntry { func: s }
            | Kind::TaskletExit { func: s }
            | Kind::WorkActivate { function: s, .. }
            | Kind::WorkStart { function: s, .. }
            | Kind::WorkEnd { function: s, .. }
            | Kind::SyscallExit { name: s, .. }
            | Kind::HrtimerStart { function: s, .. }
            | Kind::HrtimerExpireEntry { function: s, .. }
            | Kind::TimerStart { function: s, .. }
            | Kind::TimerExpireEntry { function: s, .. }
            | Kind::NapiPoll { dev: s, .. }
            | Kind::Print { name: s, .. }
            | Kind::FuncEntry { func: s, .. }
            | Kind::FuncExit { func: s, .. }
            | Kind::Other { name: s, .. } => *s = f(*s),
            Kind::WorkQueue {
                function,
                workqueue,
                ..
            } => {
                *function = f(*function);
                *workqueue = f(*workqueue);
            }
            Kind::SyscallEnter { name, args } => {
                *name = f(*name);
                for (a, _) in args.iter_mut() {
                    *a = f(*a);
                }
            }
            Kind::IrqDisable { caller, parent }
            | Kind::IrqEnable { caller, parent }
            | Kind::PreemptDisable { caller, parent }
            | Kind::PreemptEnable { caller, parent }
            | Kind::Function {
                func: caller,
                parent,
            } => {
                *caller = f(*caller);
                *parent = f(*parent);
            }
            Kind::IrqExit { .. }
            | Kind::SoftirqRaise { .. }
            | Kind::SoftirqEntry { .. }
            | Kind::SoftirqExit { .. }
            | Kind::SysEnter { .. }
            | Kind::SysExit { .. }
            | Kind::HrtimerExpireExit { .. }
            | Kind::HrtimerCancel { .. }
            | Kind::TimerExpireExit { .. }
            | Kind::TimerCancel { .. }
            | Kind::Console { .. }
            | Kind::Lost { .. } => {}
        }
    }

    /// The event's name as a key (cheap: no allocation).
    pub fn name(&self) -> EventName {
        EventName::of(&self.kind)
    }

    /// Preempt depth from the flags column, when known.
    pub fn preempt_depth(&self) -> Option<u8> {
        (self.flags & flags::KNOWN != 0)
            .then_some(((self.flags >> flags::PREEMPT_SHIFT) & 0xf) as u8)
    }

    /// Migrate-disable depth (up to 7) from the flags column, when known.
    pub fn migrate_disable(&self) -> Option<u8> {
        (self.flags & flags::KNOWN != 0)
            .then_some(((self.flags >> flags::MIGRATE_SHIFT) & flags::MIGRATE_MASK) as u8)
    }
}

/// The bare tracepoint name of an event (`sched_switch`, `sys_enter_openat`), as a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventName {
    /// A name known at compile time.
    Static(&'static str),
    /// `sys_enter_<sym>`.
    SysEnter(Sym),
    /// `sys_exit_<sym>`.
    SysExit(Sym),
    /// An `Other` event's own name.
    Other(Sym),
}

/// The bare names of kinds whose name does not depend on the event's data, indexed by
/// [`EventName::static_index`]: counting by index saves hashing a string per event.
pub const STATIC_NAMES: [&str; 44] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
    "sched_stat_wait",
    "sched_stat_sleep",
    "sched_stat_iowait",
    "sched_stat_blocked",
    "sched_stat_runtime",
    "irq_handler_entry",
    "irq_handler_exit",
    "softirq_raise",
    "softirq_entry",
    "softirq_exit",
    "tasklet_entry",
    "tasklet_exit",
    "workqueue_queue_work",
    "workqueue_activate_work",
    "workqueue_execute_start",
    "workqueue_execute_end",
    "sys_enter",
    "sys_exit",
    "hrtimer_start",
    "hrtimer_expire_entry",
    "hrtimer_expire_exit",
    "hrtimer_cancel",
    "timer_start",
    "timer_expire_entry",
    "timer_expire_exit",
    "timer_cancel",
    "napi_poll",
    "irq_disable",
    "irq_enable",
    "preempt_disable",
    "preempt_enable",
    "console",
    "function",
    "funcgraph_entry",
    "funcgraph_exit",
    "lost_events",
];

impl EventName {
    /// Index into [`STATIC_NAMES`] of `kind`'s name, or None when the name comes from the
    /// event's data (per-syscall events, prints, `Other`).
    #[inline]
    pub fn static_index(kind: &Kind) -> Option<usize> {
        use Kind::*;
        Some(match kind {
            SchedSwitch { .. } => 0,
            SchedWaking { .. } => 1,
            SchedWakeup { new: false, .. } => 2,
            SchedWakeup { new: true, .. } => 3,
            SchedMigrate { .. } => 4,
            SchedFork { .. } => 5,
            SchedExec { .. } => 6,
            SchedExit { .. } => 7,
            SchedStat { stat, .. } => match stat {
                self::SchedStat::Wait => 8,
                self::SchedStat::Sleep => 9,
                self::SchedStat::Iowait => 10,
                self::SchedStat::Blocked => 11,
                self::SchedStat::Runtime => 12,
            },
            IrqEntry { .. } => 13,
            IrqExit { .. } => 14,
            SoftirqRaise { .. } => 15,
            SoftirqEntry { .. } => 16,
            SoftirqExit { .. } => 17,
            TaskletEntry { .. } => 18,
            TaskletExit { .. } => 19,
            WorkQueue { .. } => 20,
            WorkActivate { .. } => 21,
            WorkStart { .. } => 22,
            WorkEnd { .. } => 23,
            SysEnter { .. } => 24,
            SysExit { .. } => 25,
            HrtimerStart { .. } => 26,
            HrtimerExpireEntry { .. } => 27,
            HrtimerExpireExit { .. } => 28,
            HrtimerCancel { .. } => 29,
            TimerStart { .. } => 30,
            TimerExpireEntry { .. } => 31,
            TimerExpireExit { .. } => 32,
            TimerCancel { .. } => 33,
            NapiPoll { .. } => 34,
            IrqDisable { .. } => 35,
            IrqEnable { .. } => 36,
            PreemptDisable { .. } => 37,
            PreemptEnable { .. } => 38,
            Console { .. } => 39,
            Function { .. } => 40,
            FuncEntry { .. } => 41,
            FuncExit { .. } => 42,
            Lost { .. } => 43,
            SyscallEnter { .. } | SyscallExit { .. } | Print { .. } | Other { .. } => return None,
        })
    }

    /// The name of `kind`.
    pub fn of(kind: &Kind) -> EventName {
        match kind {
            Kind::SyscallEnter { name, .. } => EventName::SysEnter(*name),
            Kind::SyscallExit { name, .. } => EventName::SysExit(*name),
            Kind::Print { name, .. } | Kind::Other { name, .. } => EventName::Other(*name),
            _ => EventName::Static(Self::static_index(kind).map_or("", |i| STATIC_NAMES[i])),
        }
    }

    /// Renders the name.
    pub fn render(&self, strings: &Interner) -> String {
        match self {
            EventName::Static(s) => (*s).to_string(),
            EventName::SysEnter(s) => format!("sys_enter_{}", strings.get(*s)),
            EventName::SysExit(s) => format!("sys_exit_{}", strings.get(*s)),
            EventName::Other(s) => strings.get(*s).to_string(),
        }
    }
}

/// Splits `key=value` event text into pairs. A value runs until the next ` key=` so values
/// with spaces (`comm=Web Content pid=2711`) stay whole. Text without `=` yields nothing.
pub fn fields(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let b = text.as_bytes();
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        while pos < b.len() && b[pos] == b' ' {
            pos += 1;
        }
        if pos >= b.len() {
            return None;
        }
        let key_start = pos;
        let eq = key_start + memchr::memchr(b'=', &b[key_start..])?;
        let key = &text[key_start..eq];
        if key.is_empty() || key.contains(' ') {
            // Not a key=value list from here on.
            pos = b.len();
            return None;
        }
        let val_start = eq + 1;
        let end = next_key_start(b, val_start).unwrap_or(b.len());
        pos = end;
        Some((key, text[val_start..end].trim_end()))
    })
}

/// Position of the next ` key=` at or after `from`, i.e. where the current value ends.
pub(crate) fn next_key_start(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(off) = memchr::memchr(b' ', &b[i..]) {
        let sp = i + off;
        let mut j = sp + 1;
        if j < b.len() && (b[j].is_ascii_alphabetic() || b[j] == b'_') {
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j < b.len() && b[j] == b'=' {
                return Some(sp);
            }
        }
        i = sp + 1;
    }
    None
}

/// Decimal u64; None on empty input, a non-digit or overflow.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s.len() <= 19 {
        // 19 digits cannot overflow u64: no checked arithmetic on the hot path.
        let mut v: u64 = 0;
        for &c in s {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + d as u64;
        }
        return Some(v);
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// Decimal i64 with optional sign.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.first() {
        Some(b'-') => parse_u64(&s[1..]).and_then(|v| {
            if v <= i64::MAX as u64 + 1 {
                Some((v as i64).wrapping_neg())
            } else {
                None
            }
        }),
        Some(b'+') => parse_u64(&s[1..]).and_then(|v| i64::try_from(v).ok()),
        _ => parse_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Hex u64 without prefix.
pub fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = crate::swar::HEX[c as usize];
        if d == 0xff {
            return None;
        }
        v = (v << 4) | d as u64;
    }
    Some(v)
}

/// A number as kernels print it: decimal, or hex with `0x`, with optional `-`.
pub fn parse_num(s: &[u8]) -> Option<i64> {
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let v = if let Some(h) = body
        .strip_prefix(b"0x")
        .or_else(|| body.strip_prefix(b"0X"))
    {
        parse_hex(h)? as i64
    } else {
        parse_i64(body)?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recent-strings slots never change what a string interns to: many strings per
    /// slot, repeats in every order, invalid UTF-8 next to its replacement.
    /// Distinct strings past the cap all become one placeholder, and the interner says
    /// so; strings it already holds are still found.
    #[test]
    fn names_past_the_string_cap_become_one_placeholder_and_say_so() {
        let mut s = Interner::new();
        for i in 0..MAX_STRINGS + 10 {
            s.intern(&format!("t{i}"));
        }
        assert!(s.capped());
        assert_eq!(s.len(), MAX_STRINGS + 1, "the cap and the placeholder");
        let late = s.intern_bytes(b"late-comer");
        assert_eq!(s.get(late), CAPPED_NAME);
        let t7 = s.intern("t7");
        assert_eq!(s.get(t7), "t7");
        assert!(s.cap_note().unwrap().contains(CAPPED_NAME));
        // A worker's placeholder passed on marks the shared interner too.
        let mut shared = Interner::new();
        shared.intern(CAPPED_NAME);
        assert!(shared.capped() && !Interner::new().capped());
    }

    #[test]
    fn intern_bytes_is_intern() {
        let mut words: Vec<Vec<u8>> = (0..300)
            .map(|i| format!("task-{}", i % 150).into_bytes())
            .collect();
        words.push(b"bad\xff".to_vec());
        words.push("bad\u{fffd}".as_bytes().to_vec());
        words.push(b"".to_vec());
        words.push(b"x".to_vec());
        let mut a = Interner::new();
        let mut b = Interner::new();
        for round in 0..3 {
            for (i, w) in words.iter().enumerate() {
                let w = if round == 1 {
                    &words[words.len() - 1 - i]
                } else {
                    w
                };
                let sa = a.intern_bytes(w);
                let sb = b.intern(&String::from_utf8_lossy(w));
                assert_eq!(sa, sb, "{w:?}");
                assert_eq!(a.get(sa), String::from_utf8_lossy(w));
            }
        }
    }

    #[test]
    fn fields_keep_spaces_in_values() {
        let f: Vec<_> = fields("comm=Web Content pid=2711 prio=120 target_cpu=001").collect();
        assert_eq!(
            f,
            vec![
                ("comm", "Web Content"),
                ("pid", "2711"),
                ("prio", "120"),
                ("target_cpu", "001")
            ]
        );
        assert_eq!(fields("no fields here").count(), 0);
    }

    #[test]
    fn task_states() {
        assert!(TaskState::parse(b"R+").unwrap().is_runnable());
        assert!(TaskState::parse(b"R").unwrap().is_runnable());
        assert!(!TaskState::parse(b"S").unwrap().is_runnable());
        assert_eq!(TaskState::parse(b"D|K").unwrap().to_string(), "D|K");
        assert!(TaskState::parse(b"4096").unwrap().is_runnable());
        assert!(!TaskState::parse(b"130").unwrap().is_runnable());
        assert!(TaskState::parse(b"?").is_none());
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_num(b"-1"), Some(-1));
        assert_eq!(parse_num(b"0x1f"), Some(31));
        assert_eq!(parse_u64(b"99999999999999999999999"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn event_stays_small() {
        // Events are moved through the reorder window by value: keep them compact.
        assert!(
            std::mem::size_of::<super::Event>() <= 96,
            "{}",
            std::mem::size_of::<super::Event>()
        );
    }
}
