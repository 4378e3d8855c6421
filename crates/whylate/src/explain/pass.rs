//! A mode's part in the one pass over the inputs ([`Watch`]): what it watches while the
//! events go by (the cycles the cutter cuts, `--expect`'s occurrences, a kernel log's
//! reports; timer, softirq and function modes only need the timeline), then how it
//! explains the timeline built. `run` is one `Watch::new`, the pass, one `Watch::explain`:
//! a new mode is a variant here and its file in `modes/`.

use super::{
    analyze, analyze_expect, analyze_function, analyze_softirq, analyze_timerlat, analyze_timers,
    auto_or_kernel_log, cutter, is_rtla, Cycles, ExpectOptions, Expectations, ExplainReport,
    FunctionOptions, KernelReports, Mode, Options, TimerOptions,
};
use crate::event::{Event, Interner};
use crate::pipeline::Sink;
use crate::read::ReadError;
use crate::timeline::Timeline;

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
    },
    /// Timer, softirq and function modes read the timeline alone.
    Timer(&'m TimerOptions),
    Softirq(&'m str, Option<u64>, usize),
    Function(&'m FunctionOptions),
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
            },
            Mode::Timer(o) => Watch::Timer(o),
            Mode::Softirq {
                vector,
                deadline_ns,
                top,
            } => Watch::Softirq(vector, *deadline_ns, *top),
            Mode::Function(o) => Watch::Function(o),
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
        Ok(match self {
            Watch::Cycles(o, cy) => cycles(o, *cy, tl, s)?,
            Watch::Expect(o, ex) => {
                if let Some(why) = ex.why_nothing(s) {
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
            } => {
                let mut r = auto_or_kernel_log(tl, s, top, &reports);
                if deadline_ns.is_some() {
                    r.notes.push("--deadline without --from/--to sets what is late in a timerlat trace; this one has none, so the automatic thresholds apply".into());
                }
                r
            }
            Watch::Timer(o) => analyze_timers(tl, s, o),
            Watch::Softirq(vector, deadline_ns, top) => {
                analyze_softirq(tl, s, vector, deadline_ns, top)
            }
            Watch::Function(o) => analyze_function(tl, s, o),
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
            Watch::Timer(_) | Watch::Softirq(..) | Watch::Function(_) => {}
        }
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
fn cycles(
    o: &Options,
    mut cy: Cycles,
    tl: &Timeline,
    strings: &Interner,
) -> Result<ExplainReport, ReadError> {
    cy.finish(tl.last_ts);
    if let Some(why) = cy.why_nothing(strings) {
        return Err(ReadError::NoMatch { why });
    }
    let blind = cy.paths_unknown();
    let (pairing, pair_notes) = cy.pairing_stats();
    let unanswered = cy.why_unanswered();
    let undrained = cy.undrained().filter(|_| unanswered.is_none());
    let dropped = cy.dropped;
    let mut r = analyze(tl, strings, o, cy.cycles, &cy.writes);
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
