//! The bytes a perf.data reader works on: what `linux-perf-data` parses ([`Src`]: the file,
//! or a compressed one through its cursors) and the data section the fast path decodes in
//! place ([`Data`]: the file mapped, or a [`Window`] onto a compressed one).

use crate::read::unpack::{self, Bytes};
use std::fs::File;

/// What `linux-perf-data` parses: the file, or a compressed one through its cursors.
pub(super) enum Src {
    File(File),
    Unpacked(unpack::Reader),
}

impl Src {
    /// The main reader of `bytes`, at offset 0: the file's own descriptor (its position is
    /// only moved by this reader; the rest reads at offsets).
    pub(super) fn main(bytes: &Bytes) -> std::io::Result<Src> {
        Ok(match bytes {
            Bytes::File(f) => Src::File(f.try_clone()?),
            Bytes::Unpacked(u) => Src::Unpacked(unpack::Reader::new(u.clone())),
        })
    }

    /// A second reader of `bytes` at offset 0, whose position is its own (for a file, a
    /// second open file description through /proc).
    pub(super) fn another(bytes: &Bytes) -> std::io::Result<Src> {
        Ok(match bytes {
            Bytes::File(f) => {
                use std::os::fd::AsRawFd;
                Src::File(File::open(format!("/proc/self/fd/{}", f.as_raw_fd()))?)
            }
            Bytes::Unpacked(u) => Src::Unpacked(unpack::Reader::new(u.clone())),
        })
    }
}

impl std::io::Read for Src {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Src::File(f) => f.read(buf),
            Src::Unpacked(r) => r.read(buf),
        }
    }
}

impl std::io::Seek for Src {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        match self {
            Src::File(f) => f.seek(to),
            Src::Unpacked(r) => r.seek(to),
        }
    }
}

/// The data section's bytes, by file offset: the file mapped, or a window read from a
/// compressed one.
pub(super) enum Data {
    Map(memmap2::Mmap),
    Window(Window),
}

/// The bytes `[base, base + buf.len())` of a file read through cursors: from the earliest
/// record still held to the scan, refilled 4 MiB at a time and trimmed as records go out.
pub(super) struct Window {
    src: Bytes,
    pub(super) buf: Vec<u8>,
    pub(super) base: usize,
    /// Bytes read at least per fill (4 MiB), and dead bytes at least per compaction
    /// (32 MiB); tests make them small.
    pub(super) step: usize,
    pub(super) dead: usize,
}

impl Data {
    /// The fast path's bytes of `file` with data section `(start, size)`: a map of a plain
    /// file, a window onto a compressed one; None when a plain file cannot be mapped.
    pub(super) fn of(file: &Bytes, (start, _): (u64, u64)) -> Option<Data> {
        match file {
            // SAFETY: the map is read-only and private to this reader. Another process
            // truncating the file under us would fault (SIGBUS), as it would for perf
            // itself, which maps perf.data the same way; a trace being analysed is not
            // being rewritten.
            Bytes::File(f) => unsafe { memmap2::Mmap::map(f) }.ok().map(Data::Map),
            Bytes::Unpacked(u) => Some(Data::Window(Window {
                src: Bytes::Unpacked(u.clone()),
                buf: Vec::new(),
                base: start as usize,
                step: 4 << 20,
                dead: 32 << 20,
            })),
        }
    }

    /// Bytes `a..b` (file offsets), loaded by [`Data::load`] before.
    #[inline]
    pub(super) fn get(&self, a: usize, b: usize) -> &[u8] {
        match self {
            Data::Map(m) => &m[a..b],
            Data::Window(w) => &w.buf[a - w.base..b - w.base],
        }
    }

    /// Makes the bytes up to `b` readable (no more than `end`, the data section's end).
    #[inline]
    pub(super) fn load(&mut self, b: usize, end: usize) -> Result<(), String> {
        match self {
            Data::Map(_) => Ok(()),
            Data::Window(w) if b <= w.base + w.buf.len() => Ok(()),
            Data::Window(w) => w.fill(b, end),
        }
    }

    /// Gives back the bytes in `[from, upto)`, all before any record still to decode.
    pub(super) fn release(&mut self, from: usize, upto: usize) {
        match self {
            // SAFETY: a read-only map of a file: a page given back is read from the file
            // again if touched, and no reference into the map outlives a decode (events
            // own their data).
            Data::Map(m) => {
                let _ = unsafe {
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, upto - from)
                };
            }
            // Moving the live bytes down costs their size: done when at least as many
            // dead ones (and 32 MiB) go, it costs at most what is read.
            Data::Window(w) => {
                let k = upto.saturating_sub(w.base).min(w.buf.len());
                if k >= w.dead.max(w.buf.len() - k) {
                    w.buf.drain(..k);
                    w.base += k;
                }
            }
        }
    }
}

impl Window {
    /// Reads on to at least `b`, a step of 4 MiB at least, never past `end`.
    fn fill(&mut self, b: usize, end: usize) -> Result<(), String> {
        let have = self.base + self.buf.len();
        let want = b.max(have + self.step).min(end);
        if want < b {
            return Err(format!("byte {b} is past the data section's end ({end})"));
        }
        let old = self.buf.len();
        self.buf.resize(old + (want - have), 0);
        self.src
            .read_exact_at(&mut self.buf[old..], have as u64)
            .map_err(|e| {
                self.buf.truncate(old);
                format!("reading the data section at byte {have}: {e}")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window serves any loaded bytes by file offset, refills in steps, and moves its
    /// live bytes down only when at least as many dead ones go.
    #[test]
    fn a_window_refills_and_compacts() {
        let tmp = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        let z = tmp.path().join("w.zst");
        std::fs::write(&z, zstd::bulk::compress(&bytes, 3).unwrap()).unwrap();
        let u = std::sync::Arc::new(unpack::Unpacked::open(&z).unwrap().unwrap());
        let mut d = Data::of(&Bytes::Unpacked(u), (1000, 199_000)).unwrap();
        if let Data::Window(w) = &mut d {
            (w.step, w.dead) = (4096, 8192);
        }
        let end = 200_000;
        let window = |d: &Data| match d {
            Data::Window(w) => (w.base, w.buf.len()),
            Data::Map(_) => unreachable!(),
        };
        d.load(1010, end).unwrap();
        assert_eq!(window(&d), (1000, 4096));
        d.load(30_000, end).unwrap();
        assert_eq!(d.get(29_000, 30_000), &bytes[29_000..30_000]);
        assert_eq!(window(&d), (1000, 29_000));
        // 5000 dead bytes, fewer than the 8192 a move needs: kept.
        d.release(0, 6000);
        assert_eq!(window(&d), (1000, 29_000));
        // 20_000 dead, 9000 live: moved down.
        d.release(0, 21_000);
        assert_eq!(window(&d), (21_000, 9000));
        assert_eq!(d.get(21_000, 30_000), &bytes[21_000..30_000]);
        d.load(200_000, end).unwrap();
        assert_eq!(d.get(199_990, 200_000), &bytes[199_990..]);
        assert!(d.load(200_001, end).is_err());
    }
}
