//! Latency measures built on the [`Timeline`]: wakeup, runqueue, irq, softirq, work,
//! syscall, timer, throughput and irqs-off. Each gives groups (per task, irq, vector,
//! function...) with count, quantiles, a log-bucket histogram and the worst samples, each
//! with its absolute time, CPU and task so the user can find it in the trace.

use crate::dist::{log_histogram, Dist};
use crate::event::{Interner, Sym, SOFTIRQ_NAMES};
use crate::glob::Glob;
use crate::timeline::{
    span, Cause, Ctx, EdgeKind, KindClass, OccupantKind, SpanKind, Timeline, TimerClock, NONE,
};
use crate::units::{dur, secs};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::fmt::Write as _;

/// The measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Waking → running, per task.
    Wakeup,
    /// Runnable time (woken or preempted) per task and per CPU.
    Runqueue,
    /// Hard irq handler durations.
    Irq,
    /// Softirq raise → entry latency, run time; tasklets.
    Softirq,
    /// Work queue → start latency, run time.
    Work,
    /// Syscall durations.
    Syscall,
    /// hrtimer lateness and the wakeup after it.
    Timer,
    /// Events (or a field's sum) per interval.
    Throughput,
    /// Irqs-off and preempt-off sections.
    Irqsoff,
}

impl Measure {
    /// All measures, in report order.
    pub const ALL: [Measure; 9] = [
        Measure::Wakeup,
        Measure::Runqueue,
        Measure::Irq,
        Measure::Softirq,
        Measure::Work,
        Measure::Syscall,
        Measure::Timer,
        Measure::Throughput,
        Measure::Irqsoff,
    ];

    /// Name as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Wakeup => "wakeup",
            Measure::Runqueue => "runqueue",
            Measure::Irq => "irq",
            Measure::Softirq => "softirq",
            Measure::Work => "work",
            Measure::Syscall => "syscall",
            Measure::Timer => "timer",
            Measure::Throughput => "throughput",
            Measure::Irqsoff => "irqsoff",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Measure> {
        Measure::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Which task a sample must belong to.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskSel {
    /// A thread id (or the thread group, when the trace knows it).
    Pid(i32),
    /// A comm pattern (`*`, `?`, `[...]`).
    Comm(Glob),
}

impl TaskSel {
    /// A pid when `s` is a number, else a comm pattern.
    pub fn parse(s: &str) -> Result<TaskSel, String> {
        match s.parse::<i32>() {
            Ok(p) => Ok(TaskSel::Pid(p)),
            Err(_) => Glob::new(s).map(TaskSel::Comm),
        }
    }

    /// Whether task `tid`, named `comm`, is selected.
    pub fn matches(&self, tid: i32, comm: &str) -> bool {
        match self {
            TaskSel::Pid(p) => tid == *p,
            TaskSel::Comm(g) => g.is_match(comm),
        }
    }
}

/// A bound of `--window`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Absolute trace time, ns.
    Abs(u64),
    /// ns after the first event.
    Rel(u64),
}

/// Sample filter.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only this task.
    pub task: Option<TaskSel>,
    /// Only this CPU.
    pub cpu: Option<u32>,
    /// Only samples starting in this window.
    pub window: (Option<Bound>, Option<Bound>),
}

/// What to count for `throughput`.
#[derive(Clone, Debug)]
pub struct ThroughputOpts {
    /// Bare event name (`console`, `sched_switch`, `tracing_mark_write`...).
    pub event: String,
    /// Sum this numeric field instead of counting (`len` = message bytes + 1 for the
    /// newline, for console and trace_marker events).
    pub field: Option<String>,
    /// Interval, ns.
    pub interval_ns: u64,
    /// Expected rate per second, e.g. 11520 for 115200 baud 8N1.
    pub expect_per_s: Option<f64>,
}

/// Options of [`compute`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Measures to compute (all that the trace can feed when empty).
    pub measures: Vec<Measure>,
    /// Sample filter.
    pub filter: Filter,
    /// Worst samples to keep per group and per measure.
    pub top: usize,
    /// Keep every sample (JSON `samples`).
    pub raw_samples: bool,
    /// Throughput parameters.
    pub throughput: Option<ThroughputOpts>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            measures: Vec::new(),
            filter: Filter::default(),
            top: 10,
            raw_samples: false,
            throughput: None,
        }
    }
}

/// One sample, as reported.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// When it started (ns, trace clock).
    pub ts_ns: u64,
    /// When it ended.
    pub end_ns: u64,
    /// CPU.
    pub cpu: Option<u32>,
    /// Task.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// The value (ns; for throughput the rate per second).
    pub value_ns: u64,
    /// The group it belongs to.
    pub group: String,
    /// What surrounded it, in words.
    pub detail: String,
    /// Who had the CPU meanwhile (waiting samples).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_held_by: Vec<Holder>,
    /// Crosses a lost-events window, or an endpoint was inferred.
    pub uncertain: bool,
}

/// One occupant of a CPU during a sample.
#[derive(Clone, Debug, Serialize)]
pub struct Holder {
    /// `task`, `hardirq` or `softirq`.
    pub what: OccupantKind,
    /// `comm[tid]`, `irq N (name)` or the vector name.
    pub name: String,
    /// Overlap, ns.
    pub ns: u64,
}

pub use crate::dist::Bucket;

/// One group of a measure.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    /// What the group is (task `comm[tid]`, `irq 16 (ehci_hcd:usb1)`, `NET_RX`, function).
    pub key: String,
    /// What is measured (`wakeup`, `raise-to-entry`, `run`, `lateness`...).
    pub metric: String,
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
    /// Sum.
    pub total_ns: u64,
    /// Mean.
    pub mean_ns: u64,
    /// Samples flagged uncertain (crossing lost events, inferred endpoints).
    pub uncertain: u64,
    /// Log2 histogram.
    pub histogram: Vec<Bucket>,
    /// Worst samples, largest first.
    pub worst: Vec<Sample>,
    /// Measure-specific facts.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Every sample as `[ts_ns, value_ns]` (with `--json --samples`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<Vec<[u64; 2]>>,
}

/// Events a measure needs that the trace lacks.
#[derive(Clone, Debug, Serialize)]
pub struct Missing {
    /// The measure.
    pub measure: Measure,
    /// What part of it cannot be computed.
    pub part: String,
    /// Events to record for it.
    pub needs: Vec<String>,
}

/// The result of one measure.
#[derive(Clone, Debug, Serialize)]
pub struct MeasureReport {
    /// The measure.
    pub measure: Measure,
    /// One line on what it measures.
    pub description: String,
    /// `ns`, or `per_s` for throughput.
    pub unit: String,
    /// Groups, largest p99 first... (ordered by max value).
    pub groups: Vec<Group>,
    /// The worst samples over all groups.
    pub worst: Vec<Sample>,
    /// Samples left out because they were open at the trace's start or end.
    pub open: u64,
    /// Threads whose switch-in or switch-out the trace lacks (inferred from their other
    /// events): their totals are partial (runqueue only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partial_tids: Vec<i32>,
    /// What the trace lacks for it.
    pub missing_events: Vec<Missing>,
    /// Caveats.
    pub notes: Vec<String>,
}

pub use crate::read::inputs::TracerSample;

