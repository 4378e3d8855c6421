//! Small hand-written traces for unit tests: ftrace text lines at microsecond times,
//! handed to the library as bytes and read the way every command reads.

use crate::pipeline::{self, Pass};
use crate::read::OpenOptions;

pub use whylate_read::testfiles::{every_trace_file, every_trace_of};

/// One ftrace line: `who` (`comm-pid`) on `cpu` at `us` microseconds.
pub fn line(us: u64, cpu: u32, who: &str, flags: &str, body: &str) -> String {
    format!(
        " {who} [{cpu:03}] {flags} {}.{:06}: {body}\n",
        us / 1_000_000,
        us % 1_000_000
    )
}

/// `text` with every third line garbled (its first `[` made a `{`): a third of the trace
/// not understood, far above the 1% that reports warn about.
pub fn garbled_every_third(text: &str) -> String {
    (text.lines().enumerate())
        .map(|(i, l)| match i % 3 {
            2 => format!("{}\n", l.replacen('[', "{", 1)),
            _ => format!("{l}\n"),
        })
        .collect()
}

/// `text` as an input held in memory (named `mem.txt`).
pub fn opened(text: &str) -> crate::read::Opened {
    opened_with(text, &OpenOptions::default())
}

/// `text` as an input held in memory, opened with `open`.
pub fn opened_with(text: &str, open: &OpenOptions) -> crate::read::Opened {
    crate::read::Opened::bytes("mem.txt", text.as_bytes().to_vec(), open).unwrap()
}

/// The timeline of `text`.
pub fn pass(text: &str) -> Pass {
    pipeline::read(
        opened(text),
        &OpenOptions::default(),
        &mut |_: &_, _: &_| (),
    )
    .unwrap()
}

