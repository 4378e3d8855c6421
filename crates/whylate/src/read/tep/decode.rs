//! A binary record decoded into the typed `Kind` every reader produces, with field handles resolved once per event id.

use super::format::{EventFormat, Field};
use super::formats::Formats;
use super::value::{opt_int, opt_uint, Endian};
use crate::event::{flags, Interner, Kind, SchedStat, Sym, TaskState};
use rustc_hash::FxHashMap;

/// The common header of a record.
#[derive(Clone, Copy, Debug, Default)]
pub struct Common {
    /// `common_type`.
    pub id: u32,
    /// `common_flags` and preempt depth packed as [`crate::event::flags`].
    pub flags: u16,
    /// `common_pid`.
    pub pid: i32,
}

/// Reads the common fields; the layout is fixed since 2.6.32.
#[inline]
pub fn common(data: &[u8], e: Endian) -> Option<Common> {
    let id = e.uint(data, 0, 2)? as u32;
    let fl = *data.get(2)? as u16;
    let pc = *data.get(3)? as u16;
    let pid = e.u32(data, 4)? as i32;
    Some(Common {
        id,
        flags: fl | ((pc & 0xf) << flags::PREEMPT_SHIFT) | flags::KNOWN,
        pid,
    })
}

/// How one event id becomes a typed [`Kind`]: field handles resolved once per format.
#[derive(Clone, Debug)]
pub(super) enum Plan {
    Switch([Option<Field>; 7]),
    Wake {
        f: [Option<Field>; 4],
        waking: bool,
        new: bool,
    },
    Migrate([Option<Field>; 5]),
    Fork([Option<Field>; 4]),
    Exec([Option<Field>; 3]),
    Exit([Option<Field>; 3]),
    Stat(SchedStat, [Option<Field>; 3]),
    IrqEntry([Option<Field>; 2]),
    IrqExit([Option<Field>; 2]),
    Softirq(u8, Option<Field>),
    Tasklet(bool, Option<Field>),
    WorkQueue([Option<Field>; 5]),
    Work(u8, [Option<Field>; 2]),
    SysEnter([Option<Field>; 2]),
    SysExit([Option<Field>; 2]),
    SyscallEnter(Sym, Vec<(Sym, Field)>),
    SyscallExit(Sym, Option<Field>),
    HrStart([Option<Field>; 4]),
    HrEntry([Option<Field>; 3]),
    HrOne(u8, Option<Field>),
    TimerStart([Option<Field>; 3]),
    TimerEntry([Option<Field>; 3]),
    TimerOne(u8, Option<Field>),
    Napi([Option<Field>; 4]),
    CallerParent(u8, [Option<Field>; 2]),
    Print(Sym, Option<Field>),
    Console(Option<Field>),
    Function([Option<Field>; 2]),
    /// function_graph: entry (func, depth) or exit (func, depth, calltime, rettime).
    FuncGraph(bool, [Option<Field>; 4]),
    Other(Sym),
}

/// Turns binary records into [`Kind`]s, caching per event id the fields it needs and the
/// symbol names of function pointers.
pub struct Decoder {
    /// By event id (16-bit): a vector, not a map, on the per-record path.
    pub(super) plans: Vec<Option<Plan>>,
    pub(super) funcs: FxHashMap<u64, Sym>,
    pub(super) text: String,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    /// A decoder with nothing cached.
    pub fn new() -> Self {
        Decoder {
            plans: Vec::new(),
            funcs: FxHashMap::default(),
            text: String::new(),
        }
    }

