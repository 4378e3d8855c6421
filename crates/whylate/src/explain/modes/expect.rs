//! `--expect 'A -> B within T'`: every A needs a B within T (seed 003b: a NIC interrupt
//! during NAPI polling that never schedules NAPI, so a frame waits 200 ms for a
//! retransmission). A B counts for an A when it comes on the same CPU, thread or process,
//! from anyone, or with the same value of a field; one B answers every A waiting for it.
//! Each A without its B in time is a miss, explained by where it happened, the events
//! around it on its CPU, and when (or whether) B came.

use crate::event::{Event, EventName, Interner, Kind, SOFTIRQ_NAMES};
use crate::explain::causes as cause;
use crate::explain::driver::{assemble, Findings, Framing, PerMiss, Tally};
use crate::explain::report::{
    Culprit, CycleStats, ExpectStats, ExplainReport, Hold, Link, Miss, Window,
};
use crate::selector::{key_of, Names, Seen, Selector};
use crate::syscalls::Arch;
use crate::timeline::{SpanKind, Timeline};
use crate::units::{dur, secs};
use rustc_hash::FxHashMap;

/// Which B answers an A.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A B on A's CPU (default: an interrupt and the softirq it should raise).
    Cpu,
    /// A B by A's thread.
    Thread,
    /// A B by any thread of A's process.
    Tgid,
    /// Any B.
    Any,
    /// A B with A's value of this field (`irq`, `napi`, `skbaddr`).
    Field(String),
}

impl Scope {
    /// In words: `the same CPU`, `the same skbaddr`.
    pub fn label(&self) -> String {
        match self {
            Scope::Cpu => "the same CPU".into(),
            Scope::Thread => "the same thread".into(),
            Scope::Tgid => "the same process".into(),
            Scope::Any => "anyone".into(),
            Scope::Field(f) => format!("the same {f}"),
        }
    }
}

/// What `--expect` checks.
#[derive(Clone, Debug)]
pub struct ExpectOptions {
    /// The event that needs a follow-up.
    pub a: Selector,
    /// The follow-up.
    pub b: Selector,
    /// How soon.
    pub within_ns: u64,
    /// Which B answers an A.
    pub scope: Scope,
    /// Misses shown in full.
    pub top: usize,
}

impl ExpectOptions {
    /// Parses `A -> B within T` (T as `1ms`, `200us`); `deadline` parses T.
    pub fn parse(
        pattern: &str,
        scope: Scope,
        top: usize,
        deadline: impl Fn(&str) -> Result<u64, String>,
    ) -> Result<ExpectOptions, String> {
        let shape =
            "expected 'A -> B within T', e.g. 'irq_handler_entry[irq=19] -> napi_poll within 1ms'";
        let (pair, t) = (pattern.rsplit_once(" within "))
            .ok_or_else(|| format!("{shape}; found no ` within ` in {pattern:?}"))?;
        let arrow =
            arrow_at(pair).ok_or_else(|| format!("{shape}; found no `->` in {pattern:?}"))?;
        let a = Selector::parse(pair[..arrow].trim()).map_err(|e| format!("A: {e}"))?;
        let b = Selector::parse(pair[arrow + 2..].trim()).map_err(|e| format!("B: {e}"))?;
        let within_ns = deadline(t.trim()).map_err(|e| format!("T: {e}"))?;
        Ok(ExpectOptions {
            a,
            b,
            within_ns,
            scope,
            top,
        })
    }
}

