//! `latency` in bounded memory: a trace longer than a window is read once, in windows
//! ([`pipeline::read_windowed`]), each window's timeline measured as soon as it is
//! complete and dropped, the measures merged ([`measure::Merged`]).
//!
//! Each window settles the samples that *end* in its own stretch (a window's timeline
//! starts from what the one before knew, [`crate::timeline::Builder::carried`], so a
//! sample that began in an earlier window, a system call of minutes, is whole in the
//! window it ends in), and the samples open at the trace's end are the last window's.
//! So counts, sums, extremes and histograms are the whole trace's; quantiles come from
//! merged sketches, exact while a group takes at most [`crate::dist::Sketch::EXACT`]
//! distinct values, else to 8 significant bits.

use super::{assemble, latency, LatencyReport, Parts, Seen};
use crate::event::{Event, Interner};
use crate::measure::{self, Bound, Filter, Measure, Merged, Options, Settle, TracerSample};
use crate::pipeline::{self, Done, Sink, Windowing};
use crate::read::{OpenOptions, Opened, ReadError};
use crate::timeline::{span, Anomalies, Timeline};

/// How `latency` cuts a trace into windows: as [`Windowing::DEFAULT`], with 20 ms of
/// context past each window's stretch, the reach of the hrtimer clock's estimate
/// ([`crate::timeline::TimerClock`]), so that a timer period is measured against the
/// neighbours the whole trace would give it.
pub const WINDOWING: Windowing = Windowing {
    after_ns: Windowing::CLOCK_AFTER_NS,
    ..Windowing::DEFAULT
};

/// Measures the inputs, in windows of `w` when the trace is longer than one (not for a
/// throughput count or a listing of every sample, which are made over the whole trace).
pub fn latency_in(
    inputs: Opened,
    open: &OpenOptions,
    opts: &Options,
    tput: Option<measure::ThroughputOpts>,
    w: Windowing,
) -> Result<LatencyReport, ReadError> {
    if w.events == 0 || tput.is_some() || opts.raw_samples {
        return latency(inputs, open, opts, tput);
    }
    in_windows(inputs, open, opts, w)
}

/// A window's sink: the measures read its timeline alone.
struct Nothing;

impl Sink for Nothing {
    fn event(&mut self, _: &Event, _: &Interner) {}
}

/// A window handed to the worker that measures it.
struct Job {
    tl: Timeline,
    strings: Interner,
    settle: Settle,
    /// The latency tracers' dump headers, samples of the trace as a whole: the last
    /// window's.
    tracers: Vec<TracerSample>,
}

fn in_windows(
    inputs: Opened,
    open: &OpenOptions,
    opts: &Options,
    w: Windowing,
) -> Result<LatencyReport, ReadError> {
    let mut whole: Option<Timeline> = None;
    let mut last: Option<Job> = None;
    // Each window is measured on a thread of its own while the next is read; the
    // rendezvous holds at most one window in measuring.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(0);
    let (facts, acc) = std::thread::scope(|sc| {
        let worker = sc.spawn(move || {
            let mut acc = Acc::new(opts);
            for job in rx {
                acc.add(job);
            }
            acc
        });
        let facts = pipeline::read_windowed(
            inputs,
            open,
            w,
            || Nothing,
            |d: Done<'_, Nothing>| {
                if d.index == 0 && d.last {
                    // The trace fitted one window: measured as a whole, below.
                    whole = Some(d.tl);
                    return Ok(());
                }
                let settle = Settle {
                    lo: d.lo,
                    cut: d.cut,
                    spans: d.tl.own_spans,
                };
                let job = Job {
                    tl: d.tl,
                    strings: d.strings.clone(),
                    settle,
                    tracers: Vec::new(),
                };
                match d.last {
                    // Measured once the headers are known, below.
                    true => last = Some(job),
                    // The worker ends only by a panic, which the join below hands on.
                    false => {
                        let _ = tx.send(job);
                    }
                }
                Ok(())
            },
        );
        if let (Ok(f), Some(mut job)) = (&facts, last.take()) {
            job.tracers.clone_from(&f.tracers);
            let _ = tx.send(job);
        }
        drop(tx);
        let acc = worker
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (facts, acc)
    });
    let facts = facts?;
    crate::read::inputs::Unread::nothing_read(&facts.inputs, facts.events)?;
    if let Some(tl) = whole {
        let pass = facts.into_pass(tl);
        return Ok(super::report(pass, opts, None));
    }
    let quantiles = match acc.merged.exact() {
        true => "quantiles exact",
        false => "quantiles to 8 significant bits",
    };
    let mut measures = acc.merged.finish();
    if opts.measures.is_empty() {
        measures.sort_by_key(|r| Measure::ALL.iter().position(|m| *m == r.measure));
    }
    let windows = facts.windows;
    let mut r = assemble(
        facts.inputs,
        facts.events,
        acc.seen,
        acc.parts,
        measures,
        &opts.filter,
    );
    r.notes.push(format!(
        "measured in {windows} windows of {} events, each dropped once measured (memory bounded by a window, not the trace): each sample counted by the window it ends in, {quantiles}; --window-events 0 holds the whole trace",
        w.events
    ));
    Ok(r)
}

