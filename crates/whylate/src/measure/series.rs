//! Samples collected into named series, and a series summarised into a group (quantiles, histogram, the worst samples in detail).

use super::cx::Cx;
use super::report::{Group, Measure, MeasureReport, Missing, Sample, TaskKey};
use crate::dist::{log_histogram, Bucket, Dist, Sketch};
use crate::event::Sym;
use crate::timeline::{span, Timeline};
use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug)]
pub(super) struct Raw {
    pub(super) ts: u64,
    pub(super) end: u64,
    pub(super) value: u64,
    pub(super) cpu: u32,
    pub(super) tid: i32,
    pub(super) comm: Sym,
    /// Span or edge index (see `src`).
    pub(super) idx: u32,
    pub(super) src: Src,
    pub(super) unc: Unc,
}

/// Why a sample may be off: it crosses lost events (the trace dropped events there), or
/// an endpoint was inferred because the kernel does not trace it (with how far off that
/// can be, when known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Unc {
    /// Crosses a lost-events window.
    pub(super) lost: bool,
    /// An endpoint was inferred.
    pub(super) inferred: bool,
    /// How far the inferred endpoint can be off, ns (unknown: `None`).
    pub(super) bound: Option<u64>,
}

impl Unc {
    /// Crossing lost events when `lost`.
    pub(super) fn lost(lost: bool) -> Unc {
        Unc {
            lost,
            ..Unc::default()
        }
    }

    /// Whether a sample of `value` is uncertain: see [`super::report::uncertain`].
    pub(super) fn uncertain(&self, value: u64) -> bool {
        super::report::uncertain(self.lost, self.inferred.then_some(self.bound), value)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Src {
    Span,
    Edge,
    /// A system call (an index into the timeline's `syscalls`).
    Syscall,
    None,
}

/// A stored sample: 16 bytes. Where the rest of a [`Raw`] follows from the span or edge it
/// points at, only the value and the index are kept; other samples are kept whole in the
/// series' `synth` and `idx` points there. Millions of samples stay cheap this way.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slim {
    pub(super) value: u64,
    pub(super) idx: u32,
    /// 0 span, 1 edge, 2 synth, 3 system call; bit 7: uncertain, bit 6: crosses lost
    /// events, bit 5: an inferred endpoint.
    pub(super) tag: u8,
}

pub(super) const SLIM_SYNTH: u8 = 2;

pub(super) const SLIM_SYSCALL: u8 = 3;

pub(super) const SLIM_UNCERTAIN: u8 = 0x80;

pub(super) const SLIM_LOST: u8 = 0x40;

pub(super) const SLIM_INFERRED: u8 = 0x20;

/// The bits of a [`Slim`]'s tag that say where the sample is.
pub(super) const SLIM_KIND: u8 = 0x1f;

/// The uncertainty bits of a [`Slim`]'s tag for `u` and `value`.
fn unc_tag(u: &Unc, value: u64) -> u8 {
    let mut t = 0;
    if u.uncertain(value) {
        t |= SLIM_UNCERTAIN;
    }
    if u.lost {
        t |= SLIM_LOST;
    }
    if u.inferred {
        t |= SLIM_INFERRED;
    }
    t
}

pub(super) struct Series {
    pub(super) key: String,
    pub(super) metric: &'static str,
    pub(super) raw: Vec<Slim>,
    /// Samples that are whole system calls, as they are (value = duration), by call
    /// index: 4 bytes instead of a [`Slim`]'s 16 for the syscall measure's sample per
    /// call. Made [`Slim`]s only when every sample is listed (`unpack`).
    pub(super) calls: Vec<u32>,
    pub(super) synth: Vec<Raw>,
    pub(super) extra: serde_json::Map<String, serde_json::Value>,
    /// Counters bumped per sample, turned into `extra` once at the end (formatting and
    /// JSON maps per sample would cost more than the measure itself).
    pub(super) tally: Vec<(&'static str, Tally, u64)>,
    /// The thread a per-thread series is of, once named (`finish_report`).
    pub(super) task: Option<TaskKey>,
}

/// The sub-key of a per-sample counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Tally {
    /// `field: n`.
    Plain,
    /// `field: {name: n}`.
    Str(&'static str),
    /// `field: {comm[tid]: n}`.
    Task(i32, Sym),
}

/// The sample a span or edge gives without changes.
pub(super) fn derived(cx: &Cx<'_>, src: Src, idx: u32) -> Raw {
    match src {
        Src::Span => span_raw(cx.tl, idx as usize),
        Src::Syscall => call_raw(cx.tl, idx),
        Src::Edge => {
            let e = &cx.tl.edges[idx as usize];
            Raw {
                ts: e.ts,
                end: e.at,
                value: e.at.saturating_sub(e.ts),
                cpu: e.to_cpu,
                tid: e.to_tid,
                comm: Sym::EMPTY,
                idx,
                src,
                unc: Unc::default(),
            }
        }
        Src::None => unreachable!("synthetic samples are stored whole"),
    }
}

impl Series {
    /// Adds system call `i` as a sample of its duration.
    #[inline]
    pub(super) fn push_call(&mut self, i: u32) {
        self.calls.push(i);
    }

