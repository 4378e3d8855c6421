//! The live commands' options: `record`, `watch` (with the timerlat tracer they share)
//! and `demo`.

use super::values::{interval, record_duration};
use super::{FindingsArgs, ModeArgs};
use clap::ValueEnum;
use std::path::PathBuf;

/// `whylate record`.
#[derive(clap::Args)]
pub struct RecordArgs {
    /// Presets (sched, irq, wq, syscalls, printk, timer, latency = all of them) and/or
    /// tracepoints (`sched_switch`, `irq:irq_handler_entry`), comma separated.
    /// `EVENT[FILTER]` sets the kernel's event filter (`'sys_exit_read[ret > 0]'`).
    #[arg(short = 'e', long = "events")]
    pub events: Vec<String>,
    /// Stop after this long (`10s`, `500ms`).
    #[arg(long, value_parser = record_duration)]
    pub duration: Option<u64>,
    /// Ring buffer per CPU, KiB.
    #[arg(long, default_value_t = whylate_live::record::DEFAULT_BUFFER_KB)]
    pub buffer_kb: u32,
    /// Output file (written 0600: traces hold command names and paths).
    #[arg(short = 'o', long, default_value = "trace.dat")]
    pub output: PathBuf,
    /// Remove tracefs instances left by killed whylate runs, then exit.
    #[arg(long)]
    pub reset: bool,
    /// Machine-readable summary.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub timerlat: TimerlatArgs,
    /// The command to trace.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// The kernel's timerlat tracer, for `record` and `watch`.
#[derive(clap::Args)]
pub struct TimerlatArgs {
    /// Use the kernel's timerlat tracer (needs CONFIG_TIMERLAT_TRACER) in whylate's own
    /// instance, with the osnoise, sched and irq events and the IRQ's stack of activations
    /// over 50 us. `record` saves the trace's text (`-o`, default timerlat.txt); `watch`
    /// explains each late activation as it comes (over --deadline, else a default said in
    /// the report).
    #[arg(long)]
    pub timerlat: bool,
    /// With --timerlat: the timer's period, microseconds (100 to 1000000, the kernel's
    /// own limits for timerlat_period_us).
    #[arg(long, value_name = "US", requires = "timerlat",
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub period: Option<u64>,
}

impl TimerlatArgs {
    /// The tracer asked for, with its period.
    pub fn tracer(&self) -> Option<whylate_live::record::Timerlat> {
        self.timerlat.then(|| whylate_live::record::Timerlat {
            period_us: self
                .period
                .unwrap_or(whylate_live::record::DEFAULT_PERIOD_US),
        })
    }
}

/// `whylate watch`.
#[derive(clap::Args)]
pub struct WatchArgs {
    /// Presets and tracepoints to record, as for `record` (default: sched, irq and
    /// workqueue events, timers for --timer, and the events the selectors name).
    #[arg(short = 'e', long = "events")]
    pub events: Vec<String>,
    #[command(flatten)]
    pub mode: ModeArgs,
    #[command(flatten)]
    pub findings: FindingsArgs,
    /// Stop after this long (`10m`, `1h`).
    #[arg(long, value_parser = record_duration)]
    pub duration: Option<u64>,
    /// Stop once this many misses were reported (the window that reaches the count
    /// reports all of its own).
    #[arg(long, value_name = "N")]
    pub until: Option<u64>,
    /// Context kept ahead of a miss: in its window and for its chain.
    #[arg(long, default_value = "500ms", value_parser = interval)]
    pub before: u64,
    /// Context kept after a miss ends.
    #[arg(long, default_value = "100ms", value_parser = interval)]
    pub after: u64,
    /// Keep each miss's window (before/after around it) as a trace.dat in DIR, which
    /// `whylate explain` and `trace-cmd report` read.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// With --keep: most windows kept (the oldest are removed first).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub keep_files: usize,
    /// With --keep: most MiB kept (the oldest are removed first).
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    pub keep_mb: u64,
    /// Run this shell command for each miss, with WHYLATE_MISS_N, _START, _TID, _CPU,
    /// _LATE_NS, _DURATION_NS, _CAUSE, _FILE (with --keep) and _JSON in its environment.
    #[arg(long, value_name = "CMD")]
    pub on_miss: Option<String>,
    /// One JSON object per line: each miss as it is explained (`{"miss": ...}`), then the
    /// whole run (`{"summary": ...}`).
    #[arg(long)]
    pub json: bool,
    /// Ring buffer per CPU, KiB.
    #[arg(long, default_value_t = whylate_live::record::DEFAULT_BUFFER_KB)]
    pub buffer_kb: u32,
    /// Most MiB of recent pages held in memory.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub ring_mb: u64,
    #[command(flatten)]
    pub timerlat: TimerlatArgs,
    /// The command to run and watch.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `whylate demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// frob (seed 000: a pty reply behind CPU hogs), timer (seed 004: a periodic
    /// thread beside a hog), softirq (seeds 002/003: a UDP flood's NET_RX softirq
    /// beside a real-time thread), deferral (seed 002's packets deferred to ksoftirqd) or
    /// inversion (a real-time thread on a mutex whose holder a middle-priority task
    /// preempts).
    #[arg(value_enum, default_value = "frob")]
    pub scenario: ScenarioArg,
    /// Run the fixed variant (frob: the hogs off the device's CPU; timer: a SCHED_FIFO
    /// victim; softirq: the flood received on its own CPU; deferral: the heavy task off
    /// ksoftirqd's CPU; inversion: a priority-inheritance mutex).
    #[arg(long)]
    pub mitigate: bool,
    /// Keep the recording here (the program's ground truth goes beside it, .truth).
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Misses shown in full.
    #[arg(long, default_value_t = 2)]
    pub top: usize,
    /// Machine-readable result.
    #[arg(long)]
    pub json: bool,
}

/// `whylate stats`.
/// `demo SCENARIO`.
#[derive(Clone, Copy, ValueEnum)]
pub enum ScenarioArg {
    Frob,
    Timer,
    Softirq,
    Deferral,
    Inversion,
}

impl From<ScenarioArg> for whylate_live::demo::Scenario {
    fn from(s: ScenarioArg) -> whylate_live::demo::Scenario {
        use whylate_live::demo::Scenario;
        match s {
            ScenarioArg::Frob => Scenario::Frob,
            ScenarioArg::Timer => Scenario::Timer,
            ScenarioArg::Softirq => Scenario::Softirq,
            ScenarioArg::Deferral => Scenario::Deferral,
            ScenarioArg::Inversion => Scenario::Inversion,
        }
    }
}
