//! The pass on one thread or two: reading on a thread of its own hands the events (or,
//! for perf.data, the records' fields) to the thread that feeds the timeline and the sink.

use crate::event::{Event, Interner};
use crate::read::{self, Merged, ReadError};
use std::any::Any;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Hands every event of `merged`, in time order, to `feed` with the index of its input:
/// on two threads when every input is binary (a reading thread, the calling thread
/// decoding and feeding), else on this one. Returns the inputs and the strings.
pub fn each_event(
    merged: Merged<read::Input>,
    feed: &mut impl FnMut(usize, &Event, &Interner),
) -> Result<(Merged<read::Input>, Interner), ReadError> {
    match reads_apart(&merged) {
        true => decoded_apart(merged, feed),
        false => one_thread(merged, feed),
    }
}

/// Whether reading gets a thread of its own. Binary inputs decode on one core, so the
/// timeline and the sink are fed on the other. Text inputs already parse on every core
/// (`read/text/chunked.rs`), where a reading thread on top only adds hand-over work.
/// `WHYLATE_ONE_THREAD` set keeps every input on one thread (to measure the difference).
fn reads_apart(merged: &Merged<read::Input>) -> bool {
    let binary = |s: &read::Input| s.format().is_binary();
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

/// Records per hand-over when decoding is apart. Larger: a thread that waits sleeps, and
/// waking it costs tens of microseconds on a VM, more on a busy host, where 4096 made
/// explain on the 4 M-event perf.data take 1.16x as long (paired; equal on a quiet host).
/// Events handed over keep [`BATCH`]: there, larger batches measured slower.
#[cfg(not(test))]
const RECORDS: usize = 16384;
/// Small in tests, so that the bundled examples cross many batch boundaries.
#[cfg(test)]
const RECORDS: usize = 1000;

/// Runs `fill` on a thread of its own and `drain` on the calling one: batches go over a
/// bounded queue and come back emptied (by `drain`, where their lines are warm) to be
/// filled again. `fill` says whether more is to come; a batch is drained before the
/// error that ended its filling is returned. `fill` is also told whether the calling
/// thread is behind (a batch was still waiting for it at the last hand-over), so that it
/// can take on work the calling thread would otherwise do.
fn relay<P: Send, B: Send>(
    mut producer: P,
    make: impl Fn(&P) -> B + Send,
    fill: impl Fn(&mut P, &mut B, bool) -> Result<bool, ReadError> + Send,
    mut drain: impl FnMut(&mut B),
) -> Result<P, ReadError> {
    // Batches handed over and not yet taken.
    let queued = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let queued = &queued;
        // Made inside the scope, so that a panic while draining drops the receiver and
        // the reading thread stops at its next send instead of waiting forever.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<B, ReadError>>(4);
        let (back, spare) = std::sync::mpsc::sync_channel::<B>(8);
        let reader = std::thread::Builder::new().name("whylate-read".into());
        let mut behind = false;
        let reader = reader.spawn_scoped(s, move || loop {
            let mut b = spare.try_recv().unwrap_or_else(|_| make(&producer));
            let r = fill(&mut producer, &mut b, behind);
            behind = queued.fetch_add(1, Relaxed) > 0;
            let gone = tx.send(Ok(b)).is_err();
            let more = match r {
                Ok(more) => more,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    false
                }
            };
            if gone || !more {
                return producer;
            }
        });
        let reader = reader.expect("spawning the reading thread");
        let mut failed = None;
        for b in rx.iter() {
            match b {
                Ok(mut b) => {
                    queued.fetch_sub(1, Relaxed);
                    drain(&mut b);
                    let _ = back.try_send(b);
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let producer = reader.join().expect("the reading thread panicked");
        match failed {
            Some(e) => Err(e),
            None => Ok(producer),
        }
    })
}

/// What the reading thread hands over: events, and the strings interned since the last
/// batch (the feeding thread's interner gives them the same symbols).
#[derive(Default)]
struct Batch {
    events: Vec<(u32, Event)>,
    strings: Vec<Box<str>>,
}

/// Reads on a thread of its own and feeds on the calling one: the two halves of the pass
/// on two cores.
fn handed_over<L: Lend>(
    merged: L,
    feed: &mut impl FnMut(usize, &Event, &Interner),
) -> Result<(L, Interner), ReadError> {
    let fill = |(merged, strings): &mut (L, Interner), b: &mut Batch, _: bool| {
        let sent = strings.len();
        b.events.reserve(BATCH);
        let mut r = Ok(true);
        while b.events.len() < BATCH {
            match merged.lend(strings) {
                Ok(Some((i, e))) => b.events.push((i as u32, e.clone())),
                Ok(None) => {
                    r = Ok(false);
                    break;
                }
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        b.strings.extend(strings.strings_from(sent).map(Box::from));
        r
    };
    let mut strings = Interner::new();
    let drain = |b: &mut Batch| {
        for s in b.strings.drain(..) {
            strings.intern(&s);
        }
        for (i, e) in &b.events {
            feed(*i as usize, e, &strings);
        }
        b.events.clear();
    };
    let (merged, _) = relay((merged, Interner::new()), |_| Batch::default(), fill, drain)?;
    Ok((merged, strings))
}

/// One binary input whose reader splits: the reading thread walks the file and copies
/// each due record (or its fields) into a batch, and the calling thread decodes them
/// with the timeline. That balances the two threads better than handing over decoded
/// events, and keeps every string interned on one thread, in one-thread order. Also when
/// the sink does real work for most events (cutting cycles, watching expectations): the
/// reading thread then decodes the events that intern nothing while the feeding thread is
/// behind. Handing decoded events over instead, as this did for such sinks, cost the
/// copies of every event: cycle mode on the 3.8 M-event perf.data of bench/explain.py
/// took 1.26 s instead of 1.02 (mean of 7, paired; issue 51).
fn decoded_apart(
    mut merged: Merged<read::Input>,
    feed: &mut impl FnMut(usize, &Event, &Interner),
) -> Result<(Merged<read::Input>, Interner), ReadError> {
    let half = match merged.sources_mut() {
        [one] => one.binary_mut().and_then(|b| b.decode_apart()),
        _ => None,
    };
    let Some(mut dec) = half else {
        return handed_over(merged, feed);
    };
    // The reading thread decodes the events that intern nothing only while the feeding
    // thread is behind: which thread has time to spare depends on the format and on
    // what the sink does (perf.data's scan is the slower half for a plain explain,
    // trace.dat's page walk is not). Tests alternate, so that both ways are read.
    let batches = AtomicU64::new(0);
    // What the reading half uses on every record was allocated where the input was
    // opened, on the feeding thread: beside the feeding thread's own hot data, a line that
    // both use moves between the cores on every record (a layout table read per record
    // next to a selector's count written per event made explain on perf.data 20% slower).
    // Copied on the reading thread, it comes from that thread's own heap.
    let fill = |m: &mut Merged<read::Input>, b: &mut Box<dyn Any + Send>, behind: bool| {
        let n = batches.fetch_add(1, Relaxed);
        if n == 0 {
            reader(m).settle_here();
        }
        let help = if cfg!(test) { n % 2 == 1 } else { behind };
        m.sources_mut()[0].check_cancel(RECORDS as u32)?;
        reader(m).fill(&mut **b, RECORDS, help)
    };
    // The batches are made by the reading half, which knows their type.
    let make = |m: &Merged<read::Input>| match m.sources()[0].binary() {
        Some(b) => b.batch(),
        None => unreachable!("only a binary input is split"),
    };
    let mut strings = Interner::new();
    let mut feed_one = |e: &Event, s: &Interner| feed(0, e, s);
    let drain = |b: &mut Box<dyn Any + Send>| dec.drain(&mut strings, &mut **b, &mut feed_one);
    let mut merged = relay(merged, make, fill, drain)?;
    reader(&mut merged).rejoin(dec);
    Ok((merged, strings))
}

/// The reader of the one binary input split.
fn reader(m: &mut Merged<read::Input>) -> &mut dyn read::Binary {
    match m.sources_mut()[0].binary_mut() {
        Some(b) => b,
        None => unreachable!("only a binary input is split"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Kind;
    use crate::read::{EventSource, OpenOptions};

    /// How a test reads.
    #[derive(Clone, Copy, Debug)]
    enum Way {
        One,
        HandedOver,
        DecodedApart,
    }

    /// What one way of reading `path` fed: the events, the strings after, and what the
    /// reader noticed.
    fn fed(path: &str, way: Way) -> (Vec<(usize, Event)>, Vec<String>, String) {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path);
        let input = read::open(&p, &OpenOptions::default()).unwrap();
        let merged = Merged::new(vec![input]);
        let mut got = Vec::new();
        let mut feed = |i: usize, e: &Event, _: &Interner| got.push((i, e.clone()));
        let (merged, strings) = match way {
            Way::One => one_thread(merged, &mut feed).unwrap(),
            Way::HandedOver => handed_over(merged, &mut feed).unwrap(),
            Way::DecodedApart => decoded_apart(merged, &mut feed).unwrap(),
        };
        let strings = strings.strings_from(0).map(String::from).collect();
        let diag = format!("{:?}", merged.sources()[0].diag());
        (got, strings, diag)
    }

    #[test]
    fn a_reading_thread_feeds_what_one_thread_feeds() {
        // The perf.data also plain: its records then go over where they are in the map.
        let dir = tempfile::tempdir().unwrap();
        let zst = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/frob.perf.data.zst");
        let plain = dir.path().join("frob.perf.data");
        let raw = zstd::decode_all(std::fs::File::open(zst).unwrap()).unwrap();
        std::fs::write(&plain, raw).unwrap();
        let plain = plain.to_str().unwrap();
        // A Perfetto trace: the hold that orders its CPUs moves to the feeding thread.
        let pf = dir.path().join("t.pftrace");
        std::fs::write(&pf, read::perfetto::tests::bundles_two_cpus(12_000)).unwrap();
        let pf = pf.to_str().unwrap();
        for path in [
            "examples/frob.dat.zst",
            "examples/frob.perf.data.zst",
            plain,
            pf,
        ] {
            let one = fed(path, Way::One);
            if path == pf {
                // What it holds besides events is read the same way too.
                assert!(one.2.contains("ends inside a packet"), "{}", one.2);
                assert!(one.2.contains("does not decode"), "{}", one.2);
                assert!(one.0.iter().any(|e| matches!(e.1.kind, Kind::Lost { .. })));
            }
            // Several batches, so strings interned between hand-overs are covered.
            assert!(one.0.len() > 2 * BATCH, "{path}: {} events", one.0.len());
            for way in [Way::HandedOver, Way::DecodedApart] {
                let apart = fed(path, way);
                assert_eq!(one.0.len(), apart.0.len(), "{path} {way:?}");
                assert!(one.0 == apart.0, "{path} {way:?}: the events differ");
                assert_eq!(one.1, apart.1, "{path} {way:?}");
                assert_eq!(one.2, apart.2, "{path} {way:?}");
            }
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
