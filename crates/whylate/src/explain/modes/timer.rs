//! `--timer`: late hrtimer periods (requested expiry to the woken task running), the
//! timer deadline policy, and why the interrupt or the wakeup came late.

use crate::dist::quantile;
use crate::event::{Interner, Sym};
use crate::explain::blame::{console_untraced_call, one_syscall, scale, silent_cpu, untraced_rest};
use crate::explain::causes as cause;
use crate::explain::driver::{assemble, Findings, Framing, PerMiss, Tally};
use crate::explain::engine::{untraced_words, Engine, LinkKind, RawLink, Wait};
use crate::explain::report::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window};
use crate::measure::timer::{periods, Woken};
use crate::timeline::Cause as RunCause;
use crate::timeline::{span, SpanKind, Timeline};
use crate::units::dur;
use rustc_hash::FxHashMap;

/// What `--timer` explains.
#[derive(Clone, Debug, Default)]
pub struct TimerOptions {
    /// Only timers that wake this task (pid, or comm glob).
    pub task: Option<crate::measure::TaskSel>,
    /// Periods later than this (requested expiry → the task runs) are misses; the slowest
    /// 1% when absent.
    pub deadline_ns: Option<u64>,
    /// Misses shown in full.
    pub top: usize,
}

pub(in crate::explain) struct TimerSample {
    /// Requested expiry, in trace time.
    pub(in crate::explain) expiry: u64,
    /// Callback entered.
    pub(in crate::explain) fired: u64,
    /// The interrupt's own lateness (from when it could first fire).
    pub(in crate::explain) irq_late: u64,
    /// Requested expiry → callback.
    pub(in crate::explain) late: u64,
    pub(in crate::explain) cpu: u32,
    pub(in crate::explain) tid: i32,
    pub(in crate::explain) function: String,
    /// The woken task's wait: runnable span.
    pub(in crate::explain) wait: Option<(u64, u64, u32)>,
    /// No sched_switch put the task on the CPU: the wait's end is its first event there.
    pub(in crate::explain) switch_untraced: bool,
    pub(in crate::explain) armed_late: bool,
    /// When the timer was armed, in trace time.
    pub(in crate::explain) armed: Option<u64>,
    /// The woken task had not run when the trace (or a watch window) ended: its lateness
    /// is not known yet.
    pub(in crate::explain) open: bool,
}

/// The timer deadline policy: the one given; else the slowest 1% (p99) when there are 100
/// periods or more; else 1 ms.
pub(in crate::explain) fn deadline_policy(
    o: &TimerOptions,
    sorted: &[u64],
) -> (Option<u64>, String) {
    policy(o, sorted.len() as u64, || quantile(sorted, 0.99))
}

/// [`deadline_policy`] of `n` periods whose p99 `p99` gives.
fn policy(o: &TimerOptions, n: u64, p99: impl FnOnce() -> u64) -> (Option<u64>, String) {
    match o.deadline_ns {
        Some(d) => (Some(d), "given".to_string()),
        None if n >= 100 => (
            Some(p99()),
            "none given: the periods above p99 are explained".to_string(),
        ),
        None if n > 0 => (
            Some(1_000_000),
            "none given and too few periods for a p99: 1 ms assumed".to_string(),
        ),
        None => (None, "none".to_string()),
    }
}

