//! A selector's plan per event shape, built the first time the selector meets the shape:
//! whether events of that raw syscall number (or that per-call syscall name) are its
//! event, and where each condition's field is on them. A system call event then costs an
//! index and the fields the conditions read, where asking by name cost a table lookup and
//! string compares on every one (issue 51: cycle mode at the speed of automatic mode).
//! Text fields are tested once per string (a `comm` symbol, an argument's name). Every
//! other event goes the general way ([`Selector::is_target`], [`super::expr::field`]),
//! and a shape gives the answers the general way gives: `tests/` and the unit tests below
//! compare the two on every event of the bundled examples.

use super::expr::{cmp, test, Cond, FVal, Op, Selector};
use crate::event::{Event, Interner, Kind, Sym};
use crate::fdpath::FdPaths;
use crate::syscalls::{arg_names, Arch};
use std::borrow::Cow;

/// Raw syscall numbers and symbols past this go the general way (a bad record's number
/// must not grow a table).
const MAX_KEY: usize = 1 << 16;

/// Where a condition's own field is on events of one shape.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Own {
    /// `args[i]` of a raw syscall entry.
    Arg(usize),
    /// `nr` of a raw syscall.
    Nr,
    /// `ret` of an exit.
    Ret,
    /// A per-call syscall entry's argument by that name, if it has one.
    Named,
    /// The event has no field of that name: the task's fields are asked.
    No,
}

/// One condition's test on events of one planned shape, most of them settled when the
/// shape is planned: a number the event always carries against a number, or the task's
/// name, cost a load and a compare (issue 51: the selectors were most of cycle mode's
/// cost over automatic mode).
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Field `at` (never [`Own::Named`] nor [`Own::No`]) `op` `want`.
    Num { at: Own, op: Op, want: i64 },
    /// The thread id `op` `want` (the event has no field of the condition's name).
    Tid { op: Op, want: i64 },
    /// The task's name, tested once per name.
    Comm,
    /// Anything else: the general way (`value`, then [`test`]).
    Other(Own),
}

impl Step {
    /// The step for condition `c` whose own field on the shape is `own`, the task's
    /// field `task` standing in when it has none.
    fn of(c: &Cond, own: Own, task: Task) -> Step {
        // A glob, or a value that is no number, goes the general way.
        let num = c.num.filter(|_| c.op != Op::Glob);
        match (own, task, num) {
            (Own::Arg(_) | Own::Nr | Own::Ret, _, Some(want)) => Step::Num {
                at: own,
                op: c.op,
                want,
            },
            (Own::No, Task::Tid, Some(want)) => Step::Tid { op: c.op, want },
            (Own::No, Task::Comm, _) => Step::Comm,
            _ => Step::Other(own),
        }
    }
}

/// A field of the task or the file, asked when the event has no field of that name.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Task {
    Comm,
    Tid,
    Tgid,
    Cpu,
    Path,
    No,
}

impl Task {
    fn of(name: &str) -> Task {
        match name {
            "comm" => Task::Comm,
            "pid" | "tid" => Task::Tid,
            "tgid" => Task::Tgid,
            "cpu" => Task::Cpu,
            "path" => Task::Path,
            _ => Task::No,
        }
    }
}

/// What a selector makes of one event.
pub(super) enum Met {
    /// Not a system call: ask the general way.
    Unplanned,
    /// Not its event.
    No,
    /// Its event; whether every condition holds, and per condition whether the field was
    /// there and whether it was a number (as [`super::expr::field`] without `paths` says).
    Yes(bool),
}

/// A value found by a plan.
enum Val<'a> {
    Num(i64),
    Comm(Sym),
    Path(Option<&'a str>),
    None,
}

/// Per-symbol answers: 0 not asked yet, 1 false, 2 true.
#[derive(Debug, Default)]
struct Memo(Vec<u8>);

impl Memo {
    #[inline]
    fn get(&mut self, sym: Sym, s: &Interner, f: impl FnOnce(&str) -> bool) -> bool {
        let i = sym.0 as usize;
        if i >= MAX_KEY {
            return f(s.get(sym));
        }
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        if self.0[i] == 0 {
            self.0[i] = 1 + u8::from(f(s.get(sym)));
        }
        self.0[i] == 2
    }
}

/// One selector's plans (held with what it met, [`super::Seen`]).
#[derive(Debug, Default)]
pub(super) struct Plans {
    arch: Option<Arch>,
    /// Per shape: 0 not planned, 1 not the selector's event, k + 2 its event, with
    /// `steps[k]` (one per condition). Raw entries and exits by number, per-call ones by
    /// name symbol (in that order).
    slots: [Vec<u32>; 4],
    steps: Vec<Box<[Step]>>,
    /// Per condition: the task's field it reads when the event has none of its name.
    task: Vec<Task>,
    /// Per condition: its test on each comm.
    comm: Vec<Memo>,
    /// Per condition: whether each argument name is its field's.
    arg_name: Vec<Memo>,
}

