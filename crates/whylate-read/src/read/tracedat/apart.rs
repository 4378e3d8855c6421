//! trace.dat read on two threads. The reading thread walks the CPUs' pages and merges
//! their records by time as the one-thread reader does, copying each record into a batch
//! (`Records`); the decoding half (`Decoding`: the event formats, the task names,
//! every string interned) moves to the thread that feeds the timeline and makes the
//! events there, in the same order.

use super::*;
use crate::event::Kind;
use crate::read::comms::Comms;
use crate::read::OrderCheck;

/// One taken item of a [`Records`] batch.
pub(crate) enum Item {
    /// A record of CPU stream `stream`, its bytes at `at..at + len` in the batch.
    Record {
        ts: u64,
        cpu: u32,
        stream: u32,
        at: u32,
        len: u32,
    },
    /// A record of a pure event (see [`tep::Pure`]), decoded on the reading thread; the
    /// task's name is looked up where decoding is.
    Pure {
        ts: u64,
        cpu: u32,
        stream: u32,
        c: tep::Common,
        kind: Kind,
    },
    /// Events lost on `cpu` before `ts`.
    Lost {
        ts: u64,
        cpu: u32,
        count: Option<u64>,
    },
}

/// Taken records in time order, copied out of the pages.
pub(crate) type Records = crate::read::records::Records<Item>;

/// The decoding half of a trace.dat reader, moved to another thread.
pub(crate) struct Decoding {
    fmts: Formats,
    decoder: Decoder,
    comms: Comms,
    unknown_ids: FxHashMap<u32, u64>,
    order: OrderCheck,
    /// What decoding noticed (added to the reader's at [`TraceDat::rejoin`]).
    diag: Diag,
    /// Per CPU stream, its last task (see `CpuStream::last`).
    last: Vec<((i32, Sym, i32), u64)>,
}

impl Decoding {
    /// Decodes `batch` in order, handing each event to `f`; leaves the batch's bytes.
    pub(crate) fn decode(
        &mut self,
        s: &mut Interner,
        batch: &mut Records,
        mut f: impl FnMut(&Event, &Interner),
    ) {
        self.comms.seed(s);
        let (items, kept) = batch.drain();
        for it in items {
            let e = match it {
                Item::Lost { ts, cpu, count } => Some(Event::lost(ts, cpu, count)),
                Item::Pure {
                    ts,
                    cpu,
                    stream,
                    c,
                    kind,
                } => Some(self.parts(stream).finish(ts, cpu, c, kind)),
                Item::Record {
                    ts,
                    cpu,
                    stream,
                    at,
                    len,
                } => self.parts(stream).event(ts, cpu, kept.get((at, len)), s),
            };
            if let Some(e) = e {
                f(&e, s);
            }
        }
    }

    /// The decoding state, borrowed for a record of CPU stream `stream`.
    #[inline(always)]
    fn parts(&mut self, stream: u32) -> Parts<'_> {
        Parts {
            fmts: &self.fmts,
            decoder: &mut self.decoder,
            comms: &mut self.comms,
            unknown_ids: &mut self.unknown_ids,
            order: &mut self.order,
            diag: &mut self.diag,
            last: &mut self.last[stream as usize],
        }
    }
}

impl TraceDat {
    /// Copies what the reading half reads or writes on every record (the CPU streams'
    /// cursors, the pure events' plans) into memory the calling thread allocates: called
    /// on the reading thread, so that none of it shares a cache line with data the
    /// feeding thread writes (see `PerfData::settle_here`). The streams' page buffers
    /// stay: up to a MiB each, they share at most their first and last lines, and each
    /// refill allocates on this thread anyway.
    pub(crate) fn settle_here(&mut self) {
        let mut streams = Vec::with_capacity(self.streams.len());
        streams.append(&mut self.streams);
        self.streams = streams;
        self.pure = self.pure.clone();
    }

    /// Moves decoding out of the reader; it then gives taken records through
    /// [`TraceDat::next_records`] until [`TraceDat::rejoin`] puts decoding back.
    pub(crate) fn decode_apart(&mut self) -> Decoding {
        self.pure = Some(tep::Pure::new(&self.fmts));
        Decoding {
            fmts: std::mem::take(&mut self.fmts),
            decoder: std::mem::take(&mut self.decoder),
            comms: std::mem::replace(&mut self.comms, Comms::new(Vec::new(), Vec::new())),
            unknown_ids: std::mem::take(&mut self.unknown_ids),
            order: std::mem::take(&mut self.order),
            diag: Diag::default(),
            last: self.streams.iter().map(|st| st.last).collect(),
        }
    }

    /// Copies taken records into `out` until it holds `max` items; false at the end. With
    /// `help`, the pure events among them are decoded here, on the reading thread.
    pub(crate) fn next_records(
        &mut self,
        out: &mut Records,
        max: usize,
        help: bool,
    ) -> Result<bool, ReadError> {
        while out.len() < max {
            let item = match self.take_next()? {
                None => return Ok(false),
                Some(Taken::Lost { ts, cpu, count }) => Item::Lost { ts, cpu, count },
                Some(Taken::Record {
                    ts,
                    cpu,
                    i,
                    start,
                    end,
                }) => {
                    let data = &self.streams[i].buf[start..end];
                    let stream = i as u32;
                    let pure = self.pure.as_ref().filter(|_| help);
                    match pure.and_then(|p| p.decode(data)) {
                        Some((c, kind)) => Item::Pure {
                            ts,
                            cpu,
                            stream,
                            c,
                            kind,
                        },
                        None => {
                            let (at, len) = out.keep(data);
                            Item::Record {
                                ts,
                                cpu,
                                stream,
                                at,
                                len,
                            }
                        }
                    }
                }
            };
            out.push(item);
        }
        Ok(true)
    }

    /// Puts decoding back, with what it noticed.
    pub(crate) fn rejoin(&mut self, d: Decoding) {
        self.pure = None;
        self.fmts = d.fmts;
        self.decoder = d.decoder;
        self.comms = d.comms;
        self.unknown_ids = d.unknown_ids;
        self.order = d.order;
        // Reading itself only counts damaged pages, so the samples keep decoding's order.
        self.diag.absorb(d.diag, 0);
        for (st, last) in self.streams.iter_mut().zip(d.last) {
            st.last = last;
        }
    }
}