/// A request/response workload on three CPUs: client `c-5` on CPU0 writes a request
/// (`sys_write`, count 7), queues work on CPU1 whose worker `kworker/1:1-40` wakes it,
/// and reads the reply. A bystander runs on CPU2 throughout. In the cycles listed in
/// `hogged`, `hog-60` holds CPU1 for `hog_us` before the worker gets it.
pub fn three_cpu_chain(cycles: usize, hogged: &[usize], hog_us: u64) -> String {
    let mut t = String::new();
    t += &line(999_000, 2, "<idle>-0", "d..2.", "sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=bystander next_pid=70 next_prio=120");
    let mut at = 1_000_000u64;
    for k in 0..cycles {
        let hog = hogged.contains(&k);
        if hog {
            t += &line(at - 50, 1, "<idle>-0", "d..2.", "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=60 next_prio=120");
        }
        t += &line(at, 0, "c-5", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
        t += &line(at + 10, 0, "c-5", "d..2.", &format!("workqueue_queue_work: work struct=0000000000002{k:03} function=reply_work workqueue=events req_cpu=1 cpu=1"));
        t += &line(
            at + 12,
            0,
            "c-5",
            "d..3.",
            "sched_waking: comm=kworker/1:1 pid=40 prio=120 target_cpu=001",
        );
        let run = if hog { at + 12 + hog_us } else { at + 20 };
        let prev = if hog {
            "prev_comm=hog prev_pid=60 prev_prio=120 prev_state=R"
        } else {
            "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R"
        };
        let who = if hog { "hog-60" } else { "<idle>-0" };
        t += &line(
            run,
            1,
            who,
            "d..2.",
            &format!("sched_switch: {prev} ==> next_comm=kworker/1:1 next_pid=40 next_prio=120"),
        );
        t += &line(
            run + 2,
            1,
            "kworker/1:1-40",
            ".....",
            &format!(
                "workqueue_execute_start: work struct 0000000000002{k:03}: function reply_work"
            ),
        );
        t += &line(
            run + 30,
            1,
            "kworker/1:1-40",
            ".....",
            &format!("workqueue_execute_end: work struct 0000000000002{k:03}: function reply_work"),
        );
        let next = if hog {
            "next_comm=hog next_pid=60 next_prio=120"
        } else {
            "next_comm=swapper/1 next_pid=0 next_prio=120"
        };
        t += &line(run + 32, 1, "kworker/1:1-40", "d..2.", &format!("sched_switch: prev_comm=kworker/1:1 prev_pid=40 prev_prio=120 prev_state=I ==> {next}"));
        if hog {
            t += &line(run + 40, 1, "hog-60", "d..2.", "sched_switch: prev_comm=hog prev_pid=60 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120");
        }
        t += &line(run + 50, 0, "c-5", "....1", "sys_read -> 0x1");
        t += &line(run + 60, 2, "bystander-70", "....1", "sys_getpid -> 0x46");
        at = run + 1_000;
    }
    t
}

/// The cycle of `three_cpu_chain`: the client's request write to its reply read.
pub fn chain_options(deadline_ns: Option<u64>) -> crate::explain::Options {
    use crate::selector::Selector;
    crate::explain::Options {
        from: Selector::parse("sys_enter_write[comm=c,count=7]").unwrap(),
        to: vec![Selector::parse("sys_exit_read[comm=c,ret>0]").unwrap()],
        deadline_ns,
        same: crate::explain::Same::Thread,
        pairing: Default::default(),
        arch: None,
        top: 3,
        learned: Default::default(),
    }
}

/// A client that gives up: `c-5` on CPU0 writes a request, the worker `kworker/1:1-40`
/// on CPU1 answers it. In the cycles in `hogged`, `hog-60` holds CPU1 for 8 ms first;
/// the client, still without a reply at +3.5 ms (+3.5 ms + 4 us x cycle), writes a
/// complaint (count 40), sleeps 20 ms until a timer interrupt wakes it, then reads the
/// stale reply. The usual reply takes 70 us.
pub fn giving_up_client(cycles: usize, hogged: &[usize]) -> String {
    let sw = |p: &str, n: &str| format!("sched_switch: {p} ==> {n}");
    let (idle1, hog) = (
        "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R",
        "prev_comm=hog prev_pid=60 prev_prio=120 prev_state=R",
    );
    let worker = "next_comm=kworker/1:1 next_pid=40 next_prio=120";
    let mut t = String::new();
    let mut at = 1_000_000u64;
    for k in 0..cycles {
        let hogged = hogged.contains(&k);
        if hogged {
            t += &line(
                at - 50,
                1,
                "<idle>-0",
                "d..2.",
                &sw(idle1, "next_comm=hog next_pid=60 next_prio=120"),
            );
        }
        t += &line(at, 0, "c-5", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
        t += &line(at + 10, 0, "c-5", "d..2.", &format!("workqueue_queue_work: work struct=0000000000003{k:03} function=reply_work workqueue=events req_cpu=1 cpu=1"));
        t += &line(
            at + 12,
            0,
            "c-5",
            "d..3.",
            "sched_waking: comm=kworker/1:1 pid=40 prio=120 target_cpu=001",
        );
        let run = if hogged { at + 8_000 } else { at + 20 };
        let (who, prev) = if hogged {
            ("hog-60", hog)
        } else {
            ("<idle>-0", idle1)
        };
        t += &line(run, 1, who, "d..2.", &sw(prev, worker));
        t += &line(
            run + 2,
            1,
            "kworker/1:1-40",
            ".....",
            &format!(
                "workqueue_execute_start: work struct 0000000000003{k:03}: function reply_work"
            ),
        );
        t += &line(
            run + 30,
            1,
            "kworker/1:1-40",
            ".....",
            &format!("workqueue_execute_end: work struct 0000000000003{k:03}: function reply_work"),
        );
        t += &line(
            run + 32,
            1,
            "kworker/1:1-40",
            "d..2.",
            &sw(
                "prev_comm=kworker/1:1 prev_pid=40 prev_prio=120 prev_state=I",
                "next_comm=swapper/1 next_pid=0 next_prio=120",
            ),
        );
        if !hogged {
            t += &line(run + 50, 0, "c-5", "....1", "sys_read -> 0x1");
            at += 10_000;
            continue;
        }
        // Gave up: the complaint, the sleep, the timer interrupt, the stale reply.
        let gave_up = at + 3_500 + 4 * k as u64;
        t += &line(
            gave_up,
            0,
            "c-5",
            "....1",
            "sys_write(fd: 2, buf: 0, count: 40)",
        );
        t += &line(gave_up + 5, 0, "c-5", "....1", "sys_write -> 0x28");
        t += &line(
            gave_up + 8,
            0,
            "c-5",
            "d..2.",
            &sw(
                "prev_comm=c prev_pid=5 prev_prio=120 prev_state=S",
                "next_comm=swapper/0 next_pid=0 next_prio=120",
            ),
        );
        let woke = gave_up + 20_008;
        t += &line(
            woke,
            0,
            "<idle>-0",
            "d.h1.",
            "irq_handler_entry: irq=0 name=timer",
        );
        t += &line(
            woke + 1,
            0,
            "<idle>-0",
            "d.h2.",
            "sched_waking: comm=c pid=5 prio=120 target_cpu=000",
        );
        t += &line(
            woke + 2,
            0,
            "<idle>-0",
            "d.h1.",
            "irq_handler_exit: irq=0 ret=handled",
        );
        t += &line(
            woke + 4,
            0,
            "<idle>-0",
            "d..2.",
            &sw(
                "prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R",
                "next_comm=c next_pid=5 next_prio=120",
            ),
        );
        t += &line(woke + 10, 0, "c-5", "....1", "sys_read -> 0x1");
        at = woke + 10_000;
    }
    t
}

/// A device answers a busy-polling client: `c-5` on CPU0 writes a request; 300 us later
/// the device's irq 16 (`ehci_hcd`) on CPU1 schedules a tasklet, which queues
/// `flush_to_ldisc` for `kworker/1:1-40`; the worker runs it and the client's read
/// returns 20 us after. In the cycles in `hogged`, `hog-60` holds CPU1 for 3 ms before
/// the worker runs; in those in `stormed`, storage irq 96 (`hpvsa0`) runs 5 ms on CPU1
/// from +100 us, and the device's interrupt comes right after it.
pub fn device_chain(cycles: usize, hogged: &[usize], stormed: &[usize]) -> String {
    let sw = |p: &str, n: &str| format!("sched_switch: {p} ==> {n}");
    let idle1 = "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R";
    let mut t = String::new();
    let mut at = 1_000_000u64;
    for k in 0..cycles {
        let hog = hogged.contains(&k);
        t += &line(at, 0, "c-5", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
        let mut irq = at + 300;
        if stormed.contains(&k) {
            t += &line(
                at + 100,
                1,
                "<idle>-0",
                "d.h1.",
                "irq_handler_entry: irq=96 name=hpvsa0",
            );
            t += &line(
                at + 5_100,
                1,
                "<idle>-0",
                "d.h1.",
                "irq_handler_exit: irq=96 ret=handled",
            );
            irq = at + 5_110;
        }
        let (who, prev) = if hog {
            t += &line(
                irq - 10,
                1,
                "<idle>-0",
                "d..2.",
                &sw(idle1, "next_comm=hog next_pid=60 next_prio=120"),
            );
            (
                "hog-60",
                "prev_comm=hog prev_pid=60 prev_prio=120 prev_state=R",
            )
        } else {
            ("<idle>-0", idle1)
        };
        t += &line(
            irq,
            1,
            who,
            "d.h1.",
            "irq_handler_entry: irq=16 name=ehci_hcd",
        );
        t += &line(
            irq + 1,
            1,
            who,
            "d.h1.",
            "softirq_raise: vec=6 [action=TASKLET]",
        );
        t += &line(
            irq + 2,
            1,
            who,
            "d.h1.",
            "irq_handler_exit: irq=16 ret=handled",
        );
        t += &line(
            irq + 3,
            1,
            who,
            "..s1.",
            "softirq_entry: vec=6 [action=TASKLET]",
        );
        t += &line(irq + 4, 1, who, "..s1.", &format!("workqueue_queue_work: work struct=0000000000004{k:03} function=flush_to_ldisc workqueue=events req_cpu=1 cpu=1"));
        t += &line(
            irq + 5,
            1,
            who,
            "d.s2.",
            "sched_waking: comm=kworker/1:1 pid=40 prio=120 target_cpu=001",
        );
        t += &line(
            irq + 6,
            1,
            who,
            "..s1.",
            "softirq_exit: vec=6 [action=TASKLET]",
        );
        let run = if hog { irq + 3_000 } else { irq + 10 };
        t += &line(
            run,
            1,
            who,
            "d..2.",
            &sw(prev, "next_comm=kworker/1:1 next_pid=40 next_prio=120"),
        );
        t += &line(
            run + 2,
            1,
            "kworker/1:1-40",
            ".....",
            &format!(
                "workqueue_execute_start: work struct 0000000000004{k:03}: function flush_to_ldisc"
            ),
        );
        t += &line(
            run + 10,
            1,
            "kworker/1:1-40",
            ".....",
            &format!(
                "workqueue_execute_end: work struct 0000000000004{k:03}: function flush_to_ldisc"
            ),
        );
        let next = if hog {
            "next_comm=hog next_pid=60 next_prio=120"
        } else {
            "next_comm=swapper/1 next_pid=0 next_prio=120"
        };
        t += &line(
            run + 12,
            1,
            "kworker/1:1-40",
            "d..2.",
            &sw(
                "prev_comm=kworker/1:1 prev_pid=40 prev_prio=120 prev_state=I",
                next,
            ),
        );
        if hog {
            t += &line(
                run + 20,
                1,
                "hog-60",
                "d..2.",
                &sw(
                    "prev_comm=hog prev_pid=60 prev_prio=120 prev_state=S",
                    "next_comm=swapper/1 next_pid=0 next_prio=120",
                ),
            );
        }
        t += &line(run + 30, 0, "c-5", "....1", "sys_read -> 0x1");
        at += 10_000;
    }
    t
}

/// Seed 002's deferral over the network stack, one datagram every 2 ms: sender `tx-5` on
/// CPU0 calls sendto(); the packet is steered to CPU1, where `hog-60` (nice -19) runs
/// throughout, and raised there as NET_RX from the steering IPI; its NET_RX run wakes
/// receiver `rx-7` (SCHED_FIFO, prio 49), whose recvfrom() returns the datagram. Usually
/// that takes 35 us. For a datagram in `late`, NET_RX runs 280 us on the flood's backlog,
/// re-raises itself and wakes ksoftirqd/1-22, which then waits behind the hog for
/// `defer_us`; the datagrams sent meanwhile queue behind it, and ksoftirqd's run
/// delivers them all at once (rx reads them back to back: overlapping requests). With
/// `net`, each datagram's skb is also traced: `net_dev_queue` in sendto() on CPU0 (+5 us)
/// and `netif_receive_skb` in the NET_RX run that takes it on CPU1.
pub fn udp_deferral(packets: usize, late: &[usize], defer_us: u64) -> String {
    udp_trace(packets, late, defer_us, false)
}

/// [`udp_deferral`] with the network events.
pub fn udp_deferral_net(packets: usize, late: &[usize], defer_us: u64) -> String {
    udp_trace(packets, late, defer_us, true)
}

fn udp_trace(packets: usize, late: &[usize], defer_us: u64, net: bool) -> String {
    let mut ev: Vec<(u64, String)> = Vec::new();
    let mut put = |us: u64, cpu: u32, who: &str, flags: &str, body: &str| {
        ev.push((us, line(us, cpu, who, flags, body)));
    };
    let sw = |p: &str, n: &str| format!("sched_switch: {p} ==> {n}");
    let hog_r = "prev_comm=hog prev_pid=60 prev_prio=101 prev_state=R";
    let hog_n = "next_comm=hog next_pid=60 next_prio=101";
    let rx_n = "next_comm=rx next_pid=7 next_prio=49";
    let rx_s = "prev_comm=rx prev_pid=7 prev_prio=49 prev_state=S";
    let k_n = "next_comm=ksoftirqd/1 next_pid=22 next_prio=120";
    let k_r = "prev_comm=ksoftirqd/1 prev_pid=22 prev_prio=120";
    let idle1 = "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R";
    let (net_rx, sendto) = (
        "vec=3 [action=NET_RX]",
        "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)",
    );
    let skb = |i: usize| format!("dev=lo skbaddr=0xffff8881000{:05x} len=38", i * 0x100);
    put(999_000, 1, "<idle>-0", "d..2.", &sw(idle1, hog_n));
    let t = |i: usize| 1_000_000 + i as u64 * 2_000;
    let mut i = 0;
    while i < packets {
        // This datagram and those sent while its NET_RX is deferred.
        let a = t(i) + 20;
        let d = a + defer_us;
        let deferred = late.contains(&i);
        let mut queued = 1;
        while deferred && i + queued < packets && t(i + queued) < d {
            queued += 1;
        }
        for q in i..i + queued {
            put(t(q), 0, "tx-5", "....1", sendto);
            if net {
                put(
                    t(q) + 5,
                    0,
                    "tx-5",
                    "....1",
                    &format!("net_dev_queue: {}", skb(q)),
                );
            }
        }
        put(a, 1, "hog-60", "d.h1.", &format!("softirq_raise: {net_rx}"));
        put(
            a + 1,
            1,
            "hog-60",
            "..s1.",
            &format!("softirq_entry: {net_rx}"),
        );
        let (who, at) = if deferred {
            // The backlog: one budget, re-raised, the rest left to ksoftirqd.
            put(
                a + 280,
                1,
                "hog-60",
                "..s1.",
                &format!("softirq_raise: {net_rx}"),
            );
            put(
                a + 281,
                1,
                "hog-60",
                "d.s3.",
                "sched_waking: comm=ksoftirqd/1 pid=22 prio=120 target_cpu=001",
            );
            put(
                a + 282,
                1,
                "hog-60",
                "..s1.",
                &format!("softirq_exit: {net_rx}"),
            );
            put(d, 1, "hog-60", "d..2.", &sw(hog_r, k_n));
            put(
                d + 2,
                1,
                "ksoftirqd/1-22",
                "..s1.",
                &format!("softirq_entry: {net_rx}"),
            );
            ("ksoftirqd/1-22", d)
        } else {
            ("hog-60", a)
        };
        for q in i..i + queued {
            if net {
                put(
                    at + 3,
                    1,
                    who,
                    "..s1.",
                    &format!("netif_receive_skb: {}", skb(q)),
                );
            }
        }
        put(
            at + 5,
            1,
            who,
            "d.s3.",
            "sched_waking: comm=rx pid=7 prio=49 target_cpu=001",
        );
        put(at + 8, 1, who, "..s1.", &format!("softirq_exit: {net_rx}"));
        let prev = if deferred {
            format!("{k_r} prev_state=R")
        } else {
            hog_r.to_string()
        };
        put(at + 10, 1, who, "d..2.", &sw(&prev, rx_n));
        for q in 0..queued as u64 {
            put(at + 15 + 2 * q, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
        }
        if deferred {
            put(at + 30, 1, "rx-7", "d..2.", &sw(rx_s, k_n));
            put(
                at + 35,
                1,
                "ksoftirqd/1-22",
                "d..2.",
                &sw(&format!("{k_r} prev_state=S"), hog_n),
            );
        } else {
            put(at + 20, 1, "rx-7", "d..2.", &sw(rx_s, hog_n));
        }
        i += queued;
    }
    ev.sort_by_key(|e| e.0);
    ev.into_iter().map(|e| e.1).collect()
}

/// One datagram of [`udp_starved`]: `None` is delivered at once by NET_RX at the IPI's
/// exit; `Some((wait_us, other_us))` is deferred: ksoftirqd/1 is woken 281 us after the
/// raise and gets CPU1 from the hog `wait_us` after it, runs NET_RX on the flood's packets
/// for `other_us`, then takes this datagram in its next run.
pub type Starved = Option<(u64, u64)>;

/// [`udp_deferral`]'s sender, receiver and hog, one datagram every 2 ms as `plan` says,
/// each deferred one with a flood (`flood-9` on CPU0, 4 datagrams sent 10 us after it)
/// ahead of it: NET_RX at the IPI's exit takes two of them in a 281 us run, re-raises and
/// wakes ksoftirqd/1, which waits behind the hog, takes the other two in its first run and
/// this datagram in its second. With `net`, every skb is traced (`net_dev_queue` on CPU0,
/// `netif_receive_skb` in the run that takes it).
pub fn udp_starved(plan: &[Starved], net: bool) -> String {
    let mut ev: Vec<(u64, String)> = Vec::new();
    let mut put = |us: u64, cpu: u32, who: &str, flags: &str, body: &str| {
        ev.push((us, line(us, cpu, who, flags, body)));
    };
    let sw = |p: &str, n: &str| format!("sched_switch: {p} ==> {n}");
    let hog_r = "prev_comm=hog prev_pid=60 prev_prio=101 prev_state=R";
    let hog_n = "next_comm=hog next_pid=60 next_prio=101";
    let rx_n = "next_comm=rx next_pid=7 next_prio=49";
    let rx_s = "prev_comm=rx prev_pid=7 prev_prio=49 prev_state=S";
    let k_n = "next_comm=ksoftirqd/1 next_pid=22 next_prio=120";
    let k_r = "prev_comm=ksoftirqd/1 prev_pid=22 prev_prio=120";
    let idle1 = "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R";
    let net_rx = "vec=3 [action=NET_RX]";
    let sendto = "sys_sendto(fd: 4, buff: 0, len: 10, flags: 0, addr: 0, addr_len: 10)";
    let skb = |i: usize| format!("dev=lo skbaddr=0xffff8881000{:05x} len=38", i * 0x100);
    let wake = |c: &str| format!("sched_waking: comm={c} target_cpu=001");
    put(999_000, 1, "<idle>-0", "d..2.", &sw(idle1, hog_n));
    for (i, step) in plan.iter().enumerate() {
        let t = 1_000_000 + i as u64 * 2_000;
        let a = t + 20;
        put(t, 0, "tx-5", "....1", sendto);
        // The flood's skbs are numbered after every datagram's.
        let flood = |j: usize| skb(plan.len() + 4 * i + j);
        if net {
            put(
                t + 5,
                0,
                "tx-5",
                "....1",
                &format!("net_dev_queue: {}", skb(i)),
            );
            for j in 0..4 * step.is_some() as usize {
                let q = format!("net_dev_queue: {}", flood(j));
                put(t + 10 + j as u64, 0, "flood-9", "....1", &q);
            }
        }
        let recv = |put: &mut dyn FnMut(u64, u32, &str, &str, &str), at: u64, who: &str| {
            if net {
                put(
                    at + 1,
                    1,
                    who,
                    "..s1.",
                    &format!("netif_receive_skb: {}", skb(i)),
                );
            }
            put(at + 2, 1, who, "d.s3.", &wake("rx pid=7 prio=49"));
            put(at + 3, 1, who, "..s1.", &format!("softirq_exit: {net_rx}"));
        };
        put(a, 1, "hog-60", "d.h1.", &format!("softirq_raise: {net_rx}"));
        put(
            a + 1,
            1,
            "hog-60",
            "..s1.",
            &format!("softirq_entry: {net_rx}"),
        );
        let Some((wait, other)) = *step else {
            recv(&mut put, a + 1, "hog-60");
            put(a + 10, 1, "hog-60", "d..2.", &sw(hog_r, rx_n));
            put(a + 15, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
            put(a + 20, 1, "rx-7", "d..2.", &sw(rx_s, hog_n));
            continue;
        };
        let k = "ksoftirqd/1-22";
        for (j, at) in [
            (0, a + 100),
            (1, a + 150),
            (2, a + wait + 10),
            (3, a + wait + 20),
        ] {
            if net {
                let who = if j < 2 { "hog-60" } else { k };
                put(
                    at,
                    1,
                    who,
                    "..s1.",
                    &format!("netif_receive_skb: {}", flood(j)),
                );
            }
        }
        put(
            a + 280,
            1,
            "hog-60",
            "..s1.",
            &format!("softirq_raise: {net_rx}"),
        );
        put(
            a + 281,
            1,
            "hog-60",
            "d.s3.",
            &wake("ksoftirqd/1 pid=22 prio=120"),
        );
        put(
            a + 282,
            1,
            "hog-60",
            "..s1.",
            &format!("softirq_exit: {net_rx}"),
        );
        let k0 = a + wait;
        put(k0, 1, "hog-60", "d..2.", &sw(hog_r, k_n));
        put(k0 + 2, 1, k, "..s1.", &format!("softirq_entry: {net_rx}"));
        put(
            k0 + other - 2,
            1,
            k,
            "..s1.",
            &format!("softirq_raise: {net_rx}"),
        );
        put(
            k0 + other,
            1,
            k,
            "..s1.",
            &format!("softirq_exit: {net_rx}"),
        );
        let run = k0 + other + 1;
        put(run, 1, k, "..s1.", &format!("softirq_entry: {net_rx}"));
        recv(&mut put, run, k);
        put(
            run + 4,
            1,
            k,
            "d..2.",
            &sw(&format!("{k_r} prev_state=R"), rx_n),
        );
        put(run + 6, 1, "rx-7", "....1", "sys_recvfrom -> 0xa");
        put(run + 14, 1, "rx-7", "d..2.", &sw(rx_s, k_n));
        put(
            run + 17,
            1,
            k,
            "d..2.",
            &sw(&format!("{k_r} prev_state=S"), hog_n),
        );
    }
    ev.sort_by_key(|e| e.0);
    ev.into_iter().map(|e| e.1).collect()
}

/// What holds the lock in one cycle of [`mutex_chain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// b lets it go after 100 us.
    Short,
    /// x (RT 10) preempts b inside its hold for 2 ms: b lets it go at +2.1 ms.
    Preempted,
    /// b simply holds it 2.1 ms.
    Long,
    /// b blocks in futex on c3 at +30 us; x preempts c3 for 2 ms; c3 wakes b at +2.06
    /// ms, b lets the lock go at +2.1 ms.
    TwoDeep,
    /// An interrupt on CPU1 wakes the client at +2.1 ms (no task woke it).
    Irq,
    /// b sleeps in clock_nanosleep from +30 us until a timer interrupt wakes it at
    /// +2.06 ms, then lets the lock go at +2.1 ms (the holder asleep on its own timer).
    Asleep,
    /// Data that contradicts itself: b blocks at +25 us and the client, asleep since +5
    /// us, wakes it at +50 us; b wakes the client at +2.1 ms. A wait cycle.
    Cycle,
}

/// A lock between a real-time client and a normal holder: `c-5` (RT 50) on CPU0 writes a
/// request (the cycle's start), blocks in futex until `b-20` (nice 0) on CPU1 lets the
/// lock go and wakes it, then reads (the cycle's end). `x-45` (RT 10) and `c3-30`
/// (nice 0) share CPU1 as each cycle's [`Hold`] says. Cycles start 10 ms apart.
pub fn mutex_chain(plan: &[Hold]) -> String {
    let sw = |us, cpu, who: &str, prev: &str, state: &str, next: &str| {
        let (pc, pp, pr) = task(prev);
        let (nc, np, nr) = task(next);
        line(us, cpu, who, "d..2.", &format!("sched_switch: prev_comm={pc} prev_pid={pp} prev_prio={pr} prev_state={state} ==> next_comm={nc} next_pid={np} next_prio={nr}"))
    };
    let wake = |us, cpu, who: &str, flags: &str, whom: &str, target: u32| {
        let (c, p, r) = task(whom);
        line(
            us,
            cpu,
            who,
            flags,
            &format!("sched_waking: comm={c} pid={p} prio={r} target_cpu={target:03}"),
        )
    };
    let mut t = sw(999_000, 1, "<idle>-0", "swapper/1-0", "R", "b-20");
    let mut at = 1_000_000u64;
    for &h in plan {
        t += &line(at, 0, "c-5", "....1", "sys_write(fd: 3, buf: 0, count: 7)");
        t += &line(at + 1, 0, "c-5", "....1", "sys_write -> 0x7");
        t += &line(
            at + 2,
            0,
            "c-5",
            "....1",
            "sys_futex(uaddr: 3e8, op: 80, val: 2)",
        );
        t += &sw(at + 5, 0, "c-5", "c-5", "S", "swapper/0-0");
        let woke = at + 2_100;
        let unlock = |t: &mut String, us| {
            *t += &line(
                us - 1,
                1,
                "b-20",
                "....1",
                "sys_futex(uaddr: 3e8, op: 81, val: 1)",
            );
            *t += &wake(us, 1, "b-20", "d..3.", "c-5", 0);
            *t += &line(us + 1, 1, "b-20", "....1", "sys_futex -> 0x1");
        };
        match h {
            Hold::Short => unlock(&mut t, at + 100),
            Hold::Long => unlock(&mut t, woke),
            Hold::Preempted => {
                t += &wake(at + 49, 1, "b-20", "d.h1.", "x-45", 1);
                t += &sw(at + 50, 1, "b-20", "b-20", "R+", "x-45");
                t += &sw(at + 2_050, 1, "x-45", "x-45", "S", "b-20");
                unlock(&mut t, woke);
            }
            Hold::TwoDeep => {
                t += &line(
                    at + 20,
                    1,
                    "b-20",
                    "....1",
                    "sys_futex(uaddr: 7d0, op: 80, val: 2)",
                );
                t += &sw(at + 30, 1, "b-20", "b-20", "S", "c3-30");
                t += &wake(at + 49, 1, "c3-30", "d.h1.", "x-45", 1);
                t += &sw(at + 50, 1, "c3-30", "c3-30", "R+", "x-45");
                t += &sw(at + 2_050, 1, "x-45", "x-45", "S", "c3-30");
                t += &wake(at + 2_060, 1, "c3-30", "d..3.", "b-20", 1);
                t += &sw(at + 2_065, 1, "c3-30", "c3-30", "S", "b-20");
                t += &line(at + 2_066, 1, "b-20", "....1", "sys_futex -> 0x0");
                unlock(&mut t, woke);
            }
            Hold::Asleep => {
                t += &line(
                    at + 20,
                    1,
                    "b-20",
                    "....1",
                    "sys_clock_nanosleep(which_clock: 1, flags: 0, rqtp: 7ffd0, rmtp: 0)",
                );
                t += &sw(at + 30, 1, "b-20", "b-20", "S", "swapper/1-0");
                t += &wake(at + 2_060, 1, "<idle>-0", "d.h1.", "b-20", 1);
                t += &sw(at + 2_065, 1, "<idle>-0", "swapper/1-0", "R", "b-20");
                t += &line(at + 2_066, 1, "b-20", "....1", "sys_clock_nanosleep -> 0x0");
                unlock(&mut t, woke);
            }
            Hold::Cycle => {
                t += &line(
                    at + 20,
                    1,
                    "b-20",
                    "....1",
                    "sys_futex(uaddr: 7d0, op: 80, val: 2)",
                );
                t += &sw(at + 25, 1, "b-20", "b-20", "S", "swapper/1-0");
                t += &wake(at + 50, 0, "c-5", "d..3.", "b-20", 1);
                t += &sw(at + 55, 1, "<idle>-0", "swapper/1-0", "R", "b-20");
                t += &line(at + 56, 1, "b-20", "....1", "sys_futex -> 0x0");
                unlock(&mut t, woke);
            }
            Hold::Irq => {
                t += &line(
                    woke - 2,
                    1,
                    "b-20",
                    "d.h1.",
                    "irq_handler_entry: irq=30 name=dev",
                );
                t += &wake(woke, 1, "b-20", "d.h1.", "c-5", 0);
                t += &line(
                    woke + 2,
                    1,
                    "b-20",
                    "d.h1.",
                    "irq_handler_exit: irq=30 ret=handled",
                );
            }
        }
        let back = if h == Hold::Short { at + 100 } else { woke };
        t += &sw(back + 5, 0, "<idle>-0", "swapper/0-0", "R", "c-5");
        t += &line(back + 6, 0, "c-5", "....1", "sys_futex -> 0x0");
        t += &line(back + 10, 0, "c-5", "....1", "sys_read -> 0x1");
        t += &line(
            back + 12,
            0,
            "c-5",
            "....1",
            "sys_futex(uaddr: 3e8, op: 81, val: 1)",
        );
        t += &line(back + 13, 0, "c-5", "....1", "sys_futex -> 0x0");
        at += 10_000;
    }
    t
}

/// `comm-pid` with its kernel priority in [`mutex_chain`].
fn task(who: &str) -> (&str, &str, u32) {
    let (c, p) = who.rsplit_once('-').unwrap_or((who, "0"));
    let prio = match c {
        "c" => 49,
        "x" => 89,
        _ => 120,
    };
    (c, p, prio)
}

/// A guest's CPU1 whose kernel traces switches into idle but none out of it: p sleeps
/// and an hrtimer wakes it from idle three times. Its wait ends at its first event
/// (a `sys_exit`), which comes 20 us after the CPU's last event, 300 us after it,
/// and 20 us after a traced 600 us interrupt. With `lost`, later, q on CPU0 waits
/// across a lost-events marker, its switch-in traced.
pub fn idle_exits_untraced(lost: bool) -> String {
    let mut t = String::new();
    let to_idle = "sched_switch: prev_comm=p prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120";
    for (k, (gap, irq)) in [(20, 0), (300, 0), (20, 600)].into_iter().enumerate() {
        let at = 1_000_000 + k as u64 * 10_000;
        t += &line(at, 1, "p-7", "d..2.", to_idle);
        t += &line(
            at + 1000,
            1,
            "<idle>-0",
            "d.h1.",
            "hrtimer_expire_entry: hrtimer=00000000000000aa function=hrtimer_wakeup now=9001000000",
        );
        t += &line(
            at + 1001,
            1,
            "<idle>-0",
            "d.h2.",
            "sched_waking: comm=p pid=7 prio=120 target_cpu=001",
        );
        t += &line(
            at + 1002,
            1,
            "<idle>-0",
            "d.h1.",
            "hrtimer_expire_exit: hrtimer=00000000000000aa",
        );
        let mut last = at + 1002;
        if irq > 0 {
            t += &line(
                at + 1005,
                1,
                "<idle>-0",
                "d.h1.",
                "irq_handler_entry: irq=16 name=dev",
            );
            last = at + 1005 + irq;
            t += &line(
                last,
                1,
                "<idle>-0",
                "d.h1.",
                "irq_handler_exit: irq=16 ret=handled",
            );
        }
        t += &line(last + gap, 1, "p-7", "....1", "sys_exit: NR 230 = 0");
    }
    if lost {
        let at = 1_100_000;
        t += &line(at, 0, "q-8", "d..2.", "sched_switch: prev_comm=q prev_pid=8 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120");
        t += &line(
            at + 100,
            0,
            "<idle>-0",
            "d.h2.",
            "sched_waking: comm=q pid=8 prio=120 target_cpu=000",
        );
        t += "CPU:0 [LOST 5 EVENTS]\n";
        t += &line(at + 150, 0, "<idle>-0", "d..2.", "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=q next_pid=8 next_prio=120");
    }
    t
}

/// Where the JSON reports `a` (whole) and `b` (in windows) differ: each path, both values.
pub fn json_differences(
    a: &serde_json::Value,
    b: &serde_json::Value,
    at: String,
    out: &mut Vec<String>,
) {
    match (a, b) {
        (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let n = serde_json::Value::Null;
                let (p, q) = (x.get(k).unwrap_or(&n), y.get(k).unwrap_or(&n));
                json_differences(p, q, format!("{at}.{k}"), out);
            }
        }
        (serde_json::Value::Array(x), serde_json::Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                json_differences(p, q, format!("{at}[{i}]"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{at}: whole {a} windows {b}")),
    }
}

#[cfg(test)]
mod tests {
    /// The CLI's page test reads a committed copy of the giving-up client: it is this
    /// fixture, under a comment header.
    #[test]
    fn the_give_up_file_is_the_giving_up_client() {
        let f = include_str!("../tests/data/give-up-client.txt");
        let body: String = (f.lines())
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(body, super::giving_up_client(8, &[2, 5]));
    }
}
