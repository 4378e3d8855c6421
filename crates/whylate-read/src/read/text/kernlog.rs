//! Kernel logs: `dmesg` (`[  123.456789] msg`, with `<4>` levels or `[T123]` callers as
//! a serial console capture has them), `dmesg -T` (`[Tue Jul 15 10:29:35 2025] msg`),
//! `journalctl -k` / syslog (`Jul 15 10:29:35 host kernel: msg`), syslogd's broadcast
//! (` kernel:watchdog: ...`), and a pasted log with no prefix at all. Each message becomes
//! a `printk` print event; what the messages report (lockups, stalls, stacks) is read by
//! the analysis.
//!
//! `dmesg` times are seconds since boot on the kernel's local clock, the clock ftrace uses
//! by default, so such a log merges with a trace by time. Wall-clock prefixes give the
//! time of day. A log with no time prefix keeps its line order: its times are line
//! numbers, and [`crate::read::Diag::line_order_time`] says so.

use super::body::trim;
use crate::event::{Event, Kind, Sym};
use crate::read::declare::{Build, Reader, Sniff, Vote};
use crate::read::format::Format;
use crate::read::source::{Cx, LineParser};

/// Lines that only a kernel log has: what its reports start with.
const MARKERS: [&str; 9] = [
    "BUG: soft lockup",
    "hard LOCKUP",
    "rcu_sched self-detected stall",
    "detected stalls on CPU",
    "self-detected stall on CPU",
    "blocked for more than",
    "NMI backtrace for cpu",
    "messages dropped",
    "Call Trace:",
];

/// A kernel log: dmesg (raw or -T), journalctl -k, a serial console capture. Its vote loses every tie: report words appear in other formats' lines too.
pub(crate) const KERNEL_LOG: Reader = Reader {
    format: Format::KernelLog,
    arg: "kernel-log",
    sniff: Sniff {
        priority: 9,
        line: Some(Vote {
            probe,
            rank: 6,
            only: None,
        }),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Text(|_| Box::new(KernLogParser::new())),
};

impl Format {
    /// A kernel log: dmesg (raw or -T), journalctl -k, a serial console capture.
    #[allow(non_upper_case_globals)]
    pub const KernelLog: Format = Format::named("kernel-log");
}

/// A kernel log line: a dmesg prefix, or a report's own words.
pub(crate) fn probe(line: &[u8]) -> bool {
    let t = trim(line);
    let t = strip_level(t);
    if t.starts_with(b"[") && (dmesg_secs(t).is_some() || wall_secs(t).is_some()) {
        return true;
    }
    let s = String::from_utf8_lossy(t);
    MARKERS.iter().any(|m| s.contains(m)) || syslog_kernel(&s).is_some()
}

/// `<4>` at the start: the console log level.
fn strip_level(t: &[u8]) -> &[u8] {
    if t.first() == Some(&b'<') {
        if let Some(p) = memchr::memchr(b'>', t) {
            if p <= 2 && t[1..p].iter().all(u8::is_ascii_digit) {
                return &t[p + 1..];
            }
        }
    }
    t
}

/// `[  123.456789] rest` → (ns, rest).
fn dmesg_secs(t: &[u8]) -> Option<(u64, &[u8])> {
    let close = memchr::memchr(b']', t)?;
    let inner = std::str::from_utf8(&t[1..close]).ok()?.trim();
    let (s, frac) = inner.split_once('.')?;
    let secs: u64 = s.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let ns = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    Some((secs * 1_000_000_000 + ns, &t[close + 1..]))
}

/// `[Tue Jul 15 10:29:35 2025] rest` → (ns of the day, rest).
fn wall_secs(t: &[u8]) -> Option<(u64, &[u8])> {
    let close = memchr::memchr(b']', t)?;
    let inner = std::str::from_utf8(&t[1..close]).ok()?;
    let hms = inner
        .split_whitespace()
        .find(|w| w.matches(':').count() == 2)?;
    Some((day_ns(hms)?, &t[close + 1..]))
}

/// `10:29:35` → ns since midnight.
fn day_ns(hms: &str) -> Option<u64> {
    let mut it = hms.split(':').map(|x| x.parse::<u64>().ok());
    let (h, m, s) = (it.next()??, it.next()??, it.next()??);
    Some(((h * 60 + m) * 60 + s) * 1_000_000_000)
}

/// `Jul 15 10:29:35 host kernel: msg` (journalctl -k, syslog) → (ns of the day, msg);
/// ` kernel:msg` (syslogd's broadcast) → (None, msg).
fn syslog_kernel(s: &str) -> Option<(Option<u64>, &str)> {
    let p = s.find("kernel:")?;
    let head = &s[..p];
    let msg = s[p + 7..].trim_start();
    if head.trim().is_empty() {
        return Some((None, msg));
    }
    let hms = head
        .split_whitespace()
        .find(|w| w.matches(':').count() == 2)?;
    Some((Some(day_ns(hms)?), msg))
}

/// Reads kernel log lines into `printk` events.
pub(crate) struct KernLogParser {
    name: Option<Sym>,
    /// The last time seen: a line without one (a stack under a stamped report) keeps it.
    last: u64,
}

impl KernLogParser {
    pub fn new() -> Self {
        KernLogParser {
            name: None,
            last: 0,
        }
    }
}

impl LineParser for KernLogParser {
    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>) {
        let raw = line.strip_suffix(b"\r").unwrap_or(line);
        if trim(raw).is_empty() || raw.starts_with(b"Message from syslogd@") {
            cx.diag.skipped_lines += 1;
            return;
        }
        let t = strip_level(trim(raw));
        let text = String::from_utf8_lossy(t);
        let (ts, msg): (Option<u64>, String) = if let Some((ns, rest)) = dmesg_secs(t) {
            (Some(ns), String::from_utf8_lossy(rest).into_owned())
        } else if let Some((ns, rest)) = t.starts_with(b"[").then(|| wall_secs(t)).flatten() {
            (Some(ns), String::from_utf8_lossy(rest).into_owned())
        } else if let Some((ns, m)) = syslog_kernel(&text) {
            (ns, m.to_string())
        } else {
            // No prefix: keep the line itself, its leading blanks too (stack frames).
            cx.diag.line_order_time = true;
            (None, String::from_utf8_lossy(raw).into_owned())
        };
        // A `[T123]`/`[C3]` caller column after the time (CONFIG_PRINTK_CALLER), and the
        // blank that separates the prefix from the message.
        let msg = strip_caller(&msg);
        let msg = msg.strip_prefix(' ').unwrap_or(msg);
        let ts = match ts {
            Some(ns) => ns,
            // A log without times: its order is what it has.
            None if cx.diag.line_order_time => cx.lineno * 1_000,
            None => self.last,
        };
        self.last = ts;
        let name = *self.name.get_or_insert_with(|| cx.strings.intern("printk"));
        cx.out.push_back(Event {
            ts,
            cpu: Event::NO_CPU,
            tid: -1,
            tgid: -1,
            comm: Sym::EMPTY,
            flags: 0,
            kind: Kind::Print {
                name,
                msg: msg.into(),
            },
        });
    }
}

