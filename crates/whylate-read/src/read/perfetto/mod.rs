//! Perfetto's protobuf trace (`.perfetto-trace`, `.pftrace`, `.pb`; traced, tracebox,
//! Android, ChromeOS): a file indexed, then read packet by packet (`index`).
//!
//! A trace is a run of `TracePacket`s (`packets` walks them with one read buffer;
//! prost decodes each with the schema subset in [`protos`]). What is read:
//! - `ftrace_events` bundles: the typed kernel events, `compact_sched` (switches and
//!   wakings packed per bundle, with their comm table) and `generic` events by their field
//!   lists (`bundle`); kernel symbols interned per packet sequence (`symbolize_ksyms`);
//! - task names and thread groups from `process_tree`, `process_stats`, and the
//!   task_rename / task_newtask events;
//! - CPU count, kernel release and machine from `system_info`;
//! - lost data: bundles the kernel flagged (`lost_events`) and packets Perfetto dropped
//!   (`previous_packet_dropped`) become lost-events markers on their CPU; `ftrace_stats`
//!   (overruns) and `trace_stats` (buffer chunks overwritten) become notes;
//! - the clock: timestamps are the ftrace clock's as recorded (BOOTTIME unless the
//!   bundle says otherwise), said in a note with `clock_snapshot`'s BOOTTIME-MONOTONIC gap.
//!
//! The bundles may lie in the file in any order: a first pass notes each one's place and
//! earliest time (`index`), and they are decoded by that time, after the packets that are
//! not bundles; events wait, a queue per CPU, until the next bundle starts after them
//! (`order`). A stream that cannot be read twice ([`Perfetto::from_reader`]) is read in
//! file order instead, its events waiting until every CPU still writing has gone past
//! them, up to a drain period of every CPU.

pub(crate) mod apart;
mod binary;
mod bundle;
pub(crate) mod index;
mod large;
mod order;
mod packets;
pub mod protos;
mod source;
pub mod sysargs;
#[cfg(test)]
pub(crate) mod tests;

use self::bundle::{Counts, CpuState, Held, Symbols};
use self::packets::{Next, Packets};
use self::protos::trace_packet::Data;
use super::comms::Comms;
use super::{Diag, OrderCheck, OrderStats, ReadError};
use crate::event::{Event, Interner, Kind, Sym};
use prost::Message;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use packets::CHUNK;

use super::format::Format;

pub(crate) use binary::PERFETTO;

impl Format {
    /// Perfetto's protobuf trace (traced, tracebox, Android).
    #[allow(non_upper_case_globals)]
    pub const Perfetto: Format = Format::named("perfetto");
}

/// True when `head` starts like a Perfetto trace: packets (tag 0x0a, a length) whose first
/// with content decodes and holds something a trace packet holds, followed by another
/// packet or the end. A text file that starts with a blank line (also 0x0a) fails one of
/// these. A first packet longer than `head` (or cut inside it) must start with a field
/// a trace packet has, of the right kind, that fits in it.
pub fn sniff(head: &[u8]) -> bool {
    let mut p = Packets::new(head, head.len().max(1));
    loop {
        let first = match p.next() {
            // Empty packets (padding) say nothing.
            Ok(Next::Packet { bytes: [], .. }) => continue,
            Ok(Next::Packet { bytes, .. }) => match protos::TracePacket::decode(bytes) {
                Ok(t) => {
                    t.data.is_some()
                        || t.optional_trusted_packet_sequence_id.is_some()
                        || t.timestamp.is_some()
                        || t.interned_data.is_some()
                }
                Err(_) => false,
            },
            Ok(Next::Cut { at, want, .. }) if want > 0 => {
                return head
                    .get(at as usize..)
                    .is_some_and(|b| starts_a_packet(b, want));
            }
            _ => false,
        };
        return first
            && matches!(
                p.next(),
                Ok(Next::Packet { .. } | Next::End | Next::Cut { .. })
            );
    }
}

/// `TracePacket`'s number fields (the rest are messages, strings or bytes).
const NUMBER_FIELDS: [u32; 9] = [3, 8, 10, 13, 41, 42, 58, 79, 87];

