//! `perf.data` read natively. Tracepoint payloads (the RAW sample field, an ftrace record)
//! go through the same format code as trace.dat, with the formats from the file's
//! TRACING_DATA section.
//!
//! Two ways through the data section:
//! - **Fast** (the usual little-endian, uncompressed file of one sample layout): the file
//!   is mapped, each round between FINISHED_ROUND records is scanned for (time, offset)
//!   pairs only, sorted the way perf's ordered-events queue sorts them, and each sample is
//!   decoded once, in place, when it is due. No record is copied.
//! - **Generic** (`-z` compressed records, big-endian files, READ values before RAW, mixed
//!   layouts, simpleperf): `linux-perf-data`'s record iterator and round sorter, behind a
//!   reorder window. It is also the reference the fast path is tested against.

use super::ksyms::{self, KernelId, SymbolSource};
use super::tep::{self, Decoder, Formats};
use super::unpack::{self, Bytes};
use super::{Diag, EventSource, OrderCheck, OrderStats, ReadError, Sorted};
use crate::event::{Event, Interner, Kind, Sym};
use crate::read::format::Format;
use linux_perf_data::linux_perf_event_reader::{Endianness, EventRecord};
use linux_perf_data::{Feature, PerfFileReader, PerfFileRecord};
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// True when `head` starts like a perf.data (either byte order).
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP")
}

pub(crate) use binary::PERF_DATA;

impl Format {
    /// perf's binary perf.data.
    #[allow(non_upper_case_globals)]
    pub const PerfData: Format = Format::named("perf.data");
}

/// What the header says.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PerfInfo {
    /// Event names recorded (`sched:sched_switch`, `cycles`).
    pub events: Vec<String>,
    /// `perf record` command line.
    pub cmdline: Option<String>,
    /// Kernel release of the recording machine.
    pub os_release: Option<String>,
    /// Machine architecture of the recording machine (`uname -m`).
    pub arch: Option<String>,
    /// Pipe-mode file (`perf record -o -`).
    pub pipe: bool,
    /// Where the kernel symbols that name work functions and timer callbacks came from.
    pub symbols: Option<super::ksyms::SymbolSource>,
}

pub mod apart;
mod binary;
mod bytes;
mod generic;
mod layout;
mod record;
mod sample;
use bytes::{record_size, Data, Src};
use layout::check_layout;
use sample::*;

type Reader = PerfFileReader<BufReader<Src>>;

pub use crate::read::ksyms::Given;

/// Picks the kernel symbols for a perf.data, which stores none of its own: the ones given,
/// else this machine's when it runs the recording kernel image at the same address (see
/// [`super::ksyms`]), else none (addresses stay hex, and the source says why).
fn choose_symbols(
    fmts: &mut Formats,
    rd: &Reader,
    file: &Bytes,
    given: Option<&Given>,
) -> Result<SymbolSource, String> {
    if let Some(g) = given {
        let rec = KernelId {
            build_id: kernel_build_id(rd),
            text: kernel_text_address(file),
        };
        ksyms::given_matches(&rec, g.name(), g.text())?;
        fmts.load_given(g);
        return Ok(SymbolSource::Given(g.name().to_string()));
    }
    if fmts.has_kallsyms() {
        return Ok(SymbolSource::Trace);
    }
    let build_id = kernel_build_id(rd);
    let here = KernelId::here();
    let mut rec = KernelId {
        build_id,
        text: None,
    };
    // The load address costs a scan of the first records: only when the build matches.
    if rec.build_id.is_some() && rec.build_id == here.build_id {
        rec.text = kernel_text_address(file);
    }
    Ok(match ksyms::host_may_resolve(&rec, here) {
        Ok(()) => {
            let attrs = rd.perf_file.event_attributes();
            fmts.load_this_machines_kallsyms(!attrs.iter().all(|a| ksyms::names_no_code(a.name())));
            SymbolSource::ThisMachine
        }
        Err(why) => SymbolSource::Unresolved(why),
    })
}

