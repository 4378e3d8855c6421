//! A softirq backlog whose root is a deferral before the work was queued: the backlog's
//! time goes to the task that kept ksoftirqd off the CPU (`Engine::backlog_root`).

use crate::explain::tests::net::{behind_a_backlog, udp_cycles};
use crate::explain::Pairing;
use crate::testkit;

/// [`behind_a_backlog`]'s receiver, but the backlog piled up before the datagram was
/// sent: rx-7 sleeps at T-3.4 ms, hog-60 takes CPU1, NET_RX raised at T-3.3 ms is deferred
/// to ksoftirqd/1, which waits behind hog until T-300 us, then works through the flood
/// in 200 us runs until T+1.5 ms; the datagram sent at T waits behind them, then wakes rx.
fn behind_a_deferred_backlog() -> String {
    let l = testkit::line;
    let net_rx = "vec=3 [action=NET_RX]";
    let sendto = "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)";
    let sw = |p: &str, n: &str| format!("sched_switch: {p} ==> {n}");
    let rx = "next_comm=rx next_pid=7 next_prio=49";
    let mut t = l(
        900_000,
        1,
        "<idle>-0",
        "d..2.",
        &sw(
            "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R",
            rx,
        ),
    );
    for i in 0..3 {
        let s = 1_000_000 + i * 2_000;
        t += &l(s, 0, "tx-5", "....1", sendto);
        t += &l(
            s + 20,
            1,
            "rx-7",
            "d.h1.",
            &format!("softirq_raise: {net_rx}"),
        );
        t += &l(
            s + 21,
            1,
            "rx-7",
            "..s1.",
            &format!("softirq_entry: {net_rx}"),
        );
        t += &l(
            s + 30,
            1,
            "rx-7",
            "..s1.",
            &format!("softirq_exit: {net_rx}"),
        );
        t += &l(s + 40, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
    }
    const T: u64 = 1_020_000;
    let k = "ksoftirqd/1-22";
    t += &l(
        T - 3_400,
        1,
        "rx-7",
        "....1",
        "sys_recvfrom(fd: 4, ubuf: 0, size: 10, flags: 0, addr: 0, addr_len: 0)",
    );
    t += &l(
        T - 3_399,
        1,
        "rx-7",
        "d..2.",
        &sw(
            "prev_comm=rx prev_pid=7 prev_prio=49 prev_state=S",
            "next_comm=hog next_pid=60 next_prio=120",
        ),
    );
    t += &l(
        T - 3_300,
        1,
        "hog-60",
        "d.h1.",
        &format!("softirq_raise: {net_rx}"),
    );
    t += &l(
        T - 3_299,
        1,
        "hog-60",
        "..s1.",
        "sched_waking: comm=ksoftirqd/1 pid=22 prio=120 target_cpu=001",
    );
    t += &l(
        T - 300,
        1,
        "hog-60",
        "d..2.",
        &sw(
            "prev_comm=hog prev_pid=60 prev_prio=120 prev_state=R+",
            "next_comm=ksoftirqd/1 next_pid=22 next_prio=120",
        ),
    );
    let mut at = T - 299;
    t += &l(at, 1, k, "..s1.", &format!("softirq_entry: {net_rx}"));
    while at + 200 < T + 1_500 {
        at += 200;
        t += &l(at - 1, 1, k, "..s1.", &format!("softirq_exit: {net_rx}"));
        if at == T + 101 {
            t += &l(T, 0, "tx-5", "....1", sendto);
            t += &l(
                T + 2,
                0,
                "tx-5",
                "d.h1.",
                &format!("softirq_raise: {net_rx}"),
            );
        }
        t += &l(at, 1, k, "..s1.", &format!("softirq_entry: {net_rx}"));
    }
    t += &l(
        T + 1_500,
        1,
        k,
        "..s2.",
        "sched_waking: comm=rx pid=7 prio=49 target_cpu=001",
    );
    t += &l(T + 1_501, 1, k, "..s1.", &format!("softirq_exit: {net_rx}"));
    t += &l(
        T + 1_502,
        1,
        k,
        "d..2.",
        &sw(
            "prev_comm=ksoftirqd/1 prev_pid=22 prev_prio=120 prev_state=R+",
            rx,
        ),
    );
    t += &l(T + 1_510, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
    t
}

#[test]
fn a_backlog_that_piled_up_while_ksoftirqd_waited_is_that_deferral() {
    let r = udp_cycles(&behind_a_deferred_backlog(), Pairing::Fifo);
    assert_eq!(r.cycles.misses, 1, "{:?} {:?}", r.cycles, r.notes);
    // The datagram waited behind NET_RX's runs only, but those worked through what had
    // queued while hog kept ksoftirqd/1 off CPU1 for 3 ms (woken at T-3.299 ms): the chain reaches hog.
    let c = &r.causes[0];
    assert_eq!(
        (c.category.id(), c.culprit.label()),
        ("deferred-to-ksoftirqd", "hog[60] (nice 0)".to_string()),
        "{:?}",
        r.causes
    );
    let why = (r.misses[0].chain.iter())
        .flat_map(|l| &l.held_by)
        .find_map(|h| h.why.clone())
        .unwrap_or_default();
    assert!(
        why.starts_with("the NET_RX backlog it waited behind piled up while ksoftirqd/1[22] waited 2.999 ms for CPU1 behind hog[60] (nice 0), until 300.0 us before this wait"),
        "{why}"
    );
    // Without the deferral (the original backlog, in the receiver's own context), the
    // backlog stays the vector's.
    let r = udp_cycles(&behind_a_backlog(), Pairing::Fifo);
    assert_eq!(r.causes[0].category, "softirq-backlog");
}
