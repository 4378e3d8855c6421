//! One-entry memos for the text readers' hot path. Consecutive lines of one task on one
//! CPU repeat the columns left of the time byte for byte, and a busy trace repeats a few
//! event names: comparing against the last line's bytes replaces the column parse, the
//! comm lookup and the name dispatch. Every memoised value is a function of exactly the
//! bytes compared, so a hit gives what the full parse would.

use super::body::{hot_parser, trim, BodyParser};
#[cfg(test)]
use super::grammar::parse_secs;
use super::grammar::{secs_prefix, typed_or_other};
use crate::event::Kind;
use crate::read::source::Cx;
use crate::swar::{blank8, same};

/// The columns left of a line's time (`T`), keyed by their bytes. Two entries, most
/// recent first: perf script text alternates between two tasks often enough that one
/// entry misses one line in twenty, two entries one in five hundred.
pub(crate) struct PrefixMemo<T> {
    slots: [(Vec<u8>, Option<T>); 2],
}

impl<T: Copy> PrefixMemo<T> {
    pub fn new() -> Self {
        PrefixMemo {
            slots: [
                (Vec::with_capacity(64), None),
                (Vec::with_capacity(64), None),
            ],
        }
    }

    /// If `line` starts with remembered columns followed by `secs.frac: `: the columns'
    /// value, the colon's index and the time.
    ///
    /// Why this equals the full parse: the fast paths take the time from the first `": "`
    /// of the line. The remembered columns held no `": "` and end in a space, so none
    /// starts before the key's end; from there only digits and dots lead to it.
    #[inline]
    pub fn hit(&mut self, line: &[u8]) -> Option<(T, usize, u64)> {
        #[cfg(test)]
        if tests::OFF.get() {
            return None;
        }
        for i in 0..2 {
            let (key, val) = &self.slots[i];
            let Some(v) = *val else { break };
            let s = key.len();
            if line.len() > s && same(&line[..s], key) {
                let (colon, ts) = stamp_at(line, s)?;
                if i == 1 {
                    self.slots.swap(0, 1);
                }
                return Some((v, colon, ts));
            }
        }
        None
    }

    /// Remembers `v` for lines starting with `cols`, which must end just before the time
    /// word (after a space).
    #[inline]
    pub fn set(&mut self, cols: &[u8], v: T) {
        if cols.last() != Some(&b' ') {
            return;
        }
        self.slots.swap(0, 1);
        let (key, val) = &mut self.slots[0];
        key.clear();
        key.extend_from_slice(cols);
        *val = Some(v);
    }
}

/// `secs.frac: ` at `line[s..]`: the colon's index and the time, read as
/// [`parse_secs`] reads the word before the colon.
#[inline(always)]
fn stamp_at(line: &[u8], s: usize) -> Option<(usize, u64)> {
    let (ts, n) = secs_prefix(&line[s..])?;
    (line.get(s + n..s + n + 2) == Some(b": ")).then_some((s + n, ts))
}

/// The event name words (`sys_enter:`, `raw_syscalls:sys_enter:`) after the time, keyed by
/// their bytes, with their bare name's place and their typed body parser. A busy trace
/// alternates between a few names (sys_enter, sys_exit), so this keeps several, each in
/// a slot picked by its length and last letter.
pub(crate) struct NameMemo {
    slots: [NameSlot; NAME_SLOTS],
}

const NAME_SLOTS: usize = 16;
/// Longer name words are split every time.
const NAME_MAX: usize = 48;

#[derive(Clone, Copy)]
struct NameSlot {
    len: u8,
    /// Start of the bare name (after the last `:` inside the word).
    bare: u8,
    word: [u8; NAME_MAX],
    parser: Option<BodyParser>,
}

/// A name word split off the text after the time.
pub(crate) struct Named<'a> {
    /// The bare tracepoint name (`sys_enter`).
    pub bare: &'a [u8],
    /// The fields, trimmed.
    pub body: &'a [u8],
    /// The typed parser of well-known hot events.
    pub parser: Option<BodyParser>,
    /// The name had a `system:` part (perf prints `raw_syscalls:sys_enter`).
    pub system: bool,
}

