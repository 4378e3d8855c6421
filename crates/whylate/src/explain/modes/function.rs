//! `--function F`: slow calls of a kernel function, each explained like a miss. With
//! function_graph the samples are F's calls, and a call's time goes to its callees (each
//! descendant's own time, by function), to F's own code, to the interrupts and softirqs
//! that ran on its CPU meanwhile and to the tasks that ran while F's task was off it.
//! Without function_graph the samples are the irqs-off sections F opened (seed 004's
//! console_unlock), with the interrupts that waited for them.

use crate::dist::{quantile, Sketch};
use crate::event::{Event, Interner, Sym};
use crate::explain::blame::scale;
use crate::explain::causes as cause;
use crate::explain::driver::{assemble, Findings, Framing, PerMiss, Tally};
use crate::explain::report::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window};
use crate::glob::Glob;
use crate::pipeline::Stretch;
use crate::timeline::{OccupantKind, SpanKind, Timeline, NONE};
use crate::units::{dur, secs};
use rustc_hash::FxHashMap;

/// What `--function` explains.
#[derive(Clone, Debug)]
pub struct FunctionOptions {
    /// The function (a glob: `serial8250_*`).
    pub func: Glob,
    /// Calls longer than this are misses.
    pub deadline_ns: Option<u64>,
    /// Units the function moves per second (`--expect 115200baud`): without a deadline,
    /// a call may take one unit's time.
    pub expect_per_s: Option<f64>,
    /// Misses shown in full.
    pub top: usize,
}

/// One sample: a call (index into `tl.calls`) or an irqs-off section (span index).
#[derive(Clone, Copy)]
struct Sample {
    start: u64,
    dur: u64,
    /// When the stream showed it ended (a call's exit event: its duration is the one
    /// the exit line gives), for settling it in a window.
    end: u64,
    cpu: u32,
    tid: i32,
    call: Option<usize>,
    section: Option<usize>,
}

/// The `--function` analysis on a built timeline.
pub fn analyze_function(tl: &Timeline, s: &Interner, o: &FunctionOptions) -> ExplainReport {
    analyze_function_in(tl, s, o, None)
}

/// What the samples of a window of a long trace are judged against, learnt over the
/// whole trace ([`FunctionSamples`]): the deadline and why, the usual sample, whether the
/// samples are irqs-off sections, and the notes on what limits the analysis.
#[derive(Clone, Debug)]
pub(in crate::explain) struct FunctionUsual {
    deadline: u64,
    source: String,
    usual: u64,
    sections: bool,
    /// [`notes`] of the whole trace.
    pub(in crate::explain) notes: Vec<String>,
}

/// The samples of every window of a long trace (those each settles), in sketches: exact
/// while they take at most [`Sketch::EXACT`] distinct values, to 8 significant bits beyond.
#[derive(Clone, Debug)]
pub(in crate::explain) struct FunctionSamples {
    o: FunctionOptions,
    /// F's returned calls.
    calls: Sketch,
    /// The irqs-off sections F opened.
    sections: Sketch,
    /// Some call had a CPU.
    call_cpu: bool,
    /// Some window had a task's run.
    runs: bool,
}

impl FunctionSamples {
    /// Nothing learnt yet, for `o`.
    pub(in crate::explain) fn new(o: &FunctionOptions) -> FunctionSamples {
        FunctionSamples {
            o: o.clone(),
            calls: Sketch::default(),
            sections: Sketch::default(),
            call_cpu: false,
            runs: false,
        }
    }

    /// Adds the samples of `tl` that the window settles.
    pub(in crate::explain) fn add(&mut self, tl: &Timeline, s: &Interner, only: &Stretch) {
        let (calls, sections) = both(tl, s, &self.o.func);
        for x in calls.iter().filter(|x| only.settles(x.start, x.end)) {
            self.calls.add(x.dur);
            self.call_cpu |= x.cpu != Event::NO_CPU;
        }
        for x in sections.iter().filter(|x| only.settles(x.start, x.end)) {
            self.sections.add(x.dur);
        }
        self.runs |= tl.runs_by_cpu.iter().any(|r| !r.is_empty());
    }

    /// Whether the samples are sections (no call of F returned), and theirs.
    fn samples(&self) -> (bool, &Sketch) {
        match self.calls.count() {
            0 => (true, &self.sections),
            _ => (false, &self.calls),
        }
    }