/// True when `b`, the start of a packet of `len` bytes, begins with a field `TracePacket`
/// has: a bundle, a process tree or any other length-delimited kind whose length fits
/// in the packet, or a number (timestamp, sequence id) whose varint ends in `b`.
fn starts_a_packet(b: &[u8], len: u64) -> bool {
    use prost::encoding::{decode_key, decode_varint, WireType};
    let mut buf = b;
    let Ok((field, wire)) = decode_key(&mut buf) else {
        return false;
    };
    let number = NUMBER_FIELDS.contains(&field);
    if !protos::PACKET_FIELDS.iter().any(|(n, _)| *n == field)
        || number != (wire == WireType::Varint)
    {
        return false;
    }
    match wire {
        WireType::LengthDelimited => match decode_varint(&mut buf) {
            // The key and the length, then the field's bytes, within the packet.
            Ok(n) => ((b.len() - buf.len()) as u64)
                .checked_add(n)
                .is_some_and(|e| e <= len),
            Err(_) => false,
        },
        WireType::Varint => decode_varint(&mut buf).is_ok(),
        _ => false,
    }
}

/// What the trace's own packets said about the recording.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PerfettoInfo {
    /// Packets read.
    pub packets: u64,
    /// CPUs (`system_info.num_cpus`).
    pub cpus: Option<u32>,
    /// `uname -r` of the traced machine.
    pub kernel: Option<String>,
    /// `uname -m` of the traced machine.
    pub machine: Option<String>,
    /// The clock of the ftrace timestamps, as the bundles named it.
    pub clock: String,
    /// Packets of kinds not read, by `TracePacket` field name.
    pub skipped: BTreeMap<String, u64>,
}

/// Per packet sequence: what was interned on it.
#[derive(Default)]
struct SeqState {
    kernel_symbols: FxHashMap<u64, Sym>,
    /// A packet was seen on it (a later `previous_packet_dropped` is a loss).
    seen: bool,
}

/// Per-CPU `ftrace_stats` counters: (overrun, dropped) at the start and the end.
#[derive(Clone, Copy, Default)]
struct CpuCounters {
    start: Option<(u64, u64)>,
    end: Option<(u64, u64)>,
}

/// Reads a Perfetto trace: the reading half (packets walked and decoded by prost) and the
/// decoding state, which `apart` moves to the thread that builds the timeline.
pub struct Perfetto {
    path: PathBuf,
    packets: Walker,
    cut: super::decompress::Cut,
    st: State,
    slot: Option<Event>,
    /// Event vectors of bundles already taken, emptied, for the next bundles to decode
    /// into ([`Perfetto::recycle`]).
    pool: Vec<Vec<protos::FtraceEvent>>,
    /// Bytes of the packets given so far.
    given: u64,
}

/// Where the packets come from: the stream in file order, or an indexed file with its
/// bundles in time order ([`index`]).
enum Walker {
    Stream(Packets<Box<dyn Read + Send>>),
    Indexed(index::Indexed),
}

impl Walker {
    fn next(&mut self) -> std::io::Result<Next<'_>> {
        match self {
            Walker::Stream(p) => p.next(),
            Walker::Indexed(p) => p.next(),
        }
    }

    fn offset(&self) -> u64 {
        match self {
            Walker::Stream(p) => p.offset(),
            Walker::Indexed(p) => p.offset(),
        }
    }
}

/// Emptied event vectors kept for reuse at most.
const POOL: usize = 32;

/// What [`Perfetto::read_with`] read.
pub(crate) enum Got<T> {
    /// A packet, as the caller made it.
    Packet(T),
    /// Something else: a stray field, the end of the stream.
    Other(Item),
}

/// What one step of the reading half read.
pub(crate) enum Item {
    /// A packet decoded, and the name of its data field when the schema here does not
    /// hold it (counted as skipped).
    Packet(Box<protos::TracePacket>, Option<String>),
    /// A packet that does not decode: where, its size, and why.
    Bad { at: u64, len: usize, why: String },
    /// A large bundle read in part (its windows came before): where, its size, and why.
    Partial { at: u64, len: u64, why: String },
    /// A field of the outer `Trace` other than a packet.
    Stray,
    /// The end of the stream, and why it ended early (cut, damaged), if it did.
    End(Option<String>),
}

