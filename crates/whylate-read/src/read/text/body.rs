//! Tracepoint text → typed [`Kind`]. Shared by every text reader (ftrace, trace-cmd report,
//! perf script, latency dumps), because they all print the kernel's `print fmt` output or
//! libtraceevent's plugin rewrite of it.

use crate::event::{
    next_key_start, parse_hex, parse_i64, parse_num, parse_u64, Interner, Kind, SchedStat, Sym,
    TaskState, SOFTIRQ_NAMES,
};

/// Looks up `key=` in `b` and returns its value (to the next ` key=` or the end).
fn field<'a>(b: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    // Walk the `=` signs (a handful per event) rather than search for the key: a memmem
    // searcher built per call cost more than the whole rest of the line.
    for eq in memchr::memchr_iter(b'=', b) {
        let Some(at) = eq.checked_sub(key.len()) else {
            continue;
        };
        let boundary_ok = at == 0 || matches!(b[at - 1], b' ' | b'\t' | b',' | b'(');
        if boundary_ok && &b[at..eq] == key {
            let end = next_key_start(b, eq + 1).unwrap_or(b.len());
            return Some(trim(&b[eq + 1..end]));
        }
    }
    None
}

/// The first `needle` in `h`; for the short texts of one event, where a searcher's setup
/// would dominate.
fn find_short(h: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, _) = needle.split_first()?;
    let last = h.len().checked_sub(needle.len())?;
    (0..=last).find(|&i| h[i] == first && &h[i..i + needle.len()] == needle)
}

/// A decimal (optionally negative) number at the start of `b`, and the rest.
#[inline]
fn lead_int(b: &[u8]) -> Option<(i64, &[u8])> {
    let neg = b.first() == Some(&b'-');
    let digits = &b[neg as usize..];
    // One pass; 18 digits cannot overflow an i64.
    let mut v: i64 = 0;
    let mut n = 0;
    while let Some(&c) = digits.get(n) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v * 10 + d as i64;
        n += 1;
        if n > 18 {
            return None;
        }
    }
    if n == 0 {
        return None;
    }
    Some((if neg { -v } else { v }, &digits[n..]))
}

/// Index of the first byte of `b` that is not a space or tab. perf and ftrace right-align
/// columns with runs of spaces, so this skips eight at a time.
#[inline]
pub(crate) fn skip_spaces(b: &[u8]) -> usize {
    let mut i = 0;
    while let Some(w) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) ^ 0x2020_2020_2020_2020;
        if x != 0 {
            i += x.trailing_zeros() as usize / 8;
            break;
        }
        i += 8;
    }
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

pub(crate) fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

fn int(b: &[u8], key: &[u8]) -> Option<i64> {
    let v = field(b, key)?;
    // `delay=865313 [ns]`, `vec=6 [action=TASKLET]`: take the leading number.
    let end = v.iter().position(|c| *c == b' ').unwrap_or(v.len());
    parse_num(&v[..end])
}

fn hexval(b: &[u8], key: &[u8]) -> Option<u64> {
    let v = field(b, key)?;
    let v = v.strip_prefix(b"0x").unwrap_or(v);
    let end = v.iter().position(|c| *c == b' ').unwrap_or(v.len());
    parse_hex(&v[..end])
}

fn sym(strings: &mut Interner, b: &[u8], key: &[u8]) -> Option<Sym> {
    field(b, key).map(|v| strings.intern_bytes(v))
}

/// Strips `+0x12/0x40` from `func+0x12/0x40` so the same function interns once.
fn func_sym(strings: &mut Interner, v: &[u8]) -> Sym {
    let end = v.iter().position(|c| *c == b'+').unwrap_or(v.len());
    strings.intern_bytes(&v[..end])
}

/// Parses `comm:pid [prio]` (libtraceevent's sched plugin), returning (comm, pid, prio).
fn plugin_task(b: &[u8]) -> Option<(&[u8], i32, i32)> {
    let b = trim(b);
    let lb = memchr::memrchr(b'[', b)?;
    let rb = lb + memchr::memchr(b']', &b[lb..])?;
    let prio = parse_i64(&b[lb + 1..rb])? as i32;
    let who = trim(&b[..lb]);
    let colon = memchr::memrchr(b':', who)?;
    let pid = parse_i64(&who[colon + 1..])? as i32;
    Some((&who[..colon], pid, prio))
}

