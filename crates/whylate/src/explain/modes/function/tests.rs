//! Function mode on hand-written function_graph traces: a slow call's time split
//! over what ran in it, and the mode in windows of a long trace.

use super::*;
use crate::testkit::{line, pass};

/// Three 50 us calls of slow_write (20 us of it in poll_port), then one of 500 us in
/// which irq 5 runs 100 us and hog takes the CPU for 100 us.
fn trace() -> String {
    let mut t = String::new();
    let app = "app-100";
    // One call: entry, poll_port as a 20 us leaf at +10 us, and (for the good ones)
    // the return at +50 us.
    let call = |t: &mut String, at: u64, ret: bool| {
        let body = [
            (0, "funcgraph_entry:                   |  slow_write() {"),
            (10, "funcgraph_entry:      + 20.000 us   |    poll_port();"),
            (50, "funcgraph_exit:       + 50.000 us   |  }"),
        ];
        for (dt, b) in body.iter().take(if ret { 3 } else { 2 }) {
            *t += &line(at + dt, 1, app, "....", b);
        }
    };
    for k in 0..3u64 {
        call(&mut t, 500_000 + k * 100_000, true);
    }
    let at = 1_000_000;
    call(&mut t, at, false);
    t += &line(
        at + 100,
        1,
        app,
        "d.h.",
        "irq_handler_entry: irq=5 name=eth0",
    );
    t += &line(
        at + 200,
        1,
        app,
        "d.h.",
        "irq_handler_exit: irq=5 ret=handled",
    );
    t += &line(at + 250, 1, app, "d..2", "sched_switch: prev_comm=app prev_pid=100 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=200 next_prio=120");
    t += &line(at + 350, 1, "hog-200", "d..2", "sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=app next_pid=100 next_prio=120");
    t += &line(
        at + 500,
        1,
        app,
        "....",
        "funcgraph_exit:       ! 500.000 us   |  }",
    );
    t
}

fn opts(deadline_ns: Option<u64>) -> FunctionOptions {
    FunctionOptions {
        func: Glob::new("slow_write").unwrap(),
        deadline_ns,
        expect_per_s: None,
        top: 3,
    }
}

/// 400 calls of slow_write 1 ms apart, each 40 us with a 20 us poll_port, but every
/// 100th 900 us (80 us in poll_port): read in windows of 150 events (50 calls), the
/// deadline is the p99 of all 400 calls (a window's own 50 would take twice their
/// median) and the usual their median. The report is the whole trace's.
#[test]
fn function_mode_in_windows_takes_the_whole_traces_deadline_and_usual() {
    let mut t = String::new();
    for k in 0..400u64 {
        let at = 1_000_000 + k * 1_000;
        let (d, poll) = if k % 100 == 50 { (900, 80) } else { (40, 20) };
        t += &line(
            at,
            1,
            "app-100",
            "....",
            "funcgraph_entry:                   |  slow_write() {",
        );
        let leaf = format!("funcgraph_entry:      + {poll}.000 us   |    poll_port();");
        t += &line(at + 5, 1, "app-100", "....", &leaf);
        let exit = format!("funcgraph_exit:       + {d}.000 us   |  }}");
        t += &line(at + d, 1, "app-100", "....", &exit);
    }
    let mode = crate::explain::Mode::Function(opts(None));
    let open = crate::read::OpenOptions::default();
    let opened = crate::testkit::opened;
    let whole = crate::explain::run(opened(&t), &open, &mode)
        .unwrap()
        .report;
    let w = crate::pipeline::Windowing {
        events: 150,
        before_ns: 200_000,
        after_ns: 100_000,
    };
    let parts = crate::explain::report(opened(&t), &open, &mode, w).unwrap();
    assert!(parts.notes[0].contains("two passes"), "{:?}", parts.notes);
    let key = |r: &ExplainReport| {
        let m: Vec<_> = (r.misses.iter())
            .map(|m| (m.start_ns, m.duration_ns, m.chain[0].usual_ns, m.blamed_ns))
            .collect();
        let c: Vec<_> = (r.causes.iter())
            .map(|c| (c.category.id(), c.culprit.label(), c.total_excess_ns))
            .collect();
        (
            r.deadline_ns,
            r.cycles.count,
            r.cycles.misses,
            r.cycles.p50_ns,
            m,
            c,
        )
    };
    assert_eq!(key(&parts), key(&whole));
    assert_eq!((whole.deadline_ns, whole.cycles.count), (Some(40_000), 400));
    assert_eq!(whole.cycles.misses, 4);
    assert_eq!(whole.misses[0].chain[0].usual_ns, Some(40_000));
}

