//! Readers: any trace file → one time-ordered stream of [`Event`](crate::event::Event)s.
//!
//! Pipeline per input: bytes (decompressed transparently: gzip, zstd, xz) → format sniffed
//! from the first 256 KiB of data (past any blank and comment lines) → a line parser for
//! that format → [`Sorted`] (a bounded reorder window, because real traces are not always
//! in time order) → the consumer. Several inputs are merged by timestamp ([`Merged`]).
//! Nothing holds the whole input: memory is the reorder window, the line buffer and the
//! interned strings.
//!
//! Readers never panic on bad input. A line that is trace data but does not parse is counted
//! and sampled in [`Diag`] with its line number; a line that is not trace data at all (prose
//! around a pasted trace, shell prompts) is counted separately as skipped.

mod apart;
mod binary;
mod comms;
mod declare;
mod declared;
pub mod decompress;
mod format;
pub mod ident;
pub mod inputs;
pub mod ksyms;
pub mod memory;
mod merge;
mod open;
mod opened;
mod options;
pub mod perfdata;
pub mod perfetto;
mod records;
mod registry;
pub mod ringbuf;
pub mod rtla;
mod source;
pub mod stack;
pub mod tep;
mod text;
pub mod tracedat;
pub mod unpack;

pub use apart::each_event;
pub(crate) use binary::Binary;
pub use decompress::Compression;
pub use format::Format;
pub use ident::Held;
pub use merge::{Lend, Merged, Sorted};
pub use open::{open, open_each, open_memory, trace_format, Input};
pub use opened::Opened;
pub use options::{OpenOptions, Progress, DEFAULT_WINDOW, PERF_WINDOW};
pub use registry::{formats, sniff};
pub(crate) use source::OrderCheck;
pub use source::{BadLine, Diag, EventSource, Header, LatencyHeader, OrderStats, ReadError};
pub use text::body::{ftrace_syscall, parse_body, softirq_name};
pub use text::lines::LineReader;
pub use text::reader::TextReader;
