//! The kernel ring buffer's sub-buffer ("page") layout, as `trace_pipe_raw` hands it out
//! and trace.dat stores it: a header (timestamp, commit word), then records each led by
//! a 32-bit (type_len:5, time_delta:27) word. Parsed like libtraceevent's kbuffer.

use super::tep::Endian;

/// Where a page's header fields sit, read from `events/header_page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the u64 timestamp.
    pub ts_off: usize,
    /// Offset of the commit word.
    pub commit_off: usize,
    /// Size of the commit word (the kernel's long).
    pub commit_size: usize,
    /// Offset where records start.
    pub data_off: usize,
    /// Bytes of records a page holds, as `header_page` declares them (its `data` field):
    /// with `data_off`, the page size the kernel wrote, to check the file's own against.
    pub data_size: Option<usize>,
    /// Byte order.
    pub endian: Endian,
}

impl PageLayout {
    /// The 64-bit little-endian layout every x86_64/arm64 kernel uses.
    pub fn default_64() -> Self {
        PageLayout {
            ts_off: 0,
            commit_off: 8,
            commit_size: 8,
            data_off: 16,
            data_size: None,
            endian: Endian::default(),
        }
    }

    /// Reads the layout from `header_page` text; falls back to the long size when a
    /// field is missing (very old kernels).
    pub fn from_header_page(text: &str, long_size: usize, endian: Endian) -> Self {
        let mut l = PageLayout {
            ts_off: 0,
            commit_off: 8,
            commit_size: long_size,
            data_off: 8 + long_size,
            data_size: None,
            endian,
        };
        for line in text.lines() {
            if let Some(f) = super::tep::parse_field(line) {
                match &*f.name {
                    "timestamp" => l.ts_off = f.offset as usize,
                    "commit" => {
                        l.commit_off = f.offset as usize;
                        l.commit_size = f.size as usize;
                    }
                    "data" => {
                        l.data_off = f.offset as usize;
                        l.data_size = Some(f.size as usize);
                    }
                    _ => {}
                }
            }
        }
        l
    }
}

const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

/// What one step through a page yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A record: its timestamp and its byte range within the page.
    Record {
        /// Timestamp (trace clock units).
        ts: u64,
        /// Start of the payload in the page.
        start: usize,
        /// End of the payload in the page.
        end: usize,
    },
}

/// A cursor over the records of one page.
#[derive(Clone, Debug)]
pub struct PageCursor {
    /// Timestamp of the last record (running sum of deltas).
    pub ts: u64,
    pos: usize,
    end: usize,
    /// Events lost before this page: `Some(None)` when the kernel only said "some".
    pub missed: Option<Option<u64>>,
    /// Set when a record header pointed past the page end (a corrupt page).
    pub corrupt: bool,
}

impl PageCursor {
    /// Starts on `page` (a whole sub-buffer). None when the header itself is unreadable.
    pub fn new(page: &[u8], l: &PageLayout) -> Option<Self> {
        let e = l.endian;
        let ts = e.u64(page, l.ts_off)?;
        let commit = e.uint(page, l.commit_off, l.commit_size)?;
        let len = (commit & COMMIT_MASK) as usize;
        let end = (l.data_off + len).min(page.len());
        let missed = if commit & MISSED_EVENTS != 0 {
            if commit & MISSED_STORED != 0 {
                Some(e.uint(page, end, l.commit_size))
            } else {
                Some(None)
            }
        } else {
            None
        };
        Some(PageCursor {
            ts,
            pos: l.data_off,
            end,
            missed,
            corrupt: l.data_off + len > page.len(),
        })
    }

