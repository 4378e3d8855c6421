//! System call entries and exits.

use super::*;

impl Builder {
    /// System call entries and exits.
    pub(super) fn on_syscall(&mut self, at: At, e: &Event, strings: &Interner) {
        let At { cpu, ts, .. } = at;
        match &e.kind {
            Kind::SysEnter { nr, args } => {
                let op = FUTEX_NRS.contains(nr).then_some(args[1] as u32);
                self.sys_enter(e.tid, (cpu, ts), (*nr as u32, false), op)
            }
            Kind::SyscallEnter { name, args } => {
                let op = (strings.get(*name) == "futex")
                    .then(|| args.get(1).map(|a| a.1 as u32))
                    .flatten();
                self.sys_enter(e.tid, (cpu, ts), (name.0, true), op)
            }
            Kind::SysExit { nr, .. } => self.sys_exit(e.tid, e.comm, ts, (*nr as u32, false)),
            Kind::SyscallExit { name, .. } => self.sys_exit(e.tid, e.comm, ts, (name.0, true)),
            _ => {}
        }
    }

    pub(super) fn sys_enter(
        &mut self,
        tid: i32,
        (cpu, ts): (u32, u64),
        (key, named): (u32, bool),
        op: Option<u32>,
    ) {
        if tid <= 0 {
            return;
        }
        let t = self.tasks.entry(tid).or_insert_with(|| Task::new(cpu));
        if let Some(s) = t.sys.as_mut() {
            // raw_syscalls and syscalls:* fire as twins for one call: merge them.
            let twin = if named { !s.named } else { !s.raw };
            if twin && ts.saturating_sub(s.start) < 1_000_000 {
                s.op = s.op.or(op);
                if named {
                    if s.raw {
                        self.tl.syscall_names.insert(s.key, Sym(key));
                    }
                    s.key = key;
                    s.named = true;
                } else {
                    if s.named {
                        self.tl.syscall_names.insert(key, Sym(s.key));
                    }
                    s.raw = true;
                }
                return;
            }
            self.tl.anomalies.syscalls_without_exit += 1;
        }
        t.sys = Some(Sys {
            key,
            named,
            raw: !named,
            start: ts,
            cpu,
            migrations: 0,
            op,
        });
    }

    pub(super) fn sys_exit(&mut self, tid: i32, comm: Sym, ts: u64, (key, named): (u32, bool)) {
        if tid <= 0 {
            return;
        }
        let Some(t) = self.tasks.get_mut(&tid) else {
            self.tl.anomalies.unmatched_exits += 1;
            return;
        };
        match t.sys.take() {
            // The exit of another call than the one entered (only some calls' events
            // recorded: sys_enter_write without its exit, then sys_exit_read): the
            // entered call ended somewhere before, untraced. No duration is made up.
            Some(s) if s.named == named && s.key != key => {
                self.tl.anomalies.syscalls_without_exit += 1;
            }
            Some(s) => {
                t.last_sys_exit = (ts, !named);
                if let Some(op) = s.op {
                    self.tl.futex_ops.insert((tid, s.start), op);
                }
                let fl =
                    if s.named { span::NAMED } else { 0 } | self.loss_flag(u32::MAX, s.start, ts);
                self.tl.syscalls.push(Syscall {
                    start: s.start,
                    end: ts,
                    cpu: s.cpu,
                    tid,
                    comm,
                    key: s.key,
                    migrations: s.migrations,
                    flags: fl,
                });
            }
            None => {
                let (lts, lraw) = t.last_sys_exit;
                let twin = lts != u64::MAX && lraw == named && ts.saturating_sub(lts) < 1_000_000;
                if !twin {
                    self.tl.anomalies.unmatched_exits += 1;
                }
            }
        }
    }
}
