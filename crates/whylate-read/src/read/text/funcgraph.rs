//! function_graph text in any column combination:
//!
//! ```text
//!  [abstime |] [cpu)] [comm-pid |] [flags |] [mark duration us] |  <indent>body
//! ```
//!
//! Bodies: `f() {`, `f();` (a leaf: entry and exit), `}` / `} /* f */`, args and return
//! values of 6.5+ (`f(a=1) {`, `f(); /* = 0x0 */`), `/* event: ... */` comments. Banners
//! (`------` task switches, `=====>` IRQ markers) update the per-CPU task and are not events.
//! Without the abstime column the tracer printed no timestamps: each CPU's clock is then
//! rebuilt by adding up the printed durations (a leaf advances it by its duration, a
//! closing brace puts it at its entry plus its duration), so calls keep their exact
//! durations and their order; gaps between calls are unknown, and
//! [`crate::read::Diag::no_timestamps`] says so. The bare layout of a pasted excerpt (no
//! CPU, no task, only `duration |  call`) is read the same way, with `...` elisions counted.

use super::body::{dec, trim};
use super::ftrace::{parse_latency_header, probe_latency_line, FtraceParser};
use super::grammar::{event_kind, parse_flags, parse_secs};
use super::graph::{duration, func_name};
use crate::event::{parse_i64, Event, Kind, Sym};
use crate::read::declare::{Build, Reader, Sniff, Vote};
use crate::read::format::Format;
use crate::read::source::{Cx, LineParser};
use rustc_hash::FxHashMap;

/// `3)` prefix → (cpu, remainder).
fn cpu_col(seg: &[u8]) -> Option<(u32, &[u8])> {
    let t = trim(seg);
    let p = memchr::memchr(b')', t)?;
    let cpu = super::body::cpu_num(dec(&t[..p])?)?;
    Some((cpu, &t[p + 1..]))
}

fn proc_col(seg: &[u8]) -> Option<(&[u8], i32)> {
    let t = trim(seg);
    let dash = memchr::memrchr(b'-', t)?;
    let pid = parse_i64(&t[dash + 1..])? as i32;
    (dash > 0).then_some((&t[..dash], pid))
}

struct Cols<'a> {
    ts: Option<u64>,
    cpu: Option<u32>,
    proc: Option<(&'a [u8], i32)>,
    flags: u16,
    duration: Option<u64>,
    body: &'a [u8],
}

/// Reads the columns left of the body. None when the line is not a graph line.
fn columns(line: &[u8]) -> Option<Cols<'_>> {
    let mut c = Cols {
        ts: None,
        cpu: None,
        proc: None,
        flags: 0,
        duration: None,
        body: b"",
    };
    let mut pos = 0;
    for _ in 0..6 {
        let bar = pos + memchr::memchr(b'|', &line[pos..])?;
        let seg = &line[pos..bar];
        let t = trim(seg);
        let next = bar + 1;
        if t.is_empty() {
            c.body = &line[next..];
            return Some(c);
        }
        if let Some(d) = duration(t) {
            c.duration = Some(d);
            c.body = &line[next..];
            return Some(c);
        }
        if c.ts.is_none() && c.cpu.is_none() {
            if let Some(ts) = parse_secs(t) {
                c.ts = Some(ts);
                pos = next;
                continue;
            }
            // `REL TIME` of latency-format graphs: `  3750 us`.
            if let Some(us) = t.strip_suffix(b" us").and_then(|v| dec(trim(v))) {
                c.ts = Some(us * 1000);
                pos = next;
                continue;
            }
        }
        if c.cpu.is_none() {
            if let Some((cpu, rest)) = cpu_col(seg) {
                c.cpu = Some(cpu);
                let r = trim(rest);
                if r.is_empty() {
                    c.body = &line[next..];
                    return Some(c);
                }
                if let Some(d) = duration(r) {
                    c.duration = Some(d);
                    c.body = &line[next..];
                    return Some(c);
                }
                c.proc = Some(proc_col(r)?);
                pos = next;
                continue;
            }
        }
        if c.proc.is_some() {
            if let Some(f) = parse_flags(t) {
                c.flags = f;
                pos = next;
                continue;
            }
        }
        if c.proc.is_none() {
            if let Some(p) = proc_col(t) {
                c.proc = Some(p);
                pos = next;
                continue;
            }
        }
        return None;
    }
    None
}

