//! What a compressed file declares about its decompressed bytes, read without
//! decompressing it: the size (zstd frame headers, the xz index) and, for xz, where
//! decompression may start (each block is independent).
//!
//! A binary trace read at offsets in place ([`super::unpack`]) needs its size up front.
//! gzip declares none it can be trusted for (its trailer holds the last member's size
//! modulo 4 GiB): there the size is learnt by decompressing the file once.

use std::io;

/// What a whole compressed file declares (see the module doc).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Declared {
    /// The decompressed size.
    pub size: u64,
    /// The blocks of a one-stream xz file, in order; empty for zstd (a block needs the
    /// window before it) and for xz files of several streams.
    blocks: Vec<XzBlock>,
    /// That stream's header, and where its index starts in the file.
    header: [u8; 12],
    index_at: u64,
}

/// One xz block: where its bytes start, decompressed and in the file, and its index
/// record (unpadded size, decompressed size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct XzBlock {
    raw: u64,
    at: u64,
    unpadded: u64,
    len: u64,
}

impl Declared {
    /// The last block start at or before decompressed offset `off` other than the file's
    /// own start: (block number, its decompressed offset).
    pub fn start_before(&self, off: u64) -> Option<(usize, u64)> {
        let k = self
            .blocks
            .partition_point(|b| b.raw <= off)
            .checked_sub(1)?;
        (k > 0).then(|| (k, self.blocks[k].raw))
    }

    /// A stream a decoder reads from block `k` on: the stream header, the file's blocks
    /// from `k` (`file` is the whole compressed file), then an index and footer made for
    /// those blocks, so the decoder ends cleanly as on a file of its own.
    pub fn stream_from<F: io::Read + io::Seek>(
        &self,
        k: usize,
        mut file: F,
    ) -> io::Result<impl io::Read + use<F>> {
        use io::Read;
        let blocks = &self.blocks[k..];
        let from = blocks.first().map_or(self.index_at, |b| b.at);
        file.seek(io::SeekFrom::Start(from))?;
        let mut index = vec![0u8];
        put_varint(&mut index, blocks.len() as u64);
        for b in blocks {
            put_varint(&mut index, b.unpadded);
            put_varint(&mut index, b.len);
        }
        index.resize(index.len().next_multiple_of(4), 0);
        index.extend(crc32(&index).to_le_bytes());
        // The footer: its CRC32 over backward size and the header's stream flags.
        let mut footer = ((index.len() / 4 - 1) as u32).to_le_bytes().to_vec();
        footer.extend(&self.header[6..8]);
        let mut tail = index;
        tail.extend(crc32(&footer).to_le_bytes());
        tail.extend(footer);
        tail.extend(b"YZ");
        Ok(io::Cursor::new(self.header)
            .chain(file.take(self.index_at - from))
            .chain(io::Cursor::new(tail)))
    }
}

/// What `data` (a whole compressed file) declares when its format declares the size of
/// every part and nothing is cut; None otherwise.
pub fn declared(data: &[u8]) -> Option<Declared> {
    if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        let size = zstd_size(data)?;
        Some(Declared {
            size,
            ..Default::default()
        })
    } else if data.starts_with(&XZ_MAGIC) {
        xz_declared(data)
    } else {
        None
    }
}

/// The decompressed size of a zstd file, when every frame declares its size and the last
/// one is whole.
fn zstd_size(data: &[u8]) -> Option<u64> {
    use zstd::zstd_safe;
    let (mut at, mut total) = (0usize, 0u64);
    while at < data.len() {
        let rest = &data[at..];
        let n = zstd_safe::get_frame_content_size(rest).ok()??;
        let c = zstd_safe::find_frame_compressed_size(rest).ok()?;
        if c == 0 || c > rest.len() {
            return None;
        }
        total = total.checked_add(n)?;
        at += c;
    }
    (at > 0).then_some(total)
}

const XZ_MAGIC: [u8; 6] = [0xfd, b'7', b'z', b'X', b'Z', 0];
/// Stream header and footer: 12 bytes each.
const XZ_EDGE: usize = 12;

