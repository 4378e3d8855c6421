//! Kernel reports in a log (seed 001): soft and hard lockups, RCU stalls, hung tasks,
//! NMI backtraces, dropped printk messages, each with its CPU, time, task and stack, read
//! from a log's `printk` messages (and ftrace's printk:console events) while the stream
//! goes by. The
//! analysis names the mechanism it recognises, with its evidence: a stack through
//! printk -> console_unlock -> the serial driver is a slow serial console draining a
//! printk flood. A report it does not recognise is said to be so, with its stack.

use crate::event::{Event, Interner, Kind};
use crate::explain::advice::{is_console_code, slow_console};
use crate::explain::causes as cause;
use crate::explain::driver::{assemble, Findings, Framing, PerMiss, Tally};
use crate::explain::report::{Culprit, CycleStats, ExplainReport, Hold, KernelSummary, Link, Miss};
use crate::timeline::Timeline;
use serde::Serialize;

/// One report and the stack printed with it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KernelReport {
    /// `soft lockup`, `hard lockup`, `RCU stall`, `hung task`, `NMI backtrace`,
    /// `messages dropped`, `stack` (a stack printed on its own).
    pub kind: String,
    /// The line as logged.
    pub line: String,
    /// Log time, ns.
    pub ts: u64,
    /// CPU it is about.
    pub cpu: Option<u32>,
    /// Task it names: comm and pid.
    pub task: Option<(String, i32)>,
    /// How long it says something was stuck, ns.
    pub stuck_ns: Option<u64>,
    /// Messages it says were dropped.
    pub dropped: Option<u64>,
    /// Stack frames, innermost first, offsets removed; `<IRQ>` marks kept.
    pub stack: Vec<String>,
}

/// Reads reports from the messages while they are read.
#[derive(Default)]
pub struct KernelReports {
    /// The reports, in log order.
    pub reports: Vec<KernelReport>,
    /// The report the next stack lines belong to.
    current: Option<usize>,
    in_stack: bool,
    /// Messages read, bytes logged, and the first and last message times.
    pub messages: u64,
    bytes: u64,
    first_last: Option<(u64, u64)>,
}

impl KernelReports {
    /// Feeds one event: only a log's messages and ftrace's printk:console are read.
    #[inline]
    pub fn push(&mut self, e: &Event, s: &Interner) {
        // Inlined test, so the other events (nearly all of a trace) cost no call.
        if matches!(e.kind, Kind::Print { .. } | Kind::Console { .. }) {
            self.push_message(e, s);
        }
    }

    fn push_message(&mut self, e: &Event, s: &Interner) {
        let msg = match &e.kind {
            Kind::Print { name, msg } if s.get(*name) == "printk" => msg,
            Kind::Console { msg } => msg,
            _ => return,
        };
        self.messages += 1;
        self.bytes += msg.len() as u64 + 1;
        let fl = self.first_last.get_or_insert((e.ts, e.ts));
        fl.1 = e.ts;
        self.message(e.ts, msg);
    }

    fn message(&mut self, ts: u64, msg: &str) {
        let t = msg.trim();
        if let Some(r) = report_of(t, ts) {
            self.reports.push(r);
            self.current = Some(self.reports.len() - 1);
            self.in_stack = false;
            return;
        }
        if let Some((cpu, pid, comm)) = cpu_line(t) {
            self.current = Some(self.owner(ts, cpu, (comm, pid)));
            self.in_stack = false;
            return;
        }
        if t.starts_with("Call Trace:") {
            self.in_stack = true;
            if self.current.is_none() {
                self.reports.push(KernelReport {
                    kind: "stack".into(),
                    line: t.into(),
                    ts,
                    ..Default::default()
                });
                self.current = Some(self.reports.len() - 1);
            }
            return;
        }
        if self.in_stack {
            if let (Some(f), Some(i)) = (frame(t), self.current) {
                self.reports[i].stack.push(f);
            }
        }
    }

