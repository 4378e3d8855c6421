//! trace.dat as a [`Binary`] reader: how it is opened after sniffing (in place through
//! decompressing cursors when it can be, else from its bytes), and its two halves.

use super::apart::{Decoding, Records};
use super::sniff;
use super::{Probe, TraceDat};
use crate::event::{Event, Interner};
use crate::read::binary::{batch_of, Binary, DecodingHalf, Opening};
use crate::read::declare::{Build, Reader, Sniff};
use crate::read::format::Format;
use crate::read::ksyms;
use crate::read::source::{Diag, OrderStats, ReadError};
use crate::read::unpack::Unpacked;
use std::any::Any;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// trace-cmd's binary trace.dat (v6, v7).
pub(crate) const TRACE_DAT: Reader = Reader {
    format: Format::TraceDat,
    arg: "trace-dat",
    sniff: Sniff {
        priority: 0,
        magic: Some(sniff),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Binary(open),
};

/// Opens a sniffed trace.dat, with `--kallsyms` symbols when given.
pub(crate) fn open(o: Opening<'_>) -> Result<Box<dyn Binary>, ReadError> {
    o.progress_in_events();
    let (path, opts, cut) = (o.path, o.opts, o.cut());
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let in_place = match o.compressed_file() {
        Some(file) => match Unpacked::open_file(path, file.clone()).map_err(io_err)? {
            Some(u) => Some(u),
            None => of_no_size(path, file).map_err(io_err)?,
        },
        None => None,
    };
    // In place when it can be; one with more CPU regions than cursors are kept for is
    // read from its bytes (spooled).
    let d = match in_place
        .map(|u| TraceDat::open_unpacked(path, u))
        .transpose()?
    {
        Some(Some(d)) => d,
        _ => TraceDat::open_bytes(path, o.random_access()?)
            .map_err(|e| crate::read::binary::with_cut(e, &cut))?,
    };
    let mut d = d;
    if let Some(given) = &opts.kallsyms {
        d.use_kallsyms(given);
    }
    Ok(Box::new(d))
}

/// A compressed trace.dat that declares no size (gzip, zstd from a pipe), read in place
/// when its size can be had: when its CPU regions end where its gzip trailer says the
/// data does (modulo 4 GiB), that end, without a pass; otherwise by decompressing it
/// through once. None when it would be spooled anyway (too many CPU regions, found
/// before that pass) and for a cut file.
fn of_no_size(path: &Path, file: &Arc<File>) -> io::Result<Option<Unpacked>> {
    match TraceDat::probe(path, file.clone()) {
        Probe::TooManyRegions => return Ok(None),
        Probe::Ends(end) => {
            let trailer = crate::read::declared::gzip_size_mod_4g(file)?;
            if trailer == Some(end as u32) {
                return Ok(Some(Unpacked::claimed(path, file.clone(), end)));
            }
        }
        Probe::Unknown => {}
    }
    Unpacked::measure_file(path, file.clone())
}

impl Binary for TraceDat {
    fn next_ref(&mut self, s: &mut Interner) -> Result<Option<&Event>, ReadError> {
        TraceDat::next_ref(self, s)
    }
    fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        TraceDat::next_decoded(self, s)
    }
    fn diag(&self) -> &Diag {
        TraceDat::diag(self)
    }
    fn order(&self) -> OrderStats {
        TraceDat::order(self)
    }
    fn bytes(&self) -> u64 {
        TraceDat::bytes(self)
    }
    fn unpack_cost(&self) -> Option<(u64, u64)> {
        TraceDat::unpack_cost(self)
    }
    fn snapshot(&self) -> Option<&crate::snapshot::Snapshot> {
        TraceDat::snapshot(self)
    }
    fn symbols(&self) -> Option<ksyms::SymbolSource> {
        Some(match &self.info().kallsyms_from {
            Some(f) => ksyms::SymbolSource::Given(f.clone()),
            None if self.formats().carries_kallsyms() => ksyms::SymbolSource::Trace,
            None => ksyms::SymbolSource::Unresolved("the trace.dat carries no symbols".into()),
        })
    }
    fn machine(&self) -> Option<String> {
        self.info().uname.clone()
    }
    fn decode_apart(&mut self) -> Option<Box<dyn DecodingHalf>> {
        Some(Box::new(TraceDat::decode_apart(self)))
    }
    fn settle_here(&mut self) {
        TraceDat::settle_here(self)
    }
    fn fill(&mut self, out: &mut dyn Any, max: usize, help: bool) -> Result<bool, ReadError> {
        self.next_records(batch_of::<Records>(out), max, help)
    }
    fn rejoin(&mut self, half: Box<dyn DecodingHalf>) {
        if let Ok(d) = half.into_any().downcast::<Decoding>() {
            TraceDat::rejoin(self, *d);
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
        let b = batch_of::<Records>(batch);
        self.decode(s, b, f);
        b.clear();
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
