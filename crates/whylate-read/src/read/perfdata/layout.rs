//! The perf.data header and feature table checked against the file before
//! `linux-perf-data` reads them: it trusts every size and count it parses.

use crate::read::unpack::Bytes;
use linux_perf_data::Feature;

// perf header feature bits whose contents linux-perf-data parses at open or on our asking.
const F_CMDLINE: usize = Feature::CMDLINE.0 as usize;
const F_EVENT_DESC: usize = Feature::EVENT_DESC.0 as usize;

/// linux-perf-data trusts the sizes and counts in the header and in the sections it parses
/// (a corrupt one makes it allocate terabytes, which aborts, or divide by zero): check
/// everything it will read against the file first. Errors carry the byte offset.
/// Returns the data section: (offset, size).
pub(super) fn check_layout(file: &Bytes, flen: u64) -> Result<(u64, u64), (u64, String)> {
    let mut h = [0u8; 104];
    file.read_exact_at(&mut h, 0).map_err(|_| {
        (
            0,
            format!("{flen} bytes: shorter than a perf.data header (104)"),
        )
    })?;
    let be = h.starts_with(b"2ELIFREP");
    let rd = |b: &[u8], o: usize, n: usize| uint(b, o, n, be);
    let r64 = |o: usize| rd(&h, o, 8).unwrap_or(0);
    if r64(8) != 104 {
        return Err((8, format!("header size {}, expected 104", r64(8))));
    }
    let attr_size = r64(16);
    if !(64..=4096).contains(&attr_size) {
        return Err((16, format!("attr size {attr_size}, expected 64..4096")));
    }
    let section = |at: usize, what: &str| -> Result<(u64, u64), (u64, String)> {
        let (off, size) = (r64(at), r64(at + 8));
        match off.checked_add(size) {
            Some(end) if end <= flen => Ok((off, size)),
            _ => Err((
                at as u64,
                format!(
                    "the {what} section ends at byte {} but the file has {flen} bytes: the file is cut short (perf.data keeps its event formats after the data, so a cut file cannot be decoded)",
                    off as u128 + size as u128
                ),
            )),
        }
    };
    section(24, "attrs")?;
    let (doff, dsize) = section(40, "data")?;
    section(56, "event types")?;
    // The feature table follows the data: one (offset, size) per bit set, in bit order.
    let mut table = doff + dsize;
    for bit in 0..256 {
        if h[72 + bit / 8] & (1 << (bit % 8)) == 0 {
            continue;
        }
        let mut e = [0u8; 16];
        file.read_exact_at(&mut e, table).map_err(|_| {
            (
                table,
                "the feature table is cut short (the file ends inside it)".to_string(),
            )
        })?;
        let (off, size) = (rd(&e, 0, 8).unwrap_or(0), rd(&e, 8, 8).unwrap_or(0));
        if off.checked_add(size).is_none_or(|end| end > flen) {
            return Err((
                table,
                format!("feature {bit}'s section ({size} bytes at {off}) runs past the end of the file ({flen} bytes)"),
            ));
        }
        if bit == F_CMDLINE || bit == F_EVENT_DESC {
            let mut b = vec![0u8; size as usize];
            file.read_exact_at(&mut b, off)
                .map_err(|e| (off, format!("feature {bit}: {e}")))?;
            let ok = match bit {
                F_CMDLINE => rd(&b, 0, 4).is_some_and(|n| n <= size / 4),
                _ => event_desc_fits(&b, be),
            };
            if !ok {
                return Err((
                    off,
                    format!("feature {bit}'s counts do not fit its {size} bytes"),
                ));
            }
        }
        table += 16;
    }
    Ok((doff, dsize))
}

/// The `n`-byte unsigned integer at `o`, in the file's byte order.
fn uint(b: &[u8], o: usize, n: usize, be: bool) -> Option<u64> {
    let b = b.get(o..o.checked_add(n)?)?;
    let mut v = 0u64;
    for i in 0..n {
        v = v << 8 | b[if be { i } else { n - 1 - i }] as u64;
    }
    Some(v)
}

/// HEADER_EVENT_DESC: nr, attr_size, then per attr: attr, nr_ids, string (len + bytes), ids.
fn event_desc_fits(b: &[u8], be: bool) -> bool {
    let rd = |b: &[u8], o: usize, n: usize| uint(b, o, n, be);
    let walk = || -> Option<()> {
        let nr = rd(b, 0, 4)?;
        let attr_size = rd(b, 4, 4)? as usize;
        if attr_size < 64 {
            return None;
        }
        let mut p = 8usize;
        for _ in 0..nr {
            p = p.checked_add(attr_size)?;
            let ids = rd(b, p, 4)? as usize;
            let len = rd(b, p + 4, 4)? as usize;
            p = p.checked_add(8 + len)?.checked_add(ids.checked_mul(8)?)?;
            if p > b.len() {
                return None;
            }
        }
        Some(())
    };
    walk().is_some()
}
