//! The pass in windows: a trace too long to hold as one timeline is read once, and its
//! events build one timeline per window of about [`Windowing::events`] events, each
//! analysed and dropped as soon as nothing after it can change its answer. Memory is then
//! bounded by a window, not by the trace.
//!
//! Each window *settles* the samples of its own stretch, `[lo, cut)`: explain's cycles
//! that start in it (held as below until they end), latency's samples that close in it
//! (a sample begun windows earlier is whole in it, from the state carried). When a
//! window is full, the next one starts at once (its own builder and sink, fed the same
//! events from then on, starting from what the full one's builder knows of each CPU and
//! task then, [`Builder::carried`]) and the full one's `cut` is set `before` into the
//! future: the next window then holds `before` of context ahead of the first sample it
//! settles (the look-back of a chain). The full window is fed on until every
//! sample it settles has ended (its sink's [`Sink::oldest_open`] is past its cut) and
//! `after` more, so each sample is analysed whole, by one window, with the context the
//! whole trace would give it. A sample still open when the window has taken as many
//! events again is settled as its window saw it, and the window says so ([`Done::forced`]).

use super::{mark_cut_cpus, read_done, Sink, Start};
use crate::event::{Event, Interner};
use crate::read::each_event;
use crate::read::inputs::{Inputs, TracerSample};
use crate::read::{self, EventSource, Merged, OpenOptions, Opened, ReadError};
use crate::snapshot::Snapshot;
use crate::timeline::{Builder, KindClass, Timeline};

/// How a pass is cut into windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windowing {
    /// Events a window takes before the next begins (0: one window, the whole trace).
    pub events: u64,
    /// Context a window holds ahead of the first sample it settles, ns.
    pub before_ns: u64,
    /// Context a window holds past the last sample it settles, ns.
    pub after_ns: u64,
}

impl Windowing {
    /// Context past a window's stretch that measures a late timer as the whole trace
    /// does: the reach of the hrtimer clock's estimate (its neighbours within 20 ms,
    /// [`crate::timeline::TimerClock`]).
    pub const CLOCK_AFTER_NS: u64 = 20_000_000;

    /// Four million events a window (about 20 MB of timeline for a system-call trace;
    /// the bench in docs/benchmarks.md chose it), 60 ms of context ahead (a chain's
    /// look-back for a softirq backlog is 50 ms) and 10 ms behind.
    pub const DEFAULT: Windowing = Windowing {
        events: 4_000_000,
        before_ns: 60_000_000,
        after_ns: 10_000_000,
    };
}

/// Which samples a window of a long trace settles: those that begin in its own stretch
/// `[lo, cut)` and ended before it closed (it saw them whole, with their context), and
/// those that began earlier but ended after the window before it had closed (that one
/// was closed with them open, after taking as many events again; this one has them whole
/// from the state carried, with who held each CPU since they began). Each sample is
/// settled once, by one window.
#[derive(Clone, Copy, Debug)]
pub struct Stretch {
    /// The stretch's start.
    pub lo: u64,
    /// The stretch's end.
    pub cut: u64,
    /// When the window before closed (its last event; 0 for the first).
    pub before: u64,
    /// When this window closed (`u64::MAX` for the last).
    pub close: u64,
}

impl Stretch {
    /// Whether it settles a sample from `start` to `end`.
    pub fn settles(&self, start: u64, end: u64) -> bool {
        let seen = end <= self.close;
        let own = (self.lo..self.cut).contains(&start);
        seen && (own || (start < self.lo && end > self.before))
    }
}

/// Windows open at once at most: the one filling, the one before it until its cycles end,
/// and one being forced out.
const MAX_OPEN: usize = 3;

/// A window the pass is done with.
pub struct Done<'a, S> {
    /// Its timeline.
    pub tl: Timeline,
    /// The pass's strings (shared by every window).
    pub strings: &'a Interner,
    /// Its sink, as the events left it.
    pub sink: S,
    /// It settles the samples that start in `[lo, cut)`.
    pub lo: u64,
    /// See `lo` (`u64::MAX` for the last window).
    pub cut: u64,
    /// Its place, from 0.
    pub index: u64,
    /// The last window (the trace ended in it).
    pub last: bool,
    /// Closed with a sample it settles still open (it had taken as many events again).
    pub forced: bool,
}

