//! A Perfetto trace read on two threads: the reading thread walks the packets and decodes
//! each with prost (most of the cost), and the decoding state ([`State`]: the hold that
//! puts the CPUs' events in time order, the task names, every string interned) moves to
//! the thread that feeds the timeline, which takes the decoded packets in file order.
//! Read on one thread, the timeline's thread sat idle most of the pass. Batch by batch,
//! when the feeding thread is not behind (it waits for batches: most of a `stats` or an
//! automatic `explain`, now and then in cycle mode), the reading thread hands packets
//! over undecoded, and prost decodes them there.

use super::{decode, protos, recycle, Got, Item, Perfetto, State};
use crate::event::{Event, Interner};
use crate::read::ReadError;

/// One packet handed over.
pub(crate) enum Slot {
    /// Decoded on the reading thread (or what ended the stream).
    Item(Item),
    /// Undecoded: its offset in the trace and its size; the bytes follow the earlier
    /// undecoded packets' in [`Records::raw`].
    Raw { at: u64, len: u32 },
}

/// Packets in file order, as one hand-over. Decoded packets stay after they are taken
/// (`taken` says how far), so that the batch goes back to the reading thread with them.
#[derive(Default)]
pub(crate) struct Records {
    slots: Vec<Slot>,
    raw: Vec<u8>,
    taken: usize,
}

#[cfg(test)]
impl Records {
    /// Packets in the batch handed over undecoded.
    pub fn raw_count(&self) -> usize {
        (self.slots.iter())
            .filter(|s| matches!(s, Slot::Raw { .. }))
            .count()
    }

    /// Bytes of the packets handed over undecoded.
    pub fn raw_bytes(&self) -> usize {
        self.raw.len()
    }
}

/// Packet bytes per hand-over: a decoded packet takes a few times its bytes, so a batch
/// is bounded by bytes as well as by count.
const BATCH_BYTES: u64 = 1 << 18;

/// The decoding half of a Perfetto reader, moved to another thread.
pub(crate) struct Decoding {
    st: State,
    /// Event vectors of the bundles decoded here, for the next ones.
    pool: Vec<Vec<protos::FtraceEvent>>,
}

impl Decoding {
    /// Takes `batch`'s packets in order (decoding the undecoded ones), handing each event
    /// to `f` once its time has come (all of them after the stream's end). The packets
    /// decoded on the reading thread stay in the batch: it goes back to that thread,
    /// which frees them where they were allocated ([`Perfetto::next_items`]); freed here,
    /// the reading thread's allocator took fresh memory for every packet.
    pub(crate) fn decode(
        &mut self,
        s: &mut Interner,
        batch: &mut Records,
        mut f: impl FnMut(&Event, &Interner),
    ) {
        self.st.comms.seed(s);
        // A batch comes back untaken only when its filling was cut short (cancelled):
        // then it is the one taken before, and is not taken twice.
        // The raw bytes are read from the start: a batch is taken whole or not at all.
        debug_assert!(batch.taken == 0 || batch.taken == batch.slots.len());
        let fresh = &batch.slots[batch.taken..];
        batch.taken = batch.slots.len();
        let mut raw = &batch.raw[..];
        for slot in fresh {
            match slot {
                Slot::Item(it) => self.st.take(it, s),
                Slot::Raw { at, len } => {
                    let (bytes, rest) = raw.split_at(*len as usize);
                    raw = rest;
                    let it = decode(*at, bytes, self.pool.pop());
                    self.st.take(&it, s);
                    recycle(&mut self.pool, it);
                }
            }
            while let Some(e) = self.st.next_ready(s) {
                f(&e, s);
            }
        }
    }
}

impl Perfetto {
    /// Moves the decoding state out of the reader; it then reads packets through
    /// [`Perfetto::next_items`] until [`Perfetto::rejoin`] puts the state back.
    pub(crate) fn decode_apart(&mut self) -> Decoding {
        Decoding {
            st: std::mem::replace(&mut self.st, State::new()),
            pool: Vec::new(),
        }
    }

    /// Reads packets into `out`, emptied first, until it holds `max` of them or a
    /// batch's bytes; false once the stream's end is in `out`. Decoded here, or, with
    /// `raw`, left for the thread that takes them.
    pub(crate) fn next_items(
        &mut self,
        out: &mut Records,
        max: usize,
        raw: bool,
    ) -> Result<bool, ReadError> {
        for slot in out.slots.drain(..) {
            if let Slot::Item(it) = slot {
                self.recycle(it);
            }
        }
        out.raw.clear();
        out.taken = 0;
        // Bounded by the packets' own bytes: an indexed trace's offset stands still
        // while its bundles are given out of file order.
        let from = self.given;
        while out.slots.len() < max && self.given - from < BATCH_BYTES {
            let slot = match raw {
                true => self.read_raw(&mut out.raw)?,
                false => Slot::Item(self.read_item()?),
            };
            let end = matches!(slot, Slot::Item(Item::End(_)));
            out.slots.push(slot);
            if end {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Reads the next packet and appends its bytes to `raw`, undecoded. A packet larger
    /// than a batch is decoded here instead: the batches' buffers keep their size for the
    /// whole read, and one packet of junk could make each of them hundreds of MiB.
    fn read_raw(&mut self, raw: &mut Vec<u8>) -> Result<Slot, ReadError> {
        let mut pool = std::mem::take(&mut self.pool);
        let got = self.read_with(|at, b| match u32::try_from(b.len()) {
            Ok(len) if u64::from(len) <= BATCH_BYTES => {
                raw.extend_from_slice(b);
                Slot::Raw { at, len }
            }
            _ => Slot::Item(decode(at, b, pool.pop())),
        });
        self.pool = pool;
        Ok(match got? {
            Got::Packet(slot) => slot,
            Got::Other(it) => Slot::Item(it),
        })
    }

    /// Puts the decoding state back, with all it read.
    pub(crate) fn rejoin(&mut self, d: Decoding) {
        self.st = d.st;
    }
}
