//! The explain engine on network traces built for it (datagrams over NET_RX, deferred
//! to ksoftirqd, queued behind a backlog, paired first in first out or by a key field):
//! each test says what the trace holds and asserts the numbers the explanation must give.

use crate::explain::*;
use crate::read::OpenOptions;
use crate::testkit;

/// `udp_deferral` cut from the sender's sendto() to the receiver's recvfrom() return.
pub(crate) fn udp_cycles(text: &str, pairing: Pairing) -> ExplainReport {
    use crate::selector::Selector;
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
    explain(crate::testkit::opened(text), &OpenOptions::default(), &o).unwrap()
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
        .map(|h| (h.category.id(), h.ns))
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
    // The datagrams queued behind it waited only for ksoftirqd, runnable since before they
    // came, all of it excess: over all six misses the starving task has 2 x (698 + 1000 +
    // 1000) us, NET_RX's own backlog 2 x 281 us.
    assert_eq!(c.total_excess_ns, 5_396_000, "{:?}", r.causes);
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
    let run = |pairing| {
        let o = Options {
            pairing,
            ..testkit::chain_options(Some(500_000))
        };
        let r = explain(crate::testkit::opened(&t), &OpenOptions::default(), &o).unwrap();
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
    let run = |key: &str| {
        let o = Options {
            pairing: Pairing::Key(key.into()),
            ..testkit::chain_options(Some(500_000))
        };
        explain(
            crate::testkit::opened(&testkit::three_cpu_chain(3, &[], 0)),
            &OpenOptions::default(),
            &o,
        )
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
        (c.category.id(), c.culprit.pid),
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
    // The kernel's delay is still charged to the task that ran, so that a recorder's
    // thread there is known as the recorder.
    assert_eq!(
        (c.culprit.pid, c.culprit.label().as_str()),
        (Some(60), "non-preemptible kernel code while hog[60] ran")
    );
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
        (c.category.id(), c.culprit.cpu),
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
        .map(|h| (h.category.id(), h.ns))
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

/// A datagram sent while CPU1's NET_RX works a flood's backlog in the receiver's own
/// context (runs of 200 us, each re-raising the next) waits behind that backlog; the run
/// that hands it on is raised later by the steering interrupt. Seen on a live `demo
/// deferral` recording on a loaded host: that wait was told as the device's.
pub(crate) fn behind_a_backlog() -> String {
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
        .map(|h| (h.category.id(), h.ns))
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
    causes.insert(
        (crate::explain::causes::SOFTIRQ_BACKLOG, net_rx(1)),
        (61, 50_000_000),
    );
    causes.insert(
        (crate::explain::causes::DEFERRED_TO_KSOFTIRQD, hog),
        (62, 40_000_000),
    );
    let rx = Culprit {
        comm: Some("rx".into()),
        pid: Some(7),
        ..on(1)
    };
    causes.insert(
        (crate::explain::causes::DEFERRED_TO_KSOFTIRQD, rx),
        (38, 400_000),
    );
    causes.insert((crate::explain::causes::HARDIRQ, on(1)), (3, 45_000_000));
    causes.insert(
        (crate::explain::causes::SOFTIRQ_BACKLOG, net_rx(0)),
        (2, 60_000_000),
    );
    let rows = crate::explain::driver::rank(causes, &Default::default(), &Default::default());
    let order: Vec<(&str, Option<u32>, u64)> = (rows.iter())
        .map(|r| (r.category.id(), r.culprit.cpu, r.total_excess_ns))
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

/// Ten datagrams on [`testkit::udp_starved`]: three delivered at once, five deferred that
/// ksoftirqd/1 still delivers in time (it gets CPU1 930 us after the raise), two late
/// ones (the 6th and the 10th) whose ksoftirqd gets CPU1 at +700 us and then works the
/// flood's packets for 400 us before it takes the datagram.
fn starved_plan() -> Vec<testkit::Starved> {
    let (n, ok, late) = (None, Some((930, 40)), Some((700, 400)));
    vec![n, ok, n, ok, ok, late, n, ok, ok, late]
}

/// A hold as (category, label, ns, why).
type HoldRow<'a> = (&'a str, String, u64, Option<&'a str>);

/// The late datagram's pending link in `r` (the first miss), and its holds.
fn starved_pending(r: &ExplainReport) -> (&Link, Vec<HoldRow<'_>>) {
    let pending = (r.misses[0].chain.iter())
        .find(|l| l.kind == "softirq" && l.what.contains("deferred to ksoftirqd/1"))
        .unwrap();
    let held = (pending.held_by.iter())
        .map(|h| {
            let label = h.culprit.label_in(h.category);
            (h.category.id(), label, h.ns, h.why.as_deref())
        })
        .collect();
    (pending, held)
}

#[test]
fn a_deferral_good_cycles_also_had_is_still_split_over_the_hog_the_backlog_and_the_softirq() {
    // Five datagrams delivered just in time after a 930 us deferral made the usual pending
    // wait 971 us (raise +20 to ksoftirqd's run +991): the late ones' 980 us up to the
    // deadline were 9 us over it, under the 10 us that counts, and the link had no holds.
    // A deferral is never usual: only the 281 us before ksoftirqd was woken (+20..+301)
    // is compared with the good cycles' same part (281 us), and from +301 all is excess.
    let r = udp_cycles(&testkit::udp_starved(&starved_plan(), false), Pairing::Fifo);
    assert_eq!(r.cycles.misses, 2);
    let (pending, held) = starved_pending(&r);
    assert_eq!(
        (pending.offset_ns, pending.duration_ns, pending.usual_ns),
        (20_000, 1_101_000, Some(281_000))
    );
    assert_eq!(pending.excess_ns, 699_000);
    // +301..+1000: NET_RX's run at the IPI's exit ends at +302 (1 us), the hog holds the
    // runnable ksoftirqd off until +720 (418 us), ksoftirqd's own 2 us before its first
    // run, which works the flood's packets from +722 past the deadline (278 us).
    assert_eq!(
        held,
        [
            (
                "deferred-to-ksoftirqd",
                "hog[60] (nice -19)".into(),
                418_000,
                None
            ),
            ("softirq-backlog", "softirq NET_RX".into(), 279_000, None),
            ("softirq", "NET_RX".into(), 2_000, None),
        ]
    );
    let rows: Vec<(&str, u64)> = (r.causes.iter())
        .map(|c| (c.category.id(), c.total_excess_ns))
        .collect();
    assert_eq!(
        rows,
        [
            ("deferred-to-ksoftirqd", 836_000),
            ("softirq-backlog", 558_000),
            ("softirq", 4_000)
        ]
    );
}

#[test]
fn a_deferral_with_packet_events_names_whose_packets_ksoftirqd_ran_first() {
    // The same with each skb traced: the wait begins at the enqueue (+5), its usual part
    // is the good cycles' +5..+301 (296 us), and the same 699 us from +301 are split the
    // same way; the backlog says whose packets NET_RX took meanwhile (the two of the flood
    // ksoftirqd took at +730 and +740, before the deadline).
    let r = udp_cycles(&testkit::udp_starved(&starved_plan(), true), Pairing::Fifo);
    assert_eq!(r.cycles.misses, 2);
    let (pending, held) = starved_pending(&r);
    assert!(
        pending.what.contains("matched by skb address"),
        "{}",
        pending.what
    );
    assert_eq!(
        (pending.offset_ns, pending.usual_ns, pending.excess_ns),
        (5_000, Some(296_000), 699_000)
    );
    let why =
        "NET_RX took 2 other packet(s) on CPU1 meanwhile: 2 from flood[9] (matched by skb address)";
    assert_eq!(
        held,
        [
            (
                "deferred-to-ksoftirqd",
                "hog[60] (nice -19)".into(),
                418_000,
                None
            ),
            (
                "softirq-backlog",
                "softirq NET_RX".into(),
                279_000,
                Some(why)
            ),
            ("softirq", "NET_RX".into(), 2_000, None),
        ]
    );
    assert_eq!(r.causes[0].category, "deferred-to-ksoftirqd");
    assert_eq!(r.causes[0].culprit.pid, Some(60));
}
