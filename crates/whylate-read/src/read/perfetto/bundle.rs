//! One `FtraceEventBundle` (one CPU's events from one read of its ring buffer) → typed
//! kinds: the typed events, `compact_sched`'s packed switches and wakings, and `generic`
//! events by their field lists.

use super::protos::ftrace_event::Event as Ev;
use super::protos::{ftrace_event_bundle::CompactSched, FtraceEvent, GenericFtraceEvent};
use crate::event::{flags, Interner, Kind, Sym, TaskState};
use rustc_hash::FxHashMap;

/// An event decoded, waiting for its turn: the task names are given when it goes out, in
/// time order.
#[derive(Debug)]
pub(super) struct Held {
    pub ts: u64,
    pub cpu: u32,
    pub tid: i32,
    pub flags: u16,
    pub kind: Kind,
    /// A task the event names anew (task_rename, task_newtask): (pid, name).
    pub names: Option<(i32, Sym)>,
}

/// What one CPU's earlier bundles tell about the next: who runs there (compact switches
/// and wakings leave out the task they happen in).
#[derive(Clone, Copy, Debug)]
pub(super) struct CpuState {
    /// The task on the CPU, -1 when not known yet.
    pub curr: i32,
    pub curr_comm: Sym,
    pub curr_prio: i32,
}

impl Default for CpuState {
    fn default() -> Self {
        CpuState {
            curr: -1,
            curr_comm: Sym::EMPTY,
            curr_prio: UNKNOWN_PRIO,
        }
    }
}

/// A compact switch's previous task priority when no switch on its CPU gave it: filled in
/// from the task's last known priority when the event goes out.
pub(super) const UNKNOWN_PRIO: i32 = i32::MIN;

/// Times from here on are damage, not a time since boot.
pub(super) const FAR: u64 = 1 << 62;

/// Counts of what was not turned into typed events.
#[derive(Clone, Debug, Default)]
pub(super) struct Counts {
    /// Typed events of kinds the schema subset leaves out (cpu_frequency, binder...).
    pub other_typed: u64,
    /// Generic events turned into `Other`.
    pub generic: u64,
    /// Kernel symbols that were interned ids with no interned name.
    pub missing_symbols: u64,
    /// compact_sched arrays of unequal lengths (events left out).
    pub compact_short: u64,
    /// Typed events without a timestamp (left out).
    pub no_time: u64,
    /// Events whose time is past [`FAR`] (damage: left out).
    pub far_time: u64,
    /// Compact events whose comm index is past the bundle's comm table.
    pub bad_comm: u64,
    /// Compact switches whose previous task was not known.
    pub compact_unknown_prev: u64,
}

/// How kernel code addresses read: through the sequence's interned symbols
/// (`symbolize_ksyms`), else in hex.
pub(super) struct Symbols<'a> {
    pub interned: Option<&'a FxHashMap<u64, Sym>>,
}

impl Symbols<'_> {
    fn name(&self, v: u64, s: &mut Interner, counts: &mut Counts) -> Sym {
        // An id too small to be an address was meant to be interned (no kernel, 32-bit
        // ones included, puts code in its first 16 MiB).
        // 0: the field was not recorded.
        match self.interned {
            Some(t) => match t.get(&v) {
                Some(&n) => return n,
                None if v != 0 && v < 1 << 32 => counts.missing_symbols += 1,
                None => {}
            },
            None if v != 0 && v < 1 << 24 => counts.missing_symbols += 1,
            None => {}
        }
        s.intern(&format!("0x{v:x}"))
    }
}

/// The kernel's `prev_state` as the trace stored it (a raw number) → the letters ftrace
/// prints: since 4.14 the low byte holds one bit per letter of `SDTtXZPI` and
/// TASK_REPORT_MAX (0x100) means preempted (`R+`). On older kernels (`old`) the bits meant
/// other states, so the number is kept.
pub(super) fn task_state(v: i64, old: bool) -> TaskState {
    if old || !(0..0x200).contains(&v) {
        return TaskState::Numeric(v as u64);
    }
    TaskState::Letters {
        bits: (v & 0xff) as u16,
        preempted: v & 0x100 != 0,
    }
}

