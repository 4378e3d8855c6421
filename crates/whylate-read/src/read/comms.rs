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
    /// Bumped whenever a pid's name changes, so callers may cache `get`.
    pub generation: u64,
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
            generation: 0,
            unknown: Sym::EMPTY,
            idle: Sym::EMPTY,
        }
    }

    /// Interns the saved names; cheap after the first call.
    #[inline(always)]
    pub fn seed(&mut self, s: &mut Interner) {
        // Asked before every event: the check stays inline, the work runs once.
        if !self.seeded {
            self.seed_now(s);
        }
    }

    #[inline(never)]
    fn seed_now(&mut self, s: &mut Interner) {
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
        if self.names.insert(pid, comm) != Some(comm) {
            self.generation += 1;
        }
    }

    /// Names `pid` when nothing named it yet (a process list taken while tracing: the
    /// events' own names are newer).
    pub fn name_if_unknown(&mut self, pid: i32, comm: Sym) {
        if !self.names.contains_key(&pid) {
            self.set(pid, comm);
        }
    }

    /// Sets the thread group of `pid`.
    pub fn set_tgid(&mut self, pid: i32, tgid: i32) {
        if self.tgids.insert(pid, tgid) != Some(tgid) {
            self.generation += 1;
        }
    }

    /// Learns the names `kind` carries; true when it named someone.
    #[inline]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Readers cache a pid's name per CPU while the generation stands: it must move when a
    /// name changes (an exec seen on another CPU) and only then.
    #[test]
    fn generation_moves_only_when_a_name_changes() {
        let mut s = Interner::new();
        let mut c = Comms::new(vec![(7, "sh".into())], Vec::new());
        c.seed(&mut s);
        let g = c.generation;
        c.set(7, s.intern("sh"));
        assert_eq!(c.generation, g, "same name again");
        c.set(7, s.intern("frob"));
        assert!(c.generation > g, "renamed");
        let g = c.generation;
        c.set(8, s.intern("new"));
        assert!(c.generation > g, "a new pid");
        assert_eq!(s.get(c.get(7)), "frob");
    }
}
