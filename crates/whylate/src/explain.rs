//! `whylate explain`: request/response cycles, their deadline misses, and why.
//!
//! 1. **Cycles** are cut from the event stream while it is read: a `--from` match opens one
//!    for its thread (or thread group, or anyone), the first later `--to` match by the same
//!    closes it. A new `from` or the trace's end before any `to` = no reply.
//! 2. **Chain**: from the cycle's thread, follow the causal edges the timeline built, in time
//!    order: work it queued (and the worker that ran it), tasks it woke, timers it armed and
//!    the tasks they woke, and so on. Every hand-off is a *link* with a wait: a runnable task
//!    waiting for its CPU, a work item waiting for its worker, a timer firing late.
//! 3. **Template**: the same links in the good cycles (matched by kind, name and order) give
//!    each link its usual duration. A link's *excess* in a miss is its duration above that.
//!    Busy-polling readers and device interrupts leave no explicit edge; they need no edge
//!    here either: the read's return is the cycle's end and the links before it carry the
//!    time.
//! 4. **Blame**: each excess is split over what held the waiting link's CPU meanwhile
//!    (tasks, irq handlers, softirqs, irqs-off sections), each with a category
//!    (`runqueue-wait`, `preempted-by`, `hardirq`, `softirq`, `irqs-off`, `cpu-idle`,
//!    `unknown-lost-events`). A cycle with no reply is explained by where its chain stood
//!    at the deadline: the links still pending then.
//! 5. **Causes** rank the culprits over all misses; **advice** turns the top ones into
//!    commands for this machine, with what each costs.

use crate::event::{Event, Interner, Kind, Sym, SOFTIRQ_NAMES};
use crate::fdpath::FdPaths;
use crate::read::{OpenOptions, ReadError};
use crate::selector::{Names, Seen, Selector};
use crate::stats::{dur, secs, InputInfo};
use crate::syscalls::Arch;
use crate::timeline::{
    span, Cause as RunCause, Ctx, EdgeKind, OccupantKind, SpanKind, Timeline, NONE,
};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

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
    from: Selector,
    to: Vec<Selector>,
    same: Same,
    arch: Arch,
    open: FxHashMap<i64, usize>,
    /// The cycles, in start order.
    pub cycles: Vec<Cycle>,
    write_name: Option<Sym>,
    /// Descriptor names, when a selector filters on `path`.
    paths: Option<FdPaths>,
    /// What the selectors met, to say why they selected nothing.
    seen_from: Seen,
    seen_to: Vec<Seen>,
    names: Names,
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

    fn key(&self, e: &Event) -> i64 {
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
    fn on_cpu(category: &str, cpu: u32, ns: u64) -> Hold {
        Hold {
            category: category.into(),
            culprit: Culprit {
                cpu: Some(cpu),
                ..Default::default()
            },
            ns,
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

/// `SCHED_OTHER nice 0` / `RT prio 50` from a kernel prio.
fn policy(prio: i32) -> String {
    if prio < 100 {
        format!("(RT {})", 99 - prio)
    } else {
        format!("(nice {})", prio - 120)
    }
}

/// A ranked cause over all misses.
#[derive(Clone, Debug, Serialize)]
pub struct CauseRow {
    /// `runqueue-wait`, `preempted-by`, `hardirq`, `softirq`, `irqs-off`, `cpu-idle`,
    /// `unknown-lost-events`, `unknown`.
    pub category: String,
    /// Who.
    pub culprit: Culprit,
    /// Misses it contributed to.
    pub count: u64,
    /// Excess time it accounts for, all misses.
    pub total_excess_ns: u64,
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
    pub category: String,
    /// Who.
    pub culprit: Culprit,
    /// Time held.
    pub ns: u64,
}

/// One missed cycle.
#[derive(Clone, Debug, Serialize)]
pub struct Miss {
    /// Cycle start.
    pub start_ns: u64,
    /// Duration, null when no reply came.
    pub duration_ns: Option<u64>,
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
}

/// Cycle statistics.
#[derive(Clone, Debug, Serialize, Default)]
pub struct CycleStats {
    /// Cycles.
    pub count: u64,
    /// Cycles with a reply.
    pub replied: u64,
    /// Cycles without.
    pub no_reply: u64,
    /// Misses (over the deadline, or no reply).
    pub misses: u64,
    /// Quantiles of replied cycles.
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
#[derive(Clone, Debug, Serialize)]
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
    /// The machine as `whylate record` saw it (null for other inputs).
    pub machine: Option<Machine>,
    /// What every CPU spent the trace on.
    pub cpus: Vec<crate::diff::CpuProfile>,
    /// Every measured cycle (period, service), in start order: what the plots draw.
    #[serde(skip)]
    pub windows: Vec<Window>,
    /// How many misses the terminal shows in full.
    #[serde(skip)]
    pub top: usize,
    /// What a cycle is called in the terminal (`cycles`, `timer periods`).
    #[serde(skip)]
    pub noun: &'static str,
}

/// One measured cycle (request/response cycle, timer period, softirq service, outlier).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Start (the `from` event, the timer's requested expiry, the raise).
    pub start_ns: u64,
    /// End, when it came (the reply, the woken task running, the handler entry).
    pub end_ns: Option<u64>,
    /// Without an end: when the cycle stopped waiting.
    pub horizon_ns: u64,
    /// The thread it measured (-1: none).
    pub tid: i32,
    /// CPU where it started.
    pub cpu: u32,
    /// Over the deadline (or no reply).
    pub miss: bool,
}

/// What `explain` is asked to explain: the modes of the command line.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Request/response cycles between two selectors.
    Cycles(Options),
    /// Late timer periods.
    Timer(TimerOptions),
    /// Slow services of one softirq vector.
    Softirq {
        /// Vector name or number.
        vector: String,
        /// Services slower than this are misses.
        deadline_ns: Option<u64>,
        /// Misses shown in full.
        top: usize,
    },
    /// The worst outliers across all measures.
    Auto {
        /// Outliers shown in full.
        top: usize,
    },
}

impl Mode {
    /// The deadline given, if the mode has one.
    pub fn deadline_ns(&self) -> Option<u64> {
        match self {
            Mode::Cycles(o) => o.deadline_ns,
            Mode::Timer(o) => o.deadline_ns,
            Mode::Softirq { deadline_ns, .. } => *deadline_ns,
            Mode::Auto { .. } => None,
        }
    }
    /// The same mode with this deadline (the automatic mode has none).
    pub fn with_deadline(&self, d: Option<u64>) -> Mode {
        let mut m = self.clone();
        match &mut m {
            Mode::Cycles(o) => o.deadline_ns = d,
            Mode::Timer(o) => o.deadline_ns = d,
            Mode::Softirq { deadline_ns, .. } => *deadline_ns = d,
            Mode::Auto { .. } => {}
        }
        m
    }
}

/// Explains `paths` in the given mode.
pub fn explain_mode(
    paths: &[PathBuf],
    open: &OpenOptions,
    mode: &Mode,
) -> Result<ExplainReport, ReadError> {
    explain_then(paths, open, mode, |_, _, _| ()).map(|(r, ())| r)
}

/// Explains `paths` in the given mode, then hands the report and the timeline it came
/// from to `then` (plots and exports need both; the timeline is dropped after).
pub fn explain_then<T>(
    paths: &[PathBuf],
    open: &OpenOptions,
    mode: &Mode,
    then: impl FnOnce(&ExplainReport, &Timeline, &Interner) -> T,
) -> Result<(ExplainReport, T), ReadError> {
    let mut cy = match mode {
        Mode::Cycles(o) => Some(Cycles::new(o)),
        _ => None,
    };
    let (tl, strings, meta) = read_all(paths, open, cy.as_mut())?;
    let r = match mode {
        Mode::Cycles(o) => {
            let mut cy = cy.expect("a cutter for cycles");
            cy.finish(tl.last_ts);
            if let Some(why) = cy.why_nothing(&strings) {
                return Err(ReadError::NoMatch { why });
            }
            let blind = cy.paths_unknown();
            let mut r = analyze(&tl, &strings, o, cy.cycles);
            if blind {
                r.notes.push(
                    "a selector filters on `path`, but no input names its descriptors (a `whylate record` trace.dat does): that condition matched nothing".into(),
                );
            }
            r
        }
        Mode::Timer(o) => analyze_timers(&tl, &strings, o),
        Mode::Softirq {
            vector,
            deadline_ns,
            top,
        } => analyze_softirq(&tl, &strings, vector, *deadline_ns, *top),
        Mode::Auto { top } => analyze_auto(&tl, &strings, *top),
    };
    let r = with_inputs(r, meta, &tl, &strings);
    let t = then(&r, &tl, &strings);
    Ok((r, t))
}

/// Reads the inputs, cuts cycles and explains the misses.
pub fn explain(
    paths: &[PathBuf],
    open: &OpenOptions,
    o: &Options,
) -> Result<ExplainReport, ReadError> {
    explain_mode(paths, open, &Mode::Cycles(o.clone()))
}

/// What a pass learnt besides the timeline.
struct ReadMeta {
    inputs: crate::stats::Inputs,
    events: u64,
    /// The first input's record-time snapshot.
    snapshot: Option<crate::snapshot::Snapshot>,
}

/// One pass over the inputs: the timeline, and the cycles when a cutter is given.
fn read_all(
    paths: &[PathBuf],
    open: &OpenOptions,
    cycles: Option<&mut Cycles>,
) -> Result<(Timeline, Interner, ReadMeta), ReadError> {
    struct Feed<'a>(Option<&'a mut Cycles>, Option<crate::snapshot::Snapshot>);
    impl crate::latency::Sink for Feed<'_> {
        fn snapshot(&mut self, snap: &crate::snapshot::Snapshot) {
            if let Some(c) = self.0.as_deref_mut() {
                c.add_snapshot(snap);
            }
            if self.1.is_none() {
                self.1 = Some(snap.clone());
            }
        }
        fn event(&mut self, e: &Event, s: &Interner) {
            if let Some(c) = self.0.as_deref_mut() {
                c.push(e, s);
            }
        }
    }
    let mut feed = Feed(cycles, None);
    let p = crate::latency::read_timeline(paths, open, &mut feed)?;
    let meta = ReadMeta {
        inputs: p.inputs,
        events: p.events,
        snapshot: feed.1,
    };
    Ok((p.tl, p.strings, meta))
}

/// Rescales holds so they add up to `ex`: the excess is split in proportion to what held
/// the CPU.
fn scale(held: &mut [Hold], ex: u64) {
    let sum: u64 = held.iter().map(|h| h.ns).sum::<u64>().max(1);
    for h in held {
        h.ns = (h.ns as u128 * ex as u128 / sum as u128) as u64;
    }
}

/// Puts what the readers said in front of the report's own notes, and what the
/// record-time snapshot knows about the machine into the context and advice.
fn with_inputs(mut r: ExplainReport, meta: ReadMeta, tl: &Timeline, s: &Interner) -> ExplainReport {
    r.cpus = crate::diff::profile(tl, s);
    r.inputs = meta.inputs.inputs;
    r.events = meta.events;
    let mut notes = meta.inputs.notes;
    notes.append(&mut r.notes);
    r.notes = notes;
    match &meta.snapshot {
        Some(snap) => add_machine(&mut r, snap),
        None if !r.context.is_empty() || !r.advice.is_empty() => r.notes.push(
            "IRQ affinity and irqbalance are not in this trace (a `whylate record` trace.dat carries them)".into(),
        ),
        None => {}
    }
    r
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
    /// Online CPUs.
    pub online_cpus: String,
    /// An irqbalance daemon was running.
    pub irqbalance: bool,
    /// The IRQ lines named in the context, causes or advice.
    pub irqs: Vec<IrqPlacement>,
}

