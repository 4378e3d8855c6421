//! The recording machine, from `whylate record`'s snapshot: IRQ placement, irqbalance,
//! and the recorder's own share of the blame.

use crate::explain::report::{CauseRow, ExplainReport, IrqPlacement, Machine};
use crate::units::dur;
use rustc_hash::FxHashSet;

/// `irq 11 virtio0` → 11.
pub(in crate::explain) fn irq_number(label: &str) -> Option<i32> {
    label.strip_prefix("irq ")?.split(' ').next()?.parse().ok()
}

/// Fills in IRQ names and placement, and irqbalance's real state, from a snapshot.
pub(in crate::explain) fn add_machine(r: &mut ExplainReport, snap: &crate::snapshot::Snapshot) {
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
    r.machine = Some(Machine {
        kernel: snap.kernel.clone(),
        hostname: (!snap.hostname.is_empty()).then(|| snap.hostname.clone()),
        started_unix_s: (snap.started_unix_s > 0).then_some(snap.started_unix_s),
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

/// `causes` in the same order, the rows whose culprit is one of the recorder's threads
/// (`recorder`, sorted) moved after the others.
pub(in crate::explain) fn recorder_last(causes: Vec<CauseRow>, recorder: &[i32]) -> Vec<CauseRow> {
    let is_mine =
        |c: &CauseRow| (c.culprit.pid).is_some_and(|p| recorder.binary_search(&p).is_ok());
    let (theirs, mine): (Vec<CauseRow>, Vec<CauseRow>) =
        causes.into_iter().partition(|c| !is_mine(c));
    theirs.into_iter().chain(mine).collect()
}

/// The recorder's own threads among the culprits (`whylate record`'s from its snapshot,
/// trace-cmd's and perf's by name: see `pipeline::recorder_threads`): the measurement
/// disturbed what it measured. Says so, and drops advice aimed at the recorder as if it
/// were the workload.
pub(in crate::explain) fn recorder_blame(r: &mut ExplainReport, tids: &FxHashSet<i32>) {
    if tids.is_empty() {
        return;
    }
    r.recorder = tids.iter().copied().collect();
    r.recorder.sort_unstable();
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
    if ns * 2 > total {
        // Most of what is late here is the measurement's cost: that qualifies every
        // line below, so it is said under the verdict, not only in the notes.
        r.blind.push(format!(
            "the recorder itself held {} ({:.0}%) of the blamed excess: most of what is late in this trace is the recording's own cost; record again so that it disturbs less (see the advice)",
            dur(ns),
            ns as f64 * 100.0 / total.max(1) as f64
        ));
        // And recording again is the first thing to do: the workload's causes rest on
        // a minority of the excess.
        if let Some(i) = r
            .advice
            .iter()
            .position(crate::explain::advice::is_recorders)
        {
            r.advice[..=i].rotate_right(1);
        }
    }
    let pids: Vec<String> = mine
        .iter()
        .filter_map(|c| c.culprit.pid)
        .map(|p| format!(" {p}"))
        .collect();
    r.notes.push(format!(
        "the recorder itself ({}) holds {} ({:.0}%) of the blamed excess: its threads (the readers, the /proc rescan) ran on the CPUs the chain needed. Record fewer events (filter the busiest, e.g. -e 'syscalls:sys_exit_read[ret > 0]' for a polling read loop) to measure the workload undisturbed",
        mine.iter()
            .map(|c| c.culprit.label())
            .collect::<FxHashSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", "),
        dur(ns),
        ns as f64 * 100.0 / total.max(1) as f64
    ));
    // The recorder's rows rank after the workload's: they are the measurement's own cost,
    // said in the note, and what comes first must be about the workload.
    r.causes = recorder_last(std::mem::take(&mut r.causes), &r.recorder);
    // Moving the recorder is no fix of the workload; raising the workload's thread above
    // whatever holds its CPU (the recorder here, seed 000's perf) still is.
    r.advice.retain(|a| {
        !pids
            .iter()
            .any(|p| a.command.ends_with(p.as_str()) && a.action.starts_with("Move"))
    });
}
