//! The explain report: causes, misses with their chains, context and advice (the JSON
//! schema in docs/json.md).

use super::causes::{self as cause, Category};
use crate::dist::Sketch;
use crate::event::Interner;
use crate::packed::{get_i, get_u, put_i, put_u, Pack, Packed};
use crate::read::inputs::InputInfo;
use crate::timeline::Timeline;
use serde::Serialize;
use std::fmt::Write as _;

/// A cause: (category, culprit).
pub type CauseKey = (Category, Culprit);

/// Who a cause names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Culprit {
    /// Task name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    /// Task id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Kernel priority (0-99 RT, 100-139 normal), when the trace said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    /// Irq number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub irq: Option<u32>,
    /// Irq name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub irq_name: Option<String>,
    /// Softirq vector name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<String>,
    /// Code that disabled interrupts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// CPU where it held the chain up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
}

impl Hold {
    /// `category` held `cpu` for `ns`, with no culprit but the CPU (lost events, an idle
    /// or stalled CPU, a late interrupt with no visible reason).
    pub(super) fn on_cpu(category: Category, cpu: u32, ns: u64) -> Hold {
        Hold {
            category,
            culprit: Culprit {
                cpu: Some(cpu),
                ..Default::default()
            },
            ns,
            why: None,
            nested_ns: 0,
        }
    }
}

impl Culprit {
    /// `comm[pid] (prio ...)`, `irq 16 (ehci)`, `softirq NET_RX`, `console_unlock`.
    pub fn label(&self) -> String {
        if let Some(c) = &self.comm {
            let mut s = format!("{c}[{}]", self.pid.unwrap_or(-1));
            if let Some(p) = self.prio {
                let _ = write!(s, " {}", policy(p));
            }
            return s;
        }
        if let Some(i) = self.irq {
            return match &self.irq_name {
                Some(n) => format!("irq {i} ({n})"),
                None => format!("irq {i}"),
            };
        }
        if let Some(v) = &self.vector {
            return format!("softirq {v}");
        }
        if let Some(c) = &self.caller {
            return c.clone();
        }
        "-".to_string()
    }
}

impl Culprit {
    /// The label as read after its category: no repeated word (`softirq TIMER` under
    /// `softirq` reads `TIMER`), and a culprit with no task, irq or code to name says what
    /// the category stands for instead of `-`.
    pub fn label_in(&self, category: Category) -> String {
        let l = self.label();
        if l == "-" {
            return anonymous(category).to_string();
        }
        match l.strip_prefix(category.id()) {
            Some(rest) if rest.starts_with(' ') => rest.trim_start().to_string(),
            _ => l,
        }
    }

    /// Task `tid` as the trace names it, on `cpu`.
    pub(super) fn task(tl: &Timeline, s: &Interner, tid: i32, cpu: u32) -> Culprit {
        Culprit {
            comm: Some(s.get(tl.comm(tid)).to_string()),
            pid: Some(tid),
            prio: tl.prios.get(&tid).copied(),
            cpu: Some(cpu),
            ..Default::default()
        }
    }
}

impl Link {
    /// A point in a chain (`from`, `to`, `deadline`) at `ts`, in a cycle that began at
    /// `start`: no duration, no blame; struct update fills in the rest for real links.
    pub(super) fn mark(kind: &str, start: u64, ts: u64, cpu: Option<u32>, what: String) -> Link {
        Link {
            offset_ns: ts - start,
            ts_ns: ts,
            cpu,
            kind: kind.into(),
            what,
            duration_ns: 0,
            usual_ns: None,
            excess_ns: 0,
            pending_at_deadline: false,
            after_deadline: false,
            held_by: Vec::new(),
            waiter: None,
            queued_in_irq: None,
        }
    }
}