/// The reader's state besides its input: the hold, the tasks, what was noticed.
pub(crate) struct State {
    order: order::Hold,
    cpus: Vec<CpuState>,
    seqs: FxHashMap<u32, SeqState>,
    comms: Comms,
    /// Each task's last known priority (for compact switches out of a task whose switch in
    /// was not in the trace).
    prios: FxHashMap<i32, i32>,
    diag: Diag,
    check: OrderCheck,
    info: PerfettoInfo,
    counts: Counts,
    counters: BTreeMap<u32, CpuCounters>,
    /// trace_stats' losses: (chunks overwritten, chunks discarded, packets lost).
    buffer_loss: (u64, u64, u64),
    /// BOOTTIME minus MONOTONIC at the first clock snapshot, ns.
    boot_minus_mono: Option<i64>,
    /// Events in Perfetto's denser generic encoding (not read), by group.
    dense_generic: u64,
    /// Bundles that named no CPU or one past 4096, and their events (left out).
    cpuless: (u64, u64),
    /// Packets that did not decode, and their bytes.
    bad: (u64, u64),
    /// Large bundles read up to damage inside them, and what the first said.
    partial: (u64, Option<String>),
    old_kernel: bool,
    done: bool,
    /// Bundles come by their earliest time ([`index`]): every event before the next
    /// bundle's may go.
    sorted: bool,
    /// Kernel symbols of every packet (an indexed trace), interned at the first packet.
    preload: Vec<(u32, u64, Vec<u8>)>,
    /// Of an indexed trace: symbol ids named twice.
    symbol_conflicts: u64,
}

impl Perfetto {
    /// Keeps the event vector of a packet taken, emptied, for a later bundle.
    pub(crate) fn recycle(&mut self, it: Item) {
        recycle(&mut self.pool, it);
    }
}

/// Keeps the event vector of `it`, emptied, in `pool` for a later bundle.
pub(crate) fn recycle(pool: &mut Vec<Vec<protos::FtraceEvent>>, it: Item) {
    if let Item::Packet(p, _) = it {
        if let Some(Data::FtraceEvents(b)) = p.data {
            let mut event = b.event;
            if pool.len() < POOL && event.capacity() > 0 {
                event.clear();
                pool.push(event);
            }
        }
    }
}

impl State {
    fn new() -> State {
        let mut check = OrderCheck::default();
        check.stats.window = order::DEFAULT_HOLD;
        State {
            order: order::Hold::default(),
            cpus: Vec::new(),
            seqs: FxHashMap::default(),
            comms: Comms::new(Vec::new(), Vec::new()),
            prios: FxHashMap::default(),
            diag: Diag::default(),
            check,
            info: PerfettoInfo {
                clock: "boot".into(),
                ..PerfettoInfo::default()
            },
            counts: Counts::default(),
            counters: BTreeMap::new(),
            buffer_loss: (0, 0, 0),
            boot_minus_mono: None,
            dense_generic: 0,
            cpuless: (0, 0),
            bad: (0, 0),
            partial: (0, None),
            old_kernel: false,
            done: false,
            sorted: false,
            preload: Vec::new(),
            symbol_conflicts: 0,
        }
    }

    /// Takes what the reading half read (by reference: a packet is freed where it was
    /// decoded, whose allocator then reuses its memory).
    pub(crate) fn take(&mut self, it: &Item, s: &mut Interner) {
        for (seq, iid, name) in std::mem::take(&mut self.preload) {
            let t = &mut self.seqs.entry(seq).or_default().kernel_symbols;
            t.insert(iid, s.intern_bytes(&name));
        }
        match it {
            Item::Packet(p, skipped) => {
                if let Some(name) = skipped {
                    *self.info.skipped.entry(name.clone()).or_default() += 1;
                }
                self.info.packets += 1;
                self.packet(p, s);
            }
            Item::Bad { at, len, why } => {
                self.bad = (self.bad.0 + 1, self.bad.1 + *len as u64);
                self.diag.bad(
                    0,
                    format!("byte {at}: a packet of {len} bytes that does not decode ({why})")
                        .as_bytes(),
                    "a TracePacket",
                )
            }
            Item::Partial { at, len, why } => {
                let first = format!("byte {at}, {len} bytes: {why}");
                self.partial = (self.partial.0 + 1, self.partial.1.take().or(Some(first)));
            }
            Item::Stray => {}
            Item::End(why) => self.end(why.clone()),
        }
    }

    /// The next event whose time has come (every event, once the stream ended).
    pub(crate) fn next_ready(&mut self, s: &mut Interner) -> Option<Event> {
        let h = self.order.pop(self.done)?;
        Some(self.finish(h, s))
    }
}

