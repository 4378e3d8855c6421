//! Opening a trace.dat: the v6 header and metadata read in growing pieces, the v7
//! option sections (compressed with zlib or zstd), the options, and the per-CPU data
//! streams behind them.

use super::*;
use crate::event::Sym;
use crate::read::ringbuf::PageLayout;
use crate::read::tep::{self, Decoder, Endian, Formats};
use crate::read::{Diag, ReadError};
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

impl TraceDat {
    /// Opens `path`, an uncompressed trace.dat.
    pub fn open(path: &Path, file: File) -> Result<TraceDat, ReadError> {
        Self::open_bytes(path, Bytes::File(file))
    }

    /// Opens the trace.dat `path` whose bytes are `file`: plain, or read through
    /// decompressing cursors ([`crate::read::unpack`]).
    pub fn open_bytes(path: &Path, file: Bytes) -> Result<TraceDat, ReadError> {
        Self::parse(path, file)?.start()
    }

    /// Reads the header, metadata and options, and sets up the CPU streams.
    fn parse(path: &Path, file: Bytes) -> Result<TraceDat, ReadError> {
        let corrupt = |(offset, why): (u64, String)| ReadError::Corrupt {
            path: path.to_path_buf(),
            offset,
            why,
        };
        let io_err = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let flen = file.size().map_err(io_err)?;
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
        let page_off = c.off();
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
            endian: Endian::default(),
            layout: PageLayout::default_64(),
            page_size: page_size as usize,
            page_size_at: page_off,
            codec: None,
            streams: Vec::new(),
            stale: None,
            slot: None,
            decoder: Decoder::new(),
            comms: crate::read::comms::Comms::new(Vec::new(), Vec::new()),
            cmdlines: Vec::new(),
            diag: Diag::default(),
            info: DatInfo::default(),
            snapshot: None,
            tsc2nsec: None,
            ts_offset: 0,
            bytes: flen,
            data_bytes: 0,
            order: crate::read::OrderCheck::default(),
            unknown_ids: FxHashMap::default(),
            pure: None,
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
        me.check_page_size().map_err(corrupt)?;
        info.formats = fmts.len();
        me.endian = fmts.endian;
        me.fmts = fmts;
        me.info = info;
        if let Some(clock) = &me.info.clock {
            if matches!(clock.as_str(), "counter" | "x86-tsc" | "tsc") && me.tsc2nsec.is_none() {
                me.diag.raw_clock = true;
            }
        }
        me.comms = crate::read::comms::Comms::new(
            std::mem::take(&mut me.cmdlines),
            me.snapshot
                .as_ref()
                .map(|s| s.tasks.clone())
                .unwrap_or_default(),
        );
        me.diag.header.cpus = Some(me.info.cpus);
        me.diag.header.version = Some(version);
        Ok(me)
    }

    /// Loads each CPU stream's first record: the reader is ready.
    fn start(mut self) -> Result<TraceDat, ReadError> {
        for i in 0..self.streams.len() {
            self.advance(i)?;
        }
        Ok(self)
    }

    /// Opens the compressed trace.dat `path` in place through `u`'s cursors; None when it has
    /// more CPU regions than cursors are kept for (the caller spools it instead), found
    /// before any region is read.
    pub fn open_unpacked(
        path: &Path,
        u: crate::read::unpack::Unpacked,
    ) -> Result<Option<TraceDat>, ReadError> {
        let me = Self::parse(path, Bytes::Unpacked(std::sync::Arc::new(u)))?;
        if me.streams.len() + 2 > crate::read::unpack::MAX_CURSORS {
            return Ok(None);
        }
        me.start().map(Some)
    }

    /// What the start of compressed `path`, of no declared size, says before it is
    /// measured (a parse of a few MiB, against decompressing it all only to spool it
    /// after): whether it has too many CPU regions to read in place, and where its
    /// regions end.
    pub fn probe(path: &Path, file: std::sync::Arc<File>) -> Probe {
        let u = crate::read::unpack::Unpacked::unmeasured(path, file);
        let u = std::sync::Arc::new(u);
        let Ok(me) = Self::parse(path, Bytes::Unpacked(u.clone())) else {
            // Not parsed without the size: a file shorter than the metadata's first read
            // was decompressed whole by it, so its size is known; else the measured
            // parse decides.
            return u.ended().map_or(Probe::Unknown, Probe::Ends);
        };
        if me.streams.len() + 2 > crate::read::unpack::MAX_CURSORS {
            return Probe::TooManyRegions;
        }
        let ends = me.streams.iter().map(|s| match s.src {
            Src::Plain { end, .. } => Some(end),
            Src::Chunks { .. } => None,
        });
        match ends.collect::<Option<Vec<u64>>>() {
            Some(e) if !e.is_empty() => Probe::Ends(e.into_iter().max().unwrap_or(0)),
            _ => Probe::Unknown,
        }
    }

