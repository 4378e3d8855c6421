//! trace-cmd's `trace.dat`, versions 6 and 7, read natively.
//!
//! v6: a sequential header (page layout, event formats, kallsyms, printk formats, saved
//! cmdlines, options) then per-CPU page streams at the offsets `flyrecord` lists. v7: the
//! same contents in sections found through chains of option sections, optionally
//! compressed (zlib or zstd); CPU data compressed in chunks of pages.
//!
//! Metadata is read into memory (it is small apart from kallsyms); CPU data is streamed a
//! chunk (1 MiB, or one compressed chunk) per CPU at a time and merged by timestamp, so
//! memory does not grow with the trace.

use super::ringbuf::{PageCursor, PageLayout};
use super::tep::{self, Decoder, Endian, Formats};
use super::{Diag, ReadError};
use crate::event::{Event, Interner, Sym};
use crate::read::format::Format;
use crate::read::unpack::Bytes;
use crate::snapshot::Snapshot;
use rustc_hash::FxHashMap;
use std::io;
use std::path::{Path, PathBuf};

pub mod apart;
mod binary;
mod stream;

pub(crate) mod open;

/// The magic at the start of every trace.dat.
pub const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// True when `head` starts like a trace.dat.
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

pub(crate) use binary::TRACE_DAT;

impl Format {
    /// trace-cmd's binary trace.dat (v6, v7).
    #[allow(non_upper_case_globals)]
    pub const TraceDat: Format = Format::named("trace.dat");
}

/// What the file's header and options say.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DatInfo {
    /// File version (6 or 7).
    pub version: u32,
    /// v7 compression algorithm (`zstd`, `zlib`, `none`).
    pub compression: Option<String>,
    /// Big endian.
    pub big_endian: bool,
    /// Kernel long size.
    pub long_size: u32,
    /// Ring-buffer page size.
    pub page_size: u32,
    /// CPUs recorded.
    pub cpus: u32,
    /// The trace clock.
    pub clock: Option<String>,
    /// `uname` of the traced machine.
    pub uname: Option<String>,
    /// Buffer instances besides the top one (read only when the top one is empty).
    pub instances: Vec<String>,
    /// The instance whose data is read ("" = top).
    pub instance: String,
    /// Event formats in the file.
    pub formats: usize,
    /// Option ids the reader skipped.
    pub unknown_options: Vec<u16>,
    /// Per-CPU statistics text trace-cmd stored (`CPU: 0\nentries: ...`).
    pub cpu_stats: Option<String>,
    /// The `--kallsyms` file used instead of the file's own symbols.
    pub kallsyms_from: Option<String>,
}

// v7 option/section ids.
const OPT_DONE: u16 = 0;
const OPT_DATE: u16 = 1;
const OPT_CPUSTAT: u16 = 2;
const OPT_BUFFER: u16 = 3;
const OPT_TRACECLOCK: u16 = 4;
const OPT_UNAME: u16 = 5;
const OPT_HOOK: u16 = 6;
const OPT_OFFSET: u16 = 7;
const OPT_CPUCOUNT: u16 = 8;
const OPT_VERSION: u16 = 9;
const OPT_PROCMAPS: u16 = 10;
const OPT_TRACEID: u16 = 11;
const OPT_TIME_SHIFT: u16 = 12;
const OPT_GUEST: u16 = 13;
const OPT_TSC2NSEC: u16 = 14;
const OPT_STRINGS: u16 = 15;
const OPT_HEADER_INFO: u16 = 16;
const OPT_FTRACE_EVENTS: u16 = 17;
const OPT_EVENT_FORMATS: u16 = 18;
const OPT_KALLSYMS: u16 = 19;
const OPT_PRINTK: u16 = 20;
const OPT_CMDLINES: u16 = 21;
const OPT_BUFFER_TEXT: u16 = 22;
const OPT_BTF: u16 = 23;
const OPT_LAST_BOOT: u16 = 24;
const OPT_MODULES: u16 = 25;

/// A byte cursor with the file offset of its first byte, for error messages.
struct Cur<'a> {
    d: &'a [u8],
    pos: usize,
    base: u64,
    e: Endian,
}

