//! A bundle too large to hold (a converter's one bundle per CPU, or a hostile file's 30 M
//! switches in one packet) read as a stream of small bundles. Held whole, a packet costs
//! its bytes, then prost's vectors (8 bytes a value where the file spent one or two),
//! then every event decoded before the first goes out: 3.6 GB for a 180 MB packet.
//!
//! Instead each list of the bundle (its typed events, and each packed array of its
//! `compact_sched`) is walked by a cursor of its own over the file ([`List`]), a few
//! thousand values at a time, and the bundle is given out as windows: bundles of the
//! same CPU that hold the next stretch of time of every list ([`Large::window`]),
//! encoded again so the rest of the reader takes them as any other packet. Memory is a
//! buffer per cursor and one window, whatever the packet's size.

use super::protos::{ftrace_event_bundle::CompactSched, FtraceEvent, FtraceEventBundle};
use super::protos::{trace_packet::Data, TracePacket};
use super::source::Source;
use prost::Message as _;
use std::collections::VecDeque;

/// A packet at least this large is read as a stream ([`Large`]) when it holds a bundle.
pub const LARGE: u64 = 4 << 20;

/// Values of each list taken into one window at most.
const WINDOW: usize = 16 * 1024;

/// The size from which a bundle is read as a stream, and the window: [`LARGE`] and
/// [`WINDOW`], or what a test set on its thread (to read small traces both ways).
pub fn limits() -> (u64, usize) {
    #[cfg(test)]
    if let Some(l) = TEST_LIMITS.get() {
        return l;
    }
    (LARGE, WINDOW)
}

#[cfg(test)]
thread_local! {
    /// [`limits`] for the tests of this thread.
    pub static TEST_LIMITS: std::cell::Cell<Option<(u64, usize)>> = const { std::cell::Cell::new(None) };
}

/// Bytes each cursor reads at once.
const BUF: usize = 64 * 1024;

/// A field's copies inside one message kept at most (a packet that repeats its
/// `compact_sched` thousands of times is damage).
const MAX_RANGES: usize = 1024;

/// A reader of the bytes `[pos, end)` of a source, buffered.
struct Cursor {
    src: Source,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    /// The offset of `buf[0]`; `buf` holds `[at, at + buf.len())`.
    at: u64,
}

impl Cursor {
    fn new(src: &Source, pos: u64, len: u64) -> Cursor {
        Cursor {
            src: src.clone(),
            pos,
            end: pos.saturating_add(len),
            buf: Vec::new(),
            at: pos,
        }
    }

    fn done(&self) -> bool {
        self.pos >= self.end
    }

    fn byte(&mut self) -> Option<u8> {
        if self.pos >= self.end {
            return None;
        }
        if self.pos < self.at || self.pos >= self.at + self.buf.len() as u64 {
            let n = (self.end - self.pos).min(BUF as u64) as usize;
            self.buf.resize(n, 0);
            self.src.read_at(&mut self.buf, self.pos).ok()?;
            self.at = self.pos;
        }
        let b = self.buf[(self.pos - self.at) as usize];
        self.pos += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let c = self.byte()?;
            v |= u64::from(c & 0x7f) << (7 * i);
            if c & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn bytes(&mut self, n: u64) -> Option<Vec<u8>> {
        if n > self.end - self.pos {
            return None;
        }
        let mut v = vec![0; n as usize];
        self.src.read_at(&mut v, self.pos).ok()?;
        self.pos += n;
        Some(v)
    }

    /// The next field's number and value; None at the end or at a malformed field.
    fn field(&mut self) -> Option<(u32, Value)> {
        if self.done() {
            return None;
        }
        let key = self.varint()?;
        let (field, wire) = ((key >> 3) as u32, key & 7);
        let v = match wire {
            0 => Value::Int(self.varint()?),
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                (self.end - self.pos >= n).then_some(())?;
                self.pos += n;
                Value::Fixed
            }
            2 => {
                let len = self.varint()?;
                (self.end - self.pos >= len).then_some(())?;
                let at = self.pos;
                self.pos += len;
                Value::Len { at, len }
            }
            _ => return None,
        };
        Some((field, v))
    }
}

