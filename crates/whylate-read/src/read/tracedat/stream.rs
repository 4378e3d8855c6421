//! The per-CPU page streams: refilled 1 MiB or one compressed chunk at a time, advanced
//! record by record, merged by timestamp.

use super::*;
use crate::read::ringbuf::{Item, PageCursor};
use crate::read::source::Damage;
use crate::read::ReadError;
use std::io::Read;

impl TraceDat {
    /// Loads the next chunk of pages of stream `i`. False at the end of its data.
    /// Never inlined: the decompressors need tens of KB of stack, which `advance`, called
    /// once per record, would otherwise probe page by page on every call.
    #[inline(never)]
    pub(super) fn refill(&mut self, i: usize) -> Result<bool, ReadError> {
        let page = self.page_size;
        let codec = self.codec;
        let e = self.endian;
        let s = &mut self.streams[i];
        let corrupt = |offset: u64, why: String| ReadError::Corrupt {
            path: self.path.clone(),
            offset,
            why,
        };
        match s.src {
            Src::Plain { off, end } => {
                if off >= end {
                    return Ok(false);
                }
                let want = ((end - off) as usize)
                    .min(CHUNK / page * page.max(1))
                    .max(page);
                let want = want.min((end - off) as usize);
                s.buf.resize(want.max(page), 0);
                self.file
                    .read_exact_at(&mut s.buf[..want], off)
                    .map_err(|x| corrupt(off, format!("CPU {} data: {x}", s.cpu)))?;
                s.len = want;
                s.buf_at = (off, false);
                s.src = Src::Plain {
                    off: off + want as u64,
                    end,
                };
            }
            Src::Chunks { off, chunks } => {
                if chunks == 0 {
                    return Ok(false);
                }
                let mut h = [0u8; 8];
                self.file
                    .read_exact_at(&mut h, off)
                    .map_err(|x| corrupt(off, format!("chunk header: {x}")))?;
                let csize = e.u32(&h, 0).unwrap_or(0) as usize;
                let usize_ = e.u32(&h, 4).unwrap_or(0) as usize;
                if csize > (1 << 30) || usize_ > (1 << 30) {
                    return Err(corrupt(
                        off,
                        format!("chunk sizes {csize}/{usize_} are not plausible"),
                    ));
                }
                let mut data = vec![0u8; csize];
                self.file
                    .read_exact_at(&mut data, off + 8)
                    .map_err(|x| corrupt(off + 8, format!("chunk of {csize} bytes: {x}")))?;
                let mut out = Vec::with_capacity(usize_);
                let r = match codec {
                    Some(Codec::Zlib) => flate2::read::ZlibDecoder::new(&data[..])
                        .read_to_end(&mut out)
                        .map(|_| ()),
                    Some(Codec::Zstd) => zstd::stream::read::Decoder::with_buffer(&data[..])
                        .and_then(|mut d| d.read_to_end(&mut out).map(|_| ())),
                    None => Ok(()),
                };
                r.map_err(|x| corrupt(off + 8, format!("decompressing a CPU chunk: {x}")))?;
                s.buf = out;
                s.len = s.buf.len();
                s.buf_at = (off, true);
                s.src = Src::Chunks {
                    off: off + 8 + csize as u64,
                    chunks: chunks - 1,
                };
            }
        }
        s.page_at = 0;
        self.data_bytes += s.len as u64;
        Ok(true)
    }

    /// Moves stream `i` to its next record, loading pages as needed.
    pub(super) fn advance(&mut self, i: usize) -> Result<(), ReadError> {
        let page = self.page_size;
        let layout = self.layout;
        loop {
            let s = &mut self.streams[i];
            if s.done {
                s.head = None;
                return Ok(());
            }
            if let Some(cur) = s.cur.as_mut() {
                let pg = &s.buf[s.page_at..(s.page_at + page).min(s.len)];
                let damage = match cur.next(pg, layout.endian) {
                    // Later than the next page starts: the record's time is damaged, and
                    // with it every record after it in the page (their times add up from it).
                    Some(Item::Record { ts, start, .. }) if ts > s.limit => {
                        let (at, in_chunk) = s.buf_at;
                        Some(Damage {
                            cpu: s.cpu,
                            offset: at
                                + if in_chunk {
                                    0
                                } else {
                                    (s.page_at + start) as u64
                                },
                            in_chunk,
                            skipped: (pg.len() - start) as u64,
                            why: "its time runs past the start of the CPU's next page".into(),
                        })
                    }
                    Some(Item::Record { ts, start, end }) => {
                        s.head = Some((ts, s.page_at + start, s.page_at + end));
                        return Ok(());
                    }
                    _ => None,
                };
                if cur.corrupt {
                    self.diag.unparsed += 1;
                }
                s.cur = None;
                s.page_at += page;
                if let Some(d) = damage {
                    // What the page held after it is lost: the timeline makes a window of
                    // unknown loss on this CPU up to the next page's start, as for events
                    // the kernel dropped.
                    s.lost = Some((s.limit, None));
                    self.diag.damage(d);
                }
            }
            let s = &mut self.streams[i];
            if (s.page_at + layout.data_off > s.len || s.len == 0) && !self.refill(i)? {
                self.streams[i].done = true;
                continue;
            }
            self.open_page(i);
        }
    }

