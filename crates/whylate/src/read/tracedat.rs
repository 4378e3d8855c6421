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

use super::ringbuf::{Item, PageCursor, PageLayout};
use super::tep::{self, Decoder, Endian, Formats};
use super::{Diag, ReadError};
use crate::event::{Event, Interner, Sym};
use crate::snapshot::Snapshot;
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The magic at the start of every trace.dat.
pub const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// True when `head` starts like a trace.dat.
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
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
    /// (pid, comm, tgid) of this CPU's last record, valid while the names' generation is
    /// the one stored with it.
    last_comm: (i32, Sym, i32),
    comm_gen: u64,
}

/// Reads a trace.dat.
pub struct TraceDat {
    path: PathBuf,
    file: File,
    fmts: Formats,
    layout: PageLayout,
    page_size: usize,
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

fn read_at_exact(file: &File, buf: &mut [u8], off: u64) -> io::Result<()> {
    file.read_exact_at(buf, off)
}

impl TraceDat {
    /// Opens `path` (an uncompressed trace.dat; `open` decompresses .gz/.zst/.xz first).
    pub fn open(path: &Path, file: File) -> Result<TraceDat, ReadError> {
        let corrupt = |(offset, why): (u64, String)| ReadError::Corrupt {
            path: path.to_path_buf(),
            offset,
            why,
        };
        let io_err = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let flen = file.metadata().map_err(io_err)?.len();
        // The fixed part: magic, version, endian, long size, page size.
        let mut head = vec![0u8; 4096.min(flen as usize)];
        read_at_exact(&file, &mut head, 0).map_err(io_err)?;
        let mut c = Cur::new(&head, 0, Endian::default());
        c.tag(MAGIC).map_err(corrupt)?;
        let ver = c.cstr("version string").map_err(corrupt)?;
        let version: u32 = std::str::from_utf8(ver)
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                corrupt((
                    10,
                    format!(
                        "expected a version number, found {:?}",
                        String::from_utf8_lossy(ver)
                    ),
                ))
            })?;
        if version != 6 && version != 7 {
            return Err(corrupt((
                10,
                format!("trace.dat version {version} is not supported (6 and 7 are)"),
            )));
        }
        let endian_byte = c.take(1, "endianness").map_err(corrupt)?[0];
        let e = Endian {
            big: endian_byte != 0,
        };
        c.e = e;
        let long_size = c.take(1, "long size").map_err(corrupt)?[0] as u32;
        let page_size = c.u32("page size").map_err(corrupt)?;
        if !(1024..=(1 << 24)).contains(&page_size) {
            return Err(corrupt((
                c.off() - 4,
                format!("expected a page size between 1 KiB and 16 MiB, found {page_size}"),
            )));
        }
        let mut info = DatInfo {
            version,
            big_endian: e.big,
            long_size,
            page_size,
            ..DatInfo::default()
        };
        let mut fmts = Formats::new(e, long_size);
        let mut me = TraceDat {
            path: path.to_path_buf(),
            file,
            fmts: Formats::default(),
            layout: PageLayout::default_64(),
            page_size: page_size as usize,
            codec: None,
            streams: Vec::new(),
            stale: None,
            slot: None,
            decoder: Decoder::new(),
            comms: super::comms::Comms::new(Vec::new(), Vec::new()),
            cmdlines: Vec::new(),
            diag: Diag::default(),
            info: DatInfo::default(),
            snapshot: None,
            tsc2nsec: None,
            ts_offset: 0,
            bytes: flen,
            data_bytes: 0,
            order: super::OrderCheck::default(),
            unknown_ids: FxHashMap::default(),
        };
        if version == 6 {
            me.open_v6(c.off(), flen, &mut fmts, &mut info)
                .map_err(corrupt)?;
        } else {
            let comp = c.cstr("compression name").map_err(corrupt)?.to_vec();
            let _comp_ver = c.cstr("compression version").map_err(corrupt)?;
            let comp = String::from_utf8_lossy(&comp).into_owned();
            me.codec = match comp.as_str() {
                "none" | "" => None,
                "zlib" => Some(Codec::Zlib),
                "zstd" => Some(Codec::Zstd),
                other => {
                    return Err(corrupt((
                        c.off(),
                        format!("compression {other:?} is not supported (zlib and zstd are)"),
                    )))
                }
            };
            info.compression = Some(comp);
            let first = c
                .u64("offset of the first options section")
                .map_err(corrupt)?;
            me.open_v7(first, flen, &mut fmts, &mut info)
                .map_err(corrupt)?;
        }
        info.formats = fmts.len();
        me.fmts = fmts;
        me.info = info;
        if let Some(clock) = &me.info.clock {
            if matches!(clock.as_str(), "counter" | "x86-tsc" | "tsc") && me.tsc2nsec.is_none() {
                me.diag.raw_clock = true;
            }
        }
        me.comms = super::comms::Comms::new(
            std::mem::take(&mut me.cmdlines),
            me.snapshot
                .as_ref()
                .map(|s| s.tasks.clone())
                .unwrap_or_default(),
        );
        me.diag.header.cpus = Some(me.info.cpus);
        me.diag.header.version = Some(version);
        for i in 0..me.streams.len() {
            me.advance(i)?;
        }
        Ok(me)
    }

    fn open_v6(&mut self, start: u64, flen: u64, fmts: &mut Formats, info: &mut DatInfo) -> R<()> {
        // The metadata (formats, kallsyms...) precedes the CPU data; its length is only
        // known by parsing it, so read a piece and grow it until it parses.
        let avail = flen.saturating_sub(start);
        let mut want = avail.min(8 << 20);
        let (meta, pos) = loop {
            let mut meta = vec![0u8; want as usize];
            self.file
                .read_exact_at(&mut meta, start)
                .map_err(|e| (start, e.to_string()))?;
            let mut c = Cur::new(&meta, start, fmts.endian);
            let mut f = fmts.clone();
            match read_v6_meta(&mut c, &mut f) {
                Ok((layout, cmdlines)) => {
                    *fmts = f;
                    self.layout = layout;
                    self.cmdlines = cmdlines;
                    let pos = c.pos;
                    break (meta, pos);
                }
                Err(_) if want < avail => want = (want * 4).min(avail),
                Err(e) => return Err(e),
            }
        };
        let mut c = Cur::new(&meta, start, fmts.endian);
        c.pos = pos;
        let cpus = c.u32("CPU count")?;
        info.cpus = cpus;
        let mut buffers: Vec<(String, u64)> = Vec::new();
        loop {
            let o = c.off();
            let tag = c.take(10, "section tag")?;
            match tag {
                b"options  \0" => loop {
                    let id = c.u16("option id")?;
                    if id == OPT_DONE {
                        break;
                    }
                    let size = c.u32("option size")? as usize;
                    let data = c.take(size, "option data")?;
                    if id == OPT_BUFFER {
                        let mut b = Cur::new(data, 0, fmts.endian);
                        let off = b.u64("buffer offset")?;
                        let name = String::from_utf8_lossy(b.cstr("buffer name")?).into_owned();
                        buffers.push((name, off));
                    } else {
                        self.option(id, data, info, fmts.endian)?;
                    }
                },
                b"latency  \0" => {
                    return Err((
                        o,
                        "a latency-format trace.dat (`trace-cmd record` of a latency tracer) holds text; run `trace-cmd report` on it and read that"
                            .into(),
                    ))
                }
                b"flyrecord\0" => {
                    let mut v = Vec::new();
                    for cpu in 0..cpus {
                        let off = c.u64("CPU data offset")?;
                        let size = c.u64("CPU data size")?;
                        v.push((cpu, off, size));
                    }
                    info.instances = buffers.iter().map(|b| b.0.clone()).collect();
                    let top_empty = v.iter().all(|x| x.2 == 0);
                    if top_empty {
                        if let Some((name, off)) = buffers.first().cloned() {
                            // trace-cmd record -B NAME only: the data is in the instance.
                            let mut hdr = vec![0u8; 10 + 16 * cpus as usize];
                            self.file
                                .read_exact_at(&mut hdr, off)
                                .map_err(|e| (off, e.to_string()))?;
                            let mut b = Cur::new(&hdr, off, fmts.endian);
                            b.tag(b"flyrecord\0")?;
                            v.clear();
                            for cpu in 0..cpus {
                                let o = b.u64("CPU data offset")?;
                                let s = b.u64("CPU data size")?;
                                v.push((cpu, o, s));
                            }
                            info.instance = name;
                        }
                    }
                    let cut: Vec<String> = v
                        .iter()
                        .filter(|(_, off, size)| off.saturating_add(*size) > flen)
                        .map(|(cpu, _, _)| cpu.to_string())
                        .collect();
                    if !cut.is_empty() {
                        self.diag.truncated = Some(format!(
                            "the file is cut short ({flen} bytes): the data of CPU {} is incomplete",
                            cut.join(", ")
                        ));
                    }
                    for (cpu, off, size) in v {
                        self.add_stream(
                            cpu,
                            Src::Plain {
                                off,
                                end: (off + size).min(flen),
                            },
                        );
                    }
                    return Ok(());
                }
                other => {
                    return Err((
                        o,
                        format!(
                            "expected `options`, `latency` or `flyrecord`, found {:?}",
                            String::from_utf8_lossy(other)
                        ),
                    ))
                }
            }
        }
    }

    fn add_stream(&mut self, cpu: u32, src: Src) {
        self.streams.push(CpuStream {
            cpu,
            src,
            buf: Vec::new(),
            len: 0,
            page_at: 0,
            cur: None,
            head: None,
            lost: None,
            done: false,
            last_comm: (-1, Sym::EMPTY, -1),
            comm_gen: 0,
        });
    }

    fn option(&mut self, id: u16, data: &[u8], info: &mut DatInfo, e: Endian) -> R<()> {
        let text = || {
            String::from_utf8_lossy(data)
                .trim_end_matches('\0')
                .trim()
                .to_string()
        };
        match id {
            OPT_TRACECLOCK => {
                let t = text();
                // The trace_clock file: `local global [mono] ...`, or just the name.
                let sel = t
                    .split_whitespace()
                    .find(|w| w.starts_with('['))
                    .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
                    .unwrap_or(t);
                info.clock = Some(sel);
            }
            OPT_UNAME => info.uname = Some(text()),
            OPT_CPUSTAT => {
                let t = text();
                info.cpu_stats = Some(match info.cpu_stats.take() {
                    Some(p) => format!("{p}\n{t}"),
                    None => t,
                });
            }
            OPT_OFFSET => self.ts_offset = text().parse().unwrap_or(0),
            OPT_CPUCOUNT => {
                if let Some(n) = e.u32(data, 0) {
                    info.cpus = n;
                }
            }
            OPT_TSC2NSEC => {
                let mut c = Cur::new(data, 0, e);
                let mult = c.u32("tsc2nsec mult")?;
                let shift = c.u32("tsc2nsec shift")?;
                let off = c.u64("tsc2nsec offset")?;
                self.tsc2nsec = Some((mult, shift, off));
            }
            crate::snapshot::OPTION_ID => {
                self.snapshot = serde_json::from_slice(data).ok();
            }
            OPT_DATE | OPT_HOOK | OPT_VERSION | OPT_PROCMAPS | OPT_TRACEID | OPT_TIME_SHIFT
            | OPT_GUEST | OPT_STRINGS | OPT_BUFFER_TEXT | OPT_BTF | OPT_LAST_BOOT | OPT_MODULES => {
            }
            other => info.unknown_options.push(other),
        }
        Ok(())
    }

    /// Reads a v7 section at `off`: (id, decompressed content, offset of the content).
    fn section(&self, off: u64, e: Endian) -> R<(u16, Vec<u8>)> {
        let mut h = [0u8; 16];
        self.file
            .read_exact_at(&mut h, off)
            .map_err(|x| (off, format!("section header: {x}")))?;
        let mut c = Cur::new(&h, off, e);
        let id = c.u16("section id")?;
        let flags = c.u16("section flags")?;
        let _desc = c.u32("section description")?;
        let size = c.u64("section size")?;
        if size > (1 << 32) {
            return Err((off + 8, format!("section size {size} is not plausible")));
        }
        let mut body = vec![0u8; size as usize];
        self.file
            .read_exact_at(&mut body, off + 16)
            .map_err(|x| (off + 16, format!("section of {size} bytes: {x}")))?;
        if flags & 1 != 0 {
            let mut c = Cur::new(&body, off + 16, e);
            let csize = c.u32("compressed size")? as usize;
            let usize_ = c.u32("uncompressed size")? as usize;
            let data = c.take(csize, "compressed data")?;
            let out = self
                .decompress(data, usize_)
                .map_err(|x| (off + 24, format!("decompressing section {id}: {x}")))?;
            return Ok((id, out));
        }
        Ok((id, body))
    }

    fn decompress(&self, data: &[u8], size: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(size);
        match self.codec {
            Some(Codec::Zlib) => {
                flate2::read::ZlibDecoder::new(data).read_to_end(&mut out)?;
            }
            Some(Codec::Zstd) => {
                zstd::stream::read::Decoder::with_buffer(data)?.read_to_end(&mut out)?;
            }
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a compressed section in a file that names no compression",
                ))
            }
        }
        if out.len() != size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "expected {size} bytes after decompression, got {}",
                    out.len()
                ),
            ));
        }
        Ok(out)
    }

    fn open_v7(&mut self, first: u64, flen: u64, fmts: &mut Formats, info: &mut DatInfo) -> R<()> {
        let e = fmts.endian;
        let mut next = first;
        let mut sections: Vec<(u16, u64)> = Vec::new();
        let mut buffers: Vec<Buffer> = Vec::new();
        let mut seen = 0;
        while next != 0 {
            seen += 1;
            if seen > 1000 || next >= flen {
                return Err((next, "options section chain is broken".into()));
            }
            let (id, body) = self.section(next, e)?;
            if id != OPT_DONE {
                return Err((next, format!("expected an options section, found id {id}")));
            }
            let mut c = Cur::new(&body, next + 16, e);
            loop {
                let oid = c.u16("option id")?;
                let size = c.u32("option size")? as usize;
                let data = c.take(size, "option data")?;
                match oid {
                    OPT_DONE => {
                        next = Cur::new(data, 0, e).u64("next options offset")?;
                        break;
                    }
                    OPT_HEADER_INFO..=OPT_CMDLINES => {
                        sections.push((oid, Cur::new(data, 0, e).u64("section offset")?));
                    }
                    OPT_BUFFER => {
                        let mut b = Cur::new(data, 0, e);
                        let off = b.u64("buffer section offset")?;
                        let name = String::from_utf8_lossy(b.cstr("buffer name")?).into_owned();
                        let clock = String::from_utf8_lossy(b.cstr("buffer clock")?).into_owned();
                        let _ps = b.u32("buffer page size")?;
                        let n = b.u32("buffer CPU count")?;
                        let mut cpus = Vec::new();
                        for _ in 0..n {
                            let cpu = b.u32("CPU")?;
                            let o = b.u64("CPU data offset")?;
                            let s = b.u64("CPU data size")?;
                            cpus.push((cpu, o, s));
                        }
                        if name.is_empty() && info.clock.is_none() && !clock.is_empty() {
                            info.clock = Some(clock);
                        }
                        buffers.push((name, cpus, off));
                    }
                    _ => self.option(oid, data, info, e)?,
                }
            }
        }
        for (id, off) in sections {
            let (sid, body) = self.section(off, e)?;
            if sid != id {
                return Err((off, format!("expected section {id}, found {sid}")));
            }
            let mut c = Cur::new(&body, off + 16, e);
            match id {
                OPT_HEADER_INFO => self.layout = read_header_info(&mut c, fmts)?,
                OPT_FTRACE_EVENTS => read_ftrace_events(&mut c, fmts)?,
                OPT_EVENT_FORMATS => read_event_formats(&mut c, fmts)?,
                OPT_KALLSYMS => {
                    let n = c.u32("kallsyms size")? as usize;
                    fmts.load_kallsyms(c.take(n, "kallsyms")?);
                }
                OPT_PRINTK => {} // bprint format strings: whylate does not print bprint.
                OPT_CMDLINES => {
                    let n = c.u64("saved cmdlines size")? as usize;
                    self.cmdlines = parse_cmdlines(c.take(n, "saved cmdlines")?);
                }
                _ => {}
            }
        }
        let pick = buffers
            .iter()
            .position(|b| b.0.is_empty() && b.1.iter().any(|c| c.2 > 0))
            .or_else(|| buffers.iter().position(|b| b.1.iter().any(|c| c.2 > 0)));
        info.instances = buffers
            .iter()
            .filter(|b| !b.0.is_empty())
            .map(|b| b.0.clone())
            .collect();
        let Some(i) = pick else {
            return Ok(()); // No CPU data at all: an empty trace.
        };
        let (name, cpus, sect_off) = buffers.swap_remove(i);
        info.instance = name;
        if info.cpus == 0 {
            info.cpus = cpus.len() as u32;
        }
        // The flyrecord section header says whether its data is compressed.
        let mut h = [0u8; 16];
        self.file
            .read_exact_at(&mut h, sect_off)
            .map_err(|x| (sect_off, format!("flyrecord section header: {x}")))?;
        let flags = Cur::new(&h, sect_off, e).e.uint(&h, 2, 2).unwrap_or(0);
        let compressed = flags & 1 != 0 && self.codec.is_some();
        for (cpu, off, size) in cpus {
            if size == 0 {
                continue;
            }
            if compressed {
                let mut n = [0u8; 4];
                self.file
                    .read_exact_at(&mut n, off)
                    .map_err(|x| (off, format!("chunk count: {x}")))?;
                let chunks = e.u32(&n, 0).unwrap_or(0);
                self.add_stream(
                    cpu,
                    Src::Chunks {
                        off: off + 4,
                        chunks,
                    },
                );
            } else {
                self.add_stream(
                    cpu,
                    Src::Plain {
                        off,
                        end: (off + size).min(flen),
                    },
                );
            }
        }
        Ok(())
    }

    /// Loads the next chunk of pages of stream `i`. False at the end of its data.
    /// Never inlined: the decompressors need tens of KB of stack, which `advance`, called
    /// once per record, would otherwise probe page by page on every call.
    #[inline(never)]
    fn refill(&mut self, i: usize) -> Result<bool, ReadError> {
        let page = self.page_size;
        let codec = self.codec;
        let e = self.fmts.endian;
        let s = &mut self.streams[i];
        let corrupt = |offset: u64, why: String| ReadError::Corrupt {
            path: self.path.clone(),
            offset,
            why,
        };
        match s.src {
            Src::Plain { off, end } => {
                if off >= end {
                    return Ok(false);
                }
                let want = ((end - off) as usize)
                    .min(CHUNK / page * page.max(1))
                    .max(page);
                let want = want.min((end - off) as usize);
                s.buf.resize(want.max(page), 0);
                self.file
                    .read_exact_at(&mut s.buf[..want], off)
                    .map_err(|x| corrupt(off, format!("CPU {} data: {x}", s.cpu)))?;
                s.len = want;
                s.src = Src::Plain {
                    off: off + want as u64,
                    end,
                };
            }
            Src::Chunks { off, chunks } => {
                if chunks == 0 {
                    return Ok(false);
                }
                let mut h = [0u8; 8];
                self.file
                    .read_exact_at(&mut h, off)
                    .map_err(|x| corrupt(off, format!("chunk header: {x}")))?;
                let csize = e.u32(&h, 0).unwrap_or(0) as usize;
                let usize_ = e.u32(&h, 4).unwrap_or(0) as usize;
                if csize > (1 << 30) || usize_ > (1 << 30) {
                    return Err(corrupt(
                        off,
                        format!("chunk sizes {csize}/{usize_} are not plausible"),
                    ));
                }
                let mut data = vec![0u8; csize];
                self.file
                    .read_exact_at(&mut data, off + 8)
                    .map_err(|x| corrupt(off + 8, format!("chunk of {csize} bytes: {x}")))?;
                let mut out = Vec::with_capacity(usize_);
                let r = match codec {
                    Some(Codec::Zlib) => flate2::read::ZlibDecoder::new(&data[..])
                        .read_to_end(&mut out)
                        .map(|_| ()),
                    Some(Codec::Zstd) => zstd::stream::read::Decoder::with_buffer(&data[..])
                        .and_then(|mut d| d.read_to_end(&mut out).map(|_| ())),
                    None => Ok(()),
                };
                r.map_err(|x| corrupt(off + 8, format!("decompressing a CPU chunk: {x}")))?;
                s.buf = out;
                s.len = s.buf.len();
                s.src = Src::Chunks {
                    off: off + 8 + csize as u64,
                    chunks: chunks - 1,
                };
            }
        }
        s.page_at = 0;
        self.data_bytes += s.len as u64;
        Ok(true)
    }

    /// Moves stream `i` to its next record, loading pages as needed.
    fn advance(&mut self, i: usize) -> Result<(), ReadError> {
        let page = self.page_size;
        let layout = self.layout;
        loop {
            let s = &mut self.streams[i];
            if s.done {
                s.head = None;
                return Ok(());
            }
            if let Some(cur) = s.cur.as_mut() {
                let pg = &s.buf[s.page_at..(s.page_at + page).min(s.len)];
                if let Some(Item::Record { ts, start, end }) = cur.next(pg, layout.endian) {
                    s.head = Some((ts, s.page_at + start, s.page_at + end));
                    return Ok(());
                }
                if cur.corrupt {
                    self.diag.unparsed += 1;
                }
                s.cur = None;
                s.page_at += page;
            }
            let s = &mut self.streams[i];
            if (s.page_at + layout.data_off > s.len || s.len == 0) && !self.refill(i)? {
                self.streams[i].done = true;
                continue;
            }
            let s = &mut self.streams[i];
            let pg = &s.buf[s.page_at..(s.page_at + page).min(s.len)];
            match PageCursor::new(pg, &layout) {
                Some(c) => {
                    if let Some(count) = c.missed {
                        s.lost = Some((c.ts, count));
                    }
                    s.cur = Some(c);
                }
                None => s.page_at += page,
            }
        }
    }

    fn conv_ts(&self, ts: u64) -> u64 {
        let ts = match self.tsc2nsec {
            Some((mult, shift, off)) => {
                (((ts as u128 * mult as u128) >> shift) as u64).wrapping_add(off)
            }
            None => ts,
        };
        ts.wrapping_add(self.ts_offset as u64)
    }

    /// Picks the stream with the earliest pending item and takes it. A taken record stays
    /// where it is in its stream's buffer: the stream moves on (which may refill the
    /// buffer) only at the next take, after the caller has read the record.
    #[inline(always)]
    fn take_next(&mut self) -> Result<Option<Taken>, ReadError> {
        if let Some(i) = self.stale.take() {
            self.advance(i)?;
        }
        let mut best: Option<(u64, usize)> = None;
        for (i, s) in self.streams.iter().enumerate() {
            let t = match (s.lost, s.head) {
                (Some((t, _)), _) => t,
                (None, Some((t, _, _))) => t,
                _ => continue,
            };
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, i));
            }
        }
        let Some((_, i)) = best else {
            return Ok(None);
        };
        let cpu = self.streams[i].cpu;
        if let Some((ts, count)) = self.streams[i].lost.take() {
            return Ok(Some(Taken::Lost {
                ts: self.conv_ts(ts),
                cpu,
                count,
            }));
        }
        let (ts, start, end) = self.streams[i].head.take().expect("head was checked");
        self.stale = Some(i);
        Ok(Some(Taken::Record {
            ts: self.conv_ts(ts),
            cpu,
            i,
            start,
            end,
        }))
    }

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

    /// Resolves code addresses with `text` (`--kallsyms FILE`, named `name`) instead of
    /// the symbols the file carries.
    pub fn use_kallsyms(&mut self, name: &str, text: &[u8]) {
        self.fmts.load_kallsyms(text);
        self.info.kallsyms_from = Some(name.to_string());
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
            let data = &self.streams[i].buf[start..end];
            let e = self.fmts.endian;
            let Some(c) = tep::common(data, e) else {
                self.diag.unparsed += 1;
                continue;
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
                continue;
            };
            let kind = self.decoder.decode(&self.fmts, fmt, data, s);
            self.comms.learn(&kind);
            let st = &mut self.streams[i];
            // Consecutive records on a CPU are mostly the same task: skip the lookups
            // unless some name changed since (any CPU's event may rename it).
            if st.last_comm.0 != c.pid || st.comm_gen != self.comms.generation {
                st.last_comm = (c.pid, self.comms.get(c.pid), self.comms.tgid(c.pid));
                st.comm_gen = self.comms.generation;
            }
            let (_, comm, tgid) = st.last_comm;
            self.order.see(ts);
            self.slot = Some(Event {
                ts,
                cpu,
                tid: c.pid,
                tgid,
                comm,
                flags: c.flags,
                kind,
            });
            return Ok(true);
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

fn read_header_info(c: &mut Cur<'_>, fmts: &Formats) -> R<PageLayout> {
    c.tag(b"header_page\0")?;
    let n = c.u64("header_page size")? as usize;
    let hp = c.take(n, "header_page")?;
    let layout = PageLayout::from_header_page(
        &String::from_utf8_lossy(hp),
        fmts.long_size as usize,
        fmts.endian,
    );
    c.tag(b"header_event\0")?;
    let n = c.u64("header_event size")? as usize;
    c.take(n, "header_event")?;
    Ok(layout)
}

/// The v6 metadata after the fixed header, up to the saved cmdlines: page layout, event
/// formats, kallsyms, printk formats, cmdlines. perf.data's TRACING_DATA is the same.
fn read_v6_meta(c: &mut Cur<'_>, fmts: &mut Formats) -> R<(PageLayout, Vec<(i32, String)>)> {
    let layout = read_header_info(c, fmts)?;
    read_ftrace_events(c, fmts)?;
    read_event_formats(c, fmts)?;
    let n = c.u32("kallsyms size")? as usize;
    fmts.load_kallsyms(c.take(n, "kallsyms")?);
    let n = c.u32("printk formats size")? as usize;
    c.take(n, "printk formats")?;
    let n = c.u64("saved cmdlines size")? as usize;
    let cl = c.take(n, "saved cmdlines")?;
    Ok((layout, parse_cmdlines(cl)))
}

/// Event formats and saved cmdlines (pid, comm).
pub type TracingData = (Formats, Vec<(i32, String)>);

/// Parses a whole tracing-data blob (perf.data's TRACING_DATA feature: the trace.dat v6
/// preamble, version `0.6`): the event formats and the saved cmdlines.
pub fn parse_tracing_data(d: &[u8]) -> Result<TracingData, (u64, String)> {
    let mut c = Cur::new(d, 0, Endian::default());
    c.tag(MAGIC)?;
    c.cstr("version string")?;
    let big = c.take(1, "endianness")?[0] != 0;
    c.e = Endian { big };
    let long_size = c.take(1, "long size")?[0] as u32;
    c.u32("page size")?;
    let mut fmts = Formats::new(c.e, long_size);
    let (_, cmdlines) = read_v6_meta(&mut c, &mut fmts)?;
    Ok((fmts, cmdlines))
}

fn read_ftrace_events(c: &mut Cur<'_>, fmts: &mut Formats) -> R<()> {
    let n = c.u32("ftrace format count")?;
    for _ in 0..n {
        let o = c.off();
        let size = c.u64("format size")? as usize;
        let text = c.take(size, "format text")?;
        let f = tep::parse_format(&String::from_utf8_lossy(text), "ftrace")
            .map_err(|e| (o, format!("ftrace format, line {}: {}", e.line, e.why)))?;
        fmts.add(f);
    }
    Ok(())
}

fn read_event_formats(c: &mut Cur<'_>, fmts: &mut Formats) -> R<()> {
    let systems = c.u32("event system count")?;
    for _ in 0..systems {
        let sys = String::from_utf8_lossy(c.cstr("system name")?).into_owned();
        let n = c.u32("event count")?;
        for _ in 0..n {
            let o = c.off();
            let size = c.u64("format size")? as usize;
            let text = c.take(size, "format text")?;
            let f = tep::parse_format(&String::from_utf8_lossy(text), &sys).map_err(|e| {
                (
                    o,
                    format!("format of an event of `{sys}`, line {}: {}", e.line, e.why),
                )
            })?;
            fmts.add(f);
        }
    }
    Ok(())
}

fn parse_cmdlines(b: &[u8]) -> Vec<(i32, String)> {
    let mut v = Vec::new();
    for line in b.split(|c| *c == b'\n') {
        let line = String::from_utf8_lossy(line);
        if let Some((pid, comm)) = line.split_once(' ') {
            if let Ok(p) = pid.trim().parse() {
                v.push((p, comm.to_string()));
            }
        }
    }
    v
}