    /// No samples.
    pub(super) fn is_empty(&self) -> bool {
        self.raw.is_empty() && self.calls.is_empty()
    }

    /// Turns the samples kept as call indices into [`Slim`]s after the others.
    pub(super) fn unpack(&mut self, cx: &Cx<'_>) {
        let calls = std::mem::take(&mut self.calls);
        self.raw
            .extend(calls.into_iter().map(|i| call_slim(cx.tl, i)));
    }

    pub(super) fn push(&mut self, cx: &Cx<'_>, r: Raw) {
        let unc = unc_tag(&r.unc, r.value);
        if r.src != Src::None {
            let d = derived(cx, r.src, r.idx);
            if (d.ts, d.end, d.cpu, d.tid, d.comm) == (r.ts, r.end, r.cpu, r.tid, r.comm) {
                let tag = match r.src {
                    Src::Span => 0,
                    Src::Edge => 1,
                    _ => SLIM_SYSCALL,
                };
                self.raw.push(Slim {
                    value: r.value,
                    idx: r.idx,
                    tag: tag | unc,
                });
                return;
            }
        }
        self.synth.push(r);
        self.raw.push(Slim {
            value: r.value,
            idx: (self.synth.len() - 1) as u32,
            tag: SLIM_SYNTH | unc,
        });
    }

    pub(super) fn expand(&self, cx: &Cx<'_>, x: &Slim) -> Raw {
        let mut r = match x.tag & SLIM_KIND {
            0 => derived(cx, Src::Span, x.idx),
            1 => derived(cx, Src::Edge, x.idx),
            SLIM_SYSCALL => derived(cx, Src::Syscall, x.idx),
            _ => self.synth[x.idx as usize],
        };
        r.value = x.value;
        r.unc.lost = x.tag & SLIM_LOST != 0;
        r.unc.inferred = x.tag & SLIM_INFERRED != 0;
        if !r.unc.inferred {
            r.unc.bound = None;
        }
        r
    }

    /// Appends `b`'s samples and counters after this series' own (see
    /// [`Collector::append`]).
    fn append(&mut self, b: Series) {
        let base = self.synth.len() as u32;
        self.raw.extend(b.raw.into_iter().map(|mut x| {
            if x.tag & SLIM_KIND == SLIM_SYNTH {
                x.idx += base;
            }
            x
        }));
        self.calls.extend(b.calls);
        self.synth.extend(b.synth);
        // `extra` is filled from the counters after collection, never during it.
        debug_assert!(b.extra.is_empty());
        for (field, sub, n) in b.tally {
            self.count(field, sub, n);
        }
    }

