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
    /// Adds an item.
    pub(crate) fn push(&mut self, item: I) {
        self.items.push(item);
    }
    /// The last item added, to extend it.
    pub(crate) fn last_mut(&mut self) -> Option<&mut I> {
        self.items.last_mut()
    }
    /// Copies `b` in; where it is, for [`Kept::get`].
    pub(crate) fn keep(&mut self, b: &[u8]) -> (u32, u32) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(b);
        (at as u32, b.len() as u32)
    }
    /// Takes the items out in order (by value: some own what they decoded), beside the
    /// bytes they point into. The batch keeps its memory; [`Records::clear`] empties the
    /// bytes.
    pub(crate) fn drain(&mut self) -> (std::vec::Drain<'_, I>, Kept<'_>) {
        (self.items.drain(..), Kept(&self.bytes))
    }
}

/// The bytes a batch kept, while its items are taken out.
#[derive(Clone, Copy)]
pub(crate) struct Kept<'a>(&'a [u8]);

impl<'a> Kept<'a> {
    /// The bytes kept at `(at, len)`.
    pub(crate) fn get(self, (at, len): (u32, u32)) -> &'a [u8] {
        &self.0[at as usize..][..len as usize]
    }
}
