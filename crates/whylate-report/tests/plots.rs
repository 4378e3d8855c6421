//! The plots drawn from a whole bundled example: every cycle and event is accounted for.

use whylate::read::OpenOptions;

/// The plots account for everything: every window is a column, every event drawn or
/// counted as above the plot, every replied cycle in the histogram; and a read with a
/// progress counter reports the whole file and every event.
#[test]
fn plots_account_for_every_cycle_and_event() {
    use std::sync::atomic::Ordering::Relaxed;
    use whylate::explain::{run, Mode, Options, Same};
    use whylate::selector::Selector;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/pty-poll.ftrace.gz");
    let progress = std::sync::Arc::new(whylate::read::Progress::default());
    let open = OpenOptions {
        progress: Some(progress.clone()),
        ..Default::default()
    };
    let mode = Mode::Cycles(Options {
        from: Selector::parse("sys_enter_write[comm=frobnicator,count=7]").unwrap(),
        to: vec![Selector::parse("sys_exit_read[comm=frobnicator,ret>0]").unwrap()],
        deadline_ns: Some(3_500_000),
        same: Same::Thread,
        pairing: Default::default(),
        arch: None,
        top: 3,
        learned: Default::default(),
    });
    let x = run(
        whylate::read::Opened::files(std::slice::from_ref(&path), &open).unwrap(),
        &open,
        &mode,
    )
    .unwrap();
    let opts = whylate_report::plot::PlotOptions { lanes: 3 };
    let plots = whylate_report::plot::build(&x.report, &x.timeline, &x.strings, &opts);
    let r = x.report;
    assert_eq!(
        progress.bytes.load(Relaxed),
        std::fs::metadata(&path).unwrap().len()
    );
    assert_eq!(progress.events.load(Relaxed), r.events);
    assert!(progress.read_done.load(Relaxed));
    let ra = &plots.raster;
    assert_eq!(r.windows.len() as u64, r.cycles.count);
    assert_eq!(
        r.windows.iter().filter(|c| c.miss).count() as u64,
        r.cycles.misses
    );
    let merged: u64 = ra.marks.iter().map(|m| m.n as u64).sum();
    assert_eq!(merged + ra.clipped, ra.events.iter().sum::<u64>());
    assert!(ra.marks.iter().all(|m| m.off_ns <= ra.ymax_ns));
    assert!(ra
        .marks
        .iter()
        .all(|m| (m.label as usize) < ra.labels.len()));
    let h = &plots.hist;
    assert_eq!(h.counts.iter().sum::<u64>() + h.over, r.cycles.replied);
    assert_eq!(plots.lanes.len(), r.misses.len().min(3));
    for l in &plots.lanes {
        // Every bar inside the window, on a row that exists; the first link's row is the
        // miss's own CPU.
        assert!(l.bars.iter().all(|b| b.start_ns >= l.from_ns
            && b.end_ns <= l.to_ns
            && (b.row as usize) < l.rows.len()));
        assert!(l.rows.iter().any(|x| x.cpu == r.misses[l.miss].cpu));
    }
}
