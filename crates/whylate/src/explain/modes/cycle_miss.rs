//! One missed request/response cycle explained: its chain of hand-offs, each link's
//! excess over the usual chain and what held it up, CPUs that recorded nothing, the time
//! no link covers, and where the chain stood at the deadline when no reply came.

use crate::explain::blame::{as_backlog, as_pending, scale, untraced_rest};
use crate::explain::blame::{gap_cause, silent_cpu};
use crate::explain::causes as cause;
use crate::explain::cutter::Options;
use crate::explain::cycle::Cycle;
use crate::explain::driver::{PerMiss, Tally};
use crate::explain::engine::uncovered;
use crate::explain::engine::Wait;
use crate::explain::engine::{Engine, LinkKind, RawLink};
use crate::explain::ready::Ready;
use crate::explain::report::{Culprit, Hold, Link, Miss};
use crate::explain::template::Template;
use crate::units::dur;
use rustc_hash::FxHashSet;

/// What explaining a missed cycle needs: the engine, the options, the deadline and the
/// usual chain.
pub(in crate::explain) struct MissCx<'a> {
    pub(in crate::explain) eng: &'a Engine<'a>,
    pub(in crate::explain) o: &'a Options,
    pub(in crate::explain) deadline: Option<u64>,
    pub(in crate::explain) template: &'a Template,
}

/// One miss's blame so far: the waits counted (cpu, start, stop), so a wait nested in a
/// longer one on the same CPU is not counted twice, and the blamed time per cause.
#[derive(Default)]
struct Blamed {
    counted: Vec<(u32, u64, u64)>,
    ns: u64,
    per: PerMiss,
}

/// The span of a missed cycle being explained: start, deadline, end and horizon.
struct Span {
    /// The deadline in trace time.
    dl: Option<u64>,
    /// The reply (ready for its reader), or where the cycle stopped waiting.
    end: u64,
    /// When the reply was ready, if a reply came (`end`, or earlier than the read).
    reply: Option<u64>,
    /// Where the explanation stops: the deadline (the question is why the reply was not
    /// there by then; what the waiter did after giving up is not a cause), else the end.
    h: u64,
}

