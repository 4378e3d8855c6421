//! `whylate record`: what trace-cmd reports of its trace.dat, and tracefs left as it was after SIGINT, a bad event and a kill.

use super::*;

#[test]
pub(crate) fn record_writes_what_trace_cmd_reports() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: whylate record needs root") {
        return;
    }
    if !have("trace-cmd") && skip("trace-cmd not installed (apt-get install trace-cmd)") {
        return;
    }
    // trace-cmd mounts tracefs to look around: unmount it again if it was not mounted.
    let _mount = MountGuard::new();
    let before = tracefs_state();
    let tmp = tmpdir("record");
    let dir = tmp.path();
    let dat = dir.join("t.dat");
    // Sleeps, pipes and forks: sched, syscalls, timers, softirqs; exit code 3 comes back.
    let out = Command::new(whylate())
        .args(["record", "-o"])
        .arg(&dat)
        .args([
            "--",
            "sh",
            "-c",
            "for i in $(seq 40); do head -c 20000 /dev/urandom | cat > /dev/null; sleep 0.002; done; exit 3",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(before, tracefs_state(), "tracefs must be left as found");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dat).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "traces hold command lines and paths");
    // Every record, field for field, as trace-cmd reports it.
    let rep = Command::new("trace-cmd")
        .args(["report", "-R", "-i"])
        .arg(&dat)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let mut want = report::report_r_lines(&String::from_utf8_lossy(&rep.stdout));
    let mut got = report::dat_raw_lines(&dat);
    assert!(got.len() > 2000, "only {} events recorded", got.len());
    let by_name = |v: &[report::ReportLine]| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for l in v {
            *m.entry(l.3.clone()).or_default() += 1;
        }
        m
    };
    assert_eq!(by_name(&got), by_name(&want));
    // Equal timestamps on two CPUs may come in either order: compare sorted.
    got.sort();
    want.sort();
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    assert_eq!(got.len(), want.len());
    // The summary's count is the file's.
    let events: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert_eq!(events as usize, got.len(), "{text}");
    // The snapshot comes back through the reader: this kernel, its IRQ lines, the tasks.
    let src = whylate::read::open(&dat, &Default::default()).unwrap();
    let snap = src.snapshot().expect("whylate record stores a snapshot");
    assert_eq!(
        snap.kernel,
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap()
            .trim()
    );
    assert!(!snap.irqs.is_empty() && snap.tasks.len() > 10);
    assert!(snap.fds.iter().any(|f| f.path.starts_with("/dev/")));
}