/// The kernel's own sched_switch format, read left to right:
/// `prev_comm=C prev_pid=N prev_prio=N prev_state=S ==> next_comm=C next_pid=N next_prio=N`.
/// Comms may hold spaces, so each ends at the next key. Any other layout returns None.
fn switch_in_order(b: &[u8], s: &mut Interner) -> Option<Kind> {
    let r = b.strip_prefix(b"prev_comm=")?;
    let p = find_short(r, b" prev_pid=")?;
    let prev_comm = &r[..p];
    let (prev_pid, r) = lead_int(&r[p + 10..])?;
    let (prev_prio, r) = lead_int(r.strip_prefix(b" prev_prio=")?)?;
    let r = r.strip_prefix(b" prev_state=")?;
    let sp = r.iter().position(|&c| c == b' ')?;
    let prev_state = TaskState::parse(&r[..sp])?;
    let r = r[sp..].strip_prefix(b" ==> next_comm=")?;
    let p = find_short(r, b" next_pid=")?;
    let next_comm = &r[..p];
    let (next_pid, r) = lead_int(&r[p + 10..])?;
    let (next_prio, r) = lead_int(r.strip_prefix(b" next_prio=")?)?;
    if !trim(r).is_empty() {
        return None;
    }
    Some(Kind::SchedSwitch {
        prev_comm: s.intern_bytes(prev_comm),
        prev_pid: prev_pid as i32,
        prev_prio: prev_prio as i32,
        prev_state,
        next_comm: s.intern_bytes(next_comm),
        next_pid: next_pid as i32,
        next_prio: next_prio as i32,
    })
}

/// The kernel's sched_waking/sched_wakeup format read left to right:
/// `comm=C pid=N prio=N [success=1] target_cpu=N`. Any other layout returns None.
fn wake_in_order(b: &[u8], s: &mut Interner) -> Option<(Sym, i32, i32, i32)> {
    let r = b.strip_prefix(b"comm=")?;
    let p = find_short(r, b" pid=")?;
    let comm = &r[..p];
    let (pid, r) = lead_int(&r[p + 5..])?;
    let (prio, mut r) = lead_int(r.strip_prefix(b" prio=")?)?;
    if let Some(x) = r.strip_prefix(b" success=") {
        r = lead_int(x)?.1;
    }
    let (cpu, r) = lead_int(r.strip_prefix(b" target_cpu=")?)?;
    if !trim(r).is_empty() {
        return None;
    }
    Some((s.intern_bytes(comm), pid as i32, prio as i32, cpu as i32))
}

fn sched_switch(b: &[u8], s: &mut Interner) -> Option<Kind> {
    if let Some(k) = switch_in_order(b, s) {
        return Some(k);
    }
    if let Some(pc) = field(b, b"prev_comm") {
        let prev_comm = s.intern_bytes(pc);
        let next_comm = s.intern_bytes(field(b, b"next_comm")?);
        let state = field(b, b"prev_state")?;
        return Some(Kind::SchedSwitch {
            prev_comm,
            prev_pid: int(b, b"prev_pid")? as i32,
            prev_prio: int(b, b"prev_prio").unwrap_or(0) as i32,
            // `prev_state=S ==>`: the value stops at the arrow.
            prev_state: TaskState::parse(trim(state.split(|c| *c == b' ').next()?))?,
            next_comm,
            next_pid: int(b, b"next_pid")? as i32,
            next_prio: int(b, b"next_prio").unwrap_or(0) as i32,
        });
    }
    // Plugin form: `prev:pid [prio] S ==> next:pid [prio]`.
    let arrow = memchr::memmem::find(b, b" ==> ")?;
    let left = &b[..arrow];
    let rb = memchr::memrchr(b']', left)?;
    let (pc, prev_pid, prev_prio) = plugin_task(&left[..=rb])?;
    let prev_state = TaskState::parse(trim(&left[rb + 1..]))?;
    let (nc, next_pid, next_prio) = plugin_task(&b[arrow + 5..])?;
    Some(Kind::SchedSwitch {
        prev_comm: s.intern_bytes(pc),
        prev_pid,
        prev_prio,
        prev_state,
        next_comm: s.intern_bytes(nc),
        next_pid,
        next_prio,
    })
}

fn wake(b: &[u8], s: &mut Interner, waking: bool, new: bool) -> Option<Kind> {
    let (comm, pid, prio, target_cpu) = if let Some(w) = wake_in_order(b, s) {
        w
    } else if let Some(c) = field(b, b"comm") {
        (
            s.intern_bytes(c),
            int(b, b"pid")? as i32,
            int(b, b"prio").unwrap_or(0) as i32,
            int(b, b"target_cpu").unwrap_or(-1) as i32,
        )
    } else {
        // Plugin form: `comm:pid [prio] success=1 CPU:003`.
        let rb = memchr::memchr(b']', b)?;
        let (c, pid, prio) = plugin_task(&b[..=rb])?;
        let cpu = memchr::memmem::find(b, b"CPU:")
            .and_then(|p| parse_i64(trim(&b[p + 4..])))
            .unwrap_or(-1);
        (s.intern_bytes(c), pid, prio, cpu as i32)
    };
    Some(Kind::wake(comm, pid, prio, target_cpu, waking, new))
}

/// `vec=6 [action=TASKLET]`, or older `vec=6 action=TASKLET`.
fn vec(b: &[u8]) -> Option<u8> {
    let v = int(b, b"vec")?;
    u8::try_from(v).ok()
}