    pub(super) fn open_v6(
        &mut self,
        start: u64,
        flen: u64,
        fmts: &mut Formats,
        info: &mut DatInfo,
    ) -> R<()> {
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
                    self.check_page_size()?;
                    check_regions(&v, self.page_size as u64)?;
                    self.diag.cut_cpus = (v.iter())
                        .filter(|(_, off, size)| off.saturating_add(*size) > flen)
                        .map(|(cpu, _, _)| *cpu)
                        .collect();
                    let cut: Vec<String> =
                        self.diag.cut_cpus.iter().map(|c| c.to_string()).collect();
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

    pub(super) fn add_stream(&mut self, cpu: u32, src: Src) {
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
            last: ((-1, Sym::EMPTY, -1), 0),
            buf_at: (0, false),
            limit: u64::MAX,
            page_ts: 0,
        });
    }

    pub(super) fn option(&mut self, id: u16, data: &[u8], info: &mut DatInfo, e: Endian) -> R<()> {
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
    pub(super) fn section(&self, off: u64, e: Endian) -> R<(u16, Vec<u8>)> {
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

    pub(super) fn decompress(&self, data: &[u8], size: usize) -> io::Result<Vec<u8>> {
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

    pub(super) fn open_v7(
        &mut self,
        first: u64,
        flen: u64,
        fmts: &mut Formats,
        info: &mut DatInfo,
    ) -> R<()> {
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
        self.check_page_size()?;
        if !compressed {
            check_regions(&cpus, self.page_size as u64)?;
        }
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
}

impl TraceDat {
    /// The header's page size (at byte `at`) against the pages `header_page` describes:
    /// a page size read wrong makes every page after the first land mid-page, and most
    /// of the data is skipped without a word.
    fn check_page_size(&self) -> R<()> {
        let at = self.page_size_at;
        let Some(data) = self.layout.data_size else {
            return Ok(());
        };
        let described = self.layout.data_off + data;
        if described == self.page_size {
            return Ok(());
        }
        Err((
            at,
            format!(
                "the header's page size is {} bytes, but its header_page describes pages of {described} bytes ({} of header, {data} of data): the file is damaged",
                self.page_size, self.layout.data_off
            ),
        ))
    }
}

/// Checks uncompressed CPU regions (cpu, offset, size) against each other and the page
/// size: regions that overlap would read one CPU's pages as another's, and a region that
/// is no whole number of pages was written by no tracer.
fn check_regions(v: &[(u32, u64, u64)], page: u64) -> R<()> {
    let mut sorted: Vec<&(u32, u64, u64)> = v.iter().filter(|r| r.2 > 0).collect();
    sorted.sort_by_key(|r| r.1);
    for &&(cpu, off, size) in &sorted {
        if size % page != 0 {
            return Err((
                off,
                format!("CPU {cpu}'s data is {size} bytes, not a whole number of {page}-byte pages: the region table or the page size is damaged"),
            ));
        }
    }
    for w in sorted.windows(2) {
        let ((a, ao, asz), (b, bo, _)) = (*w[0], *w[1]);
        if ao.saturating_add(asz) > bo {
            return Err((
                ao,
                format!("CPU {a}'s data (bytes {ao}..{}) overlaps CPU {b}'s, which starts at byte {bo}: the region table is damaged", ao.saturating_add(asz)),
            ));
        }
    }
    Ok(())
}

pub(super) fn read_header_info(c: &mut Cur<'_>, fmts: &Formats) -> R<PageLayout> {
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
pub(super) fn read_v6_meta(
    c: &mut Cur<'_>,
    fmts: &mut Formats,
) -> R<(PageLayout, Vec<(i32, String)>)> {
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

pub(super) fn read_ftrace_events(c: &mut Cur<'_>, fmts: &mut Formats) -> R<()> {
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

pub(super) fn read_event_formats(c: &mut Cur<'_>, fmts: &mut Formats) -> R<()> {
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

pub(super) fn parse_cmdlines(b: &[u8]) -> Vec<(i32, String)> {
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
