//! The terminal rendering of an explain report: the verdict, the histogram, the ranked
//! causes, the worst misses with their chains, the CPUs behind them, advice and notes.

use crate::Paint;
use std::fmt::Write as _;
use whylate::explain::{ExplainReport, Link, Miss};
use whylate::units::{dur, secs};

/// The terminal rendering of an explain report (a trait: the report's type belongs to
/// `whylate`, its rendering to this crate).
pub trait ExplainText {
    /// Terminal rendering: the verdict first.
    fn render_text(&self, p: &Paint) -> String;

    /// One miss with its chain, framed by this report (its noun and deadline): what
    /// `watch` prints as each miss is explained.
    fn render_miss(&self, m: &Miss, p: &Paint) -> String;
}

impl ExplainText for ExplainReport {
    fn render_text(&self, p: &Paint) -> String {
        let mut o = String::new();
        verdict(&mut o, self, p);
        histogram(&mut o, self, p);
        causes(&mut o, self, p);
        for m in self.misses.iter().take(self.top) {
            miss(&mut o, self, m, p);
        }
        if self.misses.len() > self.top {
            let _ = writeln!(
                o,
                "\n... {} more {} (--top, --json)",
                self.misses.len() - self.top,
                plural(self)
            );
        }
        context(&mut o, self, p);
        advice_and_notes(&mut o, self, p);
        o
    }

    fn render_miss(&self, m: &Miss, p: &Paint) -> String {
        let mut o = String::new();
        miss(&mut o, self, m, p);
        o
    }
}

/// What the misses are called: `outliers` or `misses`.
fn plural(r: &ExplainReport) -> &'static str {
    if r.noun == "outliers" {
        "outliers"
    } else {
        "misses"
    }
}

/// One of the misses, in the mode's words.
fn singular(r: &ExplainReport) -> &'static str {
    match r.noun {
        "outliers" => "outlier",
        "kernel reports" => "report",
        _ => "miss",
    }
}