    /// Bytes of records the page holds.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.pos)
    }

    /// True when the page holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next record of `page`, or None at its end.
    #[inline]
    pub fn next(&mut self, page: &[u8], e: Endian) -> Option<Item> {
        loop {
            if self.pos + 4 > self.end {
                return None;
            }
            let hdr = e.u32(page, self.pos)?;
            let (type_len, delta) = if e.big {
                (hdr >> 27, (hdr & ((1 << 27) - 1)) as u64)
            } else {
                (hdr & 0x1f, (hdr >> 5) as u64)
            };
            match type_len {
                1..=28 => {
                    let start = self.pos + 4;
                    let end = start + type_len as usize * 4;
                    if end > self.end {
                        self.corrupt = true;
                        return None;
                    }
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = end;
                    return Some(Item::Record {
                        ts: self.ts,
                        start,
                        end,
                    });
                }
                0 => {
                    let len = e.u32(page, self.pos + 4)? as usize;
                    let start = self.pos + 8;
                    let Some(plen) = len.checked_sub(4) else {
                        self.corrupt = true;
                        return None;
                    };
                    let end = start + ((plen + 3) & !3);
                    if end > self.end {
                        self.corrupt = true;
                        return None;
                    }
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = end;
                    return Some(Item::Record {
                        ts: self.ts,
                        start,
                        end: start + plen,
                    });
                }
                29 => {
                    // Padding. With a zero delta it fills the rest of the page; otherwise it is
                    // a discarded record whose length follows and whose delta still counts.
                    if delta == 0 {
                        return None;
                    }
                    let len = e.u32(page, self.pos + 4)? as usize;
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos += 4 + len.max(4);
                }
                30 => {
                    let ext = e.u32(page, self.pos + 4)? as u64;
                    self.ts = self.ts.wrapping_add((ext << 27) + delta);
                    self.pos += 8;
                }
                _ => {
                    // Absolute timestamp (5.x+): the low 59 bits; the top bits stay.
                    let ext = e.u32(page, self.pos + 4)? as u64;
                    let abs = (ext << 27) | delta;
                    self.ts = (self.ts & !((1u64 << 59) - 1)) | abs;
                    self.pos += 8;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(records: &[(u32, &[u8])], commit_flags: u64, extra: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        for (delta, payload) in records {
            let words = payload.len().div_ceil(4) as u32;
            d.extend_from_slice(&((delta << 5) | words).to_le_bytes());
            d.extend_from_slice(payload);
            d.resize(d.len().div_ceil(4) * 4, 0);
        }
        let mut p = vec![0u8; 16];
        p[0..8].copy_from_slice(&1000u64.to_le_bytes());
        p[8..16].copy_from_slice(&(d.len() as u64 | commit_flags).to_le_bytes());
        p.extend_from_slice(&d);
        p.extend_from_slice(extra);
        p.resize(4096, 0);
        p
    }

    #[test]
    fn walks_records_extends_and_padding() {
        let mut p = page(&[(5, b"abcd"), (7, b"efgh1234")], 0, &[]);
        let l = PageLayout::default_64();
        let mut c = PageCursor::new(&p, &l).unwrap();
        assert_eq!(c.missed, None);
        let e = Endian::default();
        assert_eq!(
            c.next(&p, e),
            Some(Item::Record {
                ts: 1005,
                start: 20,
                end: 24
            })
        );
        assert_eq!(
            c.next(&p, e),
            Some(Item::Record {
                ts: 1012,
                start: 28,
                end: 36
            })
        );
        assert_eq!(c.next(&p, e), None);
        // A time extend then a record.
        let ext: u32 = 30 | (3 << 5);
        let mut d = ext.to_le_bytes().to_vec();
        d.extend_from_slice(&1u32.to_le_bytes());
        d.extend_from_slice(&((2u32 << 5) | 1).to_le_bytes());
        d.extend_from_slice(b"wxyz");
        p[8..16].copy_from_slice(&(d.len() as u64).to_le_bytes());
        p[16..16 + d.len()].copy_from_slice(&d);
        let mut c = PageCursor::new(&p, &l).unwrap();
        let Some(Item::Record { ts, .. }) = c.next(&p, e) else {
            panic!()
        };
        assert_eq!(ts, 1000 + (1 << 27) + 3 + 2);
    }

    #[test]
    fn missed_events_are_read_from_the_commit_word() {
        let p = page(
            &[(1, b"abcd")],
            MISSED_EVENTS | MISSED_STORED,
            &42u64.to_le_bytes(),
        );
        let c = PageCursor::new(&p, &PageLayout::default_64()).unwrap();
        assert_eq!(c.missed, Some(Some(42)));
        let p = page(&[(1, b"abcd")], MISSED_EVENTS, &[]);
        let c = PageCursor::new(&p, &PageLayout::default_64()).unwrap();
        assert_eq!(c.missed, Some(None));
    }

    #[test]
    fn a_record_past_the_commit_is_corrupt_not_a_panic() {
        let mut p = page(&[(1, b"abcd")], 0, &[]);
        // type_len 28 = 112 bytes, more than the 8 committed.
        p[16..20].copy_from_slice(&((1u32 << 5) | 28).to_le_bytes());
        let mut c = PageCursor::new(&p, &PageLayout::default_64()).unwrap();
        assert_eq!(c.next(&p, Endian::default()), None);
        assert!(c.corrupt);
    }
}
