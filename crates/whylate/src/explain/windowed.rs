//! `explain` in bounded memory: a trace longer than a window is read once, in windows
//! ([`pipeline::read_windowed`]), each window explained as soon as it is complete and
//! merged into one report ([`RunSummary`], as `watch` merges its windows), its timeline
//! dropped. A trace that fits one window is explained exactly as [`super::run`] does.
//!
//! What the merged report keeps: every sample counted once (by the window it starts in),
//! its duration in a quantile sketch (8 significant bits), every miss's blame in the
//! causes, the [`KEEP_MISSES`] worst misses in full, each CPU's profile summed over the
//! windows; not the per-sample list the plots draw, so drawing (`--html`, `--svg`,
//! `export`) reads the trace whole ([`super::run`]).

use super::merge::Lines;
use super::modes::auto_usual::{UsualSamples, Usuals};
use super::modes::{auto, Mode, Watch};
use super::report::Settled;
use super::{explained, with_facts, ExplainReport, Miss, PairingStats, RunSummary};
use crate::event::Interner;
use crate::pipeline::Stretch;
use crate::pipeline::{self, Done, Windowing};
use crate::read::{OpenOptions, Opened, ReadError};
use crate::timeline::{Anomalies, Timeline, Usage};
use rustc_hash::FxHashSet;

/// Misses a report merged from windows keeps in full: the worst first (`--expect`: the
/// first in time, in time order).
pub const KEEP_MISSES: usize = 1000;

/// How the line on requests that got no reply begins (`Cycles::why_unanswered`).
const NO_REPLY: &str = "no reply: ";

/// Whether `mode` can be explained in windows: cycle mode with its deadline given (the
/// windows must know what is late before the trace has been read to its end; a deadline
/// chosen from every cycle's duration needs them all, and their usual chain with them),
/// `--expect` (its T is given), and the automatic, timer, softirq and function modes
/// (their usuals, and a deadline not given, are learnt over the whole trace first, in
/// passes of their own).
pub fn windows_for(mode: &Mode) -> bool {
    match mode {
        Mode::Cycles(o) => o.deadline_ns.is_some(),
        Mode::Timer(_) | Mode::Softirq { .. } | Mode::Function(_) => true,
        Mode::Auto { .. } | Mode::Expect(_) => true,
    }
}

/// Explains the inputs for the report alone, in windows of `w` when the mode allows it
/// ([`windows_for`]) and the trace is longer than one.
pub fn report(
    inputs: Opened,
    open: &OpenOptions,
    mode: &Mode,
    w: Windowing,
) -> Result<ExplainReport, ReadError> {
    if w.events == 0 || !windows_for(mode) {
        return super::run(inputs, open, mode).map(|x| x.report);
    }
    if !matches!(mode, Mode::Cycles(_) | Mode::Expect(_)) {
        return in_passes(inputs, open, mode, w);
    }
    in_windows(inputs, open, mode, w, None).map(|(r, _)| r)
}

/// Automatic, timer, softirq and function modes in windows, in two passes over the
/// inputs: an
/// outlier is judged against its group's usual over the whole trace, and its excess
/// counts from it (a late period's, from the usual interrupt lateness and wait of the
/// periods on time; a slow service's, from the usual service), so the first pass learns
/// the usuals window by window (in sketches, [`UsualSamples`]) and the second explains
/// each window against them. Timer mode without a deadline takes three: its deadline
/// (the p99 of every period) decides which periods are on time, so the usuals are learnt
/// in a second pass. A trace that fits one window is explained whole from the first
/// pass. Read whole instead: a stream (standard input, a pipe: it cannot be read twice),
/// and in automatic mode a timerlat/osnoise trace and a kernel log (their own analyses).
fn in_passes(
    inputs: Opened,
    open: &OpenOptions,
    mode: &Mode,
    w: Windowing,
) -> Result<ExplainReport, ReadError> {
    let Some(again) = inputs.again(open) else {
        return super::run(inputs, open, mode).map(|x| x.report);
    };
    let mut last = again?;
    // A late timer is measured against the hrtimer clock its neighbours give, up to
    // 20 ms past it: the window holds that much past its stretch (as latency's do).
    let w = Windowing {
        after_ns: w.after_ns.max(Windowing::CLOCK_AFTER_NS),
        ..w
    };
    let planned = match mode {
        Mode::Timer(o) if o.deadline_ns.is_none() => 3,
        _ => 2,
    };
    crate::read::Progress::begin_pass(&open.progress, 1, planned);
    let mut samples = match learn(inputs, open, mode, w)? {
        Learnt::Whole(whole) => {
            let (pass, watch) = *whole;
            return explained(pass, watch).map(|x| x.report);
        }
        Learnt::Own => return super::run(last, open, mode).map(|x| x.report),
        Learnt::Usuals(samples) => samples,
    };
    let mut exact = samples.exact();
    let chosen = samples.timer_deadline();
    let mut passes = 2;
    if let (Mode::Timer(o), Some((Some(d), _))) = (mode, &chosen) {
        let Some(third) = last.again(open) else {
            return super::run(last, open, mode).map(|x| x.report);
        };
        let third = third?;
        let on_time = Mode::Timer(super::TimerOptions {
            deadline_ns: Some(*d),
            ..o.clone()
        });
        crate::read::Progress::begin_pass(&open.progress, 2, 3);
        samples = match learn(last, open, &on_time, w)? {
            Learnt::Usuals(s) => s,
            // The same trace again: it does not fit one window now.
            _ => return super::run(third, open, mode).map(|x| x.report),
        };
        exact &= samples.exact();
        (last, passes) = (third, 3);
    }
    let mut usuals = samples.usuals();
    usuals.deadline = chosen;
    let usuals = std::sync::Arc::new(usuals);
    drop(samples);
    let given = Given {
        usuals: &usuals,
        exact,
        passes,
    };
    crate::read::Progress::begin_pass(&open.progress, passes.into(), passes.into());
    let (r, _) = in_windows(last, open, mode, w, Some(given))?;
    Ok(r)
}