impl MissCx<'_> {
    /// Explains missed cycle `c`, adding its blame to `tally`. Also says whether the trace
    /// connects the chain to the cycle's thread.
    /// `ready` says when the reply was ready, where its reader was not waiting for it.
    pub(in crate::explain) fn explain(
        &self,
        c: &Cycle,
        ready: Option<&Ready>,
        tally: &mut Tally,
    ) -> (Miss, bool) {
        let eng = self.eng;
        let dl = self.deadline.map(|d| c.start_ns + d);
        let reply = ready.map(|r| r.at).or(c.end_ns());
        if let (Some(r), Some(d)) = (ready, dl) {
            if r.at <= d {
                return (self.not_reading(c, r, d, tally), true);
            }
        }
        let h = dl.map_or(c.stop_ns(), |d| d.min(c.stop_ns()));
        // With no reply, nothing after the deadline leads to one: the chain stops there,
        // so a request that never got its reply costs its deadline's worth of trace, not
        // the rest of the trace. A reply read late is followed until it was ready.
        let end = reply.unwrap_or(h);
        let sp = Span { dl, end, reply, h };
        // The chain is followed to the end, to show what came after the deadline; only
        // `[start, h]` is weighed.
        let found = eng.chain(c.tid, c.end_tid(), c.start_ns, end);
        let (mut links, chain_set, waits) = (found.links, found.tasks, found.waits);
        // When another thread replied, the requester's own waits after the deadline are
        // for its next requests, not on the way to this reply.
        if c.end_tid().is_some_and(|r| r != c.tid) {
            links.retain(|l| !(l.tid == c.tid && l.start >= h && h < end));
        }
        let connected = links.iter().any(|l| l.end > l.start && l.start <= h)
            || waits.iter().any(|w| w.from <= h);
        if !connected {
            // The trace does not connect the chain up to the deadline (device interrupt,
            // untraced hand-off): every wait inside the cycle is a suspect. A softirq found
            // after the deadline still shows how the reply came (and `gap` weighs the
            // silence before it).
            let later: Vec<RawLink> = (links.into_iter())
                .filter(|l| l.start > h && l.kind == LinkKind::Softirq)
                .collect();
            links = eng.all_waits(c.start_ns, h);
            links.extend(later);
        }
        let what = format!("{} by {}", self.o.from.text(), eng.task(c.tid));
        let mut chain = vec![Link::mark(
            "from",
            c.start_ns,
            c.start_ns,
            Some(c.cpu),
            what,
        )];
        let mut b = Blamed::default();
        let weighed = self.weigh_links(c, &sp, &links, &mut b, tally);
        chain.extend(self.stalls(c, &sp, (&links, &chain_set), &mut b, tally));
        if connected {
            chain.extend(self.syscalls(c, &sp, &chain_set));
            chain.extend(self.waits(c, &sp, &waits));
        }
        if self.template.good > 0 {
            let known = (&links[..], &chain_set, &waits[..]);
            chain.extend(self.gap(c, &sp, known, connected, &mut b));
        }
        // Unconnected cycles list only the waits that matter.
        chain.extend(
            weighed.into_iter().flatten().filter(|l| {
                connected || l.excess_ns > 0 || l.pending_at_deadline || l.after_deadline
            }),
        );
        chain.extend(self.end_marks(c, &sp, ready));
        chain.sort_by_key(|l| {
            let mark = matches!(l.kind.as_str(), "to" | "deadline");
            (l.after_deadline, l.offset_ns, mark)
        });
        let late = match (reply, self.deadline) {
            (Some(e), Some(d)) => (e - c.start_ns).saturating_sub(d),
            (None, _) => c.stop_ns() - c.start_ns,
            _ => 0,
        };
        let blame = tally.add_miss(b.per);
        let miss = Miss {
            cpus: tally.miss_cpus(),
            blame,
            start_ns: c.start_ns,
            duration_ns: reply.map(|e| e - c.start_ns),
            read_ns: ready.and(c.end_ns()).map(|e| e - c.start_ns),
            not_reading: false,
            uncertain: false,
            tid: c.tid,
            cpu: c.cpu,
            late_ns: late,
            blamed_ns: b.ns,
            chain,
        };
        (miss, connected)
    }

    /// Each link's time above its usual duration, split over what held its CPU: longest
    /// link first, so a wait nested in a longer one on the same CPU is counted once.
    /// Returns the links in their original order.
    fn weigh_links(
        &self,
        c: &Cycle,
        sp: &Span,
        links: &[RawLink],
        b: &mut Blamed,
        tally: &mut Tally,
    ) -> Vec<Option<Link>> {
        let mut order: Vec<usize> = (0..links.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(links[i].end - links[i].start));
        let mut out: Vec<Option<Link>> = vec![None; links.len()];
        for i in order {
            out[i] = Some(if links[i].start >= sp.h && sp.h < sp.end {
                self.after(c, &links[i])
            } else {
                self.weigh(c, sp, &links[i], b, tally)
            });
        }
        out
    }

    /// A link that began after the deadline: shown, so the reader sees how the cycle
    /// ended, but not weighed (it cannot be why the reply missed the deadline).
    fn after(&self, c: &Cycle, l: &RawLink) -> Link {
        Link {
            duration_ns: l.end - l.start,
            after_deadline: true,
            waiter: (l.tid > 0).then(|| Culprit::task(self.eng.tl, self.eng.s, l.tid, l.cpu)),
            ..Link::mark(
                kind_word(l.kind),
                c.start_ns,
                l.start,
                Some(l.cpu),
                l.what.clone(),
            )
        }
    }

    /// One link weighed (see `weigh_links`).
    fn weigh(&self, c: &Cycle, sp: &Span, l: &RawLink, b: &mut Blamed, t: &mut Tally) -> Link {
        let (eng, tl) = (self.eng, self.eng.tl);
        let pending = sp.dl.is_some_and(|d| l.start <= d && l.end > d) || l.end > sp.end;
        // The link counts up to the deadline (where the chain stood then).
        let stop = l.end.min(sp.h).max(l.start);
        let d = stop - l.start;
        // A waker's wait for a CPU that no on-time cycle had is excess from its start: the
        // on-time cycles' sleeper did not wait for that.
        let unseen = l.waits_for.is_some() && self.template.good > 0;
        let u = (self.template.links.get(&l.key).copied()).unwrap_or_else(|| {
            if unseen {
                0
            } else {
                eng.usual_in_trace(l.kind, &l.key.1)
            }
        });
        // Time a CPU stall already accounts for is not this link's (see `stalls`).
        let stalled = if tl.ticks > 0 {
            tl.silent_ns(Some(l.cpu), l.start, stop)
        } else {
            0
        };
        // Once its ksoftirqd was woken a pending softirq's wait is all excess (a deferral
        // is never usual, however many good cycles had one); the usual applies before.
        let w = l.defer_from.map_or(stop, |w| w.clamp(l.start, stop));
        let excess = ((w - l.start).saturating_sub(u) + (stop - w)).saturating_sub(stalled);
        let nested = b.counted.iter().any(|&(cpu, a, e)| {
            cpu == l.cpu
                && ((l.kind == LinkKind::Run && l.start >= a && stop <= e)
                    || (l.kind != LinkKind::Run && a >= l.start && e <= stop))
        });
        // Significant: above 10 us and a tenth of the cycle's lateness.
        let late = match (sp.reply, self.deadline) {
            (Some(e), Some(dd)) => (e - c.start_ns).saturating_sub(dd),
            _ => d,
        };
        let significant = excess > 10_000 && excess * 10 >= late.min(excess * 10);
        let mut held = Vec::new();
        if significant {
            // The part above usual, split over what held the CPU meanwhile.
            let mut hs = eng.holds(l, stop - excess, stop);
            if let Some(k) = l.deferred {
                as_pending(&mut hs, k);
            }
            if let Some(v) = l.queue {
                as_backlog(&mut hs, v);
                eng.backlog_packets(&mut hs, l, stop - excess, stop);
                eng.backlog_root(&mut hs, l, l.start);
            }
            hs.extend(eng.ksoftirqd_own(l, (stop - excess).max(w), stop));
            if !(l.untraced_end && untraced_rest(&mut hs, excess, l.cpu)) {
                if hs.iter().map(|h| h.ns).sum::<u64>() == 0 {
                    hs = vec![Hold::on_cpu(cause::UNKNOWN, l.cpu, excess)];
                }
                scale(&mut hs, excess);
            }
            hs.sort_by_key(|h| std::cmp::Reverse(h.ns));
            if !nested {
                b.counted.push((l.cpu, l.start, stop));
                b.ns += excess;
                b.per.add_holds(&hs);
                t.blame_cpu(l.cpu, excess);
            }
            held = hs;
        }
        let kind = kind_word(l.kind);
        Link {
            duration_ns: l.end - l.start,
            usual_ns: Some(u),
            excess_ns: if significant { excess } else { 0 },
            pending_at_deadline: pending,
            held_by: held,
            waiter: (l.tid > 0).then(|| Culprit::task(tl, eng.s, l.tid, l.cpu)),
            queued_in_irq: l.irq,
            ..Link::mark(kind, c.start_ns, l.start, Some(l.cpu), l.what.clone())
        }
    }

    /// A CPU of the chain that recorded nothing, not even its tick: weighed by
    /// `silent_cpu` (a task inside one system call with interrupts off, or a CPU that did
    /// not run).
    fn stalls(
        &self,
        c: &Cycle,
        sp: &Span,
        (links, chain_set): (&[RawLink], &FxHashSet<i32>),
        b: &mut Blamed,
        tally: &mut Tally,
    ) -> Vec<Link> {
        let tl = self.eng.tl;
        if tl.ticks == 0 {
            return Vec::new();
        }
        let mut cpus: Vec<u32> = links.iter().map(|l| l.cpu).collect();
        cpus.push(c.cpu);
        let mut out = Vec::new();
        for sil in &tl.silences {
            let ov = sil.to.min(sp.h).saturating_sub(sil.from.max(c.start_ns));
            if ov == 0 || !cpus.contains(&sil.cpu) {
                continue;
            }
            let own = |t: i32| chain_set.contains(&t);
            let hold = silent_cpu(self.eng, sil.cpu, (sil.from, sil.to), ov, &own);
            b.ns += ov;
            b.per.add(hold.category, hold.culprit.clone(), ov);
            tally.blame_cpu(sil.cpu, ov);
            // The evidence is printed under the hold.
            let what = format!("CPU{} took no timer tick", sil.cpu);
            let at = sil.from.max(c.start_ns);
            out.push(Link {
                duration_ns: sil.to - sil.from,
                usual_ns: Some(0),
                excess_ns: ov,
                held_by: vec![hold],
                ..Link::mark("stall", c.start_ns, at, Some(sil.cpu), what)
            });
        }
        out
    }

    /// The chain's tasks' waits for the tasks that woke them, as steps of the chain.
    fn waits(&self, c: &Cycle, sp: &Span, waits: &[crate::explain::engine::Wait]) -> Vec<Link> {
        (waits.iter())
            .map(|w| Link {
                duration_ns: w.woke - w.from,
                after_deadline: w.from >= sp.h && sp.h < sp.end,
                ..Link::mark("wait-for", c.start_ns, w.from, Some(w.cpu), w.what.clone())
            })
            .collect()
    }

    /// The system calls the chain's tasks made, as steps of the chain (those after the
    /// deadline too, marked: they show how the reply came).
    fn syscalls(&self, c: &Cycle, sp: &Span, chain_set: &FxHashSet<i32>) -> Vec<Link> {
        (self.eng.syscall_steps(chain_set, c.tid, c.start_ns, sp.end))
            .into_iter()
            .map(|(ts, d, cpu, what)| Link {
                duration_ns: d,
                after_deadline: ts >= sp.h && sp.h < sp.end,
                ..Link::mark("syscall", c.start_ns, ts, Some(cpu), what)
            })
            .collect()
    }

    /// Time no wait explains, compared with the good cycles: the excess goes to what the
    /// chain was doing then — computing (on-cpu), asleep until woken (blocked-on), or,
    /// before anything on the chain moved, the device or peer (device/external).
    fn gap(
        &self,
        c: &Cycle,
        sp: &Span,
        (links, chain_set, waits): (&[RawLink], &FxHashSet<i32>, &[Wait]),
        connected: bool,
        b: &mut Blamed,
    ) -> Option<Link> {
        let tl = self.eng.tl;
        let gaps = uncovered(links, c.start_ns, sp.h);
        let stalled: u64 = if tl.ticks > 0 {
            gaps.iter().map(|&(a, b)| tl.silent_ns(None, a, b)).sum()
        } else {
            0
        };
        let total: u64 = gaps.iter().map(|(a, b)| b - a).sum::<u64>();
        let ex = total
            .saturating_sub(stalled)
            .saturating_sub(self.template.gap);
        let lateness = (sp.h - c.start_ns).saturating_sub(self.deadline.unwrap_or(0));
        if ex <= 10_000 || ex * 10 < lateness {
            return None;
        }
        let &(a, e) = gaps.iter().max_by_key(|(a, b)| b - a)?;
        // A task of the chain asleep until a waker woke it through most of the stretch.
        let waiting = (waits.iter())
            .map(|w| (w, w.woke.min(e).saturating_sub(w.from.max(a))))
            .filter(|&(_, ov)| ov * 2 >= e - a)
            .max_by_key(|&(_, ov)| ov)
            .map(|(w, _)| w);
        let (category, culprit, mut what) =
            gap_cause(self.eng, (links, chain_set, waiting), c, a, e, connected);
        if gaps.len() > 1 {
            what += &format!(
                " ({} uncovered in {} stretches, this the longest)",
                dur(total),
                gaps.len()
            );
        }
        b.per.add(category, culprit.clone(), ex);
        b.ns += ex;
        let hold = Hold {
            category,
            culprit,
            ns: ex,
            why: None,
            nested_ns: 0,
        };
        // The link stands for all the uncovered time (its excess is taken from the total),
        // shown at its longest stretch.
        Some(Link {
            duration_ns: total,
            usual_ns: Some(self.template.gap),
            excess_ns: ex,
            held_by: vec![hold],
            ..Link::mark("gap", c.start_ns, a, None, what)
        })
        .map(|mut l| {
            l.cpu = l.held_by[0].culprit.cpu;
            l
        })
    }

    /// The chain's last points: the deadline passing (and how much later the reply
    /// came), the reply ready where its reader was not waiting, and the reply read.
    fn end_marks(&self, c: &Cycle, sp: &Span, ready: Option<&Ready>) -> Vec<Link> {
        let mut out = Vec::new();
        if let Some(d) = sp.dl.filter(|&d| d < sp.end || c.end_ns().is_none()) {
            let what = match (c.end_ns(), ready) {
                (Some(e), Some(r)) => format!(
                    "passed; the reply was ready {} later and read {} later (what follows is not blamed)",
                    dur(r.at - d),
                    dur(e - d)
                ),
                (Some(e), None) => format!(
                    "passed; the reply came {} later (what follows is not blamed)",
                    dur(e - d)
                ),
                (None, _) => "passed with no reply".to_string(),
            };
            out.push(Link::mark("deadline", c.start_ns, d, None, what));
        }
        if let (Some(r), Some(e)) = (ready, c.end_ns()) {
            out.push(self.ready_mark(c, r, e, sp.h < r.at));
        }
        if let Some(e) = c.end_ns() {
            let to: Vec<&str> = self.o.to.iter().map(|t| t.text()).collect();
            let what = format!("{} (reply)", to.join(" | "));
            let mut l = Link::mark("to", c.start_ns, e, None, what);
            l.after_deadline = sp.h < e;
            out.push(l);
        }
        out
    }

    /// The reply ready for a reader that was not waiting: when, by what, and when and
    /// after what the reader read it.
    fn ready_mark(&self, c: &Cycle, r: &Ready, read: u64, after_deadline: bool) -> Link {
        let who = self.eng.task(c.end_tid().unwrap_or(c.tid));
        let what = format!(
            "reply ready ({}); {who} was {}, woken at +{}, and read it at +{}",
            r.by,
            r.reader,
            dur(r.woken - c.start_ns),
            dur(read - c.start_ns)
        );
        let mut l = Link::mark("ready", c.start_ns, r.at, None, what);
        l.after_deadline = after_deadline;
        l
    }

    /// A miss whose reply was ready by the deadline `d` but read after it: the reader was
    /// not reading. Nothing before the deadline is a cause; the reader's own absence is.
    fn not_reading(&self, c: &Cycle, r: &Ready, d: u64, tally: &mut Tally) -> Miss {
        let read = c.end_ns().unwrap_or(d);
        let reader = c.end_tid().unwrap_or(c.tid);
        let late = read.saturating_sub(d);
        let culprit = Culprit::task(self.eng.tl, self.eng.s, reader, c.cpu);
        let mut per = PerMiss::default();
        per.add(cause::READER_NOT_READING, culprit.clone(), late);
        tally.blame_cpu(c.cpu, late);
        let what = format!("{} by {}", self.o.from.text(), self.eng.task(c.tid));
        let mut chain = vec![Link::mark(
            "from",
            c.start_ns,
            c.start_ns,
            Some(c.cpu),
            what,
        )];
        chain.push(self.ready_mark(c, r, read, false));
        let wait = Link {
            duration_ns: late,
            excess_ns: late,
            held_by: vec![Hold {
                category: cause::READER_NOT_READING,
                culprit,
                ns: late,
                why: Some(format!("the reader was {}", r.reader)),
                nested_ns: 0,
            }],
            ..Link::mark(
                "deadline",
                c.start_ns,
                d,
                None,
                format!("passed with the reply ready; read {} later", dur(late)),
            )
        };
        chain.push(wait);
        let sp = Span {
            dl: Some(d),
            end: read,
            reply: Some(r.at),
            h: d,
        };
        chain.extend(
            self.end_marks(c, &sp, None)
                .into_iter()
                .filter(|l| l.kind == "to"),
        );
        Miss {
            blame: tally.add_miss(per),
            cpus: tally.miss_cpus(),
            start_ns: c.start_ns,
            duration_ns: Some(r.at - c.start_ns),
            read_ns: Some(read - c.start_ns),
            not_reading: true,
            uncertain: false,
            tid: c.tid,
            cpu: c.cpu,
            late_ns: late,
            blamed_ns: late,
            chain,
        }
    }
}

/// The word a link kind reads as in a chain.
fn kind_word(k: LinkKind) -> &'static str {
    match k {
        LinkKind::Run => "wakeup",
        LinkKind::Work => "work",
        LinkKind::Timer => "timer",
        LinkKind::Softirq => "softirq",
    }
}
