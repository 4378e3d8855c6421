//! One report from many windows. `watch` explains a live stream window by window; each
//! window's *settled* samples and misses (those it saw whole, taken once) join a
//! [`RunSummary`], whose report is what `explain` says of the whole run: statistics over
//! every sample, causes ranked over every miss, the worst misses in full. Memory stays
//! flat: durations go into a [`Sketch`](crate::dist::Sketch), causes into a tally, and only the worst misses
//! are kept.

use super::driver::{rank, Tally};
use super::report::{
    Advice, CauseKey, CauseRow, CpuContext, CycleStats, ExplainReport, Miss, ReadTimes, Settled,
    Window, Windows,
};
use rustc_hash::FxHashMap;

/// What a run explained window by window has shown so far.
pub struct RunSummary {
    /// What the settled samples add up to.
    settled: Settled,
    /// Of `settled.no_reply`, the cycles the trace could not judge
    /// ([`CycleStats::cut_off`], [`CycleStats::end_lost`]), where the parts said so.
    cut_off: u64,
    end_lost: u64,
    tally: Tally,
    /// Every miss's links per cause, to count overlapping misses' time once over all
    /// windows (see `once`): those of the last stretch kept, the older swept.
    once: super::once::Once,
    /// See [`ONCE_REACH_NS`].
    once_reach: u64,
    worst: Vec<Miss>,
    keep: usize,
    /// Keep the first misses in time rather than the worst (`--expect` lists a
    /// pattern in the order it happened).
    earliest: bool,
    notes: Lines,
    /// Advice (in a window's order) per first cause of a window: that of the window
    /// where the cause lost the most, and that time.
    advice: Vec<(Option<CauseKey>, u64, Vec<Advice>)>,
    /// The CPU context of the window that lost the most time, and that time.
    context: (Vec<CpuContext>, u64),
    /// The first window's report with samples: the framing (selectors, deadline, noun).
    base: Option<ExplainReport>,
    /// The recorder's threads any window named, sorted: their rows rank last.
    recorder: Vec<i32>,
}

/// Notes kept: the distinct ones, up to this many.
const NOTES: usize = 16;

/// Lines of several windows, one per shape (the line with its numbers left out): a
/// window's lines carry its own numbers. Where each window spoke of its own samples only
/// (`sum`), the counts that lead two lines of a shape add up; otherwise the first line of
/// the shape is kept.
#[derive(Clone, Debug)]
pub(crate) struct Lines {
    /// The lines, in the order their shapes first came.
    pub(crate) lines: Vec<String>,
    shapes: Vec<String>,
    cap: usize,
    sum: bool,
}

impl Lines {
    /// At most `cap` shapes; `sum`: leading counts add up.
    pub(crate) fn new(cap: usize, sum: bool) -> Lines {
        Lines {
            lines: Vec::new(),
            shapes: Vec::new(),
            cap,
            sum,
        }
    }

    /// Adds one window's line.
    pub(crate) fn add(&mut self, line: &str) {
        let shape = shape(line);
        match self.shapes.iter().position(|s| *s == shape) {
            Some(i) if self.sum => {
                if let (Some(a), Some(b)) = (leading(&self.lines[i]), leading(line)) {
                    let rest = &line[line.len() - b.1.len()..];
                    self.lines[i] = format!("{}{rest}", a.0 + b.0);
                }
            }
            Some(_) => {}
            None if self.shapes.len() < self.cap => {
                self.shapes.push(shape);
                self.lines.push(line.to_string());
            }
            None => {}
        }
    }
}

/// A line with each run of digits (and the `.` or `,` inside one) as `#`.
fn shape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_number = false;
    for c in line.chars() {
        let digit = c.is_ascii_digit() || (in_number && (c == '.' || c == ','));
        if !digit {
            out.push(c);
        } else if !in_number {
            out.push('#');
        }
        in_number = digit;
    }
    out
}

/// The whole number a line starts with, and the rest of the line.
fn leading(line: &str) -> Option<(u64, &str)> {
    let end = line
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(line.len());
    let n = line[..end].parse().ok()?;
    // "1.5 ms ..." starts with a time, not a count.
    (!line[end..].starts_with(['.', ','])).then_some((n, &line[end..]))
}

