//! Waits through other tasks (`explain/chain/waitfor.rs`) on `testkit::mutex_chain`: a
//! real-time client blocks on a lock a normal task holds.

use super::cycles_of;
use crate::testkit::{mutex_chain, Hold};

/// Six on-time cycles, then the given ones.
fn plan(late: &[Hold]) -> Vec<Hold> {
    let mut p = vec![Hold::Short; 6];
    p.extend_from_slice(late);
    p
}

#[test]
fn a_holder_kept_off_its_cpu_by_a_middle_priority_task_is_a_priority_inversion() {
    let r = cycles_of(&mutex_chain(&plan(&[Hold::Preempted])), Some(1_000_000));
    assert_eq!((r.cycles.count, r.cycles.misses), (7, 1));
    let c = &r.causes[0];
    assert_eq!(c.category, "priority-inversion", "{:?}", r.causes);
    assert_eq!(c.culprit.label(), "x[45] (RT 10)");
    // b was runnable from +50 us to +2.05 ms behind x; up to the 1 ms deadline that is
    // 950 us, against a usual of nothing (b never waited in on-time cycles).
    assert_eq!(c.total_excess_ns, 950_000, "{:?}", r.causes);
    let m = &r.misses[0];
    let wait = m.chain.iter().find(|l| l.kind == "wait-for").unwrap();
    assert_eq!(
        wait.what,
        "c[5] (RT 50) blocked in futex(WAIT) until b[20] (nice 0) woke it from CPU1"
    );
    assert_eq!((wait.offset_ns, wait.duration_ns), (5_000, 2_095_000));
    let held = &m
        .chain
        .iter()
        .find(|l| !l.held_by.is_empty())
        .unwrap()
        .held_by[0];
    assert_eq!(
        held.why.as_deref(),
        Some("c[5] (RT 50) waited for b[20] (nice 0), which x[45] (RT 10) (between the two) kept off CPU1")
    );
    assert!(
        r.advice[0].command.contains("PTHREAD_PRIO_INHERIT"),
        "{:?}",
        r.advice
    );
    assert!(
        r.advice[1]
            .command
            .starts_with("chrt -f -p 50 $(pgrep -x 'b')"),
        "{:?}",
        r.advice
    );
}