/// A byte string with one trailing newline removed (print buffers end in one).
fn chomp(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\n").unwrap_or(b)
}

fn sym(s: &mut Interner, b: &Option<Vec<u8>>) -> Sym {
    s.intern_bytes(b.as_deref().unwrap_or_default())
}

fn text(b: &Option<Vec<u8>>) -> Box<str> {
    String::from_utf8_lossy(chomp(b.as_deref().unwrap_or_default())).into()
}

/// The typed kind of one `FtraceEvent`; None for a member the subset leaves out (counted).
pub(super) fn kind(
    e: &FtraceEvent,
    s: &mut Interner,
    ks: &Symbols,
    old: bool,
    counts: &mut Counts,
) -> Option<(Kind, Option<(i32, Sym)>)> {
    let mut names = None;
    // A member of the oneof that the subset leaves out decodes as none.
    let Some(ev) = e.event.as_ref() else {
        counts.other_typed += 1;
        return None;
    };
    let k = match ev {
        Ev::SchedSwitch(x) => Kind::SchedSwitch {
            prev_comm: sym(s, &x.prev_comm),
            prev_pid: x.prev_pid.unwrap_or(-1),
            prev_prio: x.prev_prio.unwrap_or(0),
            prev_state: task_state(x.prev_state.unwrap_or(0), old),
            next_comm: sym(s, &x.next_comm),
            next_pid: x.next_pid.unwrap_or(-1),
            next_prio: x.next_prio.unwrap_or(0),
        },
        Ev::SchedWaking(x) => wake(s, &x.comm, x.pid, x.prio, x.target_cpu, true, false),
        Ev::SchedWakeup(x) => wake(s, &x.comm, x.pid, x.prio, x.target_cpu, false, false),
        Ev::SchedWakeupNew(x) => wake(s, &x.comm, x.pid, x.prio, x.target_cpu, false, true),
        Ev::SchedMigrateTask(x) => Kind::SchedMigrate {
            comm: sym(s, &x.comm),
            pid: x.pid.unwrap_or(-1),
            prio: x.prio.unwrap_or(0),
            orig_cpu: x.orig_cpu.unwrap_or(-1),
            dest_cpu: x.dest_cpu.unwrap_or(-1),
        },
        Ev::SchedProcessFork(x) => Kind::SchedFork {
            parent_comm: sym(s, &x.parent_comm),
            parent_pid: x.parent_pid.unwrap_or(-1),
            child_comm: sym(s, &x.child_comm),
            child_pid: x.child_pid.unwrap_or(-1),
        },
        Ev::SchedProcessExec(x) => Kind::SchedExec {
            filename: sym(s, &x.filename),
            pid: x.pid.unwrap_or(-1),
            old_pid: x.old_pid.unwrap_or(-1),
        },
        Ev::SchedProcessExit(x) => Kind::SchedExit {
            comm: sym(s, &x.comm),
            pid: x.pid.unwrap_or(-1),
            prio: x.prio.unwrap_or(0),
        },
        Ev::TaskNewtask(x) => {
            let (pid, comm) = (x.pid.unwrap_or(-1), sym(s, &x.comm));
            names = Some((pid, comm));
            other(s, "task_newtask", format!("pid={pid} comm={}", s.get(comm)))
        }
        Ev::TaskRename(x) => {
            let (pid, new) = (x.pid.unwrap_or(-1), sym(s, &x.newcomm));
            names = Some((pid, new));
            let old = String::from_utf8_lossy(x.oldcomm.as_deref().unwrap_or_default());
            other(
                s,
                "task_rename",
                format!("pid={pid} oldcomm={old} newcomm={}", s.get(new)),
            )
        }
        Ev::IrqHandlerEntry(x) => Kind::IrqEntry {
            irq: x.irq.unwrap_or(-1),
            name: sym(s, &x.name),
        },
        Ev::IrqHandlerExit(x) => Kind::IrqExit {
            irq: x.irq.unwrap_or(-1),
            handled: x.ret.unwrap_or(1) != 0,
        },
        Ev::SoftirqRaise(x) => Kind::SoftirqRaise {
            vec: x.vec.unwrap_or(0).min(255) as u8,
        },
        Ev::SoftirqEntry(x) => Kind::SoftirqEntry {
            vec: x.vec.unwrap_or(0).min(255) as u8,
        },
        Ev::SoftirqExit(x) => Kind::SoftirqExit {
            vec: x.vec.unwrap_or(0).min(255) as u8,
        },
        Ev::WorkqueueQueueWork(x) => Kind::WorkQueue {
            work: x.work.unwrap_or(0),
            function: ks.name(x.function.unwrap_or(0), s, counts),
            workqueue: sym(s, &x.workqueue),
            req_cpu: x.req_cpu.unwrap_or(-1),
            cpu: x.cpu.unwrap_or(-1),
        },
        Ev::WorkqueueActivateWork(x) => Kind::WorkActivate {
            work: x.work.unwrap_or(0),
            function: ks.name(x.function.unwrap_or(0), s, counts),
        },
        Ev::WorkqueueExecuteStart(x) => Kind::WorkStart {
            work: x.work.unwrap_or(0),
            function: ks.name(x.function.unwrap_or(0), s, counts),
        },
        Ev::WorkqueueExecuteEnd(x) => Kind::WorkEnd {
            work: x.work.unwrap_or(0),
            function: ks.name(x.function.unwrap_or(0), s, counts),
        },
        Ev::SysEnter(x) => {
            let mut args = [0u64; 6];
            for (a, v) in args.iter_mut().zip(x.args.as_slice()) {
                *a = *v;
            }
            Kind::SysEnter {
                nr: x.id.unwrap_or(-1),
                args,
            }
        }
        Ev::SysExit(x) => Kind::SysExit {
            nr: x.id.unwrap_or(-1),
            ret: x.ret.unwrap_or(0),
        },
        _ => return timer_kind(e, s, ks, counts).map(|k| (k, None)),
    };
    Some((k, names))
}

