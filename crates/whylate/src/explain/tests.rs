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
            m.chain[dl].what.contains("the reply came"),
            "{}",
            m.chain[dl].what
        );
        let after = &m.chain[dl + 1..];
        assert!(
            after.iter().any(|l| l.what.contains("woken by irq 0")),
            "{after:?}"
        );
        assert!(after
            .iter()
            .all(|l| l.after_deadline && l.held_by.is_empty()));
        assert_eq!(m.blamed_ns, 3_478_000);
    }
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

/// `udp_deferral` cut from the sender's sendto() to the receiver's recvfrom() return.
fn udp_cycles(text: &str, pairing: Pairing) -> ExplainReport {
    use crate::selector::Selector;
    let f = testkit::file(text);
    let o = Options {
        from: Selector::parse("sys_enter_sendto[comm=tx]").unwrap(),
        to: vec![Selector::parse("sys_exit_recvfrom[comm=rx]").unwrap()],
        deadline_ns: Some(1_000_000),
        same: Same::Any,
        pairing,
        arch: None,
        top: 3,
        learned: Default::default(),
    };
    explain(&[f.to_path_buf()], &OpenOptions::default(), &o).unwrap()
}

#[test]
fn overlapping_requests_pair_first_in_first_out() {
    // Twenty datagrams 2 ms apart; the 6th and the 15th wait 5 ms in a deferred NET_RX,
    // and the two sent after each queue behind it: three requests open at once, all
    // answered in one burst at +5.0 ms after the first.
    let text = testkit::udp_deferral(20, &[5, 14], 5_000);
    let r = udp_cycles(&text, Pairing::Fifo);
    let c = &r.cycles;
    assert_eq!((c.count, c.replied, c.no_reply, c.misses), (20, 20, 0, 6));
    let p = c.pairing.as_ref().unwrap();
    assert_eq!((p.mode.as_str(), p.overlapped, p.max_open), ("fifo", 4, 3));
    // Each reply goes to its own request: 5.035 ms, 3.037 ms and 1.039 ms.
    let mut late: Vec<u64> = r.misses.iter().filter_map(|m| m.duration_ns).collect();
    late.sort_unstable();
    assert_eq!(
        late,
        [1_039_000, 1_039_000, 3_037_000, 3_037_000, 5_035_000, 5_035_000]
    );
    assert!(r.notes.iter().any(|n| n.contains("4 requests began while")));
    // The old rule (a new request abandons the open one) turns the first two of each
    // burst into "no reply" and pairs the reply with the third.
    let r = udp_cycles(&text, Pairing::Latest);
    assert_eq!((r.cycles.no_reply, r.cycles.misses), (4, 6));
}

#[test]
fn a_packet_deferred_to_ksoftirqd_is_blamed_on_the_task_that_starved_it() {
    let r = udp_cycles(&testkit::udp_deferral(20, &[5, 14], 5_000), Pairing::Fifo);
    // The chain reaches the reply backwards: the receiver was woken by NET_RX on CPU1,
    // which was pending there since the packet's raise, deferred to ksoftirqd.
    let c = &r.causes[0];
    assert_eq!(c.category, "deferred-to-ksoftirqd", "{:?}", r.causes);
    assert_eq!((c.culprit.pid, c.culprit.cpu), (Some(60), Some(1)));
    assert_eq!(c.count, 6);
    assert!(
        !r.causes.iter().any(|c| c.category == "device/external"),
        "{:?}",
        r.causes
    );
    let first = r
        .misses
        .iter()
        .find(|m| m.duration_ns == Some(5_035_000))
        .unwrap();
    let pending = first
        .chain
        .iter()
        .find(|l| l.kind == "softirq" && l.what.contains("deferred to ksoftirqd/1"))
        .unwrap();
    // Raised by the steering IPI at +20 us, run by ksoftirqd at +5.022 ms.
    assert_eq!(
        (pending.offset_ns, pending.duration_ns),
        (20_000, 5_002_000)
    );
    assert!(pending.pending_at_deadline);
    let held: Vec<(&str, u64)> = (pending.held_by.iter())
        .map(|h| (h.category.as_str(), h.ns))
        .collect();
    // Up to the deadline (+1 ms) and above the usual 1 us raise-to-run: NET_RX ran the
    // backlog ahead of it for 281 us (+21..+302), then the hog held ksoftirqd off.
    assert_eq!(
        held,
        [
            ("deferred-to-ksoftirqd", 698_000),
            ("softirq-backlog", 281_000)
        ]
    );
    // The datagrams queued behind it waited only for ksoftirqd: over all six misses the
    // starving task has 2 x (698 + 999 + 999) us, NET_RX's own backlog 2 x 281 us.
    assert_eq!(c.total_excess_ns, 5_392_000, "{:?}", r.causes);
    assert_eq!(r.causes[1].category, "softirq-backlog");
    assert_eq!(r.causes[1].total_excess_ns, 562_000);
    // The advice starts with the starved ksoftirqd.
    assert!(r.advice[0].action.contains("ksoftirqd"), "{:?}", r.advice);
}

