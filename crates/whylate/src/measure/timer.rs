//! `timer`: hrtimer lateness, expiry to callback to the woken task running.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options, Sample};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Raw, Src, Tally, Unc};
use crate::event::Sym;
use crate::timeline::{span, Ctx, EdgeKind, KindClass, Timeline, TimerClock, NONE};
use crate::units::secs;
use std::fmt::Write as _;

/// What became of the task a timer's callback woke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// No task: the callback woke none (the tick, a softirq timer).
    Nobody,
    /// The task was still on the CPU when woken: it did not wait.
    Running,
    /// It waited for a CPU in runnable span `0` until it ran.
    Waited(u32),
    /// It had not run when the trace ended (runnable span `0`, its end unknown).
    Open(u32),
    /// The wakeup is traced but no wait follows it in the timeline (woken again before
    /// it ran): its expiry-to-running is not known.
    Unknown,
}

/// One hrtimer period as `latency -m timer` and `explain --timer` both see it.
#[derive(Clone, Copy, Debug)]
pub struct Period {
    /// The timeline edge of the expiry.
    pub edge: u32,
    /// Requested expiry, on the trace clock.
    pub due: u64,
    /// When the timer was armed for a time already past (its task overran the period),
    /// the lateness from when it could first have fired.
    pub armed_late: Option<u64>,
    /// The woken task's fate.
    pub woken: Woken,
}

impl Period {
    /// The expiry's lateness as the kernel counts it (expire_entry's `now` minus the
    /// requested expiry), or from when it could first fire when armed late.
    pub fn irq_late(&self, tl: &Timeline) -> u64 {
        let e = &tl.edges[self.edge as usize];
        self.armed_late.unwrap_or(e.val2.saturating_sub(e.val))
    }

    /// When the woken task ran: the callback itself when it did not wait, the end of its
    /// wait otherwise; None when unknown or nobody was woken.
    pub fn ran(&self, tl: &Timeline) -> Option<u64> {
        match self.woken {
            Woken::Running => Some(tl.edges[self.edge as usize].at),
            Woken::Waited(si) => Some(tl.spans.end[si as usize]),
            Woken::Nobody | Woken::Open(_) | Woken::Unknown => None,
        }
    }
}

/// Every hrtimer expiry with a known expiry time, in edge order, and when those with
/// none expired (armed before the trace, or an older kernel without `now`). The one
/// place a timer period is taken from the timeline.
pub fn periods(tl: &Timeline, clock: &TimerClock) -> (Vec<Period>, Vec<u64>) {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    for (ei, e) in tl.edges.iter().enumerate() {
        if e.kind != EdgeKind::Timer {
            continue;
        }
        if e.val == u64::MAX || e.val2 == u64::MAX {
            unknown.push(e.at);
            continue;
        }
        let woken = if e.link == NONE {
            if e.to_tid > 0 {
                Woken::Running
            } else {
                Woken::Nobody
            }
        } else {
            match tl.edges[e.link as usize].span {
                NONE => Woken::Unknown,
                si if tl.spans.flags[si as usize] & span::END_UNKNOWN != 0 => Woken::Open(si),
                si => Woken::Waited(si),
            }
        };
        out.push(Period {
            edge: ei as u32,
            due: clock.due(tl, ei).unwrap_or(e.at),
            armed_late: clock.armed_late(tl, ei),
            woken,
        });
    }
    (out, unknown)
}