type R<T> = Result<T, (u64, String)>;

impl<'a> Cur<'a> {
    fn new(d: &'a [u8], base: u64, e: Endian) -> Self {
        Cur { d, pos: 0, base, e }
    }
    fn off(&self) -> u64 {
        self.base + self.pos as u64
    }
    fn take(&mut self, n: usize, what: &str) -> R<&'a [u8]> {
        if self.pos + n > self.d.len() {
            return Err((
                self.off(),
                format!(
                    "expected {n} bytes of {what}, found {} (file cut short?)",
                    self.d.len() - self.pos
                ),
            ));
        }
        let s = &self.d[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> R<u16> {
        let o = self.off();
        let b = self.take(2, what)?;
        self.e
            .uint(b, 0, 2)
            .map(|v| v as u16)
            .ok_or((o, what.into()))
    }
    fn u32(&mut self, what: &str) -> R<u32> {
        let o = self.off();
        let b = self.take(4, what)?;
        self.e.u32(b, 0).ok_or((o, what.into()))
    }
    fn u64(&mut self, what: &str) -> R<u64> {
        let o = self.off();
        let b = self.take(8, what)?;
        self.e.u64(b, 0).ok_or((o, what.into()))
    }
    fn cstr(&mut self, what: &str) -> R<&'a [u8]> {
        let rest = &self.d[self.pos..];
        let n = memchr::memchr(0, rest).ok_or((
            self.off(),
            format!("expected a NUL-terminated {what}, found none"),
        ))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }
    fn tag(&mut self, t: &[u8]) -> R<()> {
        let o = self.off();
        let b = self.take(t.len(), "section tag")?;
        if b != t {
            return Err((
                o,
                format!(
                    "expected {:?}, found {:?}",
                    String::from_utf8_lossy(t),
                    String::from_utf8_lossy(b)
                ),
            ));
        }
        Ok(())
    }
}

/// Where one CPU's pages come from.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// Uncompressed pages at [off, end).
    Plain { off: u64, end: u64 },
    /// `chunks` compressed chunks starting at `off`.
    Chunks { off: u64, chunks: u32 },
}

/// What a compressed trace.dat's start says before its size is known
/// ([`TraceDat::probe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// More CPU regions than cursors are kept for: it will be spooled.
    TooManyRegions,
    /// Its CPU regions end at this byte, its last (for v6, the file's end).
    Ends(u64),
    /// Not known without the size.
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Codec {
    Zlib,
    Zstd,
}

struct CpuStream {
    cpu: u32,
    src: Src,
    buf: Vec<u8>,
    len: usize,
    page_at: usize,
    cur: Option<PageCursor>,
    /// The next record: (ts, start, end) in `buf`.
    head: Option<(u64, usize, usize)>,
    /// A lost-events marker to emit before `head`: (ts, count).
    lost: Option<(u64, Option<u64>)>,
    done: bool,
    /// (pid, comm, tgid) of this CPU's last record, and the names' generation then.
    last: ((i32, Sym, i32), u64),
    /// Where `buf` starts in the file: (offset, whether that is a compressed chunk's).
    buf_at: (u64, bool),
    /// The next page's start time: no record of the current page can be later (a
    /// later one is damaged). `u64::MAX` where the next page is not known.
    limit: u64,
    /// The start time of the last page read whole (a damaged one is not).
    page_ts: u64,
}

