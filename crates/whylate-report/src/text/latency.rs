//! The terminal rendering of `whylate latency`: per measure, its groups with quantiles,
//! a histogram and the worst samples.

use crate::Paint;
use std::fmt::Write as _;
use whylate::latency::LatencyReport;
use whylate::measure::{self, MeasureReport};
use whylate::units::{dur, secs};

/// The terminal rendering of a latency report (a trait: the report's type belongs to
/// `whylate`, its rendering to this crate).
pub trait LatencyText {
    /// Terminal rendering: per measure, at most `top_groups` groups.
    fn render_text(&self, top_groups: usize, p: &Paint) -> String;
}

impl LatencyText for LatencyReport {
    fn render_text(&self, top_groups: usize, p: &Paint) -> String {
        let mut o = String::new();
        let span = match (self.first_ns, self.last_ns) {
            (Some(f), Some(l)) => format!("{} .. {} ({})", secs(f), secs(l), dur(l - f)),
            _ => "empty".to_string(),
        };
        let names: Vec<&str> = self.inputs.iter().map(|i| i.path.as_str()).collect();
        let first = format!(
            "{}: {} events, {span}; {} spans, {} edges",
            names.join(", "),
            self.events,
            self.spans,
            self.edges
        );
        let _ = writeln!(o, "{}", p.heading(&first));
        if let Some(u) = self.unread.as_ref().filter(|u| u.matters()) {
            // Under the verdict: every number below rests on the part that was read.
            let _ = writeln!(o, "  {} {}", p.warn("blind:"), u.line());
        }
        for b in &self.blind {
            let _ = writeln!(o, "  {} {b}", p.warn("blind:"));
        }
        for m in &self.measures {
            o.push('\n');
            render_measure(&mut o, m, top_groups);
        }
        if !self.notes.is_empty() {
            let _ = writeln!(o, "\n{}", p.heading("notes:"));
            for n in &self.notes {
                let _ = writeln!(o, "  - {n}");
            }
        }
        if let Some(u) = self.unread.as_ref().filter(|u| !u.matters()) {
            let _ = writeln!(o, "\n{}", u.line());
        }
        o
    }
}

fn val(unit: &str, v: u64) -> String {
    if unit == "ns" {
        dur(v)
    } else {
        format!("{v}/s")
    }
}

fn render_measure(o: &mut String, m: &MeasureReport, top_groups: usize) {
    let total: u64 = m.groups.iter().map(|g| g.count).sum();
    let _ = writeln!(o, "== {} == {}", m.measure.name(), m.description);
    if m.groups.is_empty() {
        if m.missing_events.is_empty() {
            let _ = writeln!(o, "  no samples");
        }
    } else {
        let _ = writeln!(o, "  {total} samples in {} groups", m.groups.len());
        let _ = writeln!(
            o,
            "  {:<34} {:<18} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "group", "metric", "count", "min", "p50", "p90", "p99", "max", "total"
        );
        for g in m.groups.iter().take(top_groups) {
            let _ = writeln!(
                o,
                "  {:<34} {:<18} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
                clip(&label(g), 34),
                clip(&g.metric, 18),
                g.count,
                val(&m.unit, g.min_ns),
                val(&m.unit, g.p50_ns),
                val(&m.unit, g.p90_ns),
                val(&m.unit, g.p99_ns),
                val(&m.unit, g.max_ns),
                val(&m.unit, g.total_ns),
            );
        }
        if m.groups.len() > top_groups {
            let _ = writeln!(
                o,
                "  ... {} more groups (--top, --json)",
                m.groups.len() - top_groups
            );
        }
        if let Some(g) = m.groups.first() {
            let _ = writeln!(o, "  histogram of {} {}:", g.key, g.metric);
            render_hist(o, g, &m.unit);
        }
        if !m.worst.is_empty() {
            let _ = writeln!(o, "  worst:");
            for w in &m.worst {
                let cpu = w.cpu.map_or("cpu?".to_string(), |c| format!("cpu{c}"));
                let _ = writeln!(
                    o,
                    "    {} {:>5} {:>10}  {}{}",
                    secs(w.ts_ns),
                    cpu,
                    val(&m.unit, w.value_ns),
                    w.group,
                    if w.uncertain { " (uncertain)" } else { "" }
                );
                if !w.detail.is_empty() {
                    let _ = writeln!(o, "        {}", w.detail);
                }
                if !w.cpu_held_by.is_empty() {
                    let held: Vec<String> = w
                        .cpu_held_by
                        .iter()
                        .map(|h| format!("{} {}", h.name, dur(h.ns)))
                        .collect();
                    let _ = writeln!(o, "        CPU held by: {}", held.join(", "));
                }
            }
        }
    }
    for mi in &m.missing_events {
        let _ = writeln!(
            o,
            "  cannot compute {}: record {}",
            mi.part,
            mi.needs.join(", ")
        );
    }
    for n in &m.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}

fn render_hist(o: &mut String, g: &measure::Group, unit: &str) {
    let max = g
        .histogram
        .iter()
        .map(|b| b.count)
        .max()
        .unwrap_or(0)
        .max(1);
    for b in &g.histogram {
        let bar = ((b.count as f64 / max as f64) * 40.0).ceil() as usize;
        let _ = writeln!(
            o,
            "    [{:>9}, {:>9}) {:>8} |{}",
            val(unit, b.lo),
            if b.hi == u64::MAX {
                "inf".to_string()
            } else {
                val(unit, b.hi)
            },
            b.count,
            "#".repeat(bar)
        );
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}

/// A group's name, marked when it is one of the recorder's own threads.
fn label(g: &whylate::measure::Group) -> String {
    match g.extra.contains_key("recorder") {
        true => format!("{} (recorder)", g.key),
        false => g.key.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use whylate::measure::{Measure, Options};
    use whylate::testkit::{idle_exits_untraced, pass};

    #[test]
    fn a_cpu_whose_idle_exits_are_never_traced_is_said_once_under_the_first_line() {
        // whylate's latency tests assert the report's blind spot and notes; the text says
        // the blind spot once, right under the summary.
        let o = Options {
            measures: vec![Measure::Wakeup],
            ..Options::default()
        };
        let r = whylate::latency::report(pass(&idle_exits_untraced(false)), &o, None);
        let text = r.render_text(10, &Paint::plain());
        assert_eq!(
            text.matches("idle exits are not traced").count(),
            1,
            "{text}"
        );
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .starts_with("  blind: CPU1's idle exits"),
            "{text}"
        );
    }
}