impl Named<'_> {
    /// The event's kind: the memoised typed parser, else the general rule (which also
    /// counts a known event whose fields it cannot read).
    #[inline]
    pub fn kind(&self, cx: &mut Cx<'_>) -> Kind {
        match self.parser.and_then(|f| f(self.body, cx.strings)) {
            Some(k) => k,
            None => typed_or_other(self.bare, self.body, cx),
        }
    }
}

impl NameMemo {
    pub fn new() -> Self {
        NameMemo {
            slots: [NameSlot {
                len: 0,
                bare: 0,
                word: [0; NAME_MAX],
                parser: None,
            }; NAME_SLOTS],
        }
    }

    /// Splits `rest` (the text after the time's colon) into `name: body` when its first
    /// word is one name ending in `:` (no `(`, as ftrace's own syscall format has), else
    /// None. The split is the one [`crate::read::text::ftrace::event_kind`] makes.
    #[inline]
    pub fn split<'a>(&mut self, rest: &'a [u8]) -> Option<Named<'a>> {
        let mut i = 0;
        while i < rest.len() && (rest[i] == b' ' || rest[i] == b'\t') {
            i += 1;
        }
        let w = i;
        // Names run 10 to 30 bytes: find their end eight bytes at a time.
        loop {
            match blank8(rest, i) {
                Some(8) => i += 8,
                Some(k) => {
                    i += k;
                    break;
                }
                None => {
                    while i < rest.len() && rest[i] != b' ' && rest[i] != b'\t' {
                        i += 1;
                    }
                    break;
                }
            }
        }
        let word = &rest[w..i];
        let n = word.len();
        if n < 2 {
            return None;
        }
        let slot = &mut self.slots[(n + 7 * word[n - 2] as usize) % NAME_SLOTS];
        #[cfg(test)]
        if tests::OFF.get() {
            slot.len = 0;
        }
        let (bare, parser) = if slot.len as usize == n && same(&slot.word[..n], word) {
            (slot.bare as usize, slot.parser)
        } else {
            if word[n - 1] != b':' || word.contains(&b'(') {
                return None;
            }
            let name = &word[..n - 1];
            let bare = name.iter().rposition(|&c| c == b':').map_or(0, |p| p + 1);
            let parser = hot_parser(&name[bare..]);
            if n <= NAME_MAX {
                slot.len = n as u8;
                slot.bare = bare as u8;
                slot.word[..n].copy_from_slice(word);
                slot.parser = parser;
            }
            (bare, parser)
        };
        Some(Named {
            bare: &word[bare..n - 1],
            body: trim(&rest[i..]),
            parser,
            system: bare > 0,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::event::{Event, Interner};
    use crate::read::{open, Diag, EventSource};
    use std::cell::Cell;
    use std::path::Path;

    thread_local! {
        /// Turns both memos off on this thread: the reference parse.
        pub(in crate::read) static OFF: Cell<bool> = const { Cell::new(false) };
    }

    fn read(path: &Path, off: bool) -> (Vec<Event>, Diag, Interner) {
        OFF.set(off);
        let mut s = Interner::new();
        let mut src = open(path, &Default::default()).unwrap();
        let mut v = vec![];
        while let Some(e) = src.next_event(&mut s).unwrap() {
            v.push(e);
        }
        OFF.set(false);
        (v, src.diag().clone(), s)
    }

    /// Every text trace we have, read with the memos and without: the same events and
    /// the same diagnostics.
    #[test]
    fn memos_change_nothing_on_any_text_trace() {
        use crate::read::Format;
        let formats = [
            Format::Ftrace,
            Format::TraceCmdReport,
            Format::PerfScript,
            Format::LatencyTracer,
        ];
        let mut compared = 0;
        for f in crate::testfiles::every_trace_of(&formats) {
            let (a, da, sa) = read(&f, false);
            let (b, db, sb) = read(&f, true);
            // Interning happens in the same order either way, so symbols compare too.
            assert_eq!(a.len(), b.len(), "{}", f.display());
            if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
                panic!("{}: event {i}: {:?} != {:?}", f.display(), a[i], b[i]);
            }
            assert_eq!(sa.len(), sb.len(), "{}", f.display());
            assert_eq!(format!("{da:?}"), format!("{db:?}"), "{}", f.display());
            compared += 1;
        }
        assert!(compared >= 8, "only {compared} text traces found");
    }

    #[test]
    fn prefix_hit_needs_the_same_columns_and_a_stamp() {
        let mut m = PrefixMemo::new();
        let a = b"   bash-1  [000] ..... 12.000001: sys_exit: NR 1 = 0";
        m.set(&a[..23], 7u32);
        assert_eq!(m.hit(a), Some((7, 32, 12_000_001_000)));
        assert_eq!(
            m.hit(b"   bash-1  [000] ..... 13.5: x"),
            Some((7, 27, 13_500_000_000))
        );
        // Another CPU, another comm, a second colon before the space: not a hit.
        assert_eq!(m.hit(b"   bash-1  [001] ..... 12.000001: x"), None);
        assert_eq!(m.hit(b"   bash-1  [000] ..... 12.000001:x"), None);
        assert_eq!(m.hit(b"   bash-1  [000] ..... 12.0a: x"), None);
        assert_eq!(m.hit(b"   bash-1  [000] ..... "), None);
        // Columns that do not end in a space are never remembered.
        m.set(b"x", 1);
        assert_eq!(m.hit(b"x12.5: y"), None);
        // Two entries, the most recent tried first.
        m.set(b"   bash-1  [001] ..... ", 8);
        assert_eq!(
            m.hit(b"   bash-1  [001] ..... 1.5: x").map(|h| h.0),
            Some(8)
        );
        assert_eq!(m.hit(a).map(|h| h.0), Some(7));
        m.set(b"   sh-2  [001] ..... ", 9);
        assert_eq!(m.hit(a).map(|h| h.0), Some(7));
        assert_eq!(m.hit(b"   bash-1  [001] ..... 1.5: x"), None);
    }

    /// The one-pass stamp reads what the `[0-9.]` scan plus [`parse_secs`] reads.
    #[test]
    fn stamp_at_is_parse_secs() {
        let parts = [
            "",
            "0",
            "1",
            "12345",
            "99999999999",
            "184467440737",
            "1844674407",
        ];
        let fracs = [
            "",
            ".",
            ".5",
            ".000001",
            ".123456789",
            ".1234567890",
            "..5",
            ".5.5",
        ];
        let ends = [": x", ":", ":x", " : x", "a: x", ""];
        for p in parts {
            for f in fracs {
                for e in ends {
                    let line = format!("ab {p}{f}{e}");
                    let b = line.as_bytes();
                    let mut j = 3;
                    while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                        j += 1;
                    }
                    let want = if b.get(j..j + 2) == Some(b": ") {
                        parse_secs(&b[3..j]).map(|t| (j, t))
                    } else {
                        None
                    };
                    assert_eq!(stamp_at(b, 3), want, "{line}");
                }
            }
        }
    }

    #[test]
    fn name_split_matches_the_general_rule() {
        let mut m = NameMemo::new();
        for _ in 0..2 {
            let n = m.split(b" raw_syscalls:sys_enter: NR 1 (3) ").unwrap();
            assert_eq!(n.bare, b"sys_enter");
            assert_eq!(n.body, b"NR 1 (3)");
            assert!(n.parser.is_some());
        }
        let n = m.split(b" my_event:\tx=1").unwrap();
        assert_eq!((n.bare, n.body), (&b"my_event"[..], &b"x=1"[..]));
        assert!(n.parser.is_none());
        let n = m.split(b" sched_switch:").unwrap();
        assert_eq!((n.bare, n.body), (&b"sched_switch"[..], &b""[..]));
        assert!(m.split(b" sys_read(fd: 3)").is_none());
        assert!(m.split(b" do_idle <-cpu_startup_entry").is_none());
        assert!(m.split(b" :").is_none());
        assert!(m.split(b"").is_none());
    }
}