/// Throughput accumulator, fed during the event pass.
#[derive(Debug)]
pub struct Throughput {
    opts: ThroughputOpts,
    name: Option<Sym>,
    start: Option<u64>,
    /// (events, sum) per interval.
    buckets: Vec<(u64, u64)>,
    unsummable: u64,
}

impl Throughput {
    /// A new accumulator.
    pub fn new(opts: ThroughputOpts) -> Throughput {
        Throughput {
            opts,
            name: None,
            start: None,
            buckets: Vec::new(),
            unsummable: 0,
        }
    }

    /// Feeds one event.
    pub fn push(&mut self, e: &crate::event::Event, strings: &Interner) {
        use crate::event::{EventName, Kind};
        let matches = match e.name() {
            EventName::Static(s) => s == self.opts.event,
            EventName::Other(s) => {
                if self.name.is_none() && strings.get(s) == self.opts.event {
                    self.name = Some(s);
                }
                self.name == Some(s)
            }
            n @ (EventName::SysEnter(_) | EventName::SysExit(_)) => {
                n.render(strings) == self.opts.event
            }
        };
        if !matches {
            return;
        }
        let start = *self.start.get_or_insert(e.ts);
        let i = (e.ts.saturating_sub(start) / self.opts.interval_ns.max(1)) as usize;
        if i >= 10_000_000 {
            return;
        }
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, (0, 0));
        }
        let v = match self.opts.field.as_deref() {
            None => 1,
            Some("len") => match &e.kind {
                Kind::Console { msg } => msg.len() as u64 + 1,
                Kind::Print { msg, .. } => msg.len() as u64 + 1,
                _ => {
                    self.unsummable += 1;
                    0
                }
            },
            Some(f) => match &e.kind {
                Kind::Other { fields, .. } => crate::event::fields(fields)
                    .find(|(k, _)| *k == f)
                    .and_then(|(_, v)| crate::event::parse_num(v.as_bytes()))
                    .map_or_else(
                        || {
                            self.unsummable += 1;
                            0
                        },
                        |v| v.max(0) as u64,
                    ),
                _ => {
                    self.unsummable += 1;
                    0
                }
            },
        };
        let b = &mut self.buckets[i];
        b.0 += 1;
        b.1 += v;
    }
}

#[derive(Clone, Copy, Debug)]
struct Raw {
    ts: u64,
    end: u64,
    value: u64,
    cpu: u32,
    tid: i32,
    comm: Sym,
    /// Span or edge index (see `src`).
    idx: u32,
    src: Src,
    uncertain: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Span,
    Edge,
    None,
}

/// A stored sample: 16 bytes. Where the rest of a [`Raw`] follows from the span or edge it
/// points at, only the value and the index are kept; other samples are kept whole in the
/// series' `synth` and `idx` points there. Millions of samples stay cheap this way.
#[derive(Clone, Copy, Debug)]
struct Slim {
    value: u64,
    idx: u32,
    /// 0 span, 1 edge, 2 synth; bit 7: uncertain.
    tag: u8,
}

const SLIM_SYNTH: u8 = 2;
const SLIM_UNCERTAIN: u8 = 0x80;

struct Series {
    key: String,
    metric: &'static str,
    raw: Vec<Slim>,
    synth: Vec<Raw>,
    extra: serde_json::Map<String, serde_json::Value>,
    /// Counters bumped per sample, turned into `extra` once at the end (formatting and
    /// JSON maps per sample would cost more than the measure itself).
    tally: Vec<(&'static str, Tally, u64)>,
}

/// The sub-key of a per-sample counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Tally {
    /// `field: n`.
    Plain,
    /// `field: {name: n}`.
    Str(&'static str),
    /// `field: {comm[tid]: n}`.
    Task(i32, Sym),
}

/// The sample a span or edge gives without changes.
fn derived(cx: &Cx<'_>, src: Src, idx: u32) -> Raw {
    match src {
        Src::Span => span_raw(cx.tl, idx as usize),
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
                uncertain: false,
            }
        }
        Src::None => unreachable!("synthetic samples are stored whole"),
    }
}

