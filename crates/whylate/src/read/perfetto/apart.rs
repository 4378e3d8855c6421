//! A Perfetto trace read on two threads: the reading thread walks the packets and decodes
//! each with prost (most of the cost), and the decoding state ([`State`]: the hold that
//! puts the CPUs' events in time order, the task names, every string interned) moves to
//! the thread that feeds the timeline, which takes the decoded packets in file order.
//! Read on one thread, the timeline's thread sat idle most of the pass.

use super::{Item, Perfetto, State};
use crate::event::{Event, Interner};
use crate::read::ReadError;

/// Decoded packets in file order, as one hand-over. The packets stay after they are taken
/// (`taken` says how far), so that the batch goes back to the reading thread with them.
#[derive(Default)]
pub(crate) struct Records {
    items: Vec<Item>,
    taken: usize,
}

/// Packet bytes per hand-over: a decoded packet takes a few times its bytes, so a batch
/// is bounded by bytes as well as by count.
const BATCH_BYTES: u64 = 1 << 18;

/// The decoding half of a Perfetto reader, moved to another thread.
pub(crate) struct Decoding(State);

impl Decoding {
    /// Takes `batch`'s packets in order, handing each event to `f` once its time has come
    /// (all of them after the stream's end). The packets stay in the batch: it goes back
    /// to the reading thread, which frees them where they were allocated
    /// ([`Perfetto::next_items`]); freed here, the reading thread's allocator took fresh
    /// memory for every packet.
    pub(crate) fn decode(
        &mut self,
        s: &mut Interner,
        batch: &mut Records,
        mut f: impl FnMut(&Event, &Interner),
    ) {
        self.0.comms.seed(s);
        // A batch comes back untaken only when its filling was cut short (cancelled):
        // then it is the one taken before, and is not taken twice.
        let fresh = &batch.items[batch.taken..];
        batch.taken = batch.items.len();
        for it in fresh {
            self.0.take(it, s);
            while let Some(e) = self.0.next_ready(s) {
                f(&e, s);
            }
        }
    }
}

impl Perfetto {
    /// Moves the decoding state out of the reader; it then reads packets through
    /// [`Perfetto::next_items`] until [`Perfetto::rejoin`] puts the state back.
    pub(crate) fn decode_apart(&mut self) -> Decoding {
        Decoding(std::mem::replace(&mut self.st, State::new()))
    }

    /// Reads and decodes packets into `out`, emptied first, until it holds `max` of them or
    /// a batch's bytes; false once the stream's end is in `out`.
    pub(crate) fn next_items(&mut self, out: &mut Records, max: usize) -> Result<bool, ReadError> {
        for it in out.items.drain(..) {
            self.recycle(it);
        }
        out.taken = 0;
        let from = self.bytes();
        while out.items.len() < max && self.bytes() - from < BATCH_BYTES {
            let it = self.read_item()?;
            let end = matches!(it, Item::End(_));
            out.items.push(it);
            if end {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Puts the decoding state back, with all it read.
    pub(crate) fn rejoin(&mut self, d: Decoding) {
        self.st = d.0;
    }
}