/// The recording kernel's build-id, as hex, when perf stored it.
fn kernel_build_id(rd: &Reader) -> Option<String> {
    rd.perf_file.build_ids().ok().and_then(|ids| {
        let k = ids.get(&linux_perf_data::DsoKey::Kernel)?;
        Some(
            k.build_id
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>(),
        )
    })
}

/// Where the kernel's text was mapped when the trace was recorded: perf's synthesized
/// `[kernel.kallsyms]_text` MMAP record, near the start of the data section. Read through
/// a reader of its own so the main reader's position is untouched.
fn kernel_text_address(file: &Bytes) -> Option<u64> {
    let mut rd = PerfFileReader::parse_file(BufReader::new(Src::another(file).ok()?)).ok()?;
    for _ in 0..100_000 {
        let rec = rd.record_iter.next_record(&mut rd.perf_file).ok()??;
        let PerfFileRecord::EventRecord { record, .. } = rec else {
            continue;
        };
        if let Ok(EventRecord::Mmap(m)) = record.parse() {
            if m.pid == -1 && m.path.as_slice().starts_with(b"[kernel.kallsyms]") {
                return Some(m.address);
            }
        }
    }
    None
}

/// Reads a perf.data file: events in perf's own (round-sorted) time order.
pub struct PerfData {
    path: PathBuf,
    info: PerfInfo,
    bytes: u64,
    mode: Mode,
    /// The compressed file's cursors, when it is read through them.
    unpacked: Option<std::sync::Arc<unpack::Unpacked>>,
}

enum Mode {
    Fast(Box<Fast>),
    Generic(Box<Sorted<Generic>>),
}

impl PerfData {
    /// Opens `path`; `window` is the reorder window of the generic path.
    pub fn open(path: &Path, file: File, window: usize) -> Result<PerfData, ReadError> {
        Self::open_with(path, Bytes::File(file), window, true, None)
    }

    /// Opens `path` with the recording machine's symbols (`--kallsyms FILE`), which win
    /// over any other source.
    pub fn open_with_kallsyms(
        path: &Path,
        file: File,
        window: usize,
        kallsyms: Option<&Given>,
    ) -> Result<PerfData, ReadError> {
        Self::open_with(path, Bytes::File(file), window, true, kallsyms)
    }

    /// Opens the compressed perf.data `path` in place, through `u`'s decompressing cursors
    /// ([`unpack`]): the data section is read into a window that holds what the rounds
    /// still need, not mapped.
    pub fn open_unpacked(
        path: &Path,
        u: std::sync::Arc<unpack::Unpacked>,
        window: usize,
        kallsyms: Option<&Given>,
    ) -> Result<PerfData, ReadError> {
        Self::open_with(path, Bytes::Unpacked(u), window, true, kallsyms)
    }

    /// Opens `path` through `linux-perf-data` only, whatever the layout: the reference the
    /// fast path is checked against.
    pub fn open_generic(path: &Path, file: File, window: usize) -> Result<PerfData, ReadError> {
        Self::open_with(path, Bytes::File(file), window, false, None)
    }

