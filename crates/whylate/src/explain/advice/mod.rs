//! What to do: the CPUs behind the causes (context) and advice for the top causes,
//! with the command for this machine and what it costs.

mod context;
pub(crate) mod machine;
pub(crate) mod rt_advice;

pub(in crate::explain) use context::{context, context_of_usage};

use crate::event::Interner;
use crate::explain::causes as cause;
use crate::explain::report::{Advice, CauseKey, CauseRow, Miss};
use crate::timeline::{SpanKind, Timeline};
use rustc_hash::{FxHashMap, FxHashSet};

/// Tasks as (comm, pid).
type Tasks = Vec<(String, i32)>;

/// Advice in the order of the ranking: for the first cause first, then the next ones that
/// hold at least 5% of the excess (at most three causes), the recorder's own rows after the
/// workload's (as `machine::recorder_blame` ranks them), and how to record with less
/// disturbance wherever the recorder holds 5% or more. Work that an interrupt queued
/// gets its IRQ placement advice right after the cause that held that work up. The same
/// command is given once.
pub(in crate::explain) fn advise(
    tl: &Timeline,
    s: &Interner,
    causes: &[CauseRow],
    misses: &[Miss],
) -> Vec<Advice> {
    let mut irq = irq_work(tl, s, misses);
    let mut out = Vec::new();
    // Tasks to move off the CPU where they held the chain up, with the place of their
    // line: one plan for all of them once the loop is done.
    let mut moves: Vec<Move> = Vec::new();
    let chain = chain_tasks(misses);
    let is_rec = |c: &CauseRow| c.culprit.pid.is_some_and(|p| tl.is_recorder(p));
    let ranked = (causes.iter().filter(|c| !is_rec(c))).chain(causes.iter().filter(|c| is_rec(c)));
    for (k, c) in ranked.take(3).enumerate() {
        if k > 0 && c.share < 0.05 {
            break;
        }
        out.extend(for_cause(tl, s, c, misses));
        if let Some((cpu, comm, pid)) = culprit_to_move(tl, c).filter(|m| !chain.contains(&m.2)) {
            if !moves.iter().any(|m| m.pid == pid) {
                out.push(Advice::default());
                moves.push(Move {
                    at: out.len() - 1,
                    cpu,
                    comm,
                    pid,
                });
            }
        }
        let (mine, rest): (Vec<_>, Vec<_>) = irq
            .into_iter()
            .partition(|(by, _)| by.0 == c.category && by.1 == c.culprit);
        out.extend(mine.into_iter().map(|x| x.1));
        irq = rest;
    }
    let (lines, kept) = plan_moves(tl.cpus.max(1), &moves, tl.pids_here);
    for (at, a) in lines {
        out[at] = a;
    }
    unbound_work_to(&mut out, &kept);
    // The places of moves the plan folded into another line.
    out.retain(|a| !a.action.is_empty());
    // The recorder's own cost gets its advice whenever it is a real share of the excess,
    // even ranked behind three causes of the workload (94% of a trace's excess once went
    // without a word of advice behind a 1% cause).
    // (`machine::recorder_blame` moves it first where the recorder holds most.)
    let rec_share: f64 = causes.iter().filter(|c| is_rec(c)).map(|c| c.share).sum();
    let said = out.iter().any(is_recorders);
    if let Some(c) = causes
        .iter()
        .find(|c| is_rec(c) && !said && rec_share >= 0.05)
    {
        out.push(recorder(c, tl.cpus.max(1)));
    }
    // Two causes can lead to the same command; once is enough.
    let mut seen = FxHashSet::default();
    out.retain(|a| seen.insert(a.command.clone()));
    out
}

/// How a command names task `pid` (`comm`): by its PID where the trace is from this boot
/// (`pids_here`), else by a lookup of its name, since the recording's PIDs name other
/// tasks here, or none (`chrt -f -p 50 32` once acted on kauditd).
pub(in crate::explain) fn task_arg(pids_here: bool, comm: &str, pid: i32) -> String {
    if pids_here || comm.is_empty() {
        return pid.to_string();
    }
    // pgrep takes a regular expression: a comm's own dots, brackets and pluses match
    // themselves; the shell's quotes keep the rest.
    let mut quoted = String::new();
    for ch in comm.chars() {
        match ch {
            '\\' | '.' | '^' | '$' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' => {
                quoted.push('\\');
                quoted.push(ch);
            }
            '\'' => quoted.push_str("'\\''"),
            c => quoted.push(c),
        }
    }
    format!("$(pgrep -x '{quoted}')")
}

/// Said under the advice when a command looks a task up by name.
pub(in crate::explain) const BY_NAME: &str = "the advice finds tasks by name (pgrep -x): the trace's PIDs are the recording's and name other tasks here, or none (a trace `whylate record` made in this boot keeps them); where several processes share a name, pgrep gives each: pick the one meant";

/// A report merged from windows ends its notes as one trace's does: `last` (a mode's
/// notes on the whole trace, decided once the windows are merged), then [`BY_NAME`]
/// where the advice, given once for the merged causes, finds tasks by name.
pub(in crate::explain) fn end_merged_notes(
    r: &mut crate::explain::ExplainReport,
    last: impl IntoIterator<Item = String>,
) {
    r.notes.retain(|n| n != BY_NAME);
    r.notes.extend(last);
    if r.advice.iter().any(|a| a.command.contains("pgrep -x '")) {
        r.notes.push(BY_NAME.into());
    }
}