/// Timers, prints, function_graph and generic events (the rest of [`kind`]).
fn timer_kind(e: &FtraceEvent, s: &mut Interner, ks: &Symbols, c: &mut Counts) -> Option<Kind> {
    Some(match e.event.as_ref()? {
        Ev::HrtimerStart(x) => Kind::HrtimerStart {
            timer: x.hrtimer.unwrap_or(0),
            function: ks.name(x.function.unwrap_or(0), s, c),
            expires_ns: x.expires.unwrap_or(0).max(0) as u64,
            softexpires_ns: x.softexpires.unwrap_or(0).max(0) as u64,
        },
        Ev::HrtimerExpireEntry(x) => Kind::HrtimerExpireEntry {
            timer: x.hrtimer.unwrap_or(0),
            function: match x.function {
                Some(f) => ks.name(f, s, c),
                None => Sym::EMPTY,
            },
            now_ns: x.now.map(|v| v.max(0) as u64),
        },
        Ev::HrtimerExpireExit(x) => Kind::HrtimerExpireExit {
            timer: x.hrtimer.unwrap_or(0),
        },
        Ev::HrtimerCancel(x) => Kind::HrtimerCancel {
            timer: x.hrtimer.unwrap_or(0),
        },
        Ev::TimerStart(x) => Kind::TimerStart {
            timer: x.timer.unwrap_or(0),
            function: ks.name(x.function.unwrap_or(0), s, c),
            expires: x.expires.unwrap_or(0),
        },
        Ev::TimerExpireEntry(x) => Kind::TimerExpireEntry {
            timer: x.timer.unwrap_or(0),
            function: match x.function {
                Some(f) => ks.name(f, s, c),
                None => Sym::EMPTY,
            },
            now: x.now.unwrap_or(0),
        },
        Ev::TimerExpireExit(x) => Kind::TimerExpireExit {
            timer: x.timer.unwrap_or(0),
        },
        Ev::TimerCancel(x) => Kind::TimerCancel {
            timer: x.timer.unwrap_or(0),
        },
        Ev::Print(x) => Kind::Print {
            name: s.intern("print"),
            msg: text(&x.buf),
        },
        Ev::Console(x) => Kind::Console { msg: text(&x.msg) },
        Ev::FuncgraphEntry(x) => Kind::FuncEntry {
            func: ks.name(x.func.unwrap_or(0), s, c),
            depth: x.depth.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
        },
        Ev::FuncgraphExit(x) => Kind::FuncExit {
            func: ks.name(x.func.unwrap_or(0), s, c),
            depth: x.depth.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
            duration_ns: match (x.calltime, x.rettime) {
                (Some(a), Some(b)) if b >= a => Some(b - a),
                _ => None,
            },
        },
        Ev::Generic(g) => generic(g, s, c),
        _ => {
            c.other_typed += 1;
            return None;
        }
    })
}