/// What a windowed pass gives besides its windows.
pub struct Facts {
    /// Per-input facts and notes.
    pub inputs: Inputs,
    /// Events read.
    pub events: u64,
    /// Latency-tracer dump headers.
    pub tracers: Vec<TracerSample>,
    /// The first input's record-time snapshot.
    pub snapshot: Option<Snapshot>,
    /// The strings.
    pub strings: Interner,
    /// Windows the pass was cut into.
    pub windows: u64,
    /// Windows fed past their cut and `after` because a sample they settle was open.
    pub held: u64,
}

impl Facts {
    /// The pass of a trace that fitted one window, `tl` its timeline.
    pub fn into_pass(self, tl: Timeline) -> super::Pass {
        super::Pass {
            tl,
            strings: self.strings,
            inputs: self.inputs,
            events: self.events,
            tracers: self.tracers,
            snapshot: self.snapshot,
        }
    }
}

/// One window being fed.
struct Open<S> {
    b: Builder,
    sink: S,
    lo: u64,
    cut: u64,
    events: u64,
    /// Events taken since the cut was set.
    past_cut: u64,
    /// When (in `past_cut`) to ask the sink again whether a sample is open.
    ask_at: u64,
}

/// The windows being fed and what each hands over when done.
struct Windows<'w, S, N, D> {
    w: Windowing,
    open: Vec<Open<S>>,
    new_sink: N,
    done: D,
    made: u64,
    closed: u64,
    start: &'w Start,
    /// Every input's snapshot, for each window's sink (the descriptors `path=` reads).
    snapshots: &'w [Snapshot],
    error: Option<ReadError>,
    /// Some window named raw syscall numbers.
    raw: bool,
    /// See [`Facts::held`].
    held: u64,
    /// The oldest window was found with a sample open past its cut and `after`.
    holding: bool,
    /// The oldest window is done: it closes at the first event later than this time
    /// (whether it was forced), so that every event of its last instant is in it.
    closing: Option<(u64, bool)>,
}