/// How far before the first miss of a part the misses of later parts can begin, for
/// counting overlaps once: `explain`'s windows settle in time order but for a sample
/// that outlasted a forced window (settled where it ends: its overlap with misses over
/// 1 s before is then counted twice); `watch` settles a sample up to ten windows back,
/// so it keeps ten minutes.
const ONCE_REACH_NS: (u64, u64) = (1_000_000_000, 600_000_000_000);

impl RunSummary {
    /// An empty summary that keeps the `keep` worst misses in full.
    pub fn new(keep: usize) -> RunSummary {
        RunSummary {
            settled: Settled::default(),
            cut_off: 0,
            end_lost: 0,
            tally: Tally::default(),
            once: Default::default(),
            once_reach: ONCE_REACH_NS.1,
            worst: Vec::new(),
            keep: keep.max(1),
            earliest: false,
            notes: Lines::new(NOTES, false),
            advice: Vec::new(),
            context: (Vec::new(), 0),
            base: None,
            recorder: Vec::new(),
        }
    }

    /// Adds a window's report: `settled` are the samples this window decides (each given
    /// once over all windows), `misses` their explained misses.
    pub fn add(&mut self, r: &ExplainReport, settled: &[Window], misses: &[&Miss]) {
        for w in settled {
            self.settled.add(w, r.deadline_ns);
        }
        self.add_rest(r, !settled.is_empty(), misses);
    }

    /// Adds a window's report whose settled samples were summed where they were made
    /// (`part`; a window's cycles, [`CycleStats::settled`]).
    pub fn add_summed(&mut self, r: &ExplainReport, part: &Settled, misses: &[&Miss]) {
        self.settled.merge(part);
        self.add_rest(r, part.count > 0, misses);
    }

    /// All but the settled samples' counts; `any` when the part settled one.
    fn add_rest(&mut self, r: &ExplainReport, any: bool, misses: &[&Miss]) {
        if self.base.is_none() && any {
            let mut b = r.clone();
            (b.misses, b.windows, b.causes) = (Vec::new(), Windows::new(), Vec::new());
            self.base = Some(b);
        }
        for &t in &r.recorder {
            if let Err(i) = self.recorder.binary_search(&t) {
                self.recorder.insert(i, t);
            }
        }
        // A part's notes count whether or not it settled a miss.
        for n in &r.notes {
            self.notes.add(n);
        }
        if misses.is_empty() {
            return;
        }
        // The misses of later parts begin later than `once_reach` before these (a link
        // begins no earlier than its miss): what ends before can no longer overlap.
        let first = misses.iter().map(|m| m.start_ns).min().unwrap_or(0);
        self.once
            .retire_before(first.saturating_sub(self.once_reach));
        let mut lost = 0;
        for m in misses {
            self.once.add(m);
            if m.blame.is_empty() {
                self.tally.add_chain(m);
            } else {
                for h in m.chain.iter().flat_map(|l| &l.held_by) {
                    self.tally.nest(h);
                }
            }
            for &(cpu, ns) in &m.cpus {
                self.tally.blame_cpu(cpu, ns);
            }
            for (k, ns) in &m.blame {
                let e = self.tally.causes.entry(k.clone()).or_default();
                e.0 += 1;
                e.1 += ns;
            }
            lost += m.blamed_ns;
        }
        self.worst.extend(misses.iter().map(|&m| m.clone()));
        match self.earliest {
            true => self.worst.sort_by_key(|m| m.start_ns),
            false => self.worst.sort_by(|a, b| {
                (b.duration_ns.is_none().cmp(&a.duration_ns.is_none()))
                    .then(b.late_ns.cmp(&a.late_ns))
            }),
        }
        self.worst.truncate(self.keep);
        if !r.advice.is_empty() {
            let first = r.causes.first();
            let key = first.map(|c| (c.category, c.culprit.clone()));
            let lost = first.map_or(0, |c| c.total_excess_ns);
            // One set per first cause, that of the window where it lost the most: a run
            // of days keeps as many sets as it has distinct first causes.
            match self.advice.iter_mut().find(|(k, _, _)| *k == key) {
                Some(set) if set.1 >= lost => {}
                Some(set) => *set = (key, lost, r.advice.clone()),
                None => self.advice.push((key, lost, r.advice.clone())),
            }
        }
        if lost > self.context.1 {
            self.context = (r.context.clone(), lost);
        }
    }

