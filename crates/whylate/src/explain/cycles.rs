//! Request/response cycles: the cutter that finds them in the stream, the deadline
//! policy (given, inferred from timeout complaints or a pile-up, else p99), and the
//! analysis of each missed cycle.

use super::advice::{advise, context};
use super::auto::median_of;
use super::blame::{gap_cause, uncovered};
use super::dist::quantile;
use super::driver::rank;
use super::engine::{scale, Engine, LinkKind};
use super::report::{Culprit, CycleStats, ExplainReport, Hold, Link, Miss, Window};
use crate::event::{Event, Interner, Kind, Sym};
use crate::fdpath::FdPaths;
use crate::selector::{Names, Seen, Selector};
use crate::stats::dur;
use crate::syscalls::Arch;
use crate::timeline::Timeline;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Which later `to` closes a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Same {
    /// The thread that matched `from` (default).
    #[default]
    Thread,
    /// Any thread of its process.
    Tgid,
    /// Anyone.
    Any,
}

/// What to explain.
#[derive(Clone, Debug)]
pub struct Options {
    /// Opens a cycle.
    pub from: Selector,
    /// Closes it (any of them).
    pub to: Vec<Selector>,
    /// Cycles longer than this, and cycles with no reply, are misses.
    pub deadline_ns: Option<u64>,
    /// Who may close a cycle.
    pub same: Same,
    /// Syscall table for raw_syscalls events.
    pub arch: Arch,
    /// Misses whose chain is shown in the terminal.
    pub top: usize,
}

/// One cycle as cut from the stream.
#[derive(Clone, Debug, Serialize)]
pub struct Cycle {
    /// The `from` event.
    pub start_ns: u64,
    /// The `to` event, if one came.
    pub end_ns: Option<u64>,
    /// Thread that matched `from`.
    pub tid: i32,
    /// Its CPU.
    pub cpu: u32,
    /// When the cycle stopped waiting without reply: the next `from`, or the trace end.
    pub horizon_ns: u64,
    /// Offsets of write syscalls the thread made inside the cycle (a timeout log line is
    /// one way a deadline shows).
    #[serde(skip)]
    pub writes: Vec<u64>,
}

/// Cuts cycles from the stream.
pub struct Cycles {
    pub(super) from: Selector,
    pub(super) to: Vec<Selector>,
    pub(super) same: Same,
    pub(super) arch: Arch,
    pub(super) open: FxHashMap<i64, usize>,
    /// The cycles, in start order.
    pub cycles: Vec<Cycle>,
    pub(super) write_name: Option<Sym>,
    /// Descriptor names, when a selector filters on `path`.
    pub(super) paths: Option<FdPaths>,
    /// What the selectors met, to say why they selected nothing.
    pub(super) seen_from: Seen,
    pub(super) seen_to: Vec<Seen>,
    pub(super) names: Names,
}

impl Cycles {
    /// An empty cutter.
    pub fn new(o: &Options) -> Cycles {
        Cycles {
            from: o.from.clone(),
            to: o.to.clone(),
            same: o.same,
            arch: o.arch,
            open: FxHashMap::default(),
            cycles: Vec::new(),
            write_name: None,
            paths: (o.from.uses("path") || o.to.iter().any(|t| t.uses("path"))).then(FdPaths::new),
            seen_from: Seen::default(),
            seen_to: o.to.iter().map(|_| Seen::default()).collect(),
            names: Names::default(),
        }
    }

    /// Why the selectors cut no cycle, or none that ends, when the trace shows they
    /// cannot (an event or field it does not have): the one-line error for the user.
    pub fn why_nothing(&self, s: &Interner) -> Option<String> {
        let say = |sel: &Selector, seen: &Seen| {
            sel.why_nothing(seen, &self.names, s, self.arch)
                .map(|w| format!("selector {:?}: {w}", sel.text()))
        };
        if self.cycles.is_empty() {
            return say(&self.from, &self.seen_from);
        }
        if self.cycles.iter().all(|c| c.end_ns.is_none()) {
            return self
                .to
                .iter()
                .zip(&self.seen_to)
                .find_map(|(t, seen)| say(t, seen));
        }
        None
    }

