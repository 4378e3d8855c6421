//! What every CPU spent the trace on: shares of tasks, irq handlers, softirqs and idle,
//! and the interrupts handled there (what `diff` compares and every explain report
//! carries).

use super::model::Timeline;
use super::query::OccupantKind;
use crate::event::Interner;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// What one CPU spent the trace on.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuProfile {
    /// The CPU.
    pub cpu: u32,
    /// Share of the trace's span it was not idle (tasks, interrupts, softirqs).
    pub busy: f64,
    /// Who held it, as shares of the span, largest first (at most 12, each ≥ 0.1%): tasks by
    /// name (all pids of a name together), hard interrupts, softirq vectors. Time in an
    /// interrupt counts for the interrupt, not for the task it interrupted.
    pub shares: Vec<Share>,
    /// Hard interrupts handled here, most first.
    pub irqs: Vec<IrqCount>,
}

/// One holder's share of a CPU.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Share {
    /// `hog`, `irq virtio3-tx`, `softirq NET_RX`.
    pub what: String,
    /// `task`, `hardirq` or `softirq`.
    pub kind: &'static str,
    /// Fraction of the span.
    pub share: f64,
}

/// How often one interrupt line was handled on a CPU.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IrqCount {
    /// Line number.
    pub irq: u32,
    /// Its name (`/proc/interrupts` or the trace), empty when unknown.
    pub name: String,
    /// Handler runs.
    pub count: u64,
}

/// The profile of every CPU with anything recorded on it.
pub fn profile(tl: &Timeline, s: &Interner) -> Vec<CpuProfile> {
    let (from, to) = (tl.first_ts.unwrap_or(0), tl.last_ts);
    let span = to.saturating_sub(from).max(1) as f64;
    let mut out = Vec::new();
    for cpu in 0..tl.cpus {
        let occ = tl.occupants(cpu, from, to.max(from + 1));
        if occ.is_empty() {
            continue;
        }
        let mut by: FxHashMap<(u8, String), u64> = FxHashMap::default();
        let mut busy = 0u64;
        for o in &occ {
            let key = match o.what {
                OccupantKind::Task if o.id == 0 => continue,
                OccupantKind::Task => {
                    let c = s.get(tl.comm(o.id as i32));
                    let c = if c.is_empty() { s.get(o.name) } else { c };
                    (
                        0,
                        if c.is_empty() {
                            format!("tid {}", o.id)
                        } else {
                            c.to_string()
                        },
                    )
                }
                OccupantKind::Hardirq => (1, irq_label(o.id as u32, s.get(o.name))),
                OccupantKind::Softirq => (
                    2,
                    format!(
                        "softirq {}",
                        crate::event::SOFTIRQ_NAMES
                            .get(o.id as usize)
                            .copied()
                            .unwrap_or("?")
                    ),
                ),
            };
            busy += o.ns;
            *by.entry(key).or_default() += o.ns;
        }
        let mut shares: Vec<Share> = by
            .into_iter()
            .map(|((k, what), ns)| Share {
                what,
                kind: ["task", "hardirq", "softirq"][k as usize],
                share: ns as f64 / span,
            })
            .filter(|x| x.share >= 0.001)
            .collect();
        shares.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.what.cmp(&b.what)));
        shares.truncate(12);
        let irqs: Vec<IrqCount> = tl
            .hardirq_counts(cpu)
            .into_iter()
            .map(|(irq, count)| IrqCount {
                irq,
                name: tl
                    .irq_names
                    .get(&irq)
                    .map(|n| s.get(*n).to_string())
                    .unwrap_or_default(),
                count,
            })
            .collect();
        out.push(CpuProfile {
            cpu,
            busy: busy as f64 / span,
            shares,
            irqs,
        });
    }
    out
}

pub(crate) fn irq_label(irq: u32, name: &str) -> String {
    if name.is_empty() {
        format!("irq {irq}")
    } else {
        format!("irq {name}")
    }
}
