//! What every reader is: an [`EventSource`] of time-ordered events, with the formats it
//! may detect, the errors it may return, and the diagnostics it keeps ([`Diag`]) about
//! lines not understood, lost events and ordering; and what a text format's line parser
//! is ([`LineParser`], writing into a [`Cx`]).

use crate::event::{Event, Interner};
use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};

/// A line-oriented format parser. It pushes zero or more events per line. `Send`, like
/// every reader's byte source, so a reader can be moved to a thread of its own.
pub(crate) trait LineParser: Send {
    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>);
    fn finish(&mut self, _cx: &mut Cx<'_>) {}
    /// A fresh parser of the same format (caches empty), for chunks of the input parsed
    /// on other threads; None when lines must be read in order by one parser (their
    /// meaning depends on lines far before them). See `read/text/chunked.rs`.
    fn fork(&self) -> Option<Box<dyn LineParser>> {
        None
    }
    /// At a chunk's end: puts the state carried from line to line into the one a chunk
    /// after the first is parsed from (the usual state between two records). When it
    /// was another, that state is returned in a parser of its own (caches empty), to
    /// parse the next chunk again as one pass would.
    fn rebase(&mut self) -> Option<Box<dyn LineParser>> {
        None
    }
    /// A parser carried over a boundary learns when the input's last event before it
    /// was (`ts`), for what it places at that time when its own chunk had no event.
    fn continue_after(&mut self, _ts: u64) {}
}

/// What a [`LineParser`] writes into.
pub(crate) struct Cx<'a> {
    pub strings: &'a mut Interner,
    pub out: &'a mut VecDeque<Event>,
    pub diag: &'a mut Diag,
    pub lineno: u64,
}

/// How `path` is named in messages: `-` says it is standard input. (Here, below
/// [`ReadError`] which names its inputs so; `read::ident` passes it on.)
pub fn display(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "- (standard input)".into()
    } else {
        path.display().to_string()
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
    /// `--format` names a binary format and the file carries another's magic number.
    #[error("{path}: --format {forced} was given, but the file is a {found} (its first bytes say so); drop --format to read it as what it is")]
    FormatMismatch {
        /// The input.
        path: PathBuf,
        /// The format given.
        forced: String,
        /// The format its magic number says.
        found: String,
    },
    /// A selector cannot select anything in these inputs (an event or a field they do
    /// not have), said with the closest names they do have.
    #[error("{why}")]
    NoMatch {
        /// What is missing, and what is close.
        why: String,
    },
    /// Every line or record of the inputs failed to read: no event at all, so no
    /// analysis (an answer such as "0 outliers" would be about nothing).
    #[error("{what}")]
    Unreadable {
        /// How many failed, and the first of them, located.
        what: String,
    },
    /// The inputs cannot be analysed as asked (symbols given for another kernel): why,
    /// naming the file.
    #[error("{why}")]
    Refused {
        /// What does not fit, and what to give instead.
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
    /// One file given twice as an input (the same path, or two paths to it): its
    /// events would count twice, or a pipe would be split between two readers.
    #[error(
        "{}: given twice as an input{}; give each trace once",
        display(path),
        same_as(path, first)
    )]
    SameInput {
        /// The second mention.
        path: PathBuf,
        /// The first mention (the same path, or another path to the same file).
        first: PathBuf,
    },
    /// Two inputs that are different files with the same bytes (a copy): its events
    /// would count twice.
    #[error(
        "{}: holds the same bytes as {} (the same size, the same first and last MiB): a copy, whose events would count twice; give each trace once",
        display(path),
        display(first)
    )]
    SameContent {
        /// The later input.
        path: PathBuf,
        /// The earlier one with the same bytes.
        first: PathBuf,
    },
    /// The caller asked the read to stop ([`crate::read::Progress::cancel`]): an MCP
    /// client cancelled the call.
    #[error("cancelled: the read stopped at the caller's request")]
    Cancelled,
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