/// What a cause with no task, irq or code to name stands for.
fn anonymous(category: Category) -> &'static str {
    match category {
        cause::CPU_IDLE => "(the CPU was idle)",
        cause::UNKNOWN => "(nothing the trace shows)",
        cause::DEVICE_EXTERNAL => "(the device or peer: nothing on the CPUs)",
        cause::CPU_STALLED => "(the CPU did not run: host or lost events)",
        cause::TIMER_IRQ_LATE | cause::IRQ_LATE => "(no cause in the trace)",
        cause::UNKNOWN_LOST_EVENTS => "(events lost there)",
        cause::TRACE_CUT => "(no data: file cut)",
        cause::SWITCH_IN_UNTRACED => "(when the task got the CPU is not traced)",
        cause::TIMER_IRQ_LATENCY => "(the timer's interrupt came late)",
        cause::SCHED_OVERHEAD => "(switching to the thread, kernel entry and exit)",
        cause::NMI => "(non-maskable interrupts)",
        _ => "(no task or irq to name)",
    }
}

/// `SCHED_OTHER nice 0` / `RT prio 50` from a kernel prio.
pub(super) fn policy(prio: i32) -> String {
    if prio < 100 {
        format!("(RT {})", 99 - prio)
    } else {
        format!("(nice {})", prio - 120)
    }
}

/// ` (RT 50)` / ` (nice 0)` for a kernel priority, nothing when unknown.
pub(super) fn prio_words(prio: Option<i32>) -> String {
    prio.map(|p| format!(" {}", policy(p))).unwrap_or_default()
}

/// A ranked cause over all misses.
#[derive(Clone, Debug, Serialize)]
pub struct CauseRow {
    /// `runqueue-wait`, `preempted-by`, `hardirq`, `softirq`, `irqs-off`, `cpu-idle`,
    /// `unknown-lost-events`, `unknown`.
    pub category: Category,
    /// Who.
    pub culprit: Culprit,
    /// Misses it contributed to.
    pub count: u64,
    /// Excess time it accounts for, summed over the misses it delayed: a wait that held
    /// up several overlapping misses counts once per miss.
    pub total_excess_ns: u64,
    /// The same, each wait counted once: where misses overlap in time, their shared
    /// wait counts once (equal to `total_excess_ns` when no misses overlap).
    pub once_ns: u64,
    /// Per miss it contributed to.
    pub mean_excess_ns: u64,
    /// Share of all blamed excess.
    pub share: f64,
}

/// One link of a chain.
#[derive(Clone, Debug, Serialize)]
pub struct Link {
    /// Offset of its start from the cycle start.
    pub offset_ns: u64,
    /// Absolute start.
    pub ts_ns: u64,
    /// CPU where it waited or ran.
    pub cpu: Option<u32>,
    /// `from`, `work`, `wakeup`, `timer`, `to`, `deadline`.
    pub kind: String,
    /// What happened, in words.
    pub what: String,
    /// How long it took.
    pub duration_ns: u64,
    /// Its usual duration in good cycles (or in the whole trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usual_ns: Option<u64>,
    /// Time above usual.
    pub excess_ns: u64,
    /// Still pending when the deadline passed.
    pub pending_at_deadline: bool,
    /// Began after the deadline: shown to tell how the cycle ended, never blamed.
    pub after_deadline: bool,
    /// What held it up, largest first: category, culprit, time.
    pub held_by: Vec<Hold>,
    /// The task that waited (the woken task, the worker).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiter: Option<Culprit>,
    /// Work queued from an interrupt: its irq (`u32::MAX`: from outside the cycle's chain,
    /// most likely an interrupt the trace did not record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_in_irq: Option<u32>,
}

/// One part of a link's time.
#[derive(Clone, Debug, Serialize)]
pub struct Hold {
    /// Category.
    pub category: Category,
    /// Who.
    pub culprit: Culprit,
    /// Time held.
    pub ns: u64,
    /// The evidence that decided the category, when it was weighed (a silent CPU: stalled
    /// or inside a system call with interrupts off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Of `ns`, the time a handler or softirq held the CPU while deferred work waited for
    /// a runnable ksoftirqd there: it delayed the work only because the work waited, so
    /// the deferral ranks ahead of it (see `driver::rank`). Not in the JSON.
    #[serde(skip)]
    pub nested_ns: u64,
}

