//! The one analysis driver. Every mode (cycles, timer, softirq, automatic) is the same
//! steps: its samples -> its deadline policy -> misses -> each miss explained by the engine
//! -> causes tallied and ranked, cycle statistics, CPU context, advice -> the report. A mode
//! supplies the samples, the policy and the explained misses ([`Findings`]); this module
//! does the rest once.

use crate::dist::Dist;
use crate::event::Interner;
use crate::explain::advice::{advise, context};
use crate::explain::causes::{self as cause, Category};
use crate::explain::once::Once;
use crate::explain::report::{
    CauseKey, CauseRow, Culprit, CycleStats, ExplainReport, Hold, Miss, Windows,
};
use crate::timeline::Timeline;
use rustc_hash::FxHashMap;

/// Blame over all misses: per cause (misses it contributed to, excess ns), and per CPU
/// the excess the chain lost there (what the context section looks at).
#[derive(Clone, Default)]
pub(in crate::explain) struct Tally {
    pub(in crate::explain) causes: FxHashMap<CauseKey, (u64, u64)>,
    cpus: FxHashMap<u32, u64>,
    /// Excess per CPU since the last miss was added; then that miss's.
    since: FxHashMap<u32, u64>,
    last: Vec<(u32, u64)>,
    /// Per cause, the time it held a CPU inside a deferral's wait ([`Hold::nested_ns`]).
    pub(in crate::explain) nested: FxHashMap<CauseKey, u64>,
    /// Where each cause held the chains, when the mode gathered it as misses came
    /// (misses that lose their chain, or are not all listed); otherwise the listed
    /// misses give it.
    pub(in crate::explain) once: Option<Once>,
}

impl Tally {
    /// One miss's blame, per cause: each cause counts once for the miss. Returns it,
    /// for the miss to carry.
    pub(in crate::explain) fn add_miss(&mut self, per: PerMiss) -> Vec<(CauseKey, u64)> {
        self.last = self.since.drain().collect();
        self.last.sort_unstable();
        let mut blame: Vec<(CauseKey, u64)> = per.0.into_iter().collect();
        blame.sort_by(|a, b| b.1.cmp(&a.1).then(a.0 .1.label().cmp(&b.0 .1.label())));
        for (k, ns) in &blame {
            let e = self.causes.entry(k.clone()).or_default();
            e.0 += 1;
            e.1 += ns;
        }
        blame
    }

    /// Notes the part of `h` that fell inside a deferral's wait.
    pub(in crate::explain) fn nest(&mut self, h: &Hold) {
        if h.nested_ns > 0 {
            let k = (h.category, h.culprit.clone());
            *self.nested.entry(k).or_default() += h.nested_ns;
        }
    }

    /// An explained miss's holds, chain order: each cause counts once for the miss, and
    /// the CPU each culprit held takes the time (automatic mode, whose misses come
    /// explained from several analyses). Returns the miss's blame per cause, as
    /// [`Tally::add_miss`] does.
    pub(in crate::explain) fn add_chain(&mut self, m: &Miss) -> Vec<(CauseKey, u64)> {
        let mut per = PerMiss::default();
        for h in m.chain.iter().flat_map(|l| &l.held_by) {
            self.nest(h);
            per.add(h.category, h.culprit.clone(), h.ns);
            if let Some(c) = h.culprit.cpu {
                self.blame_cpu(c, h.ns);
            }
        }
        self.add_miss(per)
    }

    /// The excess per CPU of the miss added last ([`Tally::add_miss`]), taken.
    pub(in crate::explain) fn miss_cpus(&mut self) -> Vec<(u32, u64)> {
        std::mem::take(&mut self.last)
    }

    /// Excess lost on each CPU so far.
    pub(in crate::explain) fn cpus(&self) -> &FxHashMap<u32, u64> {
        &self.cpus
    }

    /// `ns` of excess lost on `cpu`.
    pub(in crate::explain) fn blame_cpu(&mut self, cpu: u32, ns: u64) {
        *self.cpus.entry(cpu).or_default() += ns;
        *self.since.entry(cpu).or_default() += ns;
    }
}

/// Misses that keep their chain in full: the worst ones. Every miss keeps its numbers
/// and its blame (the causes table counts all of them), but a chain costs kilobytes, and
/// selectors that pair badly can make every request a miss.
pub const FULL_CHAINS: usize = 1000;

/// Worst first: no reply first, then the latest.
pub(in crate::explain) fn worse(a: &Miss, b: &Miss) -> std::cmp::Ordering {
    b.duration_ns
        .is_none()
        .cmp(&a.duration_ns.is_none())
        .then(b.late_ns.cmp(&a.late_ns))
}