impl Series {
    fn push(&mut self, cx: &Cx<'_>, r: Raw) {
        let unc = if r.uncertain { SLIM_UNCERTAIN } else { 0 };
        if r.src != Src::None {
            let d = derived(cx, r.src, r.idx);
            if (d.ts, d.end, d.cpu, d.tid, d.comm) == (r.ts, r.end, r.cpu, r.tid, r.comm) {
                let tag = if r.src == Src::Span { 0 } else { 1 };
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

    fn expand(&self, cx: &Cx<'_>, x: &Slim) -> Raw {
        let mut r = match x.tag & !SLIM_UNCERTAIN {
            0 => derived(cx, Src::Span, x.idx),
            1 => derived(cx, Src::Edge, x.idx),
            _ => self.synth[x.idx as usize],
        };
        r.value = x.value;
        r.uncertain = x.tag & SLIM_UNCERTAIN != 0;
        r
    }

    fn count(&mut self, field: &'static str, sub: Tally, by: u64) {
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

struct Cx<'a> {
    tl: &'a Timeline,
    s: &'a Interner,
    f: &'a Filter,
    first: u64,
    runnable_by_cpu: std::cell::OnceCell<Vec<Vec<u32>>>,
    offs_by_cpu: std::cell::OnceCell<Vec<Vec<u32>>>,
    /// Samples left out because open at the trace's end, in the current measure.
    open: std::cell::Cell<u64>,
}

impl Cx<'_> {
    fn keep(&self, ts: u64, cpu: u32, tid: i32, comm: Sym) -> bool {
        if let Some(c) = self.f.cpu {
            if cpu != c {
                return false;
            }
        }
        let abs = |b: Bound| match b {
            Bound::Abs(v) => v,
            Bound::Rel(v) => self.first.saturating_add(v),
        };
        if let Some(a) = self.f.window.0 {
            if ts < abs(a) {
                return false;
            }
        }
        if let Some(b) = self.f.window.1 {
            if ts > abs(b) {
                return false;
            }
        }
        match &self.f.task {
            None => true,
            Some(TaskSel::Pid(p)) => tid == *p,
            Some(TaskSel::Comm(g)) => {
                let name = if comm != Sym::EMPTY {
                    comm
                } else {
                    self.tl.comm(tid)
                };
                g.is_match(self.s.get(name)) || g.is_match(self.s.get(self.tl.comm(tid)))
            }
        }
    }

    fn task(&self, tid: i32, comm: Sym) -> String {
        if tid == 0 {
            return "idle[0]".to_string();
        }
        let c = if comm != Sym::EMPTY && !self.s.get(comm).starts_with('<') {
            comm
        } else {
            self.tl.comm(tid)
        };
        let name = self.s.get(c);
        if name.is_empty() {
            format!("[{tid}]")
        } else {
            format!("{name}[{tid}]")
        }
    }

    fn irq(&self, irq: u32) -> String {
        if irq == u32::MAX {
            return "a hardirq without irq_handler_entry (entry before the trace, or the local timer)".to_string();
        }
        match self.tl.irq_names.get(&irq) {
            Some(n) => format!("irq {irq} ({})", self.s.get(*n)),
            None => format!("irq {irq}"),
        }
    }

    fn ctx(&self, ctx: Ctx, tid: i32, cpu: u32, ts: u64) -> String {
        match self.tl.resolve(ctx, cpu, ts) {
            Ctx::Task { tid } => self.task(tid, Sym::EMPTY),
            Ctx::Hardirq { irq } => self.irq(irq),
            Ctx::Softirq { vec: u8::MAX } => {
                "a softirq whose entry is not in the trace".to_string()
            }
            Ctx::Softirq { vec } => format!("softirq {}", vec_name(vec as u32)),
            Ctx::Timer { edge } => {
                let e = &self.tl.edges[edge as usize];
                format!("hrtimer {}", self.s.get(Sym(e.key)))
            }
            Ctx::Unknown if tid >= 0 => self.task(tid, Sym::EMPTY),
            Ctx::Unknown => "unknown context".to_string(),
        }
    }

    fn holders(&self, cpu: u32, from: u64, to: u64, skip_tid: i32) -> Vec<Holder> {
        if cpu == u32::MAX || to <= from {
            return Vec::new();
        }
        self.tl
            .occupants(cpu, from, to)
            .into_iter()
            .filter(|o| !(o.what == OccupantKind::Task && o.id == skip_tid as i64))
            .take(4)
            .map(|o| Holder {
                what: o.what,
                name: match o.what {
                    OccupantKind::Task => self.task(o.id as i32, o.name),
                    OccupantKind::Hardirq => self.irq(o.id as u32),
                    OccupantKind::Softirq => format!("softirq {}", vec_name(o.id as u32)),
                },
                ns: o.ns,
            })
            .collect()
    }

    /// Spans of some kinds per CPU, sorted by start; built once, on first use.
    fn index_of(&self, kinds: &[SpanKind]) -> Vec<Vec<u32>> {
        let sp = &self.tl.spans;
        let mut v: Vec<Vec<u32>> = vec![Vec::new(); self.tl.cpus as usize];
        for i in 0..sp.len() {
            if kinds.contains(&sp.kind[i]) {
                if let Some(l) = v.get_mut(sp.cpu[i] as usize) {
                    l.push(i as u32);
                }
            }
        }
        for l in &mut v {
            l.sort_by_key(|&i| sp.start[i as usize]);
        }
        v
    }

    fn runnable_index(&self) -> &Vec<Vec<u32>> {
        self.runnable_by_cpu
            .get_or_init(|| self.index_of(&[SpanKind::Runnable]))
    }

    /// Irqs-off and preempt-off sections on `cpu` that overlap `[from, to]`, described.
    fn offs(&self, cpu: u32, from: u64, to: u64) -> Vec<String> {
        let idx = self
            .offs_by_cpu
            .get_or_init(|| self.index_of(&[SpanKind::IrqsOff, SpanKind::PreemptOff]));
        let sp = &self.tl.spans;
        let Some(l) = idx.get(cpu as usize) else {
            return Vec::new();
        };
        let stop = l.partition_point(|&j| sp.start[j as usize] <= to);
        let mut out = Vec::new();
        for &j in l[..stop].iter().rev().take(256) {
            let j = j as usize;
            if sp.end[j] >= from {
                let what = if sp.kind[j] == SpanKind::IrqsOff {
                    "irqs"
                } else {
                    "preemption"
                };
                out.push(format!(
                    "{what} off on CPU{cpu} from {} for {} (disabled by {})",
                    secs(sp.start[j]),
                    dur(sp.end[j] - sp.start[j]),
                    self.s.get(Sym(sp.key[j]))
                ));
            }
        }
        out.reverse();
        out
    }
}

/// A per-thread group key: one group per life of a thread id (pid reuse), named after
/// the thread's name in that life once all samples are in (see `finish_report`).
fn life_key(cx: &Cx<'_>, tid: i32, ts: u64) -> ((u64, u64), impl FnOnce() -> String) {
    let life = cx.tl.life(tid, ts);
    (((tid as u32 as u64) << 16 | life as u64, 0), move || {
        format!("\u{1}{tid}#{life}")
    })
}

fn vec_name(v: u32) -> String {
    SOFTIRQ_NAMES
        .get(v as usize)
        .map_or_else(|| format!("vec {v}"), |s| s.to_string())
}

/// Strips `+0x1c/0x40` from a kernel caller.
fn func_of(caller: &str) -> &str {
    caller.split('+').next().unwrap_or(caller)
}

fn group(
    cx: &Cx<'_>,
    mut s: Series,
    top: usize,
    raw: bool,
    base: u64,
    detail: &dyn Fn(&Cx<'_>, &Raw) -> Sample,
) -> Group {
    // Quantiles need the values in order, the worst list only the top few: sort plain
    // u64s, and select the worst samples without sorting them all.
    let mut vals: Vec<u64> = s.raw.iter().map(|r| r.value).collect();
    vals.sort_unstable();
    let d = Dist::of_sorted(&vals);
    let samples = raw.then(|| {
        let mut v: Vec<[u64; 2]> = s
            .raw
            .iter()
            .map(|x| [s.expand(cx, x).ts, x.value])
            .collect();
        v.sort_unstable();
        v
    });
    let rank = |r: &Slim| (std::cmp::Reverse(r.value), r.tag, r.idx);
    let k = top.min(s.raw.len());
    if k > 0 && k < s.raw.len() {
        s.raw.select_nth_unstable_by_key(k - 1, rank);
    }
    s.raw[..k].sort_unstable_by_key(rank);
    let worst = s.raw[..k]
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
        uncertain: s.raw.iter().filter(|r| r.tag & SLIM_UNCERTAIN != 0).count() as u64,
        histogram: log_histogram(&vals, base),
        worst,
        extra: s.extra,
        samples,
    }
}

/// Collects samples into named series.
struct Collector {
    series: Vec<Series>,
    /// (group id, metric) → series. Ids are cheap numbers; labels are made once.
    index: FxHashMap<(u64, u64, &'static str), usize>,
    /// For the few groups keyed by their label.
    by_label: FxHashMap<(String, &'static str), usize>,
}

impl Collector {
    fn new() -> Collector {
        Collector {
            series: Vec::new(),
            index: FxHashMap::default(),
            by_label: FxHashMap::default(),
        }
    }

    fn new_series(&mut self, key: String, metric: &'static str) -> usize {
        self.series.push(Series {
            key,
            metric,
            raw: Vec::new(),
            synth: Vec::new(),
            extra: serde_json::Map::new(),
            tally: Vec::new(),
        });
        self.series.len() - 1
    }

    /// The series of group `id`, labelled by `label()` the first time.
    fn at(
        &mut self,
        id: (u64, u64),
        metric: &'static str,
        label: impl FnOnce() -> String,
    ) -> &mut Series {
        let i = match self.index.get(&(id.0, id.1, metric)) {
            Some(&i) => i,
            None => {
                let i = self.new_series(label(), metric);
                self.index.insert((id.0, id.1, metric), i);
                i
            }
        };
        &mut self.series[i]
    }

    fn get(&mut self, key: String, metric: &'static str) -> &mut Series {
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

    fn add(&mut self, cx: &Cx<'_>, key: String, metric: &'static str, r: Raw) {
        self.get(key, metric).push(cx, r);
    }
}

fn add_u64(extra: &mut serde_json::Map<String, serde_json::Value>, field: &str, by: u64) {
    let v = extra
        .entry(field.to_string())
        .or_insert(serde_json::Value::from(0u64));
    *v = serde_json::Value::from(v.as_u64().unwrap_or(0) + by);
}

/// Turns a series' counters into its JSON `extra`.
fn settle(cx: &Cx<'_>, s: &mut Series) {
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
fn finish_report(
    cx: &Cx<'_>,
    measure: Measure,
    description: &str,
    unit: &str,
    coll: Collector,
    top: usize,
    raw: bool,
    detail: &dyn Fn(&Cx<'_>, &Raw) -> Sample,
) -> MeasureReport {
    let mut coll = coll;
    let mut used = rustc_hash::FxHashSet::default();
    for s in coll.series.iter_mut() {
        settle(cx, s);
        if let Some(rest) = s.key.strip_prefix('\u{1}') {
            // Named by the thread's name at its latest sample (exec renames threads).
            let (tid, life) = rest.split_once('#').unwrap_or((rest, "0"));
            let tid: i32 = tid.parse().unwrap_or(-1);
            let comm = s
                .raw
                .iter()
                .map(|x| s.expand(cx, x))
                .max_by_key(|r| r.ts)
                .map_or(Sym::EMPTY, |r| r.comm);
            let mut name = cx.task(tid, comm);
            if !used.insert((name.clone(), s.metric)) {
                name = format!("{name}#{life}");
            }
            s.key = name;
        }
    }
    let mut groups: Vec<Group> = coll
        .series
        .into_iter()
        .filter(|s| !s.raw.is_empty())
        .map(|s| group(cx, s, top, raw, if unit == "ns" { 1000 } else { 1 }, detail))
        .collect();
    groups.sort_by(|a, b| {
        b.max_ns
            .cmp(&a.max_ns)
            .then(b.count.cmp(&a.count))
            .then(a.key.cmp(&b.key))
    });
    let worst = merge_worst(&groups, top, |_| true);
    MeasureReport {
        measure,
        description: description.to_string(),
        unit: unit.to_string(),
        groups,
        worst,
        open: 0,
        partial_tids: Vec::new(),
        missing_events: Vec::new(),
        notes: Vec::new(),
    }
}

/// The worst samples over the groups `pick` accepts, each listed once.
fn merge_worst(groups: &[Group], top: usize, pick: impl Fn(&Group) -> bool) -> Vec<Sample> {
    let mut worst: Vec<Sample> = groups
        .iter()
        .filter(|g| pick(g))
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

fn span_raw(tl: &Timeline, i: usize) -> Raw {
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
        uncertain: sp.flags[i] & (span::UNCERTAIN | span::INFERRED) != 0,
    }
}

fn base_sample(cx: &Cx<'_>, r: &Raw, group: String, detail: String) -> Sample {
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
        uncertain: r.uncertain,
    }
}

fn needs(m: Measure, part: &str, ev: &[&str]) -> Missing {
    Missing {
        measure: m,
        part: part.to_string(),
        needs: ev.iter().map(|s| s.to_string()).collect(),
    }
}

fn wakeup(cx: &Cx<'_>, o: &Options, tracers: &[TracerSample]) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    let mut open = 0;
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Runnable {
            continue;
        }
        let cause = Cause::from_key(sp.key[i]);
        if cause == Cause::Preempted || (cause == Cause::Woken && sp.aux[i] == NONE) {
            continue;
        }
        if sp.flags[i] & (span::END_UNKNOWN | span::START_UNKNOWN) != 0 {
            open += 1;
            continue;
        }
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open.set(cx.open.get() + 1);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        // Per thread, named by its latest comm (exec and prctl rename threads).
        let (id, label) = life_key(cx, r.tid, r.ts);
        coll.at(id, "wakeup", label).push(cx, r);
    }
    for t in tracers.iter().filter(|t| t.tracer.starts_with("wakeup")) {
        let tid = t.pid.unwrap_or(-1);
        coll.add(
            cx,
            format!(
                "{} (from {} header)",
                t.task.clone().unwrap_or_default(),
                t.tracer
            ),
            "wakeup",
            Raw {
                ts: 0,
                end: t.latency_ns,
                value: t.latency_ns,
                cpu: t.cpu.unwrap_or(u32::MAX),
                tid,
                comm: Sym::EMPTY,
                idx: NONE,
                src: Src::None,
                uncertain: false,
            },
        );
    }
    let mut rep = finish_report(
        cx,
        Measure::Wakeup,
        "wakeup latency: woken (sched_waking, or sched_wakeup) to running, per task",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &wake_detail,
    );
    rep.open = open;
    if tl.saw(KindClass::SchedSwitch) == 0
        || tl.saw(KindClass::SchedWaking) + tl.saw(KindClass::SchedWakeup) == 0
    {
        rep.missing_events.push(needs(
            Measure::Wakeup,
            "wakeup latency",
            &[
                "sched:sched_switch",
                "sched:sched_waking (or sched:sched_wakeup)",
            ],
        ));
    }
    rep
}

fn wake_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let key = cx.task(r.tid, r.comm);
    if r.src != Src::Span {
        return base_sample(cx, r, key, "from the latency tracer's header".to_string());
    }
    let sp = &cx.tl.spans;
    let i = r.idx as usize;
    let edge = sp.aux[i];
    let mut d = String::new();
    if edge != NONE {
        let e = &cx.tl.edges[edge as usize];
        let _ = write!(
            d,
            "woken by {} on CPU{}",
            cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
            e.from_cpu
        );
    } else {
        d.push_str(match Cause::from_key(sp.key[i]) {
            Cause::New => "new task",
            Cause::Preempted => "preempted (switched out still runnable)",
            Cause::Woken => "woken (waker not traced)",
        });
    }
    let _ = write!(d, "; ran on CPU{}", r.cpu);
    if sp.flags[i] & span::INFERRED != 0 {
        d.push_str(" (switch-in not traced: end inferred from its first event)");
    }
    let mut s = base_sample(cx, r, key, d);
    s.cpu_held_by = cx.holders(r.cpu, r.ts, r.end, r.tid);
    s
}

fn runqueue(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    let mut open = 0;
    // Runs and waits with an endpoint inferred (a switch the trace lacks), per thread.
    let mut inferred: FxHashMap<i32, u64> = FxHashMap::default();
    for i in 0..sp.len() {
        match sp.kind[i] {
            // Runs too, per thread: waiting means little without the running beside it
            // (perf sched timehist's view). A run whose start the trace lacks is no sample.
            SpanKind::Run if sp.tid[i] > 0 => {
                if sp.flags[i] & span::INFERRED != 0 {
                    *inferred.entry(sp.tid[i]).or_default() += 1;
                }
                if sp.flags[i] & span::START_UNKNOWN != 0 {
                    continue;
                }
                if sp.flags[i] & span::END_UNKNOWN != 0 {
                    open += 1;
                    continue;
                }
                let r = span_raw(tl, i);
                if cx.keep(r.ts, r.cpu, r.tid, r.comm) {
                    let (id, label) = life_key(cx, r.tid, r.ts);
                    coll.at(id, "run", label).push(cx, r);
                }
            }
            SpanKind::Runnable => {
                if sp.flags[i] & span::END_UNKNOWN != 0 {
                    open += 1;
                    continue;
                }
                let r = span_raw(tl, i);
                if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
                    continue;
                }
                let cause = match Cause::from_key(sp.key[i]) {
                    Cause::Preempted => "preempted",
                    Cause::New => "new",
                    Cause::Woken => "woken",
                };
                if sp.flags[i] & span::INFERRED != 0 {
                    *inferred.entry(r.tid).or_default() += 1;
                }
                let (id, label) = life_key(cx, r.tid, r.ts);
                let s = coll.at(id, "runnable", label);
                s.count("by_cause_ns", Tally::Str(cause), r.value);
                if sp.flags[i] & span::RACED != 0 {
                    s.count("woken_during_switch_out_ns", Tally::Plain, r.value);
                }
                s.push(cx, r);
                if r.cpu != u32::MAX {
                    let s = coll.at((r.cpu as u64, 1), "runnable-on-cpu", || {
                        format!("cpu {}", r.cpu)
                    });
                    s.push(cx, r);
                }
            }
            _ => {}
        }
    }
    for s in coll.series.iter_mut() {
        if s.metric == "runnable" || s.metric == "run" {
            if let Some(tid) = s.raw.first().map(|x| s.expand(cx, x).tid) {
                add_u64(&mut s.extra, "tid", tid.max(0) as u64);
                add_u64(
                    &mut s.extra,
                    "inferred",
                    inferred.get(&tid).copied().unwrap_or(0),
                );
            }
        }
    }
    let mut rep = finish_report(
        cx,
        Measure::Runqueue,
        "runqueue wait: time runnable but not running (after a wakeup or a preemption), per task and per CPU",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &|cx, r| {
            if cx.tl.spans.kind[r.idx as usize] == SpanKind::Run {
                let d = format!("ran on CPU{}", r.cpu);
                return base_sample(cx, r, cx.task(r.tid, Sym::EMPTY), d);
            }
            wake_detail(cx, r)
        },
    );
    rep.open = open;
    // Waits first: they are what this measure is about.
    let rank = |m: &str| match m {
        "runnable" => 0,
        "runnable-on-cpu" => 1,
        _ => 2,
    };
    rep.groups.sort_by_key(|g| rank(&g.metric));
    rep.worst = merge_worst(&rep.groups, o.top, |g| g.metric != "run");
    let mut partial: Vec<i32> = inferred.keys().copied().collect();
    partial.sort_unstable();
    rep.partial_tids = partial;
    if tl.saw(KindClass::SchedSwitch) == 0 {
        rep.missing_events.push(needs(
            Measure::Runqueue,
            "runqueue wait",
            &["sched:sched_switch", "sched:sched_waking"],
        ));
    }
    rep
}

fn irq(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Hardirq || sp.key[i] == u32::MAX {
            continue;
        }
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open.set(cx.open.get() + 1);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        coll.at((sp.key[i] as u64, 0), "handler", || cx.irq(sp.key[i]))
            .push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Irq,
        "hard irq handler duration (irq_handler_entry to exit), per irq; the worst with what they delayed on their CPU",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &irq_detail,
    );
    if tl.saw(KindClass::IrqHandler) == 0 {
        rep.missing_events.push(needs(
            Measure::Irq,
            "irq handler durations",
            &["irq:irq_handler_entry", "irq:irq_handler_exit"],
        ));
    }
    rep
}

fn irq_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    let sp = &tl.spans;
    let i = r.idx as usize;
    let irq = sp.key[i];
    let mut d = format!("on CPU{}, interrupting {}", r.cpu, cx.task(r.tid, r.comm));
    // Interrupts that entered right after it were most likely pending behind it.
    let mut after = Vec::new();
    if let Some(list) = tl.irqs_by_cpu.get(r.cpu as usize) {
        let pos = list.partition_point(|&j| sp.end[j as usize] <= r.end);
        for &j in &list[pos..] {
            let j = j as usize;
            if sp.start[j] > r.end + 100_000 {
                break;
            }
            if sp.start[j] >= r.end && sp.kind[j] == SpanKind::Hardirq && sp.key[j] != irq {
                after.push(format!(
                    "{} +{}",
                    cx.irq(sp.key[j]),
                    dur(sp.start[j] - r.end)
                ));
            }
        }
    }
    if !after.is_empty() {
        let _ = write!(d, "; then {}", after.join(", "));
    }
    // Tasks that were runnable on this CPU while the handler ran waited for it.
    let idx = cx.runnable_index();
    let mut waited = Vec::new();
    if let Some(l) = idx.get(r.cpu as usize) {
        let stop = l.partition_point(|&j| sp.start[j as usize] < r.end);
        for &j in l[..stop].iter().rev().take(10_000) {
            let j = j as usize;
            let ov = sp.end[j].min(r.end).saturating_sub(sp.start[j].max(r.ts));
            if ov > 0 {
                waited.push(format!("{} {}", cx.task(sp.tid[j], sp.comm[j]), dur(ov)));
            }
        }
    }
    if !waited.is_empty() {
        waited.truncate(5);
        let _ = write!(d, "; tasks kept waiting: {}", waited.join(", "));
    }
    base_sample(cx, r, cx.irq(irq), d)
}

fn softirq(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for (ei, e) in tl.edges.iter().enumerate() {
        match e.kind {
            EdgeKind::Softirq => {
                let where_ = served_in(e.val as u8);
                let r = Raw {
                    ts: e.ts,
                    end: e.at,
                    value: e.at - e.ts,
                    cpu: e.to_cpu,
                    tid: e.to_tid,
                    comm: Sym::EMPTY,
                    idx: ei as u32,
                    src: Src::Edge,
                    uncertain: tl.crosses_loss(e.to_cpu, e.ts, e.at) && !tl.lost.is_empty(),
                };
                if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
                    continue;
                }
                let s = coll.at((e.key as u64, 0), "raise-to-entry", || vec_name(e.key));
                s.count("served_in", Tally::Str(where_), 1);
                s.push(cx, r);
            }
            EdgeKind::Tasklet => {
                let r = Raw {
                    ts: e.ts,
                    end: e.at,
                    value: e.at - e.ts,
                    cpu: e.to_cpu,
                    tid: e.to_tid,
                    comm: Sym::EMPTY,
                    idx: ei as u32,
                    src: Src::Edge,
                    uncertain: false,
                };
                if cx.keep(r.ts, r.cpu, r.tid, r.comm) {
                    coll.add(cx, "tasklet".to_string(), "schedule-to-run", r);
                }
            }
            _ => {}
        }
    }
    for i in 0..sp.len() {
        let (key, metric) = match sp.kind[i] {
            SpanKind::Softirq => (vec_name(sp.key[i]), "run"),
            SpanKind::Tasklet => (format!("tasklet {}", cx.s.get(Sym(sp.key[i]))), "run"),
            _ => continue,
        };
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open.set(cx.open.get() + 1);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        let s = coll.get(key, metric);
        if sp.kind[i] == SpanKind::Softirq {
            s.count("served_in", Tally::Str(served_in(sp.flags[i])), 1);
        }
        s.push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Softirq,
        "softirq raise-to-entry latency and run time per vector, where it ran (irq exit, ksoftirqd, task), and tasklets",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &softirq_detail,
    );
    if tl.saw(KindClass::SoftirqEntry) == 0 {
        rep.missing_events.push(needs(
            Measure::Softirq,
            "softirq run time",
            &["irq:softirq_entry", "irq:softirq_exit"],
        ));
    }
    if tl.saw(KindClass::SoftirqRaise) == 0 {
        rep.missing_events.push(needs(
            Measure::Softirq,
            "raise-to-entry latency",
            &["irq:softirq_raise"],
        ));
    }
    rep
}

fn served_in(flags: u8) -> &'static str {
    if flags & span::KSOFTIRQD != 0 {
        "ksoftirqd"
    } else if flags & span::IN_TASK != 0 {
        "task (bh enable)"
    } else {
        "irq exit"
    }
}

