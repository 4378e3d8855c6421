//! Readers: any trace file → one time-ordered stream of [`Event`]s.
//!
//! Pipeline per input: bytes (decompressed transparently: gzip, zstd, xz) → format sniffed
//! from the first 256 KiB → a line parser for that format → [`Sorted`] (a bounded reorder
//! window, because real traces are not always in time order) → the consumer. Several inputs
//! are merged by timestamp ([`Merged`]). Nothing holds the whole input: memory is the reorder
//! window, the line buffer and the interned strings.
//!
//! Readers never panic on bad input. A line that is trace data but does not parse is counted
//! and sampled in [`Diag`] with its line number; a line that is not trace data at all (prose
//! around a pasted trace, shell prompts) is counted separately as skipped.

mod body;
mod comms;
pub mod decompress;
mod ftrace;
mod funcgraph;
pub mod ksyms;
mod lines;
mod memo;
mod perf_script;
pub mod perfdata;
pub mod ringbuf;
mod swar;
mod sysdig;
mod systrace;
pub mod tep;
pub mod tracedat;

pub use body::{ftrace_syscall, parse_body, softirq_name};
pub use decompress::Compression;
pub use lines::LineReader;
pub(crate) use swar::same as same_bytes;

use crate::event::{Event, Interner};
use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The input formats whylate reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// ftrace `trace` / `trace_pipe` text.
    Ftrace,
    /// `trace-cmd report` text (any of its layouts).
    TraceCmdReport,
    /// A latency-tracer dump (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt...).
    LatencyTracer,
    /// function_graph tracer text.
    FunctionGraph,
    /// `perf script` text.
    PerfScript,
    /// sysdig text output.
    Sysdig,
    /// Legacy systrace (HTML or the JS payload) holding ftrace text.
    Systrace,
    /// trace-cmd's binary trace.dat (v6, v7).
    #[serde(rename = "trace.dat")]
    TraceDat,
    /// perf's binary perf.data.
    #[serde(rename = "perf.data")]
    PerfData,
}

impl Format {
    /// All formats, in sniffing order.
    pub const ALL: [Format; 7] = [
        Format::Systrace,
        Format::FunctionGraph,
        Format::LatencyTracer,
        Format::TraceCmdReport,
        Format::Ftrace,
        Format::PerfScript,
        Format::Sysdig,
    ];

    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Ftrace => "ftrace",
            Format::TraceCmdReport => "trace-cmd-report",
            Format::LatencyTracer => "latency-tracer",
            Format::FunctionGraph => "function-graph",
            Format::PerfScript => "perf-script",
            Format::Sysdig => "sysdig",
            Format::Systrace => "systrace",
            Format::TraceDat => "trace.dat",
            Format::PerfData => "perf.data",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// I/O error (open, read, decompress).
    // The cause is in the message; thiserror also chains a field named `source`, so
    // printers show this error alone, not its chain.
    #[error("{path}: {source}")]
    Io {
        /// The input.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The input matches no known format.
    #[error("{path}: not a trace whylate can read (tried: {tried}); it starts with {start}")]
    UnknownFormat {
        /// The input.
        path: PathBuf,
        /// Formats that were tried.
        tried: String,
        /// How it starts: its first line quoted (shortened), or its first bytes in hex
        /// when they are not text.
        start: String,
    },
    /// A selector cannot select anything in these inputs (an event or a field they do
    /// not have), said with the closest names they do have.
    #[error("{why}")]
    NoMatch {
        /// What is missing, and what is close.
        why: String,
    },
    /// The input holds nothing (0 bytes, or nothing after decompression).
    #[error("{path}: empty file{what}")]
    Empty {
        /// The input.
        path: PathBuf,
        /// " (nothing after gzip decompression)" for a compressed one, else "".
        what: String,
    },
    /// A binary input is malformed at `offset`.
    #[error("{path}: byte {offset}: {why}")]
    Corrupt {
        /// The input.
        path: PathBuf,
        /// Byte offset (in the decompressed input) where the problem is.
        offset: u64,
        /// What was expected and what was found.
        why: String,
    },
    /// `--strict` and a line did not parse.
    #[error("{path}:{line}: {why}: {text:?}")]
    Strict {
        /// The input.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What was expected.
        why: String,
        /// The line, shortened.
        text: String,
    },
}

/// A line that looked like trace data but did not parse.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BadLine {
    /// 1-based line number.
    pub line: u64,
    /// What was expected.
    pub why: &'static str,
    /// The line (shortened to 200 bytes).
    pub text: String,
}

