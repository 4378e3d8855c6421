//! The cycle cutter: finds request/response cycles in the event stream while it is read
//! (a `--from` match opens one, a later `--to` match by the same thread, process or
//! anyone closes it). Requests that overlap are paired first in, first out, or by a field
//! both events carry, or a new request abandons the open one (`Pairing`).

use crate::event::{flags, Event, Interner, Kind, Sym};
use crate::explain::cycle::{Cycle, CycleStore};
use crate::explain::queues::{Queue, Queues};
use crate::fdpath::FdPaths;
use crate::selector::{Names, Seen, Selector};
use crate::syscalls::Arch;
use rustc_hash::FxHashMap;

/// Requests kept open at once under one key: a reply that comes after this many later
/// requests is not waited for (no real request queue is this deep, and an open request
/// costs memory until the trace ends).
pub const OPEN_CAP: usize = 1 << 16;

/// Keys kept at least before those with no request open are forgotten.
const PRUNE_AT: usize = 1024;

/// Which later `to` closes a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Same {
    /// The thread that matched `from` (default).
    #[default]
    Thread,
    /// Any thread of its process.
    Tgid,
    /// Anyone.
    Any,
}

/// How a reply finds its request when several are open at once.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Pairing {
    /// The oldest open request gets the next reply (requests in flight are answered in
    /// order: a socket, a pipe, a serial line). Default.
    #[default]
    Fifo,
    /// A new request abandons the open one, which had no reply (a client that gives up
    /// and asks again).
    Latest,
    /// Request and reply carry the same value of this field (on a syscall exit, the field
    /// of the call it returns from: `fd`); first in, first out among equal values.
    Key(String),
}

impl Pairing {
    /// In words, for the report: `fifo`, `latest`, `key fd`.
    pub fn label(&self) -> String {
        match self {
            Pairing::Fifo => "fifo".into(),
            Pairing::Latest => "latest".into(),
            Pairing::Key(f) => format!("key {f}"),
        }
    }
}

/// What to explain.
#[derive(Clone, Debug)]
pub struct Options {
    /// Opens a cycle.
    pub from: Selector,
    /// Closes it (any of them).
    pub to: Vec<Selector>,
    /// Cycles longer than this, and cycles with no reply, are misses.
    pub deadline_ns: Option<u64>,
    /// Who may close a cycle.
    pub same: Same,
    /// How overlapping requests are paired with replies.
    pub pairing: Pairing,
    /// Syscall table for raw_syscalls events; `None`: the one the reading pass settles
    /// on (`--arch`, else what the trace says, else x86_64).
    pub arch: Option<Arch>,
    /// Misses whose chain is shown in the terminal.
    pub top: usize,
    /// Where the usual chain is learnt: this analysis's good cycles (the default), or a
    /// memory shared by the windows of a live stream.
    pub learned: crate::explain::learned::Learned,
}

