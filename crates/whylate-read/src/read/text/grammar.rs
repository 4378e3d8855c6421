//! The line grammar the ftrace-like text formats share (ftrace, trace-cmd report,
//! perf script, function_graph, systrace): timestamps, the `comm-pid [cpu] flags` prefix,
//! and an event's `name: body` resolved to a typed [`Kind`] (or kept untyped).

use crate::event::{flags, parse_hex, parse_i64, Interner, Kind, Sym, TaskState};
use crate::read::source::Cx;
use crate::read::text::body::{dec, ftrace_syscall, parse_body, trim};
/// Where the timestamp is and what kind it is.
pub(crate) struct Stamp {
    /// Start of the time token.
    pub start: usize,
    /// Index just after the `:` that ends it.
    pub after: usize,
    /// ns (or raw ticks / relative µs·1000, see `kind`).
    pub ts: u64,
    pub kind: StampKind,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum StampKind {
    /// `sec.frac`.
    Seconds,
    /// Plain integer: a counter clock.
    Counter,
    /// `<n>us` of a latency dump (relative).
    RelativeUs,
}

/// `123.456789` → ns. Fraction of 1 to 9 digits.
#[inline]
pub(crate) fn parse_secs(t: &[u8]) -> Option<u64> {
    secs_prefix(t).and_then(|(ns, n)| (n == t.len()).then_some(ns))
}

/// The `secs.frac` that `t` starts with (1 to 11 integer digits, 1 to 9 fraction digits,
/// the runs taken whole): its ns and its length.
#[inline(always)]
pub(crate) fn secs_prefix(t: &[u8]) -> Option<(u64, usize)> {
    const SCALE: [u64; 10] = [
        1_000_000_000,
        100_000_000,
        10_000_000,
        1_000_000,
        100_000,
        10_000,
        1_000,
        100,
        10,
        1,
    ];
    // Decimal digits from `i`: their value and where they end. No overflow checks
    // inside: the callers stop at 11 and 9 digits (u64 ns end at 18446744073 s).
    let digits = |mut i: usize, max: usize| {
        let (start, mut v) = (i, 0u64);
        while let Some(d) = t.get(i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9) {
            if i - start == max {
                return None;
            }
            v = v * 10 + d as u64;
            i += 1;
        }
        (i > start).then_some((v, i))
    };
    let (secs, dot) = digits(0, 11)?;
    if t.get(dot) != Some(&b'.') {
        return None;
    }
    let (frac, end) = digits(dot + 1, 9)?;
    let ns = secs
        .checked_mul(1_000_000_000)?
        .checked_add(frac * SCALE[end - dot - 1])?;
    Some((ns, end))
}

/// Finds the time token: the first `:` whose preceding word is a number (`123.456:`,
/// `123456:`) or a latency stamp (`12us+:`, `12us :`).
pub(crate) fn find_stamp(line: &[u8]) -> Option<Stamp> {
    // The stamp's colon is usually within the first 60 bytes: a plain loop avoids memchr's
    // per-call setup on this hot, short scan.
    let colons = line
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == b':')
        .map(|(i, _)| i);
    for colon in colons {
        if colon == 0 {
            continue;
        }
        // The colon must end the token: followed by space or end of line.
        if colon + 1 < line.len() && line[colon + 1] != b' ' && line[colon + 1] != b'\t' {
            continue;
        }
        let mut end = colon;
        // Latency dumps: `  259us+:` / `  306us :` — a mark (or space) after `us`.
        if end >= 3
            && matches!(
                line[end - 1],
                b' ' | b'+' | b'!' | b'#' | b'*' | b'@' | b'$'
            )
        {
            if line[..end - 1].ends_with(b"us") {
                let us_end = end - 3;
                let start = word_start(line, us_end);
                if let Some(v) = dec(&line[start..us_end]) {
                    return Some(Stamp {
                        start,
                        after: colon + 1,
                        ts: v.saturating_mul(1000),
                        kind: StampKind::RelativeUs,
                    });
                }
            }
            continue;
        }
        if line[..end].ends_with(b"us") {
            // `0us:` without a mark column.
            end -= 2;
            let start = word_start(line, end);
            if let Some(v) = dec(&line[start..end]) {
                return Some(Stamp {
                    start,
                    after: colon + 1,
                    ts: v.saturating_mul(1000),
                    kind: StampKind::RelativeUs,
                });
            }
            continue;
        }
        let start = word_start(line, end);
        let tok = &line[start..end];
        if tok.is_empty() || start == 0 {
            continue;
        }
        if let Some(ts) = parse_secs(tok) {
            return Some(Stamp {
                start,
                after: colon + 1,
                ts,
                kind: StampKind::Seconds,
            });
        }
        if let Some(ts) = dec(tok) {
            return Some(Stamp {
                start,
                after: colon + 1,
                ts,
                kind: StampKind::Counter,
            });
        }
    }
    None
}