    pub(super) fn count(&mut self, field: &'static str, sub: Tally, by: u64) {
        // Few distinct counters per series: a scan beats hashing the field name.
        match self
            .tally
            .iter_mut()
            .find(|(f, s, _)| std::ptr::eq(*f, field) && *s == sub)
        {
            Some(e) => e.2 += by,
            None => self.tally.push((field, sub, by)),
        }
    }
}

pub(super) fn group(
    cx: &Cx<'_>,
    mut s: Series,
    top: usize,
    raw: bool,
    base: u64,
    detail: &Detail<'_>,
) -> Group {
    if raw {
        // Every sample is listed: the span ones too.
        s.unpack(cx);
    }
    // Samples kept as call indices stay so: their values and the few worst are read
    // from the calls, so a large group never holds a `Slim` per sample.
    let calls = std::mem::take(&mut s.calls);
    let sys = &cx.tl.syscalls;
    let slim_of = |i: u32| call_slim(cx.tl, i);
    // Quantiles need the values in order, the worst list only the top few: sort plain
    // numbers, and select the worst samples without sorting them all.
    let vals = (s.raw.iter().map(|r| r.value)).chain(calls.iter().map(|&i| sys.dur(i)));
    let (d, histogram, sketch) = summarise(vals, base, cx.settle.is_window());
    let samples = raw.then(|| {
        let mut v: Vec<[u64; 2]> = s
            .raw
            .iter()
            .map(|x| [s.expand(cx, x).ts, x.value])
            .collect();
        v.sort_unstable();
        v
    });
    let tags = (s.raw.iter().map(|r| r.tag)).chain(calls.iter().map(|&i| slim_of(i).tag));
    let (mut uncertain, mut lost, mut inferred) = (0, 0, 0);
    for t in tags {
        uncertain += (t & SLIM_UNCERTAIN != 0) as u64;
        lost += (t & SLIM_LOST != 0) as u64;
        inferred += (t & SLIM_INFERRED != 0) as u64;
    }
    // The largest bound of the inferred endpoints (system calls carry none: unknown).
    let bound = (inferred > 0)
        .then(|| {
            (s.raw.iter().filter(|x| x.tag & SLIM_INFERRED != 0))
                .map(|x| s.expand(cx, x).unc.bound)
                .chain(calls.iter().filter(|&&i| sys.uncertain(i)).map(|_| None))
                .try_fold(0u64, |m, b| Some(m.max(b?)))
        })
        .flatten();
    let mut cand: Vec<Slim> = if calls.is_empty() {
        std::mem::take(&mut s.raw)
    } else {
        s.raw.clone()
    };
    let canon = |x: &Slim| canon(&s.expand(cx, x));
    let worst_of = |v: &mut Vec<Slim>| keep_worst(v, top, canon);
    worst_of(&mut cand);
    for i in calls {
        cand.push(slim_of(i));
        if cand.len() >= 2 * top.max(1) + 64 {
            worst_of(&mut cand);
        }
    }
    worst_of(&mut cand);
    cand.sort_by_cached_key(|x| (std::cmp::Reverse(x.value), canon(x)));
    let worst = cand
        .iter()
        .map(|x| Sample {
            group: s.key.clone(),
            ..detail(cx, &s.expand(cx, x))
        })
        .collect();
    Group {
        key: s.key,
        metric: s.metric.to_string(),
        count: d.count,
        min_ns: d.min,
        p50_ns: d.p50,
        p90_ns: d.p90,
        p99_ns: d.p99,
        p999_ns: d.p999,
        max_ns: d.max,
        total_ns: d.total,
        mean_ns: d.mean(),
        uncertain,
        lost,
        inferred,
        inferred_bound_ns: bound,
        histogram,
        worst,
        extra: s.extra,
        samples,
        sketch,
        task: s.task,
    }
}

/// The order among samples of equal value: the earliest first (then by end, thread and
/// CPU), a choice that does not depend on how the samples were collected, so a trace
/// read in windows keeps the same worst samples as the whole trace.
fn canon(r: &Raw) -> (u64, u64, i32, u32) {
    (r.ts, r.end, r.tid, r.cpu)
}

/// Keeps the `top` worst of `v`: the largest values, and among samples equal to the
/// smallest value kept, the first by `canon`; in no order.
fn keep_worst<K: Ord>(v: &mut Vec<Slim>, top: usize, canon: impl Fn(&Slim) -> K) {
    let k = top.min(v.len());
    if k == 0 || k == v.len() {
        v.truncate(k);
        return;
    }
    v.select_nth_unstable_by_key(k - 1, |x| std::cmp::Reverse(x.value));
    let least = v[k - 1].value;
    let above = v[..k].iter().filter(|x| x.value > least).count();
    let mut ties: Vec<Slim> = v.iter().filter(|x| x.value == least).copied().collect();
    if ties.len() > k - above {
        ties.sort_by_cached_key(&canon);
    }
    ties.truncate(k - above);
    v.retain(|x| x.value > least);
    v.extend(ties);
}

/// Quantiles and histogram of `vals`, and with `sketch` the values as a [`Sketch`]:
/// sorted as `u32`s when they all fit (a group can hold millions of samples; durations
/// under 4.3 s fit), else as `u64`s.
fn summarise(
    vals: impl Iterator<Item = u64> + Clone,
    base: u64,
    sketch: bool,
) -> (Dist, Vec<Bucket>, Option<Sketch>) {
    if vals.clone().all(|v| v <= u32::MAX as u64) {
        let mut v: Vec<u32> = vals.map(|x| x as u32).collect();
        v.sort_unstable();
        let s = sketch.then(|| Sketch::of_sorted(&v));
        (Dist::of_sorted(&v), log_histogram(&v, base), s)
    } else {
        let mut v: Vec<u64> = vals.collect();
        v.sort_unstable();
        let s = sketch.then(|| Sketch::of_sorted(&v));
        (Dist::of_sorted(&v), log_histogram(&v, base), s)
    }
}

/// Collects samples into named series.
pub(super) struct Collector {
    pub(super) series: Vec<Series>,
    /// (group id, metric) → series. Ids are cheap numbers; labels are made once.
    pub(super) index: FxHashMap<(u64, u64, &'static str), usize>,
    /// For the few groups keyed by their label.
    pub(super) by_label: FxHashMap<(String, &'static str), usize>,
    /// The last few `at` answers, by id and the metric's address: a measure asks once per
    /// sample, mostly for the same few groups, and hashing the metric's text each time
    /// cost as much as the rest of the sample.
    recent: [(u64, u64, usize, usize); RECENT],
}

/// Entries of [`Collector::recent`].
const RECENT: usize = 8;

impl Collector {
    pub(super) fn new() -> Collector {
        Collector {
            series: Vec::new(),
            index: FxHashMap::default(),
            by_label: FxHashMap::default(),
            recent: [(0, 0, 0, usize::MAX); RECENT],
        }
    }

    pub(super) fn new_series(&mut self, key: String, metric: &'static str) -> usize {
        self.series.push(Series {
            key,
            metric,
            raw: Vec::new(),
            calls: Vec::new(),
            synth: Vec::new(),
            extra: serde_json::Map::new(),
            tally: Vec::new(),
            task: None,
        });
        self.series.len() - 1
    }

    /// The series of group `id`, labelled by `label()` the first time.
    pub(super) fn at(
        &mut self,
        id: (u64, u64),
        metric: &'static str,
        label: impl FnOnce() -> String,
    ) -> &mut Series {
        // The same address is the same text: a hit answers what the map would.
        let addr = metric.as_ptr() as usize;
        let slot = (id.0 ^ id.1.rotate_left(29) ^ addr as u64) as usize % RECENT;
        let (a, b, m, i) = self.recent[slot];
        if (a, b, m) == (id.0, id.1, addr) && i != usize::MAX {
            return &mut self.series[i];
        }
        let i = match self.index.get(&(id.0, id.1, metric)) {
            Some(&i) => i,
            None => {
                let i = self.new_series(label(), metric);
                self.index.insert((id.0, id.1, metric), i);
                i
            }
        };
        self.recent[slot] = (id.0, id.1, addr, i);
        &mut self.series[i]
    }

    /// Appends what `b` collected after what this collector did: `b` covered the samples
    /// that come after this one's (the second half of a measure's spans), so every
    /// series ends as one collector over both would have made it.
    pub(super) fn append(&mut self, b: Collector) {
        let mut keys: Vec<Option<(u64, u64, &'static str)>> = vec![None; b.series.len()];
        for (&k, &i) in &b.index {
            keys[i] = Some(k);
        }
        let mut labels: Vec<Option<(String, &'static str)>> = vec![None; b.series.len()];
        for (k, i) in b.by_label {
            labels[i] = Some(k);
        }
        for ((s, key), label) in b.series.into_iter().zip(keys).zip(labels) {
            let have = match (&key, &label) {
                (Some(k), _) => self.index.get(k).copied(),
                (None, Some(l)) => self.by_label.get(l).copied(),
                (None, None) => None,
            };
            let i = match have {
                Some(i) => i,
                None => {
                    let i = self.new_series(s.key.clone(), s.metric);
                    if let Some(k) = key {
                        self.index.insert(k, i);
                    }
                    if let Some(l) = label {
                        self.by_label.insert(l, i);
                    }
                    i
                }
            };
            self.series[i].append(s);
        }
    }

    pub(super) fn get(&mut self, key: String, metric: &'static str) -> &mut Series {
        let i = match self.by_label.get(&(key.clone(), metric)) {
            Some(&i) => i,
            None => {
                let i = self.new_series(key.clone(), metric);
                self.by_label.insert((key, metric), i);
                i
            }
        };
        &mut self.series[i]
    }

    pub(super) fn add(&mut self, cx: &Cx<'_>, key: String, metric: &'static str, r: Raw) {
        self.get(key, metric).push(cx, r);
    }
}

pub(super) fn add_u64(
    extra: &mut serde_json::Map<String, serde_json::Value>,
    field: &str,
    by: u64,
) {
    let v = extra
        .entry(field.to_string())
        .or_insert(serde_json::Value::from(0u64));
    *v = serde_json::Value::from(v.as_u64().unwrap_or(0) + by);
}

/// Turns a series' counters into its JSON `extra`.
pub(super) fn settle(cx: &Cx<'_>, s: &mut Series) {
    let mut t = std::mem::take(&mut s.tally);
    t.sort_by_key(|(f, _, _)| *f);
    for (field, sub, n) in t {
        match sub {
            Tally::Plain => add_u64(&mut s.extra, field, n),
            Tally::Str(_) | Tally::Task(..) => {
                let name = match sub {
                    Tally::Str(x) => x.to_string(),
                    Tally::Task(tid, comm) => cx.task(tid, comm),
                    Tally::Plain => unreachable!(),
                };
                let obj = s
                    .extra
                    .entry(field.to_string())
                    .or_insert_with(|| serde_json::Value::Object(Default::default()));
                if let serde_json::Value::Object(m) = obj {
                    let v = m.entry(name).or_insert(serde_json::Value::from(0u64));
                    *v = serde_json::Value::from(v.as_u64().unwrap_or(0) + n);
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn finish_report(
    cx: &Cx<'_>,
    measure: Measure,
    description: &str,
    unit: &str,
    coll: Collector,
    top: usize,
    raw: bool,
    detail: &Detail<'_>,
) -> MeasureReport {
    let mut coll = coll;
    let mut used = rustc_hash::FxHashSet::default();
    for s in coll.series.iter_mut() {
        settle(cx, s);
        if s.key.starts_with('\u{1}') {
            s.unpack(cx);
        }
        if let Some(rest) = s.key.strip_prefix('\u{1}') {
            // Named by the thread's name at its latest sample (exec renames threads).
            let (tid, life) = rest.split_once('#').unwrap_or((rest, "0"));
            let tid: i32 = tid.parse().unwrap_or(-1);
            if cx.tl.is_recorder(tid) {
                s.extra.insert(RECORDER.into(), true.into());
            }
            let comm = s
                .raw
                .iter()
                .map(|x| s.expand(cx, x))
                .max_by_key(|r| r.ts)
                .map_or(Sym::EMPTY, |r| r.comm);
            let name = cx.task(tid, comm);
            s.task = Some(TaskKey {
                tid,
                life: life.parse().unwrap_or(0),
                name: name.clone(),
            });
            s.key = unique_name(&mut used, name, s.metric, life);
        }
    }
    let base = if unit == "ns" { 1000 } else { 1 };
    // A window keeps a group with no sample but counters, for the merge.
    let keep = |s: &Series| !s.is_empty() || (cx.settle.is_window() && !s.extra.is_empty());
    let series: Vec<Series> = coll.series.into_iter().filter(keep).collect();
    let mut groups = group_all(cx, series, &|cx, s| group(cx, s, top, raw, base, detail));
    sort_groups(&mut groups);
    let worst = merge_worst(&groups, top, |_| true);
    let notes = recorder_note(&groups).into_iter().collect();
    MeasureReport {
        measure,
        description: description.to_string(),
        unit: unit.to_string(),
        groups,
        worst,
        open: 0,
        partial_tids: Vec::new(),
        missing_events: Vec::new(),
        notes,
    }
}

/// `name` for a thread's group of `metric`, or `name#life` when a group of an earlier
/// life of the same thread id (pid reuse) took it.
pub(super) fn unique_name<M: Eq + std::hash::Hash>(
    used: &mut rustc_hash::FxHashSet<(String, M)>,
    name: String,
    metric: M,
    life: impl std::fmt::Display,
) -> String {
    match used.insert((name.clone(), metric)) {
        true => name,
        false => format!("{name}#{life}"),
    }
}

/// Groups in report order: the largest first, and the recorder's own threads last (they
/// are the measurement, not the workload).
pub(super) fn sort_groups(groups: &mut [Group]) {
    groups.sort_by(|a, b| {
        is_recorder(a)
            .cmp(&is_recorder(b))
            .then(b.max_ns.cmp(&a.max_ns))
            .then(b.count.cmp(&a.count))
            .then(a.key.cmp(&b.key))
    });
}

/// The `extra` key marking a group of the recorder's own threads (`whylate record`'s,
/// trace-cmd's, perf's: see `Timeline::recorder`).
pub(super) const RECORDER: &str = "recorder";

/// Whether `g` is one of the recorder's own threads.
pub(super) fn is_recorder(g: &Group) -> bool {
    g.extra.contains_key(RECORDER)
}

/// Says which groups are the recorder's and that they are ranked last, if any.
pub(super) fn recorder_note(groups: &[Group]) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for g in groups.iter().filter(|g| is_recorder(g)) {
        // A thread has a group per metric (runqueue: waits and runs): named once.
        if !names.contains(&g.key.as_str()) {
            names.push(&g.key);
        }
    }
    let n = names.len();
    (n > 0).then(|| {
        names.truncate(3);
        format!(
            "the recorder's own threads ({}{}) are the measurement, not the workload: ranked last and left out of the worst samples",
            names.join(", "),
            if n > 3 { format!(" and {} more", n - 3) } else { String::new() }
        )
    })
}

/// What a measure says of one of its worst samples.
pub(super) type Detail<'a> = dyn Fn(&Cx<'_>, &Raw) -> Sample + Sync + 'a;

/// Samples from which the groups are made on two threads: sorting each group's values is
/// most of a syscall-heavy measure's time after collection.
const SPLIT_MIN: usize = 1 << 20;

/// `make` of every series, in order: the large ones shared between this thread and
/// another (each takes the largest left while it has fewer samples) when there are
/// enough samples and a second core.
fn group_all(
    cx: &Cx<'_>,
    series: Vec<Series>,
    make: &(dyn Fn(&Cx<'_>, Series) -> Group + Sync),
) -> Vec<Group> {
    let size = |s: &Series| s.raw.len() + s.calls.len();
    let total: usize = series.iter().map(size).sum();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if total < SPLIT_MIN || cores < 2 || series.len() < 2 {
        return series.into_iter().map(|s| make(cx, s)).collect();
    }
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(size(&series[i])));
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    let (mut a, mut b) = (0, 0);
    for i in order {
        if a <= b {
            a += size(&series[i]);
            mine.push(i);
        } else {
            b += size(&series[i]);
            theirs.push(i);
        }
    }
    let mut slots: Vec<Option<Series>> = series.into_iter().map(Some).collect();
    let take = |v: &[usize], slots: &mut Vec<Option<Series>>| -> Vec<(usize, Series)> {
        v.iter()
            .filter_map(|&i| Some((i, slots[i].take()?)))
            .collect()
    };
    let (mine, theirs) = (take(&mine, &mut slots), take(&theirs, &mut slots));
    // A `Cx` has caches only its own thread may fill: the other thread gets a fork.
    let cx2 = cx.fork();
    let (near, far) = std::thread::scope(|sc| {
        let far = sc.spawn(move || {
            let cx2 = cx2;
            theirs
                .into_iter()
                .map(|(i, s)| (i, make(&cx2, s)))
                .collect::<Vec<_>>()
        });
        let near: Vec<_> = mine.into_iter().map(|(i, s)| (i, make(cx, s))).collect();
        (
            near,
            far.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
        )
    });
    let mut all: Vec<(usize, Group)> = near.into_iter().chain(far).collect();
    all.sort_by_key(|g| g.0);
    all.into_iter().map(|g| g.1).collect()
}

/// The worst samples over the groups `pick` accepts, each listed once.
pub(super) fn merge_worst(
    groups: &[Group],
    top: usize,
    pick: impl Fn(&Group) -> bool,
) -> Vec<Sample> {
    let mut worst: Vec<Sample> = groups
        .iter()
        .filter(|g| pick(g) && !is_recorder(g))
        .flat_map(|g| g.worst.iter().cloned())
        .collect();
    worst.sort_by(|a, b| b.value_ns.cmp(&a.value_ns).then(a.ts_ns.cmp(&b.ts_ns)));
    // A sample can sit in two groups (runqueue: per task and per CPU): list it once.
    worst.dedup_by(|a, b| {
        (a.ts_ns, a.end_ns, a.tid, a.value_ns) == (b.ts_ns, b.end_ns, b.tid, b.value_ns)
    });
    worst.truncate(top);
    worst
}

/// System call `i` as the sample [`call_raw`] gives, stored slim: read from the calls'
/// fixed-width part alone (duration and uncertainty), without unpacking the call.
fn call_slim(tl: &Timeline, i: u32) -> Slim {
    let unc = if tl.syscalls.uncertain(i) {
        unc_tag(&call_raw(tl, i).unc, tl.syscalls.dur(i))
    } else {
        0
    };
    Slim {
        value: tl.syscalls.dur(i),
        idx: i,
        tag: SLIM_SYSCALL | unc,
    }
}

/// System call `i` as a sample of its duration.
pub(super) fn call_raw(tl: &Timeline, i: u32) -> Raw {
    let c = tl.syscalls.get(i);
    Raw {
        ts: c.start,
        end: c.end,
        value: c.dur(),
        cpu: c.cpu,
        tid: c.tid,
        comm: c.comm,
        idx: i,
        src: Src::Syscall,
        unc: Unc {
            lost: c.flags & span::UNCERTAIN != 0,
            inferred: c.flags & span::INFERRED != 0,
            bound: None,
        },
    }
}

pub(super) fn span_raw(tl: &Timeline, i: usize) -> Raw {
    let sp = &tl.spans;
    Raw {
        ts: sp.start[i],
        end: sp.end[i],
        value: sp.end[i] - sp.start[i],
        cpu: sp.cpu[i],
        tid: sp.tid[i],
        comm: sp.comm[i],
        idx: i as u32,
        src: Src::Span,
        unc: Unc {
            lost: sp.flags[i] & span::UNCERTAIN != 0,
            inferred: sp.flags[i] & span::INFERRED != 0,
            bound: tl.inferred_bound.get(&(i as u32)).copied(),
        },
    }
}

pub(super) fn base_sample(cx: &Cx<'_>, r: &Raw, group: String, detail: String) -> Sample {
    Sample {
        ts_ns: r.ts,
        end_ns: r.end,
        cpu: (r.cpu != u32::MAX).then_some(r.cpu),
        tid: r.tid,
        comm: cx
            .s
            .get(if r.comm != Sym::EMPTY {
                r.comm
            } else {
                cx.tl.comm(r.tid)
            })
            .to_string(),
        value_ns: r.value,
        group,
        detail,
        cpu_held_by: Vec::new(),
        uncertain: r.unc.uncertain(r.value),
        lost: r.unc.lost,
        inferred_bound_ns: r.unc.bound.filter(|_| r.unc.inferred),
    }
}

pub(super) fn needs(m: Measure, part: &str, ev: &[&str]) -> Missing {
    Missing {
        measure: m,
        part: part.to_string(),
        needs: ev.iter().map(|s| s.to_string()).collect(),
    }
}
