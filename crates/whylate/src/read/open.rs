//! Opening an input: decompression, format sniffing from the first bytes, and the reader
//! for that format ([`Input`]), with the options and progress every reader shares.

use crate::event::{Event, Interner};
use crate::read::decompress::Compression;
use crate::read::format::{Build, Format, REPORT_HEADERS};
use crate::read::merge::Sorted;
use crate::read::registry;
use crate::read::source::{Cx, Diag, EventSource, OrderStats, ReadError};
use crate::read::text::lines::LineReader;
use crate::read::text::reader::TextReader;
use crate::read::{decompress, ksyms, memory, perfdata, perfetto, tracedat, unpack};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
/// Options for opening an input.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Force a format instead of sniffing.
    pub format: Option<Format>,
    /// Fail on the first line that does not parse.
    pub strict: bool,
    /// Reorder window in events (0 = default).
    pub window: usize,
    /// Where a long read reports how far it got (a progress bar polls it).
    pub progress: Option<std::sync::Arc<Progress>>,
    /// The recording machine's `/proc/kallsyms` (`--kallsyms FILE`, read by
    /// [`ksyms::load_file`]): names code addresses in binary traces, over any other source.
    pub kallsyms: Option<perfdata::Given>,
    /// The syscall table that names raw syscall numbers (`--arch`), over what the file
    /// says; x86_64 when neither says.
    pub arch: Option<crate::syscalls::Arch>,
    /// Files the caller already opened (and checked): a path listed here is read through
    /// its file and never opened by name, so what was checked is what is read (the MCP
    /// server's roots; see [`super::ident::Held`]).
    pub held: Option<Arc<super::ident::Held>>,
}

/// How far a read has got, updated by the readers and polled by a progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of the input files consumed (compressed bytes for compressed text inputs).
    pub bytes: std::sync::atomic::AtomicU64,
    /// A binary input (trace.dat, perf.data) is read: its bytes are not counted, as its
    /// reader seeks around the file; progress is its events.
    pub binary: std::sync::atomic::AtomicBool,
    /// Events read so far (updated every 64 Ki events).
    pub events: std::sync::atomic::AtomicU64,
    /// Reading is over (the analysis runs).
    pub read_done: std::sync::atomic::AtomicBool,
    /// Set by the caller to stop the read: every input opened with these options then
    /// fails with [`ReadError::Cancelled`] within a few thousand events.
    pub cancel: std::sync::atomic::AtomicBool,
}