/// What the passes before the last learnt over the whole trace, for the last.
#[derive(Clone, Copy)]
struct Given<'u> {
    usuals: &'u std::sync::Arc<Usuals>,
    /// No sketch rounded.
    exact: bool,
    /// Passes over the inputs, the last included.
    passes: u8,
}

/// What the first pass found.
enum Learnt<'m> {
    /// The trace fitted one window: its pass, explained as a whole.
    Whole(Box<(pipeline::Pass, Watch<'m>)>),
    /// A timerlat/osnoise trace or a kernel log: its own analysis, over the whole trace.
    Own,
    /// Every window's samples, for the usuals.
    Usuals(Box<UsualSamples>),
}

/// A pass that learns: the samples of each window (those it settles) added up on a second
/// thread while the next window is read, for the mode's usuals (and its deadline).
fn learn<'m>(
    inputs: Opened,
    open: &OpenOptions,
    mode: &'m Mode,
    w: Windowing,
) -> Result<Learnt<'m>, ReadError> {
    let mut whole = None;
    let mut own = false;
    let mut before = 0;
    let (tx, rx) = std::sync::mpsc::sync_channel::<(Timeline, Interner, Stretch)>(0);
    let (facts, samples) = std::thread::scope(|sc| {
        let worker = sc.spawn(move || {
            let mut samples = match mode {
                Mode::Timer(o) => UsualSamples::new(o.clone(), false),
                Mode::Softirq {
                    vector,
                    deadline_ns,
                    ..
                } => UsualSamples::softirq(vector, *deadline_ns),
                Mode::Function(o) => UsualSamples::function(o),
                _ => UsualSamples::new(super::modes::auto_usual::auto_timers(0), true),
            };
            for (tl, strings, only) in rx {
                samples.add(&tl, &strings, only);
            }
            samples
        });
        let facts = pipeline::read_windowed(
            inputs,
            open,
            w,
            || Watch::new(mode),
            |d| {
                if d.index == 0 && d.last {
                    whole = Some((d.tl, d.sink));
                    return Ok(());
                }
                let auto = matches!(mode, Mode::Auto { .. });
                own |= auto && (super::is_rtla(&d.tl) || d.sink.kernel_log_matters(&d.tl));
                let close = if d.last { u64::MAX } else { d.tl.last_ts };
                let (lo, cut) = (d.lo, d.cut);
                let only = Stretch {
                    lo,
                    cut,
                    before,
                    close,
                };
                before = close;
                if !own {
                    // The worker ends only by a panic, which the join below hands on.
                    let _ = tx.send((d.tl, d.strings.clone(), only));
                }
                Ok(())
            },
        );
        drop(tx);
        let samples = worker
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (facts, samples)
    });
    let facts = facts?;
    Ok(match (whole, own) {
        (Some((tl, watch)), _) => Learnt::Whole(Box::new((facts.into_pass(tl), watch))),
        (None, true) => Learnt::Own,
        (None, false) => Learnt::Usuals(Box::new(samples)),
    })
}

