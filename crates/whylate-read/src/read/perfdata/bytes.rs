//! The bytes a perf.data reader works on: what `linux-perf-data` parses ([`Src`]: the file,
//! or a compressed one through its cursors) and the data section the fast path decodes in
//! place ([`Data`]: the file mapped, or a [`Window`] onto a compressed one).

use crate::read::unpack::{self, Bytes};
use std::fs::File;

/// What `linux-perf-data` parses: the file, or a compressed one through its cursors.
pub(super) enum Src {
    File(File),
    Unpacked(unpack::Reader),
    Memory(crate::read::memory::Reader),
}

impl Src {
    /// The main reader of `bytes`, at offset 0: the file's own descriptor (its position is
    /// only moved by this reader; the rest reads at offsets).
    pub(super) fn main(bytes: &Bytes) -> std::io::Result<Src> {
        Ok(match bytes {
            Bytes::File(f) => Src::File(f.try_clone()?),
            Bytes::Unpacked(u) => Src::Unpacked(unpack::Reader::new(u.clone())),
            Bytes::Memory(m) => Src::Memory(crate::read::memory::Reader::new(m.clone())),
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
            Bytes::Memory(m) => Src::Memory(crate::read::memory::Reader::new(m.clone())),
        })
    }
}

impl std::io::Read for Src {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Src::File(f) => f.read(buf),
            Src::Unpacked(r) => r.read(buf),
            Src::Memory(r) => r.read(buf),
        }
    }
}

impl std::io::Seek for Src {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        match self {
            Src::File(f) => f.seek(to),
            Src::Unpacked(r) => r.seek(to),
            Src::Memory(r) => r.seek(to),
        }
    }
}

/// The size of the record whose 8-byte header `h` starts with (perf's `u16 size`).
#[inline]
pub(super) fn record_size(h: &[u8]) -> usize {
    h[6] as usize | (h[7] as usize) << 8
}

/// Asks the CPU to bring byte `at` of `bytes` into its cache (nothing past the end).
#[inline]
pub(super) fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        // SAFETY: a prefetch reads nothing into the program and cannot fault.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(b as *const u8 as *const i8);
        }
    }
    let _ = (bytes, at);
}

/// The data section's bytes, by file offset: the file mapped, or a window read from a
/// compressed one.
pub(super) enum Data {
    /// Shared with the decoding half, which reads due records where they are.
    Map(std::sync::Arc<memmap2::Mmap>),
    Window(Window),
}

/// The bytes of a compressed file's data section read through cursors, from the chunk of
/// the earliest record still held to the scan: chunks of `step` bytes (4 MiB) by offset
/// from the section's start, each also holding the last [`OVERLAP`] bytes before it, so a
/// record (at most 64 KiB) that runs past its chunk's end is whole in the next one. Chunks
/// go as soon as every record left starts after them: no grown buffer twice the live
/// bytes, and no live bytes moved down.
pub(super) struct Window {
    src: Bytes,
    chunks: std::collections::VecDeque<Chunk>,
    /// Maps of dropped chunks kept for the next ones (at most [`SPARE`]).
    spare: Vec<memmap2::MmapMut>,
    /// The section's start (chunk `i` owns `[start + i * step, start + (i + 1) * step)`).
    start: usize,
    /// The index of `chunks[0]`, and the offset loaded up to.
    first: usize,
    loaded: usize,
    /// Bytes per chunk (4 MiB; tests make it small, down to [`OVERLAP`]).
    pub(super) step: usize,
    /// The most chunks held at once (tests check the bound).
    #[cfg(test)]
    most: usize,
}

/// Bytes a record can span past its start: perf's record size is 16 bits.
const OVERLAP: usize = 1 << 16;

/// Dropped chunks' maps kept for reuse. A new map is zeroed by the kernel page by page:
/// on the 405 MB perf.data.zst of bench/explain.py that zeroing was a tenth of the
/// reading thread's time, and the reading thread is the slower one there. Two cover the
/// steady state, where a chunk goes each time one comes; a backlog beyond them still goes
/// back to the kernel at once.
const SPARE: usize = 2;