/// One missed cycle.
#[derive(Clone, Debug, Serialize)]
pub struct Miss {
    /// Cycle start.
    pub start_ns: u64,
    /// Duration, null when no reply came: until the reply was ready for its reader
    /// (the read, unless the reader was not waiting then: see `read_ns`).
    pub duration_ns: Option<u64>,
    /// Until the reader read the reply, when that was later than it was ready (the
    /// reader was not waiting: asleep in another call until its own timer woke it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_ns: Option<u64>,
    /// The reply was ready by the deadline, and read after it: the reader was not
    /// reading (a miss of its own kind).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_reading: bool,
    /// Its end is not traced (no sched_switch put the woken task on its CPU: lost, or
    /// not recorded): it ends at the task's first event there, so the duration is an
    /// upper bound and a miss near the deadline may not be one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub uncertain: bool,
    /// Thread.
    pub tid: i32,
    /// CPU of the `from` event.
    pub cpu: u32,
    /// Time over the deadline (no reply: until the cycle was abandoned).
    pub late_ns: u64,
    /// Excess blamed on causes.
    pub blamed_ns: u64,
    /// The chain, in time order.
    pub chain: Vec<Link>,
    /// Its excess per cause, as the causes table counts it (a hold can show in two links
    /// of a chain, but counts once): what merging misses from several windows tallies.
    #[serde(skip)]
    pub blame: Vec<(CauseKey, u64)>,
    /// Its excess per CPU where the chain lost it, as the context ranks CPUs: what
    /// merging misses from several windows adds up.
    #[serde(skip)]
    pub cpus: Vec<(u32, u64)>,
}

/// Cycle statistics.
#[derive(Clone, Debug, Serialize, Default)]
pub struct CycleStats {
    /// Cycles.
    pub count: u64,
    /// Cycles with a reply.
    pub replied: u64,
    /// Cycles without (that the trace saw through their deadline).
    pub no_reply: u64,
    /// Cycles without a reply that the trace ended (or lost a CPU's data) before their
    /// deadline: not judged.
    pub cut_off: u64,
    /// Cycles whose end event the trace lost (a system call's exit, before the thread's
    /// next call): not judged, and not in `cut_off`.
    #[serde(skip_serializing_if = "is_zero")]
    pub end_lost: u64,
    /// Misses (over the deadline, or no reply).
    pub misses: u64,
    /// Of the misses, those whose reply was ready by the deadline and read after it.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_reading: u64,
    /// Quantiles of replied cycles, until the reply was ready for its reader.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th.
    pub p90_ns: u64,
    /// 99th.
    pub p99_ns: u64,
    /// Max.
    pub max_ns: u64,
    /// Log histogram of replied durations.
    pub histogram: Vec<crate::measure::Bucket>,
    /// How replies were paired with requests (cycles only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairing: Option<PairingStats>,
    /// Quantiles until the reply was read, when some cycles were read later than ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadTimes>,
    /// The cycles summed for a merge of windows, where a window's cycle mode summed
    /// them as it walked them (cheaper than the merge walking every window again).
    #[serde(skip)]
    pub settled: Option<Box<Settled>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Replied cycles' durations until the reply was read, beside the ready times the
/// main quantiles are of (only where some reader was not waiting for its reply).
#[derive(Clone, Debug, Serialize, Default, PartialEq)]
pub struct ReadTimes {
    /// Cycles whose reply was read later than it was ready.
    pub later: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th.
    pub p90_ns: u64,
    /// 99th.
    pub p99_ns: u64,
    /// Max.
    pub max_ns: u64,
}

/// How replies were paired with requests, and how often requests overlapped.
#[derive(Clone, Debug, Serialize)]
pub struct PairingStats {
    /// `fifo`, `latest` or `key FIELD`.
    pub mode: String,
    /// Requests that began while an earlier one (of the same key) was still open.
    pub overlapped: u64,
    /// The most requests open at once under one key.
    pub max_open: u64,
}

/// A CPU the causes point at.
#[derive(Clone, Debug, Serialize)]
pub struct CpuContext {
    /// The CPU.
    pub cpu: u32,
    /// Why it matters.
    pub role: String,
    /// Share of the trace's time each busy task ran there, largest first.
    pub busy: Vec<(String, f64)>,
    /// Irqs handled there, by count.
    pub irqs: Vec<(String, u64)>,
}

/// One piece of advice.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Advice {
    /// What to do.
    pub action: String,
    /// The command, for this machine.
    pub command: String,
    /// What it costs or breaks.
    pub cost: String,
}

