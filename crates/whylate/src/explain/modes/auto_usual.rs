//! Automatic mode's usual durations: each group's median over the whole trace (a task's
//! waits for a CPU, an irq's handler runs, a work function's waits, the timer periods on
//! time), against which its outliers are judged and from which their excess counts.
//! [`Usuals::of`] takes them from one timeline, exactly; a trace read in windows learns
//! them first, window by window, in sketches ([`UsualSamples`]), and judges its outliers
//! in a second pass.

use super::function::{FunctionOptions, FunctionSamples, FunctionUsual};
use super::softirq::{SoftirqSamples, SoftirqUsual};
use super::timer::{TimerOptions, UsualParts};
use crate::dist::{median, Sketch};
use crate::event::{Interner, Sym};
use crate::explain::engine::Engine;
pub(in crate::explain) use crate::pipeline::Stretch;
use crate::timeline::{span, Cause as RunCause, EdgeKind, Timeline};
use rustc_hash::FxHashMap;

/// Samples a group needs to have a usual: a single sample is not its own baseline.
const LEAST: usize = 3;

/// Each group's usual, for the groups with [`LEAST`] samples or more.
#[derive(Clone, Debug, Default)]
pub(in crate::explain) struct Usuals {
    /// Per task: its waits for a CPU ([`waits`]).
    pub(in crate::explain) waits: FxHashMap<i32, u64>,
    /// Per irq: its handler runs.
    pub(in crate::explain) irqs: FxHashMap<u32, u64>,
    /// Per work function, by name: the waits from queued to started.
    pub(in crate::explain) work: FxHashMap<String, u64>,
    /// The timer periods': interrupt lateness and wait ([`UsualParts`]); None: learnt
    /// from the timeline the timers are explained on.
    pub(in crate::explain) timer: Option<(u64, u64)>,
    /// Timer mode without a deadline given: the one its policy chose over the whole
    /// trace, and why.
    pub(in crate::explain) deadline: Option<(Option<u64>, String)>,
    /// Softirq mode's deadline and usual service.
    pub(in crate::explain) softirq: Option<SoftirqUsual>,
    /// Function mode's deadline, usual sample and notes.
    pub(in crate::explain) function: Option<FunctionUsual>,
}

/// The waits for a CPU automatic mode judges, by span index: the runqueue measure's,
/// less a task's wait after a preemption (not a wakeup's latency), the idle task's, and a
/// wait whose start the trace lacks.
pub(in crate::explain) fn waits(tl: &Timeline) -> Vec<usize> {
    let sp = &tl.spans;
    (0..sp.len())
        .filter(|&i| {
            crate::measure::runqueue::is_wait(tl, i)
                && sp.tid[i] > 0
                && sp.flags[i] & span::START_UNKNOWN == 0
                && RunCause::from_key(sp.key[i]) != RunCause::Preempted
        })
        .collect()
}

/// Each group's samples, by key: (when it began, how long it took).
struct Groups<'s> {
    waits: FxHashMap<i32, Vec<(u64, u64)>>,
    irqs: FxHashMap<u32, Vec<(u64, u64)>>,
    work: FxHashMap<&'s str, Vec<(u64, u64)>>,
}

