//! `whylate demo`: each scenario against its program's own count, and mitigation helping.

use super::*;

pub(crate) fn demo_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(whylate())
        .arg("demo")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "demo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A demo's misses as whylate counted them against the lab program's own. frob's log
/// names no timer, so its count must match within the trace edges (±1), plus 1% for
/// cycles a stalled vCPU puts on the other side of the deadline (its period-by-period
/// check is `explain_frob_lab_counts_the_misses_and_names_the_hog`). The periodic
/// scenarios are matched period by period (`periods_match_log`, on `trace-cmd report` of
/// the kept trace): whylate's misses are its samples over the deadline, and a period
/// counted by one side only must be one where both measures agree within 50 us across
/// the deadline, or one the thread read its clock late on a vCPU the host had stalled.
pub(crate) fn demo_misses_agree(label: &str, trace: &Path, j: &serde_json::Value) {
    let m = j["explain"]["cycles"]["misses"].as_u64().unwrap();
    let t = j["truth"]["misses"].as_u64().unwrap();
    if label.starts_with("frob") {
        let log = read_frob_log(&trace.with_extension("truth"));
        frob_misses_agree(label, trace, &log, &j["explain"]);
        let _ = (m, t);
        return;
    }
    let d = j["truth"]["deadline_ns"].as_u64().unwrap();
    let truth = read_periodic_log(&trace.with_extension("truth"));
    let lat = latency_json(&["-m", "timer", "--task", "periodic", "--samples"], trace);
    let out = Command::new("trace-cmd")
        .args(["report", "-t"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "trace-cmd report {}", trace.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let p = periods_match_log(&lat, &truth, &text, 1).unwrap_or_else(|e| panic!("{label}: {e}"));
    let ours = p.ours.iter().filter(|&&o| o > d).count() as u64;
    assert_eq!(
        ours, m,
        "{label}: explain's misses are the periods over the deadline"
    );
    let split: Vec<usize> = (0..truth.len())
        .filter(|&i| (p.ours[i] > d) != (truth[i].1 > d))
        .collect();
    eprintln!(
        "{label}: periods counted by one side only {split:?}, host stalls after the switch-in {:?}, untraced switch-ins {:?}, worst difference otherwise {} ns",
        p.blind, p.inferred, p.worst
    );
    for &i in &split {
        assert!(
            p.blind.contains(&i)
                || p.inferred.contains(&i)
                || p.ours[i].abs_diff(truth[i].1) <= 50_000,
            "{label}: period {i} split without a reason"
        );
    }
}

/// `whylate demo`: each scenario's misses as the lab program counted them equal whylate's
/// (`demo_misses_agree`), the injected culprit is the first one named, the mitigated run
/// has fewer misses, and `whylate diff` of the pair names the cause the fix took away.
#[test]
pub(crate) fn demo_scenarios_match_their_programs_and_mitigation_helps() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: the demo records") {
        return;
    }
    if !have("cc") && skip("no C compiler for the lab programs") {
        return;
    }
    if !have("trace-cmd") && skip("no trace-cmd to read the demo's traces independently") {
        return;
    }
    let before = tracefs_state();
    let mask = std::fs::read_to_string(WQ_MASK).ok();
    let rps = std::fs::read_to_string(LO_RPS).ok();
    let tmp = tmpdir("demo");
    let dir = tmp.path();
    for scenario in ["frob", "timer", "softirq"] {
        let (a, b) = (
            dir.join(format!("{scenario}.dat")),
            dir.join(format!("{scenario}-fixed.dat")),
        );
        let j = demo_json(&[scenario, "--keep", a.to_str().unwrap()]);
        let (truth, ex) = (&j["truth"], &j["explain"]);
        assert_eq!(j["lost_events"], 0, "{scenario}");
        assert!(
            ex["cycles"]["count"]
                .as_u64()
                .unwrap()
                .abs_diff(truth["count"].as_u64().unwrap())
                <= 1,
            "{scenario}: cycles {} vs {}",
            ex["cycles"]["count"],
            truth["count"]
        );
        let (m, t) = (
            ex["cycles"]["misses"].as_u64().unwrap(),
            truth["misses"].as_u64().unwrap(),
        );
        eprintln!("demo {scenario}: program {t} misses, whylate {m}");
        demo_misses_agree(scenario, &a, &j);
        assert!(t >= 1, "{scenario}: the injected load must cause misses");
        // The first cause that names something (not the host: an idle or stalled vCPU).
        let first = ex["causes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["culprit"].as_object().unwrap().keys().any(|k| k != "cpu"))
            .unwrap_or_else(|| panic!("{scenario}: no named cause: {}", ex["causes"]));
        if scenario == "softirq" {
            assert_eq!(first["culprit"]["vector"], "NET_RX", "{scenario}: {first}");
            assert_eq!(first["culprit"]["cpu"], 1, "{scenario}: {first}");
        } else {
            // The hog runs on CPU1 beside the chain (frob's device, timer's thread): the
            // first task culprit there. A busy host's own load elsewhere is named as itself.
            let (_, _, top) = task_excess_on(ex["causes"].as_array().unwrap(), 1, "hog");
            assert_eq!(top.as_deref(), Some("hog"), "{scenario}: {}", ex["causes"]);
            // `whylate record` kept this boot's id: the advice names tasks by their PIDs,
            // which are this machine's (any other trace gets `pgrep -x` lookups).
            let cmds: Vec<&str> = (ex["advice"].as_array().unwrap().iter())
                .filter_map(|a| a["command"].as_str())
                .collect();
            assert!(
                cmds.iter()
                    .any(|c| c.contains("taskset -pc") || c.contains("chrt -f -p"))
                    && !cmds.iter().any(|c| c.contains("pgrep -x '")),
                "{scenario}: a recording of this boot names its tasks by PID: {cmds:?}"
            );
        }
        // Automatic mode (`whylate FILE`, no selectors) names the same culprit first on
        // CPU1 (the host's own load elsewhere is named as itself).
        let out = (Command::new(whylate()).arg(&a))
            .args(["--json", "--top", "1"])
            .output()
            .unwrap();
        let auto: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{scenario}: {e}: {}", String::from_utf8_lossy(&out.stderr))
        });
        let causes = auto["causes"].as_array().unwrap();
        if scenario == "softirq" {
            let on1 = causes.iter().find(|c| c["culprit"]["cpu"] == 1).unwrap();
            assert_eq!(
                on1["culprit"]["vector"], "NET_RX",
                "automatic mode: {}",
                auto["causes"]
            );
        } else {
            let (_, _, top) = task_excess_on(causes, 1, "hog");
            assert_eq!(
                top.as_deref(),
                Some("hog"),
                "{scenario}: automatic mode: {}",
                auto["causes"]
            );
        }
        let fixed = demo_json(&[scenario, "--mitigate", "--keep", b.to_str().unwrap()]);
        let fm = fixed["explain"]["cycles"]["misses"].as_u64().unwrap();
        let ft = fixed["truth"]["misses"].as_u64().unwrap();
        eprintln!("demo {scenario} --mitigate: program {ft} misses, whylate {fm}");
        demo_misses_agree(&format!("{scenario} --mitigate"), &b, &fixed);
        let fixed_causes = fixed["explain"]["causes"].as_array().unwrap();
        // Each fix removes the injected cause: no period a task delayed (timer), no NET_RX
        // on CPU1 (softirq), no hog in the chain (frob). This VM's host still stalls a
        // few cycles, blamed on no task.
        match scenario {
            "timer" => {
                assert!(
                    fm * 5 <= m,
                    "timer: SCHED_FIFO must clear most misses ({m} -> {fm})"
                );
                for c in fixed_causes {
                    assert!(
                        c["culprit"]["comm"].is_null(),
                        "SCHED_FIFO: no task may delay it: {c}"
                    );
                }
            }
            "softirq" => {
                // Not the miss count: as for frob below, CPU1 now idles between periods,
                // and a loaded host wakes an idle vCPU late (cpu-idle).
                for c in fixed_causes {
                    assert!(
                        !(c["culprit"]["vector"] == "NET_RX" && c["culprit"]["cpu"] == 1),
                        "NET_RX runs on CPU0 now: {c}"
                    );
                }
            }
            _ => {
                // Not the miss count: with the hogs gone CPU1 idles, and an idle vCPU on
                // this VM can wake milliseconds late (cpu-idle), more or less than the
                // hogs cost depending on the host's load at the time.
                for c in fixed_causes {
                    assert!(
                        c["culprit"]["comm"] != "hog",
                        "frob: the hogs left the device's CPU and cannot hold the FIFO client: {c}"
                    );
                }
            }
        }
        // diff names what the fix changed.
        let mut args = vec!["diff".to_string(), s(&a), s(&b)];
        let explain_args: Vec<String> = j["explain_command"]
            .as_str()
            .unwrap()
            .split(' ')
            .skip(2)
            .map(|x| x.trim_matches('\'').to_string())
            .collect();
        // `whylate explain OPTIONS... TRACE`: the options without the trace.
        args.extend(explain_args[..explain_args.len() - 1].iter().cloned());
        args.push("--json".into());
        let out = Command::new(whylate()).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let verdict = d["verdict"].as_str().unwrap();
        eprintln!("diff {scenario}: {verdict}");
        assert!(
            verdict.starts_with(&format!("misses {m} → {fm}")),
            "{verdict}"
        );
        assert_eq!(
            d["a"]["cycles"]["misses"], m,
            "diff explains A as explain did"
        );
        assert_eq!(d["b"]["cycles"]["misses"], fm, "and B");
        // The fix removed the injected cause: every cause keyed on it (runqueue-wait and
        // preempted-by for the hog) vanished from B. The verdict names the one that moved
        // most, which on a busy host can be the host's own load the fix also sidestepped.
        let key = if scenario == "softirq" {
            "softirq NET_RX"
        } else {
            "hog"
        };
        let injected: Vec<&serde_json::Value> = d["causes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["culprit"] == key && c["cpu"] == 1)
            .collect();
        assert!(
            !injected.is_empty(),
            "{scenario}: {key} on CPU1 in A: {}",
            d["causes"]
        );
        for c in injected {
            assert_eq!(c["status"], "vanished", "{scenario}: {c}");
        }
    }
    assert_eq!(before, tracefs_state(), "tracefs restored");
    assert_eq!(
        mask,
        std::fs::read_to_string(WQ_MASK).ok(),
        "cpumask restored"
    );
    assert_eq!(
        rps,
        std::fs::read_to_string(LO_RPS).ok(),
        "loopback RPS restored"
    );
}
