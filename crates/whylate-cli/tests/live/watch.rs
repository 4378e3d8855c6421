//! `whylate watch` on the lab programs: misses against the programs' own logs, the same
//! first culprit as offline `explain` of a full recording of the same run, kept windows
//! that re-explain to the same culprit, and tracefs restored on every way out.

use super::demo::demo_misses_agree;
use super::*;
use std::process::{Child, Stdio};

const FROB_EVENTS: &str = "sched,irq,wq,syscalls:sys_enter_write,syscalls:sys_exit_read[ret > 0]";

/// A full recording of the same run, beside watch (its own instance).
fn record_beside(events: &str, out: &Path) -> Child {
    let c = Command::new(whylate())
        .args(["record", "-q", "-e", events, "--duration", "120s", "-o"])
        .arg(out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Tracing is on once its instance exists.
    for _ in 0..100 {
        let on = std::fs::read_dir(format!("{TRACEFS}/instances"))
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy() == format!("whylate-{}", c.id()))
            })
            .unwrap_or(false);
        if on {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    c
}

fn stop_recording(mut c: Child) {
    // SAFETY: our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    assert!(c.wait().unwrap().success(), "whylate record failed");
}

/// Runs watch with `args`, returns its JSON lines: the misses and the summary.
fn watch_json(args: &[&str]) -> (Vec<serde_json::Value>, serde_json::Value) {
    let out = Command::new(whylate())
        .args(["watch", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "watch {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut misses = Vec::new();
    let mut summary = serde_json::Value::Null;
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if let Some(m) = v.get("miss") {
            misses.push(m.clone());
        } else if let Some(s) = v.get("summary") {
            summary = s.clone();
        }
    }
    (misses, summary)
}

/// What held a miss's chain longest: (category, task, softirq vector or irq, CPU).
fn worst_hold(m: &serde_json::Value) -> Option<(String, String, u64)> {
    (m["chain"].as_array()?.iter())
        .flat_map(|l| l["held_by"].as_array().cloned().unwrap_or_default())
        .max_by_key(|h| h["ns"].as_u64().unwrap_or(0))
        .map(|h| {
            let c = &h["culprit"];
            let who = (c["comm"].as_str().or(c["vector"].as_str()))
                .map(str::to_string)
                .or(c["irq"].as_u64().map(|i| format!("irq {i}")))
                .unwrap_or_default();
            (
                h["category"].as_str().unwrap_or("").to_string(),
                who,
                c["cpu"].as_u64().unwrap_or(u64::MAX),
            )
        })
}

/// Each kept window still on disk (the caps drop the oldest), explained offline with
/// `mode`, gives the miss that starts where the live one did, and the same culprit
/// holding it longest.
fn kept_windows_re_explain(
    misses: &[serde_json::Value],
    summary: &serde_json::Value,
    mode: &[&str],
) {
    let on_disk: Vec<&str> = (summary["kept"].as_array().unwrap().iter())
        .filter_map(|k| k.as_str())
        .collect();
    let mut checked = 0;
    for m in misses {
        let Some(p) = m["kept"].as_str().filter(|p| on_disk.contains(p)) else {
            continue;
        };
        // Every miss of the window: a window may hold more misses than explain's default
        // three worst, and the live one need not be among them.
        let out = Command::new(whylate())
            .args(["explain", "--json", "--top", "100000"])
            .args(mode)
            .arg(p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "explain {p}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let again = (j["misses"].as_array().unwrap().iter())
            .find(|x| x["start_ns"] == m["start_ns"])
            .unwrap_or_else(|| {
                let starts: Vec<&serde_json::Value> =
                    (j["misses"].as_array().unwrap().iter()).map(|x| &x["start_ns"]).collect();
                panic!(
                    "{p}: no miss at {} offline (its misses start at {starts:?}); live miss {m}; window {}",
                    m["start_ns"],
                    keep_for_failure("watch", &[Path::new(p)])
                )
            });
        assert_eq!(
            worst_hold(again),
            worst_hold(m),
            "{p}: the culprit differs offline; live chain {}; offline chain {}; window {}",
            m["chain"],
            again["chain"],
            keep_for_failure("watch", &[Path::new(p)])
        );
        checked += 1;
    }
    assert!(checked > 0, "no window was kept");
}

/// frob (seed 000) under watch: each miss the client logged and watch reported agree
/// cycle by cycle (as the demo's), the hog beside the device is the first culprit as in
/// offline explain of a full recording of the same run, and the kept windows re-explain.
#[test]
fn watch_counts_frobs_misses_names_the_hog_and_keeps_windows_that_re_explain() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_watch_labs(false) {
        return;
    }
    let before = tracefs_state();
    let tmp = tmpdir("watch-frob");
    let dir = tmp.path();
    let frob = build_lab("frob", dir).unwrap();
    let (full, log, kept) = (dir.join("full.dat"), dir.join("frob.log"), dir.join("kept"));
    let sel = [
        "--from",
        "sys_enter_write[comm=frobnicator,count=7]",
        "--to",
        "sys_exit_read[comm=frobnicator,ret>0]",
        "--deadline",
        "3.5ms",
    ];
    let (misses, summary) = {
        let _mask = WqMask::set("2").unwrap();
        let rec = record_beside(FROB_EVENTS, &full);
        let mut args: Vec<String> = ["-e", FROB_EVENTS].iter().map(|s| s.to_string()).collect();
        args.extend(sel.iter().map(|s| s.to_string()));
        args.extend(["--keep".into(), s(&kept), "--".into(), s(&frob)]);
        args.extend(
            ["--cycles", "500", "--client-cpu", "0", "--device-cpu", "1"]
                .iter()
                .chain(&["--hog-cpu", "1", "--hogs", "2", "--log"])
                .map(|s| s.to_string()),
        );
        args.extend([s(&log), "--complaints".into(), s(&dir.join("c.log"))]);
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let r = watch_json(&a);
        stop_recording(rec);
        r
    };
    let client = read_frob_log(&log);
    frob_misses_agree(
        "watch frob",
        &full,
        &client,
        &serde_json::json!({ "misses": misses }),
    );
    let report = &summary["report"];
    assert_eq!(
        report["cycles"]["misses"].as_u64().unwrap(),
        misses.len() as u64
    );
    assert_eq!(
        report["cycles"]["count"].as_u64().unwrap(),
        client.len() as u64
    );
    let offline = explain_frob(&full, true);
    let (_, _, live_top) = task_excess_on(report["causes"].as_array().unwrap(), 1, "hog");
    let (_, _, off_top) = task_excess_on(offline["causes"].as_array().unwrap(), 1, "hog");
    assert_eq!(live_top.as_deref(), Some("hog"), "{}", report["causes"]);
    assert_eq!(live_top, off_top);
    for m in &misses {
        assert!(
            m["explained_after_ns"].as_u64().unwrap() < 2_000_000_000,
            "{m}"
        );
    }
    kept_windows_re_explain(&misses, &summary, &sel);
    minutes_add_up(&summary["status"], misses.len() as u64);
    assert_eq!(tracefs_state(), before, "tracefs not restored");
}

/// The status's per-minute costs add up to its totals: every window explained and every
/// miss reported is in one minute, and each minute that explained some spent time on them.
fn minutes_add_up(status: &serde_json::Value, misses: u64) {
    let minutes = status["minutes"].as_array().expect("minutes");
    assert!(!minutes.is_empty(), "{status}");
    let n = |m: &serde_json::Value, k: &str| m[k].as_u64().unwrap();
    let windows: u64 = minutes.iter().map(|m| n(m, "windows")).sum();
    assert_eq!(windows, n(status, "windows"), "{status}");
    let reported: u64 = minutes.iter().map(|m| n(m, "misses")).sum();
    assert_eq!(reported, misses, "{status}");
    for m in minutes.iter().filter(|m| n(m, "windows") > 0) {
        assert!(n(m, "traced_ns") > 0 && n(m, "analysis_ns") > 0, "{m}");
    }
    assert!(
        minutes.iter().map(|m| n(m, "cpu_ns")).sum::<u64>() > 0,
        "{status}"
    );
}

/// Root, a C compiler for the lab programs, and (`tracecmd`) trace-cmd to read a full
/// recording independently; false (the reason said, or a failure when live tests are
/// required) otherwise.
fn can_watch_labs(tracecmd: bool) -> bool {
    if !is_root() {
        return !skip("not root: watch records");
    }
    if !have("cc") {
        return !skip("no C compiler for the lab programs");
    }
    if tracecmd && !have("trace-cmd") {
        return !skip("no trace-cmd to read the full recording independently");
    }
    true
}

/// The first cause that names something (not the host: an idle or stalled vCPU), as the
/// demo test picks it: (category, comm or vector, CPU).
fn first_named(causes: &serde_json::Value) -> Option<(String, String, u64)> {
    let c = (causes.as_array()?.iter())
        .find(|c| c["culprit"].as_object().unwrap().keys().any(|k| k != "cpu"))?;
    let who = &c["culprit"];
    let name = who["comm"]
        .as_str()
        .or(who["vector"].as_str())
        .unwrap_or("-");
    Some((
        c["category"].as_str()?.to_string(),
        name.to_string(),
        who["cpu"].as_u64().unwrap_or(u64::MAX),
    ))
}

/// The periodic lab thread on CPU1 under `watch --timer` beside `load` (started with the
/// lab directory): the misses are the periods the full recording of the same run shows
/// late (checked against the program's log as the demo is), and the first culprit is
/// the same as offline explain's of that recording. Returns it.
fn periodic_under_watch(
    label: &str,
    load: &[(&str, &[&str])],
    policy: &[&str],
) -> Option<(String, String, u64)> {
    let tmp = tmpdir("watch-periodic");
    let dir = tmp.path();
    let periodic = build_lab("periodic", dir).unwrap();
    let mut bg = Vec::new();
    for (prog, args) in load {
        let bin = build_lab(prog, dir).unwrap();
        let c = Command::new(&bin)
            .args(*args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        bg.push(c);
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let (full, log) = (dir.join("full.dat"), dir.join("full.truth"));
    let mode = ["--timer", "--task", "periodic", "--deadline", "300us"];
    // The events watch records for --timer (watch::default_events): an end inferred from
    // a task's first event is then inferred from the same events in both instances.
    let rec = record_beside("sched,irq,wq,timer", &full);
    let mut args: Vec<String> = mode.iter().map(|s| s.to_string()).collect();
    args.extend([
        "--keep".into(),
        s(&dir.join("kept")),
        "--".into(),
        s(&periodic),
    ]);
    args.extend(
        ["--cpu", "1", "--period-us", "1330", "--count", "1500"]
            .iter()
            .chain(policy)
            .map(|s| s.to_string()),
    );
    args.extend(["--log".into(), s(&log)]);
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let (misses, summary) = watch_json(&a);
    stop_recording(rec);
    for mut c in bg {
        let _ = c.kill();
        let _ = c.wait();
    }
    let off = Command::new(whylate())
        .args(["explain", "--json", "--top", "100000"])
        .args(mode)
        .arg(&full)
        .output()
        .unwrap();
    let off: serde_json::Value = serde_json::from_slice(&off.stdout).unwrap();
    // Live, each miss is one offline explain finds in the full recording of the same
    // run, and none is left out. Two instances stamp the same tracepoint hit with their
    // own clock reads, a few hundred ns apart.
    let offline: Vec<u64> = (off["misses"].as_array().unwrap().iter())
        .map(|m| m["start_ns"].as_u64().unwrap())
        .collect();
    let live_starts: Vec<u64> = misses
        .iter()
        .map(|m| m["start_ns"].as_u64().unwrap())
        .collect();
    // The same stamps differ by that much in the period's length too: one within 1 us of
    // the deadline may be a miss by one instance's clock reads and not by the other's.
    // A period whose switch-in is not traced (an idle exit here) ends at the task's first
    // event, which each instance's event set places differently: both say `uncertain`
    // (an upper bound), so such a miss may be one in a single instance.
    let border = |m: &serde_json::Value| {
        m["late_ns"].as_u64().is_some_and(|l| l <= 1_000) || m["uncertain"] == true
    };
    let off_misses = off["misses"].as_array().unwrap();
    let offline_only: Vec<&serde_json::Value> = (off_misses.iter())
        .filter(|m| {
            let o = m["start_ns"].as_u64().unwrap();
            !live_starts.iter().any(|l| l.abs_diff(o) < 5_000)
        })
        .collect();
    let live_only: Vec<&serde_json::Value> = (misses.iter())
        .filter(|m| {
            let st = m["start_ns"].as_u64().unwrap();
            !offline.iter().any(|&o| o.abs_diff(st) < 5_000)
        })
        .collect();
    let at = |v: &[&serde_json::Value]| -> Vec<(u64, u64)> {
        (v.iter())
            .map(|m| {
                (
                    m["start_ns"].as_u64().unwrap(),
                    m["late_ns"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    if !(offline_only.iter().chain(&live_only)).all(|m| border(m)) {
        // The live run's own windows too, to tell whether its stream lost events there.
        let windows: Vec<PathBuf> = std::fs::read_dir(dir.join("kept"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default();
        let mut files: Vec<&Path> = vec![&full, &log];
        files.extend(windows.iter().map(PathBuf::as_path));
        let kept = keep_for_failure("watch-periodic", &files);
        panic!(
            "{label}: live vs offline misses ({} / {}); offline only (start, late) {:?}; live only {:?}; recording {kept}",
            misses.len(),
            offline.len(),
            at(&offline_only),
            at(&live_only)
        );
    }
    for m in offline_only.iter().chain(&live_only) {
        eprintln!(
            "{label}: miss at {} is {} ns over the deadline (uncertain: {}): within the two instances' clock reads, or its end untraced",
            m["start_ns"], m["late_ns"], m["uncertain"]
        );
    }
    // And offline explain of that recording against the program's own log, as the demo
    // test checks its recordings.
    let truth = read_periodic_log(&log);
    let late = truth.iter().filter(|t| t.1 > 300_000).count();
    assert!(
        late > 0,
        "{label}: the periodic thread's own log has no period over 300 us: the load made nothing late, so there is nothing to compare"
    );
    let j = serde_json::json!({
        "explain": { "cycles": { "misses": offline.len() } },
        "truth": {
            "misses": late,
            "deadline_ns": 300_000,
        },
    });
    demo_misses_agree(label, &full, &j);
    kept_windows_re_explain(&misses, &summary, &mode);
    let live = first_named(&summary["report"]["causes"]);
    eprintln!(
        "{label}: {} misses live; causes live {} offline {}",
        misses.len(),
        summary["report"]["causes"],
        off["causes"]
    );
    assert_eq!(
        live,
        first_named(&off["causes"]),
        "{label}: live vs offline"
    );
    live
}

/// Seed 004: the periodic thread (nice 19) beside a hog on its CPU.
#[test]
fn watch_timer_matches_the_periodic_programs_log_and_offline_explain() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_watch_labs(true) {
        return;
    }
    let before = tracefs_state();
    let hog: &[&str] = &["--cpu", "1", "--seconds", "30"];
    let first = periodic_under_watch("watch timer", &[("hog", hog)], &["--nice", "19"]);
    let (cat, who, cpu) = first.expect("a named cause");
    assert_eq!((who.as_str(), cpu), ("hog", 1), "{cat}");
    assert_eq!(tracefs_state(), before, "tracefs not restored");
}

/// Seeds 002/003: a SCHED_FIFO periodic thread on CPU1 and a UDP flood whose NET_RX is
/// steered there (RPS): the softirq, not a task, is the first culprit, live as offline.
#[test]
fn watch_softirq_names_net_rx_as_offline_explain_does() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_watch_labs(true) {
        return;
    }
    let before = tracefs_state();
    let rps_before = std::fs::read_to_string(LO_RPS).unwrap();
    std::fs::write(LO_RPS, "2").unwrap();
    // The demo's softirq scenario (demo.rs): bursts of 60 kB datagrams through a
    // 1000-instruction socket filter, a few hundred us of NET_RX every 7 ms.
    let flood: &[&str] = &[
        "--cpu",
        "0",
        "--seconds",
        "30",
        "--size",
        "60000",
        "--filter-insns",
        "1000",
        "--burst-us",
        "300",
        "--every-us",
        "7000",
        // Real-time on its CPU, so load there cannot thin the bursts out (with the
        // sender sharing CPU0 with a busy loop, some runs had no late period at all).
        "--fifo",
        "10",
    ];
    let first = std::panic::catch_unwind(|| {
        periodic_under_watch("watch softirq", &[("udpflood", flood)], &["--fifo", "50"])
    });
    let _ = std::fs::write(LO_RPS, rps_before.trim());
    let (cat, who, cpu) = first.unwrap().expect("a named cause");
    assert_eq!((who.as_str(), cpu), ("NET_RX", 1), "{cat}");
    assert_eq!(tracefs_state(), before, "tracefs not restored");
}

/// SIGINT and SIGTERM end a watch with its summary; an error (an unknown event) ends it
/// with a message: each time tracefs is as before.
#[test]
fn watch_restores_tracefs_on_signals_and_errors() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: watch records") {
        return;
    }
    let before = tracefs_state();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let c = Command::new(whylate())
            .args([
                "watch",
                "--json",
                "--timer",
                "--deadline",
                "1ms",
                "--",
                "sleep",
                "30",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // SAFETY: our own child.
        unsafe { libc::kill(c.id() as i32, sig) };
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("\"summary\""), "signal {sig}: {text}");
        assert_eq!(
            tracefs_state(),
            before,
            "signal {sig}: tracefs not restored"
        );
    }
    let out = Command::new(whylate())
        .args(["watch", "-e", "sched_swich", "--timer", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sched_switch"), "{err}");
    assert_eq!(tracefs_state(), before, "error: tracefs not restored");
}

/// `--until N` ends the run after N misses (stopping the command), and `--on-miss` runs
/// once per reported miss with its facts in the environment.
#[test]
fn watch_until_stops_early_and_on_miss_runs_per_miss() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_watch_labs(false) {
        return;
    }
    let before = tracefs_state();
    let tmp = tmpdir("watch-until");
    let dir = tmp.path();
    let (hog, periodic) = (
        build_lab("hog", dir).unwrap(),
        build_lab("periodic", dir).unwrap(),
    );
    let mut bg = Command::new(&hog)
        .args(["--cpu", "1", "--seconds", "30"])
        .spawn()
        .unwrap();
    let (log, facts) = (dir.join("p.log"), dir.join("facts"));
    let findings = dir.join("findings");
    let on_miss = format!(
        "echo \"$WHYLATE_MISS_N $WHYLATE_MISS_LATE_NS $WHYLATE_MISS_CAUSE\" >> {}",
        facts.display()
    );
    let (misses, summary) = watch_json(&[
        "--timer",
        "--task",
        "periodic",
        "--deadline",
        "100us",
        "--until",
        "3",
        "--on-miss",
        &on_miss,
        "--parquet",
        findings.to_str().unwrap(),
        "--label",
        "run=until",
        "--",
        periodic.to_str().unwrap(),
        "--cpu",
        "1",
        "--period-us",
        "1330",
        "--count",
        "4000",
        "--nice",
        "19",
        "--log",
        log.to_str().unwrap(),
    ]);
    let _ = bg.kill();
    let _ = bg.wait();
    assert!(misses.len() >= 3, "{} misses", misses.len());
    // Stopped long before its 4000 periods (5.3 s).
    let periods = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(
        periods < 4000,
        "the command ran to its end: {periods} periods"
    );
    assert_eq!(
        summary["report"]["cycles"]["misses"].as_u64().unwrap(),
        misses.len() as u64
    );
    let lines = std::fs::read_to_string(&facts).unwrap();
    let mut got: Vec<Vec<String>> = (lines.lines())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    got.sort_by_key(|f| f[0].parse::<u64>().unwrap());
    assert_eq!(got.len(), misses.len(), "{lines}");
    for (f, m) in got.iter().zip(&misses) {
        assert_eq!(f[0], m["n"].to_string());
        assert_eq!(f[1], m["late_ns"].to_string());
        // The largest cause, when anything was blamed (a miss can be late by less than
        // any hold the trace shows).
        assert!(
            f.len() > 2 || m["blamed_ns"] == 0,
            "no cause given: {f:?} for {m}"
        );
    }
    findings_hold_the_run(&findings, &misses, &summary);
    assert_eq!(tracefs_state(), before, "tracefs not restored");
}

/// `--parquet`: the run's findings, read back by `whylate fleet`, count the misses watch
/// reported and rank the summary's first cause first: both rank by the time a cause held
/// counted once where misses overlapped (a hog preempting a periodic task for 30 ms makes
/// many late periods share it; summed per miss, it outranked the first cause).
fn findings_hold_the_run(dir: &Path, misses: &[serde_json::Value], summary: &serde_json::Value) {
    // A build without the query engine cannot read them back (scripts/test builds it).
    if !cfg!(feature = "fleet")
        && super::skip("a build without --features fleet reads no findings back")
    {
        return;
    }
    let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(["fleet", dir.to_str().unwrap(), "--json", "--mode", "timer"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(f["traces"], 1);
    assert_eq!(f["misses"].as_u64().unwrap(), misses.len() as u64);
    let first = &summary["report"]["causes"][0];
    assert_eq!(f["causes"][0]["category"], first["category"], "{f}");
    assert_eq!(f["causes"][0]["excess_ns"], first["total_excess_ns"], "{f}");
    assert_eq!(f["causes"][0]["once_ns"], first["once_ns"], "{f}");
}

/// On a terminal the view is redrawn in place (cursor home, clear) with its headline;
/// piped, the same run prints no control codes.
#[test]
fn watch_on_a_terminal_redraws_its_view() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: watch records") {
        return;
    }
    if !have("script") && skip("no script(1) to give watch a terminal") {
        return;
    }
    let run = format!(
        "{} watch --timer --deadline 1ms --duration 2s -- sleep 5",
        whylate().display()
    );
    let out = Command::new("script")
        .args(["-qec", &run, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let redraws = text.matches("\x1b[H\x1b[2J").count();
    assert!(redraws >= 2, "{redraws} redraws: {text}");
    assert!(text.contains("whylate watch "), "{text}");
    assert!(text.contains("recorder "), "{text}");
    let piped = Command::new(whylate())
        .args([
            "watch",
            "--timer",
            "--deadline",
            "1ms",
            "--duration",
            "1s",
            "--",
            "sleep",
            "5",
        ])
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\x1b'));
}
