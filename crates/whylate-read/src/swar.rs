//! Eight bytes at a time in a `u64` ("SIMD within a register") for the hottest scans of
//! the text readers and the string interner: hex arguments of `sys_enter`, the end of a
//! word, short key compares. Portable, no unsafe; each helper has a byte-at-a-time twin
//! in the tests that it must agree with.

/// Value of each byte as a hex digit, 0xff when it is not one.
pub(crate) const HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

#[inline(always)]
fn load(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// High bit set in each byte of `x` that is zero. Only the lowest flag is exact (a borrow
/// can flag the byte above a zero byte), which is all the callers use.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// Index of the first space or tab in the eight bytes at `b[at..]`, 8 if none; None when
/// fewer than eight bytes are left.
#[inline(always)]
pub(crate) fn blank8(b: &[u8], at: usize) -> Option<usize> {
    let x = load(b, at)?;
    let m = zero_bytes(x ^ (LO * b' ' as u64)) | zero_bytes(x ^ (LO * b'\t' as u64));
    Some(m.trailing_zeros() as usize / 8)
}

/// `a == b` for slices of one length, eight bytes per compare: memos check the key of
/// every line, and a call into `memcmp` costs more than the compare at these lengths.
#[inline(always)]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    if n < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    let mut k = 0;
    while k + 8 < n {
        if load(a, k) != load(b, k) {
            return false;
        }
        k += 8;
    }
    // The last eight bytes, overlapping what was compared.
    load(a, n - 8) == load(b, n - 8)
}

/// Per byte of `x`: high bit set when it is an ASCII hex digit (either case). Exact for
/// every byte: the sums stay inside their byte.
#[inline(always)]
fn hex_flags(x: u64) -> u64 {
    let ascii = !x & HI;
    let y = x & !HI;
    let ge_0 = y.wrapping_add(LO * 0x50) & HI;
    let le_9 = !y.wrapping_add(LO * 0x46) & HI;
    let low = y | (LO * 0x20);
    let ge_a = low.wrapping_add(LO * 0x1f) & HI;
    let le_f = !low.wrapping_add(LO * 0x19) & HI;
    ascii & ((ge_0 & le_9) | (ge_a & le_f))
}

/// The value of the first `n` (0..=8) hex digits of `x` (first digit in the low byte).
#[inline(always)]
fn hex_value(x: u64, n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    // Nibbles; letters have bit 6 set and are 9 more than their low four bits.
    let mut v = (x & (LO * 0x0f)) + 9 * ((x >> 6) & LO);
    // Drop the bytes after the digits; leading zero nibbles take their place.
    v <<= 8 * (8 - n);
    v = ((v << 4) | (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    v = ((v << 8) | (v >> 16)) & 0x0000_ffff_0000_ffff;
    ((v << 16) | (v >> 32)) & 0xffff_ffff
}

/// The run of hex digits at `b[at..]` (no `0x`): its value and length, None when it is
/// longer than 16 digits. Near the end of `b`, where a wide load does not fit, it goes
/// byte by byte.
#[inline(always)]
pub(crate) fn hex_run(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let Some(x) = load(b, at) else {
        return hex_bytes(b, at, 0, 0);
    };
    let n = (!hex_flags(x) & HI).trailing_zeros() as usize / 8;
    if n < 8 {
        return Some((hex_value(x, n), n));
    }
    let hi = hex_value(x, 8);
    let Some(y) = load(b, at + 8) else {
        return hex_bytes(b, at + 8, hi, 8);
    };
    let m = (!hex_flags(y) & HI).trailing_zeros() as usize / 8;
    if m == 8 && b.get(at + 16).is_some_and(|&c| HEX[c as usize] != 0xff) {
        return None;
    }
    Some(((hi << (4 * m)) | hex_value(y, m), 8 + m))
}

/// [`hex_run`] byte by byte from `b[at..]`, continuing `v` of `n` digits.
#[cold]
fn hex_bytes(b: &[u8], at: usize, mut v: u64, mut n: usize) -> Option<(u64, usize)> {
    for &c in b.get(at..)? {
        let d = HEX[c as usize];
        if d == 0xff {
            break;
        }
        if n == 16 {
            return None;
        }
        v = (v << 4) | d as u64;
        n += 1;
    }
    Some((v, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex_run_ref(b: &[u8], at: usize) -> Option<(u64, usize)> {
        let n = b[at..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if n > 16 {
            return None;
        }
        let v = if n == 0 {
            0
        } else {
            u64::from_str_radix(std::str::from_utf8(&b[at..at + n]).unwrap(), 16).unwrap()
        };
        Some((v, n))
    }

    #[test]
    fn hex_run_agrees_with_bytewise_on_every_byte_and_length() {
        // Every byte value after every run length, with runs of mixed-case digits.
        let digits = b"0123456789abcdefABCDEF";
        for len in 0..=18 {
            for stop in 0..=255u8 {
                let mut b: Vec<u8> = (0..len).map(|i| digits[(i * 7 + len) % 22]).collect();
                b.push(stop);
                // With room for the wide loads, and cut short (the byte-wise tail).
                for pad in [16, 0, 3, 9] {
                    let mut b = b.clone();
                    b.extend(std::iter::repeat_n(b' ', pad));
                    for at in [0, 1] {
                        if at <= b.len() {
                            assert_eq!(hex_run(&b, at), hex_run_ref(&b, at), "{b:?} at {at}");
                        }
                    }
                }
            }
        }
        // Bytes just outside the digit ranges.
        for c in [
            b'/', b':', b'@', b'G', b'`', b'g', 0x7f, 0x80, 0xb0, 0xe1, 0xff,
        ] {
            let mut b = b"12345678".to_vec();
            b[3] = c;
            b.extend_from_slice(&[b' '; 8]);
            assert_eq!(hex_run(&b, 0), hex_run_ref(&b, 0), "{c:#x}");
        }
        assert_eq!(hex_run(b"7ffff2e0c8b0, 7f", 0), Some((0x7ffff2e0c8b0, 12)));
        assert_eq!(hex_run(b"ffffffffffffffff)", 0), Some((u64::MAX, 16)));
        assert_eq!(hex_run(b"1ffffffffffffffff)", 0), None);
        assert_eq!(hex_run(b"0)", 0), Some((0, 1)));
        assert_eq!(
            hex_run(b"ffffffffffffffff)       ", 0),
            Some((u64::MAX, 16))
        );
    }

    #[test]
    fn same_is_slice_equality() {
        let base: Vec<u8> = (0..40u8).collect();
        for n in 0..40 {
            for flip in 0..=n {
                let a = &base[..n];
                let mut b = a.to_vec();
                if flip < n {
                    b[flip] ^= 0x40;
                }
                assert_eq!(same(a, &b), a == &b[..], "{n} {flip}");
            }
            assert!(!same(&base[..n], &base[..n + 1]));
        }
    }

    #[test]
    fn blank8_finds_the_first_blank() {
        for i in 0..=8 {
            for c in [b' ', b'\t'] {
                let mut b = b"abcdefgh!".to_vec();
                if i < 8 {
                    b[i] = c;
                    if i + 1 < 8 {
                        b[i + 1] = b' ';
                    }
                }
                assert_eq!(blank8(&b, 0), Some(i));
            }
        }
        // A zero byte before a blank must not hide it.
        assert_eq!(blank8(b"a\0 bcdefg", 0), Some(2));
        assert_eq!(blank8(b"\x21\x20\x00\x00\x00\x00\x00\x00", 0), Some(1));
        assert_eq!(blank8(b"short", 0), None);
    }
}