    /// The deadline, usual and notes of every sample added, as [`analyze_function`]
    /// takes them from one timeline.
    pub(in crate::explain) fn usual(&self) -> FunctionUsual {
        let (sections, x) = self.samples();
        let sections = sections && x.count() > 0;
        let median = || x.nth(x.count().saturating_sub(1) / 2);
        let (deadline, source) = policy(
            &self.o,
            x.count(),
            || x.nearest_rank(0.99),
            median,
            sections,
        );
        let usual = match x.at_most(deadline) {
            0 => 0,
            good => x.nth((good - 1) / 2),
        };
        let seen = Seen {
            samples: x.count() > 0,
            sections,
            any_cpu: self.call_cpu,
            runs: self.runs,
        };
        FunctionUsual {
            deadline,
            source,
            usual,
            sections,
            notes: notes(&self.o, seen),
        }
    }

    /// Whether the deadline and usual are exact (no sketch rounded).
    pub(in crate::explain) fn exact(&self) -> bool {
        self.samples().1.exact()
    }
}

/// A window of a long trace: what its samples are judged against, and which it settles.
pub(in crate::explain) struct FunctionPart<'a> {
    /// Learnt over the whole trace.
    pub(in crate::explain) usual: &'a FunctionUsual,
    /// The samples settled.
    pub(in crate::explain) only: &'a Stretch,
}

/// [`analyze_function`], in `part` of a long trace when given: the samples it settles,
/// judged against the whole trace's deadline and usual (the notes are the merged
/// report's).
pub(in crate::explain) fn analyze_function_in(
    tl: &Timeline,
    s: &Interner,
    o: &FunctionOptions,
    part: Option<FunctionPart<'_>>,
) -> ExplainReport {
    let (calls, sections) = both(tl, s, &o.func);
    let from_sections = match &part {
        Some(p) => p.usual.sections,
        None => calls.is_empty() && !sections.is_empty(),
    };
    let mut samples = if from_sections { sections } else { calls };
    if let Some(p) = &part {
        samples.retain(|x| p.only.settles(x.start, x.end));
    }
    let mut lat: Vec<u64> = samples.iter().map(|x| x.dur).collect();
    lat.sort_unstable();
    let (deadline, source, usual) = match &part {
        Some(p) => (p.usual.deadline, p.usual.source.clone(), p.usual.usual),
        None => {
            let median = || {
                lat.get(lat.len().saturating_sub(1) / 2)
                    .copied()
                    .unwrap_or(0)
            };
            let n = lat.len() as u64;
            let p99 = || quantile(&lat, 0.99);
            let (deadline, source) = policy(o, n, p99, median, from_sections);
            let good: Vec<u64> = lat.iter().copied().filter(|&d| d <= deadline).collect();
            let usual = (good.get(good.len().saturating_sub(1) / 2).copied()).unwrap_or(0);
            (deadline, source, usual)
        }
    };
    let tree = Tree::of(tl);
    let eng = crate::explain::engine::Engine::new(tl, s);
    let mut tally = Tally::default();
    let mut misses: Vec<Miss> = (samples.iter())
        .filter(|x| x.dur > deadline)
        .map(|x| explain_one(&eng, &tree, x, (usual, deadline), &mut tally))
        .collect();
    misses.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let notes = match part {
        Some(_) => Vec::new(),
        None => notes(o, Seen::of(tl, &samples, from_sections)),
    };
    let stats = CycleStats::of(&lat, samples.len() as u64, 0, misses.len() as u64);
    let windows = (samples.iter())
        .map(|x| {
            Window::new(
                x.start,
                Some(x.start + x.dur),
                x.start + x.dur,
                x.tid,
                x.cpu,
                x.dur > deadline,
            )
        })
        .collect();
    let name = o.func.as_str();
    let frame = Framing {
        from: if from_sections {
            format!("irq_disable in {name}")
        } else {
            format!("entry of {name}")
        },
        to: vec![if from_sections {
            "irq_enable".into()
        } else {
            "its return".into()
        }],
        deadline_ns: Some(deadline),
        deadline_source: source,
        top: o.top,
        noun: if from_sections {
            "irqs-off sections"
        } else {
            "calls"
        },
    };
    let found = Findings {
        stats,
        misses,
        tally,
        notes,
        windows,
    };
    assemble(tl, s, frame, found)
}