/// `work struct 0xffff88081e452810: function flush_to_ldisc` and the `work struct=…` form.
fn work_ptr(b: &[u8]) -> Option<u64> {
    if let Some(v) = hexval(b, b"work struct") {
        return Some(v);
    }
    let p = memchr::memmem::find(b, b"work struct ")? + 12;
    let rest = &b[p..];
    let end = rest
        .iter()
        .position(|c| !c.is_ascii_hexdigit() && *c != b'x')
        .unwrap_or(rest.len());
    let v = &rest[..end];
    parse_hex(v.strip_prefix(b"0x").unwrap_or(v))
}

fn work_function(b: &[u8], s: &mut Interner) -> Sym {
    if let Some(f) = field(b, b"function") {
        return s.intern_bytes(f.split(|c| *c == b' ').next().unwrap_or(f));
    }
    if let Some(p) = memchr::memmem::find(b, b"function ") {
        let rest = trim(&b[p + 9..]);
        let end = rest.iter().position(|c| *c == b' ').unwrap_or(rest.len());
        return s.intern_bytes(&rest[..end]);
    }
    Sym::EMPTY
}

/// The kernel's own layout `NR 33 (b, 1, 56399569e9bc, 0, 7, b)`, the arguments read
/// eight digits at a time. None hands anything else to [`sys_enter`]'s general loop,
/// which reads what this reads the same way.
#[inline(always)]
fn sys_enter_exact(b: &[u8]) -> Option<Kind> {
    let r = b.strip_prefix(b"NR ")?;
    let neg = r.first() == Some(&b'-');
    let mut i = neg as usize;
    let mut nr: i64 = 0;
    while i < r.len() && r[i].is_ascii_digit() {
        nr = nr * 10 + (r[i] - b'0') as i64;
        i += 1;
        if i > 18 {
            return None;
        }
    }
    if i == neg as usize || r.get(i..i + 2) != Some(b" (") {
        return None;
    }
    let mut args = [0u64; 6];
    let mut at = i + 2;
    for arg in &mut args {
        let (v, n) = crate::swar::hex_run(r, at)?;
        if n == 0 {
            return None;
        }
        *arg = v;
        at += n;
        match r.get(at..at + 2) {
            Some(b", ") => at += 2,
            _ if r.get(at) == Some(&b')') => {
                let nr = if neg { -nr } else { nr };
                return Some(Kind::SysEnter { nr, args });
            }
            _ => return None,
        }
    }
    None
}

/// `NR 33 (b, 1, 56399569e9bc, 0, 7, b)` → (33, args).
fn sys_enter(b: &[u8]) -> Option<Kind> {
    let b = trim(b);
    sys_enter_exact(b).or_else(|| sys_enter_general(b))
}

/// Any spacing, `0x` prefixes, fewer arguments.
fn sys_enter_general(b: &[u8]) -> Option<Kind> {
    let rest = b.strip_prefix(b"NR ")?;
    let sp = rest.iter().position(|c| *c == b' ').unwrap_or(rest.len());
    let nr = parse_i64(&rest[..sp])?;
    let mut args = [0u64; 6];
    // Hot path (a busy-polling reader makes millions of these): one pass over the bytes,
    // table-decoded, `0x` prefixes and spaces allowed, exactly as many arguments as printed.
    if let Some(lp) = memchr::memchr(b'(', rest) {
        let mut k = 0;
        let mut v: u64 = 0;
        let mut digits = 0u32;
        let mut closed = false;
        for &c in &rest[lp + 1..] {
            let d = crate::swar::HEX[c as usize];
            if d != 0xff {
                v = (v << 4) | d as u64;
                digits += 1;
                continue;
            }
            match c {
                b'x' if digits == 1 && v == 0 => digits = 0,
                b' ' if digits == 0 => {}
                b',' | b')' => {
                    if c == b')' && digits == 0 && k == 0 {
                        closed = true;
                        break;
                    }
                    if digits == 0 || digits > 16 || k >= 6 {
                        return None;
                    }
                    args[k] = v;
                    k += 1;
                    v = 0;
                    digits = 0;
                    if c == b')' {
                        closed = true;
                        break;
                    }
                }
                _ => return None,
            }
        }
        if !closed {
            return None;
        }
    }
    Some(Kind::SysEnter { nr, args })
}

/// `NR 1 = 2` exactly as the kernel prints it, in one pass; None hands anything else
/// (signs, extra spaces, 19-digit values) to [`sys_exit_general`].
#[inline]
fn sys_exit_exact(b: &[u8]) -> Option<Kind> {
    let (nr, r) = lead_int(b.strip_prefix(b"NR ")?)?;
    let (ret, r) = lead_int(r.strip_prefix(b" = ")?)?;
    r.is_empty().then_some(Kind::SysExit { nr, ret })
}

/// `NR 1 = 2`.
fn sys_exit(b: &[u8]) -> Option<Kind> {
    sys_exit_exact(b).or_else(|| sys_exit_general(b))
}

fn sys_exit_general(b: &[u8]) -> Option<Kind> {
    let rest = trim(b).strip_prefix(b"NR ")?;
    // Short text, millions of calls: a plain scan beats building a memmem finder.
    let sp = rest.iter().position(|c| *c == b' ')?;
    let ret = rest[sp..].strip_prefix(b" = ")?;
    Some(Kind::SysExit {
        nr: parse_i64(&rest[..sp])?,
        ret: parse_i64(trim(ret))?,
    })
}

