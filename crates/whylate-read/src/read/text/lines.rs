//! A fast line splitter over any `Read`: one large buffer, `memchr` for newlines, lines
//! borrowed from the buffer (no copy, no allocation per line).

use std::io::{self, Read};

/// The buffer's size once an input proves large: reads this big cost nothing per byte.
const CHUNK: usize = 1 << 20;
/// The buffer's size at first: an input of a few lines (one of thousands given at once)
/// keeps no more than this; a large one doubles it on each full read up to [`CHUNK`].
const FIRST: usize = 16 << 10;
/// A trace line is at most a few KiB: a longer one is not trace data. It is handed on
/// cut to `MAX_LINE + 1` bytes (so [`too_long`] knows it) and the rest is dropped
/// unbuffered, so one bad line cannot eat memory.
pub(crate) const MAX_LINE: usize = 64 << 10;

/// Why an over-long line is not understood.
pub(crate) const TOO_LONG: &str = "a line longer than 65536 bytes (64 KiB): not trace data";

/// True for a line longer than [`MAX_LINE`] (cut by the splitter).
#[inline(always)]
pub(crate) fn too_long(line: &[u8]) -> bool {
    line.len() > MAX_LINE
}

/// Splits a byte stream into lines.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    line_no: u64,
    offset: u64,
    skipping_long: bool,
}

impl<R: Read> LineReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        LineReader {
            inner,
            buf: vec![0; FIRST],
            start: 0,
            end: 0,
            eof: false,
            line_no: 0,
            offset: 0,
            skipping_long: false,
        }
    }

    /// 1-based number of the line last returned.
    pub fn line_number(&self) -> u64 {
        self.line_no
    }

    /// Bytes consumed so far (offset of the next line).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads until at least `n` bytes are buffered (or EOF) and returns them, unconsumed.
    pub fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        while self.end - self.start < n && !self.eof {
            self.fill()?;
        }
        let hi = self.end.min(self.start + n);
        Ok(&self.buf[self.start..hi])
    }

    /// The bytes buffered but not consumed, and the rest of the stream.
    pub fn into_inner(self) -> (Vec<u8>, R) {
        (self.buf[self.start..self.end].to_vec(), self.inner)
    }

    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 && (self.end == self.buf.len() || self.start > self.buf.len() / 2) {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grow = self.buf.len().min(MAX_LINE);
            self.buf.resize(self.buf.len() + grow, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    if self.end == self.buf.len() && self.buf.len() < CHUNK {
                        // The input filled the buffer: it is no small one.
                        self.buf.resize((self.buf.len() * 2).min(CHUNK), 0);
                    }
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The next line without its `\n` (and without a trailing `\r`), or None at EOF.
    /// A final line without a newline is returned too (truncated files are normal).
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        let mut scanned = 0;
        loop {
            let avail = &self.buf[self.start + scanned..self.end];
            if let Some(p) = memchr::memchr(b'\n', avail) {
                let s = self.start;
                let e = s + scanned + p;
                self.start = e + 1;
                self.offset += (e + 1 - s) as u64;
                if std::mem::take(&mut self.skipping_long) {
                    // Tail of an over-long line already returned.
                    scanned = 0;
                    continue;
                }
                self.line_no += 1;
                return Ok(Some(chomp(&self.buf[s..e])));
            }
            if self.skipping_long {
                // Still inside an over-long line: drop what came, keep nothing.
                self.offset += (self.end - self.start) as u64;
                self.start = self.end;
            }
            scanned = self.end - self.start;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let s = self.start;
                self.start = self.end;
                self.offset += (self.end - s) as u64;
                if std::mem::take(&mut self.skipping_long) {
                    return Ok(None);
                }
                self.line_no += 1;
                return Ok(Some(chomp(&self.buf[s..self.end])));
            }
            if scanned > MAX_LINE {
                let s = self.start;
                self.start = self.end;
                self.offset += (self.end - s) as u64;
                self.skipping_long = true;
                self.line_no += 1;
                return Ok(Some(&self.buf[s..s + MAX_LINE + 1]));
            }
            // `fill` may move the data to the buffer start; `scanned` is relative to it.
            self.fill()?;
        }
    }
}

/// Strips one trailing `\r`.
pub(crate) fn chomp(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_across_refills_and_keeps_last_line() {
        let data = "a\r\nbb\n\nccc";
        let mut r = LineReader::new(data.as_bytes());
        let mut got = vec![];
        while let Some(l) = r.next_line().unwrap() {
            got.push(String::from_utf8(l.to_vec()).unwrap());
        }
        assert_eq!(got, ["a", "bb", "", "ccc"]);
        assert_eq!(r.line_number(), 4);
        assert_eq!(r.offset(), data.len() as u64);
    }

    /// A line longer than the cap comes out cut to one byte over it (so it is known for
    /// what it is), once, and the next line is read from its newline on.
    #[test]
    fn a_line_longer_than_the_cap_is_cut_once_and_reading_goes_on() {
        let data = format!(
            "a\n{}\nb\n{}",
            "x".repeat(40 * MAX_LINE),
            "y".repeat(MAX_LINE + 9)
        );
        let mut r = LineReader::new(data.as_bytes());
        let mut got = vec![];
        while let Some(l) = r.next_line().unwrap() {
            got.push((l.len(), too_long(l)));
        }
        let cut = (MAX_LINE + 1, true);
        assert_eq!(got, [(1, false), cut, (1, false), cut]);
        assert!(r.buf.len() <= CHUNK, "the long line was not buffered");
        assert_eq!(r.offset(), data.len() as u64);
    }

    #[test]
    fn long_input_many_chunks() {
        let line = "x".repeat(999);
        let data = format!("{line}\n").repeat(5000);
        let mut r = LineReader::new(data.as_bytes());
        let mut n = 0;
        while let Some(l) = r.next_line().unwrap() {
            assert_eq!(l.len(), 999);
            n += 1;
        }
        assert_eq!(n, 5000);
    }
}
