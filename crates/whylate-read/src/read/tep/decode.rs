//! A binary record decoded into the typed `Kind` every reader produces, with field handles resolved once per event id.

use super::format::{EventFormat, Field};
use super::formats::Formats;
use super::plan::{Plan, Rec};
use crate::event::{Interner, Kind, SchedStat, Sym, TaskState};
use rustc_hash::FxHashMap;

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
        if let Some(p) = super::pure::plan(fmt) {
            return p;
        }
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
            "timer_start" => Plan::TimerStart([g("timer"), g("function"), g("expires")]),
            "timer_expire_entry" => Plan::TimerEntry([g("timer"), g("function"), g("now")]),
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
            "kernel_stack" if &*fmt.system == "ftrace" => {
                Plan::Stack(s.intern(name), [g("size"), g("caller")])
            }
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
            | Plan::IrqExit(_)
            | Plan::Softirq(..)
            | Plan::HrOne(..)
            | Plan::TimerOne(..) => super::pure::kind(plan, r),
            Plan::SyscallEnter(..) | Plan::SyscallExit(..) => syscall(plan, r),
            Plan::IrqEntry(_) | Plan::Tasklet(..) | Plan::Napi(_) | Plan::CallerParent(..) => {
                irq(plan, r, funcs, s)
            }
            Plan::WorkQueue(_) | Plan::Work(..) => work(plan, r, funcs, s),
            Plan::HrStart(_) | Plan::HrEntry(_) | Plan::TimerStart(_) | Plan::TimerEntry(_) => {
                timer(plan, r, funcs, s)
            }
            Plan::Print(..)
            | Plan::Console(_)
            | Plan::Function(_)
            | Plan::FuncGraph(..)
            | Plan::Stack(..) => tracer(plan, r, funcs, s),
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

/// Per-call system call entries and exits (`syscalls:`); None for a plan of another group.
fn syscall(plan: &Plan, r: Rec) -> Option<Kind> {
    Some(match plan {
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

/// Hard and soft interrupts, tasklets, NAPI polls, irqs-off and preempt-off sections;
/// None for a plan of another group.
fn irq(plan: &Plan, r: Rec, funcs: &mut Funcs, s: &mut Interner) -> Option<Kind> {
    Some(match plan {
        Plan::IrqEntry(f) => Kind::IrqEntry {
            irq: r.i(&f[0]) as i32,
            name: r.st(&f[1], s),
        },
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
        Plan::Stack(name, f) => stack(*name, r, f, funcs, s),
        _ => return None,
    })
}

/// A kernel_stack record: `size` addresses from `caller` on (the format declares 8, the
/// record holds `size`), each named from kallsyms, as the text readers give a stack.
fn stack(name: Sym, r: Rec, f: &[Option<Field>; 2], funcs: &mut Funcs, s: &mut Interner) -> Kind {
    let mut fields = String::new();
    if let Some(c) = &f[1] {
        let word = (r.fmts.long_size as usize).clamp(4, 8);
        let n = r.u(&f[0]).min(512) as usize;
        for k in 0..n {
            let at = c.offset as usize + k * word;
            // Older kernels end a short stack with ULONG_MAX; an address of 0 is padding.
            match r.e.uint(r.data, at, word) {
                Some(a) if a != 0 && a != u64::MAX && a != u64::from(u32::MAX) => {
                    let sym = funcs.name(r.fmts, a, s);
                    crate::read::stack::push_frame(&mut fields, s.get(sym));
                }
                Some(_) => {}
                None => break,
            }
        }
    }
    Kind::Other {
        name,
        fields: fields.into(),
    }
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