fn softirq_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    if r.src != Src::Edge {
        let sp = &tl.spans;
        let i = r.idx as usize;
        let key = if sp.kind[i] == SpanKind::Softirq {
            vec_name(sp.key[i])
        } else {
            format!("tasklet {}", cx.s.get(Sym(sp.key[i])))
        };
        let d = format!("ran in {} on CPU{}", served_in(sp.flags[i]), r.cpu);
        return base_sample(cx, r, key, d);
    }
    let e = &tl.edges[r.idx as usize];
    let key = if e.kind == EdgeKind::Tasklet {
        "tasklet".to_string()
    } else {
        vec_name(e.key)
    };
    let mut d = format!(
        "raised in {} on CPU{}",
        cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
        e.from_cpu
    );
    if e.kind == EdgeKind::Softirq {
        let fl = e.val as u8;
        let _ = write!(d, "; served in {}", served_in(fl));
        if fl & span::KSOFTIRQD == 0 {
            let _ = write!(d, " ({})", cx.task(e.to_tid, Sym::EMPTY));
        }
    }
    // Was ksoftirqd waiting on this CPU meanwhile? That is the deferral.
    let idx = cx.runnable_index();
    if let Some(l) = idx.get(r.cpu as usize) {
        let stop = l.partition_point(|&j| tl.spans.start[j as usize] < r.end);
        for &j in l[..stop].iter().rev().take(64) {
            let j = j as usize;
            let name = cx.s.get(cx.tl.comm(tl.spans.tid[j]));
            if name.starts_with("ksoftirqd") && tl.spans.end[j] > r.ts {
                let _ = write!(
                    d,
                    "; deferred to {} (runnable {} from {})",
                    cx.task(tl.spans.tid[j], Sym::EMPTY),
                    dur(tl.spans.dur(j as u32)),
                    secs(tl.spans.start[j])
                );
                break;
            }
        }
    }
    let mut s = base_sample(cx, r, key, d);
    s.cpu_held_by = cx.holders(r.cpu, r.ts, r.end, -1);
    s
}