/// Reads a trace.dat. Aligned to a cache line: the reading thread writes it on every
/// record, and no other allocation may share a line with it (see `settle_here`).
#[repr(align(64))]
pub struct TraceDat {
    path: PathBuf,
    /// The file's bytes: a plain file, or a compressed one read through cursors.
    file: Bytes,
    fmts: Formats,
    /// The formats' byte order (kept apart: decoding may take the formats to another thread).
    endian: Endian,
    layout: PageLayout,
    page_size: usize,
    /// Where the header holds the page size (for the error when it is wrong).
    page_size_at: u64,
    codec: Option<Codec>,
    streams: Vec<CpuStream>,
    /// The stream whose record was taken last, to move on at the next take.
    stale: Option<usize>,
    /// The event [`TraceDat::next_ref`] lends.
    slot: Option<Event>,
    decoder: Decoder,
    comms: super::comms::Comms,
    /// Saved cmdlines until the comms are set up at the end of `open`.
    cmdlines: Vec<(i32, String)>,
    diag: Diag,
    info: DatInfo,
    snapshot: Option<Snapshot>,
    /// v7 TSC2NSEC: (mult, shift, offset).
    tsc2nsec: Option<(u32, u32, u64)>,
    ts_offset: i64,
    bytes: u64,
    data_bytes: u64,
    order: super::OrderCheck,
    unknown_ids: FxHashMap<u32, u64>,
    /// While decoding is apart: the events the reading thread decodes itself.
    pure: Option<tep::Pure>,
}

/// One raw record, for callers that want the fields themselves (`whylate`'s own tests
/// compare them with `trace-cmd report -R`).
pub enum Raw<'a> {
    /// A record.
    Record {
        /// Timestamp.
        ts: u64,
        /// CPU.
        cpu: u32,
        /// Payload, common fields first.
        data: &'a [u8],
    },
    /// Events lost on `cpu` before `ts`.
    Lost {
        /// Timestamp of the page after the loss.
        ts: u64,
        /// CPU.
        cpu: u32,
        /// Count when the kernel stored it.
        count: Option<u64>,
    },
}

const CHUNK: usize = 1 << 20;

/// A v7 BUFFER option: instance name, per-CPU (cpu, offset, size), flyrecord section offset.
type Buffer = (String, Vec<(u32, u64, u64)>, u64);

enum Taken {
    /// A record at `start..end` of stream `i`'s buffer, valid until the next take.
    Record {
        ts: u64,
        cpu: u32,
        i: usize,
        start: usize,
        end: usize,
    },
    Lost {
        ts: u64,
        cpu: u32,
        count: Option<u64>,
    },
}

fn read_at_exact(file: &Bytes, buf: &mut [u8], off: u64) -> io::Result<()> {
    file.read_exact_at(buf, off)
}

impl TraceDat {
    /// The next raw record or lost marker in time order across CPUs.
    pub fn next_raw(&mut self) -> Result<Option<Raw<'_>>, ReadError> {
        Ok(match self.take_next()? {
            None => None,
            Some(Taken::Lost { ts, cpu, count }) => Some(Raw::Lost { ts, cpu, count }),
            Some(Taken::Record {
                ts,
                cpu,
                i,
                start,
                end,
            }) => Some(Raw::Record {
                ts,
                cpu,
                data: &self.streams[i].buf[start..end],
            }),
        })
    }

    /// Resolves code addresses with the symbols given (`--kallsyms FILE`) instead of
    /// the ones the file carries.
    pub fn use_kallsyms(&mut self, given: &crate::read::ksyms::Given) {
        self.fmts.load_given(given);
        self.info.kallsyms_from = Some(given.name().to_string());
    }

    /// The event formats.
    pub fn formats(&self) -> &Formats {
        &self.fmts
    }
    /// What the header and options said.
    pub fn info(&self) -> &DatInfo {
        &self.info
    }
    /// whylate's record-time snapshot, when the file has one.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }
    /// Read through decompressing cursors: (bytes decompressed only to skip ahead, cursors
    /// started); None for a plain file.
    pub fn unpack_cost(&self) -> Option<(u64, u64)> {
        match &self.file {
            Bytes::Unpacked(u) => Some(u.cost()),
            Bytes::File(_) | Bytes::Memory(_) => None,
        }
    }

    /// File size.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Bytes of ring-buffer pages (uncompressed CPU data) read so far.
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }
    /// The input's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Event ids seen in records with no format in the file, and how often.
    pub fn unknown_ids(&self) -> &FxHashMap<u32, u64> {
        &self.unknown_ids
    }

    /// Next event, decoded.
    pub fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        Ok(match self.step(s)? {
            true => self.slot.take(),
            false => None,
        })
    }

    /// Next event, decoded, lent: the hot consumers read it where it was built.
    pub fn next_ref(&mut self, s: &mut Interner) -> Result<Option<&Event>, ReadError> {
        Ok(match self.step(s)? {
            true => self.slot.as_ref(),
            false => None,
        })
    }

    /// Decodes the next event into `slot`; false at the end.
    #[inline(always)]
    fn step(&mut self, s: &mut Interner) -> Result<bool, ReadError> {
        self.comms.seed(s);
        loop {
            let (ts, cpu, i, start, end) = match self.take_next()? {
                None => return Ok(false),
                Some(Taken::Lost { ts, cpu, count }) => {
                    self.slot = Some(Event::lost(ts, cpu, count));
                    return Ok(true);
                }
                Some(Taken::Record {
                    ts,
                    cpu,
                    i,
                    start,
                    end,
                }) => (ts, cpu, i, start, end),
            };
            let st = &mut self.streams[i];
            let parts = Parts {
                fmts: &self.fmts,
                decoder: &mut self.decoder,
                comms: &mut self.comms,
                unknown_ids: &mut self.unknown_ids,
                order: &mut self.order,
                diag: &mut self.diag,
                last: &mut st.last,
            };
            if let Some(e) = parts.event(ts, cpu, &st.buf[start..end], s) {
                self.slot = Some(e);
                return Ok(true);
            }
        }
    }

    /// What the reader noticed.
    pub fn diag(&self) -> &Diag {
        &self.diag
    }

    /// Events that came earlier than one before them (a skewed clock between CPUs).
    pub fn order(&self) -> super::OrderStats {
        self.order.stats
    }
}