#[test]
fn a_key_field_pairs_replies_that_come_out_of_order() {
    // Two requests on descriptors 3 and 4; fd 4's reply comes first. On a syscall exit
    // the key is the field of the call it returns from.
    let l = testkit::line;
    let mut t = String::new();
    t += &l(
        1_000_000,
        0,
        "c-5",
        "....1",
        "sys_write(fd: 3, buf: 0, count: 7)",
    );
    t += &l(
        1_000_100,
        0,
        "c-5",
        "....1",
        "sys_write(fd: 4, buf: 0, count: 7)",
    );
    t += &l(
        1_000_200,
        0,
        "c-5",
        "....1",
        "sys_read(fd: 4, buf: 0, count: 64)",
    );
    t += &l(1_000_300, 0, "c-5", "....1", "sys_read -> 0x7");
    t += &l(
        1_000_400,
        0,
        "c-5",
        "....1",
        "sys_read(fd: 3, buf: 0, count: 64)",
    );
    t += &l(1_000_900, 0, "c-5", "....1", "sys_read -> 0x7");
    let f = testkit::file(&t);
    let run = |pairing| {
        let o = Options {
            pairing,
            ..testkit::chain_options(Some(500_000))
        };
        let r = explain(&[f.to_path_buf()], &OpenOptions::default(), &o).unwrap();
        let d: Vec<Option<u64>> = r.misses.iter().map(|m| m.duration_ns).collect();
        (r.cycles.pairing.unwrap().mode, d)
    };
    // First in, first out gives fd 3's request the first reply: the 800 us one is fd 4's.
    assert_eq!(run(Pairing::Fifo), ("fifo".into(), vec![Some(800_000)]));
    assert_eq!(
        run(Pairing::Key("fd".into())),
        ("key fd".into(), vec![Some(900_000)])
    );
}

#[test]
fn a_key_field_neither_selectors_event_has_is_refused_with_the_closest_names() {
    let f = testkit::file(&testkit::three_cpu_chain(3, &[], 0));
    let run = |key: &str| {
        let o = Options {
            pairing: Pairing::Key(key.into()),
            ..testkit::chain_options(Some(500_000))
        };
        explain(&[f.to_path_buf()], &OpenOptions::default(), &o)
    };
    let Err(crate::read::ReadError::NoMatch { why }) = run("fdd") else {
        panic!("a key no event has was taken")
    };
    assert!(
        why.starts_with(
            "--key fdd: neither `sys_enter_write` nor `sys_exit_read` events have a field `fdd`; did you mean fd?; their fields: fd, buf, count,"
        ),
        "{why}"
    );
    // A field the request has (and the reply through its call) pairs as before.
    assert!(run("fd").is_ok());
}

