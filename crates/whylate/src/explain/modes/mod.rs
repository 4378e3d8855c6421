//! The analyses `explain` runs, one file per mode: what each takes as late (a cycle
//! past its deadline, a late timer period, a slow softirq or call, an outlier across the
//! measures, a kernel report) and how it hands its misses to the shared machinery
//! ([`super::chain`], [`super::blame`], [`super::advice`]). What the command line asks for
//! is a [`Mode`]; its part in the one pass over the inputs is a [`Watch`]: what it watches
//! while the events go by, then how it explains the timeline built. `explain::run` is one
//! `Watch::new`, the pass, one `Watch::explain`: a new mode is a variant of both and its
//! file here.

pub(crate) mod auto;
pub(crate) mod auto_inversion;
pub(crate) mod auto_usual;
pub(crate) mod cycle_miss;
pub(crate) mod cycles;
pub(crate) mod expect;
pub(crate) mod function;
pub(crate) mod kernlog;
pub(crate) mod softirq;
pub(crate) mod timer;
pub(crate) mod timerlat;
pub(crate) mod timerlat_join;

use self::auto::analyze_auto;
use self::cycles::analyze;
use self::expect::{analyze_expect, ExpectOptions, Expectations};
use self::function::{analyze_function, FunctionOptions};
use self::kernlog::{analyze_kernel_log, kernel_verdict, KernelReports};
use self::softirq::analyze_softirq;
use self::timer::{analyze_timers, TimerOptions};
use self::timerlat::{analyze_timerlat, is_rtla};
use crate::event::{Event, Interner};
use crate::explain::chain::cutter::{self, Cycles, Options};
use crate::explain::report::ExplainReport;
use crate::pipeline::Sink;
use crate::read::ReadError;
use crate::timeline::Timeline;

/// A window of a long trace read in two passes: the usuals the first learnt, and the
/// samples the window settles (set before it is explained).
pub(super) struct Part(
    std::sync::Arc<auto_usual::Usuals>,
    Option<crate::pipeline::Stretch>,
);

