//! Bundles in time order whatever order the file holds them in. A Perfetto trace may hold
//! its CPUs' bundles in any order (traced writes one per CPU per drain period; a converter
//! may write all of CPU0's, then CPU1's; trace processor sorts any order), and a reorder
//! window over the file order loses whatever comes later than it reaches. So a trace
//! that is a file is read like a trace.dat: a first pass walks the packets without
//! decoding them and notes each bundle's place and earliest event time (the index);
//! then the packets that are not bundles are given in file order (process names, the
//! system's CPUs, the recording's counters), then the bundles by their earliest time.
//! Fed so, no event is later than a bundle still to come, and the hold gives every event
//! once the next bundle starts past it ([`super::order::Hold::settle_before`]).
//!
//! The cost: the trace's bytes are read three times (twice when the file is in order
//! already), and a compressed one decompressed as often, plus what a cursor skips to
//! reach a bundle out of file order ([`crate::read::unpack`]).

use super::large::{limits, Large};
use super::packets::{Next, Packets, CHUNK};
use super::protos;
pub(crate) use super::source::Source;
use prost::Message as _;
use std::io::{self, Read};

/// One bundle packet: where its bytes are, and its earliest event time.
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: u64,
    len: u32,
    first: u64,
    /// Read as a stream of windows ([`super::large`]).
    large: bool,
}

/// How the walk of the file ended (offsets in the decompressed stream).
#[derive(Clone, Debug)]
pub(super) enum Ending {
    End,
    Cut { at: u64, have: u64, want: u64 },
    Garbage { at: u64, why: String },
}

/// What the first pass found.
pub(crate) struct Index {
    /// Bundle packets by earliest event time (file order among equal times); before
    /// [`Index::finish`], in file order, a large one's time not known yet.
    bundles: Vec<Entry>,
    /// Packets passed over as large, by offset: (offset, size, holds a bundle).
    large: Vec<(u64, u64, bool)>,
    /// From which size a packet is large, and a large bundle's window ([`limits`]).
    limits: (u64, usize),
    /// The bundles were in that order in the file already.
    in_order: bool,
    /// Where the packets end (the rest is a cut packet or damage).
    valid: u64,
    ending: Ending,
    /// Kernel symbols interned on each packet sequence, all of them (a bundle given
    /// before the packet that interned its symbols names them still): (sequence, id,
    /// name), the first name of an id kept.
    pub symbols: Vec<(u32, u64, Vec<u8>)>,
    /// Symbol ids given two names on one sequence (the first is kept).
    pub symbol_conflicts: u64,
}

impl Index {
    /// Walks the packets of `rd` (the trace from its start), decoding only what places
    /// a bundle and the interned symbols; packets of [`super::large::LARGE`] bytes or more are passed
    /// over, for [`Index::finish`] to look into where they are.
    pub fn scan(rd: impl Read) -> io::Result<Index> {
        let limits = limits();
        let mut p = Packets::new(rd, CHUNK).holding(limits.0);
        let mut ix = Index {
            bundles: Vec::new(),
            large: Vec::new(),
            limits,
            in_order: true,
            valid: 0,
            ending: Ending::End,
            symbols: Vec::new(),
            symbol_conflicts: 0,
        };
        let mut symbols = rustc_hash::FxHashMap::<(u32, u64), Vec<u8>>::default();
        let mut last_first = 0;
        ix.ending = loop {
            match p.next()? {
                Next::Packet { at, bytes } => {
                    let look = look(bytes);
                    if look.bundle {
                        // A bundle without a time stays where the file had it.
                        last_first = look.first.unwrap_or(last_first);
                        let len = bytes.len() as u32;
                        ix.bundles.push(Entry {
                            at,
                            len,
                            first: last_first,
                            large: false,
                        });
                    }
                    ix.symbol_conflicts += keep_symbols(&mut symbols, look);
                }
                Next::Large { at, len } => {
                    ix.large.push((at, len, false));
                    // Placed by Index::finish.
                    ix.bundles.push(Entry {
                        at,
                        len: len as u32,
                        first: last_first,
                        large: true,
                    });
                }
                Next::Stray { .. } | Next::Bad { .. } => {}
                Next::End => break Ending::End,
                Next::Cut { at, have, want } => break Ending::Cut { at, have, want },
                Next::Garbage { at, why } => break Ending::Garbage { at, why },
            }
        };
        ix.valid = match &ix.ending {
            Ending::End => p.offset(),
            Ending::Cut { at, .. } | Ending::Garbage { at, .. } => *at,
        };
        let mut symbols: Vec<_> = symbols.into_iter().map(|((q, i), n)| (q, i, n)).collect();
        symbols.sort_unstable_by_key(|s| (s.0, s.1));
        ix.symbols = symbols;
        if !ix.has_large() {
            ix.order();
        }
        Ok(ix)
    }

