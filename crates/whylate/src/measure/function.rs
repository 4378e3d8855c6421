//! `function`: function_graph call durations per function — count, quantiles, total and
//! self time (children subtracted), and for the worst calls their call path and what ran
//! inside them.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::report::{Measure, MeasureReport, Options};
use super::series::{add_u64, base_sample, finish_report, needs, Collector, Raw, Src, Tally, Unc};
use crate::timeline::{Call, KindClass, NONE};
use crate::units::dur;
use rustc_hash::FxHashMap;

/// Children listed under a worst call, at most.
const INSIDE: usize = 3;

pub(super) fn function(cx: &Cx<'_>, o: &Options) -> MeasureReport {
    let calls = &cx.tl.calls;
    let mut coll = Collector::new();
    // Per function: total and self time; and each group's function.
    let mut selves: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
    let mut group_of: FxHashMap<String, u32> = FxHashMap::default();
    let mut unseen = 0u64;
    let mut open: Vec<&str> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let name = cx.s.get(c.func);
        if c.exit_unseen {
            // Only named as a caller: how long it ran is not known.
            if !open.contains(&name) {
                open.push(name);
            }
            continue;
        }
        if o.func.as_ref().is_some_and(|g| !g.is_match(name)) {
            continue;
        }
        if !cx.keep(c.start, c.exit, c.cpu, c.tid, crate::event::Sym::EMPTY) {
            continue;
        }
        unseen += u64::from(c.entry_unseen);
        let s = coll.at((c.func.0 as u64, 0), "duration", || {
            group_of.insert(name.to_string(), c.func.0);
            name.to_string()
        });
        s.count("tasks", Tally::Task(c.tid, cx.tl.comm(c.tid)), 1);
        let e = selves.entry(c.func.0).or_default();
        e.0 += c.dur;
        e.1 += c.self_ns;
        s.push(
            cx,
            Raw {
                ts: c.start,
                end: c.start + c.dur,
                value: c.dur,
                cpu: c.cpu,
                tid: c.tid,
                comm: crate::event::Sym::EMPTY,
                idx: i as u32,
                src: Src::None,
                unc: Unc {
                    inferred: c.entry_unseen,
                    ..Unc::default()
                },
            },
        );
    }
    let tree = Tree::of(calls);
    let mut rep = finish_report(
        cx,
        Measure::Function,
        "function call duration (function_graph), per function, with its self time (less its direct children) and, for the worst calls, the caller chain and what ran inside",
        "ns",
        coll,
        o.top,
        o.raw_samples,
        &|cx, r| {
            let c = &calls[r.idx as usize];
            base_sample(cx, r, cx.s.get(c.func).to_string(), tree.words(cx, c))
        },
    );
    for g in &mut rep.groups {
        if let Some((total, own)) = group_of.get(&g.key).and_then(|f| selves.get(f)) {
            add_u64(&mut g.extra, "total_ns", *total);
            add_u64(&mut g.extra, "self_ns", *own);
        }
    }
    if unseen > 0 {
        rep.notes.push(format!(
            "{unseen} calls were entered before the trace began: known by the duration the tracer printed; their self time includes children the trace does not show"
        ));
    }
    if !open.is_empty() && cx.settle.is_last() {
        rep.notes.push(format!(
            "still running when the trace ended, so not measured (named as callers only): {}",
            open.join(", ")
        ));
    }
    if cx.tl.saw(KindClass::Function) == 0 {
        rep.missing_events.push(needs(
            Measure::Function,
            "function durations",
            &["function_graph (trace-cmd record -p function_graph -g FUNC)"],
        ));
    }
    rep
}

/// Calls by entry number, and each call's direct children.
struct Tree<'a> {
    calls: &'a [Call],
    by_id: FxHashMap<u32, usize>,
    children: FxHashMap<u32, Vec<usize>>,
}

impl<'a> Tree<'a> {
    fn of(calls: &'a [Call]) -> Tree<'a> {
        let mut by_id = FxHashMap::default();
        let mut children: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        for (i, c) in calls.iter().enumerate() {
            by_id.insert(c.id, i);
            if c.parent != NONE {
                children.entry(c.parent).or_default().push(i);
            }
        }
        Tree {
            calls,
            by_id,
            children,
        }
    }

    /// `self 12.0 us (3%); called from b <- a; inside: f 400.1 us (96%, 3 calls), g 2.0 us`.
    fn words(&self, cx: &Cx<'_>, c: &Call) -> String {
        let mut path = Vec::new();
        let mut p = c.parent;
        while let Some(&i) = self.by_id.get(&p) {
            if path.len() == 8 {
                path.push("...".to_string());
                break;
            }
            path.push(cx.s.get(self.calls[i].func).to_string());
            p = self.calls[i].parent;
        }
        // What ran inside, by function: total time and calls.
        let mut inside: Vec<(u64, u64, crate::event::Sym)> = Vec::new();
        for &k in self.children.get(&c.id).map_or(&[][..], |v| &v[..]) {
            let ch = &self.calls[k];
            match inside.iter_mut().find(|x| x.2 == ch.func) {
                Some(x) => {
                    x.0 += ch.dur;
                    x.1 += 1;
                }
                None => inside.push((ch.dur, 1, ch.func)),
            }
        }
        inside.sort_by_key(|x| std::cmp::Reverse(x.0));
        let share = |d: u64| d as f64 * 100.0 / c.dur.max(1) as f64;
        let mut w = format!("self {} ({:.0}%)", dur(c.self_ns), share(c.self_ns));
        if !path.is_empty() {
            w += &format!("; called from {}", path.join(" <- "));
        }
        if !inside.is_empty() {
            let list: Vec<String> = (inside.iter().take(INSIDE))
                .map(|(d, n, f)| {
                    let calls = if *n > 1 {
                        format!(", {n} calls")
                    } else {
                        String::new()
                    };
                    format!("{} {} ({:.0}%{calls})", cx.s.get(*f), dur(*d), share(*d))
                })
                .collect();
            w += &format!("; inside: {}", list.join(", "));
        }
        w
    }
}

/// The `function` measure.
pub(super) struct Function;

impl Measurer for Function {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        function(i.cx, i.o)
    }
}
