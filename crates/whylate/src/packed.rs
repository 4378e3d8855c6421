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
    last: T,
    len: usize,
}

impl<T: Pack> Default for Packed<T> {
    fn default() -> Self {
        Packed {
            chunks: Vec::new(),
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
            ci: 0,
            at: 0,
            prev: T::default(),
            left: self.len,
        }
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
    ci: usize,
    at: usize,
    prev: T,
    left: usize,
}

impl<T: Pack> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        while self.at >= self.chunks[self.ci].len() {
            (self.ci, self.at) = (self.ci + 1, 0);
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
}
