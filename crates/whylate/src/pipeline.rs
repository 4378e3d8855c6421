//! The reading pass every analysis shares: the inputs merged by timestamp into one event
//! stream, each event fed to the timeline builder and to the command's own sink (the
//! cycle cutter, the throughput counter), with what the readers said about each input.

use crate::event::{Event, Interner};
use crate::read::inputs::{describe_inputs, Inputs, TracerSample};
use crate::read::{self, EventSource, Format, Merged, OpenOptions, ReadError};
use crate::snapshot::Snapshot;
use crate::syscalls::Arch;
use crate::timeline::{Builder, KindClass, Timeline};
use std::path::PathBuf;

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
}

impl<F: FnMut(&Event, &Interner)> Sink for F {
    fn event(&mut self, e: &Event, s: &Interner) {
        self(e, s)
    }
}

/// Reads `paths` (merged by time) into a timeline, handing every event to `sink` too.
pub fn read(
    paths: &[PathBuf],
    open: &OpenOptions,
    sink: &mut impl Sink,
) -> Result<Pass, ReadError> {
    let mut sources = Vec::new();
    let mut snapshot = None;
    for p in paths {
        let src = read::open(p, open)?;
        if let Some(s) = src.snapshot() {
            sink.snapshot(s);
            snapshot.get_or_insert_with(|| s.clone());
        }
        sources.push(src);
    }
    let said = open.arch.or_else(|| sources.iter().find_map(|s| s.arch()));
    let arch = said.unwrap_or_default();
    sink.arch(arch);
    let merged = Merged::new(sources);
    let mut b = Builder::new();
    let mut per_input = vec![0u64; paths.len()];
    let mut events = 0;
    let mut feed = |i: usize, e: &Event, strings: &Interner| {
        per_input[i] += 1;
        events += 1;
        read::Progress::tick(&open.progress, events);
        b.push(e, strings);
        sink.event(e, strings);
    };
    let (merged, strings) = if reads_apart(&merged) {
        handed_over(merged, &mut feed)?
    } else {
        one_thread(merged, &mut feed)?
    };
    if let Some(p) = &open.progress {
        p.events.store(events, std::sync::atomic::Ordering::Relaxed);
        p.read_done
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut tl = b.finish();
    tl.arch = arch;
    for s in merged.sources() {
        for &cpu in &s.diag().cut_cpus {
            let from = tl.cpu_last_ts.get(cpu as usize).copied().unwrap_or(0);
            // A CPU whose data runs to the end anyway lost nothing that matters.
            if from < tl.last_ts {
                tl.blind.push(crate::timeline::Blind { cpu, from });
            }
        }
    }
    let tracers = tracer_samples(merged.sources(), paths);
    let mut inputs = describe_inputs(merged.sources(), paths, &per_input);
    if said.is_none() && tl.saw(KindClass::RawSyscall) > 0 {
        inputs.notes.push(format!(
            "raw syscall numbers are named with the {} table: the trace does not say its machine (--arch names another)",
            arch.label()
        ));
    }
    Ok(Pass {
        tl,
        strings,
        inputs,
        events,
        tracers,
        snapshot,
    })
}

/// Whether reading gets a thread of its own. Binary inputs decode on one core, so the
/// timeline and the sink are fed on the other. Text inputs already parse on every core
/// (`read/text/chunked.rs`), where a reading thread on top only adds hand-over work.
/// `WHYLATE_ONE_THREAD` set keeps every input on one thread (to measure the difference).
fn reads_apart(merged: &Merged<read::Input>) -> bool {
    let binary = |s: &read::Input| matches!(s.format(), Format::TraceDat | Format::PerfData);
    merged.sources().iter().all(binary) && std::env::var_os("WHYLATE_ONE_THREAD").is_none()
}

/// What the pass reads from: events lent one at a time, with the index of their input.
trait Lend: Send {
    fn lend(&mut self, strings: &mut Interner) -> Result<Option<(usize, &Event)>, ReadError>;
}

impl Lend for Merged<read::Input> {
    #[inline(always)]
    fn lend(&mut self, strings: &mut Interner) -> Result<Option<(usize, &Event)>, ReadError> {
        self.next_ref(strings)
    }
}

/// Reads and feeds on the calling thread.
fn one_thread<L: Lend>(
    mut merged: L,
    feed: &mut impl FnMut(usize, &Event, &Interner),
) -> Result<(L, Interner), ReadError> {
    let mut strings = Interner::new();
    while let Some((i, e)) = merged.lend(&mut strings)? {
        feed(i, e, &strings);
    }
    Ok((merged, strings))
}

/// Events per hand-over: large enough that the threads rarely wait on each other.
const BATCH: usize = 4096;

/// What the reading thread hands over: events, and the strings interned since the last
/// batch (the feeding thread's interner gives them the same symbols).
struct Batch {
    events: Vec<(u32, Event)>,
    strings: Vec<Box<str>>,
}

/// Reads on a thread of its own and feeds on the calling one: the two halves of the pass
/// on two cores, joined by a bounded queue of batches.
fn handed_over<L: Lend>(
    mut merged: L,
    feed: &mut impl FnMut(usize, &Event, &Interner),
) -> Result<(L, Interner), ReadError> {
    std::thread::scope(|s| {
        // Made inside the scope, so that a panic while feeding drops the receiver and
        // the reading thread stops at its next send instead of waiting forever.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Batch, ReadError>>(4);
        let (back, spare) = std::sync::mpsc::sync_channel::<Vec<(u32, Event)>>(8);
        let reader = std::thread::Builder::new().name("whylate-read".into());
        let reader = reader.spawn_scoped(s, move || {
            let mut strings = Interner::new();
            let mut sent = strings.len();
            loop {
                let mut v = spare
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                let mut err = None;
                while v.len() < BATCH {
                    match merged.lend(&mut strings) {
                        Ok(Some((i, e))) => v.push((i as u32, e.clone())),
                        Ok(None) => break,
                        Err(e) => {
                            err = Some(e);
                            break;
                        }
                    }
                }
                let done = err.is_some() || v.len() < BATCH;
                let new = strings.strings_from(sent).map(Box::from).collect();
                sent = strings.len();
                let gone = tx
                    .send(Ok(Batch {
                        events: v,
                        strings: new,
                    }))
                    .is_err();
                if let Some(e) = err {
                    let _ = tx.send(Err(e));
                }
                if gone || done {
                    return merged;
                }
            }
        });
        let reader = reader.expect("spawning the reading thread");
        let mut strings = Interner::new();
        let mut failed = None;
        for batch in rx.iter() {
            let batch = match batch {
                Ok(b) => b,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            for s in &batch.strings {
                strings.intern(s);
            }
            for (i, e) in &batch.events {
                feed(*i as usize, e, &strings);
            }
            // Emptied here, where its lines are warm, not on the reading thread.
            let mut spent = batch.events;
            spent.clear();
            let _ = back.try_send(spent);
        }
        let merged = reader.join().expect("the reading thread panicked");
        match failed {
            Some(e) => Err(e),
            None => Ok((merged, strings)),
        }
    })
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
    use super::*;
    use crate::event::Kind;

    /// The events of `path` as each way of reading feeds them, and the strings after.
    fn fed(path: &str, apart: bool) -> (Vec<(usize, Event)>, Vec<String>) {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path);
        let input = read::open(&p, &OpenOptions::default()).unwrap();
        let merged = Merged::new(vec![input]);
        let mut got = Vec::new();
        let mut feed = |i: usize, e: &Event, _: &Interner| got.push((i, e.clone()));
        let (_, strings) = if apart {
            handed_over(merged, &mut feed).unwrap()
        } else {
            one_thread(merged, &mut feed).unwrap()
        };
        let strings = strings.strings_from(0).map(String::from).collect();
        (got, strings)
    }

    #[test]
    fn a_reading_thread_feeds_what_one_thread_feeds() {
        for path in ["examples/frob.dat.zst", "examples/frob.perf.data.zst"] {
            let (one, one_strings) = fed(path, false);
            let (apart, apart_strings) = fed(path, true);
            // Several batches, so strings interned between hand-overs are covered.
            assert!(one.len() > 2 * BATCH, "{path}: {} events", one.len());
            assert_eq!(one.len(), apart.len(), "{path}");
            assert!(one == apart, "{path}: the events differ");
            assert_eq!(one_strings, apart_strings, "{path}");
        }
    }

    /// Lends `n` events, a new string every 1000, then fails.
    struct Failing {
        n: u64,
        at: u64,
        slot: Option<Event>,
    }

    impl Lend for Failing {
        fn lend(&mut self, s: &mut Interner) -> Result<Option<(usize, &Event)>, ReadError> {
            if self.at == self.n {
                return Err(ReadError::NoMatch { why: "stop".into() });
            }
            self.at += 1;
            let comm = s.intern(&format!("t{}", self.at / 1000));
            self.slot = Some(Event {
                ts: self.at,
                cpu: 0,
                tid: 1,
                tgid: 1,
                comm,
                flags: 0,
                kind: Kind::Lost { count: None },
            });
            Ok(self.slot.as_ref().map(|e| (0, e)))
        }
    }

    #[test]
    fn a_read_error_comes_after_every_event_before_it() {
        for n in [0, 5, BATCH as u64, 10_000] {
            let mut seen = Vec::new();
            let src = Failing {
                n,
                at: 0,
                slot: None,
            };
            let r = handed_over(src, &mut |_, e: &Event, s: &Interner| {
                seen.push((e.ts, s.get(e.comm).to_string()))
            });
            assert!(matches!(r, Err(ReadError::NoMatch { .. })), "{n}");
            assert_eq!(seen.len() as u64, n);
            let names_right = seen
                .iter()
                .all(|(ts, comm)| *comm == format!("t{}", ts / 1000));
            assert!(names_right, "{n}: a symbol was fed before its string");
        }
    }
}