#[test]
fn a_slow_call_splits_into_interrupts_other_tasks_callees_and_its_own_code() {
    let p = pass(&trace());
    let r = analyze_function(&p.tl, &p.strings, &opts(Some(100_000)));
    assert_eq!((r.cycles.count, r.cycles.misses), (4, 1));
    let m = &r.misses[0];
    assert_eq!(
        (m.duration_ns, m.late_ns, m.cpu),
        (Some(500_000), 400_000, 1)
    );
    let l = &m.chain[0];
    // Usual: the good calls' median, 50 us; the excess 450 us goes in proportion to
    // 100 us of irq 5, 100 us of hog, and the 300 us left split 480:20 over
    // slow_write's own time and poll_port's.
    assert_eq!((l.usual_ns, l.excess_ns), (Some(50_000), 450_000));
    let got: Vec<(String, String, u64)> = (l.held_by.iter())
        .map(|h| (h.category.id().to_string(), h.culprit.label(), h.ns))
        .collect();
    assert_eq!(
        got,
        vec![
            ("own-code".into(), "slow_write".into(), 259_200),
            ("preempted-by".into(), "hog[200] (nice 0)".into(), 90_000),
            ("hardirq".into(), "irq 5 (eth0)".into(), 90_000),
            ("callee".into(), "poll_port".into(), 10_800),
        ]
    );
    assert_eq!(r.causes[0].category, "own-code");
    assert!(
        l.what.starts_with("slow_write by app[100] on CPU1"),
        "{}",
        l.what
    );
}

#[test]
fn a_call_that_blocks_waits_for_the_task_that_woke_it_not_its_own_code() {
    // The slow call blocks at +100 us (app switches out asleep) and holder-300 on
    // CPU0 wakes it at +400 us after being kept off CPU0 by x-45 (RT 10) from +50 us
    // to +350 us: 250 us of the block were x's (app is normal: no inversion, x is what
    // held the waker off), the rest holder's own work until the wakeup.
    let mut t = String::new();
    let base = trace();
    let cut = base.find(" app-100 [001] d.h.").unwrap();
    t += &base[..cut];
    let at = 1_000_000;
    t += &line(
        at + 20,
        0,
        "holder-300",
        "d.h.",
        "sched_waking: comm=x pid=45 prio=89 target_cpu=000",
    );
    t += &line(at + 50, 0, "holder-300", "d..2", "sched_switch: prev_comm=holder prev_pid=300 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=45 next_prio=89");
    t += &line(at + 100, 1, "app-100", "d..2", "sched_switch: prev_comm=app prev_pid=100 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120");
    t += &line(at + 350, 0, "x-45", "d..2", "sched_switch: prev_comm=x prev_pid=45 prev_prio=89 prev_state=S ==> next_comm=holder next_pid=300 next_prio=120");
    t += &line(
        at + 400,
        0,
        "holder-300",
        "d..3",
        "sched_waking: comm=app pid=100 prio=120 target_cpu=001",
    );
    t += &line(at + 405, 1, "<idle>-0", "d..2", "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=100 next_prio=120");
    t += &line(
        at + 500,
        1,
        "app-100",
        "....",
        "funcgraph_exit:       ! 500.000 us   |  }",
    );
    let p = pass(&t);
    let r = analyze_function(&p.tl, &p.strings, &opts(Some(100_000)));
    assert_eq!(r.cycles.misses, 1);
    let l = &r.misses[0].chain[0];
    let got: Vec<(String, String)> = (l.held_by.iter())
        .map(|h| (h.category.id().to_string(), h.culprit.label()))
        .collect();
    // The block (+100 to +400 us) is the waker's: x held it off CPU0 from +100 to
    // +350 us (the part inside the block), then its own work to the wakeup.
    assert_eq!(
        got[0],
        ("preempted-by".into(), "x[45] (RT 10)".into()),
        "{got:?}"
    );
    assert!(
        got.contains(&("on-cpu".into(), "holder[300] (nice 0)".into())),
        "{got:?}"
    );
    // The call ran 195 us of its 500 (the block 300 us, 5 us waiting for the idle
    // CPU1 to take it): its code's share of the 450 us excess is 195 x 0.9, no longer
    // the block's time too; the wait for CPU1 is the idle exit's, not a task's.
    let code: u64 = (l.held_by.iter())
        .filter(|h| h.category == "own-code" || h.category == "callee")
        .map(|h| h.ns)
        .sum();
    assert_eq!(code, 175_500, "{:?}", l.held_by);
    assert!(got.contains(&("cpu-idle".into(), "-".into())), "{got:?}");
}

#[test]
fn without_a_deadline_a_few_calls_are_judged_against_twice_their_median() {
    let p = pass(&trace());
    let r = analyze_function(&p.tl, &p.strings, &opts(None));
    assert_eq!(r.deadline_ns, Some(100_000));
    assert_eq!(r.cycles.misses, 1);
    let mut o = opts(None);
    o.expect_per_s = Some(11_520.0);
    let r = analyze_function(&p.tl, &p.strings, &o);
    assert_eq!(r.deadline_ns, Some(86_806));
}

#[test]
fn no_calls_and_no_sections_say_how_to_record_them() {
    let p = pass(&trace());
    let mut o = opts(None);
    o.func = Glob::new("nothing_like_it").unwrap();
    let r = analyze_function(&p.tl, &p.strings, &o);
    assert_eq!(r.cycles.count, 0);
    assert!(
        r.notes[0].contains("function_graph -g nothing_like_it"),
        "{:?}",
        r.notes
    );
}
