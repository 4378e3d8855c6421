//! Records packed as varints, each a delta from the record before: what an analysis keeps
//! one of per sample, by the million, and reads back only in order (cycles, plot
//! windows). A record takes 6 to 12 bytes where its struct takes 32.

/// A record that packs against the one before it.
pub trait Pack: Copy + Default {
    /// Appends `self`, as a delta from `prev`, to `out`.
    fn pack(&self, prev: &Self, out: &mut Vec<u8>);
    /// Reads the record packed after `prev` from `buf` at `*at`, and steps past it.
    fn unpack(prev: &Self, buf: &[u8], at: &mut usize) -> Self;
}

// LEB128 by hand rather than through a crate: these calls are the hot loop of reading
// millions of records several times over, and only inlined code kept that cheap.

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub fn put_u(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` as a zigzag varint (small magnitudes of either sign stay short).
#[inline]
pub fn put_i(out: &mut Vec<u8>, v: i64) {
    put_u(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Reads an unsigned varint written by [`put_u`]. Only this module's own bytes are read:
/// a short one is a bug, not bad input, and panics.
#[inline]
pub fn get_u(buf: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = buf[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Reads a zigzag varint written by [`put_i`].
#[inline]
pub fn get_i(buf: &[u8], at: &mut usize) -> i64 {
    let u = get_u(buf, at);
    (u >> 1) as i64 ^ -((u & 1) as i64)
}

/// Bytes per chunk: records are appended to chunks of this size rather than one growing
/// buffer, so growth never holds the old and the new copy at once.
const CHUNK: usize = 1 << 16;
/// Room a record may need at most (a few varints of at most 10 bytes each).
const MAX_RECORD: usize = 64;

/// Records of type `T`, packed, in the order pushed.
#[derive(Clone, Debug)]
pub struct Packed<T> {
    chunks: Vec<Vec<u8>>,
    /// Per chunk, the record its first one is packed against and that one's index: a
    /// chunk can be read without the chunks before it (two threads read halves), and
    /// stores packed apart are joined by their chunks ([`Packed::append`]).
    marks: Vec<(T, usize)>,
    last: T,
    len: usize,
}

impl<T: Pack> Default for Packed<T> {
    fn default() -> Self {
        Packed {
            chunks: Vec::new(),
            marks: Vec::new(),
            last: T::default(),
            len: 0,
        }
    }
}

impl<T: Pack> Packed<T> {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a record.
    pub fn push(&mut self, t: T) {
        if self
            .chunks
            .last()
            .is_none_or(|c| c.len() + MAX_RECORD > CHUNK)
        {
            self.chunks.push(Vec::with_capacity(CHUNK));
            self.marks.push((self.last, self.len));
        }
        let chunk = self.chunks.last_mut().expect("just ensured");
        t.pack(&self.last, chunk);
        self.last = t;
        self.len += 1;
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when none are held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes the records take (what the docs state per record).
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum()
    }

    /// The records, in order.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            chunks: &self.chunks,
            marks: &self.marks,
            ci: 0,
            at: 0,
            prev: T::default(),
            left: self.len,
        }
    }

    /// The records in at most `n` runs of whole chunks, in order, each with the index of
    /// its first record: what threads read side by side.
    pub fn parts(&self, n: usize) -> Vec<(usize, Iter<'_, T>)> {
        let n = n.clamp(1, self.chunks.len().max(1));
        let mut out = Vec::with_capacity(n);
        let mut from = 0;
        for k in 1..=n {
            // The chunk where the k-th n-th of the records begins (each part one chunk
            // at least).
            let want = self.len * k / n;
            let to = match k == n {
                true => self.chunks.len(),
                false => (self.marks.partition_point(|m| m.1 < want))
                    .max(from + 1)
                    .min(self.chunks.len()),
            };
            if from >= to {
                break;
            }
            let first = self.marks[from].1;
            let end = self.marks.get(to).map_or(self.len, |m| m.1);
            out.push((
                first,
                Iter {
                    chunks: &self.chunks,
                    marks: &self.marks,
                    ci: from,
                    at: 0,
                    prev: self.marks[from].0,
                    left: end - first,
                },
            ));
            from = to;
        }
        out
    }

    /// The chunk holding record `i` (`i < len`).
    fn chunk_of(&self, i: usize) -> usize {
        self.marks.partition_point(|m| m.1 <= i) - 1
    }

    /// The records from index `i` on, decoded from the start of `i`'s chunk only.
    pub fn iter_from(&self, i: usize) -> std::iter::Skip<Iter<'_, T>> {
        let (ci, first, prev, left) = match i < self.len {
            true => {
                let k = self.chunk_of(i);
                let (prev, first) = self.marks[k];
                (k, first, prev, self.len - first)
            }
            false => (0, i, T::default(), 0),
        };
        let it = Iter {
            chunks: &self.chunks,
            marks: &self.marks,
            ci,
            at: 0,
            prev,
            left,
        };
        it.skip(i - first)
    }

    /// How many records, from the first, satisfy `pred`, which must hold for a prefix
    /// of them: the chunks are searched by their first record (each decoded from its
    /// mark alone), then the one the boundary falls in is read.
    pub fn partition_point(&self, pred: impl Fn(&T) -> bool) -> usize {
        let first_of = |k: usize| T::unpack(&self.marks[k].0, &self.chunks[k], &mut 0);
        let (mut lo, mut hi) = (0, self.chunks.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match pred(&first_of(mid)) {
                true => lo = mid + 1,
                false => hi = mid,
            }
        }
        // Chunks before `lo` start with a record that satisfies `pred`.
        let Some(k) = lo.checked_sub(1) else {
            return 0;
        };
        let from = self.marks[k].1;
        from + self.iter_from(from).take_while(|t| pred(t)).count()
    }

    /// Records `a..b` (`b` clamped to the length): the chunks wholly inside are moved as
    /// they are; only the records of the two chunks at the ends are packed again.
    pub fn range(mut self, a: usize, b: usize) -> Packed<T> {
        let b = b.min(self.len);
        if a == 0 && b == self.len {
            return self;
        }
        let mut out = Packed::new();
        if a >= b {
            return out;
        }
        let (ka, kb) = (self.chunk_of(a), self.chunk_of(b - 1));
        let head_end = match ka == kb {
            true => b,
            false => self.marks[ka + 1].1,
        };
        for t in self.iter_from(a).take(head_end - a) {
            out.push(t);
        }
        if kb > ka {
            let (base, tail) = (self.marks[ka + 1].1, self.marks[kb].1);
            let middle = Packed {
                chunks: (ka + 1..kb)
                    .map(|k| std::mem::take(&mut self.chunks[k]))
                    .collect(),
                marks: (self.marks[ka + 1..kb].iter())
                    .map(|&(t, i)| (t, i - base))
                    .collect(),
                last: self.marks[kb].0,
                len: tail - base,
            };
            out.append(middle);
            // A mark is the record a chunk's first is packed against, not always the one
            // before it (a store joined by `append` starts its part against the default):
            // the tail gets a chunk of its own, packed against what its mark says.
            out.chunks.push(Vec::with_capacity(CHUNK));
            out.marks.push((out.last, out.len));
            for t in self.iter_from(tail).take(b - tail) {
                out.push(t);
            }
        }
        out
    }

    /// Moves `other`'s records after these, chunks as they are (no record repacked).
    pub fn append(&mut self, other: Packed<T>) {
        if other.len == 0 {
            return;
        }
        let base = self.len;
        self.chunks.extend(other.chunks);
        (self.marks).extend(other.marks.into_iter().map(|(t, i)| (t, i + base)));
        self.last = other.last;
        self.len += other.len;
    }
}

impl<T: Pack> FromIterator<T> for Packed<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
        let mut p = Packed::new();
        for t in it {
            p.push(t);
        }
        p
    }
}

impl<T: Pack> From<Vec<T>> for Packed<T> {
    fn from(v: Vec<T>) -> Self {
        v.into_iter().collect()
    }
}

/// Reads a [`Packed`] in order.
#[derive(Clone)]
pub struct Iter<'a, T> {
    chunks: &'a [Vec<u8>],
    marks: &'a [(T, usize)],
    ci: usize,
    at: usize,
    prev: T,
    left: usize,
}

impl<T: Pack> Default for Iter<'_, T> {
    /// An iterator over nothing.
    fn default() -> Self {
        Iter {
            chunks: &[],
            marks: &[],
            ci: 0,
            at: 0,
            prev: T::default(),
            left: 0,
        }
    }
}

impl<T: Pack> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        while self.at >= self.chunks[self.ci].len() {
            (self.ci, self.at) = (self.ci + 1, 0);
            self.prev = self.marks[self.ci].0;
        }
        let t = T::unpack(&self.prev, &self.chunks[self.ci], &mut self.at);
        (self.prev, self.left) = (t, self.left - 1);
        Some(t)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T: Pack> ExactSizeIterator for Iter<'_, T> {}

impl<'a, T: Pack> IntoIterator for &'a Packed<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// Consumes a [`Packed`] in order, giving each chunk's memory back once it is read.
pub struct IntoIter<T> {
    chunks: std::vec::IntoIter<Vec<u8>>,
    marks: std::vec::IntoIter<(T, usize)>,
    chunk: Vec<u8>,
    at: usize,
    prev: T,
    left: usize,
}

impl<T: Pack> Iterator for IntoIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        while self.at >= self.chunk.len() {
            self.chunk = self.chunks.next().expect("records left, so chunks left");
            self.prev = self.marks.next().expect("a mark per chunk").0;
            self.at = 0;
        }
        let t = T::unpack(&self.prev, &self.chunk, &mut self.at);
        (self.prev, self.left) = (t, self.left - 1);
        Some(t)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T: Pack> ExactSizeIterator for IntoIter<T> {}

impl<T: Pack> IntoIterator for Packed<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        IntoIter {
            chunks: self.chunks.into_iter(),
            marks: self.marks.into_iter(),
            chunk: Vec::new(),
            at: 0,
            prev: T::default(),
            left: self.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Rec {
        ts: u64,
        tid: i32,
    }

    impl Pack for Rec {
        fn pack(&self, prev: &Self, out: &mut Vec<u8>) {
            put_i(out, self.ts.wrapping_sub(prev.ts) as i64);
            put_i(out, i64::from(self.tid) - i64::from(prev.tid));
        }
        fn unpack(prev: &Self, buf: &[u8], at: &mut usize) -> Self {
            Rec {
                ts: prev.ts.wrapping_add(get_i(buf, at) as u64),
                tid: (i64::from(prev.tid) + get_i(buf, at)) as i32,
            }
        }
    }

    /// Any range of a store of many chunks gives the same records as slicing them, and
    /// the search for a prefix finds its end wherever it falls.
    #[test]
    fn ranges_and_prefixes_agree_with_the_records_sliced() {
        let v: Vec<Rec> = (0..100_000u64)
            .map(|i| Rec {
                ts: i * 7 + (i % 5) * 1_000_000_007,
                tid: (i % 13) as i32,
            })
            .collect();
        let p: Packed<Rec> = v.clone().into();
        assert!(p.chunks.len() > 4, "{} chunks", p.chunks.len());
        let chunk = p.marks[2].1;
        let cuts = [
            0,
            1,
            5,
            chunk - 1,
            chunk,
            chunk + 1,
            50_000,
            99_999,
            100_000,
        ];
        for &a in &cuts {
            for &b in &cuts {
                let got: Vec<Rec> = p.clone().range(a, b).into_iter().collect();
                let want = if a < b { v[a..b].to_vec() } else { Vec::new() };
                assert_eq!(got, want, "{a}..{b}");
                // A range takes more records after it, packed against its last.
                let mut r = p.clone().range(a, b);
                assert_eq!(r.len(), want.len());
                r.push(Rec { ts: 5, tid: -3 });
                let mut more = want.clone();
                more.push(Rec { ts: 5, tid: -3 });
                assert_eq!(r.iter().collect::<Vec<_>>(), more, "{a}..{b} by iter");
            }
            assert_eq!(p.iter_from(a).collect::<Vec<_>>(), v[a..].to_vec());
        }
        // A store joined from two packed apart (the second starts against the default
        // record), the first's last chunk part full.
        let mut joined: Packed<Rec> = v[..30_000].to_vec().into();
        joined.append(v[30_000..].to_vec().into());
        let join = joined.marks.iter().position(|m| m.1 == 30_000).unwrap();
        let around = [
            0,
            29_999,
            30_000,
            30_001,
            joined.marks[join + 1].1,
            99_999,
            100_000,
        ];
        for &a in &around {
            for &b in &around {
                let mut r = joined.clone().range(a, b);
                let mut want = if a < b { v[a..b].to_vec() } else { Vec::new() };
                r.push(Rec { ts: 5, tid: -3 });
                want.push(Rec { ts: 5, tid: -3 });
                assert_eq!(r.iter().collect::<Vec<_>>(), want, "joined {a}..{b}");
            }
        }
        let joined_sorted = |cut: u64| {
            let mut j: Packed<Rec> = (0..30_000u64).map(|i| Rec { ts: i * 3, tid: 1 }).collect();
            j.append(
                (30_000..100_000u64)
                    .map(|i| Rec { ts: i * 3, tid: 1 })
                    .collect(),
            );
            j.partition_point(|r| r.ts < cut)
        };
        for &a in &around {
            assert_eq!(joined_sorted(a as u64 * 3), a, "joined, before {a}");
        }
        let sorted: Packed<Rec> = (0..100_000u64).map(|i| Rec { ts: i * 3, tid: 1 }).collect();
        for &a in &cuts {
            let t = a as u64 * 3;
            assert_eq!(sorted.partition_point(|r| r.ts < t), a);
        }
        assert_eq!(Packed::<Rec>::new().partition_point(|_| true), 0);
    }

    #[test]
    fn records_come_back_in_order_across_chunks_and_extremes() {
        let mut v: Vec<Rec> = (0..50_000u64)
            .map(|i| Rec {
                ts: 1_000_000_000 + i * 1_500 - (i % 7) * 3_000,
                tid: (i % 5) as i32 * 1000 - 1,
            })
            .collect();
        v.push(Rec {
            ts: u64::MAX,
            tid: i32::MIN,
        });
        v.push(Rec {
            ts: 0,
            tid: i32::MAX,
        });
        let p: Packed<Rec> = v.iter().copied().collect();
        assert_eq!(p.len(), v.len());
        assert!(p.chunks.len() > 1, "the test spans chunks");
        assert_eq!(p.iter().collect::<Vec<_>>(), v);
        assert_eq!(p.clone().into_iter().collect::<Vec<_>>(), v);
        // Small deltas take a few bytes, not the struct's 16.
        let small: Packed<Rec> = v[..50_000].iter().copied().collect();
        let bytes: usize = small.chunks.iter().map(Vec::len).sum();
        assert!(bytes <= 50_000 * 5, "{bytes}");
        assert_eq!(Packed::<Rec>::new().iter().next(), None);
    }

    /// Read in parts, the records come back as they were, each part from its own first
    /// index; stores packed apart and joined read as one.
    #[test]
    fn parts_and_joined_stores_read_as_the_whole() {
        let v: Vec<Rec> = (0..60_000u64)
            .map(|i| Rec {
                ts: 5_000 + i * 700 + (i % 3) * 11,
                tid: (i % 9) as i32,
            })
            .collect();
        let p: Packed<Rec> = v.iter().copied().collect();
        assert!(p.chunks.len() >= 3, "the test spans chunks");
        for n in [1, 2, 3, 7, 1000] {
            let parts = p.parts(n);
            assert!(parts.len() <= n && !parts.is_empty());
            let mut all = Vec::new();
            for (first, it) in parts {
                assert_eq!(first, all.len(), "n={n}");
                all.extend(it);
            }
            assert_eq!(all, v, "n={n}");
        }
        assert!(Packed::<Rec>::new().parts(2).is_empty());
        let (a, b) = v.split_at(23_456);
        let mut joined: Packed<Rec> = a.iter().copied().collect();
        joined.append(b.iter().copied().collect());
        joined.append(Packed::new());
        joined.push(v[0]);
        let mut want = v.clone();
        want.push(v[0]);
        assert_eq!(joined.len(), want.len());
        assert_eq!(joined.iter().collect::<Vec<_>>(), want);
        assert_eq!(joined.clone().into_iter().collect::<Vec<_>>(), want);
        let halves: Vec<Rec> = joined.parts(2).into_iter().flat_map(|p| p.1).collect();
        assert_eq!(halves, want);
    }
}
