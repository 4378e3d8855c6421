//! Random access into a compressed binary trace (zstd, xz, gzip) without a decompressed
//! copy.
//!
//! A trace.dat is read at a few places at once (its metadata, then each CPU's data
//! section, merged by time), so it needs reads at offsets. A compressed one used to be
//! decompressed whole into a temporary file first. [`Unpacked`] instead keeps a few
//! decompressing cursors over the file, each moving forward only: a read is served by
//! the cursor closest behind its offset, which skips ahead to it; when none is behind, a
//! new cursor starts from the beginning. A reader that moves forward through a few
//! regions (one per CPU) so keeps one cursor per region, and the extra cost is
//! decompressing, once, what lies before each region. Each cursor decompresses on a
//! thread of its own ([`super::decompress`]), bounded to a few MiB.
//!
//! The decompressed size must be known up front (the readers check offsets against it,
//! and a file cut short must look cut): zstd frames and the xz index declare it
//! (`super::declared`). gzip does not, nor does zstd written as a stream: such a file
//! is decompressed through once to learn it (for a perf.data that pass also reaches the
//! feature sections the reader needs first). A cut or damaged file is not served here.

use super::decompress::{self, Compression, Cut};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Cursors kept at most: the least recently used one is dropped for a new one.
pub const MAX_CURSORS: usize = 8;

/// A binary trace's bytes: a plain file, or a compressed one read through cursors.
pub enum Bytes {
    /// A plain file, read with `pread`.
    File(File),
    /// A zstd or xz file of known decompressed size (shared with the parsers that read it
    /// too).
    Unpacked(std::sync::Arc<Unpacked>),
    /// Bytes in memory ([`super::memory`]: a `watch` window).
    Memory(std::sync::Arc<super::memory::Pieces>),
}

impl Bytes {
    /// Fills `buf` from offset `off`.
    pub fn read_exact_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        match self {
            Bytes::File(f) => f.read_exact_at(buf, off),
            Bytes::Unpacked(u) => u.read_exact_at(buf, off),
            Bytes::Memory(m) => m.read_exact_at(buf, off),
        }
    }

    /// The size in bytes (decompressed).
    pub fn size(&self) -> io::Result<u64> {
        match self {
            Bytes::File(f) => Ok(f.metadata()?.len()),
            Bytes::Unpacked(u) => Ok(u.len),
            Bytes::Memory(m) => Ok(m.len()),
        }
    }
}

/// Bytes each cursor keeps of what it last produced (up to twice this before trimming):
/// parsers step back a little (a buffered reader that read ahead, a table then the
/// section before it), and without them each step back would decompress from the start.
const HISTORY: usize = 1 << 20;

/// One decompressing stream and where it stands.
struct Cursor {
    pos: u64,
    rd: Box<dyn decompress::Stream>,
    cut: Cut,
    /// When it last served a read (a counter).
    used: u64,
    /// The bytes `[pos - history.len(), pos)`.
    history: Vec<u8>,
}

impl Cursor {
    /// How many bytes at `off` its history holds (0 when none).
    fn held(&self, off: u64) -> u64 {
        let from = self.pos - self.history.len() as u64;
        if (from..self.pos).contains(&off) {
            self.pos - off
        } else {
            0
        }
    }
}

/// Appends `b` to a cursor's history, keeping at most its last `2 * HISTORY` bytes.
fn remember(history: &mut Vec<u8>, b: &[u8]) {
    if b.len() >= HISTORY {
        history.clear();
        history.extend_from_slice(&b[b.len() - HISTORY..]);
        return;
    }
    history.extend_from_slice(b);
    if history.len() > 2 * HISTORY {
        history.drain(..history.len() - HISTORY);
    }
}

/// Where skipped bytes go: only their tail is kept, in the history.
struct Tail<'a>(&'a mut Vec<u8>);