/// Metadata some formats carry in their headers.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Header {
    /// ftrace `# tracer: X`.
    pub tracer: Option<String>,
    /// ftrace `entries-in-buffer/entries-written: E/W`.
    pub entries_in_buffer: Option<u64>,
    /// See `entries_in_buffer`.
    pub entries_written: Option<u64>,
    /// `#P:N` or trace-cmd `cpus=N`.
    pub cpus: Option<u32>,
    /// trace-cmd `version = N`.
    pub version: Option<u32>,
    /// Latency-tracer dump header.
    pub latency: Option<LatencyHeader>,
}

/// The header of a latency-tracer dump (`# latency: 259 us, #4/4, CPU#2 | ...`).
#[derive(Clone, Debug, Default, serde::Serialize, PartialEq)]
pub struct LatencyHeader {
    /// The measured latency, µs.
    pub latency_us: u64,
    /// Entries shown.
    pub entries: u64,
    /// Entries recorded.
    pub entries_total: u64,
    /// CPU of the section.
    pub cpu: Option<u32>,
    /// Preemption model as printed (opaque).
    pub model: Option<String>,
    /// `task: comm-pid`.
    pub task: Option<String>,
    /// Task pid.
    pub pid: Option<i32>,
    /// `=> started at: X`.
    pub started_at: Option<String>,
    /// `=> ended at: X`.
    pub ended_at: Option<String>,
}

/// What a reader noticed about its input besides the events.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Diag {
    /// Lines read.
    pub lines: u64,
    /// Header/comment lines.
    pub comment_lines: u64,
    /// Lines that are not trace data (prose, prompts, elisions), skipped.
    pub skipped_lines: u64,
    /// Lines belonging to a previous record (stack traces, callchains, banners).
    pub continuation_lines: u64,
    /// Trace-data lines that did not parse.
    pub unparsed: u64,
    /// The first few of those.
    pub unparsed_samples: Vec<BadLine>,
    /// Known events whose text did not have the expected fields (kept as `Other`).
    pub untyped_known: u64,
    /// Header metadata.
    pub header: Header,
    /// Timestamps are raw counter ticks, not ns (`counter`/`x86-tsc` clocks).
    pub raw_clock: bool,
    /// Timestamps are relative to the trace start (latency dumps, sysdig -tr).
    pub relative_time: bool,
    /// The format has no timestamps at all (function_graph without abstime).
    pub no_timestamps: bool,
    /// The input ended abruptly (a cut compressed stream): what was read is kept.
    pub truncated: Option<String>,
    /// Set when `strict` and the first unparsed line was seen.
    #[serde(skip)]
    pub strict_error: Option<BadLine>,
    #[serde(skip)]
    strict: bool,
}

const MAX_SAMPLES: usize = 10;

impl Diag {
    /// Records a trace line that did not parse.
    pub fn bad(&mut self, line: u64, text: &[u8], why: &'static str) {
        self.unparsed += 1;
        let t = BadLine {
            line,
            why,
            text: String::from_utf8_lossy(&text[..text.len().min(200)]).into_owned(),
        };
        if self.strict && self.strict_error.is_none() {
            self.strict_error = Some(t.clone());
        }
        if self.unparsed_samples.len() < MAX_SAMPLES {
            self.unparsed_samples.push(t);
        }
    }
}

/// A line-oriented format parser. It pushes zero or more events per line.
pub(crate) trait LineParser {
    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>);
    fn finish(&mut self, _cx: &mut Cx<'_>) {}
}

/// What a [`LineParser`] writes into.
pub(crate) struct Cx<'a> {
    pub strings: &'a mut Interner,
    pub out: &'a mut VecDeque<Event>,
    pub diag: &'a mut Diag,
    pub lineno: u64,
}

