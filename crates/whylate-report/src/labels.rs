//! What the plots call things: a task, an irq line, a span, a system call, a hand-off, as
//! one line of hover text (and a short label for inside a bar).

use whylate::event::{Interner, Sym, SOFTIRQ_NAMES};
use whylate::timeline::{span, EdgeKind, SpanKind, Timeline};

/// Names what a span, a system call or an edge was, for hover text and bar labels.
pub(super) struct Labels<'a> {
    pub(super) tl: &'a Timeline,
    pub(super) s: &'a Interner,
}

impl Labels<'_> {
    fn task(&self, tid: i32) -> String {
        self.tl.task_name(self.s, tid)
    }
    fn irq(&self, irq: u32) -> String {
        if irq == u32::MAX {
            return "irq (no handler event: timer/IPI)".into();
        }
        match self.tl.irq_names.get(&irq) {
            Some(n) => format!("irq {irq} ({})", self.s.get(*n)),
            None => format!("irq {irq}"),
        }
    }
    fn vector(v: u32) -> &'static str {
        SOFTIRQ_NAMES.get(v as usize).copied().unwrap_or("?")
    }
    fn sym(&self, k: u32) -> &str {
        let f = self.s.get(Sym(k));
        if f.is_empty() {
            "?"
        } else {
            f
        }
    }
    /// A span as one line (`hog[6717] ran on CPU1`), and its short form for inside a bar.
    pub(super) fn span(&self, i: usize) -> (String, String) {
        let sp = &self.tl.spans;
        let cpu = sp.cpu[i];
        match sp.kind[i] {
            SpanKind::Run => {
                let t = self.task(sp.tid[i]);
                (format!("{t} runs on CPU{cpu}"), t)
            }
            SpanKind::Hardirq => {
                let t = self.irq(sp.key[i]);
                (format!("{t} on CPU{cpu}"), t)
            }
            SpanKind::Softirq => {
                let v = Labels::vector(sp.key[i]);
                let w = if sp.flags[i] & span::KSOFTIRQD != 0 {
                    " in ksoftirqd"
                } else {
                    ""
                };
                (format!("softirq {v}{w} on CPU{cpu}"), v.to_string())
            }
            SpanKind::Work => {
                let f = self.sym(sp.key[i]).to_string();
                (
                    format!("work {f} in {} on CPU{cpu}", self.task(sp.tid[i])),
                    f,
                )
            }
            SpanKind::TimerCb => {
                let f = self.sym(sp.key[i]).to_string();
                (format!("hrtimer {f} on CPU{cpu}"), f)
            }
            k => {
                let t = self.task(sp.tid[i]);
                (format!("{k:?} {t} on CPU{cpu}"), t)
            }
        }
    }
    /// System call `i` as one line (`dd[42] read() on CPU1`).
    pub(super) fn call(&self, i: u32) -> String {
        let c = self.tl.syscalls.get(i);
        let n = self.tl.syscall_name(self.s, c.key, c.flags);
        format!("{} {n}() on CPU{}", self.task(c.tid), c.cpu)
    }
    pub(super) fn edge(&self, i: usize) -> String {
        let e = &self.tl.edges[i];
        match e.kind {
            EdgeKind::Wakeup => format!(
                "{} wakes {} (CPU{} -> CPU{})",
                self.task(e.from_tid),
                self.task(e.to_tid),
                e.from_cpu,
                e.to_cpu
            ),
            EdgeKind::Work => format!(
                "{} queues work {} on CPU{}",
                self.task(e.from_tid),
                self.sym(e.key),
                e.from_cpu
            ),
            _ => format!("{:?} on CPU{}", e.kind, e.from_cpu),
        }
    }
}
