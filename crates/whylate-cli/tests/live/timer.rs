//! The periodic lab thread: its own log against `latency --measure timer` and `explain --timer`.

use super::*;

/// The periodic lab program's log: `(target_ns, late_ns)` per period.
pub(crate) fn read_periodic_log(log: &Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().map(|w| w.parse().unwrap()).collect();
            (v[0], v[2])
        })
        .collect()
}

/// Seconds.fraction before a `:` in an ftrace-style line (tracefs `trace`, `trace-cmd
/// report`), in ns, whatever the number of fraction digits.
pub(crate) fn line_ns(line: &str) -> Option<u64> {
    line.split_whitespace().find_map(|w| {
        let (a, b) = w.strip_suffix(':')?.split_once('.')?;
        if b.is_empty() || b.len() > 9 || !b.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let scale = 10u64.pow(9 - b.len() as u32);
        Some(a.parse::<u64>().ok()? * 1_000_000_000 + b.parse::<u64>().ok()? * scale)
    })
}

/// How whylate's expiry-to-running samples for the periodic thread compare with the
/// thread's own log, period by period.
pub(crate) struct PeriodMatch {
    /// whylate's value per period, in log order.
    pub(crate) ours: Vec<u64>,
    /// Largest difference among the periods within 50 us.
    pub(crate) worst: u64,
    /// Periods the thread measured later because its vCPU stalled after the switch-in.
    pub(crate) blind: Vec<usize>,
    /// Periods whylate measured longer because their switch-in was not traced, with the
    /// thread's clock read inside the bounds the trace leaves.
    pub(crate) inferred: Vec<usize>,
}

