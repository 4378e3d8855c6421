//! perf.data as a [`Binary`] reader: how it is opened after sniffing (in place through
//! decompressing cursors when it can be, else from its bytes), and its two halves.

use super::apart::{Decoding, Records};
use super::sniff;
use super::PerfData;
use crate::event::{Event, Interner};
use crate::read::binary::{batch_of, Binary, DecodingHalf, Opening};
use crate::read::declare::{Build, Reader, Sniff};
use crate::read::format::Format;
use crate::read::ksyms;
use crate::read::options::PERF_WINDOW;
use crate::read::source::{Diag, OrderStats, ReadError};
use crate::read::unpack::Unpacked;
use std::any::Any;
use std::sync::Arc;

/// perf's binary perf.data.
pub(crate) const PERF_DATA: Reader = Reader {
    format: Format::PerfData,
    arg: "perf-data",
    sniff: Sniff {
        priority: 1,
        magic: Some(sniff),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Binary(open),
};

/// Opens a sniffed perf.data, with `--kallsyms` symbols when given. It is sorted by its
/// reader, round by round, with a hold of at least [`PERF_WINDOW`] events for what comes
/// after its round.
pub(crate) fn open(o: Opening<'_>) -> Result<Box<dyn Binary>, ReadError> {
    o.progress_in_events();
    let (path, opts, cut) = (o.path, o.opts, o.cut());
    let window = opts.window.max(PERF_WINDOW);
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(file) = o.compressed_file() {
        let u = match Unpacked::open_file(path, file.clone()).map_err(io_err)? {
            Some(u) => Some(u),
            None => Unpacked::measure_file(path, file.clone()).map_err(io_err)?,
        };
        if let Some(u) = u {
            let p = PerfData::open_unpacked(path, Arc::new(u), window, opts.kallsyms.as_ref())?;
            return Ok(Box::new(p));
        }
    }
    let bytes = o.random_access()?;
    let p = PerfData::open_with(path, bytes, window, true, opts.kallsyms.as_ref())
        .map_err(|e| crate::read::binary::with_cut(e, &cut))?;
    Ok(Box::new(p))
}

impl Binary for PerfData {
    fn next_ref(&mut self, s: &mut Interner) -> Result<Option<&Event>, ReadError> {
        PerfData::next_ref(self, s)
    }
    fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        PerfData::next_decoded(self, s)
    }
    fn diag(&self) -> &Diag {
        PerfData::diag(self)
    }
    fn order(&self) -> OrderStats {
        PerfData::order(self)
    }
    fn bytes(&self) -> u64 {
        PerfData::bytes(self)
    }
    fn unpack_cost(&self) -> Option<(u64, u64)> {
        PerfData::unpack_cost(self)
    }
    fn symbols(&self) -> Option<ksyms::SymbolSource> {
        self.info().symbols.clone()
    }
    fn symbol_note(&self) -> Option<String> {
        let info = self.info();
        let Some(ksyms::SymbolSource::Unresolved(why)) = &info.symbols else {
            return None;
        };
        let needs = info.events.iter().any(|e| {
            e.starts_with("workqueue:") || e.starts_with("timer:") || e.contains("tasklet")
        });
        needs.then(|| {
            format!(
                "kernel code addresses (work functions, timer callbacks) are shown in hex: {why}; pass the recording machine's /proc/kallsyms with --kallsyms FILE"
            )
        })
    }
    fn machine(&self) -> Option<String> {
        self.info().arch.clone()
    }
    fn decode_apart(&mut self) -> Option<Box<dyn DecodingHalf>> {
        PerfData::decode_apart(self).map(|d| Box::new(d) as Box<dyn DecodingHalf>)
    }
    fn settle_here(&mut self) {
        PerfData::settle_here(self)
    }
    fn fill(&mut self, out: &mut dyn Any, max: usize, help: bool) -> Result<bool, ReadError> {
        Ok(self.next_records(batch_of::<Records>(out), max, help))
    }
    fn rejoin(&mut self, half: Box<dyn DecodingHalf>) {
        if let Ok(d) = half.into_any().downcast::<Decoding>() {
            PerfData::rejoin(self, *d);
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