/// The decompressed size of an xz file: the sum of every stream's index, each stream
/// found from the end backwards (footer → index → blocks → header), as `xz --list`
/// does; and, when the file is one stream, where each block starts. None when a footer,
/// an index or a header is not where its neighbour says, or a checksum fails (a cut or
/// damaged file is spooled and read as far as it goes).
fn xz_declared(data: &[u8]) -> Option<Declared> {
    let mut end = data.len();
    let (mut size, mut streams, mut last) = (0u64, 0, Vec::new());
    while end > 0 {
        // Stream padding: zero bytes, four at a time, between and after streams.
        while end >= 4 && data[end - 4..end] == [0; 4] {
            end -= 4;
        }
        if end == 0 {
            break;
        }
        let (start, blocks) = xz_stream(&data[..end])?;
        size = blocks.iter().try_fold(size, |t, b| t.checked_add(b.1))?;
        (streams, last, end) = (streams + 1, blocks, start);
    }
    if streams == 0 {
        return None;
    }
    let mut d = Declared {
        size,
        header: data[..XZ_EDGE].try_into().ok()?,
        ..Default::default()
    };
    if streams == 1 {
        // Blocks follow the header, each padded to four bytes; the index follows them.
        let (mut raw, mut at) = (0u64, XZ_EDGE as u64);
        for (unpadded, len) in last {
            d.blocks.push(XzBlock {
                raw,
                at,
                unpadded,
                len,
            });
            raw += len;
            at += (unpadded + 3) & !3;
        }
        d.index_at = at;
    }
    Some(d)
}

/// The last stream of `data` (which ends with its footer): where it starts and its
/// blocks as its index lists them (unpadded size, decompressed size).
fn xz_stream(data: &[u8]) -> Option<(usize, Vec<(u64, u64)>)> {
    let footer = data.get(data.len().checked_sub(XZ_EDGE)?..)?;
    if footer[10..] != *b"YZ" || crc32(&footer[4..10]) != le32(&footer[..4]) {
        return None;
    }
    let index_len = (le32(&footer[4..8]) as usize + 1) * 4;
    let index_at = (data.len() - XZ_EDGE).checked_sub(index_len)?;
    let blocks = xz_index(&data[index_at..data.len() - XZ_EDGE])?;
    let on_disk = blocks
        .iter()
        .try_fold(0u64, |t, b| t.checked_add(b.0.checked_add(3)? & !3))?;
    let start = index_at.checked_sub(usize::try_from(on_disk).ok()?.checked_add(XZ_EDGE)?)?;
    let header = &data[start..start + XZ_EDGE];
    // The header's stream flags must be the footer's.
    if header[..6] != XZ_MAGIC || header[6..8] != footer[8..10] {
        return None;
    }
    Some((start, blocks))
}

/// An xz index's records: (unpadded size, decompressed size) of each block.
fn xz_index(index: &[u8]) -> Option<Vec<(u64, u64)>> {
    let body_len = index.len().checked_sub(4)?;
    if index.first() != Some(&0) || crc32(&index[..body_len]) != le32(&index[body_len..]) {
        return None;
    }
    let mut at = 1;
    let records = varint(index, &mut at)?;
    // Each record takes two bytes at least: a corrupt count cannot allocate much.
    let mut blocks = Vec::with_capacity((records as usize).min(index.len() / 2));
    for _ in 0..records {
        let unpadded = varint(index, &mut at)?;
        blocks.push((unpadded, varint(index, &mut at)?));
    }
    // Then padding to four bytes, zeros.
    let padding = index.get(at..body_len)?;
    (padding.len() < 4 && padding.iter().all(|&b| b == 0)).then_some(blocks)
}

/// Appends `v` as an xz multibyte integer.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// An xz multibyte integer (seven bits a byte, low first, at most nine bytes).
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn crc32(b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(b);
    h.finalize()
}

/// What `f` declares (see [`declared`]); None when it declares nothing or cannot be
/// mapped.
pub fn of_file(f: &std::fs::File) -> io::Result<Option<Declared>> {
    // SAFETY: a read-only map of a file only read here; a file rewritten under us could
    // fault, as for any reader that maps its input.
    match unsafe { memmap2::Mmap::map(f) } {
        Ok(m) => Ok(declared(&m)),
        Err(_) => Ok(None),
    }
}

