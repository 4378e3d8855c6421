//! `perf script` text:
//!
//! ```text
//!   comm  pid[/tid] [cpu] sec.usec[nsec]: [period] [sys:]event: body
//!   \taddr sym+off (dso)          callchain lines, then a blank line
//! ```
//!
//! The comm is unpadded with callchains, and may hold spaces; the pid is the last word before
//! `[cpu]` (or before the time when the cpu column is off).

use super::body::{dec, skip_spaces, trim};
use super::grammar::{find_stamp, typed_or_other, StampKind};
use super::memo::{NameMemo, PrefixMemo};
use crate::event::{parse_i64, Event, Interner, Kind, Sym};
use crate::read::declare::{Build, Reader, Sniff, Vote};
use crate::read::format::Format;
use crate::read::source::{Cx, LineParser};

struct Head<'a> {
    comm: &'a [u8],
    pid: i32,
    tid: i32,
    /// The line used the `pid/tid` form, so `pid` is the thread group id.
    has_tgid: bool,
    cpu: Option<u32>,
}

/// Fast path for the common sample line `comm pid[/tid] [cpu] secs.frac: [period] ev: body`,
/// in one right-to-left walk from the first `": "`. None means "use the general path".
/// Also returns where the time word starts: the head depends on the bytes before it alone
/// (what [`PrefixMemo`] relies on).
fn fast(line: &[u8]) -> Option<(Head<'_>, u64, &[u8], usize)> {
    let (s, colon, ts) = super::grammar::secs_stamp(line)?;
    // `[cpu]`
    let mut e = s;
    while e > 0 && line[e - 1] == b' ' {
        e -= 1;
    }
    let mut cpu = None;
    if e > 0 && line[e - 1] == b']' {
        let close = e - 1;
        let o = line[..close].iter().rposition(|&c| c == b'[')? + 1;
        cpu = Some(super::body::cpu_num(dec(&line[o..close])?)?);
        e = o - 1;
        while e > 0 && line[e - 1] == b' ' {
            e -= 1;
        }
    }
    // pid[/tid]
    let ps = line[..e]
        .iter()
        .rposition(|&c| c == b' ')
        .map_or(0, |p| p + 1);
    let ids = &line[ps..e];
    let slash = ids.iter().position(|&c| c == b'/');
    let (pid, tid) = match slash {
        Some(p) => (parse_i64(&ids[..p])?, parse_i64(&ids[p + 1..])?),
        None => {
            let v = parse_i64(ids)?;
            (v, v)
        }
    };
    let comm = trim(&line[skip_spaces(line)..ps]);
    if comm.is_empty() || comm[0] == b'#' {
        return None;
    }
    Some((
        Head {
            comm,
            pid: pid as i32,
            tid: tid as i32,
            has_tgid: slash.is_some(),
            cpu,
        },
        ts,
        &line[colon + 1..],
        s,
    ))
}

fn head(left: &[u8]) -> Option<Head<'_>> {
    let mut left = trim(left);
    let mut cpu = None;
    if let Some(s) = left.strip_suffix(b"]") {
        let lb = memchr::memrchr(b'[', s)?;
        cpu = Some(super::body::cpu_num(dec(&s[lb + 1..])?)?);
        left = trim(&s[..lb]);
    }
    let sp = left.iter().rposition(|c| *c == b' ' || *c == b'\t')?;
    let ids = &left[sp + 1..];
    let (pid, tid) = match memchr::memchr(b'/', ids) {
        Some(p) => (parse_i64(&ids[..p])?, parse_i64(&ids[p + 1..])?),
        None => {
            let v = parse_i64(ids)?;
            (v, v)
        }
    };
    Some(Head {
        comm: trim(&left[..sp]),
        pid: pid as i32,
        tid: tid as i32,
        has_tgid: ids.contains(&b'/'),
        cpu,
    })
}

/// `perf script` text.
pub(crate) const PERF_SCRIPT: Reader = Reader {
    format: Format::PerfScript,
    arg: "perf-script",
    sniff: Sniff {
        priority: 7,
        line: Some(Vote {
            probe,
            rank: 3,
            only: None,
        }),
        ..Sniff::NONE
    },
    split: true,
    build: Build::Text(|_| Box::new(PerfScriptParser::new())),
};