impl Perfetto {
    /// Reads the trace from `rd` (decompressed) in file order, `chunk` bytes at a time
    /// ([`CHUNK`] normally; tests pass a few to split packets across reads), for a
    /// reader that cannot be read twice (`read::open` spools a stream and indexes it
    /// instead). `cut` says when a compressed stream was cut short. At most `window`
    /// events (`--reorder`) wait for the CPUs' order, at least 524,288 (one drain period
    /// of every CPU): bundles out of order by more than that come late.
    pub fn from_reader(
        path: &Path,
        rd: Box<dyn Read + Send>,
        chunk: usize,
        cut: super::decompress::Cut,
        window: usize,
    ) -> Self {
        let mut st = State::new();
        st.order.set_max(window);
        st.check.stats.window = st.order.max();
        Perfetto {
            path: path.to_path_buf(),
            packets: Walker::Stream(Packets::new(rd, chunk)),
            cut,
            st,
            slot: None,
            pool: Vec::new(),
            given: 0,
        }
    }

    /// Reads the trace file `src` indexed by `index` (made of the same bytes): its
    /// bundles in time order whatever their order in the file.
    pub(crate) fn from_index(
        path: &Path,
        mut index: index::Index,
        src: index::Source,
        cut: super::decompress::Cut,
    ) -> Self {
        let mut st = State::new();
        st.sorted = true;
        st.order.set_max(usize::MAX);
        st.check.stats.window = 0;
        st.symbol_conflicts = index.symbol_conflicts;
        st.preload = std::mem::take(&mut index.symbols);
        Perfetto {
            path: path.to_path_buf(),
            packets: Walker::Indexed(index::Indexed::new(index, src)),
            cut,
            st,
            slot: None,
            pool: Vec::new(),
            given: 0,
        }
    }

    /// What the packets said.
    pub fn info(&self) -> &PerfettoInfo {
        &self.st.info
    }
    /// What the reader noticed.
    pub fn diag(&self) -> &Diag {
        &self.st.diag
    }
    /// Events that came earlier than one already given (see `order`).
    pub fn order(&self) -> OrderStats {
        OrderStats {
            full: self.st.order.full,
            ..self.st.check.stats
        }
    }
    /// Where the analysis is blind or approximate, and which clock the times are on.
    pub fn notes(&self) -> Vec<String> {
        self.st.notes(self.bytes())
    }
    /// Bytes of the (decompressed) trace read so far.
    pub fn bytes(&self) -> u64 {
        self.packets.offset()
    }

    /// Next event, decoded.
    pub fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        Ok(match self.step(s)? {
            true => self.slot.take(),
            false => None,
        })
    }

    /// Next event, lent.
    pub fn next_ref(&mut self, s: &mut Interner) -> Result<Option<&Event>, ReadError> {
        Ok(match self.step(s)? {
            true => self.slot.as_ref(),
            false => None,
        })
    }

    fn step(&mut self, s: &mut Interner) -> Result<bool, ReadError> {
        self.st.comms.seed(s);
        loop {
            if let Some(e) = self.st.next_ready(s) {
                self.slot = Some(e);
                return Ok(true);
            }
            if self.st.done {
                return Ok(false);
            }
            let it = self.read_item()?;
            self.st.take(&it, s);
            self.recycle(it);
        }
    }

    /// Reads and decodes the next packet (or notes the end).
    pub(crate) fn read_item(&mut self) -> Result<Item, ReadError> {
        let mut pool = std::mem::take(&mut self.pool);
        let got = self.read_with(|at, bytes| decode(at, bytes, pool.pop()));
        self.pool = pool;
        Ok(match got? {
            Got::Packet(it) | Got::Other(it) => it,
        })
    }

    /// Reads the next packet and gives what `packet` makes of it (its offset, its bytes),
    /// or what else came (a stray field, the end of the stream).
    pub(crate) fn read_with<T>(
        &mut self,
        packet: impl FnOnce(u64, &[u8]) -> T,
    ) -> Result<Got<T>, ReadError> {
        let io_err = |source| ReadError::Io {
            path: self.path.clone(),
            source,
        };
        let next = self.packets.next().map_err(io_err)?;
        let why = match next {
            Next::Packet { at, bytes } => {
                self.given += bytes.len() as u64;
                return Ok(Got::Packet(packet(at, bytes)));
            }
            Next::Stray { .. } => return Ok(Got::Other(Item::Stray)),
            Next::Bad { at, len, why } => return Ok(Got::Other(Item::Partial { at, len, why })),
            // Only an indexed trace's walk passes packets over, and it reads them itself.
            Next::Large { at, len } => {
                return Ok(Got::Other(Item::Bad {
                    at,
                    len: len as usize,
                    why: "a packet too large to hold".into(),
                }))
            }
            Next::End => None,
            Next::Cut { at, have, want } => Some(match want {
                0 => format!("the trace ends inside a packet's header at byte {at}"),
                _ => format!(
                    "the trace ends inside a packet: byte {at} starts {want} bytes of which {have} are there"
                ),
            }),
            Next::Garbage { at, why } => Some(format!(
                "byte {at}: {why}: the rest of the file is unread"
            )),
        };
        Ok(Got::Other(Item::End(match (why, self.cut.get()) {
            (Some(w), Some(c)) => Some(format!("{w} ({c})")),
            (None, Some(c)) => Some(c.clone()),
            (w, None) => w,
        })))
    }
}