impl Progress {
    /// Publishes the event count every 64 Ki events: cheap enough for the hot loop.
    #[inline]
    pub fn tick(p: &Option<std::sync::Arc<Progress>>, events: u64) {
        if events & 0xffff == 0 {
            if let Some(p) = p {
                p.events.store(events, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// A file whose reads are counted into a [`Progress`].
struct Counted {
    f: Box<dyn Read + Send>,
    p: std::sync::Arc<Progress>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.f.read(buf)?;
        self.p
            .bytes
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Default reorder window. Text tools already print in time order; what is left is
/// small skew (trappy's unsorted sample, hand-merged captures). 4096 events (about 400 KB)
/// stay in L2 cache; a larger window measurably slows the hot path. `--reorder` raises it.
pub const DEFAULT_WINDOW: usize = 1 << 12;

/// Reorder window for perf.data: a perf round can hold tens of thousands of events.
pub const PERF_WINDOW: usize = 1 << 16;

/// One opened input: a text reader behind its reorder window, or a binary reader.
pub struct Input {
    kind: InputKind,
    compression: Compression,
    cut: decompress::Cut,
    /// Polled every [`CANCEL_EVERY`] events for [`Progress::cancel`].
    stop: Option<(Arc<Progress>, u32)>,
}

/// Events between two looks at [`Progress::cancel`]: a relaxed load each time is too
/// cheap to measure; 4096 events are well under a millisecond.
const CANCEL_EVERY: u32 = 4096;

enum InputKind {
    Text(Box<Sorted<TextReader>>),
    Dat(Box<tracedat::TraceDat>),
    Perf(Box<perfdata::PerfData>),
    Perfetto(Box<perfetto::Perfetto>),
}

impl EventSource for tracedat::TraceDat {
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.next_decoded(strings)
    }
    fn diag(&self) -> &Diag {
        tracedat::TraceDat::diag(self)
    }
    fn order(&self) -> OrderStats {
        tracedat::TraceDat::order(self)
    }
}

impl Input {
    /// The detected format.
    pub fn format(&self) -> Format {
        match &self.kind {
            InputKind::Text(t) => t.reader().format(),
            InputKind::Dat(_) => Format::TraceDat,
            InputKind::Perf(_) => Format::PerfData,
            InputKind::Perfetto(_) => Format::Perfetto,
        }
    }
    /// The detected compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }
    /// Bytes consumed from the (decompressed) input so far; a binary file's whole size.
    pub fn bytes_read(&self) -> u64 {
        match &self.kind {
            InputKind::Text(t) => t.reader().bytes_read(),
            InputKind::Dat(d) => d.bytes(),
            InputKind::Perf(d) => d.bytes(),
            InputKind::Perfetto(p) => p.bytes(),
        }
    }
    /// For a compressed binary input read in place through decompressing cursors (no
    /// decompressed copy, [`unpack`]): (bytes decompressed only to skip ahead, cursors
    /// started). None for every other input.
    pub fn unpack_cost(&self) -> Option<(u64, u64)> {
        match &self.kind {
            InputKind::Dat(d) => d.unpack_cost(),
            InputKind::Perf(p) => p.unpack_cost(),
            InputKind::Text(_) | InputKind::Perfetto(_) => None,
        }
    }
    /// whylate's record-time snapshot, when the input carries one.
    pub fn snapshot(&self) -> Option<&crate::snapshot::Snapshot> {
        match &self.kind {
            InputKind::Dat(d) => d.snapshot(),
            _ => None,
        }
    }
    /// Where a binary input's kernel symbols came from (None for text: the kernel printed
    /// names already).
    pub fn symbols(&self) -> Option<ksyms::SymbolSource> {
        match &self.kind {
            InputKind::Text(_) | InputKind::Perfetto(_) => None,
            InputKind::Perf(p) => p.info().symbols.clone(),
            InputKind::Dat(d) => Some(match &d.info().kallsyms_from {
                Some(f) => ksyms::SymbolSource::Given(f.clone()),
                None if d.formats().carries_kallsyms() => ksyms::SymbolSource::Trace,
                None => ksyms::SymbolSource::Unresolved("the trace.dat carries no symbols".into()),
            }),
        }
    }
    /// Says when the trace's kernel code addresses (work functions, timer callbacks,
    /// tasklets) stay unresolved, why, and how to resolve them.
    pub fn symbol_note(&self) -> Option<String> {
        let InputKind::Perf(p) = &self.kind else {
            return None;
        };
        let info = p.info();
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
    /// Where a compressed binary input's stream was cut (its reader reads the part
    /// before; text readers say it in their [`Diag::truncated`]).
    pub fn binary_cut(&self) -> Option<&str> {
        match self.kind {
            InputKind::Text(_) => None,
            _ => self.cut.get().map(String::as_str),
        }
    }
    /// The recording machine's architecture, when the file says (a perf.data's arch
    /// header, a trace.dat's uname): it names raw syscall numbers.
    pub fn arch(&self) -> Option<crate::syscalls::Arch> {
        let said = match &self.kind {
            InputKind::Perf(d) => d.info().arch.clone(),
            InputKind::Dat(d) => d.info().uname.clone(),
            InputKind::Perfetto(p) => p.info().machine.clone(),
            InputKind::Text(_) => None,
        }?;
        (said.split_whitespace()).find_map(crate::syscalls::Arch::parse)
    }
    /// What a reader says about how its input was recorded (Perfetto's clock and
    /// losses), for the report's notes.
    pub fn notes(&self) -> Vec<String> {
        match &self.kind {
            InputKind::Perfetto(p) => p.notes(),
            _ => Vec::new(),
        }
    }
    /// The Perfetto reader, when the input is one.
    pub fn perfetto(&self) -> Option<&perfetto::Perfetto> {
        match &self.kind {
            InputKind::Perfetto(p) => Some(p),
            _ => None,
        }
    }
    /// trace.dat header facts.
    pub fn dat_info(&self) -> Option<&tracedat::DatInfo> {
        match &self.kind {
            InputKind::Dat(d) => Some(d.info()),
            _ => None,
        }
    }
}

impl Input {
    /// The perf.data reader, when the input is one.
    pub fn perf_mut(&mut self) -> Option<&mut perfdata::PerfData> {
        match &mut self.kind {
            InputKind::Perf(p) => Some(p),
            _ => None,
        }
    }

    /// The Perfetto reader, when the input is one.
    pub fn perfetto_mut(&mut self) -> Option<&mut perfetto::Perfetto> {
        match &mut self.kind {
            InputKind::Perfetto(p) => Some(p),
            _ => None,
        }
    }

    /// The trace.dat reader, when the input is one.
    pub fn dat_mut(&mut self) -> Option<&mut tracedat::TraceDat> {
        match &mut self.kind {
            InputKind::Dat(d) => Some(d),
            _ => None,
        }
    }

    /// Counts `events` about to be read and, every `CANCEL_EVERY` of them, fails with
    /// [`ReadError::Cancelled`] once the options' [`Progress::cancel`] is set.
    #[inline]
    pub fn check_cancel(&mut self, events: u32) -> Result<(), ReadError> {
        if let Some((p, n)) = &mut self.stop {
            *n = n.saturating_add(events);
            if *n >= CANCEL_EVERY {
                *n = 0;
                if p.cancel.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err(ReadError::Cancelled);
                }
            }
        }
        Ok(())
    }

    /// The next event, lent (see [`Sorted::next_ref`]).
    pub fn next_ref(&mut self, strings: &mut Interner) -> Result<Option<&Event>, ReadError> {
        self.check_cancel(1)?;
        match &mut self.kind {
            InputKind::Text(t) => t.next_ref(strings),
            InputKind::Perf(d) => d.next_ref(strings),
            InputKind::Dat(d) => d.next_ref(strings),
            InputKind::Perfetto(p) => p.next_ref(strings),
        }
    }
}

impl crate::read::merge::Lend for Input {
    fn next_ref(&mut self, strings: &mut Interner) -> Result<Option<&Event>, ReadError> {
        Input::next_ref(self, strings)
    }
}

impl EventSource for Input {
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.check_cancel(1)?;
        match &mut self.kind {
            InputKind::Text(t) => t.next_event(strings),
            InputKind::Dat(d) => d.next_decoded(strings),
            InputKind::Perf(d) => d.next_decoded(strings),
            InputKind::Perfetto(p) => p.next_decoded(strings),
        }
    }
    fn diag(&self) -> &Diag {
        match &self.kind {
            InputKind::Text(t) => t.diag(),
            InputKind::Dat(d) => d.diag(),
            InputKind::Perf(d) => d.diag(),
            InputKind::Perfetto(p) => p.diag(),
        }
    }
    fn order(&self) -> OrderStats {
        match &self.kind {
            InputKind::Text(t) => t.order(),
            InputKind::Dat(d) => d.order(),
            InputKind::Perf(d) => d.order(),
            InputKind::Perfetto(p) => p.order(),
        }
    }
}

/// Copies a decompressed stream into an unnamed temporary file (gone when closed, also
/// when whylate is killed), for binary formats that need random access.
fn spool(path: &Path, mut rd: Box<dyn Read + Send>) -> Result<File, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = tempfile::tempfile().map_err(io_err)?;
    io::copy(&mut rd, &mut f).map_err(io_err)?;
    // Readers that stream (perf.data) start from the file position.
    io::Seek::rewind(&mut f).map_err(io_err)?;
    Ok(f)
}

/// The rest of a decompressed stream (what `lines` buffered, then what it did not read) in
/// memory, for a compressed binary trace that came from memory.
fn slurp<R: Read>(lines: LineReader<R>) -> io::Result<memory::Pieces> {
    let (buffered, rest) = lines.into_inner();
    whole(io::Cursor::new(buffered).chain(rest))
}

/// All of `rd`, in memory.
fn whole(mut rd: impl Read) -> io::Result<memory::Pieces> {
    let mut all = Vec::new();
    rd.read_to_end(&mut all)?;
    let mut p = memory::Pieces::new();
    p.push(Arc::from(all));
    Ok(p)
}

/// Bytes read ahead to decide the format.
const HEAD: usize = 256 * 1024;
/// Most bytes read ahead when the first [`HEAD`] hold no data line (only blank and
/// comment lines): enough for any real preamble, bounded for a hostile one.
const HEAD_MAX: usize = 16 << 20;
/// Comment bytes kept for the sniffer from such a preamble (its headers are at its top).
const HEAD_COMMENTS: usize = 64 * 1024;

/// The bytes the format is decided on, and how many were read ahead. Past a preamble of
/// blank and comment lines longer than [`HEAD`], reads on (up to [`HEAD_MAX`]) to the
/// first data lines; the head is then the preamble's first comments and those lines.
fn read_head<R: Read>(lines: &mut LineReader<R>) -> io::Result<(Vec<u8>, usize)> {
    let mut want = HEAD;
    let mut buf = lines.peek(want)?;
    while buf.len() >= want && want < HEAD_MAX && !has_data(buf) {
        want = (want * 4).min(HEAD_MAX);
        buf = lines.peek(want)?;
    }
    if buf.len() <= HEAD {
        return Ok((buf.to_vec(), buf.len()));
    }
    let (mut head, mut comments) = (Vec::with_capacity(HEAD), 0);
    for line in buf.split(|c| *c == b'\n') {
        if head.len() >= HEAD {
            break;
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        if !is_data(line) {
            comments += line.len() + 1;
            if comments > HEAD_COMMENTS {
                continue;
            }
        }
        head.extend_from_slice(line);
        head.push(b'\n');
    }
    Ok((head, buf.len()))
}

/// True when `buf` (read ahead, its last line possibly cut) holds a whole data line.
fn has_data(buf: &[u8]) -> bool {
    let whole = memchr::memrchr(b'\n', buf).map_or(&buf[..0], |p| &buf[..p]);
    whole.split(|c| *c == b'\n').any(is_data)
}

/// A line that is trace data to the sniffer: not blank, no comment, no report header.
fn is_data(line: &[u8]) -> bool {
    let line = line.trim_ascii();
    !(line.is_empty()
        || line.starts_with(b"#")
        || REPORT_HEADERS.iter().any(|h| line.starts_with(h)))
}

/// Opens `path` (`-` = standard input), decompresses and sniffs it, and returns an event
/// source in time order.
pub fn open(path: &Path, opts: &OpenOptions) -> Result<Input, ReadError> {
    let mut input = open_input(path, opts)?;
    input.stop = opts.progress.clone().map(|p| (p, 0));
    Ok(input)
}

/// Opens every file of `paths`, each once: two names of one file are refused (its events
/// would count twice).
pub fn open_each(
    paths: &[std::path::PathBuf],
    opts: &OpenOptions,
) -> Result<Vec<Input>, ReadError> {
    super::ident::check_distinct(paths, opts.held.as_deref())?;
    paths.iter().map(|p| open(p, opts)).collect()
}

/// Where an input's bytes come from: a file read by offset, a stream read once, or bytes
/// in memory.
enum Origin {
    File(Arc<File>),
    Stream,
    Memory(Arc<memory::Pieces>),
}

fn open_input(path: &Path, opts: &OpenOptions) -> Result<Input, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let held = opts.held.as_ref().and_then(|h| h.get(path)).cloned();
    if opts.held.is_some() && held.is_none() {
        // A caller that holds its files reads nothing else: a name it did not open
        // (changed on the way, say) is never opened here.
        return Err(io_err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not one of the files the caller opened; refused",
        )));
    }
    let stdin = held.is_none() && path.as_os_str() == "-";
    // A pipe, FIFO or `<(cmd)` cannot be opened again or seeked: read it as stdin is.
    let stream = held.is_none() && (stdin || super::ident::is_stream(path));
    // A file is opened once: the sniffing reader and every reader after it read the same
    // open file at their own offsets (`pread`), so all of them read the file that was
    // sniffed, whatever happens to its name meanwhile.
    let (f, origin): (Box<dyn Read + Send>, Origin) = if stdin {
        (Box::new(io::stdin()), Origin::Stream)
    } else if stream {
        (Box::new(File::open(path).map_err(io_err)?), Origin::Stream)
    } else {
        let file = match held {
            Some(f) => f,
            None => Arc::new(File::open(path).map_err(io_err)?),
        };
        (
            Box::new(unpack::FileAt::new(file.clone())),
            Origin::File(file),
        )
    };
    open_read(path, f, origin, opts)
}

/// Opens a trace held in memory, in any format, compressed or not; `name` stands for it
/// in messages. Tests, fuzz targets and `watch` hand bytes over this way: nothing is
/// written to a file.
pub fn open_memory(
    name: &Path,
    bytes: memory::Pieces,
    opts: &OpenOptions,
) -> Result<Input, ReadError> {
    let bytes = Arc::new(bytes);
    let rd = Box::new(memory::Reader::new(bytes.clone()));
    let mut input = open_read(name, rd, Origin::Memory(bytes), opts)?;
    input.stop = opts.progress.clone().map(|p| (p, 0));
    Ok(input)
}

/// Decompresses and sniffs `f` (read from `origin`) and builds its format's reader.
fn open_read(
    path: &Path,
    f: Box<dyn Read + Send>,
    origin: Origin,
    opts: &OpenOptions,
) -> Result<Input, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let f: Box<dyn Read + Send> = match &opts.progress {
        Some(p) => Box::new(Counted { f, p: p.clone() }),
        None => f,
    };
    let (rd, compression, cut) = decompress::open(path, f).map_err(io_err)?;
    let mut lines = LineReader::new(rd);
    let (head, peeked) = read_head(&mut lines).map_err(io_err)?;
    if peeked == 0 {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
            what: match (compression, cut.get()) {
                (Compression::None, _) => String::new(),
                (_, Some(c)) => format!(" after decompression: {c}"),
                (c, None) => format!(" (nothing after {c:?} decompression)").to_lowercase(),
            },
        });
    }
    if let Some(binary) = registry::binary(&head, opts.format) {
        if let Some(found) = registry::contradicts(&head, binary.format) {
            return Err(ReadError::FormatMismatch {
                path: path.to_path_buf(),
                forced: binary.format.name().into(),
                found: found.name().into(),
            });
        }
        if matches!(binary.build, Build::Perfetto) {
            let (buffered, rest) = lines.into_inner();
            let rd = Box::new(io::Cursor::new(buffered).chain(rest));
            let p = open_perfetto(path, rd, &origin, compression, &cut)?;
            return Ok(Input {
                kind: InputKind::Perfetto(Box::new(p)),
                compression,
                cut,
                stop: None,
            });
        }
        let dat = matches!(binary.build, Build::TraceDat);
        if let Some(p) = &opts.progress {
            // Binary readers seek around the file: their progress shows as events only.
            p.binary.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        // A compressed file is read in place; one that is cut, or a stream, is spooled.
        let unpacked = match (&origin, compression != Compression::None) {
            (Origin::File(file), true) => open_unpacked(path, file, dat, opts)?,
            _ => None,
        };
        if let Some(kind) = unpacked {
            return Ok(Input {
                kind,
                compression,
                cut,
                stop: None,
            });
        }
        // Binary formats need random access: a compressed one (or a stream) not read
        // through cursors is spooled (decompressed in memory when it came from there).
        let bytes = match (&origin, compression) {
            // The same open file: its own offset was never moved (the readers `pread`).
            (Origin::File(file), Compression::None) => {
                unpack::Bytes::File(file.try_clone().map_err(io_err)?)
            }
            (Origin::Memory(b), Compression::None) => unpack::Bytes::Memory(b.clone()),
            (Origin::Memory(_), _) => {
                unpack::Bytes::Memory(Arc::new(slurp(lines).map_err(io_err)?))
            }
            _ => {
                let (buffered, rest) = lines.into_inner();
                let f = spool(path, Box::new(io::Cursor::new(buffered).chain(rest)))?;
                unpack::Bytes::File(f)
            }
        };
        let kind = open_binary(path, bytes, dat, opts).map_err(|e| with_cut(e, &cut))?;
        return Ok(Input {
            kind,
            compression,
            cut,
            stop: None,
        });
    }
    let format = match opts.format {
        Some(f) => f,
        None => registry::sniff(&head).ok_or_else(|| ReadError::UnknownFormat {
            path: path.to_path_buf(),
            tried: registry::tried(),
            start: describe_start(&head),
        })?,
    };
    let reader = registry::reader(format);
    let Build::Text(parser) = reader.build else {
        unreachable!("binary formats return above")
    };
    let parser = parser(&head);
    let diag = Diag::strict(opts.strict);
    let size = match &origin {
        _ if compression != Compression::None => None,
        Origin::File(f) => f.metadata().ok().map(|m| m.len()),
        Origin::Memory(b) => Some(b.len()),
        Origin::Stream => None,
    };
    let plan = crate::read::text::chunked::plan(reader.split, peeked, HEAD, size);
    let r = TextReader::new(
        path,
        lines,
        parser,
        diag,
        (format, compression),
        cut.clone(),
        plan,
    );
    Ok(Input {
        kind: InputKind::Text(Box::new(Sorted::new(
            r,
            if opts.window == 0 {
                DEFAULT_WINDOW
            } else {
                opts.window
            },
        ))),
        compression,
        cut,
        stop: None,
    })
}