fn work(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for (ei, e) in tl.edges.iter().enumerate() {
        if e.kind != EdgeKind::Work {
            continue;
        }
        let r = Raw {
            ts: e.ts,
            end: e.at,
            value: e.at - e.ts,
            cpu: e.to_cpu,
            tid: e.to_tid,
            comm: Sym::EMPTY,
            idx: ei as u32,
            src: Src::Edge,
            uncertain: !tl.lost.is_empty() && tl.crosses_loss(u32::MAX, e.ts, e.at),
        };
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        let s = coll.at((e.key as u64, 0), "queue-to-start", || {
            cx.s.get(Sym(e.key)).to_string()
        });
        s.count("workers", Tally::Task(e.to_tid, Sym::EMPTY), 1);
        s.push(cx, r);
    }
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Work {
            continue;
        }
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open.set(cx.open.get() + 1);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        let s = coll.at((sp.key[i] as u64, 0), "run", || {
            cx.s.get(Sym(sp.key[i])).to_string()
        });
        s.count("workers", Tally::Task(r.tid, r.comm), 1);
        s.push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Work,
        "work items: queue-to-start latency and run time, per work function (and the workers that ran it)",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &work_detail,
    );
    if tl.saw(KindClass::WorkExecute) == 0 {
        rep.missing_events.push(needs(
            Measure::Work,
            "work run time",
            &[
                "workqueue:workqueue_execute_start",
                "workqueue:workqueue_execute_end",
            ],
        ));
    }
    if tl.saw(KindClass::WorkQueue) == 0 {
        rep.missing_events.push(needs(
            Measure::Work,
            "queue-to-start latency",
            &["workqueue:workqueue_queue_work"],
        ));
    }
    rep
}