    /// Names descriptors from a recording's snapshot.
    pub fn add_snapshot(&mut self, s: &crate::snapshot::Snapshot) {
        if let Some(p) = self.paths.as_mut() {
            p.add_snapshot(s);
        }
    }

    /// True when a selector filters on `path` but no input named any descriptor.
    pub fn paths_unknown(&self) -> bool {
        self.paths.as_ref().is_some_and(|p| p.is_empty())
    }

    pub(super) fn key(&self, e: &Event) -> i64 {
        match self.same {
            Same::Thread => e.tid as i64,
            Same::Tgid if e.tgid >= 0 => e.tgid as i64,
            Same::Tgid => e.tid as i64,
            Same::Any => 0,
        }
    }

    /// Feeds one event.
    pub fn push(&mut self, e: &Event, s: &Interner) {
        // The trace's names only serve a selector that never met its event.
        if !self.seen_from.met() || !self.seen_to.iter().all(Seen::met) {
            self.names.observe(e);
        }
        self.seen_from.observe(&self.from, e, s, self.arch);
        for (t, seen) in self.to.iter().zip(&mut self.seen_to) {
            seen.observe(t, e, s, self.arch);
        }
        if let Some(p) = self.paths.as_mut() {
            p.observe(e, s, self.arch);
        }
        let paths = self.paths.as_ref();
        if self.from.matches_in(e, s, self.arch, paths) {
            let k = self.key(e);
            if let Some(i) = self.open.remove(&k) {
                self.cycles[i].horizon_ns = e.ts;
            }
            self.cycles.push(Cycle {
                start_ns: e.ts,
                end_ns: None,
                tid: e.tid,
                cpu: e.cpu,
                horizon_ns: e.ts,
                writes: Vec::new(),
            });
            self.open.insert(k, self.cycles.len() - 1);
            return;
        }
        if self.open.is_empty() {
            return;
        }
        if self.to.iter().any(|t| t.matches_in(e, s, self.arch, paths)) {
            let k = self.key(e);
            if let Some(i) = self.open.remove(&k) {
                let c = &mut self.cycles[i];
                c.end_ns = Some(e.ts);
                c.horizon_ns = e.ts;
            }
            return;
        }
        // Writes by the waiting thread: a timeout complaint is one.
        let is_write = match &e.kind {
            Kind::SysEnter { nr, .. } => self.arch.name(*nr) == Some("write"),
            Kind::SyscallEnter { name, .. } => {
                if self.write_name.is_none() && s.get(*name) == "write" {
                    self.write_name = Some(*name);
                }
                Some(*name) == self.write_name
            }
            _ => false,
        };
        if is_write {
            if let Some(&i) = self.open.get(&self.key(e)) {
                let c = &mut self.cycles[i];
                if c.tid == e.tid && c.writes.len() < 8 && e.ts > c.start_ns {
                    c.writes.push(e.ts - c.start_ns);
                }
            }
        }
    }