    /// The start time of the `k`-th page after stream `i`'s current one: from its buffer,
    /// or for a plain file from the file past the buffer. None where not known (past the
    /// CPU's data, past a compressed chunk) or unreadable.
    fn page_start_after(&self, i: usize, k: usize) -> Option<u64> {
        let (page, s) = (self.page_size, &self.streams[i]);
        let at = s.page_at + k * page;
        let mut head = [0u8; 8];
        let bytes = if at + 8 <= s.len {
            &s.buf[at..at + 8]
        } else {
            let (Src::Plain { end, .. }, (start, false)) = (s.src, s.buf_at) else {
                return None;
            };
            let off = start + at as u64;
            if off + 8 > end {
                return None;
            }
            self.file.read_exact_at(&mut head, off).ok()?;
            &head[..]
        };
        self.layout
            .endian
            .u64(bytes, self.layout.ts_off)
            .filter(|t| *t != 0)
    }

    /// Starts stream `i`'s current page. Its start time must lie between the last good
    /// page's and the next page's: a page whose start is later than the next one's is
    /// damaged, and skipped whole; the next page's start then bounds its records' times.
    fn open_page(&mut self, i: usize) {
        let (page, layout) = (self.page_size, self.layout);
        let next = self.page_start_after(i, 1);
        let after = self.page_start_after(i, 2);
        let s = &mut self.streams[i];
        let pg = &s.buf[s.page_at..(s.page_at + page).min(s.len)];
        let Some(c) = PageCursor::new(pg, &layout) else {
            s.page_at += page;
            return;
        };
        // A start later than the next page's, or earlier than the last good page's while
        // the next page agrees with that one: this page's header is the damaged one.
        let forward = next.is_some_and(|n| c.ts > n);
        let back = c.ts < s.page_ts && next.is_some_and(|n| n >= s.page_ts);
        if forward || back {
            let (at, in_chunk) = s.buf_at;
            let d = Damage {
                cpu: s.cpu,
                offset: at + if in_chunk { 0 } else { s.page_at as u64 },
                in_chunk,
                skipped: pg.len() as u64,
                why: "its page starts at a time out of order with the pages around it".into(),
            };
            s.page_at += page;
            s.lost = next.map(|n| (n, None));
            self.diag.damage(d);
            return;
        }
        s.page_ts = c.ts;
        // The earliest of the next two starts not before this one: one damaged page
        // after this one leaves the bound to the page after it.
        let bound = [next, after]
            .into_iter()
            .flatten()
            .filter(|n| *n >= c.ts)
            .min();
        s.limit = bound.unwrap_or(u64::MAX);
        if let Some(count) = c.missed {
            s.lost = Some((c.ts, count));
        }
        s.cur = Some(c);
    }

    pub(super) fn conv_ts(&self, ts: u64) -> u64 {
        let ts = match self.tsc2nsec {
            Some((mult, shift, off)) => {
                (((ts as u128 * mult as u128) >> shift) as u64).wrapping_add(off)
            }
            None => ts,
        };
        ts.wrapping_add(self.ts_offset as u64)
    }

    /// Picks the stream with the earliest pending item and takes it. A taken record stays
    /// where it is in its stream's buffer: the stream moves on (which may refill the
    /// buffer) only at the next take, after the caller has read the record.
    #[inline(always)]
    pub(super) fn take_next(&mut self) -> Result<Option<Taken>, ReadError> {
        if let Some(i) = self.stale.take() {
            self.advance(i)?;
        }
        let mut best: Option<(u64, usize)> = None;
        for (i, s) in self.streams.iter().enumerate() {
            let t = match (s.lost, s.head) {
                (Some((t, _)), _) => t,
                (None, Some((t, _, _))) => t,
                _ => continue,
            };
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, i));
            }
        }
        let Some((_, i)) = best else {
            return Ok(None);
        };
        let cpu = self.streams[i].cpu;
        if let Some((ts, count)) = self.streams[i].lost.take() {
            return Ok(Some(Taken::Lost {
                ts: self.conv_ts(ts),
                cpu,
                count,
            }));
        }
        let (ts, start, end) = self.streams[i].head.take().expect("head was checked");
        self.stale = Some(i);
        Ok(Some(Taken::Record {
            ts: self.conv_ts(ts),
            cpu,
            i,
            start,
            end,
        }))
    }
}
