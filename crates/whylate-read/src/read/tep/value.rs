//! Raw field values: byte order, integers of any width, C strings.

use super::format::Field;

/// A decoded field value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Unsigned integer.
    U(u64),
    /// Signed integer.
    I(i64),
    /// Character data up to its first NUL.
    Str(&'a [u8]),
    /// Any other array.
    Bytes(&'a [u8]),
}

/// Byte order of the traced machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Endian {
    /// Big endian.
    pub big: bool,
}

impl Endian {
    /// Reads an unsigned integer of `size` (1, 2, 4, 8) bytes; None when out of range.
    #[inline(always)]
    pub fn uint(self, d: &[u8], off: usize, size: usize) -> Option<u64> {
        // Fast path: one 8-byte load, then a shift, when 8 bytes are there to load. Fields
        // are read once or more per record; a jump on (size, order) cost ~40 instructions.
        if let (Some(w), 1..=8) = (d.get(off..off.wrapping_add(8)), size) {
            if size.is_power_of_two() {
                let w: [u8; 8] = w.try_into().ok()?;
                let drop = (64 - size * 8) as u32;
                // drop < 64: size is at least 1.
                return Some(if self.big {
                    u64::from_be_bytes(w) >> drop
                } else {
                    (u64::from_le_bytes(w) << drop) >> drop
                });
            }
        }
        let b = d.get(off..off + size)?;
        Some(match (size, self.big) {
            (1, _) => b[0] as u64,
            (2, false) => u16::from_le_bytes([b[0], b[1]]) as u64,
            (2, true) => u16::from_be_bytes([b[0], b[1]]) as u64,
            (4, false) => u32::from_le_bytes(b.try_into().ok()?) as u64,
            (4, true) => u32::from_be_bytes(b.try_into().ok()?) as u64,
            (8, false) => u64::from_le_bytes(b.try_into().ok()?),
            (8, true) => u64::from_be_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }
    /// u32 at `off`.
    #[inline]
    pub fn u32(self, d: &[u8], off: usize) -> Option<u32> {
        self.uint(d, off, 4).map(|v| v as u32)
    }
    /// u64 at `off`.
    #[inline]
    pub fn u64(self, d: &[u8], off: usize) -> Option<u64> {
        self.uint(d, off, 8)
    }
}

/// A planned field's integer value, 0 when the format lacks it. Always inlined into the
/// decoder: as a call it cost about as much as the read itself.
#[inline(always)]
pub(super) fn opt_int(f: &Option<Field>, data: &[u8], e: Endian) -> i64 {
    match f {
        Some(f) => f.int(data, e),
        None => 0,
    }
}

/// [`opt_int`] without sign extension.
#[inline(always)]
pub(super) fn opt_uint(f: &Option<Field>, data: &[u8], e: Endian) -> u64 {
    match f {
        Some(f) => f.uint(data, e),
        None => 0,
    }
}

#[inline]
pub(super) fn sign_extend(v: u64, size: u32) -> i64 {
    match size {
        1 => v as u8 as i8 as i64,
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    }
}

pub(super) fn cstr(b: &[u8]) -> &[u8] {
    &b[..memchr::memchr(0, b).unwrap_or(b.len())]
}