/// Every period of a timer that woke a task (`keep` says which tasks), and the periods
/// programs reported late themselves; and how many woke a task whose wait the timeline
/// lacks (left out).
fn samples(
    eng: &Engine<'_>,
    o: &TimerOptions,
    keep: &dyn Fn(i32) -> bool,
) -> (Vec<TimerSample>, Vec<u64>, Vec<(u64, u64)>) {
    let (tl, s, sp) = (eng.tl, eng.s, &eng.tl.spans);
    let mut out: Vec<TimerSample> = Vec::new();
    let (mut lost, mut ticks) = (Vec::new(), Vec::new());
    for p in periods(tl, &eng.clock).0 {
        let e = &tl.edges[p.edge as usize];
        if e.to_tid <= 0 || !keep(e.to_tid) {
            continue;
        }
        // The scheduler tick's own timer is nobody's period: the task it woke is whoever
        // it happened to wake, and under NO_HZ the tick is stopped and moved on purpose.
        if is_tick(s.get(Sym(e.key))) {
            ticks.push((p.due, e.at.saturating_sub(p.due)));
            continue;
        }
        // A wait the timeline lacks: no expiry-to-running (the timer measure leaves these
        // out too).
        if p.woken == Woken::Unknown {
            lost.push(p.due);
            continue;
        }
        // From the expiry on the trace clock to the callback, as `latency --measure timer`
        // counts expiry to running: a callback's wait behind others in the same interrupt
        // (or a stalled vCPU there) is part of the period's lateness.
        let late = e.at - p.due;
        let wait = match p.woken {
            Woken::Waited(si) => Some(si as usize),
            _ => None,
        };
        out.push(TimerSample {
            expiry: p.due,
            fired: e.at,
            irq_late: p.armed_late.unwrap_or(late),
            late,
            cpu: e.to_cpu,
            tid: e.to_tid,
            function: s.get(Sym(e.key)).to_string(),
            wait: wait.map(|si| (sp.start[si], sp.end[si], sp.cpu[si])),
            switch_untraced: wait.is_some_and(|si| sp.flags[si] & span::INFERRED != 0),
            armed_late: p.armed_late.is_some(),
            armed: (e.ts != 0).then_some(e.ts),
            open: matches!(p.woken, Woken::Open(_)),
        });
    }
    for r in &tl.reported {
        if o.task.is_some() && !keep(r.tid) {
            continue;
        }
        out.push(TimerSample {
            expiry: r.ts.saturating_sub(r.late_ns),
            fired: r.ts,
            irq_late: r.late_ns,
            late: r.late_ns,
            cpu: r.cpu,
            tid: r.tid,
            function: format!("{} (self-reported)", s.get(r.name)),
            wait: None,
            switch_untraced: false,
            armed_late: false,
            armed: None,
            open: false,
        });
    }
    (out, lost, ticks)
}

/// A timer on `cpu` due at `a` that fired at `b` though timers due after `a` fired there
/// on time meanwhile: the CPU took its interrupts, so this one was not held off but
/// stopped or moved where the trace does not show.
fn moved(eng: &Engine<'_>, cpu: u32, (a, b): (u64, u64), ns: u64) -> Option<Hold> {
    const ON_TIME: u64 = 50_000;
    let list = eng.expiries.get(cpu as usize)?;
    let first = list.partition_point(|&(due, _)| due <= a);
    let on_time: Vec<(u64, u64)> = (list[first..].iter().copied())
        .take_while(|&(due, _)| due + ON_TIME < b)
        .filter(|&(due, fired)| fired <= due + ON_TIME)
        .collect();
    let &(due, _) = on_time.first()?;
    Some(Hold {
        category: cause::TIMER_MOVED,
        culprit: Culprit {
            cpu: Some(cpu),
            ..Default::default()
        },
        ns,
        why: Some(format!(
            "{} timer(s) due on CPU{cpu} after this one fired on time meanwhile (the first due {} after it): the CPU took its interrupts, so this timer was stopped or re-armed where the trace does not show",
            on_time.len(),
            crate::units::dur(due - a)
        )),
        nested_ns: 0,
    })
}

/// How the note on the tick's timers left out begins (automatic mode keeps it).
pub(in crate::explain) const TICK_NOTE: &str =
    "the scheduler tick's own timer (tick_nohz_handler and the like)";

/// The scheduler tick's hrtimer callbacks (`tick_nohz_handler`, `tick_sched_timer`,
/// `tick_nohz_highres_handler`, as kernels have named them), as a symbol may print one
/// (`tick_nohz_handler/0x0`, `tick_sched_timer+0x0/0x70`).
fn is_tick(function: &str) -> bool {
    function.starts_with("tick_")
}

impl TimerSample {
    /// The woken task's wait for its CPU, when traced.
    fn waited(&self) -> Option<u64> {
        self.wait.map(|w| w.1 - w.0)
    }

