//! A Perfetto trace as a [`Binary`] reader: indexed first, its bundles then read in time
//! order (`index.rs`), and its two halves.

use super::apart::{Decoding, Records};
use super::index::{Index, Source};
use super::sniff;
use super::Perfetto;
use crate::event::{Event, Interner};
use crate::read::binary::Origin;
use crate::read::binary::{batch_of, spool, whole, Binary, DecodingHalf, Opening};
use crate::read::declare::{Build, Reader, Sniff};
use crate::read::format::Format;
use crate::read::source::{Diag, OrderStats, ReadError};
use crate::read::{memory, unpack, Compression};
use std::any::Any;
use std::io::Read;
use std::sync::Arc;

/// Perfetto's protobuf trace, streamed.
pub(crate) const PERFETTO: Reader = Reader {
    format: Format::Perfetto,
    arg: "perfetto",
    sniff: Sniff {
        // After trace.dat and perf.data, whose magic numbers are exact.
        priority: 2,
        magic: Some(sniff),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Binary(open),
};

/// Opens a sniffed Perfetto trace: a file in place (a compressed one through cursors), a
/// stream (a pipe, stdin) spooled to a temporary file first, decompressed; bytes from
/// memory where they are (decompressed into memory).
pub(crate) fn open(o: Opening<'_>) -> Result<Box<dyn Binary>, ReadError> {
    let (path, compression, cut) = (o.path, o.compression, o.cut());
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let origin = o.origin().clone();
    let rd = o.rest();
    let (mut index, src) = match origin {
        Origin::Memory(b) => {
            let b = match compression {
                Compression::None => b,
                _ => Arc::new(whole(rd).map_err(io_err)?),
            };
            let index = Index::scan(memory::Reader::new(b.clone())).map_err(io_err)?;
            (index, Source::Memory(b))
        }
        Origin::File(file) => {
            let index = Index::scan(rd).map_err(io_err)?;
            let src = match compression {
                Compression::None => Source::File(file),
                _ => Source::Unpacked(Arc::new(unpack::Unpacked::unmeasured(path, file))),
            };
            // A large bundle is read at a dozen places at once (perfetto::large), more
            // than a compressed file keeps cursors for: its packets are decompressed to
            // a file first.
            let src = match (&src, index.has_large()) {
                (Source::Unpacked(_), true) => {
                    let packets = Box::new(src.reader().take(index.valid()));
                    Source::File(Arc::new(spool(path, packets)?))
                }
                _ => src,
            };
            (index, src)
        }
        Origin::Stream => {
            let spooled = Arc::new(spool(path, rd)?);
            let index = Index::scan(unpack::FileAt::new(spooled.clone())).map_err(io_err)?;
            (index, Source::File(spooled))
        }
    };
    index.finish(&src);
    Ok(Box::new(Perfetto::from_index(path, index, src, cut)))
}

impl Binary for Perfetto {
    fn next_ref(&mut self, s: &mut Interner) -> Result<Option<&Event>, ReadError> {
        Perfetto::next_ref(self, s)
    }
    fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        Perfetto::next_decoded(self, s)
    }
    fn diag(&self) -> &Diag {
        Perfetto::diag(self)
    }
    fn order(&self) -> OrderStats {
        Perfetto::order(self)
    }
    fn bytes(&self) -> u64 {
        Perfetto::bytes(self)
    }
    fn machine(&self) -> Option<String> {
        self.info().machine.clone()
    }
    fn notes(&self) -> Vec<String> {
        Perfetto::notes(self)
    }
    fn decode_apart(&mut self) -> Option<Box<dyn DecodingHalf>> {
        Some(Box::new(Perfetto::decode_apart(self)))
    }
    fn fill(&mut self, out: &mut dyn Any, max: usize, help: bool) -> Result<bool, ReadError> {
        // Not behind, the feeding thread waits for batches: it decodes them itself.
        self.next_items(batch_of::<Records>(out), max, !help)
    }
    fn rejoin(&mut self, half: Box<dyn DecodingHalf>) {
        if let Ok(d) = half.into_any().downcast::<Decoding>() {
            Perfetto::rejoin(self, *d);
        }
    }
    fn batch(&self) -> Box<dyn Any + Send> {
        Box::new(Records::default())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl DecodingHalf for Decoding {
    fn drain(
        &mut self,
        s: &mut Interner,
        batch: &mut dyn Any,
        f: &mut dyn FnMut(&Event, &Interner),
    ) {
        // Not emptied: the packets go back to be freed where they were decoded.
        self.decode(s, batch_of::<Records>(batch), f);
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