impl Plans {
    /// What `sel` makes of `e`: whether it is its event, and then whether its conditions
    /// hold, noting in `present` what [`super::Seen`] counts. `paths` names descriptors.
    /// Small enough to inline where it runs on every event: most events are not the
    /// selector's, and cost a match and an index.
    #[inline]
    pub(super) fn met(
        &mut self,
        sel: &Selector,
        e: &Event,
        s: &Interner,
        arch: Arch,
        paths: Option<&FdPaths>,
        present: &mut [(u64, u64)],
    ) -> Met {
        let (shape, key) = match &e.kind {
            Kind::SysEnter { nr, .. } => (0, *nr),
            Kind::SysExit { nr, .. } => (1, *nr),
            Kind::SyscallEnter { name, .. } => (2, name.0 as i64),
            Kind::SyscallExit { name, .. } => (3, name.0 as i64),
            _ => return Met::Unplanned,
        };
        let slot = match self.arch == Some(arch) {
            true => usize::try_from(key)
                .ok()
                .and_then(|k| self.slots[shape].get(k))
                .copied()
                .unwrap_or(0),
            false => 0,
        };
        match slot {
            1 => Met::No,
            0 => self.plan(sel, e, s, arch, (shape, key), paths, present),
            k => Met::Yes(self.hold(k as usize - 2, sel, e, s, arch, paths, present)),
        }
    }

    /// Plans `e`'s shape (`shape`, `key`), then answers as [`Self::met`].
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &mut self,
        sel: &Selector,
        e: &Event,
        s: &Interner,
        arch: Arch,
        (shape, key): (usize, i64),
        paths: Option<&FdPaths>,
        present: &mut [(u64, u64)],
    ) -> Met {
        let Some(key) = usize::try_from(key).ok().filter(|&k| k < MAX_KEY) else {
            return Met::Unplanned;
        };
        if self.arch != Some(arch) || self.task.len() != sel.conds.len() {
            *self = Plans::new(sel, arch);
        }
        let slots = &mut self.slots[shape];
        if slots.len() <= key {
            slots.resize(key + 1, 0);
        }
        slots[key] = if sel.is_target(e, s, arch) {
            let steps = (sel.conds.iter().zip(&self.task))
                .map(|(c, &task)| Step::of(c, own(&e.kind, &c.field, arch), task));
            self.steps.push(steps.collect());
            self.steps.len() as u32 + 1
        } else {
            1
        };
        self.met(sel, e, s, arch, paths, present)
    }

    /// Whether every condition holds on `e`, its event's shape planned as `steps[k]`.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &mut self,
        k: usize,
        sel: &Selector,
        e: &Event,
        s: &Interner,
        arch: Arch,
        paths: Option<&FdPaths>,
        present: &mut [(u64, u64)],
    ) -> bool {
        let Plans {
            steps,
            comm,
            arg_name,
            task,
            ..
        } = self;
        let conds = sel.conds.iter().zip(present.iter_mut());
        let mut all = true;
        for (i, ((c, p), &step)) in conds.zip(steps[k].iter()).enumerate() {
            all &= match step {
                Step::Num { at, op, want } => {
                    *p = (p.0 + 1, p.1 + 1);
                    number(at, e).is_some_and(|x| cmp(op, x.cmp(&want)))
                }
                Step::Tid { op, want } => {
                    *p = (p.0 + 1, p.1 + 1);
                    cmp(op, i64::from(e.tid).cmp(&want))
                }
                Step::Comm => held(Val::Comm(e.comm), c, p, &mut comm[i], s),
                Step::Other(own) => {
                    let v = value(&mut arg_name[i], task[i], c, own, e, (s, arch, paths));
                    held(v, c, p, &mut comm[i], s)
                }
            };
        }
        all
    }

    fn new(sel: &Selector, arch: Arch) -> Plans {
        Plans {
            arch: Some(arch),
            task: sel.conds.iter().map(|c| Task::of(&c.field)).collect(),
            comm: sel.conds.iter().map(|_| Memo::default()).collect(),
            arg_name: sel.conds.iter().map(|_| Memo::default()).collect(),
            ..Plans::default()
        }
    }
}

/// Whether condition `c` holds for the value `v` found, counting in `p` what
/// [`super::Seen`] counts (the field was there, it was a number); a task's name is
/// tested once per name (`names`).
#[inline]
fn held(v: Val<'_>, c: &Cond, p: &mut (u64, u64), names: &mut Memo, s: &Interner) -> bool {
    match v {
        Val::Num(x) => {
            *p = (p.0 + 1, p.1 + 1);
            test(c, FVal::Num(x))
        }
        Val::Comm(sym) => {
            p.0 += 1;
            names.get(sym, s, |t| test(c, FVal::Str(Cow::Borrowed(t))))
        }
        Val::Path(Some(t)) => test(c, FVal::Str(Cow::Borrowed(t))),
        Val::Path(None) | Val::None => false,
    }
}

