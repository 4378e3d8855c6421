//! ftrace-family text: the kernel's `trace`/`trace_pipe`, `trace-cmd report` (default, `-R`,
//! `-l`, plugin rewrites) and latency-tracer dumps. They share one line grammar:
//!
//! ```text
//!   comm-pid [(tgid)] [cpu] [flags] sec.usec: name: body      ftrace, trace-cmd report
//!   comm-pid  <cpu><flags>  sec.usec: name: body              trace-cmd report -l
//!   comm-pid  <cpu><flags>  <n>us<mark>: body                  latency-tracer dumps
//! ```
//!
//! The timestamp is found first (the first `:` preceded by a number), then the columns to
//! its left are read right to left, so comms with spaces, dashes and colons stay whole.

use super::body::{dec, trim};
use super::grammar::{
    comm_pid, event_kind, find_stamp, parse_flags, parse_prefix, secs_stamp, Prefix, StampKind,
};
use super::memo::{NameMemo, PrefixMemo};
use crate::event::{parse_i64, Event, Interner, Kind, Sym};
use crate::read::declare::{Build, Reader, Sniff, Vote};
use crate::read::format::Format;
use crate::read::source::{Cx, LineParser};
use crate::read::stack;
use crate::read::LatencyHeader;

/// ftrace's own `trace` / `trace_pipe` text.
pub(crate) const FTRACE: Reader = Reader {
    format: Format::Ftrace,
    arg: "ftrace",
    sniff: Sniff {
        priority: 6,
        line: Some(Vote {
            probe,
            rank: 1,
            only: None,
        }),
        // An input of headers alone (`# tracer: nop` and no event yet).
        lone: Some(|h| h.tracer().is_some()),
        ..Sniff::NONE
    },
    split: true,
    build: Build::Text(|_| Box::new(FtraceParser::new())),
};

/// `trace-cmd report`'s text: ftrace's lines under its own header lines.
pub(crate) const TRACE_CMD_REPORT: Reader = Reader {
    format: Format::TraceCmdReport,
    arg: "trace-cmd-report",
    sniff: Sniff {
        priority: 5,
        line: Some(Vote {
            probe,
            // Ahead of ftrace, whose lines these are.
            rank: 0,
            only: Some(|h| !h.headers.is_empty()),
        }),
        lone: Some(|h| !h.headers.is_empty()),
        ..Sniff::NONE
    },
    split: true,
    build: Build::Text(|_| Box::new(FtraceParser::new())),
};

