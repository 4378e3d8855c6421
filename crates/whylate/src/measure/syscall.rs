//! `syscall`: system call durations, per syscall and task.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options};
use super::series::{base_sample, finish_report, needs, span_raw, Collector, Tally};
use crate::timeline::{span, KindClass, SpanKind};
use rustc_hash::FxHashMap;

pub(super) fn syscall_name(cx: &Cx<'_>, key: u32, flags: u8) -> String {
    cx.tl.syscall_name(cx.s, key, flags)
}

pub(super) fn syscall(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let tl = cx.tl;
    let sp = &tl.spans;
    let mut coll = Collector::new();
    // Each group's syscall, by name and number, for the JSON.
    let mut calls: FxHashMap<String, (String, Option<i64>)> = FxHashMap::default();
    for i in 0..sp.len() {
        if sp.kind[i] != SpanKind::Syscall {
            continue;
        }
        if sp.flags[i] & span::END_UNKNOWN != 0 {
            cx.open.set(cx.open.get() + 1);
            continue;
        }
        let r = span_raw(tl, i);
        if !cx.keep(r.ts, r.cpu, r.tid, r.comm) {
            continue;
        }
        let (key, fl) = (sp.key[i], sp.flags[i]);
        let named = u64::from(fl & span::NAMED != 0);
        let id = (
            (key as u64) << 1 | named,
            (r.tid as u32 as u64) << 32 | r.comm.0 as u64,
        );
        let s = coll.at(id, "duration", || {
            let name = syscall_name(cx, key, fl);
            let label = format!("{name} {}", cx.task(r.tid, r.comm));
            calls.insert(label.clone(), (name, tl.syscall_nr(cx.s, key, fl)));
            label
        });
        let mig = sp.aux[i] as u64;
        s.count("migrations", Tally::Plain, mig);
        s.count("calls_with_migrations", Tally::Plain, u64::from(mig > 0));
        s.push(cx, r);
    }
    let mut rep = finish_report(
        cx,
        Measure::Syscall,
        "system call duration (enter to exit) per syscall and task, with CPU migrations inside the call",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &|cx, r| {
            let sp = &cx.tl.spans;
            let i = r.idx as usize;
            let name = syscall_name(cx, sp.key[i], sp.flags[i]);
            let key = format!("{} {}", name, cx.task(r.tid, r.comm));
            let d = format!(
                "{name} entered on CPU{}, {} migration(s) before it returned",
                r.cpu, sp.aux[i]
            );
            base_sample(cx, r, key, d)
        },
    );
    for g in &mut rep.groups {
        if let Some((name, nr)) = calls.get(&g.key) {
            g.extra.insert("syscall".into(), name.clone().into());
            if let Some(nr) = nr {
                g.extra.insert("nr".into(), (*nr).into());
            }
        }
    }
    if tl.saw(KindClass::RawSyscall) + tl.saw(KindClass::Syscall) == 0 {
        rep.missing_events.push(needs(
            Measure::Syscall,
            "syscall durations",
            &[
                "raw_syscalls:sys_enter",
                "raw_syscalls:sys_exit (or syscalls:sys_enter_*/sys_exit_*)",
            ],
        ));
    }
    rep
}

/// The `syscall` measure.
pub(super) struct Syscall;

impl Measurer for Syscall {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        syscall(i.cx, i.o)
    }
}
