//! A selector's grammar (`EVENT[FIELD OP VALUE,...]`), parsing, and matching an event:
//! its name, then each condition on a field of the event, the task, the syscall's
//! arguments or the file behind its descriptor.

use crate::event::{fields, parse_num, Event, Interner, Kind, SOFTIRQ_NAMES};
use crate::fdpath::FdPaths;
use crate::glob::Glob;
use crate::syscalls::{arg_names, Arch};
use std::borrow::Cow;
use std::fmt;

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `~`: glob (`*`, `?`) on the text.
    Glob,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Cond {
    pub(super) field: String,
    pub(super) op: Op,
    pub(super) value: String,
    pub(super) num: Option<i64>,
    /// The pattern, for `~`.
    glob: Option<Glob>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Target {
    /// A bare tracepoint name.
    Name(String),
    /// `sys_enter_NAME`.
    SysEnter(String),
    /// `sys_exit_NAME`.
    SysExit(String),
    /// trace_marker writes.
    Marker,
}

/// A parsed selector.
#[derive(Clone, Debug, PartialEq)]
pub struct Selector {
    text: String,
    pub(super) target: Target,
    pub(super) conds: Vec<Cond>,
}

/// A selector that does not parse.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectorError {
    /// The selector as given.
    pub selector: String,
    /// What was wrong.
    pub why: String,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "selector {:?}: {}", self.selector, self.why)
    }
}

impl std::error::Error for SelectorError {}

/// A field value.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum FVal<'a> {
    Num(i64),
    Str(Cow<'a, str>),
}

