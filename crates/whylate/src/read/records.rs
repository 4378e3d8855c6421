//! Batches of records copied out of a binary trace for another thread to decode: items of
//! the reader's own kind, and the bytes they point into.

/// Items and the bytes they point into, in the order the reader took them.
pub struct Records<I> {
    items: Vec<I>,
    bytes: Vec<u8>,
}

impl<I> Default for Records<I> {
    fn default() -> Self {
        Records {
            items: Vec::new(),
            bytes: Vec::new(),
        }
    }
}

impl<I> Records<I> {
    /// Items held.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.items.clear();
        self.bytes.clear();
    }
    /// The items, in order.
    pub(crate) fn items(&self) -> &[I] {
        &self.items
    }
    /// Adds an item.
    pub(crate) fn push(&mut self, item: I) {
        self.items.push(item);
    }
    /// Copies `b` in; where it is, for [`Records::bytes`].
    pub(crate) fn keep(&mut self, b: &[u8]) -> (u32, u32) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(b);
        (at as u32, b.len() as u32)
    }
    /// The bytes kept at `(at, len)`.
    pub(crate) fn bytes(&self, (at, len): (u32, u32)) -> &[u8] {
        &self.bytes[at as usize..][..len as usize]
    }
}
