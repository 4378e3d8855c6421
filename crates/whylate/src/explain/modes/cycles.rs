//! Request/response cycles: the deadline policy (given, inferred from timeout complaints
//! or a pile-up, else the slowest 1%), the usual chain learnt from good cycles, and the
//! analysis of every missed one (`cycle_miss`).

use crate::dist::{quantile, Sketch};
use crate::event::Interner;
use crate::explain::cutter::Options;
use crate::explain::cycle::{Cycle, CycleStore};
use crate::explain::cycle_miss::MissCx;
use crate::explain::driver::{assemble, Findings, Framing, MissKeeper, Tally};
use crate::explain::engine::Engine;
use crate::explain::ready::{Ready, Replies};
use crate::explain::report::Settled;
use crate::explain::report::{CycleStats, ExplainReport, ReadTimes, Window, Windows};
use crate::explain::template::Template;
use crate::timeline::Timeline;
use crate::units::dur;
use rustc_hash::FxHashMap;

/// The deadline for cycles: the one given; else one the data shows (`infer_deadline`);
/// else none, and the slowest 1% (above p99) are explained as outliers.
/// `writes` are the offsets of the threads' writes into their cycles, `sorted` the replied
/// cycles' durations.
pub(in crate::explain) fn deadline_policy(
    o: &Options,
    writes: &[u64],
    sorted: &[u64],
) -> (Option<u64>, String) {
    if let Some(d) = o.deadline_ns {
        return (Some(d), "given".to_string());
    }
    match infer_deadline(writes, sorted) {
        (Some(d), why) => (Some(d), why),
        _ => (
            (!sorted.is_empty()).then(|| quantile(sorted, 0.99)),
            "none given or inferred: the cycles above p99 are explained as outliers".to_string(),
        ),
    }
}

/// Where a thread's timeout complaints put the deadline, from their offsets into their
/// cycles (sorted): at the earliest, when at least one other (and a tenth of them) lies
/// within 2% (or 20 us) above it. A complaint is written after the deadline passed, and on
/// a busy CPU the writer is often preempted first, so late ones spread upwards (and can
/// bunch at scheduler-tick phases) while the deadline stays at the bottom, where the
/// complaints of a writer that was running at the deadline sit within microseconds of
/// each other. When the earliest write has no such partner the data cannot tell a stray
/// write from the deadline: nothing is inferred rather than a guess. Returns (the
/// cluster's median, its size).
pub(in crate::explain) fn complaint_offset(w: &[u64]) -> Option<(u64, usize)> {
    let first = *w.first()?;
    let top = first + (first / 50).max(20_000);
    let n = w.iter().take_while(|&&x| x <= top).count();
    (n >= 2 && n * 10 >= w.len()).then(|| (w[n / 2], n))
}

/// The deadline the data shows, if any: the thread writes (a complaint) at one offset in
/// several cycles (`writes`), or many cycles end at one duration (`d`, sorted).
pub(in crate::explain) fn infer_deadline(writes: &[u64], d: &[u64]) -> (Option<u64>, String) {
    let mut w = writes.to_vec();
    w.sort_unstable();
    // Rounded to 0.1 ms, a complaint within 50 us of the request sets no deadline.
    let complaint =
        complaint_offset(&w).map(|(m, near)| (m, near, (m + 50_000) / 100_000 * 100_000));
    if let Some((m, near, d)) = complaint.filter(|c| c.2 > 0) {
        return (
            Some(d),
            format!(
                "inferred: the thread wrote (a timeout log, presumably) at +{} in {near} cycles",
                dur(m)
            ),
        );
    }
    if d.len() >= 20 {
        let max = *d.last().unwrap();
        let pile = d.iter().filter(|&&x| x * 100 >= max * 98).count();
        if pile >= 5 && pile * 20 >= d.len() {
            return (
                Some(d[d.len() - pile]),
                format!(
                    "inferred: {pile} cycles end within 2% of {} (a timeout pile-up)",
                    dur(max)
                ),
            );
        }
    }
    if let Some((lo, hi, n_hi)) = two_modes(d) {
        let at = round2(((lo as f64) * (hi as f64)).sqrt() as u64);
        return (
            Some(at),
            format!(
                "inferred: the durations fall in two groups with nothing between {} and {} ({} cycles above): the deadline is put in that gap",
                dur(lo),
                dur(hi),
                n_hi
            ),
        );
    }
    (None, String::new())
}

