//! The printed SQL holds on other engines: `whylate fleet --sql-only --engine spark|duckdb`
//! scripts, run statement by statement as printed (pyspark in local mode, DuckDB's Python
//! package), give every section the rows `whylate fleet --json` reports, over a fleet
//! built to trip them: 120 hosts on three kernels, a label value that needs quoting, a host
//! name that reads as a number, traces whose write lost its commit marker, a committed
//! trace's file copied under another name, all under a directory whose name needs quoting;
//! beside it a second root written before commit markers, one of its traces without its
//! `traces` file (a write that failed part-way).

use super::{cause_rows, fleet_json};
use crate::common::{repo, skip};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use whylate_fleet::report::cause_label;
use whylate_fleet::synth;

/// The bundled examples explained, as the synthetic fleet writes them.
type Reports = [(&'static str, whylate::explain::ExplainReport)];

/// The label value that needs quoting in SQL and in the terminal.
const ODD: &str = "o'brien \"rt\" = x";

/// Writes the fleet; returns the hosts whose markers were taken away.
fn build(dir: &Path, reports: &Reports) -> Vec<String> {
    let mut hosts = synth::plan(120);
    for (i, h) in hosts.iter_mut().enumerate() {
        if i % 7 == 3 {
            h.kernel = "5.15.0-synthetic";
        }
        if i % 11 == 5 {
            h.labels.push(("owner".into(), ODD.into()));
        } else if i % 11 == 6 {
            h.labels.push(("owner".into(), "rt-team".into()));
        }
    }
    // A host whose name an engine guessing types would read as the number 7.
    hosts[10].host = "007".into();
    synth::write_fleet(dir, reports, &hosts).unwrap();
    let mut unmarked = Vec::new();
    for h in ["h00013", "h00070", "h00101"] {
        let d = dir.join(format!("_committed/host={h}/date=2026-11-25"));
        for m in std::fs::read_dir(&d).unwrap() {
            std::fs::remove_file(m.unwrap().path()).unwrap();
        }
        unmarked.push(h.to_string());
    }
    // A committed trace's causes under another name: its rows claim that trace's id.
    let d = dir.join("causes/host=h00002/date=2026-11-25");
    let f = std::fs::read_dir(&d)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::copy(&f, d.join("copy-of-a-trace.parquet")).unwrap();
    unmarked
}

/// A root as written before commit markers: hosts `old00000`..`old00005`, and of
/// `old00002` every table but `traces` (whylate does not count it; neither may the views).
fn build_old(dir: &Path, reports: &Reports) {
    let mut hosts = synth::plan(6);
    for (i, h) in hosts.iter_mut().enumerate() {
        h.host = format!("old{i:05}");
    }
    synth::write_fleet(dir, reports, &hosts).unwrap();
    std::fs::remove_dir_all(dir.join("_committed")).unwrap();
    std::fs::remove_dir_all(dir.join("traces/host=old00002")).unwrap();
}

/// Each variant: its arguments after the findings directories.
const VARIANTS: [&[&str]; 4] = [
    &["--by", "kernel"],
    &["--by", "host"],
    &["--by", "label:owner"],
    &["--mode", "timer", "--deadline", "1ms", "--by", "label:team"],
];

#[test]
fn spark_and_duckdb_run_the_printed_sql_and_agree_with_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("o'neil's findings");
    let reports = synth::explain_examples(&repo()).unwrap();
    let unmarked = build(&dir, &reports);
    let old = tmp.path().join("old findings");
    build_old(&old, &reports);
    let (d, d2) = (dir.to_str().unwrap(), old.to_str().unwrap());
    let mut jsons = Vec::new();
    for v in VARIANTS {
        let mut a = vec!["fleet", d, d2, "--json", "--top", "1000"];
        a.extend(v);
        jsons.push(fleet_json(&a));
    }
    let r0 = &jsons[0];
    // 117 marked hosts of 120, 5 old ones of 6 (one lost its `traces` file).
    assert_eq!(r0["hosts"], 122, "three hosts' traces lost their markers");
    let hosts: Vec<&str> = (r0["worst_hosts"].as_array().unwrap().iter())
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert!(hosts.contains(&"007"));
    assert!(unmarked.iter().all(|h| !hosts.contains(&h.as_str())));
    let owners: Vec<&str> = (jsons[2]["groups"].as_array().unwrap().iter())
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(owners, ["(no owner)", ODD, "rt-team"]);

    for engine in ["duckdb", "spark"] {
        let scripts: Vec<PathBuf> = VARIANTS
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut a = vec![
                    "fleet",
                    d,
                    d2,
                    "--top",
                    "1000",
                    "--sql-only",
                    "--engine",
                    engine,
                ];
                a.extend(*v);
                let p = tmp.path().join(format!("{engine}-{i}.sql"));
                std::fs::write(&p, crate::common::whylate(&a).0).unwrap();
                p
            })
            .collect();
        let Some(rows) = run_sql(engine, &scripts, None) else {
            continue;
        };
        for (i, (got, want)) in rows.iter().zip(&jsons).enumerate() {
            agree(engine, VARIANTS[i], got, want);
        }
        if engine == "spark" {
            piped(d, d2);
        }
    }
}