/// [`report`] in windows; also how many windows were held open past their cut for a
/// cycle that had not ended.
fn in_windows(
    inputs: Opened,
    open: &OpenOptions,
    mode: &Mode,
    w: Windowing,
    usuals: Option<Given<'_>>,
) -> Result<(ExplainReport, u64), ReadError> {
    let mut whole: Option<(Timeline, Watch<'_>)> = None;
    // Each window is explained on a thread of its own while the next is read: the
    // reading thread is the pass's bottleneck. The rendezvous holds at most one window
    // in analysis.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job<'_>>(0);
    let (facts, merge) = std::thread::scope(|sc| {
        let worker = sc.spawn(move || {
            let listed = match mode {
                Mode::Auto { .. } => auto::LISTED,
                _ => KEEP_MISSES,
            };
            let mut merge = Merge::new(listed);
            if matches!(mode, Mode::Expect(_)) {
                merge.summary = merge.summary.earliest();
            }
            for job in rx {
                if merge.error.is_none() {
                    merge.error = merge.add(job).err();
                }
            }
            merge
        });
        let facts = pipeline::read_windowed(
            inputs,
            open,
            w,
            || match usuals {
                Some(g) => Watch::new(mode).with_usuals(g.usuals),
                None => Watch::new(mode),
            },
            |d| match (d.index, d.last) {
                // The trace fitted one window: explained as a whole, below.
                (0, true) => {
                    whole = Some((d.tl, d.sink));
                    Ok(())
                }
                // The worker ends only by a panic, which the join below hands on.
                _ => {
                    let _ = tx.send(Job::of(d));
                    Ok(())
                }
            },
        );
        drop(tx);
        let merge = worker
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (facts, merge)
    });
    let (facts, mut merge) = (facts?, merge);
    if let Some(e) = merge.error.take() {
        return Err(e);
    }
    if let Some((tl, watch)) = whole {
        let pass = facts.into_pass(tl);
        return explained(pass, watch).map(|x| (x.report, 0));
    }
    crate::read::inputs::Unread::nothing_read(&facts.inputs, facts.events)?;
    let empty = |mut f: ExplainReport| {
        f.cycles = merge.summary.stats();
        f
    };
    let Some(mut r) = merge
        .summary
        .report()
        .or_else(|| merge.first.take().map(empty))
    else {
        let why = merge
            .never
            .unwrap_or_else(|| "no window held a whole cycle".into());
        return Err(ReadError::NoMatch { why });
    };
    if let Some(x) = &mut r.expect {
        // Whether A or B ever matched, and the misses' rate, are the whole trace's.
        if let Some(why) = merge.expect.error(r.cycles.count, r.cycles.replied) {
            return Err(ReadError::NoMatch { why });
        }
        let span = merge.span.1.saturating_sub(merge.span.0).max(1);
        x.misses_per_s = r.cycles.misses as f64 * 1e9 / span as f64;
    }
    let note = match usuals {
        Some(g) => auto::windows_note(facts.windows, w.events, g.exact, g.passes),
        None => merge.note(facts.windows, w, mode),
    };
    r.notes.insert(0, note);
    r.blind = std::mem::take(&mut merge.blind.lines);
    if r.cycles.replied == 0 {
        r.blind.extend(merge.unanswered.take());
    }
    // Where the one trace would say it: after what is cut, before the rtla values.
    if let Some(idle) = merge.idle.untraced_idle_note() {
        let at = (r.blind.iter())
            .position(|b| b.contains("timerlat/osnoise events not understood"))
            .unwrap_or(r.blind.len());
        r.blind.insert(at, idle);
    }
    r.cycles.pairing = merge.pairing.take();
    if let Some(p) = r.cycles.pairing.as_ref().filter(|p| p.overlapped > 0) {
        r.notes.push(format!(
            "requests overlapped (up to {} open at once): the count of overlapping requests is per window, one in the overlap of two windows counted twice; each window starts with no request open, so a reply to a request made more than 60 ms before a window's cut pairs with that window's first request under its key (--window-events 0 pairs over the whole trace)",
            p.max_open
        ));
    }
    if let Some(given) = usuals {
        r.advice = merge.advice.take().unwrap_or_default();
        match mode {
            Mode::Auto { .. } => auto::finish_merged(&mut r, merge.left_out.take()),
            Mode::Softirq { vector, .. } => super::softirq::finish_merged(&mut r, vector),
            Mode::Function(_) => {
                let notes = (given.usuals.function.as_ref()).map_or(&[][..], |f| &f.notes[..]);
                super::function::finish_merged(&mut r, notes)
            }
            _ => super::timer::finish_merged(&mut r),
        }
    }
    if merge.forced > 0 {
        let line = match mode {
            Mode::Expect(_) => format!(
                "{} As had no B yet when their window had taken {} more events: they count as never answered, late until that window's end (--window-events 0 holds the whole trace and waits for them)",
                merge.forced, w.events
            ),
            _ => format!(
                "{} requests were still unanswered when their window had taken {} more events: they count as no reply (--window-events 0 holds the whole trace and waits for them)",
                merge.forced, w.events
            ),
        };
        r.blind.push(line);
    }
    let mut recorder: Vec<i32> = merge.recorder.iter().copied().collect();
    recorder.sort_unstable();
    let blamed = merge.summary.blamed_cpus();
    r.context = super::advice::context_of_usage(&merge.usage, &r.causes, blamed, &recorder);
    let cpus = merge.usage.profiles();
    let facts_of = (facts.events, facts.snapshot.as_ref());
    let r = with_facts(r, facts.inputs, facts_of, cpus, &merge.recorder);
    Ok((r, facts.held))
}

/// Why `--expect`'s selectors matched nothing, as its windows saw it. One trace says it
/// when no A came and the trace shows why A cannot match, or when no A was answered and
/// the trace shows why B cannot: a window where the selector could match (it says no
/// why) rules that out for the whole trace, whose events are a superset of its.
#[derive(Default)]
struct ExpectWhy {
    /// The first reason given by a window without an A (about A).
    a: Option<String>,
    /// A window without an A gave no reason: A can match.
    a_can: bool,
    /// The first reason given by a window with As (about B).
    b: Option<String>,
    /// A window with As gave no reason: one was answered, or B can match.
    b_can: bool,
}

impl ExpectWhy {
    fn add(&mut self, seen_a: bool, why: Option<String>) {
        let (reason, can) = match seen_a {
            true => (&mut self.b, &mut self.b_can),
            false => (&mut self.a, &mut self.a_can),
        };
        match why {
            Some(w) => {
                reason.get_or_insert(w);
            }
            None => *can = true,
        }
    }

    /// The error one trace of `count` As, `replied` of them answered, gives.
    fn error(&self, count: u64, replied: u64) -> Option<String> {
        match (count, replied) {
            (0, _) if !self.a_can => self.a.clone(),
            (1.., 0) if !self.b_can => self.b.clone(),
            _ => None,
        }
    }
}

/// A window handed to the worker: what [`Done`] lends, owned.
struct Job<'m> {
    tl: Timeline,
    sink: Watch<'m>,
    /// The pass's strings as the window ended (a window names nothing later).
    strings: Interner,
    lo: u64,
    cut: u64,
    forced: bool,
    last: bool,
}