/// Pairs each logged period with whylate's sample for it (same expiry within 100 us) and
/// requires equal lateness within 50 us, except where the trace itself shows why the
/// thread read its clock later: silence on its CPU (the host stalled this KVM guest) or
/// interrupt handlers, after the switch-in. `text` is the trace as ftrace-style lines.
pub(crate) fn periods_match_log(
    j: &serde_json::Value,
    truth: &[(u64, u64)],
    text: &str,
    cpu: u32,
) -> Result<PeriodMatch, String> {
    let g = j["measures"][0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["metric"] == "expiry-to-running"
                && g["key"]
                    .as_str()
                    .unwrap()
                    .starts_with("hrtimer_wakeup (periodic[")
        })
        .ok_or("no expiry-to-running group for the periodic thread's hrtimer")?;
    let mut samples: Vec<(u64, u64)> = g["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s[0].as_u64().unwrap(), s[1].as_u64().unwrap()))
        .collect();
    samples.sort_unstable();
    if samples.len() != truth.len() {
        return Err(format!(
            "{} samples for {} logged periods",
            samples.len(),
            truth.len()
        ));
    }
    // The trace clock may not be CLOCK_MONOTONIC (tracefs' default is `local`): pair by
    // order, with the expiries a constant offset from the targets.
    let mut offs: Vec<i64> = samples
        .iter()
        .zip(truth)
        .map(|(s, t)| s.0 as i64 - t.0 as i64)
        .collect();
    offs.sort_unstable();
    let off = offs[offs.len() / 2];
    for (i, (s, t)) in samples.iter().zip(truth).enumerate() {
        if (s.0 as i64 - t.0 as i64).abs_diff(off) > 100_000 {
            return Err(format!(
                "period {i}: whylate's expiry {} ns, the thread's target {} ns, {off} ns apart in most periods",
                s.0, t.0
            ));
        }
    }
    let tag = format!("[{cpu:03}]");
    let on_cpu: Vec<&str> = text.lines().filter(|l| l.contains(&tag)).collect();
    // Timestamps of every event on the CPU, to see where the trace itself is blind.
    let mut stamps: Vec<u64> = on_cpu.iter().filter_map(|l| line_ns(l)).collect();
    stamps.sort_unstable();
    // Interrupt and softirq handler runs on the CPU (entry, exit), which also come between
    // a switch-in and the thread's clock read.
    let mut handlers: Vec<(u64, u64)> = Vec::new();
    let mut open: Vec<u64> = Vec::new();
    for l in &on_cpu {
        let Some(ts) = line_ns(l) else { continue };
        if l.contains(" irq_handler_entry:") || l.contains(" softirq_entry:") {
            open.push(ts);
        } else if l.contains(" irq_handler_exit:") || l.contains(" softirq_exit:") {
            if let Some(a) = open.pop() {
                // Only the outermost handler: a nested one is inside it.
                if open.is_empty() {
                    handlers.push((a, ts));
                }
            }
        }
    }
    handlers.sort_unstable();
    let in_handlers = |a: u64, b: u64| -> u64 {
        handlers
            .iter()
            .map(|&(x, y)| y.min(b).saturating_sub(x.max(a)))
            .sum()
    };
    let mut worst = 0;
    let mut blind = Vec::new();
    let mut inferred = Vec::new();
    for (i, (&(start, o), &(target, t))) in samples.iter().zip(truth).enumerate() {
        let d = o.abs_diff(t);
        if d <= 50_000 {
            worst = worst.max(d);
            continue;
        }
        // A switch-in the trace lacks (this VM does not record CPU1's switches out of
        // idle) is placed at the thread's next event, usually its arming of the next
        // period a few us after its clock read, but later when something came between
        // (after the last period: writing its log). Then the trace bounds the switch-in
        // by the CPU's event before that one, and the thread's clock read must lie
        // between the two.
        if o > t {
            let end = start + o;
            let k = stamps.partition_point(|&x| x < end);
            let lower = stamps[..k].last().copied().unwrap_or(0);
            let woke = (target as i64 + off) as u64 + t;
            let switched = on_cpu.iter().any(|l| {
                (l.contains("==> periodic:") || l.contains("==> next_comm=periodic "))
                    && line_ns(l).is_some_and(|x| x > start && x <= end)
            });
            if !switched && woke + 5_000 >= lower && woke <= end + 5_000 {
                inferred.push(i);
                continue;
            }
            return Err(format!(
                "period {i}: whylate {o} ns, the thread measured {t} ns (woke at {woke} ns on the trace clock), and the trace does not leave the switch-in open there (switch-in recorded: {switched}, CPU{cpu}'s events before whylate's end at {end} ns: last at {lower} ns)"
            ));
        }
        // This KVM guest is sometimes stalled by its host: then the thread, already on
        // its CPU, reads its clock late and no tracer inside the guest can see why.
        // Accept such a period only if the trace shows nothing at all on the CPU, right
        // after the thread got it, for about as long as the difference.
        let at = start + o;
        let extra = t.saturating_sub(o);
        let from = stamps.partition_point(|&x| x < at);
        let upto = stamps.partition_point(|&x| x <= at + extra + 50_000);
        // A slowed host spreads its stall over several silences rather than one: add up
        // every stretch of more than 5 us with nothing recorded (a running CPU records
        // something every few us here).
        let mut last = at;
        let mut gap = 0;
        for &x in &stamps[from..upto] {
            if x - last > 5_000 {
                gap += x - last;
            }
            last = x;
        }
        let tail = (at + extra).saturating_sub(last);
        if tail > 5_000 {
            gap += tail;
        }
        // Or the CPU served interrupts and softirqs after the switch-in, before the thread
        // got back to user space to read its clock.
        let busy = in_handlers(at, at + extra + 50_000);
        // After a stall the CPU first serves the interrupts that piled up (a tick late by
        // the stall took 43 us in one run, a 276 ms stall left 230 us unaccounted) before
        // the thread reads its clock: allow 100 us and 1% on top of the silence, and
        // silence plus handlers must be most of the difference.
        if !(t > o && (gap + busy) * 2 >= extra && gap + busy + 100_000 + extra / 100 >= extra) {
            return Err(format!(
                "period {i}: whylate {o} ns, the thread measured {t} ns, and the trace is not blind there (silences over 5 us on CPU{cpu} after it ran: {gap} ns, in irq/softirq handlers: {busy} ns)"
            ));
        }
        blind.push(i);
    }
    // Each period let through above is one the trace itself shows stalled (silence and
    // handlers cover the difference). This bound only says the run still tested whylate:
    // the host stalled this guest in 7 of 600 periods in one CI run, so a run with more
    // than 5% such periods is refused as too noisy, not taken as whylate's error.
    if blind.len() * 20 > truth.len() {
        return Err(format!(
            "more than 5% of periods stalled by the host, where the trace is blind: {blind:?}"
        ));
    }
    Ok(PeriodMatch {
        ours: samples.iter().map(|s| s.1).collect(),
        worst,
        blind,
        inferred,
    })
}

