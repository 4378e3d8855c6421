//! The explain engine on traces built for it: each test says what the trace holds and
//! asserts the numbers the explanation must give.

use super::*;
use crate::read::OpenOptions;
use crate::testkit;

mod backlog;
mod net;
mod ready;
mod recorder;
mod waitfor;

fn cycles_of(text: &str, deadline_ns: Option<u64>) -> ExplainReport {
    let o = testkit::chain_options(deadline_ns);
    explain(crate::testkit::opened(text), &OpenOptions::default(), &o).unwrap()
}

#[test]
fn the_engine_blames_the_task_that_kept_the_worker_from_its_cpu() {
    // Six cycles; in the fifth, hog holds CPU1 for 3 ms while the worker that carries the
    // reply is runnable there. The usual queue-to-start wait is 12 us (waking at +12,
    // running at +20, started at +22 after queueing at +10).
    let r = cycles_of(&testkit::three_cpu_chain(6, &[4], 3_000), Some(1_000_000));
    assert_eq!(
        (r.cycles.count, r.cycles.misses, r.cycles.no_reply),
        (6, 1, 0)
    );
    let c = &r.causes[0];
    assert_eq!(c.category, "runqueue-wait", "{:?}", r.causes);
    assert_eq!(c.culprit.comm.as_deref(), Some("hog"));
    assert_eq!((c.culprit.pid, c.culprit.cpu), (Some(60), Some(1)));
    // The work waited 3.004 ms (queued at +10, started at +3014) against a usual 12 us,
    // all of it behind hog; up to the 1 ms deadline that is 1 ms - 10 us - 12 us.
    assert_eq!(c.total_excess_ns, 978_000, "{:?}", r.causes);
    assert!((c.share - 1.0).abs() < 1e-9);
    // The bystander on CPU2 never held the chain.
    assert!(!r
        .causes
        .iter()
        .any(|c| c.culprit.comm.as_deref() == Some("bystander")));
    // The miss's chain shows the work link with its excess and its holder.
    let m = &r.misses[0];
    let work = m.chain.iter().find(|l| l.kind == "work").unwrap();
    assert_eq!((work.duration_ns, work.usual_ns), (3_004_000, Some(12_000)));
    assert_eq!(work.held_by[0].culprit.label(), "hog[60] (nice 0)");
    // The context names CPU1 and the hog on it.
    assert_eq!(r.context[0].cpu, 1);
}

#[test]
fn without_a_deadline_the_slowest_percent_are_outliers() {
    let r = cycles_of(&testkit::three_cpu_chain(6, &[4], 3_000), None);
    assert!(
        r.deadline_source.starts_with("none given or inferred"),
        "{}",
        r.deadline_source
    );
    // p99 of six durations is the largest: nothing is above it.
    assert_eq!(r.deadline_ns, Some(r.cycles.max_ns));
    assert_eq!(r.cycles.misses, 0);
}

#[test]
fn advice_follows_the_first_cause() {
    let r = cycles_of(&testkit::three_cpu_chain(6, &[4], 3_000), Some(1_000_000));
    // The worker that waited is a pool kworker: its priority advice comes with the
    // caveat, then the hog is moved off the chain's CPU; by name, as a text trace's PIDs
    // are not this machine's.
    assert!(
        r.advice[0]
            .command
            .starts_with("chrt -f -p 50 $(pgrep -x 'kworker/1:1')"),
        "{:?}",
        r.advice
    );
    assert!(r.advice[0].cost.contains("pool worker"));
    assert_eq!(r.advice[1].command, "taskset -pc 0,2 $(pgrep -x 'hog')");
}

#[test]
fn each_mode_has_its_deadline_policy() {
    let hundred: Vec<u64> = (1..=100).map(|i| i * 1_000).collect();
    // Timer periods: given, else p99 from 100 periods, else 1 ms, else none.
    let t = |d: Option<u64>, v: &[u64]| {
        let o = TimerOptions {
            deadline_ns: d,
            ..Default::default()
        };
        super::timer::deadline_policy(&o, v)
    };
    assert_eq!(t(Some(300_000), &hundred).0, Some(300_000));
    assert_eq!(t(None, &hundred).0, Some(99_000));
    assert_eq!(t(None, &hundred[..99]).0, Some(1_000_000));
    assert_eq!(t(None, &[]).0, None);
    // Softirq services: given, else p99 from 100 samples, else 100 us.
    let s = super::softirq::deadline_policy;
    assert_eq!(s(Some(5), &hundred).0, 5);
    assert_eq!(s(None, &hundred).0, 99_000);
    assert_eq!(s(None, &hundred[..10]).0, 100_000);
}