    pub(super) fn plan(fmt: &EventFormat, s: &mut Interner) -> Plan {
        let g = |n: &str| fmt.field(n).cloned();
        let name = &*fmt.name;
        match name {
            "sched_switch" => Plan::Switch([
                g("prev_comm"),
                g("prev_pid"),
                g("prev_prio"),
                g("prev_state"),
                g("next_comm"),
                g("next_pid"),
                g("next_prio"),
            ]),
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => Plan::Wake {
                f: [g("comm"), g("pid"), g("prio"), g("target_cpu")],
                waking: name == "sched_waking",
                new: name == "sched_wakeup_new",
            },
            "sched_migrate_task" => {
                Plan::Migrate([g("comm"), g("pid"), g("prio"), g("orig_cpu"), g("dest_cpu")])
            }
            "sched_process_fork" => Plan::Fork([
                g("parent_comm"),
                g("parent_pid"),
                g("child_comm"),
                g("child_pid"),
            ]),
            "sched_process_exec" => Plan::Exec([g("filename"), g("pid"), g("old_pid")]),
            "sched_process_exit" => Plan::Exit([g("comm"), g("pid"), g("prio")]),
            "sched_stat_wait" | "sched_stat_sleep" | "sched_stat_iowait" | "sched_stat_blocked"
            | "sched_stat_runtime" => {
                let st = match name {
                    "sched_stat_wait" => SchedStat::Wait,
                    "sched_stat_sleep" => SchedStat::Sleep,
                    "sched_stat_iowait" => SchedStat::Iowait,
                    "sched_stat_blocked" => SchedStat::Blocked,
                    _ => SchedStat::Runtime,
                };
                let d = if st == SchedStat::Runtime {
                    g("runtime")
                } else {
                    g("delay")
                };
                Plan::Stat(st, [g("comm"), g("pid"), d])
            }
            "irq_handler_entry" => Plan::IrqEntry([g("irq"), g("name")]),
            "irq_handler_exit" => Plan::IrqExit([g("irq"), g("ret")]),
            "softirq_raise" => Plan::Softirq(0, g("vec")),
            "softirq_entry" => Plan::Softirq(1, g("vec")),
            "softirq_exit" => Plan::Softirq(2, g("vec")),
            "tasklet_entry" | "tasklet_exit" => {
                Plan::Tasklet(name == "tasklet_entry", g("func").or_else(|| g("tasklet")))
            }
            "workqueue_queue_work" => Plan::WorkQueue([
                g("work"),
                g("function"),
                g("workqueue"),
                g("req_cpu"),
                g("cpu"),
            ]),
            "workqueue_activate_work" => Plan::Work(0, [g("work"), g("function")]),
            "workqueue_execute_start" => Plan::Work(1, [g("work"), g("function")]),
            "workqueue_execute_end" => Plan::Work(2, [g("work"), g("function")]),
            "sys_enter" if &*fmt.system == "raw_syscalls" => Plan::SysEnter([g("id"), g("args")]),
            "sys_exit" if &*fmt.system == "raw_syscalls" => Plan::SysExit([g("id"), g("ret")]),
            _ if name.starts_with("sys_enter_") && &*fmt.system == "syscalls" => {
                let args = fmt
                    .fields
                    .iter()
                    .filter(|f| &*f.name != "__syscall_nr")
                    .map(|f| (s.intern(&f.name), f.clone()))
                    .collect();
                Plan::SyscallEnter(s.intern(&name["sys_enter_".len()..]), args)
            }
            _ if name.starts_with("sys_exit_") && &*fmt.system == "syscalls" => {
                Plan::SyscallExit(s.intern(&name["sys_exit_".len()..]), g("ret"))
            }
            "hrtimer_start" => {
                Plan::HrStart([g("hrtimer"), g("function"), g("expires"), g("softexpires")])
            }
            "hrtimer_expire_entry" => Plan::HrEntry([g("hrtimer"), g("function"), g("now")]),
            "hrtimer_expire_exit" => Plan::HrOne(0, g("hrtimer")),
            "hrtimer_cancel" => Plan::HrOne(1, g("hrtimer")),
            "timer_start" => Plan::TimerStart([g("timer"), g("function"), g("expires")]),
            "timer_expire_entry" => Plan::TimerEntry([g("timer"), g("function"), g("now")]),
            "timer_expire_exit" => Plan::TimerOne(0, g("timer")),
            "timer_cancel" => Plan::TimerOne(1, g("timer")),
            "napi_poll" => Plan::Napi([g("napi"), g("dev_name"), g("work"), g("budget")]),
            "irq_disable" | "irq_enable" | "preempt_disable" | "preempt_enable"
                if &*fmt.system == "preemptirq" =>
            {
                let k = match name {
                    "irq_disable" => 0,
                    "irq_enable" => 1,
                    "preempt_disable" => 2,
                    _ => 3,
                };
                Plan::CallerParent(k, [g("caller_offs"), g("parent_offs")])
            }
            "print" if &*fmt.system == "ftrace" => Plan::Print(s.intern("print"), g("buf")),
            "tracing_mark_write" => Plan::Print(s.intern(name), g("buf")),
            "console" if &*fmt.system == "printk" => Plan::Console(g("msg")),
            "function" if &*fmt.system == "ftrace" => Plan::Function([g("ip"), g("parent_ip")]),
            "funcgraph_entry" | "funcgraph_exit" if &*fmt.system == "ftrace" => Plan::FuncGraph(
                name == "funcgraph_entry",
                [g("func"), g("depth"), g("calltime"), g("rettime")],
            ),
            _ => Plan::Other(s.intern(name)),
        }
    }