/// Why a line whose stamp was not found has one that cannot be read: a `sec.usec:` token
/// that is negative, or too large for nanoseconds in 64 bits (over 584 years). None when
/// no such token is there.
pub(crate) fn odd_stamp(line: &[u8]) -> Option<&'static str> {
    // Seconds of 2^64 ns: 18446744073.7 s, eleven digits.
    const MAX_SECS: u64 = u64::MAX / 1_000_000_000;
    for (colon, _) in line.iter().enumerate().filter(|(_, c)| **c == b':') {
        let tok = &line[word_start(line, colon)..colon];
        let (neg, t) = match tok.strip_prefix(b"-") {
            Some(t) => (true, t),
            None => (false, tok),
        };
        let Some(dot) = t.iter().position(|&c| c == b'.') else {
            continue;
        };
        let (int, frac) = (&t[..dot], &t[dot + 1..]);
        let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
        if !digits(int) || !digits(frac) {
            continue;
        }
        if neg {
            return Some(
                "a negative timestamp (`-sec.usec:`): times before the clock's zero cannot be read",
            );
        }
        if int.len() > 11 || dec(int).is_none_or(|v| v > MAX_SECS) {
            return Some("a timestamp beyond 2^64 ns (584 years): not a trace clock");
        }
    }
    None
}

pub(crate) fn word_start(line: &[u8], end: usize) -> usize {
    let mut s = end;
    while s > 0 && line[s - 1] != b' ' && line[s - 1] != b'\t' {
        s -= 1;
    }
    s
}

/// Decodes a flags column; None if it is not one. The kernel prints, after the
/// irqs-off and need-resched characters, either the hardirq/softirq one directly (mainline:
/// `d.h2.`, `dNs1`; 4 columns before 5.13 added migrate-disable, 3 with only the context)
/// or, on PREEMPT_RT kernels with lazy preemption, a need-resched-lazy column first and a
/// preempt-lazy depth after the preempt depth: `dn.h413` is irqs-off, need-resched, no lazy
/// request, hardirq, preempt depth 4, lazy depth 1, migrate-disable 3 (7 columns; 6 on RT
/// kernels without migrate-disable). No mainline kernel prints 6 columns, so 6 are read
/// as RT's unless the third is a context letter (then a mainline word with one more
/// column).
pub(crate) fn parse_flags(f: &[u8]) -> Option<u16> {
    if f.len() < 3 || f.len() > 7 {
        return None;
    }
    let lazy_col = f.len() == 7 || (f.len() == 6 && hardsoft(f[2]).is_none_or(|v| v == 0));
    let mut v = flags::KNOWN;
    v |= match f[0] {
        b'd' => flags::IRQS_OFF,
        b'D' => flags::IRQS_OFF | flags::BH_OFF,
        b'b' => flags::BH_OFF,
        b'X' | b'.' => 0,
        _ => return None,
    };
    use flags::{NEED_RESCHED as NR, NEED_RESCHED_LAZY as LZ, PREEMPT_RESCHED as PR};
    v |= match f[1] {
        b'B' => NR | LZ | PR,
        b'N' => NR | PR,
        b'L' => LZ | PR,
        b'b' => NR | LZ,
        b'n' => NR,
        b'p' => PR,
        b'l' => LZ,
        b'.' => 0,
        _ => return None,
    };
    let rest = if lazy_col {
        v |= match f[2] {
            b'L' => LZ,
            b'.' => 0,
            _ => return None,
        };
        &f[3..]
    } else {
        &f[2..]
    };
    v |= hardsoft(rest[0])?;
    // Depth columns: preempt, then (RT) preempt-lazy, then migrate-disable.
    let mut depths = [0u16; 3];
    for (i, &c) in rest[1..].iter().enumerate() {
        depths[i] = match c {
            b'.' => 0,
            b'0'..=b'9' | b'a'..=b'f' => parse_hex(&[c])? as u16,
            _ => return None,
        };
    }
    v |= depths[0] << flags::PREEMPT_SHIFT;
    let migrate = match (lazy_col, rest.len()) {
        (true, 4) => depths[2],
        (false, 3) => depths[1],
        _ => 0,
    };
    Some(v | flags::migrate(migrate))
}