fn wake(
    s: &mut Interner,
    comm: &Option<Vec<u8>>,
    pid: Option<i32>,
    prio: Option<i32>,
    target: Option<i32>,
    waking: bool,
    new: bool,
) -> Kind {
    Kind::wake(
        sym(s, comm),
        pid.unwrap_or(-1),
        prio.unwrap_or(0),
        target.unwrap_or(-1),
        waking,
        new,
    )
}

fn other(s: &mut Interner, name: &str, fields: String) -> Kind {
    Kind::Other {
        name: s.intern(name),
        fields: fields.into(),
    }
}

/// One generic field's value as ftrace would print it: strings as they are, numbers that
/// can only be addresses in hex.
fn value(f: &super::protos::generic_ftrace_event::Field) -> String {
    use super::protos::generic_ftrace_event::field::Value;
    match &f.value {
        Some(Value::StrValue(b)) => String::from_utf8_lossy(chomp(b)).into_owned(),
        Some(Value::IntValue(v)) => v.to_string(),
        Some(Value::UintValue(v)) if *v >= 1 << 32 => format!("0x{v:x}"),
        Some(Value::UintValue(v)) => v.to_string(),
        None => String::new(),
    }
}

/// A generic event (one Perfetto has no typed message for: per-call syscalls, tasklets,
/// preemptirq, napi...) by its field list: per-call syscalls directly, the rest through the
/// text readers' body parser on `name=value` text, else kept as `Other` with that text.
fn generic(g: &GenericFtraceEvent, s: &mut Interner, c: &mut Counts) -> Kind {
    let name = g.event_name.as_deref().unwrap_or_default();
    let num = |f: &super::protos::generic_ftrace_event::Field| {
        use super::protos::generic_ftrace_event::field::Value;
        match f.value {
            Some(Value::IntValue(v)) => Some(v as u64),
            Some(Value::UintValue(v)) => Some(v),
            _ => None,
        }
    };
    let field_name = |f: &super::protos::generic_ftrace_event::Field| {
        String::from_utf8_lossy(f.name.as_deref().unwrap_or_default()).into_owned()
    };
    if let Some(call) = name.strip_prefix(b"sys_enter_") {
        let args: Option<Vec<(Sym, u64)>> = (g.field.iter())
            .filter(|f| f.name.as_deref() != Some(b"__syscall_nr"))
            .map(|f| Some((s.intern(&field_name(f)), num(f)?)))
            .collect();
        if let Some(args) = args {
            return Kind::SyscallEnter {
                name: s.intern_bytes(call),
                args: args.into_boxed_slice(),
            };
        }
    }
    if let Some(call) = name.strip_prefix(b"sys_exit_") {
        if let Some(ret) = g.field.iter().find(|f| f.name.as_deref() == Some(b"ret")) {
            if let Some(v) = num(ret) {
                return Kind::SyscallExit {
                    name: s.intern_bytes(call),
                    ret: v as i64,
                };
            }
        }
    }
    let mut body = String::new();
    for f in &g.field {
        if !body.is_empty() {
            body.push(' ');
        }
        body.push_str(&field_name(f));
        body.push('=');
        body.push_str(&value(f));
    }
    if let Some(k) = crate::read::parse_body(name, body.as_bytes(), s) {
        return k;
    }
    c.generic += 1;
    Kind::Other {
        name: s.intern_bytes(name),
        fields: body.into(),
    }
}

