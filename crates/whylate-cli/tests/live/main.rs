#![allow(clippy::print_stderr)]
//! Live-kernel tests: record real traces of a real workload (lab/ptypoll.py: a pty
//! request/reply client busy-polling read() beside a CPU hog) and check `whylate stats`
//! against independent counts: the kernel's own entry count and `perf script -F`.
//!
//! They skip with a reason when tracing is unavailable; with WHYLATE_REQUIRE_LIVE=1 (CI) a
//! skip is a failure. tracefs is restored by a guard, also when an assertion fails.

#[path = "../common/mod.rs"]
mod common;
mod demo;
mod frob;
mod inversion;
mod kmsg;
mod memory;
mod printk;
mod reader_shapes;
mod readers;
mod record;
mod timer;
mod udp;
mod watch;

// Helpers one group of tests shares with another.
use common::repo;
use frob::*;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use timer::*;

/// Live scenarios compete for 2 CPUs: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const TRACEFS: &str = "/sys/kernel/tracing";

fn skip(reason: &str) -> bool {
    if std::env::var("WHYLATE_REQUIRE_LIVE").as_deref() == Ok("1") {
        panic!("live test required (WHYLATE_REQUIRE_LIVE=1) but: {reason}");
    }
    // Straight to the stderr file descriptor, not `eprintln!`: the test harness captures
    // the print macros of a passing test, so a skip would show only with --nocapture and
    // a plain `cargo test` would look like the live tests ran.
    let test = std::thread::current().name().unwrap_or("live").to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    common::log_skip(&test, reason);
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

fn whylate() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_whylate"))
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// A temporary directory, removed when the test ends (also when it fails).
fn tmpdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("whylate-live-{tag}-"))
        .tempdir()
        .unwrap()
}

/// Copies a failing check's files out of its temporary directory (a disagreement seen
/// once in several full runs needs its inputs to be understood); says where, for the
/// failure message.
fn keep_for_failure(tag: &str, files: &[&Path]) -> String {
    let to = std::env::temp_dir().join(format!("whylate-{tag}-failure-{}", std::process::id()));
    let copy = |f: &&Path| {
        f.file_name()
            .is_some_and(|n| std::fs::copy(f, to.join(n)).is_ok())
    };
    match std::fs::create_dir_all(&to).is_ok() && files.iter().all(copy) {
        true => format!("kept in {}", to.display()),
        false => format!("could not keep them in {}", to.display()),
    }
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

/// Unmounts on drop every tracefs mount that was not there at creation: perf mounts
/// tracefs to read event formats (on this kernel by looking into debugfs/tracing, which
/// automounts it there), and a killed recorder cannot unmount what it mounted.
struct MountGuard {
    before: Vec<String>,
}

impl MountGuard {
    fn new() -> Self {
        MountGuard {
            before: tracefs_mounts(),
        }
    }

    /// As if made when the mounts were `mounted` (a [`tracefs_state`]'s `mounted`).
    fn since(mounted: &str) -> Self {
        MountGuard {
            before: (mounted.split(',').filter(|m| !m.is_empty()))
                .map(str::to_string)
                .collect(),
        }
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        for m in tracefs_mounts().iter().rev() {
            if !self.before.contains(m) {
                let _ = Command::new("umount").arg(m).status();
            }
        }
    }
}

/// The mount points of tracefs, in mount order.
fn tracefs_mounts() -> Vec<String> {
    (std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines())
    .map(|l| l.split_whitespace().collect::<Vec<&str>>())
    .filter(|f| f.len() > 2 && f[2] == "tracefs")
    .map(|f| f[1].to_string())
    .collect()
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

/// Builds a lab C program into `dir`; None (with the reason) when there is no compiler.
fn build_lab(name: &str, dir: &Path) -> Result<PathBuf, String> {
    let out = dir.join(name);
    let src = repo().join("lab").join(format!("{name}.c"));
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .map_err(|e| format!("no C compiler (cc): {e}"))?;
    if !st.success() {
        panic!("lab/{name}.c does not compile");
    }
    Ok(out)
}

fn latency_json(args: &[&str], file: &Path) -> serde_json::Value {
    let out = Command::new(whylate())
        .arg("latency")
        .arg("--json")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "whylate latency failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[path = "../../../whylate/tests/common/report.rs"]
mod report;

/// Where the recorder finds tracefs: the first mounted (from /proc/mounts), else
/// [`TRACEFS`], where it mounts it.
fn tracefs_root() -> PathBuf {
    PathBuf::from(
        tracefs_mounts()
            .into_iter()
            .next()
            .unwrap_or(TRACEFS.into()),
    )
}

/// tracefs as a test must leave it: where it is mounted (a look into debugfs/tracing
/// automounts it there) and, when mounted, the top-level files and the instance list.
fn tracefs_state() -> BTreeMap<String, String> {
    let mounts = tracefs_mounts();
    let mut m = if mounts.is_empty() {
        BTreeMap::new()
    } else {
        tracefs_snapshot()
    };
    m.insert("mounted".into(), mounts.join(","));
    m
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}
