//! Automatic mode: the worst outliers across the measures (waits for a CPU, long irq
//! handlers, irqs-off sections, deferred softirqs, slow work, late timers, priority
//! inversions: `auto_inversion`), each one a one-link miss explained by the engine.

use super::auto_usual::{auto_timers, waits, Stretch, Usuals};
use crate::event::{Interner, Sym, SOFTIRQ_NAMES};
use crate::explain::blame::{scale, untraced_rest};
use crate::explain::causes as cause;
use crate::explain::driver::{assemble, Findings, Framing, Tally};
use crate::explain::engine::{untraced_words, Engine, LinkKind, RawLink};
use crate::explain::report::{
    Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window, Windows,
};
use crate::explain::timer::timer_findings;
use crate::timeline::{span, EdgeKind, SpanKind, Timeline, NONE};

/// `l` as the one link of an outlier's chain.
fn one_link_miss(start: u64, dur_ns: u64, tid: i32, cpu: u32, late: u64, mut l: Link) -> Miss {
    l.offset_ns = 0;
    let blamed = l.held_by.iter().map(|h| h.ns).sum();
    Miss {
        cpus: Vec::new(),
        read_ns: None,
        not_reading: false,
        uncertain: false,
        blame: Vec::new(),
        start_ns: start,
        duration_ns: Some(dur_ns),
        tid,
        cpu,
        late_ns: late,
        blamed_ns: blamed,
        chain: vec![l],
    }
}

/// An outlier's one link: `d` against a usual `usual`.
fn link(kind: &str, ts: u64, cpu: u32, what: String, d: u64, usual: u64, held: Vec<Hold>) -> Link {
    Link {
        duration_ns: d,
        usual_ns: Some(usual),
        excess_ns: d.saturating_sub(usual),
        held_by: held,
        ..Link::mark(kind, ts, ts, Some(cpu), what)
    }
}

/// The thresholds automatic mode applies, in words (the report's first note).
const THRESHOLDS: &str = "automatic mode: outliers are waits for a CPU over 1 ms (100 us for real-time tasks) and 4x the task's usual, or over 10 ms (1 ms real-time) whatever the usual; irq handlers over 100 us and 3x their usual, or over 1 ms; irqs-off/preempt-off sections over 100 us; softirqs deferred to ksoftirqd over 100 us, or waiting over 300 us wherever they ran; work items waiting over 1 ms and 3x their usual, or over 10 ms; timer periods over 500 us; a real-time task blocked on a lower-priority task that a third one kept off its CPU for over 100 us (priority inversion). The usual is the median of at least 3 samples: with fewer, only the absolute thresholds apply. Give --from/--to for your own request/response cycle";

/// Where the list of outliers stops (all of them are tallied and counted).
pub(in crate::explain) const LISTED: usize = 200;

/// Whether `d` is an outlier: over `floor` and `times` its usual, or over `clear` (the
/// only rule without a usual).
fn outlier(d: u64, usual: Option<u64>, floor: u64, times: u64, clear: u64) -> bool {
    d >= clear || (d >= floor && usual.is_some_and(|u| d >= times * u))
}

/// The automatic mode on a built timeline.
pub fn analyze_auto(tl: &Timeline, s: &Interner, top: usize) -> ExplainReport {
    analyze_auto_in(tl, s, top, None)
}

/// Where a window of a long trace is explained: the usuals learnt over the whole trace
/// and the stretch whose outliers the window settles (those that begin in it).
pub(in crate::explain) struct Part<'u> {
    /// The whole trace's usuals.
    pub usuals: &'u Usuals,
    /// The samples it settles.
    pub only: Stretch,
}