/// `irq 11 virtio0` → 11.
fn irq_number(label: &str) -> Option<i32> {
    label.strip_prefix("irq ")?.split(' ').next()?.parse().ok()
}

/// Fills in IRQ names and placement, and irqbalance's real state, from a snapshot.
fn add_machine(r: &mut ExplainReport, snap: &crate::snapshot::Snapshot) {
    let mut wanted: Vec<i32> = Vec::new();
    for cx in &mut r.context {
        for (label, _) in &mut cx.irqs {
            let Some(n) = irq_number(label) else {
                continue;
            };
            wanted.push(n);
            if let Some(i) = snap.irq(n) {
                if label.trim() == format!("irq {n}") && !i.actions.is_empty() {
                    *label = format!("irq {n} {}", i.actions);
                }
                if let Some(to) = i.effective.as_ref().or(i.affinity.as_ref()) {
                    label.push_str(&format!(" (→ CPU {to})"));
                }
            }
        }
    }
    wanted.extend(
        r.causes
            .iter()
            .filter_map(|c| c.culprit.irq.map(|n| n as i32)),
    );
    for a in &mut r.advice {
        if let Some(n) = a
            .command
            .split("/proc/irq/")
            .nth(1)
            .and_then(|t| t.split('/').next())
            .and_then(|t| t.parse::<i32>().ok())
        {
            wanted.push(n);
        }
        if a.cost.contains("irqbalance may move") {
            let known = if snap.irqbalance {
                "irqbalance runs on this machine and will move it back: stop it (systemctl stop irqbalance) or ban the IRQ (IRQBALANCE_BANNED_CPULIST)"
            } else {
                "irqbalance was not running when this was recorded, so the setting holds until reboot or the driver reloads"
            };
            let head = a
                .cost
                .split("; irqbalance")
                .next()
                .unwrap_or("")
                .to_string();
            a.cost = format!("{head}; {known}");
        }
    }
    wanted.sort_unstable();
    wanted.dedup();
    recorder_blame(r, snap);
    r.machine = Some(Machine {
        kernel: snap.kernel.clone(),
        online_cpus: snap.online_cpus.clone(),
        irqbalance: snap.irqbalance,
        irqs: wanted
            .into_iter()
            .filter_map(|n| snap.irq(n))
            .map(|i| IrqPlacement {
                irq: i.irq,
                name: i.actions.clone(),
                affinity: i.affinity.clone(),
                effective: i.effective.clone(),
            })
            .collect(),
    });
}

/// The recorder's own threads among the culprits: the measurement disturbed what it
/// measured. Says so, and drops advice aimed at the recorder as if it were the workload.
fn recorder_blame(r: &mut ExplainReport, snap: &crate::snapshot::Snapshot) {
    let Some(rec) = snap.recorder else {
        return;
    };
    let tids: FxHashSet<i32> = snap
        .tasks
        .iter()
        .filter(|t| t.tgid == rec)
        .map(|t| t.tid)
        .chain([rec])
        .collect();
    let total: u64 = r.causes.iter().map(|c| c.total_excess_ns).sum();
    let mine: Vec<&CauseRow> = r
        .causes
        .iter()
        .filter(|c| c.culprit.pid.is_some_and(|p| tids.contains(&p)))
        .collect();
    if mine.is_empty() {
        return;
    }
    let ns: u64 = mine.iter().map(|c| c.total_excess_ns).sum();
    let comms: FxHashSet<String> = mine.iter().filter_map(|c| c.culprit.comm.clone()).collect();
    let pids: Vec<String> = mine
        .iter()
        .filter_map(|c| c.culprit.pid)
        .map(|p| format!(" {p}"))
        .collect();
    r.notes.push(format!(
        "the recorder itself ({}) holds {} ({:.0}%) of the blamed excess: its reader threads ran on the CPUs the chain needed. Record fewer events (filter the busiest, e.g. -e 'syscalls:sys_exit_read[ret > 0]' for a polling read loop) to measure the workload undisturbed",
        mine.iter()
            .map(|c| c.culprit.label())
            .collect::<FxHashSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", "),
        dur(ns),
        ns as f64 * 100.0 / total.max(1) as f64
    ));
    r.advice.retain(|a| {
        !pids
            .iter()
            .any(|p| a.command.ends_with(p.as_str()) && a.action.starts_with("Move"))
            && !comms
                .iter()
                .any(|c| a.action.contains(&format!("so {c} cannot")))
    });
}

/// Causes as rows, largest total first.
fn rank(causes: FxHashMap<(String, Culprit), (u64, u64)>) -> Vec<CauseRow> {
    let sum: u64 = causes.values().map(|v| v.1).sum::<u64>().max(1);
    let mut rows: Vec<CauseRow> = causes
        .into_iter()
        .map(|((category, culprit), (count, ns))| CauseRow {
            category,
            culprit,
            count,
            total_excess_ns: ns,
            mean_excess_ns: ns / count.max(1),
            share: ns as f64 / sum as f64,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_excess_ns
            .cmp(&a.total_excess_ns)
            .then(a.culprit.label().cmp(&b.culprit.label()))
    });
    rows
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum LinkKind {
    Run,
    Work,
    Timer,
}

/// A hand-off inside a cycle.
#[derive(Clone, Debug)]
struct RawLink {
    kind: LinkKind,
    /// Template key: kind, normalised name, and its order among links with that name.
    key: (LinkKind, String, u32),
    start: u64,
    end: u64,
    cpu: u32,
    /// The waiting task.
    tid: i32,
    what: String,
    preempted: bool,
    /// Work queued from this hardirq (or from outside the chain: `Some(u32::MAX)`).
    irq: Option<u32>,
}

/// `kworker/u8:1` → `kworker/u8:*`: workers of a pool are interchangeable.
fn norm_comm(c: &str) -> String {
    if c.starts_with("kworker/") {
        if let Some(i) = c.rfind(':') {
            return format!("{}:*", &c[..i]);
        }
    }
    c.to_string()
}

struct Engine<'a> {
    tl: &'a Timeline,
    s: &'a Interner,
    /// Where each hrtimer expiry falls on the trace clock.
    clock: crate::timeline::TimerClock,
    /// Runnable spans by start.
    runnable: Vec<u32>,
    /// Wakeup, work and timer edges by cause time.
    edges: Vec<u32>,
    irqsoff_by_cpu: Vec<Vec<u32>>,
    /// Syscall spans by start.
    syscalls: Vec<u32>,
    /// Trace-wide median per link key (name), for links good cycles lack.
    trace_median: std::cell::RefCell<FxHashMap<(LinkKind, String), u64>>,
}

