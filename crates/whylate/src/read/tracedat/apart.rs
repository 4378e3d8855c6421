//! trace.dat read on two threads. The reading thread walks the CPUs' pages and merges
//! their records by time as the one-thread reader does, copying each record into a batch
//! ([`Records`]); the decoding half ([`Decoding`]: the event formats, the task names,
//! every string interned) moves to the thread that feeds the timeline and makes the
//! events there, in the same order.

use super::*;
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
    /// Decodes `batch` in order, handing each event to `f`.
    pub(crate) fn decode(
        &mut self,
        s: &mut Interner,
        batch: &Records,
        mut f: impl FnMut(&Event, &Interner),
    ) {
        self.comms.seed(s);
        for it in batch.items() {
            let e = match *it {
                Item::Lost { ts, cpu, count } => Some(Event::lost(ts, cpu, count)),
                Item::Record {
                    ts,
                    cpu,
                    stream,
                    at,
                    len,
                } => {
                    let parts = Parts {
                        fmts: &self.fmts,
                        decoder: &mut self.decoder,
                        comms: &mut self.comms,
                        unknown_ids: &mut self.unknown_ids,
                        order: &mut self.order,
                        diag: &mut self.diag,
                        last: &mut self.last[stream as usize],
                    };
                    let data = batch.bytes((at, len));
                    parts.event(ts, cpu, data, s)
                }
            };
            if let Some(e) = e {
                f(&e, s);
            }
        }
    }
}

impl TraceDat {
    /// Moves decoding out of the reader; it then gives taken records through
    /// [`TraceDat::next_records`] until [`TraceDat::rejoin`] puts decoding back.
    pub(crate) fn decode_apart(&mut self) -> Decoding {
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

    /// Copies taken records into `out` until it holds `max` items; false at the end.
    pub(crate) fn next_records(
        &mut self,
        out: &mut Records,
        max: usize,
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
                    let (at, len) = out.keep(&self.streams[i].buf[start..end]);
                    Item::Record {
                        ts,
                        cpu,
                        stream: i as u32,
                        at,
                        len,
                    }
                }
            };
            out.push(item);
        }
        Ok(true)
    }

    /// Puts decoding back, with what it noticed.
    pub(crate) fn rejoin(&mut self, d: Decoding) {
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