/// The CPUs other than `cpu`, as a cpu list.
fn others(ncpu: u32, cpu: u32) -> String {
    let v: Vec<String> = (0..ncpu)
        .filter(|&c| c != cpu)
        .map(|c| c.to_string())
        .collect();
    if v.is_empty() {
        "<another cpu>".into()
    } else {
        v.join(",")
    }
}

/// A waiter held up by a cause for less than this part of the cause's time is not
/// advised on: it is not what the cause delayed (a task that waited 0.1 % behind a hog
/// was once told to run as SCHED_FIFO).
const WAITER_SHARE: f64 = 0.10;

/// Which waiting tasks cause `c` held up (the links it was found in), by the time it held
/// each, those with a real share of it only.
fn waiters(tl: &Timeline, misses: &[Miss], c: &CauseRow) -> Vec<(String, i32)> {
    let mut v: Vec<(String, i32, u64)> = Vec::new();
    for l in misses.iter().flat_map(|m| &m.chain) {
        let held: u64 = (l.held_by.iter())
            .filter(|h| h.category == c.category && h.culprit == c.culprit)
            .map(|h| h.ns)
            .sum();
        let Some(w) = l.waiter.as_ref().filter(|_| held > 0) else {
            continue;
        };
        // The recorder's threads are the measurement: nothing to advise them.
        if w.pid.is_some_and(|p| tl.is_recorder(p)) {
            continue;
        }
        let pid = w.pid.unwrap_or(-1);
        match v.iter_mut().find(|x| x.1 == pid) {
            Some(x) => x.2 += held,
            None => v.push((w.comm.clone().unwrap_or_default(), pid, held)),
        }
    }
    let all: u64 = v.iter().map(|x| x.2).sum();
    v.retain(|x| x.2 as f64 >= WAITER_SHARE * all as f64);
    v.sort_by_key(|x| std::cmp::Reverse(x.2));
    v.into_iter().map(|(c, p, _)| (c, p)).collect()
}

/// The chain's own tasks: the misses' threads and every waiter a link names. Advice
/// never moves them off a CPU as if they were what held the chain up.
fn chain_tasks(misses: &[Miss]) -> FxHashSet<i32> {
    let mut out: FxHashSet<i32> = misses.iter().map(|m| m.tid).collect();
    let waiters = (misses.iter().flat_map(|m| &m.chain)).filter_map(|l| l.waiter.as_ref()?.pid);
    out.extend(waiters);
    out
}

/// Work the chain waited for that an interrupt queued: its irq placement matters. Each
/// piece of advice comes with the cause that held the work up (its largest hold).
fn irq_work(tl: &Timeline, s: &Interner, misses: &[Miss]) -> Vec<(CauseKey, Advice)> {
    let mut irq_work: Vec<(Option<u32>, String, u32, CauseKey)> = Vec::new();
    for l in misses.iter().flat_map(|m| &m.chain) {
        let (Some(irq), Some(h)) = (l.queued_in_irq, l.held_by.first()) else {
            continue;
        };
        let f = l.what.split(' ').next().unwrap_or("").to_string();
        let cpu = l.cpu.unwrap_or(0);
        let irq = (irq != u32::MAX).then_some(irq);
        if !irq_work.iter().any(|x| x.0 == irq && x.1 == f) {
            irq_work.push((irq, f, cpu, (h.category, h.culprit.clone())));
        }
    }
    let mut out = Vec::new();
    for (irq, f, cpu, by) in irq_work.into_iter().take(2) {
        let (what, target) = match irq {
            Some(n) => (
                format!(
                    "irq {n}{}",
                    tl.irq_names
                        .get(&n)
                        .map(|x| format!(" ({})", s.get(*x)))
                        .unwrap_or_default()
                ),
                format!("/proc/irq/{n}/smp_affinity_list"),
            ),
            None => (
                format!(
                    "the interrupt that queues it ({})",
                    irqs_seen_on(tl, s, cpu)
                ),
                "/proc/irq/<N>/smp_affinity_list".to_string(),
            ),
        };
        out.push((by, Advice {
            action: format!(
                "Pin {what} so the {f} work it queues lands on a CPU where its worker does not queue behind other tasks (it waited on CPU{cpu})"
            ),
            command: format!("echo <quiet cpu> > {target}"),
            cost: "that CPU takes the device's interrupt load; irqbalance may move the IRQ back (stop irqbalance, or ban the IRQ from it)".into(),
        }));
    }
    out
}

/// The hard irqs the trace holds on `cpu`, most frequent first, for work whose interrupt
/// the trace does not name: candidates, said as such, never "absent" when they are there.
fn irqs_seen_on(tl: &Timeline, s: &Interner, cpu: u32) -> String {
    let sp = &tl.spans;
    let mut n: FxHashMap<u32, u64> = FxHashMap::default();
    for &i in tl.irqs_by_cpu.get(cpu as usize).map_or(&[][..], |v| v) {
        let k = i as usize;
        if sp.kind[k] == SpanKind::Hardirq && sp.key[k] != u32::MAX {
            *n.entry(sp.key[k]).or_default() += 1;
        }
    }
    if n.is_empty() {
        return format!(
            "no irq handler is traced on CPU{cpu}: see /proc/interrupts for the device"
        );
    }
    let mut v: Vec<(u32, u64)> = n.into_iter().collect();
    v.sort_by_key(|&(irq, c)| (std::cmp::Reverse(c), irq));
    let named: Vec<String> = (v.iter().take(3))
        .map(|&(irq, c)| {
            let name = tl.irq_names.get(&irq).map(|x| format!(" ({})", s.get(*x)));
            format!("irq {irq}{} ran {c}x", name.unwrap_or_default())
        })
        .collect();
    format!(
        "the trace does not tie the work to an interrupt; on CPU{cpu} {}",
        named.join(", ")
    )
}