/// [`analyze_auto`], or in `part` of a long trace: then every outlier it settles is
/// listed (the merge of the windows keeps the worst) and the notes on the whole list
/// are left to the merge.
pub(in crate::explain) fn analyze_auto_in(
    tl: &Timeline,
    s: &Interner,
    top: usize,
    part: Option<Part<'_>>,
) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let own;
    let usuals = match &part {
        Some(p) => p.usuals,
        None => {
            own = Usuals::of(tl, s);
            &own
        }
    };
    let mut found: Vec<Miss> = Vec::new();
    cpu_waits(&eng, usuals, &mut found);
    irqs_and_offs(&eng, usuals, &mut found);
    deferred_and_work(&eng, usuals, &mut found);
    crate::explain::auto_inversion::inversions(&eng, &mut found);
    // Late timers: periods whose expiry-to-running exceeds 500 us.
    let given = (usuals.timer).map(|usual| crate::explain::timer::TimerPart {
        usual,
        deadline: None,
        only: None,
    });
    let late_timers = timer_findings(&eng, &auto_timers(top), given).1;
    found.extend(late_timers.misses);
    if let Some(p) = &part {
        found.retain(|m| (p.only).settles(m.start_ns, m.start_ns + m.duration_ns.unwrap_or(0)));
    }
    let left_out = leave_out_recorder(tl, s, &mut found);
    found.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let mut tally = Tally::default();
    for m in &mut found {
        m.blame = tally.add_chain(m);
        // Where it lost its excess: the context of a report merged from windows.
        m.cpus = tally.miss_cpus();
    }
    // Before the list is cut: its causes cover every outlier.
    tally.once = Some(crate::explain::once::Once::of(&found));
    let mut d: Vec<u64> = found.iter().filter_map(|m| m.duration_ns).collect();
    d.sort_unstable();
    let n = found.len() as u64;
    let stats = CycleStats::of(&d, n, 0, n);
    let mut notes = vec![THRESHOLDS.to_string()];
    notes.extend(left_out);
    notes.extend(
        (late_timers.notes.into_iter()).filter(|n| n.starts_with(crate::explain::timer::TICK_NOTE)),
    );
    if part.is_none() {
        notes.extend(list_notes(found.len()));
        found.truncate(LISTED);
    }
    let windows = outlier_windows(&found);
    let frame = Framing {
        from: "automatic".into(),
        to: Vec::new(),
        deadline_ns: None,
        deadline_source: "automatic mode: per-measure thresholds (see notes)".into(),
        top,
        noun: "outliers",
    };
    let found = Findings {
        stats,
        misses: found,
        tally,
        notes,
        windows,
    };
    assemble(tl, s, frame, found)
}

/// The outliers listed as the report's windows, by start.
fn outlier_windows(found: &[Miss]) -> Windows {
    let mut windows: Vec<Window> = (found.iter())
        .map(|m| {
            Window::new(
                m.start_ns,
                m.duration_ns.map(|d| m.start_ns + d),
                m.start_ns + m.duration_ns.unwrap_or(0),
                m.tid,
                m.cpu,
                true,
            )
        })
        .collect();
    windows.sort_by_key(|w| w.start_ns);
    windows.into()
}

/// A report merged from windows that each listed every outlier they settle: the list
/// cut where one trace's is, with its note, and the listed outliers as its windows.
pub(in crate::explain) fn finish_merged(r: &mut ExplainReport, left_out: Option<String>) {
    let lead = r.notes.iter().position(|n| n == THRESHOLDS);
    if let (Some(i), Some(note)) = (lead, left_out) {
        r.notes.insert(i + 1, note);
    }
    // After the thresholds and the notes that follow them, as one trace's report has
    // them.
    let follows = |n: &String| {
        n.contains(" outliers of the recorder's own threads ")
            || n.starts_with(crate::explain::timer::TICK_NOTE)
    };
    // Said after automatic mode's own notes when the advice names tasks by name, as
    // one trace's report says it.
    let by_name = crate::explain::advice::BY_NAME;
    r.notes.retain(|n| n != by_name);
    let mut at = match r.notes.iter().position(|n| n == THRESHOLDS) {
        Some(i) => (i + 1..r.notes.len())
            .find(|&j| !follows(&r.notes[j]))
            .unwrap_or(r.notes.len()),
        None => r.notes.len(),
    };
    if let Some(note) = list_notes(r.cycles.count as usize) {
        r.notes.insert(at, note);
        at += 1;
    }
    if r.advice.iter().any(|a| a.command.contains("pgrep -x '")) {
        r.notes.insert(at, by_name.into());
    }
    r.misses.truncate(LISTED);
    r.windows = outlier_windows(&r.misses);
}

/// The note that says how a long trace's outliers were found in windows.
pub(in crate::explain) fn windows_note(
    windows: u64,
    events: u64,
    exact: bool,
    passes: u8,
) -> String {
    let usual = match exact {
        true => "exactly",
        false => "to 8 significant bits",
    };
    let learnt = match passes {
        3 => format!("the first pass chooses the deadline over the whole trace and the second learns the usuals of the samples on time ({usual}), the third"),
        _ => format!("the first pass learns the usuals over the whole trace, and a deadline not given ({usual}), the second"),
    };
    format!(
        "explained in {windows} windows of {events} events, in {} passes, each window dropped once explained (memory bounded by a window, not the trace): {learnt} judges each window's outliers against them; each sample is counted by the window it begins in (one still open when that window had taken as many events again, by the window it ends in), and every late one in the causes; --window-events 0 holds the whole trace",
        if passes == 3 { "three" } else { "two" }
    )
}