/// Cuts cycles from the stream.
pub struct Cycles {
    pub(in crate::explain) from: Selector,
    pub(in crate::explain) to: Vec<Selector>,
    pub(in crate::explain) same: Same,
    pub(in crate::explain) arch: Arch,
    /// The options named the syscall table: the trace's does not replace it.
    pub(in crate::explain) arch_given: bool,
    pub(in crate::explain) pairing: Pairing,
    /// Open requests per pairing key (who may close them, the key field's value), oldest
    /// first. A key's queue is kept when it drains, so that the next request of a
    /// thread that asks one thing at a time allocates nothing ([`Self::prune`]).
    pub(in crate::explain) open: Queues,
    /// Requests open, over every key.
    open_n: usize,
    /// Per thread, the key field's value on its last syscall entry (exits lack it).
    enter_keys: FxHashMap<i32, i64>,
    /// Requests that began while an earlier one was still open.
    pub overlapped: u64,
    /// `from` is a system call's entry and every `to` its exit, on the same thread: a
    /// thread is in one call at a time, so a new entry while a call is open means the
    /// trace lost the open call's exit ([`Cycle::end_lost`]), never a second request.
    one_call: bool,
    /// The most requests open at once under one key.
    pub max_open: u64,
    /// Requests dropped unanswered because [`OPEN_CAP`] were open at once: selectors that
    /// do not pair (a `--to` that never matches) must not grow memory with the input.
    pub dropped: u64,
    /// `to` matches, and those that found an open request (a reply).
    pub to_matched: u64,
    /// See `to_matched`.
    pub replies: u64,
    /// `to` matches that `from` matched too: they open a cycle, never close one.
    to_also_from: u64,
    /// The cycles, in start order.
    pub cycles: CycleStore,
    /// Offsets of the writes [`Cycle::writes`] counts, of every cycle, in the order seen:
    /// only their distribution is used, and a vector per cycle cost 24 bytes each.
    pub writes: Vec<u64>,
    pub(in crate::explain) write_name: Option<Sym>,
    /// Per raw syscall number: 0 not asked yet, 1 not `write`, 2 `write` (see
    /// [`Self::write_nr`]).
    write_nrs: Vec<u8>,
    /// Per thread, the write it is inside and counted in [`Self::writes`]: (cycle, index
    /// there). When that write's exit is the cycle's reply, the write was the answer, not
    /// a complaint, and is taken back.
    in_write: FxHashMap<i32, (usize, usize)>,
    /// Descriptor names, when a selector filters on `path`.
    pub(in crate::explain) paths: Option<FdPaths>,
    /// What the selectors met, to say why they selected nothing.
    pub(in crate::explain) seen_from: Seen,
    pub(in crate::explain) seen_to: Vec<Seen>,
    pub(in crate::explain) names: Names,
    /// Every selector met its event: the trace's names are no longer noted.
    names_done: bool,
    /// Requests and replies that carried the `--key` field (none: a mistyped field).
    keyed: u64,
    /// Per system call shape ([`shape`]): 0 not asked yet, else [`ASKED`] with the
    /// roles its events may play ([`FROM`], [`TO`], [`WRITE`]). With none, the event
    /// changes nothing past the first checks of [`Self::push`]; a selector whose event
    /// it is not is not asked either.
    roles: [Vec<u8>; 4],
}

/// [`Cycles::roles`]: the shape was looked at.
const ASKED: u8 = 1;
/// [`Cycles::roles`]: the `from` selector's event.
const FROM: u8 = 2;
/// [`Cycles::roles`]: some `to` selector's event.
const TO: u8 = 4;
/// [`Cycles::roles`]: a `write` entry (a complaint written while waiting).
const WRITE: u8 = 8;

/// A system call event's shape: raw entries and exits by number, per-call ones by name
/// symbol (in that order), as the selectors' plans key them.
#[inline]
fn shape(k: &Kind) -> Option<(usize, usize)> {
    let (i, key) = match k {
        Kind::SysEnter { nr, .. } => (0, *nr),
        Kind::SysExit { nr, .. } => (1, *nr),
        Kind::SyscallEnter { name, .. } => (2, name.0 as i64),
        Kind::SyscallExit { name, .. } => (3, name.0 as i64),
        _ => return None,
    };
    // A bad record's number must not grow a table.
    usize::try_from(key)
        .ok()
        .filter(|&k| k < 1 << 16)
        .map(|k| (i, k))
}

/// True when `o` cuts a system call from its entry to its exit on the same thread, paired
/// in order ([`Cycles::one_call`]).
fn one_call(o: &Options) -> bool {
    let Some((true, call)) = o.from.syscall() else {
        return false;
    };
    o.same == Same::Thread
        && o.pairing == Pairing::Fifo
        && !o.to.is_empty()
        && (o.to.iter()).all(|t| t.syscall() == Some((false, call)))
}

impl Cycles {
    /// An empty cutter.
    pub fn new(o: &Options) -> Cycles {
        Cycles {
            from: o.from.clone(),
            to: o.to.clone(),
            same: o.same,
            pairing: o.pairing.clone(),
            enter_keys: FxHashMap::default(),
            overlapped: 0,
            one_call: one_call(o),
            max_open: 0,
            dropped: 0,
            to_matched: 0,
            replies: 0,
            to_also_from: 0,
            arch: o.arch.unwrap_or_default(),
            arch_given: o.arch.is_some(),
            open: Queues::default(),
            open_n: 0,
            cycles: CycleStore::default(),
            writes: Vec::new(),
            in_write: FxHashMap::default(),
            write_name: None,
            write_nrs: Vec::new(),
            paths: (o.from.uses("path") || o.to.iter().any(|t| t.uses("path"))).then(FdPaths::new),
            seen_from: Seen::default(),
            seen_to: o.to.iter().map(|_| Seen::default()).collect(),
            names: Names::default(),
            names_done: false,
            keyed: 0,
            roles: Default::default(),
        }
    }

