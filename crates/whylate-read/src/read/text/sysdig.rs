//! sysdig text: `num time cpu proc (tid[.vtid]) dir type args`, e.g.
//! `34384 12:02:36.269827674 2 echo (7896) > write fd=1(/dev/pts/3) size=12`.
//!
//! Times are `HH:MM:SS.nnnnnnnnn` (default: wall clock of day; a wrap past midnight adds a
//! day) or `S.nnnnnnnnn` (`-t a`/`-t r`). System calls become `SyscallEnter`/`SyscallExit`
//! (numeric arguments kept; `res=` is the return value); `switch` becomes a `SchedSwitch`
//! whose `prev_state` is unknown (sysdig does not record it).

use super::body::{dec, trim};
use super::grammar::parse_secs;
use crate::event::{parse_num, Event, Kind, Sym, TaskState};
use crate::read::declare::{Build, Reader, Sniff, Vote};
use crate::read::format::Format;
use crate::read::source::{Cx, LineParser};

struct Line<'a> {
    time: &'a [u8],
    cpu: u32,
    proc: &'a [u8],
    tid: i64,
    enter: bool,
    ty: &'a [u8],
    args: &'a [u8],
}

fn split(line: &[u8]) -> Option<Line<'_>> {
    let t = trim(line);
    let mut it = t.splitn(4, |c| *c == b' ');
    let num = it.next()?;
    dec(num)?;
    let time = it.next()?;
    let cpu = super::body::cpu_num(dec(it.next()?)?)?;
    let rest = it.next()?;
    // proc may hold spaces: anchor on `) > ` / `) < `.
    let dir_at = memchr::memmem::find(rest, b") > ")
        .map(|p| (p, true))
        .or_else(|| memchr::memmem::find(rest, b") < ").map(|p| (p, false)))?;
    let (close, enter) = dir_at;
    let open = memchr::memrchr(b'(', &rest[..close])?;
    let tids = &rest[open + 1..close];
    let tid_end = tids.iter().position(|c| *c == b'.').unwrap_or(tids.len());
    let tid = dec(&tids[..tid_end])? as i64;
    let proc = trim(&rest[..open]);
    let after = &rest[close + 4..];
    let sp = after.iter().position(|c| *c == b' ').unwrap_or(after.len());
    Some(Line {
        time,
        cpu,
        proc,
        tid,
        enter,
        ty: &after[..sp],
        args: trim(&after[sp..]),
    })
}