/// F's returned calls, and the irqs-off sections whose caller is F (by start).
fn both(tl: &Timeline, s: &Interner, f: &Glob) -> (Vec<Sample>, Vec<Sample>) {
    let calls: Vec<Sample> = (tl.calls.iter().enumerate())
        .filter(|(_, c)| !c.exit_unseen && f.is_match(s.get(c.func)))
        .map(|(i, c)| Sample {
            start: c.start,
            dur: c.dur,
            end: c.exit.max(c.start),
            cpu: c.cpu,
            tid: c.tid,
            call: Some(i),
            section: None,
        })
        .collect();
    let sp = &tl.spans;
    let mut sections: Vec<Sample> = (0..sp.len())
        .filter(|&i| sp.kind[i] == SpanKind::IrqsOff && f.is_match(base(s.get(Sym(sp.key[i])))))
        .map(|i| Sample {
            start: sp.start[i],
            dur: sp.end[i] - sp.start[i],
            end: sp.end[i],
            cpu: sp.cpu[i],
            tid: sp.tid[i],
            call: None,
            section: Some(i),
        })
        .collect();
    sections.sort_by_key(|x| x.start);
    (calls, sections)
}

/// `console_unlock+0xc0/0x510` → `console_unlock`.
fn base(sym: &str) -> &str {
    sym.split('+').next().unwrap_or(sym)
}

/// The deadline: given; else one unit's time at the expected rate; else p99 with 100
/// samples or more; else, for a handful of samples (a pasted excerpt), 100 us for
/// irqs-off sections, twice the median for calls, and a lone call is explained anyway.
/// `n` samples, whose p99 and median `p99` and `median` give.
fn policy(
    o: &FunctionOptions,
    n: u64,
    p99: impl FnOnce() -> u64,
    median: impl FnOnce() -> u64,
    sections: bool,
) -> (u64, String) {
    if let Some(d) = o.deadline_ns {
        return (d, "given".into());
    }
    if let Some(r) = o.expect_per_s.filter(|r| *r > 0.0) {
        let d = (1e9 / r).round() as u64;
        return (
            d,
            format!(
                "one unit's time at the expected {r:.0}/s: each call may take {}",
                dur(d)
            ),
        );
    }
    if n >= 100 {
        return (
            p99(),
            "none given: the calls above p99 are explained".into(),
        );
    }
    if sections {
        return (
            100_000,
            "none given and too few sections for a p99: 100 us assumed (every interrupt on the CPU waits that long)".into(),
        );
    }
    if n == 1 {
        return (0, "none given and a single call: it is explained".into());
    }
    (
        median() * 2,
        "none given and too few calls for a p99: those over twice the median are explained".into(),
    )
}

/// Calls by entry number, each call's direct children, and the irqs-off sections per CPU.
struct Tree {
    by_id: FxHashMap<u32, usize>,
    children: FxHashMap<u32, Vec<usize>>,
    irqsoff: FxHashMap<u32, Vec<usize>>,
}

impl Tree {
    fn of(tl: &Timeline) -> Tree {
        let mut by_id = FxHashMap::default();
        let mut children: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        for (i, c) in tl.calls.iter().enumerate() {
            by_id.insert(c.id, i);
            if c.parent != NONE {
                children.entry(c.parent).or_default().push(i);
            }
        }
        let mut irqsoff: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        let sp = &tl.spans;
        for i in (0..sp.len()).filter(|&i| sp.kind[i] == SpanKind::IrqsOff) {
            irqsoff.entry(sp.cpu[i]).or_default().push(i);
        }
        Tree {
            by_id,
            children,
            irqsoff,
        }
    }

    /// Own time per function of every call below `id` (the flat profile of its subtree).
    fn below(&self, tl: &Timeline, id: u32, out: &mut FxHashMap<Sym, u64>) {
        for &k in self.children.get(&id).map_or(&[][..], |v| &v[..]) {
            let c = &tl.calls[k];
            *out.entry(c.func).or_default() += c.self_ns;
            self.below(tl, c.id, out);
        }
    }

    /// `a <- b` callers of call `i`, nearest first: by the calls still in `tl.calls`.
    fn callers(&self, tl: &Timeline, s: &Interner, i: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut p = tl.calls[i].parent;
        while p != NONE && out.len() < 6 {
            let Some(c) = self.by_id.get(&p).map(|&k| &tl.calls[k]) else {
                break;
            };
            out.push(s.get(c.func).to_string());
            p = c.parent;
        }
        out
    }
}