    /// The syscall table the reading pass settled on, unless the options named one.
    pub fn set_arch(&mut self, a: Arch) {
        if !self.arch_given {
            self.arch = a;
            self.write_nrs.clear();
            self.roles = Default::default();
        }
    }

    /// Why the selectors cut no cycle, or none that ends, when the trace shows they
    /// cannot (an event or field it does not have): the one-line error for the user.
    pub fn why_nothing(&self, s: &Interner) -> Option<String> {
        let say = |sel: &Selector, seen: &Seen| {
            sel.why_nothing(seen, &self.names, s, self.arch)
                .map(|w| format!("selector {:?}: {w}", sel.text()))
        };
        if self.cycles.is_empty() {
            return say(&self.from, &self.seen_from);
        }
        if self.cycles.iter().all(|c| c.end_ns().is_none()) {
            let to = (self.to.iter().zip(&self.seen_to)).find_map(|(t, seen)| say(t, seen));
            if to.is_some() {
                return to;
            }
        }
        match &self.pairing {
            Pairing::Key(f) if self.keyed == 0 => {
                let mut sides = vec![(&self.from, &self.seen_from)];
                sides.extend(self.to.iter().zip(&self.seen_to));
                Some(crate::selector::no_key_field(f, &sides, s, self.arch))
            }
            _ => None,
        }
    }

    /// When requests were cut but no reply ever came, the selectors are the likeliest
    /// reason, not a lost reply: the line that says which selector found nothing.
    pub fn why_unanswered(&self) -> Option<String> {
        if self.replies > 0 || self.cycles.is_empty() {
            return None;
        }
        let to: Vec<&str> = self.to.iter().map(Selector::text).collect();
        let to = to.join(" | ");
        Some(match self.to_matched {
            n if n > 0 && n == self.to_also_from => format!(
                "no reply: every event {to:?} matched ({n}) also matches {:?}, and a request's event opens a cycle, so none could end (make the selectors tell request from reply)",
                self.from.text()
            ),
            0 => format!(
                "no reply: {to:?} matched no event in the trace, so no cycle could end (check its event, fields and values)"
            ),
            n => format!(
                "no reply: {to:?} matched {n} events, none while a {:?} request {} had open (who may answer: --same thread|tgid|any)",
                self.from.text(),
                match self.same {
                    Same::Thread => "of the same thread",
                    Same::Tgid => "of the same process",
                    Same::Any => "of anyone",
                }
            ),
        })
    }

    /// Names descriptors from a recording's snapshot.
    pub fn add_snapshot(&mut self, s: &crate::snapshot::Snapshot) {
        if let Some(p) = self.paths.as_mut() {
            p.add_snapshot(s);
        }
    }

    /// True when a selector filters on `path` but no input named any descriptor.
    pub fn paths_unknown(&self) -> bool {
        self.paths.as_ref().is_some_and(|p| p.is_empty())
    }

    /// Who may close a cycle `e` opens or closes, and its key field's value (0 unkeyed).
    pub(in crate::explain) fn key(&self, e: &Event, s: &Interner) -> (i64, i64) {
        let who = match self.same {
            Same::Thread => e.tid as i64,
            Same::Tgid if e.tgid >= 0 => e.tgid as i64,
            Same::Tgid => e.tid as i64,
            Same::Any => 0,
        };
        let Pairing::Key(f) = &self.pairing else {
            return (who, 0);
        };
        let own = crate::selector::key_of(e, f, s, self.arch);
        let v = match e.kind {
            Kind::SysExit { .. } | Kind::SyscallExit { .. } => {
                own.or_else(|| self.enter_keys.get(&e.tid).copied())
            }
            _ => own,
        };
        // Events without the field pair among themselves.
        (who, v.unwrap_or(i64::MIN))
    }

    /// [`Self::key`], counting the events that carried the `--key` field.
    fn key_counted(&mut self, e: &Event, s: &Interner) -> (i64, i64) {
        let k = self.key(e, s);
        if k.1 != i64::MIN && matches!(self.pairing, Pairing::Key(_)) {
            self.keyed += 1;
        }
        k
    }