/// Two clear modes in sorted durations `d` (at least 20): the widest gap between
/// neighbours, where the upper one is at least 3x the lower and the upper group holds
/// 2 to 20% of the cycles (misses are the few). Returns (top of the lower group, bottom
/// of the upper, upper count).
pub(in crate::explain) fn two_modes(d: &[u64]) -> Option<(u64, u64, usize)> {
    if d.len() < 20 {
        return None;
    }
    let n = d.len();
    (n - n / 5..n - 1)
        .filter(|&i| d[i] > 0 && d[i + 1] >= 3 * d[i] && n - 1 - i >= 2)
        .max_by(|&a, &b| {
            let r = |i: usize| d[i + 1] as f64 / d[i] as f64;
            r(a).total_cmp(&r(b))
        })
        .map(|i| (d[i], d[i + 1], n - 1 - i))
}

/// `v` rounded to two significant digits (a deadline someone would have set).
fn round2(v: u64) -> u64 {
    let mut p = 1u64;
    while v / p >= 100 {
        p *= 10;
    }
    (v + p / 2) / p * p
}

/// Explains the cycles on a built timeline; `writes` are the offsets of the writes the
/// cycles' threads made inside them ([`crate::explain::cutter::Cycles::writes`]).
///
/// The packed cycles are walked rather than held unpacked, each walk shared between
/// threads (`CycleStore::map_parts`): with a deadline given, twice (ready times,
/// durations and counts; then windows, misses and the template's cycles), else once more
/// for the counts, which wait for the deadline the durations show. Rarer cases walk
/// again: replies that were ready before they were read (`Replies::of`, and the
/// durations and counts again where that check drops one; `read_times`), and a template
/// learnt across `watch`'s windows (every good cycle).
pub fn analyze(
    tl: &Timeline,
    s: &Interner,
    o: &Options,
    mut cycles: CycleStore,
    writes: &[u64],
    parted: bool,
) -> ExplainReport {
    cycles.settle_threads();
    let eng = Engine::new(tl, s);
    let given = o.deadline_ns.map(|d| Judge {
        tl,
        deadline: Some(d),
    });
    let first = first_walk(&eng, &cycles, given.as_ref());
    let (deadline, source) = deadline_policy(o, writes, &first.durations);
    let judge = Judge { tl, deadline };
    let ready = &first.ready;
    let counts = (first.counts).unwrap_or_else(|| count_walk(&cycles, &judge, ready));
    let [cut_n, missed, unread, good_n] = counts.iter().fold([0u64; 4], |a, (_, n)| {
        [a[0] + n[0], a[1] + n[1], a[2] + n[2], a[3] + n[3]]
    });
    let no_reply = (cycles.len() - first.durations.len()) as u64 - cut_n;
    let mut stats = CycleStats::of(&first.durations, cycles.len() as u64, no_reply, missed);
    // Cycles whose end the trace lost are unjudged as cut ones are, but said apart.
    stats.end_lost = cycles.end_lost.min(cut_n);
    stats.cut_off = cut_n - stats.end_lost;
    stats.not_reading = unread;
    stats.read = read_times(&cycles, ready.len());
    let sketched = parted.then(|| Sketch::of_sorted(&first.durations));
    drop(first.durations);
    let learns_all = o.learned.0.is_some();
    let mut last = last_walk(&cycles, &judge, ready, (!learns_all).then_some(&counts));
    if let Some(durations) = sketched {
        stats.settled = Some(Box::new(settled(&mut last, durations)));
    }
    let template = match learns_all {
        true => {
            let good = (cycles.iter().enumerate())
                .filter(|(i, c)| judge.is_good(c, ready.get(i)))
                .map(|(i, c)| until_ready(c, ready.get(&i)));
            Template::learn(&eng, good, good_n as usize, &o.learned)
        }
        false => Template::from_spread(&eng, &last.spread, good_n as usize),
    };
    let mut notes = Vec::new();
    if template.good < 3 && !cycles.is_empty() {
        notes.push(format!(
            "only {} good cycle(s) to learn the usual chain from: links are compared with their median over the whole trace",
            template.good
        ));
    }
    let cx = MissCx {
        eng: &eng,
        o,
        deadline,
        template: &template,
    };
    // The misses are explained in order, one tally over them all.
    let mut tally = Tally::default();
    let (mut kept, mut unconnected, mut bare) = (MissKeeper::default(), 0u64, 0u64);
    let mut explain = |(i, c): (usize, Cycle)| {
        let (m, connected) = cx.explain(&c, ready.get(&i), &mut tally);
        unconnected += u64::from(!connected);
        bare += u64::from(no_handoff(&m));
        kept.push(m);
    };
    match last.misses {
        Some(misses) => misses.into_iter().for_each(&mut explain),
        None => (cycles.iter().enumerate())
            .filter(|(i, c)| judge.is_miss(c, ready.get(i)))
            .for_each(&mut explain),
    }
    tally.once = Some(std::mem::take(&mut kept.once));
    let (misses, dropped) = kept.finish();
    notes.extend(blind_notes(bare, unconnected));
    notes.extend(dropped);
    let frame = Framing {
        from: o.from.text().to_string(),
        to: o.to.iter().map(|t| t.text().to_string()).collect(),
        deadline_ns: deadline,
        deadline_source: source,
        top: o.top,
        noun: "cycles",
    };
    let found = Findings {
        stats,
        misses,
        tally,
        notes,
        windows: last.windows,
    };
    assemble(tl, s, frame, found)
}

