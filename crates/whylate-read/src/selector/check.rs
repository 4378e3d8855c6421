//! Why a selector selected nothing: an event the trace does not have, a field that event
//! does not have, a value of the wrong type. Watched while the events go by (a few
//! compares per event), told after the pass with the closest names the trace does have.

use super::expr::{field, FVal, Selector, Target};
use super::plan::{Met, Plans};
use crate::event::{fields, Event, EventName, Interner, Kind};
use crate::suggest::{closest, did_you_mean};
use crate::syscalls::{arg_names, Arch};
use rustc_hash::FxHashSet;

/// What one selector met in a trace. Read and counted on every event by the feeding
/// thread, so aligned to a cache line: no other allocation shares a line with its count
/// (its own tables on the heap are not covered). perf.data's layout table, allocated
/// beside it and read by the reading thread on every record, did share one: the line
/// moved between the cores on every event, and explain on a 3 M-event perf.data took
/// 428 instead of 344 ms. The reading thread now also copies such tables into its own
/// memory (`pipeline/apart.rs`).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct Seen {
    /// Events that were the selector's event (conditions aside).
    target: u64,
    /// Per condition: target events that had its field, and those where it was a number.
    present: Vec<(u64, u64)>,
    /// The first target event, to list the fields such events have.
    example: Option<Event>,
    /// Where its event and fields are on system call events, per number or name.
    plans: Plans,
}

/// Every distinct event name in a trace (the candidates for "did you mean").
#[derive(Debug, Default)]
pub struct Names(FxHashSet<EventName>);

impl Names {
    /// Notes `e`'s name.
    pub fn observe(&mut self, e: &Event) {
        self.0.insert(e.name());
    }
}

impl Seen {
    /// True once the selector's event was seen (conditions aside).
    pub fn met(&self) -> bool {
        self.target > 0
    }

    /// The selector's events seen (conditions aside).
    pub fn target(&self) -> u64 {
        self.target
    }

    /// Notes what `e` tells about `sel`, and says whether `sel` selects it (`paths`
    /// names descriptors, as in [`Selector::matches_in`]): one test of the event's
    /// name, where noting and matching apart took two on every event of the pass.
    #[inline]
    pub fn observe_match(
        &mut self,
        sel: &Selector,
        e: &Event,
        s: &Interner,
        arch: Arch,
        paths: Option<&crate::fdpath::FdPaths>,
    ) -> bool {
        if self.present.len() != sel.conds.len() {
            self.present.resize(sel.conds.len(), (0, 0));
        }
        let met = self.plans.met(sel, e, s, arch, paths, &mut self.present);
        match met {
            Met::No => false,
            Met::Yes(hold) => {
                self.target += 1;
                if self.example.is_none() {
                    self.example = Some(e.clone());
                }
                hold
            }
            Met::Unplanned => self.observe_match_by_name(sel, e, s, arch, paths),
        }
    }

    /// What was counted, to compare two ways of counting.
    #[cfg(test)]
    pub(super) fn summary(&self) -> (u64, Vec<(u64, u64)>, Option<Event>) {
        // Sized before the first target event by one way, at it by the other: read only
        // once a target event was met.
        let present = if self.target > 0 {
            self.present.clone()
        } else {
            Vec::new()
        };
        (self.target, present, self.example.clone())
    }

    /// [`Self::observe_match`] the general way, by names on every event.
    pub(super) fn observe_match_by_name(
        &mut self,
        sel: &Selector,
        e: &Event,
        s: &Interner,
        arch: Arch,
        paths: Option<&crate::fdpath::FdPaths>,
    ) -> bool {
        if !sel.is_target(e, s, arch) {
            return false;
        }
        self.note_target(sel, e, s, arch);
        sel.conds_hold(e, s, arch, paths)
    }

    /// `e` is `sel`'s event: counts it and which condition fields it has.
    fn note_target(&mut self, sel: &Selector, e: &Event, s: &Interner, arch: Arch) {
        self.target += 1;
        if self.example.is_none() {
            self.example = Some(e.clone());
        }
        self.present.resize(sel.conds.len(), (0, 0));
        for (c, p) in sel.conds.iter().zip(&mut self.present) {
            match field(e, &c.field, s, arch, None) {
                Some(FVal::Num(_)) => *p = (p.0 + 1, p.1 + 1),
                Some(FVal::Str(_)) => p.0 += 1,
                None => {}
            }
        }
    }
}