/// Collects explained misses, keeping the chains of the worst [`FULL_CHAINS`] only, so
/// memory stays bounded however many misses there are.
#[derive(Default)]
pub(in crate::explain) struct MissKeeper {
    full: Vec<Miss>,
    bare: Vec<Miss>,
    /// Every miss's holds, taken before its chain may be shed.
    pub(in crate::explain) once: Once,
}

impl MissKeeper {
    /// Adds one explained miss.
    pub(in crate::explain) fn push(&mut self, m: Miss) {
        self.once.add(&m);
        self.full.push(m);
        if self.full.len() >= 2 * FULL_CHAINS {
            self.shed();
        }
    }

    /// Keeps the chains of the worst FULL_CHAINS of those that have one.
    fn shed(&mut self) {
        if self.full.len() <= FULL_CHAINS {
            return;
        }
        self.full.select_nth_unstable_by(FULL_CHAINS, worse);
        self.bare
            .extend(self.full.drain(FULL_CHAINS..).map(|mut m| {
                m.chain = Vec::new();
                m
            }));
    }

    /// Every miss, worst first, and how many lost their chain (with the note that says
    /// so, when any did).
    pub(in crate::explain) fn finish(mut self) -> (Vec<Miss>, Option<String>) {
        self.shed();
        let dropped = self.bare.len();
        let mut all = self.full;
        all.append(&mut self.bare);
        all.sort_by(worse);
        let note = (dropped > 0).then(|| {
            format!(
                "the worst {FULL_CHAINS} of {} misses keep their chain; the other {dropped} are counted in every table and cause, without one (an empty `chain` in JSON)",
                all.len()
            )
        });
        (all, note)
    }
}

/// One miss's blame, per cause, before it joins the [`Tally`].
#[derive(Default)]
pub(in crate::explain) struct PerMiss(pub(in crate::explain) FxHashMap<CauseKey, u64>);

impl PerMiss {
    /// Adds each hold to its cause.
    pub(in crate::explain) fn add_holds(&mut self, holds: &[Hold]) {
        for h in holds {
            self.add(h.category, h.culprit.clone(), h.ns);
        }
    }

    /// Adds `ns` to one cause.
    pub(in crate::explain) fn add(&mut self, category: Category, culprit: Culprit, ns: u64) {
        *self.0.entry((category, culprit)).or_default() += ns;
    }

    /// All blamed time.
    pub(in crate::explain) fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// What the report says the mode measured.
pub(in crate::explain) struct Framing {
    /// What opens a sample, in words.
    pub(in crate::explain) from: String,
    /// What closes it.
    pub(in crate::explain) to: Vec<String>,
    /// The deadline the mode's policy chose.
    pub(in crate::explain) deadline_ns: Option<u64>,
    /// Why that deadline.
    pub(in crate::explain) deadline_source: String,
    /// Misses shown in full.
    pub(in crate::explain) top: usize,
    /// What a sample is called (`cycles`, `timer periods`).
    pub(in crate::explain) noun: &'static str,
}

/// What a mode found: its explained misses (in the order the report lists them) and the
/// facts the statistics need.
pub(in crate::explain) struct Findings {
    /// Cycle statistics.
    pub(in crate::explain) stats: CycleStats,
    /// The explained misses, worst first.
    pub(in crate::explain) misses: Vec<Miss>,
    /// Their blame.
    pub(in crate::explain) tally: Tally,
    /// Where the analysis is blind or approximate.
    pub(in crate::explain) notes: Vec<String>,
    /// Every sample, in start order (what the plots draw).
    pub(in crate::explain) windows: Windows,
}

impl CycleStats {
    /// Statistics of the samples: `sorted` holds the measured durations, in order.
    pub(in crate::explain) fn of(
        sorted: &[u64],
        count: u64,
        no_reply: u64,
        misses: u64,
    ) -> CycleStats {
        let d = Dist::of_sorted(sorted);
        CycleStats {
            count,
            replied: sorted.len() as u64,
            no_reply,
            cut_off: 0,
            end_lost: 0,
            misses,
            not_reading: 0,
            min_ns: d.min,
            p50_ns: d.p50,
            p90_ns: d.p90,
            p99_ns: d.p99,
            max_ns: d.max,
            histogram: crate::dist::log_histogram(sorted, 1000),
            pairing: None,
            read: None,
            settled: None,
        }
    }
}

/// The shared tail: ranks the causes, finds the CPUs behind them, advises, and assembles
/// the report (inputs and machine facts are added by the caller that read the trace).
pub(in crate::explain) fn assemble(
    tl: &Timeline,
    s: &Interner,
    frame: Framing,
    f: Findings,
) -> ExplainReport {
    let once = f.tally.once.unwrap_or_else(|| Once::of(&f.misses));
    let causes = rank(f.tally.causes, &f.tally.nested, &once.repeated());
    let context = context(tl, s, &causes, &f.tally.cpus);
    let advice = advise(tl, s, &causes, &f.misses);
    let mut notes = f.notes;
    if advice.iter().any(|a| a.command.contains("pgrep -x '")) {
        notes.push(crate::explain::advice::BY_NAME.into());
    }
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: frame.from,
        to: frame.to,
        deadline_ns: frame.deadline_ns,
        deadline_source: frame.deadline_source,
        cycles: f.stats,
        causes,
        misses: f.misses,
        context,
        advice,
        notes,
        blind: blind(tl),
        unread: None,
        machine: None,
        cpus: Vec::new(),
        windows: f.windows,
        top: frame.top,
        recorder: Vec::new(),
        noun: frame.noun,
        expect: None,
        kernel: None,
    }
}