    pub(crate) fn open_with(
        path: &Path,
        file: Bytes,
        window: usize,
        allow_fast: bool,
        kallsyms: Option<&Given>,
    ) -> Result<PerfData, ReadError> {
        let err = |why: String| ReadError::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            why,
        };
        let bytes = file.size().unwrap_or(0);
        let mut head = [0u8; 16];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| ReadError::Io {
                path: path.to_path_buf(),
                source: e,
            })?;
        // A pipe-mode file's header is only magic + size (16).
        let pipe = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")) == 16
            || u64::from_be_bytes(head[8..16].try_into().expect("8 bytes")) == 16;
        if pipe {
            return Err(err(
                "a pipe-mode perf.data (perf record -o -): convert it with `perf inject -i FILE -o FILE2` and read FILE2".into(),
            ));
        }
        let section = check_layout(&file, bytes).map_err(|(offset, why)| ReadError::Corrupt {
            path: path.to_path_buf(),
            offset,
            why,
        })?;
        let data = match allow_fast {
            true => Data::of(&file, section),
            false => None,
        };
        let src = Src::main(&file).map_err(|e| ReadError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        let rd = PerfFileReader::parse_file(BufReader::with_capacity(1 << 20, src))
            .map_err(|e| err(format!("not a readable perf.data: {e}")))?;
        let pf = &rd.perf_file;
        let attrs = pf.event_attributes();
        let mut info = PerfInfo {
            events: attrs
                .iter()
                .map(|a| a.name().unwrap_or("?").to_string())
                .collect(),
            cmdline: pf.cmdline().ok().flatten().map(|v| v.join(" ")),
            os_release: pf.os_release().ok().flatten().map(str::to_string),
            arch: pf.arch().ok().flatten().map(str::to_string),
            pipe,
            symbols: None,
        };
        info.events.dedup();
        let attr_names = attrs.iter().map(|a| a.name().map(str::to_string)).collect();
        let (mut fmts, cmdlines) = match pf.feature_section_data(Feature::TRACING_DATA) {
            Some(td) => super::tracedat::open::parse_tracing_data(td).map_err(|(off, why)| {
                ReadError::Corrupt {
                    path: path.to_path_buf(),
                    offset: off,
                    why: format!("TRACING_DATA section: {why}"),
                }
            })?,
            None => (Formats::default(), Vec::new()),
        };
        let symbols = choose_symbols(&mut fmts, &rd, &file, kallsyms)
            .map_err(|why| ReadError::Refused { why })?;
        info.symbols = Some(symbols);
        let smp = Samples {
            pure: tep::Pure::new(&fmts),
            fmts,
            decoder: Decoder::new(),
            attr_names,
            attr_syms: Vec::new(),
            comms: super::comms::Comms::new(cmdlines, Vec::new()),
            diag: Diag::default(),
            order: OrderCheck::default(),
        };
        let mode = match data.zip(Fast::layouts(&rd)) {
            Some((d, lays)) => Mode::Fast(Box::new(Fast::new(&rd, d, section, lays, window, smp))),
            None => Mode::Generic(Box::new(Sorted::new(
                Generic {
                    path: path.to_path_buf(),
                    rd,
                    smp,
                },
                window,
            ))),
        };
        Ok(PerfData {
            path: path.to_path_buf(),
            info,
            bytes,
            mode,
            unpacked: match file {
                Bytes::Unpacked(u) => Some(u),
                Bytes::File(_) | Bytes::Memory(_) => None,
            },
        })
    }

    /// Read through decompressing cursors: (bytes decompressed only to skip ahead, cursors
    /// started); None for a plain file.
    pub fn unpack_cost(&self) -> Option<(u64, u64)> {
        self.unpacked.as_ref().map(|u| u.cost())
    }

    /// What the header says.
    pub fn info(&self) -> &PerfInfo {
        &self.info
    }
    /// The event formats from TRACING_DATA.
    pub fn formats(&self) -> &Formats {
        &self.samples().fmts
    }
    /// File size.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The input's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// True when the data section is read by the in-place fast path.
    pub fn is_fast(&self) -> bool {
        matches!(self.mode, Mode::Fast(_))
    }
    fn samples(&self) -> &Samples {
        match &self.mode {
            Mode::Fast(f) => &f.smp,
            Mode::Generic(g) => &g.inner.smp,
        }
    }
    /// What the reader noticed.
    pub fn diag(&self) -> &Diag {
        &self.samples().diag
    }
    /// How far the events were from time order: the fast path emits perf's own order and
    /// counts what still came early; the generic one is behind a reorder window.
    pub fn order(&self) -> OrderStats {
        match &self.mode {
            Mode::Fast(f) => OrderStats {
                reordered: f.reordered,
                unsorted: f.smp.order.stats.unsorted,
                window: f.window,
                full: 0,
            },
            Mode::Generic(g) => g.order(),
        }
    }
    /// The next event in time order, lent.
    pub fn next_ref(&mut self, s: &mut Interner) -> Result<Option<&Event>, ReadError> {
        match &mut self.mode {
            Mode::Fast(f) => Ok(f.next_ref(s)),
            Mode::Generic(g) => g.next_ref(s),
        }
    }
    /// The next event in time order.
    pub fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        match &mut self.mode {
            Mode::Fast(f) => {
                let more = f.next_ref(s).is_some();
                Ok(if more { f.slot.take() } else { None })
            }
            Mode::Generic(g) => g.next_event(s),
        }
    }
}