fn work_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    if r.src == Src::Span {
        let key = cx.s.get(Sym(tl.spans.key[r.idx as usize])).to_string();
        let d = format!("ran in {} on CPU{}", cx.task(r.tid, r.comm), r.cpu);
        return base_sample(cx, r, key, d);
    }
    let e = &tl.edges[r.idx as usize];
    let key = cx.s.get(Sym(e.key)).to_string();
    let d = format!(
        "queued by {} on CPU{}; ran in {} on CPU{}",
        cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
        e.from_cpu,
        cx.task(e.to_tid, Sym::EMPTY),
        e.to_cpu
    );
    let mut s = base_sample(cx, r, key, d);
    s.cpu_held_by = cx.holders(e.to_cpu, e.ts, e.at, e.to_tid);
    s
}

fn syscall_name(cx: &Cx<'_>, key: u32, flags: u8) -> String {
    cx.tl.syscall_name(cx.s, key, flags)
}

fn syscall(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Syscall {
            continue;
        }
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open.set(cx.open.get() + 1);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        let (key, fl) = (sp.key[i], sp.flags[i]);
        let named = u64::from(fl & span::NAMED != 0);
        let id = (
            (key as u64) << 1 | named,
            (r.tid as u32 as u64) << 32 | r.comm.0 as u64,
        );
        let s = coll.at(id, "duration", || {
            format!("{} {}", syscall_name(cx, key, fl), cx.task(r.tid, r.comm))
        });
        let mig = sp.aux[i] as u64;
        s.count("migrations", Tally::Plain, mig);
        s.count("calls_with_migrations", Tally::Plain, u64::from(mig > 0));
        s.push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Syscall,
        "system call duration (enter to exit) per syscall and task, with CPU migrations inside the call",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &|cx, r| {
            let sp = &cx.tl.spans;
            let i = r.idx as usize;
            let name = syscall_name(cx, sp.key[i], sp.flags[i]);
            let key = format!("{} {}", name, cx.task(r.tid, r.comm));
            let d = format!(
                "{name} entered on CPU{}, {} migration(s) before it returned",
                r.cpu, sp.aux[i]
            );
            base_sample(cx, r, key, d)
        },
    );
    if tl.saw(KindClass::RawSyscall) + tl.saw(KindClass::Syscall) == 0 {
        rep.missing_events.push(needs(
            Measure::Syscall,
            "syscall durations",
            &[
                "raw_syscalls:sys_enter",
                "raw_syscalls:sys_exit (or syscalls:sys_enter_*/sys_exit_*)",
            ],
        ));
    }
    rep
}