/// A task that kept the chain's tasks from their CPU: raise the waiters' priority (moving
/// the culprit comes after, `culprit_to_move`, merged per CPU by `advise`).
fn scheduling(tl: &Timeline, c: &CauseRow, misses: &[Miss]) -> Vec<Advice> {
    let cpu = c.culprit.cpu.unwrap_or(0);
    let mut out = Vec::new();
    for (w, wpid) in waiters(tl, misses, c).into_iter().take(2) {
        // Named after what kept this waiter waiting most, this cause or not.
        let comm = kept_waiting_by(misses, wpid)
            .unwrap_or_else(|| c.culprit.comm.clone().unwrap_or_default());
        let arg = task_arg(tl.pids_here, &w, wpid);
        // A waiter that runs niced down asked for its waits: the first thing to say.
        if let Some(nice) = tl
            .prios
            .get(&wpid)
            .map(|p| p - 120)
            .filter(|n| (1..=19).contains(n))
        {
            out.push(Advice {
                action: format!("{w} runs at nice {nice}, a fraction of {comm}'s weight on the CPU: give it back the normal weight"),
                command: format!("renice -n 0 -p {arg}"),
                cost: format!("at nice 0 it shares the CPU evenly with {comm}: its waits shrink but do not end (SCHED_FIFO ends them)"),
            });
        }
        if w.starts_with("kworker/u") {
            // An unbound pool's workers come and go: the pool's CPUs are what stays.
            out.push(Advice {
                action: format!(
                    "Keep unbound work (the worker that carries the chain, {w}) off CPU{cpu}, where {comm} held it up"
                ),
                command: format!(
                    "echo {} > /sys/devices/virtual/workqueue/cpumask",
                    others(tl.cpus.max(1), cpu)
                ),
                cost: "every unbound workqueue's work then runs on those CPUs only (bound, per-CPU work is not moved); a worker's own priority (chrt) would be lost when another worker of the pool picks the work up".into(),
            });
        } else if w.starts_with("kworker/") {
            out.push(Advice {
                action: format!(
                    "Give the worker that carries the chain a real-time priority so {comm} cannot delay it"
                ),
                command: format!("chrt -f -p 50 {arg}"),
                cost: format!(
                    "{w} is a pool worker: the setting is lost when another worker picks the work up; a SCHED_FIFO kworker also preempts everything else on CPU{cpu}"
                ),
            });
        } else {
            out.push(Advice {
                action: format!("Run {w} as SCHED_FIFO so {comm} cannot keep it waiting"),
                command: format!("chrt -f -p 50 {arg}"),
                cost: "a SCHED_FIFO thread that spins or loops starves every normal task on its CPU; keep its work bounded (sched_rt_runtime_us still reserves 5% for others)".into(),
            });
        }
    }
    out
}

/// The tasks that kept `pid` waiting for a CPU, most first, those with a real share of
/// its waits ("hog and frobnicator"); None when none did.
fn kept_waiting_by(misses: &[Miss], pid: i32) -> Option<String> {
    let mut by: Vec<(String, u64)> = Vec::new();
    let links = (misses.iter().flat_map(|m| &m.chain))
        .filter(|l| l.waiter.as_ref().and_then(|w| w.pid) == Some(pid));
    for h in links.flat_map(|l| &l.held_by) {
        let sched = matches!(h.category, cause::RUNQUEUE_WAIT | cause::PREEMPTED_BY);
        let Some(comm) = h.culprit.comm.clone().filter(|_| sched) else {
            continue;
        };
        match by.iter_mut().find(|x| x.0 == comm) {
            Some(x) => x.1 += h.ns,
            None => by.push((comm, h.ns)),
        }
    }
    let all: u64 = by.iter().map(|x| x.1).sum();
    by.retain(|x| x.1 as f64 >= WAITER_SHARE * all as f64);
    by.sort_by_key(|x| std::cmp::Reverse(x.1));
    let names: Vec<String> = by.into_iter().take(2).map(|x| x.0).collect();
    (!names.is_empty()).then(|| names.join(" and "))
}

/// The task to move off the CPU where it kept the chain waiting: the last piece of
/// advice for a scheduling cause (never the recorder: that is how it records).
fn culprit_to_move(tl: &Timeline, c: &CauseRow) -> Option<(u32, String, i32)> {
    if !matches!(c.category, cause::RUNQUEUE_WAIT | cause::PREEMPTED_BY)
        || c.culprit.pid.is_some_and(|p| tl.is_recorder(p))
    {
        return None;
    }
    Some((
        c.culprit.cpu.unwrap_or(0),
        c.culprit.comm.clone().unwrap_or_default(),
        c.culprit.pid.unwrap_or(-1),
    ))
}

