//! `whylate watch`: record through our own tracefs instance (as `record` does) and
//! explain each miss while the workload runs, for as long as it runs.
//!
//! 1. One reader thread per CPU hands whole ring-buffer pages to this thread, which keeps
//!    the last seconds of them in a [`ring::Ring`] (bounded by time and bytes).
//! 2. Every tick (0.5 s, longer when an analysis takes longer) the pages of a window that
//!    ends a little before now (the readers' lag) become a trace.dat, which the offline
//!    engine explains in the chosen mode: the same chain, culprit and advice as `explain`.
//! 3. Windows overlap; [`settle::Settler`] takes each sample from the first window that
//!    holds it whole, once. A settled miss is reported at once (the [`Watcher`]), its own
//!    window kept as a trace.dat when asked (`keep`), a command run for it (`on_miss`).
//! 4. Settled samples and misses join a [`RunSummary`]: at the end, the report of the
//!    whole run. Memory: the ring, a bounded summary and the settled keys of one overlap.
//!
//! Without a deadline the first window that holds enough samples chooses one by the
//! mode's own policy, and it is kept from then on (a moving deadline would make misses
//! of different runs incomparable). Cycles learn the usual chain from every good cycle
//! seen so far ([`Learned`]).

mod driver;
mod keep;
mod ring;
mod settle;

use crate::explain::{self, ExplainReport, Learned, Miss, Mode, RunSummary};
use crate::read::{OpenOptions, ReadError};
use crate::record::{self, MemPages, Meta, RecordError, Tracing};
pub use keep::KeepOptions;
use keep::Keeper;
use ring::{Ring, ToChannel};
use serde::Serialize;
use settle::Settler;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to watch.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// What a sample and a miss are (any mode but the automatic one).
    pub mode: Mode,
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
    /// This process's CPU time over the wall time (1.0 = one CPU).
    pub recorder_cpu: f64,
    /// Bytes of pages held.
    pub ring_bytes: u64,
    /// Windows explained.
    pub windows: u64,
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

/// The readers' lag: a page is read within the readers' 100 ms poll period, so a window
/// ending this long ago holds every CPU's records.
const LAG_NS: u64 = 300_000_000;

/// Watches until `stop`, the duration, the miss count or the command's end.
pub fn watch(
    o: &WatchOptions,
    stop: Arc<AtomicBool>,
    out: &mut dyn Watcher,
) -> Result<WatchResult, WatchError> {
    if matches!(o.mode, Mode::Auto { .. }) {
        return Err(WatchError::Usage(
            "watch needs to know what a miss is: --from/--to, --timer, --softirq, --function or --expect"
                .into(),
        ));
    }
    let keeper = match &o.keep {
        Some(k) => Some(Keeper::new(k)?),
        None => None,
    };
    let tmp = tempfile::tempdir().map_err(|e| RecordError::Io {
        path: std::env::temp_dir(),
        source: e,
    })?;
    let (tx, rx) = mpsc::channel();
    let t = Tracing::start(&o.events, o.buffer_kb, |cpu, _, layout| {
        Ok(ToChannel {
            cpu,
            layout,
            tx: tx.clone(),
        })
    })?;
    drop(tx);
    let mut run = Run::new(o, &t, keeper, tmp.path().join("window.dat"));
    let mut child = spawn(o)?;
    let exit_code = run.watch_loop(&t, &rx, child.as_mut(), &stop, out)?;
    let stale = t.stale.clone();
    let tracepoints = t.tracepoints();
    let _stopped = t.stop()?;
    // The readers drained the buffers when stopped: the last pages are in the channel.
    while let Ok(p) = rx.try_recv() {
        run.ring.push(p, u64::MAX);
    }
    run.tick(true, out)?;
    run.finish(exit_code, stale, tracepoints, out)
}