impl<'s> Groups<'s> {
    fn of(tl: &Timeline, s: &'s Interner) -> Groups<'s> {
        let sp = &tl.spans;
        let mut g = Groups {
            waits: FxHashMap::default(),
            irqs: FxHashMap::default(),
            work: FxHashMap::default(),
        };
        for i in waits(tl) {
            let d = (sp.start[i], sp.end[i] - sp.start[i]);
            g.waits.entry(sp.tid[i]).or_default().push(d);
        }
        // The irq measure's samples: `latency -m irq` and this mode see the same runs.
        for i in crate::measure::irq::handlers(tl).0 {
            let d = (sp.start[i], sp.end[i] - sp.start[i]);
            g.irqs.entry(sp.key[i]).or_default().push(d);
        }
        for e in tl.edges.iter().filter(|e| e.kind == EdgeKind::Work) {
            let d = (e.ts, e.at - e.ts);
            g.work.entry(s.get(Sym(e.key))).or_default().push(d);
        }
        g
    }
}

/// A group's usual from its samples' durations.
fn usual_of(v: &[(u64, u64)]) -> Option<u64> {
    (v.len() >= LEAST).then(|| median(v.iter().map(|x| x.1).collect()))
}

impl Usuals {
    /// The usuals of one timeline, exactly (the timers' are learnt where they are
    /// explained).
    pub(in crate::explain) fn of(tl: &Timeline, s: &Interner) -> Usuals {
        let g = Groups::of(tl, s);
        Usuals {
            waits: (g.waits.iter())
                .filter_map(|(&k, v)| Some((k, usual_of(v)?)))
                .collect(),
            irqs: (g.irqs.iter())
                .filter_map(|(&k, v)| Some((k, usual_of(v)?)))
                .collect(),
            work: (g.work.iter())
                .filter_map(|(&k, v)| Some((k.to_string(), usual_of(v)?)))
                .collect(),
            timer: None,
            deadline: None,
            softirq: None,
            function: None,
        }
    }
}

/// The samples of every window of a long trace, in sketches per group: exact while a
/// group takes at most [`Sketch::EXACT`] distinct values, to 8 significant bits beyond.
pub(in crate::explain) struct UsualSamples {
    waits: FxHashMap<i32, Sketch>,
    irqs: FxHashMap<u32, Sketch>,
    work: FxHashMap<String, Sketch>,
    timer: UsualParts,
    /// The timer periods asked about (None: softirq mode's services alone).
    timers: Option<TimerOptions>,
    /// Whether the groups are learnt too (automatic mode), or the timers alone.
    groups: bool,
    /// Softirq mode's services.
    softirq: Option<SoftirqSamples>,
    /// Function mode's calls or sections.
    function: Option<FunctionSamples>,
}

impl UsualSamples {
    /// Nothing learnt yet: the periods of `timers`, and the groups when `groups`
    /// (automatic mode; timer mode learns its timers alone).
    pub(in crate::explain) fn new(timers: TimerOptions, groups: bool) -> UsualSamples {
        UsualSamples {
            waits: FxHashMap::default(),
            irqs: FxHashMap::default(),
            work: FxHashMap::default(),
            timer: UsualParts::default(),
            timers: Some(timers),
            groups,
            softirq: None,
            function: None,
        }
    }

    /// Nothing learnt yet, for function mode's samples.
    pub(in crate::explain) fn function(o: &FunctionOptions) -> UsualSamples {
        UsualSamples {
            timers: None,
            function: Some(FunctionSamples::new(o)),
            ..UsualSamples::new(TimerOptions::default(), false)
        }
    }

    /// Nothing learnt yet, for softirq mode's services of `vector` (`given`: the
    /// deadline given).
    pub(in crate::explain) fn softirq(vector: &str, given: Option<u64>) -> UsualSamples {
        UsualSamples {
            timers: None,
            softirq: Some(SoftirqSamples::new(vector, given)),
            ..UsualSamples::new(TimerOptions::default(), false)
        }
    }

    /// Timer mode without a deadline given: the deadline its policy chooses over every
    /// period added, and why.
    pub(in crate::explain) fn timer_deadline(&self) -> Option<(Option<u64>, String)> {
        let o = self.timers.as_ref()?;
        (o.deadline_ns.is_none()).then(|| self.timer.deadline(o))
    }

    /// Adds the samples of `tl` that the window settles.
    pub(in crate::explain) fn add(&mut self, tl: &Timeline, s: &Interner, only: Stretch) {
        if let Some(sq) = &mut self.softirq {
            sq.add(tl, &only);
        }
        if let Some(f) = &mut self.function {
            f.add(tl, s, &only);
        }
        if let Some(o) = &self.timers {
            let eng = Engine::new(tl, s);
            let periods = UsualParts::of(&eng, o, |a, b| only.settles(a, b));
            self.timer.merge(&periods);
        }
        if !self.groups {
            return;
        }
        let g = Groups::of(tl, s);
        let each = |v: &[(u64, u64)], into: &mut Sketch| {
            for &(_, d) in v.iter().filter(|x| only.settles(x.0, x.0 + x.1)) {
                into.add(d);
            }
        };
        for (k, v) in &g.waits {
            each(v, self.waits.entry(*k).or_default());
        }
        for (k, v) in &g.irqs {
            each(v, self.irqs.entry(*k).or_default());
        }
        for (k, v) in &g.work {
            match self.work.get_mut(*k) {
                Some(into) => each(v, into),
                None => each(v, self.work.entry(k.to_string()).or_default()),
            }
        }
    }