/// One slow sample explained: where its time went, scaled to its excess.
fn explain_one(
    eng: &crate::explain::engine::Engine<'_>,
    tree: &Tree,
    x: &Sample,
    (usual, deadline): (u64, u64),
    tally: &mut Tally,
) -> Miss {
    let (tl, s) = (eng.tl, eng.s);
    let cpu = (x.cpu != Event::NO_CPU).then_some(x.cpu);
    let (end, ex) = (x.start + x.dur, x.dur.saturating_sub(usual));
    let mut held = match x.call {
        Some(i) => call_holds(eng, tree, i),
        None => vec![Hold {
            category: cause::IRQS_OFF,
            culprit: code(
                s,
                x.section.map_or(Sym::EMPTY, |i| Sym(tl.spans.key[i])),
                cpu,
            ),
            ns: x.dur,
            why: None,
            nested_ns: 0,
        }],
    };
    held.retain(|h| h.ns > 0);
    held.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then(a.culprit.label().cmp(&b.culprit.label()))
    });
    scale(&mut held, ex);
    let mut per = PerMiss::default();
    per.add_holds(&held);
    if let Some(c) = cpu {
        tally.blame_cpu(c, held.iter().map(|h| h.ns).sum());
    }
    let blamed = held.iter().map(|h| h.ns).sum();
    let blame = tally.add_miss(per);
    let what = match x.call {
        Some(i) => call_words(tl, s, tree, i),
        None => section_words(tl, s, x),
    };
    let mut chain = vec![Link {
        duration_ns: x.dur,
        usual_ns: Some(usual),
        excess_ns: ex,
        held_by: held,
        waiter: (x.tid > 0).then(|| Culprit::task(tl, s, x.tid, x.cpu)),
        ..Link::mark(
            if x.call.is_some() { "call" } else { "irqs-off" },
            x.start,
            x.start,
            cpu,
            what,
        )
    }];
    chain.extend(delayed(tl, s, x, end));
    Miss {
        cpus: tally.miss_cpus(),
        read_ns: None,
        not_reading: false,
        uncertain: false,
        blame,
        start_ns: x.start,
        duration_ns: Some(x.dur),
        tid: x.tid,
        cpu: x.cpu,
        late_ns: x.dur - deadline,
        blamed_ns: blamed,
        chain,
    }
}

/// A culprit that is code: the function (or the caller that disabled interrupts).
fn code(s: &Interner, sym: Sym, cpu: Option<u32>) -> Culprit {
    Culprit {
        caller: Some(base(s.get(sym)).to_string()),
        cpu,
        ..Default::default()
    }
}

/// Where call `i`'s time went: its blocks (a task that woke it is followed, as a wait
/// for that task: `Engine::blocked_holds`), interrupts, softirqs and other tasks on its
/// CPU while it could run (when the trace has CPUs and scheduling), the rest split over
/// its callees' own time and its own.
fn call_holds(eng: &crate::explain::engine::Engine<'_>, tree: &Tree, i: usize) -> Vec<Hold> {
    let (tl, s) = (eng.tl, eng.s);
    let c = &tl.calls[i];
    let cpu = (c.cpu != Event::NO_CPU).then_some(c.cpu);
    let (mut out, awake) = blocks(eng, c.tid, c.start, c.start + c.dur);
    let mut away: u64 = out.iter().map(|h| h.ns).sum();
    let occupants = |cpu| (awake.iter()).flat_map(move |&(a, b)| tl.occupants(cpu, a, b));
    if let Some(cpu) = cpu.filter(|_| c.tid > 0) {
        for o in occupants(cpu) {
            let culprit = match o.what {
                OccupantKind::Task if o.id == c.tid as i64 => continue,
                // The idle task while the call's task was runnable: the CPU's idle exit.
                OccupantKind::Task if o.id == 0 => {
                    away += o.ns;
                    out.push(Hold::on_cpu(cause::CPU_IDLE, cpu, o.ns));
                    continue;
                }
                OccupantKind::Task => Culprit::task(tl, s, o.id as i32, cpu),
                OccupantKind::Hardirq => Culprit {
                    irq: Some(o.id as u32),
                    irq_name: (o.name != Sym::EMPTY).then(|| s.get(o.name).to_string()),
                    cpu: Some(cpu),
                    ..Default::default()
                },
                OccupantKind::Softirq => Culprit {
                    vector: crate::event::SOFTIRQ_NAMES
                        .get(o.id as usize)
                        .map(|v| v.to_string()),
                    cpu: Some(cpu),
                    ..Default::default()
                },
            };
            let category = match o.what {
                OccupantKind::Task => cause::PREEMPTED_BY,
                OccupantKind::Hardirq => cause::HARDIRQ,
                OccupantKind::Softirq => cause::SOFTIRQ,
            };
            away += o.ns;
            out.push(Hold {
                category,
                culprit,
                ns: o.ns,
                why: None,
                nested_ns: 0,
            });
        }
    }
    // The rest is the call's own run time: its subtree's own times, in proportion.
    let run = c.dur.saturating_sub(away);
    let mut parts: FxHashMap<Sym, u64> = FxHashMap::default();
    tree.below(tl, c.id, &mut parts);
    let mut code_holds: Vec<Hold> = parts
        .into_iter()
        .map(|(f, ns)| Hold {
            category: if f == c.func {
                cause::OWN_CODE
            } else {
                cause::CALLEE
            },
            culprit: code(s, f, cpu),
            ns,
            why: None,
            nested_ns: 0,
        })
        .collect();
    code_holds.push(Hold {
        category: cause::OWN_CODE,
        culprit: code(s, c.func, cpu),
        ns: c.self_ns,
        why: None,
        nested_ns: 0,
    });
    let mut code_holds = crate::explain::blame::merge_same(code_holds);
    scale(&mut code_holds, run);
    out.extend(code_holds);
    out
}

