//! A binary trace held in memory as pieces laid end to end: `watch` hands each window to
//! the analysis this way (the header it composed and the ring's pages, shared, not
//! copied) instead of writing a trace.dat and reading it back.

use std::io;
use std::sync::Arc;

/// Bytes at offsets: each piece starts where the one before it ends.
#[derive(Default)]
pub struct Pieces {
    /// (offset, bytes), by offset.
    parts: Vec<(u64, Arc<[u8]>)>,
    len: u64,
}

impl Pieces {
    /// No bytes yet.
    pub fn new() -> Pieces {
        Pieces::default()
    }

    /// Appends `bytes` at the end.
    pub fn push(&mut self, bytes: Arc<[u8]>) {
        if !bytes.is_empty() {
            let n = bytes.len() as u64;
            self.parts.push((self.len, bytes));
            self.len += n;
        }
    }

    /// The size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fills `buf` from offset `off`, across pieces; an error past the end, as `pread`
    /// of a file that short gives.
    pub fn read_exact_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        if off.saturating_add(buf.len() as u64) > self.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} bytes at offset {off} past the end ({} bytes in memory)",
                    buf.len(),
                    self.len
                ),
            ));
        }
        let mut at = self.parts.partition_point(|p| p.0 <= off).saturating_sub(1);
        let (mut done, mut pos) = (0usize, off);
        while done < buf.len() {
            let (start, bytes) = &self.parts[at];
            let from = (pos - start) as usize;
            let n = (bytes.len() - from).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&bytes[from..from + n]);
            done += n;
            pos += n as u64;
            at += 1;
        }
        Ok(())
    }
}

/// A reader of [`Pieces`] with a position of its own (what a parser that reads and seeks
/// wants).
pub struct Reader {
    bytes: Arc<Pieces>,
    pos: u64,
}

impl Reader {
    /// At offset 0.
    pub fn new(bytes: Arc<Pieces>) -> Reader {
        Reader { bytes, pos: 0 }
    }
}

impl io::Read for Reader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.bytes.len().saturating_sub(self.pos)) as usize;
        self.bytes.read_exact_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl io::Seek for Reader {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let pos = match to {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::End(d) => self.bytes.len().checked_add_signed(d),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_across_pieces_and_refuses_past_the_end() {
        let mut p = Pieces::new();
        p.push(Arc::from(&b"abc"[..]));
        p.push(Arc::from(&b""[..]));
        p.push(Arc::from(&b"defg"[..]));
        p.push(Arc::from(&b"h"[..]));
        assert_eq!(p.len(), 8);
        let mut b = [0u8; 6];
        p.read_exact_at(&mut b, 1).unwrap();
        assert_eq!(&b, b"bcdefg");
        let mut b = [0u8; 1];
        p.read_exact_at(&mut b, 7).unwrap();
        assert_eq!(&b, b"h");
        let e = p.read_exact_at(&mut [0u8; 2], 7).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        p.read_exact_at(&mut [], 8).unwrap();
        use std::io::{Read, Seek};
        let mut r = Reader::new(Arc::new(p));
        r.seek(io::SeekFrom::Start(2)).unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "cdefgh");
    }
}