/// The notes on the list of `n` outliers: none found, or only the worst listed.
pub(in crate::explain) fn list_notes(n: usize) -> Option<String> {
    match n {
        0 => Some(NO_OUTLIER.into()),
        n if n > LISTED => Some(format!(
            "{n} outliers found: the {LISTED} worst are listed, the causes and counts cover all of them"
        )),
        _ => None,
    }
}

/// The note of a run without outliers.
pub(in crate::explain) const NO_OUTLIER: &str = "no outlier above those thresholds";

/// Drops the outliers whose victim is one of the recorder's own threads (a reader waiting
/// for a CPU, its timer firing late): the measurement, not the workload. Irq handlers and
/// irqs-off sections stay whoever they interrupted. What the recorder cost the workload
/// stays in the blame of the workload's outliers. Returns the note that says so.
fn leave_out_recorder(tl: &Timeline, s: &Interner, found: &mut Vec<Miss>) -> Option<String> {
    let victim = |m: &Miss| {
        let l = m.chain.first();
        let kind = l.map_or("", |l| l.kind.as_str());
        let waiter = l.and_then(|l| l.waiter.as_ref()).and_then(|w| w.pid);
        waiter.is_some_and(|p| tl.is_recorder(p))
            || (!matches!(kind, "irq" | "irqs-off" | "preempt-off") && tl.is_recorder(m.tid))
    };
    let mut who: Vec<i32> = found.iter().filter(|m| victim(m)).map(|m| m.tid).collect();
    if who.is_empty() {
        return None;
    }
    let n = who.len();
    found.retain(|m| !victim(m));
    who.sort_unstable();
    who.dedup();
    let names: Vec<(i32, String)> = (who.iter())
        .map(|&t| (t, s.get(tl.comm(t)).to_string()))
        .collect();
    Some(recorder_note(n, &names))
}

/// How the note on the recorder's outliers left out names them.
const RECORDER_NOTE: [&str; 2] = [
    " outliers of the recorder's own threads (",
    ") are left out: they are the measurement, not the workload; where the recorder held the workload up, it is blamed as the recorder",
];

/// The note on `n` outliers of the recorder's threads `who` (by tid) left out: the
/// first four named.
fn recorder_note(n: usize, who: &[(i32, String)]) -> String {
    let names: Vec<String> = (who.iter().take(4))
        .map(|(t, c)| format!("{c}[{t}]"))
        .collect();
    let more = if who.len() > 4 { ", ..." } else { "" };
    let [a, b] = RECORDER_NOTE;
    format!("{n}{a}{}{more}{b}", names.join(", "))
}

/// Moves a window's notes on the recorder's outliers into `into`, the windows' so far, as
/// one: their counts added, their threads named together (a window names at most four:
/// past that, a thread only a fifth named is missed). Taken out before the windows' notes
/// are merged, which keep one line of each shape (thread ids are numbers).
pub(in crate::explain) fn take_recorder_notes(notes: &mut Vec<String>, into: &mut Option<String>) {
    if !notes.iter().any(|n| n.contains(RECORDER_NOTE[0])) {
        return;
    }
    let mut all: Vec<String> = into.take().into_iter().collect();
    all.extend(notes.extract_if(.., |n| n.contains(RECORDER_NOTE[0])));
    merge_recorder_notes(&mut all);
    *into = all.pop();
}

/// The notes on the recorder's outliers among `notes` as one, where the first was.
fn merge_recorder_notes(notes: &mut Vec<String>) {
    let [a, b] = RECORDER_NOTE;
    let parse = |x: &str| -> Option<(usize, Vec<(i32, String)>)> {
        let (n, rest) = x.split_once(a)?;
        let list = rest.strip_suffix(b)?;
        let who = (list.split(", ").filter(|w| *w != "..."))
            .filter_map(|w| {
                let (c, t) = w.strip_suffix(']')?.rsplit_once('[')?;
                Some((t.parse().ok()?, c.to_string()))
            })
            .collect();
        Some((n.parse().ok()?, who))
    };
    let mut first = None;
    let (mut n, mut who) = (0, Vec::new());
    let mut i = 0;
    while i < notes.len() {
        match parse(&notes[i]) {
            Some((k, w)) => {
                n += k;
                who.extend(w);
                first.get_or_insert(i);
                notes.remove(i);
            }
            None => i += 1,
        }
    }
    if let Some(at) = first {
        who.sort_unstable();
        who.dedup_by_key(|w| w.0);
        notes.insert(at, recorder_note(n, &who));
    }
}

