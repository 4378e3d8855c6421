//! `throughput`: events (or a field summed) per interval against an expected rate.

use super::cx::Cx;
use super::report::{Measure, MeasureReport, Options, ThroughputOpts};
use super::series::{add_u64, base_sample, finish_report, needs, Collector, Raw, Src};
use super::{Input, Measurer};
use crate::event::{Interner, Sym};
use crate::timeline::NONE;

/// Throughput accumulator, fed during the event pass.
#[derive(Debug)]
pub struct Throughput {
    opts: ThroughputOpts,
    name: Option<Sym>,
    start: Option<u64>,
    /// (events, sum) per interval.
    buckets: Vec<(u64, u64)>,
    unsummable: u64,
}

impl Throughput {
    /// A new accumulator.
    pub fn new(opts: ThroughputOpts) -> Throughput {
        Throughput {
            opts,
            name: None,
            start: None,
            buckets: Vec::new(),
            unsummable: 0,
        }
    }

    /// Feeds one event.
    pub fn push(&mut self, e: &crate::event::Event, strings: &Interner) {
        use crate::event::{EventName, Kind};
        let matches = match e.name() {
            EventName::Static(s) => s == self.opts.event,
            EventName::Other(s) => {
                if self.name.is_none() && strings.get(s) == self.opts.event {
                    self.name = Some(s);
                }
                self.name == Some(s)
            }
            n @ (EventName::SysEnter(_) | EventName::SysExit(_)) => {
                n.render(strings) == self.opts.event
            }
        };
        if !matches {
            return;
        }
        let start = *self.start.get_or_insert(e.ts);
        let i = (e.ts.saturating_sub(start) / self.opts.interval_ns.max(1)) as usize;
        if i >= 10_000_000 {
            return;
        }
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, (0, 0));
        }
        let v = match self.opts.field.as_deref() {
            None => 1,
            Some("len") => match &e.kind {
                Kind::Console { msg } => msg.len() as u64 + 1,
                Kind::Print { msg, .. } => msg.len() as u64 + 1,
                _ => {
                    self.unsummable += 1;
                    0
                }
            },
            Some(f) => match &e.kind {
                Kind::Other { fields, .. } => crate::event::fields(fields)
                    .find(|(k, _)| *k == f)
                    .and_then(|(_, v)| crate::event::parse_num(v.as_bytes()))
                    .map_or_else(
                        || {
                            self.unsummable += 1;
                            0
                        },
                        |v| v.max(0) as u64,
                    ),
                _ => {
                    self.unsummable += 1;
                    0
                }
            },
        };
        let b = &mut self.buckets[i];
        b.0 += 1;
        b.1 += v;
    }
}

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
            for (i, &(n, sum)) in t.buckets.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                busy += 1;
                let v = if t.opts.field.is_some() { sum } else { n };
                let rate = (v as u128 * 1_000_000_000 / iv as u128) as u64;
                if let Some(x) = t.opts.expect_per_s {
                    if (rate as f64) < x {
                        below += 1;
                    }
                }
                let ts = start + i as u64 * iv;
                s.push(
                    cx,
                    Raw {
                        ts,
                        end: ts + iv,
                        value: rate,
                        cpu: u32::MAX,
                        tid: -1,
                        comm: Sym::EMPTY,
                        idx: NONE,
                        src: Src::None,
                        uncertain: false,
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
                s.extra
                    .insert("expected_per_s".into(), serde_json::Value::from(x));
                add_u64(&mut s.extra, "intervals_below_expected", below);
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

/// The `throughput` measure.
pub(super) struct ThroughputMeasure;

impl Measurer for ThroughputMeasure {
    fn measure(&self, i: &Input<'_>) -> MeasureReport {
        throughput(i.cx, i.o, i.tput)
    }
}