impl Format {
    /// `perf script` text.
    #[allow(non_upper_case_globals)]
    pub const PerfScript: Format = Format::named("perf-script");
}

/// Does `line` look like a perf script sample?
pub(crate) fn probe(line: &[u8]) -> bool {
    match find_stamp(line) {
        Some(st) if st.kind == StampKind::Seconds => {
            head(&line[..st.start]).is_some() && event_word(&line[st.after..]).is_some()
        }
        _ => false,
    }
}

/// The event name after the time (skipping an optional period) and the text after it.
#[inline]
fn event_word(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut r = rest;
    loop {
        let mut i = 0;
        while i < r.len() && (r[i] == b' ' || r[i] == b'\t') {
            i += 1;
        }
        r = &r[i..];
        // memchr's vector scan beats a byte loop over names as long as
        // `raw_syscalls:sys_enter:`.
        let end = match memchr::memchr2(b' ', b'\t', r) {
            Some(e) => e,
            None => r.len(),
        };
        let w = &r[..end];
        if w.len() > 1 && w[w.len() - 1] == b':' {
            return Some((&w[..w.len() - 1], trim(&r[end..])));
        }
        if !w.is_empty() && w.iter().all(|c| c.is_ascii_digit()) {
            // sample period
            r = &r[end..];
            continue;
        }
        return None;
    }
}

/// perf modifiers (`cycles:u`, `cpu-clock:ppp`) are not a `system:name` split.
fn is_modifier(s: &[u8]) -> bool {
    !s.is_empty()
        && s.iter().all(|c| {
            matches!(
                c,
                b'u' | b'k' | b'h' | b'H' | b'G' | b'p' | b'P' | b'S' | b'D' | b'I' | b'W'
            )
        })
}

/// A sample's columns left of the time, with the comm interned: what [`PrefixMemo`] keeps.
#[derive(Clone, Copy)]
struct Cols {
    comm: Sym,
    pid: i32,
    tid: i32,
    has_tgid: bool,
    cpu: Option<u32>,
}

impl Cols {
    fn of(h: &Head<'_>, s: &mut Interner) -> Cols {
        Cols {
            comm: s.intern_bytes(h.comm),
            pid: h.pid,
            tid: h.tid,
            has_tgid: h.has_tgid,
            cpu: h.cpu,
        }
    }
}

pub(crate) struct PerfScriptParser {
    in_callchain: bool,
    cols: PrefixMemo<Cols>,
    names: NameMemo,
}

impl PerfScriptParser {
    pub fn new() -> Self {
        PerfScriptParser {
            in_callchain: false,
            cols: PrefixMemo::new(),
            names: NameMemo::new(),
        }
    }
}

impl LineParser for PerfScriptParser {
    fn fork(&self) -> Option<Box<dyn LineParser>> {
        Some(Box::new(PerfScriptParser::new()))
    }

    /// Between two samples a parser is in a callchain (every sample opens one, a blank
    /// line closes it): chunks after the first start in one, and only a boundary after a
    /// blank line carries the other state.
    fn rebase(&mut self) -> Option<Box<dyn LineParser>> {
        if std::mem::replace(&mut self.in_callchain, true) {
            return None;
        }
        Some(Box::new(PerfScriptParser::new()))
    }

    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>) {
        // Nearly every line is a sample: try the one-pass parse before classifying.
        if let Some((c, colon, ts)) = self.cols.hit(line) {
            return self.sample(c, ts, &line[colon + 1..], line, cx);
        }
        if let Some((h, ts, after, s)) = fast(line) {
            let c = Cols::of(&h, cx.strings);
            self.cols.set(&line[..s], c);
            return self.sample(c, ts, after, line, cx);
        }
        let t = trim(line);
        if t.is_empty() {
            self.in_callchain = false;
            return;
        }
        if t.starts_with(b"#") {
            cx.diag.comment_lines += 1;
            return;
        }
        // Callchain / brstack lines: indented, start with a hex address.
        if (line[0] == b'\t' || line[0] == b' ')
            && t.iter().take_while(|c| c.is_ascii_hexdigit()).count() >= 4
            && find_stamp(line).is_none_or(|s| s.kind != StampKind::Seconds)
        {
            if self.in_callchain {
                cx.diag.continuation_lines += 1;
            } else {
                cx.diag
                    .bad(cx.lineno, line, "callchain line without a sample");
            }
            return;
        }
        let Some(st) = find_stamp(line).filter(|s| s.kind == StampKind::Seconds) else {
            cx.diag.skipped_lines += 1;
            return;
        };
        let Some(h) = head(&line[..st.start]) else {
            cx.diag.bad(
                cx.lineno,
                line,
                "expected `comm pid[/tid] [cpu]` before the timestamp",
            );
            return;
        };
        let c = Cols::of(&h, cx.strings);
        self.sample(c, st.ts, &line[st.after..], line, cx);
    }
}