    /// Decodes `data` (a whole record, common fields first) of format `fmt`.
    pub fn decode(
        &mut self,
        fmts: &Formats,
        fmt: &EventFormat,
        data: &[u8],
        s: &mut Interner,
    ) -> Kind {
        let id = (fmt.id as usize).min(1 << 16);
        if self.plans.len() <= id {
            self.plans.resize(id + 1, None);
        }
        if self.plans[id].is_none() {
            self.plans[id] = Some(Self::plan(fmt, s));
        }
        let plan = self.plans[id].as_ref().expect("just planned");
        let r = Rec {
            data,
            e: fmts.endian,
            fmts,
        };
        let funcs = &mut Funcs(&mut self.funcs);
        // The commonest groups first: scheduler and system calls.
        let kind = match plan {
            Plan::Switch(_)
            | Plan::Wake { .. }
            | Plan::Migrate(_)
            | Plan::Fork(_)
            | Plan::Exec(_)
            | Plan::Exit(_)
            | Plan::Stat(..) => sched(plan, r, s),
            Plan::SysEnter(_)
            | Plan::SysExit(_)
            | Plan::SyscallEnter(..)
            | Plan::SyscallExit(..) => syscall(plan, r),
            Plan::IrqEntry(_)
            | Plan::IrqExit(_)
            | Plan::Softirq(..)
            | Plan::Tasklet(..)
            | Plan::Napi(_)
            | Plan::CallerParent(..) => irq(plan, r, funcs, s),
            Plan::WorkQueue(_) | Plan::Work(..) => work(plan, r, funcs, s),
            Plan::HrStart(_)
            | Plan::HrEntry(_)
            | Plan::HrOne(..)
            | Plan::TimerStart(_)
            | Plan::TimerEntry(_)
            | Plan::TimerOne(..) => timer(plan, r, funcs, s),
            Plan::Print(..) | Plan::Console(_) | Plan::Function(_) | Plan::FuncGraph(..) => {
                tracer(plan, r, funcs, s)
            }
            Plan::Other(_) => None,
        };
        kind.unwrap_or_else(|| {
            // An event without a typed kind: its fields as text, named by its format.
            let name = match plan {
                Plan::Other(name) => *name,
                _ => s.intern(&fmt.name),
            };
            self.text.clear();
            fmts.render_raw(fmt, data, &mut self.text);
            Kind::Other {
                name,
                fields: self.text.as_str().into(),
            }
        })
    }
}

/// One record being decoded: its bytes, their byte order, and the file's formats.
#[derive(Clone, Copy)]
struct Rec<'a> {
    data: &'a [u8],
    e: Endian,
    fmts: &'a Formats,
}