/// " (also as FIRST)" when the file was first given under another name.
fn same_as(path: &std::path::Path, first: &std::path::Path) -> String {
    if path == first {
        String::new()
    } else {
        format!(" (also as {})", display(first))
    }
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
    /// The format has no timestamps at all (function_graph without abstime): times are
    /// rebuilt from the printed durations.
    pub no_timestamps: bool,
    /// Lines a pasted excerpt left out (`...`): their calls count in their parents' self
    /// time.
    pub elided_lines: u64,
    /// A kernel log without time prefixes: its events are in line order, at no real time.
    pub line_order_time: bool,
    /// The input ended abruptly (a cut compressed stream): what was read is kept.
    pub truncated: Option<String>,
    /// CPUs whose data the cut removed the end of (a cut trace.dat): the analysis is
    /// blind on them after their last event.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cut_cpus: Vec<u32>,
    /// Damaged records in a binary input's data (a time that runs past the next page's
    /// start): each one's page was skipped from it on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<Damage>,
    /// How many damaged records there were (the first few are in `damaged`).
    #[serde(skip_serializing_if = "is_zero")]
    pub damaged_total: u64,
    /// Set when `strict` and the first unparsed line was seen.
    #[serde(skip)]
    pub strict_error: Option<BadLine>,
    #[serde(skip)]
    strict: bool,
}

const MAX_SAMPLES: usize = 10;

/// A damaged record in a binary input, and what reading skipped because of it.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Damage {
    /// The CPU whose data holds it.
    pub cpu: u32,
    /// Byte offset of the record in the file (for compressed data, of the compressed
    /// chunk holding it, `in_chunk` set).
    pub offset: u64,
    /// `offset` names a compressed chunk, not the record.
    pub in_chunk: bool,
    /// Bytes left unread after it (the rest of its page).
    pub skipped: u64,
    /// What is wrong with it.
    pub why: String,
}

impl Diag {
    /// Diagnostics that fail on the first line not understood when `strict`.
    pub(crate) fn strict(strict: bool) -> Diag {
        Diag {
            strict,
            ..Diag::default()
        }
    }

    /// True when the first line not understood is an error (`--strict`).
    pub(crate) fn is_strict(&self) -> bool {
        self.strict
    }

    /// Adds what a reader noticed in a later part of the same input (a chunk parsed on
    /// another thread), whose line numbers start after `lines_before` lines. Header
    /// fields it set win, as a later header line would in one pass.
    pub(crate) fn absorb(&mut self, d: Diag, lines_before: u64) {
        self.lines += d.lines;
        self.comment_lines += d.comment_lines;
        self.skipped_lines += d.skipped_lines;
        self.continuation_lines += d.continuation_lines;
        self.unparsed += d.unparsed;
        self.untyped_known += d.untyped_known;
        self.elided_lines += d.elided_lines;
        for mut b in d.unparsed_samples {
            if self.unparsed_samples.len() < MAX_SAMPLES {
                b.line += lines_before;
                self.unparsed_samples.push(b);
            }
        }
        let (h, o) = (&mut self.header, d.header);
        h.tracer = o.tracer.or(h.tracer.take());
        h.entries_in_buffer = o.entries_in_buffer.or(h.entries_in_buffer);
        h.entries_written = o.entries_written.or(h.entries_written);
        h.cpus = o.cpus.or(h.cpus);
        h.version = o.version.or(h.version);
        h.latency = o.latency.or(h.latency.take());
        self.raw_clock |= d.raw_clock;
        self.relative_time |= d.relative_time;
        self.no_timestamps |= d.no_timestamps;
        self.line_order_time |= d.line_order_time;
    }

    /// Records a damaged record of a binary input.
    pub(crate) fn damage(&mut self, d: Damage) {
        self.damaged_total += 1;
        if self.damaged.len() < MAX_SAMPLES {
            self.damaged.push(d);
        }
    }

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
    /// Events a reader gave before their time had come because its window was full (a
    /// Perfetto trace's hold): where late events follow, a larger `--reorder` helps.
    #[serde(skip_serializing_if = "is_zero")]
    pub full: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