    /// Expiry to running, as `latency --measure timer` counts it: the callback's own few
    /// us before the wakeup belong to the period too.
    fn total(&self) -> u64 {
        self.late + self.wait.map_or(0, |w| w.1.saturating_sub(self.fired))
    }
}

/// What explaining a late period needs: the engine, the usual interrupt lateness and
/// wakeup wait of the periods in time, and the runnable spans of tasks that overran.
struct PeriodCx<'a> {
    eng: &'a Engine<'a>,
    usual_irq: u64,
    usual_wait: u64,
    /// Runnable and sleep spans per task, by start (only when a period overran).
    runnable: FxHashMap<i32, Vec<u32>>,
}

/// Explains late timers on a built timeline.
pub fn analyze_timers(tl: &Timeline, s: &Interner, o: &TimerOptions) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let (frame, found) = timer_findings(&eng, o, None);
    assemble(tl, s, frame, found)
}

/// [`analyze_timers`] in a window of a long trace: the periods it settles, judged
/// against the whole trace's usual.
pub(in crate::explain) fn analyze_timers_in(
    tl: &Timeline,
    s: &Interner,
    o: &TimerOptions,
    part: TimerPart<'_>,
) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let (frame, found) = timer_findings(&eng, o, Some(part));
    assemble(tl, s, frame, found)
}

/// A report merged from windows: the notes one trace's report ends with, for the
/// periods of every window and the advice given once.
pub(in crate::explain) fn finish_merged(r: &mut ExplainReport) {
    let none = (r.cycles.count == 0).then(|| NO_PERIOD.to_string());
    crate::explain::advice::end_merged_notes(r, none);
}

/// The note of a run whose timers woke no task.
pub(in crate::explain) const NO_PERIOD: &str = "no hrtimer expiry that woke a task (or self-reported lateness) matched: record timer:hrtimer_start, timer:hrtimer_expire_entry/exit and sched:sched_waking/sched_switch";

/// A window of a long trace, for the timer mode: the usual interrupt lateness and wait
/// learnt over the whole trace ([`UsualParts`]), and the periods the window settles
/// (None: automatic mode, which keeps its own).
pub(in crate::explain) struct TimerPart<'a> {
    /// The usual interrupt lateness and wait.
    pub(in crate::explain) usual: (u64, u64),
    /// The deadline the whole trace's periods chose, and why (None: the one given).
    pub(in crate::explain) deadline: Option<(Option<u64>, String)>,
    /// The periods settled.
    pub(in crate::explain) only: Option<&'a crate::pipeline::Stretch>,
}

