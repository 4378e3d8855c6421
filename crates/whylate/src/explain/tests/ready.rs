//! A cycle's ready time: a reply ready while its reader slept, gave up or was woken by
//! its own timeout is measured until it was ready, with the read time beside it.

use super::*;

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
            (c.category.id(), c.culprit.pid),
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
    let run = |t: &str| explain(crate::testkit::opened(t), &OpenOptions::default(), &o).unwrap();
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

/// `giving_up_client` as other recordings show it: the client's 20 ms sleep traced as
/// `sleep` (`named`: syscalls events, `raw`: raw_syscalls numbers on x86_64, none: not
/// traced), and its timer interrupt with its handler events or without them (x86's local
/// timer has none: only the wakeup's hardirq flag says where it came from).
fn slept_as(sleep: &str, handler: bool) -> String {
    let mut out = String::new();
    for l in testkit::giving_up_client(8, &[2, 5]).lines() {
        let ts = l.split_whitespace().nth(3).unwrap_or("");
        let c = |body: &str| format!(" c-5 [000] ....1 {ts} {body}\n");
        if !handler && l.contains("irq_handler_") {
            continue;
        }
        if l.contains("sys_read -> 0x1") && out.contains("prev_pid=5 prev_prio=120 prev_state=S") {
            // The sleep returned just before the stale read.
            out += &match sleep {
                "named" => c("sys_clock_nanosleep -> 0x0"),
                "raw" => c("sys_exit: NR 230 = 0"),
                "nanosleep" => c("sys_exit: NR 35 = 0"),
                _ => String::new(),
            };
        }
        out += l;
        out += "\n";
        if l.contains("sys_write -> 0x28") {
            out += &match sleep {
                "named" => c("sys_clock_nanosleep(which_clock: 1, flags: 0, rqtp: 7ffd0, rmtp: 0)"),
                "raw" => c("sys_enter: NR 230 (1, 0, 7ffd0, 0, 0, 0)"),
                "nanosleep" => c("sys_enter: NR 35 (7ffd0, 0, 0, 0, 0, 0)"),
                _ => String::new(),
            };
        }
    }
    out
}

#[test]
fn a_reader_asleep_in_nanosleep_is_woken_by_its_own_timer_whatever_wakes_it() {
    // Every shape: the replies of the two hogged cycles were ready at +8.030 ms and read
    // at +23.526 / +23.538 ms, where the trace can tell the reader slept on its timer.
    let own = (8_030_000, Some((2, 23_538_000)));
    let unknown = (23_538_000, None);
    for sleep in ["named", "raw", "nanosleep", "none"] {
        for handler in [true, false] {
            let text = slept_as(sleep, handler);
            let r = cycles_of(&text, Some(3_500_000));
            let got = (
                r.cycles.max_ns,
                r.cycles.read.as_ref().map(|x| (x.later, x.max_ns)),
            );
            // A wakeup by an unnamed interrupt, the reader's sleep untraced: a device's
            // delivery as well as a timer, so no claim.
            let want = if handler || sleep != "none" {
                own
            } else {
                unknown
            };
            assert_eq!(got, want, "sleep {sleep}, handler events {handler}");
            if want == own {
                let m = &r.misses[0];
                let ready = m.chain.iter().find(|l| l.kind == "ready").unwrap();
                if sleep != "none" {
                    assert!(
                        ready.what.contains("c[5] was in ") && ready.what.contains("nanosleep()"),
                        "{}",
                        ready.what
                    );
                }
            }
        }
    }
}
