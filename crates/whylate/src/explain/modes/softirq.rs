//! `--softirq VEC`: raise-to-entry services of one softirq vector (or tasklets) over
//! the deadline, and who held the CPU meanwhile.

use crate::dist::{quantile, Sketch};
use crate::event::{Interner, SOFTIRQ_NAMES};
use crate::explain::blame::{as_backlog, as_pending, merge_same, scale};
use crate::explain::causes as cause;
use crate::explain::driver::{assemble, Findings, Framing, PerMiss, Tally};
use crate::explain::engine::{Engine, LinkKind, RawLink};
use crate::explain::report::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window};
use crate::pipeline::Stretch;
use crate::timeline::{span, Edge, EdgeKind, Timeline};
use crate::units::secs;

/// The softirq deadline policy: the one given; else the slowest 1% (p99) when there are
/// 100 services or more; else 100 us.
pub(in crate::explain) fn deadline_policy(given: Option<u64>, sorted: &[u64]) -> (u64, String) {
    policy(given, sorted.len() as u64, || quantile(sorted, 0.99))
}

/// [`deadline_policy`] of `n` services whose p99 `p99` gives.
fn policy(given: Option<u64>, n: u64, p99: impl FnOnce() -> u64) -> (u64, String) {
    match given {
        Some(d) => (d, "given".to_string()),
        None if n >= 100 => (
            p99(),
            "none given: the services above p99 are explained".to_string(),
        ),
        None => (
            100_000,
            "none given and too few samples for a p99: 100 us assumed".to_string(),
        ),
    }
}

/// Whether the samples of vector `want` are tasklets' schedule -> run: TASKLET asked
/// and `raised` (the trace has a softirq_raise/entry of that vector) false.
fn are_tasklets(want: Option<u32>, raised: bool) -> bool {
    want == Some(TASKLET) && !raised
}

/// The TASKLET vector's number.
const TASKLET: u32 = 6;

/// The edges (raise -> entry, or tasklet schedule -> run) of vector `want`, by raise
/// time; `tasklets` says whether tasklets are the samples (None: as `tl` shows).
fn services(tl: &Timeline, want: Option<u32>, tasklets: Option<bool>) -> Vec<usize> {
    // Tasklets ride the TASKLET vector: their schedule → run timing is a sample only
    // when the trace has no softirq_raise/entry for the vector itself (function tracer
    // dumps such as seed 002's).
    let tasklet = tasklets.unwrap_or_else(|| are_tasklets(want, raises_tasklet_vector(tl)));
    let mut samples: Vec<usize> = (tl.edges.iter().enumerate())
        .filter(|(_, e)| {
            (e.kind == EdgeKind::Softirq && Some(e.key) == want)
                || (tasklet && e.kind == EdgeKind::Tasklet)
        })
        .map(|(i, _)| i)
        .collect();
    samples.sort_by_key(|&i| tl.edges[i].ts);
    samples
}

/// Whether `tl` has a raise -> entry of the TASKLET vector itself.
fn raises_tasklet_vector(tl: &Timeline) -> bool {
    (tl.edges.iter()).any(|e| e.kind == EdgeKind::Softirq && e.key == TASKLET)
}

/// What the services of a window of a long trace are judged against, learnt over the
/// whole trace ([`SoftirqSamples`]): its deadline (and where it came from), the usual
/// service, and whether tasklets are the samples.
#[derive(Clone, Debug)]
pub(in crate::explain) struct SoftirqUsual {
    deadline: u64,
    source: String,
    usual: u64,
    tasklets: bool,
}

/// The services of every window of a long trace (those each settles), in sketches: exact
/// while they take at most [`Sketch::EXACT`] distinct values, to 8 significant bits beyond.
#[derive(Clone, Debug)]
pub(in crate::explain) struct SoftirqSamples {
    want: Option<u32>,
    given: Option<u64>,
    /// The vector's raise -> entry services.
    raised: Sketch,
    /// Tasklets' schedule -> run (the samples of TASKLET when no window raised it).
    tasklets: Sketch,
    /// Some window had a raise -> entry of the TASKLET vector.
    tasklet_vector: bool,
}

