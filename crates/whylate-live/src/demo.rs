//! `whylate demo`: a seed's mechanism reproduced on this machine by a lab program, recorded
//! with [`crate::record`], explained, and set beside the program's own measurements.
//!
//! The lab sources are compiled into the binary and built with the system C compiler on
//! first use, so an installed `whylate` needs no checkout.

use crate::record::{self, RecordOptions};
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use whylate::explain::{self, ExplainReport, Options, Same, TimerOptions};
use whylate::measure::TaskSel;
use whylate::read::OpenOptions;
use whylate::selector::Selector;
use whylate::syscalls::Arch;
use whylate_report::{ExplainText, Paint};

/// The lab programs: name and C source.
pub const LAB: &[(&str, &str)] = &[
    ("frob", include_str!("../../../lab/frob.c")),
    ("periodic", include_str!("../../../lab/periodic.c")),
    ("hog", include_str!("../../../lab/hog.c")),
    ("udpflood", include_str!("../../../lab/udpflood.c")),
    ("udpping", include_str!("../../../lab/udpping.c")),
    ("inversion", include_str!("../../../lab/inversion.c")),
];

/// A scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// Seed 000: a pty request/reply client with a 3.5 ms deadline, hogs beside the device.
    Frob,
    /// Seed 004: a 1.33 ms periodic thread beside a hog.
    Timer,
    /// Seeds 002/003: NET_RX softirq work of a UDP flood landing beside a real-time thread.
    Softirq,
    /// Seed 002 over the network stack: datagrams to a real-time receiver wait in a NET_RX
    /// deferred to ksoftirqd, which waits behind a heavy task.
    Deferral,
    /// Priority inversion: a real-time thread blocks on a plain mutex whose normal-priority
    /// holder a middle-priority task preempts.
    Inversion,
}

impl Scenario {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Frob => "frob",
            Scenario::Timer => "timer",
            Scenario::Softirq => "softirq",
            Scenario::Deferral => "deferral",
            Scenario::Inversion => "inversion",
        }
    }
    /// Parses a name.
    pub fn parse(s: &str) -> Option<Scenario> {
        match s {
            "frob" => Some(Scenario::Frob),
            "timer" => Some(Scenario::Timer),
            "softirq" => Some(Scenario::Softirq),
            "deferral" => Some(Scenario::Deferral),
            "inversion" => Some(Scenario::Inversion),
            _ => None,
        }
    }
    /// What it reproduces and how `--mitigate` changes it.
    pub fn story(self, mitigate: bool) -> &'static str {
        match (self, mitigate) {
            (Scenario::Frob, false) => "seed 000: a client writes 7 bytes to a pty and busy-polls read() for the reply, 3.5 ms deadline; the device emulator and the tty worker share CPU1 with two CPU hogs",
            (Scenario::Frob, true) => "seed 000 mitigated: the hogs moved to the client's CPU0, the client at SCHED_FIFO 10 so they cannot hold it; the device and the tty worker have CPU1 to themselves",
            (Scenario::Timer, false) => "seed 004: a 1.33 ms periodic thread (nice 19) beside a CPU hog on CPU1; a period is late past 300 us",
            (Scenario::Timer, true) => "seed 004 mitigated: the periodic thread runs SCHED_FIFO 50, the hog stays",
            (Scenario::Softirq, false) => "seeds 002/003: a 1.33 ms SCHED_FIFO periodic thread on CPU1; a loopback UDP flood from CPU0 is steered to CPU1 (RPS), where its NET_RX softirq runs ahead of any task; a period is late past 300 us",
            (Scenario::Softirq, true) => "seeds 002/003 mitigated: the same flood, received on CPU0 (RPS off CPU1)",
            (Scenario::Deferral, false) => "seed 002 over the network stack: a datagram every 2.3 ms from a SCHED_FIFO sender on CPU0 to a SCHED_FIFO receiver on CPU1 (RPS); bursts of a filtered flood outlast a NET_RX run, the rest is deferred to ksoftirqd/1, which waits behind a nice -19 task there; a datagram is late past 1 ms",
            (Scenario::Deferral, true) => "seed 002 mitigated: the nice -19 task moved to CPU0, so ksoftirqd/1 runs when it is woken",
            (Scenario::Inversion, false) => "priority inversion: a SCHED_FIFO 50 thread on CPU0 takes a plain mutex every 2 ms; a nice-0 thread on CPU1 holds it 300 us at a time; a SCHED_FIFO 20 thread on CPU1 burns 1.5 ms every 7 ms, preempting the holder inside its hold; a period is late past 1 ms",
            (Scenario::Inversion, true) => "priority inversion mitigated: the mutex is PTHREAD_PRIO_INHERIT, so the holder runs at RT 50 while it is waited for",
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// The scenario.
    pub scenario: Scenario,
    /// Run the fixed variant.
    pub mitigate: bool,
    /// Keep the recording here (and the program's ground truth beside it, `.truth`).
    pub keep: Option<PathBuf>,
    /// Misses shown in full.
    pub top: usize,
}

