//! `whylate diff A B`: two traces of the same workload (before and after a fix, an old and a
//! new kernel) explained the same way and set side by side: the latency distributions, the
//! causes that appeared, vanished or changed, what every CPU spent its time on, where the
//! interrupts were handled, and a one-line verdict.
//!
//! Causes and CPU shares are keyed by name without pids (`hog`, `softirq NET_RX`,
//! `irq virtio3-tx`): the two runs have different pids, and a kernel upgrade can renumber
//! interrupt lines.

use crate::explain::{self, Category, Culprit, CycleStats, ExplainReport, Mode};
use crate::read::{OpenOptions, Opened, ReadError};
use crate::timeline::{irq_label, CpuProfile};
use crate::units::dur;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::fmt::Write;

/// One side's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The trace, by the name its input was opened under.
    pub path: String,
    /// Events read.
    pub events: u64,
    /// The deadline it was judged by.
    pub deadline_ns: Option<u64>,
    /// How that deadline was chosen.
    pub deadline_source: String,
    /// Counts and quantiles.
    pub cycles: CycleStats,
    /// What its reader could not understand (null when everything was read).
    pub unread: Option<crate::read::inputs::Unread>,
}

/// One histogram bucket, both sides.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BinPair {
    /// Lower bound, ns.
    pub lo: u64,
    /// Upper bound, ns.
    pub hi: u64,
    /// Count in A.
    pub a: u64,
    /// Count in B.
    pub b: u64,
}

/// A cause on one side.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CauseSide {
    /// Misses it held up.
    pub misses: u64,
    /// Its excess over all misses, ns, summed per miss (a wait that held up several
    /// overlapping misses counts once per miss).
    pub total_excess_ns: u64,
    /// The same with each wait counted once, as `explain` ranks its causes: what the
    /// comparison ranks and judges by.
    pub once_ns: u64,
    /// Its share of all blamed excess (of `once_ns`).
    pub share: f64,
    /// The culprit as that side names it (with pid).
    pub label: String,
}

/// A cause compared.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CauseDiff {
    /// `runqueue-wait`, `softirq`, ...
    pub category: Category,
    /// The culprit without pids (`hog`, `softirq NET_RX`).
    pub culprit: String,
    /// Where it held the chain up.
    pub cpu: Option<u32>,
    /// `appeared`, `vanished`, `grew`, `shrank` or `same`.
    pub status: &'static str,
    /// In A.
    pub a: Option<CauseSide>,
    /// In B.
    pub b: Option<CauseSide>,
}

/// A CPU compared.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuDiff {
    /// The CPU.
    pub cpu: u32,
    /// Busy share in A (None: nothing recorded there).
    pub busy_a: Option<f64>,
    /// Busy share in B.
    pub busy_b: Option<f64>,
    /// Holders whose share moved by a point or more, largest move first.
    pub changes: Vec<ShareChange>,
}

/// A holder's share of one CPU, both sides.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ShareChange {
    /// `hog`, `softirq NET_RX`, `irq virtio3-tx`.
    pub what: String,
    /// `task`, `hardirq`, `softirq`.
    pub kind: &'static str,
    /// Share in A.
    pub a: f64,
    /// Share in B.
    pub b: f64,
}

/// Where one interrupt line was handled, both sides.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IrqMove {
    /// `virtio3-tx` or `irq 16`.
    pub irq: String,
    /// (CPU, handler runs) in A.
    pub a: Vec<(u32, u64)>,
    /// In B.
    pub b: Vec<(u32, u64)>,
}

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    /// One line: the misses before and after, and the cause that made the difference.
    pub verdict: String,
    /// What a cycle is (`cycles`, `timer periods`, ...).
    pub noun: &'static str,
    /// The first trace.
    pub a: Side,
    /// The second.
    pub b: Side,
    /// Both histograms on the same buckets.
    pub histogram: Vec<BinPair>,
    /// Causes keyed without pids, largest change first.
    pub causes: Vec<CauseDiff>,
    /// CPUs whose time moved.
    pub cpus: Vec<CpuDiff>,
    /// Interrupt lines handled on other CPUs than before.
    pub irqs: Vec<IrqMove>,
    /// Machine differences from the record-time snapshots (kernel, irqbalance, affinity).
    pub machine: Vec<String>,
    /// Where either analysis is blind, prefixed `A:` or `B:`.
    pub notes: Vec<String>,
}