/// Causes as rows, the most time held first (ties by culprit, so the order is stable), the
/// blind spots last; then each deferral to ksoftirqd ahead of what held its CPU inside
/// its wait (`nested`: per cause, that time).
///
/// The time a cause held is its once-counted total: its sum over misses less what
/// overlapping misses repeated (`repeated`, from [`crate::explain::once`]). A stall that
/// several overlapping misses each waited through took the task's time once; ranking by
/// the per-miss sum would put a cause spread over many overlapping misses ahead of one that
/// held the task longer. The share is of that total too; the mean stays per miss.
pub(in crate::explain) fn rank(
    causes: FxHashMap<CauseKey, (u64, u64)>,
    nested: &FxHashMap<CauseKey, u64>,
    repeated: &FxHashMap<CauseKey, u64>,
) -> Vec<CauseRow> {
    let mut rows: Vec<CauseRow> = causes
        .into_iter()
        .map(|(key, (count, ns))| {
            let once = ns.saturating_sub(repeated.get(&key).copied().unwrap_or(0));
            CauseRow {
                category: key.0,
                culprit: key.1,
                count,
                total_excess_ns: ns,
                once_ns: once,
                mean_excess_ns: ns / count.max(1),
                share: 0.0,
            }
        })
        .collect();
    let sum: u64 = rows.iter().map(|r| r.once_ns).sum::<u64>().max(1);
    for r in &mut rows {
        r.share = r.once_ns as f64 / sum as f64;
    }
    let blind = |r: &CauseRow| crate::explain::causes::is_blind_spot(r.category);
    let key = deferral_keys(&rows, nested);
    let key = |r: &CauseRow| key(r).unwrap_or(r.once_ns);
    rows.sort_by(|a, b| {
        (blind(a).cmp(&blind(b)))
            .then(key(b).cmp(&key(a)))
            .then(b.total_excess_ns.cmp(&a.total_excess_ns))
            .then(a.culprit.label().cmp(&b.culprit.label()))
    });
    after_deferral(&mut rows, nested);
    rows
}

/// The rank of the largest deferral to ksoftirqd on each CPU: its own time plus what
/// held that CPU inside deferral waits (`nested`), which the deferral made possible.
fn deferral_keys(
    rows: &[CauseRow],
    nested: &FxHashMap<CauseKey, u64>,
) -> impl Fn(&CauseRow) -> Option<u64> {
    let mut inside: FxHashMap<Option<u32>, u64> = FxHashMap::default();
    for ((_, culprit), ns) in nested {
        *inside.entry(culprit.cpu).or_default() += ns;
    }
    let mut largest: FxHashMap<Option<u32>, (u64, String)> = FxHashMap::default();
    for r in rows
        .iter()
        .filter(|r| r.category == cause::DEFERRED_TO_KSOFTIRQD)
    {
        let e = largest.entry(r.culprit.cpu).or_insert((0, String::new()));
        if r.once_ns > e.0 {
            *e = (r.once_ns, r.culprit.label());
        }
    }
    move |r: &CauseRow| {
        let (ns, label) = largest.get(&r.culprit.cpu)?;
        (r.category == cause::DEFERRED_TO_KSOFTIRQD
            && *ns == r.once_ns
            && *label == r.culprit.label())
        .then(|| ns + inside.get(&r.culprit.cpu).copied().unwrap_or(0))
    }
}