/// Per-syscall entry arguments: `fd: 0x00000007, buf: 0x01f417c4, count: 0x00007fff`.
fn syscall_args(b: &[u8], s: &mut Interner) -> Option<Box<[(Sym, u64)]>> {
    let b = trim(b);
    let b = b.strip_prefix(b"(").unwrap_or(b);
    let b = b.strip_suffix(b")").unwrap_or(b);
    let mut out = Vec::new();
    for part in b.split(|c| *c == b',') {
        let part = trim(part);
        if part.is_empty() {
            continue;
        }
        let colon = memchr::memchr(b':', part)?;
        let v = trim(&part[colon + 1..]);
        let v = v.strip_prefix(b"0x").unwrap_or(v);
        out.push((s.intern_bytes(trim(&part[..colon])), parse_hex(v)?));
    }
    Some(out.into_boxed_slice())
}

/// Per-syscall exit value: perf prints `0x1f`, ftrace `-> 0x1f`, both as a hex of the
/// (sign-extended) long.
fn syscall_ret(b: &[u8]) -> Option<i64> {
    let b = trim(b);
    let b = b.strip_prefix(b"->").map(trim).unwrap_or(b);
    let b = b.strip_prefix(b"ret: ").map(trim).unwrap_or(b);
    if let Some(h) = b.strip_prefix(b"0x") {
        return parse_hex(h).map(|v| v as i64);
    }
    parse_i64(b)
}

fn caller_parent(b: &[u8], s: &mut Interner) -> Option<(Sym, Sym)> {
    let c = field(b, b"caller")?;
    let p = field(b, b"parent").unwrap_or(b"");
    Some((func_sym(s, c), func_sym(s, p)))
}

/// A typed body parser, for the text readers' name memo.
pub(crate) type BodyParser = fn(&[u8], &mut Interner) -> Option<Kind>;

/// The parsers of the events that make up most of a busy trace, looked up once per name
/// change instead of once per line.
pub(crate) fn hot_parser(name: &[u8]) -> Option<BodyParser> {
    Some(match name {
        b"sys_enter" => |b, _| sys_enter(b),
        b"sys_exit" => |b, _| sys_exit(b),
        b"sched_switch" => sched_switch,
        b"sched_waking" => |b, s| wake(b, s, true, false),
        b"sched_wakeup" => |b, s| wake(b, s, false, false),
        b"sched_wakeup_new" => |b, s| wake(b, s, false, true),
        _ => return None,
    })
}

/// Builds the typed kind of event `name` from its text `body`. Returns `None` when the
/// text does not have the shape the name promises (the caller then keeps it as `Other`
/// and counts it: a known event with an unknown layout is worth saying).
pub fn parse_body(name: &[u8], body: &[u8], s: &mut Interner) -> Option<Kind> {
    if let Some(f) = hot_parser(name) {
        return f(body, s);
    }
    // By the tracepoint's subsystem prefix; each group knows its own names.
    if name.starts_with(b"sched_") {
        sched_body(name, body, s)
    } else if name.starts_with(b"workqueue_") {
        work_body(name, body, s)
    } else if name.starts_with(b"hrtimer_") || name.starts_with(b"timer_") {
        timer_body(name, body, s)
    } else if let Some(call) = name.strip_prefix(b"sys_enter_") {
        Some(Kind::SyscallEnter {
            name: s.intern_bytes(call),
            args: syscall_args(body, s)?,
        })
    } else if let Some(call) = name.strip_prefix(b"sys_exit_") {
        Some(Kind::SyscallExit {
            name: s.intern_bytes(call),
            ret: syscall_ret(body)?,
        })
    } else {
        // Interrupts, then the tracer's own messages (both None for other names).
        irq_body(name, body, s).or_else(|| print_body(name, body, s))
    }
}

/// Scheduler events other than the hot ones (switch, wakeups).
fn sched_body(name: &[u8], b: &[u8], s: &mut Interner) -> Option<Kind> {
    Some(match name {
        b"sched_migrate_task" => Kind::SchedMigrate {
            comm: sym(s, b, b"comm")?,
            pid: int(b, b"pid")? as i32,
            prio: int(b, b"prio").unwrap_or(0) as i32,
            orig_cpu: int(b, b"orig_cpu")? as i32,
            dest_cpu: int(b, b"dest_cpu")? as i32,
        },
        b"sched_process_fork" => Kind::SchedFork {
            parent_comm: sym(s, b, b"comm")?,
            parent_pid: int(b, b"pid")? as i32,
            child_comm: sym(s, b, b"child_comm")?,
            child_pid: int(b, b"child_pid")? as i32,
        },
        b"sched_process_exec" => Kind::SchedExec {
            filename: sym(s, b, b"filename")?,
            pid: int(b, b"pid")? as i32,
            old_pid: int(b, b"old_pid").unwrap_or(-1) as i32,
        },
        b"sched_process_exit" => Kind::SchedExit {
            comm: sym(s, b, b"comm")?,
            pid: int(b, b"pid")? as i32,
            prio: int(b, b"prio").unwrap_or(0) as i32,
        },
        b"sched_stat_wait"
        | b"sched_stat_sleep"
        | b"sched_stat_iowait"
        | b"sched_stat_blocked"
        | b"sched_stat_runtime" => {
            let (stat, key): (SchedStat, &[u8]) = match name {
                b"sched_stat_wait" => (SchedStat::Wait, b"delay"),
                b"sched_stat_sleep" => (SchedStat::Sleep, b"delay"),
                b"sched_stat_iowait" => (SchedStat::Iowait, b"delay"),
                b"sched_stat_blocked" => (SchedStat::Blocked, b"delay"),
                _ => (SchedStat::Runtime, b"runtime"),
            };
            Kind::SchedStat {
                stat,
                comm: sym(s, b, b"comm")?,
                pid: int(b, b"pid")? as i32,
                delay_ns: int(b, key)?.max(0) as u64,
            }
        }
        _ => return None,
    })
}