/// How a cycle is judged against the deadline (`None`: none given or inferred).
struct Judge<'a> {
    tl: &'a Timeline,
    deadline: Option<u64>,
}

impl Judge<'_> {
    /// When `c`'s reply was ready (`r`, where it was read later), else read, if it came.
    fn reply_at(c: &Cycle, r: Option<&Ready>) -> Option<u64> {
        r.map(|r| r.at).or(c.end_ns())
    }

    /// A cycle with no reply that the trace cannot judge ([`cut_off`]).
    fn cut(&self, c: &Cycle) -> bool {
        cut_off(self.tl, c, self.deadline)
    }

    /// Late when the reply was ready after the deadline, or ready in time and read after
    /// it (the reader was not reading); with no reply, unless cut off.
    fn is_miss(&self, c: &Cycle, r: Option<&Ready>) -> bool {
        match (c.end_ns(), self.deadline) {
            (None, _) => !self.cut(c),
            (Some(e), Some(d)) => {
                e - c.start_ns > d || Self::reply_at(c, r).is_some_and(|r| r - c.start_ns > d)
            }
            (Some(_), None) => false,
        }
    }

    /// Neither missed nor cut off: what the usual chain is learnt from.
    fn is_good(&self, c: &Cycle, r: Option<&Ready>) -> bool {
        !self.is_miss(c, r) && !self.cut(c)
    }

    /// Counts `c` into `n`: cut off, missed, ready in time but read late, good. A cycle
    /// cut off is no miss: the two are counted apart.
    fn count(&self, n: &mut [u64; 4], c: &Cycle, r: Option<&Ready>) {
        let (cut, miss) = (self.cut(c), self.is_miss(c, r));
        let unread = match (r, c.end_ns(), self.deadline) {
            (Some(r), Some(e), Some(d)) => r.at - c.start_ns <= d && e - c.start_ns > d,
            _ => false,
        };
        n[0] += u64::from(cut);
        n[1] += u64::from(!cut && miss);
        n[2] += u64::from(unread);
        n[3] += u64::from(!cut && !miss);
    }
}

/// Per part of the cycles, its first index and its counts ([`Judge::count`]).
type Counts = Vec<(usize, [u64; 4])>;

/// What the first walk finds: each reply's ready time where its reader was not waiting
/// for it (by cycle index), the replied cycles' durations until ready (sorted), and the
/// counts when the deadline was given.
struct FirstWalk {
    ready: FxHashMap<usize, Ready>,
    durations: Vec<u64>,
    counts: Option<Counts>,
}

