//! The measures of a trace read in windows, merged into the whole trace's: each window
//! settles the samples that end in its own stretch ([`Settle`](super::Settle)), so
//! counts, sums, extremes and histograms add up exactly; quantiles come from the groups'
//! merged sketches (exact while a group takes at most [`Sketch::EXACT`] distinct
//! values); the worst samples are the worst of every window's worst.

use super::report::{Group, Measure, MeasureReport, Missing, Sample};
use super::series::{merge_worst, recorder_note, sort_groups, unique_name, RECORDER};
use crate::dist::{Dist, Sketch};
use rustc_hash::{FxHashMap, FxHashSet};

/// The windows' reports of every measure, added up.
pub struct Merged {
    top: usize,
    measures: Vec<Acc>,
    /// Whether every group's quantiles are exact so far.
    exact: bool,
}

/// One measure's windows so far.
struct Acc {
    /// The first window's report, its groups taken out.
    r: MeasureReport,
    groups: Vec<(Group, Sketch)>,
    /// (metric, the thread's id and life, or the group's key) → index in `groups`.
    index: FxHashMap<(String, GroupId), usize>,
    /// What the trace lacks: the latest window's list (a window's timeline has seen
    /// every event kind the trace showed before it, [`crate::timeline::Builder::carried`]).
    missing: Vec<Missing>,
    /// The windows' notes in the order first said, each once: a note that begins with
    /// a count as the rest of its text and the counts added up (0 for other notes).
    notes: Vec<(String, Option<u64>)>,
    partial: FxHashSet<i32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum GroupId {
    Task(i32, usize),
    Key(String),
}

/// Extra fields that name the group rather than count its samples: kept from the first
/// window, not added.
const NAMING: [&str; 5] = ["tid", "syscall", "nr", "interval_ns", RECORDER];

impl Merged {
    /// Nothing merged yet; `top`: the worst samples kept per group and measure.
    pub fn new(top: usize) -> Merged {
        Merged {
            top,
            measures: Vec::new(),
            exact: true,
        }
    }

    /// Adds one window's reports (computed with a window's [`Settle`](super::Settle)).
    pub fn add(&mut self, reports: Vec<MeasureReport>) {
        for r in reports {
            match self.measures.iter().position(|a| a.r.measure == r.measure) {
                Some(i) => self.measures[i].add(r, self.top),
                None => {
                    let mut a = Acc::new(&r);
                    a.add(r, self.top);
                    self.measures.push(a);
                }
            }
        }
    }

    /// Whether every quantile is exact (no group took more distinct values than a
    /// sketch keeps exactly).
    pub fn exact(&self) -> bool {
        self.exact && (self.measures.iter()).all(|a| a.groups.iter().all(|(_, s)| s.exact()))
    }

    /// The merged reports, in the order the windows first gave them.
    pub fn finish(self) -> Vec<MeasureReport> {
        let top = self.top;
        (self.measures.into_iter()).map(|a| a.finish(top)).collect()
    }
}

impl Acc {
    fn new(r: &MeasureReport) -> Acc {
        Acc {
            r: MeasureReport {
                measure: r.measure,
                description: r.description.clone(),
                unit: r.unit.clone(),
                groups: Vec::new(),
                worst: Vec::new(),
                open: 0,
                partial_tids: Vec::new(),
                missing_events: Vec::new(),
                notes: Vec::new(),
            },
            groups: Vec::new(),
            index: FxHashMap::default(),
            missing: r.missing_events.clone(),
            notes: Vec::new(),
            partial: FxHashSet::default(),
        }
    }

    fn add(&mut self, r: MeasureReport, top: usize) {
        self.r.open += r.open;
        self.partial.extend(r.partial_tids.iter().copied());
        self.missing = r.missing_events;
        self.notes_of(r.notes);
        for g in r.groups {
            self.add_group(g, top);
        }
    }

