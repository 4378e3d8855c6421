//! `throughput`: events (or a field summed) per interval against an expected rate.

use super::cx::Cx;
use super::measurer::{Input, Measurer};
use super::rate::Throughput;
use super::report::{Measure, MeasureReport, Options};
use super::series::{add_u64, base_sample, finish_report, needs, Collector, Raw, Src, Unc};
use crate::event::Sym;
use crate::timeline::NONE;

pub(super) fn throughput(cx: &Cx<'_>, o: &Options, t: Option<&Throughput>) -> MeasureReport {
    let mut coll = Collector::new();
    let mut notes = Vec::new();
    let mut missing = Vec::new();
    match t {
        None => missing.push(needs(
            Measure::Throughput,
            "throughput (say which events: --event NAME)",
            &["any event"],
        )),
        Some(t) if t.start.is_none() => missing.push(needs(
            Measure::Throughput,
            &format!("throughput of {}", t.opts.event),
            &[t.opts.event.as_str()],
        )),
        Some(t) => {
            let iv = t.opts.interval_ns.max(1);
            let start = t.start.unwrap_or(0);
            let metric: &'static str = if t.opts.field.is_some() {
                "sum-per-second"
            } else {
                "events-per-second"
            };
            let key = match &t.opts.field {
                Some(f) => format!("{} {}", t.opts.event, f),
                None => t.opts.event.clone(),
            };
            let s = coll.get(key, metric);
            let mut busy = 0u64;
            let mut below = 0u64;
            // Over the intervals counted: their events (or sum) and the time they cover.
            let (mut counted, mut active_ns) = (0u64, 0u64);
            let end = cx.tl.last_ts.max(start);
            for (i, &(n, sum)) in t.buckets.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                let ts = start + i as u64 * iv;
                // The trace may end inside the last interval: a rate over the part it
                // covers, or none when that part is under a tenth of an interval.
                let covered = (end - ts).clamp(1, iv);
                if covered < iv {
                    if covered * 10 < iv {
                        notes.push(format!(
                            "the last interval is left out: the trace covers only {} of its {}",
                            crate::units::dur(covered),
                            crate::units::dur(iv)
                        ));
                        continue;
                    }
                    notes.push(format!(
                        "the last interval covers {} of {}: its rate is over that part",
                        crate::units::dur(covered),
                        crate::units::dur(iv)
                    ));
                }
                busy += 1;
                let v = if t.opts.field.is_some() { sum } else { n };
                counted += v;
                active_ns += covered;
                let rate = (v as u128 * 1_000_000_000 / covered as u128) as u64;
                if let Some(x) = t.opts.expect_per_s {
                    if (rate as f64) < x {
                        below += 1;
                    }
                }
                s.push(
                    cx,
                    Raw {
                        ts,
                        end: ts + covered,
                        value: rate,
                        cpu: u32::MAX,
                        tid: -1,
                        comm: Sym::EMPTY,
                        idx: NONE,
                        src: Src::None,
                        unc: Unc::default(),
                    },
                );
            }
            let total: u64 = t
                .buckets
                .iter()
                .map(|b| if t.opts.field.is_some() { b.1 } else { b.0 })
                .sum();
            add_u64(&mut s.extra, "intervals_with_events", busy);
            add_u64(&mut s.extra, "interval_ns", iv);
            add_u64(&mut s.extra, "total", total);
            if let Some(x) = t.opts.expect_per_s {
                let v = Verdict {
                    expect: x,
                    busy,
                    below,
                    counted,
                    active_ns,
                };
                if let Some(n) = v.add_to(&mut s.extra, &t.opts.event) {
                    notes.insert(0, n);
                }
            }
            if t.unsummable > 0 {
                notes.push(format!(
                    "{} events had no numeric `{}` and count as 0",
                    t.unsummable,
                    t.opts.field.as_deref().unwrap_or("")
                ));
            }
        }
    }
    let expect = t.and_then(|t| t.opts.expect_per_s);
    let mut coll_rep = finish_report(
        cx,
        Measure::Throughput,
        "throughput: events (or the sum of a field) per second, per interval in which the stream was active",
        "per_s",
        coll,
        o.top,
        o.raw_samples,
        &move |cx, r| {
            let d = match expect {
                Some(x) => format!("{:.0}/s in this interval, {:.0}% of the expected {x:.0}/s", r.value as f64, r.value as f64 * 100.0 / x),
                None => format!("{}/s in this interval", r.value),
            };
            base_sample(cx, r, String::new(), d)
        },
    );
    // For a stream that should keep up, the slowest busy intervals are the news.
    for g in &mut coll_rep.groups {
        if expect.is_some() {
            g.worst.reverse();
        }
        for w in &mut g.worst {
            w.group = g.key.clone();
        }
    }
    if expect.is_some() {
        coll_rep.worst = coll_rep
            .groups
            .iter()
            .flat_map(|g| g.worst.iter().cloned())
            .collect();
    }
    coll_rep.missing_events = missing;
    coll_rep.notes = notes;
    coll_rep
}

/// The stream against its expected rate, over the intervals it was active.
struct Verdict {
    expect: f64,
    busy: u64,
    below: u64,
    /// Events (or the field's sum) in those intervals, and the time they cover.
    counted: u64,
    active_ns: u64,
}

impl Verdict {
    /// Adds the group's `expected_per_s`, `intervals_below_expected`, `share_of_expected`;
    /// returns the verdict line (none when no interval counted).
    fn add_to(
        &self,
        extra: &mut serde_json::Map<String, serde_json::Value>,
        event: &str,
    ) -> Option<String> {
        let (x, below) = (self.expect, self.below);
        extra.insert("expected_per_s".into(), serde_json::Value::from(x));
        add_u64(extra, "intervals_below_expected", below);
        if self.active_ns == 0 {
            return None;
        }
        let rate = self.counted as f64 * 1e9 / self.active_ns as f64;
        extra.insert(
            "share_of_expected".into(),
            serde_json::Value::from(rate / x),
        );
        Some(format!(
            "{event} ran at {rate:.0}/s over the {} interval(s) it was active ({}), {:.0}% of the expected {x:.0}/s; {below} interval(s) below it",
            self.busy,
            crate::units::dur(self.active_ns),
            rate * 100.0 / x
        ))
    }
}

/// The `throughput` measure.
pub(super) struct ThroughputMeasure;

impl Measurer for ThroughputMeasure {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        throughput(i.cx, i.o, i.tput)
    }
}
