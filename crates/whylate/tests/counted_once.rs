//! The causes table counts each wait once: on the timer example (a task at nice 19
//! beside a hog, its periods overrunning one another), one wait delays many periods and
//! the per-period sums add up to many times the trace; `once_ns` does not. Where misses do
//! not overlap (the README's request cycles), both are the same.

use std::path::{Path, PathBuf};
use whylate::explain::{explain, ExplainReport, Options, TimerOptions};
use whylate::read::OpenOptions;
use whylate::selector::Selector;

fn example(name: &str) -> Vec<PathBuf> {
    vec![Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)]
}

/// The samples' span: first start to last end.
fn span(r: &ExplainReport) -> u64 {
    let first = r.windows.iter().map(|w| w.start_ns).min().unwrap();
    let last = (r.windows.iter())
        .map(|w| w.end_ns().unwrap_or(w.start_ns))
        .max()
        .unwrap();
    last - first
}

#[test]
fn overrunning_periods_count_the_hogs_wait_once() {
    let o = TimerOptions {
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
    let hog = &r.causes[0];
    assert_eq!(hog.culprit.comm.as_deref(), Some("hog"), "{:?}", r.causes);
    let span = span(&r);
    // Summed per period: tens of times the trace.
    assert!(hog.total_excess_ns > 20 * span, "{hog:?} in {span} ns");
    // Once: within the trace, and most of it (the hog held CPU1 98 % of the time).
    assert!(hog.once_ns <= span + 1_000_000, "{hog:?} in {span} ns");
    assert!(hog.once_ns * 10 > span * 9, "{hog:?} in {span} ns");
    assert!(r.causes.iter().all(|c| c.once_ns <= c.total_excess_ns));
    // The context says the victim's and the culprit's weights.
    let busy: Vec<&str> = r.context[0].busy.iter().map(|b| b.0.as_str()).collect();
    assert!(busy.contains(&"periodic[6735] (nice 19)"), "{busy:?}");
    assert!(busy.contains(&"hog[6732] (nice 0)"), "{busy:?}");
}

#[test]
fn cycles_that_do_not_overlap_count_the_same_either_way() {
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
    assert!(!r.causes.is_empty());
    for c in &r.causes {
        assert_eq!(c.once_ns, c.total_excess_ns, "{c:?}");
    }
}
