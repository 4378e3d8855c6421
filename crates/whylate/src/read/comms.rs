//! Thread names for the binary readers. Binary records carry only a pid; the name comes
//! from what the file saved (cmdlines, whylate's snapshot, perf COMM records) and is kept
//! current from the names the sched events themselves carry.

use crate::event::{Interner, Kind, Sym};
use rustc_hash::FxHashMap;

/// pid → comm (and tgid when known), learnt as the trace goes.
pub(crate) struct Comms {
    names: FxHashMap<i32, Sym>,
    tgids: FxHashMap<i32, i32>,
    /// Names saved by the file, interned at the first event (the interner comes then).
    saved: Vec<(i32, String)>,
    tasks: Vec<crate::snapshot::Task>,
    seeded: bool,
    unknown: Sym,
    idle: Sym,
}

impl Comms {
    /// Starts from saved `(pid, comm)` pairs and snapshot tasks (the first wins).
    pub fn new(saved: Vec<(i32, String)>, tasks: Vec<crate::snapshot::Task>) -> Self {
        Comms {
            names: FxHashMap::default(),
            tgids: FxHashMap::default(),
            saved,
            tasks,
            seeded: false,
            unknown: Sym::EMPTY,
            idle: Sym::EMPTY,
        }
    }

    /// Interns the saved names; cheap after the first call.
    #[inline]
    pub fn seed(&mut self, s: &mut Interner) {
        if self.seeded {
            return;
        }
        self.seeded = true;
        self.unknown = s.intern("<...>");
        self.idle = s.intern("<idle>");
        for (pid, comm) in std::mem::take(&mut self.saved) {
            let c = s.intern(&comm);
            self.names.insert(pid, c);
        }
        for t in std::mem::take(&mut self.tasks) {
            let c = s.intern(&t.comm);
            self.names.entry(t.tid).or_insert(c);
            self.tgids.insert(t.tid, t.tgid);
        }
    }

    /// Sets the name of `pid`.
    pub fn set(&mut self, pid: i32, comm: Sym) {
        self.names.insert(pid, comm);
    }

    /// Learns the names `kind` carries; true when it named someone.
    pub fn learn(&mut self, kind: &Kind) -> bool {
        match kind {
            Kind::SchedSwitch {
                prev_comm,
                prev_pid,
                next_comm,
                next_pid,
                ..
            } => {
                self.set(*prev_pid, *prev_comm);
                self.set(*next_pid, *next_comm);
            }
            Kind::SchedWaking { comm, pid, .. } | Kind::SchedWakeup { comm, pid, .. } => {
                self.set(*pid, *comm)
            }
            Kind::SchedFork {
                child_comm,
                child_pid,
                ..
            } => self.set(*child_pid, *child_comm),
            _ => return false,
        }
        true
    }

    /// The name of `pid`: `<idle>` for 0, `<...>` when unknown (as ftrace prints them).
    #[inline]
    pub fn get(&self, pid: i32) -> Sym {
        if pid == 0 {
            return self.idle;
        }
        self.names.get(&pid).copied().unwrap_or(self.unknown)
    }

    /// The thread group of `pid`, -1 when unknown.
    #[inline]
    pub fn tgid(&self, pid: i32) -> i32 {
        self.tgids.get(&pid).copied().unwrap_or(-1)
    }
}