fn timer(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let mut coll = Collector::new();
    let mut unknown = 0u64;
    let clock = TimerClock::new(tl);
    for (ei, e) in tl.edges.iter().enumerate() {
        if e.kind != EdgeKind::Timer {
            continue;
        }
        if e.val == u64::MAX || e.val2 == u64::MAX {
            unknown += 1;
            continue;
        }
        let full = e.val2.saturating_sub(e.val);
        // A timer armed for a time already past (its task overran the period) fires at
        // once: that is the task's lateness, not the timer's. Measure the timer from when
        // it could first have fired.
        let armed_late = clock.armed_late(tl, ei);
        let late = armed_late.unwrap_or(full);
        // Due time in trace time: from there to the task running is the period's
        // lateness, including the callback's wait behind earlier ones in its interrupt.
        let due = clock.due(tl, ei).unwrap_or(e.at);
        let key = timer_key(cx, e);
        let r = Raw {
            ts: e.at.saturating_sub(late),
            end: e.at,
            value: late,
            cpu: e.to_cpu,
            tid: if e.to_tid > 0 { e.to_tid } else { e.from_tid },
            comm: Sym::EMPTY,
            idx: ei as u32,
            src: Src::Edge,
            uncertain: false,
        };
        if !cx.keep(e.at, r.cpu, r.tid, r.comm) {
            continue;
        }
        let sl = coll.get(key.clone(), "lateness");
        sl.count(
            "armed_after_expiry",
            Tally::Plain,
            u64::from(armed_late.is_some()),
        );
        sl.push(cx, r);
        let r = Raw {
            ts: due,
            value: e.at - due,
            ..r
        };
        if e.link == NONE && e.to_tid > 0 {
            // Woke its task before it was off the CPU: no wait after the expiry.
            coll.add(cx, key.clone(), "expiry-to-running", r);
        } else if e.link != NONE {
            let w = &tl.edges[e.link as usize];
            if w.span != NONE {
                let si = w.span as usize;
                let sp = &tl.spans;
                if sp.flags[si] & span::END_UNKNOWN == 0 {
                    let wait = sp.end[si] - sp.start[si];
                    let mut r2 = span_raw(tl, si);
                    r2.value = wait;
                    coll.add(cx, key.clone(), "wakeup-after-expiry", r2);
                    let mut r3 = r;
                    r3.value = sp.end[si].saturating_sub(due);
                    // Its end is the wait's: inferred when the switch-in was not traced.
                    r3.uncertain = r2.uncertain;
                    r3.end = sp.end[si];
                    coll.add(cx, key, "expiry-to-running", r3);
                }
            }
        }
    }
    for rl in &tl.reported {
        if !cx.keep(rl.ts, rl.cpu, rl.tid, Sym::EMPTY) {
            continue;
        }
        let s = coll.get(format!("{} (self-reported)", cx.s.get(rl.name)), "lateness");
        if let Some(n) = rl.overruns {
            s.count("overruns", Tally::Plain, n);
        }
        s.push(
            cx,
            Raw {
                ts: rl.ts.saturating_sub(rl.late_ns),
                end: rl.ts,
                value: rl.late_ns,
                cpu: rl.cpu,
                tid: rl.tid,
                comm: Sym::EMPTY,
                idx: NONE,
                src: Src::None,
                uncertain: false,
            },
        );
    }
    let mut rep = finish_report(
        cx,
        Measure::Timer,
        "hrtimer lateness (expire_entry now minus the requested expiry, softexpires) per timer function and owner, the woken task's wait after it, and expiry to running (from the expiry on the trace clock, so a callback's wait behind others in its interrupt counts)",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &timer_detail,
    );
    if unknown > 0 {
        rep.notes.push(format!(
            "{unknown} hrtimer expiries without a known expiry time (armed before the trace, or an older kernel without `now`): not measured"
        ));
    }
    if tl.saw(KindClass::HrtimerExpire) == 0 && tl.reported.is_empty() {
        rep.missing_events.push(needs(
            Measure::Timer,
            "hrtimer lateness",
            &[
                "timer:hrtimer_start",
                "timer:hrtimer_expire_entry",
                "timer:hrtimer_expire_exit",
            ],
        ));
    } else if tl.saw(KindClass::HrtimerStart) == 0 && tl.reported.is_empty() {
        rep.missing_events.push(needs(
            Measure::Timer,
            "hrtimer lateness",
            &["timer:hrtimer_start"],
        ));
    }
    rep
}

/// A timer's group: its function and its owner — the task it woke, the task that armed
/// it, or else its CPU (tick and other timers armed from interrupt context).
fn timer_key(cx: &Cx<'_>, e: &crate::timeline::Edge) -> String {
    let owner = if e.to_tid > 0 {
        cx.task(e.to_tid, Sym::EMPTY)
    } else {
        match e.from {
            Ctx::Task { tid } if tid > 0 => cx.task(tid, Sym::EMPTY),
            _ => format!("CPU{}", e.to_cpu),
        }
    };
    format!("{} ({owner})", cx.s.get(Sym(e.key)))
}

fn timer_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    match r.src {
        Src::Edge => {
            let e = &tl.edges[r.idx as usize];
            let key = timer_key(cx, e);
            let mut d = format!("expired on CPU{} at {}", e.to_cpu, secs(e.at));
            if e.ts != 0 {
                let _ = write!(
                    d,
                    ", armed by {} at {}",
                    cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                    secs(e.ts)
                );
            }
            for off in cx.offs(e.to_cpu, r.ts, e.at) {
                let _ = write!(d, "; {off}");
            }
            let mut s = base_sample(cx, r, key, d);
            s.cpu_held_by = cx.holders(e.to_cpu, r.ts, r.end, e.to_tid);
            s
        }
        Src::Span => {
            let sp = &tl.spans;
            let i = r.idx as usize;
            let d = format!("woken by the timer, waited on CPU{}", sp.cpu[i]);
            let mut s = base_sample(cx, r, cx.task(r.tid, r.comm), d);
            s.cpu_held_by = cx.holders(sp.cpu[i], sp.start[i], sp.end[i], r.tid);
            s
        }
        Src::None => {
            let rl = tl
                .reported
                .iter()
                .find(|x| x.ts == r.end && x.late_ns == r.value);
            let mut d = match rl.and_then(|x| x.overruns) {
                Some(n) => format!("reported by the traced code, {n} overruns"),
                None => "reported by the traced code".to_string(),
            };
            for off in cx.offs(r.cpu, r.ts, r.end) {
                let _ = write!(d, "; {off}");
            }
            let key = rl.map_or_else(String::new, |x| {
                format!("{} (self-reported)", cx.s.get(x.name))
            });
            base_sample(cx, r, key, d)
        }
    }
}