impl EventSource for PerfData {
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.next_decoded(strings)
    }
    fn diag(&self) -> &Diag {
        PerfData::diag(self)
    }
    fn order(&self) -> OrderStats {
        PerfData::order(self)
    }
}

/// What turns one sample into an event, for both ways through the file.
struct Samples {
    fmts: Formats,
    /// The pure events' plans, for the decoding half's shortcut (`apart::emit`).
    pure: tep::Pure,
    decoder: Decoder,
    /// Per attr index: the attr's name (for non-tracepoint samples), and as a symbol.
    attr_names: Vec<Option<String>>,
    attr_syms: Vec<Sym>,
    comms: super::comms::Comms,
    diag: Diag,
    order: OrderCheck,
}

impl Samples {
    #[inline]
    fn seed(&mut self, s: &mut Interner) {
        self.comms.seed(s);
        if self.attr_syms.len() != self.attr_names.len() {
            self.attr_syms = self
                .attr_names
                .iter()
                .map(|n| s.intern(n.as_deref().unwrap_or("sample")))
                .collect();
        }
    }

    /// The event of one sample: its RAW payload decoded by the format its id names, or an
    /// `Other` named after its attr. None (counted) when the payload does not decode.
    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        s: &mut Interner,
        ts: u64,
        cpu: u32,
        tid: i32,
        tgid: i32,
        raw: Option<&[u8]>,
        attr: impl FnOnce() -> Option<usize>,
    ) -> Option<Event> {
        let (kind, flags) = match raw {
            Some(data) if !self.fmts.is_empty() => {
                let Some(c) = tep::common(data, self.fmts.endian) else {
                    self.diag.unparsed += 1;
                    return None;
                };
                let Some(fmt) = self.fmts.get(c.id) else {
                    self.diag.bad(
                        0,
                        format!("sample at {ts} ns has event id {}", c.id).as_bytes(),
                        "an event id with no format in TRACING_DATA",
                    );
                    return None;
                };
                (self.decoder.decode(&self.fmts, fmt, data, s), c.flags)
            }
            _ => (
                Kind::Other {
                    name: attr()
                        .and_then(|i| self.attr_syms.get(i).copied())
                        .unwrap_or(Sym::EMPTY),
                    fields: "".into(),
                },
                0,
            ),
        };
        Some(self.finish(ts, cpu, (tid, tgid), flags, kind))
    }

    /// The event of a sample whose kind is made: named after its task as of now.
    #[inline]
    fn finish(&mut self, ts: u64, cpu: u32, task: (i32, i32), flags: u16, kind: Kind) -> Event {
        self.comms.learn(&kind);
        let (tid, tgid) = task;
        let comm = self.comms.get(tid);
        self.order.see(ts);
        Event {
            ts,
            cpu,
            tid,
            tgid,
            comm,
            flags,
            kind,
        }
    }
}