/// ` [  T123] msg` → ` msg`.
fn strip_caller(m: &str) -> &str {
    let t = m.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        if let Some(p) = rest.find(']') {
            let id = rest[..p].trim();
            if id.len() > 1
                && (id.starts_with('T') || id.starts_with('C'))
                && id[1..].bytes().all(|c| c.is_ascii_digit())
            {
                return &rest[p + 1..];
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_read_and_stripped() {
        assert_eq!(dmesg_secs(b"[  12.5] x").map(|x| x.0), Some(12_500_000_000));
        assert_eq!(strip_level(b"<4>[ 1.000000] y"), b"[ 1.000000] y");
        assert_eq!(
            wall_secs(b"[Tue Jul 15 10:29:35 2025] z").map(|x| x.0),
            Some(37_775_000_000_000)
        );
        assert_eq!(
            syslog_kernel("Jul 15 10:29:35 host kernel: watchdog: BUG"),
            Some((Some(37_775_000_000_000), "watchdog: BUG"))
        );
        assert_eq!(
            syslog_kernel(" kernel:watchdog: BUG: soft lockup"),
            Some((None, "watchdog: BUG: soft lockup"))
        );
        assert_eq!(strip_caller(" [  T35056] printk: x"), " printk: x");
        assert!(probe(
            b"watchdog: BUG: soft lockup - CPU#33 stuck for 22s! [modprobe:35056]"
        ));
        assert!(!probe(b"Notice printk() in the stack trace."));
        assert!(probe(b"[Tue Nov 24 23:15:25 2026] Linux version 6.18.44"));
    }
}