/// The first `->` outside a selector's brackets.
fn arrow_at(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    for i in 0..b.len() {
        match b[i] {
            b'[' => depth += 1,
            b']' => depth -= 1,
            b'-' if depth == 0 && b.get(i + 1) == Some(&b'>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// One A as seen in the stream.
#[derive(Clone, Debug)]
pub struct Occurrence {
    ts: u64,
    cpu: u32,
    tid: i32,
    /// Its flags column (hardirq, softirq context when the format says).
    flags: u16,
    /// The B that answered it: time, thread.
    b: Option<(u64, i32)>,
    /// The events around it, kept while it may still be a miss: an A answered in time
    /// drops them, so the As of a long trace cost their 56 bytes, not their context.
    around: Option<Box<Around>>,
}

/// The events around one A, for its explanation should it miss.
#[derive(Clone, Debug)]
struct Around {
    /// The A event itself and the events after it on its CPU within T, in words.
    after: Vec<(u64, String)>,
    /// The events just before it on its CPU: time and name.
    before: Vec<(u64, EventName)>,
}

/// Events kept around each A.
const AROUND: usize = 3;

/// Watches the stream for A and B while it is read.
pub struct Expectations {
    o: ExpectOptions,
    arch: Arch,
    /// Every A, in time order.
    pub occurrences: Vec<Occurrence>,
    /// As waiting for their B, per scope key.
    open: FxHashMap<i64, Vec<usize>>,
    /// As still collecting the events after them.
    collecting: Vec<usize>,
    /// Per CPU, the last few events' time and name.
    recent: FxHashMap<u32, Vec<(u64, EventName)>>,
    seen_a: Seen,
    seen_b: Seen,
    names: Names,
    /// A matches left out for want of the `--key` field.
    unkeyed: u64,
}

impl Expectations {
    /// An empty watcher.
    pub fn new(o: &ExpectOptions) -> Expectations {
        Expectations {
            o: o.clone(),
            arch: Arch::default(),
            occurrences: Vec::new(),
            open: FxHashMap::default(),
            collecting: Vec::new(),
            recent: FxHashMap::default(),
            seen_a: Seen::default(),
            seen_b: Seen::default(),
            names: Names::default(),
            unkeyed: 0,
        }
    }

    /// The syscall table the reading pass settled on.
    pub fn set_arch(&mut self, a: Arch) {
        self.arch = a;
    }

    /// The key a B must share with an A; None: the event has no such field.
    fn key(&self, e: &Event, s: &Interner) -> Option<i64> {
        match &self.o.scope {
            Scope::Cpu => Some(e.cpu as i64),
            Scope::Thread => Some(e.tid as i64),
            Scope::Tgid => Some(if e.tgid >= 0 { e.tgid } else { e.tid } as i64),
            Scope::Any => Some(0),
            Scope::Field(f) => key_of(e, f, s, self.arch),
        }
    }

    /// Feeds one event.
    pub fn push(&mut self, e: &Event, s: &Interner) {
        if !self.seen_a.met() || !self.seen_b.met() {
            self.names.observe(e);
        }
        let a = self.seen_a.observe_match(&self.o.a, e, s, self.arch, None);
        let b = self.seen_b.observe_match(&self.o.b, e, s, self.arch, None);
        self.collect(e, s);
        if b {
            if let Some(q) = self.key(e, s).and_then(|k| self.open.remove(&k)) {
                for i in q {
                    let o = &mut self.occurrences[i];
                    o.b = Some((e.ts, e.tid));
                    if e.ts - o.ts <= self.o.within_ns {
                        o.around = None;
                    }
                }
            }
        }
        if a {
            if let Some(k) = self.key(e, s) {
                let before = self.recent.get(&e.cpu).cloned().unwrap_or_default();
                self.open.entry(k).or_default().push(self.occurrences.len());
                self.collecting.push(self.occurrences.len());
                self.occurrences.push(Occurrence {
                    ts: e.ts,
                    cpu: e.cpu,
                    tid: e.tid,
                    flags: e.flags,
                    b: None,
                    around: Some(Box::new(Around {
                        after: vec![(e.ts, brief(e, s))],
                        before,
                    })),
                });
            } else {
                self.unkeyed += 1;
            }
        }
        let r = self.recent.entry(e.cpu).or_default();
        if r.len() == AROUND {
            r.remove(0);
        }
        r.push((e.ts, e.name()));
    }

    /// The events after each recent A on its CPU, up to [`AROUND`] within T.
    fn collect(&mut self, e: &Event, s: &Interner) {
        let within = self.o.within_ns;
        let occ = &mut self.occurrences;
        self.collecting.retain(|&i| {
            let o = &mut occ[i];
            let Some(around) = o.around.as_mut() else {
                return false; // answered in time: nothing to explain
            };
            if e.ts > o.ts + within {
                return false;
            }
            if e.cpu == o.cpu {
                around.after.push((e.ts, brief(e, s)));
            }
            around.after.len() <= AROUND
        });
    }

    /// When the oldest A still waiting for its B came (none waiting: `None`): a window
    /// of a long trace is held until it knows whether and when each of its As was
    /// answered.
    pub fn oldest_open(&self) -> Option<u64> {
        (self.open.values())
            .filter_map(|q| q.first())
            .map(|&i| self.occurrences[i].ts)
            .min()
    }

    /// Keeps the As of `[lo, cut)` alone: a window of a long trace settles those.
    pub fn keep_starting_in(&mut self, (lo, cut): (u64, u64)) {
        self.occurrences.retain(|o| (lo..cut).contains(&o.ts));
        (self.open, self.collecting) = Default::default();
    }

    /// Why nothing matched, when the trace shows A (or B) cannot match.
    pub fn why_nothing(&self, s: &Interner) -> Option<String> {
        let say = |sel: &Selector, seen: &Seen| {
            sel.why_nothing(seen, &self.names, s, self.arch)
                .map(|w| format!("selector {:?}: {w}", sel.text()))
        };
        if self.occurrences.is_empty() {
            if let (Scope::Field(f), true) = (&self.o.scope, self.unkeyed > 0) {
                let a = [(&self.o.a, &self.seen_a)];
                return Some(crate::selector::no_key_field(f, &a, s, self.arch));
            }
            return say(&self.o.a, &self.seen_a);
        }
        if self.occurrences.iter().all(|o| o.b.is_none()) {
            return say(&self.o.b, &self.seen_b);
        }
        None
    }
}

/// `napi_poll: napi poll on ... done 2 / 64`: the event's name and its own text.
fn brief(e: &Event, s: &Interner) -> String {
    let name = e.name().render(s);
    let text = match &e.kind {
        Kind::Other { fields, .. } => fields.to_string(),
        Kind::Print { msg, .. } => msg.to_string(),
        _ => String::new(),
    };
    let text: String = text.chars().take(120).collect();
    if text.is_empty() {
        name
    } else {
        format!("{name}: {text}")
    }
}

/// The `--expect` analysis on a built timeline.
pub fn analyze_expect(
    tl: &Timeline,
    s: &Interner,
    o: &ExpectOptions,
    occ: &[Occurrence],
) -> ExplainReport {
    let t = o.within_ns;
    let missed = |x: &Occurrence| x.b.is_none_or(|(b, _)| b - x.ts > t);
    let mut lat: Vec<u64> = occ
        .iter()
        .filter_map(|x| x.b.map(|(b, _)| b - x.ts))
        .collect();
    lat.sort_unstable();
    let mut tally = Tally::default();
    // The first occurrences first: a pattern is read in the order it happened.
    let misses: Vec<Miss> = (occ.iter().filter(|x| missed(x)))
        .map(|x| explain_one(tl, s, o, x, &mut tally))
        .collect();
    let never = occ.iter().filter(|x| x.b.is_none()).count() as u64;
    let span = tl.last_ts.saturating_sub(tl.first_ts.unwrap_or(0)).max(1);
    let stats = ExpectStats {
        a: o.a.text().to_string(),
        b: o.b.text().to_string(),
        within_ns: t,
        scope: o.scope.label(),
        late: misses.len() as u64 - never,
        never,
        misses_per_s: misses.len() as f64 * 1e9 / span as f64,
    };
    let cstats = CycleStats::of(&lat, occ.len() as u64, never, misses.len() as u64);
    let windows = (occ.iter())
        .map(|x| {
            Window::new(
                x.ts,
                x.b.map(|b| b.0),
                x.b.map_or(tl.last_ts, |b| b.0),
                x.tid,
                x.cpu,
                missed(x),
            )
        })
        .collect();
    let frame = Framing {
        from: o.a.text().to_string(),
        to: vec![o.b.text().to_string()],
        deadline_ns: Some(t),
        deadline_source: "given".into(),
        top: o.top,
        noun: "expectations",
    };
    let found = Findings {
        stats: cstats,
        misses,
        tally,
        notes: Vec::new(),
        windows,
    };
    let mut r = assemble(tl, s, frame, found);
    r.expect = Some(stats);
    r
}

/// One A without its B in time: where it happened, what came after it on its CPU, and
/// when B came.
fn explain_one(
    tl: &Timeline,
    s: &Interner,
    o: &ExpectOptions,
    x: &Occurrence,
    tally: &mut Tally,
) -> Miss {
    let end = x.b.map_or(tl.last_ts, |b| b.0);
    let late = (end - x.ts).saturating_sub(o.within_ns);
    let ctx = context_at(tl, s, x, flags_words(x.flags));
    let hold = Hold {
        category: cause::NO_FOLLOW_UP,
        culprit: ctx.0.clone(),
        ns: late,
        why: Some(format!("A happened in {}", ctx.1)),
        nested_ns: 0,
    };
    let mut per = PerMiss::default();
    per.add_holds(std::slice::from_ref(&hold));
    tally.blame_cpu(x.cpu, late);
    let blame = tally.add_miss(per);
    // A miss keeps its events (only As answered in time drop them).
    let (after, before) =
        (x.around.as_deref()).map_or((&[][..], &[][..]), |a| (&a.after[..], &a.before[..]));
    let before: Vec<String> = (before.iter())
        .map(|(ts, n)| format!("{} (-{})", n.render(s), dur(x.ts - ts)))
        .collect();
    let a_words = after.first().map_or(o.a.text(), |a| a.1.as_str());
    let mut what = format!("{a_words} on CPU{} in {}", x.cpu, ctx.1);
    if !before.is_empty() {
        what += &format!("; before it: {}", before.join(", "));
    }
    let mut chain = vec![Link {
        held_by: vec![hold],
        duration_ns: o.within_ns,
        excess_ns: late,
        ..Link::mark("expect", x.ts, x.ts, Some(x.cpu), what)
    }];
    for (ts, w) in after.iter().skip(1) {
        chain.push(Link::mark("after", x.ts, *ts, Some(x.cpu), w.clone()));
    }
    let b_words = match x.b {
        Some((b, tid)) => Link {
            after_deadline: true,
            ..Link::mark(
                "to",
                x.ts,
                b,
                None,
                format!(
                    "{} came {} after it (by {})",
                    o.b.text(),
                    dur(b - x.ts),
                    tl.task_name(s, tid)
                ),
            )
        },
        None => Link {
            pending_at_deadline: true,
            ..Link::mark(
                "deadline",
                x.ts,
                x.ts + o.within_ns,
                None,
                format!(
                    "no {} from {} before the trace ended at {}",
                    o.b.text(),
                    o.scope.label(),
                    secs(tl.last_ts)
                ),
            )
        },
    };
    chain.push(b_words);
    Miss {
        cpus: tally.miss_cpus(),
        read_ns: None,
        not_reading: false,
        uncertain: false,
        blame,
        start_ns: x.ts,
        duration_ns: x.b.map(|b| b.0 - x.ts),
        tid: x.tid,
        cpu: x.cpu,
        late_ns: late,
        blamed_ns: late,
        chain,
    }
}

/// What the flags column says of the context: `an interrupt handler`, `a softirq`.
fn flags_words(f: u16) -> Option<&'static str> {
    use crate::event::flags;
    if f & flags::KNOWN == 0 {
        return None;
    }
    if f & flags::NMI != 0 {
        Some("an NMI")
    } else if f & flags::HARDIRQ != 0 {
        Some("an interrupt handler")
    } else if f & flags::SOFTIRQ != 0 {
        Some("a softirq")
    } else {
        None
    }
}

/// The innermost context on A's CPU at A: a hardirq or softirq running there, else the
/// task the event ran in (with what its flags say). Returns the culprit and the words.
fn context_at(
    tl: &Timeline,
    s: &Interner,
    x: &Occurrence,
    flag: Option<&str>,
) -> (Culprit, String) {
    let (cpu, ts, tid) = (x.cpu, x.ts, x.tid);
    let sp = &tl.spans;
    let inner = (tl
        .irqs_by_cpu
        .get(cpu as usize)
        .map_or(&[][..], |v| &v[..])
        .iter())
    .map(|&i| i as usize)
    .filter(|&i| sp.start[i] <= ts && ts <= sp.end[i])
    .max_by_key(|&i| sp.start[i]);
    let cpu_of = Some(cpu).filter(|&c| c != Event::NO_CPU);
    match inner {
        Some(i) if sp.kind[i] == SpanKind::Hardirq => {
            let irq = sp.key[i];
            let name = tl.irq_names.get(&irq).map(|n| s.get(*n).to_string());
            let c = Culprit {
                irq: Some(irq),
                irq_name: name,
                cpu: cpu_of,
                ..Default::default()
            };
            let w = format!("the handler of {}", c.label());
            (c, w)
        }
        Some(i) => {
            let v = SOFTIRQ_NAMES.get(sp.key[i] as usize).map(|v| v.to_string());
            let c = Culprit {
                vector: v,
                cpu: cpu_of,
                ..Default::default()
            };
            let w = c.label();
            (c, w)
        }
        None if tid >= 0 => {
            let mut c = Culprit::task(tl, s, tid, cpu);
            let name = if tid == 0 {
                c.comm = Some("<idle>".into());
                "the idle task".to_string()
            } else {
                tl.task_name(s, tid)
            };
            let w = match flag {
                Some(f) => format!("{f} (over {name})"),
                None => format!("the context of {name}"),
            };
            (c, w)
        }
        None => (
            Culprit {
                cpu: cpu_of,
                ..Default::default()
            },
            "an unknown context".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::{explain_mode, Mode};
    use crate::read::OpenOptions;
    use crate::testkit::line;

    fn ms(t: &str) -> Result<u64, String> {
        t.strip_suffix("ms")
            .and_then(|v| v.parse::<u64>().ok())
            .map(|v| v * 1_000_000)
            .ok_or_else(|| format!("bad time {t:?}"))
    }

    fn run(text: &str, pattern: &str, scope: Scope) -> ExplainReport {
        let o = ExpectOptions::parse(pattern, scope, 3, ms).unwrap();
        explain_mode(
            crate::testkit::opened(text),
            &OpenOptions::default(),
            &Mode::Expect(o),
        )
        .unwrap()
    }

    /// Interrupts on two CPUs and the polls that should follow them: on CPU0 the polls
    /// come 50 us after each irq, except after the one at 3 ms (next poll at 9 ms); on
    /// CPU1 the one irq never gets a poll.
    fn trace() -> String {
        let mut t = String::new();
        for k in 0..4u64 {
            let at = 1_000 + k * 2_000;
            t += &line(at, 0, "app-10", "d.h.", "my_irq: q=7");
            if k != 1 {
                t += &line(at + 50, 0, "app-10", "..s.", "my_poll: q=7 work=2");
            }
        }
        t += &line(4_000, 1, "bg-11", "d.h.", "my_irq: q=9");
        t += &line(10_000, 0, "app-10", "....", "my_tick: n=1");
        t
    }

    #[test]
    fn each_a_needs_its_b_on_its_cpu_in_time() {
        let r = run(&trace(), "my_irq -> my_poll within 1ms", Scope::Cpu);
        let x = r.expect.as_ref().unwrap();
        assert_eq!((r.cycles.count, r.cycles.misses), (5, 2));
        // The irq at 3 ms is answered by the poll of the irq at 5 ms (one B answers every
        // A waiting); CPU1's never is.
        assert_eq!((x.late, x.never), (1, 1));
        let starts: Vec<(u64, Option<u64>, u64)> = (r.misses.iter())
            .map(|m| (m.start_ns, m.duration_ns, m.late_ns))
            .collect();
        // First occurrences first; the never-answered one is late until the trace's end.
        assert_eq!(
            starts,
            vec![
                (3_000_000, Some(2_050_000), 1_050_000),
                (4_000_000, None, 5_000_000)
            ]
        );
        let first = &r.misses[0].chain;
        assert!(
            first[0]
                .what
                .starts_with("my_irq: q=7 on CPU0 in an interrupt handler"),
            "{}",
            first[0].what
        );
        // Nothing else ran on CPU0 within the 1 ms; then the answer, 2.05 ms later.
        assert_eq!(first.len(), 2);
        assert_eq!(first[1].what, "my_poll came 2.050 ms after it (by app[10])");
        // Two misses in the trace's 9 ms.
        assert!(
            (x.misses_per_s - 2.0 / 0.009).abs() < 1e-6,
            "{}",
            x.misses_per_s
        );
    }

    #[test]
    fn only_as_that_may_miss_keep_their_events() {
        assert_eq!(std::mem::size_of::<Occurrence>(), 56);
        let o = ExpectOptions::parse("my_irq -> my_poll within 1ms", Scope::Cpu, 3, ms).unwrap();
        let mut ex = Expectations::new(&o);
        let mut feed = |e: &Event, s: &Interner| ex.push(e, s);
        crate::pipeline::read(
            crate::testkit::opened(&trace()),
            &OpenOptions::default(),
            &mut feed,
        )
        .unwrap();
        let kept: Vec<(u64, Option<(usize, usize)>)> = (ex.occurrences.iter())
            .map(|x| {
                (
                    x.ts,
                    x.around.as_ref().map(|a| (a.after.len(), a.before.len())),
                )
            })
            .collect();
        // Answered within 1 ms: nothing kept. The irq at 3 ms keeps itself and the irq and
        // poll before it on CPU0; CPU1's irq keeps itself.
        assert_eq!(
            kept,
            vec![
                (1_000_000, None),
                (3_000_000, Some((1, 2))),
                (4_000_000, Some((1, 0))),
                (5_000_000, None),
                (7_000_000, None),
            ]
        );
    }

    #[test]
    fn a_shared_field_or_anyone_can_answer() {
        // By the queue number, CPU1's q=9 irq still has no poll of q=9.
        let r = run(
            &trace(),
            "my_irq -> my_poll within 1ms",
            Scope::Field("q".into()),
        );
        assert_eq!(r.cycles.misses, 2);
        // From anyone, CPU0's poll at 5.05 ms answers CPU1's irq (and CPU0's at 3 ms).
        let r = run(&trace(), "my_irq -> my_poll within 3ms", Scope::Any);
        assert_eq!(
            r.cycles.misses,
            0,
            "{:?}",
            r.misses.first().map(|m| m.start_ns)
        );
    }

    #[test]
    fn a_key_field_the_a_events_lack_is_refused_with_the_closest_names() {
        let o = ExpectOptions::parse(
            "my_irq -> my_poll within 1ms",
            Scope::Field("qq".into()),
            3,
            ms,
        )
        .unwrap();
        let open = OpenOptions::default();
        let Err(crate::read::ReadError::NoMatch { why }) = explain_mode(
            crate::testkit::opened_with(&trace(), &open),
            &open,
            &Mode::Expect(o),
        ) else {
            panic!("a key the A events lack was taken")
        };
        assert!(
            why.starts_with("--key qq: `my_irq` events have no field `qq`; did you mean q?"),
            "{why}"
        );
    }

    #[test]
    fn patterns_parse_with_arrows_and_brackets_and_say_what_is_wrong() {
        let o = ExpectOptions::parse("a[x>-1] -> b[y=2] within 3ms", Scope::Cpu, 1, ms).unwrap();
        assert_eq!(
            (o.a.text(), o.b.text(), o.within_ns),
            ("a[x>-1]", "b[y=2]", 3_000_000)
        );
        let e = ExpectOptions::parse("a b within 3ms", Scope::Cpu, 1, ms).unwrap_err();
        assert!(e.contains("found no `->`"), "{e}");
        let e = ExpectOptions::parse("a -> b", Scope::Cpu, 1, ms).unwrap_err();
        assert!(e.contains("found no ` within `"), "{e}");
        let e = ExpectOptions::parse("a -> b within soon", Scope::Cpu, 1, ms).unwrap_err();
        assert!(e.starts_with("T: bad time"), "{e}");
    }
}