/// A latency tracer's dump (irqsoff, wakeup...): its `# latency:` header decides.
pub(crate) const LATENCY_TRACER: Reader = Reader {
    format: Format::LatencyTracer,
    arg: "latency-tracer",
    sniff: Sniff {
        priority: 4,
        header: Some(|h| h.comments.iter().any(|c| c.starts_with(b"latency:"))),
        line: Some(Vote {
            probe: probe_latency_line,
            rank: 2,
            only: None,
        }),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Text(|_| Box::new(FtraceParser::new())),
};

impl Format {
    /// ftrace `trace` / `trace_pipe` text.
    #[allow(non_upper_case_globals)]
    pub const Ftrace: Format = Format::named("ftrace");
    /// `trace-cmd report` text (any of its layouts).
    #[allow(non_upper_case_globals)]
    pub const TraceCmdReport: Format = Format::named("trace-cmd-report");
    /// A latency-tracer dump (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt...).
    #[allow(non_upper_case_globals)]
    pub const LatencyTracer: Format = Format::named("latency-tracer");
}

/// Does `line` look like ftrace/trace-cmd data (`comm-pid ... [cpu] ... ts: ...`)?
pub(crate) fn probe(line: &[u8]) -> bool {
    match find_stamp(line) {
        Some(st) if st.kind != StampKind::RelativeUs => parse_prefix(&line[..st.start])
            .is_some_and(|p| p.cpu.is_some() && memchr::memchr(b'[', &line[..st.start]).is_some()),
        _ => false,
    }
}

/// Does `line` look like a latency-format line (`comm-pid 2d..1 259us+: ...`)?
pub(crate) fn probe_latency_line(line: &[u8]) -> bool {
    match find_stamp(line) {
        Some(st) if st.kind == StampKind::RelativeUs => parse_prefix(&line[..st.start]).is_some(),
        _ => false,
    }
}

/// The ftrace-family line parser.
pub(crate) struct FtraceParser {
    pending_lost: Vec<(u32, Option<u64>)>,
    last_ts: u64,
    stack: Option<Box<OpenStack>>,
    cols: PrefixMemo<Cols>,
    names: NameMemo,
}

impl FtraceParser {
    pub fn new() -> Self {
        FtraceParser {
            pending_lost: Vec::new(),
            last_ts: 0,
            stack: None,
            cols: PrefixMemo::new(),
            names: NameMemo::new(),
        }
    }

    fn header(&mut self, c: &[u8], cx: &mut Cx<'_>) {
        let c = trim(c);
        let h = &mut cx.diag.header;
        if let Some(t) = c.strip_prefix(b"tracer:") {
            h.tracer = Some(String::from_utf8_lossy(trim(t)).into_owned());
        } else if let Some(p) = memchr::memmem::find(c, b"entries-in-buffer/entries-written:") {
            let rest = trim(&c[p + 34..]);
            let sp = rest.iter().position(|x| *x == b' ').unwrap_or(rest.len());
            if let Some((e, w)) = split2(&rest[..sp], b'/') {
                h.entries_in_buffer = dec(e);
                h.entries_written = dec(w);
            }
            if let Some(p) = memchr::memmem::find(rest, b"#P:") {
                h.cpus = dec(trim(&rest[p + 3..])).and_then(super::body::cpu_num);
            }
        } else if let Some(l) = c.strip_prefix(b"latency:") {
            h.latency = Some(parse_latency_header(l));
        } else if let Some(t) = c.strip_prefix(b"| task:") {
            if let Some(lat) = h.latency.as_mut() {
                let t = trim(t);
                let end = t.iter().position(|x| *x == b' ').unwrap_or(t.len());
                let task = &t[..end];
                lat.task = Some(String::from_utf8_lossy(task).into_owned());
                lat.pid = comm_pid(task).map(|(_, p)| p);
            }
        } else if let Some(t) = c.strip_prefix(b"=> started at:") {
            if let Some(lat) = h.latency.as_mut() {
                lat.started_at = Some(String::from_utf8_lossy(trim(t)).into_owned());
            }
        } else if let Some(t) = c.strip_prefix(b"=> ended at:") {
            if let Some(lat) = h.latency.as_mut() {
                lat.ended_at = Some(String::from_utf8_lossy(trim(t)).into_owned());
            }
        }
    }

    fn lost(&mut self, cpu: u32, count: Option<u64>) {
        self.pending_lost.push((cpu, count));
    }

    /// Called for every event: the check stays inline, the rare work does not.
    #[inline(always)]
    fn flush_lost(&mut self, ts: u64, cx: &mut Cx<'_>) {
        if !self.pending_lost.is_empty() {
            self.push_lost(ts, cx);
        }
    }

    #[inline(never)]
    fn push_lost(&mut self, ts: u64, cx: &mut Cx<'_>) {
        for (cpu, count) in self.pending_lost.drain(..) {
            cx.out.push_back(Event::lost(ts, cpu, count));
        }
    }
}

fn split2(b: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let p = memchr::memchr(sep, b)?;
    Some((&b[..p], &b[p + 1..]))
}

/// `259 us, #4/4, CPU#2 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:4)`.
pub(crate) fn parse_latency_header(l: &[u8]) -> LatencyHeader {
    let l = trim(l);
    let mut h = LatencyHeader::default();
    let sp = l.iter().position(|c| *c == b' ').unwrap_or(l.len());
    h.latency_us = dec(&l[..sp]).unwrap_or(0);
    if let Some(p) = memchr::memchr(b'#', l) {
        let r = &l[p + 1..];
        let end = r.iter().position(|c| *c == b',').unwrap_or(r.len());
        if let Some((a, b)) = split2(&r[..end], b'/') {
            h.entries = dec(a).unwrap_or(0);
            h.entries_total = dec(b).unwrap_or(0);
        }
    }
    if let Some(p) = memchr::memmem::find(l, b"CPU#") {
        let r = &l[p + 4..];
        let end = r
            .iter()
            .position(|c| !c.is_ascii_digit())
            .unwrap_or(r.len());
        h.cpu = dec(&r[..end]).and_then(super::body::cpu_num);
    }
    if let Some(p) = memchr::memmem::find(l, b"(M:") {
        let r = &l[p + 3..];
        let end = r.iter().position(|c| *c == b' ').unwrap_or(r.len());
        h.model = Some(String::from_utf8_lossy(&r[..end]).into_owned());
    }
    h
}

/// `CPU:3 [LOST 812 EVENTS]` / `CPU:3 [812 EVENTS DROPPED]`.
fn lost_line(l: &[u8]) -> Option<(u32, u64)> {
    let r = l.strip_prefix(b"CPU:")?;
    let sp = r.iter().position(|c| *c == b' ')?;
    let cpu = super::body::cpu_num(dec(&r[..sp])?)?;
    let rest = trim(&r[sp..]);
    let inner = rest.strip_prefix(b"[")?.strip_suffix(b"]")?;
    let n = if let Some(x) = inner.strip_prefix(b"LOST ") {
        x.strip_suffix(b" EVENTS")?
    } else {
        inner.strip_suffix(b" EVENTS DROPPED")?
    };
    Some((cpu, dec(n)?))
}

/// A line's columns left of the time, with the comm interned: what [`PrefixMemo`] keeps.
#[derive(Clone, Copy)]
struct Cols {
    comm: Sym,
    pid: i32,
    tgid: i32,
    cpu: u32,
    flags: u16,
}

impl Cols {
    fn of(p: &Prefix<'_>, s: &mut Interner) -> Cols {
        Cols {
            comm: s.intern_bytes(p.comm),
            pid: p.pid,
            tgid: p.tgid,
            cpu: p.cpu.unwrap_or(Event::NO_CPU),
            flags: p.flags,
        }
    }
}

/// The event of a line whose columns were `c`.
fn event_at(c: &Cols, ts: u64, kind: Kind) -> Event {
    Event {
        ts,
        cpu: c.cpu,
        tid: c.pid,
        tgid: c.tgid,
        comm: c.comm,
        flags: c.flags,
        kind,
    }
}

/// The standard ftrace line `comm-pid [(tgid)] [cpu] [flags] secs.frac: rest` in one
/// right-to-left walk from the first `": "`; None sends the line to the general path.
/// Strict on purpose: anything unusual (latency format, counter clocks, headers) fails
/// here and is classified by [`FtraceParser::line`]'s full checks. Returns the columns,
/// the time, the colon's index and where the time word starts; the columns depend on the
/// bytes before that start alone (what [`PrefixMemo`] relies on).
fn fast(line: &[u8]) -> Option<(Prefix<'_>, u64, usize, usize)> {
    let (s, colon, ts) = secs_stamp(line)?;
    let back = |mut e: usize| {
        while e > 0 && line[e - 1] == b' ' {
            e -= 1;
        }
        e
    };
    let mut e = back(s);
    let mut flags = 0;
    if e > 0 && line[e - 1] != b']' {
        let f = line[..e].iter().rposition(|&c| c == b' ')? + 1;
        flags = parse_flags(&line[f..e])?;
        e = back(f);
    }
    if e == 0 || line[e - 1] != b']' {
        return None;
    }
    let close = e - 1;
    let open = line[..close].iter().rposition(|&c| c == b'[')? + 1;
    let cpu = super::body::cpu_num(dec(&line[open..close])?)?;
    e = back(open - 1);
    let mut tgid = -1;
    if e > 0 && line[e - 1] == b')' {
        let lp = line[..e - 1].iter().rposition(|&c| c == b'(')?;
        let t = trim(&line[lp + 1..e - 1]);
        if !t.iter().all(|c| *c == b'-') {
            tgid = i32::try_from(parse_i64(t)?).ok()?;
        }
        e = back(lp);
    }
    let dash = line[..e].iter().rposition(|&c| c == b'-')?;
    let pid = i32::try_from(parse_i64(&line[dash + 1..e])?).ok()?;
    let start = crate::read::text::body::skip_spaces(line);
    // Lines the general path classifies by their start (comments, stack lines, headers)
    // stay with it even if they hold a stamp.
    if start > dash {
        return None;
    }
    let head = &line[start..];
    let special = match head[0] {
        b'#' | b'[' => true,
        b'=' => head.starts_with(b"=>"),
        b'c' => head.starts_with(b"cpus="),
        b'v' => head.starts_with(b"version = "),
        b'C' => head.starts_with(b"CPU"),
        _ => false,
    };
    if special {
        return None;
    }
    Some((
        Prefix {
            comm: trim(&line[start..dash]),
            pid,
            tgid,
            cpu: Some(cpu),
            flags,
        },
        ts,
        colon,
        s,
    ))
}

impl LineParser for FtraceParser {
    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>) {
        if let Some((c, colon, ts)) = self.cols.hit(line) {
            self.close_stack(cx);
            return self.event(line, c, ts, colon + 1, cx);
        }
        if let Some((p, ts, colon, s)) = fast(line) {
            self.close_stack(cx);
            let c = Cols::of(&p, cx.strings);
            self.cols.set(&line[..s], c);
            return self.event(line, c, ts, colon + 1, cx);
        }
        if line.is_empty() {
            return;
        }
        let t = trim(line);
        if let Some(r) = t.strip_prefix(b"##### CPU ") {
            // The CPU's buffer (re)started: what came before on it was overwritten.
            let end = r.iter().position(|c| *c == b' ').unwrap_or(r.len());
            if let Some(cpu) = dec(&r[..end]).and_then(super::body::cpu_num) {
                self.lost(cpu, None);
                return;
            }
        }
        if let Some(c) = line.strip_prefix(b"#") {
            cx.diag.comment_lines += 1;
            self.header(c, cx);
            return;
        }
        if t.is_empty() {
            return;
        }
        if let Some(n) = t.strip_prefix(b"cpus=") {
            cx.diag.comment_lines += 1;
            cx.diag.header.cpus = dec(trim(n)).and_then(super::body::cpu_num);
            return;
        }
        if let Some(n) = t.strip_prefix(b"version = ") {
            cx.diag.comment_lines += 1;
            cx.diag.header.version = dec(trim(n)).map(|v| v as u32);
            return;
        }
        if let Some((cpu, n)) = lost_line(t) {
            self.lost(cpu, Some(n));
            return;
        }
        if t.starts_with(b"CPU ") && t.ends_with(b" is empty") {
            cx.diag.comment_lines += 1;
            return;
        }
        if let (Some(open), Some(f)) = (&mut self.stack, t.starts_with(b"=>").then_some(t)) {
            cx.diag.continuation_lines += 1;
            if let Some(name) = std::str::from_utf8(f).ok().and_then(stack::frame) {
                stack::push_frame(&mut open.frames, name);
            }
            return;
        }
        self.close_stack(cx);
        if t == b"[...]" || t.starts_with(b"=> ") {
            cx.diag.skipped_lines += 1;
            return;
        }
        let Some(st) = find_stamp(line) else {
            if memchr::memchr(b'[', line).is_some() && memchr::memchr(b'-', line).is_some() {
                let why =
                    super::grammar::odd_stamp(line).unwrap_or("no timestamp (`sec.usec:`) found");
                cx.diag.bad(cx.lineno, line, why);
            } else {
                cx.diag.skipped_lines += 1;
            }
            return;
        };
        let Some(p) = parse_prefix(&line[..st.start]) else {
            cx.diag.bad(
                cx.lineno,
                line,
                "expected `comm-pid [cpu] flags` before the timestamp",
            );
            return;
        };
        match st.kind {
            StampKind::Counter => cx.diag.raw_clock = true,
            StampKind::RelativeUs => cx.diag.relative_time = true,
            StampKind::Seconds => {}
        }
        let c = Cols::of(&p, cx.strings);
        self.event(line, c, st.ts, st.after, cx);
    }

    fn finish(&mut self, cx: &mut Cx<'_>) {
        self.close_stack(cx);
        let ts = self.last_ts;
        self.flush_lost(ts, cx);
    }

    fn fork(&self) -> Option<Box<dyn LineParser>> {
        Some(Box::new(FtraceParser::new()))
    }

    /// Lost-event lines waiting for the next event's time, and an open stack trace, are
    /// what a boundary would lose. `last_ts` (0: no event yet) only places lost events
    /// at the input's end, and the reader tells a carried parser its value.
    fn rebase(&mut self) -> Option<Box<dyn LineParser>> {
        let last_ts = std::mem::take(&mut self.last_ts);
        if self.pending_lost.is_empty() && self.stack.is_none() {
            return None;
        }
        let carried = FtraceParser {
            pending_lost: std::mem::take(&mut self.pending_lost),
            last_ts,
            stack: self.stack.take(),
            ..FtraceParser::new()
        };
        Some(Box::new(carried))
    }

    fn continue_after(&mut self, ts: u64) {
        if self.last_ts == 0 {
            self.last_ts = ts;
        }
    }
}