/// Seed 004's shape on this kernel: a 1.33 ms absolute-deadline periodic thread pinned
/// beside a CPU hog logs when each period's wakeup really came. whylate's hrtimer view of
/// the same periods (lateness of the expiry plus the wait until the thread ran) must equal
/// the thread's own numbers within 50 us per period.
#[test]
pub(crate) fn timer_latency_matches_the_periodic_threads_own_log() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: tracefs needs root") {
        return;
    }
    let tmp = tmpdir("periodic");
    let dir = tmp.path();
    let (periodic, hog) = match (build_lab("periodic", dir), build_lab("hog", dir)) {
        (Ok(p), Ok(h)) => (p, h),
        (Err(e), _) | (_, Err(e)) => {
            skip(&e);
            return;
        }
    };
    let log = dir.join("periodic.log");
    let trace = dir.join("trace.txt");
    let count = 600;
    {
        let inst = match Instance::new("periodic") {
            Ok(i) => i,
            Err(e) => {
                skip(&e);
                return;
            }
        };
        inst.write("buffer_size_kb", "8192");
        for e in [
            "sched/sched_switch",
            "sched/sched_waking",
            "sched/sched_wakeup",
            "sched/sched_wakeup_new",
            "sched/sched_migrate_task",
            "timer/hrtimer_start",
            "timer/hrtimer_expire_entry",
            "timer/hrtimer_expire_exit",
            "timer/hrtimer_cancel",
            "irq",
        ] {
            inst.write(&format!("events/{e}/enable"), "1");
        }
        inst.write("tracing_on", "1");
        let mut h = Command::new(&hog)
            .args(["--cpu", "1", "--seconds", "1.5"])
            .spawn()
            .unwrap();
        let st = Command::new(&periodic)
            .args(["--cpu", "1", "--count", &count.to_string(), "--log"])
            .arg(&log)
            .status()
            .unwrap();
        inst.write("tracing_on", "0");
        let _ = h.kill();
        let _ = h.wait();
        assert!(st.success());
        std::fs::copy(inst.dir.join("trace"), &trace).unwrap();
    }
    let truth = read_periodic_log(&log);
    assert_eq!(truth.len(), count);
    let j = latency_json(
        &[
            "--measure",
            "timer,wakeup",
            "--task",
            "periodic",
            "--samples",
        ],
        &trace,
    );
    assert!(
        j["lost"].as_array().unwrap().is_empty(),
        "the buffer must hold the run"
    );
    let groups = j["measures"][0]["groups"].as_array().unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    let p = periods_match_log(&j, &truth, &text, 1).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "periodic: {} periods, worst difference {} ns, {} period(s) with a host stall after the switch-in {:?}, untraced switch-ins {:?}, thread's max lateness {} ns",
        truth.len(),
        p.worst,
        p.blind.len(),
        p.blind,
        p.inferred,
        truth.iter().map(|t| t.1).max().unwrap()
    );
    // The wakeup measure sees the same thread's waits.
    let w = j["measures"][1]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"].as_str().unwrap().starts_with("periodic["))
        .expect("wakeup group of the periodic thread");
    // Every wait the timer view saw after an expiry is a wakeup sample too (periods whose
    // timer fired before the thread slept have no wait in either).
    let after = groups
        .iter()
        .find(|g| {
            g["metric"] == "wakeup-after-expiry"
                && g["key"]
                    .as_str()
                    .unwrap()
                    .starts_with("hrtimer_wakeup (periodic[")
        })
        .map_or(0, |g| g["count"].as_u64().unwrap());
    assert!(
        w["count"].as_u64().unwrap() >= after,
        "wakeup {} vs timer waits {after}",
        w["count"]
    );
}

