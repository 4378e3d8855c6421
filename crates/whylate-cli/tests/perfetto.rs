//! Perfetto traces written by Google's own protobuf classes (tests/perfetto/convert.py,
//! `pip install perfetto`), never by whylate: recorded traces converted to Perfetto, with
//! typed events and with compact_sched, must explain the same as the originals; small
//! traces made by hand check interning, a packet larger than the read buffer, a cut, and
//! packets of kinds not read. The trace.dat examples reach the converter as `trace-cmd
//! report` text. Without the perfetto package (or trace-cmd) the test skips with the
//! reason, and with WHYLATE_REQUIRE_LIVE=1 (CI) a skip is a failure.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{repo, skip, whylate, FROB};

fn converter() -> PathBuf {
    repo().join("crates/whylate-cli/tests/perfetto/convert.py")
}

/// True when python3 has Google's perfetto package; else says why the test skips.
fn have_perfetto() -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    ok || !skip("python3's perfetto package is not installed (pip install perfetto)")
}

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn convert(text: &Path, out: &Path, extra: &[&str]) {
    run(Command::new("python3")
        .arg(converter())
        .arg("convert")
        .arg(text)
        .arg(out)
        .args(extra));
}

/// `trace-cmd report` text of a bundled trace.dat example (flags and ns timestamps).
fn report_text(example: &str, dir: &Path) -> Option<PathBuf> {
    if Command::new("trace-cmd").arg("--version").output().is_err() {
        skip(
            "trace-cmd is not installed: the trace.dat examples reach the converter as its report",
        );
        return None;
    }
    let dat = dir.join(format!("{example}.dat"));
    let packed = std::fs::read(repo().join(format!("examples/{example}.dat.zst"))).unwrap();
    std::fs::write(&dat, zstd::decode_all(&packed[..]).unwrap()).unwrap();
    let o = Command::new("trace-cmd")
        .args(["report", "-l", "-t", "-i"])
        .arg(&dat)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let txt = dir.join(format!("{example}.txt"));
    std::fs::write(&txt, o.stdout).unwrap();
    Some(txt)
}

/// The answer of an explain report: the cycle counts, every miss with its chain (each
/// link's kind, text and who held it), and the causes (category, culprit, count), with
/// their times when `exact`.
fn answer(j: &Value, exact: bool) -> Value {
    let ns = |v: &Value| if exact { v.clone() } else { Value::Null };
    let misses: Vec<Value> = (j["misses"].as_array().unwrap().iter())
        .map(|m| {
            let chain: Vec<Value> = (m["chain"].as_array().unwrap().iter())
                .map(|l| {
                    let held: Vec<Value> = (l["held_by"].as_array().unwrap().iter())
                        .map(|h| serde_json::json!([h["category"], h["culprit"], ns(&h["ns"])]))
                        .collect();
                    serde_json::json!([l["kind"], l["what"], l["cpu"], ns(&l["excess_ns"]), held])
                })
                .collect();
            serde_json::json!([
                m["start_ns"],
                m["duration_ns"],
                m["late_ns"],
                ns(&m["blamed_ns"]),
                chain
            ])
        })
        .collect();
    let causes: Vec<Value> = (j["causes"].as_array().unwrap().iter())
        .map(|c| {
            serde_json::json!([
                c["category"],
                c["culprit"],
                c["count"],
                ns(&c["total_excess_ns"])
            ])
        })
        .collect();
    let mut cycles = j["cycles"].clone();
    cycles.as_object_mut().map(|o| o.remove("pairing"));
    serde_json::json!({ "cycles": cycles, "misses": misses, "causes": causes })
}

fn explain(trace: &Path, args: &[&str]) -> Value {
    let t = trace.to_str().unwrap();
    let (out, _) = whylate(&[&["explain", t, "--json"], args].concat());
    serde_json::from_str(&out).unwrap()
}

