//! Which file a descriptor is: `fd 7` of process 812 → `/dev/ttyUSB2`.
//!
//! Syscall tracepoints carry descriptor numbers and, for `openat`, only a user pointer to
//! the name, so the names come from `whylate record`'s /proc scans (at the start and every
//! few hundred ms while recording). The trace itself keeps them honest: an `open*`,
//! `socket`, `accept*`, `dup*` or `close` that returns in the trace ends what a scan saw for
//! that number, so a reused number is never given its old file. A descriptor that was
//! opened and closed between two scans has no name.

use crate::event::{Event, Interner, Kind};
use crate::snapshot::Snapshot;
use crate::syscalls::{arg_names, Arch};
use rustc_hash::FxHashMap;

/// What the trace last did to a descriptor.
#[derive(Clone, Debug)]
enum State {
    /// Created at this time; its name is whatever a scan saw after that.
    Opened(u64),
    /// A `dup*` of a descriptor whose name was this.
    Dup(Option<String>),
    /// Closed.
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Returns a new descriptor.
    Creates,
    /// `dup`, `dup2`, `dup3`: returns a copy of its first argument.
    Dup,
    /// `fcntl`: a copy only for F_DUPFD / F_DUPFD_CLOEXEC.
    Fcntl,
    Close,
    Other,
}

fn role(name: &str) -> Role {
    match name {
        "open" | "openat" | "openat2" | "creat" | "open_by_handle_at" | "socket" | "accept"
        | "accept4" | "eventfd" | "eventfd2" | "timerfd_create" | "signalfd" | "signalfd4"
        | "epoll_create" | "epoll_create1" | "memfd_create" | "inotify_init" | "inotify_init1"
        | "userfaultfd" | "pidfd_open" | "pidfd_getfd" | "perf_event_open" | "fanotify_init"
        | "io_uring_setup" => Role::Creates,
        "dup" | "dup2" | "dup3" => Role::Dup,
        "fcntl" => Role::Fcntl,
        "close" => Role::Close,
        _ => Role::Other,
    }
}

const F_DUPFD: u64 = 0;
const F_DUPFD_CLOEXEC: u64 = 1030;

/// A syscall a thread is inside.
#[derive(Clone, Copy, Debug)]
struct Pending {
    role: Role,
    /// Its `fd` argument.
    fd: Option<i32>,
    /// Its first and second arguments (`dup*`'s old fd, `fcntl`'s cmd).
    a0: u64,
    a1: u64,
}

/// Tracks descriptor names through a stream; feed every event with [`FdPaths::observe`].
#[derive(Debug, Default)]
pub struct FdPaths {
    /// Names the scans saw, per (tgid, fd), in the order seen.
    seen: FxHashMap<(i32, i32), Vec<(u64, String)>>,
    tgid_of: FxHashMap<i32, i32>,
    trace: FxHashMap<(i32, i32), State>,
    pending: FxHashMap<i32, Pending>,
}

impl FdPaths {
    /// An empty tracker (no names until a snapshot is added).
    pub fn new() -> FdPaths {
        FdPaths::default()
    }

    /// Adds what a recording's scans saw.
    pub fn add_snapshot(&mut self, s: &Snapshot) {
        for t in &s.tasks {
            self.tgid_of.insert(t.tid, t.tgid);
        }
        for f in &s.fds {
            self.seen
                .entry((f.tgid, f.fd))
                .or_default()
                .push((f.seen_ns, f.path.clone()));
        }
        for v in self.seen.values_mut() {
            v.sort_by_key(|x| x.0);
        }
    }