/// `--key FIELD` when none of the selectors' events has FIELD: pairing by it would pair
/// nothing, or everything as one key. Names the events, the closest fields they have
/// and all of them.
pub fn no_key_field(key: &str, sides: &[(&Selector, &Seen)], s: &Interner, arch: Arch) -> String {
    let mut events: Vec<String> = Vec::new();
    let mut have: Vec<String> = Vec::new();
    for (sel, seen) in sides {
        let name = format!("`{}`", sel.event_name());
        if !events.contains(&name) {
            events.push(name);
        }
        let fields = seen.example.as_ref().map(|e| field_names(e, s, arch));
        for f in fields.unwrap_or_default() {
            if !have.contains(&f) {
                have.push(f);
            }
        }
    }
    let close = closest(key, have.iter().map(String::as_str), 3);
    let which = match events.as_slice() {
        [one] => format!("{one} events have no field"),
        [a, b] => format!("neither {a} nor {b} events have a field"),
        many => format!("none of the {} events has a field", many.join(", ")),
    };
    format!(
        "--key {key}: {which} `{key}`{}; their fields: {}",
        did_you_mean(&close),
        have.join(", ")
    )
}

/// Field names a typed event may have, tried on an example to list what it has.
const KNOWN_FIELDS: [&str; 22] = [
    "prev_comm",
    "prev_pid",
    "prev_prio",
    "prev_state",
    "next_comm",
    "next_pid",
    "next_prio",
    "prio",
    "target_cpu",
    "irq",
    "name",
    "vec",
    "action",
    "function",
    "msg",
    "buf",
    "ret",
    "nr",
    "comm",
    "pid",
    "tgid",
    "cpu",
];

impl Selector {
    /// Why this selector selected nothing in a trace, when the trace shows it cannot
    /// select anything (None when it could have and simply did not).
    pub fn why_nothing(
        &self,
        seen: &Seen,
        names: &Names,
        s: &Interner,
        arch: Arch,
    ) -> Option<String> {
        if seen.target == 0 {
            return Some(self.no_such_event(names, s, arch));
        }
        let ex = seen.example.as_ref()?;
        let event = self.event_name();
        for (c, &(present, numeric)) in self.conds.iter().zip(&seen.present) {
            if c.field == "path" {
                continue; // said by its own note: it needs a recording's descriptors
            }
            if present == 0 {
                let have = field_names(ex, s, arch);
                let close = closest(&c.field, have.iter().map(String::as_str), 3);
                return Some(format!(
                    "`{event}` events have no field `{}`{}; their fields: {}",
                    c.field,
                    did_you_mean(&close),
                    have.join(", ")
                ));
            }
            let wants_number = !matches!(c.op, super::expr::Op::Glob);
            if wants_number && numeric == present && c.num.is_none() {
                return Some(format!(
                    "`{}` is a number in `{event}` events, and {:?} is not one",
                    c.field, c.value
                ));
            }
        }
        None
    }

    /// The selector's event as the messages name it (`sys_enter_write`, `marker`).
    pub fn event_name(&self) -> String {
        match &self.target {
            Target::Name(n) => n.clone(),
            Target::SysEnter(n) => format!("sys_enter_{n}"),
            Target::SysExit(n) => format!("sys_exit_{n}"),
            Target::Marker => "marker".into(),
        }
    }

    fn no_such_event(&self, names: &Names, s: &Interner, arch: Arch) -> String {
        let mut have: Vec<String> = names.0.iter().map(|n| n.render(s)).collect();
        // raw_syscalls stand for every syscall of the trace's architecture.
        if have.iter().any(|n| n == "sys_enter" || n == "sys_exit") {
            for n in arch.names() {
                have.push(format!("sys_enter_{n}"));
                have.push(format!("sys_exit_{n}"));
            }
        }
        have.sort();
        have.dedup();
        let event = self.event_name();
        let close = closest(&event, have.iter().map(String::as_str), 5);
        let hint = if close.is_empty() {
            "; `whylate stats FILE` lists the events it has".to_string()
        } else {
            did_you_mean(&close)
        };
        format!("the trace has no `{event}` event{hint}")
    }
}

