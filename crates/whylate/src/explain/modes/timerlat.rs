//! A timerlat trace explained: every activation whose thread latency is over the deadline,
//! with the additive breakdown of that latency: the timer IRQ's own latency, then each
//! noise the osnoise events saw between the IRQ's entry and the thread running (IRQ
//! handlers by name and vector, softirqs, NMIs, other threads), and the remainder
//! (scheduling, kernel entry and exit). The parts sum to the thread latency. osnoise
//! `sample_threshold` hits are explained the same way from the noise inside them.

use crate::dist::median;
use crate::event::Interner;
use crate::explain::causes::{self as cause, Category};
use crate::explain::driver::{assemble, Findings, Framing, Tally};
use crate::explain::report::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window};
use crate::timeline::rtla::{Activation, Noise, NoiseKind};
use crate::timeline::Timeline;

/// The default deadline is this many times the median thread latency...
const TIMES_MEDIAN: u64 = 10;
/// ...and at least this, ns.
const FLOOR_NS: u64 = 50_000;
/// Event times in ftrace text are microseconds: a noise is inside an activation when it
/// starts within this of its bounds.
const SLACK_NS: u64 = 1_000;

/// IRQ descriptions of x86 system vectors (not device lines in /proc/irq).
const VECTORS: [&str; 10] = [
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "thermal_apic",
    "threshold_apic",
    "spurious_apic",
    "error_apic",
    "x86_platform_ipi",
];

/// The deadline: the one given, else [`TIMES_MEDIAN`] x the median (at least
/// [`FLOOR_NS`]); and how it was chosen.
fn deadline(given: Option<u64>, lats: &[u64]) -> (u64, String) {
    if let Some(d) = given {
        return (d, "given".into());
    }
    let med = median(lats.to_vec());
    let d = (med * TIMES_MEDIAN).max(FLOOR_NS);
    let how = format!(
        "default: {TIMES_MEDIAN}x the median thread latency ({}), at least {}; --deadline sets it",
        crate::units::dur(med),
        crate::units::dur(FLOOR_NS)
    );
    (d, how)
}

/// Who a noise was, as a hold's category and culprit.
fn culprit(n: &Noise) -> (Category, Culprit) {
    let cpu = Some(n.cpu);
    let name = n.name.trim().to_string();
    match n.kind {
        NoiseKind::Irq if VECTORS.contains(&name.as_str()) => (
            cause::CPU_VECTOR,
            Culprit {
                caller: Some(format!("{name}:{}", n.id)),
                cpu,
                ..Default::default()
            },
        ),
        NoiseKind::Irq => (
            cause::HARDIRQ,
            Culprit {
                irq: u32::try_from(n.id).ok(),
                irq_name: Some(name),
                cpu,
                ..Default::default()
            },
        ),
        NoiseKind::Softirq => (
            cause::SOFTIRQ,
            Culprit {
                vector: Some(name),
                cpu,
                ..Default::default()
            },
        ),
        NoiseKind::Nmi => (
            cause::NMI,
            Culprit {
                cpu,
                ..Default::default()
            },
        ),
        NoiseKind::Thread => (
            cause::THREAD_NOISE,
            Culprit {
                comm: Some(name),
                pid: Some(n.id),
                cpu,
                ..Default::default()
            },
        ),
    }
}

/// The noise events among `noise` as parts: same culprits merged, largest first.
fn noise_parts(noise: &[&Noise], (from, to): (u64, u64)) -> Vec<Hold> {
    let mut parts: Vec<Hold> = Vec::new();
    let inside = noise
        .iter()
        .filter(|n| n.start + SLACK_NS >= from && n.start <= to + SLACK_NS);
    for n in inside {
        let (cat, who) = culprit(n);
        match parts
            .iter_mut()
            .find(|h| h.category == cat && h.culprit == who)
        {
            Some(h) => h.ns += n.dur_ns,
            None => parts.push(Hold {
                category: cat,
                culprit: who,
                ns: n.dur_ns,
                why: None,
                nested_ns: 0,
            }),
        }
    }
    parts
}

/// The parts of `total` ns on `cpu`: the `fixed` ones, then `parts` (largest first),
/// then the remainder as `rest`. Parts past what is left are cut, so they always sum to
/// `total`.
pub(in crate::explain) fn fill(
    mut parts: Vec<Hold>,
    cpu: u32,
    total: u64,
    fixed: Vec<Hold>,
    rest: (Category, &str),
) -> Vec<Hold> {
    let mut left = total.saturating_sub(fixed.iter().map(|h| h.ns).sum());
    parts.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then(a.culprit.label().cmp(&b.culprit.label()))
    });
    for h in &mut parts {
        h.ns = h.ns.min(left);
        left -= h.ns;
    }
    parts.retain(|h| h.ns > 0);
    let mut out = fixed;
    out.append(&mut parts);
    if left > 0 {
        out.push(Hold {
            why: Some(rest.1.into()),
            ..Hold::on_cpu(rest.0, cpu, left)
        });
    }
    out
}

/// What held `cpu` from the timer's expiry to the thread (`from`, `entry`, `to`): the
/// osnoise events there, else what the sched and irq tracepoints show after the IRQ's
/// entry (leaving `tid`, the sampling thread, to the remainder); and whether the
/// tracepoints told it.
fn parts_in(
    tl: &Timeline,
    s: &Interner,
    noise: &[&Noise],
    cpu: u32,
    (from, entry, to): (u64, u64, u64),
    tid: i32,
) -> (Vec<Hold>, bool) {
    let parts = noise_parts(noise, (from, to));
    if !parts.is_empty() {
        return (parts, false);
    }
    let traced = crate::explain::timerlat_join::traced_parts(tl, s, cpu, (entry, to), tid);
    let joined = !traced.is_empty();
    (traced, joined)
}

