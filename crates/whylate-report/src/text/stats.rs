//! The terminal rendering of `whylate stats`.

use crate::Paint;
use whylate::stats::StatsReport;
use whylate::units::{dur, secs};

/// The terminal rendering of a stats report (a trait: the report's type belongs to
/// `whylate`, its rendering to this crate).
pub trait StatsText {
    /// The terminal rendering: the one-line summary first, then tables.
    fn render_text(&self, p: &Paint) -> String;
}

/// What an input is made of: lines of text, or binary records.
fn unit(r: &StatsReport) -> &'static str {
    if r.inputs.iter().all(|i| i.format.is_binary()) {
        "records"
    } else {
        "lines"
    }
}

impl StatsText for StatsReport {
    fn render_text(&self, p: &Paint) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let span = self.span_ns.map(dur).unwrap_or_else(|| "-".into());
        let first = format!(
            "{} events, {} format, span {span}{}{}",
            self.events,
            self.format,
            if self.lost.markers > 0 {
                format!(", LOST events in {} window(s)", self.lost.markers)
            } else {
                String::new()
            },
            if self.unparsed > 0 {
                format!(", {} {} not understood", self.unparsed, unit(self))
            } else {
                String::new()
            }
        );
        let _ = writeln!(o, "{}", p.heading(&first));
        for i in &self.inputs {
            let _ = writeln!(
                o,
                "  {}: {}{}, {} lines, {} events",
                i.path,
                i.format,
                if i.compression == whylate::read::Compression::None {
                    String::new()
                } else {
                    format!(" ({:?})", i.compression).to_lowercase()
                },
                i.diag.lines,
                i.events
            );
            if let Some(l) = &i.diag.header.latency {
                let _ = writeln!(
                    o,
                    "    {} latency {} us on CPU {}, task {}, {} .. {}",
                    i.diag.header.tracer.as_deref().unwrap_or("latency"),
                    l.latency_us,
                    l.cpu.map(|c| c.to_string()).unwrap_or("?".into()),
                    l.task.as_deref().unwrap_or("?"),
                    l.started_at.as_deref().unwrap_or("?"),
                    l.ended_at.as_deref().unwrap_or("?")
                );
            }
        }
        if let (Some(f), Some(l)) = (self.first_ns, self.last_ns) {
            let _ = writeln!(o, "  time {} .. {}", secs(f), secs(l));
        }
        let _ = writeln!(o, "\n{}", p.heading("events by name:"));
        let mut names: Vec<_> = self.by_name.iter().collect();
        names.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (n, c) in names {
            let _ = writeln!(o, "  {c:>10}  {n}");
        }
        let _ = writeln!(o, "\n{}", p.heading("events by CPU:"));
        for (c, n) in &self.by_cpu {
            let _ = writeln!(o, "  {n:>10}  cpu {c}");
        }
        let _ = writeln!(
            o,
            "\n{}",
            p.heading(&format!("top tasks ({} seen):", self.tasks))
        );
        for t in &self.top_tasks {
            let _ = writeln!(o, "  {:>10}  {}[{}]", t.events, t.comm, t.tid);
        }
        if !self.lost.windows.is_empty() {
            let _ = writeln!(
                o,
                "\n{}",
                p.heading("lost events (analysis is blind here):")
            );
            for w in self.lost.windows.iter().take(20) {
                let _ = writeln!(
                    o,
                    "  cpu {:>3}  {:>8}  {} .. {}",
                    w.cpu,
                    w.count.map(|c| c.to_string()).unwrap_or("unknown".into()),
                    w.from_ns.map(secs).unwrap_or("start".into()),
                    w.to_ns.map(secs).unwrap_or("end".into())
                );
            }
            if self.lost.windows.len() > 20 {
                let _ = writeln!(o, "  ... {} more", self.lost.windows.len() - 20);
            }
        }
        if self.unparsed > 0 {
            let _ = writeln!(o, "\n{} not understood: {}", unit(self), self.unparsed);
            for u in &self.unparsed_samples {
                match u.line {
                    0 => writeln!(o, "  {}: expected {}", u.at(), u.why),
                    _ => writeln!(o, "  {}: {}\n    {}", u.at(), u.why, u.text),
                }
                .ok();
            }
        }
        if self.skipped > 0 {
            let _ = writeln!(
                o,
                "\nskipped {} lines that are not trace data",
                self.skipped
            );
        }
        if !self.notes.is_empty() {
            let _ = writeln!(o, "\n{}", p.heading("notes:"));
            for n in &self.notes {
                let _ = writeln!(o, "  - {n}");
            }
        }
        o
    }
}