impl io::Write for Tail<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        remember(self.0, b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reader of a file at a position of its own, by `pread`: any number of them share one
/// open file (whose own offset none of them moves), so a file is opened once however
/// many readers it has.
pub struct FileAt {
    file: std::sync::Arc<File>,
    pos: u64,
}

impl FileAt {
    /// At offset 0.
    pub fn new(file: std::sync::Arc<File>) -> FileAt {
        FileAt { file, pos: 0 }
    }
}

impl Read for FileAt {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl io::Seek for FileAt {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let pos = match to {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::End(d) => self.file.metadata()?.len().checked_add_signed(d),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(self.pos)
    }
}

/// A compressed file read at offsets through forward-moving cursors (see the module doc).
pub struct Unpacked {
    path: PathBuf,
    /// The file, opened once: every cursor reads it through its own [`FileAt`].
    file: std::sync::Arc<File>,
    len: u64,
    /// Where a new cursor may start besides 0 (an xz file's blocks).
    declared: super::declared::Declared,
    /// The cursors and a use counter (readers on several threads share a file).
    cursors: Mutex<(Vec<Cursor>, u64)>,
    /// Bytes decompressed to skip to an offset, and cursors started: the cost of reading
    /// out of order, for tests and benchmarks.
    skipped: AtomicU64,
    started: AtomicU64,
    /// Where the data was found to end by a read past it (u64::MAX: not yet).
    ended: AtomicU64,
}

impl Unpacked {
    /// Opens `path` when it is zstd or xz that declares its whole decompressed size; None
    /// otherwise (gzip, zstd written as a stream, a cut file): see [`Unpacked::measure`].
    pub fn open(path: &Path) -> io::Result<Option<Unpacked>> {
        Self::open_file(path, std::sync::Arc::new(File::open(path)?))
    }

    /// [`Unpacked::open`] of `file`, already open (`path` names it in messages).
    pub fn open_file(path: &Path, file: std::sync::Arc<File>) -> io::Result<Option<Unpacked>> {
        let declared = super::declared::of_file(&file)?;
        Ok(declared.map(|d| Self::with(path, file, d)))
    }

    /// Compressed `file` of decompressed size `size`, found by other means (a gzip
    /// trace.dat's regions, checked against its trailer).
    pub fn claimed(path: &Path, file: std::sync::Arc<File>, size: u64) -> Unpacked {
        let mut u = Self::with(path, file, Default::default());
        u.len = size;
        u
    }

    /// `file` with no size yet, for a look at its start before deciding to measure it:
    /// reads are only bounded by the data itself.
    pub fn unmeasured(path: &Path, file: std::sync::Arc<File>) -> Unpacked {
        let mut u = Self::with(path, file, Default::default());
        u.len = u64::MAX;
        u
    }

    fn with(
        path: &Path,
        file: std::sync::Arc<File>,
        declared: super::declared::Declared,
    ) -> Unpacked {
        Unpacked {
            path: path.to_path_buf(),
            file,
            len: declared.size,
            declared,
            cursors: Mutex::new((Vec::new(), 0)),
            skipped: AtomicU64::new(0),
            started: AtomicU64::new(0),
            ended: AtomicU64::new(u64::MAX),
        }
    }

    /// Opens compressed `path` that declares no size (gzip's trailer holds only the last
    /// member's size modulo 4 GiB; zstd written as a stream): a first cursor decompresses
    /// it to the end, and stays there with the last bytes in its history, where
    /// perf.data's feature sections, read before its data, usually are. None when it is
    /// not compressed, or cut or damaged: it is then spooled and read as far as it goes.
    pub fn measure(path: &Path) -> io::Result<Option<Unpacked>> {
        Self::measure_file(path, std::sync::Arc::new(File::open(path)?))
    }

    /// [`Unpacked::measure`] of `file`, already open (`path` names it in messages).
    pub fn measure_file(path: &Path, file: std::sync::Arc<File>) -> io::Result<Option<Unpacked>> {
        let mut head = [0u8; 6];
        let n = file.read_at(&mut head, 0)?;
        if decompress::compression_of(&head[..n]) == Compression::None {
            return Ok(None);
        }
        let mut u = Self::with(path, file, Default::default());
        let mut c = u.cursor_at(None)?;
        let (n, tail) = c.rd.skip_to_end(2 * HISTORY)?;
        if c.cut.get().is_some() {
            return Ok(None);
        }
        (c.pos, c.history, u.len) = (n, tail, n);
        u.skipped.fetch_add(n, Relaxed);
        u.cursors
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .push(c);
        Ok(Some(u))
    }

    /// The decompressed size.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the decompressed file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The decompressed size, when a read ran past the end of a stream that ended whole.
    pub fn ended(&self) -> Option<u64> {
        Some(self.ended.load(Relaxed)).filter(|&n| n != u64::MAX)
    }

    /// (bytes decompressed only to skip ahead, cursors started) so far.
    pub fn cost(&self) -> (u64, u64) {
        (self.skipped.load(Relaxed), self.started.load(Relaxed))
    }

    /// Fills `buf` from offset `off` with the cursor closest behind it.
    pub fn read_exact_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        let end = off.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} bytes at {off} run past the end of the decompressed file ({} bytes)",
                    buf.len(),
                    self.len
                ),
            ));
        }
        // A reader that panicked holding the lock left the cursors as they were.
        let mut g = self.cursors.lock().unwrap_or_else(|p| p.into_inner());
        let (cs, clock) = &mut *g;
        let i = self.cursor_for(cs, off)?;
        *clock += 1;
        let c = &mut cs[i];
        c.used = *clock;
        let r = Self::advance(c, off, buf);
        if let Err(e) = r {
            // A stream that ended whole tells the size (a file read before it was known).
            if e.kind() == io::ErrorKind::UnexpectedEof && c.cut.get().is_none() {
                self.ended.store(c.pos, Relaxed);
            }
            // Where a failed cursor stands is unknown: it is not used again.
            let cut = c.cut.get().cloned();
            cs.swap_remove(i);
            return Err(match cut {
                Some(why) => io::Error::new(io::ErrorKind::InvalidData, why),
                None => e,
            });
        }
        self.skipped.fetch_add(r.unwrap_or(0), Relaxed);
        Ok(())
    }

    /// Fills `buf` at `off` from cursor `c`: what its history holds, then skipping ahead
    /// to the rest and reading it; returns the bytes skipped.
    fn advance(c: &mut Cursor, off: u64, buf: &mut [u8]) -> io::Result<u64> {
        let held = (c.held(off) as usize).min(buf.len());
        if held > 0 {
            let at = c.history.len() - (c.pos - off) as usize;
            buf[..held].copy_from_slice(&c.history[at..at + held]);
        }
        let (off, buf) = (off + held as u64, &mut buf[held..]);
        if buf.is_empty() {
            return Ok(0);
        }
        let gap = off - c.pos;
        // Only the skip's tail can be asked for again: the rest is not kept.
        let far = gap.saturating_sub(HISTORY as u64);
        let mut n = c.rd.skip(far)?;
        if n == far {
            n += io::copy(&mut (&mut c.rd).take(gap - far), &mut Tail(&mut c.history))?;
        }
        c.pos += n;
        let (got, err) = if n < gap {
            (0, None)
        } else {
            decompress::fill(&mut c.rd, buf)
        };
        c.pos += got as u64;
        remember(&mut c.history, &buf[..got]);
        if let Some(e) = err {
            return Err(e);
        }
        if got < buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the decompressed data ends at byte {}", c.pos),
            ));
        }
        Ok(gap)
    }

    /// The index of the cursor to read at `off`: one whose history holds it, else the one
    /// closest behind unless a block starts between it and `off` (xz), else a new one
    /// from the last start before `off` (in place of the least recently used when there
    /// are enough).
    fn cursor_for(&self, cs: &mut Vec<Cursor>, off: u64) -> io::Result<usize> {
        if let Some(i) = (0..cs.len()).find(|&i| cs[i].held(off) > 0) {
            return Ok(i);
        }
        let start = self.declared.start_before(off);
        let behind = (0..cs.len())
            .filter(|&i| cs[i].pos <= off)
            .max_by_key(|&i| cs[i].pos);
        if let Some(i) = behind.filter(|&i| cs[i].pos >= start.map_or(0, |s| s.1)) {
            return Ok(i);
        }
        let c = self.cursor_at(start)?;
        if cs.len() >= MAX_CURSORS {
            let lru = (0..cs.len()).min_by_key(|&i| cs[i].used).unwrap_or(0);
            cs[lru] = c;
            return Ok(lru);
        }
        cs.push(c);
        Ok(cs.len() - 1)
    }

    /// A new cursor: from the file's start, or from xz block `k` at decompressed offset
    /// `raw` ([`super::declared::Declared::stream_from`]).
    fn cursor_at(&self, start: Option<(usize, u64)>) -> io::Result<Cursor> {
        let f = FileAt::new(self.file.clone());
        let (input, raw): (Box<dyn Read + Send>, u64) = match start {
            None => (Box::new(f), 0),
            Some((k, raw)) => (Box::new(self.declared.stream_from(k, f)?), raw),
        };
        let (rd, _, cut) = decompress::open_stream(&self.path, input)?;
        self.started.fetch_add(1, Relaxed);
        Ok(Cursor {
            pos: raw,
            rd,
            cut,
            used: 0,
            history: Vec::new(),
        })
    }
}