#[test]
fn a_cycle_deadline_is_inferred_from_timeout_complaints() {
    // Eight cycles whose thread wrote (a complaint) 3.46-3.48 ms after starting: the
    // deadline is that offset rounded to 100 us.
    let cycles: Vec<Cycle> = (0..8u64)
        .map(|i| {
            let mut c = Cycle::open(i * 10_000_000, 5, 0);
            c.reply(i * 10_000_000 + 1_000_000, 5);
            c.writes = 1;
            c
        })
        .collect();
    let writes: Vec<u64> = (0..8).map(|i| 3_460_000 + i * 2_000).collect();
    assert_eq!(cycles.iter().map(|c| c.writes as usize).sum::<usize>(), 8);
    let o = testkit::chain_options(None);
    let (d, why) = super::cycles::deadline_policy(&o, &writes, &[1_000_000; 8]);
    assert_eq!(d, Some(3_500_000));
    assert!(why.starts_with("inferred: the thread wrote"), "{why}");
}

#[test]
fn automatic_mode_finds_the_wait_behind_the_hog() {
    let p = testkit::pass(&testkit::three_cpu_chain(6, &[4], 3_000));
    let r = analyze_auto(&p.tl, &p.strings, 3);
    // The worker's 3 ms wait for CPU1 (over 1 ms and 4x its usual 8 us), and the same
    // wait seen as the work item's queue-to-start time (3.004 ms against a usual 12 us):
    // two outliers today, both 2.992 ms over usual, both hog's.
    assert_eq!(r.misses.len(), 2, "{:?}", r.misses);
    let l = &r.misses[0].chain[0];
    assert_eq!(
        (l.kind.as_str(), l.cpu, l.duration_ns),
        ("wakeup", Some(1), 3_000_000)
    );
    assert_eq!(r.misses[1].chain[0].kind, "work");
    assert!(r.misses.iter().all(|m| m.late_ns == 2_992_000));
    assert_eq!(r.causes.len(), 1);
    assert_eq!(r.causes[0].category, "runqueue-wait");
    assert_eq!(r.causes[0].culprit.comm.as_deref(), Some("hog"));
    assert_eq!(
        (r.causes[0].count, r.causes[0].total_excess_ns),
        (2, 5_984_000)
    );
}

#[test]
fn every_link_holds_no_more_excess_than_it_lasted() {
    let r = cycles_of(&testkit::giving_up_client(8, &[2, 5]), Some(3_500_000));
    for l in r.misses.iter().flat_map(|m| &m.chain) {
        assert!(l.excess_ns <= l.duration_ns, "{l:?}");
    }
}