/// Waits for a CPU, per thread, far above its own usual wait: real-time threads count
/// from 100 us, others from 1 ms, and at 4x the thread's median.
fn cpu_waits(eng: &Engine<'_>, usuals: &Usuals, found: &mut Vec<Miss>) {
    let (tl, sp) = (eng.tl, &eng.tl.spans);
    for i in waits(tl) {
        let tid = sp.tid[i];
        let d = sp.end[i] - sp.start[i];
        let rt = tl.prios.get(&tid).is_some_and(|&p| p < 100);
        let usual = usuals.waits.get(&tid).copied();
        let (floor, clear) = if rt {
            (100_000, 1_000_000)
        } else {
            (1_000_000, 10_000_000)
        };
        if !outlier(d, usual, floor, 4, clear) {
            continue;
        }
        // Past the absolute threshold the task's own usual does not excuse the wait (a
        // task that always waits 40 ms): the excess is then over the floor at most.
        let u = match usual.unwrap_or(0) {
            u if d >= clear => u.min(floor),
            u => u,
        };
        let l = RawLink::wait(LinkKind::Run, sp.start[i], sp.end[i], sp.cpu[i], tid);
        let ex = d.saturating_sub(u);
        let mut held = eng.holds(&l, sp.end[i] - ex, sp.end[i]);
        let inferred = sp.flags[i] & span::INFERRED != 0;
        if !(inferred && untraced_rest(&mut held, ex, sp.cpu[i])) {
            scale(&mut held, ex);
        }
        let by = if sp.aux[i] != NONE {
            let e = &tl.edges[sp.aux[i] as usize];
            format!(
                " (woken by {})",
                eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts)
            )
        } else {
            String::new()
        };
        let what = format!(
            "{}{} waited for CPU{}{}",
            eng.task(tid),
            by,
            sp.cpu[i],
            untraced_words(inferred)
        );
        let mut lk = link("wakeup", sp.start[i], sp.cpu[i], what, d, u, held);
        lk.waiter = Some(Culprit::task(tl, eng.s, tid, sp.cpu[i]));
        // Real-time waits rank first: they are the ones a deadline usually hangs on.
        let rank = if rt { ex.saturating_mul(10) } else { ex };
        found.push(one_link_miss(sp.start[i], d, tid, sp.cpu[i], rank, lk));
    }
}

/// Irq handlers over 100 us and 3x their usual, and irqs-off / preempt-off sections over
/// 100 us.
fn irqs_and_offs(eng: &Engine<'_>, usuals: &Usuals, found: &mut Vec<Miss>) {
    let sp = &eng.tl.spans;
    // The irq measure's samples: `latency -m irq` and this mode see the same runs.
    let (runs, _) = crate::measure::irq::handlers(eng.tl);
    let mut long: Vec<(usize, Miss)> = Vec::new();
    for i in runs {
        let u = usuals.irqs.get(&sp.key[i]).copied();
        if outlier(sp.end[i] - sp.start[i], u, 100_000, 3, 1_000_000) {
            long.push((i, long_irq(eng, i, u.unwrap_or(0))));
        }
    }
    for i in 0..sp.len() {
        let d = sp.end[i] - sp.start[i];
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            continue;
        }
        if matches!(sp.kind[i], SpanKind::IrqsOff | SpanKind::PreemptOff) && d >= 100_000 {
            long.push((i, off_section(eng, i)));
        }
    }
    // In span order, as one walk gave them (the order ties keep when ranked).
    long.sort_by_key(|x| x.0);
    found.extend(long.into_iter().map(|x| x.1));
}

/// Hardirq span `i`, `u` its irq's usual, as an outlier.
fn long_irq(eng: &Engine<'_>, i: usize, u: u64) -> Miss {
    let (tl, sp) = (eng.tl, &eng.tl.spans);
    let d = sp.end[i] - sp.start[i];
    // Past the absolute threshold the usual may exceed the run itself.
    let u = u.min(d);
    let irq = sp.key[i];
    let name = tl.irq_names.get(&irq).map(|n| eng.s.get(*n).to_string());
    let held = vec![Hold {
        category: cause::HARDIRQ,
        culprit: Culprit {
            irq: Some(irq),
            irq_name: name.clone(),
            cpu: Some(sp.cpu[i]),
            ..Default::default()
        },
        ns: d - u,
        why: None,
        nested_ns: 0,
    }];
    let what = format!(
        "irq {irq}{} handler ran on CPU{}, interrupting {}",
        name.map(|n| format!(" ({n})")).unwrap_or_default(),
        sp.cpu[i],
        eng.task(sp.tid[i])
    );
    let lk = link("irq", sp.start[i], sp.cpu[i], what, d, u, held);
    one_link_miss(sp.start[i], d, sp.tid[i], sp.cpu[i], d - u, lk)
}