    /// Feeds one event.
    pub fn push(&mut self, e: &Event, s: &Interner) {
        // The trace's names only serve a selector that never met its event.
        if !self.names_done {
            self.names_done = self.seen_from.met() && self.seen_to.iter().all(Seen::met);
            if !self.names_done {
                self.names.observe(e);
            }
        }
        // Descriptor names follow the event before a selector asks about it (an exit
        // finds the descriptor its entry named).
        if let Some(p) = self.paths.as_mut() {
            p.observe(e, s, self.arch);
        }
        self.note_entry(e, s);
        // A thread's next system call exit is its write's.
        let write_done = match e.kind {
            Kind::SysExit { .. } | Kind::SyscallExit { .. } if !self.in_write.is_empty() => {
                self.in_write.remove(&e.tid)
            }
            _ => None,
        };
        // Other events than system calls may be any selector's.
        let shaped = self.role(e, s);
        let role = shaped.unwrap_or(ASKED | FROM | TO | WRITE);
        if role == ASKED {
            return;
        }
        let paths = self.paths.as_ref();
        let from =
            role & FROM != 0 && (self.seen_from).observe_match(&self.from, e, s, self.arch, paths);
        let mut to = false;
        if role & TO != 0 {
            for (t, seen) in self.to.iter().zip(&mut self.seen_to) {
                to |= seen.observe_match(t, e, s, self.arch, paths);
            }
        }
        self.to_matched += u64::from(to);
        self.to_also_from += u64::from(to && from);
        if from {
            self.open_cycle(e, s);
            return;
        }
        if self.open_n == 0 {
            return;
        }
        if to {
            let k = self.key_counted(e, s);
            let q = self.open.get_mut(k);
            if let Some((q, i)) = q.and_then(|q| q.reqs.pop_front().map(|i| (q, i))) {
                // The thread returned: a request still open after this one lost no exit.
                q.exited = true;
                if q.reqs.is_empty() {
                    q.n = 0;
                    // A deep queue, drained, does not keep its room.
                    if q.reqs.capacity() > 64 {
                        q.reqs.shrink_to(8);
                    }
                }
                (self.replies, self.open_n) = (self.replies + 1, self.open_n - 1);
                if let Some((_, k)) = write_done.filter(|w| w.0 == i) {
                    self.writes[k] = u64::MAX;
                    self.cycles.open_mut(i).writes -= 1;
                }
                let c = self.cycles.open_mut(i);
                c.reply(e.ts, e.tid);
                c.set_reply_in_irq(
                    e.flags & flags::KNOWN != 0
                        && e.flags & (flags::HARDIRQ | flags::SOFTIRQ | flags::NMI) != 0,
                );
            }
            return;
        }
        // An exit of the call that `to`'s conditions did not take: the call returned, its
        // exit was not lost (a matching one is noted where it pops its request).
        if self.one_call && role & TO != 0 && shaped.is_some() {
            if let Some(q) = self.open.get_mut(self.key(e, s)) {
                q.exited = true;
            }
        }
        if role & WRITE != 0 {
            self.note_write(e, s);
        }
    }

    /// The roles a system call event may play ([`Cycles::roles`]), asked once per shape:
    /// most events of a request loop are other calls, and each cost two selector tests
    /// and a write test. None for other events.
    #[inline]
    fn role(&mut self, e: &Event, s: &Interner) -> Option<u8> {
        let (i, key) = shape(&e.kind)?;
        if let Some(&v) = self.roles[i].get(key).filter(|&&v| v != 0) {
            return Some(v);
        }
        let arch = self.arch;
        let write = match &e.kind {
            Kind::SysEnter { nr, .. } => self.write_nr(*nr),
            Kind::SyscallEnter { name, .. } => s.get(*name) == "write",
            _ => false,
        };
        let from = self.from.is_target(e, s, arch);
        let to = self.to.iter().any(|t| t.is_target(e, s, arch));
        let t = &mut self.roles[i];
        if t.len() <= key {
            t.resize(key + 1, 0);
        }
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        t[key] = ASKED | bit(from, FROM) | bit(to, TO) | bit(write, WRITE);
        Some(t[key])
    }