/// A task to move off the CPU where it held the chain up, and the place of its line.
struct Move {
    at: usize,
    cpu: u32,
    comm: String,
    pid: i32,
}

/// One placement for every move, checked against itself: the CPUs the chain waited on
/// are kept for it, and tasks go only to CPUs no line moves tasks off. Where the chain
/// waited on every CPU, the first-ranked one is kept and every task goes to the others
/// (moving hogs off CPU0 to CPU1 and off CPU1 to CPU0 would swap them). Lines by their
/// first task's place; also the CPUs kept for the chain (the culprits moved off them).
fn plan_moves(ncpu: u32, moves: &[Move], pids_here: bool) -> (Vec<(usize, Advice)>, Vec<u32>) {
    let mut kept: Vec<u32> = Vec::new();
    for m in moves {
        if !kept.contains(&m.cpu) {
            kept.push(m.cpu);
        }
    }
    let free: Vec<String> = (0..ncpu)
        .filter(|c| !kept.contains(c))
        .map(|c| c.to_string())
        .collect();
    let tasks = |cpu: Option<u32>| -> Tasks {
        (moves.iter())
            .filter(|m| cpu.is_none_or(|c| m.cpu == c))
            .map(|m| (m.comm.clone(), m.pid))
            .collect()
    };
    let mut out: Vec<(usize, Advice)> = Vec::new();
    if free.is_empty() {
        kept.truncate(1);
        if let Some(first) = moves.first() {
            let to = others(ncpu, first.cpu);
            let mut a = move_off(ncpu, first.cpu, &to, &tasks(None), pids_here);
            // Some of them ran elsewhere already: the line pins them there.
            if moves.iter().any(|m| m.cpu != first.cpu) {
                let who = a.action.split(" off CPU").next().unwrap_or_default();
                let who = who.strip_prefix("Move ").unwrap_or(who);
                a.action = format!(
                    "Keep CPU{} for the chain, where it waited most: move {who} to CPU{to} (the chain waited on every CPU; one placement for all)",
                    first.cpu
                );
            }
            out.push((first.at, a));
        }
    } else {
        for &cpu in &kept {
            let at = moves.iter().find(|m| m.cpu == cpu).map_or(0, |m| m.at);
            out.push((
                at,
                move_off(ncpu, cpu, &free.join(","), &tasks(Some(cpu)), pids_here),
            ));
        }
    }
    (out, kept)
}

/// Where the plan keeps CPUs for the chain, unbound work goes there too: the culprits
/// leave those CPUs, so sending the work elsewhere would put it beside them.
fn unbound_work_to(out: &mut [Advice], kept: &[u32]) {
    const MASK: &str = " > /sys/devices/virtual/workqueue/cpumask";
    if kept.is_empty() {
        return;
    }
    let list: Vec<String> = kept.iter().map(|c| c.to_string()).collect();
    for a in out.iter_mut().filter(|a| a.command.ends_with(MASK)) {
        a.command = format!("echo {}{MASK}", list.join(","));
        let who = a.action.split(" off CPU").next().unwrap_or_default();
        let by = a
            .action
            .split(", where ")
            .nth(1)
            .map(|r| r.trim_end_matches(" held it up"));
        a.action = format!(
            "{who} on CPU{}, away from {} (the taskset line keeps that CPU for the chain)",
            list.join(","),
            by.unwrap_or("the culprits")
        );
    }
}

/// One piece of advice to move every task in `tasks` (comm, pid) off `cpu`, to `to`: two
/// hogs on the chain's CPU are one thing to do, not the same line twice.
fn move_off(ncpu: u32, cpu: u32, to: &str, tasks: &[(String, i32)], pids_here: bool) -> Advice {
    let capacity = format!(
        "CPU{cpu}: on a {ncpu}-CPU machine that is {}% of its capacity; to keep CPU{cpu} for the latency path for good, isolate it (isolcpus= or a cpuset), which costs a CPU",
        100 / ncpu
    );
    let arg = |(comm, pid): &(String, i32)| task_arg(pids_here, comm, *pid);
    if let [one] = tasks {
        let comm = &one.0;
        return Advice {
            action: format!("Move {comm} off CPU{cpu}, where the chain runs"),
            command: format!("taskset -pc {to} {}", arg(one)),
            cost: format!("{comm} loses {capacity}"),
        };
    }
    let and = |v: Vec<String>| match v.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    let pids: Vec<String> = tasks.iter().map(|t| t.1.to_string()).collect();
    let who = if tasks.iter().all(|t| t.0 == tasks[0].0) {
        format!("{} ({})", tasks[0].0, and(pids.clone()))
    } else {
        and(tasks.iter().map(|(c, p)| format!("{c}[{p}]")).collect())
    };
    let mut args: Vec<String> = tasks.iter().map(arg).collect();
    // By name, two tasks of one name are one lookup.
    args.dedup();
    Advice {
        action: format!("Move {who} off CPU{cpu}, where the chain runs"),
        command: format!("for p in {}; do taskset -pc {to} $p; done", args.join(" ")),
        cost: format!("each loses {capacity}"),
    }
}

