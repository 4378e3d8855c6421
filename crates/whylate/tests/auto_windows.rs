//! Every mode read in windows gives the whole trace's answer: every trace we have (the
//! seeds' excerpts, the examples, the corpus) explained held whole and in small windows
//! (automatic, timer, softirq and function modes in two or three passes: the usuals, and
//! a deadline not given, over the whole trace, then each window's outliers judged against
//! them; `--expect` in one), the reports compared field by field.

use serde_json::Value;
use std::path::Path;
use whylate::explain::{report, Mode};
use whylate::pipeline::Windowing;
use whylate::read::{OpenOptions, Opened};

const MODE: Mode = Mode::Auto {
    top: 10,
    deadline_ns: None,
};

/// Timer mode with a deadline: read in two passes too.
fn timer_mode() -> Mode {
    Mode::Timer(whylate::explain::TimerOptions {
        task: None,
        deadline_ns: Some(1_000_000),
        top: 10,
    })
}

/// Timer mode without a deadline: read in three passes (the p99 first).
fn timer_p99() -> Mode {
    Mode::Timer(whylate::explain::TimerOptions {
        task: None,
        deadline_ns: None,
        top: 10,
    })
}

/// Softirq mode on `vector`, with or without a deadline: read in two passes.
fn softirq_mode(vector: &str, deadline_ns: Option<u64>) -> Mode {
    Mode::Softirq {
        vector: vector.into(),
        deadline_ns,
        top: 10,
    }
}

/// `--expect` on what most traces hold, per CPU and per field value: read in one pass,
/// each window holding its As until their B came.
fn expect_modes() -> Vec<Mode> {
    use whylate::explain::{ExpectOptions, Scope};
    let ms = |_: &str| Ok(100_000);
    let cpu = "irq_handler_entry -> softirq_raise within 1ms";
    let vec = "softirq_raise -> softirq_entry within 100us";
    [(cpu, Scope::Cpu), (vec, Scope::Field("vec".into()))]
        .into_iter()
        .map(|(p, scope)| Mode::Expect(ExpectOptions::parse(p, scope, 10, ms).unwrap()))
        .collect()
}

/// Function mode on every call (function_graph traces) and on seed 004's irqs-off
/// sections: read in two passes.
fn function_modes() -> Vec<Mode> {
    ["*", "console_unlock"]
        .into_iter()
        .map(|f| {
            Mode::Function(whylate::explain::FunctionOptions {
                func: whylate::glob::Glob::new(f).unwrap(),
                deadline_ns: None,
                expect_per_s: None,
                top: 10,
            })
        })
        .collect()
}

/// Every mode read in windows.
fn modes() -> Vec<Mode> {
    let mut m = vec![MODE, timer_mode(), timer_p99()];
    for (v, d) in [("NET_RX", None), ("TIMER", Some(50_000)), ("TASKLET", None)] {
        m.push(softirq_mode(v, d));
    }
    m.extend(expect_modes());
    m.extend(function_modes());
    m
}

/// The report as JSON, without what windows give in their own way (documented in
/// docs/reference.md): the line that says it was explained in windows, the misses past
/// the 1000 worst, and the CPU
/// profiles (a run whose end only a later window shows, by another task's event on its
/// CPU with no switch between, counts up to its window's close).
fn json(r: &whylate::explain::ExplainReport) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    if let Some(Value::Array(notes)) = v.get_mut("notes") {
        notes.retain(|n| !n.as_str().unwrap_or("").starts_with("explained in "));
    }
    v.as_object_mut().unwrap().remove("cpus");
    // Windows keep the worst misses in full up to a bound (timer mode lists them all).
    if let Some(Value::Array(misses)) = v.get_mut("misses") {
        misses.truncate(whylate::explain::KEEP_MISSES);
    }
    v
}

/// The whole report's longest priority inversion: a real-time task's block that windows
/// hold open at most 1 s or as many events again as a window takes; past that, the
/// window it ends in judges it with the context carried, which lacks the other tasks'
/// states before that window.
fn longest_inversion(r: &whylate::explain::ExplainReport) -> u64 {
    (r.misses.iter())
        .filter(|m| m.chain.first().is_some_and(|l| l.kind == "wait-for"))
        .filter_map(|m| m.duration_ns)
        .max()
        .unwrap_or(0)
}

fn opened(path: &Path, open: &OpenOptions) -> Option<Opened> {
    Opened::files(&[path.to_path_buf()], open).ok()
}

fn check(path: &Path, mode: &Mode, w: Windowing, hold: u64) -> Option<String> {
    let open = OpenOptions::default();
    let whole = report(
        opened(path, &open)?,
        &open,
        mode,
        Windowing { events: 0, ..w },
    );
    let parts = report(opened(path, &open)?, &open, mode, w);
    let (whole, parts) = match (whole, parts) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(_), Err(_)) => return None,
        (Ok(_), Err(e)) => return Some(format!("{}: windows failed: {e}", path.display())),
        (Err(e), Ok(_)) => {
            return Some(format!(
                "{}: whole failed ({e}), windows did not",
                path.display()
            ))
        }
    };
    let mut out = Vec::new();
    whylate::testkit::json_differences(&json(&whole), &json(&parts), String::new(), &mut out);
    if longest_inversion(&whole) >= hold {
        out.retain(|d| !d.starts_with(".misses") && !d.starts_with(".causes"));
    }
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
fn every_trace_in_windows_gives_the_whole_traces_outliers() {
    let mut bad = Vec::new();
    let mut tried = 0;
    for f in whylate::testkit::every_trace_file() {
        let open = OpenOptions::default();
        let Some(events) = opened(&f, &open)
            .and_then(|i| whylate::explain::run(i, &open, &MODE).ok())
            .map(|x| x.report.events)
        else {
            continue;
        };
        tried += 1;
        let is_bad = f.components().any(|c| c.as_os_str() == "bad");
        // How long a window is in time, about: a block longer than that is judged where
        // it ends.
        let span = whylate::explain::run(opened(&f, &open).unwrap(), &open, &MODE)
            .map(|x| {
                x.timeline
                    .last_ts
                    .saturating_sub(x.timeline.first_ts.unwrap_or(0))
            })
            .unwrap_or(0);
        for k in [7, 3] {
            let w = Windowing {
                events: (events / k).max(1),
                ..Windowing::DEFAULT
            };
            for mode in modes() {
                match check(&f, &mode, w, (span / k).min(1_000_000_000)) {
                    Some(d) if !is_bad || d.contains("failed") => {
                        bad.push(format!("{}: {d}", mode.name()))
                    }
                    _ => {}
                }
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

/// A plain (uncompressed) perf.data read in two passes: the second pass opens the file
/// again while the first reads it, and perf.data's header parser seeks, so each opening
/// needs an offset of its own (it once failed: "not a readable perf.data").
#[test]
fn a_plain_perf_data_is_read_twice() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let packed = root.join("frob.perf.data.zst");
    let f = std::fs::File::open(&packed).unwrap();
    let (mut rd, _, _) = whylate::read::decompress::open(&packed, Box::new(f)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("frob.perf.data");
    let mut out = std::fs::File::create(&plain).unwrap();
    std::io::copy(&mut rd, &mut out).unwrap();
    drop(out);
    let w = Windowing {
        events: 4000,
        ..Windowing::DEFAULT
    };
    for mode in [MODE, timer_mode()] {
        assert_eq!(check(&plain, &mode, w, 1_000_000_000), None);
    }
}