/// The format of the trace at `path`, when it is a regular file holding one (compressed
/// or not); None for anything else. Outputs are checked with it, so that a trace named
/// where an output was meant is not written over. Text counts as a trace when its first
/// `HEAD` bytes give an event: the sniffer alone takes any HTML page for systrace.
pub fn trace_format(path: &Path) -> Option<Format> {
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() || m.len() == 0 {
        return None;
    }
    let f = File::open(path).ok()?;
    let (rd, _, _) = decompress::open(path, Box::new(f)).ok()?;
    let (head, _) = read_head(&mut LineReader::new(rd)).ok()?;
    if let Some(binary) = registry::binary(&head, None) {
        return Some(binary.format);
    }
    let format = registry::sniff(&head)?;
    let Build::Text(parser) = registry::reader(format).build else {
        return None;
    };
    let mut parser = parser(&head);
    let (mut strings, mut out, mut diag) = (Interner::new(), VecDeque::new(), Diag::default());
    let whole = memchr::memrchr(b'\n', &head).map_or(&head[..], |p| &head[..p]);
    for (i, line) in whole.split(|c| *c == b'\n').enumerate() {
        let mut cx = Cx {
            strings: &mut strings,
            out: &mut out,
            diag: &mut diag,
            lineno: i as u64 + 1,
        };
        parser.line(crate::read::text::lines::chomp(line), &mut cx);
        if !out.is_empty() {
            return Some(format);
        }
    }
    let mut cx = Cx {
        strings: &mut strings,
        out: &mut out,
        diag: &mut diag,
        lineno: 0,
    };
    parser.finish(&mut cx);
    (!out.is_empty()).then_some(format)
}