    /// The report a `CPU: N PID: P Comm: C` header belongs to: the latest one about that
    /// CPU (or, for a report without a CPU, that task) without a stack yet, else a new
    /// stack of its own.
    fn owner(&mut self, ts: u64, cpu: u32, task: (String, i32)) -> usize {
        let mine = (self.reports.iter().rposition(|r| {
            // A task can migrate: a report about another CPU is not this stack's.
            r.stack.is_empty()
                && match r.cpu {
                    Some(c) => c == cpu,
                    None => r.task.as_ref().is_some_and(|t| t.1 == task.1),
                }
        }))
        .filter(|&i| self.reports.len() - i <= 8);
        match mine {
            Some(i) => {
                let r = &mut self.reports[i];
                r.cpu.get_or_insert(cpu);
                r.task.get_or_insert(task);
                i
            }
            None => {
                self.reports.push(KernelReport {
                    kind: "stack".into(),
                    line: format!("CPU: {cpu} PID: {} Comm: {}", task.1, task.0),
                    ts,
                    cpu: Some(cpu),
                    task: Some(task),
                    ..Default::default()
                });
                self.reports.len() - 1
            }
        }
    }

    /// Bytes per second the log was written at, when its times span a second or more
    /// (a log without times has line numbers for times, far shorter).
    pub fn bytes_per_s(&self) -> Option<f64> {
        let (a, b) = self.first_last?;
        (b - a >= 1_000_000_000).then(|| self.bytes as f64 * 1e9 / (b - a) as f64)
    }
}