/// A field's value as the cursor saw it.
#[derive(Clone, Copy)]
enum Value {
    Int(u64),
    Fixed,
    Len { at: u64, len: u64 },
}

/// The bytes of one field, key included, read again from the source (to decode the
/// small fields of a large message with prost).
fn raw_field(src: &Source, key: u64, v: Value) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    prost::encoding::encode_varint(key, &mut out);
    match v {
        Value::Int(x) => prost::encoding::encode_varint(x, &mut out),
        Value::Len { at, len } => {
            prost::encoding::encode_varint(len, &mut out);
            out.extend(Cursor::new(src, at, len).bytes(len)?);
        }
        Value::Fixed => return None,
    }
    Some(out)
}

/// One repeated field of a message (or of several copies of it), value by value: packed
/// runs and single values alike, in the order the file holds them.
struct List {
    ranges: Vec<(u64, u64)>,
    next_range: usize,
    cur: Option<Cursor>,
    field: u32,
    /// Where the packed run being read ends.
    run_end: u64,
    /// The list ended at a malformed value or field.
    damaged: bool,
}

impl List {
    fn new(ranges: &[(u64, u64)], field: u32) -> List {
        List {
            ranges: ranges.to_vec(),
            next_range: 0,
            cur: None,
            field,
            run_end: 0,
            damaged: false,
        }
    }

    /// The next cursor over a copy of the message, None after the last.
    fn cursor(&mut self, src: &Source) -> Option<&mut Cursor> {
        if self.cur.as_ref().is_none_or(Cursor::done) {
            let &(at, len) = self.ranges.get(self.next_range)?;
            self.next_range += 1;
            self.cur = Some(Cursor::new(src, at, len));
            self.run_end = 0;
        }
        self.cur.as_mut()
    }

    /// The next number of a packed or plain numeric field.
    fn next_int(&mut self, src: &Source) -> Option<u64> {
        loop {
            let (field, run_end) = (self.field, self.run_end);
            let c = self.cursor(src)?;
            if c.pos < run_end {
                let v = c.varint().filter(|_| c.pos <= run_end);
                self.damaged |= v.is_none();
                return v.or_else(|| self.stop());
            }
            match c.field() {
                Some((f, Value::Len { at, len })) if f == field => {
                    c.pos = at;
                    self.run_end = at + len;
                }
                Some((f, Value::Int(v))) if f == field => return Some(v),
                Some(_) => {}
                None => {
                    let bad = !c.done();
                    c.pos = c.end;
                    self.damaged |= bad;
                }
            }
        }
    }

    /// The next message of a repeated message field, its bytes.
    fn next_bytes(&mut self, src: &Source) -> Option<Vec<u8>> {
        loop {
            let field = self.field;
            let c = self.cursor(src)?;
            match c.field() {
                Some((f, Value::Len { at, len })) if f == field => {
                    let b = Cursor::new(src, at, len).bytes(len);
                    self.damaged |= b.is_none();
                    return b.or_else(|| self.stop());
                }
                Some(_) => {}
                None => {
                    let bad = !c.done();
                    c.pos = c.end;
                    self.damaged |= bad;
                }
            }
        }
    }

    /// Ends the list (after damage).
    fn stop<T>(&mut self) -> Option<T> {
        self.next_range = self.ranges.len();
        self.cur = None;
        None
    }
}

/// A compact switch, its time absolute.
#[derive(Clone, Copy)]
struct Switch {
    ts: u64,
    state: i64,
    pid: i32,
    prio: i32,
    comm: u32,
}

/// A compact waking, its time absolute.
#[derive(Clone, Copy)]
struct Waking {
    ts: u64,
    pid: i32,
    target: i32,
    prio: i32,
    comm: u32,
    flags: Option<u32>,
}