    /// Adds what a part said of its settled cycles without a reply that the trace could
    /// not judge: cut off before their deadline, or their end lost.
    pub(super) fn add_unjudged(&mut self, c: &CycleStats) {
        self.cut_off += c.cut_off;
        self.end_lost += c.end_lost;
    }

    /// The worst misses kept in full, the worst first.
    pub(super) fn worst(&self) -> &[Miss] {
        &self.worst
    }

    /// Whether the quantiles are exact (the durations took few distinct values,
    /// [`Sketch::EXACT`](crate::dist::Sketch::EXACT)).
    pub fn exact(&self) -> bool {
        self.settled.durations.exact() && self.settled.reads.exact()
    }

    /// Windows that each explain only the samples they settle: the counts that lead
    /// their notes add up (`watch`'s windows explain every sample they hold, so a note
    /// keeps the first window's numbers).
    pub fn of_parts(keep: usize) -> RunSummary {
        RunSummary {
            notes: Lines::new(NOTES, true),
            once_reach: ONCE_REACH_NS.0,
            ..RunSummary::new(keep)
        }
    }

    /// The same summary, keeping the first misses in time (in time order) rather than
    /// the worst.
    pub(super) fn earliest(self) -> RunSummary {
        RunSummary {
            earliest: true,
            ..self
        }
    }

    /// Statistics over every settled sample.
    pub fn stats(&self) -> CycleStats {
        let (s, d) = (&self.settled, self.settled.durations.dist());
        CycleStats {
            count: s.count,
            replied: d.count,
            no_reply: (s.no_reply).saturating_sub(self.cut_off + self.end_lost),
            cut_off: self.cut_off,
            end_lost: self.end_lost,
            misses: s.misses,
            not_reading: s.not_reading,
            min_ns: d.min,
            p50_ns: d.p50,
            p90_ns: d.p90,
            p99_ns: d.p99,
            max_ns: d.max,
            histogram: s.durations.histogram(1000),
            pairing: None,
            read: self.read_times(),
            settled: None,
        }
    }

    /// Quantiles until read, as `explain` gives them: only when some reply was read
    /// later than it was ready.
    fn read_times(&self) -> Option<ReadTimes> {
        let d = self.settled.reads.dist();
        (self.settled.later > 0).then_some(ReadTimes {
            later: self.settled.later,
            p50_ns: d.p50,
            p90_ns: d.p90,
            p99_ns: d.p99,
            max_ns: d.max,
        })
    }

    /// Causes over every miss so far, largest first, the recorder's own rows last (as
    /// `explain` ranks them).
    pub fn causes(&self) -> Vec<CauseRow> {
        let rows = rank(
            self.tally.causes.clone(),
            &self.tally.nested,
            &self.once.repeated(),
        );
        super::machine::recorder_last(rows, &self.recorder)
    }

    /// Excess lost on each CPU over every miss with its blame.
    pub(super) fn blamed_cpus(&self) -> &FxHashMap<u32, u64> {
        self.tally.cpus()
    }

    /// The windows' advice once (by its command), that of the window where the run's
    /// first cause lost the most first: its advice starts with that cause's. The others
    /// follow in the order their first causes came.
    fn advice(&self, causes: &[CauseRow]) -> Vec<Advice> {
        let first = causes.first().map(|c| (c.category, c.culprit.clone()));
        let lead = (self.advice.iter()).position(|(k, _, _)| k.is_some() && *k == first);
        let order = lead
            .into_iter()
            .chain((0..self.advice.len()).filter(|&i| Some(i) != lead));
        let mut out: Vec<Advice> = Vec::new();
        for a in order.flat_map(|i| &self.advice[i].2) {
            if !out.iter().any(|b| b.command == a.command) {
                out.push(a.clone());
            }
        }
        out
    }