impl<'m> Job<'m> {
    fn of(d: Done<'_, Watch<'m>>) -> Job<'m> {
        Job {
            tl: d.tl,
            sink: d.sink,
            strings: d.strings.clone(),
            lo: d.lo,
            cut: d.cut,
            forced: d.forced,
            last: d.last,
        }
    }
}

/// What the windows add up to.
struct Merge {
    summary: RunSummary,
    usage: Usage,
    /// The first trace time and the last of every window.
    span: (u64, u64),
    recorder: FxHashSet<i32>,
    /// Why a window's selectors matched nothing (kept until one does).
    never: Option<String>,
    /// Samples settled still open, their window closed past its bound.
    forced: u64,
    /// When the window before the next closed (its last event).
    before: u64,
    /// The misses a report lists, that the advice is given for.
    listed: usize,
    /// The windows' notes on the recorder's outliers left out, as one (automatic mode).
    left_out: Option<String>,
    /// Automatic mode's advice, for the causes ranked over every window and the worst
    /// outliers listed, given by the last window (it knows every task's name and
    /// priority at the end, as one pass does).
    advice: Option<Vec<super::Advice>>,
    /// The first error explaining a window.
    error: Option<ReadError>,
    /// How requests paired: the first window's mode, the most open at once in any
    /// window, the overlapping requests of every window.
    pairing: Option<PairingStats>,
    /// What the windows said is blind, their counts added up.
    blind: Lines,
    /// What the windows saw of idle exits, said once for all of them.
    idle: Anomalies,
    /// The first window's line on why none of its requests got a reply.
    unanswered: Option<String>,
    /// What `--expect`'s windows said of why A or B matched nothing.
    expect: ExpectWhy,
    /// The first window's report if it settled no cycle, for a trace where no window
    /// settles one (the selectors' events are there, their values never match): the
    /// report has no cycle, as the whole trace's has, rather than none.
    first: Option<ExplainReport>,
}

impl Merge {
    fn new(listed: usize) -> Merge {
        Merge {
            summary: RunSummary::of_parts(KEEP_MISSES),
            usage: Usage::default(),
            span: (u64::MAX, 0),
            recorder: FxHashSet::default(),
            never: None,
            forced: 0,
            before: 0,
            left_out: None,
            listed,
            advice: None,
            error: None,
            pairing: None,
            blind: Lines::new(16, true),
            idle: Anomalies::default(),
            unanswered: None,
            expect: ExpectWhy::default(),
            first: None,
        }
    }

