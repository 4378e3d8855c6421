//! Advice for the parts of a real-time latency (timerlat, osnoise): the timer IRQ's own
//! latency, NMIs, other threads' noise, system vectors, and the scheduling rest.

use crate::explain::causes as cause;
use crate::explain::report::{Advice, CauseRow};

/// The advice for one real-time cause, by its category; `others` lists the CPUs but the
/// culprit's; `culprit` is how a command names the culprit task (its PID, or a lookup by
/// name where the trace's PIDs are not this machine's).
pub(in crate::explain) fn for_rt_cause(c: &CauseRow, others: &str, culprit: &str) -> Vec<Advice> {
    let cpu = c.culprit.cpu.unwrap_or(0);
    let isolate = Advice {
        action: format!("Keep CPU{cpu} for the latency-critical thread: no other tasks, no tick, no RCU callbacks"),
        command: format!("boot with isolcpus={cpu} nohz_full={cpu} rcu_nocbs={cpu} (or a cpuset partition), and move IRQs off it"),
        cost: "the CPU is lost to everything else; nohz_full makes kernel entry and exit slower on it".into(),
    };
    match c.category {
        cause::TIMER_IRQ_LATENCY if c.culprit.caller.is_some() => vec![Advice {
            action: format!(
                "The timer's interrupt came late on CPU{cpu} and landed in {}: look there (and in its callers) for interrupts held off",
                c.culprit.label()
            ),
            command: "whylate record -e latency,preemptirq:irq_disable,preemptirq:irq_enable (who turned them off, and for how long)".into(),
            cost: "preemptirq events are frequent: a bigger buffer, more overhead while tracing".into(),
        }],
        cause::TIMER_IRQ_LATENCY => vec![Advice {
            action: format!("The timer's interrupt itself came late on CPU{cpu}: find the code that held interrupts off"),
            command: "rtla timerlat -a <us> (its stack at the hit), or whylate record -e latency,preemptirq:irq_disable,preemptirq:irq_enable".into(),
            cost: "preemptirq events are frequent: a bigger buffer, more overhead while tracing".into(),
        }],
        cause::NMI => vec![Advice {
            action: format!("NMIs ran on CPU{cpu} (the watchdog or perf sampling)"),
            command: "sysctl kernel.nmi_watchdog=0, and no perf sampling on that CPU".into(),
            cost: "no hard-lockup detection".into(),
        }],
        cause::THREAD_NOISE => vec![
            Advice {
                action: format!("Move {} off CPU{cpu}", c.culprit.label()),
                command: format!("taskset -pc {others} {culprit}"),
                cost: "that task loses the CPU; per-CPU kernel threads (kworker/N) cannot move: isolate the CPU instead".into(),
            },
            isolate,
        ],
        cause::CPU_VECTOR => vec![isolate],
        _ => vec![Advice {
            action: format!("The switch to the thread and the kernel's entry and exit took the rest on CPU{cpu}"),
            command: format!("a PREEMPT_RT kernel; keep idle states shallow (cpupower idle-set -D 10); boot with nohz_full={cpu} rcu_nocbs={cpu}"),
            cost: "shallow idle states burn power; PREEMPT_RT lowers throughput".into(),
        }],
    }
}