fn irqsoff(cx: &Cx<'_>, o: &Options, tracers: &[TracerSample]) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    for i in 0..sp.len() {
        let metric = match sp.kind[i] {
            SpanKind::IrqsOff => "irqs-off",
            SpanKind::PreemptOff => "preempt-off",
            _ => continue,
        };
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open.set(cx.open.get() + 1);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        coll.add(cx, func_of(cx.s.get(Sym(sp.key[i]))).to_string(), metric, r);
    }
    for t in tracers.iter().filter(|t| !t.tracer.starts_with("wakeup")) {
        let metric: &'static str = match t.tracer.as_str() {
            "irqsoff" => "irqs-off",
            "preemptoff" => "preempt-off",
            "preemptirqsoff" => "preempt-irqs-off",
            _ => "latency-tracer",
        };
        let key = t
            .started_at
            .as_deref()
            .map_or_else(|| "?".to_string(), |s| func_of(s.trim()).to_string());
        coll.add(
            cx,
            key,
            metric,
            Raw {
                ts: 0,
                end: t.latency_ns,
                value: t.latency_ns,
                cpu: t.cpu.unwrap_or(u32::MAX),
                tid: t.pid.unwrap_or(-1),
                comm: Sym::EMPTY,
                idx: NONE,
                src: Src::None,
                uncertain: false,
            },
        );
    }
    let tr = tracers.to_vec();
    let mut rep = finish_report(
        cx,
        Measure::Irqsoff,
        "irqs-off and preempt-off sections per caller that opened them (preemptirq events, latency-tracer dumps)",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &move |cx, r| {
            if r.src == Src::None {
                let t = tr.iter().find(|t| t.latency_ns == r.value);
                let key = t
                    .and_then(|t| t.started_at.as_deref())
                    .map_or_else(|| "?".to_string(), |s| func_of(s.trim()).to_string());
                let d = t.map_or_else(String::new, |t| {
                    format!(
                        "{} tracer dump {}: started at {}, ended at {}",
                        t.tracer,
                        t.file,
                        t.started_at.as_deref().unwrap_or("?").trim(),
                        t.ended_at.as_deref().unwrap_or("?").trim()
                    )
                });
                return base_sample(cx, r, key, d);
            }
            let sp = &cx.tl.spans;
            let i = r.idx as usize;
            let what = if sp.kind[i] == SpanKind::IrqsOff { "irqs off" } else { "preemption off" };
            let d = format!(
                "{what} on CPU{} in {}: disabled at {}, enabled at {}",
                r.cpu,
                cx.task(r.tid, r.comm),
                cx.s.get(Sym(sp.key[i])),
                cx.s.get(Sym(sp.aux[i]))
            );
            base_sample(cx, r, func_of(cx.s.get(Sym(sp.key[i]))).to_string(), d)
        },
    );
    if tl.saw(KindClass::IrqToggle) + tl.saw(KindClass::PreemptToggle) == 0 && tracers.is_empty() {
        rep.missing_events.push(needs(
            Measure::Irqsoff,
            "irqs-off / preempt-off sections",
            &[
                "preemptirq:irq_disable",
                "preemptirq:irq_enable",
                "preemptirq:preempt_disable",
                "preemptirq:preempt_enable (CONFIG_PREEMPTIRQ_TRACEPOINTS), or an irqsoff tracer dump",
            ],
        ));
    }
    rep
}

fn throughput(cx: &Cx<'_>, o: &Options, t: Option<&Throughput>) -> MeasureReport {
    let mut coll = Collector::new();
    let mut notes = Vec::new();
    let mut missing = Vec::new();
    match t {
        None => missing.push(needs(
            Measure::Throughput,
            "throughput (say which events: --event NAME)",
            &["any event"],
        )),
        Some(t) if t.start.is_none() => missing.push(needs(
            Measure::Throughput,
            &format!("throughput of {}", t.opts.event),
            &[t.opts.event.as_str()],
        )),
        Some(t) => {
            let iv = t.opts.interval_ns.max(1);
            let start = t.start.unwrap_or(0);
            let metric: &'static str = if t.opts.field.is_some() {
                "sum-per-second"
            } else {
                "events-per-second"
            };
            let key = match &t.opts.field {
                Some(f) => format!("{} {}", t.opts.event, f),
                None => t.opts.event.clone(),
            };
            let s = coll.get(key, metric);
            let mut busy = 0u64;
            let mut below = 0u64;
            for (i, &(n, sum)) in t.buckets.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                busy += 1;
                let v = if t.opts.field.is_some() { sum } else { n };
                let rate = (v as u128 * 1_000_000_000 / iv as u128) as u64;
                if let Some(x) = t.opts.expect_per_s {
                    if (rate as f64) < x {
                        below += 1;
                    }
                }
                let ts = start + i as u64 * iv;
                s.push(
                    cx,
                    Raw {
                        ts,
                        end: ts + iv,
                        value: rate,
                        cpu: u32::MAX,
                        tid: -1,
                        comm: Sym::EMPTY,
                        idx: NONE,
                        src: Src::None,
                        uncertain: false,
                    },
                );
            }
            let total: u64 = t
                .buckets
                .iter()
                .map(|b| if t.opts.field.is_some() { b.1 } else { b.0 })
                .sum();
            add_u64(&mut s.extra, "intervals_with_events", busy);
            add_u64(&mut s.extra, "interval_ns", iv);
            add_u64(&mut s.extra, "total", total);
            if let Some(x) = t.opts.expect_per_s {
                s.extra
                    .insert("expected_per_s".into(), serde_json::Value::from(x));
                add_u64(&mut s.extra, "intervals_below_expected", below);
            }
            if t.unsummable > 0 {
                notes.push(format!(
                    "{} events had no numeric `{}` and count as 0",
                    t.unsummable,
                    t.opts.field.as_deref().unwrap_or("")
                ));
            }
        }
    }
    let expect = t.and_then(|t| t.opts.expect_per_s);
    let mut coll_rep = finish_report(
        cx,
        Measure::Throughput,
        "throughput: events (or the sum of a field) per second, per interval in which the stream was active",
        "per_s",
        coll,
        o.top,
        o.raw_samples,
        &move |cx, r| {
            let d = match expect {
                Some(x) => format!("{:.0}/s in this interval, {:.0}% of the expected {x:.0}/s", r.value as f64, r.value as f64 * 100.0 / x),
                None => format!("{}/s in this interval", r.value),
            };
            base_sample(cx, r, String::new(), d)
        },
    );
    // For a stream that should keep up, the slowest busy intervals are the news.
    for g in &mut coll_rep.groups {
        if expect.is_some() {
            g.worst.reverse();
        }
        for w in &mut g.worst {
            w.group = g.key.clone();
        }
    }
    if expect.is_some() {
        coll_rep.worst = coll_rep
            .groups
            .iter()
            .flat_map(|g| g.worst.iter().cloned())
            .collect();
    }
    coll_rep.missing_events = missing;
    coll_rep.notes = notes;
    coll_rep
}

/// Computes the measures asked for (or every measure the trace can feed) on a timeline.
pub fn compute(
    tl: &Timeline,
    strings: &Interner,
    o: &Options,
    tracers: &[TracerSample],
    tput: Option<&Throughput>,
) -> Vec<MeasureReport> {
    let cx = Cx {
        tl,
        s: strings,
        f: &o.filter,
        first: tl.first_ts.unwrap_or(0),
        runnable_by_cpu: std::cell::OnceCell::new(),
        offs_by_cpu: std::cell::OnceCell::new(),
        open: std::cell::Cell::new(0),
    };
    let list: Vec<Measure> = if o.measures.is_empty() {
        Measure::ALL
            .into_iter()
            .filter(|m| *m != Measure::Throughput || tput.is_some())
            .collect()
    } else {
        o.measures.clone()
    };
    let mut out = Vec::new();
    for m in list {
        cx.open.set(0);
        let mut r = match m {
            Measure::Wakeup => wakeup(&cx, o, tracers),
            Measure::Runqueue => runqueue(&cx, o),
            Measure::Irq => irq(&cx, o),
            Measure::Softirq => softirq(&cx, o),
            Measure::Work => work(&cx, o),
            Measure::Syscall => syscall(&cx, o),
            Measure::Timer => timer(&cx, o),
            Measure::Throughput => throughput(&cx, o, tput),
            Measure::Irqsoff => irqsoff(&cx, o, tracers),
        };
        r.open += cx.open.get();
        if r.open > 0 {
            r.notes.push(format!(
                "{} samples open at the trace's start or end are left out",
                r.open
            ));
        }
        let unc: u64 = r.groups.iter().map(|g| g.uncertain).sum();
        if unc > 0 {
            r.notes.push(format!(
                "{unc} samples cross lost events or have an inferred endpoint (marked uncertain)"
            ));
        }
        out.push(r);
    }
    out
}
