//! The measures' options and results: which measures, the sample filter, and per measure its groups (count, quantiles, histogram, worst samples) and what the trace lacked.

pub use crate::dist::Bucket;
use crate::glob::Glob;
pub use crate::read::inputs::TracerSample;
use crate::timeline::OccupantKind;
use serde::Serialize;

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
    /// function_graph call durations.
    Function,
    /// timerlat tracer samples per CPU and context.
    Timerlat,
    /// osnoise tracer noise per period, noise sources, threshold hits.
    Osnoise,
}

impl Measure {
    /// All measures, in report order.
    pub const ALL: [Measure; 12] = [
        Measure::Wakeup,
        Measure::Runqueue,
        Measure::Irq,
        Measure::Softirq,
        Measure::Work,
        Measure::Syscall,
        Measure::Timer,
        Measure::Throughput,
        Measure::Irqsoff,
        Measure::Function,
        Measure::Timerlat,
        Measure::Osnoise,
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
            Measure::Function => "function",
            Measure::Timerlat => "timerlat",
            Measure::Osnoise => "osnoise",
        }
    }

    /// Every measure's name, in report order: the list the CLI help, the MCP schema and
    /// the docs give.
    pub fn names() -> Vec<&'static str> {
        Measure::ALL.iter().map(|m| m.name()).collect()
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
    /// The stream: a selector, `EVENT[FIELD OP VALUE,...]` (`console`, `sched_switch`,
    /// `funcgraph_entry[func=serial8250_console_putchar]`, `console[len>1]`).
    pub event: String,
    /// Sum this numeric field instead of counting (`len` = message bytes + 1 for the
    /// newline, for console and trace_marker events).
    pub field: Option<String>,
    /// Interval, ns.
    pub interval_ns: u64,
    /// Expected rate per second, e.g. 11520 for 115200 baud 8N1.
    pub expect_per_s: Option<f64>,
}

/// Options of [`compute`](crate::measure::compute).
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
    /// `function`: only functions whose name matches.
    pub func: Option<Glob>,
    /// Which samples count: every one, or a window's share of a trace read in windows.
    pub settle: Settle,
}

/// The samples a timeline settles: every one when it is the whole trace; when it is one
/// window of a trace read in windows (`latency`'s windowed pass), those that end in its
/// own stretch `[lo, cut)`, so that each sample is counted once, by the window that saw
/// it end, whatever the window it started in (the window's timeline carries what was
/// open when it began). A sample whose end the trace lacks counts in the last window
/// alone. A window's groups also carry their values as a [`crate::dist::Sketch`], for
/// the windows' merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle {
    /// Where the stretch begins (0: the first window).
    pub lo: u64,
    /// Where it ends (`u64::MAX`: the last window).
    pub cut: u64,
    /// The spans closed in the stretch, by index ([`crate::timeline::Timeline::own_spans`]):
    /// a span is settled when it closes, which for some is later than its end (a run
    /// an implicit switch ends at the CPU's last event).
    pub spans: Option<(u32, u32)>,
}

impl Settle {
    /// The whole trace.
    pub const WHOLE: Settle = Settle {
        lo: 0,
        cut: u64::MAX,
        spans: None,
    };

    /// Whether a sample that ended at `end` is this stretch's.
    #[inline]
    pub fn ends(&self, end: u64) -> bool {
        end >= self.lo && end < self.cut
    }

    /// Whether span `i`, which ended at `end`, is this stretch's: it closed in it.
    #[inline]
    pub fn span(&self, i: usize, end: u64) -> bool {
        match self.spans {
            Some((a, b)) => (a as usize..b as usize).contains(&i),
            None => self.ends(end),
        }
    }

    /// Whether samples still open at the timeline's end are this stretch's (the trace
    /// ended in it).
    pub fn is_last(&self) -> bool {
        self.cut == u64::MAX
    }

    /// Whether a sample left out for being open at an end of the trace is this
    /// stretch's to count: `end` is its end when only its start is missing, `None` when
    /// its end is.
    pub fn counts_open(&self, end: Option<u64>) -> bool {
        end.map_or(self.is_last(), |e| self.ends(e))
    }

    /// Whether this is a window's share rather than the whole trace.
    pub fn is_window(&self) -> bool {
        *self != Settle::WHOLE
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            measures: Vec::new(),
            filter: Filter::default(),
            top: 10,
            raw_samples: false,
            throughput: None,
            func: None,
            settle: Settle::WHOLE,
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
    /// Crosses a lost-events window, or an endpoint was inferred and could be off by a
    /// share of the value that matters (see [`uncertain`]).
    pub uncertain: bool,
    /// Crosses a lost-events window (the trace dropped events there).
    pub lost: bool,
    /// An endpoint was inferred (the kernel does not trace it): how far off it can be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inferred_bound_ns: Option<u64>,
}

/// An inferred endpoint makes a sample uncertain only when it could be off by more than
/// this share of the sample: 1/10...
pub const UNCERTAIN_SHARE: u64 = 10;

/// ...and by more than this, ns: 100 us. An untraced switch out of idle costs the
/// switch path itself (tens of microseconds on a virtual machine) in nearly every wakeup
/// it ends; more than this unseen is something the trace does not show.
pub const UNCERTAIN_FLOOR_NS: u64 = 100_000;

/// Whether a sample of `value` is uncertain: it crosses lost events (`lost`: what the
/// trace dropped there is unknown), or an endpoint of it was inferred (`inferred`, with
/// how far off that can be when known) and it could be off by more than a tenth of its
/// value and more than 100 us ([`UNCERTAIN_SHARE`], [`UNCERTAIN_FLOOR_NS`]; always when
/// the bound is unknown). An inferred endpoint that moves a sample by less is counted
/// and bounded, not alarmed on.
pub fn uncertain(lost: bool, inferred: Option<Option<u64>>, value: u64) -> bool {
    lost || inferred.is_some_and(|b| {
        b.is_none_or(|b| b > UNCERTAIN_FLOOR_NS && b.saturating_mul(UNCERTAIN_SHARE) > value)
    })
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
    /// Samples flagged uncertain: crossing lost events, or with an inferred endpoint
    /// that could be off by more than a tenth of the sample and 100 us (see
    /// [`uncertain`]).
    pub uncertain: u64,
    /// Samples crossing lost events (the trace dropped events there).
    pub lost: u64,
    /// Samples with an inferred endpoint (the kernel does not trace it), whether or not
    /// that makes them uncertain.
    pub inferred: u64,
    /// The largest bound on how far an inferred endpoint can be off, ns (null: none
    /// inferred, or a bound unknown).
    pub inferred_bound_ns: Option<u64>,
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
    /// The values as a sketch, for merging windows ([`Settle::is_window`] only).
    #[serde(skip)]
    pub sketch: Option<crate::dist::Sketch>,
    /// The thread of a per-thread group, which windows' groups are merged by.
    #[serde(skip)]
    pub task: Option<TaskKey>,
}

/// The thread a per-thread group is of.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskKey {
    /// Its thread id.
    pub tid: i32,
    /// Which life of that id (the forks of it before; pid reuse).
    pub life: usize,
    /// Its name at its latest sample, before `#life` is added to tell lives apart.
    pub name: String,
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