    /// Explains one window and adds what it settles: the samples that start in its own
    /// stretch, and the time each CPU spent there.
    fn add(&mut self, mut d: Job<'_>) -> Result<(), ReadError> {
        let (lo, cut) = (d.lo, d.cut);
        let close = if d.last { u64::MAX } else { d.tl.last_ts };
        let before = std::mem::replace(&mut self.before, close);
        // Automatic mode settles by its own rule (it hands back only what it settles).
        let own = d.sink.settle(Stretch {
            lo,
            cut,
            before,
            close,
        });
        let inside = move |t: u64| t >= lo && t < cut;
        let settles = move |t: u64| own || inside(t);
        if let Some(first) = d.tl.first_ts {
            self.span = (self.span.0.min(first), self.span.1.max(d.tl.last_ts));
            let stretch = (lo.max(first), cut.min(d.tl.last_ts.max(first + 1)));
            if stretch.0 < stretch.1 {
                self.usage.add(&d.tl, &d.strings, stretch, inside);
            }
        }
        self.usage.span = self.span.1.saturating_sub(self.span.0);
        self.recorder.extend(d.tl.recorder.iter().copied());
        // Every window's idle exits count, whether or not it settles a sample.
        self.idle.add_idle_exits(&d.tl.anomalies);
        if let Some((seen, why)) = d.sink.expect_why(&d.strings) {
            self.expect.add(seen, why);
        }
        let mut r = match d.sink.explain_only(&d.tl, &d.strings, Some((lo, cut))) {
            Ok(r) => r,
            Err(ReadError::NoMatch { why }) => {
                self.never.get_or_insert(why);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if let Some(p) = r.cycles.pairing.take() {
            let m = self.pairing.get_or_insert(PairingStats {
                overlapped: 0,
                max_open: 0,
                ..p.clone()
            });
            m.overlapped += p.overlapped;
            m.max_open = m.max_open.max(p.max_open);
        }
        let idle = d.tl.anomalies.untraced_idle_note();
        for b in r.blind.iter().filter(|b| Some(*b) != idle.as_ref()) {
            // Why a window got no reply holds for the trace only if no window got one.
            if b.starts_with(NO_REPLY) {
                self.unanswered.get_or_insert_with(|| b.clone());
                continue;
            }
            self.blind.add(b);
        }
        r.recorder = d.tl.recorder.iter().copied().collect();
        r.recorder.sort_unstable();
        // Cycle mode sums its cycles as it walks them; other modes' windows are summed here.
        let settled = match r.cycles.settled.take() {
            Some(s) => *s,
            None => {
                let mut s = Settled::default();
                for w in r.windows.iter().filter(|w| settles(w.start_ns)) {
                    s.add(&w, r.deadline_ns);
                }
                s
            }
        };
        auto::take_recorder_notes(&mut r.notes, &mut self.left_out);
        if d.forced {
            self.forced += settled.no_reply;
        }
        if self.first.is_none() && settled.count == 0 {
            // Cheap to keep: a window that settles nothing holds few cycles.
            let mut f = r.clone();
            (f.misses, f.windows, f.causes, f.advice) = Default::default();
            self.first = Some(f);
        }
        let misses: Vec<&Miss> = (r.misses.iter()).filter(|m| settles(m.start_ns)).collect();
        // The report's counts are of the settled cycles alone (explain_only).
        self.summary.add_unjudged(&r.cycles);
        self.summary.add_summed(&r, &settled, &misses);
        if own && d.last {
            let causes = self.summary.causes();
            let worst = &self.summary.worst()[..self.summary.worst().len().min(self.listed)];
            self.advice = Some(super::advice::advise(&d.tl, &d.strings, &causes, worst));
        }
        Ok(())
    }

    /// The note that says how the report was made.
    fn note(&self, windows: u64, w: Windowing, mode: &Mode) -> String {
        let quantiles = match self.summary.exact() {
            true => "quantiles exact",
            false => "quantiles to 8 significant bits",
        };
        let (sample, kept) = match mode {
            Mode::Expect(_) => ("each A", "first"),
            _ => ("each cycle", "worst"),
        };
        let usual = match mode {
            Mode::Expect(_) => "",
            _ => ", the usual chain learned from each window's own good cycles",
        };
        format!(
            "explained in {windows} windows of {} events, each dropped once explained (memory bounded by a window, not the trace): {sample} is counted by the window it starts in, {quantiles}, the {KEEP_MISSES} {kept} misses kept in full and every miss in the causes{usual}; --window-events 0 holds the whole trace",
            w.events
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{in_windows, report, Mode};
    use crate::explain::{run, CauseRow, ExplainReport};
    use crate::pipeline::Windowing;
    use crate::read::OpenOptions;
    use crate::testkit::{chain_options, opened, three_cpu_chain};

    /// Windows of about 30 of the test workload's cycles, with 2 ms of context.
    const SMALL: Windowing = Windowing {
        events: 300,
        before_ns: 2_000_000,
        after_ns: 1_000_000,
    };

    /// What must not change when a trace is explained in windows.
    fn key(r: &ExplainReport) -> impl PartialEq + std::fmt::Debug {
        let c = &r.cycles;
        let causes: Vec<_> = (r.causes.iter())
            .map(|c: &CauseRow| {
                (
                    c.category,
                    c.culprit.label(),
                    c.count,
                    c.total_excess_ns,
                    c.once_ns,
                )
            })
            .collect();
        let misses: Vec<_> = (r.misses.iter())
            .map(|m| (m.start_ns, m.tid, m.duration_ns, m.blamed_ns))
            .collect();
        let stats = (
            c.count, c.replied, c.no_reply, c.misses, c.min_ns, c.p50_ns, c.p90_ns,
        );
        let more = (c.p99_ns, c.max_ns, c.histogram.clone(), r.cpus.clone());
        (stats, more, causes, misses)
    }

    /// 600 request cycles, one in ten held up 25 ms by a hog (each spanning 25 later
    /// requests' time), read in windows of 300 events (about 30 cycles) with 2 ms of
    /// context: every window is cut inside one and is held until it ends. The usual
    /// chain is the same in every window (all good cycles are alike), so the counts,
    /// quantiles, misses, blame and CPU profiles equal the whole trace's.
    #[test]
    fn a_trace_in_windows_gives_the_whole_traces_answer() {
        let hogged: Vec<usize> = (5..600).step_by(10).collect();
        let text = three_cpu_chain(600, &hogged, 25_000);
        let mode = Mode::Cycles(chain_options(Some(1_000_000)));
        let open = OpenOptions::default();
        let whole = run(opened(&text), &open, &mode).unwrap().report;
        let w = SMALL;
        let (parts, held) = in_windows(opened(&text), &open, &mode, w, None).unwrap();
        assert!(
            parts.notes[0].starts_with("explained in "),
            "{:?}",
            parts.notes
        );
        assert!(
            held >= 3,
            "{held} windows held for a cycle open at their cut"
        );
        assert_eq!((whole.cycles.count, whole.cycles.misses), (600, 60));
        assert_eq!(key(&parts), key(&whole));
        assert_eq!(parts.events, whole.events);
        // Windows larger than the trace: one, explained exactly as a whole.
        let one = report(opened(&text), &open, &mode, Windowing::DEFAULT).unwrap();
        assert_eq!(
            serde_json::to_string(&one).unwrap(),
            serde_json::to_string(&whole).unwrap()
        );
    }

    /// Replies ready before they were read (a client that gave up and read them 20 ms
    /// later), in windows of 20 to 80 events (none forced to close before its cycles got
    /// their replies): each window's cycles, summed as cycle mode walks them, give the
    /// whole trace's read times and not-reading count.
    #[test]
    fn replies_read_late_in_windows_give_the_whole_traces_read_times() {
        let text = crate::testkit::giving_up_client(30, &[2, 5, 17, 28]);
        let mode = Mode::Cycles(chain_options(Some(9_000_000)));
        let open = OpenOptions::default();
        let whole = run(opened(&text), &open, &mode).unwrap().report;
        let read = |r: &ExplainReport| {
            let t = r.cycles.read.clone().unwrap();
            let c = &r.cycles;
            (
                t.later,
                t.p50_ns,
                t.p99_ns,
                t.max_ns,
                c.not_reading,
                c.misses,
            )
        };
        assert_eq!(read(&whole), (4, 70_000, 23_630_000, 23_630_000, 4, 4));
        for events in [20, 40, 80] {
            let w = Windowing { events, ..SMALL };
            let (parts, _) = in_windows(opened(&text), &open, &mode, w, None).unwrap();
            let windowed = parts.notes.iter().any(|n| n.starts_with("explained in "));
            assert!(windowed, "{events}: {:?}", parts.notes);
            assert!(parts.blind.iter().all(|b| !b.contains("still unanswered")));
            assert_eq!(read(&parts), read(&whole), "windows of {events} events");
            assert_eq!(key(&parts), key(&whole), "windows of {events} events");
        }
    }

    /// A server that stops answering for 150 cycles (about four windows of 300 events)
    /// while its client keeps asking and gives up each time (`--pair latest`), and a
    /// last request the trace ends before its deadline: the windows with no reply at all
    /// still count their requests as no reply, and the last one is cut off, not missed,
    /// as in the whole trace.
    #[test]
    fn windows_with_no_reply_and_a_cut_off_request_count_as_the_whole_trace() {
        let text = three_cpu_chain(400, &[], 0);
        let mut k = 0;
        let mut lines: Vec<&str> = Vec::new();
        for l in text.lines() {
            if l.contains("sys_read -> 0x1") {
                k += 1;
                if (100..250).contains(&(k - 1)) {
                    continue;
                }
            }
            lines.push(l);
        }
        let last = lines.last().unwrap().to_string();
        let end_us = last.split(": ").next().unwrap().rsplit(' ').next().unwrap();
        let end_us: f64 = end_us.parse().unwrap();
        let asked = crate::testkit::line(
            (end_us * 1e6) as u64 + 10,
            0,
            "c-5",
            "....1",
            "sys_write(fd: 3, buf: 0, count: 7)",
        );
        let text = format!("{}\n{asked}", lines.join("\n"));
        let mut o = chain_options(Some(1_000_000));
        o.pairing = crate::explain::Pairing::Latest;
        let mode = Mode::Cycles(o);
        let open = OpenOptions::default();
        let whole = run(opened(&text), &open, &mode).unwrap().report;
        let w = SMALL;
        let (parts, _) = in_windows(opened(&text), &open, &mode, w, None).unwrap();
        let c = &whole.cycles;
        assert_eq!((c.count, c.no_reply, c.cut_off), (401, 150, 1));
        let p = &parts.cycles;
        assert_eq!(
            (p.count, p.replied, p.no_reply, p.cut_off, p.misses),
            (c.count, c.replied, c.no_reply, c.cut_off, c.misses)
        );
        // A window with no reply does not say the selectors match nothing.
        assert!(!parts.blind.iter().any(|b| b.starts_with(super::NO_REPLY)));
        assert_eq!(parts.blind, whole.blind);
    }

    /// Selectors whose event is in the trace but whose values never match: the whole
    /// trace reports no cycle (and the text says nothing matched); so do its windows,
    /// instead of an error.
    #[test]
    fn selectors_that_match_no_cycle_give_an_empty_report_in_windows_too() {
        let text = three_cpu_chain(200, &[], 0);
        let mut o = chain_options(Some(1_000_000));
        o.from = crate::selector::Selector::parse("sys_enter_write[comm=c,count=99]").unwrap();
        let mode = Mode::Cycles(o);
        let open = OpenOptions::default();
        let whole = run(opened(&text), &open, &mode).unwrap().report;
        let (parts, _) = in_windows(opened(&text), &open, &mode, SMALL, None).unwrap();
        assert_eq!(whole.cycles.count, 0);
        assert_eq!(key(&parts), key(&whole));
        assert_eq!(
            (parts.from.as_str(), &parts.to),
            (whole.from.as_str(), &whole.to)
        );
        assert_eq!(parts.blind, whole.blind);
        assert!(
            parts.notes[0].starts_with("explained in "),
            "{:?}",
            parts.notes
        );
    }

    /// Softirq mode in windows: 300 datagrams to a reader, every 30th one's NET_RX run
    /// re-raised and deferred to ksoftirqd behind a hog for 2 ms. The deadline (the p99
    /// of every service) and the usual service are learnt over the whole trace in a first
    /// pass: a window of 300 events holds too few services for a p99 of its own (it
    /// would assume 100 us). Misses, blame and counts are the whole trace's.
    #[test]
    fn softirq_mode_in_windows_takes_the_whole_traces_deadline_and_usual() {
        let text = crate::testkit::udp_deferral(300, &[50, 150, 250], 2_000);
        let mode = Mode::Softirq {
            vector: "NET_RX".into(),
            deadline_ns: None,
            top: 10,
        };
        let open = OpenOptions::default();
        let whole = run(opened(&text), &open, &mode).unwrap().report;
        let parts = report(opened(&text), &open, &mode, SMALL).unwrap();
        assert!(parts.notes[0].contains("two passes"), "{:?}", parts.notes);
        assert_eq!((whole.deadline_ns, whole.cycles.count), (Some(1_000), 300));
        assert_eq!(whole.cycles.misses, 3);
        let c = &whole.causes[0];
        assert_eq!(
            (c.category.id(), c.culprit.label(), c.total_excess_ns),
            (
                "deferred-to-ksoftirqd",
                "hog[60] (nice -19)".into(),
                5_159_994
            )
        );
        assert_eq!(
            (parts.deadline_ns, &parts.deadline_source),
            (whole.deadline_ns, &whole.deadline_source)
        );
        assert_eq!(key(&parts), key(&whole));
        let usual = |r: &ExplainReport| -> Vec<_> {
            r.misses.iter().map(|m| m.chain[0].usual_ns).collect()
        };
        assert_eq!(usual(&parts), usual(&whole));
        assert_eq!(usual(&whole), vec![Some(1_000); 3]);
    }

    /// `--expect` in windows: each window holds its As until their B came (a raise of
    /// NET_RX deferred 20 ms to ksoftirqd spans several windows of 300 events), counts the
    /// As of its own stretch, and keeps the first misses in time order; the rate of
    /// misses is over the whole trace's span.
    #[test]
    fn expect_in_windows_gives_the_whole_traces_misses_in_time_order() {
        use crate::explain::{ExpectOptions, Scope};
        let text = crate::testkit::udp_deferral(300, &[50, 150, 250], 20_000);
        let pattern = "softirq_raise -> softirq_entry within 100us";
        let o = ExpectOptions::parse(pattern, Scope::Cpu, 10, |_| Ok(100_000)).unwrap();
        let mode = Mode::Expect(o);
        let open = OpenOptions::default();
        let whole = run(opened(&text), &open, &mode).unwrap().report;
        let x = whole.expect.as_ref().unwrap();
        assert_eq!((x.late, x.never), (3, 0));
        let mut held = 0;
        for events in [100, 150, 200, 300] {
            let w = Windowing { events, ..SMALL };
            let (parts, h) = in_windows(opened(&text), &open, &mode, w, None).unwrap();
            held += h;
            assert!(
                parts.notes[0].starts_with("explained in "),
                "{:?}",
                parts.notes
            );
            assert_eq!(key(&parts), key(&whole));
            assert_eq!(
                serde_json::to_value(&parts.expect).unwrap(),
                serde_json::to_value(&whole.expect).unwrap()
            );
            let starts: Vec<u64> = parts.misses.iter().map(|m| m.start_ns).collect();
            assert!(starts.windows(2).all(|p| p[0] < p[1]), "{starts:?}");
        }
        assert!(held >= 1, "no window held for an A open at its cut");
    }

    /// `--expect` whose A never matches (a value no event has) or whose B never comes
    /// on A's CPU: windows give what one trace gives, the same error or a report with
    /// the same counts (no window alone can say a selector matches nothing).
    #[test]
    fn expect_in_windows_says_nothing_matched_as_the_whole_trace() {
        use crate::explain::{ExpectOptions, Scope};
        let text = crate::testkit::udp_deferral(300, &[50, 150, 250], 2_000);
        let open = OpenOptions::default();
        for pattern in [
            "softirq_raise[vec=9] -> softirq_entry within 100us",
            "softirq_raise -> sys_enter_sendto within 100us",
            "softirq_raise -> no_such_event within 100us",
        ] {
            let o = ExpectOptions::parse(pattern, Scope::Cpu, 10, |_| Ok(100_000)).unwrap();
            let mode = Mode::Expect(o);
            let whole = run(opened(&text), &open, &mode).map(|x| x.report);
            let parts = in_windows(opened(&text), &open, &mode, SMALL, None).map(|x| x.0);
            match (whole, parts) {
                (Ok(a), Ok(b)) => {
                    let counts = |r: &ExplainReport| (r.cycles.count, r.cycles.no_reply);
                    assert_eq!(counts(&a), counts(&b), "{pattern}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{pattern}"),
                (a, b) => panic!("{pattern}: whole {:?}, windows {:?}", a.err(), b.err()),
            }
        }
    }

    /// Automatic mode in windows judges each window's outliers against the whole trace's
    /// usuals: 600 cycles, the first 350 with the worker held off its CPU for 1.5 ms (its
    /// usual wait, and its work's), and cycle 550 too. Against the usual of its own
    /// window (8 us) that one would be an outlier; against the whole trace's it is not,
    /// in windows as held whole.
    #[test]
    fn automatic_mode_in_windows_judges_against_the_whole_traces_usual() {
        let mut hogged: Vec<usize> = (0..350).collect();
        hogged.push(550);
        let text = three_cpu_chain(600, &hogged, 1_500);
        let mode = Mode::Auto {
            top: 10,
            deadline_ns: None,
        };
        let open = OpenOptions::default();
        let whole = run(opened(&text), &open, &mode).unwrap().report;
        let parts = report(opened(&text), &open, &mode, SMALL).unwrap();
        let said = |n: &String| n.starts_with("explained in ") && n.contains("two passes");
        assert!(parts.notes.iter().any(said), "{:?}", parts.notes);
        assert_eq!(whole.cycles.count, 0);
        assert_eq!(key(&parts), key(&whole));
    }
}