/// A large bundle being given out window by window.
pub(super) struct Large {
    src: Source,
    /// The packet's offset (for messages) and size.
    pub at: u64,
    pub len: u64,
    /// The packet without its bundle, and the bundle without its lists (the first window
    /// gives both whole; later ones only what places their events).
    head: TracePacket,
    bundle: FtraceEventBundle,
    compact: Option<CompactSched>,
    events: List,
    switch: [List; 5],
    waking: [List; 6],
    sw_ts: u64,
    wk_ts: u64,
    pend_ev: VecDeque<(u64, FtraceEvent)>,
    pend_sw: VecDeque<Switch>,
    pend_wk: VecDeque<Waking>,
    /// Events that did not decode, and compact values past the end of a shorter list.
    bad_events: u64,
    /// Values of each list per window.
    window: usize,
    /// Compact times whose other values were missing, not yet given to the decoder.
    short_sw: u64,
    short_wk: u64,
    first: bool,
}

impl Large {
    /// The bundle packet at `at` (its `len` bytes) of `src`, split into its lists, given
    /// `window` values of each list at a time; None
    /// when it is not a packet with a bundle.
    pub fn open(src: &Source, at: u64, len: u64, window: usize) -> Option<Large> {
        let mut c = Cursor::new(src, at, len);
        let (mut head, mut bundle_at) = (Vec::new(), None);
        while let Some((f, v)) = c.field() {
            match (f, v) {
                (1, Value::Len { at, len }) => bundle_at = Some((at, len)),
                (_, v) => head.extend(raw_field(src, key_of(f, v), v).unwrap_or_default()),
            }
        }
        let (b_at, b_len) = bundle_at?;
        let mut head = TracePacket::decode(&head[..]).unwrap_or_default();
        head.data = None;
        let mut c = Cursor::new(src, b_at, b_len);
        let (mut rest, mut compact, mut compacts) = (Vec::new(), Vec::new(), Vec::new());
        while let Some((f, v)) = c.field() {
            match (f, v) {
                (2, Value::Len { .. }) => {}
                (4, Value::Len { at, len }) if compacts.len() < MAX_RANGES => {
                    compacts.push((at, len));
                    compact.extend(compact_rest(src, at, len));
                }
                (4, _) => {}
                (_, v) => rest.extend(raw_field(src, key_of(f, v), v).unwrap_or_default()),
            }
        }
        let bundle = FtraceEventBundle::decode(&rest[..]).unwrap_or_default();
        let lists = |fields: &[u32]| -> Vec<List> {
            fields.iter().map(|&f| List::new(&compacts, f)).collect()
        };
        let mut l = Large {
            src: src.clone(),
            at,
            len,
            head,
            bundle,
            compact: (!compacts.is_empty())
                .then(|| CompactSched::decode(&compact[..]).unwrap_or_default()),
            events: List::new(&[(b_at, b_len)], 2),
            switch: lists(&[1, 2, 3, 4, 6]).try_into().ok()?,
            waking: lists(&[7, 8, 9, 10, 11, 12]).try_into().ok()?,
            sw_ts: 0,
            wk_ts: 0,
            pend_ev: VecDeque::new(),
            pend_sw: VecDeque::new(),
            pend_wk: VecDeque::new(),
            bad_events: 0,
            window: window.max(1),
            short_sw: 0,
            short_wk: 0,
            first: true,
        };
        l.fill();
        Some(l)
    }

    /// What the index needs of the packet besides its time ([`Large::next_ts`]): its
    /// sequence, and the kernel symbols it interns (id, name).
    pub fn look(&self) -> (u32, Vec<(u64, Vec<u8>)>) {
        use super::protos::trace_packet::OptionalTrustedPacketSequenceId as Seq;
        let seq = match self.head.optional_trusted_packet_sequence_id {
            Some(Seq::TrustedPacketSequenceId(q)) => q,
            None => 0,
        };
        let symbols = (self.head.interned_data.iter())
            .flat_map(|i| &i.kernel_symbols)
            .filter_map(|k| Some((k.iid?, k.str.clone()?)))
            .collect();
        (seq, symbols)
    }