impl Rec<'_> {
    // Always inlined, as `opt_int` is: as calls they cost about what the reads do.
    #[inline(always)]
    fn i(&self, f: &Option<Field>) -> i64 {
        opt_int(f, self.data, self.e)
    }

    #[inline(always)]
    fn u(&self, f: &Option<Field>) -> u64 {
        opt_uint(f, self.data, self.e)
    }

    #[inline]
    fn st(&self, f: &Option<Field>, s: &mut Interner) -> Sym {
        f.as_ref()
            .map_or(Sym::EMPTY, |f| s.intern_bytes(f.str(self.data, self.e)))
    }

    /// A string field's text without its trailing newline (printk and trace_printk).
    fn msg(&self, f: &Option<Field>) -> Box<str> {
        let msg = f.as_ref().map_or(&b""[..], |f| f.str(self.data, self.e));
        let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
        String::from_utf8_lossy(msg).into()
    }
}

/// Function pointers named once each, from kallsyms (else in hex).
struct Funcs<'a>(&'a mut FxHashMap<u64, Sym>);

impl Funcs<'_> {
    fn name(&mut self, fmts: &Formats, addr: u64, s: &mut Interner) -> Sym {
        if let Some(&x) = self.0.get(&addr) {
            return x;
        }
        let sym = match fmts.symbol(addr) {
            Some(n) => s.intern(n),
            None => s.intern(&format!("0x{addr:x}")),
        };
        self.0.insert(addr, sym);
        sym
    }
}

/// Scheduler events; None for a plan of another group.
fn sched(plan: &Plan, r: Rec, s: &mut Interner) -> Option<Kind> {
    Some(match plan {
        Plan::Switch(f) => Kind::SchedSwitch {
            prev_comm: r.st(&f[0], s),
            prev_pid: r.i(&f[1]) as i32,
            prev_prio: r.i(&f[2]) as i32,
            prev_state: TaskState::Numeric(r.u(&f[3])),
            next_comm: r.st(&f[4], s),
            next_pid: r.i(&f[5]) as i32,
            next_prio: r.i(&f[6]) as i32,
        },
        Plan::Wake { f, waking, new } => Kind::wake(
            r.st(&f[0], s),
            r.i(&f[1]) as i32,
            r.i(&f[2]) as i32,
            r.i(&f[3]) as i32,
            *waking,
            *new,
        ),
        Plan::Migrate(f) => Kind::SchedMigrate {
            comm: r.st(&f[0], s),
            pid: r.i(&f[1]) as i32,
            prio: r.i(&f[2]) as i32,
            orig_cpu: r.i(&f[3]) as i32,
            dest_cpu: r.i(&f[4]) as i32,
        },
        Plan::Fork(f) => Kind::SchedFork {
            parent_comm: r.st(&f[0], s),
            parent_pid: r.i(&f[1]) as i32,
            child_comm: r.st(&f[2], s),
            child_pid: r.i(&f[3]) as i32,
        },
        Plan::Exec(f) => Kind::SchedExec {
            filename: r.st(&f[0], s),
            pid: r.i(&f[1]) as i32,
            old_pid: r.i(&f[2]) as i32,
        },
        Plan::Exit(f) => Kind::SchedExit {
            comm: r.st(&f[0], s),
            pid: r.i(&f[1]) as i32,
            prio: r.i(&f[2]) as i32,
        },
        Plan::Stat(stat, f) => Kind::SchedStat {
            stat: *stat,
            comm: r.st(&f[0], s),
            pid: r.i(&f[1]) as i32,
            delay_ns: r.u(&f[2]),
        },
        _ => return None,
    })
}