impl SoftirqSamples {
    /// Nothing learnt yet, for `vector` and the deadline given.
    pub(in crate::explain) fn new(vector: &str, given: Option<u64>) -> SoftirqSamples {
        SoftirqSamples {
            want: crate::event::softirq_vector(vector).ok(),
            given,
            raised: Sketch::default(),
            tasklets: Sketch::default(),
            tasklet_vector: false,
        }
    }

    /// Adds the services of `tl` that the window settles.
    pub(in crate::explain) fn add(&mut self, tl: &Timeline, only: &Stretch) {
        self.tasklet_vector |= self.want == Some(TASKLET) && raises_tasklet_vector(tl);
        for e in tl.edges.iter().filter(|e| only.settles(e.ts, e.at)) {
            match e.kind {
                EdgeKind::Softirq if Some(e.key) == self.want => self.raised.add(e.at - e.ts),
                EdgeKind::Tasklet if self.want == Some(TASKLET) => self.tasklets.add(e.at - e.ts),
                _ => {}
            }
        }
    }

    /// The samples: the vector's services, or its tasklets'.
    fn samples(&self) -> &Sketch {
        match are_tasklets(self.want, self.tasklet_vector) {
            true => &self.tasklets,
            false => &self.raised,
        }
    }

    /// The deadline and usual of every service added, as [`analyze_softirq`] takes them
    /// from one timeline (the usual: the median of the services within the deadline).
    pub(in crate::explain) fn usual(&self) -> SoftirqUsual {
        let s = self.samples();
        let (deadline, source) = policy(self.given, s.count(), || s.nearest_rank(0.99));
        let usual = match s.at_most(deadline) {
            0 => 0,
            good => s.nth((good - 1) / 2),
        };
        SoftirqUsual {
            deadline,
            source,
            usual,
            tasklets: are_tasklets(self.want, self.tasklet_vector),
        }
    }

    /// Whether the deadline and usual are exact (no sketch rounded).
    pub(in crate::explain) fn exact(&self) -> bool {
        self.samples().exact()
    }
}

/// A window of a long trace: what its services are judged against, and which it settles.
pub(in crate::explain) struct SoftirqPart<'a> {
    /// Learnt over the whole trace.
    pub(in crate::explain) usual: &'a SoftirqUsual,
    /// The services settled.
    pub(in crate::explain) only: &'a Stretch,
}

/// The `--softirq` analysis on a built timeline. `vector`: a name (`NET_RX`) or number.
pub fn analyze_softirq(
    tl: &Timeline,
    s: &Interner,
    vector: &str,
    deadline_ns: Option<u64>,
    top: usize,
) -> ExplainReport {
    analyze_softirq_in(tl, s, vector, deadline_ns, top, None)
}