#[test]
fn a_cycle_the_trace_ends_before_its_deadline_is_cut_off_not_a_miss() {
    // Six good cycles, then a request 100 us before the trace's last event: no reply yet,
    // and the trace cannot say whether one came by the 1 ms deadline.
    let mut t = testkit::three_cpu_chain(6, &[], 0);
    let end = 1_000_000 + 6 * 1_050;
    t += &testkit::line(end, 0, "c-5", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
    t += &testkit::line(end + 100, 2, "bystander-70", "....1", "sys_getpid -> 0x46");
    let r = cycles_of(&t, Some(1_000_000));
    assert_eq!(
        (
            r.cycles.count,
            r.cycles.misses,
            r.cycles.no_reply,
            r.cycles.cut_off
        ),
        (7, 0, 0, 1)
    );
    // With a deadline the trace saw pass, the same request is a miss with no reply.
    let r = cycles_of(&t, Some(80_000));
    assert_eq!(
        (r.cycles.misses, r.cycles.no_reply, r.cycles.cut_off),
        (1, 1, 0)
    );
}

#[test]
fn the_interrupt_behind_a_tasklet_is_in_the_chain_and_its_advice() {
    // The work the reply needs is queued by a tasklet that irq 16 raised; in cycle 4 a
    // hog keeps the worker off CPU1 for 3 ms.
    let r = cycles_of(&testkit::device_chain(6, &[4], &[]), Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    let work = r.misses[0].chain.iter().find(|l| l.kind == "work").unwrap();
    assert!(
        work.what.starts_with(
            "flush_to_ldisc queued by softirq TASKLET (raised by irq 16 (ehci_hcd)) on CPU1"
        ),
        "{}",
        work.what
    );
    assert_eq!(work.queued_in_irq, Some(16));
    assert_eq!(r.causes[0].culprit.pid, Some(60));
    // The irq placement advice names irq 16, right after the advice for the hog.
    let pin = r
        .advice
        .iter()
        .position(|a| a.action.starts_with("Pin irq 16 (ehci_hcd)"));
    assert!(pin.is_some(), "{:?}", r.advice);
    assert!(r
        .advice
        .iter()
        .all(|a| !a.action.contains("not in this trace")));
}

/// `text` without the lines containing any of `pats`; `only` keeps all but the n-th
/// (0-based) occurrence of each pattern instead of dropping every one.
fn without(text: &str, pats: &[&str], only: Option<usize>) -> String {
    let mut seen = vec![0usize; pats.len()];
    let mut out = String::new();
    for l in text.lines() {
        let drop = pats.iter().enumerate().any(|(k, p)| {
            if !l.contains(p) {
                return false;
            }
            seen[k] += 1;
            only.is_none_or(|n| seen[k] == n + 1)
        });
        if !drop {
            out += l;
            out.push('\n');
        }
    }
    out
}

#[test]
fn without_softirq_raise_the_tasklet_is_tied_to_the_irq_at_whose_exit_it_ran() {
    // Seed 000's recordings had irq and softirq entry/exit but no softirq_raise: the
    // tasklet ran at irq 16's exit, which is the evidence, said as such.
    let t = without(
        &testkit::device_chain(6, &[4], &[]),
        &["softirq_raise"],
        None,
    );
    let r = cycles_of(&t, Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    let work = r.misses[0].chain.iter().find(|l| l.kind == "work").unwrap();
    assert!(
        work.what.starts_with(
            "flush_to_ldisc queued by softirq TASKLET (run at the exit of irq 16 (ehci_hcd)) on CPU1"
        ),
        "{}",
        work.what
    );
    assert_eq!(work.queued_in_irq, Some(16));
    let pin = r
        .advice
        .iter()
        .find(|a| a.action.starts_with("Pin irq 16 (ehci_hcd)"));
    assert_eq!(
        pin.map(|a| a.command.as_str()),
        Some("echo <quiet cpu> > /proc/irq/16/smp_affinity_list"),
        "{:?}",
        r.advice
    );
}

#[test]
fn work_the_trace_cannot_tie_to_an_irq_names_the_irqs_it_holds_not_absent() {
    // In the missed cycle (4) irq 16's own lines are gone: nothing ties the tasklet to an
    // interrupt, but irq 16 ran in the other five cycles on that CPU.
    let t = without(
        &testkit::device_chain(6, &[4], &[]),
        &["irq=16 name", "irq=16 ret", "softirq_raise"],
        Some(4),
    );
    let r = cycles_of(&t, Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    let pin = (r.advice.iter())
        .find(|a| a.action.starts_with("Pin the interrupt that queues it"))
        .unwrap_or_else(|| panic!("{:?}", r.advice));
    assert!(
        pin.action.contains(
            "the trace does not tie the work to an interrupt; on CPU1 irq 16 (ehci_hcd) ran 5x"
        ),
        "{}",
        pin.action
    );
    assert!(r
        .advice
        .iter()
        .all(|a| !a.action.contains("not in this trace")));
}

#[test]
fn a_reply_held_behind_another_interrupt_handler_blames_that_handler() {
    // In cycle 3 storage irq 96 runs 5 ms on CPU1 and the device's irq 16 comes after
    // it: the 5 ms are irq 96's, not the device's.
    let r = cycles_of(&testkit::device_chain(6, &[], &[3]), Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    let c = &r.causes[0];
    assert_eq!(
        (c.category.id(), c.culprit.irq),
        ("hardirq", Some(96)),
        "{:?}",
        r.causes
    );
    assert_eq!(c.culprit.irq_name.as_deref(), Some("hpvsa0"));
    assert!(
        r.causes
            .iter()
            .all(|c| c.category.id() != "device/external"),
        "{:?}",
        r.causes
    );
}

#[test]
fn chain_words_are_not_doubled_and_anonymous_culprits_say_what_they_are() {
    let r = cycles_of(&testkit::giving_up_client(8, &[2, 5]), Some(3_500_000));
    for l in r.misses.iter().flat_map(|m| &m.chain) {
        let first = l.what.split(' ').next().unwrap_or("");
        assert_ne!(first, l.kind, "{l:?}");
    }
    let anon = Culprit {
        cpu: Some(1),
        ..Default::default()
    };
    assert_eq!(anon.label(), "-");
    assert_eq!(anon.label_in(super::causes::CPU_IDLE), "(the CPU was idle)");
    let soft = Culprit {
        vector: Some("TIMER".into()),
        ..Default::default()
    };
    assert_eq!(soft.label_in(super::causes::SOFTIRQ), "TIMER");
}

#[test]
fn without_complaints_a_deadline_is_inferred_from_two_clear_modes() {
    // 25 cycles, 3 of them behind the hog (~3.07 ms, the rest 70 us): no complaint write,
    // no pile-up, but two groups with nothing between; the deadline goes in the gap.
    let r = cycles_of(&testkit::three_cpu_chain(25, &[5, 15, 20], 3_000), None);
    assert!(
        r.deadline_source.contains("two groups"),
        "{}",
        r.deadline_source
    );
    let d = r.deadline_ns.unwrap();
    assert!((70_000..3_000_000).contains(&d), "{d}");
    assert_eq!(r.cycles.misses, 3);
    assert_eq!(r.causes[0].culprit.comm.as_deref(), Some("hog"));
}

/// Ten cycles: client `c-5` writes a request on CPU0 and sleeps; worker `w-40` on CPU1
/// wakes it 10 us later and it runs 10 us after that. In cycle 6 it waits 900 us: irq 16
/// runs on CPU0 from +100 to +400 us, and the switch from idle to the client is not
/// traced (as on a guest whose idle exits record none), so its wait ends at its first
/// event, the read's return at +910.
fn untraced_wakeup_chain() -> String {
    use testkit::line;
    let sw = |p: &str, n: &str| format!("sched_switch: {p} ==> {n}");
    let (c, idle0) = (
        "prev_comm=c prev_pid=5 prev_prio=120 prev_state=S",
        "next_comm=swapper/0 next_pid=0 next_prio=120",
    );
    let mut t = String::new();
    for k in 0..10u64 {
        let at = 1_000_000 + k * 2_000;
        let slow = k == 6;
        t += &line(at, 0, "c-5", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
        t += &line(at + 5, 0, "c-5", "d..2.", &sw(c, idle0));
        t += &line(
            at + 10,
            1,
            "w-40",
            "d..3.",
            "sched_waking: comm=c pid=5 prio=120 target_cpu=000",
        );
        let ran = if slow { at + 910 } else { at + 20 };
        if slow {
            t += &line(
                at + 100,
                0,
                "<idle>-0",
                "d.h1.",
                "irq_handler_entry: irq=16 name=dev",
            );
            t += &line(
                at + 400,
                0,
                "<idle>-0",
                "d.h1.",
                "irq_handler_exit: irq=16 ret=handled",
            );
        } else {
            let back = "prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R";
            t += &line(
                ran,
                0,
                "<idle>-0",
                "d..2.",
                &sw(back, "next_comm=c next_pid=5 next_prio=120"),
            );
        }
        t += &line(ran + 1, 0, "c-5", "....1", "sys_read -> 0x1");
    }
    t
}

#[test]
fn a_wakeup_whose_switch_in_is_not_traced_blames_only_what_the_trace_shows() {
    let r = cycles_of(&untraced_wakeup_chain(), Some(500_000));
    assert_eq!((r.cycles.count, r.cycles.misses), (10, 1));
    // Up to the deadline (+500 us) the client waited from +20 (its usual 10 us after
    // the wakeup): idle to +100, irq 16 to +400, then nothing the trace shows.
    let causes: Vec<(&str, u64)> = (r.causes.iter())
        .map(|c| (c.category.id(), c.total_excess_ns))
        .collect();
    assert_eq!(
        causes,
        vec![
            ("hardirq", 300_000),
            ("cpu-idle", 80_000),
            ("switch-in-untraced", 100_000)
        ]
    );
    let wakeup = (r.misses[0].chain.iter())
        .find(|l| l.kind == "wakeup" && l.what.starts_with("c[5]"))
        .unwrap();
    assert!(wakeup
        .what
        .ends_with("(switch-in not traced: the end is its first event there)"));
}

/// Cycles of `text` cut by `from` and `to` (same thread, first in first out).
fn cycles_with(text: &str, from: &str, to: &str, deadline_ns: Option<u64>) -> ExplainReport {
    let mut o = testkit::chain_options(deadline_ns);
    o.from = crate::selector::Selector::parse(from).unwrap();
    o.to = vec![crate::selector::Selector::parse(to).unwrap()];
    explain(crate::testkit::opened(text), &OpenOptions::default(), &o).unwrap()
}

#[test]
fn a_request_without_reply_is_explained_up_to_its_deadline_and_the_selector_is_named() {
    // Twenty cycles of 1 ms and more, a reply selector that matches nothing: each request
    // is a miss at the deadline, and its chain stops there (the rest of the trace, where
    // the later requests are, is not on the way to a reply).
    let t = testkit::three_cpu_chain(20, &[3], 3_000);
    let r = cycles_with(
        &t,
        "sys_enter_write[comm=c,count=7]",
        "sys_exit_read[comm=nobody]",
        Some(200_000),
    );
    // The last request is cut: the trace ends before its deadline.
    let c = &r.cycles;
    assert_eq!((c.count, c.misses, c.no_reply, c.cut_off), (20, 19, 19, 1));
    for m in &r.misses {
        let last = m.chain.iter().map(|l| l.offset_ns).max().unwrap();
        assert!(last <= 200_000, "a link after the deadline: {:?}", m.chain);
    }
    assert!(
        r.blind
            .iter()
            .any(|b| b.contains("\"sys_exit_read[comm=nobody]\" matched no event")),
        "{:?}",
        r.blind
    );
    // Not blamed on a lost reply.
    assert!(
        !r.blind.iter().any(|b| b.contains("dropped packet")),
        "{:?}",
        r.blind
    );
}

#[test]
fn a_reply_selector_that_only_matches_requests_is_named() {
    let t = testkit::three_cpu_chain(5, &[], 0);
    let s = "sys_enter_write[comm=c,count=7]";
    let r = cycles_with(&t, s, s, Some(200_000));
    assert_eq!(r.cycles.replied, 0);
    assert!(
        r.blind
            .iter()
            .any(|b| b.contains("also matches") && b.contains("(5)")),
        "{:?}",
        r.blind
    );
}

#[test]
fn without_a_deadline_unanswered_requests_are_not_read_as_answered() {
    let t = testkit::three_cpu_chain(6, &[], 0);
    let r = cycles_with(
        &t,
        "sys_enter_write[comm=c,count=7]",
        "sys_exit_read[comm=nobody]",
        None,
    );
    assert_eq!(
        (r.deadline_ns, r.cycles.misses, r.cycles.cut_off),
        (None, 0, 6)
    );
    // The verdict says so: whylate-report's text/explain.rs tests.
}

#[test]
fn open_requests_are_capped_and_the_dropped_ones_are_said() {
    // More requests than may be open at once, none answered: the oldest are dropped as
    // they go, so memory stays bounded, and the report counts them.
    let n = super::cutter::OPEN_CAP + 10;
    // Someone else's read: the reply event exists, and is no reply.
    let mut t = testkit::line(999_000, 1, "other-9", "....1", "sys_read -> 0x1");
    for k in 0..n as u64 {
        t += &testkit::line(
            1_000_000 + k * 10,
            0,
            "c-5",
            "....1",
            "sys_write(fd: 3, buf: 0, count: 7)",
        );
    }
    let r = cycles_with(
        &t,
        "sys_enter_write[comm=c,count=7]",
        "sys_exit_read[comm=c]",
        None,
    );
    assert_eq!(r.cycles.count, n as u64);
    assert!(
        r.notes
            .iter()
            .any(|x| x.starts_with("10 requests were dropped unanswered")),
        "{:?}",
        r.notes
    );
}

/// A server that reads a request and writes its answer, `n` times 100 us apart; in the
/// rounds of `complains`, it first writes a log line (count 40) 3.5 ms in, and answers
/// at 5 ms.
fn read_then_write(n: u64, complains: &[u64]) -> String {
    let l = testkit::line;
    let mut t = String::new();
    let mut at = 1_000_000;
    for k in 0..n {
        t += &l(
            at,
            0,
            "srv-7",
            "....1",
            "sys_read(fd: 3, buf: 0, count: 64)",
        );
        t += &l(at + 1, 0, "srv-7", "....1", "sys_read -> 0x7");
        let mut answer = at + 3;
        if complains.contains(&k) {
            t += &l(
                at + 3_500,
                0,
                "srv-7",
                "....1",
                "sys_write(fd: 2, buf: 0, count: 40)",
            );
            t += &l(at + 3_510, 0, "srv-7", "....1", "sys_write -> 0x28");
            answer = at + 5_000;
        }
        t += &l(
            answer,
            0,
            "srv-7",
            "....1",
            "sys_write(fd: 3, buf: 0, count: 7)",
        );
        t += &l(answer + 2, 0, "srv-7", "....1", "sys_write -> 0x7");
        at = answer + 100;
    }
    t
}

#[test]
fn the_write_that_answers_is_no_timeout_complaint() {
    // Every cycle ends with the exit of a write: that write is the reply, not a log line
    // written while waiting. Counted as one, it made the deadline "inferred" at +2 us,
    // rounded to 0 ns, and every cycle a miss.
    let (from, to) = ("sys_enter_read[comm=srv]", "sys_exit_write[comm=srv,ret=7]");
    let r = cycles_with(&read_then_write(300, &[]), from, to, None);
    assert_eq!(r.cycles.count, 300);
    assert!(
        !r.deadline_source.contains("wrote"),
        "{}",
        r.deadline_source
    );
    assert!(r.cycles.misses <= 3, "{} misses", r.cycles.misses);
    // A log line written before the answer still is one: 30 rounds of 300 complain at
    // +3.5 ms, and the deadline is put there.
    let late: Vec<u64> = (0..300).step_by(10).collect();
    let r = cycles_with(&read_then_write(300, &late), from, to, None);
    assert_eq!(r.deadline_ns, Some(3_500_000), "{}", r.deadline_source);
    assert!(
        r.deadline_source.contains("in 30 cycles"),
        "{}",
        r.deadline_source
    );
    assert_eq!(r.cycles.misses, 30);
}

/// Reads `text` with a cutter of `o`'s cycles, finished at the trace's end.
pub(super) fn cut(o: &Options, text: &str) -> (super::cutter::Cycles, Pass) {
    let mode = Mode::Cycles(o.clone());
    let mut watch = super::modes::Watch::new(&mode);
    let p =
        crate::pipeline::read(testkit::opened(text), &OpenOptions::default(), &mut watch).unwrap();
    let mut cy = watch.into_cycles().expect("cycle mode cuts cycles");
    cy.finish(p.tl.last_ts);
    (cy, p)
}

/// Feeds `text` to a cutter pairing by `fd`, from the client's writes to its reads.
fn cut_by_fd(text: &str) -> super::cutter::Cycles {
    let mut o = testkit::chain_options(None);
    o.to = vec![crate::selector::Selector::parse("sys_exit_read[comm=c]").unwrap()];
    o.pairing = super::Pairing::Key("fd".into());
    cut(&o, text).0
}

#[test]
fn keys_with_nothing_open_are_forgotten_and_a_queue_that_never_drains_is_found() {
    // 3,000 requests, each on a descriptor of its own and answered before the next: the
    // drained keys are kept for reuse, but not without bound.
    let l = testkit::line;
    let mut t = String::new();
    for k in 0..3_000u64 {
        let at = 1_000_000 + k * 100;
        t += &l(
            at,
            0,
            "c-5",
            "....1",
            &format!("sys_write(fd: {k}, buf: 0, count: 7)"),
        );
        t += &l(
            at + 10,
            0,
            "c-5",
            "....1",
            &format!("sys_read(fd: {k}, buf: 0, count: 9)"),
        );
        t += &l(at + 50, 0, "c-5", "....1", "sys_read -> 0x7");
    }
    let cy = cut_by_fd(&t);
    assert_eq!((cy.cycles.len(), cy.replies), (3_000, 3_000));
    assert!(cy.open.len() <= 1024, "{} keys kept", cy.open.len());
    assert_eq!(cy.undrained(), None);
    // On one descriptor, the first reply lost: the 40 requests from then on never all got
    // their reply, and the report can say since when.
    let mut t = String::new();
    for k in 0..40u64 {
        let at = 5_000_000 + k * 100;
        t += &l(at, 0, "c-5", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
        if k > 0 {
            t += &l(
                at + 10,
                0,
                "c-5",
                "....1",
                "sys_read(fd: 3, buf: 0, count: 9)",
            );
            t += &l(at + 50, 0, "c-5", "....1", "sys_read -> 0x7");
        }
    }
    let cy = cut_by_fd(&t);
    assert_eq!((cy.cycles.len(), cy.replies), (40, 39));
    assert_eq!(cy.undrained(), Some((5_000_000_000, 40)));
}

#[test]
fn a_result_built_on_a_partly_unread_trace_says_so_under_its_verdict() {
    // Every third line of the cycles garbled: the report counts them, locates the
    // first, and says it under the verdict (a third is far above the 1% line).
    let t: String = testkit::garbled_every_third(&testkit::three_cpu_chain(6, &[4], 3_000));
    let r = cycles_of(&t, Some(1_000_000));
    let u = r.unread.as_ref().expect("unread lines are reported");
    assert_eq!((u.count, u.unit), (t.lines().count() as u64 / 3, "lines"));
    assert_eq!(u.first[0].line, 3);
    assert!(u.matters());
    assert!(
        r.blind[0].contains("were not understood and are left out; first at "),
        "{:?}",
        r.blind
    );
    // Read in full, the same trace reports nothing unread.
    let whole = cycles_of(&testkit::three_cpu_chain(6, &[4], 3_000), Some(1_000_000));
    assert!(whole.unread.is_none());
}

#[test]
fn a_trace_of_which_nothing_could_be_read_is_refused_with_why() {
    let bad = |stamp: &str| {
        let l = testkit::line(
            1_000_000,
            0,
            "c-5",
            "....1",
            "sys_write(fd: 3, buf: 0, count: 7)",
        );
        // The header makes it an ftrace file; every line after it fails.
        "# tracer: nop\n#\n".to_string() + &l.replace("1.000000:", stamp).repeat(3)
    };
    for (stamp, why) in [
        ("-1.000000:", "a negative timestamp"),
        ("1000000000000000.000000:", "a timestamp beyond 2^64 ns"),
    ] {
        let e = explain_auto(
            crate::testkit::opened(&bad(stamp)),
            &OpenOptions::default(),
            3,
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ReadError::Unreadable { .. }), "{msg}");
        assert!(msg.starts_with("no event could be read: 3 lines"), "{msg}");
        assert!(msg.contains(why), "{msg}");
    }
}

#[test]
fn a_cpu_number_beyond_32_bits_is_not_read_as_another_cpu() {
    let l = testkit::line(
        1_000_000,
        0,
        "c-5",
        "....1",
        "sys_write(fd: 3, buf: 0, count: 7)",
    );
    let text = l.replace("[000]", "[4294967296]") + &l;
    let p = testkit::pass(&text);
    assert_eq!(p.events, 1);
    assert_eq!(p.inputs.unparsed, 1);
}

#[test]
fn events_later_than_the_reorder_window_are_left_out_and_said_not_clamped() {
    // The first cycle's lines moved to the end of the file: beyond any window, they come
    // after later events. Clamped to the time of the last event read, they made spans
    // of 0 ns; now they are left out, counted, and their time range said.
    let t = testkit::three_cpu_chain(4, &[], 0);
    let lines: Vec<&str> = t.lines().collect();
    let first_cycle = lines.iter().position(|l| l.contains("1.001")).unwrap();
    let moved: Vec<&str> = lines[1..first_cycle].to_vec();
    let mut text = lines[0].to_string() + "\n";
    for l in lines[first_cycle..].iter().chain(&moved) {
        text += l;
        text += "\n";
    }
    let open = OpenOptions {
        window: 2,
        ..Default::default()
    };
    let p = crate::pipeline::read(
        crate::testkit::opened_with(&text, &open),
        &open,
        &mut |_: &_, _: &_| (),
    )
    .unwrap();
    let a = &p.tl.anomalies;
    assert_eq!(a.late_events, moved.len() as u64);
    assert_eq!(a.late_range, Some((1_000_000_000, 1_000_080_000)));
    let note = a.late_note().unwrap();
    assert!(
        note.starts_with(&format!("{} events came earlier", moved.len())),
        "{note}"
    );
    assert!(note.contains("between 1.000000 and 1.000080"), "{note}");
}

/// Every third line replaced by words that are no trace line at all (skipped, not "not
/// understood"): a third of the input unread is said under the verdict, in explain and
/// latency alike.
#[test]
fn lines_that_are_not_trace_data_are_said_under_the_verdict() {
    let text: String = (testkit::three_cpu_chain(60, &[4], 3_000)
        .lines()
        .enumerate())
    .map(|(i, l)| match i % 3 {
        2 => "total garbage here 12345\n".to_string(),
        _ => format!("{l}\n"),
    })
    .collect();
    let r = cycles_of(&text, Some(1_000_000));
    assert!(
        r.blind[0].contains("lines (33.") && r.blind[0].contains("are not trace data"),
        "{:?}",
        r.blind
    );
    let l = crate::latency::latency(
        crate::testkit::opened(&text),
        &OpenOptions::default(),
        &crate::measure::Options::default(),
        None,
    )
    .unwrap();
    assert!(l.blind[0].contains("are not trace data"), "{:?}", l.blind);
    // The same trace whole: nothing said.
    let r = cycles_of(&testkit::three_cpu_chain(60, &[4], 3_000), Some(1_000_000));
    assert!(r.blind.iter().all(|b| !b.contains("not trace data")));
}

#[test]
fn a_wait_across_lost_events_is_blamed_on_the_loss_not_the_device() {
    // The late cycle's worker, and the hog that held it, are in events CPU1 lost: what
    // kept the reply 3 ms is not in the trace, and the device is not to blame for it.
    // The marker comes where ftrace prints it: before the CPU's next event.
    let mut t = String::new();
    let (mut cycle, mut marked) = (0, false);
    for l in testkit::three_cpu_chain(6, &[4], 3_000).lines() {
        cycle += l.contains("sys_write(") as usize;
        if l.contains("[001]") {
            if cycle == 5 || l.contains("hog") {
                continue;
            }
            if cycle == 6 && !marked {
                t += "CPU:1 [LOST 9 EVENTS]\n";
                marked = true;
            }
        }
        t += l;
        t.push('\n');
    }
    let r = cycles_of(&t, Some(1_000_000));
    assert_eq!((r.cycles.count, r.cycles.misses), (6, 1), "{:?}", r.cycles);
    let c = &r.causes[0];
    assert_eq!(c.category, "unknown-lost-events", "{:?}", r.causes);
    assert_eq!(c.culprit.cpu, Some(1));
    assert!(r.causes.iter().all(|c| c.category != "device/external"));
}

/// Twenty writes of 5 us by `c-5` on CPU0 (a `sched_switch` into it first, so the CPU's
/// occupant is known); the eleventh takes 300 us with nothing recorded between its entry
/// and exit, the thread never switched out: the time went inside its own call, not to a
/// device or peer it could only have slept for.
#[test]
fn a_call_that_held_its_cpu_is_the_threads_own_time_not_a_device() {
    let mut t = testkit::line(999_000, 0, "swapper/0-0", "d..2.", "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=5 next_prio=120");
    for k in 0..20u64 {
        let at = 1_000_000 + k * 1_000;
        let took = if k == 10 { 300 } else { 5 };
        t += &testkit::line(at, 0, "c-5", "....1", "sys_write(fd: 1, buf: 0, count: 1)");
        t += &testkit::line(at + took, 0, "c-5", "....1", "sys_write -> 0x1");
    }
    let mut o = testkit::chain_options(Some(50_000));
    o.from = crate::selector::Selector::parse("sys_enter_write[comm=c]").unwrap();
    o.to = vec![crate::selector::Selector::parse("sys_exit_write[comm=c]").unwrap()];
    let r = explain(testkit::opened(&t), &OpenOptions::default(), &o).unwrap();
    assert_eq!((r.cycles.count, r.cycles.misses), (20, 1));
    let c = &r.causes[0];
    assert_eq!(c.category, "on-cpu", "{:?}", r.causes);
    assert_eq!((c.culprit.pid, c.culprit.cpu), (Some(5), Some(0)));
    // Up to the 50 us deadline, over the usual 5 us.
    assert_eq!(c.total_excess_ns, 45_000);
    let gap = (r.misses[0].chain.iter())
        .find(|l| l.kind == "gap")
        .unwrap();
    assert!(gap.what.contains("inside its write()"), "{}", gap.what);
}