/// Irqs-off or preempt-off span `i` as an outlier, blamed on the code that opened it.
fn off_section(eng: &Engine<'_>, i: usize) -> Miss {
    let sp = &eng.tl.spans;
    let d = sp.end[i] - sp.start[i];
    let caller = (eng.s.get(Sym(sp.key[i])).split('+').next())
        .unwrap_or("")
        .to_string();
    let cat = if sp.kind[i] == SpanKind::IrqsOff {
        cause::IRQS_OFF
    } else {
        cause::PREEMPT_OFF
    };
    let held = vec![Hold {
        category: cat,
        culprit: Culprit {
            caller: Some(caller.clone()),
            cpu: Some(sp.cpu[i]),
            ..Default::default()
        },
        ns: d,
        why: None,
        nested_ns: 0,
    }];
    let what = format!(
        "{cat} on CPU{} in {}, opened by {caller}",
        sp.cpu[i],
        eng.task(sp.tid[i])
    );
    let lk = link(cat.id(), sp.start[i], sp.cpu[i], what, d, 0, held);
    one_link_miss(sp.start[i], d, sp.tid[i], sp.cpu[i], d, lk)
}

/// Softirqs deferred to ksoftirqd over 100 us, and work items that waited over 1 ms and
/// 3x their function's usual.
fn deferred_and_work(eng: &Engine<'_>, usuals: &Usuals, found: &mut Vec<Miss>) {
    let (tl, s) = (eng.tl, eng.s);
    for e in &tl.edges {
        let d = e.at.saturating_sub(e.ts);
        // Deferred: served in ksoftirqd, or ksoftirqd was woken for it and waited while it
        // stayed pending (even if an irq exit ran it in the end: seed 002's tasklet).
        let ksoftirqd = (e.kind == EdgeKind::Softirq)
            .then(|| eng.ksoftirqd_waiting(e.to_cpu, e.ts, e.at))
            .flatten();
        let deferred = e.kind == EdgeKind::Softirq
            && (e.val as u8 & span::KSOFTIRQD != 0 || ksoftirqd.is_some());
        let (kind, u) = match e.kind {
            EdgeKind::Softirq => {
                if !(deferred && d >= 100_000 || d >= 300_000) {
                    continue;
                }
                ("softirq", 0)
            }
            EdgeKind::Work => {
                let u = usuals.work.get(s.get(Sym(e.key))).copied();
                if !outlier(d, u, 1_000_000, 3, 10_000_000) {
                    continue;
                }
                // Past the absolute threshold the usual may exceed the wait itself.
                ("work", u.unwrap_or(0).min(d))
            }
            _ => continue,
        };
        let ex = d - u;
        let held = if kind == "softirq" {
            crate::explain::softirq::service_holds(eng, e, ex).0
        } else {
            let l = RawLink::wait(LinkKind::Work, e.ts, e.at, e.to_cpu, e.to_tid);
            let mut held = eng.holds(&l, e.at - ex, e.at);
            scale(&mut held, ex);
            held
        };
        let by = eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts);
        let what = if kind == "softirq" {
            let place = match ksoftirqd {
                Some(i) if e.val as u8 & span::KSOFTIRQD == 0 => format!(
                    "deferred to {} (runnable from {}), then ran at an irq exit over {}",
                    eng.task(tl.spans.tid[i]),
                    crate::units::secs(tl.spans.start[i]),
                    eng.task(e.to_tid)
                ),
                _ if deferred => format!("deferred to {}", eng.task(e.to_tid)),
                _ => format!("ran at an irq exit over {}", eng.task(e.to_tid)),
            };
            format!(
                "{} raised in {by} on CPU{}, {place}",
                SOFTIRQ_NAMES.get(e.key as usize).copied().unwrap_or("?"),
                e.from_cpu,
            )
        } else {
            format!(
                "{} queued by {by} on CPU{}, started in {} on CPU{}",
                s.get(Sym(e.key)),
                e.from_cpu,
                eng.task(e.to_tid),
                e.to_cpu
            )
        };
        let mut lk = link(kind, e.ts, e.to_cpu, what, d, u, held);
        // The worker or ksoftirqd waited; a task a softirq ran over did not.
        let waiter = match ksoftirqd {
            Some(i) => tl.spans.tid[i],
            None if kind == "work" || deferred => e.to_tid,
            None => -1,
        };
        lk.waiter = (waiter > 0).then(|| Culprit::task(tl, s, waiter, e.to_cpu));
        found.push(one_link_miss(e.ts, d, e.to_tid, e.to_cpu, ex, lk));
    }
}