/// System call entries and exits, raw and per-call; None for a plan of another group.
fn syscall(plan: &Plan, r: Rec) -> Option<Kind> {
    Some(match plan {
        Plan::SysEnter(f) => Kind::SysEnter {
            nr: r.i(&f[0]),
            args: sys_args(&f[1], r),
        },
        Plan::SysExit(f) => Kind::SysExit {
            nr: r.i(&f[0]),
            ret: r.i(&f[1]),
        },
        Plan::SyscallEnter(name, fs) => Kind::SyscallEnter {
            name: *name,
            args: fs
                .iter()
                .map(|(n, f)| (*n, f.uint(r.data, r.e)))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        },
        Plan::SyscallExit(name, f) => Kind::SyscallExit {
            name: *name,
            ret: r.i(f),
        },
        _ => return None,
    })
}

/// raw_syscalls:sys_enter's six arguments (zeros where the record has none).
fn sys_args(f: &Option<Field>, r: Rec) -> [u64; 6] {
    let mut args = [0u64; 6];
    let Some(b) = f.as_ref().and_then(|a| a.bytes(r.data, r.e)) else {
        return args;
    };
    let w = (r.fmts.long_size as usize).max(4);
    if w == 8 && !r.e.big && b.len() >= 48 {
        // The usual 64-bit little-endian machine: no per-word dispatch on size and byte
        // order (sys_enter is the commonest event).
        for (slot, c) in args.iter_mut().zip(b.chunks_exact(8)) {
            *slot = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        }
    } else {
        for (k, slot) in args.iter_mut().enumerate() {
            *slot = r.e.uint(b, k * w, w).unwrap_or(0);
        }
    }
    args
}

/// Hard and soft interrupts, tasklets, NAPI polls, irqs-off and preempt-off sections;
/// None for a plan of another group.
fn irq(plan: &Plan, r: Rec, funcs: &mut Funcs, s: &mut Interner) -> Option<Kind> {
    Some(match plan {
        Plan::IrqEntry(f) => Kind::IrqEntry {
            irq: r.i(&f[0]) as i32,
            name: r.st(&f[1], s),
        },
        Plan::IrqExit(f) => Kind::IrqExit {
            irq: r.i(&f[0]) as i32,
            handled: r.i(&f[1]) != 0,
        },
        Plan::Softirq(k, f) => {
            let vec = r.u(f) as u8;
            match k {
                0 => Kind::SoftirqRaise { vec },
                1 => Kind::SoftirqEntry { vec },
                _ => Kind::SoftirqExit { vec },
            }
        }
        Plan::Tasklet(entry, f) => {
            let func = funcs.name(r.fmts, r.u(f), s);
            match entry {
                true => Kind::TaskletEntry { func },
                false => Kind::TaskletExit { func },
            }
        }
        Plan::Napi(f) => Kind::NapiPoll {
            napi: r.u(&f[0]),
            dev: r.st(&f[1], s),
            work: r.i(&f[2]) as i32,
            budget: r.i(&f[3]) as i32,
        },
        Plan::CallerParent(k, f) => {
            let (c, p) = (r.i(&f[0]), r.i(&f[1]));
            // The tracer records both as offsets from _stext.
            let base = r.fmts.stext().unwrap_or(0);
            let (caller, parent) = if base != 0 {
                (
                    funcs.name(r.fmts, base.wrapping_add(c as u64), s),
                    funcs.name(r.fmts, base.wrapping_add(p as u64), s),
                )
            } else {
                (
                    s.intern(&format!("_stext{c:+#x}")),
                    s.intern(&format!("_stext{p:+#x}")),
                )
            };
            match k {
                0 => Kind::IrqDisable { caller, parent },
                1 => Kind::IrqEnable { caller, parent },
                2 => Kind::PreemptDisable { caller, parent },
                _ => Kind::PreemptEnable { caller, parent },
            }
        }
        _ => return None,
    })
}

