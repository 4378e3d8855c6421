//! Transparent decompression (gzip, zstd, xz) that survives a cut file.
//!
//! A compressed trace cut short (a copy interrupted, a disk full, a recorder killed) is a
//! normal real-world input: the decompressor's error at the cut becomes the end of the
//! stream, and the place is remembered so the output can say where the analysis goes
//! blind.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The compression of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Plain.
    None,
    /// gzip.
    Gzip,
    /// zstd.
    Zstd,
    /// xz.
    Xz,
}

impl Compression {
    fn name(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
        }
    }
}

/// Where a compressed stream stopped early, once it has: "the zstd stream is cut after N
/// decompressed bytes (...)". Shared between the stream and whoever reports on it.
pub type Cut = Arc<OnceLock<String>>;

/// A decompressor whose failure ends the stream (see the module doc).
struct Tolerant {
    inner: Box<dyn Read + Send>,
    kind: Compression,
    out: u64,
    cut: Cut,
}

impl Read for Tolerant {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cut.get().is_some() {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => {
                self.out += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            // The decompressor's own failure (cut or damaged data): the end of what can
            // be read. Errors of the file underneath (EIO...) stay errors.
            Err(e) if is_data_error(&e) => {
                let _ = self.cut.set(format!(
                    "the {} stream is cut after {} decompressed bytes ({})",
                    self.kind.name(),
                    self.out,
                    why(&e)
                ));
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }
}

fn is_data_error(e: &io::Error) -> bool {
    // flate2 says InvalidInput for a bad header or checksum: the data's fault too.
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::InvalidData
            | io::ErrorKind::InvalidInput
            | io::ErrorKind::Other
    )
}

/// The decompressor's error in a few words: "ends mid-block" for a cut, else its text.
fn why(e: &io::Error) -> String {
    let text = e.to_string();
    if e.kind() == io::ErrorKind::UnexpectedEof
        || text.contains("UnexpectedEof")
        || text.contains("unexpected end")
    {
        return "the compressed data ends mid-block".into();
    }
    let mut t: String = text.chars().take(100).collect();
    if t.len() < text.len() {
        t.push('…');
    }
    format!("damaged data: {t}")
}

/// A decompressed stream that can also skip ahead without copying what it skips.
pub trait Stream: Read + Send {
    /// Discards the next `n` bytes (fewer at the end); returns how many.
    fn skip(&mut self, n: u64) -> io::Result<u64>;

    /// Reads to the end of the stream: the bytes it held, and the last `keep` of them (at
    /// most). A gzip file's size is learnt this way ([`super::unpack`]).
    fn skip_to_end(&mut self, keep: usize) -> io::Result<(u64, Vec<u8>)> {
        let (mut n, mut tail, mut buf) = (0u64, Vec::new(), vec![0u8; 1 << 16]);
        loop {
            let k = self.read(&mut buf)?;
            if k == 0 {
                break;
            }
            n += k as u64;
            tail.extend_from_slice(&buf[..k]);
            if tail.len() > 2 * keep {
                tail.drain(..tail.len() - keep);
            }
        }
        tail.drain(..tail.len().saturating_sub(keep));
        Ok((n, tail))
    }
}

impl Stream for BufReader<Box<dyn Read + Send>> {
    fn skip(&mut self, n: u64) -> io::Result<u64> {
        io::copy(&mut self.take(n), &mut io::sink())
    }
}

/// Wraps `f` in the decompressor its first bytes call for. Returns the stream, its
/// compression and where it was cut (set once the stream ends early).
pub fn open(
    path: &Path,
    f: Box<dyn Read + Send>,
) -> io::Result<(Box<dyn Read + Send>, Compression, Cut)> {
    let (s, kind, cut) = open_stream(path, f)?;
    Ok((s, kind, cut))
}

/// The compression whose magic bytes `head` starts with.
pub fn compression_of(head: &[u8]) -> Compression {
    if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Compression::Xz
    } else {
        Compression::None
    }
}

/// The first buffer, which the compression is told from.
const SNIFF_BUF: usize = 8 << 10;
/// A decoder's input buffer.
const DECODER_BUF: usize = 64 << 10;