/// function_graph tracer text: its column header or `# tracer:` line decides.
pub(crate) const FUNCTION_GRAPH: Reader = Reader {
    format: Format::FunctionGraph,
    arg: "function-graph",
    sniff: Sniff {
        priority: 3,
        header: Some(|h| {
            h.tracer() == Some(b"function_graph")
                || (h.comments.iter()).any(|c| memchr::memmem::find(c, b"FUNCTION CALLS").is_some())
        }),
        line: Some(Vote {
            probe,
            rank: 5,
            only: None,
        }),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Text(|_| Box::new(FuncGraphParser::new())),
};

impl Format {
    /// function_graph tracer text.
    #[allow(non_upper_case_globals)]
    pub const FunctionGraph: Format = Format::named("function-graph");
}

/// Does `line` look like a function_graph line? With a CPU column any graph body will do;
/// the bare layout (`  1.836 us   |    io_serial_in();`) must read as a call or a brace.
pub(crate) fn probe(line: &[u8]) -> bool {
    columns(line).is_some_and(|c| {
        let b = trim(c.body);
        let graph_body =
            b.ends_with(b"{") || b.ends_with(b";") || b.starts_with(b"}") || b.ends_with(b"*/");
        if c.cpu.is_some() {
            return graph_body;
        }
        c.ts.is_none() && c.proc.is_none() && bare_call(b)
    })
}

/// `f() {`, `f();`, `f(args);`, `}`, `} /* f */`: a body of the bare layout.
fn bare_call(b: &[u8]) -> bool {
    if b.starts_with(b"}") {
        return true;
    }
    let Some(open) = memchr::memchr(b'(', b) else {
        return false;
    };
    let name = &b[..open];
    !name.is_empty()
        && name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$'))
        && (b.ends_with(b") {") || b.ends_with(b";"))
}

/// A pasted excerpt's elision: `...` or `…` alone on a line.
fn elision(t: &[u8]) -> bool {
    (t.len() >= 3 && t.iter().all(|c| *c == b'.')) || t == "…".as_bytes()
}

#[derive(Default)]
struct CpuState {
    /// Open calls: function, depth and entry time.
    stack: Vec<(Sym, u16, u64)>,
    task: Option<(Sym, i32)>,
    /// The rebuilt clock of a graph without timestamps, ns.
    clock: u64,
}

pub(crate) struct FuncGraphParser {
    cpus: FxHashMap<u32, CpuState>,
    /// Latency-format graphs end with plain latency records (`<stack trace>` and its
    /// ` => sym` lines); those go to the ftrace parser.
    plain: FtraceParser,
    in_plain: bool,
}

impl FuncGraphParser {
    pub fn new() -> Self {
        FuncGraphParser {
            cpus: FxHashMap::default(),
            plain: FtraceParser::new(),
            in_plain: false,
        }
    }
}

impl LineParser for FuncGraphParser {
    fn finish(&mut self, cx: &mut Cx<'_>) {
        self.plain.finish(cx);
    }

    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>) {
        let t = trim(line);
        if t.is_empty() {
            return;
        }
        if let Some(c) = t.strip_prefix(b"#") {
            cx.diag.comment_lines += 1;
            let c = trim(c);
            if let Some(l) = c.strip_prefix(b"latency:") {
                cx.diag.header.latency = Some(parse_latency_header(l));
            } else if let Some(tr) = c.strip_prefix(b"tracer:") {
                cx.diag.header.tracer = Some(String::from_utf8_lossy(trim(tr)).into_owned());
            }
            return;
        }
        if elision(t) {
            cx.diag.elided_lines += 1;
            return;
        }
        if t.len() > 10 && t.iter().all(|c| *c == b'-') {
            cx.diag.continuation_lines += 1;
            return;
        }
        // ` 0)  platfor-3210  =>  vmstat-2854  ` between banners: a task switch.
        if let Some(p) = memchr::memmem::find(t, b"=>") {
            if let Some((cpu, _)) = cpu_col(&t[..p]) {
                if let Some((comm, pid)) = proc_col(&t[p + 2..]) {
                    let comm = cx.strings.intern_bytes(comm);
                    self.cpus.entry(cpu).or_default().task = Some((comm, pid));
                    cx.diag.continuation_lines += 1;
                    return;
                }
            }
        }
        if memchr::memmem::find(t, b"==========>").is_some()
            || memchr::memmem::find(t, b"<==========").is_some()
        {
            // IRQ entry/exit markers.
            cx.diag.continuation_lines += 1;
            return;
        }
        if (self.in_plain && t.starts_with(b"=>")) || probe_latency_line(line) {
            self.in_plain = true;
            self.plain.line(line, cx);
            return;
        }
        self.in_plain = false;
        let Some(c) = columns(line) else {
            // Prose around a pasted trace has no column bars; a line with a cpu column and
            // bars that fails is a bad graph line.
            if memchr::memchr(b'|', line).is_some() && cpu_col(line).is_some() {
                cx.diag.bad(
                    cx.lineno,
                    line,
                    "expected `[time |] cpu) [task |] [flags |] [duration] |  call`",
                );
            } else {
                cx.diag.skipped_lines += 1;
            }
            return;
        };
        let body_raw = c.body;
        let indent = body_raw.iter().take_while(|c| **c == b' ').count();
        let depth = (indent.saturating_sub(2) / 2) as u16;
        let body = trim(body_raw);
        if body.is_empty() {
            cx.diag.bad(
                cx.lineno,
                line,
                "expected a function call after the columns",
            );
            return;
        }
        let cpu = c.cpu.unwrap_or(crate::event::Event::NO_CPU);
        let st = self.cpus.entry(cpu).or_default();
        let (comm, tid) = match c.proc {
            Some((comm, pid)) => (cx.strings.intern_bytes(comm), pid),
            None => st.task.unwrap_or((Sym::EMPTY, -1)),
        };
        if c.ts.is_none() {
            cx.diag.no_timestamps = true;
        }
        let ts = c.ts.unwrap_or(st.clock);
        let rebuilt = c.ts.is_none();
        let mk = |ts, kind| Event {
            ts,
            cpu,
            tid,
            tgid: -1,
            comm,
            flags: c.flags,
            kind,
        };
        if let Some(inner) = body.strip_prefix(b"/*") {
            let inner = trim(inner.strip_suffix(b"*/").unwrap_or(inner));
            let kind = event_kind(inner, comm, cx).unwrap_or_else(|| Kind::Print {
                name: cx.strings.intern("trace_printk"),
                msg: String::from_utf8_lossy(inner).into(),
            });
            cx.out.push_back(mk(ts, kind));
            return;
        }
        if body.starts_with(b"}") {
            let (ts, func) = close(st, (body, depth), (ts, rebuilt, c.duration), cx);
            cx.out.push_back(mk(
                ts,
                Kind::FuncExit {
                    func,
                    depth,
                    duration_ns: c.duration,
                },
            ));
            return;
        }
        let name = func_name(body);
        if name.is_empty() {
            cx.diag.bad(
                cx.lineno,
                line,
                "expected a function call after the columns",
            );
            return;
        }
        let func = cx.strings.intern_bytes(name);
        while st.stack.last().is_some_and(|(_, d, _)| *d >= depth) {
            st.stack.pop();
        }
        if body.ends_with(b"{") {
            st.stack.push((func, depth, ts));
            cx.out.push_back(mk(ts, Kind::FuncEntry { func, depth }));
        } else {
            if rebuilt {
                st.clock += c.duration.unwrap_or(0);
            }
            cx.out.push_back(mk(ts, Kind::FuncEntry { func, depth }));
            // The exit keeps the entry's time (its duration is in the event), so it stays
            // next to its entry whatever the timestamps' resolution.
            cx.out.push_back(mk(
                ts,
                Kind::FuncExit {
                    func,
                    depth,
                    duration_ns: c.duration,
                },
            ));
        }
    }
}