/// The hardirq/softirq/NMI column.
fn hardsoft(c: u8) -> Option<u16> {
    Some(match c {
        b'Z' => flags::NMI | flags::HARDIRQ,
        b'z' => flags::NMI,
        b'H' => flags::HARDIRQ | flags::SOFTIRQ,
        b'h' => flags::HARDIRQ,
        b's' => flags::SOFTIRQ,
        b'.' => 0,
        _ => return None,
    })
}

/// The columns left of the time.
pub(crate) struct Prefix<'a> {
    pub comm: &'a [u8],
    pub pid: i32,
    pub tgid: i32,
    pub cpu: Option<u32>,
    pub flags: u16,
}

/// `comm-pid` (comm may hold anything, the pid is after the last `-`).
pub(crate) fn comm_pid(b: &[u8]) -> Option<(&[u8], i32)> {
    let b = trim(b);
    let dash = memchr::memrchr(b'-', b)?;
    let pid = parse_i64(&b[dash + 1..])?;
    Some((&b[..dash], i32::try_from(pid).ok()?))
}

/// Parses `comm-pid [(tgid)] [cpu] [flags]` or `comm-pid <cpu><flags>`.
pub(crate) fn parse_prefix(left: &[u8]) -> Option<Prefix<'_>> {
    let left = trim(left);
    let mut flags = 0;
    let mut rest = left;
    let cpu;
    if let Some(stripped) = rest.strip_suffix(b"]") {
        let lb = memchr::memrchr(b'[', stripped)?;
        cpu = Some(super::body::cpu_num(dec(&stripped[lb + 1..])?)?);
        rest = &stripped[..lb];
    } else {
        let sp = word_start(rest, rest.len());
        let tok = &rest[sp..];
        let head = trim(&rest[..sp]);
        if head.ends_with(b"]") {
            // `[cpu] flags`
            flags = parse_flags(tok)?;
            let stripped = &head[..head.len() - 1];
            let lb = memchr::memrchr(b'[', stripped)?;
            cpu = Some(super::body::cpu_num(dec(&stripped[lb + 1..])?)?);
            rest = &stripped[..lb];
        } else {
            // `-l` / latency dumps: cpu digits glued to the flags.
            let nd = tok.iter().take_while(|c| c.is_ascii_digit()).count();
            if nd == 0 {
                return None;
            }
            cpu = Some(super::body::cpu_num(dec(&tok[..nd])?)?);
            flags = if nd == tok.len() {
                0
            } else {
                parse_flags(&tok[nd..])?
            };
            rest = head;
        }
    }
    let rest = trim(rest);
    let mut tgid = -1;
    let rest = if let Some(r) = rest.strip_suffix(b")") {
        let lp = memchr::memrchr(b'(', r)?;
        let t = trim(&r[lp + 1..]);
        if !t.iter().all(|c| *c == b'-') {
            tgid = parse_i64(t)? as i32;
        }
        &r[..lp]
    } else {
        rest
    };
    let (comm, pid) = comm_pid(rest)?;
    Some(Prefix {
        comm,
        pid,
        tgid,
        cpu,
        flags,
    })
}