/// The flags word of an event whose `common_flags` the trace kept (the kernel's byte;
/// the preempt and migrate-disable depths are not recorded by Perfetto).
pub(super) fn event_flags(common: Option<u32>) -> u16 {
    match common {
        Some(f) => (f & 0xff) as u16 | flags::KNOWN,
        None => 0,
    }
}

/// Which of a bundle's three time-ordered lists an event comes from.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum From {
    Typed,
    Waking,
    Switch,
}

/// The earliest of the three lists' next times, ties in the order typed, waking, switch
/// (written out: as the min of an array of options it cost a fifth of this loop in
/// copies through the stack).
#[inline(always)]
fn earliest(ev: Option<u64>, wk: Option<u64>, sw: Option<u64>) -> Option<(u64, From)> {
    let mut best = ev.map(|t| (t, From::Typed));
    if let Some(t) = wk.filter(|&t| best.is_none_or(|b| t < b.0)) {
        best = Some((t, From::Waking));
    }
    if let Some(t) = sw.filter(|&t| best.is_none_or(|b| t < b.0)) {
        best = Some((t, From::Switch));
    }
    best
}

/// The events of one bundle on `cpu`, in its order (typed events and compact ones merged by
/// time; at equal times typed, then wakings, then switches, except that an event of the
/// task a switch puts on the CPU follows it), into `out`.
#[allow(clippy::too_many_arguments)]
pub(super) fn bundle_events(
    cpu: u32,
    events: &[FtraceEvent],
    compact: Option<&CompactSched>,
    st: &mut CpuState,
    s: &mut Interner,
    ks: &Symbols,
    old: bool,
    counts: &mut Counts,
    out: &mut Vec<Held>,
) {
    let empty = CompactSched::default();
    let c = compact.unwrap_or(&empty);
    let comm = |s: &mut Interner, i: Option<&u32>, counts: &mut Counts| match i {
        Some(&i) => match c.intern_table.get(i as usize) {
            Some(b) => s.intern_bytes(b),
            None => {
                counts.bad_comm += 1;
                Sym::EMPTY
            }
        },
        None => Sym::EMPTY,
    };
    let nsw = c.switch_timestamp.len();
    let nwk = c.waking_timestamp.len();
    let short_sw = [
        c.switch_prev_state.len(),
        c.switch_next_pid.len(),
        c.switch_next_prio.len(),
        c.switch_next_comm_index.len(),
    ];
    let short_wk = [
        c.waking_pid.len(),
        c.waking_target_cpu.len(),
        c.waking_prio.len(),
        c.waking_comm_index.len(),
    ];
    let nsw_ok = short_sw.iter().copied().fold(nsw, usize::min);
    let nwk_ok = short_wk.iter().copied().fold(nwk, usize::min);
    counts.compact_short += (nsw - nsw_ok + nwk - nwk_ok) as u64;
    let (mut i, mut j, mut k) = (0, 0, 0);
    let (mut sw_ts, mut wk_ts) = (0u64, 0u64);
    let next_sw = |j: usize, at: u64| at.wrapping_add(c.switch_timestamp[j]);
    let next_wk = |k: usize, at: u64| at.wrapping_add(c.waking_timestamp[k]);
    loop {
        // An event without a time cannot be placed: left out, counted.
        while events.get(i).is_some_and(|e| e.timestamp.is_none()) {
            counts.no_time += 1;
            i += 1;
        }
        let t_ev = events.get(i).map(|e| e.timestamp.unwrap_or(0));
        let t_sw = (j < nsw_ok).then(|| next_sw(j, sw_ts));
        let t_wk = (k < nwk_ok).then(|| next_wk(k, wk_ts));
        let Some((ts, mut from)) = earliest(t_ev, t_wk, t_sw) else {
            break;
        };
        // A time past 2^62 ns (146 years of uptime) is damage: placed, it would stretch
        // the trace's span to billions of seconds. Left out and counted.
        if ts >= FAR {
            counts.far_time += 1;
            match from {
                From::Typed => i += 1,
                From::Waking => (wk_ts, k) = (ts, k + 1),
                From::Switch => (sw_ts, j) = (ts, j + 1),
            }
            continue;
        }
        // Times in µs (a converted text trace) tie: an event of the task a switch at the
        // same time puts on the CPU comes after that switch.
        if from == From::Typed && t_sw == Some(ts) {
            let pid = events[i].pid.map_or(-1, |p| p as i32);
            if pid != st.curr && pid == c.switch_next_pid[j] {
                from = From::Switch;
            }
        }
        match from {
            From::Typed => {
                let e = &events[i];
                i += 1;
                let tid = e.pid.map_or(-1, |p| p as i32);
                if tid >= 0 && tid != st.curr {
                    // Named and given its priority when it goes out (UNKNOWN_PRIO).
                    (st.curr, st.curr_comm, st.curr_prio) = (tid, Sym::EMPTY, UNKNOWN_PRIO);
                }
                let Some((kind, names)) = kind(e, s, ks, old, counts) else {
                    continue;
                };
                if let Kind::SchedSwitch {
                    next_pid,
                    next_comm,
                    next_prio,
                    ..
                } = kind
                {
                    (st.curr, st.curr_comm, st.curr_prio) = (next_pid, next_comm, next_prio);
                }
                out.push(Held {
                    ts,
                    cpu,
                    tid,
                    flags: event_flags(e.common_flags),
                    kind,
                    names,
                });
            }
            From::Waking => {
                wk_ts = ts;
                let kind = Kind::wake(
                    comm(s, c.waking_comm_index.get(k), counts),
                    c.waking_pid[k],
                    c.waking_prio[k],
                    c.waking_target_cpu[k],
                    true,
                    false,
                );
                let flags = event_flags(c.waking_common_flags.get(k).copied());
                k += 1;
                out.push(Held {
                    ts,
                    cpu,
                    tid: st.curr,
                    flags,
                    kind,
                    names: None,
                });
            }
            From::Switch => {
                sw_ts = ts;
                if st.curr < 0 {
                    counts.compact_unknown_prev += 1;
                }
                let next_comm = comm(s, c.switch_next_comm_index.get(j), counts);
                let kind = Kind::SchedSwitch {
                    prev_comm: st.curr_comm,
                    prev_pid: st.curr,
                    prev_prio: st.curr_prio,
                    prev_state: task_state(c.switch_prev_state[j], old),
                    next_comm,
                    next_pid: c.switch_next_pid[j],
                    next_prio: c.switch_next_prio[j],
                };
                out.push(Held {
                    ts,
                    cpu,
                    tid: st.curr,
                    flags: 0,
                    kind,
                    names: None,
                });
                (st.curr, st.curr_comm, st.curr_prio) =
                    (c.switch_next_pid[j], next_comm, c.switch_next_prio[j]);
                j += 1;
            }
        }
    }
}

#[cfg(test)]
mod earliest_tests {
    use super::{earliest, From};

    #[test]
    fn earliest_is_the_min_with_ties_typed_then_waking_then_switch() {
        let all = [None, Some(1), Some(2)];
        for ev in all {
            for wk in all {
                for sw in all {
                    let want = [(ev, From::Typed), (wk, From::Waking), (sw, From::Switch)]
                        .into_iter()
                        .filter_map(|(t, f)| t.map(|t| (t, f)))
                        .min();
                    assert!(earliest(ev, wk, sw) == want, "{ev:?} {wk:?} {sw:?}");
                }
            }
        }
    }
}
