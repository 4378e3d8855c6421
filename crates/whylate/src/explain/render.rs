//! The terminal rendering of an explain report.

use super::report::ExplainReport;
use crate::units::{dur, secs};
use std::fmt::Write as _;

impl ExplainReport {
    /// Terminal rendering: the verdict first.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let c = &self.cycles;
        let dl = self.deadline_ns.map_or("no deadline".to_string(), |d| {
            format!("deadline {}", dur(d))
        });
        let q = if c.replied > 0 {
            format!(
                "; p50 {}, p99 {}, max {}",
                dur(c.p50_ns),
                dur(c.p99_ns),
                dur(c.max_ns)
            )
        } else {
            String::new()
        };
        if self.noun == "outliers" {
            let _ = writeln!(o, "{} outliers across the measures{q}", c.count);
        } else {
            let _ = writeln!(
                o,
                "{} {}, {} missed ({} no reply), {dl}{q}",
                c.count, self.noun, c.misses, c.no_reply
            );
        }
        if self.deadline_source != "given" && self.noun != "outliers" {
            let _ = writeln!(o, "  deadline {}", self.deadline_source);
        }
        if !self.to.is_empty() {
            let _ = writeln!(o, "  cycle: {} -> {}", self.from, self.to.join(" | "));
        }
        if c.count == 0 && !self.to.is_empty() {
            let _ = writeln!(
                o,
                "\nno cycle: nothing matched {:?} (check the selector: event name, field names, values)",
                self.from
            );
        }
        if !c.histogram.is_empty() {
            let _ = writeln!(o, "\nduration histogram (replied):");
            let max = c
                .histogram
                .iter()
                .map(|b| b.count)
                .max()
                .unwrap_or(1)
                .max(1);
            for b in &c.histogram {
                let mark = match self.deadline_ns {
                    Some(d) if b.lo >= d => " <- over the deadline",
                    Some(d) if b.hi > d => " <- deadline inside",
                    _ => "",
                };
                let _ = writeln!(
                    o,
                    "  [{:>9}, {:>9}) {:>6} |{}{mark}",
                    dur(b.lo),
                    dur(b.hi),
                    b.count,
                    "#".repeat(((b.count as f64 / max as f64) * 40.0).ceil() as usize)
                );
            }
        }
        if !self.causes.is_empty() {
            let _ = writeln!(
                o,
                "\nwhy the {} {} were late (excess over the usual):",
                c.misses,
                if self.noun == "outliers" {
                    "outliers"
                } else {
                    "misses"
                }
            );
            let _ = writeln!(
                o,
                "  {:<20} {:<36} {:>6} {:>11} {:>10} {:>6}",
                "category", "culprit", "misses", "total", "mean", "share"
            );
            for r in self.causes.iter().take(10) {
                let mut who = r.culprit.label();
                if let Some(cpu) = r.culprit.cpu {
                    let _ = write!(who, " on CPU{cpu}");
                }
                let _ = writeln!(
                    o,
                    "  {:<20} {:<36} {:>6} {:>11} {:>10} {:>5.0}%",
                    r.category,
                    who,
                    r.count,
                    dur(r.total_excess_ns),
                    dur(r.mean_excess_ns),
                    r.share * 100.0
                );
            }
        }
        for m in self.misses.iter().take(self.top) {
            let d = m
                .duration_ns
                .map_or("no reply".to_string(), |d| format!("took {}", dur(d)));
            let _ = writeln!(
                o,
                "\n{} at {} (tid {}, CPU{}): {d}, {} blamed",
                if self.noun == "outliers" {
                    "outlier"
                } else {
                    "miss"
                },
                secs(m.start_ns),
                m.tid,
                m.cpu,
                dur(m.blamed_ns)
            );
            for l in &m.chain {
                let cpu = l.cpu.map_or("    ".to_string(), |c| format!("cpu{c}"));
                let dur_s = if l.duration_ns > 0 {
                    dur(l.duration_ns)
                } else {
                    String::new()
                };
                let flag = if l.excess_ns > 0 {
                    format!(
                        "  <- {} over usual {}",
                        dur(l.excess_ns),
                        dur(l.usual_ns.unwrap_or(0))
                    )
                } else {
                    String::new()
                };
                let pend = if l.pending_at_deadline {
                    " [pending at the deadline]"
                } else {
                    ""
                };
                let _ = writeln!(
                    o,
                    "  +{:>10} {cpu:>5} {:<8} {}{} {dur_s}{flag}",
                    dur(l.offset_ns),
                    l.kind,
                    l.what,
                    pend
                );
                for h in l.held_by.iter().take(3) {
                    let _ = writeln!(
                        o,
                        "  {:>12} {:>5}   {} {} {}",
                        "",
                        "",
                        h.category,
                        h.culprit.label(),
                        dur(h.ns)
                    );
                }
            }
        }
        if self.misses.len() > self.top {
            let _ = writeln!(
                o,
                "\n... {} more {} (--top, --json)",
                self.misses.len() - self.top,
                if self.noun == "outliers" {
                    "outliers"
                } else {
                    "misses"
                }
            );
        }
        if !self.context.is_empty() {
            let _ = writeln!(o, "\ncontext:");
            for cx in &self.context {
                let busy: Vec<String> = cx
                    .busy
                    .iter()
                    .map(|(t, f)| format!("{t} {:.0}%", f * 100.0))
                    .collect();
                let _ = writeln!(o, "  CPU{}: {}; busy: {}", cx.cpu, cx.role, busy.join(", "));
                if !cx.irqs.is_empty() {
                    let irqs: Vec<String> =
                        cx.irqs.iter().map(|(i, n)| format!("{i} x{n}")).collect();
                    let _ = writeln!(o, "        irqs handled there: {}", irqs.join(", "));
                }
            }
        }
        if let Some(m) = &self.machine {
            let irqs: Vec<String> = m
                .irqs
                .iter()
                .map(|i| {
                    let to = match (&i.effective, &i.affinity) {
                        (Some(e), Some(a)) if e != a => format!("CPU {e} (allowed {a})"),
                        (Some(e), _) => format!("CPU {e}"),
                        (None, Some(a)) => format!("CPU {a}"),
                        (None, None) => "?".into(),
                    };
                    format!("{} {} → {to}", i.irq, i.name)
                })
                .collect();
            let _ = writeln!(
                o,
                "  machine: {}, CPUs {}, irqbalance {}{}",
                m.kernel,
                m.online_cpus,
                if m.irqbalance {
                    "running"
                } else {
                    "not running"
                },
                if irqs.is_empty() {
                    String::new()
                } else {
                    format!("; IRQ {}", irqs.join(", IRQ "))
                }
            );
        }
        if !self.advice.is_empty() {
            let _ = writeln!(o, "\nadvice:");
            for a in &self.advice {
                let _ = writeln!(
                    o,
                    "  - {}\n      {}\n      cost: {}",
                    a.action, a.command, a.cost
                );
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(o, "\nnotes:");
            for n in &self.notes {
                let _ = writeln!(o, "  - {n}");
            }
        }
        o
    }
}
