//! The terminal rendering of a diff report: the verdict first, then the evidence.

use crate::Paint;
use std::fmt::Write;
use whylate::diff::*;
use whylate::units::dur;

/// The terminal rendering of a diff report (a trait: the report's type belongs to
/// `whylate`, its rendering to this crate).
pub trait DiffText {
    /// The terminal text: the verdict first, then the evidence.
    fn render_text(&self, p: &Paint) -> String;
}

impl DiffText for DiffReport {
    fn render_text(&self, p: &Paint) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "{}", p.heading(&self.verdict));
        for (side, s) in [("A", &self.a), ("B", &self.b)] {
            if let Some(u) = &s.unread {
                let tag = if u.matters() {
                    p.warn("blind:")
                } else {
                    "note:".into()
                };
                let _ = writeln!(o, "  {tag} {side}: {}", u.line());
            }
        }
        let _ = writeln!(
            o,
            "\nA: {} ({} events)\nB: {} ({} events)",
            self.a.path, self.a.events, self.b.path, self.b.events
        );
        let dl = |s: &Side| s.deadline_ns.map_or("none".to_string(), dur);
        let _ = writeln!(
            o,
            "deadline: A {} ({}), B {} ({})\n",
            dl(&self.a),
            self.a.deadline_source,
            dl(&self.b),
            self.b.deadline_source
        );
        let (a, b) = (&self.a.cycles, &self.b.cycles);
        let rate = |m: u64, n: u64| {
            if n == 0 {
                String::new()
            } else {
                format!(" ({})", pct(m as f64 / n as f64))
            }
        };
        let rows: [(&str, String, String); 7] = [
            (self.noun, a.count.to_string(), b.count.to_string()),
            (
                "misses",
                format!("{}{}", a.misses, rate(a.misses, a.count)),
                format!("{}{}", b.misses, rate(b.misses, b.count)),
            ),
            ("no reply", a.no_reply.to_string(), b.no_reply.to_string()),
            ("p50", dur(a.p50_ns), dur(b.p50_ns)),
            ("p90", dur(a.p90_ns), dur(b.p90_ns)),
            ("p99", dur(a.p99_ns), dur(b.p99_ns)),
            ("max", dur(a.max_ns), dur(b.max_ns)),
        ];
        let _ = writeln!(o, "  {:<16} {:>16} {:>16}", "", "A", "B");
        for (k, x, y) in rows {
            let _ = writeln!(o, "  {k:<16} {x:>16} {y:>16}");
        }
        if !self.histogram.is_empty() {
            let _ = writeln!(
                o,
                "\nhistogram:                       A                      B"
            );
            let max = self
                .histogram
                .iter()
                .map(|p| p.a.max(p.b))
                .max()
                .unwrap_or(1)
                .max(1);
            let bar = |n: u64| {
                let w = if n == 0 {
                    0
                } else {
                    ((n * 16).div_ceil(max)) as usize
                };
                "#".repeat(w)
            };
            let dl = self.a.deadline_ns.or(self.b.deadline_ns);
            for p in &self.histogram {
                let mark = match dl {
                    Some(d) if p.lo >= d => "  <- over the deadline",
                    Some(d) if p.hi > d => "  <- deadline inside",
                    _ => "",
                };
                let _ = writeln!(
                    o,
                    "  [{:>9}, {:>9}) {:>6} {:<16} {:>6} {:<16}{mark}",
                    dur(p.lo),
                    dur(p.hi),
                    p.a,
                    bar(p.a),
                    p.b,
                    bar(p.b)
                );
            }
        }
        evidence(self, &mut o, p);
        o
    }
}

/// What changed: causes, CPU time, interrupt placement, the machine; and notes.
fn evidence(r: &DiffReport, o: &mut String, p: &Paint) {
    if !r.causes.is_empty() {
        let _ = writeln!(
            o,
            "\n{}",
            p.heading("causes (misses, excess with each wait counted once; A → B):")
        );
        let side = |s: &Option<CauseSide>| match s {
            Some(x) => format!("{} {}", x.misses, dur(x.once_ns)),
            None => "-".into(),
        };
        // As wide as the longest name, so a long one does not push its row's figures out
        // of their column.
        let names: Vec<String> = r.causes.iter().map(cause_name).collect();
        let w = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        for (d, name) in r.causes.iter().zip(&names) {
            let _ = writeln!(
                o,
                "  {:<9} {name:<w$} {:>18} → {}",
                d.status,
                side(&d.a),
                side(&d.b)
            );
        }
    }
    if !r.cpus.is_empty() {
        let _ = writeln!(
            o,
            "\n{}",
            p.heading("CPU time that moved (share of the trace, A → B):")
        );
        for c in &r.cpus {
            let b = |x: Option<f64>| x.map_or("-".into(), pct);
            let _ = write!(o, "  CPU{} busy {} → {}", c.cpu, b(c.busy_a), b(c.busy_b));
            let parts: Vec<String> = c
                .changes
                .iter()
                .take(6)
                .map(|x| format!("{} {} → {}", x.what, pct(x.a), pct(x.b)))
                .collect();
            if !parts.is_empty() {
                let _ = write!(o, ": {}", parts.join(", "));
            }
            o.push('\n');
        }
    }
    if !r.irqs.is_empty() {
        let _ = writeln!(
            o,
            "\n{}",
            p.heading("interrupts handled elsewhere (CPU ×runs, A → B):")
        );
        let list = |v: &[(u32, u64)]| {
            v.iter()
                .map(|(c, n)| format!("CPU{c} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for m in &r.irqs {
            let _ = writeln!(o, "  {}: {} → {}", m.irq, list(&m.a), list(&m.b));
        }
    }
    if !r.machine.is_empty() {
        let _ = writeln!(o, "\n{}", p.heading("machine:"));
        for m in &r.machine {
            let _ = writeln!(o, "  {m}");
        }
    }
    if !r.notes.is_empty() {
        let _ = writeln!(o, "\n{}", p.heading("notes:"));
        for n in &r.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
}