impl<'a> Engine<'a> {
    fn new(tl: &'a Timeline, s: &'a Interner) -> Engine<'a> {
        let sp = &tl.spans;
        let mut runnable: Vec<u32> = (0..sp.len() as u32)
            .filter(|&i| sp.kind[i as usize] == SpanKind::Runnable)
            .collect();
        runnable.sort_by_key(|&i| sp.start[i as usize]);
        let mut edges: Vec<u32> = (0..tl.edges.len() as u32)
            .filter(|&i| {
                matches!(
                    tl.edges[i as usize].kind,
                    EdgeKind::Wakeup | EdgeKind::Work | EdgeKind::Timer
                )
            })
            .collect();
        edges.sort_by_key(|&i| tl.edges[i as usize].ts);
        let mut irqsoff_by_cpu = vec![Vec::new(); tl.cpus as usize];
        for i in 0..sp.len() {
            if sp.kind[i] == SpanKind::IrqsOff {
                if let Some(l) = irqsoff_by_cpu.get_mut(sp.cpu[i] as usize) {
                    l.push(i as u32);
                }
            }
        }
        let mut syscalls: Vec<u32> = (0..sp.len() as u32)
            .filter(|&i| sp.kind[i as usize] == SpanKind::Syscall)
            .collect();
        syscalls.sort_by_key(|&i| sp.start[i as usize]);
        Engine {
            clock: crate::timeline::TimerClock::new(tl),
            tl,
            s,
            syscalls,
            runnable,
            edges,
            irqsoff_by_cpu,
            trace_median: Default::default(),
        }
    }

    fn task(&self, tid: i32) -> String {
        self.tl.task_name(self.s, tid)
    }

    fn ctx(&self, c: Ctx, tid: i32, cpu: u32, ts: u64) -> String {
        match self.tl.resolve(c, cpu, ts) {
            Ctx::Task { tid } => self.task(tid),
            Ctx::Hardirq { irq } if irq != u32::MAX => match self.tl.irq_names.get(&irq) {
                Some(n) => format!("irq {irq} ({})", self.s.get(*n)),
                None => format!("irq {irq}"),
            },
            Ctx::Hardirq { .. } => "a hardirq".into(),
            Ctx::Softirq { vec } => format!(
                "softirq {}",
                SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?")
            ),
            Ctx::Timer { edge } => {
                format!(
                    "hrtimer {}",
                    self.s.get(Sym(self.tl.edges[edge as usize].key))
                )
            }
            Ctx::Unknown => self.task(tid),
        }
    }

    /// The links of the chain that starts with `tid` at `s`, up to `h`.
    fn chain(&self, tid: i32, s: u64, h: u64) -> (Vec<RawLink>, FxHashSet<i32>) {
        let tl = self.tl;
        let mut chain: FxHashSet<i32> = FxHashSet::default();
        chain.insert(tid);
        let mut links = Vec::new();
        let mut nth: FxHashMap<(LinkKind, String), u32> = FxHashMap::default();
        let mut key = |k: LinkKind, name: String| {
            let n = nth.entry((k, name.clone())).or_default();
            *n += 1;
            (k, name, *n)
        };
        let first = self.edges.partition_point(|&i| tl.edges[i as usize].ts < s);
        for &ei in &self.edges[first..] {
            let e = &tl.edges[ei as usize];
            if e.ts > h {
                break;
            }
            let from_chain = match e.from {
                Ctx::Task { tid } => chain.contains(&tid),
                // A timer callback acts for whoever armed the timer.
                Ctx::Timer { edge } => {
                    let t = &tl.edges[edge as usize];
                    matches!(t.from, Ctx::Task { tid } if chain.contains(&tid))
                }
                _ => false,
            };
            if !from_chain {
                continue;
            }
            match e.kind {
                EdgeKind::Wakeup => {
                    chain.insert(e.to_tid);
                }
                EdgeKind::Work => {
                    chain.insert(e.to_tid);
                    let f = self.s.get(Sym(e.key)).to_string();
                    links.push(RawLink {
                        kind: LinkKind::Work,
                        key: key(LinkKind::Work, f.clone()),
                        start: e.ts,
                        end: e.at,
                        cpu: e.to_cpu,
                        tid: e.to_tid,
                        what: format!(
                            "work {f} queued by {} on CPU{}, started in {} on CPU{}",
                            self.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                            e.from_cpu,
                            self.task(e.to_tid),
                            e.to_cpu
                        ),
                        preempted: false,
                        irq: None,
                    });
                }
                EdgeKind::Timer if e.val != u64::MAX && e.val2 != u64::MAX => {
                    let f = self.s.get(Sym(e.key)).to_string();
                    // From the expiry on the trace clock, as `--timer` and `latency` count it.
                    let due = self.clock.due(tl, ei as usize).unwrap_or(e.at);
                    links.push(RawLink {
                        kind: LinkKind::Timer,
                        key: key(LinkKind::Timer, f.clone()),
                        start: due,
                        end: e.at,
                        cpu: e.to_cpu,
                        tid: e.to_tid,
                        what: format!("hrtimer {f} fired on CPU{}", e.to_cpu),
                        preempted: false,
                        irq: None,
                    });
                }
                _ => {}
            }
        }
        // Waits for a CPU of every task on the chain.
        let sp = &tl.spans;
        let first = self.runnable.partition_point(|&i| sp.start[i as usize] < s);
        for &ri in &self.runnable[first..] {
            let i = ri as usize;
            if sp.start[i] > h {
                break;
            }
            if !chain.contains(&sp.tid[i]) || sp.flags[i] & span::END_UNKNOWN != 0 {
                continue;
            }
            let name = norm_comm(self.s.get(self.tl.comm(sp.tid[i])));
            let cause = RunCause::from_key(sp.key[i]);
            let by = if sp.aux[i] != NONE {
                let e = &tl.edges[sp.aux[i] as usize];
                format!(
                    " (woken by {})",
                    self.ctx(e.from, e.from_tid, e.from_cpu, e.ts)
                )
            } else if cause == RunCause::Preempted {
                " (preempted)".into()
            } else {
                String::new()
            };
            links.push(RawLink {
                kind: LinkKind::Run,
                key: key(LinkKind::Run, name),
                start: sp.start[i],
                end: sp.end[i],
                cpu: sp.cpu[i],
                tid: sp.tid[i],
                what: format!(
                    "{} runnable on CPU{}{by}, then ran",
                    self.task(sp.tid[i]),
                    sp.cpu[i]
                ),
                preempted: cause == RunCause::Preempted,
                irq: None,
            });
        }
        links.sort_by_key(|l| (l.start, l.end));
        (links, chain)
    }

    /// System calls the chain's other tasks made in `[s, h]` (the responder's write...):
    /// steps of the chain, shown, not blamed.
    fn syscall_steps(
        &self,
        chain: &FxHashSet<i32>,
        me: i32,
        s: u64,
        h: u64,
    ) -> Vec<(u64, u64, u32, String)> {
        let tl = self.tl;
        let sp = &tl.spans;
        let mut seen: FxHashMap<(i32, u32), u32> = FxHashMap::default();
        let mut out = Vec::new();
        let first = self.syscalls.partition_point(|&i| sp.start[i as usize] < s);
        for &si in &self.syscalls[first..] {
            let i = si as usize;
            if sp.start[i] > h {
                break;
            }
            let tid = sp.tid[i];
            if tid == me || !chain.contains(&tid) {
                continue;
            }
            let n = seen.entry((tid, sp.key[i])).or_default();
            *n += 1;
            if *n > 2 {
                continue;
            }
            let name = if sp.flags[i] & span::NAMED != 0 {
                self.s.get(Sym(sp.key[i])).to_string()
            } else {
                tl.syscall_names
                    .get(&sp.key[i])
                    .map(|x| self.s.get(*x).to_string())
                    .unwrap_or_else(|| format!("syscall {}", sp.key[i]))
            };
            out.push((
                sp.start[i],
                sp.end[i] - sp.start[i],
                sp.cpu[i],
                format!("{} {name}() on CPU{}", self.task(tid), sp.cpu[i]),
            ));
        }
        out
    }

    /// All waits in `[s, h]`, whoever they belong to: for cycles whose chain the trace
    /// does not connect (device interrupts, untraced hand-offs).
    fn all_waits(&self, s: u64, h: u64) -> Vec<RawLink> {
        let tl = self.tl;
        let sp = &tl.spans;
        let mut links = Vec::new();
        let first = self.edges.partition_point(|&i| tl.edges[i as usize].ts < s);
        for &ei in &self.edges[first..] {
            let e = &tl.edges[ei as usize];
            if e.ts > h {
                break;
            }
            if e.kind == EdgeKind::Work {
                let f = self.s.get(Sym(e.key)).to_string();
                links.push(RawLink {
                    kind: LinkKind::Work,
                    key: (LinkKind::Work, f.clone(), 1),
                    start: e.ts,
                    end: e.at,
                    cpu: e.to_cpu,
                    tid: e.to_tid,
                    what: format!(
                        "work {f} queued by {} on CPU{}, started in {} on CPU{}",
                        self.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                        e.from_cpu,
                        self.task(e.to_tid),
                        e.to_cpu
                    ),
                    preempted: false,
                    irq: Some(match tl.resolve(e.from, e.from_cpu, e.ts) {
                        Ctx::Hardirq { irq } => irq,
                        _ => u32::MAX,
                    }),
                });
            }
        }
        let first = self.runnable.partition_point(|&i| sp.start[i as usize] < s);
        for &ri in &self.runnable[first..] {
            let i = ri as usize;
            if sp.start[i] > h {
                break;
            }
            if sp.tid[i] <= 0 || sp.flags[i] & span::END_UNKNOWN != 0 {
                continue;
            }
            let cause = RunCause::from_key(sp.key[i]);
            links.push(RawLink {
                kind: LinkKind::Run,
                key: (
                    LinkKind::Run,
                    norm_comm(self.s.get(self.tl.comm(sp.tid[i]))),
                    1,
                ),
                start: sp.start[i],
                end: sp.end[i],
                cpu: sp.cpu[i],
                tid: sp.tid[i],
                what: {
                    let by = if sp.aux[i] != NONE {
                        let e = &tl.edges[sp.aux[i] as usize];
                        format!(
                            " (woken by {})",
                            self.ctx(e.from, e.from_tid, e.from_cpu, e.ts)
                        )
                    } else if cause == RunCause::Preempted {
                        " (preempted)".into()
                    } else {
                        String::new()
                    };
                    format!(
                        "{} runnable on CPU{}{by}, then ran",
                        self.task(sp.tid[i]),
                        sp.cpu[i]
                    )
                },
                preempted: cause == RunCause::Preempted,
                irq: None,
            });
        }
        links.sort_by_key(|l| (l.start, l.end));
        links
    }

    /// Median of this link kind and name over the whole trace.
    fn usual_in_trace(&self, kind: LinkKind, name: &str) -> u64 {
        if let Some(v) = self.trace_median.borrow().get(&(kind, name.to_string())) {
            return *v;
        }
        let tl = self.tl;
        let mut v: Vec<u64> = match kind {
            LinkKind::Run => {
                let sp = &tl.spans;
                self.runnable
                    .iter()
                    .map(|&i| i as usize)
                    .filter(|&i| {
                        sp.flags[i] & span::END_UNKNOWN == 0
                            && norm_comm(self.s.get(tl.comm(sp.tid[i]))) == name
                    })
                    .map(|i| sp.end[i] - sp.start[i])
                    .collect()
            }
            LinkKind::Work => tl
                .edges
                .iter()
                .filter(|e| e.kind == EdgeKind::Work && self.s.get(Sym(e.key)) == name)
                .map(|e| e.at - e.ts)
                .collect(),
            LinkKind::Timer => tl
                .edges
                .iter()
                .filter(|e| {
                    e.kind == EdgeKind::Timer
                        && e.val != u64::MAX
                        && e.val2 != u64::MAX
                        && self.s.get(Sym(e.key)) == name
                })
                .map(|e| e.val2.saturating_sub(e.val))
                .collect(),
        };
        v.sort_unstable();
        // Few samples: the fastest is the best guess of "usual" (the slow one may be the
        // very miss being explained).
        let m = if v.len() < 3 {
            v.first().copied().unwrap_or(0)
        } else {
            v[(v.len() - 1) / 2]
        };
        self.trace_median
            .borrow_mut()
            .insert((kind, name.to_string()), m);
        m
    }

    /// What held `cpu` during `[a, b)` while `waiter` waited: categories and culprits.
    fn holds(&self, l: &RawLink, a: u64, b: u64) -> Vec<Hold> {
        let tl = self.tl;
        if b <= a || l.cpu == u32::MAX {
            return Vec::new();
        }
        if !tl.lost.is_empty() && tl.crosses_loss(l.cpu, a, b) {
            return vec![Hold::on_cpu("unknown-lost-events", l.cpu, b - a)];
        }
        let mut out = Vec::new();
        // An irqs-off section over a late timer is the reason the interrupt came late.
        if l.kind == LinkKind::Timer {
            let sp = &tl.spans;
            if let Some(list) = self.irqsoff_by_cpu.get(l.cpu as usize) {
                for &j in list {
                    let j = j as usize;
                    let ov = sp.end[j].min(b).saturating_sub(sp.start[j].max(a));
                    if ov > 0 {
                        out.push(Hold {
                            category: "irqs-off".into(),
                            culprit: Culprit {
                                caller: Some(
                                    self.s
                                        .get(Sym(sp.key[j]))
                                        .split('+')
                                        .next()
                                        .unwrap_or("")
                                        .to_string(),
                                ),
                                cpu: Some(l.cpu),
                                ..Default::default()
                            },
                            ns: ov,
                        });
                    }
                }
            }
            if !out.is_empty() {
                return out;
            }
            // A CPU idle throughout woke late for its timer: idle exit, or on a VM a host
            // that did not run the vCPU in time.
            let occ = tl.occupants(l.cpu, a, b);
            if occ.len() == 1 && occ[0].what == OccupantKind::Task && occ[0].id == 0 {
                return vec![Hold::on_cpu("cpu-idle", l.cpu, b - a)];
            }
            // A running task does not delay a hard timer interrupt; with no irqs-off section
            // in the trace the reason is not visible (preemptirq events would show it).
            return vec![Hold::on_cpu("timer-irq-late", l.cpu, b - a)];
        }
        for o in tl.occupants(l.cpu, a, b) {
            let (category, culprit) = match o.what {
                OccupantKind::Task if o.id == l.tid as i64 => continue,
                OccupantKind::Task if o.id == 0 => (
                    "cpu-idle",
                    Culprit {
                        cpu: Some(l.cpu),
                        ..Default::default()
                    },
                ),
                // A lower-priority task cannot hold a real-time one off the CPU, except by
                // being inside code that cannot be preempted: that is the kernel's delay.
                OccupantKind::Task
                    if matches!(
                        (tl.prios.get(&l.tid), tl.prios.get(&(o.id as i32))),
                        (Some(&w), Some(&p)) if w < 100 && w < p
                    ) =>
                {
                    (
                        "preemption-delay",
                        Culprit {
                            caller: Some(format!(
                                "non-preemptible kernel code while {}[{}] ran",
                                self.s.get(tl.comm(o.id as i32)),
                                o.id
                            )),
                            cpu: Some(l.cpu),
                            ..Default::default()
                        },
                    )
                }
                OccupantKind::Task => (
                    if l.preempted {
                        "preempted-by"
                    } else {
                        "runqueue-wait"
                    },
                    Culprit {
                        comm: Some(self.s.get(tl.comm(o.id as i32)).to_string())
                            .filter(|c| !c.is_empty())
                            .or(Some(self.s.get(o.name).to_string())),
                        pid: Some(o.id as i32),
                        prio: tl.prios.get(&(o.id as i32)).copied(),
                        cpu: Some(l.cpu),
                        ..Default::default()
                    },
                ),
                OccupantKind::Hardirq => (
                    "hardirq",
                    Culprit {
                        irq: Some(o.id as u32),
                        irq_name: Some(self.s.get(o.name).to_string()).filter(|n| !n.is_empty()),
                        cpu: Some(l.cpu),
                        ..Default::default()
                    },
                ),
                OccupantKind::Softirq => (
                    "softirq",
                    Culprit {
                        vector: SOFTIRQ_NAMES.get(o.id as usize).map(|s| s.to_string()),
                        cpu: Some(l.cpu),
                        ..Default::default()
                    },
                ),
            };
            out.push(Hold {
                category: category.into(),
                culprit,
                ns: o.ns,
            });
        }
        out
    }
}

/// `[s, h]` minus the union of the links' intervals: time no wait explains (the chain's
/// tasks computing, sleeping, or the device answering).
fn uncovered(links: &[RawLink], s: u64, h: u64) -> Vec<(u64, u64)> {
    let mut iv: Vec<(u64, u64)> = links
        .iter()
        .map(|l| (l.start.max(s), l.end.min(h)))
        .filter(|(a, b)| b > a)
        .collect();
    iv.sort_unstable();
    let mut out = Vec::new();
    let mut at = s;
    for (a, b) in iv {
        if a > at {
            out.push((at, a));
        }
        at = at.max(b);
    }
    if h > at {
        out.push((at, h));
    }
    out
}