/// The fields `e` has for a selector, in a stable order.
pub(super) fn field_names(e: &Event, s: &Interner, arch: Arch) -> Vec<String> {
    let mut v: Vec<String> = match &e.kind {
        Kind::SyscallEnter { args, .. } => {
            args.iter().map(|(k, _)| s.get(*k).to_string()).collect()
        }
        Kind::SysEnter { nr, .. } => {
            let mut a: Vec<String> = arch
                .name(*nr)
                .map(arg_names)
                .unwrap_or(&[])
                .iter()
                .map(|n| n.to_string())
                .collect();
            a.extend((0..6).map(|i| format!("arg{i}")));
            a
        }
        Kind::Other { fields: f, .. } => fields(f).map(|(k, _)| k.to_string()).collect(),
        _ => Vec::new(),
    };
    for n in KNOWN_FIELDS.iter().chain(&["tid"]) {
        if !v.iter().any(|x| x == n) && field(e, n, s, arch, None).is_some() {
            v.push(n.to_string());
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(sel: &Selector, events: &[Event], s: &Interner) -> (Seen, Names) {
        let (mut seen, mut names) = (Seen::default(), Names::default());
        for e in events {
            names.observe(e);
            seen.observe_match(sel, e, s, Arch::X86_64, None);
        }
        (seen, names)
    }

    fn write_event(s: &mut Interner) -> Event {
        let (write, fd, buf, count, comm) = (
            s.intern("write"),
            s.intern("fd"),
            s.intern("buf"),
            s.intern("count"),
            s.intern("frobnicator"),
        );
        Event {
            ts: 1,
            cpu: 0,
            tid: 7,
            tgid: 7,
            comm,
            flags: 0,
            kind: Kind::SyscallEnter {
                name: write,
                args: vec![(fd, 3), (buf, 0), (count, 7)].into(),
            },
        }
    }

    fn why(text: &str) -> Option<String> {
        let mut s = Interner::new();
        let e = write_event(&mut s);
        let sel = Selector::parse(text).unwrap();
        let (seen, names) = watch(&sel, &[e], &s);
        sel.why_nothing(&seen, &names, &s, Arch::X86_64)
    }

    #[test]
    fn a_mistyped_event_gets_the_closest_names_of_the_trace() {
        let w = why("sys_enter_wrte[comm=frobnicator]").unwrap();
        assert_eq!(
            w,
            "the trace has no `sys_enter_wrte` event; did you mean sys_enter_write?"
        );
    }

    #[test]
    fn a_mistyped_field_gets_the_events_fields() {
        let w = why("sys_enter_write[cmm=frobnicator]").unwrap();
        assert!(
            w.starts_with("`sys_enter_write` events have no field `cmm`; did you mean comm?"),
            "{w}"
        );
        assert!(
            w.ends_with("their fields: fd, buf, count, comm, pid, tgid, cpu, tid"),
            "{w}"
        );
    }

    #[test]
    fn a_word_for_a_number_is_refused() {
        let w = why("sys_enter_write[count=seven]").unwrap();
        assert_eq!(
            w,
            "`count` is a number in `sys_enter_write` events, and \"seven\" is not one"
        );
    }

    #[test]
    fn a_selector_that_could_match_is_not_an_error() {
        assert_eq!(why("sys_enter_write[comm=other,count=9]"), None);
        assert_eq!(why("sys_enter_write[comm~frob*]"), None);
    }

    #[test]
    fn observing_and_matching_at_once_counts_what_matching_alone_does_not_need() {
        let mut s = Interner::new();
        let w = write_event(&mut s);
        let mut other = w.clone();
        other.kind = Kind::Print {
            name: s.intern("print"),
            msg: "x".into(),
        };
        // Per condition: target events that had its field, and those where it was a number.
        type Present = &'static [(u64, u64)];
        // (selector, its target events met, per condition what was present).
        let cases: [(&str, u64, Present); 4] = [
            ("sys_enter_write[count=7]", 2, &[(2, 2)]),
            ("sys_enter_write[count=9]", 2, &[(2, 2)]),
            ("sys_enter_write[cmm=x]", 2, &[(0, 0)]),
            ("print", 1, &[]),
        ];
        for (text, target, present) in cases {
            let sel = Selector::parse(text).unwrap();
            let mut once = Seen::default();
            for e in [&w, &other, &w] {
                let m = once.observe_match(&sel, e, &s, Arch::X86_64, None);
                assert_eq!(m, sel.matches(e, &s, Arch::X86_64), "{text}");
            }
            assert_eq!(
                (once.target, &once.present[..]),
                (target, present),
                "{text}"
            );
        }
    }
}