/// The first walk over the cycles; `given` judges them when the deadline was given.
/// Whether a reader read another reply in between (and so took what was ready) is
/// asked after it, of the few cycles with a ready time; where that drops one, the
/// durations and counts are taken again.
fn first_walk(eng: &Engine<'_>, cycles: &CycleStore, given: Option<&Judge<'_>>) -> FirstWalk {
    let parts = cycles.map_parts(|p| {
        let first = p.first();
        let (mut found, mut durations, mut n) = (Vec::new(), Vec::new(), [0u64; 4]);
        let mut hint = 0;
        for (i, c) in p {
            let r = eng.ready(&c, &mut hint);
            if let Some(e) = Judge::reply_at(&c, r.as_ref()) {
                durations.push(e - c.start_ns);
            }
            if let Some(j) = given {
                j.count(&mut n, &c, r.as_ref());
            }
            found.extend(r.map(|r| (i, c, r)));
        }
        durations.sort_unstable();
        (found, durations, (first, n))
    });
    let mut counts = given.map(|_| parts.iter().map(|p| p.2).collect());
    let (found, durations): (Vec<_>, Vec<_>) = parts.into_iter().map(|p| (p.0, p.1)).unzip();
    let (found, mut durations) = (found.concat(), merge_sorted(durations));
    let n = found.len();
    let ready: FxHashMap<usize, Ready> = match n {
        0 => FxHashMap::default(),
        _ => {
            let replies = Replies::of(cycles.iter());
            (found.into_iter())
                .filter(|(_, c, r)| !replies.took_before(c, r))
                .map(|(i, _, r)| (i, r))
                .collect()
        }
    };
    if ready.len() < n {
        let ready = &ready;
        durations = (cycles.map_parts(|p| {
            p.filter_map(|(i, c)| Judge::reply_at(&c, ready.get(&i)).map(|e| e - c.start_ns))
                .collect::<Vec<_>>()
        }))
        .concat();
        counts = given.map(|j| count_walk(cycles, j, ready));
        durations.sort_unstable();
    }
    FirstWalk {
        ready,
        durations,
        counts,
    }
}

/// Runs sorted each (by the threads that made them) merged into one sorted run.
fn merge_sorted(mut runs: Vec<Vec<u64>>) -> Vec<u64> {
    while runs.len() > 1 {
        let (a, b) = (runs.remove(0), runs.remove(0));
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i] <= b[j] {
                out.push(a[i]);
                i += 1;
            } else {
                out.push(b[j]);
                j += 1;
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        runs.push(out);
    }
    runs.pop().unwrap_or_default()
}

/// The counts of every part of the cycles.
fn count_walk(cycles: &CycleStore, j: &Judge<'_>, ready: &FxHashMap<usize, Ready>) -> Counts {
    cycles.map_parts(|p| {
        let (first, mut n) = (p.first(), [0u64; 4]);
        for (i, c) in p {
            j.count(&mut n, &c, ready.get(&i));
        }
        (first, n)
    })
}

/// What the last walk finds: every cycle's plot window, the misses in order, and the good
/// cycles the template learns from.
struct LastWalk {
    windows: Windows,
    /// The misses in order; none where a part met more than [`MISSES_HELD`] (they are
    /// then taken by one more walk, as they are explained, not held).
    misses: Option<Vec<(usize, Cycle)>>,
    spread: Vec<Cycle>,
    /// The windows counted as a merge of windows counts them, but for the sketches.
    settled: Settled,
}

/// Misses a part of the last walk holds at most (40 bytes each).
#[cfg(not(test))]
const MISSES_HELD: usize = 1 << 16;
/// Few in tests: `cycles_read_in_parts_explain_as_read_in_one` holds its misses in three
/// parts and takes them by one more walk in one.
#[cfg(test)]
const MISSES_HELD: usize = 16;