/// A condition's field on `e`: its own (`own`, per-call arguments found by name with
/// `names`), else the task's (`task`).
fn value<'a>(
    names: &mut Memo,
    task: Task,
    c: &Cond,
    own: Own,
    e: &Event,
    (s, arch, paths): (&Interner, Arch, Option<&'a FdPaths>),
) -> Val<'a> {
    let found = match (own, &e.kind) {
        (Own::Named, Kind::SyscallEnter { args, .. }) => args
            .iter()
            .find(|(k, _)| names.get(*k, s, |t| t == c.field))
            .map(|&(_, v)| v as i64),
        _ => number(own, e),
    };
    if let Some(v) = found {
        return Val::Num(v);
    }
    match task {
        Task::Comm => Val::Comm(e.comm),
        Task::Tid => Val::Num(e.tid as i64),
        Task::Tgid if e.tgid >= 0 => Val::Num(e.tgid as i64),
        Task::Cpu if e.cpu != Event::NO_CPU => Val::Num(e.cpu as i64),
        Task::Path => Val::Path(paths.and_then(|p| p.path_of(e, s, arch))),
        _ => Val::None,
    }
}

/// The number at `at` on `e` (an argument past the record's is none).
#[inline]
fn number(at: Own, e: &Event) -> Option<i64> {
    match (at, &e.kind) {
        (Own::Arg(a), Kind::SysEnter { args, .. }) => args.get(a).map(|&v| v as i64),
        (Own::Nr, Kind::SysEnter { nr, .. } | Kind::SysExit { nr, .. }) => Some(*nr),
        (Own::Ret, Kind::SysExit { ret, .. } | Kind::SyscallExit { ret, .. }) => Some(*ret),
        _ => None,
    }
}

/// Where field `name` is on events of `k`'s shape, as [`super::expr::field`] finds it.
fn own(k: &Kind, name: &str, arch: Arch) -> Own {
    match k {
        Kind::SysEnter { nr, args } => {
            let at = |i: usize| if i < args.len() { Own::Arg(i) } else { Own::No };
            if name == "nr" {
                Own::Nr
            } else if let Some(i) = name
                .strip_prefix("arg")
                .and_then(|d| d.parse::<usize>().ok())
            {
                at(i)
            } else {
                let names = arch.name(*nr).map(arg_names).unwrap_or(&[]);
                names.iter().position(|n| *n == name).map_or(Own::No, at)
            }
        }
        Kind::SysExit { .. } => match name {
            "ret" => Own::Ret,
            "nr" => Own::Nr,
            _ => Own::No,
        },
        Kind::SyscallEnter { .. } => Own::Named,
        Kind::SyscallExit { .. } if name == "ret" => Own::Ret,
        _ => Own::No,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Seen;
    use super::*;
    use crate::read::{self, OpenOptions};

    /// Every event of `path`, and its strings.
    fn events(path: &str) -> (Vec<Event>, Interner, Arch) {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path);
        let mut input = read::open(&p, &OpenOptions::default()).unwrap();
        let arch = input.arch().unwrap_or_default();
        let mut s = Interner::new();
        let mut v = Vec::new();
        while let Some(e) = input.next_ref(&mut s).unwrap() {
            v.push(e.clone());
        }
        (v, s, arch)
    }

    #[test]
    fn plans_answer_as_names_do() {
        let sels = [
            "sys_enter_write[comm=frobnicator,count=7]",
            "sys_exit_read[comm=frobnicator,ret>0]",
            "sys_enter_write[comm~frob*,fd<3,tgid>0,cpu>=0]",
            "sys_enter_read[arg0=0,arg2>1,nr>0,pid!=1,arg9=1]",
            "sys_exit_write[ret=1,nr>=0,count=1,tid>0]",
            "sys_enter_poll[nfds=1,timeout_msecs~*0*]",
            "sys_enter_ppoll[path~/dev/*]",
            "sys_exit_ppoll[comm!=bash]",
            "sys_enter[id=1]",
            "sys_exit",
            "sched_switch[prev_comm=frobnicator]",
            "sys_enter_clock_nanosleep[comm~*]",
        ];
        let mut met = Vec::new();
        for path in [
            "examples/frob.dat.zst",
            "examples/frob.perf.data.zst",
            "examples/pty-poll.ftrace.gz",
            "examples/timer.dat.zst",
        ] {
            let (evs, s, arch) = events(path);
            for text in sels {
                let sel = Selector::parse(text).unwrap();
                let (mut planned, mut named) = (Seen::default(), Seen::default());
                let mut hits = 0;
                for e in &evs {
                    let a = planned.observe_match(&sel, e, &s, arch, None);
                    let b = named.observe_match_by_name(&sel, e, &s, arch, None);
                    assert_eq!(a, b, "{path} {text}: {e:?}");
                    hits += usize::from(a);
                }
                assert_eq!(planned.summary(), named.summary(), "{path} {text} ({hits})");
                met.push((path, text, hits));
            }
        }
        // Planned events selected on the binary inputs, raw and per-call, and on text.
        for path in ["examples/frob.dat.zst", "examples/frob.perf.data.zst"] {
            assert!(
                met.iter().any(|&(p, _, n)| p == path && n > 0),
                "{path}: {met:?}"
            );
        }
    }
}
