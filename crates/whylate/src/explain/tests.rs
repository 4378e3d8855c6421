//! The explain engine on traces built for it: each test says what the trace holds and
//! asserts the numbers the explanation must give.

use super::*;
use crate::read::OpenOptions;
use crate::testkit;

fn cycles_of(text: &str, deadline_ns: Option<u64>) -> ExplainReport {
    let f = testkit::file(text);
    let o = testkit::chain_options(deadline_ns);
    explain(&[f.to_path_buf()], &OpenOptions::default(), &o).unwrap()
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
    // caveat, then the hog is moved off the chain's CPU.
    assert!(
        r.advice[0].command.starts_with("chrt -f -p 50 40"),
        "{:?}",
        r.advice
    );
    assert!(r.advice[0].cost.contains("pool worker"));
    assert_eq!(r.advice[1].command, "taskset -pc 0,2 60");
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
fn a_miss_is_explained_up_to_its_deadline_not_by_the_clients_own_sleep() {
    // Eight cycles; in two the hog holds CPU1 for 8 ms, the client gives up at +3.5 ms,
    // complains, sleeps 20 ms and drains the stale reply (~23.5 ms after the request).
    let text = testkit::giving_up_client(8, &[2, 5]);
    for deadline in [Some(3_500_000), None] {
        let r = cycles_of(&text, deadline);
        // Without a deadline given, the complaints put it at 3.5 ms.
        assert_eq!(r.deadline_ns, Some(3_500_000), "{}", r.deadline_source);
        assert_eq!((r.cycles.count, r.cycles.misses), (8, 2));
        // The only cause is the hog that kept the worker from CPU1, up to the deadline:
        // the work was queued at +10 us and usually starts 12 us later, so each miss
        // holds 3.5 ms - 10 us - 12 us = 3.478 ms of hog's time; the client's 20 ms sleep
        // after it gave up is no cause.
        assert_eq!(r.causes.len(), 1, "{:?}", r.causes);
        let c = &r.causes[0];
        assert_eq!(
            (c.category.as_str(), c.culprit.pid),
            ("runqueue-wait", Some(60))
        );
        assert_eq!(c.total_excess_ns, 2 * 3_478_000, "{:?}", r.causes);
        // What came after is shown, unblamed, after the deadline mark.
        let m = &r.misses[0];
        let dl = m.chain.iter().position(|l| l.kind == "deadline").unwrap();
        assert_eq!(m.chain[dl].offset_ns, 3_500_000);
        assert!(
            m.chain[dl]
                .what
                .contains("the reply was ready 4.530 ms later"),
            "{}",
            m.chain[dl].what
        );
        let after = &m.chain[dl + 1..];
        assert!(
            after.iter().any(|l| l.what.contains(", woken at +23.5")),
            "{after:?}"
        );
        assert!(after
            .iter()
            .all(|l| l.after_deadline && l.held_by.is_empty()));
        assert_eq!(m.blamed_ns, 3_478_000);
    }
}

#[test]
fn a_reply_ready_while_its_reader_slept_is_measured_when_it_was_ready() {
    // In the two hogged cycles the reply work ends at +8.030 ms (the hog held CPU1 for
    // 8 ms), while the client, which gave up at +3.5 ms, sleeps until its timer
    // interrupt at about +23.5 ms and reads then: ready 8.030 ms, read ~23.5 ms.
    let r = cycles_of(&testkit::giving_up_client(8, &[2, 5]), Some(3_500_000));
    assert_eq!(r.cycles.max_ns, 8_030_000);
    let read = r
        .cycles
        .read
        .as_ref()
        .expect("read times beside ready ones");
    assert_eq!((read.later, read.max_ns), (2, 23_538_000));
    let m = &r.misses[0];
    assert_eq!(
        (m.duration_ns, m.read_ns),
        (Some(8_030_000), Some(23_526_000))
    );
    assert_eq!((m.late_ns, m.not_reading), (4_530_000, false));
    let ready = m.chain.iter().find(|l| l.kind == "ready").unwrap();
    assert_eq!(ready.offset_ns, 8_030_000);
    assert_eq!(
        ready.what,
        "reply ready (reply_work done in kworker/1:1[40] on CPU1); c[5] was not waiting for it, woken at +23.517 ms, and read it at +23.526 ms"
    );
    // With a 9 ms deadline the replies were ready in time and read late: misses of
    // their own kind, blamed on the reader.
    let r = cycles_of(&testkit::giving_up_client(8, &[2, 5]), Some(9_000_000));
    assert_eq!((r.cycles.misses, r.cycles.not_reading), (2, 2));
    assert_eq!(r.causes[0].category, "reader-not-reading");
    assert_eq!(r.causes[0].culprit.pid, Some(5));
    let m = &r.misses[0];
    assert!(m.not_reading);
    assert_eq!(m.late_ns, m.read_ns.unwrap() - 9_000_000);
    // Cycles whose reader was waiting have one time: read.
    let r = cycles_of(&testkit::giving_up_client(8, &[]), Some(3_500_000));
    assert!(r.cycles.read.is_none());
}

/// `giving_up_client` with the client woken by a timer_list callback `function` in the
/// TIMER softirq instead of a timer interrupt (a receive timeout, `SO_RCVTIMEO`), the
/// timer armed by `armer` (`timer_start`) as the client went to sleep.
fn timed_out_by_timer_list(function: &str, armer: &str) -> String {
    let t = "timer=00000000deadbeef";
    let mut out = String::new();
    for l in testkit::giving_up_client(8, &[2, 5]).lines() {
        let ts = l.split_whitespace().nth(3).unwrap_or("");
        let at = |who: &str, flags: &str, body: &str| format!(" {who} [000] {flags} {ts} {body}\n");
        if l.contains("prev_comm=c prev_pid=5") {
            let (who, cpu) = armer.split_once('@').unwrap();
            out += &format!(" {who} [{cpu}] d..1. {ts} timer_start: {t} function={function} expires=4295000020 [timeout=20] cpu=0 idx=0 flags=\n");
        }
        if l.contains("irq_handler_entry: irq=0 name=timer") {
            out += &at("<idle>-0", "..s1.", "softirq_entry: vec=1 [action=TIMER]");
            out += &at(
                "<idle>-0",
                "..s1.",
                &format!(
                    "timer_expire_entry: {t} function={function} now=4295000020 baseclk=4295000020"
                ),
            );
        } else if l.contains("irq_handler_exit: irq=0") {
            out += &at("<idle>-0", "..s1.", &format!("timer_expire_exit: {t}"));
            out += &at("<idle>-0", "..s1.", "softirq_exit: vec=1 [action=TIMER]");
        } else {
            out += &l.replace("d.h2.", "d.s2.");
            out += "\n";
        }
    }
    out
}

#[test]
fn a_receive_timeout_in_the_timer_softirq_is_the_readers_own_timer() {
    let later = |text: String| {
        let r = cycles_of(&text, Some(3_500_000));
        (r.cycles.max_ns, r.cycles.read.map(|x| (x.later, x.max_ns)))
    };
    // process_timeout wakes the task that slept in schedule_timeout(): the client's own.
    // Its replies were ready at +8.030 ms and read at +23.526 / +23.538 ms.
    let own = Some((2, 23_538_000));
    assert_eq!(
        later(timed_out_by_timer_list("process_timeout", "c-5@000")),
        (8_030_000, own)
    );
    // Any callback the client armed itself.
    assert_eq!(
        later(timed_out_by_timer_list("my_timeout", "c-5@000")),
        (8_030_000, own)
    );
    // A callback some other task armed may be a delivery (a driver's poll timer): no
    // claim, the cycle lasts until the read.
    assert_eq!(
        later(timed_out_by_timer_list("drv_poll", "hog-60@001")),
        (23_538_000, None)
    );
}

#[test]
fn a_reply_event_in_an_interrupt_makes_no_reader_to_find_a_ready_time_for() {
    // The cycles end with a device interrupt that came while c ran (flags `d.h1.`), not
    // with c's read: c is the interrupted task, not a reader, though in the two hogged
    // cycles it slept on its own timer after the reply work ended.
    let text = testkit::giving_up_client(8, &[2, 5]);
    let irq = |flags: &str| {
        text.lines()
            .map(|l| match l.contains("sys_read -> 0x1") {
                true => l
                    .replace("....1", flags)
                    .replace("sys_read -> 0x1", "irq_handler_entry: irq=30 name=eth0"),
                false => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    };
    let mut o = testkit::chain_options(Some(3_500_000));
    o.to = vec![crate::selector::Selector::parse("irq_handler_entry[irq=30]").unwrap()];
    let run = |t: &str| {
        let f = testkit::file(t);
        explain(&[f.to_path_buf()], &OpenOptions::default(), &o).unwrap()
    };
    let r = run(&irq("d.h1."));
    assert_eq!((r.cycles.replied, r.cycles.misses), (8, 2));
    assert!(r.cycles.read.is_none(), "{:?}", r.cycles.read);
    // The cycles last until the interrupt: +23.526 and +23.538 ms.
    assert_eq!(r.cycles.max_ns, 23_538_000);
    assert!(r
        .misses
        .iter()
        .all(|m| m.read_ns.is_none() && !m.not_reading));
    // The same event in task context (flags `....1`) is c's own: ready at +8.030 ms.
    let r = run(&irq("....1"));
    assert_eq!(r.cycles.max_ns, 8_030_000);
    assert_eq!(r.cycles.read.map(|x| x.later), Some(2));
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
        (c.category.as_str(), c.culprit.irq),
        ("hardirq", Some(96)),
        "{:?}",
        r.causes
    );
    assert_eq!(c.culprit.irq_name.as_deref(), Some("hpvsa0"));
    assert!(
        r.causes.iter().all(|c| c.category != "device/external"),
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
    assert_eq!(anon.label_in("cpu-idle"), "(the CPU was idle)");
    let soft = Culprit {
        vector: Some("TIMER".into()),
        ..Default::default()
    };
    assert_eq!(soft.label_in("softirq"), "TIMER");
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
        .map(|c| (c.category.as_str(), c.total_excess_ns))
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
    let f = testkit::file(text);
    let mut o = testkit::chain_options(deadline_ns);
    o.from = crate::selector::Selector::parse(from).unwrap();
    o.to = vec![crate::selector::Selector::parse(to).unwrap()];
    explain(&[f.to_path_buf()], &OpenOptions::default(), &o).unwrap()
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
    let head = r.render_text(&crate::report::Paint::new(false));
    let head = head.lines().next().unwrap();
    assert!(
        head.contains("6 never answered and not judged: no deadline"),
        "{head}"
    );
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

#[test]
fn a_result_built_on_a_partly_unread_trace_says_so_under_its_verdict() {
    // Every third line of the cycles garbled: the report counts them, locates the
    // first, and says it under the verdict (a third is far above the 1% line).
    let t: String = (testkit::three_cpu_chain(6, &[4], 3_000).lines())
        .enumerate()
        .map(|(i, l)| match i % 3 {
            2 => format!("{}\n", l.replacen('[', "{", 1)),
            _ => format!("{l}\n"),
        })
        .collect();
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
        let f = testkit::file(&bad(stamp));
        let e = explain_auto(&[f.to_path_buf()], &OpenOptions::default(), 3).unwrap_err();
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
    let f = testkit::file(&text);
    let open = OpenOptions {
        window: 2,
        ..Default::default()
    };
    let p = crate::pipeline::read(&[f.to_path_buf()], &open, &mut |_: &_, _: &_| ()).unwrap();
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

#[test]
fn the_html_report_says_where_the_trace_is_blind_under_its_verdict() {
    // Every third line garbled, as in the terminal test: the page says it at the top.
    let t: String = (testkit::three_cpu_chain(6, &[4], 3_000).lines())
        .enumerate()
        .map(|(i, l)| match i % 3 {
            2 => format!("{}\n", l.replacen('[', "{", 1)),
            _ => format!("{l}\n"),
        })
        .collect();
    let f = testkit::file(&t);
    let mode = Mode::Cycles(testkit::chain_options(Some(1_000_000)));
    let (_, page) = explain_then(
        &[f.to_path_buf()],
        &OpenOptions::default(),
        &mode,
        |r, tl, s| {
            let plots = crate::report::plot::build(r, tl, s, &Default::default());
            crate::report::html::render(r, &plots, "t")
        },
    )
    .unwrap();
    let verdict = &page[page.find("id=\"verdict\"").unwrap()..];
    let verdict = &verdict[..verdict.find("</div>").unwrap()];
    assert!(
        verdict.contains("blind: ") && verdict.contains("were not understood"),
        "{verdict}"
    );
}

/// Workload `app-30` waits 12 ms for CPU1 behind trace-cmd's reader `trace-cmd-900`, and
/// trace-cmd's other reader `trace-cmd-901` waits 18 ms for CPU0 behind `ls-50`.
fn recorder_in_the_way() -> String {
    use testkit::line;
    let sw = |p: &str, pid: u32, st: &str, n: &str, npid: u32| {
        format!("sched_switch: prev_comm={p} prev_pid={pid} prev_prio=120 prev_state={st} ==> next_comm={n} next_pid={npid} next_prio=120")
    };
    let mut t = String::new();
    t += &line(
        900,
        0,
        "<idle>-0",
        "d..2.",
        &sw("swapper/0", 0, "R", "ls", 50),
    );
    t += &line(
        1_000,
        1,
        "<idle>-0",
        "d..2.",
        &sw("swapper/1", 0, "R", "trace-cmd", 900),
    );
    t += &line(
        1_010,
        0,
        "ls-50",
        "d..3.",
        "sched_waking: comm=app pid=30 prio=120 target_cpu=001",
    );
    t += &line(
        2_000,
        0,
        "ls-50",
        "d..3.",
        "sched_waking: comm=trace-cmd pid=901 prio=120 target_cpu=000",
    );
    t += &line(
        13_010,
        1,
        "trace-cmd-900",
        "d..2.",
        &sw("trace-cmd", 900, "S", "app", 30),
    );
    t += &line(
        13_100,
        1,
        "app-30",
        "d..2.",
        &sw("app", 30, "S", "swapper/1", 0),
    );
    t += &line(
        20_000,
        0,
        "ls-50",
        "d..2.",
        &sw("ls", 50, "S", "trace-cmd", 901),
    );
    t += &line(
        20_100,
        0,
        "trace-cmd-901",
        "d..2.",
        &sw("trace-cmd", 901, "S", "swapper/0", 0),
    );
    t
}

#[test]
fn automatic_mode_leaves_the_recorders_threads_out_of_victims_and_advice() {
    let p = testkit::pass(&recorder_in_the_way());
    let rec: Vec<i32> = {
        let mut v: Vec<i32> = p.tl.recorder.iter().copied().collect();
        v.sort_unstable();
        v
    };
    assert_eq!(rec, [900, 901]);
    let r = analyze_auto(&p.tl, &p.strings, 3);
    // trace-cmd-901's longer wait is the measurement's, not an outlier of the workload.
    assert!(!r.misses.is_empty(), "{:?}", r.notes);
    assert_eq!(r.misses[0].tid, 30, "{:?}", r.misses);
    assert!(r.misses.iter().all(|m| !p.tl.is_recorder(m.tid)));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("1 outliers of the recorder's own threads (trace-cmd[901])")),
        "{:?}",
        r.notes
    );
    // It held app up: a cause, whose advice is about recording, not about trace-cmd's
    // priority or placement as if it were the workload.
    assert_eq!(r.causes[0].culprit.pid, Some(900));
    assert!(!r.advice.is_empty());
    for a in &r.advice {
        let all = format!("{} {} {}", a.action, a.command, a.cost);
        assert!(!all.contains("chrt -f -p 50 90"), "{all}");
        assert!(!all.contains("taskset -pc"), "{all}");
        assert!(!a.action.starts_with("Run trace-cmd"), "{all}");
        assert!(!a.action.starts_with("Move trace-cmd"), "{all}");
    }
    assert!(r.advice[0]
        .action
        .starts_with("The recorder itself (trace-cmd[900]"));
    assert!(r.advice[0].command.contains("bigger buffer"));
}

/// `three_cpu_chain` whose hog is whylate's reader thread `whylate-read-61` in the cycles
/// in `rec`: a trace with no snapshot, where only the name tells the recorder.
fn recorder_hogs_some(cycles: usize, hogged: &[usize], rec: &[usize]) -> String {
    let mut seen = 0usize;
    let mut out = String::new();
    for l in testkit::three_cpu_chain(cycles, hogged, 3_000).lines() {
        if l.contains("sys_write(") {
            seen += 1;
        }
        // The hog's switch-in comes before its cycle's request; its other lines after.
        let cycle = match l.contains("prev_comm=swapper/1") && l.contains("next_comm=hog") {
            true => seen,
            false => seen.wrapping_sub(1),
        };
        let l = match rec.contains(&cycle) {
            true => (l.replace("comm=hog", "comm=whylate-read"))
                .replace("pid=60", "pid=61")
                .replace("hog-60", "whylate-read-61"),
            false => l.to_string(),
        };
        out += &l;
        out.push('\n');
    }
    out
}

#[test]
fn whylate_is_known_by_name_and_its_rows_rank_after_the_workloads() {
    // whylate's reader held the worker's CPU in two misses, hog in one: by excess the
    // recorder comes first, but what comes first must be about the workload.
    let text = recorder_hogs_some(8, &[1, 4, 6], &[1, 4]);
    let p = testkit::pass(&text);
    assert!(p.tl.recorder.contains(&61) && !p.tl.recorder.contains(&60));
    let r = cycles_of(&text, Some(1_000_000));
    assert_eq!(r.cycles.misses, 3);
    let who: Vec<(Option<&str>, u64)> = (r.causes.iter())
        .map(|c| (c.culprit.comm.as_deref(), c.total_excess_ns))
        .collect();
    assert_eq!(
        who,
        [(Some("hog"), 978_000), (Some("whylate-read"), 1_956_000)]
    );
    assert!(
        r.notes.iter().any(|n| n
            .starts_with("the recorder itself (whylate-read[61] (nice 0)) holds 1.956 ms (67%)")),
        "{:?}",
        r.notes
    );
    // The advice is about the workload first; the recorder is never told to move.
    assert!(r.advice[0].action.contains("hog"), "{:?}", r.advice);
    assert!(!r
        .advice
        .iter()
        .any(|a| a.action.starts_with("Move whylate")));
}

#[test]
fn whylate_records_its_own_threads_in_the_snapshot() {
    let p = testkit::pass(&recorder_in_the_way());
    let task = |tid, tgid, comm: &str| crate::snapshot::Task {
        tid,
        tgid,
        comm: comm.into(),
    };
    let snap = crate::snapshot::Snapshot {
        recorder: Some(100),
        tasks: vec![
            task(100, 100, "whylate"),
            task(101, 100, "whylate"),
            task(30, 30, "app"),
        ],
        ..Default::default()
    };
    let mut got: Vec<i32> = crate::pipeline::recorder_threads(&p.tl, &p.strings, Some(&snap))
        .into_iter()
        .collect();
    got.sort_unstable();
    assert_eq!(got, [100, 101, 900, 901]);
}
