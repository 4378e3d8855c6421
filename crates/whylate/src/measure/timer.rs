//! `timer`: hrtimer lateness, expiry to callback to the woken task running.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options, Sample};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Raw, Src, Tally, Unc};
use crate::event::Sym;
use crate::timeline::{span, Ctx, EdgeKind, KindClass, TimerClock, NONE};
use crate::units::secs;
use std::fmt::Write as _;

pub(super) fn timer(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let mut coll = Collector::new();
    let mut unknown = 0u64;
    let clock = TimerClock::new(tl);
    for (ei, e) in tl.edges.iter().enumerate() {
        if e.kind != EdgeKind::Timer {
            continue;
        }
        if e.val == u64::MAX || e.val2 == u64::MAX {
            unknown += 1;
            continue;
        }
        let full = e.val2.saturating_sub(e.val);
        // A timer armed for a time already past (its task overran the period) fires at
        // once: that is the task's lateness, not the timer's. Measure the timer from when
        // it could first have fired.
        let armed_late = clock.armed_late(tl, ei);
        let late = armed_late.unwrap_or(full);
        // Due time in trace time: from there to the task running is the period's
        // lateness, including the callback's wait behind earlier ones in its interrupt.
        let due = clock.due(tl, ei).unwrap_or(e.at);
        let key = timer_key(cx, e);
        let r = Raw {
            ts: e.at.saturating_sub(late),
            end: e.at,
            value: late,
            cpu: e.to_cpu,
            tid: if e.to_tid > 0 { e.to_tid } else { e.from_tid },
            comm: Sym::EMPTY,
            idx: ei as u32,
            src: Src::Edge,
            unc: Unc::default(),
        };
        if !cx.keep(e.at, r.cpu, r.tid, r.comm) {
            continue;
        }
        let sl = coll.get(key.clone(), "lateness");
        sl.count(
            "armed_after_expiry",
            Tally::Plain,
            u64::from(armed_late.is_some()),
        );
        sl.push(cx, r);
        let r = Raw {
            ts: due,
            value: e.at - due,
            ..r
        };
        if e.link == NONE && e.to_tid > 0 {
            // Woke its task before it was off the CPU: no wait after the expiry.
            coll.add(cx, key.clone(), "expiry-to-running", r);
        } else if e.link != NONE {
            let w = &tl.edges[e.link as usize];
            if w.span != NONE {
                let si = w.span as usize;
                let sp = &tl.spans;
                if sp.flags[si] & span::END_UNKNOWN == 0 {
                    let wait = sp.end[si] - sp.start[si];
                    let mut r2 = span_raw(tl, si);
                    r2.value = wait;
                    coll.add(cx, key.clone(), "wakeup-after-expiry", r2);
                    let mut r3 = r;
                    r3.value = sp.end[si].saturating_sub(due);
                    // Its end is the wait's: inferred when the switch-in was not traced.
                    r3.unc = r2.unc;
                    r3.end = sp.end[si];
                    coll.add(cx, key, "expiry-to-running", r3);
                }
            }
        }
    }
    for rl in &tl.reported {
        if !cx.keep(rl.ts, rl.cpu, rl.tid, Sym::EMPTY) {
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
