//! The recorder's own threads (trace-cmd, perf, whylate) in the trace: never the
//! workload's victims, their rows ranked after the workload's.

use super::*;

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
    // recorder comes first, but the causes' first row must be about the workload.
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
    // Two thirds of the excess is the recording's own cost: said under the verdict.
    assert!(
        (r.blind.iter()).any(|b| b.starts_with(
            "the recorder itself held 1.956 ms (67%) of the blamed excess: most of what is late"
        )),
        "{:?}",
        r.blind
    );
    // With two thirds of the excess the recorder's, the first thing to do is to record
    // with less disturbance, then the workload's own cause; the recorder is never told to
    // move.
    let first = &r.advice[0].action;
    assert!(
        first.starts_with("The recorder itself (whylate-read[61]"),
        "{:?}",
        r.advice
    );
    assert!(r.advice[1].action.contains("hog"), "{:?}", r.advice);
    assert!(!r
        .advice
        .iter()
        .any(|a| a.action.starts_with("Move whylate")));
    // `watch` merges windows' reports: the recorder's rows stay last there too.
    let mut m = crate::explain::RunSummary::new(10);
    let w: Vec<_> = r.windows.iter().collect();
    let misses: Vec<_> = r.misses.iter().collect();
    m.add(&r, &w[..4], &misses[..1]);
    m.add(&r, &w[4..], &misses[1..]);
    let merged = m.causes();
    let merged: Vec<(Option<&str>, u64)> = (merged.iter())
        .map(|c| (c.culprit.comm.as_deref(), c.total_excess_ns))
        .collect();
    assert_eq!(merged, who);
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

#[test]
fn a_recorder_holding_a_minority_gets_its_advice_but_no_line_under_the_verdict() {
    // The reader held the worker in one miss of three: a third of the excess.
    let text = recorder_hogs_some(8, &[1, 4, 6], &[1]);
    let r = cycles_of(&text, Some(1_000_000));
    assert_eq!(r.cycles.misses, 3);
    let rec = (r.causes.iter()).find(|c| c.culprit.comm.as_deref() == Some("whylate-read"));
    assert_eq!(rec.map(|c| c.total_excess_ns), Some(978_000));
    assert!(
        !r.blind.iter().any(|b| b.starts_with("the recorder itself")),
        "{:?}",
        r.blind
    );
    assert!(r.advice[0].action.contains("hog"), "{:?}", r.advice);
    assert!(
        (r.advice.iter()).any(|a| a
            .action
            .starts_with("The recorder itself (whylate-read[61]")),
        "{:?}",
        r.advice
    );
}