/// One run's state.
struct Run<'a> {
    o: &'a WatchOptions,
    mode: Mode,
    deadline_source: String,
    ring: Ring,
    settler: Settler,
    summary: RunSummary,
    meta: Meta,
    window_path: PathBuf,
    /// tracefs's saved_cmdlines, read again for every window (tasks come and go).
    cmdlines: PathBuf,
    keeper: Option<Keeper>,
    started: Instant,
    /// Trace time when tracing began (the first window's floor).
    t0: u64,
    mono: bool,
    latest: u64,
    misses: u64,
    windows: u64,
    never_matched: Option<String>,
    lost: Vec<u64>,
    children: Vec<std::process::Child>,
    last_status: Option<Status>,
}

impl<'a> Run<'a> {
    fn new(
        o: &'a WatchOptions,
        t: &Tracing<ToChannel>,
        keeper: Option<Keeper>,
        window_path: PathBuf,
    ) -> Run<'a> {
        let mut mode = o.mode.clone();
        if let Mode::Cycles(c) = &mut mode {
            c.learned = Learned::shared();
        }
        let deadline = mode.deadline_ns();
        let mono = t.clock == "mono";
        let span = deadline.map_or(1_000_000_000, |d| (10 * d).max(1_000_000_000));
        Run {
            o,
            mode,
            deadline_source: if deadline.is_some() { "given" } else { "" }.into(),
            ring: Ring::default(),
            settler: Settler::new(o.before_ns, o.after_ns, span),
            summary: RunSummary::new(20),
            meta: t.meta(Vec::new()),
            window_path,
            cmdlines: t.root.join("saved_cmdlines"),
            keeper,
            started: t.started,
            t0: if mono {
                mono_now().saturating_sub(LAG_NS)
            } else {
                0
            },
            mono,
            latest: 0,
            misses: 0,
            windows: 0,
            never_matched: None,
            lost: Vec::new(),
            children: Vec::new(),
            last_status: None,
        }
    }
}

/// Starts the command to watch, if there is one.
fn spawn(o: &WatchOptions) -> Result<Option<std::process::Child>, RecordError> {
    let Some((name, args)) = o.command.split_first() else {
        return Ok(None);
    };
    let mut cmd = std::process::Command::new(name);
    cmd.args(args);
    if o.command_stdout_to_stderr {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
            cmd.stdout(fd);
        }
    }
    let child = cmd.spawn().map_err(|source| RecordError::Spawn {
        cmd: o.command.join(" "),
        source,
    })?;
    Ok(Some(child))
}

/// CLOCK_MONOTONIC now, ns: the trace's clock when it is `mono`.
fn mono_now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes the pages of `[from, to]` as a trace.dat at `path`.
fn write_window(
    ring: &Ring,
    meta: &Meta,
    (from, to): (u64, u64),
    path: &Path,
) -> Result<u64, RecordError> {
    let mut cpus: Vec<MemPages<'_>> = ring.window(from, to);
    record::write_dat(path, meta, &mut cpus)
}

/// Explains one window file; a window where the selectors matched nothing yet is
/// empty, not an error (the reason is kept for the end).
fn explain_window(path: &Path, mode: &Mode) -> Result<Result<ExplainReport, String>, ReadError> {
    match explain::explain_mode(&[path.to_path_buf()], &OpenOptions::default(), mode) {
        Ok(r) => Ok(Ok(r)),
        Err(ReadError::NoMatch { why }) => Ok(Err(why)),
        Err(e) => Err(e),
    }
}

/// What to record for a mode when `-e` is not given: the scheduler, interrupts and
/// workqueues (the hand-offs the chains follow), timers for `--timer`, and the events
/// the selectors name.
pub fn default_events(mode: &Mode) -> Vec<String> {
    let mut v = vec!["sched".to_string(), "irq".into(), "wq".into()];
    let named = |s: &crate::selector::Selector| -> Option<String> {
        let name = s.text().split('[').next()?.trim();
        (!name.is_empty() && !name.contains(['*', '?'])).then(|| name.to_string())
    };
    match mode {
        Mode::Timer(_) => v.push("timer".into()),
        Mode::Cycles(o) => {
            v.extend(named(&o.from));
            v.extend(o.to.iter().filter_map(named));
        }
        Mode::Expect(o) => v.extend([&o.a, &o.b].into_iter().filter_map(named)),
        Mode::Softirq { .. } | Mode::Function(_) | Mode::Auto { .. } => {}
    }
    v.dedup();
    v
}
