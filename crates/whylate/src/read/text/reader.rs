//! The text-reading loop: lines from the (decompressed) input through a format's
//! [`LineParser`] into events, with line numbers for every diagnostic.

use crate::event::{Event, Interner};
use crate::read::decompress::{self, Compression};
use crate::read::source::{Diag, EventSource, Format, OrderStats, ReadError};
use crate::read::text::lines::LineReader;
use std::collections::VecDeque;
use std::io::Read;
use std::path::{Path, PathBuf};
/// A line-oriented format parser. It pushes zero or more events per line. `Send`, like
/// every reader's byte source, so a reader can be moved to a thread of its own.
pub(crate) trait LineParser: Send {
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

/// Reads one text file through a [`LineParser`].
pub struct TextReader {
    path: PathBuf,
    lines: LineReader<Box<dyn Read + Send>>,
    parser: Box<dyn LineParser>,
    pending: VecDeque<Event>,
    diag: Diag,
    done: bool,
    format: Format,
    compression: Compression,
    cut: decompress::Cut,
}

impl TextReader {
    /// Reads `lines` of `path` through `parser`; (format, compression) as detected.
    pub(crate) fn new(
        path: &Path,
        lines: LineReader<Box<dyn Read + Send>>,
        parser: Box<dyn LineParser>,
        diag: Diag,
        (format, compression): (Format, Compression),
        cut: decompress::Cut,
    ) -> TextReader {
        TextReader {
            path: path.to_path_buf(),
            lines,
            parser,
            pending: VecDeque::new(),
            diag,
            done: false,
            format,
            compression,
            cut,
        }
    }

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

/// Strips one trailing `\r`.
pub(crate) fn chomp(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}