    /// Why part of the bundle was not read, once it is all given; None when it was whole.
    pub fn damage(&self) -> Option<String> {
        let lists = std::iter::once(&self.events)
            .chain(&self.switch)
            .chain(&self.waking);
        let cut = lists.filter(|l| l.damaged).count();
        (cut > 0 || self.bad_events > 0).then(|| {
            let ends = if cut == 1 { "ends" } else { "end" };
            format!(
                "{cut} of its lists {ends} at a malformed value, {} typed events do not decode",
                self.bad_events
            )
        })
    }
}

/// The key of a field as the cursor read it.
fn key_of(field: u32, v: Value) -> u64 {
    let wire = match v {
        Value::Int(_) => 0,
        Value::Fixed => 1,
        Value::Len { .. } => 2,
    };
    (u64::from(field) << 3) | wire
}

/// The fields of a `compact_sched` copy other than its packed lists (its comm table).
fn compact_rest(src: &Source, at: u64, len: u64) -> Vec<u8> {
    let mut c = Cursor::new(src, at, len);
    let mut out = Vec::new();
    while let Some((f, v)) = c.field() {
        if f == 5 {
            out.extend(raw_field(src, key_of(f, v), v).unwrap_or_default());
        }
    }
    out
}

impl Large {
    /// Tops up the lists' pending values to a window each.
    fn fill(&mut self) {
        let src = &self.src.clone();
        while self.pend_ev.len() < self.window {
            let Some(b) = self.events.next_bytes(src) else {
                break;
            };
            match FtraceEvent::decode(&b[..]) {
                // An event without a time goes with the last one (the decoder counts it).
                Ok(e) => {
                    let ts = e.timestamp.or(self.pend_ev.back().map(|p| p.0));
                    self.pend_ev.push_back((ts.unwrap_or(0), e));
                }
                Err(_) => self.bad_events += 1,
            }
        }
        while self.pend_sw.len() < self.window {
            let [t, s, p, r, c] = &mut self.switch;
            let Some(d) = t.next_int(src) else { break };
            let (Some(state), Some(pid), Some(prio), Some(comm)) = (
                s.next_int(src),
                p.next_int(src),
                r.next_int(src),
                c.next_int(src),
            ) else {
                // The other lists are shorter: the rest of the times are left out, and
                // counted by the decoder as a short list is (times past the others).
                self.short_sw += 1 + std::iter::from_fn(|| t.next_int(src)).count() as u64;
                break;
            };
            self.sw_ts = self.sw_ts.wrapping_add(d);
            self.pend_sw.push_back(Switch {
                ts: self.sw_ts,
                state: state as i64,
                pid: pid as i32,
                prio: prio as i32,
                comm: comm as u32,
            });
        }
        while self.pend_wk.len() < self.window {
            let [t, p, g, r, c, fl] = &mut self.waking;
            let Some(d) = t.next_int(src) else { break };
            let (Some(pid), Some(target), Some(prio), Some(comm)) = (
                p.next_int(src),
                g.next_int(src),
                r.next_int(src),
                c.next_int(src),
            ) else {
                self.short_wk += 1 + std::iter::from_fn(|| t.next_int(src)).count() as u64;
                break;
            };
            self.wk_ts = self.wk_ts.wrapping_add(d);
            self.pend_wk.push_back(Waking {
                ts: self.wk_ts,
                pid: pid as i32,
                target: target as i32,
                prio: prio as i32,
                comm: comm as u32,
                flags: fl.next_int(src).map(|f| f as u32),
            });
        }
    }
}

impl Large {
    /// The earliest time still to give, None once all is given.
    pub fn next_ts(&self) -> Option<u64> {
        let ev = self.pend_ev.front().map(|e| e.0);
        let sw = self.pend_sw.front().map(|s| s.ts);
        let wk = self.pend_wk.front().map(|w| w.ts);
        [ev, sw, wk].into_iter().flatten().min()
    }