/// The packet at byte `at`, decoded by prost; a bundle's events into `events` (an emptied
/// vector of an earlier bundle: growing a fresh one event by event cost the reading
/// thread a tenth of its time in realloc and copies).
pub(crate) fn decode(at: u64, bytes: &[u8], events: Option<Vec<protos::FtraceEvent>>) -> Item {
    let mut p = protos::TracePacket::default();
    if let Some(event) = events {
        // prost merges a packet's bundle into the bundle already there.
        p.data = Some(Data::FtraceEvents(protos::FtraceEventBundle {
            event,
            ..Default::default()
        }));
    }
    let decoded = p.merge(bytes).map(|()| {
        // A packet without a bundle left the empty one there: it had none.
        let empty = matches!(&p.data, Some(Data::FtraceEvents(b)) if *b == Default::default());
        if empty && !packets::holds_bundle(bytes) {
            p.data = None;
        }
        p
    });
    match decoded {
        Ok(p) => {
            let skipped = match p.data {
                Some(_) => None,
                None => packets::first_data_field(bytes).map(|f| {
                    (protos::PACKET_FIELDS.iter())
                        .find(|(n, _)| *n == f)
                        .map_or_else(|| format!("field {f}"), |(_, n)| n.to_string())
                }),
            };
            Item::Packet(Box::new(p), skipped)
        }
        Err(e) => Item::Bad {
            at,
            len: bytes.len(),
            why: e.to_string(),
        },
    }
}