/// `tid`'s sleeps inside `[a, b)` as holds (one a task ended: what delayed that task;
/// another: `blocked-on` what woke it), and the stretches it was not asleep.
fn blocks(
    eng: &crate::explain::engine::Engine<'_>,
    tid: i32,
    a: u64,
    b: u64,
) -> (Vec<Hold>, Vec<(u64, u64)>) {
    let sp = &eng.tl.spans;
    let (from, to) = (
        eng.sleeps.partition_point(|&i| sp.end[i as usize] <= a),
        eng.sleeps.partition_point(|&i| sp.end[i as usize] <= b),
    );
    let mut held = Vec::new();
    let (mut awake, mut at) = (Vec::new(), a);
    for &i in &eng.sleeps[from..to] {
        let i = i as usize;
        if sp.tid[i] != tid || tid <= 0 {
            continue;
        }
        let (sa, sb) = (sp.start[i].max(a), sp.end[i]);
        if sb <= sa || sa < at {
            continue;
        }
        match eng.blocked_holds(tid, sa, sb) {
            Some((h, _)) => held.extend(h),
            None => held.push(Hold {
                why: Some(format!("{} slept in the call", eng.task(tid))),
                ..Hold::on_cpu(cause::BLOCKED_ON, sp.cpu[i], sb - sa)
            }),
        }
        awake.push((at, sa));
        at = sb;
    }
    awake.push((at, b));
    awake.retain(|&(x, y)| y > x);
    (held, awake)
}

/// `wait_for_xmitr by sertest[21649] on CPU8, called from a <- b; interrupts off for 1.2
/// ms of it (console_unlock)`.
fn call_words(tl: &Timeline, s: &Interner, tree: &Tree, i: usize) -> String {
    let c = &tl.calls[i];
    let mut w = s.get(c.func).to_string();
    if c.tid > 0 {
        w += &format!(" by {}", tl.task_name(s, c.tid));
    }
    if c.cpu != Event::NO_CPU {
        w += &format!(" on CPU{}", c.cpu);
    }
    let callers = tree.callers(tl, s, i);
    if !callers.is_empty() {
        w += &format!(", called from {}", callers.join(" <- "));
    }
    if let Some((ns, who)) = irqs_off_inside(tl, s, tree, c.cpu, (c.start, c.start + c.dur)) {
        w += &format!("; interrupts off for {} of it ({who})", dur(ns));
    }
    w
}

/// Irqs-off time on `cpu` within `[a, b)` and the code that disabled them longest.
fn irqs_off_inside(
    tl: &Timeline,
    s: &Interner,
    tree: &Tree,
    cpu: u32,
    (a, b): (u64, u64),
) -> Option<(u64, String)> {
    let sp = &tl.spans;
    let mut total = 0;
    let mut longest = (0, Sym::EMPTY);
    for &i in tree.irqsoff.get(&cpu).map_or(&[][..], |v| &v[..]) {
        let ov = sp.end[i].min(b).saturating_sub(sp.start[i].max(a));
        total += ov;
        if ov > longest.0 {
            longest = (ov, Sym(sp.key[i]));
        }
    }
    (total > 0).then(|| (total, base(s.get(longest.1)).to_string()))
}