/// The result.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainReport {
    /// Inputs.
    pub inputs: Vec<InputInfo>,
    /// Events read.
    pub events: u64,
    /// The selectors.
    pub from: String,
    /// See `from`.
    pub to: Vec<String>,
    /// The deadline used.
    pub deadline_ns: Option<u64>,
    /// `given`, `inferred: ...`, or `none: ...`.
    pub deadline_source: String,
    /// Cycle statistics.
    pub cycles: CycleStats,
    /// Causes, largest total excess first.
    pub causes: Vec<CauseRow>,
    /// Every miss with its chain (worst first).
    pub misses: Vec<Miss>,
    /// CPUs behind the causes.
    pub context: Vec<CpuContext>,
    /// What to do.
    pub advice: Vec<Advice>,
    /// Where the analysis is blind or approximate.
    pub notes: Vec<String>,
    /// Where the trace itself is blind (a CPU's data cut short), with the time: said
    /// under the verdict, before any cause.
    pub blind: Vec<String>,
    /// What the readers could not understand (null when everything was read).
    pub unread: Option<crate::read::inputs::Unread>,
    /// The machine as `whylate record` saw it (null for other inputs).
    pub machine: Option<Machine>,
    /// What every CPU spent the trace on.
    pub cpus: Vec<crate::timeline::CpuProfile>,
    /// Every measured cycle (period, service), in start order: what the plots draw.
    #[serde(skip)]
    pub windows: Windows,
    /// How many misses the terminal shows in full.
    #[serde(skip)]
    pub top: usize,
    /// The recorder's own threads (`pipeline::recorder_threads`), sorted: their cause rows
    /// rank after the workload's, also where reports are merged (`watch`).
    #[serde(skip)]
    pub recorder: Vec<i32>,
    /// What a cycle is called in the terminal (`cycles`, `timer periods`).
    #[serde(skip)]
    pub noun: &'static str,
    /// `--expect`: the pattern and how its misses split (late, never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<ExpectStats>,
    /// A kernel log: its reports by kind and the mechanism recognised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelSummary>,
}

/// One measured cycle (request/response cycle, timer period, softirq service, outlier):
/// 32 bytes as a struct, one per cycle kept for the plots, so they are kept packed
/// ([`Windows`]). An end and a horizon share a field: only a cycle without an end has a
/// horizon.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Start (the `from` event, the timer's requested expiry, the raise).
    pub start_ns: u64,
    /// The end if it came, else the horizon.
    stop_ns: u64,
    /// The thread it measured (-1: none).
    pub tid: i32,
    /// CPU where it started.
    pub cpu: u32,
    ended: bool,
    /// Over the deadline (or no reply).
    pub miss: bool,
    /// When the reply was read, where that was after its end (the reply ready).
    pub read_ns: Option<u64>,
}

impl Window {
    /// A window from `start_ns` to `end_ns` (the reply, the woken task running, the
    /// handler entry) when it came, else to `horizon_ns`, when it stopped waiting.
    pub fn new(
        start_ns: u64,
        end_ns: Option<u64>,
        horizon_ns: u64,
        tid: i32,
        cpu: u32,
        miss: bool,
    ) -> Window {
        Window {
            start_ns,
            stop_ns: end_ns.unwrap_or(horizon_ns),
            tid,
            cpu,
            ended: end_ns.is_some(),
            miss,
            read_ns: None,
        }
    }

