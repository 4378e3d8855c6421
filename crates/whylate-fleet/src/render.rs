//! The fleet report for people: the terminal (verdict first) and one HTML file.

use crate::report::{cause_label, FleetReport, GroupRow};
use std::fmt::Write as _;
use whylate::units::dur;
use whylate_report::style::Paint;
use whylate_report::svg::esc;

/// Groups and changes the terminal lists (the JSON and HTML have all).
const SHOWN: usize = 20;

fn per_1000(misses: u64, samples: u64) -> String {
    if samples == 0 {
        "-".into()
    } else {
        format!("{:.1}", misses as f64 * 1000.0 / samples as f64)
    }
}

impl FleetReport {
    /// The verdict line: how many hosts, how late, and the first cause.
    pub fn verdict(&self) -> String {
        let mut v = format!(
            "{} hosts, {} traces, {} kernel(s): {} misses in {} samples ({} per 1000)",
            self.hosts,
            self.traces,
            self.kernels,
            self.misses,
            self.samples,
            per_1000(self.misses, self.samples)
        );
        if let Some(d) = self.deadline_ns {
            let _ = write!(v, " at a deadline of {}", dur(d));
        }
        v
    }

    /// The terminal report.
    pub fn render_text(&self, p: &Paint) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{}",
            p.heading(&format!("whylate fleet: {}", self.verdict()))
        );
        if let Some(c) = self.first_cause() {
            let _ = writeln!(
                o,
                "first cause: {} — {:.1}% of the excess, {} misses on {} of {} hosts",
                p.alarm(&cause_label(&c.category, &c.culprit)),
                c.share * 100.0,
                c.misses,
                c.hosts,
                self.hosts
            );
        }
        self.causes_text(&mut o, p);
        self.groups_text(&mut o, p);
        self.hosts_text(&mut o, p);
        if !self.notes.is_empty() {
            let _ = writeln!(o, "\n{}", p.heading("notes"));
            for n in &self.notes {
                let _ = writeln!(o, "  - {n}");
            }
        }
        o
    }

    fn causes_text(&self, o: &mut String, p: &Paint) {
        if self.causes.is_empty() {
            return;
        }
        let _ = writeln!(o, "\n{}", p.heading("causes across the fleet"));
        let _ = writeln!(
            o,
            "  {:>6}  {:>11}  {:>7}  {:>6}  cause",
            "share", "excess", "misses", "hosts"
        );
        for c in &self.causes {
            let _ = writeln!(
                o,
                "  {:>5.1}%  {:>11}  {:>7}  {:>6}  {}",
                c.share * 100.0,
                dur(c.excess_ns),
                c.misses,
                c.hosts,
                cause_label(&c.category, &c.culprit)
            );
        }
    }

    fn groups_text(&self, o: &mut String, p: &Paint) {
        let Some(by) = &self.by else { return };
        let _ = writeln!(o, "\n{}", p.heading(&format!("by {by}")));
        let _ = writeln!(
            o,
            "  {:<24} {:>6} {:>9} {:>7} {:>9}",
            by, "hosts", "samples", "misses", "per 1000"
        );
        // Many groups (`--by host`): the highest miss rates; all of them are in --json.
        let mut shown: Vec<&GroupRow> = self.groups.iter().collect();
        if shown.len() > SHOWN {
            let rate = |g: &GroupRow| g.misses as f64 / g.samples.max(1) as f64;
            shown.sort_by(|a, b| rate(b).total_cmp(&rate(a)).then(a.group.cmp(&b.group)));
            shown.truncate(SHOWN);
        }
        for g in &shown {
            let _ = writeln!(
                o,
                "  {:<24} {:>6} {:>9} {:>7} {:>9}",
                g.group,
                g.hosts,
                g.samples,
                g.misses,
                per_1000(g.misses, g.samples)
            );
        }
        if shown.len() < self.groups.len() {
            let more = self.groups.len() - shown.len();
            let _ = writeln!(o, "  ... {more} more with lower rates (--json lists all)");
        }
        if self.changes.is_empty() {
            let _ = writeln!(
                o,
                "  no cause appeared or grew in one {by} against the others"
            );
            return;
        }
        let _ = writeln!(o, "  appeared or grew:");
        for c in self.changes.iter().take(SHOWN) {
            let _ = writeln!(
                o,
                "  {} {} in {by} {}: {:.1} per 1000 samples ({} misses), against {:.1} in {}",
                p.warn(&cause_label(&c.category, &c.culprit)),
                c.kind,
                c.group,
                c.per_1000,
                c.misses,
                c.baseline_per_1000,
                c.baseline
            );
        }
        if self.changes.len() > SHOWN {
            let more = self.changes.len() - SHOWN;
            let _ = writeln!(o, "  ... {more} more (--json lists all)");
        }
    }

    fn hosts_text(&self, o: &mut String, p: &Paint) {
        if self.worst_hosts.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "\n{}",
            p.heading("worst hosts (misses per 1000 samples)")
        );
        for h in &self.worst_hosts {
            let _ = writeln!(
                o,
                "  {:<24} {:>9} {:>7}/{:<9} {:<20} {}",
                h.host,
                per_1000(h.misses, h.samples),
                h.misses,
                h.samples,
                h.kernel,
                h.top_cause.as_deref().unwrap_or("-")
            );
        }
    }

    /// One self-contained HTML page: the same sections as the terminal, as tables.
    pub fn render_html(&self) -> String {
        let mut o = String::from(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>whylate fleet</title>\
             <style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}\
             table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{padding:2px 10px;text-align:right}\
             td:last-child,th:last-child{text-align:left}tr:nth-child(even){background:#f4f4f4}\
             .bar{display:inline-block;height:.8em;background:#c33}pre{background:#f4f4f4;padding:.5em;white-space:pre-wrap}</style>\
             </head><body>",
        );
        let _ = write!(
            o,
            "<h1>whylate fleet</h1><p><b>{}</b></p>",
            esc(&self.verdict())
        );
        o.push_str("<h2>Causes across the fleet</h2><table><tr><th>share</th><th>excess</th><th>misses</th><th>hosts</th><th>cause</th></tr>");
        for c in &self.causes {
            let _ = write!(
                o,
                "<tr><td><span class=\"bar\" style=\"width:{:.0}px\"></span> {:.1}%</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                c.share * 100.0,
                c.share * 100.0,
                dur(c.excess_ns),
                c.misses,
                c.hosts,
                esc(&cause_label(&c.category, &c.culprit))
            );
        }
        o.push_str("</table>");
        if let Some(by) = &self.by {
            let _ = write!(o, "<h2>By {}</h2><table><tr><th>{}</th><th>hosts</th><th>samples</th><th>misses</th><th>per 1000</th></tr>", esc(by), esc(by));
            for g in &self.groups {
                let _ = write!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&g.group),
                    g.hosts,
                    g.samples,
                    g.misses,
                    per_1000(g.misses, g.samples)
                );
            }
            o.push_str("</table><ul>");
            for c in &self.changes {
                let _ = write!(
                    o,
                    "<li><b>{}</b> {} in {} {}: {:.1} per 1000 samples ({} misses), against {:.1} in {}</li>",
                    esc(&cause_label(&c.category, &c.culprit)),
                    c.kind,
                    esc(by),
                    esc(&c.group),
                    c.per_1000,
                    c.misses,
                    c.baseline_per_1000,
                    esc(&c.baseline)
                );
            }
            o.push_str("</ul>");
        }
        o.push_str("<h2>Worst hosts</h2><table><tr><th>host</th><th>per 1000</th><th>misses</th><th>samples</th><th>kernel</th><th>top cause</th></tr>");
        for h in &self.worst_hosts {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&h.host),
                per_1000(h.misses, h.samples),
                h.misses,
                h.samples,
                esc(&h.kernel),
                esc(h.top_cause.as_deref().unwrap_or("-"))
            );
        }
        o.push_str("</table>");
        if !self.notes.is_empty() {
            o.push_str("<h2>Notes</h2><ul>");
            for n in &self.notes {
                let _ = write!(o, "<li>{}</li>", esc(n));
            }
            o.push_str("</ul>");
        }
        o.push_str("<h2>SQL</h2>");
        for q in &self.sql {
            let _ = write!(o, "<h3>{}</h3><pre>{}</pre>", esc(&q.name), esc(&q.sql));
        }
        o.push_str("</body></html>\n");
        o
    }
}