    /// A syscall entry's key field, for the exit that will return from it.
    fn note_entry(&mut self, e: &Event, s: &Interner) {
        let Pairing::Key(f) = &self.pairing else {
            return;
        };
        if matches!(e.kind, Kind::SysEnter { .. } | Kind::SyscallEnter { .. }) {
            match crate::selector::key_of(e, f, s, self.arch) {
                Some(v) => self.enter_keys.insert(e.tid, v),
                None => self.enter_keys.remove(&e.tid),
            };
        }
    }

    /// A `from` match: a new cycle, queued behind the open ones of its key (or replacing
    /// the open one, with `Pairing::Latest`).
    fn open_cycle(&mut self, e: &Event, s: &Interner) {
        let k = self.key_counted(e, s);
        if self.open.len() >= PRUNE_AT.max(4 * self.open_n) {
            self.prune();
        }
        let q = self.open.entry(k);
        if q.reqs.is_empty() {
            (q.since, q.n) = (e.ts, 0);
        }
        q.n += 1;
        // A call entered while the thread's last one is open, with no exit of it since:
        // that exit was lost. (One that returned without matching `to` stays open: the
        // cycle spans calls until one does.)
        if self.one_call && !q.exited {
            if let Some(i) = q.reqs.pop_front() {
                let c = self.cycles.open_mut(i);
                c.lose_end(e.ts);
                self.cycles.end_lost += 1;
                self.open_n -= 1;
                q.n = 1;
                q.since = e.ts;
            }
        }
        if !q.reqs.is_empty() {
            self.overlapped += 1;
            if self.pairing == Pairing::Latest {
                let i = q.reqs.pop_front().expect("not empty");
                self.cycles.open_mut(i).give_up(e.ts);
                self.open_n -= 1;
            }
        }
        q.exited = false;
        q.reqs
            .push_back(self.cycles.push(Cycle::open(e.ts, e.tid, e.cpu)));
        self.open_n += 1;
        self.max_open = self.max_open.max(q.reqs.len() as u64);
        if q.reqs.len() > OPEN_CAP {
            // Still unanswered after OPEN_CAP later requests: followed no further, and
            // judged like a cycle the trace's end cut (no reply seen, none ruled out).
            let i = q.reqs.pop_front().expect("over the cap");
            let c = self.cycles.open_mut(i);
            c.give_up(e.ts);
            c.at_end = true;
            self.dropped += 1;
            self.open_n -= 1;
        }
    }

    /// Forgets the keys with no request open: kept for reuse, they must not grow with
    /// the input where every request has a key of its own (`--key` on a sequence).
    fn prune(&mut self) {
        self.open.retain(|q| !q.reqs.is_empty());
    }

    /// True when raw syscall `nr` is `write`: the table asked once per number (on every
    /// raw entry while a cycle is open, a lookup and a string compare each cost more).
    fn write_nr(&mut self, nr: i64) -> bool {
        let Some(i) = usize::try_from(nr).ok().filter(|&i| i < 1 << 12) else {
            return self.arch.name(nr) == Some("write");
        };
        if self.write_nrs.len() <= i {
            self.write_nrs.resize(i + 1, 0);
        }
        if self.write_nrs[i] == 0 {
            self.write_nrs[i] = 1 + u8::from(self.arch.name(nr) == Some("write"));
        }
        self.write_nrs[i] == 2
    }

    /// Writes by a waiting thread: a timeout complaint is one. Counted for its oldest open
    /// cycle.
    fn note_write(&mut self, e: &Event, s: &Interner) {
        let is_write = match &e.kind {
            Kind::SysEnter { nr, .. } => self.write_nr(*nr),
            Kind::SyscallEnter { name, .. } => {
                if self.write_name.is_none() && s.get(*name) == "write" {
                    self.write_name = Some(*name);
                }
                Some(*name) == self.write_name
            }
            _ => false,
        };
        if !is_write {
            return;
        }
        let cycles = &self.cycles;
        let mine = |q: &Queue| (q.reqs.front().copied()).filter(|&i| cycles.open(i).tid == e.tid);
        let i = if matches!(self.pairing, Pairing::Key(_)) {
            // Its oldest open cycle, whatever the map's order.
            self.open.values().filter_map(mine).min()
        } else {
            let who = self.key(e, s);
            self.open.get(&who).and_then(mine)
        };
        if let Some(i) = i {
            let c = self.cycles.open_mut(i);
            if c.writes < 8 && e.ts > c.start_ns {
                c.writes += 1;
                self.in_write.insert(e.tid, (i, self.writes.len()));
                self.writes.push(e.ts - c.start_ns);
            }
        }
    }