/// A closing brace at `depth`: its time (rebuilt from its entry and duration when the
/// graph has no time column) and its function (named by `} /* f */`, else its entry's).
fn close(
    st: &mut CpuState,
    (body, depth): (&[u8], u16),
    (ts, rebuilt, duration): (u64, bool, Option<u64>),
    cx: &mut Cx<'_>,
) -> (u64, Sym) {
    while st.stack.last().is_some_and(|(_, d, _)| *d > depth) {
        st.stack.pop();
    }
    let open = if st.stack.last().is_some_and(|(_, d, _)| *d == depth) {
        st.stack.pop()
    } else {
        None
    };
    let ts = if rebuilt {
        // At its entry plus its duration, never before what already happened; an exit
        // whose entry is not in the excerpt starts at 0 at the earliest.
        let entered = open.map_or(0, |(_, _, t)| t);
        st.clock = st.clock.max(entered + duration.unwrap_or(0));
        st.clock
    } else {
        ts
    };
    // `} /* f */` or `} /* f = 0x0 */` names the function itself.
    let named = memchr::memmem::find(body, b"/*").map(|p| {
        let n = trim(&body[p + 2..]);
        let n = n.strip_suffix(b"*/").map(trim).unwrap_or(n);
        func_name(n)
    });
    let func = match named {
        Some(n) if !n.is_empty() => cx.strings.intern_bytes(n),
        _ => open.map_or(Sym::EMPTY, |(f, _, _)| f),
    };
    (ts, func)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Interner;
    use crate::read::Diag;
    use std::collections::VecDeque;

    fn run(text: &str) -> (Vec<Event>, Diag, Interner) {
        let mut s = Interner::new();
        let mut out = VecDeque::new();
        let mut d = Diag::default();
        let mut p = FuncGraphParser::new();
        for (i, l) in text.lines().enumerate() {
            let mut cx = Cx {
                strings: &mut s,
                out: &mut out,
                diag: &mut d,
                lineno: i as u64 + 1,
            };
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

    #[test]
    fn plain_and_full_columns() {
        let (ev, d, s) = run("\
 0)               |  sys_open() {
 0)   1.382 us    |    __might_sleep();
 0) + 11.719 us   |  }
 ------------------------------------------
 0)  platfor-3210  =>  vmstat-2854
 ------------------------------------------
 0)   ==========> |
  384.905506 |   1)   ping-1556    |  d..2 | + 15.986 us   |  finish_task_switch();
  384.905625 |   1)   ping-1556    |  .... |   9.156 us    |  } /* ext4_bread_batch */
        3 us |   0)   bash-1507    |  d..2 |   0.351 us    |              in_task_stack();