    /// Orders the bundles by their earliest time.
    fn order(&mut self) {
        self.in_order =
            self.large.is_empty() && self.bundles.windows(2).all(|w| w[0].first <= w[1].first);
        // Stable: a CPU's bundles of one time keep their file order.
        self.bundles.sort_by_key(|e| e.first);
    }

    /// The trace holds packets too large to hold ([`super::large::LARGE`]): [`Index::finish`] reads
    /// them at their place, which a compressed file should not be asked for.
    pub fn has_large(&self) -> bool {
        !self.large.is_empty()
    }

    /// Where the packets end (the rest is a cut packet or damage).
    pub fn valid(&self) -> u64 {
        self.valid
    }

    /// Looks into the large packets through `src` (their time, sequence and symbols), then
    /// orders the bundles by time.
    pub fn finish(&mut self, src: &Source) {
        if !self.has_large() {
            return;
        }
        let mut symbols = rustc_hash::FxHashMap::<(u32, u64), Vec<u8>>::default();
        for (q, i, n) in std::mem::take(&mut self.symbols) {
            symbols.insert((q, i), n);
        }
        let mut last_first = None;
        for e in &mut self.bundles {
            if !e.large {
                last_first = Some(e.first);
                continue;
            }
            let Some(l) = Large::open(src, e.at, u64::from(e.len), 1) else {
                continue;
            };
            if let Some(i) = self.large.iter_mut().find(|x| x.0 == e.at) {
                i.2 = true;
            }
            e.first = l.next_ts().or(last_first).unwrap_or(0);
            last_first = Some(e.first);
            let (seq, interned) = l.look();
            let look = Look {
                bundle: true,
                first: Some(e.first),
                seq,
                symbols: interned,
            };
            self.symbol_conflicts += keep_symbols(&mut symbols, look);
        }
        // A large packet that is not a bundle is read whole in its place.
        let bundles = self
            .large
            .iter()
            .filter(|l| l.2)
            .map(|l| l.0)
            .collect::<Vec<_>>();
        self.bundles.retain(|e| !e.large || bundles.contains(&e.at));
        self.order();
        let mut symbols: Vec<_> = symbols.into_iter().map(|((q, i), n)| (q, i, n)).collect();
        symbols.sort_unstable_by_key(|s| (s.0, s.1));
        self.symbols = symbols;
    }

    /// Bundles are given out of file order.
    #[cfg(test)]
    pub fn moved(&self) -> bool {
        !self.in_order
    }
}

/// What the first pass needs of one packet.
#[derive(Default)]
struct Look {
    bundle: bool,
    first: Option<u64>,
    seq: u32,
    symbols: Vec<(u64, Vec<u8>)>,
}

/// Adds the symbols `look` interned to `symbols` (the first name of an id kept); the ids
/// given another name.
fn keep_symbols(symbols: &mut rustc_hash::FxHashMap<(u32, u64), Vec<u8>>, look: Look) -> u64 {
    let mut conflicts = 0;
    for (iid, name) in look.symbols {
        match symbols.entry((look.seq, iid)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(name);
            }
            std::collections::hash_map::Entry::Occupied(o) => {
                conflicts += u64::from(*o.get() != name);
            }
        }
    }
    conflicts
}

