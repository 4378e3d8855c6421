//! What the raster sweeps in start order: the windows (visited by start whatever order
//! they came in), the system calls streamed by start, and a search that starts from its
//! previous answer, for the spans and edges.

use std::collections::VecDeque;
use whylate::explain::{Window, Windows};
use whylate::timeline::{ByStart, Timeline};

/// The system calls by start, for windows visited by start: those before a window are
/// passed over, those in it read ahead and kept until a later window starts past them.
pub(super) struct CallsAhead<'a> {
    src: std::iter::Peekable<ByStart<'a>>,
    kept: VecDeque<(u64, u32)>,
}

impl<'a> CallsAhead<'a> {
    pub(super) fn new(tl: &'a Timeline) -> Self {
        CallsAhead {
            src: tl.syscalls.by_start().peekable(),
            kept: VecDeque::new(),
        }
    }

    /// The calls that start in `[a, b]`, by start; `a` never goes back between calls.
    pub(super) fn starting_in(&mut self, a: u64, b: u64) -> impl Iterator<Item = &(u64, u32)> {
        while self.kept.front().is_some_and(|x| x.0 < a) {
            self.kept.pop_front();
        }
        while let Some(x) = self.src.next_if(|x| x.0 <= b) {
            if x.0 >= a {
                self.kept.push_back(x);
            }
        }
        self.kept.iter().take_while(move |x| x.0 <= b)
    }
}

/// The windows with their column, by start: they come so (cycles are cut in time order,
/// the other modes sort theirs), and should a source give them otherwise they are
/// visited by start all the same.
pub(super) fn by_start(windows: &Windows) -> Box<dyn Iterator<Item = (usize, Window)> + '_> {
    let mut prev = 0;
    if windows
        .iter()
        .all(|w| std::mem::replace(&mut prev, w.start_ns) <= w.start_ns)
    {
        return Box::new(windows.iter().enumerate());
    }
    let mut v: Vec<(usize, Window)> = windows.iter().enumerate().collect();
    v.sort_by_key(|(_, w)| w.start_ns);
    Box::new(v.into_iter())
}

/// `v.partition_point(pred)`, searched from `at`, the caller's previous answer: callers
/// ask in nearly increasing order (windows by start, calls by exit), so the answer is
/// usually a few steps on, where a binary search of the whole took ~20 cache misses.
pub(super) fn partition_near<T>(v: &[T], at: usize, pred: impl Fn(&T) -> bool) -> usize {
    let at = at.min(v.len());
    if at > 0 && !pred(&v[at - 1]) {
        return v[..at].partition_point(pred);
    }
    let mut i = at;
    while i < v.len() && i < at + 8 {
        if !pred(&v[i]) {
            return i;
        }
        i += 1;
    }
    i + v[i..].partition_point(pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_near_the_last_answer_finds_what_a_full_search_finds() {
        // Duplicates, gaps, and answers far before and far after the starting point.
        let v: Vec<u64> = (0..200u64).map(|i| i / 3 * 10).collect();
        for at in [0, 1, 7, 8, 9, 50, 199, 200, 500] {
            for t in [0, 5, 10, 11, 300, 305, 600, 660, 2000] {
                assert_eq!(
                    partition_near(&v, at, |&x| x <= t),
                    v.partition_point(|&x| x <= t),
                    "at {at}, t {t}"
                );
            }
        }
    }

    /// Windows out of start order are visited by start, each with its own column.
    #[test]
    fn windows_are_visited_by_start_with_their_column() {
        let w = |start| Window::new(start, Some(start + 10), start + 10, 1, 0, false);
        let sorted: Windows = vec![w(10), w(20), w(20), w(30)].into();
        let cols = |ws: &Windows| {
            by_start(ws)
                .map(|(i, w)| (i, w.start_ns))
                .collect::<Vec<_>>()
        };
        assert_eq!(cols(&sorted), [(0, 10), (1, 20), (2, 20), (3, 30)]);
        let unsorted: Windows = vec![w(30), w(10), w(20), w(15)].into();
        assert_eq!(cols(&unsorted), [(1, 10), (3, 15), (2, 20), (0, 30)]);
    }
}