    /// How replies were paired and how often requests overlapped, and what the report
    /// should say about it (call after `finish`).
    pub fn pairing_stats(&self) -> (crate::explain::report::PairingStats, Vec<String>) {
        let stats = crate::explain::report::PairingStats {
            mode: self.pairing.label(),
            overlapped: self.overlapped,
            max_open: self.max_open,
        };
        let mut notes = Vec::new();
        if self.cycles.end_lost > 0 {
            let call = self.from.syscall().map_or("", |c| c.1);
            notes.push(format!(
                "{} {call} calls have no exit in the trace: their thread entered its next call first, so the trace lost those exits (lost events); each is left unjudged, and every later exit pairs with its own entry",
                self.cycles.end_lost
            ));
        }
        if self.overlapped == 0 {
            return (stats, notes);
        }
        let (n, k) = (self.overlapped, self.max_open);
        notes.push(match &self.pairing {
            Pairing::Fifo => format!("{n} requests began while an earlier one was still open (up to {k} at once): each reply was paired with the oldest open request, first in, first out (--pair latest if a new request means the client gave up; --key FIELD to pair by a field both carry)"),
            Pairing::Latest => format!("{n} requests began while an earlier one was still open: each abandoned the open one, counted as no reply (--pair latest; the default pairs first in, first out)"),
            Pairing::Key(f) => format!("{n} requests began while an earlier one with the same {f} was still open (up to {k} at once): replies were paired by {f}, first in, first out among equal values"),
        });
        (stats, notes)
    }

    /// Where pairing is blind: requests opened since `from` never drained again until
    /// the trace ended (over `n` of them, at least 20 and a twentieth of all). A reply
    /// lost there (a dropped packet) makes first-in-first-out pairing give every later
    /// reply to an earlier request: the cycles after it look long and cannot be trusted.
    /// Of keys blind since the same moment, the one with the most requests is named,
    /// whatever order the keys are held in.
    pub fn undrained(&self) -> Option<(u64, u64)> {
        if self.pairing == Pairing::Latest {
            return None;
        }
        let total = self.cycles.len() as u64;
        (self.open.values())
            .filter(|q| q.n >= 20 && q.n * 20 >= total)
            .map(|q| (q.since, q.n))
            .min_by_key(|&(from, n)| (from, std::cmp::Reverse(n)))
    }

    /// When the oldest request still open began (none open: `None`).
    pub fn oldest_open(&self) -> Option<u64> {
        if self.open_n == 0 {
            return None;
        }
        (self.open.values())
            .filter_map(|q| q.reqs.front())
            .map(|&i| self.cycles.open(i).start_ns)
            .min()
    }