pub(super) fn timer(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let mut coll = Collector::new();
    let (periods, unknown) = periods(tl, &TimerClock::new(tl));
    let unknown = unknown.iter().filter(|&&at| cx.settle.ends(at)).count();
    let mut lost = 0u64;
    for p in &periods {
        let e = &tl.edges[p.edge as usize];
        let late = p.irq_late(tl);
        let due = p.due;
        let key = timer_key(cx, e);
        let r = Raw {
            ts: e.at.saturating_sub(late),
            end: e.at,
            value: late,
            cpu: e.to_cpu,
            tid: if e.to_tid > 0 { e.to_tid } else { e.from_tid },
            comm: Sym::EMPTY,
            idx: p.edge,
            src: Src::Edge,
            unc: Unc::default(),
        };
        // A period is one window's whole: settled where its last sample ends, its
        // wakeup's; one still waiting when a window ends is a later window's.
        let end = match p.woken {
            // Still waiting when the trace ends: the last window's.
            Woken::Open(_) if !cx.settle.is_last() => continue,
            Woken::Open(_) => u64::MAX - 1,
            _ => e.at,
        };
        let kept = match p.woken {
            // Settled where its wait closed.
            Woken::Waited(si) => cx.keep_span(si as usize, e.at, r.cpu, r.tid, r.comm),
            _ => cx.keep(e.at, end, r.cpu, r.tid, r.comm),
        };
        if !kept {
            continue;
        }
        let sl = coll.get(key.clone(), "lateness");
        sl.count(
            "armed_after_expiry",
            Tally::Plain,
            u64::from(p.armed_late.is_some()),
        );
        sl.push(cx, r);
        // From the due time on the trace clock to the task running is the period's
        // lateness, including the callback's wait behind earlier ones in its interrupt.
        let r = Raw {
            ts: due,
            value: e.at - due,
            ..r
        };
        match p.woken {
            Woken::Running => coll.add(cx, key, "expiry-to-running", r),
            Woken::Waited(si) => {
                let (si, sp) = (si as usize, &tl.spans);
                let mut r2 = span_raw(tl, si);
                r2.value = sp.end[si] - sp.start[si];
                coll.add(cx, key.clone(), "wakeup-after-expiry", r2);
                let mut r3 = r;
                r3.value = sp.end[si].saturating_sub(due);
                // Its end is the wait's: inferred when the switch-in was not traced.
                r3.unc = r2.unc;
                r3.end = sp.end[si];
                coll.add(cx, key, "expiry-to-running", r3);
            }
            Woken::Unknown => lost += 1,
            Woken::Nobody | Woken::Open(_) => {}
        }
    }
    for rl in &tl.reported {
        if !cx.keep(rl.ts, rl.ts, rl.cpu, rl.tid, Sym::EMPTY) {
            continue;
        }
        let s = coll.get(format!("{} (self-reported)", cx.s.get(rl.name)), "lateness");
        if let Some(n) = rl.overruns {
            s.count("overruns", Tally::Plain, n);
        }
        s.push(
            cx,
            Raw {
                ts: rl.ts.saturating_sub(rl.late_ns),
                end: rl.ts,
                value: rl.late_ns,
                cpu: rl.cpu,
                tid: rl.tid,
                comm: Sym::EMPTY,
                idx: NONE,
                src: Src::None,
                unc: Unc::default(),
            },
        );
    }
    let mut rep = finish_report(
        cx,
        Measure::Timer,
        "hrtimer lateness (expire_entry now minus the requested expiry, softexpires) per timer function and owner, the woken task's wait after it, and expiry to running (from the expiry on the trace clock, so a callback's wait behind others in its interrupt counts)",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &timer_detail,
    );
    if lost > 0 {
        rep.notes.push(format!(
            "{lost} timer(s) woke a task that was woken again before it ran (it ran and slept where the trace cannot see): no expiry-to-running for them"
        ));
    }
    if unknown > 0 {
        rep.notes.push(format!(
            "{unknown} hrtimer expiries without a known expiry time (armed before the trace, or an older kernel without `now`): not measured"
        ));
    }
    if tl.saw(KindClass::HrtimerExpire) == 0 && tl.reported.is_empty() {
        rep.missing_events.push(needs(
            Measure::Timer,
            "hrtimer lateness",
            &[
                "timer:hrtimer_start",
                "timer:hrtimer_expire_entry",
                "timer:hrtimer_expire_exit",
            ],
        ));
    } else if tl.saw(KindClass::HrtimerStart) == 0 && tl.reported.is_empty() {
        rep.missing_events.push(needs(
            Measure::Timer,
            "hrtimer lateness",
            &["timer:hrtimer_start"],
        ));
    }
    rep
}

/// A timer's group: its function and its owner — the task it woke, the task that armed
/// it, or else its CPU (tick and other timers armed from interrupt context).
pub(super) fn timer_key(cx: &Cx<'_>, e: &crate::timeline::Edge) -> String {
    let owner = if e.to_tid > 0 {
        cx.task(e.to_tid, Sym::EMPTY)
    } else {
        match e.from {
            Ctx::Task { tid } if tid > 0 => cx.task(tid, Sym::EMPTY),
            _ => format!("CPU{}", e.to_cpu),
        }
    };
    format!("{} ({owner})", cx.s.get(Sym(e.key)))
}

pub(super) fn timer_detail(cx: &Cx<'_>, r: &Raw) -> Sample {
    let tl = cx.tl;
    match r.src {
        Src::Edge => {
            let e = &tl.edges[r.idx as usize];
            let key = timer_key(cx, e);
            let mut d = format!("expired on CPU{} at {}", e.to_cpu, secs(e.at));
            if e.ts != 0 {
                let _ = write!(
                    d,
                    ", armed by {} at {}",
                    cx.ctx(e.from, e.from_tid, e.from_cpu, e.ts),
                    secs(e.ts)
                );
            }
            for off in cx.offs(e.to_cpu, r.ts, e.at) {
                let _ = write!(d, "; {off}");
            }
            let mut s = base_sample(cx, r, key, d);
            s.cpu_held_by = cx.holders(e.to_cpu, r.ts, r.end, e.to_tid);
            s
        }
        Src::Span => {
            let sp = &tl.spans;
            let i = r.idx as usize;
            let d = format!("woken by the timer, waited on CPU{}", sp.cpu[i]);
            let mut s = base_sample(cx, r, cx.task(r.tid, r.comm), d);
            s.cpu_held_by = cx.holders(sp.cpu[i], sp.start[i], sp.end[i], r.tid);
            s
        }
        // The timer measure samples no system calls; synthetic ones are stored whole.
        Src::None | Src::Syscall => {
            let rl = tl
                .reported
                .iter()
                .find(|x| x.ts == r.end && x.late_ns == r.value);
            let mut d = match rl.and_then(|x| x.overruns) {
                Some(n) => format!("reported by the traced code, {n} overruns"),
                None => "reported by the traced code".to_string(),
            };
            for off in cx.offs(r.cpu, r.ts, r.end) {
                let _ = write!(d, "; {off}");
            }
            let key = rl.map_or_else(String::new, |x| {
                format!("{} (self-reported)", cx.s.get(x.name))
            });
            base_sample(cx, r, key, d)
        }
    }
}

/// The `timer` measure.
pub(super) struct Timer;

impl Measurer for Timer {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        timer(i.cx, i.o)
    }
}
