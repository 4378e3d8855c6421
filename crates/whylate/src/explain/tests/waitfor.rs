//! Waits through other tasks (`explain/waitfor.rs`) on `testkit::mutex_chain`: a
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
        "c[5] (RT 50) blocked in futex() until b[20] (nice 0) woke it from CPU1"
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
        (c.category.as_str(), c.culprit.label().as_str()),
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
        (c.category.as_str(), c.culprit.label().as_str()),
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
            "c[5] (RT 50) blocked in futex() until b[20] (nice 0) woke it from CPU1",
            "b[20] (nice 0) blocked in futex() until c3[30] (nice 0) woke it from CPU1",
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
        ["b[20] (nice 0) blocked in futex() until c[5] (RT 50) woke it from CPU0"]
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
        (c.category.as_str(), c.culprit.label()),
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