/// [`open`], with a stream that can skip.
pub fn open_stream(
    path: &Path,
    f: Box<dyn Read + Send>,
) -> io::Result<(Box<dyn Stream>, Compression, Cut)> {
    // Small at first: a plain input's reader reads past it (a read larger than the buffer
    // bypasses it), and thousands of small inputs open at once stay small.
    let mut first = BufReader::with_capacity(SNIFF_BUF, f);
    let kind = compression_of(first.fill_buf()?);
    let cut = Cut::default();
    if kind == Compression::None {
        // Plain files stay on the caller's thread: the copy out of the page cache is
        // cheap (measured: a thread for it did not pay).
        return Ok((Box::new(first), Compression::None, cut));
    }
    // A decoder reads in small pieces: give it a larger buffer (which reads past the
    // first one's, once that is used up).
    let br = BufReader::with_capacity(DECODER_BUF, first);
    let inner: Box<dyn Read + Send> = match kind {
        Compression::Gzip => Box::new(Members::new(br)),
        Compression::Zstd => {
            // libzstd streams: every byte before a cut comes out (a block-at-a-time decoder
            // keeps the last window back and loses it at the cut). Windows up to 2 GiB
            // (`zstd --long=31`) are accepted; memory follows the frame's own window.
            let mut d = zstd::stream::read::Decoder::with_buffer(br).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: not a readable zstd stream: {e}", path.display()),
                )
            })?;
            d.window_log_max(31)?;
            Box::new(d)
        }
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(br)),
        // Returned above; kept so the match names every kind.
        Compression::None => Box::new(br),
    };
    let rd = Tolerant {
        inner,
        kind,
        out: 0,
        cut: cut.clone(),
    };
    Ok((Box::new(Ahead::spawn(Box::new(rd))), kind, cut))
}

/// gzip members one after another, as `gzip -d` reads them: zero bytes after the last
/// member (padding some tools and tapes leave) end the stream where the data ends, where
/// flate2's multi-member reader took them for a damaged header and failed the whole read.
struct Members<R: BufRead> {
    cur: Option<flate2::bufread::GzDecoder<R>>,
    /// The current member follows a complete one (and has given nothing yet).
    after: bool,
}

impl<R: BufRead> Members<R> {
    fn new(r: R) -> Self {
        Members {
            cur: Some(flate2::bufread::GzDecoder::new(r)),
            after: false,
        }
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(d) = self.cur.as_mut() else {
                return Ok(0);
            };
            let n = match d.read(buf) {
                // Bytes after a complete member that are no member: trailing garbage,
                // after every byte of the data (gzip -d warns and keeps the data too).
                Err(e) if self.after && e.kind() == io::ErrorKind::InvalidInput => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("bytes that are not gzip after its data ({e})"),
                    ))
                }
                r => r?,
            };
            if n > 0 || buf.is_empty() {
                self.after &= n == 0;
                return Ok(n);
            }
            // The member ended: another follows, or padding, or the end.
            let Some(mut r) = self.cur.take().map(|d| d.into_inner()) else {
                return Ok(0);
            };
            if !only_zeros_left(&mut r)? {
                self.cur = Some(flate2::bufread::GzDecoder::new(r));
                self.after = true;
            }
        }
    }
}

/// Consumes zero bytes of `r`: true when nothing else is left (the end, or padding to
/// the end), false when another gzip member (or anything else) starts there.
fn only_zeros_left(r: &mut impl BufRead) -> io::Result<bool> {
    loop {
        let head = r.fill_buf()?;
        if head.is_empty() {
            return Ok(true);
        }
        let zeros = head.iter().take_while(|&&b| b == 0).count();
        if zeros < head.len() {
            if zeros > 0 {
                // Zeros, then bytes that are not a member header: damage, said as such.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes that are not gzip after its data",
                ));
            }
            return Ok(false);
        }
        r.consume(zeros);
    }
}

/// Bytes decompressed per hand-over, and hand-overs in flight: a bound of 5 MiB
/// whatever the input's size or window.
const AHEAD_BUF: usize = 1 << 20;
const AHEAD_DEPTH: usize = 4;