/// `held.partition_point(pred)`, searched from the back: the answer is almost always
/// within the last round's records, and the held window is tens of thousands long.
fn count_from_back<T>(held: &std::collections::VecDeque<T>, pred: impl Fn(&T) -> bool) -> usize {
    let len = held.len();
    let mut step = 1;
    let mut hi = len;
    // Gallop back until an element satisfies pred (or the front is reached).
    loop {
        let probe = len.saturating_sub(step);
        if probe == 0 || pred(&held[probe]) {
            let lo = probe;
            let (mut lo, mut hi) = (lo, hi);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if pred(&held[mid]) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
        hi = probe;
        step *= 2;
    }
}

/// The data section through `linux-perf-data` (copies each record; sorts rounds itself).
struct Generic {
    path: PathBuf,
    rd: Reader,
    smp: Samples,
}

/// The data section read in place from a map of the file, or a window onto it. Aligned
/// to a cache line: the reading thread writes it on every record, and no other
/// allocation may share a line with it (see `PerfData::settle_here`).
#[repr(align(64))]
struct Fast {
    data: Data,
    /// Next record to scan, and the end of the data section.
    pos: usize,
    end: usize,
    /// One layout when every attr has the same; else one per attr (all have IDENTIFIER,
    /// so a record's attr is found from its first or last u64).
    lays: Vec<Layout>,
    /// The scan can take every record's time and CPU from `lays[0]` without finding its
    /// attr.
    scan_same: bool,
    /// Sample id → attr index, when there are several attrs.
    ids: FxHashMap<u64, usize>,
    one_attr: bool,
    /// While decoding is apart: the events the reading thread decodes itself.
    pure: Option<tep::Pure>,
    /// (time, offset) of the records of the round being scanned.
    round: Vec<(u64, usize)>,
    /// Records scanned and not yet emitted, in time order (ties in file order).
    held: std::collections::VecDeque<(u64, usize)>,
    merge: Vec<(u64, usize)>,
    /// How many of `held`'s first records may go out.
    ready: usize,
    /// perf's ordered-events rule: at each FINISHED_ROUND, what is no later than the
    /// latest time seen by the round before goes out...
    next_flush: u64,
    max_ts: u64,
    /// ...and the latest time perf's rule has let out: a record of a later round earlier
    /// than this one is one perf itself would print out of order.
    perf_last: u64,
    /// ...so, like the generic path's window, at least this many records stay held: one
    /// that comes after its round still finds its place.
    window: usize,
    reordered: u64,
    /// Each CPU's latest sample time (`u64::MAX`: none yet), when every record carries its
    /// time, every sample its CPU, and the file says how many CPUs were online. A CPU's
    /// buffer is read in order, so nothing earlier than the earliest of these is still to
    /// come: records up to it may go before the round ends, where perf's rule would hold
    /// them (a recording whose last rounds drain whole buffers of 64 MiB holds two of
    /// them otherwise).
    cpu_last: Option<Vec<u64>>,
    /// CPUs online when the file was recorded, and how many of them have had a sample:
    /// until each has, one not yet seen may still have earlier records to come.
    cpus: usize,
    cpus_seen: usize,
    /// The latest time let out: a record earlier than it came after its place (a CPU's
    /// buffer not in order, or a round perf itself prints late), and the per-CPU rule is
    /// dropped for the rest of the file.
    early: u64,
    eof: bool,
    slot: Option<Event>,
    smp: Samples,
    /// Bytes given back at least at a time (8 MiB; tests make it small).
    /// Bytes kept before the earliest record held: records handed over in place
    /// ([`apart`]) may still be read there (a page given back is read again, slower).
    lag: usize,
    release_step: usize,
    /// No release is tried before the scan reaches this offset.
    retry: usize,
    /// The map before this offset was given back to the kernel (see [`Fast::release`]).
    released: usize,
}

impl Fast {
    /// The fast path over `data`, whose data section is `(start, size)` (`check_layout`
    /// saw it inside the file), with the [`Fast::layouts`] of the file.
    fn new(
        rd: &Reader,
        data: Data,
        (start, size): (u64, u64),
        lays: Vec<Layout>,
        window: usize,
        smp: Samples,
    ) -> Fast {
        let attrs = rd.perf_file.event_attributes();
        let (start, size) = (start as usize, size as usize);
        let cpu_rule = by_cpu(&lays);
        let cpus = rd.perf_file.nr_cpus().ok().flatten();
        let cpus = cpus.map_or(0, |n| n.nr_cpus_online as usize);
        let scan_same = lays.iter().all(|l| {
            (l.time, l.cpu, l.trail, l.trail_time)
                == (lays[0].time, lays[0].cpu, lays[0].trail, lays[0].trail_time)
        });
        let ids = attrs
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.event_ids.iter().map(move |&id| (id, i)))
            .collect();
        if let Data::Map(m) = &data {
            let _ = m.advise(memmap2::Advice::Sequential);
        }
        Fast {
            pos: start,
            end: start.saturating_add(size),
            data,
            lays,
            scan_same,
            ids,
            one_attr: attrs.len() == 1,
            pure: None,
            round: Vec::new(),
            held: Default::default(),
            merge: Vec::new(),
            ready: 0,
            next_flush: 0,
            max_ts: 0,
            perf_last: 0,
            window,
            reordered: 0,
            cpu_last: (cpu_rule && cpus > 0).then(Vec::new),
            cpus,
            cpus_seen: 0,
            early: 0,
            eof: false,
            slot: None,
            smp,
            release_step: 8 << 20,
            lag: 0,
            retry: 0,
            released: start / page_size() * page_size(),
        }
    }

    /// The sample layouts (one when every attr has the same, else one per attr), or None
    /// when the file needs the generic path.
    fn layouts(rd: &Reader) -> Option<Vec<Layout>> {
        use linux_perf_data::linux_perf_event_reader::AttrFlags;
        let pf = &rd.perf_file;
        let attrs = pf.event_attributes();
        let id_all = attrs.first()?.attr.flags.contains(AttrFlags::SAMPLE_ID_ALL);
        let simple = pf.endian() == Endianness::LittleEndian
            && !pf.features().has_feature(Feature::COMPRESSED)
            && !pf.features().has_feature(Feature::SIMPLEPERF_META_INFO)
            && attrs
                .iter()
                .all(|a| a.attr.flags.contains(AttrFlags::SAMPLE_ID_ALL) == id_all);
        let mut lays = attrs
            .iter()
            .map(|a| Layout::new(a.attr.sample_format.bits(), id_all))
            .collect::<Option<Vec<_>>>()?;
        if lays.iter().all(|l| *l == lays[0]) {
            lays.truncate(1);
        }
        // Several attrs need an id in a known place: anywhere (the same layout) or first and
        // last (IDENTIFIER, when layouts differ). perf adds a `dummy` tracking event with
        // its own layout to every `record -a`, so the mixed case is the usual one.
        let identifier = attrs
            .iter()
            .all(|a| a.attr.sample_format.bits() & S_IDENTIFIER != 0);
        let mixed = lays.len() > 1;
        let ok = simple && (!mixed || identifier) && (attrs.len() == 1 || lays[0].id.is_some());
        ok.then_some(lays)
    }

    /// How records find their attr and layout.
    #[inline]
    fn keys(&self) -> Keys<'_> {
        Keys {
            lays: &self.lays,
            ids: &self.ids,
            one_attr: self.one_attr,
        }
    }

    /// The time of record `r`: Some(None) for a record without one, None when it is too
    /// short for its layout.
    #[inline]
    fn time_of(&self, r: &[u8], sample: bool) -> Option<Option<u64>> {
        let l = if self.scan_same {
            &self.lays[0]
        } else {
            self.keys().layout(r, sample)?
        };
        let at = if sample {
            l.time
        } else {
            l.trail_time
                .map(|t| r.len().checked_sub(l.trail).map(|b| b + t))
                .map(|o| o.unwrap_or(usize::MAX))
        };
        match at {
            Some(o) => u64_at(r, o).map(Some),
            None => Some(None),
        }
    }

    /// The CPU of sample `r`, when its layout has one.
    #[inline]
    fn cpu_of(&self, r: &[u8]) -> Option<u32> {
        let l = if self.scan_same {
            &self.lays[0]
        } else {
            self.keys().layout(r, true)?
        };
        u32_at(r, l.cpu?)
    }

    /// Scans records up to the next FINISHED_ROUND (or the end) into `round`, after
    /// giving back what the records already out were read from.
    fn scan_round(&mut self) {
        self.release();
        while self.pos + 8 <= self.end {
            let off = self.pos;
            self.data.prefetch(off + AHEAD);
            if let Err(why) = self.data.load(off + 8, self.end) {
                self.unreadable(why);
                break;
            }
            let h = self.data.get(off, off + 8);
            let ty = u32_at(h, 0).unwrap_or(0);
            let size = record_size(h);
            if size < 8 || off + size > self.end {
                self.smp.diag.truncated = Some(format!(
                    "the record at byte {off} says it has {size} bytes, but the data section ends at byte {}: the rest of the file is unread",
                    self.end
                ));
                self.pos = self.end;
                break;
            }
            if let Err(why) = self.data.load(off + size, self.end) {
                self.unreadable(why);
                break;
            }
            self.pos = off + size;
            let r = self.data.get(off, off + size);
            match ty {
                REC_SAMPLE | REC_COMM | REC_LOST => match self.time_of(r, ty == REC_SAMPLE) {
                    Some(Some(ts)) => {
                        let cpu = (ty == REC_SAMPLE).then(|| self.cpu_of(r)).flatten();
                        self.max_ts = self.max_ts.max(ts);
                        self.round.push((ts, off));
                        if self.per_cpu(cpu, ts) {
                            return self.finish_part();
                        }
                    }
                    // perf delivers an untimed record as it comes: "now" in its order.
                    Some(None) => self.round.push((self.perf_last, off)),
                    None => self.smp.diag.bad(
                        0,
                        format!("record of type {ty} at byte {off}, {size} bytes").as_bytes(),
                        "a record as long as its attr's sample_type says",
                    ),
                },
                REC_FINISHED_ROUND => return self.finish_round(false),
                REC_COMPRESSED | REC_COMPRESSED2 => self.smp.diag.bad(
                    0,
                    format!("record at byte {off}").as_bytes(),
                    "no compressed records in a file without the COMPRESSED feature",
                ),
                _ => {}
            }
        }
        self.eof = true;
        self.finish_round(true);
    }

    /// The rest of the data section cannot be read (a compressed file damaged inside).
    fn unreadable(&mut self, why: String) {
        self.smp.diag.truncated = Some(format!("{why}: the rest of the file is unread"));
        self.pos = self.end;
    }

    /// Gives the pages of the map behind every record still to decode back to the kernel,
    /// 8 MiB at a time: a file read once through stays resident otherwise, and the peak
    /// RSS would grow with the file instead of the reorder window. (Records are held
    /// until a later round lets them out, so a file of one round keeps its pages.)
    fn release(&mut self) {
        let step = self.release_step;
        if self.pos < self.released + 2 * step || self.pos < self.retry {
            return;
        }
        let low = self
            .held
            .iter()
            .map(|h| h.1)
            .min()
            .unwrap_or(self.pos)
            .min(self.pos);
        let upto = low.saturating_sub(self.lag) / page_size() * page_size();
        if upto >= self.released + step {
            self.data.release(self.released, upto);
            self.released = upto;
        } else if self.lag > 0 {
            // A record held far behind (a CPU's backlog) pins the map, and the lag makes
            // that the usual case: finding the earliest costs a walk of everything held,
            // so not again before the scan has moved on by another step. (A window's
            // chunks are dropped as soon as they can be: its memory is the process's.)
            self.retry = self.pos + step;
        }
    }

    /// Notes sample time `ts` on `cpu`; true when enough of the round is scanned for the
    /// per-CPU rule to let some of it go.
    #[inline]
    fn per_cpu(&mut self, cpu: Option<u32>, ts: u64) -> bool {
        let Some(last) = &mut self.cpu_last else {
            return false;
        };
        if ts < self.early {
            self.cpu_last = None;
            return false;
        }
        if let Some(c) = cpu.map(|c| c as usize).filter(|&c| c < 1 << 16) {
            if last.len() <= c {
                last.resize(c + 1, u64::MAX);
            }
            self.cpus_seen += usize::from(last[c] == u64::MAX);
            last[c] = ts;
        }
        // A merge costs up to what is held (when the part's times reach back among it):
        // parts of at least an eighth of that keep a round of millions linear.
        self.round.len() >= PART.max(self.held.len() / 8)
    }

    /// The time up to which every CPU's buffer has been read (0 without the per-CPU rule,
    /// or while a CPU has had no sample yet).
    fn cpus_read_to(&self) -> u64 {
        let Some(last) = self
            .cpu_last
            .as_ref()
            .filter(|_| self.cpus_seen >= self.cpus)
        else {
            return 0;
        };
        last.iter()
            .filter(|&&t| t != u64::MAX)
            .min()
            .copied()
            .unwrap_or(0)
    }

    /// Lets out, mid-round, the held records no CPU can still precede.
    fn finish_part(&mut self) {
        self.merge_round();
        self.let_out(self.cpus_read_to(), false);
    }

    /// Sets how many held records may go: those up to `limit`, less the ones the window
    /// keeps (all of them at the end).
    fn let_out(&mut self, limit: u64, last: bool) {
        let n = count_from_back(&self.held, |&(ts, _)| ts <= limit);
        self.ready = if last {
            self.held.len()
        } else {
            n.min(self.held.len().saturating_sub(self.window))
        };
        if self.ready > 0 && !last {
            self.early = self.early.max(self.held[self.ready - 1].0);
        }
    }

    /// Puts the round's records in their place among those held and sets how many may go.
    fn finish_round(&mut self, last: bool) {
        self.merge_round();
        let limit = self.next_flush;
        self.next_flush = self.max_ts;
        // What perf's rule has let out by now: everything up to the round before's latest
        // time (that record is held or went out earlier).
        self.perf_last = self.perf_last.max(limit);
        self.let_out(limit.max(self.cpus_read_to()), last);
    }

    /// Sorts the records scanned since the last merge into those held.
    fn merge_round(&mut self) {
        // A round is a few sorted runs (one per CPU buffer): the stable sort merges runs.
        // Offsets make keys unique, so equal times keep file order, as in perf.
        self.round.sort();
        let late = self.round.partition_point(|&(ts, _)| ts < self.perf_last);
        self.reordered += late as u64;
        if let Some(&first) = self.round.first() {
            // Only the held records later than the round's first overlap it.
            let at = count_from_back(&self.held, |&h| h < first);
            self.merge.clear();
            self.merge.extend(self.held.drain(at..));
            let (mut a, mut b) = (self.merge.iter().peekable(), self.round.iter().peekable());
            loop {
                let next = match (a.peek(), b.peek()) {
                    (Some(&&x), Some(&&y)) if x <= y => a.next(),
                    (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                    (Some(_), None) => a.next(),
                    (None, None) => break,
                };
                self.held.extend(next.copied());
            }
            self.round.clear();
        }
    }

    /// The next due record decoded into the slot; None at the end.
    fn next_ref(&mut self, s: &mut Interner) -> Option<&Event> {
        self.smp.seed(s);
        loop {
            while self.ready > 0 {
                self.ready -= 1;
                let (ts, off) = self.held.pop_front()?;
                if let Some(e) = self.decode(s, ts, off) {
                    self.slot = Some(e);
                    return self.slot.as_ref();
                }
            }
            if self.eof {
                return None;
            }
            self.scan_round();
        }
    }
}

/// Records of one round scanned at most before the per-CPU rule lets some go: rounds are
/// usually tens of records, and only a drained backlog reaches this.
#[cfg(not(test))]
const PART: usize = 1 << 16;
/// Small in tests, so that the example's rounds of thousands are let out in parts.
#[cfg(test)]
const PART: usize = 500;

/// Bytes ahead of the scan asked into the cache: the hardware's own prefetch stops at
/// each page's end, and the scan waited on the first line of every page (explain on the
/// 4 M-sample perf.data: 300 -> 276 ms; any distance from 512 B to 16 KiB did as well).
const AHEAD: usize = 2048;

/// Whether the per-CPU rule can be used: every sample has its time and CPU, and every
/// other record its time (`sample_id_all`).
fn by_cpu(lays: &[Layout]) -> bool {
    lays.iter()
        .all(|l| l.time.is_some() && l.cpu.is_some() && l.trail_time.is_some())
}

/// The system's page size.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests;