/// A source of events.
pub trait EventSource {
    /// The next event in time order, or None at the end.
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError>;
    /// What the reader noticed so far.
    fn diag(&self) -> &Diag;
    /// Reordering that was needed so far.
    fn order(&self) -> OrderStats;
    /// Appends the next event(s) to `out`; false at the end. Text readers parse straight
    /// into the caller's queue, saving two copies of every event on the hot path.
    fn fill_into(
        &mut self,
        strings: &mut Interner,
        out: &mut VecDeque<Event>,
    ) -> Result<bool, ReadError> {
        match self.next_event(strings)? {
            Some(e) => {
                out.push_back(e);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// How far the input was from time order.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct OrderStats {
    /// Events that arrived earlier than an event before them and were put back in order.
    pub reordered: u64,
    /// Events too late for the reorder window: emitted out of order.
    pub unsorted: u64,
    /// The reorder window, in events.
    pub window: usize,
}

/// Counts events that come earlier than one before them, for readers that cannot reorder
/// (a binary file's own order is the one it was written in).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OrderCheck {
    last_ts: u64,
    /// What was seen.
    pub stats: OrderStats,
}

impl OrderCheck {
    /// Notes one event's timestamp.
    #[inline]
    pub fn see(&mut self, ts: u64) {
        if ts < self.last_ts {
            self.stats.unsorted += 1;
        } else {
            self.last_ts = ts;
        }
    }
}

/// Reads one text file through a [`LineParser`].
pub struct TextReader {
    path: PathBuf,
    lines: LineReader<Box<dyn Read>>,
    parser: Box<dyn LineParser>,
    pending: VecDeque<Event>,
    diag: Diag,
    done: bool,
    format: Format,
    compression: Compression,
    cut: decompress::Cut,
}

impl TextReader {
    /// The detected format.
    pub fn format(&self) -> Format {
        self.format
    }
    /// The detected compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }
    /// Bytes consumed from the (decompressed) input so far.
    pub fn bytes_read(&self) -> u64 {
        self.lines.offset()
    }
    /// The input's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
    fn raw_next(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(Some(e));
            }
            let mut pending = std::mem::take(&mut self.pending);
            let more = self.fill(strings, &mut pending);
            self.pending = pending;
            if !more? && self.pending.is_empty() {
                return Ok(None);
            }
        }
    }

    /// Parses lines until one adds an event to `out` or the input ends (false).
    fn fill(
        &mut self,
        strings: &mut Interner,
        out: &mut VecDeque<Event>,
    ) -> Result<bool, ReadError> {
        let before = out.len();
        loop {
            if out.len() > before {
                return Ok(true);
            }
            if self.done {
                return Ok(false);
            }
            let lineno = self.lines.line_number() + 1;
            // A cut .gz/.zst/.xz ends the stream (see `decompress`): say where.
            let line = self.lines.next_line().map_err(|source| ReadError::Io {
                path: self.path.clone(),
                source,
            })?;
            if line.is_none() {
                if let Some(c) = self.cut.get() {
                    self.diag.truncated = Some(c.clone());
                }
            }
            let mut cx = Cx {
                strings,
                out: &mut *out,
                diag: &mut self.diag,
                lineno,
            };
            match line {
                Some(l) => {
                    cx.diag.lines += 1;
                    self.parser.line(l, &mut cx);
                }
                None => {
                    self.parser.finish(&mut cx);
                    self.done = true;
                }
            }
            if let Some(b) = self.diag.strict_error.take() {
                return Err(ReadError::Strict {
                    path: self.path.clone(),
                    line: b.line,
                    why: b.why.to_string(),
                    text: b.text,
                });
            }
        }
    }
}

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
    f: Box<dyn Read>,
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
}

enum InputKind {
    Text(Box<Sorted<TextReader>>),
    Dat(Box<tracedat::TraceDat>),
    Perf(Box<perfdata::PerfData>),
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
            InputKind::Text(_) => None,
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
    /// trace.dat header facts.
    pub fn dat_info(&self) -> Option<&tracedat::DatInfo> {
        match &self.kind {
            InputKind::Dat(d) => Some(d.info()),
            _ => None,
        }
    }
}

impl Input {
    /// The next event, lent (see [`Sorted::next_ref`]).
    pub fn next_ref(&mut self, strings: &mut Interner) -> Result<Option<&Event>, ReadError> {
        match &mut self.kind {
            InputKind::Text(t) => t.next_ref(strings),
            InputKind::Perf(d) => d.next_ref(strings),
            InputKind::Dat(d) => d.next_ref(strings),
        }
    }
}

