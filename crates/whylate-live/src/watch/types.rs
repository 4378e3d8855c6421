//! What watch is asked, what it reports as it goes, and what it returns.

use crate::record::RecordError;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;
use whylate::explain::{ExplainReport, Miss, Mode};
use whylate::read::ReadError;

/// Where and how much to keep.
#[derive(Clone, Debug)]
pub struct KeepOptions {
    /// Directory for the windows (created if missing).
    pub dir: PathBuf,
    /// Most windows kept.
    pub max_files: usize,
    /// Most bytes kept.
    pub max_bytes: u64,
}

/// What to watch.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// What a sample and a miss are (the automatic mode only with `timerlat`: its
    /// activations).
    pub mode: Mode,
    /// Run the kernel's timerlat tracer in the instance, its activations the samples.
    pub timerlat: Option<crate::record::Timerlat>,
    /// Presets and tracepoints to record (as `record -e`).
    pub events: Vec<String>,
    /// Ring buffer per CPU, KiB.
    pub buffer_kb: u32,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many misses.
    pub until: Option<u64>,
    /// Command to run and watch (stop when it exits).
    pub command: Vec<String>,
    /// The command's stdout goes to our stderr (when ours carries JSON lines).
    pub command_stdout_to_stderr: bool,
    /// Context kept ahead of a miss (its window, and the chain's history).
    pub before_ns: u64,
    /// Context kept after a miss ends.
    pub after_ns: u64,
    /// Keep each miss's window as a trace.dat.
    pub keep: Option<KeepOptions>,
    /// Run this shell command for each miss (its facts in the environment).
    pub on_miss: Option<String>,
    /// Most bytes of pages held in memory.
    pub ring_bytes: u64,
}

/// A miss, explained as soon as a window held it whole.
#[derive(Clone, Debug, Serialize)]
pub struct LiveMiss {
    /// Its number in the run (1 = first).
    pub n: u64,
    /// The miss, as `explain --json` lists it.
    #[serde(flatten)]
    pub miss: Miss,
    /// The deadline it missed.
    pub deadline_ns: Option<u64>,
    /// Events the kernel lost on some CPU while it ran: (CPU, count; 0 = not said). Its
    /// chain may lack what was lost.
    pub lost: Vec<(u32, u64)>,
    /// Its window, kept as a trace.dat.
    pub kept: Option<PathBuf>,
    /// How long after its end (or its deadline, with no reply) it was explained.
    pub explained_after_ns: u64,
    /// Why the on-miss command could not start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_miss_error: Option<String>,
}

/// The run so far, for a live view.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// Since tracing began.
    pub elapsed_ns: u64,
    /// The summary so far (statistics, causes).
    #[serde(skip)]
    pub report: Option<ExplainReport>,
    /// The deadline in use (none while it is being learnt).
    pub deadline_ns: Option<u64>,
    /// Events the kernel lost, per CPU.
    pub lost: Vec<u64>,
    /// This process's CPU time over the wall time (1.0 = one CPU): the readers and the
    /// windows' analysis together.
    pub recorder_cpu: f64,
    /// Bytes of pages held.
    pub ring_bytes: u64,
    /// Windows explained.
    pub windows: u64,
    /// What each wall-clock minute cost, in order, the last day's at most: whether the
    /// cost per second traced grows over a long run.
    pub minutes: Vec<MinuteCost>,
    /// The number of `minutes`' first (0: the run's first minute).
    pub first_minute: u64,
}

/// What one wall-clock minute of a run cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MinuteCost {
    /// Windows explained in it.
    pub windows: u64,
    /// Misses reported in it (each kept window is written then: its cost is in `cpu_ns`).
    pub misses: u64,
    /// Trace time those windows spanned (a window that starts before the last one's end,
    /// to settle a cycle still open, counts that part again).
    pub traced_ns: u64,
    /// Wall time spent explaining them.
    pub analysis_ns: u64,
    /// This process's CPU time while explaining them (the readers' share meanwhile
    /// included: an upper bound).
    pub analysis_cpu_ns: u64,
    /// This process's CPU time over the minute: the readers and the analysis.
    pub cpu_ns: u64,
}

/// Where a run's misses and status go as they come.
pub trait Watcher {
    /// A miss was explained; `framing` is the report of the window that explained it
    /// (its noun and deadline, for rendering).
    fn miss(&mut self, m: &LiveMiss, framing: &ExplainReport);
    /// The run's state, once per tick.
    fn status(&mut self, s: &Status);
}

/// The outcome of a run.
#[derive(Debug, Serialize)]
pub struct WatchResult {
    /// What `explain` would say of the whole run (none when no sample settled).
    pub report: Option<ExplainReport>,
    /// The last status.
    pub status: Status,
    /// The deadline used, and why.
    pub deadline_source: String,
    /// Misses reported.
    pub misses: u64,
    /// Pages dropped to stay within the memory bound before their time.
    pub squeezed_pages: u64,
    /// Windows kept on disk, oldest first.
    pub kept: Vec<PathBuf>,
    /// Kept windows dropped to stay within the caps.
    pub dropped: u64,
    /// The command's exit code (128 + signal when killed).
    pub exit_code: Option<i32>,
    /// Instances left by killed runs that were found.
    pub stale_instances: Vec<String>,
    /// Tracepoints enabled.
    pub tracepoints: Vec<String>,
}

/// Why watching failed.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Recording failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A window could not be explained.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The options cannot be watched.
    #[error("{0}")]
    Usage(String),
}