/// The timer mode up to the shared tail: also what automatic mode takes its late timers
/// from; in `part` of a long trace when given.
pub(in crate::explain) fn timer_findings(
    eng: &Engine<'_>,
    o: &TimerOptions,
    part: Option<TimerPart<'_>>,
) -> (Framing, Findings) {
    let (tl, s) = (eng.tl, eng.s);
    let keep = |tid: i32| (o.task.as_ref()).is_none_or(|t| t.matches(tid, s.get(tl.comm(tid))));
    // A period whose task had not run by the end is no sample: counting only its
    // interrupt's lateness would call it on time (a watch window would then settle it so
    // before it ends). Its window stays unfinished.
    let (mut all, mut lost, mut ticks) = samples(eng, o, &keep);
    let only = part.as_ref().and_then(|p| p.only);
    if let Some(st) = only {
        // Those it settles; one still open is the last window's (the trace ended).
        all.retain(|x| match x.open {
            true => st.close == u64::MAX,
            false => st.settles(x.expiry, x.expiry + x.total()),
        });
        lost.retain(|&t| (st.lo..st.cut).contains(&t));
        ticks.retain(|t| (st.lo..st.cut).contains(&t.0));
    }
    let (given, chosen) = part.map_or((None, None), |p| (Some(p.usual), p.deadline));
    let (lost, ticks): (usize, Vec<u64>) = (lost.len(), ticks.into_iter().map(|t| t.1).collect());
    let (samples, open): (Vec<TimerSample>, Vec<TimerSample>) =
        all.into_iter().partition(|x| !x.open);
    let mut totals: Vec<u64> = samples.iter().map(TimerSample::total).collect();
    totals.sort_unstable();
    let (deadline, source) = chosen.unwrap_or_else(|| deadline_policy(o, &totals));
    let is_miss = |x: &TimerSample| deadline.is_some_and(|d| x.total() > d);
    let good = || samples.iter().filter(|x| !is_miss(x));
    // The usual is learnt from the periods on time. With none but several periods (a
    // watch window holding only misses), a timer interrupt's usual lateness is the least
    // any other period saw (for each period, the least overall): zero would make the few
    // µs every interrupt takes an excess, and a kept window blame what the live run,
    // which learnt the usual, did not. A lone period has no other to compare with: zero.
    // A wait keeps zero: the misses' own waits are what is being explained.
    let (usual_irq, usual_wait) = given.unwrap_or_else(|| {
        let irq = match (good().next(), samples.len()) {
            (Some(_), _) => median_upper(good().map(|x| x.irq_late).collect()),
            (None, n) if n >= 2 => samples.iter().map(|x| x.irq_late).min().unwrap_or(0),
            (None, _) => 0,
        };
        let wait = median_upper(good().filter_map(TimerSample::waited).collect());
        (irq, wait)
    });
    let cx = PeriodCx {
        eng,
        usual_irq,
        usual_wait,
        runnable: if samples.iter().any(|x| x.armed_late) {
            runnable_of(tl, &keep)
        } else {
            FxHashMap::default()
        },
    };
    let mut tally = Tally::default();
    let mut misses: Vec<Miss> = (samples.iter().filter(|x| is_miss(x)))
        .map(|x| cx.explain(x, deadline, &mut tally))
        .collect();
    misses.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let mut notes = Vec::new();
    let overran = samples
        .iter()
        .filter(|x| x.armed_late && is_miss(x))
        .count();
    if overran > 0 {
        notes.push(format!(
            "{overran} late periods were armed after they were due (the task was still on an earlier period): each one's lateness includes the waits that made the earlier ones late: the causes' total counts such a wait once, their summed column once per period it delayed"
        ));
    }
    if !open.is_empty() {
        notes.push(format!(
            "{} period(s) had woken their task, which had not run when the trace ended: left out, their lateness is not known",
            open.len()
        ));
    }
    let late_ticks: Vec<u64> = (ticks.iter().copied())
        .filter(|&t| deadline.is_some_and(|d| t > d))
        .collect();
    if let Some(worst) = late_ticks.iter().max() {
        notes.push(format!(
            "{TICK_NOTE}: {} of its expiries that woke a task came later than the deadline (up to {}) and were left out: the tick is no task's period (the task named would be whoever it woke), and under NO_HZ it is stopped and moved on purpose",
            late_ticks.len(),
            crate::units::dur(*worst)
        ));
    }
    if lost > 0 {
        notes.push(format!(
            "{lost} period(s) woke a task that was woken again before it ran (it ran and slept where the trace cannot see): left out, their lateness is not known"
        ));
    }
    if samples.is_empty() && only.is_none() {
        notes.push(NO_PERIOD.into());
    }
    let stats = CycleStats::of(&totals, samples.len() as u64, 0, misses.len() as u64);
    let mut windows: Vec<Window> = samples
        .iter()
        .map(|x| {
            Window::new(
                x.expiry,
                Some(x.expiry + x.total()),
                x.expiry + x.total(),
                x.tid,
                x.cpu,
                is_miss(x),
            )
        })
        .collect();
    // A window of a long trace lists the periods it settles, each whole.
    if only.is_none() {
        windows.extend(
            (open.iter()).map(|x| Window::new(x.expiry, None, tl.last_ts, x.tid, x.cpu, false)),
        );
    }
    windows.sort_by_key(|w| w.start_ns);
    let frame = Framing {
        from: "hrtimer expiry (requested time)".into(),
        to: vec!["the woken task runs".into()],
        deadline_ns: deadline,
        deadline_source: source,
        top: o.top,
        noun: "timer periods",
    };
    let found = Findings {
        stats,
        misses,
        tally,
        notes,
        windows: windows.into(),
    };
    (frame, found)
}

