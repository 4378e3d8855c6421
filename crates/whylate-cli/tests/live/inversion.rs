//! `whylate demo inversion` (lab/inversion.c): a SCHED_FIFO 50 waiter blocks on a plain
//! mutex whose nice-0 holder a SCHED_FIFO 20 task preempts. Ten runs in a row under a
//! CPU load (stress-ng): whylate's late periods are the program's own, each late one's
//! chain reaches the task that kept the holder off its CPU through the holder, priority
//! inversion is the first cause and the advice names the priority-inheritance mutex; the
//! mitigated run (PTHREAD_PRIO_INHERIT) loses the cause, and `diff` says so.

use super::demo::demo_json;
use super::*;

/// A background process killed when dropped (also when a check fails).
struct Load(std::process::Child);

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The program's periods: (start ns, end ns) in CLOCK_MONOTONIC, the trace's clock.
fn periods(truth: &Path) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(truth).unwrap();
    (text.lines())
        .map(|l| {
            let f: Vec<u64> = l.split_whitespace().map(|v| v.parse().unwrap()).collect();
            (f[0], f[2])
        })
        .collect()
}

/// One run's checks; returns (late periods, those whose chain reaches the preemptor
/// through the holder).
fn check_run(label: &str, trace: &Path, j: &serde_json::Value) -> (usize, usize) {
    let ex = &j["explain"];
    assert_eq!(j["lost_events"], 0, "{label}");
    let truth = periods(&trace.with_extension("truth"));
    let d = j["truth"]["deadline_ns"].as_u64().unwrap();
    // Every period the program logged, closed by its next sleep (the process ends inside
    // the last one).
    let c = &ex["cycles"];
    assert_eq!(c["count"].as_u64().unwrap(), truth.len() as u64, "{label}");
    assert_eq!(c["no_reply"], 0, "{label}");
    let misses: Vec<&serde_json::Value> = (ex["misses"].as_array().unwrap().iter())
        .filter(|m| !m["duration_ns"].is_null())
        .collect();
    // Period by period: a late one whylate misses (or the reverse) must be one where the
    // program's clock and the trace's agree within 50 us across the deadline. A cycle
    // starts at the syscall's exit; the program reads its clock just after (a few us, or
    // as long as a host stall of the vCPU), so a miss is the first period the program
    // started at or after it (both on CLOCK_MONOTONIC; 2 us allowed for the clock reads).
    // Periods behind schedule follow each other 40 us apart: no wider window.
    let mut theirs_of: Vec<Option<&serde_json::Value>> = vec![None; truth.len()];
    for m in &misses {
        let at = m["start_ns"].as_u64().unwrap();
        let i = truth.partition_point(|&(s, _)| s + 2_000 < at);
        if let Some(slot) = theirs_of.get_mut(i) {
            *slot = Some(*m);
        }
    }
    let mut reached = 0;
    let mut late = 0;
    for (&(s, e), ours) in truth.iter().zip(theirs_of) {
        let theirs = e - s > d;
        if ours.is_some() != theirs {
            // The trace's period runs from the syscall's exit to the next one's entry, the
            // program's between its clock reads inside them: time outside the reads (a
            // host stall of the vCPU) is in the trace's only.
            let skew = ours.map_or(0, |m| {
                m["duration_ns"].as_u64().unwrap().saturating_sub(e - s)
            });
            assert!(
                (e - s).abs_diff(d) <= 50_000 + skew,
                "{label}: the period at {s} ({} ns) counted by one side only; {}",
                e - s,
                keep_for_failure("inversion", &[trace, &trace.with_extension("truth")])
            );
        }
        let Some(m) = ours else { continue };
        late += 1;
        let through_holder = (m["chain"].as_array().unwrap().iter()).any(|l| {
            l["waiter"]["comm"] == "inv-holder"
                && (l["held_by"].as_array().unwrap().iter())
                    .any(|h| h["category"] == "priority-inversion")
        });
        reached += usize::from(through_holder);
    }
    (late, reached)
}