/// The context/wakeup records of latency dumps: `  0:120:R   + [002]  5882: 94:R sleep`
/// (`+` = wakeup) or `==>` (switch).
pub(crate) fn latency_ctx(body: &[u8], line_comm: Sym, s: &mut Interner) -> Option<Kind> {
    let (arrow, wake) = if let Some(p) = memchr::memmem::find(body, b" + [") {
        (p, true)
    } else {
        (memchr::memmem::find(body, b" ==> [")?, false)
    };
    let left = trim(&body[..arrow]);
    let mut lp = left.split(|c| *c == b':');
    let prev_pid = parse_i64(trim(lp.next()?))? as i32;
    let prev_prio = parse_i64(trim(lp.next()?))? as i32;
    let prev_state = TaskState::parse(trim(lp.next()?))?;
    let right = &body[arrow + if wake { 3 } else { 5 }..];
    let rb = memchr::memchr(b']', right)?;
    let cpu = dec(trim(&right[1..rb]))? as i32;
    let r = trim(&right[rb + 1..]);
    let mut rp = r.splitn(3, |c| *c == b':');
    let pid = parse_i64(trim(rp.next()?))? as i32;
    let prio = parse_i64(trim(rp.next()?))? as i32;
    let st_comm = trim(rp.next()?);
    let sp = st_comm.iter().position(|c| *c == b' ')?;
    let comm = s.intern_bytes(trim(&st_comm[sp..]));
    Some(if wake {
        Kind::SchedWakeup {
            comm,
            pid,
            prio,
            target_cpu: cpu,
            new: false,
        }
    } else {
        Kind::SchedSwitch {
            prev_comm: line_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm: comm,
            next_pid: pid,
            next_prio: prio,
        }
    })
}

/// Turns the text after the time into a kind: `name: body`, the function tracer's
/// `func <-parent`, ftrace's own syscall format, or raw funcgraph records.
pub(crate) fn event_kind(rest: &[u8], comm: Sym, cx: &mut Cx<'_>) -> Option<Kind> {
    let rest = trim(rest);
    if rest.is_empty() {
        return None;
    }
    // `name: body`: the name is one word ending in `:` followed by space or end.
    let word_end = rest
        .iter()
        .position(|c| *c == b' ' || *c == b'\t')
        .unwrap_or(rest.len());
    let word = &rest[..word_end];
    if word.len() > 1 && word.ends_with(b":") && !word.contains(&b'(') {
        let name = &word[..word.len() - 1];
        // perf-style `sys:name` → bare name.
        let bare = match memchr::memrchr(b':', name) {
            Some(p) => &name[p + 1..],
            None => name,
        };
        let body = trim(&rest[word_end..]);
        return Some(typed_or_other(bare, body, cx));
    }
    if let Some(k) = ftrace_syscall(rest, cx.strings) {
        return Some(k);
    }
    if let Some(p) = memchr::memmem::find(rest, b" <-") {
        let func = trim(&rest[..p]);
        let parent = trim(&rest[p + 3..]);
        return Some(Kind::Function {
            func: cx.strings.intern_bytes(func),
            parent: cx.strings.intern_bytes(parent),
        });
    }
    if let Some(k) = latency_ctx(rest, comm, cx.strings) {
        return Some(k);
    }
    // The function tracer with `print-parent` off prints the bare symbol.
    if rest
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'/'))
    {
        return Some(Kind::Function {
            func: cx.strings.intern_bytes(rest),
            parent: Sym::EMPTY,
        });
    }
    None
}

/// Typed kind when the name is known and the body has its fields, else `Other`.
pub(crate) fn typed_or_other(name: &[u8], body: &[u8], cx: &mut Cx<'_>) -> Kind {
    if let Some(k) = parse_body(name, body, cx.strings) {
        return k;
    }
    if let Some(k) = raw_funcgraph(name, body, cx.strings) {
        return k;
    }
    if is_known(name) {
        cx.diag.untyped_known += 1;
    }
    Kind::Other {
        name: cx.strings.intern_bytes(name),
        fields: String::from_utf8_lossy(body).into(),
    }
}

pub(crate) fn is_known(name: &[u8]) -> bool {
    matches!(
        name,
        b"sched_switch"
            | b"sched_waking"
            | b"sched_wakeup"
            | b"sched_wakeup_new"
            | b"irq_handler_entry"
            | b"irq_handler_exit"
            | b"softirq_raise"
            | b"softirq_entry"
            | b"softirq_exit"
            | b"workqueue_queue_work"
            | b"workqueue_execute_start"
            | b"workqueue_execute_end"
            | b"sys_enter"
            | b"sys_exit"
            | b"hrtimer_start"
            | b"hrtimer_expire_entry"
    )
}

