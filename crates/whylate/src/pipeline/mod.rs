//! The reading pass every analysis shares: the inputs merged by timestamp into one event
//! stream, each event fed to the timeline builder and to the command's own sink (the
//! cycle cutter, the throughput counter), with what the readers said about each input.

use crate::event::{Event, Interner};
use crate::read::inputs::{describe_inputs, Inputs, TracerSample};
use crate::read::{self, each_event, EventSource, Merged, OpenOptions, Opened, ReadError};
use crate::snapshot::Snapshot;
use crate::syscalls::Arch;
use crate::timeline::{Builder, KindClass, Timeline};
use std::path::PathBuf;

mod windows;
pub use windows::{read_windowed, Done, Facts, Stretch, Windowing};

/// Everything one pass over the inputs gives besides what its sink kept.
pub struct Pass {
    /// The timeline.
    pub tl: Timeline,
    /// Its strings.
    pub strings: Interner,
    /// Per-input facts and notes.
    pub inputs: Inputs,
    /// Events read.
    pub events: u64,
    /// Latency-tracer dump headers, as samples.
    pub tracers: Vec<TracerSample>,
    /// The first input's record-time snapshot (`whylate record` trace.dat files).
    pub snapshot: Option<Snapshot>,
}

/// What a pass feeds besides the timeline.
pub trait Sink {
    /// A recording's snapshot, before any event.
    fn snapshot(&mut self, _: &Snapshot) {}
    /// The syscall table raw syscall numbers are named with, before any event.
    fn arch(&mut self, _: Arch) {}
    /// Each event, in time order.
    fn event(&mut self, e: &Event, s: &Interner);
    /// An event earlier than one already fed (past every reorder window): left out of
    /// the analyses unless a sink reads it on its own terms (a kernel log across a reboot).
    fn late(&mut self, _: &Event, _: &Interner) {}
    /// The start of the oldest sample still open (a request not yet answered): a pass in
    /// windows keeps a window until the samples it settles have ended
    /// ([`read_windowed`]). None: nothing open, or the sink cuts no samples.
    fn oldest_open(&self) -> Option<u64> {
        None
    }
    /// Whether the samples it settles are the timeline's own (a wait, a handler, work
    /// queued), so that a window is also kept until the builder's oldest open sample has
    /// ended ([`crate::timeline::Builder::oldest_sample`]).
    fn settles_timeline_samples(&self) -> bool {
        false
    }
}

impl<F: FnMut(&Event, &Interner)> Sink for F {
    fn event(&mut self, e: &Event, s: &Interner) {
        self(e, s)
    }
}

/// Reads the inputs (merged by time) into a timeline, handing every event to `sink` too.
pub fn read(inputs: Opened, open: &OpenOptions, sink: &mut impl Sink) -> Result<Pass, ReadError> {
    let (paths, sources) = inputs.into_parts();
    let start = Start::of(&sources, open, |s| sink.snapshot(s));
    sink.arch(start.arch);
    let merged = Merged::new(sources);
    let mut b = Builder::new();
    let mut per_input = vec![0u64; paths.len()];
    let mut events = 0;
    let mut feed = |i: usize, e: &Event, strings: &Interner| {
        per_input[i] += 1;
        events += 1;
        read::Progress::tick(&open.progress, events);
        // An event earlier than one already fed (past every reorder window) is counted by
        // the builder and left out of the analyses, as the notes say: a cycle closed by a
        // late reply would end before it began.
        let late = b.is_late(e.ts);
        b.push(e, strings);
        match late {
            false => sink.event(e, strings),
            true => sink.late(e, strings),
        }
    };
    let (merged, strings) = each_event(merged, &mut feed)?;
    read_done(open, events);
    let mut tl = start.timeline(b, &strings);
    mark_cut_cpus(&mut tl, merged.sources());
    let raw = tl.saw(KindClass::RawSyscall) > 0;
    let (inputs, tracers) = start.describe(&merged, &paths, &per_input, &strings, raw);
    Ok(Pass {
        tl,
        strings,
        inputs,
        events,
        tracers,
        snapshot: start.snapshot,
    })
}

/// What a pass knows before its first event: the first input's snapshot and the syscall
/// table.
pub(crate) struct Start {
    pub(crate) snapshot: Option<Snapshot>,
    /// The table some input or the options named (none: the default, said in a note).
    said: Option<Arch>,
    pub(crate) arch: Arch,
}

impl Start {
    /// Hands each input's snapshot to `seen` and decides the syscall table.
    pub(crate) fn of(
        sources: &[read::Input],
        open: &OpenOptions,
        mut seen: impl FnMut(&Snapshot),
    ) -> Start {
        let mut snapshot = None;
        for src in sources {
            if let Some(s) = src.snapshot() {
                seen(s);
                snapshot.get_or_insert_with(|| s.clone());
            }
        }
        let said = open.arch.or_else(|| sources.iter().find_map(|s| s.arch()));
        Start {
            snapshot,
            said,
            arch: said.unwrap_or_default(),
        }
    }

    /// The builder's timeline with what the pass knows beside the events: the syscall
    /// table, the recorder's threads, the consoles, whether its pids are this boot's.
    pub(crate) fn timeline(&self, b: Builder, strings: &Interner) -> Timeline {
        let snapshot = self.snapshot.as_ref();
        let mut tl = b.finish();
        tl.arch = self.arch;
        tl.recorder = recorder_threads(&tl, strings, snapshot);
        tl.consoles = snapshot.map_or(Vec::new(), |s| s.consoles.clone());
        tl.pids_here = snapshot.is_some_and(crate::snapshot::this_boot);
        tl
    }