/// The first line (counts, deadline, quantiles), where the deadline came from, the cycle.
fn verdict(o: &mut String, r: &ExplainReport, p: &Paint) {
    let c = &r.cycles;
    let dl = r.deadline_ns.map_or("no deadline".to_string(), |d| {
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
    let first = if let Some(k) = &r.kernel {
        whylate::explain::kernel_verdict(k)
    } else if let Some(x) = &r.expect {
        format!(
            "{} {}: {} without {} from {} within {} ({} came later, {} never), {:.3} misses/s{q}",
            c.count,
            x.a,
            c.misses,
            x.b,
            x.scope,
            dur(x.within_ns),
            x.late,
            x.never,
            x.misses_per_s
        )
    } else if r.noun == "outliers" {
        format!("{} outliers across the measures{q}", c.count)
    } else {
        let mut said: Vec<String> = Vec::new();
        // "no reply" is a request's (or a timerlat activation's, whose thread may never
        // run): a timer period or a softirq service has none to miss, so it is said there
        // only when some had none.
        if matches!(r.noun, "cycles" | "activations") || c.no_reply > 0 {
            said.push(format!("{} no reply", c.no_reply));
        }
        if c.not_reading > 0 {
            said.push(format!("{} ready in time but not read", c.not_reading));
        }
        match (c.cut_off, r.deadline_ns) {
            (0, _) => {}
            // Without a deadline nothing is late: an unanswered request is unjudged, and
            // "0 missed" alone would read as all answered.
            (n, None) => said.push(format!("{n} never answered and not judged: no deadline")),
            (n, Some(_)) => said.push(format!("{n} cut off by the trace's end")),
        }
        if c.end_lost > 0 {
            said.push(format!("{} whose end the trace lost", c.end_lost));
        }
        let said = match said.is_empty() {
            true => String::new(),
            false => format!(" ({})", said.join(", ")),
        };
        format!("{} {}, {} missed{said}, {dl}{q}", c.count, r.noun, c.misses)
    };
    let _ = writeln!(o, "{}", p.heading(&first));
    if let Some(x) = &c.read {
        // The quantiles above are until the reply was ready; some readers read later.
        let _ = writeln!(
            o,
            "  until read: p50 {}, p99 {}, max {} ({} replies read later than they were ready: the reader was not waiting)",
            dur(x.p50_ns),
            dur(x.p99_ns),
            dur(x.max_ns),
            x.later
        );
    }
    for b in &r.blind {
        let _ = writeln!(o, "  {} {b}", p.warn("blind:"));
    }
    if r.deadline_source != "given" && r.noun != "outliers" {
        let _ = writeln!(o, "  deadline {}", r.deadline_source);
    }
    if !r.to.is_empty() {
        let _ = writeln!(o, "  cycle: {} -> {}", r.from, r.to.join(" | "));
    }
    if c.count == 0 && !r.to.is_empty() {
        let _ = writeln!(
            o,
            "\nno cycle: nothing matched {:?} (check the selector: event name, field names, values)",
            r.from
        );
    }
}

/// The duration histogram, with the deadline's bucket marked.
fn histogram(o: &mut String, r: &ExplainReport, p: &Paint) {
    let h = &r.cycles.histogram;
    if h.is_empty() {
        return;
    }
    // Automatic mode has no replies: its durations are the outliers' own (a wait, a
    // handler, a work item, a late timer), across every measure.
    let title = if r.noun == "outliers" {
        "duration histogram (the outliers, every measure):"
    } else {
        "duration histogram (replied):"
    };
    let _ = writeln!(o, "\n{}", p.heading(title));
    let max = h.iter().map(|b| b.count).max().unwrap_or(1).max(1);
    for b in h {
        let mark = match r.deadline_ns {
            Some(d) if b.lo >= d => p.bad(" <- over the deadline"),
            Some(d) if b.hi > d => p.bad(" <- deadline inside"),
            _ => String::new(),
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

/// The ten largest causes over all misses.
fn causes(o: &mut String, r: &ExplainReport, p: &Paint) {
    if r.causes.is_empty() {
        return;
    }
    // Request cycles are weighed up to their deadline: why the reply was not there then.
    let until = if r.noun == "cycles" && r.deadline_ns.is_some() {
        ", up to each deadline"
    } else {
        ""
    };
    let title = format!(
        "why the {} {} were late (excess over the usual{until}):",
        r.cycles.misses,
        plural(r)
    );
    let _ = writeln!(o, "\n{}", p.heading(&title));
    let rows: Vec<(&str, String, &whylate::explain::CauseRow)> = r
        .causes
        .iter()
        .take(10)
        .map(|c| {
            let mut who = c.culprit.label_in(c.category);
            if let Some(cpu) = c.culprit.cpu {
                let _ = write!(who, " on CPU{cpu}");
            }
            (c.category.id(), who, c)
        })
        .collect();
    // The columns are as wide as their widest entry (at least the usual 20 and 36, so a
    // table of short names keeps its look): a long culprit such as
    // `tokio-rt-worker[75] (nice -10) on CPU1` pushes the numbers right, all rows alike.
    let cat_w = rows
        .iter()
        .map(|r| r.0.chars().count())
        .fold(20, usize::max);
    let who_w = rows
        .iter()
        .map(|r| r.1.chars().count())
        .fold(36, usize::max);
    // Where misses overlapped in time, one wait held up several: `total` counts it once,
    // `summed` once per miss it delayed (what `mean` divides).
    let repeated = r.causes.iter().any(|c| c.once_ns < c.total_excess_ns);
    let summed = |n: &str| {
        if repeated {
            format!(" {n:>11}")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        o,
        "  {:<cat_w$} {:<who_w$} {:>6} {:>11}{} {:>10} {:>6}",
        "category",
        "culprit",
        "misses",
        "total",
        summed("summed"),
        "mean",
        "share"
    );
    for (category, who, c) in rows {
        let _ = writeln!(
            o,
            "  {:<cat_w$} {:<who_w$} {:>6} {:>11}{} {:>10} {:>5.0}%",
            category,
            who,
            c.count,
            dur(c.once_ns),
            summed(&dur(c.total_excess_ns)),
            dur(c.mean_excess_ns),
            c.share * 100.0
        );
    }
    if repeated {
        let _ = writeln!(
            o,
            "  ({} overlapped in time: total counts each wait once; summed counts it once per {} it delayed, as mean does)",
            plural(r),
            singular(r)
        );
    }
}

/// One miss: its title, then its chain link by link with what held each up.
fn miss(o: &mut String, r: &ExplainReport, m: &Miss, p: &Paint) {
    let d = match (m.duration_ns, r.kernel.is_some()) {
        (Some(d), true) => format!("stuck for {}", dur(d)),
        (None, true) => "reported".to_string(),
        (Some(d), false) => match m.read_ns {
            Some(rd) => format!("ready after {}, read after {}", dur(d), dur(rd)),
            // Its end is the task's first event, not its switch-in: an upper bound.
            None if m.uncertain => format!("took at most {}", dur(d)),
            None => format!("took {}", dur(d)),
        },
        (None, false) => "no reply".to_string(),
    };
    let what = singular(r);
    let late = if m.not_reading {
        format!(
            " (read {} late: the reader was not reading)",
            dur(m.late_ns)
        )
    } else if m.late_ns > 0 && m.duration_ns.is_some() && r.deadline_ns.is_some() {
        format!(" ({} late)", dur(m.late_ns))
    } else {
        String::new()
    };
    // A pasted excerpt may name neither the task nor the CPU.
    let mut whom = Vec::new();
    if m.tid >= 0 {
        whom.push(format!("tid {}", m.tid));
    }
    if m.cpu != whylate::event::Event::NO_CPU {
        whom.push(format!("CPU{}", m.cpu));
    }
    let whom = if whom.is_empty() {
        String::new()
    } else {
        format!(" ({})", whom.join(", "))
    };
    let blamed = if r.kernel.is_some() {
        String::new()
    } else {
        format!(", {} blamed", dur(m.blamed_ns))
    };
    let title = format!("{what} at {}{whom}: {d}{late}{blamed}", secs(m.start_ns));
    let _ = writeln!(o, "\n{}", p.alarm(&title));
    for l in &m.chain {
        link(o, l, p);
    }
}

/// One link of a chain and its three largest holds.
fn link(o: &mut String, l: &Link, p: &Paint) {
    let cpu = l.cpu.map_or("    ".to_string(), |c| format!("cpu{c}"));
    let dur_s = if l.duration_ns > 0 {
        dur(l.duration_ns)
    } else {
        String::new()
    };
    let flag = if l.excess_ns > 0 {
        // A link with no usual duration to compare with (an overrun, a pattern's miss, a
        // kernel report) is all excess: say so instead of "over usual 0 ns".
        p.bad(&match l.usual_ns {
            Some(u) => format!("  <- {} over usual {}", dur(l.excess_ns), dur(u)),
            None => format!("  <- {} blamed", dur(l.excess_ns)),
        })
    } else {
        String::new()
    };
    let pend = if l.pending_at_deadline {
        format!(" {}", p.warn("[pending at the deadline]"))
    } else {
        String::new()
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
            h.culprit.label_in(h.category),
            dur(h.ns)
        );
        if let Some(why) = &h.why {
            let _ = writeln!(o, "  {:>12} {:>5}     ({why})", "", "");
        }
    }
}

/// The CPUs behind the causes, and the recording machine's IRQ placement.
fn context(o: &mut String, r: &ExplainReport, p: &Paint) {
    if !r.context.is_empty() {
        let _ = writeln!(o, "\n{}", p.heading("context:"));
        for cx in &r.context {
            let busy: Vec<String> = (cx.busy.iter())
                .map(|(t, f)| format!("{t} {:.0}%", f * 100.0))
                .collect();
            let busy = if busy.is_empty() {
                String::new()
            } else {
                format!("; busy: {}", busy.join(", "))
            };
            let _ = writeln!(o, "  CPU{}: {}{busy}", cx.cpu, cx.role);
            if !cx.irqs.is_empty() {
                let irqs: Vec<String> = cx.irqs.iter().map(|(i, n)| format!("{i} x{n}")).collect();
                let _ = writeln!(o, "        irqs handled there: {}", irqs.join(", "));
            }
        }
    }
    let Some(m) = &r.machine else {
        return;
    };
    let irqs: Vec<String> = (m.irqs.iter())
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

/// What to do, and where the analysis is blind.
fn advice_and_notes(o: &mut String, r: &ExplainReport, p: &Paint) {
    if !r.advice.is_empty() {
        let _ = writeln!(o, "\n{}", p.heading("advice:"));
        for a in &r.advice {
            let _ = writeln!(
                o,
                "  - {}\n      {}\n      cost: {}",
                a.action, a.command, a.cost
            );
        }
    }
    if !r.notes.is_empty() {
        let _ = writeln!(o, "\n{}", p.heading("notes:"));
        for n in &r.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{ExplainText, Paint};
    use whylate::explain::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss};

    fn link(kind: &str, offset: u64, excess: u64, pending: bool) -> Link {
        Link {
            offset_ns: offset,
            ts_ns: 1_000_000_000 + offset,
            cpu: Some(1),
            kind: kind.into(),
            what: format!("{kind} step"),
            duration_ns: 2_000_000,
            usual_ns: Some(50_000),
            excess_ns: excess,
            pending_at_deadline: pending,
            after_deadline: false,
            held_by: vec![Hold {
                category: whylate::explain::causes::RUNQUEUE_WAIT,
                culprit: Culprit {
                    comm: Some("hog".into()),
                    pid: Some(42),
                    cpu: Some(1),
                    ..Default::default()
                },
                ns: excess,
                why: None,
                nested_ns: 0,
            }],
            waiter: None,
            queued_in_irq: None,
        }
    }

    #[test]
    fn a_chain_reads_link_by_link_with_its_excess_and_holds() {
        let mut o = String::new();
        super::link(
            &mut o,
            &link("wakeup", 120_000, 1_950_000, true),
            &Paint::plain(),
        );
        assert_eq!(
            o,
            "  +  120.0 us  cpu1 wakeup   wakeup step [pending at the deadline] 2.000 ms  <- 1.950 ms over usual 50.0 us\n                       runqueue-wait hog[42] 1.950 ms\n"
        );
        // Styled, the excess is red and the pending mark yellow; the words stay.
        let mut s = String::new();
        super::link(
            &mut s,
            &link("wakeup", 120_000, 1_950_000, true),
            &Paint::new(true),
        );
        assert!(s.contains("\x1b[31m  <- 1.950 ms over usual 50.0 us\x1b[0m"));
        assert!(s.contains("\x1b[33m[pending at the deadline]\x1b[0m"));
    }

    #[test]
    fn the_verdict_comes_first() {
        let miss = |start: u64, d: Option<u64>| Miss {
            cpus: Vec::new(),
            read_ns: None,
            not_reading: false,
            uncertain: false,
            blame: Vec::new(),
            start_ns: start,
            duration_ns: d,
            tid: 7,
            cpu: 1,
            late_ns: 8_500_000,
            blamed_ns: 1_950_000,
            chain: vec![link("wakeup", 120_000, 1_950_000, false)],
        };
        let r = ExplainReport {
            events: 1000,
            from: "sys_enter_write".into(),
            to: vec!["sys_exit_read".into()],
            deadline_ns: Some(3_500_000),
            cycles: CycleStats {
                count: 100,
                replied: 99,
                no_reply: 1,
                misses: 3,
                p50_ns: 1_200_000,
                p99_ns: 9_000_000,
                max_ns: 12_000_000,
                ..Default::default()
            },
            misses: vec![
                miss(1_000_120_000, Some(12_000_000)),
                miss(2_000_000_000, None),
            ],
            top: 1,
            ..bare()
        };
        let text = r.render_text(&Paint::plain());
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            "100 cycles, 3 missed (1 no reply), deadline 3.500 ms; p50 1.200 ms, p99 9.000 ms, max 12.000 ms"
        );
        assert!(text.contains(
            "\nmiss at 1.000120 (tid 7, CPU1): took 12.000 ms (8.500 ms late), 1.950 ms blamed\n"
        ));
        assert!(text.contains("\n... 1 more misses (--top, --json)\n"));
    }

    /// A report with nothing in it, for one section's test.
    fn bare() -> ExplainReport {
        ExplainReport {
            inputs: Vec::new(),
            events: 0,
            from: String::new(),
            to: Vec::new(),
            deadline_ns: None,
            deadline_source: "given".into(),
            cycles: CycleStats::default(),
            causes: Vec::new(),
            misses: Vec::new(),
            context: Vec::new(),
            advice: Vec::new(),
            notes: Vec::new(),
            blind: Vec::new(),
            unread: None,
            machine: None,
            cpus: Vec::new(),
            windows: Default::default(),
            top: 3,
            recorder: Vec::new(),
            noun: "cycles",
            expect: None,
            kernel: None,
        }
    }

    #[test]
    fn the_causes_table_stays_aligned_with_a_long_culprit() {
        use whylate::explain::CauseRow;
        let row = |comm: &str, pid: i32, prio: Option<i32>, cpu: u32| CauseRow {
            category: whylate::explain::causes::RUNQUEUE_WAIT,
            culprit: Culprit {
                comm: Some(comm.into()),
                pid: Some(pid),
                prio,
                cpu: Some(cpu),
                ..Default::default()
            },
            count: 11,
            total_excess_ns: 23_532_000,
            once_ns: 23_532_000,
            mean_excess_ns: 2_139_000,
            share: 0.51,
        };
        let mut r = bare();
        r.causes = vec![
            row("hog", 6717, Some(120), 1),
            row("tokio-rt-worker", 75, Some(110), 1),
        ];
        r.cycles.misses = 2;
        let mut o = String::new();
        super::causes(&mut o, &r, &Paint::plain());
        let lines: Vec<&str> = o.lines().skip(2).collect();
        assert_eq!(lines.len(), 3, "{o}");
        assert!(
            lines[2].contains("tokio-rt-worker[75] (nice -10) on CPU1"),
            "{o}"
        );
        // Every row ends at the same column, and each number under its heading.
        let ends: Vec<usize> = lines.iter().map(|l| l.chars().count()).collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{o}");
        let col = |l: &str, w: &str| l.find(w).unwrap() + w.len();
        assert_eq!(col(lines[0], "misses"), col(lines[1], " 11"), "{o}");
        assert_eq!(col(lines[1], " 11"), col(lines[2], " 11"), "{o}");
    }

    #[test]
    fn the_automatic_histogram_is_titled_by_what_it_counts() {
        let mut r = bare();
        r.cycles.histogram = vec![whylate::measure::Bucket {
            lo: 1_000_000,
            hi: 2_000_000,
            count: 3,
        }];
        let title = |r: &ExplainReport| {
            let mut o = String::new();
            super::histogram(&mut o, r, &Paint::plain());
            o.lines().nth(1).unwrap().to_string()
        };
        assert_eq!(title(&r), "duration histogram (replied):");
        r.noun = "outliers";
        assert_eq!(
            title(&r),
            "duration histogram (the outliers, every measure):"
        );
    }

    #[test]
    fn without_a_deadline_the_verdict_says_the_unanswered_requests_were_not_judged() {
        // Six requests no reply selector matches, and no deadline: none is read as
        // answered or as a miss (whylate's explain tests assert the counts), and the
        // first line says why.
        use whylate::selector::Selector;
        use whylate::testkit;
        let t = testkit::three_cpu_chain(6, &[], 0);
        let mut o = testkit::chain_options(None);
        o.from = Selector::parse("sys_enter_write[comm=c,count=7]").unwrap();
        o.to = vec![Selector::parse("sys_exit_read[comm=nobody]").unwrap()];
        let r = whylate::explain::explain(whylate::testkit::opened(&t), &Default::default(), &o)
            .unwrap();
        assert_eq!(
            (r.deadline_ns, r.cycles.misses, r.cycles.cut_off),
            (None, 0, 6)
        );
        let head = r.render_text(&Paint::new(false));
        let head = head.lines().next().unwrap();
        assert!(
            head.contains("6 never answered and not judged: no deadline"),
            "{head}"
        );
    }
}