#[test]
pub(crate) fn record_restores_tracefs_after_sigint_a_bad_event_and_a_kill() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: whylate record needs root") {
        return;
    }
    let before = tracefs_state();
    let tmp = tmpdir("record-stop");
    let dir = tmp.path();
    // Ctrl-C while recording with no command.
    let dat = dir.join("int.dat");
    let child = Command::new(whylate())
        .args(["record", "-e", "sched", "-o"])
        .arg(&dat)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(before, tracefs_state(), "after SIGINT");
    let j = stats_json(&[&dat]);
    assert!(j["events"].as_u64().unwrap() > 10, "{j}");
    assert!(j["by_name"]["sched_switch"].as_u64().unwrap() > 0);
    // A bad event name: refused before anything changes.
    let out = Command::new(whylate())
        .args(["record", "-e", "sched_switch,no_such_event", "-o"])
        .arg(dir.join("bad.dat"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no_such_event") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!dir.join("bad.dat").exists());
    assert_eq!(before, tracefs_state(), "after a bad event");
    // A typo gets the kernel's closest event names.
    let out = Command::new(whylate())
        .args(["record", "-e", "sched_swich", "-o"])
        .arg(dir.join("typo.dat"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean sched:sched_switch"), "{err}");
    // An output whose directory is a file, or does not exist (no directory but a
    // directory option's own is made), is named before tracefs is touched.
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    for (bad, said) in [
        (
            blocker.join("x.dat"),
            format!("{} is not a directory", blocker.display()),
        ),
        (
            dir.join("missing").join("x.dat"),
            format!(
                "the directory {} does not exist",
                dir.join("missing").display()
            ),
        ),
    ] {
        let out = Command::new(whylate())
            .args(["record", "-o"])
            .arg(&bad)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("-o {}: {said}", bad.display())),
            "{err}"
        );
        assert!(!dir.join("missing").exists());
    }
    assert_eq!(before, tracefs_state(), "after a bad output path");
    // Ctrl-C while tracing a command: the terminal's SIGINT reaches the whole process
    // group (recorder and command), and the recorder exits 130.
    let child = Command::new("setsid")
        .arg(whylate())
        .args(["record", "-e", "sched", "-o"])
        .arg(dir.join("cmd.dat"))
        .args(["--", "sleep", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // setsid execs whylate in a new session: its pid is the process group id.
    let st = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(before, tracefs_state(), "after Ctrl-C of record -- CMD");
    // SIGKILL cannot be caught: the instance stays, and --reset removes it. The recorder
    // is killed also when a check fails first (a live recorder would outlast the test).
    let child = KillOnDrop(
        Command::new(whylate())
            .args(["record", "-e", "sched", "-o"])
            .arg(dir.join("killed.dat"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    let inst = || tracefs_root().join(format!("instances/whylate-{pid}"));
    for _ in 0..100 {
        if inst().exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(inst().exists(), "the recorder made its instance");
    drop(child);
    let out = Command::new(whylate())
        .args(["record", "--reset"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("whylate-{pid}")),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The killed run could not unmount what it mounted.
    drop(MountGuard::since(&before["mounted"]));
    assert_eq!(before, tracefs_state(), "after a kill and --reset");
    for f in std::fs::read_dir(dir).unwrap().flatten() {
        let n = f.file_name().to_string_lossy().to_string();
        assert!(!n.starts_with(".whylate-"), "spool file {n} left behind");
    }
}

/// A child killed (and reaped) when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue 47: on the user's own recording, automatic mode explains the workload, not the
/// recorder: no whylate thread is an outlier, the subject of advice, or a cause ranked
/// before the workload's (first only when it is all there is, and said so),
/// and `latency` ranks the workload's threads first.
#[test]
pub(crate) fn explain_of_own_recording_is_not_about_the_recorder() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: whylate record needs root") {
        return;
    }
    let before = tracefs_state();
    let tmp = tmpdir("own-recording");
    let dat = tmp.path().join("ls.dat");
    let out = Command::new(whylate())
        .args(["record", "-o"])
        .arg(&dat)
        .args(["--", "sh", "-c", "ls -lR /usr > /dev/null"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(before, tracefs_state(), "tracefs must be left as found");
    about_the_workload(&dat, "whylate");
}

/// The same on a recording another recorder made, known by its threads' name. trace-cmd
/// record cannot run on every host (it writes /proc/sys/kernel/ftrace_enabled, which a
/// locked-down VM refuses with EPERM), perf record can wherever perf_event_open works.
#[test]
pub(crate) fn explain_of_a_perf_recording_is_not_about_perf() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: perf record -a needs root") {
        return;
    }
    if !have("perf") && skip("perf not installed (apt-get install linux-perf)") {
        return;
    }
    // perf record mounts tracefs to read the events' formats and leaves it mounted: the
    // machine is left as found, also when an assertion fails.
    let _mount = MountGuard::new();
    let tmp = tmpdir("perf-recording");
    let data = tmp.path().join("perf.data");
    let out = Command::new("perf")
        .args(["record", "-q", "-a", "-e", "sched:*", "-e", "irq:*", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", "ls -lR /usr > /dev/null"])
        .output()
        .unwrap();
    if !out.status.success() && skip("perf record failed (perf_event_open unavailable?)") {
        return;
    }
    about_the_workload(&data, "perf");
}

/// `explain` and `latency` of `trace` say nothing of the recorder (`comm`) as if it were
/// the workload: no outlier's waiter, not the first cause, no advice about it other
/// than the recorder's own, not the first group of any measure nor a worst sample.
fn about_the_workload(trace: &Path, comm: &str) {
    let ex = Command::new(whylate())
        .args(["explain", "--json"])
        .arg(trace)
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&ex.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&ex.stdout),
            String::from_utf8_lossy(&ex.stderr)
        )
    });
    let keep = || keep_for_failure(&format!("{comm}-recording"), &[trace]);
    let is_rec = |v: &serde_json::Value| v.as_str().is_some_and(|c| c == comm);
    for m in j["misses"].as_array().unwrap() {
        for l in m["chain"].as_array().unwrap() {
            assert!(
                !is_rec(&l["waiter"]["comm"]),
                "a recorder thread as a victim: {l}{}",
                keep()
            );
        }
    }
    // The recorder's rows rank after every cause of the workload's own. A recording
    // whose only outliers the recorder caused has it first: then that must be said under
    // the verdict, as the measurement's cost (a quiet workload under a busy recorder).
    let causes = j["causes"].as_array().unwrap();
    let first_rec = causes.iter().position(|c| is_rec(&c["culprit"]["comm"]));
    if let Some(i) = first_rec {
        assert!(
            causes[i..].iter().all(|c| is_rec(&c["culprit"]["comm"])),
            "a workload cause ranked after the recorder: {causes:?}{}",
            keep()
        );
    }
    if first_rec == Some(0) {
        let said = (j["blind"].as_array().unwrap().iter()).any(|b| {
            b.as_str()
                .is_some_and(|b| b.contains("the recorder itself held"))
        });
        assert!(said, "the recorder first, unsaid: {}{}", j["blind"], keep());
    }
    for a in j["advice"].as_array().unwrap() {
        let action = a["action"].as_str().unwrap();
        assert!(
            !action.contains(&format!("Run {comm}")) && !action.contains(&format!("Move {comm}")),
            "advice about the recorder as if it were the workload: {a}{}",
            keep()
        );
        if action.contains(&format!("{comm}[")) {
            assert!(action.starts_with("The recorder itself"), "{a}{}", keep());
        }
    }
    let lat = latency_json(&[], trace);
    for m in lat["measures"].as_array().unwrap() {
        if let Some(g) = m["groups"].get(0) {
            let key = g["key"].as_str().unwrap();
            assert!(
                !key.starts_with(&format!("{comm}[")),
                "latency ranks the recorder first: {key}{}",
                keep()
            );
        }
        for w in m["worst"].as_array().unwrap() {
            let g = w["group"].as_str().unwrap_or("");
            assert!(
                !g.starts_with(&format!("{comm}[")),
                "a recorder thread among the worst: {w}{}",
                keep()
            );
        }
    }
}