/// What the chain was doing in `[a, b]`, where no wait explains the time.
fn gap_cause(
    eng: &Engine<'_>,
    links: &[RawLink],
    chain: &FxHashSet<i32>,
    c: &Cycle,
    a: u64,
    b: u64,
    connected: bool,
) -> (&'static str, Culprit, String) {
    let tl = eng.tl;
    let sp = &tl.spans;
    if !connected || links.iter().all(|l| l.start >= b) {
        return (
            "device/external",
            Culprit {
                cpu: Some(c.cpu),
                ..Default::default()
            },
            format!(
                "nothing on the chain moved for {}: the device or peer took that long to answer",
                dur(b - a)
            ),
        );
    }
    // A chain task (other than a thread busy-polling for the reply) on a CPU: computing.
    let mut best: Option<(i32, u32, u64)> = None;
    for cpu in 0..tl.cpus {
        for o in tl.occupants(cpu, a, b) {
            let tid = o.id as i32;
            if o.what == OccupantKind::Task
                && tid > 0
                && tid != c.tid
                && chain.contains(&tid)
                && best.is_none_or(|x| o.ns > x.2)
            {
                best = Some((tid, cpu, o.ns));
            }
        }
    }
    if let Some((tid, cpu, ns)) = best.filter(|x| x.2 * 2 >= b - a) {
        let _ = ns;
        return (
            "on-cpu",
            Culprit {
                comm: Some(eng.s.get(tl.comm(tid)).to_string()),
                pid: Some(tid),
                prio: tl.prios.get(&tid).copied(),
                cpu: Some(cpu),
                ..Default::default()
            },
            format!(
                "{} ran on CPU{cpu} (the chain's work itself took longer)",
                eng.task(tid)
            ),
        );
    }
    // Asleep: the wakeup that ended the gap says who the chain waited for.
    // Waits are sorted by start: look only at those that began inside the gap.
    let first = eng.runnable.partition_point(|&i| sp.start[i as usize] < a);
    let woke = eng.runnable[first..]
        .iter()
        .map(|&i| i as usize)
        .take_while(|&i| sp.start[i] <= b + 1_000)
        .find(|&i| chain.contains(&sp.tid[i]) && sp.aux[i] != NONE);
    match woke {
        Some(i) => {
            let e = &tl.edges[sp.aux[i] as usize];
            let by = eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts);
            (
                "blocked-on",
                Culprit {
                    caller: Some(by.clone()),
                    cpu: Some(e.from_cpu),
                    ..Default::default()
                },
                format!("{} slept until {by} woke it", eng.task(sp.tid[i])),
            )
        }
        None => (
            "unknown",
            Culprit {
                cpu: Some(c.cpu),
                ..Default::default()
            },
            "no wait and no task of the chain on a CPU: time the trace does not explain".into(),
        ),
    }
}

fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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
fn complaint_offset(w: &[u64]) -> Option<(u64, usize)> {
    let first = *w.first()?;
    let top = first + (first / 50).max(20_000);
    let n = w.iter().take_while(|&&x| x <= top).count();
    (n >= 2 && n * 10 >= w.len()).then(|| (w[n / 2], n))
}

/// The deadline the data shows, if any: the thread writes (a complaint) at one offset in
/// several cycles, or many cycles end at one duration.
fn infer_deadline(cycles: &[Cycle]) -> (Option<u64>, String) {
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

/// What `--timer` explains.
#[derive(Clone, Debug, Default)]
pub struct TimerOptions {
    /// Only timers that wake this task (pid, or comm glob).
    pub task: Option<crate::measure::TaskSel>,
    /// Periods later than this (requested expiry → the task runs) are misses; the slowest
    /// 1% when absent.
    pub deadline_ns: Option<u64>,
    /// Misses shown in full.
    pub top: usize,
}

/// `whylate explain --timer`: late hrtimer expiries and the wakeups after them (seed 004).
pub fn explain_timers(
    paths: &[PathBuf],
    open: &OpenOptions,
    o: &TimerOptions,
) -> Result<ExplainReport, ReadError> {
    explain_mode(paths, open, &Mode::Timer(o.clone()))
}

struct TimerSample {
    /// Requested expiry, in trace time.
    expiry: u64,
    /// Callback entered.
    fired: u64,
    /// The interrupt's own lateness (from when it could first fire).
    irq_late: u64,
    /// Requested expiry → callback.
    late: u64,
    cpu: u32,
    tid: i32,
    function: String,
    /// The woken task's wait: runnable span.
    wait: Option<(u64, u64, u32)>,
    armed_late: bool,
    /// When the timer was armed, in trace time.
    armed: Option<u64>,
}

/// Explains late timers on a built timeline.
pub fn analyze_timers(tl: &Timeline, s: &Interner, o: &TimerOptions) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let clock = &eng.clock;
    let mut notes = Vec::new();
    let sp = &tl.spans;
    let keep = |tid: i32| match &o.task {
        None => true,
        Some(crate::measure::TaskSel::Pid(p)) => tid == *p,
        Some(crate::measure::TaskSel::Comm(g)) => crate::measure::glob(g, s.get(tl.comm(tid))),
    };
    // The runnable spans of the timers' tasks, for periods the task overran.
    let mut runnable: FxHashMap<i32, Vec<u32>> = FxHashMap::default();
    let mut samples: Vec<TimerSample> = Vec::new();
    for (ei, e) in tl.edges.iter().enumerate() {
        if e.kind != EdgeKind::Timer || e.val == u64::MAX || e.val2 == u64::MAX || e.to_tid <= 0 {
            continue;
        }
        if !keep(e.to_tid) {
            continue;
        }
        // From the expiry on the trace clock to the callback, as `latency --measure timer`
        // counts expiry to running: a callback's wait behind others in the same interrupt
        // (or a stalled vCPU there) is part of the period's lateness.
        let due = clock.due(tl, ei).unwrap_or(e.at);
        let late = e.at - due;
        let from_armed = clock.armed_late(tl, ei);
        let armed_late = from_armed.is_some();
        let irq_late = from_armed.unwrap_or(late);
        let wait = (e.link != NONE)
            .then(|| tl.edges[e.link as usize].span)
            .filter(|&si| si != NONE && sp.flags[si as usize] & span::END_UNKNOWN == 0)
            .map(|si| {
                (
                    sp.start[si as usize],
                    sp.end[si as usize],
                    sp.cpu[si as usize],
                )
            });
        samples.push(TimerSample {
            expiry: due,
            fired: e.at,
            irq_late,
            late,
            cpu: e.to_cpu,
            tid: e.to_tid,
            function: s.get(Sym(e.key)).to_string(),
            wait,
            armed_late,
            armed: (e.ts != 0).then_some(e.ts),
        });
    }
    for r in &tl.reported {
        if o.task.is_some() && !keep(r.tid) {
            continue;
        }
        samples.push(TimerSample {
            expiry: r.ts.saturating_sub(r.late_ns),
            fired: r.ts,
            irq_late: r.late_ns,
            late: r.late_ns,
            cpu: r.cpu,
            tid: r.tid,
            function: format!("{} (self-reported)", s.get(r.name)),
            wait: None,
            armed_late: false,
            armed: None,
        });
    }
    if samples.iter().any(|x| x.armed_late) {
        for i in 0..sp.len() {
            if matches!(sp.kind[i], SpanKind::Runnable | SpanKind::Sleep) && keep(sp.tid[i]) {
                runnable.entry(sp.tid[i]).or_default().push(i as u32);
            }
        }
        for v in runnable.values_mut() {
            v.sort_by_key(|&i| sp.start[i as usize]);
        }
    }
    // Expiry to running, as `latency --measure timer` counts it: the callback's own few us
    // before the wakeup belong to the period too.
    let total = |x: &TimerSample| x.late + x.wait.map_or(0, |w| w.1.saturating_sub(x.fired));
    let mut totals: Vec<u64> = samples.iter().map(total).collect();
    totals.sort_unstable();
    let (deadline, source) = match o.deadline_ns {
        Some(d) => (Some(d), "given".to_string()),
        None if totals.len() >= 100 => (
            Some(quantile(&totals, 0.99)),
            "none given: the periods above p99 are explained".to_string(),
        ),
        None if !totals.is_empty() => (
            Some(1_000_000),
            "none given and too few periods for a p99: 1 ms assumed".to_string(),
        ),
        None => (None, "none".to_string()),
    };
    let is_miss = |x: &TimerSample| deadline.is_some_and(|d| total(x) > d);
    let mut irq_lates: Vec<u64> = samples
        .iter()
        .filter(|x| !is_miss(x))
        .map(|x| x.irq_late)
        .collect();
    irq_lates.sort_unstable();
    let usual_irq = irq_lates.get(irq_lates.len() / 2).copied().unwrap_or(0);
    let mut waits: Vec<u64> = samples
        .iter()
        .filter(|x| !is_miss(x))
        .filter_map(|x| x.wait.map(|w| w.1 - w.0))
        .collect();
    waits.sort_unstable();
    let usual_wait = waits.get(waits.len() / 2).copied().unwrap_or(0);
    let mut causes: FxHashMap<(String, Culprit), (u64, u64)> = FxHashMap::default();
    let mut cpus_blamed: FxHashMap<u32, u64> = FxHashMap::default();
    let mut misses = Vec::new();
    for x in samples.iter().filter(|x| is_miss(x)) {
        let mut per: FxHashMap<(String, Culprit), u64> = FxHashMap::default();
        let mut chain = vec![Link {
            offset_ns: 0,
            ts_ns: x.expiry,
            cpu: Some(x.cpu),
            kind: "from".into(),
            what: format!("hrtimer {} due, for {}", x.function, eng.task(x.tid)),
            duration_ns: 0,
            usual_ns: None,
            excess_ns: 0,
            pending_at_deadline: false,
            held_by: Vec::new(),
            waiter: None,
            queued_in_irq: None,
        }];
        // 0. A task still busy with an earlier period when this one was due: what kept it
        // from coming back (waits for its CPU, its own running) is this period's lateness.
        if let Some(armed) = x.armed.filter(|_| x.armed_late) {
            let (a, b) = (x.expiry, armed.min(x.fired));
            let mut parts: Vec<Hold> = Vec::new();
            let (mut waited, mut slept) = (0, 0);
            if let Some(list) = runnable.get(&x.tid) {
                let first = list.partition_point(|&i| sp.end[i as usize] <= a);
                for &i in &list[first..] {
                    let i = i as usize;
                    if sp.start[i] >= b {
                        break;
                    }
                    let (ra, rb) = (sp.start[i].max(a), sp.end[i].min(b));
                    if rb <= ra {
                        continue;
                    }
                    if sp.kind[i] == SpanKind::Sleep {
                        // Asleep on its earlier period's timer: what made that one late.
                        slept += rb - ra;
                        parts.extend(timer_holds(&eng, x.cpu, ra, rb, rb - ra));
                        continue;
                    }
                    waited += rb - ra;
                    let l = RawLink {
                        kind: LinkKind::Run,
                        key: (LinkKind::Run, String::new(), 1),
                        start: sp.start[i],
                        end: sp.end[i],
                        cpu: sp.cpu[i],
                        tid: x.tid,
                        what: String::new(),
                        preempted: crate::timeline::Cause::from_key(sp.key[i])
                            == crate::timeline::Cause::Preempted,
                        irq: None,
                    };
                    parts.extend(eng.holds(&l, ra, rb));
                }
            }
            // One entry per (category, culprit) over all the pieces.
            let mut held: Vec<Hold> = Vec::new();
            for h in parts {
                match held
                    .iter_mut()
                    .find(|o| o.category == h.category && o.culprit == h.culprit)
                {
                    Some(o) => o.ns += h.ns,
                    None => held.push(h),
                }
            }
            held.sort_by_key(|h| std::cmp::Reverse(h.ns));
            held.truncate(4);
            for h in &held {
                *per.entry((h.category.clone(), h.culprit.clone()))
                    .or_default() += h.ns;
            }
            *cpus_blamed.entry(x.cpu).or_default() += waited + slept;
            chain.push(Link {
                offset_ns: 0,
                ts_ns: a,
                cpu: Some(x.cpu),
                kind: "overrun".into(),
                what: format!(
                    "{} was still on an earlier period: it armed this timer {} after its expiry ({} waiting for a CPU, {} for the earlier period's late timer)",
                    eng.task(x.tid),
                    dur(b - a),
                    dur(waited),
                    dur(slept)
                ),
                duration_ns: b - a,
                usual_ns: Some(0),
                excess_ns: waited + slept,
                pending_at_deadline: false,
                held_by: held,
                waiter: None,
                queued_in_irq: None,
            });
        }
        // 1. The interrupt itself.
        let ex = x.irq_late.saturating_sub(usual_irq);
        let mut held = Vec::new();
        if ex > 10_000 {
            let (a, b) = (x.fired - ex, x.fired);
            held = timer_holds(&eng, x.cpu, a, b, ex);
            for h in &held {
                *per.entry((h.category.clone(), h.culprit.clone()))
                    .or_default() += h.ns;
            }
            *cpus_blamed.entry(x.cpu).or_default() += ex;
        }
        chain.push(Link {
            offset_ns: 0,
            ts_ns: x.expiry,
            cpu: Some(x.cpu),
            kind: "timer".into(),
            what: format!(
                "the timer interrupt fired on CPU{}{}",
                x.cpu,
                if x.armed_late {
                    " (armed after its expiry: the task overran its period)"
                } else {
                    ""
                }
            ),
            duration_ns: x.late,
            usual_ns: Some(usual_irq),
            excess_ns: if ex > 10_000 { ex } else { 0 },
            pending_at_deadline: false,
            held_by: held,
            waiter: None,
            queued_in_irq: None,
        });
        // 2. The woken task's wait for its CPU.
        if let Some((ws, we, wcpu)) = x.wait {
            let ex = (we - ws).saturating_sub(usual_wait);
            let mut held = Vec::new();
            if ex > 10_000 {
                let l = RawLink {
                    kind: LinkKind::Run,
                    key: (LinkKind::Run, String::new(), 1),
                    start: ws,
                    end: we,
                    cpu: wcpu,
                    tid: x.tid,
                    what: String::new(),
                    preempted: false,
                    irq: None,
                };
                held = eng.holds(&l, we - ex, we);
                scale(&mut held, ex);
                for h in &held {
                    *per.entry((h.category.clone(), h.culprit.clone()))
                        .or_default() += h.ns;
                }
                *cpus_blamed.entry(wcpu).or_default() += ex;
            }
            chain.push(Link {
                offset_ns: ws.saturating_sub(x.expiry),
                ts_ns: ws,
                cpu: Some(wcpu),
                kind: "wakeup".into(),
                what: format!(
                    "{} woken by the timer, runnable on CPU{wcpu}, then ran",
                    eng.task(x.tid)
                ),
                duration_ns: we - ws,
                usual_ns: Some(usual_wait),
                excess_ns: if ex > 10_000 { ex } else { 0 },
                pending_at_deadline: false,
                held_by: held,
                waiter: Some(Culprit {
                    comm: Some(s.get(tl.comm(x.tid)).to_string()),
                    pid: Some(x.tid),
                    prio: tl.prios.get(&x.tid).copied(),
                    cpu: Some(wcpu),
                    ..Default::default()
                }),
                queued_in_irq: None,
            });
        }
        let blamed: u64 = per.values().sum();
        for (k, ns) in per {
            let e = causes.entry(k).or_default();
            e.0 += 1;
            e.1 += ns;
        }
        misses.push(Miss {
            start_ns: x.expiry,
            duration_ns: Some(total(x)),
            tid: x.tid,
            cpu: x.cpu,
            late_ns: total(x).saturating_sub(deadline.unwrap_or(0)),
            blamed_ns: blamed,
            chain,
        });
    }
    misses.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let causes = rank(causes);
    let overran = samples
        .iter()
        .filter(|x| x.armed_late && is_miss(x))
        .count();
    if overran > 0 {
        notes.push(format!(
            "{overran} late periods were armed after they were due (the task was still on an earlier period): each one's lateness includes the waits that made the earlier ones late, so the totals count such a wait once per period it delayed"
        ));
    }
    if samples.is_empty() {
        notes.push(
            "no hrtimer expiry that woke a task (or self-reported lateness) matched: record timer:hrtimer_start, timer:hrtimer_expire_entry/exit and sched:sched_waking/sched_switch".into(),
        );
    }
    let mut st = CycleStats {
        count: samples.len() as u64,
        replied: samples.len() as u64,
        no_reply: 0,
        misses: misses.len() as u64,
        min_ns: totals.first().copied().unwrap_or(0),
        p50_ns: quantile(&totals, 0.5),
        p90_ns: quantile(&totals, 0.9),
        p99_ns: quantile(&totals, 0.99),
        max_ns: totals.last().copied().unwrap_or(0),
        histogram: Vec::new(),
    };
    st.histogram = crate::measure::log_histogram(&totals, 1000);
    let context = context(tl, s, &causes, &cpus_blamed);
    let advice = advise(tl, s, &causes, &misses);
    let mut windows: Vec<Window> = samples
        .iter()
        .map(|x| Window {
            start_ns: x.expiry,
            end_ns: Some(x.expiry + total(x)),
            horizon_ns: x.expiry + total(x),
            tid: x.tid,
            cpu: x.cpu,
            miss: is_miss(x),
        })
        .collect();
    windows.sort_by_key(|w| w.start_ns);
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: "hrtimer expiry (requested time)".into(),
        to: vec!["the woken task runs".into()],
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
        noun: "timer periods",
    }
}

