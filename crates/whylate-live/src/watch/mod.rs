//! `whylate watch`: record through our own tracefs instance (as `record` does) and
//! explain each miss while the workload runs, for as long as it runs.
//!
//! 1. One reader thread per CPU hands whole ring-buffer pages to this thread, which keeps
//!    the last seconds of them in a `ring::Ring` (bounded by time and bytes).
//! 2. Every tick (0.5 s, longer when an analysis takes longer) the pages of a window that
//!    ends a little before now (the readers' lag) become a trace.dat, which the offline
//!    engine explains in the chosen mode: the same chain, culprit and advice as `explain`.
//! 3. Windows overlap; `settle::Settler` takes each sample from the first window that
//!    holds it whole, once. A settled miss is reported at once (the [`Watcher`]), its own
//!    window kept as a trace.dat when asked (`keep`), a command run for it (`on_miss`).
//! 4. Settled samples and misses join a [`RunSummary`](whylate::explain::RunSummary): at
//!    the end, the report of the whole run. Memory: the ring, a bounded summary and the
//!    settled keys of one overlap.
//!
//! Without a deadline the first window that holds enough samples chooses one by the
//! mode's own policy, and it is kept from then on (a moving deadline would make misses
//! of different runs incomparable). Cycles learn the usual chain from every good cycle
//! seen so far ([`Learned`](whylate::explain::Learned)).

mod driver;
mod keep;
#[cfg(test)]
mod replay;
mod ring;
mod settle;
mod types;

use crate::record::Tracing;
use driver::{spawn, Live, Run};
use keep::Keeper;
use ring::ToChannel;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
pub use types::*;
use whylate::explain::Mode;

/// Watches until `stop`, the duration, the miss count or the command's end.
pub fn watch(
    o: &WatchOptions,
    stop: Arc<AtomicBool>,
    out: &mut dyn Watcher,
) -> Result<WatchResult, WatchError> {
    check_mode(&o.mode, o.timerlat.is_some()).map_err(WatchError::Usage)?;
    let keeper = match &o.keep {
        Some(k) => Some(Keeper::new(k)?),
        None => None,
    };
    let (tx, rx) = mpsc::channel();
    let t = Tracing::start(&o.events, o.buffer_kb, o.timerlat, |cpu, _, layout| {
        Ok(ToChannel {
            cpu,
            layout,
            tx: tx.clone(),
        })
    })?;
    drop(tx);
    // Windows are analysed in memory, not read from a file: an error about one says so.
    let name = std::path::PathBuf::from("(watch window, in memory)");
    let host: Box<dyn driver::Host> = Box::new(Live::of(&t));
    let mut run = Run::new(o, (t.meta(Vec::new()), host), keeper, name);
    let mut child = spawn(o)?;
    let exit_code = run.watch_loop(&t, &rx, child.as_mut(), &stop, out)?;
    let stale = t.stale.clone();
    let tracepoints = t.tracepoints();
    let stopped = t.stop()?;
    run.set_lost(stopped.cpus.iter().map(|c| c.lost).collect());
    // The readers drained the buffers when stopped: the last pages are in the channel.
    while let Ok(p) = rx.try_recv() {
        run.ring.push(p, u64::MAX);
    }
    run.tick(true, out)?;
    run.finish(exit_code, stale, tracepoints, out)
}

/// Whether watch can run `mode`: the automatic mode only on the timerlat tracer's
/// activations, which take no other mode.
pub fn check_mode(mode: &Mode, timerlat: bool) -> Result<(), String> {
    match (mode, timerlat) {
        (Mode::Auto { .. }, false) => Err(
            "watch needs to know what a miss is: --from/--to, --timer, --softirq, --function, --expect or --timerlat"
                .into(),
        ),
        (Mode::Auto { .. }, true) | (_, false) => Ok(()),
        (m, true) => {
            let given = match m {
                Mode::Cycles(_) => "from/--to",
                m => m.name(),
            };
            Err(format!(
                "--timerlat watches the timerlat tracer's activations; it takes no --{given} (a --deadline sets what is late)"
            ))
        }
    }
}

/// What to record for a mode when `-e` is not given: the scheduler, interrupts and
/// workqueues (the hand-offs the chains follow), timers for `--timer`, the events
/// the selectors name, and the osnoise noise events for the timerlat tracer (the only
/// automatic mode watch has).
pub fn default_events(mode: &Mode) -> Vec<String> {
    let mut v = vec!["sched".to_string(), "irq".into(), "wq".into()];
    let named = |s: &whylate::selector::Selector| -> Option<String> {
        let name = s.text().split('[').next()?.trim();
        (!name.is_empty() && !name.contains(['*', '?'])).then(|| name.to_string())
    };
    let sels: Vec<&whylate::selector::Selector> = match mode {
        Mode::Timer(_) => {
            v.push("timer".into());
            Vec::new()
        }
        Mode::Cycles(o) => std::iter::once(&o.from).chain(&o.to).collect(),
        Mode::Expect(o) => vec![&o.a, &o.b],
        Mode::Auto { .. } => {
            v.extend(crate::record::TIMERLAT_WATCH_EVENTS.map(String::from));
            Vec::new()
        }
        Mode::Softirq { .. } | Mode::Function(_) => Vec::new(),
    };
    for name in sels.into_iter().filter_map(named) {
        if !v.contains(&name) {
            v.push(name);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::default_events;
    use whylate::explain::Mode;

    #[test]
    fn default_events_add_the_selectors_events_once() {
        let mut o = whylate::testkit::chain_options(None);
        o.from = whylate::selector::Selector::parse("sys_enter_write[comm=x]").unwrap();
        o.to = vec![
            whylate::selector::Selector::parse("sys_exit_read[ret>0]").unwrap(),
            whylate::selector::Selector::parse("sys_enter_write[comm=y]").unwrap(),
        ];
        assert_eq!(
            default_events(&Mode::Cycles(o)),
            ["sched", "irq", "wq", "sys_enter_write", "sys_exit_read"]
        );
    }

    /// The automatic mode is watchable only on the timerlat tracer, which takes no other
    /// mode; its default events add the osnoise noise events.
    #[test]
    fn timerlat_is_the_only_automatic_mode_watch_has() {
        let auto = Mode::Auto {
            top: 3,
            deadline_ns: None,
        };
        assert!(super::check_mode(&auto, false)
            .unwrap_err()
            .contains("--timerlat"));
        assert!(super::check_mode(&auto, true).is_ok());
        let cycles = Mode::Cycles(whylate::testkit::chain_options(None));
        assert!(super::check_mode(&cycles, false).is_ok());
        assert_eq!(
            super::check_mode(&cycles, true).unwrap_err(),
            "--timerlat watches the timerlat tracer's activations; it takes no --from/--to (a --deadline sets what is late)"
        );
        let ev = default_events(&auto);
        assert_eq!(&ev[..4], ["sched", "irq", "wq", "osnoise:sample_threshold"]);
        assert_eq!(ev.len(), 8);
    }
}