/// Moves what delayed deferred work only because it waited for ksoftirqd right after the
/// largest deferral on its CPU, when it ranks above it: a softirq backlog (runs that end
/// at their budget leave the rest to ksoftirqd, so a backlog outlasts a few runs only
/// while ksoftirqd is kept off the CPU), and a handler or softirq that held the CPU for
/// most of its time while ksoftirqd was runnable there (had ksoftirqd run when it became
/// runnable, the work would have been done before it). The deferral is the cause to fix
/// first; the others keep their rows and their time.
fn after_deferral(rows: &mut Vec<CauseRow>, nested: &FxHashMap<CauseKey, u64>) {
    let inside = |r: &CauseRow| {
        r.category == cause::SOFTIRQ_BACKLOG
            || (nested.get(&(r.category, r.culprit.clone())))
                .is_some_and(|&ns| ns * 2 > r.total_excess_ns)
    };
    let mut i = 0;
    while i < rows.len() {
        let cpu = rows[i].culprit.cpu;
        let deferral =
            |d: &CauseRow| d.category == cause::DEFERRED_TO_KSOFTIRQD && d.culprit.cpu == cpu;
        // The largest deferral on this row's CPU, when it ranks below the row.
        let below = (!rows[..i].iter().any(deferral))
            .then(|| rows[i + 1..].iter().position(deferral))
            .flatten();
        match below {
            Some(k) if inside(&rows[i]) => {
                let r = rows.remove(i);
                rows.insert(i + k + 1, r);
            }
            _ => i += 1,
        }
    }
}

/// Where the trace is blind, in words: each CPU whose data ends early, and from when;
/// once, the CPUs that record no switch out of their idle task although tasks came out
/// of it, with how late that makes a wakeup there (a stray lost switch is said on its own
/// link only).
fn blind(tl: &Timeline) -> Vec<String> {
    let cut = (tl.blind.iter()).map(|b| {
        // A CPU whose part of the file was cut before its first event has no last event:
        // it is blind from the trace's start, not from time 0.
        if tl.first_ts.is_none_or(|first| b.from < first) {
            return format!(
                "CPU{}, the whole trace: none of its data is in the file (cut before its first event); time there is not blamed on the workload",
                b.cpu
            );
        }
        format!(
            "CPU{} from {} to the end ({} later): its data in the file is cut short; time there is not blamed on the workload",
            b.cpu,
            crate::units::secs(b.from),
            crate::units::dur(tl.last_ts.saturating_sub(b.from))
        )
    });
    let a = &tl.anomalies;
    let idle = a.untraced_idle_note();
    let late = a.late_note();
    let rtla = rtla_unreadable(tl);
    late.into_iter()
        .chain(cut)
        .chain(a.context_cut_note())
        .chain(idle)
        .chain(rtla)
        .collect()
}