    /// Ends the stream at `last_ns`: open cycles had no reply until then.
    pub fn finish(&mut self, last_ns: u64) {
        // The writes that were replies, taken back.
        self.writes.retain(|&w| w != u64::MAX);
        self.open_n = 0;
        for q in self.open.values_mut() {
            for i in q.reqs.drain(..) {
                let c = self.cycles.open_mut(i);
                c.give_up(last_ns);
                c.at_end = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ASKED, FROM, TO, WRITE};
    use crate::explain::tests::cut;
    use crate::testkit;

    /// Ten rounds of a client `c-5`: a request (`calls[0]`, its exit `calls[1]`), another
    /// call (2, 3), in every other round a log line written while waiting (4, 5), and
    /// the read of the reply (6, 7).
    fn request_loop(calls: [&str; 8]) -> String {
        let mut t = String::new();
        for k in 0..10u64 {
            let at = 1_000_000 + k * 10_000;
            let offsets = [0, 1, 2, 3, 500, 501, 900, 901];
            for (i, (&off, body)) in offsets.iter().zip(calls).enumerate() {
                if (4..6).contains(&i) && k % 2 == 1 {
                    continue;
                }
                t += &testkit::line(at + off, 0, "c-5", "....1", body);
            }
        }
        t
    }

    /// A call no selector asks for is skipped after one look; a `write` entry never is
    /// (it may be a complaint written while waiting), nor the selectors' own events.
    #[test]
    fn calls_no_selector_asks_for_are_skipped_but_not_writes() {
        let t = request_loop([
            "sys_write(fd: 3, buf: 0, count: 7)",
            "sys_write -> 0x7",
            "sys_openat(dfd: 0, filename: 0)",
            "sys_openat -> 0x4",
            "sys_write(fd: 2, buf: 0, count: 9)",
            "sys_write -> 0x9",
            "sys_read(fd: 3, buf: 0, count: 7)",
            "sys_read -> 0x7",
        ]);
        let (cy, p) = cut(&testkit::chain_options(None), &t);
        let strings = &p.strings;
        let sym = |name: &str| {
            let n = strings.len() as u32;
            let i = (0..n).find(|&i| strings.get(crate::event::Sym(i)) == name);
            i.expect("interned") as usize
        };
        let role = |i: usize, name: &str| cy.roles[i][sym(name)];
        // openat entry and exit: skipped; write entry: a possible complaint; the
        // selectors' events (the write entry, the read exit): asked.
        assert_eq!((role(2, "openat"), role(3, "openat")), (ASKED, ASKED));
        assert_eq!(role(2, "write"), ASKED | FROM | WRITE);
        assert_eq!(role(3, "read"), ASKED | TO);
        assert_eq!((role(2, "read"), role(3, "write")), (ASKED, ASKED));
        // Every cycle is cut, the five complaints are counted, and the selectors met
        // their events as if nothing had been skipped.
        assert_eq!(cy.cycles.len(), 10);
        assert_eq!(cy.writes.len(), 5);
        assert_eq!((cy.seen_from.target(), cy.seen_to[0].target()), (15, 10));
    }

    /// Options cutting `call` from its entry to its exit, on thread `c`.
    fn one_call_options(to: &str) -> crate::explain::Options {
        let mut o = testkit::chain_options(Some(50_000));
        o.from = crate::selector::Selector::parse("sys_enter_write[comm=c]").unwrap();
        o.to = vec![crate::selector::Selector::parse(to).unwrap()];
        o
    }

    /// Ten writes of 100 us, 1 ms apart, whose exits `exit` writes (None: that exit is
    /// left out, as a trace that lost it).
    fn writes(entry: &str, exit: impl Fn(u64) -> Option<&'static str>) -> String {
        let mut t = String::new();
        for k in 0..10u64 {
            let at = 1_000_000 + k * 1_000;
            t += &testkit::line(at, 0, "c-5", "....1", entry);
            if let Some(body) = exit(k) {
                t += &testkit::line(at + 100, 0, "c-5", "....1", body);
            }
        }
        t
    }

    /// A thread is in one system call at a time: a write entered while the last one is
    /// open, with no exit of it since, means the trace lost that exit. That write is left
    /// unjudged; the next ones pair with their own exits (first in, first out would give
    /// each later exit to the write before it: every cycle 1 ms long, and one "no reply"
    /// at the end per exit lost).
    #[test]
    fn a_lost_exit_leaves_its_call_unjudged_and_shifts_no_pair() {
        // Per-call events, and raw ones (x86_64's write is 1).
        for (entry, exit) in [
            ("sys_write(fd: 1, buf: 0, count: 1)", "sys_write -> 0x1"),
            ("sys_enter: NR 1 (1, 0, 1, 0, 0, 0)", "sys_exit: NR 1 = 1"),
        ] {
            let t = writes(entry, |k| (k != 3 && k != 6).then_some(exit));
            lost_exits_cut(&t);
        }
    }

    /// The cut of [`writes`] with exits 3 and 6 lost.
    fn lost_exits_cut(t: &str) {
        let (mut cy, _) = cut(&one_call_options("sys_exit_write[comm=c]"), t);
        cy.finish(2_000_000_000);
        assert_eq!(
            (cy.cycles.len(), cy.cycles.end_lost, cy.overlapped),
            (10, 2, 0)
        );
        let lost: Vec<bool> = cy.cycles.iter().map(|c| c.end_lost()).collect();
        let want: Vec<bool> = (0..10).map(|k| k == 3 || k == 6).collect();
        assert_eq!(lost, want);
        for c in cy.cycles.iter().filter(|c| !c.end_lost()) {
            assert_eq!(c.end_ns().map(|e| e - c.start_ns), Some(100_000), "{c:?}");
        }
        let (_, notes) = cy.pairing_stats();
        assert!(
            notes[0].starts_with("2 write calls have no exit in the trace"),
            "{notes:?}"
        );
    }

    /// A call that returned without matching `to` (a read that found nothing) keeps its
    /// cycle open across the next calls, as before: only a call with no exit at all ends
    /// it unjudged.
    #[test]
    fn an_exit_that_does_not_match_keeps_the_cycle_open() {
        let t = writes("sys_write(fd: 1, buf: 0, count: 1)", |k| {
            Some(if k % 2 == 0 {
                "sys_write -> 0x0"
            } else {
                "sys_write -> 0x1"
            })
        });
        let (mut cy, _) = cut(&one_call_options("sys_exit_write[comm=c,ret>0]"), &t);
        cy.finish(2_000_000_000);
        assert_eq!(cy.cycles.end_lost, 0);
        assert_eq!(cy.replies, 5);
        // Entry 0's cycle ends at exit 1, first in, first out.
        let first = cy.cycles.iter().next().unwrap();
        assert_eq!(first.end_ns(), Some(1_001_100_000));
    }

    /// The same with raw system calls (by number: x86_64's write 1, read 0, openat 257),
    /// and another syscall table forgets what was learnt.
    #[test]
    fn raw_calls_no_selector_asks_for_are_skipped_by_number() {
        let t = request_loop([
            "sys_enter: NR 1 (3, 0, 7, 0, 0, 0)",
            "sys_exit: NR 1 = 7",
            "sys_enter: NR 257 (0, 0, 0, 0, 0, 0)",
            "sys_exit: NR 257 = 4",
            "sys_enter: NR 1 (2, 0, 9, 0, 0, 0)",
            "sys_exit: NR 1 = 9",
            "sys_enter: NR 0 (3, 0, 7, 0, 0, 0)",
            "sys_exit: NR 0 = 7",
        ]);
        let (mut cy, _) = cut(&testkit::chain_options(None), &t);
        let role = |cy: &super::Cycles, i: usize, nr: usize| cy.roles[i].get(nr).copied();
        let asked = Some(ASKED);
        assert_eq!((role(&cy, 0, 257), role(&cy, 1, 257)), (asked, asked));
        assert_eq!(role(&cy, 0, 1), Some(ASKED | FROM | WRITE));
        assert_eq!(role(&cy, 1, 0), Some(ASKED | TO));
        assert_eq!((role(&cy, 0, 0), role(&cy, 1, 1)), (asked, asked));
        assert_eq!((cy.cycles.len(), cy.writes.len()), (10, 5));
        assert_eq!((cy.seen_from.target(), cy.seen_to[0].target()), (15, 10));
        cy.set_arch(crate::syscalls::Arch::Aarch64);
        assert!(cy.roles.iter().all(Vec::is_empty));
    }

    /// Two clients blind since the same microsecond (no reply ever comes): the one with
    /// more requests open is named, whichever sent first.
    #[test]
    fn keys_blind_since_one_moment_name_the_one_with_more_requests() {
        let req = "sys_write(fd: 3, buf: 0, count: 7)";
        // `c-5` asks 30 times, `c-6` 25; in each round the first line is `first`'s.
        let trace = |first: &str| {
            let mut t = String::new();
            for k in 0..30u64 {
                let at = 1_000_000 + k * 100;
                let mut round = vec![testkit::line(at, 0, "c-5", "....", req)];
                if k < 25 {
                    round.push(testkit::line(at, 1, "c-6", "....", req));
                }
                if first == "c-6" {
                    round.reverse();
                }
                t += &round.concat();
            }
            t
        };
        for a in ["c-5", "c-6"] {
            let (cy, _) = cut(&testkit::chain_options(None), &trace(a));
            assert_eq!(cy.cycles.len(), 55);
            assert_eq!(cy.undrained(), Some((1_000_000_000, 30)), "{a} first");
        }
    }
}