impl Selector {
    /// Parses `EVENT` or `EVENT[COND,...]`.
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        let err = |why: String| SelectorError {
            selector: s.to_string(),
            why,
        };
        let t = s.trim();
        let (ev, conds) = match t.find('[') {
            Some(i) => {
                let rest = &t[i + 1..];
                let body = rest
                    .strip_suffix(']')
                    .ok_or_else(|| err("expected `]` at the end".into()))?;
                (&t[..i], body)
            }
            None => (t, ""),
        };
        let ev = ev.trim();
        // `irq:irq_handler_entry`, `syscalls:sys_enter_write`: the system is optional.
        let bare = ev.rsplit(':').next().unwrap_or(ev);
        if bare.is_empty() || !bare.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(err(format!(
                "expected an event name (letters, digits, _), found {ev:?}"
            )));
        }
        let target = if bare == "marker" || bare == "print" || bare == "tracing_mark_write" {
            Target::Marker
        } else if let Some(n) = bare.strip_prefix("sys_enter_") {
            Target::SysEnter(n.to_string())
        } else if let Some(n) = bare.strip_prefix("sys_exit_") {
            Target::SysExit(n.to_string())
        } else {
            Target::Name(bare.to_string())
        };
        let mut out = Vec::new();
        let pieces: Vec<&str> = conds.split(',').map(str::trim).collect();
        if !conds.trim().is_empty() {
            if let Some(i) = pieces.iter().position(|c| c.is_empty()) {
                return Err(err(format!(
                    "condition {} is empty (two commas, or a comma at an end): expected FIELD OP VALUE",
                    i + 1
                )));
            }
        }
        for c in pieces.into_iter().filter(|c| !c.is_empty()) {
            let name_end = c
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.'))
                .ok_or_else(|| {
                    err(format!(
                        "{c:?}: expected FIELD OP VALUE, with an operator = != < <= > >= ~"
                    ))
                })?;
            let field = &c[..name_end];
            // Spaces around the operator are layout (`comm = frob`), as after commas.
            let rest = c[name_end..].trim_start();
            if let Some(why) = other_language_operator(field, rest) {
                return Err(err(format!("{c:?}: {why}")));
            }
            let (op, value) = [
                ("!=", Op::Ne),
                ("<=", Op::Le),
                (">=", Op::Ge),
                ("=", Op::Eq),
                ("<", Op::Lt),
                (">", Op::Gt),
                ("~", Op::Glob),
            ]
            .iter()
            .find_map(|(p, op)| rest.strip_prefix(p).map(|v| (*op, v.trim())))
            .ok_or_else(|| {
                err(format!(
                    "{c:?}: expected an operator (= != < <= > >= ~) after {field:?}"
                ))
            })?;
            if field.is_empty() {
                return Err(err(format!("{c:?}: missing field name")));
            }
            let num = parse_num(value.as_bytes());
            if matches!(op, Op::Lt | Op::Le | Op::Gt | Op::Ge) && num.is_none() {
                return Err(err(format!(
                    "{c:?}: {value:?} is not a number, and {field} {} needs one",
                    match op {
                        Op::Lt => "<",
                        Op::Le => "<=",
                        Op::Gt => ">",
                        _ => ">=",
                    }
                )));
            }
            let glob = match op {
                Op::Glob => Some(Glob::new(value).map_err(|e| err(format!("{c:?}: {e}")))?),
                _ => None,
            };
            out.push(Cond {
                field: field.to_string(),
                op,
                value: value.to_string(),
                num,
                glob,
            });
        }
        Ok(Selector {
            text: t.to_string(),
            target,
            conds: out,
        })
    }

    /// The selector as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The system call it selects the entry (`true`) or the exit (`false`) of, by name
    /// (`sys_enter_write`: `(true, "write")`); None for other events.
    pub fn syscall(&self) -> Option<(bool, &str)> {
        match &self.target {
            Target::SysEnter(n) => Some((true, n)),
            Target::SysExit(n) => Some((false, n)),
            _ => None,
        }
    }

    /// True when a condition reads `field`.
    pub fn uses(&self, field: &str) -> bool {
        self.conds.iter().any(|c| c.field == field)
    }

    /// True when `e` is selected (the `path` field never matches: see [`Self::matches_in`]).
    pub fn matches(&self, e: &Event, s: &Interner, arch: Arch) -> bool {
        self.matches_in(e, s, arch, None)
    }

    /// True when `e` is selected; `paths` names descriptors for the `path` field.
    pub fn matches_in(&self, e: &Event, s: &Interner, arch: Arch, paths: Option<&FdPaths>) -> bool {
        self.is_target(e, s, arch) && self.conds_hold(e, s, arch, paths)
    }

    /// True when every condition holds on `e` (its event aside).
    pub(super) fn conds_hold(
        &self,
        e: &Event,
        s: &Interner,
        arch: Arch,
        paths: Option<&FdPaths>,
    ) -> bool {
        self.conds.iter().all(|c| cond(c, e, s, arch, paths))
    }

    /// True when `e` is the selector's event, whatever its conditions say.
    pub fn is_target(&self, e: &Event, s: &Interner, arch: Arch) -> bool {
        match (&self.target, &e.kind) {
            (Target::Marker, Kind::Print { .. }) => true,
            (Target::SysEnter(n), Kind::SyscallEnter { name, .. }) => s.get(*name) == n,
            (Target::SysEnter(n), Kind::SysEnter { nr, .. }) => arch.name(*nr) == Some(n),
            (Target::SysExit(n), Kind::SyscallExit { name, .. }) => s.get(*name) == n,
            (Target::SysExit(n), Kind::SysExit { nr, .. }) => arch.name(*nr) == Some(n),
            (Target::Name(n), _) => name_is(e, n, s),
            _ => false,
        }
    }
}

/// An operator other languages have and the grammar does not (`=~`, `!~`, `==`): read
/// as `=` (or nothing) and a value starting with its second character, it would select
/// nothing, so it is refused with the operator meant.
fn other_language_operator(field: &str, rest: &str) -> Option<String> {
    let value = rest.get(2..).unwrap_or_default().trim();
    if rest.starts_with("=~") {
        Some(format!(
            "`=~` is not an operator: `~` is, and it matches the whole value by glob \
             (`{field}~*{value}*` for values containing {value:?}; `{field}~\\~{value}` for a \
             value that starts with `~`)"
        ))
    } else if rest.starts_with("!~") {
        Some("`!~` is not an operator (they are = != < <= > >= ~; `~` has no negation)".into())
    } else if rest.starts_with("==") {
        Some(format!("`==` is not an operator: write `{field}={value}`"))
    } else {
        None
    }
}