/// The timerlat and osnoise events whose values are not numbers a trace can hold, once.
fn rtla_unreadable(tl: &Timeline) -> Option<String> {
    let r = &tl.rtla;
    let (ts, cpu, text) = r.first_unreadable.as_ref()?;
    Some(format!(
        "{} timerlat/osnoise events not understood (values no trace can hold: negative, past 64 bits or over {}), left out of every breakdown; the first at {} on CPU{cpu}: `{}`",
        r.unreadable,
        crate::units::dur(crate::read::rtla::MAX_NS),
        crate::units::secs(*ts),
        text.chars().take(120).collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_cut_before_its_first_event_is_blind_for_the_whole_trace() {
        let tl = Timeline {
            first_ts: Some(21_600_000_000_000),
            last_ts: 21_658_500_000_000,
            blind: vec![
                crate::timeline::Blind { cpu: 1, from: 0 },
                crate::timeline::Blind {
                    cpu: 0,
                    from: 21_650_000_000_000,
                },
            ],
            ..Timeline::default()
        };
        let b = blind(&tl);
        assert_eq!(b.len(), 2);
        assert!(
            b[0].starts_with("CPU1, the whole trace: none of its data is in the file"),
            "{}",
            b[0]
        );
        assert!(
            b[1].starts_with("CPU0 from 21650.000000 to the end (8.500 s later)"),
            "{}",
            b[1]
        );
    }

    fn miss(late_ns: u64, replied: bool) -> Miss {
        Miss {
            cpus: Vec::new(),
            read_ns: None,
            not_reading: false,
            uncertain: false,
            start_ns: late_ns,
            duration_ns: replied.then_some(late_ns + 1),
            tid: 1,
            cpu: 0,
            late_ns,
            blamed_ns: 0,
            chain: vec![crate::explain::report::Link::mark(
                "from",
                0,
                0,
                Some(0),
                "x".into(),
            )],
            blame: Vec::new(),
        }
    }

    fn key(category: Category, irq: Option<u32>, comm: Option<&str>) -> CauseKey {
        let culprit = Culprit {
            irq,
            comm: comm.map(str::to_string),
            cpu: Some(0),
            ..Default::default()
        };
        (category, culprit)
    }

    #[test]
    fn causes_rank_by_the_time_they_held_counted_once() {
        // An idle CPU woke late inside 300 overlapping misses: 265 ms summed, 70 ms of the
        // task's time. A holder's preemption: 200 ms summed, 158 ms once. (The shape of a
        // waiter overrunning its 1 ms period behind a preempted lock holder.)
        let idle = key(cause::CPU_IDLE, None, None);
        let inv = key(cause::PRIORITY_INVERSION, None, Some("inv-rt"));
        let causes: FxHashMap<CauseKey, (u64, u64)> = [
            (idle.clone(), (367, 265_000_000)),
            (inv.clone(), (298, 200_000_000)),
        ]
        .into_iter()
        .collect();
        let repeated: FxHashMap<CauseKey, u64> = [(idle, 195_000_000), (inv, 42_000_000)]
            .into_iter()
            .collect();
        let rows = rank(causes, &FxHashMap::default(), &repeated);
        let got: Vec<(u64, u64)> = rows
            .iter()
            .map(|r| (r.once_ns, r.total_excess_ns))
            .collect();
        assert_eq!(got, [(158_000_000, 200_000_000), (70_000_000, 265_000_000)]);
        // Shares are of the once-counted time; the mean stays per miss.
        assert!(
            (rows[0].share - 158.0 / 228.0).abs() < 1e-9,
            "{}",
            rows[0].share
        );
        assert_eq!(rows[1].mean_excess_ns, 265_000_000 / 367);
    }

    #[test]
    fn a_deferral_ranks_by_its_whole_wait_ahead_of_what_cut_into_it() {
        let irq = key(cause::HARDIRQ, Some(9), None);
        let net = key(cause::SOFTIRQ, None, Some("NET_RX"));
        let sshd = key(cause::DEFERRED_TO_KSOFTIRQD, None, Some("sshd"));
        let other = key(cause::HARDIRQ, Some(11), None);
        let causes: FxHashMap<CauseKey, (u64, u64)> = [
            (irq.clone(), (1, 300)),
            (net.clone(), (1, 250)),
            (sshd.clone(), (1, 200)),
            (other.clone(), (1, 280)),
        ]
        .into_iter()
        .collect();
        // irq 9 held the CPU inside the wait for all its 300; irq 11 for 100 of 280.
        let nested: FxHashMap<CauseKey, u64> = [(irq.clone(), 300), (other.clone(), 100)]
            .into_iter()
            .collect();
        let order: Vec<u64> = rank(causes.clone(), &nested, &FxHashMap::default())
            .iter()
            .map(|r| r.total_excess_ns)
            .collect();
        // The deferral's key is 200 + 400; irq 9 follows it, irq 11 (mostly outside the
        // wait) keeps its place by its time.
        assert_eq!(order, [200, 300, 280, 250]);
        let plain: Vec<u64> = rank(causes, &FxHashMap::default(), &FxHashMap::default())
            .iter()
            .map(|r| r.total_excess_ns)
            .collect();
        assert_eq!(plain, [300, 280, 250, 200]);
    }

    #[test]
    fn the_worst_misses_keep_their_chain_and_every_miss_is_kept() {
        let mut k = MissKeeper::default();
        let n = 2 * FULL_CHAINS + 537;
        for i in 0..n as u64 {
            // Every seventh has no reply: those come first, whatever their lateness.
            k.push(miss(i, i % 7 != 0));
        }
        let (all, note) = k.finish();
        assert_eq!(all.len(), n);
        assert!(all.windows(2).all(|w| worse(&w[0], &w[1]).is_le()));
        assert!(all[..FULL_CHAINS].iter().all(|m| !m.chain.is_empty()));
        assert!(all[FULL_CHAINS..].iter().all(|m| m.chain.is_empty()));
        assert!(all[0].duration_ns.is_none() && all[0].late_ns == (n as u64 - 1) / 7 * 7);
        assert!(note
            .unwrap()
            .starts_with(&format!("the worst {FULL_CHAINS} of {n} misses")));
    }
}
