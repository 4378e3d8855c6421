//! perf.data read on two threads. The reading thread scans and sorts the rounds as the
//! one-thread reader does and copies each due record into a batch (`Records`); the
//! decoding half (`Decoding`: the event formats, the task names, the interner's side)
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
    Lost {
        ts: u64,
        count: Option<u64>,
        cpu: u32,
    },
    /// The next `n` records of the batch's [`Records::due`]: left where they are in a
    /// plain file's map, the decoding half reads their fields there, so the reading
    /// thread neither parses nor copies them. A run, not an item each: an item is as
    /// large as its largest kind, and writing then reading 88 bytes a record cost the
    /// two threads more than the (time, offset) it carries.
    Mapped { n: u32 },
    /// What the scan noticed before the next record.
    Notes(Box<Diag>),
}

/// Due records in time order: their fields copied out of the file, or where they are in
/// its map.
#[derive(Default)]
pub(crate) struct Records {
    items: crate::read::records::Records<Item>,
    /// (time, offset) of the records the [`Item::Mapped`] runs stand for, in order.
    due: Vec<(u64, usize)>,
}

impl Records {
    /// Records held.
    pub(crate) fn len(&self) -> usize {
        self.items.len() + self.due.len()
    }
    /// Empties the batch, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.due.clear();
    }
    fn push(&mut self, item: Item) {
        self.items.push(item);
    }
    fn keep(&mut self, b: &[u8]) -> (u32, u32) {
        self.items.keep(b)
    }
    /// Adds records left in the map, as one run with any run just before.
    fn mapped(&mut self, recs: impl ExactSizeIterator<Item = (u64, usize)>) {
        let n = recs.len() as u32;
        self.due.extend(recs);
        match self.items.last_mut() {
            Some(Item::Mapped { n: m }) => *m += n,
            _ => self.items.push(Item::Mapped { n }),
        }
    }
}

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
        Fields::Lost { count, cpu } => Item::Lost { ts, count, cpu },
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
        let (items, kept) = batch.items.drain();
        let due = &batch.due[..];
        let mut next = 0;
        for it in items {
            let fields = match it {
                Item::Mapped { n } => {
                    for i in next..next + n as usize {
                        if let (Some(&(_, ahead)), Some(m)) =
                            (due.get(i + RECORDS_AHEAD), &self.map)
                        {
                            super::bytes::prefetch(m, ahead);
                        }
                        self.mapped(s, due[i].0, due[i].1, &mut f);
                    }
                    next += n as usize;
                    continue;
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
                Item::Lost { ts, count, cpu } => (ts, Fields::Lost { count, cpu }),
                Item::Notes(d) => {
                    absorb(&mut self.smp.diag, *d);
                    continue;
                }
            };
            emit(&mut self.smp, s, fields.0, fields.1, &mut f);
        }
    }
}

/// Records ahead of the one decoded whose first bytes are asked into the cache: they were
/// scanned a while ago (explain on the 4 M-sample perf.data: 292 -> 279 ms, paired).
const RECORDS_AHEAD: usize = 8;

impl Decoding {
    /// Decodes the record due at `ts` where it is in the map, at `off`.
    #[inline]
    fn mapped(
        &mut self,
        s: &mut Interner,
        ts: u64,
        off: usize,
        f: &mut impl FnMut(&Event, &Interner),
    ) {
        let keys = Keys {
            lays: &self.lays,
            ids: &self.ids,
            one_attr: self.one_attr,
        };
        let m = self.map.as_deref().map_or(&[][..], |m| &m[..]);
        let size = record_size(&m[off..off + 8]);
        let fields = fields_of(&keys, off, &m[off..off + size]);
        emit(&mut self.smp, s, ts, fields, f);
    }
}

/// Hands on the event of the record due at `ts` with `fields`, if it makes one.
#[inline]
fn emit(
    smp: &mut Samples,
    s: &mut Interner,
    ts: u64,
    fields: Fields,
    f: &mut impl FnMut(&Event, &Interner),
) {
    if let Fields::Sample {
        cpu,
        tid,
        tgid,
        raw: Some(raw),
        ..
    } = fields
    {
        // The pure events' shortcut, as on the reading thread: made and handed on in
        // place, it took explain's user time on 4 M system calls from 419 to 390 ms
        // (the same decoding through `event_of` measured no gain).
        if let Some((c, kind)) = smp.pure.decode(raw) {
            f(&smp.finish(ts, cpu, (tid, tgid), c.flags, kind), s);
            return;
        }
    }
    if let Some(e) = event_of(smp, s, ts, fields) {
        f(&e, s);
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
    /// Copies what the reading half reads on every record (the layouts, the attr ids, the
    /// pure events' plans) into memory the calling thread allocates: called on the
    /// reading thread, so that none of it shares a cache line with data the feeding
    /// thread writes. The reading half itself owns whole lines (`Fast` is aligned).
    pub(crate) fn settle_here(&mut self) {
        let Mode::Fast(f) = &mut self.mode else {
            return;
        };
        f.lays = f.lays.to_vec();
        f.ids = f.ids.iter().map(|(&k, &v)| (k, v)).collect();
        f.pure = f.pure.clone();
    }

    /// Moves decoding out of the reader (the fast path only; None otherwise). The reader
    /// then gives due records through [`PerfData::next_records`] until
    /// [`PerfData::rejoin`] puts decoding back.
    pub(crate) fn decode_apart(&mut self) -> Option<Decoding> {
        let Mode::Fast(f) = &mut self.mode else {
            return None;
        };
        let smp = std::mem::replace(&mut f.smp, Samples::notes_only());
        f.pure = Some(smp.pure.clone());
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
                if pure.is_none() && matches!(self.data, Data::Map(_)) {
                    let n = self.ready.min(max - out.len()).min(self.held.len());
                    if n == 0 {
                        return false;
                    }
                    out.mapped(self.held.drain(..n));
                    self.ready -= n;
                    continue;
                }
                self.ready -= 1;
                let Some((ts, off)) = self.held.pop_front() else {
                    return false;
                };
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
            pure: tep::Pure::new(&Formats::default()),
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