/// A compressed trace that declares no size (gzip, zstd from a pipe), read in place when
/// its size can be had: for a trace.dat whose CPU regions end where its gzip trailer says
/// the data does (modulo 4 GiB), that end, without a pass; otherwise by decompressing it
/// through once. None for a trace.dat that would be spooled anyway (too many CPU
/// regions, found before that pass) and for a cut file.
fn unsized_trace(path: &Path, file: &Arc<File>, dat: bool) -> io::Result<Option<unpack::Unpacked>> {
    if dat {
        match tracedat::TraceDat::probe(path, file.clone()) {
            tracedat::Probe::TooManyRegions => return Ok(None),
            tracedat::Probe::Ends(end) => {
                let trailer = crate::read::declared::gzip_size_mod_4g(file)?;
                if trailer == Some(end as u32) {
                    return Ok(Some(unpack::Unpacked::claimed(path, file.clone(), end)));
                }
            }
            tracedat::Probe::Unknown => {}
        }
    }
    unpack::Unpacked::measure_file(path, file.clone())
}

/// Opens a (seekable) trace.dat or perf.data, with `--kallsyms` symbols when given.
fn open_binary(
    path: &Path,
    file: unpack::Bytes,
    dat: bool,
    opts: &OpenOptions,
) -> Result<InputKind, ReadError> {
    // trace.dat is time-ordered by construction (per-CPU merge): no reorder window (it
    // would copy every event twice); what a skewed clock still puts out of order is
    // counted by the reader. perf.data is sorted by its reader, round by round, with a
    // hold of at least PERF_WINDOW events for what comes after its round.
    Ok(if dat {
        let mut d = tracedat::TraceDat::open_bytes(path, file)?;
        if let Some((name, text)) = &opts.kallsyms {
            d.use_kallsyms(name, text);
        }
        InputKind::Dat(Box::new(d))
    } else {
        InputKind::Perf(Box::new(perfdata::PerfData::open_with(
            path,
            file,
            opts.window.max(PERF_WINDOW),
            true,
            opts.kallsyms.as_ref(),
        )?))
    })
}