/// The program's own account.
#[derive(Clone, Debug, Serialize)]
pub struct Truth {
    /// Cycles or periods it measured.
    pub count: u64,
    /// Those over the deadline (or without reply).
    pub misses: u64,
    /// The deadline.
    pub deadline_ns: u64,
}

/// The outcome.
#[derive(Clone, Debug, Serialize)]
pub struct DemoResult {
    /// The scenario.
    pub scenario: Scenario,
    /// Mitigated variant.
    pub mitigate: bool,
    /// What it reproduces.
    pub story: String,
    /// The recording (gone after the run unless kept).
    pub trace: PathBuf,
    /// The program's ground truth.
    pub truth: Truth,
    /// Events recorded and lost.
    pub recorded_events: u64,
    /// Lost events.
    pub lost_events: u64,
    /// whylate's explanation.
    pub explain: ExplainReport,
    /// The command that explains the recording (it works only when `kept`; its options
    /// are the ones the demo used).
    pub explain_command: String,
    /// The recording was kept (`--keep`): without it, it is gone with the temporary
    /// directory once the demo ends.
    pub kept: bool,
}

/// Why a demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// Not root.
    #[error("whylate demo records a trace and needs root (sudo whylate demo). Without root, explain the bundled recordings: whylate explain examples/frob.dat.zst (see examples/README.md)")]
    NotRoot,
    /// No C compiler.
    #[error("whylate demo builds its lab programs with a C compiler and found none ({0}); install one (apt install gcc), or explain the bundled recordings in examples/")]
    NoCompiler(String),
    /// A lab program failed.
    #[error("lab program {0}")]
    Lab(String),
    /// Recording failed.
    #[error(transparent)]
    Record(#[from] record::RecordError),
    /// Reading the recording failed.
    #[error(transparent)]
    Read(#[from] whylate::read::ReadError),
    /// I/O on a path.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Builds the lab programs into a fresh temporary directory, removed when the returned
/// handle is dropped (a C compile of each takes a fraction of a second).
pub fn build_lab() -> Result<tempfile::TempDir, DemoError> {
    let dir = tempfile::Builder::new()
        .prefix("whylate-lab-")
        .tempdir()
        .map_err(|e| DemoError::Io(std::env::temp_dir(), e))?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    for (name, src) in LAB {
        let c = dir.path().join(format!("{name}.c"));
        fs::write(&c, src).map_err(|e| DemoError::Io(c.clone(), e))?;
        let out = Command::new(&cc)
            .args(["-O2", "-o"])
            .arg(dir.path().join(name))
            .arg(&c)
            .output()
            .map_err(|e| DemoError::NoCompiler(format!("{cc}: {e}")))?;
        if !out.status.success() {
            return Err(DemoError::Lab(format!(
                "{name}.c did not build: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok(dir)
}

/// A sysfs setting changed for the run and put back after (also on error).
struct Knob {
    path: &'static str,
    before: Option<String>,
}

/// Unbound work (the tty flip buffer's) runs on these CPUs.
const WQ_MASK: &str = "/sys/devices/virtual/workqueue/cpumask";
/// The CPUs loopback's Receive Packet Steering hands received packets to.
const LO_RPS: &str = "/sys/class/net/lo/queues/rx-0/rps_cpus";

impl Knob {
    fn set(path: &'static str, value: &str) -> Result<Knob, DemoError> {
        let before = fs::read_to_string(path).map_err(|e| DemoError::Io(path.into(), e))?;
        fs::write(path, value).map_err(|e| DemoError::Io(path.into(), e))?;
        Ok(Knob {
            path,
            before: Some(before),
        })
    }
}

impl Drop for Knob {
    fn drop(&mut self) {
        if let Some(b) = &self.before {
            let _ = fs::write(self.path, b.trim());
        }
    }
}

/// A background program, stopped when dropped: SIGTERM first, so it can undo what it set.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        for _ in 0..50 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(bin: &Path, args: &[&str]) -> Result<Background, DemoError> {
    Command::new(bin)
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .map(Background)
        .map_err(|e| DemoError::Lab(format!("{}: {e}", bin.display())))
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Runs a scenario end to end.
pub fn run(o: &DemoOptions) -> Result<DemoResult, DemoError> {
    if !is_root() {
        return Err(DemoError::NotRoot);
    }
    let lab = build_lab()?;
    let work = tempfile::Builder::new()
        .prefix("whylate-demo-")
        .tempdir()
        .map_err(|e| DemoError::Io(std::env::temp_dir(), e))?;
    run_in(o, lab.path(), work.path())
}

fn run_in(o: &DemoOptions, lab: &Path, work: &Path) -> Result<DemoResult, DemoError> {
    let trace = match &o.keep {
        Some(k) => k.clone(),
        None => work.join(format!("{}.dat", o.scenario.name())),
    };
    let log = work.join("truth.log");
    let bin = |n: &str| lab.join(n);
    let rec = |events: &str, command: Vec<String>| -> Result<record::RecordResult, DemoError> {
        let opts = RecordOptions {
            events: vec![events.to_string()],
            duration: Some(std::time::Duration::from_secs(30)),
            buffer_kb: record::DEFAULT_BUFFER_KB,
            output: trace.clone(),
            command,
            command_stdout: Some(work.join("stdout")),
        };
        Ok(record::record(&opts, Arc::new(AtomicBool::new(false)))?)
    };
    let open = OpenOptions::default();
    let files = [trace.clone()];
    let (result, explain, truth, cmd) = match o.scenario {
        Scenario::Frob => {
            // The tty flip-buffer work is unbound: keep it on the device's CPU, as a USB
            // serial IRQ pinned there would (seed 000).
            let mask = Knob::set(WQ_MASK, "2")?;
            // The fix: the hogs leave the device's CPU (the tty work runs there now
            // unhindered) for the client's, where SCHED_FIFO keeps them from delaying it.
            // SCHED_IDLE hogs alone only halve the misses: with lazy preemption a woken
            // worker still waits up to a tick behind one.
            let hog_cpu = if o.mitigate { "0" } else { "1" };
            let mut c: Vec<String> = [
                s(&bin("frob")).as_str(),
                "--cycles",
                "500",
                "--client-cpu",
                "0",
                "--device-cpu",
                "1",
                "--hog-cpu",
                hog_cpu,
                "--hogs",
                "2",
                "--log",
                &s(&log),
                "--complaints",
                &s(&work.join("frobnicator.log")),
            ]
            .iter()
            .map(|a| a.to_string())
            .collect();
            if o.mitigate {
                c.extend(["--client-fifo".into(), "10".into()]);
            }
            let result = rec(
                "sched,irq,wq,syscalls:sys_enter_write,syscalls:sys_exit_read[ret > 0]",
                c,
            )?;
            drop(mask);
            let deadline: u64 = 3_500_000;
            let from = "sys_enter_write[comm=frobnicator,count=7]";
            let to = "sys_exit_read[comm=frobnicator,ret>0]";
            let opts = Options {
                from: Selector::parse(from).expect("valid selector"),
                to: vec![Selector::parse(to).expect("valid selector")],
                deadline_ns: Some(deadline),
                same: Same::Thread,
                pairing: Default::default(),
                arch: Some(Arch::native()),
                top: o.top,
                learned: Default::default(),
            };
            let ex = explain::explain(whylate::read::Opened::files(&files, &open)?, &open, &opts)?;
            // Log: cycle write_ns reply_ns latency_ns missed; latency 0 = no reply.
            let lat = column(&log, 3)?;
            let truth = Truth {
                count: lat.len() as u64,
                misses: lat
                    .iter()
                    .filter(|&&l| l <= 0 || l > deadline as i64)
                    .count() as u64,
                deadline_ns: deadline,
            };
            let cmd = format!("whylate explain --from '{from}' --to '{to}' --deadline 3.5ms");
            (result, ex, truth, cmd)
        }
        Scenario::Timer => {
            let _bg = spawn(&bin("hog"), &["--cpu", "1", "--seconds", "30"])?;
            // nice 19: EEVDF lets a nice-0 sleeper preempt the hog on wakeup, which would
            // make the misses a matter of luck.
            let policy = if o.mitigate {
                ["--fifo", "50"]
            } else {
                ["--nice", "19"]
            };
            periodic(o, &bin("periodic"), &log, &policy, rec)?
        }
        Scenario::Softirq => {
            // Steering loopback's receive to CPU1 puts every packet's NET_RX there, in
            // interrupt context where no task priority holds it off; off (0), each packet
            // is received on the sending CPU.
            let _rps = Knob::set(LO_RPS, if o.mitigate { "0" } else { "2" })?;
            // Bursts of 60 kB datagrams, each read by a 1000-instruction socket filter: a
            // few hundred us of NET_RX per burst, every 7 ms, out of step with the period.
            let _bg = spawn(
                &bin("udpflood"),
                &[
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
                    // Whatever else runs on CPU0, each burst is 300 us of sending.
                    "--fifo",
                    "10",
                ],
            )?;
            periodic(o, &bin("periodic"), &log, &["--fifo", "50"], rec)?
        }
        Scenario::Deferral => deferral(o, lab, &log, &files, rec)?,
        Scenario::Inversion => inversion(o, &bin("inversion"), &log, &files, rec)?,
    };
    if let Some(k) = &o.keep {
        let t = k.with_extension("truth");
        fs::copy(&log, &t).map_err(|e| DemoError::Io(t.clone(), e))?;
    }
    Ok(DemoResult {
        scenario: o.scenario,
        mitigate: o.mitigate,
        story: o.scenario.story(o.mitigate).into(),
        explain_command: format!("{cmd} {}", trace.display()),
        kept: o.keep.is_some(),
        trace,
        truth,
        recorded_events: result.cpus.iter().map(|c| c.events).sum(),
        lost_events: result.cpus.iter().map(|c| c.lost).sum(),
        explain,
    })
}

/// Datagrams from CPU0 to a real-time receiver on CPU1 while a flood's NET_RX is
/// deferred to ksoftirqd/1 behind a heavy task (on CPU1; on CPU0 when mitigated),
/// recorded and explained as request/reply cycles with a 1 ms deadline.
fn deferral(
    o: &DemoOptions,
    lab: &Path,
    log: &Path,
    files: &[PathBuf],
    rec: impl Fn(&str, Vec<String>) -> Result<record::RecordResult, DemoError>,
) -> Result<(record::RecordResult, ExplainReport, Truth, String), DemoError> {
    let bin = |n: &str| s(&lab.join(n));
    let _rps = Knob::set(LO_RPS, "2")?;
    // Deep enough that no datagram of the probe is dropped behind the flood's.
    let _backlog = Knob::set("/proc/sys/net/core/netdev_max_backlog", "10000")?;
    let hog_cpu = if o.mitigate { "0" } else { "1" };
    let _hog = spawn(
        &lab.join("hog"),
        &[
            "--cpu",
            hog_cpu,
            "--seconds",
            "30",
            "--nice",
            "-19",
            "--own-session",
            "--name",
            "cruncher",
        ],
    )?;
    // 900 datagrams every 30 ms: more than one NET_RX run drains.
    let _flood = spawn(
        &lab.join("udpflood"),
        &[
            "--cpu",
            "0",
            "--seconds",
            "30",
            "--size",
            "1000",
            "--filter-insns",
            "1000",
            "--burst-us",
            "10000",
            "--burst-packets",
            "900",
            "--every-us",
            "30000",
            "--batch",
            "64",
        ],
    )?;
    std::thread::sleep(std::time::Duration::from_millis(300));
    let c: Vec<String> = [
        bin("udpping").as_str(),
        "--tx-cpu",
        "0",
        "--rx-cpu",
        "1",
        "--rx-fifo",
        "50",
        // A sender behind its schedule sends what is overdue back to back: real-time, it
        // keeps to it when --mitigate moves the task onto its CPU.
        "--tx-fifo",
        "40",
        "--every-us",
        "2300",
        "--count",
        "800",
        "--log",
        &s(log),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let result = rec(
        "sched,irq,syscalls:sys_enter_sendto,syscalls:sys_exit_recvfrom",
        c,
    )?;
    let deadline: u64 = 1_000_000;
    let (from, to) = (
        "sys_enter_sendto[comm=udpping-tx]",
        "sys_exit_recvfrom[comm=udpping-rx]",
    );
    let opts = Options {
        from: Selector::parse(from).expect("valid selector"),
        to: vec![Selector::parse(to).expect("valid selector")],
        deadline_ns: Some(deadline),
        same: Same::Any,
        pairing: Default::default(),
        arch: Some(Arch::native()),
        top: o.top,
        learned: Default::default(),
    };
    let ex = explain::explain(
        whylate::read::Opened::files(files, &OpenOptions::default())?,
        &OpenOptions::default(),
        &opts,
    )?;
    // Log: seq send_ns recv_ns latency_ns; latency -1 = never arrived.
    let lat = column(log, 3)?;
    let truth = Truth {
        count: lat.len() as u64,
        misses: lat
            .iter()
            .filter(|&&l| l < 0 || l > deadline as i64)
            .count() as u64,
        deadline_ns: deadline,
    };
    let cmd = format!("whylate explain --from '{from}' --to '{to}' --same any --deadline 1ms");
    Ok((result, ex, truth, cmd))
}

/// The inversion program, recorded and explained as its waiter's periods (each from its
/// sleep's end to its next sleep) with a 1 ms deadline.
fn inversion(
    o: &DemoOptions,
    bin: &Path,
    log: &Path,
    files: &[PathBuf],
    rec: impl Fn(&str, Vec<String>) -> Result<record::RecordResult, DemoError>,
) -> Result<(record::RecordResult, ExplainReport, Truth, String), DemoError> {
    let deadline: u64 = 1_000_000;
    let mut c: Vec<String> = [&s(bin), "--seconds", "3", "--log", &s(log)]
        .iter()
        .map(|a| a.to_string())
        .collect();
    if o.mitigate {
        c.push("--mitigate".into());
    }
    let result = rec(
        "sched,syscalls:sys_enter_clock_nanosleep,syscalls:sys_exit_clock_nanosleep,syscalls:sys_enter_futex,syscalls:sys_exit_futex",
        c,
    )?;
    // A sleep that ended normally: the last one ends interrupted, as the process exits.
    let from = "sys_exit_clock_nanosleep[comm=inv-waiter,ret=0]";
    let to = "sys_enter_clock_nanosleep[comm=inv-waiter]";
    let opts = Options {
        from: Selector::parse(from).expect("valid selector"),
        to: vec![Selector::parse(to).expect("valid selector")],
        deadline_ns: Some(deadline),
        same: Same::Thread,
        pairing: Default::default(),
        arch: Some(Arch::native()),
        top: o.top,
        learned: Default::default(),
    };
    let ex = explain::explain(
        whylate::read::Opened::files(files, &OpenOptions::default())?,
        &OpenOptions::default(),
        &opts,
    )?;
    // Log: start_ns lock_wait_ns end_ns late.
    let late = column(log, 3)?;
    let truth = Truth {
        count: late.len() as u64,
        misses: late.iter().filter(|&&l| l != 0).count() as u64,
        deadline_ns: deadline,
    };
    let cmd = format!("whylate explain --from '{from}' --to '{to}' --deadline 1ms");
    Ok((result, ex, truth, cmd))
}

/// The periodic thread on CPU1 beside whatever load is running, recorded and explained as
/// timer lateness with a 300 us deadline.
fn periodic(
    o: &DemoOptions,
    bin: &Path,
    log: &Path,
    policy: &[&str],
    rec: impl Fn(&str, Vec<String>) -> Result<record::RecordResult, DemoError>,
) -> Result<(record::RecordResult, ExplainReport, Truth, String), DemoError> {
    // Let the load reach its CPU before the first period.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let deadline = 300_000i64;
    let mut c: Vec<String> = [
        &s(bin),
        "--cpu",
        "1",
        "--period-us",
        "1330",
        "--count",
        "1500",
        "--log",
        &s(log),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    c.extend(policy.iter().map(|a| a.to_string()));
    let result = rec("sched,irq,timer", c)?;
    let opts = TimerOptions {
        task: TaskSel::parse("periodic").ok(),
        deadline_ns: Some(deadline as u64),
        top: o.top,
    };
    let trace = result.output.clone();
    let ex = explain::explain_timers(
        whylate::read::Opened::files(&[trace], &OpenOptions::default())?,
        &OpenOptions::default(),
        &opts,
    )?;
    // Log: target_ns woke_ns late_ns.
    let late = column(log, 2)?;
    let truth = Truth {
        count: late.len() as u64,
        misses: late.iter().filter(|&&l| l > deadline).count() as u64,
        deadline_ns: deadline as u64,
    };
    let cmd = format!(
        "whylate explain --timer --task periodic --deadline {}us",
        deadline / 1000
    );
    Ok((result, ex, truth, cmd))
}

/// Column `i` (0-based) of a whitespace-separated log, as integers.
fn column(log: &Path, i: usize) -> Result<Vec<i64>, DemoError> {
    let text = fs::read_to_string(log).map_err(|e| DemoError::Io(log.to_path_buf(), e))?;
    text.lines()
        .enumerate()
        .map(|(n, l)| {
            l.split_whitespace()
                .nth(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| {
                    DemoError::Lab(format!(
                        "{}:{}: expected a number in column {}, found {l:?}",
                        log.display(),
                        n + 1,
                        i + 1
                    ))
                })
        })
        .collect()
}

impl DemoResult {
    /// The terminal text: the program's own count, then whylate's explanation.
    pub fn render_text(&self, p: &Paint) -> String {
        let r = &self.explain;
        let title = format!(
            "whylate demo {}{}: {}",
            self.scenario.name(),
            if self.mitigate { " --mitigate" } else { "" },
            self.story
        );
        format!(
            "{}\n\nthe program itself measured: {} of {} over {} ({} events recorded, {} lost)\nwhylate, from the trace alone:  {} of {} over it\n\n{}\n{}\n",
            p.heading(&title),
            self.truth.misses,
            self.truth.count,
            whylate::units::dur(self.truth.deadline_ns),
            self.recorded_events,
            self.lost_events,
            r.cycles.misses,
            r.cycles.count,
            r.render_text(p),
            closing_line(self.kept, &self.explain_command)
        )
    }
}

/// The demo's last line: the command that explains the recording again when it was kept,
/// else how to keep it (the temporary copy is deleted when the demo ends, so a command
/// naming it could not work).
pub fn closing_line(kept: bool, explain_command: &str) -> String {
    if kept {
        format!("explain it again: {explain_command}")
    } else {
        "the recording was deleted with its temporary directory: run the demo with --keep FILE to keep it (and its ground truth, FILE.truth) and explain it again".into()
    }
}

#[cfg(test)]
mod tests {
    use super::closing_line;

    #[test]
    fn the_demo_names_a_command_only_for_a_kept_recording() {
        let cmd = "whylate explain --from x /tmp/whylate-demo-1/frob.dat";
        assert_eq!(closing_line(true, cmd), format!("explain it again: {cmd}"));
        let gone = closing_line(false, cmd);
        assert!(!gone.contains("whylate explain"), "{gone}");
        assert!(!gone.contains("/tmp/"), "{gone}");
        assert!(gone.contains("--keep FILE"), "{gone}");
    }
}