/// Per cause category, the late periods whose chain names it.
fn periods_per_category(ex: &serde_json::Value) -> std::collections::BTreeMap<String, usize> {
    let mut n = std::collections::BTreeMap::new();
    for m in ex["misses"].as_array().unwrap() {
        let mut cats = std::collections::BTreeSet::new();
        for l in m["chain"].as_array().unwrap() {
            for h in l["held_by"].as_array().unwrap() {
                cats.insert(h["category"].as_str().unwrap_or("").to_string());
            }
        }
        for c in cats {
            *n.entry(c).or_insert(0) += 1;
        }
    }
    n
}

#[test]
fn inversion_is_found_through_the_lock_holder_and_the_fix_removes_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: the demo records") {
        return;
    }
    if !have("cc") && skip("no C compiler for the lab programs") {
        return;
    }
    if !have("stress-ng") && skip("no stress-ng for the background CPU load") {
        return;
    }
    let before = tracefs_state();
    let tmp = tmpdir("inversion");
    let dir = tmp.path();
    let load = Load(
        Command::new("stress-ng")
            .args(["--cpu", "1", "--timeout", "600s", "--quiet"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let (mut late, mut reached) = (0, 0);
    let mut first = None;
    // Excess per category over every run: the ranking the runs make together.
    let mut excess: std::collections::BTreeMap<String, u64> = Default::default();
    for run in 0..10 {
        let a = dir.join(format!("run{run}.dat"));
        let j = demo_json(&["inversion", "--keep", a.to_str().unwrap()]);
        let (l, r) = check_run(&format!("run {run}"), &a, &j);
        eprintln!(
            "inversion run {run}: {l} late periods, {r} reached the preemptor through the holder"
        );
        let ex = &j["explain"];
        let causes = ex["causes"].as_array().unwrap();
        for c in causes {
            let k = c["category"].as_str().unwrap_or("").to_string();
            *excess.entry(k).or_insert(0) += c["total_excess_ns"].as_u64().unwrap_or(0);
        }
        // The mechanism, run by run: every late period whose chain reaches the preemptor
        // through the lock holder is labelled an inversion. Not which category is in the
        // most periods: the holder finishing its hold (on-cpu) follows an inversion in
        // anywhere from 1 to 183 of 200 late periods (measured), so that count decided
        // by a hair (a CI run: on-cpu 162, inversion 160 of 163). Not the run's first cause
        // by time either: with 23 late periods, a host stall of the holder in two of them
        // outweighed the inversion of twenty. The ranking by time is checked over all runs
        // below.
        if l >= 20 {
            let per = periods_per_category(ex);
            let inverted = per.get("priority-inversion").copied().unwrap_or(0);
            assert!(
                inverted >= r,
                "run {run}: {r} late periods reached the preemptor through the holder, {inverted} are labelled an inversion: {per:?}"
            );
            let advice = ex["advice"].to_string();
            assert!(
                advice.contains("PTHREAD_PRIO_INHERIT"),
                "run {run}: {advice}"
            );
        } else {
            eprintln!("inversion run {run}: only {l} late periods; causes {causes:?}");
        }
        (late, reached) = (late + l, reached + r);
        first.get_or_insert((a, j));
    }
    assert!(
        late >= 10,
        "the middle-priority task must make periods late ({late})"
    );
    assert!(
        reached * 100 >= late * 95,
        "{reached} of {late} late periods reach the preemptor through the holder"
    );
    let top = excess.iter().max_by_key(|e| e.1).unwrap();
    assert_eq!(top.0, "priority-inversion", "{excess:?}");
    // Automatic mode (no selectors) finds the same inversion on the first run's trace.
    let (a, j) = first.unwrap();
    assert_eq!(
        first_cause(&[a.as_os_str().to_str().unwrap()]),
        ("priority-inversion".into(), "inv-rt".into())
    );
    // The fix: a priority-inheritance mutex. No inversion is left, and diff says so.
    let b = dir.join("fixed.dat");
    let fixed = demo_json(&["inversion", "--mitigate", "--keep", b.to_str().unwrap()]);
    drop(load);
    let (fm, m) = (
        fixed["explain"]["cycles"]["misses"].as_u64().unwrap(),
        j["explain"]["cycles"]["misses"].as_u64().unwrap(),
    );
    eprintln!(
        "inversion --mitigate: whylate {fm} misses (program {}), before {m}",
        fixed["truth"]["misses"]
    );
    // The inversions through the lab's preemptor are gone. A host task that ran while
    // the boosted holder waited (RT throttling lets CFS tasks in) is still labelled an
    // inversion: whylate does not follow sched_pi_setprio boosts (said, not asserted).
    for c in fixed["explain"]["causes"].as_array().unwrap() {
        let inverted = c["category"] == "priority-inversion";
        assert!(
            !(inverted && c["culprit"]["comm"] == "inv-rt"),
            "PI mutex: {c}"
        );
        if inverted {
            eprintln!("inversion --mitigate: a host task labelled an inversion: {c}");
        }
    }
    let out = Command::new(whylate())
        .args(["diff", &s(&a), &s(&b)])
        .args(["--from", "sys_exit_clock_nanosleep[comm=inv-waiter,ret=0]"])
        .args(["--to", "sys_enter_clock_nanosleep[comm=inv-waiter]"])
        .args(["--deadline", "1ms", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gone: Vec<&serde_json::Value> = (d["causes"].as_array().unwrap().iter())
        .filter(|c| c["category"] == "priority-inversion")
        .collect();
    assert!(!gone.is_empty(), "{}", d["causes"]);
    for c in gone {
        assert_eq!(c["status"], "vanished", "{c}");
    }
    assert_eq!(before, tracefs_state(), "tracefs restored");
}

/// The first cause of `whylate ARGS --json`: (category, culprit's comm).
fn first_cause(args: &[&str]) -> (String, String) {
    let out = Command::new(whylate())
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &j["causes"][0];
    (
        c["category"].as_str().unwrap_or("").to_string(),
        c["culprit"]["comm"].as_str().unwrap_or("").to_string(),
    )
}

/// With 1 ms periods a wait behind the preempted holder outlasts the period: the waiter
/// arms its next timer late. `explain --timer` follows the overrun into the lock wait, and
/// automatic mode finds it both as a late timer and as a wait on the holder: priority
/// inversion by inv-rt first, not the CPU left idle while the waiter was blocked.
#[test]
fn timer_and_automatic_modes_follow_the_waiter_into_the_lock() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: whylate record needs tracefs") {
        return;
    }
    let before = tracefs_state();
    let tmp = tmpdir("inversion-timer");
    let dir = tmp.path();
    let prog = match build_lab("inversion", dir) {
        Ok(p) => p,
        Err(e) => {
            skip(&e);
            return;
        }
    };
    let trace = dir.join("t.dat");
    let out = Command::new(whylate())
        .args(["record", "-e", "latency", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&prog)
        .args(["--seconds", "2", "--period-us", "1000", "--log"])
        .arg(dir.join("t.log"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = s(&trace);
    let want = ("priority-inversion".to_string(), "inv-rt".to_string());
    let timer = first_cause(&[
        "explain",
        "--timer",
        "--task",
        "inv-waiter",
        "--deadline",
        "300us",
        &t,
    ]);
    let auto = first_cause(&[&t]);
    if timer != want || auto != want {
        panic!(
            "timer mode {timer:?}, automatic mode {auto:?}; {}",
            keep_for_failure("inversion-timer", &[&trace])
        );
    }
    assert_eq!(before, tracefs_state(), "tracefs restored");
}