    /// The report of the whole run (`None` before any sample settled).
    pub fn report(&self) -> Option<ExplainReport> {
        let mut r = self.base.clone()?;
        r.cycles = self.stats();
        r.causes = self.causes();
        r.misses = self.worst.clone();
        r.advice = self.advice(&r.causes);
        r.context = self.context.0.clone();
        r.notes = self.notes.lines.clone();
        if let Some(x) = &mut r.expect {
            let s = &self.settled;
            x.never = s.no_reply;
            x.late = s.misses - s.no_reply.min(s.misses);
            let secs = (s.span.1.saturating_sub(s.span.0)) as f64 / 1e9;
            x.misses_per_s = if secs > 0.0 {
                s.misses as f64 / secs
            } else {
                0.0
            };
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::RunSummary;
    use crate::explain::{explain, Options};
    use crate::read::OpenOptions;
    use crate::testkit;

    /// One report merged whole gives back its own statistics and causes: the merge adds
    /// nothing and loses nothing of what one window decides.
    #[test]
    fn a_report_merged_whole_gives_back_its_statistics_and_causes() {
        let o: Options = testkit::chain_options(Some(1_000_000));
        let r = explain(
            crate::testkit::opened(&testkit::three_cpu_chain(40, &[5, 15, 20, 33], 3_000)),
            &OpenOptions::default(),
            &o,
        )
        .unwrap();
        let mut s = RunSummary::new(10);
        let misses: Vec<_> = r.misses.iter().collect();
        s.add(&r, &r.windows.iter().collect::<Vec<_>>(), &misses);
        let m = s.report().unwrap();
        let (a, b) = (&m.cycles, &r.cycles);
        assert_eq!(
            (a.count, a.replied, a.no_reply, a.misses, a.min_ns, a.max_ns),
            (b.count, b.replied, b.no_reply, b.misses, b.min_ns, b.max_ns)
        );
        assert_eq!((a.count, a.misses), (40, 4));
        // Quantiles to within the sketch's rounding (8 significant bits).
        assert!(a.p50_ns <= b.p50_ns && b.p50_ns - a.p50_ns <= b.p50_ns / 128);
        let key = |c: &crate::explain::CauseRow| {
            (c.category, c.culprit.label(), c.count, c.total_excess_ns)
        };
        let ours: Vec<_> = m.causes.iter().map(key).collect();
        let theirs: Vec<_> = r.causes.iter().map(key).collect();
        assert_eq!(ours, theirs);
        assert_eq!(m.misses.len(), 4);
        assert_eq!(a.read, None);
        // A second window settling nothing new changes nothing.
        s.add(&r, &[], &[]);
        assert_eq!(s.report().unwrap().cycles.count, 40);
    }

    /// Replies read later than they were ready: the merged summary has the same read
    /// quantiles and not-reading count as `explain` over the whole trace.
    #[test]
    fn read_times_survive_the_merge() {
        let o: Options = testkit::chain_options(Some(9_000_000));
        let r = explain(
            crate::testkit::opened(&testkit::giving_up_client(8, &[2, 5])),
            &OpenOptions::default(),
            &o,
        )
        .unwrap();
        let mut s = RunSummary::new(10);
        let misses: Vec<_> = r.misses.iter().collect();
        // In two windows, as `watch` settles them.
        let w: Vec<_> = r.windows.iter().collect();
        s.add(&r, &w[..4], &misses[..1]);
        s.add(&r, &w[4..], &misses[1..]);
        let m = s.report().unwrap().cycles;
        let want = r.cycles.read.clone().unwrap();
        assert_eq!((want.later, want.max_ns), (2, 23_538_000));
        let got = m.read.unwrap();
        assert_eq!((got.later, got.max_ns), (2, 23_538_000));
        // Quantiles to within the sketch's rounding (8 significant bits).
        for (a, b) in [(got.p50_ns, want.p50_ns), (got.p90_ns, want.p90_ns)] {
            assert!(a.abs_diff(b) <= b / 128, "{a} vs {b}");
        }
        assert_eq!((m.misses, m.not_reading), (2, 2));
        assert_eq!((m.max_ns, r.cycles.max_ns), (8_030_000, 8_030_000));
    }
}