/// A stream decompressed on a thread of its own, so decompression and parsing use both
/// cores: a compressed input costs about what the plain file does (issue 21). Buffers go
/// back to the thread to be refilled, so nothing is allocated per hand-over.
struct Ahead {
    full: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    empty: std::sync::mpsc::SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Ahead {
    fn spawn(mut inner: Box<dyn Read + Send>) -> Ahead {
        use std::sync::mpsc::sync_channel;
        let (full_tx, full) = sync_channel::<io::Result<Vec<u8>>>(AHEAD_DEPTH);
        let (empty, empty_rx) = sync_channel::<Vec<u8>>(AHEAD_DEPTH + 1);
        // The thread ends at the stream's end or error, or when the reader is dropped
        // (its sends fail).
        std::thread::spawn(move || loop {
            let mut buf = empty_rx.try_recv().unwrap_or_default();
            buf.resize(AHEAD_BUF, 0);
            let (n, err) = fill(&mut *inner, &mut buf);
            buf.truncate(n);
            let end = n == 0 || err.is_some();
            if n > 0 && full_tx.send(Ok(buf)).is_err() {
                return;
            }
            if end {
                let _ = full_tx.send(err.map_or(Ok(Vec::new()), Err));
                return;
            }
        });
        Ahead {
            full,
            empty,
            cur: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

/// Reads until `buf` is full, the stream ends or fails: the bytes read, and the error.
pub(crate) fn fill(r: &mut dyn Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

impl Ahead {
    /// Takes the next decompressed buffer once the current one is used up; false at the
    /// end of the stream.
    fn next_buffer(&mut self) -> io::Result<bool> {
        while self.pos == self.cur.len() {
            if self.done {
                return Ok(false);
            }
            let next = match self.full.recv() {
                Ok(Ok(b)) => b,
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => Vec::new(),
            };
            let old = std::mem::replace(&mut self.cur, next);
            let _ = self.empty.try_send(old);
            self.pos = 0;
            self.done = self.cur.is_empty();
        }
        Ok(true)
    }
}

impl Stream for Ahead {
    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let mut left = n;
        while left > 0 && self.next_buffer()? {
            let k = left.min((self.cur.len() - self.pos) as u64);
            self.pos += k as usize;
            left -= k;
        }
        Ok(n - left)
    }

    /// Keeps the last buffers whole instead of copying every byte through a tail.
    fn skip_to_end(&mut self, keep: usize) -> io::Result<(u64, Vec<u8>)> {
        let (mut n, mut last, mut held) = (0u64, std::collections::VecDeque::new(), 0usize);
        while self.next_buffer()? {
            let mut b = std::mem::take(&mut self.cur);
            b.drain(..std::mem::take(&mut self.pos));
            (n, held) = (n + b.len() as u64, held + b.len());
            last.push_back(b);
            while last
                .front()
                .is_some_and(|f: &Vec<u8>| held - f.len() >= keep)
            {
                let old = last.pop_front().expect("a front buffer");
                held -= old.len();
                let _ = self.empty.try_send(old);
            }
        }
        let mut tail: Vec<u8> = last.into_iter().flatten().collect();
        tail.drain(..tail.len().saturating_sub(keep));
        Ok((n, tail))
    }
}

impl Read for Ahead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if !self.next_buffer()? {
            return Ok(0);
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zstd_of(data: &[u8]) -> Vec<u8> {
        // One raw block frame: magic, descriptor (single segment, 1-byte size), block
        // header (last, raw, size), the bytes. Enough to test a cut without an encoder.
        let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x20, data.len() as u8];
        let bh = 1u32 | ((data.len() as u32) << 3);
        f.extend(&bh.to_le_bytes()[..3]);
        f.extend(data);
        f
    }

    #[test]
    fn a_cut_zstd_stream_ends_and_says_where() {
        let whole = zstd_of(b"0123456789abcdef0123456789abcdef");
        let (mut rd, kind, cut) = open(Path::new("t"), Box::new(io::Cursor::new(whole))).unwrap();
        let mut out = Vec::new();
        rd.read_to_end(&mut out).unwrap();
        assert_eq!((out.len(), kind), (32, Compression::Zstd));
        assert!(cut.get().is_none());

        let cut_file = zstd_of(b"0123456789abcdef0123456789abcdef")[..12].to_vec();
        let (mut rd, _, cut) = open(Path::new("t"), Box::new(io::Cursor::new(cut_file))).unwrap();
        let mut out = Vec::new();
        rd.read_to_end(&mut out).unwrap();
        let said = cut.get().expect("the cut is remembered");
        assert!(said.starts_with("the zstd stream is cut after"), "{said}");
        assert!(!said.contains("BlockContentReadError"), "{said}");
    }

    /// Zero bytes after the last gzip member (padding) end the stream where the data
    /// ends, with nothing cut; two members read as one stream; zeros then junk is damage.
    #[test]
    fn gzip_members_and_zero_padding() {
        let gz = |data: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            io::Write::write_all(&mut e, data).unwrap();
            e.finish().unwrap()
        };
        let read = |input: Vec<u8>| {
            let (mut rd, kind, cut) =
                open(Path::new("t"), Box::new(io::Cursor::new(input))).unwrap();
            let mut out = Vec::new();
            rd.read_to_end(&mut out).unwrap();
            assert_eq!(kind, Compression::Gzip);
            (out, cut.get().cloned())
        };
        let mut padded = gz(b"0123456789");
        padded.extend([0u8; 512]);
        assert_eq!(read(padded), (b"0123456789".to_vec(), None));
        let mut two = gz(b"abc");
        two.extend(gz(b"def"));
        two.extend([0u8; 3]);
        assert_eq!(read(two), (b"abcdef".to_vec(), None));
        let mut junk = gz(b"abc");
        junk.extend([0, 0, 7, 7]);
        let (out, cut) = read(junk);
        assert_eq!(out, b"abc");
        assert!(cut.is_some_and(|c| c.contains("not gzip after its data")));
    }

    /// gzip read as zstd is: trailing garbage after the last member, or a member whose
    /// checksum does not match, is read up to there and said, not refused whole.
    #[test]
    fn gzip_trailing_garbage_and_a_bad_checksum_are_read_with_a_note() {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut e, b"abc").unwrap();
        let gz = e.finish().unwrap();
        let mut garbage = gz.clone();
        garbage.extend_from_slice(b"GARBAGE AFTER THE LAST MEMBER");
        let mut crc = gz.clone();
        let n = crc.len();
        crc[n - 8] ^= 0xff;
        for (input, said) in [(garbage, "not gzip after its data"), (crc, "checksum")] {
            let (mut rd, _, cut) = open(Path::new("t"), Box::new(io::Cursor::new(input))).unwrap();
            let mut out = Vec::new();
            rd.read_to_end(&mut out).unwrap();
            let c = cut.get().cloned().unwrap_or_default();
            assert!(c.contains(said), "{c}");
            if said != "checksum" {
                assert_eq!(out, b"abc");
            }
        }
    }

    /// Both ways to the end (a plain stream's copy, the thread's buffers kept whole)
    /// count every byte and keep the last ones asked for.
    #[test]
    fn skipping_to_the_end_keeps_the_tail() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 239) as u8).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut gz, &data).unwrap();
        for input in [data.clone(), gz.finish().unwrap()] {
            let open = || open_stream(Path::new("t"), Box::new(io::Cursor::new(input.clone())));
            for keep in [100, 1_500_000, 5_000_000] {
                let (n, tail) = open().unwrap().0.skip_to_end(keep).unwrap();
                assert_eq!(n, 3_000_000);
                assert_eq!(tail[..], data[3_000_000 - keep.min(3_000_000)..], "{keep}");
            }
            // From inside a buffer.
            let mut rd = open().unwrap().0;
            rd.read_exact(&mut [0u8; 10]).unwrap();
            let (n, tail) = rd.skip_to_end(1 << 20).unwrap();
            assert_eq!((n, &tail[..]), (2_999_990, &data[3_000_000 - (1 << 20)..]));
        }
    }

    #[test]
    fn plain_input_passes_through() {
        let (mut rd, kind, cut) =
            open(Path::new("t"), Box::new(io::Cursor::new(b"abc".to_vec()))).unwrap();
        let mut s = String::new();
        rd.read_to_string(&mut s).unwrap();
        assert_eq!(
            (s.as_str(), kind, cut.get()),
            ("abc", Compression::None, None)
        );
    }
}