#[test]
fn a_lost_reply_under_fifo_pairing_is_said_under_the_verdict() {
    // Forty datagrams; the 4th one's reply is not in the trace (dropped). From there on
    // every reply closes the request before its own: the queue never drains again.
    let text: String = testkit::udp_deferral(40, &[], 0)
        .lines()
        .filter(|l| !l.contains("1.006035: sys_recvfrom"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = udp_cycles(&text, Pairing::Fifo);
    assert_eq!(r.cycles.replied, 39);
    assert_eq!(r.blind.len(), 1, "{:?}", r.blind);
    assert!(
        r.blind[0].starts_with("pairing from 1.006000 on: the 37 requests"),
        "{}",
        r.blind[0]
    );
    // Without the loss nothing is said.
    let r = udp_cycles(&testkit::udp_deferral(40, &[], 0), Pairing::Fifo);
    assert!(r.blind.is_empty());
}

#[test]
fn a_reply_delivered_by_a_softirq_in_the_receivers_own_context_is_in_the_chain() {
    // Five usual datagrams, then one that finds the receiver already on CPU1 (woken just
    // before the request): NET_RX runs in its own context (bh enable) over a backlog for
    // 1.2 ms, re-raising itself twice, and only then does recvfrom() return.
    let l = testkit::line;
    let mut t = testkit::udp_deferral(5, &[], 0);
    let s = 1_010_000;
    t += &l(
        s - 105,
        1,
        "hog-60",
        "d.h1.",
        "sched_waking: comm=rx pid=7 prio=49 target_cpu=001",
    );
    t += &l(s - 100, 1, "hog-60", "d..2.", "sched_switch: prev_comm=hog prev_pid=60 prev_prio=101 prev_state=R ==> next_comm=rx next_pid=7 next_prio=49");
    t += &l(
        s - 90,
        1,
        "rx-7",
        "d..1.",
        "softirq_raise: vec=3 [action=NET_RX]",
    );
    t += &l(
        s - 89,
        1,
        "rx-7",
        "..s1.",
        "softirq_entry: vec=3 [action=NET_RX]",
    );
    t += &l(
        s,
        0,
        "tx-5",
        "....1",
        "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)",
    );
    for (raise, next) in [(s + 400, s + 402), (s + 800, s + 802)] {
        t += &l(
            raise,
            1,
            "rx-7",
            "..s1.",
            "softirq_raise: vec=3 [action=NET_RX]",
        );
        t += &l(
            raise + 1,
            1,
            "rx-7",
            "..s1.",
            "softirq_exit: vec=3 [action=NET_RX]",
        );
        t += &l(
            next,
            1,
            "rx-7",
            "..s1.",
            "softirq_entry: vec=3 [action=NET_RX]",
        );
    }
    t += &l(
        s + 1_200,
        1,
        "rx-7",
        "..s1.",
        "softirq_exit: vec=3 [action=NET_RX]",
    );
    t += &l(s + 1_205, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
    t += &l(s + 1_210, 1, "rx-7", "d..2.", "sched_switch: prev_comm=rx prev_pid=7 prev_prio=49 prev_state=S ==> next_comm=hog next_pid=60 next_prio=101");
    let r = udp_cycles(&t, Pairing::Fifo);
    assert_eq!((r.cycles.count, r.cycles.misses), (6, 1));
    let m = &r.misses[0];
    let kinds: Vec<&str> = m.chain.iter().map(|l| l.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["from", "softirq", "softirq", "deadline", "to"],
        "{m:?}"
    );
    // From the request to the last run's entry (+802 us) NET_RX worked through the
    // backlog ahead of this datagram in the receiver's context: that is the cause.
    let pending = &m.chain[1];
    assert_eq!((pending.offset_ns, pending.duration_ns), (0, 802_000));
    assert!(
        pending.what.contains("rx[7] (bh enable)"),
        "{}",
        pending.what
    );
    assert_eq!(r.causes[0].category, "softirq-backlog", "{:?}", r.causes);
    assert_eq!(r.causes[0].culprit.vector.as_deref(), Some("NET_RX"));
    // 801 us over the usual 1 us pending, 194 us of the last run up to the deadline.
    assert_eq!(
        r.causes[0].total_excess_ns,
        799_000 + 194_000,
        "{:?}",
        r.causes
    );
    assert!(!r
        .causes
        .iter()
        .any(|c| c.category == "device/external" || c.category == "unknown"));
}

/// Five usual datagrams; then the receiver, at kernel priority `prio`, is woken 300 us
/// before the request and waits behind the hog until +3 ms (the datagram's NET_RX runs
/// over the hog at +20 us); `between` (lines at `s` + us) comes before it gets the CPU,
/// then it reads the datagram.
fn woken_before_the_request(prio: u32, between: &[(u64, &str, &str, &str)]) -> ExplainReport {
    let l = testkit::line;
    let mut t = testkit::udp_deferral(5, &[], 0);
    let s = 1_010_000;
    let net_rx = "vec=3 [action=NET_RX]";
    let waking = format!("sched_waking: comm=rx pid=7 prio={prio} target_cpu=001");
    t += &l(s - 300, 1, "hog-60", "d.h1.", &waking);
    let sendto = "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)";
    t += &l(s, 0, "tx-5", "....1", sendto);
    t += &l(
        s + 20,
        1,
        "hog-60",
        "d.h1.",
        &format!("softirq_raise: {net_rx}"),
    );
    t += &l(
        s + 21,
        1,
        "hog-60",
        "..s1.",
        &format!("softirq_entry: {net_rx}"),
    );
    t += &l(
        s + 25,
        1,
        "hog-60",
        "..s1.",
        &format!("softirq_exit: {net_rx}"),
    );
    let hog_r = "prev_comm=hog prev_pid=60 prev_prio=101 prev_state=R";
    let to_rx = format!("sched_switch: {hog_r} ==> next_comm=rx next_pid=7 next_prio={prio}");
    for &(us, who, flags, body) in between.iter().filter(|b| b.0 < 3_000) {
        t += &l(s + us, 1, who, flags, body);
    }
    t += &l(s + 3_000, 1, "hog-60", "d..2.", &to_rx);
    for &(us, who, flags, body) in between.iter().filter(|b| b.0 >= 3_000) {
        t += &l(s + us, 1, who, flags, body);
    }
    t += &l(s + 3_010, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
    t += &l(s + 3_020, 1, "rx-7", "d..2.", "sched_switch: prev_comm=rx prev_pid=7 prev_prio=49 prev_state=S ==> next_comm=hog next_pid=60 next_prio=101");
    let r = udp_cycles(&t, Pairing::Fifo);
    assert_eq!(r.cycles.misses, 1);
    let wait = r.misses[0]
        .chain
        .iter()
        .find(|l| l.kind == "wakeup")
        .unwrap();
    assert!(
        wait.what.contains("since before the request"),
        "{}",
        wait.what
    );
    assert_eq!((wait.offset_ns, wait.duration_ns), (0, 3_000_000));
    r
}

#[test]
fn a_receiver_not_yet_waiting_is_blamed_as_a_normal_task_behind_the_hog() {
    // The receiver is a normal task again when woken (prio 120, as a thread is before it
    // makes itself real-time), and real-time (prio 49) once it reads. Its priority then,
    // not its last one, decides: the hog held it.
    let r = woken_before_the_request(120, &[]);
    let c = &r.causes[0];
    assert_eq!(
        (c.category.as_str(), c.culprit.pid),
        ("runqueue-wait", Some(60)),
        "{:?}",
        r.causes
    );
    assert!(!r.causes.iter().any(|c| c.category == "preemption-delay"));
}

#[test]
fn a_timer_softirq_in_the_receivers_context_does_not_hide_its_wait_for_the_cpu() {
    // Real-time this time, and the tick's TIMER softirq (raised in a hardirq over the hog
    // at +2.9 ms) runs at the interrupt exit over rx once it has the CPU: a timer run in
    // its context carries no datagram, so the chain is still rx's wait since before the
    // request, and a lower-priority task held a real-time one.
    let timer = |what: &str| format!("{what}: vec=1 [action=TIMER]");
    let (raise, entry, exit) = (
        timer("softirq_raise"),
        timer("softirq_entry"),
        timer("softirq_exit"),
    );
    let r = woken_before_the_request(
        49,
        &[
            (2_900, "hog-60", "d.h1.", &raise),
            (3_002, "rx-7", "..s1.", &entry),
            (3_004, "rx-7", "..s1.", &exit),
        ],
    );
    let m = &r.misses[0];
    assert!(
        !m.chain.iter().any(|l| l.what.contains("TIMER")),
        "{:?}",
        m.chain
    );
    let c = &r.causes[0];
    assert_eq!(c.category, "preemption-delay", "{:?}", r.causes);
    assert!(!r.causes.iter().any(|c| c.category == "device/external"));
}

/// Five usual datagrams; then one whose NET_RX is raised on CPU1 only 1.5 ms after the
/// send, by an interrupt over the hog, after CPU1 last recorded something at
/// `s + quiet_from` us (a wakeup the hog made).
fn late_interrupt_trace(quiet_from: u64) -> String {
    let l = testkit::line;
    let mut t = testkit::udp_deferral(5, &[], 0);
    let s = 1_010_000;
    let net_rx = "vec=3 [action=NET_RX]";
    t += &l(
        s,
        0,
        "tx-5",
        "....1",
        "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)",
    );
    t += &l(
        s + quiet_from,
        1,
        "hog-60",
        "d..2.",
        "sched_waking: comm=other pid=99 prio=120 target_cpu=000",
    );
    t += &l(
        s + 1_500,
        1,
        "hog-60",
        "d.h1.",
        &format!("softirq_raise: {net_rx}"),
    );
    t += &l(
        s + 1_501,
        1,
        "hog-60",
        "..s1.",
        &format!("softirq_entry: {net_rx}"),
    );
    t += &l(
        s + 1_503,
        1,
        "hog-60",
        "d.s3.",
        "sched_waking: comm=rx pid=7 prio=49 target_cpu=001",
    );
    t += &l(
        s + 1_505,
        1,
        "hog-60",
        "..s1.",
        &format!("softirq_exit: {net_rx}"),
    );
    t += &l(s + 1_507, 1, "hog-60", "d..2.", "sched_switch: prev_comm=hog prev_pid=60 prev_prio=101 prev_state=R ==> next_comm=rx next_pid=7 next_prio=49");
    t += &l(s + 1_510, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
    t += &l(s + 1_520, 1, "rx-7", "d..2.", "sched_switch: prev_comm=rx prev_pid=7 prev_prio=49 prev_state=S ==> next_comm=hog next_pid=60 next_prio=101");
    t
}

#[test]
fn an_interrupt_that_ends_a_cpus_silence_is_late_not_the_device() {
    // CPU1 recorded nothing from +100 us until the interrupt at +1.5 ms that raised the
    // NET_RX carrying the datagram: the interrupt came late or could not be taken there,
    // which the trace cannot tell apart. Up to the deadline, 1 ms minus the usual 15 us
    // of a cycle's uncovered time is that.
    let r = udp_cycles(&late_interrupt_trace(100), Pairing::Fifo);
    assert_eq!(r.cycles.misses, 1);
    let c = &r.causes[0];
    assert_eq!(
        (c.category.as_str(), c.culprit.cpu),
        ("irq-late", Some(1)),
        "{:?}",
        r.causes
    );
    let m = &r.misses[0];
    let gap = m.chain.iter().find(|l| l.kind == "gap").unwrap();
    assert!(
        gap.what
            .contains("CPU1 had recorded nothing for 1.400 ms before it while hog[60]"),
        "{}",
        gap.what
    );
    assert_eq!(gap.excess_ns, c.total_excess_ns);
    // The NET_RX that carried it on is in the chain, after the deadline.
    let net: Vec<_> = (m.chain.iter())
        .filter(|l| l.kind == "softirq" && l.what.contains("NET_RX"))
        .collect();
    assert!(
        !net.is_empty() && net.iter().all(|l| l.after_deadline && l.cpu == Some(1)),
        "{:?}",
        m.chain
    );
    // CPU1 recording something in the second half of the gap: its silence explains
    // too little, and the wait is the device's (or the peer's) again.
    let r = udp_cycles(&late_interrupt_trace(800), Pairing::Fifo);
    assert_eq!(r.causes[0].category, "device/external", "{:?}", r.causes);
}

#[test]
fn network_events_match_the_packet_by_skb_address() {
    // The deferral again, with each datagram's skb traced from sendto() (+5 us) to where
    // NET_RX took it: the link is the packet's own, not inferred from timing.
    let r = udp_cycles(
        &testkit::udp_deferral_net(20, &[5, 14], 5_000),
        Pairing::Fifo,
    );
    assert_eq!(r.cycles.misses, 6);
    let first = r
        .misses
        .iter()
        .find(|m| m.duration_ns == Some(5_035_000))
        .unwrap();
    let pending = first.chain.iter().find(|l| l.kind == "softirq").unwrap();
    assert!(
        pending.what.contains("matched by skb address"),
        "{}",
        pending.what
    );
    assert!(
        pending.what.contains("deferred to ksoftirqd/1"),
        "{}",
        pending.what
    );
    assert!(!r
        .misses
        .iter()
        .flat_map(|m| &m.chain)
        .any(|l| l.what.contains("inferred")));
    // Handed to the stack at +5 us, taken by ksoftirqd's run at +5.022 ms.
    assert_eq!((pending.offset_ns, pending.duration_ns), (5_000, 5_017_000));
    // The usual wait is the good datagrams' 16 us (enqueue +5 to NET_RX entry +21): the
    // window weighed is the same +21..+1000 us as without the events.
    let held: Vec<(&str, u64)> = (pending.held_by.iter())
        .map(|h| (h.category.as_str(), h.ns))
        .collect();
    assert_eq!(
        held,
        [
            ("deferred-to-ksoftirqd", 698_000),
            ("softirq-backlog", 281_000)
        ]
    );
    assert_eq!(r.causes[0].category, "deferred-to-ksoftirqd");
    assert_eq!(r.causes[0].culprit.pid, Some(60));
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

/// More requests open at once than the cutter keeps unpacked (5,000 datagrams sent 10 us
/// apart, all answered only after the last, first in, first out): each is packed while
/// still open and must still take its own reply.
#[test]
fn requests_packed_while_open_still_take_their_own_reply() {
    let n = 5_000u64;
    let mut text = String::new();
    let sendto = "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)";
    for k in 0..n {
        text += &testkit::line(1_000_000 + k * 10, 0, "tx-5", "....1", sendto);
    }
    // Reply k at +60 ms + 3 us x k: cycle k lasts 60 ms - 7 us x k.
    for k in 0..n {
        let at = 1_060_000 + k * 3;
        text += &testkit::line(at, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
    }
    let r = udp_cycles(&text, Pairing::Fifo);
    let c = &r.cycles;
    assert_eq!((c.count, c.replied, c.no_reply), (n, n, 0));
    assert_eq!(
        (c.max_ns, c.min_ns),
        (60_000_000, 60_000_000 - 7_000 * (n - 1))
    );
    assert_eq!(c.pairing.as_ref().unwrap().max_open, n);
    // The 1 ms deadline is missed by every cycle; each window keeps its own duration.
    assert_eq!(c.misses, n);
    let d: Vec<u64> = (r.windows.iter())
        .map(|w| w.end_ns().unwrap() - w.start_ns)
        .collect();
    assert!(d
        .iter()
        .enumerate()
        .all(|(k, &d)| d == 60_000_000 - 7_000 * k as u64));
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

/// A datagram sent while CPU1's NET_RX works a flood's backlog in the receiver's own
/// context (runs of 200 us, each re-raising the next) waits behind that backlog; the run
/// that hands it on is raised later by the steering interrupt. Seen on a live `demo
/// deferral` recording on a loaded host: that wait was told as the device's.
fn behind_a_backlog() -> String {
    let l = testkit::line;
    let net_rx = "vec=3 [action=NET_RX]";
    let sendto = "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)";
    let mut t = l(
        900_000,
        1,
        "<idle>-0",
        "d..2.",
        "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rx next_pid=7 next_prio=49",
    );
    let deliver = |t: &mut String, at: u64| {
        *t += &l(at, 1, "rx-7", "d.h1.", &format!("softirq_raise: {net_rx}"));
        *t += &l(
            at + 1,
            1,
            "rx-7",
            "..s1.",
            &format!("softirq_entry: {net_rx}"),
        );
        *t += &l(
            at + 10,
            1,
            "rx-7",
            "..s1.",
            &format!("softirq_exit: {net_rx}"),
        );
        *t += &l(at + 20, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
    };
    for i in 0..3 {
        let s = 1_000_000 + i * 2_000;
        t += &l(s, 0, "tx-5", "....1", sendto);
        deliver(&mut t, s + 20);
    }
    // The flood's backlog from T-300 us to T+1.5 ms, a budget of 200 us per run.
    const T: u64 = 1_010_000;
    t += &l(
        T - 300,
        1,
        "rx-7",
        "d.h1.",
        &format!("softirq_raise: {net_rx}"),
    );
    t += &l(
        T - 299,
        1,
        "rx-7",
        "..s1.",
        &format!("softirq_entry: {net_rx}"),
    );
    let mut at = T - 299;
    while at + 200 < T + 1_500 {
        at += 200;
        t += &l(
            at - 1,
            1,
            "rx-7",
            "..s1.",
            &format!("softirq_raise: {net_rx}"),
        );
        if at == T + 101 {
            t += &l(T, 0, "tx-5", "....1", sendto);
        }
        t += &l(
            at - 1,
            1,
            "rx-7",
            "..s1.",
            &format!("softirq_exit: {net_rx}"),
        );
        t += &l(at, 1, "rx-7", "..s1.", &format!("softirq_entry: {net_rx}"));
    }
    t += &l(
        T + 1_500,
        1,
        "rx-7",
        "..s1.",
        &format!("softirq_exit: {net_rx}"),
    );
    deliver(&mut t, T + 1_540);
    t
}

#[test]
fn a_datagram_queued_behind_a_busy_net_rx_is_blamed_on_that_softirq_not_the_device() {
    let r = udp_cycles(&behind_a_backlog(), Pairing::Fifo);
    assert_eq!((r.cycles.count, r.cycles.misses), (4, 1), "{:?}", r.notes);
    let m = &r.misses[0];
    assert_eq!(m.duration_ns, Some(1_560_000));
    let wait = (m.chain.iter())
        .find(|l| l.what.contains("busy with an earlier backlog"))
        .unwrap_or_else(|| panic!("{:#?}", m.chain));
    // From the sendto to the steering interrupt's raise; NET_RX ran all of it but the
    // 40 us after its last run and 1 us between each two of its eight runs.
    assert_eq!((wait.offset_ns, wait.duration_ns), (0, 1_540_000));
    assert!(
        wait.what.contains("8 runs (1.493 ms of the 1.540 ms"),
        "{}",
        wait.what
    );
    let held: Vec<(&str, u64)> = (wait.held_by.iter())
        .map(|h| (h.category.as_str(), h.ns))
        .collect();
    // Up to the deadline: NET_RX's runs, less the 1 us between each two (5 of them),
    // when the receiver itself was on the CPU.
    assert_eq!(held[0], ("softirq-backlog", 995_000));
    assert_eq!(held.iter().map(|h| h.1).sum::<u64>(), 1_000_000);
    assert_eq!(r.causes[0].category, "softirq-backlog");
    assert_eq!(r.causes[0].culprit.vector.as_deref(), Some("NET_RX"));
    assert!(
        !r.causes.iter().any(|c| c.category == "device/external"),
        "{:?}",
        r.causes
    );
}

#[test]
fn a_softirq_backlog_ranks_right_after_the_deferral_that_let_it_pile_up() {
    // As in the deferral demo under load: NET_RX's own runs on CPU1 hold more of the
    // misses (50 ms) than the task that kept ksoftirqd/1 off the CPU (40 ms), yet the
    // deferral is what let the backlog outlast its runs: it comes first, the backlog
    // right after it with its own time, then the rest by size.
    let on = |cpu: u32| Culprit {
        cpu: Some(cpu),
        ..Default::default()
    };
    let net_rx = |cpu: u32| Culprit {
        vector: Some("NET_RX".into()),
        ..on(cpu)
    };
    let hog = Culprit {
        comm: Some("hog".into()),
        pid: Some(60),
        ..on(1)
    };
    let mut causes = rustc_hash::FxHashMap::default();
    causes.insert(("softirq-backlog".to_string(), net_rx(1)), (61, 50_000_000));
    causes.insert(("deferred-to-ksoftirqd".to_string(), hog), (62, 40_000_000));
    let rx = Culprit {
        comm: Some("rx".into()),
        pid: Some(7),
        ..on(1)
    };
    causes.insert(("deferred-to-ksoftirqd".to_string(), rx), (38, 400_000));
    causes.insert(("hardirq".to_string(), on(1)), (3, 45_000_000));
    causes.insert(("softirq-backlog".to_string(), net_rx(0)), (2, 60_000_000));
    let rows = super::driver::rank(causes);
    let order: Vec<(&str, Option<u32>, u64)> = (rows.iter())
        .map(|r| (r.category.as_str(), r.culprit.cpu, r.total_excess_ns))
        .collect();
    assert_eq!(
        order,
        [
            // CPU0's backlog had no deferral there: it keeps its place by size.
            ("softirq-backlog", Some(0), 60_000_000),
            ("hardirq", Some(1), 45_000_000),
            ("deferred-to-ksoftirqd", Some(1), 40_000_000),
            ("softirq-backlog", Some(1), 50_000_000),
            ("deferred-to-ksoftirqd", Some(1), 400_000),
        ]
    );
}