/// `whylate explain FILE` without selectors: the worst outliers across the measures —
/// waits for a CPU (real-time tasks first), long irq handlers, irqs-off sections, softirqs
/// deferred to ksoftirqd, late timers, slow work items — each explained by the same engine.
pub fn explain_auto(
    paths: &[PathBuf],
    open: &OpenOptions,
    top: usize,
) -> Result<ExplainReport, ReadError> {
    explain_mode(paths, open, &Mode::Auto { top })
}

fn median_of(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

fn one_link_miss(start: u64, dur_ns: u64, tid: i32, cpu: u32, late: u64, mut l: Link) -> Miss {
    l.offset_ns = 0;
    let blamed = l.held_by.iter().map(|h| h.ns).sum();
    Miss {
        start_ns: start,
        duration_ns: Some(dur_ns),
        tid,
        cpu,
        late_ns: late,
        blamed_ns: blamed,
        chain: vec![l],
    }
}

/// The automatic mode on a built timeline.
pub fn analyze_auto(tl: &Timeline, s: &Interner, top: usize) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let sp = &tl.spans;
    let mut found: Vec<Miss> = Vec::new();
    let link =
        |kind: &str, ts: u64, cpu: u32, what: String, d: u64, usual: u64, held: Vec<Hold>| Link {
            offset_ns: 0,
            ts_ns: ts,
            cpu: Some(cpu),
            kind: kind.into(),
            what,
            duration_ns: d,
            usual_ns: Some(usual),
            excess_ns: d.saturating_sub(usual),
            pending_at_deadline: false,
            held_by: held,
            waiter: None,
            queued_in_irq: None,
        };
    // 1. Waits for a CPU: per thread, far above its own usual wait. Real-time threads
    //    count from 100 us, others from 1 ms.
    let mut per_tid: FxHashMap<i32, Vec<u64>> = FxHashMap::default();
    let waits: Vec<usize> = (0..sp.len())
        .filter(|&i| {
            sp.kind[i] == SpanKind::Runnable
                && sp.tid[i] > 0
                && sp.flags[i] & (span::END_UNKNOWN | span::START_UNKNOWN) == 0
                && RunCause::from_key(sp.key[i]) != RunCause::Preempted
        })
        .collect();
    for &i in &waits {
        per_tid
            .entry(sp.tid[i])
            .or_default()
            .push(sp.end[i] - sp.start[i]);
    }
    let usual: FxHashMap<i32, u64> = per_tid
        .into_iter()
        .map(|(t, v)| (t, median_of(v)))
        .collect();
    for &i in &waits {
        let tid = sp.tid[i];
        let d = sp.end[i] - sp.start[i];
        let rt = tl.prios.get(&tid).is_some_and(|&p| p < 100);
        let u = usual.get(&tid).copied().unwrap_or(0);
        if d < if rt { 100_000 } else { 1_000_000 } || d < 4 * u {
            continue;
        }
        let l = RawLink {
            kind: LinkKind::Run,
            key: (LinkKind::Run, String::new(), 1),
            start: sp.start[i],
            end: sp.end[i],
            cpu: sp.cpu[i],
            tid,
            what: String::new(),
            preempted: false,
            irq: None,
        };
        let ex = d - u;
        let mut held = eng.holds(&l, sp.end[i] - ex, sp.end[i]);
        scale(&mut held, ex);
        let by = if sp.aux[i] != NONE {
            let e = &tl.edges[sp.aux[i] as usize];
            format!(
                " (woken by {})",
                eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts)
            )
        } else {
            String::new()
        };
        let mut lk = link(
            "wakeup",
            sp.start[i],
            sp.cpu[i],
            format!("{}{} waited for CPU{}", eng.task(tid), by, sp.cpu[i]),
            d,
            u,
            held,
        );
        lk.waiter = Some(Culprit {
            comm: Some(s.get(tl.comm(tid)).to_string()),
            pid: Some(tid),
            prio: tl.prios.get(&tid).copied(),
            cpu: Some(sp.cpu[i]),
            ..Default::default()
        });
        // Real-time waits rank first: they are the ones a deadline usually hangs on.
        let rank = if rt { ex.saturating_mul(10) } else { ex };
        found.push(one_link_miss(sp.start[i], d, tid, sp.cpu[i], rank, lk));
    }
    // 2. Long irq handlers and 3. irqs-off sections.
    let mut per_irq: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
    for i in 0..sp.len() {
        if sp.kind[i] == SpanKind::Hardirq && sp.flags[i] & span::END_UNKNOWN == 0 {
            per_irq
                .entry(sp.key[i])
                .or_default()
                .push(sp.end[i] - sp.start[i]);
        }
    }
    let usual_irq: FxHashMap<u32, u64> = per_irq
        .into_iter()
        .map(|(k, v)| (k, median_of(v)))
        .collect();
    for i in 0..sp.len() {
        let d = sp.end[i] - sp.start[i];
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            continue;
        }
        match sp.kind[i] {
            SpanKind::Hardirq if sp.key[i] != u32::MAX && d >= 100_000 => {
                let irq = sp.key[i];
                let u = usual_irq.get(&irq).copied().unwrap_or(0);
                if d < 3 * u {
                    continue;
                }
                let name = tl.irq_names.get(&irq).map(|n| s.get(*n).to_string());
                let held = vec![Hold {
                    category: "hardirq".into(),
                    culprit: Culprit {
                        irq: Some(irq),
                        irq_name: name.clone(),
                        cpu: Some(sp.cpu[i]),
                        ..Default::default()
                    },
                    ns: d - u,
                }];
                let what = format!(
                    "irq {irq}{} handler ran on CPU{}, interrupting {}",
                    name.map(|n| format!(" ({n})")).unwrap_or_default(),
                    sp.cpu[i],
                    eng.task(sp.tid[i])
                );
                let lk = link("irq", sp.start[i], sp.cpu[i], what, d, u, held);
                found.push(one_link_miss(
                    sp.start[i],
                    d,
                    sp.tid[i],
                    sp.cpu[i],
                    d - u,
                    lk,
                ));
            }
            SpanKind::IrqsOff | SpanKind::PreemptOff if d >= 100_000 => {
                let caller = s
                    .get(Sym(sp.key[i]))
                    .split('+')
                    .next()
                    .unwrap_or("")
                    .to_string();
                let cat = if sp.kind[i] == SpanKind::IrqsOff {
                    "irqs-off"
                } else {
                    "preempt-off"
                };
                let held = vec![Hold {
                    category: cat.into(),
                    culprit: Culprit {
                        caller: Some(caller.clone()),
                        cpu: Some(sp.cpu[i]),
                        ..Default::default()
                    },
                    ns: d,
                }];
                let what = format!(
                    "{cat} on CPU{} in {}, opened by {caller}",
                    sp.cpu[i],
                    eng.task(sp.tid[i])
                );
                let lk = link(cat, sp.start[i], sp.cpu[i], what, d, 0, held);
                found.push(one_link_miss(sp.start[i], d, sp.tid[i], sp.cpu[i], d, lk));
            }
            _ => {}
        }
    }
    // 4. Softirqs deferred to ksoftirqd, and 5. slow work items.
    let mut per_fn: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
    for e in &tl.edges {
        if e.kind == EdgeKind::Work {
            per_fn.entry(e.key).or_default().push(e.at - e.ts);
        }
    }
    let usual_fn: FxHashMap<u32, u64> =
        per_fn.into_iter().map(|(k, v)| (k, median_of(v))).collect();
    for e in &tl.edges {
        let d = e.at.saturating_sub(e.ts);
        let (kind, u, min) = match e.kind {
            EdgeKind::Softirq if e.val as u8 & span::KSOFTIRQD != 0 => ("softirq", 0, 100_000),
            EdgeKind::Work => (
                "work",
                usual_fn.get(&e.key).copied().unwrap_or(0),
                1_000_000,
            ),
            _ => continue,
        };
        if d < min || d < 3 * u {
            continue;
        }
        let l = RawLink {
            kind: LinkKind::Work,
            key: (LinkKind::Work, String::new(), 1),
            start: e.ts,
            end: e.at,
            cpu: e.to_cpu,
            tid: e.to_tid,
            what: String::new(),
            preempted: false,
            irq: None,
        };
        let ex = d - u;
        let mut held = eng.holds(&l, e.at - ex, e.at);
        scale(&mut held, ex);
        for h in &mut held {
            if kind == "softirq" && h.category == "runqueue-wait" {
                h.category = "deferred-to-ksoftirqd".into();
            }
        }
        let what = if kind == "softirq" {
            format!(
                "softirq {} raised in {} on CPU{}, deferred to {}",
                SOFTIRQ_NAMES.get(e.key as usize).copied().unwrap_or("?"),
                eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                e.from_cpu,
                eng.task(e.to_tid)
            )
        } else {
            format!(
                "work {} queued by {} on CPU{}, started in {} on CPU{}",
                s.get(Sym(e.key)),
                eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                e.from_cpu,
                eng.task(e.to_tid),
                e.to_cpu
            )
        };
        let mut lk = link(kind, e.ts, e.to_cpu, what, d, u, held);
        lk.waiter = (e.to_tid > 0).then(|| Culprit {
            comm: Some(s.get(tl.comm(e.to_tid)).to_string()),
            pid: Some(e.to_tid),
            prio: tl.prios.get(&e.to_tid).copied(),
            cpu: Some(e.to_cpu),
            ..Default::default()
        });
        found.push(one_link_miss(e.ts, d, e.to_tid, e.to_cpu, ex, lk));
    }
    // 6. Late timers: periods whose expiry-to-running exceeds 500 us.
    let timers = analyze_timers(
        tl,
        s,
        &TimerOptions {
            task: None,
            deadline_ns: Some(500_000),
            top,
        },
    );
    found.extend(timers.misses);
    found.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    found.truncate(200);
    // Rank causes over the outliers.
    let mut causes: FxHashMap<(String, Culprit), (u64, u64)> = FxHashMap::default();
    let mut cpus: FxHashMap<u32, u64> = FxHashMap::default();
    for m in &found {
        let mut seen: FxHashSet<(String, Culprit)> = FxHashSet::default();
        for l in &m.chain {
            for h in &l.held_by {
                let k = (h.category.clone(), h.culprit.clone());
                let e = causes.entry(k.clone()).or_default();
                if seen.insert(k) {
                    e.0 += 1;
                }
                e.1 += h.ns;
                if let Some(c) = h.culprit.cpu {
                    *cpus.entry(c).or_default() += h.ns;
                }
            }
        }
    }
    let causes = rank(causes);
    let mut d: Vec<u64> = found.iter().filter_map(|m| m.duration_ns).collect();
    d.sort_unstable();
    let st = CycleStats {
        count: found.len() as u64,
        replied: found.len() as u64,
        no_reply: 0,
        misses: found.len() as u64,
        min_ns: d.first().copied().unwrap_or(0),
        p50_ns: quantile(&d, 0.5),
        p90_ns: quantile(&d, 0.9),
        p99_ns: quantile(&d, 0.99),
        max_ns: d.last().copied().unwrap_or(0),
        histogram: crate::measure::log_histogram(&d, 1000),
    };
    let context = context(tl, s, &causes, &cpus);
    let advice = advise(tl, s, &causes, &found);
    let mut notes = vec![
        "automatic mode: outliers are waits for a CPU over 1 ms (100 us for real-time tasks) and 4x the task's usual, irq handlers over 100 us and 3x their usual, irqs-off/preempt-off sections over 100 us, softirqs deferred to ksoftirqd over 100 us, work items waiting over 1 ms and 3x their usual, timer periods over 500 us; give --from/--to for your own request/response cycle".to_string(),
    ];
    if found.is_empty() {
        notes.push("no outlier above those thresholds".into());
    }
    let mut windows: Vec<Window> = found
        .iter()
        .map(|m| Window {
            start_ns: m.start_ns,
            end_ns: m.duration_ns.map(|d| m.start_ns + d),
            horizon_ns: m.start_ns + m.duration_ns.unwrap_or(0),
            tid: m.tid,
            cpu: m.cpu,
            miss: true,
        })
        .collect();
    windows.sort_by_key(|w| w.start_ns);
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: "automatic".into(),
        to: Vec::new(),
        deadline_ns: None,
        deadline_source: "automatic mode: per-measure thresholds (see notes)".into(),
        cycles: st,
        causes,
        misses: found,
        context,
        advice,
        notes,
        machine: None,
        cpus: Vec::new(),
        windows,
        top,
        noun: "outliers",
    }
}