/// The number after `key` in `t`.
fn num_after(t: &str, key: &str) -> Option<u64> {
    let p = t.find(key)? + key.len();
    let d: String = t[p..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    d.parse().ok()
}

/// `[comm:pid]` at the end of a soft lockup line.
fn bracket_task(t: &str) -> Option<(String, i32)> {
    let open = t.rfind('[')?;
    let inner = t[open + 1..].strip_suffix(']')?;
    let (comm, pid) = inner.rsplit_once(':')?;
    Some((comm.to_string(), pid.trim().parse().ok()?))
}

/// A report's first line.
fn report_of(t: &str, ts: u64) -> Option<KernelReport> {
    let mut r = KernelReport {
        line: t.to_string(),
        ts,
        ..Default::default()
    };
    if t.contains("BUG: soft lockup") {
        r.kind = "soft lockup".into();
        r.cpu = num_after(t, "CPU#").map(|c| c as u32);
        r.stuck_ns = num_after(t, "stuck for ").map(|s| s * 1_000_000_000);
        r.task = bracket_task(t);
    } else if t.contains("hard LOCKUP") {
        r.kind = "hard lockup".into();
        r.cpu = num_after(t, "on cpu").map(|c| c as u32);
    } else if t.contains("self-detected stall") || t.contains("detected stalls on CPU") {
        r.kind = "RCU stall".into();
        r.cpu = num_after(t, "on CPU").map(|c| c as u32);
    } else if let Some(cpu) = rcu_cpu_line(t) {
        r.kind = "RCU stall".into();
        r.cpu = Some(cpu);
    } else if t.contains("blocked for more than") {
        r.kind = "hung task".into();
        r.stuck_ns = num_after(t, "more than").map(|s| s * 1_000_000_000);
        let task = t
            .strip_prefix("INFO: task ")
            .and_then(|x| x.split(" blocked").next());
        r.task = task.and_then(|x| {
            let (c, p) = x.rsplit_once(':')?;
            Some((c.to_string(), p.parse().ok()?))
        });
    } else if t.contains("NMI backtrace for cpu") {
        r.kind = "NMI backtrace".into();
        r.cpu = num_after(t, "for cpu").map(|c| c as u32);
    } else if t.contains("messages dropped") {
        r.kind = "messages dropped".into();
        let n: String = (t.split_whitespace())
            .take_while(|w| *w != "messages")
            .filter(|w| w.bytes().all(|c| c.is_ascii_digit()))
            .collect();
        r.dropped = n.parse().ok();
    } else {
        return None;
    }
    Some(r)
}

/// `rcu: \t33-...!: (20094 ticks this GP)`: a CPU an RCU stall report lists.
fn rcu_cpu_line(t: &str) -> Option<u32> {
    let rest = t.strip_prefix("rcu:")?.trim_start();
    let dash = rest.find('-')?;
    let cpu = rest[..dash].parse().ok()?;
    rest[dash..].starts_with("-...").then_some(cpu)
}

/// `CPU: 18 PID: 35056 Comm: modprobe Tainted: ...`.
fn cpu_line(t: &str) -> Option<(u32, i32, String)> {
    let rest = t.strip_prefix("CPU: ")?;
    let cpu = rest.split_whitespace().next()?.parse().ok()?;
    let pid = num_after(rest, "PID:")? as i32;
    let comm = rest
        .split("Comm:")
        .nth(1)?
        .split_whitespace()
        .next()?
        .to_string();
    Some((cpu, pid, comm))
}

/// `console_unlock+0x144/0x330` → `console_unlock`; `? x+0x50/0x50` (an unreliable
/// frame) is skipped; `<IRQ>`-style marks are kept.
fn frame(t: &str) -> Option<String> {
    if t.starts_with('<') && t.ends_with('>') {
        return Some(t.to_string());
    }
    if t.starts_with("? ") {
        return None;
    }
    let sym = t.split_whitespace().next()?;
    let (name, off) = sym.split_once('+')?;
    off.starts_with("0x").then(|| name.to_string())
}

/// The console frame of a stack, if the stack runs through printk's console path.
fn console_frame(stack: &[String]) -> Option<&str> {
    let names = stack.iter().filter(|f| !f.starts_with('<'));
    let mut found = None;
    for f in names {
        if is_console_code(f) {
            found = Some(f.as_str());
            // The innermost console frame with printk above it is the one to name;
            // console_unlock is the usual one.
            if f == "console_unlock" {
                return found;
            }
        }
    }
    found
}

/// The kernel log analysis.
pub fn analyze_kernel_log(
    tl: &Timeline,
    s: &Interner,
    k: &KernelReports,
    top: usize,
) -> ExplainReport {
    let mut tally = Tally::default();
    let misses: Vec<Miss> = k.reports.iter().map(|r| one(r, &mut tally)).collect();
    let stacks = k.reports.iter().filter(|r| !r.stack.is_empty()).count() as u64;
    let console = (k.reports.iter())
        .filter(|r| console_frame(&r.stack).is_some())
        .count() as u64;
    let mut kinds: Vec<(String, u64)> = Vec::new();
    for r in &k.reports {
        match kinds.iter_mut().find(|x| x.0 == r.kind) {
            Some(x) => x.1 += 1,
            None => kinds.push((r.kind.clone(), 1)),
        }
    }
    let mechanism = (console > 0).then(|| {
        "a slow serial console draining a printk flood: the CPU writes each message byte by byte with preemption (or interrupts) off".to_string()
    });
    let mut notes = Vec::new();
    let bps = k.bytes_per_s();
    match bps {
        Some(b) => notes.push(format!(
            "the log was written at {b:.0} bytes/s; a 115200-baud console (8N1) moves at most 11520 bytes/s, and printk waits for it when the console is synchronous"
        )),
        None => notes.push("the log has no times over a second or more: its byte rate against the console's line speed cannot be told".into()),
    }
    if console == 0 && !k.reports.is_empty() {
        notes.push("no stack runs through printk's console path: whylate recognises the slow serial console; for these reports, read their stacks (the innermost frames are listed)".into());
    }
    let d: Vec<u64> = Vec::new();
    let frame = Framing {
        from: "kernel report".into(),
        to: Vec::new(),
        deadline_ns: None,
        deadline_source: "given".into(),
        top,
        noun: "kernel reports",
    };
    let found = Findings {
        stats: CycleStats::of(&d, k.reports.len() as u64, 0, k.reports.len() as u64),
        misses,
        tally,
        notes,
        windows: Default::default(),
    };
    let mut r = assemble(tl, s, frame, found);
    // Reports are counted, not timed (most say nothing of how long): the mechanism
    // recognised comes first, then by how many reports each cause has.
    let n = (k.reports.len() as f64).max(1.0);
    for c in &mut r.causes {
        c.share = c.count as f64 / n;
    }
    r.causes.sort_by_key(|c| {
        (
            c.category == cause::UNRECOGNISED,
            std::cmp::Reverse(c.count),
        )
    });
    if console > 0 {
        let f = (k.reports.iter())
            .find_map(|r| console_frame(&r.stack))
            .unwrap_or("console_unlock");
        r.advice = slow_console(f);
    }
    r.kernel = Some(KernelSummary {
        kinds,
        mechanism,
        console_stacks: (console, stacks),
        bytes_per_s: bps,
        messages: k.messages,
    });
    r
}

/// One report as a miss: the report line, its stack, and its mechanism as the cause.
fn one(r: &KernelReport, tally: &mut Tally) -> Miss {
    let cpu = r.cpu.unwrap_or(Event::NO_CPU);
    let (category, code) = match console_frame(&r.stack) {
        Some(f) => (cause::SLOW_CONSOLE, f.to_string()),
        None => (cause::UNRECOGNISED, r.kind.clone()),
    };
    let ns = r.stuck_ns.unwrap_or(0);
    let hold = Hold {
        category,
        culprit: Culprit {
            caller: Some(code),
            cpu: r.cpu,
            ..Default::default()
        },
        ns,
        why: None,
        nested_ns: 0,
    };
    let mut per = PerMiss::default();
    per.add_holds(std::slice::from_ref(&hold));
    let blame = tally.add_miss(per);
    let task = r
        .task
        .as_ref()
        .map(|t| format!(" [{}:{}]", t.0, t.1))
        .unwrap_or_default();
    let mut chain = vec![Link {
        held_by: vec![hold],
        duration_ns: ns,
        ..Link::mark(
            "report",
            r.ts,
            r.ts,
            r.cpu,
            format!("{}{task}: {}", r.kind, r.line),
        )
    }];
    if !r.stack.is_empty() {
        let frames: Vec<&str> = r.stack.iter().take(12).map(String::as_str).collect();
        chain.push(Link::mark("stack", r.ts, r.ts, r.cpu, frames.join(" <- ")));
    }
    Miss {
        cpus: Vec::new(),
        read_ns: None,
        not_reading: false,
        uncertain: false,
        blame,
        start_ns: r.ts,
        duration_ns: r.stuck_ns,
        tid: r.task.as_ref().map_or(-1, |t| t.1),
        cpu,
        late_ns: ns,
        blamed_ns: ns,
        chain,
    }
}

/// The verdict line of a kernel log.
pub fn kernel_verdict(k: &KernelSummary) -> String {
    if k.kinds.is_empty() {
        return format!(
            "kernel log: {} messages, no report in them (soft or hard lockup, RCU stall, hung task, NMI backtrace, dropped messages)",
            k.messages
        );
    }
    let kinds: Vec<String> = k.kinds.iter().map(|(n, c)| format!("{c} {n}")).collect();
    let head = format!("kernel log: {}", kinds.join(", "));
    match &k.mechanism {
        Some(m) => format!(
            "{head}; {} of {} stacks run through printk's console path: {m}",
            k.console_stacks.0, k.console_stacks.1
        ),
        None if k.console_stacks.1 == 0 => {
            format!("{head}; no mechanism recognised: the log holds no stack")
        }
        None => format!("{head}; no mechanism recognised (see the stacks)"),
    }
}
