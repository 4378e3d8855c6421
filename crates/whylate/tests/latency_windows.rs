//! `latency` in windows gives the whole trace's answer: every trace we have (the seeds'
//! excerpts, the examples, the corpus) measured held whole and in small windows, the
//! reports compared field by field. Windows far smaller than the real ones (one event
//! to a few thousand) put many cuts inside long samples, open handlers, armed timers
//! and queued work, which is what the carried state must get right.

use serde_json::Value;
use std::path::Path;
use whylate::latency::{latency, latency_in};
use whylate::measure::Options;
use whylate::pipeline::Windowing;
use whylate::read::{OpenOptions, Opened};

/// The report as JSON, without the line that says it was measured in windows.
fn json(r: &whylate::latency::LatencyReport) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    if let Some(Value::Array(notes)) = v.get_mut("notes") {
        notes.retain(|n| !n.as_str().unwrap_or("").starts_with("measured in "));
    }
    v
}

fn check(path: &Path, w: Windowing) -> Option<String> {
    let open = OpenOptions::default();
    let o = Options::default();
    let whole = latency(
        Opened::files(&[path.to_path_buf()], &open).ok()?,
        &open,
        &o,
        None,
    )
    .ok()?;
    let parts = latency_in(
        Opened::files(&[path.to_path_buf()], &open).ok()?,
        &open,
        &o,
        None,
        w,
    );
    let parts = match parts {
        Ok(p) => p,
        Err(e) => return Some(format!("{}: windows failed: {e}", path.display())),
    };
    let mut out = Vec::new();
    let (a, b) = (json(&whole), json(&parts));
    whylate::testkit::json_differences(&a, &b, String::new(), &mut out);
    // The documented exception: where the trace contradicts itself (a task woken again
    // while it was believed runnable), a wait open at a window's end that the later
    // wakeup shows was never one can be named among the tasks an irq kept waiting.
    let rewoken = whole.anomalies.rewoken_while_runnable > 0;
    let irq = (whole.measures.iter()).position(|m| m.measure == whylate::measure::Measure::Irq);
    let tolerated = |d: &String| {
        rewoken
            && irq.is_some_and(|i| d.starts_with(&format!(".measures[{i}]")))
            && d.contains("].detail: ")
            && d.contains("tasks kept waiting")
    };
    out.retain(|d| !tolerated(d));
    let name = path.file_name()?.to_string_lossy();
    (!out.is_empty()).then(|| {
        format!(
            "{name} ({} events a window): {}",
            w.events,
            out.join("\n    ")
        )
    })
}

#[test]
fn every_trace_in_windows_gives_the_whole_traces_report() {
    let mut bad = Vec::new();
    let mut tried = 0;
    for f in whylate::testkit::every_trace_file() {
        let open = OpenOptions::default();
        let Ok(events) = Opened::files(std::slice::from_ref(&f), &open)
            .and_then(|i| latency(i, &open, &Options::default(), None))
            .map(|r| r.events)
        else {
            continue;
        };
        tried += 1;
        // Inputs made bad on purpose (cut, truncated, lost events) are read in windows
        // without error; their answers can differ from the whole trace's where the data
        // contradicts itself (a wait open at a window's end that a later wakeup of the
        // same task shows was never one).
        let is_bad = f.components().any(|c| c.as_os_str() == "bad");
        // Windows of one event are as short as their context allows (each holds 60 ms
        // before its stretch and 20 ms after).
        for events in [1, events / 7, events / 3] {
            let w = Windowing {
                events: events.max(1),
                ..whylate::latency::WINDOWING
            };
            match check(&f, w) {
                Some(d) if !is_bad || d.contains("windows failed") => bad.push(d),
                _ => {}
            }
        }
    }
    assert!(tried > 10, "only {tried} traces read");
    assert!(
        bad.is_empty(),
        "{} differences:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