/// `--softirq VEC`: raise → service outliers of one softirq vector (and tasklets, for
/// TASKLET), each explained: where it was served, whether it was deferred to ksoftirqd,
/// and who held the CPU meanwhile (seed 002).
pub fn explain_softirq(
    paths: &[PathBuf],
    open: &OpenOptions,
    vector: &str,
    deadline_ns: Option<u64>,
    top: usize,
) -> Result<ExplainReport, ReadError> {
    explain_mode(
        paths,
        open,
        &Mode::Softirq {
            vector: vector.to_string(),
            deadline_ns,
            top,
        },
    )
}

/// The `--softirq` analysis on a built timeline. `vector`: a name (`NET_RX`) or number.
pub fn analyze_softirq(
    tl: &Timeline,
    s: &Interner,
    vector: &str,
    deadline_ns: Option<u64>,
    top: usize,
) -> ExplainReport {
    let eng = Engine::new(tl, s);
    let sp = &tl.spans;
    let want: Option<u32> = SOFTIRQ_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(vector))
        .map(|i| i as u32)
        .or_else(|| vector.parse().ok());
    // Tasklets ride the TASKLET vector: their schedule → run timing is a sample only
    // when the trace has no softirq_raise/entry for the vector itself (function tracer
    // dumps such as seed 002's).
    let tasklet = want == Some(6)
        && !tl
            .edges
            .iter()
            .any(|e| e.kind == EdgeKind::Softirq && e.key == 6);
    let mut samples: Vec<usize> = tl
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            (e.kind == EdgeKind::Softirq && Some(e.key) == want)
                || (tasklet && e.kind == EdgeKind::Tasklet)
        })
        .map(|(i, _)| i)
        .collect();
    samples.sort_by_key(|&i| tl.edges[i].ts);
    let mut lat: Vec<u64> = samples
        .iter()
        .map(|&i| tl.edges[i].at - tl.edges[i].ts)
        .collect();
    lat.sort_unstable();
    let (deadline, source) = match deadline_ns {
        Some(d) => (d, "given".to_string()),
        None if lat.len() >= 100 => (
            quantile(&lat, 0.99),
            "none given: the services above p99 are explained".to_string(),
        ),
        None => (
            100_000,
            "none given and too few samples for a p99: 100 us assumed".to_string(),
        ),
    };
    // Usual = the median of the services within the deadline (0 when all were late).
    let good: Vec<u64> = lat.iter().copied().filter(|&d| d <= deadline).collect();
    let usual = good
        .get(good.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    let mut misses = Vec::new();
    let mut causes: FxHashMap<(String, Culprit), (u64, u64)> = FxHashMap::default();
    let mut cpus: FxHashMap<u32, u64> = FxHashMap::default();
    for &ei in &samples {
        let e = &tl.edges[ei];
        let d = e.at - e.ts;
        if d <= deadline {
            continue;
        }
        // Deferred: a ksoftirqd of this CPU was waiting for it meanwhile.
        // Waits sorted by start: the latest ones that began before the entry, backwards
        // (a ksoftirqd wait covering the raise began shortly before or after it).
        let upto = eng
            .runnable
            .partition_point(|&i| sp.start[i as usize] < e.at);
        let ksoftirqd = eng.runnable[..upto]
            .iter()
            .rev()
            .take(4096)
            .map(|&i| i as usize)
            .find(|&i| {
                sp.cpu[i] == e.to_cpu
                    && sp.end[i] > e.ts
                    && s.get(tl.comm(sp.tid[i])).starts_with("ksoftirqd")
            });
        let waiter = ksoftirqd.map_or(-1, |i| sp.tid[i]);
        let l = RawLink {
            kind: LinkKind::Work,
            key: (LinkKind::Work, String::new(), 1),
            start: e.ts,
            end: e.at,
            cpu: e.to_cpu,
            tid: waiter,
            what: String::new(),
            preempted: false,
            irq: None,
        };
        let ex = d.saturating_sub(usual);
        let mut held = eng.holds(&l, e.at - ex, e.at);
        scale(&mut held, ex);
        for h in &mut held {
            if h.category == "runqueue-wait" || h.category == "preempted-by" {
                h.category = if ksoftirqd.is_some() {
                    "deferred-to-ksoftirqd"
                } else {
                    "softirq-pending"
                }
                .into();
            }
        }
        let mut per: FxHashMap<(String, Culprit), u64> = FxHashMap::default();
        for h in &held {
            *per.entry((h.category.clone(), h.culprit.clone()))
                .or_default() += h.ns;
            *cpus.entry(e.to_cpu).or_default() += h.ns;
        }
        let name = if e.kind == EdgeKind::Tasklet {
            "tasklet (scheduled -> run)".to_string()
        } else {
            format!(
                "softirq {}",
                SOFTIRQ_NAMES.get(e.key as usize).copied().unwrap_or("?")
            )
        };
        let served = if e.kind == EdgeKind::Softirq {
            format!(", served in {}", {
                let f = e.val as u8;
                if f & span::KSOFTIRQD != 0 {
                    "ksoftirqd".to_string()
                } else if f & span::IN_TASK != 0 {
                    format!("task context ({})", eng.task(e.to_tid))
                } else {
                    format!("irq exit ({})", eng.task(e.to_tid))
                }
            })
        } else {
            String::new()
        };
        let deferred = ksoftirqd
            .map(|i| {
                format!(
                    "; deferred to {} (runnable from {})",
                    eng.task(sp.tid[i]),
                    secs(sp.start[i])
                )
            })
            .unwrap_or_default();
        let what = format!(
            "{name} raised in {} on CPU{}{served}{deferred}",
            eng.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
            e.from_cpu
        );
        let blamed = held.iter().map(|h| h.ns).sum();
        for (k, ns) in per {
            let c = causes.entry(k).or_default();
            c.0 += 1;
            c.1 += ns;
        }
        misses.push(Miss {
            start_ns: e.ts,
            duration_ns: Some(d),
            tid: e.to_tid,
            cpu: e.to_cpu,
            late_ns: d - deadline,
            blamed_ns: blamed,
            chain: vec![Link {
                offset_ns: 0,
                ts_ns: e.ts,
                cpu: Some(e.to_cpu),
                kind: "softirq".into(),
                what,
                duration_ns: d,
                usual_ns: Some(usual),
                excess_ns: ex,
                pending_at_deadline: false,
                held_by: held,
                waiter: ksoftirqd.map(|i| Culprit {
                    comm: Some(s.get(tl.comm(sp.tid[i])).to_string()),
                    pid: Some(sp.tid[i]),
                    prio: tl.prios.get(&sp.tid[i]).copied(),
                    cpu: Some(e.to_cpu),
                    ..Default::default()
                }),
                queued_in_irq: None,
            }],
        });
    }
    misses.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let causes = rank(causes);
    let mut notes = Vec::new();
    if want.is_none() {
        notes.push(format!(
            "{vector:?} is not a softirq vector (one of {}, or 0-9)",
            SOFTIRQ_NAMES.join(" ")
        ));
    } else if samples.is_empty() {
        notes.push("no raise of that vector was followed by its entry in this trace: record irq:softirq_raise and irq:softirq_entry/exit".into());
    }
    let st = CycleStats {
        count: samples.len() as u64,
        replied: samples.len() as u64,
        no_reply: 0,
        misses: misses.len() as u64,
        min_ns: lat.first().copied().unwrap_or(0),
        p50_ns: quantile(&lat, 0.5),
        p90_ns: quantile(&lat, 0.9),
        p99_ns: quantile(&lat, 0.99),
        max_ns: lat.last().copied().unwrap_or(0),
        histogram: crate::measure::log_histogram(&lat, 1000),
    };
    let context = context(tl, s, &causes, &cpus);
    let advice = advise(tl, s, &causes, &misses);
    let windows = samples
        .iter()
        .map(|&i| {
            let e = &tl.edges[i];
            Window {
                start_ns: e.ts,
                end_ns: Some(e.at),
                horizon_ns: e.at,
                tid: -1,
                cpu: e.to_cpu,
                miss: e.at - e.ts > deadline,
            }
        })
        .collect();
    ExplainReport {
        inputs: Vec::new(),
        events: 0,
        from: format!("softirq_raise {vector}"),
        to: vec!["softirq_entry (or tasklet run)".into()],
        deadline_ns: Some(deadline),
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
        top,
        noun: "softirq services",
    }
}

