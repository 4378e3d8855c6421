//! The outer `Trace` stream, packet by packet: a Perfetto trace is the message `Trace`,
//! whose only field is `repeated TracePacket packet = 1`, so the file is a run of
//! (tag 0x0a, length, packet bytes). Only those keys and lengths are read here; each
//! packet's contents are decoded by prost. Memory is one read buffer (grown for a packet
//! larger than it, and shrunk back after).

use std::io::{self, Read};

/// The read buffer's usual size.
pub const CHUNK: usize = 1 << 20;

/// A packet larger than this is taken for damage: Perfetto's writers cut their data into
/// chunks of at most a few hundred KiB, and a packet is rebuilt from them.
pub const MAX_PACKET: u64 = 256 << 20;

/// What comes next in the stream.
pub(super) enum Next<'a> {
    /// A packet starting at byte `at` (its first content byte).
    Packet { at: u64, bytes: &'a [u8] },
    /// A field of `Trace` other than `packet` (field number, its offset): skipped.
    Stray { field: u32 },
    /// The stream ended between packets.
    End,
    /// The stream ended inside a packet whose content starts at `at`: `have` of its
    /// `want` bytes are there.
    Cut { at: u64, have: u64, want: u64 },
    /// Bytes that are not a `Trace` field at `at`: the rest is not read.
    Garbage { at: u64, why: String },
    /// A packet of `len` bytes at `at` at least as large as the walker's limit for
    /// packets it holds ([`Packets::holding`]): passed over, its bytes not read here.
    Large { at: u64, len: u64 },
    /// A packet read only in part (a large bundle, [`super::large`]): why the rest was not.
    Bad { at: u64, len: u64, why: String },
}

/// Walks a `Trace` from a reader.
pub(super) struct Packets<R> {
    rd: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Offset of `buf[start]` in the (decompressed) stream.
    offset: u64,
    chunk: usize,
    eof: bool,
    /// Packets from this size on are passed over ([`Next::Large`]).
    hold_below: u64,
}

impl<R: Read> Packets<R> {
    /// A walker reading `chunk` bytes at a time (tests use a few bytes to put every
    /// packet across a buffer boundary).
    pub fn new(rd: R, chunk: usize) -> Self {
        let chunk = chunk.max(1);
        Packets {
            rd,
            buf: vec![0; chunk],
            start: 0,
            end: 0,
            offset: 0,
            chunk,
            eof: false,
            hold_below: u64::MAX,
        }
    }

    /// A walker that passes over packets of `limit` bytes or more instead of holding
    /// them ([`Next::Large`]): the caller reads those at their place in the file.
    pub fn holding(mut self, limit: u64) -> Self {
        self.hold_below = limit;
        self
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Makes `need` bytes available from `start` (fewer only at the end of the stream).
    fn fill(&mut self, need: usize) -> io::Result<()> {
        if self.end - self.start >= need || self.eof {
            return Ok(());
        }
        // Move what is left to the front, and grow for a packet larger than the buffer:
        // by doubling as its bytes come, so a length the stream does not hold (a cut
        // file, the head the format is sniffed on) costs what the stream holds.
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        while self.end < need {
            if self.end == self.buf.len() {
                let grown = need.min(self.buf.len().saturating_mul(2)).max(self.chunk);
                self.buf.resize(grown, 0);
            }
            let n = match self.rd.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
                break;
            }
            self.end += n;
        }
        Ok(())
    }