/// The IRQ link's parts: the noise that ran before the timer's IRQ could (largest first,
/// at most `irq_lat` in all), then the rest of its latency as [`irq_hold`].
fn irq_parts(a: &Activation, tl: &Timeline, irq_lat: u64, mut noise: Vec<Hold>) -> Vec<Hold> {
    noise.sort_by_key(|h| std::cmp::Reverse(h.ns));
    let mut left = irq_lat;
    for h in &mut noise {
        h.ns = h.ns.min(left);
        left -= h.ns;
    }
    noise.retain(|h| h.ns > 0);
    if left > 0 {
        noise.push(irq_hold(a, tl, left));
    }
    noise
}

/// Each CPU's noise, by start.
fn noise_by_cpu(tl: &Timeline) -> Vec<Vec<&Noise>> {
    let mut v: Vec<Vec<&Noise>> = Vec::new();
    for n in &tl.rtla.noise {
        let c = n.cpu as usize;
        if c >= v.len() {
            v.resize_with(c + 1, Vec::new);
        }
        v[c].push(n);
    }
    for x in &mut v {
        x.sort_by_key(|n| n.start);
    }
    v
}

/// The noise of `cpu` that started in [from - slack, to + slack].
fn noise_in<'a>(by: &'a [Vec<&'a Noise>], cpu: u32, from: u64, to: u64) -> &'a [&'a Noise] {
    let Some(v) = by.get(cpu as usize) else {
        return &[];
    };
    let a = v.partition_point(|n| n.start + SLACK_NS < from);
    let b = v.partition_point(|n| n.start <= to + SLACK_NS);
    &v[a..b.max(a)]
}

/// The timer IRQ's own latency as a hold; where a stack was saved at the IRQ, the code
/// it interrupted is its culprit (where interrupts came back on, when they were off).
fn irq_hold(a: &Activation, tl: &Timeline, irq_lat: u64) -> Hold {
    let stack = a.stack.and_then(|i| tl.rtla.stacks.get(i as usize));
    let past = stack.map_or(Vec::new(), |s| {
        crate::explain::irq_stack::interrupted(s.frames())
    });
    let Some(first) = past.first() else {
        return Hold {
            why: Some("the timer's expiry to its IRQ handler: interrupts off, or another handler or an NMI running".into()),
            ..Hold::on_cpu(cause::TIMER_IRQ_LATENCY, a.cpu, irq_lat)
        };
    };
    Hold {
        culprit: Culprit {
            caller: Some((*first).to_string()),
            cpu: Some(a.cpu),
            ..Default::default()
        },
        why: Some(format!(
            "the stack saved at the IRQ: it interrupted {}; if interrupts were off, that is where they came back on",
            past.join(" <- ")
        )),
        ..Hold::on_cpu(cause::TIMER_IRQ_LATENCY, a.cpu, irq_lat)
    }
}

/// One late activation as a miss: the timer's expiry, the IRQ (its latency), the
/// thread (the noise and the rest).
/// Whether the sched/irq tracepoints told it (no osnoise events there).
fn activation_miss(
    a: &Activation,
    (tl, s): (&Timeline, &Interner),
    by: &[Vec<&Noise>],
    dl: u64,
    usual: (u64, u64),
) -> (Miss, bool) {
    let (th_ts, total, tid) = a.thread.unwrap_or((0, 0, -1));
    let irq_lat = a.irq.map_or(0, |i| i.1).min(total);
    let expiry = a.expiry();
    let entry = expiry + irq_lat;
    // Each noise belongs to the activation whose [expiry, thread start] holds its own
    // start, whatever order its line was printed in (the IRQ that runs the timer prints
    // its noise after the timer's sample). One that ended before the timer's IRQ ran held
    // that IRQ off: part of the IRQ's latency, not the thread's.
    let noise = noise_in(by, a.cpu, expiry, th_ts.max(entry));
    let (before, after): (Vec<&Noise>, Vec<&Noise>) =
        (noise.iter()).partition(|n| n.start.saturating_add(n.dur_ns) + SLACK_NS <= entry);
    let irq_part = irq_parts(a, tl, irq_lat, noise_parts(&before, (expiry, entry)));
    let (found, joined) = parts_in(tl, s, &after, a.cpu, (expiry, entry, th_ts), tid);
    let rest = (
        cause::SCHED_OVERHEAD,
        if joined {
            "what no tracepoint accounts for: switching to the timerlat thread, kernel entry and exit"
        } else {
            "what no noise event accounts for: waking and switching to the timerlat thread, kernel entry and exit"
        },
    );
    let thread_parts = fill(found, a.cpu, total - irq_lat, Vec::new(), rest);
    let tl_link = |kind: &str, ts: u64, what: String, d: u64, u: u64, held: Vec<Hold>| Link {
        duration_ns: d,
        usual_ns: Some(u),
        excess_ns: d.saturating_sub(u),
        held_by: held,
        ..Link::mark(kind, expiry, ts, Some(a.cpu), what)
    };
    let chain = vec![
        Link::mark(
            "timer",
            expiry,
            expiry,
            Some(a.cpu),
            format!("timerlat timer expired (activation #{})", a.seq),
        ),
        tl_link(
            "irq",
            expiry,
            "the timer's IRQ handler ran".into(),
            irq_lat,
            usual.0,
            irq_part,
        ),
        tl_link(
            "thread",
            entry,
            format!("the timerlat thread [{tid}] ran"),
            total - irq_lat,
            usual.1,
            thread_parts,
        ),
    ];
    let m = Miss {
        cpus: Vec::new(),
        read_ns: None,
        not_reading: false,
        uncertain: false,
        start_ns: expiry,
        duration_ns: Some(total),
        tid,
        cpu: a.cpu,
        late_ns: total.saturating_sub(dl),
        blamed_ns: total,
        chain,
        blame: Vec::new(),
    };
    (m, joined)
}

/// Whether the trace holds timerlat samples or osnoise threshold hits to explain.
pub fn is_rtla(tl: &Timeline) -> bool {
    !tl.rtla.samples.is_empty() || !tl.rtla.thresholds.is_empty()
}

/// Explains the late activations of a timerlat trace (or, with none, its osnoise
/// `sample_threshold` hits) against `deadline_ns` (a default when None).
pub fn analyze_timerlat(
    tl: &Timeline,
    s: &Interner,
    deadline_ns: Option<u64>,
    top: usize,
) -> ExplainReport {
    let (acts, orphans): (Vec<Activation>, Vec<Activation>) = (tl.rtla.activations())
        .into_iter()
        .partition(|a| a.thread.is_some());
    if acts.is_empty() && orphans.iter().all(|a| a.irq.is_none()) {
        return analyze_thresholds(tl, s, deadline_ns, top);
    }
    let mut lats: Vec<u64> = acts.iter().map(|a| a.thread.map_or(0, |t| t.1)).collect();
    lats.sort_unstable();
    let (dl, how) = deadline(deadline_ns, &lats);
    let irq_lat = |a: &Activation| a.irq.map_or(0, |i| i.1);
    let thread_lat = |a: &Activation| a.thread.map_or(0, |t| t.1);
    let usual = (
        median(acts.iter().map(irq_lat).collect()),
        median(
            acts.iter()
                .map(|a| thread_lat(a).saturating_sub(irq_lat(a)))
                .collect(),
        ),
    );
    let by = noise_by_cpu(tl);
    let mut misses: Vec<Miss> = Vec::new();
    let mut windows: Vec<Window> = Vec::new();
    let mut joined = 0;
    for a in &acts {
        let (ts, lat, tid) = a.thread.unwrap_or_default();
        let late = lat > dl;
        windows.push(Window::new(a.expiry(), Some(ts), ts, tid, a.cpu, late));
        if late {
            let (m, j) = activation_miss(a, (tl, s), &by, dl, usual);
            joined += u64::from(j);
            misses.push(m);
        }
    }
    let (lost, cut) = unanswered(tl, &orphans, dl, usual.0);
    let no_reply = lost.len() as u64;
    misses.extend(lost);
    windows.sort_by_key(|w| w.start_ns);
    let mut notes = vec![format!(
        "{} timerlat activations on {} CPUs; the thread latency of each late one is split into the timer IRQ's latency, the noise the osnoise events saw after the IRQ, and the rest",
        acts.len(),
        (acts.iter().map(|a| a.cpu)).collect::<std::collections::BTreeSet<_>>().len()
    )];
    if joined > 0 {
        notes.push(format!(
            "{joined} late activations had no osnoise events: their IRQs, softirqs and the tasks that held the CPU are told from the sched and irq tracepoints"
        ));
    } else if tl.rtla.noise.is_empty() {
        notes.push("no osnoise events in the trace: beyond the IRQ's latency each late activation is one remainder; record with the osnoise events on (rtla timerlat -a, or -e osnoise) to see the IRQs, softirqs, NMIs and threads in it".into());
    }
    notes.extend(restarts_note(&acts));
    if no_reply + cut > 0 {
        notes.push(format!(
            "{} activations have an IRQ sample and no thread sample: {no_reply} missed with no reply (the thread cannot have run in time, or its CPU went on without it: the sample was lost or the thread never ran), {cut} cut by the trace's end",
            no_reply + cut
        ));
    }
    let frame = Framing {
        from: "timerlat timer expiry".into(),
        to: vec!["timerlat thread running".into()],
        deadline_ns: Some(dl),
        deadline_source: how,
        top,
        noun: "activations",
    };
    finish(tl, s, frame, (misses, no_reply), lats, notes, windows)
}

/// The activations with an IRQ sample and no thread sample (`orphans`): a miss with no
/// reply where the thread cannot have run in time (its IRQ alone is over `dl`) or where
/// its CPU sampled on after it; the rest are the last of their CPU, cut by the trace's
/// end, and only counted.
fn unanswered(tl: &Timeline, orphans: &[Activation], dl: u64, usual_irq: u64) -> (Vec<Miss>, u64) {
    // The last sample of each CPU's run: an orphan of one run is not "gone on" by the
    // next run's samples.
    let mut last = rustc_hash::FxHashMap::<(u32, u32), u64>::default();
    for a in tl.rtla.activations() {
        let ts = [a.irq.map(|i| i.0), a.thread.map(|t| t.0)];
        let t = last.entry((a.cpu, a.run)).or_default();
        *t = ts.into_iter().flatten().fold(*t, u64::max);
    }
    let mut out = Vec::new();
    let mut cut = 0;
    for a in orphans {
        let Some((irq_ts, irq_lat)) = a.irq else {
            continue;
        };
        let went_on = last.get(&(a.cpu, a.run)).is_some_and(|&t| t > irq_ts);
        if irq_lat <= dl && !went_on {
            cut += 1;
            continue;
        }
        let expiry = a.expiry();
        let irq = Link {
            duration_ns: irq_lat,
            usual_ns: Some(usual_irq),
            excess_ns: irq_lat.saturating_sub(usual_irq),
            held_by: irq_parts(a, tl, irq_lat, Vec::new()),
            ..Link::mark(
                "irq",
                expiry,
                expiry,
                Some(a.cpu),
                "the timer's IRQ handler ran".into(),
            )
        };
        let what = format!(
            "no thread sample for activation #{}: lost, or the timerlat thread never ran before the CPU went on",
            a.seq
        );
        let chain = vec![
            Link::mark(
                "timer",
                expiry,
                expiry,
                Some(a.cpu),
                format!("timerlat timer expired (activation #{})", a.seq),
            ),
            irq,
            Link::mark("thread", expiry, irq_ts, Some(a.cpu), what),
        ];
        out.push(Miss {
            cpus: Vec::new(),
            read_ns: None,
            not_reading: false,
            uncertain: true,
            start_ns: expiry,
            duration_ns: None,
            tid: -1,
            cpu: a.cpu,
            late_ns: irq_lat.saturating_sub(dl),
            blamed_ns: irq_lat,
            chain,
            blame: Vec::new(),
        });
    }
    (out, cut)
}

/// Where activation ids went back (the tracer was run again), said once.
fn restarts_note(acts: &[Activation]) -> Option<String> {
    let runs: std::collections::BTreeSet<(u32, u32)> =
        acts.iter().map(|a| (a.cpu, a.run)).collect();
    let cpus: std::collections::BTreeSet<u32> = runs.iter().map(|r| r.0).collect();
    let restarts = runs.len() - cpus.len();
    (restarts > 0).then(|| format!(
        "activation ids went back {restarts} times (the tracer was run again, or two runs given together): samples are paired within each run, and each run's activations are counted"
    ))
}

/// The misses ranked and tallied, into the report.
fn finish(
    tl: &Timeline,
    s: &Interner,
    frame: Framing,
    (mut misses, no_reply): (Vec<Miss>, u64),
    sorted: Vec<u64>,
    notes: Vec<String>,
    windows: Vec<Window>,
) -> ExplainReport {
    misses.sort_by(|a, b| b.late_ns.cmp(&a.late_ns).then(a.start_ns.cmp(&b.start_ns)));
    let mut tally = Tally::default();
    for m in &mut misses {
        m.blame = tally.add_chain(m);
    }
    let n = misses.len() as u64;
    let stats = CycleStats::of(&sorted, sorted.len() as u64 + no_reply, no_reply, n);
    let found = Findings {
        stats,
        misses,
        tally,
        notes,
        windows: windows.into(),
    };
    assemble(tl, s, frame, found)
}

/// osnoise `sample_threshold` hits, each explained by the noise inside it: every hit is a
/// miss when no deadline is given (the tracer's own threshold chose them), else those
/// over the deadline.
fn analyze_thresholds(
    tl: &Timeline,
    s: &Interner,
    deadline_ns: Option<u64>,
    top: usize,
) -> ExplainReport {
    let by = noise_by_cpu(tl);
    let dl = deadline_ns.unwrap_or(0);
    let mut misses = Vec::new();
    let mut windows = Vec::new();
    let mut sorted = Vec::new();
    for t in &tl.rtla.thresholds {
        let end = t.start.saturating_add(t.dur_ns);
        let late = t.dur_ns > dl;
        windows.push(Window::new(t.start, Some(end), end, -1, t.cpu, late));
        sorted.push(t.dur_ns);
        if late {
            misses.push(threshold_miss(tl, s, &by, t, dl));
        }
    }
    sorted.sort_unstable();
    windows.sort_by_key(|w| w.start_ns);
    let deadline_source = match deadline_ns {
        Some(_) => "given".into(),
        None => {
            "the osnoise tracer's own threshold (every sample_threshold hit); --deadline sets one"
                .into()
        }
    };
    let frame = Framing {
        from: "osnoise sample start".into(),
        to: vec!["osnoise sample end".into()],
        deadline_ns,
        deadline_source,
        top,
        noun: "samples",
    };
    finish(tl, s, frame, (misses, 0), sorted, Vec::new(), windows)
}

/// One osnoise sample over the deadline, split into the noise events inside it and the
/// rest: the entry and exit code around each interference when every interference the
/// sample counts has its event (their durations are net of it), else untraced.
fn threshold_miss(
    tl: &Timeline,
    s: &Interner,
    by: &[Vec<&Noise>],
    t: &crate::timeline::rtla::Threshold,
    dl: u64,
) -> Miss {
    let end = t.start.saturating_add(t.dur_ns);
    let noise = noise_in(by, t.cpu, t.start, end);
    let rest = if noise.len() as u64 >= t.interference {
        (
            cause::SCHED_OVERHEAD,
            "the entry and exit code around each interference, which the noise events' net durations leave out",
        )
    } else {
        (
            cause::UNKNOWN,
            "what no noise event inside the sample accounts for (it counts more interferences than the trace has noise events for)",
        )
    };
    let (found, _) = parts_in(tl, s, noise, t.cpu, (t.start, t.start, end), t.tid);
    let held = fill(found, t.cpu, t.dur_ns, Vec::new(), rest);
    let plural = if t.interference == 1 { "" } else { "s" };
    let link = Link {
        duration_ns: t.dur_ns,
        excess_ns: t.dur_ns,
        held_by: held,
        ..Link::mark(
            "noise",
            t.start,
            t.start,
            Some(t.cpu),
            format!(
                "osnoise sample over the threshold ({} interference{plural})",
                t.interference
            ),
        )
    };
    Miss {
        cpus: Vec::new(),
        read_ns: None,
        not_reading: false,
        uncertain: false,
        start_ns: t.start,
        duration_ns: Some(t.dur_ns),
        tid: -1,
        cpu: t.cpu,
        late_ns: t.dur_ns.saturating_sub(dl),
        blamed_ns: t.dur_ns,
        chain: vec![link],
        blame: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::pass;
    use crate::testkit_rtla::{planted, timerlat_trace, BASE_NS, PERIOD_NS};

    /// The parts of a miss, by category and culprit label.
    fn parts(m: &Miss) -> Vec<(String, String, u64)> {
        (m.chain.iter().flat_map(|l| &l.held_by))
            .map(|h| (h.category.id().to_string(), h.culprit.label(), h.ns))
            .collect()
    }

    /// Every planted late activation is named, with parts that are the planted ones and
    /// sum to its thread latency; the default deadline says how it was chosen.
    #[test]
    fn late_activations_broken_down() {
        let p = pass(&timerlat_trace(4, 250, &planted(), true));
        let r = analyze_timerlat(&p.tl, &p.strings, None, 3);
        assert_eq!(r.deadline_ns, Some(50_000));
        assert!(r
            .deadline_source
            .starts_with("default: 10x the median thread latency"));
        assert_eq!((r.cycles.count, r.misses.len()), (1000, 6));
        for plant in planted() {
            let expiry = BASE_NS + plant.index * PERIOD_NS + u64::from(plant.cpu) * 7_000;
            let m = (r.misses.iter())
                .find(|m| m.cpu == plant.cpu && m.start_ns.abs_diff(expiry) < 1000)
                .unwrap_or_else(|| {
                    panic!("activation {} of CPU{} not named", plant.index, plant.cpu)
                });
            let v = parts(m);
            assert_eq!(m.duration_ns, Some(plant.total()));
            assert_eq!(v.iter().map(|x| x.2).sum::<u64>(), plant.total(), "{v:?}");
            // Where a stack was saved at the IRQ, the code it interrupted is named.
            let landed = if plant.stack.is_empty() {
                "-"
            } else {
                "_raw_spin_unlock_irqrestore"
            };
            assert_eq!(
                v[0],
                ("timer-irq-latency".into(), landed.into(), plant.irq_lat)
            );
            let rest = v
                .iter()
                .find(|x| x.0 == "sched-overhead")
                .map_or(0, |x| x.2);
            assert_eq!(rest, plant.rest, "{v:?}");
            for (desc, vec, ns) in &plant.irqs {
                assert!(
                    v.contains(&("hardirq".into(), format!("irq {vec} ({desc})"), *ns)),
                    "{v:?}"
                );
            }
            for (name, _, ns) in &plant.softirqs {
                assert!(
                    v.contains(&("softirq".into(), format!("softirq {name}"), *ns)),
                    "{v:?}"
                );
            }
            for ns in &plant.nmis {
                assert!(v.contains(&("nmi".into(), "-".into(), *ns)), "{v:?}");
            }
            for (comm, pid, ns) in &plant.threads {
                assert!(
                    v.contains(&("thread-noise".into(), format!("{comm}[{pid}]"), *ns)),
                    "{v:?}"
                );
            }
        }
        // Worst first; the causes ranked across activations: hog's two hits on CPU3 lead.
        assert_eq!(r.misses[0].duration_ns, Some(125_000));
        assert_eq!(r.misses[0].late_ns, 75_000);
        let c = &r.causes[0];
        assert_eq!(
            (c.category.id(), c.count, c.total_excess_ns),
            ("thread-noise", 2, 210_000)
        );
        assert!(
            r.advice
                .iter()
                .any(|a| a.command == "taskset -pc 0,1,2 $(pgrep -x 'hog')"),
            "{:?}",
            r.advice
        );
        assert!(r
            .advice
            .iter()
            .any(|a| a.command.contains("/proc/irq/33/smp_affinity_list")));
        // CPU1's activation 51: its IRQ 60 us late, in a spinlock's unlock called from
        // frob_poll <- frob_ioctl, past the six frames of the tracer and the entry path.
        let m = (r.misses.iter())
            .find(|m| m.cpu == 1)
            .expect("CPU1's late one");
        let h = &m.chain[1].held_by[0];
        assert_eq!(
            h.why.as_deref(),
            Some("the stack saved at the IRQ: it interrupted _raw_spin_unlock_irqrestore <- frob_poll <- frob_ioctl; if interrupts were off, that is where they came back on")
        );
        assert!(
            (r.advice.iter()).any(|a| a.action.contains("landed in _raw_spin_unlock_irqrestore")),
            "{:?}",
            r.advice
        );
        assert_eq!(p.tl.rtla.stacks.len(), 1);
    }

    /// A deadline given decides what is late; without osnoise events each late
    /// activation is the IRQ's latency and one remainder, still summing to its total.
    #[test]
    fn deadline_given_and_no_noise_events() {
        let p = pass(&timerlat_trace(4, 250, &planted(), false));
        let r = analyze_timerlat(&p.tl, &p.strings, Some(100_000), 3);
        assert_eq!((r.deadline_source.as_str(), r.misses.len()), ("given", 1));
        let v = parts(&r.misses[0]);
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].2, v[1].0.as_str(), v[1].2),
            (950, "sched-overhead", 124_050)
        );
        assert!(r.notes.iter().any(|n| n.starts_with("no osnoise events")));
    }

    /// A trace that records no sched_switch has no untraced idle exits to warn of,
    /// though its IRQ samples (in `<idle>-0`) and thread samples make the timeline infer
    /// a switch out of idle at every activation.
    #[test]
    fn no_blind_spot_note_without_sched_switch() {
        let p = pass(&timerlat_trace(2, 50, &[], false));
        let a = &p.tl.anomalies;
        assert_eq!(a.implicit_from_idle.values().sum::<u64>(), 100);
        assert_eq!(a.untraced_idle_note(), None);
        let r = analyze_timerlat(&p.tl, &p.strings, None, 3);
        assert!(r.blind.is_empty(), "{:?}", r.blind);
    }

    /// With no osnoise events but sched/irq tracepoints, a late activation's IRQ and
    /// softirq are named from irq_handler_* and softirq_*, and the task that held the
    /// CPU while the timerlat thread waited is a runqueue wait behind it; the parts sum
    /// to the total.
    #[test]
    fn tracepoints_join_the_breakdown() {
        let plant = crate::testkit_rtla::Plant {
            cpu: 1,
            index: 150,
            irq_lat: 1_000,
            irqs: vec![("eth0", 33, 20_000)],
            softirqs: vec![("NET_RX", 3, 15_000)],
            threads: vec![("rtapp", 5151, 40_000)],
            rest: 3_000,
            tracepoints: true,
            ..Default::default()
        };
        let p = pass(&timerlat_trace(2, 200, std::slice::from_ref(&plant), false));
        let r = analyze_timerlat(&p.tl, &p.strings, None, 3);
        assert_eq!(r.misses.len(), 1);
        let m = &r.misses[0];
        assert_eq!((m.cpu, m.duration_ns), (1, Some(79_000)));
        let v = parts(m);
        assert_eq!(v.iter().map(|x| x.2).sum::<u64>(), 79_000, "{v:?}");
        assert_eq!(v[0], ("timer-irq-latency".into(), "-".into(), 1_000));
        assert_eq!(
            (v[1].0.as_str(), v[1].2),
            ("runqueue-wait", 40_000),
            "{v:?}"
        );
        assert!(v[1].1.starts_with("rtapp[5151]"), "{v:?}");
        assert_eq!(v[2], ("hardirq".into(), "irq 33 (eth0)".into(), 20_000));
        assert_eq!(v[3], ("softirq".into(), "softirq NET_RX".into(), 15_000));
        assert_eq!(v[4], ("sched-overhead".into(), "-".into(), 3_000));
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with("1 late activations had no osnoise events")),
            "{:?}",
            r.notes
        );
    }

    /// A threshold hit with no noise events inside it is split by the irq tracepoints
    /// there instead; the osnoise thread's own time is the rest.
    #[test]
    fn threshold_hits_from_the_tracepoints() {
        let text = crate::testkit_rtla::osnoise_trace(1, 2)
            + "     osnoise/0-800 [000] d.h.   100.500002: irq_handler_entry: irq=33 name=eth0\n"
            + "     osnoise/0-800 [000] d.h.   100.500010: irq_handler_exit: irq=33 ret=handled\n";
        let p = pass(&text);
        let r = analyze_timerlat(&p.tl, &p.strings, None, 3);
        assert_eq!(r.misses.len(), 1);
        assert_eq!(
            parts(&r.misses[0]),
            vec![
                ("hardirq".into(), "irq 33 (eth0)".into(), 8000),
                ("unknown".into(), "-".into(), 12_000),
            ]
        );
    }

    /// A stack belongs to the event just before it on its CPU: after a timerlat sample,
    /// to that sample; after any other event (here a wakeup), to no sample.
    #[test]
    fn a_stack_belongs_to_the_event_before_it() {
        let text = "\
          <idle>-0     [000] d.h.   100.000010: #1     context    irq timer_latency      1000 ns
          <idle>-0     [000] d.h.   100.000010: <stack trace>
 => timerlat_irq
 => default_idle
     timerlat/0-900   [000] ....   100.000015: #1     context thread timer_latency      6000 ns
     timerlat/0-900   [000] d...   100.000016: sched_wakeup: comm=a pid=7 prio=120 target_cpu=000
     timerlat/0-900   [000] d...   100.000016: <stack trace>
 => try_to_wake_up
";
        let p = pass(text);
        let r = &p.tl.rtla;
        assert_eq!(r.stacks.len(), 2);
        assert_eq!((r.samples[0].stack, r.samples[1].stack), (Some(0), None));
        assert_eq!(r.stacks[1].frames().collect::<Vec<_>>(), ["try_to_wake_up"]);
        assert_eq!(r.activations()[0].stack, Some(0));
    }

    /// osnoise threshold hits are explained from the noise inside them.
    #[test]
    fn threshold_hits_from_their_noise() {
        let text = crate::testkit_rtla::osnoise_trace(1, 2)
            + "     osnoise/0-800 [000] ....   100.500010: irq_noise: eth0:33 start 100.500002000 duration 8000 ns\n";
        let p = pass(&text);
        let r = analyze_timerlat(&p.tl, &p.strings, None, 3);
        assert_eq!(r.misses.len(), 1);
        let v = parts(&r.misses[0]);
        assert_eq!(
            v,
            vec![
                ("hardirq".into(), "irq 33 (eth0)".into(), 8000),
                ("unknown".into(), "-".into(), 12_000),
            ]
        );
    }

    /// rtla-timerlat-top's documentation excerpt (Documentation/tools/rtla/
    /// rtla-timerlat-top.rst, `rtla timerlat top -a`; the 7-column flags): activation
    /// #58634's noise lines print between its IRQ and thread lines and the IRQ noise starts
    /// before the IRQ's own line. The documentation's answer: IRQ latency 12505 ns, the
    /// local_timer IRQ 12553 ns, sh's thread noise 4769 ns, the rest.
    const RTLA_DOC: &str = "# tracer: timerlat