/// Hard and soft interrupts, tasklets, NAPI polls, irqs-off and preempt-off sections.
fn irq_body(name: &[u8], b: &[u8], s: &mut Interner) -> Option<Kind> {
    Some(match name {
        b"irq_handler_entry" => Kind::IrqEntry {
            irq: int(b, b"irq")? as i32,
            name: sym(s, b, b"name").unwrap_or(Sym::EMPTY),
        },
        b"irq_handler_exit" => Kind::IrqExit {
            irq: int(b, b"irq")? as i32,
            handled: field(b, b"ret").is_none_or(|r| r == b"handled"),
        },
        b"softirq_raise" => Kind::SoftirqRaise { vec: vec(b)? },
        b"softirq_entry" => Kind::SoftirqEntry { vec: vec(b)? },
        b"softirq_exit" => Kind::SoftirqExit { vec: vec(b)? },
        b"tasklet_entry" | b"tasklet_hi_entry" => Kind::TaskletEntry {
            func: func_sym(s, field(b, b"function").or_else(|| field(b, b"func"))?),
        },
        b"tasklet_exit" | b"tasklet_hi_exit" => Kind::TaskletExit {
            func: func_sym(s, field(b, b"function").or_else(|| field(b, b"func"))?),
        },
        b"napi_poll" => Kind::NapiPoll {
            napi: hexval(b, b"napi struct")
                .or_else(|| hexval(b, b"napi"))
                .unwrap_or(0),
            dev: sym(s, b, b"dev").unwrap_or(Sym::EMPTY),
            work: int(b, b"work")? as i32,
            budget: int(b, b"budget")? as i32,
        },
        b"irq_disable" | b"irq_enable" | b"preempt_disable" | b"preempt_enable" => {
            let (caller, parent) = caller_parent(b, s)?;
            match name {
                b"irq_disable" => Kind::IrqDisable { caller, parent },
                b"irq_enable" => Kind::IrqEnable { caller, parent },
                b"preempt_disable" => Kind::PreemptDisable { caller, parent },
                _ => Kind::PreemptEnable { caller, parent },
            }
        }
        _ => return None,
    })
}

/// Workqueue events.
fn work_body(name: &[u8], b: &[u8], s: &mut Interner) -> Option<Kind> {
    Some(match name {
        b"workqueue_queue_work" => Kind::WorkQueue {
            work: work_ptr(b)?,
            function: work_function(b, s),
            workqueue: field(b, b"workqueue")
                .map(|w| s.intern_bytes(w))
                .unwrap_or(Sym::EMPTY),
            req_cpu: int(b, b"req_cpu").unwrap_or(-1) as i32,
            cpu: int(b, b"cpu").unwrap_or(-1) as i32,
        },
        b"workqueue_activate_work" => Kind::WorkActivate {
            work: work_ptr(b)?,
            function: work_function(b, s),
        },
        b"workqueue_execute_start" => Kind::WorkStart {
            work: work_ptr(b)?,
            function: work_function(b, s),
        },
        b"workqueue_execute_end" => Kind::WorkEnd {
            work: work_ptr(b)?,
            function: work_function(b, s),
        },
        _ => return None,
    })
}