    /// The next window as a packet's bytes, None once all is given. A window holds the
    /// values of each list earlier than every value not read yet (a list's values are in
    /// time order, so those come after its last value read): merged by the decoder as
    /// one bundle, they come out as the whole bundle's would.
    pub fn window(&mut self) -> Option<Vec<u8>> {
        self.fill();
        self.next_ts()?;
        // A list with fewer than a window pending has no more to read: no limit.
        let w = self.window;
        let full = |n: usize, back: Option<u64>| back.filter(|_| n >= w);
        let limit = [
            full(self.pend_ev.len(), self.pend_ev.back().map(|e| e.0)),
            full(self.pend_sw.len(), self.pend_sw.back().map(|s| s.ts)),
            full(self.pend_wk.len(), self.pend_wk.back().map(|w| w.ts)),
        ]
        .into_iter()
        .flatten()
        .min();
        let cut = |strict: bool| {
            let before = |t: u64| limit.is_none_or(|l| t < l || (!strict && t == l));
            let n_ev = self.pend_ev.iter().take_while(|e| before(e.0)).count();
            let n_sw = self.pend_sw.iter().take_while(|s| before(s.ts)).count();
            let n_wk = self.pend_wk.iter().take_while(|w| before(w.ts)).count();
            (n_ev, n_sw, n_wk)
        };
        // Every pending value at the limit itself (a window of equal times): they go
        // together, cut from the next equal ones.
        let (n_ev, n_sw, n_wk) = match cut(true) {
            (0, 0, 0) => cut(false),
            n => n,
        };
        let events = self.pend_ev.drain(..n_ev).map(|e| e.1).collect();
        let sw: Vec<Switch> = self.pend_sw.drain(..n_sw).collect();
        let wk: Vec<Waking> = self.pend_wk.drain(..n_wk).collect();
        let bytes = self.packet(events, &sw, &wk);
        self.first = false;
        Some(bytes)
    }

    /// One window's packet: the first carries the packet's and bundle's fields whole.
    fn packet(&mut self, event: Vec<FtraceEvent>, sw: &[Switch], wk: &[Waking]) -> Vec<u8> {
        let mut head = self.head.clone();
        let mut bundle = match self.first {
            true => self.bundle.clone(),
            false => {
                (head.previous_packet_dropped, head.first_packet_on_sequence) = (None, None);
                head.interned_data = None;
                FtraceEventBundle {
                    cpu: self.bundle.cpu,
                    ftrace_clock: self.bundle.ftrace_clock,
                    ..Default::default()
                }
            }
        };
        bundle.event = event;
        let (s, w) = (
            std::mem::take(&mut self.short_sw),
            std::mem::take(&mut self.short_wk),
        );
        bundle.compact_sched = self.compact.as_ref().map(|c| {
            let mut c = c.clone();
            let mut at = 0u64;
            for s in sw {
                c.switch_timestamp.push(s.ts.wrapping_sub(at));
                at = s.ts;
                c.switch_prev_state.push(s.state);
                c.switch_next_pid.push(s.pid);
                c.switch_next_prio.push(s.prio);
                c.switch_next_comm_index.push(s.comm);
            }
            at = 0;
            for w in wk {
                c.waking_timestamp.push(w.ts.wrapping_sub(at));
                at = w.ts;
                c.waking_pid.push(w.pid);
                c.waking_target_cpu.push(w.target);
                c.waking_prio.push(w.prio);
                c.waking_comm_index.push(w.comm);
                c.waking_common_flags.extend(w.flags);
            }
            // Times past the other lists' ends: the decoder counts them as left out.
            c.switch_timestamp.extend((0..s).map(|_| 0));
            c.waking_timestamp.extend((0..w).map(|_| 0));
            c
        });
        head.data = Some(Data::FtraceEvents(bundle));
        head.encode_to_vec()
    }
}
