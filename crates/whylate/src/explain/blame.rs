//! Time no link explains: the gaps between a cycle's links and what the chain was doing
//! then (on-cpu, blocked-on, device/external).

use super::cutter::Cycle;
use super::engine::{Engine, RawLink};
use super::report::Culprit;
use crate::timeline::{OccupantKind, NONE};
use crate::units::dur;
use rustc_hash::FxHashSet;

/// `[s, h]` minus the union of the links' intervals: time no wait explains (the chain's
/// tasks computing, sleeping, or the device answering).
pub(super) fn uncovered(links: &[RawLink], s: u64, h: u64) -> Vec<(u64, u64)> {
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
pub(super) fn gap_cause(
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