/// trace-cmd `-R` prints function_graph records raw: `func=0x… depth=N`, exits with
/// `calltime=0x… rettime=0x…`.
pub(crate) fn raw_funcgraph(name: &[u8], body: &[u8], s: &mut Interner) -> Option<Kind> {
    let get = |k: &str| {
        crate::event::fields(std::str::from_utf8(body).ok()?)
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.to_string())
    };
    let num = |v: String| -> Option<u64> {
        let b = v.as_bytes();
        match b.strip_prefix(b"0x") {
            Some(h) => parse_hex(h),
            None => dec(b),
        }
    };
    match name {
        b"funcgraph_entry" => Some(Kind::FuncEntry {
            func: s.intern(&get("func")?),
            depth: num(get("depth")?)? as u16,
        }),
        b"funcgraph_exit" => {
            let call = num(get("calltime")?)?;
            let ret = num(get("rettime")?)?;
            Some(Kind::FuncExit {
                func: s.intern(&get("func")?),
                depth: num(get("depth")?)? as u16,
                duration_ns: ret.checked_sub(call),
            })
        }
        _ => None,
    }
}

/// The fast paths' stamp: the first `": "`, preceded by a `secs.frac` word. Returns the
/// word's start, the colon's index and the time; None if that word is not such a time.
pub(crate) fn secs_stamp(line: &[u8]) -> Option<(usize, usize, u64)> {
    let mut from = 0;
    let colon = loop {
        let c = from + memchr::memchr(b':', &line[from..])?;
        if line.get(c + 1) == Some(&b' ') {
            break c;
        }
        from = c + 1;
    };
    // A few bytes: an iterator scan (no bounds checks) beats memchr's dispatch and setup.
    let s = line[..colon]
        .iter()
        .rposition(|&c| c == b' ')
        .map_or(0, |p| p + 1);
    Some((s, colon, parse_secs(&line[s..colon])?))
}

#[cfg(test)]
mod tests {
    use super::parse_flags;
    use crate::event::flags::*;

    /// (irqs-off, hardirq, softirq, NMI, preempt depth, migrate-disable) of a column.
    fn meaning(f: &str) -> (bool, bool, bool, bool, u16, u16) {
        let v = parse_flags(f.as_bytes()).unwrap_or_else(|| panic!("{f} not read"));
        assert_ne!(v & KNOWN, 0);
        (
            v & IRQS_OFF != 0,
            v & HARDIRQ != 0,
            v & SOFTIRQ != 0,
            v & NMI != 0,
            (v >> PREEMPT_SHIFT) & 0xf,
            (v >> MIGRATE_SHIFT) & MIGRATE_MASK,
        )
    }

    #[test]
    fn every_flag_layout_the_kernel_prints_means_the_same() {
        // Interrupts off in a hardirq, preempt depth 4, migrate-disable 3, as printed by
        // a 3-column (old), 4-column (before 5.13), 5-column (mainline) and PREEMPT_RT
        // 6-column (lazy, no migrate-disable) and 7-column (lazy) kernel. The RT lines
        // are as rtla and the wakeup_rt tracer print them: `0dn.h413`, `....1..`.
        let irq = (true, true, false, false, 4, 3);
        let no_migrate = (true, true, false, false, 4, 0);
        assert_eq!(meaning("dnh"), (true, true, false, false, 0, 0));
        assert_eq!(meaning("dnh4"), no_migrate);
        assert_eq!(meaning("dnh43"), irq);
        assert_eq!(meaning("dn.h41"), no_migrate);
        assert_eq!(meaning("d...2."), (true, false, false, false, 2, 0));
        assert_eq!(meaning("d.h2.."), (true, true, false, false, 2, 0));
        assert_eq!(meaning("dn.h413"), irq);
        assert_eq!(meaning("dLLh413"), irq);
        assert_eq!(meaning("....1.."), (false, false, false, false, 1, 0));
        assert_eq!(meaning("dn.h5.."), (true, true, false, false, 5, 0));
        assert_eq!(meaning("..Ls2.1"), (false, false, true, false, 2, 1));
        assert_eq!(meaning("d..Z1.."), (true, true, false, true, 1, 0));
        // A lazy request in the RT column is the same bit as mainline's combined `L`.
        let lazy = |f: &str| parse_flags(f.as_bytes()).unwrap() & NEED_RESCHED_LAZY != 0;
        assert!(lazy(".L...") && lazy("..L....") && !lazy("dn.h413"));
        // A depth of 8 and more says "disabled", saturated.
        assert_eq!(meaning("....1.f").5, 7);
        for bad in [
            "", "dn", "dnh43..x", "dnXh413", "dn.q413", "dn.h4g3", "qn.h413",
        ] {
            assert_eq!(parse_flags(bad.as_bytes()), None, "{bad}");
        }
    }
}