/// A compressed trace.dat (`dat`) or perf.data read in place through decompressing
/// cursors, with no decompressed copy ([`unpack`]); None when it is cut or damaged, or
/// when a trace.dat has more CPUs than cursors are kept for (each CPU's data is read as
/// its own region): the caller spools it then.
/// A Perfetto trace, indexed first and its bundles read in time order
/// (`perfetto::index`): a file in place (a compressed one through cursors), a stream (a
/// pipe, stdin) spooled to a temporary file first, decompressed.
fn open_perfetto(
    path: &Path,
    rd: Box<dyn Read + Send>,
    origin: &Origin,
    compression: Compression,
    cut: &decompress::Cut,
) -> Result<perfetto::Perfetto, ReadError> {
    use perfetto::index::{Index, Source};
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut index, src) = match origin {
        Origin::Memory(b) => {
            let b = match compression {
                Compression::None => b.clone(),
                _ => Arc::new(whole(rd).map_err(io_err)?),
            };
            let index = Index::scan(memory::Reader::new(b.clone())).map_err(io_err)?;
            (index, Source::Memory(b))
        }
        Origin::File(file) => {
            let index = Index::scan(rd).map_err(io_err)?;
            let src = match compression {
                Compression::None => Source::File(file.clone()),
                _ => Source::Unpacked(Arc::new(unpack::Unpacked::unmeasured(path, file.clone()))),
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
    Ok(perfetto::Perfetto::from_index(
        path,
        index,
        src,
        cut.clone(),
    ))
}

fn open_unpacked(
    path: &Path,
    file: &Arc<File>,
    dat: bool,
    opts: &OpenOptions,
) -> Result<Option<InputKind>, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let u = match unpack::Unpacked::open_file(path, file.clone()).map_err(io_err)? {
        Some(u) => u,
        None => match unsized_trace(path, file, dat).map_err(io_err)? {
            Some(u) => u,
            None => return Ok(None),
        },
    };
    if !dat {
        let window = opts.window.max(PERF_WINDOW);
        let p =
            perfdata::PerfData::open_unpacked(path, Arc::new(u), window, opts.kallsyms.as_ref())?;
        return Ok(Some(InputKind::Perf(Box::new(p))));
    }
    let Some(mut d) = tracedat::TraceDat::open_unpacked(path, u)? else {
        return Ok(None);
    };
    if let Some((name, text)) = &opts.kallsyms {
        d.use_kallsyms(name, text);
    }
    Ok(Some(InputKind::Dat(Box::new(d))))
}

/// A binary input that fails to open because its compressed stream was cut says so.
fn with_cut(e: ReadError, cut: &decompress::Cut) -> ReadError {
    match (e, cut.get()) {
        (ReadError::Corrupt { path, offset, why }, Some(c)) => ReadError::Corrupt {
            path,
            offset,
            why: format!("{why} ({c})"),
        },
        (e, _) => e,
    }
}

/// How an unreadable input starts, for the error: its first line quoted when it is text,
/// else its first bytes in hex (a binary's first "line" can be hundreds of bytes of noise).
fn describe_start(head: &[u8]) -> String {
    let end = memchr::memchr(b'\n', head).unwrap_or(head.len());
    let line = &head[..end];
    let text = std::str::from_utf8(line)
        .is_ok_and(|t| !t.chars().any(|c| c.is_control() && c != '\t' && c != '\r'));
    if text {
        let t: String = String::from_utf8_lossy(line).chars().take(120).collect();
        return format!("the line {t:?}");
    }
    let hex: Vec<String> = head.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("the bytes {} (not text)", hex.join(" "))
}
