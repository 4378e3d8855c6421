//! Opening an input: decompression, format sniffing from the first bytes, and the reader
//! for that format ([`Input`]), with the options and progress every reader shares.

use crate::event::{Event, Interner};
use crate::read::binary::{Binary, Opening, Origin};
use crate::read::declare::{Build, REPORT_HEADERS};
use crate::read::decompress::Compression;
use crate::read::format::Format;
use crate::read::merge::Sorted;
use crate::read::options::{OpenOptions, Progress, DEFAULT_WINDOW};
use crate::read::registry;
use crate::read::source::{Cx, Diag, EventSource, OrderStats, ReadError};
use crate::read::text::lines::LineReader;
use crate::read::text::reader::TextReader;
use crate::read::{decompress, ksyms, memory, unpack};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
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

/// One opened input: a text reader behind its reorder window, or a binary reader.
pub struct Input {
    kind: InputKind,
    compression: Compression,
    cut: decompress::Cut,
    /// Polled every [`CANCEL_EVERY`] events for [`Progress::cancel`].
    stop: Option<(Arc<Progress>, u32)>,
    /// Where its bytes come from, to read them again from the start ([`Input::again`]):
    /// the open file or the bytes in memory, never a stream.
    again: Option<(std::path::PathBuf, Origin)>,
}

/// Events between two looks at [`Progress::cancel`]: a relaxed load each time is too
/// cheap to measure; 4096 events are well under a millisecond.
const CANCEL_EVERY: u32 = 4096;

enum InputKind {
    Text(Box<Sorted<TextReader>>),
    Binary(Box<dyn Binary>, Format),
}

impl Input {
    /// The same input opened again, to be read again from its start: from the file
    /// opened first (not its name, which may name another file by now) or the bytes in
    /// memory. None for a stream (standard input, a pipe), which cannot be read twice.
    pub fn again(&self, opts: &OpenOptions) -> Option<Result<Input, ReadError>> {
        let (path, origin) = self.again.as_ref()?;
        let f: Box<dyn Read + Send> = match origin {
            Origin::File(file) => Box::new(unpack::FileAt::new(file.clone())),
            Origin::Memory(bytes) => Box::new(memory::Reader::new(bytes.clone())),
            Origin::Stream => return None,
        };
        Some(open_read(path, f, origin.clone(), opts).map(|mut input| {
            input.stop = opts.progress.clone().map(|p| (p, 0));
            input
        }))
    }

    /// The detected format.
    pub fn format(&self) -> Format {
        match &self.kind {
            InputKind::Text(t) => t.reader().format(),
            InputKind::Binary(_, f) => *f,
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
            InputKind::Binary(b, _) => b.bytes(),
        }
    }
    /// The binary reader, when the input is one.
    pub(crate) fn binary(&self) -> Option<&dyn Binary> {
        match &self.kind {
            InputKind::Binary(b, _) => Some(&**b),
            InputKind::Text(_) => None,
        }
    }
    /// For a compressed binary input read in place through decompressing cursors (no
    /// decompressed copy, [`unpack`]): (bytes decompressed only to skip ahead, cursors
    /// started). None for every other input.
    pub fn unpack_cost(&self) -> Option<(u64, u64)> {
        self.binary()?.unpack_cost()
    }
    /// whylate's record-time snapshot, when the input carries one.
    pub fn snapshot(&self) -> Option<&crate::snapshot::Snapshot> {
        self.binary()?.snapshot()
    }
    /// Where a binary input's kernel symbols came from (None for text: the kernel printed
    /// names already).
    pub fn symbols(&self) -> Option<ksyms::SymbolSource> {
        self.binary()?.symbols()
    }
    /// Says when the trace's kernel code addresses (work functions, timer callbacks,
    /// tasklets) stay unresolved, why, and how to resolve them.
    pub fn symbol_note(&self) -> Option<String> {
        self.binary()?.symbol_note()
    }
    /// Where a compressed binary input's stream was cut (its reader reads the part
    /// before; text readers say it in their [`Diag::truncated`]).
    pub fn binary_cut(&self) -> Option<&str> {
        self.binary()?;
        self.cut.get().map(String::as_str)
    }
    /// The recording machine's architecture, when the file says (a perf.data's arch
    /// header, a trace.dat's uname): it names raw syscall numbers.
    pub fn arch(&self) -> Option<crate::syscalls::Arch> {
        let said = self.binary()?.machine()?;
        (said.split_whitespace()).find_map(crate::syscalls::Arch::parse)
    }
    /// What a reader says about how its input was recorded (Perfetto's clock and
    /// losses), for the report's notes.
    pub fn notes(&self) -> Vec<String> {
        self.binary().map(|b| b.notes()).unwrap_or_default()
    }
    /// The binary reader of type `T` (`tracedat::TraceDat`, `perfetto::Perfetto`...),
    /// when the input is one: what only that format knows (a trace.dat's header facts).
    pub fn reader<T: 'static>(&self) -> Option<&T> {
        self.binary()?.as_any().downcast_ref::<T>()
    }
}

impl Input {
    /// The binary reader, when the input is one (the pass splits it across threads).
    pub(crate) fn binary_mut(&mut self) -> Option<&mut dyn Binary> {
        match &mut self.kind {
            InputKind::Binary(b, _) => Some(&mut **b),
            InputKind::Text(_) => None,
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
            InputKind::Binary(b, _) => b.next_ref(strings),
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
            InputKind::Binary(b, _) => b.next_decoded(strings),
        }
    }
    fn diag(&self) -> &Diag {
        match &self.kind {
            InputKind::Text(t) => t.diag(),
            InputKind::Binary(b, _) => b.diag(),
        }
    }
    fn order(&self) -> OrderStats {
        match &self.kind {
            InputKind::Text(t) => t.order(),
            InputKind::Binary(b, _) => b.order(),
        }
    }
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
        let Build::Binary(open) = binary.build else {
            unreachable!("registry::binary finds binary readers only")
        };
        let (buffered, rest) = lines.into_inner();
        let opening = Opening {
            path,
            stream: Box::new(io::Cursor::new(buffered).chain(rest)),
            origin: &origin,
            compression,
            cut: &cut,
            opts,
        };
        let kind = InputKind::Binary(open(opening)?, binary.format);
        return Ok(Input {
            kind,
            compression,
            cut,
            stop: None,
            again: again(path, origin),
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
        again: again(path, origin),
    })
}

/// What reads `origin` again from its start, when it can be.
fn again(path: &Path, origin: Origin) -> Option<(std::path::PathBuf, Origin)> {
    (!matches!(origin, Origin::Stream)).then(|| (path.to_path_buf(), origin))
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