/// Records lab/periodic on CPU1 beside lab/hog; returns the trace.
pub(crate) fn record_periodic(dir: &Path, fifo: bool, count: usize) -> Result<PathBuf, String> {
    let periodic = build_lab("periodic", dir)?;
    let hog = build_lab("hog", dir)?;
    let trace = dir.join(if fifo { "fifo.txt" } else { "other.txt" });
    let inst = Instance::new("timer")?;
    inst.write("buffer_size_kb", "8192");
    for e in [
        "sched/sched_switch",
        "sched/sched_waking",
        "sched/sched_wakeup",
        "sched/sched_wakeup_new",
        "timer/hrtimer_start",
        "timer/hrtimer_expire_entry",
        "timer/hrtimer_expire_exit",
        "irq",
    ] {
        inst.write(&format!("events/{e}/enable"), "1");
    }
    inst.write("trace", "");
    inst.write("tracing_on", "1");
    let mut h = Command::new(&hog)
        .args(["--cpu", "1", "--seconds", "3"])
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut c = Command::new(&periodic);
    c.args(["--cpu", "1", "--count", &count.to_string(), "--log"])
        .arg(dir.join("p.log"));
    if fifo {
        c.args(["--fifo", "50"]);
    } else {
        // A nice-0 sleeper mostly preempts the hog on wakeup (EEVDF), leaving 0-13 late
        // periods in 1000 by luck; at nice 19 it waits out the hog's slice every time.
        c.args(["--nice", "19"]);
    }
    let st = c.status().map_err(|e| e.to_string())?;
    inst.write("tracing_on", "0");
    let _ = h.kill();
    let _ = h.wait();
    if !st.success() {
        return Err("lab/periodic failed".into());
    }
    std::fs::copy(inst.dir.join("trace"), &trace).map_err(|e| e.to_string())?;
    Ok(trace)
}

pub(crate) fn explain_timer_json(trace: &Path) -> serde_json::Value {
    let out = Command::new(whylate())
        .args([
            "explain",
            "--json",
            "--timer",
            "--task",
            "periodic",
            "--deadline",
            "300us",
        ])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Seed 004's question on this kernel: a 1.33 ms periodic thread beside a hog. Its late
/// periods are blamed on the hog; as SCHED_FIFO it has no late period any task caused.
#[test]
pub(crate) fn explain_timer_blames_the_hog_and_fifo_clears_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: tracefs needs root") {
        return;
    }
    let tmp = tmpdir("explain-timer");
    let dir = tmp.path();
    let other = match record_periodic(dir, false, 1000) {
        Ok(t) => t,
        Err(e) => {
            skip(&e);
            return;
        }
    };
    let j = explain_timer_json(&other);
    assert!(
        j["cycles"]["count"].as_u64().unwrap() >= 990,
        "{}",
        j["cycles"]
    );
    let task_causes: Vec<&serde_json::Value> = j["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["culprit"]["comm"].is_null())
        .collect();
    eprintln!(
        "timer, SCHED_OTHER: {} late periods; causes: {}",
        j["cycles"]["misses"],
        j["causes"]
            .as_array()
            .unwrap()
            .iter()
            .take(4)
            .map(|c| format!(
                "{} {} {}",
                c["category"], c["culprit"], c["total_excess_ns"]
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    assert!(
        j["cycles"]["misses"].as_u64().unwrap() >= 1,
        "the hog must delay periods"
    );
    assert_eq!(task_causes[0]["culprit"]["comm"], "hog");
    // Woken behind the hog (runqueue-wait), or, for a period the thread overran,
    // preempted by it while still on the earlier one (preempted-by).
    assert!(
        ["runqueue-wait", "preempted-by"].contains(&task_causes[0]["category"].as_str().unwrap()),
        "{}",
        task_causes[0]
    );
    let fifo = record_periodic(dir, true, 1000).unwrap();
    let j = explain_timer_json(&fifo);
    for c in j["causes"].as_array().unwrap() {
        assert!(
            c["culprit"]["comm"].is_null(),
            "SCHED_FIFO: no task may delay it: {c}"
        );
    }
    eprintln!(
        "timer, SCHED_FIFO: {} late periods (none caused by a task)",
        j["cycles"]["misses"]
    );
}