    /// True when no scan added any name.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    fn tgid(&self, e: &Event) -> i32 {
        if e.tgid >= 0 {
            e.tgid
        } else {
            self.tgid_of.get(&e.tid).copied().unwrap_or(e.tid)
        }
    }

    /// Follows opens, dups and closes. Call before asking about `e`.
    pub fn observe(&mut self, e: &Event, s: &Interner, arch: Arch) {
        match &e.kind {
            Kind::SyscallEnter { name, args } => {
                let n = s.get(*name);
                let fd = self.fd_of(e, s, arch);
                let arg = |i: usize| args.get(i).map(|x| x.1).unwrap_or(0);
                self.pending.insert(
                    e.tid,
                    Pending {
                        role: role(n),
                        fd,
                        a0: arg(0),
                        a1: arg(1),
                    },
                );
            }
            Kind::SysEnter { nr, args } => {
                let n = arch.name(*nr).unwrap_or("");
                let fd = self.fd_of(e, s, arch);
                self.pending.insert(
                    e.tid,
                    Pending {
                        role: role(n),
                        fd,
                        a0: args[0],
                        a1: args[1],
                    },
                );
            }
            Kind::SyscallExit { ret, .. } | Kind::SysExit { ret, .. } => {
                let Some(p) = self.pending.get(&e.tid).copied() else {
                    return;
                };
                let tgid = self.tgid(e);
                let ret = *ret;
                let new = ret >= 0 && ret <= i32::MAX as i64;
                match p.role {
                    Role::Creates if new => {
                        self.trace.insert((tgid, ret as i32), State::Opened(e.ts));
                    }
                    Role::Dup if new => {
                        let name = self.lookup(tgid, p.a0 as i32, e.ts).map(str::to_string);
                        self.trace.insert((tgid, ret as i32), State::Dup(name));
                    }
                    Role::Fcntl if new && (p.a1 == F_DUPFD || p.a1 == F_DUPFD_CLOEXEC) => {
                        let name = self.lookup(tgid, p.a0 as i32, e.ts).map(str::to_string);
                        self.trace.insert((tgid, ret as i32), State::Dup(name));
                    }
                    Role::Close if ret == 0 => {
                        if let Some(fd) = p.fd {
                            self.trace.insert((tgid, fd), State::Closed);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// The descriptor `e` is about: its `fd` argument, or on a syscall exit the `fd` of
    /// the call it returns from.
    pub fn fd_of(&self, e: &Event, s: &Interner, arch: Arch) -> Option<i32> {
        match &e.kind {
            Kind::SyscallEnter { args, .. } => args
                .iter()
                .find(|(k, _)| s.get(*k) == "fd")
                .map(|(_, v)| *v as i32),
            Kind::SysEnter { nr, args } => arg_names(arch.name(*nr).unwrap_or(""))
                .iter()
                .position(|a| *a == "fd")
                .map(|i| args[i] as i32),
            Kind::SyscallExit { .. } | Kind::SysExit { .. } => {
                self.pending.get(&e.tid).and_then(|p| p.fd)
            }
            Kind::Other { fields, .. } => crate::event::fields(fields)
                .find(|(k, _)| *k == "fd")
                .and_then(|(_, v)| crate::event::parse_num(v.as_bytes()))
                .map(|v| v as i32),
            _ => None,
        }
    }

    /// The file behind the descriptor `e` is about, when known.
    pub fn path_of(&self, e: &Event, s: &Interner, arch: Arch) -> Option<&str> {
        let fd = self.fd_of(e, s, arch)?;
        self.lookup(self.tgid(e), fd, e.ts)
    }

    /// The file behind `fd` of `tgid` at `ts`.
    pub fn lookup(&self, tgid: i32, fd: i32, ts: u64) -> Option<&str> {
        let seen = self.seen.get(&(tgid, fd));
        match self.trace.get(&(tgid, fd)) {
            Some(State::Closed) => None,
            Some(State::Dup(name)) => name.as_deref(),
            // Only a scan made after the open can have seen this file.
            Some(State::Opened(t)) => seen?
                .iter()
                .find(|(at, _)| at >= t)
                .map(|(_, p)| p.as_str()),
            None => {
                let v = seen?;
                // The latest scan before `ts`; a descriptor first seen later was, as far
                // as the trace shows, already open (no open of it came first).
                v.iter()
                    .rev()
                    .find(|(at, _)| *at <= ts)
                    .or(v.first())
                    .map(|(_, p)| p.as_str())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Fd, Task};

    fn ev(ts: u64, tid: i32, kind: Kind) -> Event {
        Event {
            ts,
            cpu: 0,
            tid,
            tgid: -1,
            comm: crate::event::Sym::EMPTY,
            flags: 0,
            kind,
        }
    }

    fn raw_enter(nr: i64, a: [u64; 6]) -> Kind {
        Kind::SysEnter { nr, args: a }
    }

    #[test]
    fn scans_name_descriptors_and_the_trace_keeps_them_honest() {
        let snap = Snapshot {
            tasks: vec![Task {
                tid: 11,
                tgid: 10,
                comm: "client".into(),
            }],
            fds: vec![
                Fd {
                    tgid: 10,
                    fd: 3,
                    path: "/dev/pts/4".into(),
                    seen_ns: 100,
                },
                Fd {
                    tgid: 10,
                    fd: 5,
                    path: "/tmp/new.log".into(),
                    seen_ns: 5000,
                },
            ],
            ..Snapshot::default()
        };
        let mut p = FdPaths::new();
        p.add_snapshot(&snap);
        let s = Interner::new();
        let x = Arch::X86_64;
        // write(3, ...) by thread 11 of process 10: the scan named fd 3.
        let w = ev(1000, 11, raw_enter(1, [3, 0, 7, 0, 0, 0]));
        p.observe(&w, &s, x);
        assert_eq!(p.path_of(&w, &s, x), Some("/dev/pts/4"));
        let wx = ev(1001, 11, Kind::SysExit { nr: 1, ret: 7 });
        p.observe(&wx, &s, x);
        assert_eq!(
            p.path_of(&wx, &s, x),
            Some("/dev/pts/4"),
            "exit uses enter's fd"
        );
        // dup2(3, 9) → fd 9 is the same file.
        p.observe(&ev(1100, 11, raw_enter(33, [3, 9, 0, 0, 0, 0])), &s, x);
        p.observe(&ev(1101, 11, Kind::SysExit { nr: 33, ret: 9 }), &s, x);
        assert_eq!(p.lookup(10, 9, 1200), Some("/dev/pts/4"));
        // close(3), then openat returns 3 again: the old name must not come back.
        p.observe(&ev(2000, 11, raw_enter(3, [3, 0, 0, 0, 0, 0])), &s, x);
        p.observe(&ev(2001, 11, Kind::SysExit { nr: 3, ret: 0 }), &s, x);
        assert_eq!(p.lookup(10, 3, 2002), None);
        p.observe(&ev(3000, 11, raw_enter(257, [0; 6])), &s, x);
        p.observe(&ev(3001, 11, Kind::SysExit { nr: 257, ret: 3 }), &s, x);
        assert_eq!(
            p.lookup(10, 3, 3002),
            None,
            "no scan after the open saw fd 3"
        );
        // openat returned 5 at 4001; a scan at 5000 saw /tmp/new.log there.
        p.observe(&ev(4000, 11, raw_enter(257, [0; 6])), &s, x);
        p.observe(&ev(4001, 11, Kind::SysExit { nr: 257, ret: 5 }), &s, x);
        assert_eq!(p.lookup(10, 5, 4002), Some("/tmp/new.log"));
        // A failed open changes nothing.
        p.observe(&ev(4100, 11, raw_enter(257, [0; 6])), &s, x);
        p.observe(&ev(4101, 11, Kind::SysExit { nr: 257, ret: -2 }), &s, x);
        assert_eq!(p.lookup(10, 5, 4102), Some("/tmp/new.log"));
        // Another process's fd 3 is its own.
        assert_eq!(p.lookup(99, 3, 1000), None);
    }
}
