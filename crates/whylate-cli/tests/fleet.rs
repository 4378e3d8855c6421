//! Fleet scale: findings of 1,000 synthetic hosts (the bundled examples, explained once
//! each, written for hosts that differ by kernel, labels and example), ranked by
//! `whylate fleet` exactly as the examples' own `explain --json` outputs summed by hand
//! say; and (engines.rs) the SQL it prints, run as printed on Spark and DuckDB.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

mod common;
use common::{repo, whylate};
#[path = "fleet/engines.rs"]
mod engines;
use whylate::explain::ExplainReport;
use whylate_fleet::synth;

/// The culprit key the fleet groups by, from `explain --json`'s culprit object: task
/// name, else `irq NAME` / `irq N`, else `softirq VECTOR`, then the code; no pid (not even
/// one written in the code's words), no CPU.
fn hand_key(c: &Value) -> String {
    let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
    let mut k = if let Some(comm) = s("comm") {
        comm
    } else if let Some(n) = s("irq_name") {
        format!("irq {n}")
    } else if let Some(i) = c.get("irq").and_then(Value::as_u64) {
        format!("irq {i}")
    } else if let Some(v) = s("vector") {
        format!("softirq {v}")
    } else {
        String::new()
    };
    if let Some(code) = s("caller") {
        if !k.is_empty() {
            k.push(' ');
        }
        // A pid written in the words (`while kdamond.0[78] ran`) goes too.
        let mut rest = code.as_str();
        while let Some(i) = rest.find('[') {
            let digits = rest[i + 1..].bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && rest[i + 1 + digits..].starts_with(']') {
                k.push_str(&rest[..i]);
                rest = &rest[i + digits + 2..];
            } else {
                k.push_str(&rest[..=i]);
                rest = &rest[i + 1..];
            }
        }
        k.push_str(rest);
    }
    k
}

fn is_auto(h: &synth::Host) -> bool {
    synth::examples()[h.example].2.name() == "auto"
}

/// (category, culprit) -> (excess, misses, hosts), summed by hand over the hosts.
/// Per cause: (excess, misses, hosts, time counted once).
type Sums = BTreeMap<(String, String), (u64, u64, BTreeSet<String>, u64)>;

/// Per example: (category, culprit key) -> the misses whose blame names it, each once
/// (two pids of one task, `hog[1]` and `hog[2]`, blamed for one miss are one miss).
type Distinct = Vec<BTreeMap<(String, String), u64>>;

fn distinct_misses(reports: &[(&str, ExplainReport)]) -> Distinct {
    reports
        .iter()
        .map(|(_, r)| {
            let mut per = BTreeMap::new();
            for m in &r.misses {
                let keys: BTreeSet<(String, String)> = (m.blame.iter())
                    .map(|((cat, who), _)| {
                        (
                            cat.id().to_string(),
                            hand_key(&serde_json::to_value(who).unwrap()),
                        )
                    })
                    .collect();
                for k in keys {
                    *per.entry(k).or_default() += 1;
                }
            }
            per
        })
        .collect()
}

fn sum_by_hand(
    jsons: &[Value],
    distinct: &Distinct,
    hosts: &[synth::Host],
    only: impl Fn(&synth::Host) -> bool,
) -> Sums {
    let mut want = Sums::new();
    for h in hosts.iter().filter(|h| only(h)) {
        let mut causes = BTreeSet::new();
        for c in jsons[h.example]["causes"].as_array().unwrap() {
            let key = (
                c["category"].as_str().unwrap().to_string(),
                hand_key(&c["culprit"]),
            );
            let e = want.entry(key.clone()).or_default();
            e.0 += c["total_excess_ns"].as_u64().unwrap();
            e.3 += c["once_ns"].as_u64().unwrap();
            e.2.insert(h.host.clone());
            causes.insert(key);
        }
        for key in causes {
            want.get_mut(&key).unwrap().1 += distinct[h.example].get(&key).copied().unwrap_or(0);
        }
    }
    want
}

/// The hand sums in the fleet's order: the blind spots last, the time counted once, excess,
/// then misses, descending; then names.
fn ranked(want: &Sums) -> Vec<(String, String, u64, u64, u64)> {
    let once = |c: &String, k: &String| want[&(c.clone(), k.clone())].3;
    let mut v: Vec<_> = want
        .iter()
        .map(|((c, k), (e, m, h, _))| (c.clone(), k.clone(), *e, *m, h.len() as u64))
        .collect();
    let blind = |c: &str| ["trace-cut", "unknown-lost-events", "switch-in-untraced"].contains(&c);
    v.sort_by(|a, b| {
        blind(&a.0)
            .cmp(&blind(&b.0))
            .then(once(&b.0, &b.1).cmp(&once(&a.0, &a.1)))
            .then(b.2.cmp(&a.2))
            .then(b.3.cmp(&a.3))
            .then(a.0.cmp(&b.0))
            .then(a.1.cmp(&b.1))
    });
    v
}