/// Explains both traces in `mode` and compares them. Without a deadline in the mode, B is
/// judged by the deadline A's analysis chose, so the miss counts compare.
pub fn diff(
    a: Opened,
    b: Opened,
    open: &OpenOptions,
    mode: &Mode,
) -> Result<DiffReport, ReadError> {
    let (na, nb) = (side_name(&a), side_name(&b));
    let ra = explain::explain_mode(a, open, mode).map_err(naming(&na))?;
    let mb = if mode.deadline_ns().is_none() && ra.deadline_ns.is_some() {
        mode.with_deadline(ra.deadline_ns)
    } else {
        mode.clone()
    };
    let rb = explain::explain_mode(b, open, &mb).map_err(naming(&nb))?;
    Ok(compare(na, &ra, nb, &rb))
}

/// What a side is called: its input's name (its inputs', joined, when several).
fn side_name(o: &Opened) -> String {
    let names: Vec<String> = o.names().iter().map(|n| n.display().to_string()).collect();
    names.join(" + ")
}

/// A selector's refusal names the side it came from: the same selector may match in A and
/// not in B. (Other read errors name their file already.)
fn naming(name: &str) -> impl Fn(ReadError) -> ReadError + '_ {
    move |e| match e {
        ReadError::NoMatch { why } => ReadError::NoMatch {
            why: format!("{name}: {why}"),
        },
        e => e,
    }
}