/// One chunk: the bytes `[base, base + len)`, in an anonymous map of its own. A dropped
/// chunk goes back to the kernel at once: a rounds' backlog of tens of MiB freed to the
/// allocator's heap stayed in the RSS (on the 1.24 GB perf.data.zst its peak was 18 MiB
/// above the live bytes), and keeping the buffers for reuse keeps the largest backlog
/// ever. The map is asked for in huge pages and populated in one call: faulting the
/// 830 MB of chunks a page at a time doubled that run's system time. A few dropped maps
/// are kept for the next chunks ([`SPARE`]).
struct Chunk {
    base: usize,
    map: memmap2::MmapMut,
    len: usize,
}

impl Chunk {
    /// A chunk at `base` in a map of `cap` bytes: one of `spare`, else a new one.
    fn new(base: usize, cap: usize, spare: &mut Vec<memmap2::MmapMut>) -> std::io::Result<Chunk> {
        if let Some(map) = spare.pop().filter(|m| m.len() == cap) {
            return Ok(Chunk { base, map, len: 0 });
        }
        let map = memmap2::MmapOptions::new().len(cap).map_anon()?;
        // Both are hints: without them the pages are faulted as they are written.
        let _ = map.advise(memmap2::Advice::HugePage);
        let _ = map.advise(memmap2::Advice::PopulateWrite);
        Ok(Chunk { base, map, len: 0 })
    }

    fn bytes(&self) -> &[u8] {
        &self.map[..self.len]
    }
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
            Bytes::File(f) => unsafe { memmap2::Mmap::map(f) }
                .ok()
                .map(|m| Data::Map(std::sync::Arc::new(m))),
            Bytes::Unpacked(u) => Some(Data::Window(Window {
                src: Bytes::Unpacked(u.clone()),
                chunks: Default::default(),
                spare: Vec::new(),
                start: start as usize,
                first: 0,
                loaded: start as usize,
                step: 4 << 20,
                #[cfg(test)]
                most: 0,
            })),
            // Not made by any reader yet: the records are read through `Src` instead.
            Bytes::Memory(_) => None,
        }
    }

    /// The map of a plain file, for a reader on another thread (a window's chunks go
    /// while records read from them may still be on their way: those are copied).
    pub(super) fn shared(&self) -> Option<std::sync::Arc<memmap2::Mmap>> {
        match self {
            Data::Map(m) => Some(m.clone()),
            Data::Window(_) => None,
        }
    }

    /// Bytes `a..b` (file offsets, at most 64 KiB), loaded by [`Data::load`] before.
    #[inline]
    pub(super) fn get(&self, a: usize, b: usize) -> &[u8] {
        match self {
            Data::Map(m) => &m[a..b],
            Data::Window(w) => w.get(a, b),
        }
    }

    /// Asks the CPU to bring byte `at` of a map into its cache (not for a window).
    #[inline]
    pub(super) fn prefetch(&self, at: usize) {
        if let Data::Map(m) = self {
            prefetch(m, at);
        }
    }

    /// Makes the bytes up to `b` readable (no more than `end`, the data section's end).
    #[inline]
    pub(super) fn load(&mut self, b: usize, end: usize) -> Result<(), String> {
        match self {
            Data::Map(_) => Ok(()),
            Data::Window(w) if b <= w.loaded => Ok(()),
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
            Data::Window(w) => w.release(upto),
        }
    }
}

impl Window {
    /// The chunk that holds `a..b` whole: `a`'s own chunk, or the next one when the bytes
    /// run past its end (the next one starts [`OVERLAP`] bytes early).
    #[inline]
    fn get(&self, a: usize, b: usize) -> &[u8] {
        let i = (a - self.start) / self.step - self.first;
        let mut c = &self.chunks[i];
        if b > c.base + c.len {
            c = &self.chunks[i + 1];
        }
        &c.bytes()[a - c.base..b - c.base]
    }