    /// The same window, its reply read at `read_ns` (after the end, when it was ready).
    pub fn read_at(mut self, read_ns: Option<u64>) -> Window {
        self.read_ns = read_ns.filter(|&r| self.ended && r > self.stop_ns);
        self
    }

    /// End, when it came.
    pub fn end_ns(&self) -> Option<u64> {
        self.ended.then_some(self.stop_ns)
    }

    /// The end, or without one, when the cycle stopped waiting.
    pub fn stop_ns(&self) -> u64 {
        self.stop_ns
    }
}

/// What settled samples add up to: counts and sketches of their durations, which add
/// part by part as they would sample by sample ([`Sketch::merge`]).
#[derive(Clone, Debug)]
pub struct Settled {
    /// Settled samples.
    pub count: u64,
    /// Replied samples until their reply was ready.
    pub durations: Sketch,
    /// Replied samples until their reply was read (the same as `durations` but where a
    /// reply was ready before it was read).
    pub reads: Sketch,
    /// Samples whose reply was read later than it was ready.
    pub later: u64,
    /// Samples without a reply.
    pub no_reply: u64,
    /// Samples over the deadline (or without a reply).
    pub misses: u64,
    /// Misses whose reply was ready in time and read late.
    pub not_reading: u64,
    /// The first and last start.
    pub span: (u64, u64),
}

impl Default for Settled {
    fn default() -> Settled {
        Settled {
            count: 0,
            durations: Sketch::default(),
            reads: Sketch::default(),
            later: 0,
            no_reply: 0,
            misses: 0,
            not_reading: 0,
            span: (u64::MAX, 0),
        }
    }
}

impl Settled {
    /// Adds the sample `w`, judged against `deadline`.
    pub fn add(&mut self, w: &Window, deadline: Option<u64>) {
        if let Some((done, read)) = self.count_in(w, deadline) {
            self.durations.add(done);
            self.reads.add(read);
        }
    }

    /// Counts `w` in all but the sketches, and gives its time until ready and until
    /// read where it was replied: for a caller that sketches them in bulk.
    pub fn count_in(&mut self, w: &Window, deadline: Option<u64>) -> Option<(u64, u64)> {
        self.count += 1;
        self.misses += u64::from(w.miss);
        let ready_in_time = match (w.end_ns(), deadline) {
            (Some(e), Some(d)) => e - w.start_ns <= d,
            _ => false,
        };
        self.not_reading += u64::from(w.miss && w.read_ns.is_some() && ready_in_time);
        self.span = (self.span.0.min(w.start_ns), self.span.1.max(w.start_ns));
        self.later += u64::from(w.end_ns().is_some() && w.read_ns.is_some());
        let Some(e) = w.end_ns() else {
            self.no_reply += 1;
            return None;
        };
        Some((e - w.start_ns, w.read_ns.unwrap_or(e) - w.start_ns))
    }

    /// Adds every sample of `o`.
    pub fn merge(&mut self, o: &Settled) {
        self.count += o.count;
        self.durations.merge(&o.durations);
        self.reads.merge(&o.reads);
        self.later += o.later;
        self.no_reply += o.no_reply;
        self.misses += o.misses;
        self.not_reading += o.not_reading;
        self.span = (self.span.0.min(o.span.0), self.span.1.max(o.span.1));
    }
}

/// Every measured cycle's window, packed: 6 to 8 bytes each where windows start
/// microseconds apart and last less than a few milliseconds.
pub type Windows = Packed<Window>;

impl Pack for Window {
    fn pack(&self, prev: &Self, out: &mut Vec<u8>) {
        // Windows mostly come by start, a thread after the one before: small deltas.
        put_i(out, self.start_ns.wrapping_sub(prev.start_ns) as i64);
        put_i(out, self.stop_ns.wrapping_sub(self.start_ns) as i64);
        put_i(out, i64::from(self.tid) - i64::from(prev.tid));
        let read = u64::from(self.read_ns.is_some());
        put_u(
            out,
            u64::from(self.cpu) << 3
                | read << 2
                | u64::from(self.ended) << 1
                | u64::from(self.miss),
        );
        if let Some(r) = self.read_ns {
            put_u(out, r - self.stop_ns);
        }
    }