/// What a mode watches during the pass, and the mode it explains for.
pub(super) enum Watch<'m> {
    /// Request/response cycles, cut while the events go by.
    Cycles(&'m Options, Box<Cycles>),
    /// `--expect A -> B within T`: each A and whether its B followed.
    Expect(&'m ExpectOptions, Box<Expectations>),
    /// Automatic mode: a kernel log's reports are read as they come (also across a
    /// reboot, where its times start again).
    Auto {
        top: usize,
        deadline_ns: Option<u64>,
        reports: Box<KernelReports>,
        /// A long trace's usuals, learnt over all of it before its windows are
        /// explained ([`auto_usual::UsualSamples`]).
        usuals: Option<std::sync::Arc<auto_usual::Usuals>>,
        /// The samples its window settles (set before it is explained).
        stretch: Option<crate::pipeline::Stretch>,
    },
    /// Timer mode; it, softirq and function modes read the timeline alone.
    Timer(&'m TimerOptions, Option<Part>),
    /// Softirq mode: the vector, its deadline, the misses shown in full; in windows of a
    /// long trace, what the first pass learnt.
    Softirq(&'m str, Option<u64>, usize, Option<Part>),
    /// Function mode; in windows of a long trace, what the first pass learnt.
    Function(&'m FunctionOptions, Option<Part>),
}

impl<'m> Watch<'m> {
    /// What `mode` watches.
    pub(super) fn new(mode: &'m Mode) -> Watch<'m> {
        match mode {
            Mode::Cycles(o) => Watch::Cycles(o, Box::new(Cycles::new(o))),
            Mode::Expect(o) => Watch::Expect(o, Box::new(Expectations::new(o))),
            Mode::Auto { top, deadline_ns } => Watch::Auto {
                top: *top,
                deadline_ns: *deadline_ns,
                reports: Box::default(),
                usuals: None,
                stretch: None,
            },
            Mode::Timer(o) => Watch::Timer(o, None),
            Mode::Softirq {
                vector,
                deadline_ns,
                top,
            } => Watch::Softirq(vector, *deadline_ns, *top, None),
            Mode::Function(o) => Watch::Function(o, None),
        }
    }

    /// The cutter, in cycle mode (tests look at what it cut).
    #[cfg(test)]
    pub(super) fn into_cycles(self) -> Option<Cycles> {
        match self {
            Watch::Cycles(_, cy) => Some(*cy),
            _ => None,
        }
    }

    /// The mode's report on the timeline the pass built; a selector that matched
    /// nothing is the caller's error.
    pub(super) fn explain(self, tl: &Timeline, s: &Interner) -> Result<ExplainReport, ReadError> {
        self.explain_only(tl, s, None)
    }

    /// The same watch, judging automatic mode's outliers against `u` (a long trace's).
    pub(super) fn with_usuals(mut self, u: &std::sync::Arc<auto_usual::Usuals>) -> Self {
        match &mut self {
            Watch::Auto { usuals, .. } => *usuals = Some(u.clone()),
            Watch::Timer(_, part) | Watch::Softirq(.., part) | Watch::Function(_, part) => {
                *part = Some(Part(u.clone(), None))
            }
            _ => {}
        }
        self
    }

    /// Which samples its window settles, for a mode that decides it itself (true: the
    /// modes read in passes, given the usuals, which hand back only what `st` settles);
    /// the others settle the samples that begin in the window's stretch.
    pub(super) fn settle(&mut self, st: crate::pipeline::Stretch) -> bool {
        match self {
            Watch::Auto { stretch, .. } => {
                *stretch = Some(st);
                true
            }
            Watch::Timer(_, Some(part))
            | Watch::Softirq(.., Some(part))
            | Watch::Function(_, Some(part)) => {
                part.1 = Some(st);
                true
            }
            _ => false,
        }
    }

    /// `--expect` in a window: whether it saw an A, and why its selectors can match
    /// nothing there (no A, or no A answered), if the window shows why; None in the
    /// other modes.
    pub(super) fn expect_why(&self, s: &Interner) -> Option<(bool, Option<String>)> {
        match self {
            Watch::Expect(_, ex) => Some((!ex.occurrences.is_empty(), ex.why_nothing(s))),
            _ => None,
        }
    }

    /// Whether automatic mode gives the kernel log of `tl`'s pass an analysis of its
    /// own: it is mostly a log (as [`auto_or_kernel_log`] decides), or it holds a
    /// report (a lockup, a stall: said beside the outliers).
    pub(super) fn kernel_log_matters(&self, tl: &Timeline) -> bool {
        match self {
            Watch::Auto { reports, .. } => !reports.reports.is_empty() || mostly_log(tl, reports),
            _ => false,
        }
    }

    /// [`Self::explain`] of the samples its window settles alone (a window of a long
    /// trace, `only` its stretch: the others are another window's).
    pub(super) fn explain_only(
        self,
        tl: &Timeline,
        s: &Interner,
        only: Option<(u64, u64)>,
    ) -> Result<ExplainReport, ReadError> {
        Ok(match self {
            Watch::Cycles(o, cy) => cycle_report(o, *cy, tl, s, only)?,
            Watch::Expect(o, mut ex) => {
                if let Some(range) = only {
                    // Only the whole trace can say A or B never matches (the windows'
                    // [`Self::expect_why`], weighed when they are merged): a window
                    // without an A, or whose As all wait, still reports them.
                    ex.keep_starting_in(range);
                } else if let Some(why) = ex.why_nothing(s) {
                    return Err(ReadError::NoMatch { why });
                }
                analyze_expect(tl, s, o, &ex.occurrences)
            }
            Watch::Auto {
                top, deadline_ns, ..
            } if is_rtla(tl) => analyze_timerlat(tl, s, deadline_ns, top),
            Watch::Auto {
                top,
                deadline_ns,
                reports,
                usuals,
                stretch,
            } => {
                let mut r = match (only.and(stretch), usuals.as_deref()) {
                    (Some(only), Some(usuals)) => {
                        let part = auto::Part { usuals, only };
                        auto::analyze_auto_in(tl, s, top, Some(part))
                    }
                    _ => auto_or_kernel_log(tl, s, top, &reports),
                };
                if deadline_ns.is_some() {
                    r.notes.push("--deadline without --from/--to sets what is late in a timerlat trace; this one has none, so the automatic thresholds apply".into());
                }
                r
            }
            Watch::Timer(o, Some(Part(u, Some(st)))) if only.is_some() => {
                let usual = u.timer.unwrap_or_default();
                let part = timer::TimerPart {
                    usual,
                    deadline: u.deadline.clone(),
                    only: Some(&st),
                };
                timer::analyze_timers_in(tl, s, o, part)
            }
            Watch::Timer(o, _) => analyze_timers(tl, s, o),
            Watch::Softirq(vector, deadline_ns, top, Some(Part(u, Some(st)))) if only.is_some() => {
                let part =
                    (u.softirq.as_ref()).map(|usual| softirq::SoftirqPart { usual, only: &st });
                softirq::analyze_softirq_in(tl, s, vector, deadline_ns, top, part)
            }
            Watch::Softirq(vector, deadline_ns, top, _) => {
                analyze_softirq(tl, s, vector, deadline_ns, top)
            }
            Watch::Function(o, Some(Part(u, Some(st)))) if only.is_some() => {
                let part =
                    (u.function.as_ref()).map(|usual| function::FunctionPart { usual, only: &st });
                function::analyze_function_in(tl, s, o, part)
            }
            Watch::Function(o, _) => analyze_function(tl, s, o),
        })
    }
}

impl Sink for Watch<'_> {
    fn snapshot(&mut self, snap: &crate::snapshot::Snapshot) {
        if let Watch::Cycles(_, c) = self {
            c.add_snapshot(snap);
        }
    }
    fn arch(&mut self, a: crate::syscalls::Arch) {
        match self {
            Watch::Cycles(_, c) => c.set_arch(a),
            Watch::Expect(_, x) => x.set_arch(a),
            _ => {}
        }
    }
    fn event(&mut self, e: &Event, s: &Interner) {
        match self {
            Watch::Cycles(_, c) => c.push(e, s),
            Watch::Expect(_, x) => x.push(e, s),
            Watch::Auto { reports, .. } => reports.push(e, s),
            Watch::Timer(..) | Watch::Softirq(..) | Watch::Function(..) => {}
        }
    }
    fn oldest_open(&self) -> Option<u64> {
        match self {
            Watch::Cycles(_, c) => c.oldest_open(),
            Watch::Expect(_, x) => x.oldest_open(),
            _ => None,
        }
    }
    fn settles_timeline_samples(&self) -> bool {
        matches!(
            self,
            Watch::Auto { .. } | Watch::Timer(..) | Watch::Softirq(..) | Watch::Function(..)
        )
    }
    fn late(&mut self, e: &Event, s: &Interner) {
        // A console log's times start again at a reboot: its messages are read as they
        // come.
        if let Watch::Auto { reports, .. } = self {
            reports.push(e, s);
        }
    }
}

/// Cycle mode's report: the cycles cut, their misses explained, and what the pairing
/// could not decide said.
fn cycle_report(
    o: &Options,
    mut cy: Cycles,
    tl: &Timeline,
    strings: &Interner,
    only: Option<(u64, u64)>,
) -> Result<ExplainReport, ReadError> {
    cy.finish(tl.last_ts);
    if let Some(range) = only {
        cy.cycles = std::mem::take(&mut cy.cycles).starting_in(range);
    }
    if let Some(why) = cy.why_nothing(strings) {
        // A window of a long trace whose cycles all wait for replies still counts them:
        // only the whole trace can say the selectors never match.
        if only.is_none() || cy.cycles.is_empty() {
            return Err(ReadError::NoMatch { why });
        }
    }
    let blind = cy.paths_unknown();
    let (pairing, pair_notes) = cy.pairing_stats();
    let unanswered = cy.why_unanswered();
    let undrained = cy.undrained().filter(|_| unanswered.is_none());
    let dropped = cy.dropped;
    let mut r = analyze(tl, strings, o, cy.cycles, &cy.writes, only.is_some());
    r.cycles.pairing = Some(pairing);
    r.notes.extend(pair_notes);
    r.blind.extend(unanswered);
    if dropped > 0 {
        r.notes.push(format!(
            "{dropped} requests were dropped unanswered when {} later ones were open under the same key: they count as no reply (or cut off, before their deadline); selectors that pair this badly rarely mean what was intended",
            cutter::OPEN_CAP
        ));
    }
    if let Some((from, n)) = undrained {
        r.blind.push(format!(
            "pairing from {} on: the {n} requests since then never all got their reply before the trace ended; a lost reply (a dropped packet) there gives every later reply to an earlier request, so those cycles look longer than they were (pair by a field both events carry with --key FIELD)",
            crate::units::secs(from)
        ));
    }
    if blind {
        r.notes.push(
            "a selector filters on `path`, but no input names its descriptors (a `whylate record` trace.dat does): that condition matched nothing".into(),
        );
    }
    Ok(r)
}

/// What `explain` is asked to explain: the modes of the command line.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Request/response cycles between two selectors.
    Cycles(Options),
    /// Late timer periods.
    Timer(TimerOptions),
    /// Slow services of one softirq vector.
    Softirq {
        /// Vector name or number.
        vector: String,
        /// Services slower than this are misses.
        deadline_ns: Option<u64>,
        /// Misses shown in full.
        top: usize,
    },
    /// Every A needs a B within T.
    Expect(ExpectOptions),
    /// Slow calls of a kernel function (function_graph), or its irqs-off sections.
    Function(FunctionOptions),
    /// The worst outliers across all measures; a timerlat trace's late activations.
    Auto {
        /// Outliers shown in full.
        top: usize,
        /// A timerlat trace's deadline (a default when None; other traces have none).
        deadline_ns: Option<u64>,
    },
}

impl Mode {
    /// Every mode's name, as [`Mode::name`] gives them (findings and fleet filter by it).
    pub const NAMES: [&'static str; 6] =
        ["cycles", "timer", "softirq", "expect", "function", "auto"];

    /// The mode's name: one of [`Mode::NAMES`].
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Cycles(_) => Self::NAMES[0],
            Mode::Timer(_) => Self::NAMES[1],
            Mode::Softirq { .. } => Self::NAMES[2],
            Mode::Expect(_) => Self::NAMES[3],
            Mode::Function(_) => Self::NAMES[4],
            Mode::Auto { .. } => Self::NAMES[5],
        }
    }

    /// The deadline given, if the mode has one.
    pub fn deadline_ns(&self) -> Option<u64> {
        match self {
            Mode::Cycles(o) => o.deadline_ns,
            Mode::Timer(o) => o.deadline_ns,
            Mode::Softirq { deadline_ns, .. } => *deadline_ns,
            Mode::Function(o) => o.deadline_ns,
            Mode::Expect(o) => Some(o.within_ns),
            Mode::Auto { deadline_ns, .. } => *deadline_ns,
        }
    }
    /// The same mode with this deadline (the automatic mode's is for timerlat traces).
    pub fn with_deadline(&self, d: Option<u64>) -> Mode {
        let mut m = self.clone();
        match &mut m {
            Mode::Cycles(o) => o.deadline_ns = d,
            Mode::Timer(o) => o.deadline_ns = d,
            Mode::Softirq { deadline_ns, .. } => *deadline_ns = d,
            Mode::Function(o) => o.deadline_ns = d,
            Mode::Expect(o) => o.within_ns = d.unwrap_or(o.within_ns),
            Mode::Auto { deadline_ns, .. } => *deadline_ns = d,
        }
        m
    }
}

/// Whether the pass of `tl` is a kernel log, or a trace that is mostly its messages
/// (printk:console alone).
fn mostly_log(tl: &Timeline, k: &KernelReports) -> bool {
    use crate::timeline::KindClass;
    let events: u64 = tl.seen.iter().sum();
    tl.saw(KindClass::SchedSwitch) == 0 && k.messages > 0 && k.messages * 2 >= events
}

/// The automatic mode: a kernel log alone gets its reports explained (or is said to have
/// none); a trace with scheduling events gets its outliers, and a log's reports beside it
/// are named in a note.
fn auto_or_kernel_log(tl: &Timeline, s: &Interner, top: usize, k: &KernelReports) -> ExplainReport {
    // A log, or a trace that is mostly its messages (printk:console alone).
    if mostly_log(tl, k) {
        return analyze_kernel_log(tl, s, k, top);
    }
    if k.reports.is_empty() {
        return analyze_auto(tl, s, top);
    }
    let mut r = analyze_auto(tl, s, top);
    let kl = analyze_kernel_log(tl, s, k, top);
    if let Some(sum) = &kl.kernel {
        r.notes.insert(
            0,
            format!("the kernel log beside the trace: {}", kernel_verdict(sum)),
        );
    }
    r
}