/// Workqueue events; None for a plan of another group.
fn work(plan: &Plan, r: Rec, funcs: &mut Funcs, s: &mut Interner) -> Option<Kind> {
    Some(match plan {
        Plan::WorkQueue(f) => {
            let workqueue = match &f[2] {
                Some(w) if w.string => s.intern_bytes(w.str(r.data, r.e)),
                Some(w) => s.intern(&format!("0x{:x}", w.uint(r.data, r.e))),
                None => Sym::EMPTY,
            };
            Kind::WorkQueue {
                work: r.u(&f[0]),
                function: funcs.name(r.fmts, r.u(&f[1]), s),
                workqueue,
                req_cpu: r.i(&f[3]) as i32,
                cpu: r.i(&f[4]) as i32,
            }
        }
        Plan::Work(k, f) => {
            let work = r.u(&f[0]);
            let function = match f[1] {
                Some(_) => funcs.name(r.fmts, r.u(&f[1]), s),
                None => Sym::EMPTY,
            };
            match k {
                0 => Kind::WorkActivate { work, function },
                1 => Kind::WorkStart { work, function },
                _ => Kind::WorkEnd { work, function },
            }
        }
        _ => return None,
    })
}

/// hrtimer and timer-wheel events; None for a plan of another group.
fn timer(plan: &Plan, r: Rec, funcs: &mut Funcs, s: &mut Interner) -> Option<Kind> {
    Some(match plan {
        Plan::HrStart(f) => Kind::HrtimerStart {
            timer: r.u(&f[0]),
            function: funcs.name(r.fmts, r.u(&f[1]), s),
            expires_ns: r.u(&f[2]),
            softexpires_ns: r.u(&f[3]),
        },
        Plan::HrEntry(f) => Kind::HrtimerExpireEntry {
            timer: r.u(&f[0]),
            function: funcs.name(r.fmts, r.u(&f[1]), s),
            now_ns: f[2].as_ref().map(|x| x.uint(r.data, r.e)),
        },
        Plan::HrOne(k, f) => match k {
            0 => Kind::HrtimerExpireExit { timer: r.u(f) },
            _ => Kind::HrtimerCancel { timer: r.u(f) },
        },
        Plan::TimerStart(f) => Kind::TimerStart {
            timer: r.u(&f[0]),
            function: funcs.name(r.fmts, r.u(&f[1]), s),
            expires: r.u(&f[2]),
        },
        Plan::TimerEntry(f) => Kind::TimerExpireEntry {
            timer: r.u(&f[0]),
            function: funcs.name(r.fmts, r.u(&f[1]), s),
            now: r.u(&f[2]),
        },
        Plan::TimerOne(k, f) => match k {
            0 => Kind::TimerExpireExit { timer: r.u(f) },
            _ => Kind::TimerCancel { timer: r.u(f) },
        },
        _ => return None,
    })
}

/// ftrace's own records: trace_printk and console messages, function and function_graph
/// calls; None for a plan of another group.
fn tracer(plan: &Plan, r: Rec, funcs: &mut Funcs, s: &mut Interner) -> Option<Kind> {
    Some(match plan {
        Plan::Print(name, f) => Kind::Print {
            name: *name,
            msg: r.msg(f),
        },
        Plan::Console(f) => Kind::Console { msg: r.msg(f) },
        Plan::Function(f) => Kind::Function {
            func: funcs.name(r.fmts, r.u(&f[0]), s),
            parent: funcs.name(r.fmts, r.u(&f[1]), s),
        },
        Plan::FuncGraph(entry, f) => {
            // The tracer's own times of the call, on the trace clock.
            let times = (f[2].is_some() && f[3].is_some()).then(|| (r.u(&f[2]), r.u(&f[3])));
            let func = funcs.name(r.fmts, r.u(&f[0]), s);
            func_graph(*entry, func, r.u(&f[1]), times)
        }
        _ => return None,
    })
}

/// A function_graph record as a call entry or exit; an exit's duration is the tracer's
/// `rettime - calltime`.
fn func_graph(entry: bool, func: Sym, depth: u64, times: Option<(u64, u64)>) -> Kind {
    let depth = depth.min(u16::MAX as u64) as u16;
    if entry {
        return Kind::FuncEntry { func, depth };
    }
    Kind::FuncExit {
        func,
        depth,
        duration_ns: times.map(|(call, ret)| ret.saturating_sub(call)),
    }
}
