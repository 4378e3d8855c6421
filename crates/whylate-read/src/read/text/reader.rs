//! The text-reading loop: lines from the (decompressed) input through a format's
//! [`LineParser`] into events, with line numbers for every diagnostic.

use crate::event::{Event, Interner};
use crate::read::decompress::{self, Compression};
use crate::read::format::Format;
use crate::read::source::{Cx, Diag, EventSource, LineParser, OrderStats, ReadError};
use crate::read::text::chunked::Chunked;
use crate::read::text::lines::LineReader;
use std::collections::VecDeque;
use std::io::Read;
use std::path::{Path, PathBuf};
/// Reads one text file through a `LineParser`.
pub struct TextReader {
    path: PathBuf,
    src: Src,
    pending: VecDeque<Event>,
    diag: Diag,
    done: bool,
    format: Format,
    compression: Compression,
    cut: decompress::Cut,
}

/// Where a reader's lines are parsed.
enum Src {
    /// Here, one after the other.
    Here(LineReader<Box<dyn Read + Send>>, Box<dyn LineParser>),
    /// On worker threads, chunk by chunk.
    Chunks(Chunked),
}

impl TextReader {
    /// Reads `lines` of `path` through `parser`; (format, compression) as detected.
    /// With `workers` > 0 (and a parser that forks, and no `--strict`), the lines are
    /// parsed in chunks of `chunk` bytes on that many threads.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        path: &Path,
        lines: LineReader<Box<dyn Read + Send>>,
        parser: Box<dyn LineParser>,
        diag: Diag,
        (format, compression): (Format, Compression),
        cut: decompress::Cut,
        (workers, chunk): (usize, usize),
    ) -> TextReader {
        let src = if workers > 0 && parser.fork().is_some() && !diag.is_strict() {
            let (buffered, rest) = lines.into_inner();
            let all: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(buffered).chain(rest));
            Src::Chunks(Chunked::start(all, &*parser, workers, chunk))
        } else {
            Src::Here(lines, parser)
        };
        TextReader {
            path: path.to_path_buf(),
            src,
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
        match &self.src {
            Src::Here(lines, _) => lines.offset(),
            Src::Chunks(c) => c.bytes_read(),
        }
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
        if matches!(self.src, Src::Chunks(_)) {
            return self.fill_chunks(strings, out);
        }
        let Src::Here(lines, parser) = &mut self.src else {
            unreachable!("chunks are read above")
        };
        let before = out.len();
        loop {
            if out.len() > before {
                return Ok(true);
            }
            if self.done {
                return Ok(false);
            }
            let lineno = lines.line_number() + 1;
            // A cut .gz/.zst/.xz ends the stream (see `decompress`): say where.
            let line = lines.next_line().map_err(|source| ReadError::Io {
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
                Some(l) if super::lines::too_long(l) => {
                    cx.diag.lines += 1;
                    cx.diag.bad(lineno, l, super::lines::TOO_LONG);
                }
                Some(l) => {
                    cx.diag.lines += 1;
                    parser.line(l, &mut cx);
                }
                None => {
                    parser.finish(&mut cx);
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

impl TextReader {
    /// [`TextReader::fill`] from chunks parsed on other threads: a chunk at a time, until
    /// one adds an event or the input ends.
    fn fill_chunks(
        &mut self,
        strings: &mut Interner,
        out: &mut VecDeque<Event>,
    ) -> Result<bool, ReadError> {
        let Src::Chunks(c) = &mut self.src else {
            return Ok(false);
        };
        let before = out.len();
        loop {
            let more = c
                .fill(strings, out, &mut self.diag)
                .map_err(|source| ReadError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if !more {
                if let Some(cut) = self.cut.get() {
                    self.diag.truncated = Some(cut.clone());
                }
                self.done = true;
            }
            if out.len() > before || !more {
                return Ok(out.len() > before);
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
