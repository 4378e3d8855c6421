//! The cycle cutter: finds request/response cycles in the event stream while it is read
//! (a `--from` match opens one, the first later `--to` match by the same thread, process
//! or anyone closes it).

use crate::event::{Event, Interner, Kind, Sym};
use crate::fdpath::FdPaths;
use crate::selector::{Names, Seen, Selector};
use crate::syscalls::Arch;
use rustc_hash::FxHashMap;
use serde::Serialize;

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
    /// Syscall table for raw_syscalls events; `None`: the one the reading pass settles
    /// on (`--arch`, else what the trace says, else x86_64).
    pub arch: Option<Arch>,
    /// Misses whose chain is shown in the terminal.
    pub top: usize,
}

/// One cycle as cut from the stream.
#[derive(Clone, Debug, Serialize)]
pub struct Cycle {
    /// The `from` event.
    pub start_ns: u64,
    /// The `to` event, if one came.
    pub end_ns: Option<u64>,
    /// Thread that matched `from`.
    pub tid: i32,
    /// Its CPU.
    pub cpu: u32,
    /// When the cycle stopped waiting without reply: the next `from`, or the trace end.
    pub horizon_ns: u64,
    /// Still open when the trace ended.
    pub at_end: bool,
    /// Offsets of write syscalls the thread made inside the cycle (a timeout log line is
    /// one way a deadline shows).
    #[serde(skip)]
    pub writes: Vec<u64>,
}

/// Cuts cycles from the stream.
pub struct Cycles {
    pub(super) from: Selector,
    pub(super) to: Vec<Selector>,
    pub(super) same: Same,
    pub(super) arch: Arch,
    /// The options named the syscall table: the trace's does not replace it.
    pub(super) arch_given: bool,
    pub(super) open: FxHashMap<i64, usize>,
    /// The cycles, in start order.
    pub cycles: Vec<Cycle>,
    pub(super) write_name: Option<Sym>,
    /// Descriptor names, when a selector filters on `path`.
    pub(super) paths: Option<FdPaths>,
    /// What the selectors met, to say why they selected nothing.
    pub(super) seen_from: Seen,
    pub(super) seen_to: Vec<Seen>,
    pub(super) names: Names,
}

impl Cycles {
    /// An empty cutter.
    pub fn new(o: &Options) -> Cycles {
        Cycles {
            from: o.from.clone(),
            to: o.to.clone(),
            same: o.same,
            arch: o.arch.unwrap_or_default(),
            arch_given: o.arch.is_some(),
            open: FxHashMap::default(),
            cycles: Vec::new(),
            write_name: None,
            paths: (o.from.uses("path") || o.to.iter().any(|t| t.uses("path"))).then(FdPaths::new),
            seen_from: Seen::default(),
            seen_to: o.to.iter().map(|_| Seen::default()).collect(),
            names: Names::default(),
        }
    }

    /// The syscall table the reading pass settled on, unless the options named one.
    pub fn set_arch(&mut self, a: Arch) {
        if !self.arch_given {
            self.arch = a;
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
        if self.cycles.iter().all(|c| c.end_ns.is_none()) {
            return self
                .to
                .iter()
                .zip(&self.seen_to)
                .find_map(|(t, seen)| say(t, seen));
        }
        None
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

    pub(super) fn key(&self, e: &Event) -> i64 {
        match self.same {
            Same::Thread => e.tid as i64,
            Same::Tgid if e.tgid >= 0 => e.tgid as i64,
            Same::Tgid => e.tid as i64,
            Same::Any => 0,
        }
    }

    /// Feeds one event.
    pub fn push(&mut self, e: &Event, s: &Interner) {
        // The trace's names only serve a selector that never met its event.
        if !self.seen_from.met() || !self.seen_to.iter().all(Seen::met) {
            self.names.observe(e);
        }
        self.seen_from.observe(&self.from, e, s, self.arch);
        for (t, seen) in self.to.iter().zip(&mut self.seen_to) {
            seen.observe(t, e, s, self.arch);
        }
        if let Some(p) = self.paths.as_mut() {
            p.observe(e, s, self.arch);
        }
        let paths = self.paths.as_ref();
        if self.from.matches_in(e, s, self.arch, paths) {
            let k = self.key(e);
            if let Some(i) = self.open.remove(&k) {
                self.cycles[i].horizon_ns = e.ts;
            }
            self.cycles.push(Cycle {
                start_ns: e.ts,
                end_ns: None,
                tid: e.tid,
                cpu: e.cpu,
                horizon_ns: e.ts,
                at_end: false,
                writes: Vec::new(),
            });
            self.open.insert(k, self.cycles.len() - 1);
            return;
        }
        if self.open.is_empty() {
            return;
        }
        if self.to.iter().any(|t| t.matches_in(e, s, self.arch, paths)) {
            let k = self.key(e);
            if let Some(i) = self.open.remove(&k) {
                let c = &mut self.cycles[i];
                c.end_ns = Some(e.ts);
                c.horizon_ns = e.ts;
            }
            return;
        }
        // Writes by the waiting thread: a timeout complaint is one.
        let is_write = match &e.kind {
            Kind::SysEnter { nr, .. } => self.arch.name(*nr) == Some("write"),
            Kind::SyscallEnter { name, .. } => {
                if self.write_name.is_none() && s.get(*name) == "write" {
                    self.write_name = Some(*name);
                }
                Some(*name) == self.write_name
            }
            _ => false,
        };
        if is_write {
            if let Some(&i) = self.open.get(&self.key(e)) {
                let c = &mut self.cycles[i];
                if c.tid == e.tid && c.writes.len() < 8 && e.ts > c.start_ns {
                    c.writes.push(e.ts - c.start_ns);
                }
            }
        }
    }

    /// Ends the stream at `last_ns`: open cycles had no reply until then.
    pub fn finish(&mut self, last_ns: u64) {
        for (_, i) in self.open.drain() {
            self.cycles[i].horizon_ns = last_ns;
            self.cycles[i].at_end = true;
        }
    }
}