#[test]
fn a_holder_that_simply_holds_long_is_its_own_work() {
    let r = cycles_of(&mutex_chain(&plan(&[Hold::Long])), Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    assert!(
        r.causes.iter().all(|c| c.category != "priority-inversion"),
        "{:?}",
        r.causes
    );
    let c = &r.causes[0];
    assert_eq!(
        (c.category.id(), c.culprit.label().as_str()),
        ("on-cpu", "b[20] (nice 0)"),
        "{:?}",
        r.causes
    );
}

#[test]
fn a_wait_behind_a_wait_reaches_the_task_that_held_the_last_one() {
    let r = cycles_of(&mutex_chain(&plan(&[Hold::TwoDeep])), Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    let c = &r.causes[0];
    // c3 kept b waiting, and c (RT 50) behind it: x held c3 off CPU1.
    assert_eq!(
        (c.category.id(), c.culprit.label().as_str()),
        ("priority-inversion", "x[45] (RT 10)"),
        "{:?}",
        r.causes
    );
    let waits: Vec<&str> = (r.misses[0].chain.iter())
        .filter(|l| l.kind == "wait-for")
        .map(|l| l.what.as_str())
        .collect();
    assert_eq!(
        waits,
        [
            "c[5] (RT 50) blocked in futex(WAIT) until b[20] (nice 0) woke it from CPU1",
            "b[20] (nice 0) blocked in futex(WAIT) until c3[30] (nice 0) woke it from CPU1",
        ]
    );
}

#[test]
fn a_client_woken_by_an_interrupt_has_no_wait_for_a_task() {
    let r = cycles_of(&mutex_chain(&plan(&[Hold::Irq])), Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    assert!(r.misses[0].chain.iter().all(|l| l.kind != "wait-for"));
    assert!(
        r.causes.iter().all(|c| c.category != "priority-inversion"),
        "{:?}",
        r.causes
    );
}

#[test]
fn a_wait_cycle_in_contradictory_data_ends() {
    // c waits on b and (contradicting its sleep) wakes b meanwhile. The timeline takes
    // c's event as c back on its CPU (its wakeup untraced), so the waits left are b's
    // for c, whose waker is the chain's own task: followed once, the line ends there.
    let r = cycles_of(&mutex_chain(&plan(&[Hold::Cycle])), Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    let waits: Vec<&str> = (r.misses[0].chain.iter())
        .filter(|l| l.kind == "wait-for")
        .map(|l| l.what.as_str())
        .collect();
    assert_eq!(
        waits,
        ["b[20] (nice 0) blocked in futex(WAIT) until c[5] (RT 50) woke it from CPU0"]
    );
    assert!(!r.causes.is_empty());
}

#[test]
fn a_holder_asleep_on_its_own_timer_is_what_the_waiter_was_blocked_on() {
    // b sleeps in clock_nanosleep from +30 us to +2.06 ms holding the lock: the client's
    // wait is on b, asleep, which the trace shows; not time it cannot explain.
    let r = cycles_of(&mutex_chain(&plan(&[Hold::Asleep])), Some(1_000_000));
    assert_eq!(r.cycles.misses, 1);
    let c = &r.causes[0];
    assert_eq!(
        (c.category.id(), c.culprit.label()),
        ("blocked-on", "b[20] (nice 0)".to_string()),
        "{:?}",
        r.causes
    );
    assert!(r
        .causes
        .iter()
        .all(|c| c.category != "unknown" && c.category != "priority-inversion"));
    let gap = r.misses[0].chain.iter().find(|l| l.kind == "gap").unwrap();
    assert!(
        gap.what
            .starts_with("c[5] waited for b[20], itself asleep in clock_nanosleep()"),
        "{}",
        gap.what
    );
}

/// A periodic real-time task `p-7` (RT 50) on CPU0, 1 ms periods armed absolute: each
/// period it takes a lock. In period `blocked` the lock's holder `h-20` (nice 0) on CPU1
/// is preempted by `x-45` (RT 10) for 2 ms inside its hold, so p blocks in futex from
/// +20 us until h lets the lock go at +2.1 ms, and arms its next timer after that one's
/// expiry: the next period overran.
fn timer_through_a_lock(periods: u64, blocked: u64) -> String {
    use crate::testkit::line;
    let clk = |us: u64| us * 1_000;
    let mut t = String::new();
    let p_sw = |us, prev: &str, state: &str, next: &str| {
        line(us, 0, if prev == "p" { "p-7" } else { "<idle>-0" }, "d..2.", &format!("sched_switch: prev_comm={prev} prev_pid={} prev_prio={} prev_state={state} ==> next_comm={next} next_pid={} next_prio={}",
            if prev == "p" { 7 } else { 0 }, if prev == "p" { 49 } else { 120 },
            if next == "p" { 7 } else { 0 }, if next == "p" { 49 } else { 120 }))
    };
    let start = 1_000_000u64;
    t += &line(start - 10, 1, "<idle>-0", "d..2.", "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=h next_pid=20 next_prio=120");
    let mut arm_at = start;
    for k in 0..periods {
        let due = start + 10 + k * 1_000;
        let fire = due.max(arm_at + 5);
        t += &line(arm_at, 0, "p-7", "d..1.", &format!("hrtimer_start: hrtimer=00000000000000aa function=hrtimer_wakeup expires={} softexpires={} mode=ABS", clk(due), clk(due)));
        t += &line(
            arm_at + 1,
            0,
            "p-7",
            "....1",
            "sys_clock_nanosleep(which_clock: 1, flags: 1, rqtp: 7ffd0, rmtp: 0)",
        );
        t += &p_sw(arm_at + 2, "p", "S", "swapper/0");
        t += &line(
            fire,
            0,
            "<idle>-0",
            "d.h1.",
            &format!(
                "hrtimer_expire_entry: hrtimer=00000000000000aa function=hrtimer_wakeup now={}",
                clk(fire)
            ),
        );
        t += &line(
            fire + 1,
            0,
            "<idle>-0",
            "d.h2.",
            "sched_waking: comm=p pid=7 prio=49 target_cpu=000",
        );
        t += &line(
            fire + 2,
            0,
            "<idle>-0",
            "d.h1.",
            "hrtimer_expire_exit: hrtimer=00000000000000aa",
        );
        t += &p_sw(fire + 4, "swapper/0", "R", "p");
        t += &line(fire + 5, 0, "p-7", "....1", "sys_clock_nanosleep -> 0x0");
        let mut now = fire + 10;
        if k == blocked {
            t += &line(
                now,
                0,
                "p-7",
                "....1",
                "sys_futex(uaddr: 3e8, op: 80, val: 2)",
            );
            t += &p_sw(now + 10, "p", "S", "swapper/0");
            t += &line(
                now + 30,
                1,
                "h-20",
                "d.h1.",
                "sched_waking: comm=x pid=45 prio=89 target_cpu=001",
            );
            t += &line(now + 31, 1, "h-20", "d..2.", "sched_switch: prev_comm=h prev_pid=20 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=45 next_prio=89");
            t += &line(now + 2_031, 1, "x-45", "d..2.", "sched_switch: prev_comm=x prev_pid=45 prev_prio=89 prev_state=S ==> next_comm=h next_pid=20 next_prio=120");
            t += &line(
                now + 2_089,
                1,
                "h-20",
                "....1",
                "sys_futex(uaddr: 3e8, op: 81, val: 1)",
            );
            t += &line(
                now + 2_090,
                1,
                "h-20",
                "d..3.",
                "sched_waking: comm=p pid=7 prio=49 target_cpu=000",
            );
            t += &line(now + 2_091, 1, "h-20", "....1", "sys_futex -> 0x1");
            t += &p_sw(now + 2_095, "swapper/0", "R", "p");
            t += &line(now + 2_096, 0, "p-7", "....1", "sys_futex -> 0x0");
            now += 2_100;
        }
        arm_at = now + 10;
    }
    t
}

#[test]
fn a_timer_period_overrun_behind_a_preempted_lock_holder_is_a_priority_inversion() {
    let text = timer_through_a_lock(8, 3);
    let o = crate::explain::TimerOptions {
        task: Some(crate::measure::TaskSel::parse("p").unwrap()),
        deadline_ns: Some(300_000),
        top: 3,
    };
    let r = crate::explain::explain_timers(
        crate::testkit::opened(&text),
        &crate::read::OpenOptions::default(),
        &o,
    )
    .unwrap();
    assert!(r.cycles.misses >= 1, "{:?}", r.cycles);
    let c = &r.causes[0];
    assert_eq!(
        (c.category.id(), c.culprit.label()),
        ("priority-inversion", "x[45] (RT 10)".to_string()),
        "{:?}",
        r.causes
    );
    let m = &r.misses[0];
    let wait = m.chain.iter().find(|l| l.kind == "wait-for").unwrap();
    assert_eq!(
        wait.what,
        "p[7] (RT 50) blocked in futex(WAIT) until h[20] (nice 0) woke it from CPU1"
    );
    let over = m.chain.iter().find(|l| l.kind == "overrun").unwrap();
    assert!(
        over.what.contains("blocked until another task woke it"),
        "{}",
        over.what
    );
    // The wait on the lock is not the earlier period's late timer: x's 2 ms, from the
    // next expiry on, is the time; the holder's own 59 us after x left is its work.
    assert!(
        r.causes.iter().all(|c| c.category != "timer-irq-late"),
        "{:?}",
        r.causes
    );
    assert_eq!(c.total_excess_ns, 1_041_000);
    let h = r.causes.iter().find(|c| c.category == "on-cpu").unwrap();
    assert_eq!(
        (h.culprit.label(), h.total_excess_ns),
        ("h[20] (nice 0)".to_string(), 59_000)
    );
}

#[test]
fn automatic_mode_finds_the_inversion_a_blocked_waiter_suffered() {
    let auto = |late: &[Hold]| {
        let p = crate::testkit::pass(&mutex_chain(&plan(late)));
        crate::explain::analyze_auto(&p.tl, &p.strings, 3)
    };
    // The client (RT 50) blocked 2.095 ms on b, which x (RT 10) kept off CPU1 for 2 ms:
    // an outlier of its own, the inversion its cause.
    let r = auto(&[Hold::Preempted]);
    let c = &r.causes[0];
    assert_eq!(
        (c.category.id(), c.culprit.label(), c.total_excess_ns),
        ("priority-inversion", "x[45] (RT 10)".to_string(), 2_000_000),
        "{:?}",
        r.causes
    );
    let m = r
        .misses
        .iter()
        .find(|m| m.chain[0].kind == "wait-for")
        .unwrap();
    assert_eq!((m.tid, m.duration_ns), (5, Some(2_095_000)));
    // A holder that simply holds long, or one asleep itself: no inversion to find.
    for late in [Hold::Long, Hold::Asleep] {
        let r = auto(&[late]);
        assert!(
            r.causes.iter().all(|c| c.category != "priority-inversion"),
            "{late:?}: {:?}",
            r.causes
        );
    }
}

#[test]
fn a_futex_wait_says_its_operation_whichever_way_syscalls_were_recorded() {
    // The client's lock call as syscalls:sys_enter_futex prints it (op 0x80: WAIT,
    // private), as raw_syscalls prints it (NR 202 on x86_64), as a PI lock (op 0x86:
    // LOCK_PI), and with no entry event at all (no operation to say).
    let text = mutex_chain(&plan(&[Hold::Preempted]));
    let shapes = [
        ("sys_futex(uaddr: 3e8, op: 80, val: 2)", "futex(WAIT)"),
        ("sys_enter: NR 202 (3e8, 80, 2, 0, 0, 0)", "futex(WAIT)"),
        ("sys_futex(uaddr: 3e8, op: 86, val: 2)", "futex(LOCK_PI)"),
    ];
    for (entry, words) in shapes {
        let t = text.replace("sys_futex(uaddr: 3e8, op: 80, val: 2)", entry);
        let t = if entry.starts_with("sys_enter") {
            t.replace("sys_futex -> 0x0", "sys_exit: NR 202 = 0")
                .replace("sys_futex -> 0x1", "sys_exit: NR 202 = 1")
                .replace(
                    "sys_futex(uaddr: 3e8, op: 81, val: 1)",
                    "sys_enter: NR 202 (3e8, 81, 1, 0, 0, 0)",
                )
        } else {
            t
        };
        let r = cycles_of(&t, Some(1_000_000));
        let m = &r.misses[0];
        let wait = m.chain.iter().find(|l| l.kind == "wait-for").unwrap();
        assert_eq!(
            wait.what,
            format!("c[5] (RT 50) blocked in {words} until b[20] (nice 0) woke it from CPU1"),
            "{entry}"
        );
    }
    assert_eq!(crate::timeline::futex_op_name(0x189), Some("WAIT_BITSET"));
    assert_eq!(crate::timeline::futex_op_name(0x7f), None);
}

#[test]
fn a_reader_of_a_pipe_waits_for_its_writer_and_what_held_the_writer() {
    // The lock chain as a pipe: c blocks in read() on it, b writes the byte that wakes
    // it (after x kept b off CPU1 in the late cycle); c's read returns the byte.
    let pipe: String = (mutex_chain(&plan(&[Hold::Preempted])).lines())
        .filter(|l| !(l.contains("c-5") && (l.contains("sys_read -> 0x1") || l.contains("op: 81"))))
        .map(|l| {
            let l = if l.contains("c-5") {
                l.replace(
                    "sys_futex(uaddr: 3e8, op: 80, val: 2)",
                    "sys_read(fd: 5, buf: 0, count: 1)",
                )
                .replace("sys_futex -> 0x0", "sys_read -> 0x1")
            } else {
                l.replace(
                    "sys_futex(uaddr: 3e8, op: 81, val: 1)",
                    "sys_write(fd: 6, buf: 0, count: 1)",
                )
                .replace("sys_futex -> 0x1", "sys_write -> 0x1")
            };
            l + "\n"
        })
        .collect();
    let r = cycles_of(&pipe, Some(1_000_000));
    assert_eq!((r.cycles.count, r.cycles.misses), (7, 1), "{:?}", r.notes);
    let c = &r.causes[0];
    assert_eq!(
        (c.category.id(), c.culprit.label()),
        ("priority-inversion", "x[45] (RT 10)".to_string()),
        "{:?}",
        r.causes
    );
    let wait = r.misses[0]
        .chain
        .iter()
        .find(|l| l.kind == "wait-for")
        .unwrap();
    assert_eq!(
        wait.what,
        "c[5] (RT 50) blocked in read() until b[20] (nice 0) woke it from CPU1"
    );
}

/// Timer mode without a deadline, in windows of a long trace: 400 periods of `p`, one
/// (period 200) overrun behind the preempted lock holder. The deadline is the p99 of
/// every period, which the first of three passes chooses; the second learns the usual of
/// the periods on time (of `p` alone: the task asked about), the third explains each
/// window's. The report is the whole trace's.
#[test]
fn timer_mode_without_a_deadline_in_windows_takes_the_whole_traces_p99() {
    let text = timer_through_a_lock(400, 200);
    let mode = crate::explain::Mode::Timer(crate::explain::TimerOptions {
        task: Some(crate::measure::TaskSel::parse("p").unwrap()),
        deadline_ns: None,
        top: 3,
    });
    let open = crate::read::OpenOptions::default();
    let w = crate::pipeline::Windowing {
        events: 500,
        before_ns: 2_000_000,
        after_ns: 1_000_000,
    };
    let whole = crate::explain::run(crate::testkit::opened(&text), &open, &mode)
        .unwrap()
        .report;
    let parts = crate::explain::report(crate::testkit::opened(&text), &open, &mode, w).unwrap();
    assert!(
        parts.notes[0].contains("in three passes"),
        "{:?}",
        parts.notes
    );
    // A window holds about 50 periods: its own policy would assume 1 ms.
    assert_eq!((whole.deadline_ns, whole.cycles.count), (Some(4_000), 400));
    assert_eq!(
        (parts.deadline_ns, &parts.deadline_source),
        (whole.deadline_ns, &whole.deadline_source)
    );
    let key = |r: &crate::explain::ExplainReport| {
        let causes: Vec<_> = (r.causes.iter())
            .map(|c| (c.category, c.culprit.label(), c.total_excess_ns))
            .collect();
        let misses: Vec<_> = (r.misses.iter())
            .map(|m| (m.start_ns, m.late_ns, m.chain[0].usual_ns))
            .collect();
        (
            r.cycles.count,
            r.cycles.misses,
            r.cycles.p50_ns,
            causes,
            misses,
        )
    };
    assert_eq!(key(&parts), key(&whole));
    let c = &whole.causes[0];
    assert_eq!(whole.cycles.misses, 2);
    assert_eq!(
        (c.category.id(), c.culprit.label(), c.total_excess_ns),
        ("priority-inversion", "x[45] (RT 10)".into(), 1_082_000)
    );
}
