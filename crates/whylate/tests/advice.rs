//! Advice as one plan, safe to paste, on the bundled recordings: the `taskset` lines of
//! one report never send a task to a CPU another line moves tasks off, never move the
//! chain's own tasks, and name tasks by name where the trace's PIDs are not this
//! machine's (none of the examples was recorded in this boot: their PIDs name other
//! tasks here, or none).

use std::path::{Path, PathBuf};
use whylate::explain::{explain, explain_auto, ExplainReport, Options};
use whylate::read::OpenOptions;
use whylate::selector::Selector;

fn example(name: &str) -> Vec<PathBuf> {
    vec![Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)]
}

/// One taskset line: the CPUs it sends tasks to, and the tasks.
type Line = (Vec<u32>, Vec<String>);

/// Each taskset line, and every CPU a line keeps for the chain (moves tasks off).
fn placement(r: &ExplainReport) -> (Vec<Line>, Vec<u32>) {
    let cpus = |s: &str| -> Vec<u32> { s.split(',').filter_map(|c| c.parse().ok()).collect() };
    let (mut lines, mut kept) = (Vec::new(), Vec::new());
    for a in &r.advice {
        let c = &a.command;
        let Some(at) = c.find("taskset -pc ") else {
            continue;
        };
        let rest = &c[at + "taskset -pc ".len()..];
        let (to, arg) = rest.split_once(' ').unwrap();
        let tasks: Vec<String> = match c.strip_prefix("for p in ") {
            Some(l) => l
                .split("; do")
                .next()
                .unwrap()
                .split(") ")
                .map(String::from)
                .collect(),
            None => vec![arg.split("   ").next().unwrap().to_string()],
        };
        lines.push((cpus(to), tasks));
        for w in a.action.split("CPU").skip(1) {
            let n: String = w.chars().take_while(char::is_ascii_digit).collect();
            if a.action.contains(&format!("off CPU{n}"))
                || a.action.contains(&format!("Keep CPU{n}"))
            {
                kept.extend(n.parse::<u32>());
            }
        }
    }
    (lines, kept)
}

fn check(r: &ExplainReport, what: &str) {
    let (lines, kept) = placement(r);
    assert!(
        !lines.is_empty(),
        "{what}: no taskset line: {:#?}",
        r.advice
    );
    for (to, tasks) in &lines {
        assert!(
            !to.iter().any(|c| kept.contains(c)),
            "{what}: a task sent to a kept CPU: {to:?} {kept:?}"
        );
        for t in tasks {
            assert!(
                t.contains("pgrep -x '"),
                "{what}: a PID of the recording in a command: {t}"
            );
        }
    }
    // The chain's own tasks stay where they are (frobnicator asks, and misses, in both).
    for (_, tasks) in &lines {
        assert!(
            !tasks.iter().any(|t| t.contains("'frobnicator'")),
            "{what}: {tasks:?}"
        );
    }
    for a in &r.advice {
        assert!(
            !a.command.contains("chrt") || a.command.contains("pgrep -x"),
            "{what}: {a:?}"
        );
    }
    assert!(
        r.notes.iter().any(|n| n.contains("finds tasks by name")),
        "{what}: {:?}",
        r.notes
    );
}

#[test]
fn automatic_mode_on_pty_poll_advises_one_placement_by_name() {
    let r = explain_auto(
        whylate::read::Opened::files(&example("pty-poll.ftrace.gz"), &OpenOptions::default())
            .unwrap(),
        &OpenOptions::default(),
        5,
    )
    .unwrap();
    check(&r, "pty-poll, automatic");
    // A task that waited 0.1 % behind a hog is not told to run as SCHED_FIFO.
    assert!(
        !r.advice.iter().any(|a| a.action.contains("memfd")),
        "{:#?}",
        r.advice
    );
    // Named after what kept it waiting most.
    let frobdev = r
        .advice
        .iter()
        .find(|a| a.action.starts_with("Run frobdev"));
    assert!(
        frobdev.is_some_and(|a| a.action.contains("frobnicator and hog")),
        "{:#?}",
        r.advice
    );
}

#[test]
fn the_readme_cycles_on_frob_advise_by_name() {
    let o = Options {
        from: Selector::parse("sys_enter_write[comm=frobnicator,count=7]").unwrap(),
        to: vec![Selector::parse("sys_exit_read[comm=frobnicator,ret>0]").unwrap()],
        deadline_ns: Some(3_500_000),
        same: Default::default(),
        pairing: Default::default(),
        arch: None,
        top: 3,
        learned: Default::default(),
    };
    let r = explain(
        whylate::read::Opened::files(&example("frob.dat.zst"), &OpenOptions::default()).unwrap(),
        &OpenOptions::default(),
        &o,
    )
    .unwrap();
    check(&r, "frob.dat.zst, cycles");
    // CPU0's context names the workload's cause there, not the recorder's (whose rows
    // the causes table ranks after the workload's).
    let roles: Vec<&str> = r.context.iter().map(|c| c.role.as_str()).collect();
    assert!(!roles.iter().any(|r| r.contains("whylate[")), "{roles:?}");
}

/// The timer example's victim runs at nice 19: that is said first, with `renice`, before
/// the stronger fix (SCHED_FIFO).
#[test]
fn a_niced_victim_is_told_to_renice_first() {
    let o = whylate::explain::TimerOptions {
        task: Some(whylate::measure::TaskSel::parse("periodic").unwrap()),
        deadline_ns: Some(300_000),
        top: 3,
    };
    let r = whylate::explain::explain_timers(
        whylate::read::Opened::files(&example("timer.dat.zst"), &OpenOptions::default()).unwrap(),
        &OpenOptions::default(),
        &o,
    )
    .unwrap();
    let first = &r.advice[0];
    assert!(
        first.action.starts_with("periodic runs at nice 19"),
        "{:#?}",
        r.advice
    );
    assert_eq!(first.command, "renice -n 0 -p $(pgrep -x 'periodic')");
}

/// An unbound pool's worker is not given a priority (the pool hands the work to another
/// worker): the unbound workqueues' CPUs are set instead.
#[test]
fn an_unbound_worker_is_kept_off_the_hogs_cpu_by_the_workqueue_cpumask() {
    let r = explain_auto(
        whylate::read::Opened::files(&example("pty-poll.ftrace.gz"), &OpenOptions::default())
            .unwrap(),
        &OpenOptions::default(),
        5,
    )
    .unwrap();
    let cmds: Vec<&str> = r.advice.iter().map(|a| a.command.as_str()).collect();
    assert!(
        !cmds
            .iter()
            .any(|c| c.contains("chrt") && c.contains("kworker/u")),
        "{cmds:?}"
    );
    assert!(
        cmds.contains(&"echo 0 > /sys/devices/virtual/workqueue/cpumask"),
        "{cmds:?}"
    );
}