0)    sh-4802     | + 49.370 us   |                }
    bash-1507    0d..1 3792us : <stack trace>
 => free_debug_processing
 => __slab_free
");
        assert_eq!(d.unparsed, 0, "{:?}", d.unparsed_samples);
        // The last is the stack block's event.
        assert_eq!(ev.len(), 11);
        assert!(
            matches!(&ev[10].kind, Kind::Other { fields, .. } if &**fields == "=> free_debug_processing => __slab_free")
        );
        assert!(matches!(ev[0].kind, Kind::FuncEntry { depth: 0, .. }));
        assert!(matches!(
            ev[2].kind,
            Kind::FuncExit {
                depth: 1,
                duration_ns: Some(1382),
                ..
            }
        ));
        assert!(
            matches!(ev[3].kind, Kind::FuncExit { func, duration_ns: Some(11719), .. } if s.get(func) == "sys_open")
        );
        assert_eq!(ev[4].ts, 384_905_506_000);
        // A leaf's exit keeps its entry's time; the duration is in the event.
        assert_eq!(ev[5].ts, 384_905_506_000);
        assert!(matches!(
            ev[5].kind,
            Kind::FuncExit {
                duration_ns: Some(15_986),
                ..
            }
        ));
        assert_eq!(s.get(ev[4].comm), "ping");
        assert!(
            matches!(ev[6].kind, Kind::FuncExit { func, .. } if s.get(func) == "ext4_bread_batch")
        );
        assert_eq!(ev[7].ts, 3000);
        assert_eq!(ev[7].tid, 1507);
        assert!(matches!(ev[9].kind, Kind::FuncExit { depth: 7, .. }));
        assert_eq!(ev[9].tid, 4802);
        assert!(d.no_timestamps);
        assert_eq!(d.continuation_lines, 7);
    }
}