    fn unpack(prev: &Self, buf: &[u8], at: &mut usize) -> Self {
        let start_ns = prev.start_ns.wrapping_add(get_i(buf, at) as u64);
        let stop_ns = start_ns.wrapping_add(get_i(buf, at) as u64);
        let tid = (i64::from(prev.tid) + get_i(buf, at)) as i32;
        let f = get_u(buf, at);
        let read_ns = (f & 4 != 0).then(|| stop_ns + get_u(buf, at));
        Window {
            start_ns,
            stop_ns,
            tid,
            cpu: (f >> 3) as u32,
            ended: f & 2 != 0,
            miss: f & 1 != 0,
            read_ns,
        }
    }
}

/// An IRQ line the report mentions, as the record-time snapshot saw it.
#[derive(Clone, Debug, Serialize)]
pub struct IrqPlacement {
    /// IRQ number.
    pub irq: i32,
    /// Device action names (`virtio0-input.0`).
    pub name: String,
    /// CPUs it may run on (`smp_affinity_list`).
    pub affinity: Option<String>,
    /// CPUs the kernel routed it to (`effective_affinity_list`).
    pub effective: Option<String>,
}

/// The recording machine, from `whylate record`'s snapshot.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Kernel release.
    pub kernel: String,
    /// Host name (recordings made before it was kept have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// When the recording started, seconds since the Unix epoch (when kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<u64>,
    /// Online CPUs.
    pub online_cpus: String,
    /// An irqbalance daemon was running.
    pub irqbalance: bool,
    /// The IRQ lines named in the context, causes or advice.
    pub irqs: Vec<IrqPlacement>,
}

/// What the report says about the expectation besides the misses.
#[derive(Clone, Debug, Serialize)]
pub struct ExpectStats {
    /// A, as given.
    pub a: String,
    /// B, as given.
    pub b: String,
    /// T, ns.
    pub within_ns: u64,
    /// Which B answers an A, in words.
    pub scope: String,
    /// As whose B came, but later than T.
    pub late: u64,
    /// As whose B never came before the trace ended.
    pub never: u64,
    /// Misses per second of trace.
    pub misses_per_s: f64,
}

/// What `explain` says about a kernel log besides its reports.
#[derive(Clone, Debug, Serialize)]
pub struct KernelSummary {
    /// Reports per kind, in order of first appearance.
    pub kinds: Vec<(String, u64)>,
    /// The mechanism recognised, in words (None: none).
    pub mechanism: Option<String>,
    /// Stacks that run through the console path, of all stacks.
    pub console_stacks: (u64, u64),
    /// Bytes per second the log was written at, when its times say.
    pub bytes_per_s: Option<f64>,
    /// Messages read.
    pub messages: u64,
}

#[cfg(test)]
mod tests {
    use super::{Window, Windows};

    /// A window keeps its end or its horizon, packed or not, in any order of start.
    #[test]
    fn windows_keep_their_end_or_horizon_when_packed() {
        let v = vec![
            Window::new(100, None, 150, 7, 1, true),
            Window::new(100, Some(180), 180, 7, 1, false),
            Window::new(90, Some(5_000_000), 5_000_000, -1, 300, true),
            Window::new(u64::MAX - 5, None, u64::MAX, i32::MAX, 0, false),
            Window::new(200, Some(900), 900, 7, 1, true).read_at(Some(25_000)),
        ];
        assert_eq!((v[4].end_ns(), v[4].read_ns), (Some(900), Some(25_000)));
        assert_eq!((v[0].end_ns(), v[0].stop_ns()), (None, 150));
        assert_eq!((v[1].end_ns(), v[1].stop_ns()), (Some(180), 180));
        let p: Windows = v.clone().into();
        assert_eq!(p.iter().collect::<Vec<_>>(), v);
    }
}
