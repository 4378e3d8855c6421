//! The bundled recordings in `examples/`, explained as the README tells a new user to:
//! each must agree with the lab program's own per-cycle log recorded beside it (`.truth`),
//! name the injected culprit, and print exactly the checked-in summary in
//! `examples/expected/` (after a deliberate change to the output, rewrite those with
//! `WHYLATE_BLESS=1 cargo test -p whylate-cli --test examples`).

use serde_json::Value;

mod common;
use common::{repo, whylate, FROB};

const TIMER: [&str; 5] = ["--timer", "--task", "periodic", "--deadline", "300us"];

/// (name, arguments after `explain FILE`, the file) of every checked example.
fn examples() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    vec![
        ("frob", "examples/frob.dat.zst", FROB.to_vec()),
        // perf.data stores no kernel symbols: the recording machine's ride beside it.
        (
            "frob.perf",
            "examples/frob.perf.data.zst",
            [
                &FROB[..],
                &["--kallsyms", "examples/frob.perf.kallsyms.zst"],
            ]
            .concat(),
        ),
        // The frob recording as traced writes it (Google's classes, compact_sched).
        ("frob.pftrace", "examples/frob.pftrace.gz", FROB.to_vec()),
        ("timer", "examples/timer.dat.zst", TIMER.to_vec()),
        ("softirq", "examples/softirq.dat.zst", TIMER.to_vec()),
        (
            "softirq-mitigated",
            "examples/softirq-mitigated.dat.zst",
            TIMER.to_vec(),
        ),
        ("pty-poll", "examples/pty-poll.ftrace.gz", FROB.to_vec()),
        ("pty-poll-auto", "examples/pty-poll.ftrace.gz", Vec::new()),
    ]
}

/// The program's own (cycles, misses): frob logs `cycle write reply latency missed`
/// (latency 0: no reply), periodic logs `target woke late`.
fn truth(name: &str) -> Option<(u64, u64)> {
    // A copy of a recording in another format has the recording's log.
    let log = name.strip_suffix(".pftrace").unwrap_or(name);
    let path = repo().join(format!("examples/{log}.truth"));
    let text = std::fs::read_to_string(path).ok()?;
    let rows: Vec<Vec<i64>> = text
        .lines()
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect();
    let missed = if name.starts_with("frob") {
        rows.iter()
            .filter(|r| r[3] <= 0 || r[3] > 3_500_000)
            .count()
    } else {
        rows.iter().filter(|r| r[2] > 300_000).count()
    };
    Some((rows.len() as u64, missed as u64))
}

/// Compares with (or, under WHYLATE_BLESS=1, writes) `examples/expected/NAME.txt`.
fn golden(name: &str, got: &str) {
    let path = repo().join(format!("examples/expected/{name}.txt"));
    if std::env::var_os("WHYLATE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (WHYLATE_BLESS=1 writes it)", path.display()));
    if want != got {
        let first = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "{name}: the output differs from {} at line {}:\n  expected: {:?}\n  got:      {:?}\n(a deliberate change: WHYLATE_BLESS=1 cargo test -p whylate-cli --test examples)",
            path.display(),
            first + 1,
            want.lines().nth(first).unwrap_or("<end>"),
            got.lines().nth(first).unwrap_or("<end>")
        );
    }
}

fn first_actionable(j: &Value) -> &Value {
    j["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["culprit"]
                .as_object()
                .is_some_and(|o| o.keys().any(|k| k != "cpu"))
        })
        .unwrap_or_else(|| panic!("no cause names a culprit: {}", j["causes"]))
}