impl EventSource for Input {
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        match &mut self.kind {
            InputKind::Text(t) => t.next_event(strings),
            InputKind::Dat(d) => d.next_decoded(strings),
            InputKind::Perf(d) => d.next_decoded(strings),
        }
    }
    fn diag(&self) -> &Diag {
        match &self.kind {
            InputKind::Text(t) => t.diag(),
            InputKind::Dat(d) => d.diag(),
            InputKind::Perf(d) => d.diag(),
        }
    }
    fn order(&self) -> OrderStats {
        match &self.kind {
            InputKind::Text(t) => t.order(),
            InputKind::Dat(d) => d.order(),
            InputKind::Perf(d) => d.order(),
        }
    }
}

/// Copies a decompressed stream into an unnamed temporary file (gone when closed, also
/// when whylate is killed), for binary formats that need random access.
fn spool(path: &Path, mut rd: Box<dyn Read>) -> Result<File, ReadError> {
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

/// Opens `path` (`-` = standard input), decompresses and sniffs it, and returns an event
/// source in time order.
pub fn open(path: &Path, opts: &OpenOptions) -> Result<Input, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let stdin = path.as_os_str() == "-";
    let f: Box<dyn Read> = if stdin {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path).map_err(io_err)?)
    };
    let f: Box<dyn Read> = match &opts.progress {
        Some(p) => Box::new(Counted { f, p: p.clone() }),
        None => f,
    };
    let (rd, compression, cut) = decompress::open(path, f).map_err(io_err)?;
    let mut lines = LineReader::new(rd);
    let head = lines.peek(256 * 1024).map_err(io_err)?.to_vec();
    if head.is_empty() {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
            what: match (compression, cut.get()) {
                (Compression::None, _) => String::new(),
                (_, Some(c)) => format!(" after decompression: {c}"),
                (c, None) => format!(" (nothing after {c:?} decompression)").to_lowercase(),
            },
        });
    }
    let dat = tracedat::sniff(&head) || opts.format == Some(Format::TraceDat);
    let perf = perfdata::sniff(&head) || opts.format == Some(Format::PerfData);
    if dat || perf {
        // Binary formats need random access: a compressed one (or stdin) is spooled.
        let file = if compression == Compression::None && !stdin {
            File::open(path).map_err(io_err)?
        } else {
            let (buffered, rest) = lines.into_inner();
            spool(path, Box::new(io::Cursor::new(buffered).chain(rest)))?
        };
        if let Some(p) = &opts.progress {
            // Binary readers seek around the file: their progress shows as events only.
            p.binary.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let kind = open_binary(path, file, dat, opts).map_err(|e| with_cut(e, &cut))?;
        return Ok(Input {
            kind,
            compression,
            cut,
        });
    }
    let format = match opts.format {
        Some(f) => f,
        None => sniff(&head).ok_or_else(|| ReadError::UnknownFormat {
            path: path.to_path_buf(),
            tried: Format::ALL.map(|f| f.name()).join(", "),
            start: describe_start(&head),
        })?,
    };
    let parser: Box<dyn LineParser> = match format {
        Format::Ftrace | Format::TraceCmdReport | Format::LatencyTracer => {
            Box::new(ftrace::FtraceParser::new())
        }
        Format::FunctionGraph => Box::new(funcgraph::FuncGraphParser::new()),
        Format::PerfScript => Box::new(perf_script::PerfScriptParser::new()),
        Format::Sysdig => Box::new(sysdig::SysdigParser::new()),
        Format::Systrace => Box::new(systrace::SystraceParser::new(&head)),
        Format::TraceDat | Format::PerfData => unreachable!("binary formats return above"),
    };
    let diag = Diag {
        strict: opts.strict,
        ..Diag::default()
    };
    let r = TextReader {
        path: path.to_path_buf(),
        lines,
        parser,
        pending: VecDeque::new(),
        diag,
        done: false,
        format,
        compression,
        cut: cut.clone(),
    };
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
    })
}

