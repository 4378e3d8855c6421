#![allow(clippy::print_stderr)]
//! Live-kernel tests: record real traces of a real workload (lab/ptypoll.py: a pty
//! request/reply client busy-polling read() beside a CPU hog) and check `whylate stats`
//! against independent counts: the kernel's own entry count and `perf script -F`.
//!
//! They skip with a reason when tracing is unavailable; with WHYLATE_REQUIRE_LIVE=1 (CI) a
//! skip is a failure. tracefs is restored by a guard, also when an assertion fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Live scenarios compete for 2 CPUs: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const TRACEFS: &str = "/sys/kernel/tracing";

fn skip(reason: &str) -> bool {
    if std::env::var("WHYLATE_REQUIRE_LIVE").as_deref() == Ok("1") {
        panic!("live test required (WHYLATE_REQUIRE_LIVE=1) but: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
    true
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn whylate() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_whylate"))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("whylate-live-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Top-level tracefs state that must be the same after a test as before.
fn tracefs_snapshot() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for f in [
        "tracing_on",
        "current_tracer",
        "set_event",
        "buffer_size_kb",
        "trace_clock",
        "trace_options",
    ] {
        m.insert(
            f.to_string(),
            std::fs::read_to_string(Path::new(TRACEFS).join(f)).unwrap_or_default(),
        );
    }
    let mut inst: Vec<String> = std::fs::read_dir(Path::new(TRACEFS).join("instances"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    inst.sort();
    m.insert("instances/".into(), inst.join(","));
    m
}

/// A private tracefs instance; removed (and tracefs unmounted if we mounted it) on drop.
struct Instance {
    dir: PathBuf,
    mounted_here: bool,
}

impl Instance {
    fn new(tag: &str) -> Result<Instance, String> {
        let mut mounted_here = false;
        if !Path::new(TRACEFS).join("instances").exists() {
            let ok = Command::new("mount")
                .args(["-t", "tracefs", "nodev", TRACEFS])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                return Err(format!("cannot mount tracefs on {TRACEFS}"));
            }
            mounted_here = true;
        }
        let dir = Path::new(TRACEFS)
            .join("instances")
            .join(format!("whylate-test-{tag}-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir(&dir) {
            let me = Instance {
                dir: PathBuf::new(),
                mounted_here,
            };
            drop(me);
            return Err(format!("cannot create a tracefs instance: {e}"));
        }
        Ok(Instance { dir, mounted_here })
    }
    fn write(&self, rel: &str, v: &str) {
        std::fs::write(self.dir.join(rel), v).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::write(self.dir.join("tracing_on"), "0");
            let _ = std::fs::remove_dir(&self.dir);
        }
        if self.mounted_here {
            let _ = Command::new("umount").arg(TRACEFS).status();
        }
    }
}

/// Restores "tracefs not mounted" on drop when it was not mounted at creation.
struct MountGuard {
    was_mounted: bool,
}

impl MountGuard {
    fn new() -> Self {
        MountGuard {
            was_mounted: Path::new(TRACEFS).join("instances").exists(),
        }
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        if !self.was_mounted && Path::new(TRACEFS).join("instances").exists() {
            let _ = Command::new("umount").arg(TRACEFS).status();
        }
    }
}

fn workload(extra: &[&str]) -> Command {
    let mut c = Command::new("python3");
    c.arg(repo().join("lab/ptypoll.py")).args(extra);
    c
}

fn stats_json(files: &[&Path]) -> serde_json::Value {
    let out = Command::new(whylate())
        .arg("stats")
        .arg("--json")
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "whylate stats failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The event name of an ftrace line, found the simple way (the word after the
/// `sec.usec:` word), as an independent check of the reader.
fn naive_ftrace_name(line: &str) -> Option<String> {
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
fn tracefs_text_matches_the_kernels_own_counts() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: tracefs needs root") {
        return;
    }
    let before = tracefs_snapshot();
    let was_mounted = Path::new(TRACEFS).join("instances").exists();
    let dir = tmpdir("ftrace");
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
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn perf_script_matches_perf_itself() {
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
    let dir = tmpdir("perf");
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
        .current_dir(&dir)
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
    std::fs::remove_dir_all(&dir).ok();
}