impl<S: Sink, N: FnMut() -> S, D: FnMut(Done<'_, S>) -> Result<(), ReadError>>
    Windows<'_, S, N, D>
{
    fn begin(&mut self, lo: u64) {
        let mut sink = (self.new_sink)();
        for s in self.snapshots {
            sink.snapshot(s);
        }
        sink.arch(self.start.arch);
        self.made += 1;
        // What the window before knows of each CPU and task now, the new one starts from.
        let mut b = self
            .open
            .last()
            .map_or_else(Builder::new, |o| o.b.carried());
        b.own_stretch(lo, u64::MAX);
        self.open.push(Open {
            b,
            sink,
            lo,
            cut: u64::MAX,
            events: 0,
            past_cut: 0,
            ask_at: 0,
        });
    }

    fn feed(&mut self, e: &Event, strings: &Interner) {
        // A window closes between two instants: a sample that ends at its last event's
        // time is then in it whole, and the window after settles none that end by then
        // (`Stretch::before`). An instant of more events than a window takes (a clock
        // that stood still) is cut after as many events again, to bound memory.
        if let Some((t, forced)) = self.closing {
            if e.ts > t || self.open[0].past_cut >= 2 * self.w.events.max(1) {
                self.closing = None;
                self.close(strings, None, forced);
            }
        }
        let newest = self.open.last().expect("a window is always open");
        // A window takes at least the context its neighbours overlap it by: with a few
        // events a window, a window begun at each one would be fed every event of the
        // next 70 ms, and as many windows held at once.
        let room = self.open.len() < MAX_OPEN;
        if self.w.events > 0 && newest.events >= self.w.events && newest.cut == u64::MAX && room {
            let cut = e.ts.saturating_add(self.w.before_ns);
            let newest = self.open.last_mut().expect("just seen");
            newest.cut = cut;
            newest.b.own_stretch(newest.lo, cut);
            self.begin(cut);
        }
        for o in &mut self.open {
            o.events += 1;
            o.past_cut += u64::from(o.cut != u64::MAX);
            let late = o.b.is_late(e.ts);
            o.b.push(e, strings);
            match late {
                false => o.sink.event(e, strings),
                true => o.sink.late(e, strings),
            }
        }
        // Only the oldest can be done: windows end in the order they began.
        let first = &mut self.open[0];
        // The window filling (no cut yet) is never done: an event at the clock's last
        // value would otherwise close the only window open.
        let due = first.cut != u64::MAX && e.ts >= first.cut.saturating_add(self.w.after_ns);
        // Asking the sink costs a walk over its open samples: when due, then every 4096
        // events while a sample is open.
        if due && self.closing.is_none() && first.past_cut >= first.ask_at.min(self.w.events) {
            first.ask_at = first.past_cut + 4096;
            let timeline = (first.sink.settles_timeline_samples())
                .then(|| first.b.oldest_sample())
                .flatten();
            let oldest = match (first.sink.oldest_open(), timeline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let settled = oldest.is_none_or(|t| t >= first.cut);
            let forced = !settled && first.past_cut >= self.w.events;
            if !settled && !self.holding {
                (self.holding, self.held) = (true, self.held + 1);
            }
            if settled || forced {
                self.holding = false;
                self.closing = Some((e.ts, forced));
            }
        }
    }

    /// Hands the oldest window over; `last` with the inputs, whose CPUs cut short are
    /// marked blind in it.
    fn close(&mut self, strings: &Interner, last: Option<&[read::Input]>, forced: bool) {
        let o = self.open.remove(0);
        let mut tl = self.start.timeline(o.b, strings);
        if let Some(sources) = last {
            mark_cut_cpus(&mut tl, sources);
        }
        self.raw |= tl.saw(KindClass::RawSyscall) > 0;
        let done = Done {
            tl,
            strings,
            sink: o.sink,
            lo: o.lo,
            cut: o.cut,
            index: self.closed,
            last: last.is_some(),
            forced,
        };
        self.closed += 1;
        if self.error.is_none() {
            if let Err(e) = (self.done)(done) {
                self.error = Some(e);
            }
        }
    }
}

/// Reads the inputs once, in windows: `new_sink` makes each window's sink, `done` is
/// handed each window in order as soon as it is complete (the last with the trace's cut
/// CPUs marked blind). An error from `done` ends the pass after the read.
pub fn read_windowed<S: Sink>(
    inputs: Opened,
    open: &OpenOptions,
    w: Windowing,
    new_sink: impl FnMut() -> S,
    mut done: impl FnMut(Done<'_, S>) -> Result<(), ReadError>,
) -> Result<Facts, ReadError> {
    let (paths, sources) = inputs.into_parts();
    let mut snapshots = Vec::new();
    let start = Start::of(&sources, open, |s| snapshots.push(s.clone()));
    // A CPU whose data the file cuts short is blind from its last event on, which only
    // the end of the read knows: a window before it would blame the task left running
    // there. Such a trace is read as one window.
    let cut = sources.iter().any(|s| !s.diag().cut_cpus.is_empty());
    let w = match cut {
        true => Windowing { events: 0, ..w },
        false => w,
    };
    let merged = Merged::new(sources);
    let mut per_input = vec![0u64; paths.len()];
    let mut events = 0;
    let mut ws = Windows {
        w,
        open: Vec::new(),
        new_sink,
        done: &mut done,
        made: 0,
        closed: 0,
        start: &start,
        snapshots: &snapshots,
        error: None,
        raw: false,
        held: 0,
        holding: false,
        closing: None,
    };
    ws.begin(0);
    let mut feed = |i: usize, e: &Event, strings: &Interner| {
        per_input[i] += 1;
        events += 1;
        read::Progress::tick(&open.progress, events);
        ws.feed(e, strings);
    };
    let (merged, strings) = each_event(merged, &mut feed)?;
    read_done(open, events);
    if let Some((_, forced)) = ws.closing.take() {
        ws.close(&strings, None, forced);
    }
    while ws.open.len() > 1 {
        ws.close(&strings, None, false);
    }
    ws.close(&strings, Some(merged.sources()), false);
    if let Some(e) = ws.error.take() {
        return Err(e);
    }
    let (windows, raw, held) = (ws.made, ws.raw, ws.held);
    let (inputs, tracers) = start.describe(&merged, &paths, &per_input, &strings, raw);
    Ok(Facts {
        inputs,
        events,
        tracers,
        snapshot: start.snapshot,
        strings,
        windows,
        held,
    })
}

#[cfg(test)]
mod tests {
    use super::{read_windowed, Windowing};
    use crate::event::{Event, Interner};
    use crate::pipeline::Sink;
    use crate::testkit::{line, opened};

    /// A sink that sees every event and says a sample opened at `open` stays open.
    struct Open(u64, Option<u64>);
    impl Sink for Open {
        fn event(&mut self, _: &Event, _: &Interner) {
            self.0 += 1;
        }
        fn oldest_open(&self) -> Option<u64> {
            self.1
        }
    }

    fn trace(n: u64) -> String {
        (0..n)
            .map(|k| line(1_000 + k * 100, 0, "a-1", "....", "sys_exit: NR 0 = 0"))
            .collect()
    }

    /// 1,000 events 100 us apart in windows of 100 with 1 ms of context ahead: each
    /// window settles `[lo, cut)`, the stretches follow each other with no gap, each
    /// cut is 1 ms (ten events) past the next window's first event, and a window is fed
    /// until `after` past its cut.
    #[test]
    fn windows_settle_stretches_that_follow_each_other() {
        let w = Windowing {
            events: 100,
            before_ns: 1_000_000,
            after_ns: 500_000,
        };
        let mut seen = Vec::new();
        let opts = crate::read::OpenOptions::default();
        let facts = read_windowed(
            opened(&trace(1_000)),
            &opts,
            w,
            || Open(0, None),
            |d| {
                let first = d.tl.first_ts.unwrap();
                seen.push((d.lo, d.cut, first, d.tl.last_ts, d.sink.0, d.last, d.forced));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!((facts.events, facts.windows, facts.held), (1_000, 10, 0));
        assert_eq!(seen.len(), 10);
        let ts = |k: u64| 1_000_000 + k * 100_000;
        for (i, &(lo, cut, first, last, events, is_last, forced)) in seen.iter().enumerate() {
            let i = i as u64;
            assert!(!forced);
            assert_eq!(is_last, i == 9);
            // Each window begins at the event that filled the one before (its lo is
            // 1 ms later) and takes 100 events before the next begins.
            let begins = ts(i * 100);
            assert_eq!(first, begins);
            assert_eq!(lo, if i == 0 { 0 } else { begins + 1_000_000 });
            if i < 9 {
                assert_eq!(cut, ts((i + 1) * 100) + 1_000_000);
                // Fed up to `after` past its cut, that event included: its 100, the
                // one that filled it (the next window's first) and 15 more.
                assert_eq!(last, cut + 500_000);
                assert_eq!(events, 116);
                assert_eq!(seen[i as usize + 1].0, cut);
            } else {
                assert_eq!(cut, u64::MAX);
            }
        }
    }

    /// A task woken at the start waits all through 150,000 switches between two others on
    /// its CPU: the window after the first carries who ran since it was woken only up to
    /// the cap (131,072 runs for one CPU), and its timeline says from when.
    #[test]
    fn a_window_says_where_the_context_it_carries_was_cut() {
        let switch = |a: (&str, u32), b: (&str, u32)| {
            format!("sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state=R ==> next_comm={} next_pid={} next_prio=120", a.0, a.1, b.0, b.1)
        };
        let mut t = line(
            1_000,
            0,
            "a-1",
            "d..3.",
            "sched_waking: comm=r pid=5 prio=120 target_cpu=000",
        );
        let (a, b) = (("a", 1), ("b", 2));
        for k in 0..150_000u64 {
            let (from, to) = if k % 2 == 0 { (a, b) } else { (b, a) };
            let comm = format!("{}-{}", from.0, from.1);
            t += &line(2_000 + k * 10, 0, &comm, "d..2.", &switch(from, to));
        }
        let w = Windowing {
            events: 140_000,
            before_ns: 1_000_000,
            after_ns: 500_000,
        };
        let mut cuts = Vec::new();
        let opts = crate::read::OpenOptions::default();
        read_windowed(
            opened(&t),
            &opts,
            w,
            || Open(0, None),
            |d| {
                cuts.push(d.tl.anomalies.context_cut);
                Ok(())
            },
        )
        .unwrap();
        // The latest 131,072 runs end at the last switch before the cut (1.4 s in): the
        // first of them began 131,072 switches earlier.
        let first_kept = 2_000_000 + (140_000 - 131_072) * 10_000;
        assert_eq!(cuts.len(), 2);
        assert_eq!(cuts[0], None);
        let note = crate::timeline::Anomalies {
            context_cut: cuts[1],
            ..Default::default()
        };
        assert!(
            cuts[1].is_some_and(|c| c.abs_diff(first_kept) <= 20_000),
            "{cuts:?}"
        );
        assert!(note.context_cut_note().unwrap().contains("was not carried"));
    }

    /// Events of one instant are never split between two windows' ends: windows of 50
    /// events over 300 events in bursts of 7 at one time each; every window ends with
    /// the whole of its last instant (its last event is the last of a burst).
    #[test]
    fn a_window_ends_with_the_whole_of_its_last_instant() {
        let text: String = (0..300)
            .map(|k| {
                line(
                    1_000 + (k / 7) * 100,
                    0,
                    "a-1",
                    "....",
                    "sys_exit: NR 0 = 0",
                )
            })
            .collect();
        let w = Windowing {
            events: 50,
            before_ns: 500_000,
            after_ns: 0,
        };
        let mut seen = Vec::new();
        let opts = crate::read::OpenOptions::default();
        read_windowed(
            opened(&text),
            &opts,
            w,
            || Open(0, None),
            |d| {
                seen.push(d.tl.last_ts);
                Ok(())
            },
        )
        .unwrap();
        assert!(seen.len() >= 4, "{seen:?}");
        // The instants hold 7 events each; the last instant (k / 7 = 42) holds 6.
        let at = |ts: u64| {
            (0..300u64)
                .filter(|k| 1_000_000 + (k / 7) * 100_000 == ts)
                .count()
        };
        for last in &seen[..seen.len() - 1] {
            let next_first = (0..300u64)
                .map(|k| 1_000_000 + (k / 7) * 100_000)
                .find(|&t| t > *last);
            assert!(next_first.is_some() && at(*last) == 7, "{seen:?}");
        }
    }

    /// An event at the clock's last value (hostile input) ends no window early: the
    /// trace is one window, read without a panic.
    #[test]
    fn an_event_at_the_clocks_last_value_is_read() {
        let text = format!(
            "{} a-1 [000] .... 18446744073.709551615: sys_exit: NR 0 = 0\n",
            line(1_000, 0, "a-1", "....", "sys_exit: NR 0 = 0")
        );
        let w = Windowing {
            events: 100,
            before_ns: 1_000_000,
            after_ns: 0,
        };
        let opts = crate::read::OpenOptions::default();
        let mut windows = 0;
        let facts = read_windowed(
            opened(&text),
            &opts,
            w,
            || Open(0, None),
            |_| {
                windows += 1;
                Ok(())
            },
        );
        assert!(facts.is_ok());
        assert_eq!(windows, 1);
    }

    /// A sample that never ends: its window is fed until it has taken as many events
    /// again past its cut, then closed and marked forced; memory stays bounded.
    #[test]
    fn a_window_whose_sample_never_ends_is_closed_and_says_so() {
        let w = Windowing {
            events: 100,
            before_ns: 1_000_000,
            after_ns: 0,
        };
        let mut seen = Vec::new();
        let opts = crate::read::OpenOptions::default();
        let facts = read_windowed(
            opened(&trace(400)),
            &opts,
            w,
            || Open(0, Some(0)),
            |d| {
                seen.push((d.sink.0, d.forced, d.last));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(facts.windows, 4);
        assert!(facts.held >= 1);
        // Each window but the last: its 100 events, then as many again from where its
        // cut was set (the next window's first event).
        assert_eq!(seen[0], (200, true, false));
        assert!(seen.last().unwrap().2);
        assert!(seen.iter().all(|s| s.0 <= 200));
    }
}