    /// What each input said and the latency tracers' headers; `raw`: raw syscall
    /// numbers were named (with the default table, a note says which).
    pub(crate) fn describe(
        &self,
        merged: &Merged<read::Input>,
        paths: &[PathBuf],
        per_input: &[u64],
        strings: &Interner,
        raw: bool,
    ) -> (Inputs, Vec<TracerSample>) {
        let tracers = tracer_samples(merged.sources(), paths);
        let mut inputs = describe_inputs(merged.sources(), paths, per_input);
        inputs.notes.extend(strings.cap_note());
        if self.said.is_none() && raw {
            inputs.notes.push(format!(
                "raw syscall numbers are named with the {} table: the trace does not say its machine (--arch names another)",
                self.arch.label()
            ));
        }
        (inputs, tracers)
    }
}

/// Tells a progress display that reading is over.
pub(crate) fn read_done(open: &OpenOptions, events: u64) {
    if let Some(p) = &open.progress {
        p.events.store(events, std::sync::atomic::Ordering::Relaxed);
        p.read_done
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Marks where a CPU's data was cut short (a reader gave up on it) as blind from there.
pub(crate) fn mark_cut_cpus(tl: &mut Timeline, sources: &[read::Input]) {
    for s in sources {
        for &cpu in &s.diag().cut_cpus {
            let from = tl.cpu_last_ts.get(cpu as usize).copied().unwrap_or(0);
            // A CPU whose data runs to the end anyway lost nothing that matters.
            if from < tl.last_ts {
                tl.blind.push(crate::timeline::Blind { cpu, from });
            }
        }
    }
}

/// Names of recorders' threads: trace-cmd's per-CPU readers are `trace-cmd` processes,
/// perf record's threads are `perf` (a workload it starts is `perf-exec` until it execs,
/// then its own name, as a trace-cmd child becomes its own), whylate's own are `whylate`
/// and `whylate-read`. whylate is known by name too, not only from its snapshot: a trace
/// without one (a `watch` window, a converted copy, another recorder's trace of a running
/// `whylate watch`) must know it the same way, or the same data ranks differently.
pub const RECORDER_COMMS: [&str; 4] = ["trace-cmd", "perf", "whylate", "whylate-read"];

/// The recorder's own threads: `whylate record`'s process and every thread its snapshot
/// (taken at the start, rescanned meanwhile and at the end) lists in it, and the threads
/// the trace last names as another recorder ([`RECORDER_COMMS`]).
pub fn recorder_threads(
    tl: &Timeline,
    s: &Interner,
    snap: Option<&Snapshot>,
) -> rustc_hash::FxHashSet<i32> {
    let mut set = rustc_hash::FxHashSet::default();
    if let Some((snap, rec)) = snap.and_then(|x| x.recorder.map(|r| (x, r))) {
        set.insert(rec);
        set.extend(snap.tasks.iter().filter(|t| t.tgid == rec).map(|t| t.tid));
    }
    set.extend(
        (tl.comms.iter())
            .filter(|(&tid, &c)| tid > 0 && RECORDER_COMMS.contains(&s.get(c)))
            .map(|(&tid, _)| tid),
    );
    set
}

/// Latency-tracer dumps (irqsoff, wakeup_rt...) carry their worst case in the header.
fn tracer_samples(sources: &[read::Input], paths: &[PathBuf]) -> Vec<TracerSample> {
    let mut tracers = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let d = s.diag();
        if let Some(h) = &d.header.latency {
            tracers.push(TracerSample {
                tracer: d.header.tracer.clone().unwrap_or_else(|| "latency".into()),
                latency_ns: h.latency_us * 1000,
                cpu: h.cpu,
                task: h.task.clone(),
                pid: h.pid,
                started_at: h.started_at.clone(),
                ended_at: h.ended_at.clone(),
                file: paths[i].display().to_string(),
            });
        }
    }
    tracers
}

#[cfg(test)]
mod tests {
    use crate::testkit::line;

    #[test]
    fn an_event_later_than_every_reorder_window_is_left_out_of_the_sink_too() {
        // 5,000 events in time order, then one earlier than all of them: past the text
        // reader's 4,096-event window it comes out of order. Fed to a cycle cutter, a
        // reply that early closed a request before it began (a negative duration).
        let mut text: String = (0..5_000)
            .map(|k| line(1_000 + k, 0, "a-1", "....", "sys_exit: NR 0 = 0"))
            .collect();
        text.push_str(&line(10, 0, "a-1", "....", "sys_exit: NR 0 = 1"));

        /// What a sink was given: the events in time order, and the late ones apart.
        #[derive(Default)]
        struct Fed(Vec<u64>, Vec<u64>);
        impl super::Sink for Fed {
            fn event(&mut self, e: &crate::event::Event, _: &crate::event::Interner) {
                self.0.push(e.ts);
            }
            fn late(&mut self, e: &crate::event::Event, _: &crate::event::Interner) {
                self.1.push(e.ts);
            }
        }
        let mut fed = Fed::default();
        let opts = crate::read::OpenOptions::default();
        let pass = super::read(crate::testkit::opened(&text), &opts, &mut fed).unwrap();
        assert_eq!(pass.tl.anomalies.late_events, 1);
        assert_eq!(fed.0.len(), 5_000);
        assert!(fed.0.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(fed.1, [10_000]);
        assert_eq!(pass.events, 5_001);
    }
}