/// The last walk over the cycles. With `counts` (each part's good cycles), it also
/// takes up to ~[`Template::SPREAD`] good cycles spread evenly over the good ones (every
/// `step`-th, in order, as `step_by` over them takes).
fn last_walk(
    cycles: &CycleStore,
    j: &Judge<'_>,
    ready: &FxHashMap<usize, Ready>,
    counts: Option<&Counts>,
) -> LastWalk {
    let goods: u64 = counts
        .iter()
        .flat_map(|c| c.iter())
        .map(|(_, n)| n[3])
        .sum();
    let step = (goods / Template::SPREAD).max(1);
    // The rank among all good cycles of each part's first good one, by its first index.
    let mut before = 0;
    let firsts: FxHashMap<usize, u64> = (counts.iter().flat_map(|c| c.iter()))
        .map(|&(first, n)| {
            before += n[3];
            (first, before - n[3])
        })
        .collect();
    let parts = cycles.map_parts(|p| {
        let mut rank = counts.map(|_| firsts[&p.first()]);
        let mut w = LastWalk {
            windows: Windows::new(),
            misses: Some(Vec::new()),
            spread: Vec::new(),
            settled: Settled::default(),
        };
        for (i, c) in p {
            let r = ready.get(&i);
            let miss = j.is_miss(&c, r);
            if let Some(k) = rank.as_mut().filter(|_| !miss && !j.cut(&c)) {
                if k.is_multiple_of(step) {
                    w.spread.push(until_ready(c, r));
                }
                *k += 1;
            }
            if miss {
                w.misses = (w.misses.take())
                    .filter(|m| m.len() < MISSES_HELD)
                    .map(|mut m| {
                        m.push((i, c));
                        m
                    });
            }
            let end = Judge::reply_at(&c, r);
            let win = Window::new(c.start_ns, end, c.stop_ns(), c.tid, c.cpu, miss);
            let win = win.read_at(c.end_ns());
            w.settled.count_in(&win, j.deadline);
            w.windows.push(win);
        }
        w
    });
    let mut all = LastWalk {
        windows: Windows::new(),
        misses: Some(Vec::new()),
        spread: Vec::new(),
        settled: Settled::default(),
    };
    for w in parts {
        all.windows.append(w.windows);
        all.settled.merge(&w.settled);
        all.misses = all.misses.zip(w.misses).map(|(mut a, b)| {
            a.extend(b);
            a
        });
        all.spread.extend(w.spread);
    }
    all
}

/// What a merge of windows takes of this window's cycles (all settled by it: a window's
/// cycles are those starting in its stretch): the last walk's counts with `durations`,
/// the sketch of the durations until ready, and the same until read.
fn settled(last: &mut LastWalk, durations: Sketch) -> Settled {
    let mut s = std::mem::take(&mut last.settled);
    s.reads = match s.later {
        0 => durations.clone(),
        _ => {
            let mut reads: Vec<u64> = (last.windows.iter())
                .filter_map(|w| w.end_ns().map(|e| w.read_ns.unwrap_or(e) - w.start_ns))
                .collect();
            reads.sort_unstable();
            Sketch::of_sorted(&reads)
        }
    };
    s.durations = durations;
    s
}

/// `c` as the template learns it: until its reply was ready where that was before it was
/// read. The reader's own sleep after the reply was ready is not the chain's usual work,
/// and a miss is weighed only up to its ready time.
fn until_ready(mut c: Cycle, r: Option<&Ready>) -> Cycle {
    if let (Some(r), Some(reader)) = (r, c.end_tid()) {
        c.reply(r.at, reader);
    }
    c
}

/// The quantiles of the replied cycles until their reply was read, when `later` of them
/// were read later than it was ready (else none: the main quantiles say it all).
fn read_times(cycles: &CycleStore, later: usize) -> Option<ReadTimes> {
    if later == 0 {
        return None;
    }
    let mut d: Vec<u64> = (cycles.iter())
        .filter_map(|c| c.end_ns().map(|e| e - c.start_ns))
        .collect();
    d.sort_unstable();
    Some(ReadTimes {
        later: later as u64,
        p50_ns: quantile(&d, 0.5),
        p90_ns: quantile(&d, 0.9),
        p99_ns: quantile(&d, 0.99),
        max_ns: *d.last()?,
    })
}

/// A cycle with no reply that the trace cannot judge: it ended (or a CPU's data was cut)
/// before the deadline passed, so the reply may be in what was not recorded. Blindness,
/// not latency.
fn cut_off(tl: &Timeline, c: &Cycle, deadline: Option<u64>) -> bool {
    if c.end_ns().is_some() {
        return false;
    }
    if c.end_lost() {
        return true;
    }
    let due = deadline.map_or(u64::MAX, |d| c.start_ns.saturating_add(d));
    (c.at_end && c.stop_ns() < due) || tl.blind_in(u32::MAX, c.start_ns, due).is_some()
}