impl PerfScriptParser {
    fn sample(&mut self, h: Cols, ts: u64, after: &[u8], line: &[u8], cx: &mut Cx<'_>) {
        let kind = match self.names.split(after) {
            // `system:name: fields`, the common case, straight to its typed parser.
            Some(n) if n.system && !is_modifier(n.bare) => n.kind(cx),
            _ => {
                let Some(k) = general_kind(after, line, cx) else {
                    return;
                };
                k
            }
        };
        self.in_callchain = true;
        cx.out.push_back(Event {
            ts,
            cpu: h.cpu.unwrap_or(Event::NO_CPU),
            tid: h.tid,
            tgid: if h.has_tgid { h.pid } else { -1 },
            comm: h.comm,
            flags: 0,
            kind,
        });
    }
}

/// The general path: a sample period before the name, names without a system,
/// modifiers (`cycles:u`).
fn general_kind(after: &[u8], line: &[u8], cx: &mut Cx<'_>) -> Option<Kind> {
    let Some((name, body)) = event_word(after) else {
        cx.diag
            .bad(cx.lineno, line, "expected `event:` after the timestamp");
        return None;
    };
    Some(match memchr::memrchr(b':', name) {
        Some(p) if !is_modifier(&name[p + 1..]) => typed_or_other(&name[p + 1..], body, cx),
        _ => Kind::Other {
            name: cx.strings.intern_bytes(name),
            fields: String::from_utf8_lossy(body).into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Interner;
    use crate::read::Diag;
    use std::collections::VecDeque;

    #[test]
    fn variants() {
        let text = "\
            perf  3130 [000]   155.726554:            raw_syscalls:sys_enter: NR 16 (13, 2400, 0, 7f76e462b5e0, 1, 0)
            perf  3130/3131  [000]   155.726554299:            raw_syscalls:sys_exit: NR 16 = 0
kworker/0:1   142 [000] 93115.013234: workqueue:workqueue_execute_start: work struct 0xffff88081e452810: function flush_to_ldisc
frobnicator 24483 [001] 93115.013242: syscalls:sys_exit_read: 0x1
Web Content  2711 93115.013243: sched:sched_wakeup: comm=a pid=1 prio=120 target_cpu=000
perf  7496/7496  [003] 264874.155353:    1001001                cpu-clock: 
\tffffffff810d47be smp_call_function_single ([kernel.kallsyms])
\tffffffff8114e5b8 event_function_call ([kernel.kallsyms])

       perf 27484 [000] 93115.326710: cs:  ffffffff8176300a [unknown] ([kernel.kallsyms])
";
        let mut s = Interner::new();
        let mut out = VecDeque::new();
        let mut d = Diag::default();
        let mut p = PerfScriptParser::new();
        for (i, l) in text.lines().enumerate() {
            let mut cx = Cx {
                strings: &mut s,
                out: &mut out,
                diag: &mut d,
                lineno: i as u64 + 1,
            };
            p.line(l.as_bytes(), &mut cx);
        }
        assert_eq!(d.unparsed, 0, "{:?}", d.unparsed_samples);
        assert_eq!(out.len(), 7);
        assert_eq!(out[1].ts, 155_726_554_299);
        assert_eq!((out[1].tgid, out[1].tid), (3130, 3131));
        // Without the pid/tid form there is no tgid, even if the body holds a `/`.
        assert_eq!(out[2].tgid, -1);
        assert_eq!(out[0].tgid, -1);
        assert!(matches!(out[3].kind, Kind::SyscallExit { ret: 1, .. }));
        assert_eq!(s.get(out[4].comm), "Web Content");
        assert_eq!(out[4].cpu, Event::NO_CPU);
        assert!(matches!(out[5].kind, Kind::Other { name, .. } if s.get(name) == "cpu-clock"));
        assert_eq!(d.continuation_lines, 2);
    }
}