/// hrtimer and timer-wheel events.
fn timer_body(name: &[u8], b: &[u8], s: &mut Interner) -> Option<Kind> {
    Some(match name {
        b"hrtimer_start" => Kind::HrtimerStart {
            timer: hexval(b, b"hrtimer")?,
            function: func_sym(s, field(b, b"function")?),
            expires_ns: int(b, b"expires")?.max(0) as u64,
            softexpires_ns: int(b, b"softexpires").unwrap_or(0).max(0) as u64,
        },
        b"hrtimer_expire_entry" => Kind::HrtimerExpireEntry {
            timer: hexval(b, b"hrtimer")?,
            function: field(b, b"function")
                .map(|f| func_sym(s, f))
                .unwrap_or(Sym::EMPTY),
            now_ns: int(b, b"now").map(|v| v.max(0) as u64),
        },
        b"hrtimer_expire_exit" => Kind::HrtimerExpireExit {
            timer: hexval(b, b"hrtimer")?,
        },
        b"hrtimer_cancel" => Kind::HrtimerCancel {
            timer: hexval(b, b"hrtimer")?,
        },
        b"timer_start" => Kind::TimerStart {
            timer: hexval(b, b"timer")?,
            function: func_sym(s, field(b, b"function")?),
            expires: int(b, b"expires")?.max(0) as u64,
        },
        b"timer_expire_entry" => Kind::TimerExpireEntry {
            timer: hexval(b, b"timer")?,
            function: field(b, b"function")
                .map(|f| func_sym(s, f))
                .unwrap_or(Sym::EMPTY),
            now: int(b, b"now")?.max(0) as u64,
        },
        b"timer_expire_exit" => Kind::TimerExpireExit {
            timer: hexval(b, b"timer")?,
        },
        b"timer_cancel" => Kind::TimerCancel {
            timer: hexval(b, b"timer")?,
        },
        _ => return None,
    })
}

/// Console messages and trace_printk / trace_marker writes.
fn print_body(name: &[u8], b: &[u8], s: &mut Interner) -> Option<Kind> {
    Some(match name {
        b"console" => Kind::Console {
            msg: String::from_utf8_lossy(trim(b)).into(),
        },
        b"print" | b"tracing_mark_write" | b"0" => {
            // ftrace prints `print: <ip>: msg` on some kernels, `print: msg` on others;
            // perf shows `ip=0x… buf=msg`.
            let t = trim(b);
            let msg = if let Some(buf) = field(t, b"buf") {
                buf
            } else if let Some(rest) = strip_ip_prefix(t) {
                rest
            } else {
                t
            };
            Kind::Print {
                name: s.intern_bytes(name),
                msg: String::from_utf8_lossy(msg).into(),
            }
        }
        _ => return None,
    })
}

/// `tracing_mark_write: msg` sometimes carries the caller first: `0xffff…: msg` or
/// `func+0x10/0x20: msg`.
fn strip_ip_prefix(t: &[u8]) -> Option<&[u8]> {
    let colon = memchr::memmem::find(t, b": ")?;
    let head = &t[..colon];
    // LISA's kernels print the ip with a trailing `s`: `0xffff00000819ff24s: msg`.
    let hex = head.strip_suffix(b"s").unwrap_or(head);
    let is_ip = hex.starts_with(b"0x") && hex[2..].iter().all(|c| c.is_ascii_hexdigit())
        || (head.contains(&b'+') && head.contains(&b'/') && !head.contains(&b' '));
    is_ip.then(|| &t[colon + 2..])
}

/// ftrace prints syscall tracepoints with their own functions, not `name: fields`:
/// `sys_openat(dfd: 0xffffff9c, ...)` on entry and `sys_openat -> 0x3` on exit. Recognises
/// such a body (the text after the timestamp) and returns the typed kind.
pub fn ftrace_syscall(text: &[u8], s: &mut Interner) -> Option<Kind> {
    let rest = text.strip_prefix(b"sys_")?;
    let end = rest
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))?;
    let call = &rest[..end];
    let tail = &rest[end..];
    if tail.starts_with(b"(") {
        Some(Kind::SyscallEnter {
            name: s.intern_bytes(call),
            args: syscall_args(tail, s)?,
        })
    } else if tail.starts_with(b" -> ") {
        Some(Kind::SyscallExit {
            name: s.intern_bytes(call),
            ret: syscall_ret(tail)?,
        })
    } else {
        None
    }
}

/// Softirq vector name (`NET_RX`) for reports.
pub fn softirq_name(vec: u8) -> &'static str {
    SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?")
}

/// Parses a decimal unsigned value, used by readers for pids and cpus.
pub(crate) fn dec(b: &[u8]) -> Option<u64> {
    parse_u64(b)
}

