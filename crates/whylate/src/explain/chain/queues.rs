//! The cutter's open requests per pairing key. A request loop's threads take turns, so
//! the last two keys used are kept beside the map and found by two compares, where a
//! request and its reply each hashed their key before (issue 51: cycle mode at the speed
//! of automatic mode).

use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// The requests open under one key, oldest first.
#[derive(Debug, Default)]
pub(in crate::explain) struct Queue {
    /// Their cycles' indices.
    pub(in crate::explain) reqs: VecDeque<usize>,
    /// Since when and over how many requests the queue has not been empty (a reply lost
    /// shifts FIFO pairs from there on, and the queue never drains); `n` is 0 once it
    /// drained, and the trace's end leaves it as it was.
    pub(in crate::explain) since: u64,
    /// See `since`.
    pub(in crate::explain) n: u64,
    /// The thread returned from the call since its open request's entry (with
    /// `Cycles::one_call`: an exit that `to`'s conditions did not take).
    pub(in crate::explain) exited: bool,
}

/// A pairing key: who may close the request, and its key field's value.
pub(in crate::explain) type Key = (i64, i64);

/// No key: `who` is a thread, a process or 0, never this.
const NO_KEY: Key = (i64::MIN, i64::MIN);

/// Queues by key, in a slab the map indexes.
#[derive(Debug)]
pub(in crate::explain) struct Queues {
    at: FxHashMap<Key, usize>,
    slab: Vec<(Key, Queue)>,
    /// The last two keys asked for and their places, the latest first.
    hot: [(Key, usize); 2],
}

impl Default for Queues {
    fn default() -> Self {
        Queues {
            at: FxHashMap::default(),
            slab: Vec::new(),
            hot: [(NO_KEY, 0); 2],
        }
    }
}

impl Queues {
    /// Keys held.
    pub(in crate::explain) fn len(&self) -> usize {
        self.slab.len()
    }

    /// `k`'s place in the slab, if it has one.
    #[inline]
    fn find(&mut self, k: Key) -> Option<usize> {
        debug_assert!(k != NO_KEY, "a key's `who` is a thread, a process or 0");
        if self.hot[0].0 == k {
            return Some(self.hot[0].1);
        }
        let i = match self.hot[1].0 == k {
            true => self.hot[1].1,
            false => *self.at.get(&k)?,
        };
        self.hot = [(k, i), self.hot[0]];
        Some(i)
    }

    /// `k`'s queue, if it has one.
    #[inline]
    pub(in crate::explain) fn get_mut(&mut self, k: Key) -> Option<&mut Queue> {
        let i = self.find(k)?;
        Some(&mut self.slab[i].1)
    }

    /// `k`'s queue, made empty if it had none.
    #[inline]
    pub(in crate::explain) fn entry(&mut self, k: Key) -> &mut Queue {
        let i = match self.find(k) {
            Some(i) => i,
            None => {
                let i = self.slab.len();
                self.slab.push((k, Queue::default()));
                self.at.insert(k, i);
                self.hot = [(k, i), self.hot[0]];
                i
            }
        };
        &mut self.slab[i].1
    }

    /// `k`'s queue, if it has one, without remembering `k` as used.
    pub(in crate::explain) fn get(&self, k: &Key) -> Option<&Queue> {
        self.at.get(k).map(|&i| &self.slab[i].1)
    }

    /// Every queue.
    pub(in crate::explain) fn values(&self) -> impl Iterator<Item = &Queue> {
        self.slab.iter().map(|(_, q)| q)
    }

    /// Every queue, to change.
    pub(in crate::explain) fn values_mut(&mut self) -> impl Iterator<Item = &mut Queue> {
        self.slab.iter_mut().map(|(_, q)| q)
    }

    /// Keeps the queues `keep` says.
    pub(in crate::explain) fn retain(&mut self, mut keep: impl FnMut(&Queue) -> bool) {
        self.slab.retain(|(_, q)| keep(q));
        self.at = (self.slab.iter().enumerate())
            .map(|(i, (k, _))| (*k, i))
            .collect();
        self.hot = [(NO_KEY, 0); 2];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys taking turns, a third one, a prune: each key keeps its own queue.
    #[test]
    fn each_key_finds_its_own_queue_through_the_hot_pair_and_after_a_prune() {
        let mut qs = Queues::default();
        for round in 0..3usize {
            for k in [(1, 0), (2, 0), (1, 0), (3, 7)] {
                qs.entry(k).reqs.push_back(round * 10 + k.0 as usize);
            }
        }
        assert_eq!(qs.len(), 3);
        let reqs = |qs: &mut Queues, k| Vec::from(qs.get_mut(k).unwrap().reqs.clone());
        assert_eq!(reqs(&mut qs, (1, 0)), [1, 1, 11, 11, 21, 21]);
        assert_eq!(reqs(&mut qs, (2, 0)), [2, 12, 22]);
        assert_eq!(reqs(&mut qs, (3, 7)), [3, 13, 23]);
        assert!(qs.get_mut((3, 0)).is_none());
        qs.get_mut((2, 0)).unwrap().reqs.clear();
        qs.retain(|q| !q.reqs.is_empty());
        assert_eq!(qs.len(), 2);
        assert!(qs.get(&(2, 0)).is_none());
        assert_eq!(reqs(&mut qs, (3, 7)), [3, 13, 23]);
        assert_eq!(qs.entry((2, 0)).reqs.len(), 0);
        assert_eq!(reqs(&mut qs, (1, 0)).len(), 6);
    }
}