/// `[digits]` removed: `hog[4242] (nice 0)` → `hog (nice 0)`.
fn strip_pids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        match tail.find(']') {
            Some(j) if j > 0 && tail[..j].bytes().all(|c| c.is_ascii_digit() || c == b'-') => {
                rest = &tail[j + 1..];
            }
            _ => {
                out.push('[');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The culprit's name for keying: no pid, no priority (a fix may change the priority of
/// the very task it is about), the irq by name.
fn culprit_key(k: &Culprit) -> String {
    if let Some(comm) = &k.comm {
        return comm.clone();
    }
    if let Some(i) = k.irq {
        return irq_label(i, k.irq_name.as_deref().unwrap_or(""));
    }
    strip_pids(&k.label())
}

/// Folded cause key (category, culprit without pid, CPU) -> distinct misses it held.
type Folded = FxHashMap<(Category, String, Option<u32>), u64>;

/// Misses per folded cause: a miss that two pids of one name both held counts once.
fn distinct_misses(r: &ExplainReport) -> Folded {
    let mut n = Folded::default();
    for m in &r.misses {
        let mut keys: Vec<_> = (m.blame.iter())
            .map(|((cat, c), _)| (*cat, culprit_key(c), c.cpu))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            *n.entry(k).or_default() += 1;
        }
    }
    n
}

/// No verdict when a side measured nothing: a cause "removed" there was never looked
/// for. Says which side is empty and why.
fn one_side_empty(a: &ExplainReport, b: &ExplainReport) -> Option<String> {
    let why = |r: &ExplainReport| match (r.events, r.cycles.count) {
        (0, _) => Some("it holds no event".to_string()),
        (_, 0) => Some(format!(
            "none of its {} events made one (the selectors matched nothing there)",
            r.events
        )),
        _ => None,
    };
    let (wa, wb) = (why(a), why(b));
    if wa.is_none() && wb.is_none() {
        return None;
    }
    let mut v = format!("no verdict: a comparison needs {} on both sides", a.noun);
    for (side, w) in [("A", wa), ("B", wb)] {
        if let Some(w) = w {
            let _ = write!(v, "; {side} has none: {w}");
        }
    }
    Some(v)
}

/// Compares two reports.
pub fn compare(pa: String, a: &ExplainReport, pb: String, b: &ExplainReport) -> DiffReport {
    let side = |path: String, r: &ExplainReport| Side {
        path,
        events: r.events,
        deadline_ns: r.deadline_ns,
        deadline_source: r.deadline_source.clone(),
        cycles: CycleStats {
            histogram: Vec::new(),
            ..r.cycles.clone()
        },
        unread: r.unread.clone(),
    };
    // Histograms: the union of buckets (both come from the same log scale).
    let mut bins: Vec<BinPair> = Vec::new();
    for (r, is_a) in [(a, true), (b, false)] {
        for x in &r.cycles.histogram {
            let i = match bins.iter().position(|p| p.lo == x.lo && p.hi == x.hi) {
                Some(i) => i,
                None => {
                    bins.push(BinPair {
                        lo: x.lo,
                        hi: x.hi,
                        a: 0,
                        b: 0,
                    });
                    bins.len() - 1
                }
            };
            if is_a {
                bins[i].a += x.count;
            } else {
                bins[i].b += x.count;
            }
        }
    }
    bins.sort_by_key(|p| (p.lo, p.hi));

    let mut causes: Vec<CauseDiff> = Vec::new();
    for (r, is_a) in [(a, true), (b, false)] {
        let distinct = distinct_misses(r);
        for c in &r.causes {
            let (category, culprit, cpu) = (c.category, culprit_key(&c.culprit), c.culprit.cpu);
            let key = (category, culprit.clone(), cpu);
            let i = match causes
                .iter()
                .position(|d| d.category == category && d.culprit == culprit && d.cpu == cpu)
            {
                Some(i) => i,
                None => {
                    causes.push(CauseDiff {
                        category,
                        culprit,
                        cpu,
                        status: "same",
                        a: None,
                        b: None,
                    });
                    causes.len() - 1
                }
            };
            let slot = if is_a {
                &mut causes[i].a
            } else {
                &mut causes[i].b
            };
            let x = slot.get_or_insert(CauseSide {
                misses: 0,
                total_excess_ns: 0,
                once_ns: 0,
                share: 0.0,
                label: c.culprit.label(),
            });
            // Two rows of one side can fold into one key (two pids of one name): a miss
            // both held counts once.
            x.misses = match distinct.get(&key) {
                Some(&n) => n,
                None => x.misses + c.count,
            };
            x.total_excess_ns += c.total_excess_ns;
            x.once_ns += c.once_ns;
            x.share += c.share;
        }
    }
    for d in &mut causes {
        d.status = match (&d.a, &d.b) {
            (Some(_), None) => "vanished",
            (None, Some(_)) => "appeared",
            (Some(x), Some(y)) if y.misses > x.misses => "grew",
            (Some(x), Some(y)) if y.misses < x.misses => "shrank",
            _ => "same",
        };
    }
    order_causes(&mut causes);

    let cpus = cpu_diffs(&a.cpus, &b.cpus);
    let irqs = irq_moves(&a.cpus, &b.cpus);
    let machine = machine_diffs(a, b);
    let mut notes: Vec<String> = a.notes.iter().map(|n| format!("A: {n}")).collect();
    notes.extend(b.notes.iter().map(|n| format!("B: {n}")));
    if a.deadline_ns != b.deadline_ns {
        notes.push(format!(
            "the two sides were judged by different deadlines ({} and {}): give --deadline to compare misses",
            a.deadline_ns.map_or("none".into(), dur),
            b.deadline_ns.map_or("none".into(), dur)
        ));
    }
    let verdict = verdict(a, b, &causes, &cpus);
    DiffReport {
        verdict,
        noun: a.noun,
        a: side(pa, a),
        b: side(pb, b),
        histogram: bins,
        causes,
        cpus,
        irqs,
        machine,
        notes,
    }
}

/// Shares that moved by at least a point.
fn cpu_diffs(a: &[CpuProfile], b: &[CpuProfile]) -> Vec<CpuDiff> {
    let mut ids: Vec<u32> = a.iter().chain(b).map(|p| p.cpu).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::new();
    for cpu in ids {
        let pa = a.iter().find(|p| p.cpu == cpu);
        let pb = b.iter().find(|p| p.cpu == cpu);
        let mut whats: Vec<(&str, &'static str)> = pa
            .into_iter()
            .chain(pb)
            .flat_map(|p| p.shares.iter().map(|s| (s.what.as_str(), s.kind)))
            .collect();
        whats.sort_unstable();
        whats.dedup();
        let get = |p: Option<&CpuProfile>, w: &str, k: &str| {
            p.and_then(|p| p.shares.iter().find(|s| s.what == w && s.kind == k))
                .map_or(0.0, |s| s.share)
        };
        let mut changes: Vec<ShareChange> = whats
            .into_iter()
            .map(|(w, k)| ShareChange {
                what: w.to_string(),
                kind: k,
                a: get(pa, w, k),
                b: get(pb, w, k),
            })
            .filter(|c| (c.b - c.a).abs() >= 0.01)
            .collect();
        changes.sort_by(|x, y| {
            (y.b - y.a)
                .abs()
                .total_cmp(&(x.b - x.a).abs())
                .then(x.what.cmp(&y.what))
        });
        let (ba, bb) = (pa.map(|p| p.busy), pb.map(|p| p.busy));
        let busy_moved = (ba.unwrap_or(0.0) - bb.unwrap_or(0.0)).abs() >= 0.01;
        if !changes.is_empty() || busy_moved || ba.is_none() != bb.is_none() {
            out.push(CpuDiff {
                cpu,
                busy_a: ba,
                busy_b: bb,
                changes,
            });
        }
    }
    out
}

/// Interrupt lines whose busiest CPU changed.
fn irq_moves(a: &[CpuProfile], b: &[CpuProfile]) -> Vec<IrqMove> {
    let place = |ps: &[CpuProfile]| {
        let mut m: FxHashMap<String, Vec<(u32, u64)>> = FxHashMap::default();
        for p in ps {
            for i in &p.irqs {
                m.entry(if i.name.is_empty() {
                    format!("irq {}", i.irq)
                } else {
                    i.name.clone()
                })
                .or_default()
                .push((p.cpu, i.count));
            }
        }
        for v in m.values_mut() {
            v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        }
        m
    };
    let (ma, mb) = (place(a), place(b));
    let mut names: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for n in names {
        let (va, vb) = (
            ma.get(n).cloned().unwrap_or_default(),
            mb.get(n).cloned().unwrap_or_default(),
        );
        // Only a line seen on both sides can have moved; one seen once is just traffic.
        if va.is_empty() || vb.is_empty() {
            continue;
        }
        if va[0].0 != vb[0].0 {
            out.push(IrqMove {
                irq: n.clone(),
                a: va,
                b: vb,
            });
        }
    }
    out
}

fn machine_diffs(a: &ExplainReport, b: &ExplainReport) -> Vec<String> {
    let (Some(ma), Some(mb)) = (&a.machine, &b.machine) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if ma.kernel != mb.kernel {
        out.push(format!("kernel {} → {}", ma.kernel, mb.kernel));
    }
    if ma.online_cpus != mb.online_cpus {
        out.push(format!(
            "online CPUs {} → {}",
            ma.online_cpus, mb.online_cpus
        ));
    }
    if ma.irqbalance != mb.irqbalance {
        out.push(format!(
            "irqbalance {} → {}",
            running(ma.irqbalance),
            running(mb.irqbalance)
        ));
    }
    for ia in &ma.irqs {
        if let Some(ib) = mb
            .irqs
            .iter()
            .find(|x| x.name == ia.name && !x.name.is_empty())
        {
            if ia.effective != ib.effective || ia.affinity != ib.affinity {
                out.push(format!(
                    "IRQ {} routed to CPU {} (allowed {}) → CPU {} (allowed {})",
                    ia.name,
                    ia.effective.as_deref().unwrap_or("?"),
                    ia.affinity.as_deref().unwrap_or("?"),
                    ib.effective.as_deref().unwrap_or("?"),
                    ib.affinity.as_deref().unwrap_or("?"),
                ));
            }
        }
    }
    out
}

fn running(b: bool) -> &'static str {
    if b {
        "running"
    } else {
        "not running"
    }
}

/// A fraction as a percentage with one decimal (`0.123` is `12.3%`): public so that
/// whylate-report's text writes the numbers as the verdict does.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A cause by its category, culprit and CPU (`runqueue-wait hog on CPU1`): public so
/// that whylate-report's text names causes as the verdict does.
pub fn cause_name(d: &CauseDiff) -> String {
    named(d.category, &d.culprit, d.cpu)
}

/// `runqueue-wait hog on CPU1`, `softirq NET_RX on CPU1`, `cpu-idle on CPU1`.
fn named(category: Category, culprit: &str, cpu: Option<u32>) -> String {
    let mut s = if culprit == "-" || culprit.is_empty() {
        category.to_string()
    } else if culprit.starts_with(category.id()) {
        culprit.to_string()
    } else {
        format!("{category} {culprit}")
    };
    if let Some(c) = cpu {
        let _ = write!(s, " on CPU{c}");
    }
    s
}

/// A cause that names something a fix can act on (a task, an interrupt, a softirq, a code
/// path), as opposed to the machine itself (an idle or stalled CPU, a late timer with no
/// visible reason, lost events).
/// Causes by how much their excess (each wait counted once) moved, the blind spots last
/// (as explain ranks them).
fn order_causes(causes: &mut [CauseDiff]) {
    let excess = |s: &Option<CauseSide>| s.as_ref().map_or(0, |x| x.once_ns) as i128;
    causes.sort_by(|x, y| {
        let dx = (excess(&x.b) - excess(&x.a)).abs();
        let dy = (excess(&y.b) - excess(&y.a)).abs();
        let blind = |d: &CauseDiff| explain::is_blind_spot(d.category);
        blind(x)
            .cmp(&blind(y))
            .then(dy.cmp(&dx))
            .then(x.category.cmp(&y.category))
            .then(x.culprit.cmp(&y.culprit))
    });
}

/// A cause a fix can act on: a named holder, not where the trace is blind.
fn actionable(d: &CauseDiff) -> bool {
    d.culprit != "-" && !d.culprit.is_empty() && !explain::is_blind_spot(d.category)
}

fn verdict(a: &ExplainReport, b: &ExplainReport, causes: &[CauseDiff], cpus: &[CpuDiff]) -> String {
    if let Some(v) = one_side_empty(a, b) {
        return v;
    }
    let (ma, mb) = (a.cycles.misses, b.cycles.misses);
    let mut v = format!("misses {ma} → {mb}");
    if a.cycles.count != b.cycles.count {
        let _ = write!(v, " (of {} → {} {}", a.cycles.count, b.cycles.count, a.noun);
        if a.cycles.count > 0 && b.cycles.count > 0 {
            let _ = write!(
                v,
                "; {} → {}",
                pct(ma as f64 / a.cycles.count as f64),
                pct(mb as f64 / b.cycles.count as f64)
            );
        }
        v.push(')');
    }
    let ex = |s: &Option<CauseSide>| s.as_ref().map_or(0, |x| x.once_ns);
    let ms = |s: &Option<CauseSide>| s.as_ref().map_or(0, |x| x.misses);
    // In each direction, what a fix acts on before what the machine did (an idle or
    // stalled vCPU), then the largest move in excess.
    let pick = |down: bool| {
        causes
            .iter()
            .filter(|d| {
                if down {
                    ex(&d.a) > ex(&d.b)
                } else {
                    ex(&d.b) > ex(&d.a)
                }
            })
            .max_by_key(|d| (actionable(d), ex(&d.a).abs_diff(ex(&d.b))))
    };
    let (down, up) = (pick(true), pick(false));
    let removed = |v: &mut String, d: &CauseDiff| {
        if d.b.is_none() {
            let _ = write!(
                v,
                "; the change removed {} ({} misses, {} of excess in A)",
                cause_name(d),
                ms(&d.a),
                dur(ex(&d.a))
            );
            // Where that holder's CPU time went, when the profiles say.
            if let Some(m) = moved(d, cpus) {
                let _ = write!(v, "; {m}");
            }
        } else {
            let _ = write!(
                v,
                "; {} shrank ({} → {} misses, {} → {})",
                cause_name(d),
                ms(&d.a),
                ms(&d.b),
                dur(ex(&d.a)),
                dur(ex(&d.b))
            );
        }
    };
    let added = |v: &mut String, d: &CauseDiff| {
        if d.a.is_none() {
            let _ = write!(
                v,
                "; new in B: {} ({} misses, {} of excess)",
                cause_name(d),
                ms(&d.b),
                dur(ex(&d.b))
            );
        } else {
            let _ = write!(
                v,
                "; {} grew ({} → {} misses, {} → {})",
                cause_name(d),
                ms(&d.a),
                ms(&d.b),
                dur(ex(&d.a)),
                dur(ex(&d.b))
            );
        }
    };
    if ma == mb && down.is_none() && up.is_none() {
        v.push_str(" (unchanged)");
        return v;
    }
    // The side the misses moved to first; a change that removed one cause and let another
    // grow says both.
    if mb <= ma {
        if let Some(d) = down {
            removed(&mut v, d);
        }
        if let Some(u) = up.filter(|u| actionable(u)) {
            added(&mut v, u);
        } else if mb > 0 {
            if let Some(top) = b.causes.first() {
                let _ = write!(
                    v,
                    "; left: {} ({} misses)",
                    named(top.category, &culprit_key(&top.culprit), top.culprit.cpu),
                    top.count
                );
            }
        }
    } else {
        if let Some(u) = up {
            added(&mut v, u);
        }
        if let Some(d) = down.filter(|d| actionable(d)) {
            removed(&mut v, d);
        }
    }
    v
}

/// `softirq NET_RX on CPU1: 4.1% → 0.0% of the CPU`, when the vanished cause's holder lost
/// its share of that CPU.
fn moved(d: &CauseDiff, cpus: &[CpuDiff]) -> Option<String> {
    let cpu = d.cpu?;
    let c = cpus.iter().find(|c| c.cpu == cpu)?;
    let ch = c.changes.iter().find(|x| x.what == d.culprit)?;
    Some(format!(
        "{} held CPU{cpu} {} of the time in A, {} in B",
        ch.what,
        pct(ch.a),
        pct(ch.b)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cause with `a`/`b` ns of excess (None: absent on that side).
    fn cause(category: &str, culprit: &str, a: Option<u64>, b: Option<u64>) -> CauseDiff {
        let side = |ns: u64| CauseSide {
            misses: 1,
            total_excess_ns: ns,
            once_ns: ns,
            share: 0.0,
            label: culprit.to_string(),
        };
        CauseDiff {
            category: Category::parse(category).unwrap(),
            culprit: culprit.to_string(),
            cpu: Some(1),
            status: "same",
            a: a.map(side),
            b: b.map(side),
        }
    }

    /// Causes compare by their time counted once, as explain ranks them: a wait spread
    /// over many overlapping misses (an idle CPU slow to wake, once per late period) sums
    /// to more than it held, and must not outrank the cause that held the time.
    #[test]
    fn causes_compare_by_the_time_they_held_counted_once() {
        let summed = |mut d: CauseDiff, a: u64| {
            d.a.as_mut().unwrap().total_excess_ns = a;
            d
        };
        // The idle CPU: 265 ms summed over the overlapping misses in A, 70 ms held.
        let idle = summed(
            cause("cpu-idle", "CPU0", Some(70_000_000), None),
            265_000_000,
        );
        // The preempted lock holder: 200 ms summed, 158 ms held.
        let hold = summed(
            cause("runqueue-wait", "inv-lo", Some(158_000_000), None),
            200_000_000,
        );
        let mut c = vec![idle, hold];
        order_causes(&mut c);
        assert_eq!(c[0].culprit, "inv-lo");
        assert_eq!(c[1].culprit, "CPU0");
    }

    /// Blind spots come after every cause, however much they moved, and are not what a
    /// fix acts on.
    #[test]
    fn blind_spots_rank_last_and_are_not_actionable() {
        let mut c = vec![
            cause("switch-in-untraced", "CPU1", Some(1_000), Some(900_000)),
            cause("runqueue-wait", "hog", Some(5_000), None),
            cause("softirq", "softirq NET_RX", Some(400_000), Some(1_000)),
            cause("trace-cut", "CPU0", None, Some(2_000_000)),
        ];
        order_causes(&mut c);
        let order: Vec<&str> = c.iter().map(|d| d.category.id()).collect();
        assert_eq!(
            order,
            [
                "softirq",
                "runqueue-wait",
                "trace-cut",
                "switch-in-untraced"
            ]
        );
        let acts: Vec<bool> = c.iter().map(actionable).collect();
        assert_eq!(acts, [true, true, false, false]);
    }

    #[test]
    fn a_selector_refused_in_one_trace_names_that_trace() {
        use crate::testkit;
        let a = testkit::opened(&testkit::three_cpu_chain(3, &[], 0));
        // B: the same workload without the reply's exits.
        let b_text: String = (testkit::three_cpu_chain(3, &[], 0).lines())
            .filter(|l| !l.contains("sys_read ->"))
            .map(|l| format!("{l}\n"))
            .collect();
        let open = OpenOptions::default();
        let b = crate::read::Opened::bytes("b.txt", b_text.into_bytes(), &open).unwrap();
        let mode = Mode::Cycles(testkit::chain_options(Some(500_000)));
        let Err(ReadError::NoMatch { why }) = diff(a, b, &open, &mode) else {
            panic!("B has no reply events, and the selector was not refused")
        };
        let named = "b.txt: selector ";
        assert!(why.starts_with(named), "{why}");
    }

    #[test]
    fn pids_are_stripped_but_other_brackets_stay() {
        assert_eq!(strip_pids("hog[4242] (nice 0)"), "hog (nice 0)");
        assert_eq!(
            strip_pids("non-preemptible kernel code while whylate[4996] ran"),
            "non-preemptible kernel code while whylate ran"
        );
        assert_eq!(strip_pids("a[x] b[] c[12"), "a[x] b[] c[12");
    }

    fn chain_report(text: &str) -> ExplainReport {
        let o = crate::testkit::chain_options(Some(1_000_000));
        explain::explain(crate::testkit::opened(text), &Default::default(), &o).unwrap()
    }

    #[test]
    fn no_verdict_when_one_side_measured_nothing() {
        let t = crate::testkit::three_cpu_chain(6, &[4], 3_000);
        let a = chain_report(&t);
        // B has the events, but none of the client's: no cycle at all.
        let b = chain_report(&t.replace("c-5", "d-5"));
        assert_eq!((a.cycles.count, b.cycles.count), (6, 0));
        let d = compare("a".into(), &a, "b".into(), &b);
        assert!(
            d.verdict.starts_with(
                "no verdict: a comparison needs cycles on both sides; B has none: none of its"
            ),
            "{}",
            d.verdict
        );
        assert!(!d.verdict.contains("removed"), "{}", d.verdict);
    }

    #[test]
    fn a_cause_folded_over_pids_counts_each_miss_once() {
        // Two pids of one name both held the one miss: folded, the cause held 1 miss.
        let mut a = chain_report(&crate::testkit::three_cpu_chain(6, &[4], 3_000));
        let row = a
            .causes
            .iter()
            .find(|c| c.culprit.comm.as_deref() == Some("hog"))
            .unwrap();
        let mut twin = row.clone();
        twin.culprit.pid = Some(61);
        a.causes.push(twin.clone());
        for m in &mut a.misses {
            m.blame.push(((twin.category, twin.culprit.clone()), 1_000));
        }
        assert_eq!(a.cycles.misses, 1);
        let d = compare("a".into(), &a, "b".into(), &a);
        let hog = d.causes.iter().find(|c| c.culprit == "hog").unwrap();
        assert_eq!(hog.a.as_ref().unwrap().misses, 1, "{:?}", d.causes);
    }
}