/// A CPU column's number, when it is one: truncating 2^32 to CPU 0 would put the event
/// on a CPU it never ran on (u32::MAX stands for "no CPU").
pub(crate) fn cpu_num(v: u64) -> Option<u32> {
    u32::try_from(v).ok().filter(|&c| c != u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sys_exit_exact_agrees_with_the_general_parse() {
        let nums = [
            "0",
            "-0",
            "1",
            "-2",
            "+3",
            "123456789012345678",
            "1234567890123456789",
            "",
        ];
        let mut exact = 0;
        for nr in nums {
            for ret in nums {
                for sep in [" = ", " =  ", "= ", " = "] {
                    for tail in ["", " ", "x"] {
                        let t = format!("NR {nr}{sep}{ret}{tail}");
                        if let Some(k) = sys_exit_exact(t.as_bytes()) {
                            exact += 1;
                            assert_eq!(Some(k), sys_exit_general(t.as_bytes()), "{t}");
                        }
                    }
                }
            }
        }
        assert!(exact > 20);
    }

    /// The eight-digits-at-a-time path reads what the general loop reads, on generated
    /// argument lists of every shape: lengths 0-18, both cases, odd separators, `0x`.
    #[test]
    fn sys_enter_exact_agrees_with_the_general_loop() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (mut exact, mut total) = (0, 0);
        for _ in 0..50_000 {
            let mut t = format!(
                "NR {}",
                ["16", "-1", "0", "123456789012345678901"][rnd(4) as usize]
            );
            t += [" (", "(", " ( "][(rnd(10) / 8) as usize];
            let k = rnd(8);
            for a in 0..k {
                let len = rnd(19) as usize;
                let digits: String = (0..len)
                    .map(|_| b"0123456789abcdefABF"[rnd(19) as usize] as char)
                    .collect();
                if rnd(20) == 0 {
                    t += "0x";
                }
                t += &digits;
                if a + 1 < k {
                    t += [", ", ", ", ",", " , ", ",  "][rnd(5) as usize];
                }
            }
            t += [")", ")", ") x", "", ",)"][rnd(5) as usize];
            total += 1;
            let b = t.as_bytes();
            if let Some(k) = sys_enter_exact(b) {
                exact += 1;
                assert_eq!(Some(k), sys_enter_general(b), "{t}");
            }
        }
        assert!(exact > 1000, "{exact} of {total}");
    }

    /// The in-order readers are shortcuts: for the kernel's layouts they must give what
    /// the key lookup gives.
    #[test]
    fn in_order_switch_and_wake_match_the_key_lookup() {
        let switches = [
            "prev_comm=kworker/u8:2 prev_pid=4510 prev_prio=120 prev_state=I ==> next_comm=frobdev next_pid=7832 next_prio=120",
            "prev_comm=Web Content prev_pid=2711 prev_prio=120 prev_state=R+ ==> next_comm=swapper/3 next_pid=0 next_prio=-51",
            "prev_comm=a prev_pid=1 prev_prio=120 prev_state=D|K ==> next_comm= next_pid=2 next_prio=120",
        ];
        for b in switches {
            let mut s1 = Interner::new();
            let mut s2 = Interner::new();
            let fast = switch_in_order(b.as_bytes(), &mut s1).expect(b);
            let pc = s2.intern_bytes(field(b.as_bytes(), b"prev_comm").unwrap());
            let nc = s2.intern_bytes(field(b.as_bytes(), b"next_comm").unwrap());
            let Kind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } = fast
            else {
                panic!("{b}")
            };
            assert_eq!(s1.get(prev_comm), s2.get(pc), "{b}");
            assert_eq!(s1.get(next_comm), s2.get(nc), "{b}");
            assert_eq!(Some(prev_pid as i64), int(b.as_bytes(), b"prev_pid"));
            assert_eq!(Some(prev_prio as i64), int(b.as_bytes(), b"prev_prio"));
            assert_eq!(Some(next_pid as i64), int(b.as_bytes(), b"next_pid"));
            assert_eq!(Some(next_prio as i64), int(b.as_bytes(), b"next_prio"));
            let st = field(b.as_bytes(), b"prev_state").unwrap();
            let st = TaskState::parse(st.split(|c| *c == b' ').next().unwrap()).unwrap();
            assert_eq!(prev_state, st, "{b}");
        }
        for b in [
            "comm=frobdev pid=7832 prio=120 target_cpu=000",
            "comm=Web Content pid=2711 prio=120 success=1 target_cpu=003",
        ] {
            let mut s1 = Interner::new();
            let (c, pid, prio, cpu) = wake_in_order(b.as_bytes(), &mut s1).expect(b);
            assert_eq!(s1.get(c).as_bytes(), field(b.as_bytes(), b"comm").unwrap());
            assert_eq!(Some(pid as i64), int(b.as_bytes(), b"pid"));
            assert_eq!(Some(prio as i64), int(b.as_bytes(), b"prio"));
            assert_eq!(Some(cpu as i64), int(b.as_bytes(), b"target_cpu"));
        }
        // Other layouts are left to the key lookup.
        let mut s = Interner::new();
        for b in [
            "prev_comm=a prev_pid=1 prev_prio=120 prev_state=1 next_comm=b next_pid=2 next_prio=120",
            "a:1 [120] S ==> b:2 [120]",
            "prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120 extra=1",
        ] {
            assert!(switch_in_order(b.as_bytes(), &mut s).is_none(), "{b}");
            assert!(sched_switch(b.as_bytes(), &mut s).is_some(), "{b}");
        }
        assert!(wake_in_order(b"pid=1 comm=a prio=1 target_cpu=0", &mut s).is_none());
    }

    #[test]
    fn field_finds_keys_at_boundaries_only() {
        let b = b"xpid=9 comm=a b pid=3 (irq=4) ,vec=2";
        // `xpid` is not `pid`: the key must start the text or follow a separator.
        assert_eq!(int(b, b"pid"), Some(3));
        assert_eq!(field(b, b"comm"), Some(&b"a b"[..]));
        assert!(field(b, b"irq").is_some_and(|v| v.starts_with(b"4")));
        assert_eq!(int(b, b"vec"), Some(2));
        assert_eq!(field(b, b"nope"), None);
        assert_eq!(field(b"=1 a=2", b"a"), Some(&b"2"[..]));
    }

    fn k(name: &str, body: &str) -> (Kind, Interner) {
        let mut s = Interner::new();
        let kind = parse_body(name.as_bytes(), body.as_bytes(), &mut s).expect(body);
        (kind, s)
    }

    #[test]
    fn switch_raw_and_plugin_agree() {
        let (a, sa) = k("sched_switch", "prev_comm=Web Content prev_pid=2711 prev_prio=120 prev_state=R+ ==> next_comm=kworker/0:1 next_pid=142 next_prio=120");
        let (b, sb) = k(
            "sched_switch",
            "Web Content:2711 [120] R+ ==> kworker/0:1:142 [120]",
        );
        match (a, b) {
            (
                Kind::SchedSwitch {
                    prev_comm: pa,
                    prev_pid: 2711,
                    prev_state: sta,
                    next_comm: na,
                    next_pid: 142,
                    ..
                },
                Kind::SchedSwitch {
                    prev_comm: pb,
                    prev_state: stb,
                    next_comm: nb,
                    next_pid: 142,
                    ..
                },
            ) => {
                assert_eq!(sa.get(pa), "Web Content");
                assert_eq!(sb.get(pb), "Web Content");
                assert_eq!(sa.get(na), "kworker/0:1");
                assert_eq!(sb.get(nb), "kworker/0:1");
                assert!(sta.is_runnable() && stb.is_runnable());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn raw_numeric_state_without_arrow() {
        let (a, _) = k("sched_switch", "prev_comm=sh prev_pid=1642 prev_prio=120 prev_state=1 next_comm=swapper/0 next_pid=0 next_prio=120");
        assert!(matches!(
            a,
            Kind::SchedSwitch {
                prev_state: TaskState::Numeric(1),
                next_pid: 0,
                ..
            }
        ));
    }

    #[test]
    fn work_and_syscalls() {
        let (w, s) = k("workqueue_queue_work", "work struct=0xffff88081e452810 function=flush_to_ldisc workqueue=0xffff88082ec0ac00 req_cpu=256 cpu=0");
        match w {
            Kind::WorkQueue {
                work,
                function,
                req_cpu: 256,
                cpu: 0,
                ..
            } => {
                assert_eq!(work, 0xffff88081e452810);
                assert_eq!(s.get(function), "flush_to_ldisc");
            }
            o => panic!("{o:?}"),
        }
        let (w, s) = k(
            "workqueue_execute_start",
            "work struct 0xffff88081e452810: function flush_to_ldisc",
        );
        assert!(
            matches!(w, Kind::WorkStart { work: 0xffff88081e452810, function } if s.get(function) == "flush_to_ldisc")
        );
        let (e, _) = k("sys_enter", "NR 33 (b, 1, 56399569e9bc, 0, 7, b)");
        assert_eq!(
            e,
            Kind::SysEnter {
                nr: 33,
                args: [0xb, 1, 0x56399569e9bc, 0, 7, 0xb]
            }
        );
        let (x, _) = k("sys_exit", "NR 0 = -11");
        assert_eq!(x, Kind::SysExit { nr: 0, ret: -11 });
        let (r, s) = k(
            "sys_enter_read",
            "fd: 0x00000007, buf: 0x01f417c4, count: 0x00007fff",
        );
        match r {
            Kind::SyscallEnter { name, args } => {
                assert_eq!(s.get(name), "read");
                assert_eq!(s.get(args[2].0), "count");
                assert_eq!(args[2].1, 0x7fff);
            }
            o => panic!("{o:?}"),
        }
        let (r, _) = k("sys_exit_read", "0x1");
        assert!(matches!(r, Kind::SyscallExit { ret: 1, .. }));
        let mut s = Interner::new();
        assert!(matches!(
            ftrace_syscall(b"sys_openat -> 0xfffffffffffffffe", &mut s),
            Some(Kind::SyscallExit { ret: -2, .. })
        ));
    }

    #[test]
    fn stat_irq_softirq() {
        let (a, _) = k(
            "sched_stat_wait",
            "comm=kworker/0:1 pid=142 delay=2683863 [ns]",
        );
        assert!(matches!(
            a,
            Kind::SchedStat {
                stat: SchedStat::Wait,
                pid: 142,
                delay_ns: 2683863,
                ..
            }
        ));
        let (v, _) = k("softirq_exit", "vec=6 [action=TASKLET]");
        assert_eq!(v, Kind::SoftirqExit { vec: 6 });
        let (i, s) = k("irq_handler_entry", "irq=96 name=hpvsa0");
        assert!(matches!(i, Kind::IrqEntry { irq: 96, name } if s.get(name) == "hpvsa0"));
        let (d, s) = k(
            "irq_disable",
            "caller=console_unlock+0xc0/0x510 parent=vprintk_emit+0x134/0x1d0",
        );
        assert!(matches!(d, Kind::IrqDisable { caller, .. } if s.get(caller) == "console_unlock"));
    }
}
