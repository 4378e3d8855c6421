//! perf.data read on two threads. The reading thread scans and sorts the rounds as the
//! one-thread reader does and copies each due record into a batch ([`Records`]); the
//! decoding half ([`Decoding`]: the event formats, the task names, the interner's side)
//! moves to the thread that feeds the timeline and makes the events there. What the scan
//! notices (bad records, a cut file) travels in the batch at the point it was noticed, so
//! the diagnostics come out as one thread gives them.

use super::record::{event_of, fields_of, Fields};
use super::*;

/// One item of a [`Records`] batch: a due record's fields (its bytes in the batch).
pub(crate) enum Item {
    /// A sample.
    Sample {
        ts: u64,
        cpu: u32,
        tid: i32,
        tgid: i32,
        attr: Option<usize>,
        /// Where the RAW payload is in the batch.
        raw: Option<(u32, u32)>,
    },
    /// A sample of a pure event (see [`tep::Pure`]), decoded on the reading thread; the
    /// task's name is looked up where decoding is.
    Pure {
        ts: u64,
        cpu: u32,
        task: (i32, i32),
        flags: u16,
        kind: Kind,
    },
    /// A task named.
    Comm { tid: i32, name: (u32, u32) },
    /// Events perf lost.
    Lost { ts: u64, count: Option<u64> },
    /// A record left where it is in a plain file's map, due at `ts`: the decoding half
    /// reads its fields there, so the reading thread neither parses nor copies it.
    Mapped { ts: u64, off: usize },
    /// What the scan noticed before the next record.
    Notes(Box<Diag>),
}

/// Due records' fields in time order, copied out of the file.
pub(crate) type Records = crate::read::records::Records<Item>;

/// Adds the fields of a record due at `ts` to `out`, or its event when `pure` decodes it;
/// the ones that make nothing are left out.
fn push_fields(out: &mut Records, pure: Option<&tep::Pure>, ts: u64, f: Fields) {
    if let Fields::Sample {
        cpu,
        tid,
        tgid,
        raw: Some(raw),
        ..
    } = f
    {
        if let Some((c, kind)) = pure.and_then(|p| p.decode(raw)) {
            let task = (tid, tgid);
            let flags = c.flags;
            out.push(Item::Pure {
                ts,
                cpu,
                task,
                flags,
                kind,
            });
            return;
        }
    }
    let item = match f {
        Fields::Sample {
            cpu,
            tid,
            tgid,
            raw,
            attr,
        } => Item::Sample {
            ts,
            cpu,
            tid,
            tgid,
            attr,
            raw: raw.map(|r| out.keep(r)),
        },
        Fields::Comm { tid, name } => Item::Comm {
            tid,
            name: out.keep(name),
        },
        Fields::Lost { count } => Item::Lost { ts, count },
        Fields::Bad { .. } | Fields::Nothing => return,
    };
    out.push(item);
}

/// The decoding half of a perf.data reader, moved to another thread.
pub(crate) struct Decoding {
    smp: Samples,
    /// A plain file's map and what finds a record's layout, for [`Item::Mapped`].
    map: Option<std::sync::Arc<memmap2::Mmap>>,
    lays: Vec<Layout>,
    ids: FxHashMap<u64, usize>,
    one_attr: bool,
}

impl Decoding {
    /// Decodes `batch` in order, handing each event to `f`.
    pub(crate) fn decode(
        &mut self,
        s: &mut Interner,
        batch: &mut Records,
        mut f: impl FnMut(&Event, &Interner),
    ) {
        self.smp.seed(s);
        let (items, kept) = batch.drain();
        let keys = Keys {
            lays: &self.lays,
            ids: &self.ids,
            one_attr: self.one_attr,
        };
        for it in items {
            let fields = match it {
                Item::Mapped { ts, off } => {
                    let m = self.map.as_deref().map_or(&[][..], |m| &m[..]);
                    let size = record_size(&m[off..off + 8]);
                    (ts, fields_of(&keys, off, &m[off..off + size]))
                }
                Item::Sample {
                    ts,
                    cpu,
                    tid,
                    tgid,
                    attr,
                    raw,
                } => (
                    ts,
                    Fields::Sample {
                        cpu,
                        tid,
                        tgid,
                        raw: raw.map(|r| kept.get(r)),
                        attr,
                    },
                ),
                Item::Pure {
                    ts,
                    cpu,
                    task,
                    flags,
                    kind,
                } => {
                    f(&self.smp.finish(ts, cpu, task, flags, kind), s);
                    continue;
                }
                Item::Comm { tid, name } => (
                    0,
                    Fields::Comm {
                        tid,
                        name: kept.get(name),
                    },
                ),
                Item::Lost { ts, count } => (ts, Fields::Lost { count }),
                Item::Notes(d) => {
                    absorb(&mut self.smp.diag, *d);
                    continue;
                }
            };
            if let Some(e) = event_of(&mut self.smp, s, fields.0, fields.1) {
                f(&e, s);
            }
        }
    }
}