/// A gzip file's decompressed size modulo 4 GiB, as its trailer gives it (the last
/// member's); None when it is not gzip. Only a check of a size found otherwise: a cut
/// file's last bytes are not a trailer, and agree with that size by chance only.
pub fn gzip_size_mod_4g(f: &std::fs::File) -> io::Result<Option<u32>> {
    use std::os::unix::fs::FileExt;
    let (mut magic, mut isize) = ([0u8; 2], [0u8; 4]);
    let len = f.metadata()?.len();
    if len < 18 || f.read_at(&mut magic, 0)? < 2 || magic != [0x1f, 0x8b] {
        return Ok(None);
    }
    f.read_exact_at(&mut isize, len - 4)?;
    Ok(Some(u32::from_le_bytes(isize)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    fn size(data: &[u8]) -> Option<u64> {
        declared(data).map(|d| d.size)
    }

    /// `data` as one xz stream, a block per `block` bytes (each flush ends a block).
    pub(crate) fn xz_blocks(data: &[u8], block: usize) -> Vec<u8> {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 0);
        for part in data.chunks(block.max(1)) {
            e.write_all(part).unwrap();
            e.flush().unwrap();
        }
        e.finish().unwrap()
    }

    #[test]
    fn xz_sizes_come_from_the_index_of_every_stream() {
        let a: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let one = xz_blocks(&a, usize::MAX);
        assert_eq!(size(&one), Some(300_000));
        // Two streams with padding between and after (`cat a.xz b.xz`, xz's padding).
        let mut two = one.clone();
        two.extend([0u8; 8]);
        two.extend(xz_blocks(&a[..1000], 100));
        two.extend([0u8; 4]);
        assert_eq!(size(&two), Some(301_000));
        // An empty input is one stream with no block.
        assert_eq!(size(&xz_blocks(b"", 1)), Some(0));
        // Cut anywhere, or a byte of the index or footer flipped: nothing declared.
        for cut in [1, 4, 12, 13, one.len() / 2, one.len() - 1] {
            assert_eq!(size(&one[..one.len() - cut]), None, "cut {cut}");
        }
        for at in [one.len() - 13, one.len() - 8, one.len() - 1] {
            let mut bad = one.clone();
            bad[at] ^= 1;
            assert_eq!(size(&bad), None, "flipped at {at}");
        }
    }

    #[test]
    fn a_decoder_starts_at_any_xz_block_and_ends_cleanly() {
        let a: Vec<u8> = (0..250_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.xz");
        std::fs::write(&p, xz_blocks(&a, 100_000)).unwrap();
        let d = of_file(&std::fs::File::open(&p).unwrap()).unwrap().unwrap();
        assert_eq!(d.size, 250_000);
        assert_eq!(d.start_before(99_999), None);
        assert_eq!(d.start_before(100_000), Some((1, 100_000)));
        assert_eq!(d.start_before(249_999), Some((2, 200_000)));
        for k in 1..=2 {
            let s = d.stream_from(k, std::fs::File::open(&p).unwrap()).unwrap();
            let mut out = Vec::new();
            // The index and footer made for these blocks pass liblzma's checks: no error.
            std::io::Read::read_to_end(&mut liblzma::read::XzDecoder::new(s), &mut out).unwrap();
            assert!(out[..] == a[k * 100_000..], "from block {k}");
        }
        // One stream of several parts has no other start.
        let mut two = xz_blocks(&a, 100_000);
        two.extend(xz_blocks(&a, 100_000));
        assert_eq!(declared(&two).unwrap().start_before(200_000), None);
    }

    #[test]
    fn zstd_sizes_add_up_over_frames_and_gzip_declares_none() {
        let data = vec![7u8; 100_000];
        let mut two = zstd::bulk::compress(&data[..], 3).unwrap();
        two.extend(zstd::bulk::compress(&data[..50_000], 3).unwrap());
        assert_eq!(size(&two), Some(150_000));
        assert_eq!(size(&two[..two.len() - 5]), None);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        assert_eq!(size(&gz.finish().unwrap()), None);
        assert_eq!(size(b"plain"), None);
    }
}