#
      timerlat/5-79755   [005] .......   426.271226: #58634 context thread timer_latency     10823 ns
              sh-109404  [006] dnLh213   426.271247: #58634 context    irq timer_latency     12505 ns
              sh-109404  [006] dNLh313   426.271258: irq_noise: local_timer:236 start 426.271245463 duration 12553 ns
              sh-109404  [006] d...313   426.271263: thread_noise:       sh:109404 start 426.271245853 duration 4769 ns
      timerlat/6-79756   [006] .......   426.271264: #58634 context thread timer_latency     30328 ns
            bash-109109  [007] d..h...   426.271265: #58634 context    irq timer_latency      1211 ns
      timerlat/6-79756   [006] .......   426.271267: timerlat_main: stop tracing hit on cpu 6
";

    #[test]
    fn the_rtla_documentation_excerpt_splits_as_rtla_does() {
        let p = pass(RTLA_DOC);
        let r = analyze_timerlat(&p.tl, &p.strings, Some(20_000), 3);
        assert_eq!((r.cycles.count, r.misses.len()), (2, 1));
        let got = parts(&r.misses[0]);
        let want: Vec<(String, String, u64)> = vec![
            ("timer-irq-latency".into(), "-".into(), 12_505),
            ("cpu-vector".into(), "local_timer:236".into(), 12_553),
            ("thread-noise".into(), "sh[109404]".into(), 4_769),
            ("sched-overhead".into(), "-".into(), 501),
        ];
        assert_eq!(got, want);
        // CPU7's activation has its IRQ sample only, the last of its CPU: cut, not a miss.
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("0 missed with no reply") && n.contains("1 cut")),
            "{:?}",
            r.notes
        );
    }

    /// A handler that ran between the timer's expiry and its IRQ (and ended before the
    /// IRQ ran) held the IRQ off: it is part of the IRQ's latency, not the thread's, and
    /// nothing is counted twice.
    #[test]
    fn noise_before_the_timers_irq_is_part_of_its_latency() {
        let eth = "              sh-109404  [006] d..h313   426.271241: irq_noise: eth0:33 start 426.271235500 duration 5000 ns\n";
        let text = RTLA_DOC.replacen(
            "      timerlat/6-79756",
            &format!("{eth}      timerlat/6-79756"),
            1,
        );
        let p = pass(&text);
        let r = analyze_timerlat(&p.tl, &p.strings, Some(20_000), 3);
        let m = &r.misses[0];
        let irq: Vec<_> = (m.chain[1].held_by.iter())
            .map(|h| (h.category.id().to_string(), h.culprit.label(), h.ns))
            .collect();
        let want: Vec<(String, String, u64)> = vec![
            ("hardirq".into(), "irq 33 (eth0)".into(), 5_000),
            ("timer-irq-latency".into(), "-".into(), 7_505),
        ];
        assert_eq!(irq, want);
        assert_eq!(parts(m).iter().map(|x| x.2).sum::<u64>(), 30_328);
    }

    /// `text` with the printed time of every noise line moved by `delta_us` (the noise's
    /// own start and duration unchanged): where its line lands must not matter.
    fn noise_lines_moved(text: &str, delta_us: i64) -> String {
        let mut out = String::new();
        for l in text.lines() {
            let moved = l.contains("_noise:").then(|| {
                let colon = l.find(": ").unwrap();
                let sp = l[..colon].rfind(' ').unwrap();
                let us =
                    (l[sp + 1..colon].replace('.', "").parse::<i64>().unwrap() + delta_us) as u64;
                format!(
                    "{} {}.{:06}{}",
                    &l[..sp],
                    us / 1_000_000,
                    us % 1_000_000,
                    &l[colon..]
                )
            });
            out.push_str(moved.as_deref().unwrap_or(l));
            out.push('\n');
        }
        out
    }

    /// The shape matrix of a noise line's place: just after the noise (as generated), before
    /// the timer's IRQ line, after the thread's line, far after it. The split is the same.
    #[test]
    fn noise_is_attributed_by_its_own_start_wherever_its_line_prints() {
        let base = timerlat_trace(4, 250, &planted(), true);
        let split = |text: &str| {
            let p = pass(text);
            let r = analyze_timerlat(&p.tl, &p.strings, None, 3);
            let mut v: Vec<_> = r.misses.iter().map(|m| (m.cpu, parts(m))).collect();
            v.sort();
            v
        };
        let want = split(&base);
        assert_eq!(want.len(), 6);
        for delta in [-120, -60, 90, 400] {
            assert_eq!(
                split(&noise_lines_moved(&base, delta)),
                want,
                "noise lines moved {delta} us"
            );
        }
    }

    /// Two runs of the tracer one after the other (ids restart at #1): each run's
    /// activations are counted and its late ones named; a note says the ids went back.
    #[test]
    fn ids_that_restart_start_a_new_run() {
        let one = timerlat_trace(2, 100, &planted()[..2], true);
        let p1 = pass(&one);
        let r1 = analyze_timerlat(&p1.tl, &p1.strings, Some(50_000), 3);
        assert_eq!((r1.cycles.count, r1.misses.len()), (200, 2));
        // The same run again, 1 s later.
        let later = noise_lines_moved(&one, 0)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let Some(colon) = l.find(": ") else {
                    return format!("{l}\n"); // a stack frame
                };
                let sp = l[..colon].rfind(' ').unwrap();
                let us: u64 = l[sp + 1..colon].replace('.', "").parse().unwrap();
                let us = us + 1_000_000;
                let body = l[colon..].replace(" start 100.", " start 101.");
                format!(
                    "{} {}.{:06}{body}\n",
                    &l[..sp],
                    us / 1_000_000,
                    us % 1_000_000
                )
            })
            .collect::<String>();
        let p = pass(&format!("{one}{later}"));
        let r = analyze_timerlat(&p.tl, &p.strings, Some(50_000), 3);
        assert_eq!((r.cycles.count, r.misses.len()), (400, 4));
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("activation ids went back 2 times")),
            "{:?}",
            r.notes
        );
    }

    /// An activation with an IRQ sample and no thread sample is a miss with no reply when
    /// its IRQ alone is over the deadline or its CPU sampled on; the last of a CPU is cut.
    #[test]
    fn an_irq_sample_without_its_thread_is_a_miss_with_no_reply() {
        let mut text = timerlat_trace(1, 20, &[], false);
        // Activation #5's thread line goes: lost.
        text = text
            .lines()
            .filter(|l| !l.contains("#5     context thread"))
            .map(|l| format!("{l}\n"))
            .collect();
        // A late IRQ whose thread never printed, after the last activation.
        text.push_str("          <idle>-0 [000] d.h.   100.030000: #21    context    irq timer_latency    200000 ns\n");
        let p = pass(&text);
        let r = analyze_timerlat(&p.tl, &p.strings, Some(50_000), 3);
        assert_eq!(
            (r.cycles.count, r.cycles.no_reply, r.misses.len()),
            (21, 2, 2)
        );
        assert!(r.misses.iter().all(|m| m.duration_ns.is_none()));
        assert_eq!(r.misses[0].late_ns, 150_000);
    }

    /// Values no trace can hold are not read as numbers: the noise is left out of the
    /// breakdown and said under the verdict.
    #[test]
    fn unreadable_noise_is_said_not_blamed() {
        let text = RTLA_DOC.replace("duration 12553 ns", "duration -40000 ns");
        let p = pass(&text);
        assert_eq!(p.tl.rtla.unreadable, 1);
        let r = analyze_timerlat(&p.tl, &p.strings, Some(20_000), 3);
        assert!(!parts(&r.misses[0])
            .iter()
            .any(|x| x.1.contains("local_timer")));
        assert!(
            r.blind
                .iter()
                .any(|b| b.contains("1 timerlat/osnoise events not understood")
                    && b.contains("-40000")),
            "{:?}",
            r.blind
        );
        let text = RTLA_DOC.replace(
            "timer_latency     30328 ns",
            "timer_latency 18446744073709551615 ns",
        );
        let p = pass(&text);
        let r = analyze_timerlat(&p.tl, &p.strings, Some(20_000), 3);
        assert!(r.causes.iter().all(|c| c.share <= 1.0), "{:?}", r.causes);
    }

    /// The osnoise tracer's documentation example (Documentation/trace/osnoise-tracer.rst):
    /// a sample of 8812 ns with two interferences, and an IRQ a millisecond before it.
    #[test]
    fn the_osnoise_documentation_example_is_split_into_its_interferences() {
        let text = "# tracer: osnoise
#
       osnoise/8-961     [008] d.h.  5789.857532: irq_noise: local_timer:236 start 5789.857529929 duration 1845 ns
       osnoise/8-961     [008] dNh.  5789.858408: irq_noise: local_timer:236 start 5789.858404871 duration 2848 ns
     migration/8-54      [008] d...  5789.858413: thread_noise: migration/8:54 start 5789.858409300 duration 3068 ns
       osnoise/8-961     [008] ....  5789.858413: sample_threshold: start 5789.858404555 duration 8812 ns interferences 2
";
        let p = pass(text);
        for (dl, missed) in [(None, 1), (Some(5_000), 1), (Some(10_000), 0)] {
            let r = analyze_timerlat(&p.tl, &p.strings, dl, 3);
            assert_eq!((r.cycles.count, r.misses.len()), (1, missed), "{dl:?}");
        }
        let r = analyze_timerlat(&p.tl, &p.strings, Some(5_000), 3);
        assert_eq!(r.misses[0].late_ns, 3_812);
        let want: Vec<(String, String, u64)> = vec![
            ("thread-noise".into(), "migration/8[54]".into(), 3_068),
            ("cpu-vector".into(), "local_timer:236".into(), 2_848),
            ("sched-overhead".into(), "-".into(), 2_896),
        ];
        assert_eq!(parts(&r.misses[0]), want);
    }
}