    /// Ends the stream at `last_ns`: open cycles had no reply until then.
    pub fn finish(&mut self, last_ns: u64) {
        for (_, i) in self.open.drain() {
            self.cycles[i].horizon_ns = last_ns;
        }
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
pub(super) fn complaint_offset(w: &[u64]) -> Option<(u64, usize)> {
    let first = *w.first()?;
    let top = first + (first / 50).max(20_000);
    let n = w.iter().take_while(|&&x| x <= top).count();
    (n >= 2 && n * 10 >= w.len()).then(|| (w[n / 2], n))
}

/// The deadline the data shows, if any: the thread writes (a complaint) at one offset in
/// several cycles, or many cycles end at one duration.
pub(super) fn infer_deadline(cycles: &[Cycle]) -> (Option<u64>, String) {
    let mut w: Vec<u64> = cycles
        .iter()
        .flat_map(|c| c.writes.iter().copied())
        .collect();
    w.sort_unstable();
    if let Some((m, near)) = complaint_offset(&w) {
        let d = (m + 50_000) / 100_000 * 100_000;
        return (
            Some(d),
            format!(
                "inferred: the thread wrote (a timeout log, presumably) at +{} in {near} cycles",
                dur(m)
            ),
        );
    }
    let mut d: Vec<u64> = cycles
        .iter()
        .filter_map(|c| c.end_ns.map(|e| e - c.start_ns))
        .collect();
    d.sort_unstable();
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
    (None, String::new())
}

/// Explains the cycles on a built timeline.
pub fn analyze(tl: &Timeline, s: &Interner, o: &Options, cycles: Vec<Cycle>) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let mut notes = Vec::new();
    let mut durations: Vec<u64> = cycles
        .iter()
        .filter_map(|c| c.end_ns.map(|e| e - c.start_ns))
        .collect();
    durations.sort_unstable();
    let (deadline, source) = match o.deadline_ns {
        Some(d) => (Some(d), "given".to_string()),
        None => match infer_deadline(&cycles) {
            (Some(d), why) => (Some(d), why),
            _ => {
                // No deadline known: explain the slowest 1% as outliers.
                let p99 = quantile(&durations, 0.99);
                (
                    (!durations.is_empty()).then_some(p99),
                    "none given or inferred: the cycles above p99 are explained as outliers"
                        .to_string(),
                )
            }
        },
    };
    let is_miss = |c: &Cycle| match (c.end_ns, deadline) {
        (None, _) => true,
        (Some(e), Some(d)) => e - c.start_ns > d,
        (Some(_), None) => false,
    };
    let mut st = CycleStats {
        count: cycles.len() as u64,
        replied: durations.len() as u64,
        no_reply: cycles.iter().filter(|c| c.end_ns.is_none()).count() as u64,
        misses: cycles.iter().filter(|c| is_miss(c)).count() as u64,
        min_ns: durations.first().copied().unwrap_or(0),
        p50_ns: quantile(&durations, 0.5),
        p90_ns: quantile(&durations, 0.9),
        p99_ns: quantile(&durations, 0.99),
        max_ns: durations.last().copied().unwrap_or(0),
        histogram: Vec::new(),
    };
    st.histogram = crate::measure::log_histogram(&durations, 1000);

    // Template from the good cycles: the usual duration of each link.
    let mut usual: FxHashMap<(LinkKind, String, u32), Vec<u64>> = FxHashMap::default();
    let good: Vec<&Cycle> = cycles.iter().filter(|c| !is_miss(c)).collect();
    // Enough good cycles to learn from, spread over the trace.
    let step = (good.len() / 400).max(1);
    let mut gaps_good: Vec<u64> = Vec::new();
    for c in good.iter().step_by(step) {
        let h = c.end_ns.unwrap_or(c.horizon_ns);
        let (links, _) = eng.chain(c.tid, c.start_ns, h);
        gaps_good.push(
            uncovered(&links, c.start_ns, h)
                .iter()
                .map(|(a, b)| b - a)
                .sum(),
        );
        for l in links {
            usual
                .entry(l.key.clone())
                .or_default()
                .push(l.end - l.start);
        }
    }
    let usual: FxHashMap<(LinkKind, String, u32), u64> = usual
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            (k, v[v.len() / 2])
        })
        .collect();
    let usual_gap = median_of(gaps_good);
    if good.len() < 3 && !cycles.is_empty() {
        notes.push(format!(
            "only {} good cycle(s) to learn the usual chain from: links are compared with their median over the whole trace",
            good.len()
        ));
    }

    let mut misses = Vec::new();
    let mut causes: FxHashMap<(String, Culprit), (u64, u64)> = FxHashMap::default();
    let mut cpus_blamed: FxHashMap<u32, u64> = FxHashMap::default();
    let mut unconnected = 0u64;
    for c in cycles.iter().filter(|c| is_miss(c)) {
        let dl = deadline.map(|d| c.start_ns + d);
        let end = c.end_ns.unwrap_or(c.horizon_ns);
        // No reply: look at the chain up to the deadline (where it stood then).
        let h = match (c.end_ns, dl) {
            (None, Some(d)) => d.min(end),
            _ => end,
        };
        let (mut links, chain_set) = eng.chain(c.tid, c.start_ns, h);
        let connected = links.iter().any(|l| l.end > l.start);
        if !connected {
            // The trace does not connect the chain (device interrupt, untraced hand-off):
            // every wait inside the cycle is a suspect.
            unconnected += 1;
            links = eng.all_waits(c.start_ns, h);
        }
        let mut chain = vec![Link {
            offset_ns: 0,
            ts_ns: c.start_ns,
            cpu: Some(c.cpu),
            kind: "from".into(),
            what: format!("{} by {}", o.from.text(), eng.task(c.tid)),
            duration_ns: 0,
            usual_ns: None,
            excess_ns: 0,
            pending_at_deadline: false,
            held_by: Vec::new(),
            waiter: None,
            queued_in_irq: None,
        }];
        let mut counted: Vec<(u32, u64, u64)> = Vec::new();
        let mut blamed = 0u64;
        let mut per_cause: FxHashMap<(String, Culprit), u64> = FxHashMap::default();
        // Longest first, so a wait nested in a longer one on the same CPU is not counted twice.
        let mut order: Vec<usize> = (0..links.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(links[i].end - links[i].start));
        let mut out_links: Vec<Option<Link>> = vec![None; links.len()];
        for i in order {
            let l = &links[i];
            let pending = dl.is_some_and(|d| l.start <= d && l.end > d) || l.end > end;
            let stop = if c.end_ns.is_none() {
                dl.unwrap_or(l.end).min(l.end).max(l.start)
            } else {
                l.end
            };
            let d = stop - l.start;
            let u = usual
                .get(&l.key)
                .copied()
                .unwrap_or_else(|| eng.usual_in_trace(l.kind, &l.key.1));
            // Time a CPU stall already accounts for is not this link's (see below).
            let stalled: u64 = if tl.ticks > 0 {
                tl.silences
                    .iter()
                    .filter(|x| x.cpu == l.cpu)
                    .map(|x| x.to.min(stop).saturating_sub(x.from.max(l.start)))
                    .sum()
            } else {
                0
            };
            let excess = d.saturating_sub(u).saturating_sub(stalled);
            let nested = counted.iter().any(|&(cpu, a, b)| {
                cpu == l.cpu && l.start >= a && stop <= b && l.kind == LinkKind::Run
            }) || counted.iter().any(|&(cpu, a, b)| {
                cpu == l.cpu && a >= l.start && b <= stop && l.kind != LinkKind::Run
            });
            // Significant: above 10 us and a tenth of the cycle's lateness.
            let late = match (c.end_ns, deadline) {
                (Some(e), Some(dd)) => (e - c.start_ns).saturating_sub(dd),
                _ => d,
            };
            let significant = excess > 10_000 && excess * 10 >= late.min(excess * 10);
            let mut held = Vec::new();
            if significant {
                // The part above usual, split over what held the CPU meanwhile.
                let start_excess = stop - excess;
                let mut hs = eng.holds(l, start_excess, stop);
                let total: u64 = hs.iter().map(|h| h.ns).sum();
                if total == 0 {
                    hs = vec![Hold::on_cpu("unknown", l.cpu, excess)];
                }
                scale(&mut hs, excess);
                hs.sort_by_key(|h| std::cmp::Reverse(h.ns));
                if !nested {
                    counted.push((l.cpu, l.start, stop));
                    blamed += excess;
                    for h in &hs {
                        *per_cause
                            .entry((h.category.clone(), h.culprit.clone()))
                            .or_default() += h.ns;
                    }
                    *cpus_blamed.entry(l.cpu).or_default() += excess;
                }
                held = hs;
            }
            out_links[i] = Some(Link {
                offset_ns: l.start - c.start_ns,
                ts_ns: l.start,
                cpu: Some(l.cpu),
                kind: match l.kind {
                    LinkKind::Run => "wakeup",
                    LinkKind::Work => "work",
                    LinkKind::Timer => "timer",
                }
                .into(),
                what: l.what.clone(),
                duration_ns: l.end - l.start,
                usual_ns: Some(u),
                excess_ns: if significant { excess } else { 0 },
                pending_at_deadline: pending,
                held_by: held,
                waiter: (l.tid > 0).then(|| Culprit {
                    comm: Some(eng.s.get(tl.comm(l.tid)).to_string()),
                    pid: Some(l.tid),
                    prio: tl.prios.get(&l.tid).copied(),
                    cpu: Some(l.cpu),
                    ..Default::default()
                }),
                queued_in_irq: l.irq,
            });
        }
        // A CPU of the chain that recorded nothing, not even its tick: time no tracer in
        // the machine could see.
        if tl.ticks > 0 {
            let mut cpus: Vec<u32> = links.iter().map(|l| l.cpu).collect();
            cpus.push(c.cpu);
            for sil in &tl.silences {
                let ov = sil.to.min(end).saturating_sub(sil.from.max(c.start_ns));
                if ov == 0 || !cpus.contains(&sil.cpu) {
                    continue;
                }
                let culprit = Culprit {
                    cpu: Some(sil.cpu),
                    ..Default::default()
                };
                blamed += ov;
                *per_cause
                    .entry(("cpu-stalled".to_string(), culprit.clone()))
                    .or_default() += ov;
                *cpus_blamed.entry(sil.cpu).or_default() += ov;
                chain.push(Link {
                    offset_ns: sil.from.max(c.start_ns) - c.start_ns,
                    ts_ns: sil.from.max(c.start_ns),
                    cpu: Some(sil.cpu),
                    kind: "stall".into(),
                    what: format!(
                        "CPU{} recorded nothing, not even its timer tick, while {} was on it: the (virtual) CPU did not run (host preemption, steal time) or events were lost",
                        sil.cpu,
                        eng.task(sil.tid)
                    ),
                    duration_ns: sil.to - sil.from,
                    usual_ns: Some(0),
                    excess_ns: ov,
                    pending_at_deadline: false,
                    held_by: vec![Hold {
                        category: "cpu-stalled".into(),
                        culprit,
                        ns: ov,
                    }],
                    waiter: None,
                    queued_in_irq: None,
                });
            }
        }
        if connected {
            for (ts, d, cpu, what) in eng.syscall_steps(&chain_set, c.tid, c.start_ns, h) {
                chain.push(Link {
                    offset_ns: ts - c.start_ns,
                    ts_ns: ts,
                    cpu: Some(cpu),
                    kind: "syscall".into(),
                    what,
                    duration_ns: d,
                    usual_ns: None,
                    excess_ns: 0,
                    pending_at_deadline: false,
                    held_by: Vec::new(),
                    waiter: None,
                    queued_in_irq: None,
                });
            }
        }
        // Time no wait explains: compare with the good cycles; the excess goes to what the
        // chain was doing then — computing (on-cpu), asleep until woken (blocked-on), or,
        // before anything on the chain moved, the device or peer (device/external).
        if !good.is_empty() {
            let gaps = uncovered(&links, c.start_ns, h);
            let stalled: u64 = if tl.ticks > 0 {
                tl.silences
                    .iter()
                    .map(|x| {
                        gaps.iter()
                            .map(|&(a, b)| x.to.min(b).saturating_sub(x.from.max(a)))
                            .sum::<u64>()
                    })
                    .sum()
            } else {
                0
            };
            let total: u64 = gaps
                .iter()
                .map(|(a, b)| b - a)
                .sum::<u64>()
                .saturating_sub(stalled);
            let ex = total.saturating_sub(usual_gap);
            if ex > 10_000 && ex * 10 >= (h - c.start_ns).saturating_sub(deadline.unwrap_or(0)) {
                let &(a, b) = gaps.iter().max_by_key(|(a, b)| b - a).expect("total > 0");
                let (category, culprit, what) =
                    gap_cause(&eng, &links, &chain_set, c, a, b, connected);
                let hold = Hold {
                    category: category.into(),
                    culprit: culprit.clone(),
                    ns: ex,
                };
                *per_cause
                    .entry((hold.category.clone(), culprit))
                    .or_default() += ex;
                blamed += ex;
                chain.push(Link {
                    offset_ns: a - c.start_ns,
                    ts_ns: a,
                    cpu: hold.culprit.cpu,
                    kind: "gap".into(),
                    what,
                    duration_ns: b - a,
                    usual_ns: Some(usual_gap),
                    excess_ns: ex,
                    pending_at_deadline: false,
                    held_by: vec![hold],
                    waiter: None,
                    queued_in_irq: None,
                });
            }
        }
        // Unconnected cycles list only the waits that matter.
        chain.extend(
            out_links
                .into_iter()
                .flatten()
                .filter(|l| connected || l.excess_ns > 0 || l.pending_at_deadline),
        );
        match c.end_ns {
            Some(e) => chain.push(Link {
                offset_ns: e - c.start_ns,
                ts_ns: e,
                cpu: None,
                kind: "to".into(),
                what: format!(
                    "{} (reply)",
                    o.to.iter()
                        .map(|t| t.text())
                        .collect::<Vec<_>>()
                        .join(" | ")
                ),
                duration_ns: 0,
                usual_ns: None,
                excess_ns: 0,
                pending_at_deadline: false,
                held_by: Vec::new(),
                waiter: None,
                queued_in_irq: None,
            }),
            None => {
                if let Some(d) = dl {
                    chain.push(Link {
                        offset_ns: d - c.start_ns,
                        ts_ns: d,
                        cpu: None,
                        kind: "deadline".into(),
                        what: "deadline passed with no reply".into(),
                        duration_ns: 0,
                        usual_ns: None,
                        excess_ns: 0,
                        pending_at_deadline: false,
                        held_by: Vec::new(),
                        waiter: None,
                        queued_in_irq: None,
                    });
                }
            }
        }
        chain.sort_by_key(|l| (l.offset_ns, l.kind == "to" || l.kind == "deadline"));
        for (k, ns) in per_cause {
            let e = causes.entry(k).or_default();
            e.0 += 1;
            e.1 += ns;
        }
        let late = match (c.end_ns, deadline) {
            (Some(e), Some(d)) => (e - c.start_ns).saturating_sub(d),
            (None, _) => c.horizon_ns - c.start_ns,
            _ => 0,
        };
        misses.push(Miss {
            start_ns: c.start_ns,
            duration_ns: c.end_ns.map(|e| e - c.start_ns),
            tid: c.tid,
            cpu: c.cpu,
            late_ns: late,
            blamed_ns: blamed,
            chain,
        });
    }
    let bare = misses
        .iter()
        .filter(|m| {
            !m.chain
                .iter()
                .any(|l| !matches!(l.kind.as_str(), "from" | "to" | "deadline"))
        })
        .count();
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
    misses.sort_by(|a, b| {
        b.duration_ns
            .is_none()
            .cmp(&a.duration_ns.is_none())
            .then(b.late_ns.cmp(&a.late_ns))
    });
    let causes = rank(causes);
    let context = context(tl, s, &causes, &cpus_blamed);
    let advice = advise(tl, s, &causes, &misses);
    let windows = cycles
        .iter()
        .map(|c| Window {
            start_ns: c.start_ns,
            end_ns: c.end_ns,
            horizon_ns: c.horizon_ns,
            tid: c.tid,
            cpu: c.cpu,
            miss: is_miss(c),
        })
        .collect();
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: o.from.text().to_string(),
        to: o.to.iter().map(|t| t.text().to_string()).collect(),
        deadline_ns: deadline,
        deadline_source: source,
        cycles: st,
        causes,
        misses,
        context,
        advice,
        notes,
        machine: None,
        cpus: Vec::new(),
        windows,
        top: o.top,
        noun: "cycles",
    }
}

#[cfg(test)]
mod tests {
    use super::complaint_offset;

    const US: u64 = 1_000;

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