    /// The usuals of every sample added.
    pub(in crate::explain) fn usuals(&self) -> Usuals {
        fn of<K: Clone + Eq + std::hash::Hash>(m: &FxHashMap<K, Sketch>) -> FxHashMap<K, u64> {
            (m.iter())
                .filter(|(_, s)| s.count() >= LEAST as u64)
                .map(|(k, s)| (k.clone(), s.nth((s.count() - 1) / 2)))
                .collect()
        }
        Usuals {
            waits: of(&self.waits),
            irqs: of(&self.irqs),
            work: of(&self.work),
            timer: self.timers.as_ref().map(|_| self.timer.usual()),
            deadline: None,
            softirq: self.softirq.as_ref().map(SoftirqSamples::usual),
            function: self.function.as_ref().map(FunctionSamples::usual),
        }
    }

    /// Whether every group's usual is exact (no sketch rounded).
    pub(in crate::explain) fn exact(&self) -> bool {
        (self.waits.values())
            .chain(self.irqs.values())
            .chain(self.work.values())
            .all(Sketch::exact)
            && self.timer.exact()
            && self.softirq.as_ref().is_none_or(SoftirqSamples::exact)
            && self.function.as_ref().is_none_or(FunctionSamples::exact)
    }
}

/// The timer periods automatic mode asks about: every task's, late past 500 us.
pub(in crate::explain) fn auto_timers(top: usize) -> TimerOptions {
    TimerOptions {
        task: None,
        deadline_ns: Some(500_000),
        top,
    }
}

#[cfg(test)]
mod tests {
    use super::{auto_timers, waits, Stretch, UsualSamples, Usuals};
    use crate::testkit::{pass, three_cpu_chain};

    /// 40 request cycles, the first 25 with the worker held off its CPU for 1.5 ms: the
    /// worker's usual wait is the median of all 40 (1.5 ms, not the 8 us of the last
    /// 15), and its work's usual wait likewise (1.504 ms). Learnt window by window (two
    /// stretches of the one timeline) it is the same.
    #[test]
    fn the_usuals_learnt_in_stretches_are_the_whole_traces() {
        let hogged: Vec<usize> = (0..25).collect();
        let p = pass(&three_cpu_chain(40, &hogged, 1_500));
        let (tl, s) = (&p.tl, &p.strings);
        let whole = Usuals::of(tl, s);
        assert_eq!(whole.waits.get(&40), Some(&1_500_000));
        assert_eq!(whole.work.get("reply_work"), Some(&1_504_000));
        assert_eq!(whole.timer, None);
        let mut starts: Vec<u64> = waits(tl).iter().map(|&i| tl.spans.start[i]).collect();
        starts.sort_unstable();
        assert_eq!(starts.len(), 40);
        let cut = starts[20];
        let mut parts = UsualSamples::new(auto_timers(0), true);
        let max = u64::MAX;
        for (lo, cut, before) in [(0, cut, 0), (cut, max, max)] {
            let close = max;
            parts.add(
                tl,
                s,
                Stretch {
                    lo,
                    cut,
                    before,
                    close,
                },
            );
        }
        let u = parts.usuals();
        assert!(parts.exact());
        assert_eq!((u.waits, u.work), (whole.waits, whole.work));
        assert_eq!(u.timer, Some((0, 0)));
    }

    /// Each sample is settled once: by the window it began in when that window saw its
    /// end, else by the window it ends in.
    #[test]
    fn a_sample_is_settled_by_one_window() {
        let w1 = Stretch {
            lo: 0,
            cut: 100,
            before: 0,
            close: 150,
        };
        let w2 = Stretch {
            lo: 100,
            cut: 200,
            before: 150,
            close: 260,
        };
        let w3 = Stretch {
            lo: 200,
            cut: u64::MAX,
            before: 260,
            close: u64::MAX,
        };
        for (start, end, by) in [
            (10, 140, 1),
            (10, 155, 2),
            (90, 300, 3),
            (120, 250, 2),
            (150, 270, 3),
        ] {
            let who: Vec<usize> = [w1, w2, w3]
                .iter()
                .enumerate()
                .filter(|(_, w)| w.settles(start, end))
                .map(|(k, _)| k + 1)
                .collect();
            assert_eq!(who, vec![by], "{start}..{end}");
        }
    }
}