/// What the usual interrupt lateness and wait of the periods on time are learnt from, in
/// sketches: a trace read in windows adds each window's periods (those it settles) and
/// learns the usual of the whole trace, as [`timer_findings`] learns it from one
/// timeline (upper medians; the least lateness of all periods when none was on time).
#[derive(Clone, Debug, Default)]
pub(in crate::explain) struct UsualParts {
    /// Every period's lateness, for the deadline when none was given.
    totals: crate::dist::Sketch,
    good_irq: crate::dist::Sketch,
    good_wait: crate::dist::Sketch,
    least_irq: Option<u64>,
    periods: u64,
}

impl UsualParts {
    /// The periods of `eng`'s timeline that the window settles (`settles(expiry, end)`).
    pub(in crate::explain) fn of(
        eng: &Engine<'_>,
        o: &TimerOptions,
        settles: impl Fn(u64, u64) -> bool,
    ) -> Self {
        let (tl, s) = (eng.tl, eng.s);
        let keep = |tid: i32| (o.task.as_ref()).is_none_or(|t| t.matches(tid, s.get(tl.comm(tid))));
        let (all, _, _) = samples(eng, o, &keep);
        let mut u = UsualParts::default();
        let inside = (all.iter()).filter(|x| !x.open && settles(x.expiry, x.expiry + x.total()));
        for x in inside {
            u.periods += 1;
            u.totals.add(x.total());
            u.least_irq = Some(u.least_irq.map_or(x.irq_late, |l| l.min(x.irq_late)));
            if o.deadline_ns.is_some_and(|d| x.total() > d) {
                continue;
            }
            u.good_irq.add(x.irq_late);
            if let Some(w) = x.waited() {
                u.good_wait.add(w);
            }
        }
        u
    }

    /// Whether the usuals are exact (no sketch rounded).
    pub(in crate::explain) fn exact(&self) -> bool {
        self.good_irq.exact() && self.good_wait.exact() && self.totals.exact()
    }

    /// The deadline of `o`'s policy over every period added, and why.
    pub(in crate::explain) fn deadline(&self, o: &TimerOptions) -> (Option<u64>, String) {
        policy(o, self.totals.count(), || self.totals.nearest_rank(0.99))
    }