/// A sequential reader (Read + Seek) over an [`Unpacked`] file shared with others: for
/// parsers that seek and read, such as `linux-perf-data`'s.
pub struct Reader {
    u: std::sync::Arc<Unpacked>,
    pos: u64,
}

impl Reader {
    /// A reader of `u` at offset 0.
    pub fn new(u: std::sync::Arc<Unpacked>) -> Reader {
        Reader { u, pos: 0 }
    }
}

impl Read for Reader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.u.len.saturating_sub(self.pos)) as usize;
        if n == 0 {
            return Ok(0);
        }
        self.u.read_exact_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl io::Seek for Reader {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let at = match to {
            io::SeekFrom::Start(n) => Some(n),
            io::SeekFrom::End(d) => self.u.len.checked_add_signed(d),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos =
            at.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zst(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, zstd::bulk::compress(data, 3).unwrap()).unwrap();
        p
    }

    #[test]
    fn reads_at_offsets_in_any_order_with_one_cursor_per_region() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let p = zst(dir.path(), "a.zst", &data);
        let u = Unpacked::open(&p).unwrap().expect("declared size");
        assert_eq!(u.len(), data.len() as u64);
        // Two regions read alternately, forward, as a trace.dat's two CPUs are.
        let (mut a, mut b) = (1000u64, 2_000_000u64);
        let mut buf = vec![0u8; 4096];
        for _ in 0..100 {
            for off in [a, b] {
                u.read_exact_at(&mut buf, off).unwrap();
                assert_eq!(buf[..], data[off as usize..off as usize + 4096]);
            }
            a += 4096;
            b += 4096;
        }
        // Two cursors. The first, after its read at `a`, was the closest behind `b` and
        // skipped there; the next read at `a` started the second from 0. From then on each
        // region has its own and nothing more is skipped.
        let (skipped, started) = u.cost();
        assert_eq!(started, 2);
        assert_eq!(skipped, 1000 + (2_000_000 - 5096) + 5096);
        // A step back within a cursor's history: no new cursor.
        u.read_exact_at(&mut buf, b - 100_000).unwrap();
        assert_eq!(buf[..], data[b as usize - 100_000..b as usize - 95_904]);
        assert_eq!(u.cost(), (skipped, 2));
        // Past the end: an error, never a panic.
        let e = u
            .read_exact_at(&mut buf, data.len() as u64 - 10)
            .unwrap_err();
        assert!(e.to_string().contains("past the end"), "{e}");
    }

    #[test]
    fn a_step_back_past_every_history_starts_a_new_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..6_000_000u32).map(|i| (i * 13 % 249) as u8).collect();
        let u = Unpacked::open(&zst(dir.path(), "b.zst", &data))
            .unwrap()
            .unwrap();
        let mut buf = vec![0u8; 4096];
        let mut check = |off: usize| {
            u.read_exact_at(&mut buf, off as u64).unwrap();
            assert_eq!(buf[..], data[off..off + 4096], "at {off}");
            u.cost()
        };
        assert_eq!(check(4_000_000), (4_000_000, 1));
        // The skip's last MiB is kept: no cursor, nothing skipped.
        assert_eq!(check(3_500_000), (4_000_000, 1));
        // Before it: a new cursor from the start.
        assert_eq!(check(10), (4_000_010, 2));
        assert_eq!(check(100), (4_000_010, 2));
    }

    #[test]
    fn an_xz_file_of_blocks_starts_each_cursor_at_the_block_before_its_read() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 11 % 247) as u8).collect();
        let p = dir.path().join("c.xz");
        std::fs::write(&p, crate::read::declared::tests::xz_blocks(&data, 500_000)).unwrap();
        let u = Unpacked::open(&p)
            .unwrap()
            .expect("the index declares the size");
        assert_eq!(u.len(), 3_000_000);
        let mut buf = vec![0u8; 4096];
        let mut check = |off: usize| {
            u.read_exact_at(&mut buf, off as u64).unwrap();
            assert_eq!(buf[..], data[off..off + 4096], "at {off}");
            u.cost()
        };
        // Near the end: a cursor from the last block (2.5 M), not from 0.
        assert_eq!(check(2_900_000), (400_000, 1));
        // Inside the first block: a cursor from 0.
        assert_eq!(check(1000), (401_000, 2));
        // A block start lies between that cursor and 1.2 M: a new cursor from there.
        assert_eq!(check(1_200_000), (601_000, 3));
        // Forward within the same block: the cursor behind goes on.
        assert_eq!(check(1_400_000), (601_000 + 195_904, 3));
    }

    #[test]
    fn a_size_not_declared_or_a_cut_file_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![7u8; 100_000];
        // Two frames, both declaring: the sizes add up.
        let mut two = zstd::bulk::compress(&data[..], 3).unwrap();
        two.extend(zstd::bulk::compress(&data[..50_000], 3).unwrap());
        let p = dir.path().join("two.zst");
        std::fs::write(&p, &two).unwrap();
        assert_eq!(Unpacked::open(&p).unwrap().unwrap().len(), 150_000);
        // Cut inside the last frame.
        std::fs::write(&p, &two[..two.len() - 5]).unwrap();
        assert!(Unpacked::open(&p).unwrap().is_none());
        // Not compressed at all.
        std::fs::write(&p, b"plain").unwrap();
        assert!(Unpacked::open(&p).unwrap().is_none());
        assert!(Unpacked::measure(&p).unwrap().is_none());
        // gzip, cut: the pass that learns the size finds the cut.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut gz, &data).unwrap();
        let gz = gz.finish().unwrap();
        std::fs::write(&p, &gz[..gz.len() - 9]).unwrap();
        assert!(Unpacked::open(&p).unwrap().is_none());
        assert!(Unpacked::measure(&p).unwrap().is_none());
    }

    /// gzip, and zstd written as a stream, declare no size: one cursor decompresses the
    /// file through to learn it and stays at the end, its last 2 MiB at hand.
    #[test]
    fn a_size_not_declared_is_learnt_by_one_pass_that_keeps_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..5_000_000u32).map(|i| (i * 17 % 241) as u8).collect();
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.include_contentsize(false).unwrap();
        io::Write::write_all(&mut e, &data).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut gz, &data).unwrap();
        for (name, bytes) in [
            ("s.zst", e.finish().unwrap()),
            ("g.gz", gz.finish().unwrap()),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            assert!(
                Unpacked::open(&p).unwrap().is_none(),
                "{name} declares no size"
            );
            let u = Unpacked::measure(&p).unwrap().expect("measured");
            assert_eq!((u.len(), u.cost()), (5_000_000, (5_000_000, 1)), "{name}");
            let mut buf = vec![0u8; 4096];
            let mut check = |off: usize| {
                u.read_exact_at(&mut buf, off as u64).unwrap();
                assert_eq!(buf[..], data[off..off + 4096], "{name} at {off}");
                u.cost().1
            };
            // The last 2 MiB come from that pass's cursor; what lies before, from a new one.
            assert_eq!(check(5_000_000 - 4096), 1);
            assert_eq!(check(5_000_000 - 2_000_000), 1);
            assert_eq!(check(1000), 2);
            // Not measured: a read past the end fails, and tells where the data ends.
            let u = Unpacked::unmeasured(&p, std::sync::Arc::new(File::open(&p).unwrap()));
            assert_eq!(u.ended(), None);
            u.read_exact_at(&mut buf, 4_000_000).unwrap();
            assert!(u.read_exact_at(&mut buf, 4_998_000).is_err());
            assert_eq!(u.ended(), Some(5_000_000), "{name}");
        }
    }
}