/// `whylate fleet DIR --sql-only --engine spark | <spark, one statement at a time>`: the
/// output as it comes, through a pipe.
fn piped(d: &str, d2: &str) {
    let mut w = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(["fleet", d, d2, "--sql-only", "--engine", "spark"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rows = run_sql("spark", &[PathBuf::from("-")], w.stdout.take()).expect("spark ran above");
    assert!(
        w.wait().unwrap().success(),
        "whylate fleet --sql-only failed"
    );
    let want = fleet_json(&["fleet", d, d2, "--json"]);
    agree("spark (piped)", &[], &rows[0], &want);
}

/// The runner's rows per script, or None when the engine is missing (a skip).
fn run_sql(
    engine: &str,
    scripts: &[PathBuf],
    stdin: Option<std::process::ChildStdout>,
) -> Option<Vec<Value>> {
    let mut c = Command::new("python3");
    c.arg(repo().join("crates/whylate-cli/tests/fleet/run_sql.py"))
        .arg(engine)
        .args(scripts);
    if let Some(s) = stdin {
        c.stdin(s);
    }
    let o = c.output().unwrap();
    if o.status.code() == Some(3) {
        skip(&format!(
            "the {engine} Python package is missing (pip install {}; scripts/test installs it)",
            if engine == "spark" { "pyspark" } else { engine }
        ));
        return None;
    }
    assert!(
        o.status.success(),
        "{engine}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(serde_json::from_slice::<Vec<Value>>(&o.stdout).unwrap())
}

fn int(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Every section the report shows, as the engine's rows say it.
fn agree(engine: &str, variant: &[&str], got: &Value, want: &Value) {
    let at = format!("{engine} {variant:?}");
    let one = |name: &str| &got[name][0];
    for k in ["hosts", "traces", "kernels"] {
        assert_eq!(int(&one("overview")[k]), int(&want[k]), "{at}: {k}");
    }
    for k in ["samples", "misses"] {
        assert_eq!(int(&one("judged")[k]), int(&want[k]), "{at}: {k}");
    }
    let modes: Vec<(String, u64)> = (got["modes"].as_array().unwrap().iter())
        .map(|m| (m["mode"].as_str().unwrap().into(), int(&m["traces"])))
        .collect();
    let want_modes: Vec<(String, u64)> = serde_json::from_value(want["modes"].clone()).unwrap();
    assert_eq!(modes, want_modes, "{at}: modes");
    let causes = got_causes(&got["causes"]);
    assert_eq!(causes, cause_rows(&want["causes"]), "{at}: causes");
    for (g, c) in got["causes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(want["causes"].as_array().unwrap())
    {
        let (a, b) = (g["share"].as_f64().unwrap(), c["share"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-9, "{at}: share {a} vs {b}");
    }
    if want["by"].is_string() {
        groups_agree(&at, got, want);
    }
    let (worst, want_worst) = (
        hosts_of(&got["worst hosts"]),
        hosts_of(&want["worst_hosts"]),
    );
    assert_eq!(worst, want_worst, "{at}: worst hosts");
    top_causes_agree(&at, got, want);
}

/// Worst-host rows as (host, traces, samples, misses), in order.
fn hosts_of(rows: &Value) -> Vec<(String, u64, u64, u64)> {
    (rows.as_array().unwrap().iter())
        .map(|h| {
            let host = h["host"].as_str().unwrap().to_string();
            (
                host,
                int(&h["traces"]),
                int(&h["samples"]),
                int(&h["misses"]),
            )
        })
        .collect()
}

/// Causes rows as (category, culprit, excess, misses, hosts); counts may come as text
/// (DuckDB's 128-bit sums) or numbers.
fn got_causes(rows: &Value) -> Vec<(String, String, u64, u64, u64)> {
    (rows.as_array().unwrap().iter())
        .map(|c| {
            (
                c["category"].as_str().unwrap().into(),
                c["culprit"].as_str().unwrap().into(),
                int(&c["excess_ns"]),
                int(&c["misses"]),
                int(&c["hosts"]),
            )
        })
        .collect()
}

/// Groups row for row; each change the report names, from the engine's group causes.
fn groups_agree(at: &str, got: &Value, want: &Value) {
    let rows: Vec<(String, u64, u64, u64)> = (got["groups"].as_array().unwrap().iter())
        .map(|g| {
            let s = g["grp"].as_str().unwrap().to_string();
            (s, int(&g["hosts"]), int(&g["samples"]), int(&g["misses"]))
        })
        .collect();
    let want_rows: Vec<(String, u64, u64, u64)> = (want["groups"].as_array().unwrap().iter())
        .map(|g| {
            let s = g["group"].as_str().unwrap().to_string();
            (s, int(&g["hosts"]), int(&g["samples"]), int(&g["misses"]))
        })
        .collect();
    assert_eq!(rows, want_rows, "{at}: groups");
    let gc: BTreeSet<(String, String, String, u64)> = (got["group causes"].as_array().unwrap())
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("grp"), s("category"), s("culprit"), int(&r["misses"]))
        })
        .collect();
    for c in want["changes"].as_array().unwrap() {
        let s = |k: &str| c[k].as_str().unwrap().to_string();
        let key = (s("group"), s("category"), s("culprit"), int(&c["misses"]));
        assert!(
            gc.contains(&key),
            "{at}: change {key:?} not in the engine's rows"
        );
    }
}

/// Each worst host's top cause is its largest cause that is no blind spot.
fn top_causes_agree(at: &str, got: &Value, want: &Value) {
    let blind = whylate::explain::BLIND_SPOTS;
    for h in want["worst_hosts"].as_array().unwrap() {
        let host = h["host"].as_str().unwrap();
        let mine: Vec<(u64, String)> = (got["host causes"].as_array().unwrap().iter())
            .filter(|r| r["host"] == host && !blind.iter().any(|b| b.id() == r["category"]))
            .map(|r| {
                let (cat, who) = (r["category"].as_str().unwrap(), r["culprit"].as_str());
                (int(&r["once_ns"]), cause_label(cat, who.unwrap()))
            })
            .collect();
        let best = mine.iter().map(|m| m.0).max();
        match h["top_cause"].as_str() {
            None => assert!(best.is_none(), "{at}: {host} has causes {mine:?}"),
            Some(top) => {
                let e = mine.iter().find(|m| m.1 == top).map(|m| m.0);
                assert_eq!(e, best, "{at}: {host}'s top cause {top} in {mine:?}");
            }
        }
    }
}