/// Why a timer interrupt came late on `cpu` during `[a, b]`: irqs-off sections, a stalled
/// CPU, or, when neither is in the trace, a section inferred from one task sitting inside
/// one system call the whole time.
fn timer_holds(eng: &Engine<'_>, cpu: u32, a: u64, b: u64, ex: u64) -> Vec<Hold> {
    let tl = eng.tl;
    let l = RawLink {
        kind: LinkKind::Timer,
        key: (LinkKind::Timer, String::new(), 1),
        start: a,
        end: b,
        cpu,
        tid: -1,
        what: String::new(),
        preempted: false,
        irq: None,
    };
    let mut h = eng.holds(&l, a, b);
    if h.len() == 1 && h[0].category == "timer-irq-late" {
        let stalled: u64 = tl
            .silences
            .iter()
            .filter(|x| x.cpu == cpu)
            .map(|x| x.to.min(b).saturating_sub(x.from.max(a)))
            .sum();
        if tl.ticks > 0 && stalled * 2 >= b - a {
            h[0].category = "cpu-stalled".into();
        } else if let Some((tid, name)) = one_syscall(eng, cpu, a, b) {
            h[0] = Hold {
                category: "irqs-off (inferred)".into(),
                culprit: Culprit {
                    comm: Some(eng.s.get(tl.comm(tid)).to_string()),
                    pid: Some(tid),
                    prio: tl.prios.get(&tid).copied(),
                    caller: Some(format!("inside {name}()")),
                    cpu: Some(cpu),
                    ..Default::default()
                },
                ns: ex,
            };
        }
    }
    scale(&mut h, ex);
    h
}

/// The one task that ran on `cpu` through `[a, b]` from inside one syscall, if so.
fn one_syscall(eng: &Engine<'_>, cpu: u32, a: u64, b: u64) -> Option<(i32, String)> {
    let tl = eng.tl;
    let occ = tl.occupants(cpu, a, b);
    let top = occ.first()?;
    if top.what != OccupantKind::Task || top.id <= 0 || top.ns * 100 < (b - a) * 95 {
        return None;
    }
    let tid = top.id as i32;
    let sp = &tl.spans;
    let upto = eng.syscalls.partition_point(|&i| sp.start[i as usize] <= a);
    eng.syscalls[..upto]
        .iter()
        .rev()
        .take(10_000)
        .find_map(|&i| {
            let i = i as usize;
            (sp.tid[i] == tid && sp.end[i] >= b).then(|| {
                let name = if sp.flags[i] & span::NAMED != 0 {
                    eng.s.get(Sym(sp.key[i])).to_string()
                } else {
                    tl.syscall_names
                        .get(&sp.key[i])
                        .map(|x| eng.s.get(*x).to_string())
                        .unwrap_or_else(|| format!("syscall {}", sp.key[i]))
                };
                (tid, name)
            })
        })
}

fn context(
    tl: &Timeline,
    s: &Interner,
    causes: &[CauseRow],
    blamed: &FxHashMap<u32, u64>,
) -> Vec<CpuContext> {
    let mut cpus: Vec<(u32, u64)> = blamed.iter().map(|(c, n)| (*c, *n)).collect();
    cpus.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let span = tl.last_ts.saturating_sub(tl.first_ts.unwrap_or(0)).max(1);
    let sp = &tl.spans;
    cpus.into_iter()
        .take(2)
        .map(|(cpu, _)| {
            let mut run: FxHashMap<i32, u64> = FxHashMap::default();
            if let Some(l) = tl.runs_by_cpu.get(cpu as usize) {
                for &i in l {
                    let i = i as usize;
                    if sp.tid[i] > 0 {
                        *run.entry(sp.tid[i]).or_default() += sp.end[i] - sp.start[i];
                    }
                }
            }
            let mut busy: Vec<(String, f64)> = run
                .into_iter()
                .map(|(tid, ns)| {
                    (
                        format!("{}[{tid}]", s.get(tl.comm(tid))),
                        ns as f64 / span as f64,
                    )
                })
                .collect();
            busy.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            busy.truncate(5);
            let irqs: Vec<(String, u64)> = tl
                .hardirq_counts(cpu)
                .into_iter()
                .take(5)
                .map(|(irq, n)| {
                    let name = tl.irq_names.get(&irq).map(|n| s.get(*n)).unwrap_or("");
                    (format!("irq {irq} {name}").trim_end().to_string(), n)
                })
                .collect();
            let role = causes
                .iter()
                .find(|c| c.culprit.cpu == Some(cpu))
                .map(|c| {
                    format!(
                        "the chain waited here ({} {})",
                        c.category,
                        c.culprit.label()
                    )
                })
                .unwrap_or_else(|| "the chain waited here".into());
            CpuContext {
                cpu,
                role,
                busy,
                irqs,
            }
        })
        .collect()
}