/// `e`'s bare name equals `n`, without building a string (this runs on every event).
fn name_is(e: &Event, n: &str, s: &Interner) -> bool {
    use crate::event::EventName;
    match e.name() {
        EventName::Static(x) => x == n,
        EventName::Other(sym) => s.get(sym) == n,
        EventName::SysEnter(sym) => n
            .strip_prefix("sys_enter_")
            .is_some_and(|x| x == s.get(sym)),
        EventName::SysExit(sym) => n.strip_prefix("sys_exit_").is_some_and(|x| x == s.get(sym)),
    }
}

fn cond(c: &Cond, e: &Event, s: &Interner, arch: Arch, paths: Option<&FdPaths>) -> bool {
    field(e, &c.field, s, arch, paths).is_some_and(|v| test(c, v))
}

/// Whether condition `c` holds on its field's value `v`.
pub(super) fn test(c: &Cond, v: FVal) -> bool {
    match v {
        FVal::Num(x) => match (c.op, c.num) {
            (Op::Glob, _) => c.glob.as_ref().is_some_and(|g| g.is_match(&x.to_string())),
            (_, None) => false,
            (op, Some(want)) => cmp(op, x.cmp(&want)),
        },
        FVal::Str(t) => match c.op {
            Op::Glob => c.glob.as_ref().is_some_and(|g| g.is_match(&t)),
            Op::Eq => t == c.value,
            Op::Ne => t != c.value,
            op => match (c.num, parse_num(t.as_bytes())) {
                (Some(want), Some(x)) => cmp(op, x.cmp(&want)),
                _ => false,
            },
        },
    }
}

pub(super) fn cmp(op: Op, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        Op::Eq => o == Equal,
        Op::Ne => o != Equal,
        Op::Lt => o == Less,
        Op::Le => o != Greater,
        Op::Gt => o == Greater,
        Op::Ge => o != Less,
        Op::Glob => false,
    }
}

fn num(v: i64) -> Option<FVal<'static>> {
    Some(FVal::Num(v))
}

fn text<'a>(s: &'a Interner, sym: crate::event::Sym) -> Option<FVal<'a>> {
    Some(FVal::Str(Cow::Borrowed(s.get(sym))))
}

/// The value of field `name` on `e` as a pairing key (`--key`): numbers as they are,
/// text by its hash. `None` when the event has no such field.
pub fn key_of(e: &Event, name: &str, s: &Interner, arch: Arch) -> Option<i64> {
    use std::hash::{Hash, Hasher};
    match field(e, name, s, arch, None)? {
        FVal::Num(n) => Some(n),
        FVal::Str(t) => {
            let mut h = rustc_hash::FxHasher::default();
            t.hash(&mut h);
            Some(h.finish() as i64)
        }
    }
}