    /// Adds another window's.
    pub(in crate::explain) fn merge(&mut self, o: &UsualParts) {
        self.totals.merge(&o.totals);
        self.good_irq.merge(&o.good_irq);
        self.good_wait.merge(&o.good_wait);
        self.periods += o.periods;
        self.least_irq = match (self.least_irq, o.least_irq) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The usual interrupt lateness and wait.
    pub(in crate::explain) fn usual(&self) -> (u64, u64) {
        let upper = |s: &crate::dist::Sketch| match s.count() {
            0 => 0,
            n => s.nth(n / 2),
        };
        let irq = match (self.good_irq.count(), self.periods) {
            (0, n) if n >= 2 => self.least_irq.unwrap_or(0),
            (0, _) => 0,
            _ => upper(&self.good_irq),
        };
        (irq, upper(&self.good_wait))
    }
}

/// The upper median of unsorted values (0 when empty).
fn median_upper(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// The runnable and sleep spans of the kept tasks, per task by start.
fn runnable_of(tl: &Timeline, keep: &dyn Fn(i32) -> bool) -> FxHashMap<i32, Vec<u32>> {
    let sp = &tl.spans;
    let mut runnable: FxHashMap<i32, Vec<u32>> = FxHashMap::default();
    for i in 0..sp.len() {
        if matches!(sp.kind[i], SpanKind::Runnable | SpanKind::Sleep) && keep(sp.tid[i]) {
            runnable.entry(sp.tid[i]).or_default().push(i as u32);
        }
    }
    for v in runnable.values_mut() {
        v.sort_by_key(|&i| sp.start[i as usize]);
    }
    runnable
}

impl PeriodCx<'_> {
    /// One late period: what kept an overrunning task from coming back, the interrupt's
    /// own lateness, and the woken task's wait for its CPU.
    fn explain(&self, x: &TimerSample, deadline: Option<u64>, tally: &mut Tally) -> Miss {
        let mut per = PerMiss::default();
        let what = format!("hrtimer {} due, for {}", x.function, self.eng.task(x.tid));
        let mut chain = vec![Link::mark("from", x.expiry, x.expiry, Some(x.cpu), what)];
        let (overrun, waits) = self.overrun(x, &mut per, tally);
        chain.extend(overrun);
        chain.extend(waits.into_iter().map(|w| Link {
            duration_ns: w.woke - w.from,
            ..Link::mark("wait-for", x.expiry, w.from, Some(w.cpu), w.what)
        }));
        chain.push(self.interrupt(x, &mut per, tally));
        chain.extend(self.wakeup(x, &mut per, tally));
        // The waits an overrun found fall anywhere in it: in time order (stable, so the
        // marks at +0 keep theirs).
        chain.sort_by_key(|l| l.offset_ns);
        let blamed = per.total();
        let blame = tally.add_miss(per);
        Miss {
            // Where it lost its excess: the context of a report merged from windows.
            cpus: tally.miss_cpus(),
            read_ns: None,
            not_reading: false,
            uncertain: x.switch_untraced,
            blame,
            start_ns: x.expiry,
            duration_ns: Some(x.total()),
            tid: x.tid,
            cpu: x.cpu,
            late_ns: x.total().saturating_sub(deadline.unwrap_or(0)),
            blamed_ns: blamed,
            chain,
        }
    }

    /// A task still busy with an earlier period when this one was due: what kept it from
    /// coming back (waits for its CPU, blocks a task ended, its own running) is this
    /// period's lateness. Also the waits on other tasks it found.
    fn overrun(
        &self,
        x: &TimerSample,
        per: &mut PerMiss,
        tally: &mut Tally,
    ) -> (Option<Link>, Vec<Wait>) {
        let Some(armed) = x.armed.filter(|_| x.armed_late) else {
            return (None, Vec::new());
        };
        let (eng, sp) = (self.eng, &self.eng.tl.spans);
        let (a, b) = (x.expiry, armed.min(x.fired));
        let mut parts: Vec<Hold> = Vec::new();
        let (mut waited, mut slept, mut blocked) = (0, 0, 0);
        let mut waits = Vec::new();
        let list = self.runnable.get(&x.tid).map_or(&[][..], |v| &v[..]);
        let first = list.partition_point(|&i| sp.end[i as usize] <= a);
        for &i in &list[first..] {
            let i = i as usize;
            if sp.start[i] >= b {
                break;
            }
            let (ra, rb) = (sp.start[i].max(a), sp.end[i].min(b));
            if rb <= ra {
                continue;
            }
            if sp.kind[i] == SpanKind::Sleep {
                // Blocked until a task woke it (a lock's holder): what delayed that task.
                if let Some((held, w)) = eng.blocked_holds(x.tid, ra, rb) {
                    blocked += rb - ra;
                    parts.extend(held);
                    waits.extend(w);
                    continue;
                }
                // Asleep on its earlier period's timer: what made that one late.
                slept += rb - ra;
                parts.extend(timer_holds(eng, x.cpu, (ra, rb), rb - ra, x.tid));
                continue;
            }
            waited += rb - ra;
            let mut l = RawLink::wait(LinkKind::Run, sp.start[i], sp.end[i], sp.cpu[i], x.tid);
            l.preempted = RunCause::from_key(sp.key[i]) == RunCause::Preempted;
            parts.extend(eng.holds(&l, ra, rb));
        }
        let held = merge_holds(parts, 4);
        per.add_holds(&held);
        tally.blame_cpu(x.cpu, waited + slept + blocked);
        let on_tasks = if blocked > 0 {
            format!(", {} blocked until another task woke it", dur(blocked))
        } else {
            String::new()
        };
        let what = format!(
            "{} was still on an earlier period: it armed this timer {} after its expiry ({} waiting for a CPU{on_tasks}, {} for the earlier period's late timer)",
            eng.task(x.tid),
            dur(b - a),
            dur(waited),
            dur(slept)
        );
        let link = Link {
            duration_ns: b - a,
            usual_ns: Some(0),
            excess_ns: waited + slept + blocked,
            held_by: held,
            ..Link::mark("overrun", a, a, Some(x.cpu), what)
        };
        (Some(link), waits)
    }

    /// The timer interrupt's own lateness above usual, and why.
    fn interrupt(&self, x: &TimerSample, per: &mut PerMiss, tally: &mut Tally) -> Link {
        let ex = x.irq_late.saturating_sub(self.usual_irq);
        let mut held = Vec::new();
        if ex > 10_000 {
            held = timer_holds(self.eng, x.cpu, (x.fired - ex, x.fired), ex, x.tid);
            per.add_holds(&held);
            tally.blame_cpu(x.cpu, ex);
        }
        let overran = if x.armed_late {
            " (armed after its expiry: the task overran its period)"
        } else {
            ""
        };
        let what = format!("the timer interrupt fired on CPU{}{overran}", x.cpu);
        Link {
            duration_ns: x.late,
            usual_ns: Some(self.usual_irq),
            excess_ns: if ex > 10_000 { ex } else { 0 },
            held_by: held,
            ..Link::mark("timer", x.expiry, x.expiry, Some(x.cpu), what)
        }
    }

    /// The woken task's wait for its CPU above usual, and who held the CPU.
    fn wakeup(&self, x: &TimerSample, per: &mut PerMiss, tally: &mut Tally) -> Option<Link> {
        let (ws, we, wcpu) = x.wait?;
        let eng = self.eng;
        let ex = (we - ws).saturating_sub(self.usual_wait);
        let mut held = Vec::new();
        if ex > 10_000 {
            let l = RawLink::wait(LinkKind::Run, ws, we, wcpu, x.tid);
            held = eng.holds(&l, we - ex, we);
            if !(x.switch_untraced && untraced_rest(&mut held, ex, wcpu)) {
                scale(&mut held, ex);
            }
            per.add_holds(&held);
            tally.blame_cpu(wcpu, ex);
        }
        let what = format!(
            "{} (woken by the timer) waited for CPU{wcpu}{}",
            eng.task(x.tid),
            untraced_words(x.switch_untraced)
        );
        // A wakeup before the expiry (a self-reported period) sits at offset 0.
        let at = Link::mark("wakeup", ws.min(x.expiry), ws, Some(wcpu), what);
        Some(Link {
            duration_ns: we - ws,
            usual_ns: Some(self.usual_wait),
            excess_ns: if ex > 10_000 { ex } else { 0 },
            held_by: held,
            waiter: Some(Culprit::task(eng.tl, eng.s, x.tid, wcpu)),
            ..at
        })
    }
}

/// One hold per (category, culprit) over all the pieces, the largest `n`.
fn merge_holds(parts: Vec<Hold>, n: usize) -> Vec<Hold> {
    let mut held = crate::explain::blame::merge_same(parts);
    held.sort_by_key(|h| std::cmp::Reverse(h.ns));
    held.truncate(n);
    held
}

/// Why a timer interrupt came late on `cpu` during `[a, b]`: irqs-off sections, or, when
/// none is in the trace, what the silence or the one system call around it says
/// (`blame::silent_cpu`). `victim`: the task the timer was for.
pub(in crate::explain) fn timer_holds(
    eng: &Engine<'_>,
    cpu: u32,
    (a, b): (u64, u64),
    ex: u64,
    victim: i32,
) -> Vec<Hold> {
    let tl = eng.tl;
    let l = RawLink::wait(LinkKind::Timer, a, b, cpu, -1);
    let mut h = eng.holds(&l, a, b);
    if h.len() == 1 && h[0].category == cause::TIMER_IRQ_LATE {
        let silent = tl.ticks > 0 && tl.silent_ns(Some(cpu), a, b) * 2 >= b - a;
        if silent || one_syscall(eng, cpu, a, b).is_some() {
            h[0] = silent_cpu(eng, cpu, (a, b), ex, &|t| t == victim);
        } else if let Some(h0) = console_untraced_call(eng, cpu, (a, b), ex) {
            h[0] = h0;
        } else if let Some(h0) = moved(eng, cpu, (a, b), ex) {
            h[0] = h0;
        }
    }
    scale(&mut h, ex);
    h
}
