//! The catalogue of causes: every category blame can give a hold, with a stable id (what
//! JSON, diff and fleet write), what it means, the mechanism behind it and the usual
//! fixes. `whylate explain --list-causes` prints it and `docs/causes.md` is generated
//! from it ([`markdown`]).

/// One cause category's catalogue entry.
#[derive(Clone, Copy, Debug)]
pub struct Cause {
    /// The category; its id (`runqueue-wait`) is what JSON and the tables write.
    pub category: Category,
    /// What it means, in one line.
    pub meaning: &'static str,
    /// How it comes about in the kernel.
    pub mechanism: &'static str,
    /// What usually fixes it (the advice gives this trace's commands).
    pub fixes: &'static str,
    /// A blind spot: time the trace cannot explain, ranked last and never advised on.
    pub blind: bool,
}

/// A cause category: what blame gives a hold, one value per entry of [`CAUSES`] (in its
/// order). A value, not a string, so that every `match` on it is exhaustive: a new cause
/// without advice (`advice.rs`) or an id does not compile. JSON, diff and fleet write its
/// [`Category::id`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// The chain's task was runnable and another task ran on its CPU.
    RunqueueWait,
    /// The chain's task was running and another task preempted it.
    PreemptedBy,
    /// A lower-priority task held a real-time task's CPU.
    PreemptionDelay,
    /// A hard interrupt handler held the CPU.
    Hardirq,
    /// A softirq held the CPU.
    Softirq,
    /// Earlier runs of the softirq vector the chain waited for.
    SoftirqBacklog,
    /// The softirq was pending while its CPU ran something else.
    SoftirqPending,
    /// The softirq was deferred to ksoftirqd, held off by the task on the CPU.
    DeferredToKsoftirqd,
    /// A traced section with interrupts off.
    IrqsOff,
    /// A silent CPU inside one system call: interrupts off, inferred.
    IrqsOffInferred,
    /// A traced section with preemption off.
    PreemptOff,
    /// The CPU was idle and woke late.
    CpuIdle,
    /// A busy CPU recorded nothing for over a tick.
    CpuStalled,
    /// The chain went on through an interrupt that came late.
    IrqLate,
    /// The timer interrupt came late, for no reason the trace shows.
    TimerIrqLate,
    /// A timer fired late though its CPU took other timers' interrupts on time meanwhile.
    TimerMoved,
    /// A task that a higher-priority one waited for (a lock's holder) was kept off its CPU.
    PriorityInversion,
    /// The chain's own task ran longer than usual.
    OnCpu,
    /// The chain's task slept longer than usual: on something untraced, or on a task that
    /// was asleep itself.
    BlockedOn,
    /// The reply was ready in time, but its reader was not reading (asleep elsewhere).
    ReaderNotReading,
    /// Nothing on the machine moved: the device or peer answered late.
    DeviceExternal,
    /// A function's own code ran long.
    OwnCode,
    /// A function's callee ran long.
    Callee,
    /// An expected event never followed.
    NoFollowUp,
    /// printk printing to a slow console with interrupts off (a kernel report or a stretch
    /// of a trace).
    SlowConsole,
    /// A kernel report whose cause whylate does not recognise.
    Unrecognised,
    /// The timer interrupt's own latency (timerlat).
    TimerIrqLatency,
    /// A non-maskable interrupt (timerlat, osnoise).
    Nmi,
    /// Other threads ran before the measured one (timerlat, osnoise).
    ThreadNoise,
    /// The scheduler's own work before the thread ran (timerlat).
    SchedOverhead,
    /// A CPU's own interrupt vector (timerlat, osnoise).
    CpuVector,
    /// Time nothing in the trace accounts for.
    Unknown,
    /// The trace ended, for that CPU, before the time blamed.
    TraceCut,
    /// Events were lost there.
    UnknownLostEvents,
    /// A wait whose end no sched_switch recorded.
    SwitchInUntraced,
}