/// `interrupts off in console_unlock by <...>[6462] on CPU6 (enabled in console_unlock)`.
fn section_words(tl: &Timeline, s: &Interner, x: &Sample) -> String {
    let i = x.section.unwrap_or(0);
    let sp = &tl.spans;
    let on = base(s.get(Sym(sp.key[i])));
    let off = base(s.get(Sym(sp.aux[i])));
    let mut w = format!("interrupts off in {on}");
    if x.tid >= 0 {
        w += &format!(" by {}", tl.task_name(s, x.tid));
    }
    w += &format!(" on CPU{}", x.cpu);
    if !off.is_empty() && off != on {
        w += &format!(", enabled in {off}");
    }
    w
}

/// What waited for the sample to end on its CPU: the interrupts that entered within
/// 100 us of it, and timers that reported themselves late right after.
fn delayed(tl: &Timeline, s: &Interner, x: &Sample, end: u64) -> Vec<Link> {
    const NEAR: u64 = 100_000;
    if x.cpu == Event::NO_CPU || x.section.is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let sp = &tl.spans;
    for &i in tl
        .irqs_by_cpu
        .get(x.cpu as usize)
        .map_or(&[][..], |v| &v[..])
    {
        let i = i as usize;
        if sp.kind[i] == SpanKind::Hardirq && sp.start[i] >= end && sp.start[i] <= end + NEAR {
            let irq = sp.key[i];
            let name = tl
                .irq_names
                .get(&irq)
                .map(|n| format!(" ({})", s.get(*n)))
                .unwrap_or_default();
            out.push(Link {
                after_deadline: true,
                ..Link::mark(
                    "delayed",
                    x.start,
                    sp.start[i],
                    Some(x.cpu),
                    format!(
                        "irq {irq}{name} entered {} after interrupts came back on",
                        dur(sp.start[i] - end)
                    ),
                )
            });
            break;
        }
    }
    for r in tl
        .reported
        .iter()
        .filter(|r| r.cpu == x.cpu && r.ts >= end && r.ts <= end + NEAR)
    {
        out.push(Link {
            after_deadline: true,
            ..Link::mark(
                "delayed",
                x.start,
                r.ts,
                Some(x.cpu),
                format!(
                    "{} reported itself {} late at {}",
                    s.get(r.name),
                    dur(r.late_ns),
                    secs(r.ts)
                ),
            )
        });
    }
    out
}

/// What the notes on the samples depend on.
struct Seen {
    /// Some sample.
    samples: bool,
    /// The samples are irqs-off sections.
    sections: bool,
    /// Some sample has a CPU.
    any_cpu: bool,
    /// The trace has a task's run.
    runs: bool,
}

impl Seen {
    fn of(tl: &Timeline, samples: &[Sample], sections: bool) -> Seen {
        Seen {
            samples: !samples.is_empty(),
            sections,
            any_cpu: samples.iter().any(|x| x.cpu != Event::NO_CPU),
            runs: tl.runs_by_cpu.iter().any(|r| !r.is_empty()),
        }
    }
}

/// What limits the analysis.
fn notes(o: &FunctionOptions, seen: Seen) -> Vec<String> {
    let mut v = Vec::new();
    let name = o.func.as_str();
    if !seen.samples {
        v.push(format!(
            "no returned call of {name} and no irqs-off section opened by it in this trace: record it with `trace-cmd record -p function_graph -g {name}` (or preemptirq:irq_disable/irq_enable for the sections it runs with interrupts off)"
        ));
    } else if seen.sections {
        v.push(format!(
            "the trace has no function_graph calls of {name}: its irqs-off sections are the samples (what ran inside them needs function_graph)"
        ));
    } else if !seen.any_cpu {
        v.push(
            "the calls have no CPU or task: their time is split over the code they ran; what interrupted or preempted them cannot be seen".into(),
        );
    } else if !seen.runs {
        v.push(
            "no scheduling events: time another task ran during a call counts as the call's own"
                .into(),
        );
    }
    v
}

/// A report merged from windows: the notes one trace's report has, for the samples of
/// every window, and the advice given once.
pub(in crate::explain) fn finish_merged(r: &mut ExplainReport, notes: &[String]) {
    crate::explain::advice::end_merged_notes(r, notes.iter().cloned());
}

#[cfg(test)]
mod tests;