/// A softirq handed to ksoftirqd that then waited behind a task: let ksoftirqd preempt
/// it, or move the task (`others`: the CPUs but the culprit's).
fn deferred(c: &CauseRow, others: &str, pids_here: bool) -> Advice {
    let cpu = c.culprit.cpu.unwrap_or(0);
    let comm = c.culprit.comm.as_deref().unwrap_or_default();
    let task = task_arg(pids_here, comm, c.culprit.pid.unwrap_or(-1));
    Advice {
        action: format!(
            "The softirq was handed to ksoftirqd/{cpu}, which then waited behind {}: let ksoftirqd preempt it",
            c.culprit.label()
        ),
        command: format!(
            "chrt -f -p 1 $(pgrep -x ksoftirqd/{cpu})   (or move {comm} off CPU{cpu}: taskset -pc {others} {task})"
        ),
        cost: "a real-time ksoftirqd runs network/timer bottom halves ahead of every normal task on that CPU: bursts of softirq work then delay applications instead".into(),
    }
}

/// The advice for one cause, by its category.
/// Interrupt context without a numbered handler: the CPU's own timer interrupt (which
/// cannot be steered), or a handler whose entry the trace lacks.
fn untraced_irq(c: &CauseRow, cpu: u32) -> Advice {
    let what = c.culprit.label();
    if what.starts_with("timer interrupt") {
        return Advice {
            action: format!(
                "CPU{cpu} was in its {what}: a CPU's own timer cannot be steered; move the timers that fire there, or the work that waited, to another CPU"
            ),
            command: format!(
                "taskset -pc <another cpu> <pid of the task whose timer fires on CPU{cpu}>   (or steer the waiting work: its device's IRQ or RPS mask); on a VM, watch steal time (vmstat 1, column st)"
            ),
            cost: "the other CPU takes that timer's wakeups; on a VM a slow timer interrupt is often the host's, which no setting in the guest changes".into(),
        };
    }
    Advice {
        action: format!(
            "CPU{cpu} was in interrupt context the trace does not name ({what}): record the handlers to see which"
        ),
        command: "whylate record -e irq,irq_vectors ...   (irq_handler_entry/exit, and the local timer, IPIs)".into(),
        cost: "a few more events per interrupt".into(),
    }
}

/// A priority inversion: the waker that the chain's higher-priority task slept on (found
/// in the misses' links this cause held) should run at the sleeper's priority while it
/// is waited for (a priority-inheritance lock), or always.
fn inversion(tl: &Timeline, s: &Interner, c: &CauseRow, misses: &[Miss]) -> Vec<Advice> {
    let held = |l: &&crate::explain::report::Link| {
        (l.held_by.iter())
            .any(|h| h.category == cause::PRIORITY_INVERSION && h.culprit == c.culprit)
    };
    let Some((miss, link)) = misses
        .iter()
        .find_map(|m| m.chain.iter().find(held).map(|l| (m, l)))
    else {
        return Vec::new();
    };
    let Some(holder) = link.waiter.as_ref().filter(|w| w.pid.is_some()) else {
        return Vec::new();
    };
    let sleeper = crate::explain::report::Culprit::task(tl, s, miss.tid, miss.cpu);
    let sleeper_name = format!("{}[{}]", s.get(tl.comm(miss.tid)), miss.tid);
    let (hpid, hprio) = (holder.pid.unwrap_or(-1), holder.prio.unwrap_or(120));
    let sprio = sleeper.prio.or_else(|| tl.prios.get(&miss.tid).copied());
    let mut out = vec![Advice {
        action: format!(
            "Give the lock (or whatever {sleeper_name} waits on) priority inheritance, so {} runs at {sleeper_name}'s priority while it is waited for and {} cannot preempt it",
            holder.label(),
            c.culprit.label()
        ),
        command: "pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT) before pthread_mutex_init (a futex-based lock of one's own: FUTEX_LOCK_PI / FUTEX_UNLOCK_PI)".into(),
        cost: "a contended lock and its unlock go through the kernel, which boosts the holder; a holder that sleeps inside its section still delays the waiter, and a condition variable or pipe has no owner to boost".into(),
    }];
    if let Some(rt) = sprio.filter(|&p| p < 100 && hprio > p) {
        out.push(Advice {
            action: format!(
                "Or run {} at {sleeper_name}'s priority all the time",
                holder.label()
            ),
            command: format!(
                "chrt -f -p {} {}",
                99 - rt,
                task_arg(tl.pids_here, holder.comm.as_deref().unwrap_or_default(), hpid)
            ),
            cost: "the holder then runs ahead of every task below that priority on its CPU, also outside its critical section".into(),
        });
    }
    out
}