    /// A varint at `start + at`, with its length; None when the stream ends inside it or
    /// it runs past 10 bytes.
    fn varint(&mut self, at: usize) -> io::Result<Option<(u64, usize)>> {
        self.fill(at + 10)?;
        let b = &self.buf[self.start + at..self.end];
        let mut v = 0u64;
        for (i, &c) in b.iter().take(10).enumerate() {
            v |= u64::from(c & 0x7f) << (7 * i);
            if c & 0x80 == 0 {
                return Ok(Some((v, i + 1)));
            }
        }
        Ok(None)
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    /// The next packet (or what stands instead); the packet's bytes are valid until the
    /// next call.
    pub fn next(&mut self) -> io::Result<Next<'_>> {
        // A buffer grown for one large packet goes back to its size once that is read.
        if self.buf.len() > self.chunk && self.end - self.start <= self.chunk {
            let mut small = vec![0; self.chunk];
            small[..self.end - self.start].copy_from_slice(&self.buf[self.start..self.end]);
            self.buf = small;
            self.end -= self.start;
            self.start = 0;
        }
        self.fill(1)?;
        if self.start == self.end {
            return Ok(Next::End);
        }
        let at = self.offset;
        let Some((key, klen)) = self.varint(0)? else {
            return Ok(self.cut_or_garbage(at, "a field key longer than 10 bytes"));
        };
        let (field, wire) = ((key >> 3) as u32, key & 7);
        if field == 0 {
            return Ok(Next::Garbage {
                at,
                why: format!("expected a packet (tag 0x0a), found the byte 0x{key:02x}"),
            });
        }
        let len = match wire {
            0 => match self.varint(klen)? {
                Some((_, n)) => {
                    self.consume(klen + n);
                    return Ok(Next::Stray { field });
                }
                None => return Ok(self.cut_or_garbage(at, "a varint longer than 10 bytes")),
            },
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                self.fill(klen + n)?;
                if self.end - self.start < klen + n {
                    return Ok(Next::Cut {
                        at,
                        have: (self.end - self.start) as u64,
                        want: (klen + n) as u64,
                    });
                }
                self.consume(klen + n);
                return Ok(Next::Stray { field });
            }
            2 => match self.varint(klen)? {
                Some((len, n)) => {
                    self.consume(klen + n);
                    len
                }
                None => return Ok(self.cut_or_garbage(at, "a length longer than 10 bytes")),
            },
            _ => {
                return Ok(Next::Garbage {
                    at,
                    why: format!(
                        "expected a packet (tag 0x0a), found field {field} of wire type {wire}"
                    ),
                })
            }
        };
        let at = self.offset;
        if len > MAX_PACKET {
            return Ok(Next::Garbage {
                at,
                why: format!(
                    "a packet of {len} bytes, over the {} MiB whylate takes for one (damage?)",
                    MAX_PACKET >> 20
                ),
            });
        }
        if field == 1 && len >= self.hold_below {
            return self.pass_over(at, len);
        }
        let len = len as usize;
        self.fill(len)?;
        let have = self.end - self.start;
        if have < len {
            self.consume(have);
            return Ok(Next::Cut {
                at,
                have: have as u64,
                want: len as u64,
            });
        }
        let s = self.start;
        self.consume(len);
        if field != 1 {
            return Ok(Next::Stray { field });
        }
        Ok(Next::Packet {
            at,
            bytes: &self.buf[s..s + len],
        })
    }

    /// Reads past the `len` bytes of a packet at `at` without keeping them.
    fn pass_over(&mut self, at: u64, len: u64) -> io::Result<Next<'static>> {
        let mut left = len;
        while left > 0 {
            self.fill(1)?;
            let have = (self.end - self.start) as u64;
            if have == 0 {
                return Ok(Next::Cut {
                    at,
                    have: len - left,
                    want: len,
                });
            }
            let n = have.min(left);
            self.consume(n as usize);
            left -= n;
        }
        Ok(Next::Large { at, len })
    }

    /// At the end of the stream a varint cut short is a cut; elsewhere it is damage.
    fn cut_or_garbage(&mut self, at: u64, why: &str) -> Next<'static> {
        let have = (self.end - self.start) as u64;
        if self.eof && have < 10 {
            self.consume(have as usize);
            return Next::Cut { at, have, want: 0 };
        }
        Next::Garbage {
            at,
            why: why.to_string(),
        }
    }
}

/// `TracePacket` fields that are about the packet, not its contents.
const META: [u32; 12] = [3, 8, 10, 12, 13, 41, 42, 58, 59, 79, 87, 98];

/// True when `packet` holds field 1 (a bundle) anywhere: prost keeps the last of a oneof's
/// fields, so a bundle after another kind's field is still the packet's.
pub(super) fn holds_bundle(packet: &[u8]) -> bool {
    let mut p = Packets::new(packet, packet.len().max(1));
    loop {
        match p.next() {
            Ok(Next::Packet { .. }) => return true,
            Ok(Next::Stray { .. }) => {}
            _ => return false,
        }
    }
}

/// The number of the first field of `packet` that is its contents (not its timestamp,
/// sequence or interning): what kind of packet it is. Only keys and lengths are read.
pub(super) fn first_data_field(packet: &[u8]) -> Option<u32> {
    let mut p = Packets::new(packet, packet.len().max(1));
    loop {
        match p.next().ok()? {
            Next::Stray { field, .. } if !META.contains(&field) => return Some(field),
            Next::Packet { .. } => return Some(1),
            Next::Stray { .. } => {}
            _ => return None,
        }
    }
}
