//! Readers against the kernel's own tools: tracefs text and perf script event counts, runqueue and run times against `perf sched timehist`.

use super::*;

/// The event name of an ftrace line, found the simple way (the word after the
/// `sec.usec:` word), as an independent check of the reader.
pub(crate) fn naive_ftrace_name(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    words.find(|w| {
        w.ends_with(':')
            && w[..w.len() - 1].contains('.')
            && w[..w.len() - 1]
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.')
    })?;
    let w = words.next()?;
    if let Some(call) = w.strip_prefix("sys_") {
        if let Some(p) = call.find('(') {
            return Some(format!("sys_enter_{}", &call[..p]));
        }
        if words.next() == Some("->") {
            return Some(format!("sys_exit_{call}"));
        }
    }
    Some(w.trim_end_matches(':').to_string())
}

#[test]
pub(crate) fn tracefs_text_matches_the_kernels_own_counts() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: tracefs needs root") {
        return;
    }
    let before = tracefs_snapshot();
    let was_mounted = Path::new(TRACEFS).join("instances").exists();
    let tmp = tmpdir("ftrace");
    let dir = tmp.path();
    let trace = dir.join("trace.txt");
    {
        let inst = match Instance::new("ftrace") {
            Ok(i) => i,
            Err(e) => {
                skip(&e);
                return;
            }
        };
        inst.write("buffer_size_kb", "16384");
        inst.write("options/record-tgid", "1");
        for e in [
            "sched/sched_switch",
            "sched/sched_waking",
            "sched/sched_wakeup",
            "irq",
            "workqueue",
            "timer/hrtimer_start",
            "timer/hrtimer_expire_entry",
            "syscalls/sys_enter_read",
            "syscalls/sys_exit_read",
            "syscalls/sys_enter_write",
            "syscalls/sys_exit_write",
        ] {
            inst.write(&format!("events/{e}/enable"), "1");
        }
        inst.write("tracing_on", "1");
        let st = workload(&["--duration", "0.4", "--hog"]).status().unwrap();
        inst.write("tracing_on", "0");
        assert!(st.success());
        std::fs::copy(inst.dir.join("trace"), &trace).unwrap();
    }
    assert_eq!(
        was_mounted,
        Path::new(TRACEFS).join("instances").exists(),
        "tracefs mount state must be left as found"
    );
    if was_mounted {
        assert_eq!(before, tracefs_snapshot(), "tracefs must be left as found");
    }

    let text = std::fs::read_to_string(&trace).unwrap();
    let header = text
        .lines()
        .find(|l| l.contains("entries-in-buffer/entries-written:"))
        .expect("header");
    let entries: u64 = header
        .split_whitespace()
        .find(|w| w.contains('/') && w.starts_with(|c: char| c.is_ascii_digit()))
        .and_then(|w| w.split('/').next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    let mut naive: BTreeMap<String, u64> = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(n) = naive_ftrace_name(l) {
            *naive.entry(n).or_default() += 1;
        }
    }
    let j = stats_json(&[&trace]);
    assert_eq!(j["format"], "ftrace");
    assert_eq!(j["unparsed"], 0, "{}", j["unparsed_samples"]);
    let lost_markers = j["lost"]["markers"].as_u64().unwrap();
    assert_eq!(
        j["events"].as_u64().unwrap() - lost_markers,
        entries,
        "events = the kernel's entries-in-buffer"
    );
    let ours: BTreeMap<String, u64> = serde_json::from_value(j["by_name"].clone()).unwrap();
    let ours: BTreeMap<String, u64> = ours
        .into_iter()
        .filter(|(k, _)| k != "lost_events")
        .collect();
    assert_eq!(ours, naive);
    assert!(
        ours["sys_enter_read"] > 1000,
        "the workload busy-polls read()"
    );
    assert!(ours.get("workqueue_execute_start").copied().unwrap_or(0) > 0);
}