/// What the windows add up to.
struct Acc<'o> {
    opts: &'o Options,
    merged: Merged,
    seen: Seen,
    parts: Parts,
    /// The lost-event windows already in `parts`.
    lost_seen: rustc_hash::FxHashSet<(u32, u64, u64, Option<u64>)>,
}

impl<'o> Acc<'o> {
    fn new(opts: &'o Options) -> Acc<'o> {
        Acc {
            opts,
            merged: Merged::new(opts.top),
            seen: Seen::default(),
            parts: Parts {
                spans: 0,
                edges: 0,
                lost: Vec::new(),
                anomalies: Anomalies::default(),
            },
            lost_seen: Default::default(),
        }
    }

    /// The options of a window: `--window`'s bounds after the first event made
    /// absolute (a window's own first event is not the trace's).
    fn opts(&self, first: u64) -> Options {
        let abs = |b: Option<Bound>| match b {
            Some(Bound::Rel(v)) => Some(Bound::Abs(first.saturating_add(v))),
            b => b,
        };
        Options {
            filter: Filter {
                window: (
                    abs(self.opts.filter.window.0),
                    abs(self.opts.filter.window.1),
                ),
                ..self.opts.filter.clone()
            },
            ..self.opts.clone()
        }
    }

    /// Measures one window and adds what it settles.
    fn add(&mut self, j: Job) {
        self.seen.add(&j.tl);
        let o = Options {
            settle: j.settle,
            ..self.opts(self.seen.first_ns())
        };
        let r = measure::compute(&j.tl, &j.strings, &o, &j.tracers, None);
        self.merged.add(r);
        let tl = &j.tl;
        let s = j.settle;
        let settled = |ours: bool, flags: u8| match flags & span::END_UNKNOWN {
            0 => ours,
            _ => s.is_last(),
        };
        let sp = &tl.spans;
        self.parts.spans += (0..sp.len())
            .filter(|&i| settled(s.span(i, sp.end[i]), sp.flags[i]))
            .count() as u64;
        self.parts.spans += (tl.syscalls.iter())
            .filter(|(_, c)| settled(s.ends(c.end), c.flags))
            .count() as u64;
        self.parts.edges += tl.own_edges;
        for l in &tl.lost {
            // Neighbours share the losses in their overlap, and a window carries those
            // an open sample crosses.
            if self.lost_seen.insert((l.cpu, l.from, l.to, l.count)) {
                self.parts.lost.push(*l);
            }
        }
        let own = tl.own_anomalies.as_ref().unwrap_or(&tl.anomalies);
        self.parts.anomalies.add(own);
    }
}

#[cfg(test)]
mod tests {
    use super::{in_windows, WINDOWING};
    use crate::measure::{Measure, Options};
    use crate::pipeline::Windowing;
    use crate::read::OpenOptions;
    use crate::testkit::{line, opened};

    /// A read that blocks from the first event to the last while another task makes
    /// 2,000 short calls: in windows of 100 events it spans every window, and the window
    /// it ends in measures it whole (its entry carried from the first), so the report
    /// equals the whole trace's and the first note says how it was made.
    #[test]
    fn a_call_longer_than_every_window_is_measured_whole_once() {
        let mut t = line(1_000, 1, "poll-7", "....", "sys_enter: NR 0 (3, 0, 1)");
        for k in 0..2_000u64 {
            let at = 2_000 + k * 100;
            t += &line(at, 0, "dd-9", "....", "sys_enter: NR 1 (1, 0, 1)");
            t += &line(at + 7 + k % 5, 0, "dd-9", "....", "sys_exit: NR 1 = 1");
        }
        t += &line(
            2_000 + 2_000 * 100,
            1,
            "poll-7",
            "....",
            "sys_exit: NR 0 = 1",
        );
        let o = Options {
            measures: vec![Measure::Syscall],
            ..Options::default()
        };
        let open = OpenOptions::default();
        let whole = crate::latency::latency(opened(&t), &open, &o, None).unwrap();
        let w = Windowing {
            events: 100,
            ..WINDOWING
        };
        let parts = in_windows(opened(&t), &open, &o, w).unwrap();
        let groups = |r: &crate::latency::LatencyReport| -> Vec<(String, u64, u64, u64, u64)> {
            (r.measures[0].groups.iter())
                .map(|g| (g.key.clone(), g.count, g.min_ns, g.p50_ns, g.max_ns))
                .collect()
        };
        assert_eq!(
            groups(&parts),
            [
                (
                    "read poll[7]".to_string(),
                    1,
                    201_000_000,
                    201_000_000,
                    201_000_000
                ),
                ("write dd[9]".to_string(), 2_000, 7_000, 9_000, 11_000),
            ]
        );
        assert_eq!(groups(&parts), groups(&whole));
        assert_eq!((parts.spans, parts.edges), (whole.spans, whole.edges));
        let note = parts.notes.last().unwrap();
        assert!(
            note.starts_with("measured in ") && note.contains("quantiles exact"),
            "{note}"
        );
    }
}
