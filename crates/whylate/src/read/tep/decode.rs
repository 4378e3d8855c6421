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

    pub(super) fn func(&mut self, fmts: &Formats, addr: u64, s: &mut Interner) -> Sym {
        if let Some(&x) = self.funcs.get(&addr) {
            return x;
        }
        let sym = match fmts.symbol(addr) {
            Some(n) => s.intern(n),
            None => s.intern(&format!("0x{addr:x}")),
        };
        self.funcs.insert(addr, sym);
        sym
    }

    /// Decodes `data` (a whole record, common fields first) of format `fmt`.
    pub fn decode(
        &mut self,
        fmts: &Formats,
        fmt: &EventFormat,
        data: &[u8],
        s: &mut Interner,
    ) -> Kind {
        let e = fmts.endian;
        let id = (fmt.id as usize).min(1 << 16);
        if self.plans.len() <= id {
            self.plans.resize(id + 1, None);
        }
        if self.plans[id].is_none() {
            self.plans[id] = Some(Self::plan(fmt, s));
        }
        // The plan is cloned out only for the rare kinds that need `self` again.
        let plan = self.plans[id].as_ref().expect("just planned");
        let i = |f: &Option<Field>| opt_int(f, data, e);
        let u = |f: &Option<Field>| opt_uint(f, data, e);
        let st = |f: &Option<Field>, s: &mut Interner| {
            f.as_ref()
                .map_or(Sym::EMPTY, |f| s.intern_bytes(f.str(data, e)))
        };
        match plan {
            Plan::Switch(f) => {
                let state = u(&f[3]);
                Kind::SchedSwitch {
                    prev_comm: st(&f[0], s),
                    prev_pid: i(&f[1]) as i32,
                    prev_prio: i(&f[2]) as i32,
                    prev_state: TaskState::Numeric(state),
                    next_comm: st(&f[4], s),
                    next_pid: i(&f[5]) as i32,
                    next_prio: i(&f[6]) as i32,
                }
            }
            Plan::Wake { f, waking, new } => Kind::wake(
                st(&f[0], s),
                i(&f[1]) as i32,
                i(&f[2]) as i32,
                i(&f[3]) as i32,
                *waking,
                *new,
            ),
            Plan::Migrate(f) => Kind::SchedMigrate {
                comm: st(&f[0], s),
                pid: i(&f[1]) as i32,
                prio: i(&f[2]) as i32,
                orig_cpu: i(&f[3]) as i32,
                dest_cpu: i(&f[4]) as i32,
            },
            Plan::Fork(f) => Kind::SchedFork {
                parent_comm: st(&f[0], s),
                parent_pid: i(&f[1]) as i32,
                child_comm: st(&f[2], s),
                child_pid: i(&f[3]) as i32,
            },
            Plan::Exec(f) => Kind::SchedExec {
                filename: st(&f[0], s),
                pid: i(&f[1]) as i32,
                old_pid: i(&f[2]) as i32,
            },
            Plan::Exit(f) => Kind::SchedExit {
                comm: st(&f[0], s),
                pid: i(&f[1]) as i32,
                prio: i(&f[2]) as i32,
            },
            Plan::Stat(stat, f) => Kind::SchedStat {
                stat: *stat,
                comm: st(&f[0], s),
                pid: i(&f[1]) as i32,
                delay_ns: u(&f[2]),
            },
            Plan::IrqEntry(f) => Kind::IrqEntry {
                irq: i(&f[0]) as i32,
                name: st(&f[1], s),
            },
            Plan::IrqExit(f) => Kind::IrqExit {
                irq: i(&f[0]) as i32,
                handled: i(&f[1]) != 0,
            },
            Plan::Softirq(k, f) => {
                let vec = u(f) as u8;
                match k {
                    0 => Kind::SoftirqRaise { vec },
                    1 => Kind::SoftirqEntry { vec },
                    _ => Kind::SoftirqExit { vec },
                }
            }
            Plan::Tasklet(entry, f) => {
                let (entry, addr) = (*entry, u(f));
                let func = self.func(fmts, addr, s);
                if entry {
                    Kind::TaskletEntry { func }
                } else {
                    Kind::TaskletExit { func }
                }
            }
            Plan::WorkQueue(f) => {
                let (work, fa, req_cpu, cpu) = (u(&f[0]), u(&f[1]), i(&f[3]), i(&f[4]));
                let workqueue = match &f[2] {
                    Some(w) if w.string => s.intern_bytes(w.str(data, e)),
                    Some(w) => s.intern(&format!("0x{:x}", w.uint(data, e))),
                    None => Sym::EMPTY,
                };
                Kind::WorkQueue {
                    work,
                    function: self.func(fmts, fa, s),
                    workqueue,
                    req_cpu: req_cpu as i32,
                    cpu: cpu as i32,
                }
            }
            Plan::Work(k, f) => {
                let (k, work, fa) = (*k, u(&f[0]), u(&f[1]));
                let function = if f[1].is_some() {
                    self.func(fmts, fa, s)
                } else {
                    Sym::EMPTY
                };
                match k {
                    0 => Kind::WorkActivate { work, function },
                    1 => Kind::WorkStart { work, function },
                    _ => Kind::WorkEnd { work, function },
                }
            }
            Plan::SysEnter(f) => {
                let mut args = [0u64; 6];
                if let Some(a) = &f[1] {
                    if let Some(b) = a.bytes(data, e) {
                        let w = (fmts.long_size as usize).max(4);
                        if w == 8 && !e.big && b.len() >= 48 {
                            // The usual 64-bit little-endian machine: no per-word dispatch
                            // on size and byte order (sys_enter is the commonest event).
                            for (slot, c) in args.iter_mut().zip(b.chunks_exact(8)) {
                                *slot = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
                            }
                        } else {
                            for (k, slot) in args.iter_mut().enumerate() {
                                *slot = e.uint(b, k * w, w).unwrap_or(0);
                            }
                        }
                    }
                }
                Kind::SysEnter { nr: i(&f[0]), args }
            }
            Plan::SysExit(f) => Kind::SysExit {
                nr: i(&f[0]),
                ret: i(&f[1]),
            },
            Plan::SyscallEnter(name, fs) => Kind::SyscallEnter {
                name: *name,
                args: fs
                    .iter()
                    .map(|(n, f)| (*n, f.uint(data, e)))
                    .collect::<Vec<_>>()
                    .into_boxed_slice(),
            },
            Plan::SyscallExit(name, f) => Kind::SyscallExit {
                name: *name,
                ret: i(f),
            },
            Plan::HrStart(f) => {
                let (timer, fa, ex, sex) = (u(&f[0]), u(&f[1]), u(&f[2]), u(&f[3]));
                Kind::HrtimerStart {
                    timer,
                    function: self.func(fmts, fa, s),
                    expires_ns: ex,
                    softexpires_ns: sex,
                }
            }
            Plan::HrEntry(f) => {
                let (timer, fa, now) = (u(&f[0]), u(&f[1]), f[2].as_ref().map(|x| x.uint(data, e)));
                Kind::HrtimerExpireEntry {
                    timer,
                    function: self.func(fmts, fa, s),
                    now_ns: now,
                }
            }
            Plan::HrOne(k, f) => {
                let timer = u(f);
                if *k == 0 {
                    Kind::HrtimerExpireExit { timer }
                } else {
                    Kind::HrtimerCancel { timer }
                }
            }
            Plan::TimerStart(f) => {
                let (timer, fa, expires) = (u(&f[0]), u(&f[1]), u(&f[2]));
                Kind::TimerStart {
                    timer,
                    function: self.func(fmts, fa, s),
                    expires,
                }
            }
            Plan::TimerEntry(f) => {
                let (timer, fa, now) = (u(&f[0]), u(&f[1]), u(&f[2]));
                Kind::TimerExpireEntry {
                    timer,
                    function: self.func(fmts, fa, s),
                    now,
                }
            }
            Plan::TimerOne(k, f) => {
                let timer = u(f);
                if *k == 0 {
                    Kind::TimerExpireExit { timer }
                } else {
                    Kind::TimerCancel { timer }
                }
            }
            Plan::Napi(f) => Kind::NapiPoll {
                napi: u(&f[0]),
                dev: st(&f[1], s),
                work: i(&f[2]) as i32,
                budget: i(&f[3]) as i32,
            },
            Plan::CallerParent(k, f) => {
                let (k, c, p) = (*k, i(&f[0]), i(&f[1]));
                let base = fmts.stext().unwrap_or(0);
                let (caller, parent) = if base != 0 {
                    (
                        self.func(fmts, base.wrapping_add(c as u64), s),
                        self.func(fmts, base.wrapping_add(p as u64), s),
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
            Plan::Print(name, f) => {
                let msg = f.as_ref().map_or(&b""[..], |f| f.str(data, e));
                let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
                Kind::Print {
                    name: *name,
                    msg: String::from_utf8_lossy(msg).into(),
                }
            }
            Plan::Console(f) => {
                let msg = f.as_ref().map_or(&b""[..], |f| f.str(data, e));
                let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
                Kind::Console {
                    msg: String::from_utf8_lossy(msg).into(),
                }
            }
            Plan::Function(f) => {
                let (ip, pip) = (u(&f[0]), u(&f[1]));
                Kind::Function {
                    func: self.func(fmts, ip, s),
                    parent: self.func(fmts, pip, s),
                }
            }
            Plan::FuncGraph(entry, f) => {
                // The tracer's own times of the call, on the trace clock.
                let times = (f[2].is_some() && f[3].is_some()).then(|| (u(&f[2]), u(&f[3])));
                let (entry, addr, depth) = (*entry, u(&f[0]), u(&f[1]));
                let func = self.func(fmts, addr, s);
                func_graph(entry, func, depth, times)
            }
            Plan::Other(name) => {
                let name = *name;
                self.text.clear();
                fmts.render_raw(fmt, data, &mut self.text);
                Kind::Other {
                    name,
                    fields: self.text.as_str().into(),
                }
            }
        }
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