/// Opens a (seekable) trace.dat or perf.data, with `--kallsyms` symbols when given.
fn open_binary(
    path: &Path,
    file: File,
    dat: bool,
    opts: &OpenOptions,
) -> Result<InputKind, ReadError> {
    // trace.dat is time-ordered by construction (per-CPU merge): no reorder window (it
    // would copy every event twice); what a skewed clock still puts out of order is
    // counted by the reader. perf.data is sorted by its reader, round by round, with a
    // hold of at least PERF_WINDOW events for what comes after its round.
    Ok(if dat {
        let mut d = tracedat::TraceDat::open(path, file)?;
        if let Some((name, text)) = &opts.kallsyms {
            d.use_kallsyms(name, text);
        }
        InputKind::Dat(Box::new(d))
    } else {
        InputKind::Perf(Box::new(perfdata::PerfData::open_with_kallsyms(
            path,
            file,
            opts.window.max(PERF_WINDOW),
            opts.kallsyms.as_ref(),
        )?))
    })
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

/// Picks the format of a file from its first bytes. Header lines decide when present;
/// otherwise each line parser votes on the first data lines.
pub fn sniff(head: &[u8]) -> Option<Format> {
    if systrace::sniff(head) {
        return Some(Format::Systrace);
    }
    let mut tracer: Option<&[u8]> = None;
    let mut latency_hdr = false;
    let mut graph_hdr = false;
    let mut report_hdr = false;
    let mut votes = [0u32; 5]; // ftrace-like, latency-line, perf, sysdig, funcgraph
    let mut data = 0;
    // Ignore a possibly cut last line.
    let usable = memchr::memrchr(b'\n', head).map_or(head, |p| &head[..p]);
    for raw in usable.split(|c| *c == b'\n').take(4000) {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if let Some(c) = line.strip_prefix(b"#") {
            let c = body::trim(c);
            if let Some(t) = c.strip_prefix(b"tracer:") {
                tracer = Some(body::trim(t));
            }
            if c.starts_with(b"latency:") {
                latency_hdr = true;
            }
            if memchr::memmem::find(c, b"FUNCTION CALLS").is_some() {
                graph_hdr = true;
            }
            continue;
        }
        if line.starts_with(b"cpus=") || line.starts_with(b"version = ") {
            report_hdr = true;
            continue;
        }
        if body::trim(line).is_empty() {
            continue;
        }
        data += 1;
        if ftrace::probe(line) {
            votes[0] += 1;
        }
        if ftrace::probe_latency_line(line) {
            votes[1] += 1;
        }
        if perf_script::probe(line) {
            votes[2] += 1;
        }
        if sysdig::probe(line) {
            votes[3] += 1;
        }
        if funcgraph::probe(line) {
            votes[4] += 1;
        }
        if data >= 200 {
            break;
        }
    }
    if graph_hdr || tracer == Some(b"function_graph") {
        return Some(Format::FunctionGraph);
    }
    if latency_hdr {
        return Some(Format::LatencyTracer);
    }
    let best = (0..5).max_by_key(|&i| (votes[i], std::cmp::Reverse(i)))?;
    if votes[best] == 0 {
        return (tracer.is_some() || report_hdr).then_some(if report_hdr {
            Format::TraceCmdReport
        } else {
            Format::Ftrace
        });
    }
    Some(match best {
        0 if report_hdr => Format::TraceCmdReport,
        0 => Format::Ftrace,
        1 => Format::LatencyTracer,
        2 => Format::PerfScript,
        3 => Format::Sysdig,
        _ => Format::FunctionGraph,
    })
}

/// Puts a nearly sorted stream in time order with a bounded window: every event is delayed
/// by `window` events, and one that arrives earlier than events already queued is inserted
/// at its place. In-order input costs one push and one pop per event. An event later than
/// the window allows is passed on as it comes and counted in [`OrderStats::unsorted`].
pub struct Sorted<R> {
    inner: R,
    queue: VecDeque<Event>,
    /// Events too late for their place, to go out before the queue.
    late: VecDeque<Event>,
    /// Which queue's front [`Sorted::next_ref`] lent out (released on the next call).
    lent: Option<Lent>,
    window: usize,
    last_out: Option<u64>,
    order: OrderStats,
    eof: bool,
}

impl Sorted<TextReader> {
    /// The underlying reader.
    pub fn reader(&self) -> &TextReader {
        &self.inner
    }
}

impl<R: EventSource> Sorted<R> {
    /// Wraps `inner` with a window of `window` events.
    pub fn new(inner: R, window: usize) -> Self {
        Sorted {
            inner,
            queue: VecDeque::new(),
            late: VecDeque::new(),
            lent: None,
            window: window.max(1),
            last_out: None,
            order: OrderStats {
                window: window.max(1),
                ..OrderStats::default()
            },
            eof: false,
        }
    }
}

impl<R: EventSource> Sorted<R> {
    /// Puts the events `fill_into` appended from index `from` on in time order, with the
    /// same rules as one event at a time: one no earlier than its predecessor stays; an
    /// earlier one moves back to its place (after equal stamps, so ties keep input order),
    /// unless its place was already emitted, in which case it goes out next, as it came.
    fn settle(&mut self, from: usize) {
        let mut i = from.max(1);
        while i < self.queue.len() {
            let ts = self.queue[i].ts;
            if ts >= self.queue[i - 1].ts {
                i += 1;
                continue;
            }
            let Some(e) = self.queue.remove(i) else { break };
            if self.last_out.is_some_and(|l| ts < l) {
                self.order.unsorted += 1;
                self.late.push_back(e);
                continue;
            }
            self.order.reordered += 1;
            // The events before `i` are in order: binary search among them.
            let (mut lo, mut hi) = (0, i);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if self.queue[mid].ts <= ts {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            self.queue.insert(lo, e);
            i += 1;
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Lent {
    Queue,
    Late,
}

impl<R: EventSource> Sorted<R> {
    /// Drops the event lent by the last [`Sorted::next_ref`], then reads until the window
    /// is full or something is due.
    fn advance(&mut self, strings: &mut Interner) -> Result<(), ReadError> {
        match self.lent.take() {
            Some(Lent::Queue) => drop(self.queue.pop_front()),
            Some(Lent::Late) => drop(self.late.pop_front()),
            None => {}
        }
        while self.late.is_empty() && !self.eof && self.queue.len() <= self.window {
            let before = self.queue.len();
            if !self.inner.fill_into(strings, &mut self.queue)? {
                self.eof = true;
            }
            self.settle(before);
        }
        Ok(())
    }

    /// The next event in time order, lent from the queue: the hot consumers read it in
    /// place instead of moving it out through every layer.
    pub fn next_ref(&mut self, strings: &mut Interner) -> Result<Option<&Event>, ReadError> {
        self.advance(strings)?;
        if !self.late.is_empty() {
            self.lent = Some(Lent::Late);
            return Ok(self.late.front());
        }
        let Some(ts) = self.queue.front().map(|e| e.ts) else {
            return Ok(None);
        };
        self.last_out = Some(ts);
        self.lent = Some(Lent::Queue);
        Ok(self.queue.front())
    }
}

impl<R: EventSource> EventSource for Sorted<R> {
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.advance(strings)?;
        if let Some(e) = self.late.pop_front() {
            return Ok(Some(e));
        }
        Ok(self.queue.pop_front().inspect(|e| {
            self.last_out = Some(e.ts);
        }))
    }
    fn diag(&self) -> &Diag {
        self.inner.diag()
    }
    fn order(&self) -> OrderStats {
        self.order
    }
}

impl EventSource for TextReader {
    fn next_event(&mut self, strings: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.raw_next(strings)
    }
    fn fill_into(
        &mut self,
        strings: &mut Interner,
        out: &mut VecDeque<Event>,
    ) -> Result<bool, ReadError> {
        if !self.pending.is_empty() {
            out.extend(self.pending.drain(..));
            return Ok(true);
        }
        self.fill(strings, out)
    }
    fn diag(&self) -> &Diag {
        &self.diag
    }
    fn order(&self) -> OrderStats {
        OrderStats::default()
    }
}

/// Merges several time-ordered sources (e.g. per-CPU `trace_pipe` captures) by timestamp.
pub struct Merged<S> {
    sources: Vec<S>,
    heads: Vec<Option<Event>>,
    primed: bool,
    /// The event [`Merged::next_ref`] lends when it merges several inputs.
    slot: Option<(usize, Event)>,
}

impl<S: EventSource> Merged<S> {
    /// Merges `sources`.
    pub fn new(sources: Vec<S>) -> Self {
        let n = sources.len();
        Merged {
            sources,
            heads: (0..n).map(|_| None).collect(),
            primed: false,
            slot: None,
        }
    }
    /// The merged sources.
    pub fn sources(&self) -> &[S] {
        &self.sources
    }
    /// The next event across all sources, with the index of its source.
    pub fn next_indexed(
        &mut self,
        strings: &mut Interner,
    ) -> Result<Option<(usize, Event)>, ReadError> {
        if self.sources.len() == 1 {
            // One input: no merge, no head buffering.
            return Ok(self.sources[0].next_event(strings)?.map(|e| (0, e)));
        }
        if !self.primed {
            for i in 0..self.sources.len() {
                self.heads[i] = self.sources[i].next_event(strings)?;
            }
            self.primed = true;
        }
        // Few sources: a linear scan beats a heap.
        let mut best: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(e) = h {
                if best.is_none_or(|b| e.ts < self.heads[b].as_ref().map_or(u64::MAX, |x| x.ts)) {
                    best = Some(i);
                }
            }
        }
        let Some(i) = best else { return Ok(None) };
        let e = self.heads[i].take();
        self.heads[i] = self.sources[i].next_event(strings)?;
        Ok(e.map(|e| (i, e)))
    }
}

impl Merged<Input> {
    /// Like [`Merged::next_indexed`], but the event is lent: with one input (the usual case)
    /// it is read where the reader's queue holds it, never copied.
    pub fn next_ref(
        &mut self,
        strings: &mut Interner,
    ) -> Result<Option<(usize, &Event)>, ReadError> {
        if self.sources.len() == 1 {
            return Ok(self.sources[0].next_ref(strings)?.map(|e| (0, e)));
        }
        self.slot = self.next_indexed(strings)?;
        Ok(self.slot.as_ref().map(|(i, e)| (*i, e)))
    }
}

/// Strips one trailing `\r`.
pub(crate) fn chomp(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Kind;

    struct Vecsrc(Vec<u64>, Diag);
    impl EventSource for Vecsrc {
        fn next_event(&mut self, _: &mut Interner) -> Result<Option<Event>, ReadError> {
            Ok(if self.0.is_empty() {
                None
            } else {
                Some(Event {
                    ts: self.0.remove(0),
                    cpu: 0,
                    tid: 0,
                    tgid: -1,
                    comm: Default::default(),
                    flags: 0,
                    kind: Kind::Lost { count: None },
                })
            })
        }
        fn diag(&self) -> &Diag {
            &self.1
        }
        fn order(&self) -> OrderStats {
            OrderStats::default()
        }
    }

    fn drain(s: &mut impl EventSource) -> Vec<u64> {
        let mut i = Interner::new();
        let mut v = vec![];
        while let Some(e) = s.next_event(&mut i).unwrap() {
            v.push(e.ts);
        }
        v
    }

    #[test]
    fn sorter_reorders_within_window_and_counts_the_rest() {
        let mut s = Sorted::new(Vecsrc(vec![1, 5, 3, 4, 9, 2], Diag::default()), 3);
        let out = drain(&mut s);
        // 2 arrives after 3 was emitted: passed on as it came, counted.
        assert_eq!(out, vec![1, 3, 2, 4, 5, 9]);
        assert_eq!(s.order().unsorted, 1);
        assert_eq!(s.order().reordered, 2);
        let mut s = Sorted::new(Vecsrc(vec![1, 5, 3, 4, 9, 2], Diag::default()), 100);
        assert_eq!(drain(&mut s), vec![1, 2, 3, 4, 5, 9]);
        assert_eq!(s.order().unsorted, 0);
    }

    /// Hands out its stamps `batch` at a time through `fill_into`, like a text line that
    /// makes several events.
    struct Batches(Vec<u64>, usize, Diag, i32);
    impl EventSource for Batches {
        fn next_event(&mut self, _: &mut Interner) -> Result<Option<Event>, ReadError> {
            Ok(None)
        }
        fn diag(&self) -> &Diag {
            &self.2
        }
        fn order(&self) -> OrderStats {
            OrderStats::default()
        }
        fn fill_into(
            &mut self,
            _: &mut Interner,
            out: &mut VecDeque<Event>,
        ) -> Result<bool, ReadError> {
            if self.0.is_empty() {
                return Ok(false);
            }
            let n = self.1.min(self.0.len());
            for ts in self.0.drain(..n) {
                let mut e = Event::lost(ts, 0, None);
                // The input position, so the order of equal stamps is visible.
                e.tid = self.3;
                self.3 += 1;
                out.push_back(e);
            }
            Ok(true)
        }
    }

    /// The reorder rules written plainly, one event at a time: the model `Sorted` is
    /// checked against.
    fn reference_sort(input: &[u64], window: usize) -> (Vec<(u64, i32)>, OrderStats) {
        let mut order = OrderStats {
            window,
            ..Default::default()
        };
        let mut queue: Vec<(u64, i32)> = vec![];
        let mut out = vec![];
        let mut last_out: Option<u64> = None;
        let mut it = input.iter().copied().zip(0..);
        loop {
            let mut late = None;
            while late.is_none() && queue.len() <= window {
                let Some((ts, i)) = it.next() else { break };
                match queue.last() {
                    Some(&(newest, _)) if ts < newest => {
                        if last_out.is_some_and(|l| ts < l) {
                            order.unsorted += 1;
                            late = Some((ts, i));
                        } else {
                            order.reordered += 1;
                            let at = queue.partition_point(|q| q.0 <= ts);
                            queue.insert(at, (ts, i));
                        }
                    }
                    _ => queue.push((ts, i)),
                }
            }
            if let Some(e) = late {
                out.push(e);
                continue;
            }
            if queue.is_empty() {
                return (out, order);
            }
            let e = queue.remove(0);
            last_out = Some(e.0);
            out.push(e);
        }
    }

    #[test]
    fn batched_fill_settles_like_one_at_a_time() {
        // Pseudo-random stamps with local disorder and many ties, some too late for a
        // small window.
        let mut x = 12345u64;
        let stamps: Vec<u64> = (0..3000u64)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (i / 3) * 10 + (x >> 60) * 4
            })
            .collect();
        for window in [1, 3, 16, 4096] {
            let (want, want_order) = reference_sort(&stamps, window);
            let mut one = Sorted::new(Vecsrc(stamps.clone(), Diag::default()), window);
            let want_ts: Vec<u64> = want.iter().map(|e| e.0).collect();
            assert_eq!(drain(&mut one), want_ts, "window {window}");
            assert_eq!(one.order(), want_order, "window {window}");
            for batch in [1, 2, 5] {
                let mut b = Sorted::new(Batches(stamps.clone(), batch, Diag::default(), 0), window);
                let mut i = Interner::new();
                let mut got = vec![];
                // Lent and moved-out reads mixed: both release the event they handed out.
                loop {
                    if got.len() % 3 == 0 {
                        match b.next_event(&mut i).unwrap() {
                            Some(e) => got.push((e.ts, e.tid)),
                            None => break,
                        }
                    } else {
                        match b.next_ref(&mut i).unwrap() {
                            Some(e) => got.push((e.ts, e.tid)),
                            None => break,
                        }
                    }
                }
                assert_eq!(got.len(), stamps.len(), "window {window} batch {batch}");
                let mut sorted = got.clone();
                sorted.sort();
                let mut all: Vec<(u64, i32)> = stamps.iter().copied().zip(0..).collect();
                all.sort();
                assert_eq!(
                    sorted, all,
                    "every event once, window {window} batch {batch}"
                );
                if batch == 1 {
                    assert_eq!(got, want, "window {window}");
                    assert_eq!(b.order(), want_order, "window {window}");
                }
                let inversions = got.windows(2).filter(|w| w[1].0 < w[0].0).count() as u64;
                assert!(
                    inversions <= b.order().unsorted,
                    "window {window} batch {batch}"
                );
                if window == 4096 {
                    assert_eq!(inversions, 0);
                    assert_eq!(b.order().unsorted, 0);
                }
            }
        }
    }

    #[test]
    fn merge_interleaves() {
        let mut m = Merged::new(vec![
            Vecsrc(vec![1, 4, 6], Diag::default()),
            Vecsrc(vec![2, 3, 7], Diag::default()),
        ]);
        let mut i = Interner::new();
        let mut v = vec![];
        while let Some((_, e)) = m.next_indexed(&mut i).unwrap() {
            v.push(e.ts);
        }
        assert_eq!(v, vec![1, 2, 3, 4, 6, 7]);
    }
}