/// Adds what `d` noticed to `into`, as if noticed there.
fn absorb(into: &mut Diag, d: Diag) {
    let truncated = d.truncated.clone();
    into.absorb(d, 0);
    if truncated.is_some() {
        into.truncated = truncated;
    }
}

impl PerfData {
    /// Moves decoding out of the reader (the fast path only; None otherwise). The reader
    /// then gives due records through [`PerfData::next_records`] until
    /// [`PerfData::rejoin`] puts decoding back.
    pub(crate) fn decode_apart(&mut self) -> Option<Decoding> {
        let Mode::Fast(f) = &mut self.mode else {
            return None;
        };
        let smp = std::mem::replace(&mut f.smp, Samples::notes_only());
        f.pure = Some(tep::Pure::new(&smp.fmts));
        if matches!(f.data, Data::Map(_)) {
            f.lag = f.release_step;
        }
        Some(Decoding {
            smp,
            map: f.data.shared(),
            lays: f.lays.clone(),
            ids: f.ids.clone(),
            one_attr: f.one_attr,
        })
    }

    /// Copies due records into `out` until it holds `max` items; false at the end. With
    /// `help`, the pure events among them are decoded here, on the reading thread.
    pub(crate) fn next_records(&mut self, out: &mut Records, max: usize, help: bool) -> bool {
        match &mut self.mode {
            Mode::Fast(f) => f.next_records(out, max, help),
            Mode::Generic(_) => false,
        }
    }

    /// Puts decoding back, with everything it and the scan noticed.
    pub(crate) fn rejoin(&mut self, d: Decoding) {
        if let Mode::Fast(f) = &mut self.mode {
            f.pure = None;
            f.lag = 0;
            let notes = std::mem::replace(&mut f.smp, d.smp).diag;
            absorb(&mut f.smp.diag, notes);
        }
    }
}

impl Fast {
    /// [`Fast::next_ref`] without the decoding: the due records copied into `out`, and
    /// what each scan noticed after the records before it.
    fn next_records(&mut self, out: &mut Records, max: usize, help: bool) -> bool {
        // Taken out for the call, which borrows the reader whole.
        let pure = self.pure.take();
        let more = self.records_into(out, max, pure.as_ref().filter(|_| help));
        self.pure = pure;
        more
    }

    /// [`Fast::next_records`], decoding pure events with `pure` when given.
    fn records_into(&mut self, out: &mut Records, max: usize, pure: Option<&tep::Pure>) -> bool {
        loop {
            while self.ready > 0 {
                if out.len() >= max {
                    return true;
                }
                self.ready -= 1;
                let Some((ts, off)) = self.held.pop_front() else {
                    return false;
                };
                if pure.is_none() && matches!(self.data, Data::Map(_)) {
                    out.push(Item::Mapped { ts, off });
                    continue;
                }
                let size = record_size(self.data.get(off, off + 8));
                let r = self.data.get(off, off + size);
                match fields_of(&self.keys(), off, r) {
                    Fields::Bad { what, why } => {
                        self.smp.diag.bad(0, what.as_bytes(), why);
                        self.send_notes(out);
                    }
                    f => push_fields(out, pure, ts, f),
                }
            }
            if self.eof {
                return false;
            }
            self.scan_round();
            self.send_notes(out);
        }
    }
}

impl Fast {
    /// Moves what the scan noticed into the batch, where it falls among the records.
    fn send_notes(&mut self, out: &mut Records) {
        let d = &mut self.smp.diag;
        if d.unparsed > 0 || d.truncated.is_some() {
            out.push(Item::Notes(Box::new(std::mem::take(d))));
        }
    }
}

impl Samples {
    /// Samples that decode nothing: the scan's notes while decoding is apart.
    fn notes_only() -> Samples {
        Samples {
            fmts: Formats::default(),
            decoder: Decoder::new(),
            attr_names: Vec::new(),
            attr_syms: Vec::new(),
            comms: crate::read::comms::Comms::new(Vec::new(), Vec::new()),
            diag: Diag::default(),
            order: OrderCheck::default(),
        }
    }
}