#[test]
fn every_example_matches_its_ground_truth_and_its_expected_summary() {
    for (name, file, args) in examples() {
        let mut a = vec!["explain", file];
        a.extend(&args);
        let (text, _) = whylate(&a);
        golden(name, &text);
        a.push("--json");
        let (json, _) = whylate(&a);
        let j: Value = serde_json::from_str(&json).unwrap();
        if let Some((count, misses)) = truth(name) {
            let (c, m) = (
                j["cycles"]["count"].as_u64().unwrap(),
                j["cycles"]["misses"].as_u64().unwrap(),
            );
            assert!(
                c.abs_diff(count) <= 1,
                "{name}: {c} cycles, the program logged {count}"
            );
            assert!(
                m.abs_diff(misses) <= 1,
                "{name}: {m} misses, the program counted {misses}"
            );
        }
        match name {
            "frob" | "frob.perf" | "frob.pftrace" | "timer" | "pty-poll" => {
                let top = first_actionable(&j);
                assert_eq!(top["culprit"]["comm"], "hog", "{name}: {top}")
            }
            _ => {}
        }
        // Two hogs on the chain's CPU are one thing to do: one line moves them both.
        if name == "frob" {
            // examples/README.md says how many replies were late: what whylate finds.
            let doc = std::fs::read_to_string(repo().join("examples/README.md")).unwrap();
            let said = doc
                .split(" replies later than 3.5 ms")
                .next()
                .and_then(|s| s.rsplit(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
                .expect("examples/README.md: N replies later than 3.5 ms");
            assert_eq!(said, j["cycles"]["misses"].as_u64().unwrap());
            let moves: Vec<&Value> = (j["advice"].as_array().unwrap().iter())
                .filter(|a| a["action"].as_str().unwrap().starts_with("Move hog"))
                .collect();
            assert_eq!(moves.len(), 1, "{}", j["advice"]);
            assert_eq!(
                moves[0]["action"],
                "Move hog (6717 and 6716) off CPU1, where the chain runs"
            );
        }
        match name {
            "softirq" => {
                let top = first_actionable(&j);
                assert_eq!(top["culprit"]["vector"], "NET_RX", "{name}: {top}");
                assert_eq!(top["culprit"]["cpu"], 1, "{name}: {top}");
            }
            "softirq-mitigated" => {
                for c in j["causes"].as_array().unwrap() {
                    assert!(
                        c["culprit"]["vector"] != "NET_RX",
                        "the flood is received on CPU0 now: {c}"
                    );
                }
            }
            _ => {}
        }
    }
}

#[test]
fn diff_of_the_softirq_pair_says_the_fix_removed_net_rx() {
    let mut a = vec![
        "diff",
        "examples/softirq.dat.zst",
        "examples/softirq-mitigated.dat.zst",
    ];
    a.extend(TIMER);
    let (text, _) = whylate(&a);
    golden("diff-softirq", &text);
    let verdict = text.lines().next().unwrap();
    assert!(
        verdict.contains("removed softirq NET_RX on CPU1"),
        "{verdict}"
    );
    a.push("--json");
    let (json, _) = whylate(&a);
    let j: Value = serde_json::from_str(&json).unwrap();
    let (ta, tb) = (
        truth("softirq").unwrap(),
        truth("softirq-mitigated").unwrap(),
    );
    assert!(j["a"]["cycles"]["misses"].as_u64().unwrap().abs_diff(ta.1) <= 1);
    assert!(j["b"]["cycles"]["misses"].as_u64().unwrap().abs_diff(tb.1) <= 1);
    assert!(tb.1 < ta.1, "the mitigation must help: {ta:?} -> {tb:?}");
    let net_rx = j["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["culprit"] == "softirq NET_RX" && c["cpu"] == 1)
        .expect("NET_RX on CPU1 among the causes");
    assert_eq!(net_rx["status"], "vanished", "{net_rx}");
    // CPU1's NET_RX time went away with it.
    let cpu1 = j["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cpu"] == 1)
        .expect("CPU1 moved");
    let ch = cpu1["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "softirq NET_RX")
        .expect("NET_RX share on CPU1 changed");
    assert!(
        ch["a"].as_f64().unwrap() > 0.01 && ch["b"].as_f64().unwrap() < 0.005,
        "{ch}"
    );
}

#[test]
fn diff_of_a_trace_with_itself_changes_nothing() {
    let mut a = vec![
        "diff",
        "examples/frob.dat.zst",
        "examples/frob.dat.zst",
        "--json",
    ];
    a.extend(FROB);
    let (json, _) = whylate(&a);
    let j: Value = serde_json::from_str(&json).unwrap();
    let v = j["verdict"].as_str().unwrap();
    assert!(v.ends_with("(unchanged)"), "{v}");
    assert!(j["cpus"].as_array().unwrap().is_empty());
    assert!(j["irqs"].as_array().unwrap().is_empty());
    for c in j["causes"].as_array().unwrap() {
        assert_eq!(c["status"], "same", "{c}");
    }
}

/// frob's automatic mode: the recorder's /proc rescan (nice 19) held the client's CPU for
/// 10% of the blamed excess, ranked last behind nine causes of the workload. Its advice
/// (how to record with less disturbance) still comes, after the workload's; a minority
/// share gets no line under the verdict.
#[test]
fn the_recorders_share_gets_its_advice_behind_the_workloads_causes() {
    let (json, _) = whylate(&["explain", "examples/frob.dat.zst", "--json"]);
    let j: Value = serde_json::from_str(&json).unwrap();
    let causes = j["causes"].as_array().unwrap();
    let rec = causes
        .iter()
        .position(|c| c["culprit"]["comm"] == "whylate");
    assert_eq!(rec, Some(causes.len() - 1), "{causes:?}");
    assert!(
        rec.unwrap() >= 3,
        "ranked behind three causes of the workload"
    );
    let advice = j["advice"].as_array().unwrap();
    let first = advice[0]["action"].as_str().unwrap();
    assert!(first.contains("hog"), "{first}");
    let last = advice.last().unwrap()["action"].as_str().unwrap();
    assert!(last.starts_with("The recorder itself (whylate["), "{last}");
    let blind = j["blind"].as_array().unwrap();
    assert!(
        !blind
            .iter()
            .any(|b| b.as_str().unwrap().starts_with("the recorder itself")),
        "{blind:?}"
    );
}

#[test]
fn a_cut_trace_dat_is_blindness_not_device_time() {
    // frob.dat cut at 94% of its length: the end of CPU1's data (the chain's CPU) is gone.
    let raw = zstd::decode_all(std::fs::File::open(repo().join("examples/frob.dat.zst")).unwrap())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("frob-cut.dat");
    std::fs::write(&cut, &raw[..raw.len() * 94 / 100]).unwrap();
    let mut a = vec!["explain", cut.to_str().unwrap()];
    a.extend(FROB);
    a.push("--json");
    let (json, _) = whylate(&a);
    let j: Value = serde_json::from_str(&json).unwrap();
    // The verdict says where and from when the trace is blind.
    let blind = j["blind"].as_array().unwrap();
    assert_eq!(blind.len(), 1, "{blind:?}");
    assert!(
        blind[0].as_str().unwrap().starts_with("CPU1 from "),
        "{blind:?}"
    );
    // Time on CPU1 after the cut is not the device's, and the blind spot ranks after
    // every cause the trace shows: the first is still the hog.
    let causes = j["causes"].as_array().unwrap();
    assert!(
        causes.iter().all(|c| c["category"] != "device/external"),
        "{causes:?}"
    );
    assert_eq!(causes[0]["culprit"]["comm"], "hog", "{}", causes[0]);
    assert!(
        causes.iter().any(|c| c["category"] == "trace-cut"),
        "{causes:?}"
    );
}

/// The main job read in windows much smaller than the trace (10, 3,000 and 8,000 events:
/// a window holds 30 to 250 cycles, and every cut falls inside a cycle or a wait) gives the
/// whole trace's answer on every shape the recording comes in (trace.dat, perf.data,
/// Perfetto, ftrace text of a polling reader): the same cycles, quantiles and histogram,
/// the same misses, the same blind spots, CPU profiles and context, and the same first
/// cause. The causes below it may differ by a few microseconds: each window learns the
/// usual chain from its own good cycles.
#[test]
fn the_main_job_in_windows_gives_the_whole_traces_answer_on_every_shape() {
    let shapes: [(&str, &[&str]); 4] = [
        ("examples/frob.dat.zst", &[]),
        (
            "examples/frob.perf.data.zst",
            &["--kallsyms", "examples/frob.perf.kallsyms.zst"],
        ),
        ("examples/frob.pftrace.gz", &[]),
        ("examples/pty-poll.ftrace.gz", &[]),
    ];
    let json = |file: &str, extra: &[&str], w: &str| -> Value {
        let mut a = vec!["explain", file, "--json"];
        a.extend(FROB);
        a.extend(extra);
        a.extend(["--window-events", w]);
        serde_json::from_str(&whylate(&a).0).unwrap()
    };
    let misses = |j: &Value| -> Vec<(Value, Value, Value)> {
        (j["misses"].as_array().unwrap().iter())
            .map(|m| {
                (
                    m["start_ns"].clone(),
                    m["duration_ns"].clone(),
                    m["late_ns"].clone(),
                )
            })
            .collect()
    };
    let first = |j: &Value| {
        (
            j["causes"][0]["category"].clone(),
            j["causes"][0]["culprit"].clone(),
        )
    };
    for (file, extra) in shapes {
        let whole = json(file, extra, "0");
        assert!(whole["cycles"]["misses"].as_u64().unwrap() >= 5, "{file}");
        // 10: windows far smaller than the context they share (each must take at least
        // that, or every event is fed to thousands of windows).
        for w in ["10", "3000", "8000"] {
            let parts = json(file, extra, w);
            let note = parts["notes"].as_array().unwrap().iter();
            let said = note
                .filter_map(|n| n.as_str())
                .any(|n| n.starts_with("explained in "));
            assert!(said, "{file} in windows of {w}: {}", parts["notes"]);
            for key in ["cycles", "blind", "cpus", "context", "events", "machine"] {
                if key == "context" {
                    // The role names the CPU's first cause, which may differ below the top.
                    let cpus = |j: &Value| -> Vec<(Value, Value)> {
                        (j["context"].as_array().unwrap().iter())
                            .map(|c| (c["cpu"].clone(), c["busy"].clone()))
                            .collect()
                    };
                    assert_eq!(
                        cpus(&parts),
                        cpus(&whole),
                        "{file} in windows of {w}: context"
                    );
                    continue;
                }
                assert_eq!(parts[key], whole[key], "{file} in windows of {w}: {key}");
            }
            assert_eq!(misses(&parts), misses(&whole), "{file} in windows of {w}");
            assert_eq!(first(&parts), first(&whole), "{file} in windows of {w}");
        }
    }
}