    /// Keeps a window's notes: one that begins with a count is added to the same note
    /// of other windows; the recorder's note is made again over the merged groups. A
    /// note new here goes after the note this window said before it, else before the
    /// next one it said that is already kept, else last: notes keep the order every
    /// window says them in.
    fn notes_of(&mut self, notes: Vec<String>) {
        let split = |n: String| {
            let digits = n.bytes().take_while(u8::is_ascii_digit).count();
            match n.as_bytes().get(digits) {
                Some(b' ') if digits > 0 => (n[digits..].to_string(), n[..digits].parse().ok()),
                _ => (n, None),
            }
        };
        let own: Vec<(String, Option<u64>)> = (notes.into_iter())
            .filter(|n| !n.starts_with("the recorder's own threads"))
            .map(split)
            .collect();
        let at = |kept: &[(String, Option<u64>)], t: &str| kept.iter().position(|(k, _)| k == t);
        for (p, (text, count)) in own.iter().enumerate() {
            if let Some(i) = at(&self.notes, text) {
                if let (Some(c), Some(k)) = (self.notes[i].1.as_mut(), count) {
                    *c += k;
                }
                continue;
            }
            let before = p.checked_sub(1).and_then(|q| at(&self.notes, &own[q].0));
            let next = || own[p + 1..].iter().find_map(|(t, _)| at(&self.notes, t));
            let i = match before {
                Some(b) => b + 1,
                None => next().unwrap_or(self.notes.len()),
            };
            self.notes.insert(i, (text.clone(), *count));
        }
    }

    fn add_group(&mut self, mut g: Group, top: usize) {
        let id = match &g.task {
            Some(t) => GroupId::Task(t.tid, t.life),
            None => GroupId::Key(g.key.clone()),
        };
        let sketch = g.sketch.take().unwrap_or_default();
        let Some(&i) = self.index.get(&(g.metric.clone(), id.clone())) else {
            self.index.insert((g.metric.clone(), id), self.groups.len());
            self.groups.push((g, sketch));
            return;
        };
        let (m, s) = &mut self.groups[i];
        // A thread is named as at its latest sample: the latest window's name that had
        // one.
        if let (Some(a), Some(b)) = (m.task.as_mut(), g.task) {
            if sketch.count() > 0 || s.count() == 0 {
                a.name = b.name;
            }
        }
        s.merge(&sketch);
        m.inferred_bound_ns = match (m.inferred, g.inferred) {
            (0, _) => g.inferred_bound_ns,
            (_, 0) => m.inferred_bound_ns,
            _ => m
                .inferred_bound_ns
                .zip(g.inferred_bound_ns)
                .map(|(a, b)| a.max(b)),
        };
        m.uncertain += g.uncertain;
        m.lost += g.lost;
        m.inferred += g.inferred;
        m.worst.extend(g.worst);
        m.worst = worst_of(std::mem::take(&mut m.worst), top);
        add_extra(&mut m.extra, g.extra);
    }