/// sysdig text output.
pub(crate) const SYSDIG: Reader = Reader {
    format: Format::Sysdig,
    arg: "sysdig",
    sniff: Sniff {
        priority: 8,
        line: Some(Vote {
            probe,
            rank: 4,
            only: None,
        }),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Text(|_| Box::new(SysdigParser::new())),
};

impl Format {
    /// sysdig text output.
    #[allow(non_upper_case_globals)]
    pub const Sysdig: Format = Format::named("sysdig");
}

/// Does `line` look like sysdig output?
pub(crate) fn probe(line: &[u8]) -> bool {
    split(line).is_some_and(|l| clock(l.time).is_some())
}

/// `HH:MM:SS.nnnnnnnnn` → (ns of day, true); `S.nnnnnnnnn` → (ns, false).
fn clock(t: &[u8]) -> Option<(u64, bool)> {
    if t.len() > 8 && t[2] == b':' && t[5] == b':' {
        let h = dec(&t[0..2])?;
        let m = dec(&t[3..5])?;
        let s = parse_secs(&t[6..])?;
        return Some(((h * 3600 + m * 60) * 1_000_000_000 + s, true));
    }
    parse_secs(t).map(|v| (v, false))
}

pub(crate) struct SysdigParser {
    day_offset: u64,
    last_tod: u64,
}

impl SysdigParser {
    pub fn new() -> Self {
        SysdigParser {
            day_offset: 0,
            last_tod: 0,
        }
    }
}

/// First number of a sysdig argument value (`1(/dev/pts/3)` → 1, `-11(EAGAIN)` → -11).
fn arg_num(v: &[u8]) -> Option<i64> {
    let end = v.iter().position(|c| *c == b'(').unwrap_or(v.len());
    parse_num(&v[..end])
}

impl LineParser for SysdigParser {
    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>) {
        if trim(line).is_empty() {
            return;
        }
        let Some(l) = split(line) else {
            if trim(line).first().is_some_and(|c| c.is_ascii_digit()) {
                cx.diag.bad(
                    cx.lineno,
                    line,
                    "expected `num time cpu proc (tid) >|< type args`",
                );
            } else {
                cx.diag.skipped_lines += 1;
            }
            return;
        };
        let Some((mut ts, tod)) = clock(l.time) else {
            cx.diag
                .bad(cx.lineno, line, "expected a time `HH:MM:SS.ns` or `S.ns`");
            return;
        };
        if tod {
            // Wall clock of day: a jump back of over 12 h is midnight.
            if ts + 12 * 3600 * 1_000_000_000 < self.last_tod {
                self.day_offset += 24 * 3600 * 1_000_000_000;
            }
            self.last_tod = ts;
            ts += self.day_offset;
        } else if ts < 1_000_000_000_000_000 {
            cx.diag.relative_time = true;
        }
        let comm = cx.strings.intern_bytes(l.proc);
        let s = std::str::from_utf8(l.args).unwrap_or("");
        let kind = if l.ty == b"switch" {
            let mut next_pid = -1;
            let mut next_comm = Sym::EMPTY;
            for (k, v) in crate::event::fields(s) {
                if k == "next" {
                    let vb = v.as_bytes();
                    next_pid = arg_num(vb).unwrap_or(-1) as i32;
                    if let (Some(o), Some(c)) =
                        (memchr::memchr(b'(', vb), memchr::memrchr(b')', vb))
                    {
                        if o < c {
                            next_comm = cx.strings.intern_bytes(&vb[o + 1..c]);
                        }
                    }
                }
            }
            Kind::SchedSwitch {
                prev_comm: comm,
                prev_pid: l.tid as i32,
                prev_prio: 0,
                prev_state: TaskState::Unknown,
                next_comm,
                next_pid,
                next_prio: 0,
            }
        } else if l.ty.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            let name = cx.strings.intern_bytes(l.ty);
            if l.enter {
                let mut args = Vec::new();
                for (k, v) in crate::event::fields(s) {
                    if let Some(n) = arg_num(v.as_bytes()) {
                        args.push((cx.strings.intern(k), n as u64));
                    }
                }
                Kind::SyscallEnter {
                    name,
                    args: args.into_boxed_slice(),
                }
            } else {
                let ret = crate::event::fields(s)
                    .find(|(k, _)| *k == "res")
                    .and_then(|(_, v)| arg_num(v.as_bytes()))
                    .unwrap_or(0);
                Kind::SyscallExit { name, ret }
            }
        } else {
            Kind::Other {
                name: cx.strings.intern_bytes(l.ty),
                fields: s.into(),
            }
        };
        cx.out.push_back(Event {
            ts,
            cpu: l.cpu,
            tid: l.tid as i32,
            tgid: -1,
            comm,
            flags: 0,
            kind,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Interner;
    use crate::read::Diag;
    use std::collections::VecDeque;

    #[test]
    fn lines() {
        let text = "\
34384 12:02:36.269827674 2 echo (7896) > write fd=1(/dev/pts/3) size=12
34385 12:02:36.269830000 2 echo (7896) < write res=12 data=hello
2778 21:14:45.896568110 0 nginx (6232.6232) > switch next=6239(NetworkManager) pgft_maj=0 pgft_min=300 vm_size=15532 vm_rss=5560 vm_swap=0
2779 21:14:45.896568111 0 Web Content (6233) > read fd=7 size=32
";
        let mut s = Interner::new();
        let mut out = VecDeque::new();
        let mut d = Diag::default();
        let mut p = SysdigParser::new();
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
        assert_eq!(out.len(), 4);
        assert_eq!(
            out[0].ts,
            (12 * 3600 + 2 * 60 + 36) * 1_000_000_000 + 269_827_674
        );
        match &out[0].kind {
            Kind::SyscallEnter { name, args } => {
                assert_eq!(s.get(*name), "write");
                assert_eq!(args[0].1, 1);
                assert_eq!(args[1].1, 12);
            }
            k => panic!("{k:?}"),
        }
        assert!(matches!(out[1].kind, Kind::SyscallExit { ret: 12, .. }));
        assert!(
            matches!(out[2].kind, Kind::SchedSwitch { next_pid: 6239, next_comm, .. } if s.get(next_comm) == "NetworkManager")
        );
        assert_eq!(s.get(out[3].comm), "Web Content");
    }
}