/// A packet's bundle (is there one, its earliest time), sequence and interned symbols.
fn look(packet: &[u8]) -> Look {
    let mut l = Look::default();
    for (field, v) in Fields(packet) {
        match (field, v) {
            (1, Value::Bytes(b)) => {
                l.bundle = true;
                l.first = bundle_first(b);
            }
            (10, Value::Int(q)) => l.seq = q as u32,
            (12, Value::Bytes(b)) => {
                if let Ok(i) = protos::InternedData::decode(b) {
                    l.symbols = (i.kernel_symbols.into_iter())
                        .filter_map(|k| Some((k.iid?, k.str?)))
                        .collect();
                }
            }
            _ => {}
        }
    }
    l
}

/// A bundle's earliest event time: its first typed event's and its compact lists' first
/// (absolute, the rest are deltas). A CPU's ring buffer is in time order, so the first
/// is the earliest; in a bundle that is not (damage), an earlier event comes late and is
/// counted as such.
fn bundle_first(b: &[u8]) -> Option<u64> {
    let mut first: Option<u64> = None;
    let mut typed = false;
    let mut see = |t: u64| first = Some(first.map_or(t, |f| f.min(t)));
    for (field, v) in Fields(b) {
        match (field, v) {
            (2, Value::Bytes(_)) if typed => {}
            (2, Value::Bytes(e)) => {
                let ts = Fields(e).find_map(|(f, v)| match (f, v) {
                    (1, Value::Int(t)) => Some(t),
                    _ => None,
                });
                if let Some(t) = ts {
                    see(t);
                    typed = true;
                }
            }
            (4, Value::Bytes(c)) => {
                for (f, v) in Fields(c) {
                    if let (1 | 7, Value::Bytes(packed)) = (f, v) {
                        if let Some((t, _)) = varint(packed) {
                            see(t);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    first
}

/// A field's value, as far as the index reads it.
enum Value<'a> {
    Int(u64),
    Bytes(&'a [u8]),
    Other,
}

/// The fields of a message in memory; ends at the first malformed one (the decoder
/// says what is wrong with it later).
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, n) = varint(self.0)?;
        let rest = &self.0[n..];
        let (field, wire) = ((key >> 3) as u32, key & 7);
        let (value, used) = match wire {
            0 => {
                let (v, n) = varint(rest)?;
                (Value::Int(v), n)
            }
            1 => (Value::Other, 8),
            5 => (Value::Other, 4),
            2 => {
                let (len, n) = varint(rest)?;
                let end = n.checked_add(usize::try_from(len).ok()?)?;
                (Value::Bytes(rest.get(n..end)?), end)
            }
            _ => return None,
        };
        if used > rest.len() {
            self.0 = &[];
            return None;
        }
        self.0 = &rest[used..];
        Some((field, value))
    }
}

/// A varint at the start of `b`, and its length.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &c) in b.iter().take(10).enumerate() {
        v |= u64::from(c & 0x7f) << (7 * i);
        if c & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

impl Ending {
    fn next(&self) -> Next<'static> {
        match self {
            Ending::End => Next::End,
            Ending::Cut { at, have, want } => Next::Cut {
                at: *at,
                have: *have,
                want: *want,
            },
            Ending::Garbage { at, why } => Next::Garbage {
                at: *at,
                why: why.clone(),
            },
        }
    }
}

/// The packets of an indexed trace, in the order they are given.
pub(super) enum Indexed {
    /// The file's bundles were in time order: every packet in file order, up to where
    /// the first pass found the packets end, then how they ended.
    InOrder {
        walk: Packets<io::Take<Box<dyn Read + Send>>>,
        ending: Ending,
    },
    /// Every packet but the bundles in file order, then the bundles by time.
    Sorted(Box<Sorted>),
}

/// The state of [`Indexed::Sorted`].
pub(super) struct Sorted {
    src: Source,
    /// The walk of the file for the packets that are not bundles, until it ends.
    walk: Option<Packets<io::Take<Box<dyn Read + Send>>>>,
    bundles: Vec<Entry>,
    next: usize,
    ending: Ending,
    valid: u64,
    /// The packet given last.
    buf: Vec<u8>,
    /// Large packets, by offset: (offset, size, holds a bundle).
    large: Vec<(u64, u64, bool)>,
    /// Values of each list in a window of a large bundle.
    window: usize,
    /// Large bundles being given window by window.
    open: Vec<Large>,
    /// A large bundle's damage, said after its last window.
    damage: Option<(u64, u64, String)>,
}

impl Indexed {
    /// The packets of the trace `index` was made of, read again from `src`.
    pub fn new(index: Index, src: Source) -> Indexed {
        let walk = Packets::new(src.reader().take(index.valid), CHUNK).holding(index.limits.0);
        if index.in_order {
            return Indexed::InOrder {
                walk,
                ending: index.ending,
            };
        }
        Indexed::Sorted(Box::new(Sorted {
            src,
            walk: Some(walk),
            bundles: index.bundles,
            next: 0,
            ending: index.ending,
            valid: index.valid,
            buf: Vec::new(),
            large: index.large,
            window: index.limits.1,
            open: Vec::new(),
            damage: None,
        }))
    }

    /// Bytes of the trace given so far (all of them at the end).
    pub fn offset(&self) -> u64 {
        match self {
            Indexed::InOrder { walk, .. } => walk.offset(),
            Indexed::Sorted(s) => match &s.walk {
                Some(w) if s.next == 0 => w.offset(),
                _ => s.valid,
            },
        }
    }

    /// The next packet (or what stands instead); its bytes are valid until the next call.
    pub fn next(&mut self) -> io::Result<Next<'_>> {
        match self {
            Indexed::InOrder { walk, ending } => match walk.next()? {
                Next::End => Ok(ending.next()),
                n => Ok(n),
            },
            Indexed::Sorted(s) => s.next(),
        }
    }
}

impl Sorted {
    fn next(&mut self) -> io::Result<Next<'_>> {
        if let Some(walk) = &mut self.walk {
            loop {
                match walk.next()? {
                    Next::Packet { bytes, .. } if super::packets::holds_bundle(bytes) => {}
                    Next::Packet { at, bytes } => {
                        // Copied: a packet that is not a bundle is small and rare.
                        self.buf.clear();
                        self.buf.extend_from_slice(bytes);
                        return Ok(Next::Packet {
                            at,
                            bytes: &self.buf,
                        });
                    }
                    Next::Large { at, len } => {
                        // A large packet without a bundle is read whole, as any packet.
                        if self.large.iter().any(|l| l.0 == at && !l.2) {
                            self.buf.resize(len as usize, 0);
                            self.src.read_at(&mut self.buf, at)?;
                            return Ok(Next::Packet {
                                at,
                                bytes: &self.buf,
                            });
                        }
                    }
                    Next::Stray { field } => return Ok(Next::Stray { field }),
                    _ => break,
                }
            }
            self.walk = None;
        }
        if let Some((at, len, why)) = self.damage.take() {
            return Ok(Next::Bad { at, len, why });
        }
        self.next_bundle()
    }

    /// The earliest of the next bundle by the index and the open large bundles' next
    /// windows (a window first at equal times: its bundle came first in the file).
    fn next_bundle(&mut self) -> io::Result<Next<'_>> {
        loop {
            let entry = self.bundles.get(self.next).copied();
            let open = (self.open.iter().enumerate())
                .filter_map(|(i, l)| Some((l.next_ts()?, i)))
                .min();
            if let Some((ts, i)) = open.filter(|o| entry.is_none_or(|e| o.0 <= e.first)) {
                let _ = ts;
                let l = &mut self.open[i];
                let Some(bytes) = l.window() else {
                    let l = self.open.swap_remove(i);
                    if let Some(why) = l.damage() {
                        return Ok(Next::Bad {
                            at: l.at,
                            len: l.len,
                            why,
                        });
                    }
                    continue;
                };
                self.buf = bytes;
                let at = l.at;
                if l.next_ts().is_none() {
                    let l = self.open.swap_remove(i);
                    self.damage = l.damage().map(|why| (l.at, l.len, why));
                }
                return Ok(Next::Packet {
                    at,
                    bytes: &self.buf,
                });
            }
            let Some(e) = entry else {
                return Ok(self.ending.next());
            };
            self.next += 1;
            if e.large {
                self.open
                    .extend(Large::open(&self.src, e.at, u64::from(e.len), self.window));
                continue;
            }
            self.buf.resize(e.len as usize, 0);
            self.src.read_at(&mut self.buf, e.at)?;
            return Ok(Next::Packet {
                at: e.at,
                bytes: &self.buf,
            });
        }
    }
}