/// The value of `name` on `e`: the event's own field first, then the pseudo-fields.
pub(super) fn field<'a>(
    e: &'a Event,
    name: &str,
    s: &'a Interner,
    arch: Arch,
    paths: Option<&'a FdPaths>,
) -> Option<FVal<'a>> {
    let own = match (&e.kind, name) {
        (Kind::SyscallEnter { args, .. }, _) => args
            .iter()
            .find(|(k, _)| s.get(*k) == name)
            .map(|(_, v)| FVal::Num(*v as i64)),
        (Kind::SysEnter { nr, args }, _) => {
            if name == "nr" {
                num(*nr)
            } else if let Some(i) = name
                .strip_prefix("arg")
                .and_then(|d| d.parse::<usize>().ok())
            {
                args.get(i).map(|v| FVal::Num(*v as i64))
            } else {
                let names = arch.name(*nr).map(arg_names).unwrap_or(&[]);
                names
                    .iter()
                    .position(|n| *n == name)
                    .and_then(|i| args.get(i))
                    .map(|v| FVal::Num(*v as i64))
            }
        }
        (Kind::SyscallExit { ret, .. }, "ret") | (Kind::SysExit { ret, .. }, "ret") => num(*ret),
        (Kind::SysExit { nr, .. }, "nr") => num(*nr),
        (Kind::SchedSwitch { prev_comm, .. }, "prev_comm") => text(s, *prev_comm),
        (Kind::SchedSwitch { prev_pid, .. }, "prev_pid") => num(*prev_pid as i64),
        (Kind::SchedSwitch { prev_prio, .. }, "prev_prio") => num(*prev_prio as i64),
        (Kind::SchedSwitch { prev_state, .. }, "prev_state") => {
            Some(FVal::Str(Cow::Owned(prev_state.to_string())))
        }
        (Kind::SchedSwitch { next_comm, .. }, "next_comm") => text(s, *next_comm),
        (Kind::SchedSwitch { next_pid, .. }, "next_pid") => num(*next_pid as i64),
        (Kind::SchedSwitch { next_prio, .. }, "next_prio") => num(*next_prio as i64),
        (Kind::SchedWaking { comm, .. } | Kind::SchedWakeup { comm, .. }, "comm") => text(s, *comm),
        (Kind::SchedWaking { pid, .. } | Kind::SchedWakeup { pid, .. }, "pid") => num(*pid as i64),
        (Kind::SchedWaking { prio, .. } | Kind::SchedWakeup { prio, .. }, "prio") => {
            num(*prio as i64)
        }
        (
            Kind::SchedWaking { target_cpu, .. } | Kind::SchedWakeup { target_cpu, .. },
            "target_cpu",
        ) => num(*target_cpu as i64),
        (Kind::IrqEntry { irq, .. } | Kind::IrqExit { irq, .. }, "irq") => num(*irq as i64),
        (Kind::IrqEntry { name: n, .. }, "name") => text(s, *n),
        (
            Kind::SoftirqRaise { vec } | Kind::SoftirqEntry { vec } | Kind::SoftirqExit { vec },
            "vec",
        ) => num(*vec as i64),
        (
            Kind::SoftirqRaise { vec } | Kind::SoftirqEntry { vec } | Kind::SoftirqExit { vec },
            "action",
        ) => SOFTIRQ_NAMES
            .get(*vec as usize)
            .map(|n| FVal::Str(Cow::Borrowed(*n))),
        (
            Kind::WorkQueue { function, .. }
            | Kind::WorkActivate { function, .. }
            | Kind::WorkStart { function, .. }
            | Kind::WorkEnd { function, .. },
            "function",
        ) => text(s, *function),
        (
            Kind::HrtimerStart { function, .. } | Kind::HrtimerExpireEntry { function, .. },
            "function",
        ) => text(s, *function),
        (Kind::Print { msg, .. }, "msg" | "buf") | (Kind::Console { msg }, "msg") => {
            Some(FVal::Str(Cow::Borrowed(msg)))
        }
        // Bytes on the wire: the message and its newline.
        (Kind::Print { msg, .. } | Kind::Console { msg }, "len") => num(msg.len() as i64 + 1),
        (
            Kind::FuncEntry { func, .. }
            | Kind::FuncExit { func, .. }
            | Kind::Function { func, .. },
            "func" | "function",
        ) => text(s, *func),
        (Kind::Function { parent, .. }, "parent") => text(s, *parent),
        (Kind::Other { fields: f, .. }, _) => {
            fields(f)
                .find(|(k, _)| *k == name)
                .map(|(_, v)| match parse_num(v.as_bytes()) {
                    Some(n) => FVal::Num(n),
                    None => FVal::Str(Cow::Borrowed(v)),
                })
        }
        _ => None,
    };
    if own.is_some() {
        return own;
    }
    match name {
        "comm" => text(s, e.comm),
        "pid" | "tid" => num(e.tid as i64),
        "tgid" if e.tgid >= 0 => num(e.tgid as i64),
        "cpu" if e.cpu != Event::NO_CPU => num(e.cpu as i64),
        "path" => paths?
            .path_of(e, s, arch)
            .map(|p| FVal::Str(Cow::Borrowed(p))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Sym;

    fn ev(kind: Kind, comm: Sym, tid: i32) -> Event {
        Event {
            ts: 0,
            cpu: 1,
            tid,
            tgid: -1,
            comm,
            flags: 0,
            kind,
        }
    }

    #[test]
    fn parse_errors_say_what_was_expected() {
        assert!(Selector::parse("sys_enter_write[count=7")
            .unwrap_err()
            .why
            .contains("`]`"));
        assert!(Selector::parse("x[ret>abc]")
            .unwrap_err()
            .why
            .contains("not a number"));
        assert!(Selector::parse("x[ret]")
            .unwrap_err()
            .why
            .contains("operator"));
        assert!(Selector::parse("a b").is_err());
        let e = Selector::parse("sys_enter_write[comm=a,,count=7]").unwrap_err();
        assert!(e.why.starts_with("condition 2 is empty"), "{}", e.why);
    }

    #[test]
    fn spaces_around_operators_and_after_commas_are_accepted() {
        let tight = Selector::parse("sys_exit_read[comm~frob*,ret>=0]").unwrap();
        for spaced in [
            "sys_exit_read[comm ~ frob*, ret >= 0]",
            "sys_exit_read[ comm~ frob* ,ret >=0 ]",
            "sys_exit_read [comm ~frob*,  ret>= 0]",
        ] {
            let s = Selector::parse(spaced).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.conds, tight.conds, "{spaced}");
        }
        let e = Selector::parse("x[comm frob]").unwrap_err();
        assert!(e.why.contains("expected an operator"), "{}", e.why);
    }

    #[test]
    fn operators_of_other_languages_are_refused_as_likely_typos() {
        let e = Selector::parse("sys_enter_write[comm=~frob]").unwrap_err();
        assert!(
            e.why.contains("`=~` is not an operator") && e.why.contains("comm~*frob*"),
            "{}",
            e.why
        );
        let e = Selector::parse("x[comm !~ frob]").unwrap_err();
        assert!(e.why.contains("`!~` is not an operator"), "{}", e.why);
        let e = Selector::parse("x[pid==7]").unwrap_err();
        assert!(e.why.contains("write `pid=7`"), "{}", e.why);
        // A value that merely starts with `~` through the glob's escape still parses.
        assert!(Selector::parse("x[comm~\\~frob]").is_ok());
    }

    #[test]
    fn raw_and_named_syscalls_match_alike() {
        let mut s = Interner::new();
        let frob = s.intern("frobnicator");
        let write = s.intern("write");
        let (fd, buf, count) = (s.intern("fd"), s.intern("buf"), s.intern("count"));
        let sel = Selector::parse("syscalls:sys_enter_write[comm~frob*,count=7]").unwrap();
        let raw = ev(
            Kind::SysEnter {
                nr: 1,
                args: [7, 0, 7, 0, 0, 0],
            },
            frob,
            10,
        );
        assert!(sel.matches(&raw, &s, Arch::X86_64));
        assert!(
            !sel.matches(&raw, &s, Arch::Aarch64),
            "nr 1 is not write on arm64"
        );
        let named = ev(
            Kind::SyscallEnter {
                name: write,
                args: vec![(fd, 7), (buf, 0), (count, 7)].into(),
            },
            frob,
            10,
        );
        assert!(sel.matches(&named, &s, Arch::X86_64));
        let exit = Selector::parse("sys_exit_read[ret>0,tid=10]").unwrap();
        let e = ev(Kind::SysExit { nr: 0, ret: 1 }, frob, 10);
        assert!(exit.matches(&e, &s, Arch::X86_64));
        let e = ev(Kind::SysExit { nr: 0, ret: -11 }, frob, 10);
        assert!(!exit.matches(&e, &s, Arch::X86_64));
    }
}