/// A stack block being read: its header line's columns and time, the frames so far.
/// The comm is kept as text: a block open at a chunk's end is finished by a parser with
/// another interner.
struct OpenStack {
    comm: Box<str>,
    c: Cols,
    ts: u64,
    frames: String,
}

impl FtraceParser {
    /// Ends the open stack block, if any: its event (frames innermost first) follows the
    /// event it belongs to.
    fn close_stack(&mut self, cx: &mut Cx<'_>) {
        let Some(open) = self.stack.take() else {
            return;
        };
        if open.frames.is_empty() {
            return;
        }
        let mut c = open.c;
        c.comm = cx.strings.intern(&open.comm);
        let kind = Kind::Other {
            name: cx.strings.intern(stack::EVENT),
            fields: open.frames.into(),
        };
        cx.out.push_back(event_at(&c, open.ts, kind));
    }

    /// Everything after the time: `rest` starts at `line[after]`.
    fn event(&mut self, line: &[u8], c: Cols, ts: u64, after: usize, cx: &mut Cx<'_>) {
        let rest = &line[after..];
        // `name: fields`, the common case, straight to its typed parser. funcgraph
        // records printed by trace-cmd take the graph path below.
        if let Some(n) = self.names.split(rest) {
            if !n.bare.starts_with(b"funcgraph_e") && !n.bare.starts_with(b"kernel_stack") {
                let kind = n.kind(cx);
                self.flush_lost(ts, cx);
                self.last_ts = ts;
                cx.out.push_back(event_at(&c, ts, kind));
                return;
            }
        }
        let comm = c.comm;
        if stack::is_header(rest) {
            self.close_stack(cx);
            // Named here, not at its end, so the interner's order is one pass's however
            // the input is cut into chunks.
            cx.strings.intern(stack::EVENT);
            self.stack = Some(Box::new(OpenStack {
                comm: cx.strings.get(c.comm).into(),
                c,
                ts,
                frames: String::new(),
            }));
            cx.diag.continuation_lines += 1;
            return;
        }
        let restt = trim(rest);
        if restt.starts_with(b"funcgraph_e") && memchr::memchr(b'|', restt).is_some() {
            let colon = memchr::memchr(b':', restt).unwrap_or(0);
            if let Some(kinds) = super::graph::report_graph_body(&restt[colon + 1..], cx.strings) {
                self.flush_lost(ts, cx);
                self.last_ts = ts;
                // A leaf's exit keeps its entry's time (its duration is in the event):
                // a time `duration` later would sort it after lines the tracer printed
                // later but stamped earlier at its microsecond resolution.
                for kind in kinds {
                    cx.out.push_back(event_at(&c, ts, kind));
                }
                return;
            }
        }
        // The timerlat and osnoise tracers print their own lines, not `name: fields`.
        let kind = match event_kind(rest, comm, cx) {
            Some(k) => Some(k),
            None => super::rtla::tracer_line(restt, cx.strings),
        };
        let Some(kind) = kind else {
            cx.diag.bad(
                cx.lineno,
                line,
                "expected `name: fields` or `func <-parent` after the timestamp",
            );
            return;
        };
        self.flush_lost(ts, cx);
        self.last_ts = ts;
        cx.out.push_back(event_at(&c, ts, kind));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::flags;
    use crate::read::text::grammar::parse_secs;
    use crate::read::Diag;
    use std::collections::VecDeque;

    #[test]
    fn parse_secs_edges() {
        assert_eq!(parse_secs(b"0.5"), Some(500_000_000));
        assert_eq!(parse_secs(b"36612.318705"), Some(36_612_318_705_000));
        assert_eq!(parse_secs(b"155.726554299"), Some(155_726_554_299));
        assert_eq!(parse_secs(b"18446744073.709551615"), Some(u64::MAX));
        assert_eq!(parse_secs(b"18446744073.709551616"), None);
        assert_eq!(parse_secs(b"123456789012.0"), None);
        for bad in [
            &b""[..],
            b"12",
            b"12.",
            b".5",
            b"1.2345678901",
            b"1.2x",
            b"a.1",
            b"1..2",
        ] {
            assert_eq!(parse_secs(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    /// The one-pass walk must read a line exactly as the general path does, and leave
    /// every line it is not sure of to it.
    #[test]
    fn fast_path_agrees_with_the_general_path() {
        let lines = [
            "          <idle>-0       [001] d.h2. 36612.318705: irq_handler_entry: irq=1 name=x",
            "    kworker/u8:2-4510    [000] d..4. 36612.318705: sched_wakeup: comm=a pid=1",
            "     Web Content-2711  ( 2650) [003] d..3 26186.336716: sched_switch: x",
            "  Binder:2030_3-2053  (-------) [002] .... 93115.013234: print: y",
            "            bash-123   [000]    12.5: foo: bar",
            "  <...>-6462 [006] dNs1 14372.743619: hrtimer_cancel: hrtimer=0x1",
            "  a b-c-77 [010] D..1. 1.000000001: e: f",
        ];
        for l in lines {
            let (p, ts, colon, s) = fast(l.as_bytes()).expect(l);
            let st = find_stamp(l.as_bytes()).expect(l);
            let g = parse_prefix(&l.as_bytes()[..st.start]).expect(l);
            assert_eq!((ts, colon + 1, s), (st.ts, st.after, st.start), "{l}");
            assert_eq!(
                (p.comm, p.pid, p.tgid, p.cpu, p.flags),
                (g.comm, g.pid, g.tgid, g.cpu, g.flags),
                "{l}"
            );
        }
        let general_only = [
            "# tracer: nop",
            "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
            "  <idle>-0       0d.h2  259us+: irq_handler_entry: irq=1",
            "  <idle>-0 [001] 123456789: sched_switch: counter clock",
            " => __schedule+0x1/0x2 bash-1 [000] 1.5: x: y",
            "cpus=4 bash-1 [000] 1.5: x: y",
            "version = 6 bash-1 [000] 1.5: x: y",
            "CPU:3 [LOST 812 EVENTS]",
            "##### CPU 2 buffer started ####",
            "bash-1 [000 1.5: x: y",
            "bash [000] 1.5: x: y",
        ];
        for l in general_only {
            assert!(fast(l.as_bytes()).is_none(), "{l}");
        }
    }

    fn run(text: &str) -> (Vec<Event>, Diag, Interner) {
        let mut s = Interner::new();
        let mut out = VecDeque::new();
        let mut d = Diag::default();
        let mut p = FtraceParser::new();
        for (i, l) in text.lines().enumerate() {
            let mut cx = Cx {
                strings: &mut s,
                out: &mut out,
                diag: &mut d,
                lineno: i as u64 + 1,
            };
            d_lines(&mut cx);
            p.line(l.as_bytes(), &mut cx);
        }
        let mut cx = Cx {
            strings: &mut s,
            out: &mut out,
            diag: &mut d,
            lineno: 0,
        };
        p.finish(&mut cx);
        (out.into_iter().collect(), d, s)
    }
    fn d_lines(cx: &mut Cx<'_>) {
        cx.diag.lines += 1;
    }

    /// PREEMPT_RT's 7 columns in tracefs text, trace-cmd report and a latency tracer's
    /// dump (CPU glued to the flags), as RT kernels print them.
    #[test]
    fn preempt_rt_flag_columns() {
        let text = "\
       swapper/0-1       [002] ....1..     0.831928: sched_process_free: comm=mkdir pid=3060 prio=120
     cyclictest-217   [000] dn.h413   150.000001: irq_handler_entry: irq=36 name=virtio1-req.0
  stress-n-232       0dn.h413    1us+: sched_waking: comm=cyclictest pid=217 prio=0 target_cpu=000
";
        let (ev, d, _) = run(text);
        assert_eq!(d.unparsed, 0, "{:?}", d.unparsed_samples);
        assert_eq!(ev.len(), 3);
        assert_eq!(
            (ev[0].cpu, ev[0].preempt_depth(), ev[0].migrate_disable()),
            (2, Some(1), Some(0))
        );
        for e in &ev[1..] {
            assert_eq!(
                e.flags & (flags::IRQS_OFF | flags::HARDIRQ),
                flags::IRQS_OFF | flags::HARDIRQ
            );
            assert_eq!((e.preempt_depth(), e.migrate_disable()), (Some(4), Some(3)));
        }
    }

    #[test]
    fn column_variants() {
        let text = "\
            bash-3062    (   3062) [000] d.h2.   147.995012: sched_stat_runtime: comm=bash pid=3062 runtime=3989466 [ns]
          <idle>-0       (-------) [001] ..s1.   147.995029: sched_process_free: comm=mkdir pid=3060 prio=120
 Web Content-2711  [003] d..2  1234.567890: sched_switch: prev_comm=Web Content prev_pid=2711 prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120
Binder:2030_3-2053  [001] ...1 25.000001: sys_enter: NR 16 (13, 2400, 0, 7f76e462b5e0, 1, 0)
  kworker/u8:0-ev-12  [001] dL.1. 150.256531: irq_handler_entry: irq=36 name=virtio1-req.0
       trace-cmd-2932  [000]  3171.776783: sched_switch:         trace-cmd:2932 [120] S ==> swapper/0:0 [120]
trace-cm-1394    1d..2  2535.384253: sched_switch: prev_comm=trace-cmd prev_pid=1394 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
            bash-3089    [000] .....   150.249715: sys_openat(dfd: 0xffffff9c, filename: 0x5639cc2e79c0, flags: 0x241, mode: 0x1b6)
            bash-3089    [000] .....   150.249716: sys_openat -> 0x3
          <idle>-0     [000] d.s2 12345678901: workqueue_activate_work: work struct 00000000a3bf4fca
            sh-42 [000] .... 10.000000: do_sys_open <-sys_open
CPU:1 [LOST 812 EVENTS]
##### CPU 2 buffer started ####
           <...>-19999 [001] d..3  1234.000002: sched_wake_idle_without_ipi: cpu=2
";
        let (ev, d, s) = run(text);
        assert_eq!(d.unparsed, 0, "{:?}", d.unparsed_samples);
        assert_eq!(ev.len(), 14);
        assert_eq!(ev[0].tgid, 3062);
        assert_eq!(ev[0].flags & flags::HARDIRQ, flags::HARDIRQ);
        assert_eq!(ev[0].preempt_depth(), Some(2));
        assert_eq!(s.get(ev[1].comm), "<idle>");
        assert_eq!(ev[1].tgid, -1);
        assert_eq!(s.get(ev[2].comm), "Web Content");
        assert_eq!(ev[2].tid, 2711);
        assert_eq!(ev[2].ts, 1_234_567_890_000);
        assert_eq!(s.get(ev[3].comm), "Binder:2030_3");
        assert_eq!(s.get(ev[4].comm), "kworker/u8:0-ev");
        assert_eq!(ev[4].tid, 12);
        assert!(ev[4].flags & flags::NEED_RESCHED_LAZY != 0);
        assert!(matches!(
            ev[5].kind,
            Kind::SchedSwitch { prev_pid: 2932, .. }
        ));
        assert_eq!(ev[6].cpu, 1);
        assert!(matches!(
            ev[6].kind,
            Kind::SchedSwitch { prev_pid: 1394, .. }
        ));
        assert!(matches!(ev[7].kind, Kind::SyscallEnter { .. }));
        assert!(matches!(ev[8].kind, Kind::SyscallExit { ret: 3, .. }));
        assert_eq!(ev[9].ts, 12345678901);
        assert!(d.raw_clock);
        assert!(matches!(ev[10].kind, Kind::Function { .. }));
        assert_eq!(ev[11].kind, Kind::Lost { count: Some(812) });
        assert_eq!(ev[11].cpu, 1);
        assert_eq!(ev[12].kind, Kind::Lost { count: None });
        assert_eq!(ev[12].ts, ev[13].ts);
    }

    /// trace-cmd report's stack (`kernel_stack: <stack trace >`, frames at the line's
    /// start with their address) reads as ftrace's; a block with no frames is no event.
    #[test]
    fn trace_cmd_stack_blocks() {
        let text = "\
 timerlat/1-901   [001]   100.050065: timerlat:             #51    context thread timer_latency     65000 ns
 timerlat/1-901   [001]   100.050065: kernel_stack:         <stack trace >
=> _raw_spin_unlock_irqrestore+0x1d/0x40 (ffffffff81a0b2cd)
=> frob_poll (ffffffffc0a01234)
 timerlat/1-901   [001]   100.050070: <stack trace>
 timerlat/1-901   [001]   100.050071: sys_exit: NR 1 = 5
";
        let (ev, d, s) = run(text);
        assert_eq!(d.unparsed, 0, "{:?}", d.unparsed_samples);
        assert_eq!(ev.len(), 3);
        assert!(
            matches!(&ev[1].kind, Kind::Other { name, fields } if s.get(*name) == "kernel_stack" && &**fields == "=> _raw_spin_unlock_irqrestore => frob_poll")
        );
        assert_eq!((ev[1].ts, ev[1].cpu), (100_050_065_000, 1));
        assert_eq!(d.continuation_lines, 4);
    }

    #[test]
    fn latency_dump() {
        let text = "\
# tracer: irqsoff
# latency: 259 us, #4/4, CPU#2 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:4)
#    | task: ps-6143 (uid:0 nice:0 policy:0 rt_prio:0)
#  => started at: __lock_task_sighand
#  => ended at:   _raw_spin_unlock_irqrestore
      ps-6143    2d...    0us!: trace_hardirqs_off <-__lock_task_sighand
      ps-6143    2d..1  259us+: trace_hardirqs_on <-_raw_spin_unlock_irqrestore
      ps-6143    2d..1  306us : <stack trace>
 => trace_hardirqs_on_caller
 => sys_read
  <idle>-0       2d.h4    0us :      0:120:R   + [002]  5882: 94:R sleep
  <idle>-0       2d..3    6us :      0:120:R ==> [002]  5882: 94:R sleep
<idle>-0 0d.H3 6us : irq_handler_exit: irq=20 ret=handled
";
        let (ev, d, s) = run(text);
        assert_eq!(d.unparsed, 0, "{:?}", d.unparsed_samples);
        let lat = d.header.latency.unwrap();
        assert_eq!(lat.latency_us, 259);
        assert_eq!((lat.entries, lat.entries_total, lat.cpu), (4, 4, Some(2)));
        assert_eq!(lat.pid, Some(6143));
        assert_eq!(lat.started_at.as_deref(), Some("__lock_task_sighand"));
        assert_eq!(ev.len(), 6);
        assert_eq!(ev[1].ts, 259_000);
        assert_eq!(ev[1].cpu, 2);
        // The stack block is one event after the one it belongs to, at its line's time.
        assert!(
            matches!(&ev[2].kind, Kind::Other { name, fields } if s.get(*name) == "kernel_stack" && &**fields == "=> trace_hardirqs_on_caller => sys_read")
        );
        assert_eq!((ev[2].ts, ev[2].tid, ev[2].cpu), (306_000, 6143, 2));
        assert!(
            matches!(ev[3].kind, Kind::SchedWakeup { pid: 5882, prio: 94, target_cpu: 2, comm, .. } if s.get(comm) == "sleep")
        );
        assert!(matches!(
            ev[4].kind,
            Kind::SchedSwitch { next_pid: 5882, .. }
        ));
        assert!(matches!(ev[5].kind, Kind::IrqExit { irq: 20, .. }));
        assert_eq!(d.continuation_lines, 3);
    }
}