#[test]
pub(crate) fn perf_script_matches_perf_itself() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: perf -a needs root") {
        return;
    }
    let perf_ok = Command::new("perf")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !perf_ok && skip("perf not installed (apt-get install linux-perf)") {
        return;
    }
    // perf mounts tracefs itself to read event formats: unmount it again if it was not
    // mounted before, also when an assertion fails.
    let _mount = MountGuard::new();
    let tmp = tmpdir("perf");
    let dir = tmp.path();
    let data = dir.join("perf.data");
    let events = "sched:sched_switch,sched:sched_waking,sched:sched_wakeup,irq:irq_handler_entry,\
irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit,workqueue:workqueue_queue_work,\
workqueue:workqueue_execute_start,workqueue:workqueue_execute_end,raw_syscalls:sys_enter,\
raw_syscalls:sys_exit,syscalls:sys_enter_write,syscalls:sys_exit_write";
    let st = Command::new("perf")
        .args(["record", "-q", "-a", "-m", "8M", "-e", events, "-o"])
        .arg(&data)
        .arg("--")
        .args(workload(&["--duration", "0.3", "--hog"]).get_args())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(dir)
        .status();
    let st = match st {
        Ok(s) => s,
        Err(e) => {
            skip(&format!("perf record: {e}"));
            return;
        }
    };
    if !st.success() && skip("perf record failed (perf_event_open unavailable?)") {
        return;
    }
    let script = dir.join("perf.txt");
    let out = Command::new("perf")
        .args(["script", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(&script, &out.stdout).unwrap();
    // perf's own view: one event name and CPU per sample.
    let fields = Command::new("perf")
        .args(["script", "-F", "cpu,event", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let mut names: BTreeMap<String, u64> = BTreeMap::new();
    let mut cpus: BTreeMap<String, u64> = BTreeMap::new();
    for l in String::from_utf8_lossy(&fields.stdout).lines() {
        let mut w = l.split_whitespace();
        let (Some(cpu), Some(ev)) = (w.next(), w.next()) else {
            continue;
        };
        let cpu = cpu.trim_matches(|c| c == '[' || c == ']');
        let bare = ev.trim_end_matches(':').rsplit(':').next().unwrap();
        *names.entry(bare.to_string()).or_default() += 1;
        *cpus
            .entry(cpu.parse::<u32>().unwrap().to_string())
            .or_default() += 1;
    }
    let j = stats_json(&[&script]);
    assert_eq!(j["format"], "perf-script");
    assert_eq!(j["unparsed"], 0, "{}", j["unparsed_samples"]);
    let ours: BTreeMap<String, u64> = serde_json::from_value(j["by_name"].clone()).unwrap();
    assert_eq!(ours, names, "per-event counts equal perf script -F event");
    let ours_cpu: BTreeMap<String, u64> = serde_json::from_value(j["by_cpu"].clone()).unwrap();
    assert_eq!(ours_cpu, cpus);
    assert!(names["sys_enter"] > 1000);
    // whylate's own perf.data reader yields the same events, fields and all, as whylate's
    // reader of perf script's text.
    let ns_script = dir.join("perf-ns.txt");
    let out = Command::new("perf")
        .args(["script", "--ns", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    std::fs::write(&ns_script, &out.stdout).unwrap();
    let mut strings = whylate::event::Interner::new();
    let mut bin = whylate::read::open(&data, &Default::default()).unwrap();
    let mut txt = whylate::read::open(&ns_script, &Default::default()).unwrap();
    assert_eq!(bin.format(), whylate::read::Format::PerfData);
    use whylate::event::Kind;
    use whylate::read::EventSource;
    let mut all = |src: &mut whylate::read::Input| {
        let mut v = Vec::new();
        while let Some(e) = src.next_event(&mut strings).unwrap() {
            v.push(e);
        }
        v
    };
    let (mut va, mut vb) = (all(&mut bin), all(&mut txt));
    assert_eq!(va.len(), vb.len(), "both readers yield every event");
    // The in-place path over the mapped file and linux-perf-data's record iterator (with
    // its round sorter and a reorder window) yield the same events in the same order.
    {
        use whylate::read::perfdata::PerfData;
        let open = |generic: bool| {
            let f = std::fs::File::open(&data).unwrap();
            let w = whylate::read::PERF_WINDOW;
            match generic {
                false => PerfData::open(&data, f, w).unwrap(),
                true => PerfData::open_generic(&data, f, w).unwrap(),
            }
        };
        let (mut fast, mut generic) = (open(false), open(true));
        assert!(fast.is_fast(), "perf record -a output takes the fast path");
        let mut n = 0;
        loop {
            let a = fast.next_decoded(&mut strings).unwrap();
            let b = generic.next_decoded(&mut strings).unwrap();
            assert_eq!(a, b, "perf.data event {n}: fast path vs linux-perf-data");
            if a.is_none() {
                break;
            }
            n += 1;
        }
        assert_eq!(n, va.len());
        // `order().reordered` is not compared: the fast path counts records that came
        // earlier than perf's round rule had let out, the generic one records its reorder
        // window moved back. They differ under load (9 and 8 in a fresh-clone run) while
        // the events, compared one by one above, are the same and in the same order.
    }
    let (ua, ub) = (bin.order().unsorted, txt.order().unsorted);
    if ua + ub > 0 {
        // perf's round sorting (in the file, or in perf script under load) can let an
        // event out later than its reorder window allows; each reader counts those.
        // Then the two orders may differ there: compare the events in time order.
        eprintln!("out of order beyond the window: perf.data {ua}, perf script text {ub}");
        let key = |e: &whylate::event::Event| (e.ts, e.cpu, e.tid);
        va.sort_by_key(key);
        vb.sort_by_key(key);
    }
    let mut n = 0;
    for (a, b) in va.into_iter().zip(vb) {
        n += 1;
        let at = format!("event {n}: {a:?} vs {b:?}");
        assert_eq!((a.ts, a.cpu, a.tid), (b.ts, b.cpu, b.tid), "{at}");
        assert_eq!(a.name(), b.name(), "{at}");
        match (&a.kind, &b.kind) {
            (
                Kind::SchedSwitch {
                    prev_state: s1,
                    prev_pid: p1,
                    next_pid: n1,
                    prev_comm: c1,
                    next_prio: q1,
                    ..
                },
                Kind::SchedSwitch {
                    prev_state: s2,
                    prev_pid: p2,
                    next_pid: n2,
                    prev_comm: c2,
                    next_prio: q2,
                    ..
                },
            ) => {
                assert_eq!((p1, n1, c1, q1), (p2, n2, c2, q2), "{at}");
                assert_eq!(s1.is_runnable(), s2.is_runnable(), "{at}");
            }
            // perf prints these through print fmt, whylate keeps the raw fields.
            (Kind::Other { .. }, Kind::Other { .. }) => {}
            (x, y) => assert_eq!(x, y, "{at}"),
        }
    }
    assert_eq!(n as u64, names.values().sum::<u64>());
}

/// `perf sched timehist` on the same perf.data is the oracle for run and wait times.
/// Definitions: timehist's "sch delay" is the time from sched_waking (or sched_wakeup) to
/// the switch-in and is 0 for preempted tasks, so it is compared with our woken + new
/// waits; its "run time" with our runs. Threads whose switch-in the trace lacks (this VM
/// never records the switch out of idle on CPU1) are left out: timehist then counts the
/// idle time before as the thread's run, we infer the switch-in from the thread's first
/// event and flag it. Tolerance: 1 us per switch (timehist prints truncated us).
#[test]
pub(crate) fn runqueue_and_run_times_match_perf_sched_timehist() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: perf -a needs root") {
        return;
    }
    let perf_ok = Command::new("perf")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !perf_ok && skip("perf not installed (apt-get install linux-perf)") {
        return;
    }
    let _mount = MountGuard::new();
    let tmp = tmpdir("timehist");
    let dir = tmp.path();
    let (periodic, hog) = match (build_lab("periodic", dir), build_lab("hog", dir)) {
        (Ok(p), Ok(h)) => (p, h),
        (Err(e), _) | (_, Err(e)) => {
            skip(&e);
            return;
        }
    };
    let data = dir.join("perf.data");
    let script = format!(
        "{} --cpu 1 --seconds 0.8 & {} --cpu 1 --count 300 --log {}; python3 {} --duration 0.3 --hog >/dev/null; wait",
        hog.display(),
        periodic.display(),
        dir.join("p.log").display(),
        repo().join("lab/ptypoll.py").display()
    );
    let st = Command::new("perf")
        // A large buffer: the hogs and the tests beside this one starve perf's reader,
        // and a full buffer drops switches, which leaves the busy threads uncompared.
        .args(["record", "-q", "-a", "-m", "32M", "-e"])
        .arg("sched:sched_switch,sched:sched_waking,sched:sched_wakeup,sched:sched_wakeup_new,sched:sched_migrate_task")
        .arg("-o")
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .current_dir(dir)
        .status();
    match st {
        Ok(s) if s.success() => {}
        Ok(_) => {
            skip("perf record failed (perf_event_open unavailable?)");
            return;
        }
        Err(e) => {
            skip(&format!("perf record: {e}"));
            return;
        }
    }
    let text = dir.join("perf.txt");
    let out = Command::new("perf")
        .args(["script", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(&text, &out.stdout).unwrap();
    let th = Command::new("perf")
        .args(["sched", "timehist", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        th.status.success(),
        "{}",
        String::from_utf8_lossy(&th.stderr)
    );
    // tid -> (sch delay ns, run ns, lines)
    let mut oracle: BTreeMap<i64, (u64, u64, u64)> = BTreeMap::new();
    for l in String::from_utf8_lossy(&th.stdout).lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 6 || !w[1].starts_with('[') {
            continue;
        }
        let num = |s: &str| -> Option<u64> {
            let (a, b) = s.split_once('.')?;
            Some(a.parse::<u64>().ok()? * 1_000_000 + b.parse::<u64>().ok()? * 1000)
        };
        let (Some(delay), Some(run)) = (num(w[w.len() - 2]), num(w[w.len() - 1])) else {
            continue;
        };
        let task = w[w.len() - 4];
        let Some(tid) = task
            .rsplit_once('[')
            .and_then(|(_, r)| r.trim_end_matches(']').split('/').next())
            .and_then(|t| t.parse::<i64>().ok())
        else {
            continue;
        };
        let e = oracle.entry(tid).or_default();
        e.0 += delay;
        e.1 += run;
        e.2 += 1;
    }
    let j = latency_json(&["--measure", "runqueue"], &text);
    // tid -> (woken + new wait ns, run ns, spans with an inferred endpoint)
    let mut ours: BTreeMap<i64, (u64, u64, u64)> = BTreeMap::new();
    for g in j["measures"][0]["groups"].as_array().unwrap() {
        let x = &g["extra"];
        let e = match g["metric"].as_str().unwrap() {
            "runnable" | "run" => ours.entry(x["tid"].as_i64().unwrap()).or_default(),
            _ => continue,
        };
        if g["metric"] == "run" {
            e.1 += g["total_ns"].as_u64().unwrap();
        } else {
            let by = &x["by_cause_ns"];
            // timehist drops a wakeup that races the switch out (sched_waking lands while
            // the task is still on the CPU, the switch out says D or S): it shows sch
            // delay 0 for the wait that follows. We count that wait; set it aside here.
            e.0 += by["woken"].as_u64().unwrap_or(0) + by["new"].as_u64().unwrap_or(0)
                - x["woken_during_switch_out_ns"].as_u64().unwrap_or(0);
        }
        e.2 = e.2.max(x["inferred"].as_u64().unwrap_or(0));
    }
    let partial: Vec<i64> = j["measures"][0]["partial_tids"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_i64().unwrap()).collect())
        .unwrap_or_default();
    // perf loses the identity of a thread that exits: the sample of its last switch
    // out has pid -1 and timehist books that last run to "[-1]" (we book it to the
    // prev_pid the event names). Leave such threads out too.
    let exited: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(" -1 [") && l.contains("sched_switch:"))
        .filter_map(|l| {
            let v = l.split("prev_pid=").nth(1)?.split_whitespace().next()?;
            v.parse().ok()
        })
        .collect();
    // ...and with that last run goes the wait before it: timehist computes a wait when the
    // run after it ends, and books it to the thread the switch out names (-1). So for an
    // exited thread its sch delay lacks the wait before the last run, which can be tens
    // of us when the host is busy. That wait, from the text: first wakeup after the
    // thread's previous switch out, to its last switch in.
    let mut last_wait: BTreeMap<i64, u64> = BTreeMap::new();
    let mut woke: BTreeMap<i64, u64> = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        // perf script pads the event column: `12662.046257:       sched:sched_waking:`.
        let Some(at) = l.find(" sched:sched_") else {
            continue;
        };
        let (head, rest) = (l[..at].trim_end().trim_end_matches(':'), &l[at + 7..]);
        let Some(ts) = head.rsplit(' ').next().and_then(|t| {
            let (a, b) = t.split_once('.')?;
            Some(a.parse::<u64>().ok()? * 1_000_000_000 + b.parse::<u64>().ok()? * 1000)
        }) else {
            continue;
        };
        let field = |k: &str| -> Option<i64> {
            rest.split(k)
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        if rest.starts_with("sched_switch:") {
            if let Some(p) = field("prev_pid=") {
                woke.remove(&p);
            }
            if let Some(n) = field("next_pid=") {
                let w = woke.remove(&n).map_or(0, |at| ts.saturating_sub(at));
                last_wait.insert(n, w);
            }
        } else if rest.starts_with("sched_waking:") || rest.starts_with("sched_wakeup") {
            if let Some(p) = field(" pid=") {
                woke.entry(p).or_insert(ts);
            }
        }
    }
    let (mut compared, mut left_out, mut last_wait_used) = (0, 0, 0);
    let mut big = 0;
    let mut big_left: Vec<(i64, u64, bool)> = Vec::new();
    for (tid, (delay, run, lines)) in &oracle {
        // 0 is idle; perf shows threads it never saw a comm for as [-1].
        if *tid <= 0 {
            continue;
        }
        let (w, r, inferred) = ours.get(tid).copied().unwrap_or_default();
        let tol = lines * 1000;
        if exited.contains(tid) && inferred == 0 && !partial.contains(tid) {
            // timehist booked the last run to [-1]: our run time is timehist's plus that
            // last run, and our wait timehist's plus the wait before it (1 us of slack for
            // the text's us stamps).
            let lw = last_wait.get(tid).copied().unwrap_or(0);
            assert!(
                (w.abs_diff(*delay) <= tol || w.abs_diff(*delay + lw) <= tol + 1000)
                    && r + tol >= *run,
                "exited tid {tid}: timehist sch delay {delay} run {run} over {lines} switches; whylate woken wait {w} run {r}; wait before the last run {lw}; {}",
                keep_for_failure("timehist", &[&dir.join("perf.data"), &dir.join("perf.txt")])
            );
            if w.abs_diff(*delay) > tol {
                last_wait_used += 1;
            }
            compared += 1;
            if *lines >= 50 && *run > 1_000_000 {
                big += 1;
            }
            continue;
        }
        if inferred > 0 || partial.contains(tid) {
            left_out += 1;
            if *lines >= 50 && *run > 1_000_000 {
                big_left.push((*tid, inferred, partial.contains(tid)));
            }
            continue;
        }
        assert!(
            w.abs_diff(*delay) <= tol && r.abs_diff(*run) <= tol,
            "tid {tid}: timehist sch delay {delay} run {run} over {lines} switches; whylate woken wait {w} run {r}; {}",
            keep_for_failure("timehist", &[&dir.join("perf.data"), &dir.join("perf.txt")])
        );
        compared += 1;
        if *lines >= 50 && *run > 1_000_000 {
            big += 1;
        }
    }
    eprintln!(
        "timehist: {compared} threads agree ({last_wait_used} exited ones once timehist's lost last wait is added), {left_out} left out (a switch not traced, or exited)"
    );
    assert!(compared >= 10, "too few threads compared: {compared}");
    assert!(
        big >= 2,
        "the hog and the periodic thread must be among them; busy threads left out (tid, inferred switches, partial): {big_left:?}; whylate's lost events and notes: {} {}",
        j["lost"],
        j["notes"]
    );
}