/// What decodes a taken record, borrowed from wherever it lives (the reader, or the
/// decoding half moved to another thread: [`apart::Decoding`]).
struct Parts<'a> {
    fmts: &'a Formats,
    decoder: &'a mut Decoder,
    comms: &'a mut super::comms::Comms,
    unknown_ids: &'a mut FxHashMap<u32, u64>,
    order: &'a mut super::OrderCheck,
    diag: &'a mut Diag,
    /// The record's CPU stream's last task: (pid, comm, tgid), valid while the names'
    /// generation is the one stored with it.
    last: &'a mut ((i32, Sym, i32), u64),
}

impl Parts<'_> {
    /// The event of record `data` (at `ts` on `cpu`); None, counted, when it has no known
    /// format or no common fields.
    #[inline(always)]
    fn event(self, ts: u64, cpu: u32, data: &[u8], s: &mut Interner) -> Option<Event> {
        let Some(c) = tep::common(data, self.fmts.endian) else {
            self.diag.unparsed += 1;
            return None;
        };
        let Some(fmt) = self.fmts.get(c.id) else {
            let n = self.unknown_ids.entry(c.id).or_default();
            *n += 1;
            if *n == 1 {
                self.diag.bad(
                    0,
                    format!(
                        "record at {} on CPU {cpu} has event id {}",
                        crate::units::secs(ts),
                        c.id
                    )
                    .as_bytes(),
                    "an event id with no format in the file",
                );
            } else {
                self.diag.unparsed += 1;
            }
            return None;
        };
        let kind = self.decoder.decode(self.fmts, fmt, data, s);
        Some(self.finish(ts, cpu, c, kind))
    }

    /// The event of a record (at `ts` on `cpu`, common fields `c`) whose kind is made:
    /// named after its task as of now.
    #[inline(always)]
    fn finish(self, ts: u64, cpu: u32, c: tep::Common, kind: crate::event::Kind) -> Event {
        self.comms.learn(&kind);
        // Consecutive records on a CPU are mostly the same task: skip the lookups
        // unless some name changed since (any CPU's event may rename it).
        let (last, generation) = self.last;
        if last.0 != c.pid || *generation != self.comms.generation {
            *last = (c.pid, self.comms.get(c.pid), self.comms.tgid(c.pid));
            *generation = self.comms.generation;
        }
        let (_, comm, tgid) = *last;
        self.order.see(ts);
        Event {
            ts,
            cpu,
            tid: c.pid,
            tgid,
            comm,
            flags: c.flags,
            kind,
        }
    }
}