/// True when a miss's chain shows no hand-off at all.
fn no_handoff(m: &crate::explain::report::Miss) -> bool {
    !(m.chain.iter()).any(|l| !matches!(l.kind.as_str(), "from" | "to" | "deadline"))
}

/// Where the misses' chains are blind: misses with no hand-off at all, and misses whose
/// hand-offs the trace does not connect to the cycle's thread.
fn blind_notes(bare: u64, unconnected: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if bare > 0 {
        notes.push(format!(
            "{bare} miss(es) show no hand-off at all: the trace lacks the events that would show the chain (record sched:sched_waking, sched:sched_switch, workqueue:*, irq:*, timer:hrtimer_*)"
        ));
    }
    if unconnected > 0 {
        notes.push(format!(
            "{unconnected} miss(es) had no hand-off the trace connects to the cycle's thread (a device interrupt, or events not recorded): every wait inside them was considered"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::{analyze, complaint_offset, merge_sorted, round2, two_modes, until_ready};
    use crate::explain::engine::{Engine, LinkKind};
    use crate::explain::learned::Learned;
    use crate::explain::report::Window;
    use crate::explain::template::Template;
    use crate::explain::tests::cut;
    use crate::testkit;

    /// The walks after the pass read the cycles in parts on threads: the report is the
    /// one a single thread gives, misses, ready times, template and windows alike, and
    /// misses held by the walk (three parts of ~14) are explained as those taken by a
    /// walk of their own (one part of 41, over `MISSES_HELD`).
    #[test]
    fn cycles_read_in_parts_explain_as_read_in_one() {
        // Packed cycles, and (fewer than the tests' cap) cycles kept as they are.
        for (n, packed) in [(40_000, true), (6_000, false)] {
            read_in_parts_as_in_one(n, packed);
        }
    }

    fn read_in_parts_as_in_one(n: usize, packed: bool) {
        let o = testkit::chain_options(Some(5_000_000));
        let hogged: Vec<usize> = (0..n).step_by(997).collect();
        let f = testkit::giving_up_client(n, &hogged);
        let explain = |threads: usize| {
            let (mut cy, p) = cut(&o, &f);
            assert_eq!(cy.cycles.packs(), packed);
            cy.cycles.threads = threads;
            assert_eq!(cy.cycles.parts(threads).len(), threads);
            let r = analyze(&p.tl, &p.strings, &o, cy.cycles, &cy.writes, false);
            let windows: Vec<Window> = r.windows.iter().collect();
            (
                serde_json::to_string(&r).unwrap(),
                windows,
                r.cycles.clone(),
            )
        };
        let (one, three) = (explain(1), explain(3));
        assert_eq!(one.0, three.0);
        assert_eq!(one.1, three.1);
        let c = &one.2;
        assert_eq!(
            (c.count, c.misses, c.not_reading),
            (n as u64, hogged.len() as u64, 0)
        );
        assert_eq!(one.1.iter().filter(|w| w.miss).count(), hogged.len());
        // Replies read later than they were ready (2 in this trace, as the walks gave
        // before they were shared): the windows and the statistics agree.
        let later = one.1.iter().filter(|w| w.read_ns.is_some()).count() as u64;
        assert_eq!(c.read.as_ref().map(|r| r.later), Some(later));
        assert!(later > 0);
    }

    #[test]
    fn sorted_runs_merge_into_one() {
        let runs = vec![vec![1, 4, 9], vec![], vec![2, 4, 10, 11], vec![0]];
        assert_eq!(merge_sorted(runs), [0, 1, 2, 4, 4, 9, 10, 11]);
        assert_eq!(merge_sorted(Vec::new()), Vec::<u64>::new());
    }

    #[test]
    fn the_template_learns_a_slept_readers_cycle_until_its_reply_was_ready() {
        // With a 30 ms deadline every cycle is good, the two hogged ones too: ready at
        // +8.030 ms, read at ~+23.5 ms after the client slept 20 ms on its own timer.
        let o = testkit::chain_options(Some(30_000_000));
        let f = testkit::giving_up_client(8, &[1, 2, 3, 5, 6]);
        let (cy, p) = cut(&o, &f);
        let eng = Engine::new(&p.tl, &p.strings);
        let ready_at = super::first_walk(&eng, &cy.cycles, None).ready;
        let ready: Vec<_> = (0..cy.cycles.len())
            .map(|i| ready_at.get(&i).cloned())
            .collect();
        assert_eq!(ready.iter().filter(|r| r.is_some()).count(), 5);
        let learn = |trim: bool| {
            let good = (cy.cycles.iter().zip(&ready)).map(|(c, r)| {
                if trim {
                    until_ready(c, r.as_ref())
                } else {
                    c
                }
            });
            Template::learn(&eng, good, 8, &Learned::default())
        };
        // Until the read, the time the reader slept on its own timer was learnt as the
        // usual uncovered time (the median of 5 slept cycles of 8: 15.527 ms), and its
        // own run after that timer as a usual link of the chain.
        let read = learn(false);
        assert_eq!(read.gap, 15_527_000);
        let c_run = (LinkKind::Run, "c".to_string(), 1);
        assert_eq!(read.links.get(&c_run), Some(&3_000));
        // Until ready: the chain's own links and gaps, no sleep.
        let t = learn(true);
        assert_eq!((t.gap, t.good), (38_000, 8));
        assert_eq!(t.links.get(&c_run), None);
        let work = (LinkKind::Work, "reply_work".to_string(), 1);
        assert_eq!(t.links.get(&work), Some(&7_992_000));
        assert_eq!(t.links.len(), 2);
    }

    const US: u64 = 1_000;

    #[test]
    fn two_clear_modes_put_the_deadline_in_the_gap() {
        // 90 cycles around 1 ms, 10 around 8-12 ms: the gap is 1.09 -> 8 ms.
        let mut d: Vec<u64> = (0..90).map(|i| 900 * US + i * 2 * US).collect();
        d.extend((0..10).map(|i| 8_000 * US + i * 400 * US));
        d.sort_unstable();
        assert_eq!(two_modes(&d), Some((1_078 * US, 8_000 * US, 10)));
        assert_eq!(round2(2_936_665), 2_900_000);
        // One slow cycle is an outlier, not a mode; a smooth spread has no gap.
        let mut one: Vec<u64> = (0..99).map(|i| 900 * US + i * US).collect();
        one.push(20_000 * US);
        assert_eq!(two_modes(&one), None);
        let smooth: Vec<u64> = (1..=100).map(|i| i * 100 * US).collect();
        assert_eq!(two_modes(&smooth), None);
    }

    #[test]
    fn complaints_cluster_at_the_bottom_when_the_writer_is_preempted() {
        // A client on a loaded CPU: 4 complaints written right at 3.45 ms, 16 delayed by
        // preemption, 8 of those bunched at the end of a 3.8 ms slice (7.3 ms, as seen
        // live).
        let mut w: Vec<u64> = Vec::new();
        w.extend((0..4).map(|i| 3_445 * US + i * 3 * US));
        w.extend([3_700, 4_200, 5_000, 6_000, 8_000, 9_000, 10_000, 11_000].map(|x| x * US));
        w.extend((0..8).map(|i| 7_250 * US + i * 40 * US));
        w.sort_unstable();
        let (m, n) = complaint_offset(&w).unwrap();
        assert_eq!(n, 4);
        assert_eq!((m + 50_000) / 100_000 * 100_000, 3_500_000);
        // A spread with no cluster infers nothing.
        let spread: Vec<u64> = (1..=12).map(|i| i * 700 * US).collect();
        assert_eq!(complaint_offset(&spread), None);
        // Two complaints at one offset among delayed ones are enough; one is not, even
        // with delayed ones bunched above it: a guess is not an inference.
        let two = [3_452 * US, 3_460 * US, 5_100 * US, 6_900 * US, 7_400 * US];
        assert_eq!(complaint_offset(&two), Some((3_460 * US, 2)));
        assert_eq!(complaint_offset(&two[1..]), None);
        let lone = [3_452 * US, 7_300 * US, 7_310 * US, 9_000 * US];
        assert_eq!(complaint_offset(&lone), None);
    }
}