    fn finish(self, top: usize) -> MeasureReport {
        let base = if self.r.unit == "ns" {
            Sketch::HIST_BASE
        } else {
            1
        };
        let mut used = FxHashSet::default();
        let mut groups: Vec<Group> = Vec::with_capacity(self.groups.len());
        // Groups no window had a sample of carried counters alone. A thread's earlier
        // life is named first, as the whole trace names the series made first.
        let mut merged: Vec<(Group, Sketch)> = (self.groups.into_iter())
            .filter(|(_, s)| s.count() > 0)
            .collect();
        merged.sort_by_key(|(g, _)| g.task.as_ref().map(|t| t.life));
        for (mut g, s) in merged {
            let d: Dist = s.dist();
            (g.count, g.min_ns, g.p50_ns, g.p90_ns) = (d.count, d.min, d.p50, d.p90);
            (g.p99_ns, g.p999_ns, g.max_ns, g.total_ns) = (d.p99, d.p999, d.max, d.total);
            g.mean_ns = d.mean();
            g.histogram = s.histogram(base);
            if let Some(t) = &g.task {
                g.key = unique_name(&mut used, t.name.clone(), g.metric.clone(), t.life);
            }
            for w in &mut g.worst {
                w.group.clone_from(&g.key);
            }
            groups.push(g);
        }
        sort_groups(&mut groups);
        // Named in the order finish_report names them: before runqueue's waits go first.
        let recorder = recorder_note(&groups);
        if self.r.measure == Measure::Runqueue {
            groups.sort_by_key(|g| super::runqueue::metric_rank(&g.metric));
        }
        // As each measure picks its worst over its groups.
        let measure = self.r.measure;
        let worst = merge_worst(&groups, top, |g| {
            measure != Measure::Runqueue || g.metric != "run"
        });
        let mut partial: Vec<i32> = self.partial.into_iter().collect();
        partial.sort_unstable();
        let mut notes: Vec<String> = recorder.into_iter().collect();
        notes.extend((self.notes.into_iter()).map(|(text, n)| match n {
            Some(n) => format!("{n}{text}"),
            None => text,
        }));
        let mut r = MeasureReport {
            groups,
            worst,
            partial_tids: partial,
            missing_events: self.missing,
            notes,
            ..self.r
        };
        super::count_notes(&mut r);
        r
    }
}

/// The `top` largest of `v`, largest first (among equals in the order a group's
/// worst samples are chosen by, `series::canon`).
fn worst_of(mut v: Vec<Sample>, top: usize) -> Vec<Sample> {
    let key = |a: &Sample| {
        (
            std::cmp::Reverse(a.value_ns),
            a.ts_ns,
            a.end_ns,
            a.tid,
            a.cpu,
        )
    };
    // Windows settle disjoint samples: none is twice in one group.
    v.sort_by_key(key);
    v.truncate(top);
    v
}

/// Adds a window's extra fields to the merged ones: counts add up (also inside maps),
/// naming fields ([`NAMING`]) stay as first seen.
fn add_extra(
    into: &mut serde_json::Map<String, serde_json::Value>,
    from: serde_json::Map<String, serde_json::Value>,
) {
    use serde_json::Value;
    for (k, v) in from {
        let naming = NAMING.contains(&k.as_str());
        match (into.get_mut(&k), v) {
            (None, v) => {
                into.insert(k, v);
            }
            (Some(_), _) if naming => {}
            (Some(Value::Number(a)), Value::Number(b)) => {
                if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                    *a = (x + y).into();
                }
            }
            (Some(Value::Object(a)), Value::Object(b)) => add_extra(a, b),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Merged;
    use crate::measure::{compute, Measure, Options, Settle};
    use crate::testkit::{pass, three_cpu_chain};

    /// The runqueue waits of 60 request cycles (one in ten held 3 ms by a hog) measured
    /// whole, and as two stretches of the same timeline merged: each wait is counted by
    /// the stretch it ends in, so counts, sums, quantiles, histograms and the worst
    /// samples are the whole timeline's.
    #[test]
    fn two_stretches_merge_into_the_whole() {
        let hogged: Vec<usize> = (5..60).step_by(10).collect();
        let p = pass(&three_cpu_chain(60, &hogged, 3_000));
        let o = Options {
            measures: vec![Measure::Runqueue],
            ..Options::default()
        };
        let whole = compute(&p.tl, &p.strings, &o, &[], None).remove(0);
        let first = p.tl.first_ts.unwrap();
        let mid = first + (p.tl.last_ts - first) / 2;
        let mut m = Merged::new(o.top);
        for settle in [
            Settle {
                lo: 0,
                cut: mid,
                spans: None,
            },
            Settle {
                spans: None,
                lo: mid,
                cut: u64::MAX,
            },
        ] {
            let o = Options {
                settle,
                ..o.clone()
            };
            m.add(compute(&p.tl, &p.strings, &o, &[], None));
        }
        assert!(m.exact());
        let merged = m.finish().remove(0);
        let key = |g: &crate::measure::Group| {
            let worst: Vec<(u64, u64)> = g.worst.iter().map(|w| (w.ts_ns, w.value_ns)).collect();
            let d = (
                g.count, g.min_ns, g.p50_ns, g.p90_ns, g.p99_ns, g.max_ns, g.total_ns,
            );
            (
                g.key.clone(),
                g.metric.clone(),
                d,
                g.histogram.clone(),
                worst,
                g.extra.clone(),
            )
        };
        let worker = (whole.groups.iter())
            .find(|g| g.key.starts_with("kworker/1:1[40]") && g.metric == "runnable")
            .unwrap();
        // Fifty-four waits of 8 us and six behind the hog.
        assert_eq!((worker.count, worker.max_ns), (60, 3_000_000));
        let (a, b): (Vec<_>, Vec<_>) = (
            whole.groups.iter().map(key).collect(),
            merged.groups.iter().map(key).collect(),
        );
        assert_eq!(a, b);
        assert_eq!(whole.open, merged.open);
        assert_eq!(whole.notes, merged.notes);
        let worst = |r: &crate::measure::MeasureReport| -> Vec<(u64, String)> {
            r.worst
                .iter()
                .map(|w| (w.value_ns, w.group.clone()))
                .collect()
        };
        assert_eq!(worst(&whole), worst(&merged));
    }
}