fn fleet_causes(r: &Value) -> Vec<(String, String, u64, u64, u64)> {
    cause_rows(&r["causes"])
}

/// (category, culprit, excess, misses, hosts) of each row of a causes array.
fn cause_rows(causes: &Value) -> Vec<(String, String, u64, u64, u64)> {
    causes
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["category"].as_str().unwrap().to_string(),
                c["culprit"].as_str().unwrap().to_string(),
                c["excess_ns"].as_u64().unwrap(),
                c["misses"].as_u64().unwrap(),
                c["hosts"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn fleet_json(args: &[&str]) -> Value {
    let (out, _) = whylate(args);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_thousand_hosts_rank_as_their_explain_outputs_sum() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("findings");
    let reports = synth::explain_examples(&repo()).unwrap();
    let jsons: Vec<Value> = reports
        .iter()
        .map(|(_, r)| serde_json::to_value(r).unwrap())
        .collect();
    let distinct = distinct_misses(&reports);
    let hosts = synth::plan(1000);
    let w = synth::write_fleet(&dir, &reports, &hosts).unwrap();
    assert_eq!(w.files, 1000 * whylate_fleet::TABLES.len());
    let d = dir.to_str().unwrap();

    let r = fleet_json(&["fleet", d, "--json", "--top", "1000", "--by", "kernel"]);
    let want = sum_by_hand(&jsons, &distinct, &hosts, |_| true);
    assert!(want.len() > 5, "the examples name several causes");
    assert_eq!(fleet_causes(&r), ranked(&want));
    let total: u64 = want.values().map(|v| v.3).sum();
    for c in r["causes"].as_array().unwrap() {
        let share = c["once_ns"].as_u64().unwrap() as f64 / total as f64;
        assert!((c["share"].as_f64().unwrap() - share).abs() < 1e-9);
    }
    // Samples and misses count analyses that judge a deadline: not the automatic mode.
    let judged: Vec<&synth::Host> = hosts.iter().filter(|h| !is_auto(h)).collect();
    assert!(judged.len() < hosts.len());
    let sum = |f: &dyn Fn(&Value) -> u64| judged.iter().map(|h| f(&jsons[h.example])).sum::<u64>();
    assert_eq!(r["hosts"], 1000);
    assert_eq!(r["traces"], 1000);
    assert_eq!(r["kernels"], 2);
    assert_eq!(
        r["samples"].as_u64().unwrap(),
        sum(&|j| j["cycles"]["count"].as_u64().unwrap())
    );
    assert_eq!(
        r["misses"].as_u64().unwrap(),
        sum(&|j| j["cycles"]["misses"].as_u64().unwrap())
    );

    // The softirq lab runs unmitigated only on the new kernel: its NET_RX cause appeared
    // there, and nowhere did a cause appear on the old kernel only by that lab.
    let changes = r["changes"].as_array().unwrap();
    let net_rx = changes
        .iter()
        .find(|c| c["culprit"].as_str().unwrap().contains("NET_RX"))
        .unwrap_or_else(|| panic!("no NET_RX change in {changes:?}"));
    assert_eq!(net_rx["group"], synth::KERNELS[1]);
    assert_eq!(net_rx["kind"], "appeared");
    assert_eq!(r["groups"].as_array().unwrap().len(), 2);

    // By label, per team: each team's causes as its hosts' outputs sum.
    let by_team = fleet_json(&["fleet", d, "--json", "--top", "1000", "--by", "label:team"]);
    let teams: Vec<&str> = by_team["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(teams, ["a", "b", "c"]);

    // Worst hosts: the highest miss rate first, ties by misses then name.
    let worst = &r["worst_hosts"][0];
    let rate = |j: &Value| {
        j["cycles"]["misses"].as_f64().unwrap() / j["cycles"]["count"].as_f64().unwrap().max(1.0)
    };
    let best_rate = judged
        .iter()
        .map(|h| rate(&jsons[h.example]))
        .fold(0.0, f64::max);
    assert!((worst["miss_rate"].as_f64().unwrap() - best_rate).abs() < 1e-12);

    deadline_rejudges(d, &jsons, &distinct, &hosts);
}

/// `--deadline` judges samples again: at the traces' own deadline it gives what the
/// causes tables say; at a longer one only the misses over it, by their own blame.
fn deadline_rejudges(d: &str, jsons: &[Value], distinct: &Distinct, hosts: &[synth::Host]) {
    let timer = |h: &synth::Host| synth::examples()[h.example].2.name() == "timer";
    let timer_fleet = |extra: &[&str]| {
        let mut a = vec!["fleet", d, "--json", "--top", "1000", "--mode", "timer"];
        a.extend(extra);
        fleet_json(&a)
    };
    let own = timer_fleet(&[]);
    let same = timer_fleet(&["--deadline", "300us"]);
    // The same rows; judged again, they rank by each miss's excess (a miss's blame holds
    // no overlap with the others' to count once), not by the time counted once.
    let sorted = |mut v: Vec<_>| {
        v.sort();
        v
    };
    assert_eq!(sorted(fleet_causes(&own)), sorted(fleet_causes(&same)));
    assert_eq!(
        fleet_causes(&own),
        ranked(&sum_by_hand(jsons, distinct, hosts, timer))
    );
    let longer = timer_fleet(&["--deadline", "1ms"]);
    let want: u64 = hosts
        .iter()
        .filter(|h| timer(h))
        .map(|h| {
            jsons[h.example]["misses"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["duration_ns"].as_u64().is_none_or(|v| v > 1_000_000))
                .count() as u64
        })
        .sum();
    assert_eq!(longer["misses"].as_u64().unwrap(), want);
    let blamed: u64 = fleet_causes(&longer).iter().map(|c| c.2).sum();
    let all: u64 = fleet_causes(&own).iter().map(|c| c.2).sum();
    assert!(blamed < all, "fewer misses, less excess: {blamed} vs {all}");
}

#[test]
fn explain_and_latency_write_what_fleet_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    let timer = ["--timer", "--task", "periodic", "--deadline", "300us"];
    let mut args = vec!["explain", "examples/timer.dat.zst"];
    args.extend(timer);
    args.extend([
        "--json",
        "--parquet",
        d,
        "--host",
        "rig-1",
        "--label",
        "team=rt",
    ]);
    let (out, err) = whylate(&args);
    assert!(err.contains("wrote findings to"), "{err}");
    let rep: Value = serde_json::from_str(&out).unwrap();
    // The library's own report, as the synthetic fleet writes it, is what the CLI prints
    // (but for the path it was given).
    let lib = synth::explain_examples(&repo()).unwrap();
    // Through text on both sides: serde_json's float parsing may round the last bit.
    let mut lib: Value = serde_json::from_str(&serde_json::to_string(&lib[1].1).unwrap()).unwrap();
    lib["inputs"][0]["path"] = rep["inputs"][0]["path"].clone();
    let differ: Vec<&String> = rep
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, v)| lib.get(k.as_str()) != Some(v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        differ.is_empty(),
        "CLI and library reports differ in {differ:?}"
    );
    let part = tmp.path().join("causes/host=rig-1");
    assert!(part.is_dir(), "hive layout: {}", part.display());

    let (lat, _) = whylate(&[
        "latency",
        "examples/timer.dat.zst",
        "--json",
        "--parquet",
        d,
        "--host",
        "rig-1",
    ]);
    let lat: Value = serde_json::from_str(&lat).unwrap();
    assert!(
        !lat.to_string().contains("\"samples\":["),
        "samples stay out of the JSON unless --samples"
    );
    let n: u64 = lat["measures"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["groups"].as_array().unwrap())
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    let f = fleet_json(&["fleet", d, "--json", "--mode", "latency"]);
    assert_eq!(f["samples"].as_u64().unwrap(), n);
    let f = fleet_json(&["fleet", d, "--json", "--mode", "timer"]);
    assert_eq!(f["misses"], rep["cycles"]["misses"]);

    // The same analysis again replaces its files instead of adding a copy.
    let mut again = args.clone();
    again.retain(|a| *a != "--json");
    whylate(&again);
    let f = fleet_json(&["fleet", d, "--json", "--mode", "timer"]);
    assert_eq!(f["traces"], 1);

    // HTML and SQL.
    let html = tmp.path().join("fleet.html");
    let (text, _) = whylate(&["fleet", d, "--sql", "--html", html.to_str().unwrap()]);
    assert!(text.starts_with("whylate fleet: 1 hosts"), "{text}");
    assert!(text.contains("-- causes\nSELECT"), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Causes across the fleet"));
}

#[test]
fn bad_fleet_input_is_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("stuff")).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let d = tmp.path().to_str().unwrap();
    let (code, err) = run(&["fleet", d]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("no findings tables") && err.contains("traces"),
        "{err}"
    );
    assert!(err.contains("stuff"), "says what it found: {err}");
    let glob = format!("{d}/nothing-*");
    let (code, err) = run(&["fleet", &glob]);
    assert_eq!(code, Some(2));
    assert!(err.contains("matches no directory"), "{err}");
    let (code, err) = run(&["fleet", d, "--by", "rack"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("label:KEY"), "{err}");
    let (code, err) = run(&["explain", "x.dat", "--parquet", d, "--label", "nokey"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("key=value"), "{err}");
    let (code, err) = run(&["explain", "x.dat", "--host", "h"]);
    assert_eq!(code, Some(2), "--host needs --parquet: {err}");
    // A mode no trace is written under is refused, naming the modes.
    for mode in ["nosuch", "Timer"] {
        let (code, err) = run(&["fleet", d, "--mode", mode]);
        assert_eq!(code, Some(2), "--mode {mode}: {err}");
        assert!(err.contains("possible values: cycles, timer"), "{err}");
    }
}

/// `explain --timer` of the timer example for host `rig-1`, findings under `d`, labelled
/// `run=RUN`: the process, not waited for.
fn write_timer_findings(d: &str, run: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args([
            "explain",
            "examples/timer.dat.zst",
            "--timer",
            "--task",
            "periodic",
        ])
        .args(["--deadline", "300us", "--parquet", d, "--host", "rig-1"])
        .args(["--label", &format!("run={run}")])
        .current_dir(repo())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The exit code and stderr of a finished run.
fn ended(c: std::process::Child) -> (Option<i32>, String) {
    let o = c.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_parquet_write_that_fails_part_way_leaves_nothing_fleet_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    let (code, err) = ended(write_timer_findings(d, "a"));
    assert_eq!(code, Some(0), "{err}");
    let f = fleet_json(&["fleet", d, "--json"]);
    assert_eq!(f["traces"], 1);
    // A directory where this trace's `misses` goes: the rewrite fails after `traces`
    // and `samples` were put in place.
    let part = tmp.path().join("misses/host=rig-1");
    let day = std::fs::read_dir(&part)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::read_dir(&day)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let (code, err) = ended(write_timer_findings(d, "b"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with(&format!("whylate: {}: ", file.display())) && err.lines().count() == 1,
        "{err}"
    );
    let f = fleet_json(&["fleet", d, "--json"]);
    assert_eq!(
        (f["traces"].as_u64(), f["misses"].as_u64()),
        (Some(0), Some(0))
    );
}

#[test]
fn two_processes_writing_one_trace_leave_one_whole_set() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    for round in 0..3 {
        let a = write_timer_findings(d, &format!("{round}a"));
        let b = write_timer_findings(d, &format!("{round}b"));
        for (code, err) in [ended(a), ended(b)] {
            assert_eq!(code, Some(0), "{err}");
        }
        // Every table of the trace is from the same run: one group by the run label,
        // and the misses its causes count are that run's.
        let f = fleet_json(&["fleet", d, "--json", "--by", "label:run"]);
        assert_eq!(f["traces"], 1);
        assert_eq!(f["groups"].as_array().unwrap().len(), 1, "{}", f["groups"]);
        let files = |t: &str| parquet_files(&tmp.path().join(t));
        assert_eq!((files("labels"), files("traces")), (1, 1));
    }
}

/// `.parquet` files under `dir`, at any depth.
fn parquet_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| match p.is_dir() {
            true => parquet_files(&p),
            false => usize::from(p.extension().is_some_and(|x| x == "parquet")),
        })
        .sum()
}

#[test]
fn a_findings_file_that_does_not_fit_its_table_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    let (code, err) = ended(write_timer_findings(d, "a"));
    assert_eq!(code, Some(0), "{err}");
    let day = std::fs::read_dir(tmp.path().join("traces/host=rig-1"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::read_dir(&day)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&file, b"not parquet").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(["fleet", d])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let want = format!("whylate: {}: not a readable Parquet file (", file.display());
    assert!(err.starts_with(&want) && err.lines().count() == 1, "{err}");
}