fn for_cause(tl: &Timeline, s: &Interner, c: &CauseRow, misses: &[Miss]) -> Vec<Advice> {
    let ncpu = tl.cpus.max(1);
    let others = |cpu: u32| others(ncpu, cpu);
    let cpu = c.culprit.cpu.unwrap_or(0);
    let mut out = Vec::new();
    if c.culprit.pid.is_some_and(|p| tl.is_recorder(p)) {
        // How to record with less disturbance first; the waiters' own priority still
        // helps them, but the recorder is never told to move as if it were the workload.
        out.push(recorder(c, ncpu));
        if matches!(c.category, cause::RUNQUEUE_WAIT | cause::PREEMPTED_BY) {
            out.extend(scheduling(tl, c, misses));
        }
        return out;
    }
    match c.category {
        cause::RUNQUEUE_WAIT | cause::PREEMPTED_BY => out.extend(scheduling(tl, c, misses)),
        cause::PRIORITY_INVERSION => out.extend(inversion(tl, s, c, misses)),
        cause::HARDIRQ if c.culprit.irq.is_none() => out.push(untraced_irq(c, cpu)),
        cause::HARDIRQ => {
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
        cause::READER_NOT_READING => out.push(Advice {
            action: format!(
                "The replies were ready in time but {} was not reading (asleep until its own timer): have it wait for the reply up to its deadline",
                c.culprit.label()
            ),
            command: "in the reader: poll()/select() on the fd with the time left as timeout, then read; after a timeout, drain the late reply before the next request".into(),
            cost: "none on the machine; the reader's timeout handling changes (a late reply is taken, not left for the next request)".into(),
        }),
        cause::DEFERRED_TO_KSOFTIRQD => out.push(deferred(c, &others(cpu), tl.pids_here)),
        cause::SOFTIRQ | cause::SOFTIRQ_BACKLOG => out.push(Advice {
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
        cause::IRQS_OFF => {
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
        cause::IRQS_OFF_INFERRED => out.push(irqs_off_in_call(c, misses, ncpu, tl.pids_here)),
        cause::SLOW_CONSOLE => out.extend(console_in_call(c, misses)),
        cause::OWN_CODE | cause::CALLEE => {
            let f = c.culprit.caller.clone().unwrap_or_default();
            if is_console_code(&f) {
                out.extend(slow_console(&f));
            } else {
                out.push(Advice {
                    action: format!("See what {f} does in its slow calls, line by line"),
                    command: format!("perf record -g -a -- sleep 10; perf annotate {f}   (or: trace-cmd record -p function_graph -g {f})"),
                    cost: "profiling overhead while it records; function_graph slows every traced call".into(),
                });
            }
        }
        cause::ON_CPU => out.push(Advice {
            action: format!(
                "The chain's own work in {} ran longer than in the good cycles{}: see where its time went",
                c.culprit.label(),
                c.culprit.caller.as_ref().map(|x| format!(" ({x}, with the tick held off)")).unwrap_or_default()
            ),
            command: format!("perf record -g -t {} -- sleep 10; perf report", c.culprit.pid.unwrap_or(-1)),
            cost: "profiling overhead while it records".into(),
        }),
        cause::CPU_STALLED => out.push(Advice {
            action: format!(
                "CPU{cpu} stopped recording (not even its tick) while busy: on a VM the host did not run this vCPU"
            ),
            command: "grep '^cpu ' /proc/stat   (8th number: steal time; on the host, pin the vCPUs to dedicated cores)".into(),
            cost: "dedicated host cores for the guest".into(),
        }),
        cause::TIMER_IRQ_LATE => out.push(Advice {
            action: format!(
                "The timer interrupt came late on CPU{cpu} and the trace does not show why: record the sections with interrupts off"
            ),
            command: "whylate record -e latency,preemptirq:irq_disable,preemptirq:irq_enable   (needs CONFIG_PREEMPTIRQ_TRACEPOINTS)".into(),
            cost: "preemptirq events are frequent: a bigger buffer, more overhead while tracing".into(),
        }),
        cause::IRQ_LATE => out.push(Advice {
            action: format!(
                "The interrupt that carried the chain on reached CPU{cpu} late, after a stretch in which that CPU recorded nothing: tell a late sender or device from a CPU that could not take it (interrupts off, or a vCPU its host did not run)"
            ),
            command: "whylate record -e latency,preemptirq:irq_disable,preemptirq:irq_enable,ipi,irq_vectors   (and on a VM: grep '^cpu ' /proc/stat, 8th number: steal time)".into(),
            cost: "preemptirq events are frequent: a bigger buffer, more overhead while tracing".into(),
        }),
        cause::PREEMPTION_DELAY => out.push(Advice {
            action: format!(
                "A real-time task waited on CPU{cpu} for non-preemptible kernel code to finish"
            ),
            command: "boot with preempt=full (PREEMPT_DYNAMIC kernels), or a PREEMPT_RT kernel".into(),
            cost: "more preemption points: some throughput".into(),
        }),
        cause::TIMER_IRQ_LATENCY | cause::NMI | cause::THREAD_NOISE | cause::SCHED_OVERHEAD | cause::CPU_VECTOR => {
            let comm = c.culprit.comm.as_deref().unwrap_or_default();
            let culprit = task_arg(tl.pids_here, comm, c.culprit.pid.unwrap_or(-1));
            out.extend(crate::explain::rt_advice::for_rt_cause(c, &others(cpu), &culprit))
        }
        cause::CPU_IDLE => out.push(Advice {
            action: format!("CPU{cpu} sat idle while the chain waited: idle exit or host (VM) latency"),
            command: "cpupower idle-set -D 10   (or boot with idle=poll; on a VM check the host's steal time)".into(),
            cost: "shallower idle states burn power; idle=poll keeps the CPU at full power".into(),
        }),
        // Nothing on this machine to change, or nothing the trace can name: the report's
        // words say what to record or measure instead (the catalogue's fixes).
        cause::DEVICE_EXTERNAL | cause::BLOCKED_ON | cause::NO_FOLLOW_UP | cause::UNRECOGNISED => {}
        // Said in the report's notes, which name what was not recorded (hrtimer_start and
        // hrtimer_cancel; a pending vector's raise) rather than a command.
        cause::TIMER_MOVED | cause::SOFTIRQ_PENDING | cause::PREEMPT_OFF => {}
        // Time nothing accounts for, and the blind spots: never advised on.
        cause::UNKNOWN | cause::TRACE_CUT | cause::UNKNOWN_LOST_EVENTS | cause::SWITCH_IN_UNTRACED => {}
    }
    out
}

/// Whether `a` is the advice `recorder` gives.
pub(in crate::explain) fn is_recorders(a: &Advice) -> bool {
    a.action.starts_with("The recorder itself")
}

/// The recorder's own thread held the workload up: the measurement's cost, whose fix is
/// in how it records (never the workload's scheduling, nor the recorder's priority).
fn recorder(c: &CauseRow, ncpu: u32) -> Advice {
    let cpu = c.culprit.cpu.unwrap_or(0);
    Advice {
        action: format!(
            "The recorder itself ({}) held CPU{cpu} while the workload waited: that is the measurement's cost, not the workload's; record so that it disturbs less",
            c.culprit.label()
        ),
        command: format!(
            "a bigger buffer (whylate record --buffer-kb 65536, trace-cmd record -b 65536: its readers wake less often), fewer events (-e sched,irq, or filter the busiest), or the recorder on another CPU (taskset -c {} whylate record ...)",
            others(ncpu, cpu)
        ),
        cost: "a bigger buffer takes that much memory per CPU; fewer events show less of the chain; a CPU kept for the recorder is one the workload loses".into(),
    }
}

/// Kernel code on the path that writes printk messages to a serial console.
pub(in crate::explain) fn is_console_code(f: &str) -> bool {
    const CONSOLE: [&str; 7] = [
        "serial8250",
        "wait_for_xmitr",
        "uart_console_write",
        "console_unlock",
        "console_flush",
        "printk",
        "io_serial",
    ];
    CONSOLE.iter().any(|c| f.contains(c))
}

/// A slow serial console draining printk (seed 001): what to do, cheapest first.
pub(in crate::explain) fn slow_console(f: &str) -> Vec<Advice> {
    vec![
        Advice {
            action: format!(
                "Keep routine kernel messages off the serial console, so printk does not wait for the line ({f})"
            ),
            command: "dmesg -n 1   (or sysctl -w kernel.printk='1 4 1 7'; at boot: loglevel=1 or quiet)".into(),
            cost: "only emergencies reach the console as they happen; the rest stays in the log buffer (dmesg, journal)".into(),
        },
        Advice {
            action: "Let the console print from its own thread instead of the caller's context: an nbcon console (its flags show N)".into(),
            command: "cat /proc/consoles   (ttyS0 ... (EC N a) = nbcon, printed by the pr/ttyS0 kthread); otherwise a newer kernel".into(),
            cost: "messages reach the wire a little later; in a panic the console still prints synchronously".into(),
        },
        Advice {
            action: "A faster line, or no serial console: at 115200 baud a byte takes 86.8 us (8N1)".into(),
            command: "boot with console=ttyS0,921600 (both ends must support it), or drop console=ttyS0 and keep netconsole/pstore for crashes".into(),
            cost: "a faster line needs a receiver that keeps up; without a serial console a hang that kills the network leaves no log there".into(),
        },
        Advice {
            action: "If the driver waits for the transmitter after every byte, fill the UART's FIFO per wait instead".into(),
            command: "a driver change in the console write path; the port's FIFO: setserial -g /dev/ttyS0 (uart: 16550A = 16 bytes)".into(),
            cost: "a kernel patch to carry until upstream takes it".into(),
        },
    ]
}

/// A task whose system call logged kernel messages that printk printed to a slow console
/// with interrupts off: keep them off the console (the level, or /dev/kmsg itself), then
/// the console's own options.
fn console_in_call(c: &CauseRow, misses: &[Miss]) -> Vec<Advice> {
    let cpu = c.culprit.cpu.unwrap_or(0);
    let longest = (misses.iter().flat_map(|m| &m.chain))
        .flat_map(|l| &l.held_by)
        .filter(|h| h.category == c.category && h.culprit == c.culprit)
        .map(|h| h.ns)
        .max()
        .unwrap_or(0);
    let inside = c.culprit.caller.clone().unwrap_or_default();
    let mut out = vec![
        Advice {
            action: format!(
                "{} had printk print its kernel messages on CPU{cpu} with interrupts off ({inside}, up to {} at a time, in {} miss{}): keep routine messages off the serial console",
                c.culprit.label(),
                crate::units::dur(longest),
                c.count,
                if c.count == 1 { "" } else { "es" }
            ),
            command: "dmesg -n 1   (or sysctl -w kernel.printk='1 4 1 7'; at boot: loglevel=1 or quiet)".into(),
            cost: "only messages more urgent than the level reach the console as they happen; the rest stays in the log buffer (dmesg, journal)".into(),
        },
        Advice {
            action: "If the messages come from user space through /dev/kmsg, stop or limit those writes".into(),
            command: "sysctl -w kernel.printk_devkmsg=off   (or =ratelimit; at boot: printk.devkmsg=off)".into(),
            cost: "writes to /dev/kmsg are dropped (or limited to bursts of 10 per 5 s): the program's own messages leave the kernel log".into(),
        },
    ];
    out.extend(slow_console(&inside).into_iter().skip(1));
    out
}

/// A task's system call that held interrupts off (inferred from a late or missing tick):
/// what is known about it, and the options that work for irqs-off (a preemption model
/// does not).
fn irqs_off_in_call(c: &CauseRow, misses: &[Miss], ncpu: u32, pids_here: bool) -> Advice {
    let cpu = c.culprit.cpu.unwrap_or(0);
    let comm = c.culprit.comm.as_deref().unwrap_or_default();
    let pid = task_arg(pids_here, comm, c.culprit.pid.unwrap_or(-1));
    let call = c.culprit.caller.clone().unwrap_or_default();
    let longest = (misses.iter().flat_map(|m| &m.chain))
        .flat_map(|l| &l.held_by)
        .filter(|h| h.category == c.category && h.culprit == c.culprit)
        .map(|h| h.ns)
        .max()
        .unwrap_or(0);
    Advice {
        action: format!(
            "{} held interrupts off on CPU{cpu} {call} (up to {} at a time, in {} misses): do less per call (smaller writes, split the work), or keep the latency-critical thread and its timer off CPU{cpu}",
            c.culprit.label(),
            crate::units::dur(longest),
            c.count
        ),
        command: format!(
            "ls -l /proc/{pid}/fd   (the file behind the call); taskset -pc {} <latency-critical pid>",
            others(ncpu, cpu)
        ),
        cost: format!("preempt=full or PREEMPT_RT does not help a section with interrupts off; moving the latency-critical thread costs it CPU{cpu}; a fix in the driver needs its owner"),
    }
}

#[cfg(test)]
mod tests {
    use super::{move_off, plan_moves, task_arg, Move};

    #[test]
    fn two_tasks_on_one_cpu_are_one_move() {
        let one = move_off(2, 1, "0", &[("hog".into(), 6717)], true);
        assert_eq!(one.action, "Move hog off CPU1, where the chain runs");
        assert_eq!(one.command, "taskset -pc 0 6717");
        assert!(one
            .cost
            .starts_with("hog loses CPU1: on a 2-CPU machine that is 50%"));
        let tasks = [("hog".into(), 6717), ("hog".into(), 6716)];
        let two = move_off(2, 1, "0", &tasks, true);
        assert_eq!(
            two.action,
            "Move hog (6717 and 6716) off CPU1, where the chain runs"
        );
        assert_eq!(two.command, "for p in 6717 6716; do taskset -pc 0 $p; done");
        assert!(two.cost.starts_with("each loses CPU1"));
        // By name, the two hogs are one lookup.
        let by_name = move_off(2, 1, "0", &tasks, false);
        assert_eq!(
            by_name.command,
            "for p in $(pgrep -x 'hog'); do taskset -pc 0 $p; done"
        );
        let tasks = [("a".into(), 1), ("b".into(), 2), ("c".into(), 3)];
        let mixed = move_off(4, 2, "0,1,3", &tasks, true);
        assert_eq!(
            mixed.action,
            "Move a[1], b[2] and c[3] off CPU2, where the chain runs"
        );
        assert_eq!(
            mixed.command,
            "for p in 1 2 3; do taskset -pc 0,1,3 $p; done"
        );
    }

    /// A PID is written only where it names this machine's task; else the name is looked
    /// up, its regular-expression and shell characters quoted.
    #[test]
    fn a_task_is_named_by_pid_only_where_the_pids_are_this_machines() {
        assert_eq!(task_arg(true, "kworker/u8:1", 32), "32");
        assert_eq!(
            task_arg(false, "kworker/u8:1", 32),
            "$(pgrep -x 'kworker/u8:1')"
        );
        assert_eq!(
            task_arg(false, "a.b+[1]", 5),
            "$(pgrep -x 'a\\.b\\+\\[1\\]')"
        );
        assert_eq!(task_arg(false, "it's", 5), "$(pgrep -x 'it'\\''s')");
        // No name to look up: the PID, and the note says whose it is.
        assert_eq!(task_arg(false, "", 7), "7");
    }

    fn mv(at: usize, cpu: u32, comm: &str, pid: i32) -> Move {
        let comm = comm.into();
        Move { at, cpu, comm, pid }
    }

    /// Moves off both CPUs of a 2-CPU machine would swap the hogs: one line keeps the
    /// CPU the chain waited on most and sends every hog to the other. With CPUs to
    /// spare, each CPU's tasks go to the CPUs no line moves tasks off.
    #[test]
    fn taskset_lines_are_one_placement() {
        let swap = [
            mv(1, 0, "hog", 7450),
            mv(3, 1, "hog", 7451),
            mv(4, 1, "x", 9),
        ];
        let (plan, kept) = plan_moves(2, &swap, true);
        assert_eq!(kept, [0]);
        assert_eq!(plan.len(), 1, "{plan:?}");
        assert_eq!(plan[0].0, 1);
        assert_eq!(
            plan[0].1.command,
            "for p in 7450 7451 9; do taskset -pc 1 $p; done"
        );
        assert!(plan[0].1.action.starts_with("Keep CPU0 for the chain"));
        let (spare, kept) = plan_moves(4, &swap, true);
        assert_eq!(kept, [0, 1]);
        let lines: Vec<(usize, &str)> = spare.iter().map(|(at, a)| (*at, &a.command[..])).collect();
        assert_eq!(
            lines,
            [
                (1, "taskset -pc 2,3 7450"),
                (3, "for p in 7451 9; do taskset -pc 2,3 $p; done")
            ]
        );
    }
}