fn advise(tl: &Timeline, s: &Interner, causes: &[CauseRow], misses: &[Miss]) -> Vec<Advice> {
    let mut out: Vec<Advice> = Vec::new();
    let ncpu = tl.cpus.max(1);
    let others = |cpu: u32| -> String {
        let v: Vec<String> = (0..ncpu)
            .filter(|&c| c != cpu)
            .map(|c| c.to_string())
            .collect();
        if v.is_empty() {
            "<another cpu>".into()
        } else {
            v.join(",")
        }
    };
    // Which waiting tasks the top causes held up: the links they were found in.
    let waiters = |c: &CauseRow| -> Vec<(String, i32)> {
        let mut v: Vec<(String, i32)> = Vec::new();
        for m in misses {
            for l in &m.chain {
                if !l
                    .held_by
                    .iter()
                    .any(|h| h.category == c.category && h.culprit == c.culprit)
                {
                    continue;
                }
                if let Some(w) = &l.waiter {
                    let name = w.comm.clone().unwrap_or_default();
                    let pid = w.pid.unwrap_or(-1);
                    if !v.iter().any(|x| x.1 == pid) {
                        v.push((name, pid));
                    }
                }
            }
        }
        v
    };
    // Work the chain waited for that an interrupt queued: its irq placement matters.
    let mut irq_work: Vec<(Option<u32>, String, u32)> = Vec::new();
    for m in misses {
        for l in &m.chain {
            if let (Some(irq), true) = (l.queued_in_irq, l.excess_ns > 0) {
                let f = l.what.split(' ').nth(1).unwrap_or("").to_string();
                let cpu = l.cpu.unwrap_or(0);
                let irq = (irq != u32::MAX).then_some(irq);
                if !irq_work.iter().any(|x| x.0 == irq && x.1 == f) {
                    irq_work.push((irq, f, cpu));
                }
            }
        }
    }
    for (irq, f, cpu) in irq_work.iter().take(2) {
        let (what, target) = match irq {
            Some(n) => (
                format!("irq {n}{}", tl.irq_names.get(n).map(|x| format!(" ({})", s.get(*x))).unwrap_or_default()),
                format!("/proc/irq/{n}/smp_affinity_list"),
            ),
            None => (
                "the interrupt that queues it (not in this trace: see /proc/interrupts for the device)".to_string(),
                "/proc/irq/<N>/smp_affinity_list".to_string(),
            ),
        };
        out.push(Advice {
            action: format!(
                "Pin {what} so the {f} work it queues lands on a CPU where its worker does not queue behind other tasks (it waited on CPU{cpu})"
            ),
            command: format!("echo <quiet cpu> > {target}"),
            cost: "that CPU takes the device's interrupt load; irqbalance may move the IRQ back (stop irqbalance, or ban the IRQ from it)".into(),
        });
    }
    for c in causes.iter().take(3) {
        let cpu = c.culprit.cpu.unwrap_or(0);
        match c.category.as_str() {
            "runqueue-wait" | "preempted-by" => {
                let (comm, pid) = (
                    c.culprit.comm.clone().unwrap_or_default(),
                    c.culprit.pid.unwrap_or(-1),
                );
                for (w, wpid) in waiters(c).into_iter().take(2) {
                    if w.starts_with("kworker/") {
                        out.push(Advice {
                            action: format!(
                                "Give the worker that carries the chain a real-time priority so {comm} cannot delay it"
                            ),
                            command: format!("chrt -f -p 50 {wpid}"),
                            cost: format!(
                                "{w} is a pool worker: the setting is lost when another worker picks the work up (unbound pools rotate workers); a SCHED_FIFO kworker also preempts everything else on CPU{cpu}"
                            ),
                        });
                    } else {
                        out.push(Advice {
                            action: format!("Run {w} as SCHED_FIFO so {comm} cannot keep it waiting"),
                            command: format!("chrt -f -p 50 {wpid}"),
                            cost: "a SCHED_FIFO thread that spins or loops starves every normal task on its CPU; keep its work bounded (sched_rt_runtime_us still reserves 5% for others)".into(),
                        });
                    }
                }
                out.push(Advice {
                    action: format!("Move {comm} off CPU{cpu}, where the chain runs"),
                    command: format!("taskset -pc {} {pid}", others(cpu)),
                    cost: format!(
                        "{comm} loses CPU{cpu}: on a {ncpu}-CPU machine that is {}% of its capacity; to keep CPU{cpu} for the latency path for good, isolate it (isolcpus= or a cpuset), which costs a CPU",
                        100 / ncpu
                    ),
                });
            }
            "hardirq" => {
                let irq = c.culprit.irq.unwrap_or(0);
                out.push(Advice {
                    action: format!("Steer {} away from CPU{cpu}", c.culprit.label()),
                    command: format!("echo {} > /proc/irq/{irq}/smp_affinity_list", others(cpu)),
                    cost: "that CPU then takes all of this interrupt's load; irqbalance may move it back (stop irqbalance or ban the IRQ with IRQBALANCE_BANNED_CPULIST)".into(),
                });
                out.push(Advice {
                    action: "Run interrupt handlers as threads so a long one can be preempted".into(),
                    command: "boot with threadirqs".into(),
                    cost: "every interrupt pays a context switch; throughput drops slightly".into(),
                });
            }
            "deferred-to-ksoftirqd" => out.push(Advice {
                action: format!(
                    "The softirq was handed to ksoftirqd/{cpu}, which then waited behind {}: let ksoftirqd preempt it",
                    c.culprit.label()
                ),
                command: format!(
                    "chrt -f -p 1 $(pgrep -x ksoftirqd/{cpu})   (or move {} off CPU{cpu}: taskset -pc {} {})",
                    c.culprit.comm.clone().unwrap_or_default(),
                    others(cpu),
                    c.culprit.pid.unwrap_or(-1)
                ),
                cost: "a real-time ksoftirqd runs network/timer bottom halves ahead of every normal task on that CPU: bursts of softirq work then delay applications instead".into(),
            }),
            "softirq" => out.push(Advice {
                action: format!(
                    "Move the interrupt that raises {} off CPU{cpu}, or let its softirq run in a thread",
                    c.culprit.label()
                ),
                command: format!(
                    "echo {} > /proc/irq/<N>/smp_affinity_list   (N: the device irq in the context table)",
                    others(cpu)
                ),
                cost: "the other CPU takes the network/block load".into(),
            }),
            "irqs-off" => {
                let caller = c.culprit.caller.clone().unwrap_or_default();
                if caller.contains("console") || caller.contains("printk") {
                    out.push(Advice {
                        action: format!(
                            "Stop printk from writing to the slow console with interrupts off ({caller})"
                        ),
                        command: "dmesg -n 1   (or boot with loglevel=1 / quiet)".into(),
                        cost: "kernel messages no longer reach the console as they happen (they stay in the log buffer: dmesg, journal)".into(),
                    });
                } else {
                    out.push(Advice {
                        action: format!("Shorten or move the irqs-off section in {caller}"),
                        command: format!("keep the work that calls {caller} off CPU{cpu} (taskset) or fix it in the driver"),
                        cost: "needs the code owner".into(),
                    });
                }
            }
            "cpu-stalled" => out.push(Advice {
                action: format!(
                    "CPU{cpu} stopped recording (not even its tick) while busy: on a VM the host did not run this vCPU"
                ),
                command: "grep '^cpu ' /proc/stat   (8th number: steal time; on the host, pin the vCPUs to dedicated cores)".into(),
                cost: "dedicated host cores for the guest".into(),
            }),
            "timer-irq-late" => out.push(Advice {
                action: format!(
                    "The timer interrupt came late on CPU{cpu} and the trace does not show why: record the sections with interrupts off"
                ),
                command: "whylate record -e latency,preemptirq:irq_disable,preemptirq:irq_enable   (needs CONFIG_PREEMPTIRQ_TRACEPOINTS)".into(),
                cost: "preemptirq events are frequent: a bigger buffer, more overhead while tracing".into(),
            }),
            "preemption-delay" => out.push(Advice {
                action: format!(
                    "A real-time task waited on CPU{cpu} for non-preemptible kernel code to finish"
                ),
                command: "boot with preempt=full (PREEMPT_DYNAMIC kernels), or a PREEMPT_RT kernel".into(),
                cost: "more preemption points: some throughput".into(),
            }),
            "cpu-idle" => out.push(Advice {
                action: format!("CPU{cpu} sat idle while the chain waited: idle exit or host (VM) latency"),
                command: "cpupower idle-set -D 10   (or boot with idle=poll; on a VM check the host's steal time)".into(),
                cost: "shallower idle states burn power; idle=poll keeps the CPU at full power".into(),
            }),
            _ => {}
        }
    }
    let _ = s;
    // Two causes can lead to the same command; once is enough.
    let mut seen = FxHashSet::default();
    out.retain(|a| seen.insert(a.command.clone()));
    out
}

impl ExplainReport {
    /// Terminal rendering: the verdict first.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let c = &self.cycles;
        let dl = self.deadline_ns.map_or("no deadline".to_string(), |d| {
            format!("deadline {}", dur(d))
        });
        let q = if c.replied > 0 {
            format!(
                "; p50 {}, p99 {}, max {}",
                dur(c.p50_ns),
                dur(c.p99_ns),
                dur(c.max_ns)
            )
        } else {
            String::new()
        };
        if self.noun == "outliers" {
            let _ = writeln!(o, "{} outliers across the measures{q}", c.count);
        } else {
            let _ = writeln!(
                o,
                "{} {}, {} missed ({} no reply), {dl}{q}",
                c.count, self.noun, c.misses, c.no_reply
            );
        }
        if self.deadline_source != "given" && self.noun != "outliers" {
            let _ = writeln!(o, "  deadline {}", self.deadline_source);
        }
        if !self.to.is_empty() {
            let _ = writeln!(o, "  cycle: {} -> {}", self.from, self.to.join(" | "));
        }
        if c.count == 0 && !self.to.is_empty() {
            let _ = writeln!(
                o,
                "\nno cycle: nothing matched {:?} (check the selector: event name, field names, values)",
                self.from
            );
        }
        if !c.histogram.is_empty() {
            let _ = writeln!(o, "\nduration histogram (replied):");
            let max = c
                .histogram
                .iter()
                .map(|b| b.count)
                .max()
                .unwrap_or(1)
                .max(1);
            for b in &c.histogram {
                let mark = match self.deadline_ns {
                    Some(d) if b.lo >= d => " <- over the deadline",
                    Some(d) if b.hi > d => " <- deadline inside",
                    _ => "",
                };
                let _ = writeln!(
                    o,
                    "  [{:>9}, {:>9}) {:>6} |{}{mark}",
                    dur(b.lo),
                    dur(b.hi),
                    b.count,
                    "#".repeat(((b.count as f64 / max as f64) * 40.0).ceil() as usize)
                );
            }
        }
        if !self.causes.is_empty() {
            let _ = writeln!(
                o,
                "\nwhy the {} {} were late (excess over the usual):",
                c.misses,
                if self.noun == "outliers" {
                    "outliers"
                } else {
                    "misses"
                }
            );
            let _ = writeln!(
                o,
                "  {:<20} {:<36} {:>6} {:>11} {:>10} {:>6}",
                "category", "culprit", "misses", "total", "mean", "share"
            );
            for r in self.causes.iter().take(10) {
                let mut who = r.culprit.label();
                if let Some(cpu) = r.culprit.cpu {
                    let _ = write!(who, " on CPU{cpu}");
                }
                let _ = writeln!(
                    o,
                    "  {:<20} {:<36} {:>6} {:>11} {:>10} {:>5.0}%",
                    r.category,
                    who,
                    r.count,
                    dur(r.total_excess_ns),
                    dur(r.mean_excess_ns),
                    r.share * 100.0
                );
            }
        }
        for m in self.misses.iter().take(self.top) {
            let d = m
                .duration_ns
                .map_or("no reply".to_string(), |d| format!("took {}", dur(d)));
            let _ = writeln!(
                o,
                "\n{} at {} (tid {}, CPU{}): {d}, {} blamed",
                if self.noun == "outliers" {
                    "outlier"
                } else {
                    "miss"
                },
                secs(m.start_ns),
                m.tid,
                m.cpu,
                dur(m.blamed_ns)
            );
            for l in &m.chain {
                let cpu = l.cpu.map_or("    ".to_string(), |c| format!("cpu{c}"));
                let dur_s = if l.duration_ns > 0 {
                    dur(l.duration_ns)
                } else {
                    String::new()
                };
                let flag = if l.excess_ns > 0 {
                    format!(
                        "  <- {} over usual {}",
                        dur(l.excess_ns),
                        dur(l.usual_ns.unwrap_or(0))
                    )
                } else {
                    String::new()
                };
                let pend = if l.pending_at_deadline {
                    " [pending at the deadline]"
                } else {
                    ""
                };
                let _ = writeln!(
                    o,
                    "  +{:>10} {cpu:>5} {:<8} {}{} {dur_s}{flag}",
                    dur(l.offset_ns),
                    l.kind,
                    l.what,
                    pend
                );
                for h in l.held_by.iter().take(3) {
                    let _ = writeln!(
                        o,
                        "  {:>12} {:>5}   {} {} {}",
                        "",
                        "",
                        h.category,
                        h.culprit.label(),
                        dur(h.ns)
                    );
                }
            }
        }
        if self.misses.len() > self.top {
            let _ = writeln!(
                o,
                "\n... {} more {} (--top, --json)",
                self.misses.len() - self.top,
                if self.noun == "outliers" {
                    "outliers"
                } else {
                    "misses"
                }
            );
        }
        if !self.context.is_empty() {
            let _ = writeln!(o, "\ncontext:");
            for cx in &self.context {
                let busy: Vec<String> = cx
                    .busy
                    .iter()
                    .map(|(t, f)| format!("{t} {:.0}%", f * 100.0))
                    .collect();
                let _ = writeln!(o, "  CPU{}: {}; busy: {}", cx.cpu, cx.role, busy.join(", "));
                if !cx.irqs.is_empty() {
                    let irqs: Vec<String> =
                        cx.irqs.iter().map(|(i, n)| format!("{i} x{n}")).collect();
                    let _ = writeln!(o, "        irqs handled there: {}", irqs.join(", "));
                }
            }
        }
        if let Some(m) = &self.machine {
            let irqs: Vec<String> = m
                .irqs
                .iter()
                .map(|i| {
                    let to = match (&i.effective, &i.affinity) {
                        (Some(e), Some(a)) if e != a => format!("CPU {e} (allowed {a})"),
                        (Some(e), _) => format!("CPU {e}"),
                        (None, Some(a)) => format!("CPU {a}"),
                        (None, None) => "?".into(),
                    };
                    format!("{} {} → {to}", i.irq, i.name)
                })
                .collect();
            let _ = writeln!(
                o,
                "  machine: {}, CPUs {}, irqbalance {}{}",
                m.kernel,
                m.online_cpus,
                if m.irqbalance {
                    "running"
                } else {
                    "not running"
                },
                if irqs.is_empty() {
                    String::new()
                } else {
                    format!("; IRQ {}", irqs.join(", IRQ "))
                }
            );
        }
        if !self.advice.is_empty() {
            let _ = writeln!(o, "\nadvice:");
            for a in &self.advice {
                let _ = writeln!(
                    o,
                    "  - {}\n      {}\n      cost: {}",
                    a.action, a.command, a.cost
                );
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(o, "\nnotes:");
            for n in &self.notes {
                let _ = writeln!(o, "  - {n}");
            }
        }
        o
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