impl Category {
    /// Every category, in the catalogue's order.
    pub const ALL: [Category; 35] = [
        Category::RunqueueWait,
        Category::PreemptedBy,
        Category::PreemptionDelay,
        Category::Hardirq,
        Category::Softirq,
        Category::SoftirqBacklog,
        Category::SoftirqPending,
        Category::DeferredToKsoftirqd,
        Category::IrqsOff,
        Category::IrqsOffInferred,
        Category::PreemptOff,
        Category::CpuIdle,
        Category::CpuStalled,
        Category::IrqLate,
        Category::TimerIrqLate,
        Category::TimerMoved,
        Category::PriorityInversion,
        Category::OnCpu,
        Category::BlockedOn,
        Category::ReaderNotReading,
        Category::DeviceExternal,
        Category::OwnCode,
        Category::Callee,
        Category::NoFollowUp,
        Category::SlowConsole,
        Category::Unrecognised,
        Category::TimerIrqLatency,
        Category::Nmi,
        Category::ThreadNoise,
        Category::SchedOverhead,
        Category::CpuVector,
        Category::Unknown,
        Category::TraceCut,
        Category::UnknownLostEvents,
        Category::SwitchInUntraced,
    ];

    /// The stable id (`runqueue-wait`), as JSON and the tables write it.
    pub const fn id(self) -> &'static str {
        match self {
            Category::RunqueueWait => "runqueue-wait",
            Category::PreemptedBy => "preempted-by",
            Category::PreemptionDelay => "preemption-delay",
            Category::Hardirq => "hardirq",
            Category::Softirq => "softirq",
            Category::SoftirqBacklog => "softirq-backlog",
            Category::SoftirqPending => "softirq-pending",
            Category::DeferredToKsoftirqd => "deferred-to-ksoftirqd",
            Category::IrqsOff => "irqs-off",
            Category::IrqsOffInferred => "irqs-off (inferred)",
            Category::PreemptOff => "preempt-off",
            Category::CpuIdle => "cpu-idle",
            Category::CpuStalled => "cpu-stalled",
            Category::IrqLate => "irq-late",
            Category::TimerIrqLate => "timer-irq-late",
            Category::TimerMoved => "timer-moved",
            Category::PriorityInversion => "priority-inversion",
            Category::OnCpu => "on-cpu",
            Category::BlockedOn => "blocked-on",
            Category::ReaderNotReading => "reader-not-reading",
            Category::DeviceExternal => "device/external",
            Category::OwnCode => "own-code",
            Category::Callee => "callee",
            Category::NoFollowUp => "no-follow-up",
            Category::SlowConsole => "slow-console",
            Category::Unrecognised => "unrecognised",
            Category::TimerIrqLatency => "timer-irq-latency",
            Category::Nmi => "nmi",
            Category::ThreadNoise => "thread-noise",
            Category::SchedOverhead => "sched-overhead",
            Category::CpuVector => "cpu-vector",
            Category::Unknown => "unknown",
            Category::TraceCut => "trace-cut",
            Category::UnknownLostEvents => "unknown-lost-events",
            Category::SwitchInUntraced => "switch-in-untraced",
        }
    }

    /// The catalogue's entry.
    pub fn info(self) -> &'static Cause {
        &CAUSES[self as usize]
    }

    /// The category whose id is `id`.
    pub fn parse(id: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.id() == id)
    }

    /// A blind spot: time the trace cannot explain, ranked last and never advised on.
    pub fn is_blind(self) -> bool {
        self.info().blind
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

impl serde::Serialize for Category {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl PartialEq<&str> for Category {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

/// The chain's task was runnable and another task ran on its CPU.
pub const RUNQUEUE_WAIT: Category = Category::RunqueueWait;
/// The chain's task was running and another task preempted it.
pub const PREEMPTED_BY: Category = Category::PreemptedBy;
/// A hard interrupt handler held the CPU.
pub const HARDIRQ: Category = Category::Hardirq;
/// A softirq held the CPU.
pub const SOFTIRQ: Category = Category::Softirq;
/// Earlier runs of the softirq vector the chain waited for.
pub const SOFTIRQ_BACKLOG: Category = Category::SoftirqBacklog;
/// The softirq was pending while its CPU ran something else.
pub const SOFTIRQ_PENDING: Category = Category::SoftirqPending;
/// The softirq was deferred to ksoftirqd, held off by the task on the CPU.
pub const DEFERRED_TO_KSOFTIRQD: Category = Category::DeferredToKsoftirqd;
/// A traced section with interrupts off.
pub const IRQS_OFF: Category = Category::IrqsOff;
/// A silent CPU inside one system call: interrupts off, inferred.
pub const IRQS_OFF_INFERRED: Category = Category::IrqsOffInferred;
/// A traced section with preemption off.
pub const PREEMPT_OFF: Category = Category::PreemptOff;
/// The CPU was idle and woke late.
pub const CPU_IDLE: Category = Category::CpuIdle;
/// A busy CPU recorded nothing for over a tick.
pub const CPU_STALLED: Category = Category::CpuStalled;
/// The chain went on through an interrupt that came late.
pub const IRQ_LATE: Category = Category::IrqLate;
/// The timer interrupt came late, for no reason the trace shows.
pub const TIMER_IRQ_LATE: Category = Category::TimerIrqLate;
/// A timer fired late though its CPU took other timers' interrupts on time meanwhile.
pub const TIMER_MOVED: Category = Category::TimerMoved;
/// A task that a higher-priority one waited for (a lock's holder) was kept off its CPU.
pub const PRIORITY_INVERSION: Category = Category::PriorityInversion;
/// A lower-priority task held a real-time task's CPU.
pub const PREEMPTION_DELAY: Category = Category::PreemptionDelay;
/// The chain's own task ran longer than usual.
pub const ON_CPU: Category = Category::OnCpu;
/// The chain's task slept longer than usual: on something untraced, or on a task that
/// was asleep itself.
pub const BLOCKED_ON: Category = Category::BlockedOn;
/// The reply was ready in time, but its reader was not reading (asleep elsewhere).
pub const READER_NOT_READING: Category = Category::ReaderNotReading;
/// Nothing on the machine moved: the device or peer answered late.
pub const DEVICE_EXTERNAL: Category = Category::DeviceExternal;
/// A function's own code ran long.
pub const OWN_CODE: Category = Category::OwnCode;
/// A function's callee ran long.
pub const CALLEE: Category = Category::Callee;
/// An expected event never followed.
pub const NO_FOLLOW_UP: Category = Category::NoFollowUp;
/// printk printing to a slow console with interrupts off (a kernel report or a stretch
/// of a trace).
pub const SLOW_CONSOLE: Category = Category::SlowConsole;
/// A kernel report whose cause whylate does not recognise.
pub const UNRECOGNISED: Category = Category::Unrecognised;
/// The timer interrupt's own latency (timerlat).
pub const TIMER_IRQ_LATENCY: Category = Category::TimerIrqLatency;
/// A non-maskable interrupt (timerlat, osnoise).
pub const NMI: Category = Category::Nmi;
/// Other threads ran before the measured one (timerlat, osnoise).
pub const THREAD_NOISE: Category = Category::ThreadNoise;
/// The scheduler's own work before the thread ran (timerlat).
pub const SCHED_OVERHEAD: Category = Category::SchedOverhead;
/// A CPU's own interrupt vector (timerlat, osnoise).
pub const CPU_VECTOR: Category = Category::CpuVector;
/// The trace ended, for that CPU, before the time blamed.
pub const TRACE_CUT: Category = Category::TraceCut;
/// Events were lost there.
pub const UNKNOWN_LOST_EVENTS: Category = Category::UnknownLostEvents;
/// A wait whose end no sched_switch recorded.
pub const SWITCH_IN_UNTRACED: Category = Category::SwitchInUntraced;
/// Time nothing in the trace accounts for.
pub const UNKNOWN: Category = Category::Unknown;

/// The blind spots, as [`Cause::blind`] marks them.
pub const BLIND_SPOTS: [Category; 3] = [TRACE_CUT, UNKNOWN_LOST_EVENTS, SWITCH_IN_UNTRACED];

const fn cause(
    category: Category,
    meaning: &'static str,
    mechanism: &'static str,
    fixes: &'static str,
) -> Cause {
    Cause {
        category,
        meaning,
        mechanism,
        fixes,
        blind: false,
    }
}

const fn blind(category: Category, meaning: &'static str, mechanism: &'static str) -> Cause {
    Cause {
        category,
        meaning,
        mechanism,
        fixes: "record again so the trace covers it (bigger buffer, fewer events)",
        blind: true,
    }
}

/// Every cause, the scheduling ones first, the blind spots last.
pub const CAUSES: &[Cause] = &[
    cause(RUNQUEUE_WAIT, "the chain's task was runnable, another task ran on its CPU",
        "the scheduler picked the other task (fair share, priority, or it was there first)",
        "move the task or the culprit to another CPU (taskset, cpusets), raise the task's priority (chrt) or nice the culprit"),
    cause(PREEMPTED_BY, "the chain's task was running and another task preempted it",
        "a wakeup of a task the scheduler preferred took the CPU mid-run",
        "as runqueue-wait: separate the two tasks' CPUs, or change their priorities"),
    cause(PREEMPTION_DELAY, "a lower-priority task held a real-time task's CPU",
        "the kernel could not preempt it at once (a non-preemptible section, no preempt=full)",
        "boot with preempt=full, or run a PREEMPT_RT kernel"),
    cause(HARDIRQ, "a hard interrupt handler held the CPU",
        "a device interrupt ran on the CPU the chain waited for",
        "steer the IRQ to another CPU (smp_affinity_list), or boot with threadirqs"),
    cause(SOFTIRQ, "a softirq held the CPU",
        "bottom-half work (network, block, timers, tasklets) ran on the CPU after an interrupt",
        "steer the interrupt that raises it (RPS/RFS, IRQ affinity) to another CPU"),
    cause(SOFTIRQ_BACKLOG, "earlier runs of the softirq vector the chain waited for",
        "the vector had a backlog: the chain's work waited behind the vector's other work",
        "spread the load (RPS, more queues), or steer the IRQ off the busy CPU"),
    cause(SOFTIRQ_PENDING, "the softirq was raised and waited to run",
        "it stays pending until an interrupt exit or ksoftirqd runs it on that CPU",
        "keep that CPU free of long non-preemptible work; steer the IRQ elsewhere"),
    cause(DEFERRED_TO_KSOFTIRQD, "the softirq went to ksoftirqd, held off by the task on the CPU",
        "after too much softirq work (or with a reschedule pending) the kernel defers it to ksoftirqd, a normal task that waits its turn; the task the CPU switched to first, even out of idle, holds it, and handlers that cut in meanwhile rank after the deferral",
        "give ksoftirqd a real-time priority (chrt -f -p), or move the CPU hogs off that CPU"),
    cause(IRQS_OFF, "a traced section with interrupts off held the CPU",
        "code disabled interrupts (spin_lock_irqsave, printk to a console...) and nothing could preempt it",
        "fix or move the code that opened it; for console printing lower the console log level"),
    cause(IRQS_OFF_INFERRED, "a silent CPU inside one system call: interrupts off, inferred",
        "one task sat in one call while the CPU recorded nothing, not even ticks",
        "record irq_disable/irq_enable events to see the section; then as irqs-off"),
    cause(PREEMPT_OFF, "a traced section with preemption off held the CPU",
        "code disabled preemption (spinlocks, rcu_read_lock on non-RT kernels)",
        "fix or move the code that opened it, or run a PREEMPT_RT kernel"),
    cause(CPU_IDLE, "the CPU was idle and woke late",
        "a deep idle state takes long to leave; on a VM the host also has to run the vCPU",
        "keep idle states shallow (cpupower idle-set -D 10, idle=poll); on a VM check steal time"),
    cause(CPU_STALLED, "a busy CPU recorded nothing for over a tick",
        "the CPU did not run at all: on a VM the host did not schedule the vCPU (steal time), or firmware (SMI) took it",
        "check steal time; pin the vCPUs to dedicated host cores"),
    cause(IRQ_LATE, "the chain went on through an interrupt that came late",
        "the interrupt could not be taken (interrupts off) or arrived late; the trace cannot tell which",
        "record irq_disable/irq_enable, ipi and irq_vectors events; on a VM check steal time"),
    cause(TIMER_IRQ_LATE, "the timer interrupt came late, for no reason the trace shows",
        "interrupts were off or the CPU did not run, without events that show it",
        "record irq_disable/irq_enable events (CONFIG_PREEMPTIRQ_TRACEPOINTS)"),
    cause(TIMER_MOVED, "a timer fired late, but its CPU took other timers' interrupts on time meanwhile: it was not held off",
        "the timer was stopped or re-armed for later where the trace does not show it (a NO_HZ tick is stopped and moved on purpose; an hrtimer_cancel/hrtimer_start not recorded): its recorded due time was not when it was meant to fire",
        "record timer:hrtimer_start and timer:hrtimer_cancel for the whole run; for the scheduler tick, nothing: it is no task's deadline"),
    cause(PRIORITY_INVERSION, "a task the chain waited for (a lock's holder, a pipe's writer) was kept off its CPU while a higher-priority task of the chain waited for it",
        "the higher-priority task blocked (a mutex, a condition, a pipe) until a lower-priority one woke it; meanwhile a task that outranks the waker (often one between the two priorities) ran on the waker's CPU, so the high-priority task waited for it too",
        "a priority-inheritance mutex (pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT): the holder runs at the waiter's priority while waited for), or the waker's priority raised to the waiter's (chrt -f -p PRIO PID), or the waker moved off the preempting task's CPU"),
    cause(ON_CPU, "the chain's own task ran longer than usual",
        "its own code took longer (more work, cache misses, a slower path); where it sat in one system call without leaving its CPU, the call's kernel work (a driver's busy wait) or an interrupt or the host the trace does not record",
        "profile the task (perf record -g) and fix the slow path; record irq:* and irq_vectors:* to tell a call's own work from interrupts"),
    cause(BLOCKED_ON, "the chain's task slept longer than usual on something untraced, or on a task that was asleep itself",
        "it waited for a lock, I/O or a peer the trace has no events for, or for a task that slept in a call of its own (a timer, a peer off the chain) before it woke it",
        "record the events of what it waits for (block, lock, network), or profile off-CPU time; for a task it waits on, see why that one sleeps (its own chain)"),
    cause(READER_NOT_READING, "the reply was ready in time, but its reader was not reading",
        "the reader had given up and slept (until its own timer woke it) when the last hand-off made the reply readable, and read it only after that wakeup",
        "fix the reader: wait for the reply (poll/read with the deadline as timeout) instead of sleeping; a retry after giving up should drain the late reply first"),
    cause(DEVICE_EXTERNAL, "nothing on the machine moved: the device or peer answered late",
        "the time passed outside the traced machine (device firmware, the network, the peer)",
        "measure the device or peer itself; the trace shows the machine was not the cause"),
    cause(OWN_CODE, "a traced function's own code ran long",
        "the function itself, not its callees, took the time",
        "profile the function (perf annotate, function_graph) and fix it"),
    cause(CALLEE, "a function the traced one called ran long",
        "the time went into a callee",
        "profile the callee (perf annotate, function_graph) and fix it"),
    cause(NO_FOLLOW_UP, "an expected event never followed within the time given",
        "the `A -> B within T` watch saw A and no B in time",
        "look at what the CPU did after A (the context lines); fix what stopped B"),
    cause(SLOW_CONSOLE, "printk printing to a slow console held the CPU with interrupts off",
        "printk prints each message to every console from the context that logged it (a driver, or a write to /dev/kmsg), with interrupts off until the console has it; a serial console moves one byte per character time, or per trapped port write on a VM, so a flood stalls the CPU (late timers, lockups and RCU stalls in the log)",
        "lower the console log level (dmesg -n 1, loglevel=1, quiet); a faster or no serial console; printk.devkmsg=off or ratelimit for writers to /dev/kmsg; a console printed by its own thread (nbcon) where the kernel offers it"),
    cause(UNRECOGNISED, "a kernel report whose cause whylate does not recognise",
        "the log holds a report (lockup, stall, hung task) without a known mechanism",
        "read the report's stack in the log"),
    cause(TIMER_IRQ_LATENCY, "the timer interrupt's own latency (timerlat)",
        "the hardware timer fired but its interrupt ran late (interrupts off, a deep idle state)",
        "find the section with interrupts off (rtla timerlat -a, irq_disable events); keep idle states shallow"),
    cause(NMI, "a non-maskable interrupt ran before the thread (timerlat, osnoise)",
        "the NMI watchdog or perf sampling interrupts everything",
        "turn off the NMI watchdog (kernel.nmi_watchdog=0) and perf sampling on that CPU"),
    cause(THREAD_NOISE, "other threads ran before the measured one (timerlat, osnoise)",
        "tasks of equal or higher priority shared the measured CPU",
        "move them off the CPU (taskset), or isolate it (isolcpus, nohz_full)"),
    cause(SCHED_OVERHEAD, "the scheduler's own work before the thread ran (timerlat)",
        "the context switch and wakeup path took the time",
        "isolate the CPU (isolcpus, nohz_full, rcu_nocbs); a PREEMPT_RT kernel"),
    cause(CPU_VECTOR, "a CPU's own interrupt vector ran before the thread (timerlat, osnoise)",
        "local timer, IPI or other per-CPU vectors",
        "isolate the CPU (isolcpus, nohz_full, rcu_nocbs) and move IRQs off it"),
    cause(UNKNOWN, "time nothing in the trace accounts for",
        "no span of the trace covers the time blamed",
        "record more events around the chain"),
    blind(TRACE_CUT, "the trace of that CPU ended before the time blamed",
        "the recording stopped or its buffer for that CPU filled up"),
    blind(UNKNOWN_LOST_EVENTS, "events were lost there",
        "the per-CPU ring buffer overflowed and the tracer dropped events"),
    blind(SWITCH_IN_UNTRACED, "a wait whose end no sched_switch recorded",
        "the task was put on its CPU without a traced switch (events lost or filtered)"),
];

impl Cause {
    /// The stable id (`runqueue-wait`).
    pub fn id(&self) -> &'static str {
        self.category.id()
    }
}

/// The catalogue's entry for `id`.
pub fn cause_of(id: &str) -> Option<&'static Cause> {
    Category::parse(id).map(Category::info)
}

/// Whether a cause category is a blind spot (time the trace cannot explain).
pub fn is_blind_spot(c: Category) -> bool {
    c.is_blind()
}

/// Whether the category written `id` (read back from JSON or Parquet) is a blind spot.
pub fn is_blind_id(id: &str) -> bool {
    Category::parse(id).is_some_and(Category::is_blind)
}

/// The catalogue as a terminal table (`--list-causes`): id, meaning and usual fixes, each
/// cause a paragraph under its id.
pub fn table() -> String {
    let mut out = String::from("cause categories (docs/causes.md has the mechanisms)\n");
    for c in CAUSES {
        out.push_str(&format!(
            "\n{}{}\n",
            c.id(),
            if c.blind { "  (blind spot)" } else { "" }
        ));
        out.push_str(&format!("  means: {}\n", c.meaning));
        out.push_str(&format!("  fixes: {}\n", c.fixes));
    }
    out
}

/// The catalogue as `docs/causes.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Causes\n\n<!-- Generated from crates/whylate/src/explain/causes.rs; regenerate with \
         `WHYLATE_BLESS=1 cargo test -p whylate --test docs`. Do not edit. -->\n\n\
         Every category a hold is blamed on, by the id the text, JSON (`category`), `diff` \
         and `fleet` write. Blind spots are time the trace cannot explain: ranked last and \
         never advised on.\n",
    );
    for c in CAUSES {
        out.push_str(&format!(
            "\n## `{}`{}\n\n",
            c.id(),
            if c.blind { " (blind spot)" } else { "" }
        ));
        out.push_str(&format!("{}.\n\n", upper_first(c.meaning)));
        out.push_str(&format!("- **Mechanism**: {}.\n", c.mechanism));
        out.push_str(&format!("- **Usual fixes**: {}.\n", c.fixes));
    }
    out
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_the_blind_spots_are_three() {
        for (i, c) in CAUSES.iter().enumerate() {
            assert!(
                CAUSES[..i].iter().all(|d| d.id() != c.id()),
                "{} twice",
                c.id()
            );
            // Each entry stands at its category's place, so `info` finds it.
            assert_eq!(c.category as usize, i, "{}", c.id());
            assert_eq!(Category::ALL[i], c.category);
            assert_eq!(Category::parse(c.id()), Some(c.category));
        }
        assert_eq!(CAUSES.len(), Category::ALL.len());
        assert_eq!(CAUSES.iter().filter(|c| c.blind).count(), 3);
        assert!(is_blind_spot(TRACE_CUT) && !is_blind_spot(RUNQUEUE_WAIT));
        assert!(cause_of("no-such-cause").is_none());
        assert!(BLIND_SPOTS.iter().all(|b| is_blind_spot(*b)));
        assert_eq!(
            serde_json::to_string(&DEVICE_EXTERNAL).unwrap(),
            "\"device/external\""
        );
    }

    #[test]
    fn the_table_and_the_page_name_every_cause() {
        let (t, md) = (table(), markdown());
        for c in CAUSES {
            assert!(t.contains(&format!("\n{}", c.id())), "{}", c.id());
            assert!(md.contains(&format!("## `{}`", c.id())), "{}", c.id());
        }
        assert_eq!(upper_first("the task"), "The task");
    }
}