/// [`analyze_softirq`], in `part` of a long trace when given: the services it settles,
/// judged against the whole trace's deadline and usual.
pub(in crate::explain) fn analyze_softirq_in(
    tl: &Timeline,
    s: &Interner,
    vector: &str,
    deadline_ns: Option<u64>,
    top: usize,
    part: Option<SoftirqPart<'_>>,
) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let want = crate::event::softirq_vector(vector);
    let wanted = want.as_ref().ok().copied();
    let mut samples = services(tl, wanted, part.as_ref().map(|p| p.usual.tasklets));
    if let Some(p) = &part {
        samples.retain(|&i| p.only.settles(tl.edges[i].ts, tl.edges[i].at));
    }
    let mut lat: Vec<u64> = (samples.iter())
        .map(|&i| tl.edges[i].at - tl.edges[i].ts)
        .collect();
    lat.sort_unstable();
    let (deadline, source, usual) = match &part {
        Some(p) => (p.usual.deadline, p.usual.source.clone(), p.usual.usual),
        None => {
            let (deadline, source) = deadline_policy(deadline_ns, &lat);
            // Usual = the median of the services within the deadline (0 when all were late).
            let good: Vec<u64> = lat.iter().copied().filter(|&d| d <= deadline).collect();
            let usual = (good.get(good.len().saturating_sub(1) / 2).copied()).unwrap_or(0);
            (deadline, source, usual)
        }
    };
    let mut tally = Tally::default();
    let mut misses: Vec<Miss> = (samples.iter())
        .filter(|&&ei| tl.edges[ei].at - tl.edges[ei].ts > deadline)
        .map(|&ei| service(&eng, ei, usual, deadline, &mut tally))
        .collect();
    misses.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let mut notes = Vec::new();
    if let Err(e) = &want {
        notes.push(e.clone());
    } else if samples.is_empty() && part.is_none() {
        notes.push(NO_SERVICE.into());
    }
    let stats = CycleStats::of(&lat, samples.len() as u64, 0, misses.len() as u64);
    let windows = (samples.iter())
        .map(|&i| {
            let e = &tl.edges[i];
            Window::new(e.ts, Some(e.at), e.at, -1, e.to_cpu, e.at - e.ts > deadline)
        })
        .collect();
    let frame = Framing {
        from: format!("softirq_raise {vector}"),
        to: vec!["softirq_entry (or tasklet run)".into()],
        deadline_ns: Some(deadline),
        deadline_source: source,
        top,
        noun: "softirq services",
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

/// The note of a run with no service of the vector.
const NO_SERVICE: &str = "no raise of that vector was followed by its entry in this trace: record irq:softirq_raise and irq:softirq_entry/exit";

/// A report merged from windows: the notes one trace's report ends with, for the
/// services of every window and the advice given once.
pub(in crate::explain) fn finish_merged(r: &mut ExplainReport, vector: &str) {
    let known = crate::event::softirq_vector(vector).is_ok();
    let none = (r.cycles.count == 0 && known).then(|| NO_SERVICE.to_string());
    crate::explain::advice::end_merged_notes(r, none);
}

/// One slow service explained: where it was served, whether it was deferred, and who
/// held the CPU while it waited.
fn service(eng: &Engine<'_>, ei: usize, usual: u64, deadline: u64, tally: &mut Tally) -> Miss {
    let (tl, sp) = (eng.tl, &eng.tl.spans);
    let e = &tl.edges[ei];
    let d = e.at - e.ts;
    let ex = d.saturating_sub(usual);
    let (held, ksoftirqd) = service_holds(eng, e, ex);
    let mut per = PerMiss::default();
    per.add_holds(&held);
    for h in &held {
        tally.nest(h);
    }
    for h in &held {
        tally.blame_cpu(e.to_cpu, h.ns);
    }
    let blamed = held.iter().map(|h| h.ns).sum();
    let blame = tally.add_miss(per);
    let link = Link {
        duration_ns: d,
        usual_ns: Some(usual),
        excess_ns: ex,
        held_by: held,
        waiter: ksoftirqd.map(|i| Culprit::task(tl, eng.s, sp.tid[i], e.to_cpu)),
        ..Link::mark(
            "softirq",
            e.ts,
            e.ts,
            Some(e.to_cpu),
            service_words(eng, e, ksoftirqd),
        )
    };
    Miss {
        cpus: tally.miss_cpus(),
        read_ns: None,
        not_reading: false,
        uncertain: false,
        blame,
        start_ns: e.ts,
        duration_ns: Some(d),
        tid: e.to_tid,
        cpu: e.to_cpu,
        late_ns: d - deadline,
        blamed_ns: blamed,
        chain: vec![link],
    }
}

/// What held softirq raise `e` during the last `ex` of its wait for its run, and the
/// ksoftirqd span that waited meanwhile, if one did. No task waits for a softirq, so a
/// task it ran over (at an irq exit) held it like any other; while ksoftirqd was runnable
/// the tasks that ran instead are a deferral (`deferred-to-ksoftirqd`), and so is a CPU
/// leaving idle for another task first; without ksoftirqd the softirq waited for an irq
/// exit (`softirq-pending`); its own vector's runs are its backlog.
pub(in crate::explain) fn service_holds(
    eng: &Engine<'_>,
    e: &Edge,
    ex: u64,
) -> (Vec<Hold>, Option<usize>) {
    let ksoftirqd = eng.ksoftirqd_waiting(e.to_cpu, e.ts, e.at);
    let waiter = ksoftirqd.map_or(-1, |i| eng.tl.spans.tid[i]);
    let l = RawLink::wait(LinkKind::Work, e.ts, e.at, e.to_cpu, waiter);
    let a = e.at - ex;
    let mut held = match ksoftirqd.map(|i| eng.tl.spans.start[i].clamp(a, e.at)) {
        // Before ksoftirqd was runnable the CPU's occupants held the softirq as usual.
        Some(k0) => {
            let mut h = eng.holds(&l, a, k0);
            h.extend(left_idle_for(eng, &l, k0, e.at));
            let mut h = merge_same(h);
            h.sort_by_key(|h| std::cmp::Reverse(h.ns));
            h
        }
        None => eng.holds(&l, a, e.at),
    };
    scale(&mut held, ex);
    as_pending(&mut held, ksoftirqd.is_some());
    as_backlog(&mut held, e.key as u8);
    (held, ksoftirqd)
}

/// What held `l.cpu` during `[k0, b)` while ksoftirqd (`l.tid`) was runnable there. The
/// idle task cannot hold a CPU with a task runnable: idle time then is the CPU switching
/// out of idle, and when it switched to another task, that task was chosen first and
/// holds the time (a wait, which [`as_pending`] makes a deferral).
fn left_idle_for(eng: &Engine<'_>, l: &RawLink, k0: u64, b: u64) -> Vec<Hold> {
    let (tl, sp) = (eng.tl, &eng.tl.spans);
    let mut out = eng.holds(l, k0, b);
    let runs = tl.runs_by_cpu.get(l.cpu as usize).map_or(&[][..], |v| v);
    let n = runs.partition_point(|&i| sp.start[i as usize] <= k0);
    let next = (runs[n..].iter().map(|&i| i as usize))
        .take_while(|&i| sp.start[i] < b)
        .find(|&i| sp.tid[i] != 0);
    // Handlers and softirqs here cut in while ksoftirqd waited (driver::rank).
    for h in out.iter_mut() {
        if [cause::HARDIRQ, cause::SOFTIRQ].contains(&h.category) {
            h.nested_ns = h.ns;
        }
    }
    let Some(next) = next.filter(|&i| sp.tid[i] != l.tid) else {
        return out;
    };
    let tid = sp.tid[next];
    for h in out.iter_mut().filter(|h| h.category == cause::CPU_IDLE) {
        let comm = eng.s.get(tl.comm(tid)).to_string();
        h.category = cause::RUNQUEUE_WAIT;
        h.culprit = Culprit {
            comm: Some(comm).filter(|c| !c.is_empty()),
            pid: Some(tid),
            prio: tl.prios.get(&tid).copied(),
            cpu: Some(l.cpu),
            ..Default::default()
        };
    }
    out
}

/// `softirq NET_RX raised in ... on CPU1, served in ksoftirqd; deferred to ...`.
pub(in crate::explain) fn service_words(
    eng: &Engine<'_>,
    e: &Edge,
    ksoftirqd: Option<usize>,
) -> String {
    let sp = &eng.tl.spans;
    let name = if e.kind == EdgeKind::Tasklet {
        "tasklet (scheduled -> run)".to_string()
    } else {
        format!(
            "softirq {}",
            SOFTIRQ_NAMES.get(e.key as usize).copied().unwrap_or("?")
        )
    };
    let served = if e.kind == EdgeKind::Softirq {
        let f = e.val as u8;
        let place = if f & span::KSOFTIRQD != 0 {
            "ksoftirqd".to_string()
        } else if f & span::IN_TASK != 0 {
            format!("task context ({})", eng.task(e.to_tid))
        } else {
            format!("irq exit ({})", eng.task(e.to_tid))
        };
        format!(", served in {place}")
    } else {
        String::new()
    };
    let deferred = ksoftirqd
        .map(|i| {
            format!(
                "; deferred to {} (runnable from {})",
                eng.task(sp.tid[i]),
                secs(sp.start[i])
            )
        })
        .unwrap_or_default();
    format!(
        "{name} raised in {} on CPU{}{served}{deferred}",
        eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
        e.from_cpu
    )
}