/// Equal answers, or the first place they differ.
fn same(what: &str, want: &Value, got: &Value) {
    if want == got {
        return;
    }
    let (w, g) = (
        serde_json::to_string_pretty(want).unwrap(),
        serde_json::to_string_pretty(got).unwrap(),
    );
    let at = w
        .lines()
        .zip(g.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(0);
    panic!(
        "{what}: the Perfetto copy explains differently, from line {at}:\n  original: {:?}\n  perfetto: {:?}",
        w.lines().nth(at),
        g.lines().nth(at)
    );
}

const TIMER: [&str; 5] = ["--timer", "--task", "periodic", "--deadline", "300us"];

/// Recorded traces (three trace.dat examples through trace-cmd's report, and the bundled
/// ftrace text) converted to Perfetto: `explain` in cycles, timer and softirq modes gives
/// the same misses, chains and causes. Typed events carry everything the analysis uses,
/// so their times are equal too; compact_sched drops the flags of switches and the
/// priority a task had when switched out, so there the times may differ by a hair.
#[test]
fn converted_recordings_explain_the_same() {
    if !have_perfetto() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cases: Vec<(PathBuf, PathBuf, Vec<&str>)> = Vec::new();
    let pty = repo().join("examples/pty-poll.ftrace.gz");
    cases.push((pty.clone(), pty, FROB.to_vec()));
    for (ex, args) in [
        ("frob", FROB.to_vec()),
        ("timer", TIMER.to_vec()),
        ("softirq", TIMER.to_vec()),
        ("softirq", vec!["--softirq", "NET_RX"]),
    ] {
        let Some(txt) = report_text(ex, dir.path()) else {
            return;
        };
        cases.push((dir.path().join(format!("{ex}.dat")), txt, args));
    }
    for (i, (orig, text, args)) in cases.iter().enumerate() {
        let want = explain(orig, args);
        assert!(
            want["cycles"]["misses"].as_u64().unwrap() > 0,
            "{}: no misses to compare",
            orig.display()
        );
        for compact in [false, true] {
            let pf = dir.path().join(format!("{i}-{compact}.pftrace"));
            let mut extra = vec!["--names-from-events"];
            if compact {
                extra.push("--compact");
            }
            convert(text, &pf, &extra);
            let got = explain(&pf, args);
            let what = format!("{} {args:?} (compact: {compact})", orig.display());
            same(&what, &answer(&want, !compact), &answer(&got, !compact));
        }
    }
}

/// Trace processor reads a trace's bundles in any order; so does whylate. Recorded traces
/// converted with their bundles laid out as traced drains them but each period's CPUs
/// from the last, CPU by CPU, and one bundle per CPU, typed and compact, plain and
/// gzipped: each explains as the original does (the reorder window alone lost most of a
/// CPU's events CPU by CPU, and the first period's of the later CPU otherwise).
#[test]
fn every_bundle_layout_explains_as_the_original() {
    if !have_perfetto() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pty = repo().join("examples/pty-poll.ftrace.gz");
    let mut cases = vec![(pty.clone(), pty, FROB.to_vec(), true)];
    if let Some(txt) = report_text("timer", dir.path()) {
        cases.push((dir.path().join("timer.dat"), txt, TIMER.to_vec(), false));
    }
    for (orig, text, args, every_encoding) in &cases {
        let want = explain(orig, args);
        for layout in ["periods-reversed", "cpu-by-cpu", "one-per-cpu"] {
            for (compact, gz) in [(false, false), (true, true), (false, true), (true, false)] {
                if !every_encoding && compact != gz {
                    continue;
                }
                let name = format!("{layout}-{compact}-{gz}.pftrace");
                let pf = dir.path().join(name);
                let mut extra = vec!["--names-from-events", "--layout", layout];
                extra.extend(compact.then_some("--compact"));
                extra.extend(gz.then_some("--gzip"));
                convert(text, &pf, &extra);
                let got = explain(&pf, args);
                let what = format!(
                    "{} {args:?} ({layout}, compact {compact}, gzip {gz})",
                    orig.display()
                );
                same(&what, &answer(&want, !compact), &answer(&got, !compact));
                assert_eq!(got["inputs"][0]["order"]["unsorted"], 0, "{what}");
            }
        }
    }
}

fn fixture(name: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{name}.pftrace"));
    run(Command::new("python3")
        .arg(converter())
        .args(["fixture", name])
        .arg(&out));
    out
}

fn stats_json(p: &Path) -> Value {
    let (out, _) = whylate(&["stats", p.to_str().unwrap(), "--json"]);
    serde_json::from_str(&out).unwrap()
}

/// Hand-made traces: interned kernel symbols (and one id never interned), a gzipped copy,
/// a packet over 1 MiB (larger than the read buffer), a trace cut inside its last packet
/// (read to the cut, said), and packets of kinds not read (skipped, counted).
#[test]
fn hand_made_traces_read_as_made() {
    if !have_perfetto() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = whylate(&["stats", fixture("interned", dir.path()).to_str().unwrap()]);
    assert!(out.contains("3 events, perfetto format"), "{out}");
    let (out, _) = whylate(&[
        "explain",
        fixture("interned", dir.path()).to_str().unwrap(),
        "--json",
    ]);
    let _: Value = serde_json::from_str(&out).unwrap();
    let j = stats_json(&fixture("gzip", dir.path()));
    assert_eq!(j["inputs"][0]["compression"], "gzip", "{j}");
    assert_eq!(j["events"], 3);
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("1 kernel symbols were interned ids with no name"),
        "{notes}"
    );
    let big = stats_json(&fixture("big-packet", dir.path()));
    assert_eq!(big["events"], 20003, "{big}");
    let cut = stats_json(&fixture("cut", dir.path()));
    assert_eq!(cut["events"], 3, "the cut packet is not read: {cut}");
    let notes = cut["notes"].to_string();
    assert!(notes.contains("ends inside a packet"), "{notes}");
    // Gzipped and cut, the cut is said once, in the reader's words.
    let gz = fixture("gzip", dir.path());
    let packed = std::fs::read(&gz).unwrap();
    let gz_cut = dir.path().join("cut.pftrace.gz");
    std::fs::write(&gz_cut, &packed[..packed.len() - 12]).unwrap();
    let notes = stats_json(&gz_cut)["notes"].to_string();
    assert_eq!(
        notes.matches("the gzip stream is cut").count(),
        1,
        "{notes}"
    );
    let unk = stats_json(&fixture("unknown-packets", dir.path()));
    assert_eq!(unk["events"], 3);
    let notes = unk["notes"].to_string();
    assert!(
        notes.contains("android_log 3") && notes.contains("battery 1"),
        "{notes}"
    );
}