    /// Reads on, a chunk at a time, until the bytes up to `b` are loaded, never past `end`.
    fn fill(&mut self, b: usize, end: usize) -> Result<(), String> {
        if b > end {
            return Err(format!("byte {b} is past the data section's end ({end})"));
        }
        while self.loaded < b {
            let own = self.loaded;
            let upto = (own + self.step - (own - self.start) % self.step).min(end);
            let tail = self.chunks.back().map_or(&[][..], |p| {
                let b = p.bytes();
                &b[b.len().saturating_sub(OVERLAP)..]
            });
            let (have, len) = (tail.len(), tail.len() + (upto - own));
            // Every chunk's map has room for the most a chunk holds, so any can be reused.
            let mut c = Chunk::new(own - have, OVERLAP + self.step, &mut self.spare)
                .map_err(|e| format!("no memory for the data section at byte {own}: {e}"))?;
            c.map[..have].copy_from_slice(tail);
            self.src
                .read_exact_at(&mut c.map[have..len], own as u64)
                .map_err(|e| format!("reading the data section at byte {own}: {e}"))?;
            c.len = len;
            if self.chunks.is_empty() {
                self.first = (own - self.start) / self.step;
            }
            self.chunks.push_back(c);
            #[cfg(test)]
            {
                self.most = self.most.max(self.chunks.len());
            }
            self.loaded = upto;
        }
        Ok(())
    }

    /// The most chunks held at once so far.
    #[cfg(test)]
    pub(super) fn most_chunks(&self) -> usize {
        self.most
    }

    /// Drops the chunks that end at or before `upto` (no record left starts in them).
    fn release(&mut self, upto: usize) {
        while self.chunks.len() > 1 {
            let ends = self.start + (self.first + 1) * self.step;
            if ends > upto {
                break;
            }
            if let Some(c) = self.chunks.pop_front() {
                if self.spare.len() < SPARE {
                    self.spare.push(c.map);
                }
            }
            self.first += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window serves any loaded bytes by file offset (a record past its chunk's end
    /// from the next chunk), reads a chunk at a time, and drops the chunks no record left
    /// starts in.
    #[test]
    fn a_window_reads_chunks_and_drops_them() {
        let tmp = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..400_000u32).map(|i| (i % 253) as u8).collect();
        let z = tmp.path().join("w.zst");
        std::fs::write(&z, zstd::bulk::compress(&bytes, 3).unwrap()).unwrap();
        let u = std::sync::Arc::new(unpack::Unpacked::open(&z).unwrap().unwrap());
        let mut d = Data::of(&Bytes::Unpacked(u), (1000, 399_000)).unwrap();
        let step = OVERLAP;
        if let Data::Window(w) = &mut d {
            w.step = step;
        }
        let end = 400_000;
        // (first chunk's index, chunks held, bytes loaded up to)
        let window = |d: &Data| match d {
            Data::Window(w) => (w.first, w.chunks.len(), w.loaded),
            Data::Map(_) => unreachable!(),
        };
        let spare = |d: &Data| match d {
            Data::Window(w) => w.spare.len(),
            Data::Map(_) => unreachable!(),
        };
        d.load(1010, end).unwrap();
        assert_eq!(window(&d), (0, 1, 1000 + step));
        // A record across the first chunk's end comes whole from the second.
        let a = 1000 + step - 100;
        d.load(a + 5000, end).unwrap();
        assert_eq!(window(&d), (0, 2, 1000 + 2 * step));
        assert_eq!(d.get(a, a + 5000), &bytes[a..a + 5000]);
        assert_eq!(d.get(2000, 2100), &bytes[2000..2100]);
        // Released up to inside the second chunk: the first goes, the second stays.
        d.release(0, 1000 + step + 10);
        assert_eq!(window(&d), (1, 1, 1000 + 2 * step));
        assert_eq!(spare(&d), 1, "the dropped chunk's map is kept");
        assert_eq!(d.get(a + 200, a + 300), &bytes[a + 200..a + 300]);
        // The next chunk reuses it: its old bytes are overwritten, none served.
        d.load(1000 + 2 * step + 10, end).unwrap();
        assert_eq!(spare(&d), 0);
        let b = 1000 + 2 * step - 50;
        assert_eq!(d.get(b, b + 100), &bytes[b..b + 100]);
        d.load(end, end).unwrap();
        assert_eq!(window(&d), (1, 6, end));
        assert_eq!(d.get(399_990, 400_000), &bytes[399_990..]);
        assert!(d.load(400_001, end).is_err());
        // The last chunk always stays; of the five dropped, two maps are kept.
        d.release(0, end);
        assert_eq!(window(&d), (6, 1, end));
        assert_eq!(spare(&d), SPARE);
    }
}