impl State {
    /// The event of `h`, named after its task as of now (time order).
    fn finish(&mut self, h: Held, s: &mut Interner) -> Event {
        let mut kind = h.kind;
        // Compact events leave out names the reader learns from elsewhere.
        match &mut kind {
            Kind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                next_comm,
                next_pid,
                next_prio,
                ..
            } => {
                if *next_comm == Sym::EMPTY && *next_pid > 0 {
                    *next_comm = self.comms.get(*next_pid);
                }
                if *prev_comm == Sym::EMPTY && *prev_pid > 0 {
                    *prev_comm = self.comms.get(*prev_pid);
                } else if *prev_comm == Sym::EMPTY && *prev_pid == 0 {
                    *prev_comm = s.intern(&format!("swapper/{}", h.cpu));
                }
                if *prev_prio == bundle::UNKNOWN_PRIO {
                    *prev_prio = self.prios.get(prev_pid).copied().unwrap_or(120);
                }
                self.prios.insert(*next_pid, *next_prio);
            }
            Kind::SchedWaking {
                comm, pid, prio, ..
            }
            | Kind::SchedWakeup {
                comm, pid, prio, ..
            } => {
                if *comm == Sym::EMPTY {
                    *comm = self.comms.get(*pid);
                }
                self.prios.insert(*pid, *prio);
            }
            _ => {}
        }
        self.comms.learn(&kind);
        if let Some((pid, name)) = h.names {
            self.comms.set(pid, name);
        }
        self.check.see(h.ts);
        Event {
            ts: h.ts,
            cpu: h.cpu,
            tid: h.tid,
            tgid: self.comms.tgid(h.tid),
            comm: if h.tid < 0 {
                s.intern("<...>")
            } else {
                self.comms.get(h.tid)
            },
            flags: h.flags,
            kind,
        }
    }

    /// The stream ended (`why` when it was cut or damaged).
    fn end(&mut self, why: Option<String>) {
        self.done = true;
        if let Some(w) = why {
            self.diag.truncated = Some(w);
            self.diag.cut_cpus = (0..self.cpus.len() as u32).collect();
        }
    }

    /// What one packet holds, into the reader's state and the hold.
    fn packet(&mut self, p: &protos::TracePacket, s: &mut Interner) {
        use protos::trace_packet::OptionalTrustedPacketSequenceId as Seq;
        let seq_id = match p.optional_trusted_packet_sequence_id {
            Some(Seq::TrustedPacketSequenceId(id)) => id,
            None => 0,
        };
        let cleared =
            p.incremental_state_cleared == Some(true) || p.sequence_flags.unwrap_or(0) & 1 != 0;
        let seq = self.seqs.entry(seq_id).or_default();
        // Sorted, a packet's place is not its file place: the table holds every
        // symbol of the trace instead ([`index`]).
        if cleared && !self.sorted {
            seq.kernel_symbols.clear();
        }
        let dropped = seq.seen
            && p.previous_packet_dropped.unwrap_or(0) != 0
            && p.first_packet_on_sequence != Some(true);
        seq.seen = true;
        if let Some(i) = &p.interned_data {
            for k in &i.kernel_symbols {
                if let (Some(iid), Some(name)) = (k.iid, &k.str) {
                    seq.kernel_symbols.insert(iid, s.intern_bytes(name));
                }
            }
        }
        match &p.data {
            Some(Data::FtraceEvents(b)) => self.bundle(b, seq_id, dropped, s),
            Some(Data::ProcessTree(t)) => {
                for th in &t.threads {
                    if let Some(tid) = th.tid {
                        if let Some(n) = &th.name {
                            let n = s.intern_bytes(n);
                            self.comms.name_if_unknown(tid, n);
                        }
                        if let Some(g) = th.tgid {
                            self.comms.set_tgid(tid, g);
                        }
                    }
                }
                for pr in &t.processes {
                    let Some(pid) = pr.pid else { continue };
                    self.comms.set_tgid(pid, pid);
                    // A process's main thread: its command line's first word, or its comm.
                    if let Some(first) = pr.cmdline.first() {
                        let name = match pr.cmdline_is_comm {
                            Some(true) => &first[..],
                            _ => first.rsplit(|c| *c == b'/').next().unwrap_or(first),
                        };
                        let n = s.intern_bytes(&name[..name.len().min(15)]);
                        self.comms.name_if_unknown(pid, n);
                    }
                }
            }
            Some(Data::ProcessStats(st)) => {
                for pr in &st.processes {
                    let Some(pid) = pr.pid else { continue };
                    for th in &pr.threads {
                        if let Some(tid) = th.tid {
                            self.comms.set_tgid(tid, pid);
                        }
                    }
                }
            }
            Some(Data::SystemInfo(si)) => self.system_info(si),
            Some(Data::FtraceStats(fs)) => self.ftrace_stats(fs),
            Some(Data::TraceStats(ts)) => {
                for b in &ts.buffer_stats {
                    self.buffer_loss.0 += b.chunks_overwritten.unwrap_or(0);
                    self.buffer_loss.1 += b.chunks_discarded.unwrap_or(0);
                    self.buffer_loss.2 += b.trace_writer_packet_loss.unwrap_or(0);
                }
            }
            Some(Data::ClockSnapshot(c)) if self.boot_minus_mono.is_none() => {
                let at = |id| c.clocks.iter().find(|k| k.clock_id == Some(id))?.timestamp;
                if let (Some(boot), Some(mono)) = (at(6), at(3)) {
                    self.boot_minus_mono = Some(boot as i64 - mono as i64);
                }
            }
            // Userspace slices are not read yet: skipped, and counted as such.
            Some(Data::TrackEvent(_)) => self.skipped("track_event"),
            Some(Data::TrackDescriptor(_)) => self.skipped("track_descriptor"),
            _ => {}
        }
    }

    /// Counts a packet of a kind not read.
    fn skipped(&mut self, kind: &str) {
        *self.info.skipped.entry(kind.to_string()).or_default() += 1;
    }

    fn system_info(&mut self, si: &protos::SystemInfo) {
        if let Some(n) = si.num_cpus {
            self.info.cpus = Some(n);
            self.order.expect(n as usize);
            self.diag.header.cpus = Some(n);
        }
        if let Some(u) = &si.utsname {
            let text =
                |b: &Option<Vec<u8>>| b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
            self.info.kernel = text(&u.release);
            self.info.machine = text(&u.machine);
            self.old_kernel = self.info.kernel.as_deref().is_some_and(before_4_14);
        }
    }

    fn ftrace_stats(&mut self, fs: &protos::FtraceStats) {
        // Without system_info, the CPUs the stats name are the CPUs that may still come.
        if self.info.cpus.is_none() {
            let n = fs.cpu_stats.iter().filter_map(|c| c.cpu).max();
            if let Some(n) = n.and_then(|n| usize::try_from(n).ok()) {
                self.order.expect(n.saturating_add(1));
            }
        }
        // Phase 1: START_OF_TRACE, 2: END_OF_TRACE.
        let phase = fs.phase.unwrap_or(0);
        for c in &fs.cpu_stats {
            let Some(cpu) = c.cpu else { continue };
            let v = (c.overrun.unwrap_or(0), c.dropped_events.unwrap_or(0));
            let e = self.counters.entry(cpu as u32).or_default();
            match phase {
                1 => e.start = Some(v),
                2 => e.end = Some(v),
                _ => {}
            }
        }
    }

    /// One bundle: its events into the hold, a lost-events marker first when the kernel or
    /// Perfetto lost some before it.
    fn bundle(
        &mut self,
        b: &protos::FtraceEventBundle,
        seq_id: u32,
        dropped: bool,
        s: &mut Interner,
    ) {
        let compact = (b.compact_sched.as_ref())
            .map_or(0, |c| c.switch_timestamp.len() + c.waking_timestamp.len());
        let events = (b.event.len() + compact) as u64;
        let Some(cpu) = b.cpu.filter(|&c| c <= 4096) else {
            self.diag.unparsed += events;
            self.cpuless = (self.cpuless.0 + 1, self.cpuless.1 + events);
            return;
        };
        if self.cpus.len() <= cpu as usize {
            self.cpus.resize(cpu as usize + 1, CpuState::default());
        }
        if let Some(c) = b.ftrace_clock {
            self.info.clock = match c {
                2 => "global",
                3 => "local",
                4 => "mono_raw",
                0 => "boot",
                _ => "unknown",
            }
            .into();
        }
        self.dense_generic += b.generic_event_descriptors.len() as u64;
        let ks = Symbols {
            interned: self
                .seqs
                .get(&seq_id)
                .map(|q| &q.kernel_symbols)
                .filter(|t| !t.is_empty()),
        };
        let mut out = self.order.vec();
        let compact = b.compact_sched.as_ref();
        let n = compact.map_or(0, |c| c.switch_timestamp.len() + c.waking_timestamp.len());
        out.reserve(b.event.len() + n + 1);
        bundle::bundle_events(
            cpu,
            &b.event,
            b.compact_sched.as_ref(),
            &mut self.cpus[cpu as usize],
            s,
            &ks,
            self.old_kernel,
            &mut self.counts,
            &mut out,
        );
        if (b.lost_events == Some(true) || dropped) && !out.is_empty() {
            let ts = out[0].ts;
            let lost = Held {
                ts,
                cpu,
                tid: -1,
                flags: 0,
                kind: Kind::Lost { count: None },
                names: None,
            };
            out.insert(0, lost);
        }
        let first = out.iter().map(|h| h.ts).min();
        self.order.push_bundle(cpu, out);
        match (self.sorted, first) {
            (true, Some(t)) => self.order.settle_before(t),
            (true, None) => {}
            (false, _) => self.order.settle(),
        }
    }

    /// Where the analysis is blind or approximate because of how the trace was recorded,
    /// and which clock it runs on: for the report's notes (`read`: the trace's bytes read).
    pub fn notes(&self, read: u64) -> Vec<String> {
        let mut n = Vec::new();
        let clock = match self.info.clock.as_str() {
            "boot" => "the kernel's boot clock (CLOCK_BOOTTIME, Perfetto's default)".to_string(),
            c => format!("the ftrace clock `{c}`"),
        };
        let gap = match self.boot_minus_mono {
            Some(d) if d.unsigned_abs() >= 1_000_000 => format!(
                "; BOOTTIME was {} ahead of CLOCK_MONOTONIC (time suspended): subtract it to compare with monotonic timestamps",
                crate::units::dur(d.unsigned_abs())
            ),
            _ => String::new(),
        };
        n.push(format!("times are ftrace timestamps on {clock}{gap}"));
        let lost: Vec<String> = (self.counters.iter())
            .filter_map(|(cpu, c)| {
                let (s, e) = (c.start.unwrap_or((0, 0)), c.end?);
                let d = e.0.saturating_sub(s.0) + e.1.saturating_sub(s.1);
                (d > 0).then(|| format!("{d} on CPU {cpu}"))
            })
            .collect();
        if !lost.is_empty() {
            n.push(format!(
                "the kernel's ring buffer overran or dropped events (ftrace_stats): {}; the analysis is blind where they were lost",
                lost.join(", ")
            ));
        }
        let (over, disc, pk) = self.buffer_loss;
        if over + disc + pk > 0 {
            n.push(format!(
                "Perfetto's trace buffer lost data (trace_stats: {over} chunks overwritten, {disc} discarded, {pk} packets lost): the trace's start or parts of it are missing"
            ));
        }
        let c = &self.counts;
        if c.other_typed > 0 {
            n.push(format!(
                "{} ftrace events of kinds whylate does not read (e.g. cpu_frequency, binder) were skipped",
                c.other_typed
            ));
        }
        if self.dense_generic > 0 {
            n.push(format!(
                "{} events used Perfetto's denser generic encoding (denser_generic_event_encoding), which whylate does not read: they were skipped",
                self.dense_generic
            ));
        }
        if c.missing_symbols > 0 {
            n.push(format!(
                "{} kernel symbols were interned ids with no name on their sequence: shown as numbers",
                c.missing_symbols
            ));
        }
        if self.symbol_conflicts > 0 {
            n.push(format!(
                "{} kernel symbol ids were interned with two names on one sequence (the trace cleared its interning and reused them): the first name is shown",
                self.symbol_conflicts
            ));
        }
        if self.bad.0 > 0 {
            n.push(format!(
                "{} packets that do not decode ({} bytes, {:.1}% of the trace read) were skipped: the events in them are lost, on CPUs they do not say",
                self.bad.0,
                self.bad.1,
                100.0 * self.bad.1 as f64 / read.max(1) as f64
            ));
        }
        if let (k, Some(first)) = &self.partial {
            n.push(format!(
                "{k} large bundles hold damage: each of their lists was read up to it, its values after it are lost (the first: {first})"
            ));
        }
        if self.cpuless.0 > 0 {
            n.push(format!(
                "{} ftrace bundles named no CPU, or a CPU number over 4096: their {} events were left out",
                self.cpuless.0, self.cpuless.1
            ));
        }
        if c.no_time > 0 {
            n.push(format!(
                "{} ftrace events had no timestamp and were left out",
                c.no_time
            ));
        }
        if c.compact_unknown_prev > 0 {
            n.push(format!(
                "{} compact sched_switch events came before any event said who ran on their CPU: their previous task is unknown",
                c.compact_unknown_prev
            ));
        }
        if c.far_time > 0 {
            n.push(format!(
                "{} ftrace events had a timestamp past 2^62 ns (damage) and were left out",
                c.far_time
            ));
        }
        if c.bad_comm > 0 {
            n.push(format!(
                "{} compact_sched events named a task by an index past their bundle's comm table: shown as the name the trace gives elsewhere, or <...>",
                c.bad_comm
            ));
        }
        if c.compact_short > 0 {
            n.push(format!(
                "{} compact_sched events had fields missing and were left out",
                c.compact_short
            ));
        }
        if !self.info.skipped.is_empty() {
            let kinds: Vec<String> = (self.info.skipped.iter())
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            n.push(format!(
                "packets of kinds whylate does not read were skipped: {}",
                kinds.join(", ")
            ));
        }
        n
    }
}

/// True when a kernel release (`3.18.0-foo`) is older than 4.14, whose `prev_state` bits
/// meant other states.
fn before_4_14(release: &str) -> bool {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) < (4, 14),
        _ => false,
    }
}
